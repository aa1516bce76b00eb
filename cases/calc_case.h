// The `fpconform calc` protocol: one test case per line in, one result per line out. It is the
// verifier half of a TestFloat-style split (a generator writes cases; anything that computes
// results, a library or a device, is checked against these lines). The grammar is a stable
// interface that tests and users script against; cli/CALC.md is its user-facing reference.
//
// Input, one case per line:
//
//   <op> <format>[:opt...] <rounding> <operand>...             op: add sub mul div fma sqrt
//   cvt <src_format> <dst_format>[:opt...] <rounding> <operand>
//
//   format    an ml_dtypes id from the format table (formats/format_spec.h): float64 float32
//             tfloat32 bfloat16 float16 float8_e4m3fn float8_e5m2 float8_e4m3fnuz
//             float8_e5m2fnuz float8_e4m3 float8_e8m0fnu int8 uint8 int32. Integer formats take
//             part only in cvt.
//   opt       sat | ftz | daz | tbr (tininess before rounding; the default is after) |
//             nan=ieee|canonical|cuda|x86 (OpEnv::nan, default ieee). Options follow the
//             (destination) format, separated by ':', and set the OpEnv of the whole case.
//   rounding  rne rna rtz rup rdn rto, or sr<k> (k = 1..32): stochastic rounding, with one extra
//             last operand holding the k random bits (OpEnv::sr_random; must fit in k bits).
//   operand   0x followed by 1..16 hex digits (either case): the bit pattern in the source
//             format's container; its value must fit the container width (integers as two's
//             complement), and a tfloat32 operand must have its low 13 bits zero.
//
//   Tokens are separated by spaces or tabs, nothing else: a '\r' anywhere but right before the
//   '\n', a '\v' or a '\f' outside a comment makes the line an error ("control character
//   '\x0b' (VT) at column 4: ..."). A '#' at the start of a token starts a comment that runs to
//   the end of the line. Blank lines and comment-only lines produce no output. Lines end at
//   '\n'; one '\r' before it is dropped (CRLF input); the last line needs no newline. A line
//   longer than kMaxCalcLineBytes is an error whatever it holds.
//
// Output, one line per case line, in input order:
//
//   <result> <flags>      e.g. "0x7e ox"
//   error                 for a line that does not parse (the reason goes to the error stream)
//
//   result  "0x" then lowercase hex digits zero-padded to the destination container width
//           (2 for 8-bit formats, 4 for 16, 8 for 32, 16 for float64); integers are two's
//           complement. The 0x prefix is printed so a result is never mistaken for an operand
//           of another style and can be pasted back into an input line.
//   flags   the raised status flags as letters in "vzoux" order (invalid, divide-by-zero,
//           overflow, underflow, inexact), or "-" when none is raised.
//
// Errors: each bad line writes "line <n>: <problem>\n" to the error stream (n counts from 1 and
// counts every line, blank and comment lines included) and "error\n" to the output, so output
// line i always answers case line i. CalcStats::errors counts them; `fpconform calc` exits 1
// when it is non-zero.
//
// Speed: the parser is hand-written, allocates nothing per valid line, and writes into one
// output buffer; RunCalc keeps well above 2 million lines per second per core on typical cases
// (see calc_benchmark.cc).
//
// Example:
//   std::string out, err;
//   CalcStats s = RunCalc("mul float8_e4m3fn rne 0x7e 0x40\n"      // 448 * 2 = 896: no Inf, NaN
//                         "mul float8_e4m3fn:sat rne 0x7e 0x40\n"  // saturates to 448
//                         "cvt float32 int8 rne 0x43000000\n",     // 128: out of int8 range
//                         out, err);
//   out == "0x7f ox\n0x7e ox\n0x80 v\n";  s.cases == 3;  s.errors == 0.
//
// Extending: a new op is one row of the table in calc_case.cc (name, operand count, whether it
// takes a source format, whether integers are allowed, and an evaluator on a parsed CalcCase).
//
// Extra ops (the extension point for layers above cases/): every entry point takes an optional
// span of extra CalcOp rows, searched after the built-in table (a built-in name cannot be
// overridden). cases/ must not depend on oracles/, so ops whose evaluator lives higher up are
// handed in by the caller; `fpconform calc` passes oracles/calc_exact_ops.h's ExactCalcOps()
// (dot, sum). There is no global registry: the rows travel with the call, like OpEnv.
//
// Variadic ops (CalcOp::operand_groups > 0) take a decimal count after the rounding mode:
//
//   <op> <src_format> <dst_format>[:opt...] <rounding> <n> <operand>...
//
// followed by operand_groups * n operands in the source format (dot: a_1..a_n then b_1..b_n;
// sum: x_1..x_n), plus the sr<k> random bits last. n is 0..kMaxCalcCount, decimal digits only
// (no sign, no 0x); the operands of a variadic case may be as many as the line holds.
//
// Model ops (CalcOp::resolve_model set; accumulation/calc_model_ops.h's mdot and msum) are
// variadic ops whose second token is a model name instead of a format, with no rounding token
// (the model fixes every rounding):
//
//   <op> <model> <n> <operand>...
//
// followed by operand_groups * n operands (group 1 in c.src, group 2 in c.src_b) and then
// trailing_operands operands in c.trailing; the model's output format is the result's. The
// resolver validates the name; its message (e.g. an unknown model) becomes the line's error.
//
// Types: cases/ never names the models (accumulation/ is not below it). The row's context is a
// CalcOpContext, which the layer that hands the model ops in derives from (ModelCalcOps), and a
// resolved model travels from resolve_model to eval as a CalcModelHandle, declared here and
// defined by that layer (accumulation/calc_model_ops.h); cases/ only carries the pointer.
#ifndef FPCONFORM_CASES_CALC_CASE_H_
#define FPCONFORM_CASES_CALC_CASE_H_

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"

namespace fpconform {

// Longest accepted line in bytes, line terminator excluded. Longer lines are errors (this bounds
// the memory of the streaming reader; see RunCalcStream).
inline constexpr size_t kMaxCalcLineBytes = size_t{16} << 20;

// Most operands one fixed-arity case may carry (random bits of sr<k> included).
inline constexpr int kMaxCalcOperands = 16;

// Largest count n of a variadic op (dot, sum): 2^20. A float8 dot of that length is about
// 10 MiB of text, within kMaxCalcLineBytes.
inline constexpr int64_t kMaxCalcCount = int64_t{1} << 20;

struct CalcOp;

// The resolved model of a model op's case (CalcCase::model). Declared, not defined, here: the one
// layer that defines model ops defines it (accumulation/calc_model_ops.h, around its Model).
struct CalcModelHandle;

// What a model op's row carries for its resolver (CalcOp::context): the model lookup of the layer
// that defines the ops (accumulation/calc_model_ops.h's ModelCalcOps derives from it). Owned by
// the caller; it must outlive every runner given the row.
class CalcOpContext {
 public:
  // The model `name`, valid as long as this context; nullptr with `problem` set (e.g. an unknown
  // model, with the valid names) when there is none. Not called concurrently by one runner.
  virtual const CalcModelHandle* FindModel(std::string_view name, std::string& problem) const = 0;

  virtual ~CalcOpContext() = default;
};

// One parsed case line.
struct CalcCase {
  const CalcOp* op = nullptr;
  const FormatSpec* src = nullptr;  // Format of the operands (== dst except for cvt).
  const FormatSpec* dst = nullptr;  // Format of the result.
  OpEnv env;                        // Rounding, options and, for sr<k>, the random bits.
  int num_operands = 0;             // Value operands, random bits excluded (fixed-arity ops).
  uint64_t operands[kMaxCalcOperands];
  // Variadic ops only: the count n and the operand_groups * n operands, in line order (held by
  // the runner; valid during eval only).
  int64_t count = 0;
  std::span<const uint64_t> values;
  // Model ops only (CalcOp::resolve_model): the format of the second operand group (nullptr: the
  // same as src), the format of the trailing operands, and the op's resolved model (opaque here).
  const FormatSpec* src_b = nullptr;
  const FormatSpec* trailing = nullptr;
  const CalcModelHandle* model = nullptr;
};

// A row of the op table.
struct CalcOp {
  std::string_view name;
  int num_operands;             // Value operands (the sr<k> random bits come on top).
  bool takes_source_format;     // cvt: "<src_format> <dst_format>".
  bool allows_integer_formats;  // false: an integer format is an error.
  OpResult (*eval)(const CalcCase& c);
  // 0: fixed arity (num_operands). k > 0: variadic, a decimal n then k * n operands
  // (num_operands must be 0).
  int operand_groups = 0;
  // Model ops (see "Model ops" above): non-null for an op whose second token names a model. It
  // looks `name` up (op.context->FindModel) and sets c.src, c.src_b, c.trailing, c.dst and
  // c.model, or returns the problem (empty string: success). Not called concurrently by one
  // runner.
  std::string (*resolve_model)(const CalcOp& op, std::string_view name, CalcCase& c) = nullptr;
  const CalcOpContext* context = nullptr;  // Model ops: the models; owned by the caller.
  int trailing_operands = 0;               // Model ops: operands after the groups, in c.trailing.
};

// The built-in op table, in the order --help lists it (extra ops are not included).
std::span<const CalcOp> CalcOps();

// Counters of one run.
struct CalcStats {
  int64_t lines = 0;   // Physical lines read, blank and comment lines included.
  int64_t cases = 0;   // Output lines written (results and "error" lines).
  int64_t errors = 0;  // Lines that printed "error".
};

// The outcome of one line.
struct CalcLineResult {
  enum class Kind : uint8_t { kSkip, kResult, kError };
  Kind kind = Kind::kSkip;
  const FormatSpec* format = nullptr;  // kResult: the destination format.
  OpResult result;                     // kResult.
  std::string error;                   // kError: the problem, without the "line n: " prefix.
};

// Parses and evaluates one line (no '\n'; a trailing '\r' is dropped). `extra_ops`: see
// "Extra ops" above.
CalcLineResult EvalCalcLine(std::string_view line, std::span<const CalcOp> extra_ops = {});

// Incremental runner: feeds whole lines, keeps the line count and the stats.
class CalcRunner {
 public:
  // `extra_ops` must outlive the runner.
  explicit CalcRunner(std::span<const CalcOp> extra_ops = {}) : extra_ops_(extra_ops) {}
  // Processes every line of `text`. Each '\n' ends a line; text after the last '\n' is one more
  // line (pass only whole lines unless this is the end of the input). Appends one output line
  // per case line to `out` and one message per bad line to `err`.
  void Feed(std::string_view text, std::string& out, std::string& err);
  // Processes exactly one line (must not contain '\n').
  void FeedLine(std::string_view line, std::string& out, std::string& err);
  const CalcStats& stats() const { return stats_; }

 private:
  CalcStats stats_;
  std::span<const CalcOp> extra_ops_;
  std::vector<uint64_t> values_;  // Operands of the current variadic case (reused).
};

// Runs the whole `input`; appends results to `out` and messages to `err`.
CalcStats RunCalc(std::string_view input, std::string& out, std::string& err,
                  std::span<const CalcOp> extra_ops = {});

// Streams `in` to `out` (results) and `err` (messages). Reads the file descriptor of `in`
// directly (read(2), up to 1 MiB at a time; do not mix with stdio reads of `in`) and writes and
// flushes the answers to each read before the next, so a driver can talk to it line by line
// through a pipe. Memory stays bounded by kMaxCalcLineBytes plus the buffers. Returns the stats,
// or an error status when reading or writing fails (the output written so far stays written).
absl::StatusOr<CalcStats> RunCalcStream(std::FILE* in, std::FILE* out, std::FILE* err,
                                        std::span<const CalcOp> extra_ops = {});

}  // namespace fpconform

#endif  // FPCONFORM_CASES_CALC_CASE_H_
