#include "oracles/elementary.h"

#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/run_workers.h"
#include "oracles/certified_double.h"
#include "oracles/mpfr_oracle.h"
#include "oracles/mpfr_plumbing.h"
#include "oracles/named_values.h"

namespace fpconform {
namespace {

// The truncation precision: p + 70 for every output of at most 53 bits (MpfrRoundToFormat).
constexpr mpfr_prec_t kTruncBits = 123;
constexpr mpfr_prec_t kZivStart = 192;
constexpr mpfr_prec_t kZivCap = mpfr_prec_t{1} << 20;

constexpr std::array<NamedValue<ElementaryFn>, 10> kNames = {{
    {ElementaryFn::kExp, "exp"},
    {ElementaryFn::kExp2, "exp2"},
    {ElementaryFn::kLog, "log"},
    {ElementaryFn::kTanh, "tanh"},
    {ElementaryFn::kSigmoid, "sigmoid"},
    {ElementaryFn::kSilu, "silu"},
    {ElementaryFn::kGelu, "gelu"},
    {ElementaryFn::kGeluTanh, "gelu_tanh"},
    {ElementaryFn::kRsqrt, "rsqrt"},
    {ElementaryFn::kReciprocal, "reciprocal"},
}};
constexpr std::array<ElementaryFn, 10> kAll = {
    ElementaryFn::kExp,  ElementaryFn::kExp2,     ElementaryFn::kLog,  ElementaryFn::kTanh,
    ElementaryFn::kSigmoid, ElementaryFn::kSilu,  ElementaryFn::kGelu, ElementaryFn::kGeluTanh,
    ElementaryFn::kRsqrt, ElementaryFn::kReciprocal};

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "elementary: %s\n", what);
  std::abort();
}

// ---- Interval arithmetic in MPFR (outward rounding). ----

struct Iv {
  explicit Iv(mpfr_prec_t w) : lo(w), hi(w) {}
  void SetPrec(mpfr_prec_t w) {
    mpfr_set_prec(lo, w);
    mpfr_set_prec(hi, w);
  }
  MpfrValue lo, hi;
};

// Scratch for the Ziv loops (thread-local, precision reset per use).
struct ZivScratch {
  Iv a{kZivStart}, b{kZivStart}, c{kZivStart}, d{kZivStart}, k{kZivStart};
  MpfrValue x3{256}, t1{kTruncBits}, t2{kTruncBits}, lo{kZivStart}, hi{kZivStart};
  void SetPrec(mpfr_prec_t w) {
    a.SetPrec(w);
    b.SetPrec(w);
    c.SetPrec(w);
    d.SetPrec(w);
    k.SetPrec(w);
    mpfr_set_prec(lo, w);
    mpfr_set_prec(hi, w);
  }
};
ZivScratch& Z() {
  thread_local ZivScratch z;
  return z;
}

// True when every value of [lo, hi] (same sign, non-zero) truncates to the same P-bit number T
// and none is a P-bit number: then t = T and the exact value's sticky bit is set.
bool SameTruncation(mpfr_srcptr lo, mpfr_srcptr hi, mpfr_ptr t) {
  if (mpfr_sgn(lo) == 0 || mpfr_sgn(hi) == 0 || (mpfr_sgn(lo) > 0) != (mpfr_sgn(hi) > 0)) {
    return false;
  }
  ZivScratch& z = Z();
  const int t1 = mpfr_set(z.t1, lo, MPFR_RNDZ);
  const int t2 = mpfr_set(z.t2, hi, MPFR_RNDZ);
  if (t1 == 0 || t2 == 0 || !mpfr_equal_p(z.t1, z.t2)) return false;
  mpfr_set(t, z.t1, MPFR_RNDN);  // t has kTruncBits bits: exact.
  return true;
}

// e = exp of [a] (increasing).
void IvExp(Iv& r, const Iv& a) {
  mpfr_exp(r.lo, a.lo, MPFR_RNDD);
  mpfr_exp(r.hi, a.hi, MPFR_RNDU);
}
// r = 1 + a.
void IvOnePlus(Iv& r, const Iv& a) {
  mpfr_add_ui(r.lo, a.lo, 1, MPFR_RNDD);
  mpfr_add_ui(r.hi, a.hi, 1, MPFR_RNDU);
}
// r = op(n, y) for an exact n and y between two ends: for n >= 0, op(n, y) is least at y = low_at
// and greatest at y = high_at; for n < 0 the two ends swap (op is mpfr_mul or mpfr_div).
void IvExactOp(Iv& r, int (*op)(mpfr_ptr, mpfr_srcptr, mpfr_srcptr, mpfr_rnd_t), mpfr_srcptr n,
               mpfr_srcptr low_at, mpfr_srcptr high_at) {
  if (mpfr_sgn(n) < 0) std::swap(low_at, high_at);
  op(r.lo, n, low_at, MPFR_RNDD);
  op(r.hi, n, high_at, MPFR_RNDU);
}
// r = n / d for an exact n and 0 < d.lo <= d.hi.
void IvExactDiv(Iv& r, mpfr_srcptr n, const Iv& d) { IvExactOp(r, mpfr_div, n, d.hi, d.lo); }
// r = n * a for an exact n and 0 <= a.lo <= a.hi.
void IvExactMul(Iv& r, mpfr_srcptr n, const Iv& a) { IvExactOp(r, mpfr_mul, n, a.lo, a.hi); }

// The value X - c, X > 0 exact with at most 64 bits, c in [c.lo, c.hi], 0 < c <= X / 2: its
// truncation when decidable. c < 2^(E(X) - P - 2) (E = MPFR's exponent, X < 2^E) is below the
// P-bit spacing under X (>= 2^(E - 1 - P)): the truncation is X's P-bit predecessor.
bool XMinusC(mpfr_srcptr x, const Iv& c, mpfr_ptr t) {
  if (mpfr_sgn(c.lo) < 0) return false;
  if (!mpfr_zero_p(c.hi) &&
      mpfr_get_exp(c.hi) <= mpfr_get_exp(x) - static_cast<mpfr_exp_t>(kTruncBits) - 2) {
    mpfr_set(t, x, MPFR_RNDN);  // Exact: x has <= 64 bits.
    mpfr_nextbelow(t);
    return true;
  }
  ZivScratch& z = Z();
  mpfr_sub(z.lo, x, c.hi, MPFR_RNDD);
  mpfr_sub(z.hi, x, c.lo, MPFR_RNDU);
  return SameTruncation(z.lo, z.hi, t);
}

// v = 2 sqrt(2/pi) (x + 0.044715 x^3) (gelu_tanh's argument of sigmoid) into z.k.
void GeluTanhArg(mpfr_srcptr x, mpfr_prec_t w) {
  ZivScratch& z = Z();
  mpfr_set_prec(z.x3, 3 * 64);
  mpfr_mul(z.x3, x, x, MPFR_RNDN);
  mpfr_mul(z.x3, z.x3, x, MPFR_RNDN);  // Exact: 3 * 64 bits.
  // a = 0.044715 in [a.lo, a.hi].
  mpfr_set_str(z.a.lo, "0.044715", 10, MPFR_RNDD);
  mpfr_set_str(z.a.hi, "0.044715", 10, MPFR_RNDU);
  // a x^3 (x^3 has x's sign), then + x.
  if (mpfr_sgn(z.x3) >= 0) {
    mpfr_mul(z.b.lo, z.a.lo, z.x3, MPFR_RNDD);
    mpfr_mul(z.b.hi, z.a.hi, z.x3, MPFR_RNDU);
  } else {
    mpfr_mul(z.b.lo, z.a.hi, z.x3, MPFR_RNDD);
    mpfr_mul(z.b.hi, z.a.lo, z.x3, MPFR_RNDU);
  }
  mpfr_add(z.b.lo, z.b.lo, x, MPFR_RNDD);
  mpfr_add(z.b.hi, z.b.hi, x, MPFR_RNDU);
  // k = 2 sqrt(2 / pi) > 0.
  mpfr_const_pi(z.c.hi, MPFR_RNDU);
  mpfr_const_pi(z.c.lo, MPFR_RNDD);
  mpfr_ui_div(z.d.lo, 2, z.c.hi, MPFR_RNDD);
  mpfr_ui_div(z.d.hi, 2, z.c.lo, MPFR_RNDU);
  mpfr_sqrt(z.d.lo, z.d.lo, MPFR_RNDD);
  mpfr_sqrt(z.d.hi, z.d.hi, MPFR_RNDU);
  mpfr_mul_2ui(z.d.lo, z.d.lo, 1, MPFR_RNDN);
  mpfr_mul_2ui(z.d.hi, z.d.hi, 1, MPFR_RNDN);
  // v = k * t, t with x's sign.
  if (mpfr_sgn(x) >= 0) {
    mpfr_mul(z.k.lo, z.d.lo, z.b.lo, MPFR_RNDD);
    mpfr_mul(z.k.hi, z.d.hi, z.b.hi, MPFR_RNDU);
  } else {
    mpfr_mul(z.k.lo, z.d.hi, z.b.lo, MPFR_RNDD);
    mpfr_mul(z.k.hi, z.d.lo, z.b.hi, MPFR_RNDU);
  }
  (void)w;
}

// One Ziv step at working precision w for the composite functions: x finite, non-zero,
// |x| < 1024. Returns true with t set when decided.
bool CompositeStep(ElementaryFn fn, mpfr_srcptr x, mpfr_prec_t w, mpfr_ptr t) {
  ZivScratch& z = Z();
  z.SetPrec(w);
  const bool pos = mpfr_sgn(x) > 0;
  // e = exp(s) with s the function's exponent argument, then d = 1 + e.
  switch (fn) {
    case ElementaryFn::kSigmoid:
    case ElementaryFn::kSilu: {
      // x > 0: c = X / (1 + e^x) (X = 1 or x), value X - c.
      // x < 0: value = X / (1 + e^-x) (X = 1 or x).
      mpfr_abs(z.a.lo, x, MPFR_RNDN);  // Exact (w >= 64).
      mpfr_set(z.a.hi, z.a.lo, MPFR_RNDN);
      IvExp(z.b, z.a);
      IvOnePlus(z.c, z.b);
      MpfrValue one(64);
      mpfr_set_ui(one, 1, MPFR_RNDN);
      mpfr_srcptr num = fn == ElementaryFn::kSigmoid ? one.get() : x;
      IvExactDiv(z.d, num, z.c);
      if (pos) return XMinusC(num, z.d, t);
      return SameTruncation(z.d.lo, z.d.hi, t);
    }
    case ElementaryFn::kGeluTanh: {
      GeluTanhArg(x, w);  // v in z.k, sign of x.
      // x > 0: c = x / (1 + e^v); x < 0: value x / (1 + e^-v) = x / (1 + e^|v|).
      if (pos) {
        IvExp(z.b, z.k);
      } else {
        mpfr_neg(z.a.lo, z.k.hi, MPFR_RNDN);
        mpfr_neg(z.a.hi, z.k.lo, MPFR_RNDN);
        IvExp(z.b, z.a);
      }
      IvOnePlus(z.c, z.b);
      IvExactDiv(z.d, x, z.c);
      if (pos) return XMinusC(x, z.d, t);
      return SameTruncation(z.d.lo, z.d.hi, t);
    }
    case ElementaryFn::kGelu: {
      // z = |x| / sqrt 2; F = erfc(z) (decreasing); x > 0: c = x F / 2, value x - c;
      // x < 0: value x F / 2 (1 + erf(x / sqrt2) = erfc(|x| / sqrt2)).
      mpfr_sqrt_ui(z.a.lo, 2, MPFR_RNDD);
      mpfr_sqrt_ui(z.a.hi, 2, MPFR_RNDU);
      MpfrValue ax(64);
      mpfr_abs(ax, x, MPFR_RNDN);
      mpfr_div(z.b.lo, ax, z.a.hi, MPFR_RNDD);
      mpfr_div(z.b.hi, ax, z.a.lo, MPFR_RNDU);
      mpfr_erfc(z.c.lo, z.b.hi, MPFR_RNDD);
      mpfr_erfc(z.c.hi, z.b.lo, MPFR_RNDU);
      IvExactMul(z.d, x, z.c);
      mpfr_div_2ui(z.d.lo, z.d.lo, 1, MPFR_RNDD);
      mpfr_div_2ui(z.d.hi, z.d.hi, 1, MPFR_RNDU);
      if (pos) {
        return XMinusC(x, z.d, t);
      }
      return SameTruncation(z.d.lo, z.d.hi, t);
    }
    default:
      Die("CompositeStep: not a composite function");
  }
}

uint64_t Ones(int n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }
uint64_t SignMaskOf(const FormatSpec& f) {
  return f.has_sign ? uint64_t{1} << (f.exponent_bits + f.fraction_bits) : 0;
}
uint64_t PlaceBits(const FormatSpec& f, uint64_t enc) { return enc << f.pad_bits; }
bool HasInfOf(const FormatSpec& f) { return f.nonfinite == NonFinite::kIeee; }
uint64_t InfBitsOf(const FormatSpec& f, bool neg) {
  return PlaceBits(f, (neg ? SignMaskOf(f) : 0) | (Ones(f.exponent_bits) << f.fraction_bits));
}
uint64_t MaxFiniteBitsOf(const FormatSpec& f, bool neg) {
  const uint64_t biased = static_cast<uint64_t>(Emax(f) + f.bias);
  return PlaceBits(f, (neg ? SignMaskOf(f) : 0) | (biased << f.fraction_bits) |
                          (MaxFiniteSignificand(f) & Ones(f.fraction_bits)));
}
// The NaN of results that have no NaN operand and are not invalid (overflow without Inf):
// +qNaN of the kIeee profile, as mpfr_oracle's NanOf.
uint64_t DefaultNanOf(const FormatSpec& f) { return MpfrNanBits(f, OpEnv{}, nullptr, nullptr); }
OpResult ZeroOf(const FormatSpec& f, bool neg) {
  if (!f.has_zero) return {DefaultNanOf(f), kInvalid};
  const bool neg_zero = neg && f.has_sign && f.nan_encoding != NanEncoding::kNegativeZero;
  return {PlaceBits(f, neg_zero ? SignMaskOf(f) : 0), 0};
}
OpResult InfResultOf(const FormatSpec& f, bool neg, Flags flags, const OpEnv& env) {
  if (!f.has_sign && neg) return {DefaultNanOf(f), kInvalid};
  if (HasInfOf(f)) return {InfBitsOf(f, neg), flags};
  return {env.saturate ? MaxFiniteBitsOf(f, neg) : DefaultNanOf(f), flags};
}

// Sets t to +-2^e (a stand-in value, see the header).
void SetPow2(mpfr_ptr t, bool neg, long e) {
  mpfr_set_ui_2exp(t, 1, e, MPFR_RNDN);
  if (neg) mpfr_neg(t, t, MPFR_RNDN);
}

}  // namespace

std::span<const ElementaryFn> AllElementaryFns() { return kAll; }

std::string_view ElementaryFnName(ElementaryFn fn) { return NameIn(kNames, fn); }

absl::StatusOr<ElementaryFn> ParseElementaryFn(std::string_view name) {
  return ParseNameIn(kNames, name, "elementwise function");
}

namespace {

ExactTruncation TruncateDecoded(ElementaryFn fn, const MpfrDecoded& d, mpfr_srcptr x,
                                mpfr_ptr t) {
  if (mpfr_get_prec(t) < 64 || mpfr_get_prec(t) > 128) Die("truncation precision out of range");
  ExactTruncation r;
  const bool neg = d.sign;
  auto nan = [&](Flags f) {
    r.kind = ExactKind::kNaN;
    r.flags = f;
    return r;
  };
  auto inf = [&](bool s, Flags f) {
    r.kind = ExactKind::kInf;
    r.negative = s;
    r.flags = f;
    return r;
  };
  auto zero = [&](bool s) {
    r.kind = ExactKind::kZero;
    r.negative = s;
    return r;
  };
  auto finite_pow2 = [&](bool s, long e, bool sticky) {
    SetPow2(t, s, e);
    r.kind = ExactKind::kFinite;
    r.negative = s;
    r.sticky = sticky;
    return r;
  };
  auto from_ternary = [&](int ternary) {
    r.kind = mpfr_zero_p(t) ? ExactKind::kZero : ExactKind::kFinite;
    r.negative = mpfr_signbit(t) != 0;
    r.sticky = ternary != 0;
    return r;
  };
  if (d.kind == MpfrKind::kNaN) return nan(d.signaling ? kInvalid : 0);
  switch (fn) {
    case ElementaryFn::kExp:
    case ElementaryFn::kExp2:
      if (d.kind == MpfrKind::kInf) return neg ? zero(false) : inf(false, 0);
      if (d.kind == MpfrKind::kZero) return finite_pow2(false, 0, false);
      if (mpfr_cmpabs_ui(x, 1UL << 20) >= 0) return finite_pow2(false, neg ? -4000 : 4000, true);
      return from_ternary(fn == ElementaryFn::kExp ? mpfr_exp(t, x, MPFR_RNDZ)
                                                   : mpfr_exp2(t, x, MPFR_RNDZ));
    case ElementaryFn::kLog:
      if (d.kind == MpfrKind::kZero) return inf(true, kDivideByZero);
      if (neg) return nan(kInvalid);
      if (d.kind == MpfrKind::kInf) return inf(false, 0);
      return from_ternary(mpfr_log(t, x, MPFR_RNDZ));  // log(1) = +0 exactly.
    case ElementaryFn::kTanh:
      if (d.kind == MpfrKind::kZero) return zero(neg);
      if (d.kind == MpfrKind::kInf) return finite_pow2(neg, 0, false);
      return from_ternary(mpfr_tanh(t, x, MPFR_RNDZ));
    case ElementaryFn::kRsqrt:
      if (d.kind == MpfrKind::kZero) return inf(neg, kDivideByZero);
      if (neg) return nan(kInvalid);
      if (d.kind == MpfrKind::kInf) return zero(false);
      return from_ternary(mpfr_rec_sqrt(t, x, MPFR_RNDZ));
    case ElementaryFn::kReciprocal:
      if (d.kind == MpfrKind::kZero) return inf(neg, kDivideByZero);
      if (d.kind == MpfrKind::kInf) return zero(neg);
      return from_ternary(mpfr_ui_div(t, 1, x, MPFR_RNDZ));
    case ElementaryFn::kSigmoid:
    case ElementaryFn::kSilu:
    case ElementaryFn::kGelu:
    case ElementaryFn::kGeluTanh:
      break;
  }
  // Composites.
  const bool sigmoid = fn == ElementaryFn::kSigmoid;
  if (d.kind == MpfrKind::kInf) {
    if (!neg) return sigmoid ? finite_pow2(false, 0, false) : inf(false, 0);
    return zero(!sigmoid);  // sigmoid(-Inf) = +0; silu/gelu/gelu_tanh(-Inf) = -0 (limits).
  }
  if (d.kind == MpfrKind::kZero) {
    if (sigmoid) return finite_pow2(false, -1, false);
    return zero(neg);
  }
  if (mpfr_cmpabs_ui(x, 1024) >= 0) {
    // |value| < 2^-1400 (x <= -1024), or value within 2^-1400 X of X (x >= 1024): header.
    if (neg) return finite_pow2(!sigmoid, -4000, true);
    if (sigmoid) {
      mpfr_set_ui(t, 1, MPFR_RNDN);
    } else {
      mpfr_set(t, x, MPFR_RNDN);
    }
    mpfr_nextbelow(t);
    r.kind = ExactKind::kFinite;
    r.negative = false;
    r.sticky = true;
    return r;
  }
  for (mpfr_prec_t w = kZivStart; w <= kZivCap; w *= 2) {
    if (CompositeStep(fn, x, w, t)) {
      r.kind = ExactKind::kFinite;
      r.negative = mpfr_signbit(t) != 0;
      r.sticky = true;
      return r;
    }
  }
  Die("Ziv loop reached 2^20 bits (a representable value of a composite function?)");
}

}  // namespace

ExactTruncation ElementaryTruncate(ElementaryFn fn, const FormatSpec& in, uint64_t bits,
                                   bool daz, mpfr_ptr t) {
  MpfrValue x(64);
  const MpfrDecoded d = MpfrDecodeBits(in, bits, daz, x);
  return TruncateDecoded(fn, d, x, t);
}

OpResult ElementaryRound(ElementaryFn fn, const FormatSpec& in, uint64_t bits,
                         const FormatSpec& out, const OpEnv& env) {
  if (!IsFloat(in) || !IsFloat(out) || Precision(out) > 53) Die("unsupported formats");
  thread_local MpfrValue x(64);
  thread_local MpfrValue t(kTruncBits);
  const MpfrDecoded d = MpfrDecodeBits(in, bits, env.denormals_are_zero, x);
  if (d.kind == MpfrKind::kNaN) {
    return {MpfrNanBits(out, env, &in, &d), static_cast<Flags>(d.signaling ? kInvalid : 0)};
  }
  const ExactTruncation r = TruncateDecoded(fn, d, x, t);
  switch (r.kind) {
    case ExactKind::kNaN:
      return {MpfrNanBits(out, env, nullptr, nullptr), r.flags};
    case ExactKind::kInf:
      return InfResultOf(out, r.negative, r.flags, env);
    case ExactKind::kZero:
      return ZeroOf(out, r.negative);
    case ExactKind::kFinite:
      break;
  }
  return MpfrRoundToFormat(out, r.negative, t, r.sticky, env);
}

ExactEnclosure ElementaryEnclose(ElementaryFn fn, const FormatSpec& in, uint64_t bits,
                                 const OpEnv& env) {
  ExactEnclosure e;
  OpEnv m = env;
  m.flush_to_zero = false;
  m.saturate = false;
  m.rounding = Rounding::kNearestEven;
  const OpResult n = ElementaryRound(fn, in, bits, Float64(), m);
  m.rounding = Rounding::kDownward;
  const OpResult lo = ElementaryRound(fn, in, bits, Float64(), m);
  m.rounding = Rounding::kUpward;
  const OpResult hi = ElementaryRound(fn, in, bits, Float64(), m);
  e.nearest = std::bit_cast<double>(n.bits);
  e.lo = std::bit_cast<double>(lo.bits);
  e.hi = std::bit_cast<double>(hi.bits);
  e.exact = (n.flags & kInexact) == 0 && !std::isnan(e.nearest);
  return e;
}

// ---- The certified binary64 path (header comment). ----

namespace cd = certified;

bool ElementaryFastSupported(const FormatSpec& in, const FormatSpec& out, const OpEnv& env) {
  return IsFloat(in) && IsFloat(out) && Precision(in) <= 53 && Precision(out) <= 53 &&
         out.has_subnormals && out.has_zero && out.has_sign &&
         env.rounding != Rounding::kStochastic;
}

namespace {

// Sign and open magnitude interval of a value known by a tail rule.
struct Tail {
  bool neg;
  double mlo, mhi;
};
// Just below X > 0 (0 < X - v < X 2^-54 <= X - pred(X)): (pred(X), X).
Tail Below(double x) { return {false, std::nextafter(x, 0.0), x}; }
// |v| in (0, 2^-960) with the given sign.
Tail Tiny(bool neg) { return {neg, 0.0, 0x1p-960}; }
// |v| >= 2^1024 (beyond every format of precision <= 53).
Tail Huge() { return {false, 0x1.fffffffffffffp1023, cd::kInf}; }

// Decides fn(x) for a finite non-zero double x, or returns false.
// With `capture`, the interval the decision would be taken on is stored there instead (and true
// returned): ElementaryEncloseFast.
bool FastOne(ElementaryFn fn, double x, const FormatSpec& out, const OpEnv& env, OpResult* r,
             cd::Interval* capture = nullptr) {
  using cd::Add;
  using cd::Div;
  using cd::Ev;
  using cd::Exact;
  using cd::Mul;
  using cd::Sub;
  auto tail = [&](Tail t) {
    if (capture != nullptr) {
      *capture = t.neg ? cd::Interval{-t.mhi, -t.mlo} : cd::Interval{t.mlo, t.mhi};
      return true;
    }
    return cd::Decide(out, env, t.neg, t.mlo, t.mhi, r);
  };
  auto value = [&](Ev v) {
    if (capture != nullptr) {
      *capture = cd::Enclose(v);
      return true;
    }
    return cd::DecideInterval(out, env, cd::Enclose(v), r);
  };
  // Anchored values: v = A + B with A a double and B in [b_lo, b_hi] (bounds of one sign, or
  // the sign of B known): the open interval (RD(A + b_lo), RU(A + b_hi)), clamped to A on the
  // side where B's sign puts v strictly beyond A.
  auto anchored = [&](double a, double b_lo, double b_hi, int b_sign) {
    double lo = std::nextafter(a + b_lo, -cd::kInf);
    double hi = std::nextafter(a + b_hi, cd::kInf);
    if (b_sign > 0 && lo < a) lo = a;
    if (b_sign < 0 && hi > a) hi = a;
    if (capture != nullptr) {
      *capture = {lo, hi};
      return true;
    }
    return cd::DecideInterval(out, env, {lo, hi}, r);
  };
  // Small |x|: B's bounds from the Taylor series, with relative margins (2^-50) that cover the
  // few roundings of the bounds' own computation (<= 3u) and of the constants (u):
  //   exp (|x| < 2^-30):  e^x - 1 in (x, x (1 + 2^-29)) for x > 0, (x, x (1 - 2^-30)) for x < 0
  //                       (x^2/2 < |x| 2^-31);
  //   exp2 (|x| < 2^-30): 2^x - 1 = t + t^2/2 + ..., t = x ln2: the same with t;
  //   sigmoid (|x| < 2^-30): sigmoid(x) - 1/2 = x/4 - x^3/48 + ...: x/4 (1 - 2^-40 .. 1);
  //   silu (|x| < 2^-20): silu(x) - x/2 = x^2/4 - x^4/48 + ...: x^2/4 (1 - 2^-30 .. 1 + 2^-50);
  //   gelu, gelu_tanh (|x| < 2^-20): f(x) - x/2 = k x^2 (1 + O(x^2)), k = 1/sqrt(2 pi) (both:
  //     gelu_tanh's x (sigmoid(v) - 1/2) = x v/4 + ... = sqrt(2/pi)/2 x^2 (1 + 0.044715 x^2)
  //     - ...):
  //     k x^2 (1 -+ 2^-30);
  //   tanh (|x| < 2^-10): tanh(x) - x = -(x^3/3)(1 - (2/5) x^2 + ...): -(x^3/3)(1 - 0.41 x^2
  //     - 2^-49 .. 1 + 2^-49).
  const double ax = std::fabs(x);
  const double m50 = 0x1p-50;
  switch (fn) {
    case ElementaryFn::kExp:
      if (ax < 0x1p-30) {
        return x > 0 ? anchored(1.0, x, x * (1 + 0x1p-29), 1)
                     : anchored(1.0, x, x * (1 - 0x1p-30), -1);
      }
      break;
    case ElementaryFn::kExp2:
      if (ax < 0x1p-30) {
        const double t = x * cd::Ln2().y;
        return x > 0 ? anchored(1.0, t * (1 - m50), t * (1 + 0x1p-29), 1)
                     : anchored(1.0, t * (1 + m50), t * (1 - 0x1p-30), -1);
      }
      break;
    case ElementaryFn::kSigmoid:
      if (ax < 0x1p-30) {
        return x > 0 ? anchored(0.5, (x / 4) * (1 - 0x1p-40), x / 4, 1)
                     : anchored(0.5, x / 4, (x / 4) * (1 - 0x1p-40), -1);
      }
      break;
    case ElementaryFn::kSilu:
      if (ax < 0x1p-20) {
        const double b = 0.25 * (x * x);
        return anchored(0.5 * x, b * (1 - 0x1p-30), b * (1 + m50), 1);
      }
      break;
    case ElementaryFn::kGelu:
    case ElementaryFn::kGeluTanh:
      if (ax < 0x1p-20) {
        const double b = 0.5 * cd::TwoOverSqrtPi().y * cd::InvSqrt2().y * (x * x);
        return anchored(0.5 * x, b * (1 - 0x1p-30), b * (1 + 0x1p-30), 1);
      }
      break;
    case ElementaryFn::kTanh:
      if (ax < 0x1p-10) {
        const double c3 = ax * ax * ax / 3;
        const double big = c3 * (1 + 0x1p-49), small = c3 * (1 - 0.41 * ax * ax - 0x1p-49);
        return x > 0 ? anchored(x, -big, -small, -1) : anchored(x, small, big, 1);
      }
      break;
    default:
      break;
  }
  switch (fn) {
    case ElementaryFn::kExp:
      if (x >= 710.0) return tail(Huge());         // e^710 > 2^1024.
      if (x <= -700.0) return tail(Tiny(false));   // e^-700 < 2^-1009.
      return value(cd::ExpEv(Exact(x)));
    case ElementaryFn::kExp2:
      if (x >= 1024.0) return tail(Huge());
      if (x <= -961.0) return tail(Tiny(false));
      return value(cd::Exp2Of(x));
    case ElementaryFn::kLog:
      if (x < 0 || x == 1.0) return false;
      return value(cd::LogEv(Exact(x)));
    case ElementaryFn::kTanh:
      if (std::fabs(x) >= 20.0) {  // 1 - tanh|x| = 2 e^-2|x| / (1 + e^-2|x|) < 2^-56.
        Tail t = Below(1.0);
        t.neg = x < 0;
        return tail(t);
      }
      return value(cd::TanhOf(x));
    case ElementaryFn::kSigmoid:
    case ElementaryFn::kSilu:
    case ElementaryFn::kGeluTanh:
    case ElementaryFn::kGelu: {
      // value = X s(a) with s = sigmoid, X = 1 (sigmoid) or x, a = x or v (gelu_tanh's
      // 2 sqrt(2/pi)(x + 0.044715 x^3)); gelu: X (1 + erf(x/sqrt2)) / 2.
      // x > 0: X - c with c = X s(-a) (gelu: X erfc(x/sqrt2)/2) evaluated alone; when
      // c < X 2^-54 the value is in (pred(X), X). x < 0: X s(a) = X / (1 + e^-a) (gelu:
      // X erfc(|x|/sqrt2)/2), no cancellation.
      const bool sigmoid = fn == ElementaryFn::kSigmoid;
      const double big_x = sigmoid ? 1.0 : x;
      if (x >= 745.0) return tail(Below(big_x));      // c < X e^-745 < X 2^-1074.
      // Tiny: |gelu| <= |x| e^(-x^2/2) / 2 (x <= -38), |gelu_tanh| < |x| e^-|v| with
      // |v| > 0.07 |x|^3 (x <= -30), silu <= |x| e^x <= 700 e^-700, sigmoid < e^-700: all below
      // 2^-1000.
      if ((fn == ElementaryFn::kGelu && x <= -38.0) ||
          (fn == ElementaryFn::kGeluTanh && x <= -30.0) ||
          (fn == ElementaryFn::kSilu && x <= -700.0)) {
        return tail(Tiny(true));
      }
      if (sigmoid && x <= -700.0) return tail(Tiny(false));
      Ev c;  // x > 0: the correction; x < 0: the value.
      if (fn == ElementaryFn::kGelu) {
        const double ax2 = 0.5 * x * x;  // Exact: x^2 / 2 for inputs of <= 26 bits; else Ev.
        if (std::fabs(x) <= 3.0) {
          const Ev erf = cd::ErfEv(Mul(Exact(x), cd::InvSqrt2()));
          return value(Mul(Exact(0.5 * x), Add(Exact(1.0), erf)));
        }
        if (ax2 > 690.0) {
          // |x| erfc(|x|/sqrt2)/2 < |x| e^-690 / 2 < 2^-990 (|x| < 38 here).
          return x > 0 ? tail(Below(x)) : tail(Tiny(true));
        }
        const Ev k = cd::ErfcScaledEv(Mul(Exact(std::fabs(x)), cd::InvSqrt2()));
        const Ev e = cd::ExpEv(Mul(Mul(Exact(x), Exact(x)), Exact(-0.5)));
        const Ev inv_sqrt_pi{0.5 * cd::TwoOverSqrtPi().y, 0.5 * cd::TwoOverSqrtPi().e};
        c = Mul(Mul(Exact(0.5 * x), e), Mul(k, inv_sqrt_pi));  // X erfc(|x|/sqrt2) / 2.
      } else {
        Ev a = Exact(x);
        if (fn == ElementaryFn::kGeluTanh) {
          const Ev x3 = Mul(Mul(Exact(x), Exact(x)), Exact(x));
          a = Mul(cd::GeluTanhK(), Add(Exact(x), Mul(cd::GeluTanhA(), x3)));
        }
        if (a.y > 690.0) return tail(Below(big_x));    // c < X e^-690.
        // x < 0, a < -690: |value| < |X| e^-690 < 2^-985 (|X| <= 700).
        if (a.y < -690.0) return tail(Tiny(!sigmoid));
        // x > 0: c = X / (1 + e^a); x < 0: value X / (1 + e^-a).
        const Ev e = cd::ExpEv(x > 0 ? a : Ev{-a.y, a.e});
        c = Div(Exact(big_x), Add(Exact(1.0), e));
      }
      if (x < 0) return value(c);
      if (!cd::Ok(c)) return false;
      if (c.y + c.e < big_x * 0x1p-54) return tail(Below(big_x));
      const double eb = c.e * (1.0 + 0x1p-30) + 0x1p-1000;
      if (!(c.y > eb)) return false;
      return anchored(big_x, -(c.y + eb), -(c.y - eb), -1);
    }
    case ElementaryFn::kRsqrt:
      if (x < 0) return false;
      return value(Div(Exact(1.0), cd::Sqrt(Exact(x))));
    case ElementaryFn::kReciprocal:
      return value(Div(Exact(1.0), Exact(x)));
  }
  return false;
}

void BatchRange(ElementaryFn fn, const FormatSpec& in, std::span<const uint64_t> in_bits,
                const FormatSpec& out, const OpEnv& env, std::span<uint64_t> out_bits,
                std::span<Flags> out_flags, ElementaryStats* stats) {
  const bool fast_ok = ElementaryFastSupported(in, out, env);
  for (size_t i = 0; i < in_bits.size(); ++i) {
    OpResult r;
    double x = 0;
    const int kind = fast_ok ? cd::DecodeToDouble(in, in_bits[i], env.denormals_are_zero, &x) : -1;
    const bool invalid = kind == 1 && x < 0 &&
                         (fn == ElementaryFn::kLog || fn == ElementaryFn::kRsqrt);
    if (kind != 1 || invalid) {
      r = ElementaryRound(fn, in, in_bits[i], out, env);
      ++stats->special;
    } else if (FastOne(fn, x, out, env, &r)) {
      ++stats->fast;
    } else {
      r = ElementaryRound(fn, in, in_bits[i], out, env);
      ++stats->fallback;
    }
    out_bits[i] = r.bits;
    if (!out_flags.empty()) out_flags[i] = r.flags;
  }
}

}  // namespace

bool ElementaryEncloseFast(ElementaryFn fn, const FormatSpec& in, uint64_t bits, double* lo,
                           double* hi) {
  double x = 0;
  if (!IsFloat(in) || Precision(in) > 53 || cd::DecodeToDouble(in, bits, false, &x) != 1) return false;
  if (x < 0 && (fn == ElementaryFn::kLog || fn == ElementaryFn::kRsqrt)) return false;
  cd::Interval iv{0, 0};
  OpResult unused;
  if (!FastOne(fn, x, Float64(), OpEnv{}, &unused, &iv)) return false;
  *lo = iv.lo;
  *hi = iv.hi;
  return std::isfinite(*lo) && std::isfinite(*hi) && *lo < *hi;
}

absl::Status ElementarySupports(const FormatSpec& in, const FormatSpec& out) {
  if (!IsFloat(in)) {
    return absl::InvalidArgumentError("elementwise oracle: input format " + std::string(in.name) +
                                      " is not a float format");
  }
  if (!IsFloat(out) || Precision(out) > 53) {
    return absl::InvalidArgumentError("elementwise oracle: output format " +
                                      std::string(out.name) +
                                      " must be a float format of at most 53 bits");
  }
  return absl::OkStatus();
}

absl::Status ElementaryRoundBatch(ElementaryFn fn, const FormatSpec& in,
                                  std::span<const uint64_t> in_bits, const FormatSpec& out,
                                  const OpEnv& env, std::span<uint64_t> out_bits,
                                  std::span<Flags> out_flags, ElementaryStats* stats,
                                  int threads) {
  if (absl::Status st = ElementarySupports(in, out); !st.ok()) return st;
  if (out_bits.size() != in_bits.size() ||
      (!out_flags.empty() && out_flags.size() != in_bits.size())) {
    return absl::InvalidArgumentError("elementwise oracle: output spans of the wrong size");
  }
  const int64_t n = static_cast<int64_t>(in_bits.size());
  std::vector<ElementaryStats> st(static_cast<size_t>(RangeWorkers(n, threads)));
  RunRanges(n, threads, [&](int64_t w, int64_t begin, int64_t end) {
    const size_t b = static_cast<size_t>(begin), len = static_cast<size_t>(end - begin);
    BatchRange(fn, in, in_bits.subspan(b, len), out, env, out_bits.subspan(b, len),
               out_flags.empty() ? out_flags : out_flags.subspan(b, len), &st[static_cast<size_t>(w)]);
  });
  ElementaryStats total;
  for (const ElementaryStats& s : st) total += s;
  if (stats != nullptr) *stats += total;
  return absl::OkStatus();
}

}  // namespace fpconform
