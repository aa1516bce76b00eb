// Where the `fpconform` binary finds its data (the model presets, the standard sweep file, the
// report renderer): base/data_dir.h anchored at the binary. An installed binary (cmake --install,
// README.md "Using fpconform from CMake") uses the installed copies beside it; a binary in the
// build tree uses the source tree (compiled in).
//
//   <prefix>/bin/fpconform  ->  <prefix>/share/fpconform/models/, .../standard_sweep.toml,
//                               .../plot_report.py
//   build/cli/fpconform     ->  <source>/accumulation/models/, <source>/reports/...
//
// An option (--models-dir, --sweep) comes first, then the item's environment variable
// ($FPCONFORM_MODELS_DIR, $FPCONFORM_COMPOSITE_MODELS_DIR, $FPCONFORM_ATTENTION_MODELS_DIR,
// $FPCONFORM_SWEEP_FILE: the ones the Python package honours), then those defaults. Every
// command resolves its data through here.
#ifndef FPCONFORM_CLI_DATA_DIR_H_
#define FPCONFORM_CLI_DATA_DIR_H_

#include <string>

#include "base/data_dir.h"

namespace fpconform::cli {

// <exe dir>/<bindir-to-datadir>/share/fpconform when it holds models/; "" otherwise.
std::string InstalledDataDir();

// ResolveDataPath(item, flag, InstalledDataDir()).
std::string DataPath(DataItem item, const std::string& flag = "");

// The help text of every --models-dir option that DataPath(DataItem::kModels, ...) resolves.
inline constexpr const char* kModelsDirHelp =
    "Directory of model files (default: $FPCONFORM_MODELS_DIR, else the installed "
    "share/fpconform/models, else the source tree's accumulation/models)";

}  // namespace fpconform::cli

#endif  // FPCONFORM_CLI_DATA_DIR_H_
