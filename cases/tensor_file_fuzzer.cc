// libFuzzer harness for ReadTensor, the file-level entry the CLI and the audit use: the bytes
// are written to a file and read back through it, so the content sniffing (.npy magic, else a
// plausible safetensors header, else raw when a shape is given), the "path:name" form and the
// user-file checks run on them. The parsers themselves have their own harnesses (npy_fuzzer,
// safetensors_fuzzer, raw_fuzzer); every success here must survive the writer round trip too.
// The first byte chooses the options; the file lives in one directory made per process.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/testing/temp_dir.h"
#include "cases/tensor_file.h"
#include "cases/tensor_fuzz_util.h"

namespace {

// The one file every input is written to, in a folder of this process removed at exit.
const std::string& FuzzPath() {
  static const fpconform::TempDir dir("fpconform-tensor-fuzz");
  static const std::string path = dir / "input";
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string& path = FuzzPath();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
  std::fclose(f);
  fpconform::TensorReadOptions options;
  static const char* const kDtypes[] = {"", "bfloat16", "float32", "float8_e4m3fn", "uint16"};
  options.dtype = kDtypes[mode % 5];
  if (mode & 0x10) options.shape = {static_cast<int64_t>(bytes.size() / 2)};
  if (mode & 0x20) options.shape = {2, -1};
  const std::string spec = (mode & 0x40) ? path + ":" + std::string(bytes.substr(0, 8)) : path;
  absl::StatusOr<fpconform::Tensor> t = fpconform::ReadTensor(spec, options);
  if (t.ok()) fpconform::fuzz::CheckRoundTrips(*t);
  return 0;
}
