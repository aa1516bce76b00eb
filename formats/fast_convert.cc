#include "formats/fast_convert.h"

#include <cassert>
#include <cstddef>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FPCONFORM_FAST_X86 1
#else
#define FPCONFORM_FAST_X86 0
#endif

namespace fpconform {
namespace {

// ---- Lanes: one float32 pattern in, result bits out. Branchless, so loops over them vectorize.

// float32 -> bfloat16, RNE. The add carries into the exponent exactly as rounding up should
// (max finite -> Inf, largest subnormal -> min normal); NaNs would carry into the sign or round
// a payload to Inf, so they are replaced by the truncated, quieted pattern.
struct Bf16Lane {
  [[gnu::always_inline]] static inline uint32_t Apply(uint32_t x) {
    const uint32_t rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
    const uint32_t nan = (x >> 16) | 0x0040u;
    return (x & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded;
  }
};

// float32 -> a narrower binary format with kM fraction bits, kE exponent bits and bias kBias,
// RNE. kAllOnesNan: float8_e4m3fn (no Inf, NaN S.1111.111, overflow -> 0x7F for either sign,
// as the general path's invalid-operation NaN under NanProfile::kIeee).
template <int kM, int kE, int kBias, bool kAllOnesNan, bool kSat>
struct NarrowLane {
  static constexpr int kWidth = 1 + kE + kM;
  static constexpr uint32_t kInfMag = ((1u << kE) - 1u) << kM;  // All-ones exponent.
  static constexpr uint32_t kMaxMag =
      kAllOnesNan ? (1u << (kE + kM)) - 2u : kInfMag - 1u;  // 0x7E (e4m3fn), 0x7B (e5m2).
  // Biased float32 exponent of the target's smallest normal: 2^(1 - kBias).
  static constexpr uint32_t kMinNormalE = 127u + 1u - kBias;
  static constexpr int kShift = 23 - kM;  // Fraction bits dropped from a normal.
  // For a float32 of biased exponent e below kMinNormalE, its significand (implicit bit set)
  // is shifted right by kSubBase - e to the target's subnormal LSB 2^(1 - kBias - kM).
  static constexpr int kSubBase = 150 + 1 - kBias - kM;

  [[gnu::always_inline]] static inline uint32_t Apply(uint32_t x) {
    const uint32_t sign = (x >> 31) << (kWidth - 1);
    const uint32_t a = x & 0x7FFFFFFFu;
    const uint32_t e = a >> 23;
    // Normal results: round the magnitude at bit kShift, then rebias. A carry out of the
    // fraction bumps the exponent, as it should.
    const uint32_t normal =
        ((a + ((1u << (kShift - 1)) - 1u) + ((a >> kShift) & 1u)) >> kShift) -
        ((127u - kBias) << kM);
    // Subnormal results: per-lane shift, clamped to [1, 31] (every d >= 25 rounds to zero
    // since the significand is below 2^24; the clamp only keeps the shifts defined).
    int32_t d = kSubBase - static_cast<int32_t>(e);
    d = d < 1 ? 1 : d;
    d = d > 31 ? 31 : d;
    const uint32_t ud = static_cast<uint32_t>(d);
    const uint32_t sig = (a & 0x007FFFFFu) | 0x00800000u;
    const uint32_t sub = (sig + ((1u << (ud - 1u)) - 1u) + ((sig >> ud) & 1u)) >> ud;
    uint32_t mag = e < kMinNormalE ? sub : normal;
    // Overflow after rounding, and +-Inf (whose rounded magnitude also exceeds kMaxMag), give
    // the same pattern: sat -> +-max finite; else +-Inf, or in float8_e4m3fn the NaN of that
    // sign (OCP OFP8 r1.0 Table 3: S.1111.111).
    uint32_t over;
    if constexpr (kSat) {
      over = sign | kMaxMag;
    } else if constexpr (kAllOnesNan) {
      over = sign | 0x7Fu;
    } else {
      over = sign | kInfMag;
    }
    uint32_t result = mag > kMaxMag ? over : (sign | mag);
    uint32_t nan;
    if constexpr (kAllOnesNan) {
      nan = sign | ((1u << (kE + kM)) - 1u);
    } else {
      nan = sign | kInfMag | ((a & 0x007FFFFFu) >> kShift) | (1u << (kM - 1));
    }
    return a > 0x7F800000u ? nan : result;
  }
};

using F16Lane = NarrowLane<10, 5, 15, false, false>;
template <bool kSat> using E4M3FNLane = NarrowLane<3, 4, 7, true, kSat>;
template <bool kSat> using E5M2Lane = NarrowLane<2, 5, 15, false, kSat>;

template <typename Lane, typename OutT>
[[gnu::always_inline]] inline void Loop(const uint32_t* __restrict in, OutT* __restrict out,
                                        size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<OutT>(Lane::Apply(in[i]));
}

#if FPCONFORM_FAST_X86
// GCC's tuning may prefer 256-bit vectors even where AVX-512 is enabled; ask for 512 (GCC only:
// Clang has no such target attribute).
#if defined(__clang__)
#define FPCONFORM_AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512dq"
#else
#define FPCONFORM_AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512dq,prefer-vector-width=512"
#endif
#endif

template <typename Lane, typename OutT>
struct Kernels {
  using Fn = void (*)(const uint32_t*, OutT*, size_t);
  static void Portable(const uint32_t* in, OutT* out, size_t n) { Loop<Lane>(in, out, n); }
#if FPCONFORM_FAST_X86
  __attribute__((target("avx2"))) static void Avx2(const uint32_t* in, OutT* out, size_t n) {
    Loop<Lane>(in, out, n);
  }
  __attribute__((target(FPCONFORM_AVX512_TARGET)))
  static void Avx512(const uint32_t* in, OutT* out, size_t n) {
    Loop<Lane>(in, out, n);
  }
#endif
};

// The path: ActiveIsa() (base/isa.h: FPCONFORM_ISA or the best level of this CPU), unless
// a test forced one on this thread (per thread, so that the exhaustive test's threads can each
// pick a path). kNoForce: follow ActiveIsa().
constexpr int kNoForce = -1;
thread_local int forced_isa = kNoForce;

Isa CurrentIsa() { return forced_isa == kNoForce ? ActiveIsa() : static_cast<Isa>(forced_isa); }

template <typename Lane, typename OutT>
void Run(const uint32_t* in, OutT* out, size_t n) {
  switch (CurrentIsa()) {
#if FPCONFORM_FAST_X86
    case Isa::kAvx512: return Kernels<Lane, OutT>::Avx512(in, out, n);
    case Isa::kAvx2: return Kernels<Lane, OutT>::Avx2(in, out, n);
#endif
    default: return Kernels<Lane, OutT>::Portable(in, out, n);
  }
}

#if FPCONFORM_FAST_X86
// VCVTPS2PH with immediate 0 (round to nearest even, MXCSR.RC ignored). Bit-identical to the
// general path for all 2^32 inputs while MXCSR.DAZ is clear (exhaustive test); the caller checks.
__attribute__((target("avx,f16c"))) void F16cConvert(const uint32_t* in, uint16_t* out,
                                                     size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_castsi256_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) out[i] = static_cast<uint16_t>(F16Lane::Apply(in[i]));
}

// DAZ (bit 6) or FTZ (bit 15) set: do not trust the instruction; take the integer path.
bool MxcsrIsDefaultForF16c() { return (_mm_getcsr() & 0x8040u) == 0; }
#endif

}  // namespace

void ConvertF32ToBF16(std::span<const uint32_t> in, std::span<uint16_t> out) {
  assert(in.size() == out.size());
  const size_t n = in.size() < out.size() ? in.size() : out.size();
  Run<Bf16Lane, uint16_t>(in.data(), out.data(), n);
}

void ConvertF32ToF16(std::span<const uint32_t> in, std::span<uint16_t> out) {
  assert(in.size() == out.size());
  const size_t n = in.size() < out.size() ? in.size() : out.size();
#if FPCONFORM_FAST_X86
  if (CpuHasF16c() && CurrentIsa() != Isa::kPortable && MxcsrIsDefaultForF16c()) {
    F16cConvert(in.data(), out.data(), n);
    return;
  }
#endif
  Run<F16Lane, uint16_t>(in.data(), out.data(), n);
}

bool HasFastF32ToFp8(const FormatSpec& to) {
  return &to == &Float8E4M3FN() || &to == &Float8E5M2();
}

absl::Status ConvertF32ToFp8(const FormatSpec& to, bool saturate, std::span<const uint32_t> in,
                             std::span<uint8_t> out) {
  if (!HasFastF32ToFp8(to)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ConvertF32ToFp8: no fast path to '", std::string(to.name),
                     "' (supported: float8_e4m3fn, float8_e5m2); use Convert"));
  }
  if (in.size() != out.size()) {
    return absl::InvalidArgumentError(absl::StrCat("ConvertF32ToFp8: ", in.size(),
                                                   " inputs but ", out.size(), " outputs"));
  }
  const bool e4m3 = &to == &Float8E4M3FN();
  if (e4m3) {
    if (saturate) Run<E4M3FNLane<true>, uint8_t>(in.data(), out.data(), in.size());
    else Run<E4M3FNLane<false>, uint8_t>(in.data(), out.data(), in.size());
  } else {
    if (saturate) Run<E5M2Lane<true>, uint8_t>(in.data(), out.data(), in.size());
    else Run<E5M2Lane<false>, uint8_t>(in.data(), out.data(), in.size());
  }
  return absl::OkStatus();
}

std::string_view FastConvertIsa() {
  switch (CurrentIsa()) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    default: return "portable";
  }
}

bool FastF16UsesF16c() {
#if FPCONFORM_FAST_X86
  return CpuHasF16c() && CurrentIsa() != Isa::kPortable && MxcsrIsDefaultForF16c();
#else
  return false;
#endif
}

bool SetFastConvertIsaForTesting(std::string_view isa) {
  if (isa.empty()) {
    forced_isa = kNoForce;
    return true;
  }
  const std::optional<Isa> want = ParseIsa(isa);
  if (!want || static_cast<int>(*want) > static_cast<int>(DetectedIsa())) return false;
  forced_isa = static_cast<int>(*want);
  return true;
}

}  // namespace fpconform
