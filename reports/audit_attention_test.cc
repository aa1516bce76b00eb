// The attention audit's aggregate gate (audit.h AuditResult::Aggregate) and EmulateAttention end
// to end: a model's emulation lies in its enclosure and audits identical with the gate passing;
// outputs at the far end of every element's enclosure (each within its bound, the worst case the
// limits must admit) pass the gate; a wrong output (V's columns permuted) fails it with figures
// equal to a direct binary64 computation; the figures do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/ops.h"
#include "gtest/gtest.h"
#include "reports/audit.h"
#include "reports/audit_test_util.h"

namespace fpconform::reports {
namespace {

const std::string kModels = FPCONFORM_ATTENTION_MODELS_SOURCE_DIR;
constexpr char kFa2[] = "flash-attention2-cuda-bf16";

Tensor Random(std::vector<int64_t> shape, double spread, uint64_t stream) {
  return RandomTensor(BFloat16(), std::move(shape),
                      DeriveSeed(TestSeed(27, "audit_attention_test"), {stream}), 0, spread);
}

AuditOptions Options(int threads) {
  AuditOptions o;
  o.platforms = {kFa2};
  o.attention_models_dir = kModels;
  o.threads = threads;
  return o;
}

Tensor FromValues(const std::vector<double>& v, const std::vector<int64_t>& shape) {
  Tensor t = *MakeTensor("bfloat16", shape);
  for (int64_t i = 0; i < t.size(); ++i) t.SetBits(i, DoubleToBits(BFloat16(), v[static_cast<size_t>(i)]));
  t.source = "constructed";
  return t;
}

class AuditAttentionTest : public ::testing::Test {
 protected:
  // 2 heads, 96 queries, 160 keys (more than two of FA2's 64-key blocks), D 32, causal.
  Tensor q_ = Random({2, 96, 32}, 1, 1), k_ = Random({2, 160, 32}, 1, 2), v_ = Random({2, 160, 16}, 1, 3);
  AttentionAuditInput In(const Tensor* out) const {
    AttentionAuditInput in;
    in.q = &q_;
    in.k = &k_;
    in.v = &v_;
    in.out = out;
    in.causal = true;
    return in;
  }
};

TEST_F(AuditAttentionTest, EmulationInsideItsEnclosureAndIdentical) {
  absl::StatusOr<AttentionEmulation> e = EmulateAttention(In(nullptr), kFa2, kModels, 2);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->shape, (std::vector<int64_t>{2, 96, 16}));
  Tensor out = *MakeTensor(e->format->name, e->shape);
  for (size_t i = 0; i < e->bits.size(); ++i) {
    const double y = ToDouble(*e->format, e->bits[i]);
    ASSERT_TRUE(e->lo[i] <= y && y <= e->hi[i]) << i << ": " << e->lo[i] << " " << y << " " << e->hi[i];
    out.SetBits(static_cast<int64_t>(i), e->bits[i]);
  }
  out.source = "emulated";
  absl::StatusOr<AuditResult> r = AuditAttention(In(&out), Options(2));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->counts[static_cast<int>(AuditClass::kIdentical)], out.size());
  EXPECT_EQ(r->verdict, AuditVerdict::kPass);
  ASSERT_TRUE(r->aggregate.run);
  EXPECT_TRUE(r->aggregate.pass);
  EXPECT_EQ(r->aggregate.elements, out.size());
  // The output is the emulation: the figures differ only as |out - exact| (exact, rounded up) and
  // emulated - fl64(exact) do, by ~2^-53 |exact| in errors ~2^-9 |exact|.
  EXPECT_NEAR(r->aggregate.rel_l2, r->aggregate.emulated_rel_l2, 1e-9 * r->aggregate.rel_l2);
  EXPECT_LE(r->aggregate.rel_l2, r->aggregate.rel_l2_limit);
  EXPECT_GE(r->aggregate.correlation, r->aggregate.correlation_limit);
  EXPECT_GT(r->aggregate.correlation_limit, 0.99);
}

TEST_F(AuditAttentionTest, EnclosureEndsPassTheGate) {
  absl::StatusOr<AttentionEmulation> e = EmulateAttention(In(nullptr), kFa2, kModels, 2);
  ASSERT_TRUE(e.ok()) << e.status();
  absl::StatusOr<std::vector<uint64_t>> exact = ExactAttention(In(nullptr), Float32(), 2);
  ASSERT_TRUE(exact.ok()) << exact.status();
  std::vector<double> edge(e->bits.size());
  for (size_t i = 0; i < edge.size(); ++i) {
    const double x = ToDouble(Float32(), (*exact)[i]);
    edge[i] = std::fabs(e->hi[i] - x) >= std::fabs(e->lo[i] - x) ? e->hi[i] : e->lo[i];
  }
  const Tensor out = FromValues(edge, e->shape);
  absl::StatusOr<AuditResult> r = AuditAttention(In(&out), Options(2));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->counts[static_cast<int>(AuditClass::kUnexplained)], 0);
  EXPECT_TRUE(r->aggregate.pass) << r->aggregate.why;
  EXPECT_GT(r->aggregate.rel_l2, 4 * r->aggregate.emulated_rel_l2);  // Far from typical (7x), yet sound.
}

TEST_F(AuditAttentionTest, WrongOutputFailsWithDirectFigures) {
  absl::StatusOr<std::vector<uint64_t>> exact = ExactAttention(In(nullptr), Float64(), 2);
  ASSERT_TRUE(exact.ok()) << exact.status();
  const std::vector<int64_t> shape = {2, 96, 16};
  const size_t n = exact->size();
  std::vector<double> x(n), y(n);
  for (size_t i = 0; i < n; ++i) x[i] = ToDouble(Float64(), (*exact)[i]);
  // V's columns in the wrong order: column c of each row holds the exact value of column 15 - c.
  for (size_t i = 0; i < n; ++i) y[i] = x[i - i % 16 + (15 - i % 16)];
  const Tensor out = FromValues(y, shape);
  for (size_t i = 0; i < n; ++i) y[i] = ToDouble(BFloat16(), out.Bits(static_cast<int64_t>(i)));
  absl::StatusOr<AuditResult> r = AuditAttention(In(&out), Options(1));
  ASSERT_TRUE(r.ok()) << r.status();
  const AuditResult::Aggregate& g = r->aggregate;
  EXPECT_EQ(r->verdict, AuditVerdict::kFail);
  EXPECT_FALSE(g.pass);
  EXPECT_NE(g.why.find("relative L2 error"), std::string::npos) << g.why;
  // The same figures computed directly (two-pass, binary64; exact values rounded to binary64).
  double mx = 0, my = 0, d2 = 0, x2 = 0, sxx = 0, syy = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) {
    mx += x[i] / static_cast<double>(n);
    my += y[i] / static_cast<double>(n);
    d2 += (y[i] - x[i]) * (y[i] - x[i]);
    x2 += x[i] * x[i];
  }
  for (size_t i = 0; i < n; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  EXPECT_NEAR(g.rel_l2, std::sqrt(d2 / x2), 1e-12 * std::sqrt(d2 / x2));
  EXPECT_NEAR(g.correlation, sxy / std::sqrt(sxx * syy), 1e-12);
  EXPECT_NEAR(g.sigma, std::sqrt(sxx), 1e-12 * std::sqrt(sxx));
  EXPECT_LT(g.correlation, g.correlation_limit);
  // Not the thread count: the same doubles with 3 threads.
  absl::StatusOr<AuditResult> r3 = AuditAttention(In(&out), Options(3));
  ASSERT_TRUE(r3.ok()) << r3.status();
  EXPECT_EQ(r3->aggregate.rel_l2, g.rel_l2);
  EXPECT_EQ(r3->aggregate.rel_l2_limit, g.rel_l2_limit);
  EXPECT_EQ(r3->aggregate.correlation, g.correlation);
  EXPECT_EQ(r3->aggregate.emulated_correlation, g.emulated_correlation);
  EXPECT_EQ(r3->aggregate.why, g.why);
}

TEST_F(AuditAttentionTest, EmulateAttentionErrors) {
  absl::StatusOr<AttentionEmulation> e = EmulateAttention(In(nullptr), "no-such-model", kModels);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("no attention model 'no-such-model'"), std::string::npos);
  EXPECT_NE(e.status().message().find(kFa2), std::string::npos);  // The valid names listed.
  const Tensor k_bad = Random({2, 160, 8}, 1, 4);
  AttentionAuditInput in = In(nullptr);
  in.k = &k_bad;
  e = EmulateAttention(in, kFa2, kModels);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("D of Q"), std::string::npos) << e.status();
}

}  // namespace
}  // namespace fpconform::reports
