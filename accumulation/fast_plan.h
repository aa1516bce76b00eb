// The fast paths' plan (fast_eval.h): what FastPathEligible checks, and the constants the fast
// kernels read, built from a Model by MakePlan. Internal to accumulation/ (fast_*.cc and
// evaluate.cc); the contract (which models are eligible, and why) is fast_eval.h's.
//
// MakePlan reads every member of the model structs it whitelists (fast_plan.cc static_asserts
// their sizes, so a new member breaks the build until it is handled there). A Plan keeps a
// pointer to its Model (walked chain kinds and chain.kind "blocked" read model->chain): it is
// valid while that Model lives unchanged.
//
// Example:
//   Plan plan;
//   const char* why = MakePlan(model, plan);   // "" when eligible, else e.g. "chain.kind strided"
#ifndef FPCONFORM_ACCUMULATION_FAST_PLAN_H_
#define FPCONFORM_ACCUMULATION_FAST_PLAN_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "accumulation/evaluate.h"
#include "accumulation/model.h"

namespace fpconform::fast_internal {

// One table per 8/16-bit format: value as float (NaN/Inf kept) and 2^max(E(x), Emin) (0 for 0).
struct Table {
  std::vector<float> value;
  std::vector<double> pow;
  uint64_t mask = 0;
};

// kFloat64: float64 inputs, decoded to double (fast_decode.h's DecodeF64) and evaluated by the
// scalar path on double inputs (fast_scalar.h's ScalarDot<double, kBound, double>); both inputs
// float64, a float64 host accumulator.
enum class InputKind : uint8_t { kFloat32, kBFloat16, kFloat16, kTable, kTf32Rtz, kFloat64 };

struct Plan {
  enum class Arith : uint8_t { kHostF32, kHostF64, kFused } arith = Arith::kHostF32;
  InputKind in_a = InputKind::kFloat32, in_b = InputKind::kFloat32;
  const Table* table_a = nullptr;
  const Table* table_b = nullptr;
  const Model* model = nullptr;  // The model (walked chain kinds).
  bool convert = false;        // tf32 rtz conversion of both inputs.
  bool round_product = false;  // Host: acc + fl(a*b) instead of fma.
  bool kahan = false;          // Host: adder.kind "kahan" (sequential chain).
  ChainKind chain = ChainKind::kSequential;
  int chunk = 0;  // blocked: block; promote: every; pairwise: chunk (0: none); else 0.
  int leaf = 8, unroll = 1, split_multiple = 1;  // pairwise.
  // Fused.
  int group = 1, fraction_bits = 0, acc_fraction_bits = 23;
  bool rne = false, actual = false, round_down = false;
  double two_f = 1, two_mf = 1;  // 2^F, 2^-F.
  bool f64_to_f32_output = false;
  bool f32_to_bf16_output = false;  // Output float32 -> bfloat16 rne.
  // inputs.daz (host adders): an input below 2^Emin of its format (daz_min_a/b) reads as a zero
  // of its sign; the original value stays the exact leaf (as with a conversion).
  bool input_daz = false;
  float daz_min_a = 0, daz_min_b = 0;
  // adder.ftz / adder.daz (float32 host adders): a step result below 2^-126 is flushed to a zero
  // of its sign (one exactly +-2^-126 may be a flushed tiny value rounded up: the generic path
  // decides); a subnormal accumulator operand reads as a zero of its sign.
  bool ftz = false, acc_daz = false;
  bool promote_bf16 = false;  // chain.kind promote into bfloat16 (rne): the final format.
  // A bfloat16 accumulator (host adder ieee/fma, bfloat16 inputs, exact products, sequential
  // chain): float32 values that are bfloat16 values, each step acc + a*b (a*b exact in double)
  // rounded once to bfloat16 (rne) by AddRoundBf16Exact (fast_scalar.h); c and the output in
  // bfloat16 bits. Matmuls run element by element.
  bool acc_bf16 = false;
  // Matmul: WalkTile (chain_walk.h's walk on blocks of elements) instead of the fixed-chain tiles.
  bool walk = false;
  // Bound constants (evaluate.cc's Rounder u and eta).
  double u_acc = 0, eta_acc = 0, u_comb = 0, eta_comb = 0, u_prom = 0, eta_prom = 0;
  double u_out = 0, eta_out = 0;
};

// End of the K chunk that starts at k0 in the tiled kernels: chain.kind = "blocked" cuts where
// the model says (BlockedBlockEnd: fixed blocks, or the OpenBLAS halved tail); the others
// (sequential: chunk = k; promote: every) in steps of `chunk`.
inline int ChunkEnd(const Plan& p, int chunk, int k0, int k) {
  if (p.chain == ChainKind::kBlocked) return BlockedBlockEnd(p.model->chain, k0, k);
  return std::min(k, k0 + chunk);
}

// Fills `plan` or returns why the model is not eligible ("" when it is).
const char* MakePlan(const Model& m, Plan& plan);

// The run-time half of eligibility: AVX2+FMA active (base/isa.h) and the host's MXCSR in its
// default state (rne, no FTZ/DAZ). The Fast* entries hand the call to the generic engine
// otherwise.
bool HostReady();

// The fast paths on a plan that MakePlan filled from `model` (fast_eval.cc): FastEvaluateDot /
// Sum / Matmul less their eligibility check, with the same size checks, results and errors. For
// callers that built the plan already (evaluate.cc's EvaluateDot/Sum/Matmul build it once per
// call). Whatever the fast kernels hand back goes to GenericEvaluateDot/Sum/Matmul directly.
absl::StatusOr<EvalResult> FastDot(const Model& model, const Plan& plan,
                                   std::span<const uint64_t> a, std::span<const uint64_t> b,
                                   uint64_t c_bits, const EvalOptions& options);
absl::StatusOr<EvalResult> FastSum(const Model& model, const Plan& plan,
                                   std::span<const uint64_t> x, uint64_t c_bits,
                                   const EvalOptions& options);
absl::Status FastMatmul(const Model& model, const Plan& plan, int m, int n, int k,
                        std::span<const uint64_t> a, Layout a_layout,
                        std::span<const uint64_t> b, Layout b_layout,
                        std::span<const uint64_t> c, std::span<uint64_t> d,
                        std::span<double> bounds, const EvalOptions& options, int threads);

}  // namespace fpconform::fast_internal

#endif  // FPCONFORM_ACCUMULATION_FAST_PLAN_H_
