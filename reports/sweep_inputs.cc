// The sweep's inputs (sweep_inputs.h).
#include "reports/sweep_inputs.h"

#include <algorithm>
#include <cmath>

#include "cases/pinned_random.h"
#include "formats/ops.h"

namespace fpconform::reports::sweep_internal {
namespace {

double Draw(PinnedRng& rng, std::string_view dist, int64_t k) {
  if (dist == "normal") return rng.Normal();
  if (dist == "uniform_pm1") return rng.Uniform(-1, 1);
  if (dist == "uniform_01") return rng.Uniform01();
  if (dist == "loguniform") return rng.LogUniform(-8, 8);
  return rng.Normal() / std::sqrt(static_cast<double>(k));  // normal_sqrtk.
}

}  // namespace

uint64_t DoubleToFormat(const FormatSpec& f, double v, bool saturate) {
  OpEnv env;
  env.saturate = saturate;
  return DoubleToBits(f, v, env);
}

double RoundToFloat32(double v) { return ToDouble(Float32(), DoubleToBits(Float32(), v)); }

double MaxMagnitude(const FormatSpec& f) {
  if (f.kind == FormatKind::kInteger) return f.is_signed ? (std::ldexp(1.0, f.width - 1) - 1)
                                                         : (std::ldexp(1.0, f.width) - 1);
  return ToDouble(f, MaxFiniteBits(f));
}

bool IsScaledFormat(const FormatSpec& f) { return f.width == 8; }

uint64_t NegateBits(const FormatSpec& f, uint64_t bits) {
  if (f.kind == FormatKind::kInteger) {
    const uint64_t mask = f.width == 64 ? ~uint64_t{0} : (uint64_t{1} << f.width) - 1;
    return (~bits + 1) & mask;
  }
  return bits ^ f.d.sign_bit;
}


std::vector<double> DrawVector(uint64_t seed, std::string_view dist, int64_t k) {
  PinnedRng rng(seed);
  std::vector<double> v(static_cast<size_t>(k));
  for (double& x : v) x = Draw(rng, dist, k);
  return v;
}

Quantized Quantize(const std::vector<double>& x, const FormatSpec& f) {
  Quantized q;
  q.bits.resize(x.size());
  if (IsScaledFormat(f)) {
    double amax = 0;
    for (double v : x) amax = std::max(amax, std::fabs(v));
    q.scale = amax > 0 ? RoundToFloat32(amax / MaxMagnitude(f)) : 1;
    for (size_t i = 0; i < x.size(); ++i) q.bits[i] = DoubleToFormat(f, x[i] / q.scale, true);
  } else {
    for (size_t i = 0; i < x.size(); ++i) q.bits[i] = DoubleToFormat(f, x[i], false);
  }
  return q;
}

}  // namespace fpconform::reports::sweep_internal
