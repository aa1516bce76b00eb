// The audit pipeline (audit_op.h): classification, tallies, summary, listed elements.
//
// Threads own contiguous element ranges of a block and their tallies are merged in thread order,
// so "the first maximum" is the same for any thread count. Listed elements are recomputed
// afterwards from their element (AuditOp::Exact and EmulateOne), which keeps the hot pass free
// of per-element strings.
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <tuple>

#include "base/run_workers.h"
#include "base/str_cat.h"
#include "formats/ops.h"
#include "oracles/error_measures.h"
#include "reports/audit_op.h"
#include "reports/audit_reduction.h"
#include "reports/audit_values.h"

namespace fpconform::reports {

const char* AuditClassName(AuditClass c) {
  switch (c) {
    case AuditClass::kIdentical:
      return "identical";
    case AuditClass::kWithinBound:
      return "within_bound";
    case AuditClass::kWithinTolerance:
      return "within_tolerance";
    case AuditClass::kUnexplained:
      return "unexplained";
  }
  return "?";
}

const char* AuditVerdictName(AuditVerdict v) { return v == AuditVerdict::kPass ? "pass" : "fail"; }

namespace audit_internal {
namespace {

struct Verdict {
  AuditClass cls = AuditClass::kUnexplained;
  const char* hint = nullptr;  // Why a non-finite case is unexplained.
};

// Classes output y (bits of `out`) against emulated bits `emu` with bound B (both in `out`);
// err = |y - exact| rounded up (finite cases).
Verdict Judge(const FormatSpec& out, uint64_t y, uint64_t emu, double bound, const ExactFacts& x,
              double err, const AuditPlatform& p) {
  Verdict v;
  const bool y_nan = IsNanBits(out, y), emu_nan = IsNanBits(out, emu);
  if (y == emu || (y_nan && emu_nan)) {
    v.cls = AuditClass::kIdentical;
    return v;
  }
  const bool y_nonfinite = IsNonFinite(out, y), emu_nonfinite = IsNonFinite(out, emu);
  if (y_nan) {
    if (x.nan) {
      v.cls = AuditClass::kWithinBound;
    } else {
      v.hint = (!x.inf && !emu_nonfinite) ? "NaN where none is expected: uninitialized memory?"
                                          : "NaN where the exact value is not NaN";
    }
    return v;
  }
  if (y_nonfinite) {  // Inf.
    const bool y_neg = (y & SignBit(out)) != 0;
    if (x.inf && x.negative == y_neg) {
      v.cls = AuditClass::kWithinBound;
    } else {
      v.hint = x.nan ? "Inf where the exact value is NaN (an invalid operation)"
                     : "Inf where the exact value is finite: overflow the platform does not have?";
    }
    return v;
  }
  if (x.nan || x.inf) {
    v.hint = "finite output where the exact value is NaN or Inf";
    return v;
  }
  if (err <= bound) {
    v.cls = AuditClass::kWithinBound;
    return v;
  }
  if (p.has_rec) {
    bool ok = err <= p.rec_atol + p.rec_rtol * std::fabs(x.x);
    if (!ok && p.rec_ulp > 0) ok = std::fabs(UlpError(out, y, x.mp)) <= p.rec_ulp;
    if (ok) v.cls = AuditClass::kWithinTolerance;
  }
  return v;
}

// |y - exact| rounded up (y finite bits of `out`, the exact value finite).
double ErrorOf(const FormatSpec& out, uint64_t y, const ExactFacts& x, Mpfr& yv, Mpfr& d) {
  const double err = ErrorUp(out, y, x.mp, yv, d);
  return x.mp_error > 0 ? (err + x.mp_error) * kUp : err;
}

// The aggregate gate's sums over finite (out, exact) pairs of the primary platform (audit.h
// AuditResult::Aggregate): means and centred (co)moments of exact (x), out (y) and the emulated
// value (m) by Welford's update, merged by Chan et al.'s pairwise formulas, and the plain sums of
// squares of the errors, the bounds and x. Summed per 64-element segment of a block, segments in
// order, so the figures do not depend on the thread count.
struct Agg {
  int64_t n = 0, unbounded = 0, excluded = 0;
  double mx = 0, my = 0, mm = 0, sxx = 0, syy = 0, smm = 0, sxy = 0, sxm = 0;
  double d2 = 0, b2 = 0, e2 = 0, x2 = 0;
  void Add(double x, double y, double m, double err, double bhat) {
    ++n;
    const double inv = 1.0 / static_cast<double>(n);
    const double dx = x - mx, dy = y - my, dm = m - mm;
    mx += dx * inv;
    my += dy * inv;
    mm += dm * inv;
    sxx += dx * (x - mx);
    syy += dy * (y - my);
    smm += dm * (m - mm);
    sxy += dx * (y - my);
    sxm += dx * (m - mm);
    d2 += err * err;
    b2 += bhat * bhat;
    e2 += (m - x) * (m - x);
    x2 += x * x;
  }
  void Merge(const Agg& o) {
    unbounded += o.unbounded;
    excluded += o.excluded;
    if (o.n == 0) return;
    if (n == 0) {
      const int64_t u = unbounded, ex = excluded;
      *this = o;
      unbounded = u;
      excluded = ex;
      return;
    }
    const double na = static_cast<double>(n), nb = static_cast<double>(o.n), nn = na + nb;
    const double dx = o.mx - mx, dy = o.my - my, dm = o.mm - mm, w = na * nb / nn;
    sxx += o.sxx + dx * dx * w;
    syy += o.syy + dy * dy * w;
    smm += o.smm + dm * dm * w;
    sxy += o.sxy + dx * dy * w;
    sxm += o.sxm + dx * dm * w;
    mx += dx * nb / nn;
    my += dy * nb / nn;
    mm += dm * nb / nn;
    n += o.n;
    d2 += o.d2;
    b2 += o.b2;
    e2 += o.e2;
    x2 += o.x2;
  }
};
constexpr int64_t kAggSegment = 64;

struct Tally {
  std::vector<std::array<int64_t, kAuditClasses>> counts;  // Per platform.
  double max_abs = -1, max_abs_allowed = 0;
  int64_t max_abs_e = -1;
  double max_rel = -1, max_rel_allowed = 0;
  int64_t max_rel_e = -1;
  int64_t zeros_ok = 0, perm_ok = 0, finite = 0;
  int64_t nan_outputs = 0;
  double max_exact = 0;  // max |exact| over the finite elements.
};

void Merge(Tally& into, const Tally& t) {
  if (into.counts.empty()) into.counts.resize(t.counts.size());
  for (size_t p = 0; p < t.counts.size(); ++p) {
    for (int c = 0; c < kAuditClasses; ++c) into.counts[p][c] += t.counts[p][c];
  }
  if (t.max_abs > into.max_abs) {
    into.max_abs = t.max_abs;
    into.max_abs_allowed = t.max_abs_allowed;
    into.max_abs_e = t.max_abs_e;
  }
  if (t.max_rel > into.max_rel) {
    into.max_rel = t.max_rel;
    into.max_rel_allowed = t.max_rel_allowed;
    into.max_rel_e = t.max_rel_e;
  }
  into.zeros_ok += t.zeros_ok;
  into.perm_ok += t.perm_ok;
  into.finite += t.finite;
  into.nan_outputs += t.nan_outputs;
  into.max_exact = std::max(into.max_exact, t.max_exact);
}

// A pinned bijection of [0, n) for the permuted-output check: e -> (a e + c) mod n, a coprime
// with n.
struct Shuffle {
  uint64_t n, a, c;
  explicit Shuffle(uint64_t size) : n(std::max<uint64_t>(size, 1)) {
    a = (n / 2) | 1;
    if (a <= 1) a = 1;
    while (std::gcd(a, n) != 1) a += 2;
    c = n / 3;
  }
  uint64_t operator()(uint64_t e) const {
    return static_cast<uint64_t>((static_cast<uint128>(a) * e + c) % n);
  }
};

// The state of a running audit.
class Auditor {
 public:
  // primary: the index of the platform whose classes the result gives.
  Auditor(const AuditOp& op, const AuditOptions& options, size_t primary)
      : op_(op), setup_(op.setup()), options_(options), primary_(primary) {
    const size_t n = static_cast<size_t>(setup_.elements);
    classes_.assign(n, 0);
    ratio_.assign(n, 0.0f);
    if (options_.keep_bounds) {
      bounds_.assign(n, 0.0);
      best_.assign(n, 0);
    }
  }

  // Judges elements [begin, end) given each platform's emulated values for them (emu[p][e -
  // begin]) on worker threads, into the per-element arrays and the running tally.
  void JudgeRange(int64_t begin, int64_t end, const std::vector<std::vector<Emulated>>& emu) {
    const int threads = static_cast<int>(
        std::clamp<int64_t>(options_.threads, 1, std::max<int64_t>(1, (end - begin) / 64)));
    std::vector<Tally> tallies(static_cast<size_t>(threads));
    const int64_t n = end - begin;
    std::vector<Agg> segs(gate_ ? static_cast<size_t>((n + kAggSegment - 1) / kAggSegment) : 0);
    // Thread ranges start at whole segments (from begin), so each segment is one thread's.
    const auto split = [&](int t) {
      return t == threads ? end : begin + std::min(n, n * t / threads / kAggSegment * kAggSegment);
    };
    auto work = [&](int t) { JudgeChunk(split(t), split(t + 1), begin, emu, tallies[static_cast<size_t>(t)], segs); };
    RunWorkers(threads, work);
    for (const Tally& t : tallies) Merge(tally_, t);
    for (const Agg& a : segs) agg_.Merge(a);
  }

  AuditResult Finish();
  // Per platform, the class counts so far.
  const std::vector<std::array<int64_t, kAuditClasses>>& counts() const { return tally_.counts; }

 private:
  void JudgeChunk(int64_t lo, int64_t hi, int64_t begin,
                  const std::vector<std::vector<Emulated>>& emu, Tally& tally, std::vector<Agg>& segs);
  AuditElement Detail(int64_t e, bool diagnose) const;
  void Soundness(AuditResult& r) const;
  void Gate(AuditResult& r) const;

  const AuditOp& op_;
  const AuditSetup& setup_;
  const AuditOptions& options_;
  const size_t primary_;
  std::vector<uint8_t> classes_;
  std::vector<float> ratio_;
  std::vector<double> bounds_;
  std::vector<uint8_t> best_;
  Tally tally_;
  const bool gate_ = op_.AggregateGate();
  Agg agg_;
};

void Auditor::JudgeChunk(int64_t lo, int64_t hi, int64_t begin,
                         const std::vector<std::vector<Emulated>>& emu, Tally& tally, std::vector<Agg>& segs) {
  const size_t np = setup_.platforms.size();
  tally.counts.assign(np, {});
  const std::unique_ptr<OpScratch> scratch = op_.NewScratch();
  Mpfr yv, d;
  const FormatSpec& out = *setup_.out_format;
  const AuditPlatform& p0 = setup_.platforms[primary_];
  const Shuffle shuffle(static_cast<uint64_t>(setup_.elements));
  for (int64_t e = lo; e < hi; ++e) {
    ExactFacts facts;
    op_.Exact(e, true, *scratch, facts);
    const uint64_t y = setup_.out->Bits(e);
    const bool y_finite = !IsNonFinite(out, y);
    double err = INFINITY;
    if (y_finite && !facts.nan && !facts.inf) err = ErrorOf(out, y, facts, yv, d);
    if (IsNanBits(out, y)) ++tally.nan_outputs;
    uint8_t best = kAuditClasses - 1;
    double bmax = 0;
    for (size_t p = 0; p < np; ++p) {
      const Emulated& em = emu[p][static_cast<size_t>(e - begin)];
      const Verdict v = Judge(out, y, em.bits, em.bound, facts, err, setup_.platforms[p]);
      ++tally.counts[p][static_cast<int>(v.cls)];
      best = std::min<uint8_t>(best, static_cast<uint8_t>(v.cls));
      bmax = std::max(bmax, em.bound);
      if (p != primary_) continue;
      classes_[static_cast<size_t>(e)] = static_cast<uint8_t>(v.cls);
      const double r = em.bound > 0 ? err / em.bound : (err > 0 ? INFINITY : 0);
      ratio_[static_cast<size_t>(e)] =
          v.cls == AuditClass::kIdentical ? 0.0f : static_cast<float>(std::isnan(r) ? INFINITY : r);
      if (gate_) {
        Agg& a = segs[static_cast<size_t>((e - begin) / kAggSegment)];
        const double m = ToDouble(out, em.bits);
        if (!y_finite || facts.nan || facts.inf || !std::isfinite(m)) {
          ++a.excluded;
        } else {
          // B_e; an identical element (a conforming output) counts its own error when larger or
          // when it has no bound; any other element without a bound leaves no limit.
          double bhat = std::isfinite(em.bound) ? em.bound : INFINITY;
          if (v.cls == AuditClass::kIdentical) bhat = std::isfinite(bhat) ? std::max(bhat, err) : err;
          if (std::isinf(bhat)) ++a.unbounded;
          a.Add(facts.x, ToDouble(out, y), m, err, bhat);
        }
      }
      if (!y_finite || facts.nan || facts.inf) continue;
      ++tally.finite;
      tally.max_exact = std::max(tally.max_exact, std::fabs(facts.x));
      double allowed = em.bound;
      if (p0.has_rec) allowed = std::max(allowed, p0.rec_atol + p0.rec_rtol * std::fabs(facts.x));
      if (err > tally.max_abs) {
        tally.max_abs = err;
        tally.max_abs_allowed = allowed;
        tally.max_abs_e = e;
      }
      const double rel = facts.x != 0 ? err / std::fabs(facts.x) : (err > 0 ? INFINITY : 0);
      if (rel > tally.max_rel) {
        tally.max_rel = rel;
        tally.max_rel_allowed = facts.x != 0 ? allowed / std::fabs(facts.x) : INFINITY;
        tally.max_rel_e = e;
      }
      if (p0.has_rec) {
        const double tol = p0.rec_atol + p0.rec_rtol * std::fabs(facts.x);
        if (std::fabs(facts.x) <= tol) ++tally.zeros_ok;
        const uint64_t other =
            setup_.out->Bits(static_cast<int64_t>(shuffle(static_cast<uint64_t>(e))));
        if (std::fabs(ToDouble(out, other) - facts.x) <= tol) ++tally.perm_ok;
      }
    }
    if (!bounds_.empty()) {
      bounds_[static_cast<size_t>(e)] = bmax;
      best_[static_cast<size_t>(e)] = best;
    }
  }
}

AuditElement Auditor::Detail(int64_t e, bool diagnose) const {
  AuditElement el;
  el.index = Unflatten(e, setup_.out_shape);
  el.cls = static_cast<AuditClass>(classes_[static_cast<size_t>(e)]);
  const std::unique_ptr<OpScratch> scratch = op_.NewScratch();
  ExactFacts facts;
  op_.Exact(e, false, *scratch, facts);
  const FormatSpec& out = *setup_.out_format;
  const uint64_t y = setup_.out->Bits(e);
  el.actual_bits = y;
  el.actual = ToDouble(out, y);
  el.exact = facts.nan ? "nan" : facts.inf ? (facts.negative ? "-inf" : "inf") : MpfrHex(facts.mp);
  el.exact_value = facts.x;
  const Emulated em = op_.EmulateOne(e, primary_, *scratch);
  el.emulated_bits = em.bits;
  el.emulated = ToDouble(out, em.bits);
  el.bound = em.bound;
  const bool finite = !IsNonFinite(out, y) && !facts.nan && !facts.inf;
  Mpfr yv, d;
  const double err = finite ? ErrorOf(out, y, facts, yv, d) : NAN;
  el.error_ulp = finite ? UlpError(out, y, facts.mp) : NAN;
  el.error_over_bound = !finite ? NAN : em.bound > 0 ? err / em.bound : (err > 0 ? INFINITY : 0);
  el.abs_sum = op_.AbsSum(e, *scratch);
  if (diagnose && el.cls == AuditClass::kUnexplained) {
    const Verdict v = Judge(out, y, em.bits, em.bound, facts, err, setup_.platforms[primary_]);
    el.diagnosis =
        v.hint != nullptr ? v.hint : op_.Diagnose(e, primary_, *scratch, facts, y, em.bound);
  }
  return el;
}

void Auditor::Soundness(AuditResult& r) const {
  const AuditPlatform& p = setup_.platforms[primary_];
  if (!p.has_rec || tally_.finite == 0) return;
  const double n = static_cast<double>(tally_.finite);
  const double zeros = static_cast<double>(tally_.zeros_ok) / n;
  const double perm = static_cast<double>(tally_.perm_ok) / n;
  r.soundness_rates.emplace_back("all_zero_output", zeros);
  r.soundness_rates.emplace_back("permuted_output", perm);
  if (zeros >= 1.0) {
    r.soundness.push_back(Cat("atol ", Num(p.rec_atol), " (rtol ", Num(p.rec_rtol),
                              ") here accepts an all-zero output: max |exact| is ",
                              Num(tally_.max_exact),
                              "; these inputs are too small for the N(0, 1) atol: rely on the "
                              "bound or the ULP tolerance"));
  } else if (zeros > 0) {
    r.soundness.push_back(Cat("the recommended rtol/atol would accept an all-zero output on ",
                              Num(100 * zeros), "% of the elements"));
  }
  if (perm > 0) {
    r.soundness.push_back(Cat("the recommended rtol/atol would accept the output permuted on ",
                              Num(100 * perm), "% of the elements"));
  }
  op_.Mutations(p, r.soundness_rates, r.soundness);
}

void Auditor::Gate(AuditResult& r) const {
  if (!gate_) return;
  AuditResult::Aggregate& g = r.aggregate;
  g.run = true;
  g.platform = setup_.platforms[primary_].name;
  g.elements = agg_.n;
  g.excluded = agg_.excluded;
  g.unbounded = agg_.unbounded;
  const double xn = std::sqrt(agg_.x2);
  g.l2 = std::sqrt(agg_.d2);
  g.l2_limit = agg_.unbounded > 0 ? INFINITY : std::sqrt(agg_.b2);
  g.rel_l2 = g.l2 / xn;
  g.rel_l2_limit = g.l2_limit / xn;
  g.emulated_rel_l2 = std::sqrt(agg_.e2) / xn;
  g.sigma = std::sqrt(agg_.sxx);
  const auto corr = [](double sab, double saa, double sbb) {
    if (!(saa > 0) || !(sbb > 0)) return static_cast<double>(NAN);
    return std::clamp(sab / std::sqrt(saa * sbb), -1.0, 1.0);
  };
  g.correlation = corr(agg_.sxy, agg_.sxx, agg_.syy);
  g.emulated_correlation = corr(agg_.sxm, agg_.sxx, agg_.smm);
  const double t = g.l2_limit / g.sigma;
  g.correlation_limit = g.sigma > 0 && t < 1 ? std::sqrt(1 - t * t) : -1;
  constexpr double kSlack = 0x1p-20;
  std::vector<std::string> why;
  if (agg_.n > 0 && g.l2 > g.l2_limit * (1 + kSlack)) {
    why.push_back(Cat("relative L2 error ", Num(g.rel_l2), " > its limit ", Num(g.rel_l2_limit)));
  }
  if (g.correlation_limit > 0) {
    if (std::isnan(g.correlation)) {
      why.push_back(Cat("the output is constant (no correlation) while the exact output varies (limit ",
                        Num(g.correlation_limit), ")"));
    } else if (g.correlation < g.correlation_limit - kSlack) {
      why.push_back(Cat("correlation ", Num(g.correlation), " < its limit ", Num(g.correlation_limit)));
    }
  }
  g.pass = why.empty();
  g.why = Join(why, "; ");
  if (!g.pass) r.verdict = AuditVerdict::kFail;
}

AuditResult Auditor::Finish() {
  AuditResult r;
  r.op = op_.Name();
  r.k = setup_.k;
  r.out_shape = setup_.out_shape;
  r.out_format = std::string(setup_.out_format->name);
  r.input_format = setup_.input_format;
  r.formula = setup_.formula;
  r.notes = setup_.notes;
  r.provenance = setup_.provenance;
  if (tally_.counts.empty()) tally_.counts.resize(setup_.platforms.size());
  r.best_platform = setup_.platforms[BestPlatform(tally_.counts)].name;
  // The primary platform first, then the others in the order given.
  std::vector<size_t> order = {primary_};
  for (size_t p = 0; p < setup_.platforms.size(); ++p) {
    if (p != primary_) order.push_back(p);
  }
  for (size_t p : order) {
    const AuditPlatform& pl = setup_.platforms[p];
    PlatformAudit pa = PlatformEntry(pl);
    pa.counts = tally_.counts[p];
    r.platforms.push_back(pa);
    r.provenance.emplace_back(Cat("model ", pl.name), pl.hash);
  }
  r.counts = r.platforms[0].counts;
  const int64_t unexplained = r.counts[static_cast<int>(AuditClass::kUnexplained)];
  const int64_t tolerated = r.counts[static_cast<int>(AuditClass::kWithinTolerance)];
  r.mismatched = unexplained + (options_.strict ? tolerated : 0);
  r.verdict = r.mismatched == 0 ? AuditVerdict::kPass : AuditVerdict::kFail;
  Gate(r);
  if (tally_.max_abs >= 0) {
    r.max_abs_diff = tally_.max_abs;
    r.max_abs_allowed = tally_.max_abs_allowed;
    r.max_abs_index = Unflatten(tally_.max_abs_e, setup_.out_shape);
    r.max_rel_diff = tally_.max_rel;
    r.max_rel_allowed = tally_.max_rel_allowed;
    r.max_rel_index = Unflatten(tally_.max_rel_e, setup_.out_shape);
  }
  if (tally_.nan_outputs > 0) {
    r.notes.push_back(Cat(tally_.nan_outputs, " output element(s) are NaN"));
  }
  const int64_t elements = setup_.elements;
  const auto is_unexplained = [&](int64_t e) {
    return classes_[static_cast<size_t>(e)] == static_cast<uint8_t>(AuditClass::kUnexplained);
  };
  // Listed elements: every unexplained one first (C order), then the worst of the others.
  const int64_t max_listed = std::max(0, options_.max_listed);
  std::vector<int64_t> listed;
  for (int64_t e = 0; e < elements && static_cast<int64_t>(listed.size()) < max_listed; ++e) {
    if (is_unexplained(e)) listed.push_back(e);
  }
  if (static_cast<int64_t>(listed.size()) < max_listed) {
    std::vector<int64_t> others;
    for (int64_t e = 0; e < elements; ++e) {
      if (!is_unexplained(e) && ratio_[static_cast<size_t>(e)] > 0) others.push_back(e);
    }
    const size_t want = std::min(others.size(), static_cast<size_t>(max_listed) - listed.size());
    std::partial_sort(others.begin(), others.begin() + static_cast<std::ptrdiff_t>(want),
                      others.end(), [&](int64_t x, int64_t y) {
                        const float rx = ratio_[static_cast<size_t>(x)];
                        const float ry = ratio_[static_cast<size_t>(y)];
                        return rx != ry ? rx > ry : x < y;
                      });
    listed.insert(listed.end(), others.begin(), others.begin() + static_cast<std::ptrdiff_t>(want));
  }
  for (int64_t e : listed) r.elements.push_back(Detail(e, true));
  r.unexplained_total = unexplained;
  if (options_.all_unexplained) {
    size_t next_listed = 0;
    for (int64_t e = 0;
         e < elements && static_cast<int64_t>(r.unexplained.size()) < kMaxUnexplainedDetails; ++e) {
      if (!is_unexplained(e)) continue;
      // The listed ones are already computed (they come first, in the same order).
      if (next_listed < listed.size() && listed[next_listed] == e) {
        r.unexplained.push_back(r.elements[next_listed++]);
      } else {
        r.unexplained.push_back(
            Detail(e, static_cast<int64_t>(r.unexplained.size()) < kMaxDiagnosed));
      }
    }
    if (unexplained > static_cast<int64_t>(r.unexplained.size())) {
      r.notes.push_back(Cat("elements.csv lists the first ", r.unexplained.size(), " of ",
                            unexplained, " unexplained elements"));
    }
  }
  Soundness(r);
  // Mismatch map and histogram.
  const int64_t cols =
      setup_.out_shape.empty() ? 1 : std::max<int64_t>(1, setup_.out_shape.back());
  const int64_t rows = elements / std::max<int64_t>(1, cols);
  r.map_rows = rows;
  r.map_cols = cols;
  r.map_cell_rows = std::max<int64_t>(1, (rows + 255) / 256);
  r.map_cell_cols = std::max<int64_t>(1, (cols + 255) / 256);
  const int64_t mr = rows > 0 ? (rows + r.map_cell_rows - 1) / r.map_cell_rows : 0;
  const int64_t mc = (cols + r.map_cell_cols - 1) / r.map_cell_cols;
  r.map.assign(static_cast<size_t>(mr * mc), 0.0f);
  r.histogram.assign(34, 0);
  for (int64_t e = 0; e < elements; ++e) {
    const float v = ratio_[static_cast<size_t>(e)];
    float& cell = r.map[static_cast<size_t>((e / cols) / r.map_cell_rows * mc +
                                            (e % cols) / r.map_cell_cols)];
    if (!(v <= cell)) cell = v;  // NaN wins.
    if (classes_[static_cast<size_t>(e)] == static_cast<uint8_t>(AuditClass::kIdentical)) continue;
    if (!(v > 0)) {
      ++r.histogram[0];
    } else if (std::isinf(v)) {
      ++r.histogram[33];
    } else {
      const double l = std::log10(static_cast<double>(v));
      const int bin = static_cast<int>(std::floor((l + 8) * 2));
      ++r.histogram[static_cast<size_t>(std::clamp(bin + 1, 0, 33))];
    }
  }
  r.classes = std::move(classes_);
  r.bounds = std::move(bounds_);
  r.best_classes = std::move(best_);
  return r;
}

// One pass of the audit over every element into `auditor`; label: the progress phase.
absl::Status Pass(AuditOp& op, const AuditOptions& options, const std::string& label,
                  Auditor& auditor) {
  const AuditSetup& s = op.setup();
  const int64_t unit = std::max<int64_t>(1, s.progress_unit);
  std::vector<std::vector<Emulated>> emu(s.platforms.size());
  for (int64_t e0 = 0, e1 = 0; e0 < s.elements; e0 = e1) {
    e1 = std::min(s.elements, op.BlockEnd(e0));
    if (absl::Status st = op.EmulateBlock(e0, e1, emu); !st.ok()) return st;
    auditor.JudgeRange(e0, e1, emu);
    if (options.progress) options.progress(e1 / unit, s.elements / unit, label);
    if (options.cancelled && options.cancelled()) return absl::CancelledError("interrupted");
  }
  return absl::OkStatus();
}

}  // namespace

PlatformAudit PlatformEntry(const AuditPlatform& p) {
  PlatformAudit pa;
  pa.name = p.name;
  pa.rec_rtol = p.rec_rtol;
  pa.rec_atol = p.rec_atol;
  pa.rec_ulp = p.rec_ulp;
  pa.rec_bn = p.rec_bn;
  pa.model_hash = p.hash;
  return pa;
}

size_t BestPlatform(const std::vector<std::array<int64_t, kAuditClasses>>& counts) {
  const auto key = [](const std::array<int64_t, kAuditClasses>& c) {
    const int64_t identical = c[static_cast<int>(AuditClass::kIdentical)];
    const int64_t explained = identical + c[static_cast<int>(AuditClass::kWithinBound)];
    return std::tuple{c[static_cast<int>(AuditClass::kUnexplained)] == 0, identical, explained};
  };
  size_t best = 0;
  for (size_t p = 1; p < counts.size(); ++p) {
    if (key(counts[p]) > key(counts[best])) best = p;
  }
  return best;
}

// The audit, then the fit for the reduction ops (matmul, sum: audit_fit.cc, AUDIT.md "Fit").
static absl::StatusOr<AuditResult> RunAuditOnly(AuditOp& op, const AuditOptions& options);

absl::StatusOr<AuditResult> RunAudit(AuditOp& op, const AuditOptions& options) {
  absl::StatusOr<AuditResult> r = RunAuditOnly(op, options);
  if (!r.ok()) return r;
  if (const auto* reduction = dynamic_cast<const ReductionOp*>(&op)) {
    if (absl::Status s = reduction->Fit(*r); !s.ok()) return s;
  }
  return r;
}

static absl::StatusOr<AuditResult> RunAuditOnly(AuditOp& op, const AuditOptions& options) {
  const AuditSetup& s = op.setup();
  auto first = std::make_unique<Auditor>(op, options, 0);
  if (absl::Status st = Pass(op, options, s.progress_label, *first); !st.ok()) return st;
  const bool choose = !options.platforms.empty() && options.platforms[0] == "auto";
  const size_t best = choose ? BestPlatform(first->counts()) : 0;
  if (best == 0) return first->Finish();
  first.reset();
  Auditor second(op, options, best);
  const std::string label = Cat(s.progress_label, " (again, against ", s.platforms[best].name,
                                ", the best-explaining preset)");
  if (absl::Status st = Pass(op, options, label, second); !st.ok()) return st;
  return second.Finish();
}

}  // namespace audit_internal
}  // namespace fpconform::reports
