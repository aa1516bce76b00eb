// The fast matmul's AVX-512 tiles (ActiveIsa() kAvx512): fast_fused_lanes.inc's fused tile and
// fast_bound_lanes.inc's float32 bound kernels (the host tile with bounds, the walked and pairwise
// tiles' bound steps and combines) at 8 doubles per register.
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
#include "base/isa.h"
#include "formats/ops.h"
#include "formats/round_pack.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "base/target_avx2_fma_push.h"  // Functions from here on: AVX2+FMA.
namespace fpconform::fast_internal {
namespace {

using accumulation_internal::kUp;

#if defined(__x86_64__)
// GCC 12 reports a false -Wmaybe-uninitialized (-Wuninitialized where a lone cast such as
// _mm512_castps512_ps256 is inlined) for the _mm512_undefined_pd() source of the unmasked
// AVX-512 intrinsics (every lane is written); silenced for the functions of this file only.
// A lambda does not inherit its function's target attribute in clang (GCC's does): clang needs
// it spelled on the lambda, or the intrinsics inside cannot be inlined.
#if defined(__clang__)
#define FPCONFORM_AVX512_LAMBDA \
  __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma")))
#else
#define FPCONFORM_AVX512_LAMBDA
#endif
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)  // Clang has no such warning (and errors on it).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

// float32 x 8 -> double x 8 (the zero-masked form: GCC 12 warns that the plain form's undefined
// source is used uninitialized).
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma"))) inline __m512d WidenPs(
    __m256 x) {
  return _mm512_maskz_cvtps_pd(static_cast<__mmask8>(0xFF), x);
}

// fast_bound_lanes.inc's and fast_fused_lanes.inc's lane traits in AVX-512: 8 doubles per
// register (the fused tile: one register per row, a packed B tile row is one load).
#define FPCONFORM_LANES_TARGET \
  __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma")))
struct Avx512Lanes {
  static constexpr int kLanes = 8;
  using D = __m512d;
  using F = __m256;
  using P = __m512;
  FPCONFORM_LANES_TARGET static D Set(double x) { return _mm512_set1_pd(x); }
  FPCONFORM_LANES_TARGET static D Zero() { return _mm512_setzero_pd(); }
  FPCONFORM_LANES_TARGET static D Load(const double* x) { return _mm512_loadu_pd(x); }
  FPCONFORM_LANES_TARGET static void Store(double* x, D v) { _mm512_storeu_pd(x, v); }
  FPCONFORM_LANES_TARGET static D Add(D a, D b) { return _mm512_add_pd(a, b); }
  FPCONFORM_LANES_TARGET static D Sub(D a, D b) { return _mm512_sub_pd(a, b); }
  FPCONFORM_LANES_TARGET static D Mul(D a, D b) { return _mm512_mul_pd(a, b); }
  FPCONFORM_LANES_TARGET static D Fma(D a, D b, D c) { return _mm512_fmadd_pd(a, b, c); }
  FPCONFORM_LANES_TARGET static D Fms(D a, D b, D c) { return _mm512_fmsub_pd(a, b, c); }
  FPCONFORM_LANES_TARGET static D Abs(D a) {
    return _mm512_and_pd(a, _mm512_castsi512_pd(_mm512_set1_epi64(0x7FFFFFFFFFFFFFFFll)));
  }
  FPCONFORM_LANES_TARGET static D Up(D a) { return _mm512_mul_pd(a, _mm512_set1_pd(kUp)); }
  FPCONFORM_LANES_TARGET static F LoadF(const float* x) { return _mm256_loadu_ps(x); }
  FPCONFORM_LANES_TARGET static F ZeroF() { return _mm256_setzero_ps(); }
  FPCONFORM_LANES_TARGET static F SetF(float x) { return _mm256_set1_ps(x); }
  FPCONFORM_LANES_TARGET static F MulF(F a, F b) { return _mm256_mul_ps(a, b); }
  FPCONFORM_LANES_TARGET static D WidenF(F a) { return WidenPs(a); }
  FPCONFORM_LANES_TARGET static P LoadP(const float* x) { return _mm512_loadu_ps(x); }
  FPCONFORM_LANES_TARGET static void StoreP(float* x, P v) { _mm512_storeu_ps(x, v); }
  FPCONFORM_LANES_TARGET static P SetP(float x) { return _mm512_set1_ps(x); }
  FPCONFORM_LANES_TARGET static P AddP(P a, P b) { return _mm512_add_ps(a, b); }
  FPCONFORM_LANES_TARGET static P MulP(P a, P b) { return _mm512_mul_ps(a, b); }
  FPCONFORM_LANES_TARGET static P FmaP(P a, P b, P c) { return _mm512_fmadd_ps(a, b, c); }
  FPCONFORM_LANES_TARGET static D HalfP(P a, int h) {
    return WidenPs(h == 0 ? _mm512_castps512_ps256(a)
                          : _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
  }
  // fast_fused_lanes.inc's: masks are mask registers. (Max as the masked form with every lane
  // set: GCC 12 warns that the plain form's undefined source may be used uninitialized. Its
  // source is b, the running record in fast_fused_lanes.inc's Max(x, record): GCC then updates
  // the record's register in place instead of moving it, which spilled one in 4-row tiles.)
  using M = __mmask8;
  using I = __m512i;
  FPCONFORM_LANES_TARGET static D And(D a, D b) { return _mm512_and_pd(a, b); }
  FPCONFORM_LANES_TARGET static D Max(D a, D b) { return _mm512_mask_max_pd(b, 0xFF, a, b); }
  template <int kMode>
  FPCONFORM_LANES_TARGET static D Round(D a) { return _mm512_roundscale_pd(a, kMode); }
  template <int kPredicate>
  FPCONFORM_LANES_TARGET static M Cmp(D a, D b) { return _mm512_cmp_pd_mask(a, b, kPredicate); }
  FPCONFORM_LANES_TARGET static D Blend(M m, D a, D b) { return _mm512_mask_blend_pd(m, a, b); }
  FPCONFORM_LANES_TARGET static D ZeroUnless(M m, D a) { return _mm512_maskz_mov_pd(m, a); }
  FPCONFORM_LANES_TARGET static D ZeroWhere(M m, D a) {
    return _mm512_maskz_mov_pd(static_cast<M>(~m), a);
  }
  FPCONFORM_LANES_TARGET static D MinUnless(M skip, D a, D lo) {
    return _mm512_mask_min_pd(lo, static_cast<M>(~skip), a, lo);
  }
  FPCONFORM_LANES_TARGET static I AsI(D a) { return _mm512_castpd_si512(a); }
  FPCONFORM_LANES_TARGET static M MaskIf(bool all) { return all ? 0xFF : 0; }
  FPCONFORM_LANES_TARGET static M MaskAnd(M a, M b) { return static_cast<M>(a & b); }
  FPCONFORM_LANES_TARGET static M MaskOr(M a, M b) { return static_cast<M>(a | b); }
  FPCONFORM_LANES_TARGET static int MaskBits(M a) { return a; }
  FPCONFORM_LANES_TARGET static I SetI(long long x) { return _mm512_set1_epi64(x); }
  FPCONFORM_LANES_TARGET static I AddI(I a, I b) { return _mm512_add_epi64(a, b); }
  FPCONFORM_LANES_TARGET static I SubI(I a, I b) { return _mm512_sub_epi64(a, b); }
  FPCONFORM_LANES_TARGET static I AndI(I a, I b) { return _mm512_and_si512(a, b); }
  FPCONFORM_LANES_TARGET static I AndNotI(I a, I b) { return _mm512_andnot_si512(a, b); }
  FPCONFORM_LANES_TARGET static I SrlI(I a, __m128i count) { return _mm512_srl_epi64(a, count); }
  FPCONFORM_LANES_TARGET static D AsD(I a) { return _mm512_castsi512_pd(a); }
  FPCONFORM_LANES_TARGET static F NarrowD(D a) { return _mm512_cvtpd_ps(a); }
  FPCONFORM_LANES_TARGET static F AddF(F a, F b) { return _mm256_add_ps(a, b); }
};
#define FPCONFORM_LANES_LAMBDA FPCONFORM_AVX512_LAMBDA
#include "accumulation/fast_bound_lanes.inc"
#include "accumulation/fast_fused_lanes.inc"
#undef FPCONFORM_LANES_LAMBDA
#undef FPCONFORM_LANES_TARGET

#pragma GCC diagnostic pop
#endif

}  // namespace
}  // namespace fpconform::fast_internal
#include "base/target_pop.h"  // The AVX2+FMA target popped.

namespace fpconform::fast_internal {

void FusedTileAvx512Tile(int rows, bool floor_align, bool bound, const MatIn& in, int i0,
                         int j0) {
#if defined(__x86_64__)
  if (bound) {
    if (rows == 2) {
      floor_align ? FusedTileLanes<Avx512Lanes, 2, true, true>(in, i0, j0)
                  : FusedTileLanes<Avx512Lanes, 2, false, true>(in, i0, j0);
    } else {
      floor_align ? FusedTileLanes<Avx512Lanes, 1, true, true>(in, i0, j0)
                  : FusedTileLanes<Avx512Lanes, 1, false, true>(in, i0, j0);
    }
  } else if (rows == 4) {
    floor_align ? FusedTileLanes<Avx512Lanes, 4, true, false>(in, i0, j0)
                : FusedTileLanes<Avx512Lanes, 4, false, false>(in, i0, j0);
  } else {
    floor_align ? FusedTileLanes<Avx512Lanes, 1, true, false>(in, i0, j0)
                : FusedTileLanes<Avx512Lanes, 1, false, false>(in, i0, j0);
  }
#else
  (void)rows, (void)floor_align, (void)bound, (void)in, (void)i0, (void)j0;
#endif
}

void BoundStepAvx512(bool round_product, int rows, double* m, double* e, const double* m0,
                     const double* e0, const float* a_orig, const float* a_used,
                     const float* b_used, const float* b_orig, double u, double eta) {
#if defined(__x86_64__)
  auto go = [&](auto round_tag, auto rows_tag) {
    BoundStepLanes<Avx512Lanes, decltype(round_tag)::value, decltype(rows_tag)::value>(
        m, e, m0, e0, a_orig, a_used, b_used, b_orig, u, eta);
  };
  using T = std::true_type;
  using F = std::false_type;
  using Four = std::integral_constant<int, 4>;
  using One = std::integral_constant<int, 1>;
  if (rows == 4) {
    round_product ? go(T(), Four()) : go(F(), Four());
  } else {
    round_product ? go(T(), One()) : go(F(), One());
  }
#else
  (void)round_product, (void)rows, (void)m, (void)e, (void)m0, (void)e0, (void)a_orig, (void)a_used,
      (void)b_used, (void)b_orig, (void)u, (void)eta;
#endif
}

void CombineBoundAvx512(int lanes, double* m, double* e, const double* xm, const double* xe,
                        const double* ym, const double* ye, double u, double eta) {
#if defined(__x86_64__)
  CombineLanes<Avx512Lanes>(lanes, m, e, xm, xe, ym, ye, u, eta);
#else
  (void)lanes, (void)m, (void)e, (void)xm, (void)xe, (void)ym, (void)ye, (void)u, (void)eta;
#endif
}

void HostBoundTileAvx512Tile(bool round_product, bool same_inputs, int rows, const MatIn& in,
                             int i0, int j0) {
#if defined(__x86_64__)
  auto go = [&](auto round_tag, auto same_tag) {
    constexpr bool kRound = decltype(round_tag)::value, kSame = decltype(same_tag)::value;
    if (rows == 4) {
      HostBoundTileLanes<Avx512Lanes, kRound, kSame, 4>(in, i0, j0);
    } else {
      HostBoundTileLanes<Avx512Lanes, kRound, kSame, 1>(in, i0, j0);
    }
  };
  using T = std::true_type;
  using F = std::false_type;
  if (round_product) {
    same_inputs ? go(T(), T()) : go(T(), F());
  } else {
    same_inputs ? go(F(), T()) : go(F(), F());
  }
#else
  (void)round_product, (void)same_inputs, (void)rows, (void)in, (void)i0, (void)j0;
#endif
}

}  // namespace fpconform::fast_internal
