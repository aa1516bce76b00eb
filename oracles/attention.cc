#include "oracles/attention.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include <mpfr.h>

#include "base/isa.h"
#include "base/run_workers.h"
#include "oracles/attention_kernels.h"
#include "oracles/certified_double.h"
#include "oracles/exact_elements.h"
#include "oracles/mpfr_oracle.h"
#include "oracles/mpfr_plumbing.h"

namespace fpconform {
namespace {

namespace cd = certified;
using attention_internal::Dots;
using attention_internal::DotsRowMajor;
using attention_internal::ExpEvs;
using attention_internal::HotArgs;
using attention_internal::kDotBlock;
using attention_internal::kKeyTile;
using attention_internal::kPvTile;
using attention_internal::Pv;

using oracle_internal::DecideElem;
using oracle_internal::EKind;
using oracle_internal::ElemExact;
using oracle_internal::EncloseElem;
using oracle_internal::ExactSum;
using oracle_internal::kTruncBits;
using oracle_internal::RoundElem;

constexpr mpfr_prec_t kZivStart = 192;
constexpr mpfr_prec_t kZivCap = mpfr_prec_t{1} << 14;
constexpr int64_t kFastMaxLen = int64_t{1} << 20;  // k u <= 2^-33 for the gamma_k shortcut.
constexpr double kGammaMargin = 1.0 + 0x1p-20;
// Magnitudes the fast path takes (products and squares stay normal binary64 numbers).
constexpr double kFastMin = 0x1p-400, kFastMax = 0x1p400;

// ---- Exact element values (the MPFR method's results). ----

// An exact product of two exact MPFR values.
void ExactMul(mpfr_srcptr a, mpfr_srcptr b, mpfr_ptr out) {
  mpfr_set_prec(out, mpfr_get_prec(a) + mpfr_get_prec(b));
  mpfr_mul(out, a, b, MPFR_RNDN);
}

enum class RowKind : uint8_t { kNormal, kNaN, kFullyMasked };

bool FiniteRow(std::span<const double> x, int64_t row, int64_t n) {
  for (int64_t c = 0; c < n; ++c) {
    if (!std::isfinite(x[static_cast<size_t>(row * n + c)])) return false;
  }
  return true;
}

RowKind Classify(const AttentionProblem& p, int64_t i, std::vector<int64_t>& keys) {
  keys.clear();
  if (!FiniteRow(p.q, i, p.d)) return RowKind::kNaN;
  for (int64_t j = 0; j < p.s_k; ++j) {
    if (!Attended(p, i, j)) continue;
    keys.push_back(j);
    if (!p.additive_mask.empty()) {
      const double m = p.additive_mask[static_cast<size_t>(i * p.s_k + j)];
      if (!std::isfinite(m)) return RowKind::kNaN;  // NaN or +Inf (-Inf is not attended).
    }
    if (!FiniteRow(p.k, j, p.d) || !FiniteRow(p.v, j, p.d_v)) return RowKind::kNaN;
  }
  return keys.empty() ? RowKind::kFullyMasked : RowKind::kNormal;
}

// The scale's kind: a given double, 1/r for d = r^2, or the irrational 1/sqrt(d).
enum class ScaleKind : uint8_t { kGiven, kRational, kIrrational };

struct ScaleInfo {
  ScaleKind kind = ScaleKind::kGiven;
  double given = 0;
  unsigned long root = 0;  // kRational: d = root^2.
};

ScaleInfo Scale(const AttentionProblem& p) {
  ScaleInfo s;
  if (p.scale.has_value()) {
    s.given = *p.scale;
    return s;
  }
  const auto r = static_cast<unsigned long>(std::llround(std::sqrt(static_cast<double>(p.d))));
  for (unsigned long c = r > 0 ? r - 1 : 0; c <= r + 1; ++c) {
    if (c * c == static_cast<unsigned long>(p.d)) {
      s.kind = ScaleKind::kRational;
      s.root = c;
      return s;
    }
  }
  s.kind = ScaleKind::kIrrational;
  return s;
}

// The MPFR method for row i: the elements c with need[c] (all when need is empty) and the LSE
// when need_lse.
absl::Status MpfrRow(const AttentionProblem& p, const ScaleInfo& sc, int64_t i,
                     std::span<const uint8_t> need, bool need_lse, std::vector<ElemExact>& res,
                     ElemExact& lse) {
  const size_t dv = static_cast<size_t>(p.d_v);
  for (size_t c = 0; c < dv; ++c) {
    res[c].kind = (need.empty() || need[c]) ? EKind::kUndecided : EKind::kNaN;
  }
  lse.kind = need_lse ? EKind::kUndecided : EKind::kNaN;
  std::vector<int64_t> keys;
  const RowKind kind = Classify(p, i, keys);
  if (kind == RowKind::kNaN) {
    for (ElemExact& e : res) e.kind = EKind::kNaN;
    lse.kind = EKind::kNaN;
    return absl::OkStatus();
  }
  if (kind == RowKind::kFullyMasked) {
    for (ElemExact& e : res) {
      e.kind = p.fully_masked == FullyMaskedRows::kZero ? EKind::kZero : EKind::kNaN;
      e.neg = false;
    }
    lse.kind = EKind::kNegInf;
    return absl::OkStatus();
  }
  const size_t n = keys.size();
  const size_t dd = static_cast<size_t>(p.d);
  // Exact dots.
  std::vector<MpfrValue> dot(n), prod(dd);
  std::vector<mpfr_ptr> ptrs(dd);
  MpfrValue qa(53), kb(53);
  for (size_t a = 0; a < n; ++a) {
    const int64_t j = keys[a];
    for (size_t c = 0; c < dd; ++c) {
      mpfr_set_d(qa, p.q[static_cast<size_t>(i) * dd + c], MPFR_RNDN);
      mpfr_set_d(kb, p.k[static_cast<size_t>(j) * dd + c], MPFR_RNDN);
      ExactMul(qa, kb, prod[c]);
      ptrs[c] = prod[c];
    }
    ExactSum(ptrs, dot[a]);
  }
  std::vector<double> mask(n, 0.0);
  if (!p.additive_mask.empty()) {
    for (size_t a = 0; a < n; ++a) mask[a] = p.additive_mask[static_cast<size_t>(i * p.s_k + keys[a])];
  }
  // Group keys by equal scores: key (g1, g2) with g1 = scale d + mask (given scale), d + r mask
  // (scale 1/r), or (d, mask) (irrational scale: scale d + mask = scale d' + mask' iff d = d'
  // and mask = mask').
  std::vector<MpfrValue> g1(n), g2(n);
  {
    MpfrValue sv(53), mv(53), t(64);
    for (size_t a = 0; a < n; ++a) {
      mpfr_set_d(mv, mask[a], MPFR_RNDN);
      switch (sc.kind) {
        case ScaleKind::kGiven: {
          mpfr_set_d(sv, sc.given, MPFR_RNDN);
          ExactMul(dot[a], sv, t);
          std::array<mpfr_ptr, 2> two = {t, mv};
          ExactSum(two, g1[a]);
          mpfr_set_zero(g2[a], 1);
          break;
        }
        case ScaleKind::kRational: {
          mpfr_set_prec(t, 53 + 64);
          mpfr_mul_ui(t, mv, sc.root, MPFR_RNDN);  // Exact.
          std::array<mpfr_ptr, 2> two = {dot[a], t};
          ExactSum(two, g1[a]);
          mpfr_set_zero(g2[a], 1);
          break;
        }
        case ScaleKind::kIrrational:
          mpfr_set_prec(g1[a], mpfr_get_prec(dot[a]));
          mpfr_set(g1[a], dot[a], MPFR_RNDN);
          mpfr_set_prec(g2[a], 53);
          mpfr_set(g2[a], mv, MPFR_RNDN);
          break;
      }
    }
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  const auto cmp = [&](size_t a, size_t b) {
    const int c1 = mpfr_cmp(g1[a], g1[b]);
    if (c1 != 0) return c1 < 0;
    return mpfr_cmp(g2[a], g2[b]) < 0;
  };
  std::sort(order.begin(), order.end(), cmp);
  std::vector<std::pair<size_t, size_t>> groups;  // [begin, end) in order.
  for (size_t a = 0; a < n;) {
    size_t b = a + 1;
    while (b < n && !cmp(order[a], order[b]) && !cmp(order[b], order[a])) ++b;
    groups.emplace_back(a, b);
    a = b;
  }
  // Rational elements: every group's mean of V[., c] equal.
  {
    std::vector<MpfrValue> vals(n), gsum(groups.size());
    std::vector<mpfr_ptr> gp;
    MpfrValue l(64), r(64);
    for (size_t c = 0; c < dv; ++c) {
      if (res[c].kind != EKind::kUndecided) continue;
      for (size_t gi = 0; gi < groups.size(); ++gi) {
        gp.clear();
        for (size_t a = groups[gi].first; a < groups[gi].second; ++a) {
          mpfr_set_prec(vals[a], 53);
          mpfr_set_d(vals[a], p.v[static_cast<size_t>(keys[order[a]]) * dv + c], MPFR_RNDN);
          gp.push_back(vals[a]);
        }
        ExactSum(gp, gsum[gi]);
      }
      bool equal = true;
      const auto size0 = static_cast<unsigned long>(groups[0].second - groups[0].first);
      for (size_t gi = 1; gi < groups.size() && equal; ++gi) {
        const auto size = static_cast<unsigned long>(groups[gi].second - groups[gi].first);
        mpfr_set_prec(l, mpfr_get_prec(gsum[gi]) + 64);
        mpfr_set_prec(r, mpfr_get_prec(gsum[0]) + 64);
        mpfr_mul_ui(l, gsum[gi], size0, MPFR_RNDN);  // Exact.
        mpfr_mul_ui(r, gsum[0], size, MPFR_RNDN);
        equal = mpfr_equal_p(l, r) != 0;
      }
      if (!equal) continue;
      if (mpfr_zero_p(gsum[0])) {
        res[c].kind = EKind::kZero;
        res[c].neg = false;
        continue;
      }
      const int tern = mpfr_div_ui(res[c].t, gsum[0], size0, MPFR_RNDZ);
      res[c].kind = EKind::kFinite;
      res[c].neg = mpfr_sgn(gsum[0]) < 0;
      res[c].sticky = tern != 0;
    }
  }
  // A single key's LSE is its score.
  if (lse.kind == EKind::kUndecided && n == 1) {
    MpfrValue t(64);
    bool done = true;
    switch (sc.kind) {
      case ScaleKind::kGiven:
        mpfr_set_prec(t, mpfr_get_prec(g1[0]));
        mpfr_set(t, g1[0], MPFR_RNDN);
        break;
      case ScaleKind::kRational: {
        if (mpfr_zero_p(g1[0])) {
          mpfr_set_zero(t, 1);
        } else {
          mpfr_set_prec(t, kTruncBits);
          const int tern = mpfr_div_ui(t, g1[0], sc.root, MPFR_RNDZ);
          mpfr_set(lse.t, t, MPFR_RNDN);
          lse.kind = EKind::kFinite;
          lse.neg = mpfr_sgn(t) < 0;
          lse.sticky = tern != 0;
          done = false;  // Set already.
        }
        break;
      }
      case ScaleKind::kIrrational:
        if (mpfr_zero_p(dot[0])) {
          mpfr_set_prec(t, 53);
          mpfr_set_d(t, mask[0], MPFR_RNDN);
        } else {
          done = false;  // Irrational: the Ziv loop below.
        }
        break;
    }
    if (done) {
      if (mpfr_zero_p(t)) {
        lse.kind = EKind::kZero;
        lse.neg = false;
      } else {
        const int tern = mpfr_set(lse.t, t, MPFR_RNDZ);
        lse.kind = EKind::kFinite;
        lse.neg = mpfr_sgn(t) < 0;
        lse.sticky = tern != 0;
      }
    }
  }
  const auto undecided = [&] {
    if (lse.kind == EKind::kUndecided) return true;
    for (const ElemExact& e : res) {
      if (e.kind == EKind::kUndecided) return true;
    }
    return false;
  };
  if (!undecided()) return absl::OkStatus();
  // Ziv's loop on intervals.
  std::vector<MpfrValue> slo(n), shi(n), elo(n), ehi(n), tlo(n), thi(n);
  std::vector<mpfr_ptr> los(n), his(n);
  MpfrValue sl(kZivStart), sh(kZivStart), ll(kZivStart), lh(kZivStart), a(kZivStart),
      b(kZivStart), m(53), mv(53);
  bool have_m = false;
  for (mpfr_prec_t w = kZivStart; w <= kZivCap; w *= 2) {
    for (MpfrValue* x : {&sl, &sh, &ll, &lh, &a, &b}) mpfr_set_prec(*x, w);
    switch (sc.kind) {
      case ScaleKind::kGiven:
        mpfr_set_d(sl, sc.given, MPFR_RNDN);
        mpfr_set_d(sh, sc.given, MPFR_RNDN);
        break;
      case ScaleKind::kRational:
        mpfr_set_ui(sl, sc.root, MPFR_RNDN);
        mpfr_ui_div(sh, 1, sl, MPFR_RNDU);
        mpfr_ui_div(sl, 1, sl, MPFR_RNDD);
        break;
      case ScaleKind::kIrrational:
        mpfr_set_ui(sl, static_cast<unsigned long>(p.d), MPFR_RNDN);
        mpfr_rec_sqrt(sh, sl, MPFR_RNDU);
        mpfr_rec_sqrt(sl, sl, MPFR_RNDD);
        break;
    }
    for (size_t j = 0; j < n; ++j) {
      for (MpfrValue* x : {&slo[j], &shi[j], &elo[j], &ehi[j], &tlo[j], &thi[j]}) mpfr_set_prec(*x, w);
      // scale > 0 (checked): the interval of scale * dot by the dot's sign.
      if (mpfr_sgn(dot[j]) >= 0) {
        mpfr_mul(slo[j], dot[j], sl, MPFR_RNDD);
        mpfr_mul(shi[j], dot[j], sh, MPFR_RNDU);
      } else {
        mpfr_mul(slo[j], dot[j], sh, MPFR_RNDD);
        mpfr_mul(shi[j], dot[j], sl, MPFR_RNDU);
      }
      mpfr_set_d(mv, mask[j], MPFR_RNDN);
      mpfr_add(slo[j], slo[j], mv, MPFR_RNDD);
      mpfr_add(shi[j], shi[j], mv, MPFR_RNDU);
    }
    if (!have_m) {  // Any exact shift: the nearest double to the largest lower end.
      double best = -INFINITY;
      for (size_t j = 0; j < n; ++j) best = std::max(best, mpfr_get_d(slo[j], MPFR_RNDN));
      mpfr_set_d(m, best, MPFR_RNDN);
      have_m = true;
    }
    for (size_t j = 0; j < n; ++j) {
      mpfr_sub(tlo[j], slo[j], m, MPFR_RNDD);
      mpfr_sub(thi[j], shi[j], m, MPFR_RNDU);
      mpfr_exp(elo[j], tlo[j], MPFR_RNDD);
      mpfr_exp(ehi[j], thi[j], MPFR_RNDU);
      los[j] = elo[j];
      his[j] = ehi[j];
    }
    mpfr_sum(ll, los.data(), static_cast<unsigned long>(n), MPFR_RNDD);
    mpfr_sum(lh, his.data(), static_cast<unsigned long>(n), MPFR_RNDU);
    bool all = true;
    for (size_t c = 0; c < dv; ++c) {
      if (res[c].kind != EKind::kUndecided) continue;
      for (size_t j = 0; j < n; ++j) {
        const double vj = p.v[static_cast<size_t>(keys[j]) * dv + c];
        mpfr_set_d(mv, vj, MPFR_RNDN);
        if (vj >= 0) {
          mpfr_mul(tlo[j], elo[j], mv, MPFR_RNDD);
          mpfr_mul(thi[j], ehi[j], mv, MPFR_RNDU);
        } else {
          mpfr_mul(tlo[j], ehi[j], mv, MPFR_RNDD);
          mpfr_mul(thi[j], elo[j], mv, MPFR_RNDU);
        }
        los[j] = tlo[j];
        his[j] = thi[j];
      }
      mpfr_sum(a, los.data(), static_cast<unsigned long>(n), MPFR_RNDD);
      mpfr_sum(b, his.data(), static_cast<unsigned long>(n), MPFR_RNDU);
      bool ok = false;
      if (mpfr_sgn(a) >= 0) {
        mpfr_div(a, a, lh, MPFR_RNDD);
        mpfr_div(b, b, ll, MPFR_RNDU);
        ok = DecideElem(a, b, false, false, res[c]);
      } else if (mpfr_sgn(b) <= 0) {
        mpfr_div(a, a, ll, MPFR_RNDD);
        mpfr_div(b, b, lh, MPFR_RNDU);
        ok = DecideElem(a, b, true, false, res[c]);
      }
      if (!ok) all = false;
    }
    if (lse.kind == EKind::kUndecided) {
      mpfr_log(a, ll, MPFR_RNDD);
      mpfr_log(b, lh, MPFR_RNDU);
      mpfr_add(a, a, m, MPFR_RNDD);
      mpfr_add(b, b, m, MPFR_RNDU);
      const bool neg = mpfr_sgn(b) < 0;
      if (!DecideElem(a, b, neg, false, lse)) all = false;
    }
    if (all) return absl::OkStatus();
  }
  return absl::InternalError("attention: the Ziv loop of row " + std::to_string(i) +
                             " reached 2^14 bits");
}

// ---- The binary64 method. ----

struct Shared {
  const AttentionProblem* p = nullptr;
  ScaleInfo sc;
  cd::Ev scale;                    // The scale's Ev.
  std::vector<double> kt;          // K transposed: d x s_k (empty for one block of rows: Dots
                                   // then reads K, DotsRowMajor).
  std::vector<double> knorm;       // Upper bounds of ||k_j||_2.
  std::vector<uint8_t> key_ok;     // K and V rows finite and in the fast magnitude range.
  std::vector<double> vabs;        // |V|.
  double vmax = 0;
  bool fast = true;                // The problem's scale and lengths allow the fast path.
};

bool InFastRange(double x) {
  const double a = std::fabs(x);
  return a == 0 || (a >= kFastMin && a <= kFastMax);
}

// An upper bound on the 2-norm of n doubles in the fast range (sum of squares: relative error
// <= gamma_n <= 2^-31; the square root and product add 2 u: covered by 1 + 2^-30).
double NormUp(const double* x, int64_t n, int64_t stride) {
  double s = 0;
  for (int64_t c = 0; c < n; ++c) s += x[c * stride] * x[c * stride];
  return std::sqrt(s) * (1.0 + 0x1p-30);
}

Shared MakeShared(const AttentionProblem& p, bool transpose) {
  Shared sh;
  sh.p = &p;
  sh.sc = Scale(p);
  switch (sh.sc.kind) {
    case ScaleKind::kGiven:
      sh.scale = cd::Exact(sh.sc.given);
      if (!InFastRange(sh.sc.given)) sh.fast = false;
      break;
    case ScaleKind::kRational:
    case ScaleKind::kIrrational: {
      // 1 / fl(sqrt(d)): two correctly rounded operations, relative error < 2.01 u.
      const double y = 1.0 / std::sqrt(static_cast<double>(p.d));
      sh.scale = cd::Ev{y, y * 0x1p-51};
      break;
    }
  }
  if (p.s_k > kFastMaxLen || p.d > kFastMaxLen) sh.fast = false;
  const size_t sk = static_cast<size_t>(p.s_k), dd = static_cast<size_t>(p.d),
               dv = static_cast<size_t>(p.d_v);
  if (transpose) sh.kt.resize(sk * dd);
  for (size_t j0 = 0; transpose && j0 < sk; j0 += 8) {  // 8 keys at a time: each store fills a cache line.
    const size_t j1 = std::min(sk, j0 + 8);
    for (size_t c = 0; c < dd; ++c) {
      for (size_t j = j0; j < j1; ++j) sh.kt[c * sk + j] = p.k[j * dd + c];
    }
  }
  sh.knorm.resize(sk);
  sh.key_ok.assign(sk, 1);
  sh.vabs.resize(sk * dv);
  double vmax = 0;  // A local: the loops below keep no sum in memory.
  for (size_t j = 0; j < sk; ++j) {
    bool ok = true;
    for (size_t c = 0; c < dd; ++c) ok &= InFastRange(p.k[j * dd + c]);
    for (size_t c = 0; c < dv; ++c) {
      const double x = p.v[j * dv + c], a = std::fabs(x);
      ok &= InFastRange(x);
      sh.vabs[j * dv + c] = a;
      vmax = std::isfinite(x) && a > vmax ? a : vmax;
    }
    sh.key_ok[j] = ok ? 1 : 0;
    sh.knorm[j] = ok ? NormUp(&p.k[j * dd], p.d, 1) : 0;
  }
  sh.vmax = vmax;
  return sh;
}

struct FastScratch {
  std::vector<double> acc;   // rows x s_k: dots, then e_j.
  std::vector<double> err;   // rows x s_k: e_j's error bounds.
  std::vector<double> num, abs;  // rows x d_v.
  std::vector<cd::Ev> lsum;  // rows.
  std::vector<double> rho, n0;  // rows.
  std::vector<double> m;     // rows.
  std::vector<uint8_t> ok;   // rows: the fast path applies.
};

constexpr int64_t kRowBlock = 8;

bool RowFastOk(const Shared& sh, int64_t i) {
  const AttentionProblem& p = *sh.p;
  if (!sh.fast) return false;
  for (int64_t c = 0; c < p.d; ++c) {
    if (!InFastRange(p.q[static_cast<size_t>(i * p.d + c)])) return false;
  }
  int64_t count = 0;
  for (int64_t j = 0; j < p.s_k; ++j) {
    if (!Attended(p, i, j)) continue;
    ++count;
    if (!sh.key_ok[static_cast<size_t>(j)]) return false;
    if (!p.additive_mask.empty() &&
        !InFastRange(p.additive_mask[static_cast<size_t>(i * p.s_k + j)])) {
      return false;
    }
  }
  return count > 0;  // Fully masked rows: the MPFR method's convention.
}

// Rows [r0, r1) (r1 - r0 <= kRowBlock) by the binary64 method; writes the decided elements and
// returns in `need` (per row, d_v + 1 flags: columns, then the LSE) what the MPFR method must
// give; row_mpfr[r] = 1 for rows the fast path does not apply to; abs_missing[r] = 1 for rows
// whose o.abs_enclosure it did not write (when that is wanted).
void FastBlock(const Shared& sh, int64_t r0, int64_t r1, int64_t row_begin,
               const AttentionOutputs& o, FastScratch& s, std::vector<std::vector<uint8_t>>& need,
               std::vector<uint8_t>& row_mpfr, std::vector<uint8_t>& abs_missing) {
  const AttentionProblem& p = *sh.p;
  const int64_t nr = r1 - r0;
  const size_t sk = static_cast<size_t>(p.s_k), dd = static_cast<size_t>(p.d),
               dv = static_cast<size_t>(p.d_v);
  s.acc.assign(static_cast<size_t>(nr) * sk, 0.0);
  s.err.assign(static_cast<size_t>(nr) * sk, 0.0);
  s.num.assign(static_cast<size_t>(nr) * dv, 0.0);
  s.abs.assign(static_cast<size_t>(nr) * dv, 0.0);
  s.lsum.assign(static_cast<size_t>(nr), cd::Ev{});
  s.rho.assign(static_cast<size_t>(nr), 0.0);
  s.n0.assign(static_cast<size_t>(nr), 0.0);
  s.m.assign(static_cast<size_t>(nr), 0.0);
  s.ok.assign(static_cast<size_t>(nr), 0);
  int64_t kend = p.s_k;
  for (int64_t r = 0; r < nr; ++r) {
    s.ok[static_cast<size_t>(r)] = RowFastOk(sh, r0 + r) ? 1 : 0;
    row_mpfr[static_cast<size_t>(r)] = s.ok[static_cast<size_t>(r)] ? 0 : 1;
    abs_missing[static_cast<size_t>(r)] = o.abs_enclosure.empty() ? 0 : 1;
  }
  if (p.causal) kend = std::min<int64_t>(p.s_k, r1);
  // Dots: acc[r][j] = sum_c q[r0 + r][c] K[j][c], key tiles, vectorized along j.
  HotArgs hot{&p.q[static_cast<size_t>(r0) * dd], sh.kt.data(), p.v.data(), sh.vabs.data(), s.ok.data(),
              s.acc.data(), s.num.data(), s.abs.data(), nr, p.s_k, p.d, p.d_v, 0, 0, kend};
  if (sh.kt.empty()) {
    DotsRowMajor(hot, p.k.data());
  } else {
    for (int64_t j0 = 0; j0 < kend; j0 += kKeyTile) {
      hot.j0 = j0;
      hot.j1 = std::min(kend, j0 + kKeyTile);
      Dots(hot);
    }
  }
  // Scores, exponentials, the sum L.
  // The dots' sums: blocked (DotsBody), depth kDotBlock + ceil(d / kDotBlock).
  const double gd = static_cast<double>(kDotBlock + (p.d + kDotBlock - 1) / kDotBlock) * cd::kU * kGammaMargin;
  std::vector<double> exp_in(static_cast<size_t>(kend)), exp_ie(exp_in.size()), exp_y(exp_in.size()),
      exp_e(exp_in.size());
  for (int64_t r = 0; r < nr; ++r) {
    if (!s.ok[static_cast<size_t>(r)]) continue;
    const int64_t i = r0 + r;
    const double qn = NormUp(&p.q[static_cast<size_t>(i) * dd], p.d, 1);
    double* a = &s.acc[static_cast<size_t>(r) * sk];
    double* er = &s.err[static_cast<size_t>(r) * sk];
    double m = -INFINITY;
    int64_t count = 0;
    for (int64_t j = 0; j < kend; ++j) {
      if (!Attended(p, i, j)) {
        a[j] = NAN;  // Marks a masked key below.
        continue;
      }
      ++count;
      cd::Ev sc = cd::Mul(sh.scale, cd::Ev{a[j], gd * qn * sh.knorm[static_cast<size_t>(j)]});
      if (!p.additive_mask.empty()) {
        sc = cd::Add(sc, cd::Exact(p.additive_mask[static_cast<size_t>(i * p.s_k + j)]));
      }
      a[j] = sc.y;
      er[j] = sc.e;
      m = std::max(m, sc.y);
    }
    double lsum = 0, lerr = 0, rho = 0, n0 = 0;
    bool good = std::isfinite(m);
    // The row's exponentials at once (ExpEvs: ExpEv's values and bounds, vectorized; 0 in the
    // lanes whose value is not used), then taken in key order as before.
    if (good) {
      for (int64_t j = 0; j < kend; ++j) {
        const size_t x = static_cast<size_t>(j);
        exp_in[x] = exp_ie[x] = 0;
        if (std::isnan(a[j])) continue;
        const cd::Ev t = cd::Sub(cd::Ev{a[j], er[j]}, cd::Exact(m));
        if (t.y + t.e < -700.0) continue;
        exp_in[x] = t.y;
        exp_ie[x] = t.e;
      }
      ExpEvs(exp_in.data(), exp_ie.data(), exp_y.data(), exp_e.data(), kend);
    }
    for (int64_t j = 0; j < kend && good; ++j) {
      if (std::isnan(a[j])) {
        a[j] = 0;
        er[j] = 0;
        continue;
      }
      const cd::Ev t = cd::Sub(cd::Ev{a[j], er[j]}, cd::Exact(m));
      cd::Ev e;
      if (t.y + t.e < -700.0) {
        e = cd::Ev{0, 0x1p-1000};  // e^t < e^-700 < 2^-1009.
      } else {
        e = cd::Ev{exp_y[static_cast<size_t>(j)], exp_e[static_cast<size_t>(j)]};  // cd::ExpEv(t).
      }
      if (!cd::Ok(e)) {
        good = false;
        break;
      }
      a[j] = e.y;
      er[j] = e.e;
      lsum += e.y;
      lerr += e.e;
      if (e.y > 0) {
        rho = std::max(rho, e.e / e.y);
      } else {
        n0 += 1;
      }
    }
    for (int64_t j = kend; j < p.s_k; ++j) a[j] = 0;
    if (!good) {
      s.ok[static_cast<size_t>(r)] = 0;
      row_mpfr[static_cast<size_t>(r)] = 1;
      continue;
    }
    // rho: the division rounds (relative 2u): inflate.
    s.rho[static_cast<size_t>(r)] = rho * (1.0 + 0x1p-40);
    s.n0[static_cast<size_t>(r)] = n0;
    s.m[static_cast<size_t>(r)] = m;
    s.lsum[static_cast<size_t>(r)] =
        cd::Ev{lsum, lerr + static_cast<double>(count) * cd::kU * kGammaMargin * lsum};
  }
  // N[r][c] = sum_j e_j V[j][c] and A[r][c] = sum_j e_j |V[j][c]|.
  Pv(hot);
  // Decisions.
  // The numerator's sums: blocked (PvBody), depth kPvTile + ceil(s_k / kPvTile).
  const double gk = static_cast<double>(kPvTile + (p.s_k + kPvTile - 1) / kPvTile) * cd::kU * kGammaMargin;
  for (int64_t r = 0; r < nr; ++r) {
    std::vector<uint8_t>& nd = need[static_cast<size_t>(r)];
    nd.assign(dv + 1, 0);
    if (!s.ok[static_cast<size_t>(r)]) continue;
    const size_t orow = static_cast<size_t>(r0 + r - row_begin);
    const cd::Ev L = s.lsum[static_cast<size_t>(r)];
    bool abs_ok = true;
    for (size_t c = 0; c < dv; ++c) {
      const double A = s.abs[static_cast<size_t>(r) * dv + c];
      const double en = s.rho[static_cast<size_t>(r)] * A + s.n0[static_cast<size_t>(r)] * 0x1p-1000 * sh.vmax + gk * A;
      const cd::Ev N{s.num[static_cast<size_t>(r) * dv + c], en};
      if (!o.abs_enclosure.empty()) {
        // The |V| problem's N_c is this A_c (PvBody's b lanes do its n lanes' operations on the
        // same |V|), its error term is en (rho, n0, max|V| and gk are the same), and its L is
        // this L: its enclosure, bit for bit.
        const cd::Ev ya = cd::Div(cd::Ev{A, en}, L);
        if (cd::Ok(ya)) {
          const cd::Interval iva = cd::Enclose(ya);
          o.abs_enclosure[orow * dv + c] = ExactEnclosure{ya.y, iva.lo, iva.hi, false};
        } else {
          abs_ok = false;
        }
      }
      const cd::Ev y = cd::Div(N, L);
      if (!cd::Ok(y)) {
        nd[c] = 1;
        continue;
      }
      const cd::Interval iv = cd::Enclose(y);
      if (!o.enclosure.empty()) o.enclosure[orow * dv + c] = ExactEnclosure{y.y, iv.lo, iv.hi, false};
      if (!o.bits.empty()) {
        OpResult res;
        if (cd::DecideInterval(*o.out, o.env, iv, &res)) {
          o.bits[orow * dv + c] = res.bits;
        } else {
          nd[c] = 1;
        }
      }
    }
    if (!o.lse_bits.empty() || !o.lse_enclosure.empty()) {
      const cd::Ev lg = cd::LogEv(L);
      const cd::Ev lse = cd::Add(cd::Exact(s.m[static_cast<size_t>(r)]), lg);
      if (!cd::Ok(lg) || !cd::Ok(lse)) {
        nd[dv] = 1;
      } else {
        const cd::Interval iv = cd::Enclose(lse);
        if (!o.lse_enclosure.empty()) o.lse_enclosure[orow] = ExactEnclosure{lse.y, iv.lo, iv.hi, false};
        if (!o.lse_bits.empty()) {
          OpResult res;
          if (cd::DecideInterval(*o.lse_format, o.env, iv, &res)) {
            o.lse_bits[orow] = res.bits;
          } else {
            nd[dv] = 1;
          }
        }
      }
    }
    if (abs_ok) abs_missing[static_cast<size_t>(r)] = 0;
  }
}

// The second binary64 tier, for a row the first left undecided: compensated sums (Sum2 with
// SumEv's bound) for the dots, the row sum and each needed numerator, so the bounds scale with u
// instead of gamma_h (every product's own rounding still counts, u |product|). Decides what it
// can among need[0..d_v) (columns) and need[d_v] (the LSE), clearing those flags.
void TightRow(const Shared& sh, int64_t i, int64_t orow, const AttentionOutputs& o, std::vector<uint8_t>& need,
              std::vector<cd::Ev>& terms, std::vector<cd::Ev>& e) {
  const AttentionProblem& p = *sh.p;
  const size_t dd = static_cast<size_t>(p.d), dv = static_cast<size_t>(p.d_v), sk = static_cast<size_t>(p.s_k);
  e.assign(sk, cd::Ev{});
  terms.resize(std::max(dd, sk));
  double m = -INFINITY;
  std::vector<int64_t> keys;
  for (int64_t j = 0; j < p.s_k; ++j) {
    if (!Attended(p, i, j)) continue;
    keys.push_back(j);
    for (size_t c = 0; c < dd; ++c) {
      terms[c] = cd::Mul(cd::Exact(p.q[static_cast<size_t>(i) * dd + c]), cd::Exact(p.k[static_cast<size_t>(j) * dd + c]));
    }
    cd::Ev sc = cd::Mul(sh.scale, cd::SumEv(std::span<const cd::Ev>(terms.data(), dd)));
    if (!p.additive_mask.empty()) sc = cd::Add(sc, cd::Exact(p.additive_mask[static_cast<size_t>(i * p.s_k + j)]));
    e[static_cast<size_t>(j)] = sc;
    m = std::max(m, sc.y);
  }
  if (keys.empty() || !std::isfinite(m)) return;
  for (int64_t j : keys) {
    const cd::Ev t = cd::Sub(e[static_cast<size_t>(j)], cd::Exact(m));
    e[static_cast<size_t>(j)] = t.y + t.e < -700.0 ? cd::Ev{0, 0x1p-1000} : cd::ExpEv(t);
    if (!cd::Ok(e[static_cast<size_t>(j)])) return;
  }
  for (size_t x = 0; x < keys.size(); ++x) terms[x] = e[static_cast<size_t>(keys[x])];
  const cd::Ev L = cd::SumEv(std::span<const cd::Ev>(terms.data(), keys.size()));
  for (size_t c = 0; c < dv; ++c) {
    if (!need[c]) continue;
    for (size_t x = 0; x < keys.size(); ++x) {
      terms[x] = cd::Mul(e[static_cast<size_t>(keys[x])], cd::Exact(p.v[static_cast<size_t>(keys[x]) * dv + c]));
    }
    const cd::Ev y = cd::Div(cd::SumEv(std::span<const cd::Ev>(terms.data(), keys.size())), L);
    if (!cd::Ok(y)) continue;
    const cd::Interval iv = cd::Enclose(y);
    const size_t at = static_cast<size_t>(orow) * dv + c;
    if (!o.bits.empty()) {
      OpResult res;
      if (!cd::DecideInterval(*o.out, o.env, iv, &res)) continue;
      o.bits[at] = res.bits;
    }
    if (!o.enclosure.empty()) o.enclosure[at] = ExactEnclosure{y.y, iv.lo, iv.hi, false};
    need[c] = 0;
  }
  if (need[dv]) {
    const cd::Ev lg = cd::LogEv(L);
    const cd::Ev lse = cd::Add(cd::Exact(m), lg);
    if (!cd::Ok(lg) || !cd::Ok(lse)) return;
    const cd::Interval iv = cd::Enclose(lse);
    if (!o.lse_bits.empty()) {
      OpResult res;
      if (!cd::DecideInterval(*o.lse_format, o.env, iv, &res)) return;
      o.lse_bits[static_cast<size_t>(orow)] = res.bits;
    }
    if (!o.lse_enclosure.empty()) o.lse_enclosure[static_cast<size_t>(orow)] = ExactEnclosure{lse.y, iv.lo, iv.hi, false};
    need[dv] = 0;
  }
}

absl::Status CheckOutputs(const AttentionProblem& p, int64_t row_begin, int64_t row_end,
                          const AttentionOutputs& o) {
  if (absl::Status s = CheckAttention(p); !s.ok()) return s;
  if (row_begin < 0 || row_end < row_begin || row_end > p.s_q) {
    return absl::InvalidArgumentError("attention: rows [" + std::to_string(row_begin) + ", " +
                                      std::to_string(row_end) + ") outside [0, s_q = " +
                                      std::to_string(p.s_q) + "]");
  }
  const size_t rows = static_cast<size_t>(row_end - row_begin);
  const size_t elems = rows * static_cast<size_t>(p.d_v);
  const auto fmt_ok = [](const FormatSpec* f) { return f != nullptr && IsFloat(*f) && Precision(*f) <= 53; };
  if (!o.bits.empty() && (o.bits.size() != elems || !fmt_ok(o.out))) {
    return absl::InvalidArgumentError("attention: bits need (rows x d_v) entries and a float output format of <= 53 bits");
  }
  if (!o.enclosure.empty() && o.enclosure.size() != elems) {
    return absl::InvalidArgumentError("attention: enclosure needs rows x d_v entries");
  }
  if (!o.lse_bits.empty() && (o.lse_bits.size() != rows || !fmt_ok(o.lse_format))) {
    return absl::InvalidArgumentError("attention: lse_bits need one entry per row and a float LSE format of <= 53 bits");
  }
  if (!o.lse_enclosure.empty() && o.lse_enclosure.size() != rows) {
    return absl::InvalidArgumentError("attention: lse_enclosure needs one entry per row");
  }
  if (!o.abs_enclosure.empty() && o.abs_enclosure.size() != elems) {
    return absl::InvalidArgumentError("attention: abs_enclosure needs rows x d_v entries");
  }
  return absl::OkStatus();
}

void WriteMpfr(const AttentionProblem& p, size_t orow, std::span<const uint8_t> need, bool lse_needed,
               const std::vector<ElemExact>& res, const ElemExact& lse, const AttentionOutputs& o) {
  const size_t dv = static_cast<size_t>(p.d_v);
  for (size_t c = 0; c < dv; ++c) {
    if (!need.empty() && !need[c]) continue;
    if (!o.bits.empty()) o.bits[orow * dv + c] = RoundElem(res[c], *o.out, o.env).bits;
    if (!o.enclosure.empty()) o.enclosure[orow * dv + c] = EncloseElem(res[c]);
  }
  if (lse_needed) {
    if (!o.lse_bits.empty()) o.lse_bits[orow] = RoundElem(lse, *o.lse_format, o.env).bits;
    if (!o.lse_enclosure.empty()) o.lse_enclosure[orow] = EncloseElem(lse);
  }
}

}  // namespace

const char* FullyMaskedRowsName(FullyMaskedRows f) {
  return f == FullyMaskedRows::kZero ? "zero" : "nan";
}

absl::Status CheckAttention(const AttentionProblem& p) {
  const auto bad = [](const std::string& m) { return absl::InvalidArgumentError("attention: " + m); };
  if (p.s_q < 0 || p.s_k < 0) return bad("s_q and s_k must be >= 0");
  if (p.d < 1 || p.d_v < 1) return bad("d and d_v must be >= 1");
  const auto sz = [](int64_t a, int64_t b) { return static_cast<size_t>(a) * static_cast<size_t>(b); };
  const auto count = [&](const char* what, const char* dims, size_t want, size_t got) {
    return bad(std::string(what) + " needs " + dims + " = " + std::to_string(want) + " values, got " +
               std::to_string(got));
  };
  if (p.q.size() != sz(p.s_q, p.d)) return count("q", "s_q x d", sz(p.s_q, p.d), p.q.size());
  if (p.k.size() != sz(p.s_k, p.d)) return count("k", "s_k x d", sz(p.s_k, p.d), p.k.size());
  if (p.v.size() != sz(p.s_k, p.d_v)) return count("v", "s_k x d_v", sz(p.s_k, p.d_v), p.v.size());
  if (p.scale.has_value() && !(std::isfinite(*p.scale) && *p.scale != 0)) {
    return bad("the scale must be finite and non-zero, got " + std::to_string(*p.scale));
  }
  if (!p.additive_mask.empty() && !p.keep_mask.empty()) return bad("give an additive or a boolean mask, not both");
  if (!p.additive_mask.empty() && p.additive_mask.size() != sz(p.s_q, p.s_k)) {
    return count("the additive mask", "s_q x s_k", sz(p.s_q, p.s_k), p.additive_mask.size());
  }
  if (!p.keep_mask.empty() && p.keep_mask.size() != sz(p.s_q, p.s_k)) {
    return count("the boolean mask", "s_q x s_k", sz(p.s_q, p.s_k), p.keep_mask.size());
  }
  return absl::OkStatus();
}

absl::Status AttentionRowsMpfr(const AttentionProblem& p, int64_t row_begin, int64_t row_end,
                               const AttentionOutputs& o) {
  if (absl::Status s = CheckOutputs(p, row_begin, row_end, o); !s.ok()) return s;
  const ScaleInfo sc = Scale(p);
  std::vector<ElemExact> res(static_cast<size_t>(p.d_v));
  ElemExact lse;
  const bool want_lse = !o.lse_bits.empty() || !o.lse_enclosure.empty();
  const bool want_o = !o.bits.empty() || !o.enclosure.empty();
  std::vector<uint8_t> none(static_cast<size_t>(p.d_v), want_o ? 1 : 0);
  for (int64_t i = row_begin; i < row_end; ++i) {
    if (absl::Status s = MpfrRow(p, sc, i, none, want_lse, res, lse); !s.ok()) return s;
    WriteMpfr(p, static_cast<size_t>(i - row_begin), none, want_lse, res, lse, o);
  }
  return absl::OkStatus();
}

absl::Status AttentionRows(const AttentionProblem& p, int64_t row_begin, int64_t row_end,
                           const AttentionOutputs& o, AttentionStats* stats, int threads) {
  if (absl::Status s = CheckOutputs(p, row_begin, row_end, o); !s.ok()) return s;
  // One block of rows (the audit's single-row calls): K is read as it is, not transposed.
  const Shared sh = MakeShared(p, row_end - row_begin > kRowBlock);
  const bool want_lse = !o.lse_bits.empty() || !o.lse_enclosure.empty();
  const bool stochastic = o.env.rounding == Rounding::kStochastic;
  const bool fast_formats =
      (o.bits.empty() || ElementaryFastSupported(Float64(), *o.out, o.env)) &&
      (o.lse_bits.empty() || ElementaryFastSupported(Float64(), *o.lse_format, o.env));
  const int64_t blocks = (row_end - row_begin + kRowBlock - 1) / kRowBlock;
  const int t = static_cast<int>(RangeWorkers(blocks, threads));  // No idle worker and its scratch.
  std::vector<AttentionStats> sts(static_cast<size_t>(t));
  std::vector<absl::Status> errs(static_cast<size_t>(t));
  std::vector<int64_t> err_block(static_cast<size_t>(t), -1);
  std::vector<std::vector<int64_t>> abs_rows(static_cast<size_t>(t));  // Rows left for the |V| pass.
  const size_t dv = static_cast<size_t>(p.d_v);
  auto work = [&](int k) {
    AttentionStats& st = sts[static_cast<size_t>(k)];
    FastScratch scratch;
    std::vector<std::vector<uint8_t>> need(static_cast<size_t>(kRowBlock));
    std::vector<uint8_t> row_mpfr(static_cast<size_t>(kRowBlock));
    std::vector<uint8_t> abs_missing(static_cast<size_t>(kRowBlock));
    std::vector<ElemExact> res(dv);
    ElemExact lse;
    std::vector<uint8_t> all(dv, 1);
    std::vector<cd::Ev> tight_terms, tight_e;
    for (int64_t b = k; b < blocks; b += t) {
      const int64_t r0 = row_begin + b * kRowBlock;
      const int64_t r1 = std::min(row_end, r0 + kRowBlock);
      if (fast_formats && !stochastic) {
        FastBlock(sh, r0, r1, row_begin, o, scratch, need, row_mpfr, abs_missing);
      } else {
        std::fill(row_mpfr.begin(), row_mpfr.end(), 1);
        std::fill(abs_missing.begin(), abs_missing.end(), o.abs_enclosure.empty() ? 0 : 1);
      }
      for (int64_t r = 0; r < r1 - r0; ++r) {
        const int64_t i = r0 + r;
        if (abs_missing[static_cast<size_t>(r)]) abs_rows[static_cast<size_t>(k)].push_back(i);
        const size_t orow = static_cast<size_t>(i - row_begin);
        std::span<const uint8_t> nd;
        bool nl = want_lse;
        if (row_mpfr[static_cast<size_t>(r)]) {
          ++st.special_rows;
          nd = all;
        } else {
          std::vector<uint8_t>& v = need[static_cast<size_t>(r)];
          int64_t pending = 0;
          for (size_t c = 0; c <= dv; ++c) pending += v[c];
          if (pending > 0) {  // The compensated tier first.
            if (!want_lse) v[dv] = 0;
            TightRow(sh, i, static_cast<int64_t>(orow), o, v, tight_terms, tight_e);
            ++st.tight_rows;
          }
          int64_t count = 0;
          for (size_t c = 0; c < dv; ++c) count += v[c];
          nl = want_lse && v[dv];
          count += nl ? 1 : 0;
          if (count == 0) {
            ++st.fast_rows;
            continue;
          }
          st.fallback += count;
          nd = std::span<const uint8_t>(v.data(), dv);
        }
        ++st.mpfr_rows;
        if (absl::Status s = MpfrRow(p, sh.sc, i, nd, nl, res, lse); !s.ok()) {
          errs[static_cast<size_t>(k)] = s;
          err_block[static_cast<size_t>(k)] = b;
          return;
        }
        WriteMpfr(p, orow, nd, nl, res, lse, o);
      }
    }
  };
  RunWorkers(t, work);
  int64_t first = -1;
  absl::Status error;
  for (size_t k = 0; k < errs.size(); ++k) {
    if (err_block[k] >= 0 && (first < 0 || err_block[k] < first)) {
      first = err_block[k];
      error = errs[k];
    }
  }
  if (!error.ok()) return error;
  if (stats != nullptr) {
    for (const AttentionStats& s : sts) *stats += s;
  }
  // PV for the rows the fast path left out: the |V| problem's own pass over each run of them
  // (a row's values do not depend on the rows computed with it).
  std::vector<int64_t> rest;
  for (const std::vector<int64_t>& v : abs_rows) rest.insert(rest.end(), v.begin(), v.end());
  std::sort(rest.begin(), rest.end());
  if (!rest.empty()) {
    AttentionProblem pa = p;
    pa.v = sh.vabs;
    for (size_t a = 0; a < rest.size();) {
      size_t b = a + 1;
      while (b < rest.size() && rest[b] == rest[b - 1] + 1) ++b;
      AttentionOutputs oa;
      oa.enclosure = o.abs_enclosure.subspan(static_cast<size_t>(rest[a] - row_begin) * dv, (b - a) * dv);
      if (absl::Status s = AttentionRows(pa, rest[a], rest[a] + static_cast<int64_t>(b - a), oa, nullptr, threads);
          !s.ok()) {
        return s;
      }
      a = b;
    }
  }
  return absl::OkStatus();
}

}  // namespace fpconform
