// The summation tree a model uses for a length-n dot product or sum, and the FPRev probe run on
// the model as a black box (cases/fprev.h holds the tree type, its text and Graphviz formats and
// the probe; this library is a separate target, like calc_model_ops, so that the accumulation
// core does not depend on cases/).
//
// BuildSummationTree follows the rules of accumulation/evaluate.cc and MODEL_FORMAT.md node for
// node: leaves are the terms x_i (the products a_i*b_i of a dot), the initial accumulator c and
// +0 constants (partial sums that start at +0); internal nodes are
//   kAdd kStep     an adder step of an ieee/fma adder: acc + p_i rounded with adder.rounding
//   kAdd kCombine  a combine add (accumulator.rounding): pairwise nodes and the balanced trees of
//                  pairwise unroll lanes / strided / simd lanes, blocked, strided, split-K and
//                  simd lane combination, pairwise chunks, cascade levels and lanes
//   kAdd kPromote  promote: outer = round(outer + inner) in chain.format
//   kFused         one fused group: its G (or, at the end, fewer) products, then the accumulator
//                  (and, with epilogue.c = "after", the epilogue's add of c to the chain's sum,
//                  rounded with epilogue.rounding at the final format's full precision)
//   kConvert       a one-operand rounding: the output conversion (when the output format is not
//                  the final accumulator's) and the start of a pairwise unroll lane (r_j = p_j
//                  rounded into the accumulator)
// Text rendering: RenderText / RenderDot of cases/fprev.h. Example (cpu-f32-seq, n = 3):
//   (((c + x0) + x1) + x2)
// nvidia-h100-bf16 (fused groups of 16), n = 18:
//   fused[x16 x17 fused[x0 x1 ... x15 c]]
// numpy-sum-f32, n = 3 (fewer than `unroll` terms: sequential from +0, then c added):
//   (c +c (((0 + x0) + x1) + x2))
//
// Chain kinds handled: sequential, pairwise (leaf, unroll, split_multiple, chunk), blocked,
// strided, split_k (fixed, and random with `seed` exactly as EvaluateDot's EvalOptions::seed),
// promote, simd, cascade, tree. Other chain kinds and adder kinds (kahan: a compensated sum is not a
// tree of additions) give Unimplemented naming the kind.
//
// The FPRev probe on a model (RevealModelTree): the black box is EvaluateDot (models with the
// `dot` operation; sum-only models: EvaluateSum) with c = +0, and every term one of u, +M, -M.
// A dot term is a product a*b of two powers of two, both representable in inputs.a / inputs.b
// (and in inputs.convert_to; normal when inputs.daz). With k = bit_width(n - 1) (the units
// beside +-M number at most n - 1 < 2^k) the choice is M = 2^eM, u = 2^eu with
//   eM - eu >= D = max(p_acc + 1, p_promote + 1 [promote], F [fused]) + k
// where p is the significand width (accumulator.fraction_bits + 1): round-to-nearest turns
// -M + s into -M iff s <= 2^(eM-p-1), and M + s into M iff s <= 2^(eM-p); a fused group
// truncates every term below 2^(eM-F) to zero when M is in it. Counts must be exact: n <= 2^q
// with q = min(p_acc, p_output, p_promote [promote], F [fused]). M (and the units) must be in
// range: eM <= Emax - 1 and eu >= Emin of the accumulator, promote and output formats. Within
// those limits eu = max(lowest, -D/2) and eM = eu + D (lowered to the highest allowed with eu
// following). Where no choice exists (narrow inputs with a wide accumulator, e.g.
// float8_e4m3 products span 2^-18..2^14 against float32's 24 bits + k; counts in a bfloat16
// output for n > 256) MakeModelProbe returns FailedPrecondition saying which limit fails. The
// probe's calibration (cases/fprev.h) checks the choice on the black box itself.
//
// Example:
//   Model m = *LoadModelFile("accumulation/models/nvidia-h100-bf16.toml");
//   SumTree declared = *BuildSummationTree(m, 40);
//   SumTree probed = *RevealModelTree(m, 40);
//   SameCanonicalTree(declared, probed) && FusedGroupSize(probed) == 16;
#ifndef FPCONFORM_ACCUMULATION_SUMMATION_TREE_H_
#define FPCONFORM_ACCUMULATION_SUMMATION_TREE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "accumulation/model.h"
#include "cases/fprev.h"

namespace fpconform {

// The declared tree of `model` for n terms (n >= 0). Errors: Unimplemented for chain / adder
// kinds not listed above; InvalidArgument for n < 0.
absl::StatusOr<SumTree> BuildSummationTree(const Model& model, int n, uint64_t seed = 0);

// The black box and the M, u chosen for it. `oracle` refers to `model`, which must outlive it.
struct ModelProbe {
  SumOracle oracle;
  FprevOptions options;
  std::string how;  // e.g. "dot, M = 2^20 * 2^20, u = 2^-7 * 2^-7 (D = 34)".
};
absl::StatusOr<ModelProbe> MakeModelProbe(const Model& model, int n, uint64_t seed = 0);

// MakeModelProbe + RevealSumTree.
absl::StatusOr<SumTree> RevealModelTree(const Model& model, int n, uint64_t seed = 0,
                                        FprevStats* stats = nullptr);

}  // namespace fpconform

#endif  // FPCONFORM_ACCUMULATION_SUMMATION_TREE_H_
