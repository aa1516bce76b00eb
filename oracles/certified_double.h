// Binary64 evaluation with a rigorous running error bound, and the decision of a correctly
// rounded result from the enclosure it gives: the fast paths of the elementwise and along-axis
// oracles (elementary.h, axis_ops.h).
//
// Requires the default floating-point environment (round to nearest, no FTZ/DAZ in MXCSR):
// fpconform never changes it (DESIGN.md: no global floating-point state).
//
// Ev {y, e}: a computed double y and a bound e with |y - v| <= e for the exact value v it
// stands for. The operations below take exact-value bounds of their operands and return one for
// the exact result of the operation on the exact operands, under the standard model of IEEE
// 754 binary64 arithmetic in round to nearest (fl(a op b) = (a op b)(1 + d) = (a op b)/(1 + d'),
// |d|, |d'| <= u = 2^-53, so |fl(s) - s| <= u |fl(s)|; Higham, "Accuracy and Stability of
// Numerical Algorithms", 2nd ed., §2.2, (2.4) and (2.5)), without contraction
// (-ffp-contract=off):
//   Add/Sub: e = ea + eb + u |y|
//   Mul:     e = |ya| eb + |yb| ea + ea eb + u |y|
//   Div:     e = (ea |yb| + |ya| eb) / (|yb| (|yb| - eb)) + u |y|       (needs eb < |yb|)
//   Sqrt:    e = ea / y + u y   (|sqrt A - sqrt a| <= ea / sqrt a, sqrt a >= y / (1 + u); the
//            (1 + u) is covered by the final inflation below)                (needs ea < ya)
//   Exp, Log, Log1p: own evaluations (certified_double.cc's comments give each remainder), the
//            propagated operand error added: exp: |e^A - e^a| <= e^a (e^ea - 1) <= 2 ea e^a for
//            ea <= 1; log: |log A - log a| <= ea / (a - ea).
//   Sum (compensated, Ogita, Rump & Oishi, "Accurate sum and dot product", SIAM J. Sci. Comput.
//            26 (2005), Algorithm 4.4 Sum2 and Proposition 4.5): |res - sum p| <= u |sum p| +
//            gamma_(n-1)^2 sum |p|, gamma_k = k u / (1 - k u); plus sum of the terms' e.
// The bounds are themselves computed in round to nearest: a chain of k operations on
// non-negative numbers is low by at most a factor (1 - u)^(2k); Enclose() multiplies the final
// bound by 1 + 2^-30, which covers k <= 2^21, and adds 2^-1000, which covers underflow in the
// bound (every rounding below 2^-1022 errs by at most 2^-1075 in absolute value, and fewer than
// 2^70 are made); Decide() refuses magnitudes below 2^-960.
#ifndef FPCONFORM_ORACLES_CERTIFIED_DOUBLE_H_
#define FPCONFORM_ORACLES_CERTIFIED_DOUBLE_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>

#include "formats/format_spec.h"
#include "formats/op_env.h"

namespace fpconform::certified {

inline constexpr double kU = 0x1p-53;
inline constexpr double kInf = std::numeric_limits<double>::infinity();

struct Ev {
  double y = 0;
  double e = 0;
};

inline Ev Exact(double y) { return {y, 0}; }
inline Ev Add(Ev a, Ev b) {
  const double y = a.y + b.y;
  return {y, a.e + b.e + kU * std::fabs(y)};
}
inline Ev Sub(Ev a, Ev b) {
  const double y = a.y - b.y;
  return {y, a.e + b.e + kU * std::fabs(y)};
}
inline Ev Mul(Ev a, Ev b) {
  const double y = a.y * b.y;
  return {y, std::fabs(a.y) * b.e + std::fabs(b.y) * a.e + a.e * b.e + kU * std::fabs(y)};
}
inline Ev Div(Ev a, Ev b) {
  const double ab = std::fabs(b.y);
  const double y = a.y / b.y;
  const double den = ab - b.e;
  if (!(den > 0)) return {y, kInf};
  return {y, (a.e * ab + std::fabs(a.y) * b.e) / (ab * den) + kU * std::fabs(y)};
}
inline Ev Sqrt(Ev a) {
  if (!(a.y > a.e)) return {0, kInf};
  const double y = std::sqrt(a.y);
  return {y, a.e / y + kU * y};
}
// Bound e finite and usable.
inline bool Ok(Ev a) { return std::isfinite(a.y) && a.e < kInf; }

// e^a. Refuses (e = Inf) |a.y| > 700 or a.e > 2^-20.
Ev ExpEv(Ev a);
// ExpEv's reduction constants and table, for forms of its value path that repeat its operations
// on y alone (composite/attention_model_kernels.h ExpWeights, tested equal to ExpEv(Exact(x)).y):
// k = nearbyint(x inv), r = (x - k c1) - k c2, p = Horner(coef[7..0], r), y = table[k & 63] p 2^((k - (k & 63)) / 64).
struct ExpConstants {
  double c1 = 0, c2 = 0, c2err = 0, inv = 0;
  const double* table = nullptr;  // 64 entries: 2^(j / 64), nearest.
  const double* coef = nullptr;   // 8 entries: 1 / i!, nearest.
};
ExpConstants ExpReduction();
// 2^x for a double x, |x| <= 1000 (else e = Inf).
Ev Exp2Of(double x);
// log(a) for a.y > 0, a.e <= a.y 2^-20 (else e = Inf).
Ev LogEv(Ev a);
// log(1 + a) for a.y >= 0 (a.e <= 2^-20 max(a.y, 1)).
Ev Log1pEv(Ev a);
// tanh(x) for a double x with 0 < |x| < 20 (else e = Inf).
Ev TanhOf(double x);
// erf(z) for |z.y| + z.e <= 2.5 (else e = Inf).
Ev ErfEv(Ev z);
// sqrt(pi) e^(z^2) erfc(z) for z >= 2 (continued fraction; else e = Inf).
Ev ErfcScaledEv(Ev z);

// Compensated sum (Sum2) of the terms' y with the bound above.
Ev SumEv(std::span<const Ev> terms);

// Constants: the nearest double and |error| <= ulp / 2.
Ev Ln2();
Ev TwoOverSqrtPi();   // 2 / sqrt(pi)
Ev InvSqrt2();        // 1 / sqrt(2)
Ev GeluTanhK();       // 2 sqrt(2 / pi)
Ev GeluTanhA();       // 0.044715

// The open interval (lo, hi) around the exact value that an Ev certifies, the bound inflated as
// in the header comment: lo < v < hi.
struct Interval {
  double lo, hi;
};
Interval Enclose(Ev a);

// A decision: the value v is known to have sign `negative` and |v| in the open interval
// (mlo, mhi), 0 <= mlo < mhi. Sets *r to the bits and flags MpfrRoundToFormat would give for
// every such v (out: float format with sign, zero and subnormals, precision <= 53; env not
// stochastic) when no rounding boundary lies in the interval: all of it below half the smallest
// subnormal (u x), at or above 2^(Emax + 1) (o x), or inside one gap of the (p+1)-bit grid of
// the normal range (x). Returns false otherwise.
bool Decide(const FormatSpec& out, const OpEnv& env, bool negative, double mlo, double mhi,
            OpResult* r);
// The same for an interval (lo, hi) of either sign (false when it contains zero).
bool DecideInterval(const FormatSpec& out, const OpEnv& env, Interval v, OpResult* r);

// Reads float bits exactly into a double (formats of precision <= 53 whose values are doubles:
// every float format of the table). Returns the kind: 0 zero, 1 finite non-zero, 2 Inf, 3 NaN.
int DecodeToDouble(const FormatSpec& f, uint64_t bits, bool daz, double* v);

}  // namespace fpconform::certified

#endif  // FPCONFORM_ORACLES_CERTIFIED_DOUBLE_H_
