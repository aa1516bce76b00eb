// The subcommands of `fpconform`, one file each. Each Add*Command registers its subcommand and
// options on the root CLI11 app; Run*Command runs it after parsing and returns the exit status:
//   0  success
//   1  the input had bad lines (calc)
//   2  usage or I/O error (unknown format, unreadable file, ...)
//   130, 143  interrupted by SIGINT / SIGTERM (128 + the signal; tolerance, merge): the old report
//      directory, or none, is left and no staging directory (reports/process.h)
#ifndef FPCONFORM_CLI_COMMANDS_H_
#define FPCONFORM_CLI_COMMANDS_H_

#include <cstdint>
#include <optional>
#include <array>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/data_dir.h"  // DataPath: every command's data defaults.

namespace fpconform::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadLines = 1;
inline constexpr int kExitUsage = 2;

// --progress auto|always|never: auto shows progress when stderr is a terminal and CI is not
// "true" (tolerance_command.cc; shared by the commands with long runs).
bool ShowProgress(const std::string& mode);

struct CalcOptions {
  std::string input;       // Empty or "-": standard input.
  std::string models_dir;  // --models-dir (mdot, msum); see DataPath.
};
CLI::App* AddCalcCommand(CLI::App& root, CalcOptions& options);
int RunCalcCommand(const CalcOptions& options);

struct FormatsOptions {
  std::string values;  // Non-empty: list every value of this 8-bit format.
};
CLI::App* AddFormatsCommand(CLI::App& root, FormatsOptions& options);
int RunFormatsCommand(const FormatsOptions& options);

struct ModelsOptions {
  std::string models_dir;        // --models-dir; see DataPath.
  std::string show_name;         // `models show NAME`.
  CLI::App* show_app = nullptr;  // Set by AddModelsCommand.
  // `models numpy-matmul`: the preset reproducing numpy's (m, k) @ (k, n) under a BLAS
  // (accumulation/blas_platform.h).
  CLI::App* numpy_matmul_app = nullptr;  // Set by AddModelsCommand.
  int64_t m = 0, k = 0, n = 0;           // --m --k --n
  std::string dtype;                     // --dtype
  std::string blas;                      // --blas
  std::string core;                      // --core
  int threads = 1;                       // --threads
  bool json = false;                     // --json
};
CLI::App* AddModelsCommand(CLI::App& root, ModelsOptions& options);
int RunModelsCommand(const ModelsOptions& options);

struct RevealOptions {
  std::string model;       // Model name (see `fpconform models`).
  int n = -1;              // --n: length of the dot / sum (-1: not given).
  std::string format = "text";  // --format text|dot.
  std::string models_dir;  // --models-dir; see DataPath.
  bool probe = false;      // --probe: reveal the tree with FPRev and compare.
  uint64_t seed = 0;       // --seed: split_k order = "random".
  // From a real device (accumulation/reveal_outputs.h).
  bool make_probes = false;  // --make-probes --op --k --dtype --out.
  std::string op = "matmul";
  int k = 256;
  std::string dtype = "bfloat16";
  int tiles = 1;             // --tiles: matmul probe blocks per axis (1..4).
  std::string out;           // --out DIR (must not exist).
  std::string from;          // --from DIR (a probe directory).
  std::string outputs;       // --outputs FILE (the kernel's result).
  std::string outputs_dtype; // --outputs-dtype (for '<V2' .npy files and raw dumps).
};
CLI::App* AddRevealCommand(CLI::App& root, RevealOptions& options);
int RunRevealCommand(const RevealOptions& options);

struct ToleranceOptions {
  std::string sweep;  // --sweep FILE; empty: reports/standard_sweep.toml.
  std::vector<std::string> ops, dtypes, ks, platforms, distributions;  // Comma lists.
  int samples = 0;                // 0: the sweep file's.
  std::optional<uint64_t> seed;   // Unset: the sweep file's.
  int threads = 0;  // 0: all cores.
  std::string out = "fpconform-report";
  bool quick = false;
  std::string shard;  // "i/n".
  std::string models_dir;
  bool no_html = false;
  std::string progress = "auto";
};
CLI::App* AddToleranceCommand(CLI::App& root, ToleranceOptions& options);
int RunToleranceCommand(const ToleranceOptions& options);

struct MergeOptions {
  std::vector<std::string> dirs;
  std::string out;
  bool no_html = false;
};
CLI::App* AddMergeCommand(CLI::App& root, MergeOptions& options);
int RunMergeCommand(const MergeOptions& options);

// `fpconform audit matmul|sum|cast` and `fpconform compare matmul` (audit_command.cc).
// One tensor option: --NAME FILE, --NAME-dtype D, --NAME-shape 64,128.
struct TensorArg {
  explicit TensorArg(std::string n) : name(std::move(n)) {}
  std::string name;  // "a", "out-ref", ...
  std::string file, dtype, shape;
};
struct AuditCommonOptions {
  std::string platform;
  std::string cast_inputs, out_rounding = "rne";
  std::string json, report;
  int max_listed = 100;
  bool strict = false;
  bool no_tolerance = false;
  int tolerance_samples = 200;
  int threads = 0;  // 0: all cores.
  std::string models_dir, sweep, progress = "auto";
};
struct AuditCommandState {
  CLI::App* matmul = nullptr;
  CLI::App* sum = nullptr;
  CLI::App* cast = nullptr;
  CLI::App* elementwise = nullptr;
  // softmax, log_softmax, rmsnorm, layernorm (in that order).
  std::array<CLI::App*, 4> axis_ops{};
  CLI::App* compare_matmul = nullptr;
  CLI::App* compare_elementwise = nullptr;
  std::array<CLI::App*, 4> compare_axis_ops{};  // compare softmax, log_softmax, rmsnorm, layernorm.
  CLI::App* compare_attention = nullptr;
  // audit attention (issue 27).
  CLI::App* attention = nullptr;
  TensorArg q{"q"}, k{"k"}, v{"v"}, mask{"mask"}, lse{"lse"}, lse_ref{"lse-ref"};
  bool causal = false;
  std::string attention_scale;  // --scale of audit attention (text: checked, a double).
  TensorArg a{"a"}, b{"b"}, out{"out"}, c{"c"}, scale_a{"scale-a"}, scale_b{"scale-b"}, x{"x"},
      out_ref{"out-ref"}, weight{"weight"}, bias{"bias"};
  std::string eps;  // rmsnorm, layernorm --eps (text: checked, a double).
  bool transpose_a = false, transpose_b = false;
  int axis = -1;
  std::string to, rounding = "rne";
  std::string fn;  // audit elementwise --fn.
  std::string fit_out;  // audit matmul --fit-out (reports/AUDIT.md "Fit").
  bool no_fit = false;  // audit matmul --no-fit.
  double scale = 1;
  std::string platform_ref;
  AuditCommonOptions common;
};
CLI::App* AddAuditCommand(CLI::App& root, AuditCommandState& state);
CLI::App* AddCompareCommand(CLI::App& root, AuditCommandState& state);
// Runs whichever audit or compare subcommand was parsed.
int RunAuditCommand(const AuditCommandState& state);

}  // namespace fpconform::cli

#endif  // FPCONFORM_CLI_COMMANDS_H_
