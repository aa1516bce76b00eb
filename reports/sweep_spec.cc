// Sweep files (TOML) and command-line filters: see sweep.h and reports/standard_sweep.toml.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <toml++/toml.h>

#include "accumulation/model_catalog.h"
#include "base/str_cat.h"
#include "base/user_file.h"
#include "cases/toml_reader.h"
#include "composite/model.h"
#include "formats/format_spec.h"
#include "reports/sweep.h"

namespace fpconform::reports {

const std::vector<std::string>& ValidOps() {
  static const std::vector<std::string> kOps = {"matmul", "sum", "quantize", "composite", "attention"};
  return kOps;
}

const std::vector<std::string>& ValidDistributions() {
  static const std::vector<std::string> kDists = {"normal", "uniform_pm1", "uniform_01",
                                                  "loguniform", "normal_sqrtk"};
  return kDists;
}

const std::vector<std::string>& ValidCompositeDistributions() {
  static const std::vector<std::string> kDists = {"normal", "wide", "dc_offset"};
  return kDists;
}

const std::vector<std::string>& ValidAttentionDistributions() {
  static const std::vector<std::string> kDists = {"normal", "peaked"};
  return kDists;
}

namespace {

// Remembers where `key` (SweepSpec::sources) came from.
void Remember(SweepSpec& spec, const std::string& key, const toml::node& n, std::string field) {
  spec.sources[key] = SweepSource{static_cast<int64_t>(n.source().begin.line), std::move(field)};
}

// A required non-empty string (a name or a platform).
std::optional<std::string> Name(TomlReader& r, const toml::table& t, std::string_view prefix,
                                std::string_view key) {
  std::optional<std::string> s = r.String(t, prefix, key, TomlKey::kRequired);
  if (s && s->empty()) {
    r.Fail(t.get(key), TomlReader::Dotted(prefix, key), "must not be empty");
    return std::nullopt;
  }
  return s;
}

// An array of distinct strings (empty when absent or on an error), each element's position
// remembered under source_prefix + element.
std::vector<std::string> RememberedStrings(TomlReader& r, SweepSpec& spec, const toml::table& t,
                                           std::string_view prefix, std::string_view key,
                                           TomlKey need, const std::string& source_prefix) {
  std::vector<const toml::node*> nodes;
  std::optional<std::vector<std::string>> v = r.Strings(t, prefix, key, need, &nodes);
  if (!v) return {};
  for (size_t i = 0; i < v->size(); ++i) {
    Remember(spec, source_prefix + (*v)[i], *nodes[i], TomlReader::Dotted(prefix, key));
  }
  return *std::move(v);
}

// "unknown <what> 'x' (valid: ...)" for the first of `got` not in `valid`. `escape`: the name
// is escaped here (command-line names); names from a file are escaped by TomlReader::Fail.
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

// The elements of array a (key `field`): distinct integers in lo..hi, appended to `out`, each
// also passed to `each` with its node (when set). False after an error (r failed).
bool ReadDistinctInts(TomlReader& r, const toml::array& a, const std::string& field, int64_t lo, int64_t hi,
                      std::vector<int64_t>& out,
                      const std::function<void(int64_t, const toml::node&)>& each = nullptr) {
  std::set<int64_t> seen;
  for (const toml::node& e : a) {
    const auto* k = e.as_integer();
    if (k == nullptr || k->get() < lo || k->get() > hi) {
      r.Fail(&e, field, Cat("must be integers in ", lo, "..", hi));
      return false;
    }
    if (!seen.insert(k->get()).second) {
      r.Fail(&e, field, Cat(k->get(), " listed twice"));
      return false;
    }
    out.push_back(k->get());
    if (each) each(k->get(), e);
  }
  return true;
}

// ks: distinct K values, each position remembered ("ks/<K>").
void ReadKs(TomlReader& r, const toml::table& root, SweepSpec& spec) {
  if (!r.ok()) return;
  const toml::node* ks_node = root.get("ks");
  const toml::array* ks = ks_node != nullptr ? ks_node->as_array() : nullptr;
  if (ks_node == nullptr) return r.Fail(nullptr, "ks", "required key missing");
  if (ks == nullptr || ks->empty()) {
    return r.Fail(ks_node, "ks", "must be a non-empty array of integers K >= 1");
  }
  ReadDistinctInts(r, *ks, "ks", 1, kMaxSweepK, spec.ks,
                   [&spec](int64_t k, const toml::node& e) { Remember(spec, Cat("ks/", k), e, "ks"); });
}

// A list of names from `valid` that must name at least one (ops, distributions).
std::vector<std::string> ReadNameList(TomlReader& r, const toml::table& root, std::string_view key,
                                      const std::vector<std::string>& valid,
                                      std::string_view what) {
  std::vector<std::string> names =
      r.Strings(root, "", key, TomlKey::kRequired).value_or(std::vector<std::string>{});
  if (!r.ok()) return names;
  if (absl::Status s = CheckNames(names, valid, what, false); !s.ok()) {
    r.Fail(root.get(key), key, std::string(s.message()));
  } else if (names.empty()) {
    r.Fail(root.get(key), key, Cat("must name at least one ", what));
  }
  return names;
}

// The top-level scalars and lists: seed .. quantize_elements.
void ReadTopLevel(TomlReader& r, const toml::table& root, SweepSpec& spec) {
  spec.seed = static_cast<uint64_t>(r.Int(root, "", "seed", 0, INT64_MAX, TomlKey::kRequired)
                                        .value_or(0));
  spec.samples = static_cast<int>(
      r.Int(root, "", "samples", 1, kMaxSweepSamples, TomlKey::kRequired).value_or(1));
  spec.min_samples = static_cast<int>(std::min<int64_t>(
      r.Int(root, "", "min_samples", 1, kMaxSweepSamples).value_or(spec.samples), spec.samples));
  spec.max_terms_per_row =
      r.Int(root, "", "max_terms_per_row", 1, INT64_MAX).value_or(int64_t{1} << 40);
  spec.factor = r.Number(root, "", "factor", 1, 1000).value_or(2);
  spec.lambda = r.Number(root, "", "lambda", 0.1, 100).value_or(1);
  spec.ops = ReadNameList(r, root, "ops", ValidOps(), "op");
  ReadKs(r, root, spec);
  spec.distributions = ReadNameList(r, root, "distributions", ValidDistributions(),
                                    "distribution");
  spec.quantize_formats =
      r.Strings(root, "", "quantize_formats").value_or(std::vector<std::string>{});
  for (const std::string& f : spec.quantize_formats) {
    const FormatSpec* fs = FindFormat(f);
    if (fs == nullptr || fs->width != 8 || f == "uint8" || f == "float8_e8m0fnu") {
      return r.Fail(Element(root.get("quantize_formats"), f), "quantize_formats",
                    Cat("'", f, "' is not a signed 8-bit format"));
    }
  }
  spec.quantize_elements = r.Int(root, "", "quantize_elements", 1, kMaxSweepK).value_or(4096);
}

// Entry i of an array of tables ([[dtype]], [[cross]]: key `what`): the table, its keys checked
// against `keys`, and its name, which must be new to `names` (where it is added).
struct NamedEntry {
  const toml::table* t = nullptr;
  std::string where;  // "<what>[i]", the prefix of its fields in messages.
  std::string name;
};
std::optional<NamedEntry> ReadNamedEntry(TomlReader& r, const toml::array& arr, size_t i, std::string_view what,
                                         std::initializer_list<std::string_view> keys, std::set<std::string>& names) {
  NamedEntry e{arr[i].as_table(), Cat(what, "[", i, "]"), ""};
  if (e.t == nullptr) {
    r.Fail(&arr[i], e.where, "must be a table");
    return std::nullopt;
  }
  r.CheckKeys(*e.t, e.where, keys);
  const std::optional<std::string> name = Name(r, *e.t, e.where, "name");
  if (!name) return std::nullopt;
  e.name = *name;
  if (!names.insert(e.name).second) {
    r.Fail(e.t->get("name"), e.where + ".name", Cat("duplicate '", e.name, "'"));
    return std::nullopt;
  }
  return e;
}

// The optional root section `section` of type T (toml::table: [section]; toml::array:
// [[section]]): null when absent, after an error, or (failing) when it is of another type.
template <typename T>
const T* RootSection(TomlReader& r, const toml::table& root, std::string_view section) {
  const toml::node* n = root.get(section);
  if (n == nullptr || !r.ok()) return nullptr;
  const T* v = n->as<T>();
  if (v == nullptr) {
    r.Fail(n, section, std::is_same_v<T, toml::table> ? Cat("must be a table ([", section, "])")
                                                      : Cat("must be an array of tables ([[", section, "]])"));
  }
  return v;
}

// [[dtype]] tables.
void ReadDtypes(TomlReader& r, const toml::table& root, SweepSpec& spec) {
  const toml::array* arr = RootSection<toml::array>(r, root, "dtype");
  if (arr == nullptr) return;
  std::set<std::string> dtype_names;
  for (size_t i = 0; i < arr->size() && r.ok(); ++i) {
    const std::optional<NamedEntry> entry =
        ReadNamedEntry(r, *arr, i, "dtype", {"name", "matmul", "sum", "integer"}, dtype_names);
    if (!entry) return;
    const toml::table* t = entry->t;
    const std::string& where = entry->where;
    DtypeSpec d;
    d.name = entry->name;
    if (d.name == "quantize") {
      return r.Fail(t->get("name"), where + ".name",
                    "'quantize' is reserved (the dtype of quantize cross pairs)");
    }
    Remember(spec, Cat("dtype/", d.name), *t->get("name"), where + ".name");
    d.matmul = RememberedStrings(r, spec, *t, where, "matmul", TomlKey::kOptional,
                                 Cat("dtype/", d.name, "/matmul/"));
    d.sum = RememberedStrings(r, spec, *t, where, "sum", TomlKey::kOptional,
                              Cat("dtype/", d.name, "/sum/"));
    d.integer = r.Bool(*t, where, "integer").value_or(false);
    if (!r.ok()) return;
    if (d.integer) {
      // int8 x int8 -> int32 is computed exactly (no platform model); a list would be
      // ignored (matmul) or meaningless (sum: there is no integer sum).
      for (const char* list : {"matmul", "sum"}) {
        if (const toml::node* n = t->get(list)) {
          return r.Fail(n, TomlReader::Dotted(where, list),
                        Cat("an integer dtype (integer = true) takes no platform list: its "
                            "matmul is int8 x int8 -> int32, exact",
                            std::string_view(list) == "sum" ? ", and it has no sum" : ""));
        }
      }
    }
    if (!d.integer && d.matmul.empty() && d.sum.empty()) {
      return r.Fail(t, where,
                    Cat("dtype '", d.name, "' has no matmul or sum platforms (and is not "
                        "integer = true): it would add no rows"));
    }
    spec.dtypes.push_back(std::move(d));
  }
}

// The optional key `cross` of [composite] or [attention] (`section`, table t) into `cross`:
// [reference, port] pairs of two different models, each among `platforms`.
void ReadModelPairs(TomlReader& r, const toml::table& t, std::string_view section,
                    const std::vector<std::string>& platforms, std::vector<std::pair<std::string, std::string>>& cross) {
  const toml::node* cn = t.get("cross");
  if (cn == nullptr) return;
  const std::string key = Cat(section, ".cross");
  const toml::array* a = cn->as_array();
  if (a == nullptr) return r.Fail(cn, key, "must be an array of [reference, port] pairs");
  for (const toml::node& e : *a) {
    const toml::array* pair = e.as_array();
    const auto* ra = pair != nullptr && pair->size() == 2 ? (*pair)[0].as_string() : nullptr;
    const auto* rb = pair != nullptr && pair->size() == 2 ? (*pair)[1].as_string() : nullptr;
    if (ra == nullptr || rb == nullptr) {
      return r.Fail(&e, key, "each entry must be a pair of model names [reference, port]");
    }
    for (const std::string& m : {ra->get(), rb->get()}) {
      if (std::find(platforms.begin(), platforms.end(), m) == platforms.end()) {
        return r.Fail(&e, key, Cat("'", m, "' is not in ", section, ".platforms"));
      }
    }
    if (ra->get() == rb->get()) return r.Fail(&e, key, "a pair compares two different models");
    cross.emplace_back(ra->get(), rb->get());
  }
}

// [composite] (sweep.h): the composite kernels' functions, distributions, row lengths, elements
// per unit, models and cross pairs (the models themselves are checked when the sweep runs).
void ReadComposite(TomlReader& r, const toml::table& root, SweepSpec& spec) {
  const toml::table* t = RootSection<toml::table>(r, root, "composite");
  if (t == nullptr) return;
  r.CheckKeys(*t, "composite", {"functions", "distributions", "lengths", "elements", "platforms", "cross"});
  CompositeSweepSpec& c = spec.composite;
  std::vector<std::string> fns;
  for (std::string_view f : composite::ElementwiseFunctionNames()) fns.emplace_back(f);
  for (std::string_view f : composite::AxisFunctionNames()) fns.emplace_back(f);
  c.functions = r.Strings(*t, "composite", "functions", TomlKey::kRequired).value_or(std::vector<std::string>{});
  if (!r.ok()) return;
  if (absl::Status st = CheckNames(c.functions, fns, "function", false); !st.ok()) {
    return r.Fail(t->get("functions"), "composite.functions", std::string(st.message()));
  }
  if (c.functions.empty()) return r.Fail(t->get("functions"), "composite.functions", "must name a function");
  c.distributions =
      r.Strings(*t, "composite", "distributions", TomlKey::kRequired).value_or(std::vector<std::string>{});
  if (!r.ok()) return;
  if (absl::Status st = CheckNames(c.distributions, ValidCompositeDistributions(), "distribution", false);
      !st.ok() || c.distributions.empty()) {
    return r.Fail(t->get("distributions"), "composite.distributions",
                  st.ok() ? std::string("must name a distribution") : std::string(st.message()));
  }
  if (const toml::node* ln = t->get("lengths")) {
    const toml::array* a = ln->as_array();
    if (a == nullptr || a->empty()) {
      return r.Fail(ln, "composite.lengths", "must be a non-empty array of row lengths");
    }
    if (!ReadDistinctInts(r, *a, "composite.lengths", 1, kMaxSweepK, c.lengths)) return;
  }
  const auto& axis = composite::AxisFunctionNames();
  for (const std::string& f : c.functions) {
    if (c.lengths.empty() && std::find(axis.begin(), axis.end(), f) != axis.end()) {
      return r.Fail(t, "composite", Cat("'", f, "' runs along rows: lengths is required"));
    }
  }
  c.elements = r.Int(*t, "composite", "elements", 1, kMaxSweepK).value_or(65536);
  c.platforms = r.Strings(*t, "composite", "platforms", TomlKey::kRequired).value_or(std::vector<std::string>{});
  if (!r.ok()) return;
  if (c.platforms.empty()) return r.Fail(t->get("platforms"), "composite.platforms", "must name a model");
  ReadModelPairs(r, *t, "composite", c.platforms, c.cross);
}

// A non-empty array of distinct integers in lo..hi (key of `prefix`); empty on an error.
std::vector<int64_t> DistinctInts(TomlReader& r, const toml::table& t, std::string_view prefix, std::string_view key,
                                  int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  const std::string field = TomlReader::Dotted(prefix, key);
  const toml::node* n = t.get(key);
  if (n == nullptr) {
    r.Fail(&t, std::string(prefix), Cat("'", key, "' is required"));
    return out;
  }
  const toml::array* a = n->as_array();
  if (a == nullptr || a->empty()) {
    r.Fail(n, field, "must be a non-empty array of integers");
    return out;
  }
  if (!ReadDistinctInts(r, *a, field, lo, hi, out)) return {};
  return out;
}

// A required non-empty list of names out of `valid`.
std::vector<std::string> ValidNames(TomlReader& r, const toml::table& t, std::string_view prefix, std::string_view key,
                                    const std::vector<std::string>& valid, std::string_view what) {
  std::vector<std::string> got = r.Strings(t, prefix, key, TomlKey::kRequired).value_or(std::vector<std::string>{});
  if (!r.ok()) return {};
  const std::string field = TomlReader::Dotted(prefix, key);
  if (absl::Status st = CheckNames(got, valid, what, false); !st.ok()) {
    r.Fail(t.get(key), field, std::string(st.message()));
    return {};
  }
  if (got.empty()) r.Fail(t.get(key), field, Cat("must name a ", what));
  return got;
}

// [attention] (sweep.h): attention's sequence lengths, head dimensions, masks, distributions,
// rows and cases per unit, models and cross pairs (the models are checked when the sweep runs).
void ReadAttention(TomlReader& r, const toml::table& root, SweepSpec& spec) {
  const toml::table* t = RootSection<toml::table>(r, root, "attention");
  if (t == nullptr) return;
  r.CheckKeys(*t, "attention",
              {"lengths", "head_dims", "masks", "distributions", "rows", "cases", "platforms", "cross"});
  AttentionSweepSpec& a = spec.attention;
  // S and D up to 2^14 and 2^10: the oracle's exact row and the binary64 mutants (the wrong-axis
  // one is S^2 D) stay in seconds.
  a.lengths = DistinctInts(r, *t, "attention", "lengths", 1, 16384);
  if (!r.ok()) return;
  a.head_dims = DistinctInts(r, *t, "attention", "head_dims", 1, 1024);
  if (!r.ok()) return;
  a.masks = ValidNames(r, *t, "attention", "masks", {"none", "causal"}, "mask");
  if (!r.ok()) return;
  a.distributions = ValidNames(r, *t, "attention", "distributions", ValidAttentionDistributions(), "distribution");
  if (!r.ok()) return;
  a.rows = r.Int(*t, "attention", "rows", 1, 4096).value_or(64);
  a.cases = r.Int(*t, "attention", "cases", 1, 4096).value_or(8);
  a.platforms = r.Strings(*t, "attention", "platforms", TomlKey::kRequired).value_or(std::vector<std::string>{});
  if (!r.ok()) return;
  if (a.platforms.empty()) return r.Fail(t->get("platforms"), "attention.platforms", "must name a model");
  ReadModelPairs(r, *t, "attention", a.platforms, a.cross);
}

// Every op of `ops` must be produced by some table (else it would silently add nothing).
void CheckOpsHaveRows(TomlReader& r, const toml::table& root, const SweepSpec& spec) {
  if (!r.ok()) return;
  for (const std::string& op : spec.ops) {
    bool produces = false;
    if (op == "quantize") {
      produces = !spec.quantize_formats.empty();
    } else if (op == "composite") {
      produces = !spec.composite.functions.empty();
    } else if (op == "attention") {
      produces = !spec.attention.lengths.empty();
    } else {
      for (const DtypeSpec& d : spec.dtypes) {
        produces |= op == "sum" ? !d.sum.empty() : (!d.matmul.empty() || d.integer);
      }
    }
    if (!produces) {
      return r.Fail(Element(root.get("ops"), op), "ops",
                    op == "quantize"    ? std::string("'quantize' needs quantize_formats")
                    : op == "composite" ? std::string("'composite' needs a [composite] table")
                    : op == "attention" ? std::string("'attention' needs an [attention] table")
                                        : Cat("'", op, "' is listed, but no [[dtype]] has ", op,
                                           op == "matmul" ? " platforms (or integer = true)"
                                                          : " platforms"));
    }
  }
}

// [[cross]] tables (after the dtypes and quantize_formats they refer to).
void ReadCrossPairs(TomlReader& r, const toml::table& root, SweepSpec& spec) {
  const toml::array* arr = RootSection<toml::array>(r, root, "cross");
  if (arr == nullptr) return;
  std::map<std::string, size_t> dtype_index;  // Name -> index in spec.dtypes.
  for (size_t i = 0; i < spec.dtypes.size(); ++i) dtype_index[spec.dtypes[i].name] = i;
  std::set<std::string> cross_names;
  for (size_t i = 0; i < arr->size() && r.ok(); ++i) {
    const std::optional<NamedEntry> entry =
        ReadNamedEntry(r, *arr, i, "cross", {"name", "dtype", "op", "a", "b"}, cross_names);
    if (!entry) return;
    const toml::table* t = entry->t;
    const std::string& where = entry->where;
    CrossSpec c;
    c.name = entry->name;
    c.dtype = Name(r, *t, where, "dtype").value_or("");
    c.a = Name(r, *t, where, "a").value_or("");
    if (!r.ok()) return;
    const std::string key = Cat("cross/", c.name, "/");
    Remember(spec, key + "dtype", *t->get("dtype"), where + ".dtype");
    Remember(spec, key + "a", *t->get("a"), where + ".a");
    if (const toml::node* on = t->get("op")) {
      const std::optional<std::string> op = on->value<std::string>();
      if (!op || (*op != "matmul" && *op != "sum")) {
        return r.Fail(on, where + ".op", "must be \"matmul\" or \"sum\"");
      }
      c.op = *op;
    }
    c.b = RememberedStrings(r, spec, *t, where, "b", TomlKey::kRequired, key + "b/");
    if (!r.ok()) return;
    if (c.b.empty()) return r.Fail(t->get("b"), where + ".b", "must name at least one platform");
    if (std::find(c.b.begin(), c.b.end(), c.a) != c.b.end()) {
      return r.Fail(Element(t->get("b"), c.a), where + ".b",
                    Cat("'", c.a, "' is also a: a pair compares two different platforms"));
    }
    if (c.dtype == "quantize" && c.op != "matmul") {
      return r.Fail(t->get("op"), where + ".op", "a quantize pair takes no op");
    }
    if (c.dtype == "quantize") {
      if (c.b.size() != 1) {
        return r.Fail(t->get("b"), where + ".b",
                      Cat("a quantize pair compares one format with one other: b must have "
                          "exactly 1 entry, got ", c.b.size()));
      }
      for (const auto& [field, f] : {std::pair<const char*, const std::string&>{"a", c.a},
                                     {"b", c.b[0]}}) {
        if (std::find(spec.quantize_formats.begin(), spec.quantize_formats.end(), f) ==
            spec.quantize_formats.end()) {
          return r.Fail(Element(t->get(field), f), TomlReader::Dotted(where, field),
                        Cat("'", f, "' is not in quantize_formats (valid: ",
                            Join(spec.quantize_formats, ", "), ")"));
        }
      }
    } else {
      auto it = dtype_index.find(c.dtype);
      const DtypeSpec* d = it != dtype_index.end() ? &spec.dtypes[it->second] : nullptr;
      if (d == nullptr) {
        return r.Fail(t->get("dtype"), where + ".dtype",
                      Cat("'", c.dtype, "' is not a [[dtype]] name (nor 'quantize')"));
      }
      if (d->integer) {
        return r.Fail(t->get("dtype"), where + ".dtype",
                      Cat("'", c.dtype, "' is an integer dtype (exact, no platforms): "
                          "there is nothing to compare"));
      }
      if ((c.op == "sum" ? d->sum : d->matmul).empty()) {
        return r.Fail(t->get("dtype"), where + ".dtype",
                      Cat("dtype '", c.dtype, "' has no ", c.op, " platforms, so this pair "
                          "would never run (cross pairs compare ", c.op, " outputs)"));
      }
    }
    spec.cross.push_back(std::move(c));
  }
}

// One function per part of the file, in file order; the first error sticks and is returned.
// Strict types, "file:line: field: problem" errors naming what was found (toml_reader.h).
absl::StatusOr<SweepSpec> Parse(const toml::table& root, std::string_view file) {
  SweepSpec spec;
  TomlReader r(file, TomlDetail::kFound);
  r.CheckKeys(root, "",
              {"seed", "samples", "min_samples", "max_terms_per_row", "factor", "lambda", "ops",
               "ks", "distributions", "quantize_formats", "quantize_elements", "dtype", "cross",
               "composite", "attention"});
  spec.source = std::string(file);
  ReadTopLevel(r, root, spec);
  ReadDtypes(r, root, spec);
  ReadComposite(r, root, spec);
  ReadAttention(r, root, spec);
  CheckOpsHaveRows(r, root, spec);
  ReadCrossPairs(r, root, spec);
  if (!r.ok()) return r.status();
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
        if (!(*m)->Supports(sum ? ModelOp::kSum : ModelOp::kMatmul)) {
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
        if (!m->Supports(sum ? ModelOp::kSum : ModelOp::kMatmul)) {
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
  return ParseTomlText<SweepSpec>(toml_text, file_name, Parse);
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
  for (const std::string& p : spec.composite.platforms) {
    if (platform_set.insert(p).second) platform_names.push_back(p);
  }
  for (const std::string& p : spec.attention.platforms) {
    if (platform_set.insert(p).second) platform_names.push_back(p);
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
    for (const std::string& o : f.ops) {  // f.ops are valid names: at most 4 of them.
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
  if (!f.platforms.empty()) {
    CompositeSweepSpec& c = spec.composite;
    std::vector<std::string> kept;
    for (const std::string& p : c.platforms) {
      if (keep(f_platforms, p)) kept.push_back(p);
    }
    c.platforms = kept;
    std::erase_if(c.cross, [&](const auto& pair) {
      return !keep(f_platforms, pair.first) || !keep(f_platforms, pair.second);
    });
    AttentionSweepSpec& a = spec.attention;
    std::erase_if(a.platforms, [&](const std::string& p) { return !keep(f_platforms, p); });
    std::erase_if(a.cross, [&](const auto& pair) {
      return !keep(f_platforms, pair.first) || !keep(f_platforms, pair.second);
    });
  }
  spec.composite.input_formats = f.dtypes;
  spec.attention.input_formats = f.dtypes;
  if (f.quick) {
    spec.composite.elements = std::min<int64_t>(spec.composite.elements, 2048);
    std::erase_if(spec.composite.lengths, [](int64_t n) { return n > 128; });
    if (spec.composite.lengths.empty()) spec.composite.lengths = {128};
    std::erase_if(spec.attention.lengths, [](int64_t n) { return n > 128; });
    if (spec.attention.lengths.empty()) spec.attention.lengths = {128};
    spec.attention.rows = std::min<int64_t>(spec.attention.rows, 16);
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
