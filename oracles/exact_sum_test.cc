// ExactAccumulator against an MPFR computation written here (exact products at pa + pb bits,
// mpfr_sum at a precision that keeps the sum exact, then MPFR's documented IEEE recipe: emin/emax
// of the target, mpfr_set with the mode, mpfr_subnormalize), bit for bit, plus table-driven rows
// for NaN/Inf rules and zero signs, and a check that the vector kernels equal the scalar path.
//
// Cases: FPCONFORM_EXACT_CASES (default 200000) random dots-and-sums per input format; case i
// depends only on (seed, i) (SplitMix64). FPCONFORM_SEED overrides the seed.
#include "oracles/exact_sum.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <gmp.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>
#endif
#include <mpfr.h>

#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "formats/round_pack.h"
#include "formats/text.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

// ---- Counter-based randomness (SplitMix64 of seed ^ index). ----

class Rng {
 public:
  Rng(uint64_t seed, uint64_t index) : key_(SplitMix64At(seed ^ SplitMix64At(index, 0), 0)) {}
  uint64_t Next() { return SplitMix64At(key_ + 0x632BE59BD9B4E019ull * ++j_, 0); }
  uint64_t Below(uint64_t n) { return Next() % n; }
  int Range(int lo, int hi) {  // Inclusive; lo <= hi.
    return lo + static_cast<int>(Below(static_cast<uint64_t>(hi - lo + 1)));
  }
  bool OneIn(uint64_t n) { return Below(n) == 0; }

 private:
  uint64_t key_;
  uint64_t j_ = 0;
};

// FPCONFORM_SEED when set, else 0x5EEDE7AC75000001; read and printed once per process.
uint64_t Seed() {
  static const uint64_t seed = TestSeed(0x5EED'E7AC'7500'0001ull, "exact_sum_test");
  return seed;
}

uint64_t CasesPerFormat() {
  if (const char* e = std::getenv("FPCONFORM_EXACT_CASES")) return std::strtoull(e, nullptr, 0);
  return 200000;
}

// ---- The test's own encoder/decoder (IEEE-like formats and float8_e4m3fn only). ----

// Bits of (-1)^sign * 2^e * (1 + random fraction) when representable as a normal or subnormal
// of f; e is clamped into f's range. `frac`: random fraction bits (masked), 0 for 2^e.
uint64_t MakeValue(const FormatSpec& f, bool sign, int e, uint64_t frac) {
  const int min_sub = MinSubnormalExponent(f);
  e = std::clamp(e, min_sub, Emax(f));
  uint64_t bits;
  if (e >= Emin(f)) {
    bits = (static_cast<uint64_t>(e + f.bias) << f.fraction_bits) | (frac & FractionMask(f));
  } else {
    const int lead = e - min_sub;  // Bit index of the leading one in the fraction field.
    bits = (uint64_t{1} << lead) | (frac & ((uint64_t{1} << lead) - 1));
  }
  if (f.nan_encoding == NanEncoding::kAllOnes &&
      (bits & ((uint64_t{1} << (EncodingBits(f) - 1)) - 1)) ==
          ((uint64_t{1} << (EncodingBits(f) - 1)) - 1)) {
    --bits;  // float8_e4m3fn: S.1111.111 is NaN; take 448.
  }
  if (sign) bits |= SignBit(f);
  return bits << f.pad_bits;
}

uint64_t Negate(const FormatSpec& f, uint64_t bits) { return bits ^ (SignBit(f) << f.pad_bits); }

// Decodes bits into `out` (precision >= p; exact); NaN patterns give NaN, Inf gives Inf.
void Decode(const FormatSpec& f, uint64_t bits, mpfr_ptr out) {
  bits >>= f.pad_bits;
  const bool sign = (bits >> (EncodingBits(f) - 1)) & 1;
  const uint64_t field = (bits >> f.fraction_bits) & static_cast<uint64_t>(MaxBiasedExponent(f));
  const uint64_t frac = bits & FractionMask(f);
  const bool all_ones = field == static_cast<uint64_t>(MaxBiasedExponent(f));
  if (f.nan_encoding == NanEncoding::kIeee && all_ones) {
    if (frac == 0) mpfr_set_inf(out, sign ? -1 : 1);
    else mpfr_set_nan(out);
    return;
  }
  if (f.nan_encoding == NanEncoding::kAllOnes && all_ones && frac == FractionMask(f)) {
    mpfr_set_nan(out);
    return;
  }
  if (field == 0 && frac == 0) {
    mpfr_set_zero(out, sign ? -1 : 1);
    return;
  }
  const uint64_t sig = field == 0 ? frac : frac | (uint64_t{1} << f.fraction_bits);
  const long e = (field == 0 ? 1 : static_cast<long>(field)) - f.bias - f.fraction_bits;
  mpfr_set_ui_2exp(out, sig, e, MPFR_RNDN);  // Exact: sig < 2^53 <= precision.
  if (sign) mpfr_neg(out, out, MPFR_RNDN);
}

// Bits of y (already rounded to f with the recipe), for the IEEE targets.
uint64_t Encode(const FormatSpec& f, mpfr_srcptr y) {
  const uint64_t sign = mpfr_signbit(y) ? SignBit(f) : 0;
  const uint64_t top = static_cast<uint64_t>(MaxBiasedExponent(f));
  if (mpfr_nan_p(y)) return ((top << f.fraction_bits) | (uint64_t{1} << (f.fraction_bits - 1)))
                            << f.pad_bits;
  if (mpfr_inf_p(y)) return (sign | (top << f.fraction_bits)) << f.pad_bits;
  if (mpfr_zero_p(y)) return sign << f.pad_bits;
  const long e = mpfr_get_exp(y) - 1;  // Exponent of the leading bit.
  const long lsb = std::max<long>(e, Emin(f)) - f.fraction_bits;
  mpfr_t t;
  mpfr_init2(t, mpfr_get_prec(y));
  mpfr_abs(t, y, MPFR_RNDN);
  mpfr_mul_2si(t, t, -lsb, MPFR_RNDN);
  mpz_t z;
  mpz_init(z);
  mpfr_get_z(z, t, MPFR_RNDN);
  const uint64_t sig = mpz_get_ui(z);
  mpz_clear(z);
  mpfr_clear(t);
  if (e < Emin(f)) return (sign | sig) << f.pad_bits;
  const uint64_t biased = static_cast<uint64_t>(e + f.bias);
  return (sign | (biased << f.fraction_bits) | (sig & FractionMask(f))) << f.pad_bits;
}

bool IsNan(const FormatSpec& f, uint64_t bits) {
  bits >>= f.pad_bits;
  const uint64_t field = (bits >> f.fraction_bits) & static_cast<uint64_t>(MaxBiasedExponent(f));
  return field == static_cast<uint64_t>(MaxBiasedExponent(f)) && (bits & FractionMask(f)) != 0;
}

// ---- The MPFR reference. ----

struct Term {
  const FormatSpec* fa;
  uint64_t a;
  const FormatSpec* fb;  // nullptr: a plain addend.
  uint64_t b;
};

class MpfrReference {
 public:
  explicit MpfrReference(const std::vector<Term>& terms) {
    prods_.resize(terms.size());
    long max_exp = LONG_MIN, min_lsb = LONG_MAX;
    mpfr_t x, y;
    mpfr_init2(x, 64);
    mpfr_init2(y, 64);
    for (size_t i = 0; i < terms.size(); ++i) {
      const Term& t = terms[i];
      mpfr_ptr p = prods_[i].v;
      if (t.fb == nullptr) {
        mpfr_init2(p, Precision(*t.fa));
        Decode(*t.fa, t.a, p);
      } else {
        mpfr_init2(p, Precision(*t.fa) + Precision(*t.fb));
        Decode(*t.fa, t.a, x);
        Decode(*t.fb, t.b, y);
        EXPECT_EQ(mpfr_mul(p, x, y, MPFR_RNDN), 0);
      }
      if (mpfr_regular_p(p)) {
        max_exp = std::max<long>(max_exp, mpfr_get_exp(p));
        min_lsb = std::min<long>(min_lsb, mpfr_get_exp(p) - mpfr_get_prec(p));
      }
    }
    mpfr_clear(x);
    mpfr_clear(y);
    ptrs_.resize(terms.size());
    for (size_t i = 0; i < terms.size(); ++i) ptrs_[i] = prods_[i].v;
    prec_ = max_exp == LONG_MIN ? 64 : max_exp - min_lsb + 70;
    mpfr_init2(exact_, prec_);
    const int t = mpfr_sum(exact_, ptrs_.data(), ptrs_.size(), MPFR_RNDN);
    EXPECT_EQ(t, 0) << "reference sum not exact";
  }
  ~MpfrReference() {
    for (auto& p : prods_) mpfr_clear(p.v);
    mpfr_clear(exact_);
  }
  mpfr_srcptr exact() const { return exact_; }

  // MPFR's IEEE recipe for `f` (IEEE-encoded with subnormals) under `rnd`.
  OpResult Round(const FormatSpec& f, mpfr_rnd_t rnd) {
    mpfr_t e;
    mpfr_init2(e, prec_);
    if (mpfr_zero_p(exact_)) {
      mpfr_sum(e, ptrs_.data(), ptrs_.size(), rnd);  // The zero's sign depends on the mode.
    } else {
      mpfr_set(e, exact_, MPFR_RNDN);
    }
    const mpfr_exp_t old_emin = mpfr_get_emin(), old_emax = mpfr_get_emax();
    mpfr_set_emin(MinSubnormalExponent(f) + 1);
    mpfr_set_emax(Emax(f) + 1);
    mpfr_t y;
    mpfr_init2(y, Precision(f));
    mpfr_clear_flags();
    int t = mpfr_set(y, e, rnd);
    t = mpfr_check_range(y, t, rnd);
    t = mpfr_subnormalize(y, t, rnd);
    const bool overflow = mpfr_overflow_p() != 0;
    mpfr_set_emin(old_emin);
    mpfr_set_emax(old_emax);
    OpResult r{Encode(f, y), 0};
    if (t != 0) r.flags |= kInexact;
    if (overflow) r.flags |= kOverflow | kInexact;
    if (mpfr_nan_p(y)) r.flags = 0;
    mpfr_clear(y);
    mpfr_clear(e);
    return r;
  }

 private:
  struct Holder {
    mpfr_t v;
  };
  std::vector<Holder> prods_;
  std::vector<mpfr_ptr> ptrs_;
  mpfr_prec_t prec_;
  mpfr_t exact_;
};

// ---- Case generation. ----

enum class Pattern {
  kRandomBits, kWideExponents, kSubnormals, kCancelToZero, kTies, kHugeTiny, kCopies,
  kCancelToSubnormal, kCount
};

const FormatSpec* const kTargets[] = {&Float32(), &BFloat16(), &Float16(), &Float64()};

// A random value of `f` whose leading bit has exponent e (clamped into f's range).
uint64_t ValueAt(const FormatSpec& f, Rng& rng, int e, bool power_of_two = false) {
  return MakeValue(f, rng.OneIn(2), e, power_of_two ? 0 : rng.Next());
}

// A pair (a in fa, b in fb) whose product has leading exponent about e (exactly e + {0,1} for
// normal operands), signs random; for plain sums (fb null) only a.
std::pair<uint64_t, uint64_t> ProductAt(const FormatSpec& fa, const FormatSpec* fb, Rng& rng,
                                        int e, bool power_of_two = false) {
  if (fb == nullptr) return {ValueAt(fa, rng, e, power_of_two), 0};
  const int lo = std::max(MinSubnormalExponent(fa), e - Emax(*fb));
  const int hi = std::min(Emax(fa), e - MinSubnormalExponent(*fb));
  const int ea = lo <= hi ? rng.Range(lo, hi) : (lo + hi) / 2;
  return {ValueAt(fa, rng, ea, power_of_two), ValueAt(*fb, rng, e - ea, power_of_two)};
}

// Range of product (or value) exponents the input formats reach.
int MinExp(const FormatSpec& fa, const FormatSpec* fb) {
  return MinSubnormalExponent(fa) + (fb ? MinSubnormalExponent(*fb) : 0);
}
int MaxExp(const FormatSpec& fa, const FormatSpec* fb) { return Emax(fa) + (fb ? Emax(*fb) : 0); }

std::vector<Term> MakeCase(const FormatSpec& fa, const FormatSpec* fb, uint64_t index,
                           Pattern& pattern) {
  Rng rng(Seed(), index);
  pattern = static_cast<Pattern>(rng.Below(static_cast<uint64_t>(Pattern::kCount)));
  size_t n = rng.OneIn(64) ? 1 + rng.Below(1024) : 1 + rng.Below(48);
  const int lo = MinExp(fa, fb), hi = MaxExp(fa, fb);
  std::vector<Term> terms;
  auto push = [&](std::pair<uint64_t, uint64_t> ab) {
    terms.push_back({&fa, ab.first, fb, ab.second});
  };
  auto push_neg = [&](const Term& t) {
    Term u = t;
    u.a = Negate(fa, u.a);
    terms.push_back(u);
  };
  switch (pattern) {
    case Pattern::kRandomBits:
      for (size_t i = 0; i < n; ++i) {
        const uint64_t a = rng.Next() & WidthMask(fa);
        const uint64_t b = fb ? rng.Next() & WidthMask(*fb) : 0;
        // Mostly finite: a random pattern of a wide format is rarely NaN/Inf anyway; in 8-bit
        // formats keep 1 in 8 of them.
        terms.push_back({&fa, a, fb, b});
      }
      if (fa.nonfinite == NonFinite::kIeee && rng.OneIn(8)) {  // Inject an Inf (or two).
        const int k = rng.OneIn(3) ? 2 : 1;
        for (int i = 0; i < k; ++i) terms[rng.Below(terms.size())].a = InfBits(fa, rng.OneIn(2));
      }
      break;
    case Pattern::kWideExponents:
      for (size_t i = 0; i < n; ++i) push(ProductAt(fa, fb, rng, rng.Range(lo, hi)));
      break;
    case Pattern::kSubnormals: {
      const int e_lo = lo, e_hi = std::min(hi, lo + 2 * Precision(fa) + 4);
      for (size_t i = 0; i < n; ++i) push(ProductAt(fa, fb, rng, rng.Range(e_lo, e_hi)));
      break;
    }
    case Pattern::kCancelToZero:
    case Pattern::kCancelToSubnormal: {
      const size_t half = (n + 1) / 2;
      const int center = rng.Range(lo, hi);
      for (size_t i = 0; i < half; ++i) {
        push(ProductAt(fa, fb, rng, std::clamp(center + rng.Range(-30, 30), lo, hi)));
      }
      for (size_t i = 0; i < half; ++i) push_neg(terms[i]);
      if (pattern == Pattern::kCancelToSubnormal) {
        // A remainder near the subnormal range of one of the targets.
        const FormatSpec& t = *kTargets[rng.Below(4)];
        const int e = rng.Range(MinSubnormalExponent(t) - 2, Emin(t) + 1);
        const int k = rng.Range(1, 3);
        for (int i = 0; i < k; ++i) push(ProductAt(fa, fb, rng, std::clamp(e - i, lo, hi)));
      }
      // Shuffle (Fisher-Yates with the counter-based stream).
      for (size_t i = terms.size(); i > 1; --i) std::swap(terms[i - 1], terms[rng.Below(i)]);
      break;
    }
    case Pattern::kTies: {
      // 2^E + [2^(E-p+1)] + 2^(E-p) [+- 2^(E-p-j)]: exactly a tie (or just off one) in a target
      // of precision p, with the kept last bit odd or even.
      const FormatSpec& t = *kTargets[rng.Below(4)];
      const int p = Precision(t);
      // Inside the target's normal range where the inputs reach it.
      const int e_lo = std::max(lo + p + 1, Emin(t)), e_hi = std::min(hi, Emax(t));
      int e = e_lo <= e_hi ? rng.Range(e_lo, e_hi) : rng.Range(std::min(hi, lo + p + 1), hi);
      if (rng.OneIn(4)) e = rng.Range(Emin(t) - 2, Emin(t) + 3);  // Ties among subnormals.
      const bool neg = rng.OneIn(2);
      auto add = [&](int ex) {
        if (ex < lo || ex > hi) return;
        auto ab = ProductAt(fa, fb, rng, ex, /*power_of_two=*/true);
        // Force the sign: the product's sign is sign(a) ^ sign(b).
        const bool s = ((ab.first >> fa.pad_bits) & (SignBit(fa))) != 0;
        const bool sb = fb && ((ab.second >> fb->pad_bits) & SignBit(*fb)) != 0;
        if ((s != sb) != neg) ab.first = Negate(fa, ab.first);
        push(ab);
      };
      add(e);
      if (rng.OneIn(2)) add(e - p + 1);
      add(e - p);
      if (rng.OneIn(3)) {
        auto ab = ProductAt(fa, fb, rng, e - p - rng.Range(1, 60), true);
        push(ab);
      }
      for (size_t i = terms.size(); i > 1; --i) std::swap(terms[i - 1], terms[rng.Below(i)]);
      break;
    }
    case Pattern::kHugeTiny:
      for (size_t i = 0; i < n; ++i) {
        const int e = (i % 2 == 0) ? rng.Range(hi - 4, hi) : rng.Range(lo, lo + 4);
        push(ProductAt(fa, fb, rng, e));
        if (i % 4 == 2) push_neg(terms[terms.size() - 3]);  // Cancel a huge one.
      }
      break;
    case Pattern::kCopies: {
      const int k = rng.Range(0, 9);
      auto ab = ProductAt(fa, fb, rng, rng.Range(lo, hi));
      for (int i = 0; i < (1 << k); ++i) push(ab);
      if (rng.OneIn(2)) push(ProductAt(fa, fb, rng, rng.Range(lo, hi)));
      break;
    }
    case Pattern::kCount:
      break;
  }
  return terms;
}

const char* PatternName(Pattern p) {
  static const char* const kNames[] = {"random_bits", "wide_exponents", "subnormals",
                                       "cancel_to_zero", "ties", "huge_tiny", "copies",
                                       "cancel_to_subnormal"};
  return kNames[static_cast<int>(p)];
}

std::string TermsText(const std::vector<Term>& terms) {
  std::string s;
  for (size_t i = 0; i < terms.size() && i < 16; ++i) {
    s += "  " + Describe(*terms[i].fa, terms[i].a);
    if (terms[i].fb) s += " * " + Describe(*terms[i].fb, terms[i].b);
    s += "\n";
  }
  if (terms.size() > 16) s += "  ...\n";
  return s;
}

struct InputCase {
  const char* name;
  const FormatSpec* fa;
  const FormatSpec* fb;  // For dots.
};

// What the random cases reached (per target: a tie under RNE, exact zero, subnormal result,
// overflow, NaN, Inf), printed so that a generator change that loses a class shows.
struct Coverage {
  uint64_t ties = 0, zeros = 0, subnormals = 0, overflows = 0, nans = 0, infs = 0;
};

// Runs `count` cases for the input pair; half dots, half sums. Returns the number of checks.
uint64_t RunRandom(const InputCase& in, uint64_t first, uint64_t count, Coverage& cov) {
  const mpfr_rnd_t kModes[] = {MPFR_RNDN, MPFR_RNDZ, MPFR_RNDU, MPFR_RNDD};
  const Rounding kRoundings[] = {Rounding::kNearestEven, Rounding::kTowardZero,
                                 Rounding::kUpward, Rounding::kDownward};
  uint64_t checks = 0;
  int failures = 0;
  mpfr_t mine;
  mpfr_init2(mine, 64);
  ExactAccumulator acc;
  std::vector<uint64_t> a, b;
  for (uint64_t i = first; i < first + count && failures < 10; ++i) {
    const bool dot = i % 2 == 0;
    // Sums of the mixed case mix both formats (bf16 terms and e4m3fn terms alternate).
    const FormatSpec* fb = dot ? in.fb : nullptr;
    Pattern pattern;
    std::vector<Term> terms = MakeCase(*in.fa, fb, i, pattern);
    if (!dot && in.fb != in.fa) {
      for (size_t k = 1; k < terms.size(); k += 2) {
        // Re-express every other addend in fb (its own random value at a similar exponent).
        Rng r(Seed() ^ 0xABCD, i * 4096 + k);
        const int e = std::clamp(static_cast<int>(r.Range(MinSubnormalExponent(*in.fb),
                                                          Emax(*in.fb))),
                                 MinSubnormalExponent(*in.fb), Emax(*in.fb));
        terms[k] = {in.fb, ValueAt(*in.fb, r, e), nullptr, 0};
      }
    }
    // The accumulator: vector kernels over the runs of equal formats; an initial value c in
    // float32 for 1 case in 4 (as a plain addend).
    acc.Reset();
    if (dot) {
      a.clear();
      b.clear();
      for (const Term& t : terms) {
        a.push_back(t.a);
        b.push_back(t.b);
      }
      acc.AddDot(*in.fa, a, *in.fb, b);
    } else {
      for (size_t k = 0; k < terms.size();) {
        size_t j = k;
        a.clear();
        while (j < terms.size() && terms[j].fa == terms[k].fa) a.push_back(terms[j++].a);
        acc.AddSum(*terms[k].fa, a);
        k = j;
      }
    }
    Rng rc(Seed() ^ 0xC0FFEE, i);
    if (rc.OneIn(4)) {
      const uint64_t c = MakeValue(Float32(), rc.OneIn(2), rc.Range(-149, 127), rc.Next());
      acc.Add(Float32(), c);
      terms.push_back({&Float32(), c, nullptr, 0});
    }
    MpfrReference ref(terms);
    // The exact value.
    acc.ToMpfr(mine);
    const bool same_exact = (mpfr_nan_p(mine) && mpfr_nan_p(ref.exact())) ||
                            (!mpfr_nan_p(mine) && mpfr_equal_p(mine, ref.exact()) &&
                             (!mpfr_zero_p(mine) ||
                              mpfr_signbit(mine) == mpfr_signbit(ref.exact())));
    ++checks;
    if (!same_exact) {
      ++failures;
      ADD_FAILURE() << in.name << " case " << i << " (" << PatternName(pattern)
                    << ") exact value differs: mine " << acc.ToHexFloat() << "\n"
                    << TermsText(terms);
    }
    if (acc.IsNan()) ++cov.nans;
    if (acc.IsInf()) ++cov.infs;
    if (acc.IsZero()) ++cov.zeros;
    for (const FormatSpec* target : kTargets) {
      if (acc.IsFinite() && !acc.IsZero()) {
        OpEnv away;
        away.rounding = Rounding::kNearestAway;
        const OpResult rne = acc.Round(*target, OpEnv{}), rna = acc.Round(*target, away);
        if (rne.bits != rna.bits) ++cov.ties;
        if ((rne.flags & kOverflow) != 0) ++cov.overflows;
        const uint64_t mag = (rne.bits >> target->pad_bits) & (SignBit(*target) - 1);
        if (mag != 0 && (mag >> target->fraction_bits) == 0) ++cov.subnormals;
      }
      for (int m = 0; m < 4; ++m) {
        OpEnv env;
        env.rounding = kRoundings[m];
        const OpResult got = acc.Round(*target, env);
        const OpResult want = ref.Round(*target, kModes[m]);
        ++checks;
        const bool nan = IsNan(*target, want.bits);
        const bool ok = nan ? IsNan(*target, got.bits)
                            : got.bits == want.bits &&
                                  (got.flags & (kInexact | kOverflow)) == want.flags;
        if (!ok) {
          ++failures;
          ADD_FAILURE() << in.name << " case " << i << " (" << PatternName(pattern) << ", "
                        << (dot ? "dot" : "sum") << ", n=" << terms.size() << ") -> "
                        << target->name << " " << RoundingName(env) << ": got "
                        << Describe(*target, got.bits) << " " << FlagsToString(got.flags)
                        << ", MPFR " << Describe(*target, want.bits) << " "
                        << FlagsToString(want.flags) << "; exact " << acc.ToHexFloat() << "\n"
                        << TermsText(terms);
        }
      }
    }
  }
  mpfr_clear(mine);
  return checks;
}

const InputCase kInputs[] = {
    {"float32", &Float32(), &Float32()},
    {"bfloat16", &BFloat16(), &BFloat16()},
    {"float16", &Float16(), &Float16()},
    {"float8_e4m3fn", &Float8E4M3FN(), &Float8E4M3FN()},
    {"float8_e5m2", &Float8E5M2(), &Float8E5M2()},
    {"bfloat16_x_float8_e4m3fn", &BFloat16(), &Float8E4M3FN()},
    {"float64", &Float64(), &Float64()},
};

class RandomAgainstMpfr : public ::testing::TestWithParam<InputCase> {};

TEST_P(RandomAgainstMpfr, BitForBit) {
  const auto start = std::chrono::steady_clock::now();
  const uint64_t cases = CasesPerFormat();
  Coverage cov;
  const uint64_t checks = RunRandom(GetParam(), 0, cases, cov);
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "exact_sum_test " << GetParam().name << ": " << cases << " cases (dots and sums), "
            << checks << " checks against MPFR, " << s << " s; reached (case x target): "
            << cov.ties << " RNE ties, " << cov.subnormals << " subnormal results, "
            << cov.overflows << " overflows; cases: " << cov.zeros << " exact zeros, "
            << cov.nans << " NaN, " << cov.infs << " Inf\n";
  // The generator must keep reaching every class.
  EXPECT_GT(cov.ties, cases / 200);
  EXPECT_GT(cov.subnormals, cases / 100);
  EXPECT_GT(cov.zeros, cases / 100);
}

INSTANTIATE_TEST_SUITE_P(Inputs, RandomAgainstMpfr, ::testing::ValuesIn(kInputs),
                         [](const auto& p) { return std::string(p.param.name); });

// ---- The vector kernels equal the scalar path, for every float format of the table. ----

TEST(ExactAccumulator, KernelsMatchScalarPathAllFormats) {
  uint64_t checks = 0;
  for (const FormatSpec& fa : AllFormats()) {
    if (!IsFloat(fa)) continue;
    for (const FormatSpec& fb : AllFormats()) {
      if (!IsFloat(fb)) continue;
      for (int daz = 0; daz < 2; ++daz) {
        for (uint64_t c = 0; c < 20; ++c) {
          Rng rng(Seed() ^ 0x5CA1A5, (checks << 1) | static_cast<uint64_t>(daz));
          const size_t n = 1 + rng.Below(40);
          std::vector<uint64_t> a(n), b(n);
          for (size_t i = 0; i < n; ++i) {
            a[i] = rng.Next() & WidthMask(fa);
            b[i] = rng.Next() & WidthMask(fb);
            if (rng.OneIn(3)) a[i] &= ~(WidthMask(fa) >> 2);  // Small exponents, subnormals.
          }
          ExactAccumulator fast(daz != 0), slow(daz != 0), fast_sum(daz != 0),
              slow_sum(daz != 0);
          fast.AddDot(fa, a, fb, b);
          fast_sum.AddSum(fa, a);
          for (size_t i = 0; i < n; ++i) {
            slow.AddProduct(fa, a[i], fb, b[i]);
            slow_sum.Add(fa, a[i]);
          }
          for (const auto* pair : {&fast, &fast_sum}) {
            const ExactAccumulator& x = *pair;
            const ExactAccumulator& y = pair == &fast ? slow : slow_sum;
            SCOPED_TRACE(std::string(fa.name) + " x " + std::string(fb.name) +
                         (daz ? " daz" : ""));
            EXPECT_EQ(x.ToHexFloat(), y.ToHexFloat());
            EXPECT_EQ(x.terms(), y.terms());
            for (const FormatSpec* t : {&Float32(), &Float8E4M3FN(), &Float8E8M0FNU()}) {
              for (Rounding r : {Rounding::kNearestEven, Rounding::kDownward}) {
                OpEnv env;
                env.rounding = r;
                EXPECT_EQ(x.Round(*t, env), y.Round(*t, env));
              }
            }
          }
          ++checks;
        }
      }
    }
  }
  std::cout << "kernel-vs-scalar cases: " << checks << "\n";
}

// ---- The host-double product path (AddDot/AddSum on formats other than float64) equals the
// integer scalar path (AddProduct/Add) on every input class: exhaustively for 8-bit pairs and
// bfloat16, by classes for float32, and under MXCSR.DAZ (where it must step aside). ----

// Dot (or sum) through the vector API and through the scalar loop: same exact value, same
// zero-sign bookkeeping, same term count.
void ExpectSameAsScalar(const FormatSpec& fa, const std::vector<uint64_t>& a,
                        const FormatSpec& fb, const std::vector<uint64_t>& b) {
  ExactAccumulator fast, slow, fast_sum, slow_sum;
  fast.AddDot(fa, a, fb, b);
  fast_sum.AddSum(fa, a);
  for (size_t i = 0; i < a.size(); ++i) {
    slow.AddProduct(fa, a[i], fb, b[i]);
    slow_sum.Add(fa, a[i]);
  }
  for (int k = 0; k < 2; ++k) {
    const ExactAccumulator& x = k == 0 ? fast : fast_sum;
    const ExactAccumulator& y = k == 0 ? slow : slow_sum;
    const ExactAccumulator::Wide wx = x.ToWide(), wy = y.ToWide();
    ASSERT_EQ(wx.significand, wy.significand) << x.ToHexFloat() << " vs " << y.ToHexFloat();
    ASSERT_EQ(wx.exponent, wy.exponent);
    ASSERT_EQ(wx.sign, wy.sign);
    ASSERT_EQ(wx.sticky, wy.sticky);
    ASSERT_EQ(x.ToHexFloat(), y.ToHexFloat());
    ASSERT_EQ(x.ZeroSign(Rounding::kDownward), y.ZeroSign(Rounding::kDownward));
    ASSERT_EQ(x.ZeroSign(Rounding::kNearestEven), y.ZeroSign(Rounding::kNearestEven));
    ASSERT_EQ(x.terms(), y.terms());
  }
}

bool Finite(const FormatSpec& f, uint64_t bits) {
  const Unpacked u = UnpackBits(f, bits);
  return u.kind == Unpacked::Kind::kZero || u.kind == Unpacked::Kind::kFinite;
}

TEST(ExactAccumulator, DoublePathExhaustiveEightBitPairs) {
  uint64_t dots = 0;
  for (const FormatSpec& fa : AllFormats()) {
    if (!IsFloat(fa) || fa.width != 8) continue;
    for (const FormatSpec& fb : AllFormats()) {
      if (!IsFloat(fb) || fb.width != 8) continue;
      SCOPED_TRACE(std::string(fa.name) + " x " + std::string(fb.name));
      std::vector<uint64_t> row_b;
      for (uint64_t y = 0; y < 256; ++y) {
        if (Finite(fb, y)) row_b.push_back(y);
      }
      for (uint64_t x = 0; x < 256; ++x) {
        if (!Finite(fa, x)) continue;
        const std::vector<uint64_t> row_a(row_b.size(), x);
        ExpectSameAsScalar(fa, row_a, fb, row_b);
        // Every single product on its own as well (a length-1 dot).
        for (uint64_t y : row_b) {
          ExactAccumulator one = ExactDot(fa, std::vector<uint64_t>{x}, fb,
                                          std::vector<uint64_t>{y});
          ExactAccumulator ref;
          ref.AddProduct(fa, x, fb, y);
          ASSERT_EQ(one.ToHexFloat(Rounding::kDownward), ref.ToHexFloat(Rounding::kDownward))
              << HexBits(fa, x) << " * " << HexBits(fb, y);
        }
        ++dots;
      }
    }
  }
  std::cout << "8-bit pair rows checked: " << dots << "\n";
}

TEST(ExactAccumulator, DoublePathExhaustiveBFloat16AndFloat32Classes) {
  // Every finite bfloat16 against a few b patterns and in sums, in one long dot each.
  std::vector<uint64_t> all;
  for (uint64_t x = 0; x < 65536; ++x) {
    if (Finite(BFloat16(), x)) all.push_back(x);
  }
  for (uint64_t pattern = 0; pattern < 6; ++pattern) {
    std::vector<uint64_t> b(all.size());
    for (size_t i = 0; i < b.size(); ++i) {
      switch (pattern) {
        case 0: b[i] = 0x3F80; break;                      // 1
        case 1: b[i] = 0x0001; break;                      // min subnormal
        case 2: b[i] = 0x7F7F; break;                      // max
        case 3: b[i] = all[(i * 7919) % all.size()]; break;  // every value, permuted
        default: b[i] = all[SplitMix64At(pattern * 1000003 + i, 0) % all.size()]; break;
      }
    }
    ExpectSameAsScalar(BFloat16(), all, BFloat16(), b);
    // Chunks of the long dot, so that a wrong product cannot hide in a cancellation.
    for (size_t start = 0; start + 512 <= all.size(); start += 512) {
      const std::vector<uint64_t> sa(all.begin() + static_cast<long>(start),
                                     all.begin() + static_cast<long>(start + 512));
      const std::vector<uint64_t> sb(b.begin() + static_cast<long>(start),
                                     b.begin() + static_cast<long>(start + 512));
      ExpectSameAsScalar(BFloat16(), sa, BFloat16(), sb);
    }
  }
  // float32: subnormals, the extremes of the range, and random patterns; mixed with bfloat16
  // and float8_e4m3fn.
  for (uint64_t c = 0; c < 400; ++c) {
    Rng rng(Seed() ^ 0xF32, c);
    std::vector<uint64_t> a(1 + rng.Below(3000)), b(a.size()), h(a.size()), e(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      const uint64_t r = rng.Next();
      switch (c % 4) {
        case 0: a[i] = r & 0x807FFFFF; break;                      // subnormals and zeros
        case 1: a[i] = (r & 0x80FFFFFF) | (r % 3 == 0 ? 0x7F000000 : 0); break;  // extremes
        case 2: a[i] = r & 0xFFFFFFFF; break;                      // any pattern
        default: a[i] = MakeValue(Float32(), r & 1, rng.Range(-149, 127), r >> 8); break;
      }
      b[i] = rng.Next() & 0xFFFFFFFF;
      if (rng.OneIn(2)) b[i] &= 0x80FFFFFF;  // small and subnormal
      h[i] = rng.Next() & 0xFFFF;
      e[i] = rng.Next() & 0xFF;
    }
    ExpectSameAsScalar(Float32(), a, Float32(), b);
    ExpectSameAsScalar(Float32(), a, BFloat16(), h);
    ExpectSameAsScalar(Float8E4M3FN(), e, Float32(), a);
  }
}

#if defined(__x86_64__) && defined(__SSE2__)
TEST(ExactAccumulator, HostDazSetStillExact) {
  // With MXCSR.DAZ set, host doubles would read float32 subnormals as zero: the accumulator
  // must notice and take the integer path.
  const unsigned old = _mm_getcsr();
  _mm_setcsr(old | 0x0040);
  const std::vector<uint64_t> a = {0x00000001, 0x00400000}, b = {0x3F800000, 0x3F800000};
  ExactAccumulator acc = ExactDot(Float32(), a, Float32(), b);
  ExactAccumulator sum = ExactSum(BFloat16(), std::vector<uint64_t>{0x0001});
  _mm_setcsr(old);
  EXPECT_EQ(acc.Round(Float32(), OpEnv{}).bits, 0x00400001u);
  EXPECT_EQ(sum.ToHexFloat(), "0x1p-133");
}
#endif

// ---- Hand-computed rows. ----

constexpr uint64_t kF32One = 0x3F800000, kF32MinusOne = 0xBF800000;
constexpr uint64_t kF32Inf = 0x7F800000, kF32MinusInf = 0xFF800000;
constexpr uint64_t kF32Zero = 0, kF32MinusZero = 0x80000000;
constexpr uint64_t kF32QNan1 = 0x7FC00001, kF32QNan2 = 0x7FC00002, kF32SNan = 0x7F800001;

OpEnv Env(Rounding r) {
  OpEnv e;
  e.rounding = r;
  return e;
}

struct SumRow {
  const char* what;             // The class of the row.
  std::vector<uint64_t> terms;  // float32 addends.
  Rounding rounding;
  uint64_t bits;  // float32 result.
  Flags flags;
};

TEST(ExactAccumulator, SpecialAndZeroSumRows) {
  const SumRow rows[] = {
      {"empty sum is +0", {}, Rounding::kNearestEven, kF32Zero, 0},
      {"empty sum is +0 in rdn too", {}, Rounding::kDownward, kF32Zero, 0},
      {"+0 + +0 = +0", {kF32Zero, kF32Zero}, Rounding::kDownward, kF32Zero, 0},
      {"-0 + -0 = -0", {kF32MinusZero, kF32MinusZero}, Rounding::kNearestEven, kF32MinusZero, 0},
      {"-0 + -0 = -0 (rup)", {kF32MinusZero, kF32MinusZero}, Rounding::kUpward, kF32MinusZero, 0},
      {"+0 + -0 = +0 (rne)", {kF32Zero, kF32MinusZero}, Rounding::kNearestEven, kF32Zero, 0},
      {"+0 + -0 = -0 (rdn)", {kF32Zero, kF32MinusZero}, Rounding::kDownward, kF32MinusZero, 0},
      {"1 + -1 = +0 (rtz)", {kF32One, kF32MinusOne}, Rounding::kTowardZero, kF32Zero, 0},
      {"1 + -1 = +0 (rup)", {kF32One, kF32MinusOne}, Rounding::kUpward, kF32Zero, 0},
      {"1 + -1 = -0 (rdn)", {kF32One, kF32MinusOne}, Rounding::kDownward, kF32MinusZero, 0},
      {"-0 + 1 + -1 = -0 only in rdn", {kF32MinusZero, kF32One, kF32MinusOne},
       Rounding::kNearestEven, kF32Zero, 0},
      {"Inf + 1 = Inf", {kF32Inf, kF32One}, Rounding::kNearestEven, kF32Inf, 0},
      {"-Inf + -Inf = -Inf", {kF32MinusInf, kF32MinusInf}, Rounding::kNearestEven, kF32MinusInf,
       0},
      {"Inf + -Inf = NaN v", {kF32Inf, kF32One, kF32MinusInf}, Rounding::kNearestEven,
       0x7FC00000, kInvalid},
      {"first NaN propagates", {kF32One, kF32QNan2, kF32QNan1}, Rounding::kNearestEven, kF32QNan2,
       0},
      {"NaN beats Inf", {kF32Inf, kF32QNan1}, Rounding::kNearestEven, kF32QNan1, 0},
      {"NaN with Inf - Inf: NaN propagated, v", {kF32Inf, kF32MinusInf, kF32QNan1},
       Rounding::kNearestEven, kF32QNan1, kInvalid},
      {"sNaN: v, quieted", {kF32One, kF32SNan}, Rounding::kNearestEven, 0x7FC00001, kInvalid},
      {"max + max overflows (rne)", {0x7F7FFFFF, 0x7F7FFFFF}, Rounding::kNearestEven, kF32Inf,
       kOverflow | kInexact},
      {"max + max overflows to max (rtz)", {0x7F7FFFFF, 0x7F7FFFFF}, Rounding::kTowardZero,
       0x7F7FFFFF, kOverflow | kInexact},
      {"max + max - max = max exactly", {0x7F7FFFFF, 0x7F7FFFFF, 0xFF7FFFFF},
       Rounding::kNearestEven, 0x7F7FFFFF, 0},
      {"1 + 2^-24 + 2^-24 = 1 + 2^-23 exactly", {kF32One, 0x33800000, 0x33800000},
       Rounding::kNearestEven, 0x3F800001, 0},
      {"1 + 2^-24: tie to even", {kF32One, 0x33800000}, Rounding::kNearestEven, kF32One,
       kInexact},
      {"1 + 2^-24 + 2^-149: above the tie", {kF32One, 0x33800000, 0x00000001},
       Rounding::kNearestEven, 0x3F800001, kInexact},
      {"1 + 2^-24 - 2^-149: below the tie", {kF32One, 0x33800000, 0x80000001},
       Rounding::kNearestEven, kF32One, kInexact},
      {"min subnormal - min subnormal + min subnormal", {0x00000001, 0x80000001, 0x00000001},
       Rounding::kNearestEven, 0x00000001, 0},
  };
  for (const SumRow& row : rows) {
    SCOPED_TRACE(row.what);
    ExactAccumulator acc = ExactSum(Float32(), row.terms);
    const OpResult r = acc.Round(Float32(), Env(row.rounding));
    EXPECT_EQ(r.bits, row.bits) << Describe(Float32(), r.bits);
    EXPECT_EQ(r.flags, row.flags) << FlagsToString(r.flags);
    // The scalar path agrees.
    ExactAccumulator one;
    for (uint64_t t : row.terms) one.Add(Float32(), t);
    EXPECT_EQ(one.Round(Float32(), Env(row.rounding)), r);
  }
}

TEST(ExactAccumulator, ProductSpecialRows) {
  const OpEnv env;
  // Inf * 0 -> NaN v, even next to finite terms.
  {
    const std::vector<uint64_t> a = {kF32One, kF32Inf}, b = {kF32One, kF32Zero};
    const OpResult r = ExactDot(Float32(), a, Float32(), b).Round(Float32(), env);
    EXPECT_EQ(r, (OpResult{0x7FC00000, kInvalid}));
  }
  // Inf * 2 + 1 -> Inf; -Inf * -1 -> +Inf.
  {
    const std::vector<uint64_t> a = {kF32Inf, kF32One, kF32MinusInf};
    const std::vector<uint64_t> b = {0x40000000, kF32One, kF32MinusOne};
    EXPECT_EQ(ExactDot(Float32(), a, Float32(), b).Round(Float32(), env),
              (OpResult{kF32Inf, 0}));
  }
  // (-0) * 1 + 1 * (-0) = -0 in every mode; (-0)*(-1) = +0.
  {
    const std::vector<uint64_t> a = {kF32MinusZero, kF32One}, b = {kF32One, kF32MinusZero};
    ExactAccumulator acc = ExactDot(Float32(), a, Float32(), b);
    EXPECT_EQ(acc.Round(Float32(), Env(Rounding::kUpward)).bits, kF32MinusZero);
    EXPECT_EQ(acc.ToHexFloat(), "-0x0p+0");
    const std::vector<uint64_t> c = {kF32MinusZero}, d = {kF32MinusOne};
    EXPECT_EQ(ExactDot(Float32(), c, Float32(), d).Round(Float32(), Env(Rounding::kDownward)),
              (OpResult{kF32Zero, 0}));
  }
  // Inf into float8_e4m3fn (no Inf): NaN with v (the NaN keeps the sign); under sat 448.
  {
    const std::vector<uint64_t> a = {kF32MinusInf};
    ExactAccumulator acc = ExactSum(Float32(), a);
    EXPECT_EQ(acc.Round(Float8E4M3FN(), env), (OpResult{0xFF, kInvalid}));
    OpEnv sat;
    sat.saturate = true;
    EXPECT_EQ(acc.Round(Float8E4M3FN(), sat), (OpResult{0xFE, 0}));
    // An Inf operand is not an overflow: Inf stays Inf in float32 under sat.
    EXPECT_EQ(acc.Round(Float32(), sat), (OpResult{kF32MinusInf, 0}));
    EXPECT_TRUE(acc.IsInf());
    EXPECT_EQ(acc.Sign(), -1);
  }
  // NaN in b propagates when a is finite; NaN in a is preferred to NaN in b.
  {
    const std::vector<uint64_t> a = {kF32One, kF32QNan1}, b = {kF32QNan2, kF32QNan2};
    EXPECT_EQ(ExactDot(Float32(), a, Float32(), b).Round(Float32(), env).bits, kF32QNan2);
    const std::vector<uint64_t> c = {kF32QNan1}, d = {kF32QNan2};
    EXPECT_EQ(ExactDot(Float32(), c, Float32(), d).Round(Float32(), env).bits, kF32QNan1);
  }
}

TEST(ExactAccumulator, HeaderExampleAndTextRows) {
  const std::vector<uint64_t> x = {0x3F800000, 0x33800000, 0x33800000};
  ExactAccumulator acc = ExactSum(Float32(), x);
  EXPECT_EQ(acc.Round(Float32(), OpEnv{}), (OpResult{0x3F800001, 0}));
  EXPECT_EQ(acc.ToHexFloat(), "0x1.000002p+0");
  EXPECT_TRUE(acc.IsExactIn(Float32()));
  EXPECT_FALSE(acc.IsExactIn(BFloat16()));
  const std::vector<uint64_t> a = {0x3F80, 0xBF80}, b = {0x38, 0x38};
  ExactAccumulator d =
      ExactDot(BFloat16(), a, Float8E4M3FN(), b, FormatValue{&Float32(), 0});
  EXPECT_TRUE(d.IsZero());
  EXPECT_EQ(d.Round(Float32(), OpEnv{}).bits, 0u);
  EXPECT_EQ(d.Sign(), 0);

  // The smallest product the window holds: float64 min subnormal squared, negated.
  ExactAccumulator t;
  t.AddProduct(Float64(), 0x0000000000000001, Float64(), 0x8000000000000001);
  EXPECT_EQ(t.ToHexFloat(), "-0x1p-2148");
  EXPECT_EQ(t.Sign(), -1);
  // 1 + 2^-2148: one sticky bit 2148 places down decides directed roundings.
  t.Add(Float64(), 0x3FF0000000000000);
  EXPECT_EQ(t.Round(Float64(), Env(Rounding::kNearestEven)),
            (OpResult{0x3FF0000000000000, kInexact}));
  EXPECT_EQ(t.Round(Float64(), Env(Rounding::kTowardZero)),
            (OpResult{0x3FEFFFFFFFFFFFFF, kInexact}));
  EXPECT_EQ(t.Round(Float64(), Env(Rounding::kUpward)),
            (OpResult{0x3FF0000000000000, kInexact}));
  // The largest: max * max, twice, then minus once.
  ExactAccumulator big;
  big.AddProduct(Float64(), 0x7FEFFFFFFFFFFFFF, Float64(), 0x7FEFFFFFFFFFFFFF);
  big.AddProduct(Float64(), 0x7FEFFFFFFFFFFFFF, Float64(), 0x7FEFFFFFFFFFFFFF);
  big.AddProduct(Float64(), 0xFFEFFFFFFFFFFFFF, Float64(), 0x7FEFFFFFFFFFFFFF);
  big.AddProduct(Float64(), 0x7FEFFFFFFFFFFFFF, Float64(), 0x3FF0000000000000);  // + max
  big.AddProduct(Float64(), 0x0000000000000001, Float64(), 0x3FF0000000000000);  // + 2^-1074
  // (2^1024 - 2^971)^2 + max + 2^-1074: its hex-float starts 0x1.fffffffffffff...
  mpfr_t m, want, y;
  mpfr_inits2(4400, want, y, static_cast<mpfr_ptr>(nullptr));
  mpfr_init2(m, 64);
  big.ToMpfr(m);
  mpfr_set_ui_2exp(y, 1, 1024, MPFR_RNDN);
  mpfr_set_ui_2exp(want, 1, 971, MPFR_RNDN);
  mpfr_sub(y, y, want, MPFR_RNDN);  // max = 2^1024 - 2^971.
  mpfr_sqr(want, y, MPFR_RNDN);
  mpfr_add(want, want, y, MPFR_RNDN);
  mpfr_set_ui_2exp(y, 1, -1074, MPFR_RNDN);
  mpfr_add(want, want, y, MPFR_RNDN);
  EXPECT_TRUE(mpfr_equal_p(m, want));
  EXPECT_EQ(mpfr_get_prec(m), 1024 + 1024 + 1074);  // Bits from 2^2047 down to 2^-1074.
  mpfr_clears(m, want, y, static_cast<mpfr_ptr>(nullptr));
  EXPECT_EQ(big.Round(Float64(), OpEnv{}), (OpResult{0x7FF0000000000000, kOverflow | kInexact}));
}

TEST(ExactAccumulator, StochasticSatFtzThroughRoundPack) {
  // 1 + 3/4 ulp (float32): top two discarded bits 11b; sr2 rounds away iff 3 + r >= 4.
  const std::vector<uint64_t> x = {kF32One, 0x33C00000 /*1.5 * 2^-24*/};
  ExactAccumulator acc = ExactSum(Float32(), x);
  OpEnv sr;
  sr.rounding = Rounding::kStochastic;
  sr.sr_bits = 2;
  sr.sr_random = 0;
  EXPECT_EQ(acc.Round(Float32(), sr).bits, kF32One);
  sr.sr_random = 1;
  EXPECT_EQ(acc.Round(Float32(), sr).bits, 0x3F800001u);
  // ftz: a float32 subnormal sum flushes to a zero of its sign.
  const std::vector<uint64_t> s = {0x80000003, 0x00000001};
  OpEnv ftz;
  ftz.flush_to_zero = true;
  EXPECT_EQ(ExactSum(Float32(), s).Round(Float32(), ftz),
            (OpResult{kF32MinusZero, kUnderflow | kInexact}));
  // sat: an overflowing finite sum gives max finite.
  const std::vector<uint64_t> big = {0x7F7FFFFF, 0x7F7FFFFF};
  OpEnv sat;
  sat.saturate = true;
  EXPECT_EQ(ExactSum(Float32(), big).Round(Float32(), sat),
            (OpResult{0x7F7FFFFF, kOverflow | kInexact}));
  // float8_e4m3fn target: 448 + 16 = 464 ties to 448 (even); + 2^-20 overflows to NaN.
  const std::vector<uint64_t> t = {0x43E00000 /*448*/, 0x41800000 /*16*/};
  ExactAccumulator tie = ExactSum(Float32(), t);
  EXPECT_EQ(tie.Round(Float8E4M3FN(), OpEnv{}), (OpResult{0x7E, kInexact}));
  tie.Add(Float32(), 0x35800000 /*2^-20*/);
  EXPECT_EQ(tie.Round(Float8E4M3FN(), OpEnv{}), (OpResult{0x7F, kOverflow | kInexact}));
}

// sr<k> overflow of an accumulated value (op_env.h): a sum at or above max + ulp overflows for
// every r; from (max, max + ulp) exactly t of the 2^k values of r overflow.
TEST(ExactAccumulator, StochasticOverflowOfASum) {
  OpEnv sr;
  sr.rounding = Rounding::kStochastic;
  sr.sr_bits = 8;
  // 448 + 1088 = 1536 (exact at p bits, 3.4 x float8_e4m3fn's max); 65504 + 32 = 65536 = float16
  // max + ulp. A dot of the same values: 2 * 768 = 1536.
  const ExactAccumulator e4 = ExactSum(Float32(), std::vector<uint64_t>{0x43E00000, 0x44880000});
  const ExactAccumulator f16 = ExactSum(Float32(), std::vector<uint64_t>{0x477FE000, 0x42000000});
  const ExactAccumulator dot = ExactDot(Float32(), std::vector<uint64_t>{0x40000000},
                                        Float32(), std::vector<uint64_t>{0x44400000});
  // 448 + 12 = 460: fraction (460 - 448) / 32 = 0.375, top 8 bits 96.
  const ExactAccumulator mid = ExactSum(Float32(), std::vector<uint64_t>{0x43E00000, 0x41400000});
  int over = 0;
  for (uint32_t r = 0; r < 256; ++r) {
    sr.sr_random = r;
    sr.saturate = false;
    EXPECT_EQ(e4.Round(Float8E4M3FN(), sr), (OpResult{0x7F, kOverflow | kInexact})) << r;
    EXPECT_EQ(dot.Round(Float8E4M3FN(), sr), (OpResult{0x7F, kOverflow | kInexact})) << r;
    EXPECT_EQ(f16.Round(Float16(), sr), (OpResult{0x7C00, kOverflow | kInexact})) << r;
    const OpResult m = mid.Round(Float8E4M3FN(), sr);
    if (m.flags & kOverflow) {
      ++over;
      EXPECT_EQ(m, (OpResult{0x7F, kOverflow | kInexact})) << r;
    } else {
      EXPECT_EQ(m, (OpResult{0x7E, kInexact})) << r;
    }
    sr.saturate = true;
    EXPECT_EQ(e4.Round(Float8E4M3FN(), sr), (OpResult{0x7E, kOverflow | kInexact})) << r;
  }
  EXPECT_EQ(over, 96);
}

TEST(ExactAccumulator, EveryFloatFormatFitsTheWindow) {
  // The extreme products of every float format of the table, through the scalar path.
  for (const FormatSpec& f : AllFormats()) {
    if (!IsFloat(f)) continue;
    SCOPED_TRACE(std::string(f.name));
    ExactAccumulator acc;
    const uint64_t max = MaxFiniteBits(f), min = MinSubnormalBits(f);
    acc.AddProduct(f, max, f, max);
    acc.AddProduct(f, min, f, min);
    mpfr_t got, want, x;
    mpfr_inits2(4400, want, x, static_cast<mpfr_ptr>(nullptr));
    mpfr_init2(got, 64);
    acc.ToMpfr(got);
    // max^2 + min^2 from the format row.
    mpfr_set_ui_2exp(x, MaxFiniteSignificand(f), Emax(f) - f.fraction_bits, MPFR_RNDN);
    mpfr_sqr(want, x, MPFR_RNDN);
    mpfr_set_ui_2exp(x, 1, 2 * MinSubnormalExponent(f), MPFR_RNDN);
    mpfr_add(want, want, x, MPFR_RNDN);
    EXPECT_TRUE(mpfr_equal_p(got, want)) << acc.ToHexFloat();
    mpfr_clears(got, want, x, static_cast<mpfr_ptr>(nullptr));
  }
}

}  // namespace
}  // namespace fpconform
