// libFuzzer harness for the `fpconform calc` line protocol (calc_case.h): the input bytes are a
// calc input file, run with the op set `fpconform calc` uses (the built-ins, the exact dot/sum
// of oracles/calc_exact_ops.h and the model ops mdot/msum of accumulation/calc_model_ops.h over
// the preset models). Every parsed case is also executed: its cost is bounded by the input,
// since a variadic case must carry all its operands on the line.
//
// Beyond "no crash, no sanitizer report", the three entry points must agree byte for byte:
// RunCalc on the whole input, a CalcRunner fed one line at a time, and (for one input in 16)
// RunCalcStream reading the input from a file descriptor; and the output must answer every case
// line with exactly one line, "error" exactly CalcStats::errors times, each error with one
// "line <n>: " message.
//
//   build-fuzz/cases/calc_case_fuzzer cases/testdata/fuzz/calc_case_fuzzer   # replay / fuzz
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "accumulation/calc_model_ops.h"
#include "cases/calc_case.h"
#include "oracles/calc_exact_ops.h"

namespace fpconform {
namespace {

void Require(bool ok, const char* what, std::string_view input) {
  if (ok) return;
  std::fprintf(stderr, "calc_case_fuzzer: %s\ninput (%zu bytes):\n%.*s\n", what, input.size(),
               static_cast<int>(input.size()), input.data());
  std::abort();
}

// The op rows `fpconform calc` hands the runner (cli/calc_command.cc), built once: the model
// catalog caches the preset files it reads.
std::span<const CalcOp> ExtraOps() {
  static const ModelCalcOps* const model_ops = new ModelCalcOps(FPCONFORM_MODELS_SOURCE_DIR);
  static const std::vector<CalcOp>* const ops = [] {
    auto* v = new std::vector<CalcOp>(ExactCalcOps().begin(), ExactCalcOps().end());
    v->insert(v->end(), model_ops->ops().begin(), model_ops->ops().end());
    return v;
  }();
  return *ops;
}

size_t CountLines(std::string_view s, std::string_view prefix) {
  size_t n = 0;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string_view::npos) end = s.size();
    if (s.substr(start, end - start).starts_with(prefix)) ++n;
    start = end + 1;
  }
  return n;
}

// RunCalcStream on `input` through a memory file descriptor; false when the plumbing (not the
// code under test) fails.
bool RunStream(std::string_view input, std::span<const CalcOp> ops, std::string& out,
               std::string& err, absl::StatusOr<CalcStats>& stats) {
  const int fd = memfd_create("calc_input", 0);
  if (fd < 0) return false;
  size_t written = 0;
  while (written < input.size()) {
    const ssize_t w = write(fd, input.data() + written, input.size() - written);
    if (w <= 0) {
      close(fd);
      return false;
    }
    written += static_cast<size_t>(w);
  }
  if (lseek(fd, 0, SEEK_SET) != 0) {
    close(fd);
    return false;
  }
  std::FILE* in = fdopen(fd, "rb");
  char* out_buf = nullptr;
  char* err_buf = nullptr;
  size_t out_len = 0, err_len = 0;
  std::FILE* out_file = open_memstream(&out_buf, &out_len);
  std::FILE* err_file = open_memstream(&err_buf, &err_len);
  if (in == nullptr || out_file == nullptr || err_file == nullptr) std::abort();
  stats = RunCalcStream(in, out_file, err_file, ops);
  std::fclose(in);
  std::fclose(out_file);
  std::fclose(err_file);
  out.assign(out_buf, out_len);
  err.assign(err_buf, err_len);
  std::free(out_buf);
  std::free(err_buf);
  return true;
}

}  // namespace
}  // namespace fpconform

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fpconform;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::span<const CalcOp> ops = ExtraOps();

  std::string out, err;
  const CalcStats stats = RunCalc(input, out, err, ops);
  Require(CountLines(out, "") == static_cast<size_t>(stats.cases) &&
              (out.empty() || out.back() == '\n'),
          "RunCalc: output lines != CalcStats::cases", input);
  Require(CountLines(out, "error") == static_cast<size_t>(stats.errors),
          "RunCalc: 'error' lines != CalcStats::errors", input);
  Require(CountLines(err, "line ") == static_cast<size_t>(stats.errors),
          "RunCalc: error messages != CalcStats::errors", input);
  Require(stats.cases <= stats.lines && stats.errors <= stats.cases,
          "RunCalc: inconsistent CalcStats", input);

  // One line at a time (Feed's rule: text after the last '\n' is one more line).
  CalcRunner runner(ops);
  std::string line_out, line_err;
  size_t start = 0;
  while (start < input.size()) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    runner.FeedLine(input.substr(start, end - start), line_out, line_err);
    start = end + 1;
  }
  Require(line_out == out && line_err == err, "CalcRunner::FeedLine differs from RunCalc", input);
  Require(runner.stats().lines == stats.lines && runner.stats().cases == stats.cases &&
              runner.stats().errors == stats.errors,
          "CalcRunner::FeedLine stats differ from RunCalc", input);

  // RunCalcStream allocates its 1 MiB read buffer per call, which would dominate the run time:
  // it checks one input in 16, chosen by a hash of the input (so a failure reproduces).
  uint64_t hash = 0xcbf29ce484222325u;  // FNV-1a.
  for (const char ch : input) hash = (hash ^ static_cast<uint8_t>(ch)) * 0x100000001b3u;
  std::string stream_out, stream_err;
  absl::StatusOr<CalcStats> stream_stats;
  if (hash % 16 == 0 && RunStream(input, ops, stream_out, stream_err, stream_stats)) {
    Require(stream_stats.ok(), "RunCalcStream failed on a readable input", input);
    Require(stream_out == out && stream_err == err, "RunCalcStream differs from RunCalc", input);
    Require(stream_stats->cases == stats.cases && stream_stats->errors == stats.errors,
            "RunCalcStream stats differ from RunCalc", input);
  }
  return 0;
}
