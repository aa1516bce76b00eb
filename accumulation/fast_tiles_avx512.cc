// The fast matmul's AVX-512 tiles (ActiveIsa() kAvx512): FusedTileAvx in AVX-512, and the
// float32 host tile with bounds (HostTile<float, ..., true, ...> in AVX-512).
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
// GCC 12 reports a false -Wmaybe-uninitialized for the _mm512_undefined_pd() source of the
// unmasked AVX-512 intrinsics (every lane is written); silenced for this function only.
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
#endif
template <int R, bool kFloorAlign, bool kBound = false>
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma"))) void FusedTileAvx512(
    const MatIn& in, int i0, int j0) {
  const Plan& p = *in.p;
  const int n = in.n, k = in.k;
  const __m512d sign = _mm512_set1_pd(-0.0);
  const __m512d zero = _mm512_setzero_pd();
  const __m512d one = _mm512_set1_pd(1.0);
  const __m512d expmask = _mm512_castsi512_pd(_mm512_set1_epi64(0x7FF0000000000000ll));
  const __m512d min_normal32 = _mm512_set1_pd(0x1p-126);
  const __m512d overflow32 = _mm512_set1_pd(0x1p128);
  const __m512i scale_base = _mm512_set1_epi64(
      static_cast<long long>((uint64_t{1023 + 1023} + p.fraction_bits) << 52));
  const __m512d two_mf = _mm512_set1_pd(std::ldexp(1.0, -p.fraction_bits));
  const int cut = 52 - p.acc_fraction_bits;
  const __m128i cut_count = _mm_cvtsi32_si128(cut);
  const __m512i low_mask = _mm512_set1_epi64(static_cast<long long>((uint64_t{1} << cut) - 1));
  const __m512i half_m1 =
      _mm512_set1_epi64(static_cast<long long>((uint64_t{1} << (cut - 1)) - 1));
  const __m512i one_i = _mm512_set1_epi64(1);
  constexpr int kMode = kFloorAlign ? (_MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
                                    : (_MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  __m512d tot[R], tm[R], te[R];  // Value; bound data M and E (kBound).
  __mmask8 bad[R];
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
    te[r] = zero;
    bad[r] = 0;
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
      __m512d emax[R], emax1[R], scale[R], s[R], s1[R];
      for (int r = 0; r < R; ++r) {
        const __m512d e = _mm512_and_pd(acc[r], expmask);
        if (p.actual) {
          emax[r] = e;
        } else {
          const __mmask8 is_zero = _mm512_cmp_pd_mask(acc[r], zero, _CMP_EQ_OQ);
          emax[r] = _mm512_maskz_mov_pd(static_cast<__mmask8>(~is_zero),
                                        _mm512_mask_max_pd(e, 0xFF, e, min_normal32));
        }
        emax1[r] = zero;
      }
      // Even group offsets into emax, odd ones into emax1 (two chains; unrolled by two so the
      // arrays stay in registers).
      auto max_pass = [&](int t, __m512d (&dst)[R]) FPCONFORM_AVX512_LAMBDA {
        const double* brow = btile + size_t(t) * 16;
        for (int r = 0; r < R; ++r) {
          __m512d e;
          if (p.actual) {
            e = _mm512_and_pd(
                _mm512_mul_pd(_mm512_set1_pd(arow[r][t]), _mm512_loadu_pd(brow)), expmask);
          } else {
            e = _mm512_mul_pd(_mm512_set1_pd(apow[r][t]), _mm512_loadu_pd(brow + 8));
          }
          dst[r] = _mm512_mask_max_pd(dst[r], 0xFF, dst[r], e);
        }
      };
      int kk = g0;
      for (; kk + 1 < g1; kk += 2) {
        max_pass(kk, emax);
        max_pass(kk + 1, emax1);
      }
      if (kk < g1) max_pass(kk, emax);
      for (int r = 0; r < R; ++r) {
        emax[r] = _mm512_mask_max_pd(emax[r], 0xFF, emax[r], emax1[r]);
        const __mmask8 emax_zero = _mm512_cmp_pd_mask(emax[r], zero, _CMP_EQ_OQ);
        // 2^F / emax on the exponent field: bits(2^(F - e)) = bits(2^F) + bits(1) - bits(2^e).
        const __m512i q = _mm512_sub_epi64(scale_base, _mm512_castpd_si512(emax[r]));
        scale[r] = _mm512_mask_blend_pd(emax_zero, _mm512_castsi512_pd(q), one);
        s[r] = _mm512_roundscale_pd(_mm512_mul_pd(acc[r], scale[r]), kMode);
        s1[r] = sign;  // -0, the identity of IEEE addition: s + s1 keeps the sign of zeros.
      }
      auto sum_pass = [&](int t, __m512d (&dst)[R]) FPCONFORM_AVX512_LAMBDA {
        const __m512d b = _mm512_loadu_pd(btile + size_t(t) * 16);
        for (int r = 0; r < R; ++r) {
          const __m512d x =
              _mm512_mul_pd(_mm512_mul_pd(_mm512_set1_pd(arow[r][t]), b), scale[r]);
          dst[r] = _mm512_add_pd(dst[r], _mm512_roundscale_pd(x, kMode));
        }
      };
      for (kk = g0; kk + 1 < g1; kk += 2) {
        sum_pass(kk, s);
        sum_pass(kk + 1, s1);
      }
      if (kk < g1) sum_pass(kk, s);
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
        // RoundGroup, lane-wise.
        const __m512d sum = _mm512_add_pd(s[r], s1[r]);
        const __mmask8 s_zero = _mm512_cmp_pd_mask(sum, zero, _CMP_EQ_OQ);
        __m512i bits = _mm512_castpd_si512(_mm512_andnot_pd(sign, sum));
        if (p.rne) {
          const __m512i lsb = _mm512_and_si512(_mm512_srl_epi64(bits, cut_count), one_i);
          bits = _mm512_add_epi64(bits, _mm512_add_epi64(half_m1, lsb));
        }
        bits = _mm512_andnot_si512(low_mask, bits);
        __m512d v = _mm512_mul_pd(_mm512_castsi512_pd(bits), _mm512_mul_pd(emax[r], two_mf));
        const __mmask8 in_range = _mm512_cmp_pd_mask(v, min_normal32, _CMP_GE_OQ) &
                                  _mm512_cmp_pd_mask(v, overflow32, _CMP_LT_OQ);
        bad[r] = static_cast<__mmask8>(bad[r] | ~(in_range | s_zero));
        v = _mm512_or_pd(v, _mm512_and_pd(sum, sign));
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
    for (int w = 0; w < 8; ++w) {
      const size_t idx = size_t(i0 + r) * n + j0 + w;
      const float f = static_cast<float>(v[w]);
      if (((bad[r] >> w) & 1) != 0 || !std::isfinite(f)) {
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

// HostTile<float, kRound, true, R, 16> (fast_tiles_avx2.cc) in AVX-512: R rows x 16 columns of
// float32 chains (one FMA, or the rounded product then an add, per step) with the bound data of
// bound_step.h lane by lane, the same double results in the same order (an fma only where it
// fuses an exact product with its add, see the loop): per step
// M = Up(M + |x|), E = Up((1 + u) * (E + |used - x|) + u * M + eta), x the exact product of the
// original inputs, used the product the chain adds; per block end (blocked / promote chains) the
// combine's M and E. kSame: the inputs were not converted (a_orig == a, b_orig == b), so x comes
// from the used inputs; if the product is not rounded either, used == x, the term |used - x| is
// +0 and E + 0 == E (E >= 0), so it is left out, which changes no bit.
template <bool kRound, bool kSame, int R>
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma"))) void HostBoundTileAvx512(
    const MatIn& in, int i0, int j0) {
  const Plan& p = *in.p;
  const int n = in.n, k = in.k;
  const __m512d up = _mm512_set1_pd(kUp);
  const __m512d abs_mask = _mm512_castsi512_pd(_mm512_set1_epi64(0x7FFFFFFFFFFFFFFFll));
  const double u = p.u_acc, eta = p.eta_acc;
  const double uc = p.chain == ChainKind::kPromote ? p.u_prom : p.u_comb;
  const double etac = p.chain == ChainKind::kPromote ? p.eta_prom : p.eta_comb;
  const __m512d c1 = _mm512_set1_pd(1 + u), uu = _mm512_set1_pd(u), ee = _mm512_set1_pd(eta);
  const __m512d c1c = _mm512_set1_pd(1 + uc), ucv = _mm512_set1_pd(uc), eec = _mm512_set1_pd(etac);
  __m512 tot[R];
  __m512d tm[R][2], te[R][2];
  for (int r = 0; r < R; ++r) {
    alignas(64) float cv[16];
    for (int w = 0; w < 16; ++w) {
      const uint64_t cb = in.c ? in.c[size_t(i0 + r) * n + j0 + w] : 0;
      cv[w] = std::bit_cast<float>(static_cast<uint32_t>(cb));
    }
    tot[r] = _mm512_load_ps(cv);
    tm[r][0] = _mm512_and_pd(WidenPs(_mm256_load_ps(cv)), abs_mask);
    tm[r][1] = _mm512_and_pd(WidenPs(_mm256_load_ps(cv + 8)), abs_mask);
    te[r][0] = te[r][1] = _mm512_setzero_pd();
  }
  const bool seq = p.chain == ChainKind::kSequential;
  const int chunk = seq ? std::max(k, 1) : p.chunk;
  for (int k0 = 0, k1 = 0; k0 < k; k0 = k1) {
    k1 = ChunkEnd(p, chunk, k0, k);
    __m512 acc[R];
    __m512d am[R][2], ae[R][2];
    for (int r = 0; r < R; ++r) {
      acc[r] = seq ? tot[r] : _mm512_setzero_ps();
      for (int h = 0; h < 2; ++h) {
        am[r][h] = seq ? tm[r][h] : _mm512_setzero_pd();
        ae[r][h] = seq ? te[r][h] : _mm512_setzero_pd();
      }
    }
    for (int kk = k0; kk < k1; ++kk) {
      const __m512 bu = _mm512_loadu_ps(in.b + size_t(kk) * n + j0);
      __m512d bo[2];
      if constexpr (kSame) {
        bo[0] = WidenPs(_mm512_castps512_ps256(bu));
        bo[1] = WidenPs(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(bu), 1)));
      } else {
        const __m512 bof = _mm512_loadu_ps(in.bo + size_t(kk) * n + j0);
        bo[0] = WidenPs(_mm512_castps512_ps256(bof));
        bo[1] = WidenPs(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(bof), 1)));
      }
      const __m512d bo_abs[2] = {_mm512_and_pd(bo[0], abs_mask), _mm512_and_pd(bo[1], abs_mask)};
      __m512d bud[2];
      if constexpr (!kSame && !kRound) {
        bud[0] = WidenPs(_mm512_castps512_ps256(bu));
        bud[1] = WidenPs(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(bu), 1)));
      }
      for (int r = 0; r < R; ++r) {
        const float a_used = in.a[size_t(i0 + r) * k + kk];
        const __m512 av = _mm512_set1_ps(a_used);
        __m512 prod;
        if constexpr (kRound) {
          prod = _mm512_mul_ps(av, bu);
          acc[r] = _mm512_add_ps(acc[r], prod);
        } else {
          acc[r] = _mm512_fmadd_ps(av, bu, acc[r]);
        }
        const double a_orig = static_cast<double>(in.ao[size_t(i0 + r) * k + kk]);
        const __m512d ao = _mm512_set1_pd(a_orig);
        const __m512d ao_abs = _mm512_set1_pd(std::fabs(a_orig));
        for (int h = 0; h < 2; ++h) {
          // x = a_orig * b_orig is exact in double, so M + |x| is one fma of the magnitudes and
          // |used - x| = |fl(x - used)| one fms (round to nearest is odd-symmetric); u * M is
          // exact too (u a power of two, M 0 or >= 2^-298), so (1 + u) e + u M is one fma.
          // Each gives the bits of bound_step.h's separate operations.
          const __m512d mm = _mm512_mul_pd(_mm512_fmadd_pd(ao_abs, bo_abs[h], am[r][h]), up);
          am[r][h] = mm;
          __m512d e_in = ae[r][h];
          if constexpr (kRound) {
            const __m256 half = h == 0 ? _mm512_castps512_ps256(prod)
                                       : _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(prod), 1));
            const __m512d used = WidenPs(half);
            e_in = _mm512_add_pd(e_in, _mm512_and_pd(_mm512_fmsub_pd(ao, bo[h], used), abs_mask));
          } else if constexpr (!kSame) {
            const __m512d used = _mm512_mul_pd(_mm512_set1_pd(static_cast<double>(a_used)), bud[h]);
            e_in = _mm512_add_pd(e_in, _mm512_and_pd(_mm512_fmsub_pd(ao, bo[h], used), abs_mask));
          }
          ae[r][h] = _mm512_mul_pd(
              _mm512_add_pd(_mm512_fmadd_pd(uu, mm, _mm512_mul_pd(c1, e_in)), ee), up);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      if (seq) {
        tot[r] = acc[r];
        for (int h = 0; h < 2; ++h) {
          tm[r][h] = am[r][h];
          te[r][h] = ae[r][h];
        }
      } else {
        tot[r] = _mm512_add_ps(tot[r], acc[r]);
        for (int h = 0; h < 2; ++h) {
          const __m512d mm = _mm512_mul_pd(_mm512_add_pd(tm[r][h], am[r][h]), up);
          const __m512d e_in = _mm512_add_pd(te[r][h], ae[r][h]);
          te[r][h] = _mm512_mul_pd(
              _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(c1c, e_in), _mm512_mul_pd(ucv, mm)), eec), up);
          tm[r][h] = mm;
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    alignas(64) float v[16];
    alignas(64) double e[16];
    _mm512_store_ps(v, tot[r]);
    _mm512_store_pd(e, te[r][0]);
    _mm512_store_pd(e + 8, te[r][1]);
    StoreRow32(in, i0 + r, j0, 16, v, e);
  }
}

// fast_tiles_avx2.cc's BoundStepAvx in AVX-512: one adder step's bound data on R rows x 16
// float32 lanes, 8 lanes of double per register instead of 4, the same double operations in the
// same order lane by lane: m[l] = Up(m0[l] + |x|), e[l] = Up((1 + u) * (e0[l] + |used - x|) +
// u * m[l] + eta). m0, e0 may be m, e (each lane group is read before it is written).
template <bool kRound, int R>
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma"))) void BoundStepLanesAvx512(
    double* m, double* e, const double* m0, const double* e0, const float* a_orig,
    const float* a_used, const float* b_used, const float* b_orig, double u, double eta) {
  const __m512d c1 = _mm512_set1_pd(1 + u), uu = _mm512_set1_pd(u), ee = _mm512_set1_pd(eta);
  const __m512d up = _mm512_set1_pd(kUp);
  const __m512d abs_mask = _mm512_castsi512_pd(_mm512_set1_epi64(0x7FFFFFFFFFFFFFFFll));
  __m256 buf[2];
  __m512d bu[2], bo[2];
  for (int h = 0; h < 2; ++h) {
    buf[h] = b_used != nullptr ? _mm256_loadu_ps(b_used + 8 * h) : _mm256_setzero_ps();
    bu[h] = WidenPs(buf[h]);
    bo[h] = b_orig != nullptr ? WidenPs(_mm256_loadu_ps(b_orig + 8 * h)) : _mm512_setzero_pd();
  }
  for (int r = 0; r < R; ++r) {
    const __m512d ao = _mm512_set1_pd(a_orig[r]);
    const __m512d au = _mm512_set1_pd(a_used[r]);
    for (int h = 0; h < 2; ++h) {
      const int l = r * 16 + 8 * h;
      const __m512d x = _mm512_mul_pd(ao, bo[h]);
      __m512d used;
      if constexpr (kRound) {
        used = WidenPs(_mm256_mul_ps(_mm256_set1_ps(a_used[r]), buf[h]));
      } else {
        used = _mm512_mul_pd(au, bu[h]);
      }
      const __m512d mi = _mm512_and_pd(x, abs_mask);
      const __m512d ei = _mm512_and_pd(_mm512_sub_pd(used, x), abs_mask);
      const __m512d mm = _mm512_mul_pd(_mm512_add_pd(_mm512_loadu_pd(m0 + l), mi), up);
      _mm512_storeu_pd(m + l, mm);
      const __m512d t = _mm512_mul_pd(c1, _mm512_add_pd(_mm512_loadu_pd(e0 + l), ei));
      _mm512_storeu_pd(
          e + l, _mm512_mul_pd(_mm512_add_pd(_mm512_add_pd(t, _mm512_mul_pd(uu, mm)), ee), up));
    }
  }
}

// A combine's bound data on `lanes` (a multiple of 8) lanes, 8 per register: bound_step.h's
// m = Up(xm + ym), e = BoundStep(u, eta, xe + ye, m) lane by lane. m, e may be xm, xe.
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma"))) void CombineLanesAvx512(
    int lanes, double* m, double* e, const double* xm, const double* xe, const double* ym,
    const double* ye, double u, double eta) {
  const __m512d c1 = _mm512_set1_pd(1 + u), uu = _mm512_set1_pd(u), ee = _mm512_set1_pd(eta);
  const __m512d up = _mm512_set1_pd(kUp);
  for (int l = 0; l < lanes; l += 8) {
    const __m512d mm =
        _mm512_mul_pd(_mm512_add_pd(_mm512_loadu_pd(xm + l), _mm512_loadu_pd(ym + l)), up);
    const __m512d t =
        _mm512_mul_pd(c1, _mm512_add_pd(_mm512_loadu_pd(xe + l), _mm512_loadu_pd(ye + l)));
    _mm512_storeu_pd(m + l, mm);
    _mm512_storeu_pd(
        e + l, _mm512_mul_pd(_mm512_add_pd(_mm512_add_pd(t, _mm512_mul_pd(uu, mm)), ee), up));
  }
}

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
    BoundStepLanesAvx512<decltype(round_tag)::value, decltype(rows_tag)::value>(
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
  CombineLanesAvx512(lanes, m, e, xm, xe, ym, ye, u, eta);
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
      HostBoundTileAvx512<kRound, kSame, 4>(in, i0, j0);
    } else {
      HostBoundTileAvx512<kRound, kSame, 1>(in, i0, j0);
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
