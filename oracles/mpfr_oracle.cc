#include "oracles/mpfr_oracle.h"

#include <cstdint>
#include <optional>

namespace fpconform {
namespace {

// Extra bits of the truncated intermediate result beyond p: >= 2 for round-to-nearest plus 32
// for the top bits of stochastic rounding (op_env.h), with margin.
constexpr int kGuardBits = 70;
// Precision of the quantum scratch: holds x / 2^Q exactly for any x of <= 53 + 70 bits.
constexpr mpfr_prec_t kWide = 128;

// Thread-local MPFR scratch, initialized once per thread.
struct Scratch {
  MpfrValue a{64}, b{64}, c{64}, r{kWide}, t{kWide}, frac{kWide}, odd{kWide}, y{64};
};

Scratch& S() {
  thread_local Scratch scratch;
  return scratch;
}

uint64_t Ones(int n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

// ---- The oracle's own encoder. ----

uint64_t SignMask(const FormatSpec& f) {
  return f.has_sign ? uint64_t{1} << (f.exponent_bits + f.fraction_bits) : 0;
}

uint64_t Place(const FormatSpec& f, uint64_t encoding) { return encoding << f.pad_bits; }

// The default quiet NaN of `f` (+, zero payload); the NaN of results whose NaN is not given by
// the NanProfile table (overflow without Inf, e8m0fnu zero/negative results).
uint64_t NanOf(const FormatSpec& f) {
  const uint64_t all_exp = Ones(f.exponent_bits) << f.fraction_bits;
  if (f.nonfinite == NonFinite::kIeee || f.nan_encoding == NanEncoding::kIeee) {
    return Place(f, all_exp | (uint64_t{1} << (f.fraction_bits - 1)));
  }
  if (f.nan_encoding == NanEncoding::kAllOnes) return Place(f, all_exp | Ones(f.fraction_bits));
  return Place(f, SignMask(f));  // kNegativeZero: the pattern 1.000...0.
}

uint64_t MaxFiniteOf(const FormatSpec& f, bool sign) {
  const uint64_t biased = static_cast<uint64_t>(Emax(f) + f.bias);
  const uint64_t frac = MaxFiniteSignificand(f) & Ones(f.fraction_bits);
  return Place(f, (sign ? SignMask(f) : 0) | (biased << f.fraction_bits) | frac);
}

uint64_t MinNormalOf(const FormatSpec& f, bool sign) {
  const uint64_t biased = static_cast<uint64_t>(Emin(f) + f.bias);
  return Place(f, (sign ? SignMask(f) : 0) | (biased << f.fraction_bits));
}

bool HasInf(const FormatSpec& f) { return f.nonfinite == NonFinite::kIeee; }

uint64_t InfOf(const FormatSpec& f, bool sign) {
  return Place(f, (sign ? SignMask(f) : 0) | (Ones(f.exponent_bits) << f.fraction_bits));
}

bool HasNegativeZero(const FormatSpec& f) {
  return f.has_sign && f.nan_encoding != NanEncoding::kNegativeZero;
}

OpResult NanResult(const FormatSpec& f, Flags flags) { return {NanOf(f), flags}; }

// An exact zero result: +-0 (+0 without -0), NaN with v where the format has no zero.
OpResult ZeroResult(const FormatSpec& f, bool sign) {
  if (!f.has_zero) return NanResult(f, kInvalid);
  return {Place(f, sign && HasNegativeZero(f) ? SignMask(f) : 0), 0};
}

// The NaN of an invalid operation (op_env.h NanProfile), with v.
OpResult InvalidResult(const FormatSpec& f, const OpEnv& env) {
  return {MpfrNanBits(f, env, nullptr, nullptr), kInvalid};
}

// The result of an operation with NaN operand(s): the first NaN operand per env.nan; v if any
// operand is a signaling NaN.
OpResult Propagate(const FormatSpec& f, const OpEnv& env, const MpfrDecoded* a,
                   const MpfrDecoded* b = nullptr, const MpfrDecoded* c = nullptr) {
  const MpfrDecoded* first = nullptr;
  Flags flags = 0;
  for (const MpfrDecoded* d : {a, b, c}) {
    if (d == nullptr || d->kind != MpfrKind::kNaN) continue;
    if (first == nullptr) first = d;
    if (d->signaling) flags = kInvalid;
  }
  return {MpfrNanBits(f, env, &f, first), flags};
}

// Packs (-1)^sign * i * 2^q, a value representable in f (i < 2^(p+1)).
uint64_t Pack(const FormatSpec& f, bool sign, uint64_t i, int64_t q) {
  const int fb = f.fraction_bits;
  if (i == 0) return Place(f, sign && HasNegativeZero(f) ? SignMask(f) : 0);
  while (i >> (fb + 1)) {
    i >>= 1;
    ++q;
  }
  const uint64_t s = sign ? SignMask(f) : 0;
  if ((i >> fb) == 0) return Place(f, s | i);  // Subnormal: q == Emin - fb.
  const uint64_t biased = static_cast<uint64_t>(q + fb + f.bias);
  return Place(f, s | (biased << fb) | (i & Ones(fb)));
}

// ---- Rounding at a given quantum. ----

struct QuantumRound {
  uint64_t i = 0;        // Rounded magnitude / 2^q.
  bool inexact = false;  // Anything was discarded.
  bool away = false;     // The magnitude was increased (rounded away from zero).
};

// Rounds |x| (+ delta if sticky) to an integer multiple of 2^q under env.rounding. |x| / 2^q
// must be below 2^64.
QuantumRound RoundAtQuantum(mpfr_srcptr x, int64_t q, bool sticky, bool sign,
                            const OpEnv& env) {
  Scratch& s = S();
  mpfr_mul_2si(s.t, x, static_cast<long>(-q), MPFR_RNDN);  // Exact: t has kWide bits.
  mpfr_abs(s.t, s.t, MPFR_RNDN);
  QuantumRound out;
  out.i = mpfr_get_ui(s.t, MPFR_RNDZ);
  mpfr_frac(s.frac, s.t, MPFR_RNDN);  // Exact.
  const bool frac_zero = mpfr_zero_p(s.frac) != 0;
  const int cmp_half = mpfr_cmp_ui_2exp(s.frac, 1, -1);
  const bool nonzero = !frac_zero || sticky;
  const bool above_half = cmp_half > 0 || (cmp_half == 0 && sticky);
  const bool exactly_half = cmp_half == 0 && !sticky;
  out.inexact = nonzero;
  bool up = false;
  switch (env.rounding) {
    case Rounding::kNearestEven:
      up = above_half || (exactly_half && (out.i & 1) != 0);
      break;
    case Rounding::kNearestAway:
      up = above_half || exactly_half;
      break;
    case Rounding::kTowardZero:
      break;
    case Rounding::kUpward:
      up = nonzero && !sign;
      break;
    case Rounding::kDownward:
      up = nonzero && sign;
      break;
    case Rounding::kToOdd:
      if (nonzero && (out.i & 1) == 0) {
        out.i |= 1;
        out.away = true;
      }
      break;
    case Rounding::kStochastic: {
      const int k = env.sr_bits < 0 ? 0 : (env.sr_bits > 62 ? 62 : env.sr_bits);
      mpfr_mul_2si(s.frac, s.frac, k, MPFR_RNDN);
      const uint64_t top = mpfr_get_ui(s.frac, MPFR_RNDZ);  // Top k bits of the fraction.
      const uint64_t r = env.sr_random & Ones(k);
      up = top + r >= (uint64_t{1} << k);
      break;
    }
  }
  if (up) {
    ++out.i;
    out.away = true;
  }
  return out;
}

// Whether an overflow delivers Inf (true) or max finite (false), before the format and sat.
bool OverflowToInf(const OpEnv& env, bool sign) {
  switch (env.rounding) {
    case Rounding::kNearestEven:
    case Rounding::kNearestAway:
      return true;
    case Rounding::kTowardZero:
    case Rounding::kToOdd:
      return false;
    case Rounding::kUpward:
      return !sign;
    case Rounding::kDownward:
      return sign;
    case Rounding::kStochastic:
      // Unreachable: MpfrRoundToFormat decides sr<k> above max finite itself (the rule of
      // op_env.h), and sr<k> of a value at most max finite never exceeds it.
      return true;
  }
  return true;
}

// Infinity of the sign, or NaN where the format has none (ops.h), or max finite under sat.
uint64_t InfOrNanOf(const FormatSpec& f, bool sign) {
  return HasInf(f) ? InfOf(f, sign) : NanOf(f);
}

struct IntValue {
  bool ok = true;
  int64_t value = 0;
};

int64_t DecodeInteger(const FormatSpec& f, uint64_t bits) {
  uint64_t v = bits & WidthMask(f);
  if (f.is_signed && f.width < 64 && ((v >> (f.width - 1)) & 1) != 0) {
    return static_cast<int64_t>(v) - (int64_t{1} << f.width);
  }
  return static_cast<int64_t>(v);
}

uint64_t EncodeInteger(const FormatSpec& f, int64_t v) {
  return static_cast<uint64_t>(v) & WidthMask(f);
}

// Integer result of an out-of-range or NaN conversion (ops.h Convert).
OpResult InvalidIntegerResult(const FormatSpec& to, bool nan, bool negative, const OpEnv& env) {
  if (env.saturate) {
    if (nan) return {0, kInvalid};
    return {EncodeInteger(to, negative ? IntegerMin(to) : IntegerMax(to)), kInvalid};
  }
  if (to.is_signed) return {EncodeInteger(to, IntegerMin(to)), kInvalid};
  return {WidthMask(to), kInvalid};
}

// Rounds a finite non-zero MPFR result r (truncated, ternary t) into f.
OpResult FinishNonZero(const FormatSpec& f, mpfr_srcptr r, int ternary, const OpEnv& env) {
  return MpfrRoundToFormat(f, mpfr_signbit(r) != 0, r, ternary != 0, env);
}

mpfr_prec_t WorkPrecision(const FormatSpec& f) { return Precision(f) + kGuardBits; }

bool IsZeroTimesInf(const MpfrDecoded& x, const MpfrDecoded& y) {
  return (x.kind == MpfrKind::kZero && y.kind == MpfrKind::kInf) ||
         (x.kind == MpfrKind::kInf && y.kind == MpfrKind::kZero);
}

// Decodes a binary operation's operands a and b into da, s.a and db, s.b; the result when either
// is a NaN (Propagate), nullopt otherwise.
std::optional<OpResult> DecodeOperands(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env,
                                       Scratch& s, MpfrDecoded& da, MpfrDecoded& db) {
  da = MpfrDecodeBits(f, a, env.denormals_are_zero, s.a);
  db = MpfrDecodeBits(f, b, env.denormals_are_zero, s.b);
  if (da.kind == MpfrKind::kNaN || db.kind == MpfrKind::kNaN) return Propagate(f, env, &da, &db);
  return std::nullopt;
}

OpResult AddImpl(const FormatSpec& f, uint64_t a, uint64_t b, bool negate_b, const OpEnv& env) {
  Scratch& s = S();
  MpfrDecoded da, db;
  if (const std::optional<OpResult> nan = DecodeOperands(f, a, b, env, s, da, db)) return *nan;
  if (negate_b) {
    db.sign = !db.sign;
    mpfr_neg(s.b, s.b, MPFR_RNDN);
  }
  if (da.kind == MpfrKind::kInf || db.kind == MpfrKind::kInf) {
    if (da.kind == MpfrKind::kInf && db.kind == MpfrKind::kInf && da.sign != db.sign) {
      return InvalidResult(f, env);  // Inf - Inf (IEEE 754-2019 §7.2 b).
    }
    const bool sign = da.kind == MpfrKind::kInf ? da.sign : db.sign;
    if (!f.has_sign && sign) return NanResult(f, kInvalid);
    return {InfOf(f, sign), 0};
  }
  const bool rdn = env.rounding == Rounding::kDownward;
  if (da.kind == MpfrKind::kZero && db.kind == MpfrKind::kZero) {
    // §6.3: x + x keeps the sign of x; an exact zero sum of opposite signs is +0 except rdn.
    return ZeroResult(f, da.sign == db.sign ? da.sign : rdn);
  }
  mpfr_set_prec(s.r, WorkPrecision(f));
  const int t = mpfr_add(s.r, s.a, s.b, MPFR_RNDZ);
  if (mpfr_zero_p(s.r)) return ZeroResult(f, rdn);  // Exact cancellation (§6.3).
  return FinishNonZero(f, s.r, t, env);
}

}  // namespace

// ---- Decoding. ----

uint64_t MpfrNanBits(const FormatSpec& to, const OpEnv& env, const FormatSpec* src_format,
                     const MpfrDecoded* src) {
  if (to.nonfinite != NonFinite::kIeee && to.nan_encoding == NanEncoding::kNegativeZero) {
    return NanOf(to);  // The single NaN 1.000...0 (fnuz).
  }
  const int fb = to.fraction_bits;
  const uint64_t all_exp = Ones(to.exponent_bits) << fb;
  if (env.nan == NanProfile::kCuda) return Place(to, all_exp | Ones(fb));  // All ones, +.
  const bool propagate = src != nullptr && src_format != nullptr &&
                         (env.nan == NanProfile::kIeee || env.nan == NanProfile::kX86);
  bool sign;
  uint64_t frac;
  if (!propagate) {
    // +qNaN; x86 "QNaN floating-point indefinite" is -qNaN (invalid operations only).
    sign = env.nan == NanProfile::kX86 && src == nullptr;
    frac = (to.nonfinite == NonFinite::kIeee || to.nan_encoding == NanEncoding::kIeee)
               ? uint64_t{1} << (fb - 1)
               : Ones(fb);
  } else {
    sign = src->sign;
    if (to.nonfinite == NonFinite::kIeee || to.nan_encoding == NanEncoding::kIeee) {
      // The top payload bits that fit, then the quiet bit.
      const int fs = src_format->fraction_bits;
      frac = fb >= fs ? src->payload << (fb - fs) : src->payload >> (fs - fb);
      frac = (frac & Ones(fb)) | (uint64_t{1} << (fb - 1));
    } else {
      frac = Ones(fb);  // kAllOnes: S.1111.111 (e4m3fn), 0xFF (e8m0fnu).
    }
  }
  return Place(to, (sign ? SignMask(to) : 0) | all_exp | frac);
}

bool MpfrIsNanBits(const FormatSpec& f, uint64_t bits) {
  return MpfrDecodeBits(f, bits, false, S().y).kind == MpfrKind::kNaN;
}

// ---- The rounding routine. ----

OpResult MpfrRoundToFormat(const FormatSpec& f, bool sign, mpfr_srcptr x, bool sticky,
                           const OpEnv& env) {
  // float8_e8m0fnu: negative results are NaN with v (ops.h).
  if (!f.has_sign && sign) return NanResult(f, kInvalid);
  const int fb = f.fraction_bits;
  const int p = fb + 1;
  const int64_t emin = Emin(f);
  const int64_t emax = Emax(f);
  const int64_t e = static_cast<int64_t>(mpfr_get_exp(x)) - 1;  // 2^e <= |x| < 2^(e+1).

  // 0. sr<k> above max finite (op_env.h): the two neighbours of |x| in the format with its
  // range are max finite and the overflow result. max + ulp = (M + 1) * 2^(emax - fb) <=
  // 2^(emax + 1), so e > emax overflows; for e == emax, |x| / ulp splits into floor I and a
  // fraction: I > M overflows, I == M with a non-zero fraction is the sr<k> choice on that
  // fraction (the fraction is (|x| - max) / ulp).
  if (env.rounding == Rounding::kStochastic && e >= emax) {
    const uint64_t m = MaxFiniteSignificand(f);
    bool over = e > emax;
    bool above_max = over;
    if (!over) {
      const QuantumRound at_max = RoundAtQuantum(x, emax - fb, sticky, sign, env);
      const uint64_t floor_i = at_max.i - (at_max.away ? 1 : 0);
      above_max = floor_i > m || (floor_i == m && at_max.inexact);
      over = floor_i > m || at_max.i > m;
    }
    if (over) {
      return {env.saturate ? MaxFiniteOf(f, sign) : InfOrNanOf(f, sign), kOverflow | kInexact};
    }
    if (above_max) return {MaxFiniteOf(f, sign), kInexact};
  }

  // 1. Unbounded exponent range, precision p.
  const QuantumRound unb = RoundAtQuantum(x, e - fb, sticky, sign, env);
  uint64_t iu = unb.i;
  int64_t qu = e - fb;
  if (iu >> p) {  // Carried to 2^p.
    iu >>= 1;
    ++qu;
  }
  const int64_t eu = qu + fb;  // Exponent of the unbounded result.
  const bool overflow =
      eu > emax || (eu == emax && iu > MaxFiniteSignificand(f));
  if (overflow) {
    const bool to_inf = !env.saturate && OverflowToInf(env, sign);
    return {to_inf ? InfOrNanOf(f, sign) : MaxFiniteOf(f, sign), kOverflow | kInexact};
  }
  const bool tiny = env.tininess == Tininess::kBeforeRounding ? e < emin : eu < emin;

  // 2. Below the normal range.
  if (!f.has_subnormals && e < emin) {
    // float8_e8m0fnu: positive results below 2^Emin deliver 2^Emin (ops.h). Always inexact.
    return {MinNormalOf(f, sign), static_cast<Flags>(kInexact | (tiny ? kUnderflow : 0))};
  }
  if (tiny && env.flush_to_zero) {
    const OpResult z = ZeroResult(f, sign);
    return {z.bits, static_cast<Flags>(z.flags | kUnderflow | kInexact)};
  }
  if (e < emin) {
    const int64_t qs = emin - fb;
    const QuantumRound sub = RoundAtQuantum(x, qs, sticky, sign, env);
    Flags flags = 0;
    if (sub.inexact) flags = static_cast<Flags>(kInexact | (tiny ? kUnderflow : 0));
    if (sub.i == 0 && !f.has_zero) return NanResult(f, kInvalid);
    return {Pack(f, sign, sub.i, qs), flags};
  }
  return {Pack(f, sign, iu, qu), unb.inexact ? kInexact : Flags{0}};
}

uint64_t MpfrEncodeValue(const FormatSpec& f, mpfr_srcptr y) {
  const bool sign = mpfr_signbit(y) != 0;
  if (mpfr_nan_p(y)) return NanOf(f);
  if (mpfr_inf_p(y)) return InfOf(f, sign);
  if (mpfr_zero_p(y)) return Place(f, sign && HasNegativeZero(f) ? SignMask(f) : 0);
  const int64_t e = static_cast<int64_t>(mpfr_get_exp(y)) - 1;
  const int64_t q = (e < Emin(f) ? Emin(f) : e) - f.fraction_bits;
  Scratch& s = S();
  mpfr_mul_2si(s.t, y, static_cast<long>(-q), MPFR_RNDN);
  mpfr_abs(s.t, s.t, MPFR_RNDN);
  return Pack(f, sign, mpfr_get_ui(s.t, MPFR_RNDZ), q);
}

// ---- MPFR's IEEE recipe. ----

OpResult MpfrRecipeRound(const FormatSpec& f, bool sign, mpfr_srcptr x, bool sticky,
                         mpfr_rnd_t rnd) {
  Scratch& s = S();
  // Round to odd at x's precision: with P >= p + 2 the second rounding is then correct.
  mpfr_set_prec(s.odd, mpfr_get_prec(x));
  mpfr_abs(s.odd, x, MPFR_RNDN);
  if (sticky) {
    mpfr_set_prec(s.frac, mpfr_get_prec(x));
    mpfr_set(s.frac, s.odd, MPFR_RNDN);
    mpfr_nextabove(s.frac);
    // Set the last bit iff it is clear: x + ulp has a clear last bit exactly when x had it set.
    mpfr_mul_2si(s.t, s.odd, 0, MPFR_RNDN);
    mpfr_prec_round(s.t, mpfr_get_prec(x) - 1, MPFR_RNDZ);
    if (mpfr_equal_p(s.t, s.odd)) mpfr_set(s.odd, s.frac, MPFR_RNDN);
    mpfr_set_prec(s.frac, kWide);
    mpfr_set_prec(s.t, kWide);
  }
  if (sign) mpfr_neg(s.odd, s.odd, MPFR_RNDN);
  mpfr_set_prec(s.y, Precision(f));
  int t = mpfr_set(s.y, s.odd, rnd);
  bool overflow = false;
  {
    MpfrFormatRange range(f);
    mpfr_clear_flags();
    t = mpfr_check_range(s.y, t, rnd);
    t = mpfr_subnormalize(s.y, t, rnd);
    overflow = mpfr_overflow_p() != 0;
  }
  const uint64_t bits = MpfrEncodeValue(f, s.y);
  mpfr_set_prec(s.y, 64);
  Flags flags = 0;
  if (t != 0) flags |= kInexact;
  if (overflow) flags |= kOverflow | kInexact;
  return {bits, flags};
}

// ---- Operations. ----

OpResult MpfrAdd(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env) {
  return AddImpl(f, a, b, false, env);
}

OpResult MpfrSub(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env) {
  return AddImpl(f, a, b, true, env);
}

OpResult MpfrMul(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env) {
  Scratch& s = S();
  MpfrDecoded da, db;
  if (const std::optional<OpResult> nan = DecodeOperands(f, a, b, env, s, da, db)) return *nan;
  const bool sign = da.sign != db.sign;
  if (IsZeroTimesInf(da, db)) return InvalidResult(f, env);
  if (da.kind == MpfrKind::kInf || db.kind == MpfrKind::kInf) return {InfOf(f, sign), 0};
  if (da.kind == MpfrKind::kZero || db.kind == MpfrKind::kZero) return ZeroResult(f, sign);
  mpfr_set_prec(s.r, WorkPrecision(f));
  const int t = mpfr_mul(s.r, s.a, s.b, MPFR_RNDZ);  // Exact: 2p <= p + 70.
  return FinishNonZero(f, s.r, t, env);
}

OpResult MpfrDiv(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env) {
  Scratch& s = S();
  MpfrDecoded da, db;
  if (const std::optional<OpResult> nan = DecodeOperands(f, a, b, env, s, da, db)) return *nan;
  const bool sign = da.sign != db.sign;
  if (da.kind == MpfrKind::kInf) {
    if (db.kind == MpfrKind::kInf) return InvalidResult(f, env);  // Inf / Inf.
    return {InfOf(f, sign), 0};
  }
  if (db.kind == MpfrKind::kInf) return ZeroResult(f, sign);
  if (db.kind == MpfrKind::kZero) {
    if (da.kind == MpfrKind::kZero) return InvalidResult(f, env);  // 0 / 0.
    // §7.3: finite non-zero / 0. ops.h: NaN where there is no Inf, max finite under sat.
    if (HasInf(f)) return {InfOf(f, sign), kDivideByZero};
    return {env.saturate ? MaxFiniteOf(f, sign) : NanOf(f), kDivideByZero};
  }
  if (da.kind == MpfrKind::kZero) return ZeroResult(f, sign);
  mpfr_set_prec(s.r, WorkPrecision(f));
  const int t = mpfr_div(s.r, s.a, s.b, MPFR_RNDZ);
  return FinishNonZero(f, s.r, t, env);
}

OpResult MpfrFma(const FormatSpec& f, uint64_t a, uint64_t b, uint64_t c, const OpEnv& env) {
  Scratch& s = S();
  const bool daz = env.denormals_are_zero;
  const MpfrDecoded da = MpfrDecodeBits(f, a, daz, s.a);
  const MpfrDecoded db = MpfrDecodeBits(f, b, daz, s.b);
  const MpfrDecoded dc = MpfrDecodeBits(f, c, daz, s.c);
  const bool any_nan =
      da.kind == MpfrKind::kNaN || db.kind == MpfrKind::kNaN || dc.kind == MpfrKind::kNaN;
  if (any_nan) {
    Flags flags = (da.signaling || db.signaling || dc.signaling) ? kInvalid : 0;
    // ops.h: 0 * Inf + qNaN raises v (SoftFloat), except under the x86 profile (VFMADD does not).
    const bool x86_quiet_c = env.nan == NanProfile::kX86 && dc.kind == MpfrKind::kNaN && !dc.signaling;
    if (da.kind != MpfrKind::kNaN && db.kind != MpfrKind::kNaN && IsZeroTimesInf(da, db) &&
        !x86_quiet_c) {
      flags |= kInvalid;
    }
    return {Propagate(f, env, &da, &db, &dc).bits, flags};
  }
  if (IsZeroTimesInf(da, db)) return InvalidResult(f, env);
  const bool psign = da.sign != db.sign;
  if (da.kind == MpfrKind::kInf || db.kind == MpfrKind::kInf) {
    if (dc.kind == MpfrKind::kInf && dc.sign != psign) return InvalidResult(f, env);
    return {InfOf(f, psign), 0};
  }
  if (dc.kind == MpfrKind::kInf) return {InfOf(f, dc.sign), 0};
  const bool rdn = env.rounding == Rounding::kDownward;
  if (da.kind == MpfrKind::kZero || db.kind == MpfrKind::kZero) {
    if (dc.kind == MpfrKind::kZero) return ZeroResult(f, psign == dc.sign ? psign : rdn);
    // 0 * x + c = c exactly; rounded anyway so that ftz sees a subnormal c.
    return FinishNonZero(f, s.c, 0, env);
  }
  mpfr_set_prec(s.r, WorkPrecision(f));
  const int t = mpfr_fma(s.r, s.a, s.b, s.c, MPFR_RNDZ);
  if (mpfr_zero_p(s.r)) return ZeroResult(f, rdn);  // Exact cancellation (§6.3).
  return FinishNonZero(f, s.r, t, env);
}

OpResult MpfrSqrt(const FormatSpec& f, uint64_t a, const OpEnv& env) {
  Scratch& s = S();
  const MpfrDecoded da = MpfrDecodeBits(f, a, env.denormals_are_zero, s.a);
  if (da.kind == MpfrKind::kNaN) return Propagate(f, env, &da);
  if (da.kind == MpfrKind::kZero) return ZeroResult(f, da.sign);  // sqrt(-0) = -0 (§6.3).
  if (da.sign) return InvalidResult(f, env);                     // Includes -Inf.
  if (da.kind == MpfrKind::kInf) return {InfOf(f, false), 0};
  mpfr_set_prec(s.r, WorkPrecision(f));
  const int t = mpfr_sqrt(s.r, s.a, MPFR_RNDZ);
  return FinishNonZero(f, s.r, t, env);
}

OpResult MpfrConvert(const FormatSpec& from, const FormatSpec& to, uint64_t a,
                     const OpEnv& env) {
  Scratch& s = S();
  if (!IsFloat(from)) {
    const int64_t v = DecodeInteger(from, a);
    if (!IsFloat(to)) {
      if (v >= IntegerMin(to) && v <= IntegerMax(to)) return {EncodeInteger(to, v), 0};
      if (!env.saturate) return {EncodeInteger(to, v), kInvalid};  // Wraps.
      return {EncodeInteger(to, v < 0 ? IntegerMin(to) : IntegerMax(to)), kInvalid};
    }
    if (v == 0) return ZeroResult(to, false);
    mpfr_set_si(s.a, v, MPFR_RNDN);  // Exact: 64 bits.
    return FinishNonZero(to, s.a, 0, env);
  }
  const MpfrDecoded d = MpfrDecodeBits(from, a, env.denormals_are_zero, s.a);
  if (!IsFloat(to)) {
    if (d.kind == MpfrKind::kNaN) return InvalidIntegerResult(to, true, false, env);
    if (d.kind == MpfrKind::kInf) return InvalidIntegerResult(to, false, d.sign, env);
    if (d.kind == MpfrKind::kZero) return {0, 0};
    if (mpfr_get_exp(s.a) > 40) return InvalidIntegerResult(to, false, d.sign, env);
    const QuantumRound qr = RoundAtQuantum(s.a, 0, false, d.sign, env);
    const int64_t v = d.sign ? -static_cast<int64_t>(qr.i) : static_cast<int64_t>(qr.i);
    if (v < IntegerMin(to) || v > IntegerMax(to)) {
      return InvalidIntegerResult(to, false, d.sign, env);
    }
    return {EncodeInteger(to, v), qr.inexact ? kInexact : Flags{0}};
  }
  switch (d.kind) {
    case MpfrKind::kNaN:
      return {MpfrNanBits(to, env, &from, &d), d.signaling ? kInvalid : Flags{0}};
    case MpfrKind::kInf:
      if (!to.has_sign && d.sign) return NanResult(to, kInvalid);
      if (env.saturate) return {MaxFiniteOf(to, d.sign), 0};  // OCP OFP8 r1.0 Table 3.
      if (HasInf(to)) return {InfOf(to, d.sign), 0};
      // No Inf in `to` (OCP Table 3: NaN). A NaN from a non-NaN operand is an invalid
      // operation (IEEE 754-2019 §7.2: no usefully definable result), as for Inf -> integer.
      return NanResult(to, kInvalid);
    case MpfrKind::kZero:
      return ZeroResult(to, d.sign);
    case MpfrKind::kFinite:
      break;
  }
  return FinishNonZero(to, s.a, 0, env);
}

}  // namespace fpconform
