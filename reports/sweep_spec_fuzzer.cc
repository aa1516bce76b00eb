// libFuzzer harness for sweep files (sweep.h, ParseSweepSpec; the format is documented in
// reports/standard_sweep.toml): the input bytes are a TOML sweep file. A bad file must give
// InvalidArgument whose message starts with the file name, never a crash, a throw or an abort.
// A spec that parses is then narrowed as `fpconform tolerance` would narrow it (ApplyFilter):
// with no filter (must succeed and keep the spec), --quick, and filters naming its first dtype,
// first platform and a K, the way a user picks one row of the sweep.
//
//   build-fuzz/reports/sweep_spec_fuzzer reports/testdata/fuzz/sweep_spec_fuzzer
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/testing/fuzz_checks.h"
#include "reports/sweep.h"

namespace fpconform::reports {
namespace {

constexpr std::string_view kFile = "fuzz_sweep.toml";

[[noreturn]] void Fail(const std::string& what, std::string_view input) {
  fuzz::FailOnInput("sweep_spec_fuzzer", what, input);
}

}  // namespace
}  // namespace fpconform::reports

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fpconform::reports;
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  const absl::StatusOr<SweepSpec> spec = ParseSweepSpec(input, kFile);
  fpconform::fuzz::CheckFileError("sweep_spec_fuzzer", spec.status(), kFile, input);
  if (!spec.ok()) return 0;

  const absl::StatusOr<SweepSpec> all = ApplyFilter(*spec, SweepFilter{});
  if (!all.ok()) Fail("ApplyFilter with no filter failed: " + all.status().ToString(), input);
  if (all->ks != spec->ks || all->ops != spec->ops || all->dtypes.size() != spec->dtypes.size() ||
      all->cross.size() != spec->cross.size() ||
      all->quantize_formats != spec->quantize_formats) {
    Fail("ApplyFilter with no filter changed the spec", input);
  }

  SweepFilter quick;
  quick.quick = true;
  (void)ApplyFilter(*spec, quick);

  SweepFilter one;
  if (!spec->dtypes.empty()) {
    const DtypeSpec& d = spec->dtypes.front();
    one.dtypes = {d.name};
    if (!d.matmul.empty()) {
      one.platforms = {d.matmul.front()};
    } else if (!d.sum.empty()) {
      one.platforms = {d.sum.front()};
    }
  } else if (!spec->quantize_formats.empty()) {
    one.dtypes = {spec->quantize_formats.front()};
  }
  if (!spec->ks.empty()) one.ks = {spec->ks.back()};
  one.samples = 3;
  one.seed = 7;
  const absl::StatusOr<SweepSpec> narrowed = ApplyFilter(*spec, one);
  if (!narrowed.ok()) {
    Fail("ApplyFilter rejected names taken from the spec: " + narrowed.status().ToString(), input);
  }
  return 0;
}
