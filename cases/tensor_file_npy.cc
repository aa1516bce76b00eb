// .npy files (NumPy's format, numpy/lib/format.py): the header's Python dict literal, dtype
// resolution with the requested dtype, byte order and Fortran order; the writer of np.save's
// exact bytes. Shared internals: tensor_file_internal.h.
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "base/output_file.h"
#include "base/str_cat.h"
#include "cases/tensor_file.h"
#include "cases/tensor_file_internal.h"

namespace fpconform {
namespace tensor_file_internal {
namespace {

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

}  // namespace

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

namespace {

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

}  // namespace
}  // namespace tensor_file_internal

using tensor_file_internal::CheckWritable;
using tensor_file_internal::Source;
using tensor_file_internal::ReadNpy;
using tensor_file_internal::NpyHeaderBytes;

absl::StatusOr<Tensor> ParseNpy(std::string_view bytes, std::string_view file_name,
                                const TensorReadOptions& options) {
  return ReadNpy(Source(bytes), file_name, options);
}

std::string NpyBytes(const Tensor& t) {
  std::string out = NpyHeaderBytes(t);
  out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return out;
}

absl::Status WriteNpy(const Tensor& t, const std::string& path) {
  if (absl::Status st = CheckWritable(t, path); !st.ok()) return st;
  const std::string header = NpyHeaderBytes(t);
  return WriteFileAtomically(
      path,
      {header, std::string_view(reinterpret_cast<const char*>(t.data.data()), t.data.size())});
}

}  // namespace fpconform
