// The tolerance sweep behind `fpconform tolerance`: for every (op, dtype, distribution, K) it
// draws pinned random inputs, runs them through every platform model of that dtype, measures
// each output against the exact oracle, and turns the observations into recommended tolerances
// with their power against known-wrong variants. The result is a Report (report.h) with the
// tables "tolerance", "cross_platform", "power", "quantize", the composite kernels' "composite",
// "composite_power" and "composite_cross" ([composite] below), attention's "attention",
// "attention_power" and "attention_cross" ([attention] below), and the summaries "defaults" and
// "rubric"; ToMarkdown renders the rubric-ready report.md.
//
// What is swept is data: a sweep file (TOML; the standard one is reports/standard_sweep.toml,
// documented field by field in that file) names the seed, samples, K values, distributions,
// dtypes with their platform models, the cross-platform pairs and the tolerance rule's factor.
// Command-line filters (SweepFilter) narrow it; unknown names are errors listing the valid ones.
//
// Inputs (all from cases/pinned_random.h; sample s of unit u uses DeriveSeed(seed, {FNV-1a of
// "op/dtype/distribution", K, s, operand}) so any thread count and any shard split draw the same
// numbers):
//   normal        N(0, 1)
//   uniform_pm1   U(-1, 1)
//   uniform_01    U(0, 1)                           (no cancellation)
//   loguniform    +-(1 + U(0,1)) * 2^e, e uniform in [-8, 8]   (wide dynamic range)
//   normal_sqrtk  N(0, 1) / sqrt(K) on both operands (products of unit scale after the sum)
// The doubles are then cast to the platform's input format: RNE for float32/bfloat16/float16
// (tfloat32 platforms receive float32 and convert as the model says); 8-bit floats and int8 get
// a per-tensor scale s = fl32(amax / max_finite) (int8: 127) and q = RNE_sat(x / s), as scaled
// FP8/INT8 kernels do; the output is then dequantized as fl32(y * fl32(s_a * s_b)).
//
// Measures per sample (oracles/error_measures.h): ULP error of the output in its format, the
// bound-normalized error |y - x| / (u * sum|a_i b_i|) with u = 2^-p of the model's final
// accumulator, and the relative error, all against the exact value x of the computation the
// platform was given (its quantized inputs, times the scales). Worst-case bound: the model's
// analytical bound (accumulation/evaluate.h), carried through the dequantization.
//
// Tolerance rule (also printed in the report): with f = factor (default 2):
//   ULP:              min(f * max observed ULP error, max worst-case bound in ULP)
//   bound-normalized: min(f * max observed, max worst-case bound, both in u * sum|a_i b_i|)
//   assert_close:     rtol = f * median relative error; atol = max_i max(0, e_i' - rtol |x_i|)
//                     with e_i' = min(f * |y_i - x_i|, worst-case bound_i) >= |y_i - x_i|
// so every recommendation is >= every observed error of its row, and the ULP and
// bound-normalized ones are <= the row's worst-case bound. The probabilistic estimate
// lambda * sqrt(K) (Higham & Mary, SIAM J. Sci. Comput. 41(5), 2019, Thm. 3.1, in units of
// u * sum|a_i b_i|; lambda from the sweep file) is printed beside the bound-normalized
// recommendation; rows above it are flagged (biased rounding such as RZ grows like K, not sqrt K).
//
// Mutations (power table), each evaluated as the mutated computation's exact value rounded once
// to the output format (so only the mutation, not extra rounding, is measured), except
// bf16_accumulation, which is run as a sequential bfloat16 FMA chain model:
//   bf16_accumulation  the whole sum accumulated in bfloat16 (RNE) instead of the platform's
//   dropped_k_tile     one K tile (min(128, K/4) elements, a pinned random tile) left out
//   doubled_k_tile     that tile added twice
//   missing_scale      the dequantization forgets s_b (scaled dtypes only)
//   transposed_operand b replaced by an unrelated vector of the same distribution (what reading
//                      a square B transposed gives: the wrong elements, same statistics)
//   sign_flip          one element a_j (pinned random j) negated
// rejected fraction = share of samples whose mutated output falls outside the tolerance.
//
// Memory: RunSweep estimates each unit's memory before any unit runs and refuses
// (ResourceExhausted, naming the unit, the estimate and the budget) a sweep above
// kSweepMemoryBudgetBytes, 8 GiB. Measured (GCC 12, -O2, reports/sweep.cc): a matmul or sum
// unit holds about 64 * (1 + P) bytes per term K per worker thread, P = the number of distinct
// input-format pairs among its platforms (K = 1048576, one thread: 125 MiB for bfloat16, one
// pair; 160 MiB for float8_e4m3 with e4m3fn and e4m3 platforms, two pairs; so K = 16777216 is
// about 2 GiB per thread), and threads split samples, so min(threads, samples) count; a quantize
// unit holds about 16 + 56 F bytes per element per sample, whatever the threads (F formats,
// which the threads split; the standard sweep's 500 x 4096 x 4: 450 MiB). With SweepOptions::fit_threads (the CLI without
// --threads) the thread count is lowered until the estimate fits instead.
//
// Determinism: each unit's numbers depend only on the sweep file and the unit; rows are emitted
// in unit order; threads only split samples (a quantize unit's formats). A shard (index i of n) runs units u with
// u % n == i; MergeReports puts shard reports back together into the single-run report.
#ifndef FPCONFORM_REPORTS_SWEEP_H_
#define FPCONFORM_REPORTS_SWEEP_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "accumulation/model.h"
#include "reports/report.h"

namespace fpconform {
class ModelCatalog;
}  // namespace fpconform
namespace fpconform::composite {
struct AttentionModel;
}  // namespace fpconform::composite

namespace fpconform::reports {

struct DtypeSpec {
  std::string name;                  // Label, e.g. "bfloat16", "float8_e4m3", "int8".
  std::vector<std::string> matmul;   // Platform model names (accumulation/models).
  std::vector<std::string> sum;      // Models for the sum reduction.
  bool integer = false;              // int8 x int8 -> int32 (exact), float32 rescale.
};

struct CrossSpec {
  std::string name;                  // Row label, e.g. "H100 bf16 vs Trainium2 bf16 envelope".
  std::string dtype;                 // A DtypeSpec name.
  std::string op = "matmul";         // The op whose units carry the pair: matmul or sum.
  std::string a;                     // Reference platform (e.g. the CUDA one).
  std::vector<std::string> b;        // Port platform(s) or model envelopes (MODEL_FORMAT.md,
                                     // "Envelopes"); several = envelope (worst member).
};

// [composite] (op "composite", sweep_composite.cc): the composite kernels' rows. Each function
// (elementwise: exp exp2 log tanh sigmoid silu gelu gelu_tanh rsqrt reciprocal; along an axis:
// softmax log_softmax rmsnorm layernorm) is run, per composite distribution and (axis ops) row
// length, through every listed composite model (composite/models) that implements it, on
// pinned random inputs rounded to the model's input format:
//   normal     N(0, 1)
//   wide       N(0, 8^2)          (large logits, activation tails)
//   dc_offset  30 + N(0, 1)       (the norms' conditioning: kappa about 30)
// (log, rsqrt and reciprocal take |x|, zeros left out). The norms take eps = 1e-6 (rmsnorm) and
// 1e-5 (layernorm), a weight 1 + N(0, 0.1^2) and a bias N(0, 0.1^2) in the input format.
// Measures per element against the exact value (oracles/elementary.h, axis_ops.h): the model's
// emulated output's ULP error, and its bound B (the largest distance from the exact value to a
// point of the model's enclosure: every conforming implementation's output, composite/model.h).
// Rule: e_i = max(factor * |y_i - x_i|, B_i) (so every conforming implementation's output
// passes); rec_ulp = max e_i / ulp(x_i); (rtol, atol) = among the pairs with e_i <= atol +
// rtol |x_i| for every element, the one with the least atol + rtol * median |x| (relative
// errors give atol about 0, absolute ones rtol about 0: torch's GELU for x below -5). Power: mutants computed in binary64 from the same inputs
// and rounded to the output format (other_gelu_form, input_in_bfloat16, dropped_term,
// eps_outside_sqrt, unbiased_variance, missing_weight, missing_bias; each where it applies);
// rejected = the share of samples (rows; elements for elementwise functions) with an element
// outside the recommended rtol/atol. Cross pairs: two models of the same function and input
// format on the same inputs, |y_a - y_b| against B_a + B_b.
struct CompositeSweepSpec {
  std::vector<std::string> functions;
  std::vector<std::string> distributions;   // normal, wide, dc_offset.
  std::vector<int64_t> lengths;             // Row lengths of the axis ops.
  int64_t elements = 65536;                 // Per unit: elementwise values, or rows * length.
  std::vector<std::string> platforms;       // Composite model names.
  std::vector<std::pair<std::string, std::string>> cross;  // (reference, port) model names.
  // Set by ApplyFilter's dtypes: only models whose input format is one of these run.
  std::vector<std::string> input_formats;
};
const std::vector<std::string>& ValidCompositeDistributions();

// [attention] (op "attention", sweep_attention.cc): attention's rows (issue 27 section 4). A unit
// is (distribution, S, D, mask): Q, K, V of S x D drawn once per unit (streams DeriveSeed(seed,
// {FNV-1a of "attention/<distribution>", S, D, operand}), operands Q K V = 0 1 2, the same draws
// for both masks) and rounded to each listed model's input format:
//   normal   Q, K, V ~ N(0, 1)
//   peaked   Q ~ N(0, 8^2), K, V ~ N(0, 1): scaled scores of standard deviation 8, a softmax near
//            one-hot (effective sample size ESS = 1 / sum_j P_j^2 near 1)
// The scale is 1/sqrt(D) (exact, as SDPA's default); mask "causal" is top-left aligned. `rows`
// query rows evenly spaced over [0, S) are measured (row r: floor((2r + 1) S / (2 rows))), split
// round-robin into `cases` cases: a case is what one test compares (row r in case r % cases).
// The measured rows form a problem of their own (rows x S queries against all keys), their causal
// mask given as the boolean mask j <= i of their own query index i, which the oracle and the
// models treat exactly as is_causal (oracles/attention.h).
// Per model (composite/attention_models): its emulated output against the exact value
// (oracles/attention.h) and its bound B per element (the largest distance from the exact value
// to an output the model admits: composite/attention_model.h). Rule, as [composite]'s: e_i =
// max(factor * |y_i - x_i|, B_i); rec_ulp = max e_i / ulp(x_i); (rtol, atol) = the pair covering
// every e_i with the least atol + rtol * median |x|. The bound is a worst case over every
// alignment of every rounding error, so models that round the scores to the input format
// (PyTorch's math SDPA in bfloat16) or take a loose exponential (NKI's ScalarE) get loose
// recommendations. Beside it, a probabilistic recommendation (prob_rtol, prob_atol) covers
// max(factor * |y_i - x_i|, p_i), p_i = min(lambda sigma_i + ulp(x_i) / 2, B_i), sigma_i the standard
// deviation of the model's error with every rounding error independent and uniform in +-u
// (variance u^2 / 3), to first order: the scores' errors (the input roundings of the scale
// placement, u_in per product term, two for Q and K times sqrt(scale); the compute-format dot,
// u_c scale sum_d |q_d k_jd|) and the exponential's (eps = exp_ulp 2^(1 - p_c)) move o_i by
// sum_j P_j (ds_j + de_j) (V_jc - o_i); P's rounding (u_P) by sum_j P_j d_j V_jc (row sum of
// unrounded P) or P_j d_j (V_jc - o_i) (rounded); the compute-format sums about u_c sqrt(n); the
// normalization u_c (divide), 2 u_c (reciprocal), eps + 2 u_c (exp_lse). sigma_i is about
// u |V| / sqrt(ESS): it shrinks with S and grows as the softmax peaks. prob_abs = max_i p_i.
// Criteria compared on every case (the emulated conforming output, and each mutant):
//   rec       the row's recommended rtol/atol against the exact value;
//   prob      the probabilistic recommendation, likewise;
//   nki       nki-library's attention_cte test: maxAllClose(rtol = 2e-2, atol = 1e-5), mode "max":
//             |a - b| <= atol + rtol * max|b| over the case, b = the float32 reference cast to
//             the dtype (here: the exact value correctly rounded to the output format);
//   allclose  np.allclose(a, b, rtol = 2e-2, atol = 1e-5): |b| per element instead;
//   fa        FlashAttention's test (Dao-AILab/flash-attention tests/test_flash_attn.py, commit
//             0251105a, line 1556 in test_flash_attn_causal; test_flash_attn_output, line 1121,
//             omits the 1e-5; hopper/test_flash_attn.py, line 285, adds fwd_atol = 2 max|(b +
//             0.3 - 0.3) - b| instead): max|a - b| <= 2
//             max|pt - b| + 1e-5, b = the float32 reference cast to the dtype (here as for nki),
//             pt = the same-dtype PyTorch reference (attention_ref(upcast=False,
//             reorder_ops=True): K / sqrt(D), scores, softmax and output each rounded to the
//             dtype; emulated in binary64 with one rounding per step), differences rounded to the
//             dtype as PyTorch subtracts them.
// Mutants (binary64 from the same inputs, rounded once to the output format; power rows count
// only the cases a mutant changes, `affected`): scale_twice (scale^2), scale_missing (scale 1),
// causal_mask_missing (causal units), last_key_block_dropped (the keys of the row's last 64-key
// block; a row of <= 64 keys is unchanged), row_sum_bfloat16 (the row sum of the exponentials
// accumulated in bfloat16, RNE), k_transposed_read (K's S x D buffer read as D x S: Q K instead of
// Q K^T when S = D), softmax_wrong_axis (normalized over the queries that attend each key).
// Cross pairs: two models of one input format on the same inputs, |y_a - y_b| against B_a + B_b;
// (rtol, atol) covering max(factor |y_a - y_b|, B_a + B_b) against |y_a|, and the probabilistic
// pair covering max(factor |y_a - y_b|, min(lambda sqrt(sigma_a^2 + sigma_b^2) + ulp(x), B_a + B_b)).
struct AttentionSweepSpec {
  std::vector<int64_t> lengths;             // S.
  std::vector<int64_t> head_dims;           // D = D_v.
  std::vector<std::string> masks;           // none, causal.
  std::vector<std::string> distributions;   // normal, peaked.
  int64_t rows = 64;                        // Query rows measured per unit (at most S).
  int64_t cases = 8;                        // Cases the rows are split into (at most rows).
  std::vector<std::string> platforms;       // Attention model names.
  std::vector<std::pair<std::string, std::string>> cross;  // (reference, port) model names.
  // Set by ApplyFilter's dtypes: only models whose input format is one of these run.
  std::vector<std::string> input_formats;
};
const std::vector<std::string>& ValidAttentionDistributions();

// Memory model and budget (see "Memory" above).
inline constexpr int64_t kSweepMemoryBudgetBytes = int64_t{8} << 30;
inline constexpr int64_t kMatmulBytesPerTermPerPair = 64;
inline constexpr int64_t kQuantizeBytesPerElement = 16;
inline constexpr int64_t kQuantizeBytesPerElementFormat = 56;

// Limits of a sweep file and of the command-line values that replace its entries.
inline constexpr int64_t kMaxSweepK = int64_t{1} << 24;  // ks, --k, quantize_elements.
inline constexpr int64_t kMaxSweepSamples = 1000000;     // samples, min_samples, --samples.

// Where a value of a sweep file was written (for the checks made after parsing, e.g. against the
// model catalog): its line and the field as the file names it ("dtype[2].matmul").
struct SweepSource {
  int64_t line = 0;
  std::string field;
};

struct SweepSpec {
  std::string source;                // File it came from (provenance).
  uint64_t seed = 0;
  int samples = 0;                   // Per row, before the term budget.
  int min_samples = 0;
  int64_t max_terms_per_row = 0;     // samples(K) = clamp(max_terms / K, min_samples, samples).
  double factor = 2;
  double lambda = 1;
  std::vector<std::string> ops;      // matmul, sum, quantize.
  std::vector<int64_t> ks;
  std::vector<std::string> distributions;
  std::vector<DtypeSpec> dtypes;
  std::vector<CrossSpec> cross;
  std::vector<std::string> quantize_formats;  // Format names, e.g. float8_e4m3fn.
  int64_t quantize_elements = 4096;           // Elements per quantized tensor.
  CompositeSweepSpec composite;               // [composite]; used by op "composite".
  AttentionSweepSpec attention;               // [attention]; used by op "attention".

  // Source positions, set by ParseSweepSpec; keys:
  //   "dtype/<dtype>"                 the dtype's name
  //   "dtype/<dtype>/matmul/<model>"  an entry of its matmul list ("dtype/<dtype>/sum/<model>")
  //   "cross/<name>/dtype", "cross/<name>/a", "cross/<name>/b/<model>"
  //   "ks/<K>"
  std::map<std::string, SweepSource> sources;
  // "<source>:<line>: <field>" for a key of `sources`, or just `source` when it has none (a
  // value that came from the command line or from code).
  std::string Where(const std::string& key) const;
};

// Checks a parsed sweep against the model catalog, before anything runs: every platform model
// exists and parses, is a model (not an envelope) and defines the op of its list (a model whose
// `operations` lack "matmul" cannot be a matmul platform, nor a sum-less one a sum platform);
// every cross-pair model (envelopes expanded) defines matmul and takes the same inputs (inputs.a,
// inputs.b, inputs.convert_to) as one of the matmul platforms of the pair's dtype (a model of
// another dtype is an error). Errors are "file:line: field: problem" with the positions kept in
// spec.sources. RunSweep calls it first.
absl::Status CheckSweepModels(const SweepSpec& spec, const ModelCatalog& catalog);

// Valid names (for messages and --help).
const std::vector<std::string>& ValidOps();
const std::vector<std::string>& ValidDistributions();

absl::StatusOr<SweepSpec> ParseSweepSpec(std::string_view toml_text, std::string_view file_name);
absl::StatusOr<SweepSpec> LoadSweepSpec(const std::string& path);

// Command-line narrowing; empty vectors keep everything. Names are checked against the spec.
struct SweepFilter {
  std::vector<std::string> ops, dtypes, platforms, distributions;
  // Replace the spec's K list (distinct, 1..kMaxSweepK; see also CheckSweepResources).
  std::vector<int64_t> ks;
  int samples = 0;                  // > 0: replace samples (and min_samples if larger).
  std::optional<uint64_t> seed;     // Set: replace the seed (any of 0..2^64-1).
  bool quick = false;               // Small K, few samples: under a minute.
};
absl::StatusOr<SweepSpec> ApplyFilter(SweepSpec spec, const SweepFilter& filter);

struct SweepOptions {
  std::string models_dir;
  std::string composite_models_dir;  // The composite models (op "composite"; composite/models).
  std::string attention_models_dir;  // The attention models (op "attention"; composite/attention_models).
  int threads = 1;
  // True: use fewer than `threads` workers where the memory estimate needs it (results do not
  // depend on the thread count); false: a sweep whose estimate exceeds the budget is an error.
  bool fit_threads = false;
  // When set, receives the number of worker threads RunSweep used.
  int* threads_used = nullptr;
  int shard_index = 0, shard_count = 1;
  // Called from the calling thread after every unit: (units done, units in this shard, label).
  std::function<void(int64_t, int64_t, const std::string&)> progress;
  // Polled before every unit and every sample, from the worker threads too (so it must be
  // thread-safe, e.g. process.h's InterruptGuard::Interrupted). Once it returns true the sweep
  // stops early and RunSweep returns CancelledError. Null: never.
  std::function<bool()> cancelled;
  // Record "shard i/n" in the provenance also for a 1/1 split (`--shard 1/1`), so that the
  // report can be merged; without it only splits into 2 or more shards record their shard.
  bool record_shard = false;
};

// Runs the sweep (or one shard of it). Errors, all before any unit runs: CheckSweepModels, a bad
// shard, the memory estimate above kSweepMemoryBudgetBytes (ResourceExhausted); CancelledError
// when options.cancelled stopped it.
absl::StatusOr<Report> RunSweep(const SweepSpec& spec, const SweepOptions& options);

// The tolerance rule of one platform (what an audit uses): the numbers RunSweep writes into a
// "tolerance" row as rec_ulp, rec_bn, rec_rtol and rec_atol (see "Tolerance rule" above).
struct ToleranceRule {
  double ulp = 0;   // ULP of the row's output format.
  double bn = 0;    // Bound-normalized: units of u * sum|a_i b_i|.
  double rtol = 0;  // assert_close: |y - x| <= atol + rtol |x|.
  double atol = 0;
};

// Which row: the op (ModelOp::kMatmul or kSum), the sweep file's dtype label (it seeds the inputs:
// "Inputs" above; SweepDtypeOf gives the one a sweep file uses for a platform), the distribution
// (ValidDistributions()), K and the number of samples.
struct ToleranceQuery {
  ModelOp op = ModelOp::kMatmul;
  std::string dtype;
  std::string distribution = "normal";
  int64_t k = 0;
  int samples = 0;
};

// The tolerance rule for `platform` (a parsed model: nothing is read from files) on the row
// `query` names, with spec's seed and factor (nothing else of spec is used). It runs the row's
// code (the same inputs, observations and rule as RunSweep), so it gives the same doubles as the
// row of a sweep with that unit whose samples(K) is query.samples. `threads` split the samples
// (results do not depend on them). Errors, before any work: InvalidArgument for an op other than
// matmul and sum, a platform without the op, an unknown distribution, K or samples below 1;
// ResourceExhausted when the unit's memory estimate (see "Memory") is above the budget.
// Example (what an audit of a bfloat16 matmul with K = 4096 on trainium2-bf16 does):
//   PlatformTolerance(standard, model, {ModelOp::kMatmul, "bfloat16", "normal", 4096, 200}, 8)
absl::StatusOr<ToleranceRule> PlatformTolerance(const SweepSpec& spec, const Model& platform,
                                                const ToleranceQuery& query, int threads = 1);

// The tolerance rule of one attention platform (issue 27 section 4's typed call): what RunSweep
// writes into an "attention" row for the unit (distribution, S, D, mask) of `query` and the model
// `platform` (parsed: nothing is read from files): min(spec rows, S) query rows, the inputs drawn
// with spec's seed ([attention] above), the rule with spec's factor and lambda. The same doubles
// as that row's rec_rtol, rec_atol, rec_ulp, prob_rtol, prob_atol, bound_abs and ess_median
// (the power table's mutants are not computed). `threads` split the rows (results do not depend
// on them). Errors, before any work: InvalidArgument for S or D below 1 or above kMaxSweepK, an
// unknown distribution (ValidAttentionDistributions()), S * D above 2^26 (the unit's inputs).
// Example (an FA2 bfloat16 kernel with 2048 keys, head dim 128, causal):
//   AttentionPlatformTolerance(standard, fa2, {2048, 128, true, "normal"}, 2)->rtol
struct AttentionToleranceQuery {
  int64_t s = 0;  // Keys (= queries).
  int64_t d = 0;  // Head dimension (D = D_v).
  bool causal = false;
  std::string distribution = "normal";
};
struct AttentionToleranceRule {
  double rtol = 0, atol = 0;            // Cover every conforming output (the bound).
  double prob_rtol = 0, prob_atol = 0;  // The probabilistic recommendation.
  double ulp = 0;                       // rec_ulp.
  double bound_abs = 0;                 // The largest per-element bound of the rows.
  double ess_median = 0;                // The rows' median effective sample size 1 / sum P^2.
  int64_t rows = 0;                     // Query rows measured.
};
absl::StatusOr<AttentionToleranceRule> AttentionPlatformTolerance(const SweepSpec& spec,
                                                                  const composite::AttentionModel& platform,
                                                                  const AttentionToleranceQuery& query,
                                                                  int threads = 1);

// The dtype label spec gives platform for op: the first non-integer dtype whose matmul (sum) list
// names it; the name of the platform's input format (inputs.a) when none does.
std::string SweepDtypeOf(const SweepSpec& spec, const Model& platform, ModelOp op);

// The row tables RunSweep writes ("tolerance", "cross_platform", "power", "quantize",
// "composite", "composite_power", "composite_cross", "attention", "attention_power",
// "attention_cross"), in that order, with their columns and no
// rows: the schema MergeReports checks shards against.
std::vector<Table> SweepTableSchemas();

// Combines shard reports (any order) into the report one run gives; a single report of a
// `--shard 1/1` run merges into the unsharded report. Every shard's row tables must be those of
// SweepTableSchemas(), each column with the same name and type in the same place ("rubric" and
// "defaults" are recomputed, so theirs are ignored). Errors name the shard file (as given in
// `names`), and the table and column where it matters, when shards do not fit the schema
// ("s1/report.json: table 'tolerance': column 'k' is a string column, the sweep writes int"),
// do not belong together, overlap or leave a shard out.
absl::StatusOr<Report> MergeReports(const std::vector<Report>& shards,
                                    const std::vector<std::string>& names);

// Adds the summary tables ("rubric", "defaults") computed from the row tables. Deterministic.
void AddSummaries(Report& report);

// report.md.
std::string ToMarkdown(const Report& report);

// All files of a report directory: report.md, report.json, report.csv (tolerance), one CSV per
// other table.
std::vector<std::pair<std::string, std::string>> ReportFiles(const Report& report);

}  // namespace fpconform::reports

#endif  // FPCONFORM_REPORTS_SWEEP_H_
