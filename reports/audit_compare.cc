// `fpconform compare`: two outputs of the same inputs, each audited against its own platform
// through the pipeline, their difference checked against both platforms' bounds (audit.h); one
// comparison for every op (matmul and the composite ops).
#include <cmath>
#include <cstdint>
#include <span>

#include "base/str_cat.h"
#include "reports/audit.h"
#include "reports/audit_values.h"

namespace fpconform::reports {

using audit_internal::ShapeText;
using audit_internal::ToDouble;
using audit_internal::Unflatten;

namespace {

// Element by element (or LSE row by row), `ref` against `port`: consistent when the values are
// equal, both the same non-finite value, or |ref - port| is at most the sum of the two bounds;
// an inconsistent one is at fault on the side whose own audit left it unexplained. Tally is
// CompareResult (the outputs) or CompareResult::LseCompare: the same counters and list.
template <class Tally>
void TallyPairs(const Tensor& ref, const Tensor& port, std::span<const double> bound_ref,
                std::span<const double> bound_port, std::span<const uint8_t> class_ref,
                std::span<const uint8_t> class_port, int64_t max_listed, Tally& t) {
  const auto unexplained = static_cast<uint8_t>(AuditClass::kUnexplained);
  for (int64_t e = 0; e < ref.size(); ++e) {
    const auto i = static_cast<size_t>(e);
    const double yr = ToDouble(*ref.format, ref.Bits(e)), yp = ToDouble(*port.format, port.Bits(e));
    const double allowed = (bound_ref[i] + bound_port[i]) * kUp;
    const bool same_nonfinite = !std::isfinite(yr) && !std::isfinite(yp) &&
                                (std::isnan(yr) == std::isnan(yp)) && (std::isnan(yr) || yr == yp);
    if (same_nonfinite || yr == yp || std::fabs(yr - yp) * (1 + 0x1p-52) <= allowed) {
      ++t.consistent;
      continue;
    }
    ++t.inconsistent;
    const bool fr_bad = class_ref[i] == unexplained, fp_bad = class_port[i] == unexplained;
    const char* side = fr_bad && fp_bad ? "both" : fr_bad ? "ref" : fp_bad ? "port" : "neither";
    ++(fr_bad && fp_bad ? t.fault_both : fr_bad ? t.fault_ref : fp_bad ? t.fault_port : t.fault_neither);
    if (static_cast<int64_t>(t.listed.size()) < max_listed) t.listed.emplace_back(Unflatten(e, ref.shape), side);
  }
}

// Audits both sides with `audit` (each against its one platform, bounds kept) and checks each
// element's difference against the sum of the two bounds.
template <class Input>
absl::StatusOr<CompareResult> CompareOutputs(absl::StatusOr<AuditResult> (*audit)(const Input&, const AuditOptions&),
                                             const Input& ref, const std::string& platform_ref, const Input& port,
                                             const std::string& platform, const AuditOptions& options) {
  if (ref.out == nullptr || port.out == nullptr) {
    return absl::InvalidArgumentError("compare needs --out-ref and --out");
  }
  if (ref.out->shape != port.out->shape) {
    return absl::InvalidArgumentError(Cat("compare: ", ref.out->source, " has shape ",
                                          ShapeText(ref.out->shape), " but ", port.out->source,
                                          " has ", ShapeText(port.out->shape)));
  }
  AuditOptions o = options;
  o.keep_bounds = true;
  o.platforms = {platform_ref};
  CompareResult c;
  absl::StatusOr<AuditResult> a = audit(ref, o);
  if (!a.ok()) return a.status();
  o.platforms = {platform};
  absl::StatusOr<AuditResult> b = audit(port, o);
  if (!b.ok()) return b.status();
  c.ref = *std::move(a);
  c.port = *std::move(b);
  TallyPairs(*ref.out, *port.out, c.ref.bounds, c.port.bounds, c.ref.best_classes, c.port.best_classes,
             options.max_listed, c);
  c.verdict = c.inconsistent == 0 ? AuditVerdict::kPass : AuditVerdict::kFail;
  c.ref.bounds.clear();
  c.port.bounds.clear();
  return c;
}

// The two LSEs row by row (both audited with their bounds kept: AuditResult::LseAudit), as
// CompareOutputs does for the outputs; an inconsistent row fails the verdict.
void CompareLse(const Tensor& ref, const Tensor& port, const AuditOptions& options, CompareResult& c) {
  CompareResult::LseCompare& l = c.lse;
  l.run = true;
  TallyPairs(ref, port, c.ref.lse.bounds, c.port.lse.bounds, c.ref.lse.classes, c.port.lse.classes,
             options.max_listed, l);
  if (l.inconsistent > 0) c.verdict = AuditVerdict::kFail;
}

}  // namespace

absl::StatusOr<CompareResult> CompareMatmul(const MatmulAuditInput& ref, const std::string& platform_ref,
                                            const MatmulAuditInput& port, const std::string& platform,
                                            const AuditOptions& options) {
  return CompareOutputs(&AuditMatmul, ref, platform_ref, port, platform, options);
}

absl::StatusOr<CompareResult> CompareElementwise(const ElementwiseAuditInput& ref,
                                                 const std::string& platform_ref,
                                                 const ElementwiseAuditInput& port,
                                                 const std::string& platform, const AuditOptions& options) {
  return CompareOutputs(&AuditElementwise, ref, platform_ref, port, platform, options);
}

absl::StatusOr<CompareResult> CompareAxis(const AxisAuditInput& ref, const std::string& platform_ref,
                                          const AxisAuditInput& port, const std::string& platform,
                                          const AuditOptions& options) {
  return CompareOutputs(&AuditAxis, ref, platform_ref, port, platform, options);
}

absl::StatusOr<CompareResult> CompareAttention(const AttentionAuditInput& ref, const std::string& platform_ref,
                                               const AttentionAuditInput& port, const std::string& platform,
                                               const AuditOptions& options) {
  // The output compared with itself proves nothing: the same file is refused, the same bytes said.
  if (ref.out != nullptr && port.out != nullptr && ref.out->source == port.out->source) {
    return absl::InvalidArgumentError(Cat("compare attention: --out-ref and --out are the same file (",
                                          ref.out->source, "): an output compared with itself proves nothing; ",
                                          "give the reference kernel's output and the port's"));
  }
  if (ref.lse != nullptr && port.lse != nullptr && ref.lse->source == port.lse->source) {
    return absl::InvalidArgumentError(Cat("compare attention: --lse-ref and --lse are the same file (",
                                          ref.lse->source, "): give the reference kernel's LSE and the port's"));
  }
  absl::StatusOr<CompareResult> c = CompareOutputs(&AuditAttention, ref, platform_ref, port, platform, options);
  if (c.ok() && ref.lse != nullptr && port.lse != nullptr) CompareLse(*ref.lse, *port.lse, options, *c);
  if (c.ok()) {
    for (AuditResult* side : {&c->ref, &c->port}) {
      side->lse.classes.clear();
      side->lse.bounds.clear();
    }
  }
  if (c.ok() && ref.out->format == port.out->format) {
    bool same = true;
    for (int64_t e = 0; same && e < ref.out->size(); ++e) same = ref.out->Bits(e) == port.out->Bits(e);
    if (same) {
      c->notes.push_back(Cat("the reference's and the port's outputs are bit-identical (", ref.out->source, ", ",
                             port.out->source, "): their consistency holds trivially; the evidence is each "
                             "side's own audit against its platform"));
    }
  }
  return c;
}

}  // namespace fpconform::reports
