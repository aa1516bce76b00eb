// Internal: the body of RoundPack and UnpackBits, inline so that the operations of formats/
// compile into one straight path. Include only through round_pack.h.
#ifndef FPCONFORM_FORMATS_ROUND_PACK_INL_H_
#define FPCONFORM_FORMATS_ROUND_PACK_INL_H_

#include <bit>

namespace fpconform {
namespace round_pack_internal {

template <typename U>
constexpr int kBits = sizeof(U) * 8;

inline int BitLength(uint64_t x) { return 64 - std::countl_zero(x); }
inline int BitLength(uint128 x) {
  uint64_t hi = static_cast<uint64_t>(x >> 64);
  if (hi != 0) return 128 - std::countl_zero(hi);
  return BitLength(static_cast<uint64_t>(x));
}

inline uint64_t EncodeFinite(const FormatSpec& f, bool sign, uint64_t biased_exponent,
                      uint64_t fraction) {
  uint64_t bits = (biased_exponent << f.fraction_bits) | fraction;
  if (sign) bits |= f.d.sign_bit;
  return bits << f.pad_bits;
}

// Splits significand * 2^exponent at bit position `lsb` (an exponent): the kept integer and the
// description of what lies below it. `sticky`: nonzero bits below the significand's LSB.
template <typename U>
struct Split {
  U kept;
  LostFraction lost;
  uint64_t top_bits;  // Top k bits of the discarded fraction (stochastic rounding only).
};

template <typename U>
inline Split<U> SplitAt(U sig, bool sticky, int32_t exponent, int32_t lsb, int k) {
  constexpr int kW = kBits<U>;
  Split<U> s{0, LostFraction::kExactlyZero, 0};
  const int64_t d = int64_t{lsb} - exponent;  // Discarded bits; callers guarantee d > 0.
  U rem;
  if (d >= kW) {
    s.kept = 0;
    rem = sig;
    if (d == kW) {
      const U half = U{1} << (kW - 1);
      if (rem < half) s.lost = LostFraction::kLessThanHalf;
      else if (rem == half && !sticky) s.lost = LostFraction::kExactlyHalf;
      else s.lost = LostFraction::kMoreThanHalf;
    } else {
      s.lost = (rem != 0 || sticky) ? LostFraction::kLessThanHalf : LostFraction::kExactlyZero;
    }
  } else {
    s.kept = sig >> d;
    rem = sig & ((U{1} << d) - 1);
    const U half = U{1} << (d - 1);
    if (rem == 0 && !sticky) s.lost = LostFraction::kExactlyZero;
    else if (rem < half) s.lost = LostFraction::kLessThanHalf;
    else if (rem == half && !sticky) s.lost = LostFraction::kExactlyHalf;
    else s.lost = LostFraction::kMoreThanHalf;
  }
  if (k > 0) {
    // The discarded fraction is rem / 2^d; its top k bits are rem >> (d - k).
    const int64_t shift = d - k;
    if (shift >= kW) s.top_bits = 0;
    else if (shift >= 0) s.top_bits = static_cast<uint64_t>(rem >> shift);
    else s.top_bits = static_cast<uint64_t>(rem << -shift);
  }
  return s;
}

template <typename U>
inline bool Away(const OpEnv& env, bool sign, const Split<U>& s) {
  return RoundsAway(env, sign, static_cast<bool>(s.kept & 1), s.lost, s.top_bits);
}

// The rounding itself, for a 64- or 128-bit significand (the same code, two widths: operations
// whose exact result fits 64 bits take the narrow one). `significand` is nonzero.
template <typename U>
[[gnu::noinline]] OpResult RoundPackImpl(const FormatSpec& f, bool sign, int32_t exponent,
                                         U significand, bool sticky, const OpEnv& env) {
  constexpr int kW = kBits<U>;
  const int p = f.d.precision;
  const int emin = f.d.emin;
  const int emax = f.d.emax;
  const int k = env.rounding == Rounding::kStochastic ? env.sr_bits : 0;

  // Normalize: leading bit at position kW - 1. lead = exponent of the leading bit.
  const int shift = kW - BitLength(significand);
  significand <<= shift;
  exponent -= shift;
  const int32_t lead = exponent + (kW - 1);
  const bool tiny_before = lead < emin;

  int32_t lsb = lead - (p - 1);
  if (tiny_before && f.has_subnormals) lsb = emin - (p - 1);
  Split<U> s = SplitAt<U>(significand, sticky, exponent, lsb, k);
  const bool inexact = s.lost != LostFraction::kExactlyZero;
  bool away = Away(env, sign, s);
  U kept = s.kept + (away ? 1 : 0);
  if (env.rounding == Rounding::kToOdd && inexact) kept |= 1;
  if (kept >> p) {  // Carry out of the top bit.
    kept >>= 1;
    ++lsb;
  }

  // Tininess after rounding: the result rounded to p bits with an unbounded exponent is below
  // 2^emin. Only lead == emin - 1 can round up to 2^emin.
  bool tiny_after = tiny_before;
  if (lead == emin - 1) {
    Split<U> u = SplitAt<U>(significand, sticky, exponent, lead - (p - 1), k);
    U up = u.kept + (Away(env, sign, u) ? 1 : 0);
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

  const int top = BitLength(kept) - 1;
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
      // sr<k> chooses between the neighbours of x in the format with its range (op_env.h);
      // above max finite the upper one is the overflow result. The p-bit rounding above
      // exceeds max finite exactly when |x| >= max + ulp (its p-bit value is then at least
      // max + ulp, whatever r) or when |x| is in (max, max + ulp) and the sr<k> rule picked the
      // upper neighbour (the discarded fraction is then (|x| - max) / ulp): both overflow.
      case Rounding::kStochastic: to_infinity = true; break;
      default: to_infinity = false; break;
    }
    if (!to_infinity) return {MaxFiniteBits(f, sign), flags};
    return {InfOrNanBits(f, sign, env), flags};
  }

  uint64_t k64 = static_cast<uint64_t>(kept);
  if (top == p - 1) {
    uint64_t biased = static_cast<uint64_t>(result_exp + f.bias);
    return {EncodeFinite(f, sign, biased, k64 & f.d.fraction_mask), flags};
  }
  // Subnormal: lsb == emin - (p - 1), biased exponent 0.
  return {EncodeFinite(f, sign, 0, k64), flags};
}

}  // namespace round_pack_internal

[[gnu::always_inline]] inline Unpacked UnpackBits(const FormatSpec& f, uint64_t bits, bool daz) {
  const FormatSpec::Derived& d = f.d;
  Unpacked u;
  bits = (bits >> f.pad_bits) & d.encoding_mask;
  u.sign = (bits & d.sign_bit) != 0;
  const uint64_t field = (bits >> f.fraction_bits) & d.max_biased_exponent;
  const uint64_t fraction = bits & d.fraction_mask;
  // Biased exponents 1 .. max-1 are normal numbers in every encoding of the table.
  if (field - 1 < d.max_biased_exponent - 1) [[likely]] {
    u.kind = Unpacked::Kind::kFinite;
    u.significand = fraction | (uint64_t{1} << f.fraction_bits);
    u.exponent = static_cast<int32_t>(field) - f.bias - f.fraction_bits;
    return u;
  }
  bool nan = false;
  switch (f.nan_encoding) {
    case NanEncoding::kIeee:
      if (field == d.max_biased_exponent) {
        if (fraction == 0) {
          u.kind = Unpacked::Kind::kInf;
          return u;
        }
        nan = true;
        u.signaling = f.fraction_bits > 0 && !((fraction >> (f.fraction_bits - 1)) & 1);
      }
      break;
    case NanEncoding::kAllOnes:
      nan = field == d.max_biased_exponent && fraction == d.fraction_mask;
      break;
    case NanEncoding::kNegativeZero:
      nan = bits == d.sign_bit;
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
    u.exponent = d.emin - f.fraction_bits;
    return u;
  }
  u.kind = Unpacked::Kind::kFinite;
  u.significand = fraction | (uint64_t{1} << f.fraction_bits);
  u.exponent = static_cast<int32_t>(field) - f.bias - f.fraction_bits;
  return u;
}

namespace round_pack_internal {

// The parameters the common case of RoundPack64 reads: from the row at run time (RowParams),
// or as constants for the IEEE binary layouts the operations specialize on (IeeeParams, see
// FastLayout), so that one body serves both.
struct RowParams {
  const FormatSpec& f;
  int precision() const { return f.d.precision; }
  int emin() const { return f.d.emin; }
  int emax() const { return f.d.emax; }
  int bias() const { return f.bias; }
  int fraction_bits() const { return f.fraction_bits; }
  int pad_bits() const { return f.pad_bits; }
  uint64_t sign_bit() const { return f.d.sign_bit; }
};

template <int kE, int kM>
struct IeeeParams {
  static constexpr int precision() { return kM + 1; }
  static constexpr int emin() { return 1 - bias(); }
  static constexpr int emax() { return bias(); }
  static constexpr int bias() { return (1 << (kE - 1)) - 1; }
  static constexpr int fraction_bits() { return kM; }
  static constexpr int pad_bits() { return 0; }
  static constexpr uint64_t sign_bit() { return uint64_t{1} << (kE + kM); }
};

// The common case in one straight path: the result is normal before and after rounding
// (emin <= lead < emax, so neither tininess nor overflow can arise, and a carry out of the top
// bit lands at most on 2^emax * 1.000...). The significand then keeps exactly its top p bits,
// and the rounding decision is the same RoundsAway as everywhere else. Returns false (and
// leaves *r) for any other case, which the caller sends to RoundPackImpl; both are checked by
// the same tests. `significand` is nonzero and the format has a sign.
template <class P>
[[gnu::always_inline]] inline bool RoundNormal64(const P& fp, bool sign, int32_t exponent,
                                                 uint64_t significand, bool sticky,
                                                 const OpEnv& env, OpResult* r) {
  const int shift = std::countl_zero(significand);
  const int32_t lead = exponent + 63 - shift;
  // emin <= lead < emax in one unsigned compare (lead - emin wraps to a large value below emin).
  if (static_cast<uint32_t>(lead) - static_cast<uint32_t>(fp.emin()) >=
      static_cast<uint32_t>(fp.emax() - fp.emin())) [[unlikely]] {
    return false;
  }
  const uint64_t top = significand << shift;
  const int p = fp.precision();
  uint64_t kept = top >> (64 - p);
  // The discarded bits, left-aligned (half is bit 63). top << p has p >= 1 zero bits at the
  // bottom, so the sticky bit goes into bit 0 without touching any discarded bit.
  const uint64_t rem = (top << p) | static_cast<uint64_t>(sticky);
  const bool inexact = rem != 0;
  if (env.rounding == Rounding::kNearestEven) [[likely]] {
    // Up iff rem > half, or rem == half and kept is odd. With kept's last bit ORed into bit 0
    // (zero unless sticky, which already puts rem above half when its top bit is set), both
    // read as one compare: an odd kept turns an exact half into half + 1.
    kept += static_cast<uint64_t>((rem | (kept & 1)) > (uint64_t{1} << 63));
  } else {
    const LostFraction lost = static_cast<LostFraction>(
        ((rem >> 63) << 1) | static_cast<uint64_t>((rem << 1) != 0));
    // The top sr_bits bits (1..32) of rem; read by RoundsAway under stochastic rounding only.
    const uint64_t top_bits = (rem >> 1) >> ((63 - env.sr_bits) & 63);
    kept += RoundsAway(env, sign, kept & 1, lost, top_bits);
    if (env.rounding == Rounding::kToOdd) kept |= inexact;
  }
  // kept still carries its leading one (2^(p-1)), so adding it to (biased exponent - 1) <<
  // fraction_bits packs exponent and fraction at once, and a carry out of the top bit (kept ==
  // 2^p) bumps the exponent by itself.
  uint64_t bits = (static_cast<uint64_t>(lead + fp.bias() - 1) << fp.fraction_bits()) + kept;
  bits |= fp.sign_bit() & (uint64_t{0} - static_cast<uint64_t>(sign));
  *r = {bits << fp.pad_bits(), inexact ? kInexact : Flags{0}};
  return true;
}

}  // namespace round_pack_internal

[[gnu::always_inline]] inline OpResult RoundPack64(const FormatSpec& f, bool sign,
                                                   int32_t exponent, uint64_t significand,
                                                   bool sticky, const OpEnv& env) {
  if (significand == 0 || (!f.has_sign && sign)) {
    return RoundPack(f, sign, exponent, significand, sticky, env);
  }
  OpResult r;
  if (round_pack_internal::RoundNormal64(round_pack_internal::RowParams{f}, sign, exponent,
                                         significand, sticky, env, &r)) [[likely]] {
    return r;
  }
  return round_pack_internal::RoundPackImpl<uint64_t>(f, sign, exponent, significand, sticky,
                                                      env);
}

}  // namespace fpconform

#endif  // FPCONFORM_FORMATS_ROUND_PACK_INL_H_
