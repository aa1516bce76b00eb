#include "cases/tensor_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <string>

#include "formats/output_file.h"
#include "formats/str_cat.h"
#include "formats/user_file.h"
#include "nlohmann/json.hpp"

namespace fpconform {
namespace {

using Json = nlohmann::json;

// ---- Limits. ----
// numpy 2.x NPY_MAXDIMS is 64; the same cap is applied to safetensors shapes (the reference has
// none, but no kernel output has more dimensions, and the cap bounds shape arithmetic).
constexpr size_t kMaxRank = 64;
// A .npy header longer than this is refused (numpy's own default max_header_size is 10,000;
// headers of the dtypes read here are under 2 KB even at rank 64).
constexpr uint64_t kMaxNpyHeaderBytes = 1 << 20;
// safetensors reference: MAX_HEADER_SIZE = 100_000_000 (safetensors/src/tensor.rs).
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;
// serde_json's recursion limit, which the reference reader inherits.
constexpr size_t kMaxJsonDepth = 128;
// MakeTensor refuses more than this (readers are bounded by the file size instead).
constexpr uint64_t kMaxMadeTensorBytes = uint64_t{1} << 40;

constexpr std::string_view kNpyMagic = "\x93NUMPY";

// ---- Dtypes. ----

struct DtypeInfo {
  std::string_view name;
  int bytes;
  const FormatSpec* format;    // nullptr for int16/uint16/uint32/int64.
  std::string_view npy_descr;  // What numpy writes for an array of this dtype.
  std::string_view st_dtype;   // safetensors dtype, empty when it has none.
  bool is_float;
};

// What numpy writes for each table row (np.save of a numpy or ml_dtypes array: ml_dtypes
// registers float8_e5m2 with type char 'f', every other 1-byte float as void) and its
// safetensors dtype. Rows not listed: 1-byte floats '<V1', tfloat32 '|V4' (NKI shows it as V4),
// no safetensors dtype.
struct KnownRow {
  std::string_view name, npy_descr, st_dtype;
};
constexpr KnownRow kKnownRows[] = {
    {"float64", "<f8", "F64"},
    {"float32", "<f4", "F32"},
    {"float16", "<f2", "F16"},
    {"bfloat16", "<V2", "BF16"},
    {"float8_e5m2", "<f1", "F8_E5M2"},
    {"float8_e4m3fn", "<V1", "F8_E4M3"},
    {"float8_e8m0fnu", "<V1", "F8_E8M0"},
    {"int8", "|i1", "I8"},
    {"uint8", "|u1", "U8"},
    {"int32", "<i4", "I32"},
};

const std::vector<DtypeInfo>& Dtypes() {
  static const std::vector<DtypeInfo>* const kDtypes = [] {
    auto* v = new std::vector<DtypeInfo>;
    for (const FormatSpec& f : AllFormats()) {
      DtypeInfo d{f.name, f.width / 8, &f, "", "", IsFloat(f)};
      for (const KnownRow& k : kKnownRows) {
        if (k.name == f.name) d.npy_descr = k.npy_descr, d.st_dtype = k.st_dtype;
      }
      if (d.npy_descr.empty() && IsFloat(f)) {
        d.npy_descr = f.width == 8 ? "<V1" : f.width == 16 ? "|V2" : f.width == 32 ? "|V4" : "|V8";
      }
      if (d.npy_descr.empty()) continue;  // An integer row this file does not know.
      v->push_back(d);
    }
    v->push_back({"int16", 2, nullptr, "<i2", "I16", false});
    v->push_back({"uint16", 2, nullptr, "<u2", "", false});
    v->push_back({"uint32", 4, nullptr, "<u4", "", false});
    v->push_back({"int64", 8, nullptr, "<i8", "I64", false});
    return v;
  }();
  return *kDtypes;
}

const DtypeInfo* FindDtype(std::string_view name) {
  for (const DtypeInfo& d : Dtypes()) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::string DtypeNames(int bytes = 0, bool floats_only = false) {
  std::vector<std::string_view> names;
  for (const DtypeInfo& d : Dtypes()) {
    if ((bytes == 0 || d.bytes == bytes) && (!floats_only || d.is_float)) names.push_back(d.name);
  }
  return Join(names, ", ");
}

std::string DtypeOption(const TensorReadOptions& o) {
  return o.option_name.empty() ? std::string("--dtype") : o.option_name;
}
std::string ShapeOption(const TensorReadOptions& o) {
  std::string n = DtypeOption(o);
  if (n.size() >= 5 && n.compare(n.size() - 5, 5, "dtype") == 0) {
    return n.substr(0, n.size() - 5) + "shape";
  }
  return "--shape";
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return Cat("[", Join(shape, ", "), "]");
}

// Bytes of the input echoed in a message: printable ASCII kept, everything else as \xNN, so that
// a message is always valid UTF-8 (reports embed them in JSON).
std::string Printable(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7F) {
      out.push_back(ch);
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// A name from a JSON header (valid UTF-8, checked by the parser) in a message: only control
// characters are escaped, so that a name cannot move the cursor of the user's terminal.
std::string PrintableName(std::string_view s) {
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) {
      out += Printable(std::string_view(&ch, 1));
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

absl::Status Invalid(std::string_view file, const std::string& msg) {
  return absl::InvalidArgumentError(Cat(file, ": ", msg));
}

// The requested dtype (options.dtype) as a table row, or nullptr when none was given.
absl::StatusOr<const DtypeInfo*> RequestedDtype(std::string_view file, const TensorReadOptions& o) {
  if (o.dtype.empty()) return nullptr;
  const DtypeInfo* d = FindDtype(o.dtype);
  if (d == nullptr) {
    return Invalid(file, Cat(DtypeOption(o), " ", o.dtype, ": unknown dtype (expected an ml_dtypes",
                             " name: ", DtypeNames(), ")"));
  }
  return d;
}

// product(shape) x bytes, refusing negative dimensions, too many dimensions and overflow of
// int64 (every dimension and every partial product stays below 2^63).
absl::StatusOr<uint64_t> ShapeBytes(std::string_view file, std::string_view field,
                                    const std::vector<int64_t>& shape, int bytes) {
  if (shape.size() > kMaxRank) {
    return Invalid(
        file, Cat(field, ": ", shape.size(), " dimensions, more than the ", kMaxRank, " allowed"));
  }
  uint64_t n = static_cast<uint64_t>(bytes);
  bool zero = false;
  for (int64_t d : shape) {
    if (d < 0) return Invalid(file, Cat(field, ": dimension ", d, " is negative"));
    if (d == 0) zero = true;
  }
  if (zero) return uint64_t{0};
  for (int64_t d : shape) {
    uint64_t r;
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &r) ||
        r > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Invalid(file, Cat(field, ": shape ", ShapeText(shape), " x ", bytes,
                               " bytes overflows 2^63 bytes"));
    }
    n = r;
  }
  return n;
}

// ---- Data transforms. ----

void SwapBytes(std::vector<uint8_t>& data, int bytes) {
  if (bytes <= 1) return;
  for (size_t i = 0; i + static_cast<size_t>(bytes) <= data.size();
       i += static_cast<size_t>(bytes)) {
    std::reverse(data.begin() + static_cast<std::ptrdiff_t>(i),
                 data.begin() + static_cast<std::ptrdiff_t>(i) + bytes);
  }
}

// dst (cols x rows) = transpose of src (rows x cols), elements of B bytes, in cache-sized tiles.
template <int B>
void TransposeTiled(const uint8_t* src, uint8_t* dst, uint64_t rows, uint64_t cols) {
  constexpr uint64_t kTile = 32;
  for (uint64_t i0 = 0; i0 < rows; i0 += kTile) {
    const uint64_t i1 = std::min(rows, i0 + kTile);
    for (uint64_t j0 = 0; j0 < cols; j0 += kTile) {
      const uint64_t j1 = std::min(cols, j0 + kTile);
      for (uint64_t i = i0; i < i1; ++i) {
        for (uint64_t j = j0; j < j1; ++j) {
          std::memcpy(dst + (j * rows + i) * B, src + (i * cols + j) * B, B);
        }
      }
    }
  }
}

// Fortran order to C order. An F-order array of shape (d0, d1, ...) is, in memory, a C-order
// matrix [r][i0] with r the F-order index over (d1, ...); transposing it gives d0 blocks, each an
// F-order array of shape (d1, ...). Repeat per axis, alternating between the two buffers; the
// result is in `data` on return (`data` and one scratch buffer: one extra copy at most).
template <int B>
void FortranToCImpl(std::vector<uint8_t>& data, const std::vector<int64_t>& shape) {
  std::vector<uint8_t> other(data.size());
  std::vector<uint8_t>* x = &data;
  std::vector<uint8_t>* y = &other;
  const uint64_t total = data.size() / B;
  uint64_t batch = 1;
  for (size_t k = 0; k + 1 < shape.size(); ++k) {
    const uint64_t dk = static_cast<uint64_t>(shape[k]);
    const uint64_t block = total / batch;  // Elements per block: dk x rest.
    const uint64_t rest = block / dk;
    for (uint64_t b = 0; b < batch; ++b) {
      TransposeTiled<B>(x->data() + b * block * B, y->data() + b * block * B, rest, dk);
    }
    std::swap(x, y);
    batch *= dk;
  }
  if (x != &data) data.swap(other);
}

void FortranToC(std::vector<uint8_t>& data, const std::vector<int64_t>& shape, int bytes) {
  switch (bytes) {
    case 1:
      FortranToCImpl<1>(data, shape);
      break;
    case 2:
      FortranToCImpl<2>(data, shape);
      break;
    case 4:
      FortranToCImpl<4>(data, shape);
      break;
    default:
      FortranToCImpl<8>(data, shape);
      break;
  }
}

// Allocates n bytes for tensor data; an allocation failure is an error, not a crash.
absl::Status Allocate(std::vector<uint8_t>& data, uint64_t n, std::string_view file) {
  try {
    data.resize(static_cast<size_t>(n));
  } catch (const std::exception&) {
    return absl::ResourceExhaustedError(Cat(file, ": cannot allocate ", n, " bytes for the data"));
  }
  return absl::OkStatus();
}

// Reads [offset, offset + n) of the input: from memory or from a file.
class Source {
 public:
  explicit Source(std::string_view bytes) : bytes_(bytes) {}
  explicit Source(const UserFile* file) : file_(file) {}
  uint64_t size() const { return file_ ? file_->size() : bytes_.size(); }
  absl::Status Read(uint64_t offset, void* dst, size_t n) const {
    if (n == 0) return absl::OkStatus();
    if (file_) return file_->ReadAt(offset, dst, n);
    std::memcpy(dst, bytes_.data() + offset, n);  // Callers check the range first.
    return absl::OkStatus();
  }

 private:
  std::string_view bytes_;
  const UserFile* file_ = nullptr;
};

uint64_t LoadLE(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

// ---- .npy header: a Python dict literal. ----

struct PyValue {
  enum Kind { kString, kBool, kTuple, kList, kInt, kOther } kind = kOther;
  std::string text;           // kString
  bool flag = false;          // kBool
  std::vector<int64_t> ints;  // kTuple (of non-negative ints)
};

class PyLiteralParser {
 public:
  explicit PyLiteralParser(std::string_view s) : s_(s) {}

  // Parses the header dict; on error returns a message naming the byte offset in the header.
  absl::Status ParseDict(std::vector<std::pair<std::string, PyValue>>& out) {
    Skip();
    if (!Eat('{')) return Err("expected '{' (a Python dict literal)");
    while (true) {
      Skip();
      if (Eat('}')) break;
      PyValue key;
      if (absl::Status st = ParseString(key.text); !st.ok()) return st;
      Skip();
      if (!Eat(':')) return Err("expected ':' after a key");
      Skip();
      PyValue v;
      if (absl::Status st = ParseValue(v); !st.ok()) return st;
      out.emplace_back(std::move(key.text), std::move(v));
      Skip();
      if (Eat(',')) continue;
      if (Eat('}')) break;
      return Err("expected ',' or '}'");
    }
    Skip();
    if (pos_ != s_.size()) return Err("unexpected text after the dict");
    return absl::OkStatus();
  }

 private:
  absl::Status Err(std::string_view what) const {
    return absl::InvalidArgumentError(Cat("byte ", pos_, " of the header text: ", what));
  }
  void Skip() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool EatWord(std::string_view w) {
    if (s_.substr(pos_, w.size()) == w) {
      pos_ += w.size();
      return true;
    }
    return false;
  }
  absl::Status ParseString(std::string& out) {
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) {
      return Err("expected a quoted string");
    }
    const char q = s_[pos_++];
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\') return Err("escapes in strings are not supported");
      if (s_[pos_] == '\n') return Err("newline inside a string");
      out.push_back(s_[pos_++]);
    }
    if (!Eat(q)) return Err("unterminated string");
    return absl::OkStatus();
  }
  absl::Status ParseInt(int64_t& out) {
    if (pos_ < s_.size() && s_[pos_] == '-') return Err("negative number");
    const size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      v = v * 10 + static_cast<uint64_t>(s_[pos_] - '0');
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Err("integer larger than 2^63-1");
      }
      ++pos_;
    }
    if (pos_ == start) return Err("expected a non-negative integer");
    if (pos_ < s_.size() && (s_[pos_] == 'L' || s_[pos_] == 'l')) ++pos_;  // Python 2 long.
    out = static_cast<int64_t>(v);
    return absl::OkStatus();
  }
  absl::Status ParseValue(PyValue& v) {
    if (pos_ >= s_.size()) return Err("expected a value");
    const char c = s_[pos_];
    if (c == '\'' || c == '"') {
      v.kind = PyValue::kString;
      return ParseString(v.text);
    }
    if (EatWord("True")) {
      v.kind = PyValue::kBool;
      v.flag = true;
      return absl::OkStatus();
    }
    if (EatWord("False")) {
      v.kind = PyValue::kBool;
      v.flag = false;
      return absl::OkStatus();
    }
    if (c == '[') {
      v.kind = PyValue::kList;
      return Err("a list (a structured dtype) is not supported");
    }
    if (c == '-') return Err("negative number");
    if (c >= '0' && c <= '9') {
      v.kind = PyValue::kInt;
      int64_t ignored;
      return ParseInt(ignored);
    }
    if (c == '(') {
      ++pos_;
      v.kind = PyValue::kTuple;
      size_t items = 0;
      bool trailing_comma = false;
      while (true) {
        Skip();
        if (Eat(')')) break;
        if (v.ints.size() >= kMaxRank) {
          return Err(Cat("a shape of more than ", kMaxRank, " dimensions"));
        }
        int64_t d;
        if (absl::Status st = ParseInt(d); !st.ok()) return st;
        v.ints.push_back(d);
        ++items;
        Skip();
        trailing_comma = Eat(',');
        if (trailing_comma) continue;
        Skip();
        if (Eat(')')) break;
        return Err("expected ',' or ')' in a tuple");
      }
      // "(3)" is the integer 3 in Python, not a tuple.
      if (items == 1 && !trailing_comma) {
        v.kind = PyValue::kInt;
      }
      return absl::OkStatus();
    }
    return Err(Cat("unexpected character '", Printable(std::string_view(&c, 1)), "'"));
  }

  std::string_view s_;
  size_t pos_ = 0;
};

struct NpyHeader {
  int major = 0, minor = 0;
  uint64_t data_offset = 0;
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
};

// Parses the magic, version, header length and header dict. `prefix` holds at least the
// first min(size, 12) bytes; `read_header` fetches the header text.
absl::StatusOr<NpyHeader> ParseNpyPrefix(const Source& src, std::string_view file) {
  const uint64_t size = src.size();
  uint8_t pre[12] = {};
  const size_t have = static_cast<size_t>(std::min<uint64_t>(size, sizeof(pre)));
  if (absl::Status st = src.Read(0, pre, have); !st.ok()) return st;
  const std::string_view magic(reinterpret_cast<const char*>(pre), std::min<size_t>(have, 6));
  if (magic != kNpyMagic) {
    std::string found;
    for (size_t i = 0; i < std::min<size_t>(have, 6); ++i) {
      static constexpr char kHex[] = "0123456789abcdef";
      found += Cat(i ? " " : "", kHex[pre[i] >> 4], kHex[pre[i] & 15]);
    }
    return Invalid(file,
                   Cat("byte 0: expected the .npy magic \\x93NUMPY (93 4e 55 4d 50 59), found ",
                       have == 0 ? std::string("an empty file") : Cat("'", found, "'")));
  }
  if (have < 8) {
    return Invalid(file, Cat("byte 6: file ends inside the .npy version (", size, " bytes)"));
  }
  NpyHeader h;
  h.major = pre[6];
  h.minor = pre[7];
  if ((h.major != 1 && h.major != 2 && h.major != 3) || h.minor != 0) {
    return Invalid(file, Cat("byte 6: .npy format version ", h.major, ".", h.minor,
                             ", expected 1.0, 2.0 or 3.0"));
  }
  const int len_bytes = h.major == 1 ? 2 : 4;
  const uint64_t prefix = 8 + static_cast<uint64_t>(len_bytes);
  if (have < prefix) {
    return Invalid(file, Cat("byte 8: file ends inside the ", len_bytes, "-byte header length (",
                             size, " bytes)"));
  }
  const uint64_t hlen = LoadLE(pre + 8, len_bytes);
  if (hlen > kMaxNpyHeaderBytes) {
    return Invalid(file, Cat("byte 8: header length ", hlen, " is more than the ",
                             kMaxNpyHeaderBytes, "-byte limit"));
  }
  if (prefix + hlen > size) {
    return Invalid(file, Cat("byte 8: header length ", hlen, " runs past the end of the file (",
                             size, " bytes; the header would end at byte ", prefix + hlen, ")"));
  }
  h.data_offset = prefix + hlen;
  std::string text(static_cast<size_t>(hlen), '\0');
  if (absl::Status st = src.Read(prefix, text.data(), text.size()); !st.ok()) return st;

  std::vector<std::pair<std::string, PyValue>> dict;
  if (absl::Status st = PyLiteralParser(text).ParseDict(dict); !st.ok()) {
    return Invalid(file, Cat("header (at byte ", prefix, "): ", st.message()));
  }
  bool seen_descr = false, seen_fortran = false, seen_shape = false;
  for (auto& [key, v] : dict) {
    bool* seen = key == "descr"           ? &seen_descr
                 : key == "fortran_order" ? &seen_fortran
                 : key == "shape"         ? &seen_shape
                                          : nullptr;
    if (seen == nullptr) {
      return Invalid(file, Cat("header: unexpected key '", Printable(key),
                               "' (expected exactly 'descr', 'fortran_order', 'shape')"));
    }
    if (*seen) return Invalid(file, Cat("header: key '", key, "' appears twice"));
    *seen = true;
    if (key == "descr") {
      if (v.kind != PyValue::kString) {
        return Invalid(file, "header: descr: expected a dtype string such as '<f4'");
      }
      h.descr = v.text;
    } else if (key == "fortran_order") {
      if (v.kind != PyValue::kBool) {
        return Invalid(file, "header: fortran_order: expected True or False");
      }
      h.fortran = v.flag;
    } else {
      if (v.kind != PyValue::kTuple) {
        return Invalid(file, "header: shape: expected a tuple of non-negative integers");
      }
      h.shape = std::move(v.ints);
    }
  }
  if (!seen_descr || !seen_fortran || !seen_shape) {
    return Invalid(file, Cat("header: missing key '",
                             !seen_descr     ? "descr"
                             : !seen_fortran ? "fortran_order"
                                             : "shape",
                             "' (expected 'descr', 'fortran_order', 'shape')"));
  }
  return h;
}

struct ResolvedDtype {
  const DtypeInfo* dtype = nullptr;
  bool big_endian = false;
  std::string note;  // Set when the descr alone did not give the dtype.
};

// The dtype of a .npy descr, with the requested dtype (see the header for the rules).
absl::StatusOr<ResolvedDtype> ResolveDescr(std::string_view file, std::string_view descr,
                                           const TensorReadOptions& o) {
  absl::StatusOr<const DtypeInfo*> req = RequestedDtype(file, o);
  if (!req.ok()) return req.status();
  const std::string quoted = Cat("descr '", Printable(descr), "'");
  ResolvedDtype r;
  char kind = 0;
  int size = 0;
  const DtypeInfo* named = nullptr;
  if (descr == "bfloat16") {
    named = FindDtype("bfloat16");
    kind = 'B';
    size = 2;
  } else {
    if (descr.size() < 3 || std::string_view("<>|=").find(descr[0]) == std::string_view::npos) {
      return Invalid(file, Cat("header: ", quoted,
                               ": unknown dtype (expected a byte order < > | = then f8 f4 f2 i1 u1"
                               " i2 u2 i4 u4 i8, V1/V2 of ml_dtypes arrays, or 'bfloat16')"));
    }
    r.big_endian = descr[0] == '>';
    kind = descr[1];
    const std::string_view digits = descr.substr(2);
    for (char c : digits) {
      if (c < '0' || c > '9' || digits.size() > 3) {
        return Invalid(
            file, Cat("header: ", quoted, ": unknown dtype (bad size '", Printable(digits), "')"));
      }
    }
    size = std::stoi(std::string(digits));
    std::string_view name;
    if (kind == 'f') {
      name = size == 8 ? "float64" : size == 4 ? "float32" : size == 2 ? "float16" : "";
    } else if (kind == 'i') {
      name = size == 1   ? "int8"
             : size == 2 ? "int16"
             : size == 4 ? "int32"
             : size == 8 ? "int64"
                         : "";
    } else if (kind == 'u') {
      name = size == 1 ? "uint8" : size == 2 ? "uint16" : size == 4 ? "uint32" : "";
    }
    if (!name.empty()) named = FindDtype(name);
    const bool ambiguous = kind == 'V' || (kind == 'f' && size == 1);
    if (named == nullptr && !ambiguous) {
      std::string_view what = kind == 'b'                  ? " (bool)"
                              : kind == 'c'                ? " (complex)"
                              : kind == 'u' && size == 8   ? " (uint64)"
                              : kind == 'U' || kind == 'S' ? " (strings)"
                              : kind == 'O'                ? " (Python objects)"
                              : kind == 'M' || kind == 'm' ? " (dates)"
                                                           : "";
      return Invalid(file, Cat("header: ", quoted, what,
                               " is not supported (expected f8 f4 f2 i1 u1 i2 u2 i4 u4 i8, V1/V2"
                               " of ml_dtypes arrays, or 'bfloat16')"));
    }
    if (ambiguous) {
      if (*req == nullptr) {
        std::string why;
        if (kind == 'f') {
          why = Cat("'", Printable(descr),
                    "' is what numpy writes for ml_dtypes float8_e5m2 arrays, but a"
                    " 1-byte float descr does not name the format: give the dtype (",
                    DtypeOption(o), " float8_e5m2, ...)");
        } else if (size == 1) {
          why =
              Cat("numpy writes every 1-byte ml_dtypes float but float8_e5m2 as '<V1': give"
                  " the dtype (",
                  DtypeOption(o), " float8_e4m3fn, ...; one of ", DtypeNames(1),
                  "); float8_e4m3fn (OCP, max 448) is not NKI's float8_e4m3"
                  " (IEEE-like, max 240), so fpconform does not guess");
        } else if (size == 2) {
          why = Cat("numpy writes ml_dtypes bfloat16 arrays as '<V2': give the dtype (",
                    DtypeOption(o), " bfloat16, ...; one of ", DtypeNames(2), ")");
        } else {
          why = Cat("give the dtype (", DtypeOption(o), " ...; one of ",
                    size > 0 && size <= 8 ? DtypeNames(size) : std::string("no dtype fits"), ")");
        }
        return Invalid(file,
                       Cat("header: ", quoted, " does not say which format the data holds: ", why));
      }
      if ((*req)->bytes != size) {
        return Invalid(
            file, Cat("header: ", quoted, " holds ", size, "-byte elements, but ", DtypeOption(o),
                      " ", (*req)->name, " is ", (*req)->bytes, " bytes"));
      }
      if (kind == 'f' && !(*req)->is_float) {
        return Invalid(file, Cat("header: ", quoted, " is a 1-byte float, but ", DtypeOption(o),
                                 " ", (*req)->name, " is not a float format"));
      }
      r.dtype = *req;
      r.note = Cat(quoted, " read as ", (*req)->name, " (", DtypeOption(o), ")");
      return r;
    }
  }
  if (*req == nullptr || *req == named) {
    r.dtype = named;
    return r;
  }
  if (kind == 'u' && (*req)->bytes == size) {
    r.dtype = *req;
    r.note = Cat(quoted, " holds unsigned integers (", named->name, "); their bits are read as ",
                 (*req)->name, " (", DtypeOption(o), ")");
    return r;
  }
  return Invalid(file, Cat("header: ", quoted, " is ", named->name, ", but ", DtypeOption(o),
                           " says ", (*req)->name,
                           " (only unsigned or void descrs of the same"
                           " width are reinterpreted)"));
}

absl::Status CheckRequestedShape(const Tensor& t, const TensorReadOptions& o) {
  if (!o.shape.empty() && o.shape != t.shape) {
    return Invalid(t.source, Cat("the file says shape ", ShapeText(t.shape), ", but ",
                                 ShapeOption(o), " says ", ShapeText(o.shape)));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> ReadNpy(const Source& src, std::string_view file,
                               const TensorReadOptions& o) {
  absl::StatusOr<NpyHeader> h = ParseNpyPrefix(src, file);
  if (!h.ok()) return h.status();
  absl::StatusOr<ResolvedDtype> r = ResolveDescr(file, h->descr, o);
  if (!r.ok()) return r.status();
  const DtypeInfo& d = *r->dtype;
  absl::StatusOr<uint64_t> nbytes = ShapeBytes(file, "header: shape", h->shape, d.bytes);
  if (!nbytes.ok()) return nbytes.status();
  const uint64_t available = src.size() - h->data_offset;
  if (*nbytes > available) {
    return Invalid(
        file, Cat("data at byte ", h->data_offset, ": shape ", ShapeText(h->shape), " x ", d.bytes,
                  " bytes of ", d.name, " is ", *nbytes, " bytes, but the file has only ",
                  available, " bytes after the header"));
  }
  Tensor t;
  t.dtype = std::string(d.name);
  t.format = d.format;
  t.element_bytes = d.bytes;
  t.shape = h->shape;
  t.source = std::string(file);
  t.metadata.emplace_back("format", Cat("npy ", h->major, ".", h->minor));
  t.metadata.emplace_back("descr", h->descr);
  t.metadata.emplace_back("fortran_order", h->fortran ? "True" : "False");
  if (!r->note.empty()) t.notes.push_back(r->note);
  if (absl::Status st = Allocate(t.data, *nbytes, file); !st.ok()) return st;
  if (absl::Status st = src.Read(h->data_offset, t.data.data(), t.data.size()); !st.ok()) return st;
  if (r->big_endian) SwapBytes(t.data, d.bytes);
  if (h->fortran && h->shape.size() >= 2 && !t.data.empty()) {
    FortranToC(t.data, t.shape, d.bytes);
  }
  if (*nbytes < available) {
    t.notes.push_back(Cat(available - *nbytes, " bytes after the array's data (from byte ",
                          h->data_offset + *nbytes, ") are ignored, as np.load ignores them"));
  }
  if (absl::Status st = CheckRequestedShape(t, o); !st.ok()) return st;
  return t;
}

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

absl::StatusOr<Tensor> ReadRaw(const Source& src, std::string_view file,
                               const TensorReadOptions& o) {
  absl::StatusOr<const DtypeInfo*> req = RequestedDtype(file, o);
  if (!req.ok()) return req.status();
  if (*req == nullptr) {
    return Invalid(file, Cat("a raw file needs its dtype (", DtypeOption(o), " NAME) and shape (",
                             ShapeOption(o), " 64,128)"));
  }
  if (o.shape.empty()) {
    return Invalid(file, Cat("not a .npy or safetensors file, and a raw file needs its shape (",
                             ShapeOption(o), " 64,128) as well as its dtype"));
  }
  const DtypeInfo& d = **req;
  absl::StatusOr<uint64_t> nbytes = ShapeBytes(file, ShapeOption(o), o.shape, d.bytes);
  if (!nbytes.ok()) return nbytes.status();
  if (*nbytes != src.size()) {
    return Invalid(file, Cat("the file has ", src.size(), " bytes, but ", ShapeOption(o), " ",
                             ShapeText(o.shape), " x ", d.bytes, " bytes of ", d.name, " is ",
                             *nbytes, " bytes"));
  }
  Tensor t;
  t.dtype = std::string(d.name);
  t.format = d.format;
  t.element_bytes = d.bytes;
  t.shape = o.shape;
  t.source = std::string(file);
  t.metadata.emplace_back("format", "raw");
  if (absl::Status st = Allocate(t.data, *nbytes, file); !st.ok()) return st;
  if (absl::Status st = src.Read(0, t.data.data(), t.data.size()); !st.ok()) return st;
  return t;
}

// Plausible safetensors: 8-byte length within limits and the file, then '{'.
bool LooksLikeSafetensors(const Source& src) {
  if (src.size() < 10) return false;
  uint8_t pre[9];
  if (!src.Read(0, pre, 9).ok()) return false;
  const uint64_t n = LoadLE(pre, 8);
  return n <= kMaxSafetensorsHeaderBytes && 8 + n <= src.size() && pre[8] == '{';
}

bool LooksLikeNpy(const Source& src) {
  if (src.size() < 6) return false;
  char pre[6];
  if (!src.Read(0, pre, 6).ok()) return false;
  return std::string_view(pre, 6) == kNpyMagic;
}

// ---- Writers. ----

std::string NpyHeaderBytes(const Tensor& t) {
  const DtypeInfo* d = FindDtype(t.dtype);
  const std::string descr = d ? std::string(d->npy_descr) : Cat("|V", t.element_bytes);
  // numpy.lib.format._write_array_header: sorted keys, repr(shape), then spare spaces so that
  // the first axis can grow in place (GROWTH_AXIS_MAX_DIGITS = 21), then _wrap_header pads
  // with spaces and a final '\n' so that magic + length + header is a multiple of 64.
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i) shape += Cat(i ? ", " : "", t.shape[i]);
  if (t.shape.size() == 1) shape += ",";
  shape += ")";
  std::string header =
      Cat("{'descr': '", descr, "', 'fortran_order': False, 'shape': ", shape, ", }");
  if (!t.shape.empty()) {
    const size_t digits = Cat(t.shape[0]).size();
    if (digits < 21) header.append(21 - digits, ' ');
  }
  const size_t hlen = header.size() + 1;
  const size_t padlen = 64 - ((6 + 2 + 2 + hlen) % 64);
  header.append(padlen, ' ');
  header.push_back('\n');
  std::string out(kNpyMagic);
  if (6 + 2 + 2 + header.size() <= 65535 + 10) {
    out += std::string_view("\x01\x00", 2);
    const size_t total = header.size();
    out.push_back(static_cast<char>(total & 0xFF));
    out.push_back(static_cast<char>((total >> 8) & 0xFF));
    out += header;
    return out;
  }
  // numpy falls back to version 2.0 (4-byte length) when the header does not fit 1.0; the
  // padding is then computed for a 12-byte prefix.
  header.resize(header.size() - padlen - 1);
  const size_t padlen2 = 64 - ((6 + 2 + 4 + hlen) % 64);
  header.append(padlen2, ' ');
  header.push_back('\n');
  out += std::string_view("\x02\x00", 2);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
  out += header;
  return out;
}

absl::Status CheckWritable(const Tensor& t, std::string_view what) {
  if (TensorDtypeBytes(t.dtype) != t.element_bytes) {
    return absl::InvalidArgumentError(Cat(what, ": dtype '", t.dtype, "' with ", t.element_bytes,
                                          "-byte elements is not a tensor dtype (", DtypeNames(),
                                          ")"));
  }
  absl::StatusOr<uint64_t> n = ShapeBytes(what, "shape", t.shape, t.element_bytes);
  if (!n.ok()) return n.status();
  if (*n != t.data.size()) {
    return absl::InvalidArgumentError(Cat(what, ": shape ", ShapeText(t.shape), " x ",
                                          t.element_bytes, " bytes is ", *n,
                                          " bytes, but the"
                                          " tensor holds ",
                                          t.data.size()));
  }
  return absl::OkStatus();
}

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

// Whether every finite value of t fits `f` (an IEEE-like float format with subnormals).
bool FitsFormat(double v, const FormatSpec& f) {
  if (v == 0) return true;
  const double a = std::fabs(v);
  int ex;
  std::frexp(a, &ex);  // a = m * 2^ex, m in [0.5, 1).
  const int e = ex - 1;
  if (e > Emax(f)) return false;
  const int q = std::max(e, Emin(f)) - f.fraction_bits;
  const double scaled = std::ldexp(a, -q);
  if (scaled != std::floor(scaled)) return false;
  // Within the exponent range, the largest significand is all ones (IEEE formats).
  return scaled <= std::ldexp(1.0, Precision(f)) - 1;
}

}  // namespace

// ---- Tensor. ----

int64_t Tensor::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

uint64_t Tensor::Bits(int64_t i) const {
  return LoadLE(data.data() + static_cast<size_t>(i) * static_cast<size_t>(element_bytes),
                element_bytes);
}

void Tensor::SetBits(int64_t i, uint64_t bits) {
  uint8_t* p = data.data() + static_cast<size_t>(i) * static_cast<size_t>(element_bytes);
  for (int k = 0; k < element_bytes; ++k) p[k] = static_cast<uint8_t>(bits >> (8 * k));
}

void Tensor::CopyBits(int64_t begin, std::span<uint64_t> out) const {
  const size_t eb = static_cast<size_t>(element_bytes);
  const uint8_t* p = data.data() + static_cast<size_t>(begin) * eb;
  for (size_t i = 0; i < out.size(); ++i) out[i] = LoadLE(p + i * eb, element_bytes);
}

absl::StatusOr<Tensor> MakeTensor(std::string_view dtype, std::vector<int64_t> shape) {
  const DtypeInfo* d = FindDtype(dtype);
  if (d == nullptr) {
    return absl::InvalidArgumentError(Cat("unknown dtype '", dtype, "' (", DtypeNames(), ")"));
  }
  absl::StatusOr<uint64_t> n = ShapeBytes("MakeTensor", "shape", shape, d->bytes);
  if (!n.ok()) return n.status();
  if (*n > kMaxMadeTensorBytes) {
    return absl::InvalidArgumentError(
        Cat("MakeTensor: ", *n, " bytes is more than the ", kMaxMadeTensorBytes, "-byte limit"));
  }
  Tensor t;
  t.dtype = std::string(d->name);
  t.format = d->format;
  t.element_bytes = d->bytes;
  t.shape = std::move(shape);
  if (absl::Status st = Allocate(t.data, *n, "MakeTensor"); !st.ok()) return st;
  return t;
}

std::optional<int> TensorDtypeBytes(std::string_view dtype) {
  const DtypeInfo* d = FindDtype(dtype);
  if (d == nullptr) return std::nullopt;
  return d->bytes;
}

absl::StatusOr<Tensor> ParseNpy(std::string_view bytes, std::string_view file_name,
                                const TensorReadOptions& options) {
  return ReadNpy(Source(bytes), file_name, options);
}

absl::StatusOr<Tensor> ParseSafetensors(std::string_view bytes, std::string_view file_name,
                                        std::string_view tensor_name,
                                        const TensorReadOptions& options) {
  return ReadSafetensors(Source(bytes), file_name, tensor_name, options);
}

absl::StatusOr<Tensor> ParseRaw(std::string_view bytes, std::string_view file_name,
                                const TensorReadOptions& options) {
  return ReadRaw(Source(bytes), file_name, options);
}

absl::StatusOr<std::vector<std::string>> SafetensorsNames(std::string_view bytes,
                                                          std::string_view file_name) {
  absl::StatusOr<StHeader> h = ParseStHeader(Source(bytes), file_name);
  if (!h.ok()) return h.status();
  std::vector<std::string> names;
  for (const StEntry& e : h->entries) names.push_back(e.name);
  return names;
}

absl::StatusOr<Tensor> ReadTensor(std::string_view spec, const TensorReadOptions& options) {
  std::string path(spec);
  std::string name;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    // "path:name": the first ':' after which the head names an existing non-directory (so a
    // tensor name may itself contain ':').
    for (size_t colon = spec.find(':'); colon != std::string_view::npos;
         colon = spec.find(':', colon + 1)) {
      const std::string head(spec.substr(0, colon));
      if (colon > 0 && ::stat(head.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
        path = head;
        name = std::string(spec.substr(colon + 1));
        break;
      }
    }
  }
  absl::StatusOr<UserFile> f = UserFile::Open(path, "tensor file");
  if (!f.ok()) return f.status();
  const Source src(&*f);
  const bool npy = LooksLikeNpy(src);
  const bool safetensors = !npy && LooksLikeSafetensors(src);
  if (!name.empty() && !safetensors) {
    return Invalid(path, Cat("a tensor name (':", name,
                             "') is only for .safetensors files, and "
                             "this is ",
                             npy ? "a .npy file" : "not a safetensors file"));
  }
  if (npy) return ReadNpy(src, path, options);
  if (safetensors) return ReadSafetensors(src, path, name, options);
  if (!options.shape.empty() || !options.dtype.empty()) {
    return ReadRaw(src, path, options);
  }
  return Invalid(path, Cat("not a .npy file (no \\x93NUMPY magic at byte 0) and not a "
                           "safetensors file (no plausible 8-byte header length then '{'); for a "
                           "raw dump give the dtype and shape (",
                           DtypeOption(options), " NAME ", ShapeOption(options), " 64,128)"));
}

std::string NpyBytes(const Tensor& t) {
  std::string out = NpyHeaderBytes(t);
  out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return out;
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

absl::Status WriteNpy(const Tensor& t, const std::string& path) {
  if (absl::Status st = CheckWritable(t, path); !st.ok()) return st;
  const std::string header = NpyHeaderBytes(t);
  return WriteFileAtomically(
      path,
      {header, std::string_view(reinterpret_cast<const char*>(t.data.data()), t.data.size())});
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

std::optional<std::string> NarrowestExactFloat(const Tensor& t) {
  const bool f32 = t.dtype == "float32" && t.element_bytes == 4;
  const bool f64 = t.dtype == "float64" && t.element_bytes == 8;
  if (!f32 && !f64) return std::nullopt;
  const int64_t n = static_cast<int64_t>(t.data.size()) / t.element_bytes;
  bool any = false, bf16 = true, fp16 = true, fp32 = f64;
  if (f32) {
    // Bit tests (a 2 GiB dump is 2^29 elements): bfloat16 is float32's top half, so a finite
    // float32 fits it iff its low 16 bits are zero (subnormals included: same exponent field).
    // float16 (IEEE 754 binary16: emin -14, p 11, subnormals down to 2^-24) keeps 10 fraction
    // bits for exponents -14..15 and e + 24 of them for e in -24..-15.
    for (int64_t i = 0; i < n && (bf16 || fp16); ++i) {
      const uint32_t b = static_cast<uint32_t>(t.Bits(i));
      const uint32_t mag = b & 0x7FFFFFFFu;
      if ((mag >> 23) == 0xFF) continue;  // Inf, NaN.
      if (mag == 0) continue;
      any = true;
      if (bf16) bf16 = (b & 0xFFFFu) == 0;
      if (fp16) {
        const int e = static_cast<int>(mag >> 23) - 127;
        if (e == -127 || e > 15 || e < -24) {
          fp16 = false;  // float32 subnormal (< 2^-126), past 65504, or below 2^-24.
        } else {
          const int drop = e >= -14 ? 13 : -1 - e;
          fp16 = (mag & ((uint32_t{1} << drop) - 1)) == 0;
        }
      }
    }
    if (!any) return std::nullopt;
    if (bf16) return std::string("bfloat16");
    if (fp16) return std::string("float16");
    return std::nullopt;
  }
  for (int64_t i = 0; i < n && (bf16 || fp16 || fp32); ++i) {
    const uint64_t bits = t.Bits(i);
    double v;
    std::memcpy(&v, &bits, 8);
    if (!std::isfinite(v)) continue;
    if (v != 0) any = true;
    if (bf16) bf16 = FitsFormat(v, BFloat16());
    if (fp16) fp16 = FitsFormat(v, Float16());
    if (fp32) fp32 = FitsFormat(v, Float32());
  }
  if (!any) return std::nullopt;
  if (bf16) return std::string("bfloat16");
  if (fp16) return std::string("float16");
  if (fp32) return std::string("float32");
  return std::nullopt;
}

}  // namespace fpconform
