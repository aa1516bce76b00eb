// The Tensor type, the dtype table and the helpers every format shares, raw files, ReadTensor's
// dispatch by content, NarrowestExactFloat. The formats: tensor_file_npy.cc,
// tensor_file_safetensors.cc (tensor_file_internal.h).
#include "cases/tensor_file.h"

#include <sys/stat.h>

#include <bit>
#include <cmath>
#include <exception>
#include <limits>
#include <string>

#include "base/str_cat.h"
#include "base/user_file.h"
#include "cases/tensor_file_internal.h"

namespace fpconform {
namespace tensor_file_internal {
namespace {

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

}  // namespace

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

std::string DtypeNames(int bytes, bool floats_only) {
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

absl::StatusOr<const DtypeInfo*> RequestedDtype(std::string_view file, const TensorReadOptions& o) {
  if (o.dtype.empty()) return nullptr;
  const DtypeInfo* d = FindDtype(o.dtype);
  if (d == nullptr) {
    return Invalid(file, Cat(DtypeOption(o), " ", o.dtype, ": unknown dtype (expected an ml_dtypes",
                             " name: ", DtypeNames(), ")"));
  }
  return d;
}

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

absl::Status Allocate(std::vector<uint8_t>& data, uint64_t n, std::string_view file) {
  try {
    data.resize(static_cast<size_t>(n));
  } catch (const std::exception&) {
    return absl::ResourceExhaustedError(Cat(file, ": cannot allocate ", n, " bytes for the data"));
  }
  return absl::OkStatus();
}

absl::Status CheckRequestedShape(const Tensor& t, const TensorReadOptions& o) {
  if (!o.shape.empty() && o.shape != t.shape) {
    return Invalid(t.source, Cat("the file says shape ", ShapeText(t.shape), ", but ",
                                 ShapeOption(o), " says ", ShapeText(o.shape)));
  }
  return absl::OkStatus();
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

namespace {

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
}  // namespace tensor_file_internal

using tensor_file_internal::kMaxMadeTensorBytes;
using tensor_file_internal::DtypeInfo;
using tensor_file_internal::FindDtype;
using tensor_file_internal::DtypeNames;
using tensor_file_internal::DtypeOption;
using tensor_file_internal::ShapeOption;
using tensor_file_internal::Invalid;
using tensor_file_internal::ShapeBytes;
using tensor_file_internal::Allocate;
using tensor_file_internal::Source;
using tensor_file_internal::LoadLE;
using tensor_file_internal::ReadNpy;
using tensor_file_internal::ReadSafetensors;
using tensor_file_internal::ReadRaw;
using tensor_file_internal::LooksLikeNpy;
using tensor_file_internal::LooksLikeSafetensors;
using tensor_file_internal::FitsFormat;

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

absl::StatusOr<Tensor> ParseRaw(std::string_view bytes, std::string_view file_name,
                                const TensorReadOptions& options) {
  return ReadRaw(Source(bytes), file_name, options);
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
    const double v = std::bit_cast<double>(t.Bits(i));
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
