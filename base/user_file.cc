#include "base/user_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/hash.h"
#include "base/str_cat.h"

namespace fpconform {
namespace {

std::string_view FileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

}  // namespace

absl::StatusOr<UserFile> UserFile::Open(const std::string& path, std::string_view what) {
  if (path.empty()) return absl::InvalidArgumentError(Cat("empty path for a ", what));
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    std::string msg = Cat(path, ": cannot open ", what, ": ", std::strerror(err));
    if (err == ENOENT || err == ENOTDIR) return absl::NotFoundError(msg);
    return absl::InvalidArgumentError(msg);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return absl::InvalidArgumentError(Cat(path, ": cannot stat: ", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(
        Cat(path, ": not a regular file (", FileTypeName(st.st_mode), "); a ", what,
            " must be a regular file"));
  }
  // Back to blocking reads (regular files never block anyway; this keeps pread's contract).
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return UserFile(path, fd, static_cast<uint64_t>(st.st_size));
}

UserFile::UserFile(UserFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

UserFile& UserFile::operator=(UserFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
  }
  return *this;
}

UserFile::~UserFile() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status UserFile::ReadAt(uint64_t offset, void* dst, size_t n) const {
  auto* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      return absl::DataLossError(
          Cat(path_, ": read error at byte ", offset + done, ": ", std::strerror(err)));
    }
    if (r == 0) {
      return absl::DataLossError(Cat(path_, ": file ends at byte ", offset + done,
                                     ", expected ", n - done, " more bytes (did it shrink?)"));
    }
    done += static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadUserFile(const std::string& path, uint64_t max_bytes,
                                         std::string_view what) {
  absl::StatusOr<UserFile> f = UserFile::Open(path, what);
  if (!f.ok()) return f.status();
  if (f->size() > max_bytes) {
    return absl::InvalidArgumentError(Cat(path, ": ", f->size(), " bytes, more than the ",
                                          max_bytes, "-byte limit for a ", what));
  }
  std::string text(static_cast<size_t>(f->size()), '\0');
  if (absl::Status s = f->ReadAt(0, text.data(), text.size()); !s.ok()) return s;
  return text;
}

std::string TextFileHash(const std::string& path) {
  absl::StatusOr<std::string> text = ReadUserFile(path, kMaxTextFileBytes, "model file");
  return text.ok() ? HexHash(Fnv1a(*text)) : "?";
}

}  // namespace fpconform
