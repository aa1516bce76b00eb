// The tolerance sweep's composite kernels (internal to the sweep library): the units of op
// "composite" and their rows in the "composite", "composite_power" and "composite_cross" tables.
// What is measured and the rules: sweep.h, [composite].
#ifndef FPCONFORM_REPORTS_SWEEP_COMPOSITE_H_
#define FPCONFORM_REPORTS_SWEEP_COMPOSITE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "composite/model.h"
#include "reports/sweep.h"
#include "reports/sweep_tables.h"

namespace fpconform::reports::sweep_internal {

// One unit: a function, a composite distribution, a row length n (elementwise: n values in one
// row) and the number of rows.
struct CompositeUnit {
  std::string fn;
  bool axis = false;
  std::string dist;
  int64_t n = 0;
  int64_t rows = 0;
};

// The units of spec.composite in a fixed order: per function, per distribution, per length
// (elementwise functions: one unit of `elements` values). Axis units take
// max(8, elements / n) rows.
std::vector<CompositeUnit> MakeCompositeUnits(const CompositeSweepSpec& spec);

// The models spec.composite.platforms names, from `dir`, in that order (only those whose input
// format is in spec.composite.input_formats when that is set); an unknown name is an error
// naming the sweep file and the models of the directory.
absl::StatusOr<std::vector<composite::CompositeModel>> LoadCompositeSweepModels(const SweepSpec& spec,
                                                                              const std::string& dir);

// Runs one unit through every model that implements its function (and the cross pairs of two
// such models with one input format), appending its rows to `tables`. The models run on up to
// `threads` worker threads (the rows do not depend on it); `cancelled` is polled per model.
absl::Status RunCompositeUnit(const CompositeUnit& u, int64_t unit_index, const SweepSpec& spec,
                              const std::vector<composite::CompositeModel>& models, int threads,
                              const std::function<bool()>& cancelled, SweepTables& tables);

}  // namespace fpconform::reports::sweep_internal

#endif  // FPCONFORM_REPORTS_SWEEP_COMPOSITE_H_
