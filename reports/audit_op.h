// The one audit pipeline (internal to the audit library; the public API is reports/audit.h).
//
// An op (matmul, sum, and the composite ops to come) describes, per output element, the exact
// value, each platform's emulated value in the output file's format with its bound B, and the
// op-specific evidence (the element's |terms| sum, diagnoses of unexplained elements, mutations
// the recommended tolerance should reject). RunAudit does the rest once for every op: the hot
// pass in the op's blocks on worker threads, the classification (Judge, audit.h "Classes"), the
// per-platform counts, the torch.testing-shaped summary figures, `auto`'s best platform, the
// listed elements and their diagnoses' dispatch, the soundness checks that need no op knowledge
// (all-zero and permuted outputs), the aggregate gate for the ops that ask for it (AggregateGate:
// relative L2 error and correlation with limits from the bounds), the mismatch map and the
// histogram.
//
// Threading contract: EmulateBlock runs on the calling thread; Exact (in_block = true) is then
// called concurrently from several threads for elements of that block, each thread with its own
// OpScratch, and must only read the op's state. Everything else runs on the calling thread.
#ifndef FPCONFORM_REPORTS_AUDIT_OP_H_
#define FPCONFORM_REPORTS_AUDIT_OP_H_

#include <mpfr.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "reports/audit.h"

namespace fpconform::reports::audit_internal {

// The exact value of one output element.
struct ExactFacts {
  bool nan = false, inf = false, negative = false;
  double x = 0;               // Rounded to double (RNE); +-inf or NaN for the non-finite.
  mpfr_srcptr mp = nullptr;   // The exact value (finite only), owned by the op's scratch.
  // An upper bound on |mp - exact| where mp only encloses a transcendental value (0: exact);
  // the pipeline adds it to |out - mp| (rounded up), so within_bound stays rigorous.
  double mp_error = 0;
};

// A platform's value for one element, in the output file's format, and its bound B.
struct Emulated {
  uint64_t bits = 0;
  double bound = 0;
};

// One platform the output is classed against, with the tolerance rule's recommendation.
struct AuditPlatform {
  std::string name;
  std::string hash;  // FNV-1a of the platform's definition (provenance).
  double rec_rtol = 0, rec_atol = 0, rec_ulp = 0, rec_bn = 0;
  bool has_rec = false;
};

// p's entry in the result: its name, recommendation and hash (the counts are the pass's to set).
PlatformAudit PlatformEntry(const AuditPlatform& p);

// What an op states before the pass.
struct AuditSetup {
  const Tensor* out = nullptr;
  const FormatSpec* out_format = nullptr;
  std::vector<int64_t> out_shape;
  int64_t elements = 0;
  int64_t k = 0;                             // Reduction length (printed; 1 for elementwise).
  std::vector<AuditPlatform> platforms;      // At least one; [0] gives the counts and verdict.
  std::vector<std::string> notes;
  std::string formula, input_format;
  std::vector<std::pair<std::string, std::string>> provenance;
  // Progress: (elements done / unit) of (elements / unit), e.g. rows of a matmul.
  std::string progress_label;
  int64_t progress_unit = 1;
};

// Per-thread working memory of an op (accumulators, MPFR values, an element's operands).
class OpScratch {
 public:
  virtual ~OpScratch() = default;
};

class AuditOp {
 public:
  virtual ~AuditOp() = default;
  virtual const char* Name() const = 0;  // "matmul", "sum": AuditResult::op.
  const AuditSetup& setup() const { return setup_; }

  // The hot pass visits elements in C order in blocks [e0, BlockEnd(e0)), BlockEnd(e0) > e0.
  virtual int64_t BlockEnd(int64_t e0) const = 0;
  // Makes [e0, e1) the current block and fills emu[p][e - e0] for every platform p.
  virtual absl::Status EmulateBlock(int64_t e0, int64_t e1,
                                    std::vector<std::vector<Emulated>>& emu) = 0;
  virtual std::unique_ptr<OpScratch> NewScratch() const = 0;
  // The exact value of element e into x (x.mp points into s). in_block: e lies in the current
  // block (the op may read that block's state). Loads e's operands into s: EmulateOne, AbsSum
  // and Diagnose take the same scratch after Exact of the same element.
  virtual void Exact(int64_t e, bool in_block, OpScratch& s, ExactFacts& x) const = 0;
  // Platform p's value for element e (a listed element's evidence).
  virtual Emulated EmulateOne(int64_t e, size_t p, OpScratch& s) const = 0;
  // sum |terms| of element e (|a_k b_k| times the scale, |x_k|; |exact| for elementwise ops).
  virtual double AbsSum(int64_t e, OpScratch& s) const = 0;
  // The first simple relation an unexplained finite output y holds to the exact value (bound: B
  // of platform p, the primary one), or "no simple relation found".
  virtual std::string Diagnose(int64_t e, size_t p, OpScratch& s, const ExactFacts& x, uint64_t y,
                               double bound) const = 0;
  // Whether the pipeline computes the aggregate gate (AuditResult::Aggregate: relative L2 error
  // and correlation against the exact output, limits from the primary platform's bounds) and
  // lets it fail the verdict. Attention opts in; the other ops keep their verdicts as they were.
  virtual bool AggregateGate() const { return false; }
  // Soundness against the op's mutations (the recommended tolerance of p on a pinned sample):
  // appends (case, accepted fraction) to rates and the sentences worth printing.
  virtual void Mutations(const AuditPlatform& p, std::vector<std::pair<std::string, double>>& rates,
                         std::vector<std::string>& sentences) const {
    (void)p;
    (void)rates;
    (void)sentences;
  }

 protected:
  AuditSetup setup_;
};

// Runs the audit of `op` (see the file comment); errors from the op's EmulateBlock, or
// CancelledError when options.cancelled says so between blocks.
//
// The primary platform (AuditResult::platforms[0], whose classes, counts and verdict the result
// gives) is the first one given, except when the first name in options.platforms is "auto": then
// it is the best-explaining one (BestPlatform), and the pass runs a second time against it when
// it is not the first (the cost of one more pass, paid only then).
absl::StatusOr<AuditResult> RunAudit(AuditOp& op, const AuditOptions& options);

// Builds an op of type Op from (input, options), checks and states it (Op::Init), and runs it:
// every public audit entry point (AuditMatmul, AuditSum, AuditElementwise, AuditAxis).
template <typename Op, typename Input>
absl::StatusOr<AuditResult> RunOp(const Input& input, const AuditOptions& options) {
  Op op(input, options);
  if (absl::Status s = op.Init(); !s.ok()) return s;
  return RunAudit(op, options);
}

// The best-explaining of several platforms' class counts: one that leaves no element
// unexplained if there is one (so an output that some platform explains never fails because of
// the choice), then the most bit-identical elements (the datapath that matches: a loose bound
// explains much and identifies nothing), then the most explained (identical + within_bound), then
// the first given.
size_t BestPlatform(const std::vector<std::array<int64_t, kAuditClasses>>& counts);

}  // namespace fpconform::reports::audit_internal

#endif  // FPCONFORM_REPORTS_AUDIT_OP_H_
