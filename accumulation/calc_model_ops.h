// The `fpconform calc` ops that evaluate under an accumulation model (model.h, evaluate.h),
// handed to the calc engine (cases/calc_case.h, "Model ops") as extra op rows:
//
//   mdot <model> <n> <a_1> ... <a_n> <b_1> ... <b_n> <c>
//   msum <model> <n> <x_1> ... <x_n>
//
// mdot prints EvaluateDot(model, a, b, c): c + sum_i a_i * b_i as the model computes it; msum
// prints EvaluateSum(model, x, +0). Operands are hex bit patterns: a_i in the model's
// inputs.a, b_i in inputs.b, *before* the model's input conversion (a tf32 model takes float32
// patterns and converts them as the model says, e.g. RZ to tfloat32); c in the model's final
// accumulator format (FinalAccumulatorFormat(): float32 for every preset; 0x0 for none); x_i in
// inputs.a. The result is in the model's output format. n may be anything from 0 to
// kMaxCalcCount: a fused-group model pads its last group with zeros, as the hardware does.
// Differences from the other calc ops:
//  * no rounding token: the model fixes every rounding; an output rounding sr<k> draws its bits
//    from EvalOptions' seed 0;
//  * the flags column is always "-": models do not report status flags (evaluate.h);
//  * mdot needs a model whose `operations` include dot, msum one that includes sum.
// Models are read from `models_dir` on first use and cached for the life of the object (an
// unknown or bad model is an error line naming it, or the file, line and field).
//
// Example:
//   ModelCalcOps ops("accumulation/models");
//   std::string out, err;
//   RunCalc("mdot cpu-f32-seq 2 0x3f800000 0x33800000 0x3f800000 0x3f800000 0x0\n", out, err,
//           ops.ops());
//   out == "0x3f800000 -\n";   // (0 + 1*1) + 2^-24*1 = 1 + 2^-24: a tie, to even.
#ifndef FPCONFORM_ACCUMULATION_CALC_MODEL_OPS_H_
#define FPCONFORM_ACCUMULATION_CALC_MODEL_OPS_H_

#include <array>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "accumulation/model.h"
#include "accumulation/model_catalog.h"
#include "cases/calc_case.h"

namespace fpconform {

// The resolved model of an mdot/msum case (cases/calc_case.h declares it for CalcCase::model;
// this is its one definition): a model of the catalog of the ModelCalcOps that resolved it.
struct CalcModelHandle {
  const Model& model;
};

class ModelCalcOps final : public CalcOpContext {
 public:
  explicit ModelCalcOps(std::string models_dir);
  ModelCalcOps(const ModelCalcOps&) = delete;
  ModelCalcOps& operator=(const ModelCalcOps&) = delete;

  // The rows {mdot, msum}; valid while this object lives. Not for concurrent runners.
  std::span<const CalcOp> ops() const { return ops_; }
  const ModelCatalog& catalog() const { return catalog_; }

  // CalcOpContext: catalog().Find(name) as a handle, or its error message.
  const CalcModelHandle* FindModel(std::string_view name, std::string& problem) const override;

 private:
  ModelCatalog catalog_;
  mutable std::map<std::string, CalcModelHandle, std::less<>> handles_;  // By name, as found.
  std::array<CalcOp, 2> ops_;
};

}  // namespace fpconform

#endif  // FPCONFORM_ACCUMULATION_CALC_MODEL_OPS_H_
