// The GoogleTest helper (gtest_audit.h): a model's own output conforms; a wrong one gives a
// failure whose message carries the audit's evidence (AuditSummaryText); bad input gives an
// error message. AssertionResults are inspected directly: no test here is meant to fail.
#include "reports/gtest_audit.h"

#include <cstring>
#include <string>
#include <vector>

#include "accumulation/evaluate.h"
#include "accumulation/model_catalog.h"
#include "formats/ops.h"
#include "gtest/gtest.h"
#include "reports/audit_test_util.h"

namespace fpconform::gtest {
namespace {

using ::testing::AssertionResult;


// A pinned m x n bfloat16 matrix: small integers over powers of two (no randomness needed).
Tensor Matrix(int m, int n, int salt) {
  Tensor t = *MakeTensor("bfloat16", {m, n});
  for (int i = 0; i < m * n; ++i) {
    const double v = static_cast<double>((i * 7 + salt * 13) % 23 - 11) / (1 << ((i + salt) % 5));
    t.SetBits(i, DoubleToBits(BFloat16(), v));
  }
  t.source = "matrix";
  return t;
}

class GtestAuditTest : public ::testing::Test {
 protected:
  // The platform's own output for a @ b (the engine), in its output format.
  Tensor Emulate(const Tensor& a, const Tensor& b) {
    const absl::StatusOr<Model>& model = catalog_.Find(kPlatform);
    EXPECT_TRUE(model.ok()) << model.status();
    return EmulateMatmul(*model, a, b, "kernel");
  }

  static constexpr const char* kPlatform = "trainium2-bf16";
  ModelCatalog catalog_{FPCONFORM_DEFAULT_MODELS_DIR};
  Tensor a_ = Matrix(8, 160, 1), b_ = Matrix(160, 6, 2);  // K = 160: two K tiles of 128.
};

TEST_F(GtestAuditTest, EmulatedOutputConforms) {
  const Tensor out = Emulate(a_, b_);
  const AssertionResult r = ConformsToPlatform(out, a_, b_, kPlatform);
  EXPECT_TRUE(r) << r.message();
  EXPECT_CONFORMS(out, a_, b_, kPlatform);
  EXPECT_CONFORMS(out, a_, b_, kPlatform, {.strict = true, .tolerance = false, .threads = 2});
  ASSERT_CONFORMS(out, a_, b_, kPlatform, {.tolerance = false});
  EXPECT_NE(std::string(r.message()).find("conforms to trainium2-bf16 (48 elements)"),
            std::string::npos)
      << r.message();
}

TEST_F(GtestAuditTest, WrongOutputFailsWithTheAuditEvidence) {
  Tensor out = Emulate(a_, b_);
  out.SetBits(13, out.Bits(13) ^ 0x80000000u);  // One element's sign flipped.
  const ConformsOptions options{.tolerance = false};
  const AssertionResult r = ConformsToPlatform(out, a_, b_, kPlatform, options);
  ASSERT_FALSE(r);
  const std::string message = r.message();
  EXPECT_NE(message.find("matmul output does not conform to trainium2-bf16: 1 mismatched "
                         "(1 unexplained) of 48 elements"),
            std::string::npos)
      << message;
  // The same evidence as `fpconform audit`: AuditSummaryText of the same audit, in full.
  reports::MatmulAuditInput in;
  in.a = &a_;
  in.b = &b_;
  in.out = &out;
  const absl::StatusOr<reports::AuditResult> audit =
      reports::AuditMatmul(in, internal::MakeAuditOptions(kPlatform, options));
  ASSERT_TRUE(audit.ok()) << audit.status();
  EXPECT_EQ(audit->verdict, reports::AuditVerdict::kFail);
  EXPECT_NE(message.find(reports::AuditSummaryText(*audit)), std::string::npos) << message;
  EXPECT_NE(message.find("sign"), std::string::npos) << message;  // The diagnosis.
}

TEST_F(GtestAuditTest, BadInputIsAnError) {
  const Tensor out = Emulate(a_, b_);
  const Tensor short_b = Matrix(100, 6, 2);  // K 100, not A's 160.
  const AssertionResult r = ConformsToPlatform(out, a_, short_b, kPlatform, {.tolerance = false});
  ASSERT_FALSE(r);
  EXPECT_EQ(std::string(r.message())
                .rfind("fpconform audit error (matmul, platform "
                       "trainium2-bf16): ",
                       0),
            0u)
      << r.message();
  const AssertionResult unknown = ConformsToPlatform(out, a_, b_, "no-such-platform");
  ASSERT_FALSE(unknown);
  EXPECT_NE(std::string(unknown.message()).find("no-such-platform"), std::string::npos)
      << unknown.message();
}

TEST_F(GtestAuditTest, SumConforms) {
  // x (3 x 5) float32 summed along the last axis by numpy-sum-f32: small integers sum exactly.
  Tensor x = *MakeTensor("float32", {3, 5});
  Tensor y = *MakeTensor("float32", {3});
  for (int i = 0; i < 3; ++i) {
    double s = 0;
    for (int j = 0; j < 5; ++j) {
      x.SetBits(i * 5 + j, DoubleToBits(Float32(), i + j));
      s += i + j;
    }
    y.SetBits(i, DoubleToBits(Float32(), s));
  }
  EXPECT_TRUE(SumConformsToPlatform(y, x, -1, "numpy-sum-f32", {.tolerance = false}));
  y.SetBits(1, DoubleToBits(Float32(), 1000));
  EXPECT_FALSE(SumConformsToPlatform(y, x, -1, "numpy-sum-f32", {.tolerance = false}));
}

}  // namespace
}  // namespace fpconform::gtest
