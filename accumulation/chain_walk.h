// Internal to accumulation/: the order in which a model's chain (MODEL_FORMAT.md, [chain])
// visits the n terms and combines partial sums, written once for its two users:
//   accumulation/evaluate.cc       Evaluator: a node is a computed value with its bound data
//   accumulation/summation_tree.cc Builder: a node is the id of a SumTree node
//   accumulation/fast_scalar.h     ScalarDot (host values), and fast_tiles_avx2_walk.cc's WalkTile
//                                  (a block of matmul elements per node), for the chains the
//                                  fast kernels lack
//
// WalkChain(model, n, seed, c, ops) returns the final accumulator node (before the output
// conversion, which stays with each user) of the chain over terms 0..n-1 started from c. Every
// arithmetic node comes from `ops`, called in a fixed order (a tree builder numbers its nodes by
// it), which must supply:
//   Node                        the node type (copyable; default-constructible)
//   Node Zero()                 a partial sum that starts at +0
//   Node Step(acc, lo, hi)      one adder step: acc with terms [lo, hi) (one term for ieee/fma/
//                               kahan, a group of up to adder.group terms for fused); the simd
//                               loop passes indices at or past n: +0 padding. A tree leaf is
//                               Step(Zero(), lo, hi) (chain.kind = "tree")
//   Node Combine(x, y)          a combine add (accumulator.rounding)
//   Node Promote(outer, inner)  outer + inner rounded into chain.format (chain.kind = promote)
//   Node RoundTerm(i)           term i rounded into the accumulator (a pairwise unroll lane start)
//   void PadTerms(total)        the simd loop is about to step over terms [n, total) (+0 padding)
// and may supply
//   void StepInPlace(acc, lo, hi)  as acc = Step(acc, lo, hi), without the copy (used instead of
//                               Step wherever the walk overwrites acc with its own step)
// Terms are visited in units of adder.group (fused) or 1. Random split-K order: the
// Fisher-Yates shuffle of the slices driven by SplitMix64 from seed ^ 0x5851F42D4C957F2D (the
// same draws as EvalOptions::seed documents). Chain settings a user does not support (e.g. the
// tree builder's strided combine = "halving") must be refused by that user before the walk: the
// walk treats a strided combine other than sequential as pairwise, and a simd reduce other than
// the three listed in MODEL_FORMAT.md returns lane 0 alone.
//
// The operations may be private members of Ops when Ops declares
// `friend class accumulation_internal::ChainWalk<Ops>;`.
//
// Example (a tree of node ids, as summation_tree.cc's Builder):
//   struct Ops { using Node = int; int Zero(); int Step(int acc, int lo, int hi); ... };
//   Ops ops;
//   int root = accumulation_internal::WalkChain(model, 40, /*seed=*/0, c_id, ops);
#ifndef FPCONFORM_ACCUMULATION_CHAIN_WALK_H_
#define FPCONFORM_ACCUMULATION_CHAIN_WALK_H_

#include <algorithm>
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

#include "accumulation/model.h"
#include "cases/pinned_random.h"

namespace fpconform::accumulation_internal {

template <class Ops>
class ChainWalk {
 public:
  using Node = typename Ops::Node;

  ChainWalk(const Model& model, int n, uint64_t seed, Ops& ops)
      : m_(model), n_(n), seed_(seed), ops_(ops),
        group_(model.adder.kind == AdderKind::kFused ? model.adder.group : 1) {}

  Node Run(const Node& c) {
    const int k = n_;
    const Model::Chain& ch = m_.chain;
    Node total{};
    switch (ch.kind) {
      case ChainKind::kSequential:
        total = Sequential(c, 0, k);
        break;
      case ChainKind::kPairwise:
        if (ch.chunk == 0) {
          total = ops_.Combine(c, Pairwise(0, k));
        } else {
          // (((c + P(chunk_0)) + P(chunk_1)) + ...); at least one (possibly empty) chunk.
          total = c;
          int i = 0;
          do {
            total = ops_.Combine(total, Pairwise(i, std::min(k, i + ch.chunk)));
            i += ch.chunk;
          } while (i < k);
        }
        break;
      case ChainKind::kSimd:
        total = Simd(c);
        break;
      case ChainKind::kCascade:
        total = Cascade(c);
        break;
      case ChainKind::kBlocked:
        total = c;
        for (int i = 0; i < k;) {
          const int end = BlockedBlockEnd(ch, i, k);
          total = ops_.Combine(total, Sequential(ops_.Zero(), i, end));
          i = end;
        }
        break;
      case ChainKind::kStrided: {
        std::vector<Node> accs(ch.ways);
        for (Node& a : accs) a = ops_.Zero();
        accs[0] = c;
        int unit = 0;
        for (int i = 0; i < k; i += group_, ++unit) {
          StepAcc(accs[unit % ch.ways], i, std::min(k, i + group_));
        }
        if (ch.combine == CombineOrder::kSequential) {
          total = accs[0];
          for (int j = 1; j < ch.ways; ++j) total = ops_.Combine(total, accs[j]);
        } else {
          total = Tree(accs, 0, ch.ways);
        }
        break;
      }
      case ChainKind::kSplitK: {
        // ceil(K / slices), rounded up to chain.slice_multiple, then to the group.
        const int mult = std::max(1, ch.slice_multiple);
        int slice = (k + ch.slices - 1) / ch.slices;
        slice = (slice + mult - 1) / mult * mult;
        slice = (slice + group_ - 1) / group_ * group_;
        std::vector<Node> parts;
        for (int s = 0; s < ch.slices; ++s) {
          const int lo = std::min(k, s * slice), hi = std::min(k, (s + 1) * slice);
          parts.push_back(Sequential(ops_.Zero(), lo, hi));
        }
        std::vector<int> order(ch.slices);
        for (int s = 0; s < ch.slices; ++s) order[s] = s;
        if (ch.order == SplitOrder::kRandom) {
          PinnedRng rng(seed_ ^ 0x5851F42D4C957F2Dull);
          for (int s = ch.slices - 1; s > 0; --s) {
            const uint64_t r = rng.Next();
            std::swap(order[s], order[static_cast<int>(r % static_cast<uint64_t>(s + 1))]);
          }
        }
        if (ch.order == SplitOrder::kReverse) std::reverse(order.begin(), order.end());
        if (ch.combine == CombineOrder::kPairwise) {
          std::vector<Node> ordered;
          for (int s : order) ordered.push_back(parts[s]);
          total = ops_.Combine(c, Tree(ordered, 0, ch.slices));
        } else {
          total = c;
          for (int s : order) total = ops_.Combine(total, parts[s]);
        }
        break;
      }
      case ChainKind::kTree: {
        // Blocks of m units, each reduced by the explicit tree, added to c in order.
        const int64_t block = int64_t{ch.tree_units} * group_;
        total = c;
        for (int64_t lo = 0; lo < k; lo += block) {
          Node r{};
          TreeNodeValue(ch.tree_root, lo, r);  // Present: unit 0 of the block starts below k.
          total = ops_.Combine(total, r);
        }
        break;
      }
      case ChainKind::kPromote:
        total = c;
        for (int i = 0; i < k; i += ch.every) {
          const Node inner = Sequential(ops_.Zero(), i, std::min(k, i + ch.every));
          total = ops_.Promote(total, inner);
        }
        break;
    }
    return total;
  }

 private:
  // acc = Step(acc, lo, hi), in place where Ops can.
  void StepAcc(Node& acc, int lo, int hi) {
    if constexpr (requires { ops_.StepInPlace(acc, lo, hi); }) {
      ops_.StepInPlace(acc, lo, hi);
    } else {
      acc = ops_.Step(acc, lo, hi);
    }
  }

  Node Sequential(Node acc, int lo, int hi) {
    for (int i = lo; i < hi; i += group_) StepAcc(acc, i, std::min(hi, i + group_));
    return acc;
  }

  // chain.kind = "tree": the value of shape node `id` for the block whose unit 0 is term `lo`;
  // false (and `out` untouched) when the node is absent (every unit below it starts at or past
  // n: the pruned partial last block, MODEL_FORMAT.md). A leaf is one adder step from +0; a
  // list folds its present children left to right with combine adds (one present child passes
  // through). Recursion depth < 4096 (model.cc: <= 4096 leaves, every list >= 2 children).
  bool TreeNodeValue(int id, int64_t lo, Node& out) {
    const Model::Chain::TreeNode& t = m_.chain.tree[static_cast<size_t>(id)];
    if (t.unit >= 0) {
      const int64_t first = lo + int64_t{t.unit} * group_;
      if (first >= n_) return false;
      const int hi = static_cast<int>(std::min<int64_t>(n_, first + group_));
      out = ops_.Step(ops_.Zero(), static_cast<int>(first), hi);
      return true;
    }
    bool any = false;
    for (int child : t.children) {
      Node v{};
      if (!TreeNodeValue(child, lo, v)) continue;
      out = any ? ops_.Combine(out, v) : v;
      any = true;
    }
    return any;
  }

  // Balanced tree: the first half takes ceil(n/2).
  Node Tree(const std::vector<Node>& v, int lo, int hi) {
    if (hi - lo == 1) return v[lo];
    const int mid = lo + (hi - lo + 1) / 2;
    return ops_.Combine(Tree(v, lo, mid), Tree(v, mid, hi));
  }

  Node Pairwise(int lo, int hi) {
    const Model::Chain& ch = m_.chain;
    const int n = hi - lo;
    if (n == 0) return ops_.Zero();
    if (n > ch.leaf) {
      int mid = n / 2;
      mid -= mid % ch.split_multiple;
      if (mid > 0 && mid < n) {
        return ops_.Combine(Pairwise(lo, lo + mid), Pairwise(lo + mid, hi));
      }
    }
    if (ch.unroll == 1 || n < ch.unroll) return Sequential(ops_.Zero(), lo, hi);
    std::vector<Node> r(ch.unroll);
    for (int j = 0; j < ch.unroll; ++j) r[j] = ops_.RoundTerm(lo + j);
    int i = ch.unroll;
    for (; i + ch.unroll <= n; i += ch.unroll) {
      for (int j = 0; j < ch.unroll; ++j) StepAcc(r[j], lo + i + j, lo + i + j + 1);
    }
    Node acc = Tree(r, 0, ch.unroll);
    for (; i < n; ++i) StepAcc(acc, lo + i, lo + i + 1);
    return acc;
  }

  // The SIMD loop (chain.kind = "simd"): `lanes` lane accumulators (lane 0 starts from c, the
  // others from +0); vector step s hands lane l the unit s*lanes + l (units of `unit`
  // consecutive terms, added in index order or reversed); the terms are padded with +0 to whole
  // vector steps (a zero-filled tail vector); then the lanes are reduced.
  Node Simd(const Node& c) {
    const Model::Chain& ch = m_.chain;
    const int w = ch.lanes, u = ch.unit;
    const int64_t per_step = int64_t{w} * u;
    const int64_t steps = (n_ + per_step - 1) / per_step;
    ops_.PadTerms(steps * per_step);
    std::vector<Node> lanes(w);
    for (Node& l : lanes) l = ops_.Zero();
    lanes[0] = c;
    for (int64_t s = 0; s < steps; ++s) {
      for (int l = 0; l < w; ++l) {
        const int64_t base = s * per_step + int64_t{l} * u;
        for (int j = 0; j < u; ++j) {
          const int64_t i = ch.unit_order == UnitOrder::kForward ? base + j : base + (u - 1 - j);
          StepAcc(lanes[l], static_cast<int>(i), static_cast<int>(i) + 1);
        }
      }
    }
    switch (ch.reduce) {
      case CombineOrder::kSequential: {
        Node total = lanes[0];
        for (int l = 1; l < w; ++l) total = ops_.Combine(total, lanes[l]);
        return total;
      }
      case CombineOrder::kPairwise:
        return Tree(lanes, 0, w);
      case CombineOrder::kHalving:
        for (int h = w / 2; h >= 1; h /= 2) {
          for (int l = 0; l < h; ++l) lanes[l] = ops_.Combine(lanes[l], lanes[l + h]);
        }
        return lanes[0];
    }
    return lanes[0];
  }

  // PyTorch's cascade sum (chain.kind = "cascade", MODEL_FORMAT.md): lane `lane` of a row of
  // `vectors` vectors of `w` terms (term of vector v = v*w + lane): ATen row_sum with
  // ilp_factor 4 over multi_row_sum with 4 levels.
  Node CascadeLane(int64_t vectors, int w, int lane) {
    auto leaf = [&](int64_t v) { return static_cast<int>(v * w + lane); };
    constexpr int kRows = 4, kLevels = 4;
    const int64_t s = vectors / kRows;  // size_ilp.
    const int64_t ceil_log2 = s <= 2 ? 1 : std::bit_width(static_cast<uint64_t>(s - 1));
    const int64_t level_power = std::max<int64_t>(4, ceil_log2 / kLevels);
    const int64_t level_step = int64_t{1} << level_power;
    const int64_t level_mask = level_step - 1;
    Node acc[kLevels][kRows];
    for (auto& lv : acc) {
      for (Node& a : lv) a = ops_.Zero();
    }
    int64_t i = 0;
    while (i + level_step <= s) {
      for (int64_t j = 0; j < level_step; ++j, ++i) {
        for (int r = 0; r < kRows; ++r) {
          const int li = leaf(i * kRows + r);
          StepAcc(acc[0][r], li, li + 1);
        }
      }
      for (int j = 1; j < kLevels; ++j) {
        for (int r = 0; r < kRows; ++r) {
          acc[j][r] = ops_.Combine(acc[j][r], acc[j - 1][r]);
          acc[j - 1][r] = ops_.Zero();
        }
        if ((i & (level_mask << (j * level_power))) != 0) break;
      }
    }
    for (; i < s; ++i) {
      for (int r = 0; r < kRows; ++r) {
        const int li = leaf(i * kRows + r);
        StepAcc(acc[0][r], li, li + 1);
      }
    }
    for (int j = 1; j < kLevels; ++j) {
      for (int r = 0; r < kRows; ++r) acc[0][r] = ops_.Combine(acc[0][r], acc[j][r]);
    }
    Node p0 = acc[0][0];
    for (int64_t v = s * kRows; v < vectors; ++v) StepAcc(p0, leaf(v), leaf(v) + 1);
    for (int r = 1; r < kRows; ++r) p0 = ops_.Combine(p0, acc[0][r]);
    return p0;
  }

  Node Cascade(const Node& c) {
    const int w = m_.chain.lanes;
    const int64_t k = n_;
    if (k < w) return ops_.Combine(c, CascadeLane(k, 1, 0));  // Scalar row_sum (size0 < W).
    const int64_t vectors = k / w;
    Node fin = ops_.Zero();
    for (int64_t i = vectors * w; i < k; ++i) {
      StepAcc(fin, static_cast<int>(i), static_cast<int>(i) + 1);
    }
    for (int l = 0; l < w; ++l) fin = ops_.Combine(fin, CascadeLane(vectors, w, l));
    return ops_.Combine(c, fin);
  }

  const Model& m_;
  const int n_;
  const uint64_t seed_;
  Ops& ops_;
  const int group_;
};

// The chain of `model` over terms 0..n-1 from the initial accumulator c (see above).
template <class Ops>
typename Ops::Node WalkChain(const Model& model, int n, uint64_t seed,
                             const typename Ops::Node& c, Ops& ops) {
  return ChainWalk<Ops>(model, n, seed, ops).Run(c);
}

}  // namespace fpconform::accumulation_internal

#endif  // FPCONFORM_ACCUMULATION_CHAIN_WALK_H_
