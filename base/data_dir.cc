#include "base/data_dir.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <string>
#include <system_error>

// The source tree's root (base/CMakeLists.txt); relative to the working directory otherwise.
#ifndef FPCONFORM_SOURCE_ROOT
#define FPCONFORM_SOURCE_ROOT "."
#endif

namespace fpconform {
namespace {

namespace fs = std::filesystem;

// In DataItem's order.
constexpr DataLayout kLayouts[] = {
    {.installed_name = "models", .source_path = "accumulation/models", .env = "FPCONFORM_MODELS_DIR"},
    {.installed_name = "composite-models", .source_path = "composite/models",
     .env = "FPCONFORM_COMPOSITE_MODELS_DIR"},
    {.installed_name = "attention-models", .source_path = "composite/attention_models",
     .env = "FPCONFORM_ATTENTION_MODELS_DIR"},
    {.installed_name = "standard_sweep.toml", .source_path = "reports/standard_sweep.toml",
     .env = "FPCONFORM_SWEEP_FILE"},
    {.installed_name = "plot_report.py", .source_path = "reports/plot_report.py", .env = ""},
};
static_assert(std::size(kLayouts) == std::size(kDataItems));

bool IsModelFolder(DataItem item) {
  return item == DataItem::kModels || item == DataItem::kCompositeModels || item == DataItem::kAttentionModels;
}

// Whether `path` holds the item: a directory for the model folders, a regular file otherwise.
bool Holds(DataItem item, const fs::path& path) {
  std::error_code ec;
  return IsModelFolder(item) ? fs::is_directory(path, ec) : fs::is_regular_file(path, ec);
}

}  // namespace

const DataLayout& LayoutOf(DataItem item) { return kLayouts[static_cast<size_t>(item)]; }

std::optional<DataItem> DataItemNamed(std::string_view name) {
  for (DataItem item : kDataItems) {
    if (LayoutOf(item).installed_name == name) return item;
  }
  return std::nullopt;
}

std::string SourceDataPath(DataItem item) {
  return std::string(FPCONFORM_SOURCE_ROOT) + "/" + std::string(LayoutOf(item).source_path);
}

std::string DefaultDataPath(DataItem item, std::string_view installed) {
  if (installed.empty()) return SourceDataPath(item);
  return std::string(installed) + "/" + std::string(LayoutOf(item).installed_name);
}

std::string ResolveDataPath(DataItem item, std::string_view given, std::string_view installed) {
  if (!given.empty()) return std::string(given);
  const std::string_view env = LayoutOf(item).env;
  if (!env.empty()) {
    const char* value = std::getenv(std::string(env).c_str());
    if (value != nullptr && *value != '\0') return value;
  }
  return DefaultDataPath(item, installed);
}

std::string ExecutableDataDir(std::string_view bin_to_data) {
  std::string exe(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", exe.data(), exe.size() - 1);
  if (n <= 0) return std::string();
  exe.resize(static_cast<size_t>(n));
  const size_t slash = exe.rfind('/');
  if (slash == std::string::npos) return std::string();
  const std::string data = exe.substr(0, slash) + "/" + std::string(bin_to_data);
  return Holds(DataItem::kModels, data + "/models") ? data : std::string();
}

std::string DataPathBeside(std::string_view path, DataItem of, DataItem want) {
  const fs::path dir(path.empty() ? std::string(".") : std::string(path));
  // The source layout: up as many levels as `of` lies below the root, then down to `want`.
  fs::path root = dir;
  for (const auto& part : fs::path(std::string(LayoutOf(of).source_path))) {
    (void)part;
    root /= "..";
  }
  const fs::path source = root / std::string(LayoutOf(want).source_path);
  if (Holds(want, source)) return source.lexically_normal().string();
  return (dir / ".." / std::string(LayoutOf(want).installed_name)).lexically_normal().string();
}

}  // namespace fpconform
