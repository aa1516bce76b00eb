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

struct CalcOptions {
  std::string input;  // Empty or "-": standard input.
};
CLI::App* AddCalcCommand(CLI::App& root, CalcOptions& options);
int RunCalcCommand(const CalcOptions& options);

struct FormatsOptions {
  std::string values;  // Non-empty: list every value of this 8-bit format.
};
CLI::App* AddFormatsCommand(CLI::App& root, FormatsOptions& options);
int RunFormatsCommand(const FormatsOptions& options);

}  // namespace fpconform::cli

#endif  // FPCONFORM_CLI_COMMANDS_H_
