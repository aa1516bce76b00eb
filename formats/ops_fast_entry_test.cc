// The both-normal entry of Add, Sub, Mul and Fma for the IEEE binary layouts (FastLayout in
// format_spec.h) against the general path: a copy of the row with fast_layout = kNone takes the
// general path, so the two are compared bit for bit, flags included, on random and boundary
// operands (every class, exponents at emin, emax and around them, cancelling sums and fmas,
// sums and products that overflow or become tiny) in every rounding mode, with sat, ftz, daz,
// tininess before rounding and each NaN profile.
#include <cstdint>
#include <string>

#include "formats/ops.h"
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
