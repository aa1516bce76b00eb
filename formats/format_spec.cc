#include "formats/format_spec.h"

#include <array>

namespace fpconform {
namespace {

constexpr FormatSpec FloatRow(std::string_view name, int width, int e, int m, int bias,
                              NonFinite nf, NanEncoding ne, std::string_view description,
                              int pad = 0, bool has_sign = true, bool has_zero = true,
                              bool subnormals = true) {
  return Derive(FormatSpec{name, FormatKind::kFloat, width, e, m, bias, pad, nf, ne,
                           has_sign, has_zero, subnormals, true, description, {}});
}
constexpr FormatSpec IntRow(std::string_view name, int width, bool is_signed,
                            std::string_view description) {
  return FormatSpec{name, FormatKind::kInteger, width, 0, 0, 0, 0, NonFinite::kNanOnly,
                    NanEncoding::kIeee, is_signed, true, false, is_signed, description, {}};
}

constexpr NonFinite kI = NonFinite::kIeee;
constexpr NonFinite kN = NonFinite::kNanOnly;

// Index constants keep the named accessors below in step with the table.
enum Row {
  kF64, kF32, kTF32, kBF16, kF16, kE4M3FN, kE5M2, kE4M3FNUZ, kE5M2FNUZ, kE4M3, kE8M0FNU,
  kI8, kU8, kI32, kRowCount
};

constexpr std::array<FormatSpec, kRowCount> kFormats = {
    // IEEE 754-2019 §3.6 Table 3.5: binary64 p=53 emax=1023; binary32 p=24 emax=127;
    // binary16 p=11 emax=15.
    FloatRow("float64", 64, 11, 52, 1023, kI, NanEncoding::kIeee, "IEEE 754 binary64"),
    FloatRow("float32", 32, 8, 23, 127, kI, NanEncoding::kIeee, "IEEE 754 binary32"),
    // NVIDIA A100 whitepaper: TF32 = 1 sign, 8 exponent, 10 fraction bits; stored as float32
    // with the low 13 bits zero.
    FloatRow("tfloat32", 32, 8, 10, 127, kI, NanEncoding::kIeee,
             "NVIDIA TensorFloat-32 in a float32 container (low 13 bits zero)", 13),
    // bfloat16: the top half of binary32 (Google Brain; Intel BF16 spec rev 1.0).
    FloatRow("bfloat16", 16, 8, 7, 127, kI, NanEncoding::kIeee, "Brain float16"),
    FloatRow("float16", 16, 5, 10, 15, kI, NanEncoding::kIeee, "IEEE 754 binary16"),
    // OCP OFP8 r1.0 Table 1: E4M3 bias 7, no Inf, NaN S.1111.111, max 448.
    FloatRow("float8_e4m3fn", 8, 4, 3, 7, kN, NanEncoding::kAllOnes,
             "OCP OFP8 E4M3 (max 448, no Inf, NaN S.1111.111)"),
    // OCP OFP8 r1.0 Table 1: E5M2 bias 15, IEEE-like with Inf and NaNs, max 57344.
    FloatRow("float8_e5m2", 8, 5, 2, 15, kI, NanEncoding::kIeee, "OCP OFP8 E5M2 (IEEE-like)"),
    // ml_dtypes / Graphcore FP8 (arXiv:2206.02915): bias 8 / 16, single NaN 0x80, no -0, no Inf.
    FloatRow("float8_e4m3fnuz", 8, 4, 3, 8, kN, NanEncoding::kNegativeZero,
             "E4M3 with bias 8, NaN 0x80, no -0, no Inf (max 240)"),
    FloatRow("float8_e5m2fnuz", 8, 5, 2, 16, kN, NanEncoding::kNegativeZero,
             "E5M2 with bias 16, NaN 0x80, no -0, no Inf (max 57344)"),
    // IEEE-754-like E4M3 (ml_dtypes float8_e4m3): Inf at S.1111.000, max 240. The FP8 E4M3 of
    // AWS Trainium1/2 (nki-samples quantize to 240).
    FloatRow("float8_e4m3", 8, 4, 3, 7, kI, NanEncoding::kIeee,
             "IEEE-like E4M3 with Inf (max 240; Trainium1/2 FP8)"),
    // OCP Microscaling Formats (MX) v1.0 §5.4.1: E8M0 scale, unsigned, bias 127, 0xFF = NaN,
    // no zero, values 2^-127 .. 2^127.
    FloatRow("float8_e8m0fnu", 8, 8, 0, 127, kN, NanEncoding::kAllOnes,
             "OCP MX E8M0 scale (unsigned powers of two, 0xFF NaN, no zero)", 0,
             /*has_sign=*/false, /*has_zero=*/false, /*subnormals=*/false),
    IntRow("int8", 8, true, "8-bit two's complement integer"),
    IntRow("uint8", 8, false, "8-bit unsigned integer"),
    IntRow("int32", 32, true, "32-bit two's complement integer"),
};

uint64_t Encode(const FormatSpec& f, bool negative, uint64_t biased_exponent, uint64_t fraction) {
  uint64_t bits = (biased_exponent << f.fraction_bits) | fraction;
  if (negative) bits |= SignBit(f);
  return bits << f.pad_bits;
}

}  // namespace

std::span<const FormatSpec> AllFormats() { return kFormats; }

const FormatSpec* FindFormat(std::string_view name) {
  for (const FormatSpec& f : kFormats) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const FormatSpec& Float64() { return kFormats[kF64]; }
const FormatSpec& Float32() { return kFormats[kF32]; }
const FormatSpec& TFloat32() { return kFormats[kTF32]; }
const FormatSpec& BFloat16() { return kFormats[kBF16]; }
const FormatSpec& Float16() { return kFormats[kF16]; }
const FormatSpec& Float8E4M3FN() { return kFormats[kE4M3FN]; }
const FormatSpec& Float8E5M2() { return kFormats[kE5M2]; }
const FormatSpec& Float8E4M3FNUZ() { return kFormats[kE4M3FNUZ]; }
const FormatSpec& Float8E5M2FNUZ() { return kFormats[kE5M2FNUZ]; }
const FormatSpec& Float8E4M3() { return kFormats[kE4M3]; }
const FormatSpec& Float8E8M0FNU() { return kFormats[kE8M0FNU]; }
const FormatSpec& Int8() { return kFormats[kI8]; }
const FormatSpec& UInt8() { return kFormats[kU8]; }
const FormatSpec& Int32() { return kFormats[kI32]; }

std::string_view NanEncodingName(const FormatSpec& f) {
  if (f.nonfinite == NonFinite::kIeee) return "ieee";
  switch (f.nan_encoding) {
    case NanEncoding::kIeee:
      return "ieee";
    case NanEncoding::kAllOnes:
      return "all-ones";
    case NanEncoding::kNegativeZero:
      return "negative-zero";
  }
  return "?";
}

uint64_t MaxFiniteBits(const FormatSpec& f, bool negative) {
  return Encode(f, negative && f.has_sign, static_cast<uint64_t>(Emax(f) + f.bias),
                MaxFiniteSignificand(f) & FractionMask(f));
}

uint64_t MinNormalBits(const FormatSpec& f) {
  return Encode(f, false, static_cast<uint64_t>(Emin(f) + f.bias), 0);
}

uint64_t MinSubnormalBits(const FormatSpec& f) {
  return f.has_subnormals ? Encode(f, false, 0, 1) : MinNormalBits(f);
}

uint64_t ZeroBits(const FormatSpec& f, bool negative) {
  bool has_negative_zero = f.has_sign && f.nan_encoding != NanEncoding::kNegativeZero;
  return Encode(f, negative && has_negative_zero, 0, 0);
}

uint64_t InfBits(const FormatSpec& f, bool negative) {
  return Encode(f, negative, static_cast<uint64_t>(MaxBiasedExponent(f)), 0);
}

uint64_t OneBits(const FormatSpec& f) { return Encode(f, false, static_cast<uint64_t>(f.bias), 0); }

int64_t IntegerMin(const FormatSpec& f) {
  return f.is_signed ? -(int64_t{1} << (f.width - 1)) : 0;
}

int64_t IntegerMax(const FormatSpec& f) {
  return f.is_signed ? (int64_t{1} << (f.width - 1)) - 1 : (int64_t{1} << f.width) - 1;
}

}  // namespace fpconform
