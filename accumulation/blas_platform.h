// Which accumulation-model preset reproduces numpy's `a @ b` bit for bit, for a shape, a dtype and
// the BLAS numpy calls: the rule that python/fpconform/blas.py's numpy_matmul_platform and
// `fpconform models numpy-matmul` share. Which BLAS a numpy calls is found in Python
// (fpconform.blas.numpy_blas(), from the libraries mapped into the process); this file only
// decides from its description.
//
// The rule (evidence: accumulation/models/SOURCES.md section 4c; checked against the real numpy
// and OpenBLAS by python/tests/test_blas_platforms.py):
// - float32 and float64 only; m or n below 2 is a vector operand (numpy calls gemv or dot, whose
//   order is not modelled);
// - the reference BLAS: numpy-refblas-f32 / -f64 for every other shape;
// - OpenBLAS (scipy-openblas or openblas) with the SkylakeX kernels (core SkylakeX, Cooperlake or
//   SapphireRapids, any case; also chosen on AVX-512 AMD Zen 4), in interface/gemm.c's order:
//   float64 needs n % 8 == 0 (the dgemm kernel's last n % 8 columns use another order);
//   float32 takes the direct sgemm kernel when m*n*k <= 2*350*512 on several threads, or on one
//   when m*n*k < 28*512*512 and (n % 4 == 0 or m*n*k < 8*512*512); then m*n*k <= 1e6 takes the
//   small-matrix kernel; both are numpy-openblas-skylakex-<f32|f64>-small, except float32 with
//   n % 16 in 1..8 (the kernels' last columns use an order not modelled: no preset); larger
//   products take the level-3 driver: numpy-openblas-skylakex-<f32|f64> when level3_thread.c
//   splits the work over several threads (OpenblasLevel3Parallel), -<f32|f64>-1thread when it
//   runs on one (one thread, or a shape it does not split).
// - any other BLAS or OpenBLAS core: no preset.
//
// Errors: InvalidArgument for a negative m, k or n, or threads < 1. Everything else is an answer,
// a preset or none with the reason; the reasons are the texts numpy_matmul_platform has always
// returned (names and cores quoted as Python's repr quotes ASCII text).
//
// Example:
//   BlasInfo blas{.name = "scipy-openblas", .core = "SkylakeX", .threads = 2};
//   absl::StatusOr<MatmulPlatform> p = NumpyMatmulPlatform(256, 1000, 256, "float32", blas);
//   // p->preset == "numpy-openblas-skylakex-f32",
//   // p->reason == "the level-3 driver with several threads"
#ifndef FPCONFORM_ACCUMULATION_BLAS_PLATFORM_H_
#define FPCONFORM_ACCUMULATION_BLAS_PLATFORM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace fpconform {

// The BLAS numpy calls, as fpconform.blas.numpy_blas() describes it.
struct BlasInfo {
  // "scipy-openblas", "openblas", "reference" or anything else (no preset); nullopt when unknown
  // (Python's None: the reason then says "BLAS None").
  std::optional<std::string> name;
  // OpenBLAS's run-time kernel choice (openblas_get_corename), e.g. "SkylakeX"; "" when unknown.
  std::string core;
  // OpenBLAS's thread count (openblas_get_num_threads), >= 1.
  int threads = 1;
};

struct MatmulPlatform {
  std::optional<std::string> preset;  // The model preset, or nullopt: no preset reproduces it.
  std::string reason;                 // Why this preset, or why none.
};

// The preset reproducing numpy's C-contiguous (m, k) @ (k, n) of `dtype` (numpy's dtype name:
// "float32", "float64"; any other name gets no preset) under `blas`. See the file comment.
absl::StatusOr<MatmulPlatform> NumpyMatmulPlatform(int64_t m, int64_t k, int64_t n,
                                                   std::string_view dtype, const BlasInfo& blas);

// Whether OpenBLAS runs a row-major (m, k) @ (k, n) gemm with mnk = m*n*k through
// level3_thread.c's parallel driver (K halved as "halve_up") rather than its serial fallback
// GEMM_LOCAL (level3.c, "halve_down"): interface/gemm.c gives it min(threads, mnk / 262144)
// threads, and level3_thread.c's CNAME splits the column-major m' = n by switch_ratio
// (SWITCH_RATIO: 16 float32, 8 float64 for SkylakeX, param.h) and n' = m by
// switch_ratio * nthreads_m; one part runs serially. Requires m, n, mnk >= 0, threads >= 1 and
// switch_ratio >= 1.
// Example: OpenblasLevel3Parallel(16, 16, 16 * 16 * 4096, 2, 16) is false (n < 32, m <= 16);
// OpenblasLevel3Parallel(17, 16, 17 * 16 * 4096, 2, 16) is true.
bool OpenblasLevel3Parallel(int64_t m, int64_t n, int64_t mnk, int threads, int switch_ratio);

}  // namespace fpconform

#endif  // FPCONFORM_ACCUMULATION_BLAS_PLATFORM_H_
