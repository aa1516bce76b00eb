// The argument checks of the dot, sum and matmul evaluations (evaluate.h), shared by the generic
// engine (evaluate.cc) and the fast paths (fast_eval.cc), so that both answer a bad call with the
// same InvalidArgument message.
#ifndef FPCONFORM_ACCUMULATION_EVAL_CHECKS_H_
#define FPCONFORM_ACCUMULATION_EVAL_CHECKS_H_

#include <cstddef>

#include "absl/status/status.h"
#include "accumulation/strings_internal.h"

namespace fpconform::accumulation_internal {

// The longest dot or sum evaluated (2^30 terms).
inline constexpr size_t kMaxTerms = size_t{1} << 30;

// A dot of a and b: equal lengths, at most kMaxTerms.
inline absl::Status CheckDotArgs(size_t a_size, size_t b_size) {
  if (a_size != b_size) {
    return absl::InvalidArgumentError(Cat("dot: a has ", a_size, " elements, b has ", b_size));
  }
  if (a_size > kMaxTerms) return absl::InvalidArgumentError("dot: too long");
  return absl::OkStatus();
}

// A sum of x: at most kMaxTerms.
inline absl::Status CheckSumArgs(size_t x_size) {
  if (x_size > kMaxTerms) return absl::InvalidArgumentError("sum: too long");
  return absl::OkStatus();
}

// D (m x n) = C + A (m x k) * B (k x n) on `threads` threads: sizes >= 0, threads >= 1, a, b and
// d of their sizes, c and bounds empty or m x n (the error names the first check that fails, in
// that order).
inline absl::Status CheckMatmulArgs(int m, int n, int k, size_t a_size, size_t b_size,
                                    size_t c_size, size_t d_size, size_t bounds_size,
                                    int threads = 1) {
  if (m < 0 || n < 0 || k < 0) return absl::InvalidArgumentError("matmul: negative size");
  if (threads < 1) return absl::InvalidArgumentError("matmul: threads must be >= 1");
  const size_t mk = size_t(m) * k, kn = size_t(k) * n, mn = size_t(m) * n;
  if (a_size != mk || b_size != kn || (c_size != 0 && c_size != mn) || d_size != mn ||
      (bounds_size != 0 && bounds_size != mn)) {
    return absl::InvalidArgumentError(Cat("matmul: sizes do not match m=", m, " n=", n,
                                          " k=", k));
  }
  return absl::OkStatus();
}

}  // namespace fpconform::accumulation_internal

#endif  // FPCONFORM_ACCUMULATION_EVAL_CHECKS_H_
