// Implementation models of attention kernels as data (issue 27 §2, §3): a sibling of the composite
// model format (MODEL_FORMAT.md, "Attention models"), one TOML file per preset in
// composite/attention_models/. A sibling, not a kind of composite model: an attention kernel is a
// structure (two matmuls, a blocked online softmax, a P format, a normalization), not a formula of
// one row's values, and its parameters have no place in the formula language.
//
// Parameters (every one cited in the file's [provenance], unconfirmed ones listed):
//   formats.input / compute / p / output   Q K V's format; the scores', exps', sums' and
//                                          accumulators' format (float32); the format P is
//                                          rounded to before PV (= compute: not rounded); O's.
//   scale       "separate" (fl(s * scale)), "fold_q" (Q * scale rounded to formats.scaled),
//               "fold_qk_sqrt" (Q and K each times sqrt(scale), rounded to formats.scaled:
//               PyTorch's math SDPA), "exponent" (fused into the exponential's FFMA argument).
//   formats.scaled  optional (default formats.input): the format a folded scale's products are
//               rounded to (the tensors' dtype, or float32 where the kernel upcasts its inputs
//               first, as PyTorch's math SDPA does for bfloat16 and float16 on the CPU).
//   exp_ulp     the exponential's error bound in ulps of the compute format (0.5: correctly
//               rounded; ex2.approx, Sleef u10, a ScalarE table: its documented or assumed bound).
//   row_sum     "unrounded" (the sum adds the compute-format P: FlashAttention-2, Triton) or
//               "rounded" (it adds P rounded to formats.p).
//   normalize   "divide" (N / l), "reciprocal" (N * (1 / l)), "exp_lse" (N * exp(m - lse)).
//   key_block   keys per online-softmax step (0: one pass, no rescaling); the rescalings a term
//               goes through number at most ceil(n / key_block) - 1.
//   fully_masked  "nan" or "zero": the kernel's value for a row with no attended key.
//   formats.lse   optional: the format of the LSE the kernel writes (absent: it writes none);
//                 with it, log_ulp (the log's error: at most log_ulp 2^(1-p) max(1, |log x|),
//                 in ulps of the compute format at max(1, |result|): 0.5 correctly rounded;
//                 __logf's 2^-21.41 absolute on [0.5, 2] and 3 ulp elsewhere fit 4) and
//                 fully_masked_lse ("inf", "-inf", "nan": the LSE of a row with no attended
//                 key; FlashAttention-2 writes +Inf where the exact value is log 0 = -Inf).
//                 Refused with normalize = "exp_lse": a running log-sum-exp's error is not
//                 bounded here.
//   matmul.qk, matmul.pv  optional: the accumulation model (accumulation/models, a file stem; an
//                 envelope there stands for all its members) of the QK^T and the P V matmul; the
//                 bound then uses its dot constants (accumulation/dot_bound.h) instead of
//                 gamma_d and gamma_(n+1) ("The matmuls" below). Absent: float32 in any order.
//   num_splits    optional (default 1): split-KV, the key range cut into num_splits contiguous
//                 chunks of whole key_block blocks (FlashAttention-2's flash_fwd_splitkv_kernel:
//                 ceil(ceil(S_k / key_block) / num_splits) blocks each), each normalized by its
//                 own sum into the compute format with its LSE, then combined (below). Needs
//                 key_block > 0; refused with normalize = "exp_lse".
//
// The bound (EmulateAttentionRows). For an element o (exact value, oracles/attention.h) with
// PV = sum_j P_j |V_jc| (P the exact probabilities; PV >= |o|), every implementation that the
// model admits, with the matmuls and sums in any order and tree (the matmuls also on the datapath
// that matmul.qk / matmul.pv name: "The matmuls" below), returns before its output rounding a
// value y with |y - o| <= E, where, with u = 2^-p of the compute format, u_P of
// formats.p (0 when P is not rounded), gamma_k = k u / (1 - k u), n the row's attended keys, R
// the rescalings, eps = exp_ulp 2^(1-p) the exponential's relative error:
//   each computed unnormalized weight is w_j = e^(s_j - m)(1 + theta_j) for the real shift m =
//   the computed final maximum, with |theta_j| <= Theta = e^delta (1 + eps)^(1 + R)
//   (1 + u)^(2 + R) - 1, delta = c_s a_max + (3 + [exponent]) u T + u T, where a_max = max_j
//   scale sum_d |Q_id K_jd|, c_s = gamma_d + u + (u_in + u for fold_q; 2 u_in + 3 u for
//   fold_qk_sqrt) (the dot in any order, the scale's own rounding and placement), T = max_j
//   |computed argument| + the mask's addition (u |s_j + mask_j| is inside u T); the rescalings
//   multiply by e^(m_old - m_new) with arguments summing to at most T (the maxima increase);
//   the numerator N = sum_j fl_P(w_j) V_jc (1 + psi_j), |psi_j| <= gamma_(n+1), and the sum
//   l = sum_j x_j (1 + phi_j), x_j = w_j or fl_P(w_j), |phi_j| <= gamma_n. Writing alpha_j - 1 and
//   beta_j - 1 for the relative perturbations of the numerator's and the sum's terms (A >=
//   |alpha_j - 1| = (1 + Theta)(1 + u_P)(1 + gamma_(n+1)) - 1, Bl >= |beta_j - 1| = (1 + Theta)
//   (1 + u_P [rounded sum])(1 + gamma_n) - 1) and using sum_j P_j V_jc = o, sum_j P_j = 1:
//     N / l - o = (sum_j P_j (alpha_j - 1) V_jc - o sum_j P_j (beta_j - 1)) / sum_j P_j beta_j,
//     |N / l - o| <= (A PV + Bl |o|) / (1 - Bl);
//   the normalization multiplies by (1 + nu), nu = u (divide), 2u + u^2 (reciprocal), or
//   (1 + eps)(1 + u)^2 e^(2 u L) - 1 (exp_lse, L >= |lse| the log-sum-exp's magnitude), so
//     E = (A PV + Bl |o|) / (1 - Bl) (1 + nu) + nu |o| + tau (max |V| + |o|),
//   tau = 2 (n (2 + R) 2^emin + n eta_P) the underflow of weights below the compute format's
//   normal range, flush to zero included, and P's rounding below its normal range: P keeps
//   subnormals (cvt.rn.f16.f32 / cvt.rn.bf16.f32 and the CPU conversions do not flush), so its
//   absolute error there is at most half of P's subnormal spacing; eta_P = that spacing
//   2^(emin_P - t_P) (t_P P's fraction bits; twice the needed amount) (absolute, in units of the largest weight ~ 1,
//   l >= 1/2). Keys whose argument is certainly below -150 count only there.
//   This is the issue's |do| <= (u_P + gamma_acc + eps_exp) (P|V|) + u_out |o| shape: A is u_P +
//   gamma_(n+1) + eps (1 + R) + O(u T) to first order, and the output rounding is the enclosure's
//   outward rounding into formats.output. Rows whose binary64 bookkeeping is not certainly
//   below 2^-24 relative (a_max > 2^20) get no bound (NaN: only identical outputs explain).
//
// The LSE (formats.lse). The kernel writes LSE^ = fl(m_s + fl_log(l^)), m_s the shift in
// scaled units: m itself, or fl(m^ fl(scale)) where the scale waited for the exponent (m^ the
// unscaled maximum; FlashAttention-2's row_max * softmax_scale, fused with the addition or not),
// or m in base-2 units divided by log2(e) (the memory-efficient kernel's mi / kLog2e): at most
// four roundings, |m_s - m| <= 4u (1 + 2u) M whichever it is.
// The exact LSE = m + log L_m for every real m, L_m = sum_j e^(s_j - m). From the O proof,
// l^ = sum_j x_j (1 + phi_j) = L_m (1 + eta), |eta| <= Bl + tau_l (every term positive, each
// relatively within Bl; tau_l = 2 n (2 + R) 2^emin the underflow of the compute format's
// weights, plus 2 n 2^emin_P where the sum adds P; l >= 1/2), so |log l^ - log L_m| <= Lambda =
// -log(1 - Bl - tau_l). With delta the score and argument error above (|s_j^ - s_j| <= delta),
// the computed maximum is within delta of max_j s_j, so |m| <= M = |m_emulated| + 2 delta and
// -delta <= log L_m <= log n + delta = G. The log adds at most lerr = log_ulp 2^(1-p) max(1,
// G + Lambda); m_s at most 4u (1 + 2u) M; the final addition u (M (1 + 3u) + G + Lambda + lerr).
// The bound is absolute (the LSE is not normalized):
//   |LSE^ - LSE| <= 4u (1 + 2u) M + u (M (1 + 3u) + G + Lambda + lerr) + lerr + Lambda,
// rounded up by a relative 2^-40, added to the oracle's LSE enclosure and rounded outward into
// formats.lse. To first order Lambda ~ Bl ~ gamma_n + eps (1 + R) + u_P [rounded sum] + O(u T): the
// issue's |lse| u_lse term is u (M + G). The same rows as O have no bound (NaN).
//
// Split-KV (num_splits > 1). Each non-empty part s (its attended keys; an empty part writes O 0
// and LSE -inf, weight exactly 0) is a row of its own: O_s (compute format, after the part's
// normalization) is within E_s of o_s = sum_{j in s} P^s_j V_j (the bound above with the part's
// n, R, delta: A_s, Bl_s, nu, tau_s, and |o_s| <= PV_s = sum_{j in s} P^s_j |V_j|), and lse_s
// within a_s of lambda_s = log sum_{j in s} e^(s_j) (the LSE bound). The exact output is
// o = sum_s omega_s o_s, omega_s = e^(lambda_s - lambda), lambda = log sum_s e^(lambda_s), and
// sum_s omega_s PV_s = PV. The combine (FlashAttention-2's combine_attn_seqk_parallel) computes
// L^ = fl(fl_log(sum_s fl_exp(fl(lse_s - lmax))) + lmax), lmax = max_s lse_s: each term is
// e^(lambda_s - lmax) relatively within e^(a_s + u |x_s|) (1 + eps_c(x_s)) - 1 (x_s = lse_s -
// lmax; eps_c(x) = (exp_ulp + 1.173 |x|) 2^(1-p), which covers expf's 2 ulp and __expf's 2 +
// floor(1.173 |x|) ulp under --use_fast_math), the sum of K parts within gamma_K, so as for the LSE
// above |L^ - lambda| <= Bc = Lambda_c + lerr_c + u (|lmax| + G_c + Lambda_c + lerr_c), Lambda_c =
// -log(1 - eta_c), G_c = log K + max_s a_s. The weights w_s = fl_exp(fl(lse_s - L^)) = omega_s
// (1 + kappa_s), |kappa_s| <= e^(a_s + Bc + u |lse_s - L^|) (1 + eps_c) - 1, and the output
// sum_s w_s O_s in any order adds gamma_(K+1). With C = max_s (1 + kappa_s)(1 + gamma_(K+1)) - 1:
//   |O^ - o| <= sum_s omega_s ((1 + C) E_s + C |o_s|) <= (1 + C) E^ + C PV,
//   E^ = (A* + Bl*) / (1 - Bl*) (1 + nu) PV + nu PV + tau* (max |V| + PV)
// (A*, Bl*, tau* the largest over the parts; |o_s| <= PV_s replaces |o|). A part whose weight is
// certainly below e^-100 is left out of C and adds 2 e^(x + a_s + Bc + 1) max|V| (1 + 2^-10). The
// row's LSE is L^ with the bound Bc.
//
// The emulated value is one implementation the model admits: a two-pass evaluation (scores in
// binary64 rounded to the compute format with the scale placed as the model says, the maximum,
// the exponential (certified_double.h's ExpEv) rounded to the compute format, P rounded to
// formats.p, sums and PV in index order in the compute format, the normalization, the output
// rounding). It does not reproduce a kernel's block order bit for bit (a reproducible preset
// needs that; none is claimed here): `identical` against a model means only that this
// evaluation gave the same bits. Its LSE: fl(m_s + fl(log l)), the log correctly rounded. With
// splits: each part so, then the combine in the compute format (lmax, the sum of exps in split
// order, the log, the weights, the output as a chain of fused multiply-adds in split order).
//
// The matmuls (matmul.qk, matmul.pv). Without them the proof above takes both matmuls as float32
// sums in round to nearest in any order (gamma_d, gamma_(n+1)), which tensor cores do not do (fused
// groups with alignment truncation and round toward zero: accumulation/evaluate.h). With them:
//  * Scores. The dot of row i and key j under the model is, for every input without overflow
//    (dot_bound.h), within rel sum_c |a_c b_c| + abs + sub_max max_c s_c + sub_sum sum_c s_c of its
//    exact value, (rel, abs, ...) = ComputeDotBound(model, d) (an envelope: the componentwise
//    maximum over its members). Its operands a, b are Q's row (times the scale, rounded to
//    formats.scaled, where folded) and K's (times sqrt(scale) for fold_qk_sqrt): |a_c b_c| <= kF
//    |scale| |Q_ic K_jc| with kF = (1 + u_in)^2 (1 + u)^4 (the folds' roundings), and the separate
//    or exponent placement multiplies the dot's error by fl(scale) and one rounding, at most
//    |scale| (1 + u)^2. So c_s's gamma_d becomes rel kF (but see the maximum below), and delta_j
//    gains the absolute ds_j = (abs + (sub_max + d sub_sum) smax_j) max(1, |scale|) kF, smax_j =
//    (tiny_a + tiny_b) max(1, |scale|) kF max(max_c |Q_ic|, max_c |K_jc|) >= every s_c. The model
//    must read formats that hold every operand value and write the compute format (checked on
//    reading).
//  * Numerator. The kernel runs B = R + 1 key blocks (those with an attended key; a block without
//    one adds zero products, which the accepted P V models add exactly: checked on reading, no
//    flush to zero, F >= the accumulator's bits) of L = key_block keys (S_k for one pass; masked
//    and out-of-range keys are zero products of the block's dot). Between blocks the accumulator is
//    multiplied by rho^ = fl(exp^(m_old - m_new)) <= 1 + eps with one rounding: C_b = rho^_b (1 +
//    d_b) A_(b-1) + eta_b. Block b computes A_b = C_b + sum_(j in b) x_j + E_b, either as the
//    model's chain with C_b entering as c (mma with the accumulator), |E_b| <= rel_c |C_b| + rel
//    sum |x_j| + a, or as the chain from +0 added after in the compute format (PSUM, then SBUF),
//    |E_b| <= u |C_b| + ((1 + u) rel + u) sum |x_j| + (1 + u) a + eta: both are within phi (|C_b| +
//    sum |x_j|) + a_B with phi = max(rel_c, (1 + u) rel + u), a_B = (1 + u) abs + eta + (sub_max +
//    L sub_sum) smax, smax = tiny_a max|V| + 2 tiny_b (P <= 2). With Lambda_b the product of the
//    later factors rho^ (1 + d) (<= Lambda = ((1 + eps)(1 + u)^2)^R) and x~_j = Lambda_b x_j (the
//    weights in final units, which the proof's w_j with theta already describe), unrolling gives N^
//    = sum_j x~_j + sum_b Lambda_b E_b + sum_b Lambda_b eta_b, and with Z_b = sum_(j <= b) |x~_j| +
//    sum_(b' <= b) Lambda_b' |E_b'| the recursion Z_b <= (1 + phi) Z_(b-1) + (1 + phi) (X_b -
//    X_(b-1)) + rest_b (X_b = sum_(j <= b) |x~_j|, rest_b = Lambda (a_B + eta)) gives
//      |N^ - sum_j x~_j| <= ((1 + phi)^B - 1) sum_j |x~_j| + (1 + phi)^B (B Lambda a_B + (B - 1)
//      Lambda eta) = rel_N sum_j |x~_j| + nabs.
//    For a sequential chain (FlashAttention-2's mma.sync on acc_o) (1 + phi)^B - 1 is the chain's
//    own constant over n = B L products. So A's gamma_(n+1) becomes rel_N (but see the maximum
//    below), and E gains 2 nabs (1 + nu) (the division by l >= 1/2 and the normalization).
// Both replacements are taken as max(rel kF, gamma_d) and max(rel_N, gamma_(n+1)) (nabs and ds
// added): the enclosure then holds the named datapath's implementations and still the emulated
// value (float32 sums in index order, which gamma covers and which `identical` compares with), so a
// datapath tighter than gamma (Trainium's 128-row blocks and PSUM tiles: (128 + n / 128) u) leaves
// the bound as it was, and a looser one (tensor cores' truncation and RZ) widens it. The emulated
// value is unchanged; attention_matmul_test checks the enclosure against EvaluateDot matmuls of
// every member.
//
// Errors: file:line: key: what (cases/toml_reader.h), a name that is not the file's stem;
// matmul.qk/pv: not a file stem, no such accumulation model, one without a proven dot bound
// (dot_bound.h: kahan, random split order), input formats that do not hold the operands, an
// output other than the compute format, and for pv a datapath that would not add zero products
// exactly.
//
// Example:
//   auto models = LoadAttentionModels("composite/attention_models");
//   const AttentionModel& m = (*models)[0];    // e.g. "flash-attention2-cuda-bf16"
#ifndef FPCONFORM_COMPOSITE_ATTENTION_MODEL_H_
#define FPCONFORM_COMPOSITE_ATTENTION_MODEL_H_

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "accumulation/dot_bound.h"
#include "accumulation/model.h"
#include "formats/format_spec.h"
#include "oracles/attention.h"
#include "oracles/elementary.h"

namespace fpconform::composite {

enum class ScalePlacement : uint8_t { kSeparate, kFoldQ, kFoldQKSqrt, kExponent };
enum class Normalize : uint8_t { kDivide, kReciprocal, kExpLse };

// The accumulation model (or envelope: every member) named by matmul.qk / matmul.pv, with its
// dot constants (dot_bound.h) per length, computed once (shared by the copies of the
// AttentionModel; thread-safe).
class MatmulModel {
 public:
  MatmulModel(std::string name, std::vector<Model> members) : name_(std::move(name)), members_(std::move(members)) {}
  const std::string& name() const { return name_; }
  const std::vector<Model>& members() const { return members_; }
  // ComputeDotBound(member, n), the componentwise maximum over the members (each constant of
  // the contract is monotone, so the maximum bounds every member), cached.
  absl::StatusOr<DotBound> Bound(int64_t n) const;

 private:
  std::string name_;
  std::vector<Model> members_;
  mutable std::mutex mu_;
  mutable std::map<int64_t, absl::StatusOr<DotBound>> cache_;
};

struct AttentionModel {
  std::string name, description;
  const FormatSpec* input = nullptr;
  const FormatSpec* compute = nullptr;
  const FormatSpec* p_format = nullptr;
  const FormatSpec* output = nullptr;
  const FormatSpec* scaled = nullptr;  // formats.scaled (set to input when absent).
  ScalePlacement scale = ScalePlacement::kSeparate;
  double exp_ulp = 0.5;
  bool row_sum_rounded = false;
  Normalize normalize = Normalize::kDivide;
  int64_t key_block = 0;
  FullyMaskedRows fully_masked = FullyMaskedRows::kNaN;
  // The LSE (formats.lse; nullptr: the kernel writes none), its log's accuracy and its value on
  // a fully masked row (+Inf, -Inf or NaN).
  const FormatSpec* lse_format = nullptr;
  double log_ulp = 0.5;
  double fully_masked_lse = -INFINITY;
  // Split-KV: the key range in num_splits chunks of whole key blocks, combined (1: none).
  int64_t num_splits = 1;
  // matmul.qk / matmul.pv: the accumulation models of the two matmuls (null: float32 in any
  // order, gamma_d and gamma_(n+1)).
  std::shared_ptr<const MatmulModel> qk, pv;
  std::vector<std::pair<std::string, std::string>> provenance;
  std::vector<std::string> unconfirmed;
};

// matmul.qk / matmul.pv name files <accumulation_models_dir>/<name>.toml. Without the argument
// (or with ""): AccumulationModelsDirFor(the file's directory).
absl::StatusOr<AttentionModel> ParseAttentionModel(std::string_view toml_text, std::string_view file_name);
absl::StatusOr<AttentionModel> ParseAttentionModel(std::string_view toml_text, std::string_view file_name,
                                                   const std::string& accumulation_models_dir);
absl::StatusOr<AttentionModel> LoadAttentionModel(const std::string& path);
// Every *.toml of dir, sorted by name.
absl::StatusOr<std::vector<AttentionModel>> LoadAttentionModels(const std::string& dir);
// The accumulation presets beside an attention models directory, in each layout the data ships
// in (base/data_dir.h DataPathBeside): <dir>/../../accumulation/models (the source tree) when
// it is a directory, else <dir>/../models (installed share/fpconform/, the wheel's data/).
std::string AccumulationModelsDirFor(const std::string& attention_models_dir);

// Rows [r0, r1) of problem p under model m: emulated bits (m.output) and the enclosure [lo, hi]
// (values of m.output) of every admitted implementation's output, from the exact values `exact`
// and PV = `pv` (oracle enclosures with V and with |V|; (r1 - r0) x d_v each). NaN enclosures
// where there is no bound (non-finite rows, a_max > 2^20); fully masked rows give the model's
// convention as a point.
//
// With `lse` (the model must have formats.lse): also each row's LSE, emulated (bits of
// m.lse_format) and enclosed ([lo, hi], values of m.lse_format), from the oracle's LSE
// enclosures lse->exact (r1 - r0 each); fully masked rows give m.fully_masked_lse as a point.
struct AttentionLseRows {
  std::span<const ExactEnclosure> exact;
  std::span<uint64_t> bits;
  std::span<double> lo, hi;
};
absl::Status EmulateAttentionRows(const AttentionModel& m, const AttentionProblem& p, int64_t r0, int64_t r1,
                                  std::span<const ExactEnclosure> pv, std::span<const ExactEnclosure> exact,
                                  std::span<uint64_t> bits, std::span<double> lo, std::span<double> hi,
                                  int threads = 1, const AttentionLseRows* lse = nullptr);

// Several models' rows at once, each model's outputs (bits, lo, hi, lse as above) exactly as
// EmulateAttentionRows gives them: the work no model changes (K's transposition, the key facts, V
// as float32, the dots of Q and K where models scale them alike, |Q| |K|) is done once for all.
struct AttentionModelRows {
  const AttentionModel* m = nullptr;
  std::span<uint64_t> bits;
  std::span<double> lo, hi;
  const AttentionLseRows* lse = nullptr;
};
absl::Status EmulateAttentionRowsMulti(std::span<const AttentionModelRows> models, const AttentionProblem& p,
                                       int64_t r0, int64_t r1, std::span<const ExactEnclosure> pv,
                                       std::span<const ExactEnclosure> exact, int threads = 1);

}  // namespace fpconform::composite

#endif  // FPCONFORM_COMPOSITE_ATTENTION_MODEL_H_
