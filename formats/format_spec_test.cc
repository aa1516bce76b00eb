// The derived limits of every row, pinned against the numbers in IEEE 754-2019 Table 3.5, the OCP
// OFP8 r1.0 Table 1, and the ml_dtypes / OCP MX definitions. Each expected value below is the
// published figure, written as an exact decimal.
#include "formats/format_spec.h"

#include <string>

#include "formats/text.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

struct LimitRow {
  std::string_view format;
  const char* max_finite;
  const char* min_normal;
  const char* min_subnormal;
  int epsilon_exponent;  // epsilon = 2^this.
  uint64_t max_bits;
};

// clang-format off
const LimitRow kLimits[] = {
  // IEEE 754 binary32: max (2-2^-23)*2^127, min normal 2^-126, min subnormal 2^-149.
  {"float32", "3.4028234663852885981170418348451692544e+38",
   "1.1754943508222875079687365372222456778186655567720875215087517062784172594547271728515625e-38",
   "1.40129846432481707092372958328991613128026194187651577175706828388979108268586060148663818836212158203125e-45",
   -23, 0x7F7FFFFF},
  // IEEE 754 binary16: max 65504, min normal 2^-14, min subnormal 2^-24.
  {"float16", "65504", "0.00006103515625", "5.9604644775390625e-8", -10, 0x7BFF},
  // bfloat16: max (2-2^-7)*2^127.
  {"bfloat16", "3.3895313892515354759047080037148786688e+38",
   "1.1754943508222875079687365372222456778186655567720875215087517062784172594547271728515625e-38",
   "9.18354961579912115600575419704879435795832466228193376178712270530013483949005603790283203125e-41",
   -7, 0x7F7F},
  // TF32: float32 range, 10 fraction bits.
  {"tfloat32", "3.40116213421465348979261631549233168384e+38",
   "1.1754943508222875079687365372222456778186655567720875215087517062784172594547271728515625e-38",
   "1.14794370197489014450071927463109929474479058278524172022339033816251685493625700473785400390625e-41", -10, 0x7F7FE000},
  // OCP OFP8 Table 1, E4M3: max 448 = S.1111.110, min normal 2^-6, min subnormal 2^-9.
  {"float8_e4m3fn", "448", "0.015625", "0.001953125", -3, 0x7E},
  // OCP OFP8 Table 1, E5M2: max 57344 = S.11110.11, min normal 2^-14, min subnormal 2^-16.
  {"float8_e5m2", "57344", "0.00006103515625", "0.0000152587890625", -2, 0x7B},
  // ml_dtypes float8_e4m3fnuz: bias 8, max 240, min normal 2^-7, min subnormal 2^-10.
  {"float8_e4m3fnuz", "240", "0.0078125", "0.0009765625", -3, 0x7F},
  // ml_dtypes float8_e5m2fnuz: bias 16, max 57344, min normal 2^-15, min subnormal 2^-17.
  {"float8_e5m2fnuz", "57344", "0.000030517578125", "0.00000762939453125", -2, 0x7F},
  // IEEE-like E4M3: max 240 = S.1110.111, Inf S.1111.000.
  {"float8_e4m3", "240", "0.015625", "0.001953125", -3, 0x77},
  // OCP MX E8M0: 2^127 .. 2^-127.
  {"float8_e8m0fnu", "1.70141183460469231731687303715884105728e+38",
   "5.8774717541114375398436826861112283890933277838604376075437585313920862972736358642578125e-39",
   "5.8774717541114375398436826861112283890933277838604376075437585313920862972736358642578125e-39",
   0, 0xFE},
};
// clang-format on

TEST(FormatSpecTest, DerivedLimitsMatchPublishedValues) {
  for (const LimitRow& row : kLimits) {
    SCOPED_TRACE(std::string(row.format));
    const FormatSpec* f = FindFormat(row.format);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(MaxFiniteBits(*f), row.max_bits);
    EXPECT_EQ(ExactDecimal(*f, MaxFiniteBits(*f)), row.max_finite);
    EXPECT_EQ(ExactDecimal(*f, MinNormalBits(*f)), row.min_normal);
    EXPECT_EQ(ExactDecimal(*f, MinSubnormalBits(*f)), row.min_subnormal);
    EXPECT_EQ(EpsilonExponent(*f), row.epsilon_exponent);
  }
}

TEST(FormatSpecTest, SpecialEncodings) {
  // OCP OFP8 Table 1: E5M2 Inf = S.11111.00; E4M3 has none.
  EXPECT_EQ(InfBits(Float8E5M2()), 0x7Cu);
  EXPECT_EQ(InfBits(Float8E5M2(), true), 0xFCu);
  EXPECT_EQ(InfBits(Float8E4M3()), 0x78u);
  EXPECT_EQ(InfBits(Float32()), 0x7F800000u);
  EXPECT_EQ(InfBits(TFloat32(), true), 0xFF800000u);
  // fnuz formats have no -0: the pattern 0x80 is their NaN.
  EXPECT_EQ(ZeroBits(Float8E4M3FNUZ(), true), 0x00u);
  EXPECT_EQ(ZeroBits(Float8E4M3FN(), true), 0x80u);
  EXPECT_EQ(OneBits(Float8E4M3FN()), 0x38u);   // 0.0111.000
  EXPECT_EQ(OneBits(Float8E4M3FNUZ()), 0x40u); // bias 8: 0.1000.000
  EXPECT_EQ(OneBits(Float8E8M0FNU()), 0x7Fu);
  EXPECT_EQ(OneBits(BFloat16()), 0x3F80u);
}

TEST(FormatSpecTest, TableIsConsistent) {
  for (const FormatSpec& f : AllFormats()) {
    SCOPED_TRACE(std::string(f.name));
    EXPECT_EQ(FindFormat(f.name), &f);
    if (!IsFloat(f)) continue;
    EXPECT_EQ(1 + f.exponent_bits + f.fraction_bits - (f.has_sign ? 0 : 1) + f.pad_bits, f.width);
    EXPECT_LT(Emin(f), 0);
    EXPECT_GT(Emax(f), 0);
  }
  EXPECT_EQ(FindFormat("E4M3"), nullptr);  // Never a bare "E4M3".
  EXPECT_EQ(IntegerMin(Int8()), -128);
  EXPECT_EQ(IntegerMax(UInt8()), 255);
  EXPECT_EQ(IntegerMax(Int32()), 2147483647);
}

// The NaN placement's name follows the encodings (OCP OFP8 v1.0 §5.1, ml_dtypes' fnuz formats).
TEST(FormatSpecTest, NanEncodingNames) {
  EXPECT_EQ(NanEncodingName(Float32()), "ieee");
  EXPECT_EQ(NanEncodingName(Float8E5M2()), "ieee");
  EXPECT_EQ(NanEncodingName(Float8E4M3FN()), "all-ones");
  EXPECT_EQ(NanEncodingName(Float8E8M0FNU()), "all-ones");
  EXPECT_EQ(NanEncodingName(Float8E4M3FNUZ()), "negative-zero");
  EXPECT_EQ(NanEncodingName(Float8E5M2FNUZ()), "negative-zero");
}

}  // namespace
}  // namespace fpconform
