// Lines per second of the `fpconform calc` executor (RunCalc) on a realistic mix of cases:
// float32 add/mul/fma, FP8 ops and conversions, with comments and a few stochastic roundings.
// The protocol promises at least 2 million lines per second per core (calc_case.h).
//
//   build-cli/cases/calc_benchmark --benchmark_filter=BM_RunCalc
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

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

// The mix, one line of each in turn: the op and its formats, then one operand per letter of
// `operands` (f: a float32 pattern, 8: an 8-bit pattern, r: the 16 random bits of a stochastic
// rounding), then `end`.
struct MixLine {
  const char* op;
  const char* operands;
  const char* end;
};
constexpr MixLine kMix[] = {
    {"add float32 rne", "ff", "\n"},
    {"mul float32 rne", "ff", "\n"},
    {"fma float32 rne", "fff", "\n"},
    {"add float8_e4m3fn rne", "88", "\n"},
    {"mul float8_e4m3fn:sat rne", "88", "\n"},
    {"mul float8_e5m2 rtz", "88", "\n"},
    {"cvt float32 float8_e4m3fn:sat rne", "f", "\n"},
    {"cvt float32 bfloat16 rne", "f", "\n"},
    {"add float32 sr16", "ffr", "  # stochastic\n"},
    {"cvt float32 int8 rne", "f", "\r\n"},
};

std::string MakeMix(int lines) {
  PinnedRng s(42);
  std::string text = "# fpconform calc benchmark mix\n";
  for (int i = 0; i < lines; ++i) {
    const MixLine& line = kMix[i % std::size(kMix)];
    text += line.op;
    for (const char operand : std::string_view(line.operands)) {
      text += ' ';
      text += operand == 'f'   ? F32(s)
              : operand == '8' ? F8(s)
                               : absl::StrCat("0x", absl::Hex(s.Next() & 0xffff));
    }
    text += line.end;
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
