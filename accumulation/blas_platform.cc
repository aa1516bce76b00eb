#include "accumulation/blas_platform.h"

#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace fpconform {

namespace {

// Python's repr() of a str, for ASCII text (the reasons quote names and cores as
// numpy_matmul_platform's f-strings always have): single quotes unless the text holds a single
// quote and no double quote; backslash, the quote, \t \n \r and other control characters escaped.
// Bytes >= 0x80 pass through (Python escapes its non-printable non-ASCII characters; such names
// name no BLAS).
std::string PythonRepr(std::string_view s) {
  const bool dq = s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos;
  const char quote = dq ? '"' : '\'';
  std::string out(1, quote);
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\' || c == quote) {
      out += '\\';
      out += c;
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += quote;
  return out;
}

// m * n * k, saturated at INT64_MAX (Python's integers do not overflow; every threshold the rule
// compares with is far below the saturated value, so the decisions are the same).
int64_t SaturatedProduct(int64_t m, int64_t n, int64_t k) {
  int64_t mn = 0;
  int64_t mnk = 0;
  if (__builtin_mul_overflow(m, n, &mn) || __builtin_mul_overflow(mn, k, &mnk)) {
    return std::numeric_limits<int64_t>::max();
  }
  return mnk;
}

}  // namespace

bool OpenblasLevel3Parallel(int64_t m, int64_t n, int64_t mnk, int threads, int switch_ratio) {
  // Python's `mnk / threads >= 262144` in floats is the integer mnk / threads >= 262144, and its
  // int(mnk / 262144) the integer quotient (mnk < 262144 * threads there, far below 2^53).
  const int64_t nthreads = mnk / threads >= 262144 ? threads : mnk / 262144;
  if (nthreads <= 1) return false;
  const int64_t sr = switch_ratio;
  const int64_t mp = n;  // Column-major: m' = n, n' = m.
  const int64_t np = m;
  int64_t tm = 0;
  if (mp < 2 * sr) {
    tm = 1;
  } else {
    tm = nthreads;
    while (mp < tm * sr) tm /= 2;
  }
  int64_t tn = 0;
  if (np < sr * tm) {
    tn = 1;
  } else {
    const int64_t block = sr * tm;
    tn = np / block + (np % block != 0 ? 1 : 0);
    if (tn > nthreads / tm) tn = nthreads / tm;  // tm * tn > nthreads, without the overflow.
  }
  return tm * tn > 1;
}

absl::StatusOr<MatmulPlatform> NumpyMatmulPlatform(int64_t m, int64_t k, int64_t n,
                                                   std::string_view dtype, const BlasInfo& blas) {
  if (m < 0 || k < 0 || n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("numpy matmul shape (", m, ", ", k, ") @ (", k, ", ", n,
                     "): m, k and n must be >= 0"));
  }
  if (blas.threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("BLAS threads ", blas.threads, ": must be >= 1"));
  }
  auto none = [](std::string reason) { return MatmulPlatform{std::nullopt, std::move(reason)}; };
  auto preset = [](std::string name, std::string reason) {
    return MatmulPlatform{std::move(name), std::move(reason)};
  };
  if (dtype != "float32" && dtype != "float64") {
    return none(absl::StrCat("dtype ", std::string(dtype), ": np.matmul presets exist for float32 and float64"));
  }
  const std::string bits = dtype == "float32" ? "f32" : "f64";
  if (m < 2 || n < 2) {
    return none(
        "a vector operand (m or n = 1): numpy calls gemv or dot, whose order is not modelled");
  }
  const int64_t mnk = SaturatedProduct(m, n, k);
  if (blas.name == "reference") {
    return preset(absl::StrCat("numpy-refblas-", bits),
                  "reference BLAS gemm: one loop over k per element");
  }
  if (blas.name != "scipy-openblas" && blas.name != "openblas") {
    return none(absl::StrCat("BLAS ", blas.name ? PythonRepr(*blas.name) : "None",
                             ": no preset (known: OpenBLAS SkylakeX, reference BLAS)"));
  }
  const std::string core = absl::AsciiStrToLower(blas.core);
  if (core != "skylakex" && core != "cooperlake" && core != "sapphirerapids") {
    return none(absl::StrCat("OpenBLAS core ", PythonRepr(blas.core),
                             ": presets exist for the SkylakeX kernels only"));
  }
  const int threads = blas.threads;
  if (bits == "f64" && n % 8 != 0) {
    return none(
        "float64 with n % 8 != 0: the dgemm kernel's edge columns use an order not modelled");
  }
  // interface/gemm.c, in its order: the direct sgemm kernel, the small-matrix kernels, the
  // level-3 driver (level3_thread.c with several threads, level3.c with one).
  if (bits == "f32") {
    const bool direct = threads > 1 ? mnk <= 2 * 350 * 512
                                    : mnk < 28 * 512 * 512 && (n % 4 == 0 || mnk < 8 * 512 * 512);
    if ((direct || mnk <= 1'000'000) && n % 16 != 0 && n % 16 <= 8) {
      return none(
          "the direct/small sgemm kernels with n % 16 in 1..8: their last columns use an order "
          "not modelled");
    }
    if (direct) {
      return preset("numpy-openblas-skylakex-f32-small",
                    "the direct sgemm kernel: one FMA chain over k");
    }
  }
  if (mnk <= 1'000'000) {
    return preset(absl::StrCat("numpy-openblas-skylakex-", bits, "-small"),
                  "the small-matrix kernel: one FMA chain over k");
  }
  if (OpenblasLevel3Parallel(m, n, mnk, threads, bits == "f32" ? 16 : 8)) {
    return preset(absl::StrCat("numpy-openblas-skylakex-", bits),
                  "the level-3 driver with several threads");
  }
  return preset(absl::StrCat("numpy-openblas-skylakex-", bits, "-1thread"),
                "the level-3 driver on one thread");
}

}  // namespace fpconform
