// Test support for the audit tests (audit_test.cc, audit_fit_test.cc, gtest_audit_test.cc): the
// output a model itself gives for a matmul, to audit against that model or others.
#ifndef FPCONFORM_REPORTS_AUDIT_TEST_UTIL_H_
#define FPCONFORM_REPORTS_AUDIT_TEST_UTIL_H_

#include <cstdint>
#include <vector>

#include "accumulation/evaluate.h"
#include "accumulation/model.h"
#include "cases/tensor_file.h"
#include "gtest/gtest.h"

namespace fpconform {

// out = A @ B under `model` (the engine; both operands row-major), as a tensor of the model's
// output format whose source is `source`.
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
