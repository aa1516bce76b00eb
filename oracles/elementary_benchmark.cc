// Speed of the elementwise oracles (elementary.h): ElementaryRoundBatch over all 2^16 bfloat16
// inputs (bfloat16 out) and over 2^24 float32 inputs (float32 out: 3 N(0, 1) values, or random bit
// patterns), rne, 2 threads; the counters report the fallbacks to MPFR.
//   build/oracles/elementary_benchmark --benchmark_min_time=0.01   (one iteration each)
#include <cstdint>
#include <cstring>
#include <vector>

#include <benchmark/benchmark.h>

#include "cases/pinned_random.h"
#include "formats/format_spec.h"
#include "oracles/elementary.h"

namespace fpconform {
namespace {

const std::vector<uint64_t>& Bf16All() {
  static const std::vector<uint64_t> v = [] {
    std::vector<uint64_t> b(1 << 16);
    for (uint64_t i = 0; i < b.size(); ++i) b[i] = i;
    return b;
  }();
  return v;
}

const std::vector<uint64_t>& F32Inputs(bool random_bits) {
  static std::vector<uint64_t> normal, bits;
  std::vector<uint64_t>& v = random_bits ? bits : normal;
  if (v.empty()) {
    PinnedRng rng(DeriveSeed(2026, {28, random_bits ? 1u : 0u}));
    v.resize(1 << 24);
    for (uint64_t& b : v) {
      if (random_bits) {
        b = rng.Next() & 0xFFFFFFFF;
      } else {
        const float f = static_cast<float>(3.0 * rng.Normal());
        uint32_t u;
        std::memcpy(&u, &f, 4);
        b = u;
      }
    }
  }
  return v;
}

void Run(benchmark::State& state, const FormatSpec& f, const std::vector<uint64_t>& in) {
  const ElementaryFn fn = AllElementaryFns()[static_cast<size_t>(state.range(0))];
  state.SetLabel(std::string(ElementaryFnName(fn)));
  std::vector<uint64_t> out(in.size());
  ElementaryStats st;
  for (auto _ : state) {
    st = ElementaryStats{};
    if (!ElementaryRoundBatch(fn, f, in, f, OpEnv{}, out, {}, &st, 2).ok()) {
      state.SkipWithError("ElementaryRoundBatch failed");
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["fallback"] = static_cast<double>(st.fallback);
  state.counters["special"] = static_cast<double>(st.special);
  state.counters["fast"] = static_cast<double>(st.fast);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(in.size()));
}

void BM_BFloat16All(benchmark::State& state) { Run(state, BFloat16(), Bf16All()); }
void BM_Float32Normal(benchmark::State& state) { Run(state, Float32(), F32Inputs(false)); }
void BM_Float32RandomBits(benchmark::State& state) { Run(state, Float32(), F32Inputs(true)); }

BENCHMARK(BM_BFloat16All)->DenseRange(0, 9)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Float32Normal)->DenseRange(0, 9)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Float32RandomBits)->DenseRange(0, 9)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace fpconform
