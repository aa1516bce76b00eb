// The model files of one directory (accumulation/models/ by default; see `fpconform models`):
// each preset is <dir>/<name>.toml. Models are loaded on first use and cached, failures too.
//
// Envelopes (MODEL_FORMAT.md, "Envelopes"): a *.toml file of the same directory with top-level
// `envelope = [...]` names a set of models; FindEnvelope loads it and every member, Expand turns
// a name (model or envelope) into the models it stands for.
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
//   catalog.Expand("trainium2-bf16-envelope")  // -> the two trainium2-bf16-<order> models
//   catalog.Expand("cpu-f32-seq")              // -> that one model
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
  absl::StatusOr<Model> model;  // For an envelope file: FailedPrecondition.
  bool is_envelope = false;
  // Envelope files only: the envelope, with every member checked to load (else the error).
  absl::StatusOr<Envelope> envelope = absl::FailedPreconditionError("not an envelope file");
};

class ModelCatalog {
 public:
  explicit ModelCatalog(std::string dir) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }

  // The model `name` (<dir>/<name>.toml), parsed once. Errors: InvalidArgument for a malformed
  // name (echoed escaped, base/str_cat.h EscapeText), a bad file (the message names file,
  // line and field), or a file that is not a regular file or is too large (user_file.h);
  // NotFound for no such file (the message lists the valid names). The reference stays valid as
  // long as the catalog.
  const absl::StatusOr<Model>& Find(std::string_view name) const;

  // The envelope `name` (<dir>/<name>.toml with a top-level `envelope`), parsed once, with every
  // member loaded through Find. Errors: as Find; InvalidArgument when the file is a model, or
  // when a member is unknown or bad (the message names the envelope file and the member).
  const absl::StatusOr<Envelope>& FindEnvelope(std::string_view name) const;

  // The models `name` stands for: the members of envelope `name` (in its order), or the one
  // model `name`. Pointers stay valid as long as the catalog. Errors: as Find / FindEnvelope.
  absl::StatusOr<std::vector<const Model*>> Expand(std::string_view name) const;

  // True when <dir>/<name>.toml is a readable regular file with a top-level `envelope`.
  bool IsEnvelope(std::string_view name) const;

  // Every *.toml entry of the directory, sorted by file name, each read once through
  // ReadUserFile (base/user_file.h) and parsed (not cached). An entry that is not a regular
  // file (a directory, FIFO, device, a symlink to one) or is larger than kMaxTextFileBytes is
  // listed with that error as its `model` ("<dir>/x.toml: not a regular file (a FIFO); ...");
  // nothing blocks or reads without bound. NotFound when the directory cannot be listed.
  absl::StatusOr<std::vector<ModelFile>> LoadAll() const;

  // The stems of the regular *.toml files (symlinks followed), sorted; other entries are
  // skipped (empty when the directory cannot be listed).
  std::vector<std::string> Names() const;

 private:
  std::string dir_;
  mutable std::map<std::string, absl::StatusOr<Model>, std::less<>> cache_;
  mutable std::map<std::string, absl::StatusOr<Envelope>, std::less<>> envelopes_;
};

// True for [A-Za-z0-9._-]+ not starting with '.'.
bool IsValidModelName(std::string_view name);

}  // namespace fpconform

#endif  // FPCONFORM_ACCUMULATION_MODEL_CATALOG_H_
