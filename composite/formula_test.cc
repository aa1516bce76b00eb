// Formulas (formula.h): the parser's errors, the correctly rounded evaluation against host
// float arithmetic and MPFR's documented rounding recipe, and the enclosure against adversarial
// implementations (every step perturbed within its allowance, products fused or not).
#include "composite/formula.h"

#include <mpfr.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>

#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/ops.h"
#include "gtest/gtest.h"
#include "oracles/mpfr_oracle.h"

namespace fpconform::composite {
namespace {

uint32_t Bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
float Float(uint64_t b) {
  const uint32_t u = static_cast<uint32_t>(b);
  float v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
double ToDouble(const FormatSpec& f, uint64_t bits) {
  const uint64_t d = Convert(f, Float64(), bits, OpEnv{}).bits;
  double v;
  std::memcpy(&v, &d, sizeof v);
  return v;
}

Formula Parse(const std::string& text, const FormatSpec& f = Float32()) {
  absl::StatusOr<Formula> r = ParseFormula(text, f);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status();
  return r.ok() ? *std::move(r) : Formula{};
}

TEST(FormulaTest, ParseErrorsNameTheColumn) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"x +", "column 4: expected a value, got the end of the formula"},
      {"erff(x)", "column 1: unknown name 'erff'"},
      {"exp(x", "column 6: expected ')' after the 1 argument of exp"},
      {"fma(x, x)", "column 9: fma takes 3 arguments"},
      {"x $ 2", "column 3: unexpected text after the formula"},
      {"1.2.3 * x", "column 1: '1.2.3' is not a decimal number"},
      {"float32(x)", "column 1: cast to float32, wider than the compute format bfloat16"},
      {"exp x", "column 5: expected '(' after exp"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<Formula> r = ParseFormula(c.text, std::string(c.text) == "float32(x)" ? BFloat16() : Float32());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status();
  }
  EXPECT_FALSE(ParseFormula("x", *FindFormat("int8")).ok());
}

TEST(FormulaTest, ConstantsRoundToTheComputeFormatAsCFloatLiterals) {
  // 0.1 -> 0x3DCCCCCD (RNE), 0.70710678118654752440 -> M_SQRT1_2f 0x3F3504F3; 1e-46 -> +0 (below
  // half the smallest subnormal 2^-150); 3.5e38 -> +Inf.
  EXPECT_EQ(FormulaValue(Parse("0.1"), 0), Bits(0.1f));
  EXPECT_EQ(FormulaValue(Parse("0.70710678118654752440"), 0), 0x3F3504F3u);
  EXPECT_EQ(FormulaValue(Parse("1e-46"), 0), 0u);
  EXPECT_EQ(FormulaValue(Parse("3.5e38"), 0), 0x7F800000u);
  EXPECT_EQ(FormulaValue(Parse("0.1", BFloat16()), 0), 0x3DCDu);  // 0.1 -> bfloat16 RNE.
}

// Arithmetic-only formulas against the host's IEEE float32 operations (RNE, no contraction).
TEST(FormulaTest, ArithmeticMatchesHostFloat) {
  const Formula f = Parse("(x * 0.5 - 3) / (1 + x * x) + fma(x, x, -x) - -x");
  const Formula g = Parse("sqrt(x * x + 1) * x");
  PinnedRng rng(DeriveSeed(TestSeed(2026, "ArithmeticMatchesHostFloat"), {1}));
  for (int i = 0; i < 20000; ++i) {
    const float x = static_cast<float>(rng.Normal() * std::ldexp(1.0, static_cast<int>(rng.Below(60)) - 30));
    SCOPED_TRACE(x);
    const float want = (x * 0.5f - 3.0f) / (1.0f + x * x) + std::fma(x, x, -x) - -x;
    const float want_g = std::sqrt(x * x + 1.0f) * x;
    const uint64_t got = FormulaValue(f, Bits(x)), got_g = FormulaValue(g, Bits(x));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(Float(got)));
    } else {
      EXPECT_EQ(got, Bits(want));
    }
    EXPECT_EQ(got_g, Bits(want_g));
  }
}

// Elementary functions against MPFR's documented IEEE recipe (MpfrRecipeRound: a second path
// to the rounding) on values evaluated at 200 bits.
TEST(FormulaTest, ElementaryFunctionsAreCorrectlyRounded) {
  PinnedRng rng(DeriveSeed(TestSeed(2026, "ElementaryFunctionsAreCorrectlyRounded"), {2}));
  for (int fn = 0; fn < kFns; ++fn) {
    const Fn f = static_cast<Fn>(fn);
    const Formula formula = Parse(std::string(FnName(f)) + "(x)");
    for (int i = 0; i < 3000; ++i) {
      float x = static_cast<float>(rng.Normal() * std::ldexp(1.0, static_cast<int>(rng.Below(12)) - 4));
      if (f == Fn::kLog || f == Fn::kSqrt || f == Fn::kRsqrt) x = std::fabs(x);
      SCOPED_TRACE(::testing::Message() << FnName(f) << "(" << x << ")");
      mpfr_t a, r;
      mpfr_init2(a, 64);
      mpfr_init2(r, 200);
      mpfr_set_flt(a, x, MPFR_RNDN);
      int t = 0;
      switch (f) {
        case Fn::kExp: t = mpfr_exp(r, a, MPFR_RNDZ); break;
        case Fn::kExp2: t = mpfr_exp2(r, a, MPFR_RNDZ); break;
        case Fn::kLog: t = mpfr_log(r, a, MPFR_RNDZ); break;
        case Fn::kTanh: t = mpfr_tanh(r, a, MPFR_RNDZ); break;
        case Fn::kErf: t = mpfr_erf(r, a, MPFR_RNDZ); break;
        case Fn::kSqrt: t = mpfr_sqrt(r, a, MPFR_RNDZ); break;
        case Fn::kRsqrt: t = mpfr_rec_sqrt(r, a, MPFR_RNDZ); break;
      }
      uint64_t want;
      if (mpfr_zero_p(r)) {
        want = 0;
      } else {
        const bool neg = mpfr_sgn(r) < 0;
        mpfr_abs(r, r, MPFR_RNDN);
        want = MpfrRecipeRound(Float32(), neg, r, t != 0, MPFR_RNDN).bits;
      }
      mpfr_clear(a);
      mpfr_clear(r);
      EXPECT_EQ(FormulaValue(formula, Bits(x)), want);
    }
  }
}

// fn(v) by MPFR at 200 bits, rounded to a double.
double ExactFn(Fn f, double v) {
  mpfr_t a, r;
  mpfr_init2(a, 64);
  mpfr_init2(r, 200);
  mpfr_set_d(a, v, MPFR_RNDN);
  switch (f) {
    case Fn::kExp: mpfr_exp(r, a, MPFR_RNDN); break;
    case Fn::kExp2: mpfr_exp2(r, a, MPFR_RNDN); break;
    case Fn::kLog: mpfr_log(r, a, MPFR_RNDN); break;
    case Fn::kTanh: mpfr_tanh(r, a, MPFR_RNDN); break;
    case Fn::kErf: mpfr_erf(r, a, MPFR_RNDN); break;
    case Fn::kSqrt: mpfr_sqrt(r, a, MPFR_RNDN); break;
    case Fn::kRsqrt: mpfr_rec_sqrt(r, a, MPFR_RNDN); break;
  }
  const double d = mpfr_get_d(r, MPFR_RNDN);
  mpfr_clear(a);
  mpfr_clear(r);
  return d;
}

// An implementation of the formula chosen by rng, for one row: every arithmetic step RNE (a
// product feeding + or - or a reduction fused with it half the time when `contract`), every
// elementary function the correctly rounded value moved by up to floor(ulps - 0.5) ulps of F
// either way while it stays within `ulps` of the exact value, every sum in a random order and
// tree (a random permutation, then pairs joined at random).
std::vector<uint64_t> AdversaryRow(const Formula& f, const AccuracyTable& acc, bool contract,
                                   const RowInputs& in, PinnedRng& rng) {
  const FormatSpec& F = *f.compute;
  const OpEnv env;
  const size_t n = in.x.size();
  const uint64_t one = Convert(Float64(), F, 0x3FF0000000000000ull, env).bits;
  std::vector<std::vector<uint64_t>> v(f.nodes.size());
  const auto at = [&](int k, size_t i) {
    const std::vector<uint64_t>& x = v[static_cast<size_t>(k)];
    return x.size() == 1 ? x[0] : x[i];
  };
  for (size_t k = 0; k < f.nodes.size(); ++k) {
    const FormulaNode& nd = f.nodes[k];
    using K = FormulaNode::Kind;
    std::vector<uint64_t>& out = v[k];
    switch (nd.kind) {
      case K::kX: out.assign(in.x.begin(), in.x.end()); continue;
      case K::kW: if (in.w.empty()) out = {one}; else out.assign(in.w.begin(), in.w.end()); continue;
      case K::kB: if (in.b.empty()) out = {0}; else out.assign(in.b.begin(), in.b.end()); continue;
      case K::kEps: out = {in.eps}; continue;
      case K::kN: out = {Convert(Float64(), F, std::bit_cast<uint64_t>(static_cast<double>(n)), env).bits}; continue;
      case K::kConst: out = {nd.bits}; continue;
      case K::kMax: {
        uint64_t m = at(nd.a, 0);
        for (size_t i = 1; i < n; ++i) m = Maximum(F, m, at(nd.a, i), env).bits;
        out = {m};
        continue;
      }
      case K::kSum:
      case K::kMean: {
        // Terms in a random order; a product term may be fused into the addition that takes it.
        const FormulaNode& term = f.nodes[static_cast<size_t>(nd.a)];
        const bool fusable = contract && term.kind == K::kMul;
        std::vector<size_t> order(n);
        for (size_t i = 0; i < n; ++i) order[i] = i;
        for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
        // Partial sums: joined at random until one is left; a leaf joined to a partial sum is
        // fused (a * b + s) when allowed.
        struct Part { uint64_t value; bool leaf; size_t index; };
        std::vector<Part> parts;
        for (size_t i : order) parts.push_back({at(nd.a, i), true, i});
        while (parts.size() > 1) {
          const size_t i = rng.Below(parts.size() - 1);
          Part a = parts[i], b = parts[i + 1];
          uint64_t r;
          if (fusable && a.leaf != b.leaf && rng.Below(2) == 0) {
            const Part& leaf = a.leaf ? a : b;
            const Part& sum = a.leaf ? b : a;
            r = Fma(F, at(term.a, leaf.index), at(term.b, leaf.index), sum.value, env).bits;
          } else {
            r = Add(F, a.value, b.value, env).bits;
          }
          parts[i] = {r, false, 0};
          parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        }
        uint64_t s = parts[0].value;
        if (nd.kind == K::kMean) {
          s = Div(F, s, Convert(Float64(), F, std::bit_cast<uint64_t>(static_cast<double>(n)), env).bits, env).bits;
        }
        out = {s};
        continue;
      }
      default: break;
    }
    out.resize(nd.row ? n : 1);
    for (size_t i = 0; i < out.size(); ++i) {
      // The operand of + or -: a product recomputed fused with the addition, half the time.
      const auto fused = [&](int add_other, int mul, bool sub, bool mul_first) -> std::optional<uint64_t> {
        const FormulaNode& m = f.nodes[static_cast<size_t>(mul)];
        if (!contract || m.kind != K::kMul || rng.Below(2) == 0) return std::nullopt;
        uint64_t c = at(add_other, i);
        uint64_t a = at(m.a, i);
        if (sub && mul_first) c ^= SignBit(F);             // a*b - c.
        if (sub && !mul_first) a ^= SignBit(F);            // c - a*b.
        return Fma(F, a, at(m.b, i), c, env).bits;
      };
      switch (nd.kind) {
        case K::kAdd:
        case K::kSub: {
          const bool sub = nd.kind == K::kSub;
          std::optional<uint64_t> r = fused(nd.b, nd.a, sub, true);
          if (!r) r = fused(nd.a, nd.b, sub, false);
          out[i] = r ? *r : (sub ? Sub(F, at(nd.a, i), at(nd.b, i), env) : Add(F, at(nd.a, i), at(nd.b, i), env)).bits;
          break;
        }
        case K::kMul: out[i] = Mul(F, at(nd.a, i), at(nd.b, i), env).bits; break;
        case K::kDiv: out[i] = Div(F, at(nd.a, i), at(nd.b, i), env).bits; break;
        case K::kNeg: out[i] = at(nd.a, i) ^ SignBit(F); break;
        case K::kFma: out[i] = Fma(F, at(nd.a, i), at(nd.b, i), at(nd.c, i), env).bits; break;
        case K::kCast: out[i] = Convert(*nd.to, F, Convert(F, *nd.to, at(nd.a, i), env).bits, env).bits; break;
        case K::kFn: {
          Formula one_fn;
          one_fn.compute = &F;
          one_fn.nodes = {FormulaNode{}, nd};
          one_fn.nodes[1].a = 0;
          one_fn.nodes[0].row = true;
          uint64_t y = FormulaValue(one_fn, at(nd.a, i));
          const FnAccuracy& a = acc[static_cast<size_t>(nd.fn)];
          const int64_t reach = a.correctly_rounded ? 0 : static_cast<int64_t>(std::floor(a.ulps - 0.5));
          const double yd = ToDouble(F, y);
          if (reach > 0 && std::isfinite(yd) && yd != 0) {
            // A neighbour of y up to `reach` steps away, kept only if it is within the
            // allowance of the exact value (MPFR at 200 bits; a margin of 2^-20 of an ulp).
            const int64_t steps = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(2 * reach + 1))) - reach;
            const uint64_t mag = y & ~SignBit(F);
            const uint64_t frac_mask = (uint64_t{1} << (F.d.precision - 1)) - 1;
            const int64_t frac = static_cast<int64_t>(mag & frac_mask);
            if (frac + steps >= 0 && frac + steps <= static_cast<int64_t>(frac_mask)) {
              const uint64_t cand = static_cast<uint64_t>(static_cast<int64_t>(y) + steps);
              const double exact = ExactFn(nd.fn, ToDouble(F, at(nd.a, i)));
              int e;
              std::frexp(exact, &e);
              const double ulp = std::ldexp(1.0, std::max(e - 1, F.d.emin) - F.d.precision + 1);
              if (std::fabs(ToDouble(F, cand) - exact) <= (a.ulps - 0x1p-20) * ulp) y = cand;
            }
          }
          out[i] = y;
          break;
        }
        default: break;
      }
    }
  }
  std::vector<uint64_t> y(n);
  for (size_t i = 0; i < n; ++i) y[i] = at(static_cast<int>(f.nodes.size()) - 1, i);
  return y;
}

uint64_t Adversary(const Formula& f, const AccuracyTable& acc, bool contract, uint64_t x,
                   PinnedRng& rng) {
  RowInputs in;
  in.x = std::span<const uint64_t>(&x, 1);
  return AdversaryRow(f, acc, contract, in, rng)[0];
}

struct EnclosureCase {
  const char* formula;
  double lo, hi;  // x range (uniform) before the random binade scaling.
};

TEST(FormulaTest, EnclosureHoldsEveryConformingImplementation) {
  const EnclosureCase cases[] = {
      {"x * 0.5 * (1 + erf(x * 0.70710678118654752440))", -12, 12},
      {"0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * (x * x * x))))", -12, 12},
      {"x / (1 + exp(-x))", -100, 100},
      {"1 / (1 + exp(-x))", -100, 100},
      {"exp2(x * 1.4426950408889634) - 1", -50, 50},
      {"rsqrt(x * x + 0.000001) * x", -10, 10},
      {"log(1 + x * x) * bfloat16(x * x - 2)", -10, 10},
  };
  PinnedRng rng(DeriveSeed(TestSeed(2026, "EnclosureHoldsEveryConformingImplementation"), {3}));
  for (const bool contract : {false, true}) {
    for (const double ulps : {0.5, 1.0, 2.0, 4.0}) {
      AccuracyTable acc;
      for (FnAccuracy& a : acc) a = ulps == 0.5 ? FnAccuracy{} : FnAccuracy{false, ulps};
      for (const EnclosureCase& c : cases) {
        const Formula f = Parse(c.formula);
        for (int i = 0; i < 400; ++i) {
          const float x = static_cast<float>(rng.Uniform(c.lo, c.hi));
          const Enclosure e = FormulaEnclosure(f, acc, contract, Bits(x));
          SCOPED_TRACE(::testing::Message() << c.formula << " x=" << x << " ulps=" << ulps
                                            << " contract=" << contract << " [" << e.lo << ", " << e.hi << "]");
          ASSERT_FALSE(std::isnan(e.lo)) << "no enclosure";
          ASSERT_LE(e.lo, e.hi);
          const double cr = ToDouble(Float32(), FormulaValue(f, Bits(x)));
          ASSERT_TRUE(cr >= e.lo && cr <= e.hi) << cr;
          for (int t = 0; t < 8; ++t) {
            const double y = ToDouble(Float32(), Adversary(f, acc, contract, Bits(x), rng));
            ASSERT_TRUE(y >= e.lo && y <= e.hi) << "adversary " << y;
          }
          // Not vacuous: a few ulps of the result wide, or, where the formula cancels (1 +
          // erf(x / sqrt 2) for x < -3), a few ulps of max(1, |x|) in absolute terms.
          const double width = e.hi - e.lo, scale = std::max(std::fabs(e.lo), std::fabs(e.hi));
          EXPECT_LE(width, std::max(scale * 0x1p-15, std::max(1.0, std::fabs(static_cast<double>(x))) * 0x1p-20)) << width;
        }
      }
    }
  }
}

struct RowCase {
  const char* formula;
  double mean, spread;  // x_i = mean + spread * N(0, 1).
};

// Row formulas (softmax, norms): every adversary (random sum orders and trees, fused products,
// perturbed elementary functions) inside the enclosure, also with a large DC offset (layernorm's
// conditioning), large logits, weights and biases.
TEST(FormulaTest, RowEnclosureHoldsEveryConformingImplementation) {
  const RowCase cases[] = {
      {"exp(x - max(x)) / sum(exp(x - max(x)))", 0, 3},
      {"exp(x - max(x)) / sum(exp(x - max(x)))", 0, 30},
      {"exp(x - max(x)) * (1 / sum(exp(x - max(x))))", 5, 2},
      {"x - max(x) - log(sum(exp(x - max(x))))", 0, 10},
      {"x * rsqrt(mean(x * x) + eps) * w", 0, 1},
      {"bfloat16(x * rsqrt(mean(x * x) + eps)) * w", 3, 1},
      {"x / (sqrt(mean(x * x)) + eps) * w", 0, 1},
      {"(x - mean(x)) * rsqrt(mean((x - mean(x)) * (x - mean(x))) + eps) * w + b", 0, 1},
      {"(x - mean(x)) * rsqrt(mean((x - mean(x)) * (x - mean(x))) + eps) * w + b", 1e4, 1},
      {"(x - mean(x)) * rsqrt(mean(x * x) - mean(x) * mean(x) + eps) * w + b", 10, 1},
  };
  PinnedRng rng(DeriveSeed(TestSeed(2026, "RowEnclosureHoldsEveryConformingImplementation"), {5}));
  for (const bool contract : {false, true}) {
    for (const double ulps : {0.5, 2.0}) {
      AccuracyTable acc;
      for (FnAccuracy& a : acc) a = ulps == 0.5 ? FnAccuracy{} : FnAccuracy{false, ulps};
      for (const RowCase& c : cases) {
        const Formula f = Parse(c.formula);
        for (int trial = 0; trial < 12; ++trial) {
          const size_t n = 1 + rng.Below(trial < 2 ? 3 : 300);
          std::vector<uint64_t> x(n), w(n), b(n);
          for (size_t i = 0; i < n; ++i) {
            x[i] = Bits(static_cast<float>(c.mean + c.spread * rng.Normal()));
            w[i] = Bits(static_cast<float>(1 + 0.1 * rng.Normal()));
            b[i] = Bits(static_cast<float>(0.1 * rng.Normal()));
          }
          RowInputs in;
          in.x = x;
          in.w = w;
          in.b = b;
          in.eps = Bits(1e-5f);
          std::vector<Enclosure> e(n);
          FormulaRowEnclosure(f, acc, contract, in, e);
          std::vector<uint64_t> cr(n);
          FormulaRowValue(f, in, cr);
          std::vector<std::vector<uint64_t>> adversaries;
          for (int t = 0; t < 6; ++t) adversaries.push_back(AdversaryRow(f, acc, contract, in, rng));
          for (size_t i = 0; i < n; ++i) {
            SCOPED_TRACE(::testing::Message() << c.formula << " n=" << n << " i=" << i << " ulps=" << ulps
                                              << " contract=" << contract << " [" << e[i].lo << ", "
                                              << e[i].hi << "]");
            ASSERT_FALSE(std::isnan(e[i].lo)) << "no enclosure";
            const double y = ToDouble(Float32(), cr[i]);
            ASSERT_TRUE(y >= e[i].lo && y <= e[i].hi) << "sequential " << y;
            for (const std::vector<uint64_t>& a : adversaries) {
              const double ya = ToDouble(Float32(), a[i]);
              ASSERT_TRUE(ya >= e[i].lo && ya <= e[i].hi) << "adversary " << ya;
            }
          }
        }
      }
    }
  }
  EXPECT_FALSE(ParseFormula("sum(1)", Float32()).ok());
}

TEST(FormulaTest, EnclosureSpecialValues) {
  AccuracyTable acc;
  const Formula silu = Parse("x / (1 + exp(-x))");
  // exp(-x) overflows for x = -100: silu(-100) = -100 / Inf = -0 in every implementation.
  Enclosure e = FormulaEnclosure(silu, acc, false, Bits(-100.0f));
  EXPECT_EQ(e.lo, 0.0);
  EXPECT_EQ(e.hi, 0.0);
  // NaN in: no enclosure. Division by an interval holding zero: none either.
  e = FormulaEnclosure(silu, acc, false, 0x7FC00000);
  EXPECT_TRUE(std::isnan(e.lo));
  e = FormulaEnclosure(Parse("1 / (x - x)"), acc, false, Bits(3.0f));
  EXPECT_TRUE(std::isnan(e.lo));
  // gelu at -Inf with an inexact erf (the torch-cpu presets): 1 + erf(-Inf) may be 0 or not, so
  // -Inf * 0.5 * (1 + erf) is NaN or +-Inf: no enclosure (composite_model_fuzzer found the
  // enclosure [-Inf, Inf], which the every-step value NaN lies outside of).
  AccuracyTable loose;
  loose[static_cast<size_t>(Fn::kErf)] = FnAccuracy{false, 4, 1.5e-7};
  const Formula gelu = Parse("x * 0.5 * (1 + erf(x * 0.70710678118654752440))");
  e = FormulaEnclosure(gelu, loose, true, 0xFF800000);
  EXPECT_TRUE(std::isnan(e.lo)) << e.lo << " " << e.hi;
  EXPECT_TRUE(std::isnan(Float(FormulaValue(gelu, 0xFF800000))));
  e = FormulaEnclosure(Parse("x - x"), acc, false, 0x7F800000);  // Inf - Inf.
  EXPECT_TRUE(std::isnan(e.lo));
  // rsqrt of an interval reaching 0: none; log of 0: -Inf exactly.
  e = FormulaEnclosure(Parse("log(x)"), acc, false, 0);
  EXPECT_EQ(e.lo, -INFINITY);
  EXPECT_EQ(e.hi, -INFINITY);
}

}  // namespace
}  // namespace fpconform::composite
