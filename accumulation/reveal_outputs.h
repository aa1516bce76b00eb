// `fpconform reveal` from a real device's outputs: probe tensors that pack every FPRev probe of
// one summation tree (cases/fprev.h) into one matmul or one batched sum, and the recovery of the
// tree, the behaviour and the matching presets from the outputs the device wrote.
//
// Probe design (op, K, dtype; dtype float32 or bfloat16, 3 <= K <= 1024; matmul: tiles):
//   terms are built from two powers of two, M0 = 2^32 and u0 = 2^-32 (both normal in float32 and
//   bfloat16): a sum's terms are the values themselves, a matmul's the products.
//   matmul: A is R x K, B is K x R, R = K + P. For m, n < K: A[m][k] = M0 if k == m else u0,
//     B[k][n] = -M0 if k == n else u0, so output (m, n), m != n, is the FPRev probe with +M at
//     term m and -M at term n (M = M0 u0 = 1, u = u0^2 = 2^-64, M/u = 2^64): K(K-1) outputs,
//     each unordered pair twice (both signs), the second copy a determinism check. The diagonal
//     m = n < K is not a probe. Behaviour probe p (0 <= p < P) is row K + p of A with column
//     K + p of B: output (K + p, K + p); the other entries of the last P rows / columns are not
//     probes.
//   sum: X is S x K, one probe per row (reduce along the last axis): the K(K-1)/2 pairs i < j
//     (+M at i, -M at j; M = 2^32, u = 2^-32) in lexicographic order, then the P behaviour probes.
//   Behaviour probes (terms x_t = a_t b_t; unlisted terms 0):
//     cal_units           every term u (FPRev calibration: n u)
//     cal_plus_first ... cal_minus_last   +-M at term 0 / K-1, the rest u
//     frac_plus_k         (1, 2^-k, -1), k = 1..60: 2^-k survives iff the add that joins x0 and
//                         x1 (or the fused group holding x0..x2) keeps k fraction bits
//     frac_minus_k        (1, -2^-k, -1): the same for a negative small term; in a fused group
//                         whose alignment rounds toward -inf it leaves -2^-F, not 0
//     round_pos/round_neg (+-2, +-(2^-23 + 2^-24)): 2 + 1.5 ulp/2: to nearest gives 2 + 2^-22,
//                         toward zero 2 (Fasi et al. 2021, test C)
//   P = 127. For K = 256 (matmul): A 383 x 256, B 256 x 383, 146689 outputs; (sum) X 32767 x 256.
// Files: A.npy, B.npy (matmul) or X.npy (sum) in dtype, and manifest.json:
//   {"fpconform_reveal_probes": 1, "op", "k", "dtype", "big", "unit", "inputs": {...shapes},
//    "output_shape": [...], "probes": [{"name", "row", "col"}...] (behaviour probes; the pair
//    layout is the rule above)}.
// Recovery: the outputs (ReadTensor: any float dtype; shape R x R, or S / S x 1) are read as
// exact values; NaN, a wrong shape, an asymmetric pair (matmul) or outputs no tree explains give
// errors; RevealSumTree runs on the table as its black box.
#ifndef FPCONFORM_ACCUMULATION_REVEAL_OUTPUTS_H_
#define FPCONFORM_ACCUMULATION_REVEAL_OUTPUTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "accumulation/model_catalog.h"
#include "cases/fprev.h"
#include "cases/tensor_file.h"

namespace fpconform {

struct ProbeSpec {
  std::string op = "matmul";  // "matmul" or "sum".
  int k = 256;
  std::string dtype = "bfloat16";  // "float32" or "bfloat16".
  // matmul only: the probe block (rows K + P, padded with zero rows/columns to a multiple of 128,
  // the Trainium partition count and a common GPU tile edge) repeated tiles x tiles times, so
  // that every probe is measured at tiles^2 output positions (a tree that depends on the tile
  // position shows as blocks with different trees). 1..4; 1 writes the unpadded layout above.
  int tiles = 1;
};

struct BehaviourProbe {
  std::string name;
  std::vector<double> a, b;  // K terms each (b all 1 for sums).
};

struct ProbeSet {
  ProbeSpec spec;
  double big = 0, unit = 0;  // The FPRev M and u (of the terms).
  std::vector<BehaviourProbe> behaviour;
  Tensor a, b;  // matmul: A, B; sum: a = X, b empty.
  std::vector<int64_t> output_shape;
  std::string manifest;  // manifest.json's text.
};

// Errors: InvalidArgument for an op, dtype or K outside the ranges above.
absl::StatusOr<ProbeSet> MakeProbes(const ProbeSpec& spec);
// Writes the files into `dir`, which must not exist (created; nothing left on error).
absl::Status WriteProbes(const ProbeSet& probes, const std::string& dir);

struct PresetMatch {
  std::string name;
  bool tree = false;       // Declared tree == revealed tree.
  bool behaviour = false;  // And every behaviour probe gives the observed value.
  std::string differs;     // The first behaviour probe that differs (when tree && !behaviour).
};

// One revealed tree and its behaviour: of a group of probe blocks (RevealedGroup), and the
// answer's (Revealed: group 0's).
struct RevealedTree {
  SumTree tree;                // Canonical.
  int fused_group = 1;         // FusedGroupSize(tree).
  // Fraction bits the frac_plus probes show: -1 when the tree hides them. `fraction_where`
  // says which node they measure ("fused group" or "first add").
  int fraction_bits = -1;
  std::string fraction_where;
  std::string alignment;       // Fused groups: "truncate", "round_down" or "" (not shown).
  std::string output_rounding; // "to nearest", "toward zero" or "unknown (value ...)".
  std::vector<PresetMatch> presets;  // Tree matches only, full matches first.
};

// The probe blocks (tiles > 1) that show one tree, with that tree's behaviour (read at the
// group's first block) and the presets that have both.
struct RevealedGroup : RevealedTree {
  std::vector<std::pair<int64_t, int64_t>> blocks;  // (first row, first column) of each block.
};

// The RevealedTree part is group 0's.
struct Revealed : RevealedTree {
  ProbeSet probes;
  std::string outputs_source;  // The outputs file as given.
  std::string outputs_dtype;
  std::string outputs_hash;    // "fnv1a64:..." of the file's bytes.
  int64_t probes_used = 0;     // Table lookups made by RevealSumTree.
  // tiles > 1: the tree of every probe block, row-major over (block row, block column);
  // `tree` is group 0's (block (0, 0)'s unless that block is refused). `block` is the
  // block edge (rows of A per block).
  int64_t block = 0;
  std::vector<SumTree> tile_trees;  // An empty tree (root -1) for a refused block.
  // Per position: the probe blocks grouped by the tree they show, in block order (group 0 holds
  // the first block with a tree, (0, 0) unless that one is refused; the RevealedTree part is
  // group 0's); tiles = 1: one group. `refused`: the blocks (tiles > 1) whose outputs no fixed tree
  // explains, with the reason; the reveal fails only when every block is refused.
  std::vector<RevealedGroup> groups;
  std::vector<std::pair<std::pair<int64_t, int64_t>, std::string>> refused;
};

// Reads `dir`/manifest.json (rebuilds the probes from its op, K, dtype and checks that they are
// the manifest's), the outputs, and recovers. `catalog` supplies the presets to match.
absl::StatusOr<Revealed> RevealFromOutputs(const std::string& dir, const std::string& outputs,
                                           const std::string& outputs_dtype,
                                           const ModelCatalog& catalog);

// Text report; a draft model file (TOML) for what was revealed, with `unconfirmed` for what
// the probes could not pin and the outputs' hash as provenance. Fused trees are drafted as a
// sequential chain, or as split_k slices (the first of 2..16 slices, multiples G..512, both orders
// and combines, whose tree is the revealed one: cuBLAS split-K kernels); other trees as an
// explicit shape. The draft is checked: its declared tree for K terms must equal the revealed
// one; a last comment line says whether it does.
std::string RevealedText(const Revealed& r);
std::string RevealedDraftModel(const Revealed& r);

}  // namespace fpconform

#endif  // FPCONFORM_ACCUMULATION_REVEAL_OUTPUTS_H_
