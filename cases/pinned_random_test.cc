#include "cases/pinned_random.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "cases/test_seed.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

// PinnedLog against the C library's log, to the header's promise (relative error < 1e-15; glibc's
// log is within 1 ulp, PinnedLog within 3: the worst of 2e7 draws was 6.5e-16 relative).
// The two draws are separate statements: as arguments of one call their order is unspecified
// (GCC draws the exponent first, clang the significand), and the inputs must not depend on the
// compiler. This order is the one GCC used when the test was written.
TEST(PinnedRandomTest, PinnedLogMatchesLibmClosely) {
  PinnedRng rng(DeriveSeed(1, {}));
  for (int i = 0; i < 200000; ++i) {
    const int exponent = static_cast<int>(rng.Below(2090)) - 1070;
    const double x = std::ldexp(1 + rng.Uniform01(), exponent);
    const double want = std::log(x);
    const double got = PinnedLog(x);
    ASSERT_LE(std::fabs(got - want), 1e-15 * std::fabs(want) + 1e-300)
        << std::hexfloat << "x=" << x << " got=" << got << " libm=" << want;
  }
  EXPECT_EQ(PinnedLog(1.0), 0.0);
  EXPECT_TRUE(std::isnan(PinnedLog(0.0)));
  EXPECT_TRUE(std::isnan(PinnedLog(-1.0)));
  EXPECT_TRUE(std::isnan(PinnedLog(INFINITY)));
}

// The stream contract: these numbers are part of every recorded sweep (reports name a seed and
// expect the same inputs forever). SplitMix64 of state 0x9E3779B97F4A7C15 is Vigna's published
// first output of splitmix64.c seeded with 0: 0xE220A8397B1DCDAF.
TEST(PinnedRandomTest, SplitMixMatchesReferenceOutput) {
  PinnedRng rng(0);
  EXPECT_EQ(rng.Next(), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(rng.Next(), 0x6E789E6AA1B965F4ULL);
  EXPECT_EQ(rng.Next(), 0x06C45D188009454FULL);
}

// SplitMix64At(seed, i) is output i of PinnedRng(seed), reached without walking the stream.
TEST(PinnedRandomTest, SplitMix64AtIsTheStreamsOutput) {
  for (uint64_t seed : {uint64_t{0}, uint64_t{42}, uint64_t{0x2024'0611}, ~uint64_t{0}}) {
    PinnedRng rng(seed);
    for (uint64_t i = 0; i < 100; ++i) {
      EXPECT_EQ(SplitMix64At(seed, i), rng.Next()) << seed << " " << i;
    }
  }
  EXPECT_EQ(SplitMix64At(0, 1), 0x6E789E6AA1B965F4ULL);
}

TEST(PinnedRandomTest, StreamsDependOnEveryKey) {
  EXPECT_NE(DeriveSeed(1, {2, 3}), DeriveSeed(1, {3, 2}));
  EXPECT_NE(DeriveSeed(1, {2}), DeriveSeed(1, {2, 0}));
  EXPECT_NE(DeriveSeed(1, {2}), DeriveSeed(2, {2}));
  EXPECT_EQ(DeriveSeed(7, {1, 2}), DeriveSeed(7, {1, 2}));
}

TEST(PinnedRandomTest, DistributionsHaveTheirMoments) {
  // Any seed: every bound below is at least 4 standard deviations of its estimate wide.
  PinnedRng rng(DeriveSeed(TestSeed(42, "PinnedRandomTest.DistributionsHaveTheirMoments"), {1}));
  const int n = 400000;
  double s1 = 0, s2 = 0, u1 = 0;
  int tail = 0;
  for (int i = 0; i < n; ++i) {
    const double z = rng.Normal();
    s1 += z;
    s2 += z * z;
    if (std::fabs(z) > 3) ++tail;
    const double u = rng.Uniform01();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    u1 += u;
  }
  EXPECT_NEAR(s1 / n, 0.0, 0.01);
  EXPECT_NEAR(s2 / n, 1.0, 0.01);
  EXPECT_NEAR(tail / static_cast<double>(n), 0.0027, 0.0005);  // P(|Z| > 3) = 0.0026998.
  EXPECT_NEAR(u1 / n, 0.5, 0.002);
  for (int i = 0; i < 10000; ++i) {
    const double x = rng.LogUniform(-20, 20);
    const double a = std::fabs(x);
    ASSERT_GE(a, 0x1p-20);
    ASSERT_LT(a, 0x1p21);
  }
  for (int i = 0; i < 10000; ++i) ASSERT_LT(rng.Below(3), 3u);
}

// TestSeed: the default without FPCONFORM_SEED, the variable's value (decimal or 0x hex) with it,
// and a stop with a message for anything that is not a whole unsigned 64-bit number. Each case
// runs in a child process (a death test), so that the variable never leaks into other tests.
uint64_t SeedUnder(const char* value) {
  if (value == nullptr) {
    unsetenv("FPCONFORM_SEED");
  } else {
    setenv("FPCONFORM_SEED", value, 1);
  }
  return TestSeed(42, "pinned_random_test");
}

TEST(TestSeedTest, ReadsTheVariableOrTakesTheDefault) {
  EXPECT_EXIT(std::exit(SeedUnder(nullptr) == 42 ? 0 : 1), testing::ExitedWithCode(0),
              "pinned_random_test: seed 42 \\(FPCONFORM_SEED=42 replays it\\)");
  EXPECT_EXIT(std::exit(SeedUnder("") == 42 ? 0 : 1), testing::ExitedWithCode(0), "seed 42");
  EXPECT_EXIT(std::exit(SeedUnder("7") == 7 ? 0 : 1), testing::ExitedWithCode(0), "seed 7");
  EXPECT_EXIT(std::exit(SeedUnder("0x10") == 16 ? 0 : 1), testing::ExitedWithCode(0), "seed 16");
  EXPECT_EXIT(std::exit(SeedUnder("18446744073709551615") == UINT64_MAX ? 0 : 1),
              testing::ExitedWithCode(0), "seed 18446744073709551615");
}

TEST(TestSeedTest, StopsOnAValueThatIsNotAnUnsignedInteger) {
  for (const char* bad : {"abc", "12x", "-1", "+1", " 1", "1.5", "18446744073709551616"}) {
    EXPECT_EXIT(SeedUnder(bad), testing::ExitedWithCode(2),
                "pinned_random_test: FPCONFORM_SEED=\".*\" is not an unsigned 64-bit integer")
        << "FPCONFORM_SEED=\"" << bad << "\"";
  }
}

}  // namespace
}  // namespace fpconform
