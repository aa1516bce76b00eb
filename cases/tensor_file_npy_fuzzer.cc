// libFuzzer harness for ParseNpy: any bytes, parsed without a dtype and with the dtypes that
// void / 1-byte float descrs need; every success must survive the writer round trip.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cases/tensor_file.h"
#include "cases/tensor_fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (const char* dtype : {"", "bfloat16", "float8_e4m3fn", "float8_e5m2", "uint16", "tfloat32"}) {
    absl::StatusOr<fpconform::Tensor> t = fpconform::ParseNpy(bytes, "fuzz.npy", {.dtype = dtype});
    if (t.ok()) fpconform::fuzz::CheckRoundTrips(*t);
  }
  return 0;
}
