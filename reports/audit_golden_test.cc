// Audit JSON documents, pinned (issue 26: "an audit's JSON byte-identical before and after"):
// one audit per op family (matmul with two platforms and the tolerance rule, sum, cast,
// elementwise, axis, attention with its LSE), each with planted wrong elements so that the
// classes, the diagnoses, the listed elements and the summary all appear in the document. The
// inputs come from pinned streams with fixed seeds (not FPCONFORM_SEED: the bytes are the point)
// and every figure is exact or correctly rounded, so the documents must be the same on every
// machine, compiler, instruction set and thread count (each audit runs on 1, 2 and 3 threads).
//
// A difference is a change of what an audit reports (results, or provenance: the documents hold
// the model files' content hashes, so editing a preset, even a comment, changes them): review
// it, then regenerate with
//   FPCONFORM_UPDATE_GOLDEN=1 ./audit_golden_test
// which rewrites reports/testdata/audit_golden/*.json in the source tree.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "accumulation/model_catalog.h"
#include "base/testing/golden_file.h"
#include "cases/pinned_random.h"
#include "composite/model.h"
#include "formats/ops.h"
#include "gtest/gtest.h"
#include "reports/audit.h"
#include "reports/audit_test_util.h"

namespace fpconform::reports {
namespace {

const std::string kModels = FPCONFORM_MODELS_SOURCE_DIR;
const std::string kComposite = FPCONFORM_COMPOSITE_MODELS_SOURCE_DIR;
const std::string kAttention = FPCONFORM_ATTENTION_MODELS_SOURCE_DIR;
const std::string kGoldenDir = std::string(FPCONFORM_REPORTS_SOURCE_DIR) + "/testdata/audit_golden";

Tensor Random(const FormatSpec& f, std::vector<int64_t> shape, double mean, double spread,
              uint64_t key) {
  return RandomTensor(f, std::move(shape), DeriveSeed(20261207, {key}), mean, spread);
}

AuditOptions Options(std::vector<std::string> platforms, int threads) {
  AuditOptions o;
  o.platforms = std::move(platforms);
  o.models_dir = kModels;
  o.composite_models_dir = kComposite;
  o.attention_models_dir = kAttention;
  o.recommend = false;
  o.tolerance_samples = 16;
  o.threads = threads;
  return o;
}

// run(threads)'s document on 1, 2 and 3 threads, each against the golden copy `name`.
void ExpectGolden(const std::string& name,
                  const std::function<absl::StatusOr<AuditResult>(int threads)>& run) {
  const std::string path = kGoldenDir + "/" + name + ".json";
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(testing::Message() << name << ", " << threads << " thread(s)");
    const absl::StatusOr<AuditResult> r = run(threads);
    ASSERT_TRUE(r.ok()) << r.status();
    const std::string got = AuditToJson(*r);
    // The document names no checkout path: the same bytes in every clone.
    for (const std::string& dir : {kModels, kComposite, kAttention}) {
      EXPECT_EQ(got.find(dir), std::string::npos) << dir;
    }
    ExpectGoldenFile(path, got, threads == 1);
  }
}

TEST(AuditGoldenTest, MatmulTwoPlatformsWithTheToleranceRule) {
  ModelCatalog catalog(kModels);
  const Tensor a = Random(BFloat16(), {24, 96}, 0, 1, 1), b = Random(BFloat16(), {96, 16}, 0, 1, 2);
  Tensor out = EmulateMatmul(*catalog.Find("trainium2-bf16"), a, b);
  out.SetBits(5, out.Bits(5) ^ 0x80000000u);                                          // sign
  out.SetBits(40, Mul(Float32(), out.Bits(40), 0x40000000u, OpEnv{}).bits);           // doubled
  out.SetBits(77, out.Bits(77) + 3);                                                  // 3 ulp
  MatmulAuditInput in;
  in.a = &a;
  in.b = &b;
  in.out = &out;
  ExpectGolden("matmul", [&](int threads) {
    AuditOptions o = Options({"nvidia-h100-bf16", "trainium2-bf16"}, threads);
    o.recommend = true;
    return AuditMatmul(in, o);
  });
}

TEST(AuditGoldenTest, SumWithAHalvedElement) {
  ModelCatalog catalog(kModels);
  const Model& m = *catalog.Find("numpy-sum-f32");
  const Tensor x = Random(Float32(), {3, 4, 300}, 0, 1, 3);
  Tensor out = *MakeTensor("float32", {3, 4});
  out.source = "emulated";
  EmulateLastAxisSums(m, x, out);
  out.SetBits(7, Mul(Float32(), out.Bits(7), 0x3F000000u, OpEnv{}).bits);
  SumAuditInput in;
  in.x = &x;
  in.out = &out;
  ExpectGolden("sum", [&](int threads) { return AuditSum(in, Options({"numpy-sum-f32"}, threads)); });
}

TEST(AuditGoldenTest, CastWithOneElementRoundedTheWrongWay) {
  const Tensor x = Random(Float32(), {256}, 0, 100, 4);
  const FormatSpec& to = Float8E4M3FN();
  Tensor out = *MakeTensor(to.name, {256});
  out.source = "converted";
  OpEnv sat;
  sat.saturate = true;
  OpEnv rtz = sat;
  rtz.rounding = Rounding::kTowardZero;
  for (int64_t i = 0; i < x.size(); ++i) {
    out.SetBits(i, Convert(Float32(), to, x.Bits(i), i % 50 == 9 ? rtz : sat).bits);
  }
  CastAuditInput in;
  in.x = &x;
  in.out = &out;
  in.to = &to;
  in.env = sat;
  ExpectGolden("cast", [&](int threads) { return AuditCast(in, Options({}, threads)); });
}

const composite::CompositeFunction& Function(const std::string& model, const std::string& fn) {
  return CompositeFunctionOf(kComposite, model, fn);
}

TEST(AuditGoldenTest, ElementwiseGeluWithWrongElements) {
  const composite::CompositeFunction& gelu = Function("torch-cuda-f32", "gelu");
  const Tensor x = Random(Float32(), {8, 16}, 0, 3, 5);
  Tensor out = EmulateElementwise(gelu, x);
  out.SetBits(3, out.Bits(3) ^ 0x80000000u);
  out.SetBits(50, out.Bits(50) + 40);
  ElementwiseAuditInput in;
  in.x = &x;
  in.out = &out;
  in.fn = "gelu";
  ExpectGolden("elementwise",
               [&](int threads) { return AuditElementwise(in, Options({"torch-cuda-f32"}, threads)); });
}

TEST(AuditGoldenTest, AxisSoftmaxWithAWrongRow) {
  const composite::CompositeFunction& softmax = Function("torch-cuda-rows-f32", "softmax");
  const int64_t rows = 4, n = 40;
  const Tensor x = Random(Float32(), {rows, n}, 0, 2, 6);
  Tensor out = *MakeTensor("float32", {rows, n});
  out.source = "emulated";
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<uint64_t> xv(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) xv[static_cast<size_t>(i)] = x.Bits(r * n + i);
    composite::CompositeFunction::Row row;
    row.x = xv;
    ASSERT_TRUE(softmax.EmulateRow(row, y).ok());
    for (int64_t i = 0; i < n; ++i) out.SetBits(r * n + i, y[static_cast<size_t>(i)]);
  }
  // Row 2 doubled: a softmax whose row no longer sums to 1.
  for (int64_t i = 0; i < n; ++i) {
    out.SetBits(2 * n + i, Mul(Float32(), out.Bits(2 * n + i), 0x40000000u, OpEnv{}).bits);
  }
  AxisAuditInput in;
  in.op = "softmax";
  in.x = &x;
  in.out = &out;
  ExpectGolden("axis",
               [&](int threads) { return AuditAxis(in, Options({"torch-cuda-rows-f32"}, threads)); });
}

TEST(AuditGoldenTest, AttentionWithAWrongElement) {
  const Tensor q = Random(BFloat16(), {2, 24, 16}, 0, 1, 7);
  const Tensor k = Random(BFloat16(), {2, 80, 16}, 0, 1, 8);
  const Tensor v = Random(BFloat16(), {2, 80, 8}, 0, 1, 9);
  AttentionAuditInput in;
  in.q = &q;
  in.k = &k;
  in.v = &v;
  in.causal = true;
  const char* const model = "flash-attention2-cuda-bf16";
  Tensor out;
  ExpectGolden("attention", [&](int threads) -> absl::StatusOr<AuditResult> {
    // The emulation on the same number of threads: its bits must not depend on it either.
    absl::StatusOr<AttentionEmulation> e = EmulateAttention(in, model, kAttention, threads);
    if (!e.ok()) return e.status();
    out = *MakeTensor(e->format->name, e->shape);
    out.source = "emulated";
    for (size_t i = 0; i < e->bits.size(); ++i) out.SetBits(static_cast<int64_t>(i), e->bits[i]);
    out.SetBits(100, out.Bits(100) ^ 0x8000u);
    in.out = &out;
    return AuditAttention(in, Options({model}, threads));
  });
}

}  // namespace
}  // namespace fpconform::reports
