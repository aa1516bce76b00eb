#include "accumulation/model_fit.h"

#include <toml++/toml.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace fpconform {
namespace {

int Group(const Model& m) { return m.adder.kind == AdderKind::kFused ? m.adder.group : 1; }

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

// The non-empty slices [lo, hi) of a split_k chain over k products, in the order they are added.
std::vector<std::pair<int, int>> SliceRanges(int k, int slices, int multiple, int group,
                                             SplitOrder order) {
  int slice = (k + slices - 1) / slices;
  slice = (slice + multiple - 1) / multiple * multiple;
  slice = (slice + group - 1) / group * group;
  std::vector<std::pair<int, int>> out;
  for (int s = 0; s < slices; ++s) {
    const int lo = std::min(k, s * slice), hi = std::min(k, (s + 1) * slice);
    if (hi > lo) out.emplace_back(lo, hi);
  }
  if (order == SplitOrder::kReverse) std::reverse(out.begin(), out.end());
  return out;
}

// True when every chain length that must be a multiple of the group is one of g.
bool ChainFitsGroup(const Model::Chain& ch, int g) {
  if (!ch.permutation.empty()) return false;
  switch (ch.kind) {
    case ChainKind::kSequential: return true;
    case ChainKind::kSplitK: return ch.slice_multiple % g == 0;
    case ChainKind::kPromote: return ch.every % g == 0;
    case ChainKind::kBlocked:
      return ch.block % g == 0 && (ch.tail == BlockTail::kFixed || ch.tail_multiple % g == 0);
    case ChainKind::kStrided: return true;
    default: return false;
  }
}

}  // namespace

std::vector<FitVariant> SplitKFamily(const Model& base, int k, bool has_c, int max_slices) {
  std::vector<FitVariant> out;
  if (base.adder.kind == AdderKind::kKahan || k < 2) return out;
  const int g = Group(base);
  const bool c_commutes = !has_c || base.AddsCAfterChain();
  std::set<std::pair<std::vector<std::pair<int, int>>, int>> seen;
  // The base's own cut (when it is a split_k chain) is the base, not a variant.
  if (base.chain.kind == ChainKind::kSplitK) {
    std::vector<std::pair<int, int>> r =
        SliceRanges(k, base.chain.slices, std::max(1, base.chain.slice_multiple), g,
                    base.chain.order == SplitOrder::kReverse ? SplitOrder::kReverse
                                                             : SplitOrder::kFixed);
    if (base.chain.order != SplitOrder::kRandom) {
      const bool few = r.size() <= 2;
      if (few && c_commutes) std::sort(r.begin(), r.end());
      const bool same_combine = few || (r.size() == 3 && c_commutes);
      seen.insert({r, same_combine ? 0 : static_cast<int>(base.chain.combine)});
    }
  }
  for (int slices = 2; slices <= max_slices; ++slices) {
    for (int multiple : {g, 16, 32, 64, 128, 256}) {
      if (multiple % g != 0) continue;
      for (SplitOrder order : {SplitOrder::kFixed, SplitOrder::kReverse}) {
        for (CombineOrder combine : {CombineOrder::kSequential, CombineOrder::kPairwise}) {
          std::vector<std::pair<int, int>> r = SliceRanges(k, slices, multiple, g, order);
          if (r.size() < 2) continue;  // One slice: the base's sequential chain.
          const bool few = r.size() <= 2;
          if (few && c_commutes) std::sort(r.begin(), r.end());
          // Three partials: pairwise is (P0 + P1) + P2, sequential ((c + P0) + P1) + P2: the same
          // adds when c is +0 (absent, or added after the chain).
          const bool same_combine = few || (r.size() == 3 && c_commutes);
          if (!seen.insert({r, same_combine ? 0 : static_cast<int>(combine)}).second) continue;
          FitVariant v;
          const char* order_name = order == SplitOrder::kFixed ? "fixed" : "reverse";
          const char* combine_name =
              combine == CombineOrder::kSequential ? "sequential" : "pairwise";
          v.label = absl::StrCat("chain split_k, slices ", slices, ", slice_multiple ", multiple,
                                 ", order ", order_name, ", combine ", combine_name);
          v.set = {{"chain.kind", Quoted("split_k")},
                   {"chain.slices", absl::StrCat(slices)},
                   {"chain.slice_multiple", absl::StrCat(multiple)},
                   {"chain.order", Quoted(order_name)},
                   {"chain.combine", Quoted(combine_name)}};
          v.model = base;
          Model::Chain& ch = v.model.chain;
          const std::vector<int> permutation = ch.permutation;
          ch = Model::Chain{};
          ch.permutation = permutation;
          ch.kind = ChainKind::kSplitK;
          ch.slices = slices;
          ch.slice_multiple = multiple;
          ch.order = order;
          ch.combine = combine;
          out.push_back(std::move(v));
        }
      }
    }
  }
  return out;
}

std::vector<FitVariant> DatapathFamily(const Model& base, bool has_c) {
  std::vector<FitVariant> out;
  // The variant of base with one key set: `key` = `value` (the label shows `shown`), made on the
  // model by edit(model).
  auto add = [&](const std::string& key, const std::string& shown, const std::string& value,
                 auto edit) {
    FitVariant v;
    v.label = absl::StrCat(key, " ", shown);
    v.set = {{key, value}};
    v.model = base;
    edit(v.model);
    out.push_back(std::move(v));
  };
  if (base.adder.kind == AdderKind::kFused) {
    for (int g : {4, 8, 16, 32}) {
      if (g == base.adder.group || !ChainFitsGroup(base.chain, g)) continue;
      add("adder.group", absl::StrCat(g), absl::StrCat(g), [g](Model& m) { m.adder.group = g; });
    }
  }
  if (base.adder.kind == AdderKind::kFused) {
    // The bits kept below the group's largest exponent (24 on Ampere, 25 on Hopper: SOURCES.md).
    for (int f : {23, 24, 25, 26, 27}) {
      if (f == base.adder.fraction_bits) continue;
      add("adder.fraction_bits", absl::StrCat(f), absl::StrCat(f),
          [f](Model& m) { m.adder.fraction_bits = f; });
    }
  }
  if (has_c) {
    FitVariant v;
    v.model = base;
    const bool after = base.AddsCAfterChain();
    v.model.epilogue.c = after ? EpilogueC::kChain : EpilogueC::kAfter;
    v.label = absl::StrCat("epilogue.c ", after ? "chain" : "after");
    // epilogue.rounding applies only with c = "after" ("" removes a key).
    v.set = {{"epilogue.c", Quoted(after ? "chain" : "after")},
             {"epilogue.rounding", after ? "" : Quoted("rne")}};
    out.push_back(std::move(v));
  }
  if (base.inputs.convert_to != nullptr) {
    for (const auto& [name, mode] : {std::pair{"rtz", Rounding::kTowardZero},
                                     {"rne", Rounding::kNearestEven},
                                     {"rna", Rounding::kNearestAway}}) {
      if (base.inputs.convert_env.rounding == mode) continue;
      add("inputs.convert_rounding", name, Quoted(name),
          [r = mode](Model& m) { m.inputs.convert_env.rounding = r; });
    }
  }
  if (base.chain.kind == ChainKind::kPromote) {
    for (int every : {32, 64, 128, 256, 512, 1024}) {
      if (every == base.chain.every || every % Group(base) != 0) continue;
      add("chain.every", absl::StrCat(every), absl::StrCat(every),
          [every](Model& m) { m.chain.every = every; });
    }
  }
  return out;
}

absl::StatusOr<std::string> VariantModelText(const std::string& base_toml, const FitVariant& v,
                                             const std::string& name,
                                             const std::string& description,
                                             const std::string& evidence) {
  toml::table root;
  try {
    root = toml::parse(base_toml);
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrCat("fit: the base model is not TOML: ",
                                                   std::string(e.description())));
  }
  toml::table* prov = root["provenance"].as_table();
  if (prov == nullptr) {
    root.insert_or_assign("provenance", toml::table{});
    prov = root["provenance"].as_table();
  }
  std::set<std::string> unconfirmed;
  if (const toml::array* u = (*prov)["unconfirmed"].as_array()) {
    for (const toml::node& n : *u) {
      if (const auto s = n.value<std::string>()) unconfirmed.insert(*s);
    }
  }
  auto drop = [&](const std::string& dotted) {
    prov->erase(dotted);
    unconfirmed.erase(dotted);
  };
  const bool new_chain = std::any_of(v.set.begin(), v.set.end(), [](const auto& kv) {
    return kv.first == "chain.kind";
  });
  if (new_chain) {
    if (toml::table* chain = root["chain"].as_table()) {
      std::vector<std::string> keys;
      for (const auto& [key, node] : *chain) {
        if (key.str() != "permutation") keys.emplace_back(key.str());
      }
      for (const std::string& key : keys) {
        chain->erase(key);
        drop("chain." + key);
      }
    }
  }
  for (const auto& [dotted, text] : v.set) {
    const std::vector<std::string> parts = absl::StrSplit(dotted, '.');
    if (parts.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat("fit: bad key ", dotted));
    }
    toml::table* t = root[parts[0]].as_table();
    if (t == nullptr) {
      root.insert_or_assign(parts[0], toml::table{});
      t = root[parts[0]].as_table();
    }
    if (text.empty()) {
      t->erase(parts[1]);
      drop(dotted);
      continue;
    }
    if (text.front() == '"') {
      t->insert_or_assign(parts[1], text.substr(1, text.size() - 2));
    } else {
      t->insert_or_assign(parts[1], static_cast<int64_t>(std::stoll(text)));
    }
    prov->insert_or_assign(dotted, evidence);
    unconfirmed.insert(dotted);
  }
  root.insert_or_assign("name", name);
  root.insert_or_assign("description", description);
  toml::array u;
  for (const std::string& s : unconfirmed) u.push_back(s);
  prov->insert_or_assign("unconfirmed", std::move(u));
  std::ostringstream os;
  os << root << "\n";
  const std::string text = os.str();
  absl::StatusOr<Model> check = ParseModel(text, name + ".toml");
  if (!check.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("fit: the fitted model does not parse: ", check.status().message()));
  }
  return text;
}

}  // namespace fpconform
