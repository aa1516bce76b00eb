// The exact value of a matmul at float64-GEMM speed: D[i][j] = sum_k A[i][k] B[k][j] for inputs in
// the narrow float formats of the table (float32, tfloat32, bfloat16, float16, the 8-bit formats),
// exactly the value ExactDot (exact_sum.h) gives, obtained for most elements from one float64
// GEMM whose every operation is error-free, and from the exact accumulator only for the rest.
//
// Method: the error-free transformation of Ozaki, Ogita, Oishi & Rump, "Error-free
// transformations of matrix multiplication by using fast routines of matrix multiplication and
// its applications", Numer. Algorithms 59 (2012) 95-118, Algorithm 3 (one split level), with the
// remainder handled exactly instead of by further GEMMs:
//   * every row i of A (and every column j of B) is split as a = a_hi + a_lo, where, with
//     e_i the exponent such that max_k |a_ik| < 2^e_i and q_i = e_i - beta, a_hi is a truncated to
//     a multiple of 2^q_i by masking the bits of its exact value (Ozaki et al. extract the same
//     kind of high part as fl((a + sigma) - sigma), rounding to nearest; both give the two
//     properties the proof uses: a multiple of 2^q_i, and at most 2^e_i in magnitude), and
//     a_lo = a - a_hi (exact; zero for most bfloat16/float16/fp8 inputs of one magnitude range);
//   * beta = floor((53 - ceil(log2 K)) / 2) (K <= 2^31);
//   * S = A_hi B_hi is computed by a float64 GEMM (gemm below: blocked, packed, FMA or not, in any
//     order of the K sum);
//   * D[i][j] = S[i][j] + sum_{k in U} (a_ik b_kj - a_hi,ik b_hi,kj), U = {k : a_lo,ik != 0 or
//     b_lo,kj != 0}; that short correction goes through the exact accumulator (each term exact).
//
// Proof that S[i][j] is the exact value of sum_k a_hi,ik b_hi,kj (Ozaki et al. 2012, Lemma 1 and
// Theorem 1, restated for truncation):
//   1. a_hi,ik = m_ik 2^q_i with an integer |m_ik| < 2^beta, because |a_hi,ik| <= |a_ik| < 2^e_i =
//      2^(q_i + beta) and a_hi,ik is a multiple of 2^q_i. Likewise b_hi,kj = n_kj 2^r_j, |n_kj| <
//      2^beta.
//   2. Hence every product a_hi,ik b_hi,kj = (m_ik n_kj) 2^(q_i + r_j) with |m_ik n_kj| < 2^(2 beta),
//      and every partial sum P of any subset of the K products (any summation order, any
//      blocking, any FMA use) is an integer multiple of 2^(q_i + r_j) with |P| < K 2^(2 beta)
//      2^(q_i + r_j) <= 2^53 2^(q_i + r_j), since K 2^(2 beta) <= 2^(ceil(log2 K) + 53 -
//      ceil(log2 K)) = 2^53.
//   3. Every integer multiple N 2^t with |N| <= 2^53 and t >= -1074 and |N 2^t| < 2^1024 is a
//      binary64 number (IEEE 754-2019 §3.3). Here t = q_i + r_j >= 2 (-148 - 26) = -348 (the
//      smallest e of any accepted format is -148, float32's 2^-149, and beta <= 26), and the
//      magnitudes stay below 2^(2 * 129 + 31). So the exact result of every addition or FMA the
//      GEMM performs is representable, and IEEE arithmetic (round to nearest, or any rounding)
//      returns it unchanged: no operation of the GEMM rounds, overflows or underflows, so neither
//      FTZ nor DAZ can change it (all values involved are zero or >= 2^-348 in magnitude, normal
//      binary64 numbers; the inputs are decoded to double by integer arithmetic).
//   4. a_ik b_kj - a_hi,ik b_hi,kj is zero for k outside U (a_lo = b_lo = 0 there), so D[i][j] = S
//      + the correction over U, all of whose terms the exact accumulator adds exactly (a_hi b_hi
//      is exact in binary64 by 2.).
//   This is the enclosure of width zero (the a-posteriori bound of Ogita, Rump & Oishi, "Accurate
//   sum and dot product", SIAM J. Sci. Comput. 26 (2005), and Higham's gamma_n = n u / (1 - n u),
//   "Accuracy and Stability of Numerical Algorithms", 2nd ed., Lemma 3.1 and §3.1, bound the error
//   of a plain float64 dot of the same exact products by gamma_(K-1) sum_k |a_ik b_kj|; the split
//   makes that error exactly zero, so no enclosure decision near a rounding boundary is ever
//   needed and the result is exact for every rounding, every target format and every error
//   measure, not only for the correctly rounded float32 value).
//
// CertifiedMatmulRound (bits only) decides most elements with a correction set U without the
// accumulator, by an enclosure (the certification step):
//   y = fl(...fl(fl(S + t_1) + t_2)... + t_n), t = a_lo,ik b_kj and a_hi,ik b_lo,kj for k in U
//   (each product exact: both factors have at most 24 significant bits, so at most 48, and are
//   >= 2^-149 * 2^-174 > 2^-1022 when non-zero, so no underflow); A = fl(|S| + sum |t|) the same
//   way. Higham, Lemma 3.1 / (4.4) (recursive summation of n+1 exact terms, no underflow or
//   overflow, u = 2^-53): |y - x| <= gamma_n sum |terms| and sum |terms| <= (1 + gamma_n) A, so
//   |y - x| <= gamma_n (1 + gamma_n) A <= 2 n u A for n u <= 1/4 (n <= 2 K + 1 <= 2^33).
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
//   * an element whose correction set U has more than K/4 entries (dense lo parts: float32 inputs
//     of full 24-bit significands, or rows mixing magnitudes wider than beta bits), where the
//     plain accumulator is cheaper.
// Stats count the three routes (exact GEMM value, GEMM + correction, fallback).
//
// Formats: any float format of the table whose finite values are at most 2^128 in magnitude and
// whose smallest non-zero magnitude is at least 2^-149 (CertifiedMatmul::Supports): float32,
// tfloat32, bfloat16, float16, float8_* (not float64). Inputs are read without DAZ (subnormals
// exactly), as the default ExactAccumulator reads them.
//
// Speed (exact_matmul_benchmark): the GEMM is a packed 6x8 (AVX2+FMA) / 6x16 (AVX-512) register
// kernel chosen at run time by ActiveIsa() (formats/isa.h; FPCONFORM_ISA=portable takes the
// portable C++ kernel, same bits: every operation is exact); the oracle costs the GEMM plus a
// split pass (O(MK + NK)), a correction pass over the sparse lo parts and a rounding per element.
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

// The split of `rows` vectors of length k (rows of A, or columns of B as rows of B^T) in format
// f (bits, row-major, rows * k entries; kept by reference: they must outlive the split).
class OzakiSplit {
 public:
  OzakiSplit(const FormatSpec& f, std::span<const uint64_t> bits, int64_t rows, int64_t k);

  const FormatSpec& format() const { return *f_; }
  int64_t rows() const { return rows_; }
  int64_t k() const { return k_; }
  int beta() const { return beta_; }
  const double* hi() const { return hi_.data(); }          // rows x k.
  uint64_t bits(int64_t r, int64_t kk) const { return bits_[static_cast<size_t>(r * k_ + kk)]; }
  std::span<const uint64_t> row_bits(int64_t r) const {
    return bits_.subspan(static_cast<size_t>(r * k_), static_cast<size_t>(k_));
  }
  double hi(int64_t r, int64_t kk) const { return hi_[static_cast<size_t>(r * k_ + kk)]; }
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
  std::vector<double> hi_;
  std::vector<uint8_t> special_;  // Row holds Inf/NaN.
  std::vector<size_t> lo_start_;  // rows + 1 offsets into lo_idx_.
  std::vector<int32_t> lo_idx_;
  std::vector<double> lo_val_;
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

  // The GEMM value S[i][j] (exact sum of the hi products).
  double s(int64_t i, int64_t j) const { return s_[static_cast<size_t>(i * ldc_ + j)]; }

 private:
  const OzakiSplit& a_;
  const OzakiSplit& b_;
  int64_t ldc_;
  std::vector<double> s_;
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
