// Models made of IEEE operations agree bit for bit with the same order computed with host
// float32 / float64 operations.
//
// For every preset whose adder is an IEEE or FMA step (adder.kind "ieee" or "fma", not "fused"),
// the order MODEL_FORMAT.md describes for its chain kind is written again below as plain C++
// loops on float or double (nothing of accumulation/ or formats/ is called on that path), and
// compared bit for bit with EvaluateDot / EvaluateSum on seeded random inputs of many lengths
// (1..1100, so also across and off block boundaries). The host runs in its default rounding mode
// (round to nearest even) and the project builds with -ffp-contract=off, so `a * b + acc` is two
// roundings and std::fma one, exactly as written.
//
// Host arithmetic used, and why it is the model's arithmetic:
//  * Inputs of 8- and 16-bit formats and float32 are decoded to float exactly by a small decoder
//    written here from the formats' published layouts (IEEE 754-2019 §3.4 for float16, bfloat16
//    = the top half of float32, OCP OFP8 r1.0 Table 1 for float8_e4m3fn / float8_e5m2, the
//    IEEE-like float8_e4m3 of ml_dtypes for Trainium: bias 7, Inf at S.1111.000).
//  * policy "exact" + adder "ieee"/"fma" in float32/float64: one rounding of acc + a*b:
//    std::fma in that type (a*b of any input format here is exact inside fma).
//  * policy "round" to the accumulator's format: p = a * b; acc = acc + p (two roundings).
//  * combine adds (blocked, pairwise incl. chain.chunk, strided, split_k): a host + in the
//    accumulator's type.
//  * adder "kahan": Kahan's loop y = p - comp; t = s + y; comp = (t - s) - y; s = t.
//  * promote with a bfloat16 outer accumulator (Trainium3 BF16 PSUM): round(outer + inner) to
//    bfloat16 computed as TwoSum in double (exact error) followed by a round-to-nearest-even to
//    8 significant bits that looks at the error only to break an exact tie in the double sum.
//    The same rounding serves a bfloat16 running sum (every step round(acc + x) to bfloat16)
//    and a float32 result cast to a bfloat16 output (then exact in double: no tie error).
//  * chain.kind "tree": the shape (as ParseModel stored it in Model::chain.tree) evaluated
//    recursively per block, absent leaves pruned, block results added to c in order.
// Presets needing anything else (directed roundings, DAZ/FTZ, input conversion, random split-K
// order, the simd and cascade chains) are printed as not covered; the IEEE-step presets that
// exist on 2026-11-29 are required to be covered (kRequired).
#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "accumulation/evaluate.h"
#include "accumulation/model.h"
#include "accumulation/model_catalog.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

// The seed every case derives from: FPCONFORM_SEED when set, else 0x40517F10A7.
uint64_t Seed() {
  static const uint64_t seed = TestSeed(0x40517F10A7ULL, "model_host_float_test");
  return seed;
}
constexpr int kCasesPerOp = 3000;

const char* const kRequired[] = {
    "cpu-f32-seq",       "cpu-f64-seq",    "cuda-f32-fma",
    "kahan-f32",         "numpy-sum-f32",  "trainium1-bf16",
    "trainium2-bf16",    "trainium2-bf16-sequential", "trainium2-bf16-pairwise",
    "trainium3-bf16",    "trainium3-bf16-psumbf16",   "trainium2-fp8e4m3",
    "trainium2-fp8e4m3-doublerow",
    // Trainium reductions (models/SOURCES.md §3b): free axis (Vector Engine), compiler flag,
    // partition axis (nc_matmul with ones, GpSimd).
    "trainium2-reduce-f32-sequential", "trainium2-reduce-f32-pairwise",
    "trainium2-reduce-f32-datapath",   "trainium2-reduce-bf16-sequential",
    "trainium2-reduce-bf16-pairwise",  "trainium2-reduce-bf16-datapath",
    "trainium2-xla-sum-bf16-mixedacc", "trainium2-xla-sum-bf16-bf16acc",
    "trainium2-partsum-bf16-sequential", "trainium2-partsum-bf16-pairwise",
    "trainium2-gpsimd-sum-f32-sequential", "trainium2-gpsimd-sum-f32-pairwise",
    "trainium2-gpsimd-sum-f32-blocked16"};

// ---- Input formats, from their published layouts (independent of formats/format_spec). ----
struct HostFormat {
  const char* name;
  int ebits, fbits, bias;
  bool ieee_specials;  // All-ones exponent = Inf/NaN (else only the all-ones pattern is NaN).
};
constexpr HostFormat kHostFormats[] = {
    {"float32", 8, 23, 127, true},       {"bfloat16", 8, 7, 127, true},
    {"float16", 5, 10, 15, true},        {"float8_e4m3", 4, 3, 7, true},
    {"float8_e4m3fn", 4, 3, 7, false},   {"float8_e5m2", 5, 2, 15, true},
};

const HostFormat* FindHost(std::string_view name) {
  for (const HostFormat& f : kHostFormats) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

// The value of finite bits; nullopt for Inf/NaN patterns. Exact in double.
std::optional<double> Decode(const HostFormat& f, uint64_t bits) {
  const uint64_t frac = bits & ((uint64_t{1} << f.fbits) - 1);
  const uint64_t exp = (bits >> f.fbits) & ((uint64_t{1} << f.ebits) - 1);
  const bool neg = (bits >> (f.fbits + f.ebits)) & 1;
  const uint64_t all = (uint64_t{1} << f.ebits) - 1;
  if (f.ieee_specials && exp == all) return std::nullopt;
  if (!f.ieee_specials && exp == all && frac == (uint64_t{1} << f.fbits) - 1) return std::nullopt;
  double mag = exp == 0 ? std::ldexp(static_cast<double>(frac), 1 - f.bias - f.fbits)
                        : std::ldexp(static_cast<double>(frac | (uint64_t{1} << f.fbits)),
                                     static_cast<int>(exp) - f.bias - f.fbits);
  return neg ? -mag : mag;
}

// Random finite bits of f with the exponent field within `window` of the bias (some subnormals).
uint64_t DrawBits(const HostFormat& f, PinnedRng& rng, int window) {
  for (;;) {
    const int64_t max_field = (int64_t{1} << f.ebits) - 1;
    const int64_t lo = std::max<int64_t>(0, f.bias - window);
    const int64_t hi = std::min(max_field, int64_t{f.bias + window});
    int64_t e = lo + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(hi - lo + 1)));
    if (rng.Below(16) == 0) e = 0;  // Subnormals (and zeros).
    const uint64_t bits = (rng.Next() & ((uint64_t{1} << f.fbits) - 1)) |
                          (static_cast<uint64_t>(e) << f.fbits) |
                          ((rng.Next() & 1) << (f.fbits + f.ebits));
    if (Decode(f, bits).has_value()) return bits;
  }
}

// ---- Round to bfloat16 (host doubles; see the header comment). ----
// x = s + err exactly, s = RN_double(x). Returns RNE_bf16(x) as a float (exact).
float RoundToBf16(double s, double err) {
  if (s == 0 || !std::isfinite(s)) return static_cast<float>(s);
  const int e = std::max(std::ilogb(s), -126);
  const double q = std::ldexp(1.0, e - 7);  // bfloat16 ulp at |s|.
  const double t = s / q;                   // Exact: q is a power of two, no underflow.
  const double fl = std::floor(t);
  const double frac = t - fl;               // Exact.
  double r = fl;
  if (frac > 0.5 || (frac == 0.5 && (err > 0 || (err == 0 && std::fmod(fl, 2.0) != 0)))) {
    r = fl + 1;
  }
  const double v = r * q;
  if (std::fabs(v) >= 0x1p128) return std::copysign(INFINITY, s);
  if (v == 0) return std::copysign(0.0f, s);
  return static_cast<float>(v);
}
float AddBf16(float outer, float inner) {
  const double a = outer, b = inner;
  const double s = a + b;
  const double bb = s - a;
  const double err = (a - (s - bb)) + (b - bb);  // Knuth's TwoSum: s + err == a + b exactly.
  if (s == 0) return outer + inner;  // Exact zero: the IEEE sign rule of the float sum.
  return RoundToBf16(s, err);
}

// ---- The host evaluator of one non-fused model. ----
template <class T>
struct HostChain {
  const Model& m;
  std::vector<T> a, b;  // Decoded inputs (b empty for sums).
  bool is_sum;
  bool exact_product;

  T Leaf(size_t i) const { return is_sum ? a[i] : a[i] * b[i]; }
  T Step(T acc, size_t i) const {
    if (is_sum) return acc + a[i];
    if (exact_product) return std::fma(a[i], b[i], acc);
    const T p = a[i] * b[i];
    return acc + p;
  }
  T Sequential(size_t lo, size_t hi, T acc) const {
    if (m.adder.kind == AdderKind::kKahan) {
      // Kahan (1965), as the kahan-f32 preset's C loop writes it: four roundings per term.
      T comp = 0;
      for (size_t i = lo; i < hi; ++i) {
        const T y = Leaf(i) - comp;
        const T t = acc + y;
        comp = (t - acc) - y;
        acc = t;
      }
      return acc;
    }
    for (size_t i = lo; i < hi; ++i) acc = Step(acc, i);
    return acc;
  }
  // ((v0 + v1) + (v2 + v3)) + ...: the first half takes ceil(n/2) operands.
  T Balanced(const T* v, size_t n) const {
    if (n == 1) return v[0];
    const size_t h = (n + 1) / 2;
    return Balanced(v, h) + Balanced(v + h, n - h);
  }
  T PairwiseLeaf(size_t lo, size_t n) const {
    const size_t u = static_cast<size_t>(m.chain.unroll);
    if (u == 1 || n < u) return Sequential(lo, lo + n, T(0));
    std::vector<T> r(u);
    for (size_t j = 0; j < u; ++j) r[j] = Leaf(lo + j);
    size_t i = u;
    for (; i + u <= n; i += u) {
      for (size_t j = 0; j < u; ++j) r[j] = Step(r[j], lo + i + j);
    }
    T res = Balanced(r.data(), u);
    for (; i < n; ++i) res = Step(res, lo + i);
    return res;
  }
  T Pairwise(size_t lo, size_t n) const {
    if (n <= static_cast<size_t>(m.chain.leaf)) return PairwiseLeaf(lo, n);
    const size_t sm = static_cast<size_t>(m.chain.split_multiple);
    size_t h = n / 2 / sm * sm;
    if (h < sm) h = sm;
    return Pairwise(lo, h) + Pairwise(lo + h, n - h);
  }
  // The value of tree node v over the block starting at lo; nullopt when no leaf below it is
  // present (its unit is at or beyond n). The shape is Model::chain.tree as ParseModel read it.
  std::optional<T> TreeValue(int v, size_t lo, size_t n) const {
    const Model::Chain::TreeNode& node = m.chain.tree[static_cast<size_t>(v)];
    if (node.unit >= 0) {
      const size_t i = lo + static_cast<size_t>(node.unit);
      if (i >= n) return std::nullopt;
      return Step(T(0), i);
    }
    std::optional<T> acc;
    for (int child : node.children) {
      const std::optional<T> x = TreeValue(child, lo, n);
      if (!x) continue;
      acc = acc ? *acc + *x : *x;
    }
    return acc;
  }
  T Run(T c) const {
    const size_t n = a.size();
    switch (m.chain.kind) {
      case ChainKind::kSequential:
        return Sequential(0, n, c);
      case ChainKind::kBlocked: {
        const size_t bl = static_cast<size_t>(m.chain.block);
        T acc = c;
        size_t min_l = 0;
        for (size_t lo = 0; lo < n; lo += min_l) {
          // OpenBLAS's K loop, written as in driver/level3/level3.c (one thread) and
          // level3_thread.c (several), not through accumulation's BlockedBlockEnd.
          min_l = n - lo;
          if (m.chain.tail == BlockTail::kFixed || min_l >= 2 * bl) {
            min_l = std::min(min_l, bl);
          } else if (min_l > bl) {
            const size_t u = static_cast<size_t>(m.chain.tail_multiple);
            min_l = m.chain.tail == BlockTail::kHalveUp ? (min_l + 1) / 2
                                                        : ((min_l / 2 + u - 1) / u) * u;
          }
          acc = acc + Sequential(lo, lo + min_l, T(0));
        }
        return acc;
      }
      case ChainKind::kPairwise: {
        if (m.chain.chunk == 0) return c + Pairwise(0, n);
        // chain.chunk (NumPy's 8192-element buffers, Trainium's 128-row tiles): the running
        // result starts at c and each chunk's pairwise sum is added to it in order.
        const size_t ck = static_cast<size_t>(m.chain.chunk);
        T acc = c;
        size_t lo = 0;
        do {
          acc = acc + Pairwise(lo, std::min(n, lo + ck) - lo);
          lo += ck;
        } while (lo < n);
        return acc;
      }
      case ChainKind::kStrided: {
        const size_t w = static_cast<size_t>(m.chain.ways);
        std::vector<T> acc(w, T(0));
        acc[0] = c;
        for (size_t i = 0; i < n; ++i) acc[i % w] = Step(acc[i % w], i);
        if (m.chain.combine == CombineOrder::kPairwise) return Balanced(acc.data(), w);
        T r = acc[0];
        for (size_t j = 1; j < w; ++j) r = r + acc[j];
        return r;
      }
      case ChainKind::kSplitK: {
        const size_t s = static_cast<size_t>(m.chain.slices);
        const size_t size = (n + s - 1) / s;
        T acc = c;
        for (size_t k = 0; k < s; ++k) {
          const size_t lo = std::min(n, k * size), hi = std::min(n, lo + size);
          acc = acc + Sequential(lo, hi, T(0));
        }
        return acc;
      }
      case ChainKind::kTree: {
        // Blocks of m units, each reduced by the shape (a leaf: the step +0 + p_i; a list: the
        // left-to-right fold of its present children; absent leaves pruned), added to c in order.
        const size_t units = static_cast<size_t>(m.chain.tree_units);
        T acc = c;
        for (size_t lo = 0; lo < n; lo += units) {
          acc = acc + *TreeValue(m.chain.tree_root, lo, n);
        }
        return acc;
      }
      default:
        return T(0);  // kPromote is handled by the caller (its outer format differs).
    }
  }
};

// Why a model is not covered here, or "" when it is.
std::string Unsupported(const Model& m) {
  auto rne = [](const OpEnv& e) {
    return e.rounding == Rounding::kNearestEven && !e.saturate && !e.flush_to_zero &&
           !e.denormals_are_zero;
  };
  if (m.adder.kind == AdderKind::kFused) return "fused adder";
  if (m.adder.kind == AdderKind::kKahan && m.chain.kind != ChainKind::kSequential) {
    return "kahan outside a sequential chain";
  }
  if (m.chain.kind == ChainKind::kSimd || m.chain.kind == ChainKind::kCascade) {
    return "chain kind simd/cascade (no host loop written here)";
  }
  if (m.inputs.convert_to != nullptr) return "input conversion";
  if (m.inputs.daz) return "daz";
  if (!rne(m.adder.env) || !rne(m.accumulator.combine_env) || !rne(m.output.env)) {
    return "non-RNE rounding";
  }
  const std::string acc(m.accumulator.format->name);
  if (acc == "bfloat16") {
    // A bfloat16 running sum (e.g. trainium2-xla-sum-bf16-bf16acc): sequential IEEE steps only.
    if (m.chain.kind != ChainKind::kSequential || m.adder.kind != AdderKind::kIeee) {
      return "bfloat16 accumulator outside a sequential ieee chain";
    }
    if (m.output.format->name != "bfloat16") return "bfloat16 accumulator, other output";
    if (m.product.policy == ProductPolicy::kRound) return "bfloat16 accumulator, rounded products";
    if (!FindHost(m.inputs.a->name) || (m.inputs.b && !FindHost(m.inputs.b->name))) {
      return "input format";
    }
    return "";
  }
  if (acc != "float32" && acc != "float64") return "accumulator " + acc;
  if (m.accumulator.fraction_bits != m.accumulator.format->fraction_bits) return "reduced acc";
  if (m.product.policy == ProductPolicy::kRound && m.product.format != m.accumulator.format) {
    return "product format differs from the accumulator";
  }
  if (!FindHost(m.inputs.a->name) || (m.inputs.b && !FindHost(m.inputs.b->name))) {
    return "input format";
  }
  if (acc == "float32" && (m.inputs.a->name == "float64")) return "float64 inputs";
  if (m.chain.kind == ChainKind::kSplitK && m.chain.order == SplitOrder::kRandom) {
    return "random split order";
  }
  if (m.chain.kind == ChainKind::kPromote) {
    const std::string p(m.chain.promote_format->name);
    if (acc != "float32" || (p != "float32" && p != "bfloat16")) return "promote formats";
    if (!rne(m.chain.promote_env)) return "promote rounding";
    if (m.output.format != m.chain.promote_format) return "promote output";
    return "";
  }
  const std::string out(m.output.format->name);
  if (out != acc && !(acc == "float64" && out == "float32") &&
      !(acc == "float32" && out == "bfloat16")) {
    return "output " + out;
  }
  return "";
}

// The model's result computed on the host, as output-format bits.
template <class T>
uint64_t HostResult(const Model& m, const std::vector<double>& a, const std::vector<double>& b,
                    double c, bool is_sum) {
  HostChain<T> h{m, {}, {}, is_sum, m.product.policy == ProductPolicy::kExact};
  for (double x : a) h.a.push_back(static_cast<T>(x));  // Exact (checked by construction).
  for (double x : b) h.b.push_back(static_cast<T>(x));
  const std::string out(m.output.format->name);
  if (m.chain.kind == ChainKind::kPromote) {
    const size_t n = a.size(), every = static_cast<size_t>(m.chain.every);
    const bool bf16 = m.chain.promote_format->name == "bfloat16";
    float outer = static_cast<float>(c);
    for (size_t lo = 0; lo < n; lo += every) {
      const float inner = static_cast<float>(h.Sequential(lo, std::min(n, lo + every), T(0)));
      outer = bf16 ? AddBf16(outer, inner) : outer + inner;
    }
    const uint32_t bits = std::bit_cast<uint32_t>(outer);
    return bf16 ? bits >> 16 : bits;
  }
  if (m.accumulator.format->name == "bfloat16") {
    // Every step rounds acc + x (x a bfloat16 input, or an exact bf16 x bf16 product in float)
    // once to bfloat16: AddBf16's TwoSum in double.
    float acc = static_cast<float>(c);
    for (size_t i = 0; i < a.size(); ++i) {
      acc = AddBf16(acc, is_sum ? static_cast<float>(a[i])
                                : static_cast<float>(a[i]) * static_cast<float>(b[i]));
    }
    return std::bit_cast<uint32_t>(acc) >> 16;
  }
  const T r = h.Run(static_cast<T>(c));
  if (out == "bfloat16") {
    // The float32 result cast once to bfloat16 (RNE): exact in double, so no tie-breaking error.
    return std::bit_cast<uint32_t>(RoundToBf16(static_cast<double>(r), 0)) >> 16;
  }
  if (out == "float64") return std::bit_cast<uint64_t>(static_cast<double>(r));
  return std::bit_cast<uint32_t>(static_cast<float>(r));
}

int DrawLength(PinnedRng& rng) {
  switch (rng.Below(4)) {
    case 0: return 1 + static_cast<int>(rng.Below(40));
    case 1: return 1 + static_cast<int>(rng.Below(300));
    case 2: return 120 + static_cast<int>(rng.Below(20));  // Around 128.
    default: return 1 + static_cast<int>(rng.Below(1100));
  }
}

// Runs kCasesPerOp cases; returns the number of mismatches (the first few are reported).
int CheckModel(const Model& m, uint64_t model_key, bool is_sum) {
  const HostFormat& ha = *FindHost(m.inputs.a->name);
  const HostFormat& hb = m.inputs.b ? *FindHost(m.inputs.b->name) : ha;
  const std::string acc(m.accumulator.format->name);
  const std::string cfmt(m.FinalAccumulatorFormat().name);
  const HostFormat& hc = cfmt == "float64" ? ha : *FindHost(cfmt);  // float64 c: see below.
  int mismatches = 0;
  for (int i = 0; i < kCasesPerOp; ++i) {
    const uint64_t seed = DeriveSeed(Seed(), {model_key, static_cast<uint64_t>(i), is_sum});
    PinnedRng rng(seed);
    int n = DrawLength(rng);
    // Chunked pairwise chains (NumPy: 8192): some cases span one to two chunks.
    if (m.chain.kind == ChainKind::kPairwise && m.chain.chunk > 256 && i % 50 == 0) {
      n = m.chain.chunk - 2 +
          static_cast<int>(rng.Below(static_cast<uint64_t>(m.chain.chunk) + 10));
    }
    // Exponent windows: wide for narrow formats, kept away from overflow for float32/bf16 (a
    // product of two inputs and a sum of 1100 of them stay finite).
    const int wa = ha.ebits >= 8 ? 30 : 64, wb = hb.ebits >= 8 ? 30 : 64;
    std::vector<uint64_t> abits(n), bbits(is_sum ? 0 : n);
    std::vector<double> av(n), bv(is_sum ? 0 : n);
    for (int j = 0; j < n; ++j) {
      abits[j] = DrawBits(ha, rng, wa);
      av[j] = *Decode(ha, abits[j]);
      if (!is_sum) {
        bbits[j] = DrawBits(hb, rng, wb);
        bv[j] = *Decode(hb, bbits[j]);
      }
    }
    // Cancellation in one case of four: the second half negates the first half.
    if (rng.Below(4) == 0) {
      const uint64_t sign = uint64_t{1} << (ha.ebits + ha.fbits);
      for (int j = 0; j < n / 2; ++j) {
        abits[n - 1 - j] = abits[j] ^ sign;
        av[n - 1 - j] = -av[j];
        if (!is_sum) {
          bbits[n - 1 - j] = bbits[j];
          bv[n - 1 - j] = bv[j];
        }
      }
    }
    uint64_t cbits = 0;
    double cv = 0;
    if (rng.Below(3) != 0) {
      if (cfmt == "float64") {
        cv = static_cast<double>(static_cast<float>(rng.Normal()));
        cbits = std::bit_cast<uint64_t>(cv);
      } else {
        cbits = DrawBits(hc, rng, 20);
        cv = *Decode(hc, cbits);
      }
    }
    absl::StatusOr<EvalResult> r =
        is_sum ? EvaluateSum(m, abits, cbits) : EvaluateDot(m, abits, bbits, cbits);
    EXPECT_TRUE(r.ok()) << m.name << ": " << r.status();
    if (!r.ok()) return mismatches + 1;
    const uint64_t want = acc == "float64" ? HostResult<double>(m, av, bv, cv, is_sum)
                                           : HostResult<float>(m, av, bv, cv, is_sum);
    if (r->bits != want) {
      if (++mismatches <= 1) {
        std::vector<std::string> as, bs;
        for (uint64_t x : abits) as.push_back(absl::StrCat("0x", absl::Hex(x)));
        for (uint64_t x : bbits) bs.push_back(absl::StrCat("0x", absl::Hex(x)));
        ADD_FAILURE() << m.name << (is_sum ? " sum" : " dot") << " case " << i << " seed 0x"
                      << std::hex << seed << ": model 0x" << r->bits << " host 0x" << want
                      << std::dec << " n=" << n << "\n c=0x" << std::hex << cbits << std::dec
                      << "\n a=" << absl::StrJoin(as, ",") << "\n b=" << absl::StrJoin(bs, ",");
      }
    }
  }
  return mismatches;
}

TEST(ModelHostFloat, IeeePresetsMatchHostLoops) {
  ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  absl::StatusOr<std::vector<ModelFile>> files = catalog.LoadAll();
  ASSERT_TRUE(files.ok()) << files.status();
  std::vector<std::string> covered;
  for (size_t k = 0; k < files->size(); ++k) {
    const ModelFile& f = (*files)[k];
    if (!f.model.ok()) continue;  // model_bound_test reports unreadable files.
    const Model& m = *f.model;
    const std::string why = Unsupported(m);
    if (!why.empty()) {
      if (m.adder.kind != AdderKind::kFused) {
        std::printf("not covered: %s (%s)\n", f.name.c_str(), why.c_str());
      }
      continue;
    }
    covered.push_back(f.name);
    int bad = 0;
    if (m.op_dot) bad += CheckModel(m, k, false);
    if (m.op_sum) bad += CheckModel(m, k, true);
    std::printf("%-30s %s%s mismatches %d\n", f.name.c_str(), m.op_dot ? "dot " : "",
                m.op_sum ? "sum" : "", bad);
  }
  for (const char* name : kRequired) {
    EXPECT_NE(std::find(covered.begin(), covered.end(), name), covered.end())
        << name << " is not covered";
  }
}

// The bfloat16 rounding helper itself, on hand-checked values (it is test code that decides
// expected bits for the BF16 PSUM preset).
TEST(ModelHostFloat, Bf16RoundingHelper) {
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even -> 1; with a tiny positive error -> up.
  EXPECT_EQ(AddBf16(1.0f, 0x1p-8f), 1.0f);
  EXPECT_EQ(AddBf16(1.0f + 0x1p-7f, 0x1p-8f), 1.0f + 0x1p-6f);  // Odd -> even (up).
  // 1 + 2^-8 + 2^-40: the double sum is exact here and above the tie -> up.
  EXPECT_EQ(AddBf16(1.0f + 0x1p-8f, 0x1p-40f), 1.0f + 0x1p-7f);
  // A sum whose double rounding lands on the tie: 1 + 2^-8 + 2^-70 (err > 0) -> 1 + 2^-7.
  EXPECT_EQ(RoundToBf16(1.0 + 0x1p-8, 0x1p-70), 1.0f + 0x1p-7f);
  EXPECT_EQ(RoundToBf16(1.0 + 0x1p-8, -0x1p-70), 1.0f);
  EXPECT_EQ(RoundToBf16(-(1.0 + 0x1p-8), -0x1p-70), -(1.0f + 0x1p-7f));
  EXPECT_EQ(RoundToBf16(0x1p-133, 0), 0x1p-133f);   // Smallest bfloat16 subnormal.
  EXPECT_EQ(RoundToBf16(0x1p-134, 0), 0.0f);        // Half of it: tie to even 0.
  EXPECT_EQ(RoundToBf16(0x1.8p-134, 0), 0x1p-133f); // Above the tie.
  EXPECT_EQ(RoundToBf16(0x1.ffp127, 0), INFINITY);  // Above max (1.1111111b * 2^127) + half.
}

}  // namespace
}  // namespace fpconform
