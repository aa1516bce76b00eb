// formats/RoundPack (the single rounding routine that the accumulation models call directly)
// against the MPFR oracle's rounding, over its whole input domain: every float format, random
// environments (every rounding mode, sat, ftz, tininess), significands of p+34 to 128 bits with
// tie, all-ones and random low-bit patterns, with and without sticky, and exponents from far
// below the subnormal range to far above max finite. Cases derive from (FPCONFORM_SEED, index).
#include <cstdint>
#include <sstream>
#include <string>

#include <mpfr.h>

#include <gtest/gtest.h>

#include "conformance/oracle_check.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "formats/round_pack.h"
#include "formats/text.h"
#include "oracles/mpfr_oracle.h"

namespace fpconform::conformance {
namespace {

constexpr uint64_t kCasesPerFormat = 1'000'000;

// value = sig * 2^exponent, exactly, in x (128 bits).
void SetExact(mpfr_ptr x, uint128 sig, int32_t exponent) {
  mpfr_t lo;
  mpfr_init2(lo, 64);
  mpfr_set_ui_2exp(x, static_cast<uint64_t>(sig >> 64), exponent + 64, MPFR_RNDN);
  mpfr_set_ui_2exp(lo, static_cast<uint64_t>(sig), exponent, MPFR_RNDN);
  mpfr_add(x, x, lo, MPFR_RNDN);  // Exact: both fit in 128 bits at the same scale.
  mpfr_clear(lo);
}

std::string Hex128(uint128 v) {
  std::ostringstream o;
  o << "0x" << std::hex << static_cast<uint64_t>(v >> 64) << "'" << static_cast<uint64_t>(v);
  return o.str();
}

class RoundPackOracle : public testing::TestWithParam<const FormatSpec*> {};

TEST_P(RoundPackOracle, AgreesWithMpfrRounding) {
  const FormatSpec& f = *GetParam();
  const uint64_t seed = SuiteSeed("round_pack oracle");
  const int p = Precision(f);
  CheckAll(
      "RoundPack", std::string(f.name) + " RoundPack", Scaled(kCasesPerFormat),
      [&](uint64_t i, FailureLog& l) {
        thread_local struct X {
          mpfr_t v;
          X() { mpfr_init2(v, 128); }
          ~X() { mpfr_clear(v); }
        } x;
        CaseRng rng(seed ^ SweepTag(f, Op::kConvert, 6), i);
        OpEnv env = RandomEnv(rng);
        env.denormals_are_zero = false;  // No operands.
        const int width = p + 34 + static_cast<int>(rng.Below(static_cast<uint64_t>(128 - p - 33)));
        uint128 sig = (uint128{rng.Next()} << 64) | rng.Next();
        if (width < 128) sig &= (uint128{1} << width) - 1;
        sig |= uint128{1} << (width - 1);
        const uint64_t pattern = rng.Below(8);
        const int low = width - p - 1;  // Bits below the kept p and the round bit.
        if (pattern == 0) sig = (sig >> low) << low;                   // Round bit only.
        if (pattern == 1) sig = ((sig >> (low + 1)) << (low + 1)) | (uint128{1} << low);  // Tie.
        if (pattern == 2) sig |= (uint128{1} << (width - 1)) - 1;      // All ones.
        const bool sticky = rng.OneIn(2);
        const bool sign = f.has_sign ? rng.OneIn(2) : rng.OneIn(16);
        // Exponent of the leading bit: mostly around the subnormal range and max finite.
        const int64_t lo_e = MinSubnormalExponent(f) - 6;
        const int64_t hi_e = Emax(f) + 3;
        int64_t lead;
        const uint64_t where = rng.Below(8);
        if (where < 3) {
          lead = Emin(f) - p - 3 + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(p) + 8));
        } else if (where < 5) {
          lead = Emax(f) - 2 + static_cast<int64_t>(rng.Below(6));
        } else if (where < 7) {
          lead = lo_e + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(hi_e - lo_e + 1)));
        } else {
          const uint64_t span = static_cast<uint64_t>(hi_e - lo_e + 600);
          lead = lo_e - 300 + static_cast<int64_t>(rng.Below(span));  // Far out of range.
        }
        const int32_t exponent = static_cast<int32_t>(lead - (width - 1));
        SetExact(x.v, sig, exponent);
        const OpResult want = MpfrRoundToFormat(f, sign, x.v, sticky, env);
        const OpResult got = RoundPack(f, sign, exponent, sig, sticky, env);
        Tally& t = ThreadTally();
        for (int b = 0; b < 5; ++b) t.counts[b] += (want.flags >> b) & 1;
        const bool nan = MpfrIsNanBits(f, want.bits);
        t.counts[5] += nan;
        t.counts[6] += want.flags == 0 && !nan;
        const bool same = want.flags == got.flags &&
                          (nan ? IsNanBits(f, got.bits) : want.bits == got.bits);
        if (!same) {
          std::ostringstream o;
          o << f.name << " RoundPack " << EnvName(env) << "\n  sign " << sign << " exponent "
            << exponent << " significand " << Hex128(sig) << " sticky " << sticky
            << "\n  expected (MPFR)  " << Describe(f, want.bits) << " flags "
            << FlagsToString(want.flags) << "\n  got (formats)    " << Describe(f, got.bits)
            << " flags " << FlagsToString(got.flags) << "\n  seed 0x" << std::hex << seed
            << std::dec << " case " << i;
          l.Add(o.str());
        }
        return int64_t{1};
      });
}

INSTANTIATE_TEST_SUITE_P(AllFloatFormats, RoundPackOracle, testing::ValuesIn(FloatFormats()), FormatParamName);

}  // namespace
}  // namespace fpconform::conformance
