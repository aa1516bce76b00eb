// Per-block scales (evaluate.h EvaluateBlockScaledDot; MODEL_FORMAT.md epilogue.scale = "block"):
//  * the model keys and their errors;
//  * with every scale 1, EvaluateDot's bits (the unscaled path is the unit-scale case);
//  * "fma" and "mul_add" against the host's float32 arithmetic: each block's partial sum from the
//    engine on that block alone, then std::fmaf(S32, p, acc) or acc + S32 * p on the CPU
//    (-ffp-contract=off keeps the second one unfused), bit for bit;
//  * "products" (MX power-of-two scales) against the same model on float32 inputs that carry the
//    scales themselves (a_k s_a and b_k s_b are exact float32 values), bit for bit;
//  * the bound against the exact value sum_j s_a s_b x_j (oracles' exact accumulator) for the
//    three ways, and that it is not vacuous;
//  * the argument errors.
// Randomized with FPCONFORM_SEED (cases/test_seed.h).
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "accumulation/evaluate.h"
#include "accumulation/model.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/ops.h"
#include "oracles/exact_sum.h"

namespace fpconform {
namespace {

std::string ModelPath(const std::string& name) {
  return std::string(FPCONFORM_MODELS_SOURCE_DIR) + "/" + name + ".toml";
}

// The preset file's text with its [epilogue] table replaced by `epilogue` (keys one per line)
// and its name by `name`; the provenance of the new keys is "test".
std::string WithEpilogue(const std::string& preset, const std::string& name, const std::string& epilogue) {
  std::string text;
  if (FILE* f = std::fopen(ModelPath(preset).c_str(), "rb")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
  }
  EXPECT_FALSE(text.empty()) << preset;
  std::string out, ep_prov;
  for (size_t i = 0; i < epilogue.size();) {
    const size_t end = epilogue.find('\n', i);
    const std::string line = epilogue.substr(i, end - i);
    if (const size_t eq = line.find(" ="); eq != std::string::npos) {
      ep_prov += "\"epilogue." + line.substr(0, eq) + "\" = \"test\"\n";
    }
    i = end == std::string::npos ? epilogue.size() : end + 1;
  }
  bool in_epilogue = false;
  for (size_t i = 0; i < text.size();) {
    const size_t end = text.find('\n', i);
    std::string line = text.substr(i, end == std::string::npos ? std::string::npos : end - i);
    i = end == std::string::npos ? text.size() : end + 1;
    if (line.rfind("[", 0) == 0) in_epilogue = line == "[epilogue]";
    if (in_epilogue || line.rfind("\"epilogue.", 0) == 0) continue;
    if (line.rfind("name = ", 0) == 0) line = "name = \"" + name + "\"";
    if (line.rfind("unconfirmed", 0) == 0) {
      for (size_t p; (p = line.find("\"epilogue.")) != std::string::npos;) {
        const size_t q = line.find('"', p + 1);
        size_t from = p, to = q + 1;
        if (line.compare(to, 2, ", ") == 0) to += 2;
        else if (from >= 2 && line.compare(from - 2, 2, ", ") == 0) from -= 2;
        line.erase(from, to - from);
      }
    }
    if (line == "[provenance]") out += "[epilogue]\n" + epilogue + "\n[provenance]\n" + ep_prov;
    else out += line + "\n";
  }
  return out;
}

Model Parse(const std::string& text) {
  absl::StatusOr<Model> m = ParseModel(text, "");
  EXPECT_TRUE(m.ok()) << m.status() << "\n" << text;
  return m.ok() ? *m : Model{};
}

// A random finite float8_e4m3fn value; normal (or zero) when `normal_only`.
uint64_t RandomE4m3(PinnedRng& rng, bool normal_only) {
  for (;;) {
    const uint64_t bits = rng.Below(256);
    if ((bits & 0x7F) == 0x7F) continue;                     // NaN.
    if (normal_only && (bits & 0x78) == 0 && (bits & 7) != 0) continue;  // Subnormal.
    return bits;
  }
}

// A float32 value (1 + U) 2^e, e uniform in [lo, hi].
double RandomScale(PinnedRng& rng, int lo, int hi) {
  const int e = lo + static_cast<int>(rng.Below(static_cast<uint64_t>(hi - lo + 1)));
  return static_cast<double>(static_cast<float>(std::ldexp(1 + rng.Uniform01(), e)));
}

// sum_k (s_a[j] a_k)(s_b[j] b_k) exactly (each factor exact in binary64: <= 48 bits).
ExactAccumulator ExactScaled(std::span<const uint64_t> a, std::span<const uint64_t> b,
                             const std::vector<double>& sa, const std::vector<double>& sb,
                             int block) {
  std::vector<uint64_t> x(a.size()), y(b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    const size_t j = k / static_cast<size_t>(block);
    x[k] = DoubleToBits(Float64(), sa[j] * ToDouble(Float8E4M3FN(), a[k]));
    y[k] = DoubleToBits(Float64(), sb[j] * ToDouble(Float8E4M3FN(), b[k]));
  }
  ExactAccumulator acc;
  acc.AddDot(Float64(), x, Float64(), y);
  return acc;
}

// |v - exact| rounded up, and sum |terms| rounded up.
double ErrorOf(double v, const ExactAccumulator& exact) {
  ExactAccumulator d = exact;
  d.Add(Float64(), DoubleToBits(Float64(), -v));
  OpEnv up;
  up.rounding = d.Sign() < 0 ? Rounding::kDownward : Rounding::kUpward;
  return std::fabs(ToDouble(Float64(), d.Round(Float64(), up).bits));
}

const char kDeepGemm[] = "nvidia-h100-fp8e4m3-deepgemm";

// The three ways block scales enter: the DeepGEMM preset ("fma"), the same with "mul_add", and
// MX-style "products" on the H100 e4m3 datapath with blocks of 32.
struct Ways {
  Model fma, mul_add, mx;
  std::array<const Model*, 3> All() const { return {&fma, &mul_add, &mx}; }
};

Ways MakeWays() {
  Ways w;
  w.fma = *LoadModelFile(ModelPath(kDeepGemm));
  w.mul_add = w.fma;
  w.mul_add.name += " (mul_add)";
  w.mul_add.epilogue.block_apply = BlockApply::kMulAdd;
  w.mx = Parse(WithEpilogue("nvidia-h100-fp8e4m3", "mx",
                            "c = \"chain\"\nscale = \"block\"\nscale_block = 32\nblock_apply = \"products\"\n"));
  return w;
}

// n random float8_e4m3fn operands (RandomE4m3).
std::vector<uint64_t> RandomE4m3s(PinnedRng& rng, size_t n, bool normal_only = false) {
  std::vector<uint64_t> v(n);
  for (uint64_t& x : v) x = RandomE4m3(rng, normal_only);
  return v;
}

TEST(BlockScaleTest, CatalogModelParses) {
  absl::StatusOr<Model> m = LoadModelFile(ModelPath(kDeepGemm));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->epilogue.scale, EpilogueScale::kBlock);
  EXPECT_EQ(m->epilogue.scale_block, 128);
  EXPECT_EQ(m->epilogue.block_apply, BlockApply::kFma);
  EXPECT_EQ(m->chain.kind, ChainKind::kPromote);
}

TEST(BlockScaleTest, KeyErrors) {
  struct Case {
    std::string preset, epilogue, error;
  };
  const Case cases[] = {
      {"nvidia-h100-fp8e4m3", "c = \"chain\"\nscale = \"block\"\nscale_block = 32\nblock_apply = \"fma\"\n",
       "epilogue.block_apply: \"fma\" and \"mul_add\" scale the partial sums of chain.kind = \"promote\""},
      {"nvidia-h100-fp8e4m3-promote128",
       "c = \"chain\"\nscale = \"block\"\nscale_block = 64\nblock_apply = \"mul_add\"\n",
       "epilogue.scale_block: must equal chain.every (128)"},
      {"nvidia-h100-fp8e4m3-promote128", "c = \"chain\"\nscale = \"block\"\nblock_apply = \"fma\"\n",
       "scale_block"},
      {"nvidia-h100-fp8e4m3-promote128", "c = \"chain\"\nscale = \"block\"\nscale_block = 128\n",
       "block_apply"},
      {"nvidia-h100-fp8e4m3-promote128",
       "c = \"chain\"\nscale = \"block\"\nscale_block = 128\nblock_apply = \"fma\"\nscale_order = \"product\"\n",
       "epilogue.scale_order"},
      {"nvidia-h100-fp8e4m3", "c = \"chain\"\nscale = \"row_col\"\nscale_block = 32\n",
       "epilogue.scale_block: applies only with epilogue.scale = \"block\""},
      {"nvidia-h100-fp8e4m3", "c = \"chain\"\nblock_apply = \"products\"\n",
       "epilogue.block_apply: applies only with epilogue.scale = \"block\""},
      {"nvidia-h100-fp8e4m3", "c = \"chain\"\nscale = \"block\"\nscale_block = 0\nblock_apply = \"products\"\n",
       "epilogue.scale_block"},
  };
  for (const Case& c : cases) {
    const absl::StatusOr<Model> m = ParseModel(WithEpilogue(c.preset, "t", c.epilogue), "");
    ASSERT_FALSE(m.ok()) << c.epilogue;
    EXPECT_NE(std::string(m.status().message()).find(c.error), std::string::npos)
        << m.status() << "\nexpected: " << c.error;
  }
  // A permutation whose blocks straddle the scale blocks.
  std::string text = WithEpilogue("nvidia-h100-fp8e4m3-promote128", "t",
                                  "c = \"chain\"\nscale = \"block\"\nscale_block = 128\nblock_apply = \"fma\"\n");
  text.replace(text.find("every = 128\n"), 12, "every = 128\npermutation = \"1 0 2\"\n");
  text.replace(text.find("[provenance]\n"), 13, "[provenance]\n\"chain.permutation\" = \"test\"\n");
  const absl::StatusOr<Model> m = ParseModel(text, "");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(std::string(m.status().message()).find("epilogue.scale_block: must be a multiple of chain.permutation's length (3)"),
            std::string::npos) << m.status();
}

TEST(BlockScaleTest, UnitScalesAreTheUnscaledDot) {
  PinnedRng rng(TestSeed(20261207, "BlockScaleTest.UnitScales"));
  const Ways ways = MakeWays();
  for (const Model* m : ways.All()) {
    for (int k : {1, 31, 32, 33, 127, 128, 129, 300, 1024}) {
      const std::vector<uint64_t> a = RandomE4m3s(rng, k), b = RandomE4m3s(rng, k);
      const size_t nb = (k + m->epilogue.scale_block - 1) / m->epilogue.scale_block;
      const std::vector<double> ones(nb, 1.0);
      const uint64_t c = DoubleToBits(Float32(), rng.Below(2) ? 0 : 3.5);
      const EvalResult plain = *GenericEvaluateDot(*m, a, b, c);
      const absl::StatusOr<EvalResult> scaled = EvaluateBlockScaledDot(*m, a, b, {ones, ones}, c);
      ASSERT_TRUE(scaled.ok()) << scaled.status();
      EXPECT_EQ(scaled->bits, plain.bits) << m->name << " k=" << k;
      EXPECT_GE(scaled->bound, plain.bound);
      // fma with S = 1 and exact power-of-two scaling are the unscaled nodes (up to the 2^-50
      // safety factors); mul_add rounds each scaled partial sum once more, a rounding node per
      // block that the unscaled chain does not have (its u M term is checked below, in
      // BoundHoldsAndIsNotVacuous).
      if (m->epilogue.block_apply != BlockApply::kMulAdd) {
        EXPECT_LE(scaled->bound, plain.bound * (1 + 0x1p-40) + 0x1p-140) << m->name << " k=" << k;
      }
    }
  }
}

// fma / mul_add against the host: p_j is the engine's value of block j alone (one promotion of
// the inner chain from +0 into float32: the inner sum itself), then the host's float32 FMA or
// multiply-and-add.
TEST(BlockScaleTest, PromotedScalesMatchTheHostsFloat32Arithmetic) {
  PinnedRng rng(TestSeed(20261208, "BlockScaleTest.Host"));
  const Ways ways = MakeWays();
  const Model& fma = ways.fma;
  const Model& mul_add = ways.mul_add;
  int checked = 0, differ = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int k = 1 + static_cast<int>(rng.Below(trial < 200 ? 640 : 2048));
    const int nb = (k + 127) / 128;
    const std::vector<uint64_t> a = RandomE4m3s(rng, k), b = RandomE4m3s(rng, k);
    std::vector<double> sa(nb), sb(nb);
    for (int j = 0; j < nb; ++j) {
      sa[j] = RandomScale(rng, -12, 8);
      sb[j] = RandomScale(rng, -12, 8);
    }
    const float c = trial % 3 == 0 ? static_cast<float>(RandomScale(rng, -4, 6)) : 0.0f;
    float host_fma = c, host_mul_add = c;
    for (int j = 0; j < nb; ++j) {
      const int lo = j * 128, hi = std::min(k, lo + 128);
      const std::span<const uint64_t> ab(a.data() + lo, hi - lo), bb(b.data() + lo, hi - lo);
      const EvalResult p = *GenericEvaluateDot(fma, ab, bb, 0);
      const float pf = std::bit_cast<float>(static_cast<uint32_t>(p.bits));
      const float s32 = static_cast<float>(sa[j] * sb[j]);  // RNE of the exact double product.
      host_fma = std::fmaf(s32, pf, host_fma);
      const float prod = s32 * pf;
      host_mul_add = host_mul_add + prod;
    }
    const uint64_t cbits = std::bit_cast<uint32_t>(c);
    const absl::StatusOr<EvalResult> r1 = EvaluateBlockScaledDot(fma, a, b, {sa, sb}, cbits);
    const absl::StatusOr<EvalResult> r2 = EvaluateBlockScaledDot(mul_add, a, b, {sa, sb}, cbits);
    ASSERT_TRUE(r1.ok() && r2.ok());
    EXPECT_EQ(r1->bits, std::bit_cast<uint32_t>(host_fma)) << "fma k=" << k << " trial " << trial;
    EXPECT_EQ(r2->bits, std::bit_cast<uint32_t>(host_mul_add)) << "mul_add k=" << k << " trial " << trial;
    differ += r1->bits != r2->bits;
    ++checked;
  }
  EXPECT_EQ(checked, 400);
  // The two ways are different arithmetic: they must differ on some of these dots.
  EXPECT_GT(differ, 20);
}

// "products": block j's products scaled by s_a s_b = 2^(e_a + e_b) are the products of the
// float32 inputs a_k s_a and b_k s_b (exact: normal e4m3 values times powers of two within
// float32's normal range keep their nominal exponents shifted by the same amounts).
TEST(BlockScaleTest, PowerOfTwoScalesAreScaledInputs) {
  PinnedRng rng(TestSeed(20261209, "BlockScaleTest.Products"));
  for (const char* preset : {"nvidia-h100-fp8e4m3", "nvidia-b200-fp8e4m3", "nvidia-h100-fp8e4m3-mmasync"}) {
    const Model mx = Parse(WithEpilogue(
        preset, "mx", "c = \"chain\"\nscale = \"block\"\nscale_block = 32\nblock_apply = \"products\"\n"));
    Model wide = mx;
    wide.inputs.a = wide.inputs.b = &Float32();
    wide.epilogue = Model{}.epilogue;
    for (int trial = 0; trial < 150; ++trial) {
      const int k = 1 + static_cast<int>(rng.Below(300));
      const int nb = (k + 31) / 32;
      std::vector<uint64_t> a(k), b(k), a32(k), b32(k);
      std::vector<double> sa(nb), sb(nb);
      for (int j = 0; j < nb; ++j) {
        sa[j] = std::ldexp(1.0, static_cast<int>(rng.Below(21)) - 10);
        sb[j] = std::ldexp(1.0, static_cast<int>(rng.Below(21)) - 10);
      }
      for (int i = 0; i < k; ++i) {
        a[i] = RandomE4m3(rng, true);
        b[i] = RandomE4m3(rng, true);
        a32[i] = DoubleToBits(Float32(), ToDouble(Float8E4M3FN(), a[i]) * sa[i / 32]);
        b32[i] = DoubleToBits(Float32(), ToDouble(Float8E4M3FN(), b[i]) * sb[i / 32]);
      }
      const absl::StatusOr<EvalResult> r = EvaluateBlockScaledDot(mx, a, b, {sa, sb}, 0);
      ASSERT_TRUE(r.ok()) << r.status();
      const EvalResult ref = *GenericEvaluateDot(wide, a32, b32, 0);
      EXPECT_EQ(r->bits, ref.bits) << preset << " k=" << k << " trial " << trial;
    }
  }
}

TEST(BlockScaleTest, BoundHoldsAndIsNotVacuous) {
  PinnedRng rng(TestSeed(20261210, "BlockScaleTest.Bound"));
  const Ways ways = MakeWays();
  double worst = 0;  // Largest error / bound seen.
  for (const Model* m : ways.All()) {
    const int block = m->epilogue.scale_block;
    for (int trial = 0; trial < 300; ++trial) {
      const int k = 1 + static_cast<int>(rng.Below(1500));
      const int nb = (k + block - 1) / block;
      const std::vector<uint64_t> a = RandomE4m3s(rng, k), b = RandomE4m3s(rng, k);
      std::vector<double> sa(nb), sb(nb);
      for (int j = 0; j < nb; ++j) {
        const bool pow2 = m->epilogue.block_apply == BlockApply::kProducts;
        // Some scales drive block sums into float32's subnormal range (eta terms).
        const int lo = trial % 10 == 0 ? -70 : -12;
        sa[j] = pow2 ? std::ldexp(1.0, lo + static_cast<int>(rng.Below(21))) : RandomScale(rng, lo, 8);
        sb[j] = pow2 ? std::ldexp(1.0, -static_cast<int>(rng.Below(21))) : RandomScale(rng, lo, 8);
      }
      const absl::StatusOr<EvalResult> r = EvaluateBlockScaledDot(*m, a, b, {sa, sb}, 0);
      ASSERT_TRUE(r.ok()) << r.status();
      const double v = ToDouble(Float32(), r->bits);
      ASSERT_TRUE(std::isfinite(v));
      const ExactAccumulator exact = ExactScaled(a, b, sa, sb, block);
      const double err = ErrorOf(v, exact);
      EXPECT_LE(err, r->bound) << m->name << " k=" << k << " trial " << trial;
      // Not vacuous: below a fraction of sum |s a_k b_k| (plus float32's underflow quanta): 2^-6
      // with float32 promotions every 128; 2^-1 for the chain of 13-bit fused groups alone, whose
      // truncations lose up to 33 quanta of 2^-13 of the largest term per group of 32.
      const double fraction = m->epilogue.block_apply == BlockApply::kProducts ? 0x1p-1 : 0x1p-6;
      std::vector<uint64_t> x(k), y(k);
      for (int i = 0; i < k; ++i) {
        x[i] = DoubleToBits(Float64(), std::fabs(sa[i / block] * ToDouble(Float8E4M3FN(), a[i])));
        y[i] = DoubleToBits(Float64(), std::fabs(sb[i / block] * ToDouble(Float8E4M3FN(), b[i])));
      }
      ExactAccumulator abs;
      abs.AddDot(Float64(), x, Float64(), y);
      OpEnv up;
      up.rounding = Rounding::kUpward;
      const double abs_sum = ToDouble(Float64(), abs.Round(Float64(), up).bits);
      EXPECT_LE(r->bound, abs_sum * fraction + 0x1p-120) << m->name << " k=" << k;
      if (r->bound > 0) worst = std::max(worst, err / r->bound);
    }
  }
  // The bound is reached within a factor of 1000 somewhere (it is not just large).
  EXPECT_GT(worst, 1e-3);
}

// EvaluateBlockScaledMatmul against EvaluateBlockScaledDot per element: the same bits; bounds
// equal for "products" (the per-element path) and equal to rounding for "fma" / "mul_add" (the
// fast path's partial sums, M of each block summed separately); both layouts, C, special values.
TEST(BlockScaleTest, MatmulIsTheDotPerElement) {
  PinnedRng rng(TestSeed(20261211, "BlockScaleTest.Matmul"));
  const Ways ways = MakeWays();
  int specials = 0;
  for (const Model* model : ways.All()) {
    const bool pow2 = model->epilogue.block_apply == BlockApply::kProducts;
    for (int trial = 0; trial < 12; ++trial) {
      const int m = 1 + static_cast<int>(rng.Below(9)), n = 1 + static_cast<int>(rng.Below(9));
      const int k = 1 + static_cast<int>(rng.Below(trial < 6 ? 300 : 1100));
      const int kb = (k + model->epilogue.scale_block - 1) / model->epilogue.scale_block;
      const Layout la = rng.Below(2) ? Layout::kRowMajor : Layout::kColumnMajor;
      const Layout lb = rng.Below(2) ? Layout::kRowMajor : Layout::kColumnMajor;
      std::vector<uint64_t> a = RandomE4m3s(rng, size_t(m) * k), b = RandomE4m3s(rng, size_t(k) * n);
      std::vector<uint64_t> c, d(size_t(m) * n);
      if (trial % 4 == 3) {  // A NaN and a product Inf * 0 (e4m3fn has no Inf: a NaN, and a zero).
        a[rng.Below(a.size())] = 0x7F;
        b[rng.Below(b.size())] = 0x00;
        ++specials;
      }
      if (trial % 2 == 1) {
        c.resize(size_t(m) * n);
        for (uint64_t& x : c) x = DoubleToBits(Float32(), RandomScale(rng, -3, 5));
      }
      std::vector<double> sa(size_t(m) * kb), sbt(size_t(n) * kb), bounds(size_t(m) * n);
      for (double& x : sa) x = pow2 ? std::ldexp(1.0, static_cast<int>(rng.Below(13)) - 6) : RandomScale(rng, -8, 4);
      for (double& x : sbt) x = pow2 ? std::ldexp(1.0, static_cast<int>(rng.Below(13)) - 6) : RandomScale(rng, -8, 4);
      EvalOptions options;
      options.threads = 1 + static_cast<int>(rng.Below(3));
      const absl::Status st = EvaluateBlockScaledMatmul(*model, m, n, k, a, la, b, lb, sa, sbt, c, d, bounds, options);
      ASSERT_TRUE(st.ok()) << st;
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          std::vector<uint64_t> row(k), col(k);
          for (int p = 0; p < k; ++p) {
            row[p] = la == Layout::kRowMajor ? a[size_t(i) * k + p] : a[size_t(p) * m + i];
            col[p] = lb == Layout::kRowMajor ? b[size_t(p) * n + j] : b[size_t(j) * k + p];
          }
          const BlockScales s{std::span<const double>(sa).subspan(size_t(i) * kb, kb),
                              std::span<const double>(sbt).subspan(size_t(j) * kb, kb)};
          const EvalResult r = *EvaluateBlockScaledDot(*model, row, col, s, c.empty() ? 0 : c[size_t(i) * n + j]);
          const size_t e = size_t(i) * n + j;
          ASSERT_EQ(d[e], r.bits) << model->name << " m=" << m << " n=" << n << " k=" << k << " (" << i << ", " << j << ")";
          if (pow2) {
            EXPECT_EQ(bounds[e], r.bound);
          } else if (std::isfinite(r.bound)) {
            EXPECT_NEAR(bounds[e], r.bound, r.bound * 1e-9) << model->name << " k=" << k;
          } else {
            EXPECT_EQ(bounds[e], r.bound);
          }
        }
      }
    }
  }
  EXPECT_EQ(specials, 9);
  // Sizes of the scale arrays.
  std::vector<uint64_t> a(2 * 200, 0x38), b(200 * 3, 0x38), d(6);
  const std::vector<double> sa(2 * 2, 1.0), sbt(3 * 1, 1.0);
  const absl::Status st = EvaluateBlockScaledMatmul(ways.fma, 2, 3, 200, a, Layout::kRowMajor, b, Layout::kRowMajor,
                                                    sa, sbt, {}, d);
  EXPECT_EQ(st.message(), "block scales: 4 for A and 3 for B, expected 4 (2 x 2) and 6 (3 x 2): K = 200 in blocks of 128");
}

TEST(BlockScaleTest, ArgumentErrors) {
  const Ways ways = MakeWays();
  const Model& fma = ways.fma;
  const Model& mx = ways.mx;
  const Model plain = *LoadModelFile(ModelPath("nvidia-h100-fp8e4m3-promote128"));
  const std::vector<uint64_t> a(200, 0x38), b(200, 0x38);  // 1.0 in e4m3.
  const std::vector<double> two = {1, 1}, one = {1}, seven(7, 1.0);
  auto error = [](const absl::StatusOr<EvalResult>& r) {
    return r.ok() ? std::string("ok") : std::string(r.status().message());
  };
  EXPECT_NE(error(EvaluateBlockScaledDot(plain, a, b, {two, two}, 0)).find("takes no per-block scales"),
            std::string::npos);
  EXPECT_NE(error(EvaluateBlockScaledDot(fma, a, b, {one, two}, 0)).find("expected 2 each (K = 200 in blocks of 128)"),
            std::string::npos);
  const std::vector<double> third = {1, 1.0 / 3};
  EXPECT_NE(error(EvaluateBlockScaledDot(fma, a, b, {two, third}, 0)).find("block scale b[1]"),
            std::string::npos);
  const std::vector<double> inf = {INFINITY, 1};
  EXPECT_NE(error(EvaluateBlockScaledDot(fma, a, b, {inf, two}, 0)).find("a finite float32 value"),
            std::string::npos);
  std::vector<double> non_pow2(7, 1.0);
  non_pow2[3] = 1.5;
  EXPECT_NE(error(EvaluateBlockScaledDot(mx, a, b, {seven, non_pow2}, 0)).find("power of two"),
            std::string::npos);
  EXPECT_EQ(error(EvaluateBlockScaledDot(mx, a, b, {seven, seven}, 0)), "ok");
  EXPECT_EQ(error(EvaluateBlockScaledDot(fma, a, b, {two, third}, 0)).find("block scale a"), std::string::npos);
}

}  // namespace
}  // namespace fpconform
