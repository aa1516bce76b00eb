// A priori error constants of a model's dot product (issue 27 §2/§3): for a Model and a length n,
// constants that bound |computed - exact| for EVERY input (no overflow), derived from the node
// rules of evaluate.h's a posteriori bound over the model's own tree (the chain walk of
// chain_walk.h: sequential, blocked, pairwise, strided, split-K, promote, simd, cascade, tree,
// permutations, epilogue, output conversion). The attention models use them for the QK^T and PV
// matmuls (composite/attention_model.h).
//
// Contract. For inputs a_i (model.inputs.a), b_i (inputs.b), i < n, and c (the final
// accumulator's format; +0 for the plain dot), such that no operation overflows, EvaluateDot's
// result d satisfies
//   |d - (c + sum_i a_i b_i)| <= rel sum_i |a_i b_i| + rel_c |c| + abs
//                                + sub_sum sum_i s_i + sub_max max_i s_i,
//   s_i = [0 < |a_i| < tiny_a] tiny_a |b_i| + [0 < |b_i| < tiny_b] tiny_b |a_i|,
// tiny_a = 2^Emin of the format a is multiplied in (inputs.convert_to, else inputs.a), tiny_b
// likewise: s_i = 0 unless an operand is below the normal range. The s terms are not optional:
//  * a fused adder with alignment_exponent = "nominal" aligns a product of a subnormal operand by
//    E = Emin + E(other), up to the operand's fraction bits above the product's own exponent
//    (bfloat16 2^-133 * 2^127 = 2^-6 is aligned as 2^1), so its truncation quantum is relative to
//    tiny_a |b_i|, not to |a_i b_i|: sub_max (one such term per group sets the quantum);
//  * an input conversion (float32 -> tfloat32) or inputs.daz loses a subnormal operand entirely
//    (2^-140 -> 0 in tfloat32 rtz): |a'b' - ab| <= tiny_a |b| + ..., no multiple of |ab|: sub_sum.
// Both are 0 for the presets' bfloat16/float16 tensor-core and float32 CPU models on normal data,
// and the attention bound evaluates them from max |K|, max |V| (attention_model.h).
//
// Proof. Every node of the tree gets a bound E <= sum_i phi_i |x_i| + phi_c |c| + sigma_i s_i +
// beta max s + a (x_i the exact products), by induction from the leaves with evaluate.h's rules:
//  * A product leaf: E_leaf = |a'b' (rounded under product.policy = "round") - ab|. With
//    a' = a + da: |da| <= u_a |a| for |a| >= tiny_a (u_a the conversion's unit roundoff: 2^-f
//    for rtz, 2^-(f+1) nearest; 0 when convert_to holds every value of inputs.a and no DAZ) and
//    |da| <= tiny_a below (a subnormal result is within one subnormal spacing <= tiny_a; DAZ
//    gives 0, |da| = |a| < tiny_a). Then |a'b' - ab| <= |da||b'| + |a||db| gives, case by case
//    (both normal; one below; both below), E_leaf <= ((1 + u_a)(1 + u_b) - 1) |ab|
//    + (1 + max(u_a, u_b)) s + tiny_a tiny_b. A rounded product adds u_p (|ab| + E) + eta_p.
//  * A rounding node (adder step, combine, promote, pairwise lane start, epilogue add, output
//    conversion) with unit roundoff u and underflow eta: E = (1 + u) sum E_child + u M + eta
//    (evaluate.h), so each coefficient phi -> (1 + u) phi + u, sigma -> (1 + u) sigma, beta,
//    a -> (1 + u) (sum) + eta. adder.daz adds |acc| < 2^Emin of a flushed accumulator: a +=
//    2^Emin before the step. The maximum over the leaves below is kept (leaves are disjoint).
//  * A fused group of g non-zero terms (its products, and the accumulator unless it is a known
//    +0): E = (1 + u)(sum E_j + T) + u M + eta with T <= g q, q = 2^(emax - F). emax is the
//    alignment exponent nu of one term t; for "actual" nu = floor(log2 |t|), so 2^emax <= |t|.
//    For "nominal", a product of normal a', b' has |t| >= 2^(E(a') + E(b')) = 2^nu (significands
//    in [1, 4)); with a subnormal operand 2^nu = 2^(Emin_A + E(b')) <= tiny_a |b'| <=
//    (1 + u_b) tiny_a |b| (|a'| < tiny_a needs 0 < |a| < tiny_a: the roundings are monotone and
//    tiny_a is representable); both subnormal: 2^nu = tiny_a tiny_b. A rounded product's nu is its
//    own exponent or Emin_p: 2^nu <= |t| + 2^Emin_p. The accumulator's: 2^nu <= |acc| + 2^Emin.
//    So 2^emax <= max_t |t^| + (1 + u_max) max s + floor <= M + sum E_j + (1 + u_max) max s +
//    floor (|t^| <= M_t + E_t, floor the largest of those 2^Emin terms), and
//      E <= (1 + u)(1 + g 2^-F) sum E_j + ((1 + u) g 2^-F + u) M
//           + (1 + u) g 2^-F ((1 + u_max) max s + floor) + eta:
//    phi -> (1 + u)(1 + g 2^-F) phi + (1 + u) g 2^-F + u, beta -> (1 + u)(1 + g 2^-F) sum beta +
//    (1 + u) g 2^-F (1 + u_max), a -> (1 + u)(1 + g 2^-F) sum a + (1 + u) g 2^-F floor + eta.
//    (The evaluator replaces a q below binary64's range by 2^-1074: g 2^-1074 is added to a.)
//  * c is an exact leaf (phi_c = 0 at the leaf); +0 constants are exact, known-zero leaves.
// At the root, rel = max phi over the products, rel_c = phi_c, sub_sum = max sigma,
// sub_max = beta, abs = a. Every step is a few binary64 operations on non-negative numbers,
// multiplied by (1 + 2^-50) (bound_step.h's Up); the results are finally multiplied by
// (1 + 2^-50)^(2 depth + 4), depth the tree's height, which also dominates the evaluator's own
// inflation of M (one Up per node), so EvalResult::bound never exceeds the constants' value.
// Refused (FailedPrecondition, the reason named): adder.kind = "kahan" (not a tree of roundings:
// its a posteriori bound has no a priori constant of this form here), split_k order = "random"
// (the tree depends on the seed), and n outside 0..2^30.
//
// Example (nvidia-h100-bf16: 16-term groups, F = 25, RZ, so per group u = 2^-23 and
// g 2^-F = 17 * 2^-25): ComputeDotBound(m, 64) gives rel ~ 4 * (2^-23 + 17 * 2^-25) (four
// groups; the first group's products are under all four), rel_c the same, abs ~ 2^-149-ish,
// sub_sum = 0, sub_max > 0 (nominal alignment), tiny_a = tiny_b = 2^-126.
#ifndef FPCONFORM_ACCUMULATION_DOT_BOUND_H_
#define FPCONFORM_ACCUMULATION_DOT_BOUND_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "accumulation/model.h"

namespace fpconform {

struct DotBound {
  double rel = 0;      // Coefficient of sum_i |a_i b_i|.
  double rel_c = 0;    // Coefficient of |c| (the initial accumulator entering the chain).
  double abs = 0;      // Absolute term (underflow, alignment floors).
  double sub_sum = 0;  // Coefficient of sum_i s_i (lossy input conversions, inputs.daz).
  double sub_max = 0;  // Coefficient of max_i s_i (nominal alignment of subnormal operands).
  double tiny_a = 0, tiny_b = 0;  // The thresholds of s_i (2^Emin of the product's formats).
  int depth = 0;       // Height of the tree (rounding nodes above the deepest leaf).
};

// The constants for length n (0 <= n <= 2^30). Errors: FailedPrecondition for the models above;
// InvalidArgument for n out of range.
absl::StatusOr<DotBound> ComputeDotBound(const Model& model, int64_t n);

// The right-hand side of the contract for given sums: rel * sum_ab + rel_c * c_abs + abs +
// sub_sum * s_sum + sub_max * s_max (binary64, rounded up by a relative 2^-50).
double DotBoundValue(const DotBound& b, double sum_ab, double c_abs = 0, double s_sum = 0,
                     double s_max = 0);

}  // namespace fpconform

#endif  // FPCONFORM_ACCUMULATION_DOT_BOUND_H_
