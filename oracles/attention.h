// Exact oracle of scaled dot-product attention for one head (issue 27 §1):
//
//   O[i, c] = sum_j P[i, j] V[j, c],   P[i, j] = e^(s_ij) / sum_{j' in J_i} e^(s_ij')  (j in J_i)
//   s_ij    = scale * (sum_d Q[i, d] K[j, d]) + mask[i, j]
//   LSE[i]  = log sum_{j in J_i} e^(s_ij)
//
// Q is s_q x d, K is s_k x d, V is s_k x d_v (row-major), each element the value the kernel
// received (a double holding a bfloat16 / float16 / float32 / ... value: any finite double is
// taken exactly). J_i, the keys query i attends: every j, minus j > i under `causal` (top-left
// aligned, as PyTorch's is_causal: tril(ones(s_q, s_k))), minus keep_mask[i, j] == 0 (a boolean
// mask: PyTorch's convention, True takes part), minus additive_mask[i, j] == -Inf. An additive
// mask's finite values are added exactly. scale: the double given (exact), or, when absent, the
// real number 1/sqrt(d) exactly (not a rounded double: for d = 128 it is irrational; the
// oracle works with an enclosure of it).
//
// Each output element is O's exact real value correctly rounded once into `out` under env
// (every mode but sr<k>; saturate, flush_to_zero, tininess act on that rounding), LSE likewise
// into its own format; enclosures in binary64 (nearest, lo <= exact <= hi) for error measures.
//
// Conventions (the definition above where it has a value; stated choices elsewhere):
//   * A fully masked row (J_i empty: 0/0) follows params.fully_masked: kNaN (PyTorch's math SDPA
//     and softmax: the row is NaN) or kZero (FlashAttention-2, xformers, NKI kernels that
//     initialize the accumulator to zero: the row is +0). Its LSE is -Inf (log 0) either way
//     (FlashAttention-2's forward writes +Inf there instead: a preset notes that).
//   * Keys outside J_i are never read: a NaN in a masked key's K or V row does not enter (a kernel
//     computing 0 * NaN gets NaN there: the kernel's choice, visible in an audit).
//   * A NaN or Inf in Q's row i, in K's or V's row of an attended key, or a NaN or +Inf additive
//     mask value of an attended key gives NaN for the whole row, O and LSE.
//   * An exactly zero O is +0.
//
// When the value is representable. O[i, c] is rational iff, grouping J_i by equal scores, every
// group has the same mean of V[., c] (then O is that mean): the scores are algebraic, and by the
// Lindemann-Weierstrass theorem (Baker's form: e^a_1, ..., e^a_n are linearly independent over
// the algebraic numbers for distinct algebraic a_k) sum_groups e^s (sum_{j in G} V[j, c] - r |G|)
// = 0 needs every coefficient zero. The MPFR method checks this first and rounds the rational
// value directly (single-key rows, equal scores, equal values, all-zero V columns), so its Ziv
// loop only meets irrational values and ends. LSE is rational only for a single attended key
// (LSE = s_ij); otherwise s + log of a sum of exponentials is transcendental.
//
// Methods.
//   Fast (certified binary64, certified_double.h's rules): per row, the dots q.k_j in binary64
//   summed in blocks of 16 (depth h = 16 + ceil(d / 16)) with |error| <= gamma_h ||q||_2 ||k_j||_2
//   (Higham 2nd ed. (3.5) and §4.2 for a summation tree of depth h, and sum |q_d k_jd| <= ||q||
//   ||k_j|| by Cauchy-Schwarz), times the scale (an Ev), plus the mask;
//   m = the largest computed score (any double is exact as a shift); e_j = ExpEv(s_j - m) (0 with
//   |error| <= 2^-1000 below -700); L = sum e_j with |error| <= sum err_j + gamma_n L^;
//   N_c = sum e_j V[j, c] summed in key tiles of 64 (each from zero, then added to the running
//   sum: depth h = 64 + ceil(n / 64) for every term) with |error| <= rho A_c + n0 2^-1000 max|V|
//   + gamma_h A_c, A_c = sum e_j |V[j, c]| (computed alongside, the same way), rho = max_j err_j /
//   e_j, n0 the underflowed terms;
//   O_c = Div(N_c, L); LSE = m + LogEv(L). Each element is decided by certified::Decide (no
//   rounding boundary of `out` inside its enclosure); a row with undecided elements gets them from
//   a second binary64 tier first (compensated sums, Ogita-Rump-Oishi Sum2 as certified::SumEv, for
//   the row's dots, L and the undecided numerators: bounds in u rather than gamma_h), then the
//   MPFR method for what is still undecided (counted). gamma_k A^ is taken as k u (1 + 2^-20) A^
//   (k u <= 2^-30: a row of at most 2^20 keys, d <= 2^20; longer rows go to the MPFR method),
//   which covers gamma_k A and the rounding of the bound itself.
//   MPFR (reference; the fallback): exact dots (products at 106 bits, mpfr_sum exactly), exact
//   scores for a double scale, else intervals with 1/sqrt(d) rounded both ways; the rational
//   check above; then Ziv's loop over working precision w = 192, 384, ... up to 2^14 (an
//   Internal error past that: not reached for irrational values of doubles' magnitudes) with
//   every operation rounded outward, each element decided once its interval truncates to one
//   123-bit number with neither end on it (axis_ops.h's DecideElem rule, the stand-in 2^-4001
//   below 2^-4000).
//
// Threads: rows are split over `threads` std::threads; results do not depend on the count (nor on
// the ISA level, base/isa.h: the hot loops' portable and AVX2 forms give the same bits).
//
// Speed (attention_benchmark, one head of S = 4096, D = D_v = 128, N(0, 1) bfloat16 inputs, every
// element rounded and the row LSE, 2 threads on 2 cores at load 1.5-2.5 from other builds):
// bfloat16 output 1.31 s CPU (0.66 s wall) on the AVX-512 level, 1.70 s CPU on AVX2 (the AVX-512
// dots and numerators keep 32 keys' or columns' sums in registers), 0 rows through MPFR; float32
// output 2.9 s CPU, 20 rows through MPFR; causal 0.65 s CPU. The B = 1, H = 8, S = 4096,
// D = 128 audited against correctly-rounded (`fpconform audit attention ... --platform
// correctly-rounded --threads 2`, bfloat16 out, 100 elements listed): 7.6 s wall, 12.1 s CPU
// (10.7 s and 15.7 s before the AVX-512 forms and the one-block path, at load 1.5); against a
// model (flash-attention2-cuda-bf16) 16.4 s wall, 28 s CPU (32 s and 57 s before: P|V| came from
// a second oracle pass with |V|, now abs_enclosure from the same pass; the model's emulation,
// composite/attention_model.cc, is about half of it). About 1 s of each is serial: the listed
// elements' one-row passes.
//
// Errors (InvalidArgument): spans whose sizes do not match the shape, d or d_v < 1, s_q or s_k
// < 0, a non-finite or zero given scale, both masks given, an output format that is not a float
// of <= 53 bits, an LSE span without its format, a row range outside [0, s_q].
//
// Example (one query, two keys, d = 1, scale 1):
//   std::vector<double> q = {1}, k = {0, 1}, v = {0, 1};
//   AttentionProblem p{.s_q = 1, .s_k = 2, .d = 1, .d_v = 1, .q = q, .k = k, .v = v, .scale = 1.0};
//   std::vector<uint64_t> o(1);
//   AttentionRows(p, 0, 1, AttentionOutputs{.out = &Float32(), .bits = o}, nullptr);
//   // o[0] = 0x3F3B26A8: e / (1 + e) in float32, rne (attention_test checks this row).
#ifndef FPCONFORM_ORACLES_ATTENTION_H_
#define FPCONFORM_ORACLES_ATTENTION_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "absl/status/status.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "oracles/elementary.h"

namespace fpconform {

enum class FullyMaskedRows : uint8_t { kNaN, kZero };

// "nan", "zero".
const char* FullyMaskedRowsName(FullyMaskedRows f);

struct AttentionProblem {
  int64_t s_q = 0, s_k = 0, d = 0, d_v = 0;
  std::span<const double> q, k, v;          // s_q x d, s_k x d, s_k x d_v.
  std::optional<double> scale = {};         // Absent: exactly 1/sqrt(d).
  bool causal = false;                      // Top-left aligned: j <= i attends.
  std::span<const double> additive_mask = {};  // Empty or s_q x s_k.
  std::span<const uint8_t> keep_mask = {};     // Empty or s_q x s_k; 0 masks the key.
  FullyMaskedRows fully_masked = FullyMaskedRows::kNaN;
};

// Whether query i attends key j in p: not above the diagonal when causal, not masked by a 0 in
// keep_mask nor by -inf in additive_mask (the oracle and composite/attention_model.h alike).
inline bool Attended(const AttentionProblem& p, int64_t i, int64_t j) {
  if (p.causal && j > i) return false;
  const size_t at = static_cast<size_t>(i * p.s_k + j);
  if (!p.keep_mask.empty() && p.keep_mask[at] == 0) return false;
  if (!p.additive_mask.empty() && p.additive_mask[at] == -INFINITY) return false;
  return true;
}

// What to produce for rows [row_begin, row_end): any span may be empty (not produced); a
// non-empty one holds (row_end - row_begin) x d_v elements (O) or row_end - row_begin (LSE).
struct AttentionOutputs {
  const FormatSpec* out = nullptr;          // O's format (needed with `bits`).
  OpEnv env = {};                           // Rounding into out and lse_format.
  std::span<uint64_t> bits = {};
  std::span<ExactEnclosure> enclosure = {};
  const FormatSpec* lse_format = nullptr;   // Needed with lse_bits.
  std::span<uint64_t> lse_bits = {};
  std::span<ExactEnclosure> lse_enclosure = {};
  // PV[i, c] = sum_{j in J_i} P[i, j] |V[j, c]| (the bounds' P|V|, composite/attention_model.h):
  // the enclosures AttentionRows gives for the same problem with |V| in place of V, bit for bit.
  // The fast path has every quantity of that second pass already (A_c is the |V| pass's N_c, with
  // the same error term, and both passes share the dots, e_j and L), so a fast row costs d_v
  // divisions; rows the fast path leaves out get the |V| problem's own pass (AttentionRows over
  // those rows, which is what a second call would do for them).
  std::span<ExactEnclosure> abs_enclosure = {};
};

struct AttentionStats {
  int64_t fast_rows = 0;       // Rows decided entirely by the binary64 path.
  int64_t mpfr_rows = 0;       // Rows the MPFR method ran on (fallbacks and specials).
  int64_t fallback = 0;        // Elements (O and LSE) taken from the MPFR method after the fast
                               // path could not decide them.
  int64_t special_rows = 0;    // Fully masked, NaN, too long for the fast path, sr<k>.
  int64_t tight_rows = 0;      // Rows the compensated binary64 tier ran on.
  AttentionStats& operator+=(const AttentionStats& o) {
    fast_rows += o.fast_rows;
    mpfr_rows += o.mpfr_rows;
    fallback += o.fallback;
    special_rows += o.special_rows;
    tight_rows += o.tight_rows;
    return *this;
  }
};

// Checks the problem's shapes, scale and masks (the errors above).
absl::Status CheckAttention(const AttentionProblem& p);

// The rows [row_begin, row_end) by the fast method with the MPFR fallback.
absl::Status AttentionRows(const AttentionProblem& p, int64_t row_begin, int64_t row_end,
                           const AttentionOutputs& o, AttentionStats* stats, int threads = 1);

// The same by the MPFR method only (the reference the tests compare the fast method with).
absl::Status AttentionRowsMpfr(const AttentionProblem& p, int64_t row_begin, int64_t row_end,
                               const AttentionOutputs& o);

}  // namespace fpconform

#endif  // FPCONFORM_ORACLES_ATTENTION_H_
