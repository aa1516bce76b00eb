// Internal to the tolerance sweep (reports/sweep.h): the tolerance rule shared by the sections
// whose rows cover a per-element error e_i = max(factor * observed, bound) (the composite
// kernels' [composite] and attention's [attention]): the tightest assert_close pair covering every
// e_i, and the spacing of a format at a value.
//
// Example: CoveringRtolAtol({1e-3, 2e-3}, {1, 2}) is about {1e-3, 0}: the errors are relative.
#ifndef FPCONFORM_REPORTS_SWEEP_RULE_H_
#define FPCONFORM_REPORTS_SWEEP_RULE_H_

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/str_cat.h"
#include "formats/format_spec.h"

namespace fpconform::reports::sweep_internal {

// The composite and attention sweeps' "no value" (a NaN bound: left out); their kUp is
// reports/stats.h's.
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Among the (rtol, atol) pairs with e_i <= atol + rtol |ref_i| for every i, the one with the least
// atol + rtol * median |ref| (relative errors give atol about 0, absolute ones rtol about 0). The
// atol is rounded up by 2^-40 relative so that the comparison in binary64 cannot fail. e and ref
// have the same size; empty: {0, 0}.
std::pair<double, double> CoveringRtolAtol(const std::vector<double>& e, const std::vector<double>& ref);

// The models a sweep section names (`platforms`, each a model of `all`), in that order, less those
// whose input format is not among `formats` (empty: every one), copied from `all`. Errors:
// "<source>: <table>.platforms: unknown <what> '<name>' in <dir> (valid: ...)". M has the members
// `name` and `input` (a FormatSpec pointer), as the composite and attention models.
template <class M>
absl::StatusOr<std::vector<M>> PickSweepModels(const std::vector<M>& all, const std::vector<std::string>& platforms,
                                               const std::vector<std::string>& formats, std::string_view source,
                                               std::string_view table, std::string_view what, std::string_view dir) {
  std::map<std::string, size_t, std::less<>> by_name;
  std::vector<std::string> names;
  for (size_t i = 0; i < all.size(); ++i) {
    by_name[all[i].name] = i;
    names.push_back(all[i].name);
  }
  std::vector<M> picked;
  for (const std::string& p : platforms) {
    const auto it = by_name.find(p);
    if (it == by_name.end()) {
      return absl::InvalidArgumentError(Cat(source, ": ", table, ".platforms: unknown ", what, " '", p, "' in ", dir,
                                            " (valid: ", Join(names, ", "), ")"));
    }
    const M& m = all[it->second];
    if (!formats.empty() && std::find(formats.begin(), formats.end(), m.input->name) == formats.end()) continue;
    picked.push_back(m);
  }
  return picked;
}

// The spacing of format f at |x| (its subnormal spacing below the normal range; at a power of two
// the spacing above it).
double UlpAt(const FormatSpec& f, double x);

}  // namespace fpconform::reports::sweep_internal

#endif  // FPCONFORM_REPORTS_SWEEP_RULE_H_
