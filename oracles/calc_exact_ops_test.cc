// dot and sum in the calc protocol (calc_exact_ops.h): parsing, errors and hand-computed values.
//
// Encodings used (float32): 1 = 0x3f800000, -1 = 0xbf800000, 2 = 0x40000000, 0.5 = 0x3f000000,
// 2^-24 = 0x33800000, 2^-8 = 0x3b800000, max = 0x7f7fffff = (2 - 2^-23) * 2^127,
// min normal 2^-126 = 0x00800000, min subnormal 2^-149 = 0x00000001, Inf = 0x7f800000.
// float8_e4m3fn (bias 7): 448 = 0x7e, 16 = 0.1011.000 = 0x58, 1 = 0x38. bfloat16: 1 = 0x3f80.
#include "oracles/calc_exact_ops.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cases/calc_case.h"
#include "cases/calc_test_util.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

std::string RunOne(std::string_view line, std::string* err = nullptr) {
  return RunCalcLine(line, ExactCalcOps(), err);
}

void CheckRows(const std::vector<CalcRow>& rows) { CheckCalcRows(rows, ExactCalcOps()); }

TEST(CalcExactOpsTest, HeaderExample) {
  std::string out, err;
  CalcStats s = RunCalc("dot float32 float32 rne 2 0x3f800000 0x33800000 0x3f800000 0x3f800000\n",
                        out, err, ExactCalcOps());
  EXPECT_EQ(out, "0x3f800000 x\n");
  EXPECT_EQ(err, "");
  EXPECT_EQ(s.cases, 1);
  EXPECT_EQ(s.errors, 0);
}

TEST(CalcExactOpsTest, Values) {
  CheckRows({
      // 1*1 + 2^-24*1 = 1 + 2^-24: halfway between 1 and 1 + 2^-23; ties to even -> 1.
      {"dot float32 float32 rne 2 0x3f800000 0x33800000 0x3f800000 0x3f800000", "0x3f800000 x"},
      // Same under rup and rna: away -> 1 + 2^-23.
      {"dot float32 float32 rup 2 0x3f800000 0x33800000 0x3f800000 0x3f800000", "0x3f800001 x"},
      {"dot float32 float32 rna 2 0x3f800000 0x33800000 0x3f800000 0x3f800000", "0x3f800001 x"},
      // 1 + 2^-24 + 2^-24 = 1 + 2^-23 exactly (a sequential float32 sum would give 1).
      {"sum float32 float32 rne 3 0x3f800000 0x33800000 0x33800000", "0x3f800001 -"},
      // n = 0: the empty sum is +0, exact, in every mode.
      {"sum float32 float32 rne 0", "0x00000000 -"},
      {"dot float32 float32 rdn 0", "0x00000000 -"},
      {"dot float8_e4m3fn float8_e4m3fn rne 0", "0x00 -"},
      // Exact cancellation 1 + -1: +0, and -0 under rdn (IEEE 754-2019 §6.3).
      {"sum float32 float32 rne 2 0x3f800000 0xbf800000", "0x00000000 -"},
      {"sum float32 float32 rdn 2 0x3f800000 0xbf800000", "0x80000000 -"},
      // -0 + -0 = -0; (-1)*(+0) + (+1)*(-0) = -0 + -0 = -0.
      {"sum float32 float32 rne 2 0x80000000 0x80000000", "0x80000000 -"},
      {"dot float32 float32 rne 2 0xbf800000 0x3f800000 0x00000000 0x80000000", "0x80000000 -"},
      // max + max = 2^129 - 2^105: overflows. rne -> Inf; rtz -> max; sat -> max.
      {"sum float32 float32 rne 2 0x7f7fffff 0x7f7fffff", "0x7f800000 ox"},
      {"sum float32 float32 rtz 2 0x7f7fffff 0x7f7fffff", "0x7f7fffff ox"},
      {"sum float32 float32:sat rne 2 0x7f7fffff 0x7f7fffff", "0x7f7fffff ox"},
      // max * 2 - max = max: the intermediate overflow is not seen by an exact dot.
      {"dot float32 float32 rne 2 0x7f7fffff 0x7f7fffff 0x40000000 0xbf800000", "0x7f7fffff -"},
      // 448*448 + 448*448 = 2 * 200704 = 401408 = 0x62000 = 1.10001b * 2^18:
      // exponent 18 + 127 = 0x91, fraction .10001 -> 0x440000; 0x48800000 | 0x440000.
      {"dot float8_e4m3fn float32 rne 2 0x7e 0x7e 0x7e 0x7e", "0x48c40000 -"},
      // 448 + 16 = 464 = 1.1101b * 2^8: a tie between 448 (1.110) and 480 (1.111): even -> 448.
      {"sum float8_e4m3fn float8_e4m3fn rne 2 0x7e 0x58", "0x7e x"},
      // rup: 480 > 448 = max: overflow; e4m3fn has no Inf -> NaN 0x7f; sat -> 448.
      {"sum float8_e4m3fn float8_e4m3fn rup 2 0x7e 0x58", "0x7f ox"},
      {"sum float8_e4m3fn float8_e4m3fn:sat rup 2 0x7e 0x58", "0x7e ox"},
      // Mixed in/out: bfloat16 1 * 2 = 2 into float32.
      {"dot bfloat16 float32 rne 1 0x3f80 0x4000", "0x40000000 -"},
      // float32 1 + 2^-8 into bfloat16 (p = 8, ulp(1) = 2^-7): a tie, even -> 1 = 0x3f80.
      {"sum float32 bfloat16 rne 2 0x3f800000 0x3b800000", "0x3f80 x"},
      // 2^-126 * 0.5 = 2^-127 = 0x00400000: a subnormal, exact, no flags.
      {"dot float32 float32 rne 1 0x00800000 0x3f000000", "0x00400000 -"},
      // (2^-126 + 2^-149) * 0.5 = 2^-127 + 2^-150: half a subnormal quantum above 0x00400000:
      // tie -> even 0x00400000, tiny and inexact -> u x; rup -> 0x00400001.
      {"dot float32 float32 rne 1 0x00800001 0x3f000000", "0x00400000 ux"},
      {"dot float32 float32 rup 1 0x00800001 0x3f000000", "0x00400001 ux"},
      // ftz: the tiny result flushes to +0 with u x.
      {"dot float32 float32:ftz rne 1 0x00800001 0x3f000000", "0x00000000 ux"},
      // daz: 2^-149 reads as 0, so 1 + 0 = 1 exactly; without daz 1 + 2^-149 is inexact.
      {"sum float32 float32:daz rne 2 0x3f800000 0x00000001", "0x3f800000 -"},
      {"sum float32 float32 rne 2 0x3f800000 0x00000001", "0x3f800000 x"},
      // +Inf + -Inf: invalid, default NaN; Inf * 0 likewise; Inf + 1 = Inf (no flags).
      {"sum float32 float32 rne 2 0x7f800000 0xff800000", "0x7fc00000 v"},
      {"dot float32 float32 rne 1 0x7f800000 0x00000000", "0x7fc00000 v"},
      {"sum float32 float32 rne 2 0x7f800000 0x3f800000", "0x7f800000 -"},
      // sr8: discarded fraction of 1 + 2^-24 is exactly half (top 8 bits 0x80); + 0x80 = 2^8
      // -> away; + 0x7f -> toward zero.
      {"sum float32 float32 sr8 2 0x3f800000 0x33800000 0x80", "0x3f800001 x"},
      {"sum float32 float32 sr8 2 0x3f800000 0x33800000 0x7f", "0x3f800000 x"},
      // Tabs and a comment are fine.
      {"sum\tfloat32 float32\trne 1 0x3f800000 # one term", "0x3f800000 -"},
  });
}

TEST(CalcExactOpsTest, Errors) {
  const std::vector<std::pair<std::string_view, std::string_view>> rows = {
      {"dot float32 float32 rne 2 0x3f800000",
       "line 1: 'dot' takes 4 operands (2 x n, n = 2), got 1\n"},
      {"sum float32 float32 rne 1", "line 1: 'sum' takes 1 operand (n = 1), got 0\n"},
      {"sum float32 float32 rne 1 0x0 0x0", "line 1: 'sum' takes 1 operand (n = 1), got 2\n"},
      {"sum float32 float32 sr8 1 0x3f800000",
       "line 1: 'sum' takes 1 operand (n = 1) plus the random bits of sr8, got 1\n"},
      {"sum float32 float32 rne", "line 1: 'sum' needs the count n (decimal) after the rounding\n"},
      {"sum float32 float32 rne 0x1 0x0", "line 1: count '0x1' of 'sum' is not a decimal number\n"},
      {"sum float32 float32 rne -1 0x0", "line 1: count '-1' of 'sum' is not a decimal number\n"},
      {"sum float32 float32 rne 1.0 0x0", "line 1: count '1.0' of 'sum' is not a decimal number\n"},
      {"sum float32 float32 rne 1048577", "line 1: count '1048577' of 'sum' exceeds 1048576\n"},
      {"sum float32 float32 rne 99999999999999999999999",
       "line 1: count '99999999999999999999999' of 'sum' exceeds 1048576\n"},
      {"sum float32 float32 rne 2 0x0 zz",
       "line 1: operand 2 'zz' is not hex (want 0x followed by "
       "hex digits)\n"},
      {"sum float8_e4m3fn float32 rne 1 0x100",
       "line 1: operand 1 '0x100' is wider than float8_e4m3fn (8 bits)\n"},
      {"sum float32 float32 sr8 1 0x0 0x100",
       "line 1: random bits '0x100' are wider than the 8 bits of sr8\n"},
      {"sum int8 float32 rne 1 0x01",
       "line 1: 'sum' is not defined for the integer format 'int8' (integers take part only in "
       "cvt)\n"},
      {"dot float32 int32 rne 0",
       "line 1: 'dot' is not defined for the integer format 'int32' (integers take part only in "
       "cvt)\n"},
      {"dot float32:sat float32 rne 0",
       "line 1: options go after the destination format, not on the source format "
       "'float32:sat'\n"},
      {"dot float32", "line 1: 'dot' needs a destination format\n"},
      {"dot", "line 1: 'dot' needs a source format\n"},
  };
  for (const auto& [line, message] : rows) {
    SCOPED_TRACE(line);
    std::string err;
    EXPECT_EQ(RunOne(line, &err), "error");
    EXPECT_EQ(err, message);
  }
}

TEST(CalcExactOpsTest, OnlyWithTheExtraOps) {
  std::string out, err;
  RunCalc("sum float32 float32 rne 0\n", out, err);  // No extra ops: dot/sum are unknown.
  EXPECT_EQ(out, "error\n");
  EXPECT_EQ(err.find("line 1: unknown op 'sum' (valid: add sub mul div fma sqrt cvt)"), 0u) << err;
  out.clear();
  err.clear();
  RunCalc("frob float32 rne 0x0\n", out, err, ExactCalcOps());
  EXPECT_EQ(err, "line 1: unknown op 'frob' (valid: add sub mul div fma sqrt cvt dot sum)\n");
  // Built-in ops still work next to the extra ones.
  EXPECT_EQ(RunOne("add float32 rne 0x3f800000 0x3f800000"), "0x40000000 -");
  // EvalCalcLine takes the extra ops too.
  CalcLineResult r = EvalCalcLine("sum float32 float16 rne 1 0x3f800000", ExactCalcOps());
  ASSERT_EQ(r.kind, CalcLineResult::Kind::kResult);
  EXPECT_EQ(r.format, &Float16());
  EXPECT_EQ(r.result, (OpResult{0x3C00, 0}));
}

TEST(CalcExactOpsTest, LongLines) {
  // 65,536 ones: 2^16 = 0x47800000 exactly.
  std::string line = "sum float32 float32 rne 65536";
  for (int i = 0; i < 65536; ++i) line += " 0x3f800000";
  EXPECT_EQ(RunOne(line), "0x47800000 -");
  // A dot of 100,000 float8_e4m3fn pairs 1 * 2^-9 (0x38, 0x01): 100000 = 0x186a0, so the sum
  // is 0x186a0 * 2^-9 = 1.10000110101b * 2^7 = 195.3125, exact in float32: exponent 134 =
  // 0x86 -> 0x43000000, fraction .10000110101 -> 0x435000; 0x43435000.
  std::string dot = "dot float8_e4m3fn float32 rne 100000";
  for (int i = 0; i < 100000; ++i) dot += " 0x38";
  for (int i = 0; i < 100000; ++i) dot += " 0x01";
  dot += "\nsum float32 float32 rne 1 0x3f800000\n";  // The scratch is reused on the next line.
  std::string out, err;
  CalcStats s = RunCalc(dot, out, err, ExactCalcOps());
  EXPECT_EQ(out, "0x43435000 -\n0x3f800000 -\n");
  EXPECT_EQ(err, "");
  EXPECT_EQ(s.errors, 0);
}

// Random dot/sum lines (counts, formats, options, roundings and operands drawn from small pools
// of valid and invalid tokens) never crash and give one output line each; when the line parses,
// the count matches the operands.
TEST(CalcExactOpsTest, RandomLinesNeverCrash) {
  static constexpr std::string_view kOps[] = {"dot", "sum", "dot", "sum", "add"};
  static constexpr std::string_view kFormats[] = {
      "float32",         "bfloat16",        "float8_e4m3fn",
      "float8_e4m3fnuz", "float8_e8m0fnu",  "int8",
      "float16:sat",     "float32:ftz:daz", "x"};
  static constexpr std::string_view kRoundings[] = {"rne", "rna", "rtz",  "rup", "rdn",
                                                    "rto", "sr4", "sr32", "r"};
  static constexpr std::string_view kCounts[] = {"0", "1", "2", "3", "007", "-1", "0x2", "", "65"};
  static constexpr std::string_view kOperands[] = {"0x0",  "0x80", "0x7f",    "0xff",       "0x1",
                                                   "0x38", "0x7e", "0xfffff", "0x3f800000", "zz"};
  PinnedRng rng(TestSeed(12345, "CalcExactOpsTest.RandomLinesNeverCrash"));
  auto next = [&rng] { return rng.Next(); };
  std::string input;
  constexpr int kLines = 20000;
  for (int i = 0; i < kLines; ++i) {
    input += kOps[next() % 5];
    input += ' ';
    input += kFormats[next() % 9];
    input += ' ';
    input += kFormats[next() % 9];
    input += ' ';
    input += kRoundings[next() % 9];
    input += ' ';
    input += kCounts[next() % 9];
    const uint64_t operands = next() % 10;
    for (uint64_t k = 0; k < operands; ++k) {
      input += ' ';
      input += kOperands[next() % 10];
    }
    input += '\n';
  }
  std::string out, err;
  CalcStats s = RunCalc(input, out, err, ExactCalcOps());
  EXPECT_EQ(s.cases, kLines);
  EXPECT_EQ(static_cast<int64_t>(std::count(out.begin(), out.end(), '\n')), kLines);
  EXPECT_GT(s.errors, 0);
  EXPECT_LT(s.errors, kLines);  // Some lines are valid.
}

TEST(CalcExactOpsTest, OpsAreConsistent) {
  for (const CalcOp& op : ExactCalcOps()) {
    SCOPED_TRACE(op.name);
    EXPECT_EQ(op.num_operands, 0);
    EXPECT_GT(op.operand_groups, 0);
    EXPECT_TRUE(op.takes_source_format);
    EXPECT_FALSE(op.allows_integer_formats);
    std::string line = absl::StrCat(std::string(op.name), " float32 float32 rne 1");
    for (int g = 0; g < op.operand_groups; ++g) line += " 0x3f800000";
    EXPECT_EQ(RunOne(line), "0x3f800000 -");
  }
}

}  // namespace
}  // namespace fpconform
