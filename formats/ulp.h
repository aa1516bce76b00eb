// The ulp of a format at a magnitude, for error bounds and ULP measures (header-only: the audits,
// the model epilogue and the composite enclosures share it).
//   HalfUlpAt(f, v) = 2^(max(floor(log2 v), emin) - p) for a float format f and v >= 0 (the
//   smallest normal binade's half ulp for v = 0, below the normal range, and for a non-finite v);
//   0.5 for integer formats (an integer output rounds to within 1/2).
// Example: HalfUlpAt(BFloat16(), 1.0) == 0x1p-8; HalfUlpAt(Float32(), 0.0) == 0x1p-150.
#ifndef FPCONFORM_FORMATS_ULP_H_
#define FPCONFORM_FORMATS_ULP_H_

#include <algorithm>
#include <cmath>

#include "formats/format_spec.h"

namespace fpconform {

inline double HalfUlpAt(const FormatSpec& f, double v) {
  if (f.kind == FormatKind::kInteger) return 0.5;
  int e = f.d.emin;
  if (v > 0 && std::isfinite(v)) {
    int ex;
    std::frexp(v, &ex);  // v = m 2^ex, m in [0.5, 1): floor(log2 v) = ex - 1.
    e = std::max(ex - 1, f.d.emin);
  }
  return std::ldexp(1.0, e - f.d.precision);
}

}  // namespace fpconform

#endif  // FPCONFORM_FORMATS_ULP_H_
