// `fpconform models`: the accumulation-model presets (accumulation/models/*.toml, one line each),
// `fpconform models show NAME`: every parameter of one model with its source, and
// `fpconform models numpy-matmul`: which preset reproduces numpy's `a @ b` for a shape, a dtype and
// a BLAS (accumulation/blas_platform.h, the rule fpconform.blas uses). User text
// (descriptions, values, sources) is printed through EscapeText (base/str_cat.h): control
// characters never reach the terminal raw.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "accumulation/blas_platform.h"
#include "accumulation/model_catalog.h"
#include "base/str_cat.h"
#include "cli/commands.h"
#include "cli/data_dir.h"
#include "formats/format_spec.h"
#include "nlohmann/json.hpp"

namespace fpconform::cli {

namespace {

int List(const ModelCatalog& catalog) {
  absl::StatusOr<std::vector<ModelFile>> files = catalog.LoadAll();
  if (!files.ok()) {
    std::fprintf(stderr, "fpconform models: %s\n", std::string(files.status().message()).c_str());
    return kExitUsage;
  }
  // An envelope file (top-level envelope = [...]) is listed like a model, its description followed by
  // "[envelope: member ...]".
  auto status = [](const ModelFile& f) {
    return f.is_envelope ? f.envelope.status() : f.model.status();
  };
  size_t width = 0;
  for (const ModelFile& f : *files) {
    if (status(f).ok()) width = std::max(width, f.name.size());
  }
  int bad = 0;
  for (const ModelFile& f : *files) {
    if (!status(f).ok()) {
      ++bad;
    } else if (f.is_envelope) {
      std::printf("%-*s  %s [envelope: %s]\n", static_cast<int>(width), f.envelope->name.c_str(),
                  EscapeText(f.envelope->description).c_str(),
                  absl::StrJoin(f.envelope->members, " ").c_str());
    } else {
      std::printf("%-*s  %s\n", static_cast<int>(width), f.model->name.c_str(),
                  EscapeText(f.model->description).c_str());
    }
  }
  for (const ModelFile& f : *files) {
    if (!status(f).ok()) {
      std::fprintf(stderr, "fpconform models: %s\n", std::string(status(f).message()).c_str());
    }
  }
  if (bad > 0) {
    std::fprintf(stderr, "fpconform models: %d of %zu model files in %s are bad\n", bad,
                 files->size(), catalog.dir().c_str());
    return kExitUsage;
  }
  return kExitOk;
}

int Show(const ModelCatalog& catalog, const std::string& name) {
  if (catalog.IsEnvelope(name)) {
    const absl::StatusOr<Envelope>& e = catalog.FindEnvelope(name);
    if (!e.ok()) {
      std::fprintf(stderr, "fpconform models show: %s\n",
                   std::string(e.status().message()).c_str());
      return kExitUsage;
    }
    std::printf("name: %s\n", e->name.c_str());
    std::printf("description: %s\n", EscapeText(e->description).c_str());
    std::printf("file: %s/%s.toml\n", catalog.dir().c_str(), name.c_str());
    std::printf("envelope: %s\n", absl::StrJoin(e->members, " ").c_str());
    std::printf("  source: %s%s\n", EscapeText(e->members_source).c_str(),
                e->members_unconfirmed ? "  [UNCONFIRMED]" : "");
    return kExitOk;
  }
  const absl::StatusOr<Model>& m = catalog.Find(name);
  if (!m.ok()) {
    std::fprintf(stderr, "fpconform models show: %s\n", std::string(m.status().message()).c_str());
    return kExitUsage;
  }
  std::vector<std::string> ops;
  if (m->op_dot) ops.push_back("dot");
  if (m->op_matmul) ops.push_back("matmul");
  if (m->op_sum) ops.push_back("sum");
  std::printf("name: %s\n", m->name.c_str());
  std::printf("description: %s\n", EscapeText(m->description).c_str());
  std::printf("file: %s/%s.toml\n", catalog.dir().c_str(), name.c_str());
  std::printf("operations: %s\n", absl::StrJoin(ops, " ").c_str());
  std::printf("unconfirmed: %s\n",
              m->unconfirmed.empty() ? "none" : absl::StrJoin(m->unconfirmed, " ").c_str());
  std::printf("parameters:\n");
  for (const auto& [key, value] : m->parameters) {
    if (key == "name" || key == "description") continue;
    const bool unconfirmed =
        std::find(m->unconfirmed.begin(), m->unconfirmed.end(), key) != m->unconfirmed.end();
    std::printf("  %s = %s%s\n", key.c_str(), EscapeText(value).c_str(),
                unconfirmed ? "  [UNCONFIRMED]" : "");
    auto it = m->provenance.find(key);
    std::printf("    source: %s\n", it != m->provenance.end() ? EscapeText(it->second).c_str()
                                                             : "(none required)");
  }
  return kExitOk;
}

// Prints the preset and the reason (text, or --json); exit 0 with a preset, 1 without, 2 on bad
// input (an unknown dtype, a negative size, threads < 1).
int NumpyMatmul(const ModelsOptions& o) {
  if (FindFormat(o.dtype) == nullptr) {
    std::fprintf(stderr,
                 "fpconform models numpy-matmul: --dtype '%s': not a format (see 'fpconform "
                 "formats')\n",
                 EscapeText(o.dtype).c_str());
    return kExitUsage;
  }
  const BlasInfo blas{o.blas, o.core, o.threads};
  absl::StatusOr<MatmulPlatform> p = NumpyMatmulPlatform(o.m, o.k, o.n, o.dtype, blas);
  if (!p.ok()) {
    std::fprintf(stderr, "fpconform models numpy-matmul: %s\n",
                 std::string(p.status().message()).c_str());
    return kExitUsage;
  }
  if (o.json) {
    nlohmann::ordered_json j;
    j["m"] = o.m;
    j["k"] = o.k;
    j["n"] = o.n;
    j["dtype"] = o.dtype;
    j["blas"] = {{"name", o.blas}, {"core", o.core}, {"threads", o.threads}};
    j["preset"] = p->preset ? nlohmann::ordered_json(*p->preset) : nlohmann::ordered_json(nullptr);
    j["reason"] = p->reason;
    // Invalid UTF-8 in a name is replaced, never an exception.
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("preset: %s\n", p->preset ? p->preset->c_str() : "none");
    std::printf("reason: %s\n", EscapeText(p->reason).c_str());
  }
  return p->preset ? kExitOk : kExitBadLines;
}

}  // namespace

CLI::App* AddModelsCommand(CLI::App& root, ModelsOptions& options) {
  CLI::App* app = root.add_subcommand(
      "models", "List the accumulation-model presets, or show one model's parameters.");
  app->add_option("--models-dir", options.models_dir, kModelsDirHelp)->type_name("DIR");
  app->footer(
      "Lists one line per model file (<dir>/*.toml, sorted): its name and description.\n"
      "A bad model file does not hide the good ones: they are listed on standard output, and\n"
      "each bad file is reported on standard error as '<file>:<line>: <field>: <problem>';\n"
      "the exit status is then 2.\n"
      "Exit status: 0 success, 2 a bad model file, unknown model or unreadable directory.\n"
      "\n"
      "Examples:\n"
      "  fpconform models\n"
      "  fpconform models show nvidia-h100-bf16\n"
      "  fpconform models --models-dir my-models show my-gpu-bf16\n"
      "  fpconform models numpy-matmul --m 256 --k 1000 --n 256 --dtype float32 \\\n"
      "      --blas scipy-openblas --core SkylakeX --threads 2\n"
      "  FPCONFORM_MODELS_DIR=my-models fpconform models");
  options.show_app = app->add_subcommand(
      "show", "Print every parameter of model NAME with its source; unconfirmed ones are "
              "marked [UNCONFIRMED].");
  options.show_app->add_option("name", options.show_name, "Model name (see 'fpconform models')")
      ->required()
      ->type_name("NAME");
  options.show_app->fallthrough();  // --models-dir may follow NAME.
  options.show_app->footer(
      "Example:\n"
      "  $ fpconform models show nvidia-h100-bf16\n"
      "  name: nvidia-h100-bf16\n"
      "  ...\n"
      "  parameters:\n"
      "    inputs.a = bfloat16\n"
      "      source: PTX ISA mma/wgmma/tcgen05 operand type (bfloat16)\n"
      "    ...");
  options.numpy_matmul_app = app->add_subcommand(
      "numpy-matmul",
      "Name the preset that reproduces numpy's a @ b bit for bit for C-contiguous (M, K) @ (K, N) "
      "arrays of DTYPE under a BLAS, or say why none does.");
  CLI::App* nm = options.numpy_matmul_app;
  nm->add_option("--m", options.m, "Rows of a")->required()->type_name("M");
  nm->add_option("--k", options.k, "Columns of a, rows of b")->required()->type_name("K");
  nm->add_option("--n", options.n, "Columns of b")->required()->type_name("N");
  nm->add_option("--dtype", options.dtype,
                 "numpy dtype of a and b (a format name; presets exist for float32 and float64)")
      ->required()
      ->type_name("DTYPE");
  nm->add_option("--blas", options.blas,
                 "The BLAS numpy calls, as fpconform.blas.numpy_blas()['name'] says: "
                 "scipy-openblas, openblas, reference (other names have no preset)")
      ->required()
      ->type_name("NAME");
  nm->add_option("--core", options.core,
                 "OpenBLAS's kernel choice (openblas_get_corename, numpy_blas()['core']), e.g. "
                 "SkylakeX; default unknown")
      ->type_name("CORE");
  nm->add_option("--threads", options.threads,
                 "OpenBLAS's thread count (OPENBLAS_NUM_THREADS, numpy_blas()['threads'])")
      ->default_val(1)
      ->type_name("T");
  nm->add_flag("--json", options.json,
               "Print {m, k, n, dtype, blas: {name, core, threads}, preset (null: none), reason}");
  nm->footer(
      "The rule is fpconform.blas.numpy_matmul_platform's (accumulation/blas_platform.h; evidence\n"
      "in accumulation/models/SOURCES.md section 4c). In Python, fpconform.blas.numpy_blas() tells\n"
      "which BLAS, core and thread count the running numpy has.\n"
      "Exit status: 0 a preset reproduces it, 1 none does (the reason says why), 2 bad input (an\n"
      "unknown dtype, a negative size, --threads below 1, a missing option).\n"
      "\n"
      "Examples:\n"
      "  $ fpconform models numpy-matmul --m 256 --k 1000 --n 256 --dtype float32 \\\n"
      "      --blas scipy-openblas --core SkylakeX --threads 2\n"
      "  preset: numpy-openblas-skylakex-f32\n"
      "  reason: the level-3 driver with several threads\n"
      "  $ fpconform models numpy-matmul --m 1 --k 1000 --n 256 --dtype float32 --blas reference\n"
      "  preset: none\n"
      "  reason: a vector operand (m or n = 1): numpy calls gemv or dot, whose order is not "
      "modelled\n"
      "  fpconform models numpy-matmul --m 64 --k 64 --n 24 --dtype float64 --blas openblas \\\n"
      "      --core Haswell --json");
  return app;
}

int RunModelsCommand(const ModelsOptions& options) {
  const ModelCatalog catalog(DataPath(DataItem::kModels, options.models_dir));
  if (options.numpy_matmul_app != nullptr && options.numpy_matmul_app->parsed()) {
    return NumpyMatmul(options);
  }
  if (options.show_app != nullptr && options.show_app->parsed()) {
    return Show(catalog, options.show_name);
  }
  return List(catalog);
}

}  // namespace fpconform::cli
