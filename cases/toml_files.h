// Data files that are one named TOML table each (the composite and attention models): a file is
// read with base/user_file.h's limits, parsed, and its `name` must be the file's stem; a
// directory is every *.toml in it, in name order, and a bad file is an error naming it.
//
// Example (composite/model.cc):
//   absl::StatusOr<CompositeModel> LoadCompositeModel(const std::string& path) {
//     return LoadNamedTomlFile<CompositeModel>(path, &ParseCompositeModel);
//   }
#ifndef FPCONFORM_CASES_TOML_FILES_H_
#define FPCONFORM_CASES_TOML_FILES_H_

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/str_cat.h"
#include "base/user_file.h"

namespace fpconform {

// T has a std::string member `name`; parse(text, path) parses one file.
template <class T>
absl::StatusOr<T> LoadNamedTomlFile(const std::string& path,
                                    absl::StatusOr<T> (*parse)(std::string_view, std::string_view)) {
  absl::StatusOr<std::string> text = ReadUserFile(path, kMaxTextFileBytes, "model file");
  if (!text.ok()) return text.status();
  absl::StatusOr<T> m = parse(*text, path);
  if (!m.ok()) return m.status();
  const std::string stem = std::filesystem::path(path).stem().string();
  if (m->name != stem) {
    return absl::InvalidArgumentError(Cat(path, ": name: \"", EscapeText(m->name, 200),
                                          "\" must equal the file's stem \"", stem, "\""));
  }
  return m;
}

// Every *.toml of `dir`, in name order, each loaded with load(path); `what` names the directory
// in the error when it cannot be read ("models directory").
template <class T>
absl::StatusOr<std::vector<T>> LoadTomlDirectory(const std::string& dir, std::string_view what,
                                                 absl::StatusOr<T> (*load)(const std::string&)) {
  std::error_code ec;
  std::vector<std::string> paths;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".toml") paths.push_back(it->path().string());
  }
  if (ec) return absl::InvalidArgumentError(Cat(dir, ": cannot read the ", what, ": ", ec.message()));
  std::sort(paths.begin(), paths.end());
  std::vector<T> out;
  for (const std::string& p : paths) {
    absl::StatusOr<T> m = load(p);
    if (!m.ok()) return m.status();
    out.push_back(*std::move(m));
  }
  return out;
}

}  // namespace fpconform

#endif  // FPCONFORM_CASES_TOML_FILES_H_
