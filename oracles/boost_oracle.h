// The independent second oracle for reductions (sum, dot product with optional initial value):
// exact value with Boost.Multiprecision integers, rounding by a search over the target's bit
// patterns. It shares no code with formats/round_pack, formats/ops or the MPFR oracles; its
// purpose is to be checked bit for bit against mpfr_dot.h (oracle_crosscheck_test.cc).
//
// Exact value. Each input is decoded (own decoder, from the FormatSpec fields) into
// (sign, integer significand M, exponent e) with value M * 2^e; a product is (Ma * Mb, ea + eb)
// in 128 bits. The sum is a big fixed-point integer: S = sum_i +-M_i * 2^(e_i - L) in a
// boost::multiprecision::cpp_int, with L = the smallest e_i, and value S * 2^L. No rounding.
//
// Rounding. The positive encodings 0 .. max finite of a float format are ordered like their
// values. A binary search finds the largest encoding whose value is <= |x| (exact comparison of
// M * 2^e with S * 2^L); the neighbour above is the next encoding, or, above max finite, the
// successor of max finite with unbounded exponent ((M_max + 1) * 2^e_max: 2^128 in float32,
// 480 in float8_e4m3fn). The mode picks one of the two neighbours by exact comparison with
// their midpoint; ties go to the even encoding (last bit 0). Result = the successor, or |x| at
// or above it, is an overflow. Tininess after rounding compares |x| with the p-bit neighbours
// of 2^Emin ((2^p - 1) * 2^(Emin - p), odd, and 2^Emin, even) the same way.
//
// Semantics: the same contract as mpfr_dot.h (ops.h / op_env.h): overflow per mode (rne rna
// -> Inf, rtz rto -> max finite, rup rdn toward their own infinity, sr<k> -> Inf: its two
// neighbours above max finite are max finite and the overflow result, so |x| at or above the
// successor always overflows), Inf -> NaN without Inf, sat -> max
// finite; u = tiny (env.tininess) and inexact; ftz; daz; no -0 in fnuz; the special values and
// exact-zero signs of mpfr_dot.h. NaN results are some NaN of the format (compare by class).
//
// Supported targets: every float format of the table except float8_e8m0fnu (precision 1:
// "ties to even" is not defined by the encoding there); every mode including rto and sr<k>.
// BoostSupports() says so; the other calls abort on an unsupported target.
//
// Thread safety: no shared state; BoostExact objects are not shared between threads.
//
// Example:
//   std::vector<uint64_t> x = {0x7E /*448*/, 0x60 /*32*/};
//   OpEnv env;                                         // rne, no sat
//   BoostSum(Float8E4M3FN(), x, Float8E4M3FN(), env) == OpResult{0x7F /*NaN*/, kOverflow|kInexact}
//   env.saturate = true;                               // -> {0x7E /*448*/, kOverflow|kInexact}
#ifndef FPCONFORM_ORACLES_BOOST_ORACLE_H_
#define FPCONFORM_ORACLES_BOOST_ORACLE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "formats/format_spec.h"
#include "formats/op_env.h"

namespace fpconform {

class BoostExact {
 public:
  enum class Kind : uint8_t { kZero, kFinite, kInf, kNaN };
  BoostExact();
  ~BoostExact();
  BoostExact(const BoostExact&) = delete;
  BoostExact& operator=(const BoostExact&) = delete;

  Kind kind() const;
  bool negative() const;
  bool zero_sign_fixed() const;  // As MpfrExact::zero_sign_fixed.
  Flags flags() const;           // v for invalid reductions.
  // The same canonical text as MpfrExact::ToText: "0" "-0" "inf" "-inf" "nan" "[-]0x<M odd>p<e>".
  std::string ToText() const;

  struct Impl;
  Impl& impl() { return *impl_; }
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// True when BoostRoundExact supports target `to` (every OpEnv setting is supported).
bool BoostSupports(const FormatSpec& to);

// Exact sum / dot product (c included when fc != nullptr). env: only denormals_are_zero is read.
void BoostExactSum(const FormatSpec& fx, std::span<const uint64_t> x, const OpEnv& env,
                   BoostExact& out);
void BoostExactDot(const FormatSpec& fa, std::span<const uint64_t> a, const FormatSpec& fb,
                   std::span<const uint64_t> b, const FormatSpec* fc, uint64_t c,
                   const OpEnv& env, BoostExact& out);

// The exact value rounded once into `to` (BoostSupports(to) must hold). Flags v o u x.
OpResult BoostRoundExact(const FormatSpec& to, const BoostExact& x, const OpEnv& env);

OpResult BoostSum(const FormatSpec& fx, std::span<const uint64_t> x, const FormatSpec& to,
                  const OpEnv& env);
OpResult BoostDot(const FormatSpec& fa, std::span<const uint64_t> a, const FormatSpec& fb,
                  std::span<const uint64_t> b, const FormatSpec* fc, uint64_t c,
                  const FormatSpec& to, const OpEnv& env);

}  // namespace fpconform

#endif  // FPCONFORM_ORACLES_BOOST_ORACLE_H_
