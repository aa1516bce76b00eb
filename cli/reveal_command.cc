// `fpconform reveal MODEL --n N`: the summation tree a model uses for a length-N dot product (or
// sum), as text or Graphviz dot; with --probe, also the tree the FPRev probe recovers from the
// model run as a black box, and whether the two agree (accumulation/summation_tree.h,
// cases/fprev.h).
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "accumulation/model_catalog.h"
#include "accumulation/summation_tree.h"
#include "cases/fprev.h"
#include "cli/commands.h"
#include "formats/str_cat.h"

namespace fpconform::cli {
namespace {

constexpr int kMaxN = 1 << 16;

void Error(const std::string& message) {
  std::fprintf(stderr, "fpconform reveal: %s\n", message.c_str());
}

}  // namespace

CLI::App* AddRevealCommand(CLI::App& root, RevealOptions& options) {
  CLI::App* app = root.add_subcommand(
      "reveal", "Print the summation tree a model uses for a length-N dot product or sum.");
  app->add_option("model", options.model, "Model name (see 'fpconform models')")
      ->required()
      ->type_name("MODEL");
  app->add_option_function<std::string>(
         "--n",
         [&options](const std::string& text) {
           const std::optional<int> v = ParseDecimal<int>(text, 0, kMaxN);
           if (!v) {
             throw CLI::ValidationError(
                 "--n", Cat("'", EscapeText(text, 100), "' is not an integer in 0..", kMaxN,
                            " (decimal digits only)"));
           }
           options.n = *v;
         },
         "Number of terms (products of the dot product), 0..65536")
      ->required()
      ->type_name("N");
  app->add_option("--format", options.format, "Output format: text (default) or dot (Graphviz)")
      ->check(CLI::IsMember({"text", "dot"}))
      ->type_name("FORMAT");
  app->add_option("--models-dir", options.models_dir,
                  "Directory of model files (default: $FPCONFORM_MODELS_DIR, else the source "
                  "tree's accumulation/models)")
      ->type_name("DIR");
  app->add_option_function<std::string>(
         "--seed",
         [&options](const std::string& text) {
           // Strict: -1 or 2^64 is an error, never a wrapped or saturated seed.
           const std::optional<uint64_t> v = ParseDecimal<uint64_t>(text, 0, UINT64_MAX);
           if (!v) {
             throw CLI::ValidationError(
                 "--seed", Cat("'", EscapeText(text, 100), "' is not an integer in 0..",
                               UINT64_MAX, " (decimal digits only)"));
           }
           options.seed = *v;
         },
         "Seed of a random split-K order (as EvalOptions::seed), 0..18446744073709551615; "
         "default 0")
      ->type_name("SEED");
  app->add_flag("--probe", options.probe,
                "Also run the FPRev probe on the model as a black box and compare");
  app->footer(
      "Text format: one line, an S-expression. x3 is term 3 (product a3*b3 of a dot), c the\n"
      "initial accumulator, 0 a partial sum that starts at +0.\n"
      "  (A + B)      an adder step (adder.rounding)\n"
      "  (A +c B)     a combine add (accumulator.rounding): pairwise, blocked, strided, split-K\n"
      "  (A +p B)     a promotion add into chain.format (chain.kind = \"promote\")\n"
      "  fused[x0 x1 x2 x3 A]  one fused group: its products, then the accumulator A\n"
      "  cvt:F(A)     a one-operand rounding into format F (output conversion, pairwise lanes)\n"
      "  {A B C}      (probe output) a node with more than two children: a fused group\n"
      "Dot format: 'digraph \"MODEL\" { ... }', one node per tree node, edges to the children\n"
      "in order; render with e.g. 'dot -Tsvg'.\n"
      "--probe (FPRev, Xie et al., ISSTA 2025): for each pair i, j the model sums units u with\n"
      "x_i = +M, x_j = -M; the result counts the units outside the smallest subtree holding i\n"
      "and j, which rebuilds the tree. It sees neither c, +0, conversions nor child order, so\n"
      "the declared tree is compared in that canonical form. Printed (text format):\n"
      "  declared: <tree>\n  canonical: <declared tree as the probe can see it>\n"
      "  probe: <recovered tree>   (M, u and the number of probes on the next line)\n"
      "  fused group size: <G seen by the probe>\n  match: yes|no\n"
      "With --format dot --probe, the recovered tree is printed as a second digraph.\n"
      "Cost: about n log n (sequential chains: n) model evaluations of n terms each; a few\n"
      "seconds for n = 1000, minutes for n = 10000.\n"
      "Exit status: 0 success (and, with --probe, a match), 1 the probe's tree differs from\n"
      "the declared one, 2 usage error, unknown model, or a model/length this cannot handle.\n"
      "\n"
      "Examples:\n"
      "  $ fpconform reveal cpu-f32-seq --n 3\n"
      "  (((c + x0) + x1) + x2)\n"
      "  $ fpconform reveal nvidia-h100-bf16 --n 18\n"
      "  fused[x16 x17 fused[x0 x1 x2 x3 x4 x5 x6 x7 x8 x9 x10 x11 x12 x13 x14 x15 c]]\n"
      "  fpconform reveal numpy-sum-f32 --n 300 --format dot | dot -Tsvg > tree.svg\n"
      "  fpconform reveal trainium2-bf16 --n 300 --probe");
  return app;
}

int RunRevealCommand(const RevealOptions& options) {
  const ModelCatalog catalog(ResolveModelsDir(options.models_dir));
  const absl::StatusOr<Model>& model = catalog.Find(options.model);
  if (!model.ok()) {
    Error(std::string(model.status().message()));
    return kExitUsage;
  }
  absl::StatusOr<SumTree> declared = BuildSummationTree(*model, options.n, options.seed);
  if (!declared.ok()) {
    Error(std::string(declared.status().message()));
    return kExitUsage;
  }
  const bool dot = options.format == "dot";
  if (!options.probe) {
    std::fputs(dot ? RenderDot(*declared, model->name).c_str()
                   : (RenderText(*declared) + "\n").c_str(),
               stdout);
    return kExitOk;
  }
  absl::StatusOr<ModelProbe> probe = MakeModelProbe(*model, options.n, options.seed);
  if (!probe.ok()) {
    Error(std::string(probe.status().message()));
    return kExitUsage;
  }
  FprevStats stats;
  absl::StatusOr<SumTree> revealed =
      RevealSumTree(probe->oracle, options.n, probe->options, &stats);
  if (!revealed.ok()) {
    Error(std::string(revealed.status().message()));
    return kExitUsage;
  }
  const bool match = SameCanonicalTree(*declared, *revealed);
  if (dot) {
    std::fputs(RenderDot(*declared, model->name).c_str(), stdout);
    std::fputs(RenderDot(*revealed, model->name + " (probe)").c_str(), stdout);
  } else {
    std::printf("declared: %s\n", RenderText(*declared).c_str());
    std::printf("canonical: %s\n", RenderText(Canonical(*declared)).c_str());
    std::printf("probe: %s\n", RenderText(*revealed).c_str());
    std::printf("probe inputs: %s, %lld probes\n", probe->how.c_str(),
                static_cast<long long>(stats.probes));
    std::printf("fused group size: %d (declared tree: %d)\n", FusedGroupSize(*revealed),
                FusedGroupSize(*declared));
    std::printf("match: %s\n", match ? "yes" : "no");
  }
  return match ? kExitOk : kExitBadLines;
}

}  // namespace fpconform::cli
