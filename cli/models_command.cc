// `fpconform models`: the accumulation-model presets (accumulation/models/*.toml, one line each)
// and `fpconform models show NAME`: every parameter of one model with its source. User text
// (descriptions, values, sources) is printed through EscapeText (base/str_cat.h): control
// characters never reach the terminal raw.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "accumulation/model_catalog.h"
#include "base/str_cat.h"
#include "cli/commands.h"
#include "cli/data_dir.h"

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
  return app;
}

int RunModelsCommand(const ModelsOptions& options) {
  const ModelCatalog catalog(ResolveModelsDir(options.models_dir));
  if (options.show_app != nullptr && options.show_app->parsed()) {
    return Show(catalog, options.show_name);
  }
  return List(catalog);
}

}  // namespace fpconform::cli
