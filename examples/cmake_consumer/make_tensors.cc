// Stands in for a kernel: out = A @ B (16 x 256 @ 256 x 8, bfloat16 in, float32 out) computed
// as the trainium2-bf16 model says Trainium2 computes it, and a wrong variant whose row 3 lost
// its second K tile (K 128..255), dumped as .npy into the directory given.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "accumulation/evaluate.h"
#include "accumulation/model_catalog.h"
#include "cases/tensor_file.h"
#include "formats/format_spec.h"
#include "formats/ops.h"

namespace {

constexpr int kM = 16, kK = 256, kN = 8;

uint64_t BFloat16Bits(double v) {
  uint64_t d;
  std::memcpy(&d, &v, sizeof d);
  return fpconform::Convert(fpconform::Float64(), fpconform::BFloat16(), d, fpconform::OpEnv{})
      .bits;
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "make_tensors: %s\n", what.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return Fail("usage: make_tensors DIR");
  const std::string dir = argv[1];
  // The installed presets (fpconform::fpconform defines FPCONFORM_DEFAULT_MODELS_DIR).
  const fpconform::ModelCatalog catalog(FPCONFORM_DEFAULT_MODELS_DIR);
  const absl::StatusOr<fpconform::Model>& model = catalog.Find("trainium2-bf16");
  if (!model.ok()) return Fail(std::string(model.status().message()));

  std::vector<uint64_t> a(kM * kK), b(kK * kN);
  for (int i = 0; i < kM * kK; ++i) a[i] = BFloat16Bits(((i * 37) % 41 - 20) / 16.0);
  for (int i = 0; i < kK * kN; ++i) b[i] = BFloat16Bits(((i * 29) % 31 - 15) / 8.0);
  std::vector<uint64_t> out(kM * kN), wrong(kM * kN);
  absl::Status s = fpconform::EvaluateMatmul(*model, kM, kN, kK, a, fpconform::Layout::kRowMajor, b,
                                             fpconform::Layout::kRowMajor, {}, out);
  if (!s.ok()) return Fail(std::string(s.message()));
  std::vector<uint64_t> a_dropped = a;
  for (int k = 128; k < kK; ++k) a_dropped[3 * kK + k] = 0;  // Row 3: the second K tile lost.
  s = fpconform::EvaluateMatmul(*model, kM, kN, kK, a_dropped, fpconform::Layout::kRowMajor, b,
                                fpconform::Layout::kRowMajor, {}, wrong);
  if (!s.ok()) return Fail(std::string(s.message()));
  for (int i = 0; i < kM * kN; ++i) {
    if (i / kN != 3) wrong[i] = out[i];
  }

  auto write = [&](const std::string& name, const std::string& dtype, std::vector<int64_t> shape,
                   const std::vector<uint64_t>& bits) {
    absl::StatusOr<fpconform::Tensor> t = fpconform::MakeTensor(dtype, std::move(shape));
    if (!t.ok()) return t.status();
    for (size_t i = 0; i < bits.size(); ++i) t->SetBits(static_cast<int64_t>(i), bits[i]);
    return fpconform::WriteNpy(*t, dir + "/" + name);
  };
  const std::string out_dtype(model->output.format->name);
  for (const absl::Status& w :
       {write("a.npy", "bfloat16", {kM, kK}, a), write("b.npy", "bfloat16", {kK, kN}, b),
        write("out.npy", out_dtype, {kM, kN}, out),
        write("out_wrong.npy", out_dtype, {kM, kN}, wrong)}) {
    if (!w.ok()) return Fail(std::string(w.message()));
  }
  std::printf("make_tensors: %s/{a,b,out,out_wrong}.npy (%d x %d @ %d x %d on %s)\n", dir.c_str(),
              kM, kK, kK, kN, model->name.c_str());
  return 0;
}
