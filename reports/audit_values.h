// Small value helpers shared by the audit's ops and pipeline (reports/audit_*.cc): a format's
// bits as a double and back, half an ulp, an RAII MPFR value, and the text forms the audit prints.
// Internal to the audit library: not installed as an API of its own.
#ifndef FPCONFORM_REPORTS_AUDIT_VALUES_H_
#define FPCONFORM_REPORTS_AUDIT_VALUES_H_

#include <mpfr.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "formats/ops.h"
#include "formats/ulp.h"
#include "oracles/mpfr_plumbing.h"
#include "reports/stats.h"  // kUp.

namespace fpconform::reports::audit_internal {

// Bits <-> double: formats/ops.h's, the project's one pair.
using ::fpconform::DoubleToBits;
using ::fpconform::ToDouble;
// NaN or infinity (never for integer formats).
bool IsNonFinite(const FormatSpec& f, uint64_t bits);

// An MPFR value that clears itself: oracles/mpfr_plumbing.h's.
using Mpfr = ::fpconform::MpfrValue;

// x as a hex-float at full precision ("nan", "inf", "-inf" for the non-finite).
std::string MpfrHex(mpfr_srcptr x);
// v with 6 significant digits ("%.6g"; "nan", "inf", "-inf").
std::string Num(double v);
// "[2, 3]".
std::string ShapeText(const std::vector<int64_t>& shape);
// The index of flat (C order) element e in a tensor of this shape.
std::vector<int64_t> Unflatten(int64_t e, const std::vector<int64_t>& shape);
// The diagnoses' test of a candidate value r for an unexplained output y (a value of `out`): r
// "holds" when |y - r| <= (slack + half an ulp of out at |r|) (1 + 2^-40), slack the platform's
// bound for the element (NaN counts as 0). A candidate that says "the kernel's output is
// `factor` times a conforming one" (r = factor x: a scale left out, a power of two) is tested with
// |factor| slack: a conforming output may lie `slack` from x, so `factor` times it lies up to
// |factor| slack from r.
class Relation {
 public:
  Relation(const FormatSpec& out, double y, double slack)
      : out_(out), y_(y), slack_(slack == slack ? slack : 0) {}
  bool Holds(double r, double factor = 1) const;
  // "off by a factor of 2^k (doubled)", "... 2^-k (halved)" for the first k in 1..8 with
  // y = 2^+-k x; "" when none holds.
  std::string PowerOfTwo(double x) const;
  double slack() const { return slack_; }
  // Whether the exact value ex (rounded to double) lies farther from 0 than the slack: only then
  // do a zero y, a sign flip or a power-of-two factor tell anything.
  bool Nonzero(double ex) const { return std::fabs(ex) > slack_; }

  // The relations an op's diagnosis tries first, for exact value ex: "zero where the exact value
  // is not: element not written?", "sign flipped (out = -<negated>)"; "" when neither holds.
  std::string ZeroOrSignFlip(double ex, std::string_view negated) const;
  // The one it tries last: PowerOfTwo(ex) when Nonzero(ex), else (or when that is "") "no simple
  // relation found".
  std::string PowerOfTwoOrNone(double ex) const;

 private:
  const FormatSpec& out_;
  double y_, slack_;
};

// |y - x| rounded up to a double: y finite bits of `out`, x an exact finite value; yv and d are
// working values (any precision: yv is reset to hold y exactly).
double ErrorUp(const FormatSpec& out, uint64_t y, mpfr_srcptr x, Mpfr& yv, Mpfr& d);

}  // namespace fpconform::reports::audit_internal

#endif  // FPCONFORM_REPORTS_AUDIT_VALUES_H_
