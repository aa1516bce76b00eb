// Add, Sub, Mul, Div, Fma, Sqrt, comparisons and min/max. Each arithmetic operation computes
// an exact significand (or an exact truncated one plus a sticky bit) and calls RoundPack once.
#include "formats/ops.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <optional>

#include "formats/round_pack.h"

namespace fpconform {
namespace {

using Kind = Unpacked::Kind;

using round_pack_internal::BitLength;

bool IsSignaling(const Unpacked& u) { return u.kind == Kind::kNaN && u.signaling; }

// NaN operands: v if any is signaling, and the first NaN propagated (per env.nan).
OpResult PropagateNan(const FormatSpec& f, const OpEnv& env, const Unpacked* const* ops, int n,
                      Flags extra = 0) {
  Flags flags = extra;
  const Unpacked* first = nullptr;
  for (int i = 0; i < n; ++i) {
    if (ops[i]->kind != Kind::kNaN) continue;
    if (first == nullptr) first = ops[i];
    if (IsSignaling(*ops[i])) flags |= kInvalid;
  }
  return {NanResultBits(f, env, &f, first), flags};
}

OpResult InvalidNan(const FormatSpec& f, const OpEnv& env) {
  return {NanResultBits(f, env, nullptr, nullptr), kInvalid};
}

// The operands of a two-operand arithmetic op (Add, Mul, Div) unpacked under env (subnormals read
// as zeros with denormals_are_zero), and its result when either is a NaN (else nullopt).
struct Operands {
  Unpacked x, y;
  std::optional<OpResult> nan;
};

Operands UnpackOperands(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env) {
  Operands o{UnpackBits(f, a, env.denormals_are_zero), UnpackBits(f, b, env.denormals_are_zero),
             std::nullopt};
  if (o.x.kind == Kind::kNaN || o.y.kind == Kind::kNaN) {
    const Unpacked* ops[] = {&o.x, &o.y};
    o.nan = PropagateNan(f, env, ops, 2);
  }
  return o;
}

// The sign of an exact zero sum x + y with x = -y or both zero (IEEE 754-2019 §6.3).
bool ZeroSumSign(bool sx, bool sy, const OpEnv& env) {
  if (sx == sy) return sx;
  return env.rounding == Rounding::kDownward;
}

// The alignment and the sum: x + y for x = (-1)^sx * mx * 2^ex (likewise y) with |x| >= |y|,
// each leading bit at kW - 3 of a U-bit window, and d = ex - ey >= 0: y is aligned to x (bits
// shifted out become a sticky bit). The exact sum is (-1)^sx * (sum + delta) * 2^ex with
// 0 <= delta < 1, nonzero iff sticky (RoundPack's contract). The window keeps every bit
// RoundPack reads as long as the significands have at most kW - 5 bits and p + k <= kW - 6
// (callers choose U accordingly).
template <typename U>
struct AlignedSum {
  U sum;
  bool sticky;
};
template <typename U>
[[gnu::always_inline]] inline AlignedSum<U> AlignAndAdd(bool sx, U mx, bool sy, int64_t d, U my) {
  constexpr int kTop = static_cast<int>(sizeof(U)) * 8 - 3;
  bool sticky = false;
  if (d > kTop) {
    sticky = true;
    my = 0;
  } else if (d > 0) {
    sticky = (my & ((U{1} << d) - 1)) != 0;
    my >>= d;
  }
  // Subtraction: x - (my + frac) with 0 < frac < 1 has integer part x - my - 1 and fraction
  // 1 - frac, still sticky. Selected without a branch (the signs of random operands are
  // unpredictable).
  const U difference = mx - my - (sticky ? 1 : 0);
  const U same_sign = U{0} - static_cast<U>(sx == sy);
  return {difference ^ ((difference ^ (mx + my)) & same_sign), sticky};
}

// Operands of a sum with their leading bits at kW - 3, ordered so that |x| >= |y|.
template <typename U>
struct OrderedPair {
  bool sx;
  int32_t ex;
  U mx;
  bool sy;
  int64_t d;  // ex - ey >= 0.
  U my;
};
template <typename U>
inline OrderedPair<U> Order(bool sx, int32_t ex, U mx, bool sy, int32_t ey, U my);

template <typename U>
[[gnu::always_inline]] inline OrderedPair<U> NormalizeAndOrder(bool sx, int32_t ex, U mx, bool sy,
                                                               int32_t ey, U my) {
  constexpr int kTop = static_cast<int>(sizeof(U)) * 8 - 3;
  const int lx = BitLength(mx), ly = BitLength(my);
  mx <<= kTop - (lx - 1);
  ex -= kTop - (lx - 1);
  my <<= kTop - (ly - 1);
  ey -= kTop - (ly - 1);
  return Order<U>(sx, ex, mx, sy, ey, my);
}

// Order so that |x| >= |y| for operands with their leading bits at the same position.
template <typename U>
[[gnu::always_inline]] inline OrderedPair<U> Order(bool sx, int32_t ex, U mx, bool sy, int32_t ey,
                                                   U my) {
  // Order so that |x| >= |y|, with selects rather than a branch (the order of random operands
  // is unpredictable).
  const bool swap = (ey > ex) | ((ey == ex) & (my > mx));
  const U m = U{0} - static_cast<U>(swap);
  const U t = (mx ^ my) & m;
  mx ^= t;
  my ^= t;
  const int32_t e_hi = swap ? ey : ex, e_lo = swap ? ex : ey;
  const bool s_hi = swap ? sy : sx, s_lo = swap ? sx : sy;
  return {s_hi, e_hi, mx, s_lo, int64_t{e_hi} - e_lo, my};
}

// x + y for finite non-zero x = (-1)^sx * mx * 2^ex (likewise y), rounded once.
template <typename U>
[[gnu::always_inline]] inline OpResult AddAligned(const FormatSpec& f, bool sx, int32_t ex, U mx,
                                                  bool sy, int32_t ey, U my, const OpEnv& env) {
  const OrderedPair<U> o = NormalizeAndOrder<U>(sx, ex, mx, sy, ey, my);
  const AlignedSum<U> s = AlignAndAdd<U>(o.sx, o.mx, o.sy, o.d, o.my);
  if (s.sum == 0 && !s.sticky) {
    return RoundPack(f, ZeroSumSign(o.sx, o.sy, env), 0, 0, false, env);
  }
  if constexpr (sizeof(U) == 8) {
    return RoundPack64(f, o.sx, o.ex, s.sum, s.sticky, env);
  } else {
    return RoundPack(f, o.sx, o.ex, s.sum, s.sticky, env);
  }
}

// Exact sum of two finite values (-1)^s * sig * 2^exp, sig < 2^107, rounded once.
OpResult AddFinite(const FormatSpec& f, bool sx, int32_t ex, uint128 mx, bool sy, int32_t ey,
                   uint128 my, const OpEnv& env) {
  if (mx == 0 && my == 0) return RoundPack(f, ZeroSumSign(sx, sy, env), 0, 0, false, env);
  if (mx == 0) return RoundPack(f, sy, ey, my, false, env);
  if (my == 0) return RoundPack(f, sx, ex, mx, false, env);
  const int k = env.rounding == Rounding::kStochastic ? env.sr_bits : 0;
  if ((mx >> 59) == 0 && (my >> 59) == 0 && f.d.precision + k <= 58) {
    return AddAligned<uint64_t>(f, sx, ex, static_cast<uint64_t>(mx), sy, ey,
                                static_cast<uint64_t>(my), env);
  }
  return AddAligned<uint128>(f, sx, ex, mx, sy, ey, my, env);
}

// ---- The both-normal entry of the IEEE binary layouts (FastLayout: float32, bfloat16,
// float16). For normal operands the fields are all there is to decode; their sizes are
// constants here, the magnitude bits order as the values, and the result is rounded by
// RoundPack64's body with the layout's constants (RoundNormal64). Any other operand (zero,
// subnormal, Inf, NaN) takes the general path. The environment needs no test: daz reads only
// subnormal operands, and ftz, sat, tininess and the NaN profile only tiny, overflowing or NaN
// results, which the rounding sends to RoundPackImpl as the general path does; stochastic
// rounding fits the same 64-bit window (p + k <= 24 + 32 <= 58).
template <int kE, int kM>
struct Layout {
  static constexpr int kBias = (1 << (kE - 1)) - 1;
  static constexpr uint32_t kFieldMax = (1u << kE) - 1;
  static constexpr uint32_t kFracMask = (1u << kM) - 1;
  static constexpr int kSignShift = kE + kM;
  static constexpr uint32_t kMagMask = (uint32_t{1} << kSignShift) - 1;
  // The container's bits (high bits ignored, as UnpackBits does).
  static uint32_t Bits(uint64_t a) { return static_cast<uint32_t>(a) & ((kMagMask << 1) | 1); }
  static uint32_t Field(uint32_t x) { return (x >> kM) & kFieldMax; }
  static bool Normal(uint32_t x) { return Field(x) - 1 < kFieldMax - 1; }
  static uint64_t Significand(uint32_t x) { return (x & kFracMask) | (uint32_t{1} << kM); }
  static bool Sign(uint32_t x) { return ((x >> kSignShift) & 1) != 0; }
};

// Each entry (AddFor, MulFor, FmaFor) tests its operands first and sends any that is not
// normal to the general path (AddGeneral, ...) unchanged. From there on it needs only env: it
// computes the exact result (or one that rounds identically, see the alignments), rounds the
// common case (a result normal before and after rounding) with RoundNormal64 and the layout's
// constants, packs an exact zero sum itself, and hands a tiny or overflowing result to
// RoundPackImpl, as RoundPack64 does on the general path. ops_fast_entry_test compares every
// entry with the general path bit for bit and flag for flag. The entries use no
// data-dependent branches: with random operands the order, signs and alignment are
// unpredictable, and a mispredicted branch costs more than the selects that replace it.
[[gnu::noinline]] OpResult AddGeneral(const FormatSpec& f, uint64_t a, uint64_t b, bool negate_b,
                                      const OpEnv& env);
[[gnu::noinline]] OpResult MulGeneral(const FormatSpec& f, uint64_t a, uint64_t b,
                                      const OpEnv& env);
[[gnu::noinline]] OpResult FmaGeneral(const FormatSpec& f, uint64_t a, uint64_t b, uint64_t c,
                                      const OpEnv& env);

// {bits, flags} made from two whole 64-bit words. Built field by field, the bytes after flags
// are left undefined, and GCC (12) carries them along and merges them with the general path's
// result in a spare callee-saved register (saved and restored on every call); from whole words
// every path returns in rax:rdx as it is.
inline OpResult FullResult(uint64_t bits, Flags flags) {
  struct Words {
    uint64_t bits, flags;
  };
  static_assert(sizeof(Words) == sizeof(OpResult) && offsetof(OpResult, flags) == 8);
  return std::bit_cast<OpResult>(Words{bits, flags});
}

// The choice of entry, the same for Add/Sub, Mul and Fma: `fast.template operator()<kE, kM>()`
// (AddFor, ...) for the IEEE binary layouts, `general()` (AddGeneral, ...) with its flags widened
// by FullResult for every other format.
template <class Fast, class General>
[[gnu::always_inline]] inline OpResult ByFastLayout(const FormatSpec& f, Fast fast,
                                                    General general) {
  const FastLayout layout = f.d.fast_layout;
  if (layout == FastLayout::kBinary32) [[likely]] return fast.template operator()<8, 23>();
  if (layout == FastLayout::kBFloat16) return fast.template operator()<8, 7>();
  if (layout == FastLayout::kBinary16) return fast.template operator()<5, 10>();
  const OpResult g = general();
  return FullResult(g.bits, g.flags);
}

// The alignment of the smaller operand in AddFor and FmaFor. Both operands sit in a 64-bit
// window with their leading bits at 61; hi >= 2^61, and lo < 2^62 is shifted right by d, the
// exponent difference. Whenever bits are shifted out (d > 1 there), lo < 2^60 after the shift,
// so the result's leading bit stays at 60 or above and its last kept bit (p = kM + 1 bits) at
// 60 - kM or above: the round bit is at 59 - kM or above, and stochastic rounding's bits (at
// most 32) reach down to bit 28 - kM. The rounding reads nothing else but whether any bit
// below those is set.
//
// A shift s that drops bits of lo leaves an integer a in place of the exact a + f, 0 < f < 1
// (s is clamped to 61, which keeps lo's leading bit, so a >= 1). If a < 2^t and hi has zeros
// below bit t, then hi + a and hi + (a + f) agree in every bit from t up, as do hi - a and
// hi - (a + f) (both are hi - 2^t plus something in (0, 2^t)), and all four are nonzero below
// bit t: where the rounding reads nothing below t, a rounds as a + f. Otherwise the bits
// shifted out are jammed into bit 0 (SoftFloat's shiftRightJam): hi + (a | 1) and hi - (a | 1)
// agree with hi + (a + f) and hi - (a + f) from bit 1 up and are nonzero below it (for s = 61
// and a = 1, with the exact value in (0, 2), as well), and bit 1 is below anything read.
enum class Alignment : uint8_t {
  kExact,            // d never exceeds lo's lowest possible bit: nothing is shifted out.
  kTruncated,        // a rounds as a + f in every mode.
  kJammedUnderSr,    // a rounds as a + f except under stochastic rounding, which gets the jam.
  kJammed,           // The jam in every mode.
};

// For lo with no bit below `lo_low`, hi with none below `hi_low`, and d <= max_d.
constexpr Alignment AlignmentFor(int max_d, int lo_low, int hi_low, int m) {
  if (max_d <= lo_low) return Alignment::kExact;
  const int t = 61 - lo_low;  // a = lo >> s < 2^(62 - s) <= 2^t for s >= lo_low + 1.
  if (t > hi_low || t > 59 - m) return Alignment::kJammed;
  if (t > 28 - m) return Alignment::kJammedUnderSr;
  return Alignment::kTruncated;
}

template <Alignment kA>
[[gnu::always_inline]] inline uint64_t AlignLo(uint64_t lo, uint32_t d, const OpEnv& env) {
  if constexpr (kA == Alignment::kExact) {
    return lo >> d;
  } else {
    const unsigned shift = d < 61 ? d : 61;
    const uint64_t a = lo >> shift;
    const uint64_t jam = static_cast<uint64_t>((a << shift) != lo);
    if constexpr (kA == Alignment::kJammed) return a | jam;
    if constexpr (kA == Alignment::kJammedUnderSr) {
      if (env.rounding == Rounding::kStochastic) [[unlikely]] return a | jam;
    }
    return a;
  }
}

// Add and Sub for f's layout: both-normal operands here, anything else on the general path.
// Once the operands are known to be normal, f, a and b are no longer needed (the fast path
// keeps few registers live): an exact zero sum is packed here, and a result that is tiny or
// overflows goes to RoundPackImpl, as the general path's RoundPack64 sends it.
template <int kE, int kM>
[[gnu::always_inline]] inline OpResult AddFor(const FormatSpec& f, uint64_t a, uint64_t b,
                                              bool negate_b, const OpEnv& env) {
  using L = Layout<kE, kM>;
  uint32_t x = L::Bits(a), y = L::Bits(b);
  // Both significands (p = kM + 1 <= 24 bits) go to a 64-bit window with the leading bit at 61
  // (NormalizeAndOrder's position): a carry lands on bit 62, and their last bit sits at
  // kLow = 61 - kM >= 38, so the aligned addend keeps all its bits for shifts up to kLow.
  constexpr int kTop = 61;
  constexpr int kLow = kTop - kM;
  y ^= static_cast<uint32_t>(negate_b) << L::kSignShift;
  // |hi| >= |lo|. The magnitude bits order as the magnitudes, so one compare orders them; the
  // exchange is masked, not branched (the order of random operands is unpredictable).
  const uint32_t swap = 0u - static_cast<uint32_t>((y & L::kMagMask) > (x & L::kMagMask));
  const uint32_t t = (x ^ y) & swap;
  const uint32_t hi = x ^ t, lo = y ^ t;
  const uint32_t e_hi = L::Field(hi), e_lo = L::Field(lo);
  // Both normal, tested after the ordering with one branch: e_lo <= e_hi, so the two are normal
  // iff e_lo != 0 (else lo is zero or subnormal, or both are) and e_hi != kFieldMax (else hi is
  // Inf or NaN). e_lo - 1 wraps to all ones when e_lo is 0, and e_hi + 1 reaches 2^kE only when
  // e_hi is kFieldMax, so their OR is below 2^kE exactly when both hold.
  if (((e_lo - 1) | (e_hi + 1)) >> kE) [[unlikely]] {
    const OpResult g = AddGeneral(f, a, b, negate_b, env);
    return FullResult(g.bits, g.flags);
  }
  const uint32_t d = e_hi - e_lo;  // 0 .. 2^kE - 3.
  const uint64_t m_hi = L::Significand(hi) << kLow;
  const uint64_t m_lo = L::Significand(lo) << kLow;
  // float16: d <= 29 <= kLow = 51, exact; bfloat16: a < 2^7, truncated; float32: a < 2^23,
  // jammed under stochastic rounding only (AlignmentFor).
  constexpr Alignment kAlign = AlignmentFor((1 << kE) - 3, kLow, kLow, kM);
  static_assert(kAlign == (kM == 23  ? Alignment::kJammedUnderSr
                           : kM == 7 ? Alignment::kTruncated
                                     : Alignment::kExact));
  const uint64_t aligned = AlignLo<kAlign>(m_lo, d, env);
  // Opposite signs subtract: -v is (v ^ ~0) + 1, selected by a mask (the signs of random
  // operands are unpredictable). The exchange keeps x ^ y, so the mask needs no ordering.
  const uint64_t negate = 0 - static_cast<uint64_t>(((x ^ y) >> L::kSignShift) & 1);
  const uint64_t sum = m_hi + ((aligned ^ negate) - negate);
  // sum is 0 only for x = -y exactly: +0, or -0 when rounding downward (ZeroSumSign).
  if (sum == 0) [[unlikely]] {
    return FullResult(env.rounding == Rounding::kDownward ? uint64_t{1} << L::kSignShift : 0, 0);
  }
  const int32_t exponent = static_cast<int32_t>(e_hi) - L::kBias - kTop;
  OpResult r;
  if (round_pack_internal::RoundNormal64(round_pack_internal::IeeeParams<kE, kM>{}, L::Sign(hi),
                                         exponent, sum, false, env, &r)) [[likely]] {
    return FullResult(r.bits, r.flags);
  }
  const OpResult g =
      round_pack_internal::RoundPackImpl<uint64_t>(f, L::Sign(hi), exponent, sum, false, env);
  return FullResult(g.bits, g.flags);
}

// Every operand class and every format; out of line, so that the fast entries that precede it
// in the exported functions stay free of its register and stack set-up.
[[gnu::noinline]] OpResult AddGeneral(const FormatSpec& f, uint64_t a, uint64_t b, bool negate_b,
                                      const OpEnv& env) {
  auto [x, y, nan] = UnpackOperands(f, a, b, env);
  if (nan) return *nan;
  if (negate_b) y.sign = !y.sign;
  if (x.kind == Kind::kInf || y.kind == Kind::kInf) {
    if (x.kind == Kind::kInf && y.kind == Kind::kInf && x.sign != y.sign) {
      return InvalidNan(f, env);
    }
    return {InfBits(f, x.kind == Kind::kInf ? x.sign : y.sign), 0};
  }
  const int k = env.rounding == Rounding::kStochastic ? env.sr_bits : 0;
  if (x.significand != 0 && y.significand != 0 && f.d.precision + k <= 58) [[likely]] {
    return AddAligned<uint64_t>(f, x.sign, x.exponent, x.significand, y.sign, y.exponent,
                                y.significand, env);
  }
  return AddFinite(f, x.sign, x.exponent, x.significand, y.sign, y.exponent, y.significand, env);
}

[[gnu::always_inline]] inline OpResult AddImpl(const FormatSpec& f, uint64_t a, uint64_t b,
                                               bool negate_b, const OpEnv& env) {
  return ByFastLayout(
      f, [&]<int kE, int kM>() { return AddFor<kE, kM>(f, a, b, negate_b, env); },
      [&] { return AddGeneral(f, a, b, negate_b, env); });
}

}  // namespace

OpResult Add(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env) {
  return AddImpl(f, a, b, false, env);
}

OpResult Sub(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env) {
  return AddImpl(f, a, b, true, env);
}

namespace {

[[gnu::noinline]] OpResult MulGeneral(const FormatSpec& f, uint64_t a, uint64_t b,
                                      const OpEnv& env) {
  auto [x, y, nan] = UnpackOperands(f, a, b, env);
  if (nan) return *nan;
  bool sign = x.sign != y.sign;
  if (x.kind == Kind::kInf || y.kind == Kind::kInf) {
    if (x.kind == Kind::kZero || y.kind == Kind::kZero) return InvalidNan(f, env);
    return {InfBits(f, sign), 0};
  }
  if (f.d.precision <= 32) {
    return RoundPack64(f, sign, x.exponent + y.exponent, x.significand * y.significand, false,
                       env);
  }
  uint128 product = uint128{x.significand} * y.significand;
  return RoundPack(f, sign, x.exponent + y.exponent, product, false, env);
}

}  // namespace

namespace {

// Mul for f's layout, in the manner of AddFor: the product of two p-bit significands (at most
// 48 bits) is exact in 64 bits and goes straight to the rounding.
template <int kE, int kM>
[[gnu::always_inline]] inline OpResult MulFor(const FormatSpec& f, uint64_t a, uint64_t b,
                                              const OpEnv& env) {
  using L = Layout<kE, kM>;
  const uint32_t x = L::Bits(a), y = L::Bits(b);
  if (!L::Normal(x) || !L::Normal(y)) [[unlikely]] {
    const OpResult g = MulGeneral(f, a, b, env);
    return FullResult(g.bits, g.flags);
  }
  const bool sign = L::Sign(x) != L::Sign(y);
  const int32_t e = static_cast<int32_t>(L::Field(x) + L::Field(y)) - 2 * (L::kBias + kM);
  const uint64_t product = L::Significand(x) * L::Significand(y);
  OpResult r;
  if (round_pack_internal::RoundNormal64(round_pack_internal::IeeeParams<kE, kM>{}, sign, e,
                                         product, false, env, &r)) [[likely]] {
    return FullResult(r.bits, r.flags);
  }
  const OpResult g = round_pack_internal::RoundPackImpl<uint64_t>(f, sign, e, product, false, env);
  return FullResult(g.bits, g.flags);
}

}  // namespace

OpResult Mul(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env) {
  return ByFastLayout(
      f, [&]<int kE, int kM>() { return MulFor<kE, kM>(f, a, b, env); },
      [&] { return MulGeneral(f, a, b, env); });
}

OpResult Div(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env) {
  auto [x, y, nan] = UnpackOperands(f, a, b, env);
  if (nan) return *nan;
  bool sign = x.sign != y.sign;
  if (x.kind == Kind::kInf) {
    if (y.kind == Kind::kInf) return InvalidNan(f, env);
    return {InfBits(f, sign), 0};
  }
  if (y.kind == Kind::kInf) return RoundPack(f, sign, 0, 0, false, env);
  if (y.kind == Kind::kZero) {
    if (x.kind == Kind::kZero) return InvalidNan(f, env);
    if (env.saturate && f.nonfinite != NonFinite::kIeee) {
      return {MaxFiniteBits(f, sign), kDivideByZero};
    }
    return {InfOrNanBits(f, sign, env), kDivideByZero};
  }
  if (x.kind == Kind::kZero) return RoundPack(f, sign, 0, 0, false, env);
  // q = (mx * 2^s) / my with the dividend's leading bit at 126, then refined with the remainder
  // so the quotient has at least 120 bits whatever the precision.
  uint128 mx = x.significand;
  int s = 126 - (BitLength(mx) - 1);
  mx <<= s;
  uint128 q = mx / y.significand;
  uint128 r = mx % y.significand;
  int s2 = 126 - BitLength(q);
  if (s2 > 0) {
    uint128 rs = r << s2;
    q = (q << s2) + rs / y.significand;
    r = rs % y.significand;
  } else {
    s2 = 0;
  }
  return RoundPack(f, sign, x.exponent - s - s2 - y.exponent, q, r != 0, env);
}

namespace {

[[gnu::noinline]] OpResult FmaGeneral(const FormatSpec& f, uint64_t a, uint64_t b, uint64_t c,
                                      const OpEnv& env) {
  Unpacked x = UnpackBits(f, a, env.denormals_are_zero);
  Unpacked y = UnpackBits(f, b, env.denormals_are_zero);
  Unpacked z = UnpackBits(f, c, env.denormals_are_zero);
  const bool product_invalid = (x.kind == Kind::kInf && y.kind == Kind::kZero) ||
                               (x.kind == Kind::kZero && y.kind == Kind::kInf);
  if (x.kind == Kind::kNaN || y.kind == Kind::kNaN || z.kind == Kind::kNaN) {
    // 0 * Inf + qNaN: IEEE 754-2019 §7.2(c) leaves v to the implementation. SoftFloat raises it;
    // x86 VFMADD does not (measured by conformance/hardware_test), so the kX86 profile does not.
    const bool quiet_c = z.kind == Kind::kNaN && !z.signaling;
    const bool signal = product_invalid && !(env.nan == NanProfile::kX86 && quiet_c);
    const Unpacked* ops[] = {&x, &y, &z};
    return PropagateNan(f, env, ops, 3, signal ? kInvalid : 0);
  }
  if (product_invalid) return InvalidNan(f, env);
  bool sign = x.sign != y.sign;
  if (x.kind == Kind::kInf || y.kind == Kind::kInf) {
    if (z.kind == Kind::kInf && z.sign != sign) return InvalidNan(f, env);
    return {InfBits(f, sign), 0};
  }
  if (z.kind == Kind::kInf) return {InfBits(f, z.sign), 0};
  uint128 product = uint128{x.significand} * y.significand;
  return AddFinite(f, sign, x.exponent + y.exponent, product, z.sign, z.exponent, z.significand,
                   env);
}

}  // namespace

namespace {

// Fma for f's layout, in the manner of AddFor: all three operands normal here, anything else on
// the general path.
template <int kE, int kM>
[[gnu::always_inline]] inline OpResult FmaFor(const FormatSpec& f, uint64_t a, uint64_t b,
                                              uint64_t c, const OpEnv& env) {
  using L = Layout<kE, kM>;
  const uint32_t x = L::Bits(a), y = L::Bits(b), z = L::Bits(c);
  if (!L::Normal(x) || !L::Normal(y) || !L::Normal(z)) [[unlikely]] {
    const OpResult g = FmaGeneral(f, a, b, c, env);
    return FullResult(g.bits, g.flags);
  }
  // The product of two p-bit significands has 2p - 1 or 2p <= 48 bits; it and the addend go to
  // a 64-bit window with their leading bits at 61, as in AddFor, with known shifts. Their lowest
  // bits are then at 61 - 2kM - 1 >= 14 and 61 - kM >= 38. Exponents are those of the leading
  // bits, in the addend's biased scale (so they stay small integers).
  constexpr int kTop = 61;
  const uint64_t product = L::Significand(x) * L::Significand(y);
  const uint32_t carry = static_cast<uint32_t>(product >> (2 * kM + 1));
  const uint64_t m_p = product << (kTop - 2 * kM - carry);
  const uint64_t m_z = L::Significand(z) << (kTop - kM);
  const int32_t e_p =
      static_cast<int32_t>(L::Field(x) + L::Field(y) + carry) - L::kBias;
  const int32_t e_z = static_cast<int32_t>(L::Field(z));
  // |hi| >= |lo|: by exponent, then by significand. Masked selects throughout (the order of
  // random operands is unpredictable); for equal exponents the distance is 0 either way.
  const int32_t dd = e_p - e_z;
  const bool swap = (dd < 0) | ((dd == 0) & (m_z > m_p));
  const uint64_t swap_mask = 0 - static_cast<uint64_t>(swap);
  const uint64_t t = (m_p ^ m_z) & swap_mask;
  const uint64_t m_hi = m_p ^ t, m_lo = m_z ^ t;
  const int32_t dd_sign = dd >> 31;  // -1 when the addend's exponent is the larger.
  const uint32_t d = static_cast<uint32_t>((dd ^ dd_sign) - dd_sign);  // |dd|.
  const int32_t e_hi = e_p - (dd & dd_sign);                            // max(e_p, e_z).
  const uint32_t s_p = (x ^ y) >> L::kSignShift, s_z = z >> L::kSignShift;
  const bool s_hi = ((s_p ^ ((s_p ^ s_z) & static_cast<uint32_t>(swap))) & 1) != 0;
  // Either may be lo: the product (no bit below 60 - 2kM) or the addend (none below 61 - kM).
  // The exponents differ by at most 45 in float16 (fields 1..30) and by any amount in the 8-bit
  // layouts. float32: a product hi has bits down to 14 and a truncated addend reaches 2^23:
  // jammed. bfloat16: truncated addends stay below 2^7 and products below 2^15, under every
  // bit read (down to 21): truncated. float16: the addend is never shifted out, a truncated
  // product reaches 2^21, above stochastic rounding's bit 18: jammed under it only.
  // e_p is in [2 - bias, 2 kFieldTop + 1 - bias], e_z in [1, kFieldTop].
  constexpr int kFieldTop = (1 << kE) - 2;
  constexpr int kMaxD = std::max(2 * kFieldTop - L::kBias, kFieldTop - 2 + L::kBias);
  constexpr int kLowP = kTop - 2 * kM - 1, kLowZ = kTop - kM;
  constexpr Alignment kAlign = std::max(AlignmentFor(kMaxD, kLowP, kLowZ, kM),
                                        AlignmentFor(kMaxD, kLowZ, kLowP, kM));
  static_assert(kAlign == (kM == 23  ? Alignment::kJammed
                           : kM == 7 ? Alignment::kTruncated
                                     : Alignment::kJammedUnderSr));
  const uint64_t aligned = AlignLo<kAlign>(m_lo, d, env);
  const uint64_t negate = 0 - static_cast<uint64_t>((s_p ^ s_z) & 1);
  const uint64_t sum = m_hi + ((aligned ^ negate) - negate);
  // sum is 0 only for x*y = -z exactly: +0, or -0 when rounding downward (ZeroSumSign).
  if (sum == 0) [[unlikely]] {
    return FullResult(env.rounding == Rounding::kDownward ? uint64_t{1} << L::kSignShift : 0, 0);
  }
  const int32_t exponent = e_hi - L::kBias - kTop;
  OpResult r;
  if (round_pack_internal::RoundNormal64(round_pack_internal::IeeeParams<kE, kM>{}, s_hi,
                                         exponent, sum, false, env, &r)) [[likely]] {
    return FullResult(r.bits, r.flags);
  }
  const OpResult g =
      round_pack_internal::RoundPackImpl<uint64_t>(f, s_hi, exponent, sum, false, env);
  return FullResult(g.bits, g.flags);
}

}  // namespace

OpResult Fma(const FormatSpec& f, uint64_t a, uint64_t b, uint64_t c, const OpEnv& env) {
  return ByFastLayout(
      f, [&]<int kE, int kM>() { return FmaFor<kE, kM>(f, a, b, c, env); },
      [&] { return FmaGeneral(f, a, b, c, env); });
}

OpResult Sqrt(const FormatSpec& f, uint64_t a, const OpEnv& env) {
  Unpacked x = UnpackBits(f, a, env.denormals_are_zero);
  if (x.kind == Kind::kNaN) {
    const Unpacked* ops[] = {&x};
    return PropagateNan(f, env, ops, 1);
  }
  if (x.kind == Kind::kZero) return {ZeroBits(f, x.sign), 0};
  if (x.sign) return InvalidNan(f, env);
  if (x.kind == Kind::kInf) return {InfBits(f, false), 0};
  // value = sig * 2^e with e even; root bits n = p + 3 + sr_bits, computed digit by digit from
  // the radicand R = sig * 2^t (t even, R < 2^(2n)), so sqrt(value) = sqrt(R) * 2^((e - t)/2).
  uint64_t sig = x.significand;
  int32_t e = x.exponent;
  if (e & 1) {
    sig <<= 1;
    e -= 1;
  }
  const int n = Precision(f) + 3 + (env.rounding == Rounding::kStochastic ? env.sr_bits : 0);
  int len = 64 - std::countl_zero(sig);
  len += len & 1;
  const int t = 2 * n - len;
  uint128 rem = 0, root = 0;
  for (int i = n - 1; i >= 0; --i) {
    int pos = 2 * i - t;  // Bit position in sig of the lower bit of this pair.
    uint64_t two = 0;
    if (pos + 1 >= 0) {
      two = pos >= 0 ? (sig >> pos) & 3 : (sig << 1) & 2;
    }
    rem = (rem << 2) | two;
    uint128 trial = (root << 2) | 1;
    if (rem >= trial) {
      rem -= trial;
      root = (root << 1) | 1;
    } else {
      root <<= 1;
    }
  }
  return RoundPack(f, false, (e - t) / 2, root, rem != 0, env);
}

bool IsNanBits(const FormatSpec& f, uint64_t a) {
  return IsFloat(f) && UnpackBits(f, a).kind == Kind::kNaN;
}

FloatClass Classify(const FormatSpec& f, uint64_t a) {
  Unpacked x = UnpackBits(f, a);
  switch (x.kind) {
    case Kind::kNaN:
      return x.signaling ? FloatClass::kSignalingNan : FloatClass::kQuietNan;
    case Kind::kInf:
      return x.sign ? FloatClass::kNegativeInfinity : FloatClass::kPositiveInfinity;
    case Kind::kZero:
      return x.sign ? FloatClass::kNegativeZero : FloatClass::kPositiveZero;
    case Kind::kFinite:
      break;
  }
  bool subnormal = f.has_subnormals && x.significand < (uint64_t{1} << f.fraction_bits);
  if (x.sign) return subnormal ? FloatClass::kNegativeSubnormal : FloatClass::kNegativeNormal;
  return subnormal ? FloatClass::kPositiveSubnormal : FloatClass::kPositiveNormal;
}

std::string_view FloatClassName(FloatClass c) {
  static constexpr std::string_view kNames[] = {
      "signalingNaN", "quietNaN",     "negativeInfinity", "negativeNormal", "negativeSubnormal",
      "negativeZero", "positiveZero", "positiveSubnormal", "positiveNormal", "positiveInfinity"};
  return kNames[static_cast<int>(c)];
}

namespace {

// A key that orders non-NaN values; -0 and +0 tie unless `zero_sign_matters`, where -0 < +0.
// With daz, subnormals key as zeros of their sign.
int64_t OrderKey(const FormatSpec& f, uint64_t a, bool daz, bool zero_sign_matters) {
  uint64_t bits = (a >> f.pad_bits) & ((uint64_t{1} << (EncodingBits(f) - 1) << 1) - 1);
  uint64_t sign_bit = SignBit(f);
  bool sign = (bits & sign_bit) != 0;
  int64_t mag = static_cast<int64_t>(bits & ~sign_bit);
  if (daz && f.has_subnormals && (mag >> f.fraction_bits) == 0) mag = 0;
  if (!sign) return zero_sign_matters ? mag + 1 : mag;
  return -mag;
}

enum class MinMax { kMin, kMax };

OpResult MinMaxImpl(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env, MinMax which,
                    bool number) {
  Unpacked x = UnpackBits(f, a);
  Unpacked y = UnpackBits(f, b);
  bool xn = x.kind == Kind::kNaN, yn = y.kind == Kind::kNaN;
  if (xn || yn) {
    Flags flags = (IsSignaling(x) || IsSignaling(y)) ? kInvalid : 0;
    if (number && !(xn && yn)) return {xn ? b : a, flags};
    const Unpacked* ops[] = {&x, &y};
    return PropagateNan(f, env, ops, 2);
  }
  int64_t kx = OrderKey(f, a, env.denormals_are_zero, true);
  int64_t ky = OrderKey(f, b, env.denormals_are_zero, true);
  bool pick_x = which == MinMax::kMin ? kx <= ky : kx >= ky;
  uint64_t bits = pick_x ? a : b;
  const Unpacked& u = pick_x ? x : y;
  if (env.denormals_are_zero && f.has_subnormals && u.kind == Kind::kFinite &&
      u.significand < (uint64_t{1} << f.fraction_bits)) {
    bits = ZeroBits(f, u.sign);
  }
  return {bits, 0};
}

}  // namespace

CompareResult Compare(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env) {
  Unpacked x = UnpackBits(f, a);
  Unpacked y = UnpackBits(f, b);
  if (x.kind == Kind::kNaN || y.kind == Kind::kNaN) {
    return {Ordering::kUnordered, (IsSignaling(x) || IsSignaling(y)) ? kInvalid : Flags{0}};
  }
  int64_t kx = OrderKey(f, a, env.denormals_are_zero, false);
  int64_t ky = OrderKey(f, b, env.denormals_are_zero, false);
  Ordering o = kx < ky ? Ordering::kLess : kx > ky ? Ordering::kGreater : Ordering::kEqual;
  return {o, 0};
}

OpResult Minimum(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env) {
  return MinMaxImpl(f, a, b, env, MinMax::kMin, false);
}
OpResult Maximum(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env) {
  return MinMaxImpl(f, a, b, env, MinMax::kMax, false);
}
OpResult MinimumNumber(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env) {
  return MinMaxImpl(f, a, b, env, MinMax::kMin, true);
}
OpResult MaximumNumber(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env) {
  return MinMaxImpl(f, a, b, env, MinMax::kMax, true);
}

double ToDouble(const FormatSpec& f, uint64_t bits) {
  return std::bit_cast<double>(Convert(f, Float64(), bits, OpEnv{}).bits);
}

uint64_t DoubleToBits(const FormatSpec& f, double v, const OpEnv& env) {
  return Convert(Float64(), f, std::bit_cast<uint64_t>(v), env).bits;
}

}  // namespace fpconform
