// The Fast* entries (fast_eval.h): checks, decoding into per-thread buffers, the row ranges of a
// matmul on threads, and the fallbacks to the generic engine. The arithmetic is in the layers
// below: fast_plan (what the model means), fast_decode (inputs), fast_scalar (one dot),
// fast_tiles_avx2 / fast_tiles_avx512 (matmul tiles). Only the kernel files (fast_decode_avx2.cc,
// fast_scalar.*, fast_tiles_*.cc) carry target attributes (AVX2+FMA; AVX-512 for one tile); this
// file calls them only after HostReady().
#include "accumulation/fast_eval.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "accumulation/eval_checks.h"
#include "accumulation/fast_decode.h"
#include "accumulation/fast_kernels.h"
#include "accumulation/fast_plan.h"
#include "accumulation/strings_internal.h"
#include "base/run_workers.h"

namespace fpconform {
namespace {

using accumulation_internal::Cat;
using accumulation_internal::CheckDotArgs;
using accumulation_internal::CheckMatmulArgs;
using accumulation_internal::CheckSumArgs;
using fast_internal::ApplyInputDaz;
using fast_internal::DecodeAll;
using fast_internal::DecodeF64;
using fast_internal::DecodeOne;
using fast_internal::Decoded;
using fast_internal::DotView;
using fast_internal::DotView64;
using fast_internal::HostReady;
using fast_internal::InputKind;
using fast_internal::MakePlan;
using fast_internal::MatIn;
using fast_internal::MatIn64;
using fast_internal::Plan;
using fast_internal::RunDot;
using fast_internal::RunDot64;
using fast_internal::RunMatmulRows;
using fast_internal::RunMatmulRows64;

std::atomic<uint64_t> g_fallbacks{0};

// rows(lo, hi) over [0, m) on up to `threads` workers (RunRanges over the 4-row tiles), in ranges
// that start at multiples of 4 (the tile height), so that each element is computed by one worker.
template <class Rows>
void RunRowBlocks(int m, int threads, const Rows& rows) {
  RunRanges((int64_t{m} + 3) / 4, threads, [&](int64_t b, int64_t e) {
    rows(static_cast<int>(4 * b), static_cast<int>(std::min<int64_t>(m, 4 * e)));
  });
}

// FastEvaluateMatmul's buffers (one set per calling thread, reused across calls).
struct MatScratch {
  std::vector<float> av, ao, bv, bo, bpackf;
  std::vector<double> apow, bpow, bd, bpack;
  std::vector<double> a64, bt64;  // float64 inputs: A row-major (m x k), B column-major (n x k).
  std::vector<uint8_t> redo, bad_row, bad_col;
};

absl::StatusOr<EvalResult> DotImpl(const Model& model, const Plan& plan,
                                   std::span<const uint64_t> a, std::span<const uint64_t> b,
                                   bool is_sum, uint64_t c_bits, const EvalOptions& options) {
  auto generic = [&]() {
    g_fallbacks.fetch_add(1, std::memory_order_relaxed);
    return is_sum ? GenericEvaluateSum(model, a, c_bits, options)
                  : GenericEvaluateDot(model, a, b, c_bits, options);
  };
  if (!HostReady()) return generic();
  if (plan.in_a == InputKind::kFloat64) {
    // float64 inputs (a sum: b = 1, as below).
    const size_t n = a.size();
    std::vector<double> av(n), bv(n, 1.0);
    bool ok = true;
    for (size_t i = 0; i < n; ++i) ok &= DecodeF64(a[i], av[i]);
    if (!is_sum) {
      for (size_t i = 0; i < n; ++i) ok &= DecodeF64(b[i], bv[i]);
    }
    if (!ok) return generic();
    const DotView64 d{av.data(), bv.data(), av.data(), bv.data(), nullptr, nullptr, 1, 1,
                      static_cast<int>(n)};
    EvalResult r;
    if (!RunDot64(plan, d, c_bits, r, options.seed, options.want_bound)) return generic();
    return r;
  }
  const bool need_pow = plan.arith == Plan::Arith::kFused;
  Decoded da, db;
  if (!DecodeAll(plan.in_a, plan.table_a, a, da, need_pow)) return generic();
  if (is_sum) {
    // A sum is a dot with b = 1 (exact; nominal exponent 0), see evaluate.cc's Leaves.
    db.v.assign(a.size(), 1.0f);
    db.o.assign(a.size(), 1.0f);
    db.pow.assign(a.size(), 1.0);
  } else if (!DecodeAll(plan.in_b, plan.table_b, b, db, need_pow)) {
    return generic();
  }
  if (plan.input_daz) {
    ApplyInputDaz(da, plan.daz_min_a);
    if (!is_sum) ApplyInputDaz(db, plan.daz_min_b);
  }
  const float* ao = da.o.empty() ? da.v.data() : da.o.data();
  const float* bo = db.o.empty() ? db.v.data() : db.o.data();
  const DotView d{da.v.data(), db.v.data(), ao, bo,
                  need_pow ? da.pow.data() : nullptr, need_pow ? db.pow.data() : nullptr,
                  1, 1, static_cast<int>(a.size())};
  EvalResult r;
  const bool ok = RunDot(plan, d, c_bits, r, options.seed, options.want_bound);
  if (!ok) return generic();
  return r;
}

}  // namespace

uint64_t FastEvalFallbacks() { return g_fallbacks.load(std::memory_order_relaxed); }

const char* FastPathIneligibleReason(const Model& model) {
  Plan plan;
  return MakePlan(model, plan);
}

bool FastPathEligible(const Model& model) { return *FastPathIneligibleReason(model) == '\0'; }

absl::StatusOr<EvalResult> FastEvaluateDot(const Model& model, std::span<const uint64_t> a,
                                           std::span<const uint64_t> b, uint64_t c_bits,
                                           const EvalOptions& options) {
  Plan plan;
  if (const char* why = MakePlan(model, plan); *why != '\0') {
    return absl::FailedPreconditionError(
        Cat("fast dot: model '", model.name, "' is not eligible (", why, ")"));
  }
  return fast_internal::FastDot(model, plan, a, b, c_bits, options);
}

absl::StatusOr<EvalResult> FastEvaluateSum(const Model& model, std::span<const uint64_t> x,
                                           uint64_t c_bits, const EvalOptions& options) {
  Plan plan;
  if (const char* why = MakePlan(model, plan); *why != '\0') {
    return absl::FailedPreconditionError(
        Cat("fast sum: model '", model.name, "' is not eligible (", why, ")"));
  }
  return fast_internal::FastSum(model, plan, x, c_bits, options);
}

absl::Status FastEvaluateMatmul(const Model& model, int m, int n, int k,
                                std::span<const uint64_t> a, Layout a_layout,
                                std::span<const uint64_t> b, Layout b_layout,
                                std::span<const uint64_t> c, std::span<uint64_t> d,
                                std::span<double> bounds, const EvalOptions& options,
                                int threads) {
  Plan plan;
  if (const char* why = MakePlan(model, plan); *why != '\0') {
    return absl::FailedPreconditionError(
        Cat("fast matmul: model '", model.name, "' is not eligible (", why, ")"));
  }
  return fast_internal::FastMatmul(model, plan, m, n, k, a, a_layout, b, b_layout, c, d, bounds,
                                   options, threads);
}

absl::StatusOr<EvalResult> fast_internal::FastDot(const Model& model, const Plan& plan,
                                                  std::span<const uint64_t> a,
                                                  std::span<const uint64_t> b, uint64_t c_bits,
                                                  const EvalOptions& options) {
  if (absl::Status st = CheckDotArgs(a.size(), b.size()); !st.ok()) return st;
  return DotImpl(model, plan, a, b, false, c_bits, options);
}

absl::StatusOr<EvalResult> fast_internal::FastSum(const Model& model, const Plan& plan,
                                                  std::span<const uint64_t> x, uint64_t c_bits,
                                                  const EvalOptions& options) {
  if (absl::Status st = CheckSumArgs(x.size()); !st.ok()) return st;
  return DotImpl(model, plan, x, {}, true, c_bits, options);
}

absl::Status fast_internal::FastMatmul(const Model& model, const Plan& plan, int m, int n,
                                       int k, std::span<const uint64_t> a, Layout a_layout,
                                       std::span<const uint64_t> b, Layout b_layout,
                                       std::span<const uint64_t> c, std::span<uint64_t> d,
                                       std::span<double> bounds, const EvalOptions& options,
                                       int threads) {
  if (absl::Status st = CheckMatmulArgs(m, n, k, a.size(), b.size(), c.size(), d.size(),
                                        bounds.size(), threads);
      !st.ok()) {
    return st;
  }
  const size_t mk = size_t(m) * k, kn = size_t(k) * n, mn = size_t(m) * n;
  if (!HostReady()) {
    g_fallbacks.fetch_add(uint64_t(m) * uint64_t(n), std::memory_order_relaxed);
    return GenericEvaluateMatmul(model, m, n, k, a, a_layout, b, b_layout, c, d, bounds,
                                 options);
  }
  const bool want_bound = options.want_bound && !bounds.empty();
  const bool fused = plan.arith == Plan::Arith::kFused;
  // Decode into row-major A (m x k) and B (k x n), in per-thread buffers kept between calls
  // (fresh multi-megabyte allocations cost page faults comparable to the arithmetic).
  auto a_at = [&](int i, int p) {
    return a_layout == Layout::kRowMajor ? a[size_t(i) * k + p] : a[size_t(p) * m + i];
  };
  auto b_at = [&](int p, int j) {
    return b_layout == Layout::kRowMajor ? b[size_t(p) * n + j] : b[size_t(j) * k + p];
  };
  static thread_local MatScratch scratch;
  MatScratch& sc = scratch;
  const bool need_orig = want_bound && (plan.convert || plan.input_daz);
  std::vector<uint8_t>& redo = sc.redo;
  redo.assign(mn, 0);
  if (plan.arith != Plan::Arith::kHostF64) {
    // float32 (bfloat16: chain.format) c with bits above the container: the generic path
    // decides what they mean.
    const int width = plan.promote_bf16 || plan.acc_bf16 ? 16 : 32;
    for (size_t idx = 0; idx < c.size(); ++idx) redo[idx] = (c[idx] >> width) != 0;
  }
  std::vector<uint8_t>& bad_row = sc.bad_row;
  std::vector<uint8_t>& bad_col = sc.bad_col;
  bad_row.assign(m, 0);
  bad_col.assign(n, 0);
  if (plan.in_a == InputKind::kFloat64) {
    // float64 inputs: A row-major and B column-major in doubles (and B packed in 8-column tiles
    // for the tiles), RunMatmulRows64 (c any float64 bits, non-finite ones redone).
    sc.a64.resize(mk);
    sc.bt64.resize(kn);
    // `count` vectors of k values, at(i, p) (A's rows, B's columns), decoded to out[i * k + p];
    // bad[i] set, and the value read as 0, where one is not finite.
    auto decode = [&](int count, auto at, std::vector<double>& out, std::vector<uint8_t>& bad) {
      for (int i = 0; i < count; ++i) {
        for (int p = 0; p < k; ++p) {
          double& v = out[size_t(i) * k + p];
          if (!DecodeF64(at(i, p), v)) {
            bad[i] = 1;
            v = 0;
          }
        }
      }
    };
    decode(m, a_at, sc.a64, bad_row);
    decode(n, [&](int j, int p) { return b_at(p, j); }, sc.bt64, bad_col);
    sc.bpack.resize(size_t(n / 8) * k * 8);
    for (int t = 0; t < n / 8; ++t) {
      for (int p = 0; p < k; ++p) {
        for (int w = 0; w < 8; ++w) {
          sc.bpack[(size_t(t) * k + p) * 8 + w] = sc.bt64[size_t(8 * t + w) * k + p];
        }
      }
    }
    const MatIn64 in{&plan, m, n, k, sc.a64.data(), sc.bt64.data(), sc.bpack.data(),
                     c.empty() ? nullptr : c.data(), d.data(),
                     want_bound ? bounds.data() : nullptr, &redo, bad_row.data(),
                     bad_col.data(), options.seed};
    auto rows = [&](int lo, int hi) { RunMatmulRows64(in, lo, hi, want_bound); };
    RunRowBlocks(m, threads, rows);
  } else {
    sc.av.resize(mk);
    sc.ao.resize(need_orig ? mk : 0);
    sc.apow.resize(fused ? mk : 0);
    sc.bv.resize(kn);
    sc.bo.resize(need_orig ? kn : 0);
    sc.bpow.resize(fused ? kn : 0);
    {
      double pw;
      float orig;
      // One input (A's or B's kind and table) decoded into used[idx] (orig[idx], pow[idx] where
      // kept); false, with the values read as 0, when the generic path must decide it.
      auto decode = [&](InputKind kind, const fast_internal::Table* table, uint64_t bits,
                        std::vector<float>& used, std::vector<float>& origs,
                        std::vector<double>& pows, size_t idx) {
        if (DecodeOne(kind, table, bits, used[idx], need_orig ? origs[idx] : orig,
                      fused ? pows[idx] : pw)) {
          return true;
        }
        used[idx] = 0;  // Keeps the kernels' arithmetic finite; redone below.
        if (need_orig) origs[idx] = 0;
        return false;
      };
      for (int i = 0; i < m; ++i) {
        for (int p = 0; p < k; ++p) {
          if (!decode(plan.in_a, plan.table_a, a_at(i, p), sc.av, sc.ao, sc.apow,
                      size_t(i) * k + p)) {
            bad_row[i] = 1;
          }
        }
      }
      for (int p = 0; p < k; ++p) {
        for (int j = 0; j < n; ++j) {
          if (!decode(plan.in_b, plan.table_b, b_at(p, j), sc.bv, sc.bo, sc.bpow,
                      size_t(p) * n + j)) {
            bad_col[j] = 1;
          }
        }
      }
      if (plan.input_daz) {
        // inputs.daz after the decode loops (kept out of them: they are a third of a fast matmul).
        for (float& v : sc.av) {
          if (std::fabs(v) < plan.daz_min_a) v = std::copysign(0.0f, v);
        }
        for (float& v : sc.bv) {
          if (std::fabs(v) < plan.daz_min_b) v = std::copysign(0.0f, v);
        }
      }
    }
    sc.bd.clear();
    sc.bpack.clear();
    sc.bpackf.clear();
    if (fused) {
      if (want_bound) sc.bd.assign(sc.bv.begin(), sc.bv.end());
      sc.bpack.resize(size_t(n / 8) * k * 16);
      for (int t = 0; t < n / 8; ++t) {
        for (int p = 0; p < k; ++p) {
          for (int w = 0; w < 8; ++w) {
            sc.bpack[(size_t(t) * k + p) * 16 + w] = sc.bv[size_t(p) * n + 8 * t + w];
            sc.bpack[(size_t(t) * k + p) * 16 + 8 + w] = sc.bpow[size_t(p) * n + 8 * t + w];
          }
        }
      }
    } else if (!want_bound) {
      sc.bpackf.resize(size_t(n / 16) * k * 16);
      for (int t = 0; t < n / 16; ++t) {
        for (int p = 0; p < k; ++p) {
          for (int w = 0; w < 16; ++w) {
            sc.bpackf[(size_t(t) * k + p) * 16 + w] = sc.bv[size_t(p) * n + 16 * t + w];
          }
        }
      }
    }
    MatIn in{&plan, m, n, k, sc.av.data(), need_orig ? sc.ao.data() : sc.av.data(),
             fused ? sc.apow.data() : nullptr, sc.bv.data(),
             need_orig ? sc.bo.data() : sc.bv.data(), fused ? sc.bpow.data() : nullptr,
             sc.bd.data(), sc.bpack.data(), sc.bpackf.data(), c.empty() ? nullptr : c.data(),
             d.data(), want_bound ? bounds.data() : nullptr, &redo, options.seed};
    auto rows = [&](int lo, int hi) { RunMatmulRows(in, lo, hi, want_bound); };
    RunRowBlocks(m, threads, rows);
  }
  // Elements the fast kernels could not decide: the generic path, on the original bits.
  std::vector<uint64_t> row(k), col(k);
  EvalOptions opt = options;
  opt.want_bound = want_bound;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      const size_t idx = size_t(i) * n + j;
      if (!redo[idx] && !bad_row[i] && !bad_col[j]) continue;
      g_fallbacks.fetch_add(1, std::memory_order_relaxed);
      for (int p = 0; p < k; ++p) {
        row[p] = a_at(i, p);
        col[p] = b_at(p, j);
      }
      absl::StatusOr<EvalResult> r =
          GenericEvaluateDot(model, row, col, c.empty() ? 0 : c[idx], opt);
      if (!r.ok()) return r.status();
      d[idx] = r->bits;
      if (want_bound) bounds[idx] = r->bound;
    }
  }
  return absl::OkStatus();
}

}  // namespace fpconform
