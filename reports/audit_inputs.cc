#include "reports/audit_inputs.h"

#include <cmath>

#include "base/hash.h"
#include "base/str_cat.h"
#include "formats/text.h"
#include "reports/audit_values.h"

#ifndef FPCONFORM_REPORT_VERSION
#define FPCONFORM_REPORT_VERSION "0"
#endif

namespace fpconform::reports::audit_internal {

absl::Status CheckFloat(const Tensor& t, const char* role) {
  if (t.format == nullptr || t.format->kind != FormatKind::kFloat) {
    return absl::InvalidArgumentError(Cat(t.source, ": ", role, " has dtype ", t.dtype,
                                          ": the audit takes float tensors"));
  }
  return absl::OkStatus();
}

absl::Status CheckXAndOut(const Tensor* x, const Tensor* out, std::string_view op) {
  if (x == nullptr || out == nullptr) return absl::InvalidArgumentError(Cat("audit ", op, " needs --x and --out"));
  for (const auto& [t, role] : {std::pair{x, "X"}, {out, "the output"}}) {
    if (absl::Status s = CheckFloat(*t, role); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<int> ResolveAxis(const Tensor& x, int axis, std::string_view op) {
  const int rank = static_cast<int>(x.shape.size());
  if (rank < 1) return absl::InvalidArgumentError(Cat(x.source, ": ", op, " needs at least a 1-D tensor"));
  const int resolved = axis < 0 ? axis + rank : axis;
  if (resolved < 0 || resolved >= rank) {
    return absl::InvalidArgumentError(Cat("--axis ", axis, ": out of range for ", x.source, " of rank ", rank));
  }
  return resolved;
}

absl::StatusOr<InputReader> MakeInputReader(const Tensor& t, const FormatSpec& want,
                                            const std::optional<OpEnv>& cast, const char* role,
                                            const std::string& platform,
                                            std::vector<std::string>& notes) {
  InputReader r{&t, &want, cast};
  if (t.format == &want) return r;
  if (t.format == nullptr) {
    return absl::InvalidArgumentError(Cat(t.source, ": ", role, " has dtype ", t.dtype,
                                          ", which no platform takes"));
  }
  if (!cast.has_value()) {
    return absl::InvalidArgumentError(
        Cat(t.source, ": ", role, " is ", t.format->name, " but platform ", platform, " takes ",
            want.name, " inputs; give --cast-inputs MODE (rne, rtz, ...) if the kernel converted "
            "them, or choose a platform for ", t.format->name, " (see `fpconform models`)"));
  }
  int64_t inexact = 0;
  for (int64_t i = 0; i < t.size(); ++i) {
    if (Convert(*t.format, want, t.Bits(i), *cast).flags & kInexact) ++inexact;
  }
  notes.push_back(Cat(role, " converted from ", t.format->name, " to ", want.name, " (",
                      RoundingName(*cast), cast->saturate ? ", sat" : "", "): ", inexact, " of ",
                      t.size(), " values changed"));
  return r;
}

void NoteBf16Fit(const Tensor& t, const char* role, std::vector<std::string>& notes) {
  std::optional<std::string> fit = NarrowestExactFloat(t);
  if (fit.has_value()) {
    notes.push_back(Cat(role, " (", t.dtype, "): values fit ", *fit, ": the kernel probably ",
                        "computed in ", *fit, " and saved .float()"));
  }
}

void AddFileProvenance(std::vector<std::pair<std::string, std::string>>& prov, const char* role,
                       const Tensor& t) {
  const std::string_view bytes(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  prov.emplace_back(Cat("tensor ", role), Cat(t.source, " ", t.dtype, ShapeText(t.shape), " ",
                                                HexHash(Fnv1a(bytes))));
  for (const auto& [k, v] : t.metadata) {
    if (k.rfind("metadata.", 0) == 0) prov.emplace_back(Cat("tensor ", role, " ", k), v);
  }
}

bool BroadcastBatch(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                    std::vector<int64_t>& out) {
  const size_t n = std::max(a.size(), b.size());
  out.assign(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

int64_t BatchOffset(const std::vector<int64_t>& bi, const std::vector<int64_t>& shape) {
  int64_t off = 0;
  const size_t skip = bi.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    off = off * shape[d] + (shape[d] == 1 ? 0 : bi[d + skip]);
  }
  return off;
}

absl::StatusOr<std::vector<double>> ScaleValues(const Tensor* t, int64_t expected,
                                                const char* role) {
  if (t == nullptr) return std::vector<double>{1.0};
  if (t->format == nullptr || t->format->kind != FormatKind::kFloat) {
    return absl::InvalidArgumentError(Cat(t->source, ": ", role, " must be a float tensor"));
  }
  if (t->size() != 1 && t->size() != expected) {
    return absl::InvalidArgumentError(Cat(t->source, ": ", role, " has ", t->size(),
                                          " elements: expected 1 (per tensor) or ", expected));
  }
  std::vector<double> v(static_cast<size_t>(t->size()));
  for (int64_t i = 0; i < t->size(); ++i) {
    v[static_cast<size_t>(i)] = ToDouble(*t->format, t->Bits(i));
    const OpResult r = Convert(*t->format, Float32(), t->Bits(i), OpEnv{});
    if (!std::isfinite(v[static_cast<size_t>(i)]) || (r.flags & kInexact)) {
      return absl::InvalidArgumentError(Cat(t->source, ": ", role, "[", i, "] = ",
                                            Num(v[static_cast<size_t>(i)]),
                                            ": scales must be finite float32 values"));
    }
  }
  return v;
}

std::string ToolVersion() { return Cat("fpconform ", FPCONFORM_REPORT_VERSION); }

}  // namespace fpconform::reports::audit_internal
