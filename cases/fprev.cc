#include "cases/fprev.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fpconform {
namespace {

using Kind = SumTree::Kind;

// Nodes below `tree.root` in post-order (children before parents), without recursion: trees of
// sequential chains are as deep as they are long.
std::vector<int> PostOrder(const SumTree& tree) {
  std::vector<int> order;
  if (tree.root < 0) return order;
  std::vector<std::pair<int, size_t>> stack = {{tree.root, 0}};
  while (!stack.empty()) {
    const int v = stack.back().first;
    const size_t k = stack.back().second;
    if (k < tree.nodes[v].children.size()) {
      stack.back().second = k + 1;
      stack.emplace_back(tree.nodes[v].children[k], 0);
    } else {
      order.push_back(v);
      stack.pop_back();
    }
  }
  return order;
}

const char* AddOp(SumTree::AddRole role) {
  switch (role) {
    case SumTree::AddRole::kStep: return "+";
    case SumTree::AddRole::kCombine: return "+c";
    case SumTree::AddRole::kPromote: return "+p";
  }
  return "+";
}

// Prefix, separator between children and suffix of a node in the text format.
struct Syntax {
  std::string open, sep, close;
};

Syntax TextSyntax(const SumTree::Node& node) {
  switch (node.kind) {
    case Kind::kTerm: return {absl::StrCat("x", node.term), "", ""};
    case Kind::kInit: return {"c", "", ""};
    case Kind::kZero: return {"0", "", ""};
    case Kind::kAdd: return {"(", absl::StrCat(" ", AddOp(node.role), " "), ")"};
    case Kind::kFused: return {"fused[", " ", "]"};
    case Kind::kConvert: return {absl::StrCat("cvt:", node.format, "("), " ", ")"};
    case Kind::kNode:
      if (node.children.size() == 2) return {"(", " + ", ")"};
      return {"{", " ", "}"};
  }
  return {"?", " ", "?"};
}

std::string DotLabel(const SumTree::Node& node) {
  switch (node.kind) {
    case Kind::kTerm: return absl::StrCat("x", node.term);
    case Kind::kInit: return "c";
    case Kind::kZero: return "+0";
    case Kind::kAdd: return AddOp(node.role);
    case Kind::kFused: return absl::StrCat("fused G=", node.group);
    case Kind::kConvert: return absl::StrCat("cvt ", node.format);
    case Kind::kNode:
      if (node.children.size() == 2) return "+";
      return absl::StrCat("sum of ", node.children.size());
  }
  return "?";
}

}  // namespace

SumTree Canonical(const SumTree& tree) {
  SumTree out;
  out.n = tree.n;
  std::vector<int> map(tree.nodes.size(), -1);
  std::vector<int> min_term;  // Per output node.
  for (int v : PostOrder(tree)) {
    const SumTree::Node& node = tree.nodes[v];
    if (node.kind == Kind::kTerm) {
      SumTree::Node leaf;
      leaf.kind = Kind::kTerm;
      leaf.term = node.term;
      map[v] = out.Add(std::move(leaf));
      min_term.push_back(node.term);
      continue;
    }
    std::vector<int> kids;
    for (int c : node.children) {
      if (map[c] >= 0) kids.push_back(map[c]);
    }
    if (kids.empty()) continue;  // c, +0, or a node above nothing but those.
    if (kids.size() == 1) {      // Conversions and nodes that only added c or +0.
      map[v] = kids[0];
      continue;
    }
    std::sort(kids.begin(), kids.end(),
              [&](int a, int b) { return min_term[a] < min_term[b]; });
    SumTree::Node inner;
    inner.kind = Kind::kNode;
    inner.children = kids;
    const int m = min_term[kids[0]];
    map[v] = out.Add(std::move(inner));
    min_term.push_back(m);
  }
  out.root = tree.root >= 0 ? map[tree.root] : -1;
  return out;
}

bool SameCanonicalTree(const SumTree& a, const SumTree& b) {
  return a.n == b.n && RenderText(Canonical(a)) == RenderText(Canonical(b));
}

int FusedGroupSize(const SumTree& tree) {
  const SumTree c = Canonical(tree);
  int best = 1;
  for (const SumTree::Node& node : c.nodes) {
    if (node.children.size() <= 2) continue;
    int leaves = 0;
    for (int k : node.children) leaves += c.nodes[k].kind == Kind::kTerm ? 1 : 0;
    best = std::max(best, leaves);
  }
  return best;
}

std::string RenderText(const SumTree& tree) {
  std::string out;
  if (tree.root < 0) return "(empty)";
  std::vector<std::pair<int, size_t>> stack = {{tree.root, 0}};
  while (!stack.empty()) {
    const int v = stack.back().first;
    const size_t k = stack.back().second;
    const SumTree::Node& node = tree.nodes[v];
    const Syntax syntax = TextSyntax(node);
    if (k == 0) out += syntax.open;
    if (k < node.children.size()) {
      if (k > 0) out += syntax.sep;
      stack.back().second = k + 1;
      stack.emplace_back(node.children[k], 0);
    } else {
      out += syntax.close;
      stack.pop_back();
    }
  }
  return out;
}

std::string RenderDot(const SumTree& tree, const std::string& name) {
  std::string out = absl::StrCat("digraph \"", name, "\" {\n  node [fontname=\"monospace\"];\n");
  for (int v : PostOrder(tree)) {
    const SumTree::Node& node = tree.nodes[v];
    const bool leaf = node.children.empty();
    absl::StrAppend(&out, "  n", v, " [label=\"", DotLabel(node), "\", shape=",
                    leaf ? "box" : (node.kind == Kind::kFused ? "box3d" : "ellipse"), "];\n");
  }
  for (int v : PostOrder(tree)) {
    const SumTree::Node& node = tree.nodes[v];
    for (size_t k = 0; k < node.children.size(); ++k) {
      absl::StrAppend(&out, "  n", v, " -> n", node.children[k], ";\n");
    }
  }
  out += "}\n";
  return out;
}

absl::StatusOr<SumTree> RevealSumTree(const SumOracle& oracle, int n, const FprevOptions& options,
                                      FprevStats* stats) {
  SumTree tree;
  tree.n = n;
  if (n < 0) return absl::InvalidArgumentError(absl::StrCat("fprev: n = ", n, " < 0"));
  if (n == 0) return tree;
  if (n == 1) {
    SumTree::Node leaf;
    leaf.kind = Kind::kTerm;
    leaf.term = 0;
    tree.root = tree.Add(std::move(leaf));
    return tree;
  }
  const double big = options.big, unit = options.unit;
  if (!(unit > 0) || !(big > unit) || !std::isfinite(big)) {
    return absl::InvalidArgumentError(
        absl::StrCat("fprev: need 0 < unit < big < inf, got unit = ", unit, ", big = ", big));
  }
  std::vector<double> x(n, unit);
  int64_t probes = 0;
  auto call = [&]() -> absl::StatusOr<double> {
    ++probes;
    if (stats != nullptr) stats->probes = probes;
    return oracle(x);
  };

  if (options.calibrate) {
    absl::StatusOr<double> all = call();
    if (!all.ok()) return all.status();
    if (*all != n * unit) {
      return absl::FailedPreconditionError(absl::StrCat(
          "fprev calibration: the sum of ", n, " units u = ", unit, " gave ", *all,
          ", not ", n * unit, ": the black box does not count units exactly"));
    }
    for (int pos : {0, n - 1}) {
      for (double m : {big, -big}) {
        x[pos] = m;
        absl::StatusOr<double> r = call();
        x[pos] = unit;
        if (!r.ok()) return r.status();
        if (*r != m) {
          return absl::FailedPreconditionError(absl::StrCat(
              "fprev calibration: x", pos, " = ", m, " with ", n - 1, " units u = ", unit,
              " gave ", *r, ", not ", m, ": M does not swamp the units"));
        }
      }
    }
  }

  std::unordered_map<int64_t, int> cache;
  auto lca_size = [&](int i, int j) -> absl::StatusOr<int> {
    if (i > j) std::swap(i, j);
    const int64_t key = int64_t{i} * n + j;
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    x[i] = big;
    x[j] = -big;
    absl::StatusOr<double> r = call();
    x[i] = unit;
    x[j] = unit;
    if (!r.ok()) return r.status();
    const double count = *r / unit;
    if (!(count >= 0 && count <= n - 2 && count == std::floor(count))) {
      return absl::FailedPreconditionError(absl::StrCat(
          "fprev: probe x", i, " = +M, x", j, " = -M (M = ", big, ", u = ", unit, ", n = ", n,
          ") gave ", *r, ", which is not (n - L) u for an integer 2 <= L <= n"));
    }
    const int l = n - static_cast<int>(count);
    cache.emplace(key, l);
    return l;
  };

  // Work items: a node's leaf set (sorted) and the node to attach it to (-1: root).
  struct Work {
    std::vector<int> leaves;
    int parent;
  };
  std::vector<Work> work;
  {
    std::vector<int> all(n);
    for (int i = 0; i < n; ++i) all[i] = i;
    work.push_back({std::move(all), -1});
  }
  while (!work.empty()) {
    Work w = std::move(work.back());
    work.pop_back();
    SumTree::Node node;
    const int size = static_cast<int>(w.leaves.size());
    if (size == 1) {
      node.kind = Kind::kTerm;
      node.term = w.leaves[0];
    } else {
      node.kind = Kind::kNode;
    }
    const int id = tree.Add(std::move(node));
    if (w.parent < 0) {
      tree.root = id;
    } else {
      tree.nodes[w.parent].children.push_back(id);
    }
    if (size == 1) continue;
    std::vector<int> rest = std::move(w.leaves);
    int children = 0;
    while (!rest.empty()) {
      const int s = rest[0];
      std::vector<int> child = {s}, others;
      int child_size = 1;  // The largest L(s, t) inside the child.
      for (size_t k = 1; k < rest.size(); ++k) {
        absl::StatusOr<int> l = lca_size(s, rest[k]);
        if (!l.ok()) return l.status();
        if (*l > size) {
          return absl::FailedPreconditionError(absl::StrCat(
              "fprev: L(x", s, ", x", rest[k], ") = ", *l, " exceeds the size ", size,
              " of the subtree holding both: the probe outputs are not those of a tree"));
        }
        if (*l < size) {
          child.push_back(rest[k]);
          child_size = std::max(child_size, *l);
        } else {
          others.push_back(rest[k]);
        }
      }
      if (child_size != static_cast<int>(child.size())) {
        return absl::FailedPreconditionError(absl::StrCat(
            "fprev: the subtree of x", s, " inside a node of ", size, " terms has ",
            child.size(), " terms but the largest L(x", s, ", t) in it is ", child_size,
            ": the probe outputs are not those of a tree"));
      }
      ++children;
      if (children == 1 && others.empty()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "fprev: every L(x", s, ", t) is below ", size,
            " within a subtree of that size: the probe outputs are not those of a tree"));
      }
      work.push_back({std::move(child), id});
      rest = std::move(others);
    }
  }
  if (stats != nullptr) stats->probes = probes;
  return Canonical(tree);
}

}  // namespace fpconform
