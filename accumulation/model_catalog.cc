#include "accumulation/model_catalog.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fpconform {
namespace {

// Debian's Abseil has its own absl::string_view; StrCat arguments go through this.
absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Regular *.toml files of `dir`, sorted by file name; false when `dir` cannot be listed.
bool ListTomlFiles(const std::string& dir, std::vector<std::filesystem::path>& files) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return false;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) return false;
    const std::filesystem::path& p = it->path();
    std::error_code type_ec;
    if (p.extension() == ".toml" && std::filesystem::is_regular_file(p, type_ec)) {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end(),
            [](const auto& x, const auto& y) { return x.filename() < y.filename(); });
  return true;
}

bool FileIsEnvelope(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return IsEnvelopeText(text);
}

}  // namespace

bool IsValidModelName(std::string_view name) {
  if (name.empty() || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '_' || ch == '-';
  });
}

std::vector<std::string> ModelCatalog::Names() const {
  std::vector<std::filesystem::path> files;
  std::vector<std::string> names;
  if (!ListTomlFiles(dir_, files)) return names;
  for (const auto& p : files) names.push_back(p.stem().string());
  return names;
}

const absl::StatusOr<Model>& ModelCatalog::Find(std::string_view name) const {
  auto it = cache_.find(name);
  if (it != cache_.end()) return it->second;
  absl::StatusOr<Model> result;
  if (!IsValidModelName(name)) {
    result = absl::InvalidArgumentError(absl::StrCat(
        "bad model name '", Av(name), "' (want letters, digits, '.', '_', '-')"));
  } else {
    const std::string path = absl::StrCat(dir_, "/", Av(name), ".toml");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      result = absl::NotFoundError(absl::StrCat("unknown model '", Av(name), "' in ", dir_,
                                                " (valid: ", absl::StrJoin(Names(), " "), ")"));
    } else {
      result = LoadModelFile(path);
    }
  }
  return cache_.emplace(std::string(name), std::move(result)).first->second;
}

bool ModelCatalog::IsEnvelope(std::string_view name) const {
  if (!IsValidModelName(name)) return false;
  return FileIsEnvelope(absl::StrCat(dir_, "/", Av(name), ".toml"));
}

const absl::StatusOr<Envelope>& ModelCatalog::FindEnvelope(std::string_view name) const {
  auto it = envelopes_.find(name);
  if (it != envelopes_.end()) return it->second;
  absl::StatusOr<Envelope> result;
  const std::string path = absl::StrCat(dir_, "/", Av(name), ".toml");
  std::error_code ec;
  if (!IsValidModelName(name)) {
    result = absl::InvalidArgumentError(absl::StrCat(
        "bad envelope name '", Av(name), "' (want letters, digits, '.', '_', '-')"));
  } else if (!std::filesystem::is_regular_file(path, ec)) {
    result = absl::NotFoundError(absl::StrCat("unknown envelope '", Av(name), "' in ", dir_,
                                              " (valid: ", absl::StrJoin(Names(), " "), ")"));
  } else if (!FileIsEnvelope(path)) {
    result = absl::InvalidArgumentError(
        absl::StrCat(path, ": a model, not an envelope (no top-level envelope = [...])"));
  } else {
    result = LoadEnvelopeFile(path);
    if (result.ok()) {
      for (const std::string& member : result->members) {
        if (IsEnvelope(member)) {
          result = absl::InvalidArgumentError(absl::StrCat(
              path, ": envelope: '", member, "' is an envelope (members must be models)"));
          break;
        }
        const absl::StatusOr<Model>& m = Find(member);
        if (!m.ok()) {
          result = absl::InvalidArgumentError(absl::StrCat(path, ": envelope: '", member,
                                                           "': ", m.status().message()));
          break;
        }
      }
    }
  }
  return envelopes_.emplace(std::string(name), std::move(result)).first->second;
}

absl::StatusOr<std::vector<const Model*>> ModelCatalog::Expand(std::string_view name) const {
  std::vector<const Model*> out;
  if (IsEnvelope(name)) {
    const absl::StatusOr<Envelope>& e = FindEnvelope(name);
    if (!e.ok()) return e.status();
    for (const std::string& member : e->members) out.push_back(&*Find(member));
    return out;
  }
  const absl::StatusOr<Model>& m = Find(name);
  if (!m.ok()) return m.status();
  out.push_back(&*m);
  return out;
}

absl::StatusOr<std::vector<ModelFile>> ModelCatalog::LoadAll() const {
  std::vector<std::filesystem::path> files;
  if (!ListTomlFiles(dir_, files)) {
    return absl::NotFoundError(absl::StrCat("cannot list the models directory '", dir_, "'"));
  }
  std::vector<ModelFile> out;
  out.reserve(files.size());
  for (const auto& p : files) {
    const std::string path = absl::StrCat(dir_, "/", p.filename().string());
    if (FileIsEnvelope(path)) {
      ModelFile f{path, p.stem().string(),
                  absl::FailedPreconditionError(absl::StrCat(path, ": an envelope, not a model")),
                  true, FindEnvelope(p.stem().string())};
      out.push_back(std::move(f));
    } else {
      out.push_back(ModelFile{path, p.stem().string(), LoadModelFile(path)});
    }
  }
  return out;
}

}  // namespace fpconform
