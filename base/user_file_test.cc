// base/user_file.h: what a user-named file may be (regular files only, checked before any read),
// the size limit, the messages, and the provenance hash, each under a fresh temporary directory.
#include "base/user_file.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "base/hash.h"
#include "base/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

namespace fs = std::filesystem;

class UserFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& content) const {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  TempDir tmp_{"fpconform_user_file_test"};
  fs::path dir_{tmp_.path()};
};

TEST_F(UserFileTest, ReadsARegularFileAndASymlinkToOne) {
  const std::string path = Write("m.toml", std::string("name = \"m\"\n\0tail", 16));
  absl::StatusOr<std::string> text = ReadUserFile(path, kMaxTextFileBytes, "model file");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, std::string("name = \"m\"\n\0tail", 16));
  fs::create_symlink(path, Path("link.toml"));
  text = ReadUserFile(Path("link.toml"), kMaxTextFileBytes, "model file");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->size(), 16u);
  text = ReadUserFile(Write("empty", ""), 0);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "");
}

TEST_F(UserFileTest, RefusesWhatIsNotARegularFileBeforeReading) {
  fs::create_directory(Path("d.toml"));
  absl::StatusOr<std::string> r = ReadUserFile(Path("d.toml"), kMaxTextFileBytes, "model file");
  EXPECT_TRUE(absl::IsInvalidArgument(r.status()));
  EXPECT_EQ(r.status().message(),
            Path("d.toml") + ": not a regular file (a directory); a model file must be a regular file");
  // A FIFO with no writer: opening it must not block.
  ASSERT_EQ(::mkfifo(Path("f.toml").c_str(), 0600), 0);
  r = ReadUserFile(Path("f.toml"), kMaxTextFileBytes, "model file");
  EXPECT_TRUE(absl::IsInvalidArgument(r.status()));
  EXPECT_NE(r.status().message().find("(a FIFO)"), std::string::npos) << r.status();
}

TEST_F(UserFileTest, MissingFileIsNotFoundAndLargeFileIsRefused) {
  absl::StatusOr<std::string> r = ReadUserFile(Path("nope.toml"), kMaxTextFileBytes, "model file");
  EXPECT_TRUE(absl::IsNotFound(r.status()));
  EXPECT_EQ(r.status().message(),
            Path("nope.toml") + ": cannot open model file: No such file or directory");
  r = ReadUserFile(Write("big", "0123456789"), 9, "sweep file");
  EXPECT_TRUE(absl::IsInvalidArgument(r.status()));
  EXPECT_EQ(r.status().message(),
            Path("big") + ": 10 bytes, more than the 9-byte limit for a sweep file");
  EXPECT_TRUE(ReadUserFile(Path("big"), 10).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(ReadUserFile("", 10).status()));
}

TEST_F(UserFileTest, TextFileHashIsTheContentHashOrAQuestionMark) {
  const std::string content = "name = \"x\"\n";
  EXPECT_EQ(TextFileHash(Write("x.toml", content)), HexHash(Fnv1a(content)));
  EXPECT_EQ(TextFileHash(Write("e.toml", "")), "fnv1a64:cbf29ce484222325");
  EXPECT_EQ(TextFileHash(Path("missing.toml")), "?");
  fs::create_directory(Path("dir.toml"));
  EXPECT_EQ(TextFileHash(Path("dir.toml")), "?");
}

}  // namespace
}  // namespace fpconform
