// The fast matmul's fused tiles (fast_tiles_avx2.inc's FusedRows), compiled for AVX2+FMA: the plans
// with a multi-term fused adder (Plan::Arith::kFused): fast_fused_lanes.inc's FusedTileLanes in
// ymm registers (in zmm through fast_tiles_avx512.cc), and FusedTile for the other chains.
#include "accumulation/fast_tiles_avx2_begin.h"  // Includes; the AVX2+FMA target from here.
namespace fpconform::fast_internal {

#include "accumulation/fast_tiles_avx2.inc"

namespace {

#if defined(__x86_64__)
#define FPCONFORM_LANES_TARGET  // The file's target pragma covers them.
#define FPCONFORM_LANES_LAMBDA
#include "accumulation/fast_fused_lanes.inc"
#undef FPCONFORM_LANES_LAMBDA
#undef FPCONFORM_LANES_TARGET
#endif

// Fused tile: one row i, W columns from j0 (sequential, blocked or promote chains).
template <bool kBound, int W>
void FusedTile(const MatIn& in, int i, int j0) {
  const Plan& p = *in.p;
  const int n = in.n, k = in.k;
  using Helper = ScalarDot<float, false>;
  const DotView dummy{};
  const Helper h(p, dummy);
  double tot[W], tm[W], te[W];
  bool bad[W];
  for (int w = 0; w < W; ++w) {
    tot[w] = CValue<float>(in, i, j0 + w);
    tm[w] = std::fabs(tot[w]);
    te[w] = 0;
    bad[w] = false;
  }
  const bool seq = p.chain == ChainKind::kSequential;
  const int chunk = seq ? std::max(k, 1) : p.chunk;
  const double two_f = std::ldexp(1.0, p.fraction_bits);
  const double two_mf = std::ldexp(1.0, -p.fraction_bits);
  const double u = p.u_acc, eta = p.eta_acc;
  const double uc = p.chain == ChainKind::kPromote ? p.u_prom : p.u_comb;
  const double etac = p.chain == ChainKind::kPromote ? p.eta_prom : p.eta_comb;
  const float* arow = in.a + size_t(i) * k;
  const float* aorow = in.ao + size_t(i) * k;
  const double* apow = in.apow + size_t(i) * k;
  for (int k0 = 0, k1 = 0; k0 < k; k0 = k1) {
    k1 = ChunkEnd(p, chunk, k0, k);
    double acc[W], am[W], ae[W];
    for (int w = 0; w < W; ++w) {
      acc[w] = seq ? tot[w] : 0.0;
      am[w] = seq ? tm[w] : 0.0;
      ae[w] = seq ? te[w] : 0.0;
    }
    for (int g0 = k0; g0 < k1; g0 += p.group) {
      const int g1 = std::min(k1, g0 + p.group);
      const bool full = g1 - g0 == p.group;
      double emax[W], s[W];
      for (int w = 0; w < W; ++w) emax[w] = h.AccPow(acc[w]);
      for (int kk = g0; kk < g1; ++kk) {
        const double av = arow[kk];
        const double* brow = in.bd + size_t(kk) * n + j0;
        if (p.actual) {
          for (int w = 0; w < W; ++w) emax[w] = std::max(emax[w], Helper::ExpPow(av * brow[w]));
        } else {
          const double ap = apow[kk];
          const double* bp = in.bpow + size_t(kk) * n + j0;
          for (int w = 0; w < W; ++w) emax[w] = std::max(emax[w], ap * bp[w]);
        }
      }
      double scale[W];
      for (int w = 0; w < W; ++w) {
        scale[w] = emax[w] > 0 ? two_f / emax[w] : 1.0;
        s[w] = h.Align(acc[w] * scale[w]);
      }
      for (int kk = g0; kk < g1; ++kk) {
        const double av = arow[kk];
        const double* brow = in.bd + size_t(kk) * n + j0;
        if (p.round_down) {
          for (int w = 0; w < W; ++w) s[w] += __builtin_floor(av * brow[w] * scale[w]);
        } else {
          for (int w = 0; w < W; ++w) s[w] += __builtin_trunc(av * brow[w] * scale[w]);
        }
      }
      if constexpr (kBound) {
        for (int w = 0; w < W; ++w) {
          double sum_e = ae[w], m = am[w];
          int nonzero = acc[w] != 0;
          for (int kk = g0; kk < g1; ++kk) {
            const double bu = in.bd[size_t(kk) * n + j0 + w];
            const double bo = in.bo[size_t(kk) * n + j0 + w];
            const double x = static_cast<double>(aorow[kk]) * bo;
            const double pu = static_cast<double>(arow[kk]) * bu;
            nonzero += pu != 0;
            sum_e += std::fabs(pu - x);
            m += std::fabs(x);
          }
          double t = 0;
          if (emax[w] > 0) {
            t = nonzero * std::max(emax[w] * two_mf, std::numeric_limits<double>::denorm_min());
          }
          am[w] = Up(m);
          ae[w] = BoundStep(u, eta, sum_e + t, am[w]);
        }
      }
      for (int w = 0; w < W; ++w) {
        acc[w] = static_cast<float>(h.RoundGroup(s[w], emax[w], full, bad[w]));
      }
    }
    for (int w = 0; w < W; ++w) {
      if (seq) {
        tot[w] = acc[w];
        tm[w] = am[w];
        te[w] = ae[w];
      } else {
        tot[w] = static_cast<float>(static_cast<float>(tot[w]) + static_cast<float>(acc[w]));
        if constexpr (kBound) {
          const double mm = Up(tm[w] + am[w]);
          te[w] = BoundStep(uc, etac, te[w] + ae[w], mm);
          tm[w] = mm;
        }
      }
    }
  }
  for (int w = 0; w < W; ++w) {
    const size_t idx = size_t(i) * n + j0 + w;
    const float v = static_cast<float>(tot[w]);
    if (bad[w] || !std::isfinite(v)) {
      (*in.redo)[idx] = 1;
      continue;
    }
    in.d[idx] = std::bit_cast<uint32_t>(v);
    if (kBound) in.bounds[idx] = te[w];
  }
}

template <bool kBound>
void FusedTileRows(const MatIn& in, int i_lo, int i_hi, bool tiled) {
  const Plan& p = *in.p;
  constexpr int W = 8;
#if defined(__x86_64__)
  if (tiled && ActiveIsa() == Isa::kAvx512) {
    // 4-row tiles; with bounds 2 (the bound data take the registers of the other rows).
    const bool fl = p.round_down;
    SweepColumns<kBound>(
        in, i_lo, i_hi, kBound ? 2 : 4, W,
        [&](int i, int j) { FusedTileAvx512Tile(kBound ? 2 : 4, fl, kBound, in, i, j); },
        [&](int i, int j) { FusedTileAvx512Tile(1, fl, kBound, in, i, j); });
    return;
  }
  if (tiled) {
    // AVX2: 2-row tiles (with 4 rows the 16 registers spill the group's data; 1.1-1.3x
    // slower); with bounds 1 (the bound data take the registers of the other row).
    WithConstant(p.round_down, [&](auto floor_tag) {
      constexpr bool kFloor = decltype(floor_tag)::value;
      constexpr int kRows = kBound ? 1 : 2;
      SweepColumns<kBound>(
          in, i_lo, i_hi, kRows, W,
          [&](int i, int j) { FusedTileLanes<Avx2Lanes, kRows, kFloor, kBound>(in, i, j); },
          [&](int i, int j) { FusedTileLanes<Avx2Lanes, 1, kFloor, kBound>(in, i, j); });
    });
    return;
  }
#endif
  for (int i = i_lo; i < i_hi; ++i) {
    int j = 0;
    if (tiled) {
      for (; j + W <= in.n; j += W) FusedTile<kBound, W>(in, i, j);
    }
    for (; j < in.n; ++j) ScalarElement<kBound>(in, i, j);
  }
}

}  // namespace

void FusedRows(const MatIn& in, int i_lo, int i_hi, bool tiled, bool bound) {
  WithConstant(bound, [&](auto b) { FusedTileRows<decltype(b)::value>(in, i_lo, i_hi, tiled); });
}

}  // namespace fpconform::fast_internal
#include "accumulation/fast_tiles_avx2_end.h"  // The target pragma popped.
