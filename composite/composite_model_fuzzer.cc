// libFuzzer harness for elementwise model files (model.h): the input bytes are a
// TOML file given to ParseCompositeModel. A bad file must give InvalidArgument whose message
// starts with the file name, never a crash, a throw or an abort. When it parses, every function
// with a formula is evaluated at a few inputs drawn from a hash of the file (and at +-0, +-1,
// +-Inf, NaN) and checked: Emulate's value lies in Enclose's interval whenever that interval
// exists (formula.h's claim), and the interval is ordered.
//
//   build-fuzz/composite/composite_model_fuzzer composite/testdata/fuzz/composite_model_fuzzer
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "cases/pinned_random.h"
#include "composite/model.h"
#include "formats/ops.h"

namespace fpconform::composite {
namespace {

[[noreturn]] void Fail(const std::string& what, std::string_view input) {
  std::fprintf(stderr, "composite_model_fuzzer: %s\ninput:\n%.*s\n", what.c_str(),
               static_cast<int>(input.size()), input.data());
  std::abort();
}

void Check(std::string_view text) {
  absl::StatusOr<CompositeModel> m = ParseCompositeModel(text, "fuzz_model");
  if (!m.ok()) {
    const std::string_view msg(m.status().message().data(), m.status().message().size());
    if (m.status().code() != absl::StatusCode::kInvalidArgument || !msg.starts_with("fuzz_model")) {
      Fail("error without the file name: " + std::string(msg), text);
    }
    return;
  }
  uint64_t h = 1469598103934665603ull;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  PinnedRng rng(h);
  for (const CompositeFunction& fn : m->functions) {
    if (fn.correctly_rounded) continue;
    const FormatSpec& in = *fn.input;
    const uint64_t mask = in.width >= 64 ? ~uint64_t{0} : (uint64_t{1} << in.width) - 1;
    const uint64_t sign = SignBit(in);
    const uint64_t one = Convert(Float64(), in, 0x3FF0000000000000ull, OpEnv{}).bits;
    const uint64_t inf = Convert(Float64(), in, 0x7FF0000000000000ull, OpEnv{}).bits;
    const uint64_t specials[] = {0, sign, one, one | sign, inf, inf | sign, inf | (inf >> 1)};
    for (int i = 0; i < 16; ++i) {
      const uint64_t x = i < 7 ? specials[i] & mask : rng.Next() & mask;
      const Enclosure e = fn.Enclose(x);
      if (std::isnan(e.lo) || std::isnan(e.hi)) continue;
      if (e.lo > e.hi) Fail("unordered enclosure for " + fn.name, text);
      const double y = ToDouble(*fn.output, fn.Emulate(x));
      if (!(y >= e.lo && y <= e.hi)) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "%s(0x%llx) = %a outside [%a, %a]", fn.name.c_str(),
                      static_cast<unsigned long long>(x), y, e.lo, e.hi);
        Fail(buf, text);
      }
    }
  }
}

}  // namespace
}  // namespace fpconform::composite

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 16)) return 0;
  fpconform::composite::Check(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
