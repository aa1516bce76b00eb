// Error measures (error_measures.h) against hand-computed values. Every row's comment shows the
// arithmetic: the binade of x, ulp(x), y - x, and the quotient.
//
// Format parameters used (format_spec.h): float32 p = 24, emin = -126, emax = 127;
// float16 p = 11, emin = -14, emax = 15; float8_e4m3fn p = 4, emin = -6, emax = 8 (max 448 =
// 0x7e, NaN 0x7f); float8_e4m3fnuz p = 4, emin = -7, emax = 7 (max 240 = 0x7f, NaN 0x80);
// float8_e5m2 p = 3, emin = -14, emax = 15 (max 57344 = 0x7b, Inf 0x7c); float8_e8m0fnu p = 1,
// emin = -127 (0x7f = 1).
#include "oracles/error_measures.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "formats/text.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// An exact value from a hex-float string ("0x1.8p+3", "-0x1p-149", "0", "inf", "nan").
struct Exact {
  mpfr_t v;
  explicit Exact(const char* text) {
    mpfr_init2(v, 512);
    EXPECT_EQ(mpfr_set_str(v, text, 0, MPFR_RNDN), 0) << text;
  }
  ~Exact() { mpfr_clear(v); }
  Exact(const Exact&) = delete;
  Exact& operator=(const Exact&) = delete;
};

struct UlpRow {
  const FormatSpec& f;
  uint64_t y;
  const char* x;
  double expected;  // NaN: expect NaN.
};

TEST(ErrorMeasuresTest, UlpError) {
  const double kNan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<UlpRow> rows = {
      // ---- float32, normal range ----
      // x = 1 = 2^0 is a power of two: lower binade -1, ulp = 2^(-1 - 23) = 2^-24.
      // y = 1 + 2^-23: (2^-23) / 2^-24 = 2.
      {Float32(), 0x3F800001, "1", 2.0},
      // y = 1 - 2^-24 (0x3f7fffff): -2^-24 / 2^-24 = -1.
      {Float32(), 0x3F7FFFFF, "1", -1.0},
      // x = 1 + 2^-24 in [1, 2): ulp = 2^-23; y = 1: -2^-24 / 2^-23 = -0.5 (an RNE tie).
      {Float32(), 0x3F800000, "0x1.000001p0", -0.5},
      // x = 1.5: ulp 2^-23; y = 2: 0.5 / 2^-23 = 2^22 = 4194304.
      {Float32(), 0x40000000, "1.5", 4194304.0},
      // Negative x = -3 in binade 1: ulp 2^-22; y = -3 + 2^-22 (0xc03fffff): +1.
      {Float32(), 0xC03FFFFF, "-3", 1.0},
      // ---- zero exact value: ulp(0) = 2^(emin - p + 1) = 2^-149 ----
      {Float32(), 0x00000001, "0", 1.0},      // y = 2^-149.
      {Float32(), 0x80000001, "0", -1.0},     // y = -2^-149.
      {Float32(), 0x80000000, "0", 0.0},      // y = -0: error 0.
      {Float32(), 0x3F800000, "0", 0x1p149},  // y = 1: 1 / 2^-149.
      // ---- subnormals and the bottom of the normals ----
      // x = 2^-140 (subnormal): power of two, lower binade -141, max(-141, -126) = -126, ulp
      // 2^-149. y = 0x201 * 2^-149 = 2^-140 + 2^-149: +1.
      {Float32(), 0x00000201, "0x1p-140", 1.0},
      // x = 2^-126 = min normal, power of two: max(-127, -126) = -126, ulp 2^-149 (not 2^-150).
      // y = 0x00800001 = 2^-126 + 2^-149: +1.
      {Float32(), 0x00800001, "0x1p-126", 1.0},
      // x = 3 * 2^-150 (between subnormals 2^-149 and 2^-148): ulp 2^-149; y = 2^-148:
      // (4 - 3) * 2^-150 / 2^-149 = 0.5.
      {Float32(), 0x00000002, "0x3p-150", 0.5},
      // ---- overflow, measured continuously: Inf at 2^(emax + 1) = 2^128 ----
      // x = max = 2^128 - 2^104, binade 127, ulp 2^104; y = Inf = 2^128: 2^104 / 2^104 = 1.
      {Float32(), 0x7F800000, "0x1.fffffep127", 1.0},
      // x = 2^128 (beyond the range; power of two): lower binade 127, ulp 2^104; y = Inf: 0.
      {Float32(), 0x7F800000, "0x1p128", 0.0},
      // x = 2^128 + 2^127 (binade 128, ulp 2^105); y = max: (-2^127 - 2^104) / 2^105
      // = -4 - 0.5 = -4.5... exactly: -(2^127 + 2^104) / 2^105 = -(2^22 + 0.5) = -4194304.5.
      {Float32(), 0x7F7FFFFF, "0x1.8p128", -4194304.5},
      // y = -Inf = -2^128 against x = 1: (-2^128 - 1) / 2^-24 = -2^152 - 2^24 -> double -2^152.
      {Float32(), 0xFF800000, "1", -0x1p152},
      // ---- infinite exact value (Inf operands) ----
      {Float32(), 0x7F800000, "inf", 0.0},
      {Float32(), 0x7F7FFFFF, "inf", -kInf},
      {Float32(), 0xFF800000, "inf", -kInf},
      {Float32(), 0x7F800000, "-inf", kInf},
      // ---- NaN ----
      {Float32(), 0x7FC00000, "1", kNan},
      {Float32(), 0x3F800000, "nan", kNan},
      // ---- float16 ----
      // x = 1 + 2^-11 + 2^-30 in [1, 2): ulp 2^-10; y = 1: -(2^-11 + 2^-30) / 2^-10
      // = -0.5 - 2^-20.
      {Float16(), 0x3C00, "0x1.00200004p0", -0.5 - 0x1p-20},
      // y = Inf (0x7c00) = 2^16 against max 65504 = 2^16 - 2^5 (binade 15, ulp 2^5): 1.
      {Float16(), 0x7C00, "65504", 1.0},
      // ---- float8_e4m3fn: no Inf ----
      // x = 464 in binade 8 (256..512): ulp 2^(8 - 3) = 32; y = 448: -16 / 32 = -0.5.
      {Float8E4M3FN(), 0x7E, "464", -0.5},
      // x = 480: y = 448: -32 / 32 = -1.
      {Float8E4M3FN(), 0x7E, "480", -1.0},
      // x = 1000 beyond max, binade 9: ulp 64; y = 448: -552 / 64 = -8.625.
      {Float8E4M3FN(), 0x7E, "1000", -8.625},
      // x = 0: ulp 2^(-6 - 3) = 2^-9; y = 2^-9 (0x01): 1.
      {Float8E4M3FN(), 0x01, "0", 1.0},
      // x = 2^-10 (power of two): max(-11, -6) = -6, ulp 2^-9; y = -0 (0x80): -2^-10 / 2^-9.
      {Float8E4M3FN(), 0x80, "0x1p-10", -0.5},
      {Float8E4M3FN(), 0x7F, "1", kNan},  // NaN.
      {Float8E4M3FN(), 0xFF, "1", kNan},  // NaN (negative).
      // ---- float8_e4m3fnuz: no Inf, no -0, NaN 0x80 ----
      // x = 256 = 2^8 (power of two): lower binade 7, ulp 2^(7 - 3) = 16; y = 240: -16/16 = -1.
      {Float8E4M3FNUZ(), 0x7F, "256", -1.0},
      // x = -2^-11: max(-12, -7) = -7, ulp 2^(-7 - 3) = 2^-10; y = 0: 2^-11 / 2^-10 = 0.5.
      {Float8E4M3FNUZ(), 0x00, "-0x1p-11", 0.5},
      // x = 0: ulp 2^-10; y = 0x81 = -2^-10: -1.
      {Float8E4M3FNUZ(), 0x81, "0", -1.0},
      {Float8E4M3FNUZ(), 0x80, "0", kNan},
      // ---- float8_e5m2: Inf 0x7c at 2^16 ----
      // x = 57344 = 1.75 * 2^15, ulp 2^(15 - 2) = 8192; y = Inf = 65536: 8192 / 8192 = 1.
      {Float8E5M2(), 0x7C, "57344", 1.0},
      // ---- float8_e8m0fnu: p = 1, no zero, no sign ----
      // x = 1.5 in binade 0: ulp 2^(0 - 1 + 1) = 1; y = 1 (0x7f): -0.5.
      {Float8E8M0FNU(), 0x7F, "1.5", -0.5},
      // x = 2 (power of two): lower binade 0, ulp 1; y = 1: -1.
      {Float8E8M0FNU(), 0x7F, "2", -1.0},
      {Float8E8M0FNU(), 0xFF, "2", kNan},
  };
  for (const UlpRow& row : rows) {
    SCOPED_TRACE(
        absl::StrCat(std::string(row.f.name), " y = ", Describe(row.f, row.y), " x = ", row.x));
    Exact x(row.x);
    const double got = UlpError(row.f, row.y, x.v);
    if (std::isnan(row.expected)) {
      EXPECT_TRUE(std::isnan(got)) << got;
    } else {
      EXPECT_EQ(got, row.expected);
    }
  }
}

TEST(ErrorMeasuresTest, UlpErrorExactKeepsEveryBit) {
  // x = 1 + 2^-200 (binade 0, ulp 2^-23), y = 1: -2^-200 / 2^-23 = -2^-177 exactly.
  Exact x("1");
  mpfr_t e;
  {
    mpfr_t t;
    mpfr_init2(t, 2);
    mpfr_set_ui_2exp(t, 1, -200, MPFR_RNDN);
    mpfr_add(x.v, x.v, t, MPFR_RNDN);  // Exact at 512 bits.
    mpfr_clear(t);
  }
  mpfr_init2(e, 2);
  UlpErrorExact(Float32(), 0x3F800000, x.v, e);
  Exact want("-0x1p-177");
  EXPECT_EQ(mpfr_cmp(e, want.v), 0);
  // x = 1 + 2^-24 + 2^-300, y = 1 + 2^-23: (2^-24 - 2^-300) / 2^-23 = 0.5 - 2^-277.
  Exact x2("0x1.000001p0");
  mpfr_t t;
  mpfr_init2(t, 400);
  mpfr_set_ui_2exp(t, 1, -300, MPFR_RNDN);
  mpfr_add(x2.v, x2.v, t, MPFR_RNDN);  // Exact at 512 bits.
  UlpErrorExact(Float32(), 0x3F800001, x2.v, e);
  mpfr_set_ui_2exp(t, 1, -277, MPFR_RNDN);
  mpfr_set_d(want.v, 0.5, MPFR_RNDN);
  mpfr_sub(want.v, want.v, t, MPFR_RNDN);
  EXPECT_EQ(mpfr_cmp(e, want.v), 0);
  mpfr_clear(t);
  mpfr_clear(e);
}

TEST(ErrorMeasuresTest, UlpExponent) {
  Exact one("1"), three("3"), zero("0"), tiny("0x1p-149"), big("0x1p200");
  EXPECT_EQ(UlpExponent(Float32(), one.v), -24);  // Lower binade at a power of two.
  EXPECT_EQ(UlpExponent(Float32(), three.v), -22);
  EXPECT_EQ(UlpExponent(Float32(), zero.v), -149);
  EXPECT_EQ(UlpExponent(Float32(), tiny.v), -149);
  EXPECT_EQ(UlpExponent(Float32(), big.v), 199 - 23);  // Beyond the range: no cap.
  EXPECT_EQ(UlpExponent(BFloat16(), one.v), -8);       // p = 8: 2^(-1 - 7).
  EXPECT_EQ(UlpExponent(Float8E4M3FN(), zero.v), -9);
}

TEST(ErrorMeasuresTest, UlpErrorFromAccumulator) {
  // sum of float32 {1, 2^-24} = 1 + 2^-24; y = 1: -0.5; y = 1 + 2^-23: +0.5.
  const std::vector<uint64_t> x = {0x3F800000, 0x33800000};
  ExactAccumulator acc = ExactSum(Float32(), x);
  EXPECT_EQ(UlpError(Float32(), 0x3F800000, acc), -0.5);
  EXPECT_EQ(UlpError(Float32(), 0x3F800001, acc), 0.5);
  // Measured in bfloat16 (p = 8, ulp(1 + 2^-24) = 2^-7): y = 1 (0x3f80): -2^-24 / 2^-7 = -2^-17.
  EXPECT_EQ(UlpError(BFloat16(), 0x3F80, acc), -0x1p-17);
}

struct DistanceRow {
  const FormatSpec& f;
  uint64_t a;
  uint64_t b;
  std::optional<int64_t> expected;
};

TEST(ErrorMeasuresTest, UlpDistance) {
  const std::vector<DistanceRow> rows = {
      {Float32(), 0x3F800000, 0x3F800001, 1},   // Adjacent.
      {Float32(), 0x3F800001, 0x3F800000, -1},  // Signed.
      {Float32(), 0x80000000, 0x00000000, 0},   // -0 == +0.
      {Float32(), 0x80000001, 0x00000001, 2},   // -min, 0, +min.
      {Float32(), 0x7F7FFFFF, 0x7F800000, 1},   // max -> Inf.
      {Float32(), 0x3F7FFFFF, 0x3F800000, 1},   // Across a binade.
      {Float32(), 0x007FFFFF, 0x00800000, 1},   // Max subnormal -> min normal.
      // -Inf -> +Inf: 2 * 0x7f800000 = 4278190080.
      {Float32(), 0xFF800000, 0x7F800000, int64_t{4278190080}},
      {Float32(), 0x7FC00000, 0x3F800000, std::nullopt},
      {Float32(), 0x3F800000, 0xFFC00001, std::nullopt},
      // tfloat32: steps of 2^13 in the container: 0x3f800000 -> 0x3f802000 is 1.
      {TFloat32(), 0x3F800000, 0x3F802000, 1},
      {BFloat16(), 0x3F80, 0x4000, 0x80},  // 1 -> 2: 128 values (p = 8).
      // float8_e4m3fn: -448 (0xfe) -> 448 (0x7e): 2 * 126 = 252. -0 -> min subnormal: 1.
      {Float8E4M3FN(), 0xFE, 0x7E, 252},
      {Float8E4M3FN(), 0x80, 0x01, 1},
      {Float8E4M3FN(), 0x7F, 0x7E, std::nullopt},
      // float8_e4m3fnuz: -2^-10 (0x81) -> 2^-10 (0x01): 2. 0x80 is NaN.
      {Float8E4M3FNUZ(), 0x81, 0x01, 2},
      {Float8E4M3FNUZ(), 0x80, 0x01, std::nullopt},
      // float8_e5m2: max 0x7b -> Inf 0x7c: 1.
      {Float8E5M2(), 0x7B, 0x7C, 1},
      // float8_e8m0fnu (unsigned, no zero): 1 (0x7f) -> 2 (0x80): 1; 0xff NaN.
      {Float8E8M0FNU(), 0x7F, 0x80, 1},
      {Float8E8M0FNU(), 0x7F, 0xFF, std::nullopt},
      // Integers: -128 -> 127 in int8 is 255; int32 -1 -> 1 is 2; uint8 0 -> 255.
      {Int8(), 0x80, 0x7F, 255},
      {Int32(), 0xFFFFFFFF, 0x00000001, 2},
      {UInt8(), 0x00, 0xFF, 255},
  };
  for (const DistanceRow& row : rows) {
    SCOPED_TRACE(absl::StrCat(std::string(row.f.name), " ", HexBits(row.f, row.a), " -> ",
                              HexBits(row.f, row.b)));
    EXPECT_EQ(UlpDistance(row.f, row.a, row.b), row.expected);
  }
}

TEST(ErrorMeasuresTest, UlpDistanceExhaustiveE4M3FN) {
  // Walking the non-negative encodings 0x00..0x7e and the negative ones downward, each step is
  // one value: distance(-448, v) equals the rank of v in the ordered list of all 253 values.
  std::vector<uint64_t> ordered;
  for (int b = 0xFE; b >= 0x81; --b) ordered.push_back(static_cast<uint64_t>(b));
  for (int b = 0x00; b <= 0x7E; ++b) ordered.push_back(static_cast<uint64_t>(b));
  for (size_t i = 0; i < ordered.size(); ++i) {
    EXPECT_EQ(UlpDistance(Float8E4M3FN(), ordered[0], ordered[i]), static_cast<int64_t>(i));
  }
  EXPECT_EQ(UlpDistance(Float8E4M3FN(), 0x80, 0x00), 0);
}

TEST(ErrorMeasuresTest, RelativeError) {
  Exact one("1"), zero("0"), minus_two("-2"), max16("65504"), inf("inf"), nan("nan");
  EXPECT_EQ(RelativeError(Float32(), 0x3F800001, one.v), 0x1p-23);  // 2^-23 / 1.
  EXPECT_EQ(RelativeError(Float32(), 0x3F800000, one.v), 0.0);
  EXPECT_EQ(RelativeError(Float32(), 0x00000000, zero.v), 0.0);   // 0 vs 0.
  EXPECT_EQ(RelativeError(Float32(), 0x80000000, zero.v), 0.0);   // -0 vs 0.
  EXPECT_EQ(RelativeError(Float32(), 0x00000001, zero.v), kInf);  // Non-zero vs 0.
  // |-1 - -2| / 2 = 0.5.
  EXPECT_EQ(RelativeError(Float32(), 0xBF800000, minus_two.v), 0.5);
  // float16 Inf = 2^16 vs 65504: 32 / 65504 = 1/2047.
  EXPECT_EQ(RelativeError(Float16(), 0x7C00, max16.v), 1.0 / 2047.0);
  EXPECT_EQ(RelativeError(Float32(), 0x7F800000, inf.v), 0.0);
  EXPECT_EQ(RelativeError(Float32(), 0x3F800000, inf.v), kInf);
  EXPECT_TRUE(std::isnan(RelativeError(Float32(), 0x3F800000, nan.v)));
  EXPECT_TRUE(std::isnan(RelativeError(Float8E4M3FNUZ(), 0x80, one.v)));
  // float8_e4m3fn 448 vs 464: 16 / 464 = 1/29.
  Exact x464("464");
  EXPECT_EQ(RelativeError(Float8E4M3FN(), 0x7E, x464.v), 1.0 / 29.0);
}

TEST(ErrorMeasuresTest, BoundNormalized) {
  // a = {1, 2^-24}, b = {1, 1}: x = 1 + 2^-24 = S. y = 1 (RNE): |y - x| = 2^-24, u = 2^-24:
  // 2^-24 / (2^-24 * (1 + 2^-24)) = 1 / (1 + 2^-24).
  {
    const std::vector<uint64_t> a = {0x3F800000, 0x33800000}, b = {0x3F800000, 0x3F800000};
    ExactAccumulator x = ExactDot(Float32(), a, Float32(), b);
    ExactAccumulator s = ExactAbsDot(Float32(), a, Float32(), b);
    EXPECT_EQ(BoundNormalizedError(Float32(), 0x3F800000, x, s, Float32()), 1.0 / (1.0 + 0x1p-24));
    EXPECT_EQ(BoundNormalizedError(Float32(), 0x3F800000, x, s, Float64()),
              0x1p29 / (1.0 + 0x1p-24));  // u = 2^-53: 2^-24 / 2^-53 = 2^29.
  }
  // Cancellation: a = {1, -1, 2^-30}, b = {1, 1, 1}: x = 2^-30, S = 2 + 2^-30. y = 0:
  // 2^-30 / (2^-24 * (2 + 2^-30)) = 2^-7 / (1 + 2^-31). In ulps of x it is huge: x = 2^-30 is
  // a power of two, lower binade -31, ulp 2^(-31 - 23) = 2^-54; (0 - 2^-30) / 2^-54 = -2^24.
  {
    const std::vector<uint64_t> a = {0x3F800000, 0xBF800000, 0x30800000};
    const std::vector<uint64_t> b = {0x3F800000, 0x3F800000, 0x3F800000};
    ExactAccumulator x = ExactDot(Float32(), a, Float32(), b);
    ExactAccumulator s = ExactAbsDot(Float32(), a, Float32(), b);
    EXPECT_EQ(BoundNormalizedError(Float32(), 0x00000000, x, s, Float32()),
              0x1p-7 / (1.0 + 0x1p-31));
    EXPECT_EQ(UlpError(Float32(), 0x00000000, x), -0x1p24);
  }
  // S = 0 (a = {0}, b = {5}): x = 0; y = 0 -> 0, y = 2^-149 -> +inf.
  {
    const std::vector<uint64_t> a = {0x00000000}, b = {0x40A00000};
    ExactAccumulator x = ExactDot(Float32(), a, Float32(), b);
    ExactAccumulator s = ExactAbsDot(Float32(), a, Float32(), b);
    EXPECT_EQ(BoundNormalizedError(Float32(), 0x00000000, x, s, Float32()), 0.0);
    EXPECT_EQ(BoundNormalizedError(Float32(), 0x00000001, x, s, Float32()), kInf);
  }
  // Sum with a bfloat16 accumulator (u = 2^-8): x = S = 1, y = 1 + 2^-8 (float32 0x3f808000):
  // 2^-8 / 2^-8 = 1.
  {
    const std::vector<uint64_t> v = {0x3F800000};
    ExactAccumulator x = ExactSum(Float32(), v);
    ExactAccumulator s = ExactAbsSum(Float32(), v);
    EXPECT_EQ(BoundNormalizedError(Float32(), 0x3F808000, x, s, BFloat16()), 1.0);
  }
  // Sums of mixed signs: x = {3, -1} -> x = 2, S = 4; y = 2 + 2^-22 (0x40000001): 2^-22 /
  // (2^-24 * 4) = 1.
  {
    const std::vector<uint64_t> v = {0x40400000, 0xBF800000};
    ExactAccumulator x = ExactSum(Float32(), v);
    ExactAccumulator s = ExactAbsSum(Float32(), v);
    EXPECT_EQ(BoundNormalizedError(Float32(), 0x40000001, x, s, Float32()), 1.0);
  }
  // NaN y, and an Inf in the inputs (S = Inf): NaN.
  {
    const std::vector<uint64_t> v = {0x7F800000, 0x3F800000};
    ExactAccumulator x = ExactSum(Float32(), v);
    ExactAccumulator s = ExactAbsSum(Float32(), v);
    EXPECT_TRUE(std::isnan(BoundNormalizedError(Float32(), 0x7F800000, x, s, Float32())));
    EXPECT_TRUE(std::isnan(BoundNormalizedError(Float32(), 0x7FC00000, x, x, Float32())));
  }
}

TEST(ErrorMeasuresTest, AbsBits) {
  EXPECT_EQ(AbsBits(Float32(), 0xBF800000), 0x3F800000u);
  EXPECT_EQ(AbsBits(Float32(), 0xFFC00000), 0xFFC00000u);   // NaN unchanged.
  EXPECT_EQ(AbsBits(TFloat32(), 0xBF802000), 0x3F802000u);  // Sign at bit 31 of the container.
  EXPECT_EQ(AbsBits(Float8E4M3FNUZ(), 0x80), 0x80u);        // The fnuz NaN stays NaN.
  EXPECT_EQ(AbsBits(Float8E4M3FNUZ(), 0x81), 0x01u);
  EXPECT_EQ(AbsBits(Float8E4M3FN(), 0xFE), 0x7Eu);
  EXPECT_EQ(AbsBits(Float8E8M0FNU(), 0x80), 0x80u);                // Unsigned.
  const std::vector<uint64_t> a = {0xBF800000}, b = {0x40000000};  // -1 * 2.
  EXPECT_EQ(ExactAbsDot(Float32(), a, Float32(), b).Round(Float32(), OpEnv{}).bits, 0x40000000u);
}

}  // namespace
}  // namespace fpconform
