// `fpconform audit sum` as an op of the audit pipeline: out = the sum of X along one axis.
#include <algorithm>

#include "accumulation/evaluate.h"
#include "base/str_cat.h"
#include "reports/audit.h"
#include "reports/audit_inputs.h"
#include "reports/audit_reduction.h"

namespace fpconform::reports {
namespace audit_internal {
namespace {

class SumOp : public ReductionOp {
 public:
  SumOp(const SumAuditInput& in, const AuditOptions& options)
      : ReductionOp(/*sum=*/true, options), in_(in) {}

  // Checks the input and states the audit (setup_); errors name the tensor and the problem.
  absl::Status Init();

  const char* Name() const override { return "sum"; }
  int64_t BlockEnd(int64_t e0) const override {
    return e0 + std::max<int64_t>(1, (1 << 20) / setup_.k);
  }
  absl::Status EmulateBlock(int64_t e0, int64_t e1, std::vector<std::vector<Emulated>>& emu) override;

 protected:
  void Read(int64_t e, std::vector<uint64_t>& a, std::vector<uint64_t>& b, uint64_t& c) const override;

 private:
  const SumAuditInput& in_;
  int64_t inner_ = 1;  // Elements per step of the summed axis.
  InputReader reader_;
  std::vector<uint64_t> a_, b_;
};

absl::Status SumOp::Init() {
  const SumAuditInput& in = in_;
  if (absl::Status s = CheckXAndOut(in.x, in.out, "sum"); !s.ok()) return s;
  const Tensor& X = *in.x;
  const Tensor& O = *in.out;
  const absl::StatusOr<int> resolved = ResolveAxis(X, in.axis, "sum");
  if (!resolved.ok()) return resolved.status();
  const int axis = *resolved;
  const int rank = static_cast<int>(X.shape.size());
  std::vector<int64_t> reduced, kept = X.shape;
  for (int d = 0; d < rank; ++d) {
    if (d != axis) reduced.push_back(X.shape[static_cast<size_t>(d)]);
  }
  kept[static_cast<size_t>(axis)] = 1;
  if (O.shape != reduced && O.shape != kept) {
    return absl::InvalidArgumentError(Cat(O.source, ": the output has shape ", ShapeText(O.shape),
                                          ", expected ", ShapeText(reduced), " (or ", ShapeText(kept),
                                          " with keepdims) for the sum of ", ShapeText(X.shape),
                                          " along axis ", axis));
  }
  const int64_t k = X.shape[static_cast<size_t>(axis)];
  if (k < 1) return absl::InvalidArgumentError(Cat(X.source, ": the summed axis is empty"));
  for (int d = axis + 1; d < rank; ++d) inner_ *= X.shape[static_cast<size_t>(d)];
  if (absl::Status s = ResolvePlatforms(options_.platforms, X.format, nullptr); !s.ok()) return s;
  setup_.out = &O;
  setup_.out_format = O.format;
  out_rounding_ = in.out_rounding;
  setup_.out_shape = O.shape;
  setup_.elements = O.size();
  setup_.k = k;
  setup_.progress_label = "sum elements";
  const Model& m0 = *models_[0];
  const FormatSpec& fa = *m0.inputs.a;
  for (size_t p = 0; p < models_.size(); ++p) {
    if (models_[p]->inputs.a != &fa) {
      return absl::InvalidArgumentError(Cat("--platform: ", setup_.platforms[p].name, " takes ",
                                            models_[p]->inputs.a->name, " inputs but ", m0.name,
                                            " takes ", fa.name, ": audit them in separate runs"));
    }
  }
  absl::StatusOr<InputReader> xr = MakeInputReader(X, fa, in.cast_inputs, "X", m0.name, setup_.notes);
  if (!xr.ok()) return xr.status();
  reader_ = *xr;
  fa_ = &fa;
  setup_.input_format = std::string(fa.name);
  setup_.formula = Cat("out = fl_", O.format->name, "(sum_k X[..., k, ...]) along axis ", axis,
                       " in the platform's order; exact = the same sum, exactly");
  NoteOutputConversion(m0, std::string(m0.OutputFormat().name));
  NoteBf16Fit(O, "the output", setup_.notes);
  AddFileProvenance(setup_.provenance, "X", X);
  AddFileProvenance(setup_.provenance, "out", O);
  setup_.provenance.emplace_back("tool", ToolVersion());
  RecommendAll();
  return absl::OkStatus();
}

absl::Status SumOp::EmulateBlock(int64_t e0, int64_t e1, std::vector<std::vector<Emulated>>& emu) {
  for (size_t p = 0; p < models_.size(); ++p) emu[p].resize(static_cast<size_t>(e1 - e0));
  uint64_t c = 0;
  for (int64_t e = e0; e < e1; ++e) {
    Read(e, a_, b_, c);
    for (size_t p = 0; p < models_.size(); ++p) {
      absl::StatusOr<EvalResult> r = EvaluateSum(*models_[p], a_, 0, {});
      if (!r.ok()) return r.status();
      emu[p][static_cast<size_t>(e - e0)] = PostProcess(p, e, r->bits, r->bound);
    }
  }
  return absl::OkStatus();
}

void SumOp::Read(int64_t e, std::vector<uint64_t>& a, std::vector<uint64_t>& b, uint64_t& c) const {
  const int64_t k = setup_.k, outer = e / inner_, in_i = e % inner_;
  a.resize(static_cast<size_t>(k));
  for (int64_t kk = 0; kk < k; ++kk) a[static_cast<size_t>(kk)] = reader_.Get((outer * k + kk) * inner_ + in_i);
  b.clear();
  c = 0;
}

}  // namespace
}  // namespace audit_internal

absl::StatusOr<AuditResult> AuditSum(const SumAuditInput& in, const AuditOptions& options) {
  return audit_internal::RunOp<audit_internal::SumOp>(in, options);
}

}  // namespace fpconform::reports
