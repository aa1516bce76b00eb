// The model files of one directory (accumulation/models/ by default; see `fpconform models`):
// each preset is <dir>/<name>.toml. Models are loaded on first use and cached, failures too.
//
// Names: a model name is [A-Za-z0-9._-]+ not starting with '.', so a name can never leave the
// directory. Not thread-safe (one catalog per thread, or lock around it).
//
// Example:
//   ModelCatalog catalog("accumulation/models");
//   const absl::StatusOr<Model>& m = catalog.Find("cpu-f32-seq");
//   m.ok() && m->adder.kind == AdderKind::kFma;
//   catalog.Find("no-such")
//     -> NotFound "unknown model 'no-such' in accumulation/models (valid: ...)"
#ifndef FPCONFORM_ACCUMULATION_MODEL_CATALOG_H_
#define FPCONFORM_ACCUMULATION_MODEL_CATALOG_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "accumulation/model.h"

namespace fpconform {

// One *.toml file of a directory and what parsing it gave.
struct ModelFile {
  std::string path;  // <dir>/<file name>.
  std::string name;  // The file's stem.
  absl::StatusOr<Model> model;
};

class ModelCatalog {
 public:
  explicit ModelCatalog(std::string dir) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }

  // The model `name` (<dir>/<name>.toml), parsed once. Errors: InvalidArgument for a malformed
  // name or a bad file (the message names file, line and field); NotFound for no such file (the
  // message lists the valid names). The reference stays valid as long as the catalog.
  const absl::StatusOr<Model>& Find(std::string_view name) const;

  // Every regular *.toml file of the directory, sorted by file name, each parsed (not cached).
  // NotFound when the directory cannot be listed.
  absl::StatusOr<std::vector<ModelFile>> LoadAll() const;

  // The stems of the *.toml files, sorted (empty when the directory cannot be listed).
  std::vector<std::string> Names() const;

 private:
  std::string dir_;
  mutable std::map<std::string, absl::StatusOr<Model>, std::less<>> cache_;
};

// True for [A-Za-z0-9._-]+ not starting with '.'.
bool IsValidModelName(std::string_view name);

}  // namespace fpconform

#endif  // FPCONFORM_ACCUMULATION_MODEL_CATALOG_H_
