// What the sweep-file tests share (sweep_spec_test.cc, sweep_test.cc): a sweep file's text with
// one replacement, and the message a text gives when read as a sweep file.
//
// Example:
//   EXPECT_EQ(ParseError(Replace(kSpec, "ks = [64, 1024]", "ks = []")),
//             "s.toml:6: ks: must be a non-empty array of integers K >= 1");
#ifndef FPCONFORM_REPORTS_SWEEP_TEST_SUPPORT_H_
#define FPCONFORM_REPORTS_SWEEP_TEST_SUPPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "reports/sweep.h"

namespace fpconform::reports {

// s with its first `from` replaced by `to`; a test failure (and s unchanged) where s has no `from`.
inline std::string Replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// The whole message of ParseSweepSpec(text, file), or "(parsed)" where it reads.
inline std::string ParseError(const std::string& text, const std::string& file = "s.toml") {
  absl::StatusOr<SweepSpec> s = ParseSweepSpec(text, file);
  if (s.ok()) return "(parsed)";
  return std::string(s.status().message());
}

}  // namespace fpconform::reports

#endif  // FPCONFORM_REPORTS_SWEEP_TEST_SUPPORT_H_
