// The composite ops' exact values and model emulations for the Python package (issue 28 §4):
// fpconform.exact_elementwise / exact_softmax / ... and emulate_elementwise / emulate_softmax /
// ... (python/fpconform/__init__.py). Arrays cross as bits (arrays.h); the Python layer moves the
// op's axis last, so the along-axis functions here take rows: x is (rows, n), C-contiguous.
//
// The exact values come from oracles/elementary.h and oracles/axis_ops.h (correctly rounded,
// certified binary64 fast path with MPFR where it cannot decide). An emulation is a composite
// model's (composite/model.h): its every-step-correctly-rounded value, and the enclosure [lo, hi]
// that holds the output of every implementation of its formula within its accuracies; a
// function the model gives as "correctly_rounded" is the oracle's value, lo = hi = that value.
// emulate_attention is an attention model's (reports/audit.h EmulateAttention: the audit's own
// shape checks, masks and GQA mapping, composite/attention_model.h's emulation and bound).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <algorithm>
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
#include "composite/formula.h"
#include "composite/model.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "oracles/axis_ops.h"
#include "formats/ops.h"
#include "oracles/elementary.h"
#include "python/src/arrays.h"
#include "reports/audit.h"
#include "reports/composite_row.h"

namespace fpconform::python {
namespace {

using composite::CompositeFunction;
using composite::CompositeKind;
using composite::CompositeModel;
using composite::Enclosure;

// (format name, bits) of an optional operand: weight and bias.
using Bits = std::optional<std::pair<std::string, InArray>>;

const FormatSpec& NeedFloatFormat(const std::string& name, const std::string& what) {
  const FormatSpec& f = NeedFormat(name, what);
  if (!IsFloat(f)) ThrowValue(what + ": " + name + " is an integer format: these ops take float formats");
  return f;
}

// Every deterministic rounding (the exact value rounded once); stochastic rounding has no single
// correct result.
OpEnv RoundingEnv(const std::string& rounding, const std::string& what) {
  OpEnv env;
  if (!ParseRounding(rounding, env) || env.rounding == Rounding::kStochastic) {
    ThrowValue(what + ": rounding '" + rounding + "' is not one of rne rna rtz rup rdn rto");
  }
  return env;
}

// A (rows, n) array's shape, or ValueError.
std::pair<int64_t, int64_t> Rows(const InArray& x, const std::string& what) {
  if (x.ndim() != 2) ThrowValue(what + ": x must be passed as (rows, n)");
  return {static_cast<int64_t>(x.shape(0)), static_cast<int64_t>(x.shape(1))};
}

// The weight or bias along the axis: n entries of a float format, or none.
struct AxisOperand {
  const FormatSpec* format = nullptr;
  std::vector<uint64_t> bits;
};

AxisOperand Operand(const Bits& p, int64_t n, const std::string& what) {
  AxisOperand r;
  if (!p.has_value()) return r;
  r.format = &NeedFloatFormat(p->first, what);
  CheckWidth(p->second, r.format->width / 8, what);
  if (p->second.ndim() != 1 || static_cast<int64_t>(p->second.shape(0)) != n) {
    ThrowValue(what + ": must be 1-D with " + std::to_string(n) + " entries (the length of the axis)");
  }
  r.bits = AllBits(p->second);
  return r;
}

AxisParams Params(const AxisOperand& w, const AxisOperand& b, double eps) {
  AxisParams p;
  p.eps = eps;
  p.weight_format = w.format;
  p.weight = w.bits;
  p.bias_format = b.format;
  p.bias = b.bits;
  return p;
}

nb::object ExactElementwise(const std::string& fn_name, const std::string& x_dtype, const InArray& x,
                            const std::string& out_dtype, const std::string& rounding, int threads) {
  const absl::StatusOr<ElementaryFn> fn = ParseElementaryFn(fn_name);
  if (!fn.ok()) ThrowValue("exact_elementwise: " + std::string(fn.status().message()));
  const FormatSpec& fx = NeedFloatFormat(x_dtype, "exact_elementwise: x");
  const FormatSpec& fo = NeedFloatFormat(out_dtype, "exact_elementwise: out_dtype");
  if (absl::Status s = ElementarySupports(fx, fo); !s.ok()) ThrowStatus(s);
  const OpEnv env = RoundingEnv(rounding, "exact_elementwise");
  CheckWidth(x, fx.width / 8, "exact_elementwise: x");
  const std::vector<uint64_t> xb = AllBits(x);
  std::vector<uint64_t> out(xb.size());
  WithoutGil([&] { return ElementaryRoundBatch(*fn, fx, xb, fo, env, out, {}, nullptr, Threads(threads)); });
  return BitsArray(out, fo.width / 8, ShapeOf(x));
}

nb::object ExactAxis(const std::string& op_name, const std::string& x_dtype, const InArray& x, const Bits& weight,
                     const Bits& bias, double eps, const std::string& out_dtype, const std::string& rounding,
                     int threads) {
  const std::string what = "exact_" + op_name;
  const absl::StatusOr<AxisOp> op = ParseAxisOp(op_name);
  if (!op.ok()) ThrowValue(what + ": " + std::string(op.status().message()));
  const FormatSpec& fx = NeedFloatFormat(x_dtype, what + ": x");
  const FormatSpec& fo = NeedFloatFormat(out_dtype, what + ": out_dtype");
  const OpEnv env = RoundingEnv(rounding, what);
  CheckWidth(x, fx.width / 8, what + ": x");
  const auto [rows, n] = Rows(x, what);
  const AxisOperand w = Operand(weight, n, what + ": weight"), b = Operand(bias, n, what + ": bias");
  const std::vector<uint64_t> xb = AllBits(x);
  std::vector<uint64_t> out(xb.size());
  WithoutGil([&, rows = rows, n = n] {
    return AxisRound(*op, fx, xb, rows, n, Params(w, b, eps), fo, env, out, nullptr, Threads(threads));
  });
  return BitsArray(out, fo.width / 8, {rows, n});
}

// The model `platform` of `dir` and its function `fn` of `kind`, or ValueError naming the valid
// ones.
std::pair<CompositeModel, const CompositeFunction*> NeedModel(const std::string& dir, const std::string& platform,
                                                               CompositeKind kind, const std::string& fn,
                                                               const std::string& what) {
  absl::StatusOr<std::vector<CompositeModel>> all = composite::LoadCompositeModels(dir);
  if (!all.ok()) ThrowStatus(all.status());
  std::string valid;
  for (CompositeModel& m : *all) {
    if (m.kind != kind || m.Find(fn) == nullptr) continue;
    if (m.name == platform) {
      CompositeModel model = std::move(m);
      const CompositeFunction* f = model.Find(fn);
      return {std::move(model), f};
    }
    valid += (valid.empty() ? "" : ", ") + m.name;
  }
  ThrowValue(what + ": no model '" + platform + "' with " + fn + " in " + dir + " (models with " + fn + ": " +
             (valid.empty() ? "none" : valid) + ")");
}

void NeedInput(const CompositeFunction& f, const std::string& x_dtype, const std::string& platform,
               const std::string& what) {
  if (f.input->name != x_dtype) {
    ThrowValue(what + ": platform '" + platform + "' takes " + std::string(f.input->name) + " x, not " + x_dtype);
  }
}

using Emulation = std::tuple<std::string, nb::object, nb::object, nb::object>;

// f's emulation of the inputs xb with the GIL released: for a correctly rounded f, oracle(out)
// (the oracle's results: lo = hi = each value), else model(out, lo, hi) (the model's values and
// enclosures); ThrowStatus of an error.
template <class Oracle, class Model>
Emulation EmulateBits(const CompositeFunction& f, const std::vector<uint64_t>& xb, const std::vector<int64_t>& shape,
                      Oracle oracle, Model model) {
  std::vector<uint64_t> out(xb.size());
  std::vector<double> lo(xb.size()), hi(xb.size());
  WithoutGil([&]() -> absl::Status {
    if (!f.correctly_rounded) return model(out, lo, hi);
    const absl::Status s = oracle(out);
    for (size_t i = 0; s.ok() && i < out.size(); ++i) lo[i] = hi[i] = ToDouble(*f.output, out[i]);
    return s;
  });
  return {std::string(f.output->name), BitsArray(out, f.output->width / 8, shape),
          VectorArray<double>(std::move(lo), shape), VectorArray<double>(std::move(hi), shape)};
}

Emulation EmulateElementwise(const std::string& dir, const std::string& platform, const std::string& fn_name,
                             const std::string& x_dtype, const InArray& x) {
  const std::string what = "emulate_elementwise";
  const auto [model, f] = NeedModel(dir, platform, CompositeKind::kElementwise, fn_name, what);
  NeedInput(*f, x_dtype, platform, what);
  CheckWidth(x, f->input->width / 8, what + ": x");
  const std::vector<uint64_t> xb = AllBits(x);
  return EmulateBits(
      *f, xb, ShapeOf(x),
      [&, f = f](std::vector<uint64_t>& out) {
        const absl::StatusOr<ElementaryFn> fn = ParseElementaryFn(fn_name);
        return fn.ok() ? ElementaryRoundBatch(*fn, *f->input, xb, *f->output, OpEnv{}, out, {}, nullptr, 1)
                       : fn.status();
      },
      [&, f = f](std::vector<uint64_t>& out, std::vector<double>& lo, std::vector<double>& hi) {
        for (size_t i = 0; i < xb.size(); ++i) {
          out[i] = f->Emulate(xb[i]);
          const Enclosure e = f->Enclose(xb[i]);
          lo[i] = e.lo;
          hi[i] = e.hi;
        }
        return absl::OkStatus();
      });
}

Emulation EmulateAxis(const std::string& dir, const std::string& platform, const std::string& op_name,
                      const std::string& x_dtype, const InArray& x, const Bits& weight, const Bits& bias,
                      double eps) {
  const std::string what = "emulate_" + op_name;
  const auto [model, f] = NeedModel(dir, platform, CompositeKind::kAxis, op_name, what);
  NeedInput(*f, x_dtype, platform, what);
  CheckWidth(x, f->input->width / 8, what + ": x");
  const auto [rows, n] = Rows(x, what);
  const AxisOperand w = Operand(weight, n, what + ": weight"), b = Operand(bias, n, what + ": bias");
  const AxisParams params = Params(w, b, eps);
  const std::vector<uint64_t> xb = AllBits(x);
  return EmulateBits(
      *f, xb, {rows, n},
      [&, f = f, rows = rows, n = n](std::vector<uint64_t>& out) {
        const absl::StatusOr<AxisOp> op = ParseAxisOp(op_name);
        return op.ok() ? AxisRound(*op, *f->input, xb, rows, n, params, *f->output, OpEnv{}, out, nullptr, 1)
                       : op.status();
      },
      [&, f = f, rows = rows, n = n](std::vector<uint64_t>& out, std::vector<double>& lo, std::vector<double>& hi) {
        std::vector<Enclosure> enc(static_cast<size_t>(n));
        absl::Status s;
        for (int64_t r = 0; s.ok() && r < rows; ++r) {
          const size_t at = static_cast<size_t>(r * n);
          const CompositeFunction::Row row =
              reports::CompositeRow(std::span<const uint64_t>(xb.data() + at, static_cast<size_t>(n)), params);
          s = f->EmulateRow(row, std::span<uint64_t>(out.data() + at, static_cast<size_t>(n)));
          if (s.ok()) s = f->EncloseRow(row, enc);
          for (int64_t i = 0; s.ok() && i < n; ++i) {
            lo[at + static_cast<size_t>(i)] = enc[static_cast<size_t>(i)].lo;
            hi[at + static_cast<size_t>(i)] = enc[static_cast<size_t>(i)].hi;
          }
        }
        return s;
      });
}

// (q, k, v: (dtype, bits) each; mask optional: a float array, or uint8/int8 for a boolean one).
Emulation EmulateAttentionPy(const std::string& dir, const std::string& platform,
                             const std::pair<std::string, InArray>& q, const std::pair<std::string, InArray>& k,
                             const std::pair<std::string, InArray>& v, const Bits& mask, bool causal,
                             std::optional<double> scale, int threads) {
  const Tensor tq = ToTensor(q.first, q.second, "q"), tk = ToTensor(k.first, k.second, "k");
  const Tensor tv = ToTensor(v.first, v.second, "v");
  std::optional<Tensor> tm;
  if (mask.has_value()) tm = ToTensor(mask->first, mask->second, "mask");
  reports::AttentionAuditInput in;
  in.q = &tq;
  in.k = &tk;
  in.v = &tv;
  in.mask = tm.has_value() ? &*tm : nullptr;
  in.causal = causal;
  in.scale = scale;
  reports::AttentionEmulation e =
      WithoutGil([&] { return reports::EmulateAttention(in, platform, dir, Threads(threads)); });
  return {std::string(e.format->name), BitsArray(e.bits, e.format->width / 8, e.shape),
          VectorArray<double>(std::move(e.lo), e.shape), VectorArray<double>(std::move(e.hi), e.shape)};
}

}  // namespace

void BindComposite(nb::module_& m) {
  m.def("exact_elementwise", &ExactElementwise, nb::arg("fn"), nb::arg("x_dtype"), nb::arg("x"),
        nb::arg("out_dtype"), nb::arg("rounding"), nb::arg("threads"));
  m.def("exact_axis", &ExactAxis, nb::arg("op"), nb::arg("x_dtype"), nb::arg("x"), nb::arg("weight").none(),
        nb::arg("bias").none(), nb::arg("eps"), nb::arg("out_dtype"), nb::arg("rounding"), nb::arg("threads"));
  m.def("emulate_elementwise", &EmulateElementwise, nb::arg("models_dir"), nb::arg("platform"), nb::arg("fn"),
        nb::arg("x_dtype"), nb::arg("x"));
  m.def("emulate_axis", &EmulateAxis, nb::arg("models_dir"), nb::arg("platform"), nb::arg("op"),
        nb::arg("x_dtype"), nb::arg("x"), nb::arg("weight").none(), nb::arg("bias").none(), nb::arg("eps"));
  m.def("emulate_attention", &EmulateAttentionPy, nb::arg("models_dir"), nb::arg("platform"), nb::arg("q"),
        nb::arg("k"), nb::arg("v"), nb::arg("mask").none(), nb::arg("causal"), nb::arg("scale").none(),
        nb::arg("threads"));
}

}  // namespace fpconform::python
