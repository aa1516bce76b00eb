// The tolerance sweep's attention rows (internal to the sweep library): the units of op
// "attention" and their rows in the "attention", "attention_power" and "attention_cross" tables.
// What is measured and the rules: sweep.h, [attention].
//
// Errors: an unknown model name in attention.platforms (naming the sweep file and the models of
// the directory), a model file that does not parse, an oracle or model error (e.g. a bad shape:
// not reached by units MakeAttentionUnits makes); CancelledError when `cancelled` returns true.
//
// Example (what RunSweep does for op "attention"):
//   auto models = LoadAttentionSweepModels(spec, "composite/attention_models");
//   for (const AttentionUnit& u : MakeAttentionUnits(spec.attention))
//     RunAttentionUnit(u, index++, spec, *models, 2, nullptr, tables);
#ifndef FPCONFORM_REPORTS_SWEEP_ATTENTION_H_
#define FPCONFORM_REPORTS_SWEEP_ATTENTION_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "composite/attention_model.h"
#include "reports/sweep.h"
#include "reports/sweep_tables.h"

namespace fpconform::reports::sweep_internal {

// One unit: a distribution, S (queries = keys), D (= D_v), the mask, and the query rows measured.
struct AttentionUnit {
  std::string dist;
  int64_t s = 0, d = 0;
  bool causal = false;
  int64_t rows = 0;   // min(spec rows, S), evenly spaced over [0, S).
  int64_t cases = 0;  // min(spec cases, rows): row r belongs to case r % cases.
};

// The units of spec.attention in a fixed order: per distribution, per S, per D, per mask.
std::vector<AttentionUnit> MakeAttentionUnits(const AttentionSweepSpec& spec);

// The models spec.attention.platforms names, from `dir`, in that order (only those whose input
// format is in spec.attention.input_formats when that is set). Errors: an unknown name, a cross
// pair of two models with different input formats.
absl::StatusOr<std::vector<composite::AttentionModel>> LoadAttentionSweepModels(const SweepSpec& spec,
                                                                               const std::string& dir);

// The mutation names of the power table, in their row order (sweep.h, [attention]).
const std::vector<std::string>& AttentionMutationNames();

// Runs one unit through every model (grouped by input format: one draw, rounded per format), and
// the cross pairs of two models with one input format, appending its rows to `tables`. Rows do
// not depend on `threads`; `cancelled` is polled between the unit's steps.
absl::Status RunAttentionUnit(const AttentionUnit& u, int64_t unit_index, const SweepSpec& spec,
                              const std::vector<composite::AttentionModel>& models, int threads,
                              const std::function<bool()>& cancelled, SweepTables& tables);

}  // namespace fpconform::reports::sweep_internal

#endif  // FPCONFORM_REPORTS_SWEEP_ATTENTION_H_
