// The x86-avx512bf16 preset (accumulation/models/x86-avx512bf16.toml) against the CPU's own
// VDPBF16PS, bit for bit: random bf16 vectors (normal, subnormal and underflowing products, so
// DAZ and FTZ matter) through a _mm512_dpbf16_ps loop over 32-element steps (tail zero-filled),
// then GCC's _mm512_reduce_add_ps, vs EvaluateDot with the preset.
//
// The CPU feature is detected at run time (__builtin_cpu_supports("avx512bf16")); the test is
// skipped where it is absent. Only the functions marked with the target attribute below use
// AVX-512; the file is compiled with the project's ordinary flags, so no AVX-512 instruction can
// run (in static initializers or inline functions shared with other files) before the check.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "accumulation/evaluate.h"
#include "accumulation/model.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

bool HaveAvx512Bf16() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
}

// 16 fp32 lanes after the dpbf16 loop: acc = (c, 0, ..., 0); for each 32-element step
// acc = _mm512_dpbf16_ps(acc, a, b); the last step's missing elements are +0.
__attribute__((target("avx512f,avx512bf16"))) void DpLoop(const std::vector<uint16_t>& a,
                                                         const std::vector<uint16_t>& b,
                                                         uint32_t c_bits, float lanes[16]) {
  float c;
  std::memcpy(&c, &c_bits, 4);
  __m512 acc = _mm512_mask_mov_ps(_mm512_setzero_ps(), 1, _mm512_set1_ps(c));
  for (size_t i = 0; i < a.size(); i += 32) {
    uint16_t ta[32] = {}, tb[32] = {};
    for (size_t j = 0; j < 32 && i + j < a.size(); ++j) {
      ta[j] = a[i + j];
      tb[j] = b[i + j];
    }
    const __m512i ai = _mm512_loadu_si512(ta), bi = _mm512_loadu_si512(tb);
    __m512bh ab, bb;
    std::memcpy(&ab, &ai, sizeof(ab));
    std::memcpy(&bb, &bi, sizeof(bb));
    acc = _mm512_dpbf16_ps(acc, ab, bb);
  }
  _mm512_storeu_ps(lanes, acc);
}

// GCC's _mm512_reduce_add_ps (avx512fintrin.h, __MM512_REDUCE_OP) itself, where available.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
// GCC 12's header reads an intentionally undefined register (_mm256_undefined_pd).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) float GccReduce(const float lanes[16]) {
  return _mm512_reduce_add_ps(_mm512_loadu_ps(lanes));
}
#pragma GCC diagnostic pop
#endif

// The same reduction written out (MODEL_FORMAT.md, reduce = "halving"), in scalar float with
// the default MXCSR: upper 8 + lower 8, upper 4 + lower 4, {0,1} + {2,3}, [0] + [1].
float HalvingReduce(const float lanes[16]) {
  float v[16];
  std::memcpy(v, lanes, sizeof(v));
  for (int h = 8; h >= 1; h /= 2) {
    for (int l = 0; l < h; ++l) v[l] = v[l + h] + v[l];
  }
  return v[0];
}

uint32_t Bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

// A random bf16: `mode` 0 near 1 (exponent +-8), 1 anywhere in the low range (exponent field
// 0..100, so that products underflow float32), 2 a subnormal bf16, 3 a signed zero.
uint16_t RandomBf16(PinnedRng& rng, int mode) {
  const uint16_t sign = static_cast<uint16_t>(rng.Below(2) << 15);
  const uint16_t frac = static_cast<uint16_t>(rng.Below(128));
  switch (mode) {
    case 0:
      return sign | static_cast<uint16_t>((119 + rng.Below(17)) << 7) | frac;
    case 1:
      return sign | static_cast<uint16_t>((1 + rng.Below(100)) << 7) | frac;
    case 2:
      return sign | static_cast<uint16_t>(1 + rng.Below(127));
    default:
      return sign;
  }
}

class Avx512Bf16Test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveAvx512Bf16()) GTEST_SKIP() << "this CPU has no AVX512-BF16 (vdpbf16ps)";
    absl::StatusOr<Model> m =
        LoadModelFile(FPCONFORM_MODELS_SOURCE_DIR "/x86-avx512bf16.toml");
    ASSERT_TRUE(m.ok()) << m.status();
    model_ = *m;
  }

  // Hardware result and model result for one vector pair and c; returns the hardware bits.
  uint32_t Check(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b, uint32_t c,
             const std::string& what) {
    float lanes[16];
    DpLoop(a, b, c, lanes);
    const uint32_t hw = Bits(HalvingReduce(lanes));
#if defined(__GNUC__) && !defined(__clang__)
    EXPECT_EQ(Bits(GccReduce(lanes)), hw) << what << ": GCC's reduce order is not the halving tree";
#endif
    std::vector<uint64_t> a64(a.begin(), a.end()), b64(b.begin(), b.end());
    absl::StatusOr<EvalResult> r = EvaluateDot(model_, a64, b64, c);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return hw;
    ++checked_;
    if (r->bits != hw && ++mismatches_ <= 10) {
      ADD_FAILURE() << what << " (K = " << a.size() << "): model 0x" << std::hex << r->bits
                    << ", vdpbf16ps 0x" << hw;
    }
    return hw;
  }

  Model model_;
  int checked_ = 0, mismatches_ = 0;
};

TEST_F(Avx512Bf16Test, RandomVectorsBitForBit) {
  int flushed_lanes = 0;
  const uint64_t seed = TestSeed(20261129, "Avx512Bf16Test.RandomVectorsBitForBit");
  for (uint64_t t = 0; t < 3000; ++t) {
    PinnedRng rng(DeriveSeed(seed, {t}));
    const int k = 1 + static_cast<int>(rng.Below(t % 10 == 0 ? 400 : 70));
    const int style = static_cast<int>(t % 4);  // 0: near 1; 1: underflow range; 2, 3: mixed.
    std::vector<uint16_t> a(k), b(k);
    for (int i = 0; i < k; ++i) {
      int ma = style == 0 ? 0 : 1, mb = style == 0 ? 0 : 1;
      if (style >= 2) {
        const uint64_t r = rng.Below(10);
        ma = r < 5 ? 0 : r < 8 ? 1 : r < 9 ? 2 : 3;
        mb = rng.Below(10) < 6 ? 0 : 1;
      }
      a[i] = RandomBf16(rng, ma);
      b[i] = RandomBf16(rng, mb);
      if (style == 1) {
        // Make the product land near 2^-126: exponent fields summing to about 127 + (-126+127).
        const int ea = (a[i] >> 7) & 0xFF;
        const int eb = std::clamp(128 - ea + static_cast<int>(rng.Below(9)) - 4, 1, 254);
        b[i] = static_cast<uint16_t>((b[i] & 0x807F) | eb << 7);
      }
    }
    uint32_t c = 0;
    if (t % 5 == 4) c = Bits(static_cast<float>(rng.Uniform(-2, 2)));
    if (t % 7 == 6) c = static_cast<uint32_t>(rng.Below(2) << 31 | (1 + rng.Below(0x7FFFFF)));
    float lanes[16];
    DpLoop(a, b, c, lanes);
    for (float l : lanes) flushed_lanes += (Bits(l) & 0x7FFFFFFF) == 0;
    Check(a, b, c, "case " + std::to_string(t));
  }
  EXPECT_EQ(mismatches_, 0) << "of " << checked_;
  // Not vacuous: many lanes ended at zero (underflow cases flushed or zero-padded).
  EXPECT_GT(flushed_lanes, 1000);
}

TEST_F(Avx512Bf16Test, HandDerivedEdgeCases) {
  // Odd element first. Lane 0 starts at c = 1 with the pair (a0*b0, a1*b1) = (-2^-24, 2^-24):
  // odd first: 1 + 2^-24 is a tie -> 1, then 1 - 2^-24 is exact: 0x3F7FFFFF.
  // Even first would give 1 - 2^-24 (exact), then + 2^-24 = 1: 0x3F800000.
  EXPECT_EQ(Check({0xB380, 0x3380}, {0x3F80, 0x3F80}, 0x3F800000, "odd first"), 0x3F7FFFFFu);
  // Subnormal bf16 input (0x0001 = 2^-133) times 2^7: DAZ makes it 0 (not 2^-126).
  EXPECT_EQ(Check({0x0001}, {0x4300}, 0, "daz"), 0u);
  // Product 2^-127 (normal bf16 2^-64 * 2^-63) is subnormal in fp32: FTZ gives 0.
  EXPECT_EQ(Check({0x1F80}, {0x2000}, 0, "ftz"), 0u);
  // The same negative: -0 (FTZ keeps the sign); the halving adds of +0 lanes then give +0.
  EXPECT_EQ(Check({0x9F80}, {0x2000}, 0, "ftz negative"), 0u);
  // c = 2^-127 (subnormal) in lane 0 plus the product 2^-126 (normal): DAZ on the accumulator
  // input gives 2^-126 (0x00800000), none 1.5 * 2^-126 (0x00C00000).
  const uint32_t sub_c = Check({0x0000, 0x0080}, {0x0000, 0x3F80}, 0x00400000, "subnormal c");
  std::printf("vdpbf16ps with a subnormal accumulator: 0x%08X (%s)\n", sub_c,
              sub_c == 0x00800000 ? "DAZ applies to srcdest" : "srcdest not DAZed");
  EXPECT_EQ(mismatches_, 0);
}

}  // namespace
}  // namespace fpconform
