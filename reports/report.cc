#include "reports/report.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "formats/str_cat.h"
#include "nlohmann/json.hpp"

namespace fpconform::reports {

int Table::ColumnIndex(std::string_view column) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == column) return static_cast<int>(i);
  }
  return -1;
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

namespace {

const char* TypeName(ColumnType t) {
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
    if (std::isfinite(*d)) {
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
                                                  TypeName(t.columns[c].type)));
        }
      }
    }
  }
  return absl::OkStatus();
}

std::string ToJson(const Report& report) {
  std::string out = "{\n  \"fpconform_report\": 1,\n  \"provenance\": [";
  for (size_t i = 0; i < report.provenance.size(); ++i) {
    out += i == 0 ? "\n    [" : ",\n    [";
    AppendJsonString(out, report.provenance[i].first);
    out += ", ";
    AppendJsonString(out, report.provenance[i].second);
    out += "]";
  }
  out += "\n  ],\n  \"tables\": [";
  for (size_t ti = 0; ti < report.tables.size(); ++ti) {
    const Table& t = report.tables[ti];
    out += ti == 0 ? "\n    {" : ",\n    {";
    out += "\"name\": ";
    AppendJsonString(out, t.name);
    out += ", \"title\": ";
    AppendJsonString(out, t.title);
    out += ",\n     \"description\": ";
    AppendJsonString(out, t.description);
    out += ",\n     \"columns\": [";
    for (size_t c = 0; c < t.columns.size(); ++c) {
      out += c == 0 ? "\n      {" : ",\n      {";
      out += "\"name\": ";
      AppendJsonString(out, t.columns[c].name);
      out += ", \"type\": ";
      AppendJsonString(out, TypeName(t.columns[c].type));
      out += ", \"unit\": ";
      AppendJsonString(out, t.columns[c].unit);
      out += ", \"description\": ";
      AppendJsonString(out, t.columns[c].description);
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

absl::Status WriteDirectoryAtomically(
    const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files,
    const std::function<absl::Status(const std::string& staging_dir)>& finalize) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target = fs::path(dir).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) return absl::InternalError(Cat(parent.string(), ": ", ec.message()));
  const std::string pid = std::to_string(::getpid());
  const fs::path staging = fs::path(target.string() + ".partial-" + pid);
  fs::remove_all(staging, ec);
  if (!fs::create_directory(staging, ec) || ec) {
    return absl::InternalError(Cat(staging.string(), ": cannot create: ", ec.message()));
  }
  for (const auto& [name, content] : files) {
    const fs::path p = staging / name;
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out) {
      fs::remove_all(staging, ec);
      return absl::InternalError(Cat(p.string(), ": write failed"));
    }
  }
  if (finalize) {
    if (absl::Status s = finalize(staging.string()); !s.ok()) {
      fs::remove_all(staging, ec);
      return s;
    }
  }
  const fs::path aside = fs::path(target.string() + ".old-" + pid);
  const bool existed = fs::exists(target, ec);
  if (existed) {
    fs::rename(target, aside, ec);
    if (ec) {
      fs::remove_all(staging, ec);
      return absl::InternalError(Cat(target.string(), ": cannot move the old report "
                                              "aside: ", ec.message()));
    }
  }
  fs::rename(staging, target, ec);
  if (ec) {
    const std::string msg = ec.message();
    if (existed) fs::rename(aside, target, ec);
    return absl::InternalError(Cat(target.string(), ": cannot install: ", msg));
  }
  if (existed) fs::remove_all(aside, ec);
  return absl::OkStatus();
}

}  // namespace fpconform::reports
