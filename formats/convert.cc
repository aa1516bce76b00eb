// Convert between any two formats of the table: float <-> float, float <-> integer and
// integer <-> integer. Float results come from RoundPack; integer results use the same rounding
// decision (RoundsAway) on the bits below the binary point.
#include "formats/ops.h"
#include "formats/round_pack.h"

namespace fpconform {
namespace {

using Kind = Unpacked::Kind;

uint64_t IntegerBits(const FormatSpec& f, int64_t v) {
  return static_cast<uint64_t>(v) & WidthMask(f);
}

// Intel's integer indefinite: most negative for signed formats, all ones for unsigned ones.
uint64_t IndefiniteBits(const FormatSpec& f) {
  return f.is_signed ? IntegerBits(f, IntegerMin(f)) : WidthMask(f);
}

OpResult FloatToInteger(const FormatSpec& from, const FormatSpec& to, uint64_t a,
                        const OpEnv& env) {
  Unpacked x = UnpackBits(from, a, env.denormals_are_zero);
  const int64_t lo = IntegerMin(to), hi = IntegerMax(to);
  if (x.kind == Kind::kNaN) {
    return {env.saturate ? 0 : IndefiniteBits(to), kInvalid};
  }
  if (x.kind == Kind::kInf) {
    if (!env.saturate) return {IndefiniteBits(to), kInvalid};
    return {IntegerBits(to, x.sign ? lo : hi), kInvalid};
  }
  if (x.kind == Kind::kZero) return {0, 0};
  // |x| = sig * 2^exp. Integer part and what lies below the binary point.
  uint128 magnitude;
  LostFraction lost = LostFraction::kExactlyZero;
  uint64_t top_bits = 0;
  bool too_big = false;
  if (x.exponent >= 0) {
    too_big = x.exponent > 40;  // sig < 2^54, so 2^94 > any supported integer.
    magnitude = too_big ? 0 : uint128{x.significand} << x.exponent;
  } else {
    int d = -x.exponent;
    uint128 sig = x.significand;
    uint128 rem;
    if (d >= 100) {
      magnitude = 0;
      rem = sig;
      lost = LostFraction::kLessThanHalf;  // sig < 2^54 <= 2^(d-1).
    } else {
      magnitude = sig >> d;
      rem = sig & ((uint128{1} << d) - 1);
      uint128 half = uint128{1} << (d - 1);
      lost = rem == 0      ? LostFraction::kExactlyZero
             : rem < half  ? LostFraction::kLessThanHalf
             : rem == half ? LostFraction::kExactlyHalf
                           : LostFraction::kMoreThanHalf;
    }
    if (env.rounding == Rounding::kStochastic) {
      int shift = d - env.sr_bits;
      top_bits = shift >= 100 ? 0
                 : shift >= 0 ? static_cast<uint64_t>(rem >> shift)
                              : static_cast<uint64_t>(rem << -shift);
    }
  }
  if (!too_big) {
    if (RoundsAway(env, x.sign, static_cast<bool>(magnitude & 1), lost, top_bits)) ++magnitude;
    if (env.rounding == Rounding::kToOdd && lost != LostFraction::kExactlyZero) magnitude |= 1;
  }
  const uint128 limit = x.sign ? static_cast<uint64_t>(-lo) : static_cast<uint64_t>(hi);
  if (too_big || magnitude > limit) {
    if (!env.saturate) return {IndefiniteBits(to), kInvalid};
    return {IntegerBits(to, x.sign ? lo : hi), kInvalid};
  }
  int64_t v = static_cast<int64_t>(magnitude);
  if (x.sign) v = -v;
  return {IntegerBits(to, v), lost != LostFraction::kExactlyZero ? kInexact : Flags{0}};
}

}  // namespace

OpResult Convert(const FormatSpec& from, const FormatSpec& to, uint64_t a, const OpEnv& env) {
  if (!IsFloat(from)) {
    int64_t v = IntegerValue(from, a);
    if (!IsFloat(to)) {
      int64_t lo = IntegerMin(to), hi = IntegerMax(to);
      if (v >= lo && v <= hi) return {IntegerBits(to, v), 0};
      if (!env.saturate) return {IntegerBits(to, v), kInvalid};
      return {IntegerBits(to, v < lo ? lo : hi), kInvalid};
    }
    bool sign = v < 0;
    uint64_t magnitude = sign ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    return RoundPack(to, sign, 0, magnitude, false, env);
  }
  if (!IsFloat(to)) return FloatToInteger(from, to, a, env);

  Unpacked x = UnpackBits(from, a, env.denormals_are_zero);
  switch (x.kind) {
    case Kind::kNaN:
      return {NanResultBits(to, env, &from, &x), x.signaling ? kInvalid : Flags{0}};
    case Kind::kInf:
      if (x.sign && !to.has_sign) return {NanResultBits(to, env, nullptr, nullptr), kInvalid};
      if (env.saturate) return {MaxFiniteBits(to, x.sign), 0};
      if (to.nonfinite == NonFinite::kIeee) return {InfBits(to, x.sign), 0};
      {
        Unpacked signed_nan = x;  // The NaN keeps the sign of the Inf (OCP OFP8 Table 3).
        signed_nan.kind = Kind::kNaN;
        return {NanResultBits(to, env, nullptr, &signed_nan), kInvalid};
      }
    case Kind::kZero:
      return RoundPack(to, x.sign, 0, 0, false, env);
    case Kind::kFinite:
      break;
  }
  return RoundPack64(to, x.sign, x.exponent, x.significand, false, env);
}

}  // namespace fpconform
