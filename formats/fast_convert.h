// Array conversions from float32 that are bit-identical to the general path
//   Convert(Float32(), to, x, OpEnv{})        (formats/ops.h)
// for EVERY float32 input pattern, proven by formats/fast_convert_exhaustive_test.cc (all 2^32
// inputs per conversion) and sampled by formats/fast_convert_test.cc.
//
// The environment is fixed: OpEnv{} (round to nearest even, tininess after rounding, no FTZ/DAZ,
// NanProfile::kIeee), plus the saturate option for the FP8 conversions. The fast paths return
// result bits only, never flags: callers that need flags use Convert.
//
// What the general path gives, and so what these give (IEEE NaN profile):
//   * NaN in: NaN out with the sign kept; in IEEE-encoded targets (bfloat16, float16,
//     float8_e5m2) the top payload bits that fit are kept and the quiet bit is set
//     (bfloat16: (x >> 16) | 0x0040). float8_e4m3fn: 0x7F or 0xFF by sign, sat or not.
//   * Subnormal inputs and results are kept (no FTZ, no DAZ).
//   * Finite overflow (the value rounded with an unbounded exponent exceeds max finite):
//       float8_e5m2: +-Inf (0x7C / 0xFC); under sat +-max finite (0x7B / 0xFB).
//       float8_e4m3fn: under sat +-448 (0x7E / 0xFE). Without sat: the NaN of that sign (0x7F /
//         0xFF). Rounding is as if unbounded: 464 -> 448 (tie to even), anything above 464 -> NaN.
//   * +-Inf in: float8_e5m2 +-Inf (sat: +-max finite); float8_e4m3fn: the NaN of that sign,
//     0x7F / 0xFF (sat: +-448 = 0x7E / 0xFE).
//
// Implementation: branchless integer code per lane (the (x + half - 1 + lsb) >> shift trick, a
// per-lane variable shift for the targets' subnormals, and selects for NaN/Inf/overflow) that GCC
// and Clang vectorize. On x86-64 the same loop is compiled for AVX-512 and AVX2 and chosen at
// run time by ActiveIsa() (base/isa.h: FPCONFORM_ISA, or the best level this CPU has); every
// other machine, and FPCONFORM_ISA=portable, runs the portable build of that loop.
// float32 -> float16 additionally uses F16C (VCVTPS2PH, immediate RNE) where present, the level
// is not portable, and MXCSR.DAZ is clear; the instruction is bit-identical to the general path for all 2^32 inputs
// (exhaustive test). AVX512-BF16's VCVTNEPS2BF16 is NOT used: it flushes subnormals
// (conformance/hardware_test.cc models it as Convert with daz and ftz).
//
// Example:
//   std::vector<uint32_t> in = {0x3F800000 /*1*/, 0x43E80000 /*464*/, 0xC3F00000 /*-480*/};
//   std::vector<uint8_t> out(in.size());
//   absl::Status s = ConvertF32ToFp8(Float8E4M3FN(), /*saturate=*/false, in, out);
//   // s.ok(); out == {0x38, 0x7E /*448*/, 0xFF /*-NaN*/}
//   s = ConvertF32ToFp8(Float8E4M3FN(), /*saturate=*/true, in, out);
//   // out == {0x38, 0x7E, 0xFE /*-448*/}
//   s = ConvertF32ToFp8(Float16(), false, in, out);  // InvalidArgument: not an 8-bit format
#ifndef FPCONFORM_FORMATS_FAST_CONVERT_H_
#define FPCONFORM_FORMATS_FAST_CONVERT_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "formats/format_spec.h"

namespace fpconform {

// float32 -> bfloat16, RNE. Requires out.size() == in.size() (asserted in debug builds; only
// min(in.size(), out.size()) elements are converted otherwise).
void ConvertF32ToBF16(std::span<const uint32_t> in, std::span<uint16_t> out);

// float32 -> float16, RNE. Same contract as ConvertF32ToBF16.
void ConvertF32ToF16(std::span<const uint32_t> in, std::span<uint16_t> out);

// True for the formats ConvertF32ToFp8 accepts: float8_e4m3fn and float8_e5m2.
bool HasFastF32ToFp8(const FormatSpec& to);

// float32 -> `to` (float8_e4m3fn or float8_e5m2), RNE, with or without saturation.
// InvalidArgument if `to` is another format or the spans' sizes differ (nothing is written).
absl::Status ConvertF32ToFp8(const FormatSpec& to, bool saturate, std::span<const uint32_t> in,
                             std::span<uint8_t> out);

// The code path the conversions above take on this machine: "avx512", "avx2" or "portable"
// (for tests and benchmark labels). F16C use for float16 is reported by FastF16UsesF16c().
std::string_view FastConvertIsa();
bool FastF16UsesF16c();

// For tests: force a code path ("portable", "avx2", "avx512") or follow ActiveIsa() again ("").
// Returns false (and changes nothing) for a path this CPU cannot run. "portable" also turns off
// F16C. Applies to the calling thread only (ActiveIsa() is the process-wide choice).
bool SetFastConvertIsaForTesting(std::string_view isa);

}  // namespace fpconform

#endif  // FPCONFORM_FORMATS_FAST_CONVERT_H_
