// Tests of the elementwise oracles (elementary.h):
//   * special values from the IEEE 754-2019 §9.2 definitions and the header's limits;
//   * thresholds derived from the spec: exp's overflow and underflow inputs in float32 (from
//     ln(max finite + ulp/2) and ln(2^-150), computed here with plain MPFR), gelu's underflow
//     threshold (found by bisection over float32 with the independent evaluation below);
//   * every bfloat16 and float16 input (label exhaustive; a 1/16 stride under label oracle) and
//     seeded float32 samples: ElementaryRound under rne against an independent path (plain MPFR
//     formulas at 400 bits, the textbook formula for each function, rounded by MPFR's own IEEE
//     recipe: emin/emax of the format, mpfr_check_range, mpfr_subnormalize), and the batch's
//     certified binary64 path against ElementaryRound, bits and flags, in every mode rne rna rtz
//     rup rdn rto;
//   * Boost.Multiprecision (cpp_bin_float_50) as a second opinion for exp, log, tanh and erf
//     (via gelu) on a seeded sample: its value must round to ElementaryEnclose's nearest double.
// Seeded: FPCONFORM_SEED overrides the seed (printed on failure).
#include "oracles/elementary.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <boost/multiprecision/cpp_bin_float.hpp>
#include <gtest/gtest.h>
#include <mpfr.h>

#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/format_spec.h"
#include "oracles/certified_double.h"
#include "oracles/elementary_test_support.h"
#include "oracles/mpfr_oracle.h"
#include "oracles/mpfr_plumbing.h"

namespace fpconform {
namespace {

// FPCONFORM_SEED or the default, printed (cases/test_seed.h).
uint64_t Seed() { return TestSeed(20261204, "elementary_test"); }

std::string Hex(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llX", static_cast<unsigned long long>(b));
  return buf;
}

uint64_t F32(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// ---- Names. ----

TEST(ElementaryNames, RoundTripAndError) {
  for (ElementaryFn fn : AllElementaryFns()) {
    auto p = ParseElementaryFn(ElementaryFnName(fn));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, fn);
  }
  std::vector<uint64_t> in(2), out(3);
  EXPECT_FALSE(ElementaryRoundBatch(ElementaryFn::kExp, Float32(), in, Float32(), OpEnv{}, out, {},
                                    nullptr)
                   .ok());
  out.resize(2);
  EXPECT_FALSE(ElementaryRoundBatch(ElementaryFn::kExp, Float32(), in, Int8(), OpEnv{}, out, {},
                                    nullptr)
                   .ok());
  EXPECT_TRUE(ElementarySupports(Float32(), Float64()).ok());
  auto bad = ParseElementaryFn("softplus");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("gelu_tanh"), std::string::npos);
  EXPECT_NE(bad.status().message().find("softplus"), std::string::npos);
}

// ---- Special values (float32 in and out unless the row says otherwise). ----

struct SpecialRow {
  const char* what;
  ElementaryFn fn;
  const FormatSpec* in;
  uint64_t bits;
  const FormatSpec* out;
  bool sat;
  uint64_t expect;  // kNanAny: some NaN.
  Flags flags;
};
constexpr uint64_t kNanAny = ~uint64_t{0};
constexpr uint64_t kPInf = 0x7F800000, kNInf = 0xFF800000, kNaN32 = 0x7FC00000, kOne = 0x3F800000;

TEST(ElementarySpecial, Table) {
  const FormatSpec* f = &Float32();
  const FormatSpec* e4 = &Float8E4M3FN();
  using E = ElementaryFn;
  const SpecialRow rows[] = {
      {"exp(-0) = 1", E::kExp, f, 0x80000000, f, false, kOne, 0},
      {"exp(-inf) = +0", E::kExp, f, kNInf, f, false, 0, 0},
      {"exp(+inf) = +inf", E::kExp, f, kPInf, f, false, kPInf, 0},
      {"exp2(-inf) = +0", E::kExp2, f, kNInf, f, false, 0, 0},
      {"exp2(3) = 8 exactly", E::kExp2, f, F32(3.0f), f, false, F32(8.0f), 0},
      {"exp2(-149) = min subnormal exactly", E::kExp2, f, F32(-149.0f), f, false, 1, 0},
      {"log(+0) = -inf, z", E::kLog, f, 0, f, false, kNInf, kDivideByZero},
      {"log(-0) = -inf, z", E::kLog, f, 0x80000000, f, false, kNInf, kDivideByZero},
      {"log(-1) = NaN, v", E::kLog, f, F32(-1.0f), f, false, kNanAny, kInvalid},
      {"log(-inf) = NaN, v", E::kLog, f, kNInf, f, false, kNanAny, kInvalid},
      {"log(1) = +0", E::kLog, f, kOne, f, false, 0, 0},
      {"log(+inf) = +inf", E::kLog, f, kPInf, f, false, kPInf, 0},
      {"tanh(-0) = -0", E::kTanh, f, 0x80000000, f, false, 0x80000000, 0},
      {"tanh(-inf) = -1", E::kTanh, f, kNInf, f, false, 0xBF800000, 0},
      {"sigmoid(-0) = 0.5", E::kSigmoid, f, 0x80000000, f, false, 0x3F000000, 0},
      {"sigmoid(+inf) = 1", E::kSigmoid, f, kPInf, f, false, kOne, 0},
      {"sigmoid(-inf) = +0", E::kSigmoid, f, kNInf, f, false, 0, 0},
      {"silu(-0) = -0", E::kSilu, f, 0x80000000, f, false, 0x80000000, 0},
      {"silu(-inf) = -0 (limit)", E::kSilu, f, kNInf, f, false, 0x80000000, 0},
      {"silu(+inf) = +inf", E::kSilu, f, kPInf, f, false, kPInf, 0},
      {"gelu(+0) = +0", E::kGelu, f, 0, f, false, 0, 0},
      {"gelu(-inf) = -0 (limit)", E::kGelu, f, kNInf, f, false, 0x80000000, 0},
      {"gelu_tanh(-0) = -0", E::kGeluTanh, f, 0x80000000, f, false, 0x80000000, 0},
      {"gelu_tanh(+inf) = +inf", E::kGeluTanh, f, kPInf, f, false, kPInf, 0},
      {"rsqrt(+0) = +inf, z", E::kRsqrt, f, 0, f, false, kPInf, kDivideByZero},
      {"rsqrt(-0) = -inf, z", E::kRsqrt, f, 0x80000000, f, false, kNInf, kDivideByZero},
      {"rsqrt(-2) = NaN, v", E::kRsqrt, f, F32(-2.0f), f, false, kNanAny, kInvalid},
      {"rsqrt(+inf) = +0", E::kRsqrt, f, kPInf, f, false, 0, 0},
      {"rsqrt(4) = 0.5 exactly", E::kRsqrt, f, F32(4.0f), f, false, F32(0.5f), 0},
      {"reciprocal(-0) = -inf, z", E::kReciprocal, f, 0x80000000, f, false, kNInf,
       kDivideByZero},
      {"reciprocal(-inf) = -0", E::kReciprocal, f, kNInf, f, false, 0x80000000, 0},
      {"reciprocal(3) inexact", E::kReciprocal, f, F32(3.0f), f, false, 0x3EAAAAAB, kInexact},
      {"qNaN propagates", E::kExp, f, 0x7FC00001, f, false, 0x7FC00001, 0},
      {"sNaN -> qNaN, v", E::kTanh, f, 0x7F800001, f, false, 0x7FC00001, kInvalid},
      {"NaN -> NaN for a float8 output", E::kGelu, f, kNaN32, e4, false, kNanAny, 0},
      // float8_e4m3fn: no Inf (OCP OFP8 r1.0 Table 1), max 448.
      {"e4m3fn: exp(8) = 2981 overflows to NaN", E::kExp, f, F32(8.0f), e4, false, kNanAny,
       kOverflow | kInexact},
      {"e4m3fn sat: exp(8) -> 448", E::kExp, f, F32(8.0f), e4, true, 0x7E, kOverflow | kInexact},
      {"e4m3fn: reciprocal(+0) = NaN, z", E::kReciprocal, f, 0, e4, false, kNanAny,
       kDivideByZero},
      {"e4m3fn: exp(+inf) = NaN (no Inf)", E::kExp, f, kPInf, e4, false, kNanAny, 0},
      {"e4m3fn sat: exp(+inf) = 448", E::kExp, f, kPInf, e4, true, 0x7E, 0},
      {"e4m3fn: exp(1) -> 2.75 = 0b0.1000.011", E::kExp, f, kOne, e4, false, 0x43, kInexact},
  };
  for (const SpecialRow& r : rows) {
    SCOPED_TRACE(r.what);
    OpEnv env;
    env.saturate = r.sat;
    const OpResult got = ElementaryRound(r.fn, *r.in, r.bits, *r.out, env);
    if (r.expect == kNanAny) {
      EXPECT_TRUE(MpfrIsNanBits(*r.out, got.bits)) << Hex(got.bits);
    } else {
      EXPECT_EQ(got.bits, r.expect) << Hex(got.bits);
    }
    EXPECT_EQ(got.flags, r.flags) << FlagsToString(got.flags);
    // The batch gives the same.
    uint64_t ob = 0;
    Flags of = 0;
    ElementaryStats st;
    ASSERT_TRUE(ElementaryRoundBatch(r.fn, *r.in, std::span<const uint64_t>(&r.bits, 1), *r.out,
                                     env, std::span<uint64_t>(&ob, 1), std::span<Flags>(&of, 1),
                                     &st)
                    .ok());
    if (r.expect == kNanAny) {
      EXPECT_TRUE(MpfrIsNanBits(*r.out, ob));
    } else {
      EXPECT_EQ(ob, got.bits);
    }
    EXPECT_EQ(of, got.flags);
  }
}

// ---- The independent path: textbook formulas in plain MPFR at 400 bits
// (elementary_test_support.h). ----

// MPFR's IEEE recipe (rne) of a 400-bit value into an IEEE format with subnormals and Inf.
uint64_t RecipeRne(const FormatSpec& f, mpfr_srcptr v) {
  MpfrValue r(Precision(f));
  {
    MpfrExponentRange range(f);
    int t = mpfr_set(r, v, MPFR_RNDN);
    t = mpfr_check_range(r, t, MPFR_RNDN);
    mpfr_subnormalize(r, t, MPFR_RNDN);
  }
  return MpfrEncodeValue(f, r);
}

constexpr Rounding kModes[] = {Rounding::kNearestEven, Rounding::kNearestAway,
                               Rounding::kTowardZero,  Rounding::kUpward,
                               Rounding::kDownward,    Rounding::kToOdd};

// Checks inputs `bits` of format f (output format out): rne against the independent path
// (finite non-NaN inputs; out must be IEEE with Inf) and the batch against ElementaryRound in
// every mode. Returns the batch stats under rne.
ElementaryStats CheckInputs(ElementaryFn fn, const FormatSpec& f, const FormatSpec& out,
                            const std::vector<uint64_t>& bits, bool independent) {
  SCOPED_TRACE(std::string(ElementaryFnName(fn)) + " " + std::string(f.name) + " -> " +
               std::string(out.name) + " seed " + std::to_string(Seed()));
  ElementaryStats rne_stats;
  std::vector<uint64_t> ob(bits.size());
  std::vector<Flags> of(bits.size());
  int failures = 0;
  for (Rounding mode : kModes) {
    OpEnv env;
    env.rounding = mode;
    ElementaryStats st;
    EXPECT_TRUE(ElementaryRoundBatch(fn, f, bits, out, env, ob, of, &st, 2).ok());
    if (mode == Rounding::kNearestEven) rne_stats = st;
    for (size_t i = 0; i < bits.size() && failures < 10; ++i) {
      const OpResult ref = ElementaryRound(fn, f, bits[i], out, env);
      if (ref.bits != ob[i] || ref.flags != of[i]) {
        ++failures;
        ADD_FAILURE() << "batch vs ElementaryRound, mode " << RoundingName(env) << " input "
                      << Hex(bits[i]) << ": " << Hex(ob[i]) << " " << FlagsToString(of[i])
                      << " vs " << Hex(ref.bits) << " " << FlagsToString(ref.flags);
      }
      if (mode == Rounding::kNearestEven && independent) {
        MpfrValue x(64), v(400);
        const MpfrDecoded d = MpfrDecodeBits(f, bits[i], false, x);
        if (d.kind != MpfrKind::kFinite) continue;
        if (fn == ElementaryFn::kLog && d.sign) continue;
        if (fn == ElementaryFn::kRsqrt && d.sign) continue;
        TextbookElementary(fn, x, v);
        uint64_t want;
        if (mpfr_zero_p(v)) {
          want = MpfrEncodeValue(out, v);
        } else {
          want = RecipeRne(out, v);
        }
        if (want != ref.bits) {
          ++failures;
          ADD_FAILURE() << "ElementaryRound vs independent MPFR, input " << Hex(bits[i]) << ": "
                        << Hex(ref.bits) << " vs " << Hex(want);
        }
      }
    }
  }
  return rne_stats;
}

std::vector<uint64_t> Strided16(int stride) {
  std::vector<uint64_t> v;
  for (uint64_t b = 0; b < 0x10000; b += static_cast<uint64_t>(stride)) v.push_back(b);
  return v;
}

void Sweep16(const FormatSpec& f, int stride) {
  const std::vector<uint64_t> bits = Strided16(stride);
  for (ElementaryFn fn : AllElementaryFns()) {
    const ElementaryStats st = CheckInputs(fn, f, f, bits, true);
    std::printf("%-10s %-8s stride %2d: fast %lld special %lld fallback %lld\n",
                std::string(ElementaryFnName(fn)).c_str(), std::string(f.name).c_str(), stride,
                static_cast<long long>(st.fast), static_cast<long long>(st.special),
                static_cast<long long>(st.fallback));
  }
}

TEST(ElementarySweep, BFloat16Strided) { Sweep16(BFloat16(), 16); }
TEST(ElementarySweep, Float16Strided) { Sweep16(Float16(), 16); }
TEST(ElementarySweep, ExhaustiveBFloat16) { Sweep16(BFloat16(), 1); }
TEST(ElementarySweep, ExhaustiveFloat16) { Sweep16(Float16(), 1); }

// Seeded float32: half random bit patterns, half N(0, 3) values; into float32 and bfloat16.
TEST(ElementarySweep, Float32Seeded) {
  PinnedRng rng(DeriveSeed(Seed(), {28, 1}));
  std::vector<uint64_t> bits;
  for (int i = 0; i < 2000; ++i) {
    bits.push_back(rng.Next() & 0xFFFFFFFF);
    bits.push_back(F32(static_cast<float>(3.0 * rng.Normal())));
  }
  for (ElementaryFn fn : AllElementaryFns()) {
    CheckInputs(fn, Float32(), Float32(), bits, true);
    CheckInputs(fn, Float32(), BFloat16(), bits, true);
  }
}

// FP8 outputs (formats without Inf, fnuz) and inputs: batch against ElementaryRound.
TEST(ElementarySweep, Float8AllInputs) {
  std::vector<uint64_t> bits;
  for (uint64_t b = 0; b < 256; ++b) bits.push_back(b);
  for (const FormatSpec* f : {&Float8E4M3FN(), &Float8E5M2(), &Float8E4M3FNUZ()}) {
    for (ElementaryFn fn : AllElementaryFns()) {
      CheckInputs(fn, *f, *f, bits, false);
      CheckInputs(fn, *f, Float32(), bits, false);
    }
  }
}

// ---- Thresholds derived from the spec. ----

// The float32 value just above / below a threshold t (> 0 or < 0).
float Next(float x, bool up) { return std::nextafter(x, up ? 1e30f : -1e30f); }

TEST(ElementaryThresholds, ExpFloat32) {
  OpEnv env;
  MpfrValue t(200);
  // Overflow under rne: e^x >= max + ulp/2 = (2 - 2^-24) 2^127, x >= ln of that.
  mpfr_set_ui_2exp(t, (1UL << 25) - 1, 127 - 24, MPFR_RNDN);
  mpfr_log(t, t, MPFR_RNDN);
  const float over = mpfr_get_flt(t, MPFR_RNDU);  // Smallest float32 >= threshold.
  EXPECT_EQ(ElementaryRound(ElementaryFn::kExp, Float32(), F32(over), Float32(), env).bits,
            kPInf);
  const OpResult below =
      ElementaryRound(ElementaryFn::kExp, Float32(), F32(Next(over, false)), Float32(), env);
  EXPECT_LT(below.bits, kPInf);  // Finite,
  EXPECT_EQ(below.flags, kInexact);  // without overflow.
  EXPECT_EQ(F32(over), 0x42B17218u);  // The well-known expf overflow input, 88.72284.
  // Underflow to zero under rne: e^x <= 2^-150 (half the smallest subnormal) gives +0.
  mpfr_set_ui_2exp(t, 1, -150, MPFR_RNDN);
  mpfr_log(t, t, MPFR_RNDN);
  const float under = mpfr_get_flt(t, MPFR_RNDD);  // Largest float32 <= ln 2^-150.
  EXPECT_EQ(ElementaryRound(ElementaryFn::kExp, Float32(), F32(under), Float32(), env).bits, 0u);
  EXPECT_EQ(ElementaryRound(ElementaryFn::kExp, Float32(), F32(Next(under, true)), Float32(),
                            env).bits,
            1u);
  // rup never gives zero for finite inputs.
  env.rounding = Rounding::kUpward;
  EXPECT_EQ(ElementaryRound(ElementaryFn::kExp, Float32(), F32(-1e30f), Float32(), env).bits, 1u);
}

// gelu(x) for x -> -inf: 1 + erf(x/sqrt2) underflows. The largest float32 x whose |gelu(x)|
// is at most 2^-150 (rne gives -0) is found by bisection with the independent evaluation; just
// above it rne gives -2^-149.
TEST(ElementaryThresholds, GeluUnderflowFloat32) {
  auto tiny = [](float x) {
    MpfrValue xv(64), v(400);
    mpfr_set_flt(xv, x, MPFR_RNDN);
    TextbookElementary(ElementaryFn::kGelu, xv, v);
    return mpfr_cmpabs_ui(v, 0) == 0 ||
           mpfr_cmp_si_2exp(v, -1, -150) >= 0;  // v >= -2^-150: |v| <= 2^-150.
  };
  uint32_t lo = F32(-10.0f), hi = F32(-20.0f);  // gelu(-10) > 2^-150 in magnitude; (-20) not.
  ASSERT_FALSE(tiny(-10.0f));
  ASSERT_TRUE(tiny(-20.0f));
  while (hi - lo > 1) {  // Bits grow with magnitude for negative floats.
    const uint32_t mid = lo + (hi - lo) / 2;
    float m;
    std::memcpy(&m, &mid, 4);
    if (tiny(m)) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  OpEnv env;
  EXPECT_EQ(ElementaryRound(ElementaryFn::kGelu, Float32(), hi, Float32(), env).bits,
            0x80000000u);
  EXPECT_EQ(ElementaryRound(ElementaryFn::kGelu, Float32(), lo, Float32(), env).bits,
            0x80000001u);
  float at;
  std::memcpy(&at, &hi, 4);
  std::printf("gelu float32 underflow threshold: %a (%s)\n", static_cast<double>(at),
              Hex(hi).c_str());
}

// Subnormal inputs under daz read as zeros.
TEST(ElementarySpecial, Daz) {
  OpEnv env;
  env.denormals_are_zero = true;
  EXPECT_EQ(ElementaryRound(ElementaryFn::kExp, Float32(), 1, Float32(), env).bits, kOne);
  EXPECT_EQ(ElementaryRound(ElementaryFn::kLog, Float32(), 1, Float32(), env).bits, kNInf);
  env.denormals_are_zero = false;
  EXPECT_EQ(ElementaryRound(ElementaryFn::kExp, Float32(), 1, Float32(), env).bits, kOne);
  MpfrValue t(400);
  mpfr_set_ui_2exp(t, 1, -149, MPFR_RNDN);
  mpfr_log(t, t, MPFR_RNDN);  // log(2^-149) = -103.2789...
  EXPECT_EQ(ElementaryRound(ElementaryFn::kLog, Float32(), 1, Float32(), env).bits,
            RecipeRne(Float32(), t));
}

// ---- Enclosure and Boost second opinion. ----

TEST(ElementaryEnclosure, BracketsAndBoost) {
  using boost::multiprecision::cpp_bin_float_50;
  PinnedRng rng(DeriveSeed(Seed(), {28, 2}));
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    const float xf = static_cast<float>(rng.Uniform(-30.0, 30.0));
    const uint64_t b = F32(xf);
    const cpp_bin_float_50 x = cpp_bin_float_50(static_cast<double>(xf));
    struct {
      ElementaryFn fn;
      cpp_bin_float_50 v;
      bool ok;
    } cases[] = {
        {ElementaryFn::kExp, exp(x), true},
        {ElementaryFn::kLog, xf > 0 ? log(x) : cpp_bin_float_50(0), xf > 0},
        {ElementaryFn::kTanh, tanh(x), true},
        {ElementaryFn::kGelu, x * (1 + erf(x / sqrt(cpp_bin_float_50(2)))) / 2, xf > -8},
    };
    for (const auto& c : cases) {
      if (!c.ok) continue;
      const ExactEnclosure e = ElementaryEnclose(c.fn, Float32(), b, OpEnv{});
      SCOPED_TRACE(std::string(ElementaryFnName(c.fn)) + " " + Hex(b) + " seed " +
                   std::to_string(Seed()));
      EXPECT_LE(e.lo, e.nearest);
      EXPECT_LE(e.nearest, e.hi);
      if (!e.exact) {
        EXPECT_EQ(std::nextafter(e.lo, 1e300), e.hi);
      }
      EXPECT_EQ(static_cast<double>(c.v), e.nearest);
      ++checked;
    }
  }
  EXPECT_GT(checked, 9000);
}

// ---- The certified binary64 evaluations: the exact value (MPFR, 300 bits, correctly rounded
// functions; the margin 2^-200 relative is far below the bounds) lies in every enclosure, and
// the bounds are tight enough to decide (relative width < 2^-44; erf 2^-40). ----

TEST(CertifiedDouble, EnclosuresContainTheExactValue) {
  namespace cd = certified;
  PinnedRng rng(DeriveSeed(Seed(), {28, 3}));
  MpfrValue x(64), v(300), t(300);
  int checked = 0;
  auto check = [&](const char* what, double at, cd::Ev ev) {
    ASSERT_TRUE(cd::Ok(ev)) << what << " " << at;
    const cd::Interval iv = cd::Enclose(ev);
    SCOPED_TRACE(std::string(what) + " at " + std::to_string(at) + " seed " +
                 std::to_string(Seed()));
    EXPECT_GT(mpfr_cmp_d(v, iv.lo), 0);  // lo < v < hi
    EXPECT_LT(mpfr_cmp_d(v, iv.hi), 0);
    // erf's alternating series cancels about 8 bits at |z| = 2.4.
    const double tight = std::string(what) == "erf" ? 0x1p-40 : 0x1p-44;
    EXPECT_LT(ev.e, tight * std::fabs(ev.y) + 0x1p-1000) << what;
    ++checked;
  };
  for (int i = 0; i < 1000; ++i) {
    const double a = rng.Uniform(-700, 700);
    mpfr_set_d(x, a, MPFR_RNDN);
    mpfr_exp(v, x, MPFR_RNDN);
    check("exp", a, cd::ExpEv(cd::Exact(a)));
    const double b = rng.Uniform(-1000, 1000);
    mpfr_set_d(x, b, MPFR_RNDN);
    mpfr_exp2(v, x, MPFR_RNDN);
    check("exp2", b, cd::Exp2Of(b));
    const double c = std::exp2(rng.Uniform(-1000, 1000)) * (1 + rng.Uniform01());
    mpfr_set_d(x, c, MPFR_RNDN);
    mpfr_log(v, x, MPFR_RNDN);
    if (c != 1.0) check("log", c, cd::LogEv(cd::Exact(c)));
    const double d = std::exp2(rng.Uniform(-60, 0));
    mpfr_set_d(x, d, MPFR_RNDN);
    mpfr_log1p(v, x, MPFR_RNDN);
    check("log1p", d, cd::Log1pEv(cd::Exact(d)));
    const double e = rng.Uniform(-19.9, 19.9);
    mpfr_set_d(x, e, MPFR_RNDN);
    mpfr_tanh(v, x, MPFR_RNDN);
    if (e != 0) check("tanh", e, cd::TanhOf(e));
    const double z = rng.Uniform(-2.4, 2.4);
    mpfr_set_d(x, z, MPFR_RNDN);
    mpfr_erf(v, x, MPFR_RNDN);
    if (std::fabs(z) > 0x1p-20) check("erf", z, cd::ErfEv(cd::Exact(z)));
    const double w = rng.Uniform(2.0, 30.0);
    mpfr_set_d(x, w, MPFR_RNDN);
    mpfr_erfc(v, x, MPFR_RNDN);  // sqrt(pi) e^(w^2) erfc(w)
    mpfr_sqr(t, x, MPFR_RNDN);
    mpfr_exp(t, t, MPFR_RNDN);
    mpfr_mul(v, v, t, MPFR_RNDN);
    mpfr_const_pi(t, MPFR_RNDN);
    mpfr_sqrt(t, t, MPFR_RNDN);
    mpfr_mul(v, v, t, MPFR_RNDN);
    check("erfc scaled", w, cd::ErfcScaledEv(cd::Exact(w)));
  }
  EXPECT_GT(checked, 6500);
}

}  // namespace
}  // namespace fpconform
