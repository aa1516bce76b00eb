// Formulas of composite kernels as data: how a library computes an elementwise function of x,
// step by step, in a compute format (composite/MODEL_FORMAT.md). A formula is an arithmetic
// expression over x, decimal constants, + - * / and unary minus, fma(a, b, c), the elementary
// functions exp exp2 log tanh erf sqrt rsqrt, and casts bfloat16(e) float16(e) float32(e) (round
// to that format, RNE, and back), e.g. the erf form of GELU as PyTorch's CUDA kernel writes it:
//
//   x * 0.5 * (1 + erf(x * 0.70710678118654752440))
//
// Semantics (C's, with every value in the compute format F): x is the input converted to F
// (exactly: F is at least as wide as the input format); a constant is its decimal value rounded
// to F (RNE), as a C float literal; + - * / fma sqrt are IEEE 754 operations in F under RNE;
// operators of one precedence group left to right; an elementary function returns a value of F
// within the model's accuracy of the exact function of its (F-valued) argument.
//
// Two evaluations:
//   * FormulaValue: one implementation, every step correctly rounded (the elementary functions
//     too, by MPFR: correctly rounded at 123 bits toward zero, the ternary value as sticky, then
//     MpfrRoundToFormat, oracles/mpfr_oracle.h). Bit-exact for a library whose elementary
//     functions are correctly rounded; a representative point otherwise.
//   * FormulaEnclosure: an interval [lo, hi] that contains the result of *every* implementation of
//     the formula whose elementary functions meet their accuracy (and whose multiplications may
//     be contracted with a following addition into an fma, when `contract`). Proof, by induction
//     over the steps (each node's interval contains every value that node can take):
//       - x: the point x.
//       - a constant: the point RNE_F(c).
//       - a o b (o in + - * /), fma(a, b, c): the exact result lies between the extreme values
//         of o over the operands' intervals' end points (o is monotone in each operand on each
//         side of 0; a divisor interval holding 0 gives [-Inf, Inf]); those extremes are computed
//         in binary64 and moved one binary64 ulp outward (nextafter), which covers binary64's
//         rounding; RNE_F is monotone, so RNE_F(result) lies in [RNE_F(min), RNE_F(max)].
//       - contraction: a product that feeds + or - may enter it unrounded; its interval is then
//         the hull of the exact product's range and its rounding.
//       - f(a), f monotone on the interval (exp exp2 tanh erf increasing; log, sqrt increasing
//         where defined, rsqrt decreasing on (0, Inf); an interval reaching outside the domain
//         gives [-Inf, Inf] and NaN): f of the end points rounded outward by MPFR (MPFR_RNDD,
//         MPFR_RNDU at 53 bits) contains f(a). Correctly rounded: [RNE_F(f_lo), RNE_F(f_hi)].
//         Within k ulps plus a: a result y has |y - f(a)| <= k ulp_F(f(a)) + a <= k U + a, U =
//         ulp_F at max(|f_lo|, |f_hi|) (ulp is non-decreasing in |v|), so y lies in
//         [f_lo - kU - a, f_hi + kU + a] (binary64, moved outward) and, being a value of F, in
//         [RU_F(lo), RD_F(hi)], or is +-Inf where that interval passes F's largest finite value
//         (the function overflows).
//       - a cast to G (narrower than F): [RNE_G(lo), RNE_G(hi)] (monotone).
//     The bound an audit uses is then max(hi - exact_lo, exact_hi - lo) (composite/elementwise).
//     An interval end point that is NaN makes the enclosure NaN (no bound).
//
// Rows (softmax, norms: composite/axis_model.h): a row formula computes every entry of a row of
// n inputs x_i from the row: besides x it may use w and b (the entry's weight and bias, 1 and 0
// when the kernel has none), eps and n (scalars of F), and the reductions sum(e), max(e) and
// mean(e) (= sum(e) / n, one division) of a per-entry expression e over the row; e.g. PyTorch's
// composite RMSNorm: x * rsqrt(mean(x * x) + eps) * w. FormulaRowValue sums in index order (one
// implementation); FormulaRowEnclosure covers every order: a sum of n terms with intervals
// [lo_i, hi_i] lies in [sum lo - g M, sum hi + g M], M = sum max(|lo_i|, |hi_i|), g =
// gamma_(n-1) = (n-1) u / (1 - (n-1) u), u = 2^-p of F, for any summation tree with additions
// rounded to nearest in F (Higham, Accuracy and Stability, 2nd ed., §4.2, (4.4)); a product under
// a reduction may be fused with the addition when `contract` (its interval is then the hull of
// the exact and the rounded product); max is exact, so [max lo, max hi].
//
// Errors (ParseFormula, InvalidArgument): "column N: <what>": an unknown name (the message lists
// the valid ones), a function with the wrong number of arguments, a constant that is not a
// decimal number, a cast to a format wider than F, a missing parenthesis, trailing text.
//
// Example:
//   absl::StatusOr<Formula> f = ParseFormula("1 / (1 + exp(-x))", Float32());
//   FormulaValue(*f, Float32(), 0x00000000 /*x = 0*/) == 0x3F000000 /*0.5*/
#ifndef FPCONFORM_COMPOSITE_FORMULA_H_
#define FPCONFORM_COMPOSITE_FORMULA_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "formats/format_spec.h"

namespace fpconform::composite {

// The elementary functions a formula may call.
enum class Fn : uint8_t { kExp, kExp2, kLog, kTanh, kErf, kSqrt, kRsqrt };
inline constexpr int kFns = 7;
// "exp" "exp2" "log" "tanh" "erf" "sqrt" "rsqrt".
const char* FnName(Fn f);

struct FormulaNode {
  enum class Kind : uint8_t {
    kX, kConst, kAdd, kSub, kMul, kDiv, kNeg, kFma, kFn, kCast,
    kW, kB, kEps, kN, kSum, kMax, kMean,  // Row formulas (see "Rows" above).
  };
  Kind kind = Kind::kX;
  int a = -1, b = -1, c = -1;          // Operand nodes (earlier in Formula::nodes).
  uint64_t bits = 0;                   // kConst: the constant in F.
  Fn fn = Fn::kExp;                    // kFn.
  const FormatSpec* to = nullptr;      // kCast.
  bool feeds_add = false;              // kMul whose result is an operand of + or - (contraction).
  bool row = false;                    // One value per row entry (else one for the whole row).
};

struct Formula {
  std::string text;
  const FormatSpec* compute = nullptr;  // F.
  std::vector<FormulaNode> nodes;       // Operands before their users; the result last.
  std::array<bool, kFns> uses{};        // Which elementary functions it calls.
  bool row_terms = false;               // Uses w, b, eps, n or a reduction (a row formula).
};

absl::StatusOr<Formula> ParseFormula(std::string_view text, const FormatSpec& compute);

// The accuracy of an elementary function: correctly rounded, or within `ulps` ulps of F plus
// `abs` (absolute) of the exact value (measured against the exact function, as the CUDA
// Programming Guide's tables do; `abs` for approximations whose error is stated absolutely, e.g.
// Abramowitz & Stegun 7.1.26's |error| <= 1.5e-7 for erf).
struct FnAccuracy {
  bool correctly_rounded = true;
  double ulps = 0.5;
  double abs = 0;
};
using AccuracyTable = std::array<FnAccuracy, kFns>;

// The result (bits of F) of the implementation with every step correctly rounded; x_bits is the
// input in F. For a formula without row terms (a row formula sees a row of one).
uint64_t FormulaValue(const Formula& f, uint64_t x_bits);

// One row of a row formula: x (n >= 1 values of F), w and b (n values of F, or empty: 1 and 0),
// eps (a value of F).
struct RowInputs {
  std::span<const uint64_t> x, w, b;
  uint64_t eps = 0;
};
// Every step correctly rounded, reductions sequential (index order); out: n values of F.
void FormulaRowValue(const Formula& f, const RowInputs& in, std::span<uint64_t> out);

// [lo, hi] (binary64; values of F, or +-Inf) holding every conforming implementation's result
// (see the file comment); NaN end points when there is no such interval.
struct Enclosure {
  double lo = 0, hi = 0;
};
Enclosure FormulaEnclosure(const Formula& f, const AccuracyTable& accuracy, bool contract,
                           uint64_t x_bits);
// The same for every entry of a row (reductions in any order; see "Rows").
void FormulaRowEnclosure(const Formula& f, const AccuracyTable& accuracy, bool contract,
                         const RowInputs& in, std::span<Enclosure> out);

}  // namespace fpconform::composite

#endif  // FPCONFORM_COMPOSITE_FORMULA_H_
