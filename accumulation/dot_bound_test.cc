// ComputeDotBound against EvaluateDot and the exact oracle (oracles/exact_sum.h), the
// MPFR/TestFloat way: for every preset it accepts, random, cancelling, wide-range, all-positive,
// subnormal and swamping inputs, with c = +0 and a random c; the exact error never exceeds the
// constants' bound, EvaluateDot's own a posteriori bound is never above it, and for sequential
// chains the swamping worst case comes within 4x of rel.
#include "accumulation/dot_bound.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "accumulation/evaluate.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/ops.h"
#include "oracles/exact_sum.h"

namespace fpconform {
namespace {

uint64_t Bits(const FormatSpec& f, double v) {
  return Convert(Float64(), f, std::bit_cast<uint64_t>(v), OpEnv{}).bits;
}
double Value(const FormatSpec& f, uint64_t bits) {
  return std::bit_cast<double>(Convert(f, Float64(), bits, OpEnv{}).bits);
}
uint64_t SignMask(const FormatSpec& f) { return f.d.sign_bit << f.pad_bits; }

// The largest value of f below 2^e (0 when none is positive and normal or subnormal).
double Below(const FormatSpec& f, int e) {
  const uint64_t b = Bits(f, std::ldexp(1.0, e));
  const double v = Value(f, b);
  if (v != std::ldexp(1.0, e) || b == 0) return 0;
  return Value(f, b - (uint64_t{1} << f.pad_bits));
}

struct Check {
  double err = 0, bound = 0, eval_bound = 0, sum_ab = 0;
  bool finite = false;
};

Check RunCase(const Model& m, const DotBound& db, const std::vector<uint64_t>& a,
          const std::vector<uint64_t>& b, uint64_t c) {
  Check out;
  const FormatSpec& fa = *m.inputs.a;
  const FormatSpec& fb = m.InputB();
  const FormatSpec& cf = m.FinalAccumulatorFormat();
  const FormatSpec& of = m.OutputFormat();
  absl::StatusOr<EvalResult> r = EvaluateDot(m, a, b, c);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return out;
  out.finite = std::isfinite(Value(of, r->bits)) && std::isfinite(r->bound);
  if (!out.finite) return out;
  ExactAccumulator diff = ExactDot(fa, a, fb, b, FormatValue{&cf, c});
  diff.Add(of, r->bits ^ SignMask(of));
  // |exact - out| rounded up: the difference rounded away from zero. Rounding the difference
  // upward and taking its magnitude would round a negative difference toward zero instead; one
  // ulp added after that doubled the error of a result near the float64 underflow threshold
  // (2 denorm_min where the error is below denorm_min), so that seeds other than the default
  // failed the bound.
  OpEnv away;
  away.rounding = diff.Sign() < 0 ? Rounding::kDownward : Rounding::kUpward;
  out.err = std::fabs(std::bit_cast<double>(diff.Round(Float64(), away).bits));
  ExactAccumulator mag;
  double s_sum = 0, s_max = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    mag.AddProduct(fa, a[i] & ~SignMask(fa), fb, b[i] & ~SignMask(fb));
    const double x = std::fabs(Value(fa, a[i])), y = std::fabs(Value(fb, b[i]));
    double s = 0;
    if (x > 0 && x < db.tiny_a) s += db.tiny_a * y;
    if (y > 0 && y < db.tiny_b) s += db.tiny_b * x;
    s_sum += s;
    s_max = std::max(s_max, s);
  }
  s_sum *= 1 + 0x1p-30;
  OpEnv up;  // sum |a b| >= 0: rounded up.
  up.rounding = Rounding::kUpward;
  out.sum_ab = std::bit_cast<double>(mag.Round(Float64(), up).bits);
  out.bound = DotBoundValue(db, out.sum_ab, std::fabs(Value(cf, c)), s_sum, s_max);
  out.eval_bound = r->bound;
  return out;
}

std::vector<std::filesystem::path> Presets() {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(FPCONFORM_MODELS_SOURCE_DIR)) {
    if (e.path().extension() != ".toml") continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    if (IsEnvelopeText(text.str())) continue;
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Random operand of f: sign random, |x| = 2^[-e, e] times [1, 2) (rounded into f).
uint64_t Random(const FormatSpec& f, PinnedRng& rng, int e, bool positive = false) {
  const double mag = std::ldexp(rng.Uniform(1, 2), static_cast<int>(rng.Below(2 * e + 1)) - e);
  return Bits(f, positive || rng.Next() % 2 == 0 ? mag : -mag);
}

TEST(DotBoundTest, EveryAcceptedPresetWithinBound) {
  const uint64_t seed = TestSeed(0xD07B0D, "DotBoundTest.EveryAcceptedPresetWithinBound");
  int accepted = 0, refused = 0, checked = 0;
  std::vector<std::string> refused_names;
  for (const std::filesystem::path& path : Presets()) {
    absl::StatusOr<Model> loaded = LoadModelFile(path.string());
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    const Model& m = *loaded;
    if (!m.Supports(ModelOp::kDot)) continue;
    const FormatSpec& fa = *m.inputs.a;
    const FormatSpec& fb = m.InputB();
    const FormatSpec& cf = m.FinalAccumulatorFormat();
    // Operand exponents that keep n products far from the accumulator's (and output's) range.
    const int lim = std::min({Emax(fa), Emax(fb), Emax(cf) / 2 - 12, Emax(m.OutputFormat()) / 2 - 12});
    const int e_norm = std::max(1, std::min(10, lim / 2));
    const int e_wide = std::max(1, lim / 2);
    for (const int n : {1, 5, 64, 300, 2000}) {
      absl::StatusOr<DotBound> db = ComputeDotBound(m, n);
      if (!db.ok()) {
        EXPECT_EQ(db.status().code(), absl::StatusCode::kFailedPrecondition) << db.status();
        if (n == 1) {
          ++refused;
          refused_names.push_back(m.name);
        }
        continue;
      }
      if (n == 1) ++accepted;
      SCOPED_TRACE(testing::Message() << m.name << " n " << n);
      EXPECT_GE(db->rel, 0.0);
      PinnedRng rng(DeriveSeed(seed, {static_cast<uint64_t>(n), std::hash<std::string>{}(m.name)}));
      for (int t = 0; t < 12; ++t) {
        std::vector<uint64_t> a(n), b(n);
        const int kind = t % 6;
        for (int i = 0; i < n; ++i) {
          switch (kind) {
            case 0:  // Random signs and exponents.
              a[i] = Random(fa, rng, e_norm);
              b[i] = Random(fb, rng, e_norm);
              break;
            case 1:  // Cancellation: pairs a_i b_i = -a_{i-1} b_{i-1}.
              a[i] = i % 2 == 1 ? a[i - 1] : Random(fa, rng, e_norm);
              b[i] = i % 2 == 1 ? b[i - 1] ^ SignMask(fb) : Random(fb, rng, e_norm);
              break;
            case 2:  // All positive in [1, 2).
              a[i] = Random(fa, rng, 0, true);
              b[i] = Random(fb, rng, 0, true);
              break;
            case 3:  // Wide exponent range.
              a[i] = Random(fa, rng, e_wide);
              b[i] = Random(fb, rng, e_wide);
              break;
            case 4: {  // Subnormal (or tiny) a against large b, and normals among them.
              if (i % 3 == 2) {
                a[i] = Random(fa, rng, e_norm);
                b[i] = Random(fb, rng, e_norm);
              } else {
                const int ea = MinSubnormalExponent(fa) + static_cast<int>(rng.Below(
                                   static_cast<uint64_t>(Emin(fa) - MinSubnormalExponent(fa) + 1)));
                a[i] = Bits(fa, std::ldexp(rng.Next() % 2 ? 1.0 : -1.0, ea));
                b[i] = Random(fb, rng, 0);
                b[i] = Bits(fb, Value(fb, b[i]) * std::ldexp(1.0, std::max(0, std::min(lim, -ea - 4))));
              }
              break;
            }
            default: {  // Both operands subnormal, or one subnormal and one tiny normal.
              const int eb = Emin(fb) + static_cast<int>(rng.Below(3));
              a[i] = Bits(fa, std::ldexp(rng.Uniform(-1, 1), Emin(fa)));
              b[i] = Bits(fb, std::ldexp(rng.Uniform(-2, 2), eb));
              break;
            }
          }
        }
        const uint64_t c = t < 6 ? 0 : Random(cf, rng, kind == 3 ? e_wide : e_norm);
        const Check ck = RunCase(m, *db, a, b, c);
        if (!ck.finite) continue;
        SCOPED_TRACE(testing::Message() << "case " << t);
        EXPECT_LE(ck.err, ck.bound) << "eval bound " << ck.eval_bound;
        EXPECT_LE(ck.eval_bound, ck.bound);
        ++checked;
      }
    }
  }
  EXPECT_GT(accepted, 50);
  std::sort(refused_names.begin(), refused_names.end());
  EXPECT_EQ(refused_names, (std::vector<std::string>{"cuda-f32-splitk4-atomic", "kahan-f32"}));
  EXPECT_EQ(refused, 2);
  EXPECT_GT(checked, 2000);
}

// Swamping, all positive: a_0 b_0 = 1 and n - 1 products just below 2^-k for the k that loses
// most. Every rounding of a sequential chain then loses about its whole allowance, so the worst
// observed error is within 4x of rel * sum |a b| (the bound is not absurdly loose).
TEST(DotBoundTest, SequentialChainsWithinFourTimesTheSwampingWorstCase) {
  int tight = 0;
  for (const std::filesystem::path& path : Presets()) {
    absl::StatusOr<Model> loaded = LoadModelFile(path.string());
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    const Model& m = *loaded;
    if (!m.Supports(ModelOp::kDot) || m.chain.kind != ChainKind::kSequential ||
        m.adder.kind == AdderKind::kKahan || !m.chain.permutation.empty() ||
        m.epilogue.c == EpilogueC::kAfter) {
      continue;
    }
    const FormatSpec& fa = *m.inputs.a;
    const FormatSpec& fb = m.InputB();
    for (const int n : {64, 1024}) {
      const DotBound db = *ComputeDotBound(m, n);
      double worst = 0;
      for (int k = 1; k <= m.accumulator.format->fraction_bits + 4; ++k) {
        // delta = (largest value below 2^-k1 in a) * 2^-k2 in b, k1 + k2 = k.
        const int k1 = std::min(k, -Emin(fa) - 1), k2 = k - k1;
        if (k2 > -Emin(fb) - 1) continue;
        const double da = Below(fa, -k1);
        if (da == 0) continue;
        std::vector<uint64_t> a(n, Bits(fa, da)), b(n, Bits(fb, std::ldexp(1.0, -k2)));
        a[0] = Bits(fa, 1.0);
        b[0] = Bits(fb, 1.0);
        const Check ck = RunCase(m, db, a, b, 0);
        if (!ck.finite) continue;
        EXPECT_LE(ck.err, ck.bound) << m.name << " k " << k;
        worst = std::max(worst, ck.err / ck.sum_ab);
      }
      // An input conversion's worst case: every operand just below 1 + ulp of the converted
      // format (float32 1 + 2^-10 - 2^-23 -> tfloat32 rtz 1).
      if (m.inputs.convert_to != nullptr) {
        const FormatSpec& cv = *m.inputs.convert_to;
        const double va = 1 + std::ldexp(1.0, -cv.fraction_bits) - std::ldexp(1.0, -fa.fraction_bits);
        const double vb = 1 + std::ldexp(1.0, -cv.fraction_bits) - std::ldexp(1.0, -fb.fraction_bits);
        // Round to nearest: just below 1 + half an ulp.
        const double ha = 1 + std::ldexp(1.0, -cv.fraction_bits - 1) - std::ldexp(1.0, -fa.fraction_bits);
        const double hb = 1 + std::ldexp(1.0, -cv.fraction_bits - 1) - std::ldexp(1.0, -fb.fraction_bits);
        for (const auto& [x, y] : {std::pair{va, vb}, std::pair{ha, hb}}) {
          std::vector<uint64_t> a(n, Bits(fa, x)), b(n, Bits(fb, y));
          const Check ck = RunCase(m, db, a, b, 0);
          if (ck.finite) {
            EXPECT_LE(ck.err, ck.bound) << m.name;
            worst = std::max(worst, ck.err / ck.sum_ab);
          }
        }
      }
      std::printf("%-44s n %5d rel %.3e worst %.3e ratio %.2f\n", m.name.c_str(), n, db.rel, worst,
                  worst > 0 ? db.rel / worst : 0.0);
      if (worst < 0x1p-900) continue;  // Formats too narrow to swamp the accumulator.
      // float8_e4m3's 3 fraction bits and narrow range build a weaker swamping case: 5x.
      const double factor = std::min(fa.fraction_bits, fb.fraction_bits) < 7 ? 5 : 4;
      EXPECT_LE(db.rel, factor * worst) << m.name << " n " << n << ": rel " << db.rel << ", worst "
                                   << worst;
      ++tight;
    }
  }
  EXPECT_GT(tight, 20);
}

// The subnormal terms are needed: float32 -> tfloat32 rtz loses 2^-140 entirely, an error of
// |a b| that no multiple of sum |a b| below 1 covers; the sub_sum term does.
TEST(DotBoundTest, LossyConversionNeedsTheSubnormalTerm) {
  const Model m = *LoadModelFile(std::string(FPCONFORM_MODELS_SOURCE_DIR) + "/nvidia-a100-tf32.toml");
  const DotBound db = *ComputeDotBound(m, 8);
  EXPECT_GT(db.sub_sum, 0.0);
  EXPECT_EQ(db.tiny_a, 0x1p-126);
  std::vector<uint64_t> a(8, 0), b(8, 0);
  a[0] = std::bit_cast<uint32_t>(0x1p-140f);
  b[0] = std::bit_cast<uint32_t>(0x1p100f);
  const Check ck = RunCase(m, db, a, b, 0);
  EXPECT_EQ(ck.err, 0x1p-40);  // The product 2^-40, lost whole: the error exactly.
  EXPECT_GT(ck.err, db.rel * ck.sum_ab + db.abs);
  EXPECT_LE(ck.err, ck.bound);
}

TEST(DotBoundTest, Errors) {
  const Model kahan = *LoadModelFile(std::string(FPCONFORM_MODELS_SOURCE_DIR) + "/kahan-f32.toml");
  absl::StatusOr<DotBound> b = ComputeDotBound(kahan, 4);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(b.status().message().find("kahan"), std::string::npos);
  const Model seq = *LoadModelFile(std::string(FPCONFORM_MODELS_SOURCE_DIR) + "/cpu-f32-seq.toml");
  EXPECT_EQ(ComputeDotBound(seq, -1).status().code(), absl::StatusCode::kInvalidArgument);
  // n = 0: d = c exactly for c in the accumulator; the constants are those of no rounding.
  const DotBound zero = *ComputeDotBound(seq, 0);
  EXPECT_EQ(zero.rel, 0.0);
  EXPECT_EQ(zero.rel_c, 0.0);
}

// cpu-f32-seq (product rounded, then added; RNE): rel = (1 + u)^n - 1 <= gamma_n to first order,
// here with the leaf's own product rounding: n + 1 roundings over a_0 b_0 (n = 64).
TEST(DotBoundTest, SequentialFloat32IsGammaLike) {
  const Model m = *LoadModelFile(std::string(FPCONFORM_MODELS_SOURCE_DIR) + "/cpu-f32-seq.toml");
  const DotBound db = *ComputeDotBound(m, 64);
  const double u = 0x1p-24;
  EXPECT_GE(db.rel, std::pow(1 + u, 65) - 1);
  EXPECT_LE(db.rel, 65 * u / (1 - 65 * u));
  EXPECT_EQ(db.sub_sum, 0.0);
  EXPECT_EQ(db.sub_max, 0.0);
}

}  // namespace
}  // namespace fpconform

namespace fpconform {
namespace {

// The header's example: nvidia-h100-bf16 at n = 64 is four groups of 16 products (F = 25, RZ),
// each adding u + g 2^-F = 2^-23 + 17 * 2^-25 to the first products' coefficient: 84 * 2^-25 to
// first order; nvidia-a100-bf16 eight groups of 8 (F = 24): 8 (2^-23 + 9 * 2^-24) = 88 * 2^-24.
TEST(DotBoundTest, TensorCoreChainsAsInTheHeader) {
  const std::string dir = FPCONFORM_MODELS_SOURCE_DIR;
  const DotBound h = *ComputeDotBound(*LoadModelFile(dir + "/nvidia-h100-bf16.toml"), 64);
  EXPECT_NEAR(h.rel / (84 * 0x1p-25), 1, 1e-5);
  EXPECT_EQ(h.rel_c, h.rel);  // c is aligned in the first group as the first products are.
  EXPECT_GT(h.sub_max, 0.0);  // Nominal alignment.
  EXPECT_EQ(h.sub_sum, 0.0);  // No input conversion.
  EXPECT_EQ(h.tiny_a, 0x1p-126);
  const DotBound a = *ComputeDotBound(*LoadModelFile(dir + "/nvidia-a100-bf16.toml"), 64);
  EXPECT_NEAR(a.rel / (88 * 0x1p-24), 1, 1e-5);
}

}  // namespace
}  // namespace fpconform
