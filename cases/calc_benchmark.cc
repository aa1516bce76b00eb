// Lines per second of the `fpconform calc` executor (RunCalc) on a realistic mix of cases:
// float32 add/mul/fma, FP8 ops and conversions, with comments and a few stochastic roundings.
// The protocol promises at least 2 million lines per second per core (calc_case.h).
//
//   build-cli/cases/calc_benchmark --benchmark_filter=BM_RunCalc
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "cases/calc_case.h"
#include "cases/pinned_random.h"

namespace fpconform {
namespace {

// Finite float32 operands around 1 (exponents 2^-8 .. 2^8), random fractions and signs.
std::string F32(PinnedRng& s) {
  uint64_t r = s.Next();
  uint64_t bits = ((r & 1) << 31) | ((119 + (r >> 1) % 17) << 23) | ((r >> 8) & 0x7fffff);
  return absl::StrCat("0x", absl::Hex(bits, absl::kZeroPad8));
}
std::string F8(PinnedRng& s) {
  return absl::StrCat("0x", absl::Hex(s.Next() & 0xff, absl::kZeroPad2));
}

std::string MakeMix(int lines) {
  PinnedRng s(42);
  std::string text = "# fpconform calc benchmark mix\n";
  for (int i = 0; i < lines; ++i) {
    switch (i % 10) {
      case 0:
        absl::StrAppend(&text, "add float32 rne ", F32(s), " ", F32(s), "\n");
        break;
      case 1:
        absl::StrAppend(&text, "mul float32 rne ", F32(s), " ", F32(s), "\n");
        break;
      case 2:
        absl::StrAppend(&text, "fma float32 rne ", F32(s), " ", F32(s), " ", F32(s), "\n");
        break;
      case 3:
        absl::StrAppend(&text, "add float8_e4m3fn rne ", F8(s), " ", F8(s), "\n");
        break;
      case 4:
        absl::StrAppend(&text, "mul float8_e4m3fn:sat rne ", F8(s), " ", F8(s), "\n");
        break;
      case 5:
        absl::StrAppend(&text, "mul float8_e5m2 rtz ", F8(s), " ", F8(s), "\n");
        break;
      case 6:
        absl::StrAppend(&text, "cvt float32 float8_e4m3fn:sat rne ", F32(s), "\n");
        break;
      case 7:
        absl::StrAppend(&text, "cvt float32 bfloat16 rne ", F32(s), "\n");
        break;
      case 8:
        absl::StrAppend(&text, "add float32 sr16 ", F32(s), " ", F32(s), " 0x",
                        absl::Hex(s.Next() & 0xffff), "  # stochastic\n");
        break;
      case 9:
        absl::StrAppend(&text, "cvt float32 int8 rne ", F32(s), "\r\n");
        break;
    }
  }
  return text;
}

void BM_RunCalc(benchmark::State& state) {
  const std::string input = MakeMix(static_cast<int>(state.range(0)));
  std::string out, err;
  out.reserve(input.size());
  int64_t lines = 0;
  for (auto _ : state) {
    out.clear();
    err.clear();
    CalcStats s = RunCalc(input, out, err);
    lines += s.lines;
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(lines);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * input.size()));
}
BENCHMARK(BM_RunCalc)->Arg(1 << 16);

// The parse/print overhead alone: exact integer conversions that do almost no arithmetic.
void BM_RunCalcParseOnly(benchmark::State& state) {
  std::string input;
  for (int i = 0; i < (1 << 16); ++i) {
    absl::StrAppend(&input, "cvt int8 int32 rne 0x", absl::Hex(i & 0x7f, absl::kZeroPad2), "\n");
  }
  std::string out, err;
  int64_t lines = 0;
  for (auto _ : state) {
    out.clear();
    CalcStats s = RunCalc(input, out, err);
    lines += s.lines;
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(lines);
}
BENCHMARK(BM_RunCalcParseOnly);

}  // namespace
}  // namespace fpconform
