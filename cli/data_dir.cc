#include "cli/data_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#ifndef FPCONFORM_MODELS_SOURCE_DIR
#define FPCONFORM_MODELS_SOURCE_DIR "accumulation/models"
#endif
#ifndef FPCONFORM_COMPOSITE_MODELS_SOURCE_DIR
#define FPCONFORM_COMPOSITE_MODELS_SOURCE_DIR "composite/models"
#endif
#ifndef FPCONFORM_ATTENTION_MODELS_SOURCE_DIR
#define FPCONFORM_ATTENTION_MODELS_SOURCE_DIR "composite/attention_models"
#endif
#ifndef FPCONFORM_REPORTS_SOURCE_DIR
#define FPCONFORM_REPORTS_SOURCE_DIR "reports"
#endif
// The install's data directory relative to its bin directory (cli/CMakeLists.txt computes it
// from GNUInstallDirs: "../share/fpconform" by default).
#ifndef FPCONFORM_BIN_TO_DATA_DIR
#define FPCONFORM_BIN_TO_DATA_DIR "../share/fpconform"
#endif

namespace fpconform::cli {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::string InstalledDataDir() {
  static const std::string dir = [] {
    std::string exe(4096, '\0');
    const ssize_t n = readlink("/proc/self/exe", exe.data(), exe.size() - 1);
    if (n <= 0) return std::string();
    exe.resize(static_cast<size_t>(n));
    const size_t slash = exe.rfind('/');
    if (slash == std::string::npos) return std::string();
    const std::string data = exe.substr(0, slash) + "/" + FPCONFORM_BIN_TO_DATA_DIR;
    return IsDirectory(data + "/models") ? data : std::string();
  }();
  return dir;
}

std::string DefaultModelsDir() {
  const std::string installed = InstalledDataDir();
  return installed.empty() ? std::string(FPCONFORM_MODELS_SOURCE_DIR) : installed + "/models";
}

std::string DefaultCompositeModelsDir() {
  const std::string installed = InstalledDataDir();
  return installed.empty() ? std::string(FPCONFORM_COMPOSITE_MODELS_SOURCE_DIR)
                           : installed + "/composite-models";
}

std::string DefaultAttentionModelsDir() {
  const std::string installed = InstalledDataDir();
  return installed.empty() ? std::string(FPCONFORM_ATTENTION_MODELS_SOURCE_DIR)
                           : installed + "/attention-models";
}

std::string DefaultReportsFile(const std::string& name) {
  const std::string installed = InstalledDataDir();
  return (installed.empty() ? std::string(FPCONFORM_REPORTS_SOURCE_DIR) : installed) + "/" + name;
}

std::string ResolveModelsDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("FPCONFORM_MODELS_DIR");
  if (env != nullptr && *env != '\0') return env;
  return DefaultModelsDir();
}

std::string ResolveSweepFile(const std::string& flag) {
  return flag.empty() ? DefaultReportsFile("standard_sweep.toml") : flag;
}

}  // namespace fpconform::cli
