// .safetensors files (safetensors/src/tensor.rs): the JSON header through a strict SAX builder,
// checked as the reference reader checks it; the writer of the reference's bytes. Shared
// internals: tensor_file_internal.h.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "base/output_file.h"
#include "base/str_cat.h"
#include "cases/tensor_file.h"
#include "cases/tensor_file_internal.h"
#include "nlohmann/json.hpp"

namespace fpconform {
namespace tensor_file_internal {
namespace {

using Json = nlohmann::json;

// ---- safetensors header: JSON through a strict SAX builder. ----

// Builds a Json DOM, refusing duplicate keys (the reference's serde_json keeps the last one for
// tensor names and errors for duplicate fields; an ambiguous header is refused here) and nesting
// deeper than serde_json's 128. Records the order of __metadata__ keys (Json objects are sorted).
class StrictJsonBuilder final : public nlohmann::json_sax<Json> {
 public:
  Json root;
  std::vector<std::string> metadata_order;
  std::string error;

  bool null() override { return Put(Json(nullptr)) != nullptr; }
  bool boolean(bool v) override { return Put(Json(v)) != nullptr; }
  bool number_integer(number_integer_t v) override { return Put(Json(v)) != nullptr; }
  bool number_unsigned(number_unsigned_t v) override { return Put(Json(v)) != nullptr; }
  bool number_float(number_float_t v, const string_t&) override { return Put(Json(v)) != nullptr; }
  bool string(string_t& v) override { return Put(Json(std::move(v))) != nullptr; }
  bool binary(binary_t&) override {
    error = "binary values are not JSON";
    return false;
  }
  bool start_object(std::size_t) override { return Open(Json::object()); }
  bool start_array(std::size_t) override { return Open(Json::array()); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t& k) override {
    if (stack_.size() == 1) root_key_ = k;
    if (stack_.size() == 2 && root_key_ == "__metadata__") metadata_order.push_back(k);
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    std::string what = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> the tail.
    if (size_t p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    // position counts the characters read, so the offending byte is at 8 + position - 1.
    error = Cat(Printable(what), " (near byte ", 8 + (position > 0 ? position - 1 : 0),
                " of the file)");
    return false;
  }

 private:
  Json* Put(Json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    auto& obj = parent.get_ref<Json::object_t&>();
    auto [it, inserted] = obj.emplace(key_, std::move(v));
    if (!inserted) {
      error = Cat("key '", PrintableName(key_), "' appears twice",
                  stack_.size() == 1 ? "" : Cat(" in '", PrintableName(root_key_), "'"));
      return nullptr;
    }
    return &it->second;
  }
  bool Open(Json v) {
    if (stack_.size() >= kMaxJsonDepth) {
      error = Cat("nested deeper than ", kMaxJsonDepth, " levels");
      return false;
    }
    Json* p = Put(std::move(v));
    if (p == nullptr) return false;
    stack_.push_back(p);
    return true;
  }
  bool Close() {
    stack_.pop_back();
    return true;
  }
  std::vector<Json*> stack_;
  std::string key_;
  std::string root_key_;
};

struct StDtype {
  std::string_view name;
  int bits;
  std::string_view ours;  // Tensor dtype, empty: recognized but not supported.
};

// Every dtype of the reference (safetensors/src/tensor.rs, enum Dtype and bitsize()).
constexpr StDtype kStDtypes[] = {
    {"BOOL", 8, ""},
    {"F4", 4, ""},
    {"F6_E2M3", 6, ""},
    {"F6_E3M2", 6, ""},
    {"U8", 8, "uint8"},
    {"I8", 8, "int8"},
    {"F8_E5M2", 8, "float8_e5m2"},
    {"F8_E4M3", 8, "float8_e4m3fn"},
    {"F8_E8M0", 8, "float8_e8m0fnu"},
    {"F8_E4M3FNUZ", 8, ""},
    {"F8_E5M2FNUZ", 8, ""},
    {"I16", 16, "int16"},
    {"U16", 16, ""},
    {"F16", 16, "float16"},
    {"BF16", 16, "bfloat16"},
    {"I32", 32, "int32"},
    {"U32", 32, ""},
    {"F32", 32, "float32"},
    {"C64", 64, ""},
    {"F64", 64, "float64"},
    {"I64", 64, "int64"},
    {"U64", 64, ""},
};

const StDtype* FindStDtype(std::string_view name) {
  for (const StDtype& d : kStDtypes) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

struct StEntry {
  std::string name;
  const StDtype* dtype = nullptr;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // data_offsets, relative to the start of the data.
};

struct StHeader {
  uint64_t header_len = 0;
  uint64_t data_start = 0;                                    // 8 + header_len.
  std::vector<StEntry> entries;                               // Sorted by data offsets.
  std::vector<std::pair<std::string, std::string>> metadata;  // In file order.
};

absl::StatusOr<uint64_t> JsonIndex(std::string_view file, const std::string& field, const Json& v) {
  if (!v.is_number_unsigned()) {
    return Invalid(file, Cat("header: ", field, ": expected a non-negative integer, found ",
                             v.dump(-1, ' ', false, Json::error_handler_t::replace)));
  }
  return v.get<uint64_t>();
}

// Reads and checks the header as the reference reader does (safetensors/src/tensor.rs,
// read_metadata and Metadata::validate), against a file of src.size() bytes.
absl::StatusOr<StHeader> ParseStHeader(const Source& src, std::string_view file) {
  const uint64_t size = src.size();
  if (size < 8) {
    return Invalid(file, Cat("byte 0: ", size,
                             " bytes, too short for the 8-byte safetensors"
                             " header length"));
  }
  uint8_t len[8];
  if (absl::Status st = src.Read(0, len, 8); !st.ok()) return st;
  StHeader h;
  h.header_len = LoadLE(len, 8);
  if (h.header_len > kMaxSafetensorsHeaderBytes) {
    return Invalid(file, Cat("byte 0: header length ", h.header_len, " is more than the ",
                             kMaxSafetensorsHeaderBytes, "-byte limit"));
  }
  h.data_start = 8 + h.header_len;
  if (h.data_start > size) {
    return Invalid(
        file, Cat("byte 0: header length ", h.header_len, " runs past the end of the file (", size,
                  " bytes; the header would end at byte ", h.data_start, ")"));
  }
  std::string text;
  try {
    text.resize(static_cast<size_t>(h.header_len));
  } catch (const std::exception&) {
    return absl::ResourceExhaustedError(Cat(file, ": cannot allocate the header"));
  }
  if (absl::Status st = src.Read(8, text.data(), text.size()); !st.ok()) return st;

  // nlohmann's lexer takes a NUL byte for the end of the input (so "{...}\0\0" would parse);
  // JSON allows no raw NUL anywhere, and the reference (serde_json) rejects it.
  if (size_t nul = text.find('\0'); nul != std::string::npos) {
    return Invalid(file, Cat("header: invalid JSON: a NUL byte at byte ", 8 + nul,
                             " (pad the header with spaces)"));
  }
  StrictJsonBuilder json;
  bool ok = false;
  try {
    ok = Json::sax_parse(text, &json, Json::input_format_t::json, /*strict=*/true);
  } catch (const std::exception& e) {
    json.error = Printable(e.what());
    ok = false;
  }
  if (!ok) {
    return Invalid(file, Cat("header: invalid JSON: ",
                             json.error.empty() ? std::string("parse failed") : json.error));
  }
  if (!json.root.is_object()) {
    return Invalid(file, "header: expected a JSON object {\"name\": {\"dtype\": ...}, ...}");
  }
  for (auto& [name, v] : json.root.items()) {
    if (name == "__metadata__") {
      if (v.is_null()) continue;
      if (!v.is_object())
        return Invalid(file, "header: __metadata__: expected an object of strings");
      for (const std::string& k : json.metadata_order) {
        const Json& mv = v.at(k);
        if (!mv.is_string()) {
          return Invalid(file, Cat("header: __metadata__['", PrintableName(k),
                                   "']: expected a string, found ", mv.type_name()));
        }
        h.metadata.emplace_back(k, mv.get<std::string>());
      }
      continue;
    }
    const std::string where = Cat("tensor '", PrintableName(name), "'");
    if (!v.is_object()) return Invalid(file, Cat("header: ", where, ": expected an object"));
    StEntry e;
    e.name = name;
    auto dt = v.find("dtype");
    auto sh = v.find("shape");
    auto off = v.find("data_offsets");
    if (dt == v.end() || sh == v.end() || off == v.end()) {
      return Invalid(file, Cat("header: ", where, ": missing field '",
                               dt == v.end()   ? "dtype"
                               : sh == v.end() ? "shape"
                                               : "data_offsets",
                               "'"));
    }
    if (!dt->is_string())
      return Invalid(file, Cat("header: ", where, ": dtype: expected a string"));
    e.dtype = FindStDtype(dt->get<std::string>());
    if (e.dtype == nullptr) {
      return Invalid(
          file, Cat("header: ", where, ": unknown dtype '", PrintableName(dt->get<std::string>()),
                    "' (supported: F64 F32 F16 BF16 F8_E4M3 F8_E5M2 F8_E8M0 I8 U8 I16"
                    " I32 I64)"));
    }
    if (!sh->is_array()) return Invalid(file, Cat("header: ", where, ": shape: expected an array"));
    if (sh->size() > kMaxRank) {
      return Invalid(file, Cat("header: ", where, ": shape has ", sh->size(),
                               " dimensions, more than the ", kMaxRank, " allowed"));
    }
    for (size_t i = 0; i < sh->size(); ++i) {
      absl::StatusOr<uint64_t> d = JsonIndex(file, Cat(where, ": shape[", i, "]"), (*sh)[i]);
      if (!d.ok()) return d.status();
      if (*d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Invalid(file, Cat("header: ", where, ": shape[", i, "] is larger than 2^63-1"));
      }
      e.shape.push_back(static_cast<int64_t>(*d));
    }
    if (!off->is_array() || off->size() != 2) {
      return Invalid(file, Cat("header: ", where, ": data_offsets: expected [begin, end]"));
    }
    absl::StatusOr<uint64_t> b0 = JsonIndex(file, Cat(where, ": data_offsets[0]"), (*off)[0]);
    if (!b0.ok()) return b0.status();
    absl::StatusOr<uint64_t> b1 = JsonIndex(file, Cat(where, ": data_offsets[1]"), (*off)[1]);
    if (!b1.ok()) return b1.status();
    e.begin = *b0;
    e.end = *b1;
    if (e.end < e.begin) {
      return Invalid(file, Cat("header: ", where, ": data_offsets [", e.begin, ", ", e.end,
                               "] end before they begin"));
    }
    h.entries.push_back(std::move(e));
  }
  std::stable_sort(h.entries.begin(), h.entries.end(), [](const StEntry& a, const StEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expect = 0;
  const StEntry* prev = nullptr;
  for (const StEntry& e : h.entries) {
    const std::string where = Cat("tensor '", PrintableName(e.name), "'");
    if (e.begin != expect) {
      std::string after = prev == nullptr
                              ? std::string("the first tensor starts the data")
                              : Cat("tensor '", PrintableName(prev->name), "' ends there");
      return Invalid(file, Cat("header: ", where, ": data_offsets [", e.begin, ", ", e.end,
                               "] begin at ", e.begin, ", expected ", expect, " (", after,
                               "): ", e.begin > expect ? "a gap" : "an overlap",
                               " in the data at byte ", h.data_start + std::min(e.begin, expect)));
    }
    // Elements x bits, as the reference's checked arithmetic, but in bytes for messages.
    uint64_t n = 1;
    for (int64_t d : e.shape) {
      if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) {
        return Invalid(file, Cat("header: ", where, ": shape ", ShapeText(e.shape),
                                 " overflows 2^64 elements"));
      }
    }
    uint64_t bits;
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(e.dtype->bits), &bits)) {
      return Invalid(file, Cat("header: ", where, ": shape ", ShapeText(e.shape), " x ",
                               e.dtype->bits, " bits of ", e.dtype->name, " overflows"));
    }
    if (bits % 8 != 0) {
      return Invalid(file,
                     Cat("header: ", where, ": shape ", ShapeText(e.shape), " x ", e.dtype->bits,
                         " bits of ", e.dtype->name, " is not a whole number of bytes"));
    }
    const uint64_t want = bits / 8;
    if (e.end - e.begin != want) {
      std::string elem =
          e.dtype->bits % 8 == 0 ? Cat(e.dtype->bits / 8, " bytes") : Cat(e.dtype->bits, " bits");
      return Invalid(file, Cat("header: ", where, ": data_offsets [", e.begin, ", ", e.end, "] is ",
                               e.end - e.begin, " bytes, expected ", want, " (shape ",
                               ShapeText(e.shape), " x ", elem, " of ", e.dtype->name, ")"));
    }
    expect = e.end;
    prev = &e;
  }
  const uint64_t data_len = size - h.data_start;
  if (expect != data_len) {
    return Invalid(
        file,
        Cat("data: the tensors cover ", expect, " bytes (to byte ", h.data_start + expect,
            "), but the file has ", data_len, " bytes of data after the header (to byte ", size,
            "): ", expect < data_len ? "the file is not fully covered" : "the file is truncated"));
  }
  return h;
}

std::string NameList(const std::vector<StEntry>& entries) {
  std::vector<std::string> names;
  for (const StEntry& e : entries) {
    if (names.size() == 20) {
      names.push_back(Cat("... (", entries.size(), " in all)"));
      break;
    }
    names.push_back(Cat("'", PrintableName(e.name), "'"));
  }
  return Join(names, ", ");
}

}  // namespace

absl::StatusOr<Tensor> ReadSafetensors(const Source& src, std::string_view file,
                                       std::string_view tensor_name, const TensorReadOptions& o) {
  absl::StatusOr<const DtypeInfo*> req = RequestedDtype(file, o);
  if (!req.ok()) return req.status();
  absl::StatusOr<StHeader> h = ParseStHeader(src, file);
  if (!h.ok()) return h.status();
  const StEntry* e = nullptr;
  if (tensor_name.empty()) {
    if (h->entries.empty()) return Invalid(file, "the file holds no tensors");
    if (h->entries.size() > 1) {
      return Invalid(file, Cat("the file holds ", h->entries.size(), " tensors: name one as ", file,
                               ":NAME (", NameList(h->entries), ")"));
    }
    e = &h->entries[0];
  } else {
    for (const StEntry& x : h->entries) {
      if (x.name == tensor_name) e = &x;
    }
    if (e == nullptr) {
      return absl::NotFoundError(
          Cat(file, ": no tensor '", PrintableName(tensor_name), "' (the file holds ",
              h->entries.empty() ? std::string("none") : NameList(h->entries), ")"));
    }
  }
  const std::string source = Cat(file, ":", e->name);
  if (e->dtype->ours.empty()) {
    return Invalid(source, Cat("header: dtype ", e->dtype->name,
                               " is not supported (supported: F64 F32 F16 BF16 F8_E4M3 F8_E5M2"
                               " F8_E8M0 I8 U8 I16 I32 I64)"));
  }
  const DtypeInfo* d = FindDtype(e->dtype->ours);
  std::string note;
  if (*req != nullptr && *req != d) {
    if (e->dtype->name == "U8" && (*req)->bytes == 1) {
      note = Cat("dtype U8 holds unsigned integers; their bits are read as ", (*req)->name, " (",
                 DtypeOption(o), ")");
      d = *req;
    } else {
      return Invalid(source, Cat("header: dtype ", e->dtype->name, " is ", d->name, ", but ",
                                 DtypeOption(o), " says ", (*req)->name,
                                 e->dtype->name == "F8_E4M3"
                                     ? " (safetensors F8_E4M3 is OCP float8_e4m3fn, max 448)"
                                     : ""));
    }
  }
  Tensor t;
  t.dtype = std::string(d->name);
  t.format = d->format;
  t.element_bytes = d->bytes;
  t.shape = e->shape;
  t.source = source;
  t.metadata.emplace_back("format", "safetensors");
  t.metadata.emplace_back("tensor", e->name);
  t.metadata.emplace_back("dtype", std::string(e->dtype->name));
  for (const auto& [k, v] : h->metadata) t.metadata.emplace_back(Cat("metadata.", k), v);
  if (!note.empty()) t.notes.push_back(note);
  if (absl::Status st = Allocate(t.data, e->end - e->begin, file); !st.ok()) return st;
  if (absl::Status st = src.Read(h->data_start + e->begin, t.data.data(), t.data.size());
      !st.ok()) {
    return st;
  }
  if (absl::Status st = CheckRequestedShape(t, o); !st.ok()) return st;
  return t;
}

namespace {

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c >> 5) == 6) {
      n = 1, cp = c & 0x1F;
    } else if ((c >> 4) == 14) {
      n = 2, cp = c & 0x0F;
    } else if ((c >> 3) == 30) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 2) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 3 && (cp < 0x10000 || cp > 0x10FFFF))) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

std::string JsonString(std::string_view s) {
  return Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

absl::StatusOr<std::string> SafetensorsHeaderBytes(
    const std::vector<std::pair<std::string, const Tensor*>>& tensors,
    const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::string json = "{";
  bool first = true;
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    for (size_t i = 0; i < metadata.size(); ++i) {
      const auto& [k, v] = metadata[i];
      if (!ValidUtf8(k) || !ValidUtf8(v)) {
        return absl::InvalidArgumentError(Cat("safetensors metadata '", k, "': not valid UTF-8"));
      }
      for (size_t j = 0; j < i; ++j) {
        if (metadata[j].first == k) {
          return absl::InvalidArgumentError(Cat("safetensors metadata: key '", k, "' given twice"));
        }
      }
      json += Cat(i ? "," : "", JsonString(k), ":", JsonString(v));
    }
    json += "}";
    first = false;
  }
  uint64_t offset = 0;
  std::vector<std::string_view> seen;
  for (const auto& [name, t] : tensors) {
    if (t == nullptr) return absl::InvalidArgumentError(Cat("tensor '", name, "': null"));
    const std::string what = Cat("tensor '", name, "'");
    if (!ValidUtf8(name)) return absl::InvalidArgumentError(Cat(what, ": name is not valid UTF-8"));
    if (name == "__metadata__") {
      return absl::InvalidArgumentError(Cat(what, ": the name is reserved for metadata"));
    }
    if (std::find(seen.begin(), seen.end(), std::string_view(name)) != seen.end()) {
      return absl::InvalidArgumentError(Cat(what, ": name given twice"));
    }
    seen.push_back(name);
    if (absl::Status st = CheckWritable(*t, what); !st.ok()) return st;
    const DtypeInfo* d = FindDtype(t->dtype);
    if (d->st_dtype.empty()) {
      return absl::InvalidArgumentError(
          Cat(what, ": dtype ", t->dtype,
              " has no safetensors dtype (safetensors has F64 F32 F16"
              " BF16 F8_E4M3 = float8_e4m3fn F8_E5M2 F8_E8M0 I8 U8 I16 I32 I64); write .npy"));
    }
    json += Cat(first ? "" : ",", JsonString(name), ":{\"dtype\":\"", d->st_dtype, "\",\"shape\":[",
                Join(t->shape, ","), "],\"data_offsets\":[", offset, ",", offset + t->data.size(),
                "]}");
    first = false;
    offset += t->data.size();
  }
  json += "}";
  // The reference writer pads the header with spaces to a multiple of 8.
  json.append((8 - json.size() % 8) % 8, ' ');
  if (json.size() > kMaxSafetensorsHeaderBytes) {
    return absl::InvalidArgumentError(Cat("safetensors header of ", json.size(),
                                          " bytes is over the ", kMaxSafetensorsHeaderBytes,
                                          "-byte limit"));
  }
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[static_cast<size_t>(i)] = static_cast<char>((json.size() >> (8 * i)) & 0xFF);
  return out + json;
}

}  // namespace
}  // namespace tensor_file_internal

using tensor_file_internal::Source;
using tensor_file_internal::ReadSafetensors;
using tensor_file_internal::ParseStHeader;
using tensor_file_internal::StHeader;
using tensor_file_internal::StEntry;
using tensor_file_internal::SafetensorsHeaderBytes;

absl::StatusOr<Tensor> ParseSafetensors(std::string_view bytes, std::string_view file_name,
                                        std::string_view tensor_name,
                                        const TensorReadOptions& options) {
  return ReadSafetensors(Source(bytes), file_name, tensor_name, options);
}

absl::StatusOr<std::vector<std::string>> SafetensorsNames(std::string_view bytes,
                                                          std::string_view file_name) {
  absl::StatusOr<StHeader> h = ParseStHeader(Source(bytes), file_name);
  if (!h.ok()) return h.status();
  std::vector<std::string> names;
  for (const StEntry& e : h->entries) names.push_back(e.name);
  return names;
}

absl::StatusOr<std::string> SafetensorsBytes(
    const std::vector<std::pair<std::string, const Tensor*>>& tensors,
    const std::vector<std::pair<std::string, std::string>>& metadata) {
  absl::StatusOr<std::string> out = SafetensorsHeaderBytes(tensors, metadata);
  if (!out.ok()) return out.status();
  for (const auto& [name, t] : tensors) {
    out->append(reinterpret_cast<const char*>(t->data.data()), t->data.size());
  }
  return out;
}

absl::Status WriteSafetensors(const std::vector<std::pair<std::string, const Tensor*>>& tensors,
                              const std::vector<std::pair<std::string, std::string>>& metadata,
                              const std::string& path) {
  absl::StatusOr<std::string> header = SafetensorsHeaderBytes(tensors, metadata);
  if (!header.ok()) return absl::InvalidArgumentError(Cat(path, ": ", header.status().message()));
  std::vector<std::string_view> pieces = {*header};
  for (const auto& [name, t] : tensors) {
    pieces.emplace_back(reinterpret_cast<const char*>(t->data.data()), t->data.size());
  }
  return WriteFileAtomically(path, pieces);
}

}  // namespace fpconform
