// Shared checks of the libFuzzer harnesses whose input is one user file (model_fuzzer.cc,
// sweep_spec_fuzzer.cc, report_json_fuzzer.cc): a broken check prints the input and aborts (so
// that libFuzzer keeps it), and a file that does not read must give InvalidArgument whose message
// starts with the name the file was read as (DESIGN.md: errors name the file, line and field).
#ifndef FPCONFORM_BASE_TESTING_FUZZ_CHECKS_H_
#define FPCONFORM_BASE_TESTING_FUZZ_CHECKS_H_

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace fpconform::fuzz {

// Prints "<harness>: <what>" and the input on stderr, then aborts.
[[noreturn]] inline void FailOnInput(std::string_view harness, const std::string& what,
                                     std::string_view input) {
  std::fprintf(stderr, "%.*s: %s\ninput (%zu bytes):\n%.*s\n", static_cast<int>(harness.size()),
               harness.data(), what.c_str(), input.size(), static_cast<int>(input.size()),
               input.data());
  std::abort();
}

// absl::Status::message() is absl::string_view, not std::string_view, in Debian's Abseil.
inline bool MessageStartsWith(const absl::Status& s, std::string_view prefix) {
  return std::string_view(s.message().data(), s.message().size()).starts_with(prefix);
}

// `s` (a reader's status for the input read as `file`) is OK, or InvalidArgument naming the file.
inline void CheckFileError(std::string_view harness, const absl::Status& s, std::string_view file,
                           std::string_view input) {
  if (s.ok()) return;
  if (s.code() != absl::StatusCode::kInvalidArgument) {
    FailOnInput(harness, "error is not InvalidArgument: " + s.ToString(), input);
  }
  if (!MessageStartsWith(s, file)) {
    FailOnInput(harness, "error message does not name the file: " + s.ToString(), input);
  }
}

}  // namespace fpconform::fuzz

#endif  // FPCONFORM_BASE_TESTING_FUZZ_CHECKS_H_
