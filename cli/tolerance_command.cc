// `fpconform tolerance`: run a tolerance sweep (reports/sweep.h) and write the report directory;
// `fpconform merge`: combine shard report directories into the report one run gives.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/output_file.h"
#include "base/str_cat.h"
#include "base/user_file.h"
#include "cli/commands.h"
#include "cli/data_dir.h"
#include "cli/shard_auto.h"
#include "cli/strict_number.h"
#include "reports/process.h"
#include "reports/report.h"
#include "reports/sweep.h"

namespace fpconform::cli {
namespace {

constexpr int kMaxThreads = 1024;
constexpr int kMaxShards = 1000000;

std::string JoinNames(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::vector<std::string> SplitList(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& a : args) {
    std::stringstream ss(a);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (!item.empty()) out.push_back(item);
    }
  }
  return out;
}

std::string PythonPath() {
  const char* env = std::getenv("FPCONFORM_PYTHON");
  if (env != nullptr && *env != '\0') return env;
  if (access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

bool Interrupted() { return reports::InterruptGuard::Interrupted(); }

// Renders report.html in the staging directory with reports/plot_report.py (matplotlib); without
// matplotlib the page is written without plots, and without Python at all a minimal page says so.
// An interrupt stops the renderer and returns CancelledError (the report is then not installed).
absl::Status RenderHtml(const std::string& staging, bool plots) {
  const std::string script = DataPath(DataItem::kPlotReport);
  const std::string json = staging + "/report.json", html = staging + "/report.html";
  const std::vector<std::string> base = {PythonPath(), script, json, html};
  reports::RunProgramOptions run;
  run.cancelled = Interrupted;
  if (plots) {
    run.discard_stderr = true;
    const absl::Status s = reports::RunProgram(base, run);
    if (s.ok() || absl::IsCancelled(s)) return s;
    run.discard_stderr = false;
  }
  std::vector<std::string> no_plots = base;
  no_plots.push_back("--no-plots");
  const absl::Status s = reports::RunProgram(no_plots, run);
  if (absl::IsCancelled(s)) return s;
  if (s.ok()) {
    if (plots) std::fprintf(stderr, "fpconform: matplotlib not available: report.html has no plots\n");
    return absl::OkStatus();
  }
  // Through a temporary and a rename: a report.html the renderer left half-written is replaced
  // whole, and a failed write is reported rather than leaving a truncated page.
  if (absl::Status w = WriteFileAtomically(
          html, {"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>fpconform report</title>"
                 "</head><body><p>Python 3 was not found, so this page could not be rendered; the "
                 "report is in <a href=\"report.md\">report.md</a> and report.json.</p></body>"
                 "</html>\n"});
      !w.ok()) {
    return w;
  }
  std::fprintf(stderr, "fpconform: python3 not found: report.html is a placeholder (%s)\n",
               std::string(s.message()).c_str());
  return absl::OkStatus();
}

// The finalize step of both commands: report.html unless --no-html, and a last look for an
// interrupt before the new report is installed.
std::function<absl::Status(const std::string&)> Finalize(bool html) {
  return [html](const std::string& staging) {
    if (html) {
      if (absl::Status s = RenderHtml(staging, true); !s.ok()) return s;
    }
    if (Interrupted()) return absl::CancelledError("interrupted");
    return absl::OkStatus();
  };
}

// The exit status of an interrupted command (128 + signal: 130 SIGINT, 143 SIGTERM), after
// saying what was left.
int ExitInterrupted(const char* command, const std::string& out) {
  std::fprintf(stderr, "\nfpconform %s: interrupted (%s); %s was left as it was\n", command,
               reports::InterruptGuard::Signal() == SIGINT ? "SIGINT" : "SIGTERM",
               out.c_str());
  return 128 + reports::InterruptGuard::Signal();
}

// The last step of tolerance and merge: `report` written to `out` as a report directory
// (reports/report.h, WriteDirectoryAtomically; report.html unless !html). nullopt when it was
// installed, else the exit status, the reason printed: 130/143 when interrupted, else kExitUsage.
std::optional<int> InstallReport(const char* command, const std::string& out,
                                 const reports::Report& report, bool html) {
  const absl::Status w = reports::WriteDirectoryAtomically(out, "tolerance",
                                                           reports::ReportFiles(report),
                                                           Finalize(html));
  if (w.ok()) return std::nullopt;
  if (Interrupted()) return ExitInterrupted(command, out);
  std::fprintf(stderr, "fpconform %s: %s\n", command, std::string(w.message()).c_str());
  return kExitUsage;
}

// --out, checked before any work (reports/report.h, CheckOutputDirectory).
bool OutputOk(const char* command, const std::string& out) {
  if (absl::Status s = reports::CheckOutputDirectory(out); !s.ok()) {
    std::fprintf(stderr, "fpconform %s: --out: %s\n", command, std::string(s.message()).c_str());
    return false;
  }
  return true;
}

std::string Duration(double s) {
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  } else {
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  }
  return buf;
}

}  // namespace

bool ShowProgress(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* ci = std::getenv("CI");
  if (ci != nullptr && std::string(ci) == "true") return false;
  return isatty(STDERR_FILENO) != 0;
}


CLI::App* AddToleranceCommand(CLI::App& root, ToleranceOptions& o) {
  CLI::App* app = root.add_subcommand(
      "tolerance",
      "Run a tolerance sweep and write a report directory (report.md, report.csv, report.json, "
      "report.html). With no arguments: the standard rubric table.");
  app->add_option("--sweep", o.sweep, "Sweep file (default: $FPCONFORM_SWEEP_FILE, else the standard "
                                      "one, reports/standard_sweep.toml)");
  app->add_option("--ops", o.ops, "Ops to run (comma list): matmul, sum, quantize, composite, attention");
  app->add_option("--dtypes", o.dtypes, "Input dtypes (comma list; names of the sweep file's "
                                        "[[dtype]] tables and quantize formats)");
  app->add_option("--k", o.ks, "K values (comma list; each 1..16777216, decimal, distinct), "
                              "replacing the sweep file's");
  app->add_option("--platforms", o.platforms, "Platform models (comma list)");
  app->add_option("--distributions", o.distributions,
                  "Input distributions (comma list): normal, uniform_pm1, uniform_01, "
                  "loguniform, normal_sqrtk");
  // Numbers are parsed strictly (StrictNumber): decimal digits only, range-checked, never
  // wrapped or saturated.
  AddStrictNumber<int>(app, "--samples", 1, 1000000, o.samples,
                       "Samples per row, 1..1000000 (maximum; large K may use fewer, see the sweep file)")
      ->type_name("N");
  AddStrictNumber<uint64_t>(app, "--seed", 0, UINT64_MAX, o.seed,
                            "Seed, 0..18446744073709551615 (default: the sweep file's)")
      ->type_name("SEED");
  AddStrictNumber<int>(app, "--threads", 1, kMaxThreads, o.threads,
                       "Worker threads, 1..1024 (default: all cores, fewer when the sweep's memory estimate "
                       "needs it); results do not depend on it")
      ->type_name("N");
  app->add_option("--out", o.out, "Report directory: created, or replaced atomically when it is "
                                  "an fpconform report directory (see README.md, \"--out\")")
      ->capture_default_str();
  app->add_flag("--quick", o.quick, "Small sweep (K 64, 256, 1024; 24 samples; two "
                                    "distributions): under a minute");
  app->add_option("--shard", o.shard, "Run slice i of n (i/n, 1-based, n <= 1000000), or auto: "
                                      "the Slurm array task or Kubernetes Indexed Job index "
                                      "(README.md); combine with `fpconform merge`")
      ->transform(ShardAutoTransform("tolerance"));
  app->add_option("--models-dir", o.models_dir, kModelsDirHelp)->type_name("DIR");
  app->add_flag("--no-html", o.no_html, "Skip report.html");
  app->add_option("--progress", o.progress, "Progress on stderr: auto (a terminal, not CI), "
                                            "always, never")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app->footer(
      "Examples:\n"
      "  fpconform tolerance                                   # the standard table -> "
      "fpconform-report/\n"
      "  fpconform tolerance --quick --out /tmp/r\n"
      "  fpconform tolerance --dtypes bfloat16 --platforms nvidia-h100-bf16,trainium2-bf16 "
      "--k 1024,4096\n"
      "  fpconform tolerance --ops attention --out /tmp/attn   # attention's rows only\n"
      "  fpconform tolerance --shard 1/4 --out shard1   # ... shards 2..4 elsewhere, then:\n"
      "  fpconform merge shard1 shard2 shard3 shard4 --out report\n"
      "\n"
      "Sweep file format: the comments of reports/standard_sweep.toml. Report files: README.md, "
      "\"Report files\".");
  return app;
}

int RunToleranceCommand(const ToleranceOptions& o) {
  if (!OutputOk("tolerance", o.out)) return kExitUsage;
  reports::InterruptGuard interrupts;
  const std::string sweep_path = DataPath(DataItem::kStandardSweep, o.sweep);
  absl::StatusOr<reports::SweepSpec> spec = reports::LoadSweepSpec(sweep_path);
  if (!spec.ok()) {
    std::fprintf(stderr, "fpconform tolerance: %s\n", std::string(spec.status().message()).c_str());
    return kExitUsage;
  }
  reports::SweepFilter filter;
  filter.ops = SplitList(o.ops);
  filter.dtypes = SplitList(o.dtypes);
  filter.platforms = SplitList(o.platforms);
  filter.distributions = SplitList(o.distributions);
  for (const std::string& k : SplitList(o.ks)) {
    const std::optional<int64_t> v = ParseDecimal<int64_t>(k, 1, reports::kMaxSweepK);
    if (!v) {
      std::fprintf(stderr, "fpconform tolerance: --k: '%s' is not an integer in 1..%lld\n",
                   EscapeText(k, 100).c_str(), static_cast<long long>(reports::kMaxSweepK));
      return kExitUsage;
    }
    filter.ks.push_back(*v);
  }
  filter.samples = o.samples;
  filter.seed = o.seed;
  filter.quick = o.quick;
  absl::StatusOr<reports::SweepSpec> narrowed = reports::ApplyFilter(*spec, filter);
  if (!narrowed.ok()) {
    std::fprintf(stderr, "fpconform tolerance: %s\n",
                 std::string(narrowed.status().message()).c_str());
    return kExitUsage;
  }
  reports::SweepOptions options;
  options.models_dir = DataPath(DataItem::kModels, o.models_dir);
  options.composite_models_dir = DataPath(DataItem::kCompositeModels);
  options.attention_models_dir = DataPath(DataItem::kAttentionModels);
  options.threads = o.threads > 0 ? o.threads
                                  : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Without --threads, fewer workers where the sweep's memory estimate needs it (sweep.h,
  // "Memory"); with --threads, an estimate above the budget is an error before any work.
  options.fit_threads = o.threads == 0;
  int threads_used = options.threads;
  options.threads_used = &threads_used;
  if (!o.shard.empty()) {
    // i/n, both decimal, 1 <= i <= n <= kMaxShards: parsed strictly, so that no value wraps
    // (4294967297/4294967298 is not 1/2).
    const size_t slash = o.shard.find('/');
    const std::string_view text(o.shard);
    const std::optional<int> n =
        slash == std::string::npos ? std::nullopt
                                   : ParseDecimal<int>(text.substr(slash + 1), 1, kMaxShards);
    const std::optional<int> i =
        n ? ParseDecimal<int>(text.substr(0, slash), 1, *n) : std::nullopt;
    if (!i) {
      std::fprintf(stderr,
                   "fpconform tolerance: --shard: expected i/n with 1 <= i <= n <= %d (decimal), "
                   "got '%s'\n",
                   kMaxShards, EscapeText(o.shard, 100).c_str());
      return kExitUsage;
    }
    options.shard_index = *i - 1;
    options.shard_count = *n;
    options.record_shard = true;  // Also for 1/1: the report can be merged.
  }
  const auto start = std::chrono::steady_clock::now();
  if (ShowProgress(o.progress)) {
    options.progress = [start](int64_t done, int64_t total, const std::string& label) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double eta = done > 0 ? elapsed * static_cast<double>(total - done) / done : 0;
      std::fprintf(stderr, "\r\033[K[%lld/%lld] %s  elapsed %s, ETA %s",
                   static_cast<long long>(done), static_cast<long long>(total), label.c_str(),
                   Duration(elapsed).c_str(), Duration(eta).c_str());
      if (done == total) std::fputc('\n', stderr);
      std::fflush(stderr);
    };
  }
  options.cancelled = Interrupted;
  absl::StatusOr<reports::Report> report = reports::RunSweep(*narrowed, options);
  if (!report.ok() && Interrupted()) return ExitInterrupted("tolerance", o.out);
  if (!report.ok()) {
    std::fprintf(stderr, "fpconform tolerance: %s\n", std::string(report.status().message()).c_str());
    return kExitUsage;
  }
  reports::AddSummaries(*report);
  if (const std::optional<int> failed = InstallReport("tolerance", o.out, *report, !o.no_html)) {
    return *failed;
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const reports::Table* tol = report->Find("tolerance");
  const reports::Table* attention = report->Find("attention");
  const size_t attention_rows = attention != nullptr ? attention->rows.size() : 0;
  std::fprintf(stderr, "fpconform tolerance: %zu tolerance rows%s in %s (%d threads) -> %s/\n",
               tol != nullptr ? tol->rows.size() : size_t{0},
               attention_rows > 0 ? (", " + std::to_string(attention_rows) + " attention rows").c_str() : "",
               Duration(elapsed).c_str(), threads_used, o.out.c_str());
  return kExitOk;
}

CLI::App* AddMergeCommand(CLI::App& root, MergeOptions& o) {
  CLI::App* app = root.add_subcommand(
      "merge", "Combine the report directories of `fpconform tolerance --shard i/n` runs into the "
               "report a single run gives (byte-identical CSV and JSON)");
  app->add_option("dirs", o.dirs, "Shard report directories (each holds report.json)")
      ->required();
  app->add_option("--out", o.out, "Merged report directory (the same rules as tolerance --out)")
      ->required();
  app->add_flag("--no-html", o.no_html, "Skip report.html");
  app->footer("Example:\n  fpconform merge shard1 shard2 shard3 --out report");
  return app;
}

int RunMergeCommand(const MergeOptions& o) {
  if (!OutputOk("merge", o.out)) return kExitUsage;
  reports::InterruptGuard interrupts;
  std::vector<reports::Report> shards;
  std::vector<std::string> names;
  for (const std::string& d : o.dirs) {
    const std::string path = d + "/report.json";
    absl::StatusOr<std::string> text = ReadUserFile(path, kMaxReportJsonBytes, "report.json");
    if (!text.ok()) {
      std::fprintf(stderr, "fpconform merge: %s\n", std::string(text.status().message()).c_str());
      return kExitUsage;
    }
    absl::StatusOr<reports::Report> r = reports::FromJson(*text, path);
    if (!r.ok()) {
      std::fprintf(stderr, "fpconform merge: %s\n", std::string(r.status().message()).c_str());
      return kExitUsage;
    }
    shards.push_back(*std::move(r));
    names.push_back(path);
  }
  absl::StatusOr<reports::Report> merged = reports::MergeReports(shards, names);
  if (!merged.ok()) {
    std::fprintf(stderr, "fpconform merge: %s\n", std::string(merged.status().message()).c_str());
    return kExitUsage;
  }
  if (const std::optional<int> failed = InstallReport("merge", o.out, *merged, !o.no_html)) {
    return *failed;
  }
  std::fprintf(stderr, "fpconform merge: %zu shards -> %s/ (%s)\n", shards.size(), o.out.c_str(),
               JoinNames(o.dirs).c_str());
  return kExitOk;
}

}  // namespace fpconform::cli
