// The fast matmul's tiles (fast_eval.h, "Matmul"), compiled for AVX2+FMA: the register tiles
// (HostTile, KahanTile, FusedTile and their AVX2-intrinsic value-only forms), the lane-block tiles
// (PairwiseTile, WalkTile) and MatmulRows, which runs them over a row range. The float32 bound
// kernels (fast_bound_lanes.inc) and the fused tile (fast_fused_lanes.inc) are written once for
// any register width, included here in ymm registers and in fast_tiles_avx512.cc in zmm.
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
#include "accumulation/fast_kernels.h"
#include "accumulation/fast_plan.h"
#include "accumulation/fast_scalar.h"
#include "formats/isa.h"
#include "formats/ops.h"
#include "formats/round_pack.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#if defined(__x86_64__) && defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#elif defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
namespace fpconform::fast_internal {
namespace {

#if defined(__x86_64__)
inline __m256d WidenHalf(__m256 v, int h) {  // Lanes 4h..4h+3 of 8 floats, as doubles.
  return _mm256_cvtps_pd(h == 0 ? _mm256_castps256_ps128(v) : _mm256_extractf128_ps(v, 1));
}

// fast_bound_lanes.inc's and fast_fused_lanes.inc's lane traits in AVX2: 4 doubles per register
// (the fused tile: two registers per row).
struct Avx2Lanes {
  static constexpr int kLanes = 4;
  using D = __m256d;
  using F = __m128;
  using P = __m256;
  static D Set(double x) { return _mm256_set1_pd(x); }
  static D Zero() { return _mm256_setzero_pd(); }
  static D Load(const double* x) { return _mm256_loadu_pd(x); }
  static void Store(double* x, D v) { _mm256_storeu_pd(x, v); }
  static D Add(D a, D b) { return _mm256_add_pd(a, b); }
  static D Sub(D a, D b) { return _mm256_sub_pd(a, b); }
  static D Mul(D a, D b) { return _mm256_mul_pd(a, b); }
  static D Fma(D a, D b, D c) { return _mm256_fmadd_pd(a, b, c); }
  static D Fms(D a, D b, D c) { return _mm256_fmsub_pd(a, b, c); }
  static D Abs(D a) {
    return _mm256_and_pd(a, _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll)));
  }
  static D Up(D a) { return _mm256_mul_pd(a, _mm256_set1_pd(kUp)); }
  static F LoadF(const float* x) { return _mm_loadu_ps(x); }
  static F ZeroF() { return _mm_setzero_ps(); }
  static F SetF(float x) { return _mm_set1_ps(x); }
  static F MulF(F a, F b) { return _mm_mul_ps(a, b); }
  static D WidenF(F a) { return _mm256_cvtps_pd(a); }
  static P LoadP(const float* x) { return _mm256_loadu_ps(x); }
  static void StoreP(float* x, P v) { _mm256_storeu_ps(x, v); }
  static P SetP(float x) { return _mm256_set1_ps(x); }
  static P AddP(P a, P b) { return _mm256_add_ps(a, b); }
  static P MulP(P a, P b) { return _mm256_mul_ps(a, b); }
  static P FmaP(P a, P b, P c) { return _mm256_fmadd_ps(a, b, c); }
  static D HalfP(P a, int h) { return WidenHalf(a, h); }
  // fast_fused_lanes.inc's: masks are vectors of all-ones or zero lanes.
  using M = __m256d;
  using I = __m256i;
  static D And(D a, D b) { return _mm256_and_pd(a, b); }
  static D Max(D a, D b) { return _mm256_max_pd(a, b); }
  template <int kMode>
  static D Round(D a) { return _mm256_round_pd(a, kMode); }
  template <int kPredicate>
  static M Cmp(D a, D b) { return _mm256_cmp_pd(a, b, kPredicate); }
  static D Blend(M m, D a, D b) { return _mm256_blendv_pd(a, b, m); }
  static D ZeroUnless(M m, D a) { return _mm256_and_pd(m, a); }
  static D ZeroWhere(M m, D a) { return _mm256_andnot_pd(m, a); }
  static D MinUnless(M skip, D a, D lo) { return _mm256_min_pd(_mm256_blendv_pd(a, lo, skip), lo); }
  static I AsI(D a) { return _mm256_castpd_si256(a); }
  static M MaskIf(bool all) { return all ? AsD(SetI(-1)) : Zero(); }
  static M MaskAnd(M a, M b) { return _mm256_and_pd(a, b); }
  static M MaskOr(M a, M b) { return _mm256_or_pd(a, b); }
  static int MaskBits(M a) { return _mm256_movemask_pd(a); }
  static I SetI(long long x) { return _mm256_set1_epi64x(x); }
  static I AddI(I a, I b) { return _mm256_add_epi64(a, b); }
  static I SubI(I a, I b) { return _mm256_sub_epi64(a, b); }
  static I AndI(I a, I b) { return _mm256_and_si256(a, b); }
  static I AndNotI(I a, I b) { return _mm256_andnot_si256(a, b); }
  static I SrlI(I a, __m128i count) { return _mm256_srl_epi64(a, count); }
  static D AsD(I a) { return _mm256_castsi256_pd(a); }
  static F NarrowD(D a) { return _mm256_cvtpd_ps(a); }
  static F AddF(F a, F b) { return _mm_add_ps(a, b); }
};

#define FPCONFORM_LANES_TARGET  // The file's target pragma covers them.
#define FPCONFORM_LANES_LAMBDA
#include "accumulation/fast_bound_lanes.inc"
#include "accumulation/fast_fused_lanes.inc"
#undef FPCONFORM_LANES_LAMBDA
#undef FPCONFORM_LANES_TARGET
#endif

// BoundStepLanes (fast_bound_lanes.inc) lane by lane for any accumulator and width: the leaf
// step's bound data on R rows x W lanes, m[l] = Up(m0[l] + |x|), e[l] = BoundStep(u, eta,
// e0[l] + |used - x|, m[l]), x = a_orig[r] * b_orig[w] exact in double, used the product the
// chain adds (rounded to Acc under kRound). m0, e0 may be m, e.
template <class Acc, bool kRound, int R, int W>
void BoundStepScalar(double* m, double* e, const double* m0, const double* e0,
                     const float* a_orig, const float* a_used, const float* b_used,
                     const float* b_orig, double u, double eta) {
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
      m[l] = Up(m0[l] + mi);
      e[l] = BoundStep(u, eta, e0[l] + ei, m[l]);
    }
  }
}

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

// A combine's bound data on L lanes: m = Up(xm + ym), e = BoundStep(u, eta, xe + ye, m) lane by
// lane, in zmm or ymm registers where the ISA and L allow. m, e may be xm, xe.
template <int L>
void CombineBound(bool avx512, double* m, double* e, const double* xm, const double* xe,
                  const double* ym, const double* ye, double u, double eta) {
  if (L % 8 == 0 && avx512) {
    CombineBoundAvx512(L, m, e, xm, xe, ym, ye, u, eta);
    return;
  }
#if defined(__x86_64__)
  if constexpr (L % 4 == 0) {
    CombineLanes<Avx2Lanes>(L, m, e, xm, xe, ym, ye, u, eta);
    return;
  }
#endif
  for (int l = 0; l < L; ++l) {
    const double mm = Up(xm[l] + ym[l]);
    e[l] = BoundStep(u, eta, xe[l] + ye[l], mm);
    m[l] = mm;
  }
}

template <class Acc, bool kBound, int L>
struct LaneNode {
  Acc v[L];
  double m[kBound ? L : 1], e[kBound ? L : 1];
  // WalkTile: true where a lane may hold a subnormal value; false where none can (every lane
  // +0, or just written by an adder.ftz step or leaf), and adder.daz's check is skipped.
  bool may_be_subnormal = false;
};

// Pairwise tile (chain.kind = "pairwise", unroll 1): R rows x W columns from (i0, j0), fully
// inside the matrix. ScalarDot::Run's pairwise case with every node a block of R*W lanes: the
// tree's shape depends only on k, so all lanes walk it together (one recursion per tile, not per
// element), with the same operations per lane and the same bound arithmetic.
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

  const MatIn& in_;
  const Plan& p_;
  const int i0_, j0_;
  const bool avx512_ = ActiveIsa() == Isa::kAvx512;  // Bound steps in AVX-512.
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
    total.may_be_subnormal = true;  // c.
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
    // adder.daz reads a subnormal accumulator lane as zero: looked for only where one can be.
    const bool daz = p_.acc_daz && x.may_be_subnormal;
    x.may_be_subnormal = !p_.ftz;  // The step's result: flushed, or possibly subnormal.
#if defined(__x86_64__)
    if constexpr (kAvx) {
      // The loops below in AVX2 (GCC's own vectorization shuffles the lanes).
      const __m256 zero = _mm256_setzero_ps();
      const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
      const __m256 min_normal = _mm256_set1_ps(kMinNormal32);
      // The step's incoming E: x.e, or with adder.daz's bound term where an accumulator lane is
      // subnormal (rare: looked for in AVX2 first; the value loop below then finds zeros there).
      double e0[kBound ? L : 1];
      const double* e_in = kBound ? x.e : nullptr;
      if constexpr (kBound) {
        if (daz) {
          __m256 any = zero;
          for (int q = 0; q < L; q += 8) {
            const __m256 mag = _mm256_and_ps(_mm256_loadu_ps(x.v + q), abs_mask);
            any = _mm256_or_ps(any, _mm256_and_ps(_mm256_cmp_ps(mag, min_normal, _CMP_LT_OQ),
                                                  _mm256_cmp_ps(mag, zero, _CMP_NEQ_OQ)));
          }
          if (_mm256_movemask_ps(any) != 0) {
            for (int l = 0; l < L; ++l) {
              e0[l] = x.e[l];
              const float av = x.v[l];
              if (av != 0 && std::fabs(av) < kMinNormal32) {
                e0[l] = Up(x.e[l] + std::fabs(static_cast<double>(av)));
                x.v[l] = std::copysign(0.0f, av);
              }
            }
            e_in = e0;
          }
        }
      }
      const __m256 b[2] = {pad ? zero : _mm256_loadu_ps(brow),
                           pad ? zero : _mm256_loadu_ps(brow + 8)};
      for (int r = 0; r < R; ++r) {
        const __m256 av = _mm256_set1_ps(a_used[r]);
        for (int h = 0; h < 2; ++h) {
          float* lane = x.v + r * 16 + 8 * h;
          __m256 v = _mm256_loadu_ps(lane);
          if (daz) {
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
        const float* bo = pad ? nullptr : in_.bo + size_t(lo) * n + j0_;
        if (avx512_) {
          BoundStepAvx512(kRound, R, x.m, x.e, x.m, e_in, a_orig, a_used, pad ? nullptr : brow, bo,
                          p_.u_acc, p_.eta_acc);
        } else {
          BoundStepLanes<Avx2Lanes, kRound, R>(x.m, x.e, x.m, e_in, a_orig, a_used,
                                               pad ? nullptr : brow, bo, p_.u_acc, p_.eta_acc);
        }
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
      if (daz) {
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
      BoundStepScalar<Acc, kRound, R, W>(x.m, x.e, x.m, e0, a_orig, a_used, b_used, b_orig, u,
                                         eta);
    }
  }
  Node Combine(const Node& x, const Node& y) const {
    Node out;
    for (int l = 0; l < L; ++l) out.v[l] = x.v[l] + y.v[l];
    out.may_be_subnormal = true;
    AddBound(out, x, y, p_.u_comb, p_.eta_comb);
    return out;
  }
  Node Promote(const Node& x, const Node& y) const {
    Node out;
    out.may_be_subnormal = true;
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
    out.may_be_subnormal = !p_.ftz;
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
  void AddBound(Node& out, const Node& x, const Node& y, double u, double eta) const {
    if constexpr (kBound) CombineBound<L>(avx512_, out.m, out.e, x.m, x.e, y.m, y.e, u, eta);
  }

  const MatIn& in_;
  const Plan& p_;
  const int i0_, j0_;
  const bool avx512_ = ActiveIsa() == Isa::kAvx512;  // Bound steps in AVX-512.
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
  HostChains<kRound>(*in.p, k, in.a + size_t(i0) * k, in.bpackf + size_t(j0 / 16) * k * 16, tot);
  for (int r = 0; r < R; ++r) {
    float v[16];
    _mm256_storeu_ps(v, tot[r][0]);
    _mm256_storeu_ps(v + 8, tot[r][1]);
    StoreRow32(in, i0 + r, j0, 16, v, nullptr);
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


#endif

}  // namespace

void StoreRow32(const MatIn& in, int row, int j0, int width, const float* v, const double* e) {
  for (int w = 0; w < width; ++w) {
    const size_t idx = size_t(row) * in.n + j0 + w;
    if (!std::isfinite(v[w])) {
      (*in.redo)[idx] = 1;
    } else {
      in.d[idx] = std::bit_cast<uint32_t>(v[w]);
      if (e != nullptr) in.bounds[idx] = e[w];
    }
  }
}

namespace {

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

// The compile-time shape of a host tile (HostTile, KahanTile, PairwiseTile, WalkTile): its
// accumulator, product rounding, rows, and columns (16 float32 lanes or 8 float64 ones).
template <class A, bool kRoundProduct, int kR>
struct TileShape {
  using Acc = A;
  static constexpr bool kRound = kRoundProduct;
  static constexpr int kRows = kR;
  static constexpr int kWidth = std::is_same_v<A, double> ? 8 : 16;
};

// Rows [i_lo, i_hi) in column tiles of `width`: the tiles outside (a packed or strided B tile
// stays in cache across rows), blocks of `rows` rows inside (block(i, j)), then single rows
// (row(i, j)); the columns past the last tile element by element.
template <bool kBound, class Block, class Row>
void SweepColumns(const MatIn& in, int i_lo, int i_hi, int rows, int width, Block block, Row row) {
  for (int j = 0; j + width <= in.n; j += width) {
    int i = i_lo;
    for (; i + rows <= i_hi; i += rows) block(i, j);
    for (; i < i_hi; ++i) row(i, j);
  }
  for (int i = i_lo; i < i_hi; ++i) {
    for (int j = in.n / width * width; j < in.n; ++j) ScalarElement<kBound>(in, i, j);
  }
}

template <bool kBound>
void MatmulRows(const MatIn& in, int i_lo, int i_hi) {
  const Plan& p = *in.p;
  if (p.acc_bf16) {
    // A bfloat16 accumulator (AddRoundBf16 steps): element by element.
    for (int i = i_lo; i < i_hi; ++i) {
      for (int j = 0; j < in.n; ++j) ScalarElement<kBound>(in, i, j);
    }
    return;
  }
  // Pairwise chains with unroll > 1 (no preset matmul) run element by element.
  const bool pairwise = p.chain == ChainKind::kPairwise;
  const bool tiled = p.chain == ChainKind::kSequential || p.chain == ChainKind::kBlocked ||
                     p.chain == ChainKind::kPromote || (pairwise && p.unroll == 1);
  if (p.arith == Plan::Arith::kFused) {
    constexpr int W = 8;
#if defined(__x86_64__)
    if (tiled && ActiveIsa() == Isa::kAvx512) {
      // 4-row tiles; with bounds 2 (the bound data take the registers of the other rows).
      const bool fl = p.round_down;
      SweepColumns<kBound>(
          in, i_lo, i_hi, kBound ? 2 : 4, W,
          [&](int i, int j) { FusedTileAvx512Tile(kBound ? 2 : 4, fl, kBound, in, i, j); },
          [&](int i, int j) { FusedTileAvx512Tile(1, fl, kBound, in, i, j); });
      return;
    }
    if (tiled) {
      // AVX2: 2-row tiles (with 4 rows the 16 registers spill the group's data; 1.1-1.3x
      // slower); with bounds 1 (the bound data take the registers of the other row).
      auto sweep = [&](auto floor_tag) {
        constexpr bool kFloor = decltype(floor_tag)::value;
        constexpr int kRows = kBound ? 1 : 2;
        SweepColumns<kBound>(
            in, i_lo, i_hi, kRows, W,
            [&](int i, int j) { FusedTileLanes<Avx2Lanes, kRows, kFloor, kBound>(in, i, j); },
            [&](int i, int j) { FusedTileLanes<Avx2Lanes, 1, kFloor, kBound>(in, i, j); });
      };
      p.round_down ? sweep(std::true_type()) : sweep(std::false_type());
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
  // A tile template over the plan's accumulator and product rounding, in its 4-row and 1-row
  // forms: tile(TileShape<...>(), i, j), through go(tile4, tile1, width) (run, or run_cols).
  auto by_acc = [&](auto go, auto tile) {
    auto pick = [&](auto acc_tag, auto round_tag) {
      using Acc = typename decltype(acc_tag)::type;
      constexpr bool kRound = decltype(round_tag)::value;
      using S4 = TileShape<Acc, kRound, 4>;
      using S1 = TileShape<Acc, kRound, 1>;
      go([&](int i, int j) { tile(S4(), i, j); }, [&](int i, int j) { tile(S1(), i, j); },
         S1::kWidth);
    };
    using F64 = std::type_identity<double>;
    using F32 = std::type_identity<float>;
    using T = std::true_type;
    using F = std::false_type;
    if (p.arith == Plan::Arith::kHostF64) {
      p.round_product ? pick(F64(), T()) : pick(F64(), F());
    } else {
      p.round_product ? pick(F32(), T()) : pick(F32(), F());
    }
  };
  auto walk = [&](auto s, int i, int j) {
    using S = decltype(s);
    WalkTile<typename S::Acc, S::kRound, kBound, S::kRows, S::kWidth>(in, i, j).Run();
  };
  auto kahan = [&](auto s, int i, int j) {
    using S = decltype(s);
    KahanTile<typename S::Acc, S::kRound, kBound, S::kRows, S::kWidth>(in, i, j);
  };
  auto pairwise_tile = [&](auto s, int i, int j) {
    using S = decltype(s);
    PairwiseTile<typename S::Acc, S::kRound, kBound, S::kRows, S::kWidth>(in, i, j).Run();
  };
  auto host = [&](auto s, int i, int j) {
    using S = decltype(s);
    HostTile<typename S::Acc, S::kRound, kBound, S::kRows, S::kWidth>(in, i, j);
  };
  if (p.walk) {
    // Column tiles outside, rows inside (a column strip of B stays in cache).
    auto run_cols = [&](auto tile4, auto tile1, int w_width) {
      SweepColumns<kBound>(in, i_lo, i_hi, 4, w_width, tile4, tile1);
    };
    by_acc(run_cols, walk);
    return;
  }
  if (p.kahan) {
#if defined(__x86_64__)
    if (!kBound && p.arith == Plan::Arith::kHostF32) {
      // Column tiles outside, 2-row blocks inside (the packed B tile stays in cache).
      auto sweep = [&](auto round_tag) {
        constexpr bool kRound = decltype(round_tag)::value;
        SweepColumns<kBound>(
            in, i_lo, i_hi, 2, 16, [&](int i, int j) { KahanTileF32<kRound, 2>(in, i, j); },
            [&](int i, int j) { KahanTileF32<kRound, 1>(in, i, j); });
      };
      p.round_product ? sweep(std::true_type()) : sweep(std::false_type());
      return;
    }
#endif
    by_acc(run, kahan);
  } else if (pairwise) {
    by_acc(run, pairwise_tile);
  } else if (p.arith == Plan::Arith::kHostF64) {
    by_acc(run, host);
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
    auto sweep = [&](auto round_tag) {
      constexpr bool kRound = decltype(round_tag)::value;
      SweepColumns<kBound>(
          in, i_lo, i_hi, 6, 16, [&](int i, int j) { HostTileF32<kRound, 6>(in, i, j); },
          [&](int i, int j) { HostTileF32<kRound, 1>(in, i, j); });
    };
    p.round_product ? sweep(std::true_type()) : sweep(std::false_type());
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
    using T = std::true_type;
    using F = std::false_type;
    const bool same = in.ao == in.a && in.bo == in.b;
    if (p.round_product) {
      same ? sweep(T(), T()) : sweep(T(), F());
    } else {
      same ? sweep(F(), T()) : sweep(F(), F());
    }
  }
#endif
  else {
    by_acc(run, host);
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
      const size_t idx = size_t(i0 + r) * n + j0 + w;
      if (!std::isfinite(v[w])) {
        (*in.redo)[idx] = 1;
      } else if (p.f64_to_f32_output) {
        const float f = static_cast<float>(v[w]);
        if (std::isfinite(f)) {
          in.d[idx] = std::bit_cast<uint32_t>(f);
        } else {
          (*in.redo)[idx] = 1;
        }
      } else {
        in.d[idx] = std::bit_cast<uint64_t>(v[w]);
      }
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
      const size_t idx = size_t(i0 + r) * n + j0 + w;
      if (!std::isfinite(v[w])) {
        (*in.redo)[idx] = 1;
      } else if (p.f64_to_f32_output) {
        const float f = static_cast<float>(v[w]);
        if (std::isfinite(f)) {
          in.d[idx] = std::bit_cast<uint32_t>(f);
          in.bounds[idx] = BoundStep(p.u_out, p.eta_out, e[w], m[w]);
        } else {
          (*in.redo)[idx] = 1;
        }
      } else {
        in.d[idx] = std::bit_cast<uint64_t>(v[w]);
        in.bounds[idx] = e[w];
      }
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
}  // namespace fpconform::fast_internal
#if defined(__x86_64__) && defined(__clang__)
#pragma clang attribute pop
#elif defined(__x86_64__)
#pragma GCC pop_options
#endif

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

void RunMatmulRows(const MatIn& in, int i_lo, int i_hi, bool bound) {
  if (bound) {
    MatmulRows<true>(in, i_lo, i_hi);
  } else {
    MatmulRows<false>(in, i_lo, i_hi);
  }
}

}  // namespace fpconform::fast_internal
