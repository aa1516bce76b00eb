// What the composite ops of the audit pipeline share (internal): the elementwise and axis audits
// (audit_elementwise.cc, audit_axis.cc) resolve their platforms among composite models
// (composite/model.h) and turn a model's value and enclosure into the pipeline's emulated bits
// and bound; they and the attention audit (audit_attention.cc) know exact values by binary64
// enclosures (EnclosureOp).
#ifndef FPCONFORM_REPORTS_AUDIT_COMPOSITE_H_
#define FPCONFORM_REPORTS_AUDIT_COMPOSITE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "composite/model.h"
#include "oracles/elementary.h"
#include "reports/audit_values.h"
#include "reports/audit.h"
#include "reports/audit_op.h"

namespace fpconform::reports::audit_internal {

// The platforms of a composite audit: the models of `dir` of that kind that implement `fn`.
struct CompositePlatforms {
  std::string dir;
  std::vector<composite::CompositeModel> catalog;
  std::vector<const composite::CompositeModel*> models;       // Parallel to setup.platforms.
  std::vector<const composite::CompositeFunction*> functions;

  // Loads the catalog (options.composite_models_dir, else the source tree's) and resolves
  // options.platforms into setup.platforms: names (an error names the valid ones, a model without
  // fn, or one whose input format is not x's) or "auto" (every model with fn whose input and
  // output formats are x's and out's). Adds the notes on output conversions and inexact models.
  absl::Status Resolve(composite::CompositeKind kind, const std::string& fn, const FormatSpec& x,
                       const FormatSpec& out, const AuditOptions& options, const OpEnv& out_rounding,
                       AuditSetup& setup);
};

// A model's value (bits of model_out) and enclosure [lo, hi] (values of model_out) as the
// pipeline's emulated value in `out` (converted under out_rounding, the enclosure's ends too:
// rounding is monotone) with bound B = max(hi - exact_lo, exact_hi - lo), the largest distance
// from the exact value of any output in the enclosure, plus the exact value's own enclosure width
// (which the pipeline adds to every measured error), rounded up; NaN (only identical explains)
// where there is no finite enclosure.
Emulated EmulatedFromEnclosure(uint64_t bits, double lo, double hi, const FormatSpec& model_out,
                               const FormatSpec& out, const OpEnv& out_rounding, double exact_lo,
                               double exact_hi);

// The pipeline's facts of an exact value known by its binary64 enclosure (oracles/elementary.h,
// axis_ops.h): nearest as the value (set into `value`), hi - lo as its error; NaN and Inf as
// such; an enclosure beyond binary64's range counts as the infinity of its sign (no finite error
// measure holds there).
void FactsFromEnclosure(const ExactEnclosure& x, Mpfr& value, ExactFacts& facts);

// The base of the ops whose exact values are binary64 enclosures (the elementwise, axis and
// attention audits): the current block's enclosures, which EmulateBlock fills, a scratch holding
// one element's enclosure, and Exact from them.
class EnclosureOp : public AuditOp {
 public:
  std::unique_ptr<OpScratch> NewScratch() const override { return std::make_unique<Scratch>(); }
  // Element e's enclosure, the block's (in_block) or ExactOutsideBlock(e), into the scratch and,
  // by FactsFromEnclosure, into x.
  void Exact(int64_t e, bool in_block, OpScratch& s, ExactFacts& x) const override;

 protected:
  struct Scratch : OpScratch {
    Mpfr x{64};
    ExactEnclosure exact;
  };
  // Element e's enclosure when it is not in the current block (a listed element's evidence);
  // {NaN, NaN, NaN, false} when it cannot be computed.
  virtual ExactEnclosure ExactOutsideBlock(int64_t e) const = 0;

  // The current block's exact enclosures (index e - block_e0_).
  int64_t block_e0_ = 0;
  std::vector<ExactEnclosure> block_exact_;
};

}  // namespace fpconform::reports::audit_internal

#endif  // FPCONFORM_REPORTS_AUDIT_COMPOSITE_H_
