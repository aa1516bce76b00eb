// The fast matmul's host register tiles, compiled for AVX2+FMA: the IEEE chains (sequential,
// blocked, promote) of float32 and float64 accumulators (fast_tiles_avx2.inc's HostRows): HostTile,
// its float32 value-only form in AVX2 intrinsics (HostTileF32), the float32 bound tiles
// (fast_bound_lanes.inc's HostBoundTileLanes in ymm, in zmm through fast_tiles_avx512.cc); and the
// float64-input matmul (fast_kernels.h's RunMatmulRows64): Host64Tile and Host64BoundTile.
#include "accumulation/fast_tiles_avx2_begin.h"  // Includes; the AVX2+FMA target from here.
namespace fpconform::fast_internal {

#include "accumulation/fast_tiles_avx2.inc"

namespace {

// Host IEEE tile: R rows x W columns starting at (i0, j0), fully inside the matrix.
template <class Acc, bool kRound, bool kBound, int R, int W>
void HostTile(const MatIn& in, int i0, int j0) {
  const Plan& p = *in.p;
  const int n = in.n, k = in.k;
  Acc tot[R][W];
  double tm[R][W], te[R][W];
  for (int r = 0; r < R; ++r) {
    for (int w = 0; w < W; ++w) {
      const Acc cv = CValue<Acc>(in, i0 + r, j0 + w);
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
          acc[r][w] = MulAddStep<Acc, kRound>(av, bv, acc[r][w]);
        }
      }
      if constexpr (kBound) {
        float a_orig[R], a_used[R];
        for (int r = 0; r < R; ++r) {
          a_orig[r] = in.ao[size_t(i0 + r) * k + kk];
          a_used[r] = in.a[size_t(i0 + r) * k + kk];
        }
        BoundStepScalar<Acc, kRound, R, W>(&am[0][0], &ae[0][0], &am[0][0], &ae[0][0], a_orig,
                                           a_used, brow, in.bo + size_t(kk) * n + j0, u, eta);
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
      StoreElement<kBound>(in, size_t(i0 + r) * n + j0 + w, tot[r][w], te[r][w], tm[r][w]);
    }
  }
}

#if defined(__x86_64__)
// The value-only kernels in AVX2 intrinsics (GCC does not keep HostTile's accumulators in
// registers). Same operations as HostTile / FusedTile<false>, lane by lane.

// The host value tiles' operations on 8 floats or 4 doubles.
inline __m256 VLoad(const float* x) { return _mm256_loadu_ps(x); }
inline __m256d VLoad(const double* x) { return _mm256_loadu_pd(x); }
inline __m256 VBroadcast(const float* x) { return _mm256_broadcast_ss(x); }
inline __m256d VBroadcast(const double* x) { return _mm256_broadcast_sd(x); }
inline __m256 VAdd(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
inline __m256d VAdd(__m256d a, __m256d b) { return _mm256_add_pd(a, b); }
inline __m256 VMul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
inline __m256d VMul(__m256d a, __m256d b) { return _mm256_mul_pd(a, b); }
inline __m256 VFma(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
inline __m256d VFma(__m256d a, __m256d b, __m256d c) { return _mm256_fmadd_pd(a, b, c); }

// The chains of a host value tile (HostTileF32, Host64Tile): R rows x 2 registers of lanes of E
// (float or double), tot[r][h] holding c on entry and the results on return. A row-major from
// its first row (stride k); bp the packed column tile (step kk's 2 registers at bp + kk * 2L).
// Per step one fma, or the rounded product then an add; sequential chains run from c, others in
// ChunkEnd's chunks from +0, each added into tot in order.
template <bool kRound, int R, class E, class Vec>
inline void HostChains(const Plan& p, int k, const E* a, const E* bp, Vec (&tot)[R][2]) {
  constexpr int kL = 32 / sizeof(E);
  const bool seq = p.chain == ChainKind::kSequential;
  const int chunk = seq ? std::max(k, 1) : p.chunk;
  for (int k0 = 0, k1 = 0; k0 < k; k0 = k1) {
    k1 = ChunkEnd(p, chunk, k0, k);
    Vec acc[R][2];
    for (int r = 0; r < R; ++r) {
      for (int h = 0; h < 2; ++h) acc[r][h] = seq ? tot[r][h] : Vec{};
    }
    for (int kk = k0; kk < k1; ++kk) {
      const E* brow = bp + size_t(kk) * 2 * kL;
      const Vec b[2] = {VLoad(brow), VLoad(brow + kL)};
      for (int r = 0; r < R; ++r) {
        const Vec av = VBroadcast(a + size_t(r) * k + kk);
        for (int h = 0; h < 2; ++h) {
          acc[r][h] = kRound ? VAdd(acc[r][h], VMul(av, b[h])) : VFma(av, b[h], acc[r][h]);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int h = 0; h < 2; ++h) tot[r][h] = seq ? acc[r][h] : VAdd(tot[r][h], acc[r][h]);
    }
  }
}

// Float32 host tile: R rows x 16 columns; fma (or add of the rounded product) per step.
// (Out of line: inlined into MatmulRows, the 512^3 benchmark ran a few percent slower.)
template <bool kRound, int R>
[[gnu::noinline]] void HostTileF32(const MatIn& in, int i0, int j0) {
  const int k = in.k;
  __m256 tot[R][2];
  for (int r = 0; r < R; ++r) {
    float cv[16];
    for (int w = 0; w < 16; ++w) cv[w] = CValue<float>(in, i0 + r, j0 + w);
    tot[r][0] = _mm256_loadu_ps(cv);
    tot[r][1] = _mm256_loadu_ps(cv + 8);
  }
  HostChains<kRound>(*in.p, k, in.a + size_t(i0) * k, in.bpackf + size_t(j0 / 16) * k * 16, tot);
  for (int r = 0; r < R; ++r) {
    float v[16];
    _mm256_storeu_ps(v, tot[r][0]);
    _mm256_storeu_ps(v + 8, tot[r][1]);
    StoreRow32(in, i0 + r, j0, 16, v, nullptr);
  }
}
#endif

template <bool kBound>
void HostTileRows(const MatIn& in, int i_lo, int i_hi, bool tiled) {
  const Plan& p = *in.p;
  auto host = [&](auto s, int i, int j) {
    using S = decltype(s);
    HostTile<typename S::Acc, S::kRound, kBound, S::kRows, S::kWidth>(in, i, j);
  };
  if (p.arith == Plan::Arith::kHostF64) {
    TileRows<kBound>(in, i_lo, i_hi, tiled, host);
  }
#if defined(__x86_64__)
  else if (kBound && tiled && ActiveIsa() == Isa::kAvx512) {
    // Column tiles outside, 4-row blocks inside (a column strip of B stays in cache).
    const bool same = in.ao == in.a && in.bo == in.b;
    SweepColumns<kBound>(
        in, i_lo, i_hi, 4, 16,
        [&](int i, int j) { HostBoundTileAvx512Tile(p.round_product, same, 4, in, i, j); },
        [&](int i, int j) { HostBoundTileAvx512Tile(p.round_product, same, 1, in, i, j); });
  }
  else if (!kBound && tiled) {
    // Column tiles outside, 6-row blocks inside (the packed B tile stays in cache).
    WithConstant(p.round_product, [&](auto round_tag) {
      constexpr bool kRound = decltype(round_tag)::value;
      SweepColumns<kBound>(
          in, i_lo, i_hi, 6, 16, [&](int i, int j) { HostTileF32<kRound, 6>(in, i, j); },
          [&](int i, int j) { HostTileF32<kRound, 1>(in, i, j); });
    });
  }
  else if (kBound && tiled) {
    // AVX2: column tiles of 8 outside, 2-row blocks inside.
    auto sweep = [&](auto round_tag, auto same_tag) {
      constexpr bool kRound = decltype(round_tag)::value, kSame = decltype(same_tag)::value;
      SweepColumns<kBound>(
          in, i_lo, i_hi, 2, 8,
          [&](int i, int j) { HostBoundTileLanes<Avx2Lanes, kRound, kSame, 2>(in, i, j); },
          [&](int i, int j) { HostBoundTileLanes<Avx2Lanes, kRound, kSame, 1>(in, i, j); });
    };
    const bool same = in.ao == in.a && in.bo == in.b;
    WithConstant(p.round_product, [&](auto round_tag) {
      WithConstant(same, [&](auto same_tag) { sweep(round_tag, same_tag); });
    });
  }
#endif
  else {
    TileRows<kBound>(in, i_lo, i_hi, tiled, host);
  }
}

#if defined(__x86_64__)
// Host64Tile<R, kRound>: R rows x 8 columns of a float64-input matmul at (i0, j0), values only;
// sequential (one chain from c) or blocked (blocks from +0 added into c in order, ChunkEnd).
template <int R, bool kRound>
void Host64Tile(const MatIn64& in, int i0, int j0) {
  const Plan& p = *in.p;
  const int k = in.k, n = in.n;
  const double* bp = in.bpack + size_t(j0 / 8) * k * 8;
  __m256d tot[R][2];
  for (int r = 0; r < R; ++r) {
    for (int h = 0; h < 2; ++h) {
      tot[r][h] = in.c == nullptr
                      ? _mm256_setzero_pd()
                      : _mm256_castsi256_pd(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                            in.c + size_t(i0 + r) * n + j0 + 4 * h)));
    }
  }
  HostChains<kRound>(p, k, in.a + size_t(i0) * k, bp, tot);
  for (int r = 0; r < R; ++r) {
    alignas(32) double v[8];
    _mm256_store_pd(v, tot[r][0]);
    _mm256_store_pd(v + 4, tot[r][1]);
    for (int w = 0; w < 8; ++w) {
      StoreElement<false>(in, size_t(i0 + r) * n + j0 + w, v[w], 0.0, 0.0);
    }
  }
}
#endif

// Host64BoundTile<R, kRound>: Host64Tile with the bound, lane by lane ScalarDot's StepWith and
// Combine on double inputs: the leaf data of LeafBound64 in vectors where every lane's
// |fl(a*b)| lies in [2^-960, 2^1000) (m = |fl(a*b)| or its successor by the sign of the exact
// error fma(a, b, -fl(a*b)), e = its magnitude for rounded products), LeafBound64 itself for the
// other lanes; then BoundStep's operations in its order.
template <int R, bool kRound>
void Host64BoundTile(const MatIn64& in, int i0, int j0) {
  const Plan& p = *in.p;
  const int k = in.k, n = in.n;
  const double* bp = in.bpack + size_t(j0 / 8) * k * 8;
  struct V {
    __m256d v, m, e;
  };
  const __m256d zero = _mm256_setzero_pd();
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m256d up = _mm256_set1_pd(kUp);
  const __m256d lo = _mm256_set1_pd(0x1p-960), hi = _mm256_set1_pd(0x1p1000);
  const __m256d u_acc = _mm256_set1_pd(p.u_acc), u1_acc = _mm256_set1_pd(1 + p.u_acc);
  const __m256d eta_acc = _mm256_set1_pd(p.eta_acc);
  const __m256d u_comb = _mm256_set1_pd(p.u_comb), u1_comb = _mm256_set1_pd(1 + p.u_comb);
  const __m256d eta_comb = _mm256_set1_pd(p.eta_comb);
  auto step_e = [&](__m256d u1, __m256d u, __m256d eta, __m256d e, __m256d m) {
    return _mm256_mul_pd(_mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(u1, e), _mm256_mul_pd(u, m)),
                                       eta),
                         up);
  };
  V tot[R][2];
  for (int r = 0; r < R; ++r) {
    for (int h = 0; h < 2; ++h) {
      tot[r][h].v = in.c == nullptr
                        ? zero
                        : _mm256_castsi256_pd(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                              in.c + size_t(i0 + r) * n + j0 + 4 * h)));
      tot[r][h].m = _mm256_and_pd(tot[r][h].v, abs_mask);
      tot[r][h].e = zero;
    }
  }
  const bool seq = p.chain == ChainKind::kSequential;
  for (int k0 = 0; k0 < k;) {
    const int k1 = seq ? k : ChunkEnd(p, p.chunk, k0, k);
    V s[R][2];
    for (int r = 0; r < R; ++r) {
      for (int h = 0; h < 2; ++h) s[r][h] = seq ? tot[r][h] : V{zero, zero, zero};
    }
    for (int q = k0; q < k1; ++q) {
      const double* bq = bp + size_t(q) * 8;
      for (int r = 0; r < R; ++r) {
        const double as = in.a[size_t(i0 + r) * k + q];
        const __m256d av = _mm256_set1_pd(as);
        for (int h = 0; h < 2; ++h) {
          const __m256d bv = _mm256_loadu_pd(bq + 4 * h);
          const __m256d pr = _mm256_mul_pd(av, bv);
          const __m256d err = _mm256_fmsub_pd(av, bv, pr);
          const __m256d ap = _mm256_and_pd(pr, abs_mask);
          const __m256d above = _mm256_or_pd(
              _mm256_and_pd(_mm256_cmp_pd(err, zero, _CMP_GT_OQ),
                            _mm256_cmp_pd(pr, zero, _CMP_GT_OQ)),
              _mm256_and_pd(_mm256_cmp_pd(err, zero, _CMP_LT_OQ),
                            _mm256_cmp_pd(pr, zero, _CMP_LT_OQ)));
          const __m256d next = _mm256_castsi256_pd(
              _mm256_add_epi64(_mm256_castpd_si256(ap), _mm256_set1_epi64x(1)));
          __m256d ml = _mm256_blendv_pd(ap, next, above);
          __m256d el = kRound ? _mm256_and_pd(err, abs_mask) : zero;
          const __m256d in_range = _mm256_and_pd(_mm256_cmp_pd(ap, lo, _CMP_GE_OQ),
                                                 _mm256_cmp_pd(ap, hi, _CMP_LT_OQ));
          const int ok = _mm256_movemask_pd(in_range);
          if (ok != 0xF) {
            alignas(32) double mv[4], ev[4];
            _mm256_store_pd(mv, ml);
            _mm256_store_pd(ev, el);
            for (int w = 0; w < 4; ++w) {
              if ((ok >> w) & 1) continue;
              LeafBound64(as, bq[4 * h + w], kRound, mv[w], ev[w]);
            }
            ml = _mm256_load_pd(mv);
            el = _mm256_load_pd(ev);
          }
          V& acc = s[r][h];
          acc.v = kRound ? _mm256_add_pd(acc.v, pr) : _mm256_fmadd_pd(av, bv, acc.v);
          acc.m = _mm256_mul_pd(_mm256_add_pd(acc.m, ml), up);
          acc.e = step_e(u1_acc, u_acc, eta_acc, _mm256_add_pd(acc.e, el), acc.m);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int h = 0; h < 2; ++h) {
        if (seq) {
          tot[r][h] = s[r][h];
          continue;
        }
        V& t = tot[r][h];
        t.v = _mm256_add_pd(t.v, s[r][h].v);
        t.m = _mm256_mul_pd(_mm256_add_pd(t.m, s[r][h].m), up);
        t.e = step_e(u1_comb, u_comb, eta_comb, _mm256_add_pd(t.e, s[r][h].e), t.m);
      }
    }
    k0 = k1;
  }
  for (int r = 0; r < R; ++r) {
    alignas(32) double v[8], m[8], e[8];
    for (int h = 0; h < 2; ++h) {
      _mm256_store_pd(v + 4 * h, tot[r][h].v);
      _mm256_store_pd(m + 4 * h, tot[r][h].m);
      _mm256_store_pd(e + 4 * h, tot[r][h].e);
    }
    for (int w = 0; w < 8; ++w) {
      StoreElement<true>(in, size_t(i0 + r) * n + j0 + w, v[w], e[w], m[w]);
    }
  }
}

// One float64-input element through the scalar path.
void ScalarElement64(const MatIn64& in, bool bound, int i, int j) {
  const size_t idx = size_t(i) * in.n + j;
  const double* ar = in.a + size_t(i) * in.k;
  const double* bc = in.bt + size_t(j) * in.k;
  const DotView64 dv{ar, bc, ar, bc, nullptr, nullptr, 1, 1, in.k};
  EvalResult r;
  if (!RunDot64(*in.p, dv, in.c ? in.c[idx] : 0, r, in.seed, bound)) {
    (*in.redo)[idx] = 1;
    return;
  }
  in.d[idx] = r.bits;
  if (bound) in.bounds[idx] = r.bound;
}

}  // namespace

void HostRows(const MatIn& in, int i_lo, int i_hi, bool tiled, bool bound) {
  WithConstant(bound, [&](auto b) { HostTileRows<decltype(b)::value>(in, i_lo, i_hi, tiled); });
}

}  // namespace fpconform::fast_internal
#include "accumulation/fast_tiles_avx2_end.h"  // The target pragma popped.

namespace fpconform::fast_internal {

void RunMatmulRows64(const MatIn64& in, int i_lo, int i_hi, bool bound) {
  const Plan& p = *in.p;
  int n_tiled = 0;
#if defined(__x86_64__)
  if (!p.kahan && (p.chain == ChainKind::kSequential || p.chain == ChainKind::kBlocked)) {
    n_tiled = in.n / 8 * 8;
    for (int j = 0; j < n_tiled; j += 8) {
      int i = i_lo;
      if (bound && p.round_product) {
        for (; i + 2 <= i_hi; i += 2) Host64BoundTile<2, true>(in, i, j);
        for (; i < i_hi; ++i) Host64BoundTile<1, true>(in, i, j);
      } else if (bound) {
        for (; i + 2 <= i_hi; i += 2) Host64BoundTile<2, false>(in, i, j);
        for (; i < i_hi; ++i) Host64BoundTile<1, false>(in, i, j);
      } else if (p.round_product) {
        for (; i + 4 <= i_hi; i += 4) Host64Tile<4, true>(in, i, j);
        for (; i < i_hi; ++i) Host64Tile<1, true>(in, i, j);
      } else {
        for (; i + 4 <= i_hi; i += 4) Host64Tile<4, false>(in, i, j);
        for (; i < i_hi; ++i) Host64Tile<1, false>(in, i, j);
      }
    }
  }
#endif
  for (int i = i_lo; i < i_hi; ++i) {
    if (in.bad_row[i]) continue;
    for (int j = n_tiled; j < in.n; ++j) {
      if (!in.bad_col[j]) ScalarElement64(in, bound, i, j);
    }
  }
}

}  // namespace fpconform::fast_internal
