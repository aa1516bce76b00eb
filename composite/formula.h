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
// the exact and the rounded product); max is exact, so [max lo, max hi]. Also the reductions
// welford_mean(e), welford_m2(e) and online_sumexp(e) below; FormulaRowValue computes them as
// one sequential implementation does, in index order (Welford updates m += (v - m) / c,
// M += (v - m_old)(v - m); the online sum s = s exp(m - m') + exp(v - m'), m' = max(m, v)).
//
// Approximate division and perturbed arguments. `[accuracy] div` gives the accuracy of every
// division of the formula (`/` and the division of mean(e)), as for a function: Triton lowers a
// float32 `/` to PTX div.full.f32, "maximum ulp error 2 across the full range of inputs" (PTX ISA
// 9.1, section 9.7.3 div). An accuracy may also carry `arg_rel` r: the function is evaluated at
// a(1 + t), |t| <= r, instead of a: exp(x) computed as ex2.approx(RN(x * RN(log2 e))) (Triton's
// float32 exp) is exp at x (1 + t), |t| <= 2u + u^2. Proof of the enclosure for both:
//   - k ulps are ulps of F at RU_F(max(|f_lo|, |f_hi|)) (the exact values' magnitude rounded up
//     to F): a figure k stated "from the correctly rounded result" (PTX ISA's ex2, CUDA's tables)
//     is then covered by k + 0.5, since ulp(RN(v)) <= ulp(RU_F(|v|)) and |RN(v) - v| <=
//     ulp(v) / 2.
//   - a / b within k ulps (plus abs): the exact quotient lies in [q_lo, q_hi] (the extremes over
//     the operands' end points, moved outward); the result in [q_lo - kU - abs, q_hi + kU + abs]
//     rounded inward to values of F (or +-Inf beyond F's range), as for a function.
//   - f(a) with arg_rel r: the argument interval widened to [a_lo - r|a_lo|, a_hi + r|a_hi|]
//     (binary64, outward) holds every a(1 + t); f of it as above.
//
// Welford moments (rows): welford_mean(e) and welford_m2(e) are the mean and M2 = sum (v_i -
// mean)^2 of the row's values v_i of e as a Welford computation gives them: states (c, m, M) (an
// exact count, a mean, an M2); a leaf (1, v, 0); a step joins A = (a, m_A, M_A) and B = (b, m_B,
// M_B), a, b >= 1, into S = (n_S = a + b, m_S, M_S), in any tree and order (sequential updates
// per thread, shuffles, cascades), each step one of (every operation RNE in F, each division
// within the model's div accuracy, any product fused into the addition that takes it):
//   mean  (M1) m_A + (m_B - m_A) * w with w = b / n_S, 1 / n_S (b = 1) or a division by n_S
//             (Triton welford_reduce / welford_combine, ATen WelfordOps, cuWelfordOnlineSum,
//             ATen CPU AddMoments / UpdateMomentsVec);
//         (M2) (a / n_S) m_A + (b / n_S) m_B with a / n_S = a * (1 / n_S) (cuWelfordCombine);
//   M2    (Q1) M_A + M_B + (m_B - m_A)^2 * a * (b / n_S), the product in any order of its
//             factors, b / n_S formed as above (every merge above);
//         (Q2) an update (b = 1, M_B = 0, m_B = x): M_A + (x - m_A) * (x - m_S) (every update).
// A state of count 0 (an empty lane, a masked element) joins exactly; Triton's welford_combine
// divides w2 by w2 there, which the theorem does not cover, but a looped kernel (more elements
// than lanes) has no empty lane. (welford_m2(e) / n is the biased variance.) Two-pass variance is
// a different formula:
// mean((x - mean(x)) * (x - mean(x))). Enclosure (the proof, with these constants):
//   Notation: u = 2^-p; eta = 2^(emin - p) (half the subnormal spacing); a division within d
//   ulps is U = 2d(1 + 2u) rounding units (U = 1 when correctly rounded): its relative error is
//   at most U u in the normal range and its absolute error at most eta1 = max(1, 2d) eta + abs
//   below it; gamma_k = k u / (1 - k u) (Higham, Lemmas 3.1 and 3.3: (1 + t_j)(1 + t_k) =
//   1 + t_(j+k) with |t_j| <= gamma_j, also for real j, k). R >= max |v_i|, W >= max v - min v,
//   mu_T and M2_T the exact mean and M2 of the |T| values below a node T, M2 that of the row's n
//   values. A step's exact mean is a convex combination of its children's, so |mu_T| <= R and
//   |mu_B - mu_A| <= W; the M2 of a subset is at most the M2 of a superset.
//   Local mean error. m* = (a m_A + b m_B) / n_S; lambda_S = m_S - m*. (M1): the increment is
//   (b / n_S)(m_B - m_A)(1 + t), |t| <= gamma_(U+2), and the last rounding adds at most
//   u |m_A + increment| <= u |m*| + u gamma_(U+2) |m_B - m_A|; (M2): each product carries
//   |t| <= gamma_(U+3), so |lambda| <= gamma_(U+3) max(|m_A|, |m_B|). Underflow adds at most
//   3 eta1 (subtractions and additions are exact below the normal range). With E an upper bound
//   of every |e_T| = |m_T - mu_T|: |lambda_S| <= l := u (k1 (R + E) + k2 (W + 2E)) + 3 eta1,
//   k1 = max(1, gamma_(U+3) / u), k2 = (1 + u) gamma_(U+2) / u.
//   Mean. e_S = lambda_S + (a e_A + b e_B) / n_S, so n_S e_S = n_S lambda_S + a e_A + b e_B and
//   by induction |T| |e_T| <= l sum over the steps S below T of n_S <= l (|T| - 1)(|T| + 2) / 2
//   (n_S <= a b + 1 since (a - 1)(b - 1) >= 0; the products a b over the steps sum to
//   |T| (|T| - 1) / 2, each pair of values being split once). So |e_T| <= l (n + 1) / 2 =: E for
//   every T, and l = l0 / (1 - s (n + 1) / 2), l0 = u (k1 R + k2 W) + 3 eta1, s = u (k1 + 2 k2)
//   (no enclosure unless s (n + 1) / 2 <= 1/2). The computed mean lies in [mu - g, mu + g],
//   g = l (n - 1)(n + 2) / (2n).
//   M2. Exactly M2_S = M2_A + M2_B + (a b / n_S) d_S^2, d_S = mu_B - mu_A, so M2 = sum over the
//   steps of (a b / n_S) d_S^2. Computed (Q1, Q2): M_S = (M_A + M_B)(1 + al) + (a b / n_S) dh^2
//   (1 + be) + z + w, dh = m_B - m_A, |al| <= gamma_2, |be| <= gamma_(U+8) (at most U + 6
//   rounding units in the product, two additions); z = 0 for Q1 and, for Q2, x - m_S = (x - m_A)
//   a / n_S - lambda_S gives z = -lambda_S (x - m_A)(1 + t), |t| <= gamma_4, so |z| <=
//   (1 + gamma_4) l |dh|; |w| <= 2 (n_S + 2) eta1 (underflow of the products, each multiplied by
//   at most a <= n_S afterwards). With D_T = M_T - M2_T: |D_S| <= (1 + gamma_2)(|D_A| + |D_B|) +
//   L_S, L_S = gamma_2 (M2_A + M2_B) + (a b / n_S) |dh^2 - d^2| + gamma_(U+8) (a b / n_S) dh^2 +
//   |z| + |w|; so |D_root| <= (1 + gamma_2)^(n-1) sum_S L_S <= sum_S L_S / (1 - 2 (n - 1) u)
//   (no enclosure unless 2 (n - 1) u <= 1/2). The sums over the n - 1 steps:
//     gamma_2 sum (M2_A + M2_B) <= gamma_2 (n - 1) M2;
//     |dh - d| <= |e_A| + |e_B| <= l (n_S + 2) / 2 =: l h_S, and by Cauchy-Schwarz with
//     sum (a b / n_S) d^2 = M2 and sum (a b / n_S) h_S^2 <= sum a b (n_S + 6) / 4 <=
//     (n + 6) n (n - 1) / 8: sum (a b / n_S) |dh^2 - d^2| <= sum (a b / n_S)(2 |d| l h_S +
//     l^2 h_S^2) <= T2 := l sqrt((n + 6) n (n - 1) M2 / 2) + l^2 (n + 6) n (n - 1) / 8;
//     gamma_(U+8) sum (a b / n_S) dh^2 <= gamma_(U+8) (M2 + T2);
//     over the updates (a b / n_S >= 1/2): sum |d| <= sqrt(2 (n - 1) M2) and sum |dh - d| <=
//     l (n - 1)(n + 4) / 4, so sum |z| <= (1 + gamma_4) l (sqrt(2 (n - 1) M2) +
//     l (n - 1)(n + 4) / 4);
//     sum |w| <= eta1 (n - 1)(n + 6).
//   The computed M2 lies in [M2 - D, M2 + D], D the bound above. Interval terms: with centres c_i
//   and radii r_i, rho = sqrt(sum r_i^2), M2(v) lies within 2 sqrt(M2(c)) rho + rho^2 of M2(c)
//   (M2(c + t) = M2(c) + 2 sum (c_i - mu_c) t_i + M2(t), Cauchy-Schwarz); the exact mean and M2
//   are enclosed in binary64 with directed steps. The theorem is a worst case over every tree and
//   variant: of order n u (k1 R + k2 W) / 2 for the mean and n^1.5 u (k1 R + k2 W) sqrt(M2) for
//   M2 (the n u kappa shape of Chan, Golub & LeVeque 1983), wider than a sum's gamma_(n-1).
//   No enclosure where an intermediate could overflow (2 n (R + W + 2E)^2 beyond F's range) or
//   a term is NaN or infinite.
//
// Online softmax (rows): online_sumexp(e) is sum_i exp(v_i - max v) as torch.compile's looped
// softmax computes it (torch/_inductor/runtime/triton_helpers.py online_softmax_combine and
// online_softmax_reduce): states (m, s); a value x joins as (x, 1); a step rescales both states
// to m = max(m_A, m_B) (exact) and adds: s = s_A * exp(m_A - m) + s_B * exp(m_B - m), exp being
// the model's exp (its accuracy and arg_rel) of the rounded difference, with exp(0) = 1 exactly
// (the special values of PTX ex2 and of CUDA's expf), so that a state whose maximum does not
// change is not rescaled; products and sums RNE (or fused), in any tree and order. Enclosure: a
// value v_i reaches the result through K_i rescales by factors != 1 whose maxima strictly
// increase, each a row value above v_i, so K_i <= #{distinct row values > v_i}; the differences
// telescope to M - v_i, so the rounded differences and arg_rel move the exponent by at most
// (M - v_i) q, q = (1 + u)(1 + r) - 1; each factor errs relatively by at most dl = 2 k u (1 + 2u)
// (k ulps; k = 1/2 when correctly rounded) plus absolutely by al = 2 k eta + abs, and each
// rescaling product by u. With t_i = exp(v_i - M) and the additions (any tree, Higham (4.4)):
//   s in [sum t_i exp(-K_i cl - (M - v_i) q) (1 - gamma_(n-1)) - A,
//         sum t_i exp(K_i ch + (M - v_i) q) (1 + gamma_(n-1)) + A],
//   ch = (1 + dl)(1 + u) - 1 >= log((1 + dl)(1 + u)); cl = c / (1 - c) with 1 - c = (1 - dl)
//   (1 - u), so that log(1 - c) >= -cl; A = 2 n^2 al (a rescaled partial sum is at most n).
//   Only point terms (e.g. x itself): an interval term gives no enclosure.
//
// Errors (ParseFormula, InvalidArgument): "column N: <what>": an unknown name (the message lists
// the valid ones), a function with the wrong number of arguments, a constant that is not a
// decimal number, a cast to a format wider than F, a missing parenthesis, trailing text, a
// reduction of a value that is the same for the whole row.
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

// The elementary functions a formula may call (the first kCallableFns), then the division (its
// accuracy is the [accuracy] key "div"; formulas write it `/`).
enum class Fn : uint8_t { kExp, kExp2, kLog, kTanh, kErf, kSqrt, kRsqrt, kDiv };
inline constexpr int kFns = 8;
inline constexpr int kCallableFns = 7;
// "exp" "exp2" "log" "tanh" "erf" "sqrt" "rsqrt" "div".
const char* FnName(Fn f);

struct FormulaNode {
  enum class Kind : uint8_t {
    kX, kConst, kAdd, kSub, kMul, kDiv, kNeg, kFma, kFn, kCast,
    kW, kB, kEps, kN, kSum, kMax, kMean,  // Row formulas (see "Rows" above).
    kWelfordMean, kWelfordM2, kOnlineSumExp,  // "Welford moments", "Online softmax" above.
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
  std::array<bool, kFns> uses{};        // The elementary functions it calls; kDiv: it divides.
  bool row_terms = false;               // Uses w, b, eps, n or a reduction (a row formula).
};

absl::StatusOr<Formula> ParseFormula(std::string_view text, const FormatSpec& compute);

// The accuracy of an elementary function or of the division: correctly rounded, or within `ulps`
// ulps of F (at the exact value's magnitude rounded up to F) plus `abs` (absolute) of the exact
// value (`abs` for approximations whose error is stated absolutely, e.g. Abramowitz & Stegun
// 7.1.26's |error| <= 1.5e-7 for erf), of the function at the argument perturbed relatively by
// at most `arg_rel` ("Approximate division and perturbed arguments" above).
struct FnAccuracy {
  bool correctly_rounded = true;
  double ulps = 0.5;
  double abs = 0;
  double arg_rel = 0;
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
