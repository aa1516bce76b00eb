#include "accumulation/evaluate.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "accumulation/fast_eval.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/ops.h"
#include "oracles/exact_sum.h"

namespace fpconform {
namespace {

// A model from the body of a file (tables and keys); name, description and a provenance entry
// per key are added here.
Model MakeModel(const std::string& body) {
  std::string text = "name = \"test\"\ndescription = \"test model\"\n" + body + "\n[provenance]\n";
  std::istringstream in(body);
  std::string line, table;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '[') {
      table = line.substr(1, line.find(']') - 1);
    } else if (size_t eq = line.find(" ="); eq != std::string::npos) {
      text += "\"" + table + "." + line.substr(0, eq) + "\" = \"test\"\n";
    }
  }
  absl::StatusOr<Model> m = ParseModel(text, "test.toml");
  EXPECT_TRUE(m.ok()) << m.status() << "\n" << text;
  return m.ok() ? *m : Model{};
}

uint32_t F32(float x) { return std::bit_cast<uint32_t>(x); }

// Deterministic generator (PinnedRng, SplitMix64): same values on every machine.
class Rng {
 public:
  explicit Rng(uint64_t seed) : rng_(seed) {}
  uint64_t Next() { return rng_.Next(); }
  // A float32 with a random sign, significand and exponent in [-e, e].
  float F(int e) {
    const uint64_t r = Next();
    const float m = 1.0f + static_cast<float>(r & 0x7FFFFF) * 0x1p-23f;
    const int ex = static_cast<int>((r >> 23) % (2 * e + 1)) - e;
    return ((r >> 40) & 1 ? -1.0f : 1.0f) * std::ldexp(m, ex);
  }

 private:
  PinnedRng rng_;
};

constexpr const char* kIeeeBase = R"([inputs]
a = "float32"
[product]
policy = "round"
format = "float32"
[adder]
kind = "ieee"
[accumulator]
format = "float32"
)";

// ---- (a) IEEE models agree bit for bit with host float32 / float64 in the same order. ----

TEST(EvaluateTest, IeeeChainsMatchHostFloat) {
  const Model seq = MakeModel(std::string(kIeeeBase) + "[chain]\nkind = \"sequential\"\n");
  const Model fma = MakeModel(
      "[inputs]\na = \"float32\"\n[adder]\nkind = \"fma\"\n[accumulator]\nformat = \"float32\"\n"
      "[chain]\nkind = \"sequential\"\n");
  const Model blocked =
      MakeModel(std::string(kIeeeBase) + "[chain]\nkind = \"blocked\"\nblock = 7\n");
  const Model strided = MakeModel(std::string(kIeeeBase) +
                                  "[chain]\nkind = \"strided\"\nways = 4\ncombine = \"pairwise\"\n");
  const Model split =
      MakeModel(std::string(kIeeeBase) + "[chain]\nkind = \"split_k\"\nslices = 3\n");
  const Model promote = MakeModel(std::string(kIeeeBase) +
                                  "[chain]\nkind = \"promote\"\nevery = 5\nformat = \"float64\"\n");
  Rng rng{TestSeed(1, "EvaluateTest.IeeeChainsMatchHostFloat")};
  for (int t = 0; t < 3000; ++t) {
    const int k = static_cast<int>(rng.Next() % 40);
    std::vector<float> a(k), b(k);
    std::vector<uint64_t> ab(k), bb(k);
    for (int i = 0; i < k; ++i) {
      a[i] = rng.F(20);
      b[i] = rng.F(20);
      ab[i] = F32(a[i]);
      bb[i] = F32(b[i]);
    }
    const float c = rng.F(20);
    SCOPED_TRACE(testing::Message() << "case " << t << " k " << k);
    float s = c;
    for (int i = 0; i < k; ++i) s = s + a[i] * b[i];
    EXPECT_EQ(EvaluateDot(seq, ab, bb, F32(c))->bits, F32(s));
    s = c;
    for (int i = 0; i < k; ++i) s = std::fma(a[i], b[i], s);
    EXPECT_EQ(EvaluateDot(fma, ab, bb, F32(c))->bits, F32(s));
    s = c;
    for (int i = 0; i < k; i += 7) {
      float bs = 0;
      for (int j = i; j < std::min(k, i + 7); ++j) bs = bs + a[j] * b[j];
      s = s + bs;
    }
    EXPECT_EQ(EvaluateDot(blocked, ab, bb, F32(c))->bits, F32(s));
    float r[4] = {c, 0, 0, 0};
    for (int i = 0; i < k; ++i) r[i % 4] = r[i % 4] + a[i] * b[i];
    s = (r[0] + r[1]) + (r[2] + r[3]);
    EXPECT_EQ(EvaluateDot(strided, ab, bb, F32(c))->bits, F32(s));
    const int slice = (k + 2) / 3;
    s = c;
    for (int q = 0; q < 3; ++q) {
      float ps = 0;
      for (int j = q * slice; j < std::min(k, (q + 1) * slice); ++j) ps = ps + a[j] * b[j];
      s = s + ps;
    }
    EXPECT_EQ(EvaluateDot(split, ab, bb, F32(c))->bits, F32(s));
    double outer = c;
    for (int i = 0; i < k; i += 5) {
      float inner = 0;
      for (int j = i; j < std::min(k, i + 5); ++j) inner = inner + a[j] * b[j];
      outer = outer + static_cast<double>(inner);
    }
    EXPECT_EQ(EvaluateDot(promote, ab, bb, std::bit_cast<uint64_t>(static_cast<double>(c)))->bits,
              std::bit_cast<uint64_t>(outer));
  }
}

// NumPy's float32 pairwise sum (numpy/_core/src/umath/loops_utils.h.src, pairwise_sum), with
// sum(x) = x_0 + pairwise(x_1..x_{n-1}).
float NumpyPairwise(const float* a, int n) {
  if (n < 8) {
    float res = 0.f;
    for (int i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    float r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    int i;
    for (i = 8; i < n - (n % 8); i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  int n2 = n / 2;
  n2 -= n2 % 8;
  return NumpyPairwise(a, n2) + NumpyPairwise(a + n2, n - n2);
}

TEST(EvaluateTest, NumpyPairwiseSumMatchesReference) {
  const Model m = MakeModel(
      "[inputs]\na = \"float32\"\n[adder]\nkind = \"ieee\"\n[accumulator]\nformat = "
      "\"float32\"\n[chain]\nkind = \"pairwise\"\nleaf = 128\nunroll = 8\nsplit_multiple = 8\n");
  Rng rng{TestSeed(2, "EvaluateTest.NumpyPairwiseSumMatchesReference")};
  for (int t = 0; t < 300; ++t) {
    const int n = 1 + static_cast<int>(rng.Next() % 700);
    std::vector<float> x(n);
    std::vector<uint64_t> xb(n);
    for (int i = 0; i < n; ++i) xb[i] = F32(x[i] = rng.F(10));
    const float want = x[0] + NumpyPairwise(x.data() + 1, n - 1);
    SCOPED_TRACE(testing::Message() << "case " << t << " n " << n);
    EXPECT_EQ(EvaluateSum(m, std::span(xb).subspan(1), xb[0])->bits, F32(want));
  }
}

// ---- (b) Fused groups, hand-derived (style of Fasi, Higham, Mikaitis & Pranesh 2021). ----

Model Fused(int g, int f, const char* norm, const char* align = "truncate",
            const char* in = "float16") {
  return MakeModel(std::string("[inputs]\na = \"") + in + "\"\n[adder]\nkind = \"fused\"\ngroup = " +
                   std::to_string(g) + "\nfraction_bits = " + std::to_string(f) +
                   "\nalignment = \"" + align + "\"\nnormalization_rounding = \"" + norm +
                   "\"\n[accumulator]\nformat = \"float32\"\n[chain]\nkind = \"sequential\"\n");
}

constexpr uint64_t kH1 = 0x3C00;      // float16 1.0
constexpr uint64_t kHm1 = 0xBC00;     // float16 -1.0
constexpr uint64_t kH2m11 = 0x1000;   // float16 2^-11
constexpr uint64_t kH2m12 = 0x0C00;   // float16 2^-12
constexpr uint64_t kH2m24 = 0x0001;   // float16 2^-24 (smallest subnormal)

TEST(EvaluateTest, FusedProductsAreExact) {
  // (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20: 21 bits, exact in the group and in float32.
  const Model m = Fused(4, 24, "rtz");
  const std::vector<uint64_t> a = {0x3C01, 0, 0, 0}, b = {0x3C01, 0, 0, 0};
  EXPECT_EQ(EvaluateDot(m, a, b, 0)->bits, F32(1.0f + 0x1p-9f + 0x1p-20f));
}

TEST(EvaluateTest, FusedAlignmentTruncatesBelowEmaxMinusF) {
  // Terms 1 and 2^-24 (= 2^-12 * 2^-12), emax = 0. With F = 23 the quantum is 2^-23 and 2^-24
  // truncates to 0: result 1. With F = 24 it is kept: 1 + 2^-24, which float32 RZ makes 1,
  // but with three such terms (F = 24): 1 + 3*2^-24 -> RZ to 1 + 2^-23.
  const std::vector<uint64_t> a = {kH1, kH2m12, kH2m12, kH2m12};
  const std::vector<uint64_t> b = {kH1, kH2m12, kH2m12, kH2m12};
  EXPECT_EQ(EvaluateDot(Fused(4, 23, "rtz"), a, b, 0)->bits, F32(1.0f));
  EXPECT_EQ(EvaluateDot(Fused(4, 24, "rtz"), a, b, 0)->bits, F32(1.0f + 0x1p-23f));
  // With RNE at F = 24: 1 + 3*2^-24 = 1 + 1.5 ulp(1) rounds to the nearest, 1 + 2 ulp = 1 + 2^-22.
  EXPECT_EQ(EvaluateDot(Fused(4, 24, "rne"), a, b, 0)->bits, F32(1.0f + 0x1p-22f));
}

TEST(EvaluateTest, FusedNoIntermediateNormalization) {
  // 1 + (-1) + 2^-24 + 2^-24 (products). emax = 0, F = 23: each 2^-24 truncates to 0 before
  // the (exact) cancellation, so the result is +0, although 2^-23 is representable.
  // Sequential IEEE (normalizing after each add) would give 2^-23.
  const std::vector<uint64_t> a = {kH1, kHm1, kH2m12, kH2m12};
  const std::vector<uint64_t> b = {kH1, kH1, kH2m12, kH2m12};
  EXPECT_EQ(EvaluateDot(Fused(4, 23, "rtz"), a, b, 0)->bits, 0u);
  // F = 24 keeps them: 2^-23 exactly.
  EXPECT_EQ(EvaluateDot(Fused(4, 24, "rtz"), a, b, 0)->bits, F32(0x1p-23f));
}

TEST(EvaluateTest, FusedCarryOutIsKept) {
  // float16 max-significand products: (2 - 2^-10)^2 = 4 - 2^-8 + 2^-20, four of them:
  // 16 - 2^-6 + 2^-18, nominal emax = 0 (E(a)+E(b) = 0), F = 23: quantum 2^-23, all exact.
  // The sum carries out above 2^(emax+1) (no overflow of the aligned adder is modelled); the
  // exact sum has bits 2^3 .. 2^-18, within float32's 24: 16 - 2^-6 + 2^-18 exactly.
  const std::vector<uint64_t> a = {0x3FFF, 0x3FFF, 0x3FFF, 0x3FFF};
  EXPECT_EQ(EvaluateDot(Fused(4, 23, "rtz"), a, a, 0)->bits,
            F32(16.0f - 0x1p-6f + 0x1p-18f));
}

TEST(EvaluateTest, FusedAccumulatorAlignsToo) {
  // c = 2^24 (float32), products 1 + 1 + 1 + 1 in one group: emax = 24, F = 23: quantum 2, the
  // products (1 each) truncate to 0: result 2^24. With G = 4 the same four in one IEEE chain
  // would give 2^24 + 4.
  const std::vector<uint64_t> a = {kH1, kH1, kH1, kH1};
  EXPECT_EQ(EvaluateDot(Fused(4, 23, "rtz"), a, a, F32(0x1p24f))->bits, F32(0x1p24f));
  // round_down: a negative term truncates toward -inf: c = 2^24, products -1 each: each becomes
  // -2, total 2^24 - 8.
  const std::vector<uint64_t> na = {kHm1, kHm1, kHm1, kHm1};
  EXPECT_EQ(EvaluateDot(Fused(4, 23, "rtz", "round_down"), na, a, F32(0x1p24f))->bits,
            F32(0x1p24f - 8));
  EXPECT_EQ(EvaluateDot(Fused(4, 23, "rtz"), na, a, F32(0x1p24f))->bits, F32(0x1p24f));
}

TEST(EvaluateTest, FusedIsNotMonotonic) {
  // Increasing one product can decrease the result: it raises emax, and the coarser quantum
  // truncates the small terms (Fasi et al. 2021, non-monotonicity). G = 3, F = 10, RZ, c = 0:
  //   A: {1 - 2^-11, 2^-11, 2^-11}: emax = -1, quantum 2^-11, all exact: 1 + 2^-11.
  //   B: {1,         2^-11, 2^-11}: emax =  0, quantum 2^-10, both 2^-11 truncate: 1.
  // B's first product is larger, yet B's result is smaller.
  const Model m = Fused(3, 10, "rtz");
  const std::vector<uint64_t> a_small = {0x3BFF /*1 - 2^-11*/, kH2m11, kH2m11};
  const std::vector<uint64_t> a_big = {kH1, kH2m11, kH2m11};
  const std::vector<uint64_t> ones = {kH1, kH1, kH1};
  EXPECT_EQ(EvaluateDot(m, a_small, ones, 0)->bits, F32(1.0f + 0x1p-11f));
  EXPECT_EQ(EvaluateDot(m, a_big, ones, 0)->bits, F32(1.0f));
}

TEST(EvaluateTest, FusedPadsAndChainsGroups) {
  // G = 2, five products of 1 * 2^-24 after c = 1 with F = 23: every group truncates the
  // 2^-24 terms (emax 0, quantum 2^-23): result 1. A sequential IEEE RTZ chain gives 1 too,
  // but G = 8 (one group, F = 24) keeps them: 1 + 5*2^-24 -> RZ 1 + 2^-22.
  const std::vector<uint64_t> a = {kH2m12, kH2m12, kH2m12, kH2m12, kH2m12};
  EXPECT_EQ(EvaluateDot(Fused(2, 23, "rtz"), a, a, F32(1.0f))->bits, F32(1.0f));
  EXPECT_EQ(EvaluateDot(Fused(8, 24, "rtz"), a, a, F32(1.0f))->bits, F32(1.0f + 0x1p-22f));
  // Subnormal float16 inputs: 2^-24 * 1: nominal E = -14 (Emin), exact value 2^-24.
  const std::vector<uint64_t> s = {kH2m24}, one = {kH1};
  EXPECT_EQ(EvaluateDot(Fused(1, 23, "rtz"), s, one, 0)->bits, F32(0x1p-24f));
}

// adder.overflow on a group whose sum leaves float32's range (bfloat16 inputs, G = 1, F = 25).
Model FusedOverflow(const char* norm, const char* overflow) {
  return MakeModel(std::string("[inputs]\na = \"bfloat16\"\n[adder]\nkind = \"fused\"\ngroup = 1\n"
                               "fraction_bits = 25\nnormalization_rounding = \"") +
                   norm + "\"\noverflow = \"" + overflow +
                   "\"\n[accumulator]\nformat = \"float32\"\n[chain]\nkind = \"sequential\"\n");
}

constexpr uint64_t kB2p30 = 0x4E80;   // bfloat16 2^30
constexpr uint64_t kBm2p30 = 0xCE80;  // bfloat16 -2^30
constexpr uint64_t kB2p51 = 0x5900;   // bfloat16 2^51
constexpr uint64_t kB2p52 = 0x5980;   // bfloat16 2^52
constexpr uint64_t kB2p100 = 0x7180;  // bfloat16 2^100
constexpr uint64_t kF32Max = 0x7F7FFFFF, kF32Inf = 0x7F800000;

TEST(EvaluateTest, FusedOverflowIsInfOrTheRoundingsResult) {
  static_assert(std::bit_cast<float>(uint32_t{0x4E80} << 16) == 0x1p30f);
  static_assert(std::bit_cast<float>(uint32_t{0x5900} << 16) == 0x1p51f);
  static_assert(std::bit_cast<float>(uint32_t{0x5980} << 16) == 0x1p52f);
  static_assert(std::bit_cast<float>(uint32_t{0x7180} << 16) == 0x1p100f);
  static_assert(std::bit_cast<float>(uint32_t{kF32Max}) == 0x1.fffffep127f);
  const std::vector<uint64_t> big = {kB2p100}, pos = {kB2p30}, neg = {kBm2p30};
  // 2^100 * 2^30 = 2^130: "ieee" under rtz gives +-max finite (IEEE 754-2019 §7.4), "inf" +-Inf.
  EXPECT_EQ(EvaluateDot(FusedOverflow("rtz", "ieee"), big, pos, 0)->bits, kF32Max);
  EXPECT_EQ(EvaluateDot(FusedOverflow("rtz", "ieee"), big, neg, 0)->bits, kF32Max | 0x80000000u);
  EXPECT_EQ(EvaluateDot(FusedOverflow("rtz", "inf"), big, pos, 0)->bits, kF32Inf);
  EXPECT_EQ(EvaluateDot(FusedOverflow("rtz", "inf"), big, neg, 0)->bits, kF32Inf | 0x80000000u);
  // Under rne both give Inf.
  EXPECT_EQ(EvaluateDot(FusedOverflow("rne", "ieee"), big, pos, 0)->bits, kF32Inf);
  EXPECT_EQ(EvaluateDot(FusedOverflow("rne", "inf"), big, pos, 0)->bits, kF32Inf);
  // Overflow is decided after rounding: c = max finite = 2^128 - 2^104 plus 2^52 * 2^51 is
  // 2^128 - 2^103 exactly (quantum 2^(127-25)), which rtz brings back to max finite; plus
  // 2^52 * 2^52 it is 2^128: Inf.
  const Model inf = FusedOverflow("rtz", "inf");
  EXPECT_EQ(EvaluateDot(inf, std::vector<uint64_t>{kB2p52}, std::vector<uint64_t>{kB2p51},
                        kF32Max)->bits, kF32Max);
  EXPECT_EQ(EvaluateDot(inf, std::vector<uint64_t>{kB2p52}, std::vector<uint64_t>{kB2p52},
                        kF32Max)->bits, kF32Inf);
  // An overflowed group stays overflowed: 2^130 then -2^130 (two groups) is Inf under "inf";
  // under "ieee" the second group sums max finite - 2^130 = -(3 * 2^128 + 2^104), which rtz
  // saturates to -max finite.
  const std::vector<uint64_t> two = {kB2p100, kB2p100}, pm = {kB2p30, kBm2p30};
  EXPECT_EQ(EvaluateDot(inf, two, pm, 0)->bits, kF32Inf);
  EXPECT_EQ(EvaluateDot(FusedOverflow("rtz", "ieee"), two, pm, 0)->bits, kF32Max | 0x80000000u);
  // No finite bound holds past the range: an overflowed group's bound is Inf in both modes.
  for (const char* o : {"ieee", "inf"}) {
    const absl::StatusOr<EvalResult> r = EvaluateDot(FusedOverflow("rtz", o), big, pos, 0);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->bound, std::numeric_limits<double>::infinity()) << o;
    // In range, the bound is finite.
    EXPECT_LT(EvaluateDot(FusedOverflow("rtz", o), pos, pos, 0)->bound,
              std::numeric_limits<double>::infinity());
  }
}

// [epilogue] c = "after": the chain runs from +0 and c is added once after it (cuBLAS's
// D = alpha * acc + beta * C with alpha = beta = 1).
Model WithEpilogue(Model m, const char* rounding = "rne") {
  m.epilogue.c = EpilogueC::kAfter;
  OpEnv env;
  EXPECT_TRUE(ParseRounding(rounding, env));
  m.epilogue.env = env;
  return m;
}

TEST(EvaluateTest, EpilogueAddsCOnceAfterTheChain) {
  // Fused (G = 4, F = 23, rtz), c = 2^24, four products 1: in the chain c aligns the group and
  // the products (1 each, quantum 2) truncate to 0: 2^24 (FusedAccumulatorAlignsToo). After:
  // the group from +0 sums to 4, then 2^24 + 4 is exact in float32.
  const std::vector<uint64_t> ones = {kH1, kH1, kH1, kH1};
  const Model fused = Fused(4, 23, "rtz");
  EXPECT_EQ(EvaluateDot(fused, ones, ones, F32(0x1p24f))->bits, F32(0x1p24f));
  EXPECT_EQ(EvaluateDot(WithEpilogue(fused), ones, ones, F32(0x1p24f))->bits, F32(0x1p24f + 4));
  // IEEE chain (fma, rne), c = 1, products 2^-24 and 2^-24: in the chain each 1 + 2^-24 is a tie
  // that rounds to 1: result 1. After: 2^-24 + 2^-24 = 2^-23, then 1 + 2^-23 exactly.
  const Model fma = MakeModel(
      "[inputs]\na = \"float16\"\n[adder]\nkind = \"fma\"\n[accumulator]\nformat = "
      "\"float32\"\n[chain]\nkind = \"sequential\"\n");
  const std::vector<uint64_t> tiny = {kH2m12, kH2m12};
  EXPECT_EQ(EvaluateDot(fma, tiny, tiny, F32(1.0f))->bits, F32(1.0f));
  EXPECT_EQ(EvaluateDot(WithEpilogue(fma), tiny, tiny, F32(1.0f))->bits, F32(1.0f + 0x1p-23f));
  // epilogue.rounding: three products 2^-24 + 2^-25 + ... : 2^-24 * 3 = 1.5 ulp(1) / 2 after c = 1
  // is 1 + 3 * 2^-24 = 1 + 1.5 * 2^-23: rne gives 1 + 2^-22, rtz 1 + 2^-23.
  const std::vector<uint64_t> three = {kH2m12, kH2m12, kH2m12};
  EXPECT_EQ(EvaluateDot(WithEpilogue(fma), three, three, F32(1.0f))->bits, F32(1.0f + 0x1p-22f));
  EXPECT_EQ(EvaluateDot(WithEpilogue(fma, "rtz"), three, three, F32(1.0f))->bits,
            F32(1.0f + 0x1p-23f));
  // Full float32 precision in the epilogue even where the accumulator is reduced (13 bits):
  // c = 1, chain 2^-20 (exact at 13 bits): 1 + 2^-20 is kept.
  Model reduced = Fused(4, 23, "rtz");
  reduced.accumulator.fraction_bits = 13;
  const std::vector<uint64_t> one_tiny = {kH2m11, 0, 0, 0}, one_tiny_b = {0x1800 /*2^-9*/, 0, 0, 0};
  static_assert(0x1800 == ((15 - 9) << 10));  // float16: biased exponent 15 - 9.
  EXPECT_EQ(EvaluateDot(reduced, one_tiny, one_tiny_b, F32(1.0f))->bits, F32(1.0f));
  EXPECT_EQ(EvaluateDot(WithEpilogue(reduced), one_tiny, one_tiny_b, F32(1.0f))->bits,
            F32(1.0f + 0x1p-20f));
}

TEST(EvaluateTest, EpilogueRunsGenericAndAgreesAcrossDotMatmulAndBound) {
  const Model m = WithEpilogue(Fused(16, 25, "rtz", "truncate", "bfloat16"));
  EXPECT_FALSE(FastPathEligible(m));
  EXPECT_STREQ(FastPathIneligibleReason(m), "epilogue.c");
  Rng rng(DeriveSeed(
      TestSeed(91, "EvaluateTest.EpilogueRunsGenericAndAgreesAcrossDotMatmulAndBound"), {2}));
  const int mm = 3, nn = 5, kk = 40;
  auto bf16 = [](float x) { return uint64_t{std::bit_cast<uint32_t>(x) >> 16}; };
  std::vector<uint64_t> a(mm * kk), b(kk * nn), c(mm * nn), d(mm * nn);
  for (auto& x : a) x = bf16(rng.F(3));
  for (auto& x : b) x = bf16(rng.F(3));
  for (auto& x : c) x = F32(rng.F(6));
  std::vector<double> bounds(mm * nn);
  ASSERT_TRUE(EvaluateMatmul(m, mm, nn, kk, a, Layout::kRowMajor, b, Layout::kRowMajor, c, d,
                             bounds).ok());
  for (int i = 0; i < mm; ++i) {
    for (int j = 0; j < nn; ++j) {
      std::vector<uint64_t> row(kk), col(kk);
      for (int p = 0; p < kk; ++p) {
        row[p] = a[i * kk + p];
        col[p] = b[p * nn + j];
      }
      const EvalResult r = *EvaluateDot(m, row, col, c[i * nn + j]);
      EXPECT_EQ(r.bits, d[i * nn + j]);
      EXPECT_EQ(r.bound, bounds[i * nn + j]);
      // The epilogue is one more rne add after the chain: d = round(chain_from_0 + c).
      Model chain_only = m;
      chain_only.epilogue = {};
      const EvalResult acc = *EvaluateDot(chain_only, row, col, 0);
      const float want = std::bit_cast<float>(static_cast<uint32_t>(acc.bits)) +
                         std::bit_cast<float>(static_cast<uint32_t>(c[i * nn + j]));
      EXPECT_EQ(r.bits, F32(want));
    }
  }
}

// inputs.convert_rounding of float32 -> tfloat32 (10 fraction bits, ulp(1) = 2^-10): rtz as the
// tensor core reads float32 registers, rne, and rna as CUTLASS's round_half_ulp_truncate
// (bits + 0x1000, then truncated) converts before the mma. The dot of x with 1 shows the
// converted x (exact in a group of F = 25).
TEST(EvaluateTest, Tf32ConversionRounding) {
  auto model = [](const char* rounding) {
    return MakeModel(std::string("[inputs]\na = \"float32\"\nconvert_to = \"tfloat32\"\n"
                                 "convert_rounding = \"") +
                     rounding +
                     "\"\n[adder]\nkind = \"fused\"\ngroup = 8\nfraction_bits = 25\n"
                     "[accumulator]\nformat = \"float32\"\n[chain]\nkind = \"sequential\"\n");
  };
  const std::vector<uint64_t> one = {F32(1.0f)};
  struct {
    float x, rtz, rne, rna;
  } const rows[] = {
      // A tie: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10 (1 is even).
      {1.0f + 0x1p-11f, 1.0f, 1.0f, 1.0f + 0x1p-10f},
      // A tie between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
      {1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-10f, 1.0f + 0x1p-9f, 1.0f + 0x1p-9f},
      // Below half an ulp: every nearest rounding goes down; above: up (rtz always down).
      {1.0f + 0x1p-12f, 1.0f, 1.0f, 1.0f},
      {1.0f + 0x1p-11f + 0x1p-23f, 1.0f, 1.0f + 0x1p-10f, 1.0f + 0x1p-10f},
      // Negative: ties away from zero go to the larger magnitude.
      {-(1.0f + 0x1p-11f), -1.0f, -1.0f, -(1.0f + 0x1p-10f)},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(testing::Message() << std::hexfloat << r.x);
    const std::vector<uint64_t> x = {F32(r.x)};
    EXPECT_EQ(EvaluateDot(model("rtz"), x, one, 0)->bits, F32(r.rtz));
    EXPECT_EQ(EvaluateDot(model("rne"), x, one, 0)->bits, F32(r.rne));
    EXPECT_EQ(EvaluateDot(model("rna"), x, one, 0)->bits, F32(r.rna));
  }
}

TEST(EvaluateTest, ReducedAccumulatorPrecision) {
  // float32 accumulator with 13 fraction bits (Hopper FP8): 1 + 2^-13 + 2^-14 -> RZ 1 + 2^-13.
  const Model m = MakeModel(
      "[inputs]\na = \"float32\"\n[adder]\nkind = \"fused\"\ngroup = 4\nfraction_bits = 25\n"
      "[accumulator]\nformat = \"float32\"\nfraction_bits = 13\n[chain]\nkind = "
      "\"sequential\"\n");
  const std::vector<uint64_t> a = {F32(1.0f), F32(0x1p-13f), F32(0x1p-14f)};
  const std::vector<uint64_t> b = {F32(1.0f), F32(1.0f), F32(1.0f)};
  EXPECT_EQ(EvaluateDot(m, a, b, 0)->bits, F32(1.0f + 0x1p-13f));
}

// ---- (c) Every result lies within its analytical bound of the exact value. ----

void CheckBounds(const Model& m, const FormatSpec& in, int cases, int max_k, uint64_t seed,
                 int range = 12) {
  Rng rng{seed};
  const FormatSpec& cf = m.FinalAccumulatorFormat();
  int checked = 0;
  for (int t = 0; t < cases; ++t) {
    const int k = 1 + static_cast<int>(rng.Next() % max_k);
    std::vector<uint64_t> a(k), b(k);
    const bool cancel = t % 2 == 1;
    for (int i = 0; i < k; ++i) {
      // Random inputs (converted by rounding float32 to the input format) with a wide range;
      // odd cases take b_i = -b_{i-1} pairs for cancellation.
      OpEnv env;
      a[i] = Convert(Float32(), in, F32(rng.F(range)), env).bits;
      b[i] = Convert(Float32(), in, F32(rng.F(range)), env).bits;
      if (cancel && i % 2 == 1) {
        a[i] = a[i - 1];
        b[i] = b[i - 1] ^ in.d.sign_bit << in.pad_bits;
        if (rng.Next() % 2) b[i] = Convert(Float32(), in, F32(rng.F(range)), env).bits;
      }
    }
    const uint64_t c = Convert(Float32(), cf, F32(rng.F(range)), OpEnv{}).bits;
    absl::StatusOr<EvalResult> r = EvaluateDot(m, a, b, c);
    ASSERT_TRUE(r.ok());
    ExactAccumulator exact = ExactDot(*m.inputs.a, a, *m.inputs.b, b, FormatValue{&cf, c});
    // |result - exact| as an exact value rounded up to float64.
    ExactAccumulator diff = exact;
    const uint64_t neg = r->bits ^ (m.output.format->d.sign_bit << m.output.format->pad_bits);
    diff.Add(*m.output.format, neg);
    OpEnv up;
    up.rounding = Rounding::kUpward;
    const OpResult d = diff.Round(Float64(), up);
    const double err = std::fabs(std::bit_cast<double>(d.bits));
    // Upward rounding of a negative difference is toward zero: add one float64 ulp.
    const double err_up = std::nextafter(err, INFINITY);
    SCOPED_TRACE(testing::Message() << "case " << t << " k " << k << " seed " << seed);
    EXPECT_LE(err_up, r->bound * (1 + 0x1p-40) + std::numeric_limits<double>::denorm_min())
        << "err " << err << " bound " << r->bound;
    ++checked;
  }
  EXPECT_EQ(checked, cases);
}

TEST(EvaluateTest, WithinBoundIeeeModels) {
  const uint64_t seed = TestSeed(11, "EvaluateTest.WithinBoundIeeeModels");
  CheckBounds(MakeModel(std::string(kIeeeBase) + "[chain]\nkind = \"sequential\"\n"), Float32(),
              2000, 64, seed);
  CheckBounds(MakeModel(std::string(kIeeeBase) +
                        "[chain]\nkind = \"pairwise\"\nleaf = 8\n"),
              Float32(), 2000, 300, seed + 1);
  CheckBounds(MakeModel(std::string(kIeeeBase) +
                        "[chain]\nkind = \"split_k\"\nslices = 4\norder = \"random\"\n"),
              Float32(), 2000, 64, seed + 2);
  CheckBounds(MakeModel("[inputs]\na = \"float32\"\nconvert_to = \"tfloat32\"\n"
                        "convert_rounding = \"rtz\"\n[adder]\nkind = \"fma\"\nrounding = \"rtz\"\n"
                        "[accumulator]\nformat = \"float32\"\n[chain]\nkind = \"strided\"\n"
                        "ways = 3\n[output]\nformat = \"bfloat16\"\n"),
              Float32(), 2000, 64, seed + 3);
}

TEST(EvaluateTest, WithinBoundFusedModels) {
  const uint64_t seed = TestSeed(21, "EvaluateTest.WithinBoundFusedModels");
  CheckBounds(MakeModel("[inputs]\na = \"bfloat16\"\n[adder]\nkind = \"fused\"\ngroup = 16\n"
                        "fraction_bits = 25\n[accumulator]\nformat = \"float32\"\n"
                        "[chain]\nkind = \"sequential\"\n"),
              BFloat16(), 3000, 200, seed);
  CheckBounds(MakeModel("[inputs]\na = \"float8_e4m3fn\"\n[adder]\nkind = \"fused\"\ngroup = 32\n"
                        "fraction_bits = 13\n[accumulator]\nformat = \"float32\"\n"
                        "fraction_bits = 13\n[chain]\nkind = \"promote\"\nevery = 128\n"),
              Float8E4M3FN(), 2000, 400, seed + 1, 7);
  CheckBounds(MakeModel("[inputs]\na = \"float16\"\n[adder]\nkind = \"fused\"\ngroup = 4\n"
                        "fraction_bits = 23\nalignment = \"round_down\"\n"
                        "normalization_rounding = \"rne\"\n[accumulator]\nformat = \"float32\"\n"
                        "[chain]\nkind = \"blocked\"\nblock = 8\n[output]\nformat = \"float16\"\n"),
              Float16(), 2000, 100, seed + 2, 3);
}

TEST(EvaluateTest, WithinBoundEpilogue) {
  // The epilogue's add is one more rounding node: c + (chain from +0), fused and IEEE chains,
  // with cancellation (CheckBounds' odd cases) and the epilogue rounding rne or rtz.
  const Model h100 = Fused(16, 25, "rtz", "truncate", "bfloat16");  // nvidia-h100-bf16's G, F.
  const uint64_t seed = TestSeed(31, "EvaluateTest.WithinBoundEpilogue");
  CheckBounds(WithEpilogue(h100), BFloat16(), 1000, 100, seed);
  CheckBounds(WithEpilogue(h100, "rtz"), BFloat16(), 1000, 100, seed + 1);
  CheckBounds(WithEpilogue(MakeModel(std::string(kIeeeBase) + "[chain]\nkind = \"pairwise\"\n")),
              Float32(), 1000, 100, seed + 2);
}

// chain.permutation: the products padded with +0 to a multiple of its length and reordered per
// block, then the chain as without it.
TEST(EvaluateTest, PermutationReordersEachPaddedBlock) {
  const Model fma = MakeModel(
      "[inputs]\na = \"float16\"\n[adder]\nkind = \"fma\"\n[accumulator]\nformat = "
      "\"float32\"\n[chain]\nkind = \"sequential\"\n");
  Model perm = fma;
  perm.chain.permutation = {1, 2, 0};
  // Products 1, 2^-24, 2^-24 (c = 0). In order: 1 + 2^-24 is a tie that rounds to 1, twice: 1.
  // Permuted (2^-24, 2^-24, 1): 2^-23 + 1 exactly.
  const std::vector<uint64_t> h = {kH1, kH2m12, kH2m12};
  EXPECT_EQ(EvaluateDot(fma, h, h, 0)->bits, F32(1.0f));
  EXPECT_EQ(EvaluateDot(perm, h, h, 0)->bits, F32(1.0f + 0x1p-23f));
  EXPECT_STREQ(FastPathIneligibleReason(perm), "chain.permutation");
  // Random inputs, K not a multiple of the length: the same as the model without permutation on
  // the inputs padded with +0 and reordered by hand; fused and IEEE; dot, matmul and bound.
  Model fused = Fused(16, 25, "rtz", "truncate", "bfloat16");
  fused.chain.kind = ChainKind::kBlocked;
  fused.chain.block = 32;
  const std::vector<int> interleave = {0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29,
                                       2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31};
  const Model ieee = MakeModel(std::string(kIeeeBase) + "[chain]\nkind = \"sequential\"\n");
  Rng rng(DeriveSeed(TestSeed(92, "EvaluateTest.PermutationReordersEachPaddedBlock"), {1}));
  for (const Model& base : {fused, ieee}) {
    const bool bf16 = base.inputs.a == &BFloat16();
    Model m = base;
    m.chain.permutation = bf16 ? interleave : std::vector<int>{2, 0, 1};
    const size_t len = m.chain.permutation.size();
    for (int k : {1, 5, 31, 32, 33, 70, 128}) {
      SCOPED_TRACE(testing::Message() << (bf16 ? "fused" : "ieee") << " k " << k);
      std::vector<uint64_t> a(k), b(k);
      for (int i = 0; i < k; ++i) {
        a[i] = bf16 ? F32(rng.F(8)) >> 16 : F32(rng.F(8));
        b[i] = bf16 ? F32(rng.F(8)) >> 16 : F32(rng.F(8));
      }
      const uint64_t c = F32(rng.F(8));
      const size_t padded = (size_t(k) + len - 1) / len * len;
      std::vector<uint64_t> pa(padded), pb(padded);
      for (size_t blk = 0; blk < padded; blk += len) {
        for (size_t i = 0; i < len; ++i) {
          const size_t src = blk + size_t(m.chain.permutation[i]);
          pa[blk + i] = src < size_t(k) ? a[src] : 0;
          pb[blk + i] = src < size_t(k) ? b[src] : 0;
        }
      }
      const EvalResult got = *EvaluateDot(m, a, b, c);
      const EvalResult want = *EvaluateDot(base, pa, pb, c);
      EXPECT_EQ(got.bits, want.bits);
      EXPECT_EQ(got.bound, want.bound);
      std::vector<uint64_t> d(1);
      ASSERT_TRUE(EvaluateMatmul(m, 1, 1, k, a, Layout::kRowMajor, b, Layout::kRowMajor,
                                 std::vector<uint64_t>{c}, d).ok());
      EXPECT_EQ(d[0], got.bits);
    }
  }
}

TEST(EvaluateTest, WithinBoundPermutation) {
  Model m = Fused(16, 25, "rtz", "truncate", "bfloat16");
  m.chain.kind = ChainKind::kBlocked;
  m.chain.block = 32;
  m.chain.permutation = {0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29,
                         2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31};
  CheckBounds(m, BFloat16(), 1000, 100, TestSeed(34, "EvaluateTest.WithinBoundPermutation"));
}

TEST(EvaluateTest, MatmulLayoutsAgreeWithDot) {
  const Model m = MakeModel(std::string(kIeeeBase) + "[chain]\nkind = \"sequential\"\n");
  Rng rng{TestSeed(5, "EvaluateTest.MatmulLayoutsAgreeWithDot")};
  const int M = 3, N = 4, K = 5;
  std::vector<uint64_t> a(M * K), b(K * N), at(M * K), bt(K * N), d1(M * N), d2(M * N);
  for (int i = 0; i < M; ++i)
    for (int p = 0; p < K; ++p) at[p * M + i] = a[i * K + p] = F32(rng.F(4));
  for (int p = 0; p < K; ++p)
    for (int j = 0; j < N; ++j) bt[j * K + p] = b[p * N + j] = F32(rng.F(4));
  ASSERT_TRUE(EvaluateMatmul(m, M, N, K, a, Layout::kRowMajor, b, Layout::kRowMajor, {}, d1).ok());
  ASSERT_TRUE(
      EvaluateMatmul(m, M, N, K, at, Layout::kColumnMajor, bt, Layout::kColumnMajor, {}, d2).ok());
  EXPECT_EQ(d1, d2);
  std::vector<uint64_t> row(a.begin() + K, a.begin() + 2 * K), col(K);
  for (int p = 0; p < K; ++p) col[p] = b[p * N + 2];
  EXPECT_EQ(d1[1 * N + 2], EvaluateDot(m, row, col, 0)->bits);
  EXPECT_FALSE(EvaluateMatmul(m, M, N, K, a, Layout::kRowMajor, b, Layout::kRowMajor, {},
                              std::span(d1).first(3)).ok());
}


// ---- Kahan, FTZ, SIMD lanes, PyTorch's cascade, chunked pairwise. ----

// Random float32 bits from a pinned stream: random sign and significand, exponent 2^[-e, e].
uint32_t PinnedF32(PinnedRng& rng, int e) {
  const uint64_t r = rng.Next();
  const uint32_t exp = static_cast<uint32_t>(127 - e + static_cast<int>(rng.Below(2 * e + 1)));
  return static_cast<uint32_t>(r >> 63) << 31 | exp << 23 | static_cast<uint32_t>(r & 0x7FFFFF);
}

// Kahan (1965) in host float32 (RNE, -ffp-contract=off, no reassociation).
float HostKahan(float c, const std::vector<float>& p) {
  float s = c, comp = 0.0f;
  for (float x : p) {
    const float y = x - comp;
    const float t = s + y;
    comp = (t - s) - y;
    s = t;
  }
  return s;
}

// kIeeeBase with a Kahan adder, and the sequential chain Kahan needs.
std::string KahanModelText() {
  std::string text = kIeeeBase;
  const std::string ieee = "kind = \"ieee\"";
  text.replace(text.find(ieee), ieee.size(), "kind = \"kahan\"");
  return text + "[chain]\nkind = \"sequential\"\n";
}

TEST(EvaluateTest, KahanMatchesHostFloatLoop) {
  const Model m = MakeModel(KahanModelText());
  const uint64_t seed = TestSeed(4001, "EvaluateTest.KahanMatchesHostFloatLoop");
  for (int t = 0; t < 400; ++t) {
    PinnedRng rng(DeriveSeed(seed, {static_cast<uint64_t>(t)}));
    const int n = 1 + static_cast<int>(rng.Below(600));
    const int spread = t % 2 == 0 ? 3 : 30;  // Narrow (ties, carries) or wide (swamping).
    std::vector<uint64_t> xb(n), ab(n), bb(n);
    std::vector<float> x(n), prod(n);
    for (int i = 0; i < n; ++i) {
      xb[i] = PinnedF32(rng, spread);
      ab[i] = PinnedF32(rng, spread / 2 + 1);
      bb[i] = PinnedF32(rng, spread / 2 + 1);
      x[i] = std::bit_cast<float>(static_cast<uint32_t>(xb[i]));
      prod[i] = std::bit_cast<float>(static_cast<uint32_t>(ab[i])) *
                std::bit_cast<float>(static_cast<uint32_t>(bb[i]));
    }
    const uint32_t cb = PinnedF32(rng, spread);
    const float c = std::bit_cast<float>(cb);
    SCOPED_TRACE(testing::Message() << "case " << t << " n " << n);
    EXPECT_EQ(EvaluateSum(m, xb, 0)->bits, F32(HostKahan(0.0f, x)));
    EXPECT_EQ(EvaluateSum(m, xb, cb)->bits, F32(HostKahan(c, x)));
    EXPECT_EQ(EvaluateDot(m, ab, bb, cb)->bits, F32(HostKahan(c, prod)));
  }
}

TEST(EvaluateTest, KahanIsMoreAccurateThanPlainSum) {
  // 1 + 10000 * 2^-25: a plain float32 loop loses every small term (1 + 2^-25 rounds to 1);
  // Kahan carries them: the exact sum 1 + 10000 * 2^-25 = 1.000298..., so the result is within
  // one ulp of it.
  const Model kahan = MakeModel(KahanModelText());
  const Model plain = MakeModel(std::string(kIeeeBase) + "[chain]\nkind = \"sequential\"\n");
  std::vector<uint64_t> x(10000, F32(0x1p-25f));
  const float exact = 1.0f + 10000 * 0x1p-25f;  // 10000 * 2^-25 is exact; one rounding.
  EXPECT_EQ(EvaluateSum(plain, x, F32(1.0f))->bits, F32(1.0f));
  const uint32_t k = static_cast<uint32_t>(EvaluateSum(kahan, x, F32(1.0f))->bits);
  EXPECT_LE(std::abs(static_cast<int64_t>(k) - static_cast<int64_t>(F32(exact))), 1);
}

TEST(EvaluateTest, WithinBoundNewChains) {
  // Kahan: the a posteriori bound of evaluate.cc (Kahan()) against the exact oracle.
  const uint64_t seed = TestSeed(31, "EvaluateTest.WithinBoundNewChains");
  CheckBounds(MakeModel(KahanModelText()), Float32(), 3000, 300, seed);
  CheckBounds(MakeModel(KahanModelText() + "[output]\nformat = \"bfloat16\"\n"), Float32(),
              1000, 100, seed + 1);
  const Model kahan = MakeModel(KahanModelText());
  // The Kahan bound is far below the plain recursive-summation one (n u sum |x|) for long
  // positive sums: below 3u sum |x| (Higham §4.3: 2u + O(n u^2)).
  std::vector<uint64_t> x(5000);
  PinnedRng rng(DeriveSeed(TestSeed(4002, "EvaluateTest.WithinBoundNewChains long sum"), {}));
  double sum_abs = 0;
  for (auto& v : x) {
    v = PinnedF32(rng, 5) & 0x7FFFFFFF;
    sum_abs += std::bit_cast<float>(static_cast<uint32_t>(v));
  }
  const double bound = EvaluateSum(kahan, x, 0)->bound;
  EXPECT_GT(bound, 0);
  EXPECT_LT(bound, 3 * 0x1p-24 * sum_abs);
  // SIMD lanes and the cascade: their trees through the generic node bound.
  CheckBounds(MakeModel("[inputs]\na = \"bfloat16\"\ndaz = true\n[adder]\nkind = \"fma\"\n"
                        "ftz = true\n[accumulator]\nformat = \"float32\"\n[chain]\nkind = "
                        "\"simd\"\nlanes = 16\nunit = 2\nunit_order = \"reverse\"\n"),
              BFloat16(), 2000, 200, seed + 2);
  CheckBounds(MakeModel(std::string(kIeeeBase) + "[chain]\nkind = \"cascade\"\nlanes = 8\n"),
              Float32(), 1000, 3000, seed + 3);
  CheckBounds(MakeModel(std::string(kIeeeBase) +
                        "[chain]\nkind = \"pairwise\"\nleaf = 4\nchunk = 16\n"),
              Float32(), 1000, 100, seed + 4);
}

TEST(EvaluateTest, FtzFlushesStepResultsAndStaysWithinBound) {
  const Model ftz = MakeModel(
      "[inputs]\na = \"float32\"\n[adder]\nkind = \"fma\"\nftz = true\n[accumulator]\nformat = "
      "\"float32\"\n[chain]\nkind = \"sequential\"\n");
  const Model keep = MakeModel(
      "[inputs]\na = \"float32\"\n[adder]\nkind = \"fma\"\n[accumulator]\nformat = "
      "\"float32\"\n[chain]\nkind = \"sequential\"\n");
  // 2^-70 * 2^-60 = 2^-130 is subnormal in float32: flushed to +0 (sign kept: -0 for a negative).
  const std::vector<uint64_t> a = {F32(0x1p-70f)}, b = {F32(0x1p-60f)}, nb = {F32(-0x1p-60f)};
  EXPECT_EQ(EvaluateDot(ftz, a, b, 0)->bits, 0u);
  EXPECT_EQ(EvaluateDot(ftz, a, nb, 0)->bits, 0x80000000u);
  EXPECT_EQ(EvaluateDot(keep, a, b, 0)->bits, F32(0x1p-130f));
  // The flush error (< 2^-126 per step) is inside the bound.
  const absl::StatusOr<EvalResult> r = EvaluateDot(ftz, a, b, 0);
  EXPECT_GE(r->bound, 0x1p-130);
  // A subnormal sum of normal terms is flushed too: 2^-125 - 1.5 * 2^-126 = 2^-127.
  EXPECT_EQ(EvaluateDot(ftz, std::vector<uint64_t>{F32(0x1p-125f), F32(-1.5f * 0x1p-126f)},
                        std::vector<uint64_t>{F32(1.0f), F32(1.0f)}, 0)->bits,
            0u);
}

TEST(EvaluateTest, AdderDazReadsSubnormalAccumulatorAsZero) {
  const Model daz = MakeModel(
      "[inputs]\na = \"float32\"\n[adder]\nkind = \"fma\"\ndaz = true\n[accumulator]\n"
      "format = \"float32\"\n[chain]\nkind = \"sequential\"\n");
  // c = 2^-127 (subnormal) + 1 * 2^-126: with DAZ on the accumulator operand 2^-126, else
  // 1.5 * 2^-126.
  const std::vector<uint64_t> a = {F32(1.0f)}, b = {F32(0x1p-126f)};
  const absl::StatusOr<EvalResult> r = EvaluateDot(daz, a, b, F32(0x1p-127f));
  EXPECT_EQ(r->bits, F32(0x1p-126f));
  EXPECT_GE(r->bound, 0x1p-127);  // The dropped 2^-127 is inside the bound.
  EXPECT_EQ(EvaluateDot(daz, a, b, F32(-0x1p-127f))->bits, F32(0x1p-126f));
}

TEST(EvaluateTest, SimdLanesMatchHostLoop) {
  // 4 lanes, units of 3 products added last-first, reduced by halving / sequentially / as a tree;
  // the tail is zero-padded. Host re-implementation in float32 (plain adds: product rounded).
  const uint64_t seed = TestSeed(4003, "EvaluateTest.SimdLanesMatchHostLoop");
  for (const char* reduce : {"halving", "sequential", "pairwise"}) {
    const Model m = MakeModel(std::string(kIeeeBase) +
                              "[chain]\nkind = \"simd\"\nlanes = 4\nunit = 3\nunit_order = "
                              "\"reverse\"\nreduce = \"" + reduce + "\"\n");
    for (int t = 0; t < 200; ++t) {
      PinnedRng rng(DeriveSeed(seed, {static_cast<uint64_t>(t)}));
      const int n = 1 + static_cast<int>(rng.Below(100));
      std::vector<uint64_t> ab(n), bb(n);
      std::vector<float> p(n);
      for (int i = 0; i < n; ++i) {
        ab[i] = PinnedF32(rng, 8);
        bb[i] = PinnedF32(rng, 8);
        p[i] = std::bit_cast<float>(static_cast<uint32_t>(ab[i])) *
               std::bit_cast<float>(static_cast<uint32_t>(bb[i]));
      }
      const int per_step = 12, steps = (n + per_step - 1) / per_step;
      p.resize(static_cast<size_t>(steps * per_step), 0.0f);
      const float c = std::bit_cast<float>(PinnedF32(rng, 8));
      float lane[4] = {c, 0, 0, 0};
      for (int s = 0; s < steps; ++s) {
        for (int l = 0; l < 4; ++l) {
          for (int j = 2; j >= 0; --j) lane[l] = lane[l] + p[s * per_step + l * 3 + j];
        }
      }
      float want;
      if (std::string(reduce) == "halving") {
        want = (lane[0] + lane[2]) + (lane[1] + lane[3]);
      } else if (std::string(reduce) == "sequential") {
        want = ((lane[0] + lane[1]) + lane[2]) + lane[3];
      } else {
        want = (lane[0] + lane[1]) + (lane[2] + lane[3]);
      }
      SCOPED_TRACE(testing::Message() << reduce << " case " << t << " n " << n);
      EXPECT_EQ(EvaluateDot(m, ab, bb, F32(c))->bits, F32(want));
    }
  }
}

// PyTorch's CPU float32 sum, re-implemented from the description in models/SOURCES.md (§4 and
// gap 6) and MODEL_FORMAT.md: W-lane vectors; 4 interleaved rows of vectors; each row summed
// with 4 levels of accumulators, level 0 taking 2^p vectors (p = max(4, ceil(log2 S) / 4), S =
// vectors per row) before it is added into level 1 (and so on, each level flushing up when its
// count wraps); remainder vectors into row 0, rows 1..3 added to row 0; the scalar tail summed
// from 0, then the W lanes added to it in order; the result is 0 + that. Fewer than W elements:
// the same with W = 1 and no final lane loop.
template <int W>
std::array<float, W> TorchRow(const float* x, int64_t vectors, int w) {
  // Vector v, lane l is x[v * w + l]; w == W except in the scalar case (W = 1).
  using V = std::array<float, W>;
  auto load = [&](int64_t v) {
    V r;
    for (int l = 0; l < W; ++l) r[l] = x[v * w + l];
    return r;
  };
  auto add = [](V& a, const V& b) {
    for (int l = 0; l < W; ++l) a[l] = a[l] + b[l];
  };
  const int64_t rows = vectors / 4;
  int64_t lg = 1;
  if (rows > 2) {
    lg = 0;
    while ((int64_t{1} << lg) < rows) ++lg;  // ceil(log2(rows)).
  }
  const int64_t p = std::max<int64_t>(4, lg / 4);
  V level[4][4] = {};
  int64_t count[4] = {0, 0, 0, 0};  // Row-groups absorbed at each level since its last flush.
  int64_t i = 0;
  for (; i + (int64_t{1} << p) <= rows;) {
    for (int64_t j = 0; j < (int64_t{1} << p); ++j, ++i) {
      for (int r = 0; r < 4; ++r) add(level[0][r], load(i * 4 + r));
    }
    // Carry level j-1 into level j while the counter of level j wraps (i multiple of 2^(jp)).
    for (int j = 1; j < 4; ++j) {
      for (int r = 0; r < 4; ++r) {
        add(level[j][r], level[j - 1][r]);
        level[j - 1][r] = V{};
      }
      ++count[j];
      if (count[j] % (int64_t{1} << p) != 0) break;
    }
  }
  for (; i < rows; ++i) {
    for (int r = 0; r < 4; ++r) add(level[0][r], load(i * 4 + r));
  }
  for (int j = 1; j < 4; ++j) {
    for (int r = 0; r < 4; ++r) add(level[0][r], level[j][r]);
  }
  V out = level[0][0];
  for (int64_t v = rows * 4; v < vectors; ++v) add(out, load(v));
  for (int r = 1; r < 4; ++r) add(out, level[0][r]);
  return out;
}

template <int W>
float TorchSum(const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  if (n < W) return 0.0f + TorchRow<1>(x.data(), n, 1)[0];
  const int64_t vectors = n / W;
  const std::array<float, W> lanes = TorchRow<W>(x.data(), vectors, W);
  float acc = 0;
  for (int64_t i = vectors * W; i < n; ++i) acc = acc + x[i];
  for (int l = 0; l < W; ++l) acc = acc + lanes[l];
  return 0.0f + acc;
}

template <int W>
void CheckCascade(uint64_t seed) {
  const Model m = MakeModel(std::string(kIeeeBase) + "[chain]\nkind = \"cascade\"\nlanes = " +
                            std::to_string(W) + "\n");
  std::vector<int> lengths;
  for (int n = 0; n <= 200; ++n) lengths.push_back(n);
  for (int n : {255, 256, 257, 1023, 1024, 1025, 4099, 8192, 16385, 65536, 70001, 140000}) {
    lengths.push_back(n);
  }
  for (size_t t = 0; t < lengths.size(); ++t) {
    PinnedRng rng(DeriveSeed(seed, {t}));
    const int n = lengths[t];
    std::vector<uint64_t> xb(n);
    std::vector<float> x(n);
    for (int i = 0; i < n; ++i) {
      xb[i] = PinnedF32(rng, t % 2 ? 20 : 2);
      x[i] = std::bit_cast<float>(static_cast<uint32_t>(xb[i]));
    }
    SCOPED_TRACE(testing::Message() << "W " << W << " n " << n);
    EvalOptions opt;
    opt.want_bound = false;
    EXPECT_EQ(EvaluateSum(m, xb, 0, opt)->bits, F32(TorchSum<W>(x)));
  }
}

TEST(EvaluateTest, CascadeMatchesIndependentTorchSum) {
  const uint64_t seed = TestSeed(4004, "EvaluateTest.CascadeMatchesIndependentTorchSum");
  CheckCascade<8>(seed);
  CheckCascade<16>(seed + 1);
}

TEST(EvaluateTest, ChunkedPairwiseMatchesReference) {
  // NumPy above 8192 elements: +0, then the pairwise sum of each chunk added in order; here
  // chunks of 300 (not a multiple of the 8-way unroll) to exercise ragged chunks.
  const Model m = MakeModel(
      "[inputs]\na = \"float32\"\n[adder]\nkind = \"ieee\"\n[accumulator]\nformat = "
      "\"float32\"\n[chain]\nkind = \"pairwise\"\nleaf = 128\nunroll = 8\nsplit_multiple = 8\n"
      "chunk = 300\n");
  const uint64_t seed = TestSeed(4006, "EvaluateTest.ChunkedPairwiseMatchesReference");
  for (int t = 0; t < 100; ++t) {
    PinnedRng rng(DeriveSeed(seed, {static_cast<uint64_t>(t)}));
    const int n = static_cast<int>(rng.Below(2000));
    std::vector<uint64_t> xb(n);
    std::vector<float> x(n);
    for (int i = 0; i < n; ++i) x[i] = std::bit_cast<float>(static_cast<uint32_t>(
                                    xb[i] = PinnedF32(rng, 12)));
    float want = 0.0f;
    int i = 0;
    do {
      const int len = std::min(300, n - i);
      want = want + NumpyPairwise(x.data() + i, len);
      i += 300;
    } while (i < n);
    SCOPED_TRACE(testing::Message() << "case " << t << " n " << n);
    EXPECT_EQ(EvaluateSum(m, xb, 0)->bits, F32(want));
  }
}


// ---- chain.kind = "tree" (MODEL_FORMAT.md): an explicit tree over blocks of m units. ----

// An exact-product fma model (bfloat16 inputs, float32 accumulator) with the given [chain] body.
Model ExactFmaModel(const std::string& chain) {
  return MakeModel("[inputs]\na = \"bfloat16\"\n[product]\npolicy = \"exact\"\n[adder]\n"
                   "kind = \"fma\"\n[accumulator]\nformat = \"float32\"\n[chain]\n" + chain);
}

// Random bfloat16 bits (the top half of a pinned float32; exponent 2^[-e, e]).
uint64_t PinnedBf16(PinnedRng& rng, int e) { return PinnedF32(rng, e) >> 16; }

// The operands of a k-term dot: a_i, then b_i, for each i from draw(rng, e), then c, a pinned
// float32 (exponent 2^[-e, e]).
struct DotOperands {
  std::vector<uint64_t> a, b;
  uint64_t c = 0;
};
template <typename Draw>
DotOperands DrawDot(PinnedRng& rng, int k, int e, Draw draw) {
  DotOperands d{std::vector<uint64_t>(static_cast<size_t>(k)),
                std::vector<uint64_t>(static_cast<size_t>(k))};
  for (size_t i = 0; i < d.a.size(); ++i) {
    d.a[i] = draw(rng, e);
    d.b[i] = draw(rng, e);
  }
  d.c = PinnedF32(rng, e);
  return d;
}

// Tree chains take the fast path (fast_eval.h: chain_walk.h's walk on host values), with the
// generic engine's bits and bound.
TEST(EvaluateTest, TreeTakesTheFastPathWithGenericResults) {
  const Model m = ExactFmaModel("kind = \"tree\"\nshape = \"((0 1) (2 3))\"\n");
  EXPECT_TRUE(FastPathEligible(m)) << FastPathIneligibleReason(m);
  PinnedRng rng(
      DeriveSeed(TestSeed(4101, "EvaluateTest.TreeTakesTheFastPathWithGenericResults"), {}));
  const auto [a, b, c] = DrawDot(rng, 37, 8, PinnedBf16);
  const EvalResult r = *EvaluateDot(m, a, b, c), g = *GenericEvaluateDot(m, a, b, c);
  EXPECT_EQ(r.bits, g.bits);
  EXPECT_EQ(r.bound, g.bound);
}

// "((0 1) (2 3))" is pairwise with leaf 1 on K = 4 (c + ((p0 + p1) + (p2 + p3)), each p_i one
// fma from +0), and the 8-leaf balanced tree is pairwise leaf 1 on K = 8. With chain.chunk = 4
// (c + P(chunk_0)) + P(chunk_1) + ... it is the tree over any K whose last block has 1 or 2
// units: the pruned tree of 2 units is (p0 + p1) = P(2), of 1 unit p0 = P(1). (A last block of 3
// differs: pruned (p0 + p1) + p2, but P(3) = p0 + (p1 + p2).)
TEST(EvaluateTest, TreeMatchesEquivalentPairwise) {
  const Model tree4 = ExactFmaModel("kind = \"tree\"\nshape = \"((0 1) (2 3))\"\n");
  const Model tree8 =
      ExactFmaModel("kind = \"tree\"\nshape = \"(((0 1) (2 3)) ((4 5) (6 7)))\"\n");
  const Model pw = ExactFmaModel("kind = \"pairwise\"\nleaf = 1\n");
  const Model pw_chunk = ExactFmaModel("kind = \"pairwise\"\nleaf = 1\nchunk = 4\n");
  const uint64_t seed = TestSeed(4102, "EvaluateTest.TreeMatchesEquivalentPairwise");
  for (uint64_t t = 0; t < 300; ++t) {
    PinnedRng rng(DeriveSeed(seed, {t}));
    // t >= 200: K = 4j + r with r in {0, 1, 2} (a last block of 1 or 2 units when r > 0).
    const int k = t < 100   ? 4
                  : t < 200 ? 8
                            : 1 + static_cast<int>(4 * rng.Below(10) + rng.Below(3));
    const auto [a, b, c] = DrawDot(rng, k, 10, PinnedBf16);
    SCOPED_TRACE(testing::Message() << "case " << t << " k " << k);
    if (k == 4) {
      EXPECT_EQ(EvaluateDot(tree4, a, b, c)->bits, EvaluateDot(pw, a, b, c)->bits);
    }
    if (k == 8) {
      EXPECT_EQ(EvaluateDot(tree8, a, b, c)->bits, EvaluateDot(pw, a, b, c)->bits);
    }
    if (k % 4 != 3) {
      EXPECT_EQ(EvaluateDot(tree4, a, b, c)->bits, EvaluateDot(pw_chunk, a, b, c)->bits);
    }
  }
}

// A flat list folds left to right, so with representable terms (a sum of float32 values, or
// products rounded into float32) "(0 1 ... m-1)" is "blocked" with block m, for every K (the
// pruned partial last block is the sequential sum of its units).
TEST(EvaluateTest, FlatTreeMatchesBlocked) {
  const Model tree = MakeModel(std::string(kIeeeBase) +
                               "[chain]\nkind = \"tree\"\nshape = \"(0 1 2 3 4 5 6)\"\n");
  const Model blocked = MakeModel(std::string(kIeeeBase) + "[chain]\nkind = \"blocked\"\n"
                                  "block = 7\n");
  const uint64_t seed = TestSeed(4103, "EvaluateTest.FlatTreeMatchesBlocked");
  for (uint64_t t = 0; t < 200; ++t) {
    PinnedRng rng(DeriveSeed(seed, {t}));
    const int k = static_cast<int>(rng.Below(40));
    const auto [a, b, c] = DrawDot(rng, k, 12, PinnedF32);
    SCOPED_TRACE(testing::Message() << "case " << t << " k " << k);
    EXPECT_EQ(EvaluateDot(tree, a, b, c)->bits, EvaluateDot(blocked, a, b, c)->bits);
    EXPECT_EQ(EvaluateSum(tree, a, c)->bits, EvaluateSum(blocked, a, c)->bits);
  }
}

constexpr const char* kSumF32 =
    "[inputs]\na = \"float32\"\n[adder]\nkind = \"ieee\"\n[accumulator]\nformat = \"float32\"\n";

TEST(EvaluateTest, TreeDiffersFromSequentialByHand) {
  // x = (1, 2^-24, 2^-24) in float32, c = +0.
  // Sequential: (1 + 2^-24) is a tie between 1 and 1 + 2^-23 -> 1 (even); again -> 1: 0x3F800000.
  // Tree "(0 (1 2))": 2^-24 + 2^-24 = 2^-23 exactly; 1 + 2^-23 is representable: 0x3F800001.
  const std::vector<uint64_t> x = {0x3F800000, 0x33800000, 0x33800000};
  const Model seq = MakeModel(std::string(kSumF32) + "[chain]\nkind = \"sequential\"\n");
  const Model tree =
      MakeModel(std::string(kSumF32) + "[chain]\nkind = \"tree\"\nshape = \"(0 (1 2))\"\n");
  EXPECT_EQ(EvaluateSum(seq, x, 0)->bits, 0x3F800000u);
  EXPECT_EQ(EvaluateSum(tree, x, 0)->bits, 0x3F800001u);
  // K = 0 gives c itself (no add: -0 stays -0).
  EXPECT_EQ(EvaluateSum(tree, {}, 0x80000000)->bits, 0x80000000u);
}

// The pruning rule of a partial last block against host float32 (-ffp-contract=off, rne):
// shape "((0 3) (1 2))" (m = 4) on a block with r present units: r = 4: (x0 + x3) + (x1 + x2);
// r = 3: x0 + (x1 + x2) (leaf 3 absent, (0 3) passes x0 through); r = 2: x0 + x1 ((1 2) passes
// x1); r = 1: x0. Blocks are added to c in order.
TEST(EvaluateTest, TreePrunesPartialLastBlock) {
  const Model tree =
      MakeModel(std::string(kSumF32) + "[chain]\nkind = \"tree\"\nshape = \"((0 3) (1 2))\"\n");
  const uint64_t seed = TestSeed(4104, "EvaluateTest.TreePrunesPartialLastBlock");
  for (uint64_t t = 0; t < 200; ++t) {
    PinnedRng rng(DeriveSeed(seed, {t}));
    const int n = static_cast<int>(rng.Below(30));
    std::vector<uint64_t> xb(n);
    std::vector<float> x(n);
    for (int i = 0; i < n; ++i) {
      xb[i] = PinnedF32(rng, 12);
      x[i] = std::bit_cast<float>(static_cast<uint32_t>(xb[i]));
    }
    const uint32_t cb = PinnedF32(rng, 12);
    float want = std::bit_cast<float>(cb);
    for (int lo = 0; lo < n; lo += 4) {
      const float* v = x.data() + lo;
      float blk = 0.0f;
      switch (std::min(4, n - lo)) {
        case 4: blk = (v[0] + v[3]) + (v[1] + v[2]); break;
        case 3: blk = v[0] + (v[1] + v[2]); break;
        case 2: blk = v[0] + v[1]; break;
        default: blk = v[0]; break;
      }
      want = want + blk;
    }
    SCOPED_TRACE(testing::Message() << "case " << t << " n " << n);
    EXPECT_EQ(EvaluateSum(tree, xb, cb)->bits, F32(want));
  }
}

// The deepest legal shape (4096 leaves nested to the right, depth 4095) evaluates, matching host
// float32 c + (x0 + (x1 + (... + (x4094 + x4095)))), with a finite bound.
TEST(EvaluateTest, DeepestTreeEvaluates) {
  constexpr int kM = 4096;
  std::string shape;
  for (int i = 0; i < kM - 1; ++i) {
    shape.push_back('(');
    shape.append(std::to_string(i));
    shape.push_back(' ');
  }
  shape.append(std::to_string(kM - 1));
  shape.append(kM - 1, ')');
  const Model tree = MakeModel(std::string(kSumF32) + "[chain]\nkind = \"tree\"\nshape = \"" +
                               shape + "\"\n");
  ASSERT_EQ(tree.chain.tree_units, kM);
  PinnedRng rng(DeriveSeed(TestSeed(4109, "EvaluateTest.DeepestTreeEvaluates"), {}));
  std::vector<uint64_t> xb(kM);
  std::vector<float> x(kM);
  for (int i = 0; i < kM; ++i) {
    xb[i] = PinnedF32(rng, 12);
    x[i] = std::bit_cast<float>(static_cast<uint32_t>(xb[i]));
  }
  float s = x[kM - 1];
  for (int i = kM - 2; i >= 0; --i) s = x[i] + s;
  const uint32_t c = PinnedF32(rng, 12);
  const float want = std::bit_cast<float>(c) + s;
  const EvalResult r = *EvaluateSum(tree, xb, c);
  EXPECT_EQ(r.bits, F32(want));
  EXPECT_TRUE(std::isfinite(r.bound));
}

// The analytical bound (from the tree's own Step/Combine nodes) holds against the exact oracle.
void CheckTreeBound(const Model& m, const FormatSpec& in, int cases, int max_k, uint64_t seed) {
  const FormatSpec& cf = m.FinalAccumulatorFormat();
  for (uint64_t t = 0; t < static_cast<uint64_t>(cases); ++t) {
    PinnedRng rng(DeriveSeed(seed, {t}));
    const int k = 1 + static_cast<int>(rng.Below(static_cast<uint64_t>(max_k)));
    std::vector<uint64_t> a(k), b(k);
    OpEnv env;
    for (int i = 0; i < k; ++i) {
      a[i] = Convert(Float32(), in, PinnedF32(rng, 12), env).bits;
      b[i] = Convert(Float32(), in, PinnedF32(rng, 12), env).bits;
      if (t % 2 == 1 && i % 2 == 1) {  // Cancellation: b_i = -b_{i-1} on a_i = a_{i-1}.
        a[i] = a[i - 1];
        b[i] = b[i - 1] ^ in.d.sign_bit << in.pad_bits;
      }
    }
    const uint64_t c = Convert(Float32(), cf, PinnedF32(rng, 12), env).bits;
    const EvalResult r = *EvaluateDot(m, a, b, c);
    ExactAccumulator diff = ExactDot(*m.inputs.a, a, *m.inputs.b, b, FormatValue{&cf, c});
    diff.Add(*m.output.format, r.bits ^ (m.output.format->d.sign_bit << m.output.format->pad_bits));
    OpEnv up;
    up.rounding = Rounding::kUpward;
    const double err = std::nextafter(
        std::fabs(std::bit_cast<double>(diff.Round(Float64(), up).bits)), INFINITY);
    SCOPED_TRACE(testing::Message() << "case " << t << " k " << k << " seed " << seed);
    EXPECT_LE(err, r.bound * (1 + 0x1p-40) + std::numeric_limits<double>::denorm_min());
    EXPECT_GT(r.bound, 0.0);
  }
}

TEST(EvaluateTest, WithinBoundTree) {
  const uint64_t seed = TestSeed(4105, "EvaluateTest.WithinBoundTree");
  CheckTreeBound(ExactFmaModel("kind = \"tree\"\nshape = \"((0 (1 2)) (3 4 5) 6)\"\n"), BFloat16(),
                 1000, 60, seed);
  CheckTreeBound(MakeModel(std::string(kIeeeBase) +
                           "[chain]\nkind = \"tree\"\nshape = \"(3 (1 0) 2)\"\n"
                           "[output]\nformat = \"bfloat16\"\n"),
                 Float32(), 1000, 60, seed + 1);
  // Fused units (G = 4): a leaf is one fused group from +0.
  CheckTreeBound(MakeModel("[inputs]\na = \"float16\"\n[adder]\nkind = \"fused\"\ngroup = 4\n"
                           "fraction_bits = 23\n[accumulator]\nformat = \"float32\"\n"
                           "[chain]\nkind = \"tree\"\nshape = \"((0 1) 2)\"\n"),
                 Float16(), 1000, 50, seed + 2);
}

// A fused tree leaf is one fused step of its unit's G = 4 products from +0 (g_j: the sequential
// fused model on unit j alone with c = +0), so "(0 1 2)" is c + ((g0 + g1) + g2) per block of 12
// products (combine adds: float32 rne, here through a float32 sum model), pruned for K < 12.
TEST(EvaluateTest, FusedTreeLeafIsOneGroupFromZero) {
  const std::string fused = "[inputs]\na = \"float16\"\n[adder]\nkind = \"fused\"\ngroup = 4\n"
                            "fraction_bits = 23\n[accumulator]\nformat = \"float32\"\n";
  const Model tree = MakeModel(fused + "[chain]\nkind = \"tree\"\nshape = \"(0 1 2)\"\n");
  const Model one = MakeModel(fused + "[chain]\nkind = \"sequential\"\n");
  const Model add = MakeModel(std::string(kSumF32) + "[chain]\nkind = \"sequential\"\n");
  const uint64_t seed = TestSeed(4108, "EvaluateTest.FusedTreeLeafIsOneGroupFromZero");
  for (uint64_t t = 0; t < 100; ++t) {
    PinnedRng rng(DeriveSeed(seed, {t}));
    const int k = 1 + static_cast<int>(rng.Below(12));  // One block, 1..3 units.
    const auto [a, b, c] = DrawDot(rng, k, 6, [](PinnedRng& r, int e) {
      return Convert(Float32(), Float16(), PinnedF32(r, e), OpEnv{}).bits;
    });
    // Group values: one fused step of each unit's (up to) 4 products from +0.
    std::vector<uint64_t> g;
    for (int lo = 0; lo < k; lo += 4) {
      const int hi = std::min(k, lo + 4);
      g.push_back(EvaluateDot(one, std::span(a).subspan(lo, hi - lo),
                              std::span(b).subspan(lo, hi - lo), 0)->bits);
    }
    // c + ((g0 + g1) + g2) as float32 combine adds (a flat list folds left to right).
    uint64_t blk = g[0];
    for (size_t j = 1; j < g.size(); ++j) {
      blk = EvaluateSum(add, std::vector<uint64_t>{g[j]}, blk)->bits;
    }
    const uint64_t want = EvaluateSum(add, std::vector<uint64_t>{blk}, c)->bits;
    SCOPED_TRACE(testing::Message() << "case " << t << " k " << k);
    EXPECT_EQ(EvaluateDot(tree, a, b, c)->bits, want);
  }
}

}  // namespace
}  // namespace fpconform
