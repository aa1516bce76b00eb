// Internals shared by the tensor-file readers and writers (cases/tensor_file.h), which are split
// by job: tensor_file.cc (the Tensor type, the dtype table, raw files, ReadTensor's dispatch),
// tensor_file_npy.cc (.npy) and tensor_file_safetensors.cc (.safetensors). Not a public API:
// only those three files include it.
#ifndef FPCONFORM_CASES_TENSOR_FILE_INTERNAL_H_
#define FPCONFORM_CASES_TENSOR_FILE_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/user_file.h"
#include "cases/tensor_file.h"
#include "formats/format_spec.h"

namespace fpconform::tensor_file_internal {

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

// ---- Dtypes (tensor_file.cc). ----

struct DtypeInfo {
  std::string_view name;
  int bytes;
  const FormatSpec* format;    // nullptr for int16/uint16/uint32/int64.
  std::string_view npy_descr;  // What numpy writes for an array of this dtype.
  std::string_view st_dtype;   // safetensors dtype, empty when it has none.
  bool is_float;
};

// Every tensor dtype: the float formats of the format table, then the integer rows.
const std::vector<DtypeInfo>& Dtypes();
const DtypeInfo* FindDtype(std::string_view name);
// The dtype names, comma-separated: all, or those of `bytes`-byte elements, or only floats.
std::string DtypeNames(int bytes = 0, bool floats_only = false);
// The option names in messages: options.option_name (default --dtype) and its --shape sibling.
std::string DtypeOption(const TensorReadOptions& o);
std::string ShapeOption(const TensorReadOptions& o);
std::string ShapeText(const std::vector<int64_t>& shape);
// Bytes of the input echoed in a message: printable ASCII kept, everything else as \xNN, so that
// a message is always valid UTF-8 (reports embed them in JSON).
std::string Printable(std::string_view s);
// A name from a JSON header (valid UTF-8, checked by the parser) in a message: only control
// characters are escaped, so that a name cannot move the cursor of the user's terminal.
std::string PrintableName(std::string_view s);
// InvalidArgument "<file>: <msg>".
absl::Status Invalid(std::string_view file, const std::string& msg);
// The requested dtype (options.dtype) as a table row, or nullptr when none was given.
absl::StatusOr<const DtypeInfo*> RequestedDtype(std::string_view file, const TensorReadOptions& o);
// product(shape) x bytes, refusing negative dimensions, too many dimensions and overflow of
// int64 (every dimension and every partial product stays below 2^63).
absl::StatusOr<uint64_t> ShapeBytes(std::string_view file, std::string_view field,
                                    const std::vector<int64_t>& shape, int bytes);
// Allocates n bytes for tensor data; an allocation failure is an error, not a crash.
absl::Status Allocate(std::vector<uint8_t>& data, uint64_t n, std::string_view file);
// options.shape, when given, must be the tensor's.
absl::Status CheckRequestedShape(const Tensor& t, const TensorReadOptions& o);
// A tensor the writers accept: a known dtype of its element width, data of shape's size.
// Messages start with `what`.
absl::Status CheckWritable(const Tensor& t, std::string_view what);

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

inline uint64_t LoadLE(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

// ---- The formats' readers (tensor_file_npy.cc, tensor_file_safetensors.cc). ----

absl::StatusOr<Tensor> ReadNpy(const Source& src, std::string_view file,
                               const TensorReadOptions& o);
absl::StatusOr<Tensor> ReadSafetensors(const Source& src, std::string_view file,
                                       std::string_view tensor_name, const TensorReadOptions& o);

}  // namespace fpconform::tensor_file_internal

#endif  // FPCONFORM_CASES_TENSOR_FILE_INTERNAL_H_
