// `fpconform audit elementwise` as an op of the audit pipeline (audit.h, AuditElementwise).
#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "base/run_workers.h"
#include "base/str_cat.h"
#include "composite/model.h"
#include "formats/ops.h"
#include "oracles/elementary.h"
#include "reports/audit.h"
#include "reports/audit_composite.h"
#include "reports/audit_inputs.h"
#include "reports/audit_op.h"
#include "reports/audit_values.h"

namespace fpconform::reports {
namespace audit_internal {
namespace {

using composite::CompositeFunction;
using composite::CompositeModel;
using composite::Enclosure;

class ElementwiseOp : public EnclosureOp {
 public:
  ElementwiseOp(const ElementwiseAuditInput& in, const AuditOptions& options)
      : in_(in), options_(options) {}

  absl::Status Init();

  const char* Name() const override { return "elementwise"; }
  int64_t BlockEnd(int64_t e0) const override { return e0 + (1 << 16); }
  absl::Status EmulateBlock(int64_t e0, int64_t e1, std::vector<std::vector<Emulated>>& emu) override;
  Emulated EmulateOne(int64_t e, size_t p, OpScratch& s) const override;
  double AbsSum(int64_t e, OpScratch& s) const override;
  std::string Diagnose(int64_t e, size_t p, OpScratch& s, const ExactFacts& x, uint64_t y,
                       double bound) const override;

 private:
  // A listed element's enclosure: the tightest (ElementaryEnclose, for its evidence); the hot
  // pass takes the block's fast ones.
  ExactEnclosure ExactOutsideBlock(int64_t e) const override;
  // The exact value of fn(x): the certified binary64 enclosure where it applies (a few ulps of
  // binary64 wide), ElementaryEnclose (MPFR) elsewhere.
  ExactEnclosure FastExact(uint64_t x) const;
  // Platform p's value and bound for input bits x, whose exact value is enclosed by `exact`.
  Emulated Emulate(size_t p, uint64_t x, const ExactEnclosure& exact) const;
  // fn's correctly rounded value of x in the output file's format.
  uint64_t Rounded(ElementaryFn fn, uint64_t x) const;

  const ElementwiseAuditInput& in_;
  const AuditOptions& options_;
  ElementaryFn fn_ = ElementaryFn::kExp;
  CompositePlatforms platforms_;
  const FormatSpec* in_format_ = nullptr;
};

absl::Status ElementwiseOp::Init() {
  if (absl::Status s = CheckXAndOut(in_.x, in_.out, "elementwise"); !s.ok()) return s;
  const Tensor& X = *in_.x;
  const Tensor& O = *in_.out;
  absl::StatusOr<ElementaryFn> fn = ParseElementaryFn(in_.fn);
  if (!fn.ok()) return absl::InvalidArgumentError(Cat("--fn: ", fn.status().message()));
  fn_ = *fn;
  if (X.shape != O.shape) {
    return absl::InvalidArgumentError(Cat(O.source, ": the output has shape ", ShapeText(O.shape),
                                          ", expected X's ", ShapeText(X.shape), " (", X.source,
                                          ") for an elementwise op"));
  }
  if (absl::Status st = platforms_.Resolve(composite::CompositeKind::kElementwise, in_.fn, *X.format,
                                           *O.format, options_, in_.out_rounding, setup_);
      !st.ok()) {
    return st;
  }
  in_format_ = X.format;
  setup_.out = &O;
  setup_.out_format = O.format;
  setup_.out_shape = O.shape;
  setup_.elements = O.size();
  setup_.k = 1;
  setup_.progress_label = Cat(in_.fn, " elements");
  setup_.input_format = std::string(X.format->name);
  setup_.formula = Cat("out = ", in_.fn, "(x) elementwise in the platform's formula and formats; exact = ",
                       in_.fn, "(x) of the input as received, exactly (oracles/elementary.h)");
  NoteBf16Fit(O, "the output", setup_.notes);
  AddFileProvenance(setup_.provenance, "X", X);
  AddFileProvenance(setup_.provenance, "out", O);
  setup_.provenance.emplace_back("tool", ToolVersion());
  return absl::OkStatus();
}

uint64_t ElementwiseOp::Rounded(ElementaryFn fn, uint64_t x) const {
  OpEnv env = in_.out_rounding;
  return ElementaryRound(fn, *in_format_, x, *setup_.out_format, env).bits;
}

Emulated ElementwiseOp::Emulate(size_t p, uint64_t x, const ExactEnclosure& exact) const {
  const CompositeFunction& f = *platforms_.functions[p];
  if (f.correctly_rounded) {
    const uint64_t bits = ElementaryRound(fn_, *in_format_, x, *f.output, OpEnv{}).bits;
    const double v = ToDouble(*f.output, bits);
    return EmulatedFromEnclosure(bits, v, v, *f.output, *setup_.out_format, in_.out_rounding, exact.lo,
                                 exact.hi);
  }
  const Enclosure e = f.Enclose(x);
  return EmulatedFromEnclosure(f.Emulate(x), e.lo, e.hi, *f.output, *setup_.out_format, in_.out_rounding,
                               exact.lo, exact.hi);
}

ExactEnclosure ElementwiseOp::FastExact(uint64_t x) const {
  ExactEnclosure e;
  if (ElementaryEncloseFast(fn_, *in_format_, x, &e.lo, &e.hi)) {
    e.nearest = e.lo + (e.hi - e.lo) / 2;  // In [lo, hi]: the error measure adds hi - lo.
    return e;
  }
  return ElementaryEnclose(fn_, *in_format_, x, OpEnv{});
}

absl::Status ElementwiseOp::EmulateBlock(int64_t e0, int64_t e1,
                                         std::vector<std::vector<Emulated>>& emu) {
  for (size_t p = 0; p < platforms_.models.size(); ++p) emu[p].resize(static_cast<size_t>(e1 - e0));
  block_e0_ = e0;
  block_exact_.resize(static_cast<size_t>(e1 - e0));
  std::vector<uint64_t> xs(static_cast<size_t>(e1 - e0)), rounded(xs.size());
  for (int64_t e = e0; e < e1; ++e) xs[static_cast<size_t>(e - e0)] = in_.x->Bits(e);
  const int threads = std::max(1, options_.threads);
  RunRanges(static_cast<int64_t>(xs.size()), threads, [&](int64_t b, int64_t end) {
    for (int64_t i = b; i < end; ++i) block_exact_[static_cast<size_t>(i)] = FastExact(xs[static_cast<size_t>(i)]);
  });
  for (size_t p = 0; p < platforms_.models.size(); ++p) {
    const CompositeFunction& f = *platforms_.functions[p];
    if (f.correctly_rounded) {
      // The oracle's batch path (certified binary64, MPFR where it cannot decide).
      if (absl::Status st = ElementaryRoundBatch(fn_, *in_format_, xs, *f.output, OpEnv{}, rounded, {},
                                                 nullptr, threads);
          !st.ok()) {
        return st;
      }
      for (size_t i = 0; i < xs.size(); ++i) {
        const double v = ToDouble(*f.output, rounded[i]);
        emu[p][i] = EmulatedFromEnclosure(rounded[i], v, v, *f.output, *setup_.out_format, in_.out_rounding,
                                          block_exact_[i].lo, block_exact_[i].hi);
      }
      continue;
    }
    RunRanges(static_cast<int64_t>(xs.size()), threads, [&](int64_t b, int64_t end) {
      for (int64_t i = b; i < end; ++i) {
        emu[p][static_cast<size_t>(i)] = Emulate(p, xs[static_cast<size_t>(i)], block_exact_[static_cast<size_t>(i)]);
      }
    });
  }
  return absl::OkStatus();
}

ExactEnclosure ElementwiseOp::ExactOutsideBlock(int64_t e) const {
  return ElementaryEnclose(fn_, *in_format_, in_.x->Bits(e), OpEnv{});
}

Emulated ElementwiseOp::EmulateOne(int64_t e, size_t p, OpScratch& scratch) const {
  return Emulate(p, in_.x->Bits(e), static_cast<Scratch&>(scratch).exact);
}

double ElementwiseOp::AbsSum(int64_t, OpScratch& scratch) const {
  return std::fabs(static_cast<Scratch&>(scratch).exact.nearest);
}

std::string ElementwiseOp::Diagnose(int64_t e, size_t p, OpScratch&, const ExactFacts& facts,
                                    uint64_t y, double bound) const {
  const FormatSpec& out = *setup_.out_format;
  const uint64_t x = in_.x->Bits(e);
  const double yd = ToDouble(out, y), ex = facts.x;
  const Relation rel(out, yd, bound);
  const auto holds = [&](double r) { return rel.Holds(r); };
  if (std::string d = rel.ZeroOrSignFlip(ex, Cat(in_.fn, "(x)")); !d.empty()) return d;
  // Another function of the list, correctly rounded: the other GELU form first.
  std::vector<ElementaryFn> others;
  if (fn_ == ElementaryFn::kGelu) others.push_back(ElementaryFn::kGeluTanh);
  if (fn_ == ElementaryFn::kGeluTanh) others.push_back(ElementaryFn::kGelu);
  for (ElementaryFn g : AllElementaryFns()) {
    if (g != fn_ && std::find(others.begin(), others.end(), g) == others.end()) others.push_back(g);
  }
  for (ElementaryFn g : others) {
    const uint64_t v = Rounded(g, x);
    if (v == y || holds(ToDouble(out, v))) {
      const bool gelu_pair = (fn_ == ElementaryFn::kGelu || fn_ == ElementaryFn::kGeluTanh) &&
                             (g == ElementaryFn::kGelu || g == ElementaryFn::kGeluTanh);
      return gelu_pair ? Cat("the other GELU form: out = ", ElementaryFnName(g),
                             "(x), not ", in_.fn, "(x) (approximate='",
                             g == ElementaryFn::kGeluTanh ? "tanh" : "none", "'?)")
                       : Cat("equals ", ElementaryFnName(g), "(x), not ", in_.fn, "(x): the wrong function?");
    }
  }
  // The formula with every step in bfloat16, or the input rounded to bfloat16 first.
  const CompositeFunction& f = *platforms_.functions[p];
  if (!f.correctly_rounded && f.formula.compute != &BFloat16()) {
    absl::StatusOr<composite::Formula> bf = composite::ParseFormula(f.formula.text, BFloat16());
    if (bf.ok()) {
      const uint64_t xb = Convert(*in_format_, BFloat16(), x, OpEnv{}).bits;
      const uint64_t v = Convert(BFloat16(), out, composite::FormulaValue(*bf, xb), OpEnv{}).bits;
      if (v == y) return "computed in bfloat16 (every step of the formula rounded to bfloat16)";
    }
  }
  if (in_format_ != &BFloat16()) {
    const uint64_t xb = Convert(*in_format_, BFloat16(), x, OpEnv{}).bits;
    const uint64_t v = ElementaryRound(fn_, BFloat16(), xb, out, OpEnv{}).bits;
    if (v == y || (rel.Nonzero(ex) && holds(ToDouble(out, v)) && v != Rounded(fn_, x))) {
      return Cat("the input rounded to bfloat16 first (out = ", in_.fn, "(bfloat16(x)))");
    }
  }
  return rel.PowerOfTwoOrNone(ex);
}

}  // namespace
}  // namespace audit_internal

absl::StatusOr<AuditResult> AuditElementwise(const ElementwiseAuditInput& in, const AuditOptions& options) {
  return audit_internal::RunOp<audit_internal::ElementwiseOp>(in, options);
}

}  // namespace fpconform::reports
