// The AVX2 loops of fast_decode.h's DecodeValues* (the only code of the decoders compiled with a
// target attribute).
#include <bit>
#include <cstdint>
#include <span>

#include "accumulation/fast_decode.h"

namespace fpconform::fast_internal {
namespace {

#include "base/target_avx2_fma_push.h"  // Functions from here on: AVX2+FMA.
// (Compiled for AVX2: called only after HostReady().) float32 (kShift 0) or bfloat16 (kShift 16)
// values only: a branch-free loop the compiler vectorizes; NaN/Inf or stray high bits -> false.
template <int kShift>
bool DecodeValues(std::span<const uint64_t> bits, float* out) {
  constexpr uint64_t kLimit = uint64_t{1} << (32 - kShift);
  uint32_t bad = 0;
  for (size_t i = 0; i < bits.size(); ++i) {
    const uint64_t x = bits[i];
    const uint32_t f = static_cast<uint32_t>(x << kShift);
    bad |= static_cast<uint32_t>(x >= kLimit) |
           static_cast<uint32_t>((f & 0x7F800000u) == 0x7F800000u);
    out[i] = std::bit_cast<float>(f);
  }
  return bad == 0;
}

// As DecodeValues, plus pow[i] = Pow32 of the float32 bits (Emin -126 for both formats).
template <int kShift>
bool DecodeValuesPow(std::span<const uint64_t> bits, float* out, double* pow) {
  constexpr uint64_t kLimit = uint64_t{1} << (32 - kShift);
  uint32_t bad = 0;
  for (size_t i = 0; i < bits.size(); ++i) {
    const uint64_t x = bits[i];
    const uint32_t f = static_cast<uint32_t>(x << kShift);
    const uint32_t e = f & 0x7F800000u;
    bad |= static_cast<uint32_t>(x >= kLimit) | static_cast<uint32_t>(e == 0x7F800000u);
    out[i] = std::bit_cast<float>(f);
    const float sub = (f & 0x7FFFFFu) != 0 ? 0x1p-126f : 0.0f;
    pow[i] = static_cast<double>(e != 0 ? std::bit_cast<float>(e) : sub);
  }
  return bad == 0;
}

#include "base/target_pop.h"  // The AVX2+FMA target popped.

}  // namespace

bool DecodeValuesF32(std::span<const uint64_t> bits, float* out) {
  return DecodeValues<0>(bits, out);
}
bool DecodeValuesBf16(std::span<const uint64_t> bits, float* out) {
  return DecodeValues<16>(bits, out);
}
bool DecodeValuesPowF32(std::span<const uint64_t> bits, float* out, double* pow) {
  return DecodeValuesPow<0>(bits, out, pow);
}
bool DecodeValuesPowBf16(std::span<const uint64_t> bits, float* out, double* pow) {
  return DecodeValuesPow<16>(bits, out, pow);
}

}  // namespace fpconform::fast_internal
