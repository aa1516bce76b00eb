// Reader of the replay files that record a device's dot products bit for bit (format:
// conformance/data/README.md, "Replay files"; written by conformance/cuda_probe/probe.cu on a GPU
// or converted from a cited public recording). The replay test (conformance/replay_test.cc) and
// anything else that replays recordings against the accumulation presets read them through here.
//
//   # fpconform-replay v1                      first line, exactly
//   device = NVIDIA H200                       header: key = value, before the first data line
//   instruction = mma.sync.m16n8k16 ...        keys: device sm driver runtime instruction
//   a-format = bfloat16                          a-format b-format c-format d-format expect
//   ...                                          candidates layout-check source
//   expect = nvidia-h100-bf16-mma              required: device instruction a/b/c/d-format expect
//   16 3f80 ... 3f80 0 4180                    data: K, K a's, K b's, c, d in hex containers
//
// Blank lines and '#' lines are skipped anywhere. A file whose layout self-check did not pass
// (`layout-check` not starting with "passed" or "not applicable") is refused: its lines would
// pair the wrong operands.
//
// Errors (InvalidArgument, "path:line: field: what"): a wrong first line, an empty file, a file
// without data lines, an unknown, duplicate or empty header key, a header line after the data,
// a required key missing before the data, an unknown format name, a K that is not a decimal
// count in [1, 999999], a line with the wrong number of fields for its K, a value that is not
// 1..16 hex digits or does not fit its format's width. NotFound when the file cannot be opened.
//
// Example:
//   absl::StatusOr<ReplayFile> f = LoadReplay("conformance/data/h200_bf16_mma.txt");
//   for (const ReplayLine& l : f->lines) { /* EvaluateDot(model, l.a, l.b, l.c) == l.d */ }
#ifndef FPCONFORM_CASES_REPLAY_FILE_H_
#define FPCONFORM_CASES_REPLAY_FILE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "formats/format_spec.h"

namespace fpconform {

struct ReplayLine {
  int line = 0;  // 1-based line number in the file.
  std::vector<uint64_t> a, b;
  uint64_t c = 0, d = 0;
};

struct ReplayFile {
  std::string path;
  std::map<std::string, std::string> header;
  std::map<std::string, int> header_line;  // Key -> 1-based line, for errors about a key.
  const FormatSpec* a_format = nullptr;
  const FormatSpec* b_format = nullptr;
  const FormatSpec* c_format = nullptr;
  const FormatSpec* d_format = nullptr;
  std::string expect;                    // A preset name or "record-only".
  std::vector<std::string> candidates;   // Whitespace-separated preset names, in order.
  std::vector<ReplayLine> lines;
};

// The "path:line: field: what" error of this reader (also for checks a caller makes later).
absl::Status ReplayError(std::string_view path, int line, std::string_view field, std::string_view what);

// Parses `text`; `path` names it in errors.
absl::StatusOr<ReplayFile> ParseReplay(std::string_view text, const std::string& path);

// Reads and parses the file at `path`.
absl::StatusOr<ReplayFile> LoadReplay(const std::string& path);

}  // namespace fpconform

#endif  // FPCONFORM_CASES_REPLAY_FILE_H_
