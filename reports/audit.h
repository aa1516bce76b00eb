// Audits of a real kernel's outputs (`fpconform audit`, `fpconform compare`): given the tensors
// a kernel received and the output it produced, every output element is checked against the
// exact value (oracles/exact_sum.h), the platform model's emulated output and its analytical
// bound (accumulation/evaluate.h), and the tolerance the tolerance report recommends for this
// dtype, K and platform (reports/sweep.h, the same rule), and gets a class with evidence.
//
// Operations:
//   matmul  out[..., i, j] = fl_out( C[..., i, j] + sum_k A[..., i, k] * B[..., k, j] ), A and B
//           at least 2-D; leading (batch) dimensions broadcast as numpy.matmul does. With
//           scales (FP8 / INT8 kernels): out = fl_out( fl32( scale_a[i] * scale_b[j] * acc ) )
//           where acc is the platform's output of the unscaled dot (in its output format) and
//           the exact value is scale_a[i] * scale_b[j] * (sum_k a b), exactly; scale_a is a
//           scalar or one value per row of A, scale_b a scalar or one per column of B (float32).
//           The formula is printed in every report.
//   sum     out = the sum of X along one axis (the output has X's shape without that axis, or
//           with it kept as size 1).
//   cast    out = fl_to( X / scale ) elementwise, X / scale exact (scale a scalar, default 1),
//           one rounding into --to under --rounding (sr<k> included, see below).
//
// Inputs as the kernel received them: each input tensor's format must be the platform's input
// format (Model::inputs.a / .b), else the audit is an error naming both, unless `cast_inputs` says
// how the kernel converted them (then the audit converts and says so in the notes). The
// output's format comes from its file; where it differs from the model's output format (a
// float32 PSUM written out as bfloat16), the emulated value is converted to it with
// `out_rounding` (default rne) and the bound widens by that conversion (see Classes).
//
// Classes, per output element, the first that applies (against one platform):
//   identical         bits equal to the platform's emulated output (NaN equals NaN by class)
//   within_bound      |out - exact| <= B, B the model's analytical bound for this element plus,
//                     when the output is converted, the conversion's own error |conv - emu| and
//                     half an ulp of the output format at |exact| + B (so that any output that
//                     the correctly rounded value of some x within B of exact could give passes)
//   within_tolerance  |out - exact| <= atol + rtol |exact|, or |ULP error| <= rec_ulp, with the
//                     tolerance report's recommendation for (op, dtype, K, platform) (N(0, 1)
//                     inputs; atol is scale-dependent: the report prints it as such)
//   unexplained       anything else; also a NaN or Inf output where the exact value and the
//                     model's output are finite ("NaN where none is expected: uninitialized
//                     memory?"), and a finite output where both are non-finite.
// Verdict: pass when no element is unexplained and (strict) none is only within_tolerance, and
// (attention) the aggregate gate passes (AuditResult::Aggregate).
//
// Differences from the obvious expectation:
//   * |out - exact| is computed exactly (the exact accumulator holds exact - out) and rounded up
//     to a double before comparing with B, so within_bound is never granted by a rounding.
//   * With several platforms every element is classed against each; counts, `classes` and the
//     verdict are against the primary platform, AuditResult::platforms[0]: the first one given,
//     or with `auto` the best-explaining preset (best_platform: one that leaves no element
//     unexplained if any does, then the most bit-identical, then the most explained, then catalog
//     order), so an output that some preset explains never fails because of the choice; `auto`
//     then costs a second pass when that preset is not the catalog's first.
//   * cast under sr<k>: the bits cannot be predicted. Each output must be one of the two
//     neighbours of the exact value (else unexplained); the share rounded away from zero is
//     checked against its expectation sum_i p_i (p_i = the SR probability of element i) with a
//     normal approximation: |observed - expected| <= 4.5 sigma (a false alarm below 1 in 10^5)
//     where sigma^2 = sum_i p_i (1 - p_i); a violation fails the audit with the z-score.
//
// Diagnoses of unexplained elements (matmul, sum): the first relation that holds, where a
// relation "holds" for a candidate value r when |out - r| <= B + half an ulp of out at |r|:
//   sign flipped (out = -exact), off by a power of two (out = 2^e exact, 1 <= |e| <= 8),
//   one K tile missing / added twice (tiles of 16, 32, 64, 128, 256 and 512 along K, and the
//   model's own block), the transposed operand's result (square B: A B^T; square A: A^T B),
//   accumulated in bfloat16 (a sequential bfloat16 FMA chain gives these bits), FP8 scale
//   missing (out = exact / scale_a[i] or / scale_b[j]), otherwise "no simple relation found".
//
// Soundness of the tolerance on these inputs: the fraction of elements that the recommended
// rtol/atol would still accept for an all-zero output, for the output permuted (a pinned
// shuffle), and for each of the sweep's mutations applied to these very inputs (on a pinned
// sample of at most 256 elements), with the sentence "atol 1e-2 here accepts an all-zero
// output: max |exact| is 4e-3" when zeros pass everywhere.
//
// Determinism: the result (and every file written from it) depends only on the inputs and the
// options, not on the thread count.
//
// Errors (InvalidArgument, the message names the tensor and what was expected): shape
// mismatches, a dtype that is not the platform's input format without cast_inputs, an unknown
// platform (the message lists the valid ones), a platform that has no matmul/sum operation.
//
// Example:
//   Tensor a = *ReadTensor("a.npy", {.dtype = "bfloat16"}), b = ..., out = ...;
//   MatmulAuditInput in{.a = &a, .b = &b, .out = &out};
//   AuditOptions o{.platforms = {"trainium2-bf16"}, .models_dir = "accumulation/models"};
//   absl::StatusOr<AuditResult> r = AuditMatmul(in, o);
//   r->verdict == AuditVerdict::kPass;  std::puts(AuditSummaryText(*r).c_str());
#ifndef FPCONFORM_REPORTS_AUDIT_H_
#define FPCONFORM_REPORTS_AUDIT_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cases/tensor_file.h"
#include "formats/op_env.h"
#include "nlohmann/json_fwd.hpp"

namespace fpconform::reports {

enum class AuditClass : uint8_t { kIdentical, kWithinBound, kWithinTolerance, kUnexplained };
inline constexpr int kAuditClasses = 4;
// "identical", "within_bound", "within_tolerance", "unexplained".
const char* AuditClassName(AuditClass c);

enum class AuditVerdict : uint8_t { kPass, kFail };
// "pass", "fail" (the JSON's and the Python binding's words).
const char* AuditVerdictName(AuditVerdict v);

struct AuditOptions {
  // Platform model or envelope names (an envelope stands for its members); {"auto"}: every
  // preset whose input formats are the tensors' formats and that has the operation.
  std::vector<std::string> platforms;
  std::string models_dir;
  // Elementwise models (composite/models/*.toml); empty: the source tree's
  // (base/data_dir.h SourceDataPath, compiled in).
  std::string composite_models_dir;
  // Attention models (composite/attention_models/*.toml); empty: the source tree's.
  std::string attention_models_dir;
  std::string sweep_file;    // For the tolerance rule's parameters (seed, factor): the
                             // source tree's standard sweep when empty.
  int max_listed = 100;      // Elements listed: every unexplained first, then the worst others.
  bool strict = false;       // within_tolerance fails the verdict too.
  bool recommend = true;     // Run the tolerance rule for each platform (PlatformTolerance,
                             // reports/sweep.h: the tolerance row's code at this K).
  int tolerance_samples = 200;  // Samples of that rule (at least 8 are used).
  int threads = 1;
  bool keep_bounds = false;
  // Fill AuditResult::unexplained with every unexplained element (up to kMaxUnexplainedDetails;
  // diagnoses for the first kMaxDiagnosed): the CLI sets it for --report (elements.csv).
  bool all_unexplained = false;  // Fill AuditResult::bounds and ::best_classes (compare uses them).
  // Polled between blocks of work; true stops the audit with CancelledError (SIGINT/SIGTERM).
  std::function<bool()> cancelled;
  // Called from the calling thread: (work done, total, phase label).
  std::function<void(int64_t, int64_t, const std::string&)> progress;
  // The fit (matmul, sum; AUDIT.md "Fit"): kAuto runs it under `auto` when no preset reproduces
  // every element bit for bit; kOn runs it always (around every platform given); kOff never.
  enum class Fit : uint8_t { kAuto, kOn, kOff };
  Fit fit = Fit::kAuto;
  int fit_sample = 16;            // Elements every candidate is first tried on.
  int64_t fit_check_products = int64_t{1} << 24;  // Per finalist: the elements (x K) checked.
};

struct MatmulAuditInput {
  const Tensor* a = nullptr;
  const Tensor* b = nullptr;
  const Tensor* out = nullptr;
  const Tensor* c = nullptr;        // Optional, the shape of out (broadcast over batch dims).
  bool transpose_a = false;         // The file holds A^T (k x m).
  bool transpose_b = false;         // The file holds B^T (n x k).
  const Tensor* scale_a = nullptr;  // Optional: 1 element or m (per row).
  const Tensor* scale_b = nullptr;  // Optional: 1 element or n (per column).
  std::optional<OpEnv> cast_inputs; // How the kernel converted mismatched inputs.
  OpEnv out_rounding;               // Model output -> output file format.
};

struct SumAuditInput {
  const Tensor* x = nullptr;
  int axis = -1;                    // Negative counts from the end.
  const Tensor* out = nullptr;
  std::optional<OpEnv> cast_inputs;
  OpEnv out_rounding;
};

struct CastAuditInput {
  const Tensor* x = nullptr;
  const Tensor* out = nullptr;
  const FormatSpec* to = nullptr;   // Must be out's format.
  OpEnv env;                        // Rounding (sr<k>: statistical check), sat.
  double scale = 1;                 // out = fl_to(x / scale).
};

// `fpconform audit elementwise`: out = fn(x) elementwise, fn one of exp exp2 log tanh sigmoid silu
// gelu gelu_tanh rsqrt reciprocal (composite/elementwise_model.h). The platforms are elementwise
// implementation models (composite/models/*.toml; `auto`: every one with fn whose input and
// output formats are the tensors'); the exact value is the mathematical function of the input as
// received (oracles/elementary.h). Per element and platform: the emulated value (every step
// correctly rounded: bit-exact for a model whose elementary functions are correctly rounded) and
// the bound B = max(hi - exact, exact - lo), [lo, hi] the enclosure of every implementation
// within the model's declared accuracies (composite/formula.h), so within_bound means "some
// conforming implementation of that library could have produced this"; where the formula
// cancels (torch's 1 + erf(x / sqrt 2) for x < -5) B is absolute, not relative. No tolerance rule
// runs for these ops (no within_tolerance class). Errors: shapes that differ, an unknown
// function (the message lists them), a platform without fn, an input format the platform does
// not take.
struct ElementwiseAuditInput {
  const Tensor* x = nullptr;
  const Tensor* out = nullptr;
  std::string fn;
  OpEnv out_rounding;               // Model output -> output file format.
};

// `fpconform audit softmax|log_softmax|rmsnorm|layernorm`: out = op(x) along `axis`, each row of
// x (the entries along that axis) normalized with the optional weight and bias (1-D, the axis's
// length) and eps (rmsnorm, layernorm: > 0, finite; the kernel's argument). Platforms: models of
// kind "axis" (composite/models/; `auto`: every one with the op whose input and output formats
// are the tensors'). Exact values: oracles/axis_ops.h (the function of the inputs as received,
// eps included). Emulated values and bounds as for elementwise (every step correctly rounded,
// reductions in index order; the bound covers every order and tree of the reductions, fused
// products and the declared accuracy of exp, log, rsqrt). Diagnoses name the variant that explains
// an element: a missing max subtraction, eps outside the square root, a missing weight, an
// unbiased variance, a bfloat16 intermediate, another eps, the op along another axis, ...
// Errors: an unknown op, shapes that differ, an axis out of range, a weight or bias whose size is
// not the axis's length, a weight for softmax, a missing or non-positive or non-finite eps.
struct AxisAuditInput {
  std::string op;
  const Tensor* x = nullptr;
  int axis = -1;
  const Tensor* weight = nullptr;
  const Tensor* bias = nullptr;
  std::optional<double> eps;
  const Tensor* out = nullptr;
  OpEnv out_rounding;
};

// `fpconform audit attention`: out = softmax(scale Q K^T + mask) V per (batch, head), Q (S_q, D),
// (H, S_q, D) or (B, H, S_q, D); K and V of the same rank with H_kv heads (H_q a multiple:
// grouped-query attention, query head h uses K/V head h / (H_q / H_kv), PyTorch's
// repeat_interleave); out Q's shape with V's last dimension. causal: top-left aligned (key j <= query
// i, PyTorch's is_causal). mask: a float tensor added to the scores (-Inf masks) or a uint8/int8
// tensor (non-zero attends, PyTorch's boolean convention), of shape (S_q, S_k) or any shape that
// broadcasts to (B, H, S_q, S_k). scale: the kernel's (finite, non-zero), default 1/sqrt(D)
// exactly. Platforms: "correctly-rounded" (the exact value rounded once into out's format) and
// the attention models (composite/attention_model.h, composite/attention_models/; `auto`: every
// model whose input and output formats are Q's and out's, and correctly-rounded). Exact values:
// oracles/attention.h (fully masked rows NaN; a model's own convention explains its output there).
// Diagnoses: the scale not applied or applied twice, a missing or extra causal mask, the wrong
// GQA head mapping, a key block dropped or counted twice (the first or last of 64 ... 512 keys),
// K not transposed (S_k = D), the row sum in bfloat16, softmax over the wrong axis, a sign flip,
// an unwritten element, a power of two. No tolerance rule runs for this op (no within_tolerance
// class). The aggregate gate runs (AuditResult::Aggregate: relative L2 error and correlation with
// limits from the bounds), and a note counts fully masked rows, what the output holds there and
// each platform's convention. With `lse` (the kernel's LSE, Q's shape
// without D): its own classes in AuditResult::lse against the primary platform's LSE model
// (formats.lse; correctly-rounded for a platform without one), an unexplained LSE element failing
// the verdict. Errors: ranks outside 2..4 or that differ, D of Q and K, S of K and V, batches or
// heads that do not agree, an output or an LSE of the wrong shape, a non-finite or zero scale, a mask that does
// not broadcast, an unknown platform.
struct AttentionAuditInput {
  const Tensor* q = nullptr;
  const Tensor* k = nullptr;
  const Tensor* v = nullptr;
  const Tensor* out = nullptr;
  const Tensor* mask = nullptr;
  bool causal = false;
  std::optional<double> scale;
  OpEnv out_rounding;               // Model output -> output file format.
  // Optional: the kernel's LSE, Q's shape without D ((S), (H, S), (B, H, S)), a float tensor;
  // audited as AuditResult::lse (AUDIT.md "The LSE of audit attention").
  const Tensor* lse = nullptr;
};

inline constexpr int64_t kMaxUnexplainedDetails = 100000;
inline constexpr int64_t kMaxDiagnosed = 1000;

struct AuditElement {
  std::vector<int64_t> index;       // Position in `out`.
  AuditClass cls = AuditClass::kUnexplained;
  uint64_t actual_bits = 0;         // In out's format.
  double actual = 0;
  std::string exact;                // Exact value, hex-float (full precision).
  double exact_value = 0;           // Rounded to double.
  uint64_t emulated_bits = 0;       // In out's format (after the output conversion).
  double emulated = 0;
  double error_ulp = 0;             // (out - exact) / ulp_out(exact).
  double error_over_bound = 0;      // |out - exact| / B (inf when B = 0 and out != exact).
  double abs_sum = 0;               // sum |a_k b_k| (|x_k| for sum) of the element's slice.
  double bound = 0;                 // B.
  std::string diagnosis;            // Unexplained elements; "" otherwise.
};

struct PlatformAudit {
  std::string name;
  std::array<int64_t, kAuditClasses> counts{};
  // The tolerance report's recommendation for (op, dtype, K, this platform); zero when not run.
  double rec_rtol = 0, rec_atol = 0, rec_ulp = 0, rec_bn = 0;
  std::string model_hash;           // FNV-1a of the model file's parameters (provenance).
};

struct AuditResult {
  std::string op;                   // matmul | sum | cast
  AuditVerdict verdict = AuditVerdict::kFail;
  std::array<int64_t, kAuditClasses> counts{};  // Against platforms[0].
  std::vector<PlatformAudit> platforms;
  std::string best_platform;        // The best-explaining platform (see "several platforms").
  std::vector<uint8_t> classes;     // Per element of out (C order), AuditClass against [0].
  std::vector<int64_t> out_shape;
  std::vector<AuditElement> elements;  // Listed elements.
  // With AuditOptions::all_unexplained: every unexplained element in C order (capped, see
  // kMaxUnexplainedDetails; unexplained_total counts them all).
  std::vector<AuditElement> unexplained;
  int64_t unexplained_total = 0;
  int64_t k = 0;                    // Reduction length (matmul, sum).
  std::string out_format, input_format;
  std::string formula;              // What was assumed, one line.
  // torch.testing-shaped summary figures (against platforms[0]).
  int64_t mismatched = 0;           // Unexplained (plus within_tolerance under strict).
  double max_abs_diff = 0, max_abs_allowed = 0;
  std::vector<int64_t> max_abs_index;
  double max_rel_diff = 0, max_rel_allowed = 0;
  std::vector<int64_t> max_rel_index;
  std::vector<std::string> notes;   // Conversions made, hints (bf16-fitting float32, NaNs, ...).
  std::vector<std::string> soundness;  // Sentences on what the tolerance would accept.
  std::vector<std::pair<std::string, double>> soundness_rates;  // (case, accepted fraction).
  std::vector<std::pair<std::string, std::string>> provenance;  // Files, hashes, version.
  // With AuditOptions::keep_bounds: per element, the largest bound over the platforms and the
  // best class over them (an envelope's element is unexplained only if every member says so).
  std::vector<double> bounds;
  std::vector<uint8_t> best_classes;
  // The mismatch map: out viewed as 2-D (rows = all dimensions but the last), reduced to at most
  // 256 x 256 cells, each the largest |out - exact| / bound of its elements (0: identical; inf:
  // zero bound but an error; NaN: non-finite). map_cell_rows/cols: elements per cell.
  int64_t map_rows = 0, map_cols = 0, map_cell_rows = 1, map_cell_cols = 1;
  std::vector<float> map;
  // Histogram of log10(|out - exact| / bound) over the non-identical finite elements: bins of
  // width 0.5 from -8 to +8 (32 bins), plus below (and exact zero error) and above.
  std::vector<int64_t> histogram;   // 34 counts: [below, 32 bins, above].
  // The fit (AUDIT.md "Fit"): the model of the presets' parametric families (split-K slices and
  // their order, then group size, fraction bits, where c enters, input conversion, promotion
  // interval) that reproduces the most elements bit for bit.
  struct FitResult {
    bool run = false;
    std::string skipped;           // Why it did not run ("" when it ran or was not asked for).
    std::string base;              // The preset whose datapath the fitted model keeps.
    std::string change;            // What the fit changed ("" : the preset as it is).
    std::string model_text;        // The model file (name `model_name`).
    std::string model_name;
    int64_t reproduced = 0;        // Bit-identical elements of `checked`.
    int64_t checked = 0;           // Elements checked (all, or a pinned sample of them).
    int64_t base_reproduced = 0;   // The best preset's own count on the same elements.
    std::string base_best;         // That preset.
    int64_t candidates = 0;        // Models tried (on the sample first).
    int64_t datapaths = 0;         // Distinct datapaths of the presets searched around.
    std::vector<std::string> ties;  // Other finalists with the same count ("<base>: <change>").
    // Per position: groups[0] is the fit above (the checked elements it reproduces); each later
    // group is a fit of the checked elements the groups before it leave (when they are at least
    // 16 and a twentieth of the checked ones; at most 3 groups). `where`: the rows and columns
    // (matmul) or positions (sum) of the group's reproduced elements, as ranges.
    struct Group {
      std::string base, change;
      int64_t reproduced = 0, of = 0;  // Reproduced of the elements searched.
      std::string where;
    };
    std::vector<Group> groups;
    int64_t unreproduced = 0;  // Checked elements no group reproduces.
  } fit;
  // audit attention --lse: the LSE tensor's classes against one platform (the primary one when
  // it has an LSE, else correctly-rounded), the same classes and rules as out's (no
  // within_tolerance); an unexplained LSE element fails the verdict too.
  struct LseAudit {
    bool run = false;
    std::string platform, format;
    std::vector<int64_t> shape;
    std::array<int64_t, kAuditClasses> counts{};
    AuditVerdict verdict = AuditVerdict::kPass;
    int64_t fully_masked_rows = 0;
    std::string convention;           // What the platform writes on fully masked rows.
    std::vector<AuditElement> elements;  // Listed: unexplained first, then the worst others.
    // With AuditOptions::keep_bounds (compare): per row, in the LSE's flat order, the class and
    // the bound (the largest distance from the exact LSE to a value the platform admits; NaN:
    // none).
    std::vector<uint8_t> classes;
    std::vector<double> bounds;
  } lse;
  // The aggregate gate (attention; AUDIT.md "Aggregate gate"): over the elements whose output
  // and exact value are both finite (`elements` of them), the relative L2 error
  // ||out - exact||_2 / ||exact||_2 and the Pearson correlation of out with exact, each with its
  // limit derived from the primary platform's per-element bounds B (element e's B_e; an
  // identical element's own error when larger, or when it has no bound):
  //   rel_l2_limit = ||B||_2 / ||exact||_2. Sound: every conforming output has |out_e - exact_e|
  //     <= B_e, so ||out - exact||_2 <= ||B||_2.
  //   correlation_limit = sqrt(1 - (||B||_2 / sigma)^2), sigma = ||exact - mean(exact)||_2 (the
  //     exact output's centred norm), when ||B||_2 < sigma (else no limit: -1). Sound: with d =
  //     out - exact and c the centring (an orthogonal projection, ||c d|| <= ||d|| <= ||B||), the
  //     angle t between c exact and c out = c exact + c d has sin t <= ||c d|| / sigma (the
  //     distance from c exact to the line through c out is at most its distance ||c d|| to the
  //     point c out) and cos t > 0 (<c exact, c out> >= sigma^2 - sigma ||B|| > 0), so
  //     correlation = cos t >= sqrt(1 - (||B|| / sigma)^2) >= (sigma - ||B||) / (sigma + ||B||).
  // Both figures and limits are evaluated in binary64 (deterministic sums, whatever the thread
  // count); the gate fails when rel_l2 > rel_l2_limit (1 + 2^-20) or correlation <
  // correlation_limit - 2^-20 (slack above the evaluation's rounding for fewer than 2^31
  // elements). A correlation below its limit implies an L2 error above its own (proof above), so
  // the second test only names the symptom. The gate fails only where some element is outside its
  // bound (unexplained: the limits are sums of the per-element bounds), so it adds no false alarm:
  // it states in aggregate terms, the ones tests like mlir-air#1450's use, what the classes found.
  // emulated_rel_l2 and emulated_correlation: the same figures for the platform's own emulated
  // output (one conforming implementation: the typical size, not a limit). A failing gate fails
  // the verdict (exit 1) even when `mismatched` is 0.
  struct Aggregate {
    bool run = false;
    std::string platform;          // The primary platform the limits come from.
    int64_t elements = 0;          // Finite (out, exact) pairs summed.
    int64_t excluded = 0;          // Elements left out: a non-finite output or exact value.
    int64_t unbounded = 0;         // Elements without a bound and not identical (no limit then).
    double rel_l2 = 0, rel_l2_limit = 0, emulated_rel_l2 = 0;
    double l2 = 0, l2_limit = 0;   // ||out - exact||_2 and ||B||_2 (absolute).
    double correlation = 0, correlation_limit = -1, emulated_correlation = 0;  // NaN: undefined.
    double sigma = 0;              // ||exact - mean(exact)||_2.
    bool pass = true;
    std::string why;               // When it fails: which figure exceeds its limit.
  } aggregate;
  // cast under sr<k>: the rate of rounding away from zero against its expectation.
  struct SrTest {
    bool run = false;
    int64_t inexact = 0, away = 0;
    double expected = 0, sigma = 0, z = 0;
  } sr_test;
};

absl::StatusOr<AuditResult> AuditMatmul(const MatmulAuditInput& input, const AuditOptions& options);
absl::StatusOr<AuditResult> AuditSum(const SumAuditInput& input, const AuditOptions& options);
absl::StatusOr<AuditResult> AuditCast(const CastAuditInput& input, const AuditOptions& options);
absl::StatusOr<AuditResult> AuditElementwise(const ElementwiseAuditInput& input,
                                             const AuditOptions& options);
absl::StatusOr<AuditResult> AuditAxis(const AxisAuditInput& input, const AuditOptions& options);
absl::StatusOr<AuditResult> AuditAttention(const AttentionAuditInput& input, const AuditOptions& options);
// The exact attention output (input.out ignored): every element of Q's shape with V's last
// dimension correctly rounded (RNE) into `out`, C order, as bits; the same checks and errors as
// AuditAttention (a float format of at most 53 bits for `out`).
absl::StatusOr<std::vector<uint64_t>> ExactAttention(const AttentionAuditInput& input, const FormatSpec& out,
                                                     int threads = 1);

// One attention model's output (input.out ignored): `platform`'s emulated value of every element
// (composite/attention_model.h: one two-pass implementation in the model's formats) in the model's
// output format, C order, Q's shape with V's last dimension, and per element the enclosure
// [lo, hi] (values of that format) holding the output of every implementation the model admits
// (its per-element bound; NaN where it gives none, a fully masked row's convention as a point).
// The same checks and errors as AuditAttention, and an unknown model (the valid names listed;
// "correctly-rounded" is ExactAttention's). models_dir empty: the source tree's.
// Example (Python: fpconform.emulate_attention):
//   auto e = EmulateAttention({.q = &q, .k = &k, .v = &v}, "flash-attention2-cuda-bf16", "");
//   e->lo[0] <= ToDouble(*e->format, e->bits[0]) && ToDouble(*e->format, e->bits[0]) <= e->hi[0];
struct AttentionEmulation {
  const FormatSpec* format = nullptr;
  std::vector<int64_t> shape;
  std::vector<uint64_t> bits;
  std::vector<double> lo, hi;
};
absl::StatusOr<AttentionEmulation> EmulateAttention(const AttentionAuditInput& input, const std::string& platform,
                                                    const std::string& models_dir, int threads = 1);

// `fpconform compare`: out_ref audited against platform_ref, out against platform; per element
// "consistent" when |out - out_ref| <= B_ref + B (each side's element bound, envelopes: the max
// over members), else "inconsistent", with the side at fault (the one whose own audit is
// unexplained at that element; "both" or "neither").
struct CompareResult {
  AuditResult ref, port;
  int64_t consistent = 0, inconsistent = 0;
  int64_t fault_ref = 0, fault_port = 0, fault_both = 0, fault_neither = 0;
  std::vector<std::pair<std::vector<int64_t>, std::string>> listed;  // (index, fault side).
  AuditVerdict verdict = AuditVerdict::kFail;
  std::vector<std::string> notes;   // E.g. (attention) the two outputs are bit-identical.
  // compare attention with both LSEs (--lse-ref and --lse): per row, |lse - lse_ref| against the
  // sum of both platforms' LSE bounds, with the side at fault as for the output. An inconsistent
  // row fails the verdict.
  struct LseCompare {
    bool run = false;
    int64_t consistent = 0, inconsistent = 0;
    int64_t fault_ref = 0, fault_port = 0, fault_both = 0, fault_neither = 0;
    std::vector<std::pair<std::vector<int64_t>, std::string>> listed;  // (index, fault side).
  } lse;
};
absl::StatusOr<CompareResult> CompareMatmul(const MatmulAuditInput& ref, const std::string& platform_ref,
                                            const MatmulAuditInput& port, const std::string& platform,
                                            const AuditOptions& options);
// The same for the composite ops (issue 28 §4): `ref` and `port` hold the same inputs (x, and
// weight, bias and eps for the norms) and each its own output; each side is audited against its
// own composite model.
absl::StatusOr<CompareResult> CompareElementwise(const ElementwiseAuditInput& ref,
                                                 const std::string& platform_ref,
                                                 const ElementwiseAuditInput& port,
                                                 const std::string& platform, const AuditOptions& options);
absl::StatusOr<CompareResult> CompareAxis(const AxisAuditInput& ref, const std::string& platform_ref,
                                          const AxisAuditInput& port, const std::string& platform,
                                          const AuditOptions& options);
// Attention (issue 27): a CUDA reference and an NKI port on the same Q, K, V, mask and scale.
// The same file as both outputs (Tensor::source) is an error ("an output compared with itself
// proves nothing"); bit-identical outputs from two files pass with a note saying so. Each side's
// `lse`, when given, is audited against its platform (AuditResult::lse); with both, the LSEs are
// compared row by row (CompareResult::lse; the same file as both LSEs is an error too).
absl::StatusOr<CompareResult> CompareAttention(const AttentionAuditInput& ref, const std::string& platform_ref,
                                               const AttentionAuditInput& port, const std::string& platform,
                                               const AuditOptions& options);

// The tolerance recommendation an audit uses for (op "matmul" or "sum", one platform model, K):
// the tolerance report's rule (PlatformTolerance, reports/sweep.h) on max(8,
// options.tolerance_samples) N(0, 1) samples, with options.sweep_file's seed and factor and the
// dtype label it gives the platform (SweepDtypeOf); the same numbers as PlatformAudit::rec_* of
// an audit with these options (the Python package's fpconform.tolerance). Only `name` and rec_*
// are set. Errors: an unknown model or op, an envelope (name one member), a model without the op,
// a sweep file that cannot be read, PlatformTolerance's.
absl::StatusOr<PlatformAudit> RecommendTolerance(const std::string& op, const std::string& platform,
                                                 int64_t k, const AuditOptions& options);


// The fit's lines for the terminal (AuditResult::fit; "" when it did not run and was not
// skipped): the fitted model, the elements it reproduces, the search, the ties.
std::string AuditFitText(const AuditResult& r);

// Text for the terminal: the torch.testing-shaped lines, the class counts, the platforms, the
// listed elements, notes and soundness.
std::string AuditSummaryText(const AuditResult& r);
std::string CompareSummaryText(const CompareResult& r);
// The --json document (schema: reports/AUDIT.md): AuditJsonTree(r, kFile).dump(1) + "\n".
std::string AuditToJson(const AuditResult& r);
std::string CompareToJson(const CompareResult& r);

// The one serializer of audits (issue 26 §1): the --json document and the Python binding's
// `Audit` and `Compare` objects are built by these functions, so their keys cannot differ
// (AUDIT.md "The Python objects"). Both forms have the same keys in the same order; they differ
// only in how two kinds of value are written:
//   kFile    the --json bytes: a non-finite number as the string "nan", "inf" or "-inf"
//            (FormatDouble), an element's bits as a hex string in the output format ("0x3f80");
//   kPython  numbers as they are (NaN and inf included), bits as unsigned integers.
// Example: AuditJsonSection(r, "summary", JsonForm::kPython)["max_abs_diff"] is the double
// r.max_abs_diff; with kFile it is the same number, or "inf" when it is infinite.
enum class JsonForm : uint8_t { kFile, kPython };

// Every top-level key of an audit document, in document order; the optional ones (sr_test,
// aggregate, fit, lse) appear only where AuditJsonHas says so.
inline constexpr std::array<const char*, 22> kAuditJsonKeys = {
    "fpconform_audit", "op", "verdict", "counts", "platforms", "best_platform", "k", "shape",
    "output_format", "input_format", "formula", "summary", "sr_test", "aggregate", "elements",
    "notes", "soundness", "map", "histogram", "provenance", "fit", "lse"};
inline constexpr std::array<const char*, 11> kCompareJsonKeys = {
    "fpconform_compare", "op", "verdict", "consistent", "inconsistent", "at_fault", "listed",
    "lse", "notes", "ref", "port"};
// Whether r's document has `key` (false for a key not in kAuditJsonKeys).
bool AuditJsonHas(const AuditResult& r, std::string_view key);
// The value of `key` in r's document (null where AuditJsonHas is false).
nlohmann::ordered_json AuditJsonSection(const AuditResult& r, std::string_view key, JsonForm form);
// The whole document: every present key's section, in order.
nlohmann::ordered_json AuditJsonTree(const AuditResult& r, JsonForm form);
// The same for compare ("lse" only with both LSEs, CompareResult::lse; "ref" and "port" are
// audit documents).
bool CompareJsonHas(const CompareResult& c, std::string_view key);
nlohmann::ordered_json CompareJsonSection(const CompareResult& c, std::string_view key, JsonForm form);
nlohmann::ordered_json CompareJsonTree(const CompareResult& c, JsonForm form);
// The files of --report DIR: report.md, elements.csv, report.json.
std::vector<std::pair<std::string, std::string>> AuditReportFiles(const AuditResult& r);

}  // namespace fpconform::reports

#endif  // FPCONFORM_REPORTS_AUDIT_H_
