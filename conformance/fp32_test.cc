// float32 against the MPFR oracle: TestFloat-style boundary operands (exponents around the
// subnormal range, emin, 1 and emax, Inf and NaN, crossed with significand patterns 0, 1, all
// ones, top bit, all ones but the last, top bit + 1, random) crossed with each other for add,
// sub, mul, div, fma and sqrt, then 10 million random cases per op in every rounding mode with
// sat, ftz, daz and tininess drawn per case. tfloat32 and float64 get smaller random sweeps.
// Random cases derive from (FPCONFORM_SEED, case index).
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conformance/oracle_check.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"

namespace fpconform::conformance {
namespace {

constexpr uint64_t kFloat32RandomPerOp = 10'000'000;
constexpr uint64_t kOtherRandomPerOp = 1'000'000;

struct Param {
  const FormatSpec* f;
  Op op;
  uint64_t random_cases;
};

class BoundaryAndRandom : public testing::TestWithParam<Param> {};

TEST_P(BoundaryAndRandom, AgreesWithMpfr) {
  const Param& p = GetParam();
  CheckBoundaryAndRandom(*p.f, p.op, SuiteSeed("fp32 ops"), p.random_cases, 2'000'000);
}

std::vector<Param> Params() {
  std::vector<Param> out;
  for (Op op : {Op::kAdd, Op::kSub, Op::kMul, Op::kDiv, Op::kFma, Op::kSqrt}) {
    out.push_back({&Float32(), op, kFloat32RandomPerOp});
  }
  for (const FormatSpec* f : {&TFloat32(), &Float64()}) {
    for (Op op : {Op::kAdd, Op::kSub, Op::kMul, Op::kDiv, Op::kFma, Op::kSqrt}) {
      out.push_back({f, op, kOtherRandomPerOp});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Ops, BoundaryAndRandom, testing::ValuesIn(Params()),
                         [](const testing::TestParamInfo<Param>& info_) {
                           return std::string(info_.param.f->name) + "_" +
                                  OpName(info_.param.op);
                         });

// TestFloat's underflow corner 2^-126 * (1 - 2^-24) = 2^-126 - 2^-150, in every deterministic
// mode, both tininess modes, with and without ftz.
TEST(Fp32Corner, TestFloatUnderflowCorner) {
  FailureLog log;
  constexpr EnvVariant kVariants[] = {
      {},
      {.tininess = Tininess::kBeforeRounding},
      {.flush_to_zero = true},
      {.flush_to_zero = true, .tininess = Tininess::kBeforeRounding}};
  int64_t n = 0;
  for (uint64_t sign : {uint64_t{0}, uint64_t{0x80000000}}) {
    Case k;
    k.f = &Float32();
    k.op = Op::kMul;
    k.a = 0x00800000 | sign;
    k.b = 0x3F7FFFFF;
    n += CheckModeVariants(k, kDeterministicModes, kVariants, 0, sign >> 31, log);
  }
  // The unambiguous value of the corner (IEEE 754-2019 §7.5, tininess after rounding).
  OpEnv env;
  const OpResult want = MpfrMul(Float32(), 0x00800000, 0x3F7FFFFF, env);
  EXPECT_EQ(want.bits, 0x00800000u);
  EXPECT_EQ(want.flags, kUnderflow | kInexact);
  log.Report("TestFloat corner");
  PrintCount("float32 TestFloat underflow corner", n, log);
}

}  // namespace
}  // namespace fpconform::conformance

namespace fpconform::conformance {
namespace {

// Integer sources: every int8 and uint8 value, and 1 million random int32 values (a third of
// them near powers of two, where rounding to the narrow formats ties), to every float format
// and every integer format, in random environments.
TEST(IntegerSources, ToEveryFormat) {
  const uint64_t seed = SuiteSeed("integer sources");
  std::vector<const FormatSpec*> targets = FloatFormats();
  for (const FormatSpec* t : IntegerFormats()) targets.push_back(t);
  FailureLog log;
  int64_t n = 0;
  for (const FormatSpec* from : {&Int8(), &UInt8(), &Int32()}) {
    const uint64_t count = from->width == 8 ? 256 : Scaled(1'000'000);
    n += ParallelCheck(
        count,
        [&](uint64_t i, FailureLog& l) {
          CaseRng rng(seed ^ SweepTag(*from, Op::kConvert, 5), i);
          uint64_t v = i;
          if (from->width == 32) {
            v = rng.Next() >> rng.Below(64);
            if (rng.OneIn(3)) {
              const uint64_t p2 = uint64_t{1} << rng.Below(31);
              v = p2 + (rng.Below(16)) - 8;
            }
            if (rng.OneIn(2)) v = 0 - v;
            v &= 0xFFFFFFFFu;
          }
          int64_t c = 0;
          Case k;
          k.op = Op::kConvert;
          k.from = from;
          k.a = v;
          for (const FormatSpec* to : targets) {
            k.f = to;
            k.env = RandomEnv(rng);
            CheckCase(k, seed, i, l);
            ++c;
          }
          return c;
        },
        log);
  }
  log.Report("integer sources");
  PrintCount("int8/uint8/int32 to every format", n, log);
}

}  // namespace
}  // namespace fpconform::conformance
