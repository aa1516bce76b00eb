// The audit library (reports/audit.h) for Python: audit_matmul / audit_sum / audit_cast /
// compare_matmul returning the Audit and Compare objects (AuditResult and CompareResult as they
// are, with their text, JSON and per-element class codes).
//
// Every attribute, dict and list of dicts of Audit and Compare is a section of the --json
// document built by the one serializer (reports/audit.h AuditJsonSection, CompareJsonSection)
// in its Python form: one attribute per top-level key, of the same name, defined in a loop over
// the serializer's key list, so a key the JSON gains is an attribute too. Arrays become lists,
// except indexes and shapes (keys index, shape, max_abs_index, max_rel_index): tuples. The older
// names stay as aliases of those sections (AUDIT.md "The Python objects": out_format, out_shape,
// mismatched, max_*, faults; the platforms' counts, rtol, atol, ulp, bound_normalized), and
// soundness and Compare.listed keep their older values (the sentences; (index, side) pairs).
// Example: audit.output_format == audit.to_dict()["output_format"] == audit.out_format.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "formats/op_env.h"
#include "nlohmann/json.hpp"
#include "python/src/arrays.h"
#include "reports/audit.h"

namespace fpconform::python {
namespace {

using reports::AuditResult;
using reports::CompareResult;

// A tensor argument from Python: (dtype name, bits array) or None.
using TensorPair = std::optional<std::pair<std::string, InArray>>;

std::optional<Tensor> Load(const TensorPair& p, const std::string& what) {
  if (!p.has_value()) return std::nullopt;
  return ToTensor(p->first, p->second, what);
}

Tensor Need(const TensorPair& p, const std::string& what) {
  if (!p.has_value()) ThrowValue(what + " is required");
  return ToTensor(p->first, p->second, what);
}

// "rne", "rtz:sat", ... as the CLI's --cast-inputs / --out-rounding take them.
OpEnv ParseMode(const std::string& text, const std::string& what) {
  OpEnv env;
  std::string mode = text;
  const size_t colon = mode.find(':');
  if (colon != std::string::npos) {
    if (mode.substr(colon + 1) != "sat") ThrowValue(what + ": '" + text + "': the only option is :sat");
    env.saturate = true;
    mode = mode.substr(0, colon);
  }
  if (!ParseRounding(mode, env)) {
    ThrowValue(what + ": '" + text + "' is not a rounding mode (rne rna rtz rup rdn rto sr<k>)");
  }
  return env;
}

struct Options {
  std::vector<std::string> platforms;
  std::string models_dir, sweep_file, composite_models_dir;
  int max_listed = 100;
  bool strict = false, recommend = true;
  int tolerance_samples = 200, threads = 0;
};

reports::AuditOptions MakeOptions(const Options& o) {
  reports::AuditOptions r;
  r.platforms = o.platforms;
  r.models_dir = o.models_dir;
  r.sweep_file = o.sweep_file;
  r.composite_models_dir = o.composite_models_dir;
  if (o.max_listed < 0) ThrowValue("max_listed must be >= 0");
  if (o.tolerance_samples < 8) ThrowValue("tolerance_samples must be >= 8");
  r.max_listed = o.max_listed;
  r.strict = o.strict;
  r.recommend = o.recommend;
  r.tolerance_samples = o.tolerance_samples;
  r.threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  r.cancelled = &PollInterrupt;  // Ctrl-C stops an audit: KeyboardInterrupt.
  return r;
}

std::string IndexText(const std::vector<int64_t>& index) {
  std::string s = "(";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + (index.size() == 1 ? ",)" : ")");
}

using ojson = nlohmann::ordered_json;
using reports::JsonForm;

// A JSON value of the serializer's Python form as a Python object: objects as dicts (in the
// document's order), arrays as lists, the arrays of `key` index, shape, max_abs_index and
// max_rel_index as tuples (numpy's convention for indexes and shapes).
nb::object ToPython(const ojson& j, std::string_view key = {}) {
  switch (j.type()) {
    case ojson::value_t::boolean:
      return nb::cast(j.get<bool>());
    case ojson::value_t::number_integer:
      return nb::cast(j.get<int64_t>());
    case ojson::value_t::number_unsigned:
      return nb::cast(j.get<uint64_t>());
    case ojson::value_t::number_float:
      return nb::cast(j.get<double>());
    case ojson::value_t::string: {
      const std::string& text = j.get_ref<const std::string&>();
      return nb::str(text.data(), text.size());
    }
    case ojson::value_t::array: {
      nb::list l;
      for (const ojson& e : j) l.append(ToPython(e));
      const bool tuple = key == "index" || key == "shape" || key == "max_abs_index" || key == "max_rel_index";
      if (tuple) return nb::tuple(l);
      return l;
    }
    case ojson::value_t::object: {
      nb::dict d;
      for (auto it = j.begin(); it != j.end(); ++it) {
        d[nb::str(it.key().data(), it.key().size())] = ToPython(it.value(), it.key());
      }
      return d;
    }
    default:  // null (and the types the serializer never writes)
      return nb::none();
  }
}

// One top-level key of the audit's document, in the Python form (None where it is absent).
nb::object Section(const AuditResult& r, std::string_view key) {
  return ToPython(reports::AuditJsonSection(r, key, JsonForm::kPython), key);
}

// The document's object under `key` exactly as json.loads reads it from the file (Audit.fit and
// Audit.lse have always been that), or None where it is absent.
nb::object FileSection(const AuditResult& r, std::string_view key) {
  if (!reports::AuditJsonHas(r, key)) return nb::none();
  return nb::module_::import_("json").attr("loads")(reports::AuditJsonSection(r, key, JsonForm::kFile).dump());
}

// "platforms" with the older keys as aliases of the JSON's: counts (the four class keys),
// rtol, atol, ulp, bound_normalized (rec_rtol, rec_atol, rec_ulp, rec_bn), and the model's hash
// (model_hash; the JSON has it in provenance).
nb::list Platforms(const AuditResult& r) {
  nb::list out = nb::cast<nb::list>(Section(r, "platforms"));
  for (size_t i = 0; i < out.size(); ++i) {
    nb::dict d = nb::cast<nb::dict>(out[i]);
    nb::dict counts;
    for (int c = 0; c < reports::kAuditClasses; ++c) {
      const char* name = reports::AuditClassName(static_cast<reports::AuditClass>(c));
      counts[name] = nb::object(d[name]);
    }
    d["counts"] = counts;
    d["rtol"] = nb::object(d["rec_rtol"]);
    d["atol"] = nb::object(d["rec_atol"]);
    d["ulp"] = nb::object(d["rec_ulp"]);
    d["bound_normalized"] = nb::object(d["rec_bn"]);
    d["model_hash"] = r.platforms[i].model_hash;
  }
  return out;
}

nb::object SummaryItem(const AuditResult& r, const char* key) { return nb::object(Section(r, "summary")[key]); }

std::string Repr(const AuditResult& r) {
  int64_t total = 0;
  for (int64_t c : r.counts) total += c;
  return "<fpconform.Audit " + r.op + ": " + reports::AuditVerdictName(r.verdict) + ", " +
         std::to_string(r.counts[static_cast<size_t>(reports::AuditClass::kUnexplained)]) + " of " +
         std::to_string(total) + " unexplained against " +
         (r.platforms.empty() ? std::string("-") : r.platforms[0].name) + ">";
}

AuditResult AuditMatmulPy(const TensorPair& a, const TensorPair& b, const TensorPair& out, const TensorPair& c,
                          const TensorPair& scale_a, const TensorPair& scale_b, bool transpose_a,
                          bool transpose_b, std::optional<std::string> cast_inputs,
                          const std::string& out_rounding, const Options& o) {
  const Tensor ta = Need(a, "a"), tb = Need(b, "b"), tout = Need(out, "out");
  const std::optional<Tensor> tc = Load(c, "c"), tsa = Load(scale_a, "scale_a"), tsb = Load(scale_b, "scale_b");
  reports::MatmulAuditInput in;
  in.a = &ta;
  in.b = &tb;
  in.out = &tout;
  if (tc.has_value()) in.c = &*tc;
  if (tsa.has_value()) in.scale_a = &*tsa;
  if (tsb.has_value()) in.scale_b = &*tsb;
  in.transpose_a = transpose_a;
  in.transpose_b = transpose_b;
  if (cast_inputs.has_value()) in.cast_inputs = ParseMode(*cast_inputs, "cast_inputs");
  in.out_rounding = ParseMode(out_rounding, "out_rounding");
  const reports::AuditOptions opts = MakeOptions(o);
  return WithoutGil([&] { return reports::AuditMatmul(in, opts); });
}

AuditResult AuditSumPy(const TensorPair& x, int axis, const TensorPair& out, std::optional<std::string> cast_inputs,
                       const std::string& out_rounding, const Options& o) {
  const Tensor tx = Need(x, "x"), tout = Need(out, "out");
  reports::SumAuditInput in;
  in.x = &tx;
  in.axis = axis;
  in.out = &tout;
  if (cast_inputs.has_value()) in.cast_inputs = ParseMode(*cast_inputs, "cast_inputs");
  in.out_rounding = ParseMode(out_rounding, "out_rounding");
  const reports::AuditOptions opts = MakeOptions(o);
  return WithoutGil([&] { return reports::AuditSum(in, opts); });
}

AuditResult AuditCastPy(const TensorPair& x, const TensorPair& out, const std::string& to, const std::string& rounding,
                        bool sat, double scale, const Options& o) {
  const Tensor tx = Need(x, "x"), tout = Need(out, "out");
  reports::CastAuditInput in;
  in.x = &tx;
  in.out = &tout;
  in.to = &NeedFormat(to, "audit_cast: to");
  OpEnv env;
  if (!ParseRounding(rounding, env)) ThrowValue("audit_cast: rounding '" + rounding + "' is not a rounding mode");
  env.saturate = sat;
  in.env = env;
  in.scale = scale;
  const reports::AuditOptions opts = MakeOptions(o);
  return WithoutGil([&] { return reports::AuditCast(in, opts); });
}

AuditResult AuditElementwisePy(const TensorPair& x, const TensorPair& out, const std::string& fn,
                               const std::string& out_rounding, const Options& o) {
  const Tensor tx = Need(x, "x"), tout = Need(out, "out");
  reports::ElementwiseAuditInput in;
  in.x = &tx;
  in.out = &tout;
  in.fn = fn;
  in.out_rounding = ParseMode(out_rounding, "out_rounding");
  const reports::AuditOptions opts = MakeOptions(o);
  return WithoutGil([&] { return reports::AuditElementwise(in, opts); });
}

// An axis op's input (audit_axis, compare_composite's port); the caller sets out.
reports::AxisAuditInput AxisInput(const std::string& op, const Tensor& x, int axis, const std::optional<Tensor>& weight,
                                  const std::optional<Tensor>& bias, std::optional<double> eps,
                                  const std::string& out_rounding) {
  reports::AxisAuditInput in;
  in.op = op;
  in.x = &x;
  in.axis = axis;
  if (weight.has_value()) in.weight = &*weight;
  if (bias.has_value()) in.bias = &*bias;
  in.eps = eps;
  in.out_rounding = ParseMode(out_rounding, "out_rounding");
  return in;
}

AuditResult AuditAxisPy(const std::string& op, const TensorPair& x, int axis, const TensorPair& weight,
                        const TensorPair& bias, std::optional<double> eps, const TensorPair& out,
                        const std::string& out_rounding, const Options& o) {
  const Tensor tx = Need(x, "x"), tout = Need(out, "out");
  const std::optional<Tensor> tw = Load(weight, "weight"), tb = Load(bias, "bias");
  reports::AxisAuditInput in = AxisInput(op, tx, axis, tw, tb, eps, out_rounding);
  in.out = &tout;
  const reports::AuditOptions opts = MakeOptions(o);
  return WithoutGil([&] { return reports::AuditAxis(in, opts); });
}

// audit attention (issue 27).
reports::AttentionAuditInput AttentionInput(const Tensor& q, const Tensor& k, const Tensor& v,
                                            const std::optional<Tensor>& mask, bool causal,
                                            std::optional<double> scale) {
  reports::AttentionAuditInput in;
  in.q = &q;
  in.k = &k;
  in.v = &v;
  if (mask.has_value()) in.mask = &*mask;
  in.causal = causal;
  in.scale = scale;
  return in;
}

AuditResult AuditAttentionPy(const TensorPair& q, const TensorPair& k, const TensorPair& v, const TensorPair& out,
                             const TensorPair& mask, bool causal, std::optional<double> scale,
                             const std::string& out_rounding, const std::string& attention_models_dir,
                             const Options& o, const TensorPair& lse) {
  const Tensor tq = Need(q, "q"), tk = Need(k, "k"), tv = Need(v, "v"), tout = Need(out, "out");
  const std::optional<Tensor> tm = Load(mask, "mask");
  const std::optional<Tensor> tl = Load(lse, "lse");
  reports::AttentionAuditInput in = AttentionInput(tq, tk, tv, tm, causal, scale);
  in.out = &tout;
  if (tl.has_value()) in.lse = &*tl;
  in.out_rounding = ParseMode(out_rounding, "out_rounding");
  reports::AuditOptions opts = MakeOptions(o);
  opts.attention_models_dir = attention_models_dir;
  return WithoutGil([&] { return reports::AuditAttention(in, opts); });
}

CompareResult CompareAttentionPy(const TensorPair& q, const TensorPair& k, const TensorPair& v,
                                 const TensorPair& mask, bool causal, std::optional<double> scale,
                                 const TensorPair& out_ref, const std::string& platform_ref, const TensorPair& out,
                                 const std::string& platform, const std::string& out_rounding,
                                 const std::string& attention_models_dir, const Options& o,
                                 const TensorPair& lse_ref, const TensorPair& lse) {
  const Tensor tq = Need(q, "q"), tk = Need(k, "k"), tv = Need(v, "v");
  const Tensor tref = Need(out_ref, "out_ref"), tout = Need(out, "out");
  const std::optional<Tensor> tm = Load(mask, "mask");
  const std::optional<Tensor> tlr = Load(lse_ref, "lse_ref"), tl = Load(lse, "lse");
  reports::AttentionAuditInput port = AttentionInput(tq, tk, tv, tm, causal, scale);
  port.out_rounding = ParseMode(out_rounding, "out_rounding");
  reports::AttentionAuditInput ref = port;
  ref.out = &tref;
  port.out = &tout;
  if (tlr.has_value()) ref.lse = &*tlr;
  if (tl.has_value()) port.lse = &*tl;
  reports::AuditOptions opts = MakeOptions(o);
  opts.attention_models_dir = attention_models_dir;
  return WithoutGil([&] { return reports::CompareAttention(ref, platform_ref, port, platform, opts); });
}

nb::object ExactAttentionPy(const TensorPair& q, const TensorPair& k, const TensorPair& v, const TensorPair& mask,
                            bool causal, std::optional<double> scale, const std::string& out_dtype, int threads) {
  const Tensor tq = Need(q, "q"), tk = Need(k, "k"), tv = Need(v, "v");
  const std::optional<Tensor> tm = Load(mask, "mask");
  const FormatSpec& f = NeedFormat(out_dtype, "out_dtype");
  const reports::AttentionAuditInput in = AttentionInput(tq, tk, tv, tm, causal, scale);
  const int workers = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::vector<uint64_t> bits = WithoutGil([&] { return reports::ExactAttention(in, f, workers); });
  std::vector<int64_t> shape = tq.shape;
  if (!shape.empty() && !tv.shape.empty()) shape.back() = tv.shape.back();
  return BitsArray(bits, f.width / 8, shape);
}

// compare(ref, platform_ref, port, platform, opts) with the GIL released, where ref and port are
// `in` with out = out_ref and out: two outputs of the same inputs.
template <class Input, class Compare>
CompareResult CompareOutputs(Compare compare, Input in, const Tensor& out_ref, const std::string& platform_ref,
                             const Tensor& out, const std::string& platform, const reports::AuditOptions& opts) {
  Input ref = in;
  ref.out = &out_ref;
  in.out = &out;
  return WithoutGil([&] { return compare(ref, platform_ref, in, platform, opts); });
}

CompareResult CompareMatmulPy(const TensorPair& a, const TensorPair& b, const TensorPair& out_ref,
                              const std::string& platform_ref, const TensorPair& out, const std::string& platform,
                              bool transpose_a, bool transpose_b, std::optional<std::string> cast_inputs,
                              const std::string& out_rounding, const Options& o) {
  const Tensor ta = Need(a, "a"), tb = Need(b, "b"), tref = Need(out_ref, "out_ref"), tout = Need(out, "out");
  reports::MatmulAuditInput port;
  port.a = &ta;
  port.b = &tb;
  port.transpose_a = transpose_a;
  port.transpose_b = transpose_b;
  if (cast_inputs.has_value()) port.cast_inputs = ParseMode(*cast_inputs, "cast_inputs");
  port.out_rounding = ParseMode(out_rounding, "out_rounding");
  return CompareOutputs(reports::CompareMatmul, port, tref, platform_ref, tout, platform, MakeOptions(o));
}

CompareResult CompareComposite(const std::string& op, const TensorPair& x, int axis, const TensorPair& weight,
                               const TensorPair& bias, std::optional<double> eps, const std::string& fn,
                               const TensorPair& out_ref, const std::string& platform_ref, const TensorPair& out,
                               const std::string& platform, const std::string& out_rounding, const Options& o) {
  const Tensor tx = Need(x, "x"), tref = Need(out_ref, "out_ref"), tout = Need(out, "out");
  const std::optional<Tensor> tw = Load(weight, "weight"), tb = Load(bias, "bias");
  const reports::AuditOptions opts = MakeOptions(o);
  if (op == "elementwise") {
    reports::ElementwiseAuditInput port;
    port.x = &tx;
    port.fn = fn;
    port.out_rounding = ParseMode(out_rounding, "out_rounding");
    return CompareOutputs(reports::CompareElementwise, port, tref, platform_ref, tout, platform, opts);
  } else {
    return CompareOutputs(reports::CompareAxis, AxisInput(op, tx, axis, tw, tb, eps, out_rounding), tref,
                          platform_ref, tout, platform, opts);
  }
}

}  // namespace

void BindAudit(nb::module_& m) {
  nb::class_<Options>(m, "AuditOptions")
      .def(nb::init<>())
      .def_rw("platforms", &Options::platforms)
      .def_rw("models_dir", &Options::models_dir)
      .def_rw("sweep_file", &Options::sweep_file)
      .def_rw("composite_models_dir", &Options::composite_models_dir)
      .def_rw("max_listed", &Options::max_listed)
      .def_rw("strict", &Options::strict)
      .def_rw("recommend", &Options::recommend)
      .def_rw("tolerance_samples", &Options::tolerance_samples)
      .def_rw("threads", &Options::threads);

  nb::class_<AuditResult> audit(m, "Audit",
                                "The result of an audit: verdict, class counts, per-element classes, listed "
                                "elements with evidence; str() is the CLI's summary. Every top-level key of "
                                "to_json() is an attribute of the same name (reports/AUDIT.md \"The Python "
                                "objects\").");
  // One attribute per key of the document (the serializer's list): the same names and values as
  // the JSON, in the Python form. soundness, fit and lse are defined below (older values).
  for (const char* key : reports::kAuditJsonKeys) {
    const std::string_view k = key;
    if (k == "platforms" || k == "soundness" || k == "fit" || k == "lse") continue;
    audit.def_prop_ro(key, [k](const AuditResult& r) { return Section(r, k); },
                      "The --json document's key of this name (Python form: reports/AUDIT.md \"The Python "
                      "objects\"); None where the document does not have it");
  }
  audit
      .def_prop_ro("platforms", &Platforms,
                   "The JSON's \"platforms\" (name, the class counts, rec_rtol, rec_atol, rec_ulp, rec_bn), "
                   "each dict also with the older keys counts, rtol, atol, ulp, bound_normalized and model_hash")
      .def_prop_ro("soundness",
                   [](const AuditResult& r) { return nb::object(Section(r, "soundness")["sentences"]); },
                   "The JSON's soundness[\"sentences\"] (the whole object: to_dict()[\"soundness\"])")
      .def_prop_ro("fit", [](const AuditResult& r) { return FileSection(r, "fit"); },
                   "The fit of --platform auto (matmul, sum): the JSON's \"fit\" object as a dict, or None")
      .def_prop_ro("lse", [](const AuditResult& r) { return FileSection(r, "lse"); },
                   "audit_attention(lse=...): the LSE's classes, the JSON's \"lse\" object as a dict, or None")
      // Older names, aliases of the JSON's keys.
      .def_prop_ro("out_format", [](const AuditResult& r) { return Section(r, "output_format"); },
                   "Alias of output_format")
      .def_prop_ro("out_shape", [](const AuditResult& r) { return Section(r, "shape"); }, "Alias of shape");
  // Older names of summary's items, aliases of summary["<name>"] (nanobind copies the docstring).
  for (const char* key : {"mismatched", "max_abs_diff", "max_abs_allowed", "max_rel_diff", "max_rel_allowed"}) {
    audit.def_prop_ro(key, [key](const AuditResult& r) { return SummaryItem(r, key); },
                      (std::string("Alias of summary[\"") + key + "\"]").c_str());
  }
  audit
      // Not in the JSON: the verdict as a bool and the per-element arrays.
      .def_prop_ro("passed", [](const AuditResult& r) { return r.verdict == reports::AuditVerdict::kPass; })
      .def_prop_ro("classes",
                   [](const AuditResult& r) {
                     std::vector<uint8_t> c = r.classes;
                     return VectorArray<uint8_t>(std::move(c), r.out_shape);
                   })
      .def_prop_ro("bounds",
                   [](const AuditResult& r) -> nb::object {
                     if (r.bounds.empty()) return nb::none();
                     std::vector<double> b = r.bounds;
                     return VectorArray<double>(std::move(b), r.out_shape);
                   })
      .def("to_json", &reports::AuditToJson)
      .def("to_dict",
           [](const AuditResult& r) { return nb::module_::import_("json").attr("loads")(reports::AuditToJson(r)); },
           "json.loads(to_json()): the document with the file's values (non-finite numbers and bits as text)")
      .def("report_files", &reports::AuditReportFiles)
      .def("__str__", &reports::AuditSummaryText)
      .def("__repr__", &Repr);

  nb::class_<CompareResult> compare(m, "Compare",
                                    "Two platforms' outputs on the same inputs (fpconform compare). Every "
                                    "top-level key of to_json() is an attribute of the same name.");
  for (const char* key : reports::kCompareJsonKeys) {
    const std::string_view k = key;
    if (k == "listed" || k == "ref" || k == "port") continue;
    compare.def_prop_ro(key,
                        [k](const CompareResult& c) {
                          return ToPython(reports::CompareJsonSection(c, k, JsonForm::kPython), k);
                        },
                        "The --json document's key of this name (Python form: reports/AUDIT.md \"The "
                        "Python objects\")");
  }
  compare.def_ro("ref", &CompareResult::ref, "The reference side's Audit (the JSON's \"ref\")")
      .def_ro("port", &CompareResult::port, "The port side's Audit (the JSON's \"port\")")
      .def_prop_ro("faults",
                   [](const CompareResult& c) {
                     return ToPython(reports::CompareJsonSection(c, "at_fault", JsonForm::kPython));
                   },
                   "Alias of at_fault")
      .def_prop_ro("listed",
                   [](const CompareResult& c) {
                     nb::list l;
                     for (nb::handle e : ToPython(reports::CompareJsonSection(c, "listed", JsonForm::kPython))) {
                       l.append(nb::make_tuple(e["index"], e["at_fault"]));
                     }
                     return l;
                   },
                   "The JSON's \"listed\" as (index, at_fault) tuples")
      .def_prop_ro("passed", [](const CompareResult& c) { return c.verdict == reports::AuditVerdict::kPass; })
      .def("to_json", &reports::CompareToJson)
      .def("to_dict",
           [](const CompareResult& c) {
             return nb::module_::import_("json").attr("loads")(reports::CompareToJson(c));
           },
           "json.loads(to_json())")
      .def("__str__", &reports::CompareSummaryText)
      .def("__repr__", [](const CompareResult& c) {
        return "<fpconform.Compare " + c.port.op + ": " + std::string(reports::AuditVerdictName(c.verdict)) + ", " +
               std::to_string(c.inconsistent) + " inconsistent>";
      });

  // The class names in AuditClass order, from the library's one table (AuditClassName).
  nb::list class_names;
  for (int c = 0; c < reports::kAuditClasses; ++c) {
    class_names.append(reports::AuditClassName(static_cast<reports::AuditClass>(c)));
  }
  m.attr("CLASS_NAMES") = nb::tuple(class_names);
  m.def("index_text", &IndexText);
  m.def("audit_matmul", &AuditMatmulPy, nb::arg("a").none(), nb::arg("b").none(), nb::arg("out").none(),
        nb::arg("c").none(), nb::arg("scale_a").none(), nb::arg("scale_b").none(), nb::arg("transpose_a"),
        nb::arg("transpose_b"), nb::arg("cast_inputs").none(), nb::arg("out_rounding"), nb::arg("options"));
  m.def("audit_sum", &AuditSumPy, nb::arg("x").none(), nb::arg("axis"), nb::arg("out").none(),
        nb::arg("cast_inputs").none(), nb::arg("out_rounding"), nb::arg("options"));
  m.def("audit_elementwise", &AuditElementwisePy, nb::arg("x").none(), nb::arg("out").none(), nb::arg("fn"),
        nb::arg("out_rounding"), nb::arg("options"));
  m.def("audit_axis", &AuditAxisPy, nb::arg("op"), nb::arg("x").none(), nb::arg("axis"), nb::arg("weight").none(),
        nb::arg("bias").none(), nb::arg("eps").none(), nb::arg("out").none(), nb::arg("out_rounding"),
        nb::arg("options"));
  m.def("audit_attention", &AuditAttentionPy, nb::arg("q").none(), nb::arg("k").none(), nb::arg("v").none(),
        nb::arg("out").none(), nb::arg("mask").none(), nb::arg("causal"), nb::arg("scale").none(),
        nb::arg("out_rounding"), nb::arg("attention_models_dir"), nb::arg("options"),
        nb::arg("lse").none() = nb::none());
  m.def("compare_attention", &CompareAttentionPy, nb::arg("q").none(), nb::arg("k").none(), nb::arg("v").none(),
        nb::arg("mask").none(), nb::arg("causal"), nb::arg("scale").none(), nb::arg("out_ref").none(),
        nb::arg("platform_ref"), nb::arg("out").none(), nb::arg("platform"), nb::arg("out_rounding"),
        nb::arg("attention_models_dir"), nb::arg("options"), nb::arg("lse_ref").none() = nb::none(),
        nb::arg("lse").none() = nb::none());
  m.def("exact_attention", &ExactAttentionPy, nb::arg("q").none(), nb::arg("k").none(), nb::arg("v").none(),
        nb::arg("mask").none(), nb::arg("causal"), nb::arg("scale").none(), nb::arg("out_dtype"),
        nb::arg("threads"));
  m.def("audit_cast", &AuditCastPy, nb::arg("x").none(), nb::arg("out").none(), nb::arg("to"), nb::arg("rounding"),
        nb::arg("sat"), nb::arg("scale"), nb::arg("options"));
  m.def("compare_matmul", &CompareMatmulPy, nb::arg("a").none(), nb::arg("b").none(), nb::arg("out_ref").none(),
        nb::arg("platform_ref"), nb::arg("out").none(), nb::arg("platform"), nb::arg("transpose_a"),
        nb::arg("transpose_b"), nb::arg("cast_inputs").none(), nb::arg("out_rounding"), nb::arg("options"));
  m.def("compare_composite", &CompareComposite, nb::arg("op"), nb::arg("x").none(), nb::arg("axis"),
        nb::arg("weight").none(), nb::arg("bias").none(), nb::arg("eps").none(), nb::arg("fn"),
        nb::arg("out_ref").none(), nb::arg("platform_ref"), nb::arg("out").none(), nb::arg("platform"),
        nb::arg("out_rounding"), nb::arg("options"));
}

}  // namespace fpconform::python
