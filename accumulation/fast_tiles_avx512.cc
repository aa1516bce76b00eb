// The fast matmul's AVX-512 tiles (ActiveIsa() kAvx512): FusedTileAvx in AVX-512, and
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

using accumulation_internal::kUp;

#if defined(__x86_64__)
// FusedTileAvx in AVX-512 (ActiveIsa() kAvx512): R rows x 8 columns, one vector of 8 doubles
// per row (a packed B tile row is one load), the same operations lane by lane; lane masks
// instead of all-ones vectors. (Max as the masked form with every lane set: GCC 12 warns that
// the plain form's undefined source may be used uninitialized.)
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
template <int R, bool kFloorAlign, bool kBound = false>
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma"))) void FusedTileAvx512(
    const MatIn& in, int i0, int j0) {
  const Plan& p = *in.p;
  const int n = in.n, k = in.k;
  const __m512d zero = _mm512_setzero_pd();
  const __m512d one = _mm512_set1_pd(1.0);
  const __m512d expmask = _mm512_castsi512_pd(_mm512_set1_epi64(0x7FF0000000000000ll));
  const __m512d min_normal32 = _mm512_set1_pd(0x1p-126);
  const __m512d overflow32 = _mm512_set1_pd(0x1p128);
  const __m512i scale_base = _mm512_set1_epi64(
      static_cast<long long>((uint64_t{1023 + 1023} + p.fraction_bits) << 52));
  const __m512d two_mf = _mm512_set1_pd(std::ldexp(1.0, -p.fraction_bits));
  const __m512d emax_floor = _mm512_set1_pd(std::ldexp(1.0, p.fraction_bits - 1000));
  const int cut = 52 - p.acc_fraction_bits;
  const __m128i cut_count = _mm_cvtsi32_si128(cut);
  const __m512i low_mask = _mm512_set1_epi64(static_cast<long long>((uint64_t{1} << cut) - 1));
  const __m512i half_m1 =
      _mm512_set1_epi64(static_cast<long long>((uint64_t{1} << (cut - 1)) - 1));
  const __m512i one_i = _mm512_set1_epi64(1);
  constexpr int kMode = kFloorAlign ? (_MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
                                    : (_MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  // Value; the least nonzero and the greatest result magnitude so far (FusedTileAvx's range
  // check, taken once at the end); bound data M and E (kBound).
  __m512d tot[R], lo[R], hi[R], tm[R], te[R];
  const __m512d up = _mm512_set1_pd(kUp);
  const __m512d abs_mask = _mm512_castsi512_pd(_mm512_set1_epi64(0x7FFFFFFFFFFFFFFFll));
  const __m512d denorm = _mm512_set1_pd(std::numeric_limits<double>::denorm_min());
  const double u = p.u_acc, eta = p.eta_acc;
  const double uc = p.chain == ChainKind::kPromote ? p.u_prom : p.u_comb;
  const double etac = p.chain == ChainKind::kPromote ? p.eta_prom : p.eta_comb;
  for (int r = 0; r < R; ++r) {
    double cv[8];
    for (int w = 0; w < 8; ++w) {
      const uint64_t cb = in.c ? in.c[size_t(i0 + r) * n + j0 + w] : 0;
      cv[w] = std::bit_cast<float>(static_cast<uint32_t>(cb));
    }
    tot[r] = _mm512_loadu_pd(cv);
    tm[r] = _mm512_and_pd(tot[r], abs_mask);
    // A lane with a non-finite c starts below the range.
    lo[r] = _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(tm[r], overflow32, _CMP_LT_OQ), one);
    hi[r] = zero;
    te[r] = zero;
  }
  const bool seq = p.chain == ChainKind::kSequential;
  const int chunk = seq ? std::max(k, 1) : p.chunk;
  const float* arow[R];
  const double* apow[R];
  for (int r = 0; r < R; ++r) {
    arow[r] = in.a + size_t(i0 + r) * k;
    apow[r] = in.apow + size_t(i0 + r) * k;
  }
  const double* btile = in.bpack + size_t(j0 / 8) * k * 16;
  for (int k0 = 0, k1 = 0; k0 < k; k0 = k1) {
    k1 = ChunkEnd(p, chunk, k0, k);
    __m512d acc[R], am[R], ae[R];
    for (int r = 0; r < R; ++r) {
      acc[r] = seq ? tot[r] : zero;
      am[r] = seq ? tm[r] : zero;
      ae[r] = seq ? te[r] : zero;
    }
    for (int g0 = k0; g0 < k1; g0 += p.group) {
      const int g1 = std::min(k1, g0 + p.group);
      const __mmask8 full = g1 - g0 == p.group ? 0xFF : 0;
      __m512d emax[R], scale[R], s[R];
      // After the first group, acc is 0 or a float32 normal (or its lane is redone), so its
      // nominal exponent is its exponent.
      const bool nominal_acc = !p.actual && g0 == 0;
      for (int r = 0; r < R; ++r) {
        const __m512d e = _mm512_and_pd(acc[r], expmask);
        if (!nominal_acc) {
          emax[r] = e;
        } else {
          const __mmask8 is_zero = _mm512_cmp_pd_mask(acc[r], zero, _CMP_EQ_OQ);
          emax[r] = _mm512_maskz_mov_pd(static_cast<__mmask8>(~is_zero),
                                        _mm512_mask_max_pd(e, 0xFF, e, min_normal32));
        }
      }
      // One chain per row for the maxima and for the sums, two terms joined before they enter
      // it (half the chain's latency, no extra operation: max is associative, and the sums are
      // of integers below 2^53, exact in any order; a zero sum is -0 only if every term is).
      auto exps = [&](int kk, int r) FPCONFORM_AVX512_LAMBDA {
        const double* brow = btile + size_t(kk) * 16;
        if (p.actual) {
          return _mm512_and_pd(_mm512_mul_pd(_mm512_set1_pd(arow[r][kk]), _mm512_loadu_pd(brow)),
                               expmask);
        }
        return _mm512_mul_pd(_mm512_set1_pd(apow[r][kk]), _mm512_loadu_pd(brow + 8));
      };
      int kt = g0;
      for (; kt + 1 < g1; kt += 2) {
        for (int r = 0; r < R; ++r) {
          const __m512d e0 = exps(kt, r), e1 = exps(kt + 1, r);
          emax[r] = _mm512_mask_max_pd(emax[r], 0xFF, emax[r],
                                       _mm512_mask_max_pd(e0, 0xFF, e0, e1));
        }
      }
      if (kt < g1) {
        for (int r = 0; r < R; ++r) {
          emax[r] = _mm512_mask_max_pd(emax[r], 0xFF, emax[r], exps(kt, r));
        }
      }
      for (int r = 0; r < R; ++r) {
        // 2^F / emax on the exponent field: bits(2^(F - e)) = bits(2^F) + bits(1) - bits(2^e);
        // emax 0 takes FusedTileAvx's floor 2^(F - 1000).
        const __m512i q = _mm512_sub_epi64(
            scale_base,
            _mm512_castpd_si512(_mm512_mask_max_pd(emax[r], 0xFF, emax[r], emax_floor)));
        scale[r] = _mm512_castsi512_pd(q);
        s[r] = _mm512_roundscale_pd(_mm512_mul_pd(acc[r], scale[r]), kMode);
      }
      auto term = [&](int kk, int r) FPCONFORM_AVX512_LAMBDA {
        const __m512d x = _mm512_mul_pd(
            _mm512_mul_pd(_mm512_set1_pd(arow[r][kk]), _mm512_loadu_pd(btile + size_t(kk) * 16)),
            scale[r]);
        return _mm512_roundscale_pd(x, kMode);
      };
      for (kt = g0; kt + 1 < g1; kt += 2) {
        for (int r = 0; r < R; ++r) {
          s[r] = _mm512_add_pd(s[r], _mm512_add_pd(term(kt, r), term(kt + 1, r)));
        }
      }
      if (kt < g1) {
        for (int r = 0; r < R; ++r) s[r] = _mm512_add_pd(s[r], term(kt, r));
      }
      if constexpr (kBound) {
        // FusedTile's bound, lane-wise: M and E summed over the group in k order (inexact
        // double adds: not split), T = nonzero terms * the alignment quantum.
        for (int r = 0; r < R; ++r) {
          __m512d m = am[r], se = ae[r];
          __m512d nz = _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(acc[r], zero, _CMP_NEQ_OQ), one);
          for (int t = g0; t < g1; ++t) {
            const __m512d bu = _mm512_loadu_pd(btile + size_t(t) * 16);
            const __m512d bo = _mm512_cvtps_pd(_mm256_loadu_ps(in.bo + size_t(t) * n + j0));
            const __m512d x = _mm512_mul_pd(_mm512_set1_pd(in.ao[size_t(i0 + r) * k + t]), bo);
            const __m512d pu = _mm512_mul_pd(_mm512_set1_pd(arow[r][t]), bu);
            nz = _mm512_add_pd(
                nz, _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(pu, zero, _CMP_NEQ_OQ), one));
            se = _mm512_add_pd(se, _mm512_and_pd(_mm512_sub_pd(pu, x), abs_mask));
            m = _mm512_add_pd(m, _mm512_and_pd(x, abs_mask));
          }
          const __m512d quantum =
              _mm512_mask_max_pd(denorm, 0xFF, _mm512_mul_pd(emax[r], two_mf), denorm);
          const __m512d tq = _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(emax[r], zero, _CMP_GT_OQ),
                                                 _mm512_mul_pd(nz, quantum));
          am[r] = _mm512_mul_pd(m, up);
          const __m512d e1 = _mm512_mul_pd(_mm512_set1_pd(1 + u), _mm512_add_pd(se, tq));
          ae[r] = _mm512_mul_pd(
              _mm512_add_pd(_mm512_add_pd(e1, _mm512_mul_pd(_mm512_set1_pd(u), am[r])),
                            _mm512_set1_pd(eta)),
              up);
        }
      }
      for (int r = 0; r < R; ++r) {
        // RoundGroup, lane-wise, with the sign bit in place as in FusedTileAvx.
        const __m512d sum = s[r];
        const __mmask8 s_zero = _mm512_cmp_pd_mask(sum, zero, _CMP_EQ_OQ);
        __m512i bits = _mm512_castpd_si512(sum);
        if (p.rne) {
          const __m512i lsb = _mm512_and_si512(_mm512_srl_epi64(bits, cut_count), one_i);
          bits = _mm512_add_epi64(bits, _mm512_add_epi64(half_m1, lsb));
        }
        bits = _mm512_andnot_si512(low_mask, bits);
        const __m512d v =
            _mm512_mul_pd(_mm512_castsi512_pd(bits), _mm512_mul_pd(emax[r], two_mf));
        // The range check's data (a NaN magnitude keeps the record, as in FusedTileAvx).
        const __m512d mag = _mm512_and_pd(v, abs_mask);
        lo[r] = _mm512_mask_min_pd(lo[r], static_cast<__mmask8>(~s_zero), mag, lo[r]);
        hi[r] = _mm512_mask_max_pd(hi[r], 0xFF, mag, hi[r]);
        const __mmask8 keep_sign =
            static_cast<__mmask8>(_mm512_cmp_pd_mask(emax[r], zero, _CMP_EQ_OQ) & full);
        const __m512d zres = _mm512_maskz_mov_pd(keep_sign, sum);  // sum (a signed zero) or +0.
        acc[r] = _mm512_mask_blend_pd(s_zero, v, zres);
      }
    }
    for (int r = 0; r < R; ++r) {
      tot[r] = seq ? acc[r]
                   : _mm512_cvtps_pd(_mm256_add_ps(_mm512_cvtpd_ps(tot[r]),
                                                   _mm512_cvtpd_ps(acc[r])));
      if constexpr (kBound) {
        if (seq) {
          tm[r] = am[r];
          te[r] = ae[r];
        } else {
          const __m512d mm = _mm512_mul_pd(_mm512_add_pd(tm[r], am[r]), up);
          const __m512d e1 =
              _mm512_mul_pd(_mm512_set1_pd(1 + uc), _mm512_add_pd(te[r], ae[r]));
          te[r] = _mm512_mul_pd(
              _mm512_add_pd(_mm512_add_pd(e1, _mm512_mul_pd(_mm512_set1_pd(uc), mm)),
                            _mm512_set1_pd(etac)),
              up);
          tm[r] = mm;
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    double v[8], e[8];
    _mm512_storeu_pd(v, tot[r]);
    _mm512_storeu_pd(e, te[r]);
    const __mmask8 bad = static_cast<__mmask8>(_mm512_cmp_pd_mask(lo[r], min_normal32, _CMP_LT_OQ) |
                                               _mm512_cmp_pd_mask(hi[r], overflow32, _CMP_GE_OQ));
    for (int w = 0; w < 8; ++w) {
      const size_t idx = size_t(i0 + r) * n + j0 + w;
      const float f = static_cast<float>(v[w]);
      if (((bad >> w) & 1) != 0 || !std::isfinite(f)) {
        (*in.redo)[idx] = 1;
      } else {
        in.d[idx] = std::bit_cast<uint32_t>(f);
        if constexpr (kBound) in.bounds[idx] = e[w];
      }
    }
  }
}

// float32 x 8 -> double x 8 (the zero-masked form: GCC 12 warns that the plain form's undefined
// source is used uninitialized).
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma"))) inline __m512d WidenPs(
    __m256 x) {
  return _mm512_maskz_cvtps_pd(static_cast<__mmask8>(0xFF), x);
}

// fast_bound_lanes.inc's lane traits in AVX-512: 8 doubles per register.
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
};
#include "accumulation/fast_bound_lanes.inc"
#undef FPCONFORM_LANES_TARGET

#pragma GCC diagnostic pop
#endif

}  // namespace
}  // namespace fpconform::fast_internal
#if defined(__x86_64__) && defined(__clang__)
#pragma clang attribute pop
#elif defined(__x86_64__)
#pragma GCC pop_options
#endif

namespace fpconform::fast_internal {

void FusedTileAvx512Tile(int rows, bool floor_align, bool bound, const MatIn& in, int i0,
                         int j0) {
#if defined(__x86_64__)
  if (bound) {
    if (rows == 2) {
      floor_align ? FusedTileAvx512<2, true, true>(in, i0, j0)
                  : FusedTileAvx512<2, false, true>(in, i0, j0);
    } else {
      floor_align ? FusedTileAvx512<1, true, true>(in, i0, j0)
                  : FusedTileAvx512<1, false, true>(in, i0, j0);
    }
  } else if (rows == 4) {
    floor_align ? FusedTileAvx512<4, true>(in, i0, j0) : FusedTileAvx512<4, false>(in, i0, j0);
  } else {
    floor_align ? FusedTileAvx512<1, true>(in, i0, j0) : FusedTileAvx512<1, false>(in, i0, j0);
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
