// The fast paths' input decoders: container bits -> the float32 value (exact) and, for fused
// adders, 2^nominal (the alignment exponent). Internal to accumulation/'s fast_*.cc.
//  * DecodeOne: one input of any InputKind (fast_plan.h); false for NaN/Inf or stray bits.
//  * DecodeAll: a dot's inputs; float32/bfloat16 inputs through the AVX2 loops of
//    fast_decode_avx2.cc (DecodeValues*: call only after HostReady()), the others by DecodeOne.
//  * ApplyInputDaz: inputs.daz on decoded values.
//  * DecodeF64: one float64 input (InputKind::kFloat64), as a double.
// DotView (DotView64 for float64 inputs) is the decoded inputs of one dot as the scalar path
// (fast_scalar.h) reads them.
//
// Example:
//   float used, orig; double pow;
//   DecodeOne(InputKind::kBFloat16, nullptr, 0x3F80, used, orig, pow);   // used == 1, pow == 1
#ifndef FPCONFORM_ACCUMULATION_FAST_DECODE_H_
#define FPCONFORM_ACCUMULATION_FAST_DECODE_H_

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "accumulation/fast_plan.h"

namespace fpconform::fast_internal {

// 2^max(E(x), -126) for a float32 value x (0 for 0): float32's and tfloat32's nominal exponent.
inline double Pow32(uint32_t bits) {
  const uint32_t e = (bits >> 23) & 0xFF;
  if (e == 0) return (bits & 0x7FFFFF) != 0 ? 0x1p-126 : 0.0;
  return static_cast<double>(std::bit_cast<float>(e << 23));
}

// Decodes one input; false for NaN/Inf or bits outside the container.
inline bool DecodeOne(InputKind kind, const Table* t, uint64_t bits, float& used, float& orig,
                      double& pow) {
  switch (kind) {
    case InputKind::kFloat32: {
      if ((bits >> 32) != 0) return false;
      const uint32_t b = static_cast<uint32_t>(bits);
      used = orig = std::bit_cast<float>(b);
      pow = Pow32(b);
      break;
    }
    case InputKind::kBFloat16: {
      // The top half of a float32 (same exponent range, Emin = -126).
      if ((bits >> 16) != 0) return false;
      const uint32_t b = static_cast<uint32_t>(bits) << 16;
      used = orig = std::bit_cast<float>(b);
      pow = Pow32(b);
      break;
    }
    case InputKind::kFloat16: {
      // IEEE binary16 (§3.6): bias 15, Emin = -14; subnormals f * 2^-24 (exact in float).
      if ((bits >> 16) != 0) return false;
      const uint32_t h = static_cast<uint32_t>(bits);
      const uint32_t e = (h >> 10) & 0x1F, f = h & 0x3FF, sign = (h & 0x8000u) << 16;
      if (e == 0x1F) return false;
      if (e == 0) {
        const float mag = static_cast<float>(f) * 0x1p-24f;
        used = std::bit_cast<float>(sign | std::bit_cast<uint32_t>(mag));
        pow = f != 0 ? 0x1p-14 : 0.0;
      } else {
        used = std::bit_cast<float>(sign | ((e + 112) << 23) | (f << 13));
        pow = std::bit_cast<double>(uint64_t{e - 15 + 1023} << 52);  // 2^(e - 15).
      }
      orig = used;
      break;
    }
    case InputKind::kTf32Rtz: {
      if ((bits >> 32) != 0) return false;
      const uint32_t b = static_cast<uint32_t>(bits);
      const uint32_t tb = b & ~uint32_t{0x1FFF};  // rtz to 10 fraction bits (normal or not).
      orig = std::bit_cast<float>(b);
      used = std::bit_cast<float>(tb);
      pow = Pow32(tb);
      break;
    }
    case InputKind::kTable:
      if ((bits & ~t->mask) != 0) return false;
      used = orig = t->value[bits];
      pow = t->pow[bits];
      break;
    case InputKind::kFloat64: return false;  // Not a float value: DecodeF64.
  }
  return std::isfinite(used);
}

// A float64 input (InputKind::kFloat64): the value itself; false for NaN/Inf.
inline bool DecodeF64(uint64_t bits, double& v) {
  v = std::bit_cast<double>(bits);
  return std::isfinite(v);
}

// The decoded inputs of one dot (strided views into matrices or plain arrays): In = float for
// every InputKind but kFloat64 (DotView), double for kFloat64 (DotView64; no conversion, no
// daz, no fused adder: ao == a, bo == b, apow = bpow = nullptr).
template <class In>
struct DotViewT {
  const In* a;   // Used values.
  const In* b;
  const In* ao;  // Original values (== a without conversion).
  const In* bo;
  const double* apow;
  const double* bpow;
  size_t sa, sb;    // Strides.
  int k;
};
using DotView = DotViewT<float>;
using DotView64 = DotViewT<double>;

struct Decoded {
  std::vector<float> v, o;
  std::vector<double> pow;
};

// fast_decode_avx2.cc (compiled for AVX2; call only after HostReady()): float32 (F32) or
// bfloat16 (Bf16) values, and with Pow also 2^nominal; false for NaN/Inf or stray high bits.
bool DecodeValuesF32(std::span<const uint64_t> bits, float* out);
bool DecodeValuesBf16(std::span<const uint64_t> bits, float* out);
bool DecodeValuesPowF32(std::span<const uint64_t> bits, float* out, double* pow);
bool DecodeValuesPowBf16(std::span<const uint64_t> bits, float* out, double* pow);

// Decodes n inputs (with stride) into `out` (used values, originals when needed, pows).
// Decodes a dot's inputs into `out`: values, originals (out.o; left empty unless the inputs are
// converted, then the values double as originals), 2^nominal (only with need_pow).
inline bool DecodeAll(InputKind kind, const Table* t, std::span<const uint64_t> bits, Decoded& out,
               bool need_pow) {
  const size_t n = bits.size();
  out.v.resize(n);
  if (!need_pow && kind == InputKind::kFloat32) return DecodeValuesF32(bits, out.v.data());
  if (!need_pow && kind == InputKind::kBFloat16) return DecodeValuesBf16(bits, out.v.data());
  if (kind == InputKind::kFloat32 || kind == InputKind::kBFloat16) {
    out.o.clear();
    out.pow.resize(n);
    return kind == InputKind::kFloat32 ? DecodeValuesPowF32(bits, out.v.data(), out.pow.data())
                                       : DecodeValuesPowBf16(bits, out.v.data(), out.pow.data());
  }
  const bool keep_orig = kind == InputKind::kTf32Rtz;
  out.o.resize(keep_orig ? n : 0);
  if (need_pow) out.pow.resize(n);
  bool ok = true;
  double pw;
  float orig;
  for (size_t i = 0; i < n; ++i) {
    ok &= DecodeOne(kind, t, bits[i], out.v[i], keep_orig ? out.o[i] : orig,
                    need_pow ? out.pow[i] : pw);
  }
  return ok;
}

// inputs.daz on decoded values: the originals kept in d.o, values below `min` read as zeros.
inline void ApplyInputDaz(Decoded& d, float min) {
  if (d.o.empty()) d.o = d.v;
  for (float& v : d.v) {
    if (std::fabs(v) < min) v = std::copysign(0.0f, v);
  }
}

}  // namespace fpconform::fast_internal

#endif  // FPCONFORM_ACCUMULATION_FAST_DECODE_H_
