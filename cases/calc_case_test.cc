#include "cases/calc_case.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cases/calc_test_util.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

// Every expected value below is worked out by hand from IEEE 754-2019 / OCP OFP8 r1.0 and the
// semantics fixed in formats/ops.h and formats/op_env.h; the comment on each row shows the
// arithmetic. Encodings used throughout:
//   float32  1 = 0x3f800000, 2 = 0x40000000, 3 = 0x40400000, 0.5 = 0x3f000000, 4 = 0x40800000,
//            2^-24 = (127-24=103=0x67)<<23 = 0x33800000, max = 0x7f7fffff, Inf = 0x7f800000,
//            min normal 2^-126 = 0x00800000, min subnormal 2^-149 = 0x00000001.
//   float8_e4m3fn (bias 7, S.EEEE.MMM): 1 = 0.0111.000 = 0x38, 2 = 0x40, 0.5 = 0x30,
//            max 448 = 0.1111.110 = 0x7e, NaN = 0x7f/0xff, min subnormal 2^-9 = 0x01.
// RunCalc on `input`: its whole output, its messages, and its counts of lines, cases and errors.
void ExpectCalc(std::string_view input, std::string_view out, std::string_view err, int64_t lines,
                int64_t cases, int64_t errors) {
  std::string got_out, got_err;
  const CalcStats s = RunCalc(input, got_out, got_err);
  EXPECT_EQ(got_out, out);
  EXPECT_EQ(got_err, err);
  EXPECT_EQ(s.lines, lines);
  EXPECT_EQ(s.cases, cases);
  EXPECT_EQ(s.errors, errors);
}

TEST(CalcTest, HeaderExample) {
  ExpectCalc(
      "mul float8_e4m3fn rne 0x7e 0x40\n"
      "mul float8_e4m3fn:sat rne 0x7e 0x40\n"
      "cvt float32 int8 rne 0x43000000\n",
      "0x7f ox\n0x7e ox\n0x80 v\n",
      "",
      /*lines=*/3, /*cases=*/3, /*errors=*/0);
}

TEST(CalcTest, Float32Ops) {
  CheckCalcRows({
      // 1 + 2 = 3 exactly.
      {"add float32 rne 0x3f800000 0x40000000", "0x40400000 -"},
      // 3 - 1 = 2 exactly.
      {"sub float32 rne 0x40400000 0x3f800000", "0x40000000 -"},
      // 3 * 2 = 6 = 1.5 * 2^2: exponent 129 = 0x81, fraction .1 -> 0x40c00000.
      {"mul float32 rne 0x40400000 0x40000000", "0x40c00000 -"},
      // 1/3 = 1.0101...b * 2^-2: 23 fraction bits 0x2aaaaa, then 1010... > half: round up to
      // 0x2aaaab; exponent 125 = 0x7d -> 0x3e800000 + 0x2aaaab.
      {"div float32 rne 0x3f800000 0x40400000", "0x3eaaaaab x"},
      // Same under rtz: truncated fraction 0x2aaaaa.
      {"div float32 rtz 0x3f800000 0x40400000", "0x3eaaaaaa x"},
      // 1/0: divide by zero, +Inf.
      {"div float32 rne 0x3f800000 0x00000000", "0x7f800000 z"},
      // 0/0: invalid, default NaN of the ieee profile +qNaN.
      {"div float32 rne 0x00000000 0x00000000", "0x7fc00000 v"},
      // sqrt(4) = 2.
      {"sqrt float32 rne 0x40800000", "0x40000000 -"},
      // sqrt(2) = 1.0110101000001001111001100110011...b: fraction 0x3504f3 then 0011... <
      // half, so the truncation stands: exponent 127 -> 0x3fb504f3.
      {"sqrt float32 rne 0x40000000", "0x3fb504f3 x"},
      // sqrt(-1): invalid.
      {"sqrt float32 rne 0xbf800000", "0x7fc00000 v"},
      // sqrt(-0) = -0 (IEEE 754-2019 §6.3).
      {"sqrt float32 rne 0x80000000", "0x80000000 -"},
      // fma: (1+2^-23)^2 = 1 + 2^-22 + 2^-46 exactly; minus (1+2^-22) (0xbf800002) leaves 2^-46:
      // exponent 127-46 = 81 = 0x51 -> 0x28800000, exact. (mul then add would give 0.)
      {"fma float32 rne 0x3f800001 0x3f800001 0xbf800002", "0x28800000 -"},
      // fma 0 * Inf + 1: invalid.
      {"fma float32 rne 0x00000000 0x7f800000 0x3f800000", "0x7fc00000 v"},
      // 1 + 1 + 1 = 3.
      {"fma float32 rne 0x3f800000 0x3f800000 0x40000000", "0x40400000 -"},
  });
}

TEST(CalcTest, RoundingModes) {
  // 1 + 2^-24 lies exactly halfway between 1 (0x3f800000, even) and 1 + 2^-23 (0x3f800001).
  CheckCalcRows({
      {"add float32 rne 0x3f800000 0x33800000", "0x3f800000 x"},  // Tie to even: 1.
      {"add float32 rna 0x3f800000 0x33800000", "0x3f800001 x"},  // Tie away: 1 + 2^-23.
      {"add float32 rtz 0x3f800000 0x33800000", "0x3f800000 x"},  // Truncate.
      {"add float32 rup 0x3f800000 0x33800000", "0x3f800001 x"},  // Toward +Inf.
      {"add float32 rdn 0x3f800000 0x33800000", "0x3f800000 x"},  // Toward -Inf.
      {"add float32 rto 0x3f800000 0x33800000", "0x3f800001 x"},  // Truncate, set lsb.
      // Negated: -1 - 2^-24.
      {"add float32 rup 0xbf800000 0xb3800000", "0xbf800000 x"},
      {"add float32 rdn 0xbf800000 0xb3800000", "0xbf800001 x"},
      // x - x is +0 in every mode but rdn, where it is -0 (IEEE 754-2019 §6.3).
      {"sub float32 rne 0x3f800000 0x3f800000", "0x00000000 -"},
      {"sub float32 rdn 0x3f800000 0x3f800000", "0x80000000 -"},
  });
}

TEST(CalcTest, StochasticRounding) {
  // 1 + 2^-24: the discarded fraction is .1000...b, so its top k bits are 2^(k-1). It rounds
  // away iff 2^(k-1) + r >= 2^k, that is iff r >= 2^(k-1) (op_env.h).
  CheckCalcRows({
      {"add float32 sr8 0x3f800000 0x33800000 0x80", "0x3f800001 x"},  // 128 + 128 >= 256.
      {"add float32 sr8 0x3f800000 0x33800000 0x7f", "0x3f800000 x"},  // 128 + 127 < 256.
      {"add float32 sr8 0x3f800000 0x33800000 0x00", "0x3f800000 x"},
      {"add float32 sr1 0x3f800000 0x33800000 0x1", "0x3f800001 x"},  // 1 + 1 >= 2.
      {"add float32 sr1 0x3f800000 0x33800000 0x0", "0x3f800000 x"},  // 1 + 0 < 2.
      {"add float32 sr32 0x3f800000 0x33800000 0x80000000", "0x3f800001 x"},
      {"add float32 sr32 0x3f800000 0x33800000 0x7fffffff", "0x3f800000 x"},
      // Exact results never round: 1 + 1.
      {"add float32 sr8 0x3f800000 0x3f800000 0xff", "0x40000000 -"},
      // cvt 1.5 to int8: discarded .1b, top 4 bits 1000b = 8; 8 + 8 >= 16 -> 2, 8 + 7 -> 1.
      {"cvt float32 int8 sr4 0x3fc00000 0x8", "0x02 x"},
      {"cvt float32 int8 sr4 0x3fc00000 0x7", "0x01 x"},
      // sqrt and fma take the random bits last too: sqrt(4) exact.
      {"sqrt float32 sr8 0x40800000 0x12", "0x40000000 -"},
      {"fma float32 sr8 0x3f800000 0x3f800000 0x33800000 0x80", "0x3f800001 x"},
  });
}

TEST(CalcTest, OverflowUnderflowAndOptions) {
  CheckCalcRows({
      // max * 2 overflows: rne -> +Inf, rtz -> max, sat -> max. Flags o x.
      {"mul float32 rne 0x7f7fffff 0x40000000", "0x7f800000 ox"},
      {"mul float32 rtz 0x7f7fffff 0x40000000", "0x7f7fffff ox"},
      {"mul float32:sat rne 0x7f7fffff 0x40000000", "0x7f7fffff ox"},
      // 2^-126 * 0.5 = 2^-127 = subnormal 0x00400000, exact: no underflow flag (§7.5).
      {"mul float32 rne 0x00800000 0x3f000000", "0x00400000 -"},
      // Same under ftz: tiny, flushed to +0, raising u and x (op_env.h).
      {"mul float32:ftz rne 0x00800000 0x3f000000", "0x00000000 ux"},
      // 2^-149 * 0.5 = 2^-150: halfway between 0 and 2^-149; tie to even 0. Inexact and tiny.
      {"mul float32 rne 0x00000001 0x3f000000", "0x00000000 ux"},
      {"mul float32 rup 0x00000001 0x3f000000", "0x00000001 ux"},
      // daz: the subnormal 2^-149 reads as +0, so 2^-149 + 0 = +0 with no flag.
      {"add float32 rne 0x00000001 0x00000000", "0x00000001 -"},
      {"add float32:daz rne 0x00000001 0x00000000", "0x00000000 -"},
      // Tininess. fma (1 - 2^-24) * 2^-127 + 2^-127 = 2^-126 - 2^-151 = 2^-126 (1 - 2^-25).
      // With unbounded exponent at p = 24 the ulp below 2^-126 is 2^-150, so the value is a tie
      // between 2^-126 - 2^-150 (odd) and 2^-126 (even): 2^-126, not tiny after rounding.
      // Before rounding it is tiny. In the subnormal grid (2^-149) it is 2^23 - 1/4 -> 2^23,
      // i.e. 0x00800000, inexact. So: after-rounding tininess: x; tbr: u x.
      {"fma float32 rne 0x3f7fffff 0x00400000 0x00400000", "0x00800000 x"},
      {"fma float32:tbr rne 0x3f7fffff 0x00400000 0x00400000", "0x00800000 ux"},
      // Several options at once.
      {"mul float32:ftz:daz:sat:tbr rne 0x7f7fffff 0x40000000", "0x7f7fffff ox"},
  });
}

TEST(CalcTest, NanProfiles) {
  CheckCalcRows({
      // 0/0 under each profile (op_env.h table).
      {"div float32:nan=ieee rne 0x00000000 0x00000000", "0x7fc00000 v"},
      {"div float32:nan=canonical rne 0x00000000 0x00000000", "0x7fc00000 v"},
      {"div float32:nan=cuda rne 0x00000000 0x00000000", "0x7fffffff v"},
      {"div float32:nan=x86 rne 0x00000000 0x00000000", "0xffc00000 v"},
      // -sNaN with payload 1 plus 1: ieee keeps sign and payload and sets the quiet bit
      // (0xff800001 | 0x00400000); the sNaN raises v. canonical writes +qNaN.
      {"add float32 rne 0xff800001 0x3f800000", "0xffc00001 v"},
      {"add float32:nan=canonical rne 0xff800001 0x3f800000", "0x7fc00000 v"},
      // A quiet NaN operand propagates without a flag.
      {"add float32 rne 0x7fc00123 0x3f800000", "0x7fc00123 -"},
  });
}

TEST(CalcTest, SmallFormats) {
  CheckCalcRows({
      // e4m3fn: 1 + 1 = 2 = 0.1000.000.
      {"add float8_e4m3fn rne 0x38 0x38", "0x40 -"},
      // Leading zeros are fine as long as the value fits.
      {"add float8_e4m3fn rne 0x0038 0x00038", "0x40 -"},
      // 448 * 2 = 896 > 464: overflow; no Inf, so NaN 0x7f (ops.h); sat gives 448.
      {"mul float8_e4m3fn rne 0x7e 0x40", "0x7f ox"},
      {"mul float8_e4m3fn:sat rne 0x7e 0x40", "0x7e ox"},
      // NaN operand propagates (e4m3fn has no sNaN).
      {"add float8_e4m3fn rne 0x7f 0x38", "0x7f -"},
      // 2^-9 * 0.5 = 2^-10: tie between 0 and 2^-9, even -> +0, tiny and inexact.
      {"mul float8_e4m3fn rne 0x01 0x30", "0x00 ux"},
      // x - x under rdn: -0 = 0x80 in e4m3fn; e4m3fnuz has no -0, so +0 (ops.h).
      // e4m3fnuz 1 = bias 8 -> 0.1000.000 = 0x40.
      {"sub float8_e4m3fn rdn 0x38 0x38", "0x80 -"},
      {"sub float8_e4m3fnuz rdn 0x40 0x40", "0x00 -"},
      // e4m3fnuz max 240 = 0.1111.111 = 0x7f; * 2 (0.1001.000 = 0x48) overflows: NaN 0x80.
      {"mul float8_e4m3fnuz rne 0x7f 0x48", "0x80 ox"},
      // e5m2 (bias 15): 1 = 0.01111.00 = 0x3c; 1 + 1 = 0.10000.00 = 0x40.
      {"add float8_e5m2 rne 0x3c 0x3c", "0x40 -"},
      // e5m2 max 57344 = 0.11110.11 = 0x7b; * 2 -> +Inf 0.11111.00 = 0x7c.
      {"mul float8_e5m2 rne 0x7b 0x40", "0x7c ox"},
      {"mul float8_e5m2:sat rne 0x7b 0x40", "0x7b ox"},
      // e4m3 (IEEE-like, bias 7): max 240 = 0.1110.111 = 0x77; * 2 -> +Inf 0.1111.000 = 0x78.
      {"mul float8_e4m3 rne 0x77 0x40", "0x78 ox"},
      // e8m0fnu (bias 127, p = 1): 1 = 0x7f, 2 = 0x80, 4 = 0x81. 1 * 2 = 2; sqrt 4 = 2.
      {"mul float8_e8m0fnu rne 0x7f 0x80", "0x80 -"},
      {"sqrt float8_e8m0fnu rne 0x81", "0x80 -"},
      // sqrt 2 = 1.414...: between 1 and 2 with p = 1; nearer to 1 -> 0x7f, inexact.
      {"sqrt float8_e8m0fnu rne 0x80", "0x7f x"},
      // bfloat16 1 + 1 = 2: 0x3f80 + 0x3f80 -> 0x4000.
      {"add bfloat16 rne 0x3f80 0x3f80", "0x4000 -"},
      // float16 1 + 1 = 2: 0x3c00 -> 0x4000; max 65504 (0x7bff) * 2 -> Inf 0x7c00.
      {"add float16 rne 0x3c00 0x3c00", "0x4000 -"},
      {"mul float16 rne 0x7bff 0x4000", "0x7c00 ox"},
      // tfloat32 (10 fraction bits in the float32 layout, bits 22..13): 1 + 2^-10 is exact,
      // 2^-10 = 0x3a800000, sum fraction bit 13 -> 0x3f802000. 1 + 2^-11 (0x3a000000) is a
      // tie -> 1.
      {"add tfloat32 rne 0x3f800000 0x3a800000", "0x3f802000 -"},
      {"add tfloat32 rne 0x3f800000 0x3a000000", "0x3f800000 x"},
      // float64 1 + 1 = 2, 16 digits.
      {"add float64 rne 0x3ff0000000000000 0x3ff0000000000000", "0x4000000000000000 -"},
  });
}

TEST(CalcTest, Conversions) {
  CheckCalcRows({
      // 128.0 (0x43000000) is out of int8 range: v and the integer indefinite 0x80; under
      // sat it clamps to 127 (ops.h).
      {"cvt float32 int8 rne 0x43000000", "0x80 v"},
      {"cvt float32 int8:sat rne 0x43000000", "0x7f v"},
      // 1.5 (0x3fc00000): rne tie -> 2, rna -> 2, rtz -> 1, rdn -> 1, rup -> 2; all inexact.
      {"cvt float32 int8 rne 0x3fc00000", "0x02 x"},
      {"cvt float32 int8 rna 0x3fc00000", "0x02 x"},
      {"cvt float32 int8 rtz 0x3fc00000", "0x01 x"},
      {"cvt float32 int8 rdn 0x3fc00000", "0x01 x"},
      {"cvt float32 int8 rup 0x3fc00000", "0x02 x"},
      // 2.5 (0x40200000) rne tie -> 2 (even); -1.5 (0xbfc00000) -> -2 = 0xfe.
      {"cvt float32 int8 rne 0x40200000", "0x02 x"},
      {"cvt float32 int8 rne 0xbfc00000", "0xfe x"},
      // 2^31 (0x4f000000) overflows int32: 0x80000000 v.
      {"cvt float32 int32 rtz 0x4f000000", "0x80000000 v"},
      // -1 to uint8: out of range: all ones 0xff v; sat -> 0.
      {"cvt float32 uint8 rne 0xbf800000", "0xff v"},
      {"cvt float32 uint8:sat rne 0xbf800000", "0x00 v"},
      // NaN to int8: v, indefinite 0x80; sat -> 0.
      {"cvt float32 int8 rne 0x7fc00000", "0x80 v"},
      {"cvt float32 int8:sat rne 0x7fc00000", "0x00 v"},
      // int8 0x80 = -128 -> float32 -2^7: sign, exponent 134 = 0x86 -> 0xc3000000.
      {"cvt int8 float32 rne 0x80", "0xc3000000 -"},
      // int32 2^24 + 1: a tie between 2^24 and 2^24 + 2 -> 2^24: exponent 151 = 0x97 ->
      // 0x4b800000, inexact.
      {"cvt int32 float32 rne 0x01000001", "0x4b800000 x"},
      // int32 128 -> int8 wraps to 0x80 with v; sat clamps to 127. uint8 255 -> int8: wraps to
      // 0xff (-1) with v; sat -> 127.
      {"cvt int32 int8 rne 0x00000080", "0x80 v"},
      {"cvt int32 int8:sat rne 0x00000080", "0x7f v"},
      {"cvt uint8 int8 rne 0xff", "0xff v"},
      {"cvt uint8 int8:sat rne 0xff", "0x7f v"},
      // 448 = 1.75 * 2^8: float32 exponent 135 = 0x87, fraction .11 -> 0x43e00000 -> e4m3fn
      // 0x7e exactly. 464 (fraction .1101 -> 0x43e80000) is a tie between 448 (1.110, even)
      // and 480 (1.111): 448, not an overflow (ops.h). 480 (0x43f00000) overflows: NaN, or
      // 448 under sat.
      {"cvt float32 float8_e4m3fn rne 0x43e00000", "0x7e -"},
      {"cvt float32 float8_e4m3fn rne 0x43e80000", "0x7e x"},
      {"cvt float32 float8_e4m3fn rne 0x43f00000", "0x7f ox"},
      {"cvt float32 float8_e4m3fn:sat rne 0x43f00000", "0x7e ox"},
      // 2^16 (0x47800000) to e5m2 (max 57344): Inf 0x7c; sat -> 0x7b.
      {"cvt float32 float8_e5m2 rne 0x47800000", "0x7c ox"},
      {"cvt float32 float8_e5m2:sat rne 0x47800000", "0x7b ox"},
      // 1 + 2^-8 (0x3f808000) to bfloat16 (7 fraction bits): tie -> 1 = 0x3f80.
      // 1 + 2^-7 + 2^-8 (0x3f818000): tie between 0x3f81 (odd) and 0x3f82 -> 0x3f82.
      {"cvt float32 bfloat16 rne 0x3f808000", "0x3f80 x"},
      {"cvt float32 bfloat16 rne 0x3f818000", "0x3f82 x"},
      {"cvt float32 float16 rne 0x3f800000", "0x3c00 -"},
      // 1 + 2^-11 (float32 fraction bit 12: 0x3f801000) to tfloat32: tie -> 1.
      {"cvt float32 tfloat32 rne 0x3f801000", "0x3f800000 x"},
      {"cvt float32 float64 rne 0x3f800000", "0x3ff0000000000000 -"},
      // float64 1 + 2^-24 (fraction bit 28: 0x10000000) to float32: tie -> 1.
      {"cvt float64 float32 rne 0x3ff0000010000000", "0x3f800000 x"},
  });
}

TEST(CalcTest, CommentsBlankLinesAndLineEndings) {
  ExpectCalc(
      "# a comment line\n"
      "\n"
      "   \t  \n"
      "  # indented comment\n"
      "add float32 rne 0x3f800000 0x3f800000 # 1 + 1\n"   // Trailing comment.
      "add float32 rne 0x3f800000 0x3f800000\r\n"         // CRLF.
      "add\tfloat32  rne\t0x3f800000   0x3f800000  \r\n"  // Tabs and runs of spaces.
      "\r\n"                                              // A blank CRLF line.
      "add float32 rne 0x3f800000 0x3f800000#glued\n"     // '#' inside a token: not a comment.
      "add float32 rne 0x3f800000 0x3f800000",            // No trailing newline.
      "0x40000000 -\n0x40000000 -\n0x40000000 -\nerror\n0x40000000 -\n",
      "line 9: operand 2 '0x3f800000#glued' is not hex (want 0x followed by hex "
      "digits)\n",
      /*lines=*/10, /*cases=*/5, /*errors=*/1);
}

// CALC.md, "Layout": spaces and tabs separate tokens; CR (except right before the newline), VT
// and FF are errors that say which character and where, not separators or blanks.
TEST(CalcTest, OnlySpacesAndTabsSeparateTokens) {
  ExpectCalc(
      "add\vfloat32 rne 0x3f800000 0x3f800000\n"      // 1: VT between tokens.
      "add float32 rne 0x3f800000\f0x3f800000\n"      // 2: FF.
      "add float32 rne 0x3f800000\r0x3f800000\n"      // 3: CR inside the line.
      "\f\n"                                          // 4: FF alone: not a blank line.
      "add float32 rne 0x3f800000 0x3f800000\r\r\n"  // 5: only the last CR is the CRLF's.
      "add float32 rne 0x3f800000 0x3f800000 # \v\f\r ok in a comment\r\n"  // 6.
      "add float32 rne 0x3f800000 0x3f800000\r\n",   // 7: CRLF.
      "error\nerror\nerror\nerror\nerror\n0x40000000 -\n0x40000000 -\n",
      "line 1: control character '\\x0b' (VT) at column 4: only spaces and tabs separate "
      "tokens, and a CR is allowed only right before the newline\n"
      "line 2: control character '\\x0c' (FF) at column 27: only spaces and tabs separate "
      "tokens, and a CR is allowed only right before the newline\n"
      "line 3: control character '\\x0d' (CR) at column 27: only spaces and tabs separate "
      "tokens, and a CR is allowed only right before the newline\n"
      "line 4: control character '\\x0c' (FF) at column 1: only spaces and tabs separate "
      "tokens, and a CR is allowed only right before the newline\n"
      "line 5: control character '\\x0d' (CR) at column 38: only spaces and tabs separate "
      "tokens, and a CR is allowed only right before the newline\n",
      /*lines=*/7, /*cases=*/7, /*errors=*/5);
  EXPECT_EQ(EvalCalcLine("\v").kind, CalcLineResult::Kind::kError);
  EXPECT_EQ(EvalCalcLine("\r").kind, CalcLineResult::Kind::kSkip);  // An empty CRLF line.
}

TEST(CalcTest, EmptyInput) {
  std::string out, err;
  CalcStats s = RunCalc("", out, err);
  EXPECT_EQ(out, "");
  EXPECT_EQ(s.lines, 0);
  EXPECT_EQ(s.cases, 0);
  s = RunCalc("\n\n", out, err);
  EXPECT_EQ(out, "");
  EXPECT_EQ(s.lines, 2);
}

struct ErrorRow {
  std::string_view line;
  std::string_view message;  // The whole message after "line 1: ".
};

TEST(CalcTest, Errors) {
  const std::vector<ErrorRow> rows = {
      {"frob float32 rne 0x0 0x0", "unknown op 'frob' (valid: add sub mul div fma sqrt cvt)"},
      {"ADD float32 rne 0x0 0x0", "unknown op 'ADD' (valid: add sub mul div fma sqrt cvt)"},
      {"add e4m3 rne 0x0 0x0",
       "unknown format 'e4m3' (valid: float64 float32 tfloat32 bfloat16 float16 float8_e4m3fn "
       "float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz float8_e4m3 float8_e8m0fnu int8 uint8 "
       "int32)"},
      {"add float32:foo rne 0x0 0x0",
       "unknown option 'foo' in 'float32:foo' (valid: sat ftz daz tbr "
       "nan=ieee|canonical|cuda|x86)"},
      {"add float32: rne 0x0 0x0",
       "empty option in 'float32:' (valid: sat ftz daz tbr nan=ieee|canonical|cuda|x86)"},
      {"add float32:nan=arm rne 0x0 0x0",
       "unknown option 'nan=arm' in 'float32:nan=arm' (valid: sat ftz daz tbr "
       "nan=ieee|canonical|cuda|x86)"},
      {"cvt float32:sat int8 rne 0x0",
       "options go after the destination format, not on the source format 'float32:sat'"},
      {"cvt float32 int9 rne 0x0",
       "unknown format 'int9' (valid: float64 float32 tfloat32 bfloat16 float16 float8_e4m3fn "
       "float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz float8_e4m3 float8_e8m0fnu int8 uint8 "
       "int32)"},
      {"add float32 rnd 0x0 0x0",
       "unknown rounding mode 'rnd' (valid: rne rna rtz rup rdn rto sr1..sr32)"},
      {"add float32 sr0 0x0 0x0 0x0",
       "unknown rounding mode 'sr0' (valid: rne rna rtz rup rdn rto sr1..sr32)"},
      {"add float32 sr33 0x0 0x0 0x0",
       "unknown rounding mode 'sr33' (valid: rne rna rtz rup rdn rto sr1..sr32)"},
      {"add", "'add' needs a format"},
      {"cvt", "'cvt' needs a source format"},
      {"cvt float32", "'cvt' needs a destination format"},
      {"add float32", "'add' needs a rounding mode (rne rna rtz rup rdn rto sr1..sr32)"},
      {"add float32 rne 0x0", "'add' takes 2 operands, got 1"},
      {"add float32 rne 0x0 0x0 0x0", "'add' takes 2 operands, got 3"},
      {"sqrt float32 rne", "'sqrt' takes 1 operand, got 0"},
      {"fma float32 rne 0x0 0x0", "'fma' takes 3 operands, got 2"},
      {"cvt float32 int8 rne 0x0 0x0", "'cvt' takes 1 operand, got 2"},
      {"add float32 sr8 0x0 0x0", "'add' takes 2 operands plus the random bits of sr8, got 2"},
      {"add float32 rne 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 "
       "0x0 0x0 0x0",
       "'add' takes 2 operands, got 20"},
      {"add float8_e4m3fn rne 0x100 0x0", "operand 1 '0x100' is wider than float8_e4m3fn (8 bits)"},
      {"add float32 rne 0x0 0x100000000",
       "operand 2 '0x100000000' is wider than float32 (32 bits)"},
      {"add float64 rne 0x10000000000000000 0x0",
       "operand 1 '0x10000000000000000' is wider than float64 (64 bits)"},
      {"cvt int8 float32 rne 0x100", "operand 1 '0x100' is wider than int8 (8 bits)"},
      {"add tfloat32 rne 0x3f800001 0x3f800000",
       "operand 1 '0x3f800001' has non-zero low 13 bits, which tfloat32 keeps zero"},
      {"add float32 rne 0x 0x0", "operand 1 '0x' is not hex (want 0x followed by hex digits)"},
      {"add float32 rne 3f800000 0x0",
       "operand 1 '3f800000' is not hex (want 0x followed by hex digits)"},
      {"add float32 rne 0x0 0xg1", "operand 2 '0xg1' is not hex (want 0x followed by hex digits)"},
      {"add float32 rne -0x1 0x0", "operand 1 '-0x1' is not hex (want 0x followed by hex digits)"},
      {"add float32 sr8 0x0 0x0 0x100", "random bits '0x100' are wider than the 8 bits of sr8"},
      {"add float32 sr8 0x0 0x0 zz",
       "random bits 'zz' are not hex (want 0x followed by hex digits)"},
      {"add int8 rne 0x1 0x2",
       "'add' is not defined for the integer format 'int8' (integers take part only in cvt)"},
      {"sqrt int32 rne 0x1",
       "'sqrt' is not defined for the integer format 'int32' (integers take part only in cvt)"},
      {"fma uint8 rne 0x1 0x2 0x3",
       "'fma' is not defined for the integer format 'uint8' (integers take part only in cvt)"},
      // Non-printable bytes are escaped in messages.
      {std::string_view("a\x01\xff", 3),
       "unknown op 'a\\x01\\xff' (valid: add sub mul div fma sqrt cvt)"},
  };
  for (const ErrorRow& row : rows) {
    SCOPED_TRACE(row.line);
    std::string out, err;
    CalcStats s = RunCalc(row.line, out, err);
    EXPECT_EQ(out, "error\n");
    EXPECT_EQ(err, "line 1: " + std::string(row.message) + "\n");
    EXPECT_EQ(s.errors, 1);
    EXPECT_EQ(s.cases, 1);
    CalcLineResult r = EvalCalcLine(row.line);
    EXPECT_EQ(r.kind, CalcLineResult::Kind::kError);
    EXPECT_EQ(r.error, row.message);
  }
}

TEST(CalcTest, ErrorsNameTheLineAndKeepGoing) {
  ExpectCalc(
      "add float32 rne 0x3f800000 0x3f800000\n"
      "# comment\n"
      "bogus\n"
      "\n"
      "add float32 rne 0x3f800000\n"
      "add float32 rne 0x3f800000 0x3f800000\n",
      "0x40000000 -\nerror\nerror\n0x40000000 -\n",
      "line 3: unknown op 'bogus' (valid: add sub mul div fma sqrt cvt)\n"
      "line 5: 'add' takes 2 operands, got 1\n",
      /*lines=*/6, /*cases=*/4, /*errors=*/2);
}

TEST(CalcTest, LongTokensAreCutInMessages) {
  std::string token(100, 'z');
  std::string out, err;
  RunCalc(token, out, err);
  EXPECT_EQ(out, "error\n");
  EXPECT_EQ(err, absl::StrCat("line 1: unknown op '", std::string(40, 'z'),
                              "'... (100 bytes) (valid: add sub mul div fma sqrt cvt)\n"));
}

TEST(CalcTest, EvalCalcLine) {
  CalcLineResult r = EvalCalcLine("mul float8_e4m3fn:sat rne 0x7e 0x40 # 448 * 2");
  ASSERT_EQ(r.kind, CalcLineResult::Kind::kResult);
  EXPECT_EQ(r.format->name, "float8_e4m3fn");
  EXPECT_EQ(r.result.bits, 0x7eu);
  EXPECT_EQ(r.result.flags, kOverflow | kInexact);
  EXPECT_EQ(EvalCalcLine("  # just a comment").kind, CalcLineResult::Kind::kSkip);
  EXPECT_EQ(EvalCalcLine("\r").kind, CalcLineResult::Kind::kSkip);
}

TEST(CalcTest, OpTableIsConsistent) {
  // Every op in the table is reachable by name and evaluates.
  for (const CalcOp& op : CalcOps()) {
    SCOPED_TRACE(op.name);
    std::string line = std::string(op.name);
    if (op.takes_source_format) line += " float32";
    line += " float32 rne";
    for (int i = 0; i < op.num_operands; ++i) line += " 0x3f800000";
    EXPECT_EQ(EvalCalcLine(line).kind, CalcLineResult::Kind::kResult) << line;
  }
}

// ---- Robustness: random garbage never crashes and gives one output line per case line. ----

// Independent of the parser: a line produces no output iff, after dropping one trailing '\r',
// it is spaces/tabs only, optionally followed by a '#' and anything (CALC.md, "Layout": only
// spaces and tabs separate tokens; a '\r', '\v' or '\f' outside a comment is an error).
bool IsSkipLine(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  for (char c : line) {
    if (c == '#') return true;
    if (c != ' ' && c != '\t') return false;
  }
  return true;
}

// Splits at every '\n' (n separators give n + 1 pieces).
std::vector<std::string_view> Split(std::string_view text) {
  std::vector<std::string_view> pieces;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      pieces.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  pieces.push_back(text.substr(start));
  return pieces;
}

int64_t CountCaseLines(std::string_view input) {
  int64_t n = 0;
  std::vector<std::string_view> lines = Split(input);
  // Text after the last '\n' is a line only if non-empty.
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  for (std::string_view l : lines) n += IsSkipLine(l) ? 0 : 1;
  return n;
}

bool IsWellFormedOutputLine(std::string_view l) {
  if (l == "error") return true;
  size_t space = l.find(' ');
  if (space == std::string_view::npos || space < 4 || l.substr(0, 2) != "0x") return false;
  size_t digits = space - 2;
  if (digits != 2 && digits != 4 && digits != 8 && digits != 16) return false;
  for (char c : l.substr(2, digits)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  std::string_view flags = l.substr(space + 1);
  if (flags == "-") return true;
  if (flags.empty()) return false;
  const std::string_view order = "vzoux";
  size_t pos = 0;
  for (char c : flags) {
    size_t at = order.find(c, pos);
    if (at == std::string_view::npos) return false;
    pos = at + 1;
  }
  return true;
}

std::string RandomInput(uint64_t seed, int lines) {
  static constexpr std::string_view kTokens[] = {"add",
                                                 "sub",
                                                 "mul",
                                                 "div",
                                                 "fma",
                                                 "sqrt",
                                                 "cvt",
                                                 "float32",
                                                 "float8_e4m3fn:sat",
                                                 "float8_e5m2",
                                                 "bfloat16:ftz:daz",
                                                 "float16",
                                                 "tfloat32",
                                                 "float64",
                                                 "int8",
                                                 "uint8",
                                                 "int32",
                                                 "float8_e8m0fnu",
                                                 "float8_e4m3fnuz:nan=cuda",
                                                 "rne",
                                                 "rtz",
                                                 "rup",
                                                 "sr8",
                                                 "sr32",
                                                 "0x0",
                                                 "0x7f",
                                                 "0x3f800000",
                                                 "0xff",
                                                 "0x80000000",
                                                 "0x7ff8000000000000",
                                                 "#",
                                                 "0x",
                                                 "0xzz",
                                                 ":",
                                                 "\t",
                                                 "\r",
                                                 "float32:",
                                                 "nan=",
                                                 "0x10000000000000000"};
  PinnedRng rng(seed);  // The same garbage on every machine.
  std::string s;
  for (int i = 0; i < lines; ++i) {
    uint64_t kind = rng.Next() % 4;
    int n = static_cast<int>(rng.Next() % 80);
    if (kind == 0) {  // Raw bytes, any value but '\n'.
      for (int j = 0; j < n; ++j) {
        char c = static_cast<char>(rng.Next() & 0xff);
        s += c == '\n' ? ' ' : c;
      }
    } else if (kind == 1) {  // Raw bytes including '\n' (splits into more lines).
      for (int j = 0; j < n; ++j) s += static_cast<char>(rng.Next() & 0xff);
    } else {  // Token soup, mostly well-shaped.
      int tokens = static_cast<int>(rng.Next() % 8);
      for (int j = 0; j < tokens; ++j) {
        if (j > 0) s += ' ';
        s += kTokens[rng.Next() % std::size(kTokens)];
      }
      if (kind == 3 && !s.empty()) {  // Flip a byte of the line.
        s[s.size() - 1 - rng.Next() % std::min<size_t>(s.size(), 10)] ^=
            static_cast<char>(1 << (rng.Next() % 8));
      }
    }
    if (rng.Next() % 16 != 0) s += '\n';
  }
  return s;
}

TEST(CalcTest, RandomGarbageNeverCrashes) {
  // 200 inputs, seeds first..first + 199 (FPCONFORM_SEED=N replays from N).
  const uint64_t first = TestSeed(1, "CalcTest.RandomGarbageNeverCrashes");
  for (uint64_t seed = first; seed != first + 200; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    std::string input = RandomInput(seed, 200);
    std::string out, err;
    CalcStats s = RunCalc(input, out, err);
    int64_t expected = CountCaseLines(input);
    ASSERT_EQ(s.cases, expected);
    std::vector<std::string_view> lines = Split(out);
    ASSERT_FALSE(lines.empty());
    ASSERT_EQ(lines.back(), "");
    lines.pop_back();
    ASSERT_EQ(static_cast<int64_t>(lines.size()), expected);
    int64_t errors = 0;
    for (std::string_view l : lines) {
      EXPECT_TRUE(IsWellFormedOutputLine(l)) << l;
      errors += l == "error";
    }
    EXPECT_EQ(errors, s.errors);
    // One message line per error, each naming its line.
    std::vector<std::string_view> messages = Split(err);
    messages.pop_back();
    EXPECT_EQ(static_cast<int64_t>(messages.size()), s.errors);
    for (std::string_view m : messages) EXPECT_EQ(m.substr(0, 5), "line ") << m;
  }
}

// ---- Streaming: same bytes as RunCalc, whatever the chunking and line lengths. ----

std::string Stream(const std::string& input, std::string& err, CalcStats& stats) {
  std::FILE* in = std::tmpfile();
  std::FILE* out = std::tmpfile();
  std::FILE* errf = std::tmpfile();
  EXPECT_TRUE(in && out && errf);
  std::fwrite(input.data(), 1, input.size(), in);
  std::rewind(in);
  absl::StatusOr<CalcStats> s = RunCalcStream(in, out, errf);
  EXPECT_TRUE(s.ok()) << s.status();
  if (s.ok()) stats = *s;
  auto slurp = [](std::FILE* f) {
    std::string text;
    std::rewind(f);
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
    return text;
  };
  std::fclose(in);
  err = slurp(errf);
  return slurp(out);
}

TEST(CalcTest, StreamMatchesRunCalc) {
  // About 3 MiB, so 1 MiB chunk boundaries fall inside lines, plus a 1.5 MB comment-tailed
  // line, a 1 MB garbage line, and a final line without a newline.
  std::string input;
  for (int i = 0; i < 40000; ++i) {
    absl::StrAppend(&input, "fma float32 rne 0x3f800000 0x", absl::Hex(0x3f800000 + i),
                    " 0x40000000 # case ", i, "\r\n");
    if (i % 1000 == 0) input += "\n# comment\n";
    if (i == 20000) {
      absl::StrAppend(&input, "add float32 rne 0x0 0x0 #", std::string(1500000, 'c'), "\n");
      input += std::string(1000000, 'g') + "\n";
    }
  }
  input += RandomInput(TestSeed(7, "CalcTest.StreamMatchesRunCalc"), 1000);
  input += "add float32 rne 0x3f800000 0x3f800000";
  std::string out, err;
  CalcStats want = RunCalc(input, out, err);
  std::string stream_err;
  CalcStats got;
  std::string stream_out = Stream(input, stream_err, got);
  EXPECT_EQ(stream_out, out);
  EXPECT_EQ(stream_err, err);
  EXPECT_EQ(got.lines, want.lines);
  EXPECT_EQ(got.cases, want.cases);
  EXPECT_EQ(got.errors, want.errors);
  EXPECT_GT(want.errors, 1);
}

TEST(CalcTest, OverlongLineIsOneError) {
  // Longer than kMaxCalcLineBytes: one error, for the whole line, in both paths; the next line
  // still runs with the right line number.
  std::string input = "# first\n" + std::string(kMaxCalcLineBytes + 5, ' ') +
                      "\nadd float32 rne 0x3f800000 0x3f800000\n";
  std::string out, err;
  RunCalc(input, out, err);
  EXPECT_EQ(out, "error\n0x40000000 -\n");
  EXPECT_EQ(err, absl::StrCat("line 2: line longer than ", kMaxCalcLineBytes, " bytes\n"));
  std::string stream_err;
  CalcStats got;
  EXPECT_EQ(Stream(input, stream_err, got), out);
  EXPECT_EQ(stream_err, err);
  EXPECT_EQ(got.lines, 3);
}

}  // namespace
}  // namespace fpconform
