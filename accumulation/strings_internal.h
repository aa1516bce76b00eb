// Internal string helpers for accumulation/. Debian's Abseil is built with its own
// absl::string_view, so absl::StrCat and StrJoin do not take std::string_view (FormatSpec::name
// is one); these take anything streamable.
#ifndef FPCONFORM_ACCUMULATION_STRINGS_INTERNAL_H_
#define FPCONFORM_ACCUMULATION_STRINGS_INTERNAL_H_

#include <sstream>
#include <string>
#include <string_view>

namespace fpconform::accumulation_internal {

template <typename... T>
std::string Cat(const T&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

template <typename C>
std::string Join(const C& items, std::string_view sep) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += sep;
    out += std::string_view(item);
  }
  return out;
}

}  // namespace fpconform::accumulation_internal

#endif  // FPCONFORM_ACCUMULATION_STRINGS_INTERNAL_H_
