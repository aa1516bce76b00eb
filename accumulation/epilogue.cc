// The epilogue's scale stage and output conversion (epilogue.h has the contract and the proofs).
#include "accumulation/epilogue.h"

#include <algorithm>
#include <cmath>

#include "base/str_cat.h"
#include "formats/ops.h"
#include "formats/ulp.h"

namespace fpconform {
namespace {

constexpr double kU32 = 0x1p-24;    // Unit roundoff of float32 under RNE.
constexpr double kEta32 = 0x1p-149;  // >= the absolute error of an underflowing float32 product.

// fl32(v) as a double (RNE).
double Round32(double v) { return ToDouble(Float32(), DoubleToBits(Float32(), v)); }

// True when |v| is 0 or in float32's normal range (so fl32 errs by at most u |v|).
bool Float32Normal(double v) {
  const double a = std::fabs(v);
  return a >= 0x1p-126 && a <= 0x1.fffffep127;
}

// Whether c enters after the scale stage (ApplyScaleAddC) rather than in the model's evaluation.
bool AddsCAfterScale(const Model& model, bool scaled, bool has_c) {
  return scaled && has_c && model.epilogue.c == EpilogueC::kAfterScale;
}

}  // namespace

EpilogueValue ApplyScale(ScaleOrder order, const FormatSpec& from, uint64_t y_bits,
                         double y_bound, const EpilogueScales& s) {
  const double y = ToDouble(from, y_bits);
  const double y32 = Round32(y);
  const double dy = std::fabs(y32 - y);  // 0 for outputs of <= 24 significand bits.
  const double S = s.a * s.b;            // Exact: two float32 values.
  EpilogueValue out;
  out.format = &Float32();
  out.bound = y_bound;
  double v = 0;
  if (order == ScaleOrder::kProduct) {
    const double s32 = Round32(S);
    const double prod = s32 * y32;  // Exact: 24-bit times 24-bit significands.
    out.bits = DoubleToBits(Float32(), prod);
    v = ToDouble(Float32(), out.bits);
    if (std::isfinite(v) && std::isfinite(y)) {
      out.bound = (std::fabs(v - prod) * (1 + 0x1p-52) + std::fabs(s32 - S) * std::fabs(y32) +
                   std::fabs(S) * (y_bound + dy)) * kEpilogueUp;
    }
  } else {
    const double p1 = y32 * s.a;  // Exact.
    const double v1 = Round32(p1);
    const double p2 = v1 * s.b;   // Exact.
    out.bits = DoubleToBits(Float32(), p2);
    v = ToDouble(Float32(), out.bits);
    if (std::isfinite(v) && std::isfinite(y) && std::isfinite(v1)) {
      out.bound = (std::fabs(v - p2) * (1 + 0x1p-52) +
                   std::fabs(s.b) * std::fabs(v1 - p1) * (1 + 0x1p-52) +
                   std::fabs(S) * (y_bound + dy)) * kEpilogueUp;
    }
  }
  return out;
}

EpilogueValue ApplyScaleAddC(const FormatSpec& from, uint64_t y_bits, double y_bound,
                             const EpilogueScales& s, const FormatSpec& c_format, uint64_t c_bits,
                             const OpEnv& env) {
  const double y = ToDouble(from, y_bits);
  const uint64_t y32_bits = DoubleToBits(Float32(), y);
  const double y32 = ToDouble(Float32(), y32_bits);
  const double S = s.a * s.b;  // Exact: two float32 values.
  const uint64_t s32_bits = DoubleToBits(Float32(), S);
  const double s32 = ToDouble(Float32(), s32_bits);
  const uint64_t c32_bits = Convert(c_format, Float32(), c_bits, OpEnv{}).bits;
  const double c = ToDouble(c_format, c_bits), c32 = ToDouble(Float32(), c32_bits);
  OpEnv fma_env = env;
  fma_env.sr_random = 0;
  EpilogueValue out;
  out.format = &Float32();
  out.bits = Fma(Float32(), s32_bits, y32_bits, c32_bits, fma_env).bits;
  out.bound = y_bound;
  const double v = ToDouble(Float32(), out.bits);
  if (std::isfinite(v) && std::isfinite(y) && std::isfinite(c)) {
    // |v - (s32 y32 + c32)| < ulp(v) <= 2^-23 |v| (or 2^-149 below the normal range), every mode.
    out.bound = (0x1p-23 * std::fabs(v) + kEta32 + std::fabs(s32 - S) * std::fabs(y32) +
                 std::fabs(S) * (y_bound + std::fabs(y32 - y)) + std::fabs(c32 - c)) *
                kEpilogueUp;
  }
  return out;
}

double ScaleAPriori(ScaleOrder order, const FormatSpec& from, uint64_t y_bits, double y_bound,
                    const EpilogueScales& s, double scaled_exact_abs) {
  const double y = ToDouble(from, y_bits);
  const double b = y_bound + std::fabs(Round32(y) - y);  // b' (epilogue.h).
  const double S = s.a * s.b;
  const double sx = std::fabs(scaled_exact_abs);
  const double up = kEpilogueUp;
  if (order == ScaleOrder::kSequential) {
    return (b * std::fabs(S) * (1 + 2 * kU32 + kU32 * kU32) * up +
            (sx * (2 * kU32 + kU32 * kU32)) * up * up +
            kEta32 * (1 + std::fabs(s.b) * (1 + kU32)) * up) * up;
  }
  const double s32 = std::fabs(Round32(S));
  if (Float32Normal(S) && S != 0) {
    return (b * s32 * (1 + kU32) * up + (sx * (2 * kU32 + kU32 * kU32)) * up * up + kEta32) * up;
  }
  // |x| (|S32 - S| + u S32) with |x| = |S x| / |S| (0 when S is 0: then S x = 0).
  const double xs = S != 0 ? sx / std::fabs(S) * (std::fabs(s32 - std::fabs(S)) + kU32 * s32) : 0;
  return (b * s32 * (1 + kU32) * up + xs * up * up + kEta32) * up;
}

EpilogueValue ConvertOutput(const EpilogueValue& v, const FormatSpec& to, const OpEnv& env) {
  if (v.format == &to) return v;
  EpilogueValue out;
  out.format = &to;
  out.bits = Convert(*v.format, to, v.bits, env).bits;
  out.bound = v.bound;
  const double a = ToDouble(*v.format, v.bits), c = ToDouble(to, out.bits);
  if (std::isfinite(a) && std::isfinite(c)) {
    out.bound = (v.bound + std::fabs(c - a) * (1 + 0x1p-52) + HalfUlpAt(to, std::fabs(c) + v.bound)) *
                kEpilogueUp;
  }
  return out;
}

std::optional<Model> ChainAloneModel(const Model& model, bool scaled, bool has_c) {
  if (!AddsCAfterScale(model, scaled, has_c)) return std::nullopt;
  Model chain = model;
  chain.epilogue.c = EpilogueC::kChain;
  return chain;
}

EpilogueValue ApplyEpilogue(const Model& model, uint64_t y_bits, double y_bound,
                            const EpilogueScales* scales, const FormatSpec& out,
                            const OpEnv& out_env, const uint64_t* c_bits) {
  EpilogueValue v{y_bits, &model.OutputFormat(), y_bound};
  if (AddsCAfterScale(model, scales != nullptr, c_bits != nullptr)) {
    v = ApplyScaleAddC(model.OutputFormat(), y_bits, y_bound, *scales, model.FinalAccumulatorFormat(),
                       *c_bits, model.epilogue.env);
  } else if (scales != nullptr) {
    v = ApplyScale(model.epilogue.scale_order, model.OutputFormat(), y_bits, y_bound, *scales);
  }
  return ConvertOutput(v, out, out_env);
}

absl::Status CheckEpilogueScales(const Model& model, int64_t a_count, int64_t b_count) {
  if (a_count == 0 && b_count == 0) return absl::OkStatus();
  if (model.epilogue.scale == EpilogueScale::kNone) {
    return absl::InvalidArgumentError(
        Cat("model '", model.name, "' has no scale stage (epilogue.scale = \"none\") but scales were given"));
  }
  if (model.epilogue.scale == EpilogueScale::kBlock) {
    return absl::InvalidArgumentError(
        Cat("model '", model.name, "' takes per-block scales (epilogue.scale = \"block\", one per ",
            model.epilogue.scale_block, " products along K), not one per tensor, row or column"));
  }
  if (model.epilogue.scale == EpilogueScale::kTensor && (a_count > 1 || b_count > 1)) {
    return absl::InvalidArgumentError(
        Cat("model '", model.name, "' takes one scale per tensor (epilogue.scale = \"tensor\") but ",
            a_count > 1 ? a_count : b_count, " scales were given for ", a_count > 1 ? "A" : "B"));
  }
  return absl::OkStatus();
}

}  // namespace fpconform
