// Operands for testing the formats against an oracle, TestFloat style (Berkeley TestFloat's
// boundary exponents and fraction patterns, crossed): boundary values of a format, uniformly
// random encodings, random values near the range's bottom, top and middle, and values a few ulps
// from a given one (cancellation). Every draw comes from a counter-based stream, so case i of a
// suite is a pure function of (seed, i), independent of the thread split.
//
// Used by the formats-vs-MPFR suites (conformance/oracle_check.h) and any test that needs the
// same operands.
//
// Example:
//   CaseRng rng(seed, case_index);
//   const std::vector<uint64_t> edge = BoundaryOperands(BFloat16(), seed);
//   uint64_t a = RandomOperand(BFloat16(), rng, edge), b = Near(BFloat16(), a, rng, true);
#ifndef FPCONFORM_CASES_BOUNDARY_OPERANDS_H_
#define FPCONFORM_CASES_BOUNDARY_OPERANDS_H_

#include <cstdint>
#include <vector>

#include "cases/pinned_random.h"
#include "formats/format_spec.h"

namespace fpconform {

// Counter-based stream of case `index` under `seed`: Next() is draw j of that case, a pure
// function of (seed, index, j).
class CaseRng {
 public:
  CaseRng(uint64_t seed, uint64_t index) : key_(SplitMix64At(seed ^ SplitMix64At(index, 0), 0)) {}
  uint64_t Next() { return SplitMix64At(key_ + 0x632BE59BD9B4E019ull * ++j_, 0); }
  // Uniform in [0, n) (n small; the bias of the modulo is irrelevant for coverage).
  uint64_t Below(uint64_t n) { return Next() % n; }
  bool OneIn(uint64_t n) { return Below(n) == 0; }

 private:
  uint64_t key_;
  uint64_t j_ = 0;
};

// Encoding of a float from fields (container bits, tfloat32 pad included).
uint64_t FieldsToBits(const FormatSpec& f, bool sign, uint64_t biased, uint64_t frac);

// A uniformly random encoding of f.
uint64_t RandomBits(const FormatSpec& f, CaseRng& rng);

// TestFloat-style boundary operands: exponents {subnormal/zero, emin-1..emin+1 (biased 0..2),
// -1..1 (biased bias-1..bias+1), emax-1..emax, Inf/NaN} crossed with fraction patterns
// {0, 1, all ones, top bit, top-1 bits (all ones but the last), top bit + 1, random}; sorted,
// without repeats.
std::vector<uint64_t> BoundaryOperands(const FormatSpec& f, uint64_t seed);

// An operand for random testing: a boundary value, a uniformly random encoding, or a random
// fraction with an exponent near the bottom, the top or the middle of the range.
uint64_t RandomOperand(const FormatSpec& f, CaseRng& rng, const std::vector<uint64_t>& boundary);

// A random operand near `x` (a few units in the last place away, either side, maybe negated):
// provokes cancellation in add/sub/fma.
uint64_t Near(const FormatSpec& f, uint64_t x, CaseRng& rng, bool negate);

}  // namespace fpconform

#endif  // FPCONFORM_CASES_BOUNDARY_OPERANDS_H_
