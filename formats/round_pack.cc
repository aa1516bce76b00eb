#include "formats/round_pack.h"

namespace fpconform {

using round_pack_internal::BitLength;
using round_pack_internal::EncodeFinite;
using round_pack_internal::RoundPackImpl;

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
  if (!f.has_sign && sign && (significand != 0 || sticky)) {
    return {NanResultBits(f, env, nullptr, nullptr), kInvalid};
  }
  if (significand == 0) {
    if (sticky) {
      // Only a sticky bit: a value in (0, 2^exponent); represent it far below the LSB.
      return RoundPackImpl<uint64_t>(f, sign, exponent - 200, 1, true, env);
    }
    if (!f.has_zero) return {NanResultBits(f, env, nullptr, nullptr), kInvalid};
    return {ZeroBits(f, sign), 0};
  }
  const uint64_t hi = static_cast<uint64_t>(significand >> 64);
  if (hi == 0) {
    return RoundPackImpl<uint64_t>(f, sign, exponent, static_cast<uint64_t>(significand), sticky,
                                   env);
  }
  // Fold the low 64 bits into the sticky bit when the top 64 still hold every bit the rounding
  // reads: p kept bits, then a half bit and, for sr<k>, the top k discarded bits.
  const int k = env.rounding == Rounding::kStochastic ? env.sr_bits : 0;
  if (Precision(f) + 1 + k <= BitLength(hi)) {
    return RoundPackImpl<uint64_t>(f, sign, exponent + 64, hi,
                                   sticky || static_cast<uint64_t>(significand) != 0, env);
  }
  return RoundPackImpl<uint128>(f, sign, exponent, significand, sticky, env);
}

}  // namespace fpconform
