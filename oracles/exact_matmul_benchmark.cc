// Timing of the exact matmul oracle: D = A * B for 512 x 512 float32 matrices, each D[i][j] the
// exact dot product of row i of A and column j of B (ExactAccumulator::AddDot, exact_sum.h),
// rounded once to float32 under RNE. Work is split by rows over std::threads (2 by default: the
// build machines have 2 cores); every thread owns one accumulator and Reset()s it per output.
//
// Inputs are pinned (SplitMix64 of (seed, index)): float32 values with random sign, exponent in
// [-8, 8) and full random significands, so every dot mixes magnitudes and cancels.
//
// Reports wall time per matmul (UseRealTime; CPU time is the main thread's, ~0) plus counters:
// terms/s and dots/s. The checksum counter (of all 262,144 results) must be equal for every
// thread count: the result does not depend on the split.
//
// Run: build-err/oracles/exact_matmul_benchmark --benchmark_filter=ExactMatmul
#include <cstdint>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "oracles/exact_sum.h"

namespace fpconform {
namespace {

constexpr int kN = 512;

uint64_t SplitMix64(uint64_t x) {
  uint64_t z = x + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// float32 bits: sign random, unbiased exponent in [-8, 8), random 23-bit fraction.
uint64_t PinnedFloat32(uint64_t seed, uint64_t index) {
  const uint64_t r = SplitMix64(seed * 0x100000001b3ULL ^ index);
  const uint64_t sign = (r >> 63) & 1;
  const uint64_t exponent = 127 - 8 + ((r >> 32) & 15);
  return (sign << 31) | (exponent << 23) | (r & 0x7FFFFF);
}

struct Matrices {
  std::vector<uint64_t> a;   // Row-major kN x kN.
  std::vector<uint64_t> bt;  // B transposed (row j = column j of B), so a column is contiguous.
  Matrices() : a(kN * kN), bt(kN * kN) {
    for (size_t i = 0; i < a.size(); ++i) a[i] = PinnedFloat32(1, i);
    for (size_t i = 0; i < bt.size(); ++i) bt[i] = PinnedFloat32(2, i);
  }
};

const Matrices& Inputs() {
  static const Matrices* m = new Matrices;
  return *m;
}

// Rows [row_begin, row_end) of D.
void MatmulRows(const Matrices& m, int row_begin, int row_end, std::vector<uint32_t>& d) {
  ExactAccumulator acc;
  const OpEnv env;  // RNE.
  for (int i = row_begin; i < row_end; ++i) {
    std::span<const uint64_t> row(&m.a[static_cast<size_t>(i) * kN], kN);
    for (int j = 0; j < kN; ++j) {
      acc.Reset();
      acc.AddDot(Float32(), row, Float32(),
                 std::span<const uint64_t>(&m.bt[static_cast<size_t>(j) * kN], kN));
      d[static_cast<size_t>(i) * kN + j] = static_cast<uint32_t>(acc.Round(Float32(), env).bits);
    }
  }
}

void ExactMatmul(std::vector<uint32_t>& d, int threads) {
  const Matrices& m = Inputs();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    const int begin = kN * t / threads;
    const int end = kN * (t + 1) / threads;
    pool.emplace_back([&m, begin, end, &d] { MatmulRows(m, begin, end, d); });
  }
  for (std::thread& th : pool) th.join();
}

void BM_ExactMatmul512Float32(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  std::vector<uint32_t> d(kN * kN);
  Inputs();  // Build the inputs outside the timed region.
  for (auto _ : state) {
    ExactMatmul(d, threads);
    benchmark::DoNotOptimize(d.data());
  }
  uint64_t checksum = 0;
  for (uint32_t v : d) checksum = checksum * 31 + v;
  const double terms = double{kN} * kN * kN;
  state.counters["threads"] = threads;
  state.counters["checksum_lo32"] = static_cast<double>(checksum & 0xFFFFFFFF);
  state.counters["terms_per_s"] =
      benchmark::Counter(terms, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["dots_per_s"] =
      benchmark::Counter(double{kN} * kN, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ExactMatmul512Float32)
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kSecond)
    ->Iterations(2);

}  // namespace
}  // namespace fpconform
