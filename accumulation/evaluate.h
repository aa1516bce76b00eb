// Dot products, sums and matmuls under an accumulation model (model.h, MODEL_FORMAT.md), bit for
// bit, with the worst-case error bound computed on the model's own summation tree.
//
// Arithmetic: every rounding is one call of formats' RoundPack on an exact intermediate value:
//  * IEEE steps and combine adds: the exact sum of the two operands (an exact product is one
//    operand under policy "exact": that is an FMA) is formed in a 128-bit significand with the
//    larger operand's leading bit at bit 125; the smaller one is shifted right and the bits
//    shifted out become RoundPack's sticky (for a subtraction, (big - small_kept - 1) with sticky
//    set, which is exact). Products of table formats have <= 106 bits, so nothing is lost above
//    the sticky bit.
//  * Fused groups: every term (the G products and the running accumulator) is truncated (or
//    rounded down) to a multiple of 2^(emax - F) and summed exactly as a signed 128-bit integer
//    (|term| < 2^(F+2) quanta, F <= 100, G <= 256); the integer is rounded once into the
//    accumulator format (with its reduced fraction bits) by RoundPack.
//  * The output conversion is formats' Convert.
//  * adder.kind = "integer" (MODEL_FORMAT.md): integer inputs (int8, uint8), every product and
//    the sum with c (an int32) exact in int64; a sum outside int32 is an OutOfRange error (wrap-
//    around and saturation are not modelled); then the output conversion, Convert once.
// Special values: a NaN operand or an invalid step (Inf - Inf, Inf * 0) gives the accumulator
// format's default NaN (NanResultBits with no source: payloads are not propagated); an Inf
// propagates with its sign; an overflowing step gives what RoundPack gives (Inf under rne).
// An exact zero sum is -0 only when both operands (all terms of a group) are -0, or under rdn
// for a cancellation (IEEE 754-2019 §6.3). Status flags are not reported.
//
// The error bound (EvalResult::bound, a double rounded up at every step): for every node of the
// tree the evaluator keeps M = sum of |exact leaf values| below it and E >= |computed - exact|.
//  * A leaf (a product a_i*b_i, or x_i for a sum, or c): M = |exact value from the original
//    inputs|, E = |leaf value used - exact value| (non-zero only when inputs are converted, e.g.
//    float32 -> tfloat32 rtz, or products rounded; computed exactly, rounded up).
//  * A rounding node with unit roundoff u (2^-(f+1) for rne/rna, 2^-f for the other modes, f
//    the fraction bits it rounds to) and an absolute underflow term eta = 2^(smallest subnormal
//    exponent) of that format, applied to children x, y:
//      s_hat = x_hat + y_hat,  |fl(s_hat) - s_hat| <= u |s_hat| + eta,  |s_hat| <= M + E_x + E_y
//      => E = (1 + u)(E_x + E_y) + u M + eta.
//    With eta = 0 and exact leaves this unrolls to sum_i |p_i| ((1 + u)^d_i - 1) where d_i is the
//    depth of leaf i (number of rounding nodes above it), and (1 + u)^d - 1 <= gamma_d =
//    d u / (1 - d u) (Higham, Accuracy and Stability, 2nd ed., Lemma 3.1 and §4.2).
//  * A fused group with terms t_j (the accumulator included) and alignment quantum
//    q = 2^(emax - F): each truncation moves a term by less than q, so with T = (number of non-zero
//    terms) * q,  |S_trunc - sum t_j| <= sum E_j + T  and the group's one rounding gives
//      E = (1 + u)(sum E_j + T) + u M + eta.
//    emax comes from the computed terms, so T is evaluated on the data the group saw.
//  * The output conversion is a one-child rounding node: E = (1 + u) E_x + u M + eta (skipped
//    when the output format is the final accumulator's).
//  * adder.ftz: the adder's rounder uses eta = 2^Emin (a flushed tiny result moves by less than
//    the smallest normal). adder.daz: a subnormal accumulator operand read as zero adds its
//    magnitude to that operand's E.
//  * Kahan (adder.kind "kahan"): an a posteriori bound on the computed values. With d1, d3, d4
//    the rounding errors of y = p - comp, t - acc and comp' = (t - acc) - y (d2, that of t,
//    cancels), acc_n - (c + sum p_k) = comp_n + sum_k (d1 - d3 - d4) exactly, so
//      E = |comp_n| + sum_k (u (|y| + |t - acc| + |comp'|) + 3 eta + E_leaf_k)
//    (each |d| <= u |rounded| + eta for every rounding mode, u as above). Classical form:
//    (2u + O(n u^2)) sum |p_k| (Higham §4.3); this one is usually far smaller.
//  * simd and cascade chains are trees of the node kinds above (adder steps and combines).
//  * adder.kind = "integer": 0 for the exact sum; the conversion of the integer s into a float
//    output adds 2^-f |y| (f its fraction bits; evaluate.cc has the proof), or |y - s| beyond the
//    output's largest finite value.
// Overflow is not covered (a result that is Inf while the exact value is finite breaks the bound;
// callers check IsFinite). Double-precision arithmetic on M and E is made safe by multiplying by
// (1 + 2^-50) at each node (each node's formula takes < 8 double operations).
//
// Example:
//   Model m = *LoadModelFile("accumulation/models/cpu-f32-seq.toml");
//   std::vector<uint64_t> a = {0x3F800000, 0x33800000}, b = {0x3F800000, 0x3F800000};
//   EvalResult r = *EvaluateDot(m, a, b, /*c_bits=*/0);
//   r.bits == 0x3F800000;   // (0 + 1) + 2^-24 rounds to 1 (tie to even).
#ifndef FPCONFORM_ACCUMULATION_EVALUATE_H_
#define FPCONFORM_ACCUMULATION_EVALUATE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "accumulation/model.h"

namespace fpconform {

struct EvalOptions {
  uint64_t seed = 0;         // split_k order = "random" and sr<k> output rounding.
  bool want_bound = true;    // Compute EvalResult::bound (costs about 2x).
  int threads = 1;           // EvaluateMatmul only: worker threads (results do not depend on it).
};

struct EvalResult {
  uint64_t bits = 0;  // In model.output.format's container.
  double bound = 0;   // |result - exact| <= bound (see above); 0 when !want_bound.
};

// d = c + sum_i a_i * b_i. a in model.inputs.a, b in model.inputs.b (container bits, before the
// model's input conversion), c in the final accumulator's format (FinalAccumulatorFormat(): the
// accumulator, or chain.format for promote); 0 for +0. Errors: a.size() != b.size().
absl::StatusOr<EvalResult> EvaluateDot(const Model& model, std::span<const uint64_t> a,
                                       std::span<const uint64_t> b, uint64_t c_bits,
                                       const EvalOptions& options = {});

// c + sum_i x_i: the chain's leaves are the x_i (model.inputs.a, converted if the model says so)
// instead of products.
absl::StatusOr<EvalResult> EvaluateSum(const Model& model, std::span<const uint64_t> x,
                                       uint64_t c_bits, const EvalOptions& options = {});

// Per-block scales (epilogue.scale = "block", MODEL_FORMAT.md): block j covers products
// [j B, min(K, (j + 1) B)), B = epilogue.scale_block; a[j] is the scale of the dot's row of A in
// block j, b[j] that of its column of B (float32 values as doubles), ceil(K / B) of each.
struct BlockScales {
  std::span<const double> a, b;
};

// d = c + sum_j S_j sum_{i in block j} a_i b_i under a model with epilogue.scale = "block", on the
// generic engine (the fast paths take no scales). How the scales enter (epilogue.block_apply):
//  * "fma" / "mul_add" (chain.kind = "promote", chain.every = B): the chain's inner partial sum
//    p_j of block j enters the float32 accumulator as fl(acc + S32_j p_j) (one rounding; DeepGEMM's
//    `final_accum += scale * accum`, contracted to FFMA by nvcc's default -fmad=true) or
//    fl(acc + fl(S32_j p_j)), with S32_j = fl32(a[j] b[j]) (RNE) and every rounding chain.rounding;
//    c starts the accumulator, unscaled. The exact value is c + sum_j a[j] b[j] x_j.
//  * "products" (powers of two, MX E8M0): every product of block j is multiplied by a[j] b[j]
//    exactly before the chain (its exponent moves; in a fused group the nominal exponent too), so
//    alignment and rounding see the scaled products.
// The bound covers both (evaluate.cc ScaledPromote has the derivation). Errors (InvalidArgument):
// a model without block scales or with an integer adder, the sizes of a and b, the counts of
// scales, a scale that is not a finite float32 value (not a positive power of two for
// "products"). With every scale 1 the result is EvaluateDot's (for "mul_add", where the
// accumulator's values are chain.format values, as float32 and narrower accumulators are).
absl::StatusOr<EvalResult> EvaluateBlockScaledDot(const Model& model, std::span<const uint64_t> a,
                                                  std::span<const uint64_t> b,
                                                  const BlockScales& scales, uint64_t c_bits,
                                                  const EvalOptions& options = {});

enum class Layout : uint8_t { kRowMajor, kColumnMajor };

// D (m x n, row-major) = C + A B with per-block scales: D[i][j] is EvaluateBlockScaledDot of row
// i of A and column j of B with scales scale_a[i kb .. i kb + kb) and scale_b_t[j kb .. j kb +
// kb), kb = ceil(k / epilogue.scale_block) (scale_a is m x kb row-major, scale_b_t is B's
// scales transposed, n x kb), c = C[i][j] (C empty: +0), on options.threads threads. Same bits
// as EvaluateBlockScaledDot; for block_apply "fma" / "mul_add" with a chain the fast paths take
// (its inner chain, the fused groups from +0), each block's partial sums come from the fast
// matmul and the bound's M of a block is sum |a_k b_k| over it summed separately, so bounds
// agree with the per-element ones to rounding (block_scale_test), not bit for bit. Errors: as
// EvaluateMatmul and EvaluateBlockScaledDot.
absl::Status EvaluateBlockScaledMatmul(const Model& model, int m, int n, int k,
                                       std::span<const uint64_t> a, Layout a_layout,
                                       std::span<const uint64_t> b, Layout b_layout,
                                       std::span<const double> scale_a,
                                       std::span<const double> scale_b_t,
                                       std::span<const uint64_t> c, std::span<uint64_t> d,
                                       std::span<double> bounds = {},
                                       const EvalOptions& options = {});

// D (m x n, row-major) = C + A (m x k) * B (k x n); each D[i][j] is EvaluateDot of row i of A
// and column j of B with c = C[i][j] (C empty: all +0). A and B in their layouts (leading
// dimension = the matrix's own width or height). bounds (optional, m*n) receives each bound.
absl::Status EvaluateMatmul(const Model& model, int m, int n, int k,
                            std::span<const uint64_t> a, Layout a_layout,
                            std::span<const uint64_t> b, Layout b_layout,
                            std::span<const uint64_t> c, std::span<uint64_t> d,
                            std::span<double> bounds = {}, const EvalOptions& options = {});

// The same three operations on the generic engine only (never the fast paths of fast_eval.h):
// the reference the fast paths are tested against, and their fallback for special inputs.
absl::StatusOr<EvalResult> GenericEvaluateDot(const Model& model, std::span<const uint64_t> a,
                                              std::span<const uint64_t> b, uint64_t c_bits,
                                              const EvalOptions& options = {});
absl::StatusOr<EvalResult> GenericEvaluateSum(const Model& model, std::span<const uint64_t> x,
                                              uint64_t c_bits, const EvalOptions& options = {});
absl::Status GenericEvaluateMatmul(const Model& model, int m, int n, int k,
                                   std::span<const uint64_t> a, Layout a_layout,
                                   std::span<const uint64_t> b, Layout b_layout,
                                   std::span<const uint64_t> c, std::span<uint64_t> d,
                                   std::span<double> bounds = {},
                                   const EvalOptions& options = {});

}  // namespace fpconform

#endif  // FPCONFORM_ACCUMULATION_EVALUATE_H_
