// The fast conversions (fast_convert.h) and FP8 op tables (fp8_tables.h) against the general
// path, on a sample of float32 inputs that covers every exponent, every rounding boundary and
// every special class: all patterns with a stride, +-1024 neighbours of every exponent boundary,
// ties and near-ties at every bit position of every exponent, NaNs, Infs, subnormals. The
// exhaustive proof over all 2^32 inputs is fast_convert_exhaustive_test.cc.
#include "formats/fast_convert.h"

#include <cstdint>
#include <string>
#include <vector>

#include "base/isa.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/fast_convert_test_util.h"
#include "formats/fp8_tables.h"
#include "formats/ops.h"
#include "formats/text.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

std::vector<uint32_t> SampleInputs() {
  // The random bits above each tie (FPCONFORM_SEED=N draws others; the default is 0).
  const uint64_t seed = TestSeed(0, "fast_convert_test SampleInputs");
  std::vector<uint32_t> v;
  // Every 1021st pattern (1021 is prime: every residue of the low bits is visited).
  for (uint64_t x = 0; x <= 0xFFFFFFFFull; x += 1021) v.push_back(static_cast<uint32_t>(x));
  for (uint32_t sign = 0; sign < 2; ++sign) {
    for (uint32_t e = 0; e < 256; ++e) {
      const uint32_t boundary = sign << 31 | e << 23;
      // +-1024 neighbours of every exponent boundary (wrapping at the ends is harmless).
      for (int32_t d = -1024; d <= 1024; ++d) v.push_back(boundary + static_cast<uint32_t>(d));
      // Ties and near-ties at every bit position j (the rounding point of every target, normal
      // or subnormal), with random bits above j.
      for (uint32_t j = 1; j <= 23; ++j) {
        for (uint64_t r = 0; r < 4; ++r) {
          const uint32_t above =
              static_cast<uint32_t>(SplitMix64At(seed + e * 64 + j, r + sign * 8)) &
              (0x007FFFFFu & ~((1u << j) - 1u));
          const uint32_t tie = boundary | above | (1u << (j - 1));
          for (int32_t d = -2; d <= 2; ++d) v.push_back(tie + static_cast<uint32_t>(d));
        }
        // All ones below j: carries into the next kept bit or exponent.
        v.push_back(boundary | (0x007FFFFFu & ~((1u << j) - 1u)) | ((1u << j) - 1u));
      }
    }
  }
  return v;
}

const std::vector<uint32_t>& Inputs() {
  static const auto* inputs = new std::vector<uint32_t>(SampleInputs());
  return *inputs;
}

template <typename OutT, typename Fast>
void CheckAgainstGeneral(const FormatSpec& to, bool saturate, Fast fast) {
  const std::vector<uint32_t>& in = Inputs();
  OpEnv env;
  env.saturate = saturate;
  std::vector<OutT> expected(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    expected[i] = static_cast<OutT>(Convert(Float32(), to, in[i], env).bits);
  }
  for (const std::string& isa : FastConvertIsas()) {
    SCOPED_TRACE("isa " + isa + (saturate ? ", sat" : ", no sat"));
    ASSERT_TRUE(SetFastConvertIsaForTesting(isa));
    std::vector<OutT> out(in.size());
    fast(std::span<const uint32_t>(in), std::span<OutT>(out));
    int failures = 0;
    for (size_t i = 0; i < in.size() && failures < 10; ++i) {
      if (out[i] != expected[i]) {
        ++failures;
        ADD_FAILURE() << "float32 " << Describe(Float32(), in[i]) << " -> " << to.name
                      << ": fast " << Describe(to, out[i]) << ", general "
                      << Describe(to, expected[i]);
      }
    }
  }
  SetFastConvertIsaForTesting("");
}

TEST(FastConvertTest, BFloat16MatchesGeneralPath) {
  CheckAgainstGeneral<uint16_t>(BFloat16(), false, [](auto in, auto out) {
    ConvertF32ToBF16(in, out);
  });
}

TEST(FastConvertTest, Float16MatchesGeneralPath) {
  CheckAgainstGeneral<uint16_t>(Float16(), false, [](auto in, auto out) {
    ConvertF32ToF16(in, out);
  });
}

TEST(FastConvertTest, Fp8MatchesGeneralPath) {
  for (const FormatSpec* to : {&Float8E4M3FN(), &Float8E5M2()}) {
    for (bool sat : {false, true}) {
      SCOPED_TRACE(std::string(to->name));
      CheckAgainstGeneral<uint8_t>(*to, sat, [&](auto in, auto out) {
        ASSERT_TRUE(ConvertF32ToFp8(*to, sat, in, out).ok());
      });
    }
  }
}

// The worked numbers of fast_convert.h and the special cases it lists, one class per row.
TEST(FastConvertTest, HeaderExamplesAndSpecials) {
  struct Row {
    const char* what;
    uint32_t in;
    uint8_t e4m3fn, e4m3fn_sat, e5m2, e5m2_sat;
  };
  const Row rows[] = {
      {"one", 0x3F800000, 0x38, 0x38, 0x3C, 0x3C},
      {"464 = tie between 448 and 480: to even 448", 0x43E80000, 0x7E, 0x7E, 0x5F, 0x5F},
      {"just above 464: overflow", 0x43E80001, 0x7F, 0x7E, 0x5F, 0x5F},
      {"-480: e4m3fn overflow (-NaN 0xFF without sat); e5m2 tie to -512", 0xC3F00000, 0xFF, 0xFE, 0xE0, 0xE0},
      {"+Inf", 0x7F800000, 0x7F, 0x7E, 0x7C, 0x7B},
      {"-Inf: e4m3fn -NaN", 0xFF800000, 0xFF, 0xFE, 0xFC, 0xFB},
      {"-qNaN keeps its sign", 0xFFC00000, 0xFF, 0xFF, 0xFE, 0xFE},
      {"+sNaN with payload top bit: quieted, payload kept", 0x7FA00000, 0x7F, 0x7F, 0x7F, 0x7F},
      {"e5m2 overflow: 61440 = tie above 57344", 0x47700000, 0x7F, 0x7E, 0x7C, 0x7B},
      {"e4m3fn min subnormal 2^-9", 0x3B000000, 0x01, 0x01, 0x18, 0x18},
      {"2^-10: tie to even 0 in e4m3fn", 0x3A800000, 0x00, 0x00, 0x14, 0x14},
      {"-float32 subnormal: -0", 0x80000001, 0x80, 0x80, 0x80, 0x80},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    const uint32_t in[1] = {row.in};
    uint8_t out[1];
    ASSERT_TRUE(ConvertF32ToFp8(Float8E4M3FN(), false, in, out).ok());
    EXPECT_EQ(out[0], row.e4m3fn);
    ASSERT_TRUE(ConvertF32ToFp8(Float8E4M3FN(), true, in, out).ok());
    EXPECT_EQ(out[0], row.e4m3fn_sat);
    ASSERT_TRUE(ConvertF32ToFp8(Float8E5M2(), false, in, out).ok());
    EXPECT_EQ(out[0], row.e5m2);
    ASSERT_TRUE(ConvertF32ToFp8(Float8E5M2(), true, in, out).ok());
    EXPECT_EQ(out[0], row.e5m2_sat);
  }
  // bfloat16 NaN: (x >> 16) | 0x0040; rounding carries into the exponent.
  const uint32_t in[] = {0xFF800001, 0x7F7FFFFF, 0x007FFFFF, 0x3F808000, 0x3F818000};
  uint16_t out[5];
  ConvertF32ToBF16(in, out);
  EXPECT_EQ(out[0], 0xFFC0);
  EXPECT_EQ(out[1], 0x7F80);  // Max float32 rounds to Inf.
  EXPECT_EQ(out[2], 0x0080);  // Largest subnormal rounds to min normal.
  EXPECT_EQ(out[3], 0x3F80);  // Tie to even (down).
  EXPECT_EQ(out[4], 0x3F82);  // Tie to even (up).
}

TEST(FastConvertTest, RejectsUnsupportedFormatsAndSizes) {
  const uint32_t in[2] = {0, 0};
  uint8_t out[2] = {0xAA, 0xAA};
  EXPECT_EQ(ConvertF32ToFp8(Float16(), false, in, out).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ConvertF32ToFp8(Float8E4M3FNUZ(), false, in, out).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ConvertF32ToFp8(Float8E5M2(), false, in, std::span<uint8_t>(out, 1)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out[0], 0xAA);  // Nothing written.
  EXPECT_FALSE(SetFastConvertIsaForTesting("sse9"));
}

// The fast conversions follow the process-wide choice (base/isa.h, FPCONFORM_ISA) unless a
// test forces a path on its thread; portable also turns F16C off.
TEST(FastConvertTest, FollowsTheActiveIsa) {
  const Isa saved = ActiveIsa();
  for (Isa isa : AvailableIsas()) {
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    EXPECT_EQ(FastConvertIsa(), IsaName(isa));
    if (isa == Isa::kPortable) EXPECT_FALSE(FastF16UsesF16c());
    else EXPECT_EQ(FastF16UsesF16c(), CpuHasF16c());
  }
  ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
  if (DetectedIsa() != Isa::kPortable) {
    ASSERT_TRUE(SetFastConvertIsaForTesting(IsaName(DetectedIsa())));
    EXPECT_EQ(FastConvertIsa(), IsaName(DetectedIsa()));  // Forced on this thread.
  }
  ASSERT_TRUE(SetFastConvertIsaForTesting(""));
  EXPECT_EQ(FastConvertIsa(), "portable");  // Follows ActiveIsa() again.
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

// Every entry of every table against a fresh general-path call: all 65,536 pairs.
TEST(Fp8TablesTest, TablesMatchGeneralPath) {
  const Rounding modes[] = {Rounding::kNearestEven, Rounding::kNearestAway, Rounding::kTowardZero,
                            Rounding::kUpward,      Rounding::kDownward,    Rounding::kToOdd};
  for (const FormatSpec& f : AllFormats()) {
    if (!IsFloat(f) || f.width != 8) continue;
    for (BinaryOp8 op : {BinaryOp8::kAdd, BinaryOp8::kSub, BinaryOp8::kMul, BinaryOp8::kDiv}) {
      for (Rounding rounding : modes) {
        for (bool sat : {false, true}) {
          OpEnv env;
          env.rounding = rounding;
          env.saturate = sat;
          SCOPED_TRACE(std::string(f.name) + " op " + std::to_string(static_cast<int>(op)) +
                       " " + RoundingName(env) + (sat ? " sat" : ""));
          absl::StatusOr<const Fp8OpTable*> t = GetFp8OpTable(f, op, env);
          ASSERT_TRUE(t.ok()) << t.status();
          int failures = 0;
          for (uint32_t a = 0; a < 256 && failures < 5; ++a) {
            for (uint32_t b = 0; b < 256; ++b) {
              OpResult want = op == BinaryOp8::kAdd   ? Add(f, a, b, env)
                              : op == BinaryOp8::kSub ? Sub(f, a, b, env)
                              : op == BinaryOp8::kMul ? Mul(f, a, b, env)
                                                      : Div(f, a, b, env);
              const auto ua = static_cast<uint8_t>(a), ub = static_cast<uint8_t>(b);
              if ((*t)->ResultAt(ua, ub) != want.bits || (*t)->FlagsAt(ua, ub) != want.flags) {
                ++failures;
                ADD_FAILURE() << HexBits(f, a) << ", " << HexBits(f, b) << ": table "
                              << HexBits(f, (*t)->ResultAt(ua, ub)) << " "
                              << FlagsToString((*t)->FlagsAt(ua, ub)) << ", general "
                              << HexBits(f, want.bits) << " " << FlagsToString(want.flags);
              }
            }
          }
          // The same table comes back (built once).
          EXPECT_EQ(*GetFp8OpTable(f, op, env), *t);
        }
      }
    }
  }
}

TEST(Fp8TablesTest, ArrayApiAndHeaderExample) {
  OpEnv env;
  absl::StatusOr<const Fp8OpTable*> t = GetFp8OpTable(Float8E4M3FN(), BinaryOp8::kMul, env);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->ResultAt(0x7E, 0x40), 0x7F);
  EXPECT_EQ((*t)->FlagsAt(0x7E, 0x40), kOverflow | kInexact);
  EXPECT_EQ((*t)->ResultAt(0xFE, 0x40), 0xFF);
  std::vector<uint8_t> a = {0x38, 0x7E}, b = {0x38, 0x40}, out(2);
  EXPECT_EQ(ApplyBinaryOp8(**t, a, b, out), kOverflow | kInexact);
  EXPECT_EQ(out, (std::vector<uint8_t>{0x38, 0x7F}));
  out = {0, 0};
  ApplyBinaryOp8NoFlags(**t, a, b, out);
  EXPECT_EQ(out, (std::vector<uint8_t>{0x38, 0x7F}));
  Flags accrued = 0;
  env.saturate = true;
  ASSERT_TRUE(ApplyBinaryOp8(Float8E4M3FN(), BinaryOp8::kMul, env, a, b, out, &accrued).ok());
  EXPECT_EQ(out, (std::vector<uint8_t>{0x38, 0x7E}));
  EXPECT_EQ(accrued, kOverflow | kInexact);

  EXPECT_EQ(GetFp8OpTable(Float16(), BinaryOp8::kAdd, OpEnv{}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GetFp8OpTable(Int8(), BinaryOp8::kAdd, OpEnv{}).status().code(),
            absl::StatusCode::kInvalidArgument);
  OpEnv sr;
  sr.rounding = Rounding::kStochastic;
  sr.sr_bits = 4;
  EXPECT_EQ(GetFp8OpTable(Float8E5M2(), BinaryOp8::kAdd, sr).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyBinaryOp8(Float8E5M2(), BinaryOp8::kAdd, OpEnv{}, a, b,
                           std::span<uint8_t>(out.data(), 1)).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fpconform
