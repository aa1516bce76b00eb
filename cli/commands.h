// The subcommands of `fpconform`, one file each. Each Add*Command registers its subcommand and
// options on the root CLI11 app; Run*Command runs it after parsing and returns the exit status:
//   0  success
//   1  the input had bad lines (calc)
//   2  usage or I/O error (unknown format, unreadable file, ...)
#ifndef FPCONFORM_CLI_COMMANDS_H_
#define FPCONFORM_CLI_COMMANDS_H_

#include <string>

#include "CLI/CLI.hpp"

namespace fpconform::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadLines = 1;
inline constexpr int kExitUsage = 2;

// The models directory: `flag` when non-empty, else $FPCONFORM_MODELS_DIR when set and
// non-empty, else the source tree's accumulation/models (compiled in).
std::string ResolveModelsDir(const std::string& flag);

struct CalcOptions {
  std::string input;       // Empty or "-": standard input.
  std::string models_dir;  // --models-dir (mdot, msum); see ResolveModelsDir.
};
CLI::App* AddCalcCommand(CLI::App& root, CalcOptions& options);
int RunCalcCommand(const CalcOptions& options);

struct FormatsOptions {
  std::string values;  // Non-empty: list every value of this 8-bit format.
};
CLI::App* AddFormatsCommand(CLI::App& root, FormatsOptions& options);
int RunFormatsCommand(const FormatsOptions& options);

struct ModelsOptions {
  std::string models_dir;        // --models-dir; see ResolveModelsDir.
  std::string show_name;         // `models show NAME`.
  CLI::App* show_app = nullptr;  // Set by AddModelsCommand.
};
CLI::App* AddModelsCommand(CLI::App& root, ModelsOptions& options);
int RunModelsCommand(const ModelsOptions& options);

}  // namespace fpconform::cli

#endif  // FPCONFORM_CLI_COMMANDS_H_
