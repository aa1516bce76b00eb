// Audit speed (audit.h): an N x N x N bfloat16 matmul audited against one platform (exact value,
// emulation and bound for every element), the output being the platform's own (every element
// identical) or another order's (every element judged against the bound). The targets:
// 1024^3 within 5 s and 4096^3 within 3 minutes on a 2-core machine.
//   build/reports/audit_benchmark --benchmark_filter=1024
#include <cstring>

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

void BM_AuditMatmul(benchmark::State& state) {
  const int64_t n = state.range(0);
  const bool other_order = state.range(1) != 0;
  const int threads = static_cast<int>(state.range(2));
  ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  const Model& made_by = *catalog.Find(other_order ? "trainium2-bf16-pairwise" : "trainium2-bf16");
  const Tensor a = RandomBf16(n, n, 1), b = RandomBf16(n, n, 2);
  std::vector<uint64_t> av(static_cast<size_t>(a.size())), bv(static_cast<size_t>(b.size())),
      d(static_cast<size_t>(n * n));
  a.CopyBits(0, av);
  b.CopyBits(0, bv);
  EvalOptions eo;
  eo.want_bound = false;
  eo.threads = threads;
  if (!EvaluateMatmul(made_by, static_cast<int>(n), static_cast<int>(n), static_cast<int>(n), av,
                      Layout::kRowMajor, bv, Layout::kRowMajor, {}, d, {}, eo).ok()) {
    state.SkipWithError("emulation failed");
    return;
  }
  Tensor out = *MakeTensor("float32", {n, n});
  for (int64_t i = 0; i < out.size(); ++i) out.SetBits(i, d[static_cast<size_t>(i)]);
  MatmulAuditInput in;
  in.a = &a;
  in.b = &b;
  in.out = &out;
  AuditOptions o;
  o.platforms = {"trainium2-bf16"};
  o.models_dir = FPCONFORM_MODELS_SOURCE_DIR;
  o.threads = threads;
  o.recommend = false;
  for (auto _ : state) {
    absl::StatusOr<AuditResult> r = AuditMatmul(in, o);
    if (!r.ok() || r->counts[3] != 0) state.SkipWithError("audit failed");
    benchmark::DoNotOptimize(r);
  }
  state.counters["elements/s"] = benchmark::Counter(static_cast<double>(n * n), benchmark::Counter::kIsIterationInvariantRate);
}
// Args: N, output made in another order (0/1), threads.
BENCHMARK(BM_AuditMatmul)->Args({256, 0, 1})->Args({1024, 0, 2})->Args({1024, 1, 2})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_AuditMatmul)->Name("BM_AuditMatmul_4096")->Args({4096, 0, 2})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace
}  // namespace fpconform::reports
