#include "accumulation/dot_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "accumulation/bound_step.h"
#include "accumulation/chain_walk.h"
#include "accumulation/strings_internal.h"
#include "formats/format_spec.h"

namespace fpconform {
namespace {

using accumulation_internal::Cat;
using accumulation_internal::Eta;
using accumulation_internal::kUp;
using accumulation_internal::Up;
using accumulation_internal::UnitRoundoff;

// Every value of `small` is a value of `big` (so a conversion small -> big is exact).
bool Contains(const FormatSpec& big, const FormatSpec& small) {
  return big.fraction_bits >= small.fraction_bits && Emax(big) >= Emax(small) &&
         MinSubnormalExponent(big) <= MinSubnormalExponent(small);
}

// The bound of a node: E <= phi sum |x_i| + phi_c |c| + sigma sum s_i + beta max s + a over the
// leaves below (dot_bound.h); phi, phi_c < 0: no product / no c below.
struct BNode {
  double phi = -1, phi_c = -1, sigma = 0, beta = 0, a = 0;
  bool zero = true;  // A known +0 (no product, no c below).
  int depth = 0;
};

BNode Merge(const BNode& x, const BNode& y) {
  BNode r;
  r.phi = std::max(x.phi, y.phi);
  r.phi_c = std::max(x.phi_c, y.phi_c);
  r.sigma = std::max(x.sigma, y.sigma);
  r.beta = x.beta + y.beta;
  r.a = x.a + y.a;
  r.zero = x.zero && y.zero;
  r.depth = std::max(x.depth, y.depth);
  return r;
}

// A rounding node over the merged children: E = (1 + u) E_children + u M + eta.
BNode Rounded(BNode x, double u, double eta) {
  if (x.phi >= 0) x.phi = Up((1 + u) * x.phi + u);
  if (x.phi_c >= 0) x.phi_c = Up((1 + u) * x.phi_c + u);
  x.sigma = Up((1 + u) * x.sigma);
  x.beta = Up((1 + u) * x.beta);
  x.a = Up((1 + u) * x.a + eta);
  ++x.depth;
  return x;
}

struct Rnd {
  double u = 0, eta = 0;
};

Rnd MakeRounding(const FormatSpec& f, int fraction_bits, const OpEnv& env) {
  return {UnitRoundoff(fraction_bits, env), Eta(f, fraction_bits, env.flush_to_zero)};
}

class BoundWalk {
 public:
  using Node = BNode;

  BoundWalk(const Model& m, int n) : m_(m), n_(n) {
    acc_ = MakeRounding(*m.accumulator.format, m.accumulator.fraction_bits, m.adder.env);
    combine_ = MakeRounding(*m.accumulator.format, m.accumulator.fraction_bits,
                            m.accumulator.combine_env);
    if (m.chain.kind == ChainKind::kPromote) {
      promote_ = MakeRounding(*m.chain.promote_format, m.chain.promote_format->fraction_bits,
                              m.chain.promote_env);
    }
    acc_tiny_ = std::ldexp(1.0, Emin(*m.accumulator.format));
    // The product leaf (dot_bound.h, "A product leaf").
    const FormatSpec* conv = m.inputs.convert_to;
    const bool daz = m.inputs.daz;
    auto side = [&](const FormatSpec& in, double& u, double& tiny, bool& lossy) {
      const FormatSpec& used = conv != nullptr ? *conv : in;
      const bool inexact = conv != nullptr && !Contains(*conv, in);
      u = inexact ? UnitRoundoff(conv->fraction_bits, m.inputs.convert_env) : 0;
      tiny = std::ldexp(1.0, Emin(used));
      if (daz) tiny = std::max(tiny, std::ldexp(1.0, Emin(in)));
      lossy = inexact || daz;
    };
    double ua, ub;
    bool lossy_a, lossy_b;
    side(*m.inputs.a, ua, tiny_a_, lossy_a);
    side(m.InputB(), ub, tiny_b_, lossy_b);
    u_max_ = std::max(ua, ub);
    leaf_.zero = false;
    leaf_.phi = Up((1 + ua) * (1 + ub) - 1);
    if (lossy_a || lossy_b) {
      leaf_.sigma = Up(1 + u_max_);
      leaf_.a = Up(tiny_a_ * tiny_b_);
    }
    product_floor_ = tiny_a_ * tiny_b_;
    nominal_excess_ = m.adder.alignment_exponent == AlignmentExponent::kNominal &&
                      m.product.policy == ProductPolicy::kExact;
    if (m.product.policy == ProductPolicy::kRound) {
      const FormatSpec& pf = *m.product.format;
      const double up = UnitRoundoff(pf.fraction_bits, m.product.env);
      leaf_ = Rounded(leaf_, up, std::ldexp(1.0, MinSubnormalExponent(pf)));
      leaf_.depth = 0;
      product_floor_ = std::ldexp(1.0, Emin(pf));
    }
    if (m.adder.alignment_exponent == AlignmentExponent::kActual) product_floor_ = 0;
    // chain.permutation: positions holding a real product (the rest are +0 padding).
    const std::vector<int>& perm = m.chain.permutation;
    if (!perm.empty()) {
      const int len = static_cast<int>(perm.size());
      for (int b = 0; b < n; b += len) {
        for (int i = 0; i < len; ++i) real_.push_back(b + perm[size_t(i)] < n ? 1 : 0);
      }
    }
  }

  int Terms() const { return real_.empty() ? n_ : static_cast<int>(real_.size()); }
  BNode C() const {
    BNode c;
    c.phi_c = 0;
    c.zero = false;
    return c;
  }
  const Model& model() const { return m_; }
  double tiny_a() const { return tiny_a_; }
  double tiny_b() const { return tiny_b_; }

 private:
  friend class accumulation_internal::ChainWalk<BoundWalk>;

  bool Real(int i) const {
    if (i >= Terms()) return false;
    return real_.empty() || real_[size_t(i)] != 0;
  }

  BNode Zero() { return BNode{}; }

  BNode Combine(const BNode& x, const BNode& y) {
    return Rounded(Merge(x, y), combine_.u, combine_.eta);
  }

  BNode Promote(const BNode& outer, const BNode& inner) {
    return Rounded(Merge(outer, inner), promote_.u, promote_.eta);
  }

  BNode RoundTerm(int i) { return Rounded(Real(i) ? leaf_ : BNode{}, acc_.u, acc_.eta); }

  void PadTerms(int64_t) {}

  BNode Step(const BNode& acc, int lo, int hi) {
    if (m_.adder.kind != AdderKind::kFused) {
      BNode x = Merge(acc, Real(lo) ? leaf_ : BNode{});
      // adder.daz: a subnormal accumulator read as zero moves by less than 2^Emin.
      if (m_.adder.env.denormals_are_zero) x.a = Up(x.a + acc_tiny_);
      return Rounded(x, acc_.u, acc_.eta);
    }
    BNode x = acc;
    int products = 0;
    for (int i = lo; i < hi; ++i) {
      if (!Real(i)) continue;
      x = Merge(x, leaf_);
      ++products;
    }
    const int g = products + (acc.zero ? 0 : 1);
    const double t = std::ldexp(static_cast<double>(g), -m_.adder.fraction_bits);  // g 2^-F.
    const double u = acc_.u;
    const double k1 = Up((1 + u) * (1 + t));
    const double tq = Up((1 + u) * t);
    double floor = 0;
    if (m_.adder.alignment_exponent == AlignmentExponent::kNominal && !acc.zero) floor = acc_tiny_;
    if (products > 0) floor = std::max(floor, product_floor_);
    if (x.phi >= 0) x.phi = Up(k1 * x.phi + tq + u);
    if (x.phi_c >= 0) x.phi_c = Up(k1 * x.phi_c + tq + u);
    x.sigma = Up(k1 * x.sigma);
    x.beta = Up(k1 * x.beta + (products > 0 && nominal_excess_ ? tq * (1 + u_max_) : 0.0));
    x.a = Up(k1 * x.a + tq * floor + acc_.eta +
             g * std::numeric_limits<double>::denorm_min());
    ++x.depth;
    return x;
  }

  const Model& m_;
  const int n_;
  Rnd acc_, combine_, promote_;
  double acc_tiny_ = 0, tiny_a_ = 0, tiny_b_ = 0, u_max_ = 0, product_floor_ = 0;
  bool nominal_excess_ = false;
  BNode leaf_;
  std::vector<uint8_t> real_;
};

}  // namespace

absl::StatusOr<DotBound> ComputeDotBound(const Model& m, int64_t n) {
  if (n < 0 || n > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(Cat("dot bound: length ", n, " outside 0..2^30"));
  }
  auto refuse = [&](const std::string& why) {
    return absl::FailedPreconditionError(
        Cat("dot bound: model '", m.name, "': ", why, ": no a priori constant is proven for it"));
  };
  if (m.adder.kind == AdderKind::kKahan) {
    return refuse("adder.kind = \"kahan\" (a compensated sum is not a tree of roundings)");
  }
  const Model::Chain& ch = m.chain;
  if (ch.kind == ChainKind::kSplitK && ch.order == SplitOrder::kRandom) {
    return refuse("chain.order = \"random\" (the tree depends on the seed)");
  }
  if ((ch.kind == ChainKind::kSplitK || ch.kind == ChainKind::kStrided) &&
      ch.combine != CombineOrder::kSequential && ch.combine != CombineOrder::kPairwise) {
    return refuse("chain.combine is neither sequential nor pairwise");
  }
  if (ch.kind == ChainKind::kSimd && ch.reduce != CombineOrder::kSequential &&
      ch.reduce != CombineOrder::kPairwise && ch.reduce != CombineOrder::kHalving) {
    return refuse("chain.reduce is not one of sequential, pairwise, halving");
  }
  if (m.inputs.a == nullptr || m.accumulator.format == nullptr) {
    return absl::InvalidArgumentError("dot bound: model without inputs.a or accumulator.format");
  }
  BoundWalk ops(m, static_cast<int>(n));
  const FormatSpec& final_format = m.FinalAccumulatorFormat();
  const bool c_after = m.AddsCAfterChain();
  BNode total = accumulation_internal::WalkChain(m, ops.Terms(), /*seed=*/0,
                                                  c_after ? BNode{} : ops.C(), ops);
  if (c_after) {
    const Rnd r = MakeRounding(final_format, final_format.fraction_bits, m.epilogue.env);
    total = Rounded(Merge(total, ops.C()), r.u, r.eta);
  }
  const FormatSpec& of = m.OutputFormat();
  if (&of != &final_format) {
    total = Rounded(total, UnitRoundoff(of.fraction_bits, m.output.env),
                    std::ldexp(1.0, MinSubnormalExponent(of)));
  }
  // The binary64 bookkeeping of the evaluator (one Up per node on M) and of this walk.
  const double inflate = std::pow(kUp, 2 * total.depth + 4);
  DotBound b;
  b.rel = std::max(0.0, total.phi) * inflate;
  b.rel_c = std::max(0.0, total.phi_c) * inflate;
  b.abs = total.a * inflate;
  b.sub_sum = total.sigma * inflate;
  b.sub_max = total.beta * inflate;
  b.tiny_a = ops.tiny_a();
  b.tiny_b = ops.tiny_b();
  b.depth = total.depth;
  return b;
}

double DotBoundValue(const DotBound& b, double sum_ab, double c_abs, double s_sum, double s_max) {
  return Up(Up(b.rel * sum_ab + b.rel_c * c_abs + b.abs) + Up(b.sub_sum * s_sum + b.sub_max * s_max));
}

}  // namespace fpconform
