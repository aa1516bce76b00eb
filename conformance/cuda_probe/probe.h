// The CUDA probe's shared host pieces (input types, container bits, CUDA error checks, replay
// files) and the entry points of its parts; probe.cu describes the program and holds main().
//   probe_common.cu:       the definitions of the shared host pieces;
//   probe_instructions.cu: mma.sync and wgmma (kernels, cases, ProbeInstruction);
//   probe_cublas.cu:       cuBLAS and cuBLASLt (replay files, and the scaled .npy files).
#ifndef FPCONFORM_CONFORMANCE_CUDA_PROBE_PROBE_H_
#define FPCONFORM_CONFORMANCE_CUDA_PROBE_PROBE_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cases/pinned_random.h"

namespace fpconform::cuda_probe {

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

extern const TypeInfo kTypes[kNumTypes];  // One row per Type (probe_common.cu).

// Container bits and their values (probe_common.cu, each with its contract).
bool EncodeExact(double v, const TypeInfo& t, uint32_t* bits);
uint32_t RandomBits(Rng& rng, const TypeInfo& t, int lo, int hi);
double DecodeBits(const TypeInfo& t, uint32_t bits);
uint32_t FloatBits(float f);
float BitsFloat(uint32_t u);

// ---------------------------------------------------------------------------------------------
// Host side (probe_common.cu).

// CUDA_OK(expr): true when expr returned cudaSuccess; otherwise prints file:line, expr and the
// error on stderr and returns false.
#define CUDA_OK(expr) CheckCuda((expr), #expr, __FILE__, __LINE__)
bool CheckCuda(cudaError_t e, const char* what, const char* file, int line);

struct Dot {
  std::vector<uint32_t> a, b;
  uint32_t c = 0;
  std::string tag;  // Case class, written as a comment before the first line of each class.
};

struct Device {
  std::string name;
  int major = 0, minor = 0, driver = 0, runtime = 0;
};

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
               const std::string& check);

// ---------------------------------------------------------------------------------------------
// The parts, called by main() (probe.cu).

// mma.sync and wgmma (probe_instructions.cu). LaunchMma and LaunchWgmma are instantiated there
// for every Type.
using Launcher = void (*)(const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*, int, int);
template <int kType>
void LaunchMma(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d, int n, int K);
template <int kType>
void LaunchWgmma(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d, int n,
                 int K);
int ProbeInstruction(const std::string& out_dir, const Device& dev, bool wgmma, Type type,
                     Launcher launch, uint64_t seed, bool dry_run = false);
// Whether the wgmma kernels that ran held sm_90a code (read back from the device).
bool WgmmaCompiled();

// cuBLAS and cuBLASLt (probe_cublas.cu).
bool CublasBf16(const std::string& out_dir, const Device& dev, uint64_t seed);
bool CublasLtFp8(const std::string& out_dir, const Device& dev, uint64_t seed, bool fast);
bool CublasLtFp8Scaled(const std::string& out_dir, const Device& dev, uint64_t seed,
                       bool dry_run);

}  // namespace fpconform::cuda_probe

#endif  // FPCONFORM_CONFORMANCE_CUDA_PROBE_PROBE_H_
