// Table-driven special cases of the operations, every expected value worked out by hand from
// IEEE 754-2019, OCP OFP8 r1.0 and the semantics in ops.h (the arithmetic is in each row's
// comment), plus the exact stochastic-rounding count and integer conversions.
#include "formats/ops.h"

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "formats/round_pack.h"
#include "formats/text.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

enum class Op { kAdd, kSub, kMul, kDiv, kFma, kSqrt };

struct Row {
  const char* comment;
  std::string_view format;
  Op op;
  const char* rounding;
  uint64_t a, b, c;
  uint64_t expected;
  const char* flags;
  bool saturate = false;
};

OpResult RunRow(const FormatSpec& f, const Row& r, const OpEnv& env) {
  switch (r.op) {
    case Op::kAdd: return Add(f, r.a, r.b, env);
    case Op::kSub: return Sub(f, r.a, r.b, env);
    case Op::kMul: return Mul(f, r.a, r.b, env);
    case Op::kDiv: return Div(f, r.a, r.b, env);
    case Op::kFma: return Fma(f, r.a, r.b, r.c, env);
    case Op::kSqrt: return Sqrt(f, r.a, env);
  }
  return {};
}

// clang-format off
const Row kRows[] = {
  // 1 + 2^-24 in float32: exactly half an ulp above 1; RNE keeps the even 1.0.
  {"half-ulp tie to even", "float32", Op::kAdd, "rne", 0x3F800000, 0x33800000, 0, 0x3F800000, "x"},
  // Same tie, ties-away goes up to 1 + 2^-23.
  {"half-ulp tie away", "float32", Op::kAdd, "rna", 0x3F800000, 0x33800000, 0, 0x3F800001, "x"},
  // Round to odd: 1 + 2^-24 truncates to 1.0 (even) and the lost bit sets the last bit.
  {"round to odd", "float32", Op::kAdd, "rto", 0x3F800000, 0x33800000, 0, 0x3F800001, "x"},
  // The examples in ops.h and op_env.h: 448 * 2 overflows float8_e4m3fn (NaN, or 448 under
  // sat); 1 + 2^-24 under rtz is 1 with x.
  {"ops.h example", "float8_e4m3fn", Op::kMul, "rne", 0x7E, 0x40, 0, 0x7F, "ox"},
  {"ops.h example sat", "float8_e4m3fn", Op::kMul, "rne", 0x7E, 0x40, 0, 0x7E, "ox", true},
  {"op_env.h example", "float32", Op::kAdd, "rtz", 0x3F800000, 0x33800000, 0, 0x3F800000, "x"},
  // x - x is +0 in every mode but rdn, where it is -0 (IEEE 754-2019 §6.3).
  {"exact cancellation", "float32", Op::kSub, "rne", 0x40400000, 0x40400000, 0, 0x00000000, "-"},
  {"exact cancellation rdn", "float32", Op::kSub, "rdn", 0x40400000, 0x40400000, 0, 0x80000000, "-"},
  // fnuz has no -0: the rdn cancellation delivers +0.
  {"fnuz cancellation rdn", "float8_e4m3fnuz", Op::kSub, "rdn", 0x40, 0x40, 0, 0x00, "-"},
  // TestFloat's corner: 2^-126 * (1 - 2^-24) = 2^-126 - 2^-150, exact with an unbounded exponent
  // and below 2^-126 (tiny after rounding); in the subnormal grid it is a tie that rounds to
  // the even 2^23 * 2^-149 = 2^-126: min normal, u and x.
  {"underflow corner", "float32", Op::kMul, "rne", 0x00800000, 0x3F7FFFFF, 0, 0x00800000, "ux"},
  // Exact subnormal result: 2^-126 * 0.5 = 2^-127, exact: no underflow flag without inexact.
  {"exact subnormal", "float32", Op::kMul, "rne", 0x00800000, 0x3F000000, 0, 0x00400000, "-"},
  // max * 2 overflows: RNE gives Inf; RTZ gives max; RDN on a positive gives max.
  {"overflow rne", "float32", Op::kMul, "rne", 0x7F7FFFFF, 0x40000000, 0, 0x7F800000, "ox"},
  {"overflow rtz", "float32", Op::kMul, "rtz", 0x7F7FFFFF, 0x40000000, 0, 0x7F7FFFFF, "ox"},
  {"overflow rdn positive", "float32", Op::kMul, "rdn", 0x7F7FFFFF, 0x40000000, 0, 0x7F7FFFFF, "ox"},
  {"overflow rdn negative", "float32", Op::kMul, "rdn", 0xFF7FFFFF, 0x40000000, 0, 0xFF800000, "ox"},
  {"overflow rup negative", "float32", Op::kMul, "rup", 0xFF7FFFFF, 0x40000000, 0, 0xFF7FFFFF, "ox"},
  // float8_e4m3fn: 160 (0.1110.010) * 2 = 320 = 1.01b * 2^8, exact: 0.1111.010 = 0x7A.
  {"e4m3fn exact 320", "float8_e4m3fn", Op::kMul, "rne", 0x72, 0x40, 0, 0x7A, "-"},
  // 256 (0.1111.000) + 208 (1.101b * 2^7 = 0.1110.101) = 464 = 1.1101b * 2^8: the tie between 448 (1.110) and 480 (1.111) rounds to the
  // even 448 with an unbounded exponent; 448 is finite: no overflow.
  {"e4m3fn 464 rounds to 448", "float8_e4m3fn", Op::kAdd, "rne", 0x78, 0x75, 0, 0x7E, "x"},
  // 448 + 32 (0.1100.000) = 480 = 1.111b * 2^8 is above max finite: overflow, no Inf: NaN 0x7F.
  {"e4m3fn 480 overflows", "float8_e4m3fn", Op::kAdd, "rne", 0x7E, 0x60, 0, 0x7F, "ox"},
  {"e4m3fn 480 overflows sat", "float8_e4m3fn", Op::kAdd, "rne", 0x7E, 0x60, 0, 0x7E, "ox", true},
  {"e4m3fn 480 overflows rtz", "float8_e4m3fn", Op::kAdd, "rtz", 0x7E, 0x60, 0, 0x7E, "ox"},
  // float8_e4m3 (IEEE-like, max 240 = 0.1110.111): 240 + 16 = 256 overflows to Inf 0x78.
  {"e4m3 overflow to inf", "float8_e4m3", Op::kAdd, "rne", 0x77, 0x58, 0, 0x78, "ox"},
  // 1 + 1/16 in e4m3fn: tie between 1.000 and 1.001; RNE 1.0, RNA 1.125.
  {"fp8 tie rne", "float8_e4m3fn", Op::kAdd, "rne", 0x38, 0x18, 0, 0x38, "x"},
  {"fp8 tie rna", "float8_e4m3fn", Op::kAdd, "rna", 0x38, 0x18, 0, 0x39, "x"},
  // Invalid operations: 0 * Inf, Inf - Inf, 0 / 0, sqrt(-1): default NaN, v.
  {"0 * inf", "float32", Op::kMul, "rne", 0x00000000, 0x7F800000, 0, 0x7FC00000, "v"},
  {"inf - inf", "float32", Op::kSub, "rne", 0x7F800000, 0x7F800000, 0, 0x7FC00000, "v"},
  {"0 / 0", "float16", Op::kDiv, "rne", 0x0000, 0x8000, 0, 0x7E00, "v"},
  {"sqrt(-1)", "bfloat16", Op::kSqrt, "rne", 0xBF80, 0, 0, 0x7FC0, "v"},
  {"sqrt(-0) = -0", "float32", Op::kSqrt, "rne", 0x80000000, 0, 0, 0x80000000, "-"},
  // Division by zero: Inf with z; in e4m3fn (no Inf) NaN with z, or 448 under sat.
  {"1 / -0", "float32", Op::kDiv, "rne", 0x3F800000, 0x80000000, 0, 0xFF800000, "z"},
  {"e4m3fn 1 / 0", "float8_e4m3fn", Op::kDiv, "rne", 0x38, 0x00, 0, 0x7F, "z"},
  {"e4m3fn 1 / 0 sat", "float8_e4m3fn", Op::kDiv, "rne", 0x38, 0x00, 0, 0x7E, "z", true},
  // 1 / 3 in float32: 0x3EAAAAAB (the 24-bit pattern 1010...1011 after rounding up).
  {"1 / 3", "float32", Op::kDiv, "rne", 0x3F800000, 0x40400000, 0, 0x3EAAAAAB, "x"},
  {"1 / 3 rtz", "float32", Op::kDiv, "rtz", 0x3F800000, 0x40400000, 0, 0x3EAAAAAA, "x"},
  // sqrt(2) in float32: 1.41421353816986083984375 = 0x3FB504F3 (RNE), exact 1.4142135623...
  {"sqrt 2", "float32", Op::kSqrt, "rne", 0x40000000, 0, 0, 0x3FB504F3, "x"},
  {"sqrt 4 exact", "float16", Op::kSqrt, "rne", 0x4400, 0, 0, 0x4000, "-"},
  // sNaN operand: v, and the IEEE profile quiets the first NaN: 0x7F800001 -> 0x7FC00001.
  {"snan quieted", "float32", Op::kAdd, "rne", 0x7F800001, 0x3F800000, 0, 0x7FC00001, "v"},
  {"first nan wins", "float32", Op::kAdd, "rne", 0xFFC00002, 0x7FC00003, 0, 0xFFC00002, "-"},
  // fma with one rounding: (1 + 2^-23) * (1 - 2^-23) - 1 = -2^-46 exactly (a separate multiply
  // would round the product to 1 and return 0).
  {"fma single rounding", "float32", Op::kFma, "rne", 0x3F800001, 0x3F7FFFFE, 0xBF800000, 0xA8800000, "-"},
  // fma 0 * inf + qNaN: v (the product is invalid), NaN result.
  {"fma 0*inf+nan", "float32", Op::kFma, "rne", 0x00000000, 0x7F800000, 0x7FC00000, 0x7FC00000, "v"},
  // fma exact zero: (+1)(+0) + (-0) = +0 in rne, -0 in rdn.
  {"fma zero sign", "float32", Op::kFma, "rne", 0x3F800000, 0x00000000, 0x80000000, 0x00000000, "-"},
  {"fma zero sign rdn", "float32", Op::kFma, "rdn", 0x3F800000, 0x00000000, 0x80000000, 0x80000000, "-"},
  // Huge exponent gap: 1 + 2^-149 (min subnormal): sticky only. rup gives 1 + 2^-23.
  {"sticky-only addend rup", "float32", Op::kAdd, "rup", 0x3F800000, 0x00000001, 0, 0x3F800001, "x"},
  {"sticky-only subtrahend rtz", "float32", Op::kSub, "rtz", 0x3F800000, 0x00000001, 0, 0x3F7FFFFF, "x"},
  // float64: 1 + 2^-53 ties to even 1.0.
  {"float64 tie", "float64", Op::kAdd, "rne", 0x3FF0000000000000, 0x3CA0000000000000, 0, 0x3FF0000000000000, "x"},
  // float64 sqrt(2) = 0x3FF6A09E667F3BCD.
  {"float64 sqrt 2", "float64", Op::kSqrt, "rne", 0x4000000000000000, 0, 0, 0x3FF6A09E667F3BCD, "x"},
  // tfloat32 (container bits): 1 + 2^-11 is a tie between 1 and 1 + 2^-10: even 1.0.
  {"tf32 tie", "tfloat32", Op::kAdd, "rne", 0x3F800000, 0x3A000000, 0, 0x3F800000, "x"},
  {"tf32 tie rna", "tfloat32", Op::kAdd, "rna", 0x3F800000, 0x3A000000, 0, 0x3F802000, "x"},
  // e8m0: 2 * 4 = 8 = 2^3: biased 130 = 0x82.
  {"e8m0 mul", "float8_e8m0fnu", Op::kMul, "rne", 0x80, 0x81, 0, 0x82, "-"},
  // e8m0 has no zero and no sign: 1 - 1 is NaN with v.
  {"e8m0 no zero", "float8_e8m0fnu", Op::kSub, "rne", 0x7F, 0x7F, 0, 0xFF, "v"},
  // e8m0 below 2^-127: 2^-127 / 2 delivers 2^-127 with u x.
  {"e8m0 underflow", "float8_e8m0fnu", Op::kDiv, "rne", 0x00, 0x80, 0, 0x00, "ux"},
};
// clang-format on

TEST(OpsTest, SpecialCases) {
  for (const Row& r : kRows) {
    const FormatSpec* f = FindFormat(r.format);
    ASSERT_NE(f, nullptr) << r.format;
    OpEnv env;
    ASSERT_TRUE(ParseRounding(r.rounding, env));
    env.saturate = r.saturate;
    OpResult got = RunRow(*f, r, env);
    SCOPED_TRACE(std::string(r.comment) + ": " + std::string(r.format) + " a=" +
                 Describe(*f, r.a) + " b=" + Describe(*f, r.b) + " expected " +
                 Describe(*f, r.expected) + " got " + Describe(*f, got.bits));
    EXPECT_EQ(got.bits, r.expected);
    EXPECT_EQ(FlagsToString(got.flags), r.flags);
  }
}

struct CvtRow {
  const char* comment;
  std::string_view from, to;
  const char* rounding;
  uint64_t a;
  bool saturate;
  uint64_t expected;
  const char* flags;
};

// clang-format off
const CvtRow kCvtRows[] = {
  // OCP OFP8 r1.0 Table 3 (float32 -> E4M3 / E5M2).
  {"464 -> 448 (tie, even)", "float32", "float8_e4m3fn", "rne", 0x43E80000, false, 0x7E, "x"},
  {"465 -> NaN (overflow)", "float32", "float8_e4m3fn", "rne", 0x43E88000, false, 0x7F, "ox"},
  {"465 -> 448 sat", "float32", "float8_e4m3fn", "rne", 0x43E88000, true, 0x7E, "ox"},
  {"-inf -> NaN (e4m3fn)", "float32", "float8_e4m3fn", "rne", 0xFF800000, false, 0xFF, "v"},
  {"-inf -> -448 sat", "float32", "float8_e4m3fn", "rne", 0xFF800000, true, 0xFE, "-"},
  {"inf -> inf (e5m2)", "float32", "float8_e5m2", "rne", 0x7F800000, false, 0x7C, "-"},
  {"inf -> 57344 sat", "float32", "float8_e5m2", "rne", 0x7F800000, true, 0x7B, "-"},
  // E5M2 max 57344 = 1.11b*2^15; 61440 = 1.111b*2^15 is the tie to 65536: overflow to Inf.
  {"61440 -> inf", "float32", "float8_e5m2", "rne", 0x47700000, false, 0x7C, "ox"},
  {"61439.99 -> 57344", "float32", "float8_e5m2", "rne", 0x476FFFFF, false, 0x7B, "x"},
  // float8_e4m3 (Trainium1/2): 240 max; 248 = 1.1111b*2^7 ties up to 256: Inf.
  {"248 -> inf (e4m3)", "float32", "float8_e4m3", "rne", 0x43780000, false, 0x78, "ox"},
  {"248 -> 240 sat (e4m3)", "float32", "float8_e4m3", "rne", 0x43780000, true, 0x77, "ox"},
  // Subnormal e4m3fn: 2^-10 is half of the min subnormal 2^-9: tie to even 0; rup gives 2^-9.
  {"half min subnormal", "float32", "float8_e4m3fn", "rne", 0x3A800000, false, 0x00, "ux"},
  {"half min subnormal rup", "float32", "float8_e4m3fn", "rup", 0x3A800000, false, 0x01, "ux"},
  // float32 -> bfloat16: 0x3F808000 is 1 + 2^-8, a tie: even 0x3F80; 0x3F818000 ties up.
  {"bf16 tie even", "float32", "bfloat16", "rne", 0x3F808000, false, 0x3F80, "x"},
  {"bf16 tie up", "float32", "bfloat16", "rne", 0x3F818000, false, 0x3F82, "x"},
  // float32 -> tfloat32 truncation (RZ), as tensor cores read fp32 inputs.
  {"tf32 truncation", "float32", "tfloat32", "rtz", 0x3FFFFFFF, false, 0x3FFFE000, "x"},
  // NaN conversions keep the sign under the IEEE profile (as ml_dtypes does).
  {"-NaN -> e4m3fn", "float32", "float8_e4m3fn", "rne", 0xFFC00000, false, 0xFF, "-"},
  {"NaN -> fnuz", "float32", "float8_e5m2fnuz", "rne", 0xFFC00000, false, 0x80, "-"},
  {"sNaN -> float16", "float32", "float16", "rne", 0x7F800001, false, 0x7E00, "v"},
  // Widening is exact: e4m3fn 448 -> float32 0x43E00000.
  {"e4m3fn -> f32", "float8_e4m3fn", "float32", "rne", 0x7E, false, 0x43E00000, "-"},
  {"e8m0 2^-127 -> f32", "float8_e8m0fnu", "float32", "rne", 0x00, false, 0x00400000, "-"},
  // Float -> integer.
  {"2.5 -> 2 rne", "float32", "int8", "rne", 0x40200000, false, 0x02, "x"},
  {"2.5 -> 3 rna", "float32", "int8", "rna", 0x40200000, false, 0x03, "x"},
  {"-2.5 -> -3 rdn", "float32", "int8", "rdn", 0xC0200000, false, 0xFD, "x"},
  {"127.5 -> 128 out of range", "float32", "int8", "rne", 0x42FF0000, false, 0x80, "v"},
  {"127.5 -> 127 sat", "float32", "int8", "rne", 0x42FF0000, true, 0x7F, "v"},
  {"-128.5 -> -128 (even)", "float32", "int8", "rne", 0xC3008000, false, 0x80, "x"},
  {"NaN -> indefinite", "float32", "int32", "rne", 0x7FC00000, false, 0x80000000, "v"},
  {"NaN -> 0 sat", "float32", "int32", "rne", 0x7FC00000, true, 0x00000000, "v"},
  {"-inf -> min sat", "float32", "int32", "rne", 0xFF800000, true, 0x80000000, "v"},
  {"-1 -> uint8 indefinite", "float32", "uint8", "rne", 0xBF800000, false, 0xFF, "v"},
  {"-1 -> uint8 sat 0", "float32", "uint8", "rne", 0xBF800000, true, 0x00, "v"},
  {"-0.4 -> uint8 0", "float32", "uint8", "rne", 0xBECCCCCD, false, 0x00, "x"},
  {"2^31 -> int32 out of range", "float32", "int32", "rtz", 0x4F000000, false, 0x80000000, "v"},
  // Integer -> float: 2^31 - 1 rounds to 2^31 in float32.
  {"int32 max -> f32", "int32", "float32", "rne", 0x7FFFFFFF, false, 0x4F000000, "x"},
  {"int8 -128 -> bf16", "int8", "bfloat16", "rne", 0x80, false, 0xC300, "-"},
  // 17 = 1.0001b * 2^4 ties between 16 and 18: even 16 = 0.1011.000.
  {"int8 -> e4m3fn 17 -> 16 (tie even)", "int8", "float8_e4m3fn", "rne", 0x11, false, 0x58, "x"},
  {"int32 300 -> int8 sat", "int32", "int8", "rne", 300, true, 0x7F, "v"},
};
// clang-format on

TEST(ConvertTest, SpecialCases) {
  for (const CvtRow& r : kCvtRows) {
    const FormatSpec* from = FindFormat(r.from);
    const FormatSpec* to = FindFormat(r.to);
    ASSERT_TRUE(from && to) << r.comment;
    OpEnv env;
    ASSERT_TRUE(ParseRounding(r.rounding, env));
    env.saturate = r.saturate;
    OpResult got = Convert(*from, *to, r.a, env);
    SCOPED_TRACE(std::string(r.comment) + ": " + Describe(*from, r.a) + " -> expected " +
                 Describe(*to, r.expected) + " got " + Describe(*to, got.bits));
    EXPECT_EQ(got.bits, r.expected);
    EXPECT_EQ(FlagsToString(got.flags), r.flags);
  }
}

// For every k-bit discarded fraction t, exactly t of the 2^k random values round away from zero
// (OpEnv::sr_bits). Checked exhaustively for k = 1..10 on float32 -> bfloat16, where the
// discarded fraction is the low 16 bits: its top k bits are t and the bits below are arbitrary.
TEST(StochasticRoundingTest, ExactlyTopBitsOfTheRandomValuesRoundAway) {
  for (int k = 1; k <= 10; ++k) {
    for (uint32_t t = 0; t < (1u << k); ++t) {
      for (uint32_t below : {0u, 1u, (1u << (16 - k)) - 1}) {
        if (k == 16 && below != 0) continue;
        uint32_t x = 0x3F810000u | (t << (16 - k)) | (below & ((1u << (16 - k)) - 1));
        uint32_t away = 0;
        OpEnv env;
        env.rounding = Rounding::kStochastic;
        env.sr_bits = k;
        for (uint32_t r = 0; r < (1u << k); ++r) {
          env.sr_random = r;
          OpResult res = Convert(Float32(), BFloat16(), x, env);
          if (res.bits == 0x3F82) ++away;
          else ASSERT_EQ(res.bits, 0x3F81u);
        }
        ASSERT_EQ(away, t) << "k=" << k << " x=" << std::hex << x;
      }
    }
  }
}

// ---- sr<k> above max finite (OpEnv::sr_bits): the neighbours of x in the format with its range
// are max finite and the overflow result (+-Inf; NaN without Inf; +-max finite under sat). ----

// The formats of the overflow checks: NaN-only (e4m3fn, e8m0fnu), Inf (e5m2, e4m3, float16,
// bfloat16, float32) and fnuz (single NaN 0x80, no -0, max finite with an all-ones field).
std::vector<const FormatSpec*> SrOverflowFormats() {
  return {&Float8E4M3FN(), &Float8E5M2(),  &Float8E4M3(), &Float8E4M3FNUZ(), &Float8E5M2FNUZ(),
          &Float8E8M0FNU(), &Float16(),    &BFloat16(),   &Float32()};
}

// The overflow result of `f` without sat: +-Inf where the format has it, else a NaN (by class).
bool IsOverflowResult(const FormatSpec& f, bool negative, uint64_t bits) {
  if (f.nonfinite == NonFinite::kIeee) return bits == InfBits(f, negative);
  return UnpackBits(f, bits).kind == Unpacked::Kind::kNaN;
}

// max finite and ulp = 2^(emax - p + 1), the spacing at max finite, from the format row; every
// value below is a float64 made of at most p + 16 significant bits (exact, p <= 24).
double MaxFiniteValue(const FormatSpec& f) {
  return std::ldexp(static_cast<double>(MaxFiniteSignificand(f)), Emax(f) - f.fraction_bits);
}
double UlpAtMax(const FormatSpec& f) { return std::ldexp(1.0, Emax(f) - f.fraction_bits); }
uint64_t F64(double x) { return std::bit_cast<uint64_t>(x); }

// For x = max + (t + b / 2^8) / 2^k * ulp, in (max, max + ulp), exactly t of the 2^k random
// values overflow (o x: the overflow result, or max finite under sat) and the others deliver max
// finite with x alone; both signs, with and without sat. t = b = 0 is max itself: exact.
TEST(StochasticRoundingTest, AboveMaxFiniteExactlyTopBitsOfTheRandomValuesOverflow) {
  for (const FormatSpec* f : SrOverflowFormats()) {
    const double max = MaxFiniteValue(*f), ulp = UlpAtMax(*f);
    for (int k : {1, 2, 3, 5, 8}) {
      for (bool sat : {false, true}) {
        for (bool negative : {false, true}) {
          if (negative && !f->has_sign) continue;
          for (uint32_t t = 0; t < (1u << k); ++t) {
            for (uint32_t b : {0u, 1u, 0x80u, 0xFFu}) {
              const double frac = std::ldexp(static_cast<double>((t << 8) | b), -(k + 8));
              const double x = (negative ? -1.0 : 1.0) * (max + frac * ulp);
              SCOPED_TRACE(std::string(f->name) + " sr" + std::to_string(k) +
                           (sat ? ":sat x=" : " x=") + std::to_string(x));
              const bool exact = t == 0 && b == 0;
              uint32_t over = 0;
              OpEnv env;
              env.rounding = Rounding::kStochastic;
              env.sr_bits = k;
              env.saturate = sat;
              for (uint32_t r = 0; r < (1u << k); ++r) {
                env.sr_random = r;
                const OpResult res = Convert(Float64(), *f, F64(x), env);
                if (res.flags & kOverflow) {
                  ++over;
                  ASSERT_EQ(res.flags, kOverflow | kInexact) << "r=" << r;
                  if (sat) ASSERT_EQ(res.bits, MaxFiniteBits(*f, negative)) << "r=" << r;
                  else ASSERT_TRUE(IsOverflowResult(*f, negative, res.bits)) << "r=" << r;
                } else {
                  ASSERT_EQ(res.bits, MaxFiniteBits(*f, negative)) << "r=" << r;
                  ASSERT_EQ(res.flags, exact ? Flags{0} : kInexact) << "r=" << r;
                }
              }
              ASSERT_EQ(over, t);
            }
          }
        }
      }
    }
  }
}

// At or above max + ulp every random value overflows: exactly max + ulp (exact at p bits with
// an unbounded exponent, so the old rule saw no rounding at all), just above it, 1.5 ulp above,
// 2 max, and far above (2^100 max, and 1e300 beyond every format but float64).
TEST(StochasticRoundingTest, AtOrAboveMaxPlusUlpOverflowsForEveryRandomValue) {
  for (const FormatSpec* f : SrOverflowFormats()) {
    const double max = MaxFiniteValue(*f), ulp = UlpAtMax(*f);
    const double values[] = {max + ulp, max + ulp + ulp / 512, max + 1.5 * ulp, 2 * max,
                             std::ldexp(max, 100), 1e300};
    for (double v : values) {
      for (int k : {1, 4, 8, 32}) {
        for (bool sat : {false, true}) {
          for (bool negative : {false, true}) {
            if (negative && !f->has_sign) continue;
            const double x = negative ? -v : v;
            SCOPED_TRACE(std::string(f->name) + " sr" + std::to_string(k) +
                         (sat ? ":sat x=" : " x=") + std::to_string(x));
            OpEnv env;
            env.rounding = Rounding::kStochastic;
            env.sr_bits = k;
            env.saturate = sat;
            // Every r for k <= 8; for k = 32 the extremes and two values between.
            static constexpr uint64_t kWide[] = {0, 1, 0x80000000u, 0xFFFFFFFFu};
            const uint64_t n = k <= 8 ? (uint64_t{1} << k) : 4;
            for (uint64_t j = 0; j < n; ++j) {
              const uint64_t r = k <= 8 ? j : kWide[j];
              env.sr_random = r;
              const OpResult res = Convert(Float64(), *f, F64(x), env);
              ASSERT_EQ(res.flags, kOverflow | kInexact) << "r=" << r;
              if (sat) ASSERT_EQ(res.bits, MaxFiniteBits(*f, negative)) << "r=" << r;
              else ASSERT_TRUE(IsOverflowResult(*f, negative, res.bits)) << "r=" << r;
            }
          }
        }
      }
    }
  }
}

// Regressions for the old rule (which overflowed sr<k> "like rtz when it rounded toward zero"):
// 1536 = 1.1b * 2^10 is exact at p bits with an unbounded exponent, so it was never rounded
// away and always gave 448 with o; it is 3.4 * 448 and must overflow for every r.
TEST(StochasticRoundingTest, Regression1536ToE4m3fnOverflowsToNanForEveryRandomValue) {
  OpEnv env;
  env.rounding = Rounding::kStochastic;
  env.sr_bits = 8;
  for (uint32_t r = 0; r < 256; ++r) {
    env.sr_random = r;
    env.saturate = false;
    EXPECT_EQ(Convert(Float32(), Float8E4M3FN(), 0x44C00000 /*1536*/, env),
              (OpResult{0x7F, kOverflow | kInexact})) << "r=" << r;
    EXPECT_EQ(Convert(Float32(), Float8E4M3FN(), 0xC4C00000 /*-1536*/, env),
              (OpResult{0xFF, kOverflow | kInexact})) << "r=" << r;
    // Every op overflows the same way: 448 * 2 = 896, 448 + 448 (exact at p bits, too).
    EXPECT_EQ(Mul(Float8E4M3FN(), 0x7E /*448*/, 0x40 /*2*/, env),
              (OpResult{0x7F, kOverflow | kInexact})) << "r=" << r;
    EXPECT_EQ(Add(Float8E4M3FN(), 0x7E, 0x7E, env), (OpResult{0x7F, kOverflow | kInexact}))
        << "r=" << r;
    EXPECT_EQ(Fma(Float8E4M3FN(), 0x7E, 0x40, 0x38 /*1*/, env),
              (OpResult{0x7F, kOverflow | kInexact})) << "r=" << r;
    env.saturate = true;
    EXPECT_EQ(Convert(Float32(), Float8E4M3FN(), 0x44C00000, env),
              (OpResult{0x7E, kOverflow | kInexact})) << "r=" << r;
  }
}

// 65536 = 2^16 = float16 max 65504 + ulp 32: exact at p bits, formerly 65504 with o for every r.
TEST(StochasticRoundingTest, Regression65536ToFloat16OverflowsToInfForEveryRandomValue) {
  OpEnv env;
  env.rounding = Rounding::kStochastic;
  env.sr_bits = 8;
  for (uint32_t r = 0; r < 256; ++r) {
    env.sr_random = r;
    EXPECT_EQ(Convert(Float32(), Float16(), 0x47800000 /*65536*/, env),
              (OpResult{0x7C00, kOverflow | kInexact})) << "r=" << r;
    EXPECT_EQ(Convert(Float32(), Float16(), 0xC7800000 /*-65536*/, env),
              (OpResult{0xFC00, kOverflow | kInexact})) << "r=" << r;
    EXPECT_EQ(Add(Float16(), 0x7BFF /*65504*/, 0x7BFF, env),
              (OpResult{0x7C00, kOverflow | kInexact})) << "r=" << r;
    EXPECT_EQ(Mul(BFloat16(), 0x7F7F /*bf16 max*/, 0x4000 /*2*/, env),
              (OpResult{0x7F80, kOverflow | kInexact})) << "r=" << r;
  }
}

// The worked example of op_env.h: 460 -> float8_e4m3fn under sr8, fraction (460 - 448) / 32 =
// 0.375, top 8 bits 96: NaN with o x iff r >= 160, else 448 with x.
TEST(StochasticRoundingTest, OpEnvWorkedExample460) {
  OpEnv env;
  env.rounding = Rounding::kStochastic;
  env.sr_bits = 8;
  for (uint32_t r = 0; r < 256; ++r) {
    env.sr_random = r;
    const OpResult want = r >= 160 ? OpResult{0x7F, kOverflow | kInexact} : OpResult{0x7E, kInexact};
    EXPECT_EQ(Convert(Float32(), Float8E4M3FN(), 0x43E60000 /*460*/, env), want) << "r=" << r;
  }
}

TEST(StochasticRoundingTest, ParseAndName) {
  OpEnv env;
  EXPECT_TRUE(ParseRounding("sr8", env));
  EXPECT_EQ(env.rounding, Rounding::kStochastic);
  EXPECT_EQ(RoundingName(env), "sr8");
  EXPECT_FALSE(ParseRounding("sr0", env));
  EXPECT_FALSE(ParseRounding("sr33", env));
  EXPECT_FALSE(ParseRounding("sr08", env));
  EXPECT_FALSE(ParseRounding("RNE", env));
}

TEST(NanProfileTest, PatternsPerProfile) {
  struct P { NanProfile p; std::string_view fmt; uint64_t generated; };
  const P rows[] = {
      {NanProfile::kIeee, "float32", 0x7FC00000},   {NanProfile::kCuda, "float32", 0x7FFFFFFF},
      {NanProfile::kX86, "float32", 0xFFC00000},    {NanProfile::kCanonical, "float32", 0x7FC00000},
      {NanProfile::kCuda, "bfloat16", 0x7FFF},      {NanProfile::kX86, "float16", 0xFE00},
      {NanProfile::kCuda, "float8_e4m3fn", 0x7F},   {NanProfile::kCuda, "float8_e5m2", 0x7F},
      {NanProfile::kX86, "float8_e4m3fn", 0xFF},    {NanProfile::kCuda, "float8_e4m3fnuz", 0x80},
      {NanProfile::kCuda, "tfloat32", 0x7FFFE000},
  };
  for (const P& r : rows) {
    const FormatSpec& f = *FindFormat(r.fmt);
    OpEnv env;
    env.nan = r.p;
    // 0 / 0 is invalid in every format that has a zero: the generated NaN of the profile.
    EXPECT_EQ(Div(f, ZeroBits(f), ZeroBits(f), env), (OpResult{r.generated, kInvalid}))
        << r.fmt << " " << NanProfileName(r.p);
  }
  // CUDA writes 0x7F for every NaN, whatever the sign of the input.
  OpEnv cuda;
  cuda.nan = NanProfile::kCuda;
  EXPECT_EQ(Convert(Float32(), Float8E4M3FN(), 0xFFC00000, cuda).bits, 0x7Fu);
  EXPECT_EQ(Convert(Float32(), Float8E5M2(), 0xFFC00000, cuda).bits, 0x7Fu);
  // fma(0, Inf, qNaN): v under every profile but x86, whose VFMADD raises nothing.
  OpEnv x86;
  x86.nan = NanProfile::kX86;
  EXPECT_EQ(Fma(Float32(), 0x00000000, 0x7F800000, 0x7FC00001, x86), (OpResult{0x7FC00001, 0}));
  EXPECT_EQ(Fma(Float32(), 0x00000000, 0x7F800000, 0x7FC00001, OpEnv{}),
            (OpResult{0x7FC00001, kInvalid}));
  EXPECT_EQ(Fma(Float32(), 0x00000000, 0x7F800000, 0x7F800001, x86),
            (OpResult{0x7FC00001, kInvalid}));
}

TEST(CompareTest, OrderingAndMinMax) {
  const FormatSpec& f = Float32();
  OpEnv env;
  EXPECT_EQ(Compare(f, 0x80000000, 0x00000000, env).ordering, Ordering::kEqual);
  EXPECT_EQ(Compare(f, 0xBF800000, 0x00000001, env).ordering, Ordering::kLess);
  EXPECT_EQ(Compare(f, 0x7F800000, 0x7F7FFFFF, env).ordering, Ordering::kGreater);
  CompareResult c = Compare(f, 0x7F800001, 0x3F800000, env);
  EXPECT_EQ(c.ordering, Ordering::kUnordered);
  EXPECT_EQ(c.flags, kInvalid);
  EXPECT_EQ(Compare(f, 0x7FC00000, 0x3F800000, env).flags, 0);
  // minimum propagates NaN; minimumNumber drops it; -0 < +0 in both.
  EXPECT_TRUE(IsNanBits(f, Minimum(f, 0x7FC00000, 0x3F800000, env).bits));
  EXPECT_EQ(MinimumNumber(f, 0x7FC00000, 0x3F800000, env).bits, 0x3F800000u);
  EXPECT_EQ(Minimum(f, 0x00000000, 0x80000000, env).bits, 0x80000000u);
  EXPECT_EQ(Maximum(f, 0x80000000, 0x00000000, env).bits, 0x00000000u);
  EXPECT_EQ(MaximumNumber(f, 0xBF800000, 0x7F800001, env), (OpResult{0xBF800000, kInvalid}));
  // daz: a subnormal compares equal to zero.
  env.denormals_are_zero = true;
  EXPECT_EQ(Compare(f, 0x00000001, 0x80000000, env).ordering, Ordering::kEqual);
  // fnuz: 0x80 is NaN; e4m3fn: 0x7F and 0xFF are NaN.
  EXPECT_EQ(Classify(Float8E4M3FNUZ(), 0x80), FloatClass::kQuietNan);
  EXPECT_EQ(Classify(Float8E4M3FN(), 0xFF), FloatClass::kQuietNan);
  EXPECT_EQ(Classify(Float8E4M3FN(), 0xFE), FloatClass::kNegativeNormal);
  EXPECT_EQ(Classify(Float8E5M2(), 0x7D), FloatClass::kSignalingNan);
  EXPECT_EQ(Classify(Float8E5M2(), 0x03), FloatClass::kPositiveSubnormal);
  EXPECT_EQ(Classify(Float8E8M0FNU(), 0x00), FloatClass::kPositiveNormal);
}

TEST(FtzDazTest, FlushAndDenormalsAreZero) {
  const FormatSpec& f = Float32();
  OpEnv env;
  env.flush_to_zero = true;
  // 2^-126 * 0.5 = 2^-127 is a subnormal result: flushed to +0 with u x.
  EXPECT_EQ(Mul(f, 0x00800000, 0x3F000000, env), (OpResult{0x00000000, kUnderflow | kInexact}));
  // The TestFloat corner is tiny after rounding too (2^-126 - 2^-150 is exact at 24 bits), so
  // it is flushed.
  EXPECT_EQ(Mul(f, 0x00800000, 0x3F7FFFFF, env), (OpResult{0x00000000, kUnderflow | kInexact}));
  // float64 2^-126 * (1 - 2^-26) rounds to 2^-126 even with an unbounded exponent: not tiny
  // after rounding, so kept (x only); tiny before rounding, so flushed under kBeforeRounding.
  EXPECT_EQ(Convert(Float64(), f, 0x380FFFFFF8000000, env), (OpResult{0x00800000, kInexact}));
  env.tininess = Tininess::kBeforeRounding;
  EXPECT_EQ(Convert(Float64(), f, 0x380FFFFFF8000000, env),
            (OpResult{0x00000000, kUnderflow | kInexact}));
  OpEnv daz;
  daz.denormals_are_zero = true;
  // A subnormal input reads as zero: 2^-149 + 0 = 0, no flag.
  EXPECT_EQ(Add(f, 0x00000001, 0x00000000, daz), (OpResult{0x00000000, 0}));
  EXPECT_EQ(Add(f, 0x80000001, 0x80000000, daz), (OpResult{0x80000000, 0}));
}

}  // namespace
}  // namespace fpconform
