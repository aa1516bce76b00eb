// catalog_generator: writes the golden dot/sum catalog (cases/catalogs/dot_sum_golden.txt), one
// `fpconform calc` case per line followed by " => <result> <flags>", the expected answer.
//
//   catalog_generator [--seed S] [--count N] > cases/catalogs/dot_sum_golden.txt
//
// Cases derive from (seed, case index) through SplitMix64 only (DESIGN.md: no std:: or absl
// distributions), so the same arguments give the same bytes on every machine.
//
// The expected results come from this file's own MPFR computation, independent of the exact
// accumulator (oracles/exact_sum.h) that `fpconform calc` uses, and of formats/RoundPack:
//   * operands are decoded from the FormatSpec fields by a decoder written here;
//   * each product a_i * b_i is formed exactly (mpfr_mul at 64 bits >= p_a + p_b), and the terms
//     are added by mpfr_sum at kExactBits bits, exact for every table format pair used (the
//     ternary value is checked to be 0);
//   * the exact value E is rounded once into the target F by integer rounding at the target's
//     quantum: Q = max(floor(log2|E|), emin) - p + 1, R = rint(E / 2^Q) * 2^Q with MPFR_RNDN
//     (rne), MPFR_RNDZ (rtz), MPFR_RNDU (rup), MPFR_RNDD (rdn), mpfr_round (rna: ties away).
//     This covers subnormals in one rounding (no double rounding). Tininess is after rounding
//     (the p-bit rounding with unbounded exponent below 2^emin), u = tiny and inexact; overflow
//     is that p-bit rounding above the format's max finite (o x; sat: +-max; rne/rna: Inf;
//     rtz: max; rup/rdn: Inf toward their own infinity, max the other way; Inf becomes the NaN
//     of that sign in formats without Inf), as formats/ops.h states;
//   * exact zero: zeros all of one sign keep it, otherwise +0 (rdn: -0), the empty sum +0;
//   * specials: an Inf term gives that Inf (no flags); Inf + -Inf and Inf * 0 give the default
//     quiet NaN of the target (nan=ieee profile) with v. Only targets with Inf get specials.
//   * a second computation: for IEEE-encoded targets in rne/rtz/rup/rdn without sat, MPFR's
//     documented recipe (mpfr_set to p bits, then with emin/emax set from the format
//     mpfr_check_range and mpfr_subnormalize) must give the same bits and the same o/x flags,
//     or the generator stops (the count of confirmed roundings goes to stderr).
//
// Case kinds (by the case's hash): random finite bit patterns; values near 1 with both signs;
// exact ties of the target (v +- half an ulp, built as in-format pieces plus cancelling pairs);
// near ties (a tie +- a tiny amount); cancellation to exact zero; targets in the subnormal range
// and around the smallest subnormal; targets around and beyond the max finite (overflow
// boundary ties included); Inf / invalid specials. Lengths 1..64, and a few of 256..4096.
#include <mpfr.h>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "cases/pinned_random.h"
#include "formats/format_spec.h"

namespace fpconform {
namespace {

constexpr mpfr_prec_t kExactBits = 4096;

// Results also computed by MPFR's emin/emax + mpfr_subnormalize recipe (reported on stderr).
int64_t recipe_checks = 0;

// A stream of pinned random numbers for one (seed, case, attempt), built on cases/pinned_random.h's
// SplitMix64 (SplitMix64At(x, 0): splitmix64's next() on state x). The stream's own keying is
// kept as it was when the catalogs were generated, so regenerating gives the same files.
class Rng {
 public:
  Rng(uint64_t seed, uint64_t index, uint64_t attempt)
      : state_(SplitMix64At(SplitMix64At(seed, 0) ^ (index * kSplitMix64Gamma) ^ (attempt << 48),
                            0)) {}
  uint64_t Next() { return SplitMix64At(state_++ * 0xD1B54A32D192ED03ULL, 0); }
  // Uniform in [0, n) (n small; the modulo bias is irrelevant for case generation).
  uint64_t Below(uint64_t n) { return Next() % n; }
  bool Chance(int percent) { return Below(100) < static_cast<uint64_t>(percent); }

 private:
  uint64_t state_;
};

struct Mpfr {
  mpfr_t v;
  explicit Mpfr(mpfr_prec_t prec = kExactBits) { mpfr_init2(v, prec); }
  ~Mpfr() { mpfr_clear(v); }
  Mpfr(const Mpfr&) = delete;
  Mpfr& operator=(const Mpfr&) = delete;
};

enum class Kind { kZero, kFinite, kInf, kNaN };

// The generator's own decoder (IEEE-like and OCP/fnuz float formats without pad bits).
Kind Decode(const FormatSpec& f, uint64_t bits, mpfr_ptr out, bool& sign) {
  const int fb = f.fraction_bits, eb = f.exponent_bits;
  const uint64_t frac = bits & ((uint64_t{1} << fb) - 1);
  const uint64_t e = (bits >> fb) & ((uint64_t{1} << eb) - 1);
  const uint64_t e_all = (uint64_t{1} << eb) - 1;
  sign = ((bits >> (fb + eb)) & 1) != 0;
  if (f.nonfinite == NonFinite::kIeee && e == e_all) return frac ? Kind::kNaN : Kind::kInf;
  if (f.nan_encoding == NanEncoding::kAllOnes && e == e_all && frac == (uint64_t{1} << fb) - 1)
    return Kind::kNaN;
  if (f.nan_encoding == NanEncoding::kNegativeZero && sign && e == 0 && frac == 0)
    return Kind::kNaN;
  if (e == 0 && frac == 0) {
    mpfr_set_zero(out, sign ? -1 : 1);
    return Kind::kZero;
  }
  const uint64_t sig = e == 0 ? frac : frac | (uint64_t{1} << fb);
  const long exp = (e == 0 ? 1 : static_cast<long>(e)) - f.bias - fb;
  mpfr_set_ui_2exp(out, sig, exp, MPFR_RNDN);
  if (sign) mpfr_neg(out, out, MPFR_RNDN);
  return Kind::kFinite;
}

long Floorlog2(mpfr_srcptr a) { return static_cast<long>(mpfr_get_exp(a)) - 1; }

// Max finite value of f.
void MaxFinite(const FormatSpec& f, mpfr_ptr out) {
  mpfr_set_ui_2exp(out, MaxFiniteSignificand(f), Emax(f) - Precision(f) + 1, MPFR_RNDN);
}

// Bits of the finite value `a` (exactly representable in f, max finite at most; any sign).
uint64_t Encode(const FormatSpec& f, mpfr_srcptr a) {
  const bool neg = mpfr_signbit(a) != 0;
  const uint64_t sign_bit = uint64_t{1} << (f.width - 1);
  if (mpfr_zero_p(a)) {
    return (neg && f.nan_encoding != NanEncoding::kNegativeZero) ? sign_bit : 0;
  }
  const int p = Precision(f);
  const long e = Floorlog2(a);
  Mpfr m(256);
  uint64_t biased, fraction;
  if (e < Emin(f)) {  // Subnormal: the integer multiple of the quantum 2^(emin - p + 1).
    mpfr_abs(m.v, a, MPFR_RNDN);
    mpfr_mul_2si(m.v, m.v, -(Emin(f) - p + 1), MPFR_RNDN);
    biased = 0;
    fraction = mpfr_get_ui(m.v, MPFR_RNDN);
  } else {
    mpfr_abs(m.v, a, MPFR_RNDN);
    mpfr_mul_2si(m.v, m.v, -(e - p + 1), MPFR_RNDN);
    biased = static_cast<uint64_t>(e + f.bias);
    fraction = mpfr_get_ui(m.v, MPFR_RNDN) - (uint64_t{1} << (p - 1));
  }
  return (neg ? sign_bit : 0) | (biased << f.fraction_bits) | fraction;
}

uint64_t GenInfBits(const FormatSpec& f, bool neg) {
  const uint64_t exp_all = ((uint64_t{1} << f.exponent_bits) - 1) << f.fraction_bits;
  return (neg ? uint64_t{1} << (f.width - 1) : 0) | exp_all;
}

// The NaN of an invalid operation under nan=ieee (op_env.h table), for the targets used here.
uint64_t DefaultNan(const FormatSpec& f) {
  if (f.nan_encoding == NanEncoding::kNegativeZero) return 0x80;
  if (f.nan_encoding == NanEncoding::kAllOnes) return (uint64_t{1} << (f.width - 1)) - 1;
  return GenInfBits(f, false) | (uint64_t{1} << (f.fraction_bits - 1));  // Quiet bit.
}

// The NaN an overflow writes in a format without Inf: the NaN of the result's sign where the
// format has signed NaNs (float8_e4m3fn: 0x7f / 0xff), the single NaN 0x80 for fnuz.
uint64_t OverflowNan(const FormatSpec& f, bool neg) {
  if (f.nan_encoding == NanEncoding::kNegativeZero) return 0x80;
  return DefaultNan(f) | (neg ? uint64_t{1} << (f.width - 1) : 0);
}

enum class Mode { kRne, kRtz, kRup, kRdn, kRna };
constexpr std::array<std::string_view, 5> kModeNames = {"rne", "rtz", "rup", "rdn", "rna"};
// MPFR's rounding of each mode but kRna (MPFR has no ties-away rounding; mpfr_round rounds an
// integer so).
constexpr std::array<mpfr_rnd_t, 4> kMpfrRounding = {MPFR_RNDN, MPFR_RNDZ, MPFR_RNDU, MPFR_RNDD};

// R = round(E / 2^q) * 2^q, into `out` (precision kExactBits).
void RoundAtQuantum(mpfr_srcptr e, long q, Mode mode, mpfr_ptr out) {
  mpfr_mul_2si(out, e, -q, MPFR_RNDN);  // Exact.
  if (mode == Mode::kRna) {
    mpfr_round(out, out);
  } else {
    mpfr_rint(out, out, kMpfrRounding[static_cast<size_t>(mode)]);
  }
  mpfr_mul_2si(out, out, q, MPFR_RNDN);
}

struct Expected {
  uint64_t bits = 0;
  const char* flags = "-";  // In "vzoux" order.
};

// Rounds the exact non-zero finite E into f.
Expected RoundExactAtQuantum(const FormatSpec& f, mpfr_srcptr e, Mode mode, bool sat) {
  const int p = Precision(f);
  const long emin = Emin(f);
  const bool neg = mpfr_sgn(e) < 0;
  Mpfr r1, r, maxf(64);
  const long lead = Floorlog2(e);
  RoundAtQuantum(e, lead - p + 1, mode, r1.v);  // p bits, unbounded exponent.
  RoundAtQuantum(e, std::max(lead, emin) - p + 1, mode, r.v);
  const bool inexact = mpfr_cmp(r.v, e) != 0;
  MaxFinite(f, maxf.v);
  if (mpfr_cmpabs(r1.v, maxf.v) > 0) {
    bool to_inf = false;
    switch (mode) {
      case Mode::kRne:
      case Mode::kRna:
        to_inf = true;
        break;
      case Mode::kRtz:
        to_inf = false;
        break;
      case Mode::kRup:
        to_inf = !neg;
        break;
      case Mode::kRdn:
        to_inf = neg;
        break;
    }
    Expected x{0, "ox"};
    if (sat || !to_inf) {
      if (neg) mpfr_neg(maxf.v, maxf.v, MPFR_RNDN);
      x.bits = Encode(f, maxf.v);
    } else {
      x.bits = f.nonfinite == NonFinite::kIeee ? GenInfBits(f, neg) : OverflowNan(f, neg);
    }
    return x;
  }
  Mpfr min_normal(64);
  mpfr_set_ui_2exp(min_normal.v, 1, emin, MPFR_RNDN);
  const bool tiny = mpfr_cmpabs(r1.v, min_normal.v) < 0;
  Expected x;
  if (mpfr_zero_p(r.v)) mpfr_set_zero(r.v, neg ? -1 : 1);  // Keeps the sign of E.
  x.bits = Encode(f, r.v);
  x.flags = !inexact ? "-" : tiny ? "ux" : "x";
  return x;
}

// MPFR's documented IEEE recipe, as a second computation for the targets and modes it covers
// (IEEE-encoded formats with subnormals; rne rtz rup rdn; no sat): round to p bits, then in the
// format's exponent range mpfr_check_range and mpfr_subnormalize. Returns false when the recipe
// does not apply.
bool RoundByRecipe(const FormatSpec& f, mpfr_srcptr e, Mode mode, bool sat, Expected& x) {
  if (f.nonfinite != NonFinite::kIeee || !f.has_subnormals || sat || mode == Mode::kRna) {
    return false;
  }
  const mpfr_rnd_t rnd = kMpfrRounding[static_cast<size_t>(mode)];
  Mpfr y(Precision(f));
  const mpfr_exp_t old_emin = mpfr_get_emin(), old_emax = mpfr_get_emax();
  int t = mpfr_set(y.v, e, rnd);
  mpfr_clear_flags();
  mpfr_set_emin(MinSubnormalExponent(f) + 1);  // MPFR: x = 0.1b... * 2^exp.
  mpfr_set_emax(Emax(f) + 1);
  t = mpfr_check_range(y.v, t, rnd);
  t = mpfr_subnormalize(y.v, t, rnd);
  const bool overflow = mpfr_overflow_p() != 0;
  mpfr_set_emin(old_emin);
  mpfr_set_emax(old_emax);
  x.bits = mpfr_inf_p(y.v) ? GenInfBits(f, mpfr_signbit(y.v) != 0) : Encode(f, y.v);
  x.flags = overflow ? "ox" : t != 0 ? "x" : "-";  // u is not compared (MPFR's differs).
  return true;
}

// Rounds the exact non-zero finite E into f, cross-checked with the recipe where it applies.
Expected RoundExact(const FormatSpec& f, mpfr_srcptr e, Mode mode, bool sat) {
  Expected x = RoundExactAtQuantum(f, e, mode, sat);
  Expected r;
  if (RoundByRecipe(f, e, mode, sat, r)) {
    const std::string_view xf = x.flags == std::string_view("ux") ? "x" : x.flags;
    if (r.bits != x.bits || xf != r.flags) {
      std::fprintf(stderr,
                   "catalog_generator: the two MPFR roundings disagree (%s, %s): 0x%" PRIx64
                   " %s vs recipe 0x%" PRIx64 " %s\n",
                   std::string(f.name).c_str(),
                   std::string(kModeNames[static_cast<size_t>(mode)]).c_str(), x.bits, x.flags,
                   r.bits, r.flags);
      std::exit(1);
    }
    ++recipe_checks;
  }
  return x;
}

struct Case {
  bool dot = true;
  const FormatSpec* in = nullptr;
  const FormatSpec* out = nullptr;
  Mode mode = Mode::kRne;
  bool sat = false;
  std::vector<uint64_t> a, b;  // sum: a only.
};

// The expected result of `c`, or false if the case holds a NaN operand (never generated).
bool Evaluate(const Case& c, Expected& x) {
  const size_t n = c.a.size();
  std::vector<mpfr_t> terms(n);
  std::vector<mpfr_ptr> ptrs(n);
  bool any_nonzero = false, pos_zero = false, neg_zero = false, pos_inf = false, neg_inf = false,
       invalid = false, ok = true;
  Mpfr va(64), vb(64);
  for (size_t i = 0; i < n; ++i) {
    mpfr_init2(terms[i], 128);
    ptrs[i] = terms[i];
    bool sa = false, sb = false;
    Kind ka = Decode(*c.in, c.a[i], va.v, sa);
    Kind kb = Kind::kFinite;
    if (c.dot) {
      kb = Decode(*c.in, c.b[i], vb.v, sb);
    } else {
      mpfr_set_ui(vb.v, 1, MPFR_RNDN);
    }
    if (ka == Kind::kNaN || kb == Kind::kNaN) {
      ok = false;
      mpfr_set_zero(terms[i], 1);
      continue;
    }
    const bool s = sa != sb;
    if (ka == Kind::kInf || kb == Kind::kInf) {
      if (ka == Kind::kZero || kb == Kind::kZero) invalid = true;
      (s ? neg_inf : pos_inf) = true;
      mpfr_set_zero(terms[i], 1);
      continue;
    }
    mpfr_mul(terms[i], va.v, vb.v, MPFR_RNDN);  // Exact: p_a + p_b <= 48 < 128.
    if (mpfr_zero_p(terms[i])) {
      mpfr_set_zero(terms[i], s ? -1 : 1);
      (s ? neg_zero : pos_zero) = true;
    } else {
      any_nonzero = true;
    }
  }
  Mpfr sum;
  const int t = mpfr_sum(sum.v, ptrs.data(), n, MPFR_RNDN);
  for (size_t i = 0; i < n; ++i) mpfr_clear(terms[i]);
  if (!ok) return false;
  if (t != 0) {
    std::fprintf(stderr, "catalog_generator: mpfr_sum was not exact\n");
    std::exit(1);
  }
  if (invalid || (pos_inf && neg_inf)) {
    x = {DefaultNan(*c.out), "v"};
    return true;
  }
  if (pos_inf || neg_inf) {
    x = {GenInfBits(*c.out, neg_inf), "-"};
    return true;
  }
  if (mpfr_zero_p(sum.v)) {
    bool neg = c.mode == Mode::kRdn;                                      // Cancellation.
    if (!any_nonzero && n > 0 && (pos_zero != neg_zero)) neg = neg_zero;  // One sign of zeros.
    if (n == 0) neg = false;                                              // Empty sum.
    Mpfr z(64);
    mpfr_set_zero(z.v, neg ? -1 : 1);
    x = {Encode(*c.out, z.v), "-"};
    return true;
  }
  x = RoundExact(*c.out, sum.v, c.mode, c.sat);
  return true;
}

// ---- Case construction. ----

// A random finite (non-NaN, non-Inf) bit pattern of f.
uint64_t RandomFinite(const FormatSpec& f, Rng& rng) {
  Mpfr v(64);
  while (true) {
    uint64_t bits = rng.Next() & ((f.width == 64) ? ~uint64_t{0} : (uint64_t{1} << f.width) - 1);
    bool s = false;
    Kind k = Decode(f, bits, v.v, s);
    if (k == Kind::kZero || k == Kind::kFinite) return bits;
  }
}

// A random value of f with unbiased exponent in [lo, hi] (clamped to the normal range).
uint64_t RandomWithExponent(const FormatSpec& f, Rng& rng, int lo, int hi) {
  lo = std::clamp(lo, Emin(f), Emax(f));
  hi = std::clamp(hi, Emin(f), Emax(f));
  if (lo > hi) lo = hi;
  while (true) {
    const int e = lo + static_cast<int>(rng.Below(static_cast<uint64_t>(hi - lo + 1)));
    const uint64_t frac = rng.Next() & ((uint64_t{1} << f.fraction_bits) - 1);
    const uint64_t sign = rng.Below(2);
    const uint64_t bits =
        (sign << (f.width - 1)) | (static_cast<uint64_t>(e + f.bias) << f.fraction_bits) | frac;
    Mpfr v(64);
    bool s = false;
    Kind k = Decode(f, bits, v.v, s);
    if (k == Kind::kFinite) return bits;
  }
}

// Splits the exact value `target` into at most `max_pieces` values of f whose sum is exactly
// target (greedy, each piece the target remainder truncated to f). False if impossible.
bool Decompose(const FormatSpec& f, mpfr_srcptr target, int max_pieces,
               std::vector<uint64_t>& pieces) {
  Mpfr rem, piece, maxf(64), min_sub(64);
  mpfr_set(rem.v, target, MPFR_RNDN);
  MaxFinite(f, maxf.v);
  mpfr_set_ui_2exp(min_sub.v, 1, MinSubnormalExponent(f), MPFR_RNDN);
  for (int i = 0; i < max_pieces && !mpfr_zero_p(rem.v); ++i) {
    if (mpfr_cmpabs(rem.v, min_sub.v) < 0) return false;
    const long e = Floorlog2(rem.v);
    const long q = std::max<long>(e, Emin(f)) - Precision(f) + 1;
    RoundAtQuantum(rem.v, q, Mode::kRtz, piece.v);
    if (mpfr_cmpabs(piece.v, maxf.v) > 0) {
      mpfr_set(piece.v, maxf.v, MPFR_RNDN);
      if (mpfr_sgn(rem.v) < 0) mpfr_neg(piece.v, piece.v, MPFR_RNDN);
    }
    pieces.push_back(Encode(f, piece.v));
    mpfr_sub(rem.v, rem.v, piece.v, MPFR_RNDN);  // Exact at kExactBits.
  }
  return mpfr_zero_p(rem.v) != 0;
}

uint64_t Negate(const FormatSpec& f, uint64_t bits) {
  if ((bits & ((uint64_t{1} << (f.width - 1)) - 1)) == 0) return bits;  // Keep zeros as they are.
  return bits ^ (uint64_t{1} << (f.width - 1));
}

uint64_t GenOneBits(const FormatSpec& f) {
  return static_cast<uint64_t>(f.bias) << f.fraction_bits;
}

// Fills c.a (and c.b = 1 for dots) with pieces summing to `target` plus `pairs` cancelling
// pairs (x, -x), shuffled. False if the target cannot be built in c.in.
bool BuildTarget(Case& c, mpfr_srcptr target, int pairs, Rng& rng) {
  std::vector<uint64_t> pieces;
  if (!Decompose(*c.in, target, 16, pieces)) return false;
  std::vector<uint64_t> a = pieces;
  const int e = mpfr_zero_p(target) ? 0 : static_cast<int>(Floorlog2(target));
  for (int i = 0; i < pairs; ++i) {
    const uint64_t v = mpfr_zero_p(target) ? RandomFinite(*c.in, rng)
                                           : RandomWithExponent(*c.in, rng, e - 4, e + 4);
    a.push_back(v);
    a.push_back(Negate(*c.in, v));
  }
  for (size_t i = a.size(); i > 1; --i) std::swap(a[i - 1], a[rng.Below(i)]);
  c.a = a;
  c.b.clear();
  if (c.dot) c.b.assign(a.size(), GenOneBits(*c.in));
  return true;
}

// A random finite non-zero value of the target format `out` with exponent in [lo, hi] into v.
void RandomOutValue(const FormatSpec& out, Rng& rng, int lo, int hi, mpfr_ptr v) {
  bool s = false;
  Decode(out, RandomWithExponent(out, rng, lo, hi), v, s);
}

// Half the quantum of `out` at value v (v normal or zero: the subnormal quantum).
void HalfQuantum(const FormatSpec& out, mpfr_srcptr v, mpfr_ptr h) {
  const long e = mpfr_zero_p(v) ? Emin(out) : std::max<long>(Floorlog2(v), Emin(out));
  mpfr_set_ui_2exp(h, 1, e - Precision(out), MPFR_RNDN);
}

const std::array<const FormatSpec*, 6>& InFormats() {
  static const std::array<const FormatSpec*, 6> k = {&Float32(),      &BFloat16(),   &Float16(),
                                                     &Float8E4M3FN(), &Float8E5M2(), &Float8E4M3()};
  return k;
}
const std::array<const FormatSpec*, 7>& OutFormats() {
  static const std::array<const FormatSpec*, 7> k = {&Float32(),       &BFloat16(),   &Float16(),
                                                     &Float8E4M3FN(),  &Float8E5M2(), &Float8E4M3(),
                                                     &Float8E4M3FNUZ()};
  return k;
}

size_t RandomLength(Rng& rng) {
  if (rng.Chance(2)) {
    static constexpr std::array<size_t, 4> kLong = {256, 1024, 2048, 4096};
    return kLong[rng.Below(kLong.size())];
  }
  return 1 + rng.Below(64);
}

// One attempt at case `index`; false to retry with the next attempt.
bool MakeCase(uint64_t seed, uint64_t index, uint64_t attempt, Case& c) {
  Rng rng(seed, index, attempt);
  c.dot = rng.Chance(60);
  c.in = InFormats()[rng.Below(InFormats().size())];
  c.out = OutFormats()[rng.Below(OutFormats().size())];
  c.mode = static_cast<Mode>(rng.Below(5));
  c.sat = rng.Chance(15);
  c.a.clear();
  c.b.clear();
  const FormatSpec& in = *c.in;
  const FormatSpec& out = *c.out;
  const uint64_t kind = rng.Below(100);
  Mpfr target, h;
  if (kind < 30) {  // Random finite bit patterns.
    const size_t n = RandomLength(rng);
    for (size_t i = 0; i < n; ++i) c.a.push_back(RandomFinite(in, rng));
    if (c.dot)
      for (size_t i = 0; i < n; ++i) c.b.push_back(RandomFinite(in, rng));
    return true;
  }
  if (kind < 45) {  // Near one, both signs: partial cancellation.
    const size_t n = RandomLength(rng);
    for (size_t i = 0; i < n; ++i) c.a.push_back(RandomWithExponent(in, rng, -3, 3));
    if (c.dot)
      for (size_t i = 0; i < n; ++i) c.b.push_back(RandomWithExponent(in, rng, -3, 3));
    return true;
  }
  const int pairs = static_cast<int>(rng.Below(20));
  if (kind < 60) {  // Exact tie of the target: v +- half a quantum.
    RandomOutValue(out, rng, Emin(out), Emax(out), target.v);
    HalfQuantum(out, target.v, h.v);
    if (rng.Chance(50)) mpfr_neg(h.v, h.v, MPFR_RNDN);
    mpfr_add(target.v, target.v, h.v, MPFR_RNDN);
    return BuildTarget(c, target.v, pairs, rng);
  }
  if (kind < 67) {  // Near tie: v + half quantum +- 2^-k quantum.
    RandomOutValue(out, rng, Emin(out), Emax(out), target.v);
    HalfQuantum(out, target.v, h.v);
    mpfr_add(target.v, target.v, h.v, MPFR_RNDN);
    mpfr_mul_2si(h.v, h.v, -static_cast<long>(1 + rng.Below(8)), MPFR_RNDN);
    if (rng.Chance(50)) mpfr_neg(h.v, h.v, MPFR_RNDN);
    mpfr_add(target.v, target.v, h.v, MPFR_RNDN);
    return BuildTarget(c, target.v, pairs, rng);
  }
  if (kind < 74) {  // Cancellation to exactly zero.
    mpfr_set_zero(target.v, 1);
    return BuildTarget(c, target.v, 1 + pairs, rng);
  }
  if (kind < 86) {  // Subnormal range of the target: k/4 subnormal quanta, k random.
    const long k = 1 + static_cast<long>(rng.Below(1u << std::min(out.fraction_bits + 2, 12)));
    mpfr_set_ui_2exp(target.v, static_cast<unsigned long>(k), MinSubnormalExponent(out) - 2,
                     MPFR_RNDN);
    if (rng.Chance(50)) mpfr_neg(target.v, target.v, MPFR_RNDN);
    return BuildTarget(c, target.v, pairs, rng);
  }
  if (kind < 97) {  // Around the max finite: max + j/4 ulp, j in [-4, 12].
    MaxFinite(out, target.v);
    const long j = static_cast<long>(rng.Below(17)) - 4;
    mpfr_set_si_2exp(h.v, j, Emax(out) - Precision(out) + 1 - 2, MPFR_RNDN);
    mpfr_add(target.v, target.v, h.v, MPFR_RNDN);
    if (rng.Chance(50)) mpfr_neg(target.v, target.v, MPFR_RNDN);
    return BuildTarget(c, target.v, pairs, rng);
  }
  // Specials: Inf terms (formats with Inf only).
  if (in.nonfinite != NonFinite::kIeee || out.nonfinite != NonFinite::kIeee) return false;
  const size_t n = 1 + rng.Below(8);
  for (size_t i = 0; i < n; ++i) c.a.push_back(RandomFinite(in, rng));
  if (c.dot)
    for (size_t i = 0; i < n; ++i) c.b.push_back(RandomFinite(in, rng));
  const size_t at = rng.Below(n);
  c.a[at] = GenInfBits(in, rng.Chance(50));
  if (rng.Chance(40)) c.a[(at + 1) % n] = GenInfBits(in, rng.Chance(50));
  if (c.dot && rng.Chance(30)) c.b[at] = 0;  // Inf * 0.
  return true;
}

void AppendHex(std::string& s, const FormatSpec& f, uint64_t bits) {
  char buf[24];
  std::snprintf(buf, sizeof buf, " 0x%0*" PRIx64, f.width / 4, bits);
  s += buf;
}

}  // namespace
}  // namespace fpconform

int main(int argc, char** argv) {
  using namespace fpconform;
  uint64_t seed = 20261129;
  uint64_t count = 2400;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seed") == 0) {
      seed = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (std::strcmp(argv[i], "--count") == 0) {
      count = std::strtoull(argv[i + 1], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: catalog_generator [--seed S] [--count N]\n");
      return 2;
    }
  }
  std::printf(
      "# Golden dot/sum cases for `fpconform calc` (cli/CALC.md): '<case> => <result> <flags>'.\n"
      "# Generated by cases/catalog_generator.cc: catalog_generator --seed %" PRIu64
      " --count %" PRIu64
      "\n"
      "# Expected results: the generator's own MPFR computation (exact products, mpfr_sum at\n"
      "# %d bits checked exact, one rounding at the target quantum with mpfr_rint/mpfr_round;\n"
      "# rne/rtz/rup/rdn into IEEE targets also confirmed by the emin/emax + mpfr_subnormalize\n"
      "# recipe; MPFR %s), independent of oracles/exact_sum and formats/RoundPack. Replayed by\n"
      "# cases/catalog_replay_test.cc. Do not edit by hand: regenerate.\n",
      seed, count, static_cast<int>(kExactBits), mpfr_get_version());
  std::string line;
  for (uint64_t index = 0; index < count; ++index) {
    Case c;
    Expected x;
    uint64_t attempt = 0;
    while (!MakeCase(seed, index, attempt, c) || !Evaluate(c, x)) ++attempt;
    line = c.dot ? "dot " : "sum ";
    line += c.in->name;
    line += ' ';
    line += c.out->name;
    if (c.sat) line += ":sat";
    line += ' ';
    line += kModeNames[static_cast<size_t>(c.mode)];
    line += ' ';
    line += std::to_string(c.a.size());
    for (uint64_t v : c.a) AppendHex(line, *c.in, v);
    for (uint64_t v : c.b) AppendHex(line, *c.in, v);
    line += " =>";
    AppendHex(line, *c.out, x.bits);
    line += ' ';
    line += x.flags;
    line += '\n';
    std::fputs(line.c_str(), stdout);
  }
  std::fprintf(stderr,
               "catalog_generator: %" PRIu64
               " cases; %lld roundings confirmed by the "
               "mpfr_subnormalize recipe\n",
               count, static_cast<long long>(recipe_checks));
  return 0;
}
