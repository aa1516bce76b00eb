// The error measures of DESIGN.md ("Error measures"), defined once: ULP error against an exact
// value, integer ULP distance between two values of a format, relative error, and the
// bound-normalized error of dot products and sums. Every other part of fpconform (reports,
// audits, tolerance tables) measures through these functions.
//
// Definitions (F a float format of the table, p = Precision(F), emin = Emin(F), emax = Emax(F)):
//
//   ulp_F(x)   = 2^(max(floor(log2|x|), emin) - p + 1)            for x != 0,
//                except at an exact power of two |x| = 2^e, where the lower binade is used:
//                2^(max(e - 1, emin) - p + 1) (so |y - x| <= ulp/2 is still "correctly rounded"
//                for the y just below x);
//   ulp_F(0)   = 2^(emin - p + 1), the quantum of the subnormals (the smallest positive value of
//                formats with subnormals);
//   ULP error  = (y - x) / ulp_F(x), signed, exact (UlpErrorExact) or rounded to double;
//   relative   = |y - x| / |x|; x = 0: 0 if y = 0 (either sign), else +inf;
//   bound-normalized = |y - x| / (u * S), S = sum_i |a_i b_i| (or sum_i |x_i|) exactly,
//                u = 2^-p_acc the unit roundoff of the accumulation format; S = 0: 0 if y = x,
//                else +inf.
//
// Differences from the obvious expectation:
//   * Overflow is measured continuously: a computed y = +-Inf counts as +-2^(emax + 1) (the
//     value the next binade would start at), so y = Inf against a finite x gives a finite ULP
//     error (e.g. float32 y = Inf vs x = max finite: (2^128 - (2^128 - 2^104)) / 2^104 = 1).
//     This applies to every measure that takes y as bits.
//   * Exact values x that are +-Inf (Inf operands): the error is 0 when y is the same Inf,
//     otherwise +-inf (the sign of y - x; relative/bound-normalized: +inf).
//   * NaN y or NaN x (invalid sums included): NaN from the double versions, NaN in the exact one.
//   * The formats need no Inf and no -0: fnuz and float8_e4m3fn work; float8_e8m0fnu (no zero,
//     p = 1) works with the same formulas.
//   * y is decoded by this file's own decoder from the FormatSpec fields (no formats/ code path
//     but the table), so the measures stay independent of RoundPack.
//
// Integer ULP distance: UlpDistance(F, a, b) = the signed number of steps from a to b over the
// ordered values of F (Inf counts as the value after max finite; -0 and +0 are the same value,
// distance 0); std::nullopt when a or b is NaN. For integer formats it is b - a.
//
// Example:
//   mpfr_t x; mpfr_init2(x, 64); mpfr_set_d(x, 1.0, MPFR_RNDN);
//   UlpError(Float32(), 0x3F800001, x) == 2.0;     // 1 is a power of two: ulp = 2^-24.
//   UlpError(Float32(), 0x3F7FFFFF, x) == -1.0;
//   UlpDistance(Float8E4M3FN(), 0x80 /*-0*/, 0x01 /*2^-9*/) == 1;
//   RelativeError(Float32(), 0x3F800001, x) == 0x1p-23;
#ifndef FPCONFORM_ORACLES_ERROR_MEASURES_H_
#define FPCONFORM_ORACLES_ERROR_MEASURES_H_

#include <mpfr.h>

#include <cstdint>
#include <optional>
#include <span>

#include "formats/format_spec.h"
#include "oracles/exact_sum.h"

namespace fpconform {

// Exponent of ulp_F(x) as defined above. x finite (zero allowed).
long UlpExponent(const FormatSpec& f, mpfr_srcptr x);

// The value of bits `y` of float format f, with +-Inf placed at +-2^(emax + 1). Sets the
// precision of `out` to max(p, 2) and stores the value exactly (NaN for NaN encodings). Returns
// false for NaN.
bool ErrorMeasureValue(const FormatSpec& f, uint64_t y, mpfr_ptr out);

// (y - x) / ulp_F(x), exactly: sets the precision of `out` to what the value needs.
void UlpErrorExact(const FormatSpec& f, uint64_t y, mpfr_srcptr x, mpfr_ptr out);
// The same, rounded to nearest double (may underflow to 0 for an x far more precise than F).
double UlpError(const FormatSpec& f, uint64_t y, mpfr_srcptr x);
double UlpError(const FormatSpec& f, uint64_t y, const ExactAccumulator& x);

// Signed distance b - a in representable steps of f; nullopt when either is NaN.
std::optional<int64_t> UlpDistance(const FormatSpec& f, uint64_t a, uint64_t b);

// |y - x| / |x| rounded to double (x = 0: 0 if y is zero, else +inf).
double RelativeError(const FormatSpec& f, uint64_t y, mpfr_srcptr x);
double RelativeError(const FormatSpec& f, uint64_t y, const ExactAccumulator& x);

// |y - x| / (2^-Precision(accumulation) * abs_sum), rounded to double. abs_sum = sum |a_i b_i|
// (or sum |x_i|), exact and >= 0; abs_sum = 0: 0 if y equals x (both zero), else +inf. NaN when
// y, x or abs_sum is NaN, or abs_sum is Inf.
double BoundNormalizedError(const FormatSpec& f, uint64_t y, mpfr_srcptr x, mpfr_srcptr abs_sum,
                            const FormatSpec& accumulation);
double BoundNormalizedError(const FormatSpec& f, uint64_t y, const ExactAccumulator& x,
                            const ExactAccumulator& abs_sum, const FormatSpec& accumulation);

// |v| as bits of f: the sign bit cleared, NaNs unchanged (so the fnuz NaN 0x80 stays NaN).
uint64_t AbsBits(const FormatSpec& f, uint64_t v);
// sum_i |a_i b_i| and sum_i |x_i|, exactly (the S of the bound-normalized error).
ExactAccumulator ExactAbsDot(const FormatSpec& fa, std::span<const uint64_t> a,
                             const FormatSpec& fb, std::span<const uint64_t> b);
ExactAccumulator ExactAbsSum(const FormatSpec& f, std::span<const uint64_t> x);

}  // namespace fpconform

#endif  // FPCONFORM_ORACLES_ERROR_MEASURES_H_
