// Writing the files fpconform produces (tensor files, report directories, report.html): the
// counterpart of user_file.h. Two ways, for two situations:
//   * WriteFileAtomically: `path` is replaced in one step (rename of a temporary sibling), so a
//     reader or an interrupted run never sees a partial file; for a path the user named.
//   * WriteNewFile: `path` must not exist yet (O_EXCL); for files inside a staging directory
//     that is itself swapped in atomically (reports/report.h, WriteDirectoryAtomically).
// Both create files with mode 0666 & ~umask, retry short and interrupted writes, and return
// absl::Status values whose message starts with the path and ends with the failing call's own
// errno text (captured at that call):
//   "t.npy: cannot create a temporary file beside it: Permission denied"   InvalidArgument
//   "r.partial-7/report.md: cannot create: File exists"                   Internal
//
// Example:
//   absl::Status s = WriteFileAtomically("c.npy", {header, data});   // never a partial c.npy
//   absl::Status t = WriteNewFile(staging + "/report.md", markdown);
#ifndef FPCONFORM_BASE_OUTPUT_FILE_H_
#define FPCONFORM_BASE_OUTPUT_FILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace fpconform {

// Writes all of `data` to the open descriptor `fd`, continuing after short writes and EINTR.
// Returns 0, or the errno of the write that failed.
int WriteAllToFd(int fd, std::string_view data);

// Writes the concatenation of `pieces` to `path` through a temporary sibling
// (`path`.tmp.XXXXXX, mkstemp) renamed over `path` once complete and closed. `path` (a regular
// file, or a symbolic link, which is replaced by the file) is then either the old file or the
// whole new one; on error the temporary is removed and `path` is untouched. Errors
// (InvalidArgument): "<path>: cannot create a temporary file beside it: ...", "<path>: cannot
// write: ...", "<path>: cannot set the mode: ...", "<path>: cannot rename the temporary file to
// it: ...".
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::vector<std::string_view>& pieces);

// Creates `path`, which must not exist (O_CREAT | O_EXCL), and writes `content` to it. Errors
// (Internal): "<path>: cannot create: ..." (File exists when it did), "<path>: write failed:
// ..."; after a failed write the partial file is left for the caller, whose staging directory
// holds it, to remove.
absl::Status WriteNewFile(const std::string& path, std::string_view content);

}  // namespace fpconform

#endif  // FPCONFORM_BASE_OUTPUT_FILE_H_
