#include "oracles/error_measures.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "oracles/mpfr_plumbing.h"

namespace fpconform {
namespace {

enum class Kind : uint8_t { kZero, kFinite, kInf, kNaN };

// This file's own decoder (container bits of float format f), in parts: the fields, the kind and
// sign from the bits alone (no MPFR: AbsBits runs it on every input of a sweep's dot products),
// and Decode, which also writes a finite value to `out` exactly (precision >= p).

// The fields of container bits (pad bits dropped).
struct Fields {
  uint64_t exponent;
  uint64_t fraction;
  bool sign;
};

Fields FieldsOf(const FormatSpec& f, uint64_t bits) {
  bits = (bits & WidthMask(f)) >> f.pad_bits;
  const int fb = f.fraction_bits;
  const int eb = f.exponent_bits;
  return {(bits >> fb) & ((uint64_t{1} << eb) - 1), bits & ((uint64_t{1} << fb) - 1),
          f.has_sign && ((bits >> (fb + eb)) & 1) != 0};
}

Kind KindOf(const FormatSpec& f, const Fields& x) {
  const uint64_t e = x.exponent, frac = x.fraction;
  const uint64_t e_all = (uint64_t{1} << f.exponent_bits) - 1;
  if (f.nonfinite == NonFinite::kIeee) {
    if (e == e_all) return frac != 0 ? Kind::kNaN : Kind::kInf;
  } else {
    switch (f.nan_encoding) {
      case NanEncoding::kIeee:
        if (e == e_all && frac != 0) return Kind::kNaN;
        break;
      case NanEncoding::kAllOnes:
        if (e == e_all && frac == ((uint64_t{1} << f.fraction_bits) - 1)) return Kind::kNaN;
        break;
      case NanEncoding::kNegativeZero:
        if (x.sign && e == 0 && frac == 0) return Kind::kNaN;
        break;
    }
  }
  if (e == 0 && frac == 0 && f.has_zero) return Kind::kZero;
  return Kind::kFinite;
}

Kind KindOf(const FormatSpec& f, uint64_t bits, bool& sign) {
  const Fields x = FieldsOf(f, bits);
  sign = x.sign;
  return KindOf(f, x);
}

Kind Decode(const FormatSpec& f, uint64_t bits, mpfr_ptr out, bool& sign) {
  const Fields x = FieldsOf(f, bits);
  sign = x.sign;
  const Kind kind = KindOf(f, x);
  if (kind == Kind::kZero) mpfr_set_zero(out, sign ? -1 : 1);
  if (kind != Kind::kFinite) return kind;
  const int fb = f.fraction_bits;
  // value = (e == 0 && subnormals ? frac : 2^fb + frac) * 2^(max(e, 1 if subnormals) - bias - fb)
  uint64_t sig = x.fraction;
  long exp = static_cast<long>(x.exponent) - f.bias - fb;
  if (x.exponent == 0 && f.has_subnormals) {
    exp = 1 - f.bias - fb;
  } else {
    sig |= uint64_t{1} << fb;
  }
  mpfr_set_ui_2exp(out, sig, exp, MPFR_RNDN);  // Exact: sig < 2^(fb+1) <= 2^p <= precision.
  if (sign) mpfr_neg(out, out, MPFR_RNDN);
  return Kind::kFinite;
}

// Exponent of the least significant non-zero bit of finite non-zero v.
long LsbExponent(mpfr_srcptr v) {
  return static_cast<long>(mpfr_get_exp(v)) - static_cast<long>(mpfr_min_prec(v));
}

// out = y - x exactly (both finite), with the precision chosen to hold it.
void ExactDifference(mpfr_srcptr y, mpfr_srcptr x, mpfr_ptr out) {
  if (mpfr_zero_p(y) || mpfr_zero_p(x)) {
    mpfr_srcptr nz = mpfr_zero_p(y) ? x : y;
    mpfr_set_prec(out, std::max<mpfr_prec_t>(mpfr_get_prec(nz), 2));
    if (mpfr_zero_p(y)) {
      mpfr_neg(out, x, MPFR_RNDN);
    } else {
      mpfr_set(out, y, MPFR_RNDN);
    }
    if (mpfr_zero_p(out)) mpfr_set_zero(out, 1);  // 0 - 0 = +0 for the measures.
    return;
  }
  const long top = std::max(static_cast<long>(mpfr_get_exp(y)), static_cast<long>(mpfr_get_exp(x)));
  const long low = std::min(LsbExponent(y), LsbExponent(x));
  mpfr_set_prec(out, static_cast<mpfr_prec_t>(top - low + 2));
  const int t = mpfr_sub(out, y, x, MPFR_RNDN);
  (void)t;  // Exact by the precision above.
}

// The value of y with Inf at 2^(emax+1), in `v`; Kind of y.
Kind MeasureValue(const FormatSpec& f, uint64_t y, mpfr_ptr v) {
  mpfr_set_prec(v, std::max(Precision(f), 2));
  bool sign = false;
  Kind k = Decode(f, y, v, sign);
  if (k == Kind::kInf) mpfr_set_si_2exp(v, sign ? -1 : 1, Emax(f) + 1, MPFR_RNDN);
  if (k == Kind::kNaN) mpfr_set_nan(v);
  return k;
}

// Small RAII holder for scratch MPFR numbers.
using Mpfr = MpfrValue;

// Both infinite-x rules in one place: the error when x is +-Inf (y already decoded to v, its
// kind k). Returns 0 if y is the same infinity, else the sign of y - x times infinity.
double InfiniteXError(Kind k, mpfr_srcptr yv, mpfr_srcptr x) {
  const int sx = mpfr_sgn(x);
  if (k == Kind::kInf && mpfr_sgn(yv) == sx) return 0.0;
  return sx > 0 ? -std::numeric_limits<double>::infinity()
                : std::numeric_limits<double>::infinity();
}

}  // namespace

long UlpExponent(const FormatSpec& f, mpfr_srcptr x) {
  const long p = Precision(f);
  const long emin = Emin(f);
  if (mpfr_zero_p(x)) return emin - p + 1;
  long e = static_cast<long>(mpfr_get_exp(x)) - 1;  // floor(log2|x|): x = 0.1b... * 2^exp.
  if (mpfr_min_prec(x) == 1) --e;                   // Exact power of two: the lower binade.
  return std::max(e, emin) - p + 1;
}

bool ErrorMeasureValue(const FormatSpec& f, uint64_t y, mpfr_ptr out) {
  return MeasureValue(f, y, out) != Kind::kNaN;
}

void UlpErrorExact(const FormatSpec& f, uint64_t y, mpfr_srcptr x, mpfr_ptr out) {
  Mpfr yv;
  const Kind k = MeasureValue(f, y, yv.v);
  if (k == Kind::kNaN || mpfr_nan_p(x)) {
    mpfr_set_prec(out, 2);
    mpfr_set_nan(out);
    return;
  }
  if (mpfr_inf_p(x)) {
    mpfr_set_prec(out, 2);
    mpfr_set_d(out, InfiniteXError(k, yv.v, x), MPFR_RNDN);
    return;
  }
  ExactDifference(yv.v, x, out);
  mpfr_mul_2si(out, out, -UlpExponent(f, x), MPFR_RNDN);  // Exact: a power of two.
}

double UlpError(const FormatSpec& f, uint64_t y, mpfr_srcptr x) {
  Mpfr e;
  UlpErrorExact(f, y, x, e.v);
  return mpfr_get_d(e.v, MPFR_RNDN);
}

double UlpError(const FormatSpec& f, uint64_t y, const ExactAccumulator& x) {
  Mpfr xv;
  x.ToMpfr(xv.v);
  return UlpError(f, y, xv.v);
}

std::optional<int64_t> UlpDistance(const FormatSpec& f, uint64_t a, uint64_t b) {
  auto key = [&f](uint64_t bits) -> std::optional<int64_t> {
    bits &= WidthMask(f);
    if (!IsFloat(f)) {
      if (f.is_signed && f.width < 64 && ((bits >> (f.width - 1)) & 1) != 0) {
        return static_cast<int64_t>(bits) - (int64_t{1} << f.width);  // Two's complement.
      }
      return static_cast<int64_t>(bits);
    }
    bool sign = false;
    if (KindOf(f, bits, sign) == Kind::kNaN) return std::nullopt;
    // The encodings of a sign are ordered by magnitude (zero, subnormals, normals, Inf), so the
    // magnitude field is the rank; -0 has rank 0 like +0.
    const uint64_t enc = bits >> f.pad_bits;
    const int64_t m = static_cast<int64_t>(f.has_sign ? (enc & (SignBit(f) - 1)) : enc);
    return sign ? -m : m;
  };
  std::optional<int64_t> ka = key(a), kb = key(b);
  if (!ka || !kb) return std::nullopt;
  return *kb - *ka;
}

double RelativeError(const FormatSpec& f, uint64_t y, mpfr_srcptr x) {
  Mpfr yv, d;
  const Kind k = MeasureValue(f, y, yv.v);
  if (k == Kind::kNaN || mpfr_nan_p(x)) return std::numeric_limits<double>::quiet_NaN();
  if (mpfr_inf_p(x)) return std::fabs(InfiniteXError(k, yv.v, x));
  if (mpfr_zero_p(x)) return mpfr_zero_p(yv.v) ? 0.0 : std::numeric_limits<double>::infinity();
  ExactDifference(yv.v, x, d.v);
  mpfr_abs(d.v, d.v, MPFR_RNDN);
  Mpfr q;
  mpfr_set_prec(q.v, 64);
  mpfr_div(q.v, d.v, x, MPFR_RNDN);
  return std::fabs(mpfr_get_d(q.v, MPFR_RNDN));
}

double RelativeError(const FormatSpec& f, uint64_t y, const ExactAccumulator& x) {
  Mpfr xv;
  x.ToMpfr(xv.v);
  return RelativeError(f, y, xv.v);
}

double BoundNormalizedError(const FormatSpec& f, uint64_t y, mpfr_srcptr x, mpfr_srcptr abs_sum,
                            const FormatSpec& accumulation) {
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  Mpfr yv, d;
  const Kind k = MeasureValue(f, y, yv.v);
  if (k == Kind::kNaN || mpfr_nan_p(x) || mpfr_nan_p(abs_sum) || mpfr_inf_p(abs_sum)) return kNan;
  if (mpfr_inf_p(x)) return std::fabs(InfiniteXError(k, yv.v, x));
  ExactDifference(yv.v, x, d.v);
  mpfr_abs(d.v, d.v, MPFR_RNDN);
  if (mpfr_zero_p(abs_sum)) {
    return mpfr_zero_p(d.v) ? 0.0 : std::numeric_limits<double>::infinity();
  }
  // |y - x| / (2^-p * S) = |y - x| * 2^p / S.
  mpfr_mul_2si(d.v, d.v, Precision(accumulation), MPFR_RNDN);  // Exact.
  Mpfr q;
  mpfr_div(q.v, d.v, abs_sum, MPFR_RNDN);
  return mpfr_get_d(q.v, MPFR_RNDN);
}

double BoundNormalizedError(const FormatSpec& f, uint64_t y, const ExactAccumulator& x,
                            const ExactAccumulator& abs_sum, const FormatSpec& accumulation) {
  Mpfr xv, sv;
  x.ToMpfr(xv.v);
  abs_sum.ToMpfr(sv.v);
  return BoundNormalizedError(f, y, xv.v, sv.v, accumulation);
}

uint64_t AbsBits(const FormatSpec& f, uint64_t v) {
  if (!f.has_sign) return v;
  bool sign = false;
  if (KindOf(f, v, sign) == Kind::kNaN) return v;
  return v & ~(SignBit(f) << f.pad_bits);
}

ExactAccumulator ExactAbsDot(const FormatSpec& fa, std::span<const uint64_t> a,
                             const FormatSpec& fb, std::span<const uint64_t> b) {
  std::vector<uint64_t> aa(a.size()), bb(b.size());
  for (size_t i = 0; i < a.size(); ++i) aa[i] = AbsBits(fa, a[i]);
  for (size_t i = 0; i < b.size(); ++i) bb[i] = AbsBits(fb, b[i]);
  return ExactDot(fa, aa, fb, bb);
}

ExactAccumulator ExactAbsSum(const FormatSpec& f, std::span<const uint64_t> x) {
  std::vector<uint64_t> xx(x.size());
  for (size_t i = 0; i < x.size(); ++i) xx[i] = AbsBits(f, x[i]);
  return ExactSum(f, xx);
}

}  // namespace fpconform
