#include "base/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The mode a new file gets: 0666 without the umask's bits.
mode_t DefaultMode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

TEST(WriteFileAtomicallyTest, WritesThePiecesInOrderWithTheUsualMode) {
  TempDir tmp("fpconform_output_file_test");
  const std::string path = tmp / "t.npy";
  ASSERT_TRUE(WriteFileAtomically(path, {"head", "", std::string_view("\0body", 5)}).ok());
  EXPECT_EQ(Slurp(path), std::string("head\0body", 9));
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, DefaultMode());  // Not mkstemp's 0600.
  EXPECT_EQ(Names(tmp.path()), std::vector<std::string>{"t.npy"});  // No temporary left.
}

TEST(WriteFileAtomicallyTest, ReplacesAnExistingFileAndASymbolicLink) {
  TempDir tmp("fpconform_output_file_test");
  const std::string path = tmp / "a";
  ASSERT_TRUE(WriteFileAtomically(path, {"old old old"}).ok());
  ASSERT_TRUE(WriteFileAtomically(path, {"new"}).ok());
  EXPECT_EQ(Slurp(path), "new");  // Replaced, not overwritten in place.
  const std::string target = tmp / "target", link = tmp / "link";
  ASSERT_TRUE(WriteFileAtomically(target, {"kept"}).ok());
  fs::create_symlink(target, link);
  ASSERT_TRUE(WriteFileAtomically(link, {"file"}).ok());
  EXPECT_FALSE(fs::is_symlink(link));
  EXPECT_EQ(Slurp(link), "file");
  EXPECT_EQ(Slurp(target), "kept");
}

TEST(WriteFileAtomicallyTest, AFailureLeavesThePathAndNoTemporary) {
  TempDir tmp("fpconform_output_file_test");
  const std::string missing = tmp / "no-such-dir/t.npy";
  const absl::Status s = WriteFileAtomically(missing, {"x"});
  EXPECT_EQ(s, absl::InvalidArgumentError(missing + ": cannot create a temporary file beside it: "
                                                     "No such file or directory"));
  // A directory at the path: the rename fails; the directory and its content stay.
  const std::string dir = tmp / "d";
  fs::create_directory(dir);
  ASSERT_TRUE(WriteFileAtomically(dir + "/inside", {"i"}).ok());
  const absl::Status r = WriteFileAtomically(dir, {"x"});
  EXPECT_EQ(r, absl::InvalidArgumentError(
                   dir + ": cannot rename the temporary file to it: Is a directory"));
  EXPECT_EQ(Slurp(dir + "/inside"), "i");
  EXPECT_EQ(Names(tmp.path()), std::vector<std::string>{"d"});
}

TEST(WriteAllToFdTest, AFullDeviceIsAWriteError) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full";
  const int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(WriteAllToFd(fd, "x"), ENOSPC);
  EXPECT_EQ(WriteAllToFd(fd, ""), 0);  // Nothing to write: no call, no error.
  ::close(fd);
}

TEST(WriteAllToFdTest, WritesMoreThanAPipeHoldsAtOnce) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const std::string data(1 << 20, 'z');  // Beyond the 64 KiB pipe buffer: short writes.
  std::string got;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(p[0]);
    ::_exit(WriteAllToFd(p[1], data) == 0 ? 0 : 1);
  }
  ::close(p[1]);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(got, data);
}

TEST(WriteNewFileTest, CreatesAndRefusesAnExistingFile) {
  TempDir tmp("fpconform_output_file_test");
  const std::string path = tmp / "report.md";
  ASSERT_TRUE(WriteNewFile(path, "# r\n").ok());
  EXPECT_EQ(Slurp(path), "# r\n");
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, DefaultMode());
  EXPECT_EQ(WriteNewFile(path, "other"),
            absl::InternalError(path + ": cannot create: File exists"));
  EXPECT_EQ(Slurp(path), "# r\n");
}

}  // namespace
}  // namespace fpconform
