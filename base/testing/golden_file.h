// Golden copies of what the tool writes (report CSV files, audit documents), pinned byte for
// byte: ExpectGoldenFile compares a test's output with its checked-in copy. A run with
// FPCONFORM_UPDATE_GOLDEN=1 (exactly "1") first rewrites the copy (atomically; a failed write
// fails the test), then compares as always, so that a regenerating run still checks every other
// output against what it just wrote.
//
//   ExpectGoldenFile(kDir + "/report.csv", csv);                 // one output, one copy
//   for (int t : {1, 2, 3}) ExpectGoldenFile(path, Run(t), t == 1);  // several runs, one copy
#ifndef FPCONFORM_BASE_TESTING_GOLDEN_FILE_H_
#define FPCONFORM_BASE_TESTING_GOLDEN_FILE_H_

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/output_file.h"
#include "base/user_file.h"
#include "gtest/gtest.h"

namespace fpconform {

inline bool UpdatingGoldenFiles() {
  const char* v = std::getenv("FPCONFORM_UPDATE_GOLDEN");
  return v != nullptr && std::string_view(v) == "1";
}

// EXPECTs `got` to equal the golden copy at `path`. With FPCONFORM_UPDATE_GOLDEN=1 and
// `may_update`, writes `got` there first.
inline void ExpectGoldenFile(const std::string& path, const std::string& got, bool may_update = true) {
  if (may_update && UpdatingGoldenFiles()) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    const absl::Status written = WriteFileAtomically(path, {got});
    ASSERT_TRUE(written.ok()) << written;
  }
  const absl::StatusOr<std::string> want = ReadUserFile(path, uint64_t{1} << 30, "golden file");
  ASSERT_TRUE(want.ok()) << want.status() << " (FPCONFORM_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(got, *want) << "differs from the golden copy " << path;
}

}  // namespace fpconform

#endif  // FPCONFORM_BASE_TESTING_GOLDEN_FILE_H_
