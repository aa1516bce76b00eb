// Internal string helpers for reports/. Debian's Abseil is built with its own
// absl::string_view, so absl::StrCat and StrJoin do not take std::string_view; these take
// anything streamable (integers and strings; doubles go through FormatDouble first).
#ifndef FPCONFORM_REPORTS_STRINGS_INTERNAL_H_
#define FPCONFORM_REPORTS_STRINGS_INTERNAL_H_

#include <sstream>
#include <string>
#include <string_view>

namespace fpconform::reports {

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

}  // namespace fpconform::reports

#endif  // FPCONFORM_REPORTS_STRINGS_INTERNAL_H_
