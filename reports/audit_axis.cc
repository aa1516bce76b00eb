// `fpconform audit softmax|log_softmax|rmsnorm|layernorm` as an op of the audit pipeline
// (audit.h, AuditAxis). Rows are the entries along the axis; with axis not last a row is strided
// (x viewed as outer x n x inner), and a block of the pass is whole outer slices, so every row of
// a block lies in it.
#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>

#include "base/run_workers.h"
#include "base/str_cat.h"
#include "composite/formula.h"
#include "composite/model.h"
#include "formats/ops.h"
#include "oracles/axis_ops.h"
#include "reports/audit.h"
#include "reports/audit_composite.h"
#include "reports/audit_inputs.h"
#include "reports/audit_op.h"
#include "reports/audit_values.h"
#include "reports/composite_row.h"

namespace fpconform::reports {
namespace audit_internal {
namespace {

using composite::CompositeFunction;
using composite::Enclosure;

// Variants of each op for the diagnoses: (what, formula in float32, eps override or NaN).
struct Variant {
  const char* what;
  const char* formula;
};
constexpr Variant kSoftmaxVariants[] = {
    {"softmax without the max subtraction (exp(x) / sum(exp(x)))", "exp(x) / sum(exp(x))"},
    {"log_softmax, not softmax", "x - max(x) - log(sum(exp(x - max(x))))"},
};
constexpr Variant kLogSoftmaxVariants[] = {
    {"softmax, not log_softmax", "exp(x - max(x)) / sum(exp(x - max(x)))"},
    {"log of a softmax rounded first (log(exp(x - max) / sum))", "log(exp(x - max(x)) / sum(exp(x - max(x))))"},
};
constexpr Variant kRmsNormVariants[] = {
    {"eps outside the square root (x / (sqrt(mean(x^2)) + eps))", "x / (sqrt(mean(x * x)) + eps) * w"},
    {"the weight not applied", "x * rsqrt(mean(x * x) + eps)"},
    {"normalized in bfloat16 before the weight (HF Llama style: w * bfloat16(x * rsqrt(mean(x^2) + eps)))",
     "bfloat16(x * rsqrt(mean(x * x) + eps)) * w"},
    {"sum instead of mean (x * rsqrt(sum(x^2) + eps))", "x * rsqrt(sum(x * x) + eps) * w"},
    {"layernorm (mean subtracted), not rmsnorm",
     "(x - mean(x)) * rsqrt(mean((x - mean(x)) * (x - mean(x))) + eps) * w"},
};
constexpr Variant kLayerNormVariants[] = {
    {"unbiased variance (sum((x - mean)^2) / (n - 1))",
     "(x - mean(x)) * rsqrt(sum((x - mean(x)) * (x - mean(x))) / (n - 1) + eps) * w + b"},
    {"eps outside the square root",
     "(x - mean(x)) / (sqrt(mean((x - mean(x)) * (x - mean(x)))) + eps) * w + b"},
    {"the weight and bias not applied", "(x - mean(x)) * rsqrt(mean((x - mean(x)) * (x - mean(x))) + eps)"},
    {"the bias not applied", "(x - mean(x)) * rsqrt(mean((x - mean(x)) * (x - mean(x))) + eps) * w"},
    {"rmsnorm (no mean subtraction), not layernorm", "x * rsqrt(mean(x * x) + eps) * w + b"},
};
constexpr double kOtherEps[] = {1e-5, 1e-6, 1e-8, 1e-12, 1e-3};

class AxisAuditOp : public EnclosureOp {
 public:
  AxisAuditOp(const AxisAuditInput& in, const AuditOptions& options) : in_(in), options_(options) {}

  absl::Status Init();

  const char* Name() const override { return in_.op.c_str(); }
  int64_t BlockEnd(int64_t e0) const override {
    const int64_t slice = n_ * inner_;
    return e0 + std::max<int64_t>(1, (int64_t{1} << 18) / slice) * slice;
  }
  absl::Status EmulateBlock(int64_t e0, int64_t e1, std::vector<std::vector<Emulated>>& emu) override;
  Emulated EmulateOne(int64_t e, size_t p, OpScratch& s) const override;
  double AbsSum(int64_t e, OpScratch& s) const override;
  std::string Diagnose(int64_t e, size_t p, OpScratch& s, const ExactFacts& x, uint64_t y,
                       double bound) const override;

 private:
  ExactEnclosure ExactOutsideBlock(int64_t e) const override;
  // The row of element e: its first element's flat index and its entry index i.
  int64_t RowStart(int64_t e) const { return (e / (n_ * inner_)) * n_ * inner_ + e % inner_; }
  int64_t EntryOf(int64_t e) const { return (e / inner_) % n_; }
  void ReadRow(const Tensor& t, int64_t start, std::vector<uint64_t>& row) const {
    row.resize(static_cast<size_t>(n_));
    for (int64_t i = 0; i < n_; ++i) row[static_cast<size_t>(i)] = t.Bits(start + i * inner_);
  }
  // The oracle's parameters: the weight and bias where given, eps (AxisParams' default when there
  // is none: softmax, log_softmax).
  AxisParams Params() const;
  // The models' row: x with the same weight and bias, and this eps.
  CompositeFunction::Row ModelRow(std::span<const uint64_t> x, double eps) const;
  // Exact enclosures, and platform p's emulated values, of the row starting at `start`.
  absl::Status ExactRow(const std::vector<uint64_t>& x, std::vector<ExactEnclosure>& out) const;
  absl::Status EmulateRow(size_t p, const std::vector<uint64_t>& x,
                          const std::vector<ExactEnclosure>& exact, std::vector<Emulated>& out) const;

  const AxisAuditInput& in_;
  const AuditOptions& options_;
  AxisOp op_ = AxisOp::kSoftmax;
  CompositePlatforms platforms_;
  int axis_ = 0;
  int64_t n_ = 1, inner_ = 1;
  std::vector<uint64_t> weight_, bias_;
  double eps_ = 0;
};

absl::Status AxisAuditOp::Init() {
  absl::StatusOr<AxisOp> op = ParseAxisOp(in_.op);
  if (!op.ok()) return absl::InvalidArgumentError(Cat("audit: ", op.status().message()));
  op_ = *op;
  if (absl::Status s = CheckXAndOut(in_.x, in_.out, in_.op); !s.ok()) return s;
  const Tensor& X = *in_.x;
  const Tensor& O = *in_.out;
  if (X.shape != O.shape) {
    return absl::InvalidArgumentError(Cat(O.source, ": the output has shape ", ShapeText(O.shape),
                                          ", expected X's ", ShapeText(X.shape), " (", X.source, ")"));
  }
  const absl::StatusOr<int> axis = ResolveAxis(X, in_.axis, in_.op);
  if (!axis.ok()) return axis.status();
  axis_ = *axis;
  const int rank = static_cast<int>(X.shape.size());
  n_ = X.shape[static_cast<size_t>(axis_)];
  if (n_ < 1) return absl::InvalidArgumentError(Cat(X.source, ": the axis is empty"));
  for (int d = axis_ + 1; d < rank; ++d) inner_ *= X.shape[static_cast<size_t>(d)];
  const bool norm = op_ == AxisOp::kRmsNorm || op_ == AxisOp::kLayerNorm;
  if (!norm && (in_.weight != nullptr || in_.bias != nullptr || in_.eps.has_value())) {
    return absl::InvalidArgumentError(Cat(in_.op, " takes no --weight, --bias or --eps"));
  }
  if (op_ == AxisOp::kRmsNorm && in_.bias != nullptr) {
    return absl::InvalidArgumentError("rmsnorm takes no --bias");
  }
  if (norm) {
    if (!in_.eps.has_value()) return absl::InvalidArgumentError(Cat(in_.op, " needs --eps (the kernel's epsilon)"));
    eps_ = *in_.eps;
    if (!(std::isfinite(eps_) && eps_ > 0)) {
      return absl::InvalidArgumentError(Cat("--eps ", Num(eps_), ": must be finite and > 0"));
    }
  }
  for (const auto& [t, role, dst] : {std::tuple{in_.weight, "the weight", &weight_}, {in_.bias, "the bias", &bias_}}) {
    if (t == nullptr) continue;
    if (absl::Status s = CheckFloat(*t, role); !s.ok()) return s;
    if (t->size() != n_ || t->shape.size() != 1) {
      return absl::InvalidArgumentError(Cat(t->source, ": ", role, " has shape ", ShapeText(t->shape),
                                            ", expected [", n_, "] (the length of axis ", axis_, " of ",
                                            X.source, ")"));
    }
    dst->resize(static_cast<size_t>(n_));
    for (int64_t i = 0; i < n_; ++i) (*dst)[static_cast<size_t>(i)] = t->Bits(i);
  }
  if (absl::Status st = platforms_.Resolve(composite::CompositeKind::kAxis, in_.op, *X.format, *O.format,
                                           options_, in_.out_rounding, setup_);
      !st.ok()) {
    return st;
  }
  setup_.out = &O;
  setup_.out_format = O.format;
  setup_.out_shape = O.shape;
  setup_.elements = O.size();
  setup_.k = n_;
  setup_.progress_label = Cat(in_.op, " elements");
  setup_.input_format = std::string(X.format->name);
  const char* math = op_ == AxisOp::kSoftmax      ? "e^x_i / sum_j e^x_j"
                     : op_ == AxisOp::kLogSoftmax ? "x_i - log sum_j e^x_j"
                     : op_ == AxisOp::kRmsNorm    ? "x_i w_i / sqrt(mean_j x_j^2 + eps)"
                                                  : "(x_i - mean) / sqrt(var + eps) w_i + b_i (biased var)";
  setup_.formula = Cat("out = ", in_.op, " along axis ", axis_, " (n = ", n_, ") in the platform's formula ",
                       "and formats; exact = ", math, norm ? Cat(", eps = ", Num(eps_)) : "", ", exactly");
  NoteBf16Fit(O, "the output", setup_.notes);
  AddFileProvenance(setup_.provenance, "X", X);
  if (in_.weight != nullptr) AddFileProvenance(setup_.provenance, "weight", *in_.weight);
  if (in_.bias != nullptr) AddFileProvenance(setup_.provenance, "bias", *in_.bias);
  AddFileProvenance(setup_.provenance, "out", O);
  if (norm) setup_.provenance.emplace_back("eps", Num(eps_));
  setup_.provenance.emplace_back("tool", ToolVersion());
  return absl::OkStatus();
}

AxisParams AxisAuditOp::Params() const {
  AxisParams p;
  p.eps = eps_ > 0 ? eps_ : 1e-5;
  if (!weight_.empty()) {
    p.weight_format = in_.weight->format;
    p.weight = weight_;
  }
  if (!bias_.empty()) {
    p.bias_format = in_.bias->format;
    p.bias = bias_;
  }
  return p;
}

CompositeFunction::Row AxisAuditOp::ModelRow(std::span<const uint64_t> x, double eps) const {
  CompositeFunction::Row row = CompositeRow(x, Params());
  row.eps = eps;
  return row;
}

absl::Status AxisAuditOp::ExactRow(const std::vector<uint64_t>& x, std::vector<ExactEnclosure>& out) const {
  out.resize(x.size());
  return AxisEncloseRow(op_, *in_.x->format, x, Params(), OpEnv{}, out);
}

absl::Status AxisAuditOp::EmulateRow(size_t p, const std::vector<uint64_t>& x,
                                     const std::vector<ExactEnclosure>& exact,
                                     std::vector<Emulated>& out) const {
  const CompositeFunction& f = *platforms_.functions[p];
  const FormatSpec& O = *setup_.out_format;
  out.resize(x.size());
  std::vector<uint64_t> bits(x.size());
  std::vector<Enclosure> enc(x.size());
  if (f.correctly_rounded) {
    if (absl::Status s = AxisRound(op_, *f.input, x, 1, n_, Params(), *f.output, OpEnv{}, bits, nullptr); !s.ok()) {
      return s;
    }
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = ToDouble(*f.output, bits[i]);
      enc[i] = {v, v};
    }
  } else {
    const CompositeFunction::Row row = ModelRow(x, eps_);
    if (absl::Status s = f.EmulateRow(row, bits); !s.ok()) return s;
    if (absl::Status s = f.EncloseRow(row, enc); !s.ok()) return s;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    out[i] = EmulatedFromEnclosure(bits[i], enc[i].lo, enc[i].hi, *f.output, O, in_.out_rounding, exact[i].lo,
                                   exact[i].hi);
  }
  return absl::OkStatus();
}

absl::Status AxisAuditOp::EmulateBlock(int64_t e0, int64_t e1, std::vector<std::vector<Emulated>>& emu) {
  const size_t np = platforms_.models.size();
  for (size_t p = 0; p < np; ++p) emu[p].assign(static_cast<size_t>(e1 - e0), Emulated{});
  block_e0_ = e0;
  block_exact_.assign(static_cast<size_t>(e1 - e0), ExactEnclosure{});
  // The block's rows (every slice of n x inner elements holds `inner` rows), split over threads;
  // each row writes only its own elements. The first error of a thread (in row order) is kept.
  const int64_t slice = n_ * inner_;
  const int64_t nrows = (e1 - e0) / slice * inner_;
  const int threads = std::max(1, options_.threads);
  std::mutex mu;
  int64_t error_row = -1;
  absl::Status error;
  RunRanges(nrows, threads, [&](int64_t b, int64_t end) {
    std::vector<uint64_t> x;
    std::vector<ExactEnclosure> exact;
    std::vector<Emulated> row;
    for (int64_t r = b; r < end; ++r) {
      const int64_t start = e0 + (r / inner_) * slice + r % inner_;
      ReadRow(*in_.x, start, x);
      absl::Status st = ExactRow(x, exact);
      for (size_t p = 0; st.ok() && p < np; ++p) {
        st = EmulateRow(p, x, exact, row);
        if (!st.ok()) break;
        for (int64_t i = 0; i < n_; ++i) emu[p][static_cast<size_t>(start + i * inner_ - e0)] = row[static_cast<size_t>(i)];
      }
      if (!st.ok()) {
        const std::lock_guard<std::mutex> lock(mu);
        if (error_row < 0 || r < error_row) {  // The first row's error, whatever the split.
          error_row = r;
          error = st;
        }
        return;
      }
      for (int64_t i = 0; i < n_; ++i) block_exact_[static_cast<size_t>(start + i * inner_ - e0)] = exact[static_cast<size_t>(i)];
    }
  });
  if (!error.ok()) return error;
  return absl::OkStatus();
}

ExactEnclosure AxisAuditOp::ExactOutsideBlock(int64_t e) const {
  std::vector<uint64_t> x;
  std::vector<ExactEnclosure> exact;
  ReadRow(*in_.x, RowStart(e), x);
  return ExactRow(x, exact).ok() ? exact[static_cast<size_t>(EntryOf(e))] : ExactEnclosure{NAN, NAN, NAN, false};
}

Emulated AxisAuditOp::EmulateOne(int64_t e, size_t p, OpScratch&) const {
  std::vector<uint64_t> x;
  std::vector<ExactEnclosure> exact;
  std::vector<Emulated> row;
  ReadRow(*in_.x, RowStart(e), x);
  if (!ExactRow(x, exact).ok() || !EmulateRow(p, x, exact, row).ok()) return Emulated{0, NAN};
  return row[static_cast<size_t>(EntryOf(e))];
}

double AxisAuditOp::AbsSum(int64_t, OpScratch& scratch) const {
  return std::fabs(static_cast<Scratch&>(scratch).exact.nearest);
}

std::string AxisAuditOp::Diagnose(int64_t e, size_t p, OpScratch&, const ExactFacts& facts, uint64_t y,
                                  double bound) const {
  const FormatSpec& out = *setup_.out_format;
  const double yd = ToDouble(out, y), ex = facts.x;
  const Relation rel(out, yd, bound);
  const auto holds = [&](double r) { return rel.Holds(r); };
  if (std::string d = rel.ZeroOrSignFlip(ex, Cat(in_.op, "(x)")); !d.empty()) return d;
  std::vector<uint64_t> x;
  ReadRow(*in_.x, RowStart(e), x);
  const size_t i = static_cast<size_t>(EntryOf(e));
  // A variant of the formula: does some implementation of it, with the platform's compute
  // format and accuracies (binary64 and correctly rounded functions for a correctly rounded
  // platform: the variant computed accurately), give y? y within the variant's enclosure, give or
  // take half an ulp of the output.
  const CompositeFunction& platform = *platforms_.functions[p];
  const FormatSpec& F = platform.correctly_rounded ? Float64() : *platform.formula.compute;
  const auto variant = [&](const char* text, double eps) -> bool {
    absl::StatusOr<composite::Formula> f = composite::ParseFormula(text, F);
    if (!f.ok()) return false;
    CompositeFunction fn;
    fn.kind = composite::CompositeKind::kAxis;
    fn.input = in_.x->format;
    fn.output = &out;
    fn.formula = *std::move(f);
    if (!platform.correctly_rounded) {
      fn.accuracy = platform.accuracy;
      fn.contract = platform.contract;
    }
    std::vector<Enclosure> enc(x.size());
    if (!fn.EncloseRow(ModelRow(x, eps), enc).ok()) return false;
    const double h = HalfUlpAt(out, std::fabs(yd));
    return std::isfinite(yd) && yd >= enc[i].lo - h && yd <= enc[i].hi + h;
  };
  std::span<const Variant> variants;
  switch (op_) {
    case AxisOp::kSoftmax: variants = kSoftmaxVariants; break;
    case AxisOp::kLogSoftmax: variants = kLogSoftmaxVariants; break;
    case AxisOp::kRmsNorm: variants = kRmsNormVariants; break;
    case AxisOp::kLayerNorm: variants = kLayerNormVariants; break;
  }
  for (const Variant& v : variants) {
    if (variant(v.formula, eps_)) return v.what;
  }
  // Another eps, with the platform's own formula (or the textbook one for a correctly rounded model).
  if (op_ == AxisOp::kRmsNorm || op_ == AxisOp::kLayerNorm) {
    const CompositeFunction& f = platform;
    const std::string text = f.correctly_rounded
                                 ? (op_ == AxisOp::kRmsNorm ? "x * rsqrt(mean(x * x) + eps) * w"
                                                            : "(x - mean(x)) * rsqrt(mean((x - mean(x)) * (x - mean(x))) + eps) * w + b")
                                 : f.formula.text;
    for (double other : kOtherEps) {
      if (other == eps_) continue;
      if (variant(text.c_str(), other) && !holds(ex)) {
        return Cat("another eps: ", Num(other), " instead of ", Num(eps_));
      }
    }
  }
  // The op along another axis.
  const Tensor& X = *in_.x;
  const int rank = static_cast<int>(X.shape.size());
  const std::vector<int64_t> index = Unflatten(e, X.shape);
  for (int d = 0; d < rank; ++d) {
    if (d == axis_ || X.shape[static_cast<size_t>(d)] < 2) continue;
    if ((op_ == AxisOp::kRmsNorm || op_ == AxisOp::kLayerNorm) && X.shape[static_cast<size_t>(d)] != n_) continue;
    int64_t stride = 1;
    for (int k = d + 1; k < rank; ++k) stride *= X.shape[static_cast<size_t>(k)];
    const int64_t start = e - index[static_cast<size_t>(d)] * stride;
    std::vector<uint64_t> row(static_cast<size_t>(X.shape[static_cast<size_t>(d)]));
    for (size_t k = 0; k < row.size(); ++k) row[k] = X.Bits(start + static_cast<int64_t>(k) * stride);
    std::vector<uint64_t> bits(row.size());
    if (AxisRound(op_, *X.format, row, 1, static_cast<int64_t>(row.size()), Params(), out, OpEnv{}, bits, nullptr).ok() &&
        holds(ToDouble(out, bits[static_cast<size_t>(index[static_cast<size_t>(d)])]))) {
      return Cat(in_.op, " along axis ", d, ", not ", axis_, ": the wrong axis?");
    }
  }
  return rel.PowerOfTwoOrNone(ex);
}

}  // namespace
}  // namespace audit_internal

absl::StatusOr<AuditResult> AuditAxis(const AxisAuditInput& in, const AuditOptions& options) {
  return audit_internal::RunOp<audit_internal::AxisAuditOp>(in, options);
}

}  // namespace fpconform::reports
