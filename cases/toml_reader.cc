#include "cases/toml_reader.h"

#include <algorithm>
#include <set>

namespace fpconform {
namespace {

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

// A scalar's TOML text, as values() records it.
std::string TomlText(const std::string& s) { return Cat("\"", s, "\""); }
std::string TomlText(int64_t v) { return Cat(v); }
std::string TomlText(double v) { return Cat(v); }
std::string TomlText(bool v) { return v ? "true" : "false"; }

}  // namespace

void TomlReader::Fail(const toml::node* where, std::string_view key, std::string_view what) {
  if (!status_.ok()) return;
  const int64_t line = where != nullptr ? static_cast<int64_t>(where->source().begin.line) : 0;
  const std::string k = EscapeText(key, 200), w = EscapeText(what, 2000);
  status_ = absl::InvalidArgumentError(line > 0 ? Cat(file_, ":", line, ": ", k, ": ", w)
                                                : Cat(file_, ": ", k, ": ", w));
}

std::string TomlReader::Dotted(std::string_view prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : Cat(prefix, ".", key);
}

std::string TomlReader::Found(const toml::node& n) const {
  return detail_ == TomlDetail::kFound ? Cat(", got ", TypeName(n)) : std::string();
}

void TomlReader::CheckKeys(const toml::table& t, std::string_view prefix,
                           std::initializer_list<std::string_view> allowed) {
  if (!ok()) return;
  for (const auto& [k, v] : t) {
    if (std::find(allowed.begin(), allowed.end(), k.str()) == allowed.end()) {
      Fail(&v, Dotted(prefix, k.str()),
           detail_ == TomlDetail::kFound ? Cat("unknown key (valid: ", Join(allowed, ", "), ")")
                                         : std::string("unknown key"));
      return;
    }
  }
}

void TomlReader::Reject(const toml::table& t, std::string_view prefix, std::string_view key,
                        std::string_view why) {
  if (!ok()) return;
  if (const toml::node* n = t.get(key)) Fail(n, Dotted(prefix, key), why);
}

const toml::table* TomlReader::Table(const toml::table& parent, std::string_view prefix,
                                     std::string_view key, TomlKey need) {
  if (!ok()) return nullptr;
  const toml::node* n = parent.get(key);
  if (n == nullptr) {
    if (need == TomlKey::kRequired) {
      Fail(prefix.empty() ? nullptr : &parent, Dotted(prefix, key), "required table missing");
    }
    return nullptr;
  }
  const toml::table* t = n->as_table();
  if (t == nullptr) Fail(n, Dotted(prefix, key), Cat("must be a table", Found(*n)));
  return t;
}

// A key missing from the top level has no line (the root table's would be line 1); one missing
// from a named table has the table's.
const toml::node* TomlReader::Lookup(const toml::table& t, std::string_view prefix,
                                     std::string_view key, TomlKey need) {
  if (!ok()) return nullptr;
  const toml::node* n = t.get(key);
  if (n == nullptr && need == TomlKey::kRequired) {
    Fail(prefix.empty() ? nullptr : &t, Dotted(prefix, key), "required key missing");
  }
  return n;
}

template <typename T, typename Read>
std::optional<T> TomlReader::Scalar(const toml::table& t, std::string_view prefix,
                                    std::string_view key, TomlKey need, Read read) {
  const toml::node* n = Lookup(t, prefix, key, need);
  if (n == nullptr) return std::nullopt;
  std::string why;
  const std::optional<T> v = read(*n, why);
  if (!v) {
    Fail(n, Dotted(prefix, key), why);
    return std::nullopt;
  }
  values_.push_back({Dotted(prefix, key), TomlText(*v), n});
  return v;
}

std::optional<std::string> TomlReader::String(const toml::table& t, std::string_view prefix,
                                              std::string_view key, TomlKey need) {
  return Scalar<std::string>(
      t, prefix, key, need,
      [&](const toml::node& n, std::string& why) -> std::optional<std::string> {
        if (const auto* s = n.as_string()) return s->get();
        why = Cat("must be a string", Found(n));
        return std::nullopt;
      });
}

std::optional<int64_t> TomlReader::Int(const toml::table& t, std::string_view prefix,
                                       std::string_view key, int64_t lo, int64_t hi,
                                       TomlKey need) {
  return Scalar<int64_t>(
      t, prefix, key, need,
      [&](const toml::node& n, std::string& why) -> std::optional<int64_t> {
        const auto* i = n.as_integer();
        if (i != nullptr && i->get() >= lo && i->get() <= hi) return i->get();
        why = Cat("must be an integer in ", lo, "..", hi,
                  i != nullptr ? Cat(", got ", i->get()) : Found(n));
        return std::nullopt;
      });
}

std::optional<double> TomlReader::Number(const toml::table& t, std::string_view prefix,
                                         std::string_view key, double lo, double hi,
                                         TomlKey need) {
  return Scalar<double>(
      t, prefix, key, need,
      [&](const toml::node& n, std::string& why) -> std::optional<double> {
        std::optional<double> v;
        if (const auto* f = n.as_floating_point()) v = f->get();
        if (const auto* i = n.as_integer()) v = static_cast<double>(i->get());
        if (v && *v >= lo && *v <= hi) return v;  // NaN is out of every range.
        why = Cat("must be a number in ", lo, "..", hi, v ? "" : Found(n));
        return std::nullopt;
      });
}

std::optional<bool> TomlReader::Bool(const toml::table& t, std::string_view prefix,
                                     std::string_view key, TomlKey need) {
  return Scalar<bool>(
      t, prefix, key, need,
      [&](const toml::node& n, std::string& why) -> std::optional<bool> {
        if (const auto* b = n.as_boolean()) return b->get();
        why = Cat("must be true or false", Found(n));
        return std::nullopt;
      });
}

std::optional<std::vector<std::string>> TomlReader::Strings(
    const toml::table& t, std::string_view prefix, std::string_view key, TomlKey need,
    std::vector<const toml::node*>* nodes) {
  const toml::node* n = Lookup(t, prefix, key, need);
  if (n == nullptr) return std::nullopt;
  const std::string dotted = Dotted(prefix, key);
  const toml::array* a = n->as_array();
  if (a == nullptr) {
    Fail(n, dotted, Cat("must be an array of strings", Found(*n)));
    return std::nullopt;
  }
  std::vector<std::string> out;
  std::set<std::string> seen;  // Not a linear search: a 16 MiB file may list millions.
  for (const toml::node& e : *a) {
    const auto* s = e.as_string();
    if (s == nullptr) {
      Fail(&e, dotted, Cat("must be an array of strings", Found(e)));
      return std::nullopt;
    }
    if (!seen.insert(s->get()).second) {
      Fail(&e, dotted, Cat("'", s->get(), "' listed twice"));
      return std::nullopt;
    }
    out.push_back(s->get());
    if (nodes != nullptr) nodes->push_back(&e);
  }
  return out;
}

void ReadProvenance(TomlReader& r, const toml::table& root, const std::set<std::string>& keys,
                    std::vector<std::pair<std::string, std::string>>& provenance,
                    std::vector<std::string>& unconfirmed) {
  const toml::table* t = r.Table(root, "", "provenance", TomlKey::kRequired);
  if (t == nullptr || !r.ok()) return;
  for (const auto& [key, node] : *t) {
    const std::string k(key.str());
    if (k == "unconfirmed") continue;
    if (keys.count(k) == 0) {
      r.Fail(&node, Cat("provenance.", k), "names no key of this file");
      return;
    }
    if (const std::optional<std::string> s = r.String(*t, "provenance", k)) provenance.emplace_back(k, *s);
  }
  for (const std::string& k : keys) {
    if (r.ok() && !t->contains(k)) r.Fail(t, Cat("provenance.\"", k, "\""), "required key missing");
  }
  if (!r.ok()) return;
  std::vector<const toml::node*> nodes;
  if (std::optional<std::vector<std::string>> u =
          r.Strings(*t, "provenance", "unconfirmed", TomlKey::kOptional, &nodes)) {
    for (size_t i = 0; i < u->size() && r.ok(); ++i) {
      if (keys.count((*u)[i]) == 0) {
        r.Fail(nodes[i], "provenance.unconfirmed", Cat("'", (*u)[i], "' names no key of this file"));
      }
    }
    unconfirmed = *std::move(u);
  }
}

}  // namespace fpconform
