// The MPFR oracle for the elementwise operations of formats/ops.h: add, sub, mul, div, fma, sqrt
// and convert (float <-> float, float <-> integer, integer <-> integer), under every OpEnv
// setting (rne rna rtz rup rdn rto sr<k>, sat, ftz, daz, tininess before/after rounding).
//
// Independence (DESIGN.md, oracles/): nothing here calls formats/round_pack or formats/ops. The
// oracle reads only the FormatSpec row and the constexpr helpers of format_spec.h, decodes bits
// into an mpfr_t with its own decoder, computes the exact result with MPFR (or, for div, sqrt,
// add and fma, the result truncated to p+70 bits with MPFR_RNDZ plus the ternary value as a
// sticky bit), rounds it with its own quantum-based rounding (below), and encodes the bits with
// its own encoder.
//
// Rounding (one routine, MpfrRoundToFormat): for a value |x| in [2^E, 2^(E+1)) and a quantum
// 2^Q, MPFR splits x / 2^Q exactly into an integer part I and a fraction F; the mode decides
// from (I, F, sticky) whether to add one to I. The value is rounded twice:
//   * with unbounded exponent range at precision p (Q = E - p + 1): that result decides
//     overflow (it exceeds max finite: "round as if the exponent range were unbounded, then
//     apply the range", ops.h) and tininess after rounding (it is below 2^Emin);
//   * if E < Emin, at the subnormal quantum Q = Emin - p + 1: that is the delivered value.
// sr<k> above max finite is decided first, from op_env.h's rule: E > Emax overflows (to Inf,
// NaN without Inf, max finite under sat); for E == Emax, at the quantum of max finite
// (Q = Emax - p + 1), I > M_max overflows and I == M_max with F > 0 overflows iff sr<k> rounds F
// away (else max finite with x).
// Flags follow IEEE 754-2019 §7: underflow = tiny AND inexact (tiny per OpEnv::tininess), with
// the exceptions of the ops.h/op_env.h contracts (ftz always raises u x; float8_e8m0fnu
// delivers 2^-127 below its range, with u only when tiny per env.tininess; formats without Inf
// deliver NaN on overflow, and NaN with v for an Inf converted into them). The choices where the
// headers are silent are listed in oracles/DISAGREEMENTS.md.
//
// NaN results: NaN operands and invalid operations give the NaN of the NanProfile table in
// op_env.h (MpfrNanBits); other NaN results (overflow and x/0 in formats without Inf,
// float8_e8m0fnu's zero/negative rule, Inf into a format without Inf) are some NaN of the
// format. The suites compare NaNs by class except nan_payload_test.
//
// MpfrRecipeRound is the second, textbook path (MPFR's documented IEEE emulation: set
// emin/emax from the format in an RAII guard, round to p bits, mpfr_check_range,
// mpfr_subnormalize). It only covers IEEE-encoded formats with subnormals in rne/rtz/rup/rdn
// and serves to cross-check MpfrRoundToFormat in mpfr_oracle_test.cc.
//
// Thread safety: every function uses thread-local MPFR scratch and MPFR's thread-local
// exponent range (MPFR built with TLS, checked in the test); call from any number of threads.
//
// Example:
//   OpEnv env;
//   MpfrMul(Float8E4M3FN(), 0x7E /*448*/, 0x40 /*2*/, env)  == {0x7F /*NaN*/, kOverflow|kInexact}
//   MpfrMul(Float32(), 0x00800000, 0x3F7FFFFF, env)        == {0x00800000, kUnderflow|kInexact}
#ifndef FPCONFORM_ORACLES_MPFR_ORACLE_H_
#define FPCONFORM_ORACLES_MPFR_ORACLE_H_

#include <cstdint>

#include <mpfr.h>

#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "oracles/mpfr_plumbing.h"

namespace fpconform {

// Correctly rounded results of the ops.h operations, computed with MPFR.
OpResult MpfrAdd(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env);
OpResult MpfrSub(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env);
OpResult MpfrMul(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env);
OpResult MpfrDiv(const FormatSpec& f, uint64_t a, uint64_t b, const OpEnv& env);
OpResult MpfrFma(const FormatSpec& f, uint64_t a, uint64_t b, uint64_t c, const OpEnv& env);
OpResult MpfrSqrt(const FormatSpec& f, uint64_t a, const OpEnv& env);
OpResult MpfrConvert(const FormatSpec& from, const FormatSpec& to, uint64_t a, const OpEnv& env);

// The oracle's own decoder: MpfrDecodeBits, MpfrKind and MpfrDecoded (oracles/mpfr_plumbing.h,
// shared with the reduction oracle mpfr_dot.h; the ops here decode into 64-bit scratch).
bool MpfrIsNanBits(const FormatSpec& f, uint64_t bits);

// The NaN an operation writes per env.nan (op_env.h NanProfile), written from that table:
// `src` (decoded in `src_format`) is the NaN operand to propagate, or nullptr for the NaN of an
// invalid operation. The ops above use it for NaN operands and invalid operations; the NaNs of
// overflow, division by zero (formats without Inf) and float8_e8m0fnu's zero/negative rule are
// some NaN of the format (compare those by class).
uint64_t MpfrNanBits(const FormatSpec& to, const OpEnv& env, const FormatSpec* src_format,
                     const MpfrDecoded* src);

// Rounds (-1)^sign * (|x| + delta) into `f` under `env`, where x is finite non-zero and
// 0 < delta < ulp_P(x) iff sticky (x holds the value truncated to its P bits, P >= p + 34).
// The sign of x is ignored; `sign` gives it. Returns bits and flags o u x (v for
// float8_e8m0fnu negative results).
OpResult MpfrRoundToFormat(const FormatSpec& f, bool sign, mpfr_srcptr x, bool sticky,
                           const OpEnv& env);

// Bits of the value of `y` (which must be representable in `f`, or +-0, or +-Inf).
uint64_t MpfrEncodeValue(const FormatSpec& f, mpfr_srcptr y);

// Sets emin/emax of MPFR (thread-local) to emulate `f` (MPFR convention x = 0.1b.. * 2^e:
// emin = MinSubnormalExponent(f) + 1, emax = Emax(f) + 1) and restores the old range on exit.
using MpfrFormatRange = MpfrExponentRange;  // oracles/mpfr_plumbing.h

// MPFR's documented IEEE recipe (see above). `x` truncated to P >= p + 2 bits with sticky as in
// MpfrRoundToFormat; `rnd` one of MPFR_RNDN/RNDZ/RNDU/RNDD. Only for formats with
// NonFinite::kIeee and subnormals. Returns the bits and the flags o and x.
OpResult MpfrRecipeRound(const FormatSpec& f, bool sign, mpfr_srcptr x, bool sticky,
                         mpfr_rnd_t rnd);

}  // namespace fpconform

#endif  // FPCONFORM_ORACLES_MPFR_ORACLE_H_
