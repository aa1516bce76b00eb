#include "accumulation/evaluate.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <sstream>
#include <string>

#include "accumulation/bound_step.h"
#include "accumulation/chain_walk.h"
#include "accumulation/eval_checks.h"
#include "accumulation/fast_plan.h"
#include "accumulation/strings_internal.h"
#include "base/run_workers.h"
#include "cases/pinned_random.h"
#include "formats/ops.h"
#include "formats/round_pack.h"

namespace fpconform {
namespace {

using accumulation_internal::BoundStep;
using accumulation_internal::Cat;
using accumulation_internal::CheckDotArgs;
using accumulation_internal::CheckMatmulArgs;
using accumulation_internal::CheckSumArgs;
using accumulation_internal::Eta;
using accumulation_internal::Reduced;
using accumulation_internal::UnitRoundoff;
using accumulation_internal::Up;

__extension__ typedef __int128 int128;

int BitLen(uint128 x) {
  const uint64_t hi = static_cast<uint64_t>(x >> 64);
  if (hi != 0) return 128 - std::countl_zero(hi);
  return 64 - std::countl_zero(static_cast<uint64_t>(x));
}

// An exact value: (-1)^sign * sig * 2^exp, plus the exponent it aligns by in a fused group.
struct Term {
  Unpacked::Kind kind = Unpacked::Kind::kZero;
  bool sign = false;
  int32_t exp = 0;
  uint128 sig = 0;
  int32_t nominal = 0;  // E(x) for inputs / accumulators; E(a) + E(b) for products.
};

// A node of the evaluation tree: the computed value, its accumulator bits (rounding nodes), and
// the bound data M (sum of |exact leaves|) and E (error bound).
struct Node {
  Term t;
  uint64_t bits = 0;
  double m = 0;
  double e = 0;
};

Term FromUnpacked(const FormatSpec& f, const Unpacked& u) {
  Term t;
  t.kind = u.kind;
  t.sign = u.sign;
  if (u.kind == Unpacked::Kind::kFinite) {
    t.exp = u.exponent;
    t.sig = u.significand;
    t.nominal = std::max(u.exponent + BitLen(u.significand) - 1, Emin(f));
  }
  return t;
}

Term Decode(const FormatSpec& f, uint64_t bits, bool daz) {
  return FromUnpacked(f, UnpackBits(f, bits, daz));
}

Term Product(const Term& a, const Term& b) {
  Term p;
  p.sign = a.sign != b.sign;
  using K = Unpacked::Kind;
  if (a.kind == K::kNaN || b.kind == K::kNaN) {
    p.kind = K::kNaN;
  } else if (a.kind == K::kInf || b.kind == K::kInf) {
    p.kind = (a.kind == K::kZero || b.kind == K::kZero) ? K::kNaN : K::kInf;
  } else if (a.kind == K::kZero || b.kind == K::kZero) {
    p.kind = K::kZero;
  } else {
    p.kind = K::kFinite;
    p.exp = a.exp + b.exp;
    p.sig = a.sig * b.sig;
    p.nominal = a.nominal + b.nominal;
  }
  return p;
}

// Magnitude as a double, rounded up.
double MagUp(const Term& t) {
  switch (t.kind) {
    case Unpacked::Kind::kZero: return 0;
    case Unpacked::Kind::kFinite: break;
    default: return std::numeric_limits<double>::infinity();
  }
  OpEnv up;
  up.rounding = Rounding::kUpward;
  const OpResult r = RoundPack(Float64(), false, t.exp, t.sig, false, up);
  return std::bit_cast<double>(r.bits);
}

// The exact sum of two finite-or-zero terms, as handed to RoundPack.
struct Wide {
  bool zero = true;  // Exact zero (sign per §6.3 decided by the caller).
  bool sign = false;
  int32_t exp = 0;
  uint128 sig = 0;
  bool sticky = false;
};

// x and y finite or zero.
Wide ExactAdd(Term x, Term y) {
  Wide w;
  const bool xz = x.kind == Unpacked::Kind::kZero, yz = y.kind == Unpacked::Kind::kZero;
  if (xz && yz) return w;
  if (xz || yz) {
    const Term& t = xz ? y : x;
    w.zero = false;
    w.sign = t.sign;
    w.exp = t.exp;
    w.sig = t.sig;
    return w;
  }
  auto normalize = [](Term& t) {
    const int shift = 125 - BitLen(t.sig);
    t.sig <<= shift;
    t.exp -= shift;
  };
  normalize(x);
  normalize(y);
  if (y.exp > x.exp || (y.exp == x.exp && y.sig > x.sig)) std::swap(x, y);
  const int64_t d = int64_t{x.exp} - y.exp;
  uint128 ys = 0;
  bool sticky = false;
  if (d >= 128) {
    sticky = true;
  } else if (d > 0) {
    ys = y.sig >> d;
    sticky = (y.sig & ((uint128{1} << d) - 1)) != 0;
  } else {
    ys = y.sig;
  }
  w.sign = x.sign;
  w.exp = x.exp;
  if (x.sign == y.sign) {
    w.sig = x.sig + ys;
  } else {
    w.sig = x.sig - ys;
    if (sticky) w.sig -= 1;  // Exact: (big - kept - 1) + (1 - delta).
  }
  w.sticky = sticky;
  w.zero = w.sig == 0 && !sticky;
  return w;
}

struct Rounder {
  FormatSpec spec;  // Possibly reduced precision.
  const FormatSpec* full;
  double u = 0;
  double eta = 0;
};

Rounder MakeRounder(const FormatSpec& f, int fraction_bits, const OpEnv& env) {
  Rounder r{Reduced(f, fraction_bits), &f, 0, 0};
  r.u = UnitRoundoff(fraction_bits, env);
  r.eta = Eta(f, fraction_bits, env.flush_to_zero);
  return r;
}

class Evaluator {
 public:
  using Node = ::fpconform::Node;  // The chain walk's node (chain_walk.h).

  Evaluator(const Model& model, const EvalOptions& options)
      : m_(model),
        opt_(options),
        acc_(MakeRounder(*model.accumulator.format, model.accumulator.fraction_bits,
                         model.adder.env)),
        combine_(MakeRounder(*model.accumulator.format, model.accumulator.fraction_bits,
                             model.accumulator.combine_env)) {
    if (model.chain.kind == ChainKind::kPromote) {
      promote_ = MakeRounder(*model.chain.promote_format, model.chain.promote_format->fraction_bits,
                             model.chain.promote_env);
    }
    group_ = model.adder.kind == AdderKind::kFused ? model.adder.group : 1;
  }

  // Builds the leaves from inputs (products, or the x_i when b is empty).
  void Leaves(std::span<const uint64_t> a, std::span<const uint64_t> b, bool is_sum) {
    leaves_.resize(a.size());
    const FormatSpec& fa = *m_.inputs.a;
    const FormatSpec& fb = *m_.inputs.b;
    const FormatSpec* conv = m_.inputs.convert_to;
    const bool daz = m_.inputs.daz;
    const bool products_scaled =
        block_ != nullptr && !is_sum && m_.epilogue.block_apply == BlockApply::kProducts;
    // Without a conversion or input DAZ the operands used are the inputs themselves, so the
    // product used is the exact one (computed once: this loop is most of the generic engine's
    // time on short chains).
    const bool inputs_used_as_given = conv == nullptr && !daz;
    for (size_t i = 0; i < a.size(); ++i) {
      Node& n = leaves_[i];
      const Term ta_orig = Decode(fa, a[i], false);
      const Term tb_orig = is_sum ? Term{} : Decode(fb, b[i], false);
      const Term exact = is_sum ? ta_orig : Product(ta_orig, tb_orig);
      Term used;
      if (inputs_used_as_given) {
        used = exact;
      } else if (conv != nullptr) {
        auto converted = [&](const FormatSpec& f, uint64_t x) {
          return Decode(*conv, Convert(f, *conv, x, ConvEnv(daz)).bits, daz);
        };
        const Term ta = converted(fa, a[i]);
        used = is_sum ? ta : Product(ta, converted(fb, b[i]));
      } else {  // daz: the inputs decoded with subnormals read as zero.
        const Term ta = Decode(fa, a[i], true);
        used = is_sum ? ta : Product(ta, Decode(fb, b[i], true));
      }
      if (!is_sum && m_.product.policy == ProductPolicy::kRound) {
        used = RoundProduct(used);
      }
      n.t = used;
      if (opt_.want_bound) {
        n.m = MagUp(exact);
        n.e = DiffUp(used, exact);
      }
      if (products_scaled) ScaleLeaf(n, static_cast<int>(i) / m_.epilogue.scale_block);
    }
    // chain.permutation: pad with +0 products to a multiple of its length, reorder each block.
    const std::vector<int>& perm = m_.chain.permutation;
    if (!perm.empty()) {
      const size_t len = perm.size();
      const size_t padded = (leaves_.size() + len - 1) / len * len;
      leaves_.resize(padded, Zero());
      std::vector<Node> reordered(padded);
      for (size_t blk = 0; blk < padded; blk += len) {
        for (size_t i = 0; i < len; ++i) reordered[blk + i] = leaves_[blk + size_t(perm[i])];
      }
      leaves_ = std::move(reordered);
    }
  }

  Node Leaf(const FormatSpec& f, uint64_t bits) {
    Node n;
    n.t = Decode(f, bits, false);
    n.bits = bits;
    if (opt_.want_bound) n.m = MagUp(n.t);
    return n;
  }

  // Runs the chain over the leaves, starting from c (bits in FinalAccumulatorFormat()), and
  // converts to the output format.
  EvalResult Run(uint64_t c_bits) {
    const int k = static_cast<int>(leaves_.size());
    const Node start = Start(c_bits);
    // Kahan's compensated loop is not a tree of additions: it runs here, not in the chain walk.
    const Node total =
        m_.chain.kind == ChainKind::kSequential && m_.adder.kind == AdderKind::kKahan
            ? Kahan(start, 0, k)
            : accumulation_internal::WalkChain(m_, k, opt_.seed, start, *this);
    return Finish(total, c_bits);
  }

  // The chain's starting node: c, or +0 with epilogue.c = "after".
  Node Start(uint64_t c_bits) {
    const FormatSpec& final_format = m_.FinalAccumulatorFormat();
    return Leaf(final_format, m_.AddsCAfterChain() ? ZeroBits(final_format, false) : c_bits);
  }

  // After the chain: epilogue.c = "after"'s add of c, then the output conversion.
  EvalResult Finish(Node total, uint64_t c_bits) {
    const FormatSpec& final_format = m_.FinalAccumulatorFormat();
    if (m_.AddsCAfterChain()) {
      const Rounder epilogue =
          MakeRounder(final_format, final_format.fraction_bits, m_.epilogue.env);
      total = Add2(total, Leaf(final_format, c_bits), epilogue, m_.epilogue.env);
    }
    // Output conversion.
    EvalResult out;
    const FormatSpec& of = *m_.output.format;
    if (&of == &final_format) {
      out.bits = total.bits;
      out.bound = total.e;
    } else {
      OpEnv env = m_.output.env;
      if (env.rounding == Rounding::kStochastic) {
        env.sr_random = SplitMix64At(opt_.seed ^ 0x2545F4914F6CDD1Dull, 0);
      }
      out.bits = Convert(final_format, of, total.bits, env).bits;
      if (opt_.want_bound) {
        const double u = UnitRoundoff(of.fraction_bits, env);
        const double eta = std::ldexp(1.0, MinSubnormalExponent(of));
        out.bound = BoundStep(u, eta, total.e, total.m);
      }
    }
    return out;
  }

  // EvaluateBlockScaledMatmul's outer loop: outer (from Start) with one block's partial sum
  // (inner_bits in the accumulator format; M and E of its bound) promoted with scales sa, sb.
  void PromoteScaledInner(Node& outer, uint64_t inner_bits, double inner_m, double inner_e,
                          double sa, double sb) {
    Node inner;
    inner.t = Decode(*acc_.full, inner_bits, false);
    inner.bits = inner_bits;
    inner.m = inner_m;
    inner.e = inner_e;
    outer = ScaledPromote(outer, inner, sa, sb);
  }

 private:
  // The model's input conversion (inputs.convert_rounding, e.g. rtz for tf32), plus daz.
  OpEnv ConvEnv(bool daz) const {
    OpEnv e = m_.inputs.convert_env;
    e.denormals_are_zero = daz;
    return e;
  }

  Node Zero() const {
    Node n;
    n.t.kind = Unpacked::Kind::kZero;
    return n;
  }

  Term RoundProduct(const Term& p) {
    const FormatSpec& f = *m_.product.format;
    uint64_t bits;
    switch (p.kind) {
      case Unpacked::Kind::kNaN: bits = NanResultBits(f, m_.product.env, nullptr, nullptr); break;
      case Unpacked::Kind::kInf: bits = InfOrNanBits(f, p.sign, m_.product.env); break;
      case Unpacked::Kind::kZero: bits = ZeroBits(f, p.sign); break;
      default: bits = RoundPack(f, p.sign, p.exp, p.sig, false, m_.product.env).bits;
    }
    return Decode(f, bits, false);
  }

  // |x - y| rounded up (both finite or zero; Inf otherwise).
  static double DiffUp(const Term& x, Term y) {
    using K = Unpacked::Kind;
    if (x.kind == K::kNaN || x.kind == K::kInf || y.kind == K::kNaN || y.kind == K::kInf) {
      return (x.kind == y.kind && x.sign == y.sign && x.kind == K::kInf)
                 ? 0.0
                 : std::numeric_limits<double>::infinity();
    }
    y.sign = !y.sign;
    const Wide w = ExactAdd(x, y);
    if (w.zero) return 0;
    OpEnv up;
    up.rounding = Rounding::kUpward;
    return std::bit_cast<double>(RoundPack(Float64(), false, w.exp, w.sig, w.sticky, up).bits);
  }

  // Packs an exact Wide into the rounder's format; returns the node value (bits and term).
  static void Pack(const Rounder& r, const OpEnv& env, bool sign, int32_t exp, uint128 sig,
                   bool sticky, Node& out) {
    out.bits = RoundPack(r.spec, sign, exp, sig, sticky, env).bits;
    out.t = Decode(*r.full, out.bits, false);
  }

  void Special(const Rounder& r, const OpEnv& env, bool nan, bool sign, Node& out) {
    const FormatSpec& f = *r.full;
    out.bits = nan ? NanResultBits(f, env, nullptr, nullptr) : InfOrNanBits(f, sign, env);
    out.t = Decode(f, out.bits, false);
  }

  // round(x + y) into r's format; handles specials and the bound.
  Node Add2(const Node& x, const Node& y, const Rounder& r, const OpEnv& env) {
    Node out = RawAdd(x.t, y.t, r, env);
    if (opt_.want_bound) {
      out.m = Up(x.m + y.m);
      out.e = BoundStep(r.u, r.eta, x.e + y.e, out.m);
    }
    return out;
  }

  // round(a + b) into r's format (value only, no bound data).
  Node RawAdd(const Term& a, const Term& b, const Rounder& r, const OpEnv& env) {
    Node out;
    using K = Unpacked::Kind;
    if (a.kind == K::kNaN || b.kind == K::kNaN) {
      Special(r, env, true, false, out);
    } else if (a.kind == K::kInf || b.kind == K::kInf) {
      if (a.kind == K::kInf && b.kind == K::kInf && a.sign != b.sign) {
        Special(r, env, true, false, out);
      } else {
        Special(r, env, false, a.kind == K::kInf ? a.sign : b.sign, out);
      }
    } else {
      const Wide w = ExactAdd(a, b);
      if (w.zero) {
        bool neg;
        if (a.kind == K::kZero && b.kind == K::kZero) neg = a.sign && b.sign;
        else neg = env.rounding == Rounding::kDownward;
        out.bits = ZeroBits(*r.full, neg);
        out.t = Decode(*r.full, out.bits, false);
      } else {
        Pack(r, env, w.sign, w.exp, w.sig, w.sticky, out);
      }
    }
    return out;
  }

  static Term Negated(Term t) {
    t.sign = !t.sign;
    return t;
  }

  // Kahan's compensated sum (MODEL_FORMAT.md, adder.kind = "kahan"), from acc = c, comp = +0:
  //   y = p - comp;  t = acc + y;  comp = (t - acc) - y;  acc = t
  // each a rounding into the accumulator with the adder's rounding (and ftz).
  // Bound (a posteriori, rigorous): with d1, d3, d4 the rounding errors of y, (t - acc) and
  // comp (d2 that of t), comp' = d2 + d3 + d4 and acc' - comp' = acc - comp + p + d1 - d3 - d4,
  // so acc_n - (c + sum p_k) = comp_n + sum_k (d1 - d3 - d4), and
  //   |acc_n - exact| <= |comp_n| + sum_k (|d1| + |d3| + |d4|) + sum_k E(leaf k),
  // each |d| <= u |rounded result| + eta (the rounder's u and eta; see MakeRounder). This is at
  // most the classical (2u + O(n u^2)) sum |x_i| (Higham, Accuracy and Stability, 2nd ed., §4.3)
  // up to the eta terms, and usually far smaller.
  Node Kahan(const Node& c, int lo, int hi) {
    const OpEnv& env = m_.adder.env;
    Node acc = c;
    Term comp;  // +0.
    comp.kind = Unpacked::Kind::kZero;
    double err = 0, m = c.m;
    auto mag = [](const Node& n) { return MagUp(n.t); };
    for (int i = lo; i < hi; ++i) {
      const Node& leaf = leaves_[i];
      const Node y = RawAdd(leaf.t, Negated(comp), acc_, env);
      const Node t = RawAdd(acc.t, y.t, acc_, env);
      const Node d = RawAdd(t.t, Negated(acc.t), acc_, env);
      const Node cn = RawAdd(d.t, Negated(y.t), acc_, env);
      if (opt_.want_bound) {
        err = Up(err + leaf.e + acc_.u * (mag(y) + mag(d) + mag(cn)) + 3 * acc_.eta);
        m = Up(m + leaf.m);
      }
      comp = cn.t;
      acc.t = t.t;
      acc.bits = t.bits;
    }
    if (opt_.want_bound) {
      acc.m = m;
      acc.e = Up(err + MagUp(comp));
    } else {
      acc.m = acc.e = 0;
    }
    return acc;
  }

  // The operations of the chain walk (accumulation/chain_walk.h): Zero above, then Combine, Step,
  // Promote, RoundTerm and PadTerms.
  friend class accumulation_internal::ChainWalk<Evaluator>;

  Node Combine(const Node& x, const Node& y) {
    return Add2(x, y, combine_, m_.accumulator.combine_env);
  }

  // One adder step: acc with leaves [lo, hi) (one leaf for ieee/fma; a group for fused).
  Node Step(const Node& acc, int lo, int hi) {
    if (m_.adder.kind == AdderKind::kFused) return Fused(acc, lo, hi);
    if (m_.adder.env.denormals_are_zero && acc.t.kind == Unpacked::Kind::kFinite &&
        acc.t.exp + BitLen(acc.t.sig) - 1 < Emin(*acc_.full)) {
      // adder.daz: a subnormal accumulator operand reads as a zero of its sign; the value moves
      // by |acc|, which the bound carries as an error of this operand.
      Node z = acc;
      z.t.kind = Unpacked::Kind::kZero;
      if (opt_.want_bound) z.e = Up(acc.e + MagUp(acc.t));
      return Add2(z, leaves_[lo], acc_, m_.adder.env);
    }
    return Add2(acc, leaves_[lo], acc_, m_.adder.env);
  }

  // outer + inner rounded into chain.format (chain.kind = "promote"); with block scales
  // (epilogue.block_apply = "fma" or "mul_add") inner is block j's partial sum, scaled.
  Node Promote(const Node& outer, const Node& inner) {
    if (block_ != nullptr && m_.epilogue.block_apply != BlockApply::kProducts) {
      const size_t j = promote_index_++;
      return ScaledPromote(outer, inner, block_->a[j], block_->b[j]);
    }
    return Add2(outer, inner, promote_, m_.chain.promote_env);
  }

  // Block j's partial sum p (inner) into the float32 accumulator (evaluate.h EvaluateBlockScaledDot):
  // fma: fl(outer + S32 p), mul_add: fl(outer + fl(S32 p)), S32 = fl32(s_a s_b) (RNE), every
  // rounding into chain.format with chain.rounding. Bound, with S = s_a s_b exactly and x the
  // block's exact sum (|x| <= inner.m): S32 p - S x = S32 (p - x) + (S32 - S) x, so the scaled
  // child has M = |S| inner.m and E = |S32| inner.e + |S32 - S| inner.m; mul_add's product is a
  // rounding node on it (|S32 p| <= |S32| (inner.m + inner.e), and |S32| inner.e <= E), and the
  // add is the usual rounding node with outer.
  Node ScaledPromote(const Node& outer, const Node& inner, double sa, double sb) {
    const double s = sa * sb;  // Exact: two float32 values.
    const uint64_t s32_bits = Convert(Float64(), Float32(), std::bit_cast<uint64_t>(s), OpEnv{}).bits;
    const double s32 = static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(s32_bits)));
    const Term p = Product(Decode(Float32(), s32_bits, false), inner.t);
    const OpEnv& env = m_.chain.promote_env;
    Node scaled;
    if (m_.epilogue.block_apply == BlockApply::kMulAdd) {
      Term zero;  // fl(p + 0) with the zero of p's sign: fl(p), the sign of a zero product kept.
      zero.sign = p.sign;
      scaled = RawAdd(p, zero, promote_, env);
    } else {
      scaled.t = p;
    }
    if (opt_.want_bound) {
      const double s32a = std::fabs(s32);
      scaled.m = Up(std::fabs(s) * inner.m);
      const double e = Up(s32a * inner.e + std::fabs(s32 - s) * inner.m);  // s32 - s: exact.
      scaled.e = m_.epilogue.block_apply == BlockApply::kMulAdd
                     ? BoundStep(promote_.u, promote_.eta, e, Up(s32a * inner.m))
                     : e;
    }
    Node out = RawAdd(outer.t, scaled.t, promote_, env);
    if (opt_.want_bound) {
      out.m = Up(outer.m + scaled.m);
      out.e = BoundStep(promote_.u, promote_.eta, outer.e + scaled.e, out.m);
    }
    return out;
  }

  // epilogue.block_apply = "products": the leaf times 2^(log2 s_a + log2 s_b) of its block j,
  // exactly (the scales are powers of two, checked by EvaluateBlockScaledDot); M and E scale by
  // the same power of two (exact in double: |shift| <= 298).
  void ScaleLeaf(Node& n, int j) {
    const int shift = std::ilogb(block_->a[static_cast<size_t>(j)]) +
                      std::ilogb(block_->b[static_cast<size_t>(j)]);
    if (n.t.kind == Unpacked::Kind::kFinite) {
      n.t.exp += shift;
      n.t.nominal += shift;
    }
    if (opt_.want_bound) {
      n.m = std::ldexp(n.m, shift);
      n.e = std::ldexp(n.e, shift);
    }
  }

 public:
  // Per-block scales for the next Leaves and Run (EvaluateBlockScaledDot); null: none.
  void SetBlockScales(const BlockScales* scales) {
    block_ = scales;
    promote_index_ = 0;
  }

 private:

  Node RoundTerm(int i) { return RoundOne(leaves_[i]); }

  // The simd loop's zero-filled tail vector: leaves up to `total` are +0.
  void PadTerms(int64_t total) { leaves_.resize(static_cast<size_t>(total), Zero()); }

  // A leaf as an accumulator value (exact when representable; -0 kept).
  Node RoundOne(const Node& leaf) {
    Node out;
    using K = Unpacked::Kind;
    if (leaf.t.kind == K::kNaN || leaf.t.kind == K::kInf) {
      Special(acc_, m_.adder.env, leaf.t.kind == K::kNaN, leaf.t.sign, out);
    } else if (leaf.t.kind == K::kZero) {
      out.bits = ZeroBits(*acc_.full, leaf.t.sign);
      out.t = Decode(*acc_.full, out.bits, false);
    } else {
      Pack(acc_, m_.adder.env, leaf.t.sign, leaf.t.exp, leaf.t.sig, false, out);
    }
    if (opt_.want_bound) {
      out.m = leaf.m;
      out.e = BoundStep(acc_.u, acc_.eta, leaf.e, leaf.m);
    }
    return out;
  }

  // The fused group: acc plus leaves [lo, hi) (missing ones are zero padding).
  Node Fused(const Node& acc, int lo, int hi) {
    using K = Unpacked::Kind;
    const Model::Adder& ad = m_.adder;
    Node out;
    bool nan = false, pinf = false, ninf = false, all_neg_zero = true, any_nonzero = false;
    int32_t emax = std::numeric_limits<int32_t>::min();
    auto scan = [&](const Term& t) {
      switch (t.kind) {
        case K::kNaN: nan = true; break;
        case K::kInf: (t.sign ? ninf : pinf) = true; break;
        case K::kZero: all_neg_zero &= t.sign; break;
        case K::kFinite: {
          all_neg_zero = false;
          any_nonzero = true;
          const int32_t e = ad.alignment_exponent == AlignmentExponent::kNominal
                                ? t.nominal
                                : t.exp + BitLen(t.sig) - 1;
          emax = std::max(emax, e);
          break;
        }
      }
    };
    scan(acc.t);
    for (int i = lo; i < hi; ++i) scan(leaves_[i].t);
    if (hi - lo < group_) all_neg_zero = false;  // Padding zeros are +0.
    double sum_e = acc.e, m = acc.m;
    int nonzero = 0;
    bool overflowed = false;
    if (nan || (pinf && ninf)) {
      Special(acc_, ad.env, true, false, out);
    } else if (pinf || ninf) {
      Special(acc_, ad.env, false, ninf, out);
    } else if (!any_nonzero) {
      out.bits = ZeroBits(*acc_.full, all_neg_zero);
      out.t = Decode(*acc_.full, out.bits, false);
    } else {
      const int32_t q = emax - ad.fraction_bits;
      int128 total = 0;
      auto add = [&](const Term& t) {
        if (t.kind != K::kFinite) return;
        ++nonzero;
        uint128 mag;
        bool lost = false;
        const int64_t shift = int64_t{t.exp} - q;
        if (shift >= 0) {
          mag = t.sig << shift;  // < 2^(F+2): checked by the bound on terms.
        } else if (shift <= -128) {
          mag = 0;
          lost = true;
        } else {
          mag = t.sig >> -shift;
          lost = (t.sig & ((uint128{1} << -shift) - 1)) != 0;
        }
        if (lost && t.sign && ad.alignment == Alignment::kRoundDown) mag += 1;
        total += t.sign ? -static_cast<int128>(mag) : static_cast<int128>(mag);
      };
      add(acc.t);
      for (int i = lo; i < hi; ++i) add(leaves_[i].t);
      if (total == 0) {
        out.bits = ZeroBits(*acc_.full, false);
        out.t = Decode(*acc_.full, out.bits, false);
      } else {
        const bool neg = total < 0;
        const uint128 mag = neg ? static_cast<uint128>(-total) : static_cast<uint128>(total);
        const OpResult r = RoundPack(acc_.spec, neg, q, mag, false, ad.env);
        overflowed = (r.flags & kOverflow) != 0;
        // adder.overflow = "inf": an overflow gives +-Inf under any normalization rounding.
        out.bits = overflowed && ad.overflow == FusedOverflow::kInf
                       ? InfOrNanBits(*acc_.full, neg, ad.env)
                       : r.bits;
        out.t = Decode(*acc_.full, out.bits, false);
      }
      if (opt_.want_bound) {
        const double quantum = std::max(std::ldexp(1.0, q), std::numeric_limits<double>::denorm_min());
        const double t = nonzero * quantum;
        for (int i = lo; i < hi; ++i) {
          sum_e += leaves_[i].e;
          m += leaves_[i].m;
        }
        out.m = Up(m);
        out.e = BoundStep(acc_.u, acc_.eta, sum_e + t, out.m);
        // An overflowed group (Inf, or +-max finite under adder.overflow = "ieee" and rtz) can
        // be off by more than any relative bound: no finite bound holds past the range.
        if (overflowed) out.e = std::numeric_limits<double>::infinity();
        return out;
      }
    }
    if (opt_.want_bound) {
      for (int i = lo; i < hi; ++i) {
        sum_e += leaves_[i].e;
        m += leaves_[i].m;
      }
      out.m = Up(m);
      out.e = BoundStep(acc_.u, acc_.eta, sum_e, out.m);
    }
    return out;
  }

  const Model& m_;
  const EvalOptions& opt_;
  Rounder acc_;
  Rounder combine_;
  Rounder promote_{};
  const BlockScales* block_ = nullptr;  // EvaluateBlockScaledDot's scales, or none.
  size_t promote_index_ = 0;            // The next Promote's block (scaled promotes).
  int group_ = 1;
  std::vector<Node> leaves_;
};

// adder.kind = "integer" (evaluate.h): c + sum a_i b_i (or sum x_i) exactly in int64 (8-bit
// inputs: |a_i b_i| <= 2^16, K <= 2^30, so no int64 overflow), refused when it leaves the int32
// accumulator, then one conversion into the output format.
absl::StatusOr<EvalResult> IntegerEvaluate(const Model& model, std::span<const uint64_t> a,
                                           std::span<const uint64_t> b, bool is_sum,
                                           uint64_t c_bits, const EvalOptions& options) {
  const FormatSpec& fa = *model.inputs.a;
  const FormatSpec& fb = model.InputB();
  const FormatSpec& acc = *model.accumulator.format;
  int64_t s = IntegerValue(acc, c_bits);
  for (size_t i = 0; i < a.size(); ++i) {
    s += is_sum ? IntegerValue(fa, a[i]) : IntegerValue(fa, a[i]) * IntegerValue(fb, b[i]);
  }
  const int64_t lo = -(int64_t{1} << (acc.width - 1)), hi = (int64_t{1} << (acc.width - 1)) - 1;
  if (s < lo || s > hi) {
    return absl::OutOfRangeError(Cat(model.name, ": the exact sum ", s, " leaves the ", acc.name,
                                     " accumulator (wrap-around and saturation are not modelled)"));
  }
  const uint64_t acc_bits = static_cast<uint64_t>(s) & WidthMask(acc);
  const FormatSpec& of = model.OutputFormat();
  EvalResult out;
  if (&of == &acc) {
    out.bits = acc_bits;
    return out;
  }
  OpEnv env = model.output.env;
  if (env.rounding == Rounding::kStochastic) {
    env.sr_random = SplitMix64At(options.seed ^ 0x2545F4914F6CDD1Dull, 0);
  }
  const OpResult r = Convert(acc, of, acc_bits, env);
  out.bits = r.bits;
  if (options.want_bound) {
    const double y = ToDouble(of, out.bits);
    // One rounding of an integer s (0, or |s| >= 1: never subnormal) into `of`: y stays in s's
    // binade or moves to the next power of two, so |y - s| < ulp <= 2^-f |y| in every rounding
    // mode (f = of's fraction bits; half of it under rne/rna). Beyond of's largest finite value
    // (saturated, or Inf) that does not hold: there |y - s| itself, rounded up.
    const double sd = static_cast<double>(s);  // Exact: |s| < 2^31.
    out.bound = std::fabs(sd) <= ToDouble(of, MaxFiniteBits(of))
                    ? std::ldexp(std::fabs(y), -of.fraction_bits)
                    : std::fabs(y - sd) * (1 + 0x1p-52);
  }
  return out;
}

}  // namespace

absl::StatusOr<EvalResult> GenericEvaluateDot(const Model& model, std::span<const uint64_t> a,
                                              std::span<const uint64_t> b, uint64_t c_bits,
                                              const EvalOptions& options) {
  if (absl::Status st = CheckDotArgs(a.size(), b.size()); !st.ok()) return st;
  if (model.adder.kind == AdderKind::kInteger) return IntegerEvaluate(model, a, b, false, c_bits, options);
  Evaluator ev(model, options);
  ev.Leaves(a, b, false);
  return ev.Run(c_bits);
}

namespace {

// The model and the scale values of a block-scaled evaluation (EvaluateBlockScaledDot's errors).
absl::Status CheckBlockScaleModel(const Model& model) {
  if (model.epilogue.scale != EpilogueScale::kBlock) {
    return absl::InvalidArgumentError(
        Cat("model '", model.name, "' takes no per-block scales (epilogue.scale is not \"block\")"));
  }
  if (model.adder.kind == AdderKind::kInteger) {
    return absl::InvalidArgumentError(
        Cat("model '", model.name, "': per-block scales are not modelled for adder.kind = \"integer\""));
  }
  return absl::OkStatus();
}

absl::Status CheckBlockScaleValues(const Model& model, std::span<const double> v, const char* name) {
  const bool pow2 = model.epilogue.block_apply == BlockApply::kProducts;
  for (size_t j = 0; j < v.size(); ++j) {
    const double x = v[j];
    const bool f32 = std::isfinite(x) && static_cast<double>(static_cast<float>(x)) == x;
    int e = 0;
    const bool ok = pow2 ? f32 && x > 0 && std::frexp(x, &e) == 0.5 : f32;
    if (!ok) {
      return absl::InvalidArgumentError(
          Cat("block scale ", name, "[", j, "] = ", x, " is not ",
              pow2 ? "a positive power of two in float32's range (block_apply = \"products\": MX "
                     "E8M0 scales)"
                   : "a finite float32 value"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EvalResult> EvaluateBlockScaledDot(const Model& model, std::span<const uint64_t> a,
                                                  std::span<const uint64_t> b,
                                                  const BlockScales& scales, uint64_t c_bits,
                                                  const EvalOptions& options) {
  if (absl::Status st = CheckBlockScaleModel(model); !st.ok()) return st;
  if (absl::Status st = CheckDotArgs(a.size(), b.size()); !st.ok()) return st;
  const size_t block = static_cast<size_t>(model.epilogue.scale_block);
  const size_t blocks = (a.size() + block - 1) / block;
  if (scales.a.size() != blocks || scales.b.size() != blocks) {
    return absl::InvalidArgumentError(
        Cat("block scales: ", scales.a.size(), " for a and ", scales.b.size(), " for b, expected ",
            blocks, " each (K = ", a.size(), " in blocks of ", block, ")"));
  }
  if (absl::Status st = CheckBlockScaleValues(model, scales.a, "a"); !st.ok()) return st;
  if (absl::Status st = CheckBlockScaleValues(model, scales.b, "b"); !st.ok()) return st;
  Evaluator ev(model, options);
  ev.SetBlockScales(&scales);
  ev.Leaves(a, b, false);
  return ev.Run(c_bits);
}

absl::Status EvaluateBlockScaledMatmul(const Model& model, int m, int n, int k,
                                       std::span<const uint64_t> a, Layout a_layout,
                                       std::span<const uint64_t> b, Layout b_layout,
                                       std::span<const double> scale_a,
                                       std::span<const double> scale_b_t,
                                       std::span<const uint64_t> c, std::span<uint64_t> d,
                                       std::span<double> bounds, const EvalOptions& options) {
  if (absl::Status st = CheckBlockScaleModel(model); !st.ok()) return st;
  if (absl::Status st = CheckMatmulArgs(m, n, k, a.size(), b.size(), c.size(), d.size(), bounds.size());
      !st.ok()) {
    return st;
  }
  const int block = model.epilogue.scale_block;
  const int kb = (k + block - 1) / block;
  if (scale_a.size() != size_t(m) * kb || scale_b_t.size() != size_t(n) * kb) {
    return absl::InvalidArgumentError(
        Cat("block scales: ", scale_a.size(), " for A and ", scale_b_t.size(), " for B, expected ",
            size_t(m) * kb, " (", m, " x ", kb, ") and ", size_t(n) * kb, " (", n, " x ", kb,
            "): K = ", k, " in blocks of ", block));
  }
  if (absl::Status st = CheckBlockScaleValues(model, scale_a, "A"); !st.ok()) return st;
  if (absl::Status st = CheckBlockScaleValues(model, scale_b_t, "B"); !st.ok()) return st;
  const int threads = std::max(1, options.threads);
  auto a_at = [&](int i, int p) {
    return a_layout == Layout::kRowMajor ? a[size_t(i) * k + p] : a[size_t(p) * m + i];
  };
  auto b_at = [&](int p, int j) {
    return b_layout == Layout::kRowMajor ? b[size_t(p) * n + j] : b[size_t(j) * k + p];
  };
  // Runs body(w, e0, e1) over the m x n elements on `workers` threads, worker w owning the
  // per-worker state [w] (status, evs).
  const int64_t workers = RangeWorkers(int64_t{m} * n, threads);
  auto parallel = [&](const auto& body) { RunRanges(int64_t{m} * n, workers, body); };
  // The inner chain of a promote model as a model of its own: block j's partial sum p_j is the
  // sequential chain over the block from +0, in the accumulator format, which is what the fast
  // paths compute for this model, bits and bound E alike (fast_eval_test).
  Model inner = model;
  inner.chain = Model::Chain{};
  inner.chain.kind = ChainKind::kSequential;
  inner.epilogue = Model::Epilogue{};
  inner.output = Model::Output{};
  inner.output.format = model.accumulator.format;
  fast_internal::Plan plan;
  const bool fast = model.epilogue.block_apply != BlockApply::kProducts &&
                    model.chain.kind == ChainKind::kPromote && model.chain.permutation.empty() &&
                    *fast_internal::MakePlan(inner, plan) == '\0';
  std::vector<absl::Status> status(static_cast<size_t>(workers));
  if (!fast) {
    // One EvaluateBlockScaledDot per element.
    parallel([&](int64_t w, int64_t e0, int64_t e1) {
      absl::Status& st = status[static_cast<size_t>(w)];
      std::vector<uint64_t> row(static_cast<size_t>(k)), col(static_cast<size_t>(k));
      for (int64_t e = e0; e < e1 && st.ok(); ++e) {
        const int i = static_cast<int>(e / n), j = static_cast<int>(e % n);
        for (int p = 0; p < k; ++p) {
          row[size_t(p)] = a_at(i, p);
          col[size_t(p)] = b_at(p, j);
        }
        const BlockScales s{scale_a.subspan(size_t(i) * kb, size_t(kb)),
                            scale_b_t.subspan(size_t(j) * kb, size_t(kb))};
        absl::StatusOr<EvalResult> r =
            EvaluateBlockScaledDot(model, row, col, s, c.empty() ? 0 : c[size_t(e)], options);
        if (!r.ok()) {
          st = r.status();
          break;
        }
        d[size_t(e)] = r->bits;
        if (!bounds.empty()) bounds[size_t(e)] = r->bound;
      }
    });
    for (const absl::Status& st : status) {
      if (!st.ok()) return st;
    }
    return absl::OkStatus();
  }
  // Fast: per K block, the inner sums of every element by the fast matmul, M_j = sum |a b| over
  // the block (each product exact in binary64, summed with a rounding-up factor per add, so
  // M_j >= the exact sum: the bound's M may be any upper bound), then each element's outer step.
  const size_t elements = size_t(m) * n;
  const bool want_bound = options.want_bound && !bounds.empty();
  std::vector<Evaluator> evs;
  for (int64_t w = 0; w < workers; ++w) evs.emplace_back(model, options);
  std::vector<Node> outer(elements);
  for (size_t e = 0; e < elements; ++e) outer[e] = evs[0].Start(c.empty() ? 0 : c[e]);
  std::vector<uint64_t> ablk, bblk, inner_bits(elements);
  std::vector<double> inner_e(want_bound ? elements : 0), am, bm;
  EvalOptions inner_options = options;
  inner_options.want_bound = want_bound;
  const FormatSpec& fa = *model.inputs.a;
  const FormatSpec& fb = model.InputB();
  for (int j = 0; j < kb; ++j) {
    const int lo = j * block, len = std::min(k, lo + block) - lo;
    ablk.resize(size_t(m) * len);
    bblk.resize(size_t(n) * len);
    for (int i = 0; i < m; ++i) {
      for (int p = 0; p < len; ++p) ablk[size_t(i) * len + p] = a_at(i, lo + p);
    }
    for (int jj = 0; jj < n; ++jj) {
      for (int p = 0; p < len; ++p) bblk[size_t(jj) * len + p] = b_at(lo + p, jj);
    }
    if (absl::Status st = fast_internal::FastMatmul(inner, plan, m, n, len, ablk, Layout::kRowMajor, bblk,
                                                    Layout::kColumnMajor, {}, inner_bits,
                                                    want_bound ? std::span<double>(inner_e) : std::span<double>(),
                                                    inner_options, threads);
        !st.ok()) {
      return st;
    }
    if (want_bound) {
      am.resize(ablk.size());
      bm.resize(bblk.size());
      for (size_t t = 0; t < ablk.size(); ++t) am[t] = std::fabs(ToDouble(fa, ablk[t]));
      for (size_t t = 0; t < bblk.size(); ++t) bm[t] = std::fabs(ToDouble(fb, bblk[t]));
    }
    parallel([&](int64_t w, int64_t e0, int64_t e1) {
      Evaluator& ev = evs[static_cast<size_t>(w)];
      for (int64_t e = e0; e < e1; ++e) {
        const size_t i = size_t(e / n), jj = size_t(e % n);
        double mj = 0;
        if (want_bound) {
          // Four running sums (each add rounded up by Up, so each stays >= its exact sum), then
          // their sum the same way.
          const double* x = am.data() + i * len;
          const double* y = bm.data() + jj * len;
          double part[4] = {0, 0, 0, 0};
          for (int p = 0; p < len; ++p) {
            const double t = x[p] * y[p];  // Exact (<= 48 bits); Inf * 0 (an invalid product) -> Inf.
            part[p & 3] = Up(part[p & 3] + (t == t ? t : std::numeric_limits<double>::infinity()));
          }
          mj = Up(Up(part[0] + part[1]) + Up(part[2] + part[3]));
        }
        ev.PromoteScaledInner(outer[size_t(e)], inner_bits[size_t(e)], mj,
                              want_bound ? inner_e[size_t(e)] : 0, scale_a[i * kb + j],
                              scale_b_t[jj * kb + j]);
      }
    });
  }
  parallel([&](int64_t w, int64_t e0, int64_t e1) {
    Evaluator& ev = evs[static_cast<size_t>(w)];
    for (int64_t e = e0; e < e1; ++e) {
      const EvalResult r = ev.Finish(outer[size_t(e)], c.empty() ? 0 : c[size_t(e)]);
      d[size_t(e)] = r.bits;
      if (!bounds.empty()) bounds[size_t(e)] = want_bound ? r.bound : 0;
    }
  });
  return absl::OkStatus();
}

absl::StatusOr<EvalResult> GenericEvaluateSum(const Model& model, std::span<const uint64_t> x,
                                              uint64_t c_bits, const EvalOptions& options) {
  if (absl::Status st = CheckSumArgs(x.size()); !st.ok()) return st;
  if (model.adder.kind == AdderKind::kInteger) return IntegerEvaluate(model, x, {}, true, c_bits, options);
  Evaluator ev(model, options);
  ev.Leaves(x, {}, true);
  return ev.Run(c_bits);
}

absl::Status GenericEvaluateMatmul(const Model& model, int m, int n, int k,
                                   std::span<const uint64_t> a, Layout a_layout,
                                   std::span<const uint64_t> b, Layout b_layout,
                                   std::span<const uint64_t> c, std::span<uint64_t> d,
                                   std::span<double> bounds, const EvalOptions& options) {
  if (absl::Status st = CheckMatmulArgs(m, n, k, a.size(), b.size(), c.size(), d.size(),
                                        bounds.size());
      !st.ok()) {
    return st;
  }
  std::vector<uint64_t> row(k), col(k);
  EvalOptions opt = options;
  opt.want_bound = options.want_bound && !bounds.empty();
  for (int i = 0; i < m; ++i) {
    for (int p = 0; p < k; ++p) {
      row[p] = a_layout == Layout::kRowMajor ? a[size_t(i) * k + p] : a[size_t(p) * m + i];
    }
    for (int j = 0; j < n; ++j) {
      for (int p = 0; p < k; ++p) {
        col[p] = b_layout == Layout::kRowMajor ? b[size_t(p) * n + j] : b[size_t(j) * k + p];
      }
      absl::StatusOr<EvalResult> r =
          GenericEvaluateDot(model, row, col, c.empty() ? 0 : c[size_t(i) * n + j], opt);
      if (!r.ok()) return r.status();
      d[size_t(i) * n + j] = r->bits;
      if (!bounds.empty()) bounds[size_t(i) * n + j] = r->bound;
    }
  }
  return absl::OkStatus();
}

// The public entries: the fast paths (fast_eval.h) where the model is eligible, which are
// bit-identical to the generic engine (fast_eval_test) and hand the rare special inputs back to it
// (GenericEvaluate*, directly). The fast paths' plan (fast_plan.h) is built once per call: it
// decides the path and is what the fast path runs on. (It is not kept across calls: a Model is a
// plain value that callers copy and edit in place, so neither its address nor anything cheaper
// than MakePlan itself identifies an unchanged model.)
absl::StatusOr<EvalResult> EvaluateDot(const Model& model, std::span<const uint64_t> a,
                                       std::span<const uint64_t> b, uint64_t c_bits,
                                       const EvalOptions& options) {
  fast_internal::Plan plan;
  if (*fast_internal::MakePlan(model, plan) == '\0') {
    return fast_internal::FastDot(model, plan, a, b, c_bits, options);
  }
  return GenericEvaluateDot(model, a, b, c_bits, options);
}

absl::StatusOr<EvalResult> EvaluateSum(const Model& model, std::span<const uint64_t> x,
                                       uint64_t c_bits, const EvalOptions& options) {
  fast_internal::Plan plan;
  if (*fast_internal::MakePlan(model, plan) == '\0') {
    return fast_internal::FastSum(model, plan, x, c_bits, options);
  }
  return GenericEvaluateSum(model, x, c_bits, options);
}

absl::Status EvaluateMatmul(const Model& model, int m, int n, int k,
                            std::span<const uint64_t> a, Layout a_layout,
                            std::span<const uint64_t> b, Layout b_layout,
                            std::span<const uint64_t> c, std::span<uint64_t> d,
                            std::span<double> bounds, const EvalOptions& options) {
  fast_internal::Plan plan;
  if (*fast_internal::MakePlan(model, plan) == '\0') {
    return fast_internal::FastMatmul(model, plan, m, n, k, a, a_layout, b, b_layout, c, d,
                                     bounds, options, std::max(1, options.threads));
  }
  return GenericEvaluateMatmul(model, m, n, k, a, a_layout, b, b_layout, c, d, bounds, options);
}

}  // namespace fpconform
