// Summation trees and the FPRev order-revealing probe.
//
// SumTree is the explicit tree in which a sum of n terms (or a dot product's n products) is
// evaluated: leaves are the terms x0..x{n-1}, the initial accumulator c and +0 constants;
// internal nodes are rounded two-operand additions, fused multi-term groups and one-operand
// roundings (conversions). accumulation/summation_tree.h builds a model's declared tree;
// RevealSumTree below recovers the tree of a black-box sum.
//
// FPRev (Xie et al., "FPRev: Revealing the Order of Floating-Point Summation", ISSTA 2025,
// arXiv:2411.00442): for terms i != j, evaluate the sum with
// x_i = +M, x_j = -M and every other term = u (a "one"), where M is so large that every u added
// into a partial sum holding +-M is lost (swamped; in a fused group it is truncated away by the
// alignment). A partial sum holding x_i but not x_j is then exactly +M, one holding x_j is -M,
// they cancel exactly in the lowest common ancestor LCA(i, j), and every u outside that node's
// subtree is added exactly. So the output is (n - L(i, j)) * u with L(i, j) the number of terms
// under LCA(i, j). The tree follows from L: the leaves of a node of size |S| split into its
// children by "t is in s's child iff L(s, t) < |S|".
// Algorithm (ours; the same probes as FPRev's "advanced" variant, microsoft/RepDL
// tools/FPRev/fprev/advanced.py, which walks the path from one leaf to the root and groups the
// other leaves by L): Reveal(S) takes the smallest s of S, puts {s} and every t with
// L(s, t) < |S| into one child, repeats on the rest, and recurses into the children (their
// sizes follow from L). L values are cached, so a sequential chain takes n - 1 probes, a
// balanced tree O(n log n), a fused group of G terms O(G^2); never more than n (n - 1) / 2.
// A node with more than two children can only come from a multi-term (fused) adder, e.g. a
// tensor core's group of G products plus the accumulator: all pairs among its children have
// the same L, so the partition above yields more than two children (FPRev detects the same
// thing as a group whose subtree has more leaves than the group).
// What the probe cannot see (so comparisons use Canonical()): the initial accumulator c and +0
// constants (they are not terms; the probe runs with c = +0), one-operand roundings
// (conversions, the output rounding), the order of a node's children (addition is
// commutative), and whether a binary node is an adder step or a combine add.
//
// Text format (RenderText), one line, an S-expression:
//   x3                 term 3 (product a3*b3 for a dot)
//   c                  the initial accumulator;  0  a +0 constant (a partial sum starting at +0)
//   (A + B)            two-operand rounded add: an adder step (adder.rounding)
//   (A +c B)           a combine add (accumulator.rounding: pairwise nodes, blocks, strided and
//                      split-K combination)
//   (A +p B)           a promotion add into chain.format (chain.kind = "promote")
//   fused[x0 x1 x2 x3 A]  a fused group: its products, then the running accumulator A, summed
//                      with alignment and rounded once
//   cvt:float32(A)     a one-operand rounding into a format (output conversion, or a pairwise
//                      unroll lane initialised from one product)
//   {A B C}            (probe trees only) a node with more than two children, kind unknown
// Example: a sequential fused chain of G = 2 over 3 products is  fused[x2 fused[x0 x1 c]];
// its canonical form (c dropped, children sorted by their smallest term) is  ((x0 + x1) + x2).
// Graphviz (RenderDot): `digraph sum { ... }`, one node per tree node (n<id>), edges from a node
// to its children in order, labels as above; the output is deterministic.
//
// Example:
//   SumOracle oracle = [](std::span<const double> x) -> absl::StatusOr<double> {
//     double s = 0; for (double v : x) s += v; return s;   // sequential double loop
//   };
//   FprevOptions opt{.big = 0x1p60, .unit = 1};
//   absl::StatusOr<SumTree> t = RevealSumTree(oracle, 3, opt);
//   RenderText(*t) == "((x0 + x1) + x2)"
#ifndef FPCONFORM_CASES_FPREV_H_
#define FPCONFORM_CASES_FPREV_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace fpconform {

struct SumTree {
  enum class Kind : uint8_t {
    kTerm,     // x_i.
    kInit,     // c.
    kZero,     // a +0 constant.
    kAdd,      // two-operand rounded add; `role` says which.
    kFused,    // fused group: children = products, then the running accumulator.
    kConvert,  // one-operand rounding into `format`.
    kNode,     // probe / canonical tree: an internal node of unknown kind.
  };
  enum class AddRole : uint8_t { kStep, kCombine, kPromote };
  struct Node {
    Kind kind = Kind::kNode;
    int term = -1;                 // kTerm: i.
    AddRole role = AddRole::kStep; // kAdd.
    int group = 0;                 // kFused: G (products per group, padding included).
    std::string format;            // kConvert: the format rounded to.
    std::vector<int> children;     // Indices into `nodes`.
  };
  int n = 0;  // Number of terms.
  std::vector<Node> nodes;
  int root = -1;  // -1 only for an empty tree.

  int Add(Node node) {
    nodes.push_back(std::move(node));
    return static_cast<int>(nodes.size()) - 1;
  }
};

// The tree as the probe can see it: c, +0 and conversions dropped, nodes left with one child
// spliced out, every internal node of kind kNode, children sorted by the smallest term below
// them. Two trees are indistinguishable by FPRev iff their canonical forms are equal.
SumTree Canonical(const SumTree& tree);

// Structural equality of Canonical(a) and Canonical(b).
bool SameCanonicalTree(const SumTree& a, const SumTree& b);

// The largest number of term leaves directly under one node of the canonical tree that has more
// than two children: the fused group size the probe shows (1 if no such node).
int FusedGroupSize(const SumTree& tree);

// The formats described above. RenderDot's graph is named `name` (default "sum").
std::string RenderText(const SumTree& tree);
std::string RenderDot(const SumTree& tree, const std::string& name = "sum");

// A black-box sum of x (x.size() terms). Only called with x values in {unit, +big, -big}.
using SumOracle = std::function<absl::StatusOr<double>(std::span<const double> x)>;

struct FprevOptions {
  double big = 0x1p40;  // M: must swamp (n - 1) * unit in every partial sum of the black box.
  double unit = 1;      // u: every sum of up to n units must be exact.
  bool calibrate = true;  // First check swamping and exact counting (5 probes, see below).
};

struct FprevStats {
  int64_t probes = 0;  // Oracle calls.
};

// Recovers the summation tree of `oracle` for n terms (a canonical tree, kind kNode inside).
// Calibration (when enabled, n >= 2): sum(all u) == n u; sum(+M at 0, rest u) == M;
// sum(-M at 0) == -M; sum(+M at n-1) == M; sum(-M at n-1) == -M.
// Errors: the oracle's error; FailedPrecondition when calibration fails (M does not swamp or u
// does not count exactly: the message gives the probe and what came back), when an output is
// not (n - L) u for an integer 2 <= L <= n, or when the L values are not those of a tree.
// n = 0 gives an empty tree; n = 1 a single leaf (no probes).
absl::StatusOr<SumTree> RevealSumTree(const SumOracle& oracle, int n, const FprevOptions& options,
                                      FprevStats* stats = nullptr);

}  // namespace fpconform

#endif  // FPCONFORM_CASES_FPREV_H_
