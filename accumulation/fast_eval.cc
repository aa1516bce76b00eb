#include "accumulation/fast_eval.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <type_traits>
#include <vector>

#include "accumulation/bound_step.h"
#include "accumulation/chain_walk.h"
#include "accumulation/fast_plan.h"
#include "accumulation/strings_internal.h"
#include "formats/isa.h"
#include "formats/ops.h"
#include "formats/round_pack.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fpconform {
namespace {

using accumulation_internal::BoundStep;
using accumulation_internal::Cat;
using accumulation_internal::Eta;
using accumulation_internal::kUp;
using accumulation_internal::UnitRoundoff;
using accumulation_internal::Up;
using fast_internal::ChunkEnd;
using fast_internal::HostReady;
using fast_internal::InputKind;
using fast_internal::MakePlan;
using fast_internal::Plan;
using fast_internal::Table;

std::atomic<uint64_t> g_fallbacks{0};

// ---------------------------------------------------------------------------------------------
// Input decoding: container bits -> the float32 value (exact) and, for fused adders, 2^nominal.

// 2^max(E(x), -126) for a float32 value x (0 for 0): float32's and tfloat32's nominal exponent.
inline double Pow32(uint32_t bits) {
  const uint32_t e = (bits >> 23) & 0xFF;
  if (e == 0) return (bits & 0x7FFFFF) != 0 ? 0x1p-126 : 0.0;
  return static_cast<double>(std::bit_cast<float>(e << 23));
}

// Decodes one input; false for NaN/Inf or bits outside the container.
inline bool DecodeOne(InputKind kind, const Table* t, uint64_t bits, float& used, float& orig,
                      double& pow) {
  switch (kind) {
    case InputKind::kFloat32: {
      if ((bits >> 32) != 0) return false;
      const uint32_t b = static_cast<uint32_t>(bits);
      used = orig = std::bit_cast<float>(b);
      pow = Pow32(b);
      break;
    }
    case InputKind::kBFloat16: {
      // The top half of a float32 (same exponent range, Emin = -126).
      if ((bits >> 16) != 0) return false;
      const uint32_t b = static_cast<uint32_t>(bits) << 16;
      used = orig = std::bit_cast<float>(b);
      pow = Pow32(b);
      break;
    }
    case InputKind::kFloat16: {
      // IEEE binary16 (§3.6): bias 15, Emin = -14; subnormals f * 2^-24 (exact in float).
      if ((bits >> 16) != 0) return false;
      const uint32_t h = static_cast<uint32_t>(bits);
      const uint32_t e = (h >> 10) & 0x1F, f = h & 0x3FF, sign = (h & 0x8000u) << 16;
      if (e == 0x1F) return false;
      if (e == 0) {
        const float mag = static_cast<float>(f) * 0x1p-24f;
        used = std::bit_cast<float>(sign | std::bit_cast<uint32_t>(mag));
        pow = f != 0 ? 0x1p-14 : 0.0;
      } else {
        used = std::bit_cast<float>(sign | ((e + 112) << 23) | (f << 13));
        pow = std::bit_cast<double>(uint64_t{e - 15 + 1023} << 52);  // 2^(e - 15).
      }
      orig = used;
      break;
    }
    case InputKind::kTf32Rtz: {
      if ((bits >> 32) != 0) return false;
      const uint32_t b = static_cast<uint32_t>(bits);
      const uint32_t tb = b & ~uint32_t{0x1FFF};  // rtz to 10 fraction bits (normal or not).
      orig = std::bit_cast<float>(b);
      used = std::bit_cast<float>(tb);
      pow = Pow32(tb);
      break;
    }
    case InputKind::kTable:
      if ((bits & ~t->mask) != 0) return false;
      used = orig = t->value[bits];
      pow = t->pow[bits];
      break;
  }
  return std::isfinite(used);
}

// The decoded inputs of one dot (strided views into matrices or plain arrays).
struct DotView {
  const float* a;   // Used values.
  const float* b;
  const float* ao;  // Original values (== a without conversion).
  const float* bo;
  const double* apow;
  const double* bpow;
  size_t sa, sb;    // Strides.
  int k;
};

struct Decoded {
  std::vector<float> v, o;
  std::vector<double> pow;
};

// FastEvaluateMatmul's buffers (one set per calling thread, reused across calls).
struct MatScratch {
  std::vector<float> av, ao, bv, bo, bpackf;
  std::vector<double> apow, bpow, bd, bpack;
  std::vector<uint8_t> redo, bad_row, bad_col;
};

}  // namespace

// =============================================================================================
// Kernels (compiled for AVX2+FMA; only called after HostReady()).
#if defined(__x86_64__) && defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#elif defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
namespace {

template <class Acc>
struct Node {
  Acc v = 0;
  double m = 0, e = 0;
};

constexpr float kMinNormal32 = 0x1p-126f;

// adder.ftz on a correctly rounded float32 result v (Plan::ftz). |v| < 2^-126: the exact value
// is below 2^-126 - 2^-150, tiny before and after rounding: a zero of its sign. |v| > 2^-126:
// not tiny. |v| == 2^-126: the exact value may lie just below (tiny or not by the tininess
// rule), so `bad` sends the dot to the generic path.
inline float FlushTiny(float v, bool& bad) {
  const float a = std::fabs(v);
  bad |= a == kMinNormal32;
  return a < kMinNormal32 ? std::copysign(0.0f, v) : v;
}

// float32 bits rounded to bfloat16 bits (rne; a finite value past bfloat16's range gives Inf).
inline uint32_t Bf16RneBits(uint32_t bits) {
  return (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
}

// x + y rounded once to bfloat16 (rne), as a float32 value: the float32 sum rounded to odd
// (TwoSum's exact error decides the last bit) carries 24 >= 8 + 2 bits, so rounding it to
// bfloat16 gives the correctly rounded sum (Boldo & Melquiond, "Emulation of FMA and correctly
// rounded sums: proved algorithms using rounding to odd", IEEE TC 57(4), 2008). A float32
// overflow gives a non-finite value (the caller hands the dot to the generic path).
inline float AddRoundBf16(float x, float y) {
  const float s = x + y;
  const float bb = s - x;
  const float err = (x - (s - bb)) + (y - bb);
  uint32_t bits = std::bit_cast<uint32_t>(s);
  if (err != 0 && (bits & 1u) == 0) {
    // The odd neighbour on the side of the exact sum.
    bits = std::signbit(err) == std::signbit(s) ? bits + 1 : bits - 1;
  }
  return std::bit_cast<float>(Bf16RneBits(bits) << 16);
}

// Scalar evaluator of one dot over a DotView: the mirror of evaluate.cc's Evaluator for the
// plans above, value in Acc (float or double), bound in the same double operations.
template <class Acc, bool kBound>
class ScalarDot {
 public:
  ScalarDot(const Plan& p, const DotView& d) : p_(p), d_(d) {}
  bool bad = false;  // Fused group outside float32's normal range: use the generic path.

  Node<Acc> Run(Acc c) {
    Node<Acc> cn;
    cn.v = c;
    if constexpr (kBound) cn.m = std::fabs(static_cast<double>(c));
    const int k = d_.k;
    if (p_.kahan) return Kahan(cn);
    switch (p_.chain) {
      case ChainKind::kSequential: return Seq(cn, 0, k);
      case ChainKind::kPairwise: {
        if (p_.chunk == 0) return Combine(cn, Pairwise(0, k));
        // (((c + P(chunk_0)) + P(chunk_1)) + ...); at least one (possibly empty) chunk.
        Node<Acc> total = cn;
        int i = 0;
        do {
          total = Combine(total, Pairwise(i, std::min(k, i + p_.chunk)));
          i += p_.chunk;
        } while (i < k);
        return total;
      }
      case ChainKind::kBlocked: {
        Node<Acc> total = cn;
        for (int i = 0; i < k;) {
          const int end = BlockedBlockEnd(p_.model->chain, i, k);
          total = Combine(total, Seq(Node<Acc>{}, i, end));
          i = end;
        }
        return total;
      }
      case ChainKind::kPromote: {
        Node<Acc> total = cn;
        for (int i = 0; i < k; i += p_.chunk) {
          total = Promote(total, Seq(Node<Acc>{}, i, std::min(k, i + p_.chunk)));
        }
        return total;
      }
      default: {
        // strided, split_k, simd, cascade, tree: the generic evaluator's walk on host nodes.
        WalkOps ops{this};
        return accumulation_internal::WalkChain(*p_.model, k, seed_, cn, ops);
      }
    }
  }

  uint64_t seed_ = 0;  // EvalOptions::seed (split_k order = "random").

 private:
  // chain_walk.h's operations (the Evaluator's, on host values): Step past the last term is
  // an adder step with a +0 leaf (the simd loop's padding).
  struct WalkOps {
    using Node = ::fpconform::Node<Acc>;
    ScalarDot* s;
    Node Zero() const { return Node{}; }
    Node Step(const Node& acc, int lo, int hi) {
      if (lo >= s->d_.k) return s->PadStep(acc);
      if (s->p_.arith == Plan::Arith::kFused) {
        if constexpr (std::is_same_v<Acc, float>) return s->Fused(acc, lo, hi);
      }
      return s->Step(acc, lo);
    }
    Node Combine(const Node& x, const Node& y) const { return s->Combine(x, y); }
    Node Promote(const Node& x, const Node& y) const { return s->Promote(x, y); }
    Node RoundTerm(int i) { return s->RoundOne(i); }
    void PadTerms(int64_t) const {}
  };

  // acc + (+0 leaf): evaluate.cc's Step with a zero leaf (M = E = 0).
  Node<Acc> PadStep(const Node<Acc>& acc) { return StepWith(acc, Acc(0), Acc(0), 0.0, 0.0); }

 private:
  double Prod(int i) const {
    return static_cast<double>(d_.a[i * d_.sa]) * static_cast<double>(d_.b[i * d_.sb]);
  }
  // Leaf bound data: m = |exact|, e = |used - exact| (exact in double: see the header).
  void LeafBound(int i, double& m, double& e) const {
    const double x = static_cast<double>(d_.ao[i * d_.sa]) * static_cast<double>(d_.bo[i * d_.sb]);
    double u;
    if (p_.round_product) {
      u = static_cast<double>(static_cast<Acc>(d_.a[i * d_.sa]) *
                              static_cast<Acc>(d_.b[i * d_.sb]));
    } else {
      u = Prod(i);
    }
    m = std::fabs(x);
    e = std::fabs(u - x);
  }

  Node<Acc> Add(const Node<Acc>& x, const Node<Acc>& y, double u, double eta) const {
    Node<Acc> out;
    out.v = x.v + y.v;
    if constexpr (kBound) {
      out.m = Up(x.m + y.m);
      out.e = BoundStep(u, eta, x.e + y.e, out.m);
    }
    return out;
  }
  Node<Acc> Combine(const Node<Acc>& x, const Node<Acc>& y) const {
    return Add(x, y, p_.u_comb, p_.eta_comb);
  }
  // outer + inner rounded into chain.format (float32, or bfloat16 by RoundToBf16).
  Node<Acc> Promote(const Node<Acc>& x, const Node<Acc>& y) const {
    Node<Acc> out = Add(x, y, p_.u_prom, p_.eta_prom);
    if constexpr (std::is_same_v<Acc, float>) {
      if (p_.promote_bf16) out.v = AddRoundBf16(x.v, y.v);
    }
    return out;
  }

  // One IEEE step: acc + leaf i.
  Node<Acc> Step(const Node<Acc>& acc, int i) {
    double m = 0, e = 0;
    if constexpr (kBound) LeafBound(i, m, e);
    return StepWith(acc, static_cast<Acc>(d_.a[i * d_.sa]), static_cast<Acc>(d_.b[i * d_.sb]),
                    m, e);
  }

  // acc + a*b (fma, or the rounded product added) with the leaf's bound data (m, e), with
  // adder.daz on acc and adder.ftz on the result (Plan::ftz).
  Node<Acc> StepWith(const Node<Acc>& acc, Acc a, Acc b, double m, double e) {
    Node<Acc> out;
    Acc av = acc.v;
    double e0 = acc.e;
    if constexpr (std::is_same_v<Acc, float>) {
      if (p_.acc_daz && av != 0 && std::fabs(av) < kMinNormal32) {
        if constexpr (kBound) e0 = Up(acc.e + std::fabs(static_cast<double>(av)));
        av = std::copysign(0.0f, av);
      }
    }
    if (p_.round_product) {
      out.v = av + a * b;
    } else if constexpr (std::is_same_v<Acc, float>) {
      out.v = __builtin_fmaf(a, b, av);
    } else {
      out.v = __builtin_fma(a, b, av);
    }
    if constexpr (std::is_same_v<Acc, float>) {
      if (p_.ftz) out.v = FlushTiny(out.v, bad);
    }
    if constexpr (kBound) {
      out.m = Up(acc.m + m);
      out.e = BoundStep(p_.u_acc, p_.eta_acc, e0 + e, out.m);
    }
    return out;
  }

  // evaluate.cc's Kahan: y = p - comp; t = acc + y; comp = (t - acc) - y; acc = t (host
  // operations, each one IEEE rounding; p - comp is fma(a, b, -comp) for exact products), with
  // the same a posteriori bound. A non-finite comp (an overflow in the last steps) is bad.
  Node<Acc> Kahan(Node<Acc> acc) {
    Acc comp = 0;
    double err = 0, m = acc.m;
    const double u = p_.u_acc, eta3 = 3 * p_.eta_acc;
    for (int i = 0; i < d_.k; ++i) {
      const Acc a = static_cast<Acc>(d_.a[i * d_.sa]), b = static_cast<Acc>(d_.b[i * d_.sb]);
      Acc y;
      if (p_.round_product) {
        y = a * b - comp;
      } else if constexpr (std::is_same_v<Acc, float>) {
        y = __builtin_fmaf(a, b, -comp);
      } else {
        y = __builtin_fma(a, b, -comp);
      }
      const Acc t = acc.v + y;
      const Acc dd = t - acc.v;
      const Acc cn = dd - y;
      if constexpr (kBound) {
        double mi, ei;
        LeafBound(i, mi, ei);
        const double mags = std::fabs(static_cast<double>(y)) +
                            std::fabs(static_cast<double>(dd)) +
                            std::fabs(static_cast<double>(cn));
        err = Up(err + ei + u * mags + eta3);
        m = Up(m + mi);
      }
      comp = cn;
      acc.v = t;
    }
    if (!std::isfinite(comp)) bad = true;
    if constexpr (kBound) {
      acc.m = m;
      acc.e = Up(err + std::fabs(static_cast<double>(comp)));
    }
    return acc;
  }

  Node<Acc> Seq(Node<Acc> acc, int lo, int hi) {
    if (p_.arith == Plan::Arith::kFused) {
      if constexpr (std::is_same_v<Acc, float>) {
        for (int i = lo; i < hi; i += p_.group) acc = Fused(acc, i, std::min(hi, i + p_.group));
      }
      return acc;
    }
    for (int i = lo; i < hi; ++i) acc = Step(acc, i);
    return acc;
  }

  Node<Acc> RoundOne(int i) {
    Node<Acc> out;
    out.v = static_cast<Acc>(d_.a[i * d_.sa]) * static_cast<Acc>(d_.b[i * d_.sb]);
    if constexpr (std::is_same_v<Acc, float>) {
      if (p_.ftz) out.v = FlushTiny(out.v, bad);
    }
    if constexpr (kBound) {
      double m, e;
      LeafBound(i, m, e);
      out.m = m;
      out.e = BoundStep(p_.u_acc, p_.eta_acc, e, m);
    }
    return out;
  }

  Node<Acc> Tree(const std::vector<Node<Acc>>& v, int lo, int hi) const {
    if (hi - lo == 1) return v[lo];
    const int mid = lo + (hi - lo + 1) / 2;
    return Combine(Tree(v, lo, mid), Tree(v, mid, hi));
  }

  Node<Acc> Pairwise(int lo, int hi) {
    const int n = hi - lo;
    if (n == 0) return Node<Acc>{};
    if (n > p_.leaf) {
      int mid = n / 2;
      mid -= mid % p_.split_multiple;
      if (mid > 0 && mid < n) return Combine(Pairwise(lo, lo + mid), Pairwise(lo + mid, hi));
    }
    if (p_.unroll == 1 || n < p_.unroll) return Seq(Node<Acc>{}, lo, hi);
    std::vector<Node<Acc>> r(p_.unroll);
    for (int j = 0; j < p_.unroll; ++j) r[j] = RoundOne(lo + j);
    int i = p_.unroll;
    for (; i + p_.unroll <= n; i += p_.unroll) {
      for (int j = 0; j < p_.unroll; ++j) r[j] = Step(r[j], lo + i + j);
    }
    Node<Acc> acc = Tree(r, 0, p_.unroll);
    for (; i < n; ++i) acc = Step(acc, lo + i);
    return acc;
  }

  // evaluate.cc's Fused on doubles (see the header comment).
  Node<Acc> Fused(const Node<Acc>& acc, int lo, int hi) {
    const double av = static_cast<double>(acc.v);
    double emax = AccPow(av);
    for (int i = lo; i < hi; ++i) {
      const double pw = p_.actual ? ExpPow(Prod(i)) : d_.apow[i * d_.sa] * d_.bpow[i * d_.sb];
      emax = std::max(emax, pw);
    }
    const double scale = emax > 0 ? p_.two_f / emax : 1.0;
    double s = Align(av * scale);
    int nonzero = av != 0;
    for (int i = lo; i < hi; ++i) {
      const double pr = Prod(i);
      nonzero += pr != 0;
      s += Align(pr * scale);
    }
    Node<Acc> out;
    const bool full = hi - lo == p_.group;
    out.v = static_cast<Acc>(RoundGroup(s, emax, full, bad));
    if constexpr (kBound) {
      double sum_e = acc.e, m = acc.m;
      for (int i = lo; i < hi; ++i) {
        double mi, ei;
        LeafBound(i, mi, ei);
        sum_e += ei;
        m += mi;
      }
      double t = 0;
      if (emax > 0) {
        const double quantum = std::max(emax * p_.two_mf,
                                        std::numeric_limits<double>::denorm_min());
        t = nonzero * quantum;
      }
      out.m = Up(m);
      out.e = BoundStep(p_.u_acc, p_.eta_acc, sum_e + t, out.m);
    }
    return out;
  }

 public:
  // 2^floor(log2|x|) for a normal double x (0 for 0).
  static double ExpPow(double x) {
    return std::bit_cast<double>(std::bit_cast<uint64_t>(x) & 0x7FF0000000000000ull);
  }
  double AccPow(double v) const {
    if (p_.actual) return ExpPow(v);
    return v == 0 ? 0.0 : std::max(ExpPow(v), 0x1p-126);
  }
  double Align(double x) const { return p_.round_down ? __builtin_floor(x) : __builtin_trunc(x); }
  // The group's exact integer sum s (in quanta 2^q, q = log2(emax) - F) rounded to the
  // accumulator: a float32 value as a double; sets bad outside float32's normal range.
  double RoundGroup(double s, double emax, bool full, bool& is_bad) const {
    if (s == 0) return (emax == 0 && full) ? s : 0.0;
    const int cut = 52 - p_.acc_fraction_bits;
    uint64_t bits = std::bit_cast<uint64_t>(std::fabs(s));
    if (p_.rne) bits += (uint64_t{1} << (cut - 1)) - 1 + ((bits >> cut) & 1);
    bits &= ~((uint64_t{1} << cut) - 1);
    const double v = std::bit_cast<double>(bits) * (emax * p_.two_mf);
    if (!(v >= 0x1p-126 && v < 0x1p128)) is_bad = true;
    return s < 0 ? -v : v;
  }

 private:
  const Plan& p_;
  const DotView& d_;
};

// c of a float32-accumulator plan (bfloat16 bits when chain.format is bfloat16); false for bits
// above the container or a non-finite value.
inline bool DecodeC32(const Plan& p, uint64_t c_bits, float& c) {
  if ((c_bits >> (p.promote_bf16 ? 16 : 32)) != 0) return false;
  const uint32_t b = static_cast<uint32_t>(c_bits) << (p.promote_bf16 ? 16 : 0);
  c = std::bit_cast<float>(b);
  return std::isfinite(c);
}

// The output of a float32-accumulator plan from the final value v (and its m, e): float32 bits,
// bfloat16 bits of a bfloat16 chain.format (v is a bfloat16 value), or v converted to bfloat16
// (rne) with the conversion's bound. False when the output is not finite.
inline bool Output32(const Plan& p, float v, double m, double e, bool bound, EvalResult& out) {
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  if (p.promote_bf16) {
    out.bits = bits >> 16;
    out.bound = e;
  } else if (p.f32_to_bf16_output) {
    const uint32_t h = Bf16RneBits(bits);
    if ((h & 0x7F80u) == 0x7F80u) return false;
    out.bits = h;
    out.bound = bound ? BoundStep(p.u_out, p.eta_out, e, m) : 0.0;
  } else {
    out.bits = bits;
    out.bound = e;
  }
  return true;
}

// Runs one dot on decoded inputs. Returns false when the generic path must decide (bad group,
// non-finite result).
template <bool kBound>
bool DotDecoded(const Plan& p, const DotView& d, uint64_t c_bits, EvalResult& out,
                uint64_t seed) {
  if (p.arith == Plan::Arith::kHostF64) {
    const double c = std::bit_cast<double>(c_bits);
    if (!std::isfinite(c)) return false;
    ScalarDot<double, kBound> ev(p, d);
    ev.seed_ = seed;
    const Node<double> r = ev.Run(c);
    if (ev.bad || !std::isfinite(r.v)) return false;
    if (p.f64_to_f32_output) {
      const float f = static_cast<float>(r.v);
      if (!std::isfinite(f)) return false;
      out.bits = std::bit_cast<uint32_t>(f);
      if (kBound) out.bound = BoundStep(p.u_out, p.eta_out, r.e, r.m);
    } else {
      out.bits = std::bit_cast<uint64_t>(r.v);
      out.bound = r.e;
    }
    return true;
  }
  float c;
  if (!DecodeC32(p, c_bits, c)) return false;
  ScalarDot<float, kBound> ev(p, d);
  ev.seed_ = seed;
  const Node<float> r = ev.Run(c);
  if (ev.bad || !std::isfinite(r.v)) return false;
  return Output32(p, r.v, r.m, r.e, kBound, out);
}

// ---------------------------------------------------------------------------------------------
// Matmul tiles. Inputs decoded to row-major A (m x k) and B (k x n).

struct MatIn {
  const Plan* p;
  int m, n, k;
  const float* a;   // m x k used.
  const float* ao;  // m x k original.
  const double* apow;
  const float* b;   // k x n used.
  const float* bo;
  const double* bpow;
  const double* bd;  // k x n used, as double (fused).
  // Packed column tiles of B for the AVX kernels: tile t (columns 8t..8t+7; 16t..16t+15 for
  // floats) is contiguous in k: bpack[(t * k + kk) * 16 + w] = value (w < 8), 2^nominal (w >= 8);
  // bpackf[(t * k + kk) * 16 + w] = value of column 16t + w.
  const double* bpack;
  const float* bpackf;
  const uint64_t* c;  // m x n or nullptr.
  uint64_t* d;
  double* bounds;     // or nullptr.
  std::vector<uint8_t>* redo;  // m x n: 1 = evaluate generically.
  uint64_t seed = 0;           // EvalOptions::seed.
};

#if defined(__x86_64__)
// The bound data of one adder step on R rows x 16 float32 lanes (ScalarDot::StepWith's bound,
// bound_step.h's BoundStep lane by lane, in the same double operations): m[l] = Up(m[l] + |x|),
// e[l] = Up((1 + u) * (e0[l] + |used - x|) + u * m[l] + eta), with x = a_orig[r] * b_orig[w]
// (exact) and used = a_used[r] * b_used[w] (exact, or the float32 product under kRound).
// b_used/b_orig: the step's 16 columns (nullptr: a +0 padding leaf). e0 may be e.
template <bool kRound, int R>
inline void BoundStepAvx(double* m, double* e, const double* e0, const float (&a_orig)[R],
                         const float (&a_used)[R], const float* b_used, const float* b_orig,
                         double u, double eta) {
  const __m256d c1 = _mm256_set1_pd(1 + u), uu = _mm256_set1_pd(u), ee = _mm256_set1_pd(eta);
  const __m256d up = _mm256_set1_pd(kUp);
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  __m256d bu[4], bo[4];
  __m128 buf[4];
  for (int q = 0; q < 4; ++q) {
    buf[q] = b_used != nullptr ? _mm_loadu_ps(b_used + 4 * q) : _mm_setzero_ps();
    bu[q] = _mm256_cvtps_pd(buf[q]);
    bo[q] = b_orig != nullptr ? _mm256_cvtps_pd(_mm_loadu_ps(b_orig + 4 * q))
                              : _mm256_setzero_pd();
  }
  for (int r = 0; r < R; ++r) {
    const __m256d ao = _mm256_set1_pd(a_orig[r]);
    const __m256d au = _mm256_set1_pd(a_used[r]);
    for (int q = 0; q < 4; ++q) {
      const int l = r * 16 + 4 * q;
      const __m256d x = _mm256_mul_pd(ao, bo[q]);
      __m256d used;
      if constexpr (kRound) {
        used = _mm256_cvtps_pd(_mm_mul_ps(_mm_set1_ps(a_used[r]), buf[q]));
      } else {
        used = _mm256_mul_pd(au, bu[q]);
      }
      const __m256d mi = _mm256_and_pd(x, abs_mask);
      const __m256d ei = _mm256_and_pd(_mm256_sub_pd(used, x), abs_mask);
      const __m256d mm = _mm256_mul_pd(_mm256_add_pd(_mm256_loadu_pd(m + l), mi), up);
      _mm256_storeu_pd(m + l, mm);
      const __m256d t = _mm256_mul_pd(c1, _mm256_add_pd(_mm256_loadu_pd(e0 + l), ei));
      _mm256_storeu_pd(
          e + l, _mm256_mul_pd(_mm256_add_pd(_mm256_add_pd(t, _mm256_mul_pd(uu, mm)), ee), up));
    }
  }
}
#endif

// Host IEEE tile: R rows x W columns starting at (i0, j0), fully inside the matrix.
template <class Acc, bool kRound, bool kBound, int R, int W>
void HostTile(const MatIn& in, int i0, int j0) {
  const Plan& p = *in.p;
  const int n = in.n, k = in.k;
  Acc tot[R][W];
  double tm[R][W], te[R][W];
  for (int r = 0; r < R; ++r) {
    for (int w = 0; w < W; ++w) {
      const uint64_t cb = in.c ? in.c[size_t(i0 + r) * n + j0 + w] : 0;
      Acc cv;
      if constexpr (std::is_same_v<Acc, float>) {
        cv = std::bit_cast<float>(static_cast<uint32_t>(cb));
      } else {
        cv = std::bit_cast<double>(cb);
      }
      tot[r][w] = cv;
      tm[r][w] = std::fabs(static_cast<double>(cv));
      te[r][w] = 0;
    }
  }
  const bool seq = p.chain == ChainKind::kSequential;
  const int chunk = seq ? std::max(k, 1) : p.chunk;
  const double u = p.u_acc, eta = p.eta_acc;
  const double uc = p.chain == ChainKind::kPromote ? p.u_prom : p.u_comb;
  const double etac = p.chain == ChainKind::kPromote ? p.eta_prom : p.eta_comb;
  for (int k0 = 0, k1 = 0; k0 < k; k0 = k1) {
    k1 = ChunkEnd(p, chunk, k0, k);
    Acc acc[R][W];
    double am[R][W], ae[R][W];
    for (int r = 0; r < R; ++r) {
      for (int w = 0; w < W; ++w) {
        acc[r][w] = seq ? tot[r][w] : Acc(0);
        if constexpr (kBound) {
          am[r][w] = seq ? tm[r][w] : 0.0;
          ae[r][w] = seq ? te[r][w] : 0.0;
        }
      }
    }
    for (int kk = k0; kk < k1; ++kk) {
      const float* brow = in.b + size_t(kk) * n + j0;
      for (int r = 0; r < R; ++r) {
        const Acc av = static_cast<Acc>(in.a[size_t(i0 + r) * k + kk]);
        for (int w = 0; w < W; ++w) {
          const Acc bv = static_cast<Acc>(brow[w]);
          if constexpr (kRound) {
            acc[r][w] = acc[r][w] + av * bv;
          } else if constexpr (std::is_same_v<Acc, float>) {
            acc[r][w] = __builtin_fmaf(av, bv, acc[r][w]);
          } else {
            acc[r][w] = __builtin_fma(av, bv, acc[r][w]);
          }
        }
      }
      if constexpr (kBound) {
        const float* borow = in.bo + size_t(kk) * n + j0;
        for (int r = 0; r < R; ++r) {
          const double ao = in.ao[size_t(i0 + r) * k + kk];
          const double aused = in.a[size_t(i0 + r) * k + kk];
          for (int w = 0; w < W; ++w) {
            const double x = ao * static_cast<double>(borow[w]);
            double uv;
            if constexpr (kRound) {
              uv = static_cast<double>(static_cast<Acc>(aused) * static_cast<Acc>(brow[w]));
            } else {
              uv = aused * static_cast<double>(brow[w]);
            }
            const double mi = std::fabs(x), ei = std::fabs(uv - x);
            am[r][w] = Up(am[r][w] + mi);
            ae[r][w] = BoundStep(u, eta, ae[r][w] + ei, am[r][w]);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int w = 0; w < W; ++w) {
        if (seq) {
          tot[r][w] = acc[r][w];
          if constexpr (kBound) {
            tm[r][w] = am[r][w];
            te[r][w] = ae[r][w];
          }
        } else {
          tot[r][w] = tot[r][w] + acc[r][w];
          if constexpr (kBound) {
            const double mm = Up(tm[r][w] + am[r][w]);
            te[r][w] = BoundStep(uc, etac, te[r][w] + ae[r][w], mm);
            tm[r][w] = mm;
          }
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int w = 0; w < W; ++w) {
      const size_t idx = size_t(i0 + r) * n + j0 + w;
      const Acc v = tot[r][w];
      if (!std::isfinite(v)) {
        (*in.redo)[idx] = 1;
        continue;
      }
      if constexpr (std::is_same_v<Acc, float>) {
        in.d[idx] = std::bit_cast<uint32_t>(v);
        if (kBound) in.bounds[idx] = te[r][w];
      } else {
        if (p.f64_to_f32_output) {
          const float f = static_cast<float>(v);
          if (!std::isfinite(f)) {
            (*in.redo)[idx] = 1;
            continue;
          }
          in.d[idx] = std::bit_cast<uint32_t>(f);
          if (kBound) {
            in.bounds[idx] = BoundStep(p.u_out, p.eta_out, te[r][w], tm[r][w]);
          }
        } else {
          in.d[idx] = std::bit_cast<uint64_t>(v);
          if (kBound) in.bounds[idx] = te[r][w];
        }
      }
    }
  }
}

// Kahan tile: R rows x W columns from (i0, j0), fully inside the matrix; ScalarDot::Kahan lane
// by lane (the lanes are independent chains: the loop is bound by throughput, not by the four
// dependent operations of a step).
template <class Acc, bool kRound, bool kBound, int R, int W>
void KahanTile(const MatIn& in, int i0, int j0) {
  constexpr int L = R * W;
  const Plan& p = *in.p;
  const int n = in.n, k = in.k;
  Acc acc[L], comp[L];
  double err[kBound ? L : 1], mag[kBound ? L : 1];
  for (int r = 0; r < R; ++r) {
    for (int w = 0; w < W; ++w) {
      const uint64_t cb = in.c ? in.c[size_t(i0 + r) * n + j0 + w] : 0;
      Acc cv;
      if constexpr (std::is_same_v<Acc, float>) {
        cv = std::bit_cast<float>(static_cast<uint32_t>(cb));
      } else {
        cv = std::bit_cast<double>(cb);
      }
      acc[r * W + w] = cv;
      comp[r * W + w] = 0;
      if constexpr (kBound) {
        err[r * W + w] = 0;
        mag[r * W + w] = std::fabs(static_cast<double>(cv));
      }
    }
  }
  const double u = p.u_acc, eta3 = 3 * p.eta_acc;
  for (int kk = 0; kk < k; ++kk) {
    float a_used[R], b_used[W];
    for (int r = 0; r < R; ++r) a_used[r] = in.a[size_t(i0 + r) * k + kk];
    for (int w = 0; w < W; ++w) b_used[w] = in.b[size_t(kk) * n + j0 + w];
    float a_orig[kBound ? R : 1], b_orig[kBound ? W : 1];
    if constexpr (kBound) {
      for (int r = 0; r < R; ++r) a_orig[r] = in.ao[size_t(i0 + r) * k + kk];
      for (int w = 0; w < W; ++w) b_orig[w] = in.bo[size_t(kk) * n + j0 + w];
    }
    for (int r = 0; r < R; ++r) {
      const Acc av = static_cast<Acc>(a_used[r]);
      for (int w = 0; w < W; ++w) {
        const int l = r * W + w;
        const Acc bv = static_cast<Acc>(b_used[w]);
        Acc y;
        if constexpr (kRound) {
          y = av * bv - comp[l];
        } else if constexpr (std::is_same_v<Acc, float>) {
          y = __builtin_fmaf(av, bv, -comp[l]);
        } else {
          y = __builtin_fma(av, bv, -comp[l]);
        }
        const Acc t = acc[l] + y;
        const Acc dd = t - acc[l];
        const Acc cn = dd - y;
        if constexpr (kBound) {
          const double x = static_cast<double>(a_orig[r]) * static_cast<double>(b_orig[w]);
          double uv;
          if constexpr (kRound) {
            uv = static_cast<double>(av * bv);
          } else {
            uv = static_cast<double>(a_used[r]) * static_cast<double>(b_used[w]);
          }
          const double mi = std::fabs(x), ei = std::fabs(uv - x);
          const double mags = std::fabs(static_cast<double>(y)) +
                              std::fabs(static_cast<double>(dd)) +
                              std::fabs(static_cast<double>(cn));
          err[l] = Up(err[l] + ei + u * mags + eta3);
          mag[l] = Up(mag[l] + mi);
        }
        comp[l] = cn;
        acc[l] = t;
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int w = 0; w < W; ++w) {
      const int l = r * W + w;
      const size_t idx = size_t(i0 + r) * n + j0 + w;
      const Acc v = acc[l];
      if (!std::isfinite(v) || !std::isfinite(comp[l])) {
        (*in.redo)[idx] = 1;
        continue;
      }
      double e = 0;
      if constexpr (kBound) e = Up(err[l] + std::fabs(static_cast<double>(comp[l])));
      if constexpr (std::is_same_v<Acc, float>) {
        in.d[idx] = std::bit_cast<uint32_t>(v);
        if constexpr (kBound) in.bounds[idx] = e;
      } else if (p.f64_to_f32_output) {
        const float f = static_cast<float>(v);
        if (!std::isfinite(f)) {
          (*in.redo)[idx] = 1;
          continue;
        }
        in.d[idx] = std::bit_cast<uint32_t>(f);
        if constexpr (kBound) {
          in.bounds[idx] = BoundStep(p.u_out, p.eta_out, e, mag[l]);
        }
      } else {
        in.d[idx] = std::bit_cast<uint64_t>(v);
        if constexpr (kBound) in.bounds[idx] = e;
      }
    }
  }
}

// Pairwise tile (chain.kind = "pairwise", unroll 1): R rows x W columns from (i0, j0), fully
// inside the matrix. ScalarDot::Run's pairwise case with every node a block of R*W lanes: the
// tree's shape depends only on k, so all lanes walk it together (one recursion per tile, not per
// element), with the same operations per lane and the same bound arithmetic.
template <class Acc, bool kBound, int L>
struct LaneNode {
  Acc v[L];
  double m[kBound ? L : 1], e[kBound ? L : 1];
};

template <class Acc, bool kRound, bool kBound, int R, int W>
class PairwiseTile {
 public:
  static constexpr int L = R * W;
  using N = LaneNode<Acc, kBound, L>;
  // float32 values only: AVX2 intrinsics, the leaf sums of the tree's bottom in registers.
#if defined(__x86_64__)
  static constexpr bool kAvx = std::is_same_v<Acc, float> && !kBound && W == 16;
#else
  static constexpr bool kAvx = false;
#endif

  PairwiseTile(const MatIn& in, int i0, int j0) : in_(in), p_(*in.p), i0_(i0), j0_(j0) {}

  void Run() {
    const int n = in_.n, k = in_.k;
    N total;
    for (int r = 0; r < R; ++r) {
      for (int w = 0; w < W; ++w) {
        const uint64_t cb = in_.c ? in_.c[size_t(i0_ + r) * n + j0_ + w] : 0;
        Acc cv;
        if constexpr (std::is_same_v<Acc, float>) {
          cv = std::bit_cast<float>(static_cast<uint32_t>(cb));
        } else {
          cv = std::bit_cast<double>(cb);
        }
        total.v[r * W + w] = cv;
        if constexpr (kBound) {
          total.m[r * W + w] = std::fabs(static_cast<double>(cv));
          total.e[r * W + w] = 0;
        }
      }
    }
    N part;
    if (p_.chunk == 0) {
      Pairwise(0, k, part);
      Combine(total, part);
    } else {
      // (((c + P(chunk_0)) + P(chunk_1)) + ...); at least one (possibly empty) chunk.
      int i = 0;
      do {
        Pairwise(i, std::min(k, i + p_.chunk), part);
        Combine(total, part);
        i += p_.chunk;
      } while (i < k);
    }
    for (int r = 0; r < R; ++r) {
      for (int w = 0; w < W; ++w) {
        const int l = r * W + w;
        const size_t idx = size_t(i0_ + r) * n + j0_ + w;
        const Acc v = total.v[l];
        if (!std::isfinite(v)) {
          (*in_.redo)[idx] = 1;
          continue;
        }
        if constexpr (std::is_same_v<Acc, float>) {
          in_.d[idx] = std::bit_cast<uint32_t>(v);
          if constexpr (kBound) in_.bounds[idx] = total.e[l];
        } else if (p_.f64_to_f32_output) {
          const float f = static_cast<float>(v);
          if (!std::isfinite(f)) {
            (*in_.redo)[idx] = 1;
            continue;
          }
          in_.d[idx] = std::bit_cast<uint32_t>(f);
          if constexpr (kBound) {
            in_.bounds[idx] =
                BoundStep(p_.u_out, p_.eta_out, total.e[l], total.m[l]);
          }
        } else {
          in_.d[idx] = std::bit_cast<uint64_t>(v);
          if constexpr (kBound) in_.bounds[idx] = total.e[l];
        }
      }
    }
  }

 private:
  static void Zero(N& x) {
    for (int l = 0; l < L; ++l) x.v[l] = 0;
    if constexpr (kBound) {
      for (int l = 0; l < L; ++l) x.m[l] = x.e[l] = 0;
    }
  }

  // x = x + y (ScalarDot::Combine).
  void Combine(N& x, const N& y) const {
#if defined(__x86_64__)
    if constexpr (kAvx) {
      for (int q = 0; q < L; q += 8) {
        const __m256 sum = _mm256_add_ps(_mm256_loadu_ps(x.v + q), _mm256_loadu_ps(y.v + q));
        _mm256_storeu_ps(x.v + q, sum);
      }
      return;
    }
#endif
    for (int l = 0; l < L; ++l) x.v[l] = x.v[l] + y.v[l];
    if constexpr (kBound) {
      const double u = p_.u_comb, eta = p_.eta_comb;
      for (int l = 0; l < L; ++l) {
        const double mm = Up(x.m[l] + y.m[l]);
        x.e[l] = BoundStep(u, eta, x.e[l] + y.e[l], mm);
        x.m[l] = mm;
      }
    }
  }

  // x = x + leaf kk, lane by lane (ScalarDot::Step); kFirst: x is +0 (not read).
  template <bool kFirst = false>
  void Step(N& x, int kk) const {
    const int n = in_.n, k = in_.k;
    const float* brow = in_.b + size_t(kk) * n + j0_;
    // The inputs in locals first (the stores into x could alias them as far as the compiler
    // knows, which keeps it from vectorizing the lane loops).
    float a_used[R], b_used[W];
    for (int r = 0; r < R; ++r) a_used[r] = in_.a[size_t(i0_ + r) * k + kk];
    for (int w = 0; w < W; ++w) b_used[w] = brow[w];
    for (int r = 0; r < R; ++r) {
      const Acc av = static_cast<Acc>(a_used[r]);
      for (int w = 0; w < W; ++w) {
        const Acc bv = static_cast<Acc>(b_used[w]);
        Acc& v = x.v[r * W + w];
        if constexpr (kFirst) v = 0;
        if constexpr (kRound) {
          v = v + av * bv;
        } else if constexpr (std::is_same_v<Acc, float>) {
          v = __builtin_fmaf(av, bv, v);
        } else {
          v = __builtin_fma(av, bv, v);
        }
      }
    }
    if constexpr (kBound) {
      const double u = p_.u_acc, eta = p_.eta_acc;
      const float* borow = in_.bo + size_t(kk) * n + j0_;
      float a_orig[R], b_orig[W];
      for (int r = 0; r < R; ++r) a_orig[r] = in_.ao[size_t(i0_ + r) * k + kk];
      for (int w = 0; w < W; ++w) b_orig[w] = borow[w];
      for (int r = 0; r < R; ++r) {
        const double ao = a_orig[r];
        const double aused = a_used[r];
        for (int w = 0; w < W; ++w) {
          const double xe = ao * static_cast<double>(b_orig[w]);
          double uv;
          if constexpr (kRound) {
            uv = static_cast<double>(static_cast<Acc>(aused) * static_cast<Acc>(b_used[w]));
          } else {
            uv = aused * static_cast<double>(b_used[w]);
          }
          const int l = r * W + w;
          const double mi = std::fabs(xe), ei = std::fabs(uv - xe);
          const double m0 = kFirst ? 0.0 : x.m[l], e0 = kFirst ? 0.0 : x.e[l];
          x.m[l] = Up(m0 + mi);
          x.e[l] = BoundStep(u, eta, e0 + ei, x.m[l]);
        }
      }
    }
  }

  // The split point of a node of n leaves (0: none, the node sums its leaves in sequence).
  int Mid(int n) const {
    if (n <= p_.leaf) return 0;
    int mid = n / 2;
    mid -= mid % p_.split_multiple;
    return mid > 0 && mid < n ? mid : 0;
  }

#if defined(__x86_64__)
  // acc = +0 plus leaves [lo, hi) in sequence (float32 lanes, 2 vectors per row).
  void SeqReg(int lo, int hi, __m256 (&acc)[2 * R]) const {
    const int n = in_.n, k = in_.k;
    for (__m256& x : acc) x = _mm256_setzero_ps();
    for (int kk = lo; kk < hi; ++kk) {
      const float* brow = in_.b + size_t(kk) * n + j0_;
      const __m256 b0 = _mm256_loadu_ps(brow), b1 = _mm256_loadu_ps(brow + 8);
      for (int r = 0; r < R; ++r) {
        const __m256 av = _mm256_broadcast_ss(in_.a + size_t(i0_ + r) * k + kk);
        if constexpr (kRound) {
          acc[2 * r] = _mm256_add_ps(acc[2 * r], _mm256_mul_ps(av, b0));
          acc[2 * r + 1] = _mm256_add_ps(acc[2 * r + 1], _mm256_mul_ps(av, b1));
        } else {
          acc[2 * r] = _mm256_fmadd_ps(av, b0, acc[2 * r]);
          acc[2 * r + 1] = _mm256_fmadd_ps(av, b1, acc[2 * r + 1]);
        }
      }
    }
  }
#endif

  // out = the pairwise sum of leaves [lo, hi) from +0 (ScalarDot::Pairwise with unroll 1).
  void Pairwise(int lo, int hi, N& out) const {
    const int n = hi - lo;
#if defined(__x86_64__)
    if constexpr (kAvx) {
      const int mid = Mid(n);
      __m256 x[2 * R];
      if (mid == 0) {
        SeqReg(lo, hi, x);
      } else if (Mid(mid) == 0 && Mid(n - mid) == 0) {
        // Both children are sequences: the whole node in registers.
        __m256 y[2 * R];
        SeqReg(lo, lo + mid, x);
        SeqReg(lo + mid, hi, y);
        for (int q = 0; q < 2 * R; ++q) x[q] = _mm256_add_ps(x[q], y[q]);
      } else {
        Pairwise(lo, lo + mid, out);
        N right;
        Pairwise(lo + mid, hi, right);
        Combine(out, right);
        return;
      }
      for (int q = 0; q < 2 * R; ++q) _mm256_storeu_ps(out.v + 8 * q, x[q]);
      return;
    }
#endif
    if (n > p_.leaf) {
      int mid = n / 2;
      mid -= mid % p_.split_multiple;
      if (mid > 0 && mid < n) {
        Pairwise(lo, lo + mid, out);
        N right;
        Pairwise(lo + mid, hi, right);
        Combine(out, right);
        return;
      }
    }
    if (n == 0) {
      Zero(out);
      return;
    }
    Step<true>(out, lo);
    for (int i = lo + 1; i < hi; ++i) Step(out, i);
  }

  const MatIn& in_;
  const Plan& p_;
  const int i0_, j0_;
};

// Walked tile (Plan::walk: strided, split_k, simd, cascade, tree or pairwise-with-unroll chains,
// promote into bfloat16, adder.ftz/daz, output to bfloat16): R rows x W columns from (i0, j0),
// fully inside the matrix. chain_walk.h's WalkChain runs once per tile with every node a block
// of R*W lanes (the walk's order depends only on k and the seed, not on the values), each lane
// computed with ScalarDot's operations and bound arithmetic, so each element equals its dot.
template <class Acc, bool kRound, bool kBound, int R, int W>
class WalkTile {
 public:
  static constexpr int L = R * W;
  using Node = LaneNode<Acc, kBound, L>;
  // FastEvaluateMatmul packs B's 16-column tiles for value-only host plans.
  static constexpr bool kPacked = !kBound && W == 16;
#if defined(__x86_64__)
  static constexpr bool kAvx = std::is_same_v<Acc, float> && W == 16;
#endif

  WalkTile(const MatIn& in, int i0, int j0) : in_(in), p_(*in.p), i0_(i0), j0_(j0) {}

  void Run() {
    const int n = in_.n;
    Node total;
    bool c_bad[L] = {};
    for (int r = 0; r < R; ++r) {
      for (int w = 0; w < W; ++w) {
        const int l = r * W + w;
        const uint64_t cb = in_.c ? in_.c[size_t(i0_ + r) * n + j0_ + w] : 0;
        Acc cv;
        if constexpr (std::is_same_v<Acc, float>) {
          float f = 0;
          c_bad[l] = !DecodeC32(p_, cb, f);
          cv = c_bad[l] ? 0.0f : f;
        } else {
          cv = std::bit_cast<double>(cb);
        }
        total.v[l] = cv;
        if constexpr (kBound) {
          total.m[l] = std::fabs(static_cast<double>(cv));
          total.e[l] = 0;
        }
      }
    }
    const Node out = accumulation_internal::WalkChain(*p_.model, in_.k, in_.seed, total, *this);
    for (int r = 0; r < R; ++r) {
      for (int w = 0; w < W; ++w) {
        const int l = r * W + w;
        const size_t idx = size_t(i0_ + r) * n + j0_ + w;
        const Acc v = out.v[l];
        const double m = kBound ? out.m[l] : 0.0, e = kBound ? out.e[l] : 0.0;
        EvalResult res;
        bool ok = !bad_[l] && !c_bad[l] && std::isfinite(v);
        if constexpr (std::is_same_v<Acc, float>) {
          ok = ok && Output32(p_, v, m, e, kBound, res);
        } else if (ok && p_.f64_to_f32_output) {
          const float f = static_cast<float>(v);
          ok = std::isfinite(f);
          res.bits = std::bit_cast<uint32_t>(f);
          if constexpr (kBound) res.bound = BoundStep(p_.u_out, p_.eta_out, e, m);
        } else {
          res.bits = std::bit_cast<uint64_t>(v);
          res.bound = e;
        }
        if (!ok) {
          (*in_.redo)[idx] = 1;
          continue;
        }
        in_.d[idx] = res.bits;
        if constexpr (kBound) in_.bounds[idx] = res.bound;
      }
    }
  }

  // chain_walk.h's operations.
  Node Zero() const { return Node{}; }
  Node Step(const Node& acc, int lo, int hi) {
    Node x = acc;
    StepInPlace(x, lo, hi);
    return x;
  }
  // acc + leaf lo in every lane (ScalarDot::StepWith); a leaf at or past k is +0 (simd padding).
  void StepInPlace(Node& x, int lo, int /*hi*/) {
    const int n = in_.n, k = in_.k;
    float a_used[R], b_used[W];
    const bool pad = lo >= k;
    // The packed column tile of B (values only) is contiguous in k.
    const float* brow = kPacked ? in_.bpackf + (size_t(j0_ / 16) * k + lo) * 16
                                : in_.b + size_t(lo) * n + j0_;
    for (int r = 0; r < R; ++r) a_used[r] = pad ? 0.0f : in_.a[size_t(i0_ + r) * k + lo];
#if defined(__x86_64__)
    if constexpr (kAvx) {
      // The loops below in AVX2 (GCC's own vectorization shuffles the lanes).
      double e0[kBound ? L : 1];
      if constexpr (kBound) {
        // adder.daz's bound term first (the value loop below then finds zeros there).
        for (int l = 0; l < L; ++l) e0[l] = x.e[l];
        if (p_.acc_daz) {
          for (int l = 0; l < L; ++l) {
            const float av = x.v[l];
            if (av != 0 && std::fabs(av) < kMinNormal32) {
              e0[l] = Up(x.e[l] + std::fabs(static_cast<double>(av)));
              x.v[l] = std::copysign(0.0f, av);
            }
          }
        }
      }
      const __m256 zero = _mm256_setzero_ps();
      const __m256 b[2] = {pad ? zero : _mm256_loadu_ps(brow),
                           pad ? zero : _mm256_loadu_ps(brow + 8)};
      const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
      const __m256 min_normal = _mm256_set1_ps(kMinNormal32);
      for (int r = 0; r < R; ++r) {
        const __m256 av = _mm256_set1_ps(a_used[r]);
        for (int h = 0; h < 2; ++h) {
          float* lane = x.v + r * 16 + 8 * h;
          __m256 v = _mm256_loadu_ps(lane);
          if (p_.acc_daz) {
            const __m256 mag = _mm256_and_ps(v, abs_mask);
            const __m256 sub = _mm256_and_ps(_mm256_cmp_ps(mag, min_normal, _CMP_LT_OQ),
                                             _mm256_cmp_ps(mag, zero, _CMP_NEQ_OQ));
            v = _mm256_blendv_ps(v, _mm256_andnot_ps(abs_mask, v), sub);
          }
          if constexpr (kRound) {
            v = _mm256_add_ps(v, _mm256_mul_ps(av, b[h]));
          } else {
            v = _mm256_fmadd_ps(av, b[h], v);
          }
          if (p_.ftz) {  // FlushTiny.
            const __m256 mag = _mm256_and_ps(v, abs_mask);
            v = _mm256_blendv_ps(v, _mm256_andnot_ps(abs_mask, v),
                                 _mm256_cmp_ps(mag, min_normal, _CMP_LT_OQ));
            const int eq = _mm256_movemask_ps(_mm256_cmp_ps(mag, min_normal, _CMP_EQ_OQ));
            if (eq != 0) {
              for (int q = 0; q < 8; ++q) bad_[r * 16 + 8 * h + q] |= ((eq >> q) & 1) != 0;
            }
          }
          _mm256_storeu_ps(lane, v);
        }
      }
      if constexpr (kBound) {
        float a_orig[R];
        for (int r = 0; r < R; ++r) a_orig[r] = pad ? 0.0f : in_.ao[size_t(i0_ + r) * k + lo];
        BoundStepAvx<kRound, R>(x.m, x.e, e0, a_orig, a_used, pad ? nullptr : brow,
                                pad ? nullptr : in_.bo + size_t(lo) * n + j0_, p_.u_acc,
                                p_.eta_acc);
      }
      return;
    }
#endif
    for (int w = 0; w < W; ++w) b_used[w] = pad ? 0.0f : brow[w];
    double e0[kBound ? L : 1];
    if constexpr (kBound) {
      for (int l = 0; l < L; ++l) e0[l] = x.e[l];
    }
    if constexpr (std::is_same_v<Acc, float>) {
      if (p_.acc_daz) {
        for (int l = 0; l < L; ++l) {
          const float av = x.v[l];
          if (av != 0 && std::fabs(av) < kMinNormal32) {
            if constexpr (kBound) e0[l] = Up(x.e[l] + std::fabs(static_cast<double>(av)));
            x.v[l] = std::copysign(0.0f, av);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const Acc av = static_cast<Acc>(a_used[r]);
      for (int w = 0; w < W; ++w) {
        const Acc bv = static_cast<Acc>(b_used[w]);
        Acc& v = x.v[r * W + w];
        if constexpr (kRound) {
          v = v + av * bv;
        } else if constexpr (std::is_same_v<Acc, float>) {
          v = __builtin_fmaf(av, bv, v);
        } else {
          v = __builtin_fma(av, bv, v);
        }
      }
    }
    if constexpr (std::is_same_v<Acc, float>) {
      if (p_.ftz) {
        for (int l = 0; l < L; ++l) x.v[l] = FlushTiny(x.v[l], bad_[l]);
      }
    }
    if constexpr (kBound) {
      const double u = p_.u_acc, eta = p_.eta_acc;
      float a_orig[R], b_orig[W];
      for (int r = 0; r < R; ++r) a_orig[r] = pad ? 0.0f : in_.ao[size_t(i0_ + r) * k + lo];
      for (int w = 0; w < W; ++w) b_orig[w] = pad ? 0.0f : in_.bo[size_t(lo) * n + j0_ + w];
      for (int r = 0; r < R; ++r) {
        const double ao = a_orig[r];
        const double aused = a_used[r];
        for (int w = 0; w < W; ++w) {
          const double xe = ao * static_cast<double>(b_orig[w]);
          double uv;
          if constexpr (kRound) {
            uv = static_cast<double>(static_cast<Acc>(aused) * static_cast<Acc>(b_used[w]));
          } else {
            uv = aused * static_cast<double>(b_used[w]);
          }
          const int l = r * W + w;
          const double mi = std::fabs(xe), ei = std::fabs(uv - xe);
          x.m[l] = Up(x.m[l] + mi);
          x.e[l] = BoundStep(u, eta, e0[l] + ei, x.m[l]);
        }
      }
    }
  }
  Node Combine(const Node& x, const Node& y) const {
    Node out;
    for (int l = 0; l < L; ++l) out.v[l] = x.v[l] + y.v[l];
    AddBound(out, x, y, p_.u_comb, p_.eta_comb);
    return out;
  }
  Node Promote(const Node& x, const Node& y) const {
    Node out;
    if constexpr (std::is_same_v<Acc, float>) {
      if (p_.promote_bf16) {
        for (int l = 0; l < L; ++l) out.v[l] = AddRoundBf16(x.v[l], y.v[l]);
      } else {
        for (int l = 0; l < L; ++l) out.v[l] = x.v[l] + y.v[l];
      }
    } else {
      for (int l = 0; l < L; ++l) out.v[l] = x.v[l] + y.v[l];
    }
    AddBound(out, x, y, p_.u_prom, p_.eta_prom);
    return out;
  }
  // Leaf i rounded into the accumulator (ScalarDot::RoundOne).
  Node RoundTerm(int i) {
    const int n = in_.n, k = in_.k;
    Node out;
    for (int r = 0; r < R; ++r) {
      const Acc av = static_cast<Acc>(in_.a[size_t(i0_ + r) * k + i]);
      for (int w = 0; w < W; ++w) {
        const int l = r * W + w;
        const Acc prod = av * static_cast<Acc>(in_.b[size_t(i) * n + j0_ + w]);
        out.v[l] = prod;
        if constexpr (std::is_same_v<Acc, float>) {
          if (p_.ftz) out.v[l] = FlushTiny(out.v[l], bad_[l]);
        }
        if constexpr (kBound) {
          const double xe = static_cast<double>(in_.ao[size_t(i0_ + r) * k + i]) *
                            static_cast<double>(in_.bo[size_t(i) * n + j0_ + w]);
          double uv;
          if constexpr (kRound) {
            uv = static_cast<double>(prod);
          } else {
            uv = static_cast<double>(in_.a[size_t(i0_ + r) * k + i]) *
                 static_cast<double>(in_.b[size_t(i) * n + j0_ + w]);
          }
          const double mi = std::fabs(xe), ei = std::fabs(uv - xe);
          out.m[l] = mi;
          out.e[l] = BoundStep(p_.u_acc, p_.eta_acc, ei, mi);
        }
      }
    }
    return out;
  }
  void PadTerms(int64_t) const {}

 private:
  static void AddBound(Node& out, const Node& x, const Node& y, double u, double eta) {
    if constexpr (kBound) {
      for (int l = 0; l < L; ++l) {
        out.m[l] = Up(x.m[l] + y.m[l]);
        out.e[l] = BoundStep(u, eta, x.e[l] + y.e[l], out.m[l]);
      }
    }
  }

  const MatIn& in_;
  const Plan& p_;
  const int i0_, j0_;
  bool bad_[L] = {};  // A lane that FlushTiny sent to the generic path.
};

// Fused tile: one row i, W columns from j0 (sequential, blocked or promote chains).
template <bool kBound, int W>
void FusedTile(const MatIn& in, int i, int j0) {
  const Plan& p = *in.p;
  const int n = in.n, k = in.k;
  using Helper = ScalarDot<float, false>;
  const DotView dummy{};
  const Helper h(p, dummy);
  double tot[W], tm[W], te[W];
  bool bad[W];
  for (int w = 0; w < W; ++w) {
    const uint64_t cb = in.c ? in.c[size_t(i) * n + j0 + w] : 0;
    tot[w] = std::bit_cast<float>(static_cast<uint32_t>(cb));
    tm[w] = std::fabs(tot[w]);
    te[w] = 0;
    bad[w] = false;
  }
  const bool seq = p.chain == ChainKind::kSequential;
  const int chunk = seq ? std::max(k, 1) : p.chunk;
  const double two_f = std::ldexp(1.0, p.fraction_bits);
  const double two_mf = std::ldexp(1.0, -p.fraction_bits);
  const double u = p.u_acc, eta = p.eta_acc;
  const double uc = p.chain == ChainKind::kPromote ? p.u_prom : p.u_comb;
  const double etac = p.chain == ChainKind::kPromote ? p.eta_prom : p.eta_comb;
  const float* arow = in.a + size_t(i) * k;
  const float* aorow = in.ao + size_t(i) * k;
  const double* apow = in.apow + size_t(i) * k;
  for (int k0 = 0, k1 = 0; k0 < k; k0 = k1) {
    k1 = ChunkEnd(p, chunk, k0, k);
    double acc[W], am[W], ae[W];
    for (int w = 0; w < W; ++w) {
      acc[w] = seq ? tot[w] : 0.0;
      am[w] = seq ? tm[w] : 0.0;
      ae[w] = seq ? te[w] : 0.0;
    }
    for (int g0 = k0; g0 < k1; g0 += p.group) {
      const int g1 = std::min(k1, g0 + p.group);
      const bool full = g1 - g0 == p.group;
      double emax[W], s[W];
      for (int w = 0; w < W; ++w) emax[w] = h.AccPow(acc[w]);
      for (int kk = g0; kk < g1; ++kk) {
        const double av = arow[kk];
        const double* brow = in.bd + size_t(kk) * n + j0;
        if (p.actual) {
          for (int w = 0; w < W; ++w) emax[w] = std::max(emax[w], Helper::ExpPow(av * brow[w]));
        } else {
          const double ap = apow[kk];
          const double* bp = in.bpow + size_t(kk) * n + j0;
          for (int w = 0; w < W; ++w) emax[w] = std::max(emax[w], ap * bp[w]);
        }
      }
      double scale[W];
      for (int w = 0; w < W; ++w) {
        scale[w] = emax[w] > 0 ? two_f / emax[w] : 1.0;
        s[w] = h.Align(acc[w] * scale[w]);
      }
      for (int kk = g0; kk < g1; ++kk) {
        const double av = arow[kk];
        const double* brow = in.bd + size_t(kk) * n + j0;
        if (p.round_down) {
          for (int w = 0; w < W; ++w) s[w] += __builtin_floor(av * brow[w] * scale[w]);
        } else {
          for (int w = 0; w < W; ++w) s[w] += __builtin_trunc(av * brow[w] * scale[w]);
        }
      }
      if constexpr (kBound) {
        for (int w = 0; w < W; ++w) {
          double sum_e = ae[w], m = am[w];
          int nonzero = acc[w] != 0;
          for (int kk = g0; kk < g1; ++kk) {
            const double bu = in.bd[size_t(kk) * n + j0 + w];
            const double bo = in.bo[size_t(kk) * n + j0 + w];
            const double x = static_cast<double>(aorow[kk]) * bo;
            const double pu = static_cast<double>(arow[kk]) * bu;
            nonzero += pu != 0;
            sum_e += std::fabs(pu - x);
            m += std::fabs(x);
          }
          double t = 0;
          if (emax[w] > 0) {
            t = nonzero * std::max(emax[w] * two_mf, std::numeric_limits<double>::denorm_min());
          }
          am[w] = Up(m);
          ae[w] = BoundStep(u, eta, sum_e + t, am[w]);
        }
      }
      for (int w = 0; w < W; ++w) {
        acc[w] = static_cast<float>(h.RoundGroup(s[w], emax[w], full, bad[w]));
      }
    }
    for (int w = 0; w < W; ++w) {
      if (seq) {
        tot[w] = acc[w];
        tm[w] = am[w];
        te[w] = ae[w];
      } else {
        tot[w] = static_cast<float>(static_cast<float>(tot[w]) + static_cast<float>(acc[w]));
        if constexpr (kBound) {
          const double mm = Up(tm[w] + am[w]);
          te[w] = BoundStep(uc, etac, te[w] + ae[w], mm);
          tm[w] = mm;
        }
      }
    }
  }
  for (int w = 0; w < W; ++w) {
    const size_t idx = size_t(i) * n + j0 + w;
    const float v = static_cast<float>(tot[w]);
    if (bad[w] || !std::isfinite(v)) {
      (*in.redo)[idx] = 1;
      continue;
    }
    in.d[idx] = std::bit_cast<uint32_t>(v);
    if (kBound) in.bounds[idx] = te[w];
  }
}

#if defined(__x86_64__)
// The value-only kernels in AVX2 intrinsics (GCC does not keep HostTile's accumulators in
// registers). Same operations as HostTile / FusedTile<false>, lane by lane.

// Float32 host tile: R rows x 16 columns; fma (or add of the rounded product) per step.
// (Out of line: inlined into MatmulRows, the 512^3 benchmark ran a few percent slower.)
template <bool kRound, int R>
[[gnu::noinline]] void HostTileF32(const MatIn& in, int i0, int j0) {
  const Plan& p = *in.p;
  const int n = in.n, k = in.k;
  __m256 tot[R][2];
  for (int r = 0; r < R; ++r) {
    float cv[16];
    for (int w = 0; w < 16; ++w) {
      const uint64_t cb = in.c ? in.c[size_t(i0 + r) * n + j0 + w] : 0;
      cv[w] = std::bit_cast<float>(static_cast<uint32_t>(cb));
    }
    tot[r][0] = _mm256_loadu_ps(cv);
    tot[r][1] = _mm256_loadu_ps(cv + 8);
  }
  const bool seq = p.chain == ChainKind::kSequential;
  const int chunk = seq ? std::max(k, 1) : p.chunk;
  for (int k0 = 0, k1 = 0; k0 < k; k0 = k1) {
    k1 = ChunkEnd(p, chunk, k0, k);
    __m256 acc[R][2];
    for (int r = 0; r < R; ++r) {
      acc[r][0] = seq ? tot[r][0] : _mm256_setzero_ps();
      acc[r][1] = seq ? tot[r][1] : _mm256_setzero_ps();
    }
    const float* arow = in.a + size_t(i0) * k;
    for (int kk = k0; kk < k1; ++kk) {
      const float* brow = in.bpackf + (size_t(j0 / 16) * k + kk) * 16;
      const __m256 b0 = _mm256_loadu_ps(brow), b1 = _mm256_loadu_ps(brow + 8);
      for (int r = 0; r < R; ++r) {
        const __m256 av = _mm256_broadcast_ss(arow + size_t(r) * k + kk);
        if constexpr (kRound) {
          acc[r][0] = _mm256_add_ps(acc[r][0], _mm256_mul_ps(av, b0));
          acc[r][1] = _mm256_add_ps(acc[r][1], _mm256_mul_ps(av, b1));
        } else {
          acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
          acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int h = 0; h < 2; ++h) {
        tot[r][h] = seq ? acc[r][h] : _mm256_add_ps(tot[r][h], acc[r][h]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    float v[16];
    _mm256_storeu_ps(v, tot[r][0]);
    _mm256_storeu_ps(v + 8, tot[r][1]);
    for (int w = 0; w < 16; ++w) {
      const size_t idx = size_t(i0 + r) * n + j0 + w;
      if (!std::isfinite(v[w])) {
        (*in.redo)[idx] = 1;
      } else {
        in.d[idx] = std::bit_cast<uint32_t>(v[w]);
      }
    }
  }
}

// Kahan tile, values only: R rows x 16 columns (KahanTile<float, kRound, false>, lane by lane;
// p - comp is fma(a, b, -comp) as there). 4R independent chains of four dependent operations.
template <bool kRound, int R>
void KahanTileF32(const MatIn& in, int i0, int j0) {
  const int n = in.n, k = in.k;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 acc[R][2], comp[R][2];
  for (int r = 0; r < R; ++r) {
    float cv[16];
    for (int w = 0; w < 16; ++w) {
      const uint64_t cb = in.c ? in.c[size_t(i0 + r) * n + j0 + w] : 0;
      cv[w] = std::bit_cast<float>(static_cast<uint32_t>(cb));
    }
    acc[r][0] = _mm256_loadu_ps(cv);
    acc[r][1] = _mm256_loadu_ps(cv + 8);
    comp[r][0] = comp[r][1] = _mm256_setzero_ps();
  }
  const float* arow = in.a + size_t(i0) * k;
  const float* btile = in.bpackf + size_t(j0 / 16) * k * 16;
  for (int kk = 0; kk < k; ++kk) {
    const __m256 b[2] = {_mm256_loadu_ps(btile + size_t(kk) * 16),
                         _mm256_loadu_ps(btile + size_t(kk) * 16 + 8)};
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(arow + size_t(r) * k + kk);
      for (int h = 0; h < 2; ++h) {
        __m256 y;
        if constexpr (kRound) {
          y = _mm256_sub_ps(_mm256_mul_ps(av, b[h]), comp[r][h]);
        } else {
          y = _mm256_fmadd_ps(av, b[h], _mm256_xor_ps(comp[r][h], sign));
        }
        const __m256 t = _mm256_add_ps(acc[r][h], y);
        comp[r][h] = _mm256_sub_ps(_mm256_sub_ps(t, acc[r][h]), y);
        acc[r][h] = t;
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    float v[16], cm[16];
    _mm256_storeu_ps(v, acc[r][0]);
    _mm256_storeu_ps(v + 8, acc[r][1]);
    _mm256_storeu_ps(cm, comp[r][0]);
    _mm256_storeu_ps(cm + 8, comp[r][1]);
    for (int w = 0; w < 16; ++w) {
      const size_t idx = size_t(i0 + r) * n + j0 + w;
      if (!std::isfinite(v[w]) || !std::isfinite(cm[w])) {
        (*in.redo)[idx] = 1;
      } else {
        in.d[idx] = std::bit_cast<uint32_t>(v[w]);
      }
    }
  }
}

// Fused tile, values only: R rows x 8 columns, 2R independent vectors of 4 doubles (latency, not
// throughput, bounds this loop). The integer sums and the maxima are exact and order-free, so
// each is split into two partial chains.
template <int R, bool kFloorAlign>
void FusedTileAvx(const MatIn& in, int i0, int j0) {
  constexpr int C = 2 * R;
  const Plan& p = *in.p;
  const int n = in.n, k = in.k;
  const __m256d sign = _mm256_set1_pd(-0.0);
  const __m256d zero = _mm256_setzero_pd();
  const __m256d ones = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256d expmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FF0000000000000ll));
  const __m256d min_normal32 = _mm256_set1_pd(0x1p-126);
  const __m256d overflow32 = _mm256_set1_pd(0x1p128);
  const __m256i scale_base = _mm256_set1_epi64x(
      static_cast<long long>((uint64_t{1023 + 1023} + p.fraction_bits) << 52));
  const __m256d two_mf = _mm256_set1_pd(std::ldexp(1.0, -p.fraction_bits));
  const int cut = 52 - p.acc_fraction_bits;
  const __m128i cut_count = _mm_cvtsi32_si128(cut);
  const __m256i low_mask = _mm256_set1_epi64x(static_cast<long long>((uint64_t{1} << cut) - 1));
  const __m256i half_m1 =
      _mm256_set1_epi64x(static_cast<long long>((uint64_t{1} << (cut - 1)) - 1));
  const __m256i one_i = _mm256_set1_epi64x(1);
  constexpr int kMode = kFloorAlign ? (_MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
                                    : (_MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  __m256d tot[C], bad[C];
  for (int c = 0; c < C; ++c) {
    double cv[4];
    for (int w = 0; w < 4; ++w) {
      const uint64_t cb = in.c ? in.c[size_t(i0 + c / 2) * n + j0 + 4 * (c % 2) + w] : 0;
      cv[w] = std::bit_cast<float>(static_cast<uint32_t>(cb));
    }
    tot[c] = _mm256_loadu_pd(cv);
    bad[c] = zero;
  }
  const bool seq = p.chain == ChainKind::kSequential;
  const int chunk = seq ? std::max(k, 1) : p.chunk;
  const float* arow[R];
  const double* apow[R];
  for (int r = 0; r < R; ++r) {
    arow[r] = in.a + size_t(i0 + r) * k;
    apow[r] = in.apow + size_t(i0 + r) * k;
  }
  const double* btile = in.bpack + size_t(j0 / 8) * k * 16;
  for (int k0 = 0, k1 = 0; k0 < k; k0 = k1) {
    k1 = ChunkEnd(p, chunk, k0, k);
    __m256d acc[C];
    for (int c = 0; c < C; ++c) acc[c] = seq ? tot[c] : zero;
    for (int g0 = k0; g0 < k1; g0 += p.group) {
      const int g1 = std::min(k1, g0 + p.group);
      const __m256d full = g1 - g0 == p.group ? ones : zero;
      __m256d emax[C], emax1[C], scale[C], s[C], s1[C];
      for (int c = 0; c < C; ++c) {
        const __m256d e = _mm256_and_pd(acc[c], expmask);
        if (p.actual) {
          emax[c] = e;
        } else {
          const __m256d is_zero = _mm256_cmp_pd(acc[c], zero, _CMP_EQ_OQ);
          emax[c] = _mm256_andnot_pd(is_zero, _mm256_max_pd(e, min_normal32));
        }
        emax1[c] = zero;
      }
      // Even group offsets into emax, odd ones into emax1 (unrolled by two so the arrays stay
      // in registers).
      auto max_pass = [&](int t, __m256d (&dst)[C]) {
        const double* brow = btile + size_t(t) * 16;
        for (int r = 0; r < R; ++r) {
          for (int h = 0; h < 2; ++h) {
            __m256d e;
            if (p.actual) {
              e = _mm256_and_pd(
                  _mm256_mul_pd(_mm256_set1_pd(arow[r][t]), _mm256_loadu_pd(brow + 4 * h)),
                  expmask);
            } else {
              e = _mm256_mul_pd(_mm256_set1_pd(apow[r][t]), _mm256_loadu_pd(brow + 8 + 4 * h));
            }
            dst[2 * r + h] = _mm256_max_pd(dst[2 * r + h], e);
          }
        }
      };
      int kk = g0;
      for (; kk + 1 < g1; kk += 2) {
        max_pass(kk, emax);
        max_pass(kk + 1, emax1);
      }
      if (kk < g1) max_pass(kk, emax);
      for (int c = 0; c < C; ++c) {
        emax[c] = _mm256_max_pd(emax[c], emax1[c]);
        const __m256d emax_zero = _mm256_cmp_pd(emax[c], zero, _CMP_EQ_OQ);
        // 2^F / emax on the exponent field: bits(2^(F - e)) = bits(2^F) + bits(1) - bits(2^e).
        const __m256i q = _mm256_sub_epi64(scale_base, _mm256_castpd_si256(emax[c]));
        scale[c] = _mm256_blendv_pd(_mm256_castsi256_pd(q), one, emax_zero);
        s[c] = _mm256_round_pd(_mm256_mul_pd(acc[c], scale[c]), kMode);
        s1[c] = sign;  // -0, the identity of IEEE addition: s + s1 keeps the sign of zeros.
      }
      auto sum_pass = [&](int t, __m256d (&dst)[C]) {
        const double* brow = btile + size_t(t) * 16;
        for (int r = 0; r < R; ++r) {
          const __m256d av = _mm256_set1_pd(arow[r][t]);
          for (int h = 0; h < 2; ++h) {
            const int c = 2 * r + h;
            const __m256d x =
                _mm256_mul_pd(_mm256_mul_pd(av, _mm256_loadu_pd(brow + 4 * h)), scale[c]);
            dst[c] = _mm256_add_pd(dst[c], _mm256_round_pd(x, kMode));
          }
        }
      };
      for (kk = g0; kk + 1 < g1; kk += 2) {
        sum_pass(kk, s);
        sum_pass(kk + 1, s1);
      }
      if (kk < g1) sum_pass(kk, s);
      for (int c = 0; c < C; ++c) {
        // RoundGroup, lane-wise.
        const __m256d sum = _mm256_add_pd(s[c], s1[c]);
        const __m256d s_zero = _mm256_cmp_pd(sum, zero, _CMP_EQ_OQ);
        __m256i bits = _mm256_castpd_si256(_mm256_andnot_pd(sign, sum));
        if (p.rne) {
          const __m256i lsb = _mm256_and_si256(_mm256_srl_epi64(bits, cut_count), one_i);
          bits = _mm256_add_epi64(bits, _mm256_add_epi64(half_m1, lsb));
        }
        bits = _mm256_andnot_si256(low_mask, bits);
        __m256d v = _mm256_mul_pd(_mm256_castsi256_pd(bits), _mm256_mul_pd(emax[c], two_mf));
        const __m256d in_range = _mm256_and_pd(_mm256_cmp_pd(v, min_normal32, _CMP_GE_OQ),
                                               _mm256_cmp_pd(v, overflow32, _CMP_LT_OQ));
        bad[c] = _mm256_or_pd(bad[c], _mm256_andnot_pd(_mm256_or_pd(in_range, s_zero), ones));
        v = _mm256_or_pd(v, _mm256_and_pd(sum, sign));
        const __m256d keep_sign = _mm256_and_pd(_mm256_cmp_pd(emax[c], zero, _CMP_EQ_OQ), full);
        const __m256d zres = _mm256_and_pd(sum, keep_sign);  // sum (a signed zero) or +0.
        acc[c] = _mm256_blendv_pd(v, zres, s_zero);
      }
    }
    for (int c = 0; c < C; ++c) {
      tot[c] = seq ? acc[c]
                   : _mm256_cvtps_pd(_mm_add_ps(_mm256_cvtpd_ps(tot[c]), _mm256_cvtpd_ps(acc[c])));
    }
  }
  for (int c = 0; c < C; ++c) {
    double v[4], b[4];
    _mm256_storeu_pd(v, tot[c]);
    _mm256_storeu_pd(b, bad[c]);
    for (int w = 0; w < 4; ++w) {
      const size_t idx = size_t(i0 + c / 2) * n + j0 + 4 * (c % 2) + w;
      const float f = static_cast<float>(v[w]);
      if (std::bit_cast<uint64_t>(b[w]) != 0 || !std::isfinite(f)) {
        (*in.redo)[idx] = 1;
      } else {
        in.d[idx] = std::bit_cast<uint32_t>(f);
      }
    }
  }
}

// FusedTileAvx in AVX-512 (ActiveIsa() kAvx512): R rows x 8 columns, one vector of 8 doubles
// per row (a packed B tile row is one load), the same operations lane by lane; lane masks
// instead of all-ones vectors. (Max as the masked form with every lane set: GCC 12 warns that
// the plain form's undefined source may be used uninitialized.)
// GCC 12 reports a false -Wmaybe-uninitialized for the _mm512_undefined_pd() source of the
// unmasked AVX-512 intrinsics (every lane is written); silenced for this function only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <int R, bool kFloorAlign, bool kBound = false>
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma"))) void FusedTileAvx512(
    const MatIn& in, int i0, int j0) {
  const Plan& p = *in.p;
  const int n = in.n, k = in.k;
  const __m512d sign = _mm512_set1_pd(-0.0);
  const __m512d zero = _mm512_setzero_pd();
  const __m512d one = _mm512_set1_pd(1.0);
  const __m512d expmask = _mm512_castsi512_pd(_mm512_set1_epi64(0x7FF0000000000000ll));
  const __m512d min_normal32 = _mm512_set1_pd(0x1p-126);
  const __m512d overflow32 = _mm512_set1_pd(0x1p128);
  const __m512i scale_base = _mm512_set1_epi64(
      static_cast<long long>((uint64_t{1023 + 1023} + p.fraction_bits) << 52));
  const __m512d two_mf = _mm512_set1_pd(std::ldexp(1.0, -p.fraction_bits));
  const int cut = 52 - p.acc_fraction_bits;
  const __m128i cut_count = _mm_cvtsi32_si128(cut);
  const __m512i low_mask = _mm512_set1_epi64(static_cast<long long>((uint64_t{1} << cut) - 1));
  const __m512i half_m1 =
      _mm512_set1_epi64(static_cast<long long>((uint64_t{1} << (cut - 1)) - 1));
  const __m512i one_i = _mm512_set1_epi64(1);
  constexpr int kMode = kFloorAlign ? (_MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
                                    : (_MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  __m512d tot[R], tm[R], te[R];  // Value; bound data M and E (kBound).
  __mmask8 bad[R];
  const __m512d up = _mm512_set1_pd(kUp);
  const __m512d abs_mask = _mm512_castsi512_pd(_mm512_set1_epi64(0x7FFFFFFFFFFFFFFFll));
  const __m512d denorm = _mm512_set1_pd(std::numeric_limits<double>::denorm_min());
  const double u = p.u_acc, eta = p.eta_acc;
  const double uc = p.chain == ChainKind::kPromote ? p.u_prom : p.u_comb;
  const double etac = p.chain == ChainKind::kPromote ? p.eta_prom : p.eta_comb;
  for (int r = 0; r < R; ++r) {
    double cv[8];
    for (int w = 0; w < 8; ++w) {
      const uint64_t cb = in.c ? in.c[size_t(i0 + r) * n + j0 + w] : 0;
      cv[w] = std::bit_cast<float>(static_cast<uint32_t>(cb));
    }
    tot[r] = _mm512_loadu_pd(cv);
    tm[r] = _mm512_and_pd(tot[r], abs_mask);
    te[r] = zero;
    bad[r] = 0;
  }
  const bool seq = p.chain == ChainKind::kSequential;
  const int chunk = seq ? std::max(k, 1) : p.chunk;
  const float* arow[R];
  const double* apow[R];
  for (int r = 0; r < R; ++r) {
    arow[r] = in.a + size_t(i0 + r) * k;
    apow[r] = in.apow + size_t(i0 + r) * k;
  }
  const double* btile = in.bpack + size_t(j0 / 8) * k * 16;
  for (int k0 = 0, k1 = 0; k0 < k; k0 = k1) {
    k1 = ChunkEnd(p, chunk, k0, k);
    __m512d acc[R], am[R], ae[R];
    for (int r = 0; r < R; ++r) {
      acc[r] = seq ? tot[r] : zero;
      am[r] = seq ? tm[r] : zero;
      ae[r] = seq ? te[r] : zero;
    }
    for (int g0 = k0; g0 < k1; g0 += p.group) {
      const int g1 = std::min(k1, g0 + p.group);
      const __mmask8 full = g1 - g0 == p.group ? 0xFF : 0;
      __m512d emax[R], emax1[R], scale[R], s[R], s1[R];
      for (int r = 0; r < R; ++r) {
        const __m512d e = _mm512_and_pd(acc[r], expmask);
        if (p.actual) {
          emax[r] = e;
        } else {
          const __mmask8 is_zero = _mm512_cmp_pd_mask(acc[r], zero, _CMP_EQ_OQ);
          emax[r] = _mm512_maskz_mov_pd(static_cast<__mmask8>(~is_zero),
                                        _mm512_mask_max_pd(e, 0xFF, e, min_normal32));
        }
        emax1[r] = zero;
      }
      // Even group offsets into emax, odd ones into emax1 (two chains; unrolled by two so the
      // arrays stay in registers).
      auto max_pass = [&](int t, __m512d (&dst)[R]) {
        const double* brow = btile + size_t(t) * 16;
        for (int r = 0; r < R; ++r) {
          __m512d e;
          if (p.actual) {
            e = _mm512_and_pd(
                _mm512_mul_pd(_mm512_set1_pd(arow[r][t]), _mm512_loadu_pd(brow)), expmask);
          } else {
            e = _mm512_mul_pd(_mm512_set1_pd(apow[r][t]), _mm512_loadu_pd(brow + 8));
          }
          dst[r] = _mm512_mask_max_pd(dst[r], 0xFF, dst[r], e);
        }
      };
      int kk = g0;
      for (; kk + 1 < g1; kk += 2) {
        max_pass(kk, emax);
        max_pass(kk + 1, emax1);
      }
      if (kk < g1) max_pass(kk, emax);
      for (int r = 0; r < R; ++r) {
        emax[r] = _mm512_mask_max_pd(emax[r], 0xFF, emax[r], emax1[r]);
        const __mmask8 emax_zero = _mm512_cmp_pd_mask(emax[r], zero, _CMP_EQ_OQ);
        // 2^F / emax on the exponent field: bits(2^(F - e)) = bits(2^F) + bits(1) - bits(2^e).
        const __m512i q = _mm512_sub_epi64(scale_base, _mm512_castpd_si512(emax[r]));
        scale[r] = _mm512_mask_blend_pd(emax_zero, _mm512_castsi512_pd(q), one);
        s[r] = _mm512_roundscale_pd(_mm512_mul_pd(acc[r], scale[r]), kMode);
        s1[r] = sign;  // -0, the identity of IEEE addition: s + s1 keeps the sign of zeros.
      }
      auto sum_pass = [&](int t, __m512d (&dst)[R]) {
        const __m512d b = _mm512_loadu_pd(btile + size_t(t) * 16);
        for (int r = 0; r < R; ++r) {
          const __m512d x =
              _mm512_mul_pd(_mm512_mul_pd(_mm512_set1_pd(arow[r][t]), b), scale[r]);
          dst[r] = _mm512_add_pd(dst[r], _mm512_roundscale_pd(x, kMode));
        }
      };
      for (kk = g0; kk + 1 < g1; kk += 2) {
        sum_pass(kk, s);
        sum_pass(kk + 1, s1);
      }
      if (kk < g1) sum_pass(kk, s);
      if constexpr (kBound) {
        // FusedTile's bound, lane-wise: M and E summed over the group in k order (inexact
        // double adds: not split), T = nonzero terms * the alignment quantum.
        for (int r = 0; r < R; ++r) {
          __m512d m = am[r], se = ae[r];
          __m512d nz = _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(acc[r], zero, _CMP_NEQ_OQ), one);
          for (int t = g0; t < g1; ++t) {
            const __m512d bu = _mm512_loadu_pd(btile + size_t(t) * 16);
            const __m512d bo = _mm512_cvtps_pd(_mm256_loadu_ps(in.bo + size_t(t) * n + j0));
            const __m512d x = _mm512_mul_pd(_mm512_set1_pd(in.ao[size_t(i0 + r) * k + t]), bo);
            const __m512d pu = _mm512_mul_pd(_mm512_set1_pd(arow[r][t]), bu);
            nz = _mm512_add_pd(
                nz, _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(pu, zero, _CMP_NEQ_OQ), one));
            se = _mm512_add_pd(se, _mm512_and_pd(_mm512_sub_pd(pu, x), abs_mask));
            m = _mm512_add_pd(m, _mm512_and_pd(x, abs_mask));
          }
          const __m512d quantum =
              _mm512_mask_max_pd(denorm, 0xFF, _mm512_mul_pd(emax[r], two_mf), denorm);
          const __m512d tq = _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(emax[r], zero, _CMP_GT_OQ),
                                                 _mm512_mul_pd(nz, quantum));
          am[r] = _mm512_mul_pd(m, up);
          const __m512d e1 = _mm512_mul_pd(_mm512_set1_pd(1 + u), _mm512_add_pd(se, tq));
          ae[r] = _mm512_mul_pd(
              _mm512_add_pd(_mm512_add_pd(e1, _mm512_mul_pd(_mm512_set1_pd(u), am[r])),
                            _mm512_set1_pd(eta)),
              up);
        }
      }
      for (int r = 0; r < R; ++r) {
        // RoundGroup, lane-wise.
        const __m512d sum = _mm512_add_pd(s[r], s1[r]);
        const __mmask8 s_zero = _mm512_cmp_pd_mask(sum, zero, _CMP_EQ_OQ);
        __m512i bits = _mm512_castpd_si512(_mm512_andnot_pd(sign, sum));
        if (p.rne) {
          const __m512i lsb = _mm512_and_si512(_mm512_srl_epi64(bits, cut_count), one_i);
          bits = _mm512_add_epi64(bits, _mm512_add_epi64(half_m1, lsb));
        }
        bits = _mm512_andnot_si512(low_mask, bits);
        __m512d v = _mm512_mul_pd(_mm512_castsi512_pd(bits), _mm512_mul_pd(emax[r], two_mf));
        const __mmask8 in_range = _mm512_cmp_pd_mask(v, min_normal32, _CMP_GE_OQ) &
                                  _mm512_cmp_pd_mask(v, overflow32, _CMP_LT_OQ);
        bad[r] = static_cast<__mmask8>(bad[r] | ~(in_range | s_zero));
        v = _mm512_or_pd(v, _mm512_and_pd(sum, sign));
        const __mmask8 keep_sign =
            static_cast<__mmask8>(_mm512_cmp_pd_mask(emax[r], zero, _CMP_EQ_OQ) & full);
        const __m512d zres = _mm512_maskz_mov_pd(keep_sign, sum);  // sum (a signed zero) or +0.
        acc[r] = _mm512_mask_blend_pd(s_zero, v, zres);
      }
    }
    for (int r = 0; r < R; ++r) {
      tot[r] = seq ? acc[r]
                   : _mm512_cvtps_pd(_mm256_add_ps(_mm512_cvtpd_ps(tot[r]),
                                                   _mm512_cvtpd_ps(acc[r])));
      if constexpr (kBound) {
        if (seq) {
          tm[r] = am[r];
          te[r] = ae[r];
        } else {
          const __m512d mm = _mm512_mul_pd(_mm512_add_pd(tm[r], am[r]), up);
          const __m512d e1 =
              _mm512_mul_pd(_mm512_set1_pd(1 + uc), _mm512_add_pd(te[r], ae[r]));
          te[r] = _mm512_mul_pd(
              _mm512_add_pd(_mm512_add_pd(e1, _mm512_mul_pd(_mm512_set1_pd(uc), mm)),
                            _mm512_set1_pd(etac)),
              up);
          tm[r] = mm;
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    double v[8], e[8];
    _mm512_storeu_pd(v, tot[r]);
    _mm512_storeu_pd(e, te[r]);
    for (int w = 0; w < 8; ++w) {
      const size_t idx = size_t(i0 + r) * n + j0 + w;
      const float f = static_cast<float>(v[w]);
      if (((bad[r] >> w) & 1) != 0 || !std::isfinite(f)) {
        (*in.redo)[idx] = 1;
      } else {
        in.d[idx] = std::bit_cast<uint32_t>(f);
        if constexpr (kBound) in.bounds[idx] = e[w];
      }
    }
  }
}

#pragma GCC diagnostic pop
#endif

// (Compiled for AVX2: called only after HostReady().) float32 (kShift 0) or bfloat16 (kShift 16)
// values only: a branch-free loop the compiler vectorizes; NaN/Inf or stray high bits -> false.
template <int kShift>
bool DecodeValues(std::span<const uint64_t> bits, float* out) {
  constexpr uint64_t kLimit = uint64_t{1} << (32 - kShift);
  uint32_t bad = 0;
  for (size_t i = 0; i < bits.size(); ++i) {
    const uint64_t x = bits[i];
    const uint32_t f = static_cast<uint32_t>(x << kShift);
    bad |= static_cast<uint32_t>(x >= kLimit) |
           static_cast<uint32_t>((f & 0x7F800000u) == 0x7F800000u);
    out[i] = std::bit_cast<float>(f);
  }
  return bad == 0;
}

// As DecodeValues, plus pow[i] = Pow32 of the float32 bits (Emin -126 for both formats).
template <int kShift>
bool DecodeValuesPow(std::span<const uint64_t> bits, float* out, double* pow) {
  constexpr uint64_t kLimit = uint64_t{1} << (32 - kShift);
  uint32_t bad = 0;
  for (size_t i = 0; i < bits.size(); ++i) {
    const uint64_t x = bits[i];
    const uint32_t f = static_cast<uint32_t>(x << kShift);
    const uint32_t e = f & 0x7F800000u;
    bad |= static_cast<uint32_t>(x >= kLimit) | static_cast<uint32_t>(e == 0x7F800000u);
    out[i] = std::bit_cast<float>(f);
    const float sub = (f & 0x7FFFFFu) != 0 ? 0x1p-126f : 0.0f;
    pow[i] = static_cast<double>(e != 0 ? std::bit_cast<float>(e) : sub);
  }
  return bad == 0;
}

// One output element through the scalar evaluator.
template <bool kBound>
void ScalarElement(const MatIn& in, int i, int j) {
  const size_t idx = size_t(i) * in.n + j;
  DotView d{in.a + size_t(i) * in.k, in.b + j, in.ao + size_t(i) * in.k, in.bo + j,
            in.apow ? in.apow + size_t(i) * in.k : nullptr, in.bpow ? in.bpow + j : nullptr,
            1, size_t(in.n), in.k};
  EvalResult r;
  if (!DotDecoded<kBound>(*in.p, d, in.c ? in.c[idx] : 0, r, in.seed)) {
    (*in.redo)[idx] = 1;
    return;
  }
  in.d[idx] = r.bits;
  if (kBound) in.bounds[idx] = r.bound;
}

template <bool kBound>
void MatmulRows(const MatIn& in, int i_lo, int i_hi) {
  const Plan& p = *in.p;
  // Pairwise chains with unroll > 1 (no preset matmul) run element by element.
  const bool pairwise = p.chain == ChainKind::kPairwise;
  const bool tiled = p.chain == ChainKind::kSequential || p.chain == ChainKind::kBlocked ||
                     p.chain == ChainKind::kPromote || (pairwise && p.unroll == 1);
  if (p.arith == Plan::Arith::kFused) {
    constexpr int W = 8;
#if defined(__x86_64__)
    if (kBound && tiled && ActiveIsa() == Isa::kAvx512) {
      // With bounds: 2-row tiles (the bound data take the registers of the other rows).
      auto tile = [&](auto r_tag, int i, int j) {
        constexpr int kR = decltype(r_tag)::value;
        if (p.round_down) {
          FusedTileAvx512<kR, true, true>(in, i, j);
        } else {
          FusedTileAvx512<kR, false, true>(in, i, j);
        }
      };
      for (int j = 0; j + W <= in.n; j += W) {
        int i = i_lo;
        for (; i + 2 <= i_hi; i += 2) tile(std::integral_constant<int, 2>(), i, j);
        for (; i < i_hi; ++i) tile(std::integral_constant<int, 1>(), i, j);
      }
      for (int i = i_lo; i < i_hi; ++i) {
        for (int j = in.n / W * W; j < in.n; ++j) ScalarElement<kBound>(in, i, j);
      }
      return;
    }
    if (!kBound && tiled) {
      // Column tiles outside, rows inside: a packed B tile stays in cache across rows.
      const bool avx512 = ActiveIsa() == Isa::kAvx512;
      auto tile = [&](auto r_tag, int i, int j) {
        constexpr int kR = decltype(r_tag)::value;
        if (avx512) {
          if (p.round_down) {
            FusedTileAvx512<kR, true>(in, i, j);
          } else {
            FusedTileAvx512<kR, false>(in, i, j);
          }
        } else if (p.round_down) {
          FusedTileAvx<kR, true>(in, i, j);
        } else {
          FusedTileAvx<kR, false>(in, i, j);
        }
      };
      for (int j = 0; j + W <= in.n; j += W) {
        int i = i_lo;
        for (; i + 4 <= i_hi; i += 4) tile(std::integral_constant<int, 4>(), i, j);
        for (; i < i_hi; ++i) tile(std::integral_constant<int, 1>(), i, j);
      }
      for (int i = i_lo; i < i_hi; ++i) {
        for (int j = in.n / W * W; j < in.n; ++j) ScalarElement<kBound>(in, i, j);
      }
      return;
    }
#endif
    for (int i = i_lo; i < i_hi; ++i) {
      int j = 0;
      if (tiled) {
        for (; j + W <= in.n; j += W) FusedTile<kBound, W>(in, i, j);
      }
      for (; j < in.n; ++j) ScalarElement<kBound>(in, i, j);
    }
    return;
  }
  const bool tiles = tiled || p.walk;
  auto run = [&](auto tile4, auto tile1, int w_width) {
    int i = i_lo;
    for (; tiles && i + 4 <= i_hi; i += 4) {
      int j = 0;
      for (; j + w_width <= in.n; j += w_width) tile4(i, j);
      for (int r = 0; r < 4; ++r) {
        for (int jj = j; jj < in.n; ++jj) ScalarElement<kBound>(in, i + r, jj);
      }
    }
    for (; i < i_hi; ++i) {
      int j = 0;
      if (tiles) {
        for (; j + w_width <= in.n; j += w_width) tile1(i, j);
      }
      for (; j < in.n; ++j) ScalarElement<kBound>(in, i, j);
    }
  };
  if (p.walk) {
    // Column tiles outside, rows inside (a column strip of B stays in cache).
    auto run_cols = [&](auto tile4, auto tile1, int w_width) {
      for (int j = 0; j + w_width <= in.n; j += w_width) {
        int i = i_lo;
        for (; i + 4 <= i_hi; i += 4) tile4(i, j);
        for (; i < i_hi; ++i) tile1(i, j);
      }
      for (int i = i_lo; i < i_hi; ++i) {
        for (int j = in.n / w_width * w_width; j < in.n; ++j) ScalarElement<kBound>(in, i, j);
      }
    };
    if (p.arith == Plan::Arith::kHostF64) {
      if (p.round_product) {
        run_cols([&](int i, int j) { WalkTile<double, true, kBound, 4, 8>(in, i, j).Run(); },
            [&](int i, int j) { WalkTile<double, true, kBound, 1, 8>(in, i, j).Run(); }, 8);
      } else {
        run_cols([&](int i, int j) { WalkTile<double, false, kBound, 4, 8>(in, i, j).Run(); },
            [&](int i, int j) { WalkTile<double, false, kBound, 1, 8>(in, i, j).Run(); }, 8);
      }
    } else if (p.round_product) {
      run_cols([&](int i, int j) { WalkTile<float, true, kBound, 4, 16>(in, i, j).Run(); },
          [&](int i, int j) { WalkTile<float, true, kBound, 1, 16>(in, i, j).Run(); }, 16);
    } else {
      run_cols([&](int i, int j) { WalkTile<float, false, kBound, 4, 16>(in, i, j).Run(); },
          [&](int i, int j) { WalkTile<float, false, kBound, 1, 16>(in, i, j).Run(); }, 16);
    }
    return;
  }
  if (p.kahan) {
#if defined(__x86_64__)
    if (!kBound && p.arith == Plan::Arith::kHostF32) {
      // Column tiles outside, 2-row blocks inside (the packed B tile stays in cache).
      auto tile = [&](auto r_tag, int i, int j) {
        constexpr int kR = decltype(r_tag)::value;
        if (p.round_product) {
          KahanTileF32<true, kR>(in, i, j);
        } else {
          KahanTileF32<false, kR>(in, i, j);
        }
      };
      for (int j = 0; j + 16 <= in.n; j += 16) {
        int i = i_lo;
        for (; i + 2 <= i_hi; i += 2) tile(std::integral_constant<int, 2>(), i, j);
        for (; i < i_hi; ++i) tile(std::integral_constant<int, 1>(), i, j);
      }
      for (int i = i_lo; i < i_hi; ++i) {
        for (int j = in.n / 16 * 16; j < in.n; ++j) ScalarElement<kBound>(in, i, j);
      }
      return;
    }
#endif
    if (p.arith == Plan::Arith::kHostF64) {
      if (p.round_product) {
        run([&](int i, int j) { KahanTile<double, true, kBound, 4, 8>(in, i, j); },
            [&](int i, int j) { KahanTile<double, true, kBound, 1, 8>(in, i, j); }, 8);
      } else {
        run([&](int i, int j) { KahanTile<double, false, kBound, 4, 8>(in, i, j); },
            [&](int i, int j) { KahanTile<double, false, kBound, 1, 8>(in, i, j); }, 8);
      }
    } else if (p.round_product) {
      run([&](int i, int j) { KahanTile<float, true, kBound, 4, 16>(in, i, j); },
          [&](int i, int j) { KahanTile<float, true, kBound, 1, 16>(in, i, j); }, 16);
    } else {
      run([&](int i, int j) { KahanTile<float, false, kBound, 4, 16>(in, i, j); },
          [&](int i, int j) { KahanTile<float, false, kBound, 1, 16>(in, i, j); }, 16);
    }
  } else if (pairwise) {
    if (p.arith == Plan::Arith::kHostF64) {
      if (p.round_product) {
        run([&](int i, int j) { PairwiseTile<double, true, kBound, 4, 8>(in, i, j).Run(); },
            [&](int i, int j) { PairwiseTile<double, true, kBound, 1, 8>(in, i, j).Run(); }, 8);
      } else {
        run([&](int i, int j) { PairwiseTile<double, false, kBound, 4, 8>(in, i, j).Run(); },
            [&](int i, int j) { PairwiseTile<double, false, kBound, 1, 8>(in, i, j).Run(); }, 8);
      }
    } else if (p.round_product) {
      run([&](int i, int j) { PairwiseTile<float, true, kBound, 4, 16>(in, i, j).Run(); },
          [&](int i, int j) { PairwiseTile<float, true, kBound, 1, 16>(in, i, j).Run(); }, 16);
    } else {
      run([&](int i, int j) { PairwiseTile<float, false, kBound, 4, 16>(in, i, j).Run(); },
          [&](int i, int j) { PairwiseTile<float, false, kBound, 1, 16>(in, i, j).Run(); }, 16);
    }
  } else if (p.arith == Plan::Arith::kHostF64) {
    if (p.round_product) {
      run([&](int i, int j) { HostTile<double, true, kBound, 4, 8>(in, i, j); },
          [&](int i, int j) { HostTile<double, true, kBound, 1, 8>(in, i, j); }, 8);
    } else {
      run([&](int i, int j) { HostTile<double, false, kBound, 4, 8>(in, i, j); },
          [&](int i, int j) { HostTile<double, false, kBound, 1, 8>(in, i, j); }, 8);
    }
  }
#if defined(__x86_64__)
  else if (!kBound && tiled) {
    // Column tiles outside, 4-row blocks inside (the packed B tile stays in cache).
    auto tile = [&](auto r_tag, int i, int j) {
      constexpr int kR = decltype(r_tag)::value;
      if (p.round_product) {
        HostTileF32<true, kR>(in, i, j);
      } else {
        HostTileF32<false, kR>(in, i, j);
      }
    };
    for (int j = 0; j + 16 <= in.n; j += 16) {
      int i = i_lo;
      for (; i + 6 <= i_hi; i += 6) tile(std::integral_constant<int, 6>(), i, j);
      for (; i < i_hi; ++i) tile(std::integral_constant<int, 1>(), i, j);
    }
    for (int i = i_lo; i < i_hi; ++i) {
      for (int j = in.n / 16 * 16; j < in.n; ++j) ScalarElement<kBound>(in, i, j);
    }
  }
#endif
  else if (p.round_product) {
    run([&](int i, int j) { HostTile<float, true, kBound, 4, 16>(in, i, j); },
        [&](int i, int j) { HostTile<float, true, kBound, 1, 16>(in, i, j); }, 16);
  } else {
    run([&](int i, int j) { HostTile<float, false, kBound, 4, 16>(in, i, j); },
        [&](int i, int j) { HostTile<float, false, kBound, 1, 16>(in, i, j); }, 16);
  }
}

}  // namespace
#if defined(__x86_64__) && defined(__clang__)
#pragma clang attribute pop
#elif defined(__x86_64__)
#pragma GCC pop_options
#endif
// =============================================================================================

namespace {

// Decodes n inputs (with stride) into `out` (used values, originals when needed, pows).
// Decodes a dot's inputs into `out`: values, originals (out.o; left empty unless the inputs are
// converted, then the values double as originals), 2^nominal (only with need_pow).
bool DecodeAll(InputKind kind, const Table* t, std::span<const uint64_t> bits, Decoded& out,
               bool need_pow) {
  const size_t n = bits.size();
  out.v.resize(n);
  if (!need_pow && kind == InputKind::kFloat32) return DecodeValues<0>(bits, out.v.data());
  if (!need_pow && kind == InputKind::kBFloat16) return DecodeValues<16>(bits, out.v.data());
  if (kind == InputKind::kFloat32 || kind == InputKind::kBFloat16) {
    out.o.clear();
    out.pow.resize(n);
    return kind == InputKind::kFloat32 ? DecodeValuesPow<0>(bits, out.v.data(), out.pow.data())
                                       : DecodeValuesPow<16>(bits, out.v.data(), out.pow.data());
  }
  const bool keep_orig = kind == InputKind::kTf32Rtz;
  out.o.resize(keep_orig ? n : 0);
  if (need_pow) out.pow.resize(n);
  bool ok = true;
  double pw;
  float orig;
  for (size_t i = 0; i < n; ++i) {
    ok &= DecodeOne(kind, t, bits[i], out.v[i], keep_orig ? out.o[i] : orig,
                    need_pow ? out.pow[i] : pw);
  }
  return ok;
}

// inputs.daz on decoded values: the originals kept in d.o, values below `min` read as zeros.
void ApplyInputDaz(Decoded& d, float min) {
  if (d.o.empty()) d.o = d.v;
  for (float& v : d.v) {
    if (std::fabs(v) < min) v = std::copysign(0.0f, v);
  }
}

absl::StatusOr<EvalResult> DotImpl(const Model& model, const Plan& plan,
                                   std::span<const uint64_t> a, std::span<const uint64_t> b,
                                   bool is_sum, uint64_t c_bits, const EvalOptions& options) {
  auto generic = [&]() {
    g_fallbacks.fetch_add(1, std::memory_order_relaxed);
    return is_sum ? GenericEvaluateSum(model, a, c_bits, options)
                  : GenericEvaluateDot(model, a, b, c_bits, options);
  };
  if (!HostReady()) return generic();
  const bool need_pow = plan.arith == Plan::Arith::kFused;
  Decoded da, db;
  if (!DecodeAll(plan.in_a, plan.table_a, a, da, need_pow)) return generic();
  if (is_sum) {
    // A sum is a dot with b = 1 (exact; nominal exponent 0), see evaluate.cc's Leaves.
    db.v.assign(a.size(), 1.0f);
    db.o.assign(a.size(), 1.0f);
    db.pow.assign(a.size(), 1.0);
  } else if (!DecodeAll(plan.in_b, plan.table_b, b, db, need_pow)) {
    return generic();
  }
  if (plan.input_daz) {
    ApplyInputDaz(da, plan.daz_min_a);
    if (!is_sum) ApplyInputDaz(db, plan.daz_min_b);
  }
  const float* ao = da.o.empty() ? da.v.data() : da.o.data();
  const float* bo = db.o.empty() ? db.v.data() : db.o.data();
  const DotView d{da.v.data(), db.v.data(), ao, bo,
                  need_pow ? da.pow.data() : nullptr, need_pow ? db.pow.data() : nullptr,
                  1, 1, static_cast<int>(a.size())};
  EvalResult r;
  const bool ok = options.want_bound ? DotDecoded<true>(plan, d, c_bits, r, options.seed)
                                     : DotDecoded<false>(plan, d, c_bits, r, options.seed);
  if (!ok) return generic();
  return r;
}

}  // namespace

uint64_t FastEvalFallbacks() { return g_fallbacks.load(std::memory_order_relaxed); }

const char* FastPathIneligibleReason(const Model& model) {
  Plan plan;
  return MakePlan(model, plan);
}

bool FastPathEligible(const Model& model) { return *FastPathIneligibleReason(model) == '\0'; }

absl::StatusOr<EvalResult> FastEvaluateDot(const Model& model, std::span<const uint64_t> a,
                                           std::span<const uint64_t> b, uint64_t c_bits,
                                           const EvalOptions& options) {
  Plan plan;
  if (const char* why = MakePlan(model, plan); *why != '\0') {
    return absl::FailedPreconditionError(
        Cat("fast dot: model '", model.name, "' is not eligible (", why, ")"));
  }
  return fast_internal::FastDot(model, plan, a, b, c_bits, options);
}

absl::StatusOr<EvalResult> FastEvaluateSum(const Model& model, std::span<const uint64_t> x,
                                           uint64_t c_bits, const EvalOptions& options) {
  Plan plan;
  if (const char* why = MakePlan(model, plan); *why != '\0') {
    return absl::FailedPreconditionError(
        Cat("fast sum: model '", model.name, "' is not eligible (", why, ")"));
  }
  return fast_internal::FastSum(model, plan, x, c_bits, options);
}

absl::Status FastEvaluateMatmul(const Model& model, int m, int n, int k,
                                std::span<const uint64_t> a, Layout a_layout,
                                std::span<const uint64_t> b, Layout b_layout,
                                std::span<const uint64_t> c, std::span<uint64_t> d,
                                std::span<double> bounds, const EvalOptions& options,
                                int threads) {
  Plan plan;
  if (const char* why = MakePlan(model, plan); *why != '\0') {
    return absl::FailedPreconditionError(
        Cat("fast matmul: model '", model.name, "' is not eligible (", why, ")"));
  }
  return fast_internal::FastMatmul(model, plan, m, n, k, a, a_layout, b, b_layout, c, d, bounds,
                                   options, threads);
}

absl::StatusOr<EvalResult> fast_internal::FastDot(const Model& model, const Plan& plan,
                                                  std::span<const uint64_t> a,
                                                  std::span<const uint64_t> b, uint64_t c_bits,
                                                  const EvalOptions& options) {
  if (a.size() != b.size()) {
    return absl::InvalidArgumentError(
        Cat("dot: a has ", a.size(), " elements, b has ", b.size()));
  }
  if (a.size() > (size_t{1} << 30)) return absl::InvalidArgumentError("dot: too long");
  return DotImpl(model, plan, a, b, false, c_bits, options);
}

absl::StatusOr<EvalResult> fast_internal::FastSum(const Model& model, const Plan& plan,
                                                  std::span<const uint64_t> x, uint64_t c_bits,
                                                  const EvalOptions& options) {
  if (x.size() > (size_t{1} << 30)) return absl::InvalidArgumentError("sum: too long");
  return DotImpl(model, plan, x, {}, true, c_bits, options);
}

absl::Status fast_internal::FastMatmul(const Model& model, const Plan& plan, int m, int n,
                                       int k, std::span<const uint64_t> a, Layout a_layout,
                                       std::span<const uint64_t> b, Layout b_layout,
                                       std::span<const uint64_t> c, std::span<uint64_t> d,
                                       std::span<double> bounds, const EvalOptions& options,
                                       int threads) {
  if (m < 0 || n < 0 || k < 0) return absl::InvalidArgumentError("matmul: negative size");
  if (threads < 1) return absl::InvalidArgumentError("matmul: threads must be >= 1");
  const size_t mk = size_t(m) * k, kn = size_t(k) * n, mn = size_t(m) * n;
  if (a.size() != mk || b.size() != kn || (!c.empty() && c.size() != mn) || d.size() != mn ||
      (!bounds.empty() && bounds.size() != mn)) {
    return absl::InvalidArgumentError(Cat("matmul: sizes do not match m=", m, " n=", n,
                                          " k=", k));
  }
  if (!HostReady()) {
    g_fallbacks.fetch_add(uint64_t(m) * uint64_t(n), std::memory_order_relaxed);
    return GenericEvaluateMatmul(model, m, n, k, a, a_layout, b, b_layout, c, d, bounds,
                                 options);
  }
  const bool want_bound = options.want_bound && !bounds.empty();
  const bool fused = plan.arith == Plan::Arith::kFused;
  // Decode into row-major A (m x k) and B (k x n), in per-thread buffers kept between calls
  // (fresh multi-megabyte allocations cost page faults comparable to the arithmetic).
  auto a_at = [&](int i, int p) {
    return a_layout == Layout::kRowMajor ? a[size_t(i) * k + p] : a[size_t(p) * m + i];
  };
  auto b_at = [&](int p, int j) {
    return b_layout == Layout::kRowMajor ? b[size_t(p) * n + j] : b[size_t(j) * k + p];
  };
  static thread_local MatScratch scratch;
  MatScratch& sc = scratch;
  const bool need_orig = want_bound && (plan.convert || plan.input_daz);
  std::vector<uint8_t>& redo = sc.redo;
  redo.assign(mn, 0);
  if (plan.arith != Plan::Arith::kHostF64) {
    // float32 (bfloat16: chain.format) c with bits above the container: the generic path
    // decides what they mean.
    const int width = plan.promote_bf16 ? 16 : 32;
    for (size_t idx = 0; idx < c.size(); ++idx) redo[idx] = (c[idx] >> width) != 0;
  }
  std::vector<uint8_t>& bad_row = sc.bad_row;
  std::vector<uint8_t>& bad_col = sc.bad_col;
  bad_row.assign(m, 0);
  bad_col.assign(n, 0);
  sc.av.resize(mk);
  sc.ao.resize(need_orig ? mk : 0);
  sc.apow.resize(fused ? mk : 0);
  sc.bv.resize(kn);
  sc.bo.resize(need_orig ? kn : 0);
  sc.bpow.resize(fused ? kn : 0);
  {
    double pw;
    float orig;
    for (int i = 0; i < m; ++i) {
      for (int p = 0; p < k; ++p) {
        const size_t idx = size_t(i) * k + p;
        if (!DecodeOne(plan.in_a, plan.table_a, a_at(i, p), sc.av[idx],
                       need_orig ? sc.ao[idx] : orig, fused ? sc.apow[idx] : pw)) {
          bad_row[i] = 1;
          sc.av[idx] = 0;  // Keeps the kernels' arithmetic finite; redone below.
          if (need_orig) sc.ao[idx] = 0;
        }
      }
    }
    for (int p = 0; p < k; ++p) {
      for (int j = 0; j < n; ++j) {
        const size_t idx = size_t(p) * n + j;
        if (!DecodeOne(plan.in_b, plan.table_b, b_at(p, j), sc.bv[idx],
                       need_orig ? sc.bo[idx] : orig, fused ? sc.bpow[idx] : pw)) {
          bad_col[j] = 1;
          sc.bv[idx] = 0;
          if (need_orig) sc.bo[idx] = 0;
        }
      }
    }
    if (plan.input_daz) {
      // inputs.daz after the decode loops (kept out of them: they are a third of a fast matmul).
      for (float& v : sc.av) {
        if (std::fabs(v) < plan.daz_min_a) v = std::copysign(0.0f, v);
      }
      for (float& v : sc.bv) {
        if (std::fabs(v) < plan.daz_min_b) v = std::copysign(0.0f, v);
      }
    }
  }
  sc.bd.clear();
  sc.bpack.clear();
  sc.bpackf.clear();
  if (fused) {
    if (want_bound) sc.bd.assign(sc.bv.begin(), sc.bv.end());
    sc.bpack.resize(size_t(n / 8) * k * 16);
    for (int t = 0; t < n / 8; ++t) {
      for (int p = 0; p < k; ++p) {
        for (int w = 0; w < 8; ++w) {
          sc.bpack[(size_t(t) * k + p) * 16 + w] = sc.bv[size_t(p) * n + 8 * t + w];
          sc.bpack[(size_t(t) * k + p) * 16 + 8 + w] = sc.bpow[size_t(p) * n + 8 * t + w];
        }
      }
    }
  } else if (!want_bound) {
    sc.bpackf.resize(size_t(n / 16) * k * 16);
    for (int t = 0; t < n / 16; ++t) {
      for (int p = 0; p < k; ++p) {
        for (int w = 0; w < 16; ++w) {
          sc.bpackf[(size_t(t) * k + p) * 16 + w] = sc.bv[size_t(p) * n + 16 * t + w];
        }
      }
    }
  }
  MatIn in{&plan, m, n, k, sc.av.data(), need_orig ? sc.ao.data() : sc.av.data(),
           fused ? sc.apow.data() : nullptr, sc.bv.data(),
           need_orig ? sc.bo.data() : sc.bv.data(), fused ? sc.bpow.data() : nullptr,
           sc.bd.data(), sc.bpack.data(), sc.bpackf.data(), c.empty() ? nullptr : c.data(),
           d.data(), want_bound ? bounds.data() : nullptr, &redo, options.seed};
  auto rows = [&](int lo, int hi) {
    if (want_bound) {
      MatmulRows<true>(in, lo, hi);
    } else {
      MatmulRows<false>(in, lo, hi);
    }
  };
  const int t = std::max(1, std::min(threads, m));
  if (t == 1) {
    rows(0, m);
  } else {
    // Row ranges in multiples of 4 (the tile height): each element is computed by one thread.
    const int per = ((m + t - 1) / t + 3) / 4 * 4;
    std::vector<std::thread> pool;
    for (int lo = 0; lo < m; lo += per) {
      const int hi = std::min(m, lo + per);
      pool.emplace_back([&rows, lo, hi] { rows(lo, hi); });
    }
    for (std::thread& th : pool) th.join();
  }
  // Elements the fast kernels could not decide: the generic path, on the original bits.
  std::vector<uint64_t> row(k), col(k);
  EvalOptions opt = options;
  opt.want_bound = want_bound;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      const size_t idx = size_t(i) * n + j;
      if (!redo[idx] && !bad_row[i] && !bad_col[j]) continue;
      g_fallbacks.fetch_add(1, std::memory_order_relaxed);
      for (int p = 0; p < k; ++p) {
        row[p] = a_at(i, p);
        col[p] = b_at(p, j);
      }
      absl::StatusOr<EvalResult> r =
          GenericEvaluateDot(model, row, col, c.empty() ? 0 : c[idx], opt);
      if (!r.ok()) return r.status();
      d[idx] = r->bits;
      if (want_bound) bounds[idx] = r->bound;
    }
  }
  return absl::OkStatus();
}

}  // namespace fpconform
