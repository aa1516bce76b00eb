// Tests of the attention models (attention_model.h): the presets load; the per-element enclosure
// holds the model's own emulated value and an independent blocked (FlashAttention-style online
// softmax, rescaling every key_block keys, in host float32 arithmetic; split-KV presets split and
// combined as FlashAttention-2's combine kernel) evaluation of each preset, O and the LSE (the
// LSE also inside the oracle's enclosure, and not wider than 10^-3), on seeded N(0, 1) problems,
// large logits, causal rows, finfo.min and -Inf additive masks, whole masked splits, and
// values with a large common offset (no bound is only allowed for large logits, where a model's
// own error can reach half a weight); the enclosure is not vacuous (a wrong output, the scale applied twice,
// falls outside); bad model files fail with file:line: key. FPCONFORM_SEED overrides the seed.
#include "composite/attention_model.h"
#include "composite/attention_test_support.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/ops.h"
#include "oracles/certified_double.h"

namespace fpconform::composite {
namespace {


// A blocked online-softmax evaluation of model m for row i over keys [j0, j1) (float32 host
// arithmetic, formats.p rounding by formats' Convert), the exponential by libm's expf; returns
// the part normalized by 1 / l and its LSE m + logf(l) in float32 (the scores scaled; -inf and
// zeros where no key is attended), the FlashAttention-2 way.
std::vector<float> FlashPart(const AttentionModel& m, const AttentionProblem& p, int64_t i, int64_t j0, int64_t j1,
                             float* lse) {
  const int64_t block = m.key_block > 0 ? m.key_block : p.s_k;
  const double scale = p.scale.has_value() ? *p.scale : 1.0 / std::sqrt(static_cast<double>(p.d));
  const float sf = static_cast<float>(scale);
  float mx = -INFINITY, l = 0;
  std::vector<float> acc(static_cast<size_t>(p.d_v), 0.0f);
  for (int64_t b0 = j0; b0 < j1; b0 += block) {
    const int64_t b1 = std::min(j1, b0 + block);
    std::vector<float> s;
    std::vector<int64_t> keys;
    for (int64_t j = b0; j < b1; ++j) {
      if (p.causal && j > i) continue;
      if (!p.additive_mask.empty() && p.additive_mask[static_cast<size_t>(i * p.s_k + j)] == -INFINITY) continue;
      float dot = 0;  // Reverse order: another order than the model's emulation.
      for (int64_t c = p.d - 1; c >= 0; --c) {
        float q = static_cast<float>(p.q[static_cast<size_t>(i * p.d + c)]);
        float kv = static_cast<float>(p.k[static_cast<size_t>(j * p.d + c)]);
        if (m.scale == ScalePlacement::kFoldQ) q = static_cast<float>(Round(*m.scaled, q * sf));
        if (m.scale == ScalePlacement::kFoldQKSqrt) {
          const float r = static_cast<float>(std::sqrt(scale));
          q = static_cast<float>(Round(*m.scaled, q * r));
          kv = static_cast<float>(Round(*m.scaled, kv * r));
        }
        dot += q * kv;
      }
      if (m.scale != ScalePlacement::kFoldQ && m.scale != ScalePlacement::kFoldQKSqrt) dot *= sf;
      if (!p.additive_mask.empty()) dot += static_cast<float>(p.additive_mask[static_cast<size_t>(i * p.s_k + j)]);
      s.push_back(dot);
      keys.push_back(j);
    }
    if (keys.empty()) continue;
    RescaleToBlockMax(s, mx, l, acc);
    for (size_t x = 0; x < keys.size(); ++x) {
      const float w = std::exp(s[x] - mx);
      const float pr = static_cast<float>(Round(*m.p_format, w));
      l += m.row_sum_rounded ? pr : w;
      for (int64_t c = 0; c < p.d_v; ++c) acc[static_cast<size_t>(c)] += pr * static_cast<float>(p.v[static_cast<size_t>(keys[x] * p.d_v + c)]);
    }
  }
  *lse = l == 0 ? -INFINITY : mx + std::log(l);
  if (l == 0) return acc;
  for (float& a : acc) a = m.normalize == Normalize::kDivide ? a / l : a * (1.0f / l);
  return acc;
}

// Model m's row i: one part, or (num_splits > 1) the key range in num_splits chunks of whole key
// blocks, combined as FlashAttention-2's combine kernel does (float32, expf, logf); *lse_out:
// the row's LSE.
std::vector<double> Flash(const AttentionModel& m, const AttentionProblem& p, int64_t i, double* lse_out = nullptr) {
  std::vector<float> o;
  float lse = 0;
  if (m.num_splits <= 1) {
    o = FlashPart(m, p, i, 0, p.s_k, &lse);
  } else {
    const int64_t kb = m.key_block, per = ((p.s_k + kb - 1) / kb + m.num_splits - 1) / m.num_splits;
    std::vector<std::vector<float>> parts;
    std::vector<float> lses;
    for (int64_t sp = 0; sp < m.num_splits; ++sp) {
      float ls = 0;
      parts.push_back(FlashPart(m, p, i, std::min(p.s_k, sp * per * kb), std::min(p.s_k, (sp + 1) * per * kb), &ls));
      lses.push_back(ls);
    }
    float lmax = -INFINITY, sum = 0;
    for (float x : lses) lmax = std::max(lmax, x);
    if (lmax == -INFINITY) lmax = 0;
    for (float x : lses) sum += std::exp(x - lmax);
    lse = sum == 0 ? INFINITY : std::log(sum) + lmax;
    o.assign(static_cast<size_t>(p.d_v), 0.0f);
    for (size_t k = 0; k < parts.size(); ++k) {
      const float w = std::exp(lses[k] - lse);
      for (size_t c = 0; c < o.size(); ++c) o[c] += w * parts[k][c];
    }
  }
  if (lse_out != nullptr) *lse_out = static_cast<double>(lse);
  std::vector<double> out;
  for (float a : o) out.push_back(Round(*m.output, a));
  return out;
}

TEST(AttentionModelTest, PresetsLoad) {
  absl::StatusOr<std::vector<AttentionModel>> ms = LoadAttentionModels(FPCONFORM_ATTENTION_MODELS_DIR);
  ASSERT_TRUE(ms.ok()) << ms.status();
  ASSERT_GE(ms->size(), 5u);
  int splits = 0;
  for (const AttentionModel& m : *ms) {
    EXPECT_FALSE(m.provenance.empty()) << m.name;
    if (m.num_splits > 1) {
      ++splits;
      EXPECT_GT(m.key_block, 0) << m.name;
    }
  }
  EXPECT_GE(splits, 1);
}

TEST(AttentionModelTest, HostFloatRoundingIsTheSoftConversion) {
  PinnedRng rng(TestSeed(41, "attention_model_test float"));
  for (int i = 0; i < 100000; ++i) {
    uint64_t b = rng.Next();
    double x;
    std::memcpy(&x, &b, 8);
    if (!std::isfinite(x)) continue;
    const double host = static_cast<double>(static_cast<float>(x));
    ASSERT_EQ(host, Round(Float32(), x)) << std::hexfloat << x;
  }
}

TEST(AttentionModelTest, EnclosureHoldsImplementations) {
  absl::StatusOr<std::vector<AttentionModel>> ms = LoadAttentionModels(FPCONFORM_ATTENTION_MODELS_DIR);
  ASSERT_TRUE(ms.ok()) << ms.status();
  const uint64_t seed = TestSeed(2027, "attention_model_test");
  int checked = 0, excluded = 0, unbounded = 0, lse_checked = 0, lse_excluded = 0;
  for (const AttentionModel& m : *ms) {
    for (int variant = 0; variant < 7; ++variant) {
      PinnedRng rng(seed + static_cast<uint64_t>(variant) * 7919 + m.name.size());
      const int64_t s_q = 6, s_k = variant >= 5 ? 300 : 40, d = 32, dv = 4;
      const double qs = variant == 1 ? 12.0 : variant == 6 ? 4.0 : 1.0;
      std::vector<double> q, k, v, add;
      for (int64_t x = 0; x < s_q * d; ++x) q.push_back(Round(*m.input, qs * rng.Normal()));
      for (int64_t x = 0; x < s_k * d; ++x) k.push_back(Round(*m.input, rng.Normal()));
      for (int64_t x = 0; x < s_k * dv; ++x) v.push_back(Round(*m.input, rng.Normal() + (variant == 4 ? 100.0 : 0.0)));
      AttentionProblem p{.s_q = s_q, .s_k = s_k, .d = d, .d_v = dv, .q = q, .k = k, .v = v};
      if (variant == 2) p.causal = true;
      if (variant == 3) {
        for (int64_t x = 0; x < s_q * s_k; ++x) {
          const uint64_t r = rng.Below(5);
          add.push_back(r == 0 ? -INFINITY : r == 1 ? -3.4028234663852886e38 : Round(*m.input, rng.Normal()));
        }
        for (int64_t j = 0; j < s_k; ++j) add[static_cast<size_t>(j)] = j == 3 ? 0.0 : -INFINITY;
        p.additive_mask = add;
      }
      if (variant == 6) {  // Whole key blocks (splits) masked: row 0 keys [128, 256), row 1 [0, 200).
        add.assign(static_cast<size_t>(s_q * s_k), 0.0);
        for (int64_t j = 128; j < 256; ++j) add[static_cast<size_t>(j)] = -INFINITY;
        for (int64_t j = 0; j < 200; ++j) add[static_cast<size_t>(s_k + j)] = -INFINITY;
        p.additive_mask = add;
      }
      // The LSE (models with formats.lse): the oracle's enclosures, then the model's.
      const size_t rows = static_cast<size_t>(s_q);
      std::vector<ExactEnclosure> lse_exact(rows);
      std::vector<uint64_t> lse_bits(rows);
      std::vector<double> lse_lo(rows), lse_hi(rows);
      AttentionLseRows lse{lse_exact, lse_bits, lse_lo, lse_hi};
      if (m.lse_format != nullptr) {
        AttentionOutputs ol;
        ol.lse_format = m.lse_format;
        ol.lse_enclosure = lse_exact;
        ASSERT_TRUE(AttentionRows(p, 0, s_q, ol, nullptr).ok());
      }
      absl::StatusOr<EmulatedRows> emulated =
          EmulateWithOracle(m, p, 2, m.lse_format != nullptr ? &lse : nullptr);
      ASSERT_TRUE(emulated.ok()) << emulated.status();
      const EmulatedRows& out = *emulated;
      // Whether the bound [lo, hi] is there and holds the model's own result (`bits` in f) and
      // FlashAttention-2's. No bound: only where the model's own error can reach half the
      // weights (large logits through a bfloat16 scale folding: torch-math-sdpa-cpu-bf16).
      auto bound_holds = [&](double lo, double hi, const FormatSpec& f, uint64_t bits, double flash) {
        if (std::isnan(lo)) {
          EXPECT_TRUE(variant == 1 || variant == 6) << "no bound on ordinary inputs";
          ++unbounded;
          return false;
        }
        double em;
        certified::DecodeToDouble(f, bits, false, &em);
        EXPECT_LE(lo, em);
        EXPECT_GE(hi, em);
        EXPECT_LE(lo, flash) << "flash " << flash;
        EXPECT_GE(hi, flash) << "flash " << flash;
        return true;
      };
      for (int64_t i = 0; i < s_q && m.lse_format != nullptr; ++i) {
        SCOPED_TRACE(m.name + " LSE variant " + std::to_string(variant) + " row " + std::to_string(i));
        const size_t r = static_cast<size_t>(i);
        double fl_lse = 0;
        (void)Flash(m, p, i, &fl_lse);
        if (!bound_holds(lse_lo[r], lse_hi[r], *m.lse_format, lse_bits[r], fl_lse)) continue;
        EXPECT_LE(lse_lo[r], lse_exact[r].lo);
        EXPECT_GE(lse_hi[r], lse_exact[r].hi);
        ++lse_checked;
        // Not vacuous: the LSE with the scale applied twice lies outside where it differs by
        // more than 10^-3, and the bound is below 10^-3 relative here.
        EXPECT_LT(lse_hi[r] - lse_lo[r], 1e-3 * std::max(1.0, std::fabs(lse_exact[r].nearest)));
        std::vector<ExactEnclosure> l2(1);
        AttentionOutputs o2;
        o2.lse_format = m.lse_format;
        o2.lse_enclosure = l2;
        ASSERT_TRUE(AttentionRows(ScaledTwice(p), i, i + 1, o2, nullptr).ok());
        if (std::fabs(l2[0].nearest - lse_exact[r].nearest) > 1e-3) {
          EXPECT_TRUE(l2[0].nearest < lse_lo[r] || l2[0].nearest > lse_hi[r]) << "scale twice " << l2[0].nearest;
          ++lse_excluded;
        }
      }
      for (int64_t i = 0; i < s_q; ++i) {
        const std::vector<double> fl = Flash(m, p, i);
        for (int64_t c = 0; c < dv; ++c) {
          const size_t e = static_cast<size_t>(i * dv + c);
          SCOPED_TRACE(m.name + " variant " + std::to_string(variant) + " element " + std::to_string(e));
          if (!bound_holds(out.lo[e], out.hi[e], *m.output, out.bits[e], fl[static_cast<size_t>(c)])) continue;
          ++checked;
          // Not vacuous: the exact value with the scale applied twice lies outside where it
          // differs by more than 5% of P|V| from the exact value (15% for a scale folded into a
          // bfloat16 or float16 input).
          if (variant == 0 && i == 0) {
            std::vector<ExactEnclosure> e2(static_cast<size_t>(dv));
            AttentionOutputs o2;
            o2.enclosure = e2;
            ASSERT_TRUE(AttentionRows(ScaledTwice(p), 0, 1, o2, nullptr).ok());
            const double wrong = e2[static_cast<size_t>(c)].nearest;
            // Where the model rounds the scaled Q (and K) into the input format, its own error
            // reaches a few percent of P|V| (bfloat16: 2^-8 relative per score): 15% there.
            const bool folds = m.scale == ScalePlacement::kFoldQ || m.scale == ScalePlacement::kFoldQKSqrt;
            const double margin = (folds && Precision(*m.scaled) < 24 ? 0.15 : 0.05) * out.pv[e].hi;
            if (std::fabs(wrong - out.exact[e].nearest) > margin) {
              EXPECT_TRUE(wrong < out.lo[e] || wrong > out.hi[e]) << "scale twice " << wrong;
              ++excluded;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
  EXPECT_GT(excluded, 0);
  EXPECT_LT(unbounded, checked / 10);
  EXPECT_GT(lse_checked, 0);
  EXPECT_GT(lse_excluded, 0);
}

// The LSE of a fully masked row is the model's convention (FlashAttention-2: +Inf, where the
// exact value is log 0 = -Inf); an ordinary row next to it is bounded; a model without
// formats.lse refuses LSE spans.
TEST(AttentionModelTest, LseConventions) {
  absl::StatusOr<std::vector<AttentionModel>> ms = LoadAttentionModels(FPCONFORM_ATTENTION_MODELS_DIR);
  ASSERT_TRUE(ms.ok()) << ms.status();
  int with_lse = 0;
  for (const AttentionModel& m : *ms) {
    SCOPED_TRACE(m.name);
    std::vector<double> q = {1, 0, 0, 1}, k = {1, 0, 0, 1, 1, 1}, v = {1, 2, 3};
    std::vector<uint8_t> keep = {0, 0, 0, 1, 1, 0};
    AttentionProblem p{.s_q = 2, .s_k = 3, .d = 2, .d_v = 1, .q = q, .k = k, .v = v, .keep_mask = keep};
    std::vector<ExactEnclosure> exact(2), pv(2), lse_exact(2);
    AttentionOutputs o;
    o.enclosure = exact;
    o.lse_format = &Float32();
    o.lse_enclosure = lse_exact;
    ASSERT_TRUE(AttentionRows(p, 0, 2, o, nullptr).ok());
    EXPECT_EQ(lse_exact[0].nearest, -INFINITY);
    AttentionProblem pa = p;
    std::vector<double> va = v;
    pa.v = va;
    AttentionOutputs oa;
    oa.enclosure = pv;
    ASSERT_TRUE(AttentionRows(pa, 0, 2, oa, nullptr).ok());
    std::vector<uint64_t> bits(2), lse_bits(2);
    std::vector<double> lo(2), hi(2), lse_lo(2), lse_hi(2);
    AttentionLseRows lse{lse_exact, lse_bits, lse_lo, lse_hi};
    const absl::Status s = EmulateAttentionRows(m, p, 0, 2, pv, exact, bits, lo, hi, 1, &lse);
    if (m.lse_format == nullptr) {
      EXPECT_FALSE(s.ok());
      continue;
    }
    ASSERT_TRUE(s.ok()) << s;
    ++with_lse;
    double fm;
    certified::DecodeToDouble(*m.lse_format, lse_bits[0], false, &fm);
    if (std::isnan(m.fully_masked_lse)) {
      EXPECT_TRUE(std::isnan(fm));
    } else {
      EXPECT_EQ(fm, m.fully_masked_lse);
      EXPECT_EQ(lse_lo[0], m.fully_masked_lse);
      EXPECT_EQ(lse_hi[0], m.fully_masked_lse);
    }
    // Row 1 attends keys 0 and 1 with scores 0 and 1/sqrt(2): LSE = log(1 + e^(1/sqrt 2)).
    const double want = std::log(1 + std::exp(1 / std::sqrt(2.0)));
    EXPECT_LE(lse_lo[1], want);
    EXPECT_GE(lse_hi[1], want);
    EXPECT_LT(lse_hi[1] - lse_lo[1], 1e-5);
  }
  EXPECT_GE(with_lse, 2);
}

TEST(AttentionModelTest, BadFilesNameTheKey) {
  const std::string good =
      "name = \"x\"\ndescription = \"d\"\nkind = \"attention\"\nscale = \"separate\"\nexp_ulp = 1\n"
      "row_sum = \"unrounded\"\nnormalize = \"divide\"\nkey_block = 0\nfully_masked = \"nan\"\n"
      "[formats]\ninput = \"float32\"\ncompute = \"float32\"\np = \"float32\"\noutput = \"float32\"\n"
      "[provenance]\n\"formats.input\" = \"a\"\n\"formats.compute\" = \"a\"\n\"formats.p\" = \"a\"\n"
      "\"formats.output\" = \"a\"\nscale = \"a\"\nexp_ulp = \"a\"\nrow_sum = \"a\"\nnormalize = \"a\"\n"
      "key_block = \"a\"\nfully_masked = \"a\"\n";
  EXPECT_TRUE(ParseAttentionModel(good, "m.toml").ok()) << ParseAttentionModel(good, "m.toml").status();
  std::string bad = good;
  bad.replace(bad.find("\"separate\""), 10, "\"sideways\"");
  const absl::StatusOr<AttentionModel> r = ParseAttentionModel(bad, "m.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("m.toml:4: scale"), std::string::npos) << r.status();
  bad = good;
  bad.replace(bad.find("compute = \"float32\""), 19, "compute = \"bfloat16\"");
  EXPECT_FALSE(ParseAttentionModel(bad, "m.toml").ok());
  // The LSE: formats.lse needs log_ulp, fully_masked_lse and their provenance; they need it.
  std::string with_lse = good;
  with_lse.replace(with_lse.find("output = \"float32\"\n"), 19, "output = \"float32\"\nlse = \"float32\"\n");
  with_lse.replace(with_lse.find("[formats]"), 9,
                   "log_ulp = 4\nfully_masked_lse = \"inf\"\n[formats]");
  with_lse += "\"formats.lse\" = \"a\"\nlog_ulp = \"a\"\nfully_masked_lse = \"a\"\n";
  const absl::StatusOr<AttentionModel> l = ParseAttentionModel(with_lse, "m.toml");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->lse_format, &Float32());
  EXPECT_EQ(l->log_ulp, 4);
  EXPECT_EQ(l->fully_masked_lse, INFINITY);
  bad = with_lse;
  bad.replace(bad.find("log_ulp = 4\n"), 12, "");
  EXPECT_NE(std::string(ParseAttentionModel(bad, "m.toml").status().message()).find("log_ulp"), std::string::npos);
  bad = good;
  bad.replace(bad.find("[formats]"), 9, "log_ulp = 4\n[formats]");
  EXPECT_NE(std::string(ParseAttentionModel(bad, "m.toml").status().message()).find("needs formats.lse"),
            std::string::npos);
  bad = with_lse;
  bad.replace(bad.find("\"divide\""), 8, "\"exp_lse\"");
  EXPECT_FALSE(ParseAttentionModel(bad, "m.toml").ok());
  // num_splits: needs key_block > 0 and its provenance.
  std::string split = good;
  split.replace(split.find("key_block = 0"), 13, "key_block = 64\nnum_splits = 3");
  split += "num_splits = \"a\"\n";
  const absl::StatusOr<AttentionModel> sp = ParseAttentionModel(split, "m.toml");
  ASSERT_TRUE(sp.ok()) << sp.status();
  EXPECT_EQ(sp->num_splits, 3);
  bad = split;
  bad.replace(bad.find("key_block = 64"), 14, "key_block = 0");
  EXPECT_NE(std::string(ParseAttentionModel(bad, "m.toml").status().message()).find("num_splits"), std::string::npos);
  bad = split;
  bad.replace(bad.find("num_splits = \"a\"\n"), 17, "");
  EXPECT_FALSE(ParseAttentionModel(bad, "m.toml").ok());
}

}  // namespace
}  // namespace fpconform::composite
