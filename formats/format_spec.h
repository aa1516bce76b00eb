// The format table: one constexpr row per number format, in the manner of LLVM APFloat's
// fltSemantics. Adding a format is adding a row to kFormats in format_spec.cc; every limit
// (max finite, min normal, epsilon, ...) is derived from the row, never typed in.
//
// Formats are named by their ml_dtypes ids ("float8_e4m3fn", never a bare "E4M3").
//
// Sources:
//   IEEE 754-2019 §3.3 (binary16/32/64 parameters), §3.4 (binary interchange encoding).
//   OCP 8-bit Floating Point Specification (OFP8) r1.0, Table 1 (E4M3: bias 7, max 448, NaN
//     S.1111.111, no Inf; E5M2: bias 15, IEEE-like). Cite Table 1, not the glossary of §4.2,
//     which swaps the two biases.
//   ml_dtypes float8.h: float8_e4m3fnuz / float8_e5m2fnuz (bias 8 / 16, single NaN 0x80, no -0),
//     float8_e4m3 (IEEE-like: bias 7, Inf at S.1111.000, max 240), float8_e8m0fnu (OCP MX v1.0
//     §5.4.1 scale: unsigned, bias 127, 0xFF NaN, no zero).
//   NVIDIA A100 whitepaper (TF32: 8 exponent bits, 10 fraction bits); fpconform stores tfloat32
//     in a 32-bit container with the float32 layout and the low 13 bits zero.
//
// Example:
//   const FormatSpec& f = *FindFormat("float8_e4m3fn");
//   MaxFiniteBits(f) == 0x7E;  Emax(f) == 8;  Precision(f) == 4.
#ifndef FPCONFORM_FORMATS_FORMAT_SPEC_H_
#define FPCONFORM_FORMATS_FORMAT_SPEC_H_

#include <cstdint>
#include <span>
#include <string_view>

namespace fpconform {

enum class FormatKind : uint8_t { kFloat, kInteger };

// Which non-finite values the encoding has (APFloat's fltNonfiniteBehavior).
enum class NonFinite : uint8_t {
  kIeee,     // +-Inf and NaNs at the all-ones exponent (IEEE 754 §3.4).
  kNanOnly,  // No Inf; NaN encodings given by NanEncoding; every other pattern is finite.
};

// Where the NaNs of a kNanOnly format live (APFloat's fltNanEncoding).
enum class NanEncoding : uint8_t {
  kIeee,          // Exponent all ones, fraction non-zero; top fraction bit = quiet.
  kAllOnes,       // Exponent and fraction all ones, either sign (float8_e4m3fn: 0x7F, 0xFF).
  kNegativeZero,  // The pattern of -0 (1.000...0) is the only NaN; there is no -0 (fnuz).
};

// IEEE 754 binary layouts whose operations have a compile-time specialized entry for normal
// operands (formats/ops.cc): sign, exponent and fraction fields of the standard sizes, bias
// 2^(E-1) - 1, Inf and NaN as IEEE 754, subnormals, no pad bits. A copy of a row with kNone
// takes the general path with the same results (formats/ops_test.cc compares the two).
enum class FastLayout : uint8_t { kNone, kBinary32, kBFloat16, kBinary16 };

struct FormatSpec {
  std::string_view name;  // ml_dtypes id.
  FormatKind kind;
  int width;          // Bits of the storage container (32 for tfloat32).
  // Float formats only (zero for integers):
  int exponent_bits;  // Width of the biased exponent field.
  int fraction_bits;  // Stored fraction bits (precision p = fraction_bits + 1).
  int bias;           // Value of a normal = 2^(E - bias) * 1.f.
  int pad_bits;       // Low container bits that are always zero (13 for tfloat32).
  NonFinite nonfinite;
  NanEncoding nan_encoding;
  bool has_sign;      // false: unsigned format (float8_e8m0fnu).
  bool has_zero;      // false: no encoding of zero (float8_e8m0fnu).
  bool has_subnormals;
  // Integer formats only:
  bool is_signed;
  std::string_view description;  // One line for `fpconform formats`.

  // Derived from the fields above when the table is built (see Derive() in format_spec.cc and
  // the constexpr functions below, which define them); cached for the hot paths.
  struct Derived {
    int precision = 0;
    int emin = 0;
    int emax = 0;
    int encoding_bits = 0;
    uint64_t max_biased_exponent = 0;
    uint64_t fraction_mask = 0;
    uint64_t encoding_mask = 0;
    uint64_t sign_bit = 0;
    uint64_t max_significand = 0;
    // The IEEE 754 binary layout the operations' both-normal fast paths specialize on
    // (FastLayoutOf below), or kNone.
    FastLayout fast_layout = FastLayout::kNone;
  } d;
};

// All rows, in a stable order (the order `fpconform formats` prints).
std::span<const FormatSpec> AllFormats();

// The row named `name` (ml_dtypes id), or nullptr.
const FormatSpec* FindFormat(std::string_view name);

// Named rows for code that needs a specific format.
const FormatSpec& Float64();
const FormatSpec& Float32();
const FormatSpec& TFloat32();
const FormatSpec& BFloat16();
const FormatSpec& Float16();
const FormatSpec& Float8E4M3FN();
const FormatSpec& Float8E5M2();
const FormatSpec& Float8E4M3FNUZ();
const FormatSpec& Float8E5M2FNUZ();
const FormatSpec& Float8E4M3();
const FormatSpec& Float8E8M0FNU();
const FormatSpec& Int8();
const FormatSpec& UInt8();
const FormatSpec& Int32();

// ---- Derived parameters (float formats). All are exact functions of the row. ----

constexpr bool IsFloat(const FormatSpec& f) { return f.kind == FormatKind::kFloat; }
// p: significand bits including the implicit one.
constexpr int Precision(const FormatSpec& f) { return f.fraction_bits + 1; }
// Bits that carry the encoding (width minus pad bits): 19 for tfloat32.
constexpr int EncodingBits(const FormatSpec& f) { return f.width - f.pad_bits; }
constexpr int MaxBiasedExponent(const FormatSpec& f) { return (1 << f.exponent_bits) - 1; }
// Unbiased exponent of the smallest normal. For formats without subnormals (float8_e8m0fnu),
// biased exponent 0 is a normal value and Emin = -bias.
constexpr int Emin(const FormatSpec& f) { return (f.has_subnormals ? 1 : 0) - f.bias; }
// Unbiased exponent of the largest finite value.
constexpr int Emax(const FormatSpec& f) {
  int top = MaxBiasedExponent(f);
  if (f.nonfinite == NonFinite::kIeee || f.nan_encoding == NanEncoding::kIeee) --top;
  if (f.nan_encoding == NanEncoding::kAllOnes && f.fraction_bits == 0) --top;  // e8m0: 0xFF NaN.
  return top - f.bias;
}
// Significand (with implicit bit, p bits) of the largest finite value. All ones except where
// the all-ones pattern is NaN (float8_e4m3fn: 1.110).
constexpr uint64_t MaxFiniteSignificand(const FormatSpec& f) {
  uint64_t all = (uint64_t{1} << Precision(f)) - 1;
  if (f.nan_encoding == NanEncoding::kAllOnes && f.fraction_bits > 0) return all - 1;
  return all;
}
// Field masks of the encoding (before pad bits are added back).
constexpr uint64_t FractionMask(const FormatSpec& f) {
  return (uint64_t{1} << f.fraction_bits) - 1;
}
constexpr uint64_t SignBit(const FormatSpec& f) {
  return f.has_sign ? uint64_t{1} << (EncodingBits(f) - 1) : 0;
}
constexpr uint64_t WidthMask(const FormatSpec& f) {
  return f.width >= 64 ? ~uint64_t{0} : (uint64_t{1} << f.width) - 1;
}
// The value of an integer format's container (sign-extended for a signed format, zero-extended
// otherwise; bits above the width ignored).
constexpr int64_t IntegerValue(const FormatSpec& f, uint64_t bits) {
  bits &= WidthMask(f);
  if (f.is_signed && f.width < 64 && ((bits >> (f.width - 1)) & 1)) {
    return static_cast<int64_t>(bits | ~WidthMask(f));
  }
  return static_cast<int64_t>(bits);
}

// Bit patterns of special values, in the container (pad bits included).
// Where f's NaNs live, as `fpconform formats` and Python's fpconform.formats() name it: "ieee"
// (an IEEE format, or a kNanOnly one with IEEE NaNs), "all-ones", "negative-zero".
std::string_view NanEncodingName(const FormatSpec& f);

uint64_t MaxFiniteBits(const FormatSpec& f, bool negative = false);
uint64_t MinNormalBits(const FormatSpec& f);     // Smallest positive normal.
uint64_t MinSubnormalBits(const FormatSpec& f);  // Smallest positive value (normal if no subnormals).
uint64_t ZeroBits(const FormatSpec& f, bool negative = false);  // -0 is +0 where there is no -0.
uint64_t InfBits(const FormatSpec& f, bool negative = false);   // Only for NonFinite::kIeee.
uint64_t OneBits(const FormatSpec& f);
// Epsilon: the distance from 1 to the next larger value, as a power of two exponent: 2^(1-p).
constexpr int EpsilonExponent(const FormatSpec& f) { return 1 - Precision(f); }
// Unit roundoff u = 2^-p (round to nearest).
constexpr int UnitRoundoffExponent(const FormatSpec& f) { return -Precision(f); }
// Exponent of the smallest positive value: Emin - (p - 1) with subnormals, Emin without.
constexpr int MinSubnormalExponent(const FormatSpec& f) {
  return f.has_subnormals ? Emin(f) - f.fraction_bits : Emin(f);
}

// `f` with its cached FormatSpec::Derived fields filled from the fields above. The table rows
// are built with it; so is any variant made at run time (e.g. an accumulator format with fewer
// fraction bits): change a field, then call this.
constexpr FastLayout FastLayoutOf(const FormatSpec& f) {
  if (!IsFloat(f) || f.pad_bits != 0 || f.nonfinite != NonFinite::kIeee ||
      f.nan_encoding != NanEncoding::kIeee || !f.has_sign || !f.has_zero || !f.has_subnormals ||
      f.width != 1 + f.exponent_bits + f.fraction_bits ||
      f.bias != (1 << (f.exponent_bits - 1)) - 1) {
    return FastLayout::kNone;
  }
  if (f.exponent_bits == 8 && f.fraction_bits == 23) return FastLayout::kBinary32;
  if (f.exponent_bits == 8 && f.fraction_bits == 7) return FastLayout::kBFloat16;
  if (f.exponent_bits == 5 && f.fraction_bits == 10) return FastLayout::kBinary16;
  return FastLayout::kNone;
}

constexpr FormatSpec Derive(FormatSpec f) {
  if (!IsFloat(f)) return f;
  f.d.precision = Precision(f);
  f.d.emin = Emin(f);
  f.d.emax = Emax(f);
  f.d.encoding_bits = EncodingBits(f);
  f.d.max_biased_exponent = static_cast<uint64_t>(MaxBiasedExponent(f));
  f.d.fraction_mask = FractionMask(f);
  f.d.encoding_mask = (uint64_t{1} << (EncodingBits(f) - 1) << 1) - 1;
  f.d.sign_bit = SignBit(f);
  f.d.max_significand = MaxFiniteSignificand(f);
  f.d.fast_layout = FastLayoutOf(f);
  return f;
}

// Integer range (integer formats).
int64_t IntegerMin(const FormatSpec& f);
int64_t IntegerMax(const FormatSpec& f);

}  // namespace fpconform

#endif  // FPCONFORM_FORMATS_FORMAT_SPEC_H_
