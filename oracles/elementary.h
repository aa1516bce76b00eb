// Exact oracles for elementwise functions of one operand (issue 28 §1): exp, exp2, log, tanh,
// sigmoid, silu, gelu, gelu_tanh, rsqrt, reciprocal. For an input in a float format (bits) the
// oracle gives the correctly rounded value of the *mathematical* function in an output format,
// under every rounding mode but stochastic, with the IEEE flags, and an enclosure of the exact
// value in binary64 for error measures (|out - exact| rounded up).
//
// Definitions (x the exact value of the input bits):
//   exp(x) = e^x            exp2(x) = 2^x            log(x) = ln x
//   tanh(x)                 sigmoid(x) = 1 / (1 + e^-x)
//   silu(x) = x * sigmoid(x)
//   gelu(x) = 0.5 x (1 + erf(x / sqrt 2))
//   gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), 0.044715 the exact decimal
//     (= x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)), the form evaluated here)
//   rsqrt(x) = 1 / sqrt(x)  reciprocal(x) = 1 / x
//
// Special values (IEEE 754-2019 §9.2 where it defines the function; limits elsewhere):
//   NaN in -> NaN out (propagated per env.nan as mpfr_oracle.h's ops do; v for a signaling NaN).
//   exp(+-0) = exp2(+-0) = 1; exp(-Inf) = exp2(-Inf) = +0; exp(+Inf) = +Inf.
//   log(+-0) = -Inf with z; log(x < 0) = NaN with v (also log(-Inf)); log(1) = +0;
//   log(+Inf) = +Inf.
//   tanh(+-0) = +-0, tanh(+-Inf) = +-1.
//   sigmoid(+-0) = 0.5 exactly; sigmoid(+Inf) = 1, sigmoid(-Inf) = +0.
//   silu, gelu, gelu_tanh: (+-0) = +-0; (+Inf) = +Inf; (-Inf) = -0, the limit. (A kernel that
//     computes x * sigmoid(x) in floating point gets -Inf * 0 = NaN there: that is the kernel's
//     choice, not the function's value.)
//   rsqrt(+0) = +Inf and rsqrt(-0) = -Inf, both with z (§9.2.1 rSqrt); rsqrt(x < 0) = NaN, v;
//     rsqrt(+Inf) = +0.
//   reciprocal(+-0) = +-Inf with z; reciprocal(+-Inf) = +-0.
//   An Inf result in a format without Inf (float8_e4m3fn, fnuz) is NaN (max finite under
//   env.saturate), as mpfr_oracle.h's division by zero; finite results that overflow follow
//   MpfrRoundToFormat (Inf, or NaN without Inf, or max finite per mode and sat, o x).
//   env.denormals_are_zero reads subnormal inputs as zeros; ftz and tininess act on the result
//   (MpfrRoundToFormat). Stochastic rounding is rounded with env.sr_random as given.
//
// Method (ElementaryRound, the reference path):
//   * exp, exp2, log, tanh, rsqrt (mpfr_rec_sqrt), reciprocal (mpfr_ui_div) are correctly
//     rounded MPFR functions: evaluated toward zero at P = 123 bits (>= p + 70 for every output of
//     at most 53 bits, what MpfrRoundToFormat needs), the ternary value is the sticky bit, and
//     MpfrRoundToFormat (oracles/mpfr_oracle.h, independent of formats/round_pack) rounds to the
//     output. Arguments so large that the result leaves MPFR's exponent range (|x| >= 2^20 for
//     exp and exp2) are replaced by a value that rounds the same in every format of the table
//     (2^+-4000 with sticky: beyond every overflow threshold / below half the smallest
//     subnormal of binary64).
//   * sigmoid, silu, gelu, gelu_tanh have no correctly rounded MPFR function. They are evaluated
//     by interval arithmetic in MPFR at working precision w (every operation rounded outward:
//     MPFR_RNDD for the lower end, MPFR_RNDU for the upper; monotone functions exp, erfc,
//     sqrt, pi rounded both ways), which gives [lo, hi] containing the exact value. Ziv's
//     strategy: if lo and hi truncate to the same P-bit number T and neither is a P-bit number,
//     every value of [lo, hi] truncates to T and is not a P-bit number: T with sticky is the
//     exact value's truncation; else w doubles (w = 192, 384, ..., up to 2^20: reached only if
//     the function had a P-bit value there, which aborts with a message).
//     Exact values on the P-bit grid would never terminate; they are returned before the loop:
//     sigmoid(0) = 1/2, silu/gelu/gelu_tanh(+-0) = +-0 (no other input gives a P-bit value: by
//     Lindemann-Weierstrass e^r is transcendental for rational r != 0, so sigmoid and silu are
//     irrational; for gelu and gelu_tanh none is known, and the loop's bound would report one).
//     Near-representable values: for x > 0, f(x) = X - c with X in {1, x} and a small c > 0
//     (c = sigmoid(-x), x sigmoid(-x), x erfc(x/sqrt2)/2, x sigmoid(-v)) is evaluated as X - c
//     with c's interval computed alone (relative precision), and when c < 2^(E(X) - P - 2) the
//     truncation is the P-bit predecessor of X without computing X - c. For x <= -1024 (and
//     x >= 1024 when c cannot be formed in MPFR's range) the value is below 2^-1400 in
//     magnitude (resp. within 2^-1400 x of X), replaced as above.
//
// Enclosure (ElementaryEnclose): the same truncation rounded into binary64 three ways: rne
// (`nearest`), rdn (`lo`) and rup (`hi`), so lo <= exact <= hi, lo == hi iff the exact value is
// a binary64 number, else hi = nextafter(lo, +inf); beyond binary64's range lo = DBL_MAX and
// hi = +Inf (or the mirror), below it lo = 0 and hi = the smallest subnormal. NaN results give
// NaN in all three; Inf results give that Inf.
//
// Fast batch path (ElementaryRoundBatch): each input is evaluated in binary64 with a rigorous
// running error bound (certified_double.h: every operation carries |computed - exact| <= e
// under the standard model fl(a op b) = (a op b)(1 + d), |d| <= u = 2^-53, round to nearest, no
// contraction: -ffp-contract=off), from which an open interval (lo, hi) around the exact value
// is formed; if no point of the output's (p+1)-bit grid (values and midpoints) lies in it, every
// mode but stochastic rounds every point of it the same, and the result is read off
// (certified::Decide: bits with x; u x in the subnormal range or below half the smallest
// subnormal; o x at or above 2^(Emax+1)). Otherwise (and for NaN/Inf/zero inputs, log/rsqrt of
// negatives, exact results, sr<k>, outputs without subnormals, zero or sign, formats wider than
// binary64) the element is computed by ElementaryRound (counted: fallback, or special).
// No libm function is used for values (nearbyint, frexp, ldexp only: exact):
//   * exp: own argument reduction (k = round(64 x / ln 2), r = x - k ln2/64 with ln2/64 as a
//     36-bit head whose product with |k| < 2^17 is exact and a tail; 2^(j/64) from a table
//     correctly rounded by MPFR) and the Taylor polynomial of degree 7, remainder
//     |r|^8/8! e^|r| (|r| <= 0.006) added to the bound; exp2 through it with x = k/64 + d;
//   * log: log m = 2 atanh((m-1)/(m+1)), m in [sqrt(1/2), sqrt 2), |t| <= 0.1716, 13 odd terms,
//     remainder 2 |t|^27 / (27 (1 - t^2));
//   * tanh: |x| <= 0.5 sinh/cosh by Taylor series (remainders 2 x^20/21!, 2 x^20/20!), else
//     (1 - e^-2|x|)/(1 + e^-2|x|);
//   * sigmoid, silu, gelu_tanh: X / (1 + e^-a) (X = 1 or x, a = x or gelu_tanh's v); for x > 0
//     as X - c with c = X / (1 + e^a) evaluated alone (relative precision);
//   * gelu: |x| <= 3 the alternating Taylor series of erf (first omitted term bounds the
//     remainder); |x| > 3 erfc(|x|/sqrt 2) = e^(-x^2/2) K / sqrt(pi) with K Laplace's continued
//     fraction, whose consecutive convergents bracket it (Seidel-Stern); x > 0 as x - c again.
// Every constant (ln2/64 head and tail, ln 2, 2/sqrt pi, 1/sqrt 2, 2 sqrt(2/pi), 0.044715) is
// the double nearest with |error| <= ulp/2 in the bound.
// Values next to a double X are decided as X + B with B's bounds and sign ("anchored": the
// interval is clamped at X on the side where B's sign puts the value): small |x| (exp, exp2,
// sigmoid: |x| < 2^-30, X = 1 or 1/2; silu, gelu, gelu_tanh: |x| < 2^-20, X = x/2, B = x^2/4
// or x^2/sqrt(2 pi) to a relative 2^-30; tanh: |x| < 2^-10, X = x, B = -(x^3/3)(1 - 0.41 x^2
// .. 1); elementary.cc derives each bound), and the X - c forms (B = -c). Tails decided without
// evaluation: value within X 2^-54 below X gives (pred(X), X) (tanh |x| >= 20; sigmoid, silu,
// gelu_tanh, gelu for x >= 745 or when a > 690); values known below 2^-960 in magnitude (exp
// x <= -700, exp2 x <= -961, sigmoid and silu x <= -700 or a < -690, gelu x <= -38 or
// x^2/2 > 690, gelu_tanh x <= -30 or v < -690) are tiny; exp x >= 710 and exp2 x >= 1024
// overflow. elementary_test.cc checks the fast bits and flags against ElementaryRound on every
// bfloat16 and float16 input and on seeded float32 samples in every mode, and that the
// enclosures of certified_double.h contain MPFR's values.
//
// Speed (elementary_benchmark, 2 threads on 2 shared cores at load 6-7, so wall times are about
// 3x the per-thread CPU time given second): all 2^16 bfloat16 inputs 3-8 ms wall per function
// (0.7-1.3 ms CPU); 2^24 float32 N(0, 9) inputs 0.8-2.2 s wall (0.27-0.75 s CPU) for every
// function but gelu, 5.3 s wall (1.77 s CPU: erf's 40-term series and erfc's continued
// fraction); 2^24 random float32 bit patterns 0.8-1.8 s wall (0.28-0.61 s CPU). Fallbacks to
// MPFR: 0-9 per 2^24 N(0, 9) inputs (gelu 81), 0-7.6k per 2^24 random patterns (exact
// results, outputs near the top of the subnormal range). ElementaryRound alone: ~1-5 us per
// call for the MPFR functions, 10-300 us for gelu (mpfr_erfc).
//
// Thread safety: MPFR scratch is thread-local; the batch call splits the inputs over `threads`
// std::threads, results independent of the split.
//
// Example:
//   OpEnv env;                                          // rne
//   ElementaryRound(ElementaryFn::kExp, BFloat16(), 0x3F80 /*1*/, BFloat16(), env)
//       == OpResult{0x402E /*2.71875*/, kInexact};
//   ElementaryRound(ElementaryFn::kLog, Float32(), 0x80000000 /*-0*/, Float32(), env)
//       == OpResult{0xFF800000 /*-Inf*/, kDivideByZero};
//   ParseElementaryFn("gelu_tanh").value() == ElementaryFn::kGeluTanh;
#ifndef FPCONFORM_ORACLES_ELEMENTARY_H_
#define FPCONFORM_ORACLES_ELEMENTARY_H_

#include <cstdint>
#include <span>
#include <string_view>

#include <mpfr.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"

namespace fpconform {

enum class ElementaryFn : uint8_t {
  kExp,
  kExp2,
  kLog,
  kTanh,
  kSigmoid,
  kSilu,
  kGelu,
  kGeluTanh,
  kRsqrt,
  kReciprocal,
};

// All functions, in the order above.
std::span<const ElementaryFn> AllElementaryFns();
// "exp" "exp2" "log" "tanh" "sigmoid" "silu" "gelu" "gelu_tanh" "rsqrt" "reciprocal".
std::string_view ElementaryFnName(ElementaryFn fn);
// The inverse of ElementaryFnName; InvalidArgument naming the valid names otherwise.
absl::StatusOr<ElementaryFn> ParseElementaryFn(std::string_view name);

// The correctly rounded fn(x), x = the value of `bits` in float format `in` (read with
// env.denormals_are_zero), into float format `out` (precision <= 53) under env. Bits and flags
// as mpfr_oracle.h's operations (o u x per MpfrRoundToFormat, z and v as listed above).
OpResult ElementaryRound(ElementaryFn fn, const FormatSpec& in, uint64_t bits,
                         const FormatSpec& out, const OpEnv& env);

// The exact value in binary64 (see the header comment): lo <= exact <= hi, nearest = the exact
// value rounded to nearest even. `exact` is true iff the value is a binary64 number (lo == hi).
struct ExactEnclosure {
  double nearest = 0;
  double lo = 0;
  double hi = 0;
  bool exact = false;
};
// env: only denormals_are_zero (the input reading) and nan (the NaN result) are read.
ExactEnclosure ElementaryEnclose(ElementaryFn fn, const FormatSpec& in, uint64_t bits,
                                 const OpEnv& env);

// The exact value's truncation toward zero to mpfr_get_prec(t) bits, 64 <= prec <= 128, for a
// finite non-zero result: sets t, returns the sticky flag (true: the exact value is not t), in
// *kind the kind of the result. For kind != kFinite t is unchanged. This is the value
// ElementaryRound rounds (with prec 123); the axis oracles and the audit use it directly.
enum class ExactKind : uint8_t { kFinite, kZero, kInf, kNaN };
struct ExactTruncation {
  ExactKind kind = ExactKind::kFinite;
  bool negative = false;  // Sign of the result (zero and Inf included).
  bool sticky = false;
  Flags flags = 0;        // v for invalid, z for exact infinities of finite inputs.
};
ExactTruncation ElementaryTruncate(ElementaryFn fn, const FormatSpec& in, uint64_t bits,
                                   bool daz, mpfr_ptr t);

// The certified binary64 path's enclosure of fn(x) (the header comment's "Fast batch path"): an
// open interval, lo < exact < hi, for a finite non-zero input where that path evaluates fn (its
// tails included, but not beyond binary64's range); false elsewhere (use ElementaryEnclose). The
// interval is a few binary64 ulps wide, not the tightest: for error measures (the audit), not
// for rounding.
bool ElementaryEncloseFast(ElementaryFn fn, const FormatSpec& in, uint64_t bits, double* lo,
                           double* hi);

// Batch: out_bits[i] / out_flags[i] = ElementaryRound(fn, in, in_bits[i], out, env), computed by
// the certified binary64 path where it decides and by ElementaryRound elsewhere (header
// comment). out_flags may be empty (bits only). `threads` >= 1 split the inputs.
struct ElementaryStats {
  int64_t fast = 0;      // Decided by the binary64 enclosure (incl. tails).
  int64_t special = 0;   // NaN, Inf, zero inputs, daz subnormals, unsupported env or formats.
  int64_t fallback = 0;  // Enclosure undecided: computed by ElementaryRound.
  ElementaryStats& operator+=(const ElementaryStats& o) {
    fast += o.fast;
    special += o.special;
    fallback += o.fallback;
    return *this;
  }
};
// InvalidArgument (nothing written) for formats ElementarySupports refuses or spans of the
// wrong size.
absl::Status ElementaryRoundBatch(ElementaryFn fn, const FormatSpec& in,
                                  std::span<const uint64_t> in_bits, const FormatSpec& out,
                                  const OpEnv& env, std::span<uint64_t> out_bits,
                                  std::span<Flags> out_flags, ElementaryStats* stats,
                                  int threads = 1);

// OK when `in` and `out` are float formats and `out` has at most 53 bits of precision (the
// precondition of ElementaryRound, ElementaryEnclose and ElementaryTruncate, which abort
// otherwise: check user-chosen formats with this first).
absl::Status ElementarySupports(const FormatSpec& in, const FormatSpec& out);

// Whether the batch's binary64 path applies to (in, out, env) at all (else every element is
// computed by ElementaryRound and counted as special).
bool ElementaryFastSupported(const FormatSpec& in, const FormatSpec& out, const OpEnv& env);

}  // namespace fpconform

#endif  // FPCONFORM_ORACLES_ELEMENTARY_H_
