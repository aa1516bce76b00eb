#include "accumulation/model_catalog.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/str_cat.h"
#include "base/user_file.h"

namespace fpconform {
namespace {

// Debian's Abseil has its own absl::string_view; StrCat arguments go through this.
absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// A name echoed in a message is escaped (EscapeText) and cut to this many bytes.
constexpr size_t kMaxNameInMessage = 64;

// The *.toml entries of `dir` that are (or link to) regular files, or with all_types every
// *.toml entry whatever its type; sorted by file name. False when `dir` cannot be listed.
// Nothing here opens an entry, so a FIFO or a device in the directory cannot block or be read.
bool ListTomlFiles(const std::string& dir, std::vector<std::filesystem::path>& files,
                   bool all_types = false) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return false;
  std::vector<std::pair<std::filesystem::path, bool>> found;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) return false;
    const std::filesystem::path& p = it->path();
    if (p.extension() != ".toml") continue;
    std::error_code type_ec;
    found.emplace_back(p, std::filesystem::is_regular_file(p, type_ec));
  }
  std::sort(found.begin(), found.end(),
            [](const auto& x, const auto& y) { return x.first.filename() < y.first.filename(); });
  for (const auto& [p, is_regular] : found) {
    if (all_types || is_regular) files.push_back(p);
  }
  return true;
}

// The text of a model or envelope file, through ReadUserFile (regular files only, size limit
// before reading).
absl::StatusOr<std::string> ReadModelText(const std::string& path) {
  return ReadUserFile(path, kMaxTextFileBytes, "model file");
}

bool FileIsEnvelope(const std::string& path) {
  absl::StatusOr<std::string> text = ReadModelText(path);
  return text.ok() && IsEnvelopeText(*text);
}

// True when `path` names something (a file of any type, or a symlink, even dangling).
bool Exists(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::symlink_status(path, ec);
  return !ec && std::filesystem::exists(st);
}

// The valid names for an "unknown model" message, escaped.
std::string ValidList(const ModelCatalog& catalog) {
  std::vector<std::string> names = catalog.Names();
  for (std::string& n : names) n = EscapeText(n);
  return absl::StrJoin(names, " ");
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
        "bad model name '", EscapeText(name, kMaxNameInMessage),
        "' (want letters, digits, '.', '_', '-')"));
  } else {
    const std::string path = absl::StrCat(dir_, "/", Av(name), ".toml");
    if (!Exists(path)) {
      result = absl::NotFoundError(absl::StrCat("unknown model '", Av(name), "' in ", dir_,
                                                " (valid: ", ValidList(*this), ")"));
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
  absl::StatusOr<std::string> text;
  if (!IsValidModelName(name)) {
    result = absl::InvalidArgumentError(absl::StrCat(
        "bad envelope name '", EscapeText(name, kMaxNameInMessage),
        "' (want letters, digits, '.', '_', '-')"));
  } else if (!Exists(path)) {
    result = absl::NotFoundError(absl::StrCat("unknown envelope '", Av(name), "' in ", dir_,
                                              " (valid: ", ValidList(*this), ")"));
  } else if (text = ReadModelText(path); !text.ok()) {
    result = text.status();
  } else if (!IsEnvelopeText(*text)) {
    result = absl::InvalidArgumentError(
        absl::StrCat(path, ": a model, not an envelope (no top-level envelope = [...])"));
  } else {
    result = ParseEnvelope(*text, path);
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
  if (!ListTomlFiles(dir_, files, /*all_types=*/true)) {
    return absl::NotFoundError(absl::StrCat("cannot list the models directory '", dir_, "'"));
  }
  std::vector<ModelFile> out;
  out.reserve(files.size());
  for (const auto& p : files) {
    const std::string path = absl::StrCat(dir_, "/", p.filename().string());
    // Read once; a directory, FIFO, device or oversized file is reported, never opened for a
    // blocking read.
    absl::StatusOr<std::string> text = ReadModelText(path);
    if (!text.ok()) {
      out.push_back(ModelFile{path, p.stem().string(), text.status()});
    } else if (IsEnvelopeText(*text)) {
      ModelFile f{path, p.stem().string(),
                  absl::FailedPreconditionError(absl::StrCat(path, ": an envelope, not a model")),
                  true, FindEnvelope(p.stem().string())};
      out.push_back(std::move(f));
    } else {
      out.push_back(ModelFile{path, p.stem().string(), ParseModel(*text, path)});
    }
  }
  return out;
}

}  // namespace fpconform
