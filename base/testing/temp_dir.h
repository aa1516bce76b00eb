// The scratch folder of a test that writes files: a fresh directory under the system's temporary
// directory ($TMPDIR, else /tmp), made by mkdtemp (so never one that already existed, nothing a
// user owns), and removed with everything in it when the object goes. A test that cannot make one
// aborts: no test may fall back to writing anywhere else.
//
//   fpconform::TempDir dir("model_test");    // e.g. /tmp/model_test.Ab12Cd
//   std::ofstream(dir / "m.toml") << text;   // dir / "m.toml": a std::string
//   LoadModelFile(dir / "m.toml");
#ifndef FPCONFORM_BASE_TESTING_TEMP_DIR_H_
#define FPCONFORM_BASE_TESTING_TEMP_DIR_H_

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace fpconform {

class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "fpconform_test") {
    std::error_code ec;
    const std::filesystem::path base = std::filesystem::temp_directory_path(ec);
    if (ec) {
      std::fprintf(stderr, "TempDir: no temporary directory: %s\n", ec.message().c_str());
      std::abort();
    }
    std::string t = (base / (std::string(prefix) + ".XXXXXX")).string();
    if (::mkdtemp(t.data()) == nullptr) {
      std::perror(("TempDir: mkdtemp " + t).c_str());
      std::abort();
    }
    path_ = t;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // (path() / name).string(): a file's path as the readers and writers under test take it.
  std::string operator/(std::string_view name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace fpconform

#endif  // FPCONFORM_BASE_TESTING_TEMP_DIR_H_
