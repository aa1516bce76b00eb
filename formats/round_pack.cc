#include "formats/round_pack.h"

#include <bit>

namespace fpconform {
namespace {

int BitLength128(uint128 x) {
  uint64_t hi = static_cast<uint64_t>(x >> 64);
  if (hi != 0) return 128 - std::countl_zero(hi);
  return 64 - std::countl_zero(static_cast<uint64_t>(x));
}

uint64_t EncodeFinite(const FormatSpec& f, bool sign, uint64_t biased_exponent,
                      uint64_t fraction) {
  uint64_t bits = (biased_exponent << f.fraction_bits) | fraction;
  if (sign) bits |= SignBit(f);
  return bits << f.pad_bits;
}

// Splits significand * 2^exponent at bit position `lsb` (an exponent): the kept integer and the
// description of what lies below it. `sticky` are nonzero bits below the significand's LSB.
struct Split {
  uint128 kept;
  LostFraction lost;
  uint64_t top_bits;  // Top k bits of the discarded fraction (for stochastic rounding).
};

Split SplitAt(uint128 sig, bool sticky, int32_t exponent, int32_t lsb, int k) {
  Split s{0, LostFraction::kExactlyZero, 0};
  int64_t d = int64_t{lsb} - exponent;  // Discarded bits; callers guarantee d > 0.
  uint128 rem;
  if (d >= 128) {
    s.kept = 0;
    rem = sig;
    if (d == 128) {
      uint128 half = uint128{1} << 127;
      if (rem < half) s.lost = LostFraction::kLessThanHalf;
      else if (rem == half && !sticky) s.lost = LostFraction::kExactlyHalf;
      else s.lost = LostFraction::kMoreThanHalf;
    } else {
      s.lost = (rem != 0 || sticky) ? LostFraction::kLessThanHalf : LostFraction::kExactlyZero;
    }
  } else {
    s.kept = sig >> d;
    rem = sig & ((uint128{1} << d) - 1);
    uint128 half = uint128{1} << (d - 1);
    if (rem == 0 && !sticky) s.lost = LostFraction::kExactlyZero;
    else if (rem < half) s.lost = LostFraction::kLessThanHalf;
    else if (rem == half && !sticky) s.lost = LostFraction::kExactlyHalf;
    else s.lost = LostFraction::kMoreThanHalf;
  }
  if (k > 0) {
    // The discarded fraction is rem / 2^d; its top k bits are rem >> (d - k).
    int64_t shift = d - k;
    if (shift >= 128) s.top_bits = 0;
    else if (shift >= 0) s.top_bits = static_cast<uint64_t>(rem >> shift);
    else s.top_bits = static_cast<uint64_t>(rem << -shift);
  }
  return s;
}

bool Away(const OpEnv& env, bool sign, const Split& s) {
  return RoundsAway(env, sign, static_cast<bool>(s.kept & 1), s.lost, s.top_bits);
}

}  // namespace

Unpacked UnpackBits(const FormatSpec& f, uint64_t bits, bool daz) {
  Unpacked u;
  bits = (bits >> f.pad_bits) & ((uint64_t{1} << (EncodingBits(f) - 1) << 1) - 1);
  u.sign = f.has_sign && ((bits >> (EncodingBits(f) - 1)) & 1);
  uint64_t field = (bits >> f.fraction_bits) & static_cast<uint64_t>(MaxBiasedExponent(f));
  uint64_t fraction = bits & FractionMask(f);
  bool nan = false;
  switch (f.nan_encoding) {
    case NanEncoding::kIeee:
      if (field == static_cast<uint64_t>(MaxBiasedExponent(f))) {
        if (fraction == 0) {
          u.kind = Unpacked::Kind::kInf;
          return u;
        }
        nan = true;
        u.signaling = f.fraction_bits > 0 && !((fraction >> (f.fraction_bits - 1)) & 1);
      }
      break;
    case NanEncoding::kAllOnes:
      nan = field == static_cast<uint64_t>(MaxBiasedExponent(f)) && fraction == FractionMask(f);
      break;
    case NanEncoding::kNegativeZero:
      nan = bits == SignBit(f);
      break;
  }
  if (nan) {
    u.kind = Unpacked::Kind::kNaN;
    u.significand = fraction;
    return u;
  }
  if (field == 0 && f.has_subnormals) {
    if (fraction == 0 || daz) {
      u.kind = Unpacked::Kind::kZero;
      return u;
    }
    u.kind = Unpacked::Kind::kFinite;
    u.significand = fraction;
    u.exponent = Emin(f) - f.fraction_bits;
    return u;
  }
  u.kind = Unpacked::Kind::kFinite;
  u.significand = fraction | (uint64_t{1} << f.fraction_bits);
  u.exponent = static_cast<int32_t>(field) - f.bias - f.fraction_bits;
  return u;
}

uint64_t NanResultBits(const FormatSpec& f, const OpEnv& env, const FormatSpec* src_format,
                       const Unpacked* src) {
  const uint64_t all_ones_exp = static_cast<uint64_t>(MaxBiasedExponent(f));
  if (f.nan_encoding == NanEncoding::kNegativeZero) return SignBit(f) << f.pad_bits;
  bool sign = false;
  uint64_t fraction;
  if (f.nan_encoding == NanEncoding::kAllOnes) {
    fraction = FractionMask(f);
    if (env.nan == NanProfile::kIeee || env.nan == NanProfile::kX86) {
      sign = src != nullptr ? src->sign : env.nan == NanProfile::kX86;
    }
    return EncodeFinite(f, sign && f.has_sign, all_ones_exp, fraction);
  }
  // NanEncoding::kIeee.
  const uint64_t quiet = uint64_t{1} << (f.fraction_bits - 1);
  switch (env.nan) {
    case NanProfile::kCuda:
      return EncodeFinite(f, false, all_ones_exp, FractionMask(f));
    case NanProfile::kCanonical:
      return EncodeFinite(f, false, all_ones_exp, quiet);
    case NanProfile::kIeee:
    case NanProfile::kX86:
      if (src == nullptr) {
        return EncodeFinite(f, env.nan == NanProfile::kX86, all_ones_exp, quiet);
      }
      fraction = 0;
      if (src_format != nullptr && src_format->nan_encoding == NanEncoding::kIeee) {
        int shift = f.fraction_bits - src_format->fraction_bits;
        fraction = shift >= 0 ? src->significand << shift : src->significand >> -shift;
      }
      return EncodeFinite(f, src->sign, all_ones_exp, (fraction & FractionMask(f)) | quiet);
  }
  return EncodeFinite(f, false, all_ones_exp, quiet);
}

uint64_t InfOrNanBits(const FormatSpec& f, bool sign, const OpEnv& env) {
  if (f.nonfinite == NonFinite::kIeee) return InfBits(f, sign);
  // The NaN that stands for a signed Inf keeps the sign where the profile keeps signs (OCP OFP8
  // Table 3 writes S.1111.111 for an overflow of either sign).
  Unpacked signed_nan;
  signed_nan.kind = Unpacked::Kind::kNaN;
  signed_nan.sign = sign;
  return NanResultBits(f, env, nullptr, &signed_nan);
}

OpResult RoundPack(const FormatSpec& f, bool sign, int32_t exponent, uint128 significand,
                   bool sticky, const OpEnv& env) {
  const bool nonzero = significand != 0 || sticky;
  if (!f.has_sign && sign && nonzero) {
    return {NanResultBits(f, env, nullptr, nullptr), kInvalid};
  }
  if (!nonzero) {
    if (!f.has_zero) return {NanResultBits(f, env, nullptr, nullptr), kInvalid};
    return {ZeroBits(f, sign), 0};
  }
  if (significand == 0) {
    // Only a sticky bit: a value in (0, 2^exponent); represent it far below the LSB.
    significand = 1;
    exponent -= 200;
  }
  const int p = Precision(f);
  const int emin = Emin(f);
  const int emax = Emax(f);
  const int k = env.rounding == Rounding::kStochastic ? env.sr_bits : 0;

  // Normalize: leading bit at position 127. lead = exponent of the leading bit.
  int len = BitLength128(significand);
  int shift = 128 - len;
  significand <<= shift;
  exponent -= shift;
  const int32_t lead = exponent + 127;
  const bool tiny_before = lead < emin;

  int32_t lsb = lead - (p - 1);
  if (tiny_before && f.has_subnormals) lsb = emin - (p - 1);
  Split s = SplitAt(significand, sticky, exponent, lsb, k);
  const bool inexact = s.lost != LostFraction::kExactlyZero;
  bool away = Away(env, sign, s);
  uint128 kept = s.kept + (away ? 1 : 0);
  if (env.rounding == Rounding::kToOdd && inexact) kept |= 1;
  if (kept >> p) {  // Carry out of the top bit.
    kept >>= 1;
    ++lsb;
  }

  // Tininess after rounding: the result rounded to p bits with an unbounded exponent is below
  // 2^emin. Only lead == emin - 1 can round up to 2^emin.
  bool tiny_after = tiny_before;
  if (lead == emin - 1) {
    Split u = SplitAt(significand, sticky, exponent, lead - (p - 1), k);
    uint128 up = u.kept + (Away(env, sign, u) ? 1 : 0);
    if (env.rounding == Rounding::kToOdd && u.lost != LostFraction::kExactlyZero) up |= 1;
    tiny_after = (up >> p) == 0;
  }
  const bool tiny = env.tininess == Tininess::kBeforeRounding ? tiny_before : tiny_after;

  Flags flags = inexact ? kInexact : 0;
  if (tiny && (env.flush_to_zero || !f.has_subnormals)) {
    // Flushed (ftz), or a format without subnormals whose rounded result is below 2^emin.
    if (f.has_subnormals || tiny_after) {
      flags = kUnderflow | kInexact;
      if (!f.has_zero) return {MinNormalBits(f), flags};
      return {ZeroBits(f, sign), flags};
    }
  }
  if (tiny && inexact) flags |= kUnderflow;

  if (kept == 0) return {f.has_zero ? ZeroBits(f, sign) : MinNormalBits(f), flags};

  const int top = BitLength128(kept) - 1;
  const int32_t result_exp = lsb + top;
  const bool overflow =
      result_exp > emax ||
      (result_exp == emax && static_cast<uint64_t>(kept << (p - 1 - top)) > MaxFiniteSignificand(f));
  if (overflow) {
    flags |= kOverflow | kInexact;
    if (env.saturate) return {MaxFiniteBits(f, sign), flags};
    bool to_infinity;
    switch (env.rounding) {
      case Rounding::kNearestEven:
      case Rounding::kNearestAway: to_infinity = true; break;
      case Rounding::kUpward: to_infinity = !sign; break;
      case Rounding::kDownward: to_infinity = sign; break;
      case Rounding::kStochastic: to_infinity = away; break;
      default: to_infinity = false; break;
    }
    if (!to_infinity) return {MaxFiniteBits(f, sign), flags};
    return {InfOrNanBits(f, sign, env), flags};
  }

  uint64_t k64 = static_cast<uint64_t>(kept);
  if (top == p - 1) {
    uint64_t biased = static_cast<uint64_t>(result_exp + f.bias);
    return {EncodeFinite(f, sign, biased, k64 & FractionMask(f)), flags};
  }
  // Subnormal: lsb == emin - (p - 1), biased exponent 0.
  return {EncodeFinite(f, sign, 0, k64), flags};
}

}  // namespace fpconform
