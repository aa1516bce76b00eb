#include "cli/data_dir.h"

#include <string>

// The install's data directory relative to its bin directory (cli/CMakeLists.txt computes it
// from GNUInstallDirs: "../share/fpconform" by default).
#ifndef FPCONFORM_BIN_TO_DATA_DIR
#define FPCONFORM_BIN_TO_DATA_DIR "../share/fpconform"
#endif

namespace fpconform::cli {

std::string InstalledDataDir() {
  static const std::string dir = ExecutableDataDir(FPCONFORM_BIN_TO_DATA_DIR);
  return dir;
}

std::string DataPath(DataItem item, const std::string& flag) {
  return ResolveDataPath(item, flag, InstalledDataDir());
}

}  // namespace fpconform::cli
