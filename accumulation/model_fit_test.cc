#include "accumulation/model_fit.h"

#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "accumulation/evaluate.h"
#include "accumulation/model_catalog.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

const std::string kDir = FPCONFORM_MODELS_SOURCE_DIR;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Random bfloat16 bits of moderate magnitude (exponent 120..134), either sign.
std::vector<uint64_t> RandomBf16(PinnedRng& rng, int n) {
  std::vector<uint64_t> v(static_cast<size_t>(n));
  for (uint64_t& x : v) {
    const uint64_t e = 120 + rng.Below(15);
    x = (rng.Below(2) << 15) | (e << 7) | rng.Below(128);
  }
  return v;
}

TEST(SplitKFamily, DistinctCutsWithTheRevealedSplits) {
  const Model base = *LoadModelFile(kDir + "/nvidia-h100-bf16-cublas-s1688-splitk3.toml");
  const std::vector<FitVariant> f = SplitKFamily(base, 1024, /*has_c=*/false);
  ASSERT_FALSE(f.empty());
  std::set<std::string> labels;
  bool six = false, base_cut = false;
  for (const FitVariant& v : f) {
    EXPECT_TRUE(labels.insert(v.label).second) << v.label;
    EXPECT_EQ(v.model.chain.kind, ChainKind::kSplitK);
    EXPECT_EQ(v.model.chain.slice_multiple % 8, 0) << v.label;
    // 6 slices of 192 (ceil(1024 / 6) = 171 rounded up to 32 or 64; the family keeps the first).
    six |= v.model.chain.slices == 6 && v.model.chain.slice_multiple == 32 &&
           v.model.chain.order == SplitOrder::kFixed &&
           v.model.chain.combine == CombineOrder::kSequential;
    // The base's own cut (384 + 384 + 256 in order, sequential) is not a variant.
    base_cut |= v.model.chain.slices == 3 && v.model.chain.slice_multiple == 64 &&
                v.model.chain.order == SplitOrder::kFixed &&
                v.model.chain.combine == CombineOrder::kSequential;
  }
  EXPECT_TRUE(six);
  EXPECT_FALSE(base_cut);
  // With c added after the chain or absent, two slices in either order are one variant: the
  // family for K = 256 in slices of 128 has no reverse twin of the 2-slice cut.
  int two_slices_128 = 0;
  for (const FitVariant& v : SplitKFamily(base, 256, false)) {
    if (v.model.chain.slices == 2 && v.model.chain.slice_multiple <= 128) ++two_slices_128;
  }
  EXPECT_EQ(two_slices_128, 0);  // 128 + 128 is the base's cut at K = 256 (3 slices, 1 empty).
}

TEST(DatapathFamily, GroupsEpilogueConversionPromotion) {
  const Model bf16 = *LoadModelFile(kDir + "/nvidia-h100-bf16.toml");
  std::set<std::string> labels;
  for (const FitVariant& v : DatapathFamily(bf16, /*has_c=*/true)) labels.insert(v.label);
  EXPECT_EQ(labels, (std::set<std::string>{"adder.group 4", "adder.group 8", "adder.group 32",
                                           "adder.fraction_bits 23", "adder.fraction_bits 24",
                                           "adder.fraction_bits 26", "adder.fraction_bits 27",
                                           "epilogue.c after"}));
  const Model tf32 = *LoadModelFile(kDir + "/nvidia-h100-tf32.toml");
  labels.clear();
  for (const FitVariant& v : DatapathFamily(tf32, false)) labels.insert(v.label);
  EXPECT_TRUE(labels.count("inputs.convert_rounding rna")) << tf32.name;
  EXPECT_TRUE(labels.count("inputs.convert_rounding rne"));
  const Model promote = *LoadModelFile(kDir + "/nvidia-h100-fp8e4m3-promote128.toml");
  labels.clear();
  for (const FitVariant& v : DatapathFamily(promote, false)) labels.insert(v.label);
  EXPECT_TRUE(labels.count("chain.every 256"));
  EXPECT_FALSE(labels.count("chain.every 128"));
}

// The model file a variant writes is the variant: it parses, names its keys with the evidence
// and as unconfirmed, and evaluates to the same bits as the in-memory variant.
TEST(VariantModelText, FileEvaluatesAsTheVariant) {
  const std::string path = kDir + "/nvidia-h100-bf16-cublas-s1688-splitk3.toml";
  const Model base = *LoadModelFile(path);
  const std::string text = ReadText(path);
  std::vector<FitVariant> f = SplitKFamily(base, 300, false);
  for (FitVariant& v : DatapathFamily(base, true)) f.push_back(std::move(v));
  ASSERT_GE(f.size(), 10u);
  PinnedRng rng(TestSeed(29, "model_fit_test"));
  for (const FitVariant& v : f) {
    SCOPED_TRACE(v.label);
    absl::StatusOr<std::string> t = VariantModelText(text, v, "fit-x", "fitted", "fit: evidence");
    ASSERT_TRUE(t.ok()) << t.status();
    absl::StatusOr<Model> m = ParseModel(*t, "fit-x.toml");
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->name, "fit-x");
    for (const auto& [key, value] : v.set) {
      if (value.empty()) {  // Removed.
        EXPECT_EQ(m->provenance.count(key), 0u) << key;
        continue;
      }
      EXPECT_EQ(m->provenance.at(key), "fit: evidence");
      EXPECT_NE(std::find(m->unconfirmed.begin(), m->unconfirmed.end(), key),
                m->unconfirmed.end());
    }
    for (int trial = 0; trial < 20; ++trial) {
      const int k = 1 + static_cast<int>(rng.Below(300));
      const std::vector<uint64_t> a = RandomBf16(rng, k), b = RandomBf16(rng, k);
      const uint64_t c = trial % 2 == 0 ? 0 : 0x3F800000u | rng.Below(1 << 20);
      EXPECT_EQ(EvaluateDot(*m, a, b, c)->bits, EvaluateDot(v.model, a, b, c)->bits)
          << "k " << k;
    }
  }
  // A variant whose keys make an invalid model is refused with the parser's message.
  FitVariant bad = f[0];
  bad.set.push_back({"chain.slice_multiple", "12"});
  absl::StatusOr<std::string> t = VariantModelText(text, bad, "fit-x", "fitted", "e");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("chain.slice_multiple"), std::string::npos)
      << t.status();
}

}  // namespace
}  // namespace fpconform
