#include "oracles/certified_double.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <mpfr.h>

#include "oracles/mpfr_oracle.h"
#include "oracles/mpfr_plumbing.h"

namespace fpconform::certified {
namespace {

// Constants computed once with MPFR: each the double nearest (|error| <= ulp/2 <= u |c|).
struct Consts {
  double c1 = 0;      // ln2 / 64 rounded to 36 bits: k * c1 is exact for |k| < 2^17.
  double c2 = 0;      // ln2 / 64 - c1, rounded to nearest.
  double c2err = 0;   // >= |ln2 / 64 - c1 - c2|.
  double inv = 0;     // ~64 / ln2 (only picks k; no accuracy needed).
  std::array<double, 64> table{};  // 2^(j / 64), nearest.
  std::array<double, 8> exp_c{};   // 1 / i!, nearest.
  std::array<double, 13> atanh_c{};  // 1 / (2k + 1), nearest.
  std::array<double, 10> sinh_c{};   // 1 / (2n + 1)!, nearest.
  std::array<double, 10> cosh_c{};   // 1 / (2n)!, nearest.
  std::array<double, 42> erf_c{};    // (-1)^n / (n! (2n + 1)), nearest.
  double ln2 = 0, two_over_sqrt_pi = 0, inv_sqrt2 = 0, gelu_k = 0, gelu_a = 0;

  Consts() {
    MpfrValue v(400), w(400);
    auto nearest = [&]() { return mpfr_get_d(v, MPFR_RNDN); };
    mpfr_const_log2(v, MPFR_RNDN);
    mpfr_div_2ui(v, v, 6, MPFR_RNDN);  // ln2 / 64 at 400 bits.
    MpfrValue h(36);
    mpfr_set(h, v, MPFR_RNDN);
    c1 = mpfr_get_d(h, MPFR_RNDN);
    mpfr_sub(w, v, h, MPFR_RNDN);
    c2 = mpfr_get_d(w, MPFR_RNDN);
    c2err = std::fabs(c2) * kU;
    inv = 64.0 / 0.6931471805599453;
    for (int j = 0; j < 64; ++j) {
      mpfr_set_si(v, j, MPFR_RNDN);
      mpfr_div_2ui(v, v, 6, MPFR_RNDN);
      mpfr_exp2(v, v, MPFR_RNDN);
      table[static_cast<size_t>(j)] = nearest();
    }
    auto recip = [&](unsigned long n) {
      mpfr_set_ui(v, 1, MPFR_RNDN);
      mpfr_div_ui(v, v, n, MPFR_RNDN);
      return nearest();
    };
    unsigned long fact = 1;
    for (unsigned long i = 0; i < 8; ++i) {
      if (i > 0) fact *= i;
      exp_c[i] = recip(fact);
    }
    for (unsigned long k = 0; k < 13; ++k) atanh_c[k] = recip(2 * k + 1);
    MpfrValue f(400);
    mpfr_set_ui(f, 1, MPFR_RNDN);  // (2n)! then (2n+1)!
    for (unsigned long n = 0; n < 10; ++n) {
      if (n > 0) {
        mpfr_mul_ui(f, f, 2 * n, MPFR_RNDN);  // (2n)! from (2n-1)!
      }
      mpfr_ui_div(v, 1, f, MPFR_RNDN);
      cosh_c[n] = nearest();
      mpfr_mul_ui(f, f, 2 * n + 1, MPFR_RNDN);
      mpfr_ui_div(v, 1, f, MPFR_RNDN);
      sinh_c[n] = nearest();
    }
    mpfr_set_ui(f, 1, MPFR_RNDN);  // n!
    for (unsigned long k = 0; k < 42; ++k) {
      if (k > 0) mpfr_mul_ui(f, f, k, MPFR_RNDN);
      mpfr_mul_ui(w, f, 2 * k + 1, MPFR_RNDN);
      mpfr_ui_div(v, 1, w, MPFR_RNDN);
      if (k % 2 == 1) mpfr_neg(v, v, MPFR_RNDN);
      erf_c[k] = nearest();
    }
    mpfr_const_log2(v, MPFR_RNDN);
    ln2 = nearest();
    mpfr_const_pi(w, MPFR_RNDN);
    mpfr_sqrt(w, w, MPFR_RNDN);
    mpfr_ui_div(v, 2, w, MPFR_RNDN);
    two_over_sqrt_pi = nearest();
    mpfr_sqrt_ui(v, 2, MPFR_RNDN);
    mpfr_ui_div(v, 1, v, MPFR_RNDN);
    inv_sqrt2 = nearest();
    mpfr_const_pi(w, MPFR_RNDN);
    mpfr_ui_div(v, 2, w, MPFR_RNDN);
    mpfr_sqrt(v, v, MPFR_RNDN);
    mpfr_mul_2ui(v, v, 1, MPFR_RNDN);
    gelu_k = nearest();
    mpfr_set_str(v, "0.044715", 10, MPFR_RNDN);
    gelu_a = nearest();
  }
};

const Consts& C() {
  static const Consts c;
  return c;
}

Ev Coef(double c) { return {c, kU * std::fabs(c)}; }

// 2^k exactly (a multiplication by it is exact when the product is a normal double).
double Pow2(int k) {
  if (k < -1022 || k > 1023) return std::ldexp(1.0, k);
  const uint64_t b = static_cast<uint64_t>(k + 1023) << 52;
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}
// Exponent of a positive normal double.
int ExponentOf(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return static_cast<int>((b >> 52) & 0x7FF) - 1023;
}
Ev Fail() { return {0, kInf}; }

// 2 atanh(t) for |t| + t.e <= 0.18: 2 t sum_{k<=12} t^(2k) / (2k + 1); remainder
// 2 sum_{k>=13} |t|^(2k+1)/(2k+1) <= 2 |t|^27 / (27 (1 - t^2)), times 1.01 for its rounding.
Ev TwoAtanh(Ev t) {
  const double tmax = std::fabs(t.y) + t.e;
  if (!(tmax <= 0.18)) return Fail();
  const Consts& c = C();
  const Ev s = Mul(t, t);
  Ev q = Coef(c.atanh_c[12]);
  for (int k = 11; k >= 0; --k) q = Add(Mul(q, s), Coef(c.atanh_c[static_cast<size_t>(k)]));
  Ev r = Mul(t, q);
  double p = tmax;
  for (int i = 1; i < 27; ++i) p *= tmax;
  const double rem = 2.0 * p / (27.0 * (1.0 - tmax * tmax)) * 1.01;
  return {2.0 * r.y, 2.0 * (r.e + rem)};
}

}  // namespace

Ev Ln2() { return Coef(C().ln2); }
ExpConstants ExpReduction() {
  const Consts& c = C();
  return {c.c1, c.c2, c.c2err, c.inv, c.table.data(), c.exp_c.data()};
}
Ev TwoOverSqrtPi() { return Coef(C().two_over_sqrt_pi); }
Ev InvSqrt2() { return Coef(C().inv_sqrt2); }
Ev GeluTanhK() { return Coef(C().gelu_k); }
Ev GeluTanhA() { return Coef(C().gelu_a); }

// e^a = 2^(k/64) e^r, k = round(64 a / ln2), r = a - k ln2/64 = (a - k c1) - k c2 - k (ln2/64 -
// c1 - c2) (k c1 exact: 36 + 17 bits), |r| <= ln2/128 + rounding <= 0.006. e^r by the Taylor
// polynomial of degree 7; remainder <= |r|^8 / 8! e^|r| <= 1.01 |r|^8 / 40320.
Ev ExpEv(Ev a) {
  if (!(std::fabs(a.y) <= 700.0) || !(a.e <= 0x1p-20)) return Fail();
  const Consts& c = C();
  const double kd = std::nearbyint(a.y * c.inv);
  Ev r = Sub(a, Exact(kd * c.c1));
  r = Sub(r, Ev{kd * c.c2, std::fabs(kd) * c.c2err + kU * std::fabs(kd * c.c2)});
  const double rmax = std::fabs(r.y) + r.e;
  if (!(rmax <= 0.006)) return Fail();
  Ev p = Coef(c.exp_c[7]);
  for (int i = 6; i >= 0; --i) p = Add(Mul(p, r), Coef(c.exp_c[static_cast<size_t>(i)]));
  const double r2 = rmax * rmax, r4 = r2 * r2;
  p.e += r4 * r4 * (1.01 / 40320.0);
  const int k = static_cast<int>(kd);
  const int j = k & 63;
  const int m = (k - j) / 64;
  const Ev s = Mul(Coef(c.table[static_cast<size_t>(j)]), p);
  const double scale = Pow2(m);  // m >= -1011: s.y * 2^m is normal and exact.
  return {s.y * scale, s.e * scale};
}

// 2^x = 2^(k/64) e^(d ln2), k = round(64 x), d = x - k/64 exact (|d| <= 1/128: both are
// multiples of ulp(x) when k != 0, and |d| / ulp(x) <= 2^53).
Ev Exp2Of(double x) {
  if (!(std::fabs(x) <= 1000.0)) return Fail();
  const Consts& c = C();
  const double kd = std::nearbyint(x * 64.0);
  const double d = x - kd / 64.0;
  const Ev e = ExpEv(Mul(Exact(d), Ln2()));
  const int k = static_cast<int>(kd);
  const int j = k & 63;
  const int m = (k - j) / 64;
  const Ev s = Mul(Coef(c.table[static_cast<size_t>(j)]), e);
  const double scale = Pow2(m);  // |m| <= 16: exact.
  return {s.y * scale, s.e * scale};
}

// log a = ex ln2 + 2 atanh((f - 1)/(f + 1)), a = f 2^ex, f in [sqrt(1/2), sqrt 2): |t| <= 0.1716;
// f - 1 is exact (Sterbenz).
Ev LogEv(Ev a) {
  if (!(a.y > 0) || !(a.e <= a.y * 0x1p-20) || !std::isfinite(a.y)) return Fail();
  int ex = 0;
  double f = std::frexp(a.y, &ex);  // [0.5, 1), exact.
  if (f < 0.70710678118654752) {
    f *= 2.0;
    ex -= 1;
  }
  const Ev t = Div(Exact(f - 1.0), Add(Exact(f), Exact(1.0)));
  Ev r = TwoAtanh(t);
  if (ex != 0) r = Add(Mul(Exact(static_cast<double>(ex)), Ln2()), r);
  r.e += a.e / (a.y - a.e);
  return r;
}

// log(1 + a) = 2 atanh(a / (2 + a)) for a <= 0.41 (|a / (2 + a)| <= 0.171), else log(1 + a).
Ev Log1pEv(Ev a) {
  if (!(a.y >= 0)) return Fail();
  if (a.y + a.e <= 0.41) return TwoAtanh(Div(a, Add(Exact(2.0), a)));
  return LogEv(Add(Exact(1.0), a));
}

// |x| <= 0.5: sinh x / cosh x from their Taylor series (10 terms each; remainders
// <= 2 x^20 / 21! and 2 x^20 / 20!); else (1 - e^-2|x|) / (1 + e^-2|x|) with x's sign.
Ev TanhOf(double x) {
  const double ax = std::fabs(x);
  if (!(ax < 20.0) || ax == 0) return Fail();
  if (ax <= 0.5) {
    const Consts& c = C();
    const Ev x2 = Mul(Exact(x), Exact(x));
    Ev s = Coef(c.sinh_c[9]), ch = Coef(c.cosh_c[9]);
    for (int n = 8; n >= 0; --n) {
      s = Add(Mul(s, x2), Coef(c.sinh_c[static_cast<size_t>(n)]));
      ch = Add(Mul(ch, x2), Coef(c.cosh_c[static_cast<size_t>(n)]));
    }
    const double m = x2.y + x2.e;
    double m10 = m * m;
    m10 = m10 * m10 * m;        // m^5
    m10 = m10 * m10;            // m^10
    s.e += 2.0 * m10 * 1.01 * c.sinh_c[9] / (20.0 * 21.0);
    ch.e += 2.0 * m10 * 1.01 * c.cosh_c[9] / (19.0 * 20.0);
    return Div(Mul(Exact(x), s), ch);
  }
  const Ev e = ExpEv(Exact(-2.0 * ax));
  const Ev v = Div(Sub(Exact(1.0), e), Add(Exact(1.0), e));
  return x < 0 ? Ev{-v.y, v.e} : v;
}

// erf z = 2/sqrt(pi) z sum_{n<=N} a_n z^(2n), a_n = (-1)^n / (n! (2n + 1)) (Horner in z^2), N
// by the size of z; with N + 1 >= z^2 the terms decrease in magnitude from n = N + 1 on and
// alternate, so the remainder is at most |a_(N+1)| |z|^(2N+3).
Ev ErfEv(Ev z) {
  const double zmax = std::fabs(z.y) + z.e;
  if (!(zmax <= 2.5)) return Fail();
  const Consts& c = C();
  const int n = zmax <= 0.25 ? 8 : zmax <= 0.5 ? 11 : zmax <= 1.0 ? 17 : zmax <= 1.5 ? 26 : 40;
  const Ev s = Mul(z, z);
  Ev q = Coef(c.erf_c[static_cast<size_t>(n)]);
  for (int k = n - 1; k >= 0; --k) q = Add(Mul(q, s), Coef(c.erf_c[static_cast<size_t>(k)]));
  double zp = zmax;  // zmax^(2n + 3)
  for (int k = 0; k < n + 1; ++k) zp *= zmax * zmax;
  q.e += std::fabs(c.erf_c[static_cast<size_t>(n + 1)]) * zp / zmax * 1.01;
  // q.e bounds the polynomial part; the remainder of sum a_k z^(2k) is |a_(N+1)| z^(2N+2).
  return Mul(TwoOverSqrtPi(), Mul(z, q));
}

// K(z) = sqrt(pi) e^(z^2) erfc(z) for z >= 2 by Laplace's continued fraction (Abramowitz &
// Stegun 7.1.14): K = 1/(z + (1/2)/(z + (2/2)/(z + (3/2)/(z + ...)))). Its partial numerators
// k/2 and denominators z are positive, so consecutive convergents lie on both sides of K
// (Cuyt et al., Handbook of Continued Fractions for Special Functions, 2008, Thm 3.12 (Seidel-
// Stern) with the convergence of 13.2.20a for z > 0): K is within |K_N - K_(N+1)| of either.
Ev ErfcScaledEv(Ev z) {
  if (!(z.y - z.e >= 2.0) || !(z.y <= 1e6)) return Fail();
  // Convergents K_k = A_k / B_k by the forward recurrences (Wallis): A_k = z A_(k-1) +
  // b_(k-1) A_(k-2), the same for B, b_0 = 1, b_j = j/2; A_-1 = 1, A_0 = 0, B_-1 = 0, B_0 = 1.
  // All terms are positive, so the running bounds stay relative.
  Ev a2 = Exact(1.0), a1 = Exact(0.0), b2 = Exact(0.0), b1 = Exact(1.0);
  for (int k = 1; k <= 160; ++k) {
    const Ev bk = Exact(k == 1 ? 1.0 : 0.5 * (k - 1));
    const Ev a0 = Add(Mul(z, a1), Mul(bk, a2));
    const Ev b0 = Add(Mul(z, b1), Mul(bk, b2));
    a2 = a1;
    a1 = a0;
    b2 = b1;
    b1 = b0;
    if (b1.y > 0x1p500) {  // Rescale (exact: powers of two) to stay in range.
      a1 = {a1.y * 0x1p-500, a1.e * 0x1p-500};
      a2 = {a2.y * 0x1p-500, a2.e * 0x1p-500};
      b1 = {b1.y * 0x1p-500, b1.e * 0x1p-500};
      b2 = {b2.y * 0x1p-500, b2.e * 0x1p-500};
    }
    if (k >= 8 && k % 4 == 0) {
      // Consecutive convergents K_k, K_(k-1) bracket K (checked every 4 steps).
      const Ev kk = Div(a1, b1);
      const Ev km1 = Div(a2, b2);
      const double gap = std::fabs(kk.y - km1.y);
      if (gap <= 0x1p-58 * kk.y) return {kk.y, std::max(kk.e, km1.e) + gap};
    }
  }
  return Fail();
}

Ev SumEv(std::span<const Ev> terms) {
  double s = 0, c = 0, a = 0, e = 0;
  for (const Ev& t : terms) {
    const double x = s + t.y;
    const double bp = x - s;
    const double err = (s - (x - bp)) + (t.y - bp);  // TwoSum (Knuth): exact.
    s = x;
    c += err;
    a += std::fabs(t.y);
    e += t.e;
  }
  const double res = s + c;
  const double n = static_cast<double>(terms.size());
  const double nu = n * kU;
  if (!(nu < 0.5)) return Fail();
  const double gamma = nu / (1.0 - nu);
  return {res, kU * std::fabs(res) + gamma * gamma * a + e};
}

Interval Enclose(Ev a) {
  if (!Ok(a)) return {-kInf, kInf};
  const double b = a.e * (1.0 + 0x1p-30) + 0x1p-1000;
  return {std::nextafter(a.y - b, -kInf), std::nextafter(a.y + b, kInf)};
}

namespace {

uint64_t Ones(int n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }
uint64_t SignMaskOf(const FormatSpec& f) {
  return f.has_sign ? uint64_t{1} << (f.exponent_bits + f.fraction_bits) : 0;
}
uint64_t PlaceBits(const FormatSpec& f, uint64_t enc) { return enc << f.pad_bits; }

}  // namespace

bool Decide(const FormatSpec& f, const OpEnv& env, bool neg, double mlo, double mhi,
            OpResult* r) {
  if (!(mlo >= 0) || !(mlo < mhi)) return false;
  const int p = Precision(f);
  const int fb = f.fraction_bits;
  const uint64_t sign = neg ? SignMaskOf(f) : 0;
  // Below half the smallest subnormal: 0 or the smallest subnormal, u x (tiny either way).
  if (mhi <= Pow2(MinSubnormalExponent(f) - 1)) {
    bool up = false;
    switch (env.rounding) {
      case Rounding::kNearestEven:
      case Rounding::kNearestAway:
      case Rounding::kTowardZero:
        break;
      case Rounding::kUpward: up = !neg; break;
      case Rounding::kDownward: up = neg; break;
      case Rounding::kToOdd: up = true; break;
      case Rounding::kStochastic: return false;
    }
    if (env.flush_to_zero) up = false;
    const bool neg_zero = neg && f.nan_encoding != NanEncoding::kNegativeZero;
    r->bits = up ? PlaceBits(f, sign | 1) : PlaceBits(f, neg_zero ? sign : 0);
    r->flags = kUnderflow | kInexact;
    return true;
  }
  // At or above 2^(Emax + 1): overflow in every mode.
  if (mlo >= Pow2(Emax(f) + 1)) {
    bool to_inf = false;
    switch (env.rounding) {
      case Rounding::kNearestEven:
      case Rounding::kNearestAway: to_inf = true; break;
      case Rounding::kTowardZero:
      case Rounding::kToOdd: to_inf = false; break;
      case Rounding::kUpward: to_inf = !neg; break;
      case Rounding::kDownward: to_inf = neg; break;
      case Rounding::kStochastic: return false;
    }
    if (env.saturate) to_inf = false;
    const uint64_t biased = static_cast<uint64_t>(Emax(f) + f.bias);
    const uint64_t max_bits =
        PlaceBits(f, sign | (biased << fb) | (MaxFiniteSignificand(f) & Ones(fb)));
    uint64_t bits = max_bits;
    if (to_inf) {
      bits = f.nonfinite == NonFinite::kIeee
                 ? PlaceBits(f, sign | (Ones(f.exponent_bits) << fb))
                 : MpfrNanBits(f, OpEnv{}, nullptr, nullptr);
    }
    r->bits = bits;
    r->flags = kOverflow | kInexact;
    return true;
  }
  // Subnormal range, at most pred_p(2^Emin) = 2^Emin (1 - 2^-p): tiny before and after
  // rounding in every mode; the quantum is fixed, q = 2^(Emin - p) (half a subnormal ulp).
  // Only where the bounds stay above 2^-960 (every output but binary64).
  if (Emin(f) - p >= -950 && mhi <= (1.0 - Pow2(-p)) * Pow2(Emin(f))) {
    const double sl = mlo * Pow2(p - Emin(f));  // Exact: < 2^p, scaled up.
    const double sh = mhi * Pow2(p - Emin(f));
    const double k = std::floor(sl);
    if (sh > k + 1) return false;
    const uint64_t ki = static_cast<uint64_t>(k);
    uint64_t i = ki >> 1;
    bool up = false;
    switch (env.rounding) {
      case Rounding::kNearestEven:
      case Rounding::kNearestAway: up = (ki & 1) != 0; break;
      case Rounding::kTowardZero: break;
      case Rounding::kUpward: up = !neg; break;
      case Rounding::kDownward: up = neg; break;
      case Rounding::kToOdd: i |= 1; break;
      case Rounding::kStochastic: return false;
    }
    const uint64_t m = i + (up ? 1 : 0);
    if (env.flush_to_zero || m == 0) {
      const bool neg_zero = neg && f.nan_encoding != NanEncoding::kNegativeZero;
      r->bits = PlaceBits(f, neg_zero ? sign : 0);
    } else {
      r->bits = PlaceBits(f, sign | m);  // m = 2^(p-1) is 2^Emin's encoding.
    }
    r->flags = kUnderflow | kInexact;
    return true;
  }
  if (mlo < Pow2(Emin(f)) || mlo < 0x1p-960) return false;
  const int e = ExponentOf(mlo);
  if (e >= 1023 || mhi > Pow2(e + 1)) return false;
  const double sl = mlo * Pow2(p - e);  // Exact scalings into [2^p, 2^(p+1)].
  const double sh = mhi * Pow2(p - e);
  const double k = std::floor(sl);
  if (sh > k + 1) return false;  // A point of the (p+1)-bit grid inside.
  const uint64_t ki = static_cast<uint64_t>(k);
  uint64_t i = ki >> 1;
  const bool above_half = (ki & 1) != 0;
  bool up = false;
  switch (env.rounding) {
    case Rounding::kNearestEven:
    case Rounding::kNearestAway: up = above_half; break;
    case Rounding::kTowardZero: break;
    case Rounding::kUpward: up = !neg; break;
    case Rounding::kDownward: up = neg; break;
    case Rounding::kToOdd: i |= 1; break;
    case Rounding::kStochastic: return false;
  }
  uint64_t m = i + (up ? 1 : 0);
  int eo = e;
  if (m >> p) {
    m >>= 1;
    ++eo;
  }
  if (eo > Emax(f) || (eo == Emax(f) && m > MaxFiniteSignificand(f))) return false;
  const uint64_t biased = static_cast<uint64_t>(eo + f.bias);
  r->bits = PlaceBits(f, sign | (biased << fb) | (m & Ones(fb)));
  r->flags = kInexact;
  return true;
}

bool DecideInterval(const FormatSpec& f, const OpEnv& env, Interval v, OpResult* r) {
  if (v.lo >= 0) return Decide(f, env, false, v.lo, v.hi, r);
  if (v.hi <= 0) return Decide(f, env, true, -v.hi, -v.lo, r);
  return false;
}

int DecodeToDouble(const FormatSpec& f, uint64_t bits, bool daz, double* v) {
  // binary32 and bfloat16 (the IEEE layouts of format_spec.h's FastLayout): the host float's
  // conversion to double is exact; classes as below.
  if (!daz && (f.d.fast_layout == FastLayout::kBinary32 ||
               f.d.fast_layout == FastLayout::kBFloat16)) {
    uint32_t u = static_cast<uint32_t>(bits & WidthMask(f));
    if (f.d.fast_layout == FastLayout::kBFloat16) u <<= 16;
    float g;
    std::memcpy(&g, &u, sizeof g);
    if (std::isnan(g)) return 3;
    *v = static_cast<double>(g);
    if (std::isinf(g)) return 2;
    return g == 0 ? 0 : 1;
  }
  const uint64_t enc = (bits & WidthMask(f)) >> f.pad_bits;
  const int fb = f.fraction_bits;
  const uint64_t frac = enc & Ones(fb);
  const uint64_t biased = (enc >> fb) & Ones(f.exponent_bits);
  const uint64_t all_exp = Ones(f.exponent_bits);
  const bool sign = f.has_sign && ((enc >> (f.exponent_bits + fb)) & 1) != 0;
  if (f.nonfinite == NonFinite::kIeee || f.nan_encoding == NanEncoding::kIeee) {
    if (biased == all_exp) {
      if (frac == 0 && f.nonfinite == NonFinite::kIeee) {
        *v = sign ? -kInf : kInf;
        return 2;
      }
      if (frac != 0) return 3;
    }
  } else if (f.nan_encoding == NanEncoding::kAllOnes) {
    if (biased == all_exp && frac == Ones(fb)) return 3;
  } else if (sign && biased == 0 && frac == 0) {
    return 3;
  }
  double x;
  if (biased == 0 && f.has_subnormals) {
    if (frac == 0 || daz) {
      *v = sign ? -0.0 : 0.0;
      return 0;
    }
    x = std::ldexp(static_cast<double>(frac), Emin(f) - fb);
  } else {
    x = std::ldexp(static_cast<double>((uint64_t{1} << fb) | frac),
                   static_cast<int>(biased) - f.bias - fb);
  }
  *v = sign ? -x : x;
  return 1;
}

}  // namespace fpconform::certified
