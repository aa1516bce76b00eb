// Tests of the along-axis oracles (axis_ops.h): the batch (binary64 path with MPFR fallback)
// against the MPFR method in every mode rne rna rtz rup rdn rto, and the MPFR method under rne
// against an independent evaluation (the textbook formulas in plain MPFR at 1000 bits, rounded
// by MPFR's IEEE recipe), on seeded rows: N(0, 1), large DC offset (mean 1e4, std 1), large
// logits (+-80 in float32), rows of length 1, equal entries, eps tiny and large, weights and
// biases; plus special values and argument errors. FPCONFORM_SEED overrides the seed.
#include "oracles/axis_ops.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mpfr.h>

#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/format_spec.h"
#include "oracles/mpfr_oracle.h"
#include "oracles/mpfr_plumbing.h"

namespace fpconform {
namespace {

// FPCONFORM_SEED or the default, printed (cases/test_seed.h).
uint64_t Seed() { return TestSeed(20261204, "axis_ops_test"); }

uint64_t F32(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
uint64_t Bf16(float f) { return F32(f) >> 16; }  // Truncation: an exact bfloat16 value.

std::string Hex(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llX", static_cast<unsigned long long>(b));
  return buf;
}

// Independent: plain formulas at 1000 bits, rne to `out` by MPFR's recipe. Returns false where
// the plain value is zero or not finite (not compared).
bool Independent(AxisOp op, const FormatSpec& in, const std::vector<uint64_t>& x,
                 const AxisParams& p, const FormatSpec& out, std::vector<uint64_t>& want) {
  const size_t n = x.size();
  const mpfr_rnd_t r = MPFR_RNDN;
  std::vector<MpfrValue> xs(n);
  for (size_t i = 0; i < n; ++i) {
    if (MpfrDecodeBits(in, x[i], false, xs[i]).kind != MpfrKind::kFinite &&
        !mpfr_zero_p(xs[i])) {
      return false;
    }
  }
  MpfrValue s(1000), t(1000), m(1000), v(1000), y(1000), wv(64), bv(64);
  want.assign(n, 0);
  mpfr_set_zero(s, 1);
  for (size_t j = 0; j < n; ++j) {
    if (op == AxisOp::kSoftmax || op == AxisOp::kLogSoftmax) {
      mpfr_exp(t, xs[j], r);
    } else if (op == AxisOp::kRmsNorm) {
      mpfr_sqr(t, xs[j], r);
    } else {
      mpfr_set(t, xs[j], r);
    }
    mpfr_add(s, s, t, r);
  }
  if (op == AxisOp::kLayerNorm) {
    mpfr_div_ui(m, s, static_cast<unsigned long>(n), r);
    mpfr_set_zero(v, 1);
    for (size_t j = 0; j < n; ++j) {
      mpfr_sub(t, xs[j], m, r);
      mpfr_sqr(t, t, r);
      mpfr_add(v, v, t, r);
    }
    mpfr_div_ui(v, v, static_cast<unsigned long>(n), r);
    mpfr_add_d(v, v, p.eps, r);
    mpfr_sqrt(v, v, r);
  }
  if (op == AxisOp::kRmsNorm) {
    mpfr_div_ui(v, s, static_cast<unsigned long>(n), r);
    mpfr_add_d(v, v, p.eps, r);
    mpfr_sqrt(v, v, r);
  }
  if (op == AxisOp::kLogSoftmax) mpfr_log(s, s, r);
  for (size_t i = 0; i < n; ++i) {
    switch (op) {
      case AxisOp::kSoftmax:
        mpfr_exp(y, xs[i], r);
        mpfr_div(y, y, s, r);
        break;
      case AxisOp::kLogSoftmax: mpfr_sub(y, xs[i], s, r); break;
      case AxisOp::kRmsNorm: mpfr_div(y, xs[i], v, r); break;
      case AxisOp::kLayerNorm:
        mpfr_sub(y, xs[i], m, r);
        mpfr_div(y, y, v, r);
        break;
    }
    if (!p.weight.empty()) {
      MpfrDecodeBits(*p.weight_format, p.weight[i], false, wv);
      mpfr_mul(y, y, wv, r);
    }
    if (!p.bias.empty()) {
      MpfrDecodeBits(*p.bias_format, p.bias[i], false, bv);
      mpfr_add(y, y, bv, r);
    }
    // Plain formulas leave rounding noise where the exact value is 0 (x - log e^x): skip those.
    if (mpfr_zero_p(y) || !mpfr_number_p(y) || mpfr_get_exp(y) < -900) return false;
    MpfrValue q(Precision(out));
    {
      MpfrExponentRange range(out);
      int tern = mpfr_set(q, y, MPFR_RNDN);
      tern = mpfr_check_range(q, tern, MPFR_RNDN);
      mpfr_subnormalize(q, tern, MPFR_RNDN);
    }
    want[i] = MpfrEncodeValue(out, q);
  }
  return true;
}

constexpr Rounding kModes[] = {Rounding::kNearestEven, Rounding::kNearestAway,
                               Rounding::kTowardZero,  Rounding::kUpward,
                               Rounding::kDownward,    Rounding::kToOdd};

struct Totals {
  AxisStats st;
  int independent_rows = 0;
};

// Checks `rows` rows of length n (row-major in x).
void CheckRows(AxisOp op, const FormatSpec& in, const std::vector<uint64_t>& x, int64_t rows,
               int64_t n, const AxisParams& p, const FormatSpec& out, const std::string& what,
               Totals* tot) {
  SCOPED_TRACE(std::string(AxisOpName(op)) + " " + what + " seed " + std::to_string(Seed()));
  std::vector<uint64_t> got(x.size()), ref(static_cast<size_t>(n)), want;
  int failures = 0;
  for (Rounding mode : kModes) {
    OpEnv env;
    env.rounding = mode;
    AxisStats st;
    ASSERT_TRUE(AxisRound(op, in, x, rows, n, p, out, env, got, &st, 2).ok());
    if (mode == Rounding::kNearestEven) tot->st += st;
    for (int64_t r = 0; r < rows && failures < 5; ++r) {
      const std::vector<uint64_t> row(x.begin() + r * n, x.begin() + (r + 1) * n);
      ASSERT_TRUE(AxisRoundRowMpfr(op, in, row, p, out, env, ref, {}).ok());
      for (int64_t i = 0; i < n; ++i) {
        if (got[static_cast<size_t>(r * n + i)] != ref[static_cast<size_t>(i)]) {
          ++failures;
          ADD_FAILURE() << "row " << r << " element " << i << " mode " << RoundingName(env)
                        << ": batch " << Hex(got[static_cast<size_t>(r * n + i)]) << " vs MPFR "
                        << Hex(ref[static_cast<size_t>(i)]) << " (x "
                        << Hex(row[static_cast<size_t>(i)]) << ")";
          break;
        }
      }
      if (mode == Rounding::kNearestEven && Independent(op, in, row, p, out, want)) {
        ++tot->independent_rows;
        for (int64_t i = 0; i < n; ++i) {
          if (want[static_cast<size_t>(i)] != ref[static_cast<size_t>(i)]) {
            ++failures;
            ADD_FAILURE() << "row " << r << " element " << i << ": MPFR method "
                          << Hex(ref[static_cast<size_t>(i)]) << " vs independent "
                          << Hex(want[static_cast<size_t>(i)]);
            break;
          }
        }
      }
    }
  }
}

std::vector<uint64_t> NormalRows(uint64_t key, int64_t rows, int64_t n, double mean, double sd,
                                 bool bf16 = false) {
  PinnedRng rng(DeriveSeed(Seed(), {28, 100, key}));
  std::vector<uint64_t> x(static_cast<size_t>(rows * n));
  for (uint64_t& b : x) {
    const float f = static_cast<float>(mean + sd * rng.Normal());
    b = bf16 ? Bf16(f) : F32(f);
  }
  return x;
}

constexpr AxisOp kOps[] = {AxisOp::kSoftmax, AxisOp::kLogSoftmax, AxisOp::kRmsNorm,
                           AxisOp::kLayerNorm};

TEST(AxisOps, RandomRows) {
  Totals tot;
  for (AxisOp op : kOps) {
    AxisParams p;
    CheckRows(op, Float32(), NormalRows(1, 24, 64, 0, 1), 24, 64, p, Float32(), "N(0,1) f32",
              &tot);
    CheckRows(op, Float32(), NormalRows(1, 24, 64, 0, 1), 24, 64, p, BFloat16(),
              "N(0,1) f32 -> bf16", &tot);
    CheckRows(op, BFloat16(), NormalRows(2, 24, 33, 0, 2, true), 24, 33, p, BFloat16(),
              "N(0,4) bf16", &tot);
    // float8 outputs (no Inf, NaN S.1111.111; fnuz: no -0).
    CheckRows(op, Float32(), NormalRows(7, 12, 20, 0, 1), 12, 20, p, Float8E4M3FN(),
              "f32 -> e4m3fn", &tot);
    CheckRows(op, Float32(), NormalRows(7, 12, 20, 0, 1), 12, 20, p, Float8E5M2FNUZ(),
              "f32 -> e5m2fnuz", &tot);
  }
  std::printf("random rows: fast %lld fallback %lld special %lld mpfr_rows %lld, %d rows vs "
              "independent\n",
              static_cast<long long>(tot.st.fast), static_cast<long long>(tot.st.fallback),
              static_cast<long long>(tot.st.special), static_cast<long long>(tot.st.mpfr_rows),
              tot.independent_rows);
  EXPECT_GT(tot.independent_rows, 100);
}

TEST(AxisOps, LargeDcOffsetAndLogits) {
  Totals tot;
  for (AxisOp op : kOps) {
    CheckRows(op, Float32(), NormalRows(3, 16, 128, 1e4, 1), 16, 128, AxisParams{}, Float32(),
              "mean 1e4 sd 1", &tot);
  }
  PinnedRng rng(DeriveSeed(Seed(), {28, 101}));
  std::vector<uint64_t> x(16 * 64);
  for (uint64_t& b : x) b = F32(static_cast<float>(rng.Uniform(-80, 80)));
  CheckRows(AxisOp::kSoftmax, Float32(), x, 16, 64, AxisParams{}, Float32(), "logits +-80",
            &tot);
  CheckRows(AxisOp::kLogSoftmax, Float32(), x, 16, 64, AxisParams{}, Float32(), "logits +-80",
            &tot);
  // A dominant logit: the others' share is below 2^-54 (softmax's max element just below 1).
  std::vector<uint64_t> dom = {F32(80.0f), F32(0.0f), F32(-3.0f), F32(1.5f)};
  CheckRows(AxisOp::kSoftmax, Float32(), dom, 1, 4, AxisParams{}, Float32(), "dominant", &tot);
  CheckRows(AxisOp::kLogSoftmax, Float32(), dom, 1, 4, AxisParams{}, Float32(), "dominant", &tot);
  std::printf("dc/logits: fast %lld fallback %lld special %lld\n",
              static_cast<long long>(tot.st.fast), static_cast<long long>(tot.st.fallback),
              static_cast<long long>(tot.st.special));
}

TEST(AxisOps, EpsWeightsBiasLengthOne) {
  Totals tot;
  const std::vector<uint64_t> x = NormalRows(4, 8, 48, 0.5, 1);
  PinnedRng rng(DeriveSeed(Seed(), {28, 102}));
  std::vector<uint64_t> w(48), b(48);
  for (uint64_t& v : w) v = Bf16(static_cast<float>(1 + 0.1 * rng.Normal()));
  for (uint64_t& v : b) v = Bf16(static_cast<float>(0.1 * rng.Normal()));
  for (double eps : {0x1p-100, 1e-5, 1e3}) {
    AxisParams p;
    p.eps = eps;
    CheckRows(AxisOp::kRmsNorm, Float32(), x, 8, 48, p, Float32(), "eps", &tot);
    CheckRows(AxisOp::kLayerNorm, Float32(), x, 8, 48, p, Float32(), "eps", &tot);
    p.weight_format = &BFloat16();
    p.weight = w;
    CheckRows(AxisOp::kRmsNorm, Float32(), x, 8, 48, p, Float32(), "eps weight", &tot);
    p.bias_format = &BFloat16();
    p.bias = b;
    CheckRows(AxisOp::kLayerNorm, Float32(), x, 8, 48, p, BFloat16(), "eps weight bias", &tot);
  }
  // Rows of length 1: softmax 1, log_softmax +0, rmsnorm x/sqrt(x^2 + eps), layernorm +0.
  const std::vector<uint64_t> one = {F32(3.0f), F32(-0.25f), F32(1e-20f)};
  for (AxisOp op : kOps) {
    CheckRows(op, Float32(), one, 3, 1, AxisParams{}, Float32(), "n = 1", &tot);
  }
  std::vector<uint64_t> y(3);
  ASSERT_TRUE(AxisRound(AxisOp::kSoftmax, Float32(), one, 3, 1, AxisParams{}, Float32(), OpEnv{},
                        y, nullptr)
                  .ok());
  EXPECT_EQ(y, std::vector<uint64_t>(3, 0x3F800000));
  ASSERT_TRUE(AxisRound(AxisOp::kLogSoftmax, Float32(), one, 3, 1, AxisParams{}, Float32(),
                        OpEnv{}, y, nullptr)
                  .ok());
  EXPECT_EQ(y, std::vector<uint64_t>(3, 0));
  ASSERT_TRUE(AxisRound(AxisOp::kLayerNorm, Float32(), one, 3, 1, AxisParams{}, Float32(),
                        OpEnv{}, y, nullptr)
                  .ok());
  EXPECT_EQ(y, std::vector<uint64_t>(3, 0));
}

// Masked rows (attention): -Inf entries in softmax/log_softmax; zeros in rmsnorm rows
// (post-ReLU); both taken by the binary64 path and checked against the MPFR method.
TEST(AxisOps, MaskedAndZeroEntries) {
  Totals tot;
  std::vector<uint64_t> x = NormalRows(6, 16, 40, 0, 2);
  PinnedRng rng(DeriveSeed(Seed(), {28, 103}));
  std::vector<uint64_t> masked = x, relu = x;
  for (size_t i = 0; i < x.size(); ++i) {
    if (rng.Below(3) == 0) masked[i] = 0xFF800000;            // -Inf
    if (rng.Below(2) == 0) relu[i] = rng.Below(2) ? 0 : 0x80000000;  // +-0
  }
  for (int64_t r = 0; r < 16; ++r) masked[static_cast<size_t>(r * 40)] = F32(0.5f);  // One finite.
  CheckRows(AxisOp::kSoftmax, Float32(), masked, 16, 40, AxisParams{}, Float32(), "masked", &tot);
  CheckRows(AxisOp::kLogSoftmax, Float32(), masked, 16, 40, AxisParams{}, Float32(), "masked",
            &tot);
  CheckRows(AxisOp::kRmsNorm, Float32(), relu, 16, 40, AxisParams{}, Float32(), "relu", &tot);
  CheckRows(AxisOp::kRmsNorm, Float32(), relu, 16, 40, AxisParams{}, Float8E4M3FNUZ(),
            "relu fnuz", &tot);
  EXPECT_EQ(tot.st.special, 0);
  EXPECT_GT(tot.st.fast, 2000);
}

TEST(AxisOps, ExactCases) {
  // Equal entries: softmax 1/n exactly (n = 4: 0.25, no inexact), 1/3 rounded for n = 3.
  std::vector<uint64_t> four(4, F32(7.0f)), three(3, F32(-2.0f)), y4(4), y3(3);
  std::vector<Flags> f4(4);
  ASSERT_TRUE(AxisRoundRowMpfr(AxisOp::kSoftmax, Float32(), four, AxisParams{}, Float32(),
                               OpEnv{}, y4, f4)
                  .ok());
  EXPECT_EQ(y4, std::vector<uint64_t>(4, 0x3E800000));
  EXPECT_EQ(f4, std::vector<Flags>(4, 0));
  ASSERT_TRUE(AxisRound(AxisOp::kSoftmax, Float32(), three, 1, 3, AxisParams{}, Float32(),
                        OpEnv{}, y3, nullptr)
                  .ok());
  EXPECT_EQ(y3, std::vector<uint64_t>(3, 0x3EAAAAAB));
  // layernorm of a constant row: x - mu = 0 exactly: +0 (or the bias).
  std::vector<uint64_t> c(5, F32(1e4f)), yc(5), bias(5, Bf16(0.5f));
  AxisParams p;
  ASSERT_TRUE(AxisRound(AxisOp::kLayerNorm, Float32(), c, 1, 5, p, Float32(), OpEnv{}, yc,
                        nullptr)
                  .ok());
  EXPECT_EQ(yc, std::vector<uint64_t>(5, 0));
  p.bias_format = &BFloat16();
  p.bias = bias;
  ASSERT_TRUE(AxisRound(AxisOp::kLayerNorm, Float32(), c, 1, 5, p, Float32(), OpEnv{}, yc,
                        nullptr)
                  .ok());
  EXPECT_EQ(yc, std::vector<uint64_t>(5, F32(0.5f)));
  // rmsnorm with eps making the denominator exact: x = [3, 4] (mean square 12.5), eps = 3.5:
  // sqrt(16) = 4, y = [0.75, 1] exactly.
  std::vector<uint64_t> r = {F32(3.0f), F32(4.0f)}, yr(2);
  std::vector<Flags> fr(2);
  AxisParams pr;
  pr.eps = 3.5;
  ASSERT_TRUE(
      AxisRoundRowMpfr(AxisOp::kRmsNorm, Float32(), r, pr, Float32(), OpEnv{}, yr, fr).ok());
  EXPECT_EQ(yr, (std::vector<uint64_t>{F32(0.75f), F32(1.0f)}));
  EXPECT_EQ(fr, (std::vector<Flags>{0, 0}));
  // The header's example: softmax([1, 2]) = [1/(1+e), e/(1+e)].
  std::vector<uint64_t> ex = {F32(1.0f), F32(2.0f)}, ye(2);
  ASSERT_TRUE(AxisRound(AxisOp::kSoftmax, Float32(), ex, 1, 2, AxisParams{}, Float32(), OpEnv{},
                        ye, nullptr)
                  .ok());
  EXPECT_EQ(ye, (std::vector<uint64_t>{0x3E89B2B1, 0x3F3B26A8})) << Hex(ye[0]) << " "
                                                                  << Hex(ye[1]);
}

TEST(AxisOps, SpecialValuesAndErrors) {
  const uint64_t ninf = 0xFF800000, pinf = 0x7F800000, nan = 0x7FC00000;
  std::vector<uint64_t> x = {F32(1.0f), ninf, F32(2.0f)}, y(3);
  ASSERT_TRUE(AxisRound(AxisOp::kSoftmax, Float32(), x, 1, 3, AxisParams{}, Float32(), OpEnv{}, y,
                        nullptr)
                  .ok());
  EXPECT_EQ(y[1], 0u);
  ASSERT_TRUE(AxisRound(AxisOp::kLogSoftmax, Float32(), x, 1, 3, AxisParams{}, Float32(),
                        OpEnv{}, y, nullptr)
                  .ok());
  EXPECT_EQ(y[1], ninf);
  for (uint64_t bad : {pinf, nan}) {
    std::vector<uint64_t> xb = {F32(1.0f), bad, F32(2.0f)};
    for (AxisOp op : kOps) {
      ASSERT_TRUE(AxisRound(op, Float32(), xb, 1, 3, AxisParams{}, Float32(), OpEnv{}, y, nullptr)
                      .ok());
      for (uint64_t v : y) EXPECT_TRUE(MpfrIsNanBits(Float32(), v)) << AxisOpName(op);
    }
  }
  AxisParams p;
  p.eps = 0;
  EXPECT_FALSE(
      AxisRound(AxisOp::kRmsNorm, Float32(), x, 1, 3, p, Float32(), OpEnv{}, y, nullptr).ok());
  p.eps = -1;
  EXPECT_FALSE(
      AxisRound(AxisOp::kLayerNorm, Float32(), x, 1, 3, p, Float32(), OpEnv{}, y, nullptr).ok());
  EXPECT_FALSE(AxisRound(AxisOp::kSoftmax, Float32(), x, 2, 3, AxisParams{}, Float32(), OpEnv{},
                         y, nullptr)
                   .ok());
  auto bad = ParseAxisOp("batchnorm");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("log_softmax"), std::string::npos);
  for (AxisOp op : kOps) EXPECT_EQ(*ParseAxisOp(AxisOpName(op)), op);
}

TEST(AxisOps, EncloseRow) {
  const std::vector<uint64_t> x = NormalRows(5, 1, 16, 0, 3);
  std::vector<ExactEnclosure> e(16);
  std::vector<uint64_t> y(16);
  for (AxisOp op : kOps) {
    ASSERT_TRUE(AxisEncloseRow(op, Float32(), x, AxisParams{}, OpEnv{}, e).ok());
    ASSERT_TRUE(AxisRoundRowMpfr(op, Float32(), x, AxisParams{}, Float64(), OpEnv{}, y, {}).ok());
    for (size_t i = 0; i < 16; ++i) {
      EXPECT_LE(e[i].lo, e[i].nearest);
      EXPECT_LE(e[i].nearest, e[i].hi);
      EXPECT_EQ(std::nextafter(e[i].lo, 1e300), e[i].hi);
      double d;
      std::memcpy(&d, &y[i], 8);
      EXPECT_EQ(d, e[i].nearest);
    }
  }
}

}  // namespace
}  // namespace fpconform
