// Internal to the attention models' emulation (composite/attention_model.cc, EmulateAttentionRows):
// its hot loops, compiled for the portable level and for AVX2 and AVX-512 (base/isa.h picks one at
// run time). Each result element sees the same binary64 / binary32 operations in the same order
// on every level as the scalar code they replace (the loops vectorize across independent
// elements: keys for the dots and the weights, columns for the numerators; -ffp-contract=off keeps
// products and sums separate; conversions round to nearest even, as the scalar casts): the same
// bits, which attention_model_kernels_test checks against the scalar forms on every level this CPU
// has, over boundary inputs (arguments near -700 and 700, -inf masks, subnormal weights, ties).
//
// Example:
//   std::vector<double> arg = {0.0, -1.5, -104.0, -800.0}, w(4);
//   ExpWeights(arg.data(), w.data(), 4);  // w[x] == ExpWeight(arg[x]): 1, fl32(e^-1.5), ..., 0.
#ifndef FPCONFORM_COMPOSITE_ATTENTION_MODEL_KERNELS_H_
#define FPCONFORM_COMPOSITE_ATTENTION_MODEL_KERNELS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace fpconform::composite::attention_model_internal {

// The rows' dots, for keys [0, jend) (attended or not: Row reads the attended ones):
//   dot[r][j] = sum_c qf[r][c] kd[j][c] and ab[r][j] = sum_c |q[r][c] k[j][c]|,
// each a binary64 sum from +0 in column order (what Row's loop did per key). kdt and kt: the dot's
// K (kscaled or K) and K, transposed (d x s_k). The lanes run across keys, each lane the scalar
// sequence of operations (-ffp-contract=off: products and sums stay separate), so the portable,
// AVX2 and AVX-512 forms give the same bits.
struct DotArgs {
  const double* qf;   // nr x d.
  const double* q;    // nr x d (Q's rows).
  const double* kdt;  // d x sk (or sk x d: kj = d).
  const double* kt;   // d x sk (or sk x d).
  double* dot;        // nr x sk.
  double* ab;         // nr x sk.
  int64_t nr, sk, d, jend;
  int64_t kc = 0, kj = 1;  // Element (j, c) of kdt and kt at c kc + j kj (0: kc = sk).
};

void RowDots(const DotArgs& a);

// The numerators in index order in float32 (Row's loop, unchanged in its operations): for each
// key x with w[x] != 0 (+ 0 * v leaves a float32 sum unchanged, v finite here),
// nums[c] = fl32(nums[c] + w[x] V[keys[x]][c]) with the product and sum in binary64. The lanes
// run across c, each the scalar operations (conversions round to nearest even, as the scalar
// cast): the same bits on every level. V is read as float32 (vf, half the memory traffic) where
// every finite V value is a float32 value (bfloat16, float16, float32 inputs: the conversion back
// is exact, so w * V is the same product); else as binary64 (v). Rows with a non-finite attended
// V never get here (Row's finiteness check), and masked keys are never read.
struct NumArgs {
  float* nums;
  const double* w;
  const int64_t* keys;
  const double* v;
  const float* vf;  // Null: read v.
  size_t n, dv;
  // Every w and every V value a bfloat16 value (P rounded to bfloat16, V bfloat16): then on
  // AVX-512 each step is one float32 fused multiply-add, fl32(nums + w V) with w V exact, 16
  // lanes at once. The same value as the binary64 form fl32(fl64(a + b)), a = nums[c] a float32
  // value, b = w V exact in binary64 (8 + 8 significant bits; |b| in [2^-266, 2^257]): by the
  // monotonicity of rounding and float32 midpoints being binary64 values, the two differ only
  // where fl64(a + b) != a + b is a float32 midpoint. With e_a, e_b the exponents, a a multiple of
  // 2^max(e_a - 23, -149), b of 2^(e_b - 15), |a + b| < 2^(max(e_a, e_b) + 2):
  //   e_a - 30 <= e_b <= e_a + 28: a + b spans at most 53 bits: exact in binary64;
  //   e_b < e_a - 30: |b| < 2^(e_a - 29), and a + b is at least 2^(e_a - 25) - 2^(e_a - 29) >
  //     2^(e_a - 26) from every midpoint (those next to a float32 a are ulp32(a) / 2 >=
  //     2^(e_a - 25) away; below the normal range 2^-150 > 2^-156 + 2^(e_a - 52)), farther than
  //     binary64's rounding error 2^(e_a - 52): fl64(a + b) is no midpoint;
  //   e_b > e_a + 28: then e_b >= -121, so b is a float32 value (16 bits, normal), and a + b is
  //     within 2^(e_b - 27) of it: no midpoint as above;
  //   a = 0: b exact. Zeros: w = 0 is skipped on both paths; a + b = 0 is +0 on both. The
  //   overflow threshold 2^128 - 2^103 (a binary64 value) acts as one more midpoint above.
  // bf16_products false (or another level): the binary64 form.
  bool bf16_products = false;
};

void RowNums(const NumArgs& a);

// The emulation's unnormalized weight for a computed argument a (a float32 value, a <= 0 in the
// emulation but any double here): fl32(e^a) from certified_double.h's ExpEv, 0 below -700 (and
// where ExpEv refuses: NaN, a > 700), as a double. The scalar reference form.
double ExpWeight(double a);
// w[x] = ExpWeight(arg[x]) for x < n, bit for bit. Vector lanes repeat ExpEv's value operations
// (certified::ExpReduction: k by the round-to-nearest-even of x inv through + 1.5 2^52 - 1.5 2^52,
// exact for |x inv| < 2^51 and equal to nearbyint's value; a -0 k instead of +0 changes only the
// sign of a zero r, which the first Horner step's addition of 1/6! removes); a vector with a lane
// outside [-700, 700] (or NaN) takes the scalar form for all its lanes.
void ExpWeights(const double* arg, double* w, size_t n);

// x (a finite float32 value, as a double) rounded to nearest even into bfloat16, as a double: the
// float32 bits plus 0x7FFF plus the kept part's last bit, cut to the upper 16 bits (RNE on the
// magnitude's bit pattern, which orders like the magnitudes; a carry into the exponent is the
// next binade, into the infinity encoding the overflow to infinity that RNE gives). Equal to
// formats' Convert (attention_model_kernels_test, every float32 exponent and boundary patterns).
inline double RoundFloat32ToBfloat16(double x) {
  const float f = static_cast<float>(x);
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  b = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
  float r;
  std::memcpy(&r, &b, sizeof r);
  return static_cast<double>(r);
}

}  // namespace fpconform::composite::attention_model_internal

#endif  // FPCONFORM_COMPOSITE_ATTENTION_MODEL_KERNELS_H_
