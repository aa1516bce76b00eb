// fast_eval.h against the generic evaluator (evaluate.h), which is the reference: for every
// preset model that FastPathEligible accepts, seeded random dots, sums and matmuls must give the
// same bits and the same bound (compared as doubles, bit for bit).
#include "accumulation/fast_eval.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iostream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "accumulation/evaluate.h"
#include "accumulation/model.h"
#include "base/isa.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/ops.h"
#include "gtest/gtest.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fpconform {
namespace {

// The seed every draw below derives from: FPCONFORM_SEED when set, else 20261129.
uint64_t Seed() {
  static const uint64_t seed = TestSeed(20261129, "fast_eval_test");
  return seed;
}

std::vector<Model> Presets() {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(FPCONFORM_MODELS_SOURCE_DIR)) {
    if (e.path().extension() == ".toml") paths.push_back(e.path().string());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<Model> out;
  for (const std::string& p : paths) {
    std::ifstream in(p);
    std::stringstream text;
    text << in.rdbuf();
    if (IsEnvelopeText(text.str())) continue;  // A set of models, not a model.
    // Files that do not parse as models are model_test's business; they are listed and skipped
    // (the targets checked in EligiblePresetsIncludeTheTargets must be there).
    absl::StatusOr<Model> m = LoadModelFile(p);
    if (m.ok()) {
      out.push_back(*std::move(m));
    } else {
      std::cout << "skipped (not a model): " << p << ": " << m.status() << "\n";
    }
  }
  return out;
}

// Bits of a format from a double (rounded by formats' Convert, rne, so overflow gives Inf or
// the format's NaN).
// The kinds of input drawn (one per case).
enum Profile { kNarrow, kWide, kCancel, kZerosSubnormals, kRawBits, kProfiles };

// One input element of format f under a profile; i is the element index, n the length.
uint64_t Draw(PinnedRng& rng, const FormatSpec& f, Profile prof) {
  const int lo = MinSubnormalExponent(f), hi = Emax(f);
  switch (prof) {
    case kNarrow: return DoubleToBits(f, rng.LogUniform(-3, 3));
    case kWide: return DoubleToBits(f, rng.LogUniform(lo, hi));
    case kZerosSubnormals: {
      const uint64_t r = rng.Below(4);
      if (r == 0) return DoubleToBits(f, rng.Below(2) ? -0.0 : 0.0);
      if (r == 1) return DoubleToBits(f, rng.LogUniform(lo, Emin(f) - 1));  // Subnormal.
      return DoubleToBits(f, rng.LogUniform(Emin(f), Emin(f) + 6));
    }
    case kRawBits: {
      // 1 in 64: raw container bits (NaN, Inf, anything); else a normal-range value.
      if (rng.Below(64) == 0) return rng.Next() & WidthMask(f) & ~((uint64_t{1} << f.pad_bits) - 1);
      return DoubleToBits(f, rng.LogUniform(-10, 10));
    }
    default: return DoubleToBits(f, rng.Normal());
  }
}

struct Case {
  std::vector<uint64_t> a, b;
  uint64_t c = 0;
};

Case MakeCase(const Model& m, int n, Profile prof, uint64_t seed) {
  PinnedRng rng(seed);
  Case cs;
  const FormatSpec& fa = *m.inputs.a;
  const FormatSpec& fb = *m.inputs.b;
  cs.a.resize(n);
  cs.b.resize(n);
  for (int i = 0; i < n; ++i) {
    cs.a[i] = Draw(rng, fa, prof);
    cs.b[i] = Draw(rng, fb, prof);
  }
  if (prof == kCancel) {
    // Second half: the first half's products negated (a -> -a), in a shuffled order, plus a
    // few perturbed elements: heavy cancellation with exact zeros in between.
    const int half = n / 2;
    for (int i = 0; i < half; ++i) {
      const int src = static_cast<int>(rng.Below(static_cast<uint64_t>(half)));
      cs.a[half + i] = cs.a[src] ^ SignBit(fa);
      cs.b[half + i] = cs.b[src];
    }
  }
  const FormatSpec& cf = m.FinalAccumulatorFormat();
  switch (rng.Below(4)) {
    case 0: cs.c = 0; break;
    case 1: cs.c = ZeroBits(cf, true); break;
    case 2: cs.c = DoubleToBits(cf, rng.LogUniform(-4, 4)); break;
    default: cs.c = DoubleToBits(cf, rng.Normal() * 1e3); break;
  }
  return cs;
}

std::string Hex(uint64_t x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(x));
  return buf;
}

// Same bits; NaNs compare by class (both NaN). The bound compares bit for bit.
void ExpectSame(const EvalResult& fast, const EvalResult& gen, const std::string& what) {
  EXPECT_EQ(fast.bits, gen.bits) << what << " fast " << Hex(fast.bits) << " generic "
                                 << Hex(gen.bits);
  EXPECT_EQ(std::bit_cast<uint64_t>(fast.bound), std::bit_cast<uint64_t>(gen.bound))
      << what << " fast bound " << fast.bound << " generic " << gen.bound;
}

std::vector<int> Lengths() {
  std::vector<int> v;
  for (int n = 1; n <= 300; ++n) v.push_back(n);
  v.push_back(0);
  v.push_back(1024);
  v.push_back(4096);
  v.push_back(5000);
  return v;
}

// Built with AddressSanitizer (ci/test.sh's sanitizer run of the quick tests)?
#if defined(__SANITIZE_ADDRESS__)  // GCC
constexpr bool kSanitized = true;
#elif defined(__has_feature)  // clang
constexpr bool kSanitized = __has_feature(address_sanitizer);
#else
constexpr bool kSanitized = false;
#endif

// The number of seeded random dots per model: `release` in the default run; under the
// sanitizers every length of Lengths() once (each with its profile and its sum), because what
// they look for (out-of-bounds reads and writes, undefined behaviour) depends on the lengths and
// the paths taken, not on thousands of further draws, and the generic engine runs about seven
// times slower there (this test: 53 s in Release, 371 s under clang's ASan + UBSan with
// libFuzzer's coverage, on a 2-core AMD EPYC). The matmul shapes, thread counts and layouts are
// the same in both runs.
int DotCases(int release) {
  return kSanitized ? static_cast<int>(Lengths().size()) : release;
}

TEST(FastEvalTest, EligiblePresetsIncludeTheTargets) {
  std::vector<std::string> eligible, not_eligible;
  for (const Model& m : Presets()) {
    if (FastPathEligible(m)) {
      eligible.push_back(m.name);
    } else {
      not_eligible.push_back(m.name + " (" + FastPathIneligibleReason(m) + ")");
    }
  }
  std::cout << "eligible (" << eligible.size() << "): " << absl::StrJoin(eligible, ", ") << "\n"
            << "not eligible (" << not_eligible.size()
            << "): " << absl::StrJoin(not_eligible, ", ") << "\n";
  for (const char* name :
       {"trainium1-bf16", "trainium2-bf16", "trainium3-bf16", "cuda-f32-fma", "cpu-f32-seq",
        "cpu-f64-seq", "numpy-sum-f32", "nvidia-h100-bf16", "nvidia-h100-fp16",
        "nvidia-h100-tf32", "nvidia-a100-tf32", "nvidia-h100-fp8e4m3",
        "nvidia-h100-fp8e4m3-promote128", "nvidia-ada-fp8e5m2", "trainium2-bf16-pairwise",
        "kahan-f32", "numpy-openblas-skylakex-f64", "numpy-openblas-skylakex-f64-1thread",
        "numpy-openblas-skylakex-f64-small", "numpy-refblas-f64"}) {
    EXPECT_NE(std::find(eligible.begin(), eligible.end(), name), eligible.end()) << name;
  }
}

// Seeded random dots and sums of model m (`count` cases of lengths 0..300, plus 1024, 4096 and
// 5000 once), fast against generic; returns the number of cases.
long CheckDots(const Model& m, int count) {
  const std::vector<int> lengths = Lengths();
  const uint64_t model_key = std::hash<std::string>{}(m.name) & 0xFFFF;
  long cases = 0;
  for (int index = 0; index < count; ++index) {
    const int n = index < static_cast<int>(lengths.size()) ? lengths[index]
                                                           : lengths[index % 301];
    const Profile prof = static_cast<Profile>(index % kProfiles);
    const uint64_t seed = DeriveSeed(Seed(), {model_key, static_cast<uint64_t>(index)});
    const Case cs = MakeCase(m, n, prof, seed);
    EvalOptions opt;
    opt.want_bound = (index % 5) != 4;
    const std::string what = m.name + " dot case " + std::to_string(index) + " n=" +
                             std::to_string(n) + " profile " + std::to_string(prof) + " seed " +
                             Hex(seed);
    absl::StatusOr<EvalResult> gen = GenericEvaluateDot(m, cs.a, cs.b, cs.c, opt);
    absl::StatusOr<EvalResult> fast = FastEvaluateDot(m, cs.a, cs.b, cs.c, opt);
    EXPECT_TRUE(gen.ok() && fast.ok()) << what;
    if (!gen.ok() || !fast.ok()) return cases;
    ExpectSame(*fast, *gen, what);
    ++cases;
    if (index % 3 == 0) {
      const std::string what_sum = m.name + " sum case " + std::to_string(index);
      absl::StatusOr<EvalResult> gs = GenericEvaluateSum(m, cs.a, cs.c, opt);
      absl::StatusOr<EvalResult> fs = FastEvaluateSum(m, cs.a, cs.c, opt);
      EXPECT_TRUE(gs.ok() && fs.ok()) << what_sum;
      if (!gs.ok() || !fs.ok()) return cases;
      ExpectSame(*fs, *gs, what_sum);
      ++cases;
    }
    if (::testing::Test::HasFailure()) return cases;
  }
  return cases;
}

TEST(FastEvalTest, DotsAndSumsMatchGenericOnEveryEligiblePreset) {
  int presets = 0;
  long cases = 0;
  const uint64_t fallbacks_before = FastEvalFallbacks();
  for (const Model& m : Presets()) {
    if (!FastPathEligible(m)) {
      EXPECT_EQ(FastEvaluateDot(m, {}, {}, 0).status().code(),
                absl::StatusCode::kFailedPrecondition);
      continue;
    }
    ++presets;
    const uint64_t before = FastEvalFallbacks();
    const long preset_cases = CheckDots(m, DotCases(3000));
    cases += preset_cases;
    if (HasFailure()) return;
    if (m.inputs.a == &Float64()) {
      // float64 inputs: the scalar double path decides most cases itself (tiny and huge
      // products included), not the fallback.
      const uint64_t preset_fallbacks = FastEvalFallbacks() - before;
      std::cout << m.name << ": " << preset_cases << " cases, " << preset_fallbacks
                << " handed to the generic path\n";
      EXPECT_LT(preset_fallbacks * 3, static_cast<uint64_t>(preset_cases)) << m.name;
    }
  }
  const uint64_t fallbacks = FastEvalFallbacks() - fallbacks_before;
  std::cout << presets << " eligible presets, " << cases << " dot/sum cases, " << fallbacks
            << " handed to the generic path\n";
  EXPECT_GE(presets, 14);
  // The fast kernels must decide most cases themselves (special inputs are a minority).
  EXPECT_LT(fallbacks * 3, static_cast<uint64_t>(cases));
}

// Matmul of model m in every layout, at 1, 2 and 3 threads, against per-element generic dots.
// Row i of A (row-major, k columns) and column j of B (row-major, k x n).
std::pair<std::vector<uint64_t>, std::vector<uint64_t>> RowAndColumn(
    const std::vector<uint64_t>& a, const std::vector<uint64_t>& b, int k, int n, int i, int j) {
  std::vector<uint64_t> row(k), col(k);
  for (int p = 0; p < k; ++p) {
    row[p] = a[size_t(i) * k + p];
    col[p] = b[size_t(p) * n + j];
  }
  return {row, col};
}

void CheckMatmul(const Model& m) {
    const uint64_t model_key = std::hash<std::string>{}(m.name) & 0xFFFF;
    // Shapes: 4-row tiles plus a tail row, 16/8-column tiles plus tails, K across chunks.
    // With inputs.daz, a shape whose products are all subnormal x large: the flushed inputs make
    // the bound's |used - exact| term the largest one (else other products' terms hide it).
    // With adder.daz, a shape whose products lie around the accumulator's smallest normal, with
    // random signs, and c zero: partial sums (a step's, a lane start's, a combine's) fall below
    // it, and the next step must read them as zero (WalkTile skips that check only where no
    // lane can be subnormal).
    enum class Inputs { kDrawn, kFlushedTimesLarge, kTinyProducts };
    std::vector<std::tuple<int, int, int, Profile, Inputs>> shapes = {
        {13, 37, 300, kRawBits, Inputs::kDrawn}, {9, 33, 130, kNarrow, Inputs::kDrawn},
        {5, 17, 33, kZerosSubnormals, Inputs::kDrawn}, {1, 1, 1, kNarrow, Inputs::kDrawn},
        {4, 16, 0, kNarrow, Inputs::kDrawn}};
    if (m.inputs.daz) shapes.emplace_back(9, 33, 64, kNarrow, Inputs::kFlushedTimesLarge);
    if (m.adder.env.denormals_are_zero) {
      shapes.emplace_back(7, 35, 203, kNarrow, Inputs::kTinyProducts);
    }
    for (const auto& [mm, nn, kk, prof, kind] : shapes) {
      PinnedRng rng(DeriveSeed(Seed(), {model_key, 999, uint64_t(mm), uint64_t(kk)}));
      std::vector<uint64_t> a(size_t(mm) * kk), b(size_t(kk) * nn), c(size_t(mm) * nn);
      const int half_emin = Emin(m.FinalAccumulatorFormat()) / 2;
      const auto tiny = [&](const FormatSpec& f) {
        return DoubleToBits(f, rng.LogUniform(half_emin - 3, half_emin + 3));  // Either sign.
      };
      for (auto& x : a) {
        switch (kind) {
          case Inputs::kDrawn: x = Draw(rng, *m.inputs.a, prof); break;
          case Inputs::kFlushedTimesLarge: x = Draw(rng, *m.inputs.a, kZerosSubnormals); break;
          case Inputs::kTinyProducts: x = tiny(*m.inputs.a); break;
        }
      }
      for (auto& x : b) {
        const int top = Emax(*m.inputs.b);
        switch (kind) {
          case Inputs::kDrawn: x = Draw(rng, *m.inputs.b, prof); break;
          case Inputs::kFlushedTimesLarge:
            x = DoubleToBits(*m.inputs.b, rng.LogUniform(top / 2 - 4, top / 2));
            break;
          case Inputs::kTinyProducts: x = tiny(*m.inputs.b); break;
        }
      }
      for (auto& x : c) x = DoubleToBits(m.FinalAccumulatorFormat(), rng.LogUniform(-3, 3));
      if (kind == Inputs::kTinyProducts) {
        for (auto& x : c) x = 0;
      } else if (m.adder.env.denormals_are_zero) {
        // adder.daz reads a subnormal accumulator as zero and adds its magnitude to E: every
        // third c subnormal (the bound term the walked tiles look for before each step).
        const FormatSpec& cf = m.FinalAccumulatorFormat();
        for (size_t idx = 0; idx < c.size(); idx += 3) {
          c[idx] = DoubleToBits(cf, std::ldexp(idx % 2 ? -1.0 : 1.0, Emin(cf) - 1 - int(idx % 7)));
        }
      }
      // Expected: generic dots on row-major A, B.
      std::vector<uint64_t> want(c.size());
      std::vector<double> want_bound(c.size());
      std::vector<uint64_t> want0(c.size());
      for (int i = 0; i < mm; ++i) {
        for (int j = 0; j < nn; ++j) {
          const auto [row, col] = RowAndColumn(a, b, kk, nn, i, j);
          const size_t idx = size_t(i) * nn + j;
          const EvalResult with_c = *GenericEvaluateDot(m, row, col, c[idx]);
          want[idx] = with_c.bits;
          want_bound[idx] = with_c.bound;
          want0[idx] = GenericEvaluateDot(m, row, col, 0)->bits;
        }
      }
      // Column-major copies.
      std::vector<uint64_t> at(a.size()), bt(b.size());
      for (int i = 0; i < mm; ++i) {
        for (int p = 0; p < kk; ++p) at[size_t(p) * mm + i] = a[size_t(i) * kk + p];
      }
      for (int p = 0; p < kk; ++p) {
        for (int j = 0; j < nn; ++j) bt[size_t(j) * kk + p] = b[size_t(p) * nn + j];
      }
      for (int threads : {1, 2, 3}) {
        for (int layout = 0; layout < 4; ++layout) {
          const Layout la = layout & 1 ? Layout::kColumnMajor : Layout::kRowMajor;
          const Layout lb = layout & 2 ? Layout::kColumnMajor : Layout::kRowMajor;
          const std::vector<uint64_t>& aa = layout & 1 ? at : a;
          const std::vector<uint64_t>& bb = layout & 2 ? bt : b;
          for (int variant = 0; variant < 2; ++variant) {
          // Variant 0: with bounds (the bound kernels); 1: values only (the AVX kernels).
          std::vector<uint64_t> d(c.size());
          std::vector<double> bounds(variant == 0 ? c.size() : 0);
          const bool with_c = variant == 0 || (threads + layout) % 2 == 0;
          ASSERT_TRUE(FastEvaluateMatmul(m, mm, nn, kk, aa, la, bb, lb,
                                         with_c ? std::span<const uint64_t>(c)
                                                : std::span<const uint64_t>(),
                                         d, bounds, {}, threads)
                          .ok());
          for (size_t idx = 0; idx < d.size(); ++idx) {
            const std::string what = m.name + " matmul " + std::to_string(mm) + "x" +
                                     std::to_string(nn) + "x" + std::to_string(kk) +
                                     " threads " + std::to_string(threads) + " layout " +
                                     std::to_string(layout) + " element " + std::to_string(idx);
            ASSERT_EQ(d[idx], with_c ? want[idx] : want0[idx]) << what << " variant " << variant;
            if (variant == 0) {
              ASSERT_EQ(std::bit_cast<uint64_t>(bounds[idx]),
                        std::bit_cast<uint64_t>(want_bound[idx]))
                  << what << " " << bounds[idx] << " vs " << want_bound[idx];
            }
          }
          }
        }
      }
    }
}

TEST(FastEvalTest, MatmulMatchesGenericDotsAtAnyThreadCount) {
  int presets = 0;
  for (const Model& m : Presets()) {
    if (!FastPathEligible(m)) continue;
    ++presets;
    CheckMatmul(m);
    if (HasFatalFailure()) return;
  }
  EXPECT_GE(presets, 14);
}

// Whitelisted settings that no preset uses yet: round_down alignment, actual alignment
// exponents, rne normalization, reduced accumulators with blocked chains, rounded products.
TEST(FastEvalTest, VariantsMatchGeneric) {
  const std::string dir = FPCONFORM_MODELS_SOURCE_DIR;
  const Model bf16 = *LoadModelFile(dir + "/nvidia-h100-bf16.toml");
  const Model fp8 = *LoadModelFile(dir + "/nvidia-h100-fp8e4m3-promote128.toml");
  const Model trn = *LoadModelFile(dir + "/trainium2-bf16.toml");
  std::vector<Model> variants;
  for (const Model* base : {&bf16, &fp8}) {
    Model v = *base;
    v.adder.alignment = Alignment::kRoundDown;
    v.name = base->name + "+round_down";
    variants.push_back(v);
    v.adder.alignment_exponent = AlignmentExponent::kActual;
    v.name += "+actual";
    variants.push_back(v);
    v = *base;
    v.adder.env.rounding = Rounding::kNearestEven;
    v.name = base->name + "+rne";
    variants.push_back(v);
    v = *base;
    v.chain.kind = ChainKind::kBlocked;
    v.chain.block = 64;
    v.name = base->name + "+blocked64";
    v.output.format = &Float32();
    if (base == &fp8) {
      // Combine adds round to the 13-bit accumulator: not a host add, so not eligible.
      EXPECT_FALSE(FastPathEligible(v));
    } else {
      variants.push_back(v);
    }
  }
  Model v = trn;
  v.product.policy = ProductPolicy::kRound;
  v.product.format = &Float32();
  v.name = "trainium2-bf16+round_product";
  variants.push_back(v);
  v = trn;
  v.chain.kind = ChainKind::kPromote;
  v.chain.every = 100;
  v.chain.promote_format = &Float32();
  v.name = "trainium2-bf16+promote100";
  variants.push_back(v);
  // Pairwise matmul tiles (PairwiseTile): rounded products, no chunk with a larger leaf and a
  // split multiple, a float64 accumulator (f64 tiles, f64 -> f32 output).
  const Model pw = *LoadModelFile(dir + "/trainium2-bf16-pairwise.toml");
  v = pw;
  v.product.policy = ProductPolicy::kRound;
  v.product.format = &Float32();
  v.name = "trainium2-bf16-pairwise+round_product";
  variants.push_back(v);
  v = pw;
  v.chain.chunk = 0;
  v.chain.leaf = 5;
  v.chain.split_multiple = 4;
  v.name = "trainium2-bf16-pairwise+chunk0+leaf5+split4";
  variants.push_back(v);
  v = pw;
  v.chain.leaf = 2;
  v.chain.chunk = 64;
  v.name = "trainium2-bf16-pairwise+leaf2+chunk64";
  variants.push_back(v);
  const Model f64 = *LoadModelFile(dir + "/cpu-f64-seq.toml");
  v = f64;
  v.chain = pw.chain;
  v.name = "cpu-f64-seq+pairwise128";
  variants.push_back(v);
  v.output.format = &Float64();
  v.name = "cpu-f64-seq+pairwise128+f64out";
  variants.push_back(v);
  // Kahan (KahanTile and ScalarDot::Kahan): exact products (p - comp in one fma), a float64
  // accumulator with float64 products, with float32 or float64 output.
  const Model kahan = *LoadModelFile(dir + "/kahan-f32.toml");
  v = kahan;
  v.product.policy = ProductPolicy::kExact;
  v.name = "kahan-f32+exact_product";
  variants.push_back(v);
  v = kahan;
  v.accumulator.format = &Float64();
  v.accumulator.fraction_bits = Float64().fraction_bits;
  v.product.format = &Float64();
  v.output.format = &Float32();
  v.name = "kahan-f64+f32out";
  variants.push_back(v);
  v.output.format = &Float64();
  v.name = "kahan-f64";
  variants.push_back(v);
  // float64 inputs (DotView64, LeafBound64) beyond the BLAS presets: walked and pairwise chains,
  // Kahan, float32 output, a rounded product in blocks.
  const Model ob64 = *LoadModelFile(dir + "/numpy-openblas-skylakex-f64.toml");
  const Model ref64 = *LoadModelFile(dir + "/numpy-refblas-f64.toml");
  v = ob64;
  v.chain = pw.chain;
  v.name = "numpy-openblas-skylakex-f64+pairwise128";
  variants.push_back(v);
  v = ob64;
  v.chain = LoadModelFile(dir + "/numpy-sum-f32.toml")->chain;
  v.name = "numpy-openblas-skylakex-f64+numpy-sum-pairwise";
  variants.push_back(v);
  v = ob64;
  v.chain.kind = ChainKind::kStrided;
  v.chain.ways = 3;
  v.chain.combine = CombineOrder::kPairwise;
  v.output.format = &Float32();
  v.name = "numpy-openblas-skylakex-f64+strided3+f32out";
  variants.push_back(v);
  v = ref64;
  v.chain = ob64.chain;
  v.name = "numpy-refblas-f64+blocked384";
  variants.push_back(v);
  v = ref64;
  v.adder.kind = AdderKind::kKahan;
  v.name = "numpy-refblas-f64+kahan";
  variants.push_back(v);
  v.product.policy = ProductPolicy::kExact;
  v.name = "numpy-refblas-f64+kahan+exact_product";
  variants.push_back(v);
  // Chain kinds walked by chain_walk.h on host nodes, beyond the presets (simd halving, cascade,
  // split_k fixed/random): strided (both combines, host and fused adders), simd reductions and
  // unit orders, split_k with a fused adder.
  const Model fma = *LoadModelFile(dir + "/cuda-f32-fma.toml");
  for (CombineOrder comb : {CombineOrder::kSequential, CombineOrder::kPairwise}) {
    v = fma;
    v.chain.kind = ChainKind::kStrided;
    v.chain.ways = 5;
    v.chain.combine = comb;
    v.name = "cuda-f32-fma+strided5+" + std::to_string(static_cast<int>(comb));
    variants.push_back(v);
  }
  for (CombineOrder red : {CombineOrder::kSequential, CombineOrder::kPairwise}) {
    v = fma;
    v.chain.kind = ChainKind::kSimd;
    v.chain.lanes = 8;
    v.chain.unit = 3;
    v.chain.unit_order = UnitOrder::kForward;
    v.chain.reduce = red;
    v.name = "cuda-f32-fma+simd8x3+" + std::to_string(static_cast<int>(red));
    variants.push_back(v);
  }
  const Model trn2 = *LoadModelFile(dir + "/trainium2-bf16.toml");
  v = trn2;
  v.chain.kind = ChainKind::kStrided;
  v.chain.ways = 3;
  v.chain.combine = CombineOrder::kPairwise;
  v.name = "trainium2-bf16+strided3";
  variants.push_back(v);
  v = bf16;
  v.accumulator.fraction_bits = Float32().fraction_bits;
  v.chain.kind = ChainKind::kSplitK;
  v.chain.slices = 3;
  v.chain.order = SplitOrder::kRandom;
  v.output.format = &Float32();
  v.name = "nvidia-h100-bf16+f23+splitk3-random";
  variants.push_back(v);
  // split_k slice_multiple, order = "reverse", combine = "pairwise" (cuBLAS split-K presets),
  // fused and host adders.
  v.chain.slice_multiple = 32;
  v.chain.order = SplitOrder::kReverse;
  v.chain.combine = CombineOrder::kPairwise;
  v.name = "nvidia-h100-bf16+f23+splitk3x32-reverse-pairwise";
  variants.push_back(v);
  v = fma;
  v.chain.kind = ChainKind::kSplitK;
  v.chain.slices = 5;
  v.chain.slice_multiple = 6;
  v.chain.order = SplitOrder::kReverse;
  v.name = "cuda-f32-fma+splitk5x6-reverse";
  variants.push_back(v);
  // adder.ftz / adder.daz (FlushTiny) and inputs.daz beyond x86-avx512bf16: sequential fma and
  // rounded-product chains (the fixed chains walked), pairwise with unroll (RoundTerm flushed).
  v = fma;
  v.adder.env.flush_to_zero = true;
  v.adder.env.denormals_are_zero = true;
  v.inputs.daz = true;
  v.name = "cuda-f32-fma+ftz+daz";
  variants.push_back(v);
  v.adder.env.tininess = Tininess::kBeforeRounding;
  v.name += "+tiny_before";
  variants.push_back(v);
  const Model cpu32 = *LoadModelFile(dir + "/cpu-f32-seq.toml");
  v = cpu32;
  v.adder.env.flush_to_zero = true;
  v.name = "cpu-f32-seq+ftz";
  variants.push_back(v);
  const Model np = *LoadModelFile(dir + "/numpy-sum-f32.toml");
  v = np;
  v.chain.unroll = 4;
  v.chain.leaf = 16;
  v.chain.split_multiple = 4;
  v.chain.chunk = 0;
  v.adder.env.flush_to_zero = true;
  v.name = "numpy-sum-f32+unroll4+ftz";
  variants.push_back(v);
  // adder.daz after a combine (the unrolled leaf's tree, then its tail steps): WalkTile's
  // may_be_subnormal must be set by Combine.
  v.adder.env.denormals_are_zero = true;
  v.name += "+daz";
  variants.push_back(v);
  // adder.daz without adder.ftz: a lane start's (RoundTerm's) or a step's subnormal result is
  // read as zero by the next step.
  v.adder.env.flush_to_zero = false;
  v.name = "numpy-sum-f32+unroll4+daz";
  variants.push_back(v);
  v = *LoadModelFile(dir + "/x86-avx512bf16.toml");
  v.adder.env.flush_to_zero = false;
  v.name = "x86-avx512bf16-noftz";
  variants.push_back(v);
  v = np;
  v.chain.leaf = 16;
  v.chain.split_multiple = 4;
  v.name = "numpy-sum-f32+leaf16 (pairwise unroll in matmul tiles)";
  variants.push_back(v);
  // bfloat16 outputs and promotion (RoundToBf16, Bf16RneBits): trainium2-bf16 with bfloat16
  // output, a 32-term promotion into bfloat16, and a tree chain (trainium2-reduce-bf16-datapath)
  // under a dot.
  v = trn2;
  v.output.format = &BFloat16();
  v.name = "trainium2-bf16+bf16out";
  variants.push_back(v);
  v = trn2;
  v.chain.kind = ChainKind::kPromote;
  v.chain.every = 32;
  v.chain.promote_format = &BFloat16();
  v.output.format = &BFloat16();
  v.name = "trainium2-bf16+promote32bf16";
  variants.push_back(v);
  const Model tree = *LoadModelFile(dir + "/trainium2-reduce-bf16-datapath.toml");
  v = trn2;
  v.chain = tree.chain;
  v.name = "trainium2-bf16+tree((0 1) (2 3))";
  variants.push_back(v);
  v = cpu32;
  v.chain = tree.chain;
  v.output.format = &BFloat16();
  v.name = "cpu-f32-seq+tree+bf16out";
  variants.push_back(v);
  // inputs.daz alone on host chains (the float32 host tiles with bounds read the original inputs
  // for the bound's exact product): fma and rounded-product chains, sequential and blocked.
  for (const Model* base : {&fma, &cpu32}) {
    v = *base;
    v.inputs.daz = true;
    v.name = base->name + "+input_daz";
    variants.push_back(v);
    v.chain.kind = ChainKind::kBlocked;
    v.chain.block = 48;
    v.name += "+blocked48";
    variants.push_back(v);
  }
  // inputs.daz on a float64 accumulator: the flushed inputs make |used - exact| nonzero in the
  // float64 pairwise and walked tiles' scalar bound steps (BoundStepScalar).
  v = f64;
  v.inputs.daz = true;
  v.chain = pw.chain;
  v.name = "cpu-f64-seq+pairwise128+input_daz";
  variants.push_back(v);
  v.chain = Model::Chain{};
  v.chain.kind = ChainKind::kStrided;
  v.chain.ways = 4;
  v.chain.combine = CombineOrder::kPairwise;
  v.name = "cpu-f64-seq+strided4+input_daz";
  variants.push_back(v);
  for (const Model& m : variants) {
    SCOPED_TRACE(m.name);
    ASSERT_TRUE(FastPathEligible(m)) << FastPathIneligibleReason(m);
    CheckDots(m, DotCases(1500));
    if (HasFatalFailure()) return;
    CheckMatmul(m);
    if (HasFatalFailure()) return;
  }
}

// float64 inputs on a table of special values (signed zeros, the smallest and largest
// subnormals, 2^Emin, values around LeafBound64's 2^-960 and 2^1000 limits, DBL_MAX, Inf, NaN)
// crossed with each other, in dots of one product, of a product and its negation (exact zeros:
// their sign), and of three products with c: the same bits and bounds as the generic engine, and
// every case with finite inputs and a finite result decided by the fast path itself.
TEST(FastEvalTest, Float64InputsMatchGenericOnSpecialValues) {
  const std::string dir = FPCONFORM_MODELS_SOURCE_DIR;
  const double inf = std::numeric_limits<double>::infinity();
  const double max = std::numeric_limits<double>::max();
  const std::vector<double> vals = {
      0.0, -0.0, 0x1p-1074, -0x1p-1074, 0x0.fffffffffffffp-1022, 0x1p-1022, -0x1.8p-1000,
      0x1.fffffffffffffp-961, 0x1p-960, 0x1.0000000000001p-480, 1.0, -1.0,
      0x1.0000000000001p0, -0x1.fffffffffffffp0, 3.0, 0x1.fffffffffffffp499, 0x1p500,
      0x1.0000000000001p500, 0x1p1000, max, -max, inf, -inf,
      std::numeric_limits<double>::quiet_NaN()};
  const std::vector<double> cs = {0.0, -0.0, 1.0, -0x1p-1074, max};
  std::vector<Model> models;
  for (const char* name : {"numpy-openblas-skylakex-f64", "numpy-openblas-skylakex-f64-1thread",
                           "numpy-openblas-skylakex-f64-small", "numpy-refblas-f64"}) {
    models.push_back(*LoadModelFile(dir + "/" + name + ".toml"));
  }
  Model v = models.back();
  v.adder.kind = AdderKind::kKahan;
  v.name = "numpy-refblas-f64+kahan";
  models.push_back(v);
  v = models[0];
  v.output.format = &Float32();
  v.name = "numpy-openblas-skylakex-f64+f32out";
  models.push_back(v);
  auto bits = [](double x) { return std::bit_cast<uint64_t>(x); };
  long cases = 0;
  for (const Model& m : models) {
    SCOPED_TRACE(m.name);
    ASSERT_TRUE(FastPathEligible(m)) << FastPathIneligibleReason(m);
    for (double x : vals) {
      for (double y : vals) {
        const std::vector<std::pair<std::vector<double>, std::vector<double>>> dots = {
            {{x}, {y}}, {{x, -x}, {y, y}}, {{x, 1.5, y}, {y, -x, 0x1p-1074}}};
        for (const auto& [da, db] : dots) {
          for (double c : cs) {
            std::vector<uint64_t> a, b;
            for (double t : da) a.push_back(bits(t));
            for (double t : db) b.push_back(bits(t));
            const uint64_t c_bits = bits(c);  // c: the accumulator's format (float64).
            for (bool bound : {false, true}) {
              EvalOptions opt;
              opt.want_bound = bound;
              std::ostringstream what;
              what << std::hexfloat << m.name << " x " << x << " y " << y << " k " << a.size()
                   << " c " << c << " bound " << bound;
              const EvalResult gen = *GenericEvaluateDot(m, a, b, c_bits, opt);
              const uint64_t before = FastEvalFallbacks();
              const absl::StatusOr<EvalResult> fast = FastEvaluateDot(m, a, b, c_bits, opt);
              const uint64_t fallbacks = FastEvalFallbacks() - before;
              ASSERT_TRUE(fast.ok()) << what.str();
              ExpectSame(*fast, gen, what.str());
              const FormatSpec& of = *m.output.format;
              const bool finite_in = std::isfinite(x) && std::isfinite(y);
              const bool finite_out =
                  &of == &Float64()
                      ? std::isfinite(std::bit_cast<double>(gen.bits))
                      : std::isfinite(std::bit_cast<float>(static_cast<uint32_t>(gen.bits)));
              if (finite_in && finite_out) {
                EXPECT_EQ(fallbacks, 0u) << what.str();
              }
              ++cases;
              if (HasFailure()) return;
            }
          }
        }
        // The same terms as a sum.
        const std::vector<uint64_t> xs = {bits(x), bits(y), bits(-x)};
        const EvalResult gs = *GenericEvaluateSum(m, xs, 0, {});
        const absl::StatusOr<EvalResult> fs = FastEvaluateSum(m, xs, 0, {});
        ASSERT_TRUE(fs.ok());
        ExpectSame(*fs, gs, m.name + " sum");
        ++cases;
        if (HasFailure()) return;
      }
    }
  }
  std::cout << cases << " float64 special-value cases\n";
}

// float64-input matmuls with K across several OpenBLAS blocks (384, then the halved tail: the
// AVX2 tiles' ChunkEnd and block sums) and a non-multiple of the tile sizes, with and without
// bounds, at 1 and 2 threads, against generic dots: normal inputs with c, and (no c, so that the
// bound is made of subnormal-sized terms) subnormal and zero inputs and the whole exponent range
// (the bound tile's lanes that take LeafBound64).
TEST(FastEvalTest, Float64MatmulAcrossBlocksMatchesGeneric) {
  const std::string dir = FPCONFORM_MODELS_SOURCE_DIR;
  for (const char* name : {"numpy-openblas-skylakex-f64", "numpy-openblas-skylakex-f64-1thread",
                           "numpy-openblas-skylakex-f64-small", "numpy-refblas-f64"}) {
    Model m = *LoadModelFile(dir + "/" + name + ".toml");
    if (std::string(name) == "numpy-refblas-f64") {
      m.chain = LoadModelFile(dir + "/numpy-openblas-skylakex-f64-1thread.toml")->chain;
      m.name += "+blocked384-halve_down16";  // Rounded products in blocks.
    }
    ASSERT_TRUE(FastPathEligible(m));
    for (Profile prof : {kNarrow, kZerosSubnormals, kWide}) {
      SCOPED_TRACE(m.name + " profile " + std::to_string(prof));
      constexpr int kM = 5, kN = 19, kK = 1000;
      PinnedRng rng(DeriveSeed(Seed(), {4242, std::hash<std::string>{}(m.name) & 0xFFFF,
                                        static_cast<uint64_t>(prof)}));
      std::vector<uint64_t> a(size_t(kM) * kK), b(size_t(kK) * kN), c(size_t(kM) * kN);
      for (auto& x : a) x = Draw(rng, Float64(), prof);
      for (auto& x : b) x = Draw(rng, Float64(), prof);
      if (prof == kNarrow) {
        for (auto& x : c) x = DoubleToBits(Float64(), rng.LogUniform(-3, 3));
      }
      std::vector<EvalResult> want(c.size());
      for (int i = 0; i < kM; ++i) {
        for (int j = 0; j < kN; ++j) {
          std::vector<uint64_t> row(kK), col(kK);
          for (int p = 0; p < kK; ++p) {
            row[p] = a[size_t(i) * kK + p];
            col[p] = b[size_t(p) * kN + j];
          }
          want[size_t(i) * kN + j] = *GenericEvaluateDot(m, row, col, c[size_t(i) * kN + j]);
        }
      }
      for (int threads : {1, 2}) {
        for (bool bound : {false, true}) {
          std::vector<uint64_t> d(c.size());
          std::vector<double> bounds(bound ? c.size() : 0);
          ASSERT_TRUE(FastEvaluateMatmul(m, kM, kN, kK, a, Layout::kRowMajor, b,
                                         Layout::kRowMajor,
                                         prof == kNarrow ? std::span<const uint64_t>(c)
                                                         : std::span<const uint64_t>(),
                                         d, bounds, {}, threads)
                          .ok());
          for (size_t idx = 0; idx < d.size(); ++idx) {
            ASSERT_EQ(d[idx], want[idx].bits) << "element " << idx << " threads " << threads
                                              << " bound " << bound;
            if (bound) {
              ASSERT_EQ(std::bit_cast<uint64_t>(bounds[idx]),
                        std::bit_cast<uint64_t>(want[idx].bound))
                  << "element " << idx;
            }
          }
        }
      }
    }
  }
}

// The bfloat16 accumulator (trainium2-xla-sum-bf16-bf16acc: AddRoundBf16Exact) on a table of
// bfloat16 values (signed zeros, subnormals, 2^Emin, products below float32's subnormals,
// ties of the bfloat16 rounding, the largest finite value, Inf, NaN) crossed with each other:
// sums and dots (the plan does both) of a pair, of a pair and its negation, and of a tie-making
// triple, with several c, against the generic engine; every case with finite inputs and a finite
// result decided by the fast path itself.
TEST(FastEvalTest, BFloat16AccumulatorMatchesGenericOnSpecialValues) {
  const Model m = *LoadModelFile(std::string(FPCONFORM_MODELS_SOURCE_DIR) +
                                 "/trainium2-xla-sum-bf16-bf16acc.toml");
  ASSERT_TRUE(FastPathEligible(m)) << FastPathIneligibleReason(m);
  const std::vector<uint64_t> vals = {
      0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x8080, 0x0081, 0x3F80, 0xBF80,
      0x3F81, 0x3B80,  // 2^-8: 1 + 2^-8 is a tie of bfloat16's rounding.
      0x3B81, 0xBB80, 0x4040, 0x1F80, 0x2000, 0x7F00, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0};
  const std::vector<uint64_t> cs = {0x0000, 0x8000, 0x3F80, 0x8001, 0x7F7F};
  auto finite = [](uint64_t h) { return (h & 0x7F80u) != 0x7F80u; };
  long cases = 0;
  for (uint64_t x : vals) {
    for (uint64_t y : vals) {
      const std::vector<std::pair<std::vector<uint64_t>, std::vector<uint64_t>>> dots = {
          {{x, y}, {y, x}},
          {{x, x ^ 0x8000u, y}, {y, y, 0x3F80}},
          {{0x3F80, x, y}, {y, 0x3B80, x}}};
      for (const auto& [a, b] : dots) {
        for (uint64_t c : cs) {
          for (bool bound : {false, true}) {
            EvalOptions opt;
            opt.want_bound = bound;
            const std::string what = m.name + " x " + Hex(x) + " y " + Hex(y) + " k " +
                                     std::to_string(a.size()) + " c " + Hex(c) +
                                     (bound ? " bound" : "");
            bool all_finite = finite(c);
            for (uint64_t t : a) all_finite &= finite(t);
            for (uint64_t t : b) all_finite &= finite(t);
            const EvalResult gs = *GenericEvaluateSum(m, a, c, opt);
            uint64_t before = FastEvalFallbacks();
            const absl::StatusOr<EvalResult> fs = FastEvaluateSum(m, a, c, opt);
            ASSERT_TRUE(fs.ok()) << what;
            ExpectSame(*fs, gs, "sum " + what);
            bool sum_finite = true;
            for (uint64_t t : a) sum_finite &= finite(t);
            if (sum_finite && finite(c) && finite(gs.bits)) {
              EXPECT_EQ(FastEvalFallbacks(), before) << "sum " << what;
            }
            const EvalResult gd = *GenericEvaluateDot(m, a, b, c, opt);
            before = FastEvalFallbacks();
            const absl::StatusOr<EvalResult> fd = FastEvaluateDot(m, a, b, c, opt);
            ASSERT_TRUE(fd.ok()) << what;
            ExpectSame(*fd, gd, "dot " + what);
            if (all_finite && finite(gd.bits)) {
              EXPECT_EQ(FastEvalFallbacks(), before) << "dot " << what;
            }
            cases += 2;
            if (HasFailure()) return;
          }
        }
      }
    }
  }
  std::cout << cases << " bfloat16-accumulator special-value cases\n";
}

TEST(FastEvalTest, WhitelistRejectsWhatItDoesNotImplement) {
  Model base = *LoadModelFile(std::string(FPCONFORM_MODELS_SOURCE_DIR) + "/cuda-f32-fma.toml");
  ASSERT_TRUE(FastPathEligible(base));
  Model m = base;
  m.adder.env.rounding = Rounding::kTowardZero;
  EXPECT_FALSE(FastPathEligible(m));
  m = base;
  m.accumulator.combine_env.flush_to_zero = true;  // ftz only on the adder's steps.
  EXPECT_FALSE(FastPathEligible(m));
  const Model f64 = *LoadModelFile(std::string(FPCONFORM_MODELS_SOURCE_DIR) + "/cpu-f64-seq.toml");
  m = f64;
  m.adder.env.flush_to_zero = true;  // FlushTiny is float32's.
  EXPECT_FALSE(FastPathEligible(m));
  const Model kahan = *LoadModelFile(std::string(FPCONFORM_MODELS_SOURCE_DIR) + "/kahan-f32.toml");
  m = kahan;
  m.adder.env.denormals_are_zero = true;
  EXPECT_FALSE(FastPathEligible(m));
  const Model tf32 =
      *LoadModelFile(std::string(FPCONFORM_MODELS_SOURCE_DIR) + "/nvidia-h100-tf32.toml");
  m = tf32;
  m.inputs.daz = true;  // daz with a conversion (and a fused adder).
  EXPECT_FALSE(FastPathEligible(m));
  m = base;
  m.chain.kind = ChainKind::kStrided;
  m.chain.ways = 4;
  m.chain.combine = CombineOrder::kHalving;  // The walk would read it as pairwise.
  EXPECT_FALSE(FastPathEligible(m));
  m = base;
  m.chain.kind = ChainKind::kTree;  // No shape: nothing to walk.
  EXPECT_FALSE(FastPathEligible(m));
  m = base;
  m.chain.kind = static_cast<ChainKind>(200);  // A kind added later.
  EXPECT_FALSE(FastPathEligible(m));
  m = base;
  m.adder.kind = static_cast<AdderKind>(200);
  EXPECT_FALSE(FastPathEligible(m));
  m = base;
  m.output.format = &Float16();
  EXPECT_FALSE(FastPathEligible(m));
  m = f64;
  m.output.format = &BFloat16();  // float64 -> bfloat16: not a conversion the plan knows.
  EXPECT_FALSE(FastPathEligible(m));
  // float64 inputs: only into a float64 host accumulator, both inputs float64, no inputs.daz,
  // rne only (the generic engine keeps the rest).
  const Model ob64 = *LoadModelFile(std::string(FPCONFORM_MODELS_SOURCE_DIR) +
                                    "/numpy-openblas-skylakex-f64.toml");
  ASSERT_TRUE(FastPathEligible(ob64));
  m = ob64;
  m.accumulator.format = &Float32();
  m.accumulator.fraction_bits = Float32().fraction_bits;
  EXPECT_FALSE(FastPathEligible(m));
  m = ob64;
  m.inputs.b = &Float32();
  EXPECT_FALSE(FastPathEligible(m));
  m = ob64;
  m.inputs.daz = true;
  EXPECT_FALSE(FastPathEligible(m));
  m = ob64;
  m.adder.env.flush_to_zero = true;
  EXPECT_FALSE(FastPathEligible(m));
  m = ob64;
  m.adder.env.rounding = Rounding::kTowardZero;
  EXPECT_FALSE(FastPathEligible(m));
  m = ob64;
  m.accumulator.combine_env.rounding = Rounding::kUpward;
  EXPECT_FALSE(FastPathEligible(m));
  // A bfloat16 accumulator: bfloat16 inputs, exact products, sequential chain, bfloat16 output.
  const Model bf16acc = *LoadModelFile(std::string(FPCONFORM_MODELS_SOURCE_DIR) +
                                       "/trainium2-xla-sum-bf16-bf16acc.toml");
  ASSERT_TRUE(FastPathEligible(bf16acc));
  m = bf16acc;
  m.chain.kind = ChainKind::kBlocked;
  m.chain.block = 16;
  EXPECT_FALSE(FastPathEligible(m));
  m = bf16acc;
  m.inputs.a = m.inputs.b = &Float32();
  EXPECT_FALSE(FastPathEligible(m));
  m = bf16acc;
  m.adder.kind = AdderKind::kKahan;
  EXPECT_FALSE(FastPathEligible(m));
  m = bf16acc;
  m.product.policy = ProductPolicy::kRound;
  m.product.format = &BFloat16();
  EXPECT_FALSE(FastPathEligible(m));
  m = bf16acc;
  m.output.format = &Float32();
  EXPECT_FALSE(FastPathEligible(m));
  m = bf16acc;
  m.adder.env.rounding = Rounding::kTowardZero;
  EXPECT_FALSE(FastPathEligible(m));
  m = base;
  m.accumulator.combine_env.saturate = true;
  EXPECT_FALSE(FastPathEligible(m));
  Model fused =
      *LoadModelFile(std::string(FPCONFORM_MODELS_SOURCE_DIR) + "/nvidia-h100-bf16.toml");
  ASSERT_TRUE(FastPathEligible(fused));
  m = fused;
  m.adder.fraction_bits = 60;  // The double sum would not be exact.
  EXPECT_FALSE(FastPathEligible(m));
  m = fused;
  m.adder.env.rounding = Rounding::kUpward;
  EXPECT_FALSE(FastPathEligible(m));
  m = fused;
  m.output.format = &BFloat16();  // bfloat16 output after a fused adder.
  EXPECT_FALSE(FastPathEligible(m));
  m = fused;
  m.chain.kind = ChainKind::kPromote;
  m.chain.every = 64;
  m.chain.promote_format = &BFloat16();  // bfloat16 promotion after a fused adder.
  m.output.format = &BFloat16();
  EXPECT_FALSE(FastPathEligible(m));
  m = fused;
  m.accumulator.format = &Float64();
  EXPECT_FALSE(FastPathEligible(m));
  EXPECT_EQ(FastEvaluateDot(m, {}, {}, 0).status().code(), absl::StatusCode::kFailedPrecondition);
}

#if defined(__x86_64__)
// A non-default MXCSR (flush to zero, round toward zero) must not change results: the fast path
// hands such calls to the generic one.
TEST(FastEvalTest, NonDefaultMxcsrDelegates) {
  const Model m = *LoadModelFile(std::string(FPCONFORM_MODELS_SOURCE_DIR) + "/cuda-f32-fma.toml");
  const Case cs = MakeCase(m, 100, kZerosSubnormals, DeriveSeed(Seed(), {77}));
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8000u | 0x6000u);  // FZ, RC = toward zero.
  // The generic bound's double arithmetic follows MXCSR too: compare under the same state.
  const EvalResult gen = *GenericEvaluateDot(m, cs.a, cs.b, cs.c);
  const uint64_t before = FastEvalFallbacks();
  const absl::StatusOr<EvalResult> fast = FastEvaluateDot(m, cs.a, cs.b, cs.c);
  const uint64_t after = FastEvalFallbacks();
  _mm_setcsr(saved);
  ASSERT_TRUE(fast.ok());
  ExpectSame(*fast, gen, "mxcsr");
  EXPECT_EQ(after, before + 1);
}
#endif

// FPCONFORM_ISA=portable (base/isa.h: ActiveIsa() kPortable) hands every call to the generic
// path, with the same results; the detected level takes the fast path again.
TEST(FastEvalTest, PortableIsaDelegates) {
  const Model m = *LoadModelFile(std::string(FPCONFORM_MODELS_SOURCE_DIR) + "/cuda-f32-fma.toml");
  const Case cs = MakeCase(m, 100, kNarrow, DeriveSeed(Seed(), {78}));
  const EvalResult gen = *GenericEvaluateDot(m, cs.a, cs.b, cs.c);
  const Isa saved = ActiveIsa();
  ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
  uint64_t before = FastEvalFallbacks();
  const absl::StatusOr<EvalResult> portable = FastEvaluateDot(m, cs.a, cs.b, cs.c);
  EXPECT_EQ(FastEvalFallbacks(), before + 1);
  ASSERT_TRUE(SetActiveIsa(DetectedIsa()).ok());
  before = FastEvalFallbacks();
  const absl::StatusOr<EvalResult> fast = FastEvaluateDot(m, cs.a, cs.b, cs.c);
  const uint64_t fast_fallbacks = FastEvalFallbacks() - before;
  ASSERT_TRUE(SetActiveIsa(saved).ok());
  ASSERT_TRUE(portable.ok() && fast.ok());
  ExpectSame(*portable, gen, "portable");
  ExpectSame(*fast, gen, "detected");
  if (DetectedIsa() != Isa::kPortable) {
    EXPECT_EQ(fast_fallbacks, 0u);
  }
}

// The host kernels chosen by ActiveIsa() (fused tiles, host tiles with bounds, the walked and
// pairwise tiles' bound steps: AVX-512 or AVX2) give the same bits on every level this CPU has:
// matmuls of fused presets (group 4, 8, 32, promote), walked and pairwise ones, and float32 host
// chains (fma, rounded products, blocked, converted inputs).
TEST(FastEvalTest, MatmulKernelsMatchGenericOnEveryIsaLevel) {
  const std::string dir = FPCONFORM_MODELS_SOURCE_DIR;
  std::vector<Model> models;
  for (const char* name : {"nvidia-v100-fp16", "nvidia-a100-tf32",
                           "nvidia-h100-fp8e4m3-promote128", "x86-avx512bf16",
                           "trainium2-bf16-pairwise", "cuda-f32-fma", "cpu-f32-seq",
                           "numpy-openblas-skylakex-f32", "trainium2-bf16"}) {
    models.push_back(*LoadModelFile(dir + "/" + name + ".toml"));
  }
  for (const char* name : {"cuda-f32-fma", "cpu-f32-seq"}) {
    Model v = *LoadModelFile(dir + "/" + name + ".toml");
    v.inputs.daz = true;
    v.chain.kind = ChainKind::kBlocked;
    v.chain.block = 48;
    v.name += "+input_daz+blocked48";
    models.push_back(v);
  }
  const Isa saved = ActiveIsa();
  for (Isa isa : AvailableIsas()) {
    if (isa == Isa::kPortable) continue;  // Delegates (PortableIsaDelegates).
    SCOPED_TRACE(std::string(IsaName(isa)));
    ASSERT_TRUE(SetActiveIsa(isa).ok());
    for (const Model& m : models) {
      SCOPED_TRACE(m.name);
      CheckMatmul(m);
      if (HasFatalFailure()) break;
    }
    if (HasFatalFailure()) break;
  }
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

// The fused tiles at the ends of the float32 range, on every ISA level (fast_fused_lanes.inc's
// FusedTileLanes takes a shortcut at each): (0) a subnormal c with products near 2^-126 under
// nominal alignment exponents (c's exponent is Emin there, not its own), and non-finite c;
// (1) a group result past 2^128 that the next group cancels (the lane must go to the generic
// path, not come back in range); (2) full groups of signed zeros only (products of +-0 and
// positive numbers), with c = +-0 or none (the sign of a zero result). Values and bounds, c
// given or not.
TEST(FastEvalTest, FusedTilesMatchGenericAtTheFloat32Range) {
  const std::string dir = FPCONFORM_MODELS_SOURCE_DIR;
  const Isa saved = ActiveIsa();
  for (const char* name : {"nvidia-a100-bf16", "nvidia-a100-tf32", "nvidia-v100-fp16"}) {
    SCOPED_TRACE(name);
    const Model m = *LoadModelFile(dir + "/" + name + ".toml");
    const FormatSpec& fa = *m.inputs.a;
    const FormatSpec& fb = *m.inputs.b;
    const FormatSpec& fc = m.FinalAccumulatorFormat();
    const int g = m.adder.group;
    PinnedRng rng(DeriveSeed(Seed(), {uint64_t(g), uint64_t(Emax(fa)), 4242}));
    for (int kase = 0; kase < 3; ++kase) {
      if (kase == 1 && Emax(fa) + Emax(fb) < 130) continue;  // Products cannot pass 2^128.
      SCOPED_TRACE("case " + std::to_string(kase));
      // A 2-row tile and a tail row; two groups and a partial one (case 2: no partial group,
      // whose zero result is +0 whatever came before).
      const int mm = 3, nn = 16, kk = 2 * g + (kase == 2 ? 0 : g / 2);
      std::vector<uint64_t> a(size_t(mm) * kk), b(size_t(kk) * nn), c(size_t(mm) * nn);
      for (int i = 0; i < mm; ++i) {
        for (int p = 0; p < kk; ++p) {
          double x = rng.LogUniform(-70, -62);
          if (kase == 1) x = p < 2 * g ? (p < g ? 1 : -1) * std::ldexp(1.0 + i / 8.0, 100) : x;
          if (kase == 2) x = i == 0 ? 0.0 : i == 1 ? -0.0 : rng.Below(2) ? 0.0 : -0.0;
          a[size_t(i) * kk + p] = DoubleToBits(fa, x);
        }
      }
      for (int p = 0; p < kk; ++p) {
        for (int j = 0; j < nn; ++j) {
          double x = kase == 2 ? std::fabs(rng.LogUniform(-3, 3)) : rng.LogUniform(-70, -62);
          if (kase == 1 && p < 2 * g) x = std::ldexp(1.0 + j / 32.0, 30);
          b[size_t(p) * nn + j] = DoubleToBits(fb, x);
        }
      }
      for (size_t idx = 0; idx < c.size(); ++idx) {
        double x = kase == 2 ? (idx % 2 ? -0.0 : 0.0)
                             : std::copysign(std::ldexp(rng.Uniform(0.5, 1.0), -126 - int(idx % 20)),
                                             idx % 3 ? 1.0 : -1.0);
        if (kase == 0 && idx % 11 == 5) {
          x = idx % 3 == 0 ? std::numeric_limits<double>::quiet_NaN()
                           : std::copysign(std::numeric_limits<double>::infinity(), x);
        }
        c[idx] = DoubleToBits(fc, x);
      }
      for (Isa isa : AvailableIsas()) {
        if (isa == Isa::kPortable) continue;
        SCOPED_TRACE(std::string(IsaName(isa)));
        ASSERT_TRUE(SetActiveIsa(isa).ok());
        for (int variant = 0; variant < 4; ++variant) {
          const bool bound = variant & 1, with_c = variant & 2;
          std::vector<uint64_t> d(c.size());
          std::vector<double> bounds(bound ? c.size() : 0);
          ASSERT_TRUE(FastEvaluateMatmul(m, mm, nn, kk, a, Layout::kRowMajor, b, Layout::kRowMajor,
                                         with_c ? std::span<const uint64_t>(c)
                                                : std::span<const uint64_t>(),
                                         d, bounds, {}, 1)
                          .ok());
          for (int i = 0; i < mm; ++i) {
            for (int j = 0; j < nn; ++j) {
              const auto [row, col] = RowAndColumn(a, b, kk, nn, i, j);
              const size_t idx = size_t(i) * nn + j;
              const EvalResult want = *GenericEvaluateDot(m, row, col, with_c ? c[idx] : 0);
              ASSERT_EQ(Hex(d[idx]), Hex(want.bits))
                  << "element " << i << "," << j << " bound " << bound << " c " << with_c;
              if (bound) {
                ASSERT_EQ(std::bit_cast<uint64_t>(bounds[idx]), std::bit_cast<uint64_t>(want.bound))
                    << "element " << i << "," << j << " c " << with_c;
              }
            }
          }
        }
      }
    }
  }
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

// adder.overflow ("ieee" and "inf") on fused groups that leave float32's range: the fast dot,
// the fused matmul tiles (every ISA level) and the portable level (which delegates) give the
// generic path's bits and bounds. Rows: 0 overflows upward in its first group, 1 downward, 2 in
// its second group after an ordinary first one, 3 stays in range. The test checks that both
// values of adder.overflow are reached (Inf and max finite), so it cannot pass vacuously.
TEST(FastEvalTest, FusedOverflowMatchesGenericOnEveryIsa) {
  const std::string dir = FPCONFORM_MODELS_SOURCE_DIR;
  const Isa saved = ActiveIsa();
  for (const char* name : {"nvidia-h100-bf16", "nvidia-h100-tf32", "nvidia-a100-bf16"}) {
    for (FusedOverflow overflow : {FusedOverflow::kIeee, FusedOverflow::kInf}) {
      Model m = *LoadModelFile(dir + "/" + name + ".toml");
      m.adder.overflow = overflow;
      SCOPED_TRACE(std::string(name) + (overflow == FusedOverflow::kInf ? " inf" : " ieee"));
      const FormatSpec& fa = *m.inputs.a;
      const FormatSpec& fb = *m.inputs.b;
      const FormatSpec& fc = m.FinalAccumulatorFormat();
      const int g = m.adder.group;
      PinnedRng rng(DeriveSeed(Seed(), {uint64_t(g), 2929}));
      const int mm = 5, nn = 16, kk = 2 * g + g / 2;
      std::vector<uint64_t> a(size_t(mm) * kk), b(size_t(kk) * nn), c(size_t(mm) * nn);
      for (int i = 0; i < mm; ++i) {
        for (int p = 0; p < kk; ++p) {
          double x = rng.LogUniform(-3, 3);
          const bool big = (i == 0 || i == 1) ? p < g : i == 2 ? (p >= g && p < 2 * g) : false;
          if (big) x = (i == 1 ? -1 : 1) * std::ldexp(1.0 + (p % 8) / 8.0, 100);
          a[size_t(i) * kk + p] = DoubleToBits(fa, x);
        }
      }
      for (int p = 0; p < kk; ++p) {
        for (int j = 0; j < nn; ++j) {
          // 2^100 * 2^27 = 2^127 per product: a group of G >= 2 such products passes 2^128.
          const double x = p < 2 * g ? std::ldexp(1.0 + j / 32.0, 27) : rng.LogUniform(-3, 3);
          b[size_t(p) * nn + j] = DoubleToBits(fb, x);
        }
      }
      for (uint64_t& x : c) x = DoubleToBits(fc, rng.LogUniform(-3, 3));
      int infs = 0, maxes = 0;
      for (Isa isa : AvailableIsas()) {
        SCOPED_TRACE(std::string(IsaName(isa)));
        ASSERT_TRUE(SetActiveIsa(isa).ok());
        std::vector<uint64_t> d(c.size());
        std::vector<double> bounds(c.size());
        ASSERT_TRUE(FastEvaluateMatmul(m, mm, nn, kk, a, Layout::kRowMajor, b, Layout::kRowMajor,
                                       c, d, bounds, {}, 1)
                        .ok());
        for (int i = 0; i < mm; ++i) {
          for (int j = 0; j < nn; ++j) {
            const auto [row, col] = RowAndColumn(a, b, kk, nn, i, j);
            const size_t idx = size_t(i) * nn + j;
            const EvalResult want = *GenericEvaluateDot(m, row, col, c[idx]);
            ASSERT_EQ(Hex(d[idx]), Hex(want.bits)) << "element " << i << "," << j;
            ASSERT_EQ(std::bit_cast<uint64_t>(bounds[idx]), std::bit_cast<uint64_t>(want.bound))
                << "element " << i << "," << j;
            ExpectSame(*FastEvaluateDot(m, row, col, c[idx]), want, "dot");
            infs += (want.bits & 0x7FFFFFFFu) == 0x7F800000u;
            maxes += (want.bits & 0x7FFFFFFFu) == 0x7F7FFFFFu;
          }
        }
      }
      if (overflow == FusedOverflow::kInf) {
        EXPECT_GT(infs, 0);
        EXPECT_EQ(maxes, 0);
      } else {
        EXPECT_GT(maxes, 0);
      }
    }
  }
  ASSERT_TRUE(SetActiveIsa(saved).ok());
}

TEST(FastEvalTest, ErrorsAsGeneric) {
  const Model m = *LoadModelFile(std::string(FPCONFORM_MODELS_SOURCE_DIR) + "/cuda-f32-fma.toml");
  std::vector<uint64_t> a(3), b(2), d(4);
  EXPECT_EQ(FastEvaluateDot(m, a, b, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FastEvaluateMatmul(m, 2, 2, 2, a, Layout::kRowMajor, b, Layout::kRowMajor, {}, d)
                .code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<uint64_t> a4(4), b4(4);
  EXPECT_EQ(FastEvaluateMatmul(m, 2, 2, 2, a4, Layout::kRowMajor, b4, Layout::kRowMajor, {}, d,
                               {}, {}, 0)
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fpconform
