// The report writers and readers on a hand-built report (expected texts written by hand), the
// JSON round trip, the atomic directory write and its refusals (report directories only), and
// RunProgram / InterruptGuard (process.h).
#include "reports/report.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "base/testing/temp_dir.h"
#include "cases/test_seed.h"
#include "reports/process.h"
#include "reports/stats.h"

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

// Rows written by column name: any order of Set calls gives the schema's order; mistakes abort.
TEST(RowBuilderTest, FillsTheSchemasOrder) {
  const Report r = Tiny();
  const Table& t = r.tables[0];
  const std::vector<Cell> row = RowBuilder(t)
                                     .Set("err", 1e-300)
                                     .Set("k", int64_t{3})
                                     .Set("platform", std::string("x"))
                                     .Build();
  EXPECT_EQ(row, t.rows[3]);
  const std::vector<Cell> empty =
      RowBuilder(t).Empty("platform").Set("k", int64_t{1}).Empty("err").Build();
  EXPECT_EQ(empty, (std::vector<Cell>{Cell{int64_t{1}}, Cell{}, Cell{}}));
}

TEST(RowBuilderDeathTest, FailsLoudlyOnSchemaMistakes) {
  const Report r = Tiny();
  const Table& t = r.tables[0];
  EXPECT_DEATH(RowBuilder(t).Set("K", int64_t{1}),
               "table 'tolerance': column 'K': no such column");
  EXPECT_DEATH(RowBuilder(t).Set("k", int64_t{1}).Set("k", int64_t{2}),
               "table 'tolerance': column 'k': given twice");
  EXPECT_DEATH(RowBuilder(t).Set("k", 1.0), "column 'k': value is not of the column's type int");
  EXPECT_DEATH(RowBuilder(t).Set("k", int64_t{1}).Set("err", 2.0).Build(),
               "table 'tolerance': column 'platform': not given");
}

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void Spit(const std::filesystem::path& p, std::string_view text) {
  std::ofstream(p, std::ios::binary) << text;
}

// Names in `dir` that look like staging or set-aside directories.
std::vector<std::string> Leftovers(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.find(".partial-") != std::string::npos || n.find(".old-") != std::string::npos) {
      out.push_back(n);
    }
  }
  return out;
}

TEST(ReportTest, DirectoryIsReplacedAtomically) {
  namespace fs = std::filesystem;
  TempDir tmp("fpconform_report_test");
  const fs::path dir = tmp.path() / "report";
  ASSERT_TRUE(WriteDirectoryAtomically(dir.string(), "tolerance", {{"a.txt", "one"}, {"b.txt", "two"}}).ok());
  EXPECT_EQ(Slurp(dir / "a.txt"), "one");
  // A failing finalize leaves the old report untouched and no staging directory behind.
  absl::Status s = WriteDirectoryAtomically(
      dir.string(), "tolerance", {{"a.txt", "NEW"}},
      [](const std::string&) { return absl::InternalError("interrupted"); });
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(Slurp(dir / "a.txt"), "one");
  EXPECT_EQ(Slurp(dir / "b.txt"), "two");
  for (const auto& e : fs::directory_iterator(dir.parent_path())) {
    EXPECT_EQ(e.path().filename().string().find(dir.filename().string() + ".partial-"),
              std::string::npos);
  }
  // A successful rewrite replaces the whole directory (b.txt goes away).
  ASSERT_TRUE(WriteDirectoryAtomically(dir.string(), "tolerance", {{"a.txt", "NEW"}},
                                       [](const std::string& staging) {
                                         std::ofstream(staging + "/c.txt") << "made by finalize";
                                         return absl::OkStatus();
                                       })
                  .ok());
  EXPECT_EQ(Slurp(dir / "a.txt"), "NEW");
  EXPECT_FALSE(fs::exists(dir / "b.txt"));
  EXPECT_EQ(Slurp(dir / "c.txt"), "made by finalize");
  EXPECT_TRUE(Leftovers(tmp.path()).empty());
}

TEST(ReportTest, ManifestListsEveryFileAndTheKind) {
  TempDir tmp("fpconform_report_test");
  const auto dir = tmp.path() / "r";
  ASSERT_TRUE(WriteDirectoryAtomically(dir.string(), "audit", {{"z.csv", "1"}, {"a.json", "{}"}},
                                       [](const std::string& staging) {
                                         std::ofstream(staging + "/report.html") << "<html>";
                                         return absl::OkStatus();
                                       })
                  .ok());
  EXPECT_EQ(Slurp(dir / kManifestFileName),
            "{\n"
            "  \"fpconform_output\": 1,\n"
            "  \"kind\": \"audit\",\n"
            "  \"files\": [\n"
            "    \"a.json\",\n"
            "    \"report.html\",\n"
            "    \"z.csv\"\n"
            "  ]\n"
            "}\n");
  EXPECT_TRUE(CheckOutputDirectory(dir.string()).ok());
  // Missing parents are created; a trailing slash names the same directory.
  EXPECT_TRUE(WriteDirectoryAtomically((tmp.path() / "p/q/r/").string(), "tolerance", {{"x", ""}}).ok());
  EXPECT_EQ(Slurp(tmp.path() / "p/q/r/x"), "");
  // Bad kinds and file names are refused before anything is written.
  EXPECT_FALSE(WriteDirectoryAtomically((tmp.path() / "k").string(), "Tol", {}).ok());
  EXPECT_FALSE(WriteDirectoryAtomically((tmp.path() / "k").string(), "t", {{"../x", ""}}).ok());
  EXPECT_FALSE(WriteDirectoryAtomically((tmp.path() / "k").string(), "t", {{kManifestFileName, ""}}).ok());
  EXPECT_FALSE(std::filesystem::exists(tmp.path() / "k"));
  EXPECT_TRUE(Leftovers(tmp.path()).empty());
}

// What --out must never destroy: each is refused by CheckOutputDirectory and by
// WriteDirectoryAtomically, left exactly as it was, and no staging directory is left.
TEST(ReportTest, RefusesToReplaceWhatIsNotAReport) {
  namespace fs = std::filesystem;
  TempDir tmp("fpconform_report_test");
  const fs::path t = tmp.path();
  Spit(t / "notes.txt", "my notes");
  fs::create_directory(t / "project");
  Spit(t / "project" / "main.cc", "int main() {}");
  fs::create_directory(t / "real");
  Spit(t / "real" / "keep", "k");
  fs::create_directory_symlink(t / "real", t / "link");
  fs::create_symlink(t / "nowhere", t / "dangling");
  ASSERT_EQ(mkfifo((t / "fifo").c_str(), 0600), 0);
  // A report directory into which the user put their own files.
  ASSERT_TRUE(WriteDirectoryAtomically((t / "rep").string(), "tolerance", {{"report.csv", "x"}}).ok());
  Spit(t / "rep" / "my-notes.md", "mine");
  fs::create_directory(t / "rep" / "plots");
  // A directory whose manifest is not one.
  fs::create_directory(t / "fake");
  Spit(t / "fake" / kManifestFileName, "{\"fpconform_output\": 2, \"kind\": \"x\", \"files\": []}");
  Spit(t / "fake" / "data", "d");
  // A report directory where a listed name is a directory.
  ASSERT_TRUE(WriteDirectoryAtomically((t / "odd").string(), "tolerance", {{"a.csv", "x"}}).ok());
  fs::remove(t / "odd" / "a.csv");
  fs::create_directory(t / "odd" / "a.csv");
  Spit(t / "odd" / "a.csv" / "inner", "i");
  Spit(t / "file", "f");

  const struct {
    std::string path, message;
  } cases[] = {
      {"", "the output directory path is empty"},
      {(t / "notes.txt").string(), "notes.txt: exists and is a regular file, not an fpconform "
                                   "report directory; refusing to replace it"},
      {(t / "project").string(), "project: exists and is not an fpconform report directory (it "
                                 "has no fpconform-manifest.json)"},
      {(t / "link").string(), "link: exists and is a symbolic link, not an fpconform report"},
      {(t / "link/").string(), "link: exists and is a symbolic link, not an fpconform report"},
      {(t / "dangling").string(), "dangling: exists and is a symbolic link (dangling), not"},
      {(t / "fifo").string(), "fifo: exists and is a FIFO, not an fpconform report directory"},
      {(t / "rep").string(), "rep: holds files that are not part of the report: my-notes.md, "
                             "plots/; move them away"},
      {(t / "fake").string(), "fpconform-manifest.json: not a valid fpconform manifest "
                              "(fpconform_output is not 1)"},
      {(t / "odd").string(), "odd: report entries that are not regular files: a.csv (a "
                             "directory)"},
      {(t / "file" / "sub").string(), "sub: cannot be used: Not a directory"},
      {(t / "file" / "a" / "b").string(), "b: cannot be used: Not a directory"},
      {(t / "real" / ".").string(), "names no directory entry that could be replaced"},
      {(t / "real" / "..").string(), "names no directory entry that could be replaced"},
      {"/", "names no directory entry that could be replaced"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path);
    const absl::Status check = CheckOutputDirectory(c.path);
    EXPECT_FALSE(check.ok());
    EXPECT_NE(check.message().find(c.message), std::string::npos) << check.message();
    const absl::Status write = WriteDirectoryAtomically(c.path, "tolerance", {{"report.csv", "NEW"}});
    EXPECT_EQ(write, check);
  }
  EXPECT_EQ(Slurp(t / "notes.txt"), "my notes");
  EXPECT_EQ(Slurp(t / "project" / "main.cc"), "int main() {}");
  EXPECT_TRUE(fs::is_symlink(t / "link"));
  EXPECT_EQ(fs::read_symlink(t / "link"), t / "real");
  EXPECT_EQ(Slurp(t / "real" / "keep"), "k");
  EXPECT_TRUE(fs::is_symlink(t / "dangling"));
  EXPECT_FALSE(fs::exists(t / "nowhere"));
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(t / "fifo")));
  EXPECT_EQ(Slurp(t / "rep" / "report.csv"), "x");
  EXPECT_EQ(Slurp(t / "rep" / "my-notes.md"), "mine");
  EXPECT_EQ(Slurp(t / "fake" / "data"), "d");
  EXPECT_EQ(Slurp(t / "odd" / "a.csv" / "inner"), "i");
  EXPECT_EQ(Slurp(t / "file"), "f");
  EXPECT_TRUE(Leftovers(t).empty());
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(t)) ++entries;
  EXPECT_EQ(entries, 10u);  // Nothing new was made.
}

TEST(ReportTest, AcceptsAnEmptyDirectoryAndAReportMissingSomeFiles) {
  TempDir tmp("fpconform_report_test");
  const auto empty = tmp.path() / "empty";
  std::filesystem::create_directory(empty);
  EXPECT_TRUE(CheckOutputDirectory(empty.string()).ok());
  ASSERT_TRUE(WriteDirectoryAtomically(empty.string(), "tolerance", {{"a", "1"}, {"b", "2"}}).ok());
  std::filesystem::remove(empty / "b");  // A user deleted one listed file: still a report.
  ASSERT_TRUE(WriteDirectoryAtomically(empty.string(), "tolerance", {{"c", "3"}}).ok());
  EXPECT_FALSE(std::filesystem::exists(empty / "a"));
  EXPECT_EQ(Slurp(empty / "c"), "3");
  EXPECT_TRUE(Leftovers(tmp.path()).empty());
}

// The target is checked again just before the install: a change made while the report was being
// produced is not overwritten.
TEST(ReportTest, ChecksTheTargetAgainAtInstallTime) {
  TempDir tmp("fpconform_report_test");
  const std::string dir = (tmp.path() / "r").string();
  ASSERT_TRUE(WriteDirectoryAtomically(dir, "tolerance", {{"a", "old"}}).ok());
  const absl::Status s = WriteDirectoryAtomically(dir, "tolerance", {{"a", "new"}},
                                                  [&dir](const std::string&) {
                                                    Spit(dir + "/late.txt", "user");
                                                    return absl::OkStatus();
                                                  });
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("holds files that are not part of the report: late.txt"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(Slurp(dir + "/a"), "old");
  EXPECT_EQ(Slurp(dir + "/late.txt"), "user");
  EXPECT_TRUE(Leftovers(tmp.path()).empty());
}

// A sibling that happens to carry the name of the set-aside directory is neither clobbered nor
// a reason to fail, and no message ever reports "Success" for a failed call.
TEST(ReportTest, ASiblingNamedLikeTheAsideDirectoryIsLeftAlone) {
  TempDir tmp("fpconform_report_test");
  const std::string dir = (tmp.path() / "r").string();
  ASSERT_TRUE(WriteDirectoryAtomically(dir, "tolerance", {{"a", "old"}}).ok());
  const std::string aside = dir + ".old-" + std::to_string(::getpid());
  std::filesystem::create_directory(aside);
  Spit(aside + "/precious", "p");
  const absl::Status s = WriteDirectoryAtomically(dir, "tolerance", {{"a", "new"}});
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s.message().find("Success"), std::string::npos);
  EXPECT_EQ(Slurp(dir + "/a"), "new");
  EXPECT_EQ(Slurp(aside + "/precious"), "p");
}

TEST(ReportTest, ErrorsCarryTheFailingCallsOwnText) {
  TempDir tmp("fpconform_report_test");
  // The staging directory's name is too long for the file system (NAME_MAX 255).
  const std::string dir = (tmp.path() / std::string(250, 'x')).string();
  const absl::Status s = WriteDirectoryAtomically(dir, "tolerance", {{"a", "1"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(": cannot create: File name too long"), std::string::npos)
      << s.message();
  EXPECT_TRUE(Leftovers(tmp.path()).empty());
}

TEST(ProcessTest, RunProgramReportsHowTheProgramEnded) {
  EXPECT_TRUE(RunProgram({"/bin/sh", "-c", "exit 0"}).ok());
  EXPECT_TRUE(RunProgram({"sh", "-c", "exit 0"}).ok());  // Looked up in PATH.
  const absl::Status three = RunProgram({"/bin/sh", "-c", "exit 3"});
  EXPECT_EQ(three, absl::InternalError("/bin/sh: exited with status 3"));
  const absl::Status killed = RunProgram({"/bin/sh", "-c", "kill -9 $$"});
  EXPECT_EQ(killed, absl::InternalError("/bin/sh: killed by signal 9"));
  const absl::Status missing = RunProgram({"/nonexistent/fpconform-no-such-program"});
  EXPECT_EQ(missing, absl::NotFoundError("/nonexistent/fpconform-no-such-program: cannot run: No "
                                         "such file or directory"));
  EXPECT_EQ(RunProgram({"fpconform-no-such-program-in-path"}),
            absl::NotFoundError("fpconform-no-such-program-in-path: not found in PATH"));
  EXPECT_FALSE(RunProgram({}).ok());
  // Arguments reach the program as they are: no shell in between.
  TempDir tmp("fpconform_report_test");
  const std::string out = (tmp.path() / "arg out").string();
  ASSERT_TRUE(RunProgram({"/bin/sh", "-c", "printf '%s' \"$1\" > \"$2\"", "sh", "a 'b' $c;", out}).ok());
  EXPECT_EQ(Slurp(out), "a 'b' $c;");
}

TEST(ProcessTest, CancellationStopsTheProgramAndItsChildren) {
  TempDir tmp("fpconform_report_test");
  const std::string pid_file = (tmp.path() / "pid").string();
  RunProgramOptions o;
  const auto start = std::chrono::steady_clock::now();
  o.cancelled = [&] {
    return std::chrono::steady_clock::now() - start > std::chrono::milliseconds(300);
  };
  // The shell starts a grandchild (sleep) and waits for it; both must be gone afterwards.
  const absl::Status s =
      RunProgram({"/bin/sh", "-c", "sleep 30 & echo $! > \"$1\"; wait", "sh", pid_file}, o);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(absl::IsCancelled(s)) << s;
  EXPECT_LT(seconds, 10);
  const pid_t grandchild = static_cast<pid_t>(std::atoi(Slurp(pid_file).c_str()));
  ASSERT_GT(grandchild, 0);
  // The grandchild was killed; it is reaped by init, so give it a moment.
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    // Gone, or a zombie waiting for a reaper (in a container PID 1 may not reap it).
    const std::string stat = Slurp("/proc/" + std::to_string(grandchild) + "/stat");
    const size_t paren = stat.rfind(')');
    gone = kill(grandchild, 0) != 0 ||
           (paren != std::string::npos && stat.compare(paren, 3, ") Z") == 0);
    if (!gone) usleep(10000);
  }
  EXPECT_TRUE(gone);
  // A program that ignores SIGTERM is killed after the grace period.
  o.kill_grace_ms = 200;
  const auto start2 = std::chrono::steady_clock::now();
  o.cancelled = [&] {
    return std::chrono::steady_clock::now() - start2 > std::chrono::milliseconds(300);
  };
  EXPECT_TRUE(absl::IsCancelled(RunProgram({"/bin/sh", "-c", "trap '' TERM; exec sleep 30"}, o)));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start2).count(), 10);
}

TEST(ProcessTest, InterruptGuardOnlyRecordsTheSignal) {
  struct sigaction before {};
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &before), 0);
  InterruptGuard::Reset();
  {
    InterruptGuard guard;
    EXPECT_FALSE(InterruptGuard::Interrupted());
    ASSERT_EQ(raise(SIGTERM), 0);  // Would end the test process without the guard.
    EXPECT_EQ(InterruptGuard::Signal(), SIGTERM);
    EXPECT_TRUE(InterruptGuard::Interrupted());
  }
  struct sigaction after {};
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, before.sa_handler);  // Restored.
  InterruptGuard::Reset();
  EXPECT_EQ(InterruptGuard::Signal(), 0);
  // An ignored signal stays ignored.
  struct sigaction ign {}, old {};
  ign.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGINT, &ign, &old), 0);
  {
    InterruptGuard guard;
    struct sigaction now {};
    sigaction(SIGINT, nullptr, &now);
    EXPECT_EQ(now.sa_handler, SIG_IGN);
    raise(SIGINT);
    EXPECT_FALSE(InterruptGuard::Interrupted());
  }
  sigaction(SIGINT, &old, nullptr);
}


// Summarize's selection against the definition (stats.h): the sorted sample's nearest-rank
// values, rank ceil(q n), NaN counted as +inf. Every size up to 300 (so every way the p99 and
// median ranks can meet or sit next to each other, n = 1 and 2 included), with many ties, then
// larger random samples.
Summary SortedSummary(std::vector<double> v) {
  for (double& x : v) {
    if (std::isnan(x)) x = INFINITY;
  }
  std::sort(v.begin(), v.end());
  auto at = [&v](double q) {
    const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
  };
  return {v.back(), at(0.99), at(0.5)};
}

TEST(StatsTest, SummarizeSelectsTheSortedSamplesNearestRanks) {
  EXPECT_EQ(Summarize({}).max, 0);
  const Summary three = Summarize({3, 1, 2});
  EXPECT_EQ(three.max, 3);
  EXPECT_EQ(three.p99, 3);
  EXPECT_EQ(three.median, 2);
  const Summary with_nan = Summarize({1, NAN, 2, -INFINITY});
  EXPECT_EQ(with_nan.max, INFINITY);
  EXPECT_EQ(with_nan.median, 1);
  std::mt19937_64 rng(TestSeed(2026, "StatsTest.SummarizeSelectsTheSortedSamplesNearestRanks"));
  auto sample = [&rng](size_t n, uint64_t distinct) {
    std::vector<double> v(n);
    for (double& x : v) {
      const uint64_t r = rng() % (distinct + 1);
      x = r == distinct ? NAN : static_cast<double>(r) - static_cast<double>(distinct / 2);
    }
    return v;
  };
  for (size_t n = 1; n <= 300; ++n) {
    for (uint64_t distinct : {uint64_t{2}, uint64_t{7}, uint64_t{1} << 40}) {
      const std::vector<double> v = sample(n, distinct);
      const Summary got = Summarize(v), want = SortedSummary(v);
      ASSERT_EQ(got.max, want.max) << "n " << n << ", distinct " << distinct;
      ASSERT_EQ(got.p99, want.p99) << "n " << n << ", distinct " << distinct;
      ASSERT_EQ(got.median, want.median) << "n " << n << ", distinct " << distinct;
    }
  }
  for (size_t n : {size_t{4095}, size_t{4096}, size_t{100001}}) {
    const std::vector<double> v = sample(n, 1000);
    const Summary got = Summarize(v), want = SortedSummary(v);
    EXPECT_EQ(got.max, want.max) << n;
    EXPECT_EQ(got.p99, want.p99) << n;
    EXPECT_EQ(got.median, want.median) << n;
  }
}

}  // namespace
// Found by report_json_fuzzer (reports/testdata/fuzz/report_json_fuzzer/
// regression-negative-zero-roundtrip.json): -0.0 written as "-0" read back as +0.
TEST(ReportJson, NegativeZeroSurvivesTheRoundTrip) {
  Report r;
  Table& t = r.tables.emplace_back();
  t.name = "t";
  t.columns = {FloatColumn("x", "", "a value")};
  t.rows.push_back({Cell{-0.0}});
  const std::string json = ToJson(r);
  absl::StatusOr<Report> back = FromJson(json, "t.json");
  ASSERT_TRUE(back.ok()) << back.status();
  const double v = std::get<double>(back->tables[0].rows[0][0]);
  EXPECT_EQ(v, 0.0);
  EXPECT_TRUE(std::signbit(v));
  EXPECT_EQ(ToJson(*back), json);
}

}  // namespace fpconform::reports
