// The MPFR reduction oracle (mpfr_dot.h) against the independent Boost.Multiprecision oracle
// (boost_oracle.h), bit for bit and flag for flag (NaNs by class), plus hand-computed rows for
// both.
//
// Random part: for each input group (float32, bfloat16, float16, float8_e4m3fn, float8_e5m2,
// and bfloat16 x float8_e4m3fn dots) kCasesPerGroup * FPCONFORM_SCALE sums and dot products
// (lengths 1..64, 2% up to 1024), each rounded into several (target, mode, sat, ftz, tininess)
// combinations cycling over every Boost-supported target and every mode (rne rna rtz rup rdn rto
// sr<k>). Case kinds: mixed random exponents, extreme spreads (alternating huge/tiny),
// subnormals, exact cancellation to zero, cancellation to a target subnormal, values built to
// lie exactly on a rounding tie of a target (x + half an ulp, max finite + half an ulp), 2^k
// copies of one value, NaN/Inf operands. The exact values of both oracles are compared as
// canonical text as well.
//
// Reproducible: case i of group g draws from SplitMix64 seeded with seed ^ (g << 40 | i); the
// seed is FPCONFORM_SEED (default below) and is printed. Two threads split the indices; the
// result does not depend on the split.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "formats/ops.h"
#include "formats/text.h"
#include "oracles/boost_oracle.h"
#include "oracles/mpfr_dot.h"

namespace fpconform {
namespace {

constexpr uint64_t kDefaultSeed = 0x0DD5EED5F00DULL;
constexpr int kCasesPerGroup = 200000;  // Times FPCONFORM_SCALE (exhaustive: 5, 10^6).
constexpr int kThreads = 2;

// FPCONFORM_SEED when set, else kDefaultSeed; read and printed once per process.
uint64_t Seed() {
  static const uint64_t seed = TestSeed(kDefaultSeed, "oracle_crosscheck_test");
  return seed;
}

double Scale() {
  const char* s = std::getenv("FPCONFORM_SCALE");
  double v = s != nullptr ? std::strtod(s, nullptr) : 1.0;
  return v > 0 ? v : 1.0;
}

// ---- Counter-based random numbers (SplitMix64). ----

class Rng {
 public:
  explicit Rng(uint64_t seed) : rng_(seed) {}
  uint64_t Next() { return rng_.Next(); }
  // Uniform in [0, n) (n <= 2^32; the bias of the multiply-shift is irrelevant here, and it is
  // the same on every machine).
  uint64_t Below(uint64_t n) { return ((Next() >> 32) * n) >> 32; }
  int Range(int lo, int hi) {
    return lo + static_cast<int>(Below(static_cast<uint64_t>(hi - lo + 1)));
  }
  bool Chance(int percent) { return Below(100) < static_cast<uint64_t>(percent); }

 private:
  PinnedRng rng_;
};

// ---- Values of a format, built from fields (test helpers, not oracles). ----

uint64_t Mask(int n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

bool IsFiniteBits(const FormatSpec& f, uint64_t bits) {
  FloatClass c = Classify(f, bits);
  return c != FloatClass::kQuietNan && c != FloatClass::kSignalingNan &&
         c != FloatClass::kPositiveInfinity && c != FloatClass::kNegativeInfinity;
}

uint64_t Negate(const FormatSpec& f, uint64_t bits) {
  return bits ^ (SignBit(f) << f.pad_bits);
}

// Bits of sign * c * 2^lo in format f, or false when not representable (c > 0).
bool EncodeExact(const FormatSpec& f, bool neg, uint64_t c, long lo, uint64_t* out) {
  if (c == 0) return false;
  const int width = 64 - __builtin_clzll(c);
  const long h = lo + width - 1;  // Exponent of the leading bit.
  const int fb = f.fraction_bits;
  uint64_t biased, frac;
  if (h < Emin(f)) {
    if (!f.has_subnormals) return false;
    const long q = Emin(f) - fb;
    if (lo < q) return false;
    biased = 0;
    frac = c << (lo - q);
  } else {
    if (h - lo > fb) return false;  // More than p bits.
    biased = static_cast<uint64_t>(h + f.bias);
    if (biased > static_cast<uint64_t>(Emax(f) + f.bias)) return false;
    frac = (c << (fb - (h - lo))) & Mask(fb);
  }
  uint64_t bits = ((biased << fb) | frac | (neg ? SignBit(f) : 0)) << f.pad_bits;
  if (!IsFiniteBits(f, bits)) return false;
  if (!neg && bits > MaxFiniteBits(f)) return false;
  *out = bits;
  return true;
}

// A random finite value with unbiased exponent near `center` (+- spread), random sign and
// fraction (sometimes only a few top fraction bits); subnormal where the exponent falls below.
uint64_t RandomNear(const FormatSpec& f, Rng& r, int center, int spread) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    const int e = center + (spread > 0 ? r.Range(-spread, spread) : 0);
    const int fb = f.fraction_bits;
    uint64_t sig = (r.Next() & Mask(fb)) | (uint64_t{1} << fb);
    if (r.Chance(30)) {  // Few significant bits: tie-prone.
      const int keep = r.Range(0, fb);
      sig &= ~Mask(fb - keep);
    }
    const int lo = e - fb;
    uint64_t bits;
    // Below the normal range: truncate to the subnormal quantum.
    long q = lo;
    uint64_t c = sig;
    const long qmin = MinSubnormalExponent(f);
    if (q < qmin) {
      const long shift = qmin - q;
      c = shift >= 64 ? 0 : c >> shift;
      q = qmin;
    }
    if (c == 0) continue;
    if (EncodeExact(f, r.Chance(50), c, q, &bits)) return bits;
  }
  return OneBits(f);
}

int MinExp(const FormatSpec& f) { return static_cast<int>(MinSubnormalExponent(f)); }

uint64_t RandomFinite(const FormatSpec& f, Rng& r) {
  return RandomNear(f, r, r.Range(MinExp(f), Emax(f)), 0);
}

uint64_t RandomSpecial(const FormatSpec& f, Rng& r) {
  // Any pattern, biased toward the top exponent (NaN / Inf / max finite) and zeros.
  const uint64_t enc_mask = Mask(EncodingBits(f));
  uint64_t bits = r.Next() & enc_mask;
  switch (r.Below(4)) {
    case 0: bits |= (Mask(f.exponent_bits) << f.fraction_bits); break;   // Exponent all ones.
    case 1: bits &= SignBit(f); break;                                    // +-0.
    default: break;
  }
  return bits << f.pad_bits;
}

// ---- Targets and environments. ----

struct Combo {
  const FormatSpec* to;
  OpEnv env;
};

std::vector<const FormatSpec*> BoostTargets() {
  std::vector<const FormatSpec*> out;
  for (const FormatSpec& f : AllFormats()) {
    if (BoostSupports(f)) out.push_back(&f);
  }
  return out;
}

OpEnv RandomEnv(Rng& r, uint64_t cycle) {
  OpEnv env;
  static constexpr Rounding kModes[] = {Rounding::kNearestEven, Rounding::kNearestAway,
                                        Rounding::kTowardZero,  Rounding::kUpward,
                                        Rounding::kDownward,    Rounding::kToOdd,
                                        Rounding::kStochastic};
  env.rounding = kModes[cycle % 7];
  if (env.rounding == Rounding::kStochastic) {
    env.sr_bits = r.Range(1, 32);
    env.sr_random = r.Next();
  }
  env.saturate = r.Chance(40);
  env.flush_to_zero = r.Chance(12);
  if (r.Chance(12)) env.tininess = Tininess::kBeforeRounding;
  return env;
}

// ---- Cases. ----

struct Group {
  const char* name;
  const FormatSpec* fa;
  const FormatSpec* fb;  // Dot second operand format.
  bool dots_only;
};

struct Case {
  bool dot = false;
  std::vector<uint64_t> a, b;
  const FormatSpec* fc = nullptr;
  uint64_t c = 0;
  bool daz = false;
  const char* kind = "";
  const FormatSpec* tie_target = nullptr;  // Built to lie on a rounding tie of this target.
  bool specials = false;
  std::vector<Combo> combos;
};

// Appends terms whose exact sum is s * m * 2^e (m < 2^64): chunks of the input precision, each
// an input value (sum) or an input value times a power of two of fb (dot).
bool AppendExact(const Group& g, bool dot, bool neg, uint64_t m, long e, Rng& r, Case& cs) {
  const FormatSpec& fa = *g.fa;
  const int pa = Precision(fa);
  while (m != 0) {
    const int width = 64 - __builtin_clzll(m);
    const long h = e + width - 1;
    long lo = std::max<long>(h - pa + 1, e);
    long scale = 0;  // Dot: b = 2^scale, a = chunk * 2^(lo - scale).
    if (dot) {
      // a's exponents must fit fa: lsb >= MinSub(fa), msb <= Emax(fa) - 1 (room below max).
      const long smin = std::max<long>(h - (Emax(fa) - 1), MinExp(*g.fb));
      const long smax = std::min<long>(lo - MinExp(fa), Emax(*g.fb));
      if (smin > smax) return false;
      scale = smin + static_cast<long>(r.Below(static_cast<uint64_t>(smax - smin + 1)));
    }
    // Chunks that fall in fa's subnormal range need their LSB at or above its quantum.
    const long qmin = MinExp(fa) + scale;
    if (lo < qmin) lo = qmin;
    if (lo > h) return false;
    const long shift = lo - e;
    const uint64_t chunk = shift >= 64 ? 0 : m >> shift;
    if (chunk == 0) return false;
    uint64_t abits, bbits = 0;
    if (!EncodeExact(fa, neg, chunk, lo - scale, &abits)) return false;
    if (dot && !EncodeExact(*g.fb, false, 1, scale, &bbits)) return false;
    cs.a.push_back(abits);
    if (dot) cs.b.push_back(bbits);
    m -= chunk << shift;
  }
  return true;
}

// Adds pairs (y, -y) that cancel exactly, with random exponents, then shuffles.
void AddNoisePairs(const Group& g, bool dot, int pairs, Rng& r, Case& cs) {
  for (int i = 0; i < pairs; ++i) {
    uint64_t y = RandomFinite(*g.fa, r);
    uint64_t z = dot ? RandomFinite(*g.fb, r) : 0;
    cs.a.push_back(y);
    cs.a.push_back(Negate(*g.fa, y));
    if (dot) {
      cs.b.push_back(z);
      cs.b.push_back(z);
    }
  }
}

void Shuffle(Rng& r, Case& cs) {
  for (size_t i = cs.a.size(); i > 1; --i) {
    const size_t j = r.Below(i);
    std::swap(cs.a[i - 1], cs.a[j]);
    if (!cs.b.empty()) std::swap(cs.b[i - 1], cs.b[j]);
  }
}

// Value of a positive finite encoding of T as sig * 2^e.
void ValueOfIndex(const FormatSpec& t, uint64_t index, uint64_t* sig, long* e) {
  const int fb = t.fraction_bits;
  const uint64_t biased = index >> fb, frac = index & Mask(fb);
  if (biased == 0 && t.has_subnormals) {
    *sig = frac;
    *e = Emin(t) - fb;
  } else {
    *sig = frac | (uint64_t{1} << fb);
    *e = static_cast<long>(biased) - t.bias - fb;
  }
}

// x + half an ulp of T (x a random value of T, or max finite: the overflow tie), as a sum.
bool MakeTie(const Group& g, bool dot, const FormatSpec& t, Rng& r, Case& cs) {
  const uint64_t max_index = MaxFiniteBits(t) >> t.pad_bits;
  for (int attempt = 0; attempt < 8; ++attempt) {
    uint64_t index;
    if (r.Chance(15)) {
      index = max_index;
    } else {
      // Exponent window that the input format (or its products) can reach.
      const int in_lo = dot ? MinExp(*g.fa) + MinExp(*g.fb) : MinExp(*g.fa);
      const int in_hi = dot ? Emax(*g.fa) + Emax(*g.fb) - 2 : Emax(*g.fa) - 1;
      const int lo = std::max(in_lo + Precision(t) + 1, MinExp(t));
      const int hi = std::min(in_hi, Emax(t));
      if (lo > hi) return false;
      const int ex = r.Range(lo, hi);
      const long biased = std::max<long>(ex + t.bias, 0);
      index = (static_cast<uint64_t>(biased) << t.fraction_bits) |
              (r.Next() & Mask(t.fraction_bits));
      if (r.Chance(30)) index &= ~Mask(r.Range(0, t.fraction_bits));
      if (index == 0 || index > max_index) continue;
    }
    uint64_t sig;
    long e;
    ValueOfIndex(t, index, &sig, &e);
    const bool neg = r.Chance(50);
    Case trial;
    trial.dot = dot;
    // x + ulp/2 = (2 sig + 1) * 2^(e - 1).
    if (!AppendExact(g, dot, neg, 2 * sig + 1, e - 1, r, trial)) continue;
    cs.a.insert(cs.a.end(), trial.a.begin(), trial.a.end());
    cs.b.insert(cs.b.end(), trial.b.begin(), trial.b.end());
    return true;
  }
  return false;
}

Case MakeCase(const Group& g, uint64_t seed, uint64_t group_index, uint64_t i,
              const std::vector<const FormatSpec*>& targets) {
  Rng r(SplitMix64At(seed ^ (group_index << 40 | i), 0));
  Case cs;
  cs.dot = g.dots_only || r.Chance(50);
  const FormatSpec& fa = *g.fa;
  const FormatSpec& fb = *g.fb;
  int n = r.Chance(2) ? r.Range(65, 1024) : r.Range(1, 64);
  const bool specials = r.Chance(6);
  const uint64_t kind = r.Below(100);
  const FormatSpec* tie_target = nullptr;
  auto push_random = [&](int center, int spread) {
    cs.a.push_back(RandomNear(fa, r, center, spread));
    if (cs.dot) cs.b.push_back(RandomNear(fb, r, r.Range(-2, 2), 2));
  };
  if (kind < 35) {  // Random: clustered exponents (cancellation-rich) or full range.
    cs.kind = "random";
    const int spread = static_cast<int>(r.Below(4)) == 0 ? 40 : r.Range(0, 6);
    const int center = r.Chance(50) ? r.Range(MinExp(fa), Emax(fa)) : r.Range(-12, 12);
    for (int k = 0; k < n; ++k) {
      if (r.Chance(3)) {
        cs.a.push_back(RandomFinite(fa, r));
        if (cs.dot) cs.b.push_back(RandomFinite(fb, r));
      } else {
        push_random(center, spread);
      }
    }
  } else if (kind < 45) {  // Alternating huge / tiny.
    cs.kind = "spread";
    for (int k = 0; k < n; ++k) {
      const bool huge = (k & 1) == 0;
      const int ea = huge ? Emax(fa) - r.Range(0, 2) : MinExp(fa) + r.Range(0, 3);
      cs.a.push_back(RandomNear(fa, r, ea, 0));
      if (cs.dot) {
        const int eb = huge ? Emax(fb) - r.Range(0, 2) : MinExp(fb) + r.Range(0, 3);
        cs.b.push_back(RandomNear(fb, r, eb, 0));
      }
    }
  } else if (kind < 55) {  // Subnormal inputs.
    cs.kind = "subnormal";
    for (int k = 0; k < n; ++k) {
      push_random(Emin(fa) - r.Range(0, fa.fraction_bits), 0);
      if (cs.dot && r.Chance(50)) {
        cs.b.back() = RandomNear(fb, r, Emin(fb) - r.Range(-1, fb.fraction_bits), 0);
      }
    }
  } else if (kind < 65) {  // Exact cancellation, optionally leaving a target-subnormal remainder.
    cs.kind = "cancel";
    AddNoisePairs(g, cs.dot, std::max(1, n / 2), r, cs);
    if (r.Chance(60)) {
      cs.kind = "cancel-to-subnormal";
      const FormatSpec& t = *targets[r.Below(targets.size())];
      const int ex = r.Range(MinExp(t), Emin(t) - 1);
      uint64_t m = r.Next() & Mask(std::max(1, Emin(t) - ex));
      if (m == 0) m = 1;
      AppendExact(g, cs.dot, r.Chance(50), m, ex, r, cs);  // Skipped where unreachable.
    }
    Shuffle(r, cs);
  } else if (kind < 80) {  // A rounding tie of some target, hidden among cancelling pairs.
    cs.kind = "tie";
    const FormatSpec& t = *targets[r.Below(targets.size())];
    if (MakeTie(g, cs.dot, t, r, cs)) tie_target = &t;
    AddNoisePairs(g, cs.dot, r.Range(0, 8), r, cs);
    Shuffle(r, cs);
    if (cs.a.empty()) push_random(0, 3);
  } else if (kind < 88) {  // Just below 2^Emin or just above max finite of some target.
    cs.kind = "near-boundary";
    const FormatSpec& t = *targets[r.Below(targets.size())];
    const int p = Precision(t);
    const int j = r.Range(0, 4);
    bool built;
    if (r.Chance(50)) {  // (2^(p+j) - 1 - k) * 2^(Emin - p - j): j = 1, k = 0 is the p-bit tie.
      const uint64_t k = r.Chance(50) ? 0 : r.Below(uint64_t{1} << j);
      built = AppendExact(g, cs.dot, r.Chance(50), (uint64_t{1} << (p + j)) - 1 - k,
                          Emin(t) - p - j, r, cs);
    } else {  // (sig_max * 2^j + k) * 2^(e_max - j), k in 0 .. 2^(j+1).
      uint64_t sig;
      long e;
      ValueOfIndex(t, MaxFiniteBits(t) >> t.pad_bits, &sig, &e);
      const uint64_t k = r.Below((uint64_t{1} << (j + 1)) + 1);
      built = AppendExact(g, cs.dot, r.Chance(50), (sig << j) + k, e - j, r, cs);
    }
    if (built) tie_target = &t;  // Rounded into t first (not necessarily a tie).
    AddNoisePairs(g, cs.dot, r.Range(0, 4), r, cs);
    Shuffle(r, cs);
    if (cs.a.empty()) push_random(0, 3);
  } else if (kind < 94) {  // 2^k copies of one value (plus maybe one more term).
    cs.kind = "copies";
    const int k = r.Range(0, 10);
    const uint64_t x = RandomFinite(fa, r), y = cs.dot ? RandomFinite(fb, r) : 0;
    for (int j = 0; j < (1 << k); ++j) {
      cs.a.push_back(x);
      if (cs.dot) cs.b.push_back(y);
    }
    if (r.Chance(50)) push_random(r.Range(MinExp(fa), Emax(fa)), 2);
  } else {  // Full-range random values.
    cs.kind = "full-range";
    for (int k = 0; k < n; ++k) {
      cs.a.push_back(RandomFinite(fa, r));
      if (cs.dot) cs.b.push_back(RandomFinite(fb, r));
    }
  }
  if (specials) {
    const int count = r.Range(1, 3);
    for (int k = 0; k < count; ++k) {
      const size_t at = r.Below(cs.a.size());
      if (cs.dot && r.Chance(50)) {
        cs.b[at] = RandomSpecial(fb, r);
      } else {
        cs.a[at] = RandomSpecial(fa, r);
      }
    }
  }
  if (cs.dot && r.Chance(25) && tie_target == nullptr) {
    cs.fc = r.Chance(50) ? &Float32() : &fa;
    cs.c = r.Chance(80) ? RandomFinite(*cs.fc, r) : RandomSpecial(*cs.fc, r);
  }
  cs.daz = r.Chance(4);
  cs.tie_target = tie_target;
  cs.specials = specials;
  // Roundings: the tie target in a random mode, then a cycle over targets x modes.
  const int combos = 3;
  if (tie_target != nullptr) {
    cs.combos.push_back({tie_target, RandomEnv(r, r.Below(7))});
  }
  for (int k = 0; k < combos; ++k) {
    const uint64_t cycle = i * combos + static_cast<uint64_t>(k);
    const FormatSpec* t = targets[(cycle / 7) % targets.size()];
    cs.combos.push_back({t, RandomEnv(r, cycle)});
  }
  for (Combo& c : cs.combos) c.env.denormals_are_zero = cs.daz;
  return cs;
}

bool SameResult(const FormatSpec& to, const OpResult& x, const OpResult& y) {
  if (x.flags != y.flags) return false;
  const bool nx = IsNanBits(to, x.bits), ny = IsNanBits(to, y.bits);
  if (nx || ny) return nx && ny;
  return x.bits == y.bits;
}

std::string Hex(const std::vector<uint64_t>& v, size_t limit = 12) {
  std::string s;
  char buf[24];
  for (size_t i = 0; i < v.size() && i < limit; ++i) {
    std::snprintf(buf, sizeof buf, "%s0x%llx", i ? " " : "", static_cast<unsigned long long>(v[i]));
    s += buf;
  }
  if (v.size() > limit) s += " ...(" + std::to_string(v.size()) + ")";
  return s;
}

std::string EnvText(const OpEnv& env) {
  std::string s = RoundingName(env);
  if (env.rounding == Rounding::kStochastic) {
    s += "(r=" + std::to_string(env.sr_random & Mask(env.sr_bits)) + ")";
  }
  if (env.saturate) s += " sat";
  if (env.flush_to_zero) s += " ftz";
  if (env.denormals_are_zero) s += " daz";
  if (env.tininess == Tininess::kBeforeRounding) s += " tiny-before";
  return s;
}

// True when the exact value x (finite, non-zero) lies exactly halfway between its two
// neighbours in `to` (both finite): 2x == rtz(x) + away(x). Uses the MPFR oracle's own results.
bool IsTie(const FormatSpec& to, const MpfrExact& x, bool* checked) {
  *checked = false;
  if (x.kind() != MpfrExact::Kind::kFinite) return false;
  OpEnv toward, away;
  toward.rounding = Rounding::kTowardZero;
  away.rounding = x.negative() ? Rounding::kDownward : Rounding::kUpward;
  const OpResult lo = MpfrRoundExact(to, x, toward), hi = MpfrRoundExact(to, x, away);
  if ((lo.flags | hi.flags) & kOverflow) return false;  // The max-finite tie: not checked here.
  mpfr_t l, h, sum, twice;
  mpfr_inits2(128, l, h, sum, twice, static_cast<mpfr_ptr>(nullptr));
  bool neg, sig;
  MpfrDotDecode(to, lo.bits, false, l, &neg, &sig);
  MpfrDotDecode(to, hi.bits, false, h, &neg, &sig);
  mpfr_add(sum, l, h, MPFR_RNDN);  // Exact: two adjacent values of a <= 53-bit format.
  mpfr_set_prec(twice, mpfr_get_prec(x.value()));
  mpfr_mul_2ui(twice, x.value(), 1, MPFR_RNDN);
  const bool tie = mpfr_equal_p(sum, twice) != 0;
  mpfr_clears(l, h, sum, twice, static_cast<mpfr_ptr>(nullptr));
  *checked = true;
  return tie;
}

struct Stats {
  std::atomic<uint64_t> verified_ties{0};
  std::atomic<uint64_t> cases{0}, roundings{0}, failures{0};
  std::atomic<uint64_t> ties{0}, zero{0}, nan{0}, overflow{0}, underflow{0}, inexact{0};
  std::mutex mu;
  std::vector<std::string> messages;
};

void RunGroup(const Group& g, uint64_t group_index, uint64_t count, Stats& st) {
  const uint64_t seed = Seed();
  const std::vector<const FormatSpec*> targets = BoostTargets();
  auto worker = [&](int t) {
    MpfrExact me;
    BoostExact be;
    for (uint64_t i = static_cast<uint64_t>(t); i < count; i += kThreads) {
      Case cs = MakeCase(g, seed, group_index, i, targets);
      OpEnv env;
      env.denormals_are_zero = cs.daz;
      if (cs.dot) {
        MpfrExactDot(*g.fa, cs.a, *g.fb, cs.b, cs.fc, cs.c, env, me);
        BoostExactDot(*g.fa, cs.a, *g.fb, cs.b, cs.fc, cs.c, env, be);
      } else {
        MpfrExactSum(*g.fa, cs.a, env, me);
        BoostExactSum(*g.fa, cs.a, env, be);
      }
      std::string mt = me.ToText(), bt = be.ToText();
      const bool exact_ok = mt == bt && me.flags() == be.flags() &&
                            me.zero_sign_fixed() == be.zero_sign_fixed();
      if (me.kind() == MpfrExact::Kind::kZero) ++st.zero;
      if (me.kind() == MpfrExact::Kind::kNaN) ++st.nan;
      std::string fail;
      if (cs.tie_target != nullptr) {
        ++st.ties;
        bool checked = false;
        const bool tie = IsTie(*cs.tie_target, me, &checked);
        if (checked && tie) ++st.verified_ties;
        if (checked && !tie && !cs.daz && !cs.specials && std::string(cs.kind) == "tie") {
          fail += "  built to be a tie of " + std::string(cs.tie_target->name) + " but is not\n";
        }
      }
      if (!exact_ok) fail += "  exact: mpfr " + mt + " boost " + bt + "\n";
      for (const Combo& c : cs.combos) {
        const OpResult m = MpfrRoundExact(*c.to, me, c.env);
        const OpResult b = BoostRoundExact(*c.to, be, c.env);
        ++st.roundings;
        if (m.flags & kOverflow) ++st.overflow;
        if (m.flags & kUnderflow) ++st.underflow;
        if (m.flags & kInexact) ++st.inexact;
        if (!SameResult(*c.to, m, b)) {
          fail += "  -> " + std::string(c.to->name) + " " + EnvText(c.env) + ": mpfr " +
                  Describe(*c.to, m.bits) + " " + FlagsToString(m.flags) + ", boost " +
                  Describe(*c.to, b.bits) + " " + FlagsToString(b.flags) + "\n";
        }
      }
      ++st.cases;
      if (!fail.empty()) {
        ++st.failures;
        std::lock_guard<std::mutex> lock(st.mu);
        if (st.messages.size() < 12) {
          char head[256];
          std::snprintf(head, sizeof head, "seed 0x%llx group %s case %llu (%s, %s, n=%zu)\n",
                        static_cast<unsigned long long>(seed), g.name,
                        static_cast<unsigned long long>(i), cs.kind, cs.dot ? "dot" : "sum",
                        cs.a.size());
          std::string msg = head;
          msg += "  a: " + Hex(cs.a) + "\n";
          if (cs.dot) msg += "  b: " + Hex(cs.b) + "\n";
          if (cs.fc) msg += "  c: " + std::string(cs.fc->name) + " " + Hex({cs.c}) + "\n";
          msg += "  exact " + mt + "\n" + fail;
          st.messages.push_back(msg);
        }
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) pool.emplace_back(worker, t);
  for (std::thread& th : pool) th.join();
}

class CrossCheck : public ::testing::TestWithParam<int> {};

const Group kGroups[] = {
    {"float32", &Float32(), &Float32(), false},
    {"bfloat16", &BFloat16(), &BFloat16(), false},
    {"float16", &Float16(), &Float16(), false},
    {"float8_e4m3fn", &Float8E4M3FN(), &Float8E4M3FN(), false},
    {"float8_e5m2", &Float8E5M2(), &Float8E5M2(), false},
    {"bfloat16_x_float8_e4m3fn", &BFloat16(), &Float8E4M3FN(), true},
};

TEST_P(CrossCheck, MpfrAgreesWithBoost) {
  const Group& g = kGroups[GetParam()];
  const uint64_t count = static_cast<uint64_t>(kCasesPerGroup * Scale());
  Stats st;
  const auto start = std::chrono::steady_clock::now();
  RunGroup(g, static_cast<uint64_t>(GetParam()), count, st);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "[%s] seed 0x%llx: %llu cases (%llu targeted at a tie or boundary, %llu verified ties, "
      "%llu exact zeros, %llu NaN), %llu "
      "roundings (o %llu, u %llu, x %llu), %llu failing cases, %.1f s on %d threads\n",
      g.name, static_cast<unsigned long long>(Seed()),
      static_cast<unsigned long long>(st.cases.load()),
      static_cast<unsigned long long>(st.ties.load()),
      static_cast<unsigned long long>(st.verified_ties.load()),
      static_cast<unsigned long long>(st.zero.load()),
      static_cast<unsigned long long>(st.nan.load()),
      static_cast<unsigned long long>(st.roundings.load()),
      static_cast<unsigned long long>(st.overflow.load()),
      static_cast<unsigned long long>(st.underflow.load()),
      static_cast<unsigned long long>(st.inexact.load()),
      static_cast<unsigned long long>(st.failures.load()), secs, kThreads);
  for (const std::string& m : st.messages) ADD_FAILURE() << m;
  EXPECT_EQ(st.failures.load(), 0u);
  EXPECT_EQ(st.cases.load(), count);
}

INSTANTIATE_TEST_SUITE_P(Groups, CrossCheck, ::testing::Range(0, 6),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return std::string(kGroups[param.param].name);
                         });

// ---- Hand-computed rows, checked against both oracles. ----

struct Row {
  const char* what;
  const FormatSpec* fa;
  std::vector<uint64_t> a;
  const FormatSpec* fb;  // nullptr: a sum of a.
  std::vector<uint64_t> b;
  const FormatSpec* to;
  const char* mode;
  bool sat;
  uint64_t bits;  // Expected (any NaN when nan).
  Flags flags;
  bool nan = false;
  bool ftz = false;
  bool tiny_before = false;
  uint64_t sr_random = 0;
};

std::vector<Row> Rows() {
  const FormatSpec* f32 = &Float32();
  const FormatSpec* e4 = &Float8E4M3FN();
  const Flags x = kInexact, ox = kOverflow | kInexact, ux = kUnderflow | kInexact, v = kInvalid;
  return {
      // float8_e4m3fn: 448 + 16 = 464, the tie between 448 (0x7e, even) and 480 (odd, beyond).
      {"e4m3fn 448+16 rne", e4, {0x7E, 0x58}, nullptr, {}, e4, "rne", false, 0x7E, x},
      {"e4m3fn 448+16 rna (tie away -> 480 -> overflow)", e4, {0x7E, 0x58}, nullptr, {}, e4, "rna", false, 0, ox, true},
      {"e4m3fn 448+32 = 480 overflows to NaN", e4, {0x7E, 0x60}, nullptr, {}, e4, "rne", false, 0, ox, true},
      {"e4m3fn 448+32 sat -> 448", e4, {0x7E, 0x60}, nullptr, {}, e4, "rne", true, 0x7E, ox},
      {"e4m3fn 448+32 rtz -> max finite", e4, {0x7E, 0x60}, nullptr, {}, e4, "rtz", false, 0x7E, ox},
      {"e4m3fn 448+8 rto: 456 -> 480 beyond max -> max, o x", e4, {0x7E, 0x50}, nullptr, {}, e4, "rto", false, 0x7E, ox},
      // [1, 2^-24] . [1, 1] into float32: 1 + half an ulp.
      {"f32 dot 1+2^-24 rne", f32, {0x3F800000, 0x33800000}, f32, {0x3F800000, 0x3F800000}, f32, "rne", false, 0x3F800000, x},
      {"f32 dot 1+2^-24 rup", f32, {0x3F800000, 0x33800000}, f32, {0x3F800000, 0x3F800000}, f32, "rup", false, 0x3F800001, x},
      {"f32 dot 1+2^-24 rna", f32, {0x3F800000, 0x33800000}, f32, {0x3F800000, 0x3F800000}, f32, "rna", false, 0x3F800001, x},
      {"f32 dot 1+2^-24 rto", f32, {0x3F800000, 0x33800000}, f32, {0x3F800000, 0x3F800000}, f32, "rto", false, 0x3F800001, x},
      {"f32 dot 1+2^-24 sr1 r=0 (1 + 0 < 2: down)", f32, {0x3F800000, 0x33800000}, f32, {0x3F800000, 0x3F800000}, f32, "sr1", false, 0x3F800000, x, false, false, false, 0},
      {"f32 dot 1+2^-24 sr1 r=1 (1 + 1 >= 2: up)", f32, {0x3F800000, 0x33800000}, f32, {0x3F800000, 0x3F800000}, f32, "sr1", false, 0x3F800001, x, false, false, false, 1},
      {"f32 dot 1+2^-24 sr2 r=1 (2 + 1 < 4: down)", f32, {0x3F800000, 0x33800000}, f32, {0x3F800000, 0x3F800000}, f32, "sr2", false, 0x3F800000, x, false, false, false, 1},
      {"f32 dot 1+2^-24 sr2 r=2 (2 + 2 >= 4: up)", f32, {0x3F800000, 0x33800000}, f32, {0x3F800000, 0x3F800000}, f32, "sr2", false, 0x3F800001, x, false, false, false, 2},
      // 2^-149 * 0.5 = 2^-150: the tie between 0 and the smallest subnormal.
      {"f32 2^-149*0.5 rne -> +0", f32, {0x00000001}, f32, {0x3F000000}, f32, "rne", false, 0x00000000, ux},
      {"f32 -2^-149*0.5 rne -> -0", f32, {0x80000001}, f32, {0x3F000000}, f32, "rne", false, 0x80000000, ux},
      {"f32 2^-149*0.5 rna -> 2^-149", f32, {0x00000001}, f32, {0x3F000000}, f32, "rna", false, 0x00000001, ux},
      {"f32 2^-149*0.5 rup -> 2^-149", f32, {0x00000001}, f32, {0x3F000000}, f32, "rup", false, 0x00000001, ux},
      {"f32 2^-149*0.5 rto -> 2^-149", f32, {0x00000001}, f32, {0x3F000000}, f32, "rto", false, 0x00000001, ux},
      {"f32 3*2^-150 rne tie -> 2^-148 (even)", f32, {0x00000003}, f32, {0x3F000000}, f32, "rne", false, 0x00000002, ux},
      // Exact zeros (IEEE 754-2019 §6.3).
      {"x + -x = +0", f32, {0x3F800000, 0xBF800000}, nullptr, {}, f32, "rne", false, 0x00000000, 0},
      {"x + -x = -0 under rdn", f32, {0x3F800000, 0xBF800000}, nullptr, {}, f32, "rdn", false, 0x80000000, 0},
      {"-0 + -0 = -0", f32, {0x80000000, 0x80000000}, nullptr, {}, f32, "rne", false, 0x80000000, 0},
      {"+0 + -0 = +0", f32, {0x00000000, 0x80000000}, nullptr, {}, f32, "rup", false, 0x00000000, 0},
      {"+0 + -0 = -0 under rdn", f32, {0x00000000, 0x80000000}, nullptr, {}, f32, "rdn", false, 0x80000000, 0},
      {"dot -1*0 + -0*1 = -0", f32, {0xBF800000, 0x80000000}, f32, {0x00000000, 0x3F800000}, f32, "rne", false, 0x80000000, 0},
      {"fnuz: x + -x under rdn is +0", &Float8E4M3FNUZ(), {0x40, 0xC0}, nullptr, {}, &Float8E4M3FNUZ(), "rdn", false, 0x00, 0},
      // Special values.
      {"+Inf + -Inf -> NaN v", f32, {0x7F800000, 0xFF800000}, nullptr, {}, f32, "rne", false, 0, v, true},
      {"Inf * 0 -> NaN v", f32, {0x7F800000}, f32, {0x00000000}, f32, "rne", false, 0, v, true},
      {"Inf + 1 -> Inf", f32, {0x7F800000, 0x3F800000}, nullptr, {}, f32, "rne", false, 0x7F800000, 0},
      {"qNaN + 1 -> NaN", f32, {0x7FC00000, 0x3F800000}, nullptr, {}, f32, "rne", false, 0, 0, true},
      {"sNaN + 1 -> NaN v", f32, {0x7F800001, 0x3F800000}, nullptr, {}, f32, "rne", false, 0, v, true},
      {"e5m2 +Inf into e4m3fn -> NaN v", &Float8E5M2(), {0x7C}, nullptr, {}, e4, "rne", false, 0, v, true},
      {"e5m2 +Inf into e4m3fn sat -> 448", &Float8E5M2(), {0x7C}, nullptr, {}, e4, "rne", true, 0x7E, 0},
      {"e5m2 -Inf into float16 sat stays -Inf", &Float8E5M2(), {0xFC}, nullptr, {}, &Float16(), "rne", true, 0xFC00, 0},
      // Overflow by mode.
      {"max + max rne -> Inf", f32, {0x7F7FFFFF, 0x7F7FFFFF}, nullptr, {}, f32, "rne", false, 0x7F800000, ox},
      {"max + max rdn -> max", f32, {0x7F7FFFFF, 0x7F7FFFFF}, nullptr, {}, f32, "rdn", false, 0x7F7FFFFF, ox},
      {"-max - max rdn -> -Inf", f32, {0xFF7FFFFF, 0xFF7FFFFF}, nullptr, {}, f32, "rdn", false, 0xFF800000, ox},
      {"max + max sat -> max", f32, {0x7F7FFFFF, 0x7F7FFFFF}, nullptr, {}, f32, "rup", true, 0x7F7FFFFF, ox},
      // Subnormals, ftz, tininess.
      {"1 - 1 + 2^-140: exact subnormal, no flags", f32, {0x3F800000, 0xBF800000, 0x00000200}, nullptr, {}, f32, "rne", false, 0x00000200, 0},
      {"ftz: exact subnormal flushed with u x", f32, {0x00400000}, nullptr, {}, f32, "rne", false, 0x00000000, ux, false, true},
      {"2^-126 into float16 underflows to +0, u x", f32, {0x00800000}, f32, {0x3F800000}, &Float16(), "rne", false, 0x0000, ux},
      {"f32 2^-126 - 2^-151 (dot) -> min normal, x only (p-bit tie rounds up: not tiny after)", f32, {0x00800000, 0x80000001}, f32, {0x3F800000, 0x3E800000}, f32, "rne", false, 0x00800000, x},
      {"f32 2^-126 - 2^-150 (dot): exact at p bits, tiny after -> 2^-126 with u x", f32, {0x00800000, 0x80000001}, f32, {0x3F800000, 0x3F000000}, f32, "rne", false, 0x00800000, ux},
      {"2^-126 - 2^-151, tininess before rounding: u x", f32, {0x00800000, 0x80000001}, f32, {0x3F800000, 0x3E800000}, f32, "rne", false, 0x00800000, ux, false, false, true},
      // Mixed formats: bfloat16 x float8_e4m3fn, 1 + 2^-8 is a bfloat16 tie.
      {"bf16 x e4m3fn 1+2^-8 rne -> 1", &BFloat16(), {0x3F80, 0x3B80}, e4, {0x38, 0x38}, &BFloat16(), "rne", false, 0x3F80, x},
      {"bf16 x e4m3fn 1+2^-8 rup -> 1+2^-7", &BFloat16(), {0x3F80, 0x3B80}, e4, {0x38, 0x38}, &BFloat16(), "rup", false, 0x3F81, x},
      {"bf16 x e4m3fn 1+3*2^-8 rne -> 1+2^-6 (even)", &BFloat16(), {0x3F80, 0x3C40}, e4, {0x38, 0x38}, &BFloat16(), "rne", false, 0x3F82, x},
      // float8_e8m0fnu (MPFR only).
      {"e8m0: 1 + 0.5 = 1.5 rne -> 2 (p = 1 ties away)", &Float32(), {0x3F800000, 0x3F000000}, nullptr, {}, &Float8E8M0FNU(), "rne", false, 0x80, x},
      {"e8m0: exact 4", &Float32(), {0x40800000}, nullptr, {}, &Float8E8M0FNU(), "rne", false, 0x81, 0},
      {"e8m0: negative -> NaN v", &Float32(), {0xBF800000}, nullptr, {}, &Float8E8M0FNU(), "rne", false, 0, v, true},
      {"e8m0: zero -> NaN v", &Float32(), {0x3F800000, 0xBF800000}, nullptr, {}, &Float8E8M0FNU(), "rne", false, 0, v, true},
      {"e8m0: 0.75*2^-127 rne -> 2^-127, x", &Float32(), {0x00300000}, nullptr, {}, &Float8E8M0FNU(), "rne", false, 0x00, x},
      {"e8m0: 0.75*2^-127 tininess before -> u x", &Float32(), {0x00300000}, nullptr, {}, &Float8E8M0FNU(), "rne", false, 0x00, ux, false, false, true},
      {"e8m0: 0.75*2^-127 rtz -> 2^-127, u x", &Float32(), {0x00300000}, nullptr, {}, &Float8E8M0FNU(), "rtz", false, 0x00, ux},
      // 2^10 copies of 1.0 in float16 = 1024, exact in float8_e5m2.
      {"1024 copies of 1.0", &Float16(), std::vector<uint64_t>(1024, 0x3C00), nullptr, {}, &Float8E5M2(), "rne", false, 0x64, 0},
  };
}

TEST(OracleRows, HandComputed) {
  for (const Row& row : Rows()) {
    SCOPED_TRACE(row.what);
    OpEnv env;
    ASSERT_TRUE(ParseRounding(row.mode, env)) << row.mode;
    env.saturate = row.sat;
    env.flush_to_zero = row.ftz;
    env.sr_random = row.sr_random;
    if (row.tiny_before) env.tininess = Tininess::kBeforeRounding;
    OpResult m, b;
    const bool boost = BoostSupports(*row.to);
    if (row.fb == nullptr) {
      m = MpfrSum(*row.fa, row.a, *row.to, env);
      if (boost) b = BoostSum(*row.fa, row.a, *row.to, env);
    } else {
      m = MpfrDot(*row.fa, row.a, *row.fb, row.b, nullptr, 0, *row.to, env);
      if (boost) b = BoostDot(*row.fa, row.a, *row.fb, row.b, nullptr, 0, *row.to, env);
    }
    auto check = [&](const char* who, const OpResult& r) {
      if (row.nan) {
        EXPECT_TRUE(IsNanBits(*row.to, r.bits)) << who << ": " << Describe(*row.to, r.bits);
      } else {
        EXPECT_EQ(r.bits, row.bits) << who << ": " << Describe(*row.to, r.bits) << " expected "
                                    << Describe(*row.to, row.bits);
      }
      EXPECT_EQ(FlagsToString(r.flags), FlagsToString(row.flags)) << who;
    };
    check("mpfr", m);
    if (boost) check("boost", b);
  }
}

TEST(OracleRows, ExactValueText) {
  MpfrExact me;
  BoostExact be;
  OpEnv env;
  const std::vector<uint64_t> x = {0x40C00000 /*6*/, 0xBEC00000 /*-0.375*/};
  MpfrExactSum(Float32(), x, env, me);
  BoostExactSum(Float32(), x, env, be);
  EXPECT_EQ(me.ToText(), "0x2dp-3");  // 5.625 = 45 / 8.
  EXPECT_EQ(be.ToText(), "0x2dp-3");
  const std::vector<uint64_t> a = {0x3F80 /*1*/, 0xBF80 /*-1*/}, b = {0x38, 0x38};
  MpfrExactDot(BFloat16(), a, Float8E4M3FN(), b, nullptr, 0, env, me);
  EXPECT_EQ(me.kind(), MpfrExact::Kind::kZero);
  EXPECT_FALSE(me.zero_sign_fixed());
  EXPECT_EQ(me.ToText(), "0");
}

TEST(OracleRows, MatmulIsElementwiseDot) {
  // 2x3 * 3x2 in bfloat16 x float8_e4m3fn with a float32 C, into bfloat16.
  const std::vector<uint64_t> a = {0x3F80, 0x4000, 0xC040, 0x3B80, 0x3F80, 0x0001};
  const std::vector<uint64_t> b = {0x38, 0x40, 0x30, 0xB8, 0x7E, 0x01};
  const std::vector<uint64_t> c = {0x3F800000, 0x00000000, 0x80000000, 0x33800000};
  OpEnv env;
  std::vector<OpResult> d(4);
  MpfrMatmul(2, 2, 3, BFloat16(), a, Float8E4M3FN(), b, &Float32(), c, BFloat16(), env, d);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      std::vector<uint64_t> row(a.begin() + i * 3, a.begin() + i * 3 + 3);
      const size_t jj = static_cast<size_t>(j);
      std::vector<uint64_t> col = {b[jj], b[2 + jj], b[4 + jj]};
      const uint64_t cij = c[static_cast<size_t>(i * 2 + j)];
      const OpResult m =
          MpfrDot(BFloat16(), row, Float8E4M3FN(), col, &Float32(), cij, BFloat16(), env);
      const OpResult bo =
          BoostDot(BFloat16(), row, Float8E4M3FN(), col, &Float32(), cij, BFloat16(), env);
      EXPECT_EQ(d[static_cast<size_t>(i * 2 + j)], m);
      EXPECT_EQ(m, bo);
    }
  }
}

}  // namespace
}  // namespace fpconform

namespace fpconform {
namespace {

// A one-term dot with initial value is one fused multiply-add: MpfrDot([a], [b], c) must equal
// formats' Fma(a, b, c) in every float format (float8_e8m0fnu and the fnuz formats included,
// which the Boost oracle does not cover) and every mode, bit for bit (NaNs by class) and flag for
// flag; likewise a two-term sum is formats' Add. A black-box check of the MPFR oracle's rounding
// against formats/ (ops.h API only).
TEST(OracleRows, OneTermDotIsFormatsFma) {
  const uint64_t seed = Seed();
  uint64_t checked = 0, failures = 0;
  for (const FormatSpec& f : AllFormats()) {
    if (!IsFloat(f)) continue;
    for (uint64_t i = 0; i < 20000; ++i) {
      const uint64_t salt = (static_cast<uint64_t>(f.width) << 32) ^ static_cast<uint64_t>(f.bias) ^
                            (static_cast<uint64_t>(f.fraction_bits) << 48);
      Rng r(SplitMix64At(seed ^ (uint64_t{0xF3A} << 40 | i) ^ salt, 0));
      auto value = [&]() {
        if (r.Chance(5)) return RandomSpecial(f, r);
        return RandomNear(f, r, r.Chance(50) ? r.Range(MinExp(f), Emax(f)) : r.Range(-4, 4), 3);
      };
      const uint64_t a = value(), b = value(), c = value();
      OpEnv env = RandomEnv(r, i);
      env.denormals_are_zero = false;
      const std::vector<uint64_t> va = {a}, vb = {b};
      const OpResult m = MpfrDot(f, va, f, vb, &f, c, f, env);
      const OpResult ref = Fma(f, a, b, c, env);
      const std::vector<uint64_t> ac = {a, c};
      const OpResult sum = MpfrSum(f, ac, f, env), add = Add(f, a, c, env);
      checked += 2;
      if (!SameResult(f, sum, add) && ++failures <= 10) {
        ADD_FAILURE() << f.name << " add(" << Describe(f, a) << ", " << Describe(f, c) << ") "
                      << EnvText(env) << ": mpfr_dot " << Describe(f, sum.bits) << " "
                      << FlagsToString(sum.flags) << ", formats " << Describe(f, add.bits) << " "
                      << FlagsToString(add.flags);
      }
      if (!SameResult(f, m, ref)) {
        if (++failures <= 10) {
          ADD_FAILURE() << f.name << " fma(" << Describe(f, a) << ", " << Describe(f, b) << ", "
                        << Describe(f, c) << ") " << EnvText(env) << ": mpfr_dot "
                        << Describe(f, m.bits) << " " << FlagsToString(m.flags) << ", formats "
                        << Describe(f, ref.bits) << " " << FlagsToString(ref.flags);
        }
      }
    }
  }
  std::printf("one-term dot vs formats Fma, two-term sum vs Add: %llu cases, %llu disagreements\n",
              static_cast<unsigned long long>(checked), static_cast<unsigned long long>(failures));
}

}  // namespace
}  // namespace fpconform
