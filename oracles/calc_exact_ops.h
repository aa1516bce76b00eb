// The `fpconform calc` ops that need the exact accumulator: dot and sum, handed to the calc
// engine (cases/calc_case.h) as extra op rows, since cases/ must not depend on oracles/.
//
//   dot <in_format> <out_format>[:opt...] <rounding> <n> <a_1> ... <a_n> <b_1> ... <b_n>
//   sum <in_format> <out_format>[:opt...] <rounding> <n> <x_1> ... <x_n>
//
// Each prints sum_i a_i * b_i (or sum_i x_i), computed exactly (ExactAccumulator, exact_sum.h)
// and rounded once into out_format under the case's OpEnv (every option: sat ftz daz tbr nan=,
// every rounding incl. rto and sr<k>, whose random bits come as one extra last operand), with
// the flags of that one rounding (v o u x; v for NaN/Inf special cases as exact_sum.h states).
// daz reads subnormal inputs as zeros. n = 0 is the empty sum: +0 in every mode (exact_sum.h);
// an exact zero from cancellation is +0, or -0 under rdn (IEEE 754-2019 §6.3).
//
// Example:
//   std::string out, err;
//   RunCalc("dot float32 float32 rne 2 0x3f800000 0x33800000 0x3f800000 0x3f800000\n",
//           out, err, ExactCalcOps());
//   out == "0x3f800000 x\n";   // 1*1 + 2^-24*1 = 1 + 2^-24: a tie, to even.
#ifndef FPCONFORM_ORACLES_CALC_EXACT_OPS_H_
#define FPCONFORM_ORACLES_CALC_EXACT_OPS_H_

#include <span>

#include "cases/calc_case.h"

namespace fpconform {

// The rows {dot, sum} (static storage; pass to RunCalc / RunCalcStream / CalcRunner).
std::span<const CalcOp> ExactCalcOps();

}  // namespace fpconform

#endif  // FPCONFORM_ORACLES_CALC_EXACT_OPS_H_
