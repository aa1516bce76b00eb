#include "accumulation/calc_model_ops.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "accumulation/evaluate.h"
#include "formats/round_pack.h"

namespace fpconform {
namespace {

absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

std::string ResolveDot(const CalcOp& op, std::string_view name, CalcCase& c) {
  std::string problem;
  const CalcModelHandle* h = op.context->FindModel(name, problem);
  if (h == nullptr) return problem;
  const Model& m = h->model;
  if (!m.Supports(ModelOp::kDot)) {
    return absl::StrCat("model '", Av(name), "' does not define dot (see its operations)");
  }
  c.src = m.inputs.a;
  c.src_b = m.inputs.b;
  c.trailing = &m.FinalAccumulatorFormat();
  c.dst = m.output.format;
  c.model = h;
  return {};
}

std::string ResolveSum(const CalcOp& op, std::string_view name, CalcCase& c) {
  std::string problem;
  const CalcModelHandle* h = op.context->FindModel(name, problem);
  if (h == nullptr) return problem;
  const Model& m = h->model;
  if (!m.Supports(ModelOp::kSum)) {
    return absl::StrCat("model '", Av(name), "' does not define sum (see its operations)");
  }
  c.src = m.inputs.a;
  c.src_b = nullptr;
  c.trailing = nullptr;
  c.dst = m.output.format;
  c.model = h;
  return {};
}

// The evaluators cannot fail on a parsed case (the sizes match by construction); should they,
// the output format's default NaN is printed with the invalid flag.
OpResult Failed(const CalcCase& c) {
  return OpResult{NanResultBits(*c.dst, OpEnv{}, nullptr, 0), kInvalid};
}

OpResult EvalMdot(const CalcCase& c) {
  const Model& m = c.model->model;
  const size_t n = static_cast<size_t>(c.count);
  EvalOptions options;
  options.want_bound = false;
  absl::StatusOr<EvalResult> r =
      EvaluateDot(m, c.values.subspan(0, n), c.values.subspan(n, n), c.values[2 * n], options);
  if (!r.ok()) return Failed(c);
  return OpResult{r->bits, 0};
}

OpResult EvalMsum(const CalcCase& c) {
  const Model& m = c.model->model;
  EvalOptions options;
  options.want_bound = false;
  absl::StatusOr<EvalResult> r = EvaluateSum(m, c.values, 0, options);
  if (!r.ok()) return Failed(c);
  return OpResult{r->bits, 0};
}

}  // namespace

ModelCalcOps::ModelCalcOps(std::string models_dir)
    : catalog_(std::move(models_dir)),
      ops_{{
          // name, fixed operands, source format, integers, eval, groups, resolver, context,
          // trailing operands.
          {"mdot", 0, false, false, EvalMdot, 2, ResolveDot, this, 1},
          {"msum", 0, false, false, EvalMsum, 1, ResolveSum, this, 0},
      }} {}

const CalcModelHandle* ModelCalcOps::FindModel(std::string_view name,
                                               std::string& problem) const {
  if (auto it = handles_.find(name); it != handles_.end()) return &it->second;
  const absl::StatusOr<Model>& m = catalog_.Find(name);
  if (!m.ok()) {
    problem = std::string(m.status().message());
    return nullptr;
  }
  return &handles_.emplace(std::string(name), CalcModelHandle{*m}).first->second;
}

}  // namespace fpconform
