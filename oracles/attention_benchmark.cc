// Speed of the attention oracle (attention.h): one head of s x s x d (d_v = d), N(0, 1)
// bfloat16 inputs, default scale 1/sqrt(d), every output element correctly rounded (rne) and the
// row LSE in float32; 2 threads. The counters give the rows that needed the MPFR method.
//   attention_benchmark --benchmark_filter=BM_Attention/4096
// The target shape (B = 1, H = 8, S = 4096, D = 128) is 8 heads of BM_Attention/4096/128.
#include <benchmark/benchmark.h>

#include <vector>

#include "cases/pinned_random.h"
#include "formats/format_spec.h"
#include "oracles/attention.h"
#include "oracles/attention_test_support.h"

namespace fpconform {
namespace {

void Run(benchmark::State& state, const FormatSpec& out, bool causal) {
  const int64_t s = state.range(0), d = state.range(1);
  PinnedRng rng(2026);
  std::vector<double> q(static_cast<size_t>(s * d)), k(q.size()), v(q.size());
  for (double& x : q) x = ToBf16(rng.Normal());
  for (double& x : k) x = ToBf16(rng.Normal());
  for (double& x : v) x = ToBf16(rng.Normal());
  AttentionProblem p{.s_q = s, .s_k = s, .d = d, .d_v = d, .q = q, .k = k, .v = v};
  p.causal = causal;
  std::vector<uint64_t> bits(static_cast<size_t>(s * d)), lse(static_cast<size_t>(s));
  AttentionOutputs o;
  o.out = &out;
  o.bits = bits;
  o.lse_format = &Float32();
  o.lse_bits = lse;
  AttentionStats st;
  for (auto _ : state) {
    st = AttentionStats{};
    if (!AttentionRows(p, 0, s, o, &st, 2).ok()) state.SkipWithError("AttentionRows failed");
    benchmark::DoNotOptimize(bits.data());
  }
  state.counters["mpfr_rows"] = static_cast<double>(st.mpfr_rows);
  state.counters["fallback_elems"] = static_cast<double>(st.fallback);
  state.counters["elements"] = static_cast<double>(s * d);
}

void BM_Attention(benchmark::State& state) { Run(state, BFloat16(), false); }
void BM_AttentionF32Out(benchmark::State& state) { Run(state, Float32(), false); }
void BM_AttentionCausal(benchmark::State& state) { Run(state, BFloat16(), true); }

BENCHMARK(BM_Attention)->Args({256, 128})->Args({1024, 128})->Args({4096, 128})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_AttentionF32Out)->Args({1024, 128})->Args({4096, 128})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_AttentionCausal)->Args({4096, 128})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MeasureProcessCPUTime();

}  // namespace
}  // namespace fpconform

BENCHMARK_MAIN();
