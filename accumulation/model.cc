#include "accumulation/model.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <type_traits>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "absl/status/status.h"
#include "accumulation/strings_internal.h"
#include "formats/user_file.h"

namespace fpconform {
namespace {

using accumulation_internal::Cat;
using accumulation_internal::Join;

// Reads one model; the first error sticks (later lookups are skipped).
class Reader {
 public:
  explicit Reader(std::string_view file) : file_(file) {}

  bool ok() const { return status_.ok(); }
  absl::Status status() const { return status_; }

  void Fail(const toml::node* where, std::string_view key, std::string_view what) {
    if (!status_.ok()) return;
    int64_t line = where != nullptr ? static_cast<int64_t>(where->source().begin.line) : 0;
    // The key and the message may echo the file's bytes (an unknown quoted key, a bad value):
    // escaped, so a message never carries control characters (formats/str_cat.h).
    const std::string k = EscapeText(key, 200), w = EscapeText(what, 1000);
    status_ = absl::InvalidArgumentError(line > 0 ? Cat(file_, ":", line, ": ", k, ": ", w)
                                                  : Cat(file_, ": ", k, ": ", w));
  }

  // Every key of `t` must be in `allowed`.
  void CheckKeys(const toml::table& t, std::string_view prefix,
                 const std::set<std::string_view>& allowed) {
    for (const auto& [k, v] : t) {
      if (!allowed.contains(k.str())) {
        Fail(&v, Dotted(prefix, k.str()), "unknown key");
        return;
      }
    }
  }

  static std::string Dotted(std::string_view prefix, std::string_view key) {
    return prefix.empty() ? std::string(key) : Cat(prefix, ".", key);
  }

  const toml::node* Node(const toml::table& t, std::string_view key) { return t.get(key); }

  std::optional<std::string> String(const toml::table& t, std::string_view prefix,
                                    std::string_view key, bool required,
                                    const toml::node* table_node) {
    if (!ok()) return std::nullopt;
    const toml::node* n = t.get(key);
    const std::string dotted = Dotted(prefix, key);
    if (n == nullptr) {
      if (required) Fail(table_node, dotted, "required key missing");
      return std::nullopt;
    }
    const auto* s = n->as_string();
    if (s == nullptr) {
      Fail(n, dotted, "must be a string");
      return std::nullopt;
    }
    Record(dotted, Cat("\"", s->get(), "\""), n);
    return s->get();
  }

  std::optional<int64_t> Int(const toml::table& t, std::string_view prefix, std::string_view key,
                             bool required, int64_t lo, int64_t hi,
                             const toml::node* table_node) {
    if (!ok()) return std::nullopt;
    const toml::node* n = t.get(key);
    const std::string dotted = Dotted(prefix, key);
    if (n == nullptr) {
      if (required) Fail(table_node, dotted, "required key missing");
      return std::nullopt;
    }
    const auto* i = n->as_integer();
    if (i == nullptr || i->get() < lo || i->get() > hi) {
      std::string got;
      if (i != nullptr) got = Cat(", got ", i->get());
      Fail(n, dotted, Cat("must be an integer in ", lo, "..", hi, got));
      return std::nullopt;
    }
    Record(dotted, Cat(i->get()), n);
    return i->get();
  }

  std::optional<bool> Bool(const toml::table& t, std::string_view prefix, std::string_view key) {
    if (!ok()) return std::nullopt;
    const toml::node* n = t.get(key);
    if (n == nullptr) return std::nullopt;
    const auto* b = n->as_boolean();
    const std::string dotted = Dotted(prefix, key);
    if (b == nullptr) {
      Fail(n, dotted, "must be true or false");
      return std::nullopt;
    }
    Record(dotted, b->get() ? "true" : "false", n);
    return b->get();
  }

  const FormatSpec* Format(const toml::table& t, std::string_view prefix, std::string_view key,
                           bool required, const toml::node* table_node) {
    std::optional<std::string> s = String(t, prefix, key, required, table_node);
    if (!s) return nullptr;
    const FormatSpec* f = FindFormat(*s);
    if (f == nullptr || !IsFloat(*f)) {
      Fail(t.get(key), Dotted(prefix, key),
           Cat("not a float format of the table: \"", *s, "\""));
      return nullptr;
    }
    return f;
  }

  // Parses a rounding into env (default kept when absent). `only` restricts the set.
  void RoundingKey(const toml::table& t, std::string_view prefix, std::string_view key,
                   OpEnv& env, std::initializer_list<std::string_view> only = {}) {
    std::optional<std::string> s = String(t, prefix, key, false, nullptr);
    if (!s) return;
    bool allowed = only.size() == 0;
    for (std::string_view o : only) allowed |= (o == *s);
    OpEnv parsed = env;
    if (!allowed || !ParseRounding(*s, parsed)) {
      std::string set = only.size() == 0 ? "rne rna rtz rup rdn rto sr<k>"
                                         : Join(only, " ");
      Fail(t.get(key), Dotted(prefix, key), Cat("must be one of ", set, ", got \"",
                                                         *s, "\""));
      return;
    }
    env = parsed;
  }

  // The value of the one of `choices` (name, value) the string names: `def` when the key is
  // absent and not required; nullopt, with an error, when it names none of them (or the key is
  // required and missing, or an earlier error stuck).
  template <typename E>
  std::optional<E> Choice(
      const toml::table& t, std::string_view prefix, std::string_view key, bool required,
      std::type_identity_t<std::initializer_list<std::pair<std::string_view, E>>> choices,
      E def, const toml::node* table_node) {
    std::optional<std::string> s = String(t, prefix, key, required, table_node);
    if (!s) return ok() ? std::optional<E>(def) : std::nullopt;
    std::vector<std::string_view> names;
    for (const auto& [name, value] : choices) {
      if (name == *s) return value;
      names.push_back(name);
    }
    Fail(t.get(key), Dotted(prefix, key),
         Cat("must be one of ", Join(names, " "), ", got \"", *s, "\""));
    return std::nullopt;
  }

  void Record(const std::string& dotted, std::string value, const toml::node* n) {
    parameters_.emplace_back(dotted, std::move(value));
    lines_[dotted] = n;
  }

  std::vector<std::pair<std::string, std::string>> parameters_;
  std::map<std::string, const toml::node*> lines_;

 private:
  std::string file_;
  absl::Status status_;
};

// A required sub-table, or nullptr (with an error when required).
const toml::table* SubTable(Reader& r, const toml::table& root, std::string_view key,
                            bool required) {
  if (!r.ok()) return nullptr;
  const toml::node* n = root.get(key);
  if (n == nullptr) {
    if (required) r.Fail(nullptr, key, "required table missing");
    return nullptr;
  }
  const toml::table* t = n->as_table();
  if (t == nullptr) r.Fail(n, key, "must be a table");
  return t;
}

// Parses chain.shape (MODEL_FORMAT.md, chain.kind = "tree") into ch.tree, ch.tree_root and
// ch.tree_units. Returns "" or the error (without the "file:line: chain.shape: " prefix).
// Iterative (an explicit stack of open lists), so deeply nested text cannot exhaust the stack;
// the result has at most 4096 leaves and every list >= 2 children, so its depth is < 4096.
std::string ParseTreeShape(std::string_view s, Model::Chain& ch) {
  constexpr int64_t kMaxLeaves = 4096;
  std::vector<Model::Chain::TreeNode> nodes;
  std::vector<std::pair<int, size_t>> open;  // (node, column of its '(').
  struct Leaf {
    int64_t value;
    std::string_view text;
  };
  std::vector<Leaf> leaves;
  int root = -1;
  auto attach = [&](int id) {
    if (open.empty()) {
      root = id;
    } else {
      nodes[open.back().first].children.push_back(id);
    }
  };
  size_t i = 0;
  while (i < s.size()) {
    const char ch_i = s[i];
    const size_t col = i + 1;
    if (ch_i == ' ' || ch_i == '\t' || ch_i == '\n' || ch_i == '\r') {
      ++i;
      continue;
    }
    const bool is_digit = ch_i >= '0' && ch_i <= '9';
    if (ch_i != '(' && ch_i != ')' && !is_digit) {
      return Cat("unexpected character '", std::string_view(&s[i], 1), "' at column ", col);
    }
    if (ch_i != ')' && open.empty() && root >= 0) {
      return Cat("text after the tree at column ", col);
    }
    if (ch_i == '(') {
      nodes.emplace_back();
      const int id = static_cast<int>(nodes.size()) - 1;
      attach(id);
      open.emplace_back(id, col);
      ++i;
    } else if (ch_i == ')') {
      if (open.empty()) return Cat("unbalanced parentheses: unmatched ')' at column ", col);
      const auto [id, open_col] = open.back();
      const size_t n = nodes[id].children.size();
      if (n == 0) return Cat("empty list at column ", open_col);
      if (n == 1) return Cat("a list needs at least 2 children (column ", open_col, ")");
      open.pop_back();
      ++i;
    } else {
      const size_t start = i;
      int64_t v = 0;
      for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
        v = std::min<int64_t>(v * 10 + (s[i] - '0'), int64_t{1} << 40);
      }
      if (static_cast<int64_t>(leaves.size()) == kMaxLeaves) {
        return Cat("more than ", kMaxLeaves, " leaves");
      }
      leaves.push_back({v, s.substr(start, i - start)});
      Model::Chain::TreeNode leaf;
      leaf.unit = static_cast<int>(std::min<int64_t>(v, kMaxLeaves));  // Checked below.
      nodes.push_back(std::move(leaf));
      attach(static_cast<int>(nodes.size()) - 1);
    }
  }
  if (!open.empty()) {
    return Cat("unbalanced parentheses: missing ')' for the '(' at column ", open.back().second);
  }
  if (root < 0) return "empty shape";
  const int64_t m = static_cast<int64_t>(leaves.size());
  std::vector<bool> seen(static_cast<size_t>(m), false);
  for (const Leaf& l : leaves) {
    if (l.value < m) seen[static_cast<size_t>(l.value)] = true;
  }
  const int64_t missing = std::find(seen.begin(), seen.end(), false) - seen.begin();
  std::fill(seen.begin(), seen.end(), false);
  for (const Leaf& l : leaves) {
    if (l.value >= m) {
      return Cat("index ", l.text, " out of range 0..", m - 1, " (", m, " leaves; index ",
                 missing, " is missing)");
    }
    if (seen[static_cast<size_t>(l.value)]) return Cat("duplicate index ", l.value);
    seen[static_cast<size_t>(l.value)] = true;
  }
  ch.tree = std::move(nodes);
  ch.tree_root = root;
  ch.tree_units = static_cast<int>(m);
  return "";
}

// Rejects `key` in `t` (it does not apply to the chosen kind).
void Reject(Reader& r, const toml::table& t, std::string_view prefix, std::string_view key,
            std::string_view why) {
  if (!r.ok()) return;
  if (const toml::node* n = t.get(key)) r.Fail(n, Reader::Dotted(prefix, key), why);
}

bool ValidName(std::string_view s) {
  if (s.empty()) return false;
  for (char ch : s) {
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.')) {
      return false;
    }
  }
  return true;
}

// `name` (a valid preset name equal to the file's stem when the file is a .toml) and the one-line
// `description`, shared by model and envelope files.
void ReadNameAndDescription(Reader& r, const toml::table& root, std::string_view file,
                            std::string* name, std::string* description) {
  if (auto s = r.String(root, "", "name", true, nullptr)) {
    if (!ValidName(*s)) r.Fail(root.get("name"), "name", "must match [a-z0-9.-]+");
    *name = *s;
    if (file.size() > 5 && file.substr(file.size() - 5) == ".toml") {
      std::string_view stem = file.substr(0, file.size() - 5);
      if (size_t slash = stem.find_last_of('/'); slash != std::string_view::npos) {
        stem = stem.substr(slash + 1);
      }
      if (stem != *s) {
        r.Fail(root.get("name"), "name",
               Cat("must equal the file's stem \"", stem, "\", got \"", *s, "\""));
      }
    }
  }
  if (auto s = r.String(root, "", "description", true, nullptr)) {
    if (s->find('\n') != std::string::npos) {
      r.Fail(root.get("description"), "description", "must be one line");
    }
    *description = *s;
  }
}

// `operations`: which of dot, matmul, sum the model defines (all when absent).
void ReadOperations(Reader& r, const toml::table& root, Model& m) {
  const toml::node* ops = root.get("operations");
  if (ops == nullptr || !r.ok()) return;
  const toml::array* arr = ops->as_array();
  if (arr == nullptr) {
    r.Fail(ops, "operations", "must be an array of \"dot\" \"matmul\" \"sum\"");
    return;
  }
  m.op_dot = m.op_matmul = m.op_sum = false;
  for (const toml::node& e : *arr) {
    const auto* s = e.as_string();
    std::string v = s != nullptr ? s->get() : "";
    if (v == "dot") m.op_dot = true;
    else if (v == "matmul") m.op_matmul = true;
    else if (v == "sum") m.op_sum = true;
    else {
      r.Fail(&e, "operations", "entries must be \"dot\", \"matmul\" or \"sum\"");
      break;
    }
  }
}

// [inputs]
void ReadInputs(Reader& r, const toml::table& root, Model& m) {
  const toml::table* t = SubTable(r, root, "inputs", true);
  if (t == nullptr) return;
  r.CheckKeys(*t, "inputs", {"a", "b", "convert_to", "convert_rounding", "daz"});
  m.inputs.a = r.Format(*t, "inputs", "a", true, t);
  m.inputs.b = r.Format(*t, "inputs", "b", false, t);
  if (m.inputs.b == nullptr) m.inputs.b = m.inputs.a;
  m.inputs.convert_to = r.Format(*t, "inputs", "convert_to", false, t);
  if (m.inputs.convert_to == nullptr) {
    Reject(r, *t, "inputs", "convert_rounding", "applies only with inputs.convert_to");
  }
  r.RoundingKey(*t, "inputs", "convert_rounding", m.inputs.convert_env);
  if (auto b = r.Bool(*t, "inputs", "daz")) m.inputs.daz = *b;
}

// [product]
void ReadProduct(Reader& r, const toml::table& root, Model& m) {
  const toml::table* t = SubTable(r, root, "product", false);
  if (t == nullptr) return;
  r.CheckKeys(*t, "product", {"policy", "format", "rounding"});
  m.product.policy = r.Choice(*t, "product", "policy", false,
                              {{"exact", ProductPolicy::kExact}, {"round", ProductPolicy::kRound}},
                              ProductPolicy::kExact, t)
                         .value_or(ProductPolicy::kExact);
  if (m.product.policy == ProductPolicy::kRound) {
    m.product.format = r.Format(*t, "product", "format", true, t);
    r.RoundingKey(*t, "product", "rounding", m.product.env);
  } else {
    Reject(r, *t, "product", "format", "applies only with product.policy = \"round\"");
    Reject(r, *t, "product", "rounding", "applies only with product.policy = \"round\"");
  }
}

// [adder] (after [product]: fma needs exact products).
void ReadAdder(Reader& r, const toml::table& root, Model& m) {
  const toml::table* t = SubTable(r, root, "adder", true);
  if (t == nullptr) return;
  r.CheckKeys(*t, "adder",
              {"kind", "rounding", "group", "fraction_bits", "alignment", "alignment_exponent",
               "normalization_rounding", "ftz", "daz"});
  const std::optional<AdderKind> kind =
      r.Choice(*t, "adder", "kind", true,
               {{"ieee", AdderKind::kIeee}, {"fma", AdderKind::kFma},
                {"fused", AdderKind::kFused}, {"kahan", AdderKind::kKahan}},
               AdderKind::kIeee, t);
  if (!kind) return;
  m.adder.kind = *kind;
  if (*kind == AdderKind::kFused) {
    Reject(r, *t, "adder", "ftz", "does not apply to a fused adder");
    Reject(r, *t, "adder", "daz", "applies only to adder.kind = \"ieee\" or \"fma\"");
    Reject(r, *t, "adder", "rounding", "does not apply to a fused adder "
                                       "(use adder.normalization_rounding)");
    m.adder.group = static_cast<int>(r.Int(*t, "adder", "group", true, 1, 256, t).value_or(1));
    m.adder.fraction_bits =
        static_cast<int>(r.Int(*t, "adder", "fraction_bits", true, 1, 100, t).value_or(1));
    m.adder.alignment =
        r.Choice(*t, "adder", "alignment", false,
                 {{"truncate", Alignment::kTruncate}, {"round_down", Alignment::kRoundDown}},
                 Alignment::kTruncate, t)
            .value_or(Alignment::kTruncate);
    m.adder.alignment_exponent = r.Choice(*t, "adder", "alignment_exponent", false,
                                          {{"nominal", AlignmentExponent::kNominal},
                                           {"actual", AlignmentExponent::kActual}},
                                          AlignmentExponent::kNominal, t)
                                     .value_or(AlignmentExponent::kNominal);
    m.adder.env.rounding = Rounding::kTowardZero;
    r.RoundingKey(*t, "adder", "normalization_rounding", m.adder.env, {"rtz", "rne"});
    return;
  }
  for (std::string_view key :
       {"group", "fraction_bits", "alignment", "alignment_exponent", "normalization_rounding"}) {
    Reject(r, *t, "adder", key, "applies only to adder.kind = \"fused\"");
  }
  r.RoundingKey(*t, "adder", "rounding", m.adder.env);
  if (auto b = r.Bool(*t, "adder", "ftz")) m.adder.env.flush_to_zero = *b;
  if (*kind == AdderKind::kKahan) {
    Reject(r, *t, "adder", "daz", "applies only to adder.kind = \"ieee\" or \"fma\"");
  }
  if (auto b = r.Bool(*t, "adder", "daz")) m.adder.env.denormals_are_zero = *b;
  if (*kind == AdderKind::kFma && m.product.policy != ProductPolicy::kExact) {
    r.Fail(t->get("kind"), "adder.kind", "\"fma\" needs product.policy = \"exact\"");
  }
}

// [accumulator]
void ReadAccumulator(Reader& r, const toml::table& root, Model& m) {
  const toml::table* t = SubTable(r, root, "accumulator", true);
  if (t == nullptr) return;
  r.CheckKeys(*t, "accumulator", {"format", "fraction_bits", "rounding"});
  m.accumulator.format = r.Format(*t, "accumulator", "format", true, t);
  if (m.accumulator.format != nullptr) {
    m.accumulator.fraction_bits = m.accumulator.format->fraction_bits;
    if (m.accumulator.format->nonfinite != NonFinite::kIeee || !m.accumulator.format->has_zero) {
      r.Fail(t->get("format"), "accumulator.format",
             "must be an IEEE-like format with zero and Inf (float16/bfloat16/tfloat32/"
             "float32/float64)");
    }
    if (auto fb = r.Int(*t, "accumulator", "fraction_bits", false, 1,
                        m.accumulator.format->fraction_bits, t)) {
      m.accumulator.fraction_bits = static_cast<int>(*fb);
    }
  }
  r.RoundingKey(*t, "accumulator", "rounding", m.accumulator.combine_env);
}

// The keys of [chain] besides `kind` that apply to each chain.kind.
const std::set<std::string_view>& ChainKeys(ChainKind kind) {
  static const std::map<ChainKind, std::set<std::string_view>> kKeys = {
      {ChainKind::kSequential, {}},
      {ChainKind::kPairwise, {"leaf", "unroll", "split_multiple", "chunk"}},
      {ChainKind::kBlocked, {"block", "tail", "tail_multiple"}},
      {ChainKind::kStrided, {"ways", "combine"}},
      {ChainKind::kSplitK, {"slices", "order"}},
      {ChainKind::kPromote, {"every", "format", "rounding"}},
      {ChainKind::kTree, {"shape"}},
      {ChainKind::kSimd, {"lanes", "unit", "unit_order", "reduce"}},
      {ChainKind::kCascade, {"lanes"}}};
  return kKeys.at(kind);
}

// The parameters of [chain] for m.chain.kind (already read and checked).
void ReadChainParameters(Reader& r, const toml::table& t, Model& m) {
  const int g = m.adder.kind == AdderKind::kFused ? m.adder.group : 1;
  auto multiple_of_g = [&](std::string_view key, int64_t v) {
    if (v % g != 0) {
      r.Fail(t.get(key), Reader::Dotted("chain", key),
             Cat("must be a multiple of adder.group (", g, ") with a fused adder"));
    }
  };
  constexpr int64_t kBig = int64_t{1} << 30;
  switch (m.chain.kind) {
    case ChainKind::kSequential:
      break;
    case ChainKind::kPairwise:
      if (auto v = r.Int(t, "chain", "leaf", false, 1, kBig, &t)) m.chain.leaf = int(*v);
      if (auto v = r.Int(t, "chain", "unroll", false, 1, 64, &t)) m.chain.unroll = int(*v);
      if (auto v = r.Int(t, "chain", "split_multiple", false, 1, kBig, &t)) {
        m.chain.split_multiple = int(*v);
      }
      if (auto v = r.Int(t, "chain", "chunk", false, 1, kBig, &t)) m.chain.chunk = int(*v);
      if (r.ok() && g > 1) {
        multiple_of_g("leaf", m.chain.leaf);
        if (m.chain.chunk > 0) multiple_of_g("chunk", m.chain.chunk);
        if (m.chain.unroll != 1) r.Fail(t.get("unroll"), "chain.unroll",
                                        "must be 1 with a fused adder");
        multiple_of_g("split_multiple", m.chain.split_multiple);
      }
      break;
    case ChainKind::kBlocked:
      if (auto v = r.Int(t, "chain", "block", true, 1, kBig, &t)) {
        m.chain.block = int(*v);
        multiple_of_g("block", *v);
      }
      m.chain.tail = r.Choice(t, "chain", "tail", false,
                              {{"fixed", BlockTail::kFixed},
                               {"halve_down", BlockTail::kHalveDown},
                               {"halve_up", BlockTail::kHalveUp}},
                              BlockTail::kFixed, &t)
                         .value_or(BlockTail::kFixed);
      if (auto v = r.Int(t, "chain", "tail_multiple", false, 1, kBig, &t)) {
        m.chain.tail_multiple = int(*v);
        if (m.chain.tail == BlockTail::kFixed) {
          r.Fail(t.get("tail_multiple"), "chain.tail_multiple",
                 "applies only with chain.tail = \"halve_down\" or \"halve_up\"");
        } else {
          multiple_of_g("tail_multiple", *v);
        }
      } else if (r.ok() && m.chain.tail != BlockTail::kFixed && g > 1) {
        r.Fail(t.get("tail"), "chain.tail",
               Cat("needs chain.tail_multiple, a multiple of adder.group (", g,
                   "), with a fused adder"));
      }
      break;
    case ChainKind::kStrided:
      if (auto v = r.Int(t, "chain", "ways", true, 2, 4096, &t)) m.chain.ways = int(*v);
      m.chain.combine = r.Choice(t, "chain", "combine", false,
                                 {{"sequential", CombineOrder::kSequential},
                                  {"pairwise", CombineOrder::kPairwise}},
                                 CombineOrder::kSequential, &t)
                            .value_or(CombineOrder::kSequential);
      break;
    case ChainKind::kSplitK:
      if (auto v = r.Int(t, "chain", "slices", true, 1, 4096, &t)) m.chain.slices = int(*v);
      m.chain.order =
          r.Choice(t, "chain", "order", false,
                   {{"fixed", SplitOrder::kFixed}, {"random", SplitOrder::kRandom}},
                   SplitOrder::kFixed, &t)
              .value_or(SplitOrder::kFixed);
      break;
    case ChainKind::kPromote:
      if (auto v = r.Int(t, "chain", "every", true, 1, kBig, &t)) {
        m.chain.every = int(*v);
        multiple_of_g("every", *v);
      }
      m.chain.promote_format = r.Format(t, "chain", "format", false, &t);
      if (m.chain.promote_format == nullptr) m.chain.promote_format = &Float32();
      if (r.ok() && m.chain.promote_format->nonfinite != NonFinite::kIeee) {
        r.Fail(t.get("format"), "chain.format", "must be an IEEE-like format");
      }
      r.RoundingKey(t, "chain", "rounding", m.chain.promote_env);
      break;
    case ChainKind::kSimd:
      if (auto v = r.Int(t, "chain", "lanes", true, 1, 4096, &t)) {
        m.chain.lanes = int(*v);
        if ((*v & (*v - 1)) != 0) {
          r.Fail(t.get("lanes"), "chain.lanes", Cat("must be a power of two, got ", *v));
        }
      }
      if (auto v = r.Int(t, "chain", "unit", false, 1, 64, &t)) m.chain.unit = int(*v);
      m.chain.unit_order =
          r.Choice(t, "chain", "unit_order", false,
                   {{"forward", UnitOrder::kForward}, {"reverse", UnitOrder::kReverse}},
                   UnitOrder::kForward, &t)
              .value_or(UnitOrder::kForward);
      m.chain.reduce = r.Choice(t, "chain", "reduce", false,
                                {{"halving", CombineOrder::kHalving},
                                 {"sequential", CombineOrder::kSequential},
                                 {"pairwise", CombineOrder::kPairwise}},
                                CombineOrder::kHalving, &t)
                           .value_or(CombineOrder::kHalving);
      break;
    case ChainKind::kCascade:
      if (auto v = r.Int(t, "chain", "lanes", true, 1, 4096, &t)) m.chain.lanes = int(*v);
      break;
    case ChainKind::kTree:
      if (auto v = r.String(t, "chain", "shape", true, &t)) {
        const std::string err = ParseTreeShape(*v, m.chain);
        if (!err.empty()) r.Fail(t.get("shape"), "chain.shape", err);
      }
      break;
  }
}

// [chain] (after [adder]: a fused adder's group constrains it).
void ReadChain(Reader& r, const toml::table& root, Model& m) {
  const toml::table* t = SubTable(r, root, "chain", true);
  if (t == nullptr) return;
  r.CheckKeys(*t, "chain",
              {"kind", "leaf", "unroll", "split_multiple", "chunk", "block", "ways", "combine",
               "slices", "order", "every", "format", "rounding", "lanes", "unit", "unit_order",
               "reduce", "shape", "tail", "tail_multiple"});
  const std::optional<ChainKind> kind =
      r.Choice(*t, "chain", "kind", true,
               {{"sequential", ChainKind::kSequential}, {"pairwise", ChainKind::kPairwise},
                {"blocked", ChainKind::kBlocked}, {"strided", ChainKind::kStrided},
                {"split_k", ChainKind::kSplitK}, {"promote", ChainKind::kPromote},
                {"tree", ChainKind::kTree}, {"simd", ChainKind::kSimd},
                {"cascade", ChainKind::kCascade}},
               ChainKind::kSequential, t);
  if (kind && r.ok()) {
    m.chain.kind = *kind;
    const std::set<std::string_view>& applies = ChainKeys(*kind);
    for (const auto& [key, v] : *t) {
      if (key.str() != "kind" && !applies.contains(key.str())) {
        r.Fail(&v, Reader::Dotted("chain", key.str()), "does not apply to this chain.kind");
        break;
      }
    }
    if (m.adder.kind == AdderKind::kKahan && m.chain.kind != ChainKind::kSequential) {
      r.Fail(t->get("kind"), "chain.kind",
             "adder.kind = \"kahan\" needs chain.kind = \"sequential\"");
    }
    if (m.adder.kind == AdderKind::kFused &&
        (m.chain.kind == ChainKind::kSimd || m.chain.kind == ChainKind::kCascade)) {
      r.Fail(t->get("kind"), "chain.kind", "\"simd\" and \"cascade\" need adder.kind = "
                                           "\"ieee\" or \"fma\"");
    }
  }
  ReadChainParameters(r, *t, m);
}

// [output] (after [accumulator] and [chain]: its format defaults to the final accumulator's).
void ReadOutput(Reader& r, const toml::table& root, Model& m) {
  if (const toml::table* t = SubTable(r, root, "output", false)) {
    r.CheckKeys(*t, "output", {"format", "rounding", "sat"});
    m.output.format = r.Format(*t, "output", "format", false, t);
    r.RoundingKey(*t, "output", "rounding", m.output.env);
    if (auto b = r.Bool(*t, "output", "sat")) m.output.env.saturate = *b;
  }
  if (r.ok() && m.output.format == nullptr) m.output.format = &m.FinalAccumulatorFormat();
}

// [provenance] (last: it must cover every parameter the file set, `params`).
void ReadProvenance(Reader& r, const toml::table& root,
                    const std::vector<std::pair<std::string, std::string>>& params, Model& m) {
  const toml::table* t = SubTable(r, root, "provenance", true);
  if (t == nullptr) return;
  std::set<std::string> present;
  for (const auto& [k, v] : params) present.insert(k);
  for (const auto& [k, v] : *t) {
    if (!r.ok()) break;
    const std::string key(k.str());
    const std::string dotted = Cat("provenance.", key);
    if (key == "unconfirmed") {
      const toml::array* arr = v.as_array();
      if (arr == nullptr) {
        r.Fail(&v, dotted, "must be an array of parameter names");
        break;
      }
      for (const toml::node& e : *arr) {
        const auto* s = e.as_string();
        if (s == nullptr || !present.contains(s->get())) {
          r.Fail(&e, dotted,
                 Cat("entries must name parameters the file sets",
                     s != nullptr ? Cat(", got \"", s->get(), "\"") : ""));
          break;
        }
        m.unconfirmed.push_back(s->get());
      }
      continue;
    }
    const auto* s = v.as_string();
    if (s == nullptr) {
      r.Fail(&v, dotted, "must be a string (the source)");
    } else if (!present.contains(key)) {
      r.Fail(&v, dotted, "names a parameter the file does not set");
    } else {
      m.provenance[key] = s->get();
    }
  }
  for (const auto& [k, v] : params) {
    if (!r.ok()) break;
    if (k == "name" || k == "description" || k == "output.sat") continue;
    if (!m.provenance.contains(k)) {
      r.Fail(r.lines_[k], k, "has no source in [provenance] (say \"unknown\" and list it "
                             "in provenance.unconfirmed)");
    }
  }
}

// One function per table, in this order (the first error sticks, and later tables check
// against earlier ones).
absl::StatusOr<Model> Parse(const toml::table& root, std::string_view file) {
  Reader r(file);
  Model m;
  if (const toml::node* env = root.get("envelope")) {
    r.Fail(env, "envelope", "this file is an envelope, not a model (LoadEnvelopeFile, "
                            "ModelCatalog::FindEnvelope)");
    return r.status();
  }
  r.CheckKeys(root, "",
              {"name", "description", "operations", "inputs", "product", "adder", "accumulator",
               "chain", "output", "provenance"});
  ReadNameAndDescription(r, root, file, &m.name, &m.description);
  ReadOperations(r, root, m);
  ReadInputs(r, root, m);
  ReadProduct(r, root, m);
  ReadAdder(r, root, m);
  ReadAccumulator(r, root, m);
  ReadChain(r, root, m);
  ReadOutput(r, root, m);
  std::vector<std::pair<std::string, std::string>> params = r.parameters_;
  ReadProvenance(r, root, params, m);
  if (!r.ok()) return r.status();
  m.parameters = std::move(params);
  return m;
}

// Parses `text` as TOML and hands the table to `parse_table` (which may throw on a toml++ type
// error): every failure becomes InvalidArgument naming the file (and the line for syntax errors).
template <typename T, typename ParseTable>
absl::StatusOr<T> ParseTomlFile(std::string_view text, std::string_view file_name,
                                ParseTable parse_table) {
  const std::string file(file_name);
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(
        Cat(file, ":", e.source().begin.line, ": TOML syntax: ", e.description()));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(Cat(file, ": ", e.what()));
  }
  try {
    return parse_table(root, file);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(Cat(file, ": ", e.what()));
  }
}

}  // namespace

absl::StatusOr<Model> ParseModel(std::string_view toml_text, std::string_view file_name) {
  return ParseTomlFile<Model>(toml_text, file_name.empty() ? "<model>" : file_name, Parse);
}

namespace {

absl::StatusOr<Envelope> ParseEnvelopeTable(const toml::table& root, std::string_view file) {
  Reader r(file);
  Envelope e;
  r.CheckKeys(root, "", {"name", "description", "envelope", "provenance"});
  ReadNameAndDescription(r, root, file, &e.name, &e.description);
  if (r.ok()) {
    const toml::node* n = root.get("envelope");
    const toml::array* arr = n != nullptr ? n->as_array() : nullptr;
    if (n == nullptr) {
      r.Fail(nullptr, "envelope", "required key missing");
    } else if (arr == nullptr) {
      r.Fail(n, "envelope", "must be an array of model names");
    } else {
      std::set<std::string> seen;
      for (const toml::node& m : *arr) {
        const auto* s = m.as_string();
        if (s == nullptr || !ValidName(s->get())) {
          r.Fail(&m, "envelope", "entries must be model names ([a-z0-9.-]+)");
          break;
        }
        if (!seen.insert(s->get()).second) {
          r.Fail(&m, "envelope", Cat("\"", s->get(), "\" listed twice"));
          break;
        }
        if (s->get() == e.name) {
          r.Fail(&m, "envelope", "an envelope cannot contain itself");
          break;
        }
        e.members.push_back(s->get());
      }
      if (r.ok() && e.members.size() < 2) {
        r.Fail(n, "envelope", Cat("needs at least 2 models, got ", e.members.size()));
      }
    }
  }
  if (const toml::table* t = SubTable(r, root, "provenance", true)) {
    r.CheckKeys(*t, "provenance", {"envelope", "unconfirmed"});
    if (auto s = r.String(*t, "provenance", "envelope", true, t)) e.members_source = *s;
    if (const toml::node* u = t->get("unconfirmed"); u != nullptr && r.ok()) {
      const toml::array* arr = u->as_array();
      if (arr == nullptr) {
        r.Fail(u, "provenance.unconfirmed", "must be an array of parameter names");
      } else {
        for (const toml::node& x : *arr) {
          const auto* s = x.as_string();
          if (s == nullptr || s->get() != "envelope") {
            r.Fail(&x, "provenance.unconfirmed", "the only entry an envelope file can have is "
                                                 "\"envelope\"");
            break;
          }
          e.members_unconfirmed = true;
        }
      }
    }
  }
  if (!r.ok()) return r.status();
  return e;
}

}  // namespace

absl::StatusOr<Envelope> ParseEnvelope(std::string_view toml_text, std::string_view file_name) {
  return ParseTomlFile<Envelope>(toml_text, file_name.empty() ? "<envelope>" : file_name,
                                 ParseEnvelopeTable);
}

absl::StatusOr<Envelope> LoadEnvelopeFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadUserFile(path, kMaxTextFileBytes, "model file");
  if (!text.ok()) return text.status();
  return ParseEnvelope(*text, path);
}

bool IsEnvelopeText(std::string_view toml_text) {
  try {
    const toml::table root = toml::parse(toml_text);
    return root.contains("envelope");
  } catch (const std::exception&) {
    return false;
  }
}

absl::StatusOr<Model> LoadModelFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadUserFile(path, kMaxTextFileBytes, "model file");
  if (!text.ok()) return text.status();
  return ParseModel(*text, path);
}

int BlockedBlockEnd(const Model::Chain& chain, int begin, int k) {
  const int64_t r = int64_t{k} - begin;
  const int64_t block = chain.block;
  if (r <= block) return k;
  if (chain.tail == BlockTail::kFixed || r >= 2 * block) return static_cast<int>(begin + block);
  int64_t h = chain.tail == BlockTail::kHalveDown ? r / 2 : (r + 1) / 2;
  const int64_t m = chain.tail_multiple;
  h = (h + m - 1) / m * m;
  return static_cast<int>(begin + std::min(h, r));
}

}  // namespace fpconform
