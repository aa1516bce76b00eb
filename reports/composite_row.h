// One row of an axis op as a composite model takes it (composite/model.h CompositeFunction::Row)
// from the oracle's parameters of that row (oracles/axis_ops.h AxisParams): the axis audit
// (audit_axis.cc), the composite tolerance sweep (sweep_composite.cc) and the Python binding
// give the model and the oracle the same weight, bias and eps this way.
#ifndef FPCONFORM_REPORTS_COMPOSITE_ROW_H_
#define FPCONFORM_REPORTS_COMPOSITE_ROW_H_

#include <cstdint>
#include <span>

#include "composite/model.h"
#include "oracles/axis_ops.h"

namespace fpconform::reports {

// x (n bits of the model's input format) with p's weight and bias (each with its format; empty
// when not given) and eps.
inline composite::CompositeFunction::Row CompositeRow(std::span<const uint64_t> x,
                                                     const AxisParams& p) {
  return {.x = x,
          .weight_format = p.weight_format,
          .weight = p.weight,
          .bias_format = p.bias_format,
          .bias = p.bias,
          .eps = p.eps};
}

}  // namespace fpconform::reports

#endif  // FPCONFORM_REPORTS_COMPOSITE_ROW_H_
