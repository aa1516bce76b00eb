// String building for messages and labels, shared by every folder. Debian's Abseil is built with
// its own absl::string_view, so absl::StrCat and StrJoin do not take std::string_view
// (FormatSpec::name is one); these take anything streamable (strings, string views, integers).
// Doubles print with the stream's default 6 significant digits: format them first where exact
// digits matter.
//
// Example:
//   Cat("a.toml:", 7, ": ", std::string_view("k")) == "a.toml:7: k"
//   Join(std::vector<int>{64, 128}, ",") == "64,128"
#ifndef FPCONFORM_FORMATS_STR_CAT_H_
#define FPCONFORM_FORMATS_STR_CAT_H_

#include <sstream>
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

}  // namespace fpconform

#endif  // FPCONFORM_FORMATS_STR_CAT_H_
