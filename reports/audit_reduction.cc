// Matmul and sum in the audit pipeline: what the two reductions share (audit_reduction.h).
#include "reports/audit_reduction.h"

#include <mpfr.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "accumulation/epilogue.h"
#include "accumulation/evaluate.h"
#include "base/data_dir.h"
#include "base/str_cat.h"
#include "base/user_file.h"
#include "cases/pinned_random.h"
#include "formats/ops.h"
#include "oracles/error_measures.h"
#include "reports/mutations.h"
#include "reports/sweep.h"

namespace fpconform::reports {
namespace audit_internal {
namespace {

bool HasOp(const Model& m, bool sum) { return m.Supports(sum ? ModelOp::kSum : ModelOp::kMatmul); }

// The sweep file that gives the tolerance rule its seed and factor (the standard one by default).
absl::StatusOr<SweepSpec> LoadRuleSpec(const AuditOptions& options) {
  return LoadSweepSpec(options.sweep_file.empty() ? SourceDataPath(DataItem::kStandardSweep)
                                                 : options.sweep_file);
}

// The tolerance report's recommendation for one platform at this K: the rule of its row on
// options.tolerance_samples N(0, 1) samples (PlatformTolerance, reports/sweep.h).
absl::Status Recommend(AuditPlatform& p, const Model& model, bool sum, int64_t k,
                       const SweepSpec& spec, const AuditOptions& options) {
  const ModelOp op = sum ? ModelOp::kSum : ModelOp::kMatmul;
  const ToleranceQuery query{.op = op,
                             .dtype = SweepDtypeOf(spec, model, op),
                             .distribution = "normal",
                             .k = k,
                             .samples = std::max(8, options.tolerance_samples)};
  absl::StatusOr<ToleranceRule> rule =
      PlatformTolerance(spec, model, query, std::max(1, options.threads));
  if (!rule.ok()) return rule.status();
  p.rec_rtol = rule->rtol;
  p.rec_atol = rule->atol;
  p.rec_ulp = rule->ulp;
  p.rec_bn = rule->bn;
  p.has_rec = true;
  return absl::OkStatus();
}

}  // namespace

struct ReductionOp::Scratch : OpScratch {
  ExactAccumulator acc;
  Mpfr x;
  std::vector<uint64_t> a, b;  // Read's operands (when the view is not used).
  std::span<const uint64_t> as, bs;
  uint64_t c = 0;
  std::vector<uint64_t> sx, sy;  // ScaledOperands (operands_scaled_).
};

bool ReductionOp::View(int64_t, std::span<const uint64_t>&, std::span<const uint64_t>&,
                       uint64_t&) const {
  return false;
}
bool ReductionOp::CertifiedExact(int64_t, ExactAccumulator&) const { return false; }
double ReductionOp::Scale(int64_t) const { return 1; }
BlockScales ReductionOp::ElementBlockScales(int64_t) const { return {}; }
bool ReductionOp::FastScaledExact(int64_t, ExactAccumulator&) const { return false; }
void ReductionOp::ScaledOperands(int64_t, std::span<const uint64_t>, std::span<const uint64_t>,
                                 std::vector<uint64_t>& x, std::vector<uint64_t>& y) const {
  x.clear();
  y.clear();
}
double ReductionOp::ScaleA(int64_t) const { return 1; }
double ReductionOp::ScaleB(int64_t) const { return 1; }
std::optional<double> ReductionOp::TransposedB(int64_t, std::span<const uint64_t>) const {
  return std::nullopt;
}
std::optional<double> ReductionOp::TransposedA(int64_t, std::span<const uint64_t>) const {
  return std::nullopt;
}

absl::Status ReductionOp::ResolvePlatforms(const std::vector<std::string>& names,
                                           const FormatSpec* fa, const FormatSpec* fb) {
  const bool sum = sum_;
  auto add = [&](const Model* m) {
    for (const AuditPlatform& p : setup_.platforms) {
      if (p.name == m->name) return;
    }
    AuditPlatform p;
    p.name = m->name;
    p.hash = TextFileHash(Cat(catalog_.dir(), "/", m->name, ".toml"));
    setup_.platforms.push_back(std::move(p));
    models_.push_back(m);
  };
  if (names.empty()) {
    return absl::InvalidArgumentError(
        "no platform given: name one or more (--platform P[,P...]) or 'auto'; see `fpconform "
        "models`");
  }
  for (const std::string& name : names) {
    if (name == "auto") {
      for (const std::string& n : catalog_.Names()) {
        if (catalog_.IsEnvelope(n)) continue;
        const absl::StatusOr<Model>& m = catalog_.Find(n);
        if (!m.ok() || !HasOp(*m, sum)) continue;
        if (m->inputs.a != fa || (!sum && &m->InputB() != fb)) continue;
        add(&*m);
      }
      continue;
    }
    absl::StatusOr<std::vector<const Model*>> models = catalog_.Expand(name);
    if (!models.ok()) {
      return absl::InvalidArgumentError(Cat("--platform: ", models.status().message()));
    }
    for (const Model* m : *models) {
      if (!HasOp(*m, sum)) {
        return absl::InvalidArgumentError(Cat("--platform: model '", m->name, "' has no ",
                                              sum ? "sum" : "matmul", " operation"));
      }
      add(m);
    }
  }
  if (setup_.platforms.empty()) {
    return absl::InvalidArgumentError(
        Cat("--platform auto: no preset takes ", fa != nullptr ? fa->name : "?",
            sum ? "" : " x ", sum || fb == nullptr ? "" : fb->name, " inputs for ",
            sum ? "sum" : "matmul", " (see `fpconform models`)"));
  }
  return absl::OkStatus();
}

void ReductionOp::RecommendAll() {
  if (!options_.recommend) return;
  const int64_t k = setup_.k;
  const absl::StatusOr<SweepSpec> spec = LoadRuleSpec(options_);
  for (size_t i = 0; i < setup_.platforms.size(); ++i) {
    AuditPlatform& p = setup_.platforms[i];
    if (options_.progress) options_.progress(0, 1, Cat("tolerance rule for ", p.name, " at K=", k));
    const absl::Status s =
        spec.ok() ? Recommend(p, *models_[i], sum_, k, *spec, options_) : spec.status();
    if (!s.ok()) {
      setup_.notes.push_back(Cat("no tolerance recommendation for ", p.name, ": ", s.message()));
    }
  }
}

void ReductionOp::NoteOutputConversion(const Model& m0, const std::string& model_writes) {
  if (&m0.OutputFormat() == setup_.out_format) return;
  setup_.notes.push_back(Cat("the output is ", setup_.out_format->name, " while ", m0.name,
                             " writes ", model_writes, ": emulated values converted with ",
                             RoundingName(out_rounding_),
                             " and bounds widened by that conversion"));
}

Emulated ReductionOp::PostProcess(size_t p, int64_t e, uint64_t model_bits, double model_bound,
                                  const uint64_t* c_bits) const {
  const EpilogueScales scales{ScaleA(e), ScaleB(e)};
  const EpilogueValue v = ApplyEpilogue(*models_[p], model_bits, model_bound, scaled_ ? &scales : nullptr,
                                        *setup_.out_format, out_rounding_, c_bits);
  return Emulated{v.bits, v.bound};
}

std::unique_ptr<OpScratch> ReductionOp::NewScratch() const { return std::make_unique<Scratch>(); }

void ReductionOp::Exact(int64_t e, bool in_block, OpScratch& scratch, ExactFacts& facts) const {
  Scratch& s = static_cast<Scratch&>(scratch);
  if (!in_block || !View(e, s.as, s.bs, s.c)) {
    Read(e, s.a, s.b, s.c);
    s.as = s.a;
    s.bs = s.b;
  }
  ExactAccumulator& acc = s.acc;
  if (!CertifiedExact(e, acc)) {
    acc.Reset();
    if (sum_) {
      acc.AddSum(*fa_, s.as);
    } else if (operands_scaled_) {
      if (!in_block || !FastScaledExact(e, acc)) {
        acc.Reset();
        ScaledOperands(e, s.as, s.bs, s.sx, s.sy);
        acc.AddDot(Float64(), s.sx, Float64(), s.sy);
      }
    } else {
      acc.AddDot(*fa_, s.as, *fb_, s.bs);
    }
  }
  // c: unscaled with operands_scaled_ (block scales, after_scale); else scaled with the sum below.
  if (c_format_ != nullptr) acc.Add(*c_format_, s.c);
  facts = ExactFacts{};
  facts.nan = acc.IsNan();
  facts.inf = acc.IsInf();
  facts.negative = acc.Sign() < 0;
  if (facts.nan || facts.inf) {
    facts.x = facts.nan ? NAN : (facts.negative ? -INFINITY : INFINITY);
    return;
  }
  acc.ToMpfr(s.x.v);
  if (scaled_ && !operands_scaled_) {
    mpfr_prec_round(s.x.v, mpfr_get_prec(s.x.v) + 60, MPFR_RNDN);  // Exact: widening.
    mpfr_mul_d(s.x.v, s.x.v, Scale(e), MPFR_RNDN);                 // Exact: 53 more bits fit.
  }
  facts.x = mpfr_get_d(s.x.v, MPFR_RNDN);
  facts.mp = s.x.v;
}

Emulated ReductionOp::EmulateOne(int64_t e, size_t p, OpScratch& scratch) const {
  const Scratch& s = static_cast<const Scratch&>(scratch);
  EvalOptions eo;
  absl::StatusOr<EvalResult> r =
      sum_            ? EvaluateSum(*models_[p], s.as, s.c, eo)
      : block_scaled_ ? EvaluateBlockScaledDot(*models_[p], s.as, s.bs, ElementBlockScales(e), s.c, eo)
      : c_after_scale_ ? EvaluateDot(EvalModel(p), s.as, s.bs, 0, eo)
                       : EvaluateDot(*models_[p], s.as, s.bs, s.c, eo);
  return r.ok() ? PostProcess(p, e, r->bits, r->bound, c_after_scale_ ? &s.c : nullptr) : Emulated{};
}

double ReductionOp::AbsSum(int64_t e, OpScratch& scratch) const {
  Scratch& s = static_cast<Scratch&>(scratch);
  if (operands_scaled_) ScaledOperands(e, s.as, s.bs, s.sx, s.sy);
  ExactAccumulator abs = sum_               ? ExactAbsSum(*fa_, s.as)
                         : operands_scaled_ ? ExactAbsDot(Float64(), s.sx, Float64(), s.sy)
                                            : ExactAbsDot(*fa_, s.as, *fb_, s.bs);
  if (!abs.IsFinite()) return INFINITY;
  Mpfr v;
  abs.ToMpfr(v.v);
  return mpfr_get_d(v.v, MPFR_RNDU) * (operands_scaled_ ? 1.0 : std::fabs(Scale(e)));
}

std::string ReductionOp::Diagnose(int64_t e, size_t p, OpScratch& scratch,
                                  const ExactFacts& facts, uint64_t y, double bound) const {
  Scratch& sc = static_cast<Scratch&>(scratch);
  // Scaled operands (operands_scaled_): the relations below are tried on them (float64, exact).
  if (operands_scaled_) ScaledOperands(e, sc.as, sc.bs, sc.sx, sc.sy);
  const std::span<const uint64_t> a = operands_scaled_ ? std::span<const uint64_t>(sc.sx) : sc.as;
  const std::span<const uint64_t> b = operands_scaled_ ? std::span<const uint64_t>(sc.sy) : sc.bs;
  const FormatSpec& out = *setup_.out_format;
  const double yd = ToDouble(out, y), x = facts.x;
  const double s = operands_scaled_ ? 1.0 : Scale(e);  // Scaled operands carry their scales.
  const Relation rel(out, yd, bound);
  const auto holds = [&](double r) { return rel.Holds(r); };
  const bool nonzero = std::fabs(x) > bound;
  if (nonzero && yd == 0) return "zero where the exact value is not: element not written?";
  if (nonzero && holds(-x)) return "sign flipped (out = -exact)";
  // Scales first: a power-of-two scale forgotten is also "off by a power of two", and the scale
  // is the better explanation.
  if (scaled_ && !operands_scaled_ && nonzero) {
    const double sa = ScaleA(e), sb = ScaleB(e);
    if (sa != 1 && rel.Holds(x / sa, 1 / sa)) return "FP8 scale_a missing (out = exact / scale_a)";
    if (sb != 1 && rel.Holds(x / sb, 1 / sb)) return "FP8 scale_b missing (out = exact / scale_b)";
    if (rel.Holds(x / s, 1 / s)) return "both scales missing (out = exact / (scale_a scale_b))";
  }
  // Block scales left out: the kernel ran the model's chain on the unscaled products, whose error
  // is bounded by that chain's own bound (the model evaluated with every scale 1), not by the
  // scaled output's. Tried also where the exact value lies within the bound of zero (the guard of
  // the relations around the exact value): the unscaled sum is another value, 1 / scale times as
  // large. E.g. an exact 0.0776 with a bound of 0.134, the output 9.875, the unscaled sum 9.9375
  // (chain bound 17.2).
  if (block_scaled_) {
    ExactAccumulator unscaled;
    unscaled.AddDot(*fa_, sc.as, *fb_, sc.bs);
    if (c_format_ != nullptr) unscaled.Add(*c_format_, sc.c);
    if (unscaled.IsFinite()) {
      const absl::StatusOr<EvalResult> chain =
          EvaluateDot(*models_[p], sc.as, sc.bs, sc.c, EvalOptions{});
      Mpfr v;
      unscaled.ToMpfr(v.v);
      if (chain.ok() && Relation(out, yd, chain->bound).Holds(mpfr_get_d(v.v, MPFR_RNDN))) {
        return "block scales not applied (out = the unscaled sum_k A[i,k] B[k,j])";
      }
    }
  }
  if (nonzero) {
    if (std::string p2 = rel.PowerOfTwo(x); !p2.empty()) return p2;
  }
  const int64_t k = setup_.k;
  const FormatSpec& fa = operands_scaled_ ? Float64() : *fa_;
  const FormatSpec* fb = operands_scaled_ ? &Float64() : fb_;
  auto partial = [&](int64_t t0, int64_t t1) {
    const std::span<const uint64_t> ta = a.subspan(static_cast<size_t>(t0), static_cast<size_t>(t1 - t0));
    ExactAccumulator acc;
    if (fb == nullptr) {
      acc.AddSum(fa, ta);
    } else {
      acc.AddDot(fa, ta, *fb, b.subspan(static_cast<size_t>(t0), static_cast<size_t>(t1 - t0)));
    }
    if (!acc.IsFinite()) return 0.0;
    Mpfr v;
    acc.ToMpfr(v.v);
    return mpfr_get_d(v.v, MPFR_RNDN) * s;
  };
  std::vector<int64_t> tiles = {16, 32, 64, 128, 256, 512};
  if (models_[p]->chain.block > 0) tiles.push_back(models_[p]->chain.block);
  for (int64_t t : tiles) {
    if (t >= k) continue;
    for (int64_t t0 = 0; t0 < k; t0 += t) {
      const int64_t t1 = std::min(k, t0 + t);
      const double ts = partial(t0, t1);
      if (std::fabs(ts) <= bound) continue;
      if (holds(x - ts)) return Cat("one K tile missing (k in [", t0, ", ", t1, "), tile ", t, ")");
      if (holds(x + ts)) return Cat("one K tile added twice (k in [", t0, ", ", t1, "), tile ", t, ")");
    }
  }
  if (!sum_) {
    if (const std::optional<double> r = TransposedB(e, a); r.has_value() && holds(*r)) {
      return "equals the result with B transposed (A @ B.T): operand read transposed?";
    }
    if (const std::optional<double> r = TransposedA(e, b); r.has_value() && holds(*r)) {
      return "equals the result with A transposed (A.T @ B): operand read transposed?";
    }
  }
  {
    // Accumulated in bfloat16: the output is a bfloat16 value about as far from the exact one as
    // a sequential bfloat16 chain lands (or that chain's bits exactly).
    const Model m = Bf16AccumulationModel(fa, fb != nullptr ? *fb : fa, sum_);
    EvalOptions eo;
    eo.want_bound = false;
    absl::StatusOr<EvalResult> r = sum_ ? EvaluateSum(m, a, 0, eo) : EvaluateDot(m, a, b, 0, eo);
    const bool fits_bf16 = (Convert(out, BFloat16(), y, OpEnv{}).flags & kInexact) == 0;
    if (r.ok() && fits_bf16) {
      const double cv = c_format_ != nullptr ? ToDouble(*c_format_, sc.c) : 0;
      const double v = ToDouble(BFloat16(), r->bits) * s + cv;
      const double spread = std::max(std::fabs(v - x), 16 * HalfUlpAt(BFloat16(), std::fabs(v)));
      if (std::isfinite(v) && std::fabs(yd - v) <= spread && std::fabs(yd - x) <= 2 * spread) {
        return "accumulated in bfloat16 (a bfloat16 accumulation explains this value)";
      }
    }
  }
  return "no simple relation found";
}

void ReductionOp::Mutations(const AuditPlatform& p,
                            std::vector<std::pair<std::string, double>>& rates,
                            std::vector<std::string>& sentences) const {
  // On a pinned sample of at most 256 elements.
  const int64_t k = setup_.k;
  if (k < 2) return;
  const int64_t elements = setup_.elements;
  PinnedRng rng(DeriveSeed(0xA0D17, {static_cast<uint64_t>(elements), static_cast<uint64_t>(k)}));
  const int64_t samples = std::min<int64_t>(256, elements);
  std::array<int64_t, 4> accepted{};
  int64_t tested = 0;
  // Scaled operands (operands_scaled_): the mutations act on them (float64, exact), as the exact value does.
  const FormatSpec& fa = operands_scaled_ ? Float64() : *fa_;
  const FormatSpec* fb = operands_scaled_ ? &Float64() : fb_;
  const FormatSpec& out = *setup_.out_format;
  Scratch sc;
  for (int64_t sidx = 0; sidx < samples; ++sidx) {
    const int64_t e = elements <= 256 ? sidx : static_cast<int64_t>(rng.Below(static_cast<uint64_t>(elements)));
    ExactFacts facts;
    Exact(e, false, sc, facts);
    if (facts.nan || facts.inf) continue;
    ++tested;
    if (operands_scaled_) ScaledOperands(e, sc.a, sc.b, sc.sx, sc.sy);
    const std::vector<uint64_t>& a = operands_scaled_ ? sc.sx : sc.a;
    const std::vector<uint64_t>& b = operands_scaled_ ? sc.sy : sc.b;
    const ExactAccumulator& acc = sc.acc;
    const double s = operands_scaled_ ? 1.0 : Scale(e);
    const double tol = p.rec_atol + p.rec_rtol * std::fabs(facts.x);
    auto rounded = [&](ExactAccumulator& m) {
      Mpfr v;
      if (!m.IsFinite()) return double{NAN};
      m.ToMpfr(v.v);
      return ToDouble(out, DoubleToBits(out, mpfr_get_d(v.v, MPFR_RNDN) * s));
    };
    const int64_t tile = std::max<int64_t>(1, std::min<int64_t>(128, k / 4));
    const int64_t t0 = static_cast<int64_t>(rng.Below(static_cast<uint64_t>((k + tile - 1) / tile))) * tile;
    const int64_t t1 = std::min(k, t0 + tile);
    const int64_t j = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(k)));
    std::vector<uint64_t> na(a.begin() + t0, a.begin() + t1);
    for (uint64_t& v : na) v = Convert(fa, fa, v ^ SignBit(fa), OpEnv{}).bits;
    const std::span<const uint64_t> tb =
        fb != nullptr ? std::span<const uint64_t>(b.data() + t0, static_cast<size_t>(t1 - t0))
                      : std::span<const uint64_t>();
    auto add_tile = [&](ExactAccumulator& m, const std::vector<uint64_t>& vals) {
      if (fb == nullptr) {
        m.AddSum(fa, vals);
      } else {
        m.AddDot(fa, vals, *fb, tb);
      }
    };
    ExactAccumulator dropped = acc;
    add_tile(dropped, na);
    const std::vector<uint64_t> pa(a.begin() + t0, a.begin() + t1);
    ExactAccumulator doubled = acc;
    add_tile(doubled, pa);
    ExactAccumulator flipped = acc;
    {
      const std::vector<uint64_t> aj = {a[static_cast<size_t>(j)] ^ SignBit(fa)};
      if (fb == nullptr) {
        flipped.AddSum(fa, aj);
        flipped.AddSum(fa, aj);
      } else {
        const std::vector<uint64_t> bj = {b[static_cast<size_t>(j)]};
        flipped.AddDot(fa, aj, *fb, bj);
        flipped.AddDot(fa, aj, *fb, bj);
      }
    }
    double bf = NAN;
    {
      const Model m = Bf16AccumulationModel(fa, fb != nullptr ? *fb : fa, sum_);
      absl::StatusOr<EvalResult> er = sum_ ? EvaluateSum(m, a, 0, {}) : EvaluateDot(m, a, b, 0, {});
      if (er.ok()) bf = ToDouble(out, DoubleToBits(out, ToDouble(BFloat16(), er->bits) * s));
    }
    const std::array<double, 4> mutants = {rounded(dropped), rounded(doubled), rounded(flipped), bf};
    for (size_t m = 0; m < mutants.size(); ++m) {
      if (std::fabs(mutants[m] - facts.x) <= tol) ++accepted[m];
    }
  }
  if (tested == 0) return;
  const std::array<const char*, 4> names = {"dropped_k_tile", "doubled_k_tile", "sign_flip",
                                            "bf16_accumulation"};
  for (size_t m = 0; m < names.size(); ++m) {
    const double rate = static_cast<double>(accepted[m]) / static_cast<double>(tested);
    rates.emplace_back(names[m], rate);
    if (rate >= 0.5) {
      sentences.push_back(Cat("the recommended rtol/atol would still accept ", names[m], " on ",
                              Num(100 * rate), "% of ", tested,
                              " sampled elements: this mutation is hard to catch here"));
    }
  }
}

}  // namespace audit_internal

absl::StatusOr<PlatformAudit> RecommendTolerance(const std::string& op, const std::string& platform,
                                                 int64_t k, const AuditOptions& options) {
  if (op != "matmul" && op != "sum") {
    return absl::InvalidArgumentError(Cat("tolerance: op '", op, "' is not matmul or sum"));
  }
  if (k < 1) return absl::InvalidArgumentError(Cat("tolerance: K = ", k, " must be at least 1"));
  const bool sum = op == "sum";
  const ModelCatalog catalog(options.models_dir);
  if (catalog.IsEnvelope(platform)) {
    return absl::InvalidArgumentError(
        Cat("tolerance: '", platform, "' is an envelope: name one of its members"));
  }
  const absl::StatusOr<Model>& m = catalog.Find(platform);
  if (!m.ok()) return m.status();
  if (!audit_internal::HasOp(*m, sum)) {
    return absl::InvalidArgumentError(Cat("tolerance: model '", platform, "' has no ", op, " operation"));
  }
  audit_internal::AuditPlatform p;
  p.name = platform;
  const absl::StatusOr<SweepSpec> spec = audit_internal::LoadRuleSpec(options);
  if (!spec.ok()) return spec.status();
  if (absl::Status s = audit_internal::Recommend(p, *m, sum, k, *spec, options); !s.ok()) return s;
  return audit_internal::PlatformEntry(p);
}

}  // namespace fpconform::reports
