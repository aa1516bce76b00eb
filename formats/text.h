// Text forms of values, so that every failure explains itself: hex bits, the field-split binary,
// the exact value as a hex-float and as an exact decimal. Integers print as decimal.
//
// Example (float8_e4m3fn, bits 0x7E):
//   HexBits       -> "0x7e"
//   FieldBinary   -> "0b0.1111.110"
//   ExactHexFloat -> "0x1.cp+8"
//   ExactDecimal  -> "448"
//   Describe      -> "0x7e 0b0.1111.110 0x1.cp+8 (448)"
#ifndef FPCONFORM_FORMATS_TEXT_H_
#define FPCONFORM_FORMATS_TEXT_H_

#include <cstdint>
#include <string>

#include "formats/format_spec.h"

namespace fpconform {

// Zero-padded to the container width: 2 hex digits for 8-bit formats, 4 for 16, 8 for 32.
std::string HexBits(const FormatSpec& f, uint64_t bits);
// Writes the same digits (no "0x") into out; returns the count (width/4 digits).
int HexDigits(const FormatSpec& f, uint64_t bits, char* out);
// "0b<sign>.<exponent>.<fraction>" (no sign field for unsigned formats, the tfloat32 pad bits
// omitted). Integers: "0b" followed by all bits.
std::string FieldBinary(const FormatSpec& f, uint64_t bits);
// C99 %a style with the minimal number of hex digits, exact: "0x1.cp+8", "-0x1p-9", "0x0p+0",
// "-0x0p+0", "inf", "-inf", "nan", "-nan", "snan". Subnormals print normalized ("0x1p-9").
std::string ExactHexFloat(const FormatSpec& f, uint64_t bits);
// The exact decimal expansion, every digit (every binary fraction terminates): "448",
// "-0.001953125". Values with |x| < 1e-6 or >= 1e21 use scientific notation, still exact:
// float32 0x00000001 -> "1.40129846432481707092372958328991613128026194187651577175706828388979108268586060148663818836212158203125e-45".
// "inf", "-inf", "nan" for non-finite values; integers print as signed/unsigned decimal.
std::string ExactDecimal(const FormatSpec& f, uint64_t bits);
// HexBits, FieldBinary, ExactHexFloat, and ExactDecimal in parentheses.
std::string Describe(const FormatSpec& f, uint64_t bits);

}  // namespace fpconform

#endif  // FPCONFORM_FORMATS_TEXT_H_
