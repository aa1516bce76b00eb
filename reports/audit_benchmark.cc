// Audit speed (audit.h): an N x N x N bfloat16 matmul audited against one platform (exact value,
// emulation and bound for every element), the output being the platform's own (every element
// identical) or another order's (every element judged against the bound). The targets:
// 1024^3 within 5 s and 4096^3 within 3 minutes on a 2-core machine.
//   build/reports/audit_benchmark --benchmark_filter=1024
#include <cstring>
#include <string>
#include <vector>

#include "accumulation/evaluate.h"
#include "accumulation/model_catalog.h"
#include "benchmark/benchmark.h"
#include "cases/pinned_random.h"
#include "formats/ops.h"
#include "reports/audit.h"

namespace fpconform::reports {
namespace {

Tensor RandomBf16(int64_t rows, int64_t cols, uint64_t seed) {
  Tensor t = *MakeTensor("bfloat16", {rows, cols});
  PinnedRng rng(seed);
  for (int64_t i = 0; i < t.size(); ++i) {
    const double v = rng.Normal();
    uint64_t d;
    std::memcpy(&d, &v, sizeof d);
    t.SetBits(i, Convert(Float64(), BFloat16(), d, OpEnv{}).bits);
  }
  return t;
}

// A tensor's bits.
std::vector<uint64_t> Bits(const Tensor& t) {
  std::vector<uint64_t> v(static_cast<size_t>(t.size()));
  t.CopyBits(0, v);
  return v;
}

// The emulation that makes a benchmark's output: values only, on `threads` threads.
EvalOptions MakingOptions(int threads) {
  EvalOptions eo;
  eo.want_bound = false;
  eo.threads = threads;
  return eo;
}

// The timed loop: A @ B audited against `platform` with out = d (float32, n x n) and the given
// scales; every element must be explained (and identical when `identical`).
void TimeAudit(benchmark::State& state, const Tensor& a, const Tensor& b, const std::vector<uint64_t>& d,
               int64_t n, const std::string& platform, int threads, bool identical,
               const Tensor* scale_a = nullptr, const Tensor* scale_b = nullptr) {
  Tensor out = *MakeTensor("float32", {n, n});
  for (int64_t i = 0; i < out.size(); ++i) out.SetBits(i, d[static_cast<size_t>(i)]);
  MatmulAuditInput in;
  in.a = &a;
  in.b = &b;
  in.out = &out;
  in.scale_a = scale_a;
  in.scale_b = scale_b;
  AuditOptions o;
  o.platforms = {platform};
  o.models_dir = FPCONFORM_MODELS_SOURCE_DIR;
  o.threads = threads;
  o.recommend = false;
  for (auto _ : state) {
    absl::StatusOr<AuditResult> r = AuditMatmul(in, o);
    if (!r.ok() || r->counts[3] != 0 || (identical && r->counts[0] != n * n)) state.SkipWithError("audit failed");
    benchmark::DoNotOptimize(r);
  }
  state.counters["elements/s"] = benchmark::Counter(static_cast<double>(n * n), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_AuditMatmul(benchmark::State& state) {
  const int64_t n = state.range(0);
  const bool other_order = state.range(1) != 0;
  const int threads = static_cast<int>(state.range(2));
  ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  const Model& made_by = *catalog.Find(other_order ? "trainium2-bf16-pairwise" : "trainium2-bf16");
  const Tensor a = RandomBf16(n, n, 1), b = RandomBf16(n, n, 2);
  const std::vector<uint64_t> av = Bits(a), bv = Bits(b);
  std::vector<uint64_t> d(static_cast<size_t>(n * n));
  const EvalOptions eo = MakingOptions(threads);
  if (!EvaluateMatmul(made_by, static_cast<int>(n), static_cast<int>(n), static_cast<int>(n), av,
                      Layout::kRowMajor, bv, Layout::kRowMajor, {}, d, {}, eo).ok()) {
    state.SkipWithError("emulation failed");
    return;
  }
  TimeAudit(state, a, b, d, n, "trainium2-bf16", threads, /*identical=*/false);
}
// Args: N, output made in another order (0/1), threads.
BENCHMARK(BM_AuditMatmul)->Args({256, 0, 1})->Args({1024, 0, 2})->Args({1024, 1, 2})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_AuditMatmul)->Name("BM_AuditMatmul_4096")->Args({4096, 0, 2})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// FP8 e4m3 N x N x N against the DeepGEMM preset with per-block scales (one per row and 128 K of
// A, per 128 K and column of B) beside the same audit without scales (nvidia-h100-fp8e4m3-
// promote128, the same chain): what the block scales cost a user (generic scaled promotions, and
// exact values on the scaled products instead of the certified float64 GEMM).
//   build/reports/audit_benchmark --benchmark_filter=Fp8
void BM_AuditFp8Matmul(benchmark::State& state) {
  const int64_t n = state.range(0);
  const bool block_scaled = state.range(1) != 0;
  const int threads = static_cast<int>(state.range(2));
  ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  const Model& model = *catalog.Find(block_scaled ? "nvidia-h100-fp8e4m3-deepgemm" : "nvidia-h100-fp8e4m3-promote128");
  Tensor a = *MakeTensor("float8_e4m3fn", {n, n}), b = *MakeTensor("float8_e4m3fn", {n, n});
  PinnedRng rng(3);
  for (Tensor* t : {&a, &b}) {
    for (int64_t i = 0; i < t->size(); ++i) t->SetBits(i, DoubleToBits(Float8E4M3FN(), 8 * rng.Normal()));
  }
  const int64_t kb = (n + 127) / 128;
  Tensor sa = *MakeTensor("float32", {n, kb}), sb = *MakeTensor("float32", {kb, n});
  std::vector<double> sav(static_cast<size_t>(n * kb)), sbt(static_cast<size_t>(n * kb));
  for (int64_t i = 0; i < sa.size(); ++i) {
    sa.SetBits(i, DoubleToBits(Float32(), 0.01 + 0.1 * rng.Uniform01()));
    sav[static_cast<size_t>(i)] = ToDouble(Float32(), sa.Bits(i));
  }
  for (int64_t blk = 0; blk < kb; ++blk) {
    for (int64_t j = 0; j < n; ++j) {
      sb.SetBits(blk * n + j, DoubleToBits(Float32(), 0.5 + rng.Uniform01()));
      sbt[static_cast<size_t>(j * kb + blk)] = ToDouble(Float32(), sb.Bits(blk * n + j));
    }
  }
  const std::vector<uint64_t> av = Bits(a), bv = Bits(b);
  std::vector<uint64_t> d(static_cast<size_t>(n * n));
  const EvalOptions eo = MakingOptions(threads);
  const int ni = static_cast<int>(n);
  const absl::Status made =
      block_scaled ? EvaluateBlockScaledMatmul(model, ni, ni, ni, av, Layout::kRowMajor, bv, Layout::kRowMajor, sav,
                                               sbt, {}, d, {}, eo)
                   : EvaluateMatmul(model, ni, ni, ni, av, Layout::kRowMajor, bv, Layout::kRowMajor, {}, d, {}, eo);
  if (!made.ok()) {
    state.SkipWithError("emulation failed");
    return;
  }
  TimeAudit(state, a, b, d, n, model.name, threads, /*identical=*/true, block_scaled ? &sa : nullptr,
            block_scaled ? &sb : nullptr);
}
// Args: N, block scales (0/1), threads.
BENCHMARK(BM_AuditFp8Matmul)->Args({512, 0, 2})->Args({512, 1, 2})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace
}  // namespace fpconform::reports
