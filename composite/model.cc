// Implementation models of composite kernels (model.h; file format: MODEL_FORMAT.md).
#include "composite/model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "base/str_cat.h"
#include "base/user_file.h"
#include "cases/toml_files.h"
#include "cases/toml_reader.h"
#include "formats/ops.h"

namespace fpconform::composite {

std::span<const std::string_view> ElementwiseFunctionNames() {
  static constexpr std::array<std::string_view, 10> kNames = {
      "exp", "exp2", "log", "tanh", "sigmoid", "silu", "gelu", "gelu_tanh", "rsqrt", "reciprocal"};
  return kNames;
}

std::span<const std::string_view> AxisFunctionNames() {
  static constexpr std::array<std::string_view, 4> kNames = {"softmax", "log_softmax", "rmsnorm",
                                                             "layernorm"};
  return kNames;
}

namespace {

double RoundedTo(const FormatSpec& f, double v) {
  if (std::isnan(v)) return v;
  return ToDouble(f, DoubleToBits(f, v));
}

const FormatSpec* FloatFormat(TomlReader& r, const toml::table& t, std::string_view prefix,
                              std::string_view key, TomlKey need) {
  const std::optional<std::string> name = r.String(t, prefix, key, need);
  if (!name) return nullptr;
  const FormatSpec* f = FindFormat(*name);
  if (f == nullptr || f->kind != FormatKind::kFloat || f->d.precision > 53) {
    r.Fail(t.get(key), TomlReader::Dotted(prefix, key),
           Cat("must be a float format of at most 53 bits (float32 bfloat16 float16 ...), got \"",
               *name, "\""));
    return nullptr;
  }
  return f;
}

absl::StatusOr<CompositeModel> ParseTable(const toml::table& root, std::string_view file) {
  TomlReader r(file);
  CompositeModel m;
  r.CheckKeys(root, "", {"name", "description", "kind", "contract", "formats", "accuracy",
                         "functions", "provenance"});
  if (std::optional<std::string> s = r.String(root, "", "name", TomlKey::kRequired)) m.name = *s;
  if (std::optional<std::string> s = r.String(root, "", "description", TomlKey::kRequired)) {
    m.description = *s;
  }
  if (std::optional<CompositeKind> k = r.Choice<CompositeKind>(
          root, "", "kind", {{"elementwise", CompositeKind::kElementwise}, {"axis", CompositeKind::kAxis}},
          TomlKey::kRequired)) {
    m.kind = *k;
  }
  if (std::optional<bool> b = r.Bool(root, "", "contract")) m.contract = *b;
  if (const toml::table* t = r.Table(root, "", "formats", TomlKey::kRequired)) {
    r.CheckKeys(*t, "formats", {"input", "compute", "output"});
    m.input = FloatFormat(r, *t, "formats", "input", TomlKey::kRequired);
    m.compute = FloatFormat(r, *t, "formats", "compute", TomlKey::kRequired);
    m.output = FloatFormat(r, *t, "formats", "output", TomlKey::kRequired);
    if (r.ok() && m.compute->d.precision < m.input->d.precision) {
      r.Fail(t->get("compute"), "formats.compute",
             Cat("narrower than the input format ", m.input->name,
                 ": the input must convert into it exactly"));
    }
  }
  std::array<bool, kFns> declared{};
  for (FnAccuracy& a : m.accuracy) a = FnAccuracy{};
  if (const toml::table* t = r.Table(root, "", "accuracy", TomlKey::kOptional)) {
    for (const auto& [key, node] : *t) {
      const std::string k(key.str());
      int fn = -1;
      for (int i = 0; i < kFns; ++i) {
        if (k == FnName(static_cast<Fn>(i))) fn = i;
      }
      if (fn < 0) {
        r.Fail(&node, Cat("accuracy.", k), "unknown key (valid: exp exp2 log tanh erf sqrt rsqrt div)");
        break;
      }
      FnAccuracy a;
      const std::string key_name = Cat("accuracy.", k);
      if (node.is_string() && *node.value<std::string>() == "correctly_rounded") {
        a.correctly_rounded = true;
      } else if (node.is_number()) {
        a.correctly_rounded = false;
        a.ulps = *node.value<double>();
      } else if (const toml::table* inline_table = node.as_table()) {
        // { ulps = k, abs = a, arg_rel = r }: within k ulps plus a of the exact value of the
        // function at an argument perturbed by at most r relatively (formula.h); abs and arg_rel
        // default to 0, and a division has no argument to perturb.
        a.correctly_rounded = false;
        if (fn == static_cast<int>(Fn::kDiv)) {
          r.CheckKeys(*inline_table, key_name, {"ulps", "abs"});
        } else {
          r.CheckKeys(*inline_table, key_name, {"ulps", "abs", "arg_rel"});
        }
        a.ulps = r.Number(*inline_table, key_name, "ulps", 0.5, 1e9, TomlKey::kRequired).value_or(0.5);
        a.abs = r.Number(*inline_table, key_name, "abs", 0, 1e300, TomlKey::kOptional).value_or(0);
        a.arg_rel = r.Number(*inline_table, key_name, "arg_rel", 0, 0.01, TomlKey::kOptional).value_or(0);
        if (!r.ok()) break;
      } else {
        r.Fail(&node, key_name,
               "must be \"correctly_rounded\", a number of ulps or { ulps = k, abs = a, arg_rel = r }");
        break;
      }
      if (!a.correctly_rounded && !(a.ulps >= 0.5 && a.ulps <= 1e9)) {
        r.Fail(&node, key_name, "must be \"correctly_rounded\" or ulps in 0.5..1e9");
        break;
      }
      m.accuracy[static_cast<size_t>(fn)] = a;
      declared[static_cast<size_t>(fn)] = true;
    }
  }
  std::set<std::string> keys = {"formats.input", "formats.compute", "formats.output"};
  if (root.contains("contract")) keys.insert("contract");
  for (int i = 0; i < kFns; ++i) {
    if (declared[static_cast<size_t>(i)]) keys.insert(Cat("accuracy.", FnName(static_cast<Fn>(i))));
  }
  if (const toml::table* t = r.Table(root, "", "functions", TomlKey::kRequired); t != nullptr && r.ok()) {
    for (const auto& [key, node] : *t) {
      const std::string k(key.str());
      const auto names = m.kind == CompositeKind::kAxis ? AxisFunctionNames() : ElementwiseFunctionNames();
      if (std::find(names.begin(), names.end(), k) == names.end()) {
        r.Fail(&node, Cat("functions.", k), Cat("unknown function (valid: ", Join(names, " "), ")"));
        break;
      }
      const std::optional<std::string> text = r.String(*t, "functions", k);
      if (!text) break;
      CompositeFunction fn;
      fn.name = k;
      fn.kind = m.kind;
      fn.input = m.input;
      fn.output = m.output;
      fn.accuracy = m.accuracy;
      fn.contract = m.contract;
      if (*text == "correctly_rounded") {
        fn.correctly_rounded = true;
      } else {
        absl::StatusOr<Formula> f = ParseFormula(*text, *m.compute);
        if (!f.ok()) {
          r.Fail(&node, Cat("functions.", k), std::string(f.status().message()));
          break;
        }
        if (f->row_terms && m.kind != CompositeKind::kAxis) {
          r.Fail(&node, Cat("functions.", k),
                 "uses w, b, eps, n or a reduction: only kind = \"axis\" models do");
          break;
        }
        for (int i = 0; i < kFns; ++i) {
          // sqrt and the division are IEEE 754 operations (correctly rounded) unless [accuracy]
          // says otherwise.
          if (f->uses[static_cast<size_t>(i)] && !declared[static_cast<size_t>(i)] &&
              static_cast<Fn>(i) != Fn::kSqrt && static_cast<Fn>(i) != Fn::kDiv) {
            r.Fail(&node, Cat("functions.", k),
                   Cat("calls ", FnName(static_cast<Fn>(i)), ", whose accuracy [accuracy] does not give"));
            break;
          }
        }
        fn.formula = *std::move(f);
      }
      keys.insert(Cat("functions.", k));
      m.functions.push_back(std::move(fn));
    }
    if (r.ok() && m.functions.empty()) r.Fail(t, "functions", "no function given");
  }
  ReadProvenance(r, root, keys, m.provenance, m.unconfirmed);
  if (!r.ok()) return r.status();
  return m;
}

}  // namespace

bool CompositeFunction::exact() const {
  if (correctly_rounded) return true;
  for (int i = 0; i < kFns; ++i) {
    if (formula.uses[static_cast<size_t>(i)] && !accuracy[static_cast<size_t>(i)].correctly_rounded) {
      return false;
    }
  }
  if (contract) {
    for (const FormulaNode& n : formula.nodes) {
      if (n.feeds_add) return false;
    }
  }
  return true;
}

uint64_t CompositeFunction::Emulate(uint64_t x) const {
  const FormatSpec& F = *formula.compute;
  const uint64_t xf = Convert(*input, F, x, OpEnv{}).bits;  // Exact: F is at least as wide.
  return Convert(F, *output, FormulaValue(formula, xf), OpEnv{}).bits;
}

Enclosure CompositeFunction::Enclose(uint64_t x) const {
  const FormatSpec& F = *formula.compute;
  const uint64_t xf = Convert(*input, F, x, OpEnv{}).bits;
  const Enclosure e = FormulaEnclosure(formula, accuracy, contract, xf);
  return {RoundedTo(*output, e.lo), RoundedTo(*output, e.hi)};
}

namespace {

// The row's inputs in the compute format (exact conversions), eps rounded to it.
absl::StatusOr<RowInputs> ToCompute(const CompositeFunction& fn, const CompositeFunction::Row& row,
                                    std::vector<uint64_t>& x, std::vector<uint64_t>& w,
                                    std::vector<uint64_t>& b) {
  const FormatSpec& F = *fn.formula.compute;
  const auto convert = [&](const FormatSpec* from, std::span<const uint64_t> in, std::vector<uint64_t>& out,
                           const char* what) -> absl::Status {
    out.resize(in.size());
    if (in.empty()) return absl::OkStatus();
    if (from == nullptr || from->kind != FormatKind::kFloat || from->d.precision > F.d.precision ||
        from->d.emax > F.d.emax) {
      return absl::InvalidArgumentError(Cat(what, " (", from != nullptr ? from->name : "?",
                                            ") does not convert exactly into the compute format ", F.name));
    }
    for (size_t i = 0; i < in.size(); ++i) out[i] = Convert(*from, F, in[i], OpEnv{}).bits;
    return absl::OkStatus();
  };
  if (absl::Status s = convert(fn.input, row.x, x, "the input"); !s.ok()) return s;
  if (absl::Status s = convert(row.weight_format, row.weight, w, "the weight"); !s.ok()) return s;
  if (absl::Status s = convert(row.bias_format, row.bias, b, "the bias"); !s.ok()) return s;
  RowInputs in;
  in.x = x;
  in.w = w;
  in.b = b;
  in.eps = DoubleToBits(F, row.eps);
  return in;
}

}  // namespace

absl::Status CompositeFunction::EmulateRow(const Row& row, std::span<uint64_t> out) const {
  std::vector<uint64_t> x, w, b, y(row.x.size());
  absl::StatusOr<RowInputs> in = ToCompute(*this, row, x, w, b);
  if (!in.ok()) return in.status();
  FormulaRowValue(formula, *in, y);
  for (size_t i = 0; i < out.size(); ++i) out[i] = Convert(*formula.compute, *output, y[i], OpEnv{}).bits;
  return absl::OkStatus();
}

absl::Status CompositeFunction::EncloseRow(const Row& row, std::span<Enclosure> out) const {
  std::vector<uint64_t> x, w, b;
  absl::StatusOr<RowInputs> in = ToCompute(*this, row, x, w, b);
  if (!in.ok()) return in.status();
  FormulaRowEnclosure(formula, accuracy, contract, *in, out);
  for (Enclosure& e : out) e = {RoundedTo(*output, e.lo), RoundedTo(*output, e.hi)};
  return absl::OkStatus();
}

const CompositeFunction* CompositeModel::Find(std::string_view fn) const {
  for (const CompositeFunction& f : functions) {
    if (f.name == fn) return &f;
  }
  return nullptr;
}

absl::StatusOr<CompositeModel> ParseCompositeModel(std::string_view toml_text,
                                                       std::string_view file_name) {
  return ParseTomlText<CompositeModel>(toml_text, file_name, &ParseTable);
}

absl::StatusOr<CompositeModel> LoadCompositeModel(const std::string& path) {
  return LoadNamedTomlFile<CompositeModel>(path, &ParseCompositeModel);
}

absl::StatusOr<std::vector<CompositeModel>> LoadCompositeModels(const std::string& dir) {
  return LoadTomlDirectory<CompositeModel>(dir, "models directory", &LoadCompositeModel);
}

}  // namespace fpconform::composite
