// Where the `fpconform` binary finds its data: the model presets, the standard sweep file and the
// report renderer. An installed binary (cmake --install, README.md "Using fpconform from CMake")
// uses the installed copies, found relative to the executable; a binary in the build tree uses
// the source tree (compiled in).
//
//   <prefix>/bin/fpconform  ->  <prefix>/share/fpconform/models/, .../standard_sweep.toml,
//                               .../plot_report.py
//   build/cli/fpconform     ->  <source>/accumulation/models/, <source>/reports/...
//
// The installed directory is used when it exists next to the executable (/proc/self/exe,
// symbolic links resolved), else the source tree's. --models-dir and $FPCONFORM_MODELS_DIR still
// come first for the models (ResolveModelsDir), --sweep for the sweep file (ResolveSweepFile).
// Every command resolves its defaults through here.
#ifndef FPCONFORM_CLI_DATA_DIR_H_
#define FPCONFORM_CLI_DATA_DIR_H_

#include <string>

namespace fpconform::cli {

// <exe dir>/<bindir-to-datadir>/share/fpconform when that directory exists; "" otherwise.
std::string InstalledDataDir();

// The presets: <installed>/models, else the source tree's accumulation/models.
std::string DefaultModelsDir();

// The elementwise (composite) model presets: <installed>/composite-models, else the source
// tree's composite/models.
std::string DefaultCompositeModelsDir();
// The attention models (composite/attention_models/; installed: share/fpconform/attention-models).
std::string DefaultAttentionModelsDir();

// A file of reports/ (standard_sweep.toml, plot_report.py): <installed>/<name>, else the source
// tree's reports/<name>.
std::string DefaultReportsFile(const std::string& name);

// The models directory: `flag` when non-empty, else $FPCONFORM_MODELS_DIR when set and
// non-empty, else DefaultModelsDir().
std::string ResolveModelsDir(const std::string& flag);

// The sweep file: `flag` (--sweep) when non-empty, else DefaultReportsFile("standard_sweep.toml").
std::string ResolveSweepFile(const std::string& flag);

// The help text of every --models-dir option that ResolveModelsDir resolves.
inline constexpr const char* kModelsDirHelp =
    "Directory of model files (default: $FPCONFORM_MODELS_DIR, else the installed "
    "share/fpconform/models, else the source tree's accumulation/models)";

}  // namespace fpconform::cli

#endif  // FPCONFORM_CLI_DATA_DIR_H_
