// cuda_probe: runs dot products through NVIDIA tensor-core instructions and cuBLAS on a real GPU
// and writes every input and output as a replay file (format: conformance/data/README.md), so
// that conformance/replay_test.cc can check the accumulation presets against the hardware on any
// CPU. Nothing else in the project needs this program or a GPU.
//
// Usage: cuda_probe OUT_DIR [SEED [PART]]  SEED defaults to 2026 (the same seed gives the same
//        inputs on every machine: SplitMix64, host-only code); PART is all (default), mma, wgmma,
//        cublas or lt-scaled, so that a crash in one part (a sticky CUDA error) cannot lose the
//        others; dry-run needs no GPU: it writes the instruction cases with d = 0 and the
//        lt-scaled files with a D computed on the host (format and layout checks only).
// Writes OUT_DIR/<device>-sm<cc>-<instruction>-<type>.txt for every (instruction, type) the
// device supports, OUT_DIR/failed/... for an instruction whose layout self-check failed (such a
// file has no data lines and must never be replayed), and prints a summary on stdout.
//
// What runs (one dot product per warp or warpgroup: row 0 of A, column 0 of B, c in C[0][0],
// every other element zero, as in Fasi et al.'s test suite; a dot longer than the instruction's
// k is chained through the accumulator registers, D of one step being C of the next):
//  * mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32     (sm_80+)
//  * mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32                  (sm_80+)
//  * mma.sync.aligned.m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32  (sm_89+)
//  * wgmma.mma_async.sync.aligned.m64n8k{16,8,32}.f32.{f16,bf16,tf32,e4m3,e5m2} (sm_90a only):
//    A from registers (the mma.sync-style fragment, one 16-row slice per warp), B from shared
//    memory through a matrix descriptor in no-swizzle mode, K-major: each 8x16-byte core matrix
//    is 128 contiguous bytes (row n at n*16), the two core matrices along K 128 bytes apart. With
//    N = 8 there is a single core matrix along N, so the leading- and stride-byte-offset fields
//    are both set to 128 and the layout does not depend on which of the two the hardware uses
//    for the K direction (PTX ISA, "Matrix Descriptor Format" and "Shared Memory Matrix Layout").
//  * cuBLAS cublasGemmEx bf16 x bf16 -> f32, CUBLAS_COMPUTE_32F (16x16 output, diagonal kept);
//  * cuBLASLt fp8 e4m3 x e4m3 -> f32 (TN, C = D = f32), with and without
//    CUBLASLT_MATMUL_DESC_FAST_ACCUM (diagonal of a 16x16 output kept);
//  * lt-scaled: the same cuBLASLt call with FP8 scales (per tensor, and per row of A / column of
//    B) and C, 64x64 outputs written as .npy files under OUT_DIR/lt_scaled/ for
//    `fpconform audit matmul` (check_scaled.sh), since replay files carry no scales.
// Fragment layouts: PTX ISA 8.x, "Matrix Fragments for mma.m16n8k16 / m16n8k8 / m16n8k32" and
// "Register Fragments ... wgmma .m64nNk16/k8/k32" (each warp of the warpgroup holds rows
// 16w..16w+15 in the mma.sync layout). Because a layout mistake cannot be seen without a GPU,
// every instruction first runs a self-check: 64 dots of small integers (|a|,|b| <= 3, |c| <= 8)
// whose exact sums any correct accumulation returns exactly; an instruction that fails it is
// written under failed/ with no data.
//
// Cases per (instruction, type), all in the instruction's input format:
//  * Fasi et al. vectors (accumulation/models/SOURCES.md, "Fasi et al. vectors"), every variant
//    exactly representable in the type, K = instruction k;
//  * FPRev-style probes: a_i = b_i = 1 except +M at position i and -M at j (M a large power of
//    two, so M^2 absorbs the ones under truncation), for every pair i < j of the K = min(2k, 32)
//    products and c (position K): the result tells which terms are added first;
//  * seeded random cases: K = k (600) and K = 4k (300), exponents near 1 (cancellation,
//    alignment) and over
//    the whole finite range (subnormals included), c a float32 near the products' magnitude;
//    tf32 inputs are random float32 patterns with the low 13 bits set, which the hardware ignores.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "cases/pinned_random.h"

namespace {

// ---------------------------------------------------------------------------------------------
// Host-only pinned randomness: cases/pinned_random.h's DeriveSeed and PinnedRng (SplitMix64;
// only their inline, constexpr parts, so this program links nothing of the project).
using fpconform::DeriveSeed;
using Rng = fpconform::PinnedRng;

// ---------------------------------------------------------------------------------------------
// Input types.
enum Type { kF16 = 0, kBF16, kTF32, kE4M3, kE5M2, kNumTypes };

struct TypeInfo {
  const char* tag;        // File-name tag.
  const char* format;     // ml_dtypes id of the container handed to the instruction.
  const char* ptx;        // PTX type suffix.
  int bytes;              // Container bytes.
  int exponent_bits, fraction_bits, bias;
  bool e4m3fn;            // Exponent all ones is finite except fraction all ones (NaN).
  int mma_k;              // k of the mma.sync / wgmma shape.
};

const TypeInfo kTypes[kNumTypes] = {
    {"f16", "float16", "f16", 2, 5, 10, 15, false, 16},
    {"bf16", "bfloat16", "bf16", 2, 8, 7, 127, false, 16},
    {"tf32", "float32", "tf32", 4, 8, 23, 127, false, 8},  // fp32 bits; the unit reads tf32.
    {"e4m3", "float8_e4m3fn", "e4m3", 1, 4, 3, 7, true, 32},
    {"e5m2", "float8_e5m2", "e5m2", 1, 5, 2, 15, false, 32},
};

// The container bits of v in type t when v is exactly representable and finite; false otherwise.
bool EncodeExact(double v, const TypeInfo& t, uint32_t* bits) {
  const uint32_t sign = std::signbit(v) ? 1u : 0u;
  const int width = t.bytes * 8;
  const uint32_t sign_bit = sign << (width - 1);
  double m = std::fabs(v);
  if (m == 0) {
    *bits = sign_bit;
    return true;
  }
  if (!std::isfinite(m)) return false;
  const int emin = 1 - t.bias;
  int e = 0;
  const double f = std::frexp(m, &e);  // m = f * 2^e, f in [0.5, 1).
  int exp = e - 1;                      // m = (2f) * 2^exp, 2f in [1, 2).
  uint64_t biased, frac;
  if (exp >= emin) {
    const double scaled = std::ldexp(2 * f - 1, t.fraction_bits);
    if (scaled != std::floor(scaled)) return false;
    biased = static_cast<uint64_t>(exp + t.bias);
    frac = static_cast<uint64_t>(scaled);
  } else {
    const double scaled = std::ldexp(m, t.fraction_bits - emin);
    if (scaled != std::floor(scaled) || scaled >= std::ldexp(1.0, t.fraction_bits)) return false;
    biased = 0;
    frac = static_cast<uint64_t>(scaled);
  }
  const uint64_t max_biased = (1u << t.exponent_bits) - 1;
  if (t.e4m3fn) {
    if (biased > max_biased) return false;
    if (biased == max_biased && frac == (1u << t.fraction_bits) - 1) return false;
  } else if (biased >= max_biased) {
    return false;
  }
  *bits = sign_bit | static_cast<uint32_t>(biased << t.fraction_bits) | static_cast<uint32_t>(frac);
  return true;
}

// Random finite container bits: exponent in [bias + lo, bias + hi] clipped to the finite range.
uint32_t RandomBits(Rng& rng, const TypeInfo& t, int lo, int hi) {
  const int width = t.bytes * 8;
  const int max_biased = (1 << t.exponent_bits) - 1;
  for (;;) {
    int biased = t.bias + lo + static_cast<int>(rng.Below(static_cast<uint64_t>(hi - lo + 1)));
    if (biased < 0) biased = 0;
    if (biased > max_biased) biased = max_biased;
    const uint32_t frac = static_cast<uint32_t>(rng.Next() & ((1ull << t.fraction_bits) - 1));
    if (!t.e4m3fn && biased == max_biased) continue;
    if (t.e4m3fn && biased == max_biased && frac == (1u << t.fraction_bits) - 1) continue;
    const uint32_t sign = static_cast<uint32_t>(rng.Next() & 1);
    return (sign << (width - 1)) | (static_cast<uint32_t>(biased) << t.fraction_bits) | frac;
  }
}

// The value of finite container bits of type t (the inverse of EncodeExact).
double DecodeBits(const TypeInfo& t, uint32_t bits) {
  const int width = t.bytes * 8;
  const uint32_t frac = bits & ((1u << t.fraction_bits) - 1);
  const int biased = static_cast<int>((bits >> t.fraction_bits) & ((1u << t.exponent_bits) - 1));
  const double m = biased == 0 ? std::ldexp(frac, 1 - t.bias - t.fraction_bits)
                               : std::ldexp(frac + (1u << t.fraction_bits),
                                            biased - t.bias - t.fraction_bits);
  return (bits >> (width - 1)) & 1 ? -m : m;
}

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// ---------------------------------------------------------------------------------------------
// Device code. One dot per warp (mma.sync) or per warpgroup (wgmma); block b computes dot b.
// a and b hold K container values per dot (uint32 each), c and d float32 bits.

// (row, col) of element i of the A fragment and (k, n) of element i of the B fragment, for a
// lane with groupID g = lane / 4 and threadID_in_group t = lane % 4 (PTX ISA figures).
__device__ __forceinline__ void LayoutA(int type, int i, int g, int t, int* row, int* col) {
  if (type == kTF32) {  // m16n8k8 .tf32: a0..a3.
    *row = g + 8 * (i & 1);
    *col = t + 4 * (i >> 1);
  } else if (type == kE4M3 || type == kE5M2) {  // m16n8k32 8-bit: a0..a15.
    *row = g + 8 * ((i >> 2) & 1);
    *col = t * 4 + (i & 3) + 16 * (i >> 3);
  } else {  // m16n8k16 16-bit: a0..a7.
    *row = g + 8 * ((i >> 1) & 1);
    *col = t * 2 + (i & 1) + 8 * (i >> 2);
  }
}
__device__ __forceinline__ void LayoutB(int type, int i, int g, int t, int* k, int* n) {
  if (type == kTF32) {  // b0..b1.
    *k = t + 4 * i;
  } else if (type == kE4M3 || type == kE5M2) {  // b0..b7.
    *k = t * 4 + (i & 3) + 16 * (i >> 2);
  } else {  // b0..b3.
    *k = t * 2 + (i & 1) + 8 * (i >> 1);
  }
  *n = g;
}

__device__ __forceinline__ int BytesOf(int type) {
  return type == kTF32 ? 4 : (type == kE4M3 || type == kE5M2) ? 1 : 2;
}

// Packs this lane's A fragment (4 registers) for K-step s; only matrix row `want_row` is
// non-zero (the dot's a), every other row zero.
__device__ void PackA(int type, const uint32_t* a, int s, int k, int g, int t, int row_offset,
                      uint32_t regs[4]) {
  const int bytes = BytesOf(type);
  const int per_reg = 4 / bytes;
  for (int r = 0; r < 4; ++r) regs[r] = 0;
  for (int i = 0; i < 4 * per_reg; ++i) {
    int row, col;
    LayoutA(type, i, g, t, &row, &col);
    if (row + row_offset != 0) continue;
    const uint32_t v = a[s * k + col];
    regs[i / per_reg] |= v << (8 * bytes * (i % per_reg));
  }
}
__device__ void PackB(int type, const uint32_t* b, int s, int k, int g, int t, uint32_t regs[2]) {
  const int bytes = BytesOf(type);
  const int per_reg = 4 / bytes;
  regs[0] = regs[1] = 0;
  for (int i = 0; i < 2 * per_reg; ++i) {
    int kk, n;
    LayoutB(type, i, g, t, &kk, &n);
    if (n != 0) continue;
    const uint32_t v = b[s * k + kk];
    regs[i / per_reg] |= v << (8 * bytes * (i % per_reg));
  }
}

template <int kType>
__device__ void MmaStep(float d[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (kType == kF16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (kType == kBF16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (kType == kTF32) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (kType == kE4M3) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (kType == kE5M2) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#endif
}

template <int kType>
__global__ void MmaKernel(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d,
                          int K) {
  const int k = kType == kTF32 ? 8 : (kType == kE4M3 || kType == kE5M2) ? 32 : 16;
  const int dot = blockIdx.x;
  const int lane = threadIdx.x;
  const int g = lane >> 2, t = lane & 3;
  const uint32_t* da = a + static_cast<size_t>(dot) * K;
  const uint32_t* db = b + static_cast<size_t>(dot) * K;
  float acc[4] = {0, 0, 0, 0};
  if (lane == 0) acc[0] = __uint_as_float(c[dot]);  // c0 of lane 0 is C[0][0].
  for (int s = 0; s < K / k; ++s) {
    uint32_t ar[4], br[2];
    PackA(kType, da, s, k, g, t, 0, ar);
    PackB(kType, db, s, k, g, t, br);
    MmaStep<kType>(acc, ar, br);
  }
  if (lane == 0) d[dot] = __float_as_uint(acc[0]);
}

template <int kType>
__device__ void WgmmaStep(float d[4], const uint32_t a[4], uint64_t desc) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  if constexpr (kType == kF16) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, "
        "p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
  } else if constexpr (kType == kBF16) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, "
        "p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
  } else if constexpr (kType == kTF32) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, "
        "p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
  } else if constexpr (kType == kE4M3) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, "
        "p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
  } else if constexpr (kType == kE5M2) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e5m2 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, "
        "p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#else
  (void)d;
  (void)a;
  (void)desc;
#endif
}

// Whether this binary holds sm_90a wgmma code (set by the kernel, read back by the host).
__device__ int g_wgmma_compiled;

template <int kType>
__global__ void WgmmaKernel(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d,
                            int K) {
  const int k = kType == kTF32 ? 8 : (kType == kE4M3 || kType == kE5M2) ? 32 : 16;
  const int bytes = kType == kTF32 ? 4 : (kType == kE4M3 || kType == kE5M2) ? 1 : 2;
  __shared__ __align__(128) uint8_t smem_b[256];  // Two 128-byte core matrices along K.
  const int dot = blockIdx.x;
  const int tid = threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;
  const uint32_t* da = a + static_cast<size_t>(dot) * K;
  const uint32_t* db = b + static_cast<size_t>(dot) * K;
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if (tid == 0 && dot == 0) g_wgmma_compiled = 1;
#endif
  const uint32_t smem_addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_b));
  const uint64_t desc = static_cast<uint64_t>((smem_addr & 0x3FFFF) >> 4) |
                        (static_cast<uint64_t>(128 >> 4) << 16) |  // Leading byte offset.
                        (static_cast<uint64_t>(128 >> 4) << 32);   // Stride byte offset.
  float acc[4] = {0, 0, 0, 0};
  if (tid == 0) acc[0] = __uint_as_float(c[dot]);
  for (int s = 0; s < K / k; ++s) {
    for (int i = tid; i < 256; i += blockDim.x) smem_b[i] = 0;
    __syncthreads();
    if (tid == 0) {  // Column n = 0 of B: byte (kbyte / 16) * 128 + n * 16 + kbyte % 16.
      for (int kk = 0; kk < k; ++kk) {
        const uint32_t v = db[s * k + kk];
        for (int by = 0; by < bytes; ++by) {
          const int kbyte = kk * bytes + by;
          smem_b[(kbyte / 16) * 128 + (kbyte % 16)] = static_cast<uint8_t>(v >> (8 * by));
        }
      }
    }
    __syncthreads();
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
    __syncthreads();
    uint32_t ar[4];
    PackA(kType, da, s, k, g, t, 16 * warp, ar);
    WgmmaStep<kType>(acc, ar, desc);
    __syncthreads();
  }
  if (tid == 0) d[dot] = __float_as_uint(acc[0]);
}

// ---------------------------------------------------------------------------------------------
// Host side.

#define CUDA_OK(expr) CheckCuda((expr), #expr, __LINE__)
bool CheckCuda(cudaError_t e, const char* what, int line) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "probe.cu:%d: %s: %s\n", line, what, cudaGetErrorString(e));
  return false;
}

struct Dot {
  std::vector<uint32_t> a, b;
  uint32_t c = 0;
  std::string tag;  // Case class, written as a comment before the first line of each class.
};

struct Device {
  std::string name;
  int major = 0, minor = 0, driver = 0, runtime = 0;
};

std::string Hex(uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*x", digits, v);
  return buf;
}

std::string FileTag(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')) out += ch;
    else if (ch >= 'A' && ch <= 'Z') out += static_cast<char>(ch - 'A' + 'a');
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

struct FileSpec {
  std::string instruction;   // As written in the header.
  std::string short_name;    // File-name part.
  std::string a_format, b_format, c_format = "float32", d_format = "float32";
  std::string expect;        // Preset name or "record-only".
  std::string candidates;    // Space-separated presets (record-only files).
  std::string note;
  int a_digits = 0;
};

bool WriteFile(const std::string& dir, const Device& dev, const FileSpec& spec,
               const std::vector<Dot>& dots, const std::vector<uint32_t>& d, uint64_t seed,
               const std::string& check) {
  const std::string path = dir + "/" + FileTag(dev.name) + "-sm" + std::to_string(dev.major) +
                           std::to_string(dev.minor) + "-" + spec.short_name + ".txt";
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return false;
  }
  std::fprintf(f, "# fpconform-replay v1\n");
  std::fprintf(f, "# Recorded by conformance/cuda_probe/probe.cu (seed %llu).\n",
               static_cast<unsigned long long>(seed));
  std::fprintf(f, "device = %s\n", dev.name.c_str());
  std::fprintf(f, "sm = %d%d\n", dev.major, dev.minor);
  std::fprintf(f, "driver = %d\n", dev.driver);
  std::fprintf(f, "runtime = %d\n", dev.runtime);
  std::fprintf(f, "instruction = %s\n", spec.instruction.c_str());
  std::fprintf(f, "a-format = %s\n", spec.a_format.c_str());
  std::fprintf(f, "b-format = %s\n", spec.b_format.c_str());
  std::fprintf(f, "c-format = %s\n", spec.c_format.c_str());
  std::fprintf(f, "d-format = %s\n", spec.d_format.c_str());
  std::fprintf(f, "expect = %s\n", spec.expect.c_str());
  if (!spec.candidates.empty()) std::fprintf(f, "candidates = %s\n", spec.candidates.c_str());
  std::fprintf(f, "layout-check = %s\n", check.c_str());
  if (!spec.note.empty()) std::fprintf(f, "# %s\n", spec.note.c_str());
  std::string last_tag;
  for (size_t i = 0; i < d.size(); ++i) {
    const Dot& x = dots[i];
    if (x.tag != last_tag) {
      std::fprintf(f, "# %s\n", x.tag.c_str());
      last_tag = x.tag;
    }
    std::string line = std::to_string(x.a.size());
    for (uint32_t v : x.a) line += " " + Hex(v, spec.a_digits);
    for (uint32_t v : x.b) line += " " + Hex(v, spec.a_digits);
    line += " " + Hex(x.c, 8) + " " + Hex(d[i], 8);
    std::fprintf(f, "%s\n", line.c_str());
  }
  std::fclose(f);
  std::printf("wrote %s (%zu dots, layout-check %s)\n", path.c_str(), d.size(), check.c_str());
  return true;
}

// Fasi et al. vectors (SOURCES.md table), every variant exactly representable in t.
void AddFasi(const TypeInfo& t, int k, std::vector<Dot>* out) {
  struct V {
    std::string name;
    std::vector<double> a, b;
    double c;
  };
  const double u = std::ldexp(1.0, -24);
  std::vector<V> vs = {
      {"A subnormal input a0 = 2^-24 (fp16 min), b0 = 4", {u}, {4}, 0},
      {"A subnormal input a0 = 2^-133 (bf16 min), b0 = 2^7", {std::ldexp(1.0, -133)}, {128}, 0},
      {"A subnormal input a0 = 2^-136 (tf32 min), b0 = 2^10", {std::ldexp(1.0, -136)}, {1024}, 0},
      {"A subnormal input a0 = 2^-9 (e4m3 min), b0 = 4", {std::ldexp(1.0, -9)}, {4}, 0},
      {"A subnormal input a0 = 2^-16 (e5m2 min), b0 = 4", {std::ldexp(1.0, -16)}, {4}, 0},
      {"A fp32 subnormal c", {0}, {0}, std::ldexp(1.0, -149)},
  };
  for (int p : {3, 4, 8, 11, 24}) {
    const double x = 1 - std::ldexp(1.0, -p);
    vs.push_back({"B products exact", {x, x, x, x}, {x, x, x, x}, 0});
  }
  for (double ai : {1.0, 0.5}) vs.push_back({"B fp32 accumulation", {ai, ai, ai, ai}, {u, u, u, u}, 1});
  vs.push_back({"B largest first", {1, 0.5, 0.5, 0.5}, {1, std::ldexp(1.0, -23), std::ldexp(1.0, -23),
                                                        std::ldexp(1.0, -23)}, u});
  const double t23 = std::ldexp(1.0, -23) + u;
  vs.push_back({"C RZ positive", {1, 1, 1, 1}, {2, t23, 0, 0}, 0});
  vs.push_back({"C RZ negative", {1, 1, 1, 1}, {-2, -t23, 0, 0}, 0});
  for (int s = 0; s <= 3; ++s) {  // s > 0: the same vectors scaled for more alignment bits.
    const double q = std::ldexp(1.0, -s);
    const std::string sc = s == 0 ? "" : " (b scaled by 2^-" + std::to_string(s) + ")";
    const double w = std::ldexp(1.0, -24 - s);
    vs.push_back({"D1 alignment bits" + sc, {1}, {1}, -(1 - w)});
    vs.push_back({"D2 no normalization add" + sc, {1, 1, 1, 1},
                  {u * q, u * q, u * q, u * q}, 1 - w});
    vs.push_back({"D3 no normalization sub" + sc, {1, 1}, {1, -u * q}, -1 + w});
    vs.push_back({"D5 non-monotonic c=1-2^-k" + sc, {0.5, 0.5, 0.5, 0.5},
                  {u * q, u * q, u * q, (std::ldexp(1.0, -23) + u) * q}, 1 - w});
    vs.push_back({"D5 non-monotonic c=1" + sc, {0.5, 0.5, 0.5, 0.5},
                  {u * q, u * q, u * q, (std::ldexp(1.0, -23) + u) * q}, 1});
    vs.push_back({"D5 V100 c=1-2^-k" + sc, {1, 1, 1, 1},
                  {u * q, u * q, u * q, u * q}, 1 - w});
    vs.push_back({"D5 V100 c=1" + sc, {1, 1, 1, 1}, {u * q, u * q, u * q, u * q}, 1});
  }
  const double c4 = 1 + std::ldexp(1.0, -22) + std::ldexp(1.0, -23);
  vs.push_back({"D4 carry-out", {1, 1, 1, 1}, {1, 1, 1, std::ldexp(1.0, -23)}, c4});
  vs.push_back({"D4 third carry bit", {1, 1, 1, 1}, {1, 1.5, 1.75, 1.875}, 1.875});
  vs.push_back({"D4 RZ in normalization", {1, 1, 1, 1}, {1, 1, 1, 1}, c4});
  vs.push_back({"D4 RZ in normalization (negative)", {1, 1, 1, 1}, {-1, -1, -1, -1}, -c4});
  for (const V& v : vs) {
    Dot dot;
    dot.tag = std::string("Fasi et al. ") + v.name;
    dot.a.assign(k, 0);
    dot.b.assign(k, 0);
    bool ok = true;
    for (size_t i = 0; i < v.a.size(); ++i) {
      ok = ok && EncodeExact(v.a[i], t, &dot.a[i]) && EncodeExact(v.b[i], t, &dot.b[i]);
    }
    const float cf = static_cast<float>(v.c);
    if (!ok || static_cast<double>(cf) != v.c) continue;
    dot.c = FloatBits(cf);
    out->push_back(dot);
  }
}

// FPRev-style probes over K = n products plus c (position n).
void AddProbes(const TypeInfo& t, int n, std::vector<Dot>* out) {
  // M: the largest power of two <= 2^15 representable in t; M^2 exceeds 2^(F+1) for every
  // preset's F except e4m3 (M = 2^8, M^2 = 2^16 > 2^13 = its F).
  double m = std::ldexp(1.0, 15);
  uint32_t bits;
  while (!EncodeExact(m, t, &bits)) m /= 2;
  uint32_t one, pm, nm;
  EncodeExact(1, t, &one);
  EncodeExact(m, t, &pm);
  EncodeExact(-m, t, &nm);
  for (int i = 0; i <= n; ++i) {
    for (int j = i + 1; j <= n; ++j) {
      Dot dot;
      dot.tag = "FPRev probes: ones, +M^2 at product i, -M^2 at j (j = K: c), M = 2^" +
                std::to_string(static_cast<int>(std::log2(m)));
      dot.a.assign(n, one);
      dot.b.assign(n, one);
      dot.b[i] = pm;
      dot.a[i] = pm;
      if (j < n) {
        dot.a[j] = pm;
        dot.b[j] = nm;
        dot.c = 0;
      } else {
        dot.c = FloatBits(static_cast<float>(-m * m));
      }
      out->push_back(dot);
    }
  }
}

void AddRandom(const TypeInfo& t, Type type, int n, int count, uint64_t seed, int klass,
               std::vector<Dot>* out) {
  for (int s = 0; s < count; ++s) {
    Rng rng(DeriveSeed(seed, {static_cast<uint64_t>(type), static_cast<uint64_t>(n),
                              static_cast<uint64_t>(klass), static_cast<uint64_t>(s)}));
    Dot dot;
    dot.tag = klass == 0 ? "random: exponents near 1 (|e| <= 3), c near the sum"
                         : "random: exponents over the whole finite range";
    dot.a.resize(n);
    dot.b.resize(n);
    const int lo = klass == 0 ? -3 : -t.bias - 1;
    const int hi = klass == 0 ? 3 : (1 << t.exponent_bits);
    for (int i = 0; i < n; ++i) {
      dot.a[i] = RandomBits(rng, t, lo, hi);
      dot.b[i] = RandomBits(rng, t, lo, hi);
      if (type == kTF32) {  // Low 13 bits random: the unit reads only the tf32 part.
        dot.a[i] |= static_cast<uint32_t>(rng.Next() & 0x1FFF);
        dot.b[i] |= static_cast<uint32_t>(rng.Next() & 0x1FFF);
      }
    }
    const TypeInfo& f32 = kTypes[kTF32];
    if (klass == 0) {
      dot.c = rng.Below(8) == 0 ? 0 : RandomBits(rng, f32, -2, 5);
    } else {
      dot.c = rng.Below(4) == 0 ? 0 : RandomBits(rng, f32, -30, 30);
    }
    out->push_back(dot);
  }
}

// Small-integer dots (exact in every type and in float32): the layout self-check.
std::vector<Dot> CheckDots(const TypeInfo& t, int n, uint64_t seed, Type type,
                           std::vector<double>* exact) {
  std::vector<Dot> dots;
  for (int s = 0; s < 64; ++s) {
    Rng rng(DeriveSeed(seed, {99, static_cast<uint64_t>(type), static_cast<uint64_t>(s)}));
    Dot dot;
    dot.tag = "check";
    double sum = static_cast<double>(rng.Below(17)) - 8;
    dot.c = FloatBits(static_cast<float>(sum));
    for (int i = 0; i < n; ++i) {
      const double x = static_cast<double>(rng.Below(7)) - 3;
      const double y = static_cast<double>(rng.Below(7)) - 3;
      uint32_t xb, yb;
      EncodeExact(x, t, &xb);
      EncodeExact(y, t, &yb);
      dot.a.push_back(xb);
      dot.b.push_back(yb);
      sum += x * y;
    }
    exact->push_back(sum);
    dots.push_back(dot);
  }
  return dots;
}

// Probes over min(2k, 32) products (pairs across two chained instructions for k <= 16), then
// 400 + 200 random dots of length k and 200 + 100 of length 4k (the two random classes).
void AddCases(const TypeInfo& t, Type type, int k, uint64_t seed, std::vector<Dot>* dots) {
  AddProbes(t, std::min(2 * k, 32), dots);
  AddRandom(t, type, k, 400, seed, 0, dots);
  AddRandom(t, type, k, 200, seed, 1, dots);
  AddRandom(t, type, 4 * k, 200, seed, 0, dots);
  AddRandom(t, type, 4 * k, 100, seed, 1, dots);
}

using Launcher = void (*)(const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*, int, int);

template <int kType>
void LaunchMma(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d, int n,
               int K) {
  MmaKernel<kType><<<n, 32>>>(a, b, c, d, K);
}
template <int kType>
void LaunchWgmma(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d, int n,
                 int K) {
  WgmmaKernel<kType><<<n, 128>>>(a, b, c, d, K);
}

// Runs dots (grouped by K) through `launch`; false on a CUDA error.
bool RunDots(Launcher launch, const std::vector<Dot>& dots, std::vector<uint32_t>* d) {
  d->assign(dots.size(), 0);
  size_t i = 0;
  while (i < dots.size()) {
    size_t j = i;
    const size_t K = dots[i].a.size();
    while (j < dots.size() && dots[j].a.size() == K) ++j;
    const size_t n = j - i;
    std::vector<uint32_t> ha(n * K), hb(n * K), hc(n);
    for (size_t x = 0; x < n; ++x) {
      std::memcpy(&ha[x * K], dots[i + x].a.data(), K * 4);
      std::memcpy(&hb[x * K], dots[i + x].b.data(), K * 4);
      hc[x] = dots[i + x].c;
    }
    uint32_t *da, *db, *dc, *dd;
    if (!CUDA_OK(cudaMalloc(&da, n * K * 4)) || !CUDA_OK(cudaMalloc(&db, n * K * 4)) ||
        !CUDA_OK(cudaMalloc(&dc, n * 4)) || !CUDA_OK(cudaMalloc(&dd, n * 4))) {
      return false;
    }
    bool ok = CUDA_OK(cudaMemcpy(da, ha.data(), n * K * 4, cudaMemcpyHostToDevice)) &&
              CUDA_OK(cudaMemcpy(db, hb.data(), n * K * 4, cudaMemcpyHostToDevice)) &&
              CUDA_OK(cudaMemcpy(dc, hc.data(), n * 4, cudaMemcpyHostToDevice));
    if (ok) {
      launch(da, db, dc, dd, static_cast<int>(n), static_cast<int>(K));
      ok = CUDA_OK(cudaGetLastError()) && CUDA_OK(cudaDeviceSynchronize()) &&
           CUDA_OK(cudaMemcpy(d->data() + i, dd, n * 4, cudaMemcpyDeviceToHost));
    }
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    cudaFree(dd);
    if (!ok) return false;
    i = j;
  }
  return true;
}

float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The preset a recording should match, from the device's compute capability (SOURCES.md §1).
void ChooseExpect(const Device& dev, bool wgmma, Type type, FileSpec* spec) {
  static const char* h100[] = {"nvidia-h100-fp16", "nvidia-h100-bf16", "nvidia-h100-tf32",
                               "nvidia-h100-fp8e4m3", "nvidia-h100-fp8e5m2"};
  static const char* a100[] = {"nvidia-a100-fp16", "nvidia-a100-bf16", "nvidia-a100-tf32", "",
                               ""};
  static const char* ada[] = {"", "", "", "nvidia-ada-fp8e4m3", "nvidia-ada-fp8e5m2"};
  // mma.sync on sm_90, recorded on an H200 (SOURCES.md 1b): f16/bf16/tf32 run the wgmma
  // datapath; FP8 is another one (two interleaved halves, c added after the instruction).
  static const char* h100_mma[] = {"nvidia-h100-fp16", "nvidia-h100-bf16", "nvidia-h100-tf32",
                                   "nvidia-h100-fp8e4m3-mmasync", "nvidia-h100-fp8e5m2-mmasync"};
  const int cc = dev.major * 10 + dev.minor;
  spec->expect = "record-only";
  if (wgmma && cc == 90) {
    spec->expect = h100[type];  // H100 and H200 are both GH100 (sm_90).
  } else if (!wgmma && cc == 90) {
    spec->expect = h100_mma[type];
  } else if (!wgmma && cc == 80 && a100[type][0]) {
    spec->expect = a100[type];
  } else if (!wgmma && cc == 89 && ada[type][0]) {
    spec->expect = ada[type];
  }
  if (spec->expect == "record-only") {
    std::string cands;
    for (const char* p : {a100[type], ada[type], h100[type], h100_mma[type]}) {
      if (p[0] && (cands + " ").find(std::string(p) + " ") == std::string::npos) {
        cands += (cands.empty() ? "" : " ") + std::string(p);
      }
    }
    spec->candidates = cands;
    spec->note = "mma.sync on this architecture: which preset applies is unknown; recorded only, "
                 "the replay reports agreement with each candidate.";
  }
}

// dry_run: no GPU; the cases are written with d = 0 and expect = record-only, to check the file
// format against replay_test on any machine (FPCONFORM_REPLAY_DATA_DIR=<dir> replay_test).
int ProbeInstruction(const std::string& out_dir, const Device& dev, bool wgmma, Type type,
                     Launcher launch, uint64_t seed, bool dry_run = false) {
  const TypeInfo& t = kTypes[type];
  const int k = t.mma_k;
  FileSpec spec;
  spec.a_format = spec.b_format = t.format;
  spec.a_digits = t.bytes * 2;
  if (wgmma) {
    spec.instruction = "wgmma.mma_async.sync.aligned.m64n8k" + std::to_string(k) + ".f32." +
                       t.ptx + "." + t.ptx + " (A registers, B shared no-swizzle)";
    spec.short_name = "wgmma-m64n8k" + std::to_string(k) + "-" + t.tag;
  } else {
    spec.instruction = std::string("mma.sync.aligned.m16n8k") + std::to_string(k) +
                       ".row.col.f32." + t.ptx + "." + t.ptx + ".f32";
    spec.short_name = "mma-m16n8k" + std::to_string(k) + "-" + t.tag;
  }
  ChooseExpect(dev, wgmma, type, &spec);
  if (dry_run) {
    std::vector<Dot> dots;
    AddFasi(t, k, &dots);
    AddCases(t, type, k, seed, &dots);
    if (spec.expect != "record-only") spec.candidates = spec.expect;
    spec.expect = "record-only";
    spec.note = "DRY RUN: no GPU, d values are zero placeholders, not measurements.";
    return WriteFile(out_dir, dev, spec, dots, std::vector<uint32_t>(dots.size(), 0), seed,
                     "not applicable (dry run)") ? 0 : 1;
  }

  std::vector<double> exact;
  std::vector<Dot> check = CheckDots(t, 2 * k, seed, type, &exact);
  std::vector<uint32_t> d;
  if (!RunDots(launch, check, &d)) {
    std::printf("%s: CUDA error (see stderr), skipped\n", spec.short_name.c_str());
    return 1;
  }
  int bad = 0;
  for (size_t i = 0; i < d.size(); ++i) bad += BitsFloat(d[i]) != static_cast<float>(exact[i]);
  if (bad) {
    const std::string msg = "failed (" + std::to_string(bad) + "/64 small-integer dots wrong)";
    mkdir((out_dir + "/failed").c_str(), 0755);
    WriteFile(out_dir + "/failed", dev, spec, check, {}, seed, msg);
    return 1;
  }
  std::vector<Dot> dots;
  AddFasi(t, k, &dots);
  AddCases(t, type, k, seed, &dots);
  if (!RunDots(launch, dots, &d)) {
    std::printf("%s: CUDA error (see stderr), skipped\n", spec.short_name.c_str());
    return 1;
  }
  return WriteFile(out_dir, dev, spec, dots, d, seed, "passed (64/64 small-integer dots exact)")
             ? 0
             : 1;
}

// ---------------------------------------------------------------------------------------------
// cuBLAS: 16x16 outputs, column-major, D = A*B + C; the 16 diagonal entries are recorded (each is
// the dot of row i of A and column i of B with c = C[i][i]).

bool CublasBf16(const std::string& out_dir, const Device& dev, uint64_t seed) {
  const TypeInfo& t = kTypes[kBF16];
  const int n = 16;
  std::vector<Dot> all;
  std::vector<uint32_t> dall;
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return false;
  bool ok = true;
  for (int K : {64, 256, 1024}) {
    for (int rep = 0; rep < 4 && ok; ++rep) {
      Rng rng(DeriveSeed(seed, {7, static_cast<uint64_t>(K), static_cast<uint64_t>(rep)}));
      // A: n x K column-major (lda = n); B: K x n column-major (ldb = K); C: n x n.
      std::vector<uint16_t> ha(n * K), hb(K * n);
      std::vector<float> hc(n * n);
      for (auto& x : ha) x = static_cast<uint16_t>(RandomBits(rng, t, -3, 3));
      for (auto& x : hb) x = static_cast<uint16_t>(RandomBits(rng, t, -3, 3));
      for (auto& x : hc) x = BitsFloat(RandomBits(rng, kTypes[kTF32], -2, 5));
      void *da, *db, *dc;
      ok = CUDA_OK(cudaMalloc(&da, ha.size() * 2)) && CUDA_OK(cudaMalloc(&db, hb.size() * 2)) &&
           CUDA_OK(cudaMalloc(&dc, hc.size() * 4)) &&
           CUDA_OK(cudaMemcpy(da, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice)) &&
           CUDA_OK(cudaMemcpy(db, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice)) &&
           CUDA_OK(cudaMemcpy(dc, hc.data(), hc.size() * 4, cudaMemcpyHostToDevice));
      const float alpha = 1, beta = 1;
      if (ok) {
        const cublasStatus_t st = cublasGemmEx(
            h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, K, &alpha, da, CUDA_R_16BF, n, db, CUDA_R_16BF, K,
            &beta, dc, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (st != CUBLAS_STATUS_SUCCESS) {
          std::fprintf(stderr, "cublasGemmEx: status %d\n", static_cast<int>(st));
          ok = false;
        }
      }
      std::vector<float> hd(n * n);
      ok = ok && CUDA_OK(cudaDeviceSynchronize()) &&
           CUDA_OK(cudaMemcpy(hd.data(), dc, hd.size() * 4, cudaMemcpyDeviceToHost));
      cudaFree(da);
      cudaFree(db);
      cudaFree(dc);
      for (int i = 0; ok && i < n; ++i) {
        Dot dot;
        dot.tag = "cublasGemmEx 16x16xK, diagonal, K = " + std::to_string(K);
        for (int kk = 0; kk < K; ++kk) {
          dot.a.push_back(ha[i + kk * n]);
          dot.b.push_back(hb[kk + i * K]);
        }
        dot.c = FloatBits(hc[i + i * n]);
        all.push_back(dot);
        dall.push_back(FloatBits(hd[i + i * n]));
      }
    }
  }
  cublasDestroy(h);
  if (!ok) return false;
  FileSpec spec;
  spec.instruction = "cublasGemmEx bf16 x bf16 -> f32, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT";
  spec.short_name = "cublas-gemmex-bf16";
  spec.a_format = spec.b_format = "bfloat16";
  spec.a_digits = 4;
  // sm_90: the preset written from the H200 recording (16x16xK, K <= 1024; cuBLAS picks its
  // kernel per shape, so other shapes or GPUs are recorded only).
  if (dev.major * 10 + dev.minor == 90) {
    spec.expect = "nvidia-h100-bf16-cublas";
  } else {
    spec.expect = "record-only";
    spec.candidates = "nvidia-a100-bf16 nvidia-h100-bf16 nvidia-h100-bf16-cublas nvidia-b200-bf16";
    spec.note = "cuBLAS picks the kernel (tile order, split-K) itself: recorded only.";
  }
  return WriteFile(out_dir, dev, spec, all, dall, seed, "not applicable (library call)");
}

// Scales of one cuBLASLt FP8 GEMM: none (both empty), one value each
// (CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F), or one per row of op(A) and per column of B
// (OUTER_VEC_32F: "each (i, j)-th element of product of A and B is multiplied by i-th element of
// A scale and j-th element of B scale", cublasLt.h).
struct LtScales {
  std::vector<float> a, b;
  bool outer = false;
};

// What one cuBLASLt call gave: ok, or the CUDA/cuBLAS failure (a cuBLAS status, or -1 for a CUDA
// error), with unsupported = true where cuBLASLt found no algorithm or refused the scale mode (a
// property of this cuBLAS and GPU, not a probe failure).
struct LtResult {
  bool ok = false;
  bool unsupported = false;
};

// One cuBLASLt e4m3 x e4m3 -> f32 GEMM, CUBLAS_COMPUTE_32F, TN, alpha = beta = 1: A stored K x m
// column-major (column i is row i of op(A)), B K x n column-major, C and D m x n column-major
// float32. hd receives D.
LtResult LtFp8Matmul(cublasLtHandle_t lt, void* workspace, size_t ws_size, int m, int n, int K,
                     const std::vector<uint8_t>& ha, const std::vector<uint8_t>& hb,
                     const std::vector<float>& hc, bool fast, const LtScales& scales,
                     std::vector<float>* hd) {
  LtResult r;
  void *da = nullptr, *db = nullptr, *dc = nullptr, *dd = nullptr, *dsa = nullptr, *dsb = nullptr;
  const bool scaled = !scales.a.empty();
  bool ok = CUDA_OK(cudaMalloc(&da, ha.size())) && CUDA_OK(cudaMalloc(&db, hb.size())) &&
            CUDA_OK(cudaMalloc(&dc, hc.size() * 4)) && CUDA_OK(cudaMalloc(&dd, hc.size() * 4)) &&
            CUDA_OK(cudaMemcpy(da, ha.data(), ha.size(), cudaMemcpyHostToDevice)) &&
            CUDA_OK(cudaMemcpy(db, hb.data(), hb.size(), cudaMemcpyHostToDevice)) &&
            CUDA_OK(cudaMemcpy(dc, hc.data(), hc.size() * 4, cudaMemcpyHostToDevice));
  if (ok && scaled) {
    ok = CUDA_OK(cudaMalloc(&dsa, scales.a.size() * 4)) &&
         CUDA_OK(cudaMalloc(&dsb, scales.b.size() * 4)) &&
         CUDA_OK(cudaMemcpy(dsa, scales.a.data(), scales.a.size() * 4, cudaMemcpyHostToDevice)) &&
         CUDA_OK(cudaMemcpy(dsb, scales.b.data(), scales.b.size() * 4, cudaMemcpyHostToDevice));
  }
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
  auto chk = [&](cublasStatus_t s, const char* what) {
    if (st == CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "%s: status %d\n", what, static_cast<int>(s));
      st = s;
    }
  };
  if (ok) {
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    const int8_t fast_accum = fast ? 1 : 0;
    chk(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
    chk(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
    chk(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
    chk(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum,
                                       sizeof fast_accum), "FAST_ACCUM");
    if (scaled) {
      chk(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &dsa,
                                         sizeof dsa), "A_SCALE_POINTER");
      chk(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &dsb,
                                         sizeof dsb), "B_SCALE_POINTER");
      if (scales.outer) {
        const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
        chk(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode,
                                           sizeof mode), "A_SCALE_MODE");
        chk(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode,
                                           sizeof mode), "B_SCALE_MODE");
      }
    }
    chk(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, K, m, K), "layout A");
    chk(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, K, n, K), "layout B");
    chk(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m), "layout C");
    cublasLtMatmulPreference_t pref = nullptr;
    chk(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate");
    chk(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &ws_size, sizeof ws_size), "pref workspace");
    cublasLtMatmulHeuristicResult_t heur{};
    int found = 0;
    chk(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur, &found),
        "AlgoGetHeuristic");
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
      std::fprintf(stderr, "cublasLt: no fp8 algorithm found (status %d)\n", static_cast<int>(st));
      r.unsupported = true;
      if (st == CUBLAS_STATUS_SUCCESS) st = CUBLAS_STATUS_NOT_SUPPORTED;
    }
    const float alpha = 1, beta = 1;
    if (st == CUBLAS_STATUS_SUCCESS) {
      chk(cublasLtMatmul(lt, op, &alpha, da, la, db, lb, &beta, dc, lc, dd, lc, &heur.algo,
                         workspace, ws_size, 0), "cublasLtMatmul");
    }
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    ok = st == CUBLAS_STATUS_SUCCESS;
  }
  if (la) cublasLtMatrixLayoutDestroy(la);
  if (lb) cublasLtMatrixLayoutDestroy(lb);
  if (lc) cublasLtMatrixLayoutDestroy(lc);
  if (op) cublasLtMatmulDescDestroy(op);
  hd->assign(hc.size(), 0.0f);
  ok = ok && CUDA_OK(cudaDeviceSynchronize()) &&
       CUDA_OK(cudaMemcpy(hd->data(), dd, hd->size() * 4, cudaMemcpyDeviceToHost));
  for (void* p : {da, db, dc, dd, dsa, dsb}) {
    if (p) cudaFree(p);
  }
  r.ok = ok;
  return r;
}

bool CublasLtFp8(const std::string& out_dir, const Device& dev, uint64_t seed, bool fast) {
  const TypeInfo& t = kTypes[kE4M3];
  const int n = 16;
  cublasLtHandle_t lt;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) return false;
  void* workspace = nullptr;
  const size_t ws_size = 32 << 20;
  bool ok = CUDA_OK(cudaMalloc(&workspace, ws_size));
  std::vector<Dot> all;
  std::vector<uint32_t> dall;
  for (int K : {64, 256, 1024}) {
    for (int rep = 0; rep < 4 && ok; ++rep) {
      Rng rng(DeriveSeed(seed, {8, static_cast<uint64_t>(K), static_cast<uint64_t>(rep)}));
      // TN: A stored K x n column-major (op T gives n x K), B K x n column-major, C/D n x n f32.
      std::vector<uint8_t> ha(K * n), hb(K * n);
      std::vector<float> hc(n * n), hd;
      for (auto& x : ha) x = static_cast<uint8_t>(RandomBits(rng, t, -3, 3));
      for (auto& x : hb) x = static_cast<uint8_t>(RandomBits(rng, t, -3, 3));
      for (auto& x : hc) x = BitsFloat(RandomBits(rng, kTypes[kTF32], -2, 5));
      ok = LtFp8Matmul(lt, workspace, ws_size, n, n, K, ha, hb, hc, fast, LtScales{}, &hd).ok;
      for (int i = 0; ok && i < n; ++i) {
        Dot dot;
        dot.tag = std::string("cublasLtMatmul e4m3 TN 16x16xK, diagonal, K = ") +
                  std::to_string(K);
        for (int kk = 0; kk < K; ++kk) {
          dot.a.push_back(ha[kk + i * K]);  // Column i of the stored A = row i of op(A).
          dot.b.push_back(hb[kk + i * K]);
        }
        dot.c = FloatBits(hc[i + i * n]);
        all.push_back(dot);
        dall.push_back(FloatBits(hd[i + i * n]));
      }
    }
  }
  cudaFree(workspace);
  cublasLtDestroy(lt);
  if (!ok) return false;
  FileSpec spec;
  spec.instruction = std::string("cublasLtMatmul e4m3 x e4m3 -> f32, CUBLAS_COMPUTE_32F, TN, ") +
                     (fast ? "CUBLASLT_MATMUL_DESC_FAST_ACCUM = 1" : "FAST_ACCUM = 0");
  spec.short_name = std::string("cublaslt-e4m3") + (fast ? "-fastaccum" : "");
  spec.a_format = spec.b_format = "float8_e4m3fn";
  spec.a_digits = 2;
  const std::string lt_preset =
      fast ? "nvidia-h100-fp8e4m3-cublaslt-fastaccum" : "nvidia-h100-fp8e4m3-cublaslt";
  if (dev.major * 10 + dev.minor == 90) {
    spec.expect = lt_preset;  // Written from the H200 recording (16x16xK, K <= 1024).
  } else {
    spec.expect = "record-only";
    spec.candidates = "nvidia-h100-fp8e4m3 nvidia-h100-fp8e4m3-promote128 " + lt_preset +
                      " nvidia-ada-fp8e4m3 nvidia-b200-fp8e4m3";
    spec.note = "cuBLASLt picks the kernel itself: recorded only.";
  }
  return WriteFile(out_dir, dev, spec, all, dall, seed, "not applicable (library call)");
}

// ---------------------------------------------------------------------------------------------
// Scaled cuBLASLt FP8 GEMMs with C, written as tensor files for `fpconform audit matmul` (the
// replay format has no scales): the recording that settles `epilogue.c = "after_scale"` of the
// cuBLASLt presets (accumulation/models/SOURCES.md): is D = fl32(fl32(s_a s_b) acc + C) one
// rounding, fl32(fl32(s_a s_b acc) + C) two, or something else. check_scaled.sh audits them.

// A .npy file (format version 1.0): descr '<V1' (numpy's own descr for an ml_dtypes float8 array;
// the audit takes the format from --a-dtype) or '<f4', in Fortran (column-major) order where the
// data are column-major.
bool WriteNpy(const std::string& path, const char* descr, bool fortran,
              const std::vector<int>& shape, const void* data, size_t bytes) {
  std::string dims;  // As numpy writes it: "(64,)", "(64, 256)".
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': " +
                       (fortran ? "True" : "False") + ", 'shape': (" + dims + "), }";
  const size_t unpadded = 10 + header.size() + 1;  // Magic, version, length, header, '\n'.
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return false;
  }
  const uint16_t len = static_cast<uint16_t>(header.size());
  const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  bool ok = std::fwrite(magic, 1, 8, f) == 8 && std::fwrite(&len, 2, 1, f) == 1 &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            std::fwrite(data, 1, bytes, f) == bytes;
  ok = std::fclose(f) == 0 && ok;
  if (!ok) std::fprintf(stderr, "cannot write %s\n", path.c_str());
  return ok;
}

// A float32 in [1, 4) with a full 24-bit significand: a scale whose products round.
float RandomScale(Rng& rng) {
  return BitsFloat(0x3f800000u + static_cast<uint32_t>(rng.Next() % (2u << 23)));
}

// Records, for scale modes tensor (one value each) and row/column (OUTER_VEC_32F), FAST_ACCUM 0
// and 1, K = 256 and 1024, one 64 x 64 output: OUT_DIR/lt_scaled/<case>/{a,b,c,d,scale_a,
// scale_b}.npy and a line per case in OUT_DIR/lt_scaled/cases.txt ("<case> <preset>"). A mode this
// cuBLAS or GPU does not offer is said and skipped. With dry_run (no GPU), D is the scaled
// product plus C computed in long double from the same column-major buffers the GPU would get,
// rounded to float32 (no model of any GPU): auditing it against the preset must explain
// every element (within bound), which checks the files' layout; it is no recording.
bool CublasLtFp8Scaled(const std::string& out_dir, const Device& dev, uint64_t seed,
                       bool dry_run) {
  const TypeInfo& t = kTypes[kE4M3];
  const int m = 64, n = 64;
  const std::string dir = out_dir + "/lt_scaled";
  mkdir(dir.c_str(), 0755);
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  const size_t ws_size = 32 << 20;
  if (!dry_run && (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS ||
                   !CUDA_OK(cudaMalloc(&workspace, ws_size)))) {
    return false;
  }
  std::string cases;
  bool ok = true;
  for (int outer = 0; outer <= 1 && ok; ++outer) {
    for (int fast = 0; fast <= 1 && ok; ++fast) {
      for (int K : {256, 1024}) {
        Rng rng(DeriveSeed(seed, {9, static_cast<uint64_t>(outer), static_cast<uint64_t>(fast),
                                  static_cast<uint64_t>(K)}));
        std::vector<uint8_t> ha(static_cast<size_t>(K) * m), hb(static_cast<size_t>(K) * n);
        std::vector<float> hc(m * n), hd;
        for (auto& x : ha) x = static_cast<uint8_t>(RandomBits(rng, t, -3, 3));
        for (auto& x : hb) x = static_cast<uint8_t>(RandomBits(rng, t, -3, 3));
        for (auto& x : hc) x = BitsFloat(RandomBits(rng, kTypes[kTF32], -2, 5));
        LtScales scales;
        scales.outer = outer == 1;
        scales.a.resize(outer ? m : 1);
        scales.b.resize(outer ? n : 1);
        for (auto& x : scales.a) x = RandomScale(rng);
        for (auto& x : scales.b) x = RandomScale(rng);
        const std::string name = std::string(outer ? "rowcol" : "tensor") +
                                 (fast ? "-fastaccum" : "") + "-k" + std::to_string(K);
        if (dry_run) {
          hd.resize(hc.size());
          for (int j = 0; j < n; ++j) {
            for (int i = 0; i < m; ++i) {
              double acc = 0;  // Exact: these products are multiples of 2^-12 below 2^8.
              for (int k = 0; k < K; ++k) {
                acc += DecodeBits(t, ha[k + static_cast<size_t>(i) * K]) *
                       DecodeBits(t, hb[k + static_cast<size_t>(j) * K]);
              }
              const long double s = static_cast<long double>(scales.a[outer ? i : 0]) *
                                    scales.b[outer ? j : 0];
              hd[i + j * m] = static_cast<float>(s * acc + hc[i + j * m]);
            }
          }
        } else {
          const LtResult r =
              LtFp8Matmul(lt, workspace, ws_size, m, n, K, ha, hb, hc, fast, scales, &hd);
          if (r.unsupported) {
            std::printf("cublasLt scaled %s: not offered by this cuBLAS/GPU (skipped)\n",
                        name.c_str());
            continue;
          }
          if (!r.ok) {
            ok = false;
            break;
          }
        }
        const std::string c = dir + "/" + name;
        mkdir(c.c_str(), 0755);
        // op(A) row-major (m, K) is the stored A's bytes; B, C and D are column-major.
        ok = WriteNpy(c + "/a.npy", "<V1", false, {m, K}, ha.data(), ha.size()) &&
             WriteNpy(c + "/b.npy", "<V1", true, {K, n}, hb.data(), hb.size()) &&
             WriteNpy(c + "/c.npy", "<f4", true, {m, n}, hc.data(), hc.size() * 4) &&
             WriteNpy(c + "/d.npy", "<f4", true, {m, n}, hd.data(), hd.size() * 4) &&
             WriteNpy(c + "/scale_a.npy", "<f4", false, {static_cast<int>(scales.a.size())},
                      scales.a.data(), scales.a.size() * 4) &&
             WriteNpy(c + "/scale_b.npy", "<f4", false, {static_cast<int>(scales.b.size())},
                      scales.b.data(), scales.b.size() * 4);
        cases += name + (fast ? " nvidia-h100-fp8e4m3-cublaslt-fastaccum\n"
                              : " nvidia-h100-fp8e4m3-cublaslt\n");
        std::printf("wrote %s (%dx%dx%d, %s)\n", c.c_str(), m, n, K,
                    dry_run ? "dry run: D computed on the host, no GPU" : dev.name.c_str());
      }
    }
  }
  if (workspace) cudaFree(workspace);
  if (lt) cublasLtDestroy(lt);
  FILE* f = std::fopen((dir + "/cases.txt").c_str(), "w");
  if (!f) return false;
  std::fprintf(f, "# <case> <preset>: cuBLASLt e4m3 TN, alpha = beta = 1, %s, seed %llu\n",
               dry_run ? "DRY RUN (D computed on the host, no GPU)" : dev.name.c_str(),
               static_cast<unsigned long long>(seed));
  std::fputs(cases.c_str(), f);
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: %s OUT_DIR [SEED [all|mma|wgmma|cublas|lt-scaled|dry-run]]\n",
                 argv[0]);
    return 2;
  }
  const std::string out_dir = argv[1];
  const uint64_t seed = argc >= 3 ? std::strtoull(argv[2], nullptr, 10) : 2026;
  const std::string part = argc == 4 ? argv[3] : "all";
  const bool do_mma = part == "all" || part == "mma";
  const bool do_wgmma = part == "all" || part == "wgmma";
  const bool do_cublas = part == "all" || part == "cublas";
  const bool do_scaled = part == "all" || part == "lt-scaled";
  mkdir(out_dir.c_str(), 0755);
  if (part == "dry-run") {
    Device dry;
    dry.name = "dry-run no GPU";
    dry.major = 9;
    int failures = 0;
    for (int ty = 0; ty < kNumTypes; ++ty) {
      failures += ProbeInstruction(out_dir, dry, false, static_cast<Type>(ty), nullptr, seed, true);
      failures += ProbeInstruction(out_dir, dry, true, static_cast<Type>(ty), nullptr, seed, true);
    }
    if (!CublasLtFp8Scaled(out_dir, dry, seed, true)) ++failures;
    return failures == 0 ? 0 : 1;
  }
  Device dev;
  cudaDeviceProp prop;
  if (!CUDA_OK(cudaGetDeviceProperties(&prop, 0))) return 1;
  dev.name = prop.name;
  dev.major = prop.major;
  dev.minor = prop.minor;
  cudaDriverGetVersion(&dev.driver);
  cudaRuntimeGetVersion(&dev.runtime);
  std::printf("device %s, sm_%d%d, driver %d, runtime %d\n", dev.name.c_str(), dev.major,
              dev.minor, dev.driver, dev.runtime);
  const int cc = dev.major * 10 + dev.minor;
  int failures = 0;
  if (do_mma && cc >= 80) {
    failures += ProbeInstruction(out_dir, dev, false, kF16, LaunchMma<kF16>, seed);
    failures += ProbeInstruction(out_dir, dev, false, kBF16, LaunchMma<kBF16>, seed);
    failures += ProbeInstruction(out_dir, dev, false, kTF32, LaunchMma<kTF32>, seed);
  }
  if (do_mma && cc >= 89) {
    failures += ProbeInstruction(out_dir, dev, false, kE4M3, LaunchMma<kE4M3>, seed);
    failures += ProbeInstruction(out_dir, dev, false, kE5M2, LaunchMma<kE5M2>, seed);
  }
  if (do_wgmma && cc == 90) {
    const Launcher w[kNumTypes] = {LaunchWgmma<kF16>, LaunchWgmma<kBF16>, LaunchWgmma<kTF32>,
                                   LaunchWgmma<kE4M3>, LaunchWgmma<kE5M2>};
    for (int ty = 0; ty < kNumTypes; ++ty) {
      failures += ProbeInstruction(out_dir, dev, true, static_cast<Type>(ty), w[ty], seed);
    }
    int compiled = 0;
    cudaMemcpyFromSymbol(&compiled, g_wgmma_compiled, sizeof compiled);
    if (!compiled) std::printf("warning: wgmma kernels ran without sm_90a code\n");
  }
  if (do_cublas && !CublasBf16(out_dir, dev, seed)) {
    std::printf("cublasGemmEx bf16: failed (see stderr)\n");
    ++failures;
  }
  if (do_cublas && cc >= 89) {
    for (bool fast : {false, true}) {
      if (!CublasLtFp8(out_dir, dev, seed, fast)) {
        std::printf("cublasLt fp8 (fast=%d): failed (see stderr)\n", fast);
        ++failures;
      }
    }
  }
  if (do_scaled && cc >= 89 && !CublasLtFp8Scaled(out_dir, dev, seed, false)) {
    std::printf("cublasLt fp8 with scales and C: failed (see stderr)\n");
    ++failures;
  }
  std::printf("%d instruction(s) or library call(s) failed\n", failures);
  return failures == 0 ? 0 : 1;
}
