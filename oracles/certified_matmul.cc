#include "oracles/certified_matmul.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cfenv>
#include <limits>
#include <thread>

#include "formats/isa.h"
#include "formats/ops.h"
#include "formats/round_pack.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fpconform {
namespace {

// The proof (header) assumes binary64 evaluation of double expressions.
static_assert(FLT_EVAL_METHOD == 0, "double arithmetic must be binary64");
static_assert(std::numeric_limits<double>::is_iec559);

constexpr int kMr = 6;  // Rows of the register tile.

// ---- Kernels: C[0..6)[0..NR) += sum_kk ap[kk][r] * bp[kk][x], C with leading dimension ldc. ----

template <int kNr>
void KernelPortable(int64_t kc, const double* ap, const double* bp, double* c, int64_t ldc) {
  double acc[kMr][kNr];
  for (int r = 0; r < kMr; ++r) {
    for (int x = 0; x < kNr; ++x) acc[r][x] = c[r * ldc + x];
  }
  for (int64_t kk = 0; kk < kc; ++kk) {
    const double* a = ap + kk * kMr;
    const double* b = bp + kk * kNr;
    for (int r = 0; r < kMr; ++r) {
      for (int x = 0; x < kNr; ++x) acc[r][x] += a[r] * b[x];
    }
  }
  for (int r = 0; r < kMr; ++r) {
    for (int x = 0; x < kNr; ++x) c[r * ldc + x] = acc[r][x];
  }
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void KernelAvx2(int64_t kc, const double* ap,
                                                     const double* bp, double* c, int64_t ldc) {
  __m256d c0[kMr], c1[kMr];
  for (int r = 0; r < kMr; ++r) {
    c0[r] = _mm256_loadu_pd(c + r * ldc);
    c1[r] = _mm256_loadu_pd(c + r * ldc + 4);
  }
  for (int64_t kk = 0; kk < kc; ++kk) {
    const __m256d b0 = _mm256_loadu_pd(bp + kk * 8), b1 = _mm256_loadu_pd(bp + kk * 8 + 4);
    const double* a = ap + kk * kMr;
    for (int r = 0; r < kMr; ++r) {
      const __m256d av = _mm256_broadcast_sd(a + r);
      c0[r] = _mm256_fmadd_pd(av, b0, c0[r]);
      c1[r] = _mm256_fmadd_pd(av, b1, c1[r]);
    }
  }
  for (int r = 0; r < kMr; ++r) {
    _mm256_storeu_pd(c + r * ldc, c0[r]);
    _mm256_storeu_pd(c + r * ldc + 4, c1[r]);
  }
}

__attribute__((target("avx512f"))) void KernelAvx512(int64_t kc, const double* ap,
                                                      const double* bp, double* c, int64_t ldc) {
  __m512d c0[kMr], c1[kMr];
  for (int r = 0; r < kMr; ++r) {
    c0[r] = _mm512_loadu_pd(c + r * ldc);
    c1[r] = _mm512_loadu_pd(c + r * ldc + 8);
  }
  for (int64_t kk = 0; kk < kc; ++kk) {
    const __m512d b0 = _mm512_loadu_pd(bp + kk * 16), b1 = _mm512_loadu_pd(bp + kk * 16 + 8);
    const double* a = ap + kk * kMr;
    for (int r = 0; r < kMr; ++r) {
      const __m512d av = _mm512_set1_pd(a[r]);
      c0[r] = _mm512_fmadd_pd(av, b0, c0[r]);
      c1[r] = _mm512_fmadd_pd(av, b1, c1[r]);
    }
  }
  for (int r = 0; r < kMr; ++r) {
    _mm512_storeu_pd(c + r * ldc, c0[r]);
    _mm512_storeu_pd(c + r * ldc + 8, c1[r]);
  }
}
#endif

using Kernel = void (*)(int64_t, const double*, const double*, double*, int64_t);

// The blocked GEMM with panel width kNr: B packed once into panels of kNr columns (zero-padded),
// A packed per block of kMc rows; the K loop is cut into kKc slices so that one B panel slice
// stays in L1 while the block of A sits in L2. Edge tiles go through a padded scratch tile.
template <int kNr>
void Gemm(int64_t m, int64_t n, int64_t k, const double* a, const double* bt, double* c,
          int64_t ldc, int threads, Kernel kernel) {
  constexpr int64_t kMc = 16 * kMr;
  constexpr int64_t kKc = 256;
  if (m <= 0 || n <= 0) return;
  for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0);
  if (k <= 0) return;
  const int64_t panels = (n + kNr - 1) / kNr;
  std::vector<double> pb(static_cast<size_t>(panels * k * kNr), 0.0);
  for (int64_t p = 0; p < panels; ++p) {
    double* dst = pb.data() + p * k * kNr;
    for (int64_t x = 0; x < kNr && p * kNr + x < n; ++x) {
      const double* src = bt + (p * kNr + x) * k;
      for (int64_t kk = 0; kk < k; ++kk) dst[kk * kNr + x] = src[kk];
    }
  }
  const int64_t blocks = (m + kMc - 1) / kMc;
  auto work = [&](int64_t b0, int64_t b1) {
    std::vector<double> pa(static_cast<size_t>(kMc * k));
    double tile[kMr * kNr];
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t i0 = blk * kMc, mc = std::min(kMc, m - i0);
      const int64_t micro = (mc + kMr - 1) / kMr;
      std::fill(pa.begin(), pa.end(), 0.0);
      for (int64_t mp = 0; mp < micro; ++mp) {
        double* dst = pa.data() + mp * k * kMr;
        for (int r = 0; r < kMr && mp * kMr + r < mc; ++r) {
          const double* src = a + (i0 + mp * kMr + r) * k;
          for (int64_t kk = 0; kk < k; ++kk) dst[kk * kMr + r] = src[kk];
        }
      }
      for (int64_t k0 = 0; k0 < k; k0 += kKc) {
        const int64_t kc = std::min(kKc, k - k0);
        for (int64_t p = 0; p < panels; ++p) {
          const double* bp = pb.data() + (p * k + k0) * kNr;
          const int64_t cols = std::min<int64_t>(kNr, n - p * kNr);
          for (int64_t mp = 0; mp < micro; ++mp) {
            const double* ap = pa.data() + (mp * k + k0) * kMr;
            const int64_t rows = std::min<int64_t>(kMr, mc - mp * kMr);
            double* cp = c + (i0 + mp * kMr) * ldc + p * kNr;
            if (rows == kMr && cols == kNr) {
              kernel(kc, ap, bp, cp, ldc);
            } else {
              std::fill(tile, tile + kMr * kNr, 0.0);
              for (int64_t r = 0; r < rows; ++r) {
                for (int64_t x = 0; x < cols; ++x) tile[r * kNr + x] = cp[r * ldc + x];
              }
              kernel(kc, ap, bp, tile, kNr);
              for (int64_t r = 0; r < rows; ++r) {
                for (int64_t x = 0; x < cols; ++x) cp[r * ldc + x] = tile[r * kNr + x];
              }
            }
          }
        }
      }
    }
  };
  const int64_t t = std::clamp<int64_t>(threads, 1, blocks);
  if (t == 1) {
    work(0, blocks);
    return;
  }
  std::vector<std::thread> pool;
  for (int64_t i = 0; i < t; ++i) pool.emplace_back(work, blocks * i / t, blocks * (i + 1) / t);
  for (std::thread& th : pool) th.join();
}

int CeilLog2(int64_t k) {
  int e = 0;
  while ((int64_t{1} << e) < k) ++e;
  return e;
}

uint64_t DoubleBits(double v) { return std::bit_cast<uint64_t>(v); }

// 2^e for -1022 <= e <= 1023 (exact).
double Pow2(int e) { return std::bit_cast<double>(static_cast<uint64_t>(1023 + e) << 52); }

}  // namespace

void GemmNt(int64_t m, int64_t n, int64_t k, const double* a, const double* bt, double* c,
            int64_t ldc, int threads) {
#if defined(__x86_64__)
  switch (ActiveIsa()) {
    case Isa::kAvx512:
      Gemm<16>(m, n, k, a, bt, c, ldc, threads, KernelAvx512);
      return;
    case Isa::kAvx2:
      Gemm<8>(m, n, k, a, bt, c, ldc, threads, KernelAvx2);
      return;
    case Isa::kPortable:
      break;
  }
#endif
  Gemm<8>(m, n, k, a, bt, c, ldc, threads, KernelPortable<8>);
}

// ---- Split ----

OzakiSplit::OzakiSplit(const FormatSpec& f, std::span<const uint64_t> bits, int64_t rows,
                       int64_t k)
    : f_(&f), bits_(bits), rows_(rows), k_(k) {
  if (!CertifiedMatmul::Supports(f) || k < 0 || k > (int64_t{1} << 31) || rows < 0 ||
      bits.size() != static_cast<size_t>(rows * k)) {
    std::abort();
  }
  beta_ = (53 - CeilLog2(std::max<int64_t>(k, 1))) / 2;
  hi_.assign(static_cast<size_t>(rows * k), 0.0);
  special_.assign(static_cast<size_t>(rows), 0);
  lo_start_.assign(static_cast<size_t>(rows) + 1, 0);
  std::vector<Unpacked> u(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    // e: the smallest exponent with max_k |a_rk| < 2^e (the top bit of s 2^x is 2^(x + width)).
    int e = INT32_MIN;
    for (int64_t kk = 0; kk < k; ++kk) {
      Unpacked& v = u[static_cast<size_t>(kk)];
      v = UnpackBits(f, bits[static_cast<size_t>(r * k + kk)]);
      if (v.kind == Unpacked::Kind::kInf || v.kind == Unpacked::Kind::kNaN) {
        special_[static_cast<size_t>(r)] = 1;
      } else if (v.kind == Unpacked::Kind::kFinite && v.significand != 0) {
        e = std::max(e, v.exponent + static_cast<int>(std::bit_width(v.significand)));
      }
    }
    if (!special_[static_cast<size_t>(r)] && e != INT32_MIN) {
      const int q = e - beta_;  // The unit of the hi parts.
      double* hi = hi_.data() + r * k;
      for (int64_t kk = 0; kk < k; ++kk) {
        const Unpacked& v = u[static_cast<size_t>(kk)];
        if (v.kind != Unpacked::Kind::kFinite || v.significand == 0) continue;
        uint64_t sig = v.significand;
        bool lo = false;
        if (v.exponent < q) {
          const int shift = q - v.exponent;
          if (shift >= 64) {
            lo = true;
            sig = 0;
          } else {
            lo = (sig & ((uint64_t{1} << shift) - 1)) != 0;
            sig = (sig >> shift) << shift;
          }
        }
        // sig < 2^24 and 2^exponent >= 2^-172: the product of an exact integer and a power of
        // two, far inside the normal binary64 range: exact.
        const double mag = static_cast<double>(sig) * Pow2(v.exponent);
        hi[kk] = v.sign ? -mag : mag;
        if (lo) {
          lo_idx_.push_back(static_cast<int32_t>(kk));
          // v - hi: exact (the discarded low bits of the significand, same exponent).
          const uint64_t rest = v.significand - sig;
          const double lo_mag = static_cast<double>(rest) * Pow2(v.exponent);
          lo_val_.push_back(v.sign ? -lo_mag : lo_mag);
        }
      }
    }
    lo_start_[static_cast<size_t>(r) + 1] = lo_idx_.size();
  }
}

// ---- Matmul ----

bool CertifiedMatmul::Supports(const FormatSpec& f) {
  if (f.kind != FormatKind::kFloat) return false;
  // Largest finite < 2^(emax + 1) <= 2^128; smallest positive 2^(emin - fraction_bits) (or
  // 2^emin without subnormals) >= 2^-149; precision <= 24 keeps every decoded significand exact.
  const int smallest = f.has_subnormals ? f.d.emin - f.fraction_bits : f.d.emin;
  return f.d.emax <= 127 && smallest >= -149 && f.d.precision <= 24;
}

CertifiedMatmul::CertifiedMatmul(const OzakiSplit& a, const OzakiSplit& b, int threads)
    : a_(a), b_(b), ldc_(std::max<int64_t>(b.rows(), 1)) {
  if (a.k() != b.k() || a.beta() != b.beta()) std::abort();
  s_.assign(static_cast<size_t>(a.rows() * ldc_), 0.0);
  GemmNt(a.rows(), b.rows(), a.k(), a.hi(), b.hi(), s_.data(), ldc_, threads);
}

CertifiedMatmul::Route CertifiedMatmul::TryLoad(int64_t i, int64_t j,
                                                ExactAccumulator& acc) const {
  acc.Reset();
  if (a_.special(i) || b_.special(j)) return Route::kFallback;
  const std::span<const int32_t> la = a_.lo(i), lb = b_.lo(j);
  const double s = this->s(i, j);
  if (la.empty() && lb.empty()) {
    if (s == 0) return Route::kFallback;
    acc.Add(Float64(), DoubleBits(s));
    return Route::kExact;
  }
  if (static_cast<int64_t>(la.size() + lb.size()) > a_.k() / 4) return Route::kFallback;
  if (s != 0) acc.Add(Float64(), DoubleBits(s));
  const FormatSpec& fa = a_.format();
  const FormatSpec& fb = b_.format();
  size_t x = 0, y = 0;
  while (x < la.size() || y < lb.size()) {
    int32_t kk;
    if (y == lb.size() || (x < la.size() && la[x] < lb[y])) {
      kk = la[x++];
    } else if (x == la.size() || lb[y] < la[x]) {
      kk = lb[y++];
    } else {
      kk = la[x];
      ++x;
      ++y;
    }
    acc.AddProduct(fa, a_.bits(i, kk), fb, b_.bits(j, kk));
    const double p = a_.hi(i, kk) * b_.hi(j, kk);  // Exact (header proof, 2.).
    if (p != 0) acc.Add(Float64(), DoubleBits(-p));
  }
  if (acc.IsZero()) {
    acc.Reset();
    return Route::kFallback;
  }
  return Route::kCorrected;
}

CertifiedMatmul::Route CertifiedMatmul::Load(int64_t i, int64_t j, ExactAccumulator& acc) const {
  const Route r = TryLoad(i, j, acc);
  if (r == Route::kFallback) {
    acc.Reset();
    acc.AddDot(a_.format(), a_.row_bits(i), b_.format(), b_.row_bits(j));
  }
  return r;
}

OpResult CertifiedMatmul::Round(int64_t i, int64_t j, const FormatSpec& target, const OpEnv& env,
                                ExactAccumulator& acc, Route* route) const {
  const Route r = Load(i, j, acc);
  if (route != nullptr) *route = r;
  return acc.Round(target, env);
}

// round(v) into target under env for an exact double v (the element's value or an enclosure
// end): formats' Convert, or for float32 RNE in the normal range [2^-126, 2^127] the host's
// double-to-float conversion (IEEE 754 RNE there; no subnormal or overflow involved, so FTZ and
// saturation cannot matter; used only when the host rounding mode is to nearest), proven equal
// by certified_matmul_test.
struct CertifiedMatmul::Rounder {
  const FormatSpec& target;
  const OpEnv& env;
  bool host_float32;
  Rounder(const FormatSpec& t, const OpEnv& e)
      : target(t), env(e),
        host_float32(&t == &Float32() && e.rounding == Rounding::kNearestEven &&
                     std::fegetround() == FE_TONEAREST) {}
  uint64_t operator()(double v) const {
    const double m = std::fabs(v);
    if (host_float32 && m >= 0x1p-126 && m <= 0x1p127) {
      return std::bit_cast<uint32_t>(static_cast<float>(v));
    }
    return Convert(Float64(), target, DoubleBits(v), env).bits;
  }
};

namespace {
bool Monotone(const OpEnv& env) { return env.rounding != Rounding::kStochastic; }
}  // namespace

uint64_t CertifiedMatmul::RoundBits(int64_t i, int64_t j, const FormatSpec& target,
                                    const OpEnv& env, ExactAccumulator& acc, Route* route) const {
  return RoundBitsWith(i, j, Rounder(target, env), acc, route);
}

uint64_t CertifiedMatmul::RoundBitsWith(int64_t i, int64_t j, const Rounder& round,
                                        ExactAccumulator& acc, Route* route) const {
  const FormatSpec& target = round.target;
  const OpEnv& env = round.env;
  *route = Route::kFallback;
  if (!a_.special(i) && !b_.special(j)) {
    const std::span<const int32_t> la = a_.lo(i), lb = b_.lo(j);
    const double s = this->s(i, j);
    if (la.empty() && lb.empty()) {
      if (s != 0) {
        *route = Route::kExact;
        return round(s);
      }
    } else if (static_cast<int64_t>(la.size() + lb.size()) <= a_.k() / 4 && Monotone(env)) {
      const std::span<const double> va = a_.lo_values(i), vb = b_.lo_values(j);
      double y = s, abs = std::fabs(s);
      int64_t n = 0;
      size_t x = 0, z = 0;
      while (x < la.size() || z < lb.size()) {
        int32_t kk;
        double alo = 0, blo = 0;
        if (z == lb.size() || (x < la.size() && la[x] < lb[z])) {
          kk = la[x];
          alo = va[x++];
        } else if (x == la.size() || lb[z] < la[x]) {
          kk = lb[z];
          blo = vb[z++];
        } else {
          kk = la[x];
          alo = va[x++];
          blo = vb[z++];
        }
        const double ahi = a_.hi(i, kk), bhi = b_.hi(j, kk);
        const double t1 = alo * (bhi + blo), t2 = ahi * blo;  // bhi + blo = b exactly.
        y += t1;
        y += t2;
        abs += std::fabs(t1);
        abs += std::fabs(t2);
        n += 2;
      }
      const double e = abs * (4.0 * static_cast<double>(n) * 0x1p-53);
      const double lo = std::nextafter(y - e, -INFINITY), hi = std::nextafter(y + e, INFINITY);
      if (lo > 0 || hi < 0) {
        const uint64_t r = round(lo);
        if (r == round(hi)) {
          *route = Route::kEnclosed;
          return r;
        }
      }
    }
  }
  // The accumulator: exact (with corrections) or the full ExactDot.
  *route = Load(i, j, acc);
  return acc.Round(target, env).bits;
}

std::vector<uint64_t> CertifiedMatmulRound(const FormatSpec& fa, std::span<const uint64_t> a,
                                           const FormatSpec& fb, std::span<const uint64_t> bt,
                                           int64_t m, int64_t n, int64_t k,
                                           const FormatSpec& target, const OpEnv& env,
                                           int threads, CertifiedStats* stats) {
  const OzakiSplit sa(fa, a, m, k), sb(fb, bt, n, k);
  const CertifiedMatmul cm(sa, sb, threads);
  std::vector<uint64_t> d(static_cast<size_t>(m * n));
  const int t = static_cast<int>(std::clamp<int64_t>(threads, 1, std::max<int64_t>(m, 1)));
  std::vector<CertifiedStats> st(static_cast<size_t>(t));
  const CertifiedMatmul::Rounder round(target, env);
  auto work = [&](int w) {
    ExactAccumulator acc;
    CertifiedStats& s = st[static_cast<size_t>(w)];
    for (int64_t i = m * w / t; i < m * (w + 1) / t; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        CertifiedMatmul::Route r;
        d[static_cast<size_t>(i * n + j)] = cm.RoundBitsWith(i, j, round, acc, &r);
        (r == CertifiedMatmul::Route::kExact       ? s.exact
         : r == CertifiedMatmul::Route::kCorrected ? s.corrected
         : r == CertifiedMatmul::Route::kEnclosed  ? s.enclosed
                                                   : s.fallback)++;
      }
    }
  };
  if (t == 1) {
    work(0);
  } else {
    std::vector<std::thread> pool;
    for (int w = 0; w < t; ++w) pool.emplace_back(work, w);
    for (std::thread& th : pool) th.join();
  }
  if (stats != nullptr) {
    for (const CertifiedStats& s : st) stats->Merge(s);
  }
  return d;
}

}  // namespace fpconform
