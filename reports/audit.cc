// Audits of a kernel's outputs (see audit.h for the contract).
//
// Structure: an audit is a set of "slices" (one per output element: a dot of K products for
// matmul, a sum of K values for sum) evaluated three ways: exactly (ExactAccumulator; for matmul
// loaded from the certified matmul, oracles/certified_matmul.h, where it has the value), under each
// platform model (EvaluateMatmul / EvaluateSum, with the element's bound), and as the user's
// output. ElementJudge classes one element against one platform; Tally gathers per-thread counts
// that are merged in thread order (threads own contiguous element ranges, so "the first maximum"
// is the same for any thread count). Listed elements are recomputed afterwards from their slice
// (EvaluateDot equals EvaluateMatmul element by element, evaluate.h), which keeps the hot pass
// free of per-element strings.
#include "reports/audit.h"

#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <thread>

#include "accumulation/evaluate.h"
#include "accumulation/model_catalog.h"
#include "cases/pinned_random.h"
#include "formats/ops.h"
#include "formats/str_cat.h"
#include "formats/text.h"
#include "formats/user_file.h"
#include "nlohmann/json.hpp"
#include "formats/isa.h"
#include "oracles/certified_matmul.h"
#include "oracles/error_measures.h"
#include "oracles/exact_sum.h"
#include "reports/hash.h"
#include "reports/mutations.h"
#include "reports/report.h"
#include "reports/sweep.h"

#ifndef FPCONFORM_REPORTS_SOURCE_DIR
#define FPCONFORM_REPORTS_SOURCE_DIR "reports"
#endif
#ifndef FPCONFORM_REPORT_VERSION
#define FPCONFORM_REPORT_VERSION "0"
#endif

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

namespace {

constexpr double kUp = 1 + 0x1p-50;  // Rounds a few double operations' result up (bounds).

// ---- Values ----

double ToDouble(const FormatSpec& f, uint64_t bits) {
  if (f.kind == FormatKind::kInteger) {
    if (f.is_signed && f.width < 64 && (bits >> (f.width - 1)) & 1) {
      return static_cast<double>(static_cast<int64_t>(bits | (~uint64_t{0} << f.width)));
    }
    return static_cast<double>(bits);
  }
  const uint64_t d = Convert(f, Float64(), bits, OpEnv{}).bits;
  double v;
  std::memcpy(&v, &d, sizeof v);
  return v;
}

uint64_t DoubleToBits(const FormatSpec& f, double v, const OpEnv& env = {}) {
  uint64_t d;
  std::memcpy(&d, &v, sizeof d);
  return Convert(Float64(), f, d, env).bits;
}

bool IsNonFinite(const FormatSpec& f, uint64_t bits) {
  if (f.kind == FormatKind::kInteger) return false;
  const FloatClass c = Classify(f, bits);
  return c == FloatClass::kSignalingNan || c == FloatClass::kQuietNan ||
         c == FloatClass::kNegativeInfinity || c == FloatClass::kPositiveInfinity;
}

// Half an ulp of float format f at magnitude v (>= 0): 2^(max(floor(log2 v), emin) - p) .
double HalfUlp(const FormatSpec& f, double v) {
  if (f.kind == FormatKind::kInteger) return 0.5;
  int e = f.d.emin;
  if (v > 0 && std::isfinite(v)) {
    int ex;
    std::frexp(v, &ex);  // v = m 2^ex, m in [0.5, 1): floor(log2 v) = ex - 1.
    e = std::max(ex - 1, f.d.emin);
  }
  return std::ldexp(1.0, e - f.d.precision);
}

struct Mpfr {
  mpfr_t v;
  explicit Mpfr(mpfr_prec_t p = 64) { mpfr_init2(v, p); }
  ~Mpfr() { mpfr_clear(v); }
  Mpfr(const Mpfr&) = delete;
  Mpfr& operator=(const Mpfr&) = delete;
};

std::string MpfrHex(mpfr_srcptr x) {
  if (mpfr_nan_p(x)) return "nan";
  if (mpfr_inf_p(x)) return mpfr_sgn(x) > 0 ? "inf" : "-inf";
  char* s = nullptr;
  mpfr_asprintf(&s, "%Ra", x);
  std::string r = s != nullptr ? s : "?";
  mpfr_free_str(s);
  return r;
}

std::string Num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

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

// ---- Platforms ----

struct Platform {
  std::string name;
  const Model* model = nullptr;
  std::string hash;
  double rec_rtol = 0, rec_atol = 0, rec_ulp = 0, rec_bn = 0;
  bool has_rec = false;
};

bool HasOp(const Model& m, bool sum) { return sum ? m.op_sum : (m.op_matmul || m.op_dot); }

// The platforms named by `names` (envelopes expanded; "auto": every preset with the op whose
// input formats are fa, fb).
absl::StatusOr<std::vector<Platform>> ResolvePlatforms(const ModelCatalog& catalog,
                                                       const std::vector<std::string>& names,
                                                       bool sum, const FormatSpec* fa,
                                                       const FormatSpec* fb) {
  std::vector<Platform> out;
  auto add = [&](const Model* m) {
    for (const Platform& p : out) {
      if (p.name == m->name) return;
    }
    Platform p;
    p.name = m->name;
    p.model = m;
    absl::StatusOr<std::string> text =
        ReadUserFile(Cat(catalog.dir(), "/", m->name, ".toml"), kMaxTextFileBytes, "model file");
    p.hash = text.ok() ? HexHash(Fnv1a(*text)) : "?";
    out.push_back(std::move(p));
  };
  if (names.empty()) {
    return absl::InvalidArgumentError(
        "no platform given: name one or more (--platform P[,P...]) or 'auto'; see `fpconform "
        "models`");
  }
  for (const std::string& name : names) {
    if (name == "auto") {
      for (const std::string& n : catalog.Names()) {
        if (catalog.IsEnvelope(n)) continue;
        const absl::StatusOr<Model>& m = catalog.Find(n);
        if (!m.ok() || !HasOp(*m, sum)) continue;
        if (m->inputs.a != fa || (!sum && &m->InputB() != fb)) continue;
        add(&*m);
      }
      continue;
    }
    absl::StatusOr<std::vector<const Model*>> models = catalog.Expand(name);
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
  if (out.empty()) {
    return absl::InvalidArgumentError(
        Cat("--platform auto: no preset takes ", fa != nullptr ? fa->name : "?",
            sum ? "" : " x ", sum || fb == nullptr ? "" : fb->name, " inputs for ",
            sum ? "sum" : "matmul", " (see `fpconform models`)"));
  }
  return out;
}

// The tolerance report's recommendation for one platform at this K (a small sweep on N(0, 1)
// inputs through the same rule: reports/sweep.h).
absl::Status Recommend(Platform& p, bool sum, int64_t k, const AuditOptions& options) {
  const std::string sweep_path = options.sweep_file.empty()
                                     ? std::string(FPCONFORM_REPORTS_SOURCE_DIR) +
                                           "/standard_sweep.toml"
                                     : options.sweep_file;
  absl::StatusOr<SweepSpec> base = LoadSweepSpec(sweep_path);
  if (!base.ok()) return base.status();
  SweepSpec spec = *base;
  DtypeSpec dtype;
  bool found = false;
  for (const DtypeSpec& d : base->dtypes) {
    const std::vector<std::string>& list = sum ? d.sum : d.matmul;
    if (!d.integer && std::find(list.begin(), list.end(), p.name) != list.end()) {
      dtype = d;
      found = true;
      break;
    }
  }
  if (!found) dtype.name = std::string(p.model->inputs.a->name);
  dtype.matmul.clear();
  dtype.sum.clear();
  (sum ? dtype.sum : dtype.matmul).push_back(p.name);
  spec.ops = {sum ? "sum" : "matmul"};
  spec.ks = {k};
  spec.distributions = {"normal"};
  spec.dtypes = {dtype};
  spec.cross.clear();
  spec.quantize_formats.clear();
  spec.samples = std::max(8, options.tolerance_samples);
  spec.min_samples = spec.samples;
  spec.max_terms_per_row = static_cast<int64_t>(spec.samples) * k;
  SweepOptions so;
  so.models_dir = options.models_dir;
  so.threads = std::max(1, options.threads);
  absl::StatusOr<Report> r = RunSweep(spec, so);
  if (!r.ok()) return r.status();
  const Table* t = r->Find("tolerance");
  if (t == nullptr || t->rows.empty()) {
    return absl::InternalError(Cat("tolerance rule for ", p.name, ": the sweep gave no row"));
  }
  auto get = [&](std::string_view col) {
    const int c = t->ColumnIndex(col);
    if (c < 0) return 0.0;
    const double* v = std::get_if<double>(&t->rows[0][c]);
    return v != nullptr ? *v : 0.0;
  };
  p.rec_rtol = get("rec_rtol");
  p.rec_atol = get("rec_atol");
  p.rec_ulp = get("rec_ulp");
  p.rec_bn = get("rec_bn");
  p.has_rec = true;
  return absl::OkStatus();
}

// ---- One element against one platform ----

struct Exact {
  bool nan = false, inf = false, negative = false;
  double x = 0;     // Rounded to double.
  mpfr_srcptr mp = nullptr;  // The exact value (finite only).
};

struct Verdict {
  AuditClass cls = AuditClass::kUnexplained;
  double err = 0;     // |out - exact| rounded up (finite cases; else inf/nan).
  const char* hint = nullptr;
};

// Classes output y (bits of `out`) against emulated bits `emu` with bound B (both in `out`).
Verdict Judge(const FormatSpec& out, uint64_t y, uint64_t emu, double bound, const Exact& x,
              double err, const Platform& p) {
  Verdict v;
  v.err = err;
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
    if (ok) {
      v.cls = AuditClass::kWithinTolerance;
      return v;
    }
  }
  return v;
}

// ---- Per-thread tallies ----

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

// ---- The shared audit state ----

// How an element's slice is read (matmul: row of A and column of B; sum: a strided run of X),
// in the platform's input formats.
struct Slices {
  const FormatSpec* fa = nullptr;
  const FormatSpec* fb = nullptr;     // nullptr for sum.
  int64_t k = 0;
  std::function<void(int64_t e, std::vector<uint64_t>& a, std::vector<uint64_t>& b,
                     uint64_t& c)> read;  // c in the final accumulator format (0 = +0).
  // The hot pass's reader: spans into operands the driver materialized for the range being
  // judged (no copy); unset: `read` is used.
  std::function<void(int64_t e, std::span<const uint64_t>& a, std::span<const uint64_t>& b,
                     uint64_t& c)> view;
  // Matmul only, optional: loads the exact value of element e's unscaled sum into acc (Reset
  // first) when the certified oracle (oracles/certified_matmul.h) has it, else false; the value
  // is the one AddDot gives, so every result downstream is the same.
  std::function<bool(int64_t e, ExactAccumulator& acc)> exact;
  std::function<double(int64_t e)> scale;  // s_a[i] * s_b[j] exactly (1 without scales).
  std::function<double(int64_t e)> scale32;  // fl32(s_a[i] * s_b[j]).
  bool scaled = false;
  std::function<double(int64_t e)> scale_a, scale_b;  // For the "scale missing" diagnosis.
  const FormatSpec* c_format = nullptr;
};

struct Context {
  bool sum = false;
  const Tensor* out = nullptr;
  const FormatSpec* out_format = nullptr;
  OpEnv out_rounding;
  std::vector<Platform> platforms;
  Slices slices;
  const AuditOptions* options = nullptr;
  std::vector<int64_t> out_shape;
  int64_t elements = 0;
  // (A B^T)[i, j] and (A^T B)[i, j] from the element's row of A / column of B (square operands
  // only; empty otherwise), for the transposed-operand diagnosis.
  std::function<double(int64_t e, const std::vector<uint64_t>& a)> transposed_b;
  std::function<double(int64_t e, const std::vector<uint64_t>& b)> transposed_a;
  std::vector<std::string> notes;
  std::string formula, input_format;
  std::vector<std::pair<std::string, std::string>> provenance;
};

// The platform's value for element e, post-processed into the output format: the scale
// (out = fl32(fl32(s_a s_b) * y)) and the conversion into out's format; the bound widened by
// both (see audit.h).
struct Emulated {
  uint64_t bits = 0;
  double bound = 0;
};

Emulated PostProcess(const Context& ctx, const Platform& p, int64_t e, uint64_t model_bits,
                     double model_bound) {
  const FormatSpec& model_out = p.model->OutputFormat();
  const FormatSpec& out = *ctx.out_format;
  Emulated r;
  uint64_t bits = model_bits;
  const FormatSpec* fmt = &model_out;
  double bound = model_bound;
  if (ctx.slices.scaled) {
    const double s = ctx.slices.scale(e), s32 = ctx.slices.scale32(e);
    const double y = ToDouble(model_out, bits);
    const double prod = s32 * y;  // Exact: 24-bit times <= 24-bit significands.
    bits = DoubleToBits(Float32(), prod);
    fmt = &Float32();
    const double v = ToDouble(Float32(), bits);
    if (std::isfinite(v) && std::isfinite(y)) {
      bound = (std::fabs(v - prod) * (1 + 0x1p-52) + std::fabs(s32 - s) * std::fabs(y) +
               std::fabs(s) * bound) * kUp;
    }
  }
  if (fmt != &out) {
    const uint64_t conv = Convert(*fmt, out, bits, ctx.out_rounding).bits;
    const double a = ToDouble(*fmt, bits), b = ToDouble(out, conv);
    if (std::isfinite(a) && std::isfinite(b)) {
      bound = (bound + std::fabs(b - a) * (1 + 0x1p-52) + HalfUlp(out, std::fabs(b) + bound)) * kUp;
    }
    bits = conv;
  }
  r.bits = bits;
  r.bound = bound;
  return r;
}

// Exact value of element e into `acc` (unscaled) and `x` (scaled, exact).
void ExactOf(const Context& ctx, int64_t e, std::span<const uint64_t> a,
             std::span<const uint64_t> b, uint64_t c, ExactAccumulator& acc, Mpfr& x,
             Exact& facts) {
  if (!ctx.slices.exact || !ctx.slices.exact(e, acc)) {
    acc.Reset();
    if (ctx.sum) {
      acc.AddSum(*ctx.slices.fa, a);
    } else {
      acc.AddDot(*ctx.slices.fa, a, *ctx.slices.fb, b);
    }
  }
  if (ctx.slices.c_format != nullptr) acc.Add(*ctx.slices.c_format, c);
  facts = Exact{};
  facts.nan = acc.IsNan();
  facts.inf = acc.IsInf();
  facts.negative = acc.Sign() < 0;
  if (facts.nan || facts.inf) {
    facts.x = facts.nan ? NAN : (facts.negative ? -INFINITY : INFINITY);
    return;
  }
  acc.ToMpfr(x.v);
  if (ctx.slices.scaled) {
    const double s = ctx.slices.scale(e);
    mpfr_prec_round(x.v, mpfr_get_prec(x.v) + 60, MPFR_RNDN);  // Exact: widening.
    mpfr_mul_d(x.v, x.v, s, MPFR_RNDN);                        // Exact: 53 more bits fit.
  }
  facts.x = mpfr_get_d(x.v, MPFR_RNDN);
  facts.mp = x.v;
}

// |y - x| rounded up (y finite bits of out, x exact finite).
double ErrorUp(const FormatSpec& out, uint64_t y, mpfr_srcptr x, Mpfr& yv, Mpfr& d) {
  ErrorMeasureValue(out, y, yv.v);
  mpfr_sub(d.v, yv.v, x, MPFR_RNDA);
  return std::fabs(mpfr_get_d(d.v, MPFR_RNDA));
}

// The state of a running audit.
class Auditor {
 public:
  explicit Auditor(Context ctx) : ctx_(std::move(ctx)) {
    classes_.assign(static_cast<size_t>(ctx_.elements), 0);
    ratio_.assign(static_cast<size_t>(ctx_.elements), 0.0f);
    if (ctx_.options->keep_bounds) {
      bounds_.assign(static_cast<size_t>(ctx_.elements), 0.0);
      best_.assign(static_cast<size_t>(ctx_.elements), 0);
    }
  }

  // Judges elements [begin, end) given each platform's emulated values for them (emu[p][e -
  // begin]) on `threads` threads, into the per-element arrays and the running tally.
  void JudgeRange(int64_t begin, int64_t end, const std::vector<std::vector<Emulated>>& emu) {
    const int threads = static_cast<int>(
        std::clamp<int64_t>(ctx_.options->threads, 1, std::max<int64_t>(1, (end - begin) / 64)));
    std::vector<Tally> tallies(static_cast<size_t>(threads));
    auto work = [&](int t) {
      const int64_t n = end - begin;
      const int64_t lo = begin + n * t / threads, hi = begin + n * (t + 1) / threads;
      JudgeChunk(lo, hi, begin, emu, tallies[static_cast<size_t>(t)]);
    };
    if (threads == 1) {
      work(0);
    } else {
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
      for (std::thread& th : pool) th.join();
    }
    for (const Tally& t : tallies) Merge(tally_, t);
  }

  AuditResult Finish(const std::string& op);
  const Context& context() const { return ctx_; }

 private:
  void JudgeChunk(int64_t lo, int64_t hi, int64_t begin,
                  const std::vector<std::vector<Emulated>>& emu, Tally& tally) const {
    const size_t np = ctx_.platforms.size();
    tally.counts.assign(np, {});
    ExactAccumulator acc;
    Mpfr x, yv, d;
    std::vector<uint64_t> a, b;
    uint64_t c = 0;
    const FormatSpec& out = *ctx_.out_format;
    const Platform& p0 = ctx_.platforms[0];
    const Shuffle shuffle(static_cast<uint64_t>(ctx_.elements));
    std::span<const uint64_t> as, bs;
    for (int64_t e = lo; e < hi; ++e) {
      if (ctx_.slices.view) {
        ctx_.slices.view(e, as, bs, c);
      } else {
        ctx_.slices.read(e, a, b, c);
        as = a;
        bs = b;
      }
      Exact facts;
      ExactOf(ctx_, e, as, bs, c, acc, x, facts);
      const uint64_t y = ctx_.out->Bits(e);
      const bool y_finite = !IsNonFinite(out, y);
      double err = INFINITY;
      if (y_finite && !facts.nan && !facts.inf) err = ErrorUp(out, y, facts.mp, yv, d);
      if (IsNanBits(out, y)) ++tally.nan_outputs;
      uint8_t best = kAuditClasses - 1;
      double bmax = 0;
      for (size_t p = 0; p < np; ++p) {
        const Emulated& em = emu[p][static_cast<size_t>(e - begin)];
        const Verdict v = Judge(out, y, em.bits, em.bound, facts, err, ctx_.platforms[p]);
        ++tally.counts[p][static_cast<int>(v.cls)];
        best = std::min<uint8_t>(best, static_cast<uint8_t>(v.cls));
        bmax = std::max(bmax, em.bound);
        if (p == 0) {
          classes_[static_cast<size_t>(e)] = static_cast<uint8_t>(v.cls);
          const double r = em.bound > 0 ? err / em.bound : (err > 0 ? INFINITY : 0);
          ratio_[static_cast<size_t>(e)] =
              v.cls == AuditClass::kIdentical ? 0.0f : static_cast<float>(std::isnan(r) ? INFINITY : r);
          if (y_finite && !facts.nan && !facts.inf) {
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
              const uint64_t other = ctx_.out->Bits(static_cast<int64_t>(shuffle(static_cast<uint64_t>(e))));
              const double yo = ToDouble(out, other);
              if (std::fabs(yo - facts.x) <= tol) ++tally.perm_ok;
            }
          }
        }
      }
      if (!bounds_.empty()) {
        bounds_[static_cast<size_t>(e)] = bmax;
        best_[static_cast<size_t>(e)] = best;
      }
    }
  }

  AuditElement Detail(int64_t e, bool diagnose) const;
  std::string Diagnose(int64_t e, const std::vector<uint64_t>& a, const std::vector<uint64_t>& b,
                       uint64_t c, const Exact& facts, uint64_t y, double bound,
                       const char* hint) const;
  void Soundness(AuditResult& r) const;

  Context ctx_;
  mutable std::vector<uint8_t> classes_;
  mutable std::vector<float> ratio_;
  mutable std::vector<double> bounds_;
  mutable std::vector<uint8_t> best_;
  Tally tally_;
};

AuditElement Auditor::Detail(int64_t e, bool diagnose) const {
  AuditElement el;
  el.index = Unflatten(e, ctx_.out_shape);
  el.cls = static_cast<AuditClass>(classes_[static_cast<size_t>(e)]);
  std::vector<uint64_t> a, b;
  uint64_t c = 0;
  ctx_.slices.read(e, a, b, c);
  ExactAccumulator acc;
  Mpfr x, yv, d;
  Exact facts;
  ExactOf(ctx_, e, a, b, c, acc, x, facts);
  const FormatSpec& out = *ctx_.out_format;
  const uint64_t y = ctx_.out->Bits(e);
  el.actual_bits = y;
  el.actual = ToDouble(out, y);
  el.exact = facts.nan ? "nan" : facts.inf ? (facts.negative ? "-inf" : "inf") : MpfrHex(x.v);
  el.exact_value = facts.x;
  const Platform& p = ctx_.platforms[0];
  EvalOptions eo;
  absl::StatusOr<EvalResult> r = ctx_.sum ? EvaluateSum(*p.model, a, c, eo)
                                          : EvaluateDot(*p.model, a, b, c, eo);
  Emulated em;
  if (r.ok()) em = PostProcess(ctx_, p, e, r->bits, r->bound);
  el.emulated_bits = em.bits;
  el.emulated = ToDouble(out, em.bits);
  el.bound = em.bound;
  const bool finite = !IsNonFinite(out, y) && !facts.nan && !facts.inf;
  const double err = finite ? ErrorUp(out, y, x.v, yv, d) : NAN;
  el.error_ulp = finite ? UlpError(out, y, x.v) : NAN;
  el.error_over_bound = !finite ? NAN : em.bound > 0 ? err / em.bound : (err > 0 ? INFINITY : 0);
  {
    ExactAccumulator abs = ctx_.sum ? ExactAbsSum(*ctx_.slices.fa, a)
                                    : ExactAbsDot(*ctx_.slices.fa, a, *ctx_.slices.fb, b);
    Mpfr s;
    if (abs.IsFinite()) {
      abs.ToMpfr(s.v);
      el.abs_sum = mpfr_get_d(s.v, MPFR_RNDU) * std::fabs(ctx_.slices.scale(e));
    } else {
      el.abs_sum = INFINITY;
    }
  }
  if (diagnose && el.cls == AuditClass::kUnexplained) {
    const Verdict v = Judge(out, y, em.bits, em.bound, facts, err, p);
    el.diagnosis = Diagnose(e, a, b, c, facts, y, em.bound, v.hint);
  }
  return el;
}

std::string Auditor::Diagnose(int64_t e, const std::vector<uint64_t>& a,
                              const std::vector<uint64_t>& b, uint64_t c, const Exact& facts,
                              uint64_t y, double bound, const char* hint) const {
  if (hint != nullptr) return hint;
  const FormatSpec& out = *ctx_.out_format;
  const double yd = ToDouble(out, y), x = facts.x;
  const double s = ctx_.slices.scale(e);
  auto holds = [&](double r) {
    return std::isfinite(r) && std::fabs(yd - r) <= (bound + HalfUlp(out, std::fabs(r))) * (1 + 0x1p-40);
  };
  const bool nonzero = std::fabs(x) > bound;
  if (nonzero && yd == 0) return "zero where the exact value is not: element not written?";
  if (nonzero && holds(-x)) return "sign flipped (out = -exact)";
  // Scales first: a power-of-two scale forgotten is also "off by a power of two", and the scale
  // is the better explanation.
  if (ctx_.slices.scaled && nonzero) {
    const double sa = ctx_.slices.scale_a(e), sb = ctx_.slices.scale_b(e);
    if (sa != 1 && holds(x / sa)) return "FP8 scale_a missing (out = exact / scale_a)";
    if (sb != 1 && holds(x / sb)) return "FP8 scale_b missing (out = exact / scale_b)";
    if (holds(x / s)) return "both scales missing (out = exact / (scale_a scale_b))";
  }

  if (nonzero) {
    for (int k = 1; k <= 8; ++k) {
      if (holds(std::ldexp(x, k))) return Cat("off by a factor of 2^", k, k == 1 ? " (doubled)" : "");
      if (holds(std::ldexp(x, -k))) return Cat("off by a factor of 2^-", k, k == 1 ? " (halved)" : "");
    }
  }
  const int64_t k = ctx_.slices.k;
  const FormatSpec& fa = *ctx_.slices.fa;
  const FormatSpec* fb = ctx_.slices.fb;
  auto partial = [&](int64_t t0, int64_t t1) {
    const std::span<const uint64_t> ta(a.data() + t0, static_cast<size_t>(t1 - t0));
    ExactAccumulator acc;
    if (fb == nullptr) {
      acc.AddSum(fa, ta);
    } else {
      acc.AddDot(fa, ta, *fb, std::span<const uint64_t>(b.data() + t0, static_cast<size_t>(t1 - t0)));
    }
    if (!acc.IsFinite()) return 0.0;
    Mpfr v;
    acc.ToMpfr(v.v);
    return mpfr_get_d(v.v, MPFR_RNDN) * s;
  };
  std::vector<int64_t> tiles = {16, 32, 64, 128, 256, 512};
  if (ctx_.platforms[0].model->chain.block > 0) tiles.push_back(ctx_.platforms[0].model->chain.block);
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
  if (!ctx_.sum && ctx_.transposed_b) {
    const double r = ctx_.transposed_b(e, a);
    if (holds(r)) return "equals the result with B transposed (A @ B.T): operand read transposed?";
  }
  if (!ctx_.sum && ctx_.transposed_a) {
    const double r = ctx_.transposed_a(e, b);
    if (holds(r)) return "equals the result with A transposed (A.T @ B): operand read transposed?";
  }
  {
    // Accumulated in bfloat16: the output is a bfloat16 value about as far from the exact one as
    // a sequential bfloat16 chain lands (or that chain's bits exactly).
    const Model m = Bf16AccumulationModel(fa, fb != nullptr ? *fb : fa, ctx_.sum);
    EvalOptions eo;
    eo.want_bound = false;
    absl::StatusOr<EvalResult> r = ctx_.sum ? EvaluateSum(m, a, 0, eo) : EvaluateDot(m, a, b, 0, eo);
    const bool fits_bf16 = (Convert(out, BFloat16(), y, OpEnv{}).flags & kInexact) == 0;
    if (r.ok() && fits_bf16) {
      const double cv = ctx_.slices.c_format != nullptr ? ToDouble(*ctx_.slices.c_format, c) : 0;
      const double v = ToDouble(BFloat16(), r->bits) * s + cv;
      const double spread = std::max(std::fabs(v - x), 16 * HalfUlp(BFloat16(), std::fabs(v)));
      if (std::isfinite(v) && std::fabs(yd - v) <= spread && std::fabs(yd - x) <= 2 * spread) {
        return "accumulated in bfloat16 (a bfloat16 accumulation explains this value)";
      }
    }
  }
  return "no simple relation found";
}

void Auditor::Soundness(AuditResult& r) const {
  const Platform& p = ctx_.platforms[0];
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
  // Mutations on a pinned sample of at most 256 elements.
  const int64_t k = ctx_.slices.k;
  if (k < 2) return;
  PinnedRng rng(DeriveSeed(0xA0D17, {static_cast<uint64_t>(ctx_.elements), static_cast<uint64_t>(k)}));
  const int64_t samples = std::min<int64_t>(256, ctx_.elements);
  std::array<int64_t, 4> accepted{};
  int64_t tested = 0;
  const FormatSpec& fa = *ctx_.slices.fa;
  const FormatSpec* fb = ctx_.slices.fb;
  const FormatSpec& out = *ctx_.out_format;
  std::vector<uint64_t> a, b;
  uint64_t c = 0;
  ExactAccumulator acc;
  Mpfr x;
  for (int64_t sidx = 0; sidx < samples; ++sidx) {
    const int64_t e = ctx_.elements <= 256 ? sidx : static_cast<int64_t>(rng.Below(static_cast<uint64_t>(ctx_.elements)));
    ctx_.slices.read(e, a, b, c);
    Exact facts;
    ExactOf(ctx_, e, a, b, c, acc, x, facts);
    if (facts.nan || facts.inf) continue;
    ++tested;
    const double s = ctx_.slices.scale(e);
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
      const std::vector<uint64_t> aj2 = {a[static_cast<size_t>(j)] ^ SignBit(fa)};
      if (fb == nullptr) {
        flipped.AddSum(fa, aj);
        flipped.AddSum(fa, aj2);
      } else {
        const std::vector<uint64_t> bj = {b[static_cast<size_t>(j)]};
        flipped.AddDot(fa, aj, *fb, bj);
        flipped.AddDot(fa, aj2, *fb, bj);
      }
    }
    double bf = NAN;
    {
      const Model m = Bf16AccumulationModel(fa, fb != nullptr ? *fb : fa, ctx_.sum);
      absl::StatusOr<EvalResult> er = ctx_.sum ? EvaluateSum(m, a, 0, {}) : EvaluateDot(m, a, b, 0, {});
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
    r.soundness_rates.emplace_back(names[m], rate);
    if (rate >= 0.5) {
      r.soundness.push_back(Cat("the recommended rtol/atol would still accept ", names[m], " on ",
                                Num(100 * rate), "% of ", tested,
                                " sampled elements: this mutation is hard to catch here"));
    }
  }
}


AuditResult Auditor::Finish(const std::string& op) {
  AuditResult r;
  r.op = op;
  r.k = ctx_.slices.k;
  r.out_shape = ctx_.out_shape;
  r.out_format = std::string(ctx_.out_format->name);
  r.input_format = ctx_.input_format;
  r.formula = ctx_.formula;
  r.notes = ctx_.notes;
  r.provenance = ctx_.provenance;
  if (tally_.counts.empty()) tally_.counts.resize(ctx_.platforms.size());
  int64_t best = -1;
  for (size_t p = 0; p < ctx_.platforms.size(); ++p) {
    const Platform& pl = ctx_.platforms[p];
    PlatformAudit pa;
    pa.name = pl.name;
    pa.counts = tally_.counts[p];
    pa.rec_rtol = pl.rec_rtol;
    pa.rec_atol = pl.rec_atol;
    pa.rec_ulp = pl.rec_ulp;
    pa.rec_bn = pl.rec_bn;
    pa.model_hash = pl.hash;
    if (pa.counts[0] > best) {
      best = pa.counts[0];
      r.best_platform = pl.name;
    }
    r.platforms.push_back(pa);
    r.provenance.emplace_back(Cat("model ", pl.name), pl.hash);
  }
  r.counts = r.platforms[0].counts;
  const int64_t unexplained = r.counts[static_cast<int>(AuditClass::kUnexplained)];
  const int64_t tolerated = r.counts[static_cast<int>(AuditClass::kWithinTolerance)];
  const bool strict = ctx_.options->strict;
  r.mismatched = unexplained + (strict ? tolerated : 0);
  r.verdict = r.mismatched == 0 ? "pass" : "fail";
  if (tally_.max_abs >= 0) {
    r.max_abs_diff = tally_.max_abs;
    r.max_abs_allowed = tally_.max_abs_allowed;
    r.max_abs_index = Unflatten(tally_.max_abs_e, ctx_.out_shape);
    r.max_rel_diff = tally_.max_rel;
    r.max_rel_allowed = tally_.max_rel_allowed;
    r.max_rel_index = Unflatten(tally_.max_rel_e, ctx_.out_shape);
  }
  if (tally_.nan_outputs > 0) {
    r.notes.push_back(Cat(tally_.nan_outputs, " output element(s) are NaN"));
  }
  // Listed elements: every unexplained one first (C order), then the worst of the others.
  const int64_t max_listed = std::max(0, ctx_.options->max_listed);
  std::vector<int64_t> listed;
  for (int64_t e = 0; e < ctx_.elements && static_cast<int64_t>(listed.size()) < max_listed; ++e) {
    if (classes_[static_cast<size_t>(e)] == static_cast<uint8_t>(AuditClass::kUnexplained)) {
      listed.push_back(e);
    }
  }
  if (static_cast<int64_t>(listed.size()) < max_listed) {
    std::vector<int64_t> others;
    for (int64_t e = 0; e < ctx_.elements; ++e) {
      const uint8_t c = classes_[static_cast<size_t>(e)];
      if (c != static_cast<uint8_t>(AuditClass::kUnexplained) && ratio_[static_cast<size_t>(e)] > 0) {
        others.push_back(e);
      }
    }
    const size_t want = std::min(others.size(), static_cast<size_t>(max_listed) - listed.size());
    std::partial_sort(others.begin(), others.begin() + static_cast<std::ptrdiff_t>(want),
                      others.end(), [&](int64_t x, int64_t y) {
                        const float rx = ratio_[static_cast<size_t>(x)], ry = ratio_[static_cast<size_t>(y)];
                        return rx != ry ? rx > ry : x < y;
                      });
    listed.insert(listed.end(), others.begin(), others.begin() + static_cast<std::ptrdiff_t>(want));
  }
  for (int64_t e : listed) r.elements.push_back(Detail(e, true));
  r.unexplained_total = unexplained;
  if (ctx_.options->all_unexplained) {
    size_t next_listed = 0;
    for (int64_t e = 0; e < ctx_.elements &&
                        static_cast<int64_t>(r.unexplained.size()) < kMaxUnexplainedDetails; ++e) {
      if (classes_[static_cast<size_t>(e)] != static_cast<uint8_t>(AuditClass::kUnexplained)) continue;
      // The listed ones are already computed (they come first, in the same order).
      if (next_listed < listed.size() && listed[next_listed] == e) {
        r.unexplained.push_back(r.elements[next_listed++]);
      } else {
        r.unexplained.push_back(Detail(e, static_cast<int64_t>(r.unexplained.size()) < kMaxDiagnosed));
      }
    }
    if (unexplained > static_cast<int64_t>(r.unexplained.size())) {
      r.notes.push_back(Cat("elements.csv lists the first ", r.unexplained.size(), " of ", unexplained,
                            " unexplained elements"));
    }
  }
  Soundness(r);
  // Mismatch map and histogram.
  const int64_t cols = ctx_.out_shape.empty() ? 1 : std::max<int64_t>(1, ctx_.out_shape.back());
  const int64_t rows = ctx_.elements / std::max<int64_t>(1, cols);
  r.map_rows = rows;
  r.map_cols = cols;
  r.map_cell_rows = std::max<int64_t>(1, (rows + 255) / 256);
  r.map_cell_cols = std::max<int64_t>(1, (cols + 255) / 256);
  const int64_t mr = rows > 0 ? (rows + r.map_cell_rows - 1) / r.map_cell_rows : 0;
  const int64_t mc = (cols + r.map_cell_cols - 1) / r.map_cell_cols;
  r.map.assign(static_cast<size_t>(mr * mc), 0.0f);
  r.histogram.assign(34, 0);
  for (int64_t e = 0; e < ctx_.elements; ++e) {
    const float v = ratio_[static_cast<size_t>(e)];
    float& cell = r.map[static_cast<size_t>((e / cols) / r.map_cell_rows * mc + (e % cols) / r.map_cell_cols)];
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

// ---- Tensor helpers ----

absl::Status CheckFloat(const Tensor& t, const char* role) {
  if (t.format == nullptr || t.format->kind != FormatKind::kFloat) {
    return absl::InvalidArgumentError(Cat(t.source, ": ", role, " has dtype ", t.dtype,
                                          ": the audit takes float tensors"));
  }
  return absl::OkStatus();
}

// Reads a tensor's elements in the platform's input format `want`: as they are, or converted
// under cast_inputs (an error naming both formats without it). Nothing is copied: the drivers
// fetch the rows and columns they need, so the audit holds the inputs about once.
struct InputReader {
  const Tensor* t = nullptr;
  const FormatSpec* want = nullptr;
  std::optional<OpEnv> cast;
  uint64_t Get(int64_t i) const {
    const uint64_t v = t->Bits(i);
    return t->format == want ? v : Convert(*t->format, *want, v, *cast).bits;
  }
};

absl::StatusOr<InputReader> MakeInputReader(const Tensor& t, const FormatSpec& want,
                                            const std::optional<OpEnv>& cast, const char* role,
                                            const std::string& platform,
                                            std::vector<std::string>& notes) {
  InputReader r{&t, &want, cast};
  if (t.format == &want) return r;
  if (t.format == nullptr) {
    return absl::InvalidArgumentError(Cat(t.source, ": ", role, " has dtype ", t.dtype,
                                          ", which no platform takes"));
  }
  if (!cast.has_value()) {
    return absl::InvalidArgumentError(
        Cat(t.source, ": ", role, " is ", t.format->name, " but platform ", platform, " takes ",
            want.name, " inputs; give --cast-inputs MODE (rne, rtz, ...) if the kernel converted "
            "them, or choose a platform for ", t.format->name, " (see `fpconform models`)"));
  }
  int64_t inexact = 0;
  for (int64_t i = 0; i < t.size(); ++i) {
    if (Convert(*t.format, want, t.Bits(i), *cast).flags & kInexact) ++inexact;
  }
  notes.push_back(Cat(role, " converted from ", t.format->name, " to ", want.name, " (",
                      RoundingName(*cast), cast->saturate ? ", sat" : "", "): ", inexact, " of ",
                      t.size(), " values changed"));
  return r;
}

void NoteBf16Fit(const Tensor& t, const char* role, std::vector<std::string>& notes) {
  std::optional<std::string> fit = NarrowestExactFloat(t);
  if (fit.has_value()) {
    notes.push_back(Cat(role, " (", t.dtype, "): values fit ", *fit, ": the kernel probably ",
                        "computed in ", *fit, " and saved .float()"));
  }
}

void AddFileProvenance(std::vector<std::pair<std::string, std::string>>& prov, const char* role,
                       const Tensor& t) {
  const std::string_view bytes(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  prov.emplace_back(Cat("tensor ", role), Cat(t.source, " ", t.dtype, ShapeText(t.shape), " ",
                                                HexHash(Fnv1a(bytes))));
  for (const auto& [k, v] : t.metadata) {
    if (k.rfind("metadata.", 0) == 0) prov.emplace_back(Cat("tensor ", role, " ", k), v);
  }
}

// numpy.matmul's broadcast of two batch shapes; false when they do not broadcast.
bool BroadcastBatch(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                    std::vector<int64_t>& out) {
  const size_t n = std::max(a.size(), b.size());
  out.assign(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

// Flat batch offset into an operand with batch shape `shape` for broadcast batch index `bi`.
int64_t BatchOffset(const std::vector<int64_t>& bi, const std::vector<int64_t>& shape) {
  int64_t off = 0;
  const size_t skip = bi.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    off = off * shape[d] + (shape[d] == 1 ? 0 : bi[d + skip]);
  }
  return off;
}

absl::StatusOr<std::vector<double>> ScaleValues(const Tensor* t, int64_t expected, const char* role) {
  if (t == nullptr) return std::vector<double>{1.0};
  if (t->format == nullptr || t->format->kind != FormatKind::kFloat) {
    return absl::InvalidArgumentError(Cat(t->source, ": ", role, " must be a float tensor"));
  }
  if (t->size() != 1 && t->size() != expected) {
    return absl::InvalidArgumentError(Cat(t->source, ": ", role, " has ", t->size(),
                                          " elements: expected 1 (per tensor) or ", expected));
  }
  std::vector<double> v(static_cast<size_t>(t->size()));
  for (int64_t i = 0; i < t->size(); ++i) {
    v[static_cast<size_t>(i)] = ToDouble(*t->format, t->Bits(i));
    const OpResult r = Convert(*t->format, Float32(), t->Bits(i), OpEnv{});
    if (!std::isfinite(v[static_cast<size_t>(i)]) || (r.flags & kInexact)) {
      return absl::InvalidArgumentError(Cat(t->source, ": ", role, "[", i, "] = ",
                                            Num(v[static_cast<size_t>(i)]),
                                            ": scales must be finite float32 values"));
    }
  }
  return v;
}

void Progress(const AuditOptions& o, int64_t done, int64_t total, const std::string& label) {
  if (o.progress) o.progress(done, total, label);
}

// The tolerance rule for every platform of the audit (when asked for); a platform the rule cannot
// run for gets a note instead.
void RecommendAll(Context& ctx, int64_t k) {
  const AuditOptions& options = *ctx.options;
  if (!options.recommend) return;
  for (Platform& p : ctx.platforms) {
    Progress(options, 0, 1, Cat("tolerance rule for ", p.name, " at K=", k));
    if (absl::Status s = Recommend(p, ctx.sum, k, options); !s.ok()) {
      ctx.notes.push_back(Cat("no tolerance recommendation for ", p.name, ": ", s.message()));
    }
  }
}

}  // namespace

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
  if (!HasOp(*m, sum)) {
    return absl::InvalidArgumentError(Cat("tolerance: model '", platform, "' has no ", op, " operation"));
  }
  Platform p;
  p.name = platform;
  p.model = &*m;
  if (absl::Status s = Recommend(p, sum, k, options); !s.ok()) return s;
  PlatformAudit out;
  out.name = platform;
  out.rec_rtol = p.rec_rtol;
  out.rec_atol = p.rec_atol;
  out.rec_ulp = p.rec_ulp;
  out.rec_bn = p.rec_bn;
  return out;
}

absl::StatusOr<AuditResult> AuditMatmul(const MatmulAuditInput& in, const AuditOptions& options) {
  if (in.a == nullptr || in.b == nullptr || in.out == nullptr) {
    return absl::InvalidArgumentError("audit matmul needs --a, --b and --out");
  }
  for (const auto& [t, role] : {std::pair{in.a, "A"}, {in.b, "B"}, {in.out, "the output"}}) {
    if (absl::Status s = CheckFloat(*t, role); !s.ok()) return s;
  }
  const Tensor& A = *in.a;
  const Tensor& B = *in.b;
  const Tensor& O = *in.out;
  if (A.shape.size() < 2 || B.shape.size() < 2) {
    return absl::InvalidArgumentError(Cat(A.shape.size() < 2 ? A.source : B.source,
                                          ": matmul operands must be at least 2-D, got shape ",
                                          ShapeText(A.shape.size() < 2 ? A.shape : B.shape)));
  }
  const int64_t ar = A.shape[A.shape.size() - 2], ac = A.shape.back();
  const int64_t br = B.shape[B.shape.size() - 2], bc = B.shape.back();
  const int64_t m = in.transpose_a ? ac : ar, k = in.transpose_a ? ar : ac;
  const int64_t kb = in.transpose_b ? bc : br, n = in.transpose_b ? br : bc;
  if (k != kb) {
    return absl::InvalidArgumentError(
        Cat("matmul: A", in.transpose_a ? "^T" : "", " is ", m, " x ", k, " (", A.source,
            " shape ", ShapeText(A.shape), ") but B", in.transpose_b ? "^T" : "", " is ", kb,
            " x ", n, " (", B.source, " shape ", ShapeText(B.shape), "): the inner dimensions differ"));
  }
  if (k < 1 || m < 1 || n < 1) return absl::InvalidArgumentError("matmul: an operand has a zero dimension");
  const std::vector<int64_t> a_batch(A.shape.begin(), A.shape.end() - 2);
  const std::vector<int64_t> b_batch(B.shape.begin(), B.shape.end() - 2);
  std::vector<int64_t> batch;
  if (!BroadcastBatch(a_batch, b_batch, batch)) {
    return absl::InvalidArgumentError(Cat("matmul: batch dimensions ", ShapeText(a_batch), " of ",
                                          A.source, " and ", ShapeText(b_batch), " of ", B.source,
                                          " do not broadcast"));
  }
  std::vector<int64_t> out_shape = batch;
  out_shape.push_back(m);
  out_shape.push_back(n);
  if (O.shape != out_shape) {
    return absl::InvalidArgumentError(Cat(O.source, ": the output has shape ", ShapeText(O.shape),
                                          ", expected ", ShapeText(out_shape), " for A ",
                                          ShapeText(A.shape), " @ B ", ShapeText(B.shape)));
  }
  ModelCatalog catalog(options.models_dir);
  absl::StatusOr<std::vector<Platform>> platforms =
      ResolvePlatforms(catalog, options.platforms, false, A.format, B.format);
  if (!platforms.ok()) return platforms.status();
  Context ctx;
  ctx.sum = false;
  ctx.out = &O;
  ctx.out_format = O.format;
  ctx.out_rounding = in.out_rounding;
  ctx.options = &options;
  ctx.out_shape = out_shape;
  ctx.elements = O.size();
  const Model& m0 = *(*platforms)[0].model;
  const FormatSpec& fa = *m0.inputs.a;
  const FormatSpec& fb = m0.InputB();
  for (const Platform& p : *platforms) {
    if (p.model->inputs.a != &fa || &p.model->InputB() != &fb) {
      return absl::InvalidArgumentError(
          Cat("--platform: ", p.name, " takes ", p.model->inputs.a->name, " x ",
              p.model->InputB().name, " inputs but ", m0.name, " takes ", fa.name, " x ", fb.name,
              ": audit them in separate runs"));
    }
  }
  absl::StatusOr<InputReader> a_reader = MakeInputReader(A, fa, in.cast_inputs, "A", m0.name, ctx.notes);
  if (!a_reader.ok()) return a_reader.status();
  absl::StatusOr<InputReader> b_reader = MakeInputReader(B, fb, in.cast_inputs, "B", m0.name, ctx.notes);
  if (!b_reader.ok()) return b_reader.status();
  // C in the final accumulator format (exactly).
  const FormatSpec& cf = m0.FinalAccumulatorFormat();
  std::vector<uint64_t> cbits;
  bool c_full = false;
  if (in.c != nullptr) {
    const Tensor& C = *in.c;
    if (absl::Status s = CheckFloat(C, "C"); !s.ok()) return s;
    const std::vector<int64_t> mn = {m, n};
    if (C.shape != out_shape && C.shape != mn) {
      return absl::InvalidArgumentError(Cat(C.source, ": C has shape ", ShapeText(C.shape),
                                            ", expected ", ShapeText(out_shape), " or ", ShapeText(mn)));
    }
    c_full = C.shape == out_shape;
    cbits.resize(static_cast<size_t>(C.size()));
    for (int64_t i = 0; i < C.size(); ++i) {
      const OpResult r = Convert(*C.format, cf, C.Bits(i), OpEnv{});
      if (r.flags & (kInexact | kOverflow)) {
        return absl::InvalidArgumentError(Cat(C.source, ": C[", i, "] is not exactly representable in ",
                                              cf.name, ", the accumulator format of ", m0.name));
      }
      cbits[static_cast<size_t>(i)] = r.bits;
    }
    for (const Platform& p : *platforms) {
      if (&p.model->FinalAccumulatorFormat() != &cf) {
        return absl::InvalidArgumentError(Cat("--c: ", p.name, " and ", m0.name,
                                              " accumulate in different formats: audit them separately"));
      }
    }
    ctx.slices.c_format = &cf;
  }
  absl::StatusOr<std::vector<double>> sa = ScaleValues(in.scale_a, m, "scale_a");
  if (!sa.ok()) return sa.status();
  absl::StatusOr<std::vector<double>> sb = ScaleValues(in.scale_b, n, "scale_b");
  if (!sb.ok()) return sb.status();
  const bool scaled = in.scale_a != nullptr || in.scale_b != nullptr;

  // Layout: A rows and B columns of batch element b, in the input formats.
  const int64_t a_mat = m * k, b_mat = k * n;
  const int64_t batches = O.size() / (m * n);
  std::vector<std::vector<int64_t>> batch_index(static_cast<size_t>(batches));
  for (int64_t bi = 0; bi < batches; ++bi) batch_index[static_cast<size_t>(bi)] = Unflatten(bi, batch);
  auto a_at = [&, reader = *a_reader](int64_t bi, int64_t i, int64_t kk) {
    const int64_t base = BatchOffset(batch_index[static_cast<size_t>(bi)], a_batch) * a_mat;
    return reader.Get(base + (in.transpose_a ? kk * m + i : i * k + kk));
  };
  auto b_at = [&, reader = *b_reader](int64_t bi, int64_t kk, int64_t j) {
    const int64_t base = BatchOffset(batch_index[static_cast<size_t>(bi)], b_batch) * b_mat;
    return reader.Get(base + (in.transpose_b ? j * k + kk : kk * n + j));
  };
  const std::vector<double>& sav = *sa;
  const std::vector<double>& sbv = *sb;
  auto sa_of = [&](int64_t e) { return sav.size() == 1 ? sav[0] : sav[static_cast<size_t>((e / n) % m)]; };
  auto sb_of = [&](int64_t e) { return sbv.size() == 1 ? sbv[0] : sbv[static_cast<size_t>(e % n)]; };
  ctx.slices.fa = &fa;
  ctx.slices.fb = &fb;
  ctx.slices.k = k;
  ctx.slices.scaled = scaled;
  ctx.slices.scale_a = sa_of;
  ctx.slices.scale_b = sb_of;
  ctx.slices.scale = [&](int64_t e) { return sa_of(e) * sb_of(e); };  // Exact in double.
  ctx.slices.scale32 = [&](int64_t e) {
    return ToDouble(Float32(), DoubleToBits(Float32(), sa_of(e) * sb_of(e)));
  };
  ctx.slices.read = [&](int64_t e, std::vector<uint64_t>& a, std::vector<uint64_t>& b, uint64_t& c) {
    const int64_t bi = e / (m * n), i = (e / n) % m, j = e % n;
    a.resize(static_cast<size_t>(k));
    b.resize(static_cast<size_t>(k));
    for (int64_t kk = 0; kk < k; ++kk) {
      a[static_cast<size_t>(kk)] = a_at(bi, i, kk);
      b[static_cast<size_t>(kk)] = b_at(bi, kk, j);
    }
    c = cbits.empty() ? 0 : cbits[static_cast<size_t>(c_full ? e : e % (m * n))];
  };
  auto exact_dot_double = [&](const std::vector<uint64_t>& x, const std::vector<uint64_t>& y, double s) {
    ExactAccumulator acc;
    acc.AddDot(fa, x, fb, y);
    if (!acc.IsFinite()) return double{NAN};
    Mpfr v;
    acc.ToMpfr(v.v);
    return mpfr_get_d(v.v, MPFR_RNDN) * s;
  };
  if (k == n && &fa == &fb) {
    ctx.transposed_b = [&, exact_dot_double](int64_t e, const std::vector<uint64_t>& a) {
      const int64_t bi = e / (m * n), j = e % n;
      std::vector<uint64_t> row(static_cast<size_t>(k));
      for (int64_t kk = 0; kk < k; ++kk) row[static_cast<size_t>(kk)] = b_at(bi, j, kk);
      return exact_dot_double(a, row, sa_of(e) * sb_of(e));
    };
  }
  if (m == k && &fa == &fb) {
    ctx.transposed_a = [&, exact_dot_double](int64_t e, const std::vector<uint64_t>& b) {
      const int64_t bi = e / (m * n), i = (e / n) % m;
      std::vector<uint64_t> col(static_cast<size_t>(k));
      for (int64_t kk = 0; kk < k; ++kk) col[static_cast<size_t>(kk)] = a_at(bi, kk, i);
      return exact_dot_double(col, b, sa_of(e) * sb_of(e));
    };
  }
  ctx.input_format = std::string(fa.name) + (&fa == &fb ? "" : Cat(" x ", fb.name));
  ctx.formula = scaled ? Cat("out = fl_", O.format->name, "(fl32(fl32(scale_a[i] * scale_b[j]) * acc)), acc = ",
                             "the platform's ", m0.OutputFormat().name,
                             " output of sum_k A[i,k] B[k,j]; exact = scale_a[i] * scale_b[j] * sum_k A[i,k] B[k,j]")
                       : Cat("out = fl_", O.format->name, "(", in.c != nullptr ? "C[i,j] + " : "",
                             "sum_k A[i,k] B[k,j]) in the platform's order; exact = the same sum, exactly");
  if (&m0.OutputFormat() != O.format) {
    ctx.notes.push_back(Cat("the output is ", O.format->name, " while ", m0.name, " writes ",
                            scaled ? "float32 (after the scale)" : std::string(m0.OutputFormat().name),
                            ": emulated values converted with ", RoundingName(in.out_rounding),
                            " and bounds widened by that conversion"));
  }
  NoteBf16Fit(O, "the output", ctx.notes);
  AddFileProvenance(ctx.provenance, "A", A);
  AddFileProvenance(ctx.provenance, "B", B);
  if (in.c != nullptr) AddFileProvenance(ctx.provenance, "C", *in.c);
  AddFileProvenance(ctx.provenance, "out", O);
  ctx.provenance.emplace_back("tool", Cat("fpconform ", FPCONFORM_REPORT_VERSION));
  ctx.platforms = *std::move(platforms);
  RecommendAll(ctx, k);

  // The pass, per batch element: A row-major and B column-major (views into the converted
  // inputs where the file already has that layout, else one transposed copy); row blocks through
  // each platform's EvaluateMatmul, then the exact values and the classes. The hot pass reads
  // rows and columns in place (Slices::view).
  // A is converted one row block at a time (a_block, rows [block_i0, block_i0 + mb)), B once
  // per batch element into column-major order (b_cm): the audit holds one extra copy of B and a
  // block of A, not of the whole inputs.
  std::vector<uint64_t> a_block, b_cm;
  int64_t block_i0 = 0;
  // The certified exact values of the current row block (batch element cert_batch, rows
  // [block_i0, block_i0 + rows)): one error-free float64 GEMM per block instead of an exact
  // accumulation per element; elements it cannot give take AddDot. Not under
  // FPCONFORM_ISA=portable (no host-double paths there, as in exact_sum), so
  // cli/isa_identity_test.sh compares the audit's JSON with and without it byte for byte.
  const bool certify = ActiveIsa() != Isa::kPortable && CertifiedMatmul::Supports(fa) &&
                       CertifiedMatmul::Supports(fb) && k > 0 && k <= (int64_t{1} << 31);
  std::optional<OzakiSplit> split_a, split_b;
  std::optional<CertifiedMatmul> cert;
  int64_t cert_batch = -1;
  if (certify) {
    ctx.slices.exact = [&](int64_t e, ExactAccumulator& acc) {
      if (!cert || e / (m * n) != cert_batch) return false;
      const int64_t i = (e / n) % m - block_i0, j = e % n;
      if (i < 0 || i >= split_a->rows()) return false;
      return cert->TryLoad(i, j, acc) != CertifiedMatmul::Route::kFallback;
    };
  }
  ctx.slices.view = [&](int64_t e, std::span<const uint64_t>& av, std::span<const uint64_t>& bv,
                        uint64_t& cv) {
    const int64_t i = (e / n) % m, j = e % n;
    av = std::span<const uint64_t>(a_block.data() + (i - block_i0) * k, static_cast<size_t>(k));
    bv = std::span<const uint64_t>(b_cm.data() + j * k, static_cast<size_t>(k));
    cv = cbits.empty() ? 0 : cbits[static_cast<size_t>(c_full ? e : e % (m * n))];
  };
  Auditor auditor(std::move(ctx));
  const Context& c = auditor.context();
  const int64_t block_rows = std::max<int64_t>(1, std::min<int64_t>(m, (1 << 18) / std::max<int64_t>(1, n)));
  const int64_t total_rows = batches * m;
  std::vector<uint64_t> cblock, d;
  std::vector<double> bounds;
  std::vector<std::vector<Emulated>> emu(c.platforms.size());
  for (int64_t bi = 0; bi < batches; ++bi) {
    b_cm.resize(static_cast<size_t>(b_mat));
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t kk = 0; kk < k; ++kk) b_cm[static_cast<size_t>(j * k + kk)] = b_at(bi, kk, j);
    }
    if (certify) {
      cert.reset();
      split_b.emplace(fb, std::span<const uint64_t>(b_cm.data(), static_cast<size_t>(b_mat)), n, k);
    }
    const uint64_t* b_ptr = b_cm.data();
    const std::span<const uint64_t> bspan(b_ptr, static_cast<size_t>(b_mat));
    for (int64_t i0 = 0; i0 < m; i0 += block_rows) {
      const int64_t mb = std::min(block_rows, m - i0);
      a_block.resize(static_cast<size_t>(mb * k));
      for (int64_t i = 0; i < mb; ++i) {
        for (int64_t kk = 0; kk < k; ++kk) a_block[static_cast<size_t>(i * k + kk)] = a_at(bi, i0 + i, kk);
      }
      block_i0 = i0;
      const std::span<const uint64_t> ablock(a_block);
      const int64_t e0 = bi * m * n + i0 * n;
      cblock.clear();
      if (!cbits.empty()) {
        cblock.resize(static_cast<size_t>(mb * n));
        for (int64_t t = 0; t < mb * n; ++t) {
          const int64_t e = e0 + t;
          cblock[static_cast<size_t>(t)] = cbits[static_cast<size_t>(c_full ? e : e % (m * n))];
        }
      }
      d.resize(static_cast<size_t>(mb * n));
      bounds.resize(static_cast<size_t>(mb * n));
      for (size_t p = 0; p < c.platforms.size(); ++p) {
        EvalOptions eo;
        eo.threads = std::max(1, options.threads);
        if (absl::Status s = EvaluateMatmul(*c.platforms[p].model, static_cast<int>(mb), static_cast<int>(n),
                                            static_cast<int>(k), ablock, Layout::kRowMajor, bspan,
                                            Layout::kColumnMajor, cblock, d, bounds, eo);
            !s.ok()) {
          return s;
        }
        emu[p].resize(d.size());
        for (size_t t = 0; t < d.size(); ++t) {
          emu[p][t] = PostProcess(c, c.platforms[p], e0 + static_cast<int64_t>(t), d[t], bounds[t]);
        }
      }
      if (certify) {
        cert.reset();
        split_a.emplace(fa, ablock, mb, k);
        cert.emplace(*split_a, *split_b, std::max(1, options.threads));
        cert_batch = bi;
      }
      auditor.JudgeRange(e0, e0 + mb * n, emu);
      Progress(options, bi * m + i0 + mb, total_rows, "matmul rows");
      if (options.cancelled && options.cancelled()) return absl::CancelledError("interrupted");
    }
  }
  return auditor.Finish("matmul");
}

absl::StatusOr<AuditResult> AuditSum(const SumAuditInput& in, const AuditOptions& options) {
  if (in.x == nullptr || in.out == nullptr) return absl::InvalidArgumentError("audit sum needs --x and --out");
  for (const auto& [t, role] : {std::pair{in.x, "X"}, {in.out, "the output"}}) {
    if (absl::Status s = CheckFloat(*t, role); !s.ok()) return s;
  }
  const Tensor& X = *in.x;
  const Tensor& O = *in.out;
  const int rank = static_cast<int>(X.shape.size());
  if (rank < 1) return absl::InvalidArgumentError(Cat(X.source, ": sum needs at least a 1-D tensor"));
  const int axis = in.axis < 0 ? in.axis + rank : in.axis;
  if (axis < 0 || axis >= rank) {
    return absl::InvalidArgumentError(Cat("--axis ", in.axis, ": out of range for ", X.source,
                                          " of rank ", rank));
  }
  std::vector<int64_t> reduced, kept = X.shape;
  for (int d = 0; d < rank; ++d) {
    if (d != axis) reduced.push_back(X.shape[static_cast<size_t>(d)]);
  }
  kept[static_cast<size_t>(axis)] = 1;
  if (O.shape != reduced && O.shape != kept) {
    return absl::InvalidArgumentError(Cat(O.source, ": the output has shape ", ShapeText(O.shape),
                                          ", expected ", ShapeText(reduced), " (or ", ShapeText(kept),
                                          " with keepdims) for the sum of ", ShapeText(X.shape),
                                          " along axis ", axis));
  }
  const int64_t k = X.shape[static_cast<size_t>(axis)];
  if (k < 1) return absl::InvalidArgumentError(Cat(X.source, ": the summed axis is empty"));
  int64_t inner = 1;
  for (int d = axis + 1; d < rank; ++d) inner *= X.shape[static_cast<size_t>(d)];
  ModelCatalog catalog(options.models_dir);
  absl::StatusOr<std::vector<Platform>> platforms = ResolvePlatforms(catalog, options.platforms, true, X.format, nullptr);
  if (!platforms.ok()) return platforms.status();
  Context ctx;
  ctx.sum = true;
  ctx.out = &O;
  ctx.out_format = O.format;
  ctx.out_rounding = in.out_rounding;
  ctx.options = &options;
  ctx.out_shape = O.shape;
  ctx.elements = O.size();
  const Model& m0 = *(*platforms)[0].model;
  const FormatSpec& fa = *m0.inputs.a;
  for (const Platform& p : *platforms) {
    if (p.model->inputs.a != &fa) {
      return absl::InvalidArgumentError(Cat("--platform: ", p.name, " takes ", p.model->inputs.a->name,
                                            " inputs but ", m0.name, " takes ", fa.name,
                                            ": audit them in separate runs"));
    }
  }
  absl::StatusOr<InputReader> xr = MakeInputReader(X, fa, in.cast_inputs, "X", m0.name, ctx.notes);
  if (!xr.ok()) return xr.status();
  ctx.slices.fa = &fa;
  ctx.slices.k = k;
  ctx.slices.scale = [](int64_t) { return 1.0; };
  ctx.slices.scale32 = [](int64_t) { return 1.0; };
  ctx.slices.read = [&, reader = *xr](int64_t e, std::vector<uint64_t>& a, std::vector<uint64_t>& b, uint64_t& c) {
    const int64_t outer = e / inner, in_i = e % inner;
    a.resize(static_cast<size_t>(k));
    for (int64_t kk = 0; kk < k; ++kk) a[static_cast<size_t>(kk)] = reader.Get((outer * k + kk) * inner + in_i);
    b.clear();
    c = 0;
  };
  ctx.input_format = std::string(fa.name);
  ctx.formula = Cat("out = fl_", O.format->name, "(sum_k X[..., k, ...]) along axis ", axis,
                    " in the platform's order; exact = the same sum, exactly");
  if (&m0.OutputFormat() != O.format) {
    ctx.notes.push_back(Cat("the output is ", O.format->name, " while ", m0.name, " writes ",
                            m0.OutputFormat().name, ": emulated values converted with ",
                            RoundingName(in.out_rounding), " and bounds widened by that conversion"));
  }
  NoteBf16Fit(O, "the output", ctx.notes);
  AddFileProvenance(ctx.provenance, "X", X);
  AddFileProvenance(ctx.provenance, "out", O);
  ctx.provenance.emplace_back("tool", Cat("fpconform ", FPCONFORM_REPORT_VERSION));
  ctx.platforms = *std::move(platforms);
  RecommendAll(ctx, k);
  Auditor auditor(std::move(ctx));
  const Context& c = auditor.context();
  const int64_t total = c.elements;
  const int64_t chunk = std::max<int64_t>(1, (1 << 20) / k);
  std::vector<std::vector<Emulated>> emu(c.platforms.size());
  std::vector<uint64_t> a, b;
  uint64_t cb = 0;
  for (int64_t e0 = 0; e0 < total; e0 += chunk) {
    const int64_t e1 = std::min(total, e0 + chunk);
    for (size_t p = 0; p < c.platforms.size(); ++p) emu[p].resize(static_cast<size_t>(e1 - e0));
    for (int64_t e = e0; e < e1; ++e) {
      c.slices.read(e, a, b, cb);
      for (size_t p = 0; p < c.platforms.size(); ++p) {
        absl::StatusOr<EvalResult> r = EvaluateSum(*c.platforms[p].model, a, 0, {});
        if (!r.ok()) return r.status();
        emu[p][static_cast<size_t>(e - e0)] = PostProcess(c, c.platforms[p], e, r->bits, r->bound);
      }
    }
    auditor.JudgeRange(e0, e1, emu);
    Progress(options, e1, total, "sum elements");
    if (options.cancelled && options.cancelled()) return absl::CancelledError("interrupted");
  }
  return auditor.Finish("sum");
}


absl::StatusOr<AuditResult> AuditCast(const CastAuditInput& in, const AuditOptions& options) {
  if (in.x == nullptr || in.out == nullptr || in.to == nullptr) {
    return absl::InvalidArgumentError("audit cast needs --x, --out and --to");
  }
  const Tensor& X = *in.x;
  const Tensor& O = *in.out;
  if (absl::Status s = CheckFloat(X, "X"); !s.ok()) return s;
  if (O.format != in.to) {
    return absl::InvalidArgumentError(Cat(O.source, ": the output is ", O.dtype, " but --to is ",
                                          in.to->name));
  }
  if (X.shape != O.shape) {
    return absl::InvalidArgumentError(Cat(O.source, ": shape ", ShapeText(O.shape), " differs from X ",
                                          ShapeText(X.shape), " (", X.source, ")"));
  }
  const FormatSpec& to = *in.to;
  const bool sr = in.env.rounding == Rounding::kStochastic;
  const bool scaled = in.scale != 1;
  uint64_t s32 = 0;
  if (scaled) {
    s32 = DoubleToBits(Float32(), in.scale);
    if (!(std::isfinite(in.scale) && in.scale != 0) || ToDouble(Float32(), s32) != in.scale) {
      return absl::InvalidArgumentError(Cat("--scale ", Num(in.scale), ": must be a non-zero float32 value"));
    }
  }
  const FormatSpec& vf = scaled ? Float32() : *X.format;
  AuditResult r;
  r.op = "cast";
  r.out_shape = O.shape;
  r.out_format = std::string(to.name);
  r.input_format = X.dtype;
  r.k = 1;
  const std::string mode = Cat(RoundingName(in.env), in.env.saturate ? ":sat" : "");
  r.formula = scaled ? Cat("out = cast_", to.name, "(fl32(X / ", Num(in.scale), "), ", mode,
                           "); X converted to float32 exactly; the value cast is the float32 quotient")
                     : Cat("out = cast_", to.name, "(X, ", mode, ")");
  AddFileProvenance(r.provenance, "X", X);
  AddFileProvenance(r.provenance, "out", O);
  r.provenance.emplace_back("tool", Cat("fpconform ", FPCONFORM_REPORT_VERSION));
  PlatformAudit pa;
  pa.name = Cat("cast ", to.name, " ", mode);
  const int64_t n = O.size();
  r.classes.assign(static_cast<size_t>(n), 0);
  std::vector<int64_t> listed_candidates;
  int64_t other_mode = 0;
  double sum_p = 0, sum_var = 0;
  const int k = in.env.sr_bits;
  Mpfr xv;
  for (int64_t e = 0; e < n; ++e) {
    uint64_t v = X.Bits(e);
    if (scaled) {
      const OpResult x32 = Convert(*X.format, Float32(), v, OpEnv{});
      if (x32.flags & (kInexact | kOverflow)) {
        return absl::InvalidArgumentError(Cat(X.source, ": element ", e, " is not exactly representable in float32"));
      }
      v = Div(Float32(), x32.bits, s32, OpEnv{}).bits;
    }
    const uint64_t y = O.Bits(e);
    AuditClass cls = AuditClass::kUnexplained;
    if (!sr) {
      const uint64_t want = Convert(vf, to, v, in.env).bits;
      if (want == y || (IsNanBits(to, want) && IsNanBits(to, y))) {
        cls = AuditClass::kIdentical;
      } else {
        // The other neighbour of v (a faithful rounding): within one ulp.
        OpEnv up = in.env, down = in.env;
        up.rounding = Rounding::kUpward;
        down.rounding = Rounding::kDownward;
        const uint64_t hi = Convert(vf, to, v, up).bits, lo = Convert(vf, to, v, down).bits;
        if (!IsNonFinite(to, y) && (y == hi || y == lo)) {
          cls = AuditClass::kWithinBound;
          ++other_mode;
        }
      }
    } else {
      OpEnv e0 = in.env;
      e0.sr_random = 0;
      const uint64_t lo = Convert(vf, to, v, e0).bits;  // r = 0 never rounds away.
      OpEnv e1 = in.env;
      e1.sr_random = (uint64_t{1} << k) - 1;
      const uint64_t hi = Convert(vf, to, v, e1).bits;
      if (lo == hi) {
        cls = (y == lo || (IsNanBits(to, y) && IsNanBits(to, lo))) ? AuditClass::kIdentical
                                                                   : AuditClass::kUnexplained;
      } else {
        // p = t / 2^k, t the top k discarded bits: away iff r >= 2^k - t. Smallest such r.
        uint64_t lo_r = 1, hi_r = (uint64_t{1} << k) - 1;
        while (lo_r < hi_r) {
          const uint64_t mid = lo_r + (hi_r - lo_r) / 2;
          OpEnv em = in.env;
          em.sr_random = mid;
          if (Convert(vf, to, v, em).bits == hi) {
            hi_r = mid;
          } else {
            lo_r = mid + 1;
          }
        }
        const double p = std::ldexp(static_cast<double>((uint64_t{1} << k) - lo_r), -k);
        ++r.sr_test.inexact;
        sum_p += p;
        sum_var += p * (1 - p);
        if (y == hi) {
          ++r.sr_test.away;
          cls = AuditClass::kWithinBound;
        } else if (y == lo) {
          cls = AuditClass::kWithinBound;
        }
      }
    }
    r.classes[static_cast<size_t>(e)] = static_cast<uint8_t>(cls);
    ++pa.counts[static_cast<int>(cls)];
    if (cls != AuditClass::kIdentical) listed_candidates.push_back(e);
  }
  r.counts = pa.counts;
  r.best_platform = pa.name;
  r.platforms.push_back(pa);
  r.mismatched = r.counts[static_cast<int>(AuditClass::kUnexplained)];
  bool sr_fail = false;
  if (sr && r.sr_test.inexact > 0) {
    r.sr_test.run = true;
    r.sr_test.expected = sum_p;
    r.sr_test.sigma = std::sqrt(sum_var);
    r.sr_test.z = r.sr_test.sigma > 0 ? (static_cast<double>(r.sr_test.away) - sum_p) / r.sr_test.sigma
                                      : (static_cast<double>(r.sr_test.away) == sum_p ? 0 : INFINITY);
    sr_fail = !(std::fabs(r.sr_test.z) <= 4.5);
    r.notes.push_back(Cat("stochastic rounding: rounded away from zero on ", r.sr_test.away, " of ",
                          r.sr_test.inexact, " inexact elements; expected ", Num(sum_p), " +- ",
                          Num(r.sr_test.sigma), " (z = ", Num(r.sr_test.z), "; the check fails beyond |z| = 4.5)"));
  }
  if (!sr && other_mode > 0) {
    r.notes.push_back(Cat(other_mode, " element(s) hold the other neighbour of the exact value (one ulp off ",
                          RoundingName(in.env), "): a different rounding mode?"));
  }
  r.verdict = (r.mismatched == 0 && !sr_fail && !(options.strict && other_mode > 0)) ? "pass" : "fail";
  // Listed: unexplained first, then the others that are not identical.
  std::stable_partition(listed_candidates.begin(), listed_candidates.end(), [&](int64_t e) {
    return r.classes[static_cast<size_t>(e)] == static_cast<uint8_t>(AuditClass::kUnexplained);
  });
  if (static_cast<int64_t>(listed_candidates.size()) > options.max_listed) {
    listed_candidates.resize(static_cast<size_t>(std::max(0, options.max_listed)));
  }
  for (int64_t e : listed_candidates) {
    AuditElement el;
    el.index = Unflatten(e, O.shape);
    el.cls = static_cast<AuditClass>(r.classes[static_cast<size_t>(e)]);
    uint64_t v = X.Bits(e);
    if (scaled) v = Div(Float32(), Convert(*X.format, Float32(), v, OpEnv{}).bits, s32, OpEnv{}).bits;
    const uint64_t y = O.Bits(e);
    el.actual_bits = y;
    el.actual = ToDouble(to, y);
    ErrorMeasureValue(vf, v, xv.v);
    el.exact = IsNanBits(vf, v) ? "nan" : MpfrHex(xv.v);
    el.exact_value = ToDouble(vf, v);
    OpEnv ee = in.env;
    ee.sr_random = 0;
    el.emulated_bits = Convert(vf, to, v, ee).bits;
    el.emulated = ToDouble(to, el.emulated_bits);
    el.error_ulp = (IsNonFinite(to, y) || IsNonFinite(vf, v)) ? NAN : UlpError(to, y, xv.v);
    el.bound = 1;
    el.error_over_bound = std::fabs(el.error_ulp);
    el.abs_sum = std::fabs(el.exact_value);
    if (el.cls == AuditClass::kUnexplained) {
      const double yd = el.actual, xd = el.exact_value;
      OpEnv sat = in.env, nosat = in.env;
      sat.saturate = true;
      nosat.saturate = false;
      sat.sr_random = nosat.sr_random = 0;
      if (IsNanBits(to, y) && !IsNanBits(vf, v)) {
        el.diagnosis = in.env.saturate ? "NaN where a saturating cast gives max finite" : "NaN where none is expected";
      } else if (!in.env.saturate && y == Convert(vf, to, v, sat).bits) {
        el.diagnosis = "saturated: the kernel's cast saturates (add :sat to --to?)";
      } else if (in.env.saturate && y == Convert(vf, to, v, nosat).bits) {
        el.diagnosis = "not saturated: the kernel's cast overflows (drop :sat from --to?)";
      } else if (scaled && y == Convert(*X.format, to, X.Bits(e), in.env).bits) {
        el.diagnosis = "scale missing (out = cast(X))";
      } else if (yd == -el.emulated && yd != 0) {
        el.diagnosis = "sign flipped";
      } else if (yd == 0 && xd != 0 && std::fabs(xd) < ToDouble(to, MinNormalBits(to))) {
        el.diagnosis = "flushed to zero (FTZ?)";
      } else {
        el.diagnosis = "no simple relation found";
      }
    }
    r.elements.push_back(std::move(el));
  }
  r.histogram.assign(34, 0);
  return r;
}

absl::StatusOr<CompareResult> CompareMatmul(const MatmulAuditInput& ref, const std::string& platform_ref,
                                            const MatmulAuditInput& port, const std::string& platform,
                                            const AuditOptions& options) {
  if (ref.out == nullptr || port.out == nullptr) {
    return absl::InvalidArgumentError("compare needs --out-ref and --out");
  }
  if (ref.out->shape != port.out->shape) {
    return absl::InvalidArgumentError(Cat("compare: ", ref.out->source, " has shape ",
                                          ShapeText(ref.out->shape), " but ", port.out->source,
                                          " has ", ShapeText(port.out->shape)));
  }
  AuditOptions o = options;
  o.keep_bounds = true;
  o.platforms = {platform_ref};
  CompareResult c;
  absl::StatusOr<AuditResult> a = AuditMatmul(ref, o);
  if (!a.ok()) return a.status();
  o.platforms = {platform};
  absl::StatusOr<AuditResult> b = AuditMatmul(port, o);
  if (!b.ok()) return b.status();
  c.ref = *std::move(a);
  c.port = *std::move(b);
  const FormatSpec& fr = *ref.out->format;
  const FormatSpec& fp = *port.out->format;
  const int64_t n = ref.out->size();
  const auto unexplained = static_cast<uint8_t>(AuditClass::kUnexplained);
  for (int64_t e = 0; e < n; ++e) {
    const double yr = ToDouble(fr, ref.out->Bits(e)), yp = ToDouble(fp, port.out->Bits(e));
    const double allowed = (c.ref.bounds[static_cast<size_t>(e)] + c.port.bounds[static_cast<size_t>(e)]) * kUp;
    const bool same_nonfinite = !std::isfinite(yr) && !std::isfinite(yp) &&
                                (std::isnan(yr) == std::isnan(yp)) && (std::isnan(yr) || yr == yp);
    const bool ok = same_nonfinite || std::fabs(yr - yp) * (1 + 0x1p-52) <= allowed;
    if (ok) {
      ++c.consistent;
      continue;
    }
    ++c.inconsistent;
    const bool fr_bad = c.ref.best_classes[static_cast<size_t>(e)] == unexplained;
    const bool fp_bad = c.port.best_classes[static_cast<size_t>(e)] == unexplained;
    const char* side = fr_bad && fp_bad ? "both" : fr_bad ? "ref" : fp_bad ? "port" : "neither";
    ++(fr_bad && fp_bad ? c.fault_both : fr_bad ? c.fault_ref : fp_bad ? c.fault_port : c.fault_neither);
    if (static_cast<int64_t>(c.listed.size()) < options.max_listed) {
      c.listed.emplace_back(Unflatten(e, ref.out->shape), side);
    }
  }
  c.verdict = c.inconsistent == 0 ? "pass" : "fail";
  c.ref.bounds.clear();
  c.port.bounds.clear();
  return c;
}

}  // namespace fpconform::reports
