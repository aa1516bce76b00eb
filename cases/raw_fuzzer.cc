// libFuzzer harness for ParseRaw: byte 0 picks the dtype, byte 1 the shape (rows), the rest is
// the file; every success must survive the writer round trips.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "cases/tensor_file.h"
#include "cases/tensor_fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const kDtypes[] = {
      "float64",        "float32",     "tfloat32",        "bfloat16",        "float16",
      "float8_e4m3fn",  "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3",
      "float8_e8m0fnu", "int8",        "uint8",           "int32",           "int16",
      "uint16",         "uint32",      "int64",           "no_such_dtype"};
  if (size < 2) return 0;
  const char* dtype = kDtypes[data[0] % (sizeof(kDtypes) / sizeof(kDtypes[0]))];
  const std::string_view bytes(reinterpret_cast<const char*>(data + 2), size - 2);
  const int64_t eb = fpconform::TensorDtypeBytes(dtype).value_or(1);
  const int64_t count = static_cast<int64_t>(bytes.size()) / eb;
  const int64_t rows = data[1] % 5;  // 0: a 1-d shape, else {rows, count / rows} (may not fit).
  std::vector<int64_t> shape =
      rows == 0 ? std::vector<int64_t>{count} : std::vector<int64_t>{rows, count / rows};
  if (data[1] >= 0xF0) shape = {int64_t{1} << 62, 4};  // Overflowing shapes must fail cleanly.
  absl::StatusOr<fpconform::Tensor> t =
      fpconform::ParseRaw(bytes, "fuzz.bin", {.dtype = dtype, .shape = shape});
  if (t.ok()) fpconform::fuzz::CheckRoundTrips(*t);
  return 0;
}
