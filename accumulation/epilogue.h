// The epilogue's scale stage and output conversion: what turns a model's output y (the value
// EvaluateDot / EvaluateMatmul return, bits in model.OutputFormat(), with its bound b >= |y - x|
// on the exact value x) into the kernel's output, with the bound carried through. The audit
// (reports/audit_matmul.cc, audit_reduction.cc) and the tolerance sweep (reports/sweep.cc) both
// call it; the model file says which scales a platform takes and in which order it multiplies
// (MODEL_FORMAT.md, [epilogue] scale and scale_order).
//
// The stage, with s_a the scale of the element's row of A (or A's one scale), s_b that of its
// column of B (or B's), both float32 values, S = s_a s_b exactly (a double: 24 x 24 bits) and
// y32 = fl32(y) (RNE; y itself for every output format of <= 24 significand bits, as every
// catalog model with 8-bit inputs has: float32):
//   scale_order = "product"     v = fl32(S32 * y32),  S32 = fl32(S)   (cuBLASLt / the FP8 GEMM
//                                                                      recipes: one FMUL of the
//                                                                      combined scale)
//   scale_order = "sequential"  v = fl32(fl32(y32 * s_a) * s_b)
// every fl32 RNE. The exact value of the scaled computation is S x. The stage sits after the
// model's own output conversion (output.format): it multiplies what the model writes. Where
// c enters (epilogue.c) is the model's; the scaled value is S (chain + c) for both. Per-block
// scales (epilogue.scale = "block": one per K block of 32 or 128, MX / DeepSeek style) scale
// partial sums or products inside the chain: evaluate.h EvaluateBlockScaledDot, not this stage.
//
// Arithmetic: every product above is formed exactly in binary64 (two float32 values: <= 48
// significand bits, exponents within binary64's normal range) and rounded once by formats'
// DoubleToBits (Convert), so v is the correctly rounded float32 product; epilogue_test checks it
// against formats' Mul bit for bit.
//
// Bounds (doubles; every formula ends in a factor kEpilogueUp = 1 + 2^-50 that covers the
// rounding of its own < 8 double operations, as evaluate.h's nodes do). u = 2^-24, eta = 2^-149
// (>= the absolute error 2^-150 of a float32 product that underflows):
//  * ScaleAPosteriori (from the computed values; what the audit reports), "product":
//      v - S x = (v - S32 y32) + (S32 - S) y32 + S (y32 - y) + S (y - x)
//    so |v - S x| <= |v - S32 y32| + |S32 - S| |y32| + |S| (b + |y32 - y|), every term computed
//    (S32 y32 exactly; the differences of near values with one rounding, covered by 1 + 2^-52).
//    "sequential" (p1 = y32 s_a, v1 = fl32(p1), p2 = v1 s_b, v = fl32(p2), all exact in double):
//      v - S x = (v - p2) + s_b (v1 - p1) + S (y32 - y) + S (y - x).
//    When v or y is not finite the bound is b unchanged (callers check finiteness).
//  * ScaleAPriori (from |S x|, the scaled exact value; what the sweep reports), "product", with
//    S in float32's normal range so |S32 - S| <= u |S| and S32 <= |S| (1 + u):
//      v = S32 y32 (1 + d) + e, |d| <= u, |e| <= eta;
//      S32 y32 - S x = (y32 - x) S32 + x (S32 - S)
//      |v - S x| <= b' S32 + |x| u |S| + u (|x| + b') S32 + eta
//                <= b' S32 (1 + u) + |S x| (2u + u^2) + eta,   b' = b + |y32 - y|.
//    Outside the normal range the middle terms are kept as |x| (|S32 - S| + u S32), |x| = |Sx|/|S|.
//    "sequential" (v1 = y32 s_a (1 + d1) + e1, v = v1 s_b (1 + d2) + e2):
//      |v - S x| <= b' |S| (1 + 2u + u^2) + |S x| (2u + u^2) + eta (1 + |s_b| (1 + u)).
//  * ConvertOutput (the conversion into the kernel's output format `to` under `env`): with a the
//    value and c = fl_to(a) its conversion, |c - S x| <= |c - a| + bound; the half ulp of `to` at
//    |c| + bound is added on top, so that the bound also covers a kernel that rounds any value
//    within the old bound into `to` once itself (|fl_to(a') - a'| <= half an ulp under RNE):
//      bound' = bound + |c - a| (1 + 2^-52) + ulp_to(|c| + bound) / 2.
//    Not applied (the bound unchanged) when a or c is not finite.
//
// Example (a float32 model output y = 3, bound 2^-20; s_a = 0.5, s_b = 0.25; product order):
//   EpilogueValue v = ApplyScale(ScaleOrder::kProduct, Float32(), 0x40400000, 0x1p-20,
//                                EpilogueScales{0.5, 0.25});
//   v.bits == 0x3EC00000 (0.375);  v.bound == 0x1p-23 * kEpilogueUp (S = S32 exact, v exact).
#ifndef FPCONFORM_ACCUMULATION_EPILOGUE_H_
#define FPCONFORM_ACCUMULATION_EPILOGUE_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "accumulation/model.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"

namespace fpconform {

inline constexpr double kEpilogueUp = 1 + 0x1p-50;

// The two scale factors of one output element (float32 values; 1 and 1 when none is given).
struct EpilogueScales {
  double a = 1;  // s_a: the row's (or A's) scale.
  double b = 1;  // s_b: the column's (or B's) scale; 1 for a sum.
};

// A value on its way through the epilogue: bits in *format, bound >= |value - exact|.
struct EpilogueValue {
  uint64_t bits = 0;
  const FormatSpec* format = nullptr;
  double bound = 0;
};

// The scale stage on y (bits in `from`, bound y_bound): v in float32 with the a posteriori bound
// above.
EpilogueValue ApplyScale(ScaleOrder order, const FormatSpec& from, uint64_t y_bits,
                         double y_bound, const EpilogueScales& s);

// The a priori bound of the scale stage above, from y's bound and |S x| (the exact value of the
// scaled computation, rounded to a double; 2^-53 relative slack is covered). y_bits and `from`
// give |y32 - y| (0 for outputs of <= 24 bits).
double ScaleAPriori(ScaleOrder order, const FormatSpec& from, uint64_t y_bits, double y_bound,
                    const EpilogueScales& s, double scaled_exact_abs);

// The conversion of v into `to` under env, the bound widened as above (v unchanged when its
// format is `to`).
EpilogueValue ConvertOutput(const EpilogueValue& v, const FormatSpec& to, const OpEnv& env);

// epilogue.c = "after_scale" with scales and a c: v = fl32(S32 y32 + c32) in one rounding under
// env (formats' Fma; epilogue.rounding), S32 = fl32(s_a s_b), y32 = fl32(y), c32 = fl32(c) (c in
// c_format: exact for float32 and narrower). The exact value is S x + c (c unscaled). Bound, a
// posteriori: v - (S x + c) = (v - t) + (S32 - S) y32 + S (y32 - y) + S (y - x) + (c32 - c),
// t = S32 y32 + c32, and |v - t| < ulp(v) <= 2^-23 |v| (2^-149 below float32's normal range) in
// every rounding mode, so
//   |v - (S x + c)| <= 2^-23 |v| + 2^-149 + |S32 - S| |y32| + |S| (b + |y32 - y|) + |c32 - c|,
// times kEpilogueUp; b itself when v, y or c is not finite.
EpilogueValue ApplyScaleAddC(const FormatSpec& from, uint64_t y_bits, double y_bound,
                             const EpilogueScales& s, const FormatSpec& c_format, uint64_t c_bits,
                             const OpEnv& env);

// The whole epilogue after the model: model's output y (bits in model.OutputFormat(), bound
// y_bound) -> scaled when `scales` is non-null (model.epilogue.scale_order; a posteriori bound),
// or, for epilogue.c = "after_scale" with scales and c_bits (the element's c, in the final
// accumulator format; y then the chain's value without c), fl32(S32 y + c) by ApplyScaleAddC ->
// converted into `out` under out_env.
EpilogueValue ApplyEpilogue(const Model& model, uint64_t y_bits, double y_bound,
                            const EpilogueScales* scales, const FormatSpec& out,
                            const OpEnv& out_env, const uint64_t* c_bits = nullptr);

// epilogue.c = "after_scale" with scales (`scaled`: the epilogue's scale stage runs) and a c
// (`has_c`): the model to evaluate instead of `model`, its copy with epilogue.c = "chain" run from
// c = +0 (the chain alone); its output then goes to ApplyEpilogue(model, ..., c_bits), which adds
// c after the scales. nullopt otherwise: evaluate `model` itself, with its c.
std::optional<Model> ChainAloneModel(const Model& model, bool scaled, bool has_c);

// Whether `model` takes scales of this shape: InvalidArgument (naming the model and the key)
// when a scale is given to a model with epilogue.scale = "none" or "block" (whose scales go to
// EvaluateBlockScaledDot), or a vector of scales (a_count or b_count > 1) to one with "tensor". Counts of 0 mean no scale for that operand.
absl::Status CheckEpilogueScales(const Model& model, int64_t a_count, int64_t b_count);

}  // namespace fpconform

#endif  // FPCONFORM_ACCUMULATION_EPILOGUE_H_
