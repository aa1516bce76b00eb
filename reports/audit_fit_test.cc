// The audit's fit (audit.h AuditResult::fit, AUDIT.md "Fit"): outputs made by a split-K model that
// is not a preset are fitted from the presets' families; integer data that every order sums
// exactly gives a fit that says it is not unique; --platform auto leaves the fit out when a preset
// reproduces every element.
#include <bit>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "accumulation/evaluate.h"
#include "accumulation/model.h"
#include "accumulation/reveal_outputs.h"
#include "base/testing/temp_dir.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/ops.h"
#include "gtest/gtest.h"
#include "reports/audit.h"
#include "reports/audit_test_util.h"

namespace fpconform::reports {
namespace {

const std::string kModels = FPCONFORM_MODELS_SOURCE_DIR;

// bfloat16 tensor of N(0, 1) values (integers in [-4, 4] when `integers`).
Tensor RandomBf16(std::vector<int64_t> shape, PinnedRng& rng, bool integers) {
  Tensor t = *MakeTensor("bfloat16", shape);
  for (int64_t i = 0; i < t.size(); ++i) {
    const double v = integers ? static_cast<double>(rng.Below(9)) - 4.0 : rng.Normal();
    t.SetBits(i, Convert(Float64(), BFloat16(), std::bit_cast<uint64_t>(v), OpEnv{}).bits);
  }
  t.source = "random";
  return t;
}

// The audit input of out = a @ b.
MatmulAuditInput Input(const Tensor& a, const Tensor& b, const Tensor& out) {
  MatmulAuditInput in;
  in.a = &a;
  in.b = &b;
  in.out = &out;
  return in;
}

AuditOptions Options() {
  AuditOptions o;
  o.platforms = {"auto"};
  o.models_dir = kModels;
  o.recommend = false;
  o.max_listed = 0;
  o.threads = 2;
  return o;
}

// A split the presets do not have: 5 slices of whole 32-deep tiles, added last slice first, on
// the s1688 datapath.
Model UnknownSplitK() {
  Model m = *LoadModelFile(kModels + "/nvidia-h100-bf16-cublas-s1688-splitk3.toml");
  m.chain.slices = 5;
  m.chain.slice_multiple = 32;
  m.chain.order = SplitOrder::kReverse;
  return m;
}

// The unknown split: the fit finds a model that reproduces every element, where no preset does,
// and its model file reproduces them too.
TEST(AuditFit, FitsAnUnknownSplitK) {
  PinnedRng rng(TestSeed(29, "audit_fit_test"));
  const Model hidden = UnknownSplitK();
  const Tensor a = RandomBf16({12, 1000}, rng, false), b = RandomBf16({1000, 10}, rng, false);
  const Tensor out = EmulateMatmul(hidden, a, b);
  const MatmulAuditInput in = Input(a, b, out);
  absl::StatusOr<AuditResult> r = AuditMatmul(in, Options());
  ASSERT_TRUE(r.ok()) << r.status();
  const AuditResult::FitResult& f = r->fit;
  ASSERT_TRUE(f.run) << f.skipped;
  EXPECT_EQ(f.checked, 120);
  EXPECT_EQ(f.reproduced, 120) << AuditFitText(*r);
  EXPECT_LT(f.base_reproduced, 120);
  // The s1688 datapath (both of its presets share it; the base is the one with more identical
  // elements).
  EXPECT_EQ(f.base.rfind("nvidia-h100-bf16-cublas-s1688-splitk", 0), 0u) << AuditFitText(*r);
  EXPECT_NE(f.change.find("order reverse"), std::string::npos) << f.change;
  EXPECT_NE(AuditFitText(*r).find("reproduces 120 of 120 elements"), std::string::npos)
      << AuditFitText(*r);
  // The model file is the fitted model: the audit against it finds every element identical.
  const TempDir tmp("audit_fit_test_models");
  const std::string dir = tmp.path();
  {
    std::ofstream file(dir + "/" + f.model_name + ".toml");
    file << f.model_text;
  }
  AuditOptions o = Options();
  o.platforms = {f.model_name};
  o.models_dir = dir;
  absl::StatusOr<AuditResult> again = AuditMatmul(in, o);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->counts[static_cast<int>(AuditClass::kIdentical)], 120);
  EXPECT_FALSE(again->fit.run);  // Not auto: no fit unless asked.
}

// Per position: rows 0..7 from the unknown split above, rows 8..11 from the wgmma preset (another
// kernel for the edge tiles); the fit reports both groups with their rows and columns.
TEST(AuditFit, GroupsOutputPositionsByModel) {
  PinnedRng rng(TestSeed(32, "audit_fit_test"));
  const Model hidden = UnknownSplitK();
  const Model edge = *LoadModelFile(kModels + "/nvidia-h100-bf16.toml");
  const Tensor a = RandomBf16({12, 1000}, rng, false), b = RandomBf16({1000, 10}, rng, false);
  const Tensor top = EmulateMatmul(hidden, a, b), bottom = EmulateMatmul(edge, a, b);
  Tensor out = top;
  for (int64_t e = 80; e < 120; ++e) out.SetBits(e, bottom.Bits(e));
  const MatmulAuditInput in = Input(a, b, out);
  absl::StatusOr<AuditResult> r = AuditMatmul(in, Options());
  ASSERT_TRUE(r.ok()) << r.status();
  const AuditResult::FitResult& f = r->fit;
  ASSERT_TRUE(f.run) << f.skipped;
  const std::string text = AuditFitText(*r);
  // Bottom elements that the split model gives too (the two orders agree there by chance) belong
  // to group 0.
  int64_t both = 0;
  for (int64_t e = 80; e < 120; ++e) both += top.Bits(e) == bottom.Bits(e);
  ASSERT_EQ(f.groups.size(), 2u) << text;
  EXPECT_EQ(f.groups[0].reproduced, 80 + both) << text;
  EXPECT_EQ(f.groups[0].of, 120);
  EXPECT_EQ(f.groups[0].where.rfind("rows 0..", 0), 0u) << text;
  EXPECT_NE(f.groups[0].change.find("order reverse"), std::string::npos) << text;
  EXPECT_EQ(f.groups[1].reproduced, 40 - both) << text;
  EXPECT_EQ(f.groups[1].of, 40 - both);
  EXPECT_EQ(f.groups[1].where.rfind("rows 8..", 0), 0u) << text;
  EXPECT_EQ(f.unreproduced, 0);
  EXPECT_NE(text.find("group 1: "), std::string::npos) << text;
}

// audit sum: float32 rows summed in 7 slices of whole 16-term tiles, last slice first (no
// preset), are fitted exactly around the float32 sum presets.
TEST(AuditFit, FitsASplitSum) {
  PinnedRng rng(TestSeed(31, "audit_fit_test"));
  Model hidden = *LoadModelFile(kModels + "/cpu-f32-seq.toml");
  hidden.chain = Model::Chain{};
  hidden.chain.kind = ChainKind::kSplitK;
  hidden.chain.slices = 7;
  hidden.chain.slice_multiple = 16;
  hidden.chain.order = SplitOrder::kReverse;
  const int rows = 24, k = 700;
  Tensor x = *MakeTensor("float32", {rows, k});
  for (int64_t i = 0; i < x.size(); ++i) {
    const uint64_t v = std::bit_cast<uint64_t>(rng.Normal());
    x.SetBits(i, Convert(Float64(), Float32(), v, OpEnv{}).bits);
  }
  Tensor out = *MakeTensor("float32", {rows});
  EmulateLastAxisSums(hidden, x, out);
  x.source = "random";
  out.source = "emulated";
  SumAuditInput in;
  in.x = &x;
  in.out = &out;
  absl::StatusOr<AuditResult> r = AuditSum(in, Options());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->fit.run) << r->fit.skipped;
  EXPECT_EQ(r->fit.reproduced, rows) << AuditFitText(*r);
  EXPECT_LT(r->fit.base_reproduced, rows);
  EXPECT_NE(r->fit.change.find("order reverse"), std::string::npos) << AuditFitText(*r);
  EXPECT_NE(r->fit.model_text.find("Fitted by fpconform audit sum"), std::string::npos);
}

// A real device: the H200's torch.mm(out_dtype=float32) outputs on the bf16 probes at K = 256
// (conformance/data/reveal/h200-mm_bf16_k256/, cuBLAS s1688 + splitKreduce), audited with the
// presets written from them removed from the catalog: the fit finds what `reveal` found (two
// slices, groups of 8, 25 fraction bits) from the outputs alone.
TEST(AuditFit, FitsTheRecordedH200SplitK) {
  const std::string data = FPCONFORM_REVEAL_DATA_DIR "/h200-mm_bf16_k256";
  absl::StatusOr<ProbeSet> p = MakeProbes({"matmul", 256, "bfloat16"});
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<Tensor> out = ReadTensor(data + "/out_torch_mm_out_dtype_float32.npy", {});
  ASSERT_TRUE(out.ok()) << out.status();
  const TempDir tmp("audit_fit_test_h200_models");
  const std::string dir = tmp.path();
  for (const auto& e : std::filesystem::directory_iterator(kModels)) {
    const std::string name = e.path().filename().string();
    if (name.find("s1688-splitk") != std::string::npos) continue;
    std::filesystem::copy_file(e.path(), dir + "/" + name);
  }
  const MatmulAuditInput in = Input(p->a, p->b, *out);
  AuditOptions o = Options();
  o.models_dir = dir;
  absl::StatusOr<AuditResult> r = AuditMatmul(in, o);
  ASSERT_TRUE(r.ok()) << r.status();
  const AuditResult::FitResult& f = r->fit;
  ASSERT_TRUE(f.run) << f.skipped;
  const std::string text = AuditFitText(*r);
  EXPECT_EQ(f.reproduced, f.checked) << text;
  EXPECT_LT(f.base_reproduced, f.checked) << text;
  absl::StatusOr<Model> m = ParseModel(f.model_text, f.model_name + ".toml");
  ASSERT_TRUE(m.ok()) << m.status() << "\n" << f.model_text;
  EXPECT_EQ(m->chain.kind, ChainKind::kSplitK) << text;
  EXPECT_EQ(m->chain.slices, 2) << text;
  EXPECT_EQ(m->adder.group, 8) << text;
  EXPECT_EQ(m->adder.fraction_bits, 25) << text;
}

// Small integers: every order sums them exactly, so the presets reproduce every element (no fit
// under auto), and a fit asked for says which candidates tie.
TEST(AuditFit, ExactSumsTieAndAutoSkipsTheFit) {
  PinnedRng rng(TestSeed(30, "audit_fit_test"));
  const Tensor a = RandomBf16({4, 256}, rng, true), b = RandomBf16({256, 4}, rng, true);
  const Model h100 = *LoadModelFile(kModels + "/nvidia-h100-bf16.toml");
  const Tensor out = EmulateMatmul(h100, a, b);
  const MatmulAuditInput in = Input(a, b, out);
  absl::StatusOr<AuditResult> r = AuditMatmul(in, Options());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->fit.run);
  AuditOptions o = Options();
  o.fit = AuditOptions::Fit::kOn;
  r = AuditMatmul(in, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->fit.run);
  EXPECT_EQ(r->fit.reproduced, 16);
  EXPECT_FALSE(r->fit.ties.empty());
  EXPECT_NE(AuditFitText(*r).find("not unique"), std::string::npos) << AuditFitText(*r);
  // --no-fit.
  o.fit = AuditOptions::Fit::kOff;
  r = AuditMatmul(in, o);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->fit.run);
}

}  // namespace
}  // namespace fpconform::reports
