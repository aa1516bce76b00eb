// Fast evaluation paths for accumulation models: the same results as evaluate.h's EvaluateDot /
// EvaluateSum / EvaluateMatmul, bit for bit (EvalResult::bits and EvalResult::bound), for the
// models that map onto host arithmetic. Which models: FastPathEligible, a whitelist that checks
// every field of the model (anything it does not know, e.g. a chain kind or adder kind added
// later, makes the model ineligible).
//
// Two arithmetic paths:
//  * Host IEEE path (adder "ieee"/"fma", accumulator float32 or float64 at full precision, every
//    step and combine rounded rne with a default OpEnv): each step is one host operation whose
//    IEEE 754 result is the model's step: fma(a, b, acc) for policy "exact" (one rounding of the
//    exact a*b + acc, inputs exact in the accumulator format), acc + fl(a*b) for policy "round"
//    into the accumulator's own format. Needs the host's MXCSR in its default state (rne, no
//    FTZ/DAZ) and AVX2+FMA at run time (base/isa.h: ActiveIsa() avx2 or avx512; under
//    FPCONFORM_ISA=portable every call delegates); otherwise the call delegates to the generic
//    path. (Fused matmul tiles use AVX-512 where ActiveIsa() is avx512, AVX2 otherwise.)
//  * Fused-group path (adder "fused", float32 accumulator with <= 23 fraction bits): products
//    are exact in double (<= 48 significant bits), each term is scaled by the power of two
//    2^(F - emax) (exact), truncated (floor for round_down) to an integer, and the integers are
//    summed exactly in double (|sum| < (G + 1) 2^(F+2) <= 2^53 is checked by the eligibility);
//    the sum is rounded to the accumulator's fraction bits (rtz or rne) by bit operations on the
//    double. This is exactly evaluate.cc's Fused step while the group result is a normal float32.
// Special inputs and results (NaN/Inf inputs or c, a non-finite result, a fused group result that
// is subnormal or overflows, an output conversion that overflows) are delegated to the generic
// path (GenericEvaluateDot, ...), which is then the only code that produces NaN/Inf bits.
// Dispatch: evaluate.cc's EvaluateDot/Sum/Matmul build the plan (fast_plan.h, MakePlan) once per
// call and run the fast path on it where the model is eligible (fast_internal::FastDot/Sum/
// Matmul); the fast path hands its fallbacks to the non-dispatching GenericEvaluate* directly.
//
// Eligibility (FastPathEligible): inputs float32, bfloat16, float16 or any <= 16-bit signed format
// whose values are all float32 values (fp8s), optionally float32 -> tfloat32 rtz; daz (host
// adders, no conversion: an input below its format's 2^Emin reads as a zero of its sign); or
// float64 a and b (no conversion, no daz) into a float64 host accumulator: each step is the host
// fma(a, b, acc) or acc + fl(a*b) in double, the leaf bound data MagUp(a*b) and DiffUp from the
// exact product error fma(a, b, -fl(a*b)) where that is exact, from formats/ops.h's soft Mul/Fma
// rounded upward elsewhere (fast_scalar.h's LeafBound64); dots of these plans run in the scalar
// path (ScalarDot on double inputs), matmuls as "Matmul" below says. Host path: adder
// ieee/fma/kahan (kahan: sequential chain only, evaluate.cc's four host operations per step,
// p - comp as one fma for exact products), product exact (or rounded into the
// accumulator's own format), float32 or float64 accumulator at full precision; or a bfloat16
// accumulator (adder ieee/fma, bfloat16 inputs, exact products, sequential chain, bfloat16
// output): each step acc + a*b rounded once to bfloat16, the exact sum (TwoSum in double on the
// product, exact in double) rounded to odd in double, then float32, then to bfloat16 rne
// (fast_scalar.h's AddRoundBf16Exact); matmuls element by element. Fused path: float32
// accumulator with 1..23 fraction bits, rtz or rne normalization, truncate or round_down
// alignment, nominal or actual exponents, F + 2 + bit_width(G) <= 53. Chains: sequential,
// blocked, pairwise (host path, with chunk), promote (into float32, rne; host path also into
// bfloat16, rne: the float32 sum rounded to odd by TwoSum, then to bfloat16); strided
// (sequential or pairwise combine), split_k, and (host path) simd, cascade and tree (with a
// shape), which run chain_walk.h's WalkChain (the generic evaluator's own order) on host nodes.
// Chains with combine adds need a full-precision
// accumulator (their combine adds are host adds). Host float32 adders may flush (adder.ftz:
// a result below 2^-126 becomes a zero of its sign, one of exactly +-2^-126 goes to the generic
// path, as the exact value may be tiny; either tininess rule) and read a subnormal accumulator
// operand as zero (adder.daz). Output: the final accumulator's format, float64 -> float32 rne,
// or (host path) float32 -> bfloat16 rne. Every other rounding rne (except where rtz is named),
// no sat or stochastic rounding, no ftz/daz outside the adder's steps. Fused groups with either
// adder.overflow (an overflowing group goes to the generic path, which alone writes its Inf or max
// finite). Anything else (strided combine "halving", other bfloat16-accumulator plans,
// chain.permutation, epilogue.c = "after", new kinds or values) is ineligible.
//
// The bound is computed with the same double operations in the same order as evaluate.cc
// (leaf M = |a*b| and E = |used - exact| are exact in double for these formats, so they equal
// MagUp/DiffUp), so it is identical, not just close.
//
// Matmul: sequential, blocked and promote chains run in register tiles over K (float32 host
// chains with bounds: fast_bound_lanes.inc's HostBoundTileLanes, under AVX-512 4 rows x 16
// columns with the bound data in zmm registers, under AVX2 2 rows x 8 columns in ymm registers;
// fused adders: AVX-512 4-row tiles, AVX2 2-row tiles, with bounds 2 and 1 rows);
// pairwise chains (unroll 1) in tiles of 4 rows x 16 (float64: 8) columns that walk the tree
// once for all their elements (its shape depends only on K). Every other host chain (strided, split_k, simd,
// cascade, tree, pairwise with unroll > 1), and any host plan with ftz/daz, bfloat16 promotion
// or bfloat16 output, runs in WalkTile: tiles of the same size whose nodes are blocks of lanes,
// one WalkChain per tile. With bounds, the float32 pairwise and walked tiles run their bound
// steps and combines in registers of double (fast_bound_lanes.inc's BoundStepLanes and
// CombineLanes: 8 lanes per register under AVX-512, 4 under AVX2; the same operations as the
// scalar forms).
// Fused adders with those chains run element by element. float64
// inputs: sequential and blocked chains (not kahan) in AVX2 tiles of 4 rows x 8 columns (with
// bounds 2 rows), every other chain and the column tails element by element (ScalarDot on double
// inputs); a bfloat16 accumulator element by element.
// Matmul runs on `threads` threads (row ranges); each output element is computed by one thread
// in its own K order, so results are the same at every thread count.
//
// Example:
//   Model m = *LoadModelFile("accumulation/models/cuda-f32-fma.toml");
//   FastPathEligible(m) == true;
//   EvalResult r = *FastEvaluateDot(m, a, b, /*c_bits=*/0);   // == *EvaluateDot(m, a, b, 0)
#ifndef FPCONFORM_ACCUMULATION_FAST_EVAL_H_
#define FPCONFORM_ACCUMULATION_FAST_EVAL_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "accumulation/evaluate.h"
#include "accumulation/model.h"

namespace fpconform {

// True when the model is one the fast paths evaluate exactly (a property of the model only; the
// run-time host checks happen inside the Fast* functions, which delegate when they fail).
bool FastPathEligible(const Model& model);

// Why the model is not eligible ("" when it is), e.g. "chain.kind strided".
const char* FastPathIneligibleReason(const Model& model);

// As EvaluateDot / EvaluateSum (same arguments, results and errors). FailedPrecondition when
// !FastPathEligible(model).
absl::StatusOr<EvalResult> FastEvaluateDot(const Model& model, std::span<const uint64_t> a,
                                           std::span<const uint64_t> b, uint64_t c_bits,
                                           const EvalOptions& options = {});
absl::StatusOr<EvalResult> FastEvaluateSum(const Model& model, std::span<const uint64_t> x,
                                           uint64_t c_bits, const EvalOptions& options = {});

// As EvaluateMatmul, on `threads` (>= 1) threads. FailedPrecondition when not eligible;
// InvalidArgument for sizes as EvaluateMatmul, or threads < 1.
absl::Status FastEvaluateMatmul(const Model& model, int m, int n, int k,
                                std::span<const uint64_t> a, Layout a_layout,
                                std::span<const uint64_t> b, Layout b_layout,
                                std::span<const uint64_t> c, std::span<uint64_t> d,
                                std::span<double> bounds = {}, const EvalOptions& options = {},
                                int threads = 1);

// How many dots (matmul elements included) the Fast* functions handed to the generic path since
// the program started (special inputs, subnormal or overflowing fused groups, non-default MXCSR,
// no AVX2/FMA). For tests and benchmarks: a diagnostic, thread-safe, never reset.
uint64_t FastEvalFallbacks();

}  // namespace fpconform

#endif  // FPCONFORM_ACCUMULATION_FAST_EVAL_H_
