// The epilogue's scale stage and output conversion (epilogue.h): values against formats' soft
// Mul and Convert bit for bit, and every bound against the exact error (oracles' exact
// accumulator), for both scale orders, outputs of 8 to 53 significand bits and scales across
// float32's range (subnormal and overflowing products included).
#include "accumulation/epilogue.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include "gtest/gtest.h"
#include "accumulation/model.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/ops.h"
#include "oracles/exact_sum.h"

namespace fpconform {
namespace {

// A float32 value sign * (1 + U) * 2^e, e uniform in [lo, hi].
double RandomFloat32(PinnedRng& rng, int lo, int hi) {
  const int e = lo + static_cast<int>(rng.Below(static_cast<uint64_t>(hi - lo + 1)));
  const double m = 1 + rng.Uniform01();
  const double v = std::ldexp(rng.Below(2) ? -m : m, e);
  return ToDouble(Float32(), DoubleToBits(Float32(), v));
}

// |v - S x| rounded up, exactly: S = sa sb, x a double, v a double.
double ExactError(double v, double sa, double sb, double x) {
  ExactAccumulator acc;
  const double s = sa * sb;  // Exact: two float32 values.
  acc.AddProduct(Float64(), DoubleToBits(Float64(), s), Float64(), DoubleToBits(Float64(), x));
  acc.Add(Float64(), DoubleToBits(Float64(), -v));
  OpEnv up;
  up.rounding = acc.Sign() < 0 ? Rounding::kDownward : Rounding::kUpward;
  return std::fabs(ToDouble(Float64(), acc.Round(Float64(), up).bits));
}

// |S x| rounded to nearest.
double ScaledExact(double sa, double sb, double x) {
  ExactAccumulator acc;
  acc.AddProduct(Float64(), DoubleToBits(Float64(), sa * sb), Float64(), DoubleToBits(Float64(), x));
  return std::fabs(ToDouble(Float64(), acc.Round(Float64(), OpEnv{}).bits));
}

TEST(EpilogueTest, HeaderExample) {
  const EpilogueValue v =
      ApplyScale(ScaleOrder::kProduct, Float32(), 0x40400000, 0x1p-20, EpilogueScales{0.5, 0.25});
  EXPECT_EQ(v.bits, 0x3EC00000u);
  EXPECT_EQ(v.format, &Float32());
  EXPECT_EQ(v.bound, 0x1p-23 * kEpilogueUp);
}

// The binary64 products of ApplyScale are the soft path's: fl32(fl32(S) * fl32(y)) and
// fl32(fl32(fl32(y) s_a) s_b) through formats' Convert and Mul, bit for bit, including
// subnormal, overflowing and special values.
TEST(EpilogueTest, ValuesAreTheSoftPathsBitForBit) {
  PinnedRng rng(TestSeed(20261205, "EpilogueTest.ValuesAreTheSoftPathsBitForBit"));
  const FormatSpec* froms[] = {&Float32(), &BFloat16(), &Float16(), &Float64()};
  int checked = 0;
  for (int i = 0; i < 20000; ++i) {
    const FormatSpec& from = *froms[i % 4];
    const double sa = RandomFloat32(rng, -70, 70), sb = RandomFloat32(rng, -70, 70);
    uint64_t y;
    switch (i % 11) {
      case 0: y = ZeroBits(from, true); break;                // -0.
      case 1: y = InfBits(from, rng.Below(2) != 0); break;    // +-Inf.
      case 2: y = DoubleToBits(from, std::nan("")); break;
      default: y = DoubleToBits(from, RandomFloat32(rng, -100, 100) * (1 + rng.Uniform01()));
    }
    SCOPED_TRACE(std::string(from.name) + " y=" + std::to_string(y) + " sa=" + std::to_string(sa) +
                 " sb=" + std::to_string(sb));
    const uint64_t y32 = Convert(from, Float32(), y, OpEnv{}).bits;
    const uint64_t a32 = DoubleToBits(Float32(), sa), b32 = DoubleToBits(Float32(), sb);
    const uint64_t s32 = DoubleToBits(Float32(), sa * sb);
    const uint64_t want_p = Mul(Float32(), s32, y32, OpEnv{}).bits;
    const uint64_t want_s = Mul(Float32(), Mul(Float32(), y32, a32, OpEnv{}).bits, b32, OpEnv{}).bits;
    const uint64_t got_p = ApplyScale(ScaleOrder::kProduct, from, y, 0, {sa, sb}).bits;
    const uint64_t got_s = ApplyScale(ScaleOrder::kSequential, from, y, 0, {sa, sb}).bits;
    if (IsNanBits(Float32(), want_p)) {
      EXPECT_TRUE(IsNanBits(Float32(), got_p));
    } else {
      EXPECT_EQ(got_p, want_p);
    }
    if (IsNanBits(Float32(), want_s)) {
      EXPECT_TRUE(IsNanBits(Float32(), got_s));
    } else {
      EXPECT_EQ(got_s, want_s);
    }
    ++checked;
  }
  EXPECT_EQ(checked, 20000);
}

// Every bound covers the exact error |v - S x| of the scaled value, and the conversion's covers
// |fl_to(v) - S x|: y = the exact value x with an error of at most b, in four output formats.
TEST(EpilogueTest, BoundsCoverTheExactError) {
  PinnedRng rng(TestSeed(7, "EpilogueTest.BoundsCoverTheExactError"));
  const FormatSpec* froms[] = {&Float32(), &BFloat16(), &Float64(), &Float16()};
  const FormatSpec* tos[] = {&BFloat16(), &Float8E4M3FN(), &Float16(), &Float32()};
  int finite = 0, tight = 0;
  for (int i = 0; i < 20000; ++i) {
    const FormatSpec& from = *froms[i % 4];
    const ScaleOrder order = (i / 4) % 2 ? ScaleOrder::kSequential : ScaleOrder::kProduct;
    // Scales mostly near 1 (normal products), a quarter of them extreme (subnormal S).
    const int range = (i % 8) < 2 ? 75 : 12;
    const double sa = RandomFloat32(rng, -range, range / 2), sb = RandomFloat32(rng, -range, 6);
    const double x = rng.Normal() * std::ldexp(1.0, static_cast<int>(rng.Below(40)) - 20);
    // y: x moved by up to 2^-8 relative and rounded into `from`; b: |y - x| rounded up, times
    // 1..2.
    const uint64_t y = DoubleToBits(from, x * (1 + rng.Uniform(-1, 1) * 0x1p-8));
    const double b = ExactError(ToDouble(from, y), 1, 1, x) * (1 + rng.Uniform01());
    SCOPED_TRACE(std::string(from.name) + (order == ScaleOrder::kProduct ? " product" : " sequential") +
                 " x=" + std::to_string(x) + " sa=" + std::to_string(sa) + " sb=" + std::to_string(sb));
    const EpilogueValue v = ApplyScale(order, from, y, b, {sa, sb});
    const double vd = ToDouble(Float32(), v.bits);
    if (!std::isfinite(vd)) continue;
    ++finite;
    const double err = ExactError(vd, sa, sb, x);
    EXPECT_LE(err, v.bound);
    const double prior = ScaleAPriori(order, from, y, b, {sa, sb}, ScaledExact(sa, sb, x));
    EXPECT_LE(err, prior);
    if (v.bound < 4 * err + std::ldexp(1.0, -140)) ++tight;
    const FormatSpec& to = *tos[(i / 8) % 4];
    OpEnv env;
    env.saturate = &to == &Float8E4M3FN();
    const EpilogueValue c = ConvertOutput(v, to, env);
    EXPECT_EQ(c.bits, Convert(Float32(), to, v.bits, env).bits);
    const double cd = ToDouble(to, c.bits);
    if (std::isfinite(cd)) {
      EXPECT_LE(ExactError(cd, sa, sb, x), c.bound);
    }
  }
  EXPECT_GT(finite, 19000);
  EXPECT_GT(tight, 1000);  // The a posteriori bound is not vacuous.
}

TEST(EpilogueTest, ApplyEpilogueIsScaleThenConversion) {
  Model m;
  m.inputs.a = &Float8E4M3FN();
  m.accumulator.format = &Float32();
  m.accumulator.fraction_bits = 23;
  m.output.format = &Float32();
  const uint64_t y = DoubleToBits(Float32(), 1234.5678);
  // No scales and the model's own format: unchanged.
  EpilogueValue v = ApplyEpilogue(m, y, 0.25, nullptr, Float32(), OpEnv{});
  EXPECT_EQ(v.bits, y);
  EXPECT_EQ(v.bound, 0.25);
  const EpilogueScales s{0.375, 0.0078125};
  for (ScaleOrder order : {ScaleOrder::kProduct, ScaleOrder::kSequential}) {
    m.epilogue.scale_order = order;
    OpEnv rtz;
    rtz.rounding = Rounding::kTowardZero;
    v = ApplyEpilogue(m, y, 0.25, &s, BFloat16(), rtz);
    const EpilogueValue scaled = ApplyScale(order, Float32(), y, 0.25, s);
    const EpilogueValue want = ConvertOutput(scaled, BFloat16(), rtz);
    EXPECT_EQ(v.format, &BFloat16());
    EXPECT_EQ(v.bits, want.bits);
    EXPECT_EQ(v.bound, want.bound);
    EXPECT_GT(v.bound, scaled.bound);
  }
}

// epilogue.c = "after_scale": fl32(S32 y + c) against the host's fmaf (RNE) bit for bit, and its
// bound against the exact |v - (S x + c)| in every rounding mode, x within y's bound.
TEST(EpilogueTest, ScaleAddCIsOneFmaAndItsBoundHolds) {
  PinnedRng rng(TestSeed(20261213, "EpilogueTest.ScaleAddC"));
  int checked = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const double y = RandomFloat32(rng, -30, 30);
    const double c = trial % 7 == 0 ? 0.0 : RandomFloat32(rng, -40, 40);
    const EpilogueScales sc{RandomFloat32(rng, -20, 10), RandomFloat32(rng, -20, 10)};
    const double b = trial % 3 == 0 ? 0.0 : std::fabs(y) * std::ldexp(1.0, -static_cast<int>(rng.Below(30)) - 5);
    const double x = y + b * (2 * rng.Uniform01() - 1);  // Some exact value within the bound.
    OpEnv env;
    env.rounding = static_cast<Rounding>(rng.Below(5));  // rne, rna, rtz, rup, rdn.
    if (trial % 2 == 0) env.rounding = Rounding::kNearestEven;
    const uint64_t ybits = DoubleToBits(Float32(), y), cbits = DoubleToBits(Float32(), c);
    const EpilogueValue v = ApplyScaleAddC(Float32(), ybits, b, sc, Float32(), cbits, env);
    const double vd = ToDouble(Float32(), v.bits);
    if (!std::isfinite(vd)) continue;
    if (env.rounding == Rounding::kNearestEven) {
      const float host = std::fmaf(static_cast<float>(sc.a * sc.b), static_cast<float>(y), static_cast<float>(c));
      ASSERT_EQ(v.bits, std::bit_cast<uint32_t>(host)) << y << " " << c << " " << sc.a << " " << sc.b;
    }
    // |v - (S x + c)| exactly.
    ExactAccumulator acc;
    acc.AddProduct(Float64(), DoubleToBits(Float64(), sc.a * sc.b), Float64(), DoubleToBits(Float64(), x));
    acc.Add(Float32(), cbits);
    acc.Add(Float64(), DoubleToBits(Float64(), -vd));
    OpEnv up;
    up.rounding = acc.Sign() < 0 ? Rounding::kDownward : Rounding::kUpward;
    const double err = std::fabs(ToDouble(Float64(), acc.Round(Float64(), up).bits));
    ASSERT_LE(err, v.bound) << "trial " << trial;
    ++checked;
  }
  EXPECT_GT(checked, 19000);
}

TEST(EpilogueTest, CheckScalesFollowsTheModel) {
  Model m;
  m.name = "p";
  EXPECT_TRUE(CheckEpilogueScales(m, 64, 1).ok());  // Default row_col.
  EXPECT_TRUE(CheckEpilogueScales(m, 0, 0).ok());
  m.epilogue.scale = EpilogueScale::kTensor;
  EXPECT_TRUE(CheckEpilogueScales(m, 1, 1).ok());
  EXPECT_TRUE(CheckEpilogueScales(m, 0, 1).ok());
  EXPECT_EQ(CheckEpilogueScales(m, 1, 32).message(),
            "model 'p' takes one scale per tensor (epilogue.scale = \"tensor\") but 32 scales were "
            "given for B");
  m.epilogue.scale = EpilogueScale::kNone;
  EXPECT_TRUE(CheckEpilogueScales(m, 0, 0).ok());
  EXPECT_EQ(CheckEpilogueScales(m, 1, 0).message(),
            "model 'p' has no scale stage (epilogue.scale = \"none\") but scales were given");
  m.epilogue.scale = EpilogueScale::kBlock;
  m.epilogue.scale_block = 128;
  EXPECT_TRUE(CheckEpilogueScales(m, 0, 0).ok());
  EXPECT_EQ(CheckEpilogueScales(m, 64, 1).message(),
            "model 'p' takes per-block scales (epilogue.scale = \"block\", one per 128 products "
            "along K), not one per tensor, row or column");
}

}  // namespace
}  // namespace fpconform
