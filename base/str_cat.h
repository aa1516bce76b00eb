// String building for messages and labels, shared by every folder. Debian's Abseil is built with
// its own absl::string_view, so absl::StrCat and StrJoin do not take std::string_view
// (FormatSpec::name is one); these take anything streamable (strings, string views, integers).
// Doubles print with the stream's default 6 significant digits: format them first where exact
// digits matter.
//
// Example:
//   Cat("a.toml:", 7, ": ", std::string_view("k")) == "a.toml:7: k"
//   Join(std::vector<int>{64, 128}, ",") == "64,128"
//   EscapeText("a\x1b[2Jb\xff") == "a\\x1b[2Jb\\xff"   (as printed: a\x1b[2Jb\xff)
//   ParseDecimal<int64_t>("64", 1, 1 << 24) == 64;  ParseDecimal<int64_t>(" 64", 1, 100) == nullopt
#ifndef FPCONFORM_BASE_STR_CAT_H_
#define FPCONFORM_BASE_STR_CAT_H_

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <system_error>
#include <type_traits>
#include <string>
#include <string_view>

namespace fpconform {

template <typename... T>
std::string Cat(const T&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

template <typename C>
std::string Join(const C& items, std::string_view sep) {
  std::ostringstream os;
  bool first = true;
  for (const auto& item : items) {
    if (!first) os << sep;
    first = false;
    os << item;
  }
  return os.str();
}

// User text (a name, a description, a token) as it may appear in a message or a listing:
// printable ASCII and well-formed UTF-8 of code points >= U+00A0 are kept; every other byte
// (control characters incl. ESC, CR, NUL, DEL; the C1 controls U+0080..U+009F; malformed or
// overlong UTF-8, 0xff) and the backslash itself become "\xNN" (lowercase hex), so that the
// text can never break a message's line or drive the terminal, and the escaping is unambiguous.
// When `s` is longer than max_bytes, only its first max_bytes bytes are shown, followed by
// "... (N bytes)".
inline std::string EscapeText(std::string_view s, size_t max_bytes = std::string_view::npos) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  const size_t n = s.size() < max_bytes ? s.size() : max_bytes;
  out.reserve(n);
  auto escape = [&out](unsigned char c) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence (RFC 3629: no overlongs, no surrogates, <= U+10FFFF) of a
    // code point >= U+00A0, entirely within the shown bytes.
    const size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                       : c >= 0xe0 && c <= 0xef ? 3
                       : c >= 0xf0 && c <= 0xf4 ? 4
                                                : 0;
    if (len > 0 && i + len <= n) {
      uint32_t cp = c & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
      bool ok = true;
      for (size_t j = 1; j < len && ok; ++j) {
        const auto cc = static_cast<unsigned char>(s[i + j]);
        ok = (cc & 0xc0) == 0x80;
        cp = (cp << 6) | (cc & 0x3f);
      }
      const uint32_t min = len == 2 ? 0xa0 : len == 3 ? 0x800 : 0x10000;
      ok = ok && cp >= min && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
      if (ok) {
        out.append(s.substr(i, len));
        i += len;
        continue;
      }
    }
    escape(c);
    ++i;
  }
  if (n < s.size()) {
    std::ostringstream os;
    os << "... (" << s.size() << " bytes)";
    out += os.str();
  }
  return out;
}

// A decimal integer typed by a user (a command-line value), parsed strictly: the whole of `s` is
// the number (std::from_chars: digits, a leading '-' only for signed T; no '+', no whitespace,
// no "0x", no "1e3"), and it lies in lo..hi. nullopt otherwise, including on overflow: a value
// is never wrapped or saturated. The caller's message names the valid range.
template <typename T>
std::optional<T> ParseDecimal(std::string_view s, T lo, T hi) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  T v{};
  const char* end = s.data() + s.size();
  const auto [p, ec] = std::from_chars(s.data(), end, v, 10);
  if (s.empty() || ec != std::errc() || p != end || v < lo || v > hi) return std::nullopt;
  return v;
}

}  // namespace fpconform

#endif  // FPCONFORM_BASE_STR_CAT_H_
