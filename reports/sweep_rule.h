// Internal to the tolerance sweep (reports/sweep.h): the tolerance rule shared by the sections
// whose rows cover a per-element error e_i = max(factor * observed, bound) (the composite
// kernels' [composite] and attention's [attention]): the tightest assert_close pair covering every
// e_i, and the spacing of a format at a value.
//
// Example: CoveringRtolAtol({1e-3, 2e-3}, {1, 2}) is about {1e-3, 0}: the errors are relative.
#ifndef FPCONFORM_REPORTS_SWEEP_RULE_H_
#define FPCONFORM_REPORTS_SWEEP_RULE_H_

#include <utility>
#include <vector>

#include "formats/format_spec.h"

namespace fpconform::reports::sweep_internal {

// Among the (rtol, atol) pairs with e_i <= atol + rtol |ref_i| for every i, the one with the least
// atol + rtol * median |ref| (relative errors give atol about 0, absolute ones rtol about 0). The
// atol is rounded up by 2^-40 relative so that the comparison in binary64 cannot fail. e and ref
// have the same size; empty: {0, 0}.
std::pair<double, double> CoveringRtolAtol(const std::vector<double>& e, const std::vector<double>& ref);

// The spacing of format f at |x| (its subnormal spacing below the normal range; at a power of two
// the spacing above it).
double UlpAt(const FormatSpec& f, double x);

}  // namespace fpconform::reports::sweep_internal

#endif  // FPCONFORM_REPORTS_SWEEP_RULE_H_
