// The fast matmul's tiles (fast_eval.h, "Matmul"), compiled for AVX2+FMA. This file: MatmulRows,
// which picks the tiles for a plan and runs them over a row range (fast_kernels.h's
// RunMatmulRows), and StoreRow32. The tiles themselves, one file per family, each with the row
// sweep that runs them: fast_tiles_avx2_host.cc (HostTile, HostTileF32, the float32 bound tiles,
// the float64-input tiles), fast_tiles_avx2_kahan.cc (KahanTile, KahanTileF32),
// fast_tiles_avx2_pairwise.cc (PairwiseTile), fast_tiles_avx2_walk.cc (WalkTile) and
// fast_tiles_avx2_fused.cc (FusedTile, fast_fused_lanes.inc's FusedTileLanes); what they share is
// fast_tiles_avx2.inc. The float32 bound kernels (fast_bound_lanes.inc) and the fused tile
// (fast_fused_lanes.inc) are written once for any register width, included in these files in ymm
// registers and in fast_tiles_avx512.cc in zmm.
#include "accumulation/fast_tiles_avx2_begin.h"  // Includes; the AVX2+FMA target from here.
namespace fpconform::fast_internal {

#include "accumulation/fast_tiles_avx2.inc"

void StoreRow32(const MatIn& in, int row, int j0, int width, const float* v, const double* e) {
  for (int w = 0; w < width; ++w) {
    const size_t idx = size_t(row) * in.n + j0 + w;
    if (!std::isfinite(v[w])) {
      (*in.redo)[idx] = 1;
    } else {
      in.d[idx] = std::bit_cast<uint32_t>(v[w]);
      if (e != nullptr) in.bounds[idx] = e[w];
    }
  }
}

namespace {

template <bool kBound>
void MatmulRows(const MatIn& in, int i_lo, int i_hi) {
  const Plan& p = *in.p;
  if (p.acc_bf16) {
    // A bfloat16 accumulator (AddRoundBf16 steps): element by element.
    for (int i = i_lo; i < i_hi; ++i) {
      for (int j = 0; j < in.n; ++j) ScalarElement<kBound>(in, i, j);
    }
    return;
  }
  // Pairwise chains with unroll > 1 (no preset matmul) run element by element.
  const bool pairwise = p.chain == ChainKind::kPairwise;
  const bool tiled = p.chain == ChainKind::kSequential || p.chain == ChainKind::kBlocked ||
                     p.chain == ChainKind::kPromote || (pairwise && p.unroll == 1);
  if (p.arith == Plan::Arith::kFused) {
    FusedRows(in, i_lo, i_hi, tiled, kBound);
  } else if (p.walk) {
    WalkRows(in, i_lo, i_hi, kBound);
  } else if (p.kahan) {
    KahanRows(in, i_lo, i_hi, tiled, kBound);
  } else if (pairwise) {
    PairwiseRows(in, i_lo, i_hi, tiled, kBound);
  } else {
    HostRows(in, i_lo, i_hi, tiled, kBound);
  }
}

}  // namespace

}  // namespace fpconform::fast_internal
#include "accumulation/fast_tiles_avx2_end.h"  // The target pragma popped.

namespace fpconform::fast_internal {

void RunMatmulRows(const MatIn& in, int i_lo, int i_hi, bool bound) {
  WithConstant(bound, [&](auto b) { MatmulRows<decltype(b)::value>(in, i_lo, i_hi); });
}

}  // namespace fpconform::fast_internal
