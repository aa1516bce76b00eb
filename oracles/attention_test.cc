// Tests of the attention oracle (attention.h): the fast method against the MPFR method bit for
// bit (every mode, float32 / bfloat16 / float16 outputs and the LSE) on seeded problems (N(0, 1)
// bfloat16 inputs, large logits, causal, boolean and additive masks with -Inf and finfo.min
// entries, given and default scales, d a square and not); the MPFR method against a second
// opinion (the textbook formula in plain MPFR at 1000 bits, an independent evaluation) and
// against the softmax oracle (axis_ops.h: V = identity makes O's rows softmax rows); the
// rational cases (single key, equal scores, equal values, zero columns), the conventions for
// fully masked and NaN rows, and argument errors. FPCONFORM_SEED overrides the seed.
#include "oracles/attention.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mpfr.h>

#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/format_spec.h"
#include "oracles/attention_test_support.h"
#include "oracles/axis_ops.h"
#include "oracles/mpfr_oracle.h"
#include "oracles/mpfr_plumbing.h"

namespace fpconform {
namespace {

uint64_t F32Bits(double x) {
  const float f = static_cast<float>(x);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

double F32Value(uint64_t b) {
  const auto u = static_cast<uint32_t>(b);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::string Hex(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llX", static_cast<unsigned long long>(b));
  return buf;
}

// O and LSE both in float32 (round to nearest even), into `bits` and `lse`.
AttentionOutputs Float32Outputs(std::span<uint64_t> bits, std::span<uint64_t> lse) {
  AttentionOutputs o;
  o.out = &Float32();
  o.bits = bits;
  o.lse_format = &Float32();
  o.lse_bits = lse;
  return o;
}

struct Case {
  int64_t s_q, s_k, d, d_v;
  std::vector<double> q, k, v, add;
  std::vector<uint8_t> keep;
  AttentionProblem Problem() const {
    AttentionProblem p;
    p.s_q = s_q;
    p.s_k = s_k;
    p.d = d;
    p.d_v = d_v;
    p.q = q;
    p.k = k;
    p.v = v;
    p.additive_mask = add;
    p.keep_mask = keep;
    return p;
  }
};

Case Random(PinnedRng& rng, int64_t s_q, int64_t s_k, int64_t d, int64_t d_v, double q_scale) {
  Case c{s_q, s_k, d, d_v, {}, {}, {}, {}, {}};
  for (int64_t i = 0; i < s_q * d; ++i) c.q.push_back(ToBf16(q_scale * rng.Normal()));
  for (int64_t i = 0; i < s_k * d; ++i) c.k.push_back(ToBf16(rng.Normal()));
  for (int64_t i = 0; i < s_k * d_v; ++i) c.v.push_back(ToBf16(rng.Normal()));
  return c;
}

void ExpectSame(const AttentionProblem& p, const FormatSpec& out, Rounding mode, bool lse,
                const std::string& what) {
  const size_t n = static_cast<size_t>(p.s_q * p.d_v), rows = static_cast<size_t>(p.s_q);
  std::vector<uint64_t> fast(n), ref(n), lf(lse ? rows : 0), lr(lse ? rows : 0);
  AttentionOutputs o;
  o.out = &out;
  o.env.rounding = mode;
  o.lse_format = &Float32();
  o.bits = fast;
  o.lse_bits = lf;
  AttentionStats st;
  ASSERT_TRUE(AttentionRows(p, 0, p.s_q, o, &st, 2).ok());
  if (p.keep_mask.empty() && p.additive_mask.empty()) {  // No special row: the fast path ran.
    EXPECT_GT(st.fast_rows + st.mpfr_rows - st.special_rows, 0) << what;
    EXPECT_EQ(st.special_rows, 0) << what;
  }
  o.bits = ref;
  o.lse_bits = lr;
  ASSERT_TRUE(AttentionRowsMpfr(p, 0, p.s_q, o).ok());
  for (size_t e = 0; e < n; ++e) {
    ASSERT_EQ(fast[e], ref[e]) << what << " element " << e << " (row " << e / p.d_v << "): fast "
                               << Hex(fast[e]) << " mpfr " << Hex(ref[e]);
  }
  for (size_t r = 0; r < lf.size(); ++r) {
    ASSERT_EQ(lf[r], lr[r]) << what << " LSE row " << r << ": fast " << Hex(lf[r]) << " mpfr "
                            << Hex(lr[r]);
  }
}

TEST(AttentionTest, FastEqualsMpfrOnSeededProblems) {
  const uint64_t seed = TestSeed(20261204, "attention_test");
  const Rounding modes[] = {Rounding::kNearestEven, Rounding::kTowardZero, Rounding::kUpward,
                            Rounding::kDownward};
  const FormatSpec* outs[] = {&Float32(), &BFloat16(), &Float16()};
  struct Shape {
    int64_t s_q, s_k, d, d_v;
    double q_scale;
  };
  const Shape shapes[] = {{5, 7, 8, 3, 1.0},  {9, 9, 16, 4, 1.0},   {4, 33, 64, 5, 1.0},
                          {6, 20, 12, 3, 8.0}, {3, 17, 9, 2, 30.0}, {8, 64, 128, 4, 1.0}};
  int index = 0;
  for (const Shape& sh : shapes) {
    for (int variant = 0; variant < 5; ++variant, ++index) {
      PinnedRng rng(seed + static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ull);
      Case c = Random(rng, sh.s_q, sh.s_k, sh.d, sh.d_v, sh.q_scale);
      AttentionProblem p = c.Problem();
      std::string what = "shape " + std::to_string(sh.s_q) + "x" + std::to_string(sh.s_k) + "x" +
                         std::to_string(sh.d) + " variant " + std::to_string(variant);
      if (variant == 1) p.causal = true;
      if (variant == 2) {
        c.keep.resize(static_cast<size_t>(sh.s_q * sh.s_k));
        for (uint8_t& b : c.keep) b = rng.Below(3) != 0;
        p.keep_mask = c.keep;
      }
      if (variant == 3) {
        c.add.resize(static_cast<size_t>(sh.s_q * sh.s_k));
        for (double& a : c.add) {
          const uint64_t r = rng.Below(6);
          a = r == 0 ? -INFINITY : r == 1 ? -3.4028234663852886e38 : ToBf16(rng.Normal());
        }
        p.additive_mask = c.add;
        p.fully_masked = FullyMaskedRows::kZero;
      }
      if (variant == 4) p.scale = 0.125 * (1 + static_cast<double>(index % 3));
      for (const FormatSpec* out : outs) {
        for (Rounding m : modes) {
          ExpectSame(p, *out, m, out == &Float32(), what + " out " + std::string(out->name));
        }
      }
    }
  }
}

// Rows whose output cancels (V in opposite pairs, nearly uniform weights) into float32: the first
// binary64 tier leaves elements undecided (its bounds grow with gamma_h sum P|V| while |O| is
// tiny); the compensated tier and the MPFR method must still give the MPFR method's bits.
TEST(AttentionTest, SecondTierAndFallbackGiveTheSameBits) {
  PinnedRng rng(TestSeed(23, "attention_test tiers"));
  Case c = Random(rng, 128, 256, 32, 8, 0.01);
  for (size_t j = 1; j < 256; j += 2) {  // V rows in opposite pairs: O cancels, A does not.
    for (size_t cc = 0; cc < 8; ++cc) c.v[j * 8 + cc] = -c.v[(j - 1) * 8 + cc];
  }
  const AttentionProblem p = c.Problem();
  const size_t n = static_cast<size_t>(p.s_q * p.d_v);
  std::vector<uint64_t> fast(n), ref(n);
  AttentionOutputs o;
  o.out = &Float32();
  o.bits = fast;
  AttentionStats st;
  ASSERT_TRUE(AttentionRows(p, 0, p.s_q, o, &st, 2).ok());
  std::fprintf(stderr, "tiers: %lld rows in the compensated tier, %lld through MPFR\n",
               static_cast<long long>(st.tight_rows), static_cast<long long>(st.mpfr_rows));
  EXPECT_GT(st.tight_rows, 0);
  o.bits = ref;
  ASSERT_TRUE(AttentionRowsMpfr(p, 0, p.s_q, o).ok());
  for (size_t e = 0; e < n; ++e) ASSERT_EQ(fast[e], ref[e]) << "element " << e;
}

// The textbook formula at 1000 bits, truncated to 123 bits with sticky and rounded by the MPFR
// oracle's recipe (rne): a second opinion of the MPFR method. Rows without special values.
void Textbook(const AttentionProblem& p, const FormatSpec& out, std::vector<uint64_t>& want) {
  const mpfr_prec_t w = 1000;
  MpfrValue scale(w), s(w), t(w), sum(w), num(w), y(w), tr(123), x(53), z(53);
  if (p.scale.has_value()) {
    mpfr_set_d(scale, *p.scale, MPFR_RNDN);
  } else {
    mpfr_set_ui(scale, static_cast<unsigned long>(p.d), MPFR_RNDN);
    mpfr_rec_sqrt(scale, scale, MPFR_RNDN);
  }
  std::vector<MpfrValue> e(static_cast<size_t>(p.s_k));
  want.assign(static_cast<size_t>(p.s_q * p.d_v), 0);
  for (int64_t i = 0; i < p.s_q; ++i) {
    mpfr_set_zero(sum, 1);
    for (int64_t j = 0; j < p.s_k; ++j) {
      mpfr_set_prec(e[static_cast<size_t>(j)], w);
      mpfr_set_zero(s, 1);
      for (int64_t c = 0; c < p.d; ++c) {
        mpfr_set_d(x, p.q[static_cast<size_t>(i * p.d + c)], MPFR_RNDN);
        mpfr_set_d(z, p.k[static_cast<size_t>(j * p.d + c)], MPFR_RNDN);
        mpfr_mul(t, x, z, MPFR_RNDN);
        mpfr_add(s, s, t, MPFR_RNDN);
      }
      mpfr_mul(s, s, scale, MPFR_RNDN);
      const bool keep = !(p.causal && j > i);
      if (keep) {
        mpfr_exp(e[static_cast<size_t>(j)], s, MPFR_RNDN);
      } else {
        mpfr_set_zero(e[static_cast<size_t>(j)], 1);
      }
      mpfr_add(sum, sum, e[static_cast<size_t>(j)], MPFR_RNDN);
    }
    for (int64_t c = 0; c < p.d_v; ++c) {
      mpfr_set_zero(num, 1);
      for (int64_t j = 0; j < p.s_k; ++j) {
        mpfr_set_d(x, p.v[static_cast<size_t>(j * p.d_v + c)], MPFR_RNDN);
        mpfr_mul(t, e[static_cast<size_t>(j)], x, MPFR_RNDN);
        mpfr_add(num, num, t, MPFR_RNDN);
      }
      mpfr_div(y, num, sum, MPFR_RNDN);
      const int tern = mpfr_set(tr, y, MPFR_RNDZ);
      want[static_cast<size_t>(i * p.d_v + c)] =
          MpfrRoundToFormat(out, mpfr_sgn(y) < 0, tr, tern != 0, OpEnv{}).bits;
    }
  }
}

TEST(AttentionTest, MpfrMethodAgreesWithTextbookFormula) {
  const uint64_t seed = TestSeed(77, "attention_test textbook");
  for (int index = 0; index < 8; ++index) {
    PinnedRng rng(seed + static_cast<uint64_t>(index));
    const int64_t d = index % 2 == 0 ? 128 : 36;  // Irrational and rational 1/sqrt(d).
    Case c = Random(rng, 3, 11 + index, d, 3, index >= 6 ? 10.0 : 1.0);
    AttentionProblem p = c.Problem();
    p.causal = index % 3 == 1;
    if (index == 5) p.scale = 0.3;
    for (const FormatSpec* out : {&Float32(), &BFloat16()}) {
      std::vector<uint64_t> got(static_cast<size_t>(p.s_q * p.d_v)), want;
      AttentionOutputs o;
      o.out = out;
      o.bits = got;
      ASSERT_TRUE(AttentionRowsMpfr(p, 0, p.s_q, o).ok());
      Textbook(p, *out, want);
      for (size_t e = 0; e < got.size(); ++e) {
        EXPECT_EQ(got[e], want[e]) << "case " << index << " " << out->name << " element " << e;
      }
    }
  }
}

// V = identity: O's row i is softmax(scale q_i K^T). Small integer Q and K and scale 1/4 make the
// scores float32 values, rounded by the softmax oracle.
TEST(AttentionTest, IdentityValuesGiveSoftmaxRows) {
  PinnedRng rng(TestSeed(5, "attention_test identity"));
  const int64_t s_q = 6, s_k = 10, d = 4;
  Case c{s_q, s_k, d, s_k, {}, {}, {}, {}, {}};
  for (int64_t i = 0; i < s_q * d; ++i) c.q.push_back(static_cast<double>(rng.Below(9)) - 4);
  for (int64_t i = 0; i < s_k * d; ++i) c.k.push_back(static_cast<double>(rng.Below(9)) - 4);
  for (int64_t j = 0; j < s_k; ++j) {
    for (int64_t cc = 0; cc < s_k; ++cc) c.v.push_back(j == cc ? 1.0 : 0.0);
  }
  AttentionProblem p = c.Problem();
  p.scale = 0.25;
  std::vector<uint64_t> got(static_cast<size_t>(s_q * s_k));
  AttentionOutputs o;
  o.out = &Float32();
  o.bits = got;
  ASSERT_TRUE(AttentionRows(p, 0, s_q, o, nullptr).ok());
  for (int64_t i = 0; i < s_q; ++i) {
    std::vector<uint64_t> scores, want(static_cast<size_t>(s_k));
    for (int64_t j = 0; j < s_k; ++j) {
      double dot = 0;
      for (int64_t cc = 0; cc < d; ++cc) dot += c.q[static_cast<size_t>(i * d + cc)] * c.k[static_cast<size_t>(j * d + cc)];
      scores.push_back(F32Bits(0.25 * dot));  // Small integers / 4: exact.
    }
    ASSERT_TRUE(AxisRound(AxisOp::kSoftmax, Float32(), scores, 1, s_k, AxisParams{}, Float32(), OpEnv{}, want, nullptr).ok());
    for (int64_t j = 0; j < s_k; ++j) {
      EXPECT_EQ(got[static_cast<size_t>(i * s_k + j)], want[static_cast<size_t>(j)]) << "row " << i << " key " << j;
    }
  }
}

TEST(AttentionTest, RationalValuesAreExact) {
  PinnedRng rng(TestSeed(11, "attention_test rational"));
  Case c = Random(rng, 4, 8, 16, 3, 1.0);
  // Column 1: every V equal; column 2: all zero.
  for (int64_t j = 0; j < 8; ++j) {
    c.v[static_cast<size_t>(j * 3 + 1)] = 0.375;
    c.v[static_cast<size_t>(j * 3 + 2)] = 0;
  }
  for (int cc = 0; cc < 16; ++cc) {  // Row 0 of Q and K: halves of small integers (exact dots).
    c.q[static_cast<size_t>(cc)] = (static_cast<double>(rng.Below(9)) - 4) * 0.5;
    c.k[static_cast<size_t>(cc)] = (static_cast<double>(rng.Below(9)) - 4) * 0.5;
  }
  AttentionProblem p = c.Problem();
  p.causal = true;  // Row 0 attends key 0 only: O = V[0] exactly, LSE = s_00.
  std::vector<uint64_t> o32(12), lse(4);
  ASSERT_TRUE(AttentionRows(p, 0, 4, Float32Outputs(o32, lse), nullptr).ok());
  for (int64_t c0 = 0; c0 < 3; ++c0) {
    EXPECT_EQ(o32[static_cast<size_t>(c0)], F32Bits(c.v[static_cast<size_t>(c0)])) << "row 0 col " << c0;
  }
  for (int64_t i = 1; i < 4; ++i) {
    EXPECT_EQ(o32[static_cast<size_t>(i * 3 + 1)], F32Bits(0.375)) << "row " << i;
    EXPECT_EQ(o32[static_cast<size_t>(i * 3 + 2)], 0u) << "row " << i << ": +0";
  }
  // LSE of row 0: q_0 . k_0 / 4 (d = 16), the float32 rounding of an exact double here.
  double dot = 0;
  for (int cc = 0; cc < 16; ++cc) dot += c.q[static_cast<size_t>(cc)] * c.k[static_cast<size_t>(cc)];
  EXPECT_EQ(lse[0], F32Bits(dot / 4));  // Exact: a multiple of 1/16.
  // Equal scores (q = 0): O = the mean of V, 1.5 here.
  Case e{1, 4, 2, 1, {0, 0}, {1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 1, 2}, {}, {}};
  std::vector<uint64_t> one(1);
  AttentionOutputs oe;
  oe.out = &BFloat16();
  oe.bits = one;
  ASSERT_TRUE(AttentionRows(e.Problem(), 0, 1, oe, nullptr).ok());
  EXPECT_EQ(one[0], F32Bits(1.5) >> 16);
}

TEST(AttentionTest, FullyMaskedAndNaNRows) {
  PinnedRng rng(TestSeed(3, "attention_test special"));
  Case c = Random(rng, 3, 4, 8, 2, 1.0);
  c.keep.assign(12, 1);
  for (int j = 0; j < 4; ++j) c.keep[static_cast<size_t>(4 + j)] = 0;  // Row 1: fully masked.
  c.keep[2] = 0;                                                           // Row 0 skips key 2,
  c.keep[3] = 0;                                                           // and key 3;
  c.v[2 * 2] = NAN;                                                        // whose NaN is unread.
  c.k[3 * 8] = INFINITY;                                                   // Row 2 attends key 3.
  for (FullyMaskedRows f : {FullyMaskedRows::kNaN, FullyMaskedRows::kZero}) {
    AttentionProblem p = c.Problem();
    p.fully_masked = f;
    std::vector<uint64_t> out(6), lse(3);
    ASSERT_TRUE(AttentionRows(p, 0, 3, Float32Outputs(out, lse), nullptr).ok());
    for (int cc = 0; cc < 2; ++cc) {
      EXPECT_TRUE(std::isfinite(F32Value(out[static_cast<size_t>(cc)]))) << "row 0";
      if (f == FullyMaskedRows::kNaN) {
        EXPECT_TRUE(std::isnan(F32Value(out[static_cast<size_t>(2 + cc)]))) << "row 1";
      } else {
        EXPECT_EQ(out[static_cast<size_t>(2 + cc)], 0u) << "row 1: +0";
      }
      EXPECT_TRUE(std::isnan(F32Value(out[static_cast<size_t>(4 + cc)]))) << "row 2";
    }
    EXPECT_EQ(F32Value(lse[1]), -INFINITY);
    EXPECT_TRUE(std::isnan(F32Value(lse[2])));
  }
}

TEST(AttentionTest, EnclosuresHoldTheTextbookValue) {
  PinnedRng rng(TestSeed(19, "attention_test enclosure"));
  Case c = Random(rng, 4, 24, 128, 4, 3.0);
  AttentionProblem p = c.Problem();
  std::vector<ExactEnclosure> enc(16);
  AttentionOutputs o;
  o.enclosure = enc;
  ASSERT_TRUE(AttentionRows(p, 0, 4, o, nullptr).ok());
  std::vector<uint64_t> want;
  Textbook(p, Float64(), want);
  for (size_t e = 0; e < enc.size(); ++e) {
    double x;
    std::memcpy(&x, &want[e], 8);  // Within half an ulp of binary64.
    EXPECT_LE(enc[e].lo, x) << e;
    EXPECT_GE(enc[e].hi, x) << e;
    EXPECT_LE(enc[e].hi - enc[e].lo, std::fabs(x) * 0x1p-30) << e << ": too wide";
  }
}

// AttentionOutputs::abs_enclosure is the enclosure of the problem with |V|, bit for bit: on fast
// rows (from the same pass), on rows the fast path leaves out (fully masked, NaN, and every row
// for a scale outside the fast range: the |V| pass over them), with the compensated tier running
// for O, and on a sub-range.
TEST(AttentionTest, AbsEnclosureIsTheAbsVPass) {
  PinnedRng rng(TestSeed(23, "attention_test tiers"));  // SecondTierAndFallbackGiveTheSameBits' case,
  Case c = Random(rng, 128, 256, 32, 8, 0.01);             // with masked and NaN rows added.
  for (size_t j = 1; j < 256; j += 2) {  // Opposite V pairs: O cancels.
    for (size_t cc = 0; cc < 8; ++cc) c.v[j * 8 + cc] = -c.v[(j - 1) * 8 + cc];
  }
  c.keep.assign(128 * 256, 1);
  for (size_t j = 0; j < 256; ++j) c.keep[7 * 256 + j] = 0;  // Row 7: fully masked.
  c.keep[3 * 256 + 5] = 0;                                 // Row 3 skips key 5.
  c.q[11 * 32 + 2] = INFINITY;                             // Row 11 is NaN.
  std::vector<double> vabs;
  for (double x : c.v) vabs.push_back(std::fabs(x));
  for (int variant = 0; variant < 4; ++variant) {
    AttentionProblem p = c.Problem();
    p.fully_masked = variant == 2 ? FullyMaskedRows::kZero : FullyMaskedRows::kNaN;
    if (variant == 1) {
      p.keep_mask = {};
      p.causal = true;
    }
    if (variant == 2) p.scale = 0x1p-420;  // Below the fast range: every row by the MPFR method.
    const int64_t r0 = variant == 3 ? 5 : 0, r1 = variant == 3 ? 29 : variant == 2 ? 16 : 128;
    const size_t n = static_cast<size_t>((r1 - r0) * p.d_v);
    std::vector<uint64_t> bits(n);
    std::vector<ExactEnclosure> abs(n, ExactEnclosure{-1, -1, -1, true}), want(n);
    AttentionOutputs o;
    o.out = &Float32();
    o.bits = bits;
    o.abs_enclosure = abs;
    AttentionStats st;
    ASSERT_TRUE(AttentionRows(p, r0, r1, o, &st, 2).ok()) << variant;
    if (variant == 0) {
      EXPECT_GT(st.tight_rows, 0);
    }
    if (variant == 2) {
      EXPECT_EQ(st.special_rows, r1 - r0);
    }
    AttentionProblem pa = p;
    pa.v = vabs;
    AttentionOutputs oa;
    oa.enclosure = want;
    ASSERT_TRUE(AttentionRows(pa, r0, r1, oa, nullptr, 2).ok()) << variant;
    for (size_t e = 0; e < n; ++e) {
      const auto same = [](double a, double b) { return std::memcmp(&a, &b, 8) == 0; };
      ASSERT_TRUE(same(abs[e].nearest, want[e].nearest) && same(abs[e].lo, want[e].lo) &&
                  same(abs[e].hi, want[e].hi) && abs[e].exact == want[e].exact)
          << "variant " << variant << " element " << e << " (row " << r0 + static_cast<int64_t>(e) / p.d_v
          << "): " << abs[e].lo << " " << abs[e].hi << " want " << want[e].lo << " " << want[e].hi;
    }
  }
}

TEST(AttentionTest, ArgumentErrors) {
  std::vector<double> q(8), k(8), v(4);
  AttentionProblem p{.s_q = 2, .s_k = 2, .d = 4, .d_v = 2, .q = q, .k = k, .v = v};
  EXPECT_TRUE(CheckAttention(p).ok());
  AttentionProblem bad = p;
  bad.d = 3;
  EXPECT_FALSE(CheckAttention(bad).ok());
  bad = p;
  bad.scale = NAN;
  EXPECT_FALSE(CheckAttention(bad).ok());
  bad = p;
  bad.scale = 0.0;
  EXPECT_FALSE(CheckAttention(bad).ok());
  std::vector<double> add(3);
  bad = p;
  bad.additive_mask = add;
  EXPECT_FALSE(CheckAttention(bad).ok());
  std::vector<uint64_t> o(3);
  AttentionOutputs out;
  out.out = &Float32();
  out.bits = o;
  EXPECT_FALSE(AttentionRows(p, 0, 2, out, nullptr).ok());
  EXPECT_FALSE(AttentionRows(p, 1, 3, AttentionOutputs{}, nullptr).ok());
  std::vector<ExactEnclosure> a(3);
  AttentionOutputs wrong_abs;
  wrong_abs.abs_enclosure = a;
  EXPECT_FALSE(AttentionRows(p, 0, 2, wrong_abs, nullptr).ok());
}

}  // namespace
}  // namespace fpconform
