// The entry points of the fast paths' kernels (fast_eval.h), the files compiled for AVX2+FMA
// (fast_scalar.cc, fast_tiles_avx2.cc) or AVX-512 (fast_tiles_avx512.cc). The entries themselves
// have no target attribute; call them only after HostReady() (fast_plan.h), and the AVX-512 one
// only where ActiveIsa() is kAvx512 (base/isa.h).
#ifndef FPCONFORM_ACCUMULATION_FAST_KERNELS_H_
#define FPCONFORM_ACCUMULATION_FAST_KERNELS_H_

#include <cstdint>
#include <vector>

#include "accumulation/evaluate.h"
#include "accumulation/fast_decode.h"
#include "accumulation/fast_plan.h"

namespace fpconform::fast_internal {

// One dot on decoded inputs (fast_scalar.cc): false when the generic path must decide (bad
// group, non-finite result).
bool RunDot(const Plan& p, const DotView& d, uint64_t c_bits, EvalResult& out, uint64_t seed,
            bool bound);
// The same for float64 inputs (InputKind::kFloat64): every chain of a kHostF64 plan, in
// double, element by element (also the matmul path of these plans, fast_eval.cc).
bool RunDot64(const Plan& p, const DotView64& d, uint64_t c_bits, EvalResult& out,
              uint64_t seed, bool bound);

// ---------------------------------------------------------------------------------------------
// Matmul tiles. Inputs decoded to row-major A (m x k) and B (k x n).

struct MatIn {
  const Plan* p;
  int m, n, k;
  const float* a;   // m x k used.
  const float* ao;  // m x k original.
  const double* apow;
  const float* b;   // k x n used.
  const float* bo;
  const double* bpow;
  const double* bd;  // k x n used, as double (fused).
  // Packed column tiles of B for the AVX kernels: tile t (columns 8t..8t+7; 16t..16t+15 for
  // floats) is contiguous in k: bpack[(t * k + kk) * 16 + w] = value (w < 8), 2^nominal (w >= 8);
  // bpackf[(t * k + kk) * 16 + w] = value of column 16t + w.
  const double* bpack;
  const float* bpackf;
  const uint64_t* c;  // m x n or nullptr.
  uint64_t* d;
  double* bounds;     // or nullptr.
  std::vector<uint8_t>* redo;  // m x n: 1 = evaluate generically.
  uint64_t seed = 0;           // EvalOptions::seed.
};

// The float32 results of one tile row (fast_tiles_avx2.cc), elements (row, j0 .. j0 + width - 1):
// a non-finite value marks its element for the generic path (in.redo), any other is stored with
// its bound e[w] (e may be nullptr: values only). Shared by the float32 host tiles of both ISAs.
void StoreRow32(const MatIn& in, int row, int j0, int width, const float* v, const double* e);

// Rows [i_lo, i_hi) of a matmul (fast_tiles_avx2.cc): tiles, elements the tiles do not cover
// through the scalar path, in.redo set for the elements the generic path must decide.
void RunMatmulRows(const MatIn& in, int i_lo, int i_hi, bool bound);

// A matmul of float64 inputs (InputKind::kFloat64), decoded: A row-major (m x k), B column-major
// (n x k) and, for the tiles, packed in 8-column tiles (bpack[(t * k + kk) * 8 + w] =
// B(kk, 8t + w), t < n / 8). Rows and columns with a non-finite input are marked in bad_row /
// bad_col (their inputs read as 0 here; fast_eval.cc redoes those elements generically).
struct MatIn64 {
  const Plan* p;
  int m, n, k;
  const double* a;
  const double* bt;
  const double* bpack;
  const uint64_t* c;  // m x n or nullptr.
  uint64_t* d;
  double* bounds;     // or nullptr.
  std::vector<uint8_t>* redo;  // m x n: 1 = evaluate generically.
  const uint8_t* bad_row;
  const uint8_t* bad_col;
  uint64_t seed = 0;
};

// Rows [i_lo, i_hi) of a float64-input matmul (fast_tiles_avx2_host.cc): sequential and blocked
// chains (not kahan) in AVX2 register tiles of 4 (with bounds 2; or 1) rows x 8 columns, lane by
// lane the scalar path's operations (fma(a, b, acc), or acc + fl(a*b), then the block sums added
// in order; the bound as ScalarDot's, LeafBound64's leaf data); everything else (column tails,
// other chains) element by element through RunDot64.
void RunMatmulRows64(const MatIn64& in, int i_lo, int i_hi, bool bound);

// The fused tile in AVX-512 (fast_tiles_avx512.cc): fast_fused_lanes.inc's
// FusedTileLanes<Avx512Lanes, rows, floor_align, bound> at (i0, j0); rows 1, 2 (bound) or 1, 4
// (no bound).
void FusedTileAvx512Tile(int rows, bool floor_align, bool bound, const MatIn& in, int i0, int j0);

// One adder step's bound data on `rows` (1 or 4) rows x 16 float32 lanes (fast_tiles_avx512.cc):
// fast_bound_lanes.inc's BoundStepLanes<round_product, rows> in AVX-512, bit for bit (the walked
// and pairwise tiles' steps). b_used / b_orig: the step's 16 columns, or nullptr for a +0 padding
// leaf; m0, e0 (the incoming M and E) may be m, e.
void BoundStepAvx512(bool round_product, int rows, double* m, double* e, const double* m0,
                     const double* e0, const float* a_orig, const float* a_used,
                     const float* b_used, const float* b_orig, double u, double eta);

// A combine's bound data on `lanes` (a multiple of 8) lanes (fast_tiles_avx512.cc), bit for bit
// bound_step.h's m = Up(xm + ym), e = BoundStep(u, eta, xe + ye, m); m, e may be xm, xe.
void CombineBoundAvx512(int lanes, double* m, double* e, const double* xm, const double* xe,
                        const double* ym, const double* ye, double u, double eta);

// The AVX-512 float32 host tile with bounds (fast_tiles_avx512.cc): fast_bound_lanes.inc's
// HostBoundTileLanes, HostTile<float, round_product, true, rows, 16> at (i0, j0), rows 1 or 4,
// bit for bit (values and bounds);
// same_inputs: in.ao == in.a and in.bo == in.b (no input conversion).
void HostBoundTileAvx512Tile(bool round_product, bool same_inputs, int rows, const MatIn& in,
                             int i0, int j0);

}  // namespace fpconform::fast_internal

#endif  // FPCONFORM_ACCUMULATION_FAST_KERNELS_H_
