// NumpyMatmulPlatform on a table of cases derived from the rule's text (blas_platform.h and
// SOURCES.md section 4c), a row or more per branch, with the exact reason texts that
// fpconform.blas.numpy_matmul_platform has always returned; OpenblasLevel3Parallel on
// level3_thread.c's split; the errors. python/tests/test_blas_platforms.py checks the same rule
// against the real numpy and OpenBLAS, and against a pure-Python copy of the old rule.
#include "accumulation/blas_platform.h"

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

constexpr char kRef[] = "reference BLAS gemm: one loop over k per element";
constexpr char kVector[] =
    "a vector operand (m or n = 1): numpy calls gemv or dot, whose order is not modelled";
constexpr char kUnknownBlasTail[] = ": no preset (known: OpenBLAS SkylakeX, reference BLAS)";
constexpr char kCoreTail[] = ": presets exist for the SkylakeX kernels only";
constexpr char kF64Edge[] =
    "float64 with n % 8 != 0: the dgemm kernel's edge columns use an order not modelled";
constexpr char kEdge16[] =
    "the direct/small sgemm kernels with n % 16 in 1..8: their last columns use an order not "
    "modelled";
constexpr char kDirect[] = "the direct sgemm kernel: one FMA chain over k";
constexpr char kSmall[] = "the small-matrix kernel: one FMA chain over k";
constexpr char kParallel[] = "the level-3 driver with several threads";
constexpr char kSerial[] = "the level-3 driver on one thread";

BlasInfo Sky(int threads) { return BlasInfo{"scipy-openblas", "SkylakeX", threads}; }

struct Case {
  const char* what;  // The branch the row exercises.
  int64_t m, k, n;
  std::string dtype;
  BlasInfo blas;
  std::optional<std::string> preset;
  std::string reason;
};

TEST(NumpyMatmulPlatform, TableOfBranches) {
  constexpr int64_t kBig = int64_t{1} << 40;
  const std::vector<Case> cases = {
      // The reference BLAS: every shape with m, n >= 2, float32 and float64.
      {"reference f32", 2, 3, 2, "float32", {"reference", "", 1}, "numpy-refblas-f32", kRef},
      {"reference f64, odd n", 1000, 1000, 1001, "float64", {"reference", "", 4},
       "numpy-refblas-f64", kRef},
      // Vectors: m or n below 2, for every BLAS.
      {"reference m = 1", 1, 1000, 256, "float32", {"reference", "", 1}, std::nullopt, kVector},
      {"openblas n = 1", 256, 1000, 1, "float32", Sky(2), std::nullopt, kVector},
      {"m = 0", 0, 5, 5, "float64", Sky(2), std::nullopt, kVector},
      // dtype comes first, before the vector check.
      {"dtype float16", 64, 64, 64, "float16", {"reference", "", 1}, std::nullopt,
       "dtype float16: np.matmul presets exist for float32 and float64"},
      {"dtype int32 and a vector", 1, 4, 4, "int32", Sky(2), std::nullopt,
       "dtype int32: np.matmul presets exist for float32 and float64"},
      // Other BLAS names, quoted as Python's repr quotes them.
      {"BLAS mkl", 64, 64, 64, "float32", {"mkl", "SkylakeX", 2}, std::nullopt,
       std::string("BLAS 'mkl'") + kUnknownBlasTail},
      {"BLAS unknown", 64, 64, 64, "float32", {"unknown", "", 1}, std::nullopt,
       std::string("BLAS 'unknown'") + kUnknownBlasTail},
      {"BLAS None", 64, 64, 64, "float64", {std::nullopt, "", 1}, std::nullopt,
       std::string("BLAS None") + kUnknownBlasTail},
      {"BLAS name with a single quote", 4, 4, 4, "float32", {"it's", "", 1}, std::nullopt,
       std::string("BLAS \"it's\"") + kUnknownBlasTail},
      {"BLAS name with both quotes", 4, 4, 4, "float32", {"a\"b'c", "", 1}, std::nullopt,
       std::string("BLAS 'a\"b\\'c'") + kUnknownBlasTail},
      {"BLAS name with a tab and a backslash", 4, 4, 4, "float32", {"x\t\\y\x01", "", 1},
       std::nullopt, std::string("BLAS 'x\\t\\\\y\\x01'") + kUnknownBlasTail},
      // OpenBLAS cores other than the SkylakeX kernels; the three that use them, any case.
      {"core Haswell", 256, 1000, 256, "float32", {"scipy-openblas", "Haswell", 2}, std::nullopt,
       std::string("OpenBLAS core 'Haswell'") + kCoreTail},
      {"core unknown", 256, 1000, 256, "float32", {"openblas", "", 2}, std::nullopt,
       std::string("OpenBLAS core ''") + kCoreTail},
      {"core cooperlake, system openblas", 256, 1000, 256, "float32",
       {"openblas", "cooperlake", 2}, "numpy-openblas-skylakex-f32", kParallel},
      {"core SAPPHIRERAPIDS", 256, 1000, 256, "float64", {"scipy-openblas", "SAPPHIRERAPIDS", 2},
       "numpy-openblas-skylakex-f64", kParallel},
      // float64: n % 8 != 0 has no preset, whatever the size; else small or level-3.
      {"f64 n % 8 = 4", 64, 64, 12, "float64", Sky(2), std::nullopt, kF64Edge},
      {"f64 n % 8 = 7, large", 1000, 1000, 1007, "float64", Sky(1), std::nullopt, kF64Edge},
      {"f64 small", 64, 64, 64, "float64", Sky(2), "numpy-openblas-skylakex-f64-small", kSmall},
      {"f64 small, n % 16 = 8 allowed", 64, 64, 8, "float64", Sky(2),
       "numpy-openblas-skylakex-f64-small", kSmall},
      {"f64 small at mnk = 1e6", 125, 1000, 8, "float64", Sky(2),
       "numpy-openblas-skylakex-f64-small", kSmall},
      {"f64 level-3, 2 threads", 256, 1000, 256, "float64", Sky(2), "numpy-openblas-skylakex-f64",
       kParallel},
      {"f64 level-3, 1 thread", 256, 1000, 256, "float64", Sky(1),
       "numpy-openblas-skylakex-f64-1thread", kSerial},
      {"f64 level-3 not split: n < 16, m <= 8", 8, 20000, 8, "float64", Sky(2),
       "numpy-openblas-skylakex-f64-1thread", kSerial},
      {"f64 level-3 split: m = 9", 9, 20000, 8, "float64", Sky(2), "numpy-openblas-skylakex-f64",
       kParallel},
      // float32, several threads: direct kernel up to m*n*k = 2*350*512 = 358400.
      {"f32 direct, 2 threads", 64, 64, 64, "float32", Sky(2), "numpy-openblas-skylakex-f32-small",
       kDirect},
      {"f32 direct at mnk = 358400, n % 16 = 10", 70, 512, 10, "float32", Sky(2),
       "numpy-openblas-skylakex-f32-small", kDirect},
      {"f32 small above 358400, 2 threads", 71, 512, 10, "float32", Sky(2),
       "numpy-openblas-skylakex-f32-small", kSmall},
      {"f32 k = 0 is direct", 16, 0, 16, "float32", Sky(2), "numpy-openblas-skylakex-f32-small",
       kDirect},
      // float32, one thread: direct below 28*512*512 when n % 4 == 0 or below 8*512*512.
      {"f32 direct, 1 thread, n % 4 = 0", 128, 256, 128, "float32", Sky(1),
       "numpy-openblas-skylakex-f32-small", kDirect},
      {"f32 same shape, 2 threads: level-3", 128, 256, 128, "float32", Sky(2),
       "numpy-openblas-skylakex-f32", kParallel},
      {"f32 1 thread, n % 4 = 2, mnk < 8*512^2: direct", 100, 128, 142, "float32", Sky(1),
       "numpy-openblas-skylakex-f32-small", kDirect},
      {"f32 1 thread, n % 4 = 2, mnk >= 8*512^2: level-3", 128, 128, 142, "float32", Sky(1),
       "numpy-openblas-skylakex-f32-1thread", kSerial},
      {"f32 1 thread, mnk = 28*512^2: level-3", 28, 512, 512, "float32", Sky(1),
       "numpy-openblas-skylakex-f32-1thread", kSerial},
      {"f32 1 thread, mnk just below 28*512^2: direct", 27, 512, 512, "float32", Sky(1),
       "numpy-openblas-skylakex-f32-small", kDirect},
      // float32, n % 16 in 1..8 on the direct and small kernels: none; 0 and 9..15 fine.
      {"f32 direct n % 16 = 8", 64, 64, 24, "float32", Sky(2), std::nullopt, kEdge16},
      {"f32 direct n % 16 = 1", 64, 64, 17, "float32", Sky(2), std::nullopt, kEdge16},
      {"f32 direct n % 16 = 9", 64, 64, 25, "float32", Sky(2), "numpy-openblas-skylakex-f32-small",
       kDirect},
      {"f32 small (not direct) n % 16 = 8", 100, 100, 72, "float32", Sky(2), std::nullopt, kEdge16},
      {"f32 1-thread direct n % 16 = 4", 100, 1000, 20, "float32", Sky(1), std::nullopt, kEdge16},
      {"f32 level-3 n % 16 = 8 allowed", 1000, 1000, 1000, "float32", Sky(2),
       "numpy-openblas-skylakex-f32", kParallel},
      // The level-3 driver: level3_thread.c does not split n < 32 with m <= 16 on 2 threads.
      {"f32 level-3 not split: m = n = 16", 16, 4096, 16, "float32", Sky(2),
       "numpy-openblas-skylakex-f32-1thread", kSerial},
      {"f32 level-3 split: m = 17", 17, 4096, 16, "float32", Sky(2), "numpy-openblas-skylakex-f32",
       kParallel},
      {"f32 level-3, 1 thread", 1000, 1000, 1000, "float32", Sky(1),
       "numpy-openblas-skylakex-f32-1thread", kSerial},
      {"f32 3 threads: n = 40 halves tm to 1, m = 16 not split", 16, 1 << 20, 40, "float32",
       Sky(3), "numpy-openblas-skylakex-f32-1thread", kSerial},
      // m*n*k beyond 64 bits (Python's integers do not overflow): the level-3 driver.
      {"f32 m*n*k > 2^63", kBig, kBig, kBig, "float32", Sky(2), "numpy-openblas-skylakex-f32",
       kParallel},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.what << ": (" << c.m << ", " << c.k << ") @ (" << c.k
                                      << ", " << c.n << ") " << c.dtype << " threads "
                                      << c.blas.threads);
    absl::StatusOr<MatmulPlatform> p = NumpyMatmulPlatform(c.m, c.k, c.n, c.dtype, c.blas);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->preset, c.preset);
    EXPECT_EQ(p->reason, c.reason);
  }
}

TEST(NumpyMatmulPlatform, HeaderExample) {
  BlasInfo blas{.name = "scipy-openblas", .core = "SkylakeX", .threads = 2};
  absl::StatusOr<MatmulPlatform> p = NumpyMatmulPlatform(256, 1000, 256, "float32", blas);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->preset, "numpy-openblas-skylakex-f32");
  EXPECT_EQ(p->reason, "the level-3 driver with several threads");
}

TEST(OpenblasLevel3Parallel, Level3ThreadSplit) {
  constexpr int64_t kMnk = int64_t{1} << 30;
  // The file comment's example: n < 2 * 16 keeps nthreads_m at 1; m <= 16 keeps nthreads_n at 1.
  EXPECT_FALSE(OpenblasLevel3Parallel(16, 16, 16 * 16 * 4096, 2, 16));
  EXPECT_TRUE(OpenblasLevel3Parallel(17, 16, 17 * 16 * 4096, 2, 16));
  // n >= 2 * switch_ratio splits m' = n over two threads.
  EXPECT_TRUE(OpenblasLevel3Parallel(2, 32, kMnk, 2, 16));
  EXPECT_FALSE(OpenblasLevel3Parallel(2, 31, kMnk, 2, 16));
  // 3 threads, n = 40: nthreads_m = 3 halves to 1 (40 < 48); n = 48 keeps 3.
  EXPECT_FALSE(OpenblasLevel3Parallel(16, 40, kMnk, 3, 16));
  EXPECT_TRUE(OpenblasLevel3Parallel(17, 40, kMnk, 3, 16));
  EXPECT_TRUE(OpenblasLevel3Parallel(2, 48, kMnk, 3, 16));
  // float64's switch ratio 8.
  EXPECT_FALSE(OpenblasLevel3Parallel(8, 15, kMnk, 2, 8));
  EXPECT_TRUE(OpenblasLevel3Parallel(8, 16, kMnk, 2, 8));
  // gemm.c's thread count: min(threads, mnk / 262144); one thread is serial.
  EXPECT_FALSE(OpenblasLevel3Parallel(1000, 1000, kMnk, 1, 16));
  EXPECT_FALSE(OpenblasLevel3Parallel(1000, 1000, 2 * 262144 - 1, 64, 16));
  EXPECT_TRUE(OpenblasLevel3Parallel(1000, 1000, 2 * 262144, 64, 16));
  // mnk / threads >= 262144 keeps all threads: 4 threads at 4 * 262144; 3 just below (min with
  // mnk / 262144 = 3), both parallel.
  EXPECT_TRUE(OpenblasLevel3Parallel(1000, 1000, 4 * 262144, 4, 16));
  EXPECT_TRUE(OpenblasLevel3Parallel(1000, 1000, 4 * 262144 - 1, 4, 16));
}

TEST(NumpyMatmulPlatform, BadInputIsAnError) {
  const BlasInfo sky{"scipy-openblas", "SkylakeX", 2};
  for (const auto& [m, k, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {-1, 4, 4}, {4, -1, 4}, {4, 4, -1}}) {
    absl::StatusOr<MatmulPlatform> p = NumpyMatmulPlatform(m, k, n, "float32", sky);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << m << " " << k << " " << n;
  }
  for (const int threads : {0, -2}) {
    absl::StatusOr<MatmulPlatform> p =
        NumpyMatmulPlatform(64, 64, 64, "float32", BlasInfo{"scipy-openblas", "SkylakeX", threads});
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << threads;
    EXPECT_NE(p.status().message().find("threads"), std::string::npos) << p.status();
  }
}

}  // namespace
}  // namespace fpconform
