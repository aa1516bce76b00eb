// The fast matmul's walked tiles (fast_tiles_avx2.inc's WalkRows), compiled for AVX2+FMA: WalkTile,
// chain_walk.h's walk with every node a block of lanes, for the plans with Plan::walk.
#include "accumulation/fast_tiles_avx2_begin.h"  // Includes; the AVX2+FMA target from here.
namespace fpconform::fast_internal {

#include "accumulation/fast_tiles_avx2.inc"

namespace {

// Walked tile (Plan::walk: strided, split_k, simd, cascade, tree or pairwise-with-unroll chains,
// promote into bfloat16, adder.ftz/daz, output to bfloat16): R rows x W columns from (i0, j0),
// fully inside the matrix. chain_walk.h's WalkChain runs once per tile with every node a block
// of R*W lanes (the walk's order depends only on k and the seed, not on the values), each lane
// computed with ScalarDot's operations and bound arithmetic, so each element equals its dot.
template <class Acc, bool kRound, bool kBound, int R, int W>
class WalkTile : TileAt {
 public:
  static constexpr int L = R * W;
  using Node = LaneNode<Acc, kBound, L>;
  // FastEvaluateMatmul packs B's 16-column tiles for value-only host plans.
  static constexpr bool kPacked = !kBound && W == 16;
#if defined(__x86_64__)
  static constexpr bool kAvx = std::is_same_v<Acc, float> && W == 16;
#endif

  using TileAt::TileAt;

  void Run() {
    const int n = in_.n;
    Node total;
    bool c_bad[L] = {};
    for (int r = 0; r < R; ++r) {
      for (int w = 0; w < W; ++w) {
        const int l = r * W + w;
        const uint64_t cb = in_.c ? in_.c[size_t(i0_ + r) * n + j0_ + w] : 0;
        Acc cv;
        if constexpr (std::is_same_v<Acc, float>) {
          float f = 0;
          c_bad[l] = !DecodeC32(p_, cb, f);
          cv = c_bad[l] ? 0.0f : f;
        } else {
          cv = std::bit_cast<double>(cb);
        }
        total.v[l] = cv;
        if constexpr (kBound) {
          total.m[l] = std::fabs(static_cast<double>(cv));
          total.e[l] = 0;
        }
      }
    }
    total.may_be_subnormal = true;  // c.
    const Node out = accumulation_internal::WalkChain(*p_.model, in_.k, in_.seed, total, *this);
    for (int r = 0; r < R; ++r) {
      for (int w = 0; w < W; ++w) {
        const int l = r * W + w;
        const size_t idx = size_t(i0_ + r) * n + j0_ + w;
        const Acc v = out.v[l];
        const double m = kBound ? out.m[l] : 0.0, e = kBound ? out.e[l] : 0.0;
        EvalResult res;
        bool ok = !bad_[l] && !c_bad[l] && std::isfinite(v);
        if constexpr (std::is_same_v<Acc, float>) {
          ok = ok && Output32(p_, v, m, e, kBound, res);
        } else if (ok && p_.f64_to_f32_output) {
          const float f = static_cast<float>(v);
          ok = std::isfinite(f);
          res.bits = std::bit_cast<uint32_t>(f);
          if constexpr (kBound) res.bound = BoundStep(p_.u_out, p_.eta_out, e, m);
        } else {
          res.bits = std::bit_cast<uint64_t>(v);
          res.bound = e;
        }
        if (!ok) {
          (*in_.redo)[idx] = 1;
          continue;
        }
        in_.d[idx] = res.bits;
        if constexpr (kBound) in_.bounds[idx] = res.bound;
      }
    }
  }

  // chain_walk.h's operations.
  Node Zero() const { return Node{}; }
  Node Step(const Node& acc, int lo, int hi) {
    Node x = acc;
    StepInPlace(x, lo, hi);
    return x;
  }
  // acc + leaf lo in every lane (ScalarDot::StepWith); a leaf at or past k is +0 (simd padding).
  void StepInPlace(Node& x, int lo, int /*hi*/) {
    const int n = in_.n, k = in_.k;
    float a_used[R], b_used[W];
    const bool pad = lo >= k;
    // The packed column tile of B (values only) is contiguous in k.
    const float* brow = kPacked ? in_.bpackf + (size_t(j0_ / 16) * k + lo) * 16
                                : in_.b + size_t(lo) * n + j0_;
    for (int r = 0; r < R; ++r) a_used[r] = pad ? 0.0f : in_.a[size_t(i0_ + r) * k + lo];
    // adder.daz reads a subnormal accumulator lane as zero: looked for only where one can be.
    const bool daz = p_.acc_daz && x.may_be_subnormal;
    x.may_be_subnormal = !p_.ftz;  // The step's result: flushed, or possibly subnormal.
#if defined(__x86_64__)
    if constexpr (kAvx) {
      // The loops below in AVX2 (GCC's own vectorization shuffles the lanes).
      const __m256 zero = _mm256_setzero_ps();
      const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
      const __m256 min_normal = _mm256_set1_ps(kMinNormal32);
      // The step's incoming E: x.e, or with adder.daz's bound term where an accumulator lane is
      // subnormal (rare: looked for in AVX2 first; the value loop below then finds zeros there).
      double e0[kBound ? L : 1];
      const double* e_in = kBound ? x.e : nullptr;
      if constexpr (kBound) {
        if (daz) {
          __m256 any = zero;
          for (int q = 0; q < L; q += 8) {
            const __m256 mag = _mm256_and_ps(_mm256_loadu_ps(x.v + q), abs_mask);
            any = _mm256_or_ps(any, _mm256_and_ps(_mm256_cmp_ps(mag, min_normal, _CMP_LT_OQ),
                                                  _mm256_cmp_ps(mag, zero, _CMP_NEQ_OQ)));
          }
          if (_mm256_movemask_ps(any) != 0) {
            for (int l = 0; l < L; ++l) {
              e0[l] = x.e[l];
              const float av = x.v[l];
              if (av != 0 && std::fabs(av) < kMinNormal32) {
                e0[l] = Up(x.e[l] + std::fabs(static_cast<double>(av)));
                x.v[l] = std::copysign(0.0f, av);
              }
            }
            e_in = e0;
          }
        }
      }
      const __m256 b[2] = {pad ? zero : _mm256_loadu_ps(brow),
                           pad ? zero : _mm256_loadu_ps(brow + 8)};
      for (int r = 0; r < R; ++r) {
        const __m256 av = _mm256_set1_ps(a_used[r]);
        for (int h = 0; h < 2; ++h) {
          float* lane = x.v + r * 16 + 8 * h;
          __m256 v = _mm256_loadu_ps(lane);
          if (daz) {
            const __m256 mag = _mm256_and_ps(v, abs_mask);
            const __m256 sub = _mm256_and_ps(_mm256_cmp_ps(mag, min_normal, _CMP_LT_OQ),
                                             _mm256_cmp_ps(mag, zero, _CMP_NEQ_OQ));
            v = _mm256_blendv_ps(v, _mm256_andnot_ps(abs_mask, v), sub);
          }
          if constexpr (kRound) {
            v = _mm256_add_ps(v, _mm256_mul_ps(av, b[h]));
          } else {
            v = _mm256_fmadd_ps(av, b[h], v);
          }
          if (p_.ftz) {  // FlushTiny.
            const __m256 mag = _mm256_and_ps(v, abs_mask);
            v = _mm256_blendv_ps(v, _mm256_andnot_ps(abs_mask, v),
                                 _mm256_cmp_ps(mag, min_normal, _CMP_LT_OQ));
            const int eq = _mm256_movemask_ps(_mm256_cmp_ps(mag, min_normal, _CMP_EQ_OQ));
            if (eq != 0) {
              for (int q = 0; q < 8; ++q) bad_[r * 16 + 8 * h + q] |= ((eq >> q) & 1) != 0;
            }
          }
          _mm256_storeu_ps(lane, v);
        }
      }
      if constexpr (kBound) {
        float a_orig[R];
        for (int r = 0; r < R; ++r) a_orig[r] = pad ? 0.0f : in_.ao[size_t(i0_ + r) * k + lo];
        const float* bo = pad ? nullptr : in_.bo + size_t(lo) * n + j0_;
        if (avx512_) {
          BoundStepAvx512(kRound, R, x.m, x.e, x.m, e_in, a_orig, a_used, pad ? nullptr : brow, bo,
                          p_.u_acc, p_.eta_acc);
        } else {
          BoundStepLanes<Avx2Lanes, kRound, R>(x.m, x.e, x.m, e_in, a_orig, a_used,
                                               pad ? nullptr : brow, bo, p_.u_acc, p_.eta_acc);
        }
      }
      return;
    }
#endif
    for (int w = 0; w < W; ++w) b_used[w] = pad ? 0.0f : brow[w];
    double e0[kBound ? L : 1];
    if constexpr (kBound) {
      for (int l = 0; l < L; ++l) e0[l] = x.e[l];
    }
    if constexpr (std::is_same_v<Acc, float>) {
      if (daz) {
        for (int l = 0; l < L; ++l) {
          const float av = x.v[l];
          if (av != 0 && std::fabs(av) < kMinNormal32) {
            if constexpr (kBound) e0[l] = Up(x.e[l] + std::fabs(static_cast<double>(av)));
            x.v[l] = std::copysign(0.0f, av);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const Acc av = static_cast<Acc>(a_used[r]);
      for (int w = 0; w < W; ++w) {
        const Acc bv = static_cast<Acc>(b_used[w]);
        Acc& v = x.v[r * W + w];
        v = MulAddStep<Acc, kRound>(av, bv, v);
      }
    }
    if constexpr (std::is_same_v<Acc, float>) {
      if (p_.ftz) {
        for (int l = 0; l < L; ++l) x.v[l] = FlushTiny(x.v[l], bad_[l]);
      }
    }
    if constexpr (kBound) {
      const double u = p_.u_acc, eta = p_.eta_acc;
      float a_orig[R], b_orig[W];
      for (int r = 0; r < R; ++r) a_orig[r] = pad ? 0.0f : in_.ao[size_t(i0_ + r) * k + lo];
      for (int w = 0; w < W; ++w) b_orig[w] = pad ? 0.0f : in_.bo[size_t(lo) * n + j0_ + w];
      BoundStepScalar<Acc, kRound, R, W>(x.m, x.e, x.m, e0, a_orig, a_used, b_used, b_orig, u,
                                         eta);
    }
  }
  Node Combine(const Node& x, const Node& y) const {
    Node out;
    for (int l = 0; l < L; ++l) out.v[l] = x.v[l] + y.v[l];
    out.may_be_subnormal = true;
    AddBound(out, x, y, p_.u_comb, p_.eta_comb);
    return out;
  }
  Node Promote(const Node& x, const Node& y) const {
    Node out;
    out.may_be_subnormal = true;
    if constexpr (std::is_same_v<Acc, float>) {
      if (p_.promote_bf16) {
        for (int l = 0; l < L; ++l) out.v[l] = AddRoundBf16(x.v[l], y.v[l]);
      } else {
        for (int l = 0; l < L; ++l) out.v[l] = x.v[l] + y.v[l];
      }
    } else {
      for (int l = 0; l < L; ++l) out.v[l] = x.v[l] + y.v[l];
    }
    AddBound(out, x, y, p_.u_prom, p_.eta_prom);
    return out;
  }
  // Leaf i rounded into the accumulator (ScalarDot::RoundOne).
  Node RoundTerm(int i) {
    const int n = in_.n, k = in_.k;
    Node out;
    out.may_be_subnormal = !p_.ftz;
    for (int r = 0; r < R; ++r) {
      const Acc av = static_cast<Acc>(in_.a[size_t(i0_ + r) * k + i]);
      for (int w = 0; w < W; ++w) {
        const int l = r * W + w;
        const Acc prod = av * static_cast<Acc>(in_.b[size_t(i) * n + j0_ + w]);
        out.v[l] = prod;
        if constexpr (std::is_same_v<Acc, float>) {
          if (p_.ftz) out.v[l] = FlushTiny(out.v[l], bad_[l]);
        }
        if constexpr (kBound) {
          const double xe = static_cast<double>(in_.ao[size_t(i0_ + r) * k + i]) *
                            static_cast<double>(in_.bo[size_t(i) * n + j0_ + w]);
          double uv;
          if constexpr (kRound) {
            uv = static_cast<double>(prod);
          } else {
            uv = static_cast<double>(in_.a[size_t(i0_ + r) * k + i]) *
                 static_cast<double>(in_.b[size_t(i) * n + j0_ + w]);
          }
          const double mi = std::fabs(xe), ei = std::fabs(uv - xe);
          out.m[l] = mi;
          out.e[l] = BoundStep(p_.u_acc, p_.eta_acc, ei, mi);
        }
      }
    }
    return out;
  }
  void PadTerms(int64_t) const {}

 private:
  void AddBound(Node& out, const Node& x, const Node& y, double u, double eta) const {
    if constexpr (kBound) CombineBound<L>(avx512_, out.m, out.e, x.m, x.e, y.m, y.e, u, eta);
  }

  bool bad_[L] = {};  // A lane that FlushTiny sent to the generic path.
};

// Rows [i_lo, i_hi) of a walked plan: column tiles outside, rows inside (a column strip of B stays
// in cache), blocks of 4 rows then single rows.
template <bool kBound>
void WalkTileRows(const MatIn& in, int i_lo, int i_hi) {
  auto run_cols = [&](auto tile4, auto tile1, int w_width) {
    SweepColumns<kBound>(in, i_lo, i_hi, 4, w_width, tile4, tile1);
  };
  auto walk = [&](auto s, int i, int j) {
    using S = decltype(s);
    WalkTile<typename S::Acc, S::kRound, kBound, S::kRows, S::kWidth>(in, i, j).Run();
  };
  ByAcc(*in.p, run_cols, walk);
}

}  // namespace

void WalkRows(const MatIn& in, int i_lo, int i_hi, bool bound) {
  WithConstant(bound, [&](auto b) { WalkTileRows<decltype(b)::value>(in, i_lo, i_hi); });
}

}  // namespace fpconform::fast_internal
#include "accumulation/fast_tiles_avx2_end.h"  // The target pragma popped.
