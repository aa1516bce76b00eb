#include "accumulation/summation_tree.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "accumulation/chain_walk.h"
#include "accumulation/evaluate.h"
#include "formats/format_spec.h"
#include "formats/ops.h"

namespace fpconform {
namespace {

using Kind = SumTree::Kind;
using Role = SumTree::AddRole;

std::string FormatLabel(const FormatSpec& f, int fraction_bits) {
  std::string s(f.name);
  if (fraction_bits != f.fraction_bits) absl::StrAppend(&s, ".f", fraction_bits);
  return s;
}

// The tree of the chain walk (accumulation/chain_walk.h, shared with evaluate.cc's Evaluator):
// each operation adds the node that the evaluator computes at the same point of the walk.
class Builder {
 public:
  using Node = int;  // The chain walk's node: an id in tree_.

  Builder(const Model& model, int n, uint64_t seed) : m_(model), n_(n), seed_(seed) {
    tree_.n = n;
  }

  absl::StatusOr<SumTree> Build() {
    switch (m_.adder.kind) {
      case AdderKind::kIeee:
      case AdderKind::kFma:
      case AdderKind::kFused:
        break;
      default:
        return Unknown("adder.kind", static_cast<int>(m_.adder.kind));
    }
    // Settings the walk would treat as another one (chain_walk.h) are refused here.
    const Model::Chain& ch = m_.chain;
    switch (ch.kind) {
      case ChainKind::kSplitK:
        if (ch.combine != CombineOrder::kSequential && ch.combine != CombineOrder::kPairwise) {
          return Unknown("chain.combine", static_cast<int>(ch.combine));
        }
        break;
      case ChainKind::kSequential:
      case ChainKind::kPairwise:
      case ChainKind::kBlocked:
      case ChainKind::kPromote:
      case ChainKind::kCascade:
      case ChainKind::kTree:
        break;
      case ChainKind::kStrided:
        if (ch.combine != CombineOrder::kSequential && ch.combine != CombineOrder::kPairwise) {
          return Unknown("chain.combine", static_cast<int>(ch.combine));
        }
        break;
      case ChainKind::kSimd:
        switch (ch.reduce) {
          case CombineOrder::kSequential:
          case CombineOrder::kPairwise:
          case CombineOrder::kHalving:
            break;
          default:
            return Unknown("chain.reduce", static_cast<int>(ch.reduce));
        }
        break;
      default:
        return Unknown("chain.kind", static_cast<int>(ch.kind));
    }
    // chain.permutation: the terms padded with +0 to a multiple of its length, each block
    // reordered (as evaluate.cc's Leaves).
    const std::vector<int>& perm = m_.chain.permutation;
    if (perm.empty()) {
      for (int i = 0; i < n_; ++i) leaves_.push_back(Leaf(Kind::kTerm, i));
    } else {
      const int len = static_cast<int>(perm.size());
      for (int b = 0; b < n_; b += len) {
        for (int i = 0; i < len; ++i) {
          const int t = b + perm[size_t(i)];
          leaves_.push_back(t < n_ ? Leaf(Kind::kTerm, t) : Zero());
        }
      }
    }
    const int k = static_cast<int>(leaves_.size());
    const int c = Leaf(Kind::kInit, -1);
    // epilogue.c = "after": the chain starts from +0 and c is added after it (drawn as a
    // combine add, c first, as the other adds of c to a finished partial sum).
    const bool c_after = m_.AddsCAfterChain();
    int total = accumulation_internal::WalkChain(m_, k, seed_, c_after ? Zero() : c, *this);
    if (c_after) total = AddNode(c, total, Role::kCombine);
    const FormatSpec& final_format = m_.FinalAccumulatorFormat();
    if (m_.output.format != &final_format) {
      SumTree::Node cvt;
      cvt.kind = Kind::kConvert;
      cvt.format = std::string(m_.output.format->name);
      cvt.children = {total};
      total = tree_.Add(std::move(cvt));
    }
    tree_.root = total;
    return std::move(tree_);
  }

 private:
  // Unimplemented naming the parameter and its value as written in the model file.
  absl::Status Unknown(const std::string& key, int value) const {
    std::string written = absl::StrCat("#", value);
    for (const auto& [k, v] : m_.parameters) {
      if (k == key) written = v;
    }
    return absl::UnimplementedError(absl::StrCat("summation tree: model '", m_.name, "': ", key,
                                                 " = ", written,
                                                 " is not a summation tree this builder knows"));
  }

  int Leaf(Kind kind, int term) {
    SumTree::Node node;
    node.kind = kind;
    node.term = term;
    return tree_.Add(std::move(node));
  }

  // The operations of the chain walk (accumulation/chain_walk.h): Zero, Combine, Step, Promote,
  // RoundTerm and PadTerms.
  friend class accumulation_internal::ChainWalk<Builder>;

  int Zero() { return Leaf(Kind::kZero, -1); }

  int AddNode(int x, int y, Role role) {
    SumTree::Node node;
    node.kind = Kind::kAdd;
    node.role = role;
    node.children = {x, y};
    return tree_.Add(std::move(node));
  }

  int Combine(int x, int y) { return AddNode(x, y, Role::kCombine); }

  // One adder step: acc with terms [lo, hi) (one term for ieee/fma; a group for fused). Terms at
  // or past the (padded) term count are the simd loop's zero padding.
  int Step(int acc, int lo, int hi) {
    if (m_.adder.kind != AdderKind::kFused) return AddNode(acc, TermOrPad(lo), Role::kStep);
    SumTree::Node node;
    node.kind = Kind::kFused;
    node.group = m_.adder.group;
    for (int i = lo; i < hi; ++i) node.children.push_back(TermOrPad(i));
    node.children.push_back(acc);
    return tree_.Add(std::move(node));
  }

  int TermOrPad(int i) { return i < static_cast<int>(leaves_.size()) ? leaves_[i] : Zero(); }

  int Promote(int outer, int inner) { return AddNode(outer, inner, Role::kPromote); }

  // RoundOne: a pairwise unroll lane starts at p_i rounded into the accumulator.
  int RoundTerm(int i) {
    SumTree::Node cvt;
    cvt.kind = Kind::kConvert;
    cvt.format = FormatLabel(*m_.accumulator.format, m_.accumulator.fraction_bits);
    cvt.children = {leaves_[i]};
    return tree_.Add(std::move(cvt));
  }

  // Nothing to pad: Step reads terms at or past n as +0 (TermOrPad).
  void PadTerms(int64_t) {}

  const Model& m_;
  const int n_;
  const uint64_t seed_;
  SumTree tree_;
  std::vector<int> leaves_;
};

// Exponents e for which +-2^e is a finite non-zero value of f (normal only when `normal`).
struct ExpRange {
  int lo, hi;
};
ExpRange PowerRange(const FormatSpec& f, bool normal) {
  return {normal ? Emin(f) : MinSubnormalExponent(f), Emax(f)};
}
ExpRange Intersect(ExpRange a, ExpRange b) { return {std::max(a.lo, b.lo), std::min(a.hi, b.hi)}; }

uint64_t PowerBits(const FormatSpec& f, int e, bool negative) {
  const double v = std::ldexp(negative ? -1.0 : 1.0, e);
  return Convert(Float64(), f, std::bit_cast<uint64_t>(v), OpEnv{}).bits;
}

}  // namespace

absl::StatusOr<SumTree> BuildSummationTree(const Model& model, int n, uint64_t seed) {
  if (n < 0) return absl::InvalidArgumentError(absl::StrCat("summation tree: n = ", n, " < 0"));
  Builder builder(model, n, seed);
  return builder.Build();
}

absl::StatusOr<ModelProbe> MakeModelProbe(const Model& model, int n, uint64_t seed) {
  if (n < 0) return absl::InvalidArgumentError(absl::StrCat("probe: n = ", n, " < 0"));
  const bool dot = model.op_dot;
  const bool daz = model.inputs.daz;
  auto input_range = [&](const FormatSpec& f) {
    ExpRange r = PowerRange(f, daz);
    if (model.inputs.convert_to != nullptr) {
      r = Intersect(r, PowerRange(*model.inputs.convert_to, daz));
    }
    return r;
  };
  const ExpRange ra = input_range(*model.inputs.a);
  const ExpRange rb = dot ? input_range(*model.inputs.b) : ExpRange{0, 0};
  ExpRange product{ra.lo + rb.lo, ra.hi + rb.hi};

  // Formats the partial sums live in: M must fit in them, units must be normal in them.
  const FormatSpec& acc = *model.accumulator.format;
  const int p_acc = model.accumulator.fraction_bits + 1;
  const bool fused = model.adder.kind == AdderKind::kFused;
  const bool promote = model.chain.kind == ChainKind::kPromote;
  std::vector<const FormatSpec*> sums = {&acc, model.output.format};
  if (promote) sums.push_back(model.chain.promote_format);
  if (dot && model.product.policy == ProductPolicy::kRound) sums.push_back(model.product.format);
  ExpRange allowed = product;
  for (const FormatSpec* f : sums) allowed = Intersect(allowed, {Emin(*f), Emax(*f) - 1});

  const int k = n <= 1 ? 0 : std::bit_width(static_cast<unsigned>(n - 1));
  int need = p_acc + 1;
  int q = std::min(p_acc, Precision(*model.output.format));
  if (promote) {
    need = std::max(need, Precision(*model.chain.promote_format) + 1);
    q = std::min(q, Precision(*model.chain.promote_format));
  }
  if (fused) {
    need = std::max(need, model.adder.fraction_bits);
    q = std::min(q, model.adder.fraction_bits);
  }
  const int d = need + k;
  if (q < 62 && n > (int64_t{1} << q)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "probe: model '", model.name, "' cannot count ", n, " units exactly: its sums keep ", q,
        " significant bits (counts up to 2^", q, ")"));
  }
  if (allowed.hi - allowed.lo < d) {
    return absl::FailedPreconditionError(absl::StrCat(
        "probe: model '", model.name, "' at n = ", n, " needs M/u >= 2^", d,
        " (swamping in ", need, " bits plus ", k, " bits of count), but its ",
        dot ? "products" : "inputs", " span only 2^", allowed.lo, "..2^", allowed.hi));
  }
  int eu = std::max(allowed.lo, -d / 2);
  int em = eu + d;
  if (em > allowed.hi) {
    em = allowed.hi;
    eu = em - d;
  }
  // Split a product exponent e = ea + eb as evenly as the two ranges allow.
  auto split = [&](int e) {
    if (!dot) return std::pair<int, int>{e, 0};
    const int lo = std::max(ra.lo, e - rb.hi), hi = std::min(ra.hi, e - rb.lo);
    const int half = e >= 0 ? e / 2 : -((-e + 1) / 2);  // floor(e / 2).
    const int ea = std::clamp(half, lo, hi);
    return std::pair<int, int>{ea, e - ea};
  };
  const auto [am, bm] = split(em);
  const auto [au, bu] = split(eu);
  const FormatSpec& fa = *model.inputs.a;
  const FormatSpec& fb = dot ? *model.inputs.b : fa;
  const uint64_t a_big = PowerBits(fa, am, false), a_neg = PowerBits(fa, am, true);
  const uint64_t a_unit = PowerBits(fa, au, false);
  const uint64_t b_big = dot ? PowerBits(fb, bm, false) : 0;
  const uint64_t b_unit = dot ? PowerBits(fb, bu, false) : 0;

  ModelProbe probe;
  probe.options.big = std::ldexp(1.0, em);
  probe.options.unit = std::ldexp(1.0, eu);
  probe.how = dot ? absl::StrCat("dot, M = 2^", am, " * 2^", bm, ", u = 2^", au, " * 2^", bu)
                  : absl::StrCat("sum, M = 2^", am, ", u = 2^", au);
  absl::StrAppend(&probe.how, " (M/u = 2^", d, ")");
  const double big = probe.options.big, unit = probe.options.unit;
  const Model* mp = &model;
  probe.oracle = [=](std::span<const double> x) -> absl::StatusOr<double> {
    std::vector<uint64_t> a(x.size()), b(dot ? x.size() : 0);
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] == unit) {
        a[i] = a_unit;
        if (dot) b[i] = b_unit;
      } else if (x[i] == big || x[i] == -big) {
        a[i] = x[i] > 0 ? a_big : a_neg;
        if (dot) b[i] = b_big;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("probe oracle: term ", i, " = ", x[i], " is not u, M or -M"));
      }
    }
    EvalOptions opt;
    opt.seed = seed;
    opt.want_bound = false;
    absl::StatusOr<EvalResult> r =
        dot ? EvaluateDot(*mp, a, b, 0, opt) : EvaluateSum(*mp, a, 0, opt);
    if (!r.ok()) return r.status();
    const uint64_t bits = Convert(*mp->output.format, Float64(), r->bits, OpEnv{}).bits;
    return std::bit_cast<double>(bits);
  };
  return probe;
}

absl::StatusOr<SumTree> RevealModelTree(const Model& model, int n, uint64_t seed,
                                        FprevStats* stats) {
  absl::StatusOr<ModelProbe> probe = MakeModelProbe(model, n, seed);
  if (!probe.ok()) return probe.status();
  return RevealSumTree(probe->oracle, n, probe->options, stats);
}

}  // namespace fpconform
