// Exact oracles for ops along one axis (issue 28 §1): a row of n values in, n values out, each
// output element the correctly rounded exact value of the mathematical function of the inputs
// as the kernel received them (bits in a float format).
//
//   softmax:     y_i = e^(x_i) / sum_j e^(x_j)
//   log_softmax: y_i = x_i - log sum_j e^(x_j)
//   rmsnorm:     y_i = x_i w_i / sqrt(mean_j(x_j^2) + eps)               (w_i = 1 without weight)
//   layernorm:   y_i = (x_i - mu) / sqrt(var + eps) w_i + b_i, mu = mean_j x_j, var =
//                mean_j (x_j - mu)^2 (biased)                   (w_i = 1, b_i = 0 when absent)
// eps is the binary64 value given (exact), > 0. Weight and bias are bits in their own formats.
//
// Special values: a NaN or Inf in the row's x gives NaN for the whole row, except -Inf entries
// of softmax (0) and log_softmax (-Inf) while at least one entry is finite (all -Inf: NaN row);
// the binary64 path takes such -Inf masks and rmsnorm's exact zero products itself.
// A NaN or Inf weight or bias gives NaN in its column. Exact zero results: rmsnorm's
// x_i w_i = +-0 gives the zero of sign(x_i) xor sign(w_i); layernorm's x_i = mu exactly gives
// b_i exactly, or, without bias or with a zero bias, the zero that round-to-nearest IEEE
// arithmetic gives for (+0 * w_i) + b_i; log_softmax of a row with one finite entry gives +0.
// NaN results are the +qNaN of the output format. env: rounding (all but sr<k> on the fast
// path; sr<k> rounds with env.sr_random on the MPFR path), saturate, flush_to_zero, tininess
// act on each element's rounding; denormals_are_zero reads subnormal inputs, weights and biases
// as zeros.
//
// Reference method (AxisRoundRowMpfr): exact sums by mpfr_sum at a precision that holds them
// exactly (sum of x_j^2 and of x_j, n eps, n^2 eps), then for each element an interval
// [lo, hi] from outward-rounded MPFR operations at working precision w (exp, log, log1p,
// rec_sqrt rounded both ways), Ziv's loop over w = 192, 384, ... as in elementary.h (an element
// whose interval is one point has that exact value). Cancellation-free forms: softmax's largest
// entry is 1 - S'/(1 + S') and log_softmax's is -log1p(S'), S' = sum over the other entries of
// e^(x_j - max); values whose interval lies below 2^-4000 in magnitude (exp underflowing MPFR's
// exponent range) are rounded from the stand-in 2^-4001 (with their known sign).
// layernorm is evaluated as (n x_i - S1) w_i / sqrt(n S2 - S1^2 + n^2 eps) + b_i (S1 = sum x,
// S2 = sum x^2; the same value), rmsnorm as x_i w_i / sqrt((S2 + n eps) / n).
//
// Fast method (AxisRound): per row in binary64 with certified_double.h's running error bounds
// (softmax: max, e^(x_j - max) by the own exp, compensated sum Sum2 of Ogita, Rump & Oishi;
// rmsnorm: Sum2 of the squares; layernorm: two passes, var = sum (x_j - mu^)^2 / n - (mu -
// mu^)^2 exactly since sum (x_j - mu) = 0, so the computed mean's error enters the bound as
// -(mu - mu^)^2 only), each element decided by certified::Decide; rows with an undecided element
// are computed by the MPFR method and the undecided elements taken from it (counted).
//
// Speed (axis_ops_benchmark: 4096 x 4096 float32 N(0, 1), float32 out, rne, 2 threads on 2
// shared cores at load 7): softmax 1.42 s wall (2 rows through MPFR), log_softmax 1.29 s,
// rmsnorm 0.95 s, layernorm 1.08 s (per-thread CPU time about a third of that).
//
// Errors are values: InvalidArgument for eps <= 0 or not finite, spans of the wrong size,
// non-float formats, output precision > 53.
//
// Example:
//   std::vector<uint64_t> x = {0x3F800000, 0x40000000};              // float32 [1, 2]
//   std::vector<uint64_t> y(2);
//   AxisStats st;
//   AxisRound(AxisOp::kSoftmax, Float32(), x, 1, 2, AxisParams{}, Float32(), OpEnv{}, y, &st);
//   // y = {0x3E89B2B1 (0.26894143), 0x3F3B26A8 (0.7310586)}: 1/(1+e) and e/(1+e), rne.
#ifndef FPCONFORM_ORACLES_AXIS_OPS_H_
#define FPCONFORM_ORACLES_AXIS_OPS_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "oracles/elementary.h"

namespace fpconform {

enum class AxisOp : uint8_t { kSoftmax, kLogSoftmax, kRmsNorm, kLayerNorm };

// "softmax" "log_softmax" "rmsnorm" "layernorm".
std::string_view AxisOpName(AxisOp op);
absl::StatusOr<AxisOp> ParseAxisOp(std::string_view name);

struct AxisParams {
  double eps = 1e-5;                     // rmsnorm, layernorm: > 0.
  const FormatSpec* weight_format = nullptr;
  std::span<const uint64_t> weight;      // Empty, or n entries (rmsnorm, layernorm).
  const FormatSpec* bias_format = nullptr;
  std::span<const uint64_t> bias;        // Empty, or n entries (layernorm).
};

struct AxisStats {
  int64_t fast = 0;          // Elements decided by the binary64 path.
  int64_t fallback = 0;      // Elements taken from the MPFR method.
  int64_t special = 0;       // Elements of NaN/Inf rows, exact zeros, unsupported settings.
  int64_t mpfr_rows = 0;     // Rows the MPFR method was run on.
  AxisStats& operator+=(const AxisStats& o) {
    fast += o.fast;
    fallback += o.fallback;
    special += o.special;
    mpfr_rows += o.mpfr_rows;
    return *this;
  }
};

// x: rows * n bits (row-major) in format `in`; out_bits: rows * n. `threads` >= 1 split rows.
absl::Status AxisRound(AxisOp op, const FormatSpec& in, std::span<const uint64_t> x,
                       int64_t rows, int64_t n, const AxisParams& params, const FormatSpec& out,
                       const OpEnv& env, std::span<uint64_t> out_bits, AxisStats* stats,
                       int threads = 1);

// One row (n = x.size()) by the MPFR method only: bits and flags of every element.
absl::Status AxisRoundRowMpfr(AxisOp op, const FormatSpec& in, std::span<const uint64_t> x,
                              const AxisParams& params, const FormatSpec& out, const OpEnv& env,
                              std::span<uint64_t> out_bits, std::span<Flags> out_flags);

// One row's exact values in binary64 (as ElementaryEnclose: nearest, and lo <= exact <= hi).
absl::Status AxisEncloseRow(AxisOp op, const FormatSpec& in, std::span<const uint64_t> x,
                            const AxisParams& params, const OpEnv& env,
                            std::span<ExactEnclosure> out);

}  // namespace fpconform

#endif  // FPCONFORM_ORACLES_AXIS_OPS_H_
