// A report: ordered provenance entries plus named tables of typed cells, and its file forms
// (JSON, CSV, Markdown) and safe, atomic directory output (WriteDirectoryAtomically, with a
// manifest that marks the directory as fpconform's). The tolerance sweep (sweep.h) fills one;
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

// Builds one row of `table` by column name, so that a row is written against the table's
// schema rather than as a positional list:
//   t.rows.push_back(RowBuilder(t).Set("k", int64_t{64}).Set("ulp_max", 0.5).Empty("note")
//                        .Build());
// Every column must be given exactly once, by Set (a value of the column's type) or Empty (a
// "not applicable" cell). A mistake in the code that fills a report (a column the table does
// not have, one given twice, a value of the wrong type, a column left out at Build) is a bug, not
// an input error: it fails loudly, printing the table, the column and the problem to stderr and
// aborting, so that no report with shifted or missing columns is ever written.
class RowBuilder {
 public:
  explicit RowBuilder(const Table& table);
  // `value` must hold the column's type (int64_t, double, std::string; std::monostate: empty).
  RowBuilder& Set(std::string_view column, Cell value);
  RowBuilder& Empty(std::string_view column) { return Set(column, Cell{}); }
  // The row, in the table's column order. Aborts when a column was not given.
  std::vector<Cell> Build();

 private:
  [[noreturn]] void Fail(std::string_view column, std::string_view problem) const;

  const Table* table_;
  std::vector<Cell> cells_;
  std::vector<bool> given_;
};

struct Report {
  std::vector<std::pair<std::string, std::string>> provenance;
  std::vector<Table> tables;

  const Table* Find(std::string_view table) const;
  Table* Find(std::string_view table);
  // The provenance value of `key`, or "" when absent.
  std::string Provenance(std::string_view key) const;
};

// "int", "float", "string": the type names of report.json's columns.
const char* ColumnTypeName(ColumnType t);

// Shortest decimal that reads back to the same double; "inf", "-inf", "nan" otherwise.
std::string FormatDouble(double v);
// v with `digits` significant digits (printf's "%.*g"); "inf", "-inf", "nan" otherwise.
std::string FormatSignificant(double v, int digits);

// Checks that every row has one cell per column and every cell matches its column's type.
absl::Status Validate(const Report& report);

std::string ToJson(const Report& report);
absl::StatusOr<Report> FromJson(std::string_view text, std::string_view file_name);
std::string ToCsv(const Table& table);

// ---- Report directories (`--out DIR` of tolerance, merge and audit) ----
//
// Every report directory fpconform writes holds a manifest, fpconform-manifest.json:
//   {"fpconform_output": 1, "kind": "tolerance", "files": ["cross_platform.csv", ...]}
// naming the kind of report ([a-z_]+: "tolerance", "audit", ...) and every other file in the
// directory (sorted). It is what makes a directory safe to replace: fpconform replaces `dir`
// only when
//   * nothing is at `dir` (its missing parent directories are created), or
//   * `dir` is an empty directory, or
//   * `dir` is a real directory (not a symbolic link) with a valid manifest, holding no entry
//     other than the manifest and the files it lists, each of them a regular file
//     (a user's own notes put into a report directory are never deleted silently).
// Anything else is refused: an empty path, a path ending in "." or "..", a regular file, a
// symbolic link (also a dangling one), a device, FIFO or socket, a directory without a manifest
// (e.g. one written by fpconform before manifests, or any unrelated directory: remove it
// yourself), a directory holding unlisted files (they are named), or a parent that is not a
// directory. Directories written before manifests existed must be removed by hand once.

// The manifest's file name.
inline constexpr char kManifestFileName[] = "fpconform-manifest.json";

// Checks that `dir` may be replaced by a report directory (the rules above). Read-only: it
// changes nothing. Commands call it before any long work, so that a bad --out is reported at
// once, and WriteDirectoryAtomically calls it again just before it installs the new directory.
// Errors (InvalidArgument for a malformed path, FailedPrecondition for something that must not
// be replaced) name the path and say what is there, e.g.
//   "notes.txt: exists and is a regular file, not an fpconform report directory; refusing to
//    replace it"
//   "r: holds files that are not part of the report: notes.txt, plots/; move them away (or
//    choose another directory)"
absl::Status CheckOutputDirectory(const std::string& dir);

// Writes `files` (name -> content; plain names, no '/', never the manifest's) into `dir`
// atomically, as a report directory of `kind` ([a-z_]+). Steps: CheckOutputDirectory(dir);
// write everything into a fresh sibling "<dir>.partial-<pid>[-<n>]"; run `finalize` (when set)
// on that staging directory (e.g. to render report.html from report.json); write the manifest
// listing every file then in the staging directory (each must be a regular file); check `dir`
// again; swap the staging directory into place (renameat2 RENAME_EXCHANGE where the file system
// has it, else `dir` is renamed aside to "<dir>.old-<pid>[-<n>]" first); then delete the old
// report's listed files, its manifest and the emptied directory (never anything else).
// Any error, including one returned by `finalize` (e.g. CancelledError on an interrupt), removes
// the staging directory and leaves `dir` as it was; so does an interrupt handled as in
// process.h. Only a crash (or SIGKILL) can leave a stale *.partial-* or *.old-* sibling.
// Errors name the path and carry the failing call's own error text.
absl::Status WriteDirectoryAtomically(
    const std::string& dir, const std::string& kind,
    const std::vector<std::pair<std::string, std::string>>& files,
    const std::function<absl::Status(const std::string& staging_dir)>& finalize = nullptr);

// Reads a whole file (NotFound / Internal naming the path).
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace fpconform::reports

#endif  // FPCONFORM_REPORTS_REPORT_H_
