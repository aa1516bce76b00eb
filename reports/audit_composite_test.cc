// The composite audits (audit.h: AuditElementwise, AuditAxis) end to end: a model's own output is
// identical, outputs at the ends of a model's enclosure are within its bound, mutations are
// unexplained with their diagnosis, bad input is an error naming it.
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "composite/model.h"
#include "formats/ops.h"
#include "gtest/gtest.h"
#include "reports/audit.h"
#include "reports/audit_test_util.h"

namespace fpconform::reports {
namespace {

const std::string kComposite = FPCONFORM_COMPOSITE_MODELS_SOURCE_DIR;

// The stream of tensor `key`: DeriveSeed(key, {9}) by default; FPCONFORM_SEED is XORed into the
// key (0 by default), so that each tensor keeps a stream of its own under any seed.
Tensor Random(const FormatSpec& f, std::vector<int64_t> shape, double mean, double spread, uint64_t key) {
  static const uint64_t seed = TestSeed(0, "audit_composite_test");
  return RandomTensor(f, std::move(shape), DeriveSeed(key ^ seed, {9}), mean, spread);
}

AuditOptions Options(std::vector<std::string> platforms) {
  AuditOptions o;
  o.platforms = std::move(platforms);
  o.composite_models_dir = kComposite;
  o.recommend = false;
  o.threads = 2;
  return o;
}

int64_t Count(const AuditResult& r, AuditClass c) { return r.counts[static_cast<int>(c)]; }

const composite::CompositeFunction& Function(const std::string& model, const std::string& fn) {
  return CompositeFunctionOf(kComposite, model, fn);
}

std::string DiagnosisAt(const AuditResult& r, const std::vector<int64_t>& index) {
  for (const AuditElement& e : r.elements) {
    if (e.index == index) return e.diagnosis;
  }
  return "(not listed)";
}

TEST(AuditCompositeTest, ElementwiseOwnOutputEnclosureEndsAndMutations) {
  const composite::CompositeFunction& gelu = Function("torch-cuda-f32", "gelu");
  const Tensor x = Random(Float32(), {40, 25}, 0, 3, 1);
  Tensor out = EmulateElementwise(gelu, x);
  ElementwiseAuditInput in;
  in.x = &x;
  in.out = &out;
  in.fn = "gelu";
  absl::StatusOr<AuditResult> r = AuditElementwise(in, Options({"torch-cuda-f32"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Count(*r, AuditClass::kIdentical), x.size());
  // The enclosure's ends: any conforming implementation could give them.
  for (int64_t i = 0; i < x.size(); i += 2) {
    const composite::Enclosure e = gelu.Enclose(x.Bits(i));
    out.SetBits(i, DoubleToBits(Float32(), i % 4 == 0 ? e.lo : e.hi));
  }
  r = AuditElementwise(in, Options({"torch-cuda-f32"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict, AuditVerdict::kPass) << AuditSummaryText(*r);
  EXPECT_GT(Count(*r, AuditClass::kWithinBound), 0);
  // Mutations, planted at the first two elements with 1 < x < 4, where gelu(x) is far from both
  // -gelu(x) and sigmoid(x) (near 0, a sign flip can lie within the bound).
  std::vector<int64_t> at;
  for (int64_t i = 0; i < x.size() && at.size() < 2; ++i) {
    const double xi = ToDouble(Float32(), x.Bits(i));
    if (xi > 1 && xi < 4) at.push_back(i);
  }
  ASSERT_EQ(at.size(), 2u);
  out.SetBits(at[0], out.Bits(at[0]) ^ SignBit(Float32()));
  const double x1 = ToDouble(Float32(), x.Bits(at[1]));
  out.SetBits(at[1], DoubleToBits(Float32(), 1 / (1 + std::exp(-x1))));
  r = AuditElementwise(in, Options({"torch-cuda-f32"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict, AuditVerdict::kFail);
  EXPECT_EQ(Count(*r, AuditClass::kUnexplained), 2) << AuditSummaryText(*r);
  const std::vector<int64_t> i0 = {at[0] / 25, at[0] % 25}, i1 = {at[1] / 25, at[1] % 25};
  EXPECT_EQ(DiagnosisAt(*r, i0).rfind("sign flipped", 0), 0u) << DiagnosisAt(*r, i0);
  EXPECT_EQ(DiagnosisAt(*r, i1).rfind("equals sigmoid(x)", 0), 0u) << DiagnosisAt(*r, i1);
}

TEST(AuditCompositeTest, ElementwiseErrorsNameTheInput) {
  const Tensor x = Random(Float32(), {8}, 0, 1, 2);
  const Tensor y = Random(Float32(), {9}, 0, 1, 3);
  const Tensor xb = Random(BFloat16(), {8}, 0, 1, 4);
  ElementwiseAuditInput in;
  in.x = &x;
  in.out = &x;
  in.fn = "swish";
  absl::StatusOr<AuditResult> r = AuditElementwise(in, Options({"auto"}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("gelu_tanh"), std::string::npos) << r.status();
  in.fn = "gelu";
  in.out = &y;
  EXPECT_NE(AuditElementwise(in, Options({"auto"})).status().message().find("shape"), std::string::npos);
  in.out = &x;
  EXPECT_NE(AuditElementwise(in, Options({"nope"})).status().message().find("valid: "), std::string::npos);
  in.x = &xb;
  in.out = &xb;
  EXPECT_NE(AuditElementwise(in, Options({"torch-cuda-f32"})).status().message().find("takes float32 inputs"),
            std::string::npos);
}

TEST(AuditCompositeTest, AxisOwnOutputEnclosureEndsAndMutations) {
  const composite::CompositeFunction& rms = Function("torch-cuda-rows-f32", "rmsnorm");
  const int64_t rows = 6, n = 48;
  const Tensor x = Random(Float32(), {rows, n}, 0.5, 2, 5);
  const Tensor w = Random(Float32(), {n}, 1, 0.1, 6);
  Tensor out = *MakeTensor("float32", {rows, n});
  out.source = "emulated";
  std::vector<uint64_t> wv(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) wv[static_cast<size_t>(i)] = w.Bits(i);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<uint64_t> xv(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    std::vector<composite::Enclosure> e(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) xv[static_cast<size_t>(i)] = x.Bits(r * n + i);
    composite::CompositeFunction::Row row;
    row.x = xv;
    row.weight_format = &Float32();
    row.weight = wv;
    row.eps = 1e-6;
    ASSERT_TRUE(rms.EmulateRow(row, y).ok());
    ASSERT_TRUE(rms.EncloseRow(row, e).ok());
    for (int64_t i = 0; i < n; ++i) {
      // Rows 0-2 as emulated, rows 3-5 at the enclosure's ends.
      const composite::Enclosure& ei = e[static_cast<size_t>(i)];
      out.SetBits(r * n + i, r < 3 ? y[static_cast<size_t>(i)] : DoubleToBits(Float32(), i % 2 ? ei.hi : ei.lo));
    }
  }
  AxisAuditInput in;
  in.op = "rmsnorm";
  in.x = &x;
  in.weight = &w;
  in.eps = 1e-6;
  in.out = &out;
  absl::StatusOr<AuditResult> r = AuditAxis(in, Options({"torch-cuda-rows-f32"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict, AuditVerdict::kPass) << AuditSummaryText(*r);
  EXPECT_GE(Count(*r, AuditClass::kIdentical), 3 * n);
  // The weight forgotten in row 1: the diagnosis names it.
  const std::vector<composite::Enclosure> none;
  for (int64_t i = 0; i < n; ++i) {
    const double v = ToDouble(Float32(), out.Bits(n + i)) / ToDouble(Float32(), w.Bits(i));
    out.SetBits(n + i, DoubleToBits(Float32(), v));
  }
  r = AuditAxis(in, Options({"torch-cuda-rows-f32"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict, AuditVerdict::kFail);
  EXPECT_EQ(DiagnosisAt(*r, {1, 0}), "the weight not applied") << AuditSummaryText(*r);
  // Errors.
  in.eps = -1;
  EXPECT_NE(AuditAxis(in, Options({"auto"})).status().message().find("must be finite and > 0"), std::string::npos);
  in.eps = 1e-6;
  in.axis = 3;
  EXPECT_NE(AuditAxis(in, Options({"auto"})).status().message().find("out of range"), std::string::npos);
  in.axis = 0;
  EXPECT_NE(AuditAxis(in, Options({"auto"})).status().message().find("expected [6]"), std::string::npos);
  in.axis = -1;
  in.op = "softmax";
  EXPECT_NE(AuditAxis(in, Options({"auto"})).status().message().find("softmax takes no"), std::string::npos);
  in.op = "l2norm";
  EXPECT_NE(AuditAxis(in, Options({"auto"})).status().message().find("softmax"), std::string::npos);
}

}  // namespace
}  // namespace fpconform::reports
