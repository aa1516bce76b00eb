// The fast matmul's pairwise tiles (fast_tiles_avx2.inc's PairwiseRows), compiled for AVX2+FMA:
// PairwiseTile, the pairwise tree of chain.kind = "pairwise" (unroll 1) on blocks of lanes.
#include "accumulation/fast_tiles_avx2_begin.h"  // Includes; the AVX2+FMA target from here.
namespace fpconform::fast_internal {

#include "accumulation/fast_tiles_avx2.inc"

namespace {

// Pairwise tile (chain.kind = "pairwise", unroll 1): R rows x W columns from (i0, j0), fully
// inside the matrix. ScalarDot::Run's pairwise case with every node a block of R*W lanes: the
// tree's shape depends only on k, so all lanes walk it together (one recursion per tile, not per
// element), with the same operations per lane and the same bound arithmetic.
template <class Acc, bool kRound, bool kBound, int R, int W>
class PairwiseTile : TileAt {
 public:
  static constexpr int L = R * W;
  using N = LaneNode<Acc, kBound, L>;
  // float32 values only: AVX2 intrinsics, the leaf sums of the tree's bottom in registers.
#if defined(__x86_64__)
  static constexpr bool kAvx = std::is_same_v<Acc, float> && !kBound && W == 16;
#else
  static constexpr bool kAvx = false;
#endif

  using TileAt::TileAt;

  void Run() {
    const int n = in_.n, k = in_.k;
    N total;
    for (int r = 0; r < R; ++r) {
      for (int w = 0; w < W; ++w) {
        const Acc cv = CValue<Acc>(in_, i0_ + r, j0_ + w);
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
        StoreElement<kBound>(in_, size_t(i0_ + r) * n + j0_ + w, total.v[l],
                             kBound ? total.e[l] : 0.0, kBound ? total.m[l] : 0.0);
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
      CombineBound<L>(avx512_, x.m, x.e, x.m, x.e, y.m, y.e, p_.u_comb, p_.eta_comb);
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
#if defined(__x86_64__)
    if constexpr (std::is_same_v<Acc, float> && W == 16) {
      // The value loop below in AVX2 (GCC's own vectorization shuffles the lanes).
      const __m256 b[2] = {_mm256_loadu_ps(b_used), _mm256_loadu_ps(b_used + 8)};
      for (int r = 0; r < R; ++r) {
        const __m256 av = _mm256_set1_ps(a_used[r]);
        for (int h = 0; h < 2; ++h) {
          float* lane = x.v + r * 16 + 8 * h;
          const __m256 v = kFirst ? _mm256_setzero_ps() : _mm256_loadu_ps(lane);
          _mm256_storeu_ps(lane, kRound ? _mm256_add_ps(v, _mm256_mul_ps(av, b[h]))
                                        : _mm256_fmadd_ps(av, b[h], v));
        }
      }
    } else
#endif
    for (int r = 0; r < R; ++r) {
      const Acc av = static_cast<Acc>(a_used[r]);
      for (int w = 0; w < W; ++w) {
        const Acc bv = static_cast<Acc>(b_used[w]);
        Acc& v = x.v[r * W + w];
        if constexpr (kFirst) v = 0;
        v = MulAddStep<Acc, kRound>(av, bv, v);
      }
    }
    if constexpr (kBound) {
      const double u = p_.u_acc, eta = p_.eta_acc;
      const float* borow = in_.bo + size_t(kk) * n + j0_;
      float a_orig[R], b_orig[W];
      for (int r = 0; r < R; ++r) a_orig[r] = in_.ao[size_t(i0_ + r) * k + kk];
      for (int w = 0; w < W; ++w) b_orig[w] = borow[w];
      // kFirst: from M = E = +0 (the same bits as a node cleared to +0).
      static constexpr double kZeros[L] = {};
      const double* m0 = kFirst ? kZeros : x.m;
      const double* e0 = kFirst ? kZeros : x.e;
#if defined(__x86_64__)
      if constexpr (std::is_same_v<Acc, float> && W == 16) {
        if (avx512_) {
          BoundStepAvx512(kRound, R, x.m, x.e, m0, e0, a_orig, a_used, b_used, b_orig, u, eta);
        } else {
          BoundStepLanes<Avx2Lanes, kRound, R>(x.m, x.e, m0, e0, a_orig, a_used, b_used, b_orig,
                                               u, eta);
        }
        return;
      }
#endif
      BoundStepScalar<Acc, kRound, R, W>(x.m, x.e, m0, e0, a_orig, a_used, b_used, b_orig, u,
                                         eta);
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
};

template <bool kBound>
void PairwiseTileRows(const MatIn& in, int i_lo, int i_hi, bool tiled) {
  auto pairwise_tile = [&](auto s, int i, int j) {
    using S = decltype(s);
    PairwiseTile<typename S::Acc, S::kRound, kBound, S::kRows, S::kWidth>(in, i, j).Run();
  };
  TileRows<kBound>(in, i_lo, i_hi, tiled, pairwise_tile);
}

}  // namespace

void PairwiseRows(const MatIn& in, int i_lo, int i_hi, bool tiled, bool bound) {
  WithConstant(bound, [&](auto b) { PairwiseTileRows<decltype(b)::value>(in, i_lo, i_hi, tiled); });
}

}  // namespace fpconform::fast_internal
#include "accumulation/fast_tiles_avx2_end.h"  // The target pragma popped.
