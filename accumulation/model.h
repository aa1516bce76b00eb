// An accumulation model: how a platform computes d = c + sum_i a_i * b_i (and sum_i x_i), read
// from a TOML model file whose schema is accumulation/MODEL_FORMAT.md (the reference; this
// header only mirrors it). A platform is a file, not code (DESIGN.md, "Models are data").
//
// Errors: ParseModel / LoadModelFile return an absl::Status (InvalidArgument; NotFound for a
// missing file) whose message names the file, the line and the dotted key:
//   "bad.toml:7: adder.group: must be an integer in 1..256, got 0"
// Text of the file that a message echoes (a key, a value) is escaped (base/str_cat.h
// EscapeText: control bytes as \xNN), so a message is always one printable line.
// Unknown tables or keys, wrong types, values outside their set, missing required keys, keys that
// do not apply to the chosen kind, and provenance entries for absent parameters are all errors.
// Parsing never throws out of this API and never aborts.
//
// Example:
//   absl::StatusOr<Model> m = ParseModel(R"(
//     name = "cpu-f32-seq"
//     description = "float32 loop"
//     [inputs]
//     a = "float32"
//     [adder]
//     kind = "fma"
//     [accumulator]
//     format = "float32"
//     [chain]
//     kind = "sequential"
//     [provenance]
//     "inputs.a" = "by definition"
//     "adder.kind" = "C fmaf loop"
//     "accumulator.format" = "float s"
//     "chain.kind" = "loop order"
//   )", "cpu-f32-seq.toml");
//   m->adder.kind == AdderKind::kFma;  m->output.format == &Float32();
#ifndef FPCONFORM_ACCUMULATION_MODEL_H_
#define FPCONFORM_ACCUMULATION_MODEL_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"

namespace fpconform {

enum class ProductPolicy : uint8_t { kExact, kRound };
// kInteger: integer inputs (int8, uint8), products and sums exact in an int32 accumulator
// (MODEL_FORMAT.md, adder.kind = "integer"; evaluate.h).
enum class AdderKind : uint8_t { kIeee, kFma, kFused, kKahan, kInteger };
enum class Alignment : uint8_t { kTruncate, kRoundDown };
enum class AlignmentExponent : uint8_t { kNominal, kActual };
// adder.overflow (fused): a group whose normalized sum exceeds the accumulator's range gives what
// the normalization rounding gives under IEEE 754-2019 §7.4 (kIeee: rtz -> +-max finite, rne ->
// +-Inf), or +-Inf whatever the rounding (kInf: NVIDIA tensor cores, measured on an H200).
enum class FusedOverflow : uint8_t { kIeee, kInf };
// epilogue.c: where the initial value c enters a dot (kChain: as the chain's initial
// accumulator; kAfter: the chain runs from +0 and c is added once after it, in the epilogue;
// kAfterScale: as kAfter, but when the caller has scales c is added after them, unscaled, in one
// rounding with the scale: fl32(fl32(s_a s_b) acc + c), cuBLASLt's D = alpha' acc + beta C
// (accumulation/epilogue.h ApplyScaleAddC)).
enum class EpilogueC : uint8_t { kChain, kAfter, kAfterScale };
// epilogue.scale: the scale factors the platform multiplies by (accumulation/epilogue.h): none,
// one per tensor (s_a, s_b scalars), one per row of A and one per column of B (a per-tensor scale
// is the constant vector), or per block (kBlock): one s_a per (row of A, K block) and one s_b per
// (K block, column of B), applied inside the chain as epilogue.block_apply says (evaluate.h
// EvaluateBlockScaledDot).
enum class EpilogueScale : uint8_t { kNone, kTensor, kRowCol, kBlock };
// epilogue.block_apply (scale = kBlock): kFma: each K block's partial sum p (chain.kind =
// "promote", chain.every = the scale block) enters the float32 accumulator as
// fl32(acc + S p), S = fl32(s_a s_b), one rounding (DeepGEMM's FFMA); kMulAdd: as
// fl32(acc + fl32(S p)); kProducts: power-of-two scales (MX, E8M0) multiply every product of the
// block exactly, before the chain (any chain).
enum class BlockApply : uint8_t { kFma, kMulAdd, kProducts };
// epilogue.scale_order: kProduct: fl32(fl32(s_a * s_b) * y); kSequential: fl32(fl32(y * s_a) * s_b).
enum class ScaleOrder : uint8_t { kProduct, kSequential };
enum class ChainKind : uint8_t {
  kSequential, kPairwise, kBlocked, kStrided, kSplitK, kPromote, kSimd, kCascade, kTree
};
enum class CombineOrder : uint8_t { kSequential, kPairwise, kHalving };
enum class UnitOrder : uint8_t { kForward, kReverse };
enum class SplitOrder : uint8_t { kFixed, kRandom, kReverse };
// blocked: how the block before the last is cut (chain.tail, MODEL_FORMAT.md).
enum class BlockTail : uint8_t { kFixed, kHalveDown, kHalveUp };

// The operations a model may describe (`operations`, MODEL_FORMAT.md).
enum class ModelOp : uint8_t { kDot, kMatmul, kSum };

struct Model {
  std::string name;
  std::string description;
  bool op_dot = true, op_matmul = true, op_sum = true;  // `operations`.
  // Whether the model describes `op`: the one rule every command asks (the audit, the sweep,
  // reveal, the Python bindings). A matmul is computed by the model's dot, so "dot" alone
  // serves a matmul too.
  bool Supports(ModelOp op) const {
    switch (op) {
      case ModelOp::kDot:
        return op_dot;
      case ModelOp::kMatmul:
        return op_matmul || op_dot;
      case ModelOp::kSum:
        return op_sum;
    }
    return false;
  }

  struct Inputs {
    const FormatSpec* a = nullptr;
    const FormatSpec* b = nullptr;           // Defaults to a.
    const FormatSpec* convert_to = nullptr;  // nullptr: no conversion.
    OpEnv convert_env;                       // convert_rounding.
    bool daz = false;
  } inputs;

  struct Product {
    ProductPolicy policy = ProductPolicy::kExact;
    const FormatSpec* format = nullptr;  // kRound only.
    OpEnv env;
  } product;

  struct Adder {
    AdderKind kind = AdderKind::kIeee;
    // ieee/fma/kahan: rounding of each step, adder.ftz -> env.flush_to_zero, (ieee/fma)
    // adder.daz -> env.denormals_are_zero (the running accumulator operand read with DAZ);
    // fused: normalization_rounding (rtz|rne).
    OpEnv env;
    int group = 1;           // fused: G.
    int fraction_bits = 0;   // fused: F.
    Alignment alignment = Alignment::kTruncate;
    AlignmentExponent alignment_exponent = AlignmentExponent::kNominal;
    FusedOverflow overflow = FusedOverflow::kIeee;  // fused: adder.overflow.
  } adder;

  struct Accumulator {
    const FormatSpec* format = nullptr;
    int fraction_bits = 0;  // == format->fraction_bits unless reduced.
    OpEnv combine_env;      // `rounding`: combine additions.
  } accumulator;

  struct Chain {
    ChainKind kind = ChainKind::kSequential;
    int leaf = 8, unroll = 1, split_multiple = 1;  // pairwise.
    int chunk = 0;                                  // pairwise: 0 = no chunking.
    int block = 0;                                  // blocked.
    BlockTail tail = BlockTail::kFixed;             // blocked: chain.tail.
    int tail_multiple = 1;                          // blocked: chain.tail_multiple.
    int ways = 0;                                   // strided.
    CombineOrder combine = CombineOrder::kSequential;
    int slices = 0;                                 // split_k.
    // split_k: slices are ceil(K / slices) rounded up to a multiple of this (ParseModel sets
    // adder.group when the file leaves it out; a walk also rounds up to the group).
    int slice_multiple = 1;
    SplitOrder order = SplitOrder::kFixed;          // split_k (combine: sequential|pairwise).
    int every = 0;                                  // promote.
    const FormatSpec* promote_format = nullptr;     // promote: chain.format (float32).
    OpEnv promote_env;                              // promote: chain.rounding.
    int lanes = 0;                                  // simd, cascade: W.
    int unit = 1;                                   // simd: products per lane step.
    UnitOrder unit_order = UnitOrder::kForward;     // simd.
    CombineOrder reduce = CombineOrder::kHalving;   // simd: lane reduction.
    // tree: chain.shape as parsed by ParseModel (pre-order); tree[tree_root] is the root; a
    // node is a leaf (unit >= 0, no children: the unit index within a block) or a list
    // (unit = -1, >= 2 children, indices into tree). tree_units = m, the number of leaves
    // (1..4096), each index 0..m-1 once. "((0 1) (2 3))" gives {list {1, 4}, list {2, 3},
    // leaf 0, leaf 1, list {5, 6}, leaf 2, leaf 3}, root 0.
    struct TreeNode {
      int unit = -1;
      std::vector<int> children;
    };
    std::vector<TreeNode> tree;
    int tree_root = 0;
    int tree_units = 0;
    // chain.permutation (any kind; empty: none): the products are padded with +0 products to a
    // multiple of m = permutation.size() and position i of each block of m takes the block's
    // product permutation[i]; the chain runs on the reordered products.
    std::vector<int> permutation;
  } chain;

  // [epilogue] (MODEL_FORMAT.md): what happens between the chain and the output conversion.
  // c = kAfter (and kAfterScale without scales): d = output(round(chain_from_+0 + c)), the one
  // add in FinalAccumulatorFormat() rounded with `env` (epilogue.rounding) at its full precision.
  // AddsCAfterChain() says whether c enters so.
  // scale, scale_order: the scale stage applied to the model's output when a caller has scales
  // (accumulation/epilogue.h ApplyEpilogue); the defaults are what every model did before the
  // keys existed. scale = kBlock: scale_block and block_apply, evaluated inside the chain
  // (evaluate.h EvaluateBlockScaledDot).
  struct Epilogue {
    EpilogueC c = EpilogueC::kChain;
    EpilogueScale scale = EpilogueScale::kRowCol;
    ScaleOrder scale_order = ScaleOrder::kProduct;  // scale = kTensor or kRowCol only.
    int scale_block = 0;                            // scale = kBlock: products per K block.
    BlockApply block_apply = BlockApply::kFma;      // scale = kBlock only.
    OpEnv env;  // epilogue.rounding (c = kAfter only).
  } epilogue;

  // Whether the chain runs from +0 and c is added after it (epilogue.c = "after" or
  // "after_scale"); what every evaluator asks.
  bool AddsCAfterChain() const { return epilogue.c != EpilogueC::kChain; }

  struct Output {
    const FormatSpec* format = nullptr;  // Defaults: accumulator (promote: chain.format).
    OpEnv env;                           // rounding (incl. sr<k>) and sat.
  } output;

  // Dotted parameter name -> source, for every parameter the file sets (MODEL_FORMAT.md).
  std::map<std::string, std::string> provenance;
  std::vector<std::string> unconfirmed;
  // Every parameter the file sets, as (dotted name, value as written), in file order, for
  // `fpconform models show`.
  std::vector<std::pair<std::string, std::string>> parameters;

  // The format the chain's final accumulator is in (chain.format for promote).
  const FormatSpec& FinalAccumulatorFormat() const {
    return chain.kind == ChainKind::kPromote ? *chain.promote_format : *accumulator.format;
  }
  // The fraction bits the final accumulator keeps: all of chain.format's for promote (the
  // promoted partial sums are full float32), else accumulator.fraction_bits (which is less than
  // the format's where the file reduces it, e.g. 13 for Hopper's FP8 accumulator).
  // The unit roundoff of the final sum is 2^-(FinalAccumulatorFractionBits() + 1) under RNE.
  int FinalAccumulatorFractionBits() const {
    return chain.kind == ChainKind::kPromote ? chain.promote_format->fraction_bits
                                             : accumulator.fraction_bits;
  }
  // Format of operand b: inputs.b, or inputs.a where it is unset (ParseModel always sets it; a
  // model built in code may leave it null).
  const FormatSpec& InputB() const { return inputs.b != nullptr ? *inputs.b : *inputs.a; }
  // Format of the result: output.format, or where it is unset (ParseModel always sets it) its
  // default, FinalAccumulatorFormat().
  const FormatSpec& OutputFormat() const {
    return output.format != nullptr ? *output.format : FinalAccumulatorFormat();
  }
};

// Parses a model from TOML text. `file_name` is used only in error messages and, when non-empty
// and ending in ".toml", to check that `name` equals the file's stem.
// chain.kind = "blocked": the end of the block that starts at `begin` (0 <= begin < k) of a
// length-k chain. With tail = "fixed", min(k, begin + block). With "halve_down"/"halve_up" the
// GotoBLAS/OpenBLAS K partition (driver/level3/level3.c, level3_thread.c): r = k - begin left;
// r >= 2 * block: a block of `block`; block < r < 2 * block: h = floor(r / 2) (halve_down) or
// ceil(r / 2) (halve_up), rounded up to a multiple of tail_multiple, capped at r; r <= block:
// the rest. Every chain walk (generic engine, fast path, summation tree) cuts blocks here.
int BlockedBlockEnd(const Model::Chain& chain, int begin, int k);

absl::StatusOr<Model> ParseModel(std::string_view toml_text, std::string_view file_name);

// Reads and parses a model file, through ReadUserFile (base/user_file.h): NotFound when it
// does not exist; InvalidArgument when it is not a regular file (a directory, FIFO, device, a
// symlink to one: refused before any read, so nothing blocks) or is larger than
// kMaxTextFileBytes (refused before reading). LoadEnvelopeFile reads the same way.
absl::StatusOr<Model> LoadModelFile(const std::string& path);

// An envelope (MODEL_FORMAT.md, "Envelopes"): a named set of models, e.g. every plausible
// in-array order of one platform; a verdict holds for the envelope iff it holds for every member.
// The file sits next to the models; its top-level `envelope = [...]` lists the members.
struct Envelope {
  std::string name;
  std::string description;
  // `envelope`: model names (file stems), in file order, >= 2, distinct.
  std::vector<std::string> members;
  std::string members_source;        // provenance.envelope.
  bool members_unconfirmed = false;  // "envelope" listed in provenance.unconfirmed.
};

// Parses an envelope file (errors name file:line: key, as for models). Member names are checked
// for syntax only; ModelCatalog::FindEnvelope loads them.
absl::StatusOr<Envelope> ParseEnvelope(std::string_view toml_text, std::string_view file_name);
absl::StatusOr<Envelope> LoadEnvelopeFile(const std::string& path);

// True when `toml_text` is valid TOML with a top-level key `envelope`.
bool IsEnvelopeText(std::string_view toml_text);

}  // namespace fpconform

#endif  // FPCONFORM_ACCUMULATION_MODEL_H_
