// The attention oracle's hot loops (attention_kernels.h).
#include "oracles/attention_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/isa.h"
#include "oracles/certified_double.h"

namespace fpconform::attention_internal {
namespace {



[[gnu::always_inline]] inline void DotsBody(const HotArgs& a) {
  double tmp[kKeyTile];
  for (int64_t c0 = 0; c0 < a.d; c0 += kDotBlock) {
    const int64_t c1 = std::min(a.d, c0 + kDotBlock);
    for (int64_t r = 0; r < a.nr; ++r) {
      if (!a.ok[r]) continue;
      for (int64_t j = a.j0; j < a.j1; ++j) tmp[j - a.j0] = 0;
      for (int64_t c = c0; c < c1; ++c) {
        const double* __restrict kt = a.kt + c * a.sk + a.j0;
        const double qv = a.q[r * a.d + c];
        for (int64_t j = 0; j < a.j1 - a.j0; ++j) tmp[j] += qv * kt[j];
      }
      double* __restrict acc = a.acc + r * a.sk + a.j0;
      for (int64_t j = 0; j < a.j1 - a.j0; ++j) acc[j] += tmp[j];
    }
  }
}

// Four doubles (GCC vector extension: elementwise IEEE operations, two SSE2 halves on the
// portable level, one AVX register on AVX2).
typedef double V4 __attribute__((vector_size(32)));


[[gnu::always_inline]] inline void PvBody(const HotArgs& a) {
  constexpr int64_t kChunk = 8;
  for (int64_t j0 = 0; j0 < a.kend; j0 += kPvTile) {
    const int64_t j1 = std::min(a.kend, j0 + kPvTile);
    for (int64_t r = 0; r < a.nr; ++r) {
      if (!a.ok[r]) continue;
      const double* e = a.acc + r * a.sk;
      double* nm = a.num + r * a.dv;
      double* ab = a.abs + r * a.dv;
      int64_t c0 = 0;
      for (; c0 < a.dv; c0 += kChunk) {
        const int64_t width = std::min(kChunk, a.dv - c0);
        if (width == kChunk) {
          V4 n0 = {0, 0, 0, 0}, n1 = n0, b0 = n0, b1 = n0, x;  // memcpy: no alignment assumed.
          for (int64_t j = j0; j < j1; ++j) {
            const double ej = e[j];
            if (ej == 0) continue;  // Masked keys: their V is never read.
            const V4 ev = {ej, ej, ej, ej};
            const double* vrow = a.v + j * a.dv + c0;
            const double* arow = a.vabs + j * a.dv + c0;
            std::memcpy(&x, vrow, sizeof x);
            n0 += ev * x;
            std::memcpy(&x, vrow + 4, sizeof x);
            n1 += ev * x;
            std::memcpy(&x, arow, sizeof x);
            b0 += ev * x;
            std::memcpy(&x, arow + 4, sizeof x);
            b1 += ev * x;
          }
          double t[16];
          std::memcpy(t, &n0, sizeof n0);
          std::memcpy(t + 4, &n1, sizeof n1);
          std::memcpy(t + 8, &b0, sizeof b0);
          std::memcpy(t + 12, &b1, sizeof b1);
          for (int64_t c = 0; c < kChunk; ++c) {
            nm[c0 + c] += t[c];
            ab[c0 + c] += t[8 + c];
          }
        } else {  // The last columns.
          double tn[kChunk] = {}, tb[kChunk] = {};
          for (int64_t j = j0; j < j1; ++j) {
            const double ej = e[j];
            if (ej == 0) continue;
            for (int64_t c = 0; c < width; ++c) {
              tn[c] += ej * a.v[j * a.dv + c0 + c];
              tb[c] += ej * a.vabs[j * a.dv + c0 + c];
            }
          }
          for (int64_t c = 0; c < width; ++c) {
            nm[c0 + c] += tn[c];
            ab[c0 + c] += tb[c];
          }
        }
      }
    }
  }
}

void DotsPortable(const HotArgs& a) { DotsBody(a); }
void PvPortable(const HotArgs& a) { PvBody(a); }
#if defined(__x86_64__)
__attribute__((target("avx2"))) void DotsAvx2(const HotArgs& a) { DotsBody(a); }
__attribute__((target("avx2"))) void PvAvx2(const HotArgs& a) { PvBody(a); }

// The AVX-512 forms: the same operations per element in the same order, held in registers.
// GCC's tuning may prefer 256-bit vectors even where AVX-512 is enabled; ask for 512 (GCC only).
#if defined(__clang__)
#define FPCONFORM_ATTENTION_AVX512 "avx512f,avx512dq"
#else
#define FPCONFORM_ATTENTION_AVX512 "avx512f,avx512dq,prefer-vector-width=512"
#endif
typedef double V8 __attribute__((vector_size(64)));
typedef int64_t L8 __attribute__((vector_size(64)));

// DotsBody's sums per element: for each block of kDotBlock columns (in order) a sum from zero
// over the block's columns in order, added to acc; here a row's 32 keys stay in registers for
// all the blocks (acc[j] starts at +0 as FastBlock leaves it, and +0 + x is what DotsBody adds
// first).
__attribute__((target(FPCONFORM_ATTENTION_AVX512))) void DotsAvx512(const HotArgs& a) {
  constexpr int64_t kWide = 32;
  for (int64_t r = 0; r < a.nr; ++r) {
    if (!a.ok[r]) continue;
    const double* q = a.q + r * a.d;
    double* acc = a.acc + r * a.sk;
    int64_t j = a.j0;
    for (; j + kWide <= a.j1; j += kWide) {
      V8 s0, s1, s2, s3;
      std::memcpy(&s0, acc + j, sizeof s0);
      std::memcpy(&s1, acc + j + 8, sizeof s1);
      std::memcpy(&s2, acc + j + 16, sizeof s2);
      std::memcpy(&s3, acc + j + 24, sizeof s3);
      for (int64_t c0 = 0; c0 < a.d; c0 += kDotBlock) {
        const int64_t c1 = std::min(a.d, c0 + kDotBlock);
        V8 t0 = {}, t1 = {}, t2 = {}, t3 = {}, x;
        for (int64_t c = c0; c < c1; ++c) {
          const double qc = q[c];
          const V8 qv = {qc, qc, qc, qc, qc, qc, qc, qc};
          const double* kt = a.kt + c * a.sk + j;
          std::memcpy(&x, kt, sizeof x);
          t0 += qv * x;
          std::memcpy(&x, kt + 8, sizeof x);
          t1 += qv * x;
          std::memcpy(&x, kt + 16, sizeof x);
          t2 += qv * x;
          std::memcpy(&x, kt + 24, sizeof x);
          t3 += qv * x;
        }
        s0 += t0;
        s1 += t1;
        s2 += t2;
        s3 += t3;
      }
      std::memcpy(acc + j, &s0, sizeof s0);
      std::memcpy(acc + j + 8, &s1, sizeof s1);
      std::memcpy(acc + j + 16, &s2, sizeof s2);
      std::memcpy(acc + j + 24, &s3, sizeof s3);
    }
    for (; j < a.j1; ++j) {  // The last keys of the tile.
      for (int64_t c0 = 0; c0 < a.d; c0 += kDotBlock) {
        const int64_t c1 = std::min(a.d, c0 + kDotBlock);
        double t = 0;
        for (int64_t c = c0; c < c1; ++c) t += q[c] * a.kt[c * a.sk + j];
        acc[j] += t;
      }
    }
  }
}

// PvBody's sums per element (each tile's terms from zero in key order, then added), 32 columns
// at a time (8 independent sums in registers), |V| as V with the sign bit cleared (= vabs).
__attribute__((target(FPCONFORM_ATTENTION_AVX512))) void PvAvx512(const HotArgs& a) {
  constexpr int64_t kWide = 32;
  const L8 magnitude = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
  for (int64_t j0 = 0; j0 < a.kend; j0 += kPvTile) {
    const int64_t j1 = std::min(a.kend, j0 + kPvTile);
    for (int64_t r = 0; r < a.nr; ++r) {
      if (!a.ok[r]) continue;
      const double* e = a.acc + r * a.sk;
      double* nm = a.num + r * a.dv;
      double* ab = a.abs + r * a.dv;
      int64_t c0 = 0;
      for (; c0 + kWide <= a.dv; c0 += kWide) {
        V8 n0 = {}, n1 = {}, n2 = {}, n3 = {}, b0 = {}, b1 = {}, b2 = {}, b3 = {}, x, y;
        for (int64_t j = j0; j < j1; ++j) {
          const double ej = e[j];
          if (ej == 0) continue;  // Masked keys: their V is never read.
          const V8 ev = {ej, ej, ej, ej, ej, ej, ej, ej};
          const double* vrow = a.v + j * a.dv + c0;
          std::memcpy(&x, vrow, sizeof x);
          y = reinterpret_cast<V8>(reinterpret_cast<L8>(x) & magnitude);
          n0 += ev * x;
          b0 += ev * y;
          std::memcpy(&x, vrow + 8, sizeof x);
          y = reinterpret_cast<V8>(reinterpret_cast<L8>(x) & magnitude);
          n1 += ev * x;
          b1 += ev * y;
          std::memcpy(&x, vrow + 16, sizeof x);
          y = reinterpret_cast<V8>(reinterpret_cast<L8>(x) & magnitude);
          n2 += ev * x;
          b2 += ev * y;
          std::memcpy(&x, vrow + 24, sizeof x);
          y = reinterpret_cast<V8>(reinterpret_cast<L8>(x) & magnitude);
          n3 += ev * x;
          b3 += ev * y;
        }
        double t[2 * kWide];
        std::memcpy(t, &n0, sizeof n0);
        std::memcpy(t + 8, &n1, sizeof n1);
        std::memcpy(t + 16, &n2, sizeof n2);
        std::memcpy(t + 24, &n3, sizeof n3);
        std::memcpy(t + 32, &b0, sizeof b0);
        std::memcpy(t + 40, &b1, sizeof b1);
        std::memcpy(t + 48, &b2, sizeof b2);
        std::memcpy(t + 56, &b3, sizeof b3);
        for (int64_t c = 0; c < kWide; ++c) {
          nm[c0 + c] += t[c];
          ab[c0 + c] += t[kWide + c];
        }
      }
      for (; c0 < a.dv; ++c0) {  // The last columns, one at a time.
        double tn = 0, tb = 0;
        for (int64_t j = j0; j < j1; ++j) {
          const double ej = e[j];
          if (ej == 0) continue;
          tn += ej * a.v[j * a.dv + c0];
          tb += ej * a.vabs[j * a.dv + c0];
        }
        nm[c0] += tn;
        ab[c0] += tb;
      }
    }
  }
}
#endif

// ExpEvs' vector step over kLanes lanes (V: doubles, L: int64): ExpEv's operations lane for lane;
// false (nothing written) where a lane could be refused.
template <typename V, typename L>
[[gnu::always_inline]] inline bool ExpEvStep(const certified::ExpConstants& c, const double* yi, const double* ei,
                                             double* oy, double* oe) {
  constexpr int kLanes = static_cast<int>(sizeof(V) / sizeof(double));
  constexpr double kU = certified::kU;
  V ay, ae;
  std::memcpy(&ay, yi, sizeof ay);
  std::memcpy(&ae, ei, sizeof ae);
  bool in = true;
  for (int l = 0; l < kLanes; ++l) in = in && std::fabs(ay[l]) <= 700.0 && ae[l] <= 0x1p-20;
  if (!in) return false;
  L mag;
  for (int l = 0; l < kLanes; ++l) mag[l] = INT64_MAX;
// |x| of a vector by its sign bit (a lambda returning a vector would be a call with a vector ABI).
#define FPCONFORM_ABS(x) reinterpret_cast<V>(reinterpret_cast<L>(x) & mag)
  const V kd = (ay * c.inv + 0x1.8p52) - 0x1.8p52;  // nearbyint: |y inv| <= 700 * 92.4 < 2^51.
  // r = Sub(a, Exact(kd c1)); r = Sub(r, {kd c2, |kd| c2err + kU |kd c2|}).
  V ry = ay - kd * c.c1;
  V re = (ae + 0.0) + kU * FPCONFORM_ABS(ry);
  const V kc2 = kd * c.c2;
  const V r2y = ry - kc2;
  const V r2e = (re + (FPCONFORM_ABS(kd) * c.c2err + kU * FPCONFORM_ABS(kc2))) + kU * FPCONFORM_ABS(r2y);
  const V rmax = FPCONFORM_ABS(r2y) + r2e;
  for (int l = 0; l < kLanes; ++l) in = in && rmax[l] <= 0.006;
  if (!in) return false;
  // p = Coef(c7); p = Add(Mul(p, r), Coef(c_i)), i = 6..0.
  V py, pe;
  for (int l = 0; l < kLanes; ++l) {
    py[l] = c.coef[7];
    pe[l] = kU * std::fabs(c.coef[7]);
  }
  for (int i = 6; i >= 0; --i) {
    const V my = py * r2y;
    const V me = FPCONFORM_ABS(py) * r2e + FPCONFORM_ABS(r2y) * pe + pe * r2e + kU * FPCONFORM_ABS(my);
    const double ci = c.coef[i], cie = kU * std::fabs(ci);
    py = my + ci;
    pe = (me + cie) + kU * FPCONFORM_ABS(py);
  }
  const V sq = rmax * rmax, r4 = sq * sq;
  pe = pe + r4 * r4 * (1.01 / 40320.0);
  const L k = __builtin_convertvector(kd, L);
  const L j = k & 63;
  const L m = (k - j) >> 6;  // (k - j) / 64, exact.
  V ty;
  for (int l = 0; l < kLanes; ++l) ty[l] = c.table[j[l]];
  // s = Mul(Coef(t_j), p).
  const V te = kU * FPCONFORM_ABS(ty);
  const V sy = ty * py;
  const V se = FPCONFORM_ABS(ty) * pe + FPCONFORM_ABS(py) * te + te * pe + kU * FPCONFORM_ABS(sy);
  const L eb = (m + 1023) << 52;  // Pow2(m), m >= -1011: a normal double.
  const V scale = reinterpret_cast<V>(eb);
  const V outy = sy * scale, oute = se * scale;
  std::memcpy(oy, &outy, sizeof outy);
  std::memcpy(oe, &oute, sizeof oute);
  return true;
}
#undef FPCONFORM_ABS

template <typename V, typename L>
[[gnu::always_inline]] inline void ExpEvsBody(const double* y, const double* e, double* oy, double* oe, int64_t n) {
  constexpr int64_t kLanes = static_cast<int64_t>(sizeof(V) / sizeof(double));
  const certified::ExpConstants c = certified::ExpReduction();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    if (ExpEvStep<V, L>(c, y + i, e + i, oy + i, oe + i)) continue;
    for (int64_t l = i; l < i + kLanes; ++l) {
      const certified::Ev r = certified::ExpEv(certified::Ev{y[l], e[l]});
      oy[l] = r.y;
      oe[l] = r.e;
    }
  }
  for (; i < n; ++i) {
    const certified::Ev r = certified::ExpEv(certified::Ev{y[i], e[i]});
    oy[i] = r.y;
    oe[i] = r.e;
  }
}

typedef int64_t L4 __attribute__((vector_size(32)));

void ExpEvsPortable(const double* y, const double* e, double* oy, double* oe, int64_t n) {
  ExpEvsBody<V4, L4>(y, e, oy, oe, n);
}
#if defined(__x86_64__)
__attribute__((target("avx2"))) void ExpEvsAvx2(const double* y, const double* e, double* oy, double* oe, int64_t n) {
  ExpEvsBody<V4, L4>(y, e, oy, oe, n);
}
#if defined(__clang__)
__attribute__((target("avx512f,avx512dq"))) void ExpEvsAvx512(const double* y, const double* e, double* oy,
                                                               double* oe, int64_t n) {
  ExpEvsBody<V8, L8>(y, e, oy, oe, n);
}
#else
__attribute__((target("avx512f,avx512dq,prefer-vector-width=512"))) void ExpEvsAvx512(const double* y,
                                                                                     const double* e, double* oy,
                                                                                     double* oe, int64_t n) {
  ExpEvsBody<V8, L8>(y, e, oy, oe, n);
}
#endif
#endif

}  // namespace

void Dots(const HotArgs& a) {
#if defined(__x86_64__)
  if (ActiveIsa() == Isa::kAvx512) return DotsAvx512(a);
  if (ActiveIsa() != Isa::kPortable) return DotsAvx2(a);
#endif
  DotsPortable(a);
}

void Pv(const HotArgs& a) {
#if defined(__x86_64__)
  if (ActiveIsa() == Isa::kAvx512) return PvAvx512(a);
  if (ActiveIsa() != Isa::kPortable) return PvAvx2(a);
#endif
  PvPortable(a);
}

void ExpEvs(const double* y, const double* e, double* oy, double* oe, int64_t n) {
#if defined(__x86_64__)
  if (ActiveIsa() == Isa::kAvx512) return ExpEvsAvx512(y, e, oy, oe, n);
  if (ActiveIsa() != Isa::kPortable) return ExpEvsAvx2(y, e, oy, oe, n);
#endif
  ExpEvsPortable(y, e, oy, oe, n);
}

// DotsBody's sums per element (each block of kDotBlock columns from +0 in column order, then
// added to acc) from K as it is (s_k x d), for keys [0, kend): for a block of rows, where
// transposing K would cost more than the dots. Four keys at a time (independent sums).
void DotsRowMajor(const HotArgs& a, const double* k) {
  for (int64_t r = 0; r < a.nr; ++r) {
    if (!a.ok[r]) continue;
    const double* q = a.q + r * a.d;
    double* acc = a.acc + r * a.sk;
    int64_t j = 0;
    for (; j + 4 <= a.kend; j += 4) {
      const double* k0 = k + j * a.d;
      const double* k1 = k0 + a.d;
      const double* k2 = k1 + a.d;
      const double* k3 = k2 + a.d;
      for (int64_t c0 = 0; c0 < a.d; c0 += kDotBlock) {
        const int64_t c1 = std::min(a.d, c0 + kDotBlock);
        double t0 = 0, t1 = 0, t2 = 0, t3 = 0;
        for (int64_t c = c0; c < c1; ++c) {
          t0 += q[c] * k0[c];
          t1 += q[c] * k1[c];
          t2 += q[c] * k2[c];
          t3 += q[c] * k3[c];
        }
        acc[j] += t0;
        acc[j + 1] += t1;
        acc[j + 2] += t2;
        acc[j + 3] += t3;
      }
    }
    for (; j < a.kend; ++j) {
      for (int64_t c0 = 0; c0 < a.d; c0 += kDotBlock) {
        const int64_t c1 = std::min(a.d, c0 + kDotBlock);
        double t = 0;
        for (int64_t c = c0; c < c1; ++c) t += q[c] * k[j * a.d + c];
        acc[j] += t;
      }
    }
  }
}

}  // namespace fpconform::attention_internal
