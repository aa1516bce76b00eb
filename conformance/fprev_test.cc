// The FPRev probe (cases/fprev.h) against every accumulation-model preset: the model is run as a
// black box through EvaluateDot (EvaluateSum for sum-only models), the probe rebuilds its
// summation tree from the outputs alone, and that tree must equal the one the model declares
// (BuildSummationTree, accumulation/summation_tree.h, built from MODEL_FORMAT.md's rules by a
// separate code path from the evaluator), including the fused group size.
//
// Comparison is on canonical trees (cases/fprev.h, Canonical): the probe cannot see c (it runs
// with c = +0, which adds nothing to any count), +0 starting values, one-operand roundings (the
// output conversion, pairwise lanes' first rounding), the order of a node's children
// (commutativity), or whether a binary node is an adder step or a combine add. Everything else
// (which terms meet in which node, and how many operands a fused node has) is compared.
//
// Not revealed, and listed on stdout with the reason:
//  * model files that are envelopes (sets of models, not models);
//  * chain / adder kinds that are not trees or not known to BuildSummationTree (Unimplemented,
//    e.g. adder.kind = "kahan": a compensated sum recovers swamped units, so it has no tree);
//  * (model, n) where no (M, u) pair exists (MakeModelProbe's FailedPrecondition). For the
//    presets this is hand-derived in kExpectedLimits below and checked to be exactly so.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "accumulation/model.h"
#include "accumulation/model_catalog.h"
#include "accumulation/summation_tree.h"
#include "cases/fprev.h"
#include "formats/format_spec.h"
#include "gtest/gtest.h"

#ifndef FPCONFORM_MODELS_SOURCE_DIR
#define FPCONFORM_MODELS_SOURCE_DIR "accumulation/models"
#endif

namespace fpconform {
namespace {

constexpr int kLengths[] = {1, 2, 5, 8, 17, 33, 128, 130, 300};

// (model, n) pairs of the presets that MakeModelProbe must refuse, derived by hand from
// summation_tree.h's rule (D = max(p_acc + 1, p_promote + 1, F) + bit_width(n - 1) must fit in
// the span of the products; n <= 2^q):
//  * trainium2-fp8e4m3(-doublerow): float8_e4m3 powers of two 2^-9..2^7, so products span
//    2^-18..2^14 (32 bits); float32 ieee accumulation needs 25 + k: k = 7 (n = 128) fits,
//    k = 8 (n = 130) and k = 9 (n = 300) do not.
//  * trainium3-bf16-psumbf16: bfloat16 promote format and output keep q = 8 bits: n <= 256.
const std::set<std::pair<std::string, int>> kExpectedLimits = {
    {"trainium2-fp8e4m3", 130},           {"trainium2-fp8e4m3", 300},
    {"trainium2-fp8e4m3-doublerow", 130}, {"trainium2-fp8e4m3-doublerow", 300},
    {"trainium3-bf16-psumbf16", 300},
};

// An envelope file (MODEL_FORMAT.md, "Envelopes"): a top-level `kind = "envelope"` or
// `envelope = [...]` line (the schema is being settled; both spellings are recognised).
bool IsEnvelopeFile(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("[", 0) == 0) break;  // Top level ends at the first table.
    if (line.rfind("kind", 0) == 0 && line.find("\"envelope\"") != std::string::npos) return true;
    if (line.rfind("envelope", 0) == 0 && line.find('=') != std::string::npos) return true;
  }
  return false;
}

// Runs the probe on `model` for n and compares. Returns a non-empty reason when not revealed
// for a documented cause; records test failures otherwise.
std::string CheckModel(const Model& model, int n, uint64_t seed = 0) {
  SCOPED_TRACE(absl::StrCat("model ", model.name, ", n = ", n, ", seed = ", seed));
  absl::StatusOr<SumTree> declared = BuildSummationTree(model, n, seed);
  if (!declared.ok()) {
    EXPECT_EQ(declared.status().code(), absl::StatusCode::kUnimplemented) << declared.status();
    return std::string(declared.status().message());
  }
  absl::StatusOr<ModelProbe> probe = MakeModelProbe(model, n, seed);
  if (!probe.ok()) {
    EXPECT_EQ(probe.status().code(), absl::StatusCode::kFailedPrecondition) << probe.status();
    return std::string(probe.status().message());
  }
  FprevStats stats;
  absl::StatusOr<SumTree> revealed = RevealSumTree(probe->oracle, n, probe->options, &stats);
  EXPECT_TRUE(revealed.ok()) << revealed.status() << " (" << probe->how << ")";
  if (!revealed.ok()) return "";
  EXPECT_EQ(RenderText(*revealed), RenderText(Canonical(*declared)))
      << "declared: " << RenderText(*declared) << "\nprobe inputs: " << probe->how;
  EXPECT_TRUE(SameCanonicalTree(*declared, *revealed));
  if (n >= 1000) std::printf("%s n=%d: %lld probes\n", model.name.c_str(), n,
                             static_cast<long long>(stats.probes));
  EXPECT_EQ(FusedGroupSize(*revealed), FusedGroupSize(*declared));
  // The fused group size the probe shows is the model's G once a full group is present: from
  // n = G on, or with chain.permutation from n = its length on (before that, padding zeros sit
  // among the reordered products: nvidia-h100-fp8e4m3-mmasync's first group at n = 17 holds
  // products 0 1 4 5 8 9 12 13 16 only).
  const int full_from = std::max(model.adder.group,
                                 static_cast<int>(model.chain.permutation.size()));
  if (model.adder.kind == AdderKind::kFused && n >= full_from && model.adder.group > 2) {
    EXPECT_EQ(FusedGroupSize(*revealed), model.adder.group);
  }
  return "";
}

TEST(Fprev, EveryPresetRevealsItsOwnTree) {
  const ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  absl::StatusOr<std::vector<ModelFile>> files = catalog.LoadAll();
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_GE(files->size(), 28u);
  std::set<std::pair<std::string, int>> limited;
  int revealed = 0;
  for (const ModelFile& file : *files) {
    if (!file.model.ok()) {
      if (IsEnvelopeFile(file.path)) {
        std::printf("listed: %s: an envelope (a set of models), not a model\n",
                    file.name.c_str());
      } else {
        ADD_FAILURE() << file.path << ": " << file.model.status();
      }
      continue;
    }
    for (int n : kLengths) {
      const std::string why = CheckModel(*file.model, n);
      if (why.empty()) {
        ++revealed;
        continue;
      }
      std::printf("listed: %s n=%d: %s\n", file.name.c_str(), n, why.c_str());
      if (absl::StrContains(why, "summation tree:")) {  // Same for every n.
        // What the probe alone makes of it (information only: there is no tree to compare).
        absl::StatusOr<SumTree> probed = RevealModelTree(*file.model, 8);
        std::printf("  the probe alone at n=8: %s\n",
                    probed.ok() ? RenderText(*probed).c_str()
                                : std::string(probed.status().message()).c_str());
        break;
      }
      limited.emplace(file.name, n);
    }
  }
  // The presets' limits are exactly the hand-derived ones. A new preset may add its own, but
  // never one with inputs of 16 bits or more and float32-or-wider sums: their powers of two
  // span at least 2^-48..2^30 (float16 products), more than D <= 54 + 9 bits at n <= 300.
  for (const auto& expected : kExpectedLimits) {
    EXPECT_TRUE(limited.count(expected))
        << expected.first << " n=" << expected.second << " was expected to be refused";
  }
  for (const auto& got : limited) {
    if (kExpectedLimits.count(got) != 0) continue;
    const Model& m = *catalog.Find(got.first);
    const bool wide_inputs = EncodingBits(*m.inputs.a) >= 16 && EncodingBits(*m.inputs.b) >= 16;
    bool wide_sums = Precision(*m.output.format) >= 24 && m.accumulator.fraction_bits >= 23;
    if (m.chain.kind == ChainKind::kPromote) {
      wide_sums &= Precision(*m.chain.promote_format) >= 24;
    }
    EXPECT_FALSE(wide_inputs && wide_sums)
        << got.first << " n=" << got.second << " refused unexpectedly";
  }
  std::printf("revealed %d (model, n) pairs\n", revealed);
  EXPECT_GE(revealed, 28 * 8);
}

// A longer sum where the chain has structure beyond 300 terms: PyTorch's cascade levels start
// at 16 * 4 * lanes terms (level_step 16, 4 rows): n = 1100 gives one level step per lane with
// 16 lanes and two with 8.
TEST(Fprev, LongChains) {
  const ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  int checked = 0;
  for (const char* name : {"torch-cpu-sum-f32", "torch-cpu-sum-f32-avx512"}) {
    const absl::StatusOr<Model>& model = catalog.Find(name);
    if (!model.ok()) {
      std::printf("listed: %s: %s\n", name, std::string(model.status().message()).c_str());
      continue;
    }
    for (int n : {1100}) {
      const std::string why = CheckModel(*model, n);
      if (!why.empty()) std::printf("listed: %s n=%d: %s\n", name, n, why.c_str());
      checked += why.empty() ? 1 : 0;
    }
  }
  EXPECT_GE(checked, 2);
}

// Chain kinds and options no preset uses yet, on float32 / bf16 models written here.
Model Parse(const std::string& adder, const std::string& chain, const std::string& inputs =
                                                                    "a = \"float32\"") {
  std::string provenance;
  auto keys = [&](const std::string& table, const std::string& body) {
    std::istringstream in(body);
    std::string line;
    while (std::getline(in, line)) {
      const size_t eq = line.find('=');
      if (eq == std::string::npos) continue;
      std::string key = line.substr(0, eq);
      while (!key.empty() && key.back() == ' ') key.pop_back();
      absl::StrAppend(&provenance, "\"", table, ".", key, "\" = \"test\"\n");
    }
  };
  keys("inputs", inputs);
  keys("adder", adder);
  keys("chain", chain);
  const std::string text = absl::StrCat("name = \"t\"\ndescription = \"t\"\n[inputs]\n", inputs,
                                        "\n[adder]\n", adder,
                                        "\n[accumulator]\nformat = \"float32\"\n[chain]\n", chain,
                                        "\n[provenance]\n\"accumulator.format\" = \"t\"\n",
                                        provenance);
  absl::StatusOr<Model> m = ParseModel(text, "");
  EXPECT_TRUE(m.ok()) << m.status() << "\n" << text;
  return m.ok() ? *m : Model{};
}

TEST(Fprev, ChainKindsWithoutPresets) {
  const std::string ieee = "kind = \"ieee\"";
  const std::string fused =
      "kind = \"fused\"\ngroup = 4\nfraction_bits = 24";
  const std::string bf16 = "a = \"bfloat16\"\nb = \"bfloat16\"";
  const std::vector<std::pair<std::string, Model>> models = {
      {"pairwise leaf 4", Parse(ieee, "kind = \"pairwise\"\nleaf = 4")},
      {"pairwise leaf 16 unroll 4 split 4",
       Parse(ieee, "kind = \"pairwise\"\nleaf = 16\nunroll = 4\nsplit_multiple = 4")},
      {"strided 3 sequential", Parse(ieee, "kind = \"strided\"\nways = 3")},
      {"strided 4 pairwise", Parse(ieee, "kind = \"strided\"\nways = 4\ncombine = \"pairwise\"")},
      // Odd counts: the balanced trees' first half takes ceil(n/2) (MODEL_FORMAT.md).
      {"strided 5 pairwise", Parse(ieee, "kind = \"strided\"\nways = 5\ncombine = \"pairwise\"")},
      {"pairwise leaf 12 unroll 3", Parse(ieee, "kind = \"pairwise\"\nleaf = 12\nunroll = 3")},
      {"strided 2 fused", Parse(fused, "kind = \"strided\"\nways = 2", bf16)},
      {"split_k 3 fixed", Parse(ieee, "kind = \"split_k\"\nslices = 3")},
      {"split_k 5 fused", Parse(fused, "kind = \"split_k\"\nslices = 5", bf16)},
      {"blocked 8 fused", Parse(fused, "kind = \"blocked\"\nblock = 8", bf16)},
      {"pairwise leaf 8 fused", Parse(fused, "kind = \"pairwise\"\nleaf = 8\nsplit_multiple = 4",
                                      bf16)},
      // Explicit trees: an unbalanced permuted shape over blocks of 6 (n = 7, 37, 100 prune the
      // last block), a flat 3-way fold, and one over fused units of 4 products.
      {"tree ((3 0) (1 (5 2)) 4)",
       Parse(ieee, "kind = \"tree\"\nshape = \"((3 0) (1 (5 2)) 4)\"")},
      {"tree (2 0 1)", Parse(ieee, "kind = \"tree\"\nshape = \"(2 0 1)\"")},
      {"tree fused ((1 2) 0)", Parse(fused, "kind = \"tree\"\nshape = \"((1 2) 0)\"", bf16)},
  };
  for (const auto& [label, model] : models) {
    SCOPED_TRACE(label);
    for (int n : {1, 2, 7, 16, 37, 100}) EXPECT_EQ(CheckModel(model, n), "");
  }
  // Random split-K: the slice order depends on the seed; the declared tree follows it.
  const Model random = Parse(ieee, "kind = \"split_k\"\nslices = 6\norder = \"random\"");
  std::set<std::string> orders;
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    EXPECT_EQ(CheckModel(random, 30, seed), "");
    orders.insert(RenderText(Canonical(*BuildSummationTree(random, 30, seed))));
  }
  EXPECT_GT(orders.size(), 1u) << "random split-K gave one order for five seeds";
}

}  // namespace
}  // namespace fpconform
