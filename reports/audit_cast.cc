// `fpconform audit cast`: out = fl_to(X / scale) elementwise (audit.h). Not a pipeline op: a
// cast has no platform model to emulate; each output is checked against the one or two values
// the rounding allows (and, under sr<k>, the share rounded away from zero statistically).
#include <mpfr.h>

#include <algorithm>
#include <cmath>

#include "base/str_cat.h"
#include "formats/ops.h"
#include "oracles/error_measures.h"
#include "reports/audit.h"
#include "reports/audit_inputs.h"
#include "reports/audit_values.h"

namespace fpconform::reports {

using audit_internal::AddFileProvenance;
using audit_internal::CheckFloat;
using audit_internal::DoubleToBits;
using audit_internal::IsNonFinite;
using audit_internal::Mpfr;
using audit_internal::MpfrHex;
using audit_internal::Num;
using audit_internal::ShapeText;
using audit_internal::ToDouble;
using audit_internal::Unflatten;

absl::StatusOr<AuditResult> AuditCast(const CastAuditInput& in, const AuditOptions& options) {
  if (in.x == nullptr || in.out == nullptr || in.to == nullptr) {
    return absl::InvalidArgumentError("audit cast needs --x, --out and --to");
  }
  const Tensor& X = *in.x;
  const Tensor& O = *in.out;
  if (absl::Status s = CheckFloat(X, "X"); !s.ok()) return s;
  if (O.format != in.to) {
    return absl::InvalidArgumentError(Cat(O.source, ": the output is ", O.dtype, " but --to is ",
                                          in.to->name));
  }
  if (X.shape != O.shape) {
    return absl::InvalidArgumentError(Cat(O.source, ": shape ", ShapeText(O.shape), " differs from X ",
                                          ShapeText(X.shape), " (", X.source, ")"));
  }
  const FormatSpec& to = *in.to;
  const bool sr = in.env.rounding == Rounding::kStochastic;
  const bool scaled = in.scale != 1;
  uint64_t s32 = 0;
  if (scaled) {
    s32 = DoubleToBits(Float32(), in.scale);
    if (!(std::isfinite(in.scale) && in.scale != 0) || ToDouble(Float32(), s32) != in.scale) {
      return absl::InvalidArgumentError(Cat("--scale ", Num(in.scale), ": must be a non-zero float32 value"));
    }
  }
  const FormatSpec& vf = scaled ? Float32() : *X.format;
  AuditResult r;
  r.op = "cast";
  r.out_shape = O.shape;
  r.out_format = std::string(to.name);
  r.input_format = X.dtype;
  r.k = 1;
  const std::string mode = Cat(RoundingName(in.env), in.env.saturate ? ":sat" : "");
  r.formula = scaled ? Cat("out = cast_", to.name, "(fl32(X / ", Num(in.scale), "), ", mode,
                           "); X converted to float32 exactly; the value cast is the float32 quotient")
                     : Cat("out = cast_", to.name, "(X, ", mode, ")");
  AddFileProvenance(r.provenance, "X", X);
  AddFileProvenance(r.provenance, "out", O);
  r.provenance.emplace_back("tool", audit_internal::ToolVersion());
  PlatformAudit pa;
  pa.name = Cat("cast ", to.name, " ", mode);
  const int64_t n = O.size();
  r.classes.assign(static_cast<size_t>(n), 0);
  std::vector<int64_t> listed_candidates;
  int64_t other_mode = 0;
  double sum_p = 0, sum_var = 0;
  const int k = in.env.sr_bits;
  Mpfr xv;
  for (int64_t e = 0; e < n; ++e) {
    uint64_t v = X.Bits(e);
    if (scaled) {
      const OpResult x32 = Convert(*X.format, Float32(), v, OpEnv{});
      if (x32.flags & (kInexact | kOverflow)) {
        return absl::InvalidArgumentError(Cat(X.source, ": element ", e, " is not exactly representable in float32"));
      }
      v = Div(Float32(), x32.bits, s32, OpEnv{}).bits;
    }
    const uint64_t y = O.Bits(e);
    AuditClass cls = AuditClass::kUnexplained;
    if (!sr) {
      const uint64_t want = Convert(vf, to, v, in.env).bits;
      if (want == y || (IsNanBits(to, want) && IsNanBits(to, y))) {
        cls = AuditClass::kIdentical;
      } else {
        // The other neighbour of v (a faithful rounding): within one ulp.
        OpEnv up = in.env, down = in.env;
        up.rounding = Rounding::kUpward;
        down.rounding = Rounding::kDownward;
        const uint64_t hi = Convert(vf, to, v, up).bits, lo = Convert(vf, to, v, down).bits;
        if (!IsNonFinite(to, y) && (y == hi || y == lo)) {
          cls = AuditClass::kWithinBound;
          ++other_mode;
        }
      }
    } else {
      OpEnv e0 = in.env;
      e0.sr_random = 0;
      const uint64_t lo = Convert(vf, to, v, e0).bits;  // r = 0 never rounds away.
      OpEnv e1 = in.env;
      e1.sr_random = (uint64_t{1} << k) - 1;
      const uint64_t hi = Convert(vf, to, v, e1).bits;
      if (lo == hi) {
        cls = (y == lo || (IsNanBits(to, y) && IsNanBits(to, lo))) ? AuditClass::kIdentical
                                                                   : AuditClass::kUnexplained;
      } else {
        // p = t / 2^k, t the top k discarded bits: away iff r >= 2^k - t. Smallest such r.
        uint64_t lo_r = 1, hi_r = (uint64_t{1} << k) - 1;
        while (lo_r < hi_r) {
          const uint64_t mid = lo_r + (hi_r - lo_r) / 2;
          OpEnv em = in.env;
          em.sr_random = mid;
          if (Convert(vf, to, v, em).bits == hi) {
            hi_r = mid;
          } else {
            lo_r = mid + 1;
          }
        }
        const double p = std::ldexp(static_cast<double>((uint64_t{1} << k) - lo_r), -k);
        ++r.sr_test.inexact;
        sum_p += p;
        sum_var += p * (1 - p);
        if (y == hi) {
          ++r.sr_test.away;
          cls = AuditClass::kWithinBound;
        } else if (y == lo) {
          cls = AuditClass::kWithinBound;
        }
      }
    }
    r.classes[static_cast<size_t>(e)] = static_cast<uint8_t>(cls);
    ++pa.counts[static_cast<int>(cls)];
    if (cls != AuditClass::kIdentical) listed_candidates.push_back(e);
  }
  r.counts = pa.counts;
  r.best_platform = pa.name;
  r.platforms.push_back(pa);
  r.mismatched = r.counts[static_cast<int>(AuditClass::kUnexplained)];
  bool sr_fail = false;
  if (sr && r.sr_test.inexact > 0) {
    r.sr_test.run = true;
    r.sr_test.expected = sum_p;
    r.sr_test.sigma = std::sqrt(sum_var);
    r.sr_test.z = r.sr_test.sigma > 0 ? (static_cast<double>(r.sr_test.away) - sum_p) / r.sr_test.sigma
                                      : (static_cast<double>(r.sr_test.away) == sum_p ? 0 : INFINITY);
    sr_fail = !(std::fabs(r.sr_test.z) <= 4.5);
    r.notes.push_back(Cat("stochastic rounding: rounded away from zero on ", r.sr_test.away, " of ",
                          r.sr_test.inexact, " inexact elements; expected ", Num(sum_p), " +- ",
                          Num(r.sr_test.sigma), " (z = ", Num(r.sr_test.z), "; the check fails beyond |z| = 4.5)"));
  }
  if (!sr && other_mode > 0) {
    r.notes.push_back(Cat(other_mode, " element(s) hold the other neighbour of the exact value (one ulp off ",
                          RoundingName(in.env), "): a different rounding mode?"));
  }
  r.verdict = (r.mismatched == 0 && !sr_fail && !(options.strict && other_mode > 0)) ? AuditVerdict::kPass
                                                                                     : AuditVerdict::kFail;
  // Listed: unexplained first, then the others that are not identical.
  std::stable_partition(listed_candidates.begin(), listed_candidates.end(), [&](int64_t e) {
    return r.classes[static_cast<size_t>(e)] == static_cast<uint8_t>(AuditClass::kUnexplained);
  });
  if (static_cast<int64_t>(listed_candidates.size()) > options.max_listed) {
    listed_candidates.resize(static_cast<size_t>(std::max(0, options.max_listed)));
  }
  for (int64_t e : listed_candidates) {
    AuditElement el;
    el.index = Unflatten(e, O.shape);
    el.cls = static_cast<AuditClass>(r.classes[static_cast<size_t>(e)]);
    uint64_t v = X.Bits(e);
    if (scaled) v = Div(Float32(), Convert(*X.format, Float32(), v, OpEnv{}).bits, s32, OpEnv{}).bits;
    const uint64_t y = O.Bits(e);
    el.actual_bits = y;
    el.actual = ToDouble(to, y);
    ErrorMeasureValue(vf, v, xv.v);
    el.exact = IsNanBits(vf, v) ? "nan" : MpfrHex(xv.v);
    el.exact_value = ToDouble(vf, v);
    OpEnv ee = in.env;
    ee.sr_random = 0;
    el.emulated_bits = Convert(vf, to, v, ee).bits;
    el.emulated = ToDouble(to, el.emulated_bits);
    el.error_ulp = (IsNonFinite(to, y) || IsNonFinite(vf, v)) ? NAN : UlpError(to, y, xv.v);
    el.bound = 1;
    el.error_over_bound = std::fabs(el.error_ulp);
    el.abs_sum = std::fabs(el.exact_value);
    if (el.cls == AuditClass::kUnexplained) {
      const double yd = el.actual, xd = el.exact_value;
      OpEnv sat = in.env, nosat = in.env;
      sat.saturate = true;
      nosat.saturate = false;
      sat.sr_random = nosat.sr_random = 0;
      if (IsNanBits(to, y) && !IsNanBits(vf, v)) {
        el.diagnosis = in.env.saturate ? "NaN where a saturating cast gives max finite" : "NaN where none is expected";
      } else if (!in.env.saturate && y == Convert(vf, to, v, sat).bits) {
        el.diagnosis = "saturated: the kernel's cast saturates (add :sat to --to?)";
      } else if (in.env.saturate && y == Convert(vf, to, v, nosat).bits) {
        el.diagnosis = "not saturated: the kernel's cast overflows (drop :sat from --to?)";
      } else if (scaled && y == Convert(*X.format, to, X.Bits(e), in.env).bits) {
        el.diagnosis = "scale missing (out = cast(X))";
      } else if (yd == -el.emulated && yd != 0) {
        el.diagnosis = "sign flipped";
      } else if (yd == 0 && xd != 0 && std::fabs(xd) < ToDouble(to, MinNormalBits(to))) {
        el.diagnosis = "flushed to zero (FTZ?)";
      } else {
        el.diagnosis = "no simple relation found";
      }
    }
    r.elements.push_back(std::move(el));
  }
  r.histogram.assign(34, 0);
  return r;
}

}  // namespace fpconform::reports
