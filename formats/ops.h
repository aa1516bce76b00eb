// Operations on any float format of the table, bit for bit. Every operation unpacks its
// operands, computes the exact result (or an exact significand plus a sticky bit), and calls
// RoundPack (round_pack.h) exactly once. Values cross this API as bits in the format's
// container; results are {bits, flags}.
//
// Semantics beyond IEEE 754-2019 that fpconform fixes (and tests):
//  * Results round as if the exponent range were unbounded, then the range is applied: in
//    float8_e4m3fn (max 448) 464 rounds to 448 under RNE and anything above 464 overflows.
//    Stochastic rounding is the exception: it chooses between the neighbours of the exact
//    value in the format with its range (OpEnv::sr_bits), so above max finite its choice is
//    max finite or the overflow result.
//  * Overflow (§7.4): rne/rna deliver Inf; rtz and rto deliver max finite; rup/rdn deliver Inf
//    toward their own infinity and max finite the other way; stochastic rounding always delivers
//    Inf (a value at or above max + ulp always overflows; one in (max, max + ulp) overflows with
//    probability (x - max) / ulp, else gives max finite with x alone). Where that would be Inf
//    and the format has none, the result is NaN (invalid is not raised; overflow and inexact
//    are). Under sat, every overflow delivers +-max finite. Flags: o and x.
//    Round to odd can carry past max finite (float8_e4m3fn 450 truncates to 448 = 1.110b, the
//    odd fix-up makes 1.111b = 480): that is an overflow and delivers max finite, o and x.
//  * Division of a finite non-zero by zero raises z and gives Inf, or NaN where the format has no
//    Inf (+-max finite under sat; in a format with Inf, sat does not apply: Inf with z).
//  * An exact zero sum of operands of opposite signs (x + -x, or a cancelling fma) is +0 in every
//    rounding mode except rdn, where it is -0 (rto and sr<k> included); -0 + -0 = -0.
//  * daz and ftz apply to every operation, Convert included.
//  * Formats without -0 (fnuz) deliver +0 wherever IEEE delivers -0.
//  * float8_e8m0fnu (unsigned, no zero): results that are zero or negative (negative inputs and
//    -Inf to Convert included, even under sat) are NaN with v; positive results below 2^-127
//    deliver 2^-127 with x, and with u only when tiny after rounding (0.75 * 2^-127 rounds to
//    2^-127 with an unbounded exponent: x alone).
//  * NaN results follow OpEnv::nan (see op_env.h); sNaN operands (IEEE-encoded formats) raise v.
//
// Integer formats (int8, uint8, int32) take part only in Convert.
//
// Example:
//   OpEnv env;
//   Mul(Float8E4M3FN(), 0x7E /*448*/, 0x40 /*2*/, env)      == {0x7F /*NaN*/, kOverflow|kInexact}
//   env.saturate = true;
//   Mul(Float8E4M3FN(), 0x7E, 0x40, env)                     == {0x7E /*448*/, kOverflow|kInexact}
#ifndef FPCONFORM_FORMATS_OPS_H_
#define FPCONFORM_FORMATS_OPS_H_

#include <cstdint>
#include <string_view>

#include "formats/format_spec.h"
#include "formats/op_env.h"

namespace fpconform {

OpResult Add(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env);
OpResult Sub(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env);
OpResult Mul(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env);
OpResult Div(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env);
// a*b + c with one rounding. 0*Inf + c raises v; when c is a quiet NaN IEEE 754-2019 §7.2(c)
// leaves it to the implementation: fpconform raises v as SoftFloat does, except under
// NanProfile::kX86, where it does not, as x86 VFMADD does not.
OpResult Fma(const FormatSpec& f, uint64_t a, uint64_t b, uint64_t c, const OpEnv& env);
OpResult Sqrt(const FormatSpec& f, uint64_t a, const OpEnv& env);

// Conversion between any two formats of the table, float or integer.
//  float -> float: one rounding. +-Inf converts to +-Inf where the destination has Inf; under
//    sat to +-max finite (no flag, OCP OFP8 r1.0 Table 3); otherwise, to a format without Inf,
//    to NaN with v. NaN converts to NaN (v if signaling), per env.nan.
//  float -> integer: rounds to an integer under env.rounding (stochastic included). Out of
//    range or NaN raises v (not x) and gives: under sat, the clamped value (NaN -> 0, as CUDA's
//    cvt.rni.sat and __float2int_rn do); otherwise Intel's "integer indefinite" (SDM Vol.1
//    §4.8.3.7 / AVX-512 VCVTTSS2USI): the most negative value for signed formats (0x80,
//    0x80000000), all ones for unsigned ones (0xFF). In-range inexact results raise x.
//  integer -> float: exact integer, rounded once.
//  integer -> integer: out-of-range clamps under sat, wraps (two's complement) otherwise; v on
//    out-of-range.
OpResult Convert(const FormatSpec& from, const FormatSpec& to, uint64_t a, const OpEnv& env);

// The one conversion between a format's bits and binary64 for the rest of the project (reports,
// composite models, oracles' tests, the Python bindings), both through Convert:
// the value of `bits` in f as a double (exact for every float format of the table, whose values
// are doubles, and for integers of magnitude up to 2^53; NaN for NaN encodings) ...
double ToDouble(const FormatSpec& f, uint64_t bits);
// ... and v rounded into f under env (RNE by default).
uint64_t DoubleToBits(const FormatSpec& f, double v, const OpEnv& env = {});

// IEEE 754-2019 §5.11 comparisons. Quiet: only sNaN operands raise v.
enum class Ordering : uint8_t { kLess, kEqual, kGreater, kUnordered };
struct CompareResult {
  Ordering ordering;
  Flags flags;
};
CompareResult Compare(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env);

// IEEE 754-2019 §5.7.2 class.
enum class FloatClass : uint8_t {
  kSignalingNan, kQuietNan, kNegativeInfinity, kNegativeNormal, kNegativeSubnormal,
  kNegativeZero, kPositiveZero, kPositiveSubnormal, kPositiveNormal, kPositiveInfinity,
};
FloatClass Classify(const FormatSpec& f, uint64_t a);
std::string_view FloatClassName(FloatClass c);
bool IsNanBits(const FormatSpec& f, uint64_t a);

// IEEE 754-2019 §9.6: minimum/maximum propagate NaN (and order -0 < +0); minimumNumber/
// maximumNumber return the number when one operand is NaN. sNaN raises v in all four.
OpResult Minimum(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env);
OpResult Maximum(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env);
OpResult MinimumNumber(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env);
OpResult MaximumNumber(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env);

}  // namespace fpconform

#endif  // FPCONFORM_FORMATS_OPS_H_
