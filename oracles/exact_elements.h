// Internal to the oracles of the composite ops (axis_ops.cc, attention.cc): an element's exact
// value as the MPFR method decides it, shared so both oracles round it the same way.
//
// An element is decided from an MPFR interval [lo, hi] that holds its exact value (DecideElem):
// as a point, as one kTruncBits-bit truncation toward zero with the sticky bit set (neither end a
// kTruncBits-bit number: the exact value is irrational or longer, and every end point between
// them has that truncation, so RoundElem rounds it as ElementaryRound rounds a 123-bit truncation,
// elementary.h), or, when both ends are below 2^kTinyExp with a known sign, as the stand-in
// 2^(kTinyExp - 1), which every format of the table rounds as it rounds the exact value (they
// underflow far above 2^-4000).
#ifndef FPCONFORM_ORACLES_EXACT_ELEMENTS_H_
#define FPCONFORM_ORACLES_EXACT_ELEMENTS_H_

#include <mpfr.h>

#include <cstdint>
#include <span>

#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "oracles/elementary.h"
#include "oracles/mpfr_plumbing.h"

namespace fpconform::oracle_internal {

inline constexpr mpfr_prec_t kTruncBits = 123;  // p + 70 for outputs of <= 53 bits (elementary.h).
inline constexpr long kTinyExp = -4000;          // Below 2^-4000: rounds as the stand-in 2^-4001.

enum class EKind : uint8_t { kUndecided, kFinite, kZero, kNegInf, kNaN };

struct ElemExact {
  EKind kind = EKind::kUndecided;
  bool neg = false;
  bool sticky = false;
  MpfrValue t{kTruncBits};
};

// The element rounded into `out` under env (NaN for kNaN and kUndecided; -Inf, or -max under
// saturation, for kNegInf; a zero of sign e.neg, or NaN with v where the format has no zero).
OpResult RoundElem(const ElemExact& e, const FormatSpec& out, const OpEnv& env);

// The element's binary64 enclosure: nearest (RNE), lo (down), hi (up).
ExactEnclosure EncloseElem(const ElemExact& e);

// The exact sum of exact MPFR values into out (its precision set to hold it; +0 for no non-zero
// term). Aborts if MPFR reports it inexact (it cannot be: the precision holds every bit).
void ExactSum(std::span<mpfr_ptr> terms, mpfr_ptr out);
void ExactSum(std::span<mpfr_srcptr> terms, mpfr_ptr out);

// Decides e from an interval [lo, hi] holding the exact value (header comment); an exact zero
// gets the sign zero_neg, a tiny one the sign known_neg. False (e unchanged): undecided.
bool DecideElem(mpfr_srcptr lo, mpfr_srcptr hi, bool known_neg, bool zero_neg, ElemExact& e);

}  // namespace fpconform::oracle_internal

#endif  // FPCONFORM_ORACLES_EXACT_ELEMENTS_H_
