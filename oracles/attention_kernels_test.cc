// attention_kernels.h's ExpEvs against certified::ExpEv, value and bound bit for bit, on every ISA
// level this CPU has: arguments across [-760, 5], the +-700 cut and its neighbours, +-0,
// infinities, NaN, argument bounds up to and past ExpEv's 2^-20 limit, reduction ties, results
// below the float32 and near the binary64 normal range, each boundary in every lane position.
#include "oracles/attention_kernels.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "base/isa.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "oracles/certified_double.h"

namespace fpconform::attention_internal {
namespace {

// The next output of the SplitMix64 stream whose state is s (PinnedRng's step, cases/pinned_random.h).
uint64_t SplitMix(uint64_t& s) { return SplitMix64Mix(s += kSplitMix64Gamma); }

double Uniform(uint64_t& s, double lo, double hi) {
  return lo + (hi - lo) * (static_cast<double>(SplitMix(s) >> 11) * 0x1p-53);
}

TEST(AttentionKernels, ExpEvsMatchesExpEvOnEveryLevel) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> by = {0.0, -0.0, 700.0, -700.0, std::nextafter(-700.0, -inf), std::nextafter(700.0, inf),
                            -745.0, -1e-300, 1e-300, -inf, inf, std::numeric_limits<double>::quiet_NaN(),
                            -103.97, -87.34, -708.4, -1e-17, 0.0054, -0.0054};
  for (int k = -9000; k <= 100; k += 89) {
    const double t = (k + 0.5) * 0.6931471805599453 / 64;
    by.push_back(t);
    by.push_back(std::nextafter(t, -inf));
    by.push_back(std::nextafter(t, inf));
  }
  const std::vector<double> be = {0.0, 0x1p-53, 0x1p-30, 0x1p-20, std::nextafter(0x1p-20, 1.0), 1e-3, inf};
  uint64_t seed = TestSeed(3, "AttentionKernels.ExpEvsMatchesExpEvOnEveryLevel");
  std::vector<double> y, e;
  for (double b : by) {
    for (double eb : be) {
      for (int pos = 0; pos < 8; ++pos) {
        for (int l = 0; l < 8; ++l) {
          y.push_back(l == pos ? b : Uniform(seed, -30.0, 0.0));
          e.push_back(l == pos ? eb : Uniform(seed, 0.0, 0x1p-40));
        }
      }
    }
  }
  for (int x = 0; x < 30000; ++x) {
    y.push_back(Uniform(seed, -760.0, 5.0));
    e.push_back((x & 3) == 0 ? 0.0 : Uniform(seed, 0.0, 0x1p-35) * std::fabs(y.back()));
  }
  y.push_back(-2.5);  // A tail.
  e.push_back(0x1p-50);
  std::vector<double> wy(y.size()), we(y.size());
  for (size_t x = 0; x < y.size(); ++x) {
    const certified::Ev r = certified::ExpEv(certified::Ev{y[x], e[x]});
    wy[x] = r.y;
    we[x] = r.e;
  }
  const Isa saved = ActiveIsa();
  for (Isa isa : AvailableIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    for (size_t off : {size_t{0}, size_t{3}}) {
      const int64_t n = static_cast<int64_t>(y.size() - off);
      std::vector<double> gy(static_cast<size_t>(n)), ge(static_cast<size_t>(n));
      ExpEvs(y.data() + off, e.data() + off, gy.data(), ge.data(), n);
      for (size_t x = 0; x < static_cast<size_t>(n); ++x) {
        ASSERT_EQ(std::bit_cast<uint64_t>(gy[x]), std::bit_cast<uint64_t>(wy[x + off]))
            << IsaName(isa) << " y " << y[x + off] << " e " << e[x + off];
        ASSERT_EQ(std::bit_cast<uint64_t>(ge[x]), std::bit_cast<uint64_t>(we[x + off]))
            << IsaName(isa) << " y " << y[x + off] << " e " << e[x + off];
      }
    }
  }
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

}  // namespace
}  // namespace fpconform::attention_internal
