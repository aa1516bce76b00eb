// The emulation's vector kernels (attention_model_kernels.h) against their scalar forms, on every
// ISA level this CPU has: ExpWeights against ExpWeight (itself fl32 of ExpEv's value) over
// boundary arguments (+-0, the +-700 cut and its neighbours, infinities, NaN, float32 subnormal
// and underflowing weights, reduction ties) in every lane position; RoundFloat32ToBfloat16
// against formats' Convert; RowNums against the scalar numerator loop, zero and subnormal weights
// and both V paths included, and its float32 FMA form for bfloat16 weights and V (bf16_products);
// RowDots against the dots' scalar loop.
#include "composite/attention_model_kernels.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "base/isa.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "formats/ops.h"
#include "oracles/certified_double.h"

namespace fpconform::composite::attention_model_internal {
namespace {

uint64_t Bits(double x) { return std::bit_cast<uint64_t>(x); }

// The next output of the SplitMix64 stream whose state is s (PinnedRng's step, cases/pinned_random.h).
uint64_t SplitMix(uint64_t& s) { return SplitMix64Mix(s += kSplitMix64Gamma); }

// A float32 value in [lo, hi] as a double (the emulation's arguments are float32 values).
double Uniform32(uint64_t& s, double lo, double hi) {
  const double t = static_cast<double>(SplitMix(s) >> 11) * 0x1p-53;
  return static_cast<double>(static_cast<float>(lo + (hi - lo) * t));
}

std::vector<double> BoundaryArguments() {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> a = {0.0, -0.0, 700.0, -700.0, std::nextafter(-700.0, -inf), std::nextafter(-700.0, 0.0),
                           std::nextafter(700.0, inf), -700.5, -800.0, 701.0, -inf, inf,
                           std::numeric_limits<double>::quiet_NaN(), -0x1p-149, 0x1p-149, -0x1p-1074,
                           -87.33654475055310898657, -87.3365478515625, -103.27892990343185, -103.972077083991796,
                           -103.97208404541015625, -104.0, -150.0, -745.0, 1e-8, -1e-8, 88.0, 89.0, -1.0, 1.0};
  // Reduction ties and near-ties: x = (k + 1/2) ln2 / 64 and its float32 neighbours.
  for (int k = -9000; k <= 100; k += 97) {
    const double t = (k + 0.5) * 0.6931471805599453 / 64;
    const float f = static_cast<float>(t);
    for (float g : {f, std::nextafter(f, -1e30f), std::nextafter(f, 1e30f)}) a.push_back(static_cast<double>(g));
  }
  return a;
}

TEST(AttentionModelKernels, ExpWeightIsExpEvRoundedToFloat32) {
  for (double x : {0.0, -1.5, -50.0, -103.5, -700.0}) {
    const double y = certified::ExpEv(certified::Exact(x)).y;
    EXPECT_EQ(Bits(ExpWeight(x)), Bits(static_cast<double>(static_cast<float>(y)))) << x;
  }
  EXPECT_EQ(Bits(ExpWeight(-700.5)), Bits(0.0));
  EXPECT_EQ(Bits(ExpWeight(0.0)), Bits(1.0));
  EXPECT_GT(ExpWeight(-103.0), 0.0);  // A float32 subnormal.
  EXPECT_LT(ExpWeight(-103.0), 0x1p-126);
}

TEST(AttentionModelKernels, ExpWeightsMatchesScalarOnEveryLevel) {
  const std::vector<double> boundary = BoundaryArguments();
  uint64_t seed = TestSeed(27, "AttentionModelKernels.ExpWeightsMatchesScalarOnEveryLevel");
  std::vector<double> args;
  // Each boundary value in every lane position of an 8-lane vector, among in-range neighbours,
  // and alone in a vector of in-range values.
  for (double b : boundary) {
    for (int pos = 0; pos < 8; ++pos) {
      for (int l = 0; l < 8; ++l) args.push_back(l == pos ? b : Uniform32(seed, -20.0, 0.0));
    }
  }
  for (int x = 0; x < 20000; ++x) args.push_back(Uniform32(seed, -760.0, 5.0));
  for (int x = 0; x < 20000; ++x) args.push_back(Uniform32(seed, -110.0, -80.0));  // float32 subnormal weights.
  args.push_back(-1.25);  // A tail (n not a multiple of the lanes).
  args.push_back(-700.0);
  args.push_back(-900.0);
  std::vector<double> want(args.size());
  for (size_t x = 0; x < args.size(); ++x) want[x] = ExpWeight(args[x]);
  const Isa saved = ActiveIsa();
  for (Isa isa : AvailableIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    for (size_t off : {size_t{0}, size_t{1}, size_t{3}}) {  // Lanes shifted against the boundary values.
      const size_t n = args.size() - off;
      std::vector<double> got(n);
      ExpWeights(args.data() + off, got.data(), n);
      for (size_t x = 0; x < n; ++x) {
        ASSERT_EQ(Bits(got[x]), Bits(want[x + off])) << IsaName(isa) << " arg " << args[x + off] << " at " << x + off;
      }
    }
  }
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

TEST(AttentionModelKernels, RoundFloat32ToBfloat16IsConvert) {
  const auto check = [](uint32_t b) {
    float f;
    std::memcpy(&f, &b, sizeof f);
    if (!std::isfinite(f)) return;
    const double x = static_cast<double>(f);
    const uint64_t r = Convert(Float64(), BFloat16(), Bits(x), OpEnv{}).bits;
    const double want = ToDouble(BFloat16(), r);
    ASSERT_EQ(Bits(RoundFloat32ToBfloat16(x)), Bits(want)) << std::hex << b;
  };
  for (uint32_t hi = 0; hi < 0x10000u; ++hi) {  // Every bfloat16 pattern with the rounding boundaries below it.
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) check((hi << 16) | lo);
  }
  uint64_t seed = TestSeed(5, "AttentionModelKernels.RoundFloat32ToBfloat16IsConvert");
  for (int x = 0; x < 200000; ++x) check(static_cast<uint32_t>(SplitMix(seed)));
}

// The scalar numerator loop RowNums replaced (attention_model_kernels.h NumArgs).
template <typename T>
void ScalarNums(std::vector<float>& nums, const std::vector<double>& w, const std::vector<int64_t>& keys, const T* v,
                size_t dv) {
  for (size_t x = 0; x < w.size(); ++x) {
    if (w[x] == 0) continue;
    for (size_t c = 0; c < dv; ++c) {
      nums[c] = static_cast<float>(static_cast<double>(nums[c]) +
                                   w[x] * static_cast<double>(v[static_cast<size_t>(keys[x]) * dv + c]));
    }
  }
}

TEST(AttentionModelKernels, RowNumsMatchesScalarOnEveryLevel) {
  uint64_t seed = TestSeed(11, "AttentionModelKernels.RowNumsMatchesScalarOnEveryLevel");
  const Isa saved = ActiveIsa();
  for (size_t dv : {size_t{1}, size_t{5}, size_t{64}, size_t{67}, size_t{128}, size_t{200}}) {
    const size_t sk = 300;
    std::vector<double> v(sk * dv);
    std::vector<float> vf(sk * dv);
    for (size_t x = 0; x < v.size(); ++x) {
      const uint64_t r = SplitMix(seed);
      const double mag = (r & 7) == 0 ? 0x1p-130 : (r & 7) == 1 ? 0x1p100 : 1.0;  // Subnormal and huge terms.
      v[x] = static_cast<double>(static_cast<float>(Uniform32(seed, -2.0, 2.0) * mag));
      vf[x] = static_cast<float>(v[x]);
    }
    std::vector<int64_t> keys;
    std::vector<double> w;
    for (int64_t j = 0; j < static_cast<int64_t>(sk); j += 1 + static_cast<int64_t>(SplitMix(seed) % 3)) {
      keys.push_back(j);
      const uint64_t r = SplitMix(seed) % 5;
      w.push_back(r == 0 ? 0.0 : r == 1 ? 0x1p-140 : ExpWeight(Uniform32(seed, -30.0, 0.0)));
    }
    std::vector<float> want(dv, 0.0f);
    ScalarNums(want, w, keys, v.data(), dv);
    // v not float32 (the binary64 path): V plus a small binary64 offset.
    std::vector<double> v64(v);
    for (double& x : v64) x += 0x1p-40;
    std::vector<float> want64(dv, 0.0f);
    ScalarNums(want64, w, keys, v64.data(), dv);
    for (Isa isa : AvailableIsas()) {
      ASSERT_TRUE(SetActiveIsa(isa).ok());
      std::vector<float> got(dv, 0.0f), got64(dv, 0.0f);
      RowNums(NumArgs{got.data(), w.data(), keys.data(), v.data(), vf.data(), w.size(), dv});
      RowNums(NumArgs{got64.data(), w.data(), keys.data(), v64.data(), nullptr, w.size(), dv});
      for (size_t c = 0; c < dv; ++c) {
        ASSERT_EQ(std::bit_cast<uint32_t>(got[c]), std::bit_cast<uint32_t>(want[c])) << IsaName(isa) << " dv " << dv << " c " << c;
        ASSERT_EQ(std::bit_cast<uint32_t>(got64[c]), std::bit_cast<uint32_t>(want64[c])) << IsaName(isa) << " dv " << dv;
      }
    }
  }
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

// A bfloat16 value with a random significand, sign (when `sign`) and exponent in [emin, emax]
// (below -126: bfloat16's subnormals).
double RandomBf16(uint64_t& s, int emin, int emax, bool sign) {
  const uint64_t r = SplitMix(s);
  const int e = emin + static_cast<int>(r % static_cast<uint64_t>(emax - emin + 1));
  const double sig = 1.0 + static_cast<double>((r >> 20) & 0x7F) / 128.0;
  const double v = (sign && ((r >> 40) & 1) ? -1.0 : 1.0) * std::ldexp(sig, e);
  return RoundFloat32ToBfloat16(static_cast<double>(static_cast<float>(v)));
}

TEST(AttentionModelKernels, RowNumsBf16ProductsMatchesScalar) {
  // NumArgs::bf16_products: the float32 FMA form against the binary64 scalar loop, with weights
  // and V values of every exponent (subnormal and huge products, sums that cancel, small terms
  // next to large sums: each case of the proof in attention_model_kernels.h).
  uint64_t seed = TestSeed(99, "AttentionModelKernels.RowNumsBf16ProductsMatchesScalar");
  const Isa saved = ActiveIsa();
  for (int trial = 0; trial < 60; ++trial) {
    const size_t dv = trial % 3 == 0 ? 128 : trial % 3 == 1 ? 40 : 16 * 9 + 5;
    const size_t sk = 200;
    const int vlo = trial % 4 == 0 ? -133 : -40, vhi = trial % 4 == 1 ? 120 : 20;
    std::vector<double> v(sk * dv);
    std::vector<float> vf(sk * dv);
    for (size_t x = 0; x < v.size(); ++x) {
      v[x] = (SplitMix(seed) % 11 == 0) ? 0.0 : RandomBf16(seed, vlo, vhi, true);
      vf[x] = static_cast<float>(v[x]);
    }
    std::vector<int64_t> keys;
    std::vector<double> w;
    for (int64_t j = 0; j < static_cast<int64_t>(sk); ++j) {
      keys.push_back(j);
      const uint64_t r = SplitMix(seed) % 9;
      w.push_back(r == 0 ? 0.0 : r == 1 ? RandomBf16(seed, -133, -120, false) : RandomBf16(seed, -60, 0, false));
    }
    std::vector<float> want(dv, 0.0f);
    ScalarNums(want, w, keys, v.data(), dv);
    for (Isa isa : AvailableIsas()) {
      ASSERT_TRUE(SetActiveIsa(isa).ok());
      std::vector<float> got(dv, 0.0f);
      RowNums(NumArgs{got.data(), w.data(), keys.data(), v.data(), vf.data(), w.size(), dv, true});
      for (size_t c = 0; c < dv; ++c) {
        ASSERT_EQ(std::bit_cast<uint32_t>(got[c]), std::bit_cast<uint32_t>(want[c]))
            << IsaName(isa) << " trial " << trial << " c " << c;
      }
    }
  }
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

TEST(AttentionModelKernels, RowDotsMatchesScalarOnEveryLevel) {
  // dot = sum_c qf_c kd_jc and ab = sum_c |q_c k_jc| from +0 in column order, per (row, key):
  // transposed K (packed tiles, a partial last tile) and row-major K, qf == q and not.
  uint64_t seed = TestSeed(21, "AttentionModelKernels.RowDotsMatchesScalarOnEveryLevel");
  const int64_t nr = 5, d = 40;
  const Isa saved = ActiveIsa();
  for (int64_t sk : {int64_t{7}, int64_t{100}, int64_t{300}}) {
    std::vector<double> q(static_cast<size_t>(nr * d)), qs(q.size()), k(static_cast<size_t>(sk * d)), ks(k.size());
    for (size_t x = 0; x < q.size(); ++x) {
      q[x] = Uniform32(seed, -3.0, 3.0) * ((SplitMix(seed) & 15) == 0 ? 0x1p60 : 1.0);
      qs[x] = static_cast<double>(static_cast<float>(q[x] * 0.125));
    }
    for (size_t x = 0; x < k.size(); ++x) {
      k[x] = Uniform32(seed, -3.0, 3.0) * ((SplitMix(seed) & 15) == 0 ? 0x1p-60 : 1.0);
      ks[x] = static_cast<double>(static_cast<float>(k[x] * 0.5));
    }
    std::vector<double> kt(k.size()), kst(k.size());
    for (int64_t j = 0; j < sk; ++j) {
      for (int64_t c = 0; c < d; ++c) {
        kt[static_cast<size_t>(c * sk + j)] = k[static_cast<size_t>(j * d + c)];
        kst[static_cast<size_t>(c * sk + j)] = ks[static_cast<size_t>(j * d + c)];
      }
    }
    for (int variant = 0; variant < 3; ++variant) {  // Same; scaled Q; scaled Q and K.
      const std::vector<double>& qf = variant == 0 ? q : qs;
      const std::vector<double>& kd = variant == 2 ? ks : k;
      const int64_t jend = sk - sk / 7;
      std::vector<double> want_dot(static_cast<size_t>(nr * sk), -1.0), want_ab(want_dot);
      for (int64_t r = 0; r < nr; ++r) {
        for (int64_t j = 0; j < jend; ++j) {
          double s = 0, t = 0;
          for (int64_t c = 0; c < d; ++c) {
            s += qf[static_cast<size_t>(r * d + c)] * kd[static_cast<size_t>(j * d + c)];
            t += std::fabs(q[static_cast<size_t>(r * d + c)] * k[static_cast<size_t>(j * d + c)]);
          }
          want_dot[static_cast<size_t>(r * sk + j)] = s;
          want_ab[static_cast<size_t>(r * sk + j)] = t;
        }
      }
      for (Isa isa : AvailableIsas()) {
        ASSERT_TRUE(SetActiveIsa(isa).ok());
        for (bool transposed : {true, false}) {
          std::vector<double> dot(want_dot.size(), -1.0), ab(want_ab.size(), -1.0);
          const double* kdp = transposed ? (variant == 2 ? kst.data() : kt.data()) : kd.data();
          const double* kkp = transposed ? kt.data() : k.data();
          RowDots(DotArgs{qf.data(), q.data(), kdp, kkp, dot.data(), ab.data(), nr, sk, d, jend, transposed ? 0 : 1,
                          transposed ? 1 : d});
          for (size_t x = 0; x < dot.size(); ++x) {
            ASSERT_EQ(Bits(dot[x]), Bits(want_dot[x])) << IsaName(isa) << " sk " << sk << " variant " << variant << " at " << x;
            ASSERT_EQ(Bits(ab[x]), Bits(want_ab[x])) << IsaName(isa) << " sk " << sk << " variant " << variant << " at " << x;
          }
        }
      }
    }
  }
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

}  // namespace
}  // namespace fpconform::composite::attention_model_internal
