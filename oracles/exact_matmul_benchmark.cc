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
// The N^3 bfloat16 group (issue 11 §3, one run compares them; N = 1024 by default, 4096 under
// --benchmark_filter=/4096/): inputs N(0, 1) rounded to bfloat16 (pinned, as the audit
// benchmark's), output the exact float32 result (RNE) of every element:
//   BM_Float64Gemm        the anchor: GemmNt (certified_matmul.h) of the same N^3 shape on the
//                         inputs as doubles (a plain float64 GEMM, blocked and packed, same kernel);
//   BM_CertifiedMatmul    CertifiedMatmulRound: split + the error-free GEMM + corrections +
//                         one rounding per element (fallbacks counted);
//   BM_ExactMatmulBf16    the accumulator alone: ExactDot per element (AddDot + Round).
// ratio_to_gemm is not computed here: divide the Time columns of the same run. checksum_lo32 of
// CertifiedMatmul and ExactMatmulBf16 must be equal (same bits).
//
// Run: build/oracles/exact_matmul_benchmark --benchmark_filter=ExactMatmul
//      build/oracles/exact_matmul_benchmark --benchmark_filter='/1024/'
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "cases/pinned_random.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "formats/ops.h"
#include "oracles/certified_matmul.h"
#include "oracles/exact_sum.h"

namespace fpconform {
namespace {

constexpr int kN = 512;

// float32 bits: sign random, unbiased exponent in [-8, 8), random 23-bit fraction.
uint64_t PinnedFloat32(uint64_t seed, uint64_t index) {
  const uint64_t r = SplitMix64At(seed * 0x100000001b3ULL ^ index, 0);
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

// D = A B^T exactly, each element rounded once to float32 (RNE): a and bt hold n x n values of
// `in` (row-major; bt is B transposed); rows split over `threads` threads, one accumulator each.
void ExactMatmul(const FormatSpec& in, std::span<const uint64_t> a, std::span<const uint64_t> bt,
                 int64_t n, int threads, std::vector<uint64_t>& d) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ExactAccumulator acc;
      const OpEnv env;  // RNE.
      for (int64_t i = n * t / threads; i < n * (t + 1) / threads; ++i) {
        const std::span<const uint64_t> row = a.subspan(static_cast<size_t>(i * n), static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j) {
          acc.Reset();
          acc.AddDot(in, row, in, bt.subspan(static_cast<size_t>(j * n), static_cast<size_t>(n)));
          d[static_cast<size_t>(i * n + j)] = acc.Round(Float32(), env).bits;
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
}

// The checksum_lo32 counter of the results d (float32 bits): equal for every benchmark of the
// same product.
void Checksum(benchmark::State& state, const std::vector<uint64_t>& d) {
  uint64_t checksum = 0;
  for (uint64_t v : d) checksum = checksum * 31 + v;
  state.counters["checksum_lo32"] = static_cast<double>(checksum & 0xFFFFFFFF);
}

// Times ExactMatmul of A B^T (n x n values of `in`, bt is B transposed); counters: the checksum
// and the threads.
void TimeExactMatmul(benchmark::State& state, const FormatSpec& in, std::span<const uint64_t> a,
                     std::span<const uint64_t> bt, int64_t n, int threads) {
  std::vector<uint64_t> d(static_cast<size_t>(n * n));
  for (auto _ : state) {
    ExactMatmul(in, a, bt, n, threads, d);
    benchmark::DoNotOptimize(d.data());
  }
  Checksum(state, d);
  state.counters["threads"] = threads;
}

// Times GemmNt of A B^T (n x n doubles, bt is B transposed); counter: the threads.
void TimeGemm(benchmark::State& state, const std::vector<double>& a, const std::vector<double>& bt, int64_t n,
              int threads) {
  std::vector<double> c(static_cast<size_t>(n * n));
  for (auto _ : state) {
    GemmNt(n, n, n, a.data(), bt.data(), c.data(), n, threads);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["threads"] = threads;
}

void BM_ExactMatmul512Float32(benchmark::State& state) {
  const Matrices& m = Inputs();  // Built outside the timed region.
  TimeExactMatmul(state, Float32(), m.a, m.bt, kN, static_cast<int>(state.range(0)));
  const double terms = double{kN} * kN * kN;
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

// Times CertifiedMatmulRound of A B^T (n x n values of `in`, bt is B transposed) to float32
// (RNE); counters: the checksum, the threads and the oracle's statistics.
void TimeCertifiedMatmul(benchmark::State& state, const FormatSpec& in, std::span<const uint64_t> a,
                         std::span<const uint64_t> bt, int64_t n, int threads) {
  std::vector<uint64_t> d;
  CertifiedStats st;
  for (auto _ : state) {
    st = CertifiedStats{};
    d = CertifiedMatmulRound(in, a, in, bt, n, n, n, Float32(), OpEnv{}, threads, &st);
    benchmark::DoNotOptimize(d.data());
  }
  Checksum(state, d);
  state.counters["threads"] = threads;
  state.counters["exact"] = static_cast<double>(st.exact);
  state.counters["enclosed"] = static_cast<double>(st.enclosed);
  state.counters["corrected"] = static_cast<double>(st.corrected);
  state.counters["fallback"] = static_cast<double>(st.fallback);
}

// The same 512^3 float32 product by the certified oracle (two split levels: four error-free
// GEMMs) and the float64 GEMM anchor on the same values. checksum_lo32 must equal
// BM_ExactMatmul512Float32's.
void BM_CertifiedMatmul512Float32(benchmark::State& state) {
  const Matrices& m = Inputs();
  TimeCertifiedMatmul(state, Float32(), m.a, m.bt, kN, static_cast<int>(state.range(0)));
}
BENCHMARK(BM_CertifiedMatmul512Float32)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_Float64Gemm512(benchmark::State& state) {
  const Matrices& m = Inputs();
  std::vector<double> a(m.a.size()), bt(m.bt.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(m.a[i])));
  for (size_t i = 0; i < bt.size(); ++i) bt[i] = static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(m.bt[i])));
  TimeGemm(state, a, bt, kN, static_cast<int>(state.range(0)));
}
BENCHMARK(BM_Float64Gemm512)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(3);

// ---- The bfloat16 N^3 group ----

struct Bf16Matrices {
  int64_t n;
  std::vector<uint64_t> a, bt;   // Bits: A row-major, B transposed (column j contiguous).
  std::vector<double> ad, btd;   // The same values as doubles (the anchor's inputs).
  explicit Bf16Matrices(int64_t size) : n(size) {
    const size_t count = static_cast<size_t>(n * n);
    a.resize(count);
    bt.resize(count);
    ad.resize(count);
    btd.resize(count);
    auto normal = [](uint64_t seed, uint64_t i) {  // Box-Muller on two pinned uniforms.
      const double u1 = (static_cast<double>(SplitMix64At(seed * 0x100000001b3ULL ^ (2 * i), 0) >> 11) + 1) * 0x1p-53;
      const double u2 = static_cast<double>(SplitMix64At(seed * 0x100000001b3ULL ^ (2 * i + 1), 0) >> 11) * 0x1p-53;
      return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    };
    for (size_t i = 0; i < count; ++i) {
      for (int side = 0; side < 2; ++side) {
        const double v = normal(static_cast<uint64_t>(side + 3), i);
        uint64_t d;
        std::memcpy(&d, &v, sizeof d);
        const uint64_t bits = Convert(Float64(), BFloat16(), d, OpEnv{}).bits;
        (side == 0 ? a : bt)[i] = bits;
        const uint64_t wide = Convert(BFloat16(), Float64(), bits, OpEnv{}).bits;  // Exact.
        double x;
        std::memcpy(&x, &wide, sizeof x);
        (side == 0 ? ad : btd)[i] = x;
      }
    }
  }
};

const Bf16Matrices& Bf16Inputs(int64_t n) {
  static std::vector<std::pair<int64_t, const Bf16Matrices*>> cache;
  for (const auto& [size, m] : cache) {
    if (size == n) return *m;
  }
  cache.emplace_back(n, new Bf16Matrices(n));
  return *cache.back().second;
}

// Args: N, threads.
void BM_Float64Gemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Bf16Matrices& m = Bf16Inputs(n);
  TimeGemm(state, m.ad, m.btd, n, static_cast<int>(state.range(1)));
  state.counters["flop_per_s"] = benchmark::Counter(2.0 * static_cast<double>(n * n) * static_cast<double>(n),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

void BM_CertifiedMatmul(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Bf16Matrices& m = Bf16Inputs(n);
  TimeCertifiedMatmul(state, BFloat16(), m.a, m.bt, n, static_cast<int>(state.range(1)));
}

void BM_ExactMatmulBf16(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Bf16Matrices& m = Bf16Inputs(n);
  TimeExactMatmul(state, BFloat16(), m.a, m.bt, n, static_cast<int>(state.range(1)));
}

// Interleaved so that load changes on a shared machine hit both sides alike.
BENCHMARK(BM_Float64Gemm)->Args({1024, 1})->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_CertifiedMatmul)->Args({1024, 1})->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Float64Gemm)->Args({1024, 2})->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_CertifiedMatmul)->Args({1024, 2})->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ExactMatmulBf16)->Args({1024, 2})->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Float64Gemm)->Args({4096, 2})->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_CertifiedMatmul)->Args({4096, 2})->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace fpconform
