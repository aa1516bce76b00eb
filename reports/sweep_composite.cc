// The tolerance sweep's composite kernels (sweep_composite.h; the rules are sweep.h's
// [composite]).
#include "reports/sweep_composite.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "base/hash.h"
#include "base/str_cat.h"
#include "cases/pinned_random.h"
#include "composite/formula.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "formats/ops.h"
#include "oracles/axis_ops.h"
#include "oracles/elementary.h"
#include "reports/composite_row.h"
#include "reports/parallel_for.h"
#include "reports/stats.h"
#include "reports/sweep_rule.h"

namespace fpconform::reports::sweep_internal {
namespace {

using composite::CompositeFunction;
using composite::CompositeModel;
using composite::Enclosure;

bool IsAxisFunction(std::string_view fn) {
  const auto names = composite::AxisFunctionNames();
  return std::find(names.begin(), names.end(), fn) != names.end();
}

// Functions defined only for positive arguments in the sweep's inputs (|x| is drawn).
bool PositiveDomain(std::string_view fn) { return fn == "log" || fn == "rsqrt" || fn == "reciprocal"; }

double RoundValue(const FormatSpec& f, double v) { return ToDouble(f, DoubleToBits(f, v)); }

double DrawValue(PinnedRng& rng, const std::string& dist, bool positive) {
  double v = rng.Normal();
  if (dist == "wide") v *= 8;
  if (dist == "dc_offset") v += 30;
  return positive ? std::fabs(v) : v;
}

// ---- The functions in binary64 (for the mutants only: their effect dwarfs binary64's error). ----

double Fn64(std::string_view fn, double x) {
  if (fn == "exp") return std::exp(x);
  if (fn == "exp2") return std::exp2(x);
  if (fn == "log") return std::log(x);
  if (fn == "tanh") return std::tanh(x);
  if (fn == "sigmoid") return 1 / (1 + std::exp(-x));
  if (fn == "silu") return x / (1 + std::exp(-x));
  if (fn == "gelu") return 0.5 * x * (1 + std::erf(x * 0.70710678118654752440));
  if (fn == "gelu_tanh") {
    return 0.5 * x * (1 + std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
  }
  if (fn == "rsqrt") return 1 / std::sqrt(x);
  return 1 / x;  // reciprocal.
}

struct RowParams {
  std::span<const double> w, b;  // Values (weight 1, bias 0 when absent).
  double eps = 0;
};

// A mutant of an op along a row, in binary64: the named known-wrong variant (sweep.h).
void AxisMutant(std::string_view op, std::string_view mutation, std::span<const double> x, const RowParams& p,
                size_t dropped, std::span<double> out) {
  const size_t n = x.size();
  if (op == "softmax" || op == "log_softmax") {
    const double m = *std::max_element(x.begin(), x.end());
    double s = 0;
    for (size_t i = 0; i < n; ++i) {
      if (i != dropped) s += std::exp(x[i] - m);
    }
    for (size_t i = 0; i < n; ++i) out[i] = op == "softmax" ? std::exp(x[i] - m) / s : x[i] - m - std::log(s);
    return;
  }
  double mean = 0, sq = 0;
  for (double v : x) {
    mean += v;
    sq += v * v;
  }
  mean /= static_cast<double>(n);
  if (op == "rmsnorm") {
    const double ms = sq / static_cast<double>(n);
    for (size_t i = 0; i < n; ++i) {
      const double scale = mutation == "eps_outside_sqrt" ? 1 / (std::sqrt(ms) + p.eps) : 1 / std::sqrt(ms + p.eps);
      out[i] = x[i] * scale * (mutation == "missing_weight" ? 1.0 : p.w[i]);
    }
    return;
  }
  double var = 0;  // layernorm: two-pass.
  for (double v : x) var += (v - mean) * (v - mean);
  var /= static_cast<double>(mutation == "unbiased_variance" ? n - 1 : n);
  const double rstd = mutation == "eps_outside_sqrt" ? 1 / (std::sqrt(var) + p.eps) : 1 / std::sqrt(var + p.eps);
  for (size_t i = 0; i < n; ++i) {
    out[i] = (x[i] - mean) * rstd * p.w[i] + (mutation == "missing_bias" ? 0.0 : p.b[i]);
  }
}

std::vector<std::string_view> Mutations(std::string_view fn, const FormatSpec& in) {
  std::vector<std::string_view> m;
  if (fn == "gelu" || fn == "gelu_tanh") m.push_back("other_gelu_form");
  if (!IsAxisFunction(fn) && in.fraction_bits > BFloat16().fraction_bits) m.push_back("input_in_bfloat16");
  if (fn == "softmax" || fn == "log_softmax") m.push_back("dropped_term");
  if (fn == "rmsnorm") m = {"eps_outside_sqrt", "missing_weight"};
  if (fn == "layernorm") m = {"unbiased_variance", "eps_outside_sqrt", "missing_bias"};
  return m;
}

// ---- One model on the unit's inputs. ----

// The inputs of one input format: rows * n bits of x, and the weight and bias (n bits each).
struct Inputs {
  const FormatSpec* format = nullptr;
  std::vector<uint64_t> x, w, b;
  std::vector<double> xv, wv, bv;     // Their values.
  std::vector<ExactEnclosure> exact;  // Per element.
  std::vector<size_t> dropped;        // Per row: the term a dropped_term mutant leaves out.
};

struct ModelRun {
  const CompositeModel* model = nullptr;
  const CompositeFunction* f = nullptr;
  std::vector<double> y, bound;  // Emulated output values and B per element (NaN: left out).
};

double Eps(std::string_view fn) { return fn == "rmsnorm" ? 1e-6 : 1e-5; }

Inputs MakeInputs(const CompositeUnit& u, const SweepSpec& spec, const FormatSpec& in) {
  Inputs d;
  d.format = &in;
  const uint64_t key = Fnv1a(Cat("composite/", u.fn, "/", u.dist));
  const bool positive = PositiveDomain(u.fn);
  const size_t total = static_cast<size_t>(u.rows * u.n);
  d.x.resize(total);
  for (int64_t r = 0; r < u.rows; ++r) {
    PinnedRng rng(DeriveSeed(spec.seed, {key, uint64_t(u.n), uint64_t(r), 0}));
    for (int64_t i = 0; i < u.n; ++i) {
      uint64_t bits = DoubleToBits(in, DrawValue(rng, u.dist, positive));
      if (positive && ToDouble(in, bits) == 0) bits = DoubleToBits(in, 1.0);  // No pole in the sweep.
      d.x[static_cast<size_t>(r * u.n + i)] = bits;
    }
    d.dropped.push_back(static_cast<size_t>(rng.Below(static_cast<uint64_t>(u.n))));
  }
  if (u.axis) {
    PinnedRng rng(DeriveSeed(spec.seed, {key, uint64_t(u.n), 0, 1}));
    for (int64_t i = 0; i < u.n; ++i) {
      d.w.push_back(DoubleToBits(in, 1 + 0.1 * rng.Normal()));
      d.b.push_back(DoubleToBits(in, u.fn == "layernorm" ? 0.1 * rng.Normal() : 0.0));
    }
  }
  for (uint64_t v : d.x) d.xv.push_back(ToDouble(in, v));
  for (uint64_t v : d.w) d.wv.push_back(ToDouble(in, v));
  for (uint64_t v : d.b) d.bv.push_back(ToDouble(in, v));
  return d;
}

AxisParams Params(const CompositeUnit& u, const Inputs& d) {
  AxisParams p;
  p.eps = Eps(u.fn);
  if (u.fn == "rmsnorm" || u.fn == "layernorm") {
    p.weight_format = d.format;
    p.weight = d.w;
  }
  if (u.fn == "layernorm") {
    p.bias_format = d.format;
    p.bias = d.b;
  }
  return p;
}

// The exact values of d's elements (rows of n for the axis functions) on `threads` threads, a
// block of elements or a row each.
absl::Status ComputeExact(const CompositeUnit& u, Inputs& d, int threads) {
  d.exact.resize(d.x.size());
  if (!u.axis) {
    const ElementaryFn fn = *ParseElementaryFn(u.fn);
    constexpr int64_t kBlock = 256;
    const auto n = static_cast<int64_t>(d.x.size());
    ParallelForEach((n + kBlock - 1) / kBlock, threads, [&](int64_t block) {
      for (int64_t i = block * kBlock; i < std::min(n, (block + 1) * kBlock); ++i) {
        ExactEnclosure& e = d.exact[static_cast<size_t>(i)];
        const uint64_t x = d.x[static_cast<size_t>(i)];
        if (ElementaryEncloseFast(fn, *d.format, x, &e.lo, &e.hi)) {
          e.nearest = e.lo + (e.hi - e.lo) / 2;
        } else {
          e = ElementaryEnclose(fn, *d.format, x, OpEnv{});
        }
      }
    });
    return absl::OkStatus();
  }
  const AxisOp op = *ParseAxisOp(u.fn);
  const AxisParams p = Params(u, d);
  std::vector<absl::Status> row_status(static_cast<size_t>(u.rows));
  ParallelForEach(u.rows, threads, [&](int64_t r) {
    const size_t at = static_cast<size_t>(r * u.n);
    const std::span<const uint64_t> row(d.x.data() + at, static_cast<size_t>(u.n));
    row_status[static_cast<size_t>(r)] =
        AxisEncloseRow(op, *d.format, row, p, OpEnv{},
                       std::span<ExactEnclosure>(d.exact.data() + at, row.size()));
  });
  for (absl::Status& s : row_status) {  // The first failing row's error, as one thread gives.
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// The model's emulated values and bounds B (sweep.h) on the inputs.
absl::StatusOr<ModelRun> RunModel(const CompositeUnit& u, const CompositeModel& m, const Inputs& d) {
  ModelRun run;
  run.model = &m;
  run.f = m.Find(u.fn);
  const CompositeFunction& f = *run.f;
  const FormatSpec& out = *f.output;
  const size_t total = d.x.size();
  std::vector<uint64_t> y(total);
  std::vector<Enclosure> enc(total);
  if (!u.axis) {
    const ElementaryFn fn = *ParseElementaryFn(u.fn);
    for (size_t i = 0; i < total; ++i) {
      if (f.correctly_rounded) {
        y[i] = ElementaryRound(fn, *d.format, d.x[i], out, OpEnv{}).bits;
        enc[i].lo = enc[i].hi = ToDouble(out, y[i]);
      } else {
        y[i] = f.Emulate(d.x[i]);
        enc[i] = f.Enclose(d.x[i]);
      }
    }
  } else {
    const AxisParams p = Params(u, d);
    for (int64_t r = 0; r < u.rows; ++r) {
      const size_t at = static_cast<size_t>(r * u.n);
      const size_t n = static_cast<size_t>(u.n);
      const std::span<const uint64_t> row(d.x.data() + at, n);
      const std::span<uint64_t> y_row(y.data() + at, n);
      const std::span<Enclosure> e_row(enc.data() + at, n);
      if (f.correctly_rounded) {
        if (absl::Status s = AxisRound(*ParseAxisOp(u.fn), *d.format, row, 1, u.n, p, out, OpEnv{}, y_row, nullptr);
            !s.ok()) {
          return s;
        }
        for (size_t i = 0; i < n; ++i) e_row[i].lo = e_row[i].hi = ToDouble(out, y_row[i]);
        continue;
      }
      const CompositeFunction::Row in = CompositeRow(row, p);
      if (absl::Status s = f.EmulateRow(in, y_row); !s.ok()) return s;
      if (absl::Status s = f.EncloseRow(in, e_row); !s.ok()) return s;
    }
  }
  run.y.resize(total);
  run.bound.resize(total);
  for (size_t i = 0; i < total; ++i) {
    const ExactEnclosure& x = d.exact[i];
    run.y[i] = ToDouble(out, y[i]);
    const bool finite = std::isfinite(run.y[i]) && std::isfinite(x.lo) && std::isfinite(x.hi) &&
                        std::isfinite(enc[i].lo) && std::isfinite(enc[i].hi);
    run.bound[i] = finite ? std::max(enc[i].hi - x.lo, x.hi - enc[i].lo) * kUp : kNaN;
  }
  return run;
}

struct Observed {
  std::vector<double> ulp;        // Per finite element.
  std::vector<double> e, ref;     // max(factor * err, B) and |x|, per finite element.
  std::vector<size_t> index;      // Their element indices.
  double bound_ulp = 0, rec_ulp = 0;
  int64_t non_finite = 0;
};

Observed Observe(const Inputs& d, const ModelRun& run, double factor) {
  Observed o;
  const FormatSpec& out = *run.f->output;
  for (size_t i = 0; i < d.x.size(); ++i) {
    const ExactEnclosure& x = d.exact[i];
    if (std::isnan(run.bound[i]) || !std::isfinite(x.nearest)) {
      ++o.non_finite;
      continue;
    }
    const double ulp = UlpAt(out, x.nearest);
    const double err = (std::fabs(run.y[i] - x.nearest) + (x.hi - x.lo)) * kUp;
    const double e = std::max(factor * err, run.bound[i]);
    o.ulp.push_back(err / ulp);
    o.e.push_back(e);
    o.ref.push_back(std::fabs(x.nearest));
    o.index.push_back(i);
    o.bound_ulp = std::max(o.bound_ulp, run.bound[i] / ulp);
    o.rec_ulp = std::max(o.rec_ulp, e / ulp);
  }
  return o;
}

// The share of samples (rows; elementwise: values) a mutant has an element outside the
// tolerance in.
double Rejected(const CompositeUnit& u, std::string_view mutation, const Inputs& d, const FormatSpec& out,
                double rtol, double atol) {
  const size_t n = static_cast<size_t>(u.n);
  std::vector<double> mut(n);
  int64_t rejected = 0, samples = 0;
  auto outside = [&](size_t i, double v) {
    const ExactEnclosure& x = d.exact[i];
    const double y = RoundValue(out, v);
    return std::isfinite(x.nearest) && !(std::fabs(y - x.nearest) <= atol + rtol * std::fabs(x.nearest));
  };
  if (!u.axis) {
    for (size_t i = 0; i < d.x.size(); ++i) {
      double v = d.xv[i];
      std::string_view fn = u.fn;
      if (mutation == "other_gelu_form") fn = u.fn == "gelu" ? "gelu_tanh" : "gelu";
      if (mutation == "input_in_bfloat16") v = RoundValue(BFloat16(), v);
      ++samples;
      rejected += outside(i, Fn64(fn, v));
    }
    return samples > 0 ? static_cast<double>(rejected) / static_cast<double>(samples) : kNaN;
  }
  std::vector<double> w(d.wv), b(d.bv);
  if (w.empty()) w.assign(n, 1.0);
  if (b.empty()) b.assign(n, 0.0);
  const RowParams p{w, b, Eps(u.fn)};
  for (int64_t r = 0; r < u.rows; ++r) {
    const size_t at = static_cast<size_t>(r) * n;
    AxisMutant(u.fn, mutation, std::span<const double>(d.xv.data() + at, n), p,
               mutation == "dropped_term" ? d.dropped[static_cast<size_t>(r)] : n, mut);
    bool any = false;
    for (size_t i = 0; i < n && !any; ++i) any = outside(at + i, mut[i]);
    ++samples;
    rejected += any;
  }
  return static_cast<double>(rejected) / static_cast<double>(samples);
}

}  // namespace

std::vector<CompositeUnit> MakeCompositeUnits(const CompositeSweepSpec& spec) {
  std::vector<CompositeUnit> units;
  for (const std::string& fn : spec.functions) {
    for (const std::string& dist : spec.distributions) {
      if (!IsAxisFunction(fn)) {
        units.push_back({fn, false, dist, spec.elements, 1});
        continue;
      }
      for (int64_t n : spec.lengths) {
        units.push_back({fn, true, dist, n, std::max<int64_t>(8, spec.elements / n)});
      }
    }
  }
  return units;
}

absl::StatusOr<std::vector<CompositeModel>> LoadCompositeSweepModels(const SweepSpec& spec, const std::string& dir) {
  if (spec.composite.platforms.empty()) return std::vector<CompositeModel>{};
  absl::StatusOr<std::vector<CompositeModel>> all = composite::LoadCompositeModels(dir);
  if (!all.ok()) return all.status();
  return PickSweepModels(*all, spec.composite.platforms, spec.composite.input_formats, spec.source, "composite",
                         "composite model", dir);
}

absl::Status RunCompositeUnit(const CompositeUnit& u, int64_t unit_index, const SweepSpec& spec,
                              const std::vector<CompositeModel>& models, int threads,
                              const std::function<bool()>& cancelled, SweepTables& tables) {
  // The models of the function, the inputs of each input format (the same draws, rounded) and
  // their exact values; then the models on worker threads, rows appended in model order.
  std::vector<const CompositeModel*> ms;
  std::map<const FormatSpec*, Inputs> inputs;
  for (const CompositeModel& m : models) {
    if (const CompositeFunction* f = m.Find(u.fn); f != nullptr) {
      ms.push_back(&m);
      inputs.try_emplace(f->input);
    }
  }
  for (auto& [format, d] : inputs) {
    if (cancelled && cancelled()) return absl::CancelledError("tolerance sweep interrupted");
    d = MakeInputs(u, spec, *format);
    if (absl::Status s = ComputeExact(u, d, threads); !s.ok()) return s;
  }
  struct Result {
    absl::Status status;
    ModelRun run;
    std::vector<Cell> row;
    std::vector<std::vector<Cell>> power;
  };
  std::vector<Result> results(ms.size());
  ParallelForEach(static_cast<int64_t>(ms.size()), threads, [&](int64_t item) {
    const auto i = static_cast<size_t>(item);
    Result& res = results[i];
    if (cancelled && cancelled()) {
      res.status = absl::CancelledError("tolerance sweep interrupted");
      return;
    }
    const CompositeModel& m = *ms[i];
    const CompositeFunction& f = *m.Find(u.fn);
    const Inputs& d = inputs.at(f.input);
    absl::StatusOr<ModelRun> run = RunModel(u, m, d);
    if (!run.ok()) {
      res.status = absl::Status(run.status().code(), Cat(m.name, ": ", run.status().message()));
      return;
    }
    res.run = *std::move(run);
    const Observed o = Observe(d, res.run, spec.factor);
    const auto [rtol, atol] = CoveringRtolAtol(o.e, o.ref);
    const Summary su = Summarize(o.ulp);
    res.row = RowBuilder(tables.composite)
                  .Set("unit", unit_index)
                  .Set("item", static_cast<int64_t>(i))
                  .Set("function", u.fn)
                  .Set("platform", m.name)
                  .Set("input_format", std::string(f.input->name))
                  .Set("output_format", std::string(f.output->name))
                  .Set("distribution", u.dist)
                  .Set("n", u.n)
                  .Set("samples", u.axis ? u.rows : u.n)
                  .Set("exact_model", std::string(f.correctly_rounded || f.exact() ? "yes" : "no"))
                  .Set("ulp_max", su.max)
                  .Set("ulp_p99", su.p99)
                  .Set("bound_ulp", o.bound_ulp)
                  .Set("rec_ulp", o.rec_ulp)
                  .Set("rec_rtol", rtol)
                  .Set("rec_atol", atol)
                  .Set("non_finite", o.non_finite)
                  .Build();
    for (std::string_view mutation : Mutations(u.fn, *f.input)) {
      res.power.push_back(RowBuilder(tables.composite_power)
                              .Set("unit", unit_index)
                              .Set("item", int64_t{0})  // Numbered below, in order.
                              .Set("function", u.fn)
                              .Set("platform", m.name)
                              .Set("distribution", u.dist)
                              .Set("n", u.n)
                              .Set("mutation", std::string(mutation))
                              .Set("rejected", Rejected(u, mutation, d, *f.output, rtol, atol))
                              .Build());
    }
  });
  std::map<std::string, ModelRun> runs;
  std::map<std::string, const Inputs*> inputs_of;
  int64_t power_item = 0;
  const int item_column = tables.composite_power.ColumnIndex("item");
  for (size_t i = 0; i < ms.size(); ++i) {
    if (!results[i].status.ok()) return results[i].status;
    tables.composite.rows.push_back(std::move(results[i].row));
    for (std::vector<Cell>& row : results[i].power) {
      row[static_cast<size_t>(item_column)] = power_item++;
      tables.composite_power.rows.push_back(std::move(row));
    }
    inputs_of[ms[i]->name] = &inputs.at(ms[i]->Find(u.fn)->input);
    runs.emplace(ms[i]->name, std::move(results[i].run));
  }
  int64_t cross_item = 0;
  for (const auto& [a, b] : spec.composite.cross) {
    auto ra = runs.find(a), rb = runs.find(b);
    if (ra == runs.end() || rb == runs.end() || inputs_of[a] != inputs_of[b]) continue;
    const Inputs& d = *inputs_of[a];
    const FormatSpec& out = *ra->second.f->output;
    std::vector<double> e, ref;
    double diff_ulp = 0, allowed_ulp = 0;
    for (size_t i = 0; i < d.x.size(); ++i) {
      const double ba = ra->second.bound[i], bb = rb->second.bound[i];
      if (std::isnan(ba) || std::isnan(bb)) continue;
      const double ulp = UlpAt(out, d.exact[i].nearest);
      const double diff = std::fabs(ra->second.y[i] - rb->second.y[i]);
      const double allowed = (ba + bb) * kUp;
      diff_ulp = std::max(diff_ulp, diff / ulp);
      allowed_ulp = std::max(allowed_ulp, allowed / ulp);
      e.push_back(std::max(spec.factor * diff, allowed));
      ref.push_back(std::fabs(ra->second.y[i]));
    }
    const auto [rtol, atol] = CoveringRtolAtol(e, ref);
    tables.composite_cross.rows.push_back(RowBuilder(tables.composite_cross)
                                              .Set("unit", unit_index)
                                              .Set("item", cross_item++)
                                              .Set("function", u.fn)
                                              .Set("platform_a", a)
                                              .Set("platform_b", b)
                                              .Set("distribution", u.dist)
                                              .Set("n", u.n)
                                              .Set("samples", u.axis ? u.rows : u.n)
                                              .Set("diff_ulp_max", diff_ulp)
                                              .Set("allowed_ulp_max", allowed_ulp)
                                              .Set("rec_rtol", rtol)
                                              .Set("rec_atol", atol)
                                              .Build());
  }
  return absl::OkStatus();
}

}  // namespace fpconform::reports::sweep_internal
