// The fast paths' scalar evaluator (fast_eval.h): ScalarDot, the mirror of evaluate.cc's
// Evaluator for the plans of fast_plan.h, value in float or double, bound in the same double
// operations (bound_step.h); DotDecoded runs one dot on decoded inputs (fast_decode.h's DotView).
// Used by the dot path (fast_scalar.cc) and by the matmul tiles for single elements and their
// per-lane operations (fast_tiles_avx2*.cc).
//
// Compiled for AVX2+FMA (the pragma below covers this header's definitions only; the headers it
// includes come first): its fma steps are one instruction each. Call only after HostReady().
// Include it only from the files compiled for the kernels (fast_scalar.cc, fast_tiles_*.cc).
#ifndef FPCONFORM_ACCUMULATION_FAST_SCALAR_H_
#define FPCONFORM_ACCUMULATION_FAST_SCALAR_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "accumulation/bound_step.h"
#include "accumulation/chain_walk.h"
#include "accumulation/evaluate.h"
#include "accumulation/fast_decode.h"
#include "accumulation/fast_plan.h"
#include "base/isa.h"
#include "formats/ops.h"
#include "formats/round_pack.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "base/target_avx2_fma_push.h"  // Functions from here on: AVX2+FMA.
namespace fpconform::fast_internal {

using accumulation_internal::BoundStep;
using accumulation_internal::kUp;
using accumulation_internal::Up;

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

// The odd neighbour of `bits` (the encoding of v, a float or a double) on the side of a nonzero
// difference `err` (exact value - v) when bits is even: the rounding to odd once v is the nearest.
template <class Bits, class V, class E>
inline Bits OddTowards(Bits bits, V v, E err) {
  if (err == 0 || (bits & 1u) != 0) return bits;
  return std::signbit(err) == std::signbit(v) ? bits + 1 : bits - 1;
}

// x + y rounded to odd in T (float or double): the rounded sum, its last bit decided by TwoSum's
// exact error (an even sum with an error becomes its odd neighbour on the side of the exact sum).
template <class T>
inline T AddToOdd(T x, T y) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  const T s = x + y;
  const T bb = s - x;
  const T err = (x - (s - bb)) + (y - bb);
  return std::bit_cast<T>(OddTowards(std::bit_cast<Bits>(s), s, err));
}

// x + y rounded once to bfloat16 (rne), as a float32 value: the float32 sum rounded to odd
// (AddToOdd) carries 24 >= 8 + 2 bits, so rounding it to bfloat16 gives the correctly rounded
// sum (Boldo & Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using
// rounding to odd", IEEE TC 57(4), 2008). A float32 overflow gives a non-finite value (the
// caller hands the dot to the generic path).
inline float AddRoundBf16(float x, float y) {
  return std::bit_cast<float>(Bf16RneBits(std::bit_cast<uint32_t>(AddToOdd(x, y))) << 16);
}

// The leaf bound data of a float64 product a*b (finite a and b; InputKind::kFloat64):
// m = |a*b| rounded up and, with a rounded product (round_product), e = |fl(a*b) - a*b| rounded
// up (0 for an exact product): evaluate.cc's MagUp(exact) and DiffUp(used, exact). Where
// 2^-960 <= |fl(a*b)| < 2^1000 the product's rounding error err = fma(a, b, -fl(a*b)) is exact
// (a float64 value: ea + eb >= Emin + p - 1; Boldo & Muller, "Exact and approximated error of
// the FMA", IEEE TC 60(2), 2011, §2), so |a*b| rounds up to |fl(a*b)| or its successor by err's
// sign and e = |err|. Elsewhere (tiny, zero or huge products) formats/ops.h's soft Mul and Fma
// round the exact values upward (and downward for a negative difference), as RoundPack does.
inline void LeafBound64(double a, double b, bool round_product, double& m, double& e) {
  const double p = a * b;
  const double ap = std::fabs(p);
  if (ap >= 0x1p-960 && ap < 0x1p1000) {
    const double err = __builtin_fma(a, b, -p);
    const bool above = err != 0 && std::signbit(err) == std::signbit(p);
    m = above ? std::bit_cast<double>(std::bit_cast<uint64_t>(ap) + 1) : ap;
    e = round_product ? std::fabs(err) : 0.0;
    return;
  }
  if (a == 0 || b == 0) {
    m = e = 0;
    return;
  }
  OpEnv up, down;
  up.rounding = Rounding::kUpward;
  down.rounding = Rounding::kDownward;
  const uint64_t ua = std::bit_cast<uint64_t>(std::fabs(a));
  const uint64_t ub = std::bit_cast<uint64_t>(std::fabs(b));
  m = std::bit_cast<double>(Mul(Float64(), ua, ub, up).bits);
  if (!round_product) {
    e = 0;
    return;
  }
  // |a*b| - |fl(a*b)| rounded up where it is positive; else |that| = -(it rounded down).
  const uint64_t neg_p = std::bit_cast<uint64_t>(-ap);
  const double d_up = std::bit_cast<double>(Fma(Float64(), ua, ub, neg_p, up).bits);
  e = d_up > 0 ? d_up : -std::bit_cast<double>(Fma(Float64(), ua, ub, neg_p, down).bits);
}

// x + p (x a bfloat16 value as a float, p exact in double: a product of two bfloat16 values,
// which float32 may not hold below its subnormals) rounded once to bfloat16 (rne), as a float32
// value: TwoSum in double gives the exact sum s + err (no overflow: |x| < 2^128, |p| < 2^256);
// s rounded to odd (53 bits), then to float32 rounded to odd (the float32 nearest f and the exact
// s_odd - f, a double: both on s_odd's grid, |s_odd - f| <= 2^-150 or half an ulp of f), then
// to bfloat16 rne: each step keeps >= 2 more bits than the next at every magnitude (the
// subnormal grids included), so the result is the correctly rounded sum (Boldo & Melquiond, as
// AddRoundBf16). A float32 overflow gives a non-finite value (the caller hands the dot to the
// generic path).
inline float AddRoundBf16Exact(float x, double p) {
  const double s_odd = AddToOdd(static_cast<double>(x), p);
  const float f = static_cast<float>(s_odd);
  if (!std::isfinite(f)) return f;
  const uint32_t bits = OddTowards(std::bit_cast<uint32_t>(f), f, s_odd - static_cast<double>(f));
  return std::bit_cast<float>(Bf16RneBits(bits) << 16);
}

// Scalar evaluator of one dot over a DotViewT<In>: the mirror of evaluate.cc's Evaluator for the
// plans above, value in Acc (float or double), bound in the same double operations. In is the
// decoded input (float; double for float64 inputs, with Acc = double).
template <class Acc, bool kBound, class In = float>
class ScalarDot {
  static_assert(std::is_same_v<In, float> || std::is_same_v<Acc, double>);

 public:
  ScalarDot(const Plan& p, const DotViewT<In>& d) : p_(p), d_(d) {}
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
    using Node = ::fpconform::fast_internal::Node<Acc>;
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
    if constexpr (std::is_same_v<In, double>) {
      LeafBound64(d_.a[i * d_.sa], d_.b[i * d_.sb], p_.round_product, m, e);
      return;
    }
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
      // A bfloat16 accumulator: a*b (bfloat16 inputs) exact in double.
      out.v = p_.acc_bf16
                  ? AddRoundBf16Exact(av, static_cast<double>(a) * static_cast<double>(b))
                  : __builtin_fmaf(a, b, av);
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
  const DotViewT<In>& d_;
};

// c of a float32-accumulator plan (bfloat16 bits when chain.format is bfloat16); false for bits
// above the container or a non-finite value.
inline bool DecodeC32(const Plan& p, uint64_t c_bits, float& c) {
  const int shift = p.promote_bf16 || p.acc_bf16 ? 16 : 0;
  if ((c_bits >> (32 - shift)) != 0) return false;
  const uint32_t b = static_cast<uint32_t>(c_bits) << shift;
  c = std::bit_cast<float>(b);
  return std::isfinite(c);
}

// The output of a float32-accumulator plan from the final value v (and its m, e): float32 bits,
// bfloat16 bits of a bfloat16 chain.format (v is a bfloat16 value), or v converted to bfloat16
// (rne) with the conversion's bound. False when the output is not finite.
inline bool Output32(const Plan& p, float v, double m, double e, bool bound, EvalResult& out) {
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  if (p.promote_bf16 || p.acc_bf16) {
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
// In = double (DotView64): float64 inputs, whose plans are kHostF64.
template <bool kBound, class In = float>
bool DotDecoded(const Plan& p, const DotViewT<In>& d, uint64_t c_bits, EvalResult& out,
                uint64_t seed) {
  if (std::is_same_v<In, double> || p.arith == Plan::Arith::kHostF64) {
    const double c = std::bit_cast<double>(c_bits);
    if (!std::isfinite(c)) return false;
    ScalarDot<double, kBound, In> ev(p, d);
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
  if constexpr (std::is_same_v<In, float>) {
    float c;
    if (!DecodeC32(p, c_bits, c)) return false;
    ScalarDot<float, kBound> ev(p, d);
    ev.seed_ = seed;
    const Node<float> r = ev.Run(c);
    if (ev.bad || !std::isfinite(r.v)) return false;
    return Output32(p, r.v, r.m, r.e, kBound, out);
  }
  return false;
}

}  // namespace fpconform::fast_internal
#include "base/target_pop.h"  // The AVX2+FMA target popped.

#endif  // FPCONFORM_ACCUMULATION_FAST_SCALAR_H_
