// Tests of matmul.qk / matmul.pv (attention_model.h, "The matmuls"): the enclosure of every preset
// that names accumulation models holds an implementation whose two matmuls are those models
// (EvaluateDot: QK^T per key from +0, P V per key block of key_block keys with the rescaled
// accumulator entering the chain, or added after a chain from +0), for every member of an
// envelope; the A100 presets the GPU presets name are the loosest of the NVIDIA tensor-core
// presets of their input format; bad matmul keys fail with file:line: key.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "accumulation/dot_bound.h"
#include "accumulation/evaluate.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "composite/attention_model.h"
#include "composite/attention_test_support.h"
#include "formats/ops.h"
#include "oracles/certified_double.h"

namespace fpconform::composite {
namespace {

uint64_t Bits(const FormatSpec& f, double x) {
  return Convert(Float64(), f, std::bit_cast<uint64_t>(x), OpEnv{}).bits;
}
double Value(const FormatSpec& f, uint64_t bits) {
  return std::bit_cast<double>(Convert(f, Float64(), bits, OpEnv{}).bits);
}

// Row i of model m (one part, no splits) with its matmuls under qk and pv (EvaluateDot), the
// online softmax in host float32 (libm's expf), P rounded to formats.p; `after`: each key block's
// P V from +0, added to the rescaled accumulator in float32 (else the accumulator is the chain's c).
std::vector<double> FlashMatmul(const AttentionModel& m, const Model& qk, const Model& pv, bool after,
                                const AttentionProblem& p, int64_t i) {
  const int64_t block = m.key_block > 0 ? m.key_block : p.s_k;
  const double scale = p.scale.has_value() ? *p.scale : 1.0 / std::sqrt(static_cast<double>(p.d));
  const float sf = static_cast<float>(scale);
  const float r = static_cast<float>(std::sqrt(scale));
  float mx = -INFINITY, l = 0;
  std::vector<float> acc(static_cast<size_t>(p.d_v), 0.0f);
  std::vector<uint64_t> qb(static_cast<size_t>(p.d)), kb(static_cast<size_t>(p.d));
  for (int64_t c = 0; c < p.d; ++c) {
    double q = p.q[static_cast<size_t>(i * p.d + c)];
    if (m.scale == ScalePlacement::kFoldQ) q = Round(*m.scaled, static_cast<float>(q) * sf);
    if (m.scale == ScalePlacement::kFoldQKSqrt) q = Round(*m.scaled, static_cast<float>(q) * r);
    qb[static_cast<size_t>(c)] = Bits(*qk.inputs.a, q);
  }
  for (int64_t b0 = 0; b0 < p.s_k; b0 += block) {
    const int64_t b1 = std::min(p.s_k, b0 + block);
    std::vector<float> s(static_cast<size_t>(block), -INFINITY);
    bool any = false;
    for (int64_t j = b0; j < b1; ++j) {
      if (p.causal && j > i) continue;
      if (!p.additive_mask.empty() && p.additive_mask[static_cast<size_t>(i * p.s_k + j)] == -INFINITY) continue;
      for (int64_t c = 0; c < p.d; ++c) {
        double kv = p.k[static_cast<size_t>(j * p.d + c)];
        if (m.scale == ScalePlacement::kFoldQKSqrt) kv = Round(*m.scaled, static_cast<float>(kv) * r);
        kb[static_cast<size_t>(c)] = Bits(qk.InputB(), kv);
      }
      float dot = static_cast<float>(Value(qk.OutputFormat(), EvaluateDot(qk, qb, kb, 0)->bits));
      if (m.scale != ScalePlacement::kFoldQ && m.scale != ScalePlacement::kFoldQKSqrt) dot *= sf;
      if (!p.additive_mask.empty()) dot += static_cast<float>(p.additive_mask[static_cast<size_t>(i * p.s_k + j)]);
      s[static_cast<size_t>(j - b0)] = dot;
      any = true;
    }
    if (!any) continue;
    RescaleToBlockMax(s, mx, l, acc);
    // The block's P (zero for masked and out-of-range keys) and V columns: a dot of `block`.
    std::vector<uint64_t> pb(static_cast<size_t>(block), 0), vb(static_cast<size_t>(block), 0);
    for (int64_t x = 0; x < block; ++x) {
      const float sc = s[static_cast<size_t>(x)];
      if (sc == -INFINITY) continue;
      const float w = std::exp(sc - mx);
      const double pr = Round(*m.p_format, w);
      l += m.row_sum_rounded ? static_cast<float>(pr) : w;
      pb[static_cast<size_t>(x)] = Bits(*pv.inputs.a, pr);
    }
    for (int64_t c = 0; c < p.d_v; ++c) {
      for (int64_t x = 0; x < block; ++x) {
        const int64_t j = b0 + x;
        vb[static_cast<size_t>(x)] = Bits(pv.InputB(), j < p.s_k ? p.v[static_cast<size_t>(j * p.d_v + c)] : 0.0);
      }
      float& a = acc[static_cast<size_t>(c)];
      const FormatSpec& cf = pv.FinalAccumulatorFormat();
      if (after) {
        a += static_cast<float>(Value(pv.OutputFormat(), EvaluateDot(pv, pb, vb, 0)->bits));
      } else {
        a = static_cast<float>(Value(pv.OutputFormat(), EvaluateDot(pv, pb, vb, Bits(cf, a))->bits));
      }
    }
  }
  std::vector<double> out;
  for (float a : acc) {
    const float y = l == 0 ? a : m.normalize == Normalize::kDivide ? a / l : a * (1.0f / l);
    out.push_back(Round(*m.output, y));
  }
  return out;
}

TEST(AttentionMatmulTest, EnclosureHoldsTheMatmulModels) {
  absl::StatusOr<std::vector<AttentionModel>> ms = LoadAttentionModels(FPCONFORM_ATTENTION_MODELS_DIR);
  ASSERT_TRUE(ms.ok()) << ms.status();
  const uint64_t seed = TestSeed(2028, "attention_matmul_test");
  int checked = 0, models = 0, unbounded = 0;
  for (const AttentionModel& m : *ms) {
    if (m.qk == nullptr || m.pv == nullptr || m.num_splits > 1) continue;
    ++models;
    for (int variant = 0; variant < 5; ++variant) {
      PinnedRng rng(seed + static_cast<uint64_t>(variant) * 7919 + m.name.size());
      const int64_t s_q = 4, s_k = variant == 4 ? 300 : 70, d = variant == 1 ? 128 : 32, dv = 3;
      std::vector<double> q, k, v, add;
      for (int64_t x = 0; x < s_q * d; ++x) q.push_back(Round(*m.input, rng.Normal()));
      for (int64_t x = 0; x < s_k * d; ++x) k.push_back(Round(*m.input, rng.Normal()));
      // Variant 3: all-positive V with a large offset (every rounding of P V in one direction).
      for (int64_t x = 0; x < s_k * dv; ++x) {
        v.push_back(Round(*m.input, variant == 3 ? 100 + std::fabs(rng.Normal()) : rng.Normal()));
      }
      AttentionProblem p{.s_q = s_q, .s_k = s_k, .d = d, .d_v = dv, .q = q, .k = k, .v = v};
      if (variant == 2) {
        p.causal = true;
        for (int64_t x = 0; x < s_q * s_k; ++x) add.push_back(rng.Below(4) == 0 ? -INFINITY : 0.0);
        add[0] = 0.0;
        p.additive_mask = add;
      }
      absl::StatusOr<EmulatedRows> emulated = EmulateWithOracle(m, p);
      ASSERT_TRUE(emulated.ok()) << emulated.status();
      const EmulatedRows& r = *emulated;
      for (const Model& qk : m.qk->members()) {
        for (const Model& pv : m.pv->members()) {
          for (const bool after : {false, true}) {
            for (int64_t i = 0; i < s_q; ++i) {
              const std::vector<double> y = FlashMatmul(m, qk, pv, after, p, i);
              for (int64_t c = 0; c < dv; ++c) {
                const size_t e = static_cast<size_t>(i * dv + c);
                SCOPED_TRACE(m.name + " qk " + qk.name + " pv " + pv.name + (after ? " after" : " chain") +
                             " variant " + std::to_string(variant) + " element " + std::to_string(e));
                if (!std::isfinite(r.exact[e].nearest)) continue;  // A fully masked row: the convention.
                if (std::isnan(r.lo[e])) {
                  ADD_FAILURE() << "no bound";
                  ++unbounded;
                  continue;
                }
                EXPECT_LE(r.lo[e], y[static_cast<size_t>(c)]);
                EXPECT_GE(r.hi[e], y[static_cast<size_t>(c)]);
                ++checked;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GE(models, 6);
  EXPECT_GT(checked, 1000);
  EXPECT_EQ(unbounded, 0);
}

// The GPU presets name the A100 models where the generation is unknown: their constants are
// componentwise at least those of every other NVIDIA tensor-core preset of the input format that
// FlashAttention-2, the memory-efficient kernel, Triton and cuDNN run on (sm80 and later).
TEST(AttentionMatmulTest, MatmulPresetsAreTheLoosest) {
  const std::string dir = AccumulationModelsDirFor(FPCONFORM_ATTENTION_MODELS_DIR);
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"nvidia-a100-bf16", {"nvidia-h100-bf16", "nvidia-b200-bf16"}},
      {"nvidia-a100-fp16", {"nvidia-h100-fp16"}},
  };
  for (const auto& [loosest, others] : cases) {
    const Model a = *LoadModelFile(dir + "/" + loosest + ".toml");
    for (const std::string& name : others) {
      const Model b = *LoadModelFile(dir + "/" + name + ".toml");
      for (const int64_t n : {1, 8, 16, 32, 64, 100, 128, 256, 512, 2048, 4096, 8192, 32768}) {
        SCOPED_TRACE(loosest + " vs " + name + " n " + std::to_string(n));
        const DotBound x = *ComputeDotBound(a, n), y = *ComputeDotBound(b, n);
        EXPECT_GE(x.rel, y.rel);
        EXPECT_GE(x.rel_c, y.rel_c);
        EXPECT_GE(x.abs, y.abs);
        EXPECT_GE(x.sub_sum, y.sub_sum);
        EXPECT_GE(x.sub_max, y.sub_max);
        EXPECT_GE(x.tiny_a, y.tiny_a);
        EXPECT_GE(x.tiny_b, y.tiny_b);
      }
    }
  }
}

TEST(AttentionMatmulTest, BadMatmulKeysNameTheKey) {
  const std::string base =
      "name = \"x\"\ndescription = \"d\"\nkind = \"attention\"\nscale = \"exponent\"\nexp_ulp = 1\n"
      "row_sum = \"unrounded\"\nnormalize = \"divide\"\nkey_block = 64\nfully_masked = \"nan\"\n"
      "[formats]\ninput = \"bfloat16\"\ncompute = \"float32\"\np = \"bfloat16\"\noutput = \"bfloat16\"\n"
      "[matmul]\nqk = \"QK\"\npv = \"PV\"\n"
      "[provenance]\n\"formats.input\" = \"a\"\n\"formats.compute\" = \"a\"\n\"formats.p\" = \"a\"\n"
      "\"formats.output\" = \"a\"\nscale = \"a\"\nexp_ulp = \"a\"\nrow_sum = \"a\"\nnormalize = \"a\"\n"
      "key_block = \"a\"\nfully_masked = \"a\"\n\"matmul.qk\" = \"a\"\n\"matmul.pv\" = \"a\"\n";
  const std::string dir = AccumulationModelsDirFor(FPCONFORM_ATTENTION_MODELS_DIR);
  auto with = [&](const std::string& qk, const std::string& pv) {
    std::string t = base;
    t.replace(t.find("QK"), 2, qk);
    t.replace(t.find("PV"), 2, pv);
    return ParseAttentionModel(t, "m.toml", dir);
  };
  const absl::StatusOr<AttentionModel> good = with("nvidia-a100-bf16", "trainium2-bf16-envelope");
  ASSERT_TRUE(good.ok()) << good.status();
  ASSERT_NE(good->qk, nullptr);
  EXPECT_EQ(good->qk->name(), "nvidia-a100-bf16");
  EXPECT_EQ(good->pv->members().size(), 2u);
  const auto message = [&](const std::string& qk, const std::string& pv) {
    const absl::StatusOr<AttentionModel> r = with(qk, pv);
    EXPECT_FALSE(r.ok()) << qk << " " << pv;
    return std::string(r.status().message());
  };
  EXPECT_NE(message("no-such-model", "nvidia-a100-bf16").find("m.toml:16: matmul.qk: no accumulation model"),
            std::string::npos);
  EXPECT_NE(message("../models/x", "nvidia-a100-bf16").find("m.toml:16: matmul.qk: must name"), std::string::npos);
  EXPECT_NE(message("nvidia-a100-bf16", "kahan-f32").find("m.toml:17: matmul.pv:"), std::string::npos);
  EXPECT_NE(message("kahan-f32", "nvidia-a100-bf16").find("no proven dot bound"), std::string::npos);
  // fp8 inputs do not hold bfloat16 operands; a float16 model does not either.
  EXPECT_NE(message("nvidia-h100-fp8e4m3", "nvidia-a100-bf16").find("does not hold every bfloat16"), std::string::npos);
  EXPECT_NE(message("nvidia-a100-bf16", "nvidia-a100-fp16").find("matmul.pv"), std::string::npos);
  // A bfloat16-output model writes no float32 scores.
  EXPECT_NE(message("trainium3-bf16-psumbf16", "nvidia-a100-bf16").find("not the compute format"), std::string::npos);
  // The key needs its provenance; unknown keys in [matmul] are refused.
  std::string t = base;
  t.replace(t.find("QK"), 2, "nvidia-a100-bf16");
  t.replace(t.find("PV"), 2, "nvidia-a100-bf16");
  std::string bad = t;
  bad.replace(bad.find("\"matmul.qk\" = \"a\"\n"), 17, "");
  EXPECT_FALSE(ParseAttentionModel(bad, "m.toml", dir).ok());
  bad = t;
  bad.replace(bad.find("[matmul]\n"), 9, "[matmul]\nsum = \"x\"\n");
  EXPECT_NE(std::string(ParseAttentionModel(bad, "m.toml", dir).status().message()).find("matmul.sum"),
            std::string::npos);
  // Without a directory: found beside the file's directory (the source tree here).
  EXPECT_TRUE(ParseAttentionModel(t, std::string(FPCONFORM_ATTENTION_MODELS_DIR) + "/x.toml").ok());
}

}  // namespace
}  // namespace fpconform::composite
