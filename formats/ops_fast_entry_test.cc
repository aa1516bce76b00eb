// The both-normal entry of Add, Sub, Mul and Fma for the IEEE binary layouts (FastLayout in
// format_spec.h) against the general path: a copy of the row with fast_layout = kNone takes the
// general path, so the two are compared bit for bit, flags included, on random and boundary
// operands (every class, exponents at emin, emax and around them, cancelling sums and fmas,
// sums and products that overflow or become tiny) in every rounding mode, with sat, ftz, daz,
// tininess before rounding and each NaN profile.
#include <cstdint>
#include <string>

#include "formats/ops.h"
#include "formats/round_pack.h"
#include "formats/text.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

uint64_t SplitMix64(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A value of f from r: boundary exponents and fractions with high probability.
uint64_t Operand(const FormatSpec& f, uint64_t r) {
  const uint64_t max_field = f.d.max_biased_exponent;
  const uint64_t bias = static_cast<uint64_t>(f.bias);
  uint64_t field;
  switch ((r >> 8) & 15) {
    case 0: field = 0; break;
    case 1: field = 1; break;
    case 2: field = 2; break;
    case 3: field = max_field - 1; break;
    case 4: field = max_field - 2; break;
    case 5: field = max_field; break;
    case 6: field = bias + ((r >> 40) & 3); break;  // Near 1: results near 1, cancellation.
    case 7: field = bias / 2 + ((r >> 40) & 7); break;  // Products near emin.
    case 8: field = bias + bias / 2 - ((r >> 40) & 7); break;  // Products near emax.
    default: field = (r >> 32) % (max_field + 1); break;
  }
  uint64_t fraction;
  switch ((r >> 12) & 7) {
    case 0: fraction = 0; break;
    case 1: fraction = 1; break;
    case 2: fraction = f.d.fraction_mask; break;
    case 3: fraction = uint64_t{1} << (f.fraction_bits - 1); break;
    default: fraction = (r >> 16) & f.d.fraction_mask; break;
  }
  const uint64_t sign = (r >> 63) & 1;
  return (sign << (f.width - 1)) | (field << f.fraction_bits) | fraction;
}

OpEnv Env(uint64_t r) {
  OpEnv env;
  env.rounding = static_cast<Rounding>(r % 7);
  if (env.rounding == Rounding::kStochastic) {
    static constexpr int kBits[] = {1, 2, 8, 13, 23, 32};
    env.sr_bits = kBits[(r >> 3) % 6];
    env.sr_random = SplitMix64(r, 99);
  }
  env.saturate = ((r >> 8) & 3) == 0;
  env.flush_to_zero = ((r >> 10) & 3) == 0;
  env.denormals_are_zero = ((r >> 12) & 3) == 0;
  env.tininess = ((r >> 14) & 1) ? Tininess::kBeforeRounding : Tininess::kAfterRounding;
  env.nan = static_cast<NanProfile>((r >> 15) & 3);
  return env;
}

std::string CaseText(const FormatSpec& f, const char* op, uint64_t a, uint64_t b, uint64_t c,
                     uint64_t i) {
  return std::string(f.name) + " " + op + " case " + std::to_string(i) + ": " +
         Describe(f, a) + ", " + Describe(f, b) + ", " +
         Describe(f, c);
}

class FastEntryTest : public testing::TestWithParam<const char*> {};

TEST_P(FastEntryTest, SameBitsAndFlagsAsTheGeneralPath) {
  const FormatSpec& f = *FindFormat(GetParam());
  ASSERT_NE(f.d.fast_layout, FastLayout::kNone);
  FormatSpec general = f;
  general.d.fast_layout = FastLayout::kNone;
  constexpr uint64_t kCases = 300000;
  int failures = 0;
  for (uint64_t i = 0; i < kCases && failures < 10; ++i) {
    const uint64_t seed = 0x5EED0000 + static_cast<uint64_t>(f.width) * 1000 + f.fraction_bits;
    const OpEnv env = Env(SplitMix64(seed, 4 * i));
    const uint64_t a = Operand(f, SplitMix64(seed, 4 * i + 1));
    uint64_t b = Operand(f, SplitMix64(seed, 4 * i + 2));
    uint64_t c = Operand(f, SplitMix64(seed, 4 * i + 3));
    const uint64_t r = SplitMix64(seed ^ 0xABCD, i);
    if ((r & 3) == 0) {
      // b close to -a or a (cancellation in Add or Sub): a's bits with low fraction bits changed.
      b = a ^ (r >> 8 & 7) ^ ((r >> 12 & 1) << (f.width - 1));
    }
    if (((r >> 2) & 3) == 0) {
      // c close to -a*b: the fma cancels (nearly) completely.
      OpEnv rtz;
      rtz.rounding = Rounding::kTowardZero;
      c = Mul(general, a, b, rtz).bits ^ (uint64_t{1} << (f.width - 1)) ^ (r >> 16 & 3);
    }
    const struct {
      const char* name;
      OpResult fast, slow;
    } results[] = {
        {"add", Add(f, a, b, env), Add(general, a, b, env)},
        {"sub", Sub(f, a, b, env), Sub(general, a, b, env)},
        {"mul", Mul(f, a, b, env), Mul(general, a, b, env)},
        {"fma", Fma(f, a, b, c, env), Fma(general, a, b, c, env)},
    };
    for (const auto& res : results) {
      if (res.fast != res.slow) {
        ++failures;
        ADD_FAILURE() << CaseText(f, res.name, a, b, c, i) << " rounding "
                      << static_cast<int>(env.rounding) << " sr_bits " << env.sr_bits
                      << ": fast " << std::hex << res.fast.bits << "/" << int{res.fast.flags}
                      << ", general " << res.slow.bits << "/" << int{res.slow.flags};
      }
    }
  }
}

// Stochastic rounding at its threshold: for a sum or difference of two normal operands whose
// exponents differ by up to 63 (alignments that shift bits out of the 64-bit window), the exact
// result's top k discarded bits T are computed here in 128 bits, and r is set to 2^k - 1 - T
// (the largest r that rounds toward zero) and to 2^k - T (the smallest that rounds away). A fast
// entry that lost a borrow or a sticky bit in the alignment reads T + 1 or T - 1 and decides the
// other way for one of the two.
TEST_P(FastEntryTest, StochasticRoundingAtTheThresholdAfterAlignment) {
  const FormatSpec& f = *FindFormat(GetParam());
  FormatSpec general = f;
  general.d.fast_layout = FastLayout::kNone;
  const int p = f.fraction_bits + 1;
  const uint64_t max_field = f.d.max_biased_exponent;
  int failures = 0, checked = 0;
  for (uint64_t i = 0; i < 100000 && failures < 10; ++i) {
    const uint64_t r = SplitMix64(0x5A7E + f.width, 2 * i), q = SplitMix64(0x5A7E, 2 * i + 1);
    const int k = static_cast<int>(1 + r % 32);
    const uint64_t d = q % 64 < max_field - 2 ? q % 64 : q % (max_field - 2);
    const uint64_t field_a = d + 1 + (r >> 8) % (max_field - 1 - d);  // field_a - d >= 1.
    const uint64_t frac_mask = f.d.fraction_mask;
    // Fractions with runs of zeros (alignment borrows) as often as random ones.
    uint64_t frac_a = (r >> 16) & frac_mask, frac_b = (q >> 16) & frac_mask;
    if ((q >> 6) & 1) frac_b &= ~(uint64_t{0x3F} << ((q >> 7) % p)) | 1;
    const bool negative_b = (q >> 13) & 1, subtract = (q >> 14) & 1;
    const uint64_t a = (field_a << f.fraction_bits) | frac_a;
    const uint64_t b = (uint64_t{negative_b} << (f.width - 1)) |
                       ((field_a - d) << f.fraction_bits) | frac_b;
    // The exact magnitude of the result in units of b's last bit.
    const uint128 x = uint128{frac_a | (uint64_t{1} << f.fraction_bits)} << d;
    const uint128 y = frac_b | (uint64_t{1} << f.fraction_bits);
    const uint128 exact = negative_b == subtract ? x + y : x >= y ? x - y : y - x;
    if (exact == 0) continue;
    int lead = 127;
    while (!((exact >> lead) & 1)) --lead;
    const int lsb = lead - (p - 1);
    const uint128 below = exact & ((uint128{1} << lsb) - 1);  // lsb >= p - 1 > 0 here.
    const uint64_t t = lsb >= k ? static_cast<uint64_t>(below >> (lsb - k))
                                : static_cast<uint64_t>(below << (k - lsb));
    const uint64_t all = (uint64_t{1} << k) - 1;
    OpEnv rtz;
    rtz.rounding = Rounding::kTowardZero;
    const OpResult truncated = subtract ? Sub(general, a, b, rtz) : Add(general, a, b, rtz);
    for (const uint64_t sr_random : {all - t, (all - t + 1) & all}) {
      OpEnv env;
      env.rounding = Rounding::kStochastic;
      env.sr_bits = k;
      env.sr_random = sr_random;
      const OpResult fast = subtract ? Sub(f, a, b, env) : Add(f, a, b, env);
      const OpResult slow = subtract ? Sub(general, a, b, env) : Add(general, a, b, env);
      // The threshold itself: away from zero (one unit up in magnitude) exactly for r = 2^k - T
      // when T > 0 (below it, or r wrapping to 0 for T = 0, rounds toward zero).
      if (!(truncated.flags & kOverflow)) {
        const bool away = sr_random == all - t + 1 && t != 0;
        EXPECT_EQ(slow.bits, truncated.bits + (away ? 1 : 0))
            << CaseText(f, subtract ? "sub" : "add", a, b, 0, i) << " sr" << k;
      }
      ++checked;
      if (fast != slow) {
        ++failures;
        ADD_FAILURE() << CaseText(f, subtract ? "sub" : "add", a, b, 0, i) << " sr" << k
                      << " r " << std::hex << sr_random << ": fast " << fast.bits << "/"
                      << int{fast.flags} << ", general " << slow.bits << "/"
                      << int{slow.flags};
      }
    }
  }
  EXPECT_GT(checked, 100000);
}

INSTANTIATE_TEST_SUITE_P(Layouts, FastEntryTest,
                         testing::Values("float32", "bfloat16", "float16"));

TEST(FastLayoutTest, OnlyTheIeeeBinaryLayouts) {
  for (const FormatSpec& f : AllFormats()) {
    const FastLayout expected = f.name == "float32"    ? FastLayout::kBinary32
                                : f.name == "bfloat16" ? FastLayout::kBFloat16
                                : f.name == "float16"  ? FastLayout::kBinary16
                                                       : FastLayout::kNone;
    EXPECT_EQ(f.d.fast_layout, expected) << f.name;
  }
}

}  // namespace
}  // namespace fpconform
