// The replay-file reader (replay_file.h).
#include "cases/replay_file.h"

#include <cstddef>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "base/str_cat.h"
#include "base/user_file.h"

namespace fpconform {
namespace {

constexpr std::string_view kMagic = "# fpconform-replay v1";
const std::set<std::string, std::less<>> kKeys = {
    "device", "sm", "driver", "runtime", "instruction", "a-format", "b-format", "c-format",
    "d-format", "expect", "candidates", "layout-check", "source"};
const std::set<std::string, std::less<>> kRequired = {
    "device", "instruction", "a-format", "b-format", "c-format", "d-format", "expect"};

std::string_view Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

// One hex container value (1..16 hex digits, no prefix) that fits in f's width.
absl::StatusOr<uint64_t> ParseHex(std::string_view tok, const FormatSpec& f, std::string_view path, int line,
                                  std::string_view field) {
  if (tok.empty() || tok.size() > 16) {
    return ReplayError(path, line, field, Cat("expected 1..16 hex digits, got '", EscapeText(tok), "'"));
  }
  uint64_t v = 0;
  for (char ch : tok) {
    int digit;
    if (ch >= '0' && ch <= '9') {
      digit = ch - '0';
    } else if (ch >= 'a' && ch <= 'f') {
      digit = ch - 'a' + 10;
    } else if (ch >= 'A' && ch <= 'F') {
      digit = ch - 'A' + 10;
    } else {
      return ReplayError(path, line, field, Cat("not a hex number: '", EscapeText(tok), "'"));
    }
    v = (v << 4) | static_cast<uint64_t>(digit);
  }
  if (f.width < 64 && (v >> f.width) != 0) {
    return ReplayError(path, line, field, Cat("0x", tok, " does not fit in ", f.name, " (", f.width, " bits)"));
  }
  return v;
}

// The header's checks once the first data line is reached.
absl::Status FinishHeader(ReplayFile& file, int line_no) {
  for (const std::string& key : kRequired) {
    if (!file.header.contains(key)) {
      return ReplayError(file.path, line_no, key, "missing header key (needed before the data)");
    }
  }
  const std::pair<const char*, const FormatSpec**> formats[] = {{"a-format", &file.a_format},
                                                                {"b-format", &file.b_format},
                                                                {"c-format", &file.c_format},
                                                                {"d-format", &file.d_format}};
  for (const auto& [key, out] : formats) {
    *out = FindFormat(file.header[key]);
    if (*out == nullptr) {
      return ReplayError(file.path, file.header_line[key], key,
                         Cat("unknown format '", EscapeText(file.header[key]), "'"));
    }
  }
  file.expect = file.header["expect"];
  if (file.header.contains("candidates")) {
    std::istringstream cs(file.header["candidates"]);
    std::string name;
    while (cs >> name) file.candidates.push_back(name);
  }
  if (file.header.contains("layout-check")) {
    const std::string& lc = file.header["layout-check"];
    if (lc.rfind("passed", 0) != 0 && lc.rfind("not applicable", 0) != 0) {
      return ReplayError(file.path, file.header_line["layout-check"], "layout-check",
                         Cat("a file whose self-check did not pass must not be replayed, got '",
                             EscapeText(lc), "'"));
    }
  }
  return absl::OkStatus();
}

// One data line: K, K a's, K b's, c, d.
absl::StatusOr<ReplayLine> ParseDataLine(const ReplayFile& file, std::string_view line, int line_no) {
  std::vector<std::string_view> tok;
  for (size_t i = 0; i < line.size();) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t b = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > b) tok.push_back(line.substr(b, i - b));
  }
  const std::optional<int64_t> k = ParseDecimal<int64_t>(tok[0], 0, 999999);
  if (!k) {
    return ReplayError(file.path, line_no, "K",
                       Cat("expected a decimal count of at most 6 digits, got '", EscapeText(tok[0]), "'"));
  }
  if (*k < 1) return ReplayError(file.path, line_no, "K", "must be >= 1");
  const size_t n = static_cast<size_t>(*k);
  const size_t want = 1 + 2 * n + 2;
  if (tok.size() != want) {
    return ReplayError(file.path, line_no, "line",
                       Cat("K = ", *k, " needs ", want, " fields (K, K a, K b, c, d), got ", tok.size()));
  }
  ReplayLine rl;
  rl.line = line_no;
  rl.a.reserve(n);
  rl.b.reserve(n);
  for (size_t i = 0; i < 2 * n + 2; ++i) {
    const bool is_a = i < n, is_b = i >= n && i < 2 * n;
    const FormatSpec& f = is_a ? *file.a_format : is_b ? *file.b_format : i == 2 * n ? *file.c_format : *file.d_format;
    const std::string field = is_a ? Cat("a[", i, "]") : is_b ? Cat("b[", i - n, "]") : i == 2 * n ? "c" : "d";
    absl::StatusOr<uint64_t> v = ParseHex(tok[1 + i], f, file.path, line_no, field);
    if (!v.ok()) return v.status();
    if (is_a) {
      rl.a.push_back(*v);
    } else if (is_b) {
      rl.b.push_back(*v);
    } else if (i == 2 * n) {
      rl.c = *v;
    } else {
      rl.d = *v;
    }
  }
  return rl;
}

}  // namespace

absl::Status ReplayError(std::string_view path, int line, std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(Cat(path, ":", line, ": ", field, ": ", what));
}

absl::StatusOr<ReplayFile> ParseReplay(std::string_view text, const std::string& path) {
  ReplayFile file;
  file.path = path;
  int line_no = 0;
  bool header_done = false;
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = Trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    if (line_no == 1) {
      if (line != kMagic) return ReplayError(path, 1, "magic", Cat("first line must be '", kMagic, "'"));
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq != std::string_view::npos) {
      if (header_done) return ReplayError(path, line_no, "header", "header line after the first data line");
      const std::string key(Trim(line.substr(0, eq)));
      const std::string value(Trim(line.substr(eq + 1)));
      if (!kKeys.contains(key)) return ReplayError(path, line_no, EscapeText(key), "unknown header key");
      if (file.header.contains(key)) return ReplayError(path, line_no, key, "duplicate header key");
      if (value.empty()) return ReplayError(path, line_no, key, "empty value");
      file.header[key] = value;
      file.header_line[key] = line_no;
      continue;
    }
    if (!header_done) {
      header_done = true;
      if (absl::Status s = FinishHeader(file, line_no); !s.ok()) return s;
    }
    absl::StatusOr<ReplayLine> rl = ParseDataLine(file, line, line_no);
    if (!rl.ok()) return rl.status();
    file.lines.push_back(*std::move(rl));
  }
  if (line_no == 0) return ReplayError(path, 1, "magic", "empty file");
  if (!header_done) return ReplayError(path, line_no, "data", "no data lines");
  return file;
}

absl::StatusOr<ReplayFile> LoadReplay(const std::string& path) {
  absl::StatusOr<std::string> text = ReadUserFile(path, kMaxTextFileBytes, "replay file");
  if (!text.ok()) return text.status();
  return ParseReplay(*text, path);
}

}  // namespace fpconform
