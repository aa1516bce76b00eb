// bfloat16 and float16 against the MPFR oracle: all 65,536 values through sqrt (every mode and
// variant) and through conversion to every other format; add, mul, div, fma on boundary
// operands crossed with each other plus random cases (5 million per op and format, so >= 10
// million per op in total), spread across every rounding mode, sat, ftz, daz and tininess.
// Random cases derive from (FPCONFORM_SEED, case index).
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "conformance/oracle_check.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"

namespace fpconform::conformance {
namespace {

constexpr uint64_t kRandomPerOp = 5'000'000;
constexpr uint64_t kRandomSub = 1'000'000;

class Fp16 : public testing::TestWithParam<const FormatSpec*> {
 protected:
  const FormatSpec& F() const { return *GetParam(); }
};

TEST_P(Fp16, SqrtAllValues) {
  const FormatSpec& f = F();
  const uint64_t seed = SuiteSeed("fp16 sqrt");
  CheckAll(
      "fp16 sqrt", std::string(f.name) + " sqrt all values", 65536,
      [&](uint64_t a, FailureLog& l) {
        Case k;
        k.f = &f;
        k.op = Op::kSqrt;
        k.a = a;
        constexpr EnvVariant kVariants[] = {
            {},
            {.flush_to_zero = true, .tininess = Tininess::kBeforeRounding},
            {.denormals_are_zero = true}};
        int64_t count = CheckModeVariants(k, kDeterministicModes, kVariants, seed, a, l);
        CaseRng rng(seed ^ SweepTag(f, Op::kSqrt, 4), a);
        for (int j = 0; j < 2; ++j) {
          k.env = RandomStochasticEnv(rng);
          CheckCase(k, seed, a, l);
          ++count;
        }
        return count;
      });
}

TEST_P(Fp16, ConvertAllValuesToEveryFormat) {
  const FormatSpec& f = F();
  const uint64_t seed = SuiteSeed("fp16 convert");
  FailureLog log;
  const int64_t n = ConvertAllValues(f, seed, log);
  log.Report("fp16 convert");
  PrintCount(std::string(f.name) + " convert all values to every format", n, log);
}

void BoundaryAndRandom(const FormatSpec& f, Op op, uint64_t random_cases) {
  CheckBoundaryAndRandom(f, op, SuiteSeed("fp16 ops"), random_cases, 1'000'000);
}

TEST_P(Fp16, Add) { BoundaryAndRandom(F(), Op::kAdd, kRandomPerOp); }
TEST_P(Fp16, Sub) { BoundaryAndRandom(F(), Op::kSub, kRandomSub); }
TEST_P(Fp16, Mul) { BoundaryAndRandom(F(), Op::kMul, kRandomPerOp); }
TEST_P(Fp16, Div) { BoundaryAndRandom(F(), Op::kDiv, kRandomPerOp); }
TEST_P(Fp16, Fma) { BoundaryAndRandom(F(), Op::kFma, kRandomPerOp); }

INSTANTIATE_TEST_SUITE_P(Fp16Formats, Fp16, testing::Values(&BFloat16(), &Float16()), FormatParamName);

}  // namespace
}  // namespace fpconform::conformance
