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
//
// Files: probe.h (the shared host pieces and the parts' entry points), probe_common.cu (the shared
// host pieces), probe_instructions.cu (mma.sync and wgmma), probe_cublas.cu (cuBLAS and
// cuBLASLt, lt-scaled included), this file (main).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>

#include "conformance/cuda_probe/probe.h"

int main(int argc, char** argv) {
  using namespace fpconform::cuda_probe;  // NOLINT: the probe's parts (probe.h).
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
    if (!WgmmaCompiled()) std::printf("warning: wgmma kernels ran without sm_90a code\n");
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
