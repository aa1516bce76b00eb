// Shared checks of the tensor-file fuzz harnesses (tensor_file_npy_fuzzer.cc,
// tensor_file_safetensors_fuzzer.cc, raw_fuzzer.cc): a parsed tensor written back and parsed again
// must be the same tensor.
#ifndef FPCONFORM_CASES_TENSOR_FUZZ_UTIL_H_
#define FPCONFORM_CASES_TENSOR_FUZZ_UTIL_H_

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cases/tensor_file.h"

namespace fpconform::fuzz {

[[noreturn]] inline void Fail(std::string_view what, const Tensor& t) {
  std::fprintf(stderr, "tensor fuzz: %.*s (dtype %s, %zu bytes)\n", static_cast<int>(what.size()),
               what.data(), t.dtype.c_str(), t.data.size());
  std::abort();
}

inline void ExpectSame(const Tensor& a, const Tensor& b, std::string_view what) {
  if (a.dtype != b.dtype || a.format != b.format || a.element_bytes != b.element_bytes ||
      a.shape != b.shape || a.data != b.data) {
    Fail(what, a);
  }
}

// Invariants of every tensor a reader returns, then the .npy and .safetensors round trips.
inline void CheckRoundTrips(const Tensor& t) {
  if (TensorDtypeBytes(t.dtype) != t.element_bytes) Fail("element_bytes disagrees with dtype", t);
  if (static_cast<uint64_t>(t.size()) * static_cast<uint64_t>(t.element_bytes) != t.data.size()) {
    Fail("data size is not product(shape) x element size", t);
  }
  const std::string npy = NpyBytes(t);
  absl::StatusOr<Tensor> back = ParseNpy(npy, "roundtrip.npy", {.dtype = t.dtype});
  if (!back.ok())
    Fail(std::string("NpyBytes output does not parse: ") + std::string(back.status().message()), t);
  ExpectSame(t, *back, ".npy round trip changed the tensor");
  if (NpyBytes(*back) != npy) Fail("NpyBytes is not stable", t);
  absl::StatusOr<std::string> st = SafetensorsBytes({{"t", &t}}, {{"k", "v"}});
  if (st.ok()) {
    absl::StatusOr<Tensor> sback = ParseSafetensors(*st, "roundtrip.safetensors", "t");
    if (!sback.ok()) {
      Fail(std::string("SafetensorsBytes output does not parse: ") +
               std::string(sback.status().message()),
           t);
    }
    ExpectSame(t, *sback, ".safetensors round trip changed the tensor");
  }
  (void)NarrowestExactFloat(t);
  if (t.size() > 0) (void)t.Bits(t.size() - 1);
}

}  // namespace fpconform::fuzz

#endif  // FPCONFORM_CASES_TENSOR_FUZZ_UTIL_H_
