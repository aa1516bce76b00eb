// Elementwise models (model.h): the reader's errors, and every preset in
// composite/models/ against the mathematical function it claims to implement (evaluated here by
// textbook formulas in MPFR at 400 bits, independently of the oracles): the enclosure of every
// function must hold the exact value to within the formula's own approximation (a few ulps), on
// random and special inputs, so a mistyped formula or constant fails.
#include "composite/model.h"

#include <mpfr.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>

#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/ops.h"
#include "gtest/gtest.h"
#include "oracles/elementary_test_support.h"

namespace fpconform::composite {
namespace {

const std::string kModels = FPCONFORM_COMPOSITE_MODELS_DIR;

constexpr char kMinimal[] = R"toml(name = "m"
description = "d"
kind = "elementwise"
[formats]
input = "bfloat16"
compute = "float32"
output = "bfloat16"
[accuracy]
exp = 2
[functions]
sigmoid = "1 / (1 + exp(-x))"
exp = "correctly_rounded"
[provenance]
"formats.input" = "s"
"formats.compute" = "s"
"formats.output" = "s"
"accuracy.exp" = "s"
"functions.sigmoid" = "s"
"functions.exp" = "s"
unconfirmed = ["accuracy.exp"]
)toml";

TEST(CompositeModelTest, ParsesAMinimalModel) {
  absl::StatusOr<CompositeModel> m = ParseCompositeModel(kMinimal, "m.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->functions.size(), 2u);
  const CompositeFunction* s = m->Find("sigmoid");
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->exact());
  EXPECT_TRUE(m->Find("exp")->exact());
  EXPECT_EQ(s->Emulate(0x0000), 0x3F00u);  // sigmoid(0) = 0.5 in bfloat16.
  EXPECT_EQ(m->unconfirmed, std::vector<std::string>{"accuracy.exp"});
}

// A replacement applied to kMinimal (the first occurrence of `from`) and a fragment of the error
// the changed text must give.
struct ErrorCase {
  std::string from, to, message;
};

// Parses kMinimal with each case's replacement and expects an error containing its message.
void ExpectErrors(std::span<const ErrorCase> cases) {
  for (const ErrorCase& c : cases) {
    std::string text = kMinimal;
    const size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    text.replace(at, c.from.size(), c.to);
    SCOPED_TRACE(text);
    absl::StatusOr<CompositeModel> m = ParseCompositeModel(text, "m.toml");
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find(c.message), std::string::npos) << m.status();
  }
}

TEST(CompositeModelTest, ErrorsNameFileLineAndKey) {
  const ErrorCase cases[] = {
      {"sigmoid = \"1 / (1 + exp(-x))\"", "sigmoid = \"1 / (1 + expf(-x))\"",
       "m.toml:11: functions.sigmoid: column 10: unknown name 'expf'"},
      {"sigmoid =", "sigmod =", "m.toml:11: functions.sigmod: unknown function"},
      {"exp = 2\n", "erf = 2\n", "functions.sigmoid: calls exp, whose accuracy [accuracy] does not give"},
      {"exp = 2\n", "exp = 0.1\n", "m.toml:9: accuracy.exp: must be \"correctly_rounded\" or ulps in 0.5..1e9"},
      {"compute = \"float32\"", "compute = \"float8_e4m3fn\"", "formats.compute: narrower than the input format bfloat16"},
      {"\"functions.exp\" = \"s\"\n", "", "provenance.\"functions.exp\": required key missing"},
      {"unconfirmed = [\"accuracy.exp\"]", "unconfirmed = [\"accuracy.erf\"]", "'accuracy.erf' names no key of this file"},
      {"kind = \"elementwise\"", "kind = \"softmax\"", "m.toml:3: kind: must be one of elementwise axis, got \"softmax\""},
      {"[formats]", "colour = 1\n[formats]", "colour: unknown key"},
      {"sigmoid = \"1 / (1 + exp(-x))\"", "sigmoid = \"x / sum(x)\"",
       "functions.sigmoid: uses w, b, eps, n or a reduction: only kind = \"axis\" models do"},
  };
  ExpectErrors(cases);
  EXPECT_NE(ParseCompositeModel("name = [", "m.toml").status().message().find("m.toml:1: TOML syntax"),
            std::string::npos);
}

// The accuracy of the division ("div") and an argument perturbation (arg_rel): parsed, applied
// to the formula's divisions and exp, and refused where they mean nothing.
TEST(CompositeModelTest, ParsesDivisionAccuracyAndArgumentPerturbation) {
  std::string text = kMinimal;
  text.replace(text.find("exp = 2\n"), 8, "exp = { ulps = 2.5, arg_rel = 1.193e-7 }\ndiv = 2.5\n");
  text.replace(text.find("\"accuracy.exp\" = \"s\"\n"), 21, "\"accuracy.exp\" = \"s\"\n\"accuracy.div\" = \"s\"\n");
  absl::StatusOr<CompositeModel> m = ParseCompositeModel(text, "m.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  const FnAccuracy& div = m->accuracy[static_cast<size_t>(Fn::kDiv)];
  const FnAccuracy& exp = m->accuracy[static_cast<size_t>(Fn::kExp)];
  EXPECT_FALSE(div.correctly_rounded);
  EXPECT_EQ(div.ulps, 2.5);
  EXPECT_EQ(exp.arg_rel, 1.193e-7);
  const CompositeFunction* s = m->Find("sigmoid");
  EXPECT_FALSE(s->exact());
  // sigmoid(4) = 0.98201379 in bfloat16 (spacing 2^-8 there): the enclosure lies within an ulp.
  const Enclosure e = s->Enclose(0x4080);
  EXPECT_LE(std::fabs(e.lo - 0.98201379), 0x1p-8);
  EXPECT_LE(std::fabs(e.hi - 0.98201379), 0x1p-8);
  // Without "div" the division is IEEE; an undeclared division is no error.
  absl::StatusOr<CompositeModel> plain = ParseCompositeModel(kMinimal, "m.toml");
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->accuracy[static_cast<size_t>(Fn::kDiv)].correctly_rounded);
  const ErrorCase cases[] = {
      {"exp = 2\n", "exp = 2\ndiv = { ulps = 2, arg_rel = 1e-7 }\n", "accuracy.div.arg_rel: unknown key"},
      {"exp = 2\n", "exp = { ulps = 2, arg_rel = 0.5 }\n", "accuracy.exp.arg_rel"},
      {"exp = 2\n", "exp = 2\ndivide = 2\n", "unknown key (valid: exp exp2 log tanh erf sqrt rsqrt div)"},
      {"sigmoid = \"1 / (1 + exp(-x))\"", "sigmoid = \"welford_m2(x)\"",
       "functions.sigmoid: uses w, b, eps, n or a reduction: only kind = \"axis\" models do"},
      {"sigmoid = \"1 / (1 + exp(-x))\"", "sigmoid = \"div(x)\"", "column 1: unknown name 'div'"},
  };
  ExpectErrors(cases);
}

// fn(x) of the mathematical function, by its textbook formula in MPFR at 400 bits
// (oracles/elementary_test_support.h), as a double (RNE).
double Exact(const std::string& fn, double x) {
  const absl::StatusOr<ElementaryFn> f = ParseElementaryFn(fn);
  EXPECT_TRUE(f.ok()) << f.status();
  if (!f.ok()) return NAN;
  MpfrValue xv(64), v(400);
  mpfr_set_d(xv, x, MPFR_RNDN);
  TextbookElementary(*f, xv, v);
  return mpfr_get_d(v, MPFR_RNDN);
}

TEST(CompositeModelTest, PresetsImplementTheirFunctions) {
  absl::StatusOr<std::vector<CompositeModel>> models = LoadCompositeModels(kModels);
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_GE(models->size(), 4u);
  PinnedRng rng(DeriveSeed(TestSeed(2026, "PresetsImplementTheirFunctions"), {4}));
  for (const CompositeModel& m : *models) {
    for (const CompositeFunction& fn : m.functions) {
      if (fn.correctly_rounded || fn.kind != CompositeKind::kElementwise) continue;
      const FormatSpec& in = *fn.input;
      const FormatSpec& out = *fn.output;
      for (int i = 0; i < 300; ++i) {
        double x = rng.Uniform(-12, 12);
        if (fn.name == "log" || fn.name == "rsqrt") x = std::fabs(x) + 1e-3;
        if (fn.name == "reciprocal" && std::fabs(x) < 1e-3) x = 1;
        const uint64_t xb = DoubleToBits(in, x);
        x = ToDouble(in, xb);
        const Enclosure e = fn.Enclose(xb);
        const double exact = Exact(fn.name, x);
        SCOPED_TRACE(::testing::Message() << m.name << " " << fn.name << "(" << x << ") = " << exact
                                          << " enclosed in [" << e.lo << ", " << e.hi << "]");
        ASSERT_LE(e.lo, e.hi);
        const double y = ToDouble(out, fn.Emulate(xb));
        EXPECT_TRUE(y >= e.lo && y <= e.hi) << y;
        // The formula approximates the function to a few ulps of the output format (more where
        // it cancels: 1 + erf(x / sqrt 2) for x < -5, which the bound covers through the
        // enclosure's width).
        const double ulp = std::ldexp(1.0, std::max(std::ilogb(std::fabs(exact) + 1e-300), out.d.emin) -
                                               out.d.precision + 1);
        const double slack = 8 * ulp + 4 * (e.hi - e.lo) + 1e-30;
        EXPECT_LE(exact, e.hi + slack);
        EXPECT_GE(exact, e.lo - slack);
      }
    }
  }
}

// The exact value of op at every entry of row x (weight w, bias b: empty for none), by MPFR at
// 300 bits, as doubles.
std::vector<double> ExactRow(const std::string& op, const std::vector<double>& x, const std::vector<double>& w,
                             const std::vector<double>& b, double eps) {
  const size_t n = x.size();
  std::vector<double> out(n);
  mpfr_t s, t, u, m;
  mpfr_inits2(300, s, t, u, m, static_cast<mpfr_ptr>(nullptr));
  if (op == "softmax" || op == "log_softmax") {
    mpfr_set_zero(s, 1);
    for (double v : x) {
      mpfr_set_d(t, v, MPFR_RNDN);
      mpfr_exp(t, t, MPFR_RNDN);
      mpfr_add(s, s, t, MPFR_RNDN);
    }
    mpfr_log(u, s, MPFR_RNDN);
    for (size_t i = 0; i < n; ++i) {
      mpfr_set_d(t, x[i], MPFR_RNDN);
      if (op == "softmax") {
        mpfr_exp(t, t, MPFR_RNDN);
        mpfr_div(t, t, s, MPFR_RNDN);
      } else {
        mpfr_sub(t, t, u, MPFR_RNDN);
      }
      out[i] = mpfr_get_d(t, MPFR_RNDN);
    }
  } else {
    mpfr_set_zero(m, 1);
    if (op == "layernorm") {
      for (double v : x) mpfr_add_d(m, m, v, MPFR_RNDN);
      mpfr_div_ui(m, m, n, MPFR_RNDN);
    }
    mpfr_set_zero(s, 1);
    for (double v : x) {
      mpfr_set_d(t, v, MPFR_RNDN);
      mpfr_sub(t, t, m, MPFR_RNDN);
      mpfr_sqr(t, t, MPFR_RNDN);
      mpfr_add(s, s, t, MPFR_RNDN);
    }
    mpfr_div_ui(s, s, n, MPFR_RNDN);
    mpfr_add_d(s, s, eps, MPFR_RNDN);
    mpfr_rec_sqrt(s, s, MPFR_RNDN);
    for (size_t i = 0; i < n; ++i) {
      mpfr_set_d(t, x[i], MPFR_RNDN);
      mpfr_sub(t, t, m, MPFR_RNDN);
      mpfr_mul(t, t, s, MPFR_RNDN);
      if (!w.empty()) mpfr_mul_d(t, t, w[i], MPFR_RNDN);
      if (!b.empty()) mpfr_add_d(t, t, b[i], MPFR_RNDN);
      out[i] = mpfr_get_d(t, MPFR_RNDN);
    }
  }
  mpfr_clears(s, t, u, m, static_cast<mpfr_ptr>(nullptr));
  return out;
}

// Every axis preset against the exact ops (rows with DC offsets and large logits, weights and
// biases): the enclosure holds the exact value to within the formula's own approximation (its
// width, plus a few ulps per rounding to the output format), so a mistyped formula fails.
TEST(CompositeModelTest, AxisPresetsImplementTheirFunctions) {
  absl::StatusOr<std::vector<CompositeModel>> models = LoadCompositeModels(kModels);
  ASSERT_TRUE(models.ok()) << models.status();
  PinnedRng rng(DeriveSeed(TestSeed(2026, "AxisPresetsImplementTheirFunctions"), {6}));
  int checked = 0;
  for (const CompositeModel& m : *models) {
    if (m.kind != CompositeKind::kAxis) continue;
    for (const CompositeFunction& fn : m.functions) {
      if (fn.correctly_rounded) continue;
      const FormatSpec& in = *fn.input;
      const FormatSpec& out = *fn.output;
      for (int trial = 0; trial < 20; ++trial) {
        const size_t n = 1 + rng.Below(200);
        const double offset = fn.name == "layernorm" ? (trial % 3 == 0 ? 50.0 : 0.0) : 0.0;
        const double spread = fn.name.find("softmax") != std::string::npos ? (trial % 2 ? 20.0 : 2.0) : 1.0;
        std::vector<uint64_t> x(n), w(n), b(n);
        std::vector<double> xd(n), wd(n), bd(n);
        for (size_t i = 0; i < n; ++i) {
          x[i] = DoubleToBits(in, offset + spread * rng.Normal());
          w[i] = DoubleToBits(in, 1 + 0.2 * rng.Normal());
          b[i] = DoubleToBits(in, 0.2 * rng.Normal());
          xd[i] = ToDouble(in, x[i]);
          wd[i] = ToDouble(in, w[i]);
          bd[i] = ToDouble(in, b[i]);
        }
        const bool norm = fn.name == "rmsnorm" || fn.name == "layernorm";
        CompositeFunction::Row row;
        row.x = x;
        row.eps = 1e-5;
        if (norm) {
          row.weight_format = &in;
          row.weight = w;
        }
        if (fn.name == "layernorm") {
          row.bias_format = &in;
          row.bias = b;
        }
        std::vector<Enclosure> e(n);
        std::vector<uint64_t> y(n);
        ASSERT_TRUE(fn.EncloseRow(row, e).ok());
        ASSERT_TRUE(fn.EmulateRow(row, y).ok());
        const std::vector<double> exacts = ExactRow(fn.name, xd, norm ? wd : std::vector<double>{},
                                                    fn.name == "layernorm" ? bd : std::vector<double>{}, 1e-5);
        for (size_t i = 0; i < n; ++i) {
          const double exact = exacts[i];
          SCOPED_TRACE(::testing::Message() << m.name << " " << fn.name << " n=" << n << " i=" << i << ": exact "
                                            << exact << " enclosed in [" << e[i].lo << ", " << e[i].hi << "]");
          ASSERT_LE(e[i].lo, e[i].hi);
          const double yv = ToDouble(out, y[i]);
          EXPECT_TRUE(yv >= e[i].lo && yv <= e[i].hi) << yv;
          // A formula rounding its intermediate steps (nki-library's four bfloat16 buffers) errs
          // by ulps of the intermediates' magnitude: |normalized x| |w| + |b|, not of the result.
          double mag = std::fabs(exact) + (norm ? std::fabs(wd[i]) * 4 + std::fabs(bd[i]) : 0.0);
          // A log_softmax that rounds its row sum (torch CPU bfloat16: bfloat16(sum(...))) errs
          // by ulps of the sum's log, up to the sum's relative rounding (as much as one unit
          // near a zero output): |exact| + 1 bounds the log-sum-exp's scale there.
          if (fn.name == "log_softmax" && fn.formula.text.find("bfloat16(") != std::string::npos) {
            mag += std::fabs(exact) + 1;
          }
          const double ulp = std::ldexp(1.0, std::max(std::ilogb(mag + 1e-300), out.d.emin) -
                                                 out.d.precision + 1);
          const double slack = 8 * ulp + 4 * (e[i].hi - e[i].lo) + 1e-30;
          EXPECT_LE(exact, e[i].hi + slack);
          EXPECT_GE(exact, e[i].lo - slack);
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

const CompositeFunction& PresetFunction(const std::vector<CompositeModel>& models, const std::string& model,
                                        const std::string& fn) {
  for (const CompositeModel& m : models) {
    if (m.name == model && m.Find(fn) != nullptr) return *m.Find(fn);
  }
  ADD_FAILURE() << model << " " << fn << " not found";
  return models[0].functions[0];
}

// Eager CUDA and torch.compile differ by their formulas, not only by their accuracies: HF Llama's
// RMSNorm rounds to bfloat16 twice eagerly and once compiled (Inductor drops the intermediate
// cast), silu is x / (1 + exp(-x)) eagerly and x * sigmoid(x) compiled. The every-step-correctly-
// rounded emulations of the two presets differ on a large fraction of the elements (22.7% for
// RMSNorm on rows of 8192, seed 2026, against 23% measured on an H200 in issue 28; 31% for silu on
// randn inputs against 20% measured: the real functions are not correctly rounded, so the rate is
// not predicted, only that the formulas differ), each lies in its own model's enclosure, and the
// eager emulation falls outside the compiled model's enclosure where the double rounding moved it:
// the audit can tell the two apart.
TEST(CompositeModelTest, EagerAndCompiledPresetsDifferByTheirFormulas) {
  absl::StatusOr<std::vector<CompositeModel>> models = LoadCompositeModels(kModels);
  ASSERT_TRUE(models.ok()) << models.status();
  PinnedRng rng(DeriveSeed(TestSeed(2026, "EagerAndCompiledPresetsDifferByTheirFormulas"), {7}));
  const CompositeFunction& eager = PresetFunction(*models, "hf-llama-rmsnorm-cuda-bf16", "rmsnorm");
  const CompositeFunction& compiled = PresetFunction(*models, "inductor-cuda-rows-bf16", "rmsnorm");
  const size_t n = 8192;
  std::vector<uint64_t> x(n), w(n), ye(n), yc(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = DoubleToBits(BFloat16(), rng.Normal());
    w[i] = DoubleToBits(BFloat16(), 1 + 0.1 * rng.Normal());
  }
  CompositeFunction::Row row;
  row.x = x;
  row.weight_format = &BFloat16();
  row.weight = w;
  row.eps = 1e-6;
  std::vector<Enclosure> ec(n), ee(n);
  ASSERT_TRUE(eager.EmulateRow(row, ye).ok());
  ASSERT_TRUE(compiled.EmulateRow(row, yc).ok());
  ASSERT_TRUE(compiled.EncloseRow(row, ec).ok());
  ASSERT_TRUE(eager.EncloseRow(row, ee).ok());
  size_t differ = 0, eager_outside = 0;
  for (size_t i = 0; i < n; ++i) {
    const double e = ToDouble(BFloat16(), ye[i]), c = ToDouble(BFloat16(), yc[i]);
    ASSERT_TRUE(c >= ec[i].lo && c <= ec[i].hi) << i;
    ASSERT_TRUE(e >= ee[i].lo && e <= ee[i].hi) << i;
    differ += ye[i] != yc[i];
    eager_outside += !(e >= ec[i].lo && e <= ec[i].hi);
  }
  const double rms_fraction = static_cast<double>(differ) / static_cast<double>(n);
  RecordProperty("rmsnorm_bf16_differ_fraction", std::to_string(rms_fraction));
  std::printf("HF RMSNorm bf16, rows of 8192: eager and compiled emulations differ on %.1f%%; %.1f%% of the "
              "eager values lie outside the compiled enclosure\n",
              100 * rms_fraction, 100.0 * static_cast<double>(eager_outside) / static_cast<double>(n));
  EXPECT_GT(rms_fraction, 0.05);
  EXPECT_GT(eager_outside, 0u);

  const CompositeFunction& silu_eager = PresetFunction(*models, "torch-cuda-f32", "silu");
  const CompositeFunction& silu_compiled = PresetFunction(*models, "inductor-cuda-f32", "silu");
  size_t silu_differ = 0;
  const int count = 8192;
  for (int i = 0; i < count; ++i) {
    const uint64_t xb = DoubleToBits(Float32(), rng.Normal());  // torch.randn.
    const uint64_t a = silu_eager.Emulate(xb), b = silu_compiled.Emulate(xb);
    const Enclosure eb = silu_compiled.Enclose(xb), ea = silu_eager.Enclose(xb);
    ASSERT_TRUE(ToDouble(Float32(), b) >= eb.lo && ToDouble(Float32(), b) <= eb.hi);
    ASSERT_TRUE(ToDouble(Float32(), a) >= ea.lo && ToDouble(Float32(), a) <= ea.hi);
    silu_differ += a != b;
  }
  const double silu_fraction = static_cast<double>(silu_differ) / count;
  std::printf("silu float32: eager and compiled emulations differ on %.1f%%\n", 100 * silu_fraction);
  EXPECT_GT(silu_fraction, 0.05);
}

}  // namespace
}  // namespace fpconform::composite
