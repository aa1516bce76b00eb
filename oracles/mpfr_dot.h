// The MPFR oracle for reductions: the exact value of a sum, a dot product (with an optional
// initial value c) and a matrix product of values in any float format of the table (formats may
// be mixed: a in bfloat16, b in float8_e4m3fn, c in float32), then correctly rounded once into
// any float target format under any OpEnv (rne rna rtz rup rdn rto sr<k>, sat, ftz, daz,
// tininess before/after rounding), with the semantics that formats/ops.h and formats/op_env.h
// state for single operations.
//
// Independence (DESIGN.md, oracles/): nothing here calls formats/round_pack, formats/ops or the
// element-wise oracle (mpfr_oracle.h). Inputs are decoded from the FormatSpec fields by this
// file's own decoder; results are encoded by its own encoder.
//
// Exact value. Each product a_i * b_i is formed exactly by mpfr_mul at precision p_a + p_b; the
// terms (and c) are then added by mpfr_sum into a variable whose precision is
//   (largest term exponent) - (smallest term LSB exponent) + ceil(log2(n + 1)) + 1,
// so the sum is exact whatever the exponent spread (the ternary value is checked to be 0).
//
// Rounding (MPFR's documented IEEE recipe): MPFR_RNDN / RNDZ / RNDA at precision p, then, in an
// RAII guard that sets mpfr_set_emin/emax from the format, mpfr_check_range and
// mpfr_subnormalize. The other modes reduce to those: rna = RNDZ or RNDA after an exact
// comparison with the midpoint; rto = whichever of RNDZ/RNDA is odd (the even one is what RNDN
// gives for their midpoint); sr<k> = RNDZ or RNDA by the top k bits of (|x| - z) / (a - z). The
// value is rounded twice: with unbounded exponent range at p bits (decides overflow and tininess
// after rounding, ops.h: "round as if the exponent range were unbounded, then apply the range"),
// and, when |x| < 2^Emin, in the format's range (the delivered subnormal).
//
// Semantics (ops.h, op_env.h and oracles/DISAGREEMENTS.md section 3, which formats/ follows):
//  * Overflow: rne/rna -> Inf, rtz/rto -> max finite, rup/rdn -> Inf toward their own infinity,
//    sr<k> -> Inf (op_env.h: above max finite its neighbours are max finite and the overflow
//    result; |x| >= max + ulp always overflows); Inf -> NaN in formats without
//    Inf (no v); sat -> max finite. Flags o x.
//  * u = tiny (per env.tininess) and inexact; ftz replaces a tiny non-zero result by a zero of its
//    sign with u x. Formats without -0 (fnuz) give +0 wherever -0 would be given.
//  * float8_e8m0fnu: zero and negative results (and -Inf) are NaN with v; positive results whose
//    p-bit rounding is below 2^-127 deliver 2^-127 with x, and u if tiny per env.tininess.
//  * Special values, as an IEEE sum of the exact products: any NaN operand -> NaN (v if some
//    NaN operand is signaling); Inf * 0 -> NaN with v; +Inf and -Inf -> NaN with v; otherwise
//    the Inf. An Inf result is Inf in targets with Inf (also under sat), +-max finite under sat
//    in targets without Inf, else NaN with v (as formats' Convert).
//  * Exact zero (IEEE 754-2019 §6.3): if every term is a zero of sign s, the zero of sign s
//    (-0 + -0 = -0); otherwise (x + -x, zeros of both signs) +0, or -0 under rdn. An empty sum
//    is +0.
//  * NaN bits: the NaN of an invalid operation per env.nan (op_env.h table); a NaN operand (the
//    first in the order a0 b0 a1 b1 ... c) propagated per env.nan; other NaNs some NaN of the
//    format. Compare NaNs by class.
//
// Thread safety: thread-local scratch and MPFR's thread-local exponent range; call from any
// number of threads. MpfrExact objects are not shared between threads.
//
// Example:
//   OpEnv env;                                          // rne
//   std::vector<uint64_t> x = {0x7E /*448*/, 0x58 /*16*/};
//   MpfrSum(Float8E4M3FN(), x, Float8E4M3FN(), env)  == OpResult{0x7E /*448*/, kInexact}
//   std::vector<uint64_t> a = {0x3F800000 /*1*/, 0x33800000 /*2^-24*/};
//   std::vector<uint64_t> b = {0x3F800000, 0x3F800000};
//   MpfrDot(Float32(), a, Float32(), b, nullptr, 0, Float32(), env) == {0x3F800000, kInexact}
//   env.rounding = Rounding::kUpward;                   // -> {0x3F800001, kInexact}
#ifndef FPCONFORM_ORACLES_MPFR_DOT_H_
#define FPCONFORM_ORACLES_MPFR_DOT_H_

#include <cstdint>
#include <span>
#include <string>

#include <mpfr.h>

#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "oracles/mpfr_plumbing.h"

namespace fpconform {

// The exact value of a reduction, kept unrounded so that it can be rounded into any number of
// targets and used for error measures.
class MpfrExact {
 public:
  enum class Kind : uint8_t { kZero, kFinite, kInf, kNaN };

  MpfrExact();
  ~MpfrExact();
  MpfrExact(const MpfrExact&) = delete;
  MpfrExact& operator=(const MpfrExact&) = delete;

  Kind kind() const { return kind_; }
  // Sign of the value (of the zero when zero_sign_fixed(); of the Inf; of the NaN operand).
  bool negative() const { return negative_; }
  // kZero only: true when every term was a zero of the same sign (the sign is then negative()),
  // false when the zero came from cancellation (its sign then depends on the rounding mode).
  bool zero_sign_fixed() const { return zero_sign_fixed_; }
  // v when the reduction is invalid (sNaN operand, Inf * 0, +Inf + -Inf); otherwise 0.
  Flags flags() const { return flags_; }
  // The exact value (kFinite: non-zero, with exactly enough precision; kZero: +-0).
  mpfr_srcptr value() const { return value_; }
  // Canonical text: "0" "-0" "inf" "-inf" "nan", or "[-]0x<M>p<e>" with M odd, in hex, and
  // the value M * 2^e (e.g. 6 -> "0x3p1", -0.375 -> "-0x3p-3"). Unique for each value, so two
  // oracles can be compared as strings.
  std::string ToText() const;

 private:
  friend class MpfrDotBuilder;  // mpfr_dot.cc
  Kind kind_ = Kind::kZero;
  bool negative_ = false;
  bool zero_sign_fixed_ = true;
  Flags flags_ = 0;
  // NaN operand to propagate (kNaN); nan_format_ == nullptr for the NaN of an invalid operation.
  const FormatSpec* nan_format_ = nullptr;
  uint64_t nan_bits_ = 0;
  mpfr_t value_;
  friend OpResult MpfrRoundExact(const FormatSpec& to, const MpfrExact& x, const OpEnv& env);
};

// Exact sum of x (each in format fx). env: only denormals_are_zero is read.
void MpfrExactSum(const FormatSpec& fx, std::span<const uint64_t> x, const OpEnv& env,
                  MpfrExact& out);
// Exact sum_i a_i * b_i (+ c when fc != nullptr, c in format fc). a.size() == b.size().
void MpfrExactDot(const FormatSpec& fa, std::span<const uint64_t> a, const FormatSpec& fb,
                  std::span<const uint64_t> b, const FormatSpec* fc, uint64_t c,
                  const OpEnv& env, MpfrExact& out);

// The exact value rounded once into float format `to` under env. Returns bits and flags v o u x.
OpResult MpfrRoundExact(const FormatSpec& to, const MpfrExact& x, const OpEnv& env);

// Convenience: exact value then one rounding. `exact`, when given, receives the exact value.
OpResult MpfrSum(const FormatSpec& fx, std::span<const uint64_t> x, const FormatSpec& to,
                 const OpEnv& env, MpfrExact* exact = nullptr);
OpResult MpfrDot(const FormatSpec& fa, std::span<const uint64_t> a, const FormatSpec& fb,
                 std::span<const uint64_t> b, const FormatSpec* fc, uint64_t c,
                 const FormatSpec& to, const OpEnv& env, MpfrExact* exact = nullptr);

// D = A * B (+ C): A is m x k, B is k x n, C and D m x n, all row-major. C may be empty (no
// initial value); otherwise fc is its format. Each D[i][j] is one correctly rounded dot
// product. out.size() == m * n.
void MpfrMatmul(int m, int n, int k, const FormatSpec& fa, std::span<const uint64_t> a,
                const FormatSpec& fb, std::span<const uint64_t> b, const FormatSpec* fc,
                std::span<const uint64_t> c, const FormatSpec& to, const OpEnv& env,
                std::span<OpResult> out);

// The decoder (exposed for tests): the value of `bits` in float format f into `out` (precision
// set to max(p, 2)); returns the kind. With daz, subnormals read as zeros of the same sign.
// signaling is set for NaNs of IEEE-encoded formats with the quiet bit clear.
MpfrExact::Kind MpfrDotDecode(const FormatSpec& f, uint64_t bits, bool daz, mpfr_ptr out,
                              bool* negative, bool* signaling);

// Sets MPFR's (thread-local) exponent range to emulate f (MPFR's x = 0.1b... * 2^e convention:
// emin = MinSubnormalExponent(f) + 1, emax = Emax(f) + 1) and restores the old range on exit.
using MpfrDotRangeGuard = MpfrExponentRange;  // oracles/mpfr_plumbing.h

}  // namespace fpconform

#endif  // FPCONFORM_ORACLES_MPFR_DOT_H_
