#include "oracles/certified_matmul.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cfenv>
#include <limits>
#include <mutex>

#include "base/isa.h"
#include "base/run_workers.h"
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

// B^T (n x k) packed into panels of nr columns (zero-padded): panel p holds, for each kk, the
// nr values B[kk][p nr .. p nr + nr).
void PackInto(int nr, int64_t n, int64_t k, const double* bt, std::vector<double>& pb) {
  const int64_t panels = (n + nr - 1) / nr;
  pb.assign(static_cast<size_t>(panels * k * nr), 0.0);
  for (int64_t p = 0; p < panels; ++p) {
    double* dst = pb.data() + p * k * nr;
    for (int64_t x = 0; x < nr && p * nr + x < n; ++x) {
      const double* src = bt + (p * nr + x) * k;
      for (int64_t kk = 0; kk < k; ++kk) dst[kk * nr + x] = src[kk];
    }
  }
}

// The blocked GEMM with panel width kNr on a packed B: A packed per block of kMc rows; the K
// loop is cut into kKc slices so that one B panel slice stays in L1 while the block of A sits
// in L2. Edge tiles go through a padded scratch tile.
template <int kNr>
void Gemm(int64_t m, int64_t n, int64_t k, const double* a, const double* pb, double* c,
          int64_t ldc, int threads, Kernel kernel) {
  constexpr int64_t kMc = 16 * kMr;
  constexpr int64_t kKc = 256;
  if (m <= 0 || n <= 0) return;
  for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0);
  if (k <= 0) return;
  const int64_t panels = (n + kNr - 1) / kNr;
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
          const double* bp = pb + (p * k + k0) * kNr;
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
  RunRanges(blocks, threads, work);
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

PackedB::PackedB(int64_t n, int64_t k, const double* bt) : n_(n), k_(k) {
#if defined(__x86_64__)
  nr_ = ActiveIsa() == Isa::kAvx512 ? 16 : 8;
#else
  nr_ = 8;
#endif
  PackInto(nr_, n, k, bt, data_);
}

void GemmNt(int64_t m, const double* a, const PackedB& b, double* c, int64_t ldc, int threads) {
  const int64_t n = b.n(), k = b.k();
#if defined(__x86_64__)
  if (b.nr() == 16) {
    Gemm<16>(m, n, k, a, b.data(), c, ldc, threads, KernelAvx512);
    return;
  }
  if (ActiveIsa() != Isa::kPortable) {
    Gemm<8>(m, n, k, a, b.data(), c, ldc, threads, KernelAvx2);
    return;
  }
#endif
  Gemm<8>(m, n, k, a, b.data(), c, ldc, threads, KernelPortable<8>);
}

void GemmNt(int64_t m, int64_t n, int64_t k, const double* a, const double* bt, double* c,
            int64_t ldc, int threads) {
  GemmNt(m, a, PackedB(n, k, bt), c, ldc, threads);
}

// ---- Split ----

namespace {

// sig with the bits of weight below 2^q cleared, for the value sig * 2^x.
uint64_t Keep(uint64_t sig, int x, int q) {
  if (x >= q) return sig;
  const int shift = q - x;
  return shift >= 64 ? 0 : (sig >> shift) << shift;
}

// (-1)^sign * sig * 2^x for sig < 2^24 and -149 <= x <= 127 - 23: an exact integer times a
// power of two inside the normal binary64 range: exact.
double Value(bool sign, uint64_t sig, int x) {
  const double mag = static_cast<double>(sig) * Pow2(x);
  return sign ? -mag : mag;
}

}  // namespace

OzakiSplit::OzakiSplit(const FormatSpec& f, std::span<const uint64_t> bits, int64_t rows,
                       int64_t k)
    : f_(&f), bits_(bits), rows_(rows), k_(k) {
  if (!CertifiedMatmul::Supports(f) || k < 0 || k > (int64_t{1} << 31) || rows < 0 ||
      bits.size() != static_cast<size_t>(rows * k)) {
    std::abort();
  }
  beta_ = (53 - CeilLog2(std::max<int64_t>(k, 1))) / 2;
  const size_t count = static_cast<size_t>(rows * k);
  special_.assign(static_cast<size_t>(rows), 0);
  lo_start_.assign(static_cast<size_t>(rows) + 1, 0);
  std::vector<int> row_e(static_cast<size_t>(rows), INT32_MIN);
  // Pass 1: e per row (the smallest exponent with max_k |a_rk| < 2^e; the top bit of s 2^x is
  // 2^(x + width)), Inf/NaN rows, and the entries with bits below the first level.
  int64_t below_first = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int e = INT32_MIN;
    bool special = false;
    for (int64_t kk = 0; kk < k; ++kk) {
      const Unpacked v = UnpackBits(f, bits[static_cast<size_t>(r * k + kk)]);
      if (v.kind == Unpacked::Kind::kInf || v.kind == Unpacked::Kind::kNaN) {
        special = true;
      } else if (v.kind == Unpacked::Kind::kFinite && v.significand != 0) {
        e = std::max(e, v.exponent + static_cast<int>(std::bit_width(v.significand)));
      }
    }
    special_[static_cast<size_t>(r)] = special;
    if (special || e == INT32_MIN) continue;
    row_e[static_cast<size_t>(r)] = e;
    const int q1 = e - beta_;
    for (int64_t kk = 0; kk < k; ++kk) {
      const Unpacked v = UnpackBits(f, bits[static_cast<size_t>(r * k + kk)]);
      if (v.kind == Unpacked::Kind::kFinite && v.significand != 0) {
        below_first += Keep(v.significand, v.exponent, q1) != v.significand;
      }
    }
  }
  // Two levels when more than 1/16 of the entries have bits below the first (float32 inputs,
  // wide magnitude ranges): four GEMMs instead of a dense correction.
  levels_ = below_first * 16 > static_cast<int64_t>(count) ? 2 : 1;
  // Pass 2: the levels and the rest (lo), by masking the exact significand: a_1 = bits of weight
  // >= 2^q1, a_2 = bits in [2^q2, 2^q1) (second level, or part of lo), lo = the remaining bits.
  for (int l = 0; l < levels_; ++l) hi_[l].assign(count, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const int e = row_e[static_cast<size_t>(r)];
    if (e != INT32_MIN) {
      const int q1 = e - beta_, q2 = e - 2 * beta_;  // The units of the two levels.
      const int q_last = levels_ == 1 ? q1 : q2;
      for (int64_t kk = 0; kk < k; ++kk) {
        const Unpacked v = UnpackBits(f, bits[static_cast<size_t>(r * k + kk)]);
        if (v.kind != Unpacked::Kind::kFinite || v.significand == 0) continue;
        const size_t at = static_cast<size_t>(r * k + kk);
        const uint64_t s1 = Keep(v.significand, v.exponent, q1);
        hi_[0][at] = Value(v.sign, s1, v.exponent);
        const uint64_t kept = Keep(v.significand, v.exponent, q_last);
        if (levels_ == 2) hi_[1][at] = Value(v.sign, kept - s1, v.exponent);
        if (kept != v.significand) {
          lo_idx_.push_back(static_cast<int32_t>(kk));
          lo_val_.push_back(Value(v.sign, v.significand - kept, v.exponent));
        }
      }
    }
    lo_start_[static_cast<size_t>(r) + 1] = lo_idx_.size();
  }
}

const PackedB& OzakiSplit::packed(int level) const {
  std::call_once(packed_once_[level], [&] { packed_[level].emplace(rows_, k_, hi(level)); });
  return *packed_[level];
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
  for (int s = 0; s < a.levels(); ++s) {
    for (int t = 0; t < b.levels(); ++t) {
      planes_.emplace_back(static_cast<size_t>(a.rows() * ldc_), 0.0);
      GemmNt(a.rows(), a.hi(s), b.packed(t), planes_.back().data(), ldc_, threads);
    }
  }
}

namespace {

// Calls f(alo * b, ahi * blo) for every k of U (the merge of the two sorted lo lists): the two
// products whose sum is a_ik b_kj - ahi_ik bhi_kj, each exact in binary64 (both factors are
// parts of significands of at most 24 bits, so at most 48 bits, and >= 2^-298 when non-zero).
template <class F>
void ForCorrections(const OzakiSplit& a, int64_t i, const OzakiSplit& b, int64_t j, F&& f) {
  const std::span<const int32_t> la = a.lo(i), lb = b.lo(j);
  const std::span<const double> va = a.lo_values(i), vb = b.lo_values(j);
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
    const double ahi = a.hi_total(i, kk), bhi = b.hi_total(j, kk);
    f(alo * (bhi + blo), ahi * blo);  // bhi + blo = b exactly.
  }
}

}  // namespace

CertifiedMatmul::Route CertifiedMatmul::TryLoad(int64_t i, int64_t j,
                                                ExactAccumulator& acc) const {
  acc.Reset();
  if (a_.special(i) || b_.special(j)) return Route::kFallback;
  const size_t corrections = a_.lo(i).size() + b_.lo(j).size();
  if (static_cast<int64_t>(corrections) > a_.k() / 4) return Route::kFallback;
  for (const std::vector<double>& p : planes_) {
    const double v = p[static_cast<size_t>(i * ldc_ + j)];
    if (v != 0) acc.Add(Float64(), DoubleBits(v));
  }
  ForCorrections(a_, i, b_, j, [&](double t1, double t2) {
    if (t1 != 0) acc.Add(Float64(), DoubleBits(t1));
    if (t2 != 0) acc.Add(Float64(), DoubleBits(t2));
  });
  if (acc.IsZero()) {
    acc.Reset();
    return Route::kFallback;
  }
  return corrections == 0 ? Route::kExact : Route::kCorrected;
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
  *route = Route::kFallback;
  if (!a_.special(i) && !b_.special(j)) {
    const size_t corrections = a_.lo(i).size() + b_.lo(j).size();
    const size_t at = static_cast<size_t>(i * ldc_ + j);
    if (corrections == 0 && planes_.size() == 1) {
      const double v = planes_[0][at];
      if (v != 0) {
        *route = Route::kExact;
        return round(v);
      }
    } else if (static_cast<int64_t>(corrections) <= a_.k() / 4 && Monotone(round.env)) {
      double y = 0, abs = 0;
      int64_t n = 0;  // Terms.
      for (const std::vector<double>& p : planes_) {
        y += p[at];
        abs += std::fabs(p[at]);
        ++n;
      }
      ForCorrections(a_, i, b_, j, [&](double t1, double t2) {
        y += t1;
        y += t2;
        abs += std::fabs(t1);
        abs += std::fabs(t2);
        n += 2;
      });
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
  // The accumulator: exact (GEMM values and corrections) or the full ExactDot.
  *route = Load(i, j, acc);
  return acc.Round(round.target, round.env).bits;
}

std::vector<uint64_t> CertifiedMatmulRound(const FormatSpec& fa, std::span<const uint64_t> a,
                                           const FormatSpec& fb, std::span<const uint64_t> bt,
                                           int64_t m, int64_t n, int64_t k,
                                           const FormatSpec& target, const OpEnv& env,
                                           int threads, CertifiedStats* stats) {
  const OzakiSplit sa(fa, a, m, k), sb(fb, bt, n, k);
  const CertifiedMatmul cm(sa, sb, threads);
  std::vector<uint64_t> d(static_cast<size_t>(m * n));
  std::vector<CertifiedStats> st(static_cast<size_t>(RangeWorkers(m, threads)));
  const CertifiedMatmul::Rounder round(target, env);
  RunRanges(m, threads, [&](int64_t w, int64_t i0, int64_t i1) {
    ExactAccumulator acc;
    CertifiedStats& s = st[static_cast<size_t>(w)];
    for (int64_t i = i0; i < i1; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        CertifiedMatmul::Route r;
        d[static_cast<size_t>(i * n + j)] = cm.RoundBitsWith(i, j, round, acc, &r);
        (r == CertifiedMatmul::Route::kExact       ? s.exact
         : r == CertifiedMatmul::Route::kCorrected ? s.corrected
         : r == CertifiedMatmul::Route::kEnclosed  ? s.enclosed
                                                   : s.fallback)++;
      }
    }
  });
  if (stats != nullptr) {
    for (const CertifiedStats& s : st) stats->Merge(s);
  }
  return d;
}

}  // namespace fpconform
