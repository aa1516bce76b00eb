// Reading files that a user names (model files, sweep files, report.json, tensor files, calc
// input files). Every reader of user input goes through here, so that no input can crash,
// hang or exhaust memory before its own checks run:
//   * only regular files are read: a symlink is followed, and its target must be a regular
//     file; a directory, FIFO, character or block device or socket is refused before anything
//     is read (the open itself never blocks: O_NONBLOCK), with a message that says what it is;
//   * the size is checked against the caller's limit before anything is read;
//   * errors are absl::Status values whose message starts with the path:
//       "m/x.toml: not a regular file (a directory)"            InvalidArgument
//       "big.toml: 1073741824 bytes, more than the 16777216-byte limit for a model file"
//                                                               InvalidArgument
//       "nope.toml: cannot open: No such file or directory"     NotFound
//     (errno is captured at the failing call, never read later).
//
// Example:
//   absl::StatusOr<std::string> text = ReadUserFile("accumulation/models/cpu-f32-seq.toml",
//                                                   kMaxTextFileBytes, "model file");
//   absl::StatusOr<UserFile> f = UserFile::Open("a.npy", "tensor file");
//   f->size();  f->ReadAt(128, dst, n);   // pread: exactly n bytes or an error
#ifndef FPCONFORM_BASE_USER_FILE_H_
#define FPCONFORM_BASE_USER_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fpconform {

// Limit for text inputs (model, envelope and sweep files, calc case files are streamed).
inline constexpr uint64_t kMaxTextFileBytes = uint64_t{16} << 20;
// Limit for report.json files read back by `merge`.
inline constexpr uint64_t kMaxReportJsonBytes = uint64_t{256} << 20;

// An open regular file (read-only). Movable, not copyable; closes on destruction.
class UserFile {
 public:
  // `what` names the role in messages ("tensor file"). Errors as in the file comment.
  static absl::StatusOr<UserFile> Open(const std::string& path, std::string_view what = "file");

  UserFile(UserFile&& other) noexcept;
  UserFile& operator=(UserFile&& other) noexcept;
  UserFile(const UserFile&) = delete;
  UserFile& operator=(const UserFile&) = delete;
  ~UserFile();

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }

  // Reads exactly n bytes at `offset` into dst. Errors (naming the path and the offset): a read
  // error, or the file ending early (it shrank after Open).
  absl::Status ReadAt(uint64_t offset, void* dst, size_t n) const;

 private:
  UserFile(std::string path, int fd, uint64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The whole file as a string, refusing files larger than max_bytes (checked before reading).
absl::StatusOr<std::string> ReadUserFile(const std::string& path, uint64_t max_bytes,
                                         std::string_view what = "file");

// The provenance hash of a model file (or any text file up to kMaxTextFileBytes): base/hash.h's
// HexHash(Fnv1a(bytes)), "fnv1a64:<16 hex digits>", or "?" when the file cannot be read.
std::string TextFileHash(const std::string& path);

}  // namespace fpconform

#endif  // FPCONFORM_BASE_USER_FILE_H_
