// libFuzzer harness for cases/replay_file.h, the reader of recorded device dot products: the input
// bytes are a replay file. Checked:
//  * an error is InvalidArgument whose message starts with the file name and carries no control
//    character (DESIGN.md: errors name the file, line, field);
//  * a parsed file has its four formats, a non-empty `expect`, and per data line K a's and K b's
//    (K >= 1), every value within its format's width, and line numbers increasing within the
//    input's line count.
// Never a crash, a throw or an abort.
//
//   build-fuzz/cases/replay_file_fuzzer cases/testdata/fuzz/replay_file
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "absl/status/status.h"
#include "cases/replay_file.h"

namespace fpconform {
namespace {

constexpr std::string_view kFile = "fuzz.txt";

[[noreturn]] void Fail(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "replay_file_fuzzer: %.*s: %.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

bool Fits(uint64_t v, const FormatSpec* f) { return f->width >= 64 || (v >> f->width) == 0; }

}  // namespace
}  // namespace fpconform

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fpconform;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<ReplayFile> f = ParseReplay(text, std::string(kFile));
  if (!f.ok()) {
    const std::string_view m(f.status().message().data(), f.status().message().size());
    if (f.status().code() != absl::StatusCode::kInvalidArgument) Fail("not InvalidArgument", m);
    if (!m.starts_with(kFile)) Fail("message does not name the file", m);
    for (const char c : m) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) Fail("control character in", m);
    }
    return 0;
  }
  if (!f->a_format || !f->b_format || !f->c_format || !f->d_format) Fail("format", "missing");
  if (f->expect.empty()) Fail("expect", "empty");
  size_t newlines = 1;
  for (char c : text) newlines += c == '\n';
  int last = 0;
  for (const ReplayLine& l : f->lines) {
    if (l.a.empty() || l.a.size() != l.b.size()) Fail("line", "a and b lengths");
    if (l.line <= last || static_cast<size_t>(l.line) > newlines) Fail("line", "number out of order");
    last = l.line;
    for (uint64_t v : l.a) {
      if (!Fits(v, f->a_format)) Fail("a", "value too wide");
    }
    for (uint64_t v : l.b) {
      if (!Fits(v, f->b_format)) Fail("b", "value too wide");
    }
    if (!Fits(l.c, f->c_format) || !Fits(l.d, f->d_format)) Fail("c/d", "value too wide");
  }
  return 0;
}
