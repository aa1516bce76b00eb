// Internal to the tolerance sweep (reports/sweep.h, "Inputs"): the pinned random draws of the
// matmul, sum and quantize units and the cast of a drawn tensor to a platform's input format (a
// per-tensor float32 scale for the 8-bit formats), with the value helpers they use. Every
// rounding is formats' (Convert through DoubleToBits / ToDouble).
//
// Example: Quantize(DrawVector(seed, "normal", 64), Float8E4M3FN()) gives 64 float8_e4m3fn bits
// and the per-tensor scale s = fl32(amax / max finite) with x_i about s * q_i.
#ifndef FPCONFORM_REPORTS_SWEEP_INPUTS_H_
#define FPCONFORM_REPORTS_SWEEP_INPUTS_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "accumulation/model.h"
#include "formats/format_spec.h"

namespace fpconform::reports::sweep_internal {

// The integer dtype's platform, "int32-exact" (sweep.h: int8 x int8 -> int32 exact, float32
// rescale): a model of adder.kind = "integer" (accumulation/MODEL_FORMAT.md), parsed once from
// its TOML text in sweep_inputs.cc; it takes the int8 bits.
const Model& Int32ExactModel();

// v rounded to f (RNE), saturating to f's largest finite magnitude when `saturate`.
uint64_t DoubleToFormat(const FormatSpec& f, double v, bool saturate);

// v rounded to float32 (RNE), as a double.
double RoundToFloat32(double v);

// Largest finite magnitude of a format (int8: 127).
double MaxMagnitude(const FormatSpec& f);

// Whether inputs of f get a per-tensor scale (the 8-bit formats: float8 and int8).
bool IsScaledFormat(const FormatSpec& f);

// -v as bits of f (sign flip for floats, two's complement for integers).
uint64_t NegateBits(const FormatSpec& f, uint64_t bits);

// k draws of distribution dist (one of ValidDistributions(): normal, uniform_pm1, uniform_01,
// loguniform, normal_sqrtk; sweep.h "Inputs") from the pinned stream `seed`.
std::vector<double> DrawVector(uint64_t seed, std::string_view dist, int64_t k);

// A tensor cast to format f as a kernel would receive it: scaled formats get the per-tensor
// scale fl32(amax / max) and RNE with saturation; the others plain RNE.
struct Quantized {
  std::vector<uint64_t> bits;
  double scale = 1;  // A float32 value; 1 when unscaled.
};
Quantized Quantize(const std::vector<double>& x, const FormatSpec& f);

}  // namespace fpconform::reports::sweep_internal

#endif  // FPCONFORM_REPORTS_SWEEP_INPUTS_H_
