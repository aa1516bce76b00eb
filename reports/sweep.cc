// The tolerance sweep (see sweep.h for what is measured and the rules).
#include "reports/sweep.h"

#include <mpfr.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <utility>

#include "accumulation/epilogue.h"
#include "accumulation/evaluate.h"
#include "accumulation/model.h"
#include "accumulation/model_catalog.h"
#include "base/hash.h"
#include "base/str_cat.h"
#include "base/user_file.h"
#include "cases/pinned_random.h"
#include "formats/ops.h"
#include "oracles/error_measures.h"
#include "oracles/exact_sum.h"
#include "oracles/mpfr_plumbing.h"
#include "reports/mutations.h"
#include "reports/parallel_for.h"
#include "reports/stats.h"
#include "reports/sweep_attention.h"
#include "reports/sweep_composite.h"
#include "reports/sweep_inputs.h"
#include "reports/sweep_tables.h"

namespace fpconform::reports {
namespace {

using sweep_internal::AttentionUnit;
using sweep_internal::CompositeUnit;
using sweep_internal::SweepTables;
using sweep_internal::DoubleToFormat;
using sweep_internal::DrawVector;
using sweep_internal::Int32ExactModel;
using sweep_internal::IsScaledFormat;
using sweep_internal::MaxMagnitude;
using sweep_internal::NegateBits;
using sweep_internal::Quantize;
using sweep_internal::Quantized;

// ---- Exact values (mpfr) times a scale. ----

using Mpfr = MpfrValue;

// out = acc * scale exactly (scale a double).
void ScaledExact(const ExactAccumulator& acc, double scale, mpfr_ptr out) {
  Mpfr tmp;
  acc.ToMpfr(tmp.v);
  mpfr_set_prec(out, mpfr_get_prec(tmp.v) + 64);
  mpfr_mul_d(out, tmp.v, scale, MPFR_RNDN);  // Exact: the precision holds the product.
}

// ---- Torch / JAX defaults (by output dtype). ----
// torch/testing/_comparison.py `_DTYPE_PRECISIONS` (PyTorch 2.x): float16 (1e-3, 1e-5),
// bfloat16 (1.6e-2, 1e-5), float32 (1.3e-6, 1e-5), float64 (1e-7, 1e-7).
// jax/_src/public_test_util.py `_default_tolerance` (used as both atol and rtol by
// `assert_allclose`/`check_close`): bfloat16 1e-2, float16 1e-3, float32 1e-6, float64 1e-15.
struct DefaultTolerance {
  double torch_rtol, torch_atol, jax_tol;
};
DefaultTolerance DefaultsFor(const FormatSpec& out) {
  if (&out == &BFloat16()) return {1.6e-2, 1e-5, 1e-2};
  if (&out == &Float16()) return {1e-3, 1e-5, 1e-3};
  if (&out == &Float64()) return {1e-7, 1e-7, 1e-15};
  return {1.3e-6, 1e-5, 1e-6};  // float32 (and tfloat32 / reduced-precision float32 outputs).
}

// ---- Mutations. ----
enum Mutation : int {
  kBf16Accumulation,
  kDroppedTile,
  kDoubledTile,
  kMissingScale,
  kTransposed,
  kSignFlip,
  kMutations
};
constexpr std::array<const char*, kMutations> kMutationNames = {
    "bf16_accumulation", "dropped_k_tile", "doubled_k_tile",
    "missing_scale",     "transposed_operand", "sign_flip"};

// ---- Per-sample observations of one platform. ----
struct Obs {
  bool finite = true;
  double x = 0;         // Exact value (rounded to double).
  double y = 0;         // Output value.
  uint64_t y_bits = 0;  // Output bits in out_format.
  double err = 0;       // |y - x| (rounded to double).
  double ulp_err = 0, bn = 0, rel = 0;
  double ulp_x = 0;     // ulp of x in the output format.
  double us = 0;        // u * sum|a_i b_i| (scaled).
  double bound = 0;     // Worst-case |y - x|.
  std::array<double, kMutations> mut_err{};  // |mutant - x|; NaN when not applicable.
};

struct PlatformInfo {
  std::string name;
  const Model* model = nullptr;
  const FormatSpec* fa = nullptr;     // Input formats handed to the platform.
  const FormatSpec* fb = nullptr;
  const FormatSpec* out = nullptr;    // Output format of the row (float32 when scaled).
  const FormatSpec* acc = nullptr;    // Accumulation format (u of the bound-normalized error).
  int acc_fraction_bits = 0;
};

struct Unit {
  std::string op;     // matmul | sum | quantize | composite | attention
  const DtypeSpec* dtype = nullptr;
  std::string dist;
  int64_t k = 0;
  int samples = 0;
  std::vector<std::string> platforms;  // Tolerance rows, in order.
  std::vector<const CrossSpec*> cross;
  CompositeUnit composite;             // op composite.
  AttentionUnit attention;             // op attention.
  std::string Label() const {
    if (op == "composite") return Cat("composite ", composite.fn, " ", dist, " n=", k);
    if (op == "attention") {
      return Cat("attention ", dist, " S=", attention.s, " D=", attention.d, attention.causal ? " causal" : "");
    }
    return op == "quantize" ? Cat("quantize ", dist)
                            : Cat(op, " ", dtype->name, " ", dist, " K=", k);
  }
  uint64_t Key() const {
    return Fnv1a(Cat(op, "/", dtype != nullptr ? dtype->name : "", "/", dist));
  }
};

std::string AccumulatorName(const PlatformInfo& p) {
  std::string n(p.acc->name);
  if (p.acc_fraction_bits != p.acc->fraction_bits) n += "/f" + std::to_string(p.acc_fraction_bits);
  return n;
}

double UnitRoundoff(const PlatformInfo& p) { return std::ldexp(1.0, -(p.acc_fraction_bits + 1)); }

// Inputs of one (input-format pair, sample): quantized operands and the platform-independent
// exact values and mutants.
struct SampleInputs {
  Quantized qa, qb, qb_other;    // In the platform's input formats (the model's operands).
  // The exact oracle's view of the operands: oracles/exact_sum.h takes float formats, so integer
  // operands enter it as float32 copies (exact: |q| <= 128); for float formats the bits above.
  std::vector<uint64_t> xa, xb, xb_other;
  const FormatSpec* fa = nullptr;  // Formats of the oracle's view.
  const FormatSpec* fb = nullptr;
  std::span<const uint64_t> A() const { return xa.empty() ? qa.bits : xa; }
  std::span<const uint64_t> B() const { return xb.empty() ? qb.bits : xb; }
  std::span<const uint64_t> BOther() const { return xb_other.empty() ? qb_other.bits : xb_other; }
  double scale = 1;              // s_a * s_b (exact in double).
  Mpfr x, abs_sum;
  double x_d = 0, us_base = 0;   // us_base = sum|ab| * scale (double).
  std::array<double, kMutations> mutant{};  // Mutant output values (NaN: not applicable).
};

class Sweeper {
 public:
  // models: every platform a unit may name, already parsed (not owned).
  Sweeper(const SweepSpec& spec, std::map<std::string, const Model*> models)
      : spec_(spec), models_(std::move(models)) {}

  PlatformInfo Info(const std::string& name, const DtypeSpec& d) const {
    PlatformInfo p;
    p.name = name;
    if (d.integer) {
      // The accumulation is exact: u of the bound-normalized error is that of its one rounding,
      // float32's.
      p.model = &Int32ExactModel();
      p.fa = p.fb = &Int8();
      p.out = &Float32();
      p.acc = &Float32();
      p.acc_fraction_bits = Float32().fraction_bits;
      return p;
    }
    const Model& m = *models_.at(name);
    p.model = &m;
    p.fa = m.inputs.a;
    p.fb = &m.InputB();
    // Scaled (8-bit) inputs: the row compares the dequantized float32 value (sweep.h).
    const bool scaled = IsScaledFormat(*p.fa) || IsScaledFormat(*p.fb);
    p.out = scaled ? &Float32() : &m.OutputFormat();
    p.acc = &m.FinalAccumulatorFormat();
    p.acc_fraction_bits = m.FinalAccumulatorFractionBits();
    return p;
  }

  // Builds the inputs of one sample for input formats (fa, fb).
  void MakeInputs(const Unit& u, int s, const PlatformInfo& p, bool sum, SampleInputs& in) const {
    const uint64_t key = u.Key();
    auto draw = [&](uint64_t operand) {
      return DrawVector(DeriveSeed(spec_.seed, {key, uint64_t(u.k), uint64_t(s), operand}), u.dist,
                        u.k);
    };
    in.qa = Quantize(draw(0), *p.fa);
    if (!sum) {
      in.qb = Quantize(draw(1), *p.fb);
      in.qb_other = Quantize(draw(2), *p.fb);
    }
    in.fa = p.fa;
    in.fb = sum ? p.fa : p.fb;
    in.xa.clear();
    in.xb.clear();
    in.xb_other.clear();
    if (p.fa->kind == FormatKind::kInteger) {  // The oracle's float32 view (see SampleInputs).
      const std::pair<const std::vector<uint64_t>*, std::vector<uint64_t>*> views[] = {
          {&in.qa.bits, &in.xa}, {&in.qb.bits, &in.xb}, {&in.qb_other.bits, &in.xb_other}};
      for (const auto& [q, x] : views) {
        for (uint64_t v : *q) x->push_back(Convert(*p.fa, Float32(), v, OpEnv{}).bits);
      }
      in.fa = in.fb = &Float32();
    }
    in.scale = in.qa.scale * (sum ? 1.0 : in.qb.scale);
    const FormatSpec& fa = *in.fa;
    const FormatSpec& fb = *in.fb;
    std::vector<uint64_t> ones;
    if (sum) ones.assign(in.qa.bits.size(), DoubleToFormat(fb, 1.0, false));
    const std::span<const uint64_t> a = in.A();
    const std::span<const uint64_t> b = sum ? std::span<const uint64_t>(ones) : in.B();
    const ExactAccumulator exact = ExactDot(fa, a, fb, b);
    ScaledExact(exact, in.scale, in.x.v);
    in.x_d = mpfr_get_d(in.x.v, MPFR_RNDN);
    const ExactAccumulator abs = ExactAbsDot(fa, a, fb, b);
    ScaledExact(abs, in.scale, in.abs_sum.v);
    in.us_base = mpfr_get_d(in.abs_sum.v, MPFR_RNDN);

    // Mutants: exact value of the mutated computation, rounded once to the output format.
    PinnedRng rng(DeriveSeed(spec_.seed, {key, uint64_t(u.k), uint64_t(s), 3}));
    const int64_t tile = std::max<int64_t>(1, std::min<int64_t>(128, u.k / 4));
    const int64_t tiles = (u.k + tile - 1) / tile;
    const int64_t t0 = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(tiles))) * tile;
    const int64_t t1 = std::min(u.k, t0 + tile);
    const int64_t j = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(u.k)));
    const std::span<const uint64_t> ta(a.data() + t0, static_cast<size_t>(t1 - t0));
    const std::span<const uint64_t> tb(b.data() + t0, static_cast<size_t>(t1 - t0));
    const FormatSpec& model_out = p.model->OutputFormat();
    const ScaleOrder order = p.model->epilogue.scale_order;
    // The mutant's output value: rounded once to the model's output, then the model's scale
    // stage (accumulation/epilogue.h) where the computation is scaled (s_a s_b != 1).
    auto scaled_value = [&](const FormatSpec& f, uint64_t bits, EpilogueScales sc) {
      return sc.a * sc.b == 1 ? ToDouble(f, bits)
                              : ToDouble(Float32(), ApplyScale(order, f, bits, 0, sc).bits);
    };
    auto mutant_value = [&](const ExactAccumulator& m, EpilogueScales sc) {
      return scaled_value(model_out, m.Round(model_out, OpEnv{}).bits, sc);
    };
    const EpilogueScales scales{in.qa.scale, sum ? 1.0 : in.qb.scale};
    in.mutant.fill(NAN);
    {
      // exact - tile: the tile added again with a negated.
      std::vector<uint64_t> na(ta.begin(), ta.end());
      for (uint64_t& v : na) v = NegateBits(fa, v);
      ExactAccumulator m = exact;
      m.AddDot(fa, na, fb, tb);
      in.mutant[kDroppedTile] = mutant_value(m, scales);
      ExactAccumulator d = exact;
      d.AddDot(fa, ta, fb, tb);
      in.mutant[kDoubledTile] = mutant_value(d, scales);
    }
    {
      // exact - 2 a_j b_j: (-a_j) b_j added twice.
      ExactAccumulator m = exact;
      const uint64_t naj = NegateBits(fa, a[static_cast<size_t>(j)]);
      m.AddProduct(fa, naj, fb, b[static_cast<size_t>(j)]);
      m.AddProduct(fa, naj, fb, b[static_cast<size_t>(j)]);
      in.mutant[kSignFlip] = mutant_value(m, scales);
    }
    if (!sum) {
      const ExactAccumulator t = ExactDot(fa, a, fb, in.BOther());
      in.mutant[kTransposed] = mutant_value(t, {in.qa.scale, in.qb_other.scale});
      if (in.scale != 1) in.mutant[kMissingScale] = mutant_value(exact, {in.qa.scale, 1});
    }
    const Model bm = Bf16AccumulationModel(fa, fb, sum);
    absl::StatusOr<EvalResult> r = sum ? EvaluateSum(bm, a, 0, {0, false})
                                       : EvaluateDot(bm, a, b, 0, {0, false});
    if (r.ok()) in.mutant[kBf16Accumulation] = scaled_value(BFloat16(), r->bits, scales);
  }

  // Runs platform p on prepared inputs and measures.
  Obs Observe(const PlatformInfo& p, const SampleInputs& in, bool sum) const {
    Obs o;
    // The model on the operands in its input formats (int8 included: int32-exact).
    const FormatSpec& model_out = p.model->OutputFormat();
    absl::StatusOr<EvalResult> r =
        sum ? EvaluateSum(*p.model, in.qa.bits, 0) : EvaluateDot(*p.model, in.qa.bits, in.qb.bits, 0);
    if (!r.ok()) {
      o.finite = false;
      return o;
    }
    const uint64_t y_bits = r->bits;  // Before dequantization.
    const double y_acc = ToDouble(model_out, y_bits), bound = r->bound;
    if (in.scale != 1) {
      // The model's scale stage, with the a priori bound from |x S| (accumulation/epilogue.h).
      const ScaleOrder order = p.model->epilogue.scale_order;
      const EpilogueScales scales{in.qa.scale, sum ? 1.0 : in.qb.scale};
      o.y_bits = ApplyScale(order, model_out, y_bits, bound, scales).bits;
      o.y = ToDouble(Float32(), o.y_bits);
      o.bound = ScaleAPriori(order, model_out, y_bits, bound, scales, in.x_d);
    } else {
      o.y_bits = y_bits;
      o.y = y_acc;
      o.bound = bound;
    }
    o.finite = std::isfinite(o.y);
    o.x = in.x_d;
    Mpfr yv, diff;
    ErrorMeasureValue(*p.out, o.y_bits, yv.v);
    mpfr_set_prec(diff.v, 256);
    mpfr_sub(diff.v, yv.v, in.x.v, MPFR_RNDN);
    o.err = std::fabs(mpfr_get_d(diff.v, MPFR_RNDU));
    o.ulp_err = std::fabs(UlpError(*p.out, o.y_bits, in.x.v));
    o.ulp_x = std::ldexp(1.0, static_cast<int>(UlpExponent(*p.out, in.x.v)));
    o.rel = RelativeError(*p.out, o.y_bits, in.x.v);
    o.us = UnitRoundoff(p) * in.us_base;
    o.bn = o.us > 0 ? o.err / o.us : (o.err == 0 ? 0 : INFINITY);
    for (int m = 0; m < kMutations; ++m) o.mut_err[m] = std::fabs(in.mutant[m] - in.x_d);
    return o;
  }

  const SweepSpec& spec() const { return spec_; }

 private:
  const SweepSpec& spec_;
  const std::map<std::string, const Model*> models_;
};

// ---- Recommendation rule. ----
struct Recommendation {
  double ulp = 0, bn = 0, rtol = 0, atol = 0;
  double bound_ulp = 0, bound_bn = 0;
};

Recommendation Recommend(const std::vector<Obs>& obs, double factor) {
  Recommendation r;
  std::vector<double> ulp, bn, rel;
  for (const Obs& o : obs) {
    ulp.push_back(o.ulp_err);
    bn.push_back(o.bn);
    if (std::isfinite(o.rel)) rel.push_back(o.rel);
    r.bound_ulp = std::max(r.bound_ulp, o.bound / o.ulp_x);
    r.bound_bn = std::max(r.bound_bn, o.us > 0 ? o.bound / o.us : 0.0);
  }
  const Summary su = Summarize(ulp), sb = Summarize(bn), sr = Summarize(rel);
  r.ulp = std::min(factor * su.max, r.bound_ulp);
  r.bn = std::min(factor * sb.max, r.bound_bn);
  r.rtol = factor * sr.median;
  for (const Obs& o : obs) {
    const double e = std::min(factor * o.err, o.bound);
    r.atol = std::max(r.atol, e - r.rtol * std::fabs(o.x));
  }
  // atol + rtol |x| must cover every observation exactly as compared (|y - x| <= ...): nudge up
  // by the rounding of the comparison itself.
  r.atol = r.atol > 0 ? r.atol * (1 + 0x1p-40) : 0;
  return r;
}

// The elementwise (quantization) assert_close rule: rtol = factor * the largest relative error
// err_i / ref_i among the elements inside the format's normal range (where RNE keeps it below
// 2^-p), atol = max_i max(0, factor * err_i - rtol * ref_i) for the rest (subnormals, zeros).
struct ElementwiseTolerance {
  double rtol = 0, atol = 0;
};
ElementwiseTolerance ElementwiseRule(const std::vector<double>& err,
                                     const std::vector<double>& ref_abs,
                                     const std::vector<bool>& in_normal, double factor) {
  double rel = 0;
  for (size_t i = 0; i < err.size(); ++i) {
    if (in_normal[i] && ref_abs[i] > 0) rel = std::max(rel, err[i] / ref_abs[i]);
  }
  ElementwiseTolerance t;
  t.rtol = factor * rel;
  for (size_t i = 0; i < err.size(); ++i) {
    t.atol = std::max(t.atol, factor * err[i] - t.rtol * ref_abs[i]);
  }
  t.atol *= 1 + 0x1p-40;  // Covers the rounding of the comparison itself.
  return t;
}

// Smallest normal magnitude of a format (1 for integers).
double NormalMin(const FormatSpec& f) {
  return std::ldexp(1.0, f.kind == FormatKind::kInteger ? 0 : f.d.emin);
}

bool Rejects(double err, double x, double atol, double rtol) {
  return !(err <= atol + rtol * std::fabs(x));
}

std::string Note(const Recommendation& r, const Summary& sb, double prob, int non_finite,
                 double factor) {
  std::vector<std::string> notes;
  if (r.bn < factor * sb.max) notes.push_back("capped by worst-case bound");
  if (r.bn > prob) notes.push_back("above lambda*sqrt(K)");
  if (non_finite > 0) notes.push_back(Cat(non_finite, " non-finite outputs"));
  return Join(notes, "; ");
}

// Memory of one unit (sweep.h, "Memory"): bytes every worker thread holds, and bytes held once.
struct UnitMemory {
  int64_t per_thread = 0;
  int64_t shared = 0;
  int max_threads = 1;  // Threads split samples: no more than samples work.
  int64_t Total(int threads) const {
    return shared + static_cast<int64_t>(std::min(threads, max_threads)) * per_thread;
  }
};

UnitMemory EstimateUnitMemory(const Unit& u, const SweepSpec& spec, const Sweeper& sweeper) {
  UnitMemory m;
  m.max_threads = std::max(1, u.samples);
  if (u.op == "composite") {  // Inputs, exact enclosures, two runs' values and bounds per element.
    m.shared = u.composite.rows * u.composite.n * 96 * static_cast<int64_t>(spec.composite.platforms.size() + 1);
    m.max_threads = 1;
    return m;
  }
  if (u.op == "attention") {  // Per input format: Q K V |V| (S x D), the measured rows' mask
                               // (rows x S) and about 16 + 3 P values per measured element.
    const AttentionUnit& a = u.attention;
    const auto p = static_cast<int64_t>(spec.attention.platforms.size());
    m.shared = p * (8 * 5 * a.s * a.d + a.rows * a.s + 8 * a.rows * a.d * (16 + 3 * p));
    m.max_threads = 1;
    return m;
  }
  if (u.op == "quantize") {
    const auto f = static_cast<int64_t>(spec.quantize_formats.size());
    m.shared = u.samples * u.k * (kQuantizeBytesPerElement + kQuantizeBytesPerElementFormat * f);
    m.max_threads = 1;
    return m;
  }
  std::set<std::pair<const FormatSpec*, const FormatSpec*>> pairs;
  std::set<std::string> plats(u.platforms.begin(), u.platforms.end());
  for (const CrossSpec* c : u.cross) {
    plats.insert(c->a);
    plats.insert(c->b.begin(), c->b.end());
  }
  for (const std::string& p : plats) {
    const PlatformInfo info = sweeper.Info(p, *u.dtype);
    pairs.emplace(info.fa, info.fb);
  }
  m.per_thread = u.k * kMatmulBytesPerTermPerPair * (1 + static_cast<int64_t>(pairs.size()));
  m.shared = static_cast<int64_t>(plats.size()) * u.samples * static_cast<int64_t>(sizeof(Obs));
  return m;
}

std::string MiB(int64_t bytes) { return Cat((bytes + (1 << 20) - 1) >> 20, " MiB"); }

// The worker threads for this shard's units: options.threads, or with fit_threads as many of
// them as fit in kSweepMemoryBudgetBytes (at least 1). An error, before any work, when even that
// does not fit.
absl::StatusOr<int> FitThreads(const std::vector<Unit>& units, const SweepOptions& options,
                               const Sweeper& sweeper) {
  int threads = std::max(1, options.threads);
  const SweepSpec& spec = sweeper.spec();
  for (size_t ui = 0; ui < units.size(); ++ui) {
    if (static_cast<int>(ui % options.shard_count) != options.shard_index) continue;
    const UnitMemory m = EstimateUnitMemory(units[ui], spec, sweeper);
    if (options.fit_threads) {
      while (threads > 1 && m.Total(threads) > kSweepMemoryBudgetBytes) --threads;
    }
    if (m.Total(threads) > kSweepMemoryBudgetBytes) {
      const Unit& u = units[ui];
      const int t = std::min(threads, m.max_threads);
      return absl::ResourceExhaustedError(Cat(
          u.Label(), " needs about ", MiB(m.Total(threads)), " of memory (",
          u.op == "quantize"    ? Cat(u.samples, " samples x ", u.k, " elements x ",
                                       spec.quantize_formats.size(), " formats")
          : u.op == "composite" ? Cat(u.samples, " samples x ", u.k, " elements")
          : u.op == "attention" ? Cat(u.samples, " rows of S = ", u.k)
              : Cat(MiB(m.per_thread), " per worker thread at K = ", u.k, ", ", t,
                    t == 1 ? " thread" : " threads"),
          "), more than the ", MiB(kSweepMemoryBudgetBytes),
          " a sweep may use (reports/sweep.h, \"Memory\"); ",
          u.op == "quantize" || u.op == "composite" ? "use fewer samples or elements"
          : u.op == "attention"                      ? "use a smaller S or fewer platforms"
                             : "use fewer threads (--threads) or a smaller K"));
    }
  }
  return threads;
}

// ---- The driver. ----

bool Cancelled(const SweepOptions& options) { return options.cancelled && options.cancelled(); }

absl::Status Interrupted() { return absl::CancelledError("tolerance sweep interrupted"); }

// The sweep after the catalog has been consulted: envelopes in cross pairs replaced by their
// members, every model loaded, the units in their fixed order.
struct SweepPlan {
  SweepSpec spec;
  std::map<std::string, std::string> b_labels;  // Cross name -> label of its b side.
  std::map<std::string, Model> models;
  std::vector<std::pair<std::string, std::string>> model_files;  // ("model <name>", hash).
  std::vector<composite::CompositeModel> composite_models;        // [composite] platforms.
  std::vector<composite::AttentionModel> attention_models;        // [attention] platforms.
  std::vector<Unit> units;
};

// Envelopes in cross pairs become their members (the row keeps the envelope's name, in
// plan.b_labels).
absl::Status ExpandCrossEnvelopes(const ModelCatalog& catalog, SweepPlan& plan) {
  for (CrossSpec& c : plan.spec.cross) {
    if (c.dtype == "quantize") continue;
    plan.b_labels[c.name] = Join(c.b, "+");
    std::vector<std::string> members;
    for (const std::string& b : c.b) {
      if (!catalog.IsEnvelope(b)) {
        members.push_back(b);
        continue;
      }
      absl::StatusOr<std::vector<const Model*>> e = catalog.Expand(b);
      if (!e.ok()) return e.status();
      for (const Model* m : *e) members.push_back(m->name);
    }
    c.b = members;
  }
  return absl::OkStatus();
}

// Loads every model named anywhere in plan.spec, with the hash of its file for the provenance.
absl::Status LoadSweepModels(const ModelCatalog& catalog, const std::string& models_dir,
                             SweepPlan& plan) {
  auto need = [&](const std::string& name) -> absl::Status {
    if (plan.models.count(name) != 0) return absl::OkStatus();
    const absl::StatusOr<Model>& m = catalog.Find(name);
    if (!m.ok()) return m.status();
    // 8-bit inputs are dequantized with per-tensor scales (sweep.h): the model must take them.
    if (IsScaledFormat(*m->inputs.a) || IsScaledFormat(m->InputB())) {
      if (absl::Status s = CheckEpilogueScales(*m, 1, 1); !s.ok()) return s;
    }
    plan.models.emplace(name, *m);
    plan.model_files.emplace_back(Cat("model ", name), TextFileHash(Cat(models_dir, "/", name, ".toml")));
    return absl::OkStatus();
  };
  for (const DtypeSpec& d : plan.spec.dtypes) {
    if (d.integer) continue;
    for (const auto* list : {&d.matmul, &d.sum}) {
      for (const std::string& p : *list) {
        if (absl::Status s = need(p); !s.ok()) return s;
      }
    }
  }
  for (const CrossSpec& c : plan.spec.cross) {
    if (c.dtype == "quantize") continue;
    if (absl::Status s = need(c.a); !s.ok()) return s;
    for (const std::string& b : c.b) {
      if (absl::Status s = need(b); !s.ok()) return s;
    }
  }
  std::sort(plan.model_files.begin(), plan.model_files.end());
  return absl::OkStatus();
}

// The units, in a fixed order: per op of spec.ops, quantize units by distribution, matmul and sum
// units by (dtype, distribution, K).
std::vector<Unit> MakeUnits(const SweepSpec& spec) {
  std::vector<Unit> units;
  // Appends a unit and returns it, for the fields of its op (valid until the next one).
  auto add = [&units](const std::string& op, const std::string& dist, int64_t k, int64_t samples) -> Unit& {
    Unit& u = units.emplace_back();
    u.op = op;
    u.dist = dist;
    u.k = k;
    u.samples = static_cast<int>(samples);
    return u;
  };
  for (const std::string& op : spec.ops) {
    if (op == "attention") {
      for (const AttentionUnit& au : sweep_internal::MakeAttentionUnits(spec.attention)) {
        add(op, au.dist, au.s, au.rows).attention = au;
      }
      continue;
    }
    if (op == "composite") {
      for (const CompositeUnit& cu : sweep_internal::MakeCompositeUnits(spec.composite)) {
        add(op, cu.dist, cu.n, cu.axis ? cu.rows : cu.n).composite = cu;
      }
      continue;
    }
    if (op == "quantize") {
      if (spec.quantize_formats.empty()) continue;
      for (const std::string& dist : spec.distributions) {
        Unit& u = add(op, dist, spec.quantize_elements, spec.samples);
        for (const CrossSpec& c : spec.cross) {
          if (c.dtype == "quantize") u.cross.push_back(&c);
        }
      }
      continue;
    }
    for (const DtypeSpec& d : spec.dtypes) {
      const bool sum = op == "sum";
      const std::vector<std::string>& plats = sum ? d.sum : d.matmul;
      if (plats.empty() && !(d.integer && !sum)) continue;
      for (const std::string& dist : spec.distributions) {
        for (int64_t k : spec.ks) {
          const int64_t by_budget = spec.max_terms_per_row / k;
          Unit& u = add(op, dist, k, std::clamp<int64_t>(by_budget, spec.min_samples, spec.samples));
          u.dtype = &d;
          u.platforms = d.integer ? std::vector<std::string>{"int32-exact"} : plats;
          for (const CrossSpec& c : spec.cross) {
            if (c.dtype == d.name && c.op == op) u.cross.push_back(&c);
          }
        }
      }
    }
  }
  return units;
}

std::vector<std::pair<std::string, std::string>> SweepProvenance(const SweepPlan& plan,
                                                                  const SweepOptions& options) {
  const SweepSpec& spec = plan.spec;
  std::vector<std::pair<std::string, std::string>> p = {
      {"fpconform", FPCONFORM_REPORT_VERSION},
      {"sweep file", spec.source},
      {"seed", std::to_string(spec.seed)},
      {"samples", Cat("per row: clamp(", spec.max_terms_per_row, " / K, ", spec.min_samples,
                      ", ", spec.samples, ")")},
      {"ops", Join(spec.ops, ",")},
      {"ks", Join(spec.ks, ",")},
      {"distributions", Join(spec.distributions, ",")},
      {"factor", FormatDouble(spec.factor)},
      {"lambda", FormatDouble(spec.lambda)},
      {"units", std::to_string(plan.units.size())},
      {"rule",
       "ULP: min(factor * max observed, max worst-case bound); bound-normalized: min(factor * max "
       "observed, max worst-case bound); assert_close: rtol = factor * median relative error, "
       "atol = max_i max(0, min(factor * e_i, bound_i) - rtol * |x_i|); percentiles are nearest-"
       "rank"},
      {"inputs",
       "cases/pinned_random.h streams DeriveSeed(seed, {fnv1a64(op/dtype/distribution), K, "
       "sample, operand}); scaled formats: s = fl32(amax / max), q = RNE_sat(x / s)"},
      {"mutants", "exact mutated value rounded once to the output format (bf16_accumulation: "
                  "a sequential bfloat16 FMA chain)"},
  };
  for (const auto& mf : plan.model_files) p.push_back(mf);
  if (!plan.composite_models.empty()) {
    std::vector<std::string> names;
    for (const composite::CompositeModel& m : plan.composite_models) names.push_back(m.name);
    p.push_back({"composite models", Cat(options.composite_models_dir, ": ", Join(names, ","))});
    p.push_back({"composite rule",
                 "e_i = max(factor * |y_i - x_i|, B_i), B_i = the model's bound; rec_ulp = max e_i / "
                 "ulp(x_i); (rtol, atol) covering every e_i with the least atol + rtol * median |x|; "
                 "mutants in binary64, rounded once to the output format"});
  }
  if (!plan.attention_models.empty()) {
    std::vector<std::string> names;
    for (const composite::AttentionModel& m : plan.attention_models) names.push_back(m.name);
    const AttentionSweepSpec& a = spec.attention;
    p.push_back({"attention models", Cat(options.attention_models_dir, ": ", Join(names, ","))});
    p.push_back({"attention units", Cat("lengths ", Join(a.lengths, ","), "; head_dims ", Join(a.head_dims, ","),
                                        "; masks ", Join(a.masks, ","), "; distributions ", Join(a.distributions, ","),
                                        "; rows ", a.rows, "; cases ", a.cases)});
    p.push_back({"attention rule",
                 "e_i = max(factor * |y_i - x_i|, B_i), B_i = the model's bound; rec_ulp = max e_i / ulp(x_i); "
                 "(rtol, atol) covering every e_i with the least atol + rtol * median |x|; mutants in binary64, "
                 "rounded once to the output format; nki = maxAllClose(rtol 2e-2, atol 1e-5, mode max); "
                 "fa = max|a - b| <= 2 max|pt - b| + 1e-5"});
  }
  if (options.shard_count > 1 || options.record_shard) {
    p.push_back({"shard", Cat(options.shard_index + 1, "/", options.shard_count)});
  }
  return p;
}

// ---- Quantize units. ----

// One format's pooled element errors over all tensors of a quantize unit.
struct QuantizeObs {
  std::vector<double> ulp, rel, err, xabs, scale;
  int64_t saturated = 0;
  std::vector<double> deq;  // Dequantized values of all tensors (for cross rows).
};

QuantizeObs ObserveQuantize(const std::vector<std::vector<double>>& xs, const FormatSpec& f) {
  QuantizeObs qo;
  const double maxv = MaxMagnitude(f);
  Mpfr xv;
  mpfr_set_prec(xv.v, 53);
  for (const std::vector<double>& x : xs) {
    const Quantized q = Quantize(x, f);
    for (size_t i = 0; i < x.size(); ++i) {
      const double qv = ToDouble(f, q.bits[i]);
      const double deq = qv * q.scale;  // Exact in double.
      const double xs_v = x[i] / q.scale;
      mpfr_set_d(xv.v, xs_v, MPFR_RNDN);
      qo.ulp.push_back(f.kind == FormatKind::kInteger ? std::fabs(qv - xs_v)
                                                      : std::fabs(UlpError(f, q.bits[i], xv.v)));
      const double e = std::fabs(deq - x[i]);
      qo.err.push_back(e);
      qo.xabs.push_back(std::fabs(x[i]));
      qo.scale.push_back(q.scale);
      qo.rel.push_back(x[i] != 0 ? e / std::fabs(x[i]) : (e == 0 ? 0 : INFINITY));
      // Saturation mattered only where plain RNE would have overflowed (OCP OFP8: beyond
      // max + half an ulp); values just above max round to max either way.
      const bool overflows = f.kind == FormatKind::kInteger
                                 ? std::fabs(xs_v) >= maxv + 0.5
                                 : !std::isfinite(ToDouble(f, DoubleToFormat(f, xs_v, false)));
      if (std::fabs(xs_v) > maxv && overflows) ++qo.saturated;
      qo.deq.push_back(deq);
    }
  }
  return qo;
}

std::vector<Cell> QuantizeRow(const Unit& u, int64_t unit_index, int64_t item,
                              const std::string& format, const QuantizeObs& qo, double factor,
                              const Table& quant) {
  const FormatSpec& f = *FindFormat(format);
  const Summary su = Summarize(qo.ulp), sr = Summarize(qo.rel);
  std::vector<bool> in_normal(qo.err.size());
  for (size_t i = 0; i < in_normal.size(); ++i) {
    in_normal[i] = qo.xabs[i] >= NormalMin(f) * qo.scale[i];
  }
  const ElementwiseTolerance et = ElementwiseRule(qo.err, qo.xabs, in_normal, factor);
  const double n = static_cast<double>(qo.ulp.size());
  return RowBuilder(quant)
      .Set("unit", unit_index)
      .Set("item", item)
      .Set("format", format)
      .Set("distribution", u.dist)
      .Set("elements", u.k)
      .Set("samples", int64_t{u.samples})
      .Set("ulp_max", su.max)
      .Set("ulp_p99", su.p99)
      .Set("rel_max", sr.max)
      .Set("rel_p99", sr.p99)
      .Set("saturated", static_cast<double>(qo.saturated) / n)
      .Set("rec_rtol", et.rtol)
      .Set("rec_atol", et.atol)
      .Set("rec_ulp", factor * su.max)
      .Build();
}

// A cross_platform row's cells that say which pair it compares (pair c of unit u, as item
// `item`; `b_label` names its b side), shared by the quantize and the reduction pairs.
RowBuilder CrossRowStart(const Table& cross, const Unit& u, int64_t unit_index, int64_t item, const CrossSpec& c,
                         std::string op, std::string dtype, std::string b_label) {
  RowBuilder row(cross);
  row.Set("unit", unit_index)
      .Set("item", item)
      .Set("op", std::move(op))
      .Set("dtype", std::move(dtype))
      .Set("name", c.name)
      .Set("platform_a", c.a)
      .Set("platform_b", std::move(b_label))
      .Set("distribution", u.dist)
      .Set("k", u.k)
      .Set("samples", int64_t{u.samples});
  return row;
}

// A quantize cross pair: the two formats' dequantized values of the same tensors.
std::vector<Cell> QuantizeCrossRow(const Unit& u, int64_t unit_index, int64_t item,
                                   const CrossSpec& c, const std::string& fa_name,
                                   const QuantizeObs& qa, const std::string& fb_name,
                                   const QuantizeObs& qb, double factor, const Table& cross) {
  std::vector<double> rel, diff, ref;
  for (size_t i = 0; i < qa.deq.size(); ++i) {
    const double d = std::fabs(qa.deq[i] - qb.deq[i]);
    diff.push_back(d);
    ref.push_back(std::fabs(qa.deq[i]));
    rel.push_back(qa.deq[i] != 0 ? d / std::fabs(qa.deq[i]) : (d == 0 ? 0 : INFINITY));
  }
  // As for the quantize rows: rtol from the elements inside both formats' normal ranges.
  const Summary sr = Summarize(rel);
  const FormatSpec& fa = *FindFormat(fa_name);
  const FormatSpec& fb = *FindFormat(fb_name);
  std::vector<bool> in_normal(diff.size());
  for (size_t i = 0; i < diff.size(); ++i) {
    in_normal[i] = qa.xabs[i] >= NormalMin(fa) * qa.scale[i] &&
                   qb.xabs[i] >= NormalMin(fb) * qb.scale[i];
  }
  const ElementwiseTolerance et = ElementwiseRule(diff, ref, in_normal, factor);
  return CrossRowStart(cross, u, unit_index, item, c, "quantize", c.a + " vs " + c.b[0], c.b[0])
      .Empty("diff_ulp_max")
      .Empty("diff_ulp_p99")
      .Empty("diff_bn_max")
      .Empty("diff_bn_p99")
      .Set("diff_rel_max", sr.max)
      .Empty("worst_bn")
      .Empty("rec_ulp")
      .Empty("rec_bn")
      .Set("rec_rtol", et.rtol)
      .Set("rec_atol", et.atol)
      .Build();
}

// A quantize unit: every quantize format on the same tensors (the formats split between
// `threads` workers; each format's observations are its own, so the rows do not depend on the
// split), then its cross pairs.
absl::Status RunQuantizeUnit(const Unit& u, int64_t unit_index, const SweepSpec& spec,
                             int threads, const SweepOptions& options, SweepTables& tables) {
  const std::vector<std::string>& fmts = spec.quantize_formats;
  std::vector<std::vector<double>> xs(static_cast<size_t>(u.samples));
  for (int s = 0; s < u.samples; ++s) {
    xs[static_cast<size_t>(s)] =
        DrawVector(DeriveSeed(spec.seed, {u.Key(), uint64_t(u.k), uint64_t(s), 0}), u.dist, u.k);
  }
  std::vector<QuantizeObs> qo(fmts.size());
  ParallelForEach(static_cast<int64_t>(fmts.size()), threads, [&](int64_t fi) {
    if (!Cancelled(options)) qo[size_t(fi)] = ObserveQuantize(xs, *FindFormat(fmts[size_t(fi)]));
  });
  if (Cancelled(options)) return Interrupted();
  for (size_t fi = 0; fi < fmts.size(); ++fi) {
    tables.quant.rows.push_back(QuantizeRow(u, unit_index, static_cast<int64_t>(fi), fmts[fi],
                                            qo[fi], spec.factor, tables.quant));
  }
  int64_t item = 0;
  auto at = [&fmts](const std::string& name) {
    return static_cast<size_t>(std::find(fmts.begin(), fmts.end(), name) - fmts.begin());
  };
  for (const CrossSpec* c : u.cross) {
    const size_t ia = at(c->a), ib = at(c->b[0]);
    tables.cross.rows.push_back(QuantizeCrossRow(u, unit_index, item++, *c, fmts[ia], qo[ia],
                                                 fmts[ib], qo[ib], spec.factor, tables.cross));
  }
  return absl::OkStatus();
}

// ---- Matmul and sum units. ----

// obs[platform][sample] of every platform in `infos`, samples split between `threads` workers.
// Inputs are shared by platforms with the same input formats.
std::vector<std::vector<Obs>> ObserveReduction(const Unit& u, const Sweeper& sweeper,
                                               const std::vector<PlatformInfo>& infos,
                                               int threads, const SweepOptions& options) {
  const bool sum = u.op == "sum";
  std::vector<std::vector<Obs>> obs(infos.size(),
                                    std::vector<Obs>(static_cast<size_t>(u.samples)));
  ParallelForEach(u.samples, threads, [&](int64_t s) {
    if (Cancelled(options)) return;
    std::map<std::pair<const FormatSpec*, const FormatSpec*>, std::unique_ptr<SampleInputs>> cache;
    for (size_t pi = 0; pi < infos.size(); ++pi) {
      const PlatformInfo& p = infos[pi];
      auto& slot = cache[{p.fa, p.fb}];
      if (!slot) {
        slot = std::make_unique<SampleInputs>();
        sweeper.MakeInputs(u, static_cast<int>(s), p, sum, *slot);
      }
      obs[pi][static_cast<size_t>(s)] = sweeper.Observe(p, *slot, sum);
    }
  });
  return obs;
}

// A tolerance or power row's cells that say which unit, platform and K it measures (item `item`
// of unit u, platform p), shared by the two tables.
RowBuilder PlatformRowStart(const Table& t, const Unit& u, int64_t unit_index, int64_t item,
                            const PlatformInfo& p) {
  RowBuilder row(t);
  row.Set("unit", unit_index)
      .Set("item", item)
      .Set("op", u.op)
      .Set("dtype", u.dtype->name)
      .Set("platform", p.name)
      .Set("distribution", u.dist)
      .Set("k", u.k);
  return row;
}

// The tolerance row of platform p (item `item` of its unit) and its power rows.
void AddToleranceRows(const Unit& u, int64_t unit_index, int64_t item, const PlatformInfo& p,
                      const std::vector<Obs>& o, const SweepSpec& spec, SweepTables& tables) {
  const double prob = spec.lambda * std::sqrt(static_cast<double>(u.k));
  std::vector<double> ulp, bn, rel;
  int non_finite = 0;
  for (const Obs& x : o) {
    ulp.push_back(x.finite ? x.ulp_err : INFINITY);
    bn.push_back(x.finite ? x.bn : INFINITY);
    rel.push_back(x.finite ? x.rel : INFINITY);
    if (!x.finite) ++non_finite;
  }
  const Summary su = Summarize(ulp), sb = Summarize(bn), sr = Summarize(rel);
  const Recommendation r = Recommend(o, spec.factor);
  const DefaultTolerance dt = DefaultsFor(*p.out);
  int torch_rej = 0, jax_rej = 0;
  for (const Obs& x : o) {
    torch_rej += Rejects(x.err, x.x, dt.torch_atol, dt.torch_rtol);
    jax_rej += Rejects(x.err, x.x, dt.jax_tol, dt.jax_tol);
  }
  const double n = static_cast<double>(o.size());
  tables.tol.rows.push_back(PlatformRowStart(tables.tol, u, unit_index, item, p)
                                .Set("input_format", std::string(p.fa->name))
                                .Set("output_format", std::string(p.out->name))
                                .Set("accumulator", AccumulatorName(p))
                                .Set("samples", int64_t{u.samples})
                                .Set("seed", std::to_string(spec.seed))
                                .Set("ulp_max", su.max)
                                .Set("ulp_p99", su.p99)
                                .Set("ulp_median", su.median)
                                .Set("bn_max", sb.max)
                                .Set("bn_p99", sb.p99)
                                .Set("bn_median", sb.median)
                                .Set("rel_max", sr.max)
                                .Set("rel_p99", sr.p99)
                                .Set("rel_median", sr.median)
                                .Set("bound_ulp", r.bound_ulp)
                                .Set("bound_bn", r.bound_bn)
                                .Set("prob_bn", prob)
                                .Set("rec_ulp", r.ulp)
                                .Set("rec_bn", r.bn)
                                .Set("rec_rtol", r.rtol)
                                .Set("rec_atol", r.atol)
                                .Set("note", Note(r, sb, prob, non_finite, spec.factor))
                                .Set("torch_rtol", dt.torch_rtol)
                                .Set("torch_atol", dt.torch_atol)
                                .Set("torch_rejects", torch_rej / n)
                                .Set("jax_tol", dt.jax_tol)
                                .Set("jax_rejects", jax_rej / n)
                                .Build());
  for (int m = 0; m < kMutations; ++m) {
    RowBuilder row = PlatformRowStart(tables.power, u, unit_index, item * kMutations + m, p);
    row.Set("mutation", std::string(kMutationNames[m]));
    if (std::isnan(o[0].mut_err[m])) {  // Not applicable to this platform.
      for (const char* c : {"rejected_assert_close", "rejected_ulp", "rejected_bn",
                            "rejected_torch", "rejected_jax"}) {
        row.Empty(c);
      }
      tables.power.rows.push_back(row.Build());
      continue;
    }
    int ac = 0, ul = 0, bnr = 0, tr = 0, jr = 0;
    for (const Obs& x : o) {
      const double e = x.mut_err[m];
      ac += Rejects(e, x.x, r.atol, r.rtol);
      ul += !(e / x.ulp_x <= r.ulp);
      bnr += !(x.us > 0 ? e / x.us <= r.bn : e == 0);
      tr += Rejects(e, x.x, dt.torch_atol, dt.torch_rtol);
      jr += Rejects(e, x.x, dt.jax_tol, dt.jax_tol);
    }
    tables.power.rows.push_back(row.Set("rejected_assert_close", ac / n)
                                    .Set("rejected_ulp", ul / n)
                                    .Set("rejected_bn", bnr / n)
                                    .Set("rejected_torch", tr / n)
                                    .Set("rejected_jax", jr / n)
                                    .Build());
  }
}

// The row of cross pair c (item `item` of its unit): per sample the b member farthest from a.
std::vector<Cell> CrossRow(const Unit& u, int64_t unit_index, int64_t item, const CrossSpec& c,
                           const std::string& b_label, const std::vector<std::string>& plats,
                           const std::vector<PlatformInfo>& infos,
                           const std::vector<std::vector<Obs>>& obs, double factor,
                           const Table& cross) {
  auto at = [&plats](const std::string& name) {
    return static_cast<size_t>(std::find(plats.begin(), plats.end(), name) - plats.begin());
  };
  const size_t ia = at(c.a);
  std::vector<double> dulp, dbn, drel, worst, dabs, aref;
  for (int s = 0; s < u.samples; ++s) {
    const Obs& a = obs[ia][static_cast<size_t>(s)];
    double mu = 0, mb = 0, mr = 0, mw = 0, md = 0;
    for (const std::string& bn : c.b) {
      const size_t ib = at(bn);
      const Obs& b = obs[ib][static_cast<size_t>(s)];
      const double d = std::fabs(a.y - b.y);
      double du = INFINITY;
      if (infos[ia].out == infos[ib].out) {
        const std::optional<int64_t> dist = UlpDistance(*infos[ia].out, a.y_bits, b.y_bits);
        if (dist) du = std::fabs(static_cast<double>(*dist));
      }
      mu = std::max(mu, du);
      md = std::max(md, d);
      mb = std::max(mb, a.us > 0 ? d / a.us : (d == 0 ? 0 : INFINITY));
      mr = std::max(mr, a.y != 0 ? d / std::fabs(a.y) : (d == 0 ? 0 : INFINITY));
      const double w = a.bound + b.bound + std::fabs(a.x - b.x);
      mw = std::max(mw, a.us > 0 ? w / a.us : INFINITY);
    }
    dulp.push_back(mu);
    dbn.push_back(mb);
    drel.push_back(mr);
    worst.push_back(mw);
    dabs.push_back(md);
    aref.push_back(std::fabs(a.y));
  }
  const Summary su = Summarize(dulp), sb = Summarize(dbn), sr = Summarize(drel),
                sw = Summarize(worst);
  std::vector<double> frel;
  for (double r : drel) {
    if (std::isfinite(r)) frel.push_back(r);
  }
  const double rtol = factor * Summarize(frel).median;
  double atol = 0;
  for (size_t i = 0; i < dabs.size(); ++i) {
    const Obs& a = obs[ia][i];
    const double cap = worst[i] * a.us;
    atol = std::max(atol, std::min(factor * dabs[i], cap) - rtol * aref[i]);
  }
  return CrossRowStart(cross, u, unit_index, item, c, u.op, u.dtype->name, b_label)
      .Set("diff_ulp_max", su.max)
      .Set("diff_ulp_p99", su.p99)
      .Set("diff_bn_max", sb.max)
      .Set("diff_bn_p99", sb.p99)
      .Set("diff_rel_max", sr.max)
      .Set("worst_bn", sw.max)
      .Set("rec_ulp", factor * su.max)
      .Set("rec_bn", std::min(factor * sb.max, sw.max))
      .Set("rec_rtol", rtol)
      .Set("rec_atol", atol > 0 ? atol * (1 + 0x1p-40) : 0.0)
      .Build();
}

// A matmul or sum unit: every platform of its rows and of its cross pairs on the same samples,
// then one tolerance row (and its power rows) per row platform and one row per cross pair.
absl::Status RunReductionUnit(const Unit& u, int64_t unit_index, const SweepPlan& plan,
                              const Sweeper& sweeper, int threads, const SweepOptions& options,
                              SweepTables& tables) {
  // Every platform this unit evaluates: the rows', then the cross pairs'.
  std::vector<std::string> plats = u.platforms;
  auto add = [&plats](const std::string& n) {
    if (std::find(plats.begin(), plats.end(), n) == plats.end()) plats.push_back(n);
  };
  for (const CrossSpec* c : u.cross) {
    add(c->a);
    for (const std::string& n : c->b) add(n);
  }
  std::vector<PlatformInfo> infos;
  for (const std::string& n : plats) infos.push_back(sweeper.Info(n, *u.dtype));
  const std::vector<std::vector<Obs>> obs = ObserveReduction(u, sweeper, infos, threads, options);
  if (Cancelled(options)) return Interrupted();

  for (size_t pi = 0; pi < u.platforms.size(); ++pi) {
    AddToleranceRows(u, unit_index, static_cast<int64_t>(pi), infos[pi], obs[pi], plan.spec,
                     tables);
  }
  int64_t item = 0;
  for (const CrossSpec* c : u.cross) {
    const auto label = plan.b_labels.find(c->name);
    tables.cross.rows.push_back(
        CrossRow(u, unit_index, item++, *c, label != plan.b_labels.end() ? label->second : "",
                 plats, infos, obs, plan.spec.factor, tables.cross));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Report> RunSweep(const SweepSpec& input_spec, const SweepOptions& options) {
  if (options.shard_count < 1 || options.shard_index < 0 ||
      options.shard_index >= options.shard_count) {
    return absl::InvalidArgumentError(
        Cat("bad shard ", options.shard_index + 1, "/", options.shard_count));
  }
  ModelCatalog catalog(options.models_dir);
  if (absl::Status s = CheckSweepModels(input_spec, catalog); !s.ok()) return s;
  SweepPlan plan;
  plan.spec = input_spec;
  if (absl::Status s = ExpandCrossEnvelopes(catalog, plan); !s.ok()) return s;
  if (absl::Status s = LoadSweepModels(catalog, options.models_dir, plan); !s.ok()) return s;
  plan.units = MakeUnits(plan.spec);
  if (std::find(plan.spec.ops.begin(), plan.spec.ops.end(), "composite") != plan.spec.ops.end()) {
    absl::StatusOr<std::vector<composite::CompositeModel>> cm =
        sweep_internal::LoadCompositeSweepModels(plan.spec, options.composite_models_dir);
    if (!cm.ok()) return cm.status();
    plan.composite_models = *std::move(cm);
  }
  if (std::find(plan.spec.ops.begin(), plan.spec.ops.end(), "attention") != plan.spec.ops.end()) {
    absl::StatusOr<std::vector<composite::AttentionModel>> am =
        sweep_internal::LoadAttentionSweepModels(plan.spec, options.attention_models_dir);
    if (!am.ok()) return am.status();
    plan.attention_models = *std::move(am);
  }

  Report report;
  report.provenance = SweepProvenance(plan, options);
  std::map<std::string, const Model*> models;
  for (const auto& [name, model] : plan.models) models.emplace(name, &model);
  Sweeper sweeper(plan.spec, std::move(models));
  absl::StatusOr<int> fitted = FitThreads(plan.units, options, sweeper);
  if (!fitted.ok()) return fitted.status();
  const int threads = *fitted;
  if (options.threads_used != nullptr) *options.threads_used = threads;
  auto in_shard = [&options](size_t ui) {
    return static_cast<int>(ui % options.shard_count) == options.shard_index;
  };
  int64_t shard_units = 0;
  for (size_t ui = 0; ui < plan.units.size(); ++ui) shard_units += in_shard(ui);

  SweepTables tables;
  int64_t done = 0;
  for (size_t ui = 0; ui < plan.units.size(); ++ui) {
    if (!in_shard(ui)) continue;
    if (Cancelled(options)) return Interrupted();
    const Unit& u = plan.units[ui];
    const int64_t unit_index = static_cast<int64_t>(ui);
    const absl::Status s =
        u.op == "attention"
            ? sweep_internal::RunAttentionUnit(u.attention, unit_index, plan.spec, plan.attention_models, threads,
                                               options.cancelled, tables)
        : u.op == "composite"
            ? sweep_internal::RunCompositeUnit(u.composite, unit_index, plan.spec, plan.composite_models,
                                               threads, options.cancelled, tables)
        : u.op == "quantize"
            ? RunQuantizeUnit(u, unit_index, plan.spec, threads, options, tables)
            : RunReductionUnit(u, unit_index, plan, sweeper, threads, options, tables);
    if (!s.ok()) return s;
    ++done;
    if (options.progress) options.progress(done, shard_units, u.Label());
  }
  report.tables = {std::move(tables.tol),       std::move(tables.cross),
                   std::move(tables.power),     std::move(tables.quant),
                   std::move(tables.composite), std::move(tables.composite_power),
                   std::move(tables.composite_cross), std::move(tables.attention),
                   std::move(tables.attention_power), std::move(tables.attention_cross)};
  return report;
}

std::string SweepDtypeOf(const SweepSpec& spec, const Model& platform, ModelOp op) {
  for (const DtypeSpec& d : spec.dtypes) {
    const std::vector<std::string>& list = op == ModelOp::kSum ? d.sum : d.matmul;
    if (!d.integer && std::find(list.begin(), list.end(), platform.name) != list.end()) return d.name;
  }
  return std::string(platform.inputs.a->name);
}

absl::StatusOr<ToleranceRule> PlatformTolerance(const SweepSpec& spec, const Model& platform,
                                                const ToleranceQuery& query, int threads) {
  const bool sum = query.op == ModelOp::kSum;
  if (!sum && query.op != ModelOp::kMatmul) {
    return absl::InvalidArgumentError("tolerance rule: the op must be matmul or sum");
  }
  const char* op = sum ? "sum" : "matmul";
  if (!platform.Supports(query.op)) {
    return absl::InvalidArgumentError(
        Cat("tolerance rule: model '", platform.name, "' has no ", op, " operation"));
  }
  const std::vector<std::string>& dists = ValidDistributions();
  if (std::find(dists.begin(), dists.end(), query.distribution) == dists.end()) {
    return absl::InvalidArgumentError(Cat("tolerance rule: unknown distribution '",
                                          query.distribution, "' (one of ", Join(dists, ", "), ")"));
  }
  if (query.k < 1 || query.samples < 1) {
    return absl::InvalidArgumentError(Cat("tolerance rule: K = ", query.k, " and samples = ",
                                          query.samples, " must be at least 1"));
  }
  // The unit RunSweep would make for this one row (MakeUnits), on the parsed model as given.
  DtypeSpec dtype;
  dtype.name = query.dtype;
  (sum ? dtype.sum : dtype.matmul).push_back(platform.name);
  Unit u;
  u.op = op;
  u.dtype = &dtype;
  u.dist = query.distribution;
  u.k = query.k;
  u.samples = query.samples;
  u.platforms = {platform.name};
  const Sweeper sweeper(spec, {{platform.name, &platform}});
  SweepOptions options;
  options.threads = threads;
  absl::StatusOr<int> fitted = FitThreads({u}, options, sweeper);
  if (!fitted.ok()) return fitted.status();
  const std::vector<PlatformInfo> infos = {sweeper.Info(platform.name, dtype)};
  const std::vector<std::vector<Obs>> obs = ObserveReduction(u, sweeper, infos, *fitted, options);
  const Recommendation r = Recommend(obs[0], spec.factor);
  return ToleranceRule{.ulp = r.ulp, .bn = r.bn, .rtol = r.rtol, .atol = r.atol};
}

}  // namespace fpconform::reports
