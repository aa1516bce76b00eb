// Generic (evaluate.h) vs fast (fast_eval.h) evaluation: matmul GFLOP/s (2*M*N*K / time) and
// dot ns/term, for every preset that defines matmul. Not part of ctest. Run:
//   build/accumulation/evaluate_benchmark --benchmark_filter=Matmul
#include <algorithm>
#include <bit>
#include <ctime>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <string>
#include <vector>

#include "accumulation/evaluate.h"
#include "accumulation/fast_eval.h"
#include "accumulation/model.h"
#include "base/data_dir.h"
#include "benchmark/benchmark.h"
#include "cases/pinned_random.h"
#include "formats/ops.h"

namespace fpconform {
namespace {

// Every preset whose operations include matmul (models/*.toml, sorted by file name; envelopes
// and files that do not load as one model are skipped). The benchmark's first argument indexes it.
const std::vector<Model>& Models() {
  static std::vector<Model>* models = [] {
    auto* v = new std::vector<Model>();
    // FPCONFORM_MODELS_DIR overrides the source tree's models/ (for a copied binary).
    const std::string dir = ResolveDataPath(DataItem::kModels, "", "");
    std::vector<std::string> paths;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() == ".toml") paths.push_back(e.path().string());
    }
    std::sort(paths.begin(), paths.end());
    for (const std::string& p : paths) {
      absl::StatusOr<Model> m = LoadModelFile(p);
      if (m.ok() && m->op_matmul) v->push_back(*std::move(m));
    }
    return v;
  }();
  return *models;
}

const Model& GetModel(int i) { return Models()[static_cast<size_t>(i)]; }
int NumModels() { return static_cast<int>(Models().size()); }

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// n inputs of format f, normal values in [2^-3, 2^4) of random sign.
std::vector<uint64_t> Inputs(const FormatSpec& f, size_t n, uint64_t seed) {
  PinnedRng rng(seed);
  std::vector<uint64_t> v(n);
  for (auto& x : v) {
    x = Convert(Float64(), f, std::bit_cast<uint64_t>(rng.LogUniform(-3, 3)), OpEnv{}).bits;
  }
  return v;
}

// Args: model index, size (M = N = K), threads (fast only), fast (0/1), bound (0/1).
void BM_Matmul(benchmark::State& state) {
  const Model& m = GetModel(static_cast<int>(state.range(0)));
  const int s = static_cast<int>(state.range(1));
  const int threads = static_cast<int>(state.range(2));
  const bool fast = state.range(3) != 0, bound = state.range(4) != 0;
  const std::vector<uint64_t> a = Inputs(*m.inputs.a, size_t(s) * s, 1);
  const std::vector<uint64_t> b = Inputs(*m.inputs.b, size_t(s) * s, 2);
  std::vector<uint64_t> d(size_t(s) * s);
  std::vector<double> bounds(bound ? d.size() : 0);
  state.SetLabel(m.name + (fast ? " fast" : " generic") + (bound ? " +bound" : ""));
  const uint64_t before = FastEvalFallbacks();
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) {
    absl::Status st =
        fast ? FastEvaluateMatmul(m, s, s, s, a, Layout::kRowMajor, b, Layout::kRowMajor, {}, d,
                                  bounds, {}, threads)
             : GenericEvaluateMatmul(m, s, s, s, a, Layout::kRowMajor, b, Layout::kRowMajor, {}, d,
                              bounds);
    if (!st.ok()) state.SkipWithError(std::string(st.message()).c_str());
    benchmark::DoNotOptimize(d.data());
  }
  const double gflop = 2.0 * s * s * s * state.iterations() * 1e-9;
  // Wall-clock rate, and the rate per CPU-second of the whole process (all threads): "per
  // core", meaningful on a shared machine where wall time includes waiting for a CPU.
  state.counters["GFLOP/s"] = benchmark::Counter(gflop, benchmark::Counter::kIsRate);
  state.counters["GFLOP/cpu_s"] = gflop / (ProcessCpuSeconds() - cpu0);
  state.counters["fallbacks"] = static_cast<double>(FastEvalFallbacks() - before);
}

void MatmulArgs(benchmark::internal::Benchmark* b) {
  for (int model = 0; model < NumModels(); ++model) {
    b->Args({model, 64, 1, 0, 0});  // Generic: a smaller size (it is ~100x slower).
    for (int threads : {1, 2}) b->Args({model, 512, threads, 1, 0});
    b->Args({model, 512, 1, 1, 1});
  }
}
BENCHMARK(BM_Matmul)->Apply(MatmulArgs)->UseRealTime()->Unit(benchmark::kMillisecond);

// Args: model index, fast (0/1), bound (0/1); K = 4096.
void BM_Dot(benchmark::State& state) {
  const Model& m = GetModel(static_cast<int>(state.range(0)));
  const bool fast = state.range(1) != 0;
  EvalOptions opt;
  opt.want_bound = state.range(2) != 0;
  constexpr int kK = 4096;
  const std::vector<uint64_t> a = Inputs(*m.inputs.a, kK, 3), b = Inputs(*m.inputs.b, kK, 4);
  state.SetLabel(m.name + (fast ? " fast" : " generic") + (opt.want_bound ? " +bound" : ""));
  for (auto _ : state) {
    absl::StatusOr<EvalResult> r =
        fast ? FastEvaluateDot(m, a, b, 0, opt) : GenericEvaluateDot(m, a, b, 0, opt);
    benchmark::DoNotOptimize(r);
  }
  state.counters["ns/term"] = benchmark::Counter(
      static_cast<double>(kK) * state.iterations(),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
void DotArgs(benchmark::internal::Benchmark* b) {
  for (int model = 0; model < NumModels(); ++model) {
    for (int fast : {0, 1}) {
      for (int bound : {0, 1}) b->Args({model, fast, bound});
    }
  }
}
BENCHMARK(BM_Dot)->Apply(DotArgs);

}  // namespace
}  // namespace fpconform
