// A report: ordered provenance entries plus named tables of typed cells, and its file forms
// (JSON, CSV, Markdown) and atomic directory output. The tolerance sweep (sweep.h) fills one;
// `fpconform merge` reads shard reports back from JSON and writes the combined one.
//
// JSON form (report.json; the schema is also in README.md, "Report files"):
//   {
//     "fpconform_report": 1,
//     "provenance": [["key", "value"], ...],             // ordered
//     "tables": [
//       {"name": "tolerance", "title": "...", "description": "...",
//        "columns": [{"name": "k", "type": "int", "unit": "", "description": "..."}, ...],
//        "rows": [[0, "matmul", ...], ...]}, ...]
//   }
// Cell types: "int" (JSON integer), "float" (JSON number; the strings "inf", "-inf", "nan" for
// non-finite values), "string". A cell may be null (empty: "not applicable"). Floats are written
// in the shortest form that reads back to the same double, so a report read from JSON and
// written again gives the same bytes.
//
// CSV form: one file per table (<table name>.csv; the "tolerance" table is report.csv), RFC 4180:
// a header line of column names, then one line per row; floats in shortest round-trip form,
// non-finite as inf/-inf/nan, empty cells empty, strings quoted when they hold , " or a newline.
//
// Errors: FromJson returns InvalidArgument naming the file and the JSON path of the problem
// ("a.json: tables[2].rows[7][3]: expected float, got string").
//
// Example:
//   Report r;
//   r.provenance.push_back({"seed", "1"});
//   Table& t = r.tables.emplace_back();
//   t.name = "tolerance";
//   t.columns = {{"k", ColumnType::kInt, "", "reduction length"}};
//   t.rows.push_back({Cell{int64_t{64}}});
//   std::string json = ToJson(r);            // parses back with FromJson to an equal Report
#ifndef FPCONFORM_REPORTS_REPORT_H_
#define FPCONFORM_REPORTS_REPORT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fpconform::reports {

enum class ColumnType : uint8_t { kInt, kFloat, kString };

struct Column {
  std::string name;
  ColumnType type = ColumnType::kFloat;
  std::string unit;         // "" when unitless.
  std::string description;  // One line.
};

// Column constructors for the common cases.
inline Column IntColumn(std::string name, std::string description) {
  return {std::move(name), ColumnType::kInt, "", std::move(description)};
}
inline Column StringColumn(std::string name, std::string description) {
  return {std::move(name), ColumnType::kString, "", std::move(description)};
}
inline Column FloatColumn(std::string name, std::string unit, std::string description) {
  return {std::move(name), ColumnType::kFloat, std::move(unit), std::move(description)};
}

// std::monostate: empty ("not applicable").
using Cell = std::variant<std::monostate, int64_t, double, std::string>;

struct Table {
  std::string name;   // [a-z_]+, also the CSV file stem.
  std::string title;  // Markdown heading.
  std::string description;  // Markdown paragraph(s) printed under the title.
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;

  int ColumnIndex(std::string_view column) const;  // -1 when absent.
};

struct Report {
  std::vector<std::pair<std::string, std::string>> provenance;
  std::vector<Table> tables;

  const Table* Find(std::string_view table) const;
  Table* Find(std::string_view table);
  // The provenance value of `key`, or "" when absent.
  std::string Provenance(std::string_view key) const;
};

// Shortest decimal that reads back to the same double; "inf", "-inf", "nan" otherwise.
std::string FormatDouble(double v);

// Checks that every row has one cell per column and every cell matches its column's type.
absl::Status Validate(const Report& report);

std::string ToJson(const Report& report);
absl::StatusOr<Report> FromJson(std::string_view text, std::string_view file_name);
std::string ToCsv(const Table& table);

// Writes `files` (name -> content) into `dir` atomically: everything is written into a fresh
// sibling directory "<dir>.partial-<pid>" first, then that directory replaces `dir` (an existing
// `dir` is renamed aside and removed only after the swap). An interrupted run leaves `dir` as it
// was (plus, at worst, a stale *.partial-* sibling). `finalize`, when set, runs on the staging
// directory after the files are written and before the swap (e.g. to render report.html from
// report.json); its error aborts the write. Errors name the path.
absl::Status WriteDirectoryAtomically(
    const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files,
    const std::function<absl::Status(const std::string& staging_dir)>& finalize = nullptr);

// Reads a whole file (NotFound / Internal naming the path).
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace fpconform::reports

#endif  // FPCONFORM_REPORTS_REPORT_H_
