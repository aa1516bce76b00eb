// certified_matmul (Ozaki split + one float64 GEMM + exact corrections) against the exact
// accumulator: every element's rounded bits and flags (float32 and bfloat16 targets, RNE and
// RTZ) and, for a subset, the exact value itself (ToHexFloat), for random inputs of every narrow
// format and constructed hard cases. The route counts (exact / corrected / fallback) are printed
// and checked to be non-zero where the case is built for that route, so a fast path that
// silently never runs fails the test. FPCONFORM_SEED draws other random inputs (Stream below).
//
// The *Million* tests (label oracle, ctest certified_matmul_million) judge 10^6 random output
// elements per input format; the rest (label quick) run in about a second.
#include "oracles/certified_matmul.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "base/isa.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "gtest/gtest.h"
#include "oracles/exact_sum.h"

namespace fpconform {
namespace {

enum class Dist {
  kNarrow,  // Random sign and fraction, biased exponent within +-4 of the bias (one magnitude
            // range: the hi parts hold nearly everything).
  kSpread,  // Exponent within +-12 of the bias: some lo parts (corrections).
  kAnyBits, // Every encoding, NaN/Inf/subnormals included (fallbacks).
  kSparse,  // kNarrow with 7/8 of the entries +-0 (exact zeros and zero sums).
};

uint64_t Sample(const FormatSpec& f, Dist dist, uint64_t seed, uint64_t index) {
  const uint64_t r = SplitMix64At(seed * 0x100000001b3ULL ^ (index * kSplitMix64Gamma), 0);
  const uint64_t sign = (r >> 63) & 1;
  const uint64_t frac = r & f.d.fraction_mask;
  const int64_t emax_field = static_cast<int64_t>(f.d.max_biased_exponent);
  auto pack = [&](int64_t field) {
    field = std::clamp<int64_t>(field, 1, emax_field - 1);
    return ((sign << (f.exponent_bits + f.fraction_bits)) |
            (static_cast<uint64_t>(field) << f.fraction_bits) | frac)
           << f.pad_bits;
  };
  const int64_t span = dist == Dist::kSpread ? 12 : 4;
  const int64_t field =
      f.bias + static_cast<int64_t>((r >> 32) % static_cast<uint64_t>(2 * span)) - span;
  switch (dist) {
    case Dist::kNarrow:
    case Dist::kSpread:
      return pack(field);
    case Dist::kAnyBits:
      return (r & ((uint64_t{1} << (f.width - f.pad_bits)) - 1)) << f.pad_bits;
    case Dist::kSparse:
      return ((r >> 40) & 7) != 0 ? (sign << (f.width - 1)) : pack(field);
  }
  return 0;
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Compares every element of a (m x k) * b (n x k, B transposed) against ExactDot; exact values
// too for every `exact_every`-th element. Returns the route counts.
CertifiedStats Check(const FormatSpec& fa, const std::vector<uint64_t>& a, const FormatSpec& fb,
                     const std::vector<uint64_t>& bt, int64_t m, int64_t n, int64_t k,
                     int64_t exact_every = 1) {
  const OzakiSplit sa(fa, a, m, k), sb(fb, bt, n, k);
  const CertifiedMatmul cm(sa, sb, 2);
  CertifiedStats st;
  ExactAccumulator acc, ref;
  const OpEnv rne;
  OpEnv rtz;
  rtz.rounding = Rounding::kTowardZero;
  // The bits-only whole-matrix API (enclosure route included), float32 RNE and bfloat16 RTZ.
  CertifiedStats bits_st;
  const std::vector<uint64_t> d32 = CertifiedMatmulRound(fa, a, fb, bt, m, n, k, Float32(), rne, 2, &bits_st);
  const std::vector<uint64_t> d16 = CertifiedMatmulRound(fa, a, fb, bt, m, n, k, BFloat16(), rtz, 1);
  int failures = 0;
  for (int64_t i = 0; i < m && failures < 10; ++i) {
    for (int64_t j = 0; j < n && failures < 10; ++j) {
      ref.Reset();
      ref.AddDot(fa, std::span<const uint64_t>(a).subspan(static_cast<size_t>(i * k), static_cast<size_t>(k)),
                 fb, std::span<const uint64_t>(bt).subspan(static_cast<size_t>(j * k), static_cast<size_t>(k)));
      CertifiedMatmul::Route route;
      const OpResult got = cm.Round(i, j, Float32(), rne, acc, &route);
      (route == CertifiedMatmul::Route::kExact       ? st.exact
       : route == CertifiedMatmul::Route::kCorrected ? st.corrected
                                                     : st.fallback)++;
      const OpResult want = ref.Round(Float32(), rne);
      bool ok = d32[static_cast<size_t>(i * n + j)] == want.bits &&
                d16[static_cast<size_t>(i * n + j)] == ref.Round(BFloat16(), rtz).bits;
      ok = ok && got.bits == want.bits && got.flags == want.flags;
      ok = ok && acc.Round(BFloat16(), rtz).bits == ref.Round(BFloat16(), rtz).bits;
      ok = ok && acc.Round(BFloat16(), rne).flags == ref.Round(BFloat16(), rne).flags;
      if (((i * n + j) % exact_every) == 0) ok = ok && acc.ToHexFloat() == ref.ToHexFloat();
      if (!ok) {
        ++failures;
        ADD_FAILURE() << fa.name << " x " << fb.name << " m=" << m << " n=" << n << " k=" << k
                      << " element (" << i << ", " << j << ") route " << static_cast<int>(route)
                      << ": got " << Hex(got.bits) << " flags " << got.flags << " exact "
                      << acc.ToHexFloat() << "; want " << Hex(want.bits) << " flags "
                      << want.flags << " exact " << ref.ToHexFloat() << "; a[i][0]="
                      << Hex(a[static_cast<size_t>(i * k)]) << " bt[j][0]="
                      << Hex(bt[static_cast<size_t>(j * k)]);
      }
    }
  }
  st.enclosed = bits_st.enclosed;  // How many of the bits-only API's came from the enclosure.
  return st;
}

// The random inputs' stream s (the constants 11, 12, 3, 4, 5, 6, 21, 22 below) is Stream(s) =
// s ^ SplitMix64Mix(seed), the seed FPCONFORM_SEED when set, else 0. SplitMix64Mix(0) is 0, so
// the default seed draws the same inputs as the constants alone did.
uint64_t Stream(uint64_t s) {
  static const uint64_t mask = SplitMix64Mix(TestSeed(0, "certified_matmul_test"));
  return s ^ mask;
}

std::vector<uint64_t> Random(const FormatSpec& f, Dist d, uint64_t seed, int64_t count) {
  std::vector<uint64_t> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[static_cast<size_t>(i)] = Sample(f, d, seed, static_cast<uint64_t>(i));
  return v;
}

void Report(const char* what, const CertifiedStats& st) {
  std::printf("  %-40s exact %8lld  corrected %8lld  fallback %8lld  (bits API: enclosed %lld)\n",
              what, static_cast<long long>(st.exact), static_cast<long long>(st.corrected),
              static_cast<long long>(st.fallback), static_cast<long long>(st.enclosed));
}

const FormatSpec& Fmt(const char* name) { return *FindFormat(name); }

constexpr const char* kFormats[] = {"bfloat16", "float16", "float32", "float8_e4m3fn",
                                    "float8_e5m2", "tfloat32"};

TEST(CertifiedMatmul, Supports) {
  EXPECT_TRUE(CertifiedMatmul::Supports(Float32()));
  EXPECT_TRUE(CertifiedMatmul::Supports(BFloat16()));
  EXPECT_TRUE(CertifiedMatmul::Supports(Fmt("float8_e5m2")));
  EXPECT_FALSE(CertifiedMatmul::Supports(Float64()));
  EXPECT_FALSE(CertifiedMatmul::Supports(Fmt("int8")));
}

// The header's example.
TEST(CertifiedMatmul, HeaderExample) {
  const std::vector<uint64_t> a = {0x3F80, 0x4000, 0x4040, 0x4080}, bt = {0x3F80, 0, 0, 0x3F80};
  CertifiedStats st;
  const std::vector<uint64_t> d =
      CertifiedMatmulRound(BFloat16(), a, BFloat16(), bt, 2, 2, 2, Float32(), OpEnv{}, 1, &st);
  EXPECT_EQ(d, (std::vector<uint64_t>{0x3F800000, 0x40000000, 0x40400000, 0x40800000}));
  EXPECT_EQ(st.exact, 4);
}

// The GEMM engine itself against a plain triple loop on integer-valued doubles (exact in every
// order), on every ISA level this CPU has, with edge tiles (m, n not multiples of 6 / 16).
// m = 37 is one block of kMc = 96 rows (one worker whatever the thread count); m = 200 is three,
// so that 2 and 3 threads split the blocks between workers.
TEST(CertifiedMatmul, GemmMatchesTripleLoop) {
  for (const int64_t m : {int64_t{37}, int64_t{200}}) {
    SCOPED_TRACE(m);
    const int64_t n = 29, k = 300;
    std::vector<double> a(static_cast<size_t>(m * k)), bt(static_cast<size_t>(n * k));
    // Integers in [-100, 100]: every partial sum is exact in double, so any order gives `want`.
    // XORing the seed's mask into the distinct states keeps them distinct (Stream(0) is the mask).
    const uint64_t mask = Stream(0);
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(static_cast<int>(SplitMix64At(i ^ mask, 0) % 201) - 100);
    for (size_t i = 0; i < bt.size(); ++i) bt[i] = static_cast<double>(static_cast<int>(SplitMix64At((i + 99999) ^ mask, 0) % 201) - 100);
    std::vector<double> want(static_cast<size_t>(m * n), 0.0);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t kk = 0; kk < k; ++kk) s += a[static_cast<size_t>(i * k + kk)] * bt[static_cast<size_t>(j * k + kk)];
        want[static_cast<size_t>(i * n + j)] = s;
      }
    }
    for (int threads : {1, 2, 3}) {
      std::vector<double> c(static_cast<size_t>(m * n), -1.0);
      GemmNt(m, n, k, a.data(), bt.data(), c.data(), n, threads);
      EXPECT_EQ(c, want) << "threads " << threads << " isa " << IsaName(ActiveIsa());
    }
  }
}

TEST(CertifiedMatmul, RandomFormatsQuick) {
  for (const char* name : kFormats) {
    const FormatSpec& f = Fmt(name);
    for (Dist d : {Dist::kNarrow, Dist::kSpread, Dist::kAnyBits, Dist::kSparse}) {
      SCOPED_TRACE(std::string(name) + " dist " + std::to_string(static_cast<int>(d)));
      const int64_t m = 41, n = 23, k = 64;
      const CertifiedStats st =
          Check(f, Random(f, d, Stream(11), m * k), f, Random(f, d, Stream(12), n * k), m, n, k);
      Report((std::string(name) + " dist " + std::to_string(static_cast<int>(d))).c_str(), st);
      if (d == Dist::kNarrow && f.d.precision <= 11) {
        EXPECT_GT(st.exact, m * n / 2);
      }
      if (d == Dist::kAnyBits) {
        EXPECT_GT(st.fallback, 0);
      }
    }
  }
  // Mixed input formats (bfloat16 x float8_e4m3fn, float16 x float32).
  for (auto [x, y] : {std::pair{"bfloat16", "float8_e4m3fn"}, {"float16", "float32"}}) {
    const FormatSpec &fa = Fmt(x), &fb = Fmt(y);
    const int64_t m = 17, n = 19, k = 100;
    const CertifiedStats st = Check(fa, Random(fa, Dist::kSpread, Stream(3), m * k), fb,
                                    Random(fb, Dist::kSpread, Stream(4), n * k), m, n, k);
    Report((std::string(x) + " x " + y).c_str(), st);
  }
}

// Constructed hard cases, one per row of A against columns of B (B = a few fixed columns).
TEST(CertifiedMatmul, HardCases) {
  // float32 rows of length 4 (bits); B columns of length 4.
  struct Row {
    const char* what;
    std::vector<uint64_t> a;
  };
  const std::vector<Row> rows = {
      // Cancellation to exactly zero against the all-ones column: fallback (zero sign rule).
      {"x - x + y - y", {0x3FC00000, 0xBFC00000, 0x40A00000, 0xC0A00000}},
      // Cancellation to a float32 subnormal: 1.5 - 1.5 + 0x1800 * 2^-149 (a lo part: a
      // correction).
      {"cancel to subnormal", {0x3FC00000, 0xBFC00000, 0x00001800, 0}},
      // Exact tie at the float32 rounding point: 1 + 2^-24 (to even: 1).
      {"tie 1 + 2^-24", {0x3F800000, 0x33800000, 0, 0}},
      // Tie rounding up to even: 1 + 2^-23 + 2^-24.
      {"tie 1 + 3 * 2^-24", {0x3F800000, 0x34000000, 0x33800000, 0}},
      // Just above a tie: 1 + 2^-24 + 2^-60 (lo part).
      {"above tie", {0x3F800000, 0x33800000, 0x21800000, 0}},
      // Huge and tiny together: 2^127 + 2^-149 - 2^127.
      {"huge/tiny", {0x7F000000, 0x00000001, 0xFF000000, 0}},
      // Overflow of the float32 result: 3 * max float.
      {"overflow", {0x7F7FFFFF, 0x7F7FFFFF, 0x7F7FFFFF, 0}},
      // Infinity and NaN operands (fallback).
      {"inf", {0x7F800000, 0x3F800000, 0, 0}},
      {"inf - inf", {0x7F800000, 0xFF800000, 0, 0}},
      {"nan", {0x7FC00001, 0x3F800000, 0, 0}},
      // All subnormal inputs.
      {"subnormals", {0x00000003, 0x80000001, 0x007FFFFF, 0x00400000}},
      // Negative zeros only.
      {"-0", {0x80000000, 0x80000000, 0x80000000, 0x80000000}},
  };
  const std::vector<std::vector<uint64_t>> cols = {
      {0x3F800000, 0x3F800000, 0x3F800000, 0x3F800000},  // ones
      {0x3F800000, 0xBF800000, 0x3F800000, 0xBF800000},  // alternating
      {0x00000001, 0x00000001, 0x00000001, 0x00000001},  // 2^-149 (products 2^-298 scaled)
      {0x3F800000, 0x3F800000, 0x00000000, 0x80000000},  // zeros of both signs
  };
  std::vector<uint64_t> a, bt;
  for (const Row& r : rows) a.insert(a.end(), r.a.begin(), r.a.end());
  for (const auto& c : cols) bt.insert(bt.end(), c.begin(), c.end());
  const CertifiedStats st = Check(Float32(), a, Float32(), bt, static_cast<int64_t>(rows.size()),
                                  static_cast<int64_t>(cols.size()), 4);
  Report("hard float32 cases", st);
  EXPECT_GT(st.exact, 0);
  EXPECT_GT(st.corrected, 0);
  EXPECT_GT(st.fallback, 0);
}

// K = 65,536 (beta = 18): partial sums of the hi products reach 2^52 units, the edge of the
// exactness bound: float32 values with their top 18 significand bits set, all of one sign and
// magnitude (every lo part zero), and bfloat16 rows of random signs and exponents within +-4
// (cancellation; 8 + 8 bits of spread fit in beta = 18: no lo part, no fallback).
TEST(CertifiedMatmul, LongK) {
  const int64_t k = 65536;
  {
    // (2^18 - 1) * 2^-18: fraction 0x7FFFC0 (18 significant bits with the implicit one).
    std::vector<uint64_t> a(static_cast<size_t>(2 * k), 0x3F7FFFC0), bt(static_cast<size_t>(3 * k), 0x3F7FFFC0);
    for (int64_t kk = 0; kk < k; ++kk) bt[static_cast<size_t>(2 * k + kk)] = 0xBF7FFFC0;
    const CertifiedStats st = Check(Float32(), a, Float32(), bt, 2, 3, k);
    Report("K=65536 float32 18-bit, one sign", st);
    EXPECT_EQ(st.exact, 6);
  }
  {
    const FormatSpec& f = BFloat16();
    const CertifiedStats st = Check(f, Random(f, Dist::kNarrow, Stream(5), 3 * k), f,
                                    Random(f, Dist::kNarrow, Stream(6), 4 * k), 3, 4, k);
    Report("K=65536 bfloat16 narrow", st);
    EXPECT_EQ(st.fallback, 0);
  }
}

// The GEMM kernel depends on the ISA level (base/isa.h); ctest runs the quick tests again
// under FPCONFORM_ISA=portable and =avx2 (certified_matmul_test_portable, _avx2), so every
// kernel meets the checks.

// 10^6 output elements per input format (label oracle).
TEST(CertifiedMatmulMillion, RandomPerFormat) {
  for (const char* name : {"bfloat16", "float16", "float32", "float8_e4m3fn", "float8_e5m2"}) {
    const FormatSpec& f = Fmt(name);
    // 1000 x 1000 outputs, K = 48; rows alternate kNarrow / kSpread, plus kAnyBits rows in A
    // (every 50th row).
    const int64_t m = 1000, n = 1000, k = 48;
    const uint64_t sa = Stream(21), sb = Stream(22);
    std::vector<uint64_t> a(static_cast<size_t>(m * k)), bt(static_cast<size_t>(n * k));
    for (int64_t i = 0; i < m; ++i) {
      const Dist d = i % 50 == 0 ? Dist::kAnyBits : (i % 2 ? Dist::kSpread : Dist::kNarrow);
      for (int64_t kk = 0; kk < k; ++kk) a[static_cast<size_t>(i * k + kk)] = Sample(f, d, sa, static_cast<uint64_t>(i * k + kk));
    }
    for (int64_t j = 0; j < n; ++j) {
      const Dist d = j % 3 == 0 ? Dist::kSpread : Dist::kNarrow;
      for (int64_t kk = 0; kk < k; ++kk) bt[static_cast<size_t>(j * k + kk)] = Sample(f, d, sb, static_cast<uint64_t>(j * k + kk));
    }
    SCOPED_TRACE(name);
    const CertifiedStats st = Check(f, a, f, bt, m, n, k, 97);
    Report((std::string(name) + " 10^6 elements, K=48").c_str(), st);
    EXPECT_EQ(st.exact + st.corrected + st.fallback, m * n);
    EXPECT_GT(st.fallback, 0);
  }
}

}  // namespace
}  // namespace fpconform
