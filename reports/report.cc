#include "reports/report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "base/output_file.h"
#include "base/str_cat.h"
#include "nlohmann/json.hpp"

namespace fpconform::reports {

int Table::ColumnIndex(std::string_view column) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == column) return static_cast<int>(i);
  }
  return -1;
}

RowBuilder::RowBuilder(const Table& table)
    : table_(&table), cells_(table.columns.size()), given_(table.columns.size(), false) {}

RowBuilder& RowBuilder::Set(std::string_view column, Cell value) {
  const int i = table_->ColumnIndex(column);
  if (i < 0) Fail(column, "no such column");
  const auto at = static_cast<size_t>(i);
  if (given_[at]) Fail(column, "given twice");
  const ColumnType type = table_->columns[at].type;
  const bool fits = std::holds_alternative<std::monostate>(value) ||
                    (type == ColumnType::kInt && std::holds_alternative<int64_t>(value)) ||
                    (type == ColumnType::kFloat && std::holds_alternative<double>(value)) ||
                    (type == ColumnType::kString && std::holds_alternative<std::string>(value));
  if (!fits) Fail(column, Cat("value is not of the column's type ", ColumnTypeName(type)));
  cells_[at] = std::move(value);
  given_[at] = true;
  return *this;
}

std::vector<Cell> RowBuilder::Build() {
  for (size_t i = 0; i < given_.size(); ++i) {
    if (!given_[i]) Fail(table_->columns[i].name, "not given");
  }
  return std::move(cells_);
}

void RowBuilder::Fail(std::string_view column, std::string_view problem) const {
  std::fprintf(stderr, "fpconform: internal error: table '%s': column '%.*s': %.*s\n",
               table_->name.c_str(), static_cast<int>(column.size()), column.data(),
               static_cast<int>(problem.size()), problem.data());
  std::abort();
}

const Table* Report::Find(std::string_view table) const {
  for (const Table& t : tables) {
    if (t.name == table) return &t;
  }
  return nullptr;
}

Table* Report::Find(std::string_view table) {
  for (Table& t : tables) {
    if (t.name == table) return &t;
  }
  return nullptr;
}

std::string Report::Provenance(std::string_view key) const {
  for (const auto& [k, v] : provenance) {
    if (k == key) return v;
  }
  return "";
}

std::string FormatDouble(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

std::string FormatSignificant(double v, int digits) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

const char* ColumnTypeName(ColumnType t) {
  switch (t) {
    case ColumnType::kInt:
      return "int";
    case ColumnType::kFloat:
      return "float";
    case ColumnType::kString:
      return "string";
  }
  return "?";
}

namespace {

bool CellMatches(const Cell& c, ColumnType t) {
  if (std::holds_alternative<std::monostate>(c)) return true;
  switch (t) {
    case ColumnType::kInt:
      return std::holds_alternative<int64_t>(c);
    case ColumnType::kFloat:
      return std::holds_alternative<double>(c);
    case ColumnType::kString:
      return std::holds_alternative<std::string>(c);
  }
  return false;
}

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

void AppendJsonCell(std::string& out, const Cell& c) {
  if (std::holds_alternative<std::monostate>(c)) {
    out += "null";
  } else if (const int64_t* i = std::get_if<int64_t>(&c)) {
    out += std::to_string(*i);
  } else if (const double* d = std::get_if<double>(&c)) {
    if (*d == 0 && std::signbit(*d)) {
      out += "-0.0";  // "-0" would read back as the integer 0, losing the sign.
    } else if (std::isfinite(*d)) {
      out += FormatDouble(*d);
    } else {
      AppendJsonString(out, FormatDouble(*d));
    }
  } else {
    AppendJsonString(out, std::get<std::string>(c));
  }
}

}  // namespace

absl::Status Validate(const Report& report) {
  for (const Table& t : report.tables) {
    for (size_t r = 0; r < t.rows.size(); ++r) {
      if (t.rows[r].size() != t.columns.size()) {
        return absl::InternalError(Cat("table ", t.name, " row ", r, ": ",
                                                t.rows[r].size(), " cells for ",
                                                t.columns.size(), " columns"));
      }
      for (size_t c = 0; c < t.columns.size(); ++c) {
        if (!CellMatches(t.rows[r][c], t.columns[c].type)) {
          return absl::InternalError(Cat("table ", t.name, " row ", r, " column ",
                                                  t.columns[c].name, ": not a ",
                                                  ColumnTypeName(t.columns[c].type)));
        }
      }
    }
  }
  return absl::OkStatus();
}

std::string ToJson(const Report& report) {
  std::string out = "{\n  \"fpconform_report\": 1,\n  \"provenance\": [";
  // Appends `before` (punctuation and a key) and `value` as a JSON string.
  const auto field = [&out](const char* before, std::string_view value) {
    out += before;
    AppendJsonString(out, value);
  };
  for (size_t i = 0; i < report.provenance.size(); ++i) {
    field(i == 0 ? "\n    [" : ",\n    [", report.provenance[i].first);
    field(", ", report.provenance[i].second);
    out += "]";
  }
  out += "\n  ],\n  \"tables\": [";
  for (size_t ti = 0; ti < report.tables.size(); ++ti) {
    const Table& t = report.tables[ti];
    out += ti == 0 ? "\n    {" : ",\n    {";
    field("\"name\": ", t.name);
    field(", \"title\": ", t.title);
    field(",\n     \"description\": ", t.description);
    out += ",\n     \"columns\": [";
    for (size_t c = 0; c < t.columns.size(); ++c) {
      out += c == 0 ? "\n      {" : ",\n      {";
      field("\"name\": ", t.columns[c].name);
      field(", \"type\": ", ColumnTypeName(t.columns[c].type));
      field(", \"unit\": ", t.columns[c].unit);
      field(", \"description\": ", t.columns[c].description);
      out += "}";
    }
    out += "\n     ],\n     \"rows\": [";
    for (size_t r = 0; r < t.rows.size(); ++r) {
      out += r == 0 ? "\n      [" : ",\n      [";
      for (size_t c = 0; c < t.rows[r].size(); ++c) {
        if (c > 0) out += ", ";
        AppendJsonCell(out, t.rows[r][c]);
      }
      out += "]";
    }
    out += "\n     ]}";
  }
  out += "\n  ]\n}\n";
  return out;
}

namespace {

using nlohmann::json;

absl::Status JsonError(std::string_view file, std::string_view where, std::string_view what) {
  return absl::InvalidArgumentError(Cat(file, ": ", where, ": ", what));
}

absl::StatusOr<std::string> GetString(const json& j, std::string_view file,
                                      const std::string& where) {
  if (!j.is_string()) return JsonError(file, where, "expected a string");
  return j.get<std::string>();
}

// Writes the cell into *out (an out-parameter rather than StatusOr<Cell>: GCC 12 reports a false
// -Wmaybe-uninitialized on moving a StatusOr of a variant in sanitizer builds).
absl::Status ParseCell(const json& j, ColumnType type, std::string_view file,
                       const std::string& where, Cell* out) {
  if (j.is_null()) {
    *out = std::monostate{};
    return absl::OkStatus();
  }
  switch (type) {
    case ColumnType::kInt:
      if (!j.is_number_integer()) return JsonError(file, where, "expected int");
      *out = j.get<int64_t>();
      return absl::OkStatus();
    case ColumnType::kFloat:
      if (j.is_number()) {
        *out = j.get<double>();
        return absl::OkStatus();
      }
      if (j.is_string()) {
        const std::string s = j.get<std::string>();
        if (s == "inf" || s == "-inf" || s == "nan") {
          *out = s == "inf" ? INFINITY : s == "-inf" ? -INFINITY : NAN;
          return absl::OkStatus();
        }
      }
      return JsonError(file, where, "expected float");
    case ColumnType::kString:
      if (!j.is_string()) return JsonError(file, where, "expected string");
      *out = j.get<std::string>();
      return absl::OkStatus();
  }
  return JsonError(file, where, "bad column type");
}

}  // namespace

absl::StatusOr<Report> FromJson(std::string_view text, std::string_view file_name) {
  json root = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return JsonError(file_name, "(document)", "not valid JSON");
  if (!root.is_object()) return JsonError(file_name, "(document)", "expected an object");
  if (!root.contains("fpconform_report") || root["fpconform_report"] != 1) {
    return JsonError(file_name, "fpconform_report", "missing or not 1 (not an fpconform report?)");
  }
  Report report;
  if (!root.contains("provenance") || !root["provenance"].is_array()) {
    return JsonError(file_name, "provenance", "expected an array");
  }
  const json& prov = root["provenance"];
  for (size_t i = 0; i < prov.size(); ++i) {
    const std::string where = Cat("provenance[", i, "]");
    if (!prov[i].is_array() || prov[i].size() != 2) {
      return JsonError(file_name, where, "expected [key, value]");
    }
    absl::StatusOr<std::string> k = GetString(prov[i][0], file_name, where + "[0]");
    if (!k.ok()) return k.status();
    absl::StatusOr<std::string> v = GetString(prov[i][1], file_name, where + "[1]");
    if (!v.ok()) return v.status();
    report.provenance.emplace_back(*k, *v);
  }
  if (!root.contains("tables") || !root["tables"].is_array()) {
    return JsonError(file_name, "tables", "expected an array");
  }
  const json& tables = root["tables"];
  for (size_t ti = 0; ti < tables.size(); ++ti) {
    const std::string tw = Cat("tables[", ti, "]");
    const json& jt = tables[ti];
    if (!jt.is_object()) return JsonError(file_name, tw, "expected an object");
    Table t;
    for (const char* key : {"name", "title", "description"}) {
      if (!jt.contains(key)) return JsonError(file_name, Cat(tw, ".", key), "missing");
      absl::StatusOr<std::string> s = GetString(jt[key], file_name, Cat(tw, ".", key));
      if (!s.ok()) return s.status();
      (std::string_view(key) == "name" ? t.name
       : std::string_view(key) == "title" ? t.title
                                          : t.description) = *s;
    }
    if (!jt.contains("columns") || !jt["columns"].is_array()) {
      return JsonError(file_name, tw + ".columns", "expected an array");
    }
    for (size_t c = 0; c < jt["columns"].size(); ++c) {
      const json& jc = jt["columns"][c];
      const std::string cw = Cat(tw, ".columns[", c, "]");
      if (!jc.is_object()) return JsonError(file_name, cw, "expected an object");
      Column col;
      std::string type;
      for (const char* key : {"name", "type", "unit", "description"}) {
        if (!jc.contains(key)) return JsonError(file_name, Cat(cw, ".", key), "missing");
        absl::StatusOr<std::string> s = GetString(jc[key], file_name, Cat(cw, ".", key));
        if (!s.ok()) return s.status();
        const std::string_view k(key);
        (k == "name" ? col.name : k == "type" ? type : k == "unit" ? col.unit : col.description) =
            *s;
      }
      if (type == "int") {
        col.type = ColumnType::kInt;
      } else if (type == "float") {
        col.type = ColumnType::kFloat;
      } else if (type == "string") {
        col.type = ColumnType::kString;
      } else {
        return JsonError(file_name, cw + ".type", Cat("unknown type '", type, "'"));
      }
      t.columns.push_back(std::move(col));
    }
    if (!jt.contains("rows") || !jt["rows"].is_array()) {
      return JsonError(file_name, tw + ".rows", "expected an array");
    }
    const json& rows = jt["rows"];
    t.rows.reserve(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      const std::string rw = Cat(tw, ".rows[", r, "]");
      if (!rows[r].is_array() || rows[r].size() != t.columns.size()) {
        return JsonError(file_name, rw,
                         Cat("expected an array of ", t.columns.size(), " cells"));
      }
      std::vector<Cell> row;
      row.reserve(t.columns.size());
      for (size_t c = 0; c < t.columns.size(); ++c) {
        Cell cell;
        if (absl::Status s =
                ParseCell(rows[r][c], t.columns[c].type, file_name, Cat(rw, "[", c, "]"), &cell);
            !s.ok()) {
          return s;
        }
        row.push_back(std::move(cell));
      }
      t.rows.push_back(std::move(row));
    }
    report.tables.push_back(std::move(t));
  }
  return report;
}

namespace {

void AppendCsvField(std::string& out, std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) {
    out += s;
    return;
  }
  out += '"';
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

}  // namespace

std::string ToCsv(const Table& table) {
  std::string out;
  for (size_t c = 0; c < table.columns.size(); ++c) {
    if (c > 0) out += ',';
    AppendCsvField(out, table.columns[c].name);
  }
  out += '\n';
  for (const std::vector<Cell>& row : table.rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) out += ',';
      const Cell& cell = row[c];
      if (const int64_t* i = std::get_if<int64_t>(&cell)) {
        out += std::to_string(*i);
      } else if (const double* d = std::get_if<double>(&cell)) {
        out += FormatDouble(*d);
      } else if (const std::string* s = std::get_if<std::string>(&cell)) {
        AppendCsvField(out, *s);
      }
    }
    out += '\n';
  }
  return out;
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(Cat(path, ": cannot open for reading"));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::InternalError(Cat(path, ": read error"));
  return ss.str();
}

namespace {

namespace fs = std::filesystem;

std::string ErrnoText(int e) { return std::strerror(e); }

// What is at a path, for messages ("a regular file", "a symbolic link (dangling)", ...).
std::string DescribeType(const struct stat& st, const std::string& path) {
  switch (st.st_mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFLNK: {
      struct stat target {};
      return stat(path.c_str(), &target) == 0 ? "a symbolic link" : "a symbolic link (dangling)";
    }
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFIFO:
      return "a FIFO";
    case S_IFSOCK:
      return "a socket";
  }
  return "not a file or directory";
}

bool ValidEntryName(std::string_view n) {
  return !n.empty() && n != "." && n != ".." && n.find('/') == std::string_view::npos &&
         n.find('\0') == std::string_view::npos;
}

bool ValidKind(std::string_view k) {
  if (k.empty()) return false;
  for (char c : k) {
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  }
  return true;
}

// An output path split into its parent directory and last component, without resolving
// anything (the kernel, not a lexical rule, decides what ".." means behind a symbolic link).
struct OutputPath {
  std::string target;  // Without trailing slashes.
  std::string parent;  // "." for a bare name.
};

absl::StatusOr<OutputPath> SplitOutputPath(const std::string& dir) {
  if (dir.empty()) {
    return absl::InvalidArgumentError("the output directory path is empty");
  }
  std::string t = dir;
  while (t.size() > 1 && t.back() == '/') t.pop_back();
  const size_t slash = t.rfind('/');
  const std::string last = slash == std::string::npos ? t : t.substr(slash + 1);
  if (last.empty() || last == "." || last == "..") {
    return absl::InvalidArgumentError(
        Cat(dir, ": names no directory entry that could be replaced (use a new directory's "
                 "path)"));
  }
  OutputPath p;
  p.target = t;
  p.parent = slash == std::string::npos ? "." : slash == 0 ? "/" : t.substr(0, slash);
  return p;
}

// Reads a small regular file without following a symbolic link and without blocking on a FIFO.
absl::StatusOr<std::string> ReadSmallRegularFile(const std::string& path, size_t limit) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return absl::FailedPreconditionError(Cat(path, ": cannot open: ", ErrnoText(e)));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    return absl::FailedPreconditionError(Cat(path, ": cannot stat: ", ErrnoText(e)));
  }
  if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > limit) {
    close(fd);
    return absl::FailedPreconditionError(
        Cat(path, S_ISREG(st.st_mode) ? ": too large for a manifest" : ": not a regular file"));
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      close(fd);
      return absl::FailedPreconditionError(Cat(path, ": read error: ", ErrnoText(e)));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  out.resize(got);
  return out;
}

// The file names a manifest lists, or why it is not a valid manifest.
absl::StatusOr<std::vector<std::string>> ParseManifest(const std::string& text,
                                                       const std::string& path) {
  const nlohmann::json j =
      nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  auto bad = [&](std::string_view why) {
    return absl::FailedPreconditionError(
        Cat(path, ": not a valid fpconform manifest (", why, "); refusing to replace ",
            fs::path(path).parent_path().string()));
  };
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  if (!j.contains("fpconform_output") || j["fpconform_output"] != 1) {
    return bad("fpconform_output is not 1");
  }
  if (!j.contains("kind") || !j["kind"].is_string() ||
      !ValidKind(j["kind"].get<std::string>())) {
    return bad("kind is not a [a-z_]+ string");
  }
  if (!j.contains("files") || !j["files"].is_array()) return bad("files is not an array");
  std::vector<std::string> files;
  for (const nlohmann::json& f : j["files"]) {
    if (!f.is_string() || !ValidEntryName(f.get<std::string>()) ||
        f.get<std::string>() == kManifestFileName) {
      return bad("files holds something that is not a plain file name");
    }
    files.push_back(f.get<std::string>());
  }
  return files;
}

// What CheckOutputDirectory found.
struct TargetState {
  bool exists = false;
  std::vector<std::string> listed;  // Entries present that the manifest lists (to delete later).
  bool has_manifest = false;
};

absl::StatusOr<TargetState> InspectTarget(const OutputPath& p) {
  TargetState state;
  const std::string& t = p.target;
  struct stat st {};
  if (lstat(t.c_str(), &st) != 0) {
    const int e = errno;
    if (e != ENOENT) {
      return absl::FailedPreconditionError(Cat(t, ": cannot be used: ", ErrnoText(e)));
    }
    // Nothing there: the nearest existing ancestor must be a directory (the rest is created).
    fs::path a = p.parent;
    while (true) {
      struct stat ast {};
      if (stat(a.c_str(), &ast) == 0) {
        if (!S_ISDIR(ast.st_mode)) {
          return absl::FailedPreconditionError(
              Cat(t, ": cannot be created: ", a.string(), " is not a directory"));
        }
        break;
      }
      const int ae = errno;
      if (ae != ENOENT || !a.has_parent_path() || a.parent_path() == a) {
        return absl::FailedPreconditionError(
            Cat(t, ": cannot be created: ", a.string(), ": ", ErrnoText(ae)));
      }
      a = a.parent_path();
    }
    return state;
  }
  state.exists = true;
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        Cat(t, ": exists and is ", DescribeType(st, t),
            ", not an fpconform report directory; refusing to replace it"));
  }
  std::vector<std::string> entries;
  std::error_code ec;
  for (fs::directory_iterator it(t, ec), end; !ec && it != end; it.increment(ec)) {
    entries.push_back(it->path().filename().string());
  }
  if (ec) {
    return absl::FailedPreconditionError(Cat(t, ": cannot list: ", ec.message()));
  }
  std::sort(entries.begin(), entries.end());
  if (entries.empty()) return state;  // An empty directory: nothing to lose.
  const std::string manifest_path = t + "/" + kManifestFileName;
  struct stat mst {};
  if (lstat(manifest_path.c_str(), &mst) != 0) {
    const int e = errno;
    if (e == ENOENT) {
      return absl::FailedPreconditionError(
          Cat(t, ": exists and is not an fpconform report directory (it has no ",
              kManifestFileName, "); refusing to replace it: choose a new directory, or remove "
              "it yourself"));
    }
    return absl::FailedPreconditionError(Cat(manifest_path, ": ", ErrnoText(e)));
  }
  if (!S_ISREG(mst.st_mode)) {
    return absl::FailedPreconditionError(
        Cat(manifest_path, ": is ", DescribeType(mst, manifest_path),
            ", not a manifest; refusing to replace ", t));
  }
  absl::StatusOr<std::string> text = ReadSmallRegularFile(manifest_path, size_t{1} << 20);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<std::string>> listed = ParseManifest(*text, manifest_path);
  if (!listed.ok()) return listed.status();
  state.has_manifest = true;
  std::vector<std::string> extra, odd;
  for (const std::string& name : entries) {
    if (name == kManifestFileName) continue;
    const std::string path = t + "/" + name;
    struct stat est {};
    const bool is_dir = lstat(path.c_str(), &est) == 0 && S_ISDIR(est.st_mode);
    if (std::find(listed->begin(), listed->end(), name) == listed->end()) {
      extra.push_back(is_dir ? name + "/" : name);
    } else if (!S_ISREG(est.st_mode)) {
      odd.push_back(Cat(name, " (", DescribeType(est, path), ")"));
    } else {
      state.listed.push_back(name);
    }
  }
  if (!extra.empty()) {
    return absl::FailedPreconditionError(
        Cat(t, ": holds files that are not part of the report: ", Join(extra, ", "),
            "; move them away (or choose another directory)"));
  }
  if (!odd.empty()) {
    return absl::FailedPreconditionError(
        Cat(t, ": report entries that are not regular files: ", Join(odd, ", "),
            "; refusing to replace it"));
  }
  return state;
}

// Deletes a report directory that InspectTarget accepted: its listed files, the manifest, then
// the directory itself (rmdir: fails rather than delete anything that appeared since).
absl::Status RemoveReportDirectory(const std::string& dir, const TargetState& state) {
  for (const std::string& name : state.listed) {
    const std::string path = dir + "/" + name;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      const int e = errno;
      return absl::InternalError(Cat(path, ": cannot remove: ", ErrnoText(e)));
    }
  }
  if (state.has_manifest) {
    const std::string path = dir + "/" + kManifestFileName;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      const int e = errno;
      return absl::InternalError(Cat(path, ": cannot remove: ", ErrnoText(e)));
    }
  }
  if (rmdir(dir.c_str()) != 0) {
    const int e = errno;
    return absl::InternalError(Cat(dir, ": cannot remove: ", ErrnoText(e)));
  }
  return absl::OkStatus();
}

// A sibling name that does not exist yet: base, base-1, base-2, ...
std::string FreeSibling(const std::string& base) {
  for (int n = 0;; ++n) {
    const std::string p = n == 0 ? base : Cat(base, "-", n);
    struct stat st {};
    if (lstat(p.c_str(), &st) != 0 && errno == ENOENT) return p;
  }
}

}  // namespace

absl::Status CheckOutputDirectory(const std::string& dir) {
  absl::StatusOr<OutputPath> p = SplitOutputPath(dir);
  if (!p.ok()) return p.status();
  return InspectTarget(*p).status();
}

absl::Status WriteDirectoryAtomically(
    const std::string& dir, const std::string& kind,
    const std::vector<std::pair<std::string, std::string>>& files,
    const std::function<absl::Status(const std::string& staging_dir)>& finalize) {
  if (!ValidKind(kind)) {
    return absl::InvalidArgumentError(Cat("report kind '", kind, "' is not [a-z_]+"));
  }
  for (const auto& f : files) {
    if (!ValidEntryName(f.first) || f.first == kManifestFileName) {
      return absl::InvalidArgumentError(Cat(dir, ": '", f.first, "' is not a report file name"));
    }
  }
  absl::StatusOr<OutputPath> p = SplitOutputPath(dir);
  if (!p.ok()) return p.status();
  if (absl::StatusOr<TargetState> s = InspectTarget(*p); !s.ok()) return s.status();
  const std::string& target = p->target;
  std::error_code ec;
  fs::create_directories(p->parent, ec);
  if (ec) return absl::InternalError(Cat(p->parent, ": cannot create: ", ec.message()));

  const std::string pid = std::to_string(::getpid());
  std::string staging;
  for (int n = 0;; ++n) {
    staging = n == 0 ? Cat(target, ".partial-", pid) : Cat(target, ".partial-", pid, "-", n);
    if (mkdir(staging.c_str(), 0777) == 0) break;
    const int e = errno;
    if (e != EEXIST || n >= 1000) {
      return absl::InternalError(Cat(staging, ": cannot create: ", ErrnoText(e)));
    }
  }
  // From here on every failure removes the staging directory (ours alone: we just made it).
  auto fail = [&staging](absl::Status s) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    return s;
  };
  for (const auto& [name, content] : files) {
    if (absl::Status s = WriteNewFile(staging + "/" + name, content); !s.ok()) {
      return fail(std::move(s));
    }
  }
  if (finalize) {
    if (absl::Status s = finalize(staging); !s.ok()) return fail(std::move(s));
  }
  std::vector<std::string> names;
  for (fs::directory_iterator it(staging, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code tec;
    if (!it->is_regular_file(tec) || it->is_symlink(tec) || name == kManifestFileName) {
      return fail(absl::InternalError(
          Cat(staging, "/", name, ": not a regular report file (made while finalizing)")));
    }
    names.push_back(name);
  }
  if (ec) return fail(absl::InternalError(Cat(staging, ": cannot list: ", ec.message())));
  std::sort(names.begin(), names.end());
  std::string manifest = "{\n  \"fpconform_output\": 1,\n  \"kind\": ";
  AppendJsonString(manifest, kind);
  manifest += ",\n  \"files\": [";
  for (size_t i = 0; i < names.size(); ++i) {
    manifest += i == 0 ? "\n    " : ",\n    ";
    AppendJsonString(manifest, names[i]);
  }
  manifest += "\n  ]\n}\n";
  if (absl::Status s = WriteNewFile(staging + "/" + kManifestFileName, manifest); !s.ok()) {
    return fail(std::move(s));
  }

  // Install: check the target again (it may have changed during a long run), then swap.
  absl::StatusOr<TargetState> old = InspectTarget(*p);
  if (!old.ok()) return fail(old.status());
  if (!old->exists) {
    if (rename(staging.c_str(), target.c_str()) != 0) {
      const int e = errno;
      return fail(absl::InternalError(Cat(target, ": cannot install: ", ErrnoText(e))));
    }
    return absl::OkStatus();
  }
  std::string old_at;  // Where the old report is once the new one is in place.
  if (renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    old_at = staging;
  } else {
    // No atomic exchange on this file system: move the old report aside, then install.
    const std::string aside = FreeSibling(Cat(target, ".old-", pid));
    if (rename(target.c_str(), aside.c_str()) != 0) {
      const int e = errno;
      return fail(absl::InternalError(
          Cat(target, ": cannot move the old report aside to ", aside, ": ", ErrnoText(e))));
    }
    if (rename(staging.c_str(), target.c_str()) != 0) {
      const int e = errno;
      if (rename(aside.c_str(), target.c_str()) != 0) {
        const int back = errno;
        return fail(absl::InternalError(
            Cat(target, ": cannot install: ", ErrnoText(e), "; the old report is now ", aside,
                " (cannot move it back: ", ErrnoText(back), ")")));
      }
      return fail(absl::InternalError(Cat(target, ": cannot install: ", ErrnoText(e))));
    }
    old_at = aside;
  }
  if (absl::Status s = RemoveReportDirectory(old_at, *old); !s.ok()) {
    return absl::InternalError(Cat("the new report is in ", target, ", but the old one (now ",
                                   old_at, ") could not be removed: ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace fpconform::reports
