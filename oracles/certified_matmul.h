// The exact value of a matmul at float64-GEMM speed: D[i][j] = sum_k A[i][k] B[k][j] for inputs in
// the narrow float formats of the table (float32, tfloat32, bfloat16, float16, the 8-bit formats),
// exactly the value ExactDot (exact_sum.h) gives, obtained for most elements from one to four
// float64 GEMMs whose every operation is error-free, and from the exact accumulator only for the
// rest.
//
// Method: the error-free transformation of Ozaki, Ogita, Oishi & Rump, "Error-free
// transformations of matrix multiplication by using fast routines of matrix multiplication and
// its applications", Numer. Algorithms 59 (2012) 95-118 (§3, Algorithm 3, with one or two split
// levels), the remainder below the last level handled exactly instead of by further GEMMs:
//   * beta = floor((53 - ceil(log2 K)) / 2) (K <= 2^31);
//   * every row i of A (and every column j of B, as a row of B^T) gets e_i, the exponent with
//     max_k |a_ik| < 2^e_i, and level units q1_i = e_i - beta, q2_i = e_i - 2 beta. Each entry is
//     split by masking the bits of its exact significand: a = a_1 + a_2 + a_lo, a_1 the bits of
//     weight >= 2^q1_i, a_2 those in [2^q2_i, 2^q1_i), a_lo the rest (all three exact; Ozaki et
//     al. extract the same kind of parts as fl((a + sigma) - sigma), rounding to nearest; both
//     give the two properties the proof uses). An operand uses one level (a_2 joins a_lo) unless
//     more than 1/16 of its entries have bits below the first level (float32 inputs, wide
//     magnitude ranges); a_hi = a_1 (+ a_2) is the sum of its levels;
//   * the planes S_st = A_s B_t (s over A's levels, t over B's: 1, 2 or 4 GEMMs) are computed by a
//     float64 GEMM (GemmNt: blocked, packed, FMA or not, any order of the K sum);
//   * D[i][j] = sum_st S_st[i][j] + sum_{k in U} (a_lo,ik b_kj + a_hi,ik b_lo,kj), U = {k :
//     a_lo,ik != 0 or b_lo,kj != 0}: a short, sparse correction (a_ik b_kj - a_hi,ik b_hi,kj =
//     a_lo b + a_hi b_lo).
//
// Proof that each S_st[i][j] is the exact value of sum_k a_s,ik b_t,kj (Ozaki et al. 2012,
// Lemma 1 and Theorem 1, restated for truncation), and that D is exact:
//   1. a_s,ik = m_ik 2^qs_i with an integer |m_ik| < 2^beta: a_1 is a multiple of 2^q1 with
//      |a_1| <= |a| < 2^e = 2^(q1 + beta); a_2 is a multiple of 2^q2 made of bits below 2^q1, so
//      |a_2| < 2^q1 = 2^(q2 + beta). Likewise b_t,kj = n_kj 2^rt_j, |n_kj| < 2^beta.
//   2. Hence every product a_s,ik b_t,kj = (m_ik n_kj) 2^(qs_i + rt_j) with |m_ik n_kj| <
//      2^(2 beta), and every partial sum P of any subset of the K products (any summation order,
//      any blocking, any FMA use) is an integer multiple of 2^(qs_i + rt_j) with |P| <
//      K 2^(2 beta) 2^(qs_i + rt_j) <= 2^53 2^(qs_i + rt_j), since K 2^(2 beta) <=
//      2^(ceil(log2 K) + 53 - ceil(log2 K)) = 2^53.
//   3. Every integer multiple N 2^t with |N| <= 2^53, t >= -1074 and |N 2^t| < 2^1024 is a
//      binary64 number (IEEE 754-2019 §3.3). Here t >= 2 (-148 - 2 * 26) = -400 (the smallest e
//      of any accepted format is -148, float32's 2^-149, and beta <= 26), and the magnitudes stay
//      below 2^(2 * 129 + 31). So the exact result of every addition or FMA the GEMM performs is
//      representable, and IEEE arithmetic (round to nearest, or any rounding) returns it
//      unchanged: no operation of the GEMM rounds, overflows or underflows, so neither FTZ nor DAZ
//      can change it (all values involved are zero or >= 2^-400 in magnitude, normal binary64
//      numbers; the inputs are decoded to double by integer arithmetic).
//   4. For k outside U, a_lo = b_lo = 0 and a b = (sum_s a_s)(sum_t b_t) is covered by the planes;
//      for k in U the two correction products are exact in binary64 (each factor is a part of a
//      significand of at most 24 bits, so the product has at most 48 bits, and is >= 2^-298 when
//      non-zero). The exact accumulator adds the planes' values and the corrections exactly.
//   Ogita, Rump & Oishi, "Accurate sum and dot product", SIAM J. Sci. Comput. 26 (2005), and
//   Higham's gamma_n = n u / (1 - n u) ("Accuracy and Stability of Numerical Algorithms", 2nd ed.,
//   Lemma 3.1, §3.1, §4.2) bound the error of a plain float64 dot of the same exact products by
//   gamma_(K-1) sum_k |a_ik b_kj|; the split makes that error exactly zero, so for an element
//   without corrections on one plane the GEMM value is the exact value, for every rounding,
//   target format and error measure (the audit uses it so: reports/audit.cc).
//
// CertifiedMatmulRound (bits only) decides most elements with a correction set U without the
// accumulator, by an enclosure (the certification step):
//   y = fl(...fl(fl(S_1 + S_2) + ...) + t_n), the planes' values followed by the correction
//   products t (exact, proof step 4), n terms in all; A = fl(sum |terms|) the same way. Higham,
//   Lemma 3.1 / (4.4) (recursive summation of n exact terms, no underflow or overflow: every
//   term is zero or >= 2^-400, u = 2^-53): |y - x| <= gamma_(n-1) sum |terms| and sum |terms| <=
//   (1 + gamma_(n-1)) A, so |y - x| <= gamma_(n-1) (1 + gamma_(n-1)) A <= 2 n u A for n u <= 1/4
//   (n <= 2 K + 4 <= 2^33).
//   E = fl(4 n u A) >= (1 - u) 4 n u A >= 2 n u A (4 n u is a power-of-two multiple of an
//   integer: exact). lo = pred(fl(y - E)) <= y - E and hi = succ(fl(y + E)) >= y + E (one step
//   past a round-to-nearest result is past the exact value). Every rounding mode but stochastic
//   is monotone, so if lo > 0 or hi < 0 (the sign is known: no zero-sign question) and
//   round(lo) == round(hi), that is round(x). Otherwise the element goes to the accumulator.
//   Only the bits are decided this way (not the inexact flag), hence only in the bits-only API.
//
// Falls back to the full exact accumulator (ExactDot over the K terms) for:
//   * an element whose row of A or column of B holds an Inf or NaN (special-value rules, NaN
//     priority and payloads are the accumulator's);
//   * an element whose exact value is zero (its sign follows the accumulator's §6.3 rule, which
//     needs the signs of all terms);
//   * an element whose correction set U has more than K/4 entries (rows mixing magnitudes wider
//     than 2 beta bits plus the significand), where the plain accumulator is cheaper.
// Stats count the routes (GEMM values alone, with corrections, decided by the enclosure,
// fallback).
//
// Formats: any float format of the table whose finite values are at most 2^128 in magnitude and
// whose smallest non-zero magnitude is at least 2^-149 (CertifiedMatmul::Supports): float32,
// tfloat32, bfloat16, float16, float8_* (not float64). Inputs are read without DAZ (subnormals
// exactly), as the default ExactAccumulator reads them.
//
// Speed (exact_matmul_benchmark): the GEMM is a packed 6x8 (AVX2+FMA) / 6x16 (AVX-512) register
// kernel chosen at run time by ActiveIsa() (base/isa.h; FPCONFORM_ISA=portable takes the
// portable C++ kernel, same bits: every operation is exact); the oracle costs its GEMMs plus a
// split pass (O(MK + NK)), a correction pass over the sparse lo parts and a rounding per element.
// Measured (one run, 2 shared cores, load 6; N(0,1) bfloat16 inputs, float32 RNE output): 1024^3
// 167 ms vs 88 ms for GemmNt alone (1.9x) and 3.5 s for ExactDot per element (2 threads); 4096^3
// 12.6 s vs 8.9 s (1.4x); 512^3 float32 (two levels, four GEMMs) 44-57 ms vs 0.57 s for ExactDot.
//
// Example:
//   // 2 x 2 bfloat16 matrices, A = [[1, 2], [3, 4]], B = [[1, 0], [0, 1]] given by columns.
//   std::vector<uint64_t> a = {0x3F80, 0x4000, 0x4040, 0x4080}, bt = {0x3F80, 0, 0, 0x3F80};
//   CertifiedStats st;
//   std::vector<uint64_t> d = CertifiedMatmulRound(BFloat16(), a, BFloat16(), bt, 2, 2, 2,
//                                                  Float32(), OpEnv{}, 1, &st);
//   d == {0x3F800000, 0x40000000, 0x40400000, 0x40800000}; st.exact == 4;
#ifndef FPCONFORM_ORACLES_CERTIFIED_MATMUL_H_
#define FPCONFORM_ORACLES_CERTIFIED_MATMUL_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "oracles/exact_sum.h"

namespace fpconform {

// C (m x n, row-major, leading dimension ldc >= n) = A (m x k, row-major) * B, B given
// transposed: bt is n x k row-major (row j of bt = column j of B). Plain float64 GEMM (the
// benchmark's anchor and the oracle's engine): blocked and packed, the kernel chosen by
// ActiveIsa(); `threads` split the rows. Rounding is IEEE binary64 per operation in an order that
// depends on the kernel; for the oracle's inputs every operation is exact (header proof).
void GemmNt(int64_t m, int64_t n, int64_t k, const double* a, const double* bt, double* c,
            int64_t ldc, int threads = 1);

// B^T (n x k, row-major) packed once for GemmNt (panels of the kernel's width for the ISA level
// in use), so that several GEMMs against the same B (row blocks of A) pack it once.
class PackedB {
 public:
  PackedB(int64_t n, int64_t k, const double* bt);
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  int nr() const { return nr_; }
  const double* data() const { return data_.data(); }

 private:
  int64_t n_, k_;
  int nr_;
  std::vector<double> data_;
};

// The same product with B packed: c (m x b.n()) = a (m x b.k()) * B.
void GemmNt(int64_t m, const double* a, const PackedB& b, double* c, int64_t ldc,
            int threads = 1);

// The split of `rows` vectors of length k (rows of A, or columns of B as rows of B^T) in format
// f (bits, row-major, rows * k entries; kept by reference: they must outlive the split).
class OzakiSplit {
 public:
  OzakiSplit(const FormatSpec& f, std::span<const uint64_t> bits, int64_t rows, int64_t k);

  const FormatSpec& format() const { return *f_; }
  int64_t rows() const { return rows_; }
  int64_t k() const { return k_; }
  int beta() const { return beta_; }
  // 1 or 2: the levels of hi parts (2 when more than 1/16 of the entries have bits below the
  // first level, as float32 inputs do).
  int levels() const { return levels_; }
  const double* hi(int level) const { return hi_[level].data(); }  // rows x k.
  // hi(level) packed as a B operand (built on first use, once; thread-safe).
  const PackedB& packed(int level) const;
  uint64_t bits(int64_t r, int64_t kk) const { return bits_[static_cast<size_t>(r * k_ + kk)]; }
  std::span<const uint64_t> row_bits(int64_t r) const {
    return bits_.subspan(static_cast<size_t>(r * k_), static_cast<size_t>(k_));
  }
  // The sum of the levels' hi parts (exact: disjoint bits of one significand).
  double hi_total(int64_t r, int64_t kk) const {
    const size_t at = static_cast<size_t>(r * k_ + kk);
    return levels_ == 1 ? hi_[0][at] : hi_[0][at] + hi_[1][at];
  }
  bool special(int64_t r) const { return special_[static_cast<size_t>(r)] != 0; }
  // The lo parts (a - a_hi, exact doubles) at those indices, same order.
  std::span<const double> lo_values(int64_t r) const {
    return std::span<const double>(lo_val_.data() + lo_start_[static_cast<size_t>(r)],
                                   lo_start_[static_cast<size_t>(r) + 1] -
                                       lo_start_[static_cast<size_t>(r)]);
  }
  // The k indices of row r whose lo part is non-zero, ascending.
  std::span<const int32_t> lo(int64_t r) const {
    return std::span<const int32_t>(lo_idx_.data() + lo_start_[static_cast<size_t>(r)],
                                    lo_start_[static_cast<size_t>(r) + 1] -
                                        lo_start_[static_cast<size_t>(r)]);
  }

 private:
  const FormatSpec* f_;
  std::span<const uint64_t> bits_;
  int64_t rows_, k_;
  int beta_;
  int levels_ = 1;
  std::vector<double> hi_[2];
  std::vector<uint8_t> special_;  // Row holds Inf/NaN.
  std::vector<size_t> lo_start_;  // rows + 1 offsets into lo_idx_.
  std::vector<int32_t> lo_idx_;
  std::vector<double> lo_val_;
  mutable std::once_flag packed_once_[2];
  mutable std::optional<PackedB> packed_[2];
};

struct CertifiedStats {
  int64_t exact = 0;      // The GEMM value alone is the exact value.
  int64_t corrected = 0;  // GEMM value plus the exact correction over U (accumulator).
  int64_t enclosed = 0;   // Bits decided by the enclosure of GEMM value + correction.
  int64_t fallback = 0;   // Full ExactDot (specials, exact zero, dense U).
  void Merge(const CertifiedStats& o) {
    exact += o.exact;
    corrected += o.corrected;
    enclosed += o.enclosed;
    fallback += o.fallback;
  }
};

// The matmul of a split A (m rows) and a split B (n columns as rows), both of the same k.
class CertifiedMatmul {
 public:
  // True iff format f is accepted (see Formats in the header comment).
  static bool Supports(const FormatSpec& f);

  // Runs the GEMM S = A_hi B_hi (threads split the rows).
  CertifiedMatmul(const OzakiSplit& a, const OzakiSplit& b, int threads = 1);

  // kEnclosed: RoundBits only (decided by the enclosure).
  enum class Route : uint8_t { kExact, kCorrected, kFallback, kEnclosed };

  // Resets `acc` (built without DAZ) and loads the exact value of D[i][j] into it; returns the
  // route. kFallback: `acc` holds the full ExactDot of row i and column j (same as ExactDot).
  Route Load(int64_t i, int64_t j, ExactAccumulator& acc) const;

  // Like Load, but leaves `acc` empty and returns kFallback without computing anything when the
  // element needs the full accumulator (the caller runs its own path). kExact/kCorrected: `acc`
  // holds the exact value, which is finite and non-zero.
  Route TryLoad(int64_t i, int64_t j, ExactAccumulator& acc) const;

  // D[i][j] rounded once into `target` under `env` (what ExactDot(...).Round(target, env) gives,
  // bits and flags); `acc` is scratch.
  OpResult Round(int64_t i, int64_t j, const FormatSpec& target, const OpEnv& env,
                 ExactAccumulator& acc, Route* route = nullptr) const;

  // round(D[i][j]) bits only (CertifiedMatmulRound's per-element step): kExact elements are
  // rounded from the GEMM value, elements with corrections by the enclosure when it decides
  // (kEnclosed; else exactly by the accumulator, kCorrected), kFallback by ExactDot. `acc` is
  // scratch.
  uint64_t RoundBits(int64_t i, int64_t j, const FormatSpec& target, const OpEnv& env,
                     ExactAccumulator& acc, Route* route) const;

  // RoundBits with the rounding set up once (CertifiedMatmulRound).
  struct Rounder;
  uint64_t RoundBitsWith(int64_t i, int64_t j, const Rounder& round, ExactAccumulator& acc,
                         Route* route) const;

  // The number of GEMM planes (levels of A times levels of B).
  int planes() const { return static_cast<int>(planes_.size()); }

 private:
  const OzakiSplit& a_;
  const OzakiSplit& b_;
  int64_t ldc_;
  std::vector<std::vector<double>> planes_;  // S_st = A_s B_t, each exact.
};

// The whole rounded product: d[i * n + j] = round(sum_k a[i * k + kk] * bt[j * k + kk]) into
// `target` under `env` (bits), as ExactDot of row i and column j would round it; formats
// CertifiedMatmul::Supports; aborts otherwise. Stats (optional) are summed over the elements.
std::vector<uint64_t> CertifiedMatmulRound(const FormatSpec& fa, std::span<const uint64_t> a,
                                           const FormatSpec& fb, std::span<const uint64_t> bt,
                                           int64_t m, int64_t n, int64_t k,
                                           const FormatSpec& target, const OpEnv& env,
                                           int threads = 1, CertifiedStats* stats = nullptr);

}  // namespace fpconform

#endif  // FPCONFORM_ORACLES_CERTIFIED_MATMUL_H_
