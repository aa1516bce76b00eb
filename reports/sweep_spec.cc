// Sweep files (TOML) and command-line filters: see sweep.h and reports/standard_sweep.toml.
#include <algorithm>
#include <set>
#include <string>
#include <toml++/toml.h>

#include "formats/str_cat.h"
#include "formats/format_spec.h"
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

class SpecReader {
 public:
  explicit SpecReader(std::string_view file) : file_(file) {}

  absl::Status Error(const toml::node* n, std::string_view key, std::string_view what) const {
    return absl::InvalidArgumentError(
        Cat(file_, ":", n != nullptr ? Line(*n) : std::string("?"), ": ", key, ": ",
                     what));
  }

  absl::StatusOr<std::vector<std::string>> Strings(const toml::table& t, std::string_view key,
                                                   std::string_view dotted, bool required) {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
      if (required) return Error(&t, dotted, "missing (an array of strings)");
      return std::vector<std::string>{};
    }
    const toml::array* a = n->as_array();
    if (a == nullptr) return Error(n, dotted, "must be an array of strings");
    std::vector<std::string> out;
    for (const toml::node& e : *a) {
      const std::optional<std::string> s = e.value<std::string>();
      if (!s) return Error(&e, dotted, "must be an array of strings");
      out.push_back(*s);
    }
    return out;
  }

  absl::StatusOr<int64_t> Int(const toml::table& t, std::string_view key, int64_t lo, int64_t hi,
                              std::optional<int64_t> def) {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
      if (def) return *def;
      return Error(&t, key, "missing (an integer)");
    }
    const std::optional<int64_t> v = n->value<int64_t>();
    if (!v || *v < lo || *v > hi) {
      return Error(n, key, Cat("must be an integer in ", lo, "..", hi));
    }
    return *v;
  }

  absl::StatusOr<double> Float(const toml::table& t, std::string_view key, double lo, double hi,
                               double def) {
    const toml::node* n = t.get(key);
    if (n == nullptr) return def;
    std::optional<double> v = n->value<double>();
    if (!v || !(*v >= lo && *v <= hi)) {
      return Error(n, key, Cat("must be a number in ", lo, "..", hi));
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
};

absl::Status CheckNames(const std::vector<std::string>& got, const std::vector<std::string>& valid,
                        std::string_view what) {
  for (const std::string& g : got) {
    if (std::find(valid.begin(), valid.end(), g) == valid.end()) {
      return absl::InvalidArgumentError(Cat("unknown ", what, " '", g,
                                                     "' (valid: ", Join(valid, ", "),
                                                     ")"));
    }
  }
  return absl::OkStatus();
}

#define FPC_ASSIGN(lhs, expr)             \
  do {                                    \
    auto _r = (expr);                     \
    if (!_r.ok()) return _r.status();     \
    lhs = *std::move(_r);                 \
  } while (0)

absl::StatusOr<SweepSpec> Parse(const toml::table& root, std::string_view file) {
  SpecReader r(file);
  if (absl::Status s = r.CheckKeys(root, "",
                                   {"seed", "samples", "min_samples", "max_terms_per_row",
                                    "factor", "lambda", "ops", "ks", "distributions",
                                    "quantize_formats", "quantize_elements", "dtype", "cross"});
      !s.ok()) {
    return s;
  }
  SweepSpec spec;
  spec.source = std::string(file);
  int64_t v = 0;
  FPC_ASSIGN(v, r.Int(root, "seed", 0, INT64_MAX, std::nullopt));
  spec.seed = static_cast<uint64_t>(v);
  FPC_ASSIGN(v, r.Int(root, "samples", 1, 1000000, std::nullopt));
  spec.samples = static_cast<int>(v);
  FPC_ASSIGN(v, r.Int(root, "min_samples", 1, 1000000, spec.samples));
  spec.min_samples = static_cast<int>(std::min<int64_t>(v, spec.samples));
  FPC_ASSIGN(spec.max_terms_per_row,
             r.Int(root, "max_terms_per_row", 1, INT64_MAX, int64_t{1} << 40));
  FPC_ASSIGN(spec.factor, r.Float(root, "factor", 1, 1000, 2));
  FPC_ASSIGN(spec.lambda, r.Float(root, "lambda", 0.1, 100, 1));
  FPC_ASSIGN(spec.ops, r.Strings(root, "ops", "ops", true));
  if (absl::Status s = CheckNames(spec.ops, ValidOps(), "op"); !s.ok()) {
    return r.Error(root.get("ops"), "ops", std::string(s.message()));
  }
  const toml::array* ks = root.get("ks") != nullptr ? root.get("ks")->as_array() : nullptr;
  if (ks == nullptr || ks->empty()) return r.Error(&root, "ks", "missing (an array of K >= 1)");
  for (const toml::node& e : *ks) {
    const std::optional<int64_t> k = e.value<int64_t>();
    if (!k || *k < 1 || *k > (int64_t{1} << 24)) {
      return r.Error(&e, "ks", "must be integers in 1..16777216");
    }
    spec.ks.push_back(*k);
  }
  FPC_ASSIGN(spec.distributions, r.Strings(root, "distributions", "distributions", true));
  if (absl::Status s = CheckNames(spec.distributions, ValidDistributions(), "distribution");
      !s.ok()) {
    return r.Error(root.get("distributions"), "distributions", std::string(s.message()));
  }
  FPC_ASSIGN(spec.quantize_formats,
             r.Strings(root, "quantize_formats", "quantize_formats", false));
  for (const std::string& f : spec.quantize_formats) {
    const FormatSpec* fs = FindFormat(f);
    if (fs == nullptr || fs->width != 8 || f == "uint8" || f == "float8_e8m0fnu") {
      return r.Error(root.get("quantize_formats"), "quantize_formats",
                     Cat("'", f, "' is not a signed 8-bit format"));
    }
  }
  FPC_ASSIGN(spec.quantize_elements, r.Int(root, "quantize_elements", 1, 1 << 24, 4096));

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
      const std::optional<std::string> name = t->get("name") ? t->get("name")->value<std::string>()
                                                             : std::nullopt;
      if (!name || name->empty()) return r.Error(t, where + "name", "missing (a string)");
      d.name = *name;
      if (!dtype_names.insert(d.name).second) {
        return r.Error(t->get("name"), where + "name", Cat("duplicate '", d.name, "'"));
      }
      FPC_ASSIGN(d.matmul, r.Strings(*t, "matmul", where + "matmul", false));
      FPC_ASSIGN(d.sum, r.Strings(*t, "sum", where + "sum", false));
      if (const toml::node* in = t->get("integer")) {
        const std::optional<bool> b = in->value<bool>();
        if (!b) return r.Error(in, where + "integer", "must be true or false");
        d.integer = *b;
      }
      spec.dtypes.push_back(std::move(d));
    }
  }
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
      for (const char* key : {"name", "dtype", "a"}) {
        const toml::node* n = t->get(key);
        const std::optional<std::string> s = n ? n->value<std::string>() : std::nullopt;
        if (!s || s->empty()) return r.Error(t, where + key, "missing (a string)");
        (std::string_view(key) == "name" ? c.name : std::string_view(key) == "dtype" ? c.dtype
                                                                                   : c.a) = *s;
      }
      if (const toml::node* on = t->get("op")) {
        const std::optional<std::string> op = on->value<std::string>();
        if (!op || (*op != "matmul" && *op != "sum")) {
          return r.Error(on, where + "op", "must be \"matmul\" or \"sum\"");
        }
        c.op = *op;
      }
      FPC_ASSIGN(c.b, r.Strings(*t, "b", where + "b", true));
      if (c.b.empty()) return r.Error(t->get("b"), where + "b", "must name at least one platform");
      if (c.dtype != "quantize" && dtype_names.count(c.dtype) == 0) {
        return r.Error(t->get("dtype"), where + "dtype",
                       Cat("'", c.dtype, "' is not a [[dtype]] name (nor 'quantize')"));
      }
      if (c.dtype != "quantize") {
        const auto d = std::find_if(spec.dtypes.begin(), spec.dtypes.end(),
                                    [&](const DtypeSpec& x) { return x.name == c.dtype; });
        if ((c.op == "sum" ? d->sum : d->matmul).empty() && !(c.op == "matmul" && d->integer)) {
          return r.Error(t->get("dtype"), where + "op",
                         Cat("[[dtype]] '", c.dtype, "' has no ", c.op, " platforms"));
        }
      } else if (c.op != "matmul") {
        return r.Error(t->get("op"), where + "op", "a quantize pair takes no op");
      }
      if (c.dtype == "quantize") {
        for (const std::string& f : std::vector<std::string>{c.a, c.b[0]}) {
          if (std::find(spec.quantize_formats.begin(), spec.quantize_formats.end(), f) ==
              spec.quantize_formats.end()) {
            return r.Error(t, where + "a/b",
                           Cat("'", f, "' is not in quantize_formats"));
          }
        }
      }
      spec.cross.push_back(std::move(c));
    }
  }
  return spec;
}

}  // namespace

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
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return ParseSweepSpec(*text, path);
}

absl::StatusOr<SweepSpec> ApplyFilter(SweepSpec spec, const SweepFilter& f) {
  if (absl::Status s = CheckNames(f.ops, ValidOps(), "op"); !s.ok()) return s;
  if (absl::Status s = CheckNames(f.distributions, ValidDistributions(), "distribution");
      !s.ok()) {
    return s;
  }
  std::vector<std::string> dtype_names, platform_names;
  for (const DtypeSpec& d : spec.dtypes) {
    dtype_names.push_back(d.name);
    for (const auto* list : {&d.matmul, &d.sum}) {
      for (const std::string& p : *list) {
        if (std::find(platform_names.begin(), platform_names.end(), p) == platform_names.end()) {
          platform_names.push_back(p);
        }
      }
    }
  }
  for (const std::string& q : spec.quantize_formats) dtype_names.push_back(q);
  if (absl::Status s = CheckNames(f.dtypes, dtype_names, "dtype"); !s.ok()) return s;
  if (absl::Status s = CheckNames(f.platforms, platform_names, "platform"); !s.ok()) return s;
  auto keep = [](const std::vector<std::string>& filter, const std::string& name) {
    return filter.empty() || std::find(filter.begin(), filter.end(), name) != filter.end();
  };
  if (!f.ops.empty()) {
    std::vector<std::string> ops;
    for (const std::string& o : spec.ops) {
      if (keep(f.ops, o)) ops.push_back(o);
    }
    for (const std::string& o : f.ops) {
      if (std::find(ops.begin(), ops.end(), o) == ops.end()) ops.push_back(o);
    }
    spec.ops = ops;
  }
  if (!f.distributions.empty()) spec.distributions = f.distributions;
  if (!f.ks.empty()) spec.ks = f.ks;
  std::vector<DtypeSpec> dtypes;
  for (DtypeSpec& d : spec.dtypes) {
    if (!keep(f.dtypes, d.name)) continue;
    for (auto* list : {&d.matmul, &d.sum}) {
      std::vector<std::string> kept;
      for (const std::string& p : *list) {
        if (keep(f.platforms, p)) kept.push_back(p);
      }
      *list = kept;
    }
    if (!f.platforms.empty() && d.matmul.empty() && d.sum.empty() && !d.integer) continue;
    if (!f.platforms.empty() && d.integer) continue;
    dtypes.push_back(std::move(d));
  }
  spec.dtypes = std::move(dtypes);
  std::vector<std::string> qf;
  for (const std::string& q : spec.quantize_formats) {
    if (keep(f.dtypes, q)) qf.push_back(q);
  }
  spec.quantize_formats = qf;
  std::vector<CrossSpec> cross;
  for (CrossSpec& c : spec.cross) {
    const bool dtype_ok =
        c.dtype == "quantize"
            ? std::find(qf.begin(), qf.end(), c.a) != qf.end() &&
                  std::find(qf.begin(), qf.end(), c.b[0]) != qf.end()
            : std::any_of(spec.dtypes.begin(), spec.dtypes.end(),
                          [&](const DtypeSpec& d) { return d.name == c.dtype; });
    bool platforms_ok = true;
    if (c.dtype != "quantize" && !f.platforms.empty()) {
      platforms_ok = keep(f.platforms, c.a);
      for (const std::string& b : c.b) platforms_ok = platforms_ok && keep(f.platforms, b);
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
  if (f.seed >= 0) spec.seed = static_cast<uint64_t>(f.seed);
  return spec;
}

}  // namespace fpconform::reports
