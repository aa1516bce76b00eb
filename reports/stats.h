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

// Nearest-rank quantile of a sorted, non-empty sample: q in (0, 1].
inline double NearestRank(const std::vector<double>& sorted, double q) {
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

inline Summary Summarize(std::vector<double> v) {
  if (v.empty()) return {};
  for (double& x : v) {
    if (std::isnan(x)) x = INFINITY;
  }
  std::sort(v.begin(), v.end());
  return {v.back(), NearestRank(v, 0.99), NearestRank(v, 0.5)};
}

}  // namespace fpconform::reports

#endif  // FPCONFORM_REPORTS_STATS_H_
