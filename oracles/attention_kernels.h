// Internal to the attention oracle (oracles/attention.cc): its two hot loops, the score dots and
// the numerators P V with P |V|, compiled for the portable level and for AVX2, with
// register-blocked AVX-512 forms (base/isa.h picks one at run time). Every result element sees the
// same operations in the same order on each level (the loops vectorize across independent
// elements; -ffp-contract=off keeps products and sums separate): the same bits. The summation
// depths below are what the oracle's error bounds assume (oracles/attention.h, "Methods").
#ifndef FPCONFORM_ORACLES_ATTENTION_KERNELS_H_
#define FPCONFORM_ORACLES_ATTENTION_KERNELS_H_

#include <cstdint>

namespace fpconform::attention_internal {

// Keys per tile of the score dots (FastBlock's tiles of K^T).
inline constexpr int64_t kKeyTile = 256;

// The dots sum in blocks of kDotBlock products (each block from zero, then added): depth
// kDotBlock + ceil(d / kDotBlock) per term, gamma of that times sum |q_c k_jc|.
inline constexpr int64_t kDotBlock = 16;

// Key tiles of kPvTile: each tile's terms are summed from zero in key order (columns in chunks
// of 8 held in registers), then the tile's sum is added to the running one. Any term goes through
// at most kPvTile + ceil(n / kPvTile) roundings (its product included): the error bound is
// gamma_(kPvTile + ceil(n / kPvTile)) sum |terms| (Higham 2nd ed. §4.2, blocked summation),
// 32 times smaller than sequential summation's gamma_n at n = 4096.
inline constexpr int64_t kPvTile = 64;

// The arguments of both loops:
//   dots: acc[r][j] += q[r][c] * kt[c][j], j in [j0, j1), for every c, rows with ok[r].
//   pv:   num[r][c] += e[r][j] V[j][c], abs[r][c] += e[r][j] |V[j][c]|, j in [0, kend).
struct HotArgs {
  const double* q;  // Rows r0.. of Q (stride d).
  const double* kt;
  const double* v;
  const double* vabs;
  const uint8_t* ok;
  double* acc;      // nr x sk.
  double* num;      // nr x dv.
  double* abs;
  int64_t nr, sk, d, dv, j0, j1, kend;
};

// dots: acc[r][j] += the blocked dot of q's row r and key j, for j in [j0, j1) (K^T as kt).
void Dots(const HotArgs& a);
// pv: num[r][c] += e[r][j] V[j][c], abs[r][c] += e[r][j] |V[j][c]|, keys [0, kend) in key tiles.
void Pv(const HotArgs& a);
// Dots' sums per element from K as it is (s_k x d, `k`), for keys [0, kend).
void DotsRowMajor(const HotArgs& a, const double* k);

// (oy[x], oe[x]) = certified::ExpEv({y[x], e[x]}) for x < n, value and bound bit for bit (refusals
// included: {0, Inf}). Vector lanes repeat ExpEv's operations (certified_double.cc; its
// nearbyint as + 1.5 2^52 - 1.5 2^52, exact and equal for |y inv| < 2^51; a -0 k for +0 changes
// only the sign of a zero r, which the Horner step's addition of 1/6! removes from the value, and
// the bounds take |r|); a vector with a lane ExpEv could refuse (|y| > 700, NaN, e > 2^-20, the
// reduced argument's bound over 0.006) takes the scalar ExpEv for all its lanes.
// attention_kernels_test checks it against ExpEv on every ISA level this CPU has.
void ExpEvs(const double* y, const double* e, double* oy, double* oe, int64_t n);

}  // namespace fpconform::attention_internal

#endif  // FPCONFORM_ORACLES_ATTENTION_KERNELS_H_
