// Test support for the audit tests (audit_test.cc, audit_fit_test.cc, gtest_audit_test.cc,
// audit_composite_test.cc, audit_golden_test.cc): the output a model itself gives for a matmul,
// to audit against that model or others; random tensors from a pinned stream; a composite
// model's function.
#ifndef FPCONFORM_REPORTS_AUDIT_TEST_UTIL_H_
#define FPCONFORM_REPORTS_AUDIT_TEST_UTIL_H_

#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "accumulation/evaluate.h"
#include "accumulation/model.h"
#include "cases/pinned_random.h"
#include "cases/tensor_file.h"
#include "composite/model.h"
#include "formats/ops.h"
#include "gtest/gtest.h"

namespace fpconform {

// A tensor of format f and `shape` whose element i is mean + spread * (the i-th N(0, 1) draw of
// PinnedRng(stream)) rounded into f (RNE); its source is "random".
inline Tensor RandomTensor(const FormatSpec& f, std::vector<int64_t> shape, uint64_t stream,
                           double mean = 0, double spread = 1) {
  Tensor t = *MakeTensor(f.name, shape);
  PinnedRng rng(stream);
  for (int64_t i = 0; i < t.size(); ++i) t.SetBits(i, DoubleToBits(f, mean + spread * rng.Normal()));
  t.source = "random";
  return t;
}

// out = fn's emulation of every element of x, in x's shape and dtype (the elementwise functions
// of the presets return their input's format); its source is "emulated".
inline Tensor EmulateElementwise(const composite::CompositeFunction& fn, const Tensor& x) {
  Tensor out = *MakeTensor(x.dtype, x.shape);
  for (int64_t i = 0; i < x.size(); ++i) out.SetBits(i, fn.Emulate(x.Bits(i)));
  out.source = "emulated";
  return out;
}

// The function `fn` of the composite model `model` in `dir` (the directory's models loaded once
// per test program); a test that names a missing one stops with a message.
inline const composite::CompositeFunction& CompositeFunctionOf(const std::string& dir,
                                                               const std::string& model,
                                                               const std::string& fn) {
  static std::map<std::string, std::vector<composite::CompositeModel>> loaded;
  auto it = loaded.find(dir);
  if (it == loaded.end()) {
    auto models = composite::LoadCompositeModels(dir);
    if (!models.ok()) {
      ADD_FAILURE() << models.status();
      std::abort();
    }
    it = loaded.emplace(dir, *std::move(models)).first;
  }
  for (const composite::CompositeModel& m : it->second) {
    if (m.name == model && m.Find(fn) != nullptr) return *m.Find(fn);
  }
  ADD_FAILURE() << dir << ": no composite model " << model << " with " << fn;
  std::abort();
}

// out = A @ B under `model` (the engine; both operands row-major), as a tensor of the model's
// output format whose source is `source`.
// Fills `out` with `model`'s sums over x's last axis: element r is the sum of x's r-th run of
// x.size() / out.size() elements (C order), whatever out's shape.
inline void EmulateLastAxisSums(const Model& model, const Tensor& x, Tensor& out) {
  const int64_t len = x.size() / out.size();
  std::vector<uint64_t> v(static_cast<size_t>(len));
  for (int64_t r = 0; r < out.size(); ++r) {
    x.CopyBits(r * len, v);
    const absl::StatusOr<EvalResult> s = EvaluateSum(model, v, 0);
    ASSERT_TRUE(s.ok()) << s.status();
    out.SetBits(r, s->bits);
  }
}

inline Tensor EmulateMatmul(const Model& model, const Tensor& a, const Tensor& b,
                            const char* source = "emulated") {
  const int m = static_cast<int>(a.shape[0]), k = static_cast<int>(a.shape[1]);
  const int n = static_cast<int>(b.shape[1]);
  std::vector<uint64_t> av(static_cast<size_t>(a.size())), bv(static_cast<size_t>(b.size()));
  a.CopyBits(0, av);
  b.CopyBits(0, bv);
  std::vector<uint64_t> d(static_cast<size_t>(m) * n);
  EXPECT_TRUE(
      EvaluateMatmul(model, m, n, k, av, Layout::kRowMajor, bv, Layout::kRowMajor, {}, d).ok());
  Tensor out = *MakeTensor(model.OutputFormat().name, {m, n});
  for (size_t i = 0; i < d.size(); ++i) out.SetBits(static_cast<int64_t>(i), d[i]);
  out.source = source;
  return out;
}

}  // namespace fpconform

#endif  // FPCONFORM_REPORTS_AUDIT_TEST_UTIL_H_
