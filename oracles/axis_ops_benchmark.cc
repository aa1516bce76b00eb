// Speed of the along-axis oracles (axis_ops.h): AxisRound over a rows x n float32 matrix of
// N(0, 1) values (float32 out, rne, 2 threads); counters: elements taken from the MPFR method.
//   build/oracles/axis_ops_benchmark --benchmark_min_time=0.01   (one iteration each)
#include <cstdint>
#include <cstring>
#include <vector>

#include <benchmark/benchmark.h>

#include "cases/pinned_random.h"
#include "formats/format_spec.h"
#include "oracles/axis_ops.h"

namespace fpconform {
namespace {

const std::vector<uint64_t>& Matrix(int64_t count) {
  static std::vector<uint64_t> v;
  if (static_cast<int64_t>(v.size()) != count) {
    v.resize(static_cast<size_t>(count));
    PinnedRng rng(DeriveSeed(2026, {28, 7}));
    for (uint64_t& b : v) {
      const float f = static_cast<float>(rng.Normal());
      uint32_t u;
      std::memcpy(&u, &f, 4);
      b = u;
    }
  }
  return v;
}

void BM_Axis(benchmark::State& state) {
  const AxisOp op = static_cast<AxisOp>(state.range(0));
  const int64_t rows = state.range(1), n = state.range(2);
  state.SetLabel(std::string(AxisOpName(op)));
  const std::vector<uint64_t>& x = Matrix(rows * n);
  std::vector<uint64_t> y(x.size());
  AxisStats st;
  for (auto _ : state) {
    st = AxisStats{};
    if (!AxisRound(op, Float32(), x, rows, n, AxisParams{}, Float32(), OpEnv{}, y, &st, 2).ok()) {
      state.SkipWithError("AxisRound failed");
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["fallback"] = static_cast<double>(st.fallback);
  state.counters["mpfr_rows"] = static_cast<double>(st.mpfr_rows);
  state.SetItemsProcessed(state.iterations() * rows * n);
}

BENCHMARK(BM_Axis)
    ->ArgsProduct({{0, 1, 2, 3}, {4096}, {4096}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace fpconform
