// fpconform: numerical-correctness conformance suite. Thin dispatcher over the subcommands in
// commands.h.
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "base/isa.h"
#include "base/str_cat.h"
#include "cli/commands.h"

#ifndef FPCONFORM_VERSION
#define FPCONFORM_VERSION "unknown"
#endif

namespace {

// A subcommand of commands.h: the apps its Add*Command functions registered on the root (audit
// and compare share one state), and its Run*Command on that state.
struct Subcommand {
  std::vector<CLI::App*> apps;
  std::function<int()> run;
};

// Registers the subcommand(s) add... with one Options state (kept alive by `run`).
template <class Options, class... Add>
Subcommand Register(CLI::App& root, int (*run)(const Options&), Add... add) {
  auto options = std::make_shared<Options>();
  return {{add(root, *options)...}, [run, options] { return run(*options); }};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fpconform::cli;
  CLI::App app{
      "fpconform: bit-exact emulation of number formats (float32, tfloat32, bfloat16, float16,\n"
      "FP8 E4M3/E5M2 and their FNUZ variants, E8M0, int8/int32) and conformance checks.",
      "fpconform"};
  app.set_version_flag("--version", "fpconform " FPCONFORM_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  echo 'mul float8_e4m3fn:sat rne 0x7e 0x40' | fpconform calc     # -> 0x7e ox\n"
      "  fpconform calc --input cases.txt > results.txt\n"
      "  fpconform formats\n"
      "  fpconform formats --values float8_e4m3fn\n"
      "  fpconform models\n"
      "  fpconform models show nvidia-h100-bf16\n"
      "  fpconform reveal nvidia-h100-bf16 --n 40 --probe\n"
      "  fpconform tolerance            # the standard tolerance table -> fpconform-report/\n"
      "  fpconform tolerance --quick --dtypes bfloat16 --out /tmp/r\n"
      "  fpconform audit matmul --a a.npy --a-dtype bfloat16 --b b.npy --b-dtype bfloat16 \\\n"
      "      --out c.npy --platform trainium2-bf16          # is this kernel output legitimate?\n"
      "  echo 'mdot nvidia-h100-bf16 2 0x3f80 0xb300 0x3f80 0x3f80 0x0' | fpconform calc  # -> 0x3f7fffff -\n"
      "\n"
      "Environment: FPCONFORM_ISA=portable|avx2|avx512 picks the fast paths' instruction set\n"
      "(default: the best this CPU has; results are the same bytes on every level).\n"
      "\n"
      "Run 'fpconform <command> --help' for a command's options.");

  // In this order in --help.
  const Subcommand subcommands[] = {
      Register(app, RunCalcCommand, AddCalcCommand),
      Register(app, RunFormatsCommand, AddFormatsCommand),
      Register(app, RunModelsCommand, AddModelsCommand),
      Register(app, RunRevealCommand, AddRevealCommand),
      Register(app, RunToleranceCommand, AddToleranceCommand),
      Register(app, RunMergeCommand, AddMergeCommand),
      Register(app, RunAuditCommand, AddAuditCommand, AddCompareCommand),
  };

  // FPCONFORM_ISA (base/isa.h) is read once, here, before any fast path runs.
  if (absl::Status isa = fpconform::SetIsaFromEnvironment(); !isa.ok()) {
    std::fprintf(stderr, "fpconform: %s\n", std::string(isa.message()).c_str());
    return kExitUsage;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2.
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  // A last resort only: every command reports bad input as a status value; an exception that
  // still escapes is a bug, reported as one (exit 2) rather than an abort (exit 134).
  try {
    for (const Subcommand& s : subcommands) {
      for (const CLI::App* sub : s.apps) {
        if (sub->parsed()) return s.run();
      }
    }
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "fpconform: internal error: %s\n",
                 fpconform::EscapeText(e.what(), 1000).c_str());
    return kExitUsage;
  } catch (...) {
    std::fflush(stdout);
    std::fprintf(stderr, "fpconform: internal error: unknown exception\n");
    return kExitUsage;
  }
  return kExitUsage;
}
