// The error bound's arithmetic (evaluate.h, "The error bound"), defined once for the generic
// engine (evaluate.cc) and the fast paths (fast_*.cc), which must give the same double bits:
//  * Up(x): x * (1 + 2^-50), the safety factor applied at every node;
//  * UnitRoundoff(f, env): u = 2^-(f+1) for rne/rna, 2^-f for the other modes;
//  * Eta(format, f, ftz): 2^(smallest subnormal exponent) of `format` cut to f fraction bits
//    (2^Emin under flush_to_zero);
//  * BoundStep(u, eta, e, m): the rounding node's E = Up((1 + u) e + u m + eta), with e the
//    children's summed E (plus a leaf's E where one is added) and m the node's M.
// Every function is plain double arithmetic in this order (the build has -ffp-contract=off, so no
// caller, host or AVX2-targeted, fuses any of it). The AVX2/AVX-512 tiles repeat BoundStep lane
// by lane in intrinsics, with the same operations in the same order (the AVX-512 host tile fuses
// an add with a product only where the product is exact, which gives the same bits).
//
// Example:
//   UnitRoundoff(23, OpEnv{}) == 0x1p-24;  Eta(Float32(), 23) == 0x1p-149;
//   BoundStep(0x1p-24, 0x1p-149, 0.0, 1.0) == Up(0x1p-24 + 0x1p-149).
#ifndef FPCONFORM_ACCUMULATION_BOUND_STEP_H_
#define FPCONFORM_ACCUMULATION_BOUND_STEP_H_

#include <cmath>

#include "formats/format_spec.h"
#include "formats/op_env.h"

namespace fpconform::accumulation_internal {

inline constexpr double kUp = 1.0 + 0x1p-50;

inline double Up(double x) { return x * kUp; }

inline double UnitRoundoff(int fraction_bits, const OpEnv& env) {
  const bool nearest =
      env.rounding == Rounding::kNearestEven || env.rounding == Rounding::kNearestAway;
  return std::ldexp(1.0, nearest ? -(fraction_bits + 1) : -fraction_bits);
}

// f with `fraction_bits` (<= f.fraction_bits) fraction bits, the others turned into padding.
inline FormatSpec Reduced(const FormatSpec& f, int fraction_bits) {
  FormatSpec r = f;
  const int cut = f.fraction_bits - fraction_bits;
  r.fraction_bits = fraction_bits;
  r.pad_bits += cut;
  return Derive(r);
}

// A flushed tiny result (flush_to_zero) moves by less than 2^Emin; otherwise a rounded result by
// less than one subnormal quantum of the reduced format.
inline double Eta(const FormatSpec& f, int fraction_bits, bool flush_to_zero = false) {
  return std::ldexp(1.0, flush_to_zero ? Emin(f) : MinSubnormalExponent(Reduced(f, fraction_bits)));
}

inline double BoundStep(double u, double eta, double e, double m) {
  return Up((1 + u) * e + u * m + eta);
}

}  // namespace fpconform::accumulation_internal

#endif  // FPCONFORM_ACCUMULATION_BOUND_STEP_H_
