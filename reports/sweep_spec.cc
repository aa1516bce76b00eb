// Sweep files (TOML) and command-line filters: see sweep.h and reports/standard_sweep.toml.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include <toml++/toml.h>

#include "accumulation/model_catalog.h"
#include "formats/format_spec.h"
#include "formats/str_cat.h"
#include "formats/user_file.h"
#include "reports/sweep.h"

namespace fpconform::reports {

const std::vector<std::string>& ValidOps() {
  static const std::vector<std::string> kOps = {"matmul", "sum", "quantize"};
  return kOps;
}

const std::vector<std::string>& ValidDistributions() {
  static const std::vector<std::string> kDists = {"normal", "uniform_pm1", "uniform_01",
                                                  "loguniform", "normal_sqrtk"};
  return kDists;
}

namespace {

std::string Line(const toml::node& n) {
  return std::to_string(n.source().begin.line);
}

// The TOML type of a node, for "must be ..., got a string" messages.
std::string_view TypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date/time";
  }
}

// Reads a sweep file strictly, as ParseModel reads model files: an integer key takes a TOML
// integer only (not true, not 7.0), a number key an integer or a float (not a boolean), a string
// a string. Every error is "file:line: field: problem"; user text in it is escaped.
class SpecReader {
 public:
  explicit SpecReader(std::string_view file, SweepSpec& spec) : file_(file), spec_(spec) {}

  absl::Status Error(const toml::node* n, std::string_view key, std::string_view what) const {
    const int64_t line = n != nullptr ? static_cast<int64_t>(n->source().begin.line) : 0;
    return absl::InvalidArgumentError(Cat(file_, ":", line > 0 ? Line(*n) : std::string("?"),
                                          ": ", EscapeText(key, 200), ": ",
                                          EscapeText(what, 2000)));
  }

  // Remembers where `key` (SweepSpec::sources) came from.
  void Remember(const std::string& key, const toml::node& n, std::string field) {
    spec_.sources[key] = SweepSource{static_cast<int64_t>(n.source().begin.line), std::move(field)};
  }

  // An array of distinct strings; each element's position is remembered under
  // source_prefix + element when source_prefix is non-empty.
  absl::StatusOr<std::vector<std::string>> Strings(const toml::table& t, std::string_view key,
                                                   std::string_view dotted, bool required,
                                                   const std::string& source_prefix = "") {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
      if (required) return Error(&t, dotted, "missing (an array of strings)");
      return std::vector<std::string>{};
    }
    const toml::array* a = n->as_array();
    if (a == nullptr) {
      return Error(n, dotted, Cat("must be an array of strings, got ", TypeName(*n)));
    }
    std::vector<std::string> out;
    std::set<std::string> seen;  // Not a linear search: a 16 MiB file may list millions.
    for (const toml::node& e : *a) {
      const auto* s = e.as_string();
      if (s == nullptr) {
        return Error(&e, dotted, Cat("must be an array of strings, got ", TypeName(e)));
      }
      if (!seen.insert(s->get()).second) {
        return Error(&e, dotted, Cat("'", s->get(), "' listed twice"));
      }
      out.push_back(s->get());
      if (!source_prefix.empty()) Remember(source_prefix + s->get(), e, std::string(dotted));
    }
    return out;
  }

  // A non-empty string.
  absl::StatusOr<std::string> String(const toml::table& t, std::string_view key,
                                     std::string_view dotted) {
    const toml::node* n = t.get(key);
    if (n == nullptr) return Error(&t, dotted, "missing (a string)");
    const auto* s = n->as_string();
    if (s == nullptr) return Error(n, dotted, Cat("must be a string, got ", TypeName(*n)));
    if (s->get().empty()) return Error(n, dotted, "must not be empty");
    return s->get();
  }

  absl::StatusOr<int64_t> Int(const toml::table& t, std::string_view key, int64_t lo, int64_t hi,
                              std::optional<int64_t> def) {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
      if (def) return *def;
      return Error(&t, key, "missing (an integer)");
    }
    const auto* i = n->as_integer();
    if (i == nullptr) {
      return Error(n, key, Cat("must be an integer in ", lo, "..", hi, ", got ", TypeName(*n)));
    }
    if (i->get() < lo || i->get() > hi) {
      return Error(n, key, Cat("must be an integer in ", lo, "..", hi, ", got ", i->get()));
    }
    return i->get();
  }

  absl::StatusOr<double> Float(const toml::table& t, std::string_view key, double lo, double hi,
                               double def) {
    const toml::node* n = t.get(key);
    if (n == nullptr) return def;
    std::optional<double> v;
    if (const auto* f = n->as_floating_point()) v = f->get();
    if (const auto* i = n->as_integer()) v = static_cast<double>(i->get());
    if (!v || !(*v >= lo && *v <= hi)) {
      return Error(n, key, Cat("must be a number in ", lo, "..", hi,
                               v ? "" : Cat(", got ", TypeName(*n))));
    }
    return *v;
  }

  absl::Status CheckKeys(const toml::table& t, std::string_view where,
                         std::initializer_list<std::string_view> keys) {
    for (const auto& [k, v] : t) {
      if (std::find(keys.begin(), keys.end(), k.str()) == keys.end()) {
        return Error(&v, Cat(where, k.str()),
                     Cat("unknown key (valid: ", Join(keys, ", "), ")"));
      }
    }
    return absl::OkStatus();
  }

 private:
  std::string file_;
  SweepSpec& spec_;
};

// "unknown <what> 'x' (valid: ...)" for the first of `got` not in `valid`. `escape`: the name
// is escaped here (command-line names); names from a file are escaped by SpecReader::Error.
absl::Status CheckNames(const std::vector<std::string>& got, const std::vector<std::string>& valid,
                        std::string_view what, bool escape = true) {
  const std::set<std::string> valid_set(valid.begin(), valid.end());
  for (const std::string& g : got) {
    if (!valid_set.contains(g)) {
      return absl::InvalidArgumentError(Cat("unknown ", what, " '",
                                            escape ? EscapeText(g, 200) : g,
                                            "' (valid: ", Join(valid, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

// The element of array node `n` equal to `value` (for its line), else `n`.
const toml::node* Element(const toml::node* n, std::string_view value) {
  const toml::array* a = n != nullptr ? n->as_array() : nullptr;
  if (a == nullptr) return n;
  for (const toml::node& e : *a) {
    if (const auto* s = e.as_string(); s != nullptr && s->get() == value) return &e;
  }
  return n;
}

#define FPC_ASSIGN(lhs, expr)             \
  do {                                    \
    auto _r = (expr);                     \
    if (!_r.ok()) return _r.status();     \
    lhs = *std::move(_r);                 \
  } while (0)

// ks: distinct K values, each position remembered ("ks/<K>").
absl::Status ReadKs(SpecReader& r, const toml::table& root, SweepSpec& spec) {
  const toml::node* ks_node = root.get("ks");
  const toml::array* ks = ks_node != nullptr ? ks_node->as_array() : nullptr;
  if (ks_node == nullptr) return r.Error(&root, "ks", "missing (an array of K >= 1)");
  if (ks == nullptr || ks->empty()) {
    return r.Error(ks_node, "ks", "must be a non-empty array of integers K >= 1");
  }
  std::set<int64_t> seen_ks;
  for (const toml::node& e : *ks) {
    const auto* k = e.as_integer();
    if (k == nullptr || k->get() < 1 || k->get() > kMaxSweepK) {
      return r.Error(&e, "ks", Cat("must be integers in 1..", kMaxSweepK));
    }
    if (!seen_ks.insert(k->get()).second) {
      return r.Error(&e, "ks", Cat(k->get(), " listed twice"));
    }
    spec.ks.push_back(k->get());
    r.Remember(Cat("ks/", k->get()), e, "ks");
  }
  return absl::OkStatus();
}

// The top-level scalars and lists: seed .. quantize_elements.
absl::Status ReadTopLevel(SpecReader& r, const toml::table& root, SweepSpec& spec) {
  int64_t v = 0;
  FPC_ASSIGN(v, r.Int(root, "seed", 0, INT64_MAX, std::nullopt));
  spec.seed = static_cast<uint64_t>(v);
  FPC_ASSIGN(v, r.Int(root, "samples", 1, kMaxSweepSamples, std::nullopt));
  spec.samples = static_cast<int>(v);
  FPC_ASSIGN(v, r.Int(root, "min_samples", 1, kMaxSweepSamples, spec.samples));
  spec.min_samples = static_cast<int>(std::min<int64_t>(v, spec.samples));
  FPC_ASSIGN(spec.max_terms_per_row,
             r.Int(root, "max_terms_per_row", 1, INT64_MAX, int64_t{1} << 40));
  FPC_ASSIGN(spec.factor, r.Float(root, "factor", 1, 1000, 2));
  FPC_ASSIGN(spec.lambda, r.Float(root, "lambda", 0.1, 100, 1));
  FPC_ASSIGN(spec.ops, r.Strings(root, "ops", "ops", true));
  if (absl::Status s = CheckNames(spec.ops, ValidOps(), "op", false); !s.ok()) {
    return r.Error(root.get("ops"), "ops", std::string(s.message()));
  }
  if (spec.ops.empty()) return r.Error(root.get("ops"), "ops", "must name at least one op");
  if (absl::Status s = ReadKs(r, root, spec); !s.ok()) return s;
  FPC_ASSIGN(spec.distributions, r.Strings(root, "distributions", "distributions", true));
  if (absl::Status s =
          CheckNames(spec.distributions, ValidDistributions(), "distribution", false);
      !s.ok()) {
    return r.Error(root.get("distributions"), "distributions", std::string(s.message()));
  }
  if (spec.distributions.empty()) {
    return r.Error(root.get("distributions"), "distributions",
                   "must name at least one distribution");
  }
  FPC_ASSIGN(spec.quantize_formats,
             r.Strings(root, "quantize_formats", "quantize_formats", false));
  for (const std::string& f : spec.quantize_formats) {
    const FormatSpec* fs = FindFormat(f);
    if (fs == nullptr || fs->width != 8 || f == "uint8" || f == "float8_e8m0fnu") {
      return r.Error(Element(root.get("quantize_formats"), f), "quantize_formats",
                     Cat("'", f, "' is not a signed 8-bit format"));
    }
  }
  FPC_ASSIGN(spec.quantize_elements,
             r.Int(root, "quantize_elements", 1, kMaxSweepK, 4096));
  return absl::OkStatus();
}

// [[dtype]] tables.
absl::Status ReadDtypes(SpecReader& r, const toml::table& root, SweepSpec& spec) {
  std::set<std::string> dtype_names;
  if (const toml::node* dn = root.get("dtype")) {
    const toml::array* arr = dn->as_array();
    if (arr == nullptr) return r.Error(dn, "dtype", "must be an array of tables ([[dtype]])");
    for (size_t i = 0; i < arr->size(); ++i) {
      const toml::table* t = (*arr)[i].as_table();
      const std::string where = Cat("dtype[", i, "].");
      if (t == nullptr) return r.Error(&(*arr)[i], where, "must be a table");
      if (absl::Status s = r.CheckKeys(*t, where, {"name", "matmul", "sum", "integer"}); !s.ok()) {
        return s;
      }
      DtypeSpec d;
      FPC_ASSIGN(d.name, r.String(*t, "name", where + "name"));
      if (!dtype_names.insert(d.name).second) {
        return r.Error(t->get("name"), where + "name", Cat("duplicate '", d.name, "'"));
      }
      if (d.name == "quantize") {
        return r.Error(t->get("name"), where + "name",
                       "'quantize' is reserved (the dtype of quantize cross pairs)");
      }
      r.Remember(Cat("dtype/", d.name), *t->get("name"), where + "name");
      FPC_ASSIGN(d.matmul, r.Strings(*t, "matmul", where + "matmul", false,
                                     Cat("dtype/", d.name, "/matmul/")));
      FPC_ASSIGN(d.sum, r.Strings(*t, "sum", where + "sum", false,
                                  Cat("dtype/", d.name, "/sum/")));
      if (const toml::node* in = t->get("integer")) {
        const auto* b = in->as_boolean();
        if (b == nullptr) {
          return r.Error(in, where + "integer",
                         Cat("must be true or false, got ", TypeName(*in)));
        }
        d.integer = b->get();
      }
      if (d.integer) {
        // int8 x int8 -> int32 is computed exactly (no platform model); a list would be
        // ignored (matmul) or meaningless (sum: there is no integer sum).
        for (const char* list : {"matmul", "sum"}) {
          if (const toml::node* n = t->get(list)) {
            return r.Error(n, where + list,
                           Cat("an integer dtype (integer = true) takes no platform list: its "
                               "matmul is int8 x int8 -> int32, exact",
                               std::string_view(list) == "sum" ? ", and it has no sum" : ""));
          }
        }
      }
      if (!d.integer && d.matmul.empty() && d.sum.empty()) {
        return r.Error(t, where.substr(0, where.size() - 1),
                       Cat("dtype '", d.name, "' has no matmul or sum platforms (and is not "
                           "integer = true): it would add no rows"));
      }
      spec.dtypes.push_back(std::move(d));
    }
  }
  return absl::OkStatus();
}

// Every op of `ops` must be produced by some table (else it would silently add nothing).
absl::Status CheckOpsHaveRows(SpecReader& r, const toml::table& root, const SweepSpec& spec) {
  for (const std::string& op : spec.ops) {
    bool produces = false;
    if (op == "quantize") {
      produces = !spec.quantize_formats.empty();
    } else {
      for (const DtypeSpec& d : spec.dtypes) {
        produces |= op == "sum" ? !d.sum.empty() : (!d.matmul.empty() || d.integer);
      }
    }
    if (!produces) {
      return r.Error(Element(root.get("ops"), op), "ops",
                     op == "quantize" ? std::string("'quantize' needs quantize_formats")
                                      : Cat("'", op, "' is listed, but no [[dtype]] has ", op,
                                            op == "matmul" ? " platforms (or integer = true)"
                                                           : " platforms"));
    }
  }
  return absl::OkStatus();
}

// [[cross]] tables (after the dtypes and quantize_formats they refer to).
absl::Status ReadCrossPairs(SpecReader& r, const toml::table& root, SweepSpec& spec) {
  std::map<std::string, size_t> dtype_index;  // Name -> index in spec.dtypes.
  for (size_t i = 0; i < spec.dtypes.size(); ++i) dtype_index[spec.dtypes[i].name] = i;
  std::set<std::string> cross_names;
  if (const toml::node* cn = root.get("cross")) {
    const toml::array* arr = cn->as_array();
    if (arr == nullptr) return r.Error(cn, "cross", "must be an array of tables ([[cross]])");
    for (size_t i = 0; i < arr->size(); ++i) {
      const toml::table* t = (*arr)[i].as_table();
      const std::string where = Cat("cross[", i, "].");
      if (t == nullptr) return r.Error(&(*arr)[i], where, "must be a table");
      if (absl::Status s = r.CheckKeys(*t, where, {"name", "dtype", "op", "a", "b"}); !s.ok()) {
        return s;
      }
      CrossSpec c;
      FPC_ASSIGN(c.name, r.String(*t, "name", where + "name"));
      if (!cross_names.insert(c.name).second) {
        return r.Error(t->get("name"), where + "name", Cat("duplicate '", c.name, "'"));
      }
      FPC_ASSIGN(c.dtype, r.String(*t, "dtype", where + "dtype"));
      FPC_ASSIGN(c.a, r.String(*t, "a", where + "a"));
      const std::string key = Cat("cross/", c.name, "/");
      r.Remember(key + "dtype", *t->get("dtype"), where + "dtype");
      r.Remember(key + "a", *t->get("a"), where + "a");
      if (const toml::node* on = t->get("op")) {
        const std::optional<std::string> op = on->value<std::string>();
        if (!op || (*op != "matmul" && *op != "sum")) {
          return r.Error(on, where + "op", "must be \"matmul\" or \"sum\"");
        }
        c.op = *op;
      }
      FPC_ASSIGN(c.b, r.Strings(*t, "b", where + "b", true, key + "b/"));
      if (c.b.empty()) return r.Error(t->get("b"), where + "b", "must name at least one platform");
      if (std::find(c.b.begin(), c.b.end(), c.a) != c.b.end()) {
        return r.Error(Element(t->get("b"), c.a), where + "b",
                       Cat("'", c.a, "' is also a: a pair compares two different platforms"));
      }
      if (c.dtype == "quantize" && c.op != "matmul") {
        return r.Error(t->get("op"), where + "op", "a quantize pair takes no op");
      }
      if (c.dtype == "quantize") {
        if (c.b.size() != 1) {
          return r.Error(t->get("b"), where + "b",
                         Cat("a quantize pair compares one format with one other: b must have "
                             "exactly 1 entry, got ", c.b.size()));
        }
        for (const auto& [field, f] : {std::pair<const char*, const std::string&>{"a", c.a},
                                       {"b", c.b[0]}}) {
          if (std::find(spec.quantize_formats.begin(), spec.quantize_formats.end(), f) ==
              spec.quantize_formats.end()) {
            return r.Error(Element(t->get(field), f), where + field,
                           Cat("'", f, "' is not in quantize_formats (valid: ",
                               Join(spec.quantize_formats, ", "), ")"));
          }
        }
      } else {
        auto it = dtype_index.find(c.dtype);
        const DtypeSpec* d = it != dtype_index.end() ? &spec.dtypes[it->second] : nullptr;
        if (d == nullptr) {
          return r.Error(t->get("dtype"), where + "dtype",
                         Cat("'", c.dtype, "' is not a [[dtype]] name (nor 'quantize')"));
        }
        if (d->integer) {
          return r.Error(t->get("dtype"), where + "dtype",
                         Cat("'", c.dtype, "' is an integer dtype (exact, no platforms): "
                             "there is nothing to compare"));
        }
        if ((c.op == "sum" ? d->sum : d->matmul).empty()) {
          return r.Error(t->get("dtype"), where + "dtype",
                         Cat("dtype '", c.dtype, "' has no ", c.op, " platforms, so this pair "
                             "would never run (cross pairs compare ", c.op, " outputs)"));
        }
      }
      spec.cross.push_back(std::move(c));
    }
  }
  return absl::OkStatus();
}

// One function per part of the file, in file order; the first error is returned.
absl::StatusOr<SweepSpec> Parse(const toml::table& root, std::string_view file) {
  SweepSpec spec;
  SpecReader r(file, spec);
  if (absl::Status s = r.CheckKeys(root, "",
                                   {"seed", "samples", "min_samples", "max_terms_per_row",
                                    "factor", "lambda", "ops", "ks", "distributions",
                                    "quantize_formats", "quantize_elements", "dtype", "cross"});
      !s.ok()) {
    return s;
  }
  spec.source = std::string(file);
  if (absl::Status s = ReadTopLevel(r, root, spec); !s.ok()) return s;
  if (absl::Status s = ReadDtypes(r, root, spec); !s.ok()) return s;
  if (absl::Status s = CheckOpsHaveRows(r, root, spec); !s.ok()) return s;
  if (absl::Status s = ReadCrossPairs(r, root, spec); !s.ok()) return s;
  return spec;
}

}  // namespace

std::string SweepSpec::Where(const std::string& key) const {
  auto it = sources.find(key);
  if (it == sources.end()) return source;
  return Cat(source, ":", it->second.line, ": ", it->second.field);
}

namespace {

// The inputs a platform is given: input formats and the conversion it applies first. Cross pairs
// compare models that take the same inputs as the platforms of their dtype.
using InputSignature = std::tuple<const FormatSpec*, const FormatSpec*, const FormatSpec*>;

InputSignature Signature(const Model& m) {
  return {m.inputs.a, &m.InputB(), m.inputs.convert_to};
}

std::string DescribeInputs(const Model& m) {
  const auto [a, b, conv] = Signature(m);
  std::string s = a == b ? std::string(a->name) : Cat(a->name, " x ", b->name);
  if (conv != nullptr) s += Cat(" converted to ", conv->name);
  return s;
}

absl::Status ModelError(const SweepSpec& spec, const std::string& key, std::string_view name,
                        std::string_view what) {
  return absl::InvalidArgumentError(
      Cat(spec.Where(key), ": '", EscapeText(name, 200), "': ", what));
}

// The model `name` of a platform list, or the error naming the sweep file's entry.
absl::StatusOr<const Model*> PlatformModel(const SweepSpec& spec, const ModelCatalog& catalog,
                                           const std::string& key, const std::string& name) {
  if (catalog.IsEnvelope(name)) {
    return ModelError(spec, key, name,
                      "is an envelope; list its member models here (envelopes may be the b "
                      "side of a [[cross]] pair)");
  }
  const absl::StatusOr<Model>& m = catalog.Find(name);
  if (!m.ok()) return ModelError(spec, key, name, std::string(m.status().message()));
  return &*m;
}

}  // namespace

absl::Status CheckSweepModels(const SweepSpec& spec, const ModelCatalog& catalog) {
  std::map<std::string, std::vector<const Model*>> matmul_models, sum_models;  // dtype -> platforms.
  for (const DtypeSpec& d : spec.dtypes) {
    if (d.integer) continue;
    for (const bool sum : {false, true}) {
      for (const std::string& p : sum ? d.sum : d.matmul) {
        const std::string key = Cat("dtype/", d.name, sum ? "/sum/" : "/matmul/", p);
        absl::StatusOr<const Model*> m = PlatformModel(spec, catalog, key, p);
        if (!m.ok()) return m.status();
        if (sum ? !(*m)->op_sum : !(*m)->op_matmul) {
          return ModelError(spec, key, p,
                            Cat("does not define ", sum ? "sum" : "matmul",
                                " (its operations), so it cannot be a ",
                                sum ? "sum" : "matmul", " platform"));
        }
        (sum ? sum_models : matmul_models)[d.name].push_back(*m);
      }
    }
  }
  for (const CrossSpec& c : spec.cross) {
    if (c.dtype == "quantize") continue;
    const bool sum = c.op == "sum";
    const std::vector<const Model*>& platforms = (sum ? sum_models : matmul_models)[c.dtype];
    std::set<InputSignature> signatures;
    std::vector<std::string> described;
    for (const Model* m : platforms) {
      if (signatures.insert(Signature(*m)).second) described.push_back(DescribeInputs(*m));
    }
    if (catalog.IsEnvelope(c.a)) {
      return ModelError(spec, Cat("cross/", c.name, "/a"), c.a,
                        "is an envelope; a is one reference platform (an envelope goes on the b "
                        "side)");
    }
    std::vector<std::pair<std::string, std::string>> sides = {{Cat("cross/", c.name, "/a"), c.a}};
    for (const std::string& b : c.b) sides.emplace_back(Cat("cross/", c.name, "/b/", b), b);
    for (const auto& [key, name] : sides) {
      absl::StatusOr<std::vector<const Model*>> models = catalog.Expand(name);
      if (!models.ok()) return ModelError(spec, key, name, std::string(models.status().message()));
      for (const Model* m : *models) {
        const std::string who = m->name == name ? "" : Cat("member '", m->name, "' ");
        if (!(sum ? m->op_sum : m->op_matmul)) {
          return ModelError(spec, key, name,
                            Cat(who, "does not define ", c.op, " (its operations): cross pairs "
                                "compare ", c.op, " outputs"));
        }
        if (!signatures.empty() && !signatures.contains(Signature(*m))) {
          return ModelError(
              spec, key, name,
              Cat(who, "takes ", DescribeInputs(*m), " inputs, but the ", c.op, " platforms of dtype '",
                  EscapeText(c.dtype, 200), "' take ", Join(described, " or "),
                  " (a model of another dtype?)"));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SweepSpec> ParseSweepSpec(std::string_view toml_text, std::string_view file_name) {
  toml::table root;
  try {
    root = toml::parse(toml_text, file_name);
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(Cat(file_name, ":", e.source().begin.line,
                                                   ": TOML syntax: ", e.description()));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(Cat(file_name, ": ", e.what()));
  }
  try {
    return Parse(root, file_name);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(Cat(file_name, ": ", e.what()));
  }
}

absl::StatusOr<SweepSpec> LoadSweepSpec(const std::string& path) {
  absl::StatusOr<std::string> text = ReadUserFile(path, kMaxTextFileBytes, "sweep file");
  if (!text.ok()) return text.status();
  return ParseSweepSpec(*text, path);
}

absl::StatusOr<SweepSpec> ApplyFilter(SweepSpec spec, const SweepFilter& f) {
  if (absl::Status s = CheckNames(f.ops, ValidOps(), "op"); !s.ok()) return s;
  if (absl::Status s = CheckNames(f.distributions, ValidDistributions(), "distribution");
      !s.ok()) {
    return s;
  }
  // These two replace the spec's lists: a repeated entry would repeat rows.
  std::set<std::string> seen_dists;
  for (const std::string& d : f.distributions) {
    if (!seen_dists.insert(d).second) {
      return absl::InvalidArgumentError(Cat("distribution '", d, "' given twice"));
    }
  }
  std::set<int64_t> seen_ks;
  for (const int64_t k : f.ks) {
    if (k < 1 || k > kMaxSweepK) {
      return absl::InvalidArgumentError(Cat("K ", k, " is not an integer in 1..", kMaxSweepK));
    }
    if (!seen_ks.insert(k).second) return absl::InvalidArgumentError(Cat("K ", k, " given twice"));
  }
  if (f.samples < 0 || f.samples > kMaxSweepSamples) {
    return absl::InvalidArgumentError(
        Cat("samples ", f.samples, " is not an integer in 1..", kMaxSweepSamples));
  }
  std::vector<std::string> dtype_names, platform_names;
  std::set<std::string> platform_set;
  for (const DtypeSpec& d : spec.dtypes) {
    dtype_names.push_back(d.name);
    for (const auto* list : {&d.matmul, &d.sum}) {
      for (const std::string& p : *list) {
        if (platform_set.insert(p).second) platform_names.push_back(p);
      }
    }
  }
  for (const std::string& q : spec.quantize_formats) dtype_names.push_back(q);
  if (absl::Status s = CheckNames(f.dtypes, dtype_names, "dtype"); !s.ok()) return s;
  if (absl::Status s = CheckNames(f.platforms, platform_names, "platform"); !s.ok()) return s;
  // Sets, not linear searches: lists from a file or a command line may be long.
  const std::set<std::string> f_ops(f.ops.begin(), f.ops.end());
  const std::set<std::string> f_dtypes(f.dtypes.begin(), f.dtypes.end());
  const std::set<std::string> f_platforms(f.platforms.begin(), f.platforms.end());
  auto keep = [](const std::set<std::string>& filter, const std::string& name) {
    return filter.empty() || filter.contains(name);
  };
  if (!f.ops.empty()) {
    std::vector<std::string> ops;
    for (const std::string& o : spec.ops) {
      if (keep(f_ops, o)) ops.push_back(o);
    }
    for (const std::string& o : f.ops) {  // f.ops are valid names: at most 3 of them.
      if (std::find(ops.begin(), ops.end(), o) == ops.end()) ops.push_back(o);
    }
    spec.ops = ops;
  }
  if (!f.distributions.empty()) spec.distributions = f.distributions;
  if (!f.ks.empty()) spec.ks = f.ks;
  std::vector<DtypeSpec> dtypes;
  for (DtypeSpec& d : spec.dtypes) {
    if (!keep(f_dtypes, d.name)) continue;
    for (auto* list : {&d.matmul, &d.sum}) {
      std::vector<std::string> kept;
      for (const std::string& p : *list) {
        if (keep(f_platforms, p)) kept.push_back(p);
      }
      *list = kept;
    }
    if (!f.platforms.empty() && d.matmul.empty() && d.sum.empty() && !d.integer) continue;
    if (!f.platforms.empty() && d.integer) continue;
    dtypes.push_back(std::move(d));
  }
  spec.dtypes = std::move(dtypes);
  std::set<std::string> kept_dtypes;
  for (const DtypeSpec& d : spec.dtypes) kept_dtypes.insert(d.name);
  std::vector<std::string> qf;
  for (const std::string& q : spec.quantize_formats) {
    if (keep(f_dtypes, q)) qf.push_back(q);
  }
  spec.quantize_formats = qf;
  std::vector<CrossSpec> cross;
  for (CrossSpec& c : spec.cross) {
    const bool dtype_ok =
        c.dtype == "quantize"
            ? std::find(qf.begin(), qf.end(), c.a) != qf.end() &&
                  std::find(qf.begin(), qf.end(), c.b[0]) != qf.end()
            : kept_dtypes.contains(c.dtype);
    bool platforms_ok = true;
    if (c.dtype != "quantize" && !f.platforms.empty()) {
      platforms_ok = keep(f_platforms, c.a);
      for (const std::string& b : c.b) platforms_ok = platforms_ok && keep(f_platforms, b);
    }
    if (dtype_ok && platforms_ok) cross.push_back(std::move(c));
  }
  spec.cross = std::move(cross);
  if (f.quick) {
    spec.ks = f.ks.empty() ? std::vector<int64_t>{64, 256, 1024} : f.ks;
    spec.samples = std::min(spec.samples, 24);
    spec.min_samples = std::min(spec.min_samples, spec.samples);
    spec.quantize_elements = std::min<int64_t>(spec.quantize_elements, 1024);
    if (f.distributions.empty()) spec.distributions = {"normal", "uniform_01"};
  }
  if (f.samples > 0) {
    spec.samples = f.samples;
    spec.min_samples = std::min(spec.min_samples, f.samples);
  }
  if (f.seed) spec.seed = *f.seed;
  return spec;
}

}  // namespace fpconform::reports
