// Unit tests of the declared summation trees (accumulation/summation_tree.h) and of the tree
// renderers and FPRev probe (cases/fprev.h) on host-double black boxes whose order is known by
// construction. Expected trees are written by hand from MODEL_FORMAT.md's chain rules.
#include "accumulation/summation_tree.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

// A float32 model with the given [adder] and [chain] tables.
Model MakeModel(const std::string& adder, const std::string& chain,
                const std::string& extra_provenance = "") {
  const std::string text = absl::StrCat(R"(
name = "t"
description = "test"
[inputs]
a = "float32"
[adder]
)", adder, R"(
[accumulator]
format = "float32"
[chain]
)", chain, R"(
[provenance]
"inputs.a" = "test"
"adder.kind" = "test"
"accumulator.format" = "test"
"chain.kind" = "test"
)", extra_provenance);
  absl::StatusOr<Model> m = ParseModel(text, "");
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

std::string Text(const Model& m, int n, uint64_t seed = 0) {
  absl::StatusOr<SumTree> t = BuildSummationTree(m, n, seed);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? RenderText(*t) : "";
}

TEST(SummationTree, SequentialIeee) {
  const Model m = MakeModel(R"(kind = "ieee")", R"(kind = "sequential")");
  EXPECT_EQ(Text(m, 0), "c");
  EXPECT_EQ(Text(m, 3), "(((c + x0) + x1) + x2)");
  EXPECT_EQ(RenderText(Canonical(*BuildSummationTree(m, 3))), "((x0 + x1) + x2)");
  EXPECT_EQ(RenderText(Canonical(*BuildSummationTree(m, 1))), "x0");
}

TEST(SummationTree, FusedGroups) {
  const Model m = MakeModel("kind = \"fused\"\ngroup = 2\nfraction_bits = 25",
                            R"(kind = "sequential")",
                            "\"adder.group\" = \"t\"\n\"adder.fraction_bits\" = \"t\"\n");
  EXPECT_EQ(Text(m, 3), "fused[x2 fused[x0 x1 c]]");
  const SumTree t = *BuildSummationTree(m, 5);
  // The second group has three operands (x2, x3 and the accumulator).
  EXPECT_EQ(RenderText(Canonical(t)), "({(x0 + x1) x2 x3} + x4)");
  EXPECT_EQ(FusedGroupSize(t), 2);
  const Model m4 = MakeModel("kind = \"fused\"\ngroup = 4\nfraction_bits = 25",
                             R"(kind = "sequential")",
                             "\"adder.group\" = \"t\"\n\"adder.fraction_bits\" = \"t\"\n");
  const SumTree t4 = *BuildSummationTree(m4, 6);
  EXPECT_EQ(RenderText(t4), "fused[x4 x5 fused[x0 x1 x2 x3 c]]");
  EXPECT_EQ(RenderText(Canonical(t4)), "{{x0 x1 x2 x3} x4 x5}");
  EXPECT_EQ(FusedGroupSize(t4), 4);
}

TEST(SummationTree, EpilogueAddsCAfterTheChain) {
  Model m = MakeModel("kind = \"fused\"\ngroup = 2\nfraction_bits = 25", R"(kind = "sequential")",
                      "\"adder.group\" = \"t\"\n\"adder.fraction_bits\" = \"t\"\n");
  m.epilogue.c = EpilogueC::kAfter;
  // The chain from +0, then c + chain (epilogue.c = "after", MODEL_FORMAT.md).
  EXPECT_EQ(Text(m, 3), "(c +c fused[x2 fused[x0 x1 0]])");
  Model ieee = MakeModel(R"(kind = "ieee")", R"(kind = "sequential")");
  ieee.epilogue.c = EpilogueC::kAfter;
  EXPECT_EQ(Text(ieee, 2), "(c +c ((0 + x0) + x1))");
}

TEST(SummationTree, PermutationReordersPaddedBlocks) {
  Model m = MakeModel("kind = \"fused\"\ngroup = 2\nfraction_bits = 25", R"(kind = "sequential")",
                      "\"adder.group\" = \"t\"\n\"adder.fraction_bits\" = \"t\"\n");
  m.chain.permutation = {1, 0};
  // n = 3 padded to 4: x1 x0 | +0 x2.
  EXPECT_EQ(Text(m, 3), "fused[0 x2 fused[x1 x0 c]]");
  Model ieee = MakeModel(R"(kind = "ieee")", R"(kind = "sequential")");
  ieee.chain.permutation = {2, 0, 1};
  EXPECT_EQ(Text(ieee, 3), "(((c + x2) + x0) + x1)");
}

TEST(SummationTree, Pairwise) {
  const Model m = MakeModel(R"(kind = "ieee")", "kind = \"pairwise\"\nleaf = 2",
                            "\"chain.leaf\" = \"t\"\n");
  // P(0,4) = P(0,2) +c P(2,4); each leaf sequential from +0; then c +c total.
  EXPECT_EQ(Text(m, 4), "(c +c (((0 + x0) + x1) +c ((0 + x2) + x3)))");
  // n = 5: mid = 2: P(0,2) +c P(2,5); P(2,5): mid = 1: P(2,3) +c P(3,5).
  EXPECT_EQ(RenderText(Canonical(*BuildSummationTree(m, 5))),
            "((x0 + x1) + (x2 + (x3 + x4)))");
}

TEST(SummationTree, PairwiseUnroll) {
  const Model m = MakeModel(R"(kind = "ieee")",
                            "kind = \"pairwise\"\nleaf = 8\nunroll = 2",
                            "\"chain.leaf\" = \"t\"\n\"chain.unroll\" = \"t\"\n");
  // n = 5: lanes r0 = x0, r1 = x1; r0 += x2, r1 += x3; (r0 +c r1); then + x4.
  EXPECT_EQ(Text(m, 5),
            "(c +c (((cvt:float32(x0) + x2) +c (cvt:float32(x1) + x3)) + x4))");
}

TEST(SummationTree, StridedSplitKBlockedPromote) {
  // Each row: an ieee adder's [chain] keys and their provenance lines, K, and the tree.
  const struct {
    const char* chain;
    const char* provenance;
    int n;
    const char* tree;
  } rows[] = {
      {"kind = \"strided\"\nways = 2", "\"chain.ways\" = \"t\"\n", 4,
       "(((c + x0) + x2) +c ((0 + x1) + x3))"},
      // ceil(4/3) = 2 per slice: [0,2) [2,4) [4,4) (empty: +0).
      {"kind = \"split_k\"\nslices = 3", "\"chain.slices\" = \"t\"\n", 4,
       "(((c +c ((0 + x0) + x1)) +c ((0 + x2) + x3)) +c 0)"},
      // slice_multiple = 2 over K = 5, 3 slices: ceil(5/3) = 2 -> [0,2) [2,4) [4,5); = 4:
      // ceil(5/3) rounded up to 4 -> [0,4) [4,5) [5,5) (cuBLAS split-K slices are whole
      // threadblock K tiles).
      {"kind = \"split_k\"\nslices = 3\nslice_multiple = 4",
       "\"chain.slices\" = \"t\"\n\"chain.slice_multiple\" = \"t\"\n", 5,
       "(((c +c ((((0 + x0) + x1) + x2) + x3)) +c (0 + x4)) +c 0)"},
      // order = "reverse": the last slice first; combine = "pairwise": a balanced tree of the
      // slices.
      {"kind = \"split_k\"\nslices = 3\norder = \"reverse\"",
       "\"chain.slices\" = \"t\"\n\"chain.order\" = \"t\"\n", 3,
       "(((c +c (0 + x2)) +c (0 + x1)) +c (0 + x0))"},
      {"kind = \"split_k\"\nslices = 3\ncombine = \"pairwise\"",
       "\"chain.slices\" = \"t\"\n\"chain.combine\" = \"t\"\n", 3,
       "(c +c (((0 + x0) +c (0 + x1)) +c (0 + x2)))"},
      {"kind = \"blocked\"\nblock = 2", "\"chain.block\" = \"t\"\n", 3,
       "((c +c ((0 + x0) + x1)) +c (0 + x2))"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.chain);
    EXPECT_EQ(Text(MakeModel(R"(kind = "ieee")", r.chain, r.provenance), r.n), r.tree);
  }
}

TEST(SummationTree, ExplicitTree) {
  // MODEL_FORMAT.md, chain.kind = "tree": leaves are adder steps from +0, a 2-list one combine
  // add, a longer list a left fold; blocks of m = 4 units added to c in order; in the partial
  // last block absent leaves are pruned and a list with one present child passes it through.
  const Model m = MakeModel(R"(kind = "ieee")", "kind = \"tree\"\nshape = \"((3 0) 1 2)\"",
                            "\"chain.shape\" = \"t\"\n");
  EXPECT_EQ(Text(m, 0), "c");
  EXPECT_EQ(Text(m, 4), "(c +c ((((0 + x3) +c (0 + x0)) +c (0 + x1)) +c (0 + x2)))");
  // n = 6: block 2 has units 4, 5: (3 0) keeps only x4, then + x5; 2 is absent.
  EXPECT_EQ(Text(m, 6), "((c +c ((((0 + x3) +c (0 + x0)) +c (0 + x1)) +c (0 + x2))) +c "
                        "((0 + x4) +c (0 + x5)))");
  // n = 1: one present leaf, no add at all inside the block.
  EXPECT_EQ(Text(m, 1), "(c +c (0 + x0))");
  // A fused unit is a group of G = 2 products: leaf 1 of "(1 0)" is x2, x3; n = 3 cuts unit 1.
  const Model f = MakeModel("kind = \"fused\"\ngroup = 2\nfraction_bits = 25",
                            "kind = \"tree\"\nshape = \"(1 0)\"",
                            "\"adder.group\" = \"t\"\n\"adder.fraction_bits\" = \"t\"\n"
                            "\"chain.shape\" = \"t\"\n");
  EXPECT_EQ(Text(f, 3), "(c +c (fused[x2 0] +c fused[x0 x1 0]))");
}

// ---- The probe on host-double black boxes. ----

TEST(Fprev, SequentialDoubleLoop) {
  SumOracle oracle = [](std::span<const double> x) -> absl::StatusOr<double> {
    double s = 0;
    for (double v : x) s += v;
    return s;
  };
  FprevStats stats;
  absl::StatusOr<SumTree> t = RevealSumTree(oracle, 6, {.big = 0x1p60, .unit = 1}, &stats);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(RenderText(*t), "(((((x0 + x1) + x2) + x3) + x4) + x5)");
  EXPECT_EQ(stats.probes, 5 + 5);  // Calibration 5, then L(0, t) for t = 1..5.
}

// Recursive halving in double (first half floor(n/2)), and groups of 3 summed exactly (in
// double with small integers and one +-M, so the group sum is exact then "truncated": ones next
// to M vanish because the partial sums are rounded to a multiple of M's ulp at 2^-10 M).
double Halving(std::span<const double> x) {
  if (x.size() == 1) return x[0];
  const size_t h = x.size() / 2;
  return Halving(x.subspan(0, h)) + Halving(x.subspan(h));
}

TEST(Fprev, HalvingTree) {
  SumOracle oracle = [](std::span<const double> x) -> absl::StatusOr<double> {
    return Halving(x);
  };
  absl::StatusOr<SumTree> t = RevealSumTree(oracle, 5, {.big = 0x1p60, .unit = 1});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(RenderText(*t), "((x0 + x1) + (x2 + (x3 + x4)))");
}

TEST(Fprev, ThreeTermGroups) {
  // acc = round_big(acc + x0 + x1 + x2) where everything below 2^-30 * max|term| is dropped.
  SumOracle oracle = [](std::span<const double> x) -> absl::StatusOr<double> {
    double acc = 0;
    for (size_t i = 0; i < x.size(); i += 3) {
      double big = std::abs(acc);
      for (size_t j = i; j < i + 3 && j < x.size(); ++j) big = std::max(big, std::abs(x[j]));
      auto keep = [&](double v) { return std::abs(v) * 0x1p30 < big ? 0.0 : v; };
      double s = keep(acc);
      for (size_t j = i; j < i + 3 && j < x.size(); ++j) s += keep(x[j]);
      acc = s;
    }
    return acc;
  };
  absl::StatusOr<SumTree> t = RevealSumTree(oracle, 7, {.big = 0x1p40, .unit = 1});
  ASSERT_TRUE(t.ok()) << t.status();
  // Groups {0 + x0 x1 x2}, {acc x3 x4 x5}, {acc x6}: the first group's +0 is not a term.
  EXPECT_EQ(RenderText(*t), "({{x0 x1 x2} x3 x4 x5} + x6)");
  EXPECT_EQ(FusedGroupSize(*t), 3);
}

TEST(Fprev, Errors) {
  SumOracle half = [](std::span<const double>) -> absl::StatusOr<double> { return 0.5; };
  EXPECT_EQ(RevealSumTree(half, 4, {.big = 0x1p60, .unit = 1}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  SumOracle seq = [](std::span<const double> x) -> absl::StatusOr<double> {
    double s = 0;
    for (double v : x) s += v;
    return s;
  };
  // M = 2^20 does not swamp ones in double: calibration says so.
  absl::Status st = RevealSumTree(seq, 4, {.big = 0x1p20, .unit = 1}).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("does not swamp"), std::string::npos) << st;
  EXPECT_EQ(RevealSumTree(seq, 0, {}).value().root, -1);
  EXPECT_EQ(RenderText(RevealSumTree(seq, 1, {}).value()), "x0");
}

TEST(Render, Dot) {
  const Model m = MakeModel(R"(kind = "ieee")", R"(kind = "sequential")");
  EXPECT_EQ(RenderDot(*BuildSummationTree(m, 1), "s"),
            "digraph \"s\" {\n"
            "  node [fontname=\"monospace\"];\n"
            "  n1 [label=\"c\", shape=box];\n"
            "  n0 [label=\"x0\", shape=box];\n"
            "  n2 [label=\"+\", shape=ellipse];\n"
            "  n2 -> n1;\n"
            "  n2 -> n0;\n"
            "}\n");
}

}  // namespace
}  // namespace fpconform
