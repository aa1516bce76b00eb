// fpconform._fpconform: the nanobind bindings behind the Python package (python/fpconform/).
// Thin: every function checks its arguments, calls one library (formats, fast_convert,
// accumulation, exact, error_measures, reports) and hands the bits back; the Python layer only
// maps dtypes to format names and views arrays as unsigned integers (see arrays.h).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <mpfr.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "accumulation/blas_platform.h"
#include "accumulation/epilogue.h"
#include "accumulation/evaluate.h"
#include "accumulation/model.h"
#include "accumulation/model_catalog.h"
#include "base/data_dir.h"
#include "base/str_cat.h"
#include "composite/attention_model.h"
#include "formats/fast_convert.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "formats/ops.h"
#include "oracles/error_measures.h"
#include "oracles/exact_sum.h"
#include "oracles/mpfr_plumbing.h"
#include "python/src/arrays.h"
#include "reports/audit.h"
#include "reports/sweep.h"

namespace fpconform::python {

void BindAudit(nb::module_& m);
void BindComposite(nb::module_& m);  // composite_bindings.cc

namespace {

nb::list Formats() {
  nb::list out;
  for (const FormatSpec& f : AllFormats()) {
    nb::dict d;
    d["name"] = std::string(f.name);
    d["kind"] = IsFloat(f) ? "float" : "integer";
    d["width"] = f.width;
    d["description"] = std::string(f.description);
    if (IsFloat(f)) {
      d["exponent_bits"] = f.exponent_bits;
      d["fraction_bits"] = f.fraction_bits;
      d["precision"] = Precision(f);
      d["bias"] = f.bias;
      d["emin"] = Emin(f);
      d["emax"] = Emax(f);
      d["has_inf"] = f.nonfinite == NonFinite::kIeee;
      d["nan"] = std::string(NanEncodingName(f));
      d["has_sign"] = f.has_sign;
      d["has_zero"] = f.has_zero;
      d["has_subnormals"] = f.has_subnormals;
      d["max_finite_bits"] = MaxFiniteBits(f);
      d["min_normal_bits"] = MinNormalBits(f);
      d["min_subnormal_bits"] = MinSubnormalBits(f);
    } else {
      d["signed"] = f.is_signed;
      d["min"] = IntegerMin(f);
      d["max"] = IntegerMax(f);
    }
    out.append(d);
  }
  return out;
}

OpEnv ParseEnv(const std::string& rounding, bool sat, bool ftz, const std::string& what) {
  OpEnv env;
  if (!ParseRounding(rounding, env)) {
    ThrowValue(what + ": rounding '" + rounding + "' is not one of rne rna rtz rup rdn rto sr<k> (k 1..32)");
  }
  env.saturate = sat;
  env.flush_to_zero = ftz;
  return env;
}

// cast_bits(from, x, to, rounding, sat, ftz, random_bits) -> bits of `to` (x's shape).
nb::object CastBits(const std::string& from_name, const InArray& x, const std::string& to_name,
                    const std::string& rounding, bool sat, bool ftz,
                    std::optional<InArray> random_bits) {
  const FormatSpec& from = NeedFormat(from_name, "cast: x");
  const FormatSpec& to = NeedFormat(to_name, "cast: to");
  CheckWidth(x, from.width / 8, "cast: x");
  const OpEnv env = ParseEnv(rounding, sat, ftz, "cast");
  const bool sr = env.rounding == Rounding::kStochastic;
  if (sr && !random_bits.has_value()) {
    ThrowValue("cast: rounding '" + rounding + "' needs random_bits (one uint64 per element of x; "
               "the low k bits are used)");
  }
  if (!sr && random_bits.has_value()) {
    ThrowValue("cast: random_bits is only used with stochastic rounding (sr<k>), not '" + rounding + "'");
  }
  if (random_bits.has_value()) {
    CheckWidth(*random_bits, 8, "cast: random_bits");
    if (random_bits->size() != x.size()) {
      ThrowValue("cast: random_bits has " + std::to_string(random_bits->size()) + " elements, x has " +
                 std::to_string(x.size()));
    }
  }
  const std::vector<int64_t> shape = ShapeOf(x);
  const size_t n = x.size();
  const int bytes = to.width / 8;
  std::vector<uint8_t> out(n * static_cast<size_t>(bytes) + 1);
  const bool plain = &from == &Float32() && env.rounding == Rounding::kNearestEven && !ftz;
  {
    nb::gil_scoped_release release;
    const std::span<const uint32_t> in32(static_cast<const uint32_t*>(x.data()), plain ? n : 0);
    if (plain && &to == &BFloat16() && !sat) {
      ConvertF32ToBF16(in32, std::span<uint16_t>(reinterpret_cast<uint16_t*>(out.data()), n));
    } else if (plain && &to == &Float16() && !sat) {
      ConvertF32ToF16(in32, std::span<uint16_t>(reinterpret_cast<uint16_t*>(out.data()), n));
    } else if (plain && HasFastF32ToFp8(to)) {
      // Cannot fail: the format is one it takes and the sizes agree.
      (void)ConvertF32ToFp8(to, sat, in32, std::span<uint8_t>(out.data(), n));
    } else {
      OpEnv e = env;
      for (size_t i = 0; i < n; ++i) {
        if (sr) e.sr_random = BitsAt(*random_bits, i);
        const uint64_t b = Convert(from, to, BitsAt(x, i), e).bits;
        std::memcpy(out.data() + i * static_cast<size_t>(bytes), &b, static_cast<size_t>(bytes));
      }
    }
  }
  out.resize(n * static_cast<size_t>(bytes));
  return BytesArray(std::move(out), bytes, shape);
}

// ulp_F(x) of every element (x in format `from`), as float64; NaN for NaN and Inf.
nb::object Ulp(const std::string& from_name, const InArray& x, const std::string& dtype) {
  const FormatSpec& from = NeedFormat(from_name, "ulp: x");
  const FormatSpec& f = NeedFormat(dtype, "ulp: dtype");
  if (!IsFloat(from) || !IsFloat(f)) ThrowValue("ulp: float formats only");
  CheckWidth(x, from.width / 8, "ulp: x");
  std::vector<double> out(x.size());
  MpfrValue v(64);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint64_t bits = BitsAt(x, i);
    const bool inf = from.nonfinite == NonFinite::kIeee && (bits & ~from.d.sign_bit) == InfBits(from);
    if (!ErrorMeasureValue(from, bits, v) || inf) {
      out[i] = std::nan("");
      continue;
    }
    out[i] = std::ldexp(1.0, static_cast<int>(UlpExponent(f, v)));
  }
  return VectorArray<double>(std::move(out), ShapeOf(x));
}

nb::object UlpDistanceBits(const std::string& name, const InArray& a, const InArray& b) {
  const FormatSpec& f = NeedFormat(name, "ulp_distance");
  CheckWidth(a, f.width / 8, "ulp_distance: a");
  CheckWidth(b, f.width / 8, "ulp_distance: b");
  if (ShapeOf(a) != ShapeOf(b)) ThrowValue("ulp_distance: a and b have different shapes");
  std::vector<int64_t> out(a.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const std::optional<int64_t> d = UlpDistance(f, BitsAt(a, i), BitsAt(b, i));
    if (!d.has_value()) {
      ThrowValue("ulp_distance: element " + std::to_string(i) + " (flat index) is NaN: NaNs have no distance");
    }
    out[i] = *d;
  }
  return VectorArray<int64_t>(std::move(out), ShapeOf(a));
}

std::vector<std::string> ModelNames(const std::string& dir) {
  const ModelCatalog catalog(dir);
  absl::StatusOr<std::vector<ModelFile>> files = catalog.LoadAll();
  if (!files.ok()) ThrowStatus(files.status());
  std::vector<std::string> names;
  for (const ModelFile& f : *files) names.push_back(f.name);
  return names;
}

nb::dict ModelInfo(const std::string& dir, const std::string& name) {
  if (!IsValidModelName(name)) ThrowValue("model: '" + name + "' is not a model name");
  const ModelCatalog catalog(dir);
  nb::dict d;
  d["name"] = name;
  d["file"] = dir + "/" + name + ".toml";
  if (catalog.IsEnvelope(name)) {
    const absl::StatusOr<Envelope>& e = catalog.FindEnvelope(name);
    if (!e.ok()) ThrowStatus(e.status());
    d["description"] = e->description;
    d["envelope"] = e->members;
    d["provenance"] = nb::dict();
    d["provenance"]["envelope"] = e->members_source;
    d["unconfirmed"] = e->members_unconfirmed ? std::vector<std::string>{"envelope"}
                                               : std::vector<std::string>{};
    return d;
  }
  const absl::StatusOr<Model>& m = catalog.Find(name);
  if (!m.ok()) ThrowStatus(m.status());
  d["description"] = m->description;
  std::vector<std::string> ops;
  if (m->op_dot) ops.push_back("dot");
  if (m->op_matmul) ops.push_back("matmul");
  if (m->op_sum) ops.push_back("sum");
  d["operations"] = ops;
  nb::dict params, prov;
  for (const auto& [key, value] : m->parameters) {
    if (key == "name" || key == "description") continue;
    params[key.c_str()] = value;
  }
  for (const auto& [key, value] : m->provenance) prov[key.c_str()] = value;
  d["parameters"] = params;
  d["provenance"] = prov;
  d["unconfirmed"] = m->unconfirmed;
  d["input_a"] = std::string(m->inputs.a->name);
  d["input_b"] = std::string(m->inputs.b != nullptr ? m->inputs.b->name : m->inputs.a->name);
  d["accumulator"] = std::string(m->FinalAccumulatorFormat().name);
  d["output"] = std::string(m->output.format->name);
  return d;
}

const Model& NeedModel(const ModelCatalog& catalog, const std::string& platform, const char* op) {
  if (catalog.IsEnvelope(platform)) {
    const absl::StatusOr<Envelope>& e = catalog.FindEnvelope(platform);
    std::string members;
    if (e.ok()) {
      for (const std::string& s : e->members) members += (members.empty() ? "" : " ") + s;
    }
    ThrowValue(std::string(op) + ": platform '" + platform + "' is an envelope: emulate one of its members (" +
               members + ")");
  }
  const absl::StatusOr<Model>& m = catalog.Find(platform);
  if (!m.ok()) ThrowStatus(m.status());
  return *m;
}

void CheckInput(const Model& m, const FormatSpec& want, const std::string& got, const std::string& what) {
  if (got != want.name) {
    ThrowValue(what + ": dtype " + got + ", but platform '" + m.name + "' takes " + std::string(want.name) +
               " (convert with fpconform.cast first, as the kernel does)");
  }
}

// A scale array's values (any float dtype; every value must be a finite float32 value) and shape.
std::pair<std::vector<double>, std::vector<int64_t>> ScaleArray(const std::optional<std::string>& dtype,
                                                                const std::optional<InArray>& s,
                                                                const std::string& what) {
  if (!s.has_value()) return {};
  const FormatSpec& f = NeedFormat(dtype.value_or("?"), what);
  if (f.kind != FormatKind::kFloat) ThrowValue(what + ": scales must be a float array, got " + std::string(f.name));
  CheckWidth(*s, f.width / 8, what);
  std::vector<double> v;
  for (uint64_t bits : AllBits(*s)) {
    const double x = ToDouble(f, bits);
    if (!std::isfinite(x) || static_cast<double>(static_cast<float>(x)) != x) {
      ThrowValue(what + ": " + std::to_string(x) + " is not a finite float32 value (scales are float32)");
    }
    v.push_back(x);
  }
  return {std::move(v), ShapeOf(*s)};
}

// (output dtype, output bits (m, n), bounds (m, n)). With scales: per K block for a platform with
// epilogue.scale = "block" (EvaluateBlockScaledMatmul; scale_a (m, ceil(K/B)), scale_b
// (ceil(K/B), n), or one value), else the platform's scale stage on its output (ApplyEpilogue;
// scale_a 1 or m values, scale_b 1 or n; the output is then float32).
std::tuple<std::string, nb::object, nb::object> EmulateMatmul(
    const std::string& dir, const std::string& platform, const std::string& a_dtype, const InArray& a,
    const std::string& b_dtype, const InArray& b, std::optional<std::string> c_dtype,
    std::optional<InArray> c, std::optional<std::string> sa_dtype, std::optional<InArray> sa,
    std::optional<std::string> sb_dtype, std::optional<InArray> sb, int threads) {
  const ModelCatalog catalog(dir);
  const Model& model = NeedModel(catalog, platform, "emulate_matmul");
  if (!model.Supports(ModelOp::kMatmul)) ThrowValue("emulate_matmul: model '" + platform + "' has no matmul operation");
  const FormatSpec& fa = NeedFormat(a_dtype, "emulate_matmul: a");
  const FormatSpec& fb = NeedFormat(b_dtype, "emulate_matmul: b");
  CheckInput(model, *model.inputs.a, a_dtype, "emulate_matmul: a");
  CheckInput(model, model.inputs.b != nullptr ? *model.inputs.b : *model.inputs.a, b_dtype, "emulate_matmul: b");
  CheckWidth(a, fa.width / 8, "emulate_matmul: a");
  CheckWidth(b, fb.width / 8, "emulate_matmul: b");
  if (a.ndim() != 2 || b.ndim() != 2) {
    ThrowValue("emulate_matmul: a and b must be 2-D, got shapes of rank " + std::to_string(a.ndim()) + " and " +
               std::to_string(b.ndim()));
  }
  const int64_t m = static_cast<int64_t>(a.shape(0)), k = static_cast<int64_t>(a.shape(1));
  const int64_t n = static_cast<int64_t>(b.shape(1));
  if (static_cast<int64_t>(b.shape(0)) != k) {
    ThrowValue("emulate_matmul: a is " + std::to_string(m) + " x " + std::to_string(k) + " but b is " +
               std::to_string(b.shape(0)) + " x " + std::to_string(n) + " (inner dimensions differ)");
  }
  std::vector<uint64_t> cb;
  if (c.has_value()) {
    const FormatSpec& acc = model.FinalAccumulatorFormat();
    if (!c_dtype.has_value() || *c_dtype != acc.name) {
      ThrowValue("emulate_matmul: c must be in the platform's accumulator format " + std::string(acc.name) +
                 ", got " + c_dtype.value_or("?"));
    }
    CheckWidth(*c, acc.width / 8, "emulate_matmul: c");
    if (ShapeOf(*c) != std::vector<int64_t>{m, n}) ThrowValue("emulate_matmul: c must have shape (m, n)");
    cb = AllBits(*c);
  }
  const std::vector<uint64_t> ab = AllBits(a), bb = AllBits(b);
  std::vector<uint64_t> d(static_cast<size_t>(m * n));
  std::vector<double> bounds(static_cast<size_t>(m * n));
  auto [sav, sa_shape] = ScaleArray(sa_dtype, sa, "emulate_matmul: scale_a");
  auto [sbv, sb_shape] = ScaleArray(sb_dtype, sb, "emulate_matmul: scale_b");
  const bool scaled = sa.has_value() || sb.has_value();
  const bool block = scaled && model.epilogue.scale == EpilogueScale::kBlock;
  std::vector<double> block_sa, block_sbt;
  if (block) {
    const int64_t bl = model.epilogue.scale_block, kb = (k + bl - 1) / bl;
    auto expand = [&](std::vector<double>& v, const std::vector<int64_t>& shape, bool given, int64_t rows,
                      int64_t cols, const char* name) {
      if (!given) v.assign(1, 1.0);
      if (v.size() == 1) {
        v.assign(static_cast<size_t>(rows * cols), v[0]);
      } else if (shape != std::vector<int64_t>{rows, cols}) {
        ThrowValue(std::string("emulate_matmul: ") + name + " must have shape (" + std::to_string(rows) + ", " +
                   std::to_string(cols) + ") or one value: platform '" + platform + "' takes one scale per " +
                   std::to_string(bl) + " products along K");
      }
    };
    expand(sav, sa_shape, sa.has_value(), m, kb, "scale_a");
    expand(sbv, sb_shape, sb.has_value(), kb, n, "scale_b");
    block_sa = std::move(sav);
    block_sbt.resize(static_cast<size_t>(n * kb));
    for (int64_t j = 0; j < kb; ++j) {
      for (int64_t col = 0; col < n; ++col) block_sbt[static_cast<size_t>(col * kb + j)] = sbv[static_cast<size_t>(j * n + col)];
    }
  } else if (scaled) {
    if (sa.has_value() && sav.size() != 1 && sav.size() != static_cast<size_t>(m)) {
      ThrowValue("emulate_matmul: scale_a must have 1 or m = " + std::to_string(m) + " values");
    }
    if (sb.has_value() && sbv.size() != 1 && sbv.size() != static_cast<size_t>(n)) {
      ThrowValue("emulate_matmul: scale_b must have 1 or n = " + std::to_string(n) + " values");
    }
    if (absl::Status st = CheckEpilogueScales(model, static_cast<int64_t>(sav.size()), static_cast<int64_t>(sbv.size()));
        !st.ok()) {
      ThrowStatus(st);
    }
    if (sav.empty()) sav.assign(1, 1.0);
    if (sbv.empty()) sbv.assign(1, 1.0);
  }
  // epilogue.c = "after_scale" with scales and C: the chain alone, C added by the scale stage.
  const std::optional<Model> chain_only = ChainAloneModel(model, scaled && !block, !cb.empty());
  const bool c_after_scale = chain_only.has_value();
  absl::Status s;
  {
    nb::gil_scoped_release release;
    EvalOptions o;
    o.threads = Threads(threads);
    if (block) {
      s = EvaluateBlockScaledMatmul(model, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), ab,
                                    Layout::kRowMajor, bb, Layout::kRowMajor, block_sa, block_sbt, cb, d, bounds, o);
    } else {
      s = EvaluateMatmul(c_after_scale ? *chain_only : model, static_cast<int>(m), static_cast<int>(n),
                         static_cast<int>(k), ab, Layout::kRowMajor, bb, Layout::kRowMajor,
                         c_after_scale ? std::span<const uint64_t>() : std::span<const uint64_t>(cb), d, bounds, o);
    }
    if (s.ok() && scaled && !block) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const size_t e = static_cast<size_t>(i * n + j);
          const EpilogueScales sc{sav.size() == 1 ? sav[0] : sav[static_cast<size_t>(i)],
                                  sbv.size() == 1 ? sbv[0] : sbv[static_cast<size_t>(j)]};
          const EpilogueValue v = ApplyEpilogue(model, d[e], bounds[e], &sc, Float32(), OpEnv{},
                                                c_after_scale ? &cb[e] : nullptr);
          d[e] = v.bits;
          bounds[e] = v.bound;
        }
      }
    }
  }
  if (!s.ok()) ThrowStatus(s);
  const FormatSpec& out = scaled && !block ? Float32() : *model.output.format;
  return {std::string(out.name), BitsArray(d, out.width / 8, {m, n}),
          VectorArray<double>(std::move(bounds), {m, n})};
}

struct Axis {
  int64_t outer = 1, len = 1, inner = 1;
  std::vector<int64_t> out_shape;
};

Axis SplitAxis(const std::vector<int64_t>& shape, int axis, const std::string& what) {
  const int rank = static_cast<int>(shape.size());
  if (rank == 0) ThrowValue(what + ": x is 0-d: nothing to sum over");
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    ThrowValue(what + ": axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  Axis r;
  for (int i = 0; i < rank; ++i) {
    if (i < a) r.outer *= shape[i];
    if (i > a) r.inner *= shape[i];
    if (i != a) r.out_shape.push_back(shape[i]);
  }
  r.len = shape[a];
  return r;
}

std::vector<uint64_t> Slice(const std::vector<uint64_t>& x, const Axis& ax, int64_t o, int64_t i) {
  std::vector<uint64_t> s(static_cast<size_t>(ax.len));
  for (int64_t k = 0; k < ax.len; ++k) s[k] = x[static_cast<size_t>((o * ax.len + k) * ax.inner + i)];
  return s;
}

std::tuple<std::string, nb::object, nb::object> EmulateSum(const std::string& dir, const std::string& platform,
                                                           const std::string& x_dtype, const InArray& x, int axis) {
  const ModelCatalog catalog(dir);
  const Model& model = NeedModel(catalog, platform, "emulate_sum");
  if (!model.Supports(ModelOp::kSum)) ThrowValue("emulate_sum: model '" + platform + "' has no sum operation");
  const FormatSpec& fx = NeedFormat(x_dtype, "emulate_sum: x");
  CheckInput(model, *model.inputs.a, x_dtype, "emulate_sum: x");
  CheckWidth(x, fx.width / 8, "emulate_sum: x");
  const Axis ax = SplitAxis(ShapeOf(x), axis, "emulate_sum");
  const std::vector<uint64_t> xb = AllBits(x);
  std::vector<uint64_t> out(static_cast<size_t>(ax.outer * ax.inner));
  std::vector<double> bounds(out.size());
  absl::Status status;
  {
    nb::gil_scoped_release release;
    for (int64_t o = 0; o < ax.outer && status.ok(); ++o) {
      for (int64_t i = 0; i < ax.inner; ++i) {
        absl::StatusOr<EvalResult> r = EvaluateSum(model, Slice(xb, ax, o, i), 0);
        if (!r.ok()) {
          status = r.status();
          break;
        }
        out[static_cast<size_t>(o * ax.inner + i)] = r->bits;
        bounds[static_cast<size_t>(o * ax.inner + i)] = r->bound;
      }
    }
  }
  if (!status.ok()) ThrowStatus(status);
  const FormatSpec& f = *model.output.format;
  return {std::string(f.name), BitsArray(out, f.width / 8, ax.out_shape),
          VectorArray<double>(std::move(bounds), ax.out_shape)};
}

const FormatSpec& NeedFloat(const std::string& name, const std::string& what) {
  const FormatSpec& f = NeedFormat(name, what);
  if (!IsFloat(f)) ThrowValue(what + ": " + name + " is an integer format: the exact oracle takes float formats");
  return f;
}

OpEnv ExactEnv(const std::string& rounding, const std::string& what) {
  OpEnv env = ParseEnv(rounding, false, false, what);
  if (env.rounding == Rounding::kStochastic) ThrowValue(what + ": stochastic rounding has no single correct result");
  return env;
}

nb::object ExactMatmul(const std::string& a_dtype, const InArray& a, const std::string& b_dtype, const InArray& b,
                       const std::string& out_dtype, const std::string& rounding) {
  const FormatSpec& fa = NeedFloat(a_dtype, "exact_matmul: a");
  const FormatSpec& fb = NeedFloat(b_dtype, "exact_matmul: b");
  const FormatSpec& fo = NeedFloat(out_dtype, "exact_matmul: out_dtype");
  const OpEnv env = ExactEnv(rounding, "exact_matmul");
  CheckWidth(a, fa.width / 8, "exact_matmul: a");
  CheckWidth(b, fb.width / 8, "exact_matmul: b");
  if (a.ndim() != 2 || b.ndim() != 2) ThrowValue("exact_matmul: a and b must be 2-D");
  const int64_t m = static_cast<int64_t>(a.shape(0)), k = static_cast<int64_t>(a.shape(1));
  const int64_t n = static_cast<int64_t>(b.shape(1));
  if (static_cast<int64_t>(b.shape(0)) != k) {
    ThrowValue("exact_matmul: a is " + std::to_string(m) + " x " + std::to_string(k) + " but b is " +
               std::to_string(b.shape(0)) + " x " + std::to_string(n) + " (inner dimensions differ)");
  }
  const std::vector<uint64_t> ab = AllBits(a), bb = AllBits(b);
  std::vector<uint64_t> out(static_cast<size_t>(m * n));
  {
    nb::gil_scoped_release release;
    std::vector<uint64_t> bt(static_cast<size_t>(n * k));  // B column-major: column j contiguous.
    for (int64_t r = 0; r < k; ++r) {
      for (int64_t j = 0; j < n; ++j) bt[static_cast<size_t>(j * k + r)] = bb[static_cast<size_t>(r * n + j)];
    }
    ExactAccumulator acc;
    for (int64_t i = 0; i < m; ++i) {
      const std::span<const uint64_t> row(ab.data() + i * k, static_cast<size_t>(k));
      for (int64_t j = 0; j < n; ++j) {
        acc.Reset();
        acc.AddDot(fa, row, fb, std::span<const uint64_t>(bt.data() + j * k, static_cast<size_t>(k)));
        out[static_cast<size_t>(i * n + j)] = acc.Round(fo, env).bits;
      }
    }
  }
  return BitsArray(out, fo.width / 8, {m, n});
}

nb::object ExactSumBits(const std::string& x_dtype, const InArray& x, int axis, const std::string& out_dtype,
                        const std::string& rounding) {
  const FormatSpec& fx = NeedFloat(x_dtype, "exact_sum: x");
  const FormatSpec& fo = NeedFloat(out_dtype, "exact_sum: out_dtype");
  const OpEnv env = ExactEnv(rounding, "exact_sum");
  CheckWidth(x, fx.width / 8, "exact_sum: x");
  const Axis ax = SplitAxis(ShapeOf(x), axis, "exact_sum");
  const std::vector<uint64_t> xb = AllBits(x);
  std::vector<uint64_t> out(static_cast<size_t>(ax.outer * ax.inner));
  {
    nb::gil_scoped_release release;
    ExactAccumulator acc;
    for (int64_t o = 0; o < ax.outer; ++o) {
      for (int64_t i = 0; i < ax.inner; ++i) {
        acc.Reset();
        acc.AddSum(fx, Slice(xb, ax, o, i));
        out[static_cast<size_t>(o * ax.inner + i)] = acc.Round(fo, env).bits;
      }
    }
  }
  return BitsArray(out, fo.width / 8, ax.out_shape);
}

nb::dict Tolerance(const std::string& dir, const std::string& sweep_file, const std::string& op,
                   const std::string& dtype, int64_t k, const std::string& platform, int samples, int threads) {
  const ModelCatalog catalog(dir);
  if (!catalog.IsEnvelope(platform)) {
    const absl::StatusOr<Model>& m = catalog.Find(platform);
    if (!m.ok()) ThrowStatus(m.status());
    if (dtype != m->inputs.a->name) {
      ThrowValue("tolerance: platform '" + platform + "' takes " + std::string(m->inputs.a->name) +
                 " inputs, not " + dtype);
    }
  }
  reports::AuditOptions o;
  o.models_dir = dir;
  o.sweep_file = sweep_file;
  o.tolerance_samples = samples;
  o.threads = Threads(threads);
  const reports::PlatformAudit r = WithoutGil([&] { return reports::RecommendTolerance(op, platform, k, o); });
  nb::dict d;
  d["op"] = op;
  d["dtype"] = dtype;
  d["k"] = k;
  d["platform"] = platform;
  d["rtol"] = r.rec_rtol;
  d["atol"] = r.rec_atol;
  d["ulp"] = r.rec_ulp;
  d["bound_normalized"] = r.rec_bn;
  d["samples"] = samples;
  return d;
}

// fpconform.tolerance("attention", ...): the attention row's rule for one preset of `dir`
// (AttentionPlatformTolerance, reports/sweep.h) with the sweep file's seed, factor and rows.
nb::dict AttentionTolerance(const std::string& dir, const std::string& sweep_file, const std::string& platform,
                            const std::string& dtype, int64_t s, int64_t d, bool causal,
                            const std::string& distribution, int threads) {
  absl::StatusOr<std::vector<composite::AttentionModel>> models = composite::LoadAttentionModels(dir);
  if (!models.ok()) ThrowStatus(models.status());
  const composite::AttentionModel* m = nullptr;
  std::string names;
  for (const composite::AttentionModel& x : *models) {
    if (x.name == platform) m = &x;
    names += (names.empty() ? "" : ", ") + x.name;
  }
  if (m == nullptr) ThrowValue("tolerance: unknown attention platform '" + platform + "' (" + dir + " has: " + names + ")");
  if (dtype != m->input->name) {
    ThrowValue("tolerance: platform '" + platform + "' takes " + std::string(m->input->name) + " inputs, not " + dtype);
  }
  absl::StatusOr<reports::SweepSpec> spec = reports::LoadSweepSpec(sweep_file);
  if (!spec.ok()) ThrowStatus(spec.status());
  const reports::AttentionToleranceRule r = WithoutGil(
      [&] { return reports::AttentionPlatformTolerance(*spec, *m, {s, d, causal, distribution}, Threads(threads)); });
  nb::dict out;
  out["op"] = "attention";
  out["dtype"] = dtype;
  out["k"] = s;
  out["d"] = d;
  out["causal"] = causal;
  out["distribution"] = distribution;
  out["platform"] = platform;
  out["rtol"] = r.rtol;
  out["atol"] = r.atol;
  out["prob_rtol"] = r.prob_rtol;
  out["prob_atol"] = r.prob_atol;
  out["ulp"] = r.ulp;
  out["bound_abs"] = r.bound_abs;
  out["ess_median"] = r.ess_median;
  out["rows"] = r.rows;
  return out;
}

// fpconform.blas.numpy_matmul_platform's rule (accumulation/blas_platform.h): (preset or None,
// reason); blas.py maps the dtype to its numpy name and its info dict to these arguments.
std::pair<std::optional<std::string>, std::string> NumpyMatmulPlatformBinding(
    int64_t m, int64_t k, int64_t n, const std::string& dtype, std::optional<std::string> name,
    const std::string& core, int threads) {
  absl::StatusOr<MatmulPlatform> p =
      NumpyMatmulPlatform(m, k, n, dtype, BlasInfo{std::move(name), core, threads});
  if (!p.ok()) ThrowStatus(p.status());
  return {p->preset, p->reason};
}

}  // namespace
}  // namespace fpconform::python

NB_MODULE(_fpconform, m) {
  using namespace fpconform;          // NOLINT: the libraries.
  using namespace fpconform::python;  // NOLINT: the bindings.
  m.doc() = "fpconform's C++ libraries (bits in, bits out); use the fpconform package, not this module.";
  m.attr("__version__") = FPCONFORM_VERSION;
  // base/data_dir.h: the item named by its installed name ("models", "standard_sweep.toml", ...),
  // its environment variable first, then `installed` (the package's data/ folder), then the
  // source tree the module was built from.
  m.def("data_path", [](std::string_view name, std::string_view installed) {
    const std::optional<DataItem> item = DataItemNamed(name);
    if (!item) throw nb::value_error(Cat("no data item named '", name, "'").c_str());
    return ResolveDataPath(*item, "", installed);
  }, nb::arg("name"), nb::arg("installed"));
  m.def("formats", &Formats);
  m.def("tensor_dtype_bytes", [](const std::string& d) { return TensorDtypeBytes(d); });
  m.def("cast_bits", &CastBits, nb::arg("from_dtype"), nb::arg("x"), nb::arg("to"), nb::arg("rounding"),
        nb::arg("sat"), nb::arg("ftz"), nb::arg("random_bits").none());
  m.def("fast_convert_isa", [] { return std::string(FastConvertIsa()); });
  m.def("ulp", &Ulp);
  m.def("ulp_distance", &UlpDistanceBits);
  m.def("model_names", &ModelNames);
  m.def("model_info", &ModelInfo);
  m.def("emulate_matmul", &EmulateMatmul, nb::arg("models_dir"), nb::arg("platform"), nb::arg("a_dtype"),
        nb::arg("a"), nb::arg("b_dtype"), nb::arg("b"), nb::arg("c_dtype").none(), nb::arg("c").none(),
        nb::arg("scale_a_dtype").none(), nb::arg("scale_a").none(), nb::arg("scale_b_dtype").none(),
        nb::arg("scale_b").none(), nb::arg("threads"));
  m.def("emulate_sum", &EmulateSum);
  m.def("exact_matmul", &ExactMatmul);
  m.def("exact_sum", &ExactSumBits);
  m.def("tolerance", &Tolerance);
  m.def("attention_tolerance", &AttentionTolerance);
  m.def("numpy_matmul_platform", &NumpyMatmulPlatformBinding, nb::arg("m"), nb::arg("k"), nb::arg("n"),
        nb::arg("dtype"), nb::arg("name").none(), nb::arg("core"), nb::arg("threads"));
  BindAudit(m);
  BindComposite(m);
}
