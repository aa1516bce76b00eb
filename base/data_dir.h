// Where the data fpconform ships lies: the one answer the CLI, the Python package, the audit
// library and the GoogleTest helper share. The data comes in three layouts:
//
//   item              source tree (build trees)        installed (share/fpconform/, wheel data/)
//   kModels           accumulation/models/             models/
//   kCompositeModels  composite/models/                composite-models/
//   kAttentionModels  composite/attention_models/      attention-models/
//   kStandardSweep    reports/standard_sweep.toml      standard_sweep.toml
//   kPlotReport       reports/plot_report.py           plot_report.py
//
// Each caller knows its own anchor, the installed data directory it was shipped with, or "" for
// none: the CLI the one beside its executable (ExecutableDataDir: <prefix>/bin/fpconform ->
// <prefix>/share/fpconform), the Python package its data/ folder when it has one (a wheel), a
// program built against an installed fpconform the share/fpconform that the CMake package names
// (FPCONFORM_DEFAULT_DATA_DIR). An installed copy is the whole answer: an item missing there is
// an error the reader reports with the installed path, never a silent fall back to the build
// machine's source tree. Without an anchor (a build tree) the data comes from the source tree this
// library was built from (its path is compiled in).
//
//   ResolveDataPath(DataItem::kModels, flag, ExecutableDataDir(...))
//     flag when non-empty, else $FPCONFORM_MODELS_DIR when set and non-empty, else
//     <installed>/models when installed is non-empty, else <source>/accumulation/models.
#ifndef FPCONFORM_BASE_DATA_DIR_H_
#define FPCONFORM_BASE_DATA_DIR_H_

#include <optional>
#include <string>
#include <string_view>

namespace fpconform {

enum class DataItem { kModels, kCompositeModels, kAttentionModels, kStandardSweep, kPlotReport };
inline constexpr DataItem kDataItems[] = {DataItem::kModels, DataItem::kCompositeModels,
                                          DataItem::kAttentionModels, DataItem::kStandardSweep,
                                          DataItem::kPlotReport};

struct DataLayout {
  std::string_view installed_name;  // Its name in an installed data directory.
  std::string_view source_path;     // Its path relative to the source tree's root.
  std::string_view env;             // The environment variable that overrides it ("" for none).
};

// The table above; the overriding variables are FPCONFORM_MODELS_DIR,
// FPCONFORM_COMPOSITE_MODELS_DIR, FPCONFORM_ATTENTION_MODELS_DIR and FPCONFORM_SWEEP_FILE.
const DataLayout& LayoutOf(DataItem item);

// The item whose installed name is `name` ("models", "standard_sweep.toml", ...); nullopt for none.
std::optional<DataItem> DataItemNamed(std::string_view name);

// <source root>/<source_path>: the copy in the source tree this library was built from.
std::string SourceDataPath(DataItem item);

// <installed>/<installed_name> when `installed` is non-empty (whether or not that path exists),
// else SourceDataPath(item).
std::string DefaultDataPath(DataItem item, std::string_view installed);

// `given` when non-empty, else the item's environment variable when it is set and non-empty,
// else DefaultDataPath(item, installed).
std::string ResolveDataPath(DataItem item, std::string_view given, std::string_view installed);

// The installed data directory of the running executable: <its directory>/<bin_to_data> (symbolic
// links in /proc/self/exe resolved) when <that>/models is a directory, else "" (a binary in a
// build tree).
std::string ExecutableDataDir(std::string_view bin_to_data);

// The item `want` that ships beside `path`, the location of item `of`, in whichever layout `path`
// lies: in the source tree when the directory the source layout puts `want` at exists, else the
// installed sibling. E.g. the accumulation presets an attention model's matmuls name:
//   DataPathBeside("/src/composite/attention_models", kAttentionModels, kModels)
//     -> "/src/accumulation/models"
//   DataPathBeside("/usr/share/fpconform/attention-models", kAttentionModels, kModels)
//     -> "/usr/share/fpconform/models"
// An empty `path` stands for ".".
std::string DataPathBeside(std::string_view path, DataItem of, DataItem want);

}  // namespace fpconform

#endif  // FPCONFORM_BASE_DATA_DIR_H_
