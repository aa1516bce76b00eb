// The reduction ops of the audit pipeline (internal): matmul and sum, whose every output element
// is a dot of K products or a sum of K values evaluated under an accumulation model
// (accumulation/evaluate.h) and exactly (oracles/exact_sum.h). ReductionOp holds what the two
// share: the platforms (models and envelopes of the model catalog), the tolerance rule, the
// output stage (scales, conversion into the output file's format), the exact value, the
// diagnoses and the K-tile mutations. MatmulOp (audit_matmul.cc) and SumOp (audit_sum.cc) say
// how an element's operands are read.
#ifndef FPCONFORM_REPORTS_AUDIT_REDUCTION_H_
#define FPCONFORM_REPORTS_AUDIT_REDUCTION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "accumulation/evaluate.h"
#include "accumulation/model.h"
#include "accumulation/model_catalog.h"
#include "oracles/exact_sum.h"
#include "reports/audit_op.h"
#include "reports/audit_values.h"

namespace fpconform::reports::audit_internal {

class ReductionOp : public AuditOp {
 public:
  std::unique_ptr<OpScratch> NewScratch() const override;
  void Exact(int64_t e, bool in_block, OpScratch& s, ExactFacts& x) const override;
  Emulated EmulateOne(int64_t e, size_t p, OpScratch& s) const override;
  double AbsSum(int64_t e, OpScratch& s) const override;
  std::string Diagnose(int64_t e, size_t p, OpScratch& s, const ExactFacts& x, uint64_t y,
                       double bound) const override;
  void Mutations(const AuditPlatform& p, std::vector<std::pair<std::string, double>>& rates,
                 std::vector<std::string>& sentences) const override;

  // The fit (audit_fit.cc; AUDIT.md "Fit"): fills r.fit from r's per-platform counts and the
  // operands, when options ask for it (AuditOptions::fit). Errors: cancellation, a model file of
  // a platform that cannot be read back.
  absl::Status Fit(AuditResult& r) const;

 protected:
  ReductionOp(bool sum, const AuditOptions& options)
      : sum_(sum), options_(options), catalog_(options.models_dir) {}

  // Element e's operands in the platform's input formats: a (and b for matmul; empty for sum)
  // and c in the final accumulator format (0 = +0).
  virtual void Read(int64_t e, std::vector<uint64_t>& a, std::vector<uint64_t>& b,
                    uint64_t& c) const = 0;
  // The hot pass's reader: spans into operands of the current block (no copy); false: Read.
  virtual bool View(int64_t e, std::span<const uint64_t>& a, std::span<const uint64_t>& b,
                    uint64_t& c) const;
  // Loads the exact unscaled sum of element e into acc when a certified oracle has it.
  virtual bool CertifiedExact(int64_t e, ExactAccumulator& acc) const;
  // scale_a[i] scale_b[j] exactly, and the two factors (1 without scales).
  virtual double Scale(int64_t e) const;
  virtual double ScaleA(int64_t e) const;
  virtual double ScaleB(int64_t e) const;
  // Block-scaled matmul (block_scaled_: the platforms' epilogue.scale = "block" and scales per K
  // block were given; MatmulOp): element e's block scales (spans into the op's state), and its
  // operands with its scales (block scales, or with c_after_scale_ its row's and column's)
  // multiplied in, as float64 bits (exact: inputs of <= 24 significand bits times float32
  // scales). With operands_scaled_ the exact value, |terms|, the diagnoses and the mutations run
  // on the scaled operands; with block_scaled_ EmulateOne runs EvaluateBlockScaledDot.
  virtual BlockScales ElementBlockScales(int64_t e) const;
  virtual void ScaledOperands(int64_t e, std::span<const uint64_t> a, std::span<const uint64_t> b,
                              std::vector<uint64_t>& x, std::vector<uint64_t>& y) const;
  // The hot pass's exact value of element e with scaled operands (without c) into acc (reset),
  // from the current block's precomputed data; false: not available (Exact then adds the
  // ScaledOperands' products).
  virtual bool FastScaledExact(int64_t e, ExactAccumulator& acc) const;
  // (A B^T)[i, j] from the element's row of A, and (A^T B)[i, j] from its column of B, scaled
  // (square operands only; nullopt otherwise): the transposed-operand diagnosis.
  virtual std::optional<double> TransposedB(int64_t e, std::span<const uint64_t> a) const;
  virtual std::optional<double> TransposedA(int64_t e, std::span<const uint64_t> b) const;

  // setup_.platforms and models_ from names (envelopes expanded; "auto": every preset with the
  // op whose input formats are fa, fb).
  absl::Status ResolvePlatforms(const std::vector<std::string>& names, const FormatSpec* fa,
                                const FormatSpec* fb);
  // The tolerance rule for every platform (when options ask for it): the sweep file read once,
  // then PlatformTolerance (reports/sweep.h) on each platform's parsed model; a platform the rule
  // cannot run for (or every platform, when the sweep file cannot be read) gets a note instead.
  void RecommendAll();
  // A note when the output file's format differs from the model's.
  void NoteOutputConversion(const Model& m0, const std::string& model_writes);
  // Platform p's value for element e in the output file's format: the model's epilogue
  // (accumulation/epilogue.h ApplyEpilogue: the scale, e.g. out = fl32(fl32(s_a s_b) * y), and
  // the conversion into out's format), the bound widened by both.
  // c_bits: the element's c where the platform adds it after its scales (c_after_scale_).
  Emulated PostProcess(size_t p, int64_t e, uint64_t model_bits, double model_bound,
                       const uint64_t* c_bits = nullptr) const;
  // The model whose evaluation PostProcess takes for platform p: models_[p], or with
  // c_after_scale_ its copy with epilogue.c = "chain", evaluated from c = +0 (the chain alone;
  // c enters in PostProcess, after the scale).
  const Model& EvalModel(size_t p) const { return c_after_scale_ ? chain_only_[p] : *models_[p]; }

  const bool sum_;
  const AuditOptions& options_;
  ModelCatalog catalog_;
  std::vector<const Model*> models_;  // Parallel to setup_.platforms.
  const FormatSpec* fa_ = nullptr;
  const FormatSpec* fb_ = nullptr;    // nullptr for sum.
  const FormatSpec* c_format_ = nullptr;  // Set when C enters the sum.
  bool scaled_ = false;        // Per-tensor or per-row/column scales (the epilogue's stage).
  bool block_scaled_ = false;  // Per-block scales (inside the chain).
  // C added after the scales (epilogue.c = "after_scale", with scales and a C): out =
  // fl32(S32 acc + C), exact S x + C.
  bool c_after_scale_ = false;
  std::vector<Model> chain_only_;  // c_after_scale_: ChainAloneModel of each of models_.
  // The exact value, |terms|, diagnoses and mutations take ScaledOperands (float64 operands with
  // their scales in) and add c unscaled: block_scaled_ or c_after_scale_.
  bool operands_scaled_ = false;
  OpEnv out_rounding_;

 private:
  struct Scratch;
};

}  // namespace fpconform::reports::audit_internal

#endif  // FPCONFORM_REPORTS_AUDIT_REDUCTION_H_
