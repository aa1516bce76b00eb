// The attention models' emulation hot loops (attention_model_kernels.h).
#include "composite/attention_model_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "base/isa.h"
#include "oracles/certified_double.h"

namespace fpconform::composite::attention_model_internal {
namespace {


typedef double V8 __attribute__((vector_size(64)));
typedef int64_t L8 __attribute__((vector_size(64)));

typedef double V4 __attribute__((vector_size(32)));
typedef int64_t L4 __attribute__((vector_size(32)));

// One step of kN vectors of keys (2 kN independent sums: enough to hide the adds' latency; V8 x 4
// on AVX-512, V4 x 4 elsewhere, within the register file). With `same` (qf == q and kdt == kt:
// the model folds no scale) the dot's product is |q k|'s product, so it is formed once.
template <typename V, typename L, int kN, bool kSame>
[[gnu::always_inline]] inline void RowDotsStep(const DotArgs& a, const double* qf, const double* q, double* dot,
                                               double* ab, int64_t j) {
  constexpr int kLanes = static_cast<int>(sizeof(V) / sizeof(double));
  L magnitude;
  for (int x = 0; x < kLanes; ++x) magnitude[x] = INT64_MAX;
  V s[kN] = {}, t[kN] = {};
  for (int64_t c = 0; c < a.d; ++c) {
    const double f = qf[c], g = q[c];
    V fv, gv;
    for (int x = 0; x < kLanes; ++x) {
      fv[x] = f;
      gv[x] = g;
    }
    const double* kd = a.kdt + c * a.sk + j;
    const double* kk = a.kt + c * a.sk + j;
    for (int u = 0; u < kN; ++u) {
      V x, y;
      std::memcpy(&x, kk + kLanes * u, sizeof x);
      y = gv * x;
      t[u] += reinterpret_cast<V>(reinterpret_cast<L>(y) & magnitude);
      if constexpr (kSame) {
        s[u] += y;
      } else {
        std::memcpy(&x, kd + kLanes * u, sizeof x);
        s[u] += fv * x;
      }
    }
  }
  for (int u = 0; u < kN; ++u) {
    std::memcpy(dot + j + kLanes * u, &s[u], sizeof s[u]);
    std::memcpy(ab + j + kLanes * u, &t[u], sizeof t[u]);
  }
}

template <typename V, typename L>
[[gnu::always_inline]] inline void RowDotsBody(const DotArgs& a) {
  constexpr int kN = 4;
  constexpr int64_t kTile = 256, kWide = kN * static_cast<int64_t>(sizeof(V) / sizeof(double));
  for (int64_t j0 = 0; j0 < a.jend; j0 += kTile) {  // A tile of K stays in cache for the rows.
    const int64_t j1 = std::min(a.jend, j0 + kTile);
    for (int64_t r = 0; r < a.nr; ++r) {
      const double* qf = a.qf + r * a.d;
      const double* q = a.q + r * a.d;
      double* dot = a.dot + r * a.sk;
      double* ab = a.ab + r * a.sk;
      const bool same = a.kdt == a.kt && std::memcmp(qf, q, static_cast<size_t>(a.d) * sizeof(double)) == 0;
      const int64_t kc = a.kc == 0 ? a.sk : a.kc;
      int64_t j = j0;
      for (; a.kj == 1 && kc == a.sk && j + kWide <= j1; j += kWide) {
        if (same) {
          RowDotsStep<V, L, kN, true>(a, qf, q, dot, ab, j);
        } else {
          RowDotsStep<V, L, kN, false>(a, qf, q, dot, ab, j);
        }
      }
      for (; j < j1; ++j) {
        double d = 0, b = 0;
        for (int64_t c = 0; c < a.d; ++c) {
          d += qf[c] * a.kdt[c * kc + j * a.kj];
          b += std::fabs(q[c] * a.kt[c * kc + j * a.kj]);
        }
        dot[j] = d;
        ab[j] = b;
      }
    }
  }
}

void RowDotsPortable(const DotArgs& a) { RowDotsBody<V4, L4>(a); }
#if defined(__x86_64__)
__attribute__((target("avx2"))) void RowDotsAvx2(const DotArgs& a) { RowDotsBody<V4, L4>(a); }
#if defined(__clang__)
__attribute__((target("avx512f,avx512dq"))) void RowDotsAvx512(const DotArgs& a) { RowDotsBody<V8, L8>(a); }
#else
__attribute__((target("avx512f,avx512dq,prefer-vector-width=512"))) void RowDotsAvx512(const DotArgs& a) {
  RowDotsBody<V8, L8>(a);
}
#endif
#endif


typedef float F8 __attribute__((vector_size(32)));
typedef float F4 __attribute__((vector_size(16)));

// The scalar loop (the portable level, the binary64 V path, and the columns after the last whole
// register chunk): columns [c0, dv).
template <typename T>
[[gnu::always_inline]] inline void RowNumsScalar(const NumArgs& a, const T* v, size_t c0) {
  for (size_t x = 0; x < a.n; ++x) {
    const double w = a.w[x];
    if (w == 0) continue;
    const T* __restrict vr = v + static_cast<size_t>(a.keys[x]) * a.dv;
    float* __restrict nums = a.nums;
    for (size_t c = c0; c < a.dv; ++c) {
      nums[c] = static_cast<float>(static_cast<double>(nums[c]) + w * static_cast<double>(vr[c]));
    }
  }
}

void RowNumsPortable(const NumArgs& a) {
  if (a.vf != nullptr) {
    RowNumsScalar(a, a.vf, 0);
  } else {
    RowNumsScalar(a, a.v, 0);
  }
}

#if defined(__x86_64__)
// Float32 V (vf): chunks of kC x 8 (AVX-512) or kC x 4 (AVX2) columns held in registers as float32
// across the keys, each step fl32(float64(acc) + w * float64(V)) as the scalar loop (cvtps2pd
// exact, vmulpd and vaddpd separate, vcvtpd2ps rounds to nearest even under the default MXCSR):
// no load and store of the sums per key. Then the rest of the columns by the scalar loop.
template <int kC>
[[gnu::always_inline]] __attribute__((target("avx512f,avx512dq"))) inline size_t RowNumsChunks512(const NumArgs& a,
                                                                                                 size_t c0) {
  constexpr size_t kWide = 8 * kC;
  for (; c0 + kWide <= a.dv; c0 += kWide) {
    __m256 acc[kC];
    for (int u = 0; u < kC; ++u) acc[u] = _mm256_loadu_ps(a.nums + c0 + 8 * u);
    for (size_t x = 0; x < a.n; ++x) {
      const double w = a.w[x];
      if (w == 0) continue;
      const float* vr = a.vf + static_cast<size_t>(a.keys[x]) * a.dv + c0;
      const __m512d wv = _mm512_set1_pd(w);
      for (int u = 0; u < kC; ++u) {
        // The zero-masking forms with a full mask: the unmasked ones trip GCC 12's
        // -Wmaybe-uninitialized on their undefined pass-through operand.
        const __m512d vd = _mm512_maskz_cvtps_pd(0xFF, _mm256_loadu_ps(vr + 8 * u));
        const __m512d t = _mm512_add_pd(_mm512_maskz_cvtps_pd(0xFF, acc[u]), _mm512_mul_pd(wv, vd));
        acc[u] = _mm512_maskz_cvtpd_ps(0xFF, t);
      }
    }
    for (int u = 0; u < kC; ++u) _mm256_storeu_ps(a.nums + c0 + 8 * u, acc[u]);
  }
  return c0;
}

template <int kC>
[[gnu::always_inline]] __attribute__((target("avx2"))) inline size_t RowNumsChunks256(const NumArgs& a, size_t c0) {
  constexpr size_t kWide = 4 * kC;
  for (; c0 + kWide <= a.dv; c0 += kWide) {
    __m128 acc[kC];
    for (int u = 0; u < kC; ++u) acc[u] = _mm_loadu_ps(a.nums + c0 + 4 * u);
    for (size_t x = 0; x < a.n; ++x) {
      const double w = a.w[x];
      if (w == 0) continue;
      const float* vr = a.vf + static_cast<size_t>(a.keys[x]) * a.dv + c0;
      const __m256d wv = _mm256_set1_pd(w);
      for (int u = 0; u < kC; ++u) {
        const __m256d t = _mm256_add_pd(_mm256_cvtps_pd(acc[u]), _mm256_mul_pd(wv, _mm256_cvtps_pd(_mm_loadu_ps(vr + 4 * u))));
        acc[u] = _mm256_cvtpd_ps(t);
      }
    }
    for (int u = 0; u < kC; ++u) _mm_storeu_ps(a.nums + c0 + 4 * u, acc[u]);
  }
  return c0;
}

__attribute__((target("avx2"))) void RowNumsAvx2(const NumArgs& a) {
  if (a.vf == nullptr) return RowNumsScalar(a, a.v, 0);
  size_t c0 = RowNumsChunks256<8>(a, 0);
  c0 = RowNumsChunks256<1>(a, c0);
  RowNumsScalar(a, a.vf, c0);
}

// bf16_products (NumArgs): 16 columns per float32 FMA, kC vectors held in registers across the keys.
template <int kC>
[[gnu::always_inline]] __attribute__((target("avx512f,avx512dq"))) inline size_t RowNumsFma512(const NumArgs& a,
                                                                                              size_t c0) {
  constexpr size_t kWide = 16 * kC;
  for (; c0 + kWide <= a.dv; c0 += kWide) {
    __m512 acc[kC];
    for (int u = 0; u < kC; ++u) acc[u] = _mm512_loadu_ps(a.nums + c0 + 16 * u);
    for (size_t x = 0; x < a.n; ++x) {
      const double w = a.w[x];
      if (w == 0) continue;
      const float* vr = a.vf + static_cast<size_t>(a.keys[x]) * a.dv + c0;
      const __m512 wv = _mm512_set1_ps(static_cast<float>(w));  // Exact: a bfloat16 value.
      for (int u = 0; u < kC; ++u) acc[u] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(vr + 16 * u), acc[u]);
    }
    for (int u = 0; u < kC; ++u) _mm512_storeu_ps(a.nums + c0 + 16 * u, acc[u]);
  }
  return c0;
}

__attribute__((target("avx512f,avx512dq"))) void RowNumsAvx512(const NumArgs& a) {
  if (a.vf == nullptr) return RowNumsScalar(a, a.v, 0);
  if (a.bf16_products) {
    size_t c0 = RowNumsFma512<8>(a, 0);
    c0 = RowNumsFma512<1>(a, c0);
    return RowNumsScalar(a, a.vf, c0);
  }
  size_t c0 = RowNumsChunks512<16>(a, 0);
  c0 = RowNumsChunks512<8>(a, c0);
  c0 = RowNumsChunks512<1>(a, c0);
  RowNumsScalar(a, a.vf, c0);
}
#endif

// ExpWeights' vector step: out = ExpWeight(in) for kLanes lanes, every one in [-700, 700]
// (ExpEv's value path, certified_double.cc, operation for operation, then fl32).
template <typename V, typename L, typename F>
[[gnu::always_inline]] inline void ExpStep(const certified::ExpConstants& c, const double* in, double* out) {
  V x;
  std::memcpy(&x, in, sizeof x);
  constexpr int kLanes = static_cast<int>(sizeof(V) / sizeof(double));
  V t = x * c.inv;
  const V kd = (t + 0x1.8p52) - 0x1.8p52;  // nearbyint(t): |t| <= 700 * 92.4 < 2^51.
  V r = x - kd * c.c1;
  r = r - kd * c.c2;
  V p = r * c.coef[7] + c.coef[6];
  for (int i = 5; i >= 0; --i) p = p * r + c.coef[i];
  const L k = __builtin_convertvector(kd, L);
  const L j = k & 63;
  const L m = (k - j) >> 6;  // (k - j) / 64, exact: a multiple of 64.
  V tb;
  for (int l = 0; l < kLanes; ++l) tb[l] = c.table[j[l]];
  const V s = tb * p;
  const L eb = (m + 1023) << 52;  // Pow2(m), m >= -1011: a normal double.
  const V y = __builtin_convertvector(__builtin_convertvector(s * reinterpret_cast<V>(eb), F), V);
  std::memcpy(out, &y, sizeof y);
}

template <typename V, typename L, typename F>
[[gnu::always_inline]] inline void ExpWeightsBody(const double* arg, double* w, size_t n) {
  constexpr size_t kLanes = sizeof(V) / sizeof(double);
  const certified::ExpConstants c = certified::ExpReduction();
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    V x;
    std::memcpy(&x, arg + i, sizeof x);
    bool in = true;
    for (size_t l = 0; l < kLanes; ++l) in = in && std::fabs(x[l]) <= 700.0;
    if (!in) {
      for (size_t l = 0; l < kLanes; ++l) w[i + l] = ExpWeight(arg[i + l]);
      continue;
    }
    ExpStep<V, L, F>(c, arg + i, w + i);
  }
  for (; i < n; ++i) w[i] = ExpWeight(arg[i]);
}

void ExpWeightsPortable(const double* arg, double* w, size_t n) { ExpWeightsBody<V4, L4, F4>(arg, w, n); }
#if defined(__x86_64__)
__attribute__((target("avx2"))) void ExpWeightsAvx2(const double* arg, double* w, size_t n) {
  ExpWeightsBody<V4, L4, F4>(arg, w, n);
}
#if defined(__clang__)
__attribute__((target("avx512f,avx512dq"))) void ExpWeightsAvx512(const double* arg, double* w, size_t n) {
  ExpWeightsBody<V8, L8, F8>(arg, w, n);
}
#else
__attribute__((target("avx512f,avx512dq,prefer-vector-width=512"))) void ExpWeightsAvx512(const double* arg,
                                                                                         double* w, size_t n) {
  ExpWeightsBody<V8, L8, F8>(arg, w, n);
}
#endif
#endif

}  // namespace

double ExpWeight(double a) {
  if (a < -700) return 0.0;
  return static_cast<double>(static_cast<float>(certified::ExpEv(certified::Exact(a)).y));
}

void ExpWeights(const double* arg, double* w, size_t n) {
#if defined(__x86_64__)
  if (ActiveIsa() == Isa::kAvx512) return ExpWeightsAvx512(arg, w, n);
  if (ActiveIsa() != Isa::kPortable) return ExpWeightsAvx2(arg, w, n);
#endif
  ExpWeightsPortable(arg, w, n);
}


void RowNums(const NumArgs& a) {
#if defined(__x86_64__)
  if (ActiveIsa() == Isa::kAvx512) return RowNumsAvx512(a);
  if (ActiveIsa() != Isa::kPortable) return RowNumsAvx2(a);
#endif
  RowNumsPortable(a);
}

void RowDots(const DotArgs& a) {
#if defined(__x86_64__)
  if (ActiveIsa() == Isa::kAvx512) return RowDotsAvx512(a);
  if (ActiveIsa() != Isa::kPortable) return RowDotsAvx2(a);
#endif
  RowDotsPortable(a);
}


}  // namespace fpconform::composite::attention_model_internal
