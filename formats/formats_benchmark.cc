// Throughput of the fast conversions and FP8 op tables against the general path, and of the
// general path's float32 Add and Mul. Single thread, arrays of 4096 elements (in L1/L2).
// Items/s is values converted (or operations) per second.
//
//   ./build-perf/formats/formats_benchmark --benchmark_min_time=0.5
#include <cstdint>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "cases/pinned_random.h"
#include "formats/fast_convert.h"
#include "formats/fp8_tables.h"
#include "formats/ops.h"

namespace fpconform {
namespace {

constexpr size_t kN = 4096;

// float32 patterns with random sign and fraction and exponents in [2^-24, 2^24): the range of
// activations and gradients, crossing the FP8 overflow and subnormal boundaries.
std::vector<uint32_t> RandomF32(uint64_t seed) {
  std::vector<uint32_t> v(kN);
  for (size_t i = 0; i < kN; ++i) {
    const uint64_t r = SplitMix64At(seed, i);
    const uint32_t e = 127 - 24 + static_cast<uint32_t>((r >> 32) % 48);
    v[i] = static_cast<uint32_t>(r >> 63) << 31 | e << 23 | static_cast<uint32_t>(r & 0x7FFFFF);
  }
  return v;
}

std::vector<uint8_t> RandomBytes(uint64_t seed) {
  std::vector<uint8_t> v(kN);
  for (size_t i = 0; i < kN; ++i) v[i] = static_cast<uint8_t>(SplitMix64At(seed, i));
  return v;
}

const char* IsaArg(int64_t isa) { return isa == 0 ? "" : isa == 1 ? "portable" : "avx2"; }

// Selects the fast-conversion path of `isa` (IsaArg) for the benchmark; false, with the
// benchmark skipped, where this CPU cannot run it.
bool SelectIsa(benchmark::State& state, int64_t isa) {
  if (SetFastConvertIsaForTesting(IsaArg(isa))) return true;
  state.SkipWithError("path not available on this CPU");
  return false;
}

// Times `pass` (one pass over the kN values, writing to `out`); counts the values as items.
template <typename Pass>
void TimePasses(benchmark::State& state, const void* out, Pass pass) {
  for (auto _ : state) {
    pass();
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kN);
}

// Arg: 0 = run-time dispatch, 1 = portable, 2 = AVX2.
void BM_F32ToBF16_Fast(benchmark::State& state) {
  if (!SelectIsa(state, state.range(0))) return;
  const std::vector<uint32_t> in = RandomF32(1);
  std::vector<uint16_t> out(kN);
  TimePasses(state, out.data(), [&] { ConvertF32ToBF16(in, out); });
  state.SetLabel(std::string(FastConvertIsa()));
  SetFastConvertIsaForTesting("");
}
BENCHMARK(BM_F32ToBF16_Fast)->Arg(0)->Arg(1)->Arg(2);

void BM_F32ToF16_Fast(benchmark::State& state) {
  if (!SelectIsa(state, state.range(0))) return;
  const std::vector<uint32_t> in = RandomF32(1);
  std::vector<uint16_t> out(kN);
  TimePasses(state, out.data(), [&] { ConvertF32ToF16(in, out); });
  state.SetLabel(FastF16UsesF16c() ? "f16c" : std::string(FastConvertIsa()));
  SetFastConvertIsaForTesting("");
}
BENCHMARK(BM_F32ToF16_Fast)->Arg(0)->Arg(1)->Arg(2);

// Args: format (0 = float8_e4m3fn, 1 = float8_e5m2), sat, path.
void BM_F32ToFp8_Fast(benchmark::State& state) {
  const FormatSpec& to = state.range(0) == 0 ? Float8E4M3FN() : Float8E5M2();
  const bool sat = state.range(1) != 0;
  if (!SelectIsa(state, state.range(2))) return;
  const std::vector<uint32_t> in = RandomF32(2);
  std::vector<uint8_t> out(kN);
  TimePasses(state, out.data(),
             [&] { benchmark::DoNotOptimize(ConvertF32ToFp8(to, sat, in, out).ok()); });
  state.SetLabel(std::string(to.name) + (sat ? " sat " : " ") + std::string(FastConvertIsa()));
  SetFastConvertIsaForTesting("");
}
BENCHMARK(BM_F32ToFp8_Fast)->ArgsProduct({{0, 1}, {0, 1}, {0}})->Args({0, 0, 1})->Args({0, 0, 2});

// The general path, one Convert per value. Arg: 0 = bfloat16, 1 = float16, 2 = e4m3fn,
// 3 = e4m3fn sat, 4 = e5m2, 5 = e5m2 sat.
void BM_F32Convert_General(benchmark::State& state) {
  const int which = static_cast<int>(state.range(0));
  const FormatSpec& to = which == 0   ? BFloat16()
                         : which == 1 ? Float16()
                         : which <= 3 ? Float8E4M3FN()
                                      : Float8E5M2();
  OpEnv env;
  env.saturate = which == 3 || which == 5;
  const std::vector<uint32_t> in = RandomF32(2);
  std::vector<uint16_t> out(kN);
  TimePasses(state, out.data(), [&] {
    for (size_t i = 0; i < kN; ++i) {
      out[i] = static_cast<uint16_t>(Convert(Float32(), to, in[i], env).bits);
    }
  });
  state.SetLabel(std::string(to.name) + (env.saturate ? " sat" : ""));
}
BENCHMARK(BM_F32Convert_General)->DenseRange(0, 5);

// Args: op (0 add, 1 sub, 2 mul, 3 div), with flags (0/1). float8_e4m3fn, rne.
void BM_Fp8Table(benchmark::State& state) {
  const auto op = static_cast<BinaryOp8>(state.range(0));
  const bool flags = state.range(1) != 0;
  const Fp8OpTable* table = *GetFp8OpTable(Float8E4M3FN(), op, OpEnv{});
  const std::vector<uint8_t> a = RandomBytes(3), b = RandomBytes(4);
  std::vector<uint8_t> out(kN);
  TimePasses(state, out.data(), [&] {
    if (flags) {
      benchmark::DoNotOptimize(ApplyBinaryOp8(*table, a, b, out));
    } else {
      ApplyBinaryOp8NoFlags(*table, a, b, out);
    }
  });
  state.SetLabel(flags ? "e4m3fn with flags" : "e4m3fn");
}
BENCHMARK(BM_Fp8Table)->ArgsProduct({{0, 2}, {0, 1}});

// The same operation through the general path (what the tables replace).
void BM_Fp8_General(benchmark::State& state) {
  const bool mul = state.range(0) != 0;
  const std::vector<uint8_t> a = RandomBytes(3), b = RandomBytes(4);
  std::vector<uint8_t> out(kN);
  const OpEnv env;
  TimePasses(state, out.data(), [&] {
    for (size_t i = 0; i < kN; ++i) {
      out[i] = static_cast<uint8_t>(
          (mul ? Mul(Float8E4M3FN(), a[i], b[i], env) : Add(Float8E4M3FN(), a[i], b[i], env))
              .bits);
    }
  });
  state.SetLabel(mul ? "e4m3fn mul" : "e4m3fn add");
}
BENCHMARK(BM_Fp8_General)->Arg(0)->Arg(1);

// The general path on float32: Arg 0 = Add, 1 = Mul, 2 = Sub, 3 = Div, 4 = Fma.
void BM_F32Op_General(benchmark::State& state) {
  const int op = static_cast<int>(state.range(0));
  const std::vector<uint32_t> a = RandomF32(5), b = RandomF32(6), c = RandomF32(7);
  std::vector<uint32_t> out(kN);
  const OpEnv env;
  const FormatSpec& f = Float32();
  TimePasses(state, out.data(), [&] {
    for (size_t i = 0; i < kN; ++i) {
      OpResult r = op == 0   ? Add(f, a[i], b[i], env)
                   : op == 1 ? Mul(f, a[i], b[i], env)
                   : op == 2 ? Sub(f, a[i], b[i], env)
                   : op == 3 ? Div(f, a[i], b[i], env)
                             : Fma(f, a[i], b[i], c[i], env);
      out[i] = static_cast<uint32_t>(r.bits) ^ r.flags;
    }
  });
  static const char* const kNames[] = {"add", "mul", "sub", "div", "fma"};
  state.SetLabel(kNames[op]);
}
BENCHMARK(BM_F32Op_General)->DenseRange(0, 4);

}  // namespace
}  // namespace fpconform
