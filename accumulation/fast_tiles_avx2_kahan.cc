// The fast matmul's Kahan tiles (fast_tiles_avx2.inc's KahanRows), compiled for AVX2+FMA: KahanTile
// (ScalarDot::Kahan lane by lane, any accumulator, with or without bounds) and its float32
// value-only form in AVX2 intrinsics, KahanTileF32.
#include "accumulation/fast_tiles_avx2_begin.h"  // Includes; the AVX2+FMA target from here.
namespace fpconform::fast_internal {

#include "accumulation/fast_tiles_avx2.inc"

namespace {

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
      const Acc cv = CValue<Acc>(in, i0 + r, j0 + w);
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
        const Acc y = MulAddStep<Acc, kRound>(av, bv, -comp[l]);  // a*b - comp: exactly the same.
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
      if (!std::isfinite(comp[l])) {
        (*in.redo)[idx] = 1;
        continue;
      }
      double e = 0;
      if constexpr (kBound) e = Up(err[l] + std::fabs(static_cast<double>(comp[l])));
      StoreElement<kBound>(in, idx, acc[l], e, kBound ? mag[l] : 0.0);
    }
  }
}

#if defined(__x86_64__)
// Kahan tile, values only: R rows x 16 columns (KahanTile<float, kRound, false>, lane by lane;
// p - comp is fma(a, b, -comp) as there). 4R independent chains of four dependent operations.
template <bool kRound, int R>
void KahanTileF32(const MatIn& in, int i0, int j0) {
  const int n = in.n, k = in.k;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 acc[R][2], comp[R][2];
  for (int r = 0; r < R; ++r) {
    float cv[16];
    for (int w = 0; w < 16; ++w) cv[w] = CValue<float>(in, i0 + r, j0 + w);
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
#endif

template <bool kBound>
void KahanTileRows(const MatIn& in, int i_lo, int i_hi, bool tiled) {
  const Plan& p = *in.p;
#if defined(__x86_64__)
  if (!kBound && p.arith == Plan::Arith::kHostF32) {
    // Column tiles outside, 2-row blocks inside (the packed B tile stays in cache).
    WithConstant(p.round_product, [&](auto round_tag) {
      constexpr bool kRound = decltype(round_tag)::value;
      SweepColumns<kBound>(
          in, i_lo, i_hi, 2, 16, [&](int i, int j) { KahanTileF32<kRound, 2>(in, i, j); },
          [&](int i, int j) { KahanTileF32<kRound, 1>(in, i, j); });
    });
    return;
  }
#endif
  auto kahan = [&](auto s, int i, int j) {
    using S = decltype(s);
    KahanTile<typename S::Acc, S::kRound, kBound, S::kRows, S::kWidth>(in, i, j);
  };
  TileRows<kBound>(in, i_lo, i_hi, tiled, kahan);
}

}  // namespace

void KahanRows(const MatIn& in, int i_lo, int i_hi, bool tiled, bool bound) {
  WithConstant(bound, [&](auto b) { KahanTileRows<decltype(b)::value>(in, i_lo, i_hi, tiled); });
}

}  // namespace fpconform::fast_internal
#include "accumulation/fast_tiles_avx2_end.h"  // The target pragma popped.
