// libFuzzer harness for ParseSafetensors / SafetensorsNames: any bytes; every tensor that
// parses must survive the writer round trip, and a file that lists its names must parse.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cases/tensor_file.h"
#include "cases/tensor_fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<fpconform::Tensor> only =
      fpconform::ParseSafetensors(bytes, "fuzz.safetensors", "");
  if (only.ok()) fpconform::fuzz::CheckRoundTrips(*only);
  absl::StatusOr<std::vector<std::string>> names =
      fpconform::SafetensorsNames(bytes, "fuzz.safetensors");
  if (!names.ok()) {
    if (only.ok()) std::abort();  // A tensor came out of a file whose header is invalid.
    return 0;
  }
  size_t n = 0;
  for (const std::string& name : *names) {
    if (++n > 16) break;
    absl::StatusOr<fpconform::Tensor> t =
        fpconform::ParseSafetensors(bytes, "fuzz.safetensors", name, {.dtype = ""});
    if (t.ok()) fpconform::fuzz::CheckRoundTrips(*t);
  }
  return 0;
}
