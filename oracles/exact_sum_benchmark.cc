// The fast exact dot (ExactAccumulator::AddDot + Round) against the plain MPFR loop
// (mpfr_fma per term at a precision that keeps every partial sum exact, then MPFR's IEEE recipe
// into float32), K = 4096, for float32, bfloat16 and float8_e4m3fn inputs.
//
// Setup aborts unless both give the same float32 result (RNE) and the MPFR sum was exact.
//
//   BM_ExactDot/<fmt>     ns_per_term of the exact accumulator
//   BM_MpfrFmaDot/<fmt>   ns_per_term of the MPFR loop
//   BM_Speedup/<fmt>      both timed in the same iterations: exact_ns_per_term,
//                         mpfr_ns_per_term and speedup (= mpfr / exact)
//
// Run: build-exact/oracles/exact_sum_benchmark --benchmark_min_time=0.2s
#include <algorithm>
#include <bit>
#include <string>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <mpfr.h>

#include "benchmark/benchmark.h"
#include "cases/pinned_random.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "formats/ops.h"
#include "formats/text.h"
#include "oracles/exact_sum.h"

namespace fpconform {
namespace {

constexpr size_t kK = 4096;

const FormatSpec& FormatOf(int which) {
  switch (which) {
    case 0: return Float32();
    case 1: return BFloat16();
    default: return Float8E4M3FN();
  }
}

// Random finite values with exponents in [-12, 12] (clamped to the format), random signs and
// fractions: typical data, every exponent path of the accumulator exercised.
std::vector<uint64_t> Inputs(const FormatSpec& f, uint64_t stream) {
  std::vector<uint64_t> v(kK);
  for (size_t i = 0; i < kK; ++i) {
    const uint64_t r = SplitMix64At(0xBE4C4 ^ SplitMix64At(stream * kK + i, 0), 0);
    int e = static_cast<int>(r % 25) - 12;
    e = std::max(Emin(f), std::min(Emax(f), e));
    uint64_t bits = (static_cast<uint64_t>(e + f.bias) << f.fraction_bits) |
                    ((r >> 8) & FractionMask(f));
    if (f.nan_encoding == NanEncoding::kAllOnes &&
        (bits & ((SignBit(f)) - 1)) == SignBit(f) - 1) {
      --bits;
    }
    if ((r >> 63) != 0) bits |= SignBit(f);
    v[i] = bits << f.pad_bits;
  }
  return v;
}

// The plain MPFR loop.
struct MpfrDot {
  const FormatSpec& f;
  mpfr_t acc, x, y;
  std::vector<float> as_float;  // For 8/16-bit formats: value of each bit pattern (exact).

  explicit MpfrDot(const FormatSpec& spec) : f(spec) {
    // Every product lies in [2^(2 MinSubnormalExponent), 2^(2 Emax + 2)); with K terms the sum
    // needs 2 (Emax + 1) - 2 MinSubnormalExponent + log2 K + 1 bits; keep 16 more.
    const long prec = 2 * (Emax(f) + 1) - 2 * MinSubnormalExponent(f) + 13 + 16;
    mpfr_init2(acc, prec);
    mpfr_init2(x, 32);
    mpfr_init2(y, 32);
    if (f.width <= 16) {
      as_float.resize(size_t{1} << f.width);
      for (uint64_t b = 0; b < as_float.size(); ++b) {
        const OpResult r = Convert(f, Float32(), b, OpEnv{});
        as_float[b] = std::bit_cast<float>(static_cast<uint32_t>(r.bits));
      }
    }
  }
  ~MpfrDot() {
    mpfr_clear(acc);
    mpfr_clear(x);
    mpfr_clear(y);
  }
  float Value(uint64_t bits) const {
    if (as_float.empty()) return std::bit_cast<float>(static_cast<uint32_t>(bits));
    return as_float[bits];
  }
  // Returns the exactness of the loop (true iff every fma was exact).
  bool Run(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
    mpfr_set_zero(acc, 1);
    int inexact = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      mpfr_set_flt(x, Value(a[i]), MPFR_RNDN);
      mpfr_set_flt(y, Value(b[i]), MPFR_RNDN);
      inexact |= mpfr_fma(acc, x, y, acc, MPFR_RNDN);
    }
    return inexact == 0;
  }
  // MPFR's IEEE recipe into float32 (RNE).
  uint32_t RoundFloat32() {
    const mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
    mpfr_set_emin(-148);
    mpfr_set_emax(128);
    mpfr_t r;
    mpfr_init2(r, 24);
    int t = mpfr_set(r, acc, MPFR_RNDN);
    t = mpfr_check_range(r, t, MPFR_RNDN);
    mpfr_subnormalize(r, t, MPFR_RNDN);
    const float v = mpfr_get_flt(r, MPFR_RNDN);
    mpfr_clear(r);
    mpfr_set_emin(emin);
    mpfr_set_emax(emax);
    return std::bit_cast<uint32_t>(v);
  }
};

uint64_t ExactDotFloat32(ExactAccumulator& acc, const FormatSpec& f,
                         const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  acc.Reset();
  acc.AddDot(f, a, f, b);
  return acc.Round(Float32(), OpEnv{}).bits;
}

struct Setup {
  const FormatSpec& f;
  std::vector<uint64_t> a, b;
  explicit Setup(int which) : f(FormatOf(which)), a(Inputs(f, 1)), b(Inputs(f, 2)) {
    // Both must give the same correctly rounded float32, and the MPFR loop must be exact.
    MpfrDot m(f);
    if (!m.Run(a, b)) {
      std::fprintf(stderr, "%s: the MPFR loop was not exact\n", f.name.data());
      std::abort();
    }
    ExactAccumulator acc;
    const uint64_t mine = ExactDotFloat32(acc, f, a, b);
    const uint32_t want = m.RoundFloat32();
    if (mine != want) {
      std::fprintf(stderr, "%s: exact dot %s != MPFR %s\n", f.name.data(),
                   Describe(Float32(), mine).c_str(), Describe(Float32(), want).c_str());
      std::abort();
    }
  }
};

void BM_ExactDot(benchmark::State& state) {
  Setup s(static_cast<int>(state.range(0)));
  ExactAccumulator acc;
  for (auto _ : state) benchmark::DoNotOptimize(ExactDotFloat32(acc, s.f, s.a, s.b));
  state.SetLabel(std::string(s.f.name));
  state.counters["ns_per_term"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kK) / 1e9,  // Inverted rate: ns per term.
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_MpfrFmaDot(benchmark::State& state) {
  Setup s(static_cast<int>(state.range(0)));
  MpfrDot m(s.f);
  for (auto _ : state) {
    m.Run(s.a, s.b);
    benchmark::DoNotOptimize(m.RoundFloat32());
  }
  state.SetLabel(std::string(s.f.name));
  state.counters["ns_per_term"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kK) / 1e9,  // Inverted rate: ns per term.
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Both in the same iterations: one MPFR dot and kRepeat exact dots per iteration.
void BM_Speedup(benchmark::State& state) {
  constexpr int kRepeat = 32;
  Setup s(static_cast<int>(state.range(0)));
  MpfrDot m(s.f);
  ExactAccumulator acc;
  double exact_s = 0, mpfr_s = 0;
  uint64_t exact_terms = 0, mpfr_terms = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    m.Run(s.a, s.b);
    benchmark::DoNotOptimize(m.RoundFloat32());
    auto t1 = std::chrono::steady_clock::now();
    for (int r = 0; r < kRepeat; ++r) {
      benchmark::DoNotOptimize(ExactDotFloat32(acc, s.f, s.a, s.b));
    }
    auto t2 = std::chrono::steady_clock::now();
    mpfr_s += std::chrono::duration<double>(t1 - t0).count();
    exact_s += std::chrono::duration<double>(t2 - t1).count();
    mpfr_terms += kK;
    exact_terms += kRepeat * kK;
  }
  const double exact_ns = 1e9 * exact_s / static_cast<double>(exact_terms);
  const double mpfr_ns = 1e9 * mpfr_s / static_cast<double>(mpfr_terms);
  state.SetLabel(std::string(s.f.name));
  state.counters["exact_ns_per_term"] = exact_ns;
  state.counters["mpfr_ns_per_term"] = mpfr_ns;
  state.counters["speedup"] = mpfr_ns / exact_ns;
}

BENCHMARK(BM_ExactDot)->Arg(0)->Arg(1)->Arg(2);
BENCHMARK(BM_MpfrFmaDot)->Arg(0)->Arg(1)->Arg(2);
BENCHMARK(BM_Speedup)->Arg(0)->Arg(1)->Arg(2);

}  // namespace
}  // namespace fpconform
