// oracles/exact_elements.h.
#include "oracles/exact_elements.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "formats/ops.h"
#include "oracles/mpfr_oracle.h"

namespace fpconform::oracle_internal {

OpResult RoundElem(const ElemExact& e, const FormatSpec& out, const OpEnv& env) {
  const uint64_t nan = MpfrNanBits(out, OpEnv{}, nullptr, nullptr);
  switch (e.kind) {
    case EKind::kNaN:
    case EKind::kUndecided:
      return {nan, 0};
    case EKind::kNegInf: {
      static thread_local MpfrValue v(64);
      if (out.nonfinite == NonFinite::kIeee && out.has_sign) {
        mpfr_set_inf(v, -1);
        return {MpfrEncodeValue(out, v), 0};
      }
      if (!env.saturate || !out.has_sign) return {nan, 0};
      mpfr_set_ui_2exp(v, MaxFiniteSignificand(out), Emax(out) - out.fraction_bits, MPFR_RNDN);
      mpfr_neg(v, v, MPFR_RNDN);
      return {MpfrEncodeValue(out, v), 0};
    }
    case EKind::kZero: {
      if (!out.has_zero) return {nan, kInvalid};
      static thread_local MpfrValue z(64);
      mpfr_set_zero(z, e.neg ? -1 : 1);
      return {MpfrEncodeValue(out, z), 0};
    }
    case EKind::kFinite:
      break;
  }
  return MpfrRoundToFormat(out, e.neg, e.t, e.sticky, env);
}

ExactEnclosure EncloseElem(const ElemExact& e) {
  OpEnv m;
  m.rounding = Rounding::kNearestEven;
  const OpResult nr = RoundElem(e, Float64(), m);
  m.rounding = Rounding::kDownward;
  const OpResult lr = RoundElem(e, Float64(), m);
  m.rounding = Rounding::kUpward;
  const OpResult hr = RoundElem(e, Float64(), m);
  ExactEnclosure r;
  r.nearest = std::bit_cast<double>(nr.bits);
  r.lo = std::bit_cast<double>(lr.bits);
  r.hi = std::bit_cast<double>(hr.bits);
  r.exact = (nr.flags & kInexact) == 0 && !std::isnan(r.nearest);
  return r;
}

void ExactSum(std::span<mpfr_ptr> terms, mpfr_ptr out) {
  mpfr_exp_t hi = 0, lo = 0;
  bool any = false;
  for (mpfr_srcptr t : terms) {
    if (mpfr_zero_p(t)) continue;
    const mpfr_exp_t e = mpfr_get_exp(t);
    const mpfr_exp_t l = e - static_cast<mpfr_exp_t>(mpfr_get_prec(t));
    hi = any ? std::max(hi, e) : e;
    lo = any ? std::min(lo, l) : l;
    any = true;
  }
  if (!any) {
    mpfr_set_prec(out, 64);
    mpfr_set_zero(out, 1);
    return;
  }
  // hi - lo bits hold every term; 64 more hold the carries of up to 2^64 terms.
  mpfr_set_prec(out, static_cast<mpfr_prec_t>(hi - lo) + 70);
  if (mpfr_sum(out, terms.data(), static_cast<unsigned long>(terms.size()), MPFR_RNDN) != 0) {
    std::fprintf(stderr, "ExactSum: inexact\n");
    std::abort();
  }
}

void ExactSum(std::span<mpfr_srcptr> terms, mpfr_ptr out) {
  std::vector<mpfr_ptr> p;
  p.reserve(terms.size());
  for (mpfr_srcptr t : terms) p.push_back(const_cast<mpfr_ptr>(t));  // mpfr_sum only reads them.
  ExactSum(std::span<mpfr_ptr>(p), out);
}

bool DecideElem(mpfr_srcptr lo, mpfr_srcptr hi, bool known_neg, bool zero_neg, ElemExact& e) {
  if (mpfr_equal_p(lo, hi)) {
    if (mpfr_zero_p(lo)) {
      e.kind = EKind::kZero;
      e.neg = zero_neg;
      return true;
    }
    const int tern = mpfr_set(e.t, lo, MPFR_RNDZ);
    e.kind = EKind::kFinite;
    e.neg = mpfr_signbit(lo) != 0;
    e.sticky = tern != 0;
    return true;
  }
  const bool tiny_lo = mpfr_zero_p(lo) || mpfr_get_exp(lo) <= kTinyExp;
  const bool tiny_hi = mpfr_zero_p(hi) || mpfr_get_exp(hi) <= kTinyExp;
  if (tiny_lo && tiny_hi && mpfr_sgn(lo) * mpfr_sgn(hi) >= 0) {
    mpfr_set_ui_2exp(e.t, 1, kTinyExp - 1, MPFR_RNDN);
    if (known_neg) mpfr_neg(e.t, e.t, MPFR_RNDN);
    e.kind = EKind::kFinite;
    e.neg = known_neg;
    e.sticky = true;
    return true;
  }
  if (mpfr_sgn(lo) == 0 || mpfr_sgn(hi) == 0 || (mpfr_sgn(lo) > 0) != (mpfr_sgn(hi) > 0)) {
    return false;
  }
  MpfrValue a(kTruncBits), b(kTruncBits);
  const int t1 = mpfr_set(a, lo, MPFR_RNDZ);
  const int t2 = mpfr_set(b, hi, MPFR_RNDZ);
  if (t1 == 0 || t2 == 0 || !mpfr_equal_p(a, b)) return false;
  mpfr_set(e.t, a, MPFR_RNDN);
  e.kind = EKind::kFinite;
  e.neg = mpfr_sgn(lo) < 0;
  e.sticky = true;
  return true;
}

}  // namespace fpconform::oracle_internal
