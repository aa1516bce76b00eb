#include "composite/attention_model.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "accumulation/dot_bound.h"
#include "base/data_dir.h"
#include "base/isa.h"
#include "base/run_workers.h"
#include "base/str_cat.h"
#include "base/user_file.h"
#include "cases/toml_files.h"
#include "cases/toml_reader.h"
#include "composite/attention_model_kernels.h"
#include "formats/ops.h"
#include "oracles/certified_double.h"

namespace fpconform::composite {
namespace {

namespace cd = certified;
using attention_model_internal::DotArgs;
using attention_model_internal::ExpWeights;
using attention_model_internal::NumArgs;
using attention_model_internal::RowDots;
using attention_model_internal::RowNums;

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

// Every value of `small` is a value of `big`.
bool HoldsEvery(const FormatSpec& big, const FormatSpec& small) {
  return big.fraction_bits >= small.fraction_bits && Emax(big) >= Emax(small) &&
         MinSubnormalExponent(big) <= MinSubnormalExponent(small);
}

// matmul.qk / matmul.pv (attention_model.h, "The matmuls"): the accumulation model `key` names
// in `dir`, checked against the matmul's operand formats (a, b) and the compute format; for PV
// also that a key block without an attended key (zero products) leaves the accumulator as it is.
std::shared_ptr<const MatmulModel> ReadMatmul(TomlReader& r, const toml::table& t, std::string_view key,
                                              const std::string& dir, const FormatSpec* a, const FormatSpec* b,
                                              const FormatSpec* compute, bool pv) {
  const std::string dotted = TomlReader::Dotted("matmul", key);
  const std::optional<std::string> name = r.String(t, "matmul", key, TomlKey::kRequired);
  if (!name || !r.ok()) return nullptr;
  const toml::node* at = t.get(key);
  bool plain = !name->empty();
  for (char ch : *name) plain = plain && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.');
  if (!plain || name->find("..") != std::string::npos) {
    r.Fail(at, dotted, Cat("must name an accumulation model (a file stem [a-z0-9.-]), got \"", *name, "\""));
    return nullptr;
  }
  const std::string path = (std::filesystem::path(dir) / (*name + ".toml")).string();
  if (!std::filesystem::is_regular_file(path)) {
    r.Fail(at, dotted, Cat("no accumulation model \"", *name, "\" in ", dir));
    return nullptr;
  }
  // A model, or an envelope (MODEL_FORMAT.md, "Envelopes"): every member.
  std::vector<Model> members;
  absl::Status status;
  absl::StatusOr<std::string> text = ReadUserFile(path, kMaxTextFileBytes, "model file");
  if (!text.ok()) {
    status = text.status();
  } else if (IsEnvelopeText(*text)) {
    absl::StatusOr<Envelope> env = LoadEnvelopeFile(path);
    status = env.status();
    for (size_t x = 0; env.ok() && x < env->members.size() && status.ok(); ++x) {
      absl::StatusOr<Model> mm = LoadModelFile((std::filesystem::path(dir) / (env->members[x] + ".toml")).string());
      status = mm.status();
      if (mm.ok()) members.push_back(*std::move(mm));
    }
  } else {
    absl::StatusOr<Model> mm = LoadModelFile(path);
    status = mm.status();
    if (mm.ok()) members.push_back(*std::move(mm));
  }
  if (!status.ok()) {
    r.Fail(at, dotted, Cat("accumulation model \"", *name, "\": ", status.message()));
    return nullptr;
  }
  const Model* model = nullptr;
  auto fail = [&](const std::string& what) {
    const std::string member = model->name != *name ? Cat(" (member \"", model->name, "\")") : std::string();
    r.Fail(at, dotted, Cat("accumulation model \"", *name, "\"", member, " ", what));
    return nullptr;
  };
  for (const Model& member : members) {
    model = &member;
    if (!model->Supports(ModelOp::kDot)) return fail("does not describe a dot product (operations)");
    if (absl::StatusOr<DotBound> probe = ComputeDotBound(*model, 1); !probe.ok()) {
      return fail(Cat("has no proven dot bound: ", probe.status().message()));
    }
    if (a != nullptr && !HoldsEvery(*model->inputs.a, *a)) {
      return fail(Cat("reads ", model->inputs.a->name, ", which does not hold every ", a->name, " operand"));
    }
    if (b != nullptr && !HoldsEvery(model->InputB(), *b)) {
      return fail(Cat("reads ", model->InputB().name, ", which does not hold every ", b->name, " operand"));
    }
    if (compute != nullptr && &model->OutputFormat() != compute) {
      return fail(Cat("writes ", model->OutputFormat().name, ", not the compute format ", compute->name));
    }
    if (pv) {
      const Model& mm = *model;
      const bool flushes = mm.adder.env.flush_to_zero || mm.adder.env.denormals_are_zero ||
                           mm.accumulator.combine_env.flush_to_zero;
      const bool truncates_acc = mm.adder.kind == AdderKind::kFused && mm.adder.fraction_bits < mm.accumulator.fraction_bits;
      if (flushes || truncates_acc || &mm.FinalAccumulatorFormat() != compute || mm.accumulator.fraction_bits != compute->fraction_bits) {
        return fail("does not add zero products exactly to a compute-format accumulator (flush to zero, a reduced "
                    "accumulator, or a fused F below its fraction bits): the blocked P V bound needs it");
      }
    }
  }
  return std::make_shared<const MatmulModel>(*name, std::move(members));
}

absl::StatusOr<AttentionModel> ParseTable(const toml::table& root, std::string_view file, const std::string& models_dir) {
  TomlReader r(file);
  AttentionModel m;
  std::set<std::string> keys = {"formats.input", "formats.compute", "formats.p", "formats.output"};
  r.CheckKeys(root, "", {"name", "description", "kind", "formats", "scale", "exp_ulp", "row_sum", "normalize",
                         "key_block", "fully_masked", "log_ulp", "fully_masked_lse", "num_splits", "matmul",
                         "provenance"});
  if (std::optional<std::string> s = r.String(root, "", "name", TomlKey::kRequired)) m.name = *s;
  if (std::optional<std::string> s = r.String(root, "", "description", TomlKey::kRequired)) m.description = *s;
  if (std::optional<std::string> s = r.String(root, "", "kind", TomlKey::kRequired); s && *s != "attention") {
    r.Fail(root.get("kind"), "kind", "must be \"attention\"");
  }
  if (const toml::table* t = r.Table(root, "", "formats", TomlKey::kRequired)) {
    r.CheckKeys(*t, "formats", {"input", "compute", "p", "output", "lse", "scaled"});
    m.input = FloatFormat(r, *t, "formats", "input");
    m.compute = FloatFormat(r, *t, "formats", "compute");
    m.p_format = FloatFormat(r, *t, "formats", "p");
    m.output = FloatFormat(r, *t, "formats", "output");
    m.scaled = m.input;
    if (t->contains("scaled")) {
      m.scaled = FloatFormat(r, *t, "formats", "scaled");
      keys.insert("formats.scaled");
    }
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
  if (root.contains("num_splits")) {
    if (std::optional<int64_t> k = r.Int(root, "", "num_splits", 1, 1024, TomlKey::kRequired)) m.num_splits = *k;
    keys.insert("num_splits");
    if (r.ok() && m.num_splits > 1 && m.key_block == 0) {
      r.Fail(root.get("num_splits"), "num_splits", "needs key_block > 0 (the key range splits in whole key blocks)");
    }
    if (r.ok() && m.num_splits > 1 && m.normalize == Normalize::kExpLse) {
      r.Fail(root.get("num_splits"), "num_splits", "not modelled with normalize = \"exp_lse\"");
    }
  }
  if (m.lse_format != nullptr && m.normalize == Normalize::kExpLse && r.ok()) {
    r.Fail(root.get("normalize"), "normalize",
           "exp_lse (a running log-sum-exp) with formats.lse: that LSE's error is not modelled (attention_model.h)");
  }
  if (m.lse_format != nullptr) {
    keys.insert("log_ulp");
    keys.insert("fully_masked_lse");
  }
  if (r.ok() && root.contains("matmul")) {
    if (const toml::table* t = r.Table(root, "", "matmul", TomlKey::kRequired)) {
      r.CheckKeys(*t, "matmul", {"qk", "pv"});
      // The QK^T dot reads Q (scaled into formats.scaled where the scale is folded) and K
      // (scaled too for fold_qk_sqrt); the P V dot reads P (formats.p) and V (formats.input).
      const bool fold = m.scale == ScalePlacement::kFoldQ || m.scale == ScalePlacement::kFoldQKSqrt;
      const FormatSpec* qa = fold ? m.scaled : m.input;
      const FormatSpec* kb = m.scale == ScalePlacement::kFoldQKSqrt ? m.scaled : m.input;
      if (r.ok() && t->contains("qk")) {
        m.qk = ReadMatmul(r, *t, "qk", models_dir, qa, kb, m.compute, false);
        keys.insert("matmul.qk");
      }
      if (r.ok() && t->contains("pv")) {
        m.pv = ReadMatmul(r, *t, "pv", models_dir, m.p_format, m.input, m.compute, true);
        keys.insert("matmul.pv");
      }
    }
  }
  ReadProvenance(r, root, keys, m.provenance, m.unconfirmed);
  if (!r.ok()) return r.status();
  return m;
}

// Rounding of a double into a float format (RNE) and back. float32: the host conversion, which
// IEEE 754 defines as correctly rounded (round to nearest even under the default environment,
// subnormals included); attention_model_test checks it against formats' Convert.
double RoundToOther(const FormatSpec& f, double x) {
  if (&f == &Float64()) return x;
  double v;
  cd::DecodeToDouble(f, DoubleToBits(f, x), false, &v);
  return v;
}
// The emulation's hot loops round to float32 (the compute format) per key: inline, the format
// compared with a pointer read once.
[[gnu::always_inline]] inline double RoundTo(const FormatSpec& f, double x) {
  static const FormatSpec* const kFloat32 = &Float32();
  if (&f == kFloat32) return static_cast<double>(static_cast<float>(x));
  return RoundToOther(f, x);
}

double Gamma(double k, double u) { return k * u / (1 - k * u); }
double UnitRoundoff(const FormatSpec& f) { return std::ldexp(1.0, -Precision(f)); }
// The smallest normal number: the absolute error of a rounding below the normal range, flush to
// zero included (ex2.approx.ftz, FTZ/DAZ datapaths).
double UnderflowUnit(const FormatSpec& f) { return std::ldexp(1.0, Emin(f)); }
// P's per-term absolute underflow allowance: its subnormal spacing (P keeps subnormals:
// attention_model.h, tau).
double SubnormalSpacing(const FormatSpec& f) { return std::ldexp(1.0, Emin(f) - f.fraction_bits); }

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
  *bits = DoubleToBits(f, y);
  OpEnv dn, upw;
  dn.rounding = Rounding::kDownward;
  upw.rounding = Rounding::kUpward;
  cd::DecodeToDouble(f, DoubleToBits(f, ylo, dn), false, lo);
  cd::DecodeToDouble(f, DoubleToBits(f, yhi, upw), false, hi);
}

// Per key j of a problem, computed once for all its rows: whether K's and V's rows are finite,
// max_c |V[j, c]| and max_c |K[j, c]|.
struct KeyFacts {
  std::vector<uint8_t> finite;
  std::vector<double> vmax, kmax;
  bool v_bf16 = false;  // Every V value a bfloat16 value (NumArgs::bf16_products).
};

KeyFacts MakeKeyFacts(const AttentionProblem& p) {
  const size_t dd = static_cast<size_t>(p.d), dv = static_cast<size_t>(p.d_v), sk = static_cast<size_t>(p.s_k);
  KeyFacts f{std::vector<uint8_t>(sk, 1), std::vector<double>(sk, 0.0), std::vector<double>(sk, 0.0)};
  for (size_t j = 0; j < sk; ++j) {
    bool ok = true;
    double vm = 0, km = 0;
    for (size_t c = 0; c < dd; ++c) {
      ok = ok && std::isfinite(p.k[j * dd + c]);
      km = std::max(km, std::fabs(p.k[j * dd + c]));
    }
    f.kmax[j] = km;
    for (size_t c = 0; c < dv; ++c) {
      const double a = std::fabs(p.v[j * dv + c]);
      ok = ok && std::isfinite(a);
      vm = std::max(vm, a);
    }
    f.finite[j] = ok ? 1 : 0;
    f.vmax[j] = vm;
  }
  return f;
}

// Q's row i as the model's dots read it (the scale folded in where the model folds it).
void RowQ(const AttentionModel& m, const AttentionProblem& p, int64_t i, double* qf) {
  const FormatSpec& F = *m.compute;
  const FormatSpec& In = *m.scaled;
  const size_t dd = static_cast<size_t>(p.d);
  const double scale = p.scale.has_value() ? *p.scale : 1.0 / std::sqrt(static_cast<double>(p.d));
  const double scale_f = RoundTo(F, scale);
  const double sqrt_f = RoundTo(F, std::sqrt(scale));
  for (size_t c = 0; c < dd; ++c) {
    const double q = p.q[static_cast<size_t>(i) * dd + c];
    qf[c] = m.scale == ScalePlacement::kFoldQ ? RoundTo(In, RoundTo(F, q * scale_f))
            : m.scale == ScalePlacement::kFoldQKSqrt ? RoundTo(In, RoundTo(F, q * sqrt_f))
                                                    : q;
  }
}

// dots, abs_dots: the row's RowDots values, indexed by key (every attended key below the block's
// jend); vf: V as float32 or null (NumArgs).
void Row(const AttentionModel& m, const AttentionProblem& p, int64_t i, const double* dots, const double* abs_dots,
         const float* vf, const KeyFacts& kf, std::span<const ExactEnclosure> pv, std::span<const ExactEnclosure> exact, std::span<uint64_t> bits,
         std::span<double> lo, std::span<double> hi, const LseOut& lse) {
  const FormatSpec& F = *m.compute;
  const FormatSpec& P = *m.p_format;
  const FormatSpec& O = *m.output;
  const size_t dd = static_cast<size_t>(p.d), dv = static_cast<size_t>(p.d_v);
  const double scale = p.scale.has_value() ? *p.scale : 1.0 / std::sqrt(static_cast<double>(p.d));
  const uint64_t nan_bits = Convert(Float64(), O, 0x7FF8000000000000ull, OpEnv{}).bits;
  // v: the row's value; masked: a fully masked row (else non-finite inputs).
  const auto set_all = [&](double v, bool masked) {
    const uint64_t ob = DoubleToBits(O, v);
    for (size_t c = 0; c < dv; ++c) {
      bits[c] = std::isnan(v) ? nan_bits : ob;
      lo[c] = v;
      hi[c] = v;
    }
    if (lse.exact != nullptr) {  // NaN rows: NaN; fully masked rows: the model's convention.
      const double lv = masked ? m.fully_masked_lse : NAN;
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
    finite = finite && kf.finite[static_cast<size_t>(j)] != 0;
    if (!p.additive_mask.empty()) finite = finite && std::isfinite(p.additive_mask[static_cast<size_t>(i * p.s_k + j)]);
  }
  if (!finite) return set_all(NAN, false);
  if (keys.empty()) return set_all(m.fully_masked == FullyMaskedRows::kZero ? 0.0 : NAN, true);
  const size_t n = keys.size();
  // Scores as the model places the scale.
  const double scale_f = RoundTo(F, scale);
  const FormatSpec& In = *m.scaled;
  std::vector<double> s(n), a(n);
  double amax = 0;
  for (size_t x = 0; x < n; ++x) {
    const double dot = dots[keys[x]], ab = abs_dots[keys[x]];  // RowDots.
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
  // The bound's row-wide quantities (attention_model.h).
  const double u = UnitRoundoff(F);
  const double uin = UnitRoundoff(In);
  const double up = &P == &F ? 0.0 : UnitRoundoff(P);
  const double eps = m.exp_ulp * 2 * u;
  // The score dot: gamma_d, or matmul.qk's constants (attention_model.h, "The matmuls"): rel
  // times kF (the dot's operands and the scale's roundings), and per key an absolute term ds.
  const double kF = (1 + uin) * (1 + uin) * std::pow(1 + u, 4) * (1 + 0x1p-50);
  double qk_rel = Gamma(static_cast<double>(p.d), u);
  bool qk_ok = true;
  std::vector<double> ds;
  if (m.qk != nullptr) {
    const absl::StatusOr<DotBound> db = m.qk->Bound(p.d);
    qk_ok = db.ok();
    if (qk_ok) {
      qk_rel = std::max(qk_rel, db->rel * kF);  // Never below gamma_d: the emulated value stays inside.
      double qmax = 0;
      for (size_t c = 0; c < dd; ++c) qmax = std::max(qmax, std::fabs(p.q[static_cast<size_t>(i) * dd + c]));
      const double grow = std::max(1.0, std::fabs(scale)) * kF;  // Operands and scaled units.
      ds.resize(n);
      for (size_t x = 0; x < n; ++x) {
        const double smax = (db->tiny_a + db->tiny_b) * grow * std::max(qmax, kf.kmax[static_cast<size_t>(keys[x])]);
        ds[x] = (db->abs + db->sub_max * smax + db->sub_sum * static_cast<double>(p.d) * smax) * grow * (1 + 0x1p-40);
      }
    }
  }
  double cs = qk_rel + u;
  if (m.scale == ScalePlacement::kFoldQ) cs += uin + u;
  if (m.scale == ScalePlacement::kFoldQKSqrt) cs += 2 * uin + 3 * u;
  const bool bounded = amax <= 0x1p20 && p.d <= 4096 && qk_ok;
  // The scores s are unscaled where the scale waits for the exponent: the bound's quantities
  // are in the scaled units of the proof (T, m), so multiplied by the scale there.
  const bool waits = m.scale == ScalePlacement::kExponent && p.additive_mask.empty();
  const double su = waits ? std::fabs(scale) : 1.0;
  const double log2e_scale = RoundTo(F, scale * 1.4426950408889634);
  const bool want_lse = lse.exact != nullptr;
  // P in bfloat16: the weights (float32 values) rounded by RoundFloat32ToBfloat16, equal to RoundTo.
  const bool p_bf16 = &P == &BFloat16() && &F == &Float32();
  double vmax = 0;
  for (size_t x = 0; x < n; ++x) vmax = std::max(vmax, kf.vmax[static_cast<size_t>(keys[x])]);
  // One part of the row: the attended keys keys[x0, x1) (the whole row, or one split of the key
  // range), evaluated as the model says, with its bound's quantities.
  struct Part {
    double nd = 0, mx = 0, mx_abs = 0, l = 0, delta = 0, A = 0, Bl = 0, nu = 0, tau = 0;
    double nabs = 0;  // matmul.pv's absolute term (attention_model.h, "The matmuls").
    bool ok = false;               // Bl and the LSE's eta below 1/2 (and the row bounded).
    double lse = 0, lse_err = NAN;  // Emulated m_s + log l (compute format) and its bound.
    std::vector<float> out;        // The normalized part (compute format), d_v values.
  };
  const auto part = [&](size_t x0, size_t x1) {
    Part q;
    const size_t np = x1 - x0;
    q.nd = static_cast<double>(np);
    q.mx = *std::max_element(s.begin() + static_cast<std::ptrdiff_t>(x0), s.begin() + static_cast<std::ptrdiff_t>(x1));
    // Weights: w = fl(exp(fl(arg))), arg = s - m, or (exponent placement) fl(s c - m c) with
    // c = fl(scale log2 e), one rounding (FFMA), the scores then unscaled.
    std::vector<double> pt(np), wt(np);
    double l = 0;
    for (size_t x = x0; x < x1; ++x) {
      double arg;
      if (waits) {
        arg = RoundTo(F, s[x] * log2e_scale - RoundTo(F, q.mx * log2e_scale)) * 0.6931471805599453;
      } else {
        arg = RoundTo(F, s[x] - q.mx);
      }
      pt[x - x0] = arg;
    }
    ExpWeights(pt.data(), wt.data(), np);  // fl(exp(arg)) (ExpEv's value), 0 below -700.
    for (size_t x = 0; x < np; ++x) {
      const double w = wt[x];
      pt[x] = p_bf16 ? attention_model_internal::RoundFloat32ToBfloat16(w) : RoundTo(P, w);
      l = RoundTo(F, l + (m.row_sum_rounded ? pt[x] : w));
    }
    q.l = l;
    // Rescalings: one per key block of kBlockN (key_block) holding an attended key, but the first.
    double r = 0;
    if (m.key_block > 0) {  // keys ascending: a new block where a key reaches the next block's start.
      int64_t next = (keys[x0] / m.key_block + 1) * m.key_block;
      for (size_t x = x0 + 1; x < x1; ++x) {
        if (keys[x] >= next) {
          r += 1;
          next = (keys[x] / m.key_block + 1) * m.key_block;
        }
      }
    }
    double tmax = 0;
    q.mx_abs = su * std::fabs(q.mx);
    for (size_t x = x0; x < x1; ++x) {
      // Within 2^-20 relative of the kernel's computed argument's own value.
      const double t = su * (s[x] - q.mx) * (1 + 0x1p-50);
      const double dj = cs * a[x] + 5 * u * (std::fabs(t) + q.mx_abs) + 0x1p-20 * u + (ds.empty() ? 0.0 : ds[x]);
      if (t + dj < -150) continue;  // Weight below 2^-216: inside tau.
      q.delta = std::max(q.delta, dj);
      tmax = std::max(tmax, std::fabs(t));
    }
    q.delta += u * tmax;  // The rescalings' arguments.
    // Each quantity near 1 minus 1 is computed with an absolute error below 2^-50 (libm's exp
    // and pow within an ulp, a few roundings): added.
    const double nd = q.nd;
    const double theta = std::exp(q.delta) * std::pow(1 + eps, 1 + r) * std::pow(1 + u, 2 + r) - 1 + 0x1p-50;
    // The numerator's accumulation: gamma_(n+1), or matmul.pv's chain over r + 1 key blocks of
    // key_block products (S_k for one pass) with the rescalings between them (attention_model.h,
    // "The matmuls"): rel_N = (1 + phi)^B - 1 and the absolute nabs.
    double pv_rel = Gamma(nd + 1, u);
    bool pv_ok = true;
    if (m.pv != nullptr) {
      const absl::StatusOr<DotBound> db = m.pv->Bound(m.key_block > 0 ? m.key_block : p.s_k);
      pv_ok = db.ok();
      if (pv_ok) {
        const double blocks = r + 1, eta_f = std::ldexp(1.0, MinSubnormalExponent(F));
        const double phi = std::max(db->rel_c, (1 + u) * db->rel + u) * (1 + 0x1p-50);
        const double a_blk = ((1 + u) * db->abs + eta_f) * (1 + 0x1p-50);
        const double lam = std::pow((1 + eps) * (1 + u) * (1 + u), r) * (1 + 0x1p-50);
        const double grow = std::pow(1 + phi, blocks) * (1 + 0x1p-50);
        pv_rel = std::max(pv_rel, grow - 1 + 0x1p-50);  // Never below gamma_(n+1), as qk_rel.
        const double blk = m.key_block > 0 ? static_cast<double>(m.key_block) : static_cast<double>(p.s_k);
        const double smax = db->tiny_a * vmax + db->tiny_b * 2;  // P_j <= 2 (1 + Theta < 2 where bounded).
        const double nabs = grow * (blocks * lam * (a_blk + (db->sub_max + db->sub_sum * blk) * smax) +
                                    (blocks - 1) * lam * eta_f);
        q.nabs = 2 * nabs * (1 + 0x1p-10);  // Divided by l >= 1/2; E multiplies it by (1 + nu).
      }
    }
    q.A = (1 + theta) * (1 + up) * (1 + pv_rel) - 1 + 0x1p-50;
    q.Bl = (1 + theta) * (1 + (m.row_sum_rounded ? up : 0)) * (1 + Gamma(nd, u)) - 1 + 0x1p-50;
    const double lse_mag = q.mx_abs + std::log(nd) + 1;
    q.nu = m.normalize == Normalize::kDivide       ? u
           : m.normalize == Normalize::kReciprocal ? 2 * u + u * u
                                                   : (1 + eps) * (1 + u) * (1 + u) * std::exp(2 * u * lse_mag) - 1 + 0x1p-50;
    // Underflowed weights, absolute, in units of the largest weight (~1; l >= 1/2 with the margin).
    q.tau = 2 * (nd * (2 + r) * UnderflowUnit(F) + nd * SubnormalSpacing(P));
    // l's underflow: its terms are the compute format's weights, or P's where the sum adds P.
    const double tau_l = 2 * (nd * (2 + r) * UnderflowUnit(F) + (m.row_sum_rounded ? nd * SubnormalSpacing(P) : 0.0));
    const double eta = q.Bl + tau_l;
    q.ok = bounded && q.Bl < 0.5 && eta < 0.5 && pv_ok && q.A < 1;
    // The numerators in index order in float32 (the compute format: checked on reading), keys
    // outer so that V's rows are read contiguously; then the normalization.
    std::vector<float> nums(dv, 0.0f);
    RowNums(NumArgs{nums.data(), pt.data(), &keys[x0], p.v.data(), vf, np, dv, p_bf16 && kf.v_bf16});
    const double recip = RoundTo(F, 1.0 / l);
    q.out.resize(dv);
    for (size_t c = 0; c < dv; ++c) {
      const double num = nums[c];
      q.out[c] = static_cast<float>(m.normalize == Normalize::kDivide ? num / l : num * recip);
    }
    if (want_lse || m.num_splits > 1) {
      // The LSE (attention_model.h "The LSE"): emulated m (scaled: fl(m scale) where the scale
      // waited for the exponent) + fl(log l); the bound in binary64 on non-negative numbers,
      // rounded up by a relative 2^-40 at the end.
      const double ms = waits ? RoundTo(F, q.mx * scale_f) : q.mx;
      const double lg = RoundTo(F, cd::LogEv(cd::Exact(l)).y);
      q.lse = RoundTo(F, ms + lg);
      if (q.ok) {
        const double M = q.mx_abs + 2 * q.delta;            // |m| of any admitted implementation.
        const double G = std::log(nd) + q.delta + 0x1p-50;  // |log L_m|.
        const double lam = -std::log1p(-eta) + 0x1p-50;     // |log l - log L_m|.
        const double lerr = m.log_ulp * 2 * u * std::max(1.0, G + lam);
        q.lse_err = (4 * u * (1 + 2 * u) * M + u * (M * (1 + 3 * u) + G + lam + lerr) + lerr + lam) * (1 + 0x1p-40);
      }
    }
    return q;
  };
  // The output element c: y (compute format) into the output format, enclosed by
  // [ex.lo - E, ex.hi + E] rounded outward (E NaN: no bound).
  const auto put = [&](size_t c, double y, double E) {
    const ExactEnclosure& ex = exact[c];
    if (!std::isfinite(E) || !std::isfinite(ex.lo) || !std::isfinite(ex.hi)) {
      Enclose(O, y, NAN, NAN, &bits[c], &lo[c], &hi[c]);
      lo[c] = hi[c] = NAN;
    } else {
      Enclose(O, y, ex.lo - E, ex.hi + E, &bits[c], &lo[c], &hi[c]);
    }
  };
  const auto put_lse = [&](double y, double E) {
    const ExactEnclosure& ex = *lse.exact;
    if (!std::isfinite(E) || !std::isfinite(ex.lo) || !std::isfinite(ex.hi)) {
      Enclose(*m.lse_format, y, NAN, NAN, lse.bits, lse.lo, lse.hi);
      *lse.lo = *lse.hi = NAN;
    } else {
      Enclose(*m.lse_format, y, ex.lo - E, ex.hi + E, lse.bits, lse.lo, lse.hi);
    }
  };
  if (m.num_splits <= 1) {
    const Part q = part(0, n);
    if (want_lse) put_lse(q.lse, q.lse_err);
    for (size_t c = 0; c < dv; ++c) {
      const double o_abs = std::max(std::fabs(exact[c].lo), std::fabs(exact[c].hi));
      const double pvc = pv[c].hi;
      // E, rounded up by a relative 2^-40 (a few binary64 operations on non-negative numbers).
      const double E = q.ok && std::isfinite(pvc) ? ((q.A * pvc + q.Bl * o_abs) / (1 - q.Bl) * (1 + q.nu) + q.nu * o_abs +
                                                     q.tau * (vmax + o_abs) + q.nabs * (1 + q.nu)) * (1 + 0x1p-40)
                                                  : NAN;
      put(c, q.out[c], E);
    }
    return;
  }
  // Split-KV (attention_model.h "Split-KV"): the key range in num_splits chunks of whole key
  // blocks, each part normalized with its LSE, then the combine in the compute format.
  const int64_t kb = m.key_block, blocks = (p.s_k + kb - 1) / kb;
  const int64_t per = (blocks + m.num_splits - 1) / m.num_splits;
  std::vector<Part> parts;
  for (int64_t sp = 0; sp < m.num_splits; ++sp) {
    const int64_t j0 = sp * per * kb, j1 = std::min(p.s_k, (sp + 1) * per * kb);
    const size_t x0 = static_cast<size_t>(std::lower_bound(keys.begin(), keys.end(), j0) - keys.begin());
    const size_t x1 = static_cast<size_t>(std::lower_bound(keys.begin(), keys.end(), std::max(j0, j1)) - keys.begin());
    if (x1 > x0) parts.push_back(part(x0, x1));  // An empty part writes O 0, LSE -inf: weight 0.
  }
  const double kp = static_cast<double>(parts.size());
  double lmax = -INFINITY;
  for (const Part& q : parts) lmax = std::max(lmax, q.lse);
  double sum = 0;
  for (const Part& q : parts) sum = RoundTo(F, sum + RoundTo(F, cd::ExpEv(cd::Exact(RoundTo(F, q.lse - lmax))).y));
  const double L = RoundTo(F, RoundTo(F, cd::LogEv(cd::Exact(sum)).y) + lmax);
  std::vector<double> wts;
  for (const Part& q : parts) {
    const double x = RoundTo(F, q.lse - L);
    wts.push_back(x < -700 ? 0.0 : RoundTo(F, cd::ExpEv(cd::Exact(x)).y));
  }
  // The bound. The combine's exp: (exp_ulp + 1.173 |x|) ulps (__expf under --use_fast_math:
  // 2 + floor(1.173 |x|) ulps; expf: 2), its log: log_ulp.
  bool ok = true;
  double amax_lse = 0, Astar = 0, Blstar = 0, nustar = 0, taustar = 0, nabsstar = 0;
  for (const Part& q : parts) {
    ok = ok && q.ok && std::isfinite(q.lse_err);
    amax_lse = std::max(amax_lse, q.lse_err);
    Astar = std::max(Astar, q.A);
    Blstar = std::max(Blstar, q.Bl);
    nustar = std::max(nustar, q.nu);
    taustar = std::max(taustar, q.tau);
    nabsstar = std::max(nabsstar, q.nabs);
  }
  const auto exp_eps = [&](double x) { return (m.exp_ulp + 1.173 * std::fabs(x)) * 2 * u; };
  // The combined LSE: each term e^(lse_s - lmax) relatively within rel (its LSE's error, the
  // subtraction, the exp), the sum gamma_K; then the log and the addition of lmax.
  double rel = 0;
  for (const Part& q : parts) {
    const double x = std::fabs(q.lse - lmax);
    rel = std::max(rel, std::exp(q.lse_err + u * x) * (1 + exp_eps(x)) - 1);
  }
  const double eta_c = (1 + rel) * (1 + Gamma(kp, u)) - 1 + 0x1p-50;
  double Bc = NAN;
  if (ok && eta_c < 0.5) {
    const double lam = -std::log1p(-eta_c) + 0x1p-50;
    const double G = std::log(kp) + amax_lse + 0x1p-50;
    const double lerr = m.log_ulp * 2 * u * std::max(1.0, G + lam);
    Bc = (lam + lerr + u * (std::fabs(lmax) + G + lam + lerr)) * (1 + 0x1p-40);
  }
  if (want_lse) put_lse(L, Bc);
  // The weights: w_s = omega_s (1 + kappa_s), |kappa_s| <= e^(a_s + Bc + u |x_s|) (1 + eps(x_s)) - 1;
  // parts whose weight is below e^-100 add their |O_s| + |o_s| <= 2 vmax (1 + 2^-10) times it.
  double C = 0, tiny = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    const double x = parts[k].lse - L;
    const double up_w = parts[k].lse_err + Bc + u * std::fabs(x);
    if (x + up_w < -100) {
      tiny += 2 * std::exp(x + up_w + 1) * vmax * (1 + 0x1p-10);
      continue;
    }
    C = std::max(C, std::exp(up_w) * (1 + exp_eps(x)) * (1 + Gamma(kp + 1, u)) - 1 + 0x1p-50);
  }
  for (size_t c = 0; c < dv; ++c) {
    float acc = 0;
    for (size_t k = 0; k < parts.size(); ++k) acc = std::fmaf(static_cast<float>(wts[k]), parts[k].out[c], acc);
    const double pvc = pv[c].hi;
    const double Ehat = (Astar + Blstar) / (1 - Blstar) * (1 + nustar) * pvc + nustar * pvc + taustar * (vmax + pvc) +
                        nabsstar * (1 + nustar);
    const double E = std::isfinite(Bc) && std::isfinite(pvc) ? ((1 + C) * Ehat + C * pvc + tiny) * (1 + 0x1p-40) : NAN;
    put(c, acc, E);
  }
}

}  // namespace

absl::StatusOr<DotBound> MatmulModel::Bound(int64_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(n);
  if (it == cache_.end()) {
    absl::StatusOr<DotBound> all = DotBound{};
    for (const Model& member : members_) {
      const absl::StatusOr<DotBound> b = ComputeDotBound(member, n);
      if (!b.ok()) {
        all = b.status();
        break;
      }
      all->rel = std::max(all->rel, b->rel);
      all->rel_c = std::max(all->rel_c, b->rel_c);
      all->abs = std::max(all->abs, b->abs);
      all->sub_sum = std::max(all->sub_sum, b->sub_sum);
      all->sub_max = std::max(all->sub_max, b->sub_max);
      all->tiny_a = std::max(all->tiny_a, b->tiny_a);
      all->tiny_b = std::max(all->tiny_b, b->tiny_b);
      all->depth = std::max(all->depth, b->depth);
    }
    it = cache_.emplace(n, std::move(all)).first;
  }
  return it->second;
}

std::string AccumulationModelsDirFor(const std::string& attention_models_dir) {
  // The source tree's layout first: there, composite/models (the elementwise models) sits where
  // the installed layout keeps the accumulation presets.
  return DataPathBeside(attention_models_dir, DataItem::kAttentionModels, DataItem::kModels);
}

absl::StatusOr<AttentionModel> ParseAttentionModel(std::string_view toml_text, std::string_view file_name,
                                                   const std::string& accumulation_models_dir) {
  const std::string dir = !accumulation_models_dir.empty()
                              ? accumulation_models_dir
                              : AccumulationModelsDirFor(std::filesystem::path(std::string(file_name)).parent_path().string());
  return ParseTomlText<AttentionModel>(toml_text, file_name, [&](const toml::table& root, std::string_view file) {
    return ParseTable(root, file, dir);
  });
}

absl::StatusOr<AttentionModel> ParseAttentionModel(std::string_view toml_text, std::string_view file_name) {
  return ParseAttentionModel(toml_text, file_name, std::string());
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
  const AttentionModelRows one{&m, bits, lo, hi, lse};
  return EmulateAttentionRowsMulti(std::span<const AttentionModelRows>(&one, 1), p, r0, r1, pv, exact, threads);
}

absl::Status EmulateAttentionRowsMulti(std::span<const AttentionModelRows> models, const AttentionProblem& p,
                                       int64_t r0, int64_t r1, std::span<const ExactEnclosure> pv,
                                       std::span<const ExactEnclosure> exact, int threads) {
  if (absl::Status s = CheckAttention(p); !s.ok()) return s;
  const size_t n = static_cast<size_t>((r1 - r0) * p.d_v);
  if (r0 < 0 || r1 < r0 || r1 > p.s_q || pv.size() != n || exact.size() != n) {
    return absl::InvalidArgumentError("EmulateAttentionRows: spans of (r1 - r0) x d_v elements needed");
  }
  for (const AttentionModelRows& mr : models) {
    if (mr.m == nullptr || mr.bits.size() != n || mr.lo.size() != n || mr.hi.size() != n) {
      return absl::InvalidArgumentError("EmulateAttentionRows: spans of (r1 - r0) x d_v elements needed");
    }
    if (const AttentionLseRows* lse = mr.lse; lse != nullptr) {
      if (mr.m->lse_format == nullptr) {
        return absl::InvalidArgumentError(Cat("EmulateAttentionRows: model ", mr.m->name, " writes no LSE (formats.lse)"));
      }
      const size_t rows = static_cast<size_t>(r1 - r0);
      if (lse->exact.size() != rows || lse->bits.size() != rows || lse->lo.size() != rows || lse->hi.size() != rows) {
        return absl::InvalidArgumentError("EmulateAttentionRows: LSE spans of r1 - r0 elements needed");
      }
    }
  }
  const size_t nm = models.size();
  const size_t dv = static_cast<size_t>(p.d_v);
  constexpr int64_t kRows = 8;  // Rows per RowDots call (the K tiles are read once for them).
  // K (and kscaled) transposed for RowDots, once per call; not for one block of rows (the
  // audit's single-row calls), where RowDots reads them as they are.
  const bool transpose = r1 - r0 > kRows;
  const size_t sk = static_cast<size_t>(p.s_k), dd = static_cast<size_t>(p.d);
  const auto transposed = [&](std::span<const double> k, std::vector<double>& t) {
    t.resize(sk * dd);
    for (size_t j0 = 0; j0 < sk; j0 += 8) {  // 8 keys at a time: each store fills a cache line.
      const size_t j1 = std::min(sk, j0 + 8);
      for (size_t c = 0; c < dd; ++c) {
        for (size_t j = j0; j < j1; ++j) t[c * sk + j] = k[j * dd + c];
      }
    }
  };
  // Per model: K times sqrt(scale) rounded as it says (fold_qk_sqrt; else empty) and its transpose.
  std::vector<std::vector<double>> kscaled(nm), kst(nm);
  for (size_t x = 0; x < nm; ++x) {
    const AttentionModel& m = *models[x].m;
    if (m.scale != ScalePlacement::kFoldQKSqrt) continue;
    const double scale = p.scale.has_value() ? *p.scale : 1.0 / std::sqrt(static_cast<double>(p.d));
    const double sqrt_f = RoundTo(*m.compute, std::sqrt(scale));
    kscaled[x].resize(p.k.size());
    for (size_t e = 0; e < p.k.size(); ++e) kscaled[x][e] = RoundTo(*m.scaled, RoundTo(*m.compute, p.k[e] * sqrt_f));
    if (transpose) transposed(kscaled[x], kst[x]);
  }
  KeyFacts key_facts = MakeKeyFacts(p);
  std::vector<double> kt;
  if (transpose) transposed(p.k, kt);
  // V as float32 for RowNums where every finite value is one (NumArgs).
  std::vector<float> vf(p.v.size());
  for (size_t x = 0; x < p.v.size(); ++x) {
    vf[x] = static_cast<float>(p.v[x]);
    if (std::isfinite(p.v[x]) && static_cast<double>(vf[x]) != p.v[x]) {
      vf.clear();
      break;
    }
  }
  key_facts.v_bf16 = !vf.empty() && std::all_of(vf.begin(), vf.end(), [](float x) {
    return (std::bit_cast<uint32_t>(x) & 0xFFFFu) == 0;  // Finite ones (others: no row reads them).
  });
  // The dots' K per model (kd: kscaled or K; kk: K), as RowDots reads them.
  std::vector<const double*> kd(nm);
  const double* kk = transpose ? kt.data() : p.k.data();
  for (size_t x = 0; x < nm; ++x) {
    kd[x] = kscaled[x].empty() ? kk : (transpose ? kst[x].data() : kscaled[x].data());
  }
  const int64_t blocks = (r1 - r0 + kRows - 1) / kRows;
  const int t = static_cast<int>(RangeWorkers(blocks, threads));  // No idle worker and its scratch.
  auto work = [&](int k) {
    // Per model its Q rows; the dots once per distinct (Q rows, K) among the models (those that
    // fold no scale share them): group[x] the first model with the same ones.
    std::vector<std::vector<double>> qf(nm, std::vector<double>(static_cast<size_t>(kRows) * dd)), dots(nm),
        abs_dots(nm);
    std::vector<size_t> group(nm);
    for (int64_t b = k; b < blocks; b += t) {
      const int64_t b0 = r0 + b * kRows, b1 = std::min(r1, b0 + kRows);
      const size_t qn = static_cast<size_t>(b1 - b0) * dd;
      for (size_t x = 0; x < nm; ++x) {
        for (int64_t i = b0; i < b1; ++i) RowQ(*models[x].m, p, i, &qf[x][static_cast<size_t>(i - b0) * dd]);
        group[x] = x;
        for (size_t y = 0; y < x; ++y) {
          if (group[y] == y && kd[y] == kd[x] && std::memcmp(qf[y].data(), qf[x].data(), qn * sizeof(double)) == 0) {
            group[x] = y;
            break;
          }
        }
        if (group[x] != x) continue;
        dots[x].resize(static_cast<size_t>(kRows) * sk);
        abs_dots[x].resize(static_cast<size_t>(kRows) * sk);
        RowDots(DotArgs{qf[x].data(), &p.q[static_cast<size_t>(b0) * dd], kd[x], kk, dots[x].data(),
                        abs_dots[x].data(), b1 - b0, p.s_k, p.d, p.causal ? std::min(p.s_k, b1) : p.s_k,
                        transpose ? 0 : 1, transpose ? 1 : p.d});
      }
      for (size_t x = 0; x < nm; ++x) {
        const AttentionModelRows& mr = models[x];
        const size_t g = group[x];
        for (int64_t i = b0; i < b1; ++i) {
          const size_t at = static_cast<size_t>(i - r0) * dv, rb = static_cast<size_t>(i - b0) * sk;
          LseOut lo_row;
          if (mr.lse != nullptr) {
            const size_t r = static_cast<size_t>(i - r0);
            lo_row = LseOut{&mr.lse->exact[r], &mr.lse->bits[r], &mr.lse->lo[r], &mr.lse->hi[r]};
          }
          Row(*mr.m, p, i, &dots[g][rb], &abs_dots[g][rb], vf.empty() ? nullptr : vf.data(), key_facts,
              pv.subspan(at, dv), exact.subspan(at, dv), mr.bits.subspan(at, dv), mr.lo.subspan(at, dv),
              mr.hi.subspan(at, dv), lo_row);
        }
      }
    }
  };
  RunWorkers(t, work);
  return absl::OkStatus();
}

}  // namespace fpconform::composite
