#include "cases/calc_case.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "formats/ops.h"

namespace fpconform {
namespace {

// ---- The op table. Adding an op is adding a row (and its evaluator). ----

OpResult EvalAdd(const CalcCase& c) { return Add(*c.dst, c.operands[0], c.operands[1], c.env); }
OpResult EvalSub(const CalcCase& c) { return Sub(*c.dst, c.operands[0], c.operands[1], c.env); }
OpResult EvalMul(const CalcCase& c) { return Mul(*c.dst, c.operands[0], c.operands[1], c.env); }
OpResult EvalDiv(const CalcCase& c) { return Div(*c.dst, c.operands[0], c.operands[1], c.env); }
OpResult EvalFma(const CalcCase& c) {
  return Fma(*c.dst, c.operands[0], c.operands[1], c.operands[2], c.env);
}
OpResult EvalSqrt(const CalcCase& c) { return Sqrt(*c.dst, c.operands[0], c.env); }
OpResult EvalCvt(const CalcCase& c) { return Convert(*c.src, *c.dst, c.operands[0], c.env); }

constexpr std::array<CalcOp, 7> kCalcOps = {{
    {"add", 2, false, false, EvalAdd, 0},
    {"sub", 2, false, false, EvalSub, 0},
    {"mul", 2, false, false, EvalMul, 0},
    {"div", 2, false, false, EvalDiv, 0},
    {"fma", 3, false, false, EvalFma, 0},
    {"sqrt", 1, false, false, EvalSqrt, 0},
    {"cvt", 1, true, true, EvalCvt, 0},
}};
static_assert(kCalcOps.size() <= 64);

const CalcOp* FindOp(std::string_view name, std::span<const CalcOp> extra_ops) {
  for (const CalcOp& op : kCalcOps) {
    if (op.name == name) return &op;
  }
  for (const CalcOp& op : extra_ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

// Debian's Abseil is built with its own absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW 0),
// to which std::string_view does not convert; StrCat arguments go through this.
absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// ---- Character classes and tokens. ----

// Only spaces and tabs separate tokens (CALC.md, "Layout"); a '\r' is dropped only right before
// the '\n' (StripCr). Any other control character is part of a token, which then cannot parse.
constexpr bool IsSpace(char c) { return c == ' ' || c == '\t'; }

// For a line that failed to parse: when it holds a '\r', '\v' or '\f' outside a comment, the
// message that says so (the token holding it is what failed), else "".
std::string BadSeparator(std::string_view line) {
  if (line.size() > kMaxCalcLineBytes) return "";  // Reported as over-long, not scanned.
  bool token_start = true;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (IsSpace(c)) {
      token_start = true;
      continue;
    }
    if (c == '#' && token_start) break;
    if (c == '\r' || c == '\v' || c == '\f') {
      return absl::StrCat("control character ",
                          c == '\r'   ? "'\\x0d' (CR)"
                          : c == '\v' ? "'\\x0b' (VT)"
                                      : "'\\x0c' (FF)",
                          " at column ", i + 1,
                          ": only spaces and tabs separate tokens, and a CR is allowed only "
                          "right before the newline");
    }
    token_start = false;
  }
  return "";
}

// Hex digit value, or -1.
constexpr std::array<int8_t, 256> MakeHexTable() {
  std::array<int8_t, 256> t{};
  for (int i = 0; i < 256; ++i) t[static_cast<size_t>(i)] = -1;
  for (int i = 0; i < 10; ++i) t[static_cast<size_t>('0' + i)] = static_cast<int8_t>(i);
  for (int i = 0; i < 6; ++i) {
    t[static_cast<size_t>('a' + i)] = static_cast<int8_t>(10 + i);
    t[static_cast<size_t>('A' + i)] = static_cast<int8_t>(10 + i);
  }
  return t;
}
constexpr std::array<int8_t, 256> kHexValue = MakeHexTable();

// Splits a line into tokens; a token starting with '#' ends the line.
class Tokenizer {
 public:
  explicit Tokenizer(std::string_view line) : p_(line.data()), end_(line.data() + line.size()) {}
  // Next token, or an empty view at the end of the line (or at a comment).
  std::string_view Next() {
    while (p_ < end_ && IsSpace(*p_)) ++p_;
    if (p_ == end_ || *p_ == '#') {
      p_ = end_;
      return {};
    }
    const char* start = p_;
    while (p_ < end_ && !IsSpace(*p_)) ++p_;
    return std::string_view(start, static_cast<size_t>(p_ - start));
  }

 private:
  const char* p_;
  const char* end_;
};

// A token as it may appear in a message: printable ASCII kept, other bytes as \xNN, cut at 40
// bytes. Input may be binary garbage; the message must stay one readable line.
std::string Quote(std::string_view token) {
  static constexpr size_t kMax = 40;
  std::string s = "'";
  for (size_t i = 0; i < token.size() && i < kMax; ++i) {
    unsigned char c = static_cast<unsigned char>(token[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\' && c != '\'') {
      s += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      s += "\\x";
      s += kHex[c >> 4];
      s += kHex[c & 15];
    }
  }
  s += '\'';
  if (token.size() > kMax) absl::StrAppend(&s, "... (", token.size(), " bytes)");
  return s;
}

// ---- Formats, options, rounding. ----

const std::string& FormatList() {
  static const std::string* list = [] {
    auto* s = new std::string;
    for (const FormatSpec& f : AllFormats()) absl::StrAppend(s, s->empty() ? "" : " ", Av(f.name));
    return s;
  }();
  return *list;
}

std::string UnknownFormat(std::string_view name) {
  return absl::StrCat("unknown format ", Quote(name), " (valid: ", FormatList(), ")");
}

constexpr std::string_view kOptionList = "sat ftz daz tbr nan=ieee|canonical|cuda|x86";
constexpr std::string_view kRoundingList = "rne rna rtz rup rdn rto sr1..sr32";

// Parses "name[:opt...]" into `format` and `env`. Returns an empty string on success, else the
// problem. `allow_options` is false for the source format of cvt.
std::string ParseFormat(std::string_view token, bool allow_options, const FormatSpec*& format,
                        OpEnv& env) {
  size_t colon = token.find(':');
  std::string_view name = token.substr(0, colon);
  format = FindFormat(name);
  if (format == nullptr) return UnknownFormat(name);
  if (colon == std::string_view::npos) return {};
  if (!allow_options) {
    return absl::StrCat("options go after the destination format, not on the source format ",
                        Quote(token));
  }
  std::string_view rest = token.substr(colon + 1);
  while (true) {
    size_t next = rest.find(':');
    std::string_view opt = rest.substr(0, next);
    if (opt == "sat") {
      env.saturate = true;
    } else if (opt == "ftz") {
      env.flush_to_zero = true;
    } else if (opt == "daz") {
      env.denormals_are_zero = true;
    } else if (opt == "tbr") {
      env.tininess = Tininess::kBeforeRounding;
    } else if (opt.substr(0, 4) == "nan=" && ParseNanProfile(opt.substr(4)).has_value()) {
      env.nan = *ParseNanProfile(opt.substr(4));
    } else {
      return absl::StrCat(opt.empty() ? "empty option" : "unknown option " + Quote(opt), " in ",
                          Quote(token), " (valid: ", Av(kOptionList), ")");
    }
    if (next == std::string_view::npos) return {};
    rest = rest.substr(next + 1);
  }
}

enum class HexParse : uint8_t { kOk, kNotHex, kTooWide };

// Parses "0x" (or "0X") followed by at least one hex digit. kTooWide: the value needs more than
// 64 bits (more than 16 significant digits).
HexParse ParseHex(std::string_view token, uint64_t& value) {
  if (token.size() < 3 || token[0] != '0' || (token[1] != 'x' && token[1] != 'X')) {
    return HexParse::kNotHex;
  }
  uint64_t v = 0;
  int significant = 0;
  for (size_t i = 2; i < token.size(); ++i) {
    int d = kHexValue[static_cast<unsigned char>(token[i])];
    if (d < 0) return HexParse::kNotHex;
    if (significant > 0 || d != 0) ++significant;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  if (significant > 16) return HexParse::kTooWide;
  value = v;
  return HexParse::kOk;
}

// Checks one operand token of format `src`; on success stores its bits in `v` and returns an
// empty string, else the problem. `index` counts from 0.
std::string ParseOperand(std::string_view text, int64_t index, const FormatSpec& src, uint64_t& v) {
  HexParse parsed = ParseHex(text, v);
  if (parsed == HexParse::kNotHex) {
    return absl::StrCat("operand ", index + 1, " ", Quote(text),
                        " is not hex (want 0x followed by hex digits)");
  }
  if (parsed == HexParse::kTooWide || (v & ~WidthMask(src)) != 0) {
    return absl::StrCat("operand ", index + 1, " ", Quote(text), " is wider than ", Av(src.name),
                        " (", src.width, " bits)");
  }
  if ((v & ((uint64_t{1} << src.pad_bits) - 1)) != 0) {
    return absl::StrCat("operand ", index + 1, " ", Quote(text), " has non-zero low ", src.pad_bits,
                        " bits, which ", Av(src.name), " keeps zero");
  }
  return {};
}

// Parses the sr<k> random bits token into c.env.sr_random.
std::string ParseRandomBits(std::string_view r, std::string_view rounding, CalcCase& c) {
  uint64_t v = 0;
  HexParse parsed = ParseHex(r, v);
  if (parsed == HexParse::kNotHex) {
    return absl::StrCat("random bits ", Quote(r), " are not hex (want 0x followed by hex digits)");
  }
  if (parsed == HexParse::kTooWide || (v >> c.env.sr_bits) != 0) {
    return absl::StrCat("random bits ", Quote(r), " are wider than the ", c.env.sr_bits,
                        " bits of ", Av(rounding));
  }
  c.env.sr_random = v;
  return {};
}

// The rest of a variadic line (after the rounding mode): "<n> <operand>... [<random bits>]".
CalcLineResult::Kind ParseVariadic(Tokenizer tok, std::string_view rounding,
                                   std::vector<uint64_t>& values, CalcCase& c, std::string& error) {
  const CalcOp& op = *c.op;
  auto fail = [&error](std::string message) {
    error = std::move(message);
    return CalcLineResult::Kind::kError;
  };
  const std::string_view n_text = tok.Next();
  if (n_text.empty()) {
    return fail(absl::StrCat("'", Av(op.name), "' needs the count n (decimal) after the ",
                             op.resolve_model != nullptr ? "model" : "rounding"));
  }
  int64_t n = 0;
  for (char ch : n_text) {
    if (ch < '0' || ch > '9') {
      return fail(
          absl::StrCat("count ", Quote(n_text), " of '", Av(op.name), "' is not a decimal number"));
    }
    n = n * 10 + (ch - '0');
    if (n > kMaxCalcCount) {
      return fail(
          absl::StrCat("count ", Quote(n_text), " of '", Av(op.name), "' exceeds ", kMaxCalcCount));
    }
  }
  const bool stochastic = c.env.rounding == Rounding::kStochastic;
  const int64_t group_count = n * op.operand_groups;
  const int64_t value_count = group_count + op.trailing_operands;
  const int64_t want = value_count + (stochastic ? 1 : 0);
  // Count first (a wrong count is reported as such, before any operand's value).
  int64_t count = 0;
  for (Tokenizer counter = tok; !counter.Next().empty();) ++count;
  if (count != want) {
    std::string expected = absl::StrCat(value_count, " operand", value_count == 1 ? "" : "s", " (");
    if (op.operand_groups > 1) absl::StrAppend(&expected, op.operand_groups, " x n, ");
    absl::StrAppend(&expected, "n = ", n);
    if (op.trailing_operands > 0) absl::StrAppend(&expected, ", then ", op.trailing_operands);
    absl::StrAppend(&expected, ")");
    if (stochastic) absl::StrAppend(&expected, " plus the random bits of ", Av(rounding));
    return fail(absl::StrCat("'", Av(op.name), "' takes ", expected, ", got ", count));
  }
  values.resize(static_cast<size_t>(value_count));
  for (int64_t i = 0; i < value_count; ++i) {
    const FormatSpec* f = c.src;
    if (i >= group_count) {
      f = c.trailing;
    } else if (i >= n && c.src_b != nullptr) {
      f = c.src_b;
    }
    std::string problem = ParseOperand(tok.Next(), i, *f, values[static_cast<size_t>(i)]);
    if (!problem.empty()) return fail(std::move(problem));
  }
  if (stochastic) {
    std::string problem = ParseRandomBits(tok.Next(), rounding, c);
    if (!problem.empty()) return fail(std::move(problem));
  }
  c.num_operands = 0;
  c.count = n;
  c.values = std::span<const uint64_t>(values.data(), values.size());
  return CalcLineResult::Kind::kResult;
}

// Parses and validates one line into `c`. Returns kSkip, kResult (parsed, not yet evaluated) or
// kError with `error` set.
// `extra_ops`: searched after kCalcOps. `values`: storage for the operands of a variadic case
// (c.values points into it).
CalcLineResult::Kind ParseLine(std::string_view line, std::span<const CalcOp> extra_ops,
                               std::vector<uint64_t>& values, CalcCase& c, std::string& error) {
  if (line.size() > kMaxCalcLineBytes) {
    error = absl::StrCat("line longer than ", kMaxCalcLineBytes, " bytes");
    return CalcLineResult::Kind::kError;
  }
  Tokenizer tok(line);
  std::string_view op_name = tok.Next();
  if (op_name.empty()) return CalcLineResult::Kind::kSkip;

  auto fail = [&error](std::string message) {
    error = std::move(message);
    return CalcLineResult::Kind::kError;
  };

  c.op = FindOp(op_name, extra_ops);
  if (c.op == nullptr) {
    std::string valid;
    for (const CalcOp& op : kCalcOps)
      absl::StrAppend(&valid, valid.empty() ? "" : " ", Av(op.name));
    for (const CalcOp& op : extra_ops) absl::StrAppend(&valid, " ", Av(op.name));
    return fail(absl::StrCat("unknown op ", Quote(op_name), " (valid: ", valid, ")"));
  }
  const CalcOp& op = *c.op;
  c.env = OpEnv{};
  c.src_b = nullptr;
  c.trailing = nullptr;
  c.model = nullptr;

  if (op.resolve_model != nullptr) {
    const std::string_view name = tok.Next();
    if (name.empty()) return fail(absl::StrCat("'", Av(op.name), "' needs a model name"));
    std::string problem = op.resolve_model(op, name, c);
    if (!problem.empty()) return fail(std::move(problem));
    return ParseVariadic(tok, "", values, c, error);
  }

  std::string_view token = tok.Next();
  if (token.empty()) {
    return fail(absl::StrCat("'", Av(op.name), "' needs a ",
                             op.takes_source_format ? "source format" : "format"));
  }
  std::string problem;
  if (op.takes_source_format) {
    problem = ParseFormat(token, /*allow_options=*/false, c.src, c.env);
    if (!problem.empty()) return fail(std::move(problem));
    token = tok.Next();
    if (token.empty()) return fail(absl::StrCat("'", Av(op.name), "' needs a destination format"));
  }
  problem = ParseFormat(token, /*allow_options=*/true, c.dst, c.env);
  if (!problem.empty()) return fail(std::move(problem));
  if (!op.takes_source_format) c.src = c.dst;
  if (!op.allows_integer_formats) {
    for (const FormatSpec* f : {c.src, c.dst}) {
      if (!IsFloat(*f)) {
        return fail(absl::StrCat("'", Av(op.name), "' is not defined for the integer format '",
                                 Av(f->name), "' (integers take part only in cvt)"));
      }
    }
  }

  std::string_view rounding = tok.Next();
  if (rounding.empty()) {
    return fail(
        absl::StrCat("'", Av(op.name), "' needs a rounding mode (", Av(kRoundingList), ")"));
  }
  if (!ParseRounding(rounding, c.env)) {
    return fail(absl::StrCat("unknown rounding mode ", Quote(rounding),
                             " (valid: ", Av(kRoundingList), ")"));
  }
  const bool stochastic = c.env.rounding == Rounding::kStochastic;
  if (op.operand_groups > 0) return ParseVariadic(tok, rounding, values, c, error);
  const int want = op.num_operands + (stochastic ? 1 : 0);

  // Collect the operand tokens first, so that a wrong count is reported as such (and before any
  // complaint about an operand's value).
  // Plain arrays, left uninitialized: zeroing an array of string_views on every line costs
  // more than the parsing (measured by calc_benchmark).
  const char* operand_data[kMaxCalcOperands + 1];
  size_t operand_size[kMaxCalcOperands + 1];
  int count = 0;
  while (!(token = tok.Next()).empty()) {
    if (count <= kMaxCalcOperands) {
      operand_data[count] = token.data();
      operand_size[count] = token.size();
    }
    ++count;
  }
  auto operand = [&](int i) { return std::string_view(operand_data[i], operand_size[i]); };
  if (count != want) {
    std::string expected =
        absl::StrCat(op.num_operands, " operand", op.num_operands == 1 ? "" : "s");
    if (stochastic) absl::StrAppend(&expected, " plus the random bits of ", Av(rounding));
    return fail(absl::StrCat("'", Av(op.name), "' takes ", expected, ", got ", count));
  }

  const FormatSpec& src = *c.src;
  const uint64_t width_mask = WidthMask(src);
  const uint64_t pad_mask = (uint64_t{1} << src.pad_bits) - 1;
  for (int i = 0; i < op.num_operands; ++i) {
    uint64_t v = 0;
    const std::string_view text = operand(i);
    HexParse parsed = ParseHex(text, v);
    if (parsed == HexParse::kNotHex) {
      return fail(absl::StrCat("operand ", i + 1, " ", Quote(text),
                               " is not hex (want 0x followed by hex digits)"));
    }
    if (parsed == HexParse::kTooWide || (v & ~width_mask) != 0) {
      return fail(absl::StrCat("operand ", i + 1, " ", Quote(text), " is wider than ", Av(src.name),
                               " (", src.width, " bits)"));
    }
    if ((v & pad_mask) != 0) {
      return fail(absl::StrCat("operand ", i + 1, " ", Quote(text), " has non-zero low ",
                               src.pad_bits, " bits, which ", Av(src.name), " keeps zero"));
    }
    c.operands[i] = v;
  }
  c.num_operands = op.num_operands;
  if (stochastic) {
    problem = ParseRandomBits(operand(op.num_operands), rounding, c);
    if (!problem.empty()) return fail(std::move(problem));
  }
  return CalcLineResult::Kind::kResult;
}

// Appends "0x<digits> <flags>\n".
void AppendResult(const FormatSpec& f, const OpResult& r, std::string& out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  char buf[2 + 16 + 1 + 5 + 1];
  int n = 0;
  buf[n++] = '0';
  buf[n++] = 'x';
  const int digits = (f.width + 3) / 4;
  const uint64_t bits = r.bits & WidthMask(f);
  for (int d = digits - 1; d >= 0; --d) buf[n++] = kDigits[(bits >> (4 * d)) & 15];
  buf[n++] = ' ';
  n += FlagsToChars(r.flags, buf + n);
  buf[n++] = '\n';
  out.append(buf, static_cast<size_t>(n));
}

std::string_view StripCr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

std::span<const CalcOp> CalcOps() { return kCalcOps; }

CalcLineResult EvalCalcLine(std::string_view line, std::span<const CalcOp> extra_ops) {
  CalcLineResult r;
  CalcCase c;
  std::vector<uint64_t> values;
  r.kind = ParseLine(StripCr(line), extra_ops, values, c, r.error);
  if (r.kind == CalcLineResult::Kind::kError) {
    if (std::string bad = BadSeparator(StripCr(line)); !bad.empty()) r.error = std::move(bad);
  }
  if (r.kind == CalcLineResult::Kind::kResult) {
    r.format = c.dst;
    r.result = c.op->eval(c);
  }
  return r;
}

void CalcRunner::FeedLine(std::string_view line, std::string& out, std::string& err) {
  ++stats_.lines;
  CalcCase c;
  std::string error;
  switch (ParseLine(StripCr(line), extra_ops_, values_, c, error)) {
    case CalcLineResult::Kind::kSkip:
      return;
    case CalcLineResult::Kind::kResult:
      ++stats_.cases;
      AppendResult(*c.dst, c.op->eval(c), out);
      return;
    case CalcLineResult::Kind::kError:
      ++stats_.cases;
      ++stats_.errors;
      if (std::string bad = BadSeparator(StripCr(line)); !bad.empty()) error = std::move(bad);
      out.append("error\n");
      absl::StrAppend(&err, "line ", stats_.lines, ": ", error, "\n");
      return;
  }
}

void CalcRunner::Feed(std::string_view text, std::string& out, std::string& err) {
  while (!text.empty()) {
    const void* nl = std::memchr(text.data(), '\n', text.size());
    if (nl == nullptr) {
      FeedLine(text, out, err);
      return;
    }
    size_t len = static_cast<size_t>(static_cast<const char*>(nl) - text.data());
    FeedLine(text.substr(0, len), out, err);
    text.remove_prefix(len + 1);
  }
}

CalcStats RunCalc(std::string_view input, std::string& out, std::string& err,
                  std::span<const CalcOp> extra_ops) {
  CalcRunner runner(extra_ops);
  runner.Feed(input, out, err);
  return runner.stats();
}

namespace {

absl::Status WriteAll(std::FILE* f, std::string& buffer, const char* what) {
  if (buffer.empty()) return absl::OkStatus();
  const size_t n = std::fwrite(buffer.data(), 1, buffer.size(), f);
  const bool short_write = n != buffer.size();
  buffer.clear();
  if (short_write || std::fflush(f) != 0) {
    return absl::UnavailableError(absl::StrCat("writing ", what, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CalcStats> RunCalcStream(std::FILE* in, std::FILE* out, std::FILE* err,
                                        std::span<const CalcOp> extra_ops) {
  static constexpr size_t kChunk = size_t{1} << 20;
  const int fd = fileno(in);
  if (fd < 0) return absl::InvalidArgumentError("input stream has no file descriptor");
  CalcRunner runner(extra_ops);
  std::vector<char> chunk(kChunk);
  std::string pending;      // The start of a line whose end has not been read yet.
  bool discarding = false;  // Inside an over-long line, already reported: skip to its '\n'.
  std::string out_buf, err_buf;
  out_buf.reserve(kChunk + 4096);

  while (true) {
    // read(2) rather than fread: it returns what is available, so the answers to the lines
    // received so far go out before the next read blocks (a driver may talk to calc through a
    // pipe, line by line).
    const ssize_t got = read(fd, chunk.data(), chunk.size());
    if (got < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(absl::StrCat("reading input: ", std::strerror(errno)));
    }
    if (got == 0) break;
    std::string_view data(chunk.data(), static_cast<size_t>(got));
    if (discarding) {
      size_t nl = data.find('\n');
      if (nl == std::string_view::npos) continue;
      data.remove_prefix(nl + 1);
      discarding = false;
    }
    if (!pending.empty()) {
      size_t nl = data.find('\n');
      if (nl == std::string_view::npos) {
        pending.append(data);
        // +1: a '\r' that a later '\n' would make a CRLF does not count toward the limit.
        if (pending.size() > kMaxCalcLineBytes + 1) {
          runner.FeedLine(pending, out_buf, err_buf);  // Reports the over-long line.
          pending.clear();
          pending.shrink_to_fit();
          discarding = true;
        }
        data = {};
      } else {
        pending.append(data.substr(0, nl));
        runner.FeedLine(pending, out_buf, err_buf);
        pending.clear();
        data.remove_prefix(nl + 1);
      }
    }
    if (!data.empty()) {
      size_t last_nl = data.rfind('\n');
      if (last_nl == std::string_view::npos) {
        pending.assign(data);
      } else {
        runner.Feed(data.substr(0, last_nl + 1), out_buf, err_buf);
        pending.assign(data.substr(last_nl + 1));
      }
    }
    if (absl::Status s = WriteAll(err, err_buf, "error stream"); !s.ok()) return s;
    if (absl::Status s = WriteAll(out, out_buf, "output"); !s.ok()) return s;
  }
  if (!discarding && !pending.empty()) runner.FeedLine(pending, out_buf, err_buf);
  if (absl::Status s = WriteAll(err, err_buf, "error stream"); !s.ok()) return s;
  if (absl::Status s = WriteAll(out, out_buf, "output"); !s.ok()) return s;
  return runner.stats();
}

}  // namespace fpconform
