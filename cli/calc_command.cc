// `fpconform calc`: the verifier of the calc protocol (cases/calc_case.h, cli/CALC.md).
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/status/statusor.h"
#include "cases/calc_case.h"
#include <vector>

#include "accumulation/calc_model_ops.h"
#include "cli/commands.h"
#include "oracles/calc_exact_ops.h"

namespace fpconform::cli {

CLI::App* AddCalcCommand(CLI::App& root, CalcOptions& options) {
  CLI::App* app = root.add_subcommand(
      "calc",
      "Evaluate one operation per input line, bit for bit, and print '<result> <flags>' per "
      "line.");
  app->add_option("-i,--input", options.input, "Read cases from FILE (default: standard input)")
      ->type_name("FILE");
  app->add_option("--models-dir", options.models_dir, kModelsDirHelp)
      ->type_name("DIR");
  app->footer(
      "Input lines:\n"
      "  <op> <format>[:opt...] <rounding> <operand>...     op: add sub mul div fma sqrt\n"
      "  cvt <src_format> <dst_format>[:opt...] <rounding> <operand>\n"
      "  dot <in_format> <out_format>[:opt...] <rounding> <n> <a_1>..<a_n> <b_1>..<b_n>\n"
      "  sum <in_format> <out_format>[:opt...] <rounding> <n> <x_1>..<x_n>\n"
      "    (n decimal, 0..1048576; exact dot/sum rounded once into out_format)\n"
      "  mdot <model> <n> <a_1>..<a_n> <b_1>..<b_n> <c>\n"
      "  msum <model> <n> <x_1>..<x_n>\n"
      "    (under an accumulation model, see 'fpconform models': inputs in the model's input\n"
      "    formats before its conversion, c in its accumulator format (0x0 for none), the\n"
      "    result in its output format; no rounding token; flags always '-')\n"
      "  options: sat ftz daz tbr nan=ieee|canonical|cuda|x86\n"
      "  rounding: rne rna rtz rup rdn rto sr<k> (k = 1..32; the k random bits follow as\n"
      "            one more hex operand)\n"
      "  operands: 0x + hex bit pattern of the source format; '#' starts a comment\n"
      "Output lines: 0x<hex result, zero-padded to the format width> <flags in vzoux order or ->,\n"
      "  or 'error' for a bad line (the reason goes to stderr as 'line N: ...').\n"
      "Exit status: 0 all lines ran, 1 some lines were bad, 2 usage or I/O error.\n"
      "\n"
      "Examples:\n"
      "  $ printf 'add float32 rne 0x3f800000 0x33800000\\n' | fpconform calc\n"
      "  0x3f800000 x\n"
      "  $ printf 'mul float8_e4m3fn:sat rne 0x7e 0x40\\ncvt float32 int8 rne 0x43000000\\n' "
      "| fpconform calc\n"
      "  0x7e ox\n"
      "  0x80 v\n"
      "  $ printf 'add float32 sr8 0x3f800000 0x33800000 0x80\\n' | fpconform calc\n"
      "  0x3f800001 x\n"
      "  $ printf 'dot float32 float32 rne 2 0x3f800000 0x33800000 0x3f800000 0x3f800000\\n' "
      "| fpconform calc\n"
      "  0x3f800000 x\n"
      "  $ printf 'mdot nvidia-h100-bf16 2 0x3f80 0xb300 0x3f80 0x3f80 0x0\\n' | fpconform calc\n"
      "  0x3f7fffff -\n"
      "See cli/CALC.md for the full protocol.");
  return app;
}

int RunCalcCommand(const CalcOptions& options) {
  std::FILE* in = stdin;
  const bool from_file = !options.input.empty() && options.input != "-";
  if (from_file) {
    in = std::fopen(options.input.c_str(), "rb");
    if (in == nullptr) {
      std::fprintf(stderr, "fpconform calc: cannot open '%s': %s\n", options.input.c_str(),
                   std::strerror(errno));
      return kExitUsage;
    }
  }
  const ModelCalcOps model_ops(DataPath(DataItem::kModels, options.models_dir));
  std::vector<CalcOp> extra_ops(ExactCalcOps().begin(), ExactCalcOps().end());
  extra_ops.insert(extra_ops.end(), model_ops.ops().begin(), model_ops.ops().end());
  absl::StatusOr<CalcStats> stats = RunCalcStream(in, stdout, stderr, extra_ops);
  if (from_file) std::fclose(in);
  if (!stats.ok()) {
    std::fprintf(stderr, "fpconform calc: %s\n", std::string(stats.status().message()).c_str());
    return kExitUsage;
  }
  if (stats->errors > 0) {
    std::fprintf(stderr, "fpconform calc: %lld of %lld case lines were bad\n",
                 static_cast<long long>(stats->errors), static_cast<long long>(stats->cases));
    return kExitBadLines;
  }
  return kExitOk;
}

}  // namespace fpconform::cli
