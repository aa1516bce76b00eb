#include "base/isa.h"

#include <atomic>
#include <cstdlib>


#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define FPCONFORM_ISA_X86 1
#else
#define FPCONFORM_ISA_X86 0
#endif

namespace fpconform {
namespace {

Isa Detect() {
#if FPCONFORM_ISA_X86
  // __builtin_cpu_supports also checks that the OS saves the vector state (XGETBV).
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return Isa::kPortable;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    return Isa::kAvx512;
  }
  return Isa::kAvx2;
#else
  return Isa::kPortable;
#endif
}

bool DetectF16c() {
#if FPCONFORM_ISA_X86
  __builtin_cpu_init();
  // F16C from CPUID.1:ECX bit 29 (Clang's __builtin_cpu_supports has no "f16c"); "avx" also
  // covers the OS's saving of the YMM state.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  return __builtin_cpu_supports("avx") && (ecx & bit_F16C) != 0;
#else
  return false;
#endif
}

constexpr int kUnset = -1;
std::atomic<int> g_active{kUnset};

std::string AvailableList() {
  std::string out;
  for (Isa i : AvailableIsas()) {
    if (!out.empty()) out += ' ';
    out += IsaName(i);
  }
  return out;
}

// The level FPCONFORM_ISA asks for, or an error.
absl::Status FromEnvironment(Isa& out) {
  const char* value = std::getenv(kIsaEnvironmentVariable);
  if (value == nullptr || *value == '\0') {
    out = DetectedIsa();
    return absl::OkStatus();
  }
  const std::optional<Isa> want = ParseIsa(value);
  if (!want) {
    return absl::InvalidArgumentError(std::string(kIsaEnvironmentVariable) + "=" + value +
                                      ": unknown instruction set (valid: portable avx2 avx512; "
                                      "unset: the best this CPU has)");
  }
  if (static_cast<int>(*want) > static_cast<int>(DetectedIsa())) {
    return absl::InvalidArgumentError(std::string(kIsaEnvironmentVariable) + "=" + value +
                                      ": this CPU lacks it (available: " + AvailableList() +
                                      ")");
  }
  out = *want;
  return absl::OkStatus();
}

}  // namespace

std::string_view IsaName(Isa isa) {
  switch (isa) {
    case Isa::kPortable: return "portable";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "portable";
}

std::optional<Isa> ParseIsa(std::string_view text) {
  for (Isa i : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
    if (text == IsaName(i)) return i;
  }
  return std::nullopt;
}

Isa DetectedIsa() {
  static const Isa detected = Detect();
  return detected;
}

std::vector<Isa> AvailableIsas() {
  std::vector<Isa> out;
  for (int i = 0; i <= static_cast<int>(DetectedIsa()); ++i) out.push_back(static_cast<Isa>(i));
  return out;
}

bool CpuHasF16c() {
  static const bool has = DetectF16c();
  return has;
}

Isa ActiveIsa() {
  int v = g_active.load(std::memory_order_acquire);
  if (v != kUnset) [[likely]] return static_cast<Isa>(v);
  Isa chosen;
  if (!FromEnvironment(chosen).ok()) chosen = Isa::kPortable;  // Safe on every CPU.
  int expected = kUnset;
  // The first caller wins; a concurrent first call computed the same value anyway, unless a
  // SetActiveIsa raced with it, which then stands.
  g_active.compare_exchange_strong(expected, static_cast<int>(chosen), std::memory_order_acq_rel);
  return static_cast<Isa>(g_active.load(std::memory_order_acquire));
}

absl::Status SetIsaFromEnvironment() {
  Isa chosen;
  absl::Status s = FromEnvironment(chosen);
  if (!s.ok()) return s;
  g_active.store(static_cast<int>(chosen), std::memory_order_release);
  return absl::OkStatus();
}

absl::Status SetActiveIsa(Isa isa) {
  if (static_cast<int>(isa) > static_cast<int>(DetectedIsa())) {
    return absl::InvalidArgumentError("instruction set " + std::string(IsaName(isa)) +
                                      ": this CPU lacks it (available: " + AvailableList() +
                                      ")");
  }
  g_active.store(static_cast<int>(isa), std::memory_order_release);
  return absl::OkStatus();
}

}  // namespace fpconform
