#include "reports/audit_values.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "base/str_cat.h"
#include "formats/ops.h"
#include "oracles/error_measures.h"
#include "reports/report.h"

namespace fpconform::reports::audit_internal {

bool IsNonFinite(const FormatSpec& f, uint64_t bits) {
  if (f.kind == FormatKind::kInteger) return false;
  const FloatClass c = Classify(f, bits);
  return c == FloatClass::kSignalingNan || c == FloatClass::kQuietNan ||
         c == FloatClass::kNegativeInfinity || c == FloatClass::kPositiveInfinity;
}

std::string MpfrHex(mpfr_srcptr x) {
  if (mpfr_nan_p(x)) return "nan";
  if (mpfr_inf_p(x)) return mpfr_sgn(x) > 0 ? "inf" : "-inf";
  char* s = nullptr;
  mpfr_asprintf(&s, "%Ra", x);
  std::string r = s != nullptr ? s : "?";
  mpfr_free_str(s);
  return r;
}

std::string Num(double v) { return FormatSignificant(v, 6); }

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += Cat(i ? ", " : "", shape[i]);
  return s + "]";
}

std::vector<int64_t> Unflatten(int64_t e, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] > 0 ? e % shape[d] : 0;
    e = shape[d] > 0 ? e / shape[d] : 0;
  }
  return index;
}

bool Relation::Holds(double r, double factor) const {
  return std::isfinite(r) &&
         std::fabs(y_ - r) <=
             (slack_ * std::fabs(factor) + HalfUlpAt(out_, std::fabs(r))) * (1 + 0x1p-40);
}

std::string Relation::PowerOfTwo(double x) const {
  for (int k = 1; k <= 8; ++k) {
    if (Holds(std::ldexp(x, k), std::ldexp(1.0, k))) {
      return Cat("off by a factor of 2^", k, k == 1 ? " (doubled)" : "");
    }
    if (Holds(std::ldexp(x, -k), std::ldexp(1.0, -k))) {
      return Cat("off by a factor of 2^-", k, k == 1 ? " (halved)" : "");
    }
  }
  return "";
}

std::string Relation::ZeroOrSignFlip(double ex, std::string_view negated) const {
  if (!Nonzero(ex)) return "";
  if (y_ == 0) return "zero where the exact value is not: element not written?";
  if (Holds(-ex)) return Cat("sign flipped (out = -", negated, ")");
  return "";
}

std::string Relation::PowerOfTwoOrNone(double ex) const {
  if (Nonzero(ex)) {
    if (std::string p2 = PowerOfTwo(ex); !p2.empty()) return p2;
  }
  return "no simple relation found";
}

double ErrorUp(const FormatSpec& out, uint64_t y, mpfr_srcptr x, Mpfr& yv, Mpfr& d) {
  ErrorMeasureValue(out, y, yv.v);
  mpfr_sub(d.v, yv.v, x, MPFR_RNDA);
  return std::fabs(mpfr_get_d(d.v, MPFR_RNDA));
}

}  // namespace fpconform::reports::audit_internal
