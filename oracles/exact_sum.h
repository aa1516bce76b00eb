// The fast exact accumulator: the exact value of a sum or dot product of values in any float
// format of the table (formats may be mixed: a in bfloat16, b in float8_e4m3fn, a float32
// initial value, float64 included), kept without any rounding, then rounded once into any
// target format under any OpEnv, or handed out exactly (MPFR value, hex-float).
//
// Method: a long fixed-point accumulator (Kulisch-style) whose least significant bit has weight
// 2^kMinExponent = 2^-2148 (the product of two float64 subnormals 2^-1074, the smallest LSB of
// any product of table formats) and which reaches above 2^2048 (the largest float64 product)
// with 64 bits of headroom for the term count. The window is stored as signed 64-bit limbs each
// carrying a 32-bit payload; carries are propagated only when the value is read (or after 2^30
// additions, before a limb could overflow), and only over the limbs the formats involved can
// reach (a float32 dot reads ~20 limbs, not 136). Nothing is rounded before Round(). Three paths
// feed the limbs, all exact and all proven equal by exact_sum_test:
//   * host-double buckets (AddDot/AddSum when both formats have p_a + p_b <= 53 and products
//     within the normal double range: every table format but float64; float32, bfloat16 and
//     8-bit formats): double(a) * double(b) is then exact, and the product's sign and biased
//     exponent (12 bits) select a uint64 bucket that sums the 53-bit integer significands;
//     every 2048 terms each non-empty bucket is added into the limbs (3 limb touches). Used
//     only when MXCSR.DAZ is clear (x86-64; checked per call) and the instruction set is not
//     portable (base/isa.h, FPCONFORM_ISA); other hosts take the next path;
//   * integer exponent buckets / limb adds (the other formats, DAZ, float64): each input is
//     decoded once into (sign, exponent, integer significand) (constant-field decoders for
//     float32/bfloat16/float16, 256-entry tables for 8-bit formats), the product of the
//     significands (<= 106 bits) is added at its bit offset touching 2-5 limbs, or into a
//     per-exponent int64 bucket when it has <= 56 bits;
//   * the scalar AddProduct/Add (UnpackBits per operand), which also takes every NaN/Inf term.
// Results:
//   * Round(target, env): the exact value rounded once by formats' RoundPack (round_pack.h),
//     given the exact top 128 bits of the magnitude plus a sticky bit for the rest. Every OpEnv
//     setting applies (rne rna rtz rup rdn rto sr<k>, sat, ftz, tininess, NaN profile), with the
//     flags o u x, and v for the cases below.
//   * ToMpfr / ToHexFloat: the exact value (precision set to exactly the bits it needs).
//   * Sign / IsZero / IsFinite / IsNan / IsInf / IsExactIn queries.
//
// Special values (IEEE 754-2019 §6.1, §6.2, §7.2), as an IEEE sum of the exact products would
// give them:
//   * any NaN term -> NaN: the first NaN met (in the order of the Add calls; in a product, a
//     before b) is propagated per env.nan; v if any NaN operand is signaling;
//   * Inf * 0 -> invalid (NaN, v); +Inf and -Inf both present -> invalid (NaN, v);
//   * otherwise any Inf wins with its sign. Round() of an Inf gives Inf in targets that have Inf
//     (also under sat: an Inf operand is not an overflow, as in Add); in targets without Inf it
//     converts as formats' Convert does (sat: +-max finite; otherwise the NaN of that sign, v).
//   * an exact zero sum (IEEE 754-2019 §6.3): if every term is a zero of the same sign s, the
//     result is a zero of sign s (-0 + -0 = -0); otherwise (cancellation x + -x, or zeros of both
//     signs) it is +0 in every rounding mode except rdn, where it is -0. An empty sum is +0.
//   * a finite non-zero exact sum is never zero before rounding, whatever the cancellation.
//
// DAZ: an accumulator built with denormals_are_zero reads subnormal inputs as zeros of the same
// sign (x86 MXCSR.DAZ); the default reads them exactly. Integer formats are not accepted
// (the functions abort on them, as on formats whose range exceeds float64's).
//
// Independence: this file uses formats' UnpackBits/RoundPack on purpose (it is the exact value
// that RoundPack exists to round). The MPFR oracle (mpfr_oracle.h) shares none of it, and
// exact_sum_test.cc checks this accumulator against an MPFR computation bit for bit.
//
// Cost (oracles/exact_sum_benchmark.cc, K = 4096): about 1.5-2.5 ns per term for float32,
// bfloat16 and float8_e4m3fn dots, 50-110x faster than the plain MPFR loop (mpfr_fma per term).
// Reset() clears only the limbs used since the last Reset. Not thread-safe per object; distinct
// objects may be used from distinct threads. Round()/ToMpfr() read the value without changing
// it (they copy the dirty limbs).
//
// Example:
//   // 1 + 2^-24 + 2^-24 in float32 is exactly 1 + 2^-23: representable.
//   std::vector<uint64_t> x = {0x3F800000, 0x33800000, 0x33800000};
//   ExactAccumulator acc = ExactSum(Float32(), x);
//   acc.Round(Float32(), OpEnv{}) == OpResult{0x3F800001, 0};
//   acc.ToHexFloat() == "0x1.000002p+0";
//   // A mixed dot: bfloat16 a, float8_e4m3fn b, float32 initial value c.
//   std::vector<uint64_t> a = {0x3F80 /*1*/, 0xBF80 /*-1*/}, b = {0x38 /*1*/, 0x38};
//   ExactAccumulator d = ExactDot(BFloat16(), a, Float8E4M3FN(), b, FormatValue{&Float32(), 0});
//   d.IsZero() == true;  d.Round(Float32(), OpEnv{}).bits == 0 /*+0*/;
#ifndef FPCONFORM_ORACLES_EXACT_SUM_H_
#define FPCONFORM_ORACLES_EXACT_SUM_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <mpfr.h>

#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "formats/round_pack.h"

namespace fpconform {

// A value given as bits in a format (an initial value of a dot or sum).
struct FormatValue {
  const FormatSpec* format;
  uint64_t bits;
};

class ExactAccumulator {
 public:
  // Weight of the accumulator's least significant bit: 2^(2 * -1074).
  static constexpr int kMinExponent = -2148;
  // Limbs of 32 payload bits: the window reaches 2^(kMinExponent + 32 * kLimbs) = 2^2172, above
  // the largest product 2^2048 plus 64 bits of count headroom, plus guard limbs.
  static constexpr int kLimbs = 136;

  explicit ExactAccumulator(bool denormals_are_zero = false);

  // Back to the empty sum (+0, no special values seen).
  void Reset();

  // Adds the exact product a * b (a in format fa, b in fb; bits in the container).
  void AddProduct(const FormatSpec& fa, uint64_t a, const FormatSpec& fb, uint64_t b);
  // Adds x exactly.
  void Add(const FormatSpec& f, uint64_t x);
  // Adds sum_i a[i] * b[i] (a.size() must equal b.size(); aborts otherwise). Same result as
  // AddProduct in a loop (NaN priority included), much faster (see Method).
  void AddDot(const FormatSpec& fa, std::span<const uint64_t> a, const FormatSpec& fb,
              std::span<const uint64_t> b);
  // Adds sum_i x[i].
  void AddSum(const FormatSpec& f, std::span<const uint64_t> x);

  // The exact value rounded once into `target` under `env` (see the special values above).
  // env.denormals_are_zero is ignored here: DAZ applies to inputs (the constructor's flag).
  OpResult Round(const FormatSpec& target, const OpEnv& env) const;

  // The exact value as an MPFR number: sets the precision of `out` to exactly the bits the value
  // needs (MPFR_PREC_MIN for zero, Inf and NaN) and stores the value exactly. An exact zero gets
  // the sign it has under `zero_rounding` (see above); NaN for invalid/NaN sums.
  void ToMpfr(mpfr_t out, Rounding zero_rounding = Rounding::kNearestEven) const;
  // The exact value as a C99 hex-float with the minimal digits, in the style of formats/text.h:
  // "0x1.000002p+0", "-0x1p-2148", "0x0p+0", "-0x0p+0", "inf", "-inf", "nan".
  std::string ToHexFloat(Rounding zero_rounding = Rounding::kNearestEven) const;

  bool IsNan() const { return nan_ || Invalid(); }  // Also true for invalid sums (Inf - Inf).
  // An invalid operation was met: Inf * 0, +Inf + -Inf, or a signaling NaN operand.
  bool Invalid() const;
  bool IsInf() const { return !IsNan() && (pos_inf_ || neg_inf_); }
  bool IsFinite() const { return !IsNan() && !IsInf(); }
  // Finite and exactly zero.
  bool IsZero() const;
  // -1, 0 or +1: the sign of the exact value (Inf included; 0 for zero and NaN).
  int Sign() const;
  // The sign bit an exact zero result gets under `rounding` (§6.3 rule above).
  bool ZeroSign(Rounding rounding) const;
  // True iff the exact value is finite and representable in `target` (Round under rtz gives no
  // inexact flag and no overflow).
  bool IsExactIn(const FormatSpec& target) const;
  // The exact value as (sign, exponent, top 128 bits of the magnitude, sticky), as handed to
  // RoundPack: value = (-1)^sign * (significand + delta) * 2^exponent, 0 <= delta < 1, delta > 0
  // iff sticky; the leading bit of a non-zero significand is bit 127 unless the value has fewer
  // than 128 bits above 2^kMinExponent. Finite values only; zero gives significand 0.
  struct Wide {
    bool sign;
    int32_t exponent;
    uint128 significand;
    bool sticky;
  };
  Wide ToWide() const;

  uint64_t terms() const { return terms_; }  // Products and values added since Reset.

 private:
  template <class DA, class DB>
  friend void DotKernel(ExactAccumulator& acc, const DA& da, std::span<const uint64_t> a,
                        const DB& db, std::span<const uint64_t> b);
  template <class D>
  friend void SumKernel(ExactAccumulator& acc, const D& d, std::span<const uint64_t> x);
  friend struct DoubleKernels;

  // The integer-only paths of AddDot/AddSum.
  void AddDotInteger(const FormatSpec& fa, std::span<const uint64_t> a, const FormatSpec& fb,
                     std::span<const uint64_t> b);
  void AddSumInteger(const FormatSpec& f, std::span<const uint64_t> x);

  void AddProductUncounted(const FormatSpec& fa, uint64_t a, const FormatSpec& fb, uint64_t b);
  void AddUncounted(const FormatSpec& f, uint64_t x);
  // Records a NaN/Inf operand, or the product of operands at least one of which is NaN/Inf.
  void AddSpecial(const FormatSpec& fa, const Unpacked& x, const FormatSpec* fb,
                  const Unpacked* y);
  // Adds (-1)^sign * sig * 2^exp (sig < 2^128, exp >= kMinExponent) and widens the dirty range.
  void AddFinite(bool sign, int32_t exp, uint128 sig);
  // Adds bucket[j] * 2^(base + j) for j < count into the limbs and clears the buckets.
  void FoldBuckets(int64_t* bucket, int count, int base);
  // Propagates carries over the dirty range (in place; the value is unchanged).
  void Normalize();
  // Magnitude limbs (each < 2^32) over [0, kLimbs) and the sign of the finite value.
  // Returns true iff the value is negative and non-zero; `top` is the highest non-zero limb
  // (-1 for zero). Three zero limbs at the end let readers fetch 96 bits anywhere.
  bool Magnitude(std::array<uint32_t, kLimbs + 3>& mag, int& top) const;

  std::array<int64_t, kLimbs> limbs_;
  int lo_ = kLimbs;  // Dirty limb range [lo_, hi_]; empty when lo_ > hi_.
  int hi_ = -1;
  uint64_t pending_ = 0;  // Additions per limb since the last Normalize (bound: 2^30).
  uint64_t terms_ = 0;
  uint8_t term_signs_ = 0;  // Bit 0: a term with sign +; bit 1: a term with sign -.
  bool nonzero_term_ = false;
  bool daz_;
  // Special values.
  bool nan_ = false;
  bool signaling_ = false;
  bool invalid_ = false;
  bool pos_inf_ = false;
  bool neg_inf_ = false;
  const FormatSpec* nan_format_ = nullptr;
  Unpacked nan_value_;
};

// The accumulator holding sum_i a[i] * b[i] (+ c when given, added after the products: for NaN
// propagation c comes last, as in Fma(a, b, c)). Example in the header comment.
ExactAccumulator ExactDot(const FormatSpec& fa, std::span<const uint64_t> a,
                          const FormatSpec& fb, std::span<const uint64_t> b,
                          std::optional<FormatValue> c = std::nullopt);
// The accumulator holding sum_i x[i] (+ c when given).
ExactAccumulator ExactSum(const FormatSpec& f, std::span<const uint64_t> x,
                          std::optional<FormatValue> c = std::nullopt);

}  // namespace fpconform

#endif  // FPCONFORM_ORACLES_EXACT_SUM_H_
