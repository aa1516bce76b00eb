// The MPFR plumbing the MPFR oracles share (mpfr_oracle.cc: the per-operation oracle;
// mpfr_dot.cc: the reduction oracle): an RAII MPFR value, the exponent-range guard that makes
// MPFR emulate a format's range, and the decoder of a format's bits into an exact MPFR value.
//
// Independence: written from the FormatSpec row's fields and the constexpr helpers of
// format_spec.h only (Emin, Emax, MinSubnormalExponent, WidthMask, Precision), never from
// formats/' UnpackBits or RoundPack, so the oracles stay independent of the code they check; they
// share this header with each other (not with the Boost oracle, which stays apart:
// boost_oracle.cc).
//
// Example:
//   MpfrValue x;                                          // 64 bits, NaN until set.
//   MpfrDecoded d = MpfrDecodeBits(BFloat16(), 0xC040, false, x);
//   d.kind == MpfrKind::kFinite; d.sign == true; mpfr_get_d(x, MPFR_RNDN) == -3.0;
//   {
//     MpfrExponentRange range(Float16());  // emin = -23, emax = 16 (MPFR's 0.1b * 2^e).
//     mpfr_set_d(x, 65536.0, MPFR_RNDN);
//     mpfr_check_range(x, 0, MPFR_RNDN);   // x = +Inf: beyond float16's range.
//   }                                      // the previous range is back.
#ifndef FPCONFORM_ORACLES_MPFR_PLUMBING_H_
#define FPCONFORM_ORACLES_MPFR_PLUMBING_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <mpfr.h>

#include "formats/format_spec.h"

namespace fpconform {

// An mpfr_t owned by its scope (mpfr_init2 on construction, mpfr_clear on destruction): the
// project's one MPFR value type (the audit, the sweep and the error measures name it Mpfr; only
// cases/catalog_generator.cc keeps a struct of its own, as it keeps its own decoder, so that the
// golden catalog depends on nothing in oracles/). It converts to mpfr_ptr / mpfr_srcptr and has
// operator->, so it goes wherever an mpfr_t goes (functions and MPFR's macros alike); `v` is the
// mpfr_t itself.
struct MpfrValue {
  explicit MpfrValue(mpfr_prec_t precision = 64) { mpfr_init2(v, precision); }
  ~MpfrValue() { mpfr_clear(v); }
  MpfrValue(const MpfrValue&) = delete;
  MpfrValue& operator=(const MpfrValue&) = delete;

  mpfr_ptr get() { return v; }
  mpfr_srcptr get() const { return v; }
  operator mpfr_ptr() { return v; }              // NOLINT: used as an mpfr_t.
  operator mpfr_srcptr() const { return v; }     // NOLINT
  mpfr_ptr operator->() { return v; }
  mpfr_srcptr operator->() const { return v; }

  mpfr_t v;
};

// Sets MPFR's (thread-local) exponent range to emulate format f, in MPFR's convention x =
// 0.1b... * 2^e: emin = MinSubnormalExponent(f) + 1, emax = Emax(f) + 1; restores the previous
// range on destruction. Aborts if MPFR refuses the range (no format of the table does: MPFR's
// range is at least [1 - 2^30, 2^30 - 1]).
class MpfrExponentRange {
 public:
  explicit MpfrExponentRange(const FormatSpec& f)
      : old_emin_(mpfr_get_emin()), old_emax_(mpfr_get_emax()) {
    if (mpfr_set_emin(MinSubnormalExponent(f) + 1) != 0 || mpfr_set_emax(Emax(f) + 1) != 0) {
      std::fprintf(stderr, "MpfrExponentRange: MPFR refuses the range of %.*s\n",
                   static_cast<int>(f.name.size()), f.name.data());
      std::abort();
    }
  }
  ~MpfrExponentRange() {
    mpfr_set_emin(old_emin_);
    mpfr_set_emax(old_emax_);
  }
  MpfrExponentRange(const MpfrExponentRange&) = delete;
  MpfrExponentRange& operator=(const MpfrExponentRange&) = delete;

 private:
  mpfr_exp_t old_emin_;
  mpfr_exp_t old_emax_;
};

// The kind of the value `bits` encodes in a float format.
enum class MpfrKind : uint8_t { kZero, kFinite, kInf, kNaN };
struct MpfrDecoded {
  MpfrKind kind = MpfrKind::kZero;
  bool sign = false;
  bool signaling = false;  // NaN in a NanEncoding::kIeee format with the quiet bit clear.
  uint64_t payload = 0;    // NaN of an IEEE-encoded format: the fraction field; else 0.
};

// Decodes `bits` (container bits: the high bits beyond the width and tfloat32's pad bits are
// dropped) of float format f into `out`, exactly: `out` must have at least Precision(f) bits (it
// aborts otherwise); set for kZero (with the sign) and kFinite only. With daz, subnormals read
// as zeros of the same sign. Encodings (format_spec.h NonFinite / NanEncoding):
//   * NonFinite::kIeee or NanEncoding::kIeee: at the all-ones exponent, fraction 0 is +-Inf
//     (kIeee formats), a non-zero fraction is a NaN (quiet bit = top fraction bit);
//   * kAllOnes: exponent and fraction all ones is a NaN (either sign), no payload;
//   * kNegativeZero (fnuz): the pattern 1000...0 is the single NaN (read as negative, as
//     ml_dtypes' conversions give -NaN for it);
//   * everything else is finite: biased exponent 0 is subnormal where the format has subnormals
//     (fraction * 2^(Emin - fraction_bits)), else normal ((2^fb + fraction) * 2^(E - bias - fb)).
inline MpfrDecoded MpfrDecodeBits(const FormatSpec& f, uint64_t bits, bool daz, mpfr_ptr out) {
  auto ones = [](int n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; };
  const uint64_t enc = (bits & WidthMask(f)) >> f.pad_bits;
  const int fb = f.fraction_bits;
  const uint64_t frac = enc & ones(fb);
  const uint64_t biased = (enc >> fb) & ones(f.exponent_bits);
  const uint64_t all_exp = ones(f.exponent_bits);
  MpfrDecoded d;
  d.sign = f.has_sign && ((enc >> (f.exponent_bits + fb)) & 1) != 0;
  if (f.nonfinite == NonFinite::kIeee || f.nan_encoding == NanEncoding::kIeee) {
    if (biased == all_exp) {
      if (frac == 0 && f.nonfinite == NonFinite::kIeee) {
        d.kind = MpfrKind::kInf;
        return d;
      }
      if (frac != 0) {
        d.kind = MpfrKind::kNaN;
        d.signaling = fb > 0 && ((frac >> (fb - 1)) & 1) == 0;
        d.payload = frac;
        return d;
      }
    }
  } else if (f.nan_encoding == NanEncoding::kAllOnes) {
    if (biased == all_exp && frac == ones(fb)) {
      d.kind = MpfrKind::kNaN;  // The fraction is part of the NaN encoding, not a payload.
      return d;
    }
  } else {  // kNegativeZero
    if (d.sign && biased == 0 && frac == 0) {
      d.kind = MpfrKind::kNaN;
      return d;
    }
  }
  if (mpfr_get_prec(out) < Precision(f)) {
    std::fprintf(stderr, "MpfrDecodeBits: %ld bits of precision for %.*s\n",
                 static_cast<long>(mpfr_get_prec(out)), static_cast<int>(f.name.size()),
                 f.name.data());
    std::abort();
  }
  int inexact;
  if (biased == 0 && f.has_subnormals) {
    if (frac == 0 || daz) {
      d.kind = MpfrKind::kZero;
      mpfr_set_zero(out, d.sign ? -1 : 1);
      return d;
    }
    d.kind = MpfrKind::kFinite;
    inexact = mpfr_set_ui_2exp(out, frac, Emin(f) - fb, MPFR_RNDN);
  } else {
    // Normal (biased exponent 0 is normal in formats without subnormals).
    d.kind = MpfrKind::kFinite;
    const uint64_t sig = (uint64_t{1} << fb) | frac;
    inexact = mpfr_set_ui_2exp(out, sig, static_cast<long>(biased) - f.bias - fb, MPFR_RNDN);
  }
  if (inexact != 0) {  // Only outside MPFR's exponent range, which no table format reaches.
    std::fprintf(stderr, "MpfrDecodeBits: inexact decode\n");
    std::abort();
  }
  if (d.sign) mpfr_neg(out, out, MPFR_RNDN);
  return d;
}

}  // namespace fpconform

#endif  // FPCONFORM_ORACLES_MPFR_PLUMBING_H_
