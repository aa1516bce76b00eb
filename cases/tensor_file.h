// Tensor files users bring: .npy (format versions 1.0, 2.0, 3.0), .safetensors and raw .bin
// dumps, read into one Tensor type (element bits, little-endian, C order), and written back
// (.npy and .safetensors) so users can load the audit's exact and emulated outputs next to
// their own. The facts these readers follow are in shared/refs/README.md ("Tensor files users
// bring"); the format references are numpy's NEP 1 / `numpy.lib.format` and the safetensors
// specification (README of huggingface/safetensors).
//
// Element types. A tensor's dtype is a name: an ml_dtypes/numpy name. Float and 8/32-bit
// integer dtypes are rows of the format table (FindFormat: float64, float32, bfloat16, float16,
// the float8 family, int8, uint8, int32); int16, uint16, uint32, int64 have no table row
// (Tensor::format is nullptr) and are read for completeness, not computed with.
//
// .npy: descr byte orders '<' '>' '|' '=' ('=' is little-endian: every supported host is) for
// f8 f4 f2 i1 u1 i2 u2 i4 u4 i8; the strings numpy writes for ml_dtypes arrays ('<V2'/'|V2'
// for bfloat16, '<V1'/'|V1' for every 1-byte ml_dtypes float except float8_e5m2, '<f1' for
// float8_e5m2) and the descr 'bfloat16'. A void or 1-byte-float descr does not say which format
// it holds, so the caller must give TensorReadOptions::dtype; the reader refuses to guess and
// says why (float8_e4m3fn, max 448, is not NKI's float8_e4m3, max 240). A descr that names a
// dtype and a different requested dtype is an error, except an unsigned or void descr of the
// same width (bits saved as uint16 / uint8 views), which is reinterpreted, with a note.
// Fortran order is transposed into C order on reading. Any rank, 0-d and 0-size included.
//
// .safetensors: 8-byte little-endian header length N (<= 100,000,000), N bytes of UTF-8 JSON,
// then the data. dtypes F64 F32 F16 BF16 F8_E4M3 F8_E5M2 F8_E8M0 I8 U8 I16 I32 I64; others
// (BOOL, U16, ...) are rejected by name. Every check of the reference implementation: offsets
// in order, no gaps or overlaps, byte length = product(shape) x element size, the data fully
// covered. `__metadata__` (string values only) is kept in Tensor::metadata. Data may be
// misaligned: bytes are copied, never cast. F8_E4M3 is OCP float8_e4m3fn.
//
// Raw .bin: TensorReadOptions::dtype and ::shape are required; row-major, little-endian; the
// file size must equal product(shape) x element size.
//
// Names: a tensor spec is "path" or "path:name" (safetensors). A safetensors file with one
// tensor needs no name; with several, the message lists them. A path that itself contains ':'
// is tried as a whole path first.
//
// Memory: a tensor is read with one allocation of its data size (plus a transient copy for
// Fortran order; byte swapping is in place); no reader holds the whole file in memory twice.
//
// Limits and decisions beyond the formats' own rules:
//   * at most 64 dimensions (numpy's NPY_MAXDIMS), in .npy and safetensors alike; every
//     dimension and product(shape) x element size must stay below 2^63, and the data must fit
//     the file, before anything is allocated (a header claiming 2^60 elements fails cleanly);
//   * .npy header text at most 1 MiB; keys exactly descr, fortran_order, shape (as numpy),
//     each once; Python 2 'L' suffixes accepted; a '>V2' descr is byte-swapped like '>i2';
//     bytes after the data are ignored with a note (np.load ignores them too: np.save can
//     append several arrays to one file);
//   * safetensors JSON (nlohmann, never throwing out of here): a duplicate key anywhere is an
//     error (serde_json keeps the last tensor of a name: ambiguous, so refused); nesting deeper
//     than 128 (serde_json's limit) and NUL bytes (nlohmann would stop at one) are errors;
//     shape and data_offsets entries must be JSON integers in [0, 2^63) (2.0, 1e3, -0 and
//     numbers past 2^64, which nlohmann reads as floats, are refused); unknown fields of a
//     tensor entry are ignored and __metadata__ may be null, as in the reference. A file whose
//     other tensors have unsupported dtypes (BOOL, U16, ...) is still read, since the
//     reference's size checks know every dtype's width; only reading such a tensor is refused.
//   * messages escape input bytes outside printable ASCII as \xNN (they stay valid UTF-8).
//
// Errors (absl::Status, never a crash): InvalidArgument whose message starts with the file and
// names the field or byte offset and what was expected, e.g.
//   "a.npy: header: descr '<V2' does not say which format the data holds: give the dtype
//    (--a-dtype bfloat16, ...)"
//   "w.safetensors: header: tensor 'w': data_offsets [0, 10] is 10 bytes, expected 12
//    (shape [2, 3] x 2 bytes of BF16)"
// NotFound for a missing file or tensor name.
//
// Example:
//   absl::StatusOr<Tensor> a = ReadTensor("a.npy", {.dtype = "bfloat16"});  // a '<V2' file
//   a->shape == {64, 128};  a->format == &BFloat16();  a->Bits(0) == 0x3F80;
//   absl::Status s = WriteNpy(*a, "copy.npy");
#ifndef FPCONFORM_CASES_TENSOR_FILE_H_
#define FPCONFORM_CASES_TENSOR_FILE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "formats/format_spec.h"

namespace fpconform {

struct Tensor {
  std::string dtype;                  // "bfloat16", "float32", "int16", ...
  const FormatSpec* format = nullptr;  // Its table row; nullptr for int16/uint16/uint32/int64.
  int element_bytes = 0;               // 1, 2, 4 or 8.
  std::vector<int64_t> shape;          // Empty for a 0-d tensor.
  std::vector<uint8_t> data;           // Little-endian elements, C (row-major) order.
  std::string source;                  // "path" or "path:name", for messages and provenance.
  // Where the tensor came from: ("format", "npy 1.0"), ("descr", "<V2"), safetensors
  // __metadata__ entries as ("metadata.KEY", value), ...; in file order.
  std::vector<std::pair<std::string, std::string>> metadata;
  // Notes for the user (a reinterpreted descr, ...).
  std::vector<std::string> notes;

  int64_t size() const;  // Number of elements: product(shape), 1 for 0-d.
  // Element i (C order) as bits in the container, zero-extended.
  uint64_t Bits(int64_t i) const;
  void SetBits(int64_t i, uint64_t bits);
  // Elements [begin, begin + out.size()) as bits.
  void CopyBits(int64_t begin, std::span<uint64_t> out) const;
};

// A tensor of `dtype` (a name FindTensorDtype knows) and `shape`, all bits zero.
absl::StatusOr<Tensor> MakeTensor(std::string_view dtype, std::vector<int64_t> shape);

// Element size of a dtype name, or nullopt when it is not a tensor dtype.
std::optional<int> TensorDtypeBytes(std::string_view dtype);

// The `= {}` initializers keep designated initializers ({.dtype = "bfloat16"}) free of GCC's
// -Wmissing-field-initializers.
struct TensorReadOptions {
  std::string dtype = {};           // Required for void / 1-byte float .npy descrs and raw files.
  std::vector<int64_t> shape = {};  // Raw files only (required there); elsewhere it must match.
  std::string option_name = {};     // The CLI option to suggest in messages ("--a-dtype");
                                    // "--a-shape" is derived from it. Default "--dtype".
};

// Reads "path" or "path:name", choosing the reader by content (.npy magic, else a plausible
// safetensors header) and falling back to raw when options.shape is given.
absl::StatusOr<Tensor> ReadTensor(std::string_view spec, const TensorReadOptions& options = {});

// The readers on bytes already in memory (tests, fuzzers); `file_name` is used in messages.
absl::StatusOr<Tensor> ParseNpy(std::string_view bytes, std::string_view file_name,
                                const TensorReadOptions& options = {});
// `tensor_name` empty: the file's only tensor.
absl::StatusOr<Tensor> ParseSafetensors(std::string_view bytes, std::string_view file_name,
                                        std::string_view tensor_name,
                                        const TensorReadOptions& options = {});
absl::StatusOr<Tensor> ParseRaw(std::string_view bytes, std::string_view file_name,
                                const TensorReadOptions& options);
// The tensor names of a safetensors file (sorted by data offset), for messages and listings.
absl::StatusOr<std::vector<std::string>> SafetensorsNames(std::string_view bytes,
                                                          std::string_view file_name);

// Writers. .npy: version 1.0 ('<f4', '<f2', '<f8', '|i1', '|u1', '<i4', ...; bfloat16 as '<V2'
// and 1-byte ml_dtypes floats as '<V1', float8_e5m2 as '<f1', exactly as numpy writes them for
// ml_dtypes arrays; tfloat32 as '|V4'), C order, byte for byte what np.save writes. .safetensors: the tensors in the given order, 8-byte aligned data
// offsets are not required and not produced (offsets are packed), header padded with spaces to a
// multiple of 8 as the reference writer does; `metadata` becomes __metadata__.
std::string NpyBytes(const Tensor& t);
absl::StatusOr<std::string> SafetensorsBytes(
    const std::vector<std::pair<std::string, const Tensor*>>& tensors,
    const std::vector<std::pair<std::string, std::string>>& metadata = {});
// Write to a file (through a temporary sibling and rename: never a partial file).
absl::Status WriteNpy(const Tensor& t, const std::string& path);
absl::Status WriteSafetensors(const std::vector<std::pair<std::string, const Tensor*>>& tensors,
                              const std::vector<std::pair<std::string, std::string>>& metadata,
                              const std::string& path);

// For a float32 (or float64) tensor whose every finite value is exactly representable in a
// narrower float format (bfloat16 first, then float16): that format's name, for the note
// "values fit bfloat16: the kernel probably computed in bfloat16 and saved .float()".
// nullopt otherwise, for other dtypes and for tensors with no non-zero finite value.
std::optional<std::string> NarrowestExactFloat(const Tensor& t);

}  // namespace fpconform

#endif  // FPCONFORM_CASES_TENSOR_FILE_H_
