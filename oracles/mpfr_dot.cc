#include "oracles/mpfr_dot.h"

#include <gmp.h>
#include <mpfr.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace fpconform {
namespace {

using Kind = MpfrExact::Kind;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "mpfr_dot: internal error: %s\n", what);
  std::abort();
}

int BitLength(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

// ---- Field access, from the FormatSpec row only. ----

struct Fields {
  bool sign;
  uint64_t exponent;  // Biased exponent field.
  uint64_t fraction;  // Fraction field.
};

uint64_t AllOnes(int n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

Fields Split(const FormatSpec& f, uint64_t bits) {
  const int eb = EncodingBits(f);
  const uint64_t enc = (bits >> f.pad_bits) & AllOnes(eb);
  Fields r;
  r.sign = f.has_sign && ((enc >> (eb - 1)) & 1) != 0;
  r.exponent = (enc >> f.fraction_bits) & AllOnes(f.exponent_bits);
  r.fraction = enc & AllOnes(f.fraction_bits);
  return r;
}

uint64_t Join(const FormatSpec& f, bool sign, uint64_t exponent, uint64_t fraction) {
  uint64_t enc = (exponent << f.fraction_bits) | fraction;
  if (sign && f.has_sign) enc |= uint64_t{1} << (EncodingBits(f) - 1);
  return enc << f.pad_bits;
}

bool IsIeeeEncoded(const FormatSpec& f) {
  return f.nonfinite == NonFinite::kIeee || f.nan_encoding == NanEncoding::kIeee;
}

// ---- Special encodings. ----

uint64_t ZeroBitsOf(const FormatSpec& f, bool negative) {
  // Formats without -0 (fnuz) give +0 wherever -0 would be given.
  const bool keep = negative && f.nan_encoding != NanEncoding::kNegativeZero;
  return Join(f, keep, 0, 0);
}

uint64_t InfBitsOf(const FormatSpec& f, bool negative) {
  return Join(f, negative, AllOnes(f.exponent_bits), 0);
}

// The NaN per the NanProfile table of op_env.h. src_format == nullptr: invalid operation.
uint64_t NanBitsOf(const FormatSpec& to, const OpEnv& env, const FormatSpec* src_format,
                   uint64_t src_bits) {
  const uint64_t all_exp = AllOnes(to.exponent_bits);
  if (to.nan_encoding == NanEncoding::kNegativeZero) return Join(to, true, 0, 0);
  bool sign = false;
  uint64_t payload = 0;
  bool propagate = src_format != nullptr &&
                   (env.nan == NanProfile::kIeee || env.nan == NanProfile::kX86);
  if (propagate) {
    Fields s = Split(*src_format, src_bits);
    sign = s.sign;
    if (src_format->nan_encoding == NanEncoding::kNegativeZero) sign = true;
    if (IsIeeeEncoded(*src_format)) payload = s.fraction;
    if (src_format->fraction_bits >= to.fraction_bits) {
      payload >>= src_format->fraction_bits - to.fraction_bits;
    } else {
      payload <<= to.fraction_bits - src_format->fraction_bits;
    }
  } else if (src_format == nullptr && env.nan == NanProfile::kX86) {
    sign = true;
  }
  if (to.nan_encoding == NanEncoding::kAllOnes) {
    if (env.nan == NanProfile::kCuda || env.nan == NanProfile::kCanonical) sign = false;
    return Join(to, sign, all_exp, AllOnes(to.fraction_bits));
  }
  const uint64_t quiet = uint64_t{1} << (to.fraction_bits - 1);
  if (env.nan == NanProfile::kCuda) return Join(to, false, all_exp, AllOnes(to.fraction_bits));
  if (env.nan == NanProfile::kCanonical) return Join(to, false, all_exp, quiet);
  return Join(to, sign, all_exp, (payload & AllOnes(to.fraction_bits)) | quiet);
}

}  // namespace

// ---- Thread-local scratch. ----
// In a named namespace: MpfrDotBuilder, a class of the library's namespace (a friend of
// mpfr_dot.h's classes), holds one, and a member of a type of an anonymous namespace is an error
// for GCC where this file is compiled in a unity batch (-Wsubobject-linkage).

namespace mpfr_dot_internal {

struct Scratch {
  std::vector<std::unique_ptr<MpfrValue>> terms;  // Grown on demand.
  std::vector<mpfr_ptr> ptrs;
  MpfrValue da, db, ax, u, d, z, a, s, m, t, enc, maxf;  // 64 bits each (mpfr_plumbing.h).
  mpz_t mz;
  Scratch() { mpz_init(mz); }
  ~Scratch() { mpz_clear(mz); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  mpfr_ptr Term(size_t i) {
    while (terms.size() <= i) terms.push_back(std::make_unique<MpfrValue>(64));
    return terms[i]->get();
  }
};

Scratch& S() {
  thread_local Scratch s;
  return s;
}

}  // namespace mpfr_dot_internal

using mpfr_dot_internal::S;
using mpfr_dot_internal::Scratch;

namespace {

// Encodes the value d (zero, or representable in f and within its finite range) with sign.
uint64_t EncodeValue(const FormatSpec& f, bool negative, mpfr_srcptr d) {
  if (mpfr_zero_p(d)) return ZeroBitsOf(f, negative);
  const int fb = f.fraction_bits;
  const long e = mpfr_get_exp(d) - 1;  // d in [2^e, 2^(e+1)).
  long q;
  uint64_t biased;
  if (f.has_subnormals && e < Emin(f)) {
    biased = 0;
    q = Emin(f) - fb;
  } else {
    biased = static_cast<uint64_t>(e + f.bias);
    q = e - fb;
  }
  Scratch& sc = S();
  mpfr_set_prec(sc.enc, 64);
  if (mpfr_mul_2si(sc.enc, d, -q, MPFR_RNDN) != 0 || !mpfr_integer_p(sc.enc)) {
    Fail("EncodeValue: value not representable");
  }
  uint64_t sig = mpfr_get_ui(sc.enc, MPFR_RNDN);
  uint64_t fraction = biased == 0 && f.has_subnormals ? sig : sig - (uint64_t{1} << fb);
  return Join(f, negative, biased, fraction);
}

// Max finite of f into v.
void SetMaxFinite(const FormatSpec& f, mpfr_ptr v) {
  mpfr_set_prec(v, 64);
  mpfr_set_ui_2exp(v, MaxFiniteSignificand(f), Emax(f) - f.fraction_bits, MPFR_RNDN);
}

// Rounding on magnitudes: the sign is applied by the caller.
enum class Mag : uint8_t { kNearestEven, kNearestAway, kZero, kAway, kOdd, kStochastic };

Mag MagMode(const OpEnv& env, bool negative) {
  switch (env.rounding) {
    case Rounding::kNearestEven: return Mag::kNearestEven;
    case Rounding::kNearestAway: return Mag::kNearestAway;
    case Rounding::kTowardZero: return Mag::kZero;
    case Rounding::kUpward: return negative ? Mag::kZero : Mag::kAway;
    case Rounding::kDownward: return negative ? Mag::kAway : Mag::kZero;
    case Rounding::kToOdd: return Mag::kOdd;
    case Rounding::kStochastic: return Mag::kStochastic;
  }
  return Mag::kNearestEven;
}

}  // namespace

namespace {

// MPFR's IEEE recipe: x > 0 rounded to p bits by rnd (RNDN, RNDZ or RNDA); with `range`, also
// into the exponent range of that format (subnormals included). Returns the ternary value.
int Base(mpfr_ptr out, mpfr_srcptr x, int p, const FormatSpec* range, mpfr_rnd_t rnd) {
  mpfr_set_prec(out, p);
  int t = mpfr_set(out, x, rnd);
  if (range != nullptr) {
    MpfrDotRangeGuard guard(*range);
    t = mpfr_check_range(out, t, rnd);
    t = mpfr_subnormalize(out, t, rnd);
  }
  return t;
}

// x > 0 rounded to p bits (and into `range`'s exponent range when given) in magnitude mode
// `mode`. Sets *away when the result is above x. Returns true when inexact.
bool RoundMag(mpfr_ptr out, mpfr_srcptr x, int p, const FormatSpec* range, Mag mode,
              const OpEnv& env, bool* away) {
  Scratch& sc = S();
  *away = false;
  switch (mode) {
    case Mag::kNearestEven: {
      int t = Base(out, x, p, range, MPFR_RNDN);
      *away = t > 0;
      return t != 0;
    }
    case Mag::kZero:
      return Base(out, x, p, range, MPFR_RNDZ) != 0;
    case Mag::kAway: {
      int t = Base(out, x, p, range, MPFR_RNDA);
      *away = t != 0;
      return t != 0;
    }
    default:
      break;
  }
  // The two neighbours z <= x < a at the delivered precision.
  if (Base(sc.z, x, p, range, MPFR_RNDZ) == 0) {
    mpfr_set_prec(out, p);
    mpfr_set(out, sc.z, MPFR_RNDN);
    return false;
  }
  Base(sc.a, x, p, range, MPFR_RNDA);
  bool up = false;
  if (mode == Mag::kStochastic) {
    // (x - z) / (a - z) in [0, 1); a - z is a power of two (one quantum).
    mpfr_set_prec(sc.s, 2);
    if (mpfr_sub(sc.s, sc.a, sc.z, MPFR_RNDN) != 0) Fail("sr: quantum");
    mpfr_set_prec(sc.m, mpfr_get_prec(x) + 2);
    if (mpfr_sub(sc.m, x, sc.z, MPFR_RNDN) != 0) Fail("sr: x - z");
    const int k = env.sr_bits;
    mpfr_mul_2ui(sc.m, sc.m, static_cast<unsigned long>(k), MPFR_RNDN);
    if (mpfr_div(sc.m, sc.m, sc.s, MPFR_RNDN) != 0) Fail("sr: divide");
    const uint64_t top = mpfr_get_ui(sc.m, MPFR_RNDZ);
    const uint64_t r = env.sr_random & AllOnes(k);
    up = top + r >= (uint64_t{1} << k);
  } else {
    // Midpoint (z + a) / 2, exact in p + 2 bits.
    mpfr_set_prec(sc.s, p + 2);
    if (mpfr_add(sc.s, sc.z, sc.a, MPFR_RNDN) != 0) Fail("midpoint");
    mpfr_div_2ui(sc.s, sc.s, 1, MPFR_RNDN);
    if (mode == Mag::kNearestAway) {
      up = mpfr_cmp(x, sc.s) >= 0;
    } else {  // kOdd: the even neighbour is what round-to-nearest-even gives for the midpoint.
      Base(sc.m, sc.s, p, range, MPFR_RNDN);
      up = mpfr_equal_p(sc.m, sc.z) != 0;
    }
  }
  mpfr_set_prec(out, p);
  mpfr_set(out, up ? sc.a : sc.z, MPFR_RNDN);
  *away = up;
  return true;
}

}  // namespace

// ---- MpfrExact ----

MpfrExact::MpfrExact() { mpfr_init2(value_, 64); mpfr_set_zero(value_, 1); }
MpfrExact::~MpfrExact() { mpfr_clear(value_); }

std::string MpfrExact::ToText() const {
  switch (kind_) {
    case Kind::kNaN: return "nan";
    case Kind::kInf: return negative_ ? "-inf" : "inf";
    case Kind::kZero: return mpfr_signbit(value_) ? "-0" : "0";
    case Kind::kFinite: break;
  }
  mpz_t z;
  mpz_init(z);
  long e = mpfr_get_z_2exp(z, value_);
  const bool neg = mpz_sgn(z) < 0;
  mpz_abs(z, z);
  const mp_bitcnt_t tz = mpz_scan1(z, 0);
  mpz_fdiv_q_2exp(z, z, tz);
  e += static_cast<long>(tz);
  std::string hex(mpz_sizeinbase(z, 16) + 2, '\0');
  mpz_get_str(hex.data(), 16, z);
  hex.resize(std::char_traits<char>::length(hex.c_str()));
  std::string out = std::string(neg ? "-" : "") + "0x" + hex + "p" + std::to_string(e);
  mpz_clear(z);
  return out;
}

MpfrExact::Kind MpfrDotDecode(const FormatSpec& f, uint64_t bits, bool daz, mpfr_ptr out,
                              bool* negative, bool* signaling) {
  static_assert(static_cast<int>(Kind::kZero) == static_cast<int>(MpfrKind::kZero) &&
                static_cast<int>(Kind::kFinite) == static_cast<int>(MpfrKind::kFinite) &&
                static_cast<int>(Kind::kInf) == static_cast<int>(MpfrKind::kInf) &&
                static_cast<int>(Kind::kNaN) == static_cast<int>(MpfrKind::kNaN));
  mpfr_set_prec(out, std::max(Precision(f), 2));
  const MpfrDecoded d = MpfrDecodeBits(f, bits, daz, out);  // oracles/mpfr_plumbing.h
  *negative = d.sign;
  *signaling = d.signaling;
  return static_cast<Kind>(d.kind);
}

// Collects the terms of a reduction and finishes the exact value.
class MpfrDotBuilder {
 public:
  explicit MpfrDotBuilder(bool daz) : daz_(daz), sc_(S()) {}

  void AddValue(const FormatSpec& f, uint64_t bits) {
    bool neg, sig;
    mpfr_ptr term = sc_.Term(count_);
    Kind k = MpfrDotDecode(f, bits, daz_, term, &neg, &sig);
    Note(k, neg, sig, &f, bits);
    if (k == Kind::kFinite) ++count_;
  }

  void AddProduct(const FormatSpec& fa, uint64_t a, const FormatSpec& fb, uint64_t b) {
    bool na, sa, nb, sb;
    Kind ka = MpfrDotDecode(fa, a, daz_, sc_.da, &na, &sa);
    Kind kb = MpfrDotDecode(fb, b, daz_, sc_.db, &nb, &sb);
    if (ka == Kind::kNaN || kb == Kind::kNaN) {
      if (sa || sb) snan_ = true;
      if (!nan_) {
        nan_ = true;
        if (ka == Kind::kNaN) {
          nan_format_ = &fa, nan_bits_ = a;
        } else {
          nan_format_ = &fb, nan_bits_ = b;
        }
      }
      return;
    }
    const bool neg = na != nb;
    if (ka == Kind::kInf || kb == Kind::kInf) {
      if (ka == Kind::kZero || kb == Kind::kZero) {
        invalid_ = true;
      } else {
        (neg ? neg_inf_ : pos_inf_) = true;
      }
      return;
    }
    if (ka == Kind::kZero || kb == Kind::kZero) {
      (neg ? neg_zero_ : pos_zero_) = true;
      return;
    }
    mpfr_ptr term = sc_.Term(count_++);
    mpfr_set_prec(term, mpfr_get_prec(sc_.da) + mpfr_get_prec(sc_.db));
    if (mpfr_mul(term, sc_.da, sc_.db, MPFR_RNDN) != 0) Fail("product not exact");
  }

  void Finish(MpfrExact& out) {
    out.flags_ = (snan_ || invalid_ || (pos_inf_ && neg_inf_)) ? kInvalid : 0;
    out.nan_format_ = nullptr;
    out.nan_bits_ = 0;
    out.zero_sign_fixed_ = true;
    if (nan_ || invalid_ || (pos_inf_ && neg_inf_)) {
      out.kind_ = Kind::kNaN;
      out.negative_ = false;
      if (nan_) {
        out.nan_format_ = nan_format_;
        out.nan_bits_ = nan_bits_;
      }
      return;
    }
    if (pos_inf_ || neg_inf_) {
      out.kind_ = Kind::kInf;
      out.negative_ = neg_inf_;
      return;
    }
    if (count_ == 0) {
      out.kind_ = Kind::kZero;
      out.zero_sign_fixed_ = !(pos_zero_ && neg_zero_);
      out.negative_ = neg_zero_ && !pos_zero_;
      mpfr_set_prec(out.value_, 2);
      mpfr_set_zero(out.value_, out.negative_ ? -1 : 1);
      return;
    }
    long max_exp = 0, min_lsb = 0;
    sc_.ptrs.resize(count_);
    for (size_t i = 0; i < count_; ++i) {
      mpfr_ptr t = sc_.terms[i]->get();
      sc_.ptrs[i] = t;
      long e = mpfr_get_exp(t);
      long lsb = e - static_cast<long>(mpfr_get_prec(t));
      if (i == 0 || e > max_exp) max_exp = e;
      if (i == 0 || lsb < min_lsb) min_lsb = lsb;
    }
    const long prec = max_exp - min_lsb + BitLength(count_ + 1) + 1;
    mpfr_set_prec(out.value_, prec);
    if (mpfr_sum(out.value_, sc_.ptrs.data(), count_, MPFR_RNDN) != 0) Fail("sum not exact");
    if (mpfr_zero_p(out.value_)) {
      out.kind_ = Kind::kZero;
      out.zero_sign_fixed_ = false;
      out.negative_ = false;
      mpfr_set_zero(out.value_, 1);
      return;
    }
    out.kind_ = Kind::kFinite;
    out.negative_ = mpfr_sgn(out.value_) < 0;
  }

 private:
  void Note(Kind k, bool neg, bool sig, const FormatSpec* f, uint64_t bits) {
    switch (k) {
      case Kind::kNaN:
        if (sig) snan_ = true;
        if (!nan_) {
          nan_ = true;
          nan_format_ = f;
          nan_bits_ = bits;
        }
        break;
      case Kind::kInf: (neg ? neg_inf_ : pos_inf_) = true; break;
      case Kind::kZero: (neg ? neg_zero_ : pos_zero_) = true; break;
      case Kind::kFinite: break;
    }
  }

  bool daz_;
  Scratch& sc_;
  size_t count_ = 0;  // Finite non-zero terms in sc_.terms[0 .. count_).
  bool nan_ = false, snan_ = false, invalid_ = false;
  bool pos_inf_ = false, neg_inf_ = false, pos_zero_ = false, neg_zero_ = false;
  const FormatSpec* nan_format_ = nullptr;
  uint64_t nan_bits_ = 0;
};

void MpfrExactSum(const FormatSpec& fx, std::span<const uint64_t> x, const OpEnv& env,
                  MpfrExact& out) {
  MpfrDotBuilder b(env.denormals_are_zero);
  for (uint64_t v : x) b.AddValue(fx, v);
  b.Finish(out);
}

void MpfrExactDot(const FormatSpec& fa, std::span<const uint64_t> a, const FormatSpec& fb,
                  std::span<const uint64_t> b, const FormatSpec* fc, uint64_t c,
                  const OpEnv& env, MpfrExact& out) {
  if (a.size() != b.size()) Fail("MpfrExactDot: a and b differ in length");
  MpfrDotBuilder builder(env.denormals_are_zero);
  for (size_t i = 0; i < a.size(); ++i) builder.AddProduct(fa, a[i], fb, b[i]);
  if (fc != nullptr) builder.AddValue(*fc, c);
  builder.Finish(out);
}

OpResult MpfrRoundExact(const FormatSpec& to, const MpfrExact& x, const OpEnv& env) {
  if (!IsFloat(to)) Fail("MpfrRoundExact: integer target");
  const OpResult invalid_nan{NanBitsOf(to, env, nullptr, 0), kInvalid};
  switch (x.kind_) {
    case Kind::kNaN:
      return {NanBitsOf(to, env, x.nan_format_, x.nan_bits_), x.flags_};
    case Kind::kInf: {
      if (to.nonfinite == NonFinite::kIeee) return {InfBitsOf(to, x.negative_), 0};
      if (!to.has_sign && x.negative_) return invalid_nan;
      if (env.saturate) {
        SetMaxFinite(to, S().maxf);
        return {EncodeValue(to, x.negative_, S().maxf), 0};
      }
      return invalid_nan;
    }
    case Kind::kZero: {
      const bool neg = x.zero_sign_fixed_ ? x.negative_ : env.rounding == Rounding::kDownward;
      if (!to.has_zero) return invalid_nan;
      return {ZeroBitsOf(to, neg), x.flags_};
    }
    case Kind::kFinite:
      break;
  }
  const bool neg = x.negative_;
  if (!to.has_sign && neg) return invalid_nan;
  Scratch& sc = S();
  const int p = Precision(to);
  mpfr_set_prec(sc.ax, mpfr_get_prec(x.value_));
  mpfr_abs(sc.ax, x.value_, MPFR_RNDN);
  const Mag mode = MagMode(env, neg);

  // Unbounded exponent range, p bits: decides overflow and tininess after rounding.
  bool away_u;
  const bool inexact_u = RoundMag(sc.u, sc.ax, p, nullptr, mode, env, &away_u);
  SetMaxFinite(to, sc.maxf);
  if (mpfr_cmp(sc.u, sc.maxf) > 0) {
    // sr<k> (op_env.h): the neighbours of |x| above max finite are max finite and the overflow
    // result, so an sr<k> overflow is always to Inf. u exceeds max finite exactly when |x| >=
    // max + ulp (both p-bit neighbours of |x| are then >= max + ulp) or when |x| is in
    // (max, max + ulp), whose p-bit neighbours z = max and a = max + ulp are the format's, and
    // RoundMag picked a by the sr<k> rule on (|x| - max) / ulp.
    const bool to_inf = mode == Mag::kNearestEven || mode == Mag::kNearestAway ||
                        mode == Mag::kAway || mode == Mag::kStochastic;
    const Flags fl = kOverflow | kInexact;
    if (env.saturate || !to_inf) return {EncodeValue(to, neg, sc.maxf), fl};
    if (to.nonfinite == NonFinite::kIeee) return {InfBitsOf(to, neg), fl};
    return {NanBitsOf(to, env, nullptr, 0), fl};
  }
  const bool tiny_before = mpfr_cmp_ui_2exp(sc.ax, 1, Emin(to)) < 0;
  const bool tiny_after = mpfr_cmp_ui_2exp(sc.u, 1, Emin(to)) < 0;
  const bool tiny = env.tininess == Tininess::kAfterRounding ? tiny_after : tiny_before;

  bool inexact;
  mpfr_ptr d = sc.u;
  if (!to.has_subnormals) {
    // float8_e8m0fnu: below its smallest value it delivers the smallest value.
    if (tiny_after) mpfr_set_ui_2exp(sc.u, 1, Emin(to), MPFR_RNDN);
    inexact = mpfr_cmp(sc.u, sc.ax) != 0;
  } else if (tiny_before) {
    bool away;
    inexact = RoundMag(sc.d, sc.ax, p, &to, mode, env, &away);
    d = sc.d;
    if (env.flush_to_zero && tiny) return {ZeroBitsOf(to, neg), kUnderflow | kInexact};
  } else {
    inexact = inexact_u;
  }
  Flags fl = 0;
  if (inexact) fl |= kInexact;
  if (inexact && tiny) fl |= kUnderflow;
  return {EncodeValue(to, neg, d), fl};
}

OpResult MpfrSum(const FormatSpec& fx, std::span<const uint64_t> x, const FormatSpec& to,
                 const OpEnv& env, MpfrExact* exact) {
  MpfrExact local;
  MpfrExact& e = exact != nullptr ? *exact : local;
  MpfrExactSum(fx, x, env, e);
  return MpfrRoundExact(to, e, env);
}

OpResult MpfrDot(const FormatSpec& fa, std::span<const uint64_t> a, const FormatSpec& fb,
                 std::span<const uint64_t> b, const FormatSpec* fc, uint64_t c,
                 const FormatSpec& to, const OpEnv& env, MpfrExact* exact) {
  MpfrExact local;
  MpfrExact& e = exact != nullptr ? *exact : local;
  MpfrExactDot(fa, a, fb, b, fc, c, env, e);
  return MpfrRoundExact(to, e, env);
}

void MpfrMatmul(int m, int n, int k, const FormatSpec& fa, std::span<const uint64_t> a,
                const FormatSpec& fb, std::span<const uint64_t> b, const FormatSpec* fc,
                std::span<const uint64_t> c, const FormatSpec& to, const OpEnv& env,
                std::span<OpResult> out) {
  const size_t mm = static_cast<size_t>(m), nn = static_cast<size_t>(n),
               kk = static_cast<size_t>(k);
  if (a.size() != mm * kk || b.size() != kk * nn || out.size() != mm * nn ||
      (!c.empty() && (c.size() != mm * nn || fc == nullptr))) {
    Fail("MpfrMatmul: shapes");
  }
  std::vector<uint64_t> column(kk);
  MpfrExact e;
  for (size_t j = 0; j < nn; ++j) {
    for (size_t l = 0; l < kk; ++l) column[l] = b[l * nn + j];
    for (size_t i = 0; i < mm; ++i) {
      const bool has_c = !c.empty();
      MpfrExactDot(fa, a.subspan(i * kk, kk), fb, column, has_c ? fc : nullptr,
                   has_c ? c[i * nn + j] : 0, env, e);
      out[i * nn + j] = MpfrRoundExact(to, e, env);
    }
  }
}

}  // namespace fpconform
