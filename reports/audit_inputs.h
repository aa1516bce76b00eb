// Checks and readers of the tensors an audit receives (internal to the audit library): dtype and
// shape checks with messages that name the file, reading an input in the platform's format (as
// it is, or converted under --cast-inputs), scale tensors, numpy.matmul's batch broadcast, and
// the provenance lines of every file.
#ifndef FPCONFORM_REPORTS_AUDIT_INPUTS_H_
#define FPCONFORM_REPORTS_AUDIT_INPUTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cases/tensor_file.h"
#include "formats/op_env.h"
#include "formats/ops.h"

namespace fpconform::reports::audit_internal {

// InvalidArgument naming the file and role unless t holds a float format.
absl::Status CheckFloat(const Tensor& t, const char* role);

// `audit <op>`'s X and output (sum, elementwise, the axis ops): InvalidArgument unless both are
// given and hold float formats.
absl::Status CheckXAndOut(const Tensor* x, const Tensor* out, std::string_view op);

// Axis `axis` of x (negative counts from the end) for `op` along it: InvalidArgument naming x's
// file when x is a scalar or the axis is out of range.
absl::StatusOr<int> ResolveAxis(const Tensor& x, int axis, std::string_view op);

// A tensor's elements in the platform's input format `want`: as they are, or converted under
// `cast`. Nothing is copied: the ops fetch the rows and columns they need.
struct InputReader {
  const Tensor* t = nullptr;
  const FormatSpec* want = nullptr;
  std::optional<OpEnv> cast;
  uint64_t Get(int64_t i) const {
    const uint64_t v = t->Bits(i);
    return t->format == want ? v : Convert(*t->format, *want, v, *cast).bits;
  }
};

// The reader of t in `want`; without `cast` a format mismatch is an error naming both formats
// and the platform. A conversion adds a note counting the values it changed.
absl::StatusOr<InputReader> MakeInputReader(const Tensor& t, const FormatSpec& want,
                                            const std::optional<OpEnv>& cast, const char* role,
                                            const std::string& platform,
                                            std::vector<std::string>& notes);

// A note when a wider float tensor's values all fit a narrower float format (a .float() copy).
void NoteBf16Fit(const Tensor& t, const char* role, std::vector<std::string>& notes);

// "tensor <role>": file, dtype, shape and content hash; the file's metadata.* entries.
void AddFileProvenance(std::vector<std::pair<std::string, std::string>>& prov, const char* role,
                       const Tensor& t);

// numpy.matmul's broadcast of two batch shapes into `out`; false when they do not broadcast.
bool BroadcastBatch(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                    std::vector<int64_t>& out);
// Flat batch offset into an operand with batch shape `shape` for broadcast batch index `bi`.
int64_t BatchOffset(const std::vector<int64_t>& bi, const std::vector<int64_t>& shape);

// The values of a scale tensor (1 or `expected` finite float32 values; {1} when t is null).
absl::StatusOr<std::vector<double>> ScaleValues(const Tensor* t, int64_t expected,
                                                const char* role);

// "fpconform <version>" for the provenance's "tool" line.
std::string ToolVersion();

}  // namespace fpconform::reports::audit_internal

#endif  // FPCONFORM_REPORTS_AUDIT_INPUTS_H_
