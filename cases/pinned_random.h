// Pinned random generation: the same bits on every machine, compiler, thread count and shard
// (DESIGN.md, "Reproducible"). Nothing here uses the standard library's distribution classes,
// Abseil's bit generators or libm transcendentals (whose last bits differ between C
// libraries): only integer mixing and the IEEE basic operations (+ - * / sqrt, exactly rounded
// by IEEE 754 and never contracted, since the project builds with -ffp-contract=off) and exact
// scalings by powers of two.
//
// Streams: a stream is named by (seed, key_1, key_2, ...) through DeriveSeed, so that case i of
// row r of a sweep draws the same numbers whichever thread or shard computes it.
//
// Generator: SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014; the constants of Vigna's public-domain splitmix64.c). Period 2^64 per stream;
// statistically adequate for test inputs, not for cryptography.
//
// Distributions (each documented with its exact recipe, since the recipe is the contract):
//   Uniform01():   k / 2^53 with k the top 53 bits of a draw: [0, 1), exact in double.
//   Uniform(lo,hi): lo + (hi - lo) * Uniform01() (one rounding each).
//   Normal():      Marsaglia's polar method with PinnedLog (below): u, v = 2*Uniform01() - 1
//                  until 0 < s = u^2 + v^2 < 1; returns u * sqrt(-2 log(s) / s); the second
//                  value v * sqrt(...) is kept for the next call.
//   LogUniform(e_lo, e_hi): sign uniform, exponent e uniform in [e_lo, e_hi] (integers),
//                  significand 1 + Uniform01() -> +-(1 + f) * 2^e (exact ldexp).
//
// PinnedLog(x): natural log for finite x > 0 from frexp (exact) and the atanh series
// log(m) = 2 (t + t^3/3 + t^5/5 + ...), t = (m - 1)/(m + 1), m in [sqrt(1/2), sqrt(2)),
// plus e * ln 2 (ln 2 split into a head exact in 32 bits and a tail). Relative error < 1e-15,
// and, more to the point, the same bits everywhere.
//
// Example:
//   PinnedRng rng(DeriveSeed(2026, {row_index, sample_index}));
//   double x = rng.Normal();        // same value on every machine for these keys
//   uint64_t r = rng.Next();
#ifndef FPCONFORM_CASES_PINNED_RANDOM_H_
#define FPCONFORM_CASES_PINNED_RANDOM_H_

#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace fpconform {

namespace pinned_random_internal {
__extension__ typedef unsigned __int128 U128;
}  // namespace pinned_random_internal

// SplitMix64's state increment (the "golden gamma", 2^64 / phi rounded to odd).
inline constexpr uint64_t kSplitMix64Gamma = 0x9E3779B97F4A7C15ULL;

// One SplitMix64 output step applied to z (the "mix" function). This is the project's one
// implementation of SplitMix64: every stream (PinnedRng, SplitMix64At, the counter-based
// streams of the conformance suites, the oracles' tests and benchmarks and the catalog
// generator, accumulation's random split-K order and stochastic output rounding) goes through
// it.
constexpr uint64_t SplitMix64Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Output `index` (0-based) of the SplitMix64 stream whose state starts at `seed`, without
// walking the stream: SplitMix64Mix(seed + (index + 1) * gamma), the value the (index + 1)-th
// PinnedRng(seed).Next() returns. SplitMix64At(x, 0) is Vigna's splitmix64 next() on state x.
//   SplitMix64At(0, 0) == 0xE220A8397B1DCDAF (Vigna's first output for state 0).
constexpr uint64_t SplitMix64At(uint64_t seed, uint64_t index) {
  return SplitMix64Mix(seed + (index + 1) * kSplitMix64Gamma);
}
static_assert(SplitMix64At(0, 0) == 0xE220A8397B1DCDAFULL);

// A stream seed from a base seed and any number of keys (row, sample, operand, ...). Order of
// keys matters; distinct key lists give unrelated streams.
constexpr uint64_t DeriveSeed(uint64_t seed, std::initializer_list<uint64_t> keys) {
  uint64_t h = SplitMix64Mix(seed ^ 0x6A09E667F3BCC909ULL);
  for (uint64_t k : keys) h = SplitMix64Mix(h + kSplitMix64Gamma + SplitMix64Mix(k));
  return h;
}

// Natural logarithm for finite x > 0 (see the header comment); returns NaN otherwise.
double PinnedLog(double x);

class PinnedRng {
 public:
  explicit constexpr PinnedRng(uint64_t seed) : state_(seed) {}

  constexpr uint64_t Next() {
    state_ += kSplitMix64Gamma;
    return SplitMix64Mix(state_);
  }
  // Uniform integer in [0, n) for n >= 1 (Lemire's multiply-shift; bias < n / 2^64).
  constexpr uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<pinned_random_internal::U128>(Next()) * n) >> 64);
  }
  double Uniform01() { return static_cast<double>(Next() >> 11) * 0x1p-53; }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform01(); }
  double Normal();
  double LogUniform(int e_lo, int e_hi);

 private:
  uint64_t state_;
  bool have_spare_ = false;
  double spare_ = 0;
};

}  // namespace fpconform

#endif  // FPCONFORM_CASES_PINNED_RANDOM_H_
