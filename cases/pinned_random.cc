#include "cases/pinned_random.h"

#include <cmath>
#include <limits>

namespace fpconform {

double PinnedLog(double x) {
  if (!(x > 0) || !std::isfinite(x)) return std::numeric_limits<double>::quiet_NaN();
  int e = 0;
  double m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1): exact.
  if (m < 0.70710678118654752440) {  // Bring m into [sqrt(1/2), sqrt(2)).
    m *= 2;
    --e;
  }
  const double t = (m - 1) / (m + 1);  // |t| < 0.1716.
  const double t2 = t * t;
  // 2 * sum_{j>=0} t^(2j+1) / (2j+1); |t|^2 < 0.0295, so 12 terms leave < 1e-19 relative.
  double term = t, sum = 0;
  for (int j = 0; j < 12; ++j) {
    sum += term / (2 * j + 1);
    term *= t2;
  }
  // ln 2 = head + tail, head with 32 significant bits so that e * head is exact for |e| < 2^21.
  constexpr double kLn2Head = 0x1.62e42fefp-1;
  constexpr double kLn2Tail = 0x1.473de6af278edp-34;
  return (e * kLn2Head + 2 * sum) + e * kLn2Tail;
}

double PinnedRng::Normal() {
  if (have_spare_) {
    have_spare_ = false;
    return spare_;
  }
  double u, v, s;
  do {
    u = 2 * Uniform01() - 1;
    v = 2 * Uniform01() - 1;
    s = u * u + v * v;
  } while (!(s > 0 && s < 1));
  const double f = std::sqrt(-2 * PinnedLog(s) / s);
  spare_ = v * f;
  have_spare_ = true;
  return u * f;
}

double PinnedRng::LogUniform(int e_lo, int e_hi) {
  const uint64_t r = Next();
  const int e = e_lo + static_cast<int>(Below(static_cast<uint64_t>(e_hi - e_lo) + 1));
  const double mag = std::ldexp(1 + Uniform01(), e);
  return (r & 1) ? -mag : mag;
}

}  // namespace fpconform
