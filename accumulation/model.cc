#include "accumulation/model.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "absl/status/status.h"
#include "accumulation/strings_internal.h"
#include "base/user_file.h"
#include "cases/toml_reader.h"

namespace fpconform {
namespace {

using accumulation_internal::Cat;
using accumulation_internal::Join;

// A float format of the table named by the string `key`, or nullptr (absent, or an error).
// `integers`: the integer formats an integer model takes there (nullptr: floats only).
const FormatSpec* Format(TomlReader& r, const toml::table& t, std::string_view prefix,
                         std::string_view key, TomlKey need = TomlKey::kOptional,
                         std::initializer_list<const FormatSpec*> integers = {}) {
  std::optional<std::string> s = r.String(t, prefix, key, need);
  if (!s) return nullptr;
  const FormatSpec* f = FindFormat(*s);
  if (f != nullptr && std::find(integers.begin(), integers.end(), f) != integers.end()) return f;
  if (f == nullptr || !IsFloat(*f)) {
    r.Fail(t.get(key), TomlReader::Dotted(prefix, key),
           Cat("not a float format of the table: \"", *s, "\"",
               integers.size() == 0 ? "" : Cat(" (nor ", integers.size() == 1 ? "the integer format "
                                                                              : "an integer format ",
                                               "of adder.kind = \"integer\")")));
    return nullptr;
  }
  return f;
}

// Parses a rounding into env (default kept when absent). `only` restricts the set.
void RoundingKey(TomlReader& r, const toml::table& t, std::string_view prefix, std::string_view key,
                 OpEnv& env, std::initializer_list<std::string_view> only = {}) {
  std::optional<std::string> s = r.String(t, prefix, key);
  if (!s) return;
  bool allowed = only.size() == 0;
  for (std::string_view o : only) allowed |= (o == *s);
  OpEnv parsed = env;
  if (!allowed || !ParseRounding(*s, parsed)) {
    std::string set = only.size() == 0 ? "rne rna rtz rup rdn rto sr<k>" : Join(only, " ");
    r.Fail(t.get(key), TomlReader::Dotted(prefix, key),
           Cat("must be one of ", set, ", got \"", *s, "\""));
    return;
  }
  env = parsed;
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
void ReadNameAndDescription(TomlReader& r, const toml::table& root, std::string_view file,
                            std::string* name, std::string* description) {
  if (auto s = r.String(root, "", "name", TomlKey::kRequired)) {
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
  if (auto s = r.String(root, "", "description", TomlKey::kRequired)) {
    if (s->find('\n') != std::string::npos) {
      r.Fail(root.get("description"), "description", "must be one line");
    }
    *description = *s;
  }
}

// `operations`: which of dot, matmul, sum the model defines (all when absent).
void ReadOperations(TomlReader& r, const toml::table& root, Model& m) {
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
void ReadInputs(TomlReader& r, const toml::table& root, Model& m) {
  const toml::table* t = r.Table(root, "", "inputs", TomlKey::kRequired);
  if (t == nullptr) return;
  r.CheckKeys(*t, "inputs", {"a", "b", "convert_to", "convert_rounding", "daz"});
  m.inputs.a = Format(r, *t, "inputs", "a", TomlKey::kRequired, {&Int8(), &UInt8()});
  m.inputs.b = Format(r, *t, "inputs", "b", TomlKey::kOptional, {&Int8(), &UInt8()});
  if (m.inputs.b == nullptr) m.inputs.b = m.inputs.a;
  m.inputs.convert_to = Format(r, *t, "inputs", "convert_to");
  if (m.inputs.convert_to == nullptr) {
    r.Reject(*t, "inputs", "convert_rounding", "applies only with inputs.convert_to");
  }
  RoundingKey(r, *t, "inputs", "convert_rounding", m.inputs.convert_env);
  if (auto b = r.Bool(*t, "inputs", "daz")) m.inputs.daz = *b;
}

// [product]
void ReadProduct(TomlReader& r, const toml::table& root, Model& m) {
  const toml::table* t = r.Table(root, "", "product", TomlKey::kOptional);
  if (t == nullptr) return;
  r.CheckKeys(*t, "product", {"policy", "format", "rounding"});
  m.product.policy =
      r.Choice<ProductPolicy>(*t, "product", "policy",
                              {{"exact", ProductPolicy::kExact}, {"round", ProductPolicy::kRound}})
          .value_or(ProductPolicy::kExact);
  if (m.product.policy == ProductPolicy::kRound) {
    m.product.format = Format(r, *t, "product", "format", TomlKey::kRequired);
    RoundingKey(r, *t, "product", "rounding", m.product.env);
  } else {
    r.Reject(*t, "product", "format", "applies only with product.policy = \"round\"");
    r.Reject(*t, "product", "rounding", "applies only with product.policy = \"round\"");
  }
}

// [adder] (after [product]: fma needs exact products).
void ReadAdder(TomlReader& r, const toml::table& root, Model& m) {
  const toml::table* t = r.Table(root, "", "adder", TomlKey::kRequired);
  if (t == nullptr) return;
  r.CheckKeys(*t, "adder",
              {"kind", "rounding", "group", "fraction_bits", "alignment", "alignment_exponent",
               "normalization_rounding", "overflow", "ftz", "daz"});
  const std::optional<AdderKind> kind = r.Choice<AdderKind>(*t, "adder", "kind",
                                                            {{"ieee", AdderKind::kIeee},
                                                             {"fma", AdderKind::kFma},
                                                             {"fused", AdderKind::kFused},
                                                             {"kahan", AdderKind::kKahan},
                                                             {"integer", AdderKind::kInteger}},
                                                            TomlKey::kRequired);
  if (!kind) return;
  m.adder.kind = *kind;
  const bool int_a = m.inputs.a != nullptr && !IsFloat(*m.inputs.a);
  const bool int_b = m.inputs.b != nullptr && !IsFloat(*m.inputs.b);
  if (*kind == AdderKind::kInteger) {
    for (std::string_view key : {"rounding", "group", "fraction_bits", "alignment",
                                 "alignment_exponent", "normalization_rounding", "overflow", "ftz",
                                 "daz"}) {
      r.Reject(*t, "adder", key, "does not apply to adder.kind = \"integer\" (every sum is exact)");
    }
    if (m.inputs.a != nullptr && (!int_a || !int_b)) {
      r.Fail(t->get("kind"), "adder.kind",
             "\"integer\" needs integer inputs (inputs.a and inputs.b: int8 or uint8)");
    }
    if (m.inputs.convert_to != nullptr) {
      r.Fail(t->get("kind"), "adder.kind", "\"integer\" takes no inputs.convert_to");
    }
    if (m.product.policy != ProductPolicy::kExact) {
      r.Fail(t->get("kind"), "adder.kind", "\"integer\" needs product.policy = \"exact\"");
    }
    return;
  }
  if (int_a || int_b) {  // Reported where the format is named, as any non-float format.
    const toml::table* in = root.get_as<toml::table>("inputs");
    const std::string_view key = int_a ? "a" : "b";
    r.Fail(in != nullptr ? in->get(key) : nullptr, TomlReader::Dotted("inputs", key),
           Cat("not a float format of the table: \"", (int_a ? m.inputs.a : m.inputs.b)->name,
               "\" (integer inputs need adder.kind = \"integer\")"));
    return;
  }
  if (*kind == AdderKind::kFused) {
    r.Reject(*t, "adder", "ftz", "does not apply to a fused adder");
    r.Reject(*t, "adder", "daz", "applies only to adder.kind = \"ieee\" or \"fma\"");
    r.Reject(*t, "adder", "rounding",
             "does not apply to a fused adder (use adder.normalization_rounding)");
    m.adder.group =
        static_cast<int>(r.Int(*t, "adder", "group", 1, 256, TomlKey::kRequired).value_or(1));
    m.adder.fraction_bits = static_cast<int>(
        r.Int(*t, "adder", "fraction_bits", 1, 100, TomlKey::kRequired).value_or(1));
    m.adder.alignment = r.Choice<Alignment>(*t, "adder", "alignment",
                                            {{"truncate", Alignment::kTruncate},
                                             {"round_down", Alignment::kRoundDown}})
                            .value_or(Alignment::kTruncate);
    m.adder.alignment_exponent =
        r.Choice<AlignmentExponent>(
             *t, "adder", "alignment_exponent",
             {{"nominal", AlignmentExponent::kNominal}, {"actual", AlignmentExponent::kActual}})
            .value_or(AlignmentExponent::kNominal);
    m.adder.env.rounding = Rounding::kTowardZero;
    RoundingKey(r, *t, "adder", "normalization_rounding", m.adder.env, {"rtz", "rne"});
    m.adder.overflow = r.Choice<FusedOverflow>(*t, "adder", "overflow",
                                               {{"ieee", FusedOverflow::kIeee},
                                                {"inf", FusedOverflow::kInf}})
                           .value_or(FusedOverflow::kIeee);
    return;
  }
  for (std::string_view key : {"group", "fraction_bits", "alignment", "alignment_exponent",
                               "normalization_rounding", "overflow"}) {
    r.Reject(*t, "adder", key, "applies only to adder.kind = \"fused\"");
  }
  RoundingKey(r, *t, "adder", "rounding", m.adder.env);
  if (auto b = r.Bool(*t, "adder", "ftz")) m.adder.env.flush_to_zero = *b;
  if (*kind == AdderKind::kKahan) {
    r.Reject(*t, "adder", "daz", "applies only to adder.kind = \"ieee\" or \"fma\"");
  }
  if (auto b = r.Bool(*t, "adder", "daz")) m.adder.env.denormals_are_zero = *b;
  if (*kind == AdderKind::kFma && m.product.policy != ProductPolicy::kExact) {
    r.Fail(t->get("kind"), "adder.kind", "\"fma\" needs product.policy = \"exact\"");
  }
}

// [accumulator]
void ReadAccumulator(TomlReader& r, const toml::table& root, Model& m) {
  const toml::table* t = r.Table(root, "", "accumulator", TomlKey::kRequired);
  if (t == nullptr) return;
  r.CheckKeys(*t, "accumulator", {"format", "fraction_bits", "rounding"});
  const bool integer = m.adder.kind == AdderKind::kInteger;
  m.accumulator.format = Format(r, *t, "accumulator", "format", TomlKey::kRequired,
                                integer ? std::initializer_list<const FormatSpec*>{&Int32()}
                                        : std::initializer_list<const FormatSpec*>{});
  if (m.accumulator.format != nullptr && integer) {
    m.accumulator.fraction_bits = 0;
    if (m.accumulator.format != &Int32()) {
      r.Fail(t->get("format"), "accumulator.format", "adder.kind = \"integer\" needs \"int32\"");
    }
    r.Reject(*t, "accumulator", "fraction_bits", "does not apply to an int32 accumulator");
    r.Reject(*t, "accumulator", "rounding", "does not apply to an int32 accumulator");
    return;
  }
  if (m.accumulator.format != nullptr) {
    m.accumulator.fraction_bits = m.accumulator.format->fraction_bits;
    if (m.accumulator.format->nonfinite != NonFinite::kIeee || !m.accumulator.format->has_zero) {
      r.Fail(t->get("format"), "accumulator.format",
             "must be an IEEE-like format with zero and Inf (float16/bfloat16/tfloat32/"
             "float32/float64)");
    }
    if (auto fb =
            r.Int(*t, "accumulator", "fraction_bits", 1, m.accumulator.format->fraction_bits)) {
      m.accumulator.fraction_bits = static_cast<int>(*fb);
    }
  }
  RoundingKey(r, *t, "accumulator", "rounding", m.accumulator.combine_env);
}

// chain.permutation: whitespace-separated decimal indices, each of 0..m-1 exactly once
// (1 <= m <= 4096). Returns "" or the error (without the key).
std::string ParsePermutation(std::string_view text, std::vector<int>& out) {
  out.clear();
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ' || text[i] == '\t') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
    if (j == i || (j < text.size() && text[j] != ' ' && text[j] != '\t')) {
      return Cat("unexpected character '", text.substr(j, 1), "' at column ", j + 1);
    }
    if (j - i > 4 || out.size() >= 4096) return "more than 4096 entries, or an index above 4095";
    out.push_back(std::stoi(std::string(text.substr(i, j - i))));
    i = j;
  }
  if (out.empty()) return "empty permutation";
  const int m = static_cast<int>(out.size());
  std::vector<bool> seen(size_t(m), false);
  for (int v : out) {
    if (v >= m) return Cat("index ", v, " out of range 0..", m - 1, " (", m, " entries)");
    if (seen[size_t(v)]) return Cat("duplicate index ", v);
    seen[size_t(v)] = true;
  }
  return "";
}

// The keys of [chain] besides `kind` that apply to each chain.kind.
const std::set<std::string_view>& ChainKeys(ChainKind kind) {
  static const std::map<ChainKind, std::set<std::string_view>> kKeys = {
      {ChainKind::kSequential, {}},
      {ChainKind::kPairwise, {"leaf", "unroll", "split_multiple", "chunk"}},
      {ChainKind::kBlocked, {"block", "tail", "tail_multiple"}},
      {ChainKind::kStrided, {"ways", "combine"}},
      {ChainKind::kSplitK, {"slices", "slice_multiple", "order", "combine"}},
      {ChainKind::kPromote, {"every", "format", "rounding"}},
      {ChainKind::kTree, {"shape"}},
      {ChainKind::kSimd, {"lanes", "unit", "unit_order", "reduce"}},
      {ChainKind::kCascade, {"lanes"}}};
  return kKeys.at(kind);
}

// The parameters of [chain] for m.chain.kind (already read and checked).
void ReadChainParameters(TomlReader& r, const toml::table& t, Model& m) {
  const int g = m.adder.kind == AdderKind::kFused ? m.adder.group : 1;
  auto multiple_of_g = [&](std::string_view key, int64_t v) {
    if (v % g != 0) {
      r.Fail(t.get(key), TomlReader::Dotted("chain", key),
             Cat("must be a multiple of adder.group (", g, ") with a fused adder"));
    }
  };
  constexpr int64_t kBig = int64_t{1} << 30;
  // chain.<key>, an integer in 1..kBig, into `field` (kept when absent); with a fused adder a
  // multiple of its group.
  auto group_multiple = [&](std::string_view key, int& field, TomlKey need) {
    if (auto v = r.Int(t, "chain", key, 1, kBig, need)) {
      field = int(*v);
      multiple_of_g(key, *v);
    }
  };
  // chain.combine (strided and split_k chains): how the partial sums are added.
  auto read_combine = [&] {
    m.chain.combine = r.Choice<CombineOrder>(t, "chain", "combine",
                                             {{"sequential", CombineOrder::kSequential},
                                              {"pairwise", CombineOrder::kPairwise}})
                          .value_or(CombineOrder::kSequential);
  };
  switch (m.chain.kind) {
    case ChainKind::kSequential:
      break;
    case ChainKind::kPairwise:
      if (auto v = r.Int(t, "chain", "leaf", 1, kBig)) m.chain.leaf = int(*v);
      if (auto v = r.Int(t, "chain", "unroll", 1, 64)) m.chain.unroll = int(*v);
      if (auto v = r.Int(t, "chain", "split_multiple", 1, kBig)) {
        m.chain.split_multiple = int(*v);
      }
      if (auto v = r.Int(t, "chain", "chunk", 1, kBig)) m.chain.chunk = int(*v);
      if (r.ok() && g > 1) {
        multiple_of_g("leaf", m.chain.leaf);
        if (m.chain.chunk > 0) multiple_of_g("chunk", m.chain.chunk);
        if (m.chain.unroll != 1) r.Fail(t.get("unroll"), "chain.unroll",
                                        "must be 1 with a fused adder");
        multiple_of_g("split_multiple", m.chain.split_multiple);
      }
      break;
    case ChainKind::kBlocked:
      group_multiple("block", m.chain.block, TomlKey::kRequired);
      m.chain.tail = r.Choice<BlockTail>(t, "chain", "tail",
                                         {{"fixed", BlockTail::kFixed},
                                          {"halve_down", BlockTail::kHalveDown},
                                          {"halve_up", BlockTail::kHalveUp}})
                         .value_or(BlockTail::kFixed);
      if (auto v = r.Int(t, "chain", "tail_multiple", 1, kBig)) {
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
      if (auto v = r.Int(t, "chain", "ways", 2, 4096, TomlKey::kRequired)) m.chain.ways = int(*v);
      read_combine();
      break;
    case ChainKind::kSplitK:
      if (auto v = r.Int(t, "chain", "slices", 1, 4096, TomlKey::kRequired)) {
        m.chain.slices = int(*v);
      }
      m.chain.slice_multiple = g;
      group_multiple("slice_multiple", m.chain.slice_multiple, TomlKey::kOptional);
      m.chain.order = r.Choice<SplitOrder>(t, "chain", "order",
                                           {{"fixed", SplitOrder::kFixed},
                                            {"reverse", SplitOrder::kReverse},
                                            {"random", SplitOrder::kRandom}})
                          .value_or(SplitOrder::kFixed);
      read_combine();
      break;
    case ChainKind::kPromote:
      group_multiple("every", m.chain.every, TomlKey::kRequired);
      m.chain.promote_format = Format(r, t, "chain", "format");
      if (m.chain.promote_format == nullptr) m.chain.promote_format = &Float32();
      if (r.ok() && m.chain.promote_format->nonfinite != NonFinite::kIeee) {
        r.Fail(t.get("format"), "chain.format", "must be an IEEE-like format");
      }
      RoundingKey(r, t, "chain", "rounding", m.chain.promote_env);
      break;
    case ChainKind::kSimd:
      if (auto v = r.Int(t, "chain", "lanes", 1, 4096, TomlKey::kRequired)) {
        m.chain.lanes = int(*v);
        if ((*v & (*v - 1)) != 0) {
          r.Fail(t.get("lanes"), "chain.lanes", Cat("must be a power of two, got ", *v));
        }
      }
      if (auto v = r.Int(t, "chain", "unit", 1, 64)) m.chain.unit = int(*v);
      m.chain.unit_order =
          r.Choice<UnitOrder>(t, "chain", "unit_order",
                              {{"forward", UnitOrder::kForward}, {"reverse", UnitOrder::kReverse}})
              .value_or(UnitOrder::kForward);
      m.chain.reduce = r.Choice<CombineOrder>(t, "chain", "reduce",
                                              {{"halving", CombineOrder::kHalving},
                                               {"sequential", CombineOrder::kSequential},
                                               {"pairwise", CombineOrder::kPairwise}})
                           .value_or(CombineOrder::kHalving);
      break;
    case ChainKind::kCascade:
      if (auto v = r.Int(t, "chain", "lanes", 1, 4096, TomlKey::kRequired)) m.chain.lanes = int(*v);
      break;
    case ChainKind::kTree:
      if (auto v = r.String(t, "chain", "shape", TomlKey::kRequired)) {
        const std::string err = ParseTreeShape(*v, m.chain);
        if (!err.empty()) r.Fail(t.get("shape"), "chain.shape", err);
      }
      break;
  }
  // chain.permutation (every kind): the order of the products within each block.
  if (auto v = r.String(t, "chain", "permutation")) {
    const std::string err = ParsePermutation(*v, m.chain.permutation);
    if (!err.empty()) r.Fail(t.get("permutation"), "chain.permutation", err);
  }
}

// [chain] (after [adder]: a fused adder's group constrains it).
void ReadChain(TomlReader& r, const toml::table& root, Model& m) {
  const toml::table* t = r.Table(root, "", "chain", TomlKey::kRequired);
  if (t == nullptr) return;
  r.CheckKeys(*t, "chain",
              {"kind", "leaf", "unroll", "split_multiple", "chunk", "block", "ways", "combine",
               "slices", "slice_multiple", "order", "every", "format", "rounding", "lanes", "unit",
               "unit_order", "reduce", "shape", "tail", "tail_multiple", "permutation"});
  const std::optional<ChainKind> kind = r.Choice<ChainKind>(*t, "chain", "kind",
                                                            {{"sequential", ChainKind::kSequential},
                                                             {"pairwise", ChainKind::kPairwise},
                                                             {"blocked", ChainKind::kBlocked},
                                                             {"strided", ChainKind::kStrided},
                                                             {"split_k", ChainKind::kSplitK},
                                                             {"promote", ChainKind::kPromote},
                                                             {"tree", ChainKind::kTree},
                                                             {"simd", ChainKind::kSimd},
                                                             {"cascade", ChainKind::kCascade}},
                                                            TomlKey::kRequired);
  if (kind && r.ok()) {
    m.chain.kind = *kind;
    const std::set<std::string_view>& applies = ChainKeys(*kind);
    for (const auto& [key, v] : *t) {
      if (key.str() != "kind" && key.str() != "permutation" && !applies.contains(key.str())) {
        r.Fail(&v, TomlReader::Dotted("chain", key.str()), "does not apply to this chain.kind");
        break;
      }
    }
    if (m.adder.kind == AdderKind::kInteger && m.chain.kind != ChainKind::kSequential) {
      r.Fail(t->get("kind"), "chain.kind",
             "adder.kind = \"integer\" needs chain.kind = \"sequential\" (an exact sum has no order)");
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

// [epilogue] (after [chain]: its add is in the final accumulator's format).
void ReadEpilogue(TomlReader& r, const toml::table& root, Model& m) {
  const toml::table* t = r.Table(root, "", "epilogue", TomlKey::kOptional);
  if (t == nullptr) return;
  r.CheckKeys(*t, "epilogue", {"c", "rounding", "scale", "scale_order", "scale_block", "block_apply"});
  m.epilogue.c = r.Choice<EpilogueC>(*t, "epilogue", "c",
                                     {{"chain", EpilogueC::kChain},
                                      {"after", EpilogueC::kAfter},
                                      {"after_scale", EpilogueC::kAfterScale}},
                                     TomlKey::kRequired)
                     .value_or(EpilogueC::kChain);
  m.epilogue.scale = r.Choice<EpilogueScale>(*t, "epilogue", "scale",
                                             {{"none", EpilogueScale::kNone},
                                              {"tensor", EpilogueScale::kTensor},
                                              {"row_col", EpilogueScale::kRowCol},
                                              {"block", EpilogueScale::kBlock}},
                                             TomlKey::kOptional)
                         .value_or(EpilogueScale::kRowCol);
  if (m.epilogue.scale == EpilogueScale::kTensor || m.epilogue.scale == EpilogueScale::kRowCol) {
    m.epilogue.scale_order = r.Choice<ScaleOrder>(*t, "epilogue", "scale_order",
                                                  {{"product", ScaleOrder::kProduct},
                                                   {"sequential", ScaleOrder::kSequential}},
                                                  TomlKey::kOptional)
                                 .value_or(ScaleOrder::kProduct);
  } else {
    r.Reject(*t, "epilogue", "scale_order", "applies only with epilogue.scale = \"tensor\" or \"row_col\"");
  }
  if (m.epilogue.scale == EpilogueScale::kBlock) {
    m.epilogue.scale_block =
        static_cast<int>(r.Int(*t, "epilogue", "scale_block", 1, 1 << 20, TomlKey::kRequired).value_or(1));
    const std::optional<BlockApply> apply =
        r.Choice<BlockApply>(*t, "epilogue", "block_apply",
                             {{"fma", BlockApply::kFma},
                              {"mul_add", BlockApply::kMulAdd},
                              {"products", BlockApply::kProducts}},
                             TomlKey::kRequired);
    m.epilogue.block_apply = apply.value_or(BlockApply::kFma);
    if (apply.has_value() && *apply != BlockApply::kProducts) {
      // The scaled partial sums are the promoted ones: one promotion per scale block.
      if (m.chain.kind != ChainKind::kPromote) {
        r.Fail(t->get("block_apply"), "epilogue.block_apply",
               "\"fma\" and \"mul_add\" scale the partial sums of chain.kind = \"promote\"; use "
               "\"products\" for power-of-two scales on the products");
      } else if (m.chain.every != m.epilogue.scale_block) {
        r.Fail(t->get("scale_block"), "epilogue.scale_block",
               Cat("must equal chain.every (", m.chain.every, ") with block_apply = \"",
                   *apply == BlockApply::kFma ? "fma" : "mul_add", "\""));
      } else if (!m.chain.permutation.empty() &&
                 m.chain.every % static_cast<int>(m.chain.permutation.size()) != 0) {
        // Each promoted block must hold the products of one scale block.
        r.Fail(t->get("scale_block"), "epilogue.scale_block",
               Cat("must be a multiple of chain.permutation's length (", m.chain.permutation.size(),
                   ") with block_apply = \"", *apply == BlockApply::kFma ? "fma" : "mul_add", "\""));
      }
    }
  } else {
    r.Reject(*t, "epilogue", "scale_block", "applies only with epilogue.scale = \"block\"");
    r.Reject(*t, "epilogue", "block_apply", "applies only with epilogue.scale = \"block\"");
  }
  if (m.epilogue.c != EpilogueC::kChain) {
    RoundingKey(r, *t, "epilogue", "rounding", m.epilogue.env,
                {"rne", "rna", "rtz", "rup", "rdn"});
  } else {
    r.Reject(*t, "epilogue", "rounding", "applies only with epilogue.c = \"after\" or \"after_scale\"");
  }
  if (m.epilogue.c == EpilogueC::kAfterScale &&
      (m.epilogue.scale == EpilogueScale::kBlock || m.epilogue.scale_order != ScaleOrder::kProduct)) {
    r.Fail(t->get("c"), "epilogue.c",
           "\"after_scale\" adds c in one rounding with the combined scale: it needs epilogue.scale = "
           "\"tensor\", \"row_col\" or \"none\" and scale_order = \"product\"");
  }
}

// [output] (after [accumulator] and [chain]: its format defaults to the final accumulator's).
void ReadOutput(TomlReader& r, const toml::table& root, Model& m) {
  if (const toml::table* t = r.Table(root, "", "output", TomlKey::kOptional)) {
    r.CheckKeys(*t, "output", {"format", "rounding", "sat"});
    m.output.format = Format(r, *t, "output", "format");
    RoundingKey(r, *t, "output", "rounding", m.output.env);
    if (auto b = r.Bool(*t, "output", "sat")) m.output.env.saturate = *b;
  }
  if (r.ok() && m.output.format == nullptr) m.output.format = &m.FinalAccumulatorFormat();
}

// The node of the value read under `key` (for its line), or nullptr.
const toml::node* ValueNode(const TomlReader& r, std::string_view key) {
  for (const TomlValue& v : r.values()) {
    if (v.key == key) return v.node;
  }
  return nullptr;
}

// [provenance] (last: it must cover every parameter the file set, `params`).
void ReadProvenance(TomlReader& r, const toml::table& root,
                    const std::vector<std::pair<std::string, std::string>>& params, Model& m) {
  const toml::table* t = r.Table(root, "", "provenance", TomlKey::kRequired);
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
      r.Fail(ValueNode(r, k), k,
             "has no source in [provenance] (say \"unknown\" and list it "
             "in provenance.unconfirmed)");
    }
  }
}

// One function per table, in this order (the first error sticks, and later tables check
// against earlier ones).
absl::StatusOr<Model> Parse(const toml::table& root, std::string_view file) {
  TomlReader r(file);
  Model m;
  if (const toml::node* env = root.get("envelope")) {
    r.Fail(env, "envelope", "this file is an envelope, not a model (LoadEnvelopeFile, "
                            "ModelCatalog::FindEnvelope)");
    return r.status();
  }
  r.CheckKeys(root, "",
              {"name", "description", "operations", "inputs", "product", "adder", "accumulator",
               "chain", "epilogue", "output", "provenance"});
  ReadNameAndDescription(r, root, file, &m.name, &m.description);
  ReadOperations(r, root, m);
  ReadInputs(r, root, m);
  ReadProduct(r, root, m);
  ReadAdder(r, root, m);
  ReadAccumulator(r, root, m);
  ReadChain(r, root, m);
  ReadEpilogue(r, root, m);
  ReadOutput(r, root, m);
  std::vector<std::pair<std::string, std::string>> params;
  for (const TomlValue& v : r.values()) params.emplace_back(v.key, v.text);
  ReadProvenance(r, root, params, m);
  if (!r.ok()) return r.status();
  m.parameters = std::move(params);
  return m;
}

}  // namespace

absl::StatusOr<Model> ParseModel(std::string_view toml_text, std::string_view file_name) {
  return ParseTomlText<Model>(toml_text, file_name.empty() ? "<model>" : file_name, Parse);
}

namespace {

absl::StatusOr<Envelope> ParseEnvelopeTable(const toml::table& root, std::string_view file) {
  TomlReader r(file);
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
  if (const toml::table* t = r.Table(root, "", "provenance", TomlKey::kRequired)) {
    r.CheckKeys(*t, "provenance", {"envelope", "unconfirmed"});
    if (auto s = r.String(*t, "provenance", "envelope", TomlKey::kRequired)) e.members_source = *s;
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
  return ParseTomlText<Envelope>(toml_text, file_name.empty() ? "<envelope>" : file_name,
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
