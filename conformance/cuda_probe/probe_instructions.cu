// The CUDA probe's tensor-core instruction part (probe.cu header): mma.sync and wgmma kernels,
// the cases they run, the layout self-check, and ProbeInstruction, which writes one replay file
// per (instruction, type).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "conformance/cuda_probe/probe.h"

namespace fpconform::cuda_probe {
namespace {

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

// One mma.sync / wgmma.mma_async per Type: the instruction text differs only in its shape and
// types (an asm template must be a string literal, so the macros paste the literal in).
// Operands: d (4 f32 accumulators, read and written), a (4 registers), then b (2 registers) or
// B's shared-memory descriptor; wgmma's scale-d predicate p is true (accumulate), its A and B
// scales 1 and, where the instruction has one (f16, bf16), its B transpose 0.
#define FPCONFORM_MMA(SHAPE_TYPES)                                                          \
  asm volatile("mma.sync.aligned." SHAPE_TYPES " {%0,%1,%2,%3}, {%4,%5,%6,%7}, "            \
               "{%8,%9}, {%0,%1,%2,%3};\n"                                                  \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                             \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
#define FPCONFORM_WGMMA(SHAPE_TYPES, TRANSPOSE)                                             \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                   \
               "wgmma.mma_async.sync.aligned." SHAPE_TYPES " {%0,%1,%2,%3}, {%4,%5,%6,%7}, " \
               "%8, p, 1, 1" TRANSPOSE ";\n}\n"                                              \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                             \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc))

template <int kType>
__device__ void MmaStep(float d[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (kType == kF16) {
    FPCONFORM_MMA("m16n8k16.row.col.f32.f16.f16.f32");
  } else if constexpr (kType == kBF16) {
    FPCONFORM_MMA("m16n8k16.row.col.f32.bf16.bf16.f32");
  } else if constexpr (kType == kTF32) {
    FPCONFORM_MMA("m16n8k8.row.col.f32.tf32.tf32.f32");
  }
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (kType == kE4M3) {
    FPCONFORM_MMA("m16n8k32.row.col.f32.e4m3.e4m3.f32");
  } else if constexpr (kType == kE5M2) {
    FPCONFORM_MMA("m16n8k32.row.col.f32.e5m2.e5m2.f32");
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
    FPCONFORM_WGMMA("m64n8k16.f32.f16.f16", ", 0");
  } else if constexpr (kType == kBF16) {
    FPCONFORM_WGMMA("m64n8k16.f32.bf16.bf16", ", 0");
  } else if constexpr (kType == kTF32) {
    FPCONFORM_WGMMA("m64n8k8.f32.tf32.tf32", "");
  } else if constexpr (kType == kE4M3) {
    FPCONFORM_WGMMA("m64n8k32.f32.e4m3.e4m3", "");
  } else if constexpr (kType == kE5M2) {
    FPCONFORM_WGMMA("m64n8k32.f32.e5m2.e5m2", "");
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#else
  (void)d;
  (void)a;
  (void)desc;
#endif
}
#undef FPCONFORM_MMA
#undef FPCONFORM_WGMMA

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

}  // namespace

// dry_run: no GPU; the cases are written with d = 0 and expect = record-only, to check the file
// format against replay_test on any machine (FPCONFORM_REPLAY_DATA_DIR=<dir> replay_test).
int ProbeInstruction(const std::string& out_dir, const Device& dev, bool wgmma, Type type,
                     Launcher launch, uint64_t seed, bool dry_run) {
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

// g_wgmma_compiled, read back after the wgmma kernels ran.
bool WgmmaCompiled() {
  int compiled = 0;
  cudaMemcpyFromSymbol(&compiled, g_wgmma_compiled, sizeof compiled);
  return compiled != 0;
}

// The kernel launchers main() passes to ProbeInstruction, instantiated for every Type.
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
// Both launchers for one Type (probe.h declares them; main() takes their addresses).
#define FPCONFORM_LAUNCHERS(TYPE)                                                           \
  template void LaunchMma<TYPE>(const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*, \
                                int, int);                                                  \
  template void LaunchWgmma<TYPE>(const uint32_t*, const uint32_t*, const uint32_t*,         \
                                  uint32_t*, int, int);
FPCONFORM_LAUNCHERS(kF16)
FPCONFORM_LAUNCHERS(kBF16)
FPCONFORM_LAUNCHERS(kTF32)
FPCONFORM_LAUNCHERS(kE4M3)
FPCONFORM_LAUNCHERS(kE5M2)
#undef FPCONFORM_LAUNCHERS

}  // namespace fpconform::cuda_probe
