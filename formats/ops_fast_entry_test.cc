// The both-normal entry of Add, Sub, Mul and Fma for the IEEE binary layouts (FastLayout in
// format_spec.h) against the general path: a copy of the row with fast_layout = kNone takes the
// general path, so the two are compared bit for bit, flags included, on random and boundary
// operands (every class, exponents at emin, emax and around them, cancelling sums and fmas,
// sums and products that overflow or become tiny) in every rounding mode, with sat, ftz, daz,
// tininess before rounding and each NaN profile.
#include <cstdint>
#include <string>

#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/ops.h"
#include "formats/round_pack.h"
#include "formats/text.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

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
    env.sr_random = SplitMix64At(r, 99);
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
  const uint64_t seed = TestSeed(0x5EED0000, "FastEntryTest.SameBitsAndFlagsAsTheGeneralPath") +
                        static_cast<uint64_t>(f.width) * 1000 + f.fraction_bits;
  for (uint64_t i = 0; i < kCases && failures < 10; ++i) {
    const OpEnv env = Env(SplitMix64At(seed, 4 * i));
    const uint64_t a = Operand(f, SplitMix64At(seed, 4 * i + 1));
    uint64_t b = Operand(f, SplitMix64At(seed, 4 * i + 2));
    uint64_t c = Operand(f, SplitMix64At(seed, 4 * i + 3));
    const uint64_t r = SplitMix64At(seed ^ 0xABCD, i);
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
// The top k bits below the last of p kept bits of `exact` (nonzero), as an integer.
uint64_t TopDiscardedBits(uint128 exact, int p, int k) {
  int lead = 127;
  while (!((exact >> lead) & 1)) --lead;
  const int lsb = lead - (p - 1);
  if (lsb <= 0) return 0;  // Nothing discarded.
  const uint128 below = exact & ((uint128{1} << lsb) - 1);
  return lsb >= k ? static_cast<uint64_t>(below >> (lsb - k))
                  : static_cast<uint64_t>(below << (k - lsb));
}

// Checks Add, Sub or Fma (by `name`) on f's fast entry against the general path under sr<k> with
// r on either side of the threshold for the exact result's top discarded bits t, and the general
// path against the threshold itself: one unit up in magnitude from the truncated result exactly
// for r = 2^k - t when t > 0 (for a normal, finite truncated result, where t is what the rounding
// reads). Returns false on a difference.
bool SameAtTheThreshold(const FormatSpec& f, const FormatSpec& general, const char* name,
                        uint64_t a, uint64_t b, uint64_t c, int k, uint64_t t, uint64_t i) {
  const auto op = [&](const FormatSpec& g, const OpEnv& env) {
    return name[0] == 'a' ? Add(g, a, b, env) : name[0] == 's' ? Sub(g, a, b, env)
                                                               : Fma(g, a, b, c, env);
  };
  OpEnv rtz;
  rtz.rounding = Rounding::kTowardZero;
  const OpResult truncated = op(general, rtz);
  const uint64_t field = (truncated.bits >> f.fraction_bits) & f.d.max_biased_exponent;
  const bool normal = field != 0 && field != f.d.max_biased_exponent &&
                      !(truncated.flags & kOverflow);
  const uint64_t all = (uint64_t{1} << k) - 1;
  bool same = true;
  for (const uint64_t sr_random : {all - t, (all - t + 1) & all}) {
    OpEnv env;
    env.rounding = Rounding::kStochastic;
    env.sr_bits = k;
    env.sr_random = sr_random;
    const OpResult fast = op(f, env), slow = op(general, env);
    if (normal) {
      const bool away = sr_random == all - t + 1 && t != 0;
      EXPECT_EQ(slow.bits, truncated.bits + (away ? 1 : 0))
          << CaseText(f, name, a, b, c, i) << " sr" << k << " r " << sr_random;
    }
    if (fast != slow) {
      same = false;
      ADD_FAILURE() << CaseText(f, name, a, b, c, i) << " sr" << k << " r " << std::hex
                    << sr_random << ": fast " << fast.bits << "/" << int{fast.flags}
                    << ", general " << slow.bits << "/" << int{slow.flags};
    }
  }
  return same;
}

TEST_P(FastEntryTest, StochasticRoundingAtTheThresholdAfterAlignment) {
  const FormatSpec& f = *FindFormat(GetParam());
  FormatSpec general = f;
  general.d.fast_layout = FastLayout::kNone;
  const int p = f.fraction_bits + 1;
  const uint64_t max_field = f.d.max_biased_exponent;
  int failures = 0, checked = 0;
  const uint64_t seed = TestSeed(0, "FastEntryTest.StochasticRoundingAtTheThresholdAfterAlignment");
  for (uint64_t i = 0; i < 100000 && failures < 10; ++i) {
    const uint64_t r = SplitMix64At(seed + 0x5A7E + f.width, 2 * i),
                   q = SplitMix64At(seed + 0x5A7E, 2 * i + 1);
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
    const uint64_t t = TopDiscardedBits(exact, p, k);
    if (!SameAtTheThreshold(f, general, subtract ? "sub" : "add", a, b, 0, k, t, i)) ++failures;
    ++checked;
  }
  EXPECT_GT(checked, 50000);
}

// The same for Fma: the product's exponent and the addend's differ by up to 63 either way.
TEST_P(FastEntryTest, FmaStochasticRoundingAtTheThresholdAfterAlignment) {
  const FormatSpec& f = *FindFormat(GetParam());
  FormatSpec general = f;
  general.d.fast_layout = FastLayout::kNone;
  const int p = f.fraction_bits + 1, m = f.fraction_bits;
  const int64_t max_field = static_cast<int64_t>(f.d.max_biased_exponent), bias = f.bias;
  const uint64_t frac_mask = f.d.fraction_mask;
  int failures = 0, checked = 0;
  const uint64_t seed =
      TestSeed(0, "FastEntryTest.FmaStochasticRoundingAtTheThresholdAfterAlignment");
  // One case: significands (implicit bit included), fields, signs; dd = product exponent minus
  // addend exponent (of the leading bits, before any carry). Skipped where a field is out of
  // range or the result is an exact zero.
  const auto check = [&](uint64_t sig_a, uint64_t sig_b, uint64_t sig_c, int64_t field_a,
                         int64_t field_c, int64_t dd, uint64_t signs, int k, uint64_t i) {
    const int64_t field_b = field_c + dd + bias - field_a;
    if (field_a < 1 || field_a >= max_field || field_b < 1 || field_b >= max_field ||
        field_c < 1 || field_c >= max_field) {
      return;
    }
    const uint64_t sa = signs & 1, sb = (signs >> 1) & 1, sc = (signs >> 2) & 1;
    const auto pack = [&](uint64_t sign, int64_t field, uint64_t sig) {
      return (sign << (f.width - 1)) | (static_cast<uint64_t>(field) << m) | (sig & frac_mask);
    };
    const uint64_t a = pack(sa, field_a, sig_a), b = pack(sb, field_b, sig_b),
                   c = pack(sc, field_c, sig_c);
    // Exact magnitudes in units of the lower of the two last bits: the product's exponent is
    // (field_a + field_b - 2 bias - 2m), the addend's (field_c - bias - m), m - dd apart.
    const uint128 product = uint128{sig_a} * sig_b;
    const int64_t gap = dd - m;  // Product exponent - addend exponent (|gap| <= 63 + 23).
    const uint128 xp = gap > 0 ? product << gap : product;
    const uint128 xc = gap < 0 ? uint128{sig_c} << -gap : uint128{sig_c};
    const uint128 exact = (sa ^ sb) == sc ? xp + xc : xp >= xc ? xp - xc : xc - xp;
    if (exact == 0) return;
    const uint64_t t = TopDiscardedBits(exact, p, k);
    if (!SameAtTheThreshold(f, general, "fma", a, b, c, k, t, i)) ++failures;
    ++checked;
  };
  const uint64_t implicit = uint64_t{1} << m;
  for (uint64_t i = 0; i < 100000 && failures < 10; ++i) {
    const uint64_t r = SplitMix64At(seed + 0xF3A + f.width, 3 * i),
                   q = SplitMix64At(seed + 0xF3A, 3 * i + 1),
                   u = SplitMix64At(seed + 0xF3A, 3 * i + 2);
    uint64_t frac_b = (q >> 16) & frac_mask, frac_c = (u >> 16) & frac_mask;
    // Runs of zeros (alignment borrows) in the operands as often as random bits.
    if ((u >> 1) & 1) frac_b &= ~(uint64_t{0x3F} << ((u >> 2) % p)) | 1;
    if ((u >> 8) & 1) frac_c &= ~(uint64_t{0x3F} << ((u >> 9) % p)) | 1;
    check(implicit | ((r >> 16) & frac_mask), implicit | frac_b, implicit | frac_c,
          1 + static_cast<int64_t>((q >> 8) % (max_field - 1)),
          1 + static_cast<int64_t>((r >> 8) % (max_field - 1)),
          static_cast<int64_t>(q % 127) - 63, u >> 61, static_cast<int>(1 + r % 32), i);
  }
  EXPECT_GT(checked, 20000);
  // The rare products a truncated alignment gets wrong under stochastic rounding, found by
  // search over the significand pairs of the narrow formats: a product P that the fast entry's
  // shift truncates by j <= 3 bits, nonzero, leaving a multiple of 2^(28 - m) (the lowest bit
  // stochastic rounding reads), so that the borrow of the exact difference with a larger
  // addend reaches the bits read (those go down to bit 28 - m when the difference's leading
  // bit is at 60, below an addend of fraction 0). In the entry's window P's last bit is at 61 - 2m - carry, so
  // the shift is j + 61 - 2m - carry = e_z - e_p: dd = -(j + 61 - 2m), and the cases around it.
  // float16 has two such pairs, (1141, 1838) with j = 3 (out of its exponent range) and
  // (1807, 2031) with j = 1; bfloat16 none (its products stay below 2^16).
  int hard = 0;
  if (p <= 11) {
    for (uint64_t sig_a = implicit; sig_a < 2 * implicit; ++sig_a) {
      for (uint64_t sig_b = sig_a; sig_b < 2 * implicit; ++sig_b) {
        const uint64_t product = sig_a * sig_b;
        for (int j = 1; j <= 3; ++j) {
          if ((product & ((uint64_t{1} << j) - 1)) == 0 ||
              ((product >> j) & ((uint64_t{1} << (28 - m)) - 1)) != 0) {
            continue;
          }
          ++hard;
          const int64_t center = -(j + 61 - 2 * m);
          for (int64_t dd = center - 2; dd <= center + 2; ++dd) {
            for (int64_t field_c = max_field - 1; field_c > max_field - 4; --field_c) {
              for (const int k : {32, 28 - m + 1, 28 - m + 4}) {
                for (uint64_t signs = 0; signs < 8; ++signs) {
                  for (int64_t field_a = 1; field_a <= 2; ++field_a) {
                    // An addend of fraction 0 puts a difference's leading bit one lower, where
                    // the bits read reach 28 - m.
                    for (const uint64_t sig_c : {implicit, implicit | ((signs * 0x9E37) & frac_mask)}) {
                      check(sig_a, sig_b, sig_c, field_a, field_c, dd, signs, k,
                            static_cast<uint64_t>(hard));
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  if (p == 11) {
    EXPECT_EQ(hard, 2);
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
