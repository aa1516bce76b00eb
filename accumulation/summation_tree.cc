#include "accumulation/summation_tree.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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

// Mirrors accumulation/evaluate.cc's Evaluator: each method returns the node that the
// evaluator's method of the same name computes.
class Builder {
 public:
  Builder(const Model& model, int n, uint64_t seed) : m_(model), n_(n), seed_(seed) {
    group_ = model.adder.kind == AdderKind::kFused ? model.adder.group : 1;
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
    for (int i = 0; i < n_; ++i) leaves_.push_back(Leaf(Kind::kTerm, i));
    const int c = Leaf(Kind::kInit, -1);
    const int k = n_;
    const Model::Chain& ch = m_.chain;
    int total = -1;
    switch (ch.kind) {
      case ChainKind::kSequential:
        total = Sequential(c, 0, k);
        break;
      case ChainKind::kPairwise:
        if (ch.chunk == 0) {
          total = Combine(c, Pairwise(0, k));
        } else {
          total = c;
          int i = 0;
          do {
            total = Combine(total, Pairwise(i, std::min(k, i + ch.chunk)));
            i += ch.chunk;
          } while (i < k);
        }
        break;
      case ChainKind::kBlocked:
        total = c;
        for (int i = 0; i < k; i += ch.block) {
          total = Combine(total, Sequential(Zero(), i, std::min(k, i + ch.block)));
        }
        break;
      case ChainKind::kStrided: {
        std::vector<int> accs(ch.ways);
        for (int& a : accs) a = Zero();
        accs[0] = c;
        int unit = 0;
        for (int i = 0; i < k; i += group_, ++unit) {
          int& acc = accs[unit % ch.ways];
          acc = Step(acc, i, std::min(k, i + group_));
        }
        if (ch.combine == CombineOrder::kSequential) {
          total = accs[0];
          for (int j = 1; j < ch.ways; ++j) total = Combine(total, accs[j]);
        } else if (ch.combine == CombineOrder::kPairwise) {
          total = Tree(accs, 0, ch.ways);
        } else {
          return Unknown("chain.combine", static_cast<int>(ch.combine));
        }
        break;
      }
      case ChainKind::kSplitK: {
        int slice = (k + ch.slices - 1) / ch.slices;
        slice = (slice + group_ - 1) / group_ * group_;
        std::vector<int> parts;
        for (int s = 0; s < ch.slices; ++s) {
          const int lo = std::min(k, s * slice), hi = std::min(k, (s + 1) * slice);
          parts.push_back(Sequential(Zero(), lo, hi));
        }
        std::vector<int> order(ch.slices);
        for (int s = 0; s < ch.slices; ++s) order[s] = s;
        if (ch.order == SplitOrder::kRandom) {
          // The same Fisher-Yates shuffle and SplitMix64 stream as evaluate.cc.
          uint64_t state = seed_ ^ 0x5851F42D4C957F2Dull;
          for (int s = ch.slices - 1; s > 0; --s) {
            const uint64_t r = SplitMix(state);
            std::swap(order[s], order[static_cast<int>(r % static_cast<uint64_t>(s + 1))]);
          }
        }
        total = c;
        for (int s : order) total = Combine(total, parts[s]);
        break;
      }
      case ChainKind::kPromote:
        total = c;
        for (int i = 0; i < k; i += ch.every) {
          const int inner = Sequential(Zero(), i, std::min(k, i + ch.every));
          total = AddNode(total, inner, Role::kPromote);
        }
        break;
      case ChainKind::kSimd: {
        absl::StatusOr<int> t = Simd(c);
        if (!t.ok()) return t.status();
        total = *t;
        break;
      }
      case ChainKind::kCascade:
        total = Cascade(c);
        break;
      default:
        return Unknown("chain.kind", static_cast<int>(ch.kind));
    }
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

  static uint64_t SplitMix(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  int Leaf(Kind kind, int term) {
    SumTree::Node node;
    node.kind = kind;
    node.term = term;
    return tree_.Add(std::move(node));
  }

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
  // or past n are the simd loop's zero padding.
  int Step(int acc, int lo, int hi) {
    if (m_.adder.kind != AdderKind::kFused) return AddNode(acc, TermOrPad(lo), Role::kStep);
    SumTree::Node node;
    node.kind = Kind::kFused;
    node.group = m_.adder.group;
    for (int i = lo; i < hi; ++i) node.children.push_back(TermOrPad(i));
    node.children.push_back(acc);
    return tree_.Add(std::move(node));
  }

  int TermOrPad(int i) { return i < n_ ? leaves_[i] : Zero(); }

  int Sequential(int acc, int lo, int hi) {
    for (int i = lo; i < hi; i += group_) acc = Step(acc, i, std::min(hi, i + group_));
    return acc;
  }

  // Balanced tree: the first half takes ceil(n/2).
  int Tree(const std::vector<int>& v, int lo, int hi) {
    if (hi - lo == 1) return v[lo];
    const int mid = lo + (hi - lo + 1) / 2;
    return Combine(Tree(v, lo, mid), Tree(v, mid, hi));
  }

  int Pairwise(int lo, int hi) {
    const Model::Chain& ch = m_.chain;
    const int n = hi - lo;
    if (n == 0) return Zero();
    if (n > ch.leaf) {
      int mid = n / 2;
      mid -= mid % ch.split_multiple;
      if (mid > 0 && mid < n) return Combine(Pairwise(lo, lo + mid), Pairwise(lo + mid, hi));
    }
    if (ch.unroll == 1 || n < ch.unroll) return Sequential(Zero(), lo, hi);
    std::vector<int> r(ch.unroll);
    for (int j = 0; j < ch.unroll; ++j) {
      SumTree::Node cvt;  // RoundOne: the lane starts at p_j rounded into the accumulator.
      cvt.kind = Kind::kConvert;
      cvt.format = FormatLabel(*m_.accumulator.format, m_.accumulator.fraction_bits);
      cvt.children = {leaves_[lo + j]};
      r[j] = tree_.Add(std::move(cvt));
    }
    int i = ch.unroll;
    for (; i + ch.unroll <= n; i += ch.unroll) {
      for (int j = 0; j < ch.unroll; ++j) r[j] = Step(r[j], lo + i + j, lo + i + j + 1);
    }
    int acc = Tree(r, 0, ch.unroll);
    for (; i < n; ++i) acc = Step(acc, lo + i, lo + i + 1);
    return acc;
  }

  absl::StatusOr<int> Simd(int c) {
    const Model::Chain& ch = m_.chain;
    const int w = ch.lanes, u = ch.unit;
    const int64_t per_step = int64_t{w} * u;
    const int64_t steps = (n_ + per_step - 1) / per_step;
    std::vector<int> lanes(w);
    for (int& l : lanes) l = Zero();
    lanes[0] = c;
    for (int64_t s = 0; s < steps; ++s) {
      for (int l = 0; l < w; ++l) {
        const int64_t base = s * per_step + int64_t{l} * u;
        for (int j = 0; j < u; ++j) {
          const int64_t i = ch.unit_order == UnitOrder::kForward ? base + j : base + (u - 1 - j);
          lanes[l] = Step(lanes[l], static_cast<int>(i), static_cast<int>(i) + 1);
        }
      }
    }
    switch (ch.reduce) {
      case CombineOrder::kSequential: {
        int total = lanes[0];
        for (int l = 1; l < w; ++l) total = Combine(total, lanes[l]);
        return total;
      }
      case CombineOrder::kPairwise:
        return Tree(lanes, 0, w);
      case CombineOrder::kHalving:
        for (int h = w / 2; h >= 1; h /= 2) {
          for (int l = 0; l < h; ++l) lanes[l] = Combine(lanes[l], lanes[l + h]);
        }
        return lanes[0];
      default:
        return Unknown("chain.reduce", static_cast<int>(ch.reduce));
    }
  }

  // PyTorch's cascade sum (chain.kind = "cascade"): as evaluate.cc's CascadeLane / Cascade,
  // ATen's row_sum with ilp_factor 4 over multi_row_sum with 4 levels, for lane `lane` of
  // `vectors` vectors of w terms (term of vector v: v*w + lane).
  int CascadeLane(int64_t vectors, int w, int lane) {
    auto leaf = [&](int64_t v) { return static_cast<int>(v * w + lane); };
    constexpr int kRows = 4, kLevels = 4;
    const int64_t s = vectors / kRows;
    const int64_t ceil_log2 = s <= 2 ? 1 : std::bit_width(static_cast<uint64_t>(s - 1));
    const int64_t level_power = std::max<int64_t>(4, ceil_log2 / kLevels);
    const int64_t level_step = int64_t{1} << level_power;
    const int64_t level_mask = level_step - 1;
    int acc[kLevels][kRows];
    for (auto& lv : acc) {
      for (int& a : lv) a = Zero();
    }
    int64_t i = 0;
    while (i + level_step <= s) {
      for (int64_t j = 0; j < level_step; ++j, ++i) {
        for (int r = 0; r < kRows; ++r) {
          const int li = leaf(i * kRows + r);
          acc[0][r] = Step(acc[0][r], li, li + 1);
        }
      }
      for (int j = 1; j < kLevels; ++j) {
        for (int r = 0; r < kRows; ++r) {
          acc[j][r] = Combine(acc[j][r], acc[j - 1][r]);
          acc[j - 1][r] = Zero();
        }
        if ((i & (level_mask << (j * level_power))) != 0) break;
      }
    }
    for (; i < s; ++i) {
      for (int r = 0; r < kRows; ++r) {
        const int li = leaf(i * kRows + r);
        acc[0][r] = Step(acc[0][r], li, li + 1);
      }
    }
    for (int j = 1; j < kLevels; ++j) {
      for (int r = 0; r < kRows; ++r) acc[0][r] = Combine(acc[0][r], acc[j][r]);
    }
    int p0 = acc[0][0];
    for (int64_t v = s * kRows; v < vectors; ++v) p0 = Step(p0, leaf(v), leaf(v) + 1);
    for (int r = 1; r < kRows; ++r) p0 = Combine(p0, acc[0][r]);
    return p0;
  }

  int Cascade(int c) {
    const int w = m_.chain.lanes;
    const int64_t k = n_;
    if (k < w) return Combine(c, CascadeLane(k, 1, 0));  // Scalar row_sum.
    const int64_t vectors = k / w;
    int fin = Zero();
    for (int64_t i = vectors * w; i < k; ++i) {
      fin = Step(fin, static_cast<int>(i), static_cast<int>(i) + 1);
    }
    for (int l = 0; l < w; ++l) fin = Combine(fin, CascadeLane(vectors, w, l));
    return Combine(c, fin);
  }

  const Model& m_;
  const int n_;
  const uint64_t seed_;
  int group_ = 1;
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
