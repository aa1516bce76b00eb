// Audits (audit.h): outputs made by the models themselves, by independent host-float loops, in
// another order, and with every known mutation at chosen indices.
#include "reports/audit.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <set>
#include <utility>

#include "accumulation/evaluate.h"
#include "accumulation/model_catalog.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/ops.h"
#include "gtest/gtest.h"
#include "oracles/exact_sum.h"
#include "reports/audit_test_util.h"
#include "reports/audit_values.h"

namespace fpconform::reports {
namespace {

const std::string kModels = FPCONFORM_MODELS_SOURCE_DIR;


Tensor Random(const FormatSpec& f, std::vector<int64_t> shape, uint64_t seed) {
  return RandomTensor(f, std::move(shape), DeriveSeed(seed, {7}));
}

AuditOptions Options(std::vector<std::string> platforms, bool recommend = false) {
  AuditOptions o;
  o.platforms = std::move(platforms);
  o.models_dir = kModels;
  o.recommend = recommend;
  o.tolerance_samples = 16;
  o.threads = 2;
  return o;
}

int64_t Count(const AuditResult& r, AuditClass c) { return r.counts[static_cast<int>(c)]; }

class AuditTest : public ::testing::Test {
 protected:
  ModelCatalog catalog_{kModels};
  const Model& M(const std::string& name) {
    const absl::StatusOr<Model>& m = catalog_.Find(name);
    EXPECT_TRUE(m.ok()) << m.status();
    return *m;
  }
};

TEST_F(AuditTest, ModelsOwnOutputsAreIdentical) {
  const uint64_t seed = TestSeed(1, "AuditTest.ModelsOwnOutputsAreIdentical");
  for (const std::string name : {"trainium2-bf16", "nvidia-h100-bf16", "cpu-f32-seq", "nvidia-a100-tf32"}) {
    SCOPED_TRACE(name);
    const Model& m = M(name);
    const Tensor a = Random(*m.inputs.a, {9, 130}, seed), b = Random(*m.inputs.a, {130, 7}, seed + 1);
    const Tensor out = EmulateMatmul(m, a, b);
    MatmulAuditInput in; in.a = &a; in.b = &b; in.out = &out;
    absl::StatusOr<AuditResult> r = AuditMatmul(in, Options({name}));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->verdict, AuditVerdict::kPass);
    EXPECT_EQ(Count(*r, AuditClass::kIdentical), 63);
    EXPECT_EQ(r->best_platform, name);
  }
}

// Independent implementations: host float32 loops, a plain one (what cpu-f32-seq claims to be:
// product rounded, then added; this file builds with -ffp-contract=off) and an fmaf one
// (cuda-f32-fma).
TEST_F(AuditTest, HostFloatLoopsAreIdenticalToTheirPresets) {
  const uint64_t seed = TestSeed(3, "AuditTest.HostFloatLoopsAreIdenticalToTheirPresets");
  const Tensor a = Random(Float32(), {6, 300}, seed), b = Random(Float32(), {300, 5}, seed + 1);
  for (const bool fused : {false, true}) {
    Tensor out = *MakeTensor("float32", {6, 5});
    for (int i = 0; i < 6; ++i) {
      for (int j = 0; j < 5; ++j) {
        float acc = 0;
        for (int k = 0; k < 300; ++k) {
          const float x = static_cast<float>(ToDouble(Float32(), a.Bits(i * 300 + k)));
          const float y = static_cast<float>(ToDouble(Float32(), b.Bits(k * 5 + j)));
          acc = fused ? std::fma(x, y, acc) : acc + x * y;
        }
        uint32_t bits;
        std::memcpy(&bits, &acc, sizeof bits);
        out.SetBits(i * 5 + j, bits);
      }
    }
    const std::string platform = fused ? "cuda-f32-fma" : "cpu-f32-seq";
    SCOPED_TRACE(platform);
    MatmulAuditInput in; in.a = &a; in.b = &b; in.out = &out;
    absl::StatusOr<AuditResult> r = AuditMatmul(in, Options({platform, fused ? "cpu-f32-seq" : "cuda-f32-fma"}));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(Count(*r, AuditClass::kIdentical), 30);
    EXPECT_EQ(r->best_platform, platform);
    EXPECT_LT(r->platforms[1].counts[0], 30);  // The other loop differs somewhere.
  }
}

TEST_F(AuditTest, AnotherOrderIsWithinBoundNotIdentical) {
  const Model& pairwise = M("trainium2-bf16-pairwise");
  const uint64_t seed = TestSeed(5, "AuditTest.AnotherOrderIsWithinBoundNotIdentical");
  const Tensor a = Random(BFloat16(), {16, 1024}, seed), b = Random(BFloat16(), {1024, 16}, seed + 1);
  const Tensor out = EmulateMatmul(pairwise, a, b);
  MatmulAuditInput in; in.a = &a; in.b = &b; in.out = &out;
  absl::StatusOr<AuditResult> r = AuditMatmul(in, Options({"trainium2-bf16-sequential"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Count(*r, AuditClass::kUnexplained), 0);
  EXPECT_GT(Count(*r, AuditClass::kWithinBound), 0);
  EXPECT_LT(Count(*r, AuditClass::kIdentical), 256);
  EXPECT_EQ(r->verdict, AuditVerdict::kPass);
}

TEST_F(AuditTest, SeveralPlatformsNameTheBestMatch) {
  const Model& m = M("trainium2-bf16");
  const uint64_t seed = TestSeed(7, "AuditTest.SeveralPlatformsNameTheBestMatch");
  const Tensor a = Random(BFloat16(), {8, 512}, seed), b = Random(BFloat16(), {512, 8}, seed + 1);
  const Tensor out = EmulateMatmul(m, a, b);
  MatmulAuditInput in; in.a = &a; in.b = &b; in.out = &out;
  absl::StatusOr<AuditResult> r = AuditMatmul(in, Options({"nvidia-h100-bf16", "trainium2-bf16"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->best_platform, "trainium2-bf16");
  ASSERT_EQ(r->platforms.size(), 2u);
  EXPECT_EQ(r->platforms[1].counts[0], 64);
  EXPECT_NE(AuditSummaryText(*r).find("bit-identical to trainium2-bf16 on 100.0% of elements"),
            std::string::npos)
      << AuditSummaryText(*r);
  // auto: every preset taking bfloat16 x bfloat16; trainium2-bf16 (or an identical twin) wins.
  absl::StatusOr<AuditResult> a2 = AuditMatmul(in, Options({"auto"}));
  ASSERT_TRUE(a2.ok()) << a2.status();
  EXPECT_GT(a2->platforms.size(), 3u);
  int64_t best = 0;
  for (const PlatformAudit& p : a2->platforms) best = std::max(best, p.counts[0]);
  EXPECT_EQ(best, 64);
}

// auto audits against the best-explaining preset (issue: a legitimate output must never fail
// because of the choice). The output is a TF32 tensor-core chain whose inputs were rounded to
// nearest (as cuBLAS's s1688 kernels convert in software): bit-identical to no preset, within
// the TF32 presets' bounds, and outside the float32 FMA chains' (the catalog's first float32
// presets), which `auto` used to audit against.
TEST_F(AuditTest, AutoAuditsAgainstTheBestExplainingPreset) {
  absl::StatusOr<Model> rn = ParseModel(R"(
name = "tf32-rn-inputs"
description = "nvidia-h100-tf32 with float32 inputs rounded to nearest tf32"
[inputs]
a = "float32"
convert_to = "tfloat32"
convert_rounding = "rne"
[adder]
kind = "fused"
group = 8
fraction_bits = 25
[accumulator]
format = "float32"
[chain]
kind = "sequential"
[provenance]
"inputs.a" = "test"
"inputs.convert_to" = "test"
"inputs.convert_rounding" = "test"
"adder.kind" = "test"
"adder.group" = "test"
"adder.fraction_bits" = "test"
"accumulator.format" = "test"
"chain.kind" = "test"
)", "tf32-rn-inputs.toml");
  ASSERT_TRUE(rn.ok()) << rn.status();
  const uint64_t seed = TestSeed(21, "AuditTest.AutoAuditsAgainstTheBestExplainingPreset");
  const Tensor a = Random(Float32(), {16, 256}, seed), b = Random(Float32(), {256, 16}, seed + 1);
  const Tensor out = EmulateMatmul(*rn, a, b);
  MatmulAuditInput in; in.a = &a; in.b = &b; in.out = &out;
  absl::StatusOr<AuditResult> first = AuditMatmul(in, Options({"cpu-f32-seq"}));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_GT(Count(*first, AuditClass::kUnexplained), 0) << "the old auto choice must fail here";
  absl::StatusOr<AuditResult> r = AuditMatmul(in, Options({"auto"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict, AuditVerdict::kPass) << AuditSummaryText(*r);
  EXPECT_NE(r->platforms[0].name.find("tf32"), std::string::npos) << r->platforms[0].name;
  EXPECT_EQ(r->best_platform, r->platforms[0].name);
  EXPECT_EQ(r->counts, r->platforms[0].counts);
  EXPECT_EQ(Count(*r, AuditClass::kUnexplained), 0);
  // Platforms given by name: the first is the primary, whatever explains better.
  absl::StatusOr<AuditResult> named = AuditMatmul(in, Options({"cpu-f32-seq", "nvidia-h100-tf32"}));
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->platforms[0].name, "cpu-f32-seq");
  EXPECT_EQ(named->verdict, AuditVerdict::kFail);
  EXPECT_EQ(named->best_platform, "nvidia-h100-tf32");
}

// Every mutation at chosen elements: unexplained there (and only there), with its diagnosis.
TEST_F(AuditTest, MutationsAreUnexplainedWithTheirDiagnosis) {
  const Model& m = M("trainium2-bf16");
  const int64_t n = 128, k = 128;  // Square B and A: the transposed diagnoses apply.
  const uint64_t seed = TestSeed(9, "AuditTest.MutationsAreUnexplainedWithTheirDiagnosis");
  const Tensor a = Random(BFloat16(), {n, k}, seed), b = Random(BFloat16(), {k, n}, seed + 1);
  Tensor out = EmulateMatmul(m, a, b);
  std::vector<uint64_t> av(static_cast<size_t>(a.size())), bv(static_cast<size_t>(b.size()));
  a.CopyBits(0, av);
  b.CopyBits(0, bv);
  auto row = [&](int64_t i) { return std::vector<uint64_t>(av.begin() + i * k, av.begin() + (i + 1) * k); };
  auto col = [&](int64_t j) {
    std::vector<uint64_t> c(static_cast<size_t>(k));
    for (int64_t t = 0; t < k; ++t) c[static_cast<size_t>(t)] = bv[static_cast<size_t>(t * n + j)];
    return c;
  };
  auto exact_f32 = [&](const std::vector<uint64_t>& x, const std::vector<uint64_t>& y) {
    return ExactDot(BFloat16(), x, BFloat16(), y).Round(Float32(), OpEnv{}).bits;
  };
  struct Case {
    int64_t e;
    std::string diagnosis;
  };
  std::vector<Case> cases;
  // Sign flip.
  cases.push_back({3 * n + 4, "sign flipped"});
  out.SetBits(cases.back().e, out.Bits(cases.back().e) ^ 0x80000000u);
  // Doubled.
  cases.push_back({10 * n + 11, "2^1 (doubled)"});
  out.SetBits(cases.back().e, Mul(Float32(), out.Bits(cases.back().e), 0x40000000u, OpEnv{}).bits);
  // One 32-wide K tile missing.
  {
    const int64_t e = 20 * n + 21;
    std::vector<uint64_t> r = row(20), c = col(21);
    for (int64_t t = 32; t < 64; ++t) r[static_cast<size_t>(t)] = 0;
    out.SetBits(e, exact_f32(r, c));
    cases.push_back({e, "one K tile missing"});
  }
  // One 64-wide tile added twice.
  {
    const int64_t e = 30 * n + 31;
    std::vector<uint64_t> r = row(30), c = col(31);
    r.insert(r.end(), r.begin(), r.begin() + 64);
    c.insert(c.end(), c.begin(), c.begin() + 64);
    out.SetBits(e, exact_f32(r, c));
    cases.push_back({e, "added twice"});
  }
  // B read transposed: (A B^T)[i, j].
  {
    const int64_t e = 40 * n + 41;
    std::vector<uint64_t> brow(bv.begin() + 41 * n, bv.begin() + 42 * n);
    out.SetBits(e, exact_f32(row(40), brow));
    cases.push_back({e, "B transposed"});
  }
  // Accumulated in bfloat16.
  {
    const int64_t e = 50 * n + 51;
    // A sequential bfloat16 FMA chain.
    uint64_t acc = 0;
    const std::vector<uint64_t> r = row(50), c = col(51);
    for (int64_t t = 0; t < k; ++t) acc = Fma(BFloat16(), r[static_cast<size_t>(t)], c[static_cast<size_t>(t)], acc, OpEnv{}).bits;
    out.SetBits(e, Convert(BFloat16(), Float32(), acc, OpEnv{}).bits);
    cases.push_back({e, "bfloat16"});
  }
  // Never written (zero).
  cases.push_back({70 * n + 71, "not written"});
  out.SetBits(cases.back().e, 0);
  // Uninitialized memory: NaN.
  cases.push_back({60 * n + 61, "uninitialized"});
  out.SetBits(cases.back().e, 0x7FC00000u);
  MatmulAuditInput in; in.a = &a; in.b = &b; in.out = &out;
  absl::StatusOr<AuditResult> r = AuditMatmul(in, Options({"trainium2-bf16"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict, AuditVerdict::kFail);
  std::set<int64_t> bad;
  for (const Case& c : cases) bad.insert(c.e);
  for (int64_t e = 0; e < out.size(); ++e) {
    const bool unexplained = r->classes[static_cast<size_t>(e)] == static_cast<uint8_t>(AuditClass::kUnexplained);
    EXPECT_EQ(unexplained, bad.count(e) == 1) << "element " << e;
  }
  EXPECT_EQ(r->mismatched, static_cast<int64_t>(cases.size()));
  for (const Case& c : cases) {
    bool found = false;
    for (const AuditElement& el : r->elements) {
      if (el.index == std::vector<int64_t>{c.e / n, c.e % n}) {
        found = true;
        EXPECT_NE(el.diagnosis.find(c.diagnosis), std::string::npos)
            << "element " << c.e << ": '" << el.diagnosis << "', expected '" << c.diagnosis << "'";
      }
    }
    EXPECT_TRUE(found) << c.e;
  }
  const std::string text = AuditSummaryText(*r);
  EXPECT_NE(text.find("Tensor-likes are not close!"), std::string::npos);
  EXPECT_NE(text.find("Mismatched elements: 8 / 16384 (0.0488%)"), std::string::npos) << text;
}

TEST_F(AuditTest, ScaledFp8AndScaleMissing) {
  const Model& m = M("nvidia-h100-fp8e4m3");
  const uint64_t seed = TestSeed(11, "AuditTest.ScaledFp8AndScaleMissing");
  const Tensor a = Random(*m.inputs.a, {8, 64}, seed), b = Random(m.InputB(), {64, 8}, seed + 1);
  const Tensor raw = EmulateMatmul(m, a, b);
  Tensor sa = *MakeTensor("float32", {}), sb = *MakeTensor("float32", {8});
  sa.SetBits(0, DoubleToBits(Float32(), 0.125));
  for (int j = 0; j < 8; ++j) sb.SetBits(j, DoubleToBits(Float32(), 0.5 + j));
  Tensor out = *MakeTensor("float32", {8, 8});
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      const double s32 = ToDouble(Float32(), DoubleToBits(Float32(), 0.125 * (0.5 + j)));
      const double y = ToDouble(m.OutputFormat(), raw.Bits(i * 8 + j));
      out.SetBits(i * 8 + j, DoubleToBits(Float32(), s32 * y));
    }
  }
  const int64_t e = 2 * 8 + 3;
  out.SetBits(e, DoubleToBits(Float32(), ToDouble(m.OutputFormat(), raw.Bits(e)) * (0.5 + 3)));  // s_a forgotten
  MatmulAuditInput in; in.a = &a; in.b = &b; in.out = &out; in.scale_a = &sa; in.scale_b = &sb;
  absl::StatusOr<AuditResult> r = AuditMatmul(in, Options({"nvidia-h100-fp8e4m3"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Count(*r, AuditClass::kIdentical), 63);
  EXPECT_EQ(Count(*r, AuditClass::kUnexplained), 1);
  ASSERT_FALSE(r->elements.empty());
  EXPECT_NE(r->elements[0].diagnosis.find("scale_a missing"), std::string::npos) << r->elements[0].diagnosis;
  EXPECT_NE(r->formula.find("scale_a[i] * scale_b[j]"), std::string::npos);
}

// DeepSeek-V3-style block scales (nvidia-h100-fp8e4m3-deepgemm): an output made on the host
// (each 128-K block's partial sum from the unscaled promote128 model on that block alone, then
// std::fmaf(fl32(s_a s_b), p, acc)), audited bit-identical; an element whose block scales were
// not applied, one with a K block missing, and the scale files' shape errors.
TEST_F(AuditTest, BlockScaledFp8) {
  const Model& unscaled = M("nvidia-h100-fp8e4m3-promote128");
  const int m = 6, n = 5, k = 300, kb = 3;
  // Pinned: with other inputs the missing block is often diagnosed as another tile or "halved".
  const Tensor a = Random(*unscaled.inputs.a, {m, k}, 21), b = Random(unscaled.InputB(), {k, n}, 22);
  Tensor sa = *MakeTensor("float32", {m, kb}), sb = *MakeTensor("float32", {kb, n});
  PinnedRng rng(20261207);  // Pinned with a and b (above).
  for (int64_t i = 0; i < sa.size(); ++i) sa.SetBits(i, DoubleToBits(Float32(), std::ldexp(1 + rng.Uniform01(), -3)));
  for (int64_t i = 0; i < sb.size(); ++i) sb.SetBits(i, DoubleToBits(Float32(), std::ldexp(1 + rng.Uniform01(), 2)));
  Tensor out = *MakeTensor("float32", {m, n});
  Tensor plain = *MakeTensor("float32", {m, n});  // The same dots without scales.
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      float acc = 0, acc_plain = 0;
      for (int blk = 0; blk < kb; ++blk) {
        const int lo = blk * 128, hi = std::min(k, lo + 128);
        std::vector<uint64_t> x, y;
        for (int t = lo; t < hi; ++t) {
          x.push_back(a.Bits(i * k + t));
          y.push_back(b.Bits(t * n + j));
        }
        const float p = std::bit_cast<float>(static_cast<uint32_t>(GenericEvaluateDot(unscaled, x, y, 0)->bits));
        const float s = static_cast<float>(ToDouble(Float32(), sa.Bits(i * kb + blk)) *
                                           ToDouble(Float32(), sb.Bits(blk * n + j)));
        acc = std::fmaf(s, p, acc);
        acc_plain += p;
      }
      out.SetBits(i * n + j, std::bit_cast<uint32_t>(acc));
      plain.SetBits(i * n + j, std::bit_cast<uint32_t>(acc_plain));
    }
  }
  MatmulAuditInput in; in.a = &a; in.b = &b; in.out = &out; in.scale_a = &sa; in.scale_b = &sb;
  absl::StatusOr<AuditResult> r = AuditMatmul(in, Options({"nvidia-h100-fp8e4m3-deepgemm"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Count(*r, AuditClass::kIdentical), m * n);
  EXPECT_NE(r->formula.find("fl32(acc + fl32(S) p)"), std::string::npos) << r->formula;

  // Element (1, 2) without its scales; element (4, 0) with K block 1 dropped.
  Tensor bad = out;
  bad.SetBits(1 * n + 2, plain.Bits(1 * n + 2));
  {
    float acc = 0;
    for (int blk = 0; blk < kb; blk += 2) {
      std::vector<uint64_t> x, y;
      for (int t = blk * 128; t < std::min(k, blk * 128 + 128); ++t) {
        x.push_back(a.Bits(4 * k + t));
        y.push_back(b.Bits(t * n + 0));
      }
      const float p = std::bit_cast<float>(static_cast<uint32_t>(GenericEvaluateDot(unscaled, x, y, 0)->bits));
      acc = std::fmaf(static_cast<float>(ToDouble(Float32(), sa.Bits(4 * kb + blk)) *
                                         ToDouble(Float32(), sb.Bits(blk * n))),
                      p, acc);
    }
    bad.SetBits(4 * n + 0, std::bit_cast<uint32_t>(acc));
  }
  in.out = &bad;
  r = AuditMatmul(in, Options({"nvidia-h100-fp8e4m3-deepgemm"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Count(*r, AuditClass::kIdentical), m * n - 2);
  EXPECT_EQ(Count(*r, AuditClass::kUnexplained), 2);
  EXPECT_EQ(r->verdict, AuditVerdict::kFail);
  std::set<std::string> diagnoses;
  for (const auto& el : r->elements) diagnoses.insert(el.diagnosis);
  EXPECT_TRUE(diagnoses.count("block scales not applied (out = the unscaled sum_k A[i,k] B[k,j])")) << *diagnoses.begin();
  EXPECT_TRUE(diagnoses.count("one K tile missing (k in [128, 256), tile 128)")) << *diagnoses.rbegin();
  // The hot pass's exact values (one exact product per block: float8_e4m3fn block sums are exact
  // in binary64) against the listed elements' (every scaled product added exactly): the
  // greatest absolute difference (at one of the two broken elements, both listed) is the same.
  ASSERT_EQ(r->elements.size(), 2u);
  double listed_max = 0;
  for (const auto& el : r->elements) listed_max = std::max(listed_max, std::fabs(el.actual - el.exact_value));
  EXPECT_NEAR(r->max_abs_diff, listed_max, listed_max * 1e-12);

  // Shapes: B's scales transposed, and per-row scales given to a block-scaled platform.
  Tensor sbt = *MakeTensor("float32", {n, kb});
  sbt.source = "sb_t.npy";
  in.out = &out;
  in.scale_b = &sbt;
  r = AuditMatmul(in, Options({"nvidia-h100-fp8e4m3-deepgemm"}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "sb_t.npy: scale_b has shape [5, 3] but nvidia-h100-fp8e4m3-deepgemm takes per-block "
            "scales (epilogue.scale = \"block\", 128 products per block along K): expected [3, 5], "
            "one per K block and column of B (K = 300 in 3 blocks), or 1 element");
  // The unscaled promote128 preset with these 2-D scales: its row/column stage refuses them.
  in.scale_b = &sb;
  r = AuditMatmul(in, Options({"nvidia-h100-fp8e4m3-promote128"}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("scale_a has 18 elements: expected 1 (per tensor) or 6"),
            std::string::npos) << r.status();
  // Mixed platforms.
  r = AuditMatmul(in, Options({"nvidia-h100-fp8e4m3-deepgemm", "nvidia-h100-fp8e4m3-promote128"}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("takes per-block scales and nvidia-h100-fp8e4m3-promote128 does not"),
            std::string::npos) << r.status();
}

// MXFP8 (nvidia-b200-mxfp8e4m3: power-of-two scales on the products of each 32-block): an
// output made by the same datapath on float32 inputs that carry the scales (a s_a and b s_b are
// exact), audited bit-identical; a scale that is not a power of two is refused.
TEST_F(AuditTest, MxBlockScales) {
  const Model& mx = M("nvidia-b200-mxfp8e4m3");
  Model wide = M("nvidia-b200-fp8e4m3");
  wide.inputs.a = wide.inputs.b = &Float32();
  const int m = 5, n = 4, k = 100, kb = 4;
  PinnedRng rng(TestSeed(20261212, "AuditTest.MxBlockScales"));
  Tensor a = *MakeTensor("float8_e4m3fn", {m, k}), b = *MakeTensor("float8_e4m3fn", {k, n});
  Tensor sa = *MakeTensor("float32", {m, kb}), sb = *MakeTensor("float32", {kb, n});
  for (int64_t i = 0; i < sa.size(); ++i) sa.SetBits(i, DoubleToBits(Float32(), std::ldexp(1.0, int(rng.Below(11)) - 5)));
  for (int64_t i = 0; i < sb.size(); ++i) sb.SetBits(i, DoubleToBits(Float32(), std::ldexp(1.0, int(rng.Below(11)) - 5)));
  Tensor a32 = *MakeTensor("float32", {m, k}), b32 = *MakeTensor("float32", {k, n});
  auto normal_e4m3 = [&] {  // Normal values keep their exponents' offsets when scaled.
    for (;;) {
      const uint64_t bits = rng.Below(256);
      if ((bits & 0x78) != 0 && (bits & 0x7F) != 0x7F) return bits;
    }
  };
  for (int i = 0; i < m; ++i) {
    for (int t = 0; t < k; ++t) {
      a.SetBits(i * k + t, normal_e4m3());
      a32.SetBits(i * k + t, DoubleToBits(Float32(), ToDouble(Float8E4M3FN(), a.Bits(i * k + t)) *
                                                         ToDouble(Float32(), sa.Bits(i * kb + t / 32))));
    }
  }
  for (int t = 0; t < k; ++t) {
    for (int j = 0; j < n; ++j) {
      b.SetBits(t * n + j, normal_e4m3());
      b32.SetBits(t * n + j, DoubleToBits(Float32(), ToDouble(Float8E4M3FN(), b.Bits(t * n + j)) *
                                                         ToDouble(Float32(), sb.Bits((t / 32) * n + j))));
    }
  }
  const Tensor out = EmulateMatmul(wide, a32, b32);
  MatmulAuditInput in; in.a = &a; in.b = &b; in.out = &out; in.scale_a = &sa; in.scale_b = &sb;
  absl::StatusOr<AuditResult> r = AuditMatmul(in, Options({mx.name}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Count(*r, AuditClass::kIdentical), m * n);
  EXPECT_NE(r->formula.find("every product of block b times S, exactly"), std::string::npos) << r->formula;
  sb.SetBits(5, DoubleToBits(Float32(), 0.75));
  sb.source = "sb.npy";
  r = AuditMatmul(in, Options({mx.name}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "sb.npy: scale_b[5] = 0.75: nvidia-b200-mxfp8e4m3 applies power-of-two block scales "
            "(epilogue.block_apply = \"products\", MX E8M0)");
}

// cuBLASLt's scaled FP8 GEMM with C (nvidia-h100-fp8e4m3-cublaslt, epilogue.c = "after_scale"):
// out = fl32(fl32(s_a s_b) acc + C) in one FFMA, made on the host with std::fmaf from the chain's
// value, audited identical; the same output with C scaled too (S (acc + C)) is unexplained; a
// platform that scales C cannot join the run.
TEST_F(AuditTest, ScaledFp8WithCAddedAfterTheScale) {
  const Model& lt = M("nvidia-h100-fp8e4m3-cublaslt");
  Model chain = lt;
  chain.epilogue.c = EpilogueC::kChain;
  const int m = 4, n = 6, k = 200;
  // Pinned: with other inputs S (acc + C) can round to the FFMA result, so fewer than m * n differ.
  const Tensor a = Random(*lt.inputs.a, {m, k}, 31), b = Random(lt.InputB(), {k, n}, 32);
  Tensor sa = *MakeTensor("float32", {m}), sb = *MakeTensor("float32", {n});
  Tensor c = Random(Float32(), {m, n}, 33);
  for (int i = 0; i < m; ++i) sa.SetBits(i, DoubleToBits(Float32(), 0.0371 * (i + 1)));
  for (int j = 0; j < n; ++j) sb.SetBits(j, DoubleToBits(Float32(), 0.25 + 0.1 * j));  // S < 0.12: far from 1.
  const Tensor acc = EmulateMatmul(chain, a, b);  // The chain from +0, C not added.
  Tensor out = *MakeTensor("float32", {m, n}), scaled_c = *MakeTensor("float32", {m, n});
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      const float s = static_cast<float>(ToDouble(Float32(), sa.Bits(i)) * ToDouble(Float32(), sb.Bits(j)));
      const float y = std::bit_cast<float>(static_cast<uint32_t>(acc.Bits(i * n + j)));
      const float cv = std::bit_cast<float>(static_cast<uint32_t>(c.Bits(i * n + j)));
      out.SetBits(i * n + j, std::bit_cast<uint32_t>(std::fmaf(s, y, cv)));
      scaled_c.SetBits(i * n + j, std::bit_cast<uint32_t>(s * (y + cv)));
    }
  }
  MatmulAuditInput in; in.a = &a; in.b = &b; in.c = &c; in.out = &out; in.scale_a = &sa; in.scale_b = &sb;
  absl::StatusOr<AuditResult> r = AuditMatmul(in, Options({lt.name}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Count(*r, AuditClass::kIdentical), m * n);
  EXPECT_NE(r->formula.find("* acc + C[i,j])), one rounding (FFMA)"), std::string::npos) << r->formula;
  in.out = &scaled_c;
  r = AuditMatmul(in, Options({lt.name}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Count(*r, AuditClass::kUnexplained), m * n);
  r = AuditMatmul(in, Options({lt.name, "nvidia-h100-fp8e4m3-promote128"}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("adds C after the scales"), std::string::npos) << r.status();
  // Without C the stage is the plain product order: out = fl32(S32 acc).
  in.c = nullptr;
  Tensor plain = *MakeTensor("float32", {m, n});
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      const float s = static_cast<float>(ToDouble(Float32(), sa.Bits(i)) * ToDouble(Float32(), sb.Bits(j)));
      plain.SetBits(i * n + j, std::bit_cast<uint32_t>(s * std::bit_cast<float>(static_cast<uint32_t>(acc.Bits(i * n + j)))));
    }
  }
  in.out = &plain;
  r = AuditMatmul(in, Options({lt.name}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Count(*r, AuditClass::kIdentical), m * n);
}

TEST_F(AuditTest, ResultDoesNotDependOnThreads) {
  const uint64_t seed = TestSeed(13, "AuditTest.ResultDoesNotDependOnThreads");
  const Tensor a = Random(BFloat16(), {33, 200}, seed), b = Random(BFloat16(), {200, 17}, seed + 1);
  Tensor out = EmulateMatmul(M("trainium2-bf16"), a, b);
  out.SetBits(5, out.Bits(5) ^ 0x80000000u);
  MatmulAuditInput in; in.a = &a; in.b = &b; in.out = &out;
  AuditOptions o1 = Options({"nvidia-h100-bf16", "trainium2-bf16"}, /*recommend=*/true);
  o1.threads = 1;
  AuditOptions o3 = o1;
  o3.threads = 3;
  absl::StatusOr<AuditResult> r1 = AuditMatmul(in, o1), r3 = AuditMatmul(in, o3);
  ASSERT_TRUE(r1.ok() && r3.ok());
  EXPECT_EQ(AuditToJson(*r1), AuditToJson(*r3));
  EXPECT_GT(r1->platforms[0].rec_rtol, 0);
  EXPECT_FALSE(r1->soundness_rates.empty());
}

TEST_F(AuditTest, SumAgainstItsModelAndAMutation) {
  const Model& m = M("numpy-sum-f32");
  const Tensor x = Random(Float32(), {4, 3, 1000}, TestSeed(15, "AuditTest.SumAgainstItsModelAndAMutation"));
  Tensor out = *MakeTensor("float32", {4, 3});
  EmulateLastAxisSums(m, x, out);
  out.SetBits(7, Mul(Float32(), out.Bits(7), 0x3F000000u, OpEnv{}).bits);  // halved
  SumAuditInput in; in.x = &x; in.axis = -1; in.out = &out;
  absl::StatusOr<AuditResult> r = AuditSum(in, Options({"numpy-sum-f32"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Count(*r, AuditClass::kIdentical), 11);
  EXPECT_EQ(Count(*r, AuditClass::kUnexplained), 1);
  EXPECT_NE(r->elements[0].diagnosis.find("halved"), std::string::npos) << r->elements[0].diagnosis;
  EXPECT_EQ(r->elements[0].index, (std::vector<int64_t>{2, 1}));
}

TEST_F(AuditTest, CastRneAndStochastic) {
  const uint64_t seed = TestSeed(16, "AuditTest.CastRneAndStochastic");
  const Tensor x = Random(Float32(), {4096}, seed);
  const FormatSpec& to = Float8E4M3FN();
  Tensor rne = *MakeTensor(to.name, {4096});
  OpEnv sat;
  sat.saturate = true;
  for (int64_t i = 0; i < x.size(); ++i) rne.SetBits(i, Convert(Float32(), to, x.Bits(i), sat).bits);
  CastAuditInput in; in.x = &x; in.out = &rne; in.to = &to; in.env = sat;
  absl::StatusOr<AuditResult> r = AuditCast(in, Options({}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Count(*r, AuditClass::kIdentical), 4096);
  // Stochastic rounding with honest random bits passes; always rounding toward zero fails the
  // rate check although every element is one of the two neighbours.
  OpEnv sr = sat;
  sr.rounding = Rounding::kStochastic;
  sr.sr_bits = 8;
  Tensor honest = rne, biased = rne;
  PinnedRng rng(TestSeed(99, "AuditTest.CastRneAndStochastic random bits"));
  for (int64_t i = 0; i < x.size(); ++i) {
    OpEnv e = sr;
    e.sr_random = rng.Below(256);
    honest.SetBits(i, Convert(Float32(), to, x.Bits(i), e).bits);
    e.sr_random = 0;
    biased.SetBits(i, Convert(Float32(), to, x.Bits(i), e).bits);
  }
  in.env = sr;
  in.out = &honest;
  r = AuditCast(in, Options({}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict, AuditVerdict::kPass) << AuditSummaryText(*r);
  EXPECT_TRUE(r->sr_test.run);
  EXPECT_LT(std::fabs(r->sr_test.z), 4.5);
  in.out = &biased;
  r = AuditCast(in, Options({}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Count(*r, AuditClass::kUnexplained), 0);
  EXPECT_EQ(r->verdict, AuditVerdict::kFail);
  EXPECT_LT(r->sr_test.z, -4.5);
}

TEST_F(AuditTest, BadInputsAreErrorsThatSayWhy) {
  const uint64_t seed = TestSeed(17, "AuditTest.BadInputsAreErrorsThatSayWhy");
  const Tensor a = Random(BFloat16(), {4, 8}, seed), b = Random(BFloat16(), {6, 4}, seed + 1);
  const Tensor out = *MakeTensor("float32", {4, 4});
  MatmulAuditInput in; in.a = &a; in.b = &b; in.out = &out;
  absl::StatusOr<AuditResult> r = AuditMatmul(in, Options({"trainium2-bf16"}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("inner dimensions differ"), std::string::npos) << r.status();
  const Tensor b2 = Random(BFloat16(), {8, 4}, seed + 1);
  in.b = &b2;
  r = AuditMatmul(in, Options({"no-such-platform"}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no-such-platform"), std::string::npos) << r.status();
  const Tensor f32 = Random(Float32(), {4, 8}, seed + 2);
  in.a = &f32;
  r = AuditMatmul(in, Options({"trainium2-bf16"}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--cast-inputs"), std::string::npos) << r.status();
  in.cast_inputs = OpEnv{};
  r = AuditMatmul(in, Options({"trainium2-bf16"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->notes.empty());
}

// The mismatch share never rounds to 0% or 100% when it is neither.
TEST(AuditText, PercentagesKeepTheirDigits) {
  AuditResult r;
  r.op = "matmul";
  r.verdict = AuditVerdict::kFail;
  r.formula = "f";
  for (const auto& [unexplained, want] :
       std::vector<std::pair<int64_t, std::string>>{{1, "(1e-06%)"},
                                                    {99999999, "(99.999999%)"},
                                                    {99980000, "(99.98%)"},
                                                    {50000000, "(50.0%)"}}) {
    r.counts = {100000000 - unexplained, 0, 0, unexplained};
    r.mismatched = unexplained;
    const std::string text = AuditSummaryText(r);
    EXPECT_NE(text.find("Mismatched elements: " + std::to_string(unexplained) + " / 100000000 " + want),
              std::string::npos)
        << text;
  }
}

// A candidate "the output is f times a conforming one" is tested with |f| times the slack: a
// doubled output may lie twice the slack from 2x, a halved one only half of it from x / 2.
TEST(AuditRelationTest, ScaledCandidatesScaleTheSlack) {
  using audit_internal::Relation;
  const double x = 1.0, slack = 0x1p-10;  // Far above half an ulp of float32 at 2 (2^-23).
  EXPECT_TRUE(Relation(Float32(), 2 * x + 1.5 * slack, slack).Holds(2 * x, 2));
  EXPECT_FALSE(Relation(Float32(), 2 * x + 1.5 * slack, slack).Holds(2 * x));
  EXPECT_EQ(Relation(Float32(), 2 * x + 1.5 * slack, slack).PowerOfTwo(x),
            "off by a factor of 2^1 (doubled)");
  EXPECT_TRUE(Relation(Float32(), x / 2 + 0.4 * slack, slack).Holds(x / 2, 0.5));
  EXPECT_FALSE(Relation(Float32(), x / 2 + 0.75 * slack, slack).Holds(x / 2, 0.5));
  EXPECT_EQ(Relation(Float32(), x / 2 + 0.75 * slack, slack).PowerOfTwo(x), "");
  EXPECT_EQ(Relation(Float32(), x / 2 + 0.4 * slack, slack).PowerOfTwo(x),
            "off by a factor of 2^-1 (halved)");
  EXPECT_TRUE(Relation(Float32(), 8 * x - 7 * slack, slack).Holds(8 * x, -8));  // |factor|.
}

}  // namespace
}  // namespace fpconform::reports
