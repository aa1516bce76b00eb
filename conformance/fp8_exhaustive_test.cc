// Every 8-bit float format against the MPFR oracle, exhaustively: all 65,536 operand pairs of
// add, sub, mul, div in the six deterministic modes with and without sat (plus ftz/daz/tininess
// variants and a stochastic-rounding pass), sqrt of all 256 values in every mode, fma on all
// pairs with a spec-derived addend set, and every value converted to every other format.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conformance/oracle_check.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"

namespace fpconform::conformance {
namespace {

class Fp8Exhaustive : public testing::TestWithParam<const FormatSpec*> {
 protected:
  const FormatSpec& F() const { return *GetParam(); }
};

std::vector<const FormatSpec*> Fp8Formats() {
  return {&Float8E4M3FN(), &Float8E5M2(),  &Float8E4M3FNUZ(),
          &Float8E5M2FNUZ(), &Float8E4M3(), &Float8E8M0FNU()};
}

constexpr Op kBinaryOps[] = {Op::kAdd, Op::kSub, Op::kMul, Op::kDiv};

// The case of op on `pair` in f: a = its high byte, b = its low byte.
Case PairCase(const FormatSpec& f, Op op, uint64_t pair) {
  Case k;
  k.f = &f;
  k.op = op;
  k.a = pair >> 8;
  k.b = pair & 0xFF;
  return k;
}

// Checks the one-operand case k of value a (sqrt, convert) in the six modes x {none, sat, ftz,
// daz}, then in sr<b> for each b of sr_bits with `draws` values of r each (SplitMix64At((a *
// stride + j) ^ SplitMix64Mix(seed ^ kDefaultSeed), 0), j < draws: the default seed's mask is
// 0); returns the number of cases.
int64_t CheckOneOperandModes(Case& k, uint64_t a, std::initializer_list<int> sr_bits, uint64_t draws,
                             uint64_t stride, uint64_t seed, FailureLog& log) {
  constexpr EnvVariant kVariants[] = {
      {}, {.saturate = true}, {.flush_to_zero = true}, {.denormals_are_zero = true}};
  int64_t n = CheckModeVariants(k, kDeterministicModes, kVariants, 0, a, log);
  const uint64_t mask = SplitMix64Mix(seed ^ kDefaultSeed);
  for (int bits : sr_bits) {
    for (uint64_t j = 0; j < draws; ++j) {
      k.env = ModeEnv(Rounding::kStochastic);
      k.env.sr_bits = bits;
      k.env.sr_random = SplitMix64At((a * stride + j) ^ mask, 0);
      CheckCase(k, seed, a, log);
      ++n;
    }
  }
  return n;
}

// All pairs x {add, sub, mul, div} x six modes x {no sat, sat}.
TEST_P(Fp8Exhaustive, BinaryOpsAllPairsAllModes) {
  const FormatSpec& f = F();
  CheckAll(
      "fp8 binary ops", std::string(f.name) + " add/sub/mul/div all pairs x 6 modes x sat", 65536,
      [&](uint64_t pair, FailureLog& l) {
        constexpr EnvVariant kNoSatAndSat[] = {{}, {.saturate = true}};
        int64_t count = 0;
        for (Op op : kBinaryOps) {
          Case k = PairCase(f, op, pair);
          count += CheckModeVariants(k, kDeterministicModes, kNoSatAndSat, 0, pair, l);
        }
        return count;
      });
}

// All pairs x {add, sub, mul, div} under ftz, daz, tininess before rounding (rne and rup), and
// one stochastic rounding per pair and op with k and r drawn from (seed, pair).
TEST_P(Fp8Exhaustive, BinaryOpsAllPairsEnvVariants) {
  const FormatSpec& f = F();
  const uint64_t seed = SuiteSeed("fp8 env variants");
  CheckAll(
      "fp8 env variants",
      std::string(f.name) + " add/sub/mul/div all pairs x ftz/daz/before/sr", 65536,
      [&](uint64_t pair, FailureLog& l) {
        constexpr Rounding kModes[] = {Rounding::kNearestEven, Rounding::kUpward};
        constexpr EnvVariant kVariants[] = {
            {.flush_to_zero = true},
            {.denormals_are_zero = true},
            {.tininess = Tininess::kBeforeRounding},
            {.flush_to_zero = true, .tininess = Tininess::kBeforeRounding}};
        int64_t count = 0;
        CaseRng rng(seed, pair);
        for (Op op : kBinaryOps) {
          Case k = PairCase(f, op, pair);
          count += CheckModeVariants(k, kModes, kVariants, seed, pair, l);
          k.env = ModeEnv(Rounding::kStochastic);
          k.env.sr_bits = 1 + static_cast<int>(rng.Below(8));
          k.env.sr_random = rng.Next();
          k.env.saturate = rng.OneIn(2);
          CheckCase(k, seed, pair, l);
          ++count;
        }
        return count;
      });
}

// sqrt of all 256 values: six modes x sat, sr<k> for k in {1, 2, 3, 4, 8, 32} with 16 values of
// r each, and ftz/daz.
TEST_P(Fp8Exhaustive, SqrtAllValuesAllModes) {
  const FormatSpec& f = F();
  const uint64_t seed = SuiteSeed("fp8 sqrt");
  CheckAll("fp8 sqrt", std::string(f.name) + " sqrt all values x all modes", 256,
           [&](uint64_t a, FailureLog& l) {
             Case k;
             k.f = &f;
             k.op = Op::kSqrt;
             k.a = a;
             return CheckOneOperandModes(k, a, {1, 2, 3, 4, 8, 32}, 16, 64, seed, l);
           });
}

// The spec-derived addend set: +-0, +-min subnormal, +-max subnormal, +-min normal, +-1,
// +-max finite, NaN, +-Inf where present.
std::vector<uint64_t> AddendSet(const FormatSpec& f) {
  std::vector<uint64_t> out;
  auto both = [&](uint64_t bits) {
    out.push_back(bits);
    if (f.has_sign) out.push_back(bits | SignBit(f));
  };
  if (f.has_zero) both(ZeroBits(f));
  if (f.has_subnormals) {
    both(MinSubnormalBits(f));
    both(MinNormalBits(f) - 1);  // Max subnormal.
  }
  both(MinNormalBits(f));
  both(OneBits(f));
  both(MaxFiniteBits(f));
  if (f.nonfinite == NonFinite::kIeee) {
    both(InfBits(f));
    out.push_back(InfBits(f) | (uint64_t{1} << (f.fraction_bits - 1)));  // qNaN.
  } else if (f.nan_encoding == NanEncoding::kNegativeZero) {
    out.push_back(SignBit(f));
  } else {
    out.push_back(0xFF >> (f.has_sign ? 1 : 0));  // All-ones NaN.
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// fma on all pairs x the addend set x six modes.
TEST_P(Fp8Exhaustive, FmaAllPairsSpecAddends) {
  const FormatSpec& f = F();
  const std::vector<uint64_t> addends = AddendSet(f);
  CheckAll(
      "fp8 fma",
      std::string(f.name) + " fma all pairs x " + std::to_string(addends.size()) +
          " addends x 6 modes",
      65536,
      [&](uint64_t pair, FailureLog& l) {
        int64_t count = 0;
        Case k = PairCase(f, Op::kFma, pair);
        for (uint64_t c : addends) {
          k.c = c;
          for (Rounding r : kDeterministicModes) {
            k.env = ModeEnv(r);
            k.env.saturate = ((pair ^ c) & 1) != 0;  // Half the cases with sat.
            CheckCase(k, 0, pair, l);
            ++count;
          }
        }
        return count;
      });
}

// Every value to every other float format and to the integer formats: six modes plus sr, with
// and without sat, and ftz/daz.
TEST_P(Fp8Exhaustive, ConvertEveryValueToEveryFormat) {
  const FormatSpec& f = F();
  const uint64_t seed = SuiteSeed("fp8 convert");
  std::vector<const FormatSpec*> targets;
  for (const FormatSpec* t : FloatFormats()) {
    if (t != &f) targets.push_back(t);
  }
  for (const FormatSpec* t : IntegerFormats()) targets.push_back(t);
  // Index i: value i % 256 to targets[i / 256].
  CheckAll("fp8 convert", std::string(f.name) + " convert to every format", targets.size() * 256,
           [&](uint64_t i, FailureLog& l) {
             Case k;
             k.op = Op::kConvert;
             k.from = &f;
             k.f = targets[i / 256];
             k.a = i % 256;
             return CheckOneOperandModes(k, k.a, {1, 3, 8}, 4, 16, seed, l);
           });
}

INSTANTIATE_TEST_SUITE_P(AllFp8, Fp8Exhaustive, testing::ValuesIn(Fp8Formats()), FormatParamName);

}  // namespace
}  // namespace fpconform::conformance
