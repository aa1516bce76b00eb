#include "oracles/calc_exact_ops.h"

#include <array>
#include <cstdint>

#include "oracles/exact_sum.h"

namespace fpconform {
namespace {

OpResult EvalDot(const CalcCase& c) {
  const size_t n = static_cast<size_t>(c.count);
  ExactAccumulator acc(c.env.denormals_are_zero);
  acc.AddDot(*c.src, c.values.subspan(0, n), *c.src, c.values.subspan(n, n));
  return acc.Round(*c.dst, c.env);
}

OpResult EvalSum(const CalcCase& c) {
  ExactAccumulator acc(c.env.denormals_are_zero);
  acc.AddSum(*c.src, c.values);
  return acc.Round(*c.dst, c.env);
}

// name, fixed operands (none), source format, integers, eval, operand groups per n.
constexpr std::array<CalcOp, 2> kExactCalcOps = {{
    {"dot", 0, true, false, EvalDot, 2},
    {"sum", 0, true, false, EvalSum, 1},
}};

}  // namespace

std::span<const CalcOp> ExactCalcOps() { return kExactCalcOps; }

}  // namespace fpconform
