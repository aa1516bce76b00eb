// `fpconform reveal MODEL --n N`: the summation tree a model uses for a length-N dot product (or
// sum), as text or Graphviz dot; with --probe, also the tree the FPRev probe recovers from the
// model run as a black box, and whether the two agree (accumulation/summation_tree.h,
// cases/fprev.h). `--make-probes` / `--from DIR --outputs FILE`: the same from a real device's
// outputs (accumulation/reveal_outputs.h).
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "accumulation/model_catalog.h"
#include "accumulation/reveal_outputs.h"
#include "accumulation/summation_tree.h"
#include "base/str_cat.h"
#include "cases/fprev.h"
#include "cli/commands.h"
#include "cli/strict_number.h"

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
      ->type_name("MODEL");
  AddStrictNumber<int>(app, "--n", 0, kMaxN, options.n,
                       "Number of terms (products of the dot product), 0..65536 (required with a MODEL)")
      ->type_name("N");
  app->add_option("--format", options.format,
                  "Output format: text (default), dot (Graphviz), toml (--from: a draft model)")
      ->check(CLI::IsMember({"text", "dot", "toml"}))
      ->type_name("FORMAT");
  app->add_flag("--make-probes", options.make_probes,
                "Write probe tensors for a real kernel (--op, --k, --dtype, --out)");
  app->add_option("--op", options.op, "--make-probes: matmul (A.npy, B.npy) or sum (X.npy)")
      ->check(CLI::IsMember({"matmul", "sum"}))
      ->type_name("OP");
  app->add_option("--k", options.k, "--make-probes: the reduction length K (3..1024)")
      ->check(CLI::Range(3, 1024))
      ->type_name("K");
  app->add_option("--dtype", options.dtype, "--make-probes: input dtype, float32 or bfloat16")
      ->type_name("DTYPE");
  app->add_option("--tiles", options.tiles,
                  "--make-probes --op matmul: repeat the probe block T x T times (1..4; each block "
                  "padded to a multiple of 128 rows) to see whether the tree depends on the "
                  "output tile position")
      ->check(CLI::Range(1, 4))
      ->type_name("T");
  app->add_option("--out", options.out, "--make-probes: the probe directory (must not exist)")
      ->type_name("DIR");
  app->add_option("--from", options.from, "A probe directory written by --make-probes")
      ->type_name("DIR");
  app->add_option("--outputs", options.outputs,
                  "--from: the kernel's result on the probes (.npy, .safetensors[:name])")
      ->type_name("FILE");
  app->add_option("--outputs-dtype", options.outputs_dtype,
                  "--from: dtype of the outputs when the file does not say (bfloat16 '<V2' .npy)")
      ->type_name("DTYPE");
  app->add_option("--models-dir", options.models_dir, kModelsDirHelp)
      ->type_name("DIR");
  // Strict: -1 or 2^64 is an error, never a wrapped or saturated seed.
  AddStrictNumber<uint64_t>(app, "--seed", 0, UINT64_MAX, options.seed,
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
      "  fpconform reveal trainium2-bf16 --n 300 --probe\n"
      "\n"
      "From a real device's outputs (accumulation/reveal_outputs.h has the probe design):\n"
      "  fpconform reveal --make-probes --op matmul --k 256 --dtype bfloat16 --out probes/\n"
      "  # run the kernel on probes/A.npy, probes/B.npy (sum: probes/X.npy, reduce the last\n"
      "  # axis) and save the result as out.npy, then:\n"
      "  fpconform reveal --from probes/ --outputs out.npy [--format text|dot|toml]\n"
      "matmul: A is (K+127) x K, B is K x (K+127), out (K+127) x (K+127); each off-diagonal\n"
      "output of the first K rows and columns is one FPRev pair probe (every pair twice, signs\n"
      "swapped), the last 127 diagonal outputs are calibration, fraction-bit and rounding\n"
      "probes. --tiles T repeats that block (padded to a multiple of 128) T x T times and\n"
      "reveals each block's tree: 'output positions:' says whether they differ, and groups the\n"
      "blocks by tree (rows, columns, tree, behaviour, presets of each group); a block no fixed\n"
      "tree explains is refused alone (exit 1 only when every block is). sum: X has\n"
      "one probe per row (K(K-1)/2 pairs, then the 127). Prints the tree,\n"
      "fused group size, fraction bits, rounding and the presets that match (text), the tree\n"
      "(dot), or a draft model file (toml). Exit status: 0 revealed, 1 outputs no fixed tree\n"
      "explains (non-deterministic or data-dependent order), 2 usage or file errors.");
  return app;
}

namespace {

int RunMakeProbes(const RevealOptions& options) {
  if (options.out.empty()) {
    Error("--make-probes needs --out DIR (a new directory)");
    return kExitUsage;
  }
  absl::StatusOr<ProbeSet> p = MakeProbes({options.op, options.k, options.dtype, options.tiles});
  if (!p.ok()) {
    Error(std::string(p.status().message()));
    return kExitUsage;
  }
  if (absl::Status s = WriteProbes(*p, options.out); !s.ok()) {
    Error(std::string(s.message()));
    return kExitUsage;
  }
  const bool mm = options.op == "matmul";
  std::printf("wrote %s/%s (%lld x %lld)%s and %s/manifest.json\n", options.out.c_str(),
              mm ? "A.npy" : "X.npy", static_cast<long long>(p->a.shape[0]),
              static_cast<long long>(p->a.shape[1]),
              mm ? absl::StrCat(", ", options.out, "/B.npy (", p->b.shape[0], " x ",
                                p->b.shape[1], ")").c_str()
                 : "",
              options.out.c_str());
  std::printf("compute %s in your kernel, save it as out.npy (shape %s), then run\n"
              "  fpconform reveal --from %s --outputs out.npy\n",
              mm ? "out = A @ B" : "out = X.sum(axis=-1)",
              absl::StrCat("[", absl::StrJoin(p->output_shape, ", "), "]").c_str(),
              options.out.c_str());
  return kExitOk;
}

int RunFromOutputs(const RevealOptions& options, const ModelCatalog& catalog) {
  if (options.outputs.empty()) {
    Error("--from needs --outputs FILE (the kernel's result on the probes)");
    return kExitUsage;
  }
  absl::StatusOr<Revealed> r =
      RevealFromOutputs(options.from, options.outputs, options.outputs_dtype, catalog);
  if (!r.ok()) {
    Error(std::string(r.status().message()));
    return r.status().code() == absl::StatusCode::kFailedPrecondition ? kExitBadLines
                                                                      : kExitUsage;
  }
  if (options.format == "dot") {
    std::fputs(RenderDot(r->tree, "revealed").c_str(), stdout);
  } else if (options.format == "toml") {
    std::fputs(RevealedDraftModel(*r).c_str(), stdout);
  } else {
    std::fputs(RevealedText(*r).c_str(), stdout);
  }
  return kExitOk;
}

}  // namespace

int RunRevealCommand(const RevealOptions& options) {
  const ModelCatalog catalog(DataPath(DataItem::kModels, options.models_dir));
  if (options.make_probes) return RunMakeProbes(options);
  if (!options.from.empty()) return RunFromOutputs(options, catalog);
  if (options.model.empty()) {
    Error("give a MODEL and --n N, or --make-probes ..., or --from DIR --outputs FILE");
    return kExitUsage;
  }
  if (options.n < 0) {
    Error("--n N is required with a MODEL");
    return kExitUsage;
  }
  if (options.format == "toml") {
    Error("--format toml is for --from");
    return kExitUsage;
  }
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
