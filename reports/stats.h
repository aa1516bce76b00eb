// Order statistics of the sweep's observations: max, 99th percentile and median by the
// nearest-rank method (the value at rank ceil(q * n) of the sorted sample, 1-based), so every
// reported statistic is an observed value. NaN observations sort above +inf (they are counted
// as the worst). An empty sample gives zeros.
//
// Example: Summarize({3, 1, 2}) == {max 3, p99 3, median 2}.
#ifndef FPCONFORM_REPORTS_STATS_H_
#define FPCONFORM_REPORTS_STATS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace fpconform::reports {

// Rounds the result of a few binary64 operations up, for bounds (the audit's and the sweeps'):
// 1 + 2^-50.
inline constexpr double kUp = 1 + 0x1p-50;

struct Summary {
  double max = 0, p99 = 0, median = 0;
};

// The 0-based index of the nearest-rank q-quantile in a sorted sample of n > 0 values.
inline size_t NearestRankIndex(size_t n, double q) {
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
  return std::clamp<size_t>(rank, 1, n) - 1;
}

// The nearest-rank statistics, found by selection instead of a sort (a
// quantize row summarizes 2 million values): nth_element puts the p99 value at its sorted index
// with no larger value before it and no smaller one after; the median's index is at most that
// one, so the median is selected among the values before it, and the max among those after.
inline Summary Summarize(std::vector<double> v) {
  if (v.empty()) return {};
  for (double& x : v) {
    if (std::isnan(x)) x = INFINITY;
  }
  const auto p99 = v.begin() + static_cast<std::ptrdiff_t>(NearestRankIndex(v.size(), 0.99));
  const auto median = v.begin() + static_cast<std::ptrdiff_t>(NearestRankIndex(v.size(), 0.5));
  std::nth_element(v.begin(), p99, v.end());
  const double max = *std::max_element(p99, v.end());
  if (median < p99) std::nth_element(v.begin(), median, p99);
  return {max, *p99, *median};
}

}  // namespace fpconform::reports

#endif  // FPCONFORM_REPORTS_STATS_H_
