#include "oracles/boost_oracle.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <boost/multiprecision/cpp_int.hpp>

// GCC 12 at -O3 reports a false -Wmaybe-uninitialized inside cpp_int's small-buffer limbs when
// they are inlined here (cpp_int.hpp:342); the limbs are always written before being read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace fpconform {

using boost::multiprecision::cpp_int;

struct BoostExact::Impl {
  Kind kind = Kind::kZero;
  bool negative = false;
  bool zero_fixed = true;
  Flags flags = 0;
  cpp_int s;   // kFinite: the value is s * 2^l, s != 0.
  long l = 0;
};

BoostExact::BoostExact() : impl_(std::make_unique<Impl>()) {}
BoostExact::~BoostExact() = default;
BoostExact::Kind BoostExact::kind() const { return impl_->kind; }
bool BoostExact::negative() const { return impl_->negative; }
bool BoostExact::zero_sign_fixed() const { return impl_->zero_fixed; }
Flags BoostExact::flags() const { return impl_->flags; }

std::string BoostExact::ToText() const {
  const Impl& x = *impl_;
  switch (x.kind) {
    case Kind::kNaN: return "nan";
    case Kind::kInf: return x.negative ? "-inf" : "inf";
    case Kind::kZero: return x.zero_fixed && x.negative ? "-0" : "0";
    case Kind::kFinite: break;
  }
  cpp_int m = x.s < 0 ? cpp_int(-x.s) : x.s;
  const unsigned tz = boost::multiprecision::lsb(m);
  m >>= tz;
  std::string hex = m.str(0, std::ios_base::hex);
  for (char& ch : hex) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return std::string(x.s < 0 ? "-" : "") + "0x" + hex + "p" +
         std::to_string(x.l + static_cast<long>(tz));
}

namespace {

using Kind = BoostExact::Kind;

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "boost_oracle: %s\n", what);
  std::abort();
}

uint64_t Mask(int n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

// The layout of a float format, read from its row.
struct Layout {
  int nbits;           // Encoding bits (container minus pad).
  int fb;              // Fraction bits.
  uint64_t sign_mask;  // 0 for unsigned formats.
  uint64_t inf_mag;    // All-ones exponent, zero fraction (magnitude bits).
  uint64_t frac_mask;
  explicit Layout(const FormatSpec& f)
      : nbits(f.width - f.pad_bits),
        fb(f.fraction_bits),
        sign_mask(f.has_sign ? uint64_t{1} << (f.width - f.pad_bits - 1) : 0),
        inf_mag(Mask(f.exponent_bits) << f.fraction_bits),
        frac_mask(Mask(f.fraction_bits)) {}
};

struct Decoded {
  Kind kind = Kind::kFinite;
  bool neg = false;
  bool snan = false;
  uint64_t m = 0;  // Value m * 2^e.
  long e = 0;
};

// This oracle's decoder: classifies by the magnitude bits, then splits the fields.
Decoded Decode(const FormatSpec& f, uint64_t bits, bool daz) {
  const Layout lay(f);
  const uint64_t enc = (bits >> f.pad_bits) & Mask(lay.nbits);
  const uint64_t mag = enc & ~lay.sign_mask;
  Decoded d;
  d.neg = (enc & lay.sign_mask) != 0;
  if (f.nonfinite == NonFinite::kIeee) {
    if (mag == lay.inf_mag) {
      d.kind = Kind::kInf;
      return d;
    }
    if (mag > lay.inf_mag) {
      d.kind = Kind::kNaN;
      d.snan = ((mag >> (lay.fb - 1)) & 1) == 0;
      return d;
    }
  } else if (f.nan_encoding == NanEncoding::kAllOnes) {
    if (mag == (lay.inf_mag | lay.frac_mask)) {
      d.kind = Kind::kNaN;
      return d;
    }
  } else if (f.nan_encoding == NanEncoding::kNegativeZero) {
    if (enc == lay.sign_mask) {
      d.kind = Kind::kNaN;
      return d;
    }
  } else if (mag > lay.inf_mag) {
    d.kind = Kind::kNaN;
    return d;
  }
  const uint64_t biased = mag >> lay.fb;
  const uint64_t frac = mag & lay.frac_mask;
  if (biased == 0 && f.has_subnormals) {
    if (frac == 0 || daz) {
      d.kind = Kind::kZero;
      return d;
    }
    d.m = frac;
    d.e = 1 - f.bias - lay.fb;
  } else {
    d.m = frac | (uint64_t{1} << lay.fb);
    d.e = static_cast<long>(biased) - f.bias - lay.fb;
  }
  return d;
}

// The largest positive finite magnitude encoding.
uint64_t MaxIndex(const FormatSpec& f) {
  const Layout lay(f);
  if (f.nonfinite == NonFinite::kIeee) return lay.inf_mag - 1;
  if (f.nan_encoding == NanEncoding::kAllOnes) return (lay.inf_mag | lay.frac_mask) - 1;
  return Mask(lay.nbits) & ~lay.sign_mask;  // fnuz: every positive pattern is finite.
}

// An exact non-negative number m * 2^e.
struct Num {
  cpp_int m;
  long e = 0;
};

long Msb(const cpp_int& m) { return static_cast<long>(boost::multiprecision::msb(m)); }

// Sign of a - b.
int Cmp(const Num& a, const Num& b) {
  const bool za = a.m == 0, zb = b.m == 0;
  if (za || zb) return za && zb ? 0 : (za ? -1 : 1);
  const long ta = Msb(a.m) + a.e, tb = Msb(b.m) + b.e;
  if (ta != tb) return ta < tb ? -1 : 1;
  if (a.e >= b.e) {
    cpp_int t = a.m << static_cast<unsigned>(a.e - b.e);
    return t.compare(b.m) < 0 ? -1 : (t == b.m ? 0 : 1);
  }
  cpp_int t = b.m << static_cast<unsigned>(b.e - a.e);
  return a.m.compare(t) < 0 ? -1 : (a.m == t ? 0 : 1);
}

// a and b at the common exponent min(a.e, b.e, c.e).
cpp_int At(const Num& a, long e) { return a.m << static_cast<unsigned>(a.e - e); }

Num ValueOf(const FormatSpec& f, uint64_t index) {
  Decoded d = Decode(f, index << f.pad_bits, false);
  Num n;
  if (d.kind == Kind::kFinite) {
    n.m = d.m;
    n.e = d.e;
  }
  return n;
}

enum class Mag : uint8_t { kNearestEven, kNearestAway, kZero, kAway, kOdd, kStochastic };

Mag ModeOf(const OpEnv& env, bool neg) {
  switch (env.rounding) {
    case Rounding::kNearestEven: return Mag::kNearestEven;
    case Rounding::kNearestAway: return Mag::kNearestAway;
    case Rounding::kTowardZero: return Mag::kZero;
    case Rounding::kUpward: return neg ? Mag::kZero : Mag::kAway;
    case Rounding::kDownward: return neg ? Mag::kAway : Mag::kZero;
    case Rounding::kToOdd: return Mag::kOdd;
    case Rounding::kStochastic: return Mag::kStochastic;
  }
  return Mag::kNearestEven;
}

// lower < v < upper, adjacent values. True when the mode delivers upper.
// GCC 12 reports false -Warray-bounds / -Wrestrict / -Wstringop-* inside Boost's cpp_int code
// once it is inlined here (memcpy bounds it cannot prove); they are about Boost, not this file.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wrestrict"
#pragma GCC diagnostic ignored "-Wstringop-overread"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
bool PickUpper(Mag mode, const Num& v, const Num& lower, const Num& upper, bool lower_even,
               const OpEnv& env) {
  switch (mode) {
    case Mag::kZero: return false;
    case Mag::kAway: return true;
    case Mag::kOdd: return lower_even;
    case Mag::kNearestEven:
    case Mag::kNearestAway: {
      const long e = std::min({v.e + 1, lower.e, upper.e});
      Num two_v{v.m, v.e + 1};
      Num sum{At(lower, e) + At(upper, e), e};
      const int c = Cmp(two_v, sum);
      if (c != 0) return c > 0;
      return mode == Mag::kNearestAway ? true : !lower_even;
    }
    case Mag::kStochastic: {
      const long e = std::min({v.e, lower.e, upper.e});
      const int k = env.sr_bits;
      cpp_int num = (At(v, e) - At(lower, e)) << static_cast<unsigned>(k);
      cpp_int top = num / (At(upper, e) - At(lower, e));
      const uint64_t r = env.sr_random & Mask(k);
      return top + r >= (cpp_int(1) << static_cast<unsigned>(k));
    }
  }
  return false;
}
#pragma GCC diagnostic pop

uint64_t DefaultNan(const FormatSpec& f) {
  const Layout lay(f);
  uint64_t enc;
  if (f.nan_encoding == NanEncoding::kNegativeZero) {
    enc = lay.sign_mask;
  } else if (f.nan_encoding == NanEncoding::kAllOnes && f.nonfinite == NonFinite::kNanOnly) {
    enc = lay.inf_mag | lay.frac_mask;
  } else {
    enc = lay.inf_mag | (uint64_t{1} << (lay.fb - 1));
  }
  return enc << f.pad_bits;
}

uint64_t Signed(const FormatSpec& f, uint64_t index, bool neg) {
  const Layout lay(f);
  const bool fnuz = f.nan_encoding == NanEncoding::kNegativeZero;
  const bool sign = neg && !(fnuz && index == 0);
  return (index | (sign ? lay.sign_mask : 0)) << f.pad_bits;
}

__extension__ typedef unsigned __int128 U128;  // Products of two <= 53-bit significands.

struct Term {
  bool neg;
  U128 m;
  long e;
};

struct Acc {
  bool daz;
  bool nan = false, snan = false, invalid = false;
  bool pinf = false, ninf = false, pzero = false, nzero = false;
  std::vector<Term>& terms;

  void Value(const Decoded& d) {
    switch (d.kind) {
      case Kind::kNaN: nan = true; snan = snan || d.snan; break;
      case Kind::kInf: (d.neg ? ninf : pinf) = true; break;
      case Kind::kZero: (d.neg ? nzero : pzero) = true; break;
      case Kind::kFinite: terms.push_back({d.neg, d.m, d.e}); break;
    }
  }
  void Product(const Decoded& a, const Decoded& b) {
    if (a.kind == Kind::kNaN || b.kind == Kind::kNaN) {
      nan = true;
      snan = snan || (a.kind == Kind::kNaN && a.snan) || (b.kind == Kind::kNaN && b.snan);
      return;
    }
    const bool neg = a.neg != b.neg;
    if (a.kind == Kind::kInf || b.kind == Kind::kInf) {
      if (a.kind == Kind::kZero || b.kind == Kind::kZero) {
        invalid = true;
      } else {
        (neg ? ninf : pinf) = true;
      }
      return;
    }
    if (a.kind == Kind::kZero || b.kind == Kind::kZero) {
      (neg ? nzero : pzero) = true;
      return;
    }
    terms.push_back({neg, static_cast<U128>(a.m) * b.m, a.e + b.e});
  }

  void Finish(BoostExact::Impl& out) {
    out.flags = (snan || invalid || (pinf && ninf)) ? kInvalid : 0;
    out.zero_fixed = true;
    out.negative = false;
    out.s = 0;
    out.l = 0;
    if (nan || invalid || (pinf && ninf)) {
      out.kind = Kind::kNaN;
      return;
    }
    if (pinf || ninf) {
      out.kind = Kind::kInf;
      out.negative = ninf;
      return;
    }
    if (terms.empty()) {
      out.kind = Kind::kZero;
      out.zero_fixed = !(pzero && nzero);
      out.negative = nzero && !pzero;
      return;
    }
    long l = 0;
    for (size_t i = 0; i < terms.size(); ++i) {
      Term& t = terms[i];
      while ((t.m & 1) == 0) {  // Strip trailing zeros: a smaller fixed-point integer.
        t.m >>= 1;
        ++t.e;
      }
      if (i == 0 || t.e < l) l = t.e;
    }
    cpp_int s = 0;
    for (const Term& t : terms) {
      cpp_int v = static_cast<uint64_t>(t.m >> 64);
      v <<= 64;
      v |= static_cast<uint64_t>(t.m);
      v <<= static_cast<unsigned>(t.e - l);
      if (t.neg) {
        s -= v;
      } else {
        s += v;
      }
    }
    if (s == 0) {
      out.kind = Kind::kZero;
      out.zero_fixed = false;
      return;
    }
    out.kind = Kind::kFinite;
    out.negative = s < 0;
    out.s = std::move(s);
    out.l = l;
  }
};

std::vector<Term>& TermBuffer() {
  thread_local std::vector<Term> buffer;
  buffer.clear();
  return buffer;
}

}  // namespace

bool BoostSupports(const FormatSpec& to) {
  return IsFloat(to) && to.has_zero && to.has_subnormals && to.fraction_bits >= 1 &&
         to.has_sign;
}

void BoostExactSum(const FormatSpec& fx, std::span<const uint64_t> x, const OpEnv& env,
                   BoostExact& out) {
  Acc acc{env.denormals_are_zero, false, false, false, false, false, false, false,
          TermBuffer()};
  for (uint64_t v : x) acc.Value(Decode(fx, v, acc.daz));
  acc.Finish(out.impl());
}

void BoostExactDot(const FormatSpec& fa, std::span<const uint64_t> a, const FormatSpec& fb,
                   std::span<const uint64_t> b, const FormatSpec* fc, uint64_t c,
                   const OpEnv& env, BoostExact& out) {
  if (a.size() != b.size()) Die("BoostExactDot: lengths differ");
  Acc acc{env.denormals_are_zero, false, false, false, false, false, false, false,
          TermBuffer()};
  for (size_t i = 0; i < a.size(); ++i) {
    acc.Product(Decode(fa, a[i], acc.daz), Decode(fb, b[i], acc.daz));
  }
  if (fc != nullptr) acc.Value(Decode(*fc, c, acc.daz));
  acc.Finish(out.impl());
}

OpResult BoostRoundExact(const FormatSpec& to, const BoostExact& xe, const OpEnv& env) {
  if (!BoostSupports(to)) Die("BoostRoundExact: unsupported target");
  const BoostExact::Impl& x = xe.impl();
  const Layout lay(to);
  const uint64_t max_index = MaxIndex(to);
  const bool has_inf = to.nonfinite == NonFinite::kIeee;
  switch (x.kind) {
    case Kind::kNaN:
      return {DefaultNan(to), x.flags};
    case Kind::kInf:
      if (has_inf) return {Signed(to, lay.inf_mag, x.negative), 0};
      if (env.saturate) return {Signed(to, max_index, x.negative), 0};
      return {DefaultNan(to), kInvalid};
    case Kind::kZero: {
      const bool neg = x.zero_fixed ? x.negative : env.rounding == Rounding::kDownward;
      return {Signed(to, 0, neg), 0};
    }
    case Kind::kFinite:
      break;
  }
  const bool neg = x.negative;
  const Mag mode = ModeOf(env, neg);
  const Num v{neg ? cpp_int(-x.s) : x.s, x.l};
  const int p = lay.fb + 1;
  const long emin = 1 - to.bias;

  // Binary search: the largest index whose value is <= v.
  uint64_t i;
  if (Cmp(ValueOf(to, max_index), v) <= 0) {
    i = max_index;
  } else {
    uint64_t lo = 0, hi = max_index;  // value(lo) <= v < value(hi).
    while (hi - lo > 1) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (Cmp(ValueOf(to, mid), v) <= 0) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    i = lo;
  }
  const Num lower = ValueOf(to, i);
  const bool exact = Cmp(lower, v) == 0;
  bool overflow = false, away = false;
  uint64_t index = i;
  if (!exact) {
    Num upper;
    if (i == max_index) {
      upper = Num{lower.m + 1, lower.e};  // Successor of max finite, unbounded exponent.
      // At or above the successor: an overflow in every mode. (For sr<k> this is the rule of
      // op_env.h: the neighbours of v in the format are max finite and the overflow result,
      // and v is at or beyond the latter.)
      if (Cmp(v, upper) >= 0) overflow = true;
    } else {
      upper = ValueOf(to, i + 1);
    }
    if (!overflow) {
      away = PickUpper(mode, v, lower, upper, (i & 1) == 0, env);
      if (away) {
        if (i == max_index) {
          overflow = true;
        } else {
          index = i + 1;
        }
      }
    }
  }
  if (overflow) {
    // sr<k> overflows only onto its upper neighbour, the overflow result: Inf.
    const bool to_inf = mode == Mag::kNearestEven || mode == Mag::kNearestAway ||
                        mode == Mag::kAway || mode == Mag::kStochastic;
    const Flags fl = kOverflow | kInexact;
    if (env.saturate || !to_inf) return {Signed(to, max_index, neg), fl};
    if (has_inf) return {Signed(to, lay.inf_mag, neg), fl};
    return {DefaultNan(to), fl};
  }
  const Num min_normal{1, emin};
  const bool tiny_before = Cmp(v, min_normal) < 0;
  bool tiny_after = false;
  if (tiny_before) {
    const Num g{(cpp_int(1) << static_cast<unsigned>(p)) - 1, emin - p};  // Odd.
    tiny_after = Cmp(v, g) <= 0 || !PickUpper(mode, v, g, min_normal, false, env);
  }
  const bool tiny = env.tininess == Tininess::kAfterRounding ? tiny_after : tiny_before;
  if (env.flush_to_zero && tiny) return {Signed(to, 0, neg), kUnderflow | kInexact};
  Flags fl = 0;
  if (!exact) fl |= kInexact;
  if (!exact && tiny) fl |= kUnderflow;
  return {Signed(to, index, neg), fl};
}

OpResult BoostSum(const FormatSpec& fx, std::span<const uint64_t> x, const FormatSpec& to,
                  const OpEnv& env) {
  BoostExact e;
  BoostExactSum(fx, x, env, e);
  return BoostRoundExact(to, e, env);
}

OpResult BoostDot(const FormatSpec& fa, std::span<const uint64_t> a, const FormatSpec& fb,
                  std::span<const uint64_t> b, const FormatSpec* fc, uint64_t c,
                  const FormatSpec& to, const OpEnv& env) {
  BoostExact e;
  BoostExactDot(fa, a, fb, b, fc, c, env, e);
  return BoostRoundExact(to, e, env);
}

}  // namespace fpconform
