// The tolerance rule shared by the sweep's composite and attention sections (sweep_rule.h).
#include "reports/sweep_rule.h"

#include <algorithm>
#include <cmath>

#include "reports/stats.h"

namespace fpconform::reports::sweep_internal {

// Among the pairs that cover every e_i, the one tightest at the median magnitude m: it minimizes
// f(r) = max(0, max_i (e_i - r |ref_i|)) + r m, which is convex in r, so a ternary search on
// log r (a monotone change of variable keeps it unimodal) over [min, max] of e_i / |ref_i|,
// with r = 0 as the other candidate, finds it; atol = max(0, max_i (e_i - rtol |ref_i|)).
std::pair<double, double> CoveringRtolAtol(const std::vector<double>& e, const std::vector<double>& ref) {
  std::vector<double> mags, ratios;
  for (size_t i = 0; i < e.size(); ++i) {
    mags.push_back(std::fabs(ref[i]));
    if (ref[i] != 0 && e[i] > 0) ratios.push_back(e[i] / std::fabs(ref[i]));
  }
  const double m = Summarize(mags).median;
  auto atol_at = [&](double r) {
    double a = 0;
    for (size_t i = 0; i < e.size(); ++i) a = std::max(a, e[i] - r * std::fabs(ref[i]));
    return a;
  };
  auto f = [&](double r) { return atol_at(r) + r * m; };
  double best_r = 0, best = f(0);
  if (!ratios.empty()) {
    const auto [lo_it, hi_it] = std::minmax_element(ratios.begin(), ratios.end());
    double lo = std::log(*lo_it), hi = std::log(*hi_it);
    for (int iter = 0; iter < 100 && hi - lo > 1e-7; ++iter) {
      const double a = lo + (hi - lo) / 3, b = hi - (hi - lo) / 3;
      if (f(std::exp(a)) <= f(std::exp(b))) {
        hi = b;
      } else {
        lo = a;
      }
    }
    for (double r : {std::exp(lo), *hi_it}) {
      if (f(r) < best) {
        best = f(r);
        best_r = r;
      }
    }
  }
  const double atol = atol_at(best_r);
  return {best_r, atol > 0 ? atol * (1 + 0x1p-40) : 0.0};
}

double UlpAt(const FormatSpec& f, double x) {
  const int e = x == 0 ? f.d.emin : std::max(std::ilogb(x), f.d.emin);
  return std::ldexp(1.0, e - f.fraction_bits);
}

}  // namespace fpconform::reports::sweep_internal
