#include "formats/text.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <string>
#include <vector>

#include "formats/ops.h"
#include "formats/round_pack.h"

namespace fpconform {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// A non-negative integer in base 10^9 limbs, little-endian: just enough to print exact decimals.
class Decimal {
 public:
  explicit Decimal(uint64_t v) {
    do {
      limbs_.push_back(static_cast<uint32_t>(v % kBase));
      v /= kBase;
    } while (v != 0);
  }
  void MultiplySmall(uint32_t m) {
    uint64_t carry = 0;
    for (uint32_t& limb : limbs_) {
      uint64_t t = uint64_t{limb} * m + carry;
      limb = static_cast<uint32_t>(t % kBase);
      carry = t / kBase;
    }
    while (carry != 0) {
      limbs_.push_back(static_cast<uint32_t>(carry % kBase));
      carry /= kBase;
    }
  }
  void MultiplyPow2(int n) {
    for (; n >= 29; n -= 29) MultiplySmall(uint32_t{1} << 29);
    if (n > 0) MultiplySmall(uint32_t{1} << n);
  }
  void MultiplyPow5(int n) {
    for (; n >= 13; n -= 13) MultiplySmall(1220703125u);  // 5^13
    uint32_t m = 1;
    for (; n > 0; --n) m *= 5;
    MultiplySmall(m);
  }
  std::string Digits() const {
    std::string s = std::to_string(limbs_.back());
    for (size_t i = limbs_.size() - 1; i-- > 0;) {
      std::string part = std::to_string(limbs_[i]);
      s.append(9 - part.size(), '0');
      s += part;
    }
    return s;
  }

 private:
  static constexpr uint64_t kBase = 1000000000;
  std::vector<uint32_t> limbs_;
};

// The text of a NaN, an infinity or a zero, `sign` then `nan`, "inf" or `zero`; nullopt for a
// finite nonzero value.
std::optional<std::string> SpecialText(const Unpacked& u, const std::string& sign, const char* nan,
                                       const char* zero) {
  switch (u.kind) {
    case Unpacked::Kind::kNaN:
      return sign + nan;
    case Unpacked::Kind::kInf:
      return sign + "inf";
    case Unpacked::Kind::kZero:
      return sign + zero;
    case Unpacked::Kind::kFinite:
      break;
  }
  return std::nullopt;
}

void DropTrailingZeros(std::string& digits) {
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
}

// An exponent as printed after 'p' or 'e': its sign, then its magnitude in decimal.
std::string SignedExponent(int64_t e) {
  std::string s(1, e >= 0 ? '+' : '-');
  return s + std::to_string(e >= 0 ? e : -e);
}

}  // namespace

int HexDigits(const FormatSpec& f, uint64_t bits, char* out) {
  int n = (f.width + 3) / 4;
  bits &= WidthMask(f);
  for (int i = n - 1; i >= 0; --i) {
    out[i] = kHex[bits & 15];
    bits >>= 4;
  }
  return n;
}

std::string HexBits(const FormatSpec& f, uint64_t bits) {
  char buf[16];
  int n = HexDigits(f, bits, buf);
  return "0x" + std::string(buf, static_cast<size_t>(n));
}

std::string FieldBinary(const FormatSpec& f, uint64_t bits) {
  std::string s = "0b";
  auto append_bits = [&](uint64_t v, int count) {
    for (int i = count - 1; i >= 0; --i) s += ((v >> i) & 1) ? '1' : '0';
  };
  if (!IsFloat(f)) {
    append_bits(bits & WidthMask(f), f.width);
    return s;
  }
  uint64_t enc = bits >> f.pad_bits;
  if (f.has_sign) {
    append_bits(enc >> (EncodingBits(f) - 1), 1);
    s += '.';
  }
  append_bits(enc >> f.fraction_bits, f.exponent_bits);
  if (f.fraction_bits > 0) {
    s += '.';
    append_bits(enc, f.fraction_bits);
  }
  return s;
}

std::string ExactHexFloat(const FormatSpec& f, uint64_t bits) {
  if (!IsFloat(f)) return std::to_string(IntegerValue(f, bits));
  Unpacked u = UnpackBits(f, bits);
  std::string sign = u.sign ? "-" : "";
  const char* nan = u.signaling ? "snan" : "nan";
  if (std::optional<std::string> t = SpecialText(u, sign, nan, "0x0p+0")) return *t;
  int len = 64 - std::countl_zero(u.significand);
  int64_t exponent = int64_t{u.exponent} + len - 1;
  uint64_t fraction = u.significand & ((uint64_t{1} << (len - 1)) - 1);
  int fraction_bits = len - 1;
  int pad = (4 - fraction_bits % 4) % 4;
  fraction <<= pad;
  int digits = (fraction_bits + pad) / 4;
  std::string hex;
  for (int i = digits - 1; i >= 0; --i) hex += kHex[(fraction >> (4 * i)) & 15];
  DropTrailingZeros(hex);
  std::string s = sign + "0x1";
  if (!hex.empty()) s += "." + hex;
  return s + "p" + SignedExponent(exponent);
}

std::string ExactDecimal(const FormatSpec& f, uint64_t bits) {
  if (!IsFloat(f)) return std::to_string(IntegerValue(f, bits));
  Unpacked u = UnpackBits(f, bits);
  std::string sign = u.sign ? "-" : "";
  if (std::optional<std::string> t = SpecialText(u, sign, "nan", "0")) return *t;
  // value = N / 10^m with N = sig * 2^exp (exp >= 0, m = 0) or sig * 5^-exp (m = -exp).
  Decimal n(u.significand);
  int m = 0;
  if (u.exponent >= 0) {
    n.MultiplyPow2(u.exponent);
  } else {
    m = -u.exponent;
    n.MultiplyPow5(m);
  }
  std::string d = n.Digits();
  int len = static_cast<int>(d.size());
  int e10 = len - 1 - m;
  if (e10 < -6 || e10 >= 21) {
    std::string tail = d.substr(1);
    DropTrailingZeros(tail);
    std::string s = sign + d.substr(0, 1);
    if (!tail.empty()) s += "." + tail;
    return s + "e" + SignedExponent(e10);
  }
  std::string int_part, frac_part;
  if (len > m) {
    int_part = d.substr(0, static_cast<size_t>(len - m));
    frac_part = d.substr(static_cast<size_t>(len - m));
  } else {
    int_part = "0";
    frac_part = std::string(static_cast<size_t>(m - len), '0') + d;
  }
  DropTrailingZeros(frac_part);
  return sign + int_part + (frac_part.empty() ? "" : "." + frac_part);
}

std::string Describe(const FormatSpec& f, uint64_t bits) {
  return HexBits(f, bits) + " " + FieldBinary(f, bits) + " " + ExactHexFloat(f, bits) + " (" +
         ExactDecimal(f, bits) + ")";
}

}  // namespace fpconform
