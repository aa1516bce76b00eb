// The one place that decides which instruction set the fast paths use. Every component with a
// CPU-dispatched path asks ActiveIsa() (formats/fast_convert: AVX-512 / AVX2 / portable loops and
// F16C; accumulation/fast_eval: the AVX2+FMA host kernels; oracles/exact_sum: the host-double
// buckets), so one setting moves all of them together, and a report can be produced on any
// level this CPU has and compared byte for byte (cli/isa_identity_test.sh).
//
// Levels (x86-64; every other machine has only kPortable):
//   kPortable  the code every CPU runs: no AVX, no F16C, no host-double shortcuts (the paths a
//              non-x86 build takes);
//   kAvx2      AVX2 and FMA (the vector part of x86-64-v3), with F16C where the CPU has it;
//   kAvx512    kAvx2 plus AVX-512 F, BW, VL and DQ (x86-64-v4).
// The results are bit-identical on every level (each fast path is proven equal to the soft path
// by its own tests); only speed differs.
//
// Choice: FPCONFORM_ISA=portable|avx2|avx512 in the environment, or the best level this CPU has
// when it is unset or empty. ActiveIsa() reads it once, on first use (thread-safe); front ends
// call SetIsaFromEnvironment() at start-up first, to refuse a bad value with a message (the
// fpconform command exits 2). A value that ActiveIsa() finds bad without that call selects
// kPortable (it runs on every CPU); it never selects a level the CPU lacks.
//
// Example:
//   $ FPCONFORM_ISA=avx2 fpconform tolerance --quick --out /tmp/r2   # same bytes as avx512
//   absl::Status s = SetIsaFromEnvironment();  // FPCONFORM_ISA=avx512 on an AVX2-only CPU:
//   // s: InvalidArgument "FPCONFORM_ISA=avx512: this CPU lacks it (available: portable avx2)"
//   ActiveIsa() == Isa::kAvx2;                 // (unset) on that CPU
#ifndef FPCONFORM_BASE_ISA_H_
#define FPCONFORM_BASE_ISA_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace fpconform {

// Ordered: each level includes the ones before it.
enum class Isa : int { kPortable = 0, kAvx2 = 1, kAvx512 = 2 };

inline constexpr char kIsaEnvironmentVariable[] = "FPCONFORM_ISA";

// "portable" "avx2" "avx512".
std::string_view IsaName(Isa isa);
// The inverse of IsaName; nullopt for any other text.
std::optional<Isa> ParseIsa(std::string_view text);

// The best level this CPU (and OS) can run, detected once.
Isa DetectedIsa();
// Every level this CPU can run, from kPortable up.
std::vector<Isa> AvailableIsas();
// F16C (VCVTPS2PH), used for float32 -> float16 on every level but kPortable.
bool CpuHasF16c();

// The level in use (see the choice above).
Isa ActiveIsa();

// Sets the level from FPCONFORM_ISA (unset or empty: DetectedIsa()). InvalidArgument, naming
// the variable, the value and the valid or available levels, for an unknown value or one this
// CPU lacks; the active level is then left as it was.
absl::Status SetIsaFromEnvironment();
// Sets the level directly (tests, front ends). InvalidArgument for a level this CPU lacks.
absl::Status SetActiveIsa(Isa isa);

}  // namespace fpconform

#endif  // FPCONFORM_BASE_ISA_H_
