#include "composite/attention_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "cases/toml_files.h"
#include "cases/toml_reader.h"
#include "formats/ops.h"
#include "formats/str_cat.h"
#include "formats/user_file.h"
#include "oracles/certified_double.h"

namespace fpconform::composite {
namespace {

namespace cd = certified;

const FormatSpec* FloatFormat(TomlReader& r, const toml::table& t, std::string_view prefix,
                              std::string_view key) {
  const std::optional<std::string> name = r.String(t, prefix, key, TomlKey::kRequired);
  if (!name) return nullptr;
  const FormatSpec* f = FindFormat(*name);
  if (f == nullptr || f->kind != FormatKind::kFloat || f->d.precision > 53 || !f->has_sign ||
      !f->has_zero) {
    r.Fail(t.get(key), TomlReader::Dotted(prefix, key),
           Cat("must be a float format of at most 53 bits with sign and zero (float32 bfloat16 float16 ...), got \"",
               *name, "\""));
    return nullptr;
  }
  return f;
}

absl::StatusOr<AttentionModel> ParseTable(const toml::table& root, std::string_view file) {
  TomlReader r(file);
  AttentionModel m;
  std::set<std::string> keys = {"formats.input", "formats.compute", "formats.p", "formats.output"};
  r.CheckKeys(root, "", {"name", "description", "kind", "formats", "scale", "exp_ulp", "row_sum", "normalize",
                         "key_block", "fully_masked", "log_ulp", "fully_masked_lse", "provenance"});
  if (std::optional<std::string> s = r.String(root, "", "name", TomlKey::kRequired)) m.name = *s;
  if (std::optional<std::string> s = r.String(root, "", "description", TomlKey::kRequired)) m.description = *s;
  if (std::optional<std::string> s = r.String(root, "", "kind", TomlKey::kRequired); s && *s != "attention") {
    r.Fail(root.get("kind"), "kind", "must be \"attention\"");
  }
  if (const toml::table* t = r.Table(root, "", "formats", TomlKey::kRequired)) {
    r.CheckKeys(*t, "formats", {"input", "compute", "p", "output", "lse"});
    m.input = FloatFormat(r, *t, "formats", "input");
    m.compute = FloatFormat(r, *t, "formats", "compute");
    m.p_format = FloatFormat(r, *t, "formats", "p");
    m.output = FloatFormat(r, *t, "formats", "output");
    if (t->contains("lse")) {
      m.lse_format = FloatFormat(r, *t, "formats", "lse");
      keys.insert("formats.lse");
    }
    if (r.ok() && m.compute != &Float32()) {
      r.Fail(t->get("compute"), "formats.compute", "only float32 is supported as the compute format");
    }
  }
  if (std::optional<ScalePlacement> s = r.Choice<ScalePlacement>(
          root, "", "scale",
          {{"separate", ScalePlacement::kSeparate}, {"fold_q", ScalePlacement::kFoldQ},
           {"fold_qk_sqrt", ScalePlacement::kFoldQKSqrt}, {"exponent", ScalePlacement::kExponent}},
          TomlKey::kRequired)) {
    m.scale = *s;
  }
  if (std::optional<double> e = r.Number(root, "", "exp_ulp", 0.5, 1e6, TomlKey::kRequired)) m.exp_ulp = *e;
  if (std::optional<bool> b = r.Choice<bool>(root, "", "row_sum", {{"unrounded", false}, {"rounded", true}},
                                             TomlKey::kRequired)) {
    m.row_sum_rounded = *b;
  }
  if (std::optional<Normalize> n = r.Choice<Normalize>(
          root, "", "normalize",
          {{"divide", Normalize::kDivide}, {"reciprocal", Normalize::kReciprocal}, {"exp_lse", Normalize::kExpLse}},
          TomlKey::kRequired)) {
    m.normalize = *n;
  }
  if (std::optional<int64_t> k = r.Int(root, "", "key_block", 0, int64_t{1} << 30, TomlKey::kRequired)) {
    m.key_block = *k;
  }
  if (std::optional<FullyMaskedRows> f = r.Choice<FullyMaskedRows>(
          root, "", "fully_masked", {{"nan", FullyMaskedRows::kNaN}, {"zero", FullyMaskedRows::kZero}},
          TomlKey::kRequired)) {
    m.fully_masked = *f;
  }
  for (const char* k : {"scale", "exp_ulp", "row_sum", "normalize", "key_block", "fully_masked"}) keys.insert(k);
  // The LSE's parameters: required with formats.lse, refused without it (they would describe
  // an output the kernel does not write).
  const TomlKey lse_key = m.lse_format != nullptr ? TomlKey::kRequired : TomlKey::kOptional;
  if (m.lse_format == nullptr && r.ok()) {
    for (const char* k : {"log_ulp", "fully_masked_lse"}) {
      if (root.contains(k)) r.Fail(root.get(k), k, "needs formats.lse (the LSE's format)");
    }
  }
  if (std::optional<double> e = r.Number(root, "", "log_ulp", 0.5, 1e6, lse_key)) m.log_ulp = *e;
  if (std::optional<double> f = r.Choice<double>(root, "", "fully_masked_lse",
                                                 {{"inf", INFINITY}, {"-inf", -INFINITY}, {"nan", NAN}}, lse_key)) {
    m.fully_masked_lse = *f;
  }
  if (m.lse_format != nullptr && m.normalize == Normalize::kExpLse && r.ok()) {
    r.Fail(root.get("normalize"), "normalize",
           "exp_lse (a running log-sum-exp) with formats.lse: that LSE's error is not modelled (attention_model.h)");
  }
  if (m.lse_format != nullptr) {
    keys.insert("log_ulp");
    keys.insert("fully_masked_lse");
  }
  if (const toml::table* t = r.Table(root, "", "provenance", TomlKey::kRequired); t != nullptr && r.ok()) {
    for (const auto& [key, node] : *t) {
      const std::string k(key.str());
      if (k == "unconfirmed") continue;
      if (keys.count(k) == 0) {
        r.Fail(&node, Cat("provenance.", k), "names no key of this file");
        break;
      }
      if (const std::optional<std::string> s = r.String(*t, "provenance", k)) m.provenance.emplace_back(k, *s);
    }
    for (const std::string& k : keys) {
      if (r.ok() && !t->contains(k)) r.Fail(t, Cat("provenance.\"", k, "\""), "required key missing");
    }
    if (r.ok()) {
      std::vector<const toml::node*> nodes;
      if (std::optional<std::vector<std::string>> u =
              r.Strings(*t, "provenance", "unconfirmed", TomlKey::kOptional, &nodes)) {
        for (size_t i = 0; i < u->size() && r.ok(); ++i) {
          if (keys.count((*u)[i]) == 0) {
            r.Fail(nodes[i], "provenance.unconfirmed", Cat("'", (*u)[i], "' names no key of this file"));
          }
        }
        m.unconfirmed = *std::move(u);
      }
    }
  }
  if (!r.ok()) return r.status();
  return m;
}

// Rounding of a double into a float format (RNE) and back. float32: the host conversion, which
// IEEE 754 defines as correctly rounded (round to nearest even under the default environment,
// subnormals included); attention_model_test checks it against formats' Convert.
double RoundTo(const FormatSpec& f, double x) {
  if (&f == &Float64()) return x;
  if (&f == &Float32()) return static_cast<double>(static_cast<float>(x));
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  const uint64_t r = Convert(Float64(), f, b, OpEnv{}).bits;
  double v;
  cd::DecodeToDouble(f, r, false, &v);
  return v;
}

double Gamma(double k, double u) { return k * u / (1 - k * u); }
double UnitRoundoff(const FormatSpec& f) { return std::ldexp(1.0, -Precision(f)); }
// The smallest normal number: the absolute error of a rounding below the normal range, flush to
// zero included (ex2.approx.ftz, FTZ/DAZ datapaths).
double UnderflowUnit(const FormatSpec& f) { return std::ldexp(1.0, Emin(f)); }

bool Attended(const AttentionProblem& p, int64_t i, int64_t j) {
  if (p.causal && j > i) return false;
  const size_t at = static_cast<size_t>(i * p.s_k + j);
  if (!p.keep_mask.empty() && p.keep_mask[at] == 0) return false;
  if (!p.additive_mask.empty() && p.additive_mask[at] == -INFINITY) return false;
  return true;
}

// One row: emulated values and enclosures for its d_v elements.
// kscaled: K times sqrt(scale) rounded to the input format (fold_qk_sqrt), else empty.
// The row's LSE outputs (exact == nullptr: none wanted).
struct LseOut {
  const ExactEnclosure* exact = nullptr;
  uint64_t* bits = nullptr;
  double *lo = nullptr, *hi = nullptr;
};

// bits (of f) and the outward roundings into f of [ylo, yhi] (values of f).
void Enclose(const FormatSpec& f, double y, double ylo, double yhi, uint64_t* bits, double* lo, double* hi) {
  uint64_t yb, blo, bhi;
  std::memcpy(&yb, &y, sizeof yb);
  *bits = Convert(Float64(), f, yb, OpEnv{}).bits;
  OpEnv dn, upw;
  dn.rounding = Rounding::kDownward;
  upw.rounding = Rounding::kUpward;
  std::memcpy(&blo, &ylo, sizeof blo);
  std::memcpy(&bhi, &yhi, sizeof bhi);
  cd::DecodeToDouble(f, Convert(Float64(), f, blo, dn).bits, false, lo);
  cd::DecodeToDouble(f, Convert(Float64(), f, bhi, upw).bits, false, hi);
}

void Row(const AttentionModel& m, const AttentionProblem& p, int64_t i, std::span<const double> kscaled,
         std::span<const ExactEnclosure> pv, std::span<const ExactEnclosure> exact, std::span<uint64_t> bits,
         std::span<double> lo, std::span<double> hi, const LseOut& lse) {
  const FormatSpec& F = *m.compute;
  const FormatSpec& P = *m.p_format;
  const FormatSpec& O = *m.output;
  const size_t dd = static_cast<size_t>(p.d), dv = static_cast<size_t>(p.d_v);
  const double scale = p.scale.has_value() ? *p.scale : 1.0 / std::sqrt(static_cast<double>(p.d));
  const uint64_t nan_bits = Convert(Float64(), O, 0x7FF8000000000000ull, OpEnv{}).bits;
  const auto set_all = [&](double v) {
    uint64_t b;
    std::memcpy(&b, &v, sizeof b);
    const uint64_t ob = Convert(Float64(), O, b, OpEnv{}).bits;
    for (size_t c = 0; c < dv; ++c) {
      bits[c] = std::isnan(v) ? nan_bits : ob;
      lo[c] = v;
      hi[c] = v;
    }
    if (lse.exact != nullptr) {  // NaN rows: NaN; fully masked rows: the model's convention.
      const double lv = std::isnan(v) ? NAN : m.fully_masked_lse;
      Enclose(*m.lse_format, lv, lv, lv, lse.bits, lse.lo, lse.hi);
      if (std::isnan(lv)) *lse.lo = *lse.hi = NAN;
    }
  };
  std::vector<int64_t> keys;
  bool finite = true;
  for (size_t c = 0; c < dd; ++c) finite = finite && std::isfinite(p.q[static_cast<size_t>(i) * dd + c]);
  for (int64_t j = 0; j < p.s_k; ++j) {
    if (!Attended(p, i, j)) continue;
    keys.push_back(j);
    for (size_t c = 0; c < dd; ++c) finite = finite && std::isfinite(p.k[static_cast<size_t>(j) * dd + c]);
    for (size_t c = 0; c < dv; ++c) finite = finite && std::isfinite(p.v[static_cast<size_t>(j) * dv + c]);
    if (!p.additive_mask.empty()) finite = finite && std::isfinite(p.additive_mask[static_cast<size_t>(i * p.s_k + j)]);
  }
  if (!finite) return set_all(NAN);
  if (keys.empty()) return set_all(m.fully_masked == FullyMaskedRows::kZero ? 0.0 : NAN);
  const size_t n = keys.size();
  // Scores as the model places the scale.
  const double scale_f = RoundTo(F, scale);
  const double sqrt_f = RoundTo(F, std::sqrt(scale));
  const FormatSpec& In = *m.input;
  std::vector<double> s(n), a(n), qf(dd);
  for (size_t c = 0; c < dd; ++c) {
    const double q = p.q[static_cast<size_t>(i) * dd + c];
    qf[c] = m.scale == ScalePlacement::kFoldQ ? RoundTo(In, RoundTo(F, q * scale_f))
            : m.scale == ScalePlacement::kFoldQKSqrt ? RoundTo(In, RoundTo(F, q * sqrt_f))
                                                    : q;
  }
  double amax = 0;
  for (size_t x = 0; x < n; ++x) {
    const double* kr = &p.k[static_cast<size_t>(keys[x]) * dd];
    double dot = 0, ab = 0;
    for (size_t c = 0; c < dd; ++c) {
      const double kv = kscaled.empty() ? kr[c] : kscaled[static_cast<size_t>(keys[x]) * dd + c];
      dot += qf[c] * kv;
      ab += std::fabs(p.q[static_cast<size_t>(i) * dd + c] * kr[c]);
    }
    double sc = RoundTo(F, dot);
    // With an additive mask the scale cannot wait for the exponent: applied to the score first.
    if (m.scale == ScalePlacement::kSeparate || (m.scale == ScalePlacement::kExponent && !p.additive_mask.empty())) {
      sc = RoundTo(F, sc * scale_f);
    }
    if (!p.additive_mask.empty()) sc = RoundTo(F, sc + p.additive_mask[static_cast<size_t>(i * p.s_k + keys[x])]);
    s[x] = sc;
    a[x] = std::fabs(scale) * ab;
    amax = std::max(amax, a[x]);
  }
  const double mx = *std::max_element(s.begin(), s.end());
  // Weights: w = fl(exp(fl(arg))), arg = s - m, or (exponent placement) fl(s c - m c) with
  // c = fl(scale), one rounding (FFMA), the scores then unscaled.
  std::vector<double> w(n), pt(n);
  double l = 0;
  const double log2e_scale = RoundTo(F, scale * 1.4426950408889634);
  for (size_t x = 0; x < n; ++x) {
    double arg;
    if (m.scale == ScalePlacement::kExponent && p.additive_mask.empty()) {
      arg = RoundTo(F, s[x] * log2e_scale - RoundTo(F, mx * log2e_scale)) * 0.6931471805599453;
    } else {
      arg = RoundTo(F, s[x] - mx);
    }
    const cd::Ev e = arg < -700 ? cd::Ev{0, 0} : cd::ExpEv(cd::Exact(arg));
    w[x] = RoundTo(F, e.y);
    pt[x] = RoundTo(P, w[x]);
    l = RoundTo(F, l + (m.row_sum_rounded ? pt[x] : w[x]));
  }
  const double recip = RoundTo(F, 1.0 / l);
  // The bound's row quantities (attention_model.h).
  const double u = UnitRoundoff(F);
  const double uin = UnitRoundoff(In);
  const double up = &P == &F ? 0.0 : UnitRoundoff(P);
  const double eps = m.exp_ulp * 2 * u;
  const double nd = static_cast<double>(n);
  const double r = m.key_block > 0 ? std::ceil(nd / static_cast<double>(m.key_block)) - 1 : 0;
  double cs = Gamma(static_cast<double>(p.d), u) + u;
  if (m.scale == ScalePlacement::kFoldQ) cs += uin + u;
  if (m.scale == ScalePlacement::kFoldQKSqrt) cs += 2 * uin + 3 * u;
  double delta = 0, tmax = 0;
  const bool bounded = amax <= 0x1p20 && p.d <= 4096;
  // The scores s are unscaled where the scale waits for the exponent: the bound's quantities
  // are in the scaled units of the proof (T, m), so multiplied by the scale there.
  const double su = m.scale == ScalePlacement::kExponent && p.additive_mask.empty() ? std::fabs(scale) : 1.0;
  const double mx_abs = su * std::fabs(mx);
  for (size_t x = 0; x < n; ++x) {
    // Within 2^-20 relative of the kernel's computed argument's own value.
    const double t = su * (s[x] - mx) * (1 + 0x1p-50);
    const double dj = cs * a[x] + 5 * u * (std::fabs(t) + mx_abs) + 0x1p-20 * u;
    if (t + dj < -150) continue;  // Weight below 2^-216: inside tau.
    delta = std::max(delta, dj);
    tmax = std::max(tmax, std::fabs(t));
  }
  delta += u * tmax;  // The rescalings' arguments.
  // Each quantity near 1 minus 1 is computed with an absolute error below 2^-50 (libm's exp and
  // pow within an ulp, a few roundings): added.
  const double theta = std::exp(delta) * std::pow(1 + eps, 1 + r) * std::pow(1 + u, 2 + r) - 1 + 0x1p-50;
  const double A = (1 + theta) * (1 + up) * (1 + Gamma(nd + 1, u)) - 1 + 0x1p-50;
  const double Bl = (1 + theta) * (1 + (m.row_sum_rounded ? up : 0)) * (1 + Gamma(nd, u)) - 1 + 0x1p-50;
  const double lse_mag = mx_abs + std::log(nd) + 1;
  const double nu = m.normalize == Normalize::kDivide       ? u
                    : m.normalize == Normalize::kReciprocal ? 2 * u + u * u
                                                            : (1 + eps) * (1 + u) * (1 + u) * std::exp(2 * u * lse_mag) - 1 + 0x1p-50;
  // Underflowed weights, absolute, in units of the largest weight (~1; l >= 1/2 with the margin).
  const double tau = 2 * (nd * (2 + r) * UnderflowUnit(F) + nd * UnderflowUnit(P));
  double vmax = 0;
  for (size_t x = 0; x < n; ++x) {
    for (size_t c = 0; c < dv; ++c) vmax = std::max(vmax, std::fabs(p.v[static_cast<size_t>(keys[x]) * dv + c]));
  }
  // The numerators in index order in float32 (the compute format: checked on reading), keys
  // outer so that V's rows are read contiguously.
  std::vector<float> nums(dv, 0.0f);
  for (size_t x = 0; x < n; ++x) {
    if (pt[x] == 0) continue;  // + 0 * v leaves a float32 sum unchanged (v finite here).
    const double* vr = &p.v[static_cast<size_t>(keys[x]) * dv];
    for (size_t c = 0; c < dv; ++c) nums[c] = static_cast<float>(static_cast<double>(nums[c]) + pt[x] * vr[c]);
  }
  if (lse.exact != nullptr) {
    // Emulated: m (scaled: fl(m scale) where the scale waited for the exponent) + fl(log l).
    const double ms = su != 1.0 ? RoundTo(F, mx * scale_f) : mx;
    const double lg = RoundTo(F, cd::LogEv(cd::Exact(l)).y);
    const double y = RoundTo(F, ms + lg);
    // The bound (attention_model.h "The LSE"), in binary64 on non-negative numbers, rounded up
    // by a relative 2^-40 at the end.
    // l's underflow: its terms are the compute format's weights, or P's where the sum adds P.
    const double tau_l = 2 * (nd * (2 + r) * UnderflowUnit(F) + (m.row_sum_rounded ? nd * UnderflowUnit(P) : 0.0));
    const double eta = Bl + tau_l;
    const ExactEnclosure& ex = *lse.exact;
    if (!bounded || !(eta < 0.5) || !std::isfinite(ex.lo) || !std::isfinite(ex.hi)) {
      Enclose(*m.lse_format, y, NAN, NAN, lse.bits, lse.lo, lse.hi);
      *lse.lo = *lse.hi = NAN;
    } else {
      const double M = mx_abs + 2 * delta;              // |m| of any admitted implementation.
      const double G = std::log(nd) + delta + 0x1p-50;  // |log L_m|.
      const double lam = -std::log1p(-eta) + 0x1p-50;   // |log l - log L_m|.
      const double lerr = m.log_ulp * 2 * u * std::max(1.0, G + lam);
      const double lg_abs = G + lam + lerr;
      const double E = ((su != 1.0 ? (2 * u + u * u) * M : 0.0) + u * (M * (1 + 3 * u) + lg_abs) + lerr + lam) *
                       (1 + 0x1p-40);
      Enclose(*m.lse_format, y, ex.lo - E, ex.hi + E, lse.bits, lse.lo, lse.hi);
    }
  }
  for (size_t c = 0; c < dv; ++c) {
    const double num = nums[c];
    const double y = m.normalize == Normalize::kDivide ? RoundTo(F, num / l) : RoundTo(F, num * recip);
    uint64_t yb;
    std::memcpy(&yb, &y, sizeof yb);
    bits[c] = Convert(Float64(), O, yb, OpEnv{}).bits;
    const ExactEnclosure& ex = exact[c];
    const double o_abs = std::max(std::fabs(ex.lo), std::fabs(ex.hi));
    const double pvc = pv[c].hi;
    if (!bounded || !(Bl < 0.5) || !std::isfinite(ex.lo) || !std::isfinite(ex.hi) || !std::isfinite(pvc)) {
      lo[c] = NAN;
      hi[c] = NAN;
      continue;
    }
    // E, rounded up by a relative 2^-40 (a few binary64 operations on non-negative numbers).
    const double E = ((A * pvc + Bl * o_abs) / (1 - Bl) * (1 + nu) + nu * o_abs + tau * (vmax + o_abs)) *
                     (1 + 0x1p-40);
    // The output rounding of any value in [ex.lo - E, ex.hi + E] lies between the roundings of
    // its ends downward and upward.
    OpEnv dn, upw;
    dn.rounding = Rounding::kDownward;
    upw.rounding = Rounding::kUpward;
    const double ylo = ex.lo - E, yhi = ex.hi + E;
    uint64_t blo, bhi;
    std::memcpy(&blo, &ylo, sizeof blo);
    std::memcpy(&bhi, &yhi, sizeof bhi);
    double vlo, vhi;
    cd::DecodeToDouble(O, Convert(Float64(), O, blo, dn).bits, false, &vlo);
    cd::DecodeToDouble(O, Convert(Float64(), O, bhi, upw).bits, false, &vhi);
    lo[c] = vlo;
    hi[c] = vhi;
  }
}

}  // namespace

absl::StatusOr<AttentionModel> ParseAttentionModel(std::string_view toml_text, std::string_view file_name) {
  return ParseTomlText<AttentionModel>(toml_text, file_name, &ParseTable);
}

absl::StatusOr<AttentionModel> LoadAttentionModel(const std::string& path) {
  return LoadNamedTomlFile<AttentionModel>(path, &ParseAttentionModel);
}

absl::StatusOr<std::vector<AttentionModel>> LoadAttentionModels(const std::string& dir) {
  return LoadTomlDirectory<AttentionModel>(dir, "attention models directory", &LoadAttentionModel);
}

absl::Status EmulateAttentionRows(const AttentionModel& m, const AttentionProblem& p, int64_t r0, int64_t r1,
                                  std::span<const ExactEnclosure> pv, std::span<const ExactEnclosure> exact,
                                  std::span<uint64_t> bits, std::span<double> lo, std::span<double> hi,
                                  int threads, const AttentionLseRows* lse) {
  if (absl::Status s = CheckAttention(p); !s.ok()) return s;
  const size_t n = static_cast<size_t>((r1 - r0) * p.d_v);
  if (r0 < 0 || r1 < r0 || r1 > p.s_q || pv.size() != n || exact.size() != n || bits.size() != n ||
      lo.size() != n || hi.size() != n) {
    return absl::InvalidArgumentError("EmulateAttentionRows: spans of (r1 - r0) x d_v elements needed");
  }
  if (lse != nullptr) {
    if (m.lse_format == nullptr) {
      return absl::InvalidArgumentError(Cat("EmulateAttentionRows: model ", m.name, " writes no LSE (formats.lse)"));
    }
    const size_t rows = static_cast<size_t>(r1 - r0);
    if (lse->exact.size() != rows || lse->bits.size() != rows || lse->lo.size() != rows || lse->hi.size() != rows) {
      return absl::InvalidArgumentError("EmulateAttentionRows: LSE spans of r1 - r0 elements needed");
    }
  }
  const size_t dv = static_cast<size_t>(p.d_v);
  std::vector<double> kscaled;
  if (m.scale == ScalePlacement::kFoldQKSqrt) {
    const double scale = p.scale.has_value() ? *p.scale : 1.0 / std::sqrt(static_cast<double>(p.d));
    const double sqrt_f = RoundTo(*m.compute, std::sqrt(scale));
    kscaled.resize(p.k.size());
    for (size_t x = 0; x < p.k.size(); ++x) kscaled[x] = RoundTo(*m.input, RoundTo(*m.compute, p.k[x] * sqrt_f));
  }
  const int t = std::max(1, threads);
  auto work = [&](int k) {
    for (int64_t i = r0 + k; i < r1; i += t) {
      const size_t at = static_cast<size_t>(i - r0) * dv;
      LseOut lo_row;
      if (lse != nullptr) {
        const size_t r = static_cast<size_t>(i - r0);
        lo_row = LseOut{&lse->exact[r], &lse->bits[r], &lse->lo[r], &lse->hi[r]};
      }
      Row(m, p, i, kscaled, pv.subspan(at, dv), exact.subspan(at, dv), bits.subspan(at, dv), lo.subspan(at, dv),
          hi.subspan(at, dv), lo_row);
    }
  };
  std::vector<std::thread> pool;
  for (int k = 1; k < t; ++k) pool.emplace_back(work, k);
  work(0);
  for (std::thread& th : pool) th.join();
  return absl::OkStatus();
}

}  // namespace fpconform::composite
