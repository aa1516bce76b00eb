#include "base/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/str_cat.h"

namespace fpconform {

int WriteAllToFd(int fd, std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<size_t>(n);
  }
  return 0;
}

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::vector<std::string_view>& pieces) {
  std::string tmpl = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) {
    const int err = errno;
    return absl::InvalidArgumentError(
        Cat(path, ": cannot create a temporary file beside it: ", std::strerror(err)));
  }
  auto fail = [&](std::string_view what, int err) {
    ::close(fd);
    ::unlink(tmpl.c_str());
    return absl::InvalidArgumentError(Cat(path, ": ", what, ": ", std::strerror(err)));
  };
  for (std::string_view p : pieces) {
    if (const int err = WriteAllToFd(fd, p); err != 0) return fail("cannot write", err);
  }
  // mkstemp makes the file 0600; give it the usual 0666 & ~umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) return fail("cannot set the mode", errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    return absl::InvalidArgumentError(Cat(path, ": cannot write: ", std::strerror(err)));
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    return absl::InvalidArgumentError(
        Cat(path, ": cannot rename the temporary file to it: ", std::strerror(err)));
  }
  return absl::OkStatus();
}

absl::Status WriteNewFile(const std::string& path, std::string_view content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int err = errno;
    return absl::InternalError(Cat(path, ": cannot create: ", std::strerror(err)));
  }
  if (const int err = WriteAllToFd(fd, content); err != 0) {
    ::close(fd);
    return absl::InternalError(Cat(path, ": write failed: ", std::strerror(err)));
  }
  if (::close(fd) != 0) {
    const int err = errno;
    return absl::InternalError(Cat(path, ": write failed: ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace fpconform
