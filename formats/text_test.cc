#include "formats/text.h"

#include <string>

#include "base/str_cat.h"

#include "gtest/gtest.h"

namespace fpconform {
namespace {

TEST(TextTest, HeaderExample) {
  const FormatSpec& f = Float8E4M3FN();
  EXPECT_EQ(HexBits(f, 0x7E), "0x7e");
  EXPECT_EQ(FieldBinary(f, 0x7E), "0b0.1111.110");
  EXPECT_EQ(ExactHexFloat(f, 0x7E), "0x1.cp+8");
  EXPECT_EQ(ExactDecimal(f, 0x7E), "448");
  EXPECT_EQ(Describe(f, 0x7E), "0x7e 0b0.1111.110 0x1.cp+8 (448)");
}

TEST(TextTest, Widths) {
  EXPECT_EQ(HexBits(BFloat16(), 0x3F80), "0x3f80");
  EXPECT_EQ(HexBits(Float32(), 1), "0x00000001");
  EXPECT_EQ(HexBits(Float64(), 1), "0x0000000000000001");
  EXPECT_EQ(HexBits(Int8(), 0xFFFFFF80), "0x80");
  // tfloat32 prints its container; the field split omits the 13 pad bits.
  EXPECT_EQ(HexBits(TFloat32(), 0x3F802000), "0x3f802000");
  EXPECT_EQ(FieldBinary(TFloat32(), 0x3F802000), "0b0.01111111.0000000001");
  EXPECT_EQ(FieldBinary(Float8E8M0FNU(), 0x7F), "0b01111111");
  EXPECT_EQ(FieldBinary(Int8(), 0x81), "0b10000001");
}

TEST(TextTest, ExactValues) {
  EXPECT_EQ(ExactHexFloat(Float32(), 0x00000001), "0x1p-149");
  EXPECT_EQ(ExactHexFloat(Float32(), 0xBF800000), "-0x1p+0");
  EXPECT_EQ(ExactHexFloat(Float32(), 0x80000000), "-0x0p+0");
  EXPECT_EQ(ExactHexFloat(Float32(), 0x7F800001), "snan");
  EXPECT_EQ(ExactHexFloat(Float32(), 0xFF800000), "-inf");
  EXPECT_EQ(ExactHexFloat(Float8E5M2(), 0x03), "0x1.8p-15");  // 3 * 2^-16
  EXPECT_EQ(ExactDecimal(Float8E4M3FN(), 0x01), "0.001953125");
  EXPECT_EQ(ExactDecimal(Float16(), 0xFBFF), "-65504");
  EXPECT_EQ(ExactDecimal(Float32(), 0x3DCCCCCD), "0.100000001490116119384765625");
  EXPECT_EQ(ExactDecimal(Float32(), 0x4B800000), "16777216");
  EXPECT_EQ(ExactDecimal(Float64(), 0x0000000000000001).substr(0, 12), "4.9406564584");
  EXPECT_EQ(ExactDecimal(Float64(), 0x0000000000000001).substr(
                ExactDecimal(Float64(), 0x0000000000000001).size() - 5),
            "e-324");
  EXPECT_EQ(ExactDecimal(Float32(), 0x7F7FFFFF), "3.4028234663852885981170418348451692544e+38");
  EXPECT_EQ(ExactDecimal(Int8(), 0xFF), "-1");
  EXPECT_EQ(ExactDecimal(UInt8(), 0xFF), "255");
}


// EscapeText (str_cat.h): one class of bytes per row.
TEST(TextTest, EscapeText) {
  EXPECT_EQ(EscapeText("a\x1b[2Jb\xff"), "a\\x1b[2Jb\\xff");          // The header example.
  EXPECT_EQ(EscapeText("cpu-f32-seq"), "cpu-f32-seq");              // Printable ASCII kept.
  EXPECT_EQ(EscapeText(std::string("a\0b", 3)), "a\\x00b");          // NUL.
  EXPECT_EQ(EscapeText("a\r\n\t\v\f"), "a\\x0d\\x0a\\x09\\x0b\\x0c");  // Line breaks, tabs.
  EXPECT_EQ(EscapeText("\x7f"), "\\x7f");                            // DEL.
  EXPECT_EQ(EscapeText("a\\b"), "a\\x5cb");                          // Backslash: unambiguous.
  EXPECT_EQ(EscapeText("\xc3\xa9t\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80"),
            "\xc3\xa9t\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80");     // Valid UTF-8 kept.
  EXPECT_EQ(EscapeText("\xc2\x9b"), "\\xc2\\x9b");                   // C1 control (CSI).
  EXPECT_EQ(EscapeText("\xc0\xaf"), "\\xc0\\xaf");                   // Overlong.
  EXPECT_EQ(EscapeText("\xed\xa0\x80"), "\\xed\\xa0\\x80");          // Surrogate.
  EXPECT_EQ(EscapeText("\xe2\x80"), "\\xe2\\x80");                   // Truncated sequence.
  EXPECT_EQ(EscapeText("abcdef", 3), "abc... (6 bytes)");            // Cut.
  EXPECT_EQ(EscapeText("\xc3\xa9", 1), "\\xc3... (2 bytes)");        // Cut inside a sequence.
}

}  // namespace
}  // namespace fpconform
