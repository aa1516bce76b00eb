// The report writers and readers on a hand-built report (expected texts written by hand), the
// JSON round trip, and the atomic directory write.
#include "reports/report.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace fpconform::reports {
namespace {

Report Tiny() {
  Report r;
  r.provenance = {{"seed", "7"}, {"note", "quote \" and \\ and\nnewline"}};
  Table t;
  t.name = "tolerance";
  t.title = "T";
  t.description = "d";
  t.columns = {{"k", ColumnType::kInt, "", "K"},
               {"platform", ColumnType::kString, "", "p"},
               {"err", ColumnType::kFloat, "ulp", "e"}};
  t.rows = {{Cell{int64_t{64}}, Cell{std::string("a,b")}, Cell{0.1}},
            {Cell{int64_t{-1}}, Cell{std::string("say \"hi\"")}, Cell{INFINITY}},
            {Cell{}, Cell{}, Cell{NAN}},
            {Cell{int64_t{3}}, Cell{std::string("x")}, Cell{1e-300}}};
  r.tables.push_back(t);
  return r;
}

TEST(ReportTest, CsvIsRfc4180WithShortestFloats) {
  EXPECT_EQ(ToCsv(Tiny().tables[0]),
            "k,platform,err\n"
            "64,\"a,b\",0.1\n"
            "-1,\"say \"\"hi\"\"\",inf\n"
            ",,nan\n"
            "3,x,1e-300\n");
}

TEST(ReportTest, JsonHasTheDocumentedShape) {
  const std::string json = ToJson(Tiny());
  EXPECT_EQ(json,
            "{\n"
            "  \"fpconform_report\": 1,\n"
            "  \"provenance\": [\n"
            "    [\"seed\", \"7\"],\n"
            "    [\"note\", \"quote \\\" and \\\\ and\\nnewline\"]\n"
            "  ],\n"
            "  \"tables\": [\n"
            "    {\"name\": \"tolerance\", \"title\": \"T\",\n"
            "     \"description\": \"d\",\n"
            "     \"columns\": [\n"
            "      {\"name\": \"k\", \"type\": \"int\", \"unit\": \"\", \"description\": \"K\"},\n"
            "      {\"name\": \"platform\", \"type\": \"string\", \"unit\": \"\", \"description\": \"p\"},\n"
            "      {\"name\": \"err\", \"type\": \"float\", \"unit\": \"ulp\", \"description\": \"e\"}\n"
            "     ],\n"
            "     \"rows\": [\n"
            "      [64, \"a,b\", 0.1],\n"
            "      [-1, \"say \\\"hi\\\"\", \"inf\"],\n"
            "      [null, null, \"nan\"],\n"
            "      [3, \"x\", 1e-300]\n"
            "     ]}\n"
            "  ]\n"
            "}\n");
}

TEST(ReportTest, JsonRoundTripIsByteIdentical) {
  const std::string json = ToJson(Tiny());
  absl::StatusOr<Report> back = FromJson(json, "tiny.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ToJson(*back), json);
  EXPECT_TRUE(Validate(*back).ok());
  // Every double survives: shortest round-trip form.
  Report r = Tiny();
  for (double v : {0.1, 1.0 / 3, 5e-324, 1.7976931348623157e308, -2.5e-17, 123456789.123456789}) {
    r.tables[0].rows.push_back({Cell{int64_t{0}}, Cell{std::string()}, Cell{v}});
  }
  absl::StatusOr<Report> back2 = FromJson(ToJson(r), "r.json");
  ASSERT_TRUE(back2.ok());
  for (size_t i = 4; i < r.tables[0].rows.size(); ++i) {
    EXPECT_EQ(std::get<double>(back2->tables[0].rows[i][2]), std::get<double>(r.tables[0].rows[i][2]));
  }
}

TEST(ReportTest, JsonErrorsNameFileAndPath) {
  EXPECT_EQ(FromJson("{", "a.json").status().message(), "a.json: (document): not valid JSON");
  EXPECT_EQ(FromJson("{\"x\": 1}", "a.json").status().message(),
            "a.json: fpconform_report: missing or not 1 (not an fpconform report?)");
  std::string bad = ToJson(Tiny());
  bad.replace(bad.find("[64, "), 5, "[\"s\", ");
  EXPECT_EQ(FromJson(bad, "b.json").status().message(),
            "b.json: tables[0].rows[0][0]: expected int");
  std::string short_row = ToJson(Tiny());
  short_row.replace(short_row.find("[3, \"x\", 1e-300]"), 16, "[3]");
  EXPECT_EQ(FromJson(short_row, "c.json").status().message(),
            "c.json: tables[0].rows[3]: expected an array of 3 cells");
}

TEST(ReportTest, ValidateCatchesTypeMismatches) {
  Report r = Tiny();
  r.tables[0].rows[0][0] = Cell{1.5};
  EXPECT_FALSE(Validate(r).ok());
  r = Tiny();
  r.tables[0].rows[0].pop_back();
  EXPECT_FALSE(Validate(r).ok());
}

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ReportTest, DirectoryIsReplacedAtomically) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("fpconform_report_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ASSERT_TRUE(WriteDirectoryAtomically(dir.string(), {{"a.txt", "one"}, {"b.txt", "two"}}).ok());
  EXPECT_EQ(Slurp(dir / "a.txt"), "one");
  // A failing finalize leaves the old report untouched and no staging directory behind.
  absl::Status s = WriteDirectoryAtomically(
      dir.string(), {{"a.txt", "NEW"}},
      [](const std::string&) { return absl::InternalError("interrupted"); });
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(Slurp(dir / "a.txt"), "one");
  EXPECT_EQ(Slurp(dir / "b.txt"), "two");
  for (const auto& e : fs::directory_iterator(dir.parent_path())) {
    EXPECT_EQ(e.path().filename().string().find(dir.filename().string() + ".partial-"),
              std::string::npos);
  }
  // A successful rewrite replaces the whole directory (b.txt goes away).
  ASSERT_TRUE(WriteDirectoryAtomically(dir.string(), {{"a.txt", "NEW"}},
                                       [](const std::string& staging) {
                                         std::ofstream(staging + "/c.txt") << "made by finalize";
                                         return absl::OkStatus();
                                       })
                  .ok());
  EXPECT_EQ(Slurp(dir / "a.txt"), "NEW");
  EXPECT_FALSE(fs::exists(dir / "b.txt"));
  EXPECT_EQ(Slurp(dir / "c.txt"), "made by finalize");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fpconform::reports
