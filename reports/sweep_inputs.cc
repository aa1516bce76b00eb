// The sweep's inputs (sweep_inputs.h).
#include "reports/sweep_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/statusor.h"
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

// The integer dtype's row (sweep.h: int8 x int8 -> int32 exact, float32 rescale) as a model file
// of adder.kind = "integer" (accumulation/MODEL_FORMAT.md): the model takes the int8 bits.
constexpr char kInt32ExactModel[] = R"toml(name = "int32-exact"
description = "int8 x int8 summed exactly in int32, converted once to float32 (RNE)"
[inputs]
a = "int8"
[adder]
kind = "integer"
[accumulator]
format = "int32"
[chain]
kind = "sequential"
[output]
format = "float32"
[provenance]
"inputs.a" = "the sweep's integer dtype (reports/sweep.h)"
"adder.kind" = "int8 GEMMs accumulate int8 x int8 products exactly in int32 (IMMA, DP4A)"
"accumulator.format" = "int32, as above"
"chain.kind" = "an exact sum has no order"
"output.format" = "the float32 the rescale multiplies (reports/sweep.h)"
)toml";

const Model& Int32ExactModel() {
  static const Model* const m = [] {
    absl::StatusOr<Model> parsed = ParseModel(kInt32ExactModel, "int32-exact.toml");
    if (!parsed.ok()) {
      std::fprintf(stderr, "int32-exact: %s\n", std::string(parsed.status().message()).c_str());
      std::abort();
    }
    return new Model(*std::move(parsed));
  }();
  return *m;
}

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
