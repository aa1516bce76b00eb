// libFuzzer harness for report.json (report.h FromJson) and what `fpconform merge` does with it
// (sweep.h MergeReports, then every file of the merged directory: ReportFiles = ToJson,
// ToMarkdown, ToCsv). The input bytes are one report.json.
//
// Checks beyond "no crash, no sanitizer report":
//  * a bad file gives InvalidArgument whose message starts with the file name;
//  * a report FromJson accepts passes Validate and round-trips: FromJson(ToJson(r)) is accepted
//    and gives the same bytes again (report.h);
//  * MergeReports({r}) as given (a shard report must carry "shard i/n"), and of r split into two
//    shards (provenance "shard 1/2" and "2/2", rows alternating): when the first succeeds, the
//    second must too, with the same merged bytes (the split leaves every row's unit/item).
//
//   build-fuzz/reports/report_json_fuzzer reports/testdata/fuzz/report_json_fuzzer
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/testing/fuzz_checks.h"
#include "reports/report.h"
#include "reports/sweep.h"

namespace fpconform::reports {
namespace {

constexpr std::string_view kFile = "fuzz_report.json";

[[noreturn]] void Fail(const std::string& what, std::string_view input) {
  fuzz::FailOnInput("report_json_fuzzer", what, input);
}

// The files `fpconform merge` writes for `merged`; their bytes joined (for comparisons).
std::string MergedFiles(const Report& merged) {
  std::string all;
  for (const auto& [name, content] : ReportFiles(merged)) {
    all += name;
    all += '\n';
    all += content;
  }
  return all;
}

// `r` as shard `index` of 2: provenance "shard" replaced, rows index, index + 2, ... kept.
Report Shard(const Report& r, int index) {
  Report s;
  for (const auto& kv : r.provenance) {
    if (kv.first != "shard") s.provenance.push_back(kv);
  }
  s.provenance.emplace_back("shard", std::to_string(index + 1) + "/2");
  for (const Table& t : r.tables) {
    Table& st = s.tables.emplace_back(t);
    st.rows.clear();
    for (size_t i = static_cast<size_t>(index); i < t.rows.size(); i += 2) {
      st.rows.push_back(t.rows[i]);
    }
  }
  return s;
}

}  // namespace
}  // namespace fpconform::reports

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fpconform::reports;
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  const absl::StatusOr<Report> report = FromJson(input, kFile);
  fpconform::fuzz::CheckFileError("report_json_fuzzer", report.status(), kFile, input);
  if (!report.ok()) return 0;
  if (absl::Status v = Validate(*report); !v.ok()) {
    Fail("FromJson accepted a report that fails Validate: " + v.ToString(), input);
  }
  const std::string json = ToJson(*report);
  const absl::StatusOr<Report> again = FromJson(json, "again.json");
  if (!again.ok()) Fail("FromJson rejects ToJson's output: " + again.status().ToString(), input);
  if (ToJson(*again) != json) Fail("ToJson(FromJson(ToJson(r))) != ToJson(r)", input);
  for (const Table& t : report->tables) (void)ToCsv(t);

  // As `fpconform merge DIR` with this one report.
  const absl::StatusOr<Report> merged = MergeReports({*report}, {std::string(kFile)});
  std::string merged_files;
  if (merged.ok()) merged_files = MergedFiles(*merged);

  // Split into two shards and merged back (given in reverse order: merge must not care).
  const std::vector<Report> shards = {Shard(*report, 1), Shard(*report, 0)};
  const absl::StatusOr<Report> remerged = MergeReports(shards, {"shard2.json", "shard1.json"});
  if (remerged.ok()) {
    const std::string remerged_files = MergedFiles(*remerged);
    if (merged.ok() && remerged_files != merged_files) {
      Fail("merging the report split into two shards differs from merging it whole", input);
    }
  } else if (merged.ok()) {
    Fail("the report merges whole but not split into two shards: " +
             remerged.status().ToString(),
         input);
  }
  return 0;
}
