// The explicit environment of every operation: rounding mode, saturation, FTZ/DAZ, tininess and
// NaN policy travel in an OpEnv argument; every operation returns {bits, flags}. There is no
// global floating-point state anywhere in fpconform (SoftFloat's globals are the thing to avoid).
//
// Example:
//   OpEnv env;                                   // RNE, no sat, IEEE NaNs, tininess after rounding.
//   env.rounding = Rounding::kTowardZero;
//   OpResult r = Add(Float32(), 0x3F800000, 0x33800000, env);  // 1 + 2^-24
//   r.bits == 0x3F800000;  r.flags == kInexact.
#ifndef FPCONFORM_FORMATS_OP_ENV_H_
#define FPCONFORM_FORMATS_OP_ENV_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fpconform {

// IEEE 754-2019 §4.3 rounding-direction attributes plus round-to-odd and stochastic rounding.
enum class Rounding : uint8_t {
  kNearestEven,   // rne: roundTiesToEven (§4.3.1).
  kNearestAway,   // rna: roundTiesToAway (§4.3.1).
  kTowardZero,    // rtz: roundTowardZero (§4.3.2).
  kUpward,        // rup: roundTowardPositive.
  kDownward,      // rdn: roundTowardNegative.
  kToOdd,         // rto: truncate, then set the last bit if anything was discarded.
  kStochastic,    // sr<k>: see OpEnv::sr_bits.
};

// Status flags (IEEE 754-2019 §7), written as the letters "vzoux" in that order.
using Flags = uint8_t;
inline constexpr Flags kInvalid = 1 << 0;       // v
inline constexpr Flags kDivideByZero = 1 << 1;  // z
inline constexpr Flags kOverflow = 1 << 2;      // o
inline constexpr Flags kUnderflow = 1 << 3;     // u
inline constexpr Flags kInexact = 1 << 4;       // x

// Which NaN bit pattern an operation writes. The behaviour of each profile:
//
//   profile    NaN operand(s)                         NaN from an invalid operation
//   kIeee      first NaN operand, quieted, sign kept   +qNaN (0x7FC00000, 0x7E00, 0x7FC0, 0x7E, 0x7F)
//   kCanonical +qNaN always (RISC-V, ARM default-NaN)  +qNaN
//   kCuda      all-ones +NaN always (0x7FFFFFFF, 0x7FFF, every FP8 NaN 0x7F)
//   kX86       first NaN operand, quieted, sign kept   -qNaN (0xFFC00000, x86 SSE "QNaN floating-
//                                                      point indefinite", Intel SDM Vol.1 §4.8.3.7)
//              and, as x86 VFMADD, no v for fma(0, Inf, qNaN) (see Fma in ops.h)
//
// For kIeee and kX86 a propagated NaN keeps its sign, gets its quiet bit set, and keeps the top
// fraction bits of its payload that fit the destination (as x86 CVTSS2SD does). Only
// IEEE-encoded NaNs carry a payload: a NaN of float8_e4m3fn (S.1111.111) or of an fnuz format
// (0x80, which reads as negative) propagates as a payload-free quiet NaN of its sign. Formats
// with a single NaN (fnuz: 0x80) always write that; float8_e4m3fn writes 0x7F or 0xFF (keeping
// the sign under kIeee/kX86, as ml_dtypes' float8 conversions do; they drop payloads).
// "Quiet" only applies to formats with NanEncoding::kIeee; the others have no signaling NaNs.
enum class NanProfile : uint8_t { kIeee, kCanonical, kCuda, kX86 };

// When an inexact result counts as tiny (IEEE 754-2019 §7.5).
enum class Tininess : uint8_t { kAfterRounding, kBeforeRounding };

struct OpEnv {
  Rounding rounding = Rounding::kNearestEven;
  // Stochastic rounding (Rounding::kStochastic): with k = sr_bits (1..32) and r = the low k
  // bits of sr_random, the result rounds away from zero iff
  //   (top k bits of the discarded fraction, as an integer) + r >= 2^k,
  // else toward zero. Bits of the discarded fraction below its top k are ignored. Deterministic
  // given the bits; a caller drawing r uniformly gets P(away) = (top k bits) / 2^k. Tininess
  // after rounding is decided by the same rule, with the same r, at p bits and an unbounded
  // exponent.
  // Overflow (as CPFloat, Fasi & Mikaitis 2023): sr<k> chooses between the two neighbours of
  // the exact value x in the format *with its exponent range*; above max finite the upper
  // neighbour is the overflow result (+-Inf, or NaN in a format without Inf; +-max finite under
  // sat). So |x| >= max + ulp (ulp = 2^(emax - p + 1), the spacing at max finite) overflows for
  // every r, and |x| in (max, max + ulp) overflows iff the rule above, applied to the discarded
  // fraction (|x| - max) / ulp, rounds away (P = its top k bits / 2^k, about (|x| - max) / ulp),
  // else gives +-max with x alone. An overflow raises o and x, as in the other modes. Examples
  // under sr8 (formats/ops_test.cc, StochasticRoundingTest):
  //   1536 -> float8_e4m3fn (max 448, ulp 32), every r: NaN 0x7F, o x (sat: 0x7E = 448, o x);
  //   65536 -> float16 (max 65504, ulp 32), every r: +Inf 0x7C00, o x;
  //   460 -> float8_e4m3fn: fraction (460 - 448) / 32 = 0.375, top 8 bits 96: NaN with o x
  //     iff 96 + r >= 256 (r >= 160), else 448 with x.
  int sr_bits = 0;
  uint64_t sr_random = 0;
  // sat: a result that would overflow delivers +-max finite instead of +-Inf (or instead of NaN
  // in formats without Inf), in every rounding mode, still with o x. In conversions (only),
  // +-Inf inputs become +-max finite (OCP OFP8 r1.0 Table 3); NaN stays NaN.
  bool saturate = false;
  // ftz: a tiny non-zero result (per `tininess`) is replaced by a zero of the same sign and
  // raises underflow and inexact (x86 MXCSR.FZ, CUDA .ftz).
  bool flush_to_zero = false;
  // daz: subnormal inputs read as zeros of the same sign (x86 MXCSR.DAZ). Raises no flag.
  bool denormals_are_zero = false;
  Tininess tininess = Tininess::kAfterRounding;
  NanProfile nan = NanProfile::kIeee;
};

struct OpResult {
  uint64_t bits = 0;  // In the destination format's container; unused high bits are zero.
  Flags flags = 0;
  friend bool operator==(const OpResult&, const OpResult&) = default;
};

// "rne" "rna" "rtz" "rup" "rdn" "rto" "sr<k>" (k in 1..32). On success sets env.rounding
// (and env.sr_bits for sr<k>) and returns true.
bool ParseRounding(std::string_view text, OpEnv& env);
// "rne", ..., "sr8".
std::string RoundingName(const OpEnv& env);
// "ieee" "canonical" "cuda" "x86".
std::optional<NanProfile> ParseNanProfile(std::string_view text);
std::string_view NanProfileName(NanProfile p);

// Letters in "vzoux" order, or "-" when no flag is set.
std::string FlagsToString(Flags f);
// Writes the same into `out` (at least 5 chars); returns the number of chars written.
int FlagsToChars(Flags f, char* out);

}  // namespace fpconform

#endif  // FPCONFORM_FORMATS_OP_ENV_H_
