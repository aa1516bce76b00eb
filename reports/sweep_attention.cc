// The tolerance sweep's attention rows (sweep_attention.h; the rules are sweep.h's [attention]).
#include "reports/sweep_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <span>
#include <utility>

#include "base/hash.h"
#include "base/str_cat.h"
#include "cases/pinned_random.h"
#include "formats/format_spec.h"
#include "formats/ops.h"
#include "oracles/attention.h"
#include "reports/parallel_for.h"
#include "reports/stats.h"
#include "reports/sweep_rule.h"

namespace fpconform::reports::sweep_internal {
namespace {

using composite::AttentionModel;

// "peaked": Q ~ N(0, 8^2), so that the scaled scores have standard deviation 8.
constexpr double kPeakedQ = 8;
// last_key_block_dropped: the keys of the row's last 64-key block (FlashAttention-2's kBlockN for
// head dim 128 is 64 or 128; a row of at most 64 keys has one block and is left unchanged).
constexpr int64_t kDroppedBlock = 64;

// nki-library's attention_cte test: ValidationArgs(relative_accuracy=2e-2, absolute_accuracy=1e-5)
// (aws-neuron/nki-library test/integration/nkilib/core/attention/test_attention_cte.py, commit
// 0759719), checked by maxAllClose in its default mode "max" (test/integration/nkilib/utils/
// comparators.py, commit 181b205): |a - b| <= atol + rtol * max|b| with max|b| over the tensor;
// np.allclose with the same numbers takes |b| per element instead.
constexpr double kNkiRtol = 2e-2, kNkiAtol = 1e-5;
// FlashAttention's test (Dao-AILab/flash-attention tests/test_flash_attn.py, commit 0251105a,
// line 1556, test_flash_attn_causal): (out - out_ref).abs().max() <= 2 * (out_pt -
// out_ref).abs().max() + 1e-5, out_ref = attention_ref in float32 cast to the dtype, out_pt =
// attention_ref(upcast=False, reorder_ops=True) in the dtype.
constexpr double kFaFactor = 2, kFaConst = 1e-5;

double Round(const FormatSpec& f, double v) { return ToDouble(f, DoubleToBits(f, v)); }

// A binary64 dot product (four partial sums: for the mutants, whose effect dwarfs its error).
double Dot(const double* a, const double* b, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

// The unit's query rows: R evenly spaced rows of [0, S).
std::vector<int64_t> QueryRows(const AttentionUnit& u) {
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < u.rows; ++r) rows.push_back(((2 * r + 1) * u.s) / (2 * u.rows));
  return rows;
}

// ---- One input format's inputs, exact values and binary64 references. ----

struct Group {
  const FormatSpec* in = nullptr;
  std::vector<int64_t> qrows;              // Absolute query row of each measured row.
  std::vector<double> q, k, v;             // S x D values in `in`.
  std::vector<double> qsub;                // The measured rows of Q: R x D.
  std::vector<uint8_t> keep;               // R x S: the causal mask of the measured rows.
  std::vector<ExactEnclosure> exact, pv;   // R x D: O and P|V|.
  std::vector<double> ess;                 // Per row: 1 / sum_j P_j^2.
  std::vector<double> pt;                  // Per element: the same-dtype PyTorch reference.
  std::vector<std::vector<double>> mutant;  // Per mutation: R x D binary64 values (empty: n/a).

  AttentionProblem Problem(const AttentionUnit& u) const {
    AttentionProblem p;
    p.s_q = u.rows;
    p.s_k = u.s;
    p.d = p.d_v = u.d;
    p.q = qsub;
    p.k = k;
    p.v = v;
    p.keep_mask = keep;
    return p;
  }
};

// A variant of the computation, in binary64 (sweep.h, [attention]).
struct Variant {
  double scale_power = 1;     // The scale applied this many times (0: missing, 2: twice).
  bool all_keys = false;      // The causal mask left out.
  bool drop_block = false;    // The row's last 64-key block left out.
  bool sum_bf16 = false;      // The row sum accumulated in bfloat16.
  bool k_transposed = false;  // K read as its D x S transpose.
};

// Row i of the variant into out (D values); with p2 set, also sum_j P_j^2.
void RowValues(const Group& g, const AttentionUnit& u, int64_t i, const Variant& var, std::span<double> out,
               double* p2 = nullptr) {
  const int64_t seq_len = u.s, D = u.d;
  int64_t n = u.causal && !var.all_keys ? i + 1 : seq_len;
  if (var.drop_block && n > kDroppedBlock) n = (n - 1) / kDroppedBlock * kDroppedBlock;
  const double scale = std::pow(1 / std::sqrt(static_cast<double>(D)), var.scale_power);
  const double* qi = g.q.data() + i * D;
  std::vector<double> s(static_cast<size_t>(n)), kt(static_cast<size_t>(D));
  for (int64_t j = 0; j < n; ++j) {
    const double* kj = g.k.data() + j * D;
    if (var.k_transposed) {  // Element (j, d) of K read as the D x S matrix it is not.
      for (int64_t d = 0; d < D; ++d) kt[static_cast<size_t>(d)] = g.k[static_cast<size_t>(d * seq_len + j)];
      kj = kt.data();
    }
    s[static_cast<size_t>(j)] = scale * Dot(qi, kj, D);
  }
  const double m = *std::max_element(s.begin(), s.end());
  double l = 0;
  for (double& x : s) {
    x = std::exp(x - m);
    l = var.sum_bf16 ? Round(BFloat16(), l + Round(BFloat16(), x)) : l + x;
  }
  for (int64_t c = 0; c < D; ++c) {
    double acc = 0;
    for (int64_t j = 0; j < n; ++j) acc += s[static_cast<size_t>(j)] * g.v[static_cast<size_t>(j * D + c)];
    out[static_cast<size_t>(c)] = acc / l;
  }
  if (p2 != nullptr) {
    double t = 0;
    for (double w : s) t += (w / l) * (w / l);
    *p2 = t;
  }
}

// softmax_wrong_axis: P'_ij = e^(s_ij - c_j) / Z_j normalized over the queries i' that attend key
// j, not over keys; O'_i = sum_j P'_ij V_j.
void WrongAxis(const Group& g, const AttentionUnit& u, int threads, std::vector<double>& out) {
  const int64_t seq_len = u.s, D = u.d;
  const double scale = 1 / std::sqrt(static_cast<double>(D));
  std::vector<double> c(static_cast<size_t>(seq_len)), z(static_cast<size_t>(seq_len));
  ParallelForEach(seq_len, threads, [&](int64_t j) {
    double mx = -INFINITY, sum = 0;  // Online: sum of e^(s - mx).
    for (int64_t i = u.causal ? j : 0; i < seq_len; ++i) {
      const double sc = scale * Dot(g.q.data() + i * D, g.k.data() + j * D, D);
      if (sc > mx) {
        sum = sum * std::exp(mx - sc) + 1;
        mx = sc;
      } else {
        sum += std::exp(sc - mx);
      }
    }
    c[static_cast<size_t>(j)] = mx;
    z[static_cast<size_t>(j)] = sum;
  });
  out.assign(static_cast<size_t>(u.rows * D), 0);
  ParallelForEach(u.rows, threads, [&](int64_t r) {
    const int64_t i = g.qrows[static_cast<size_t>(r)];
    const int64_t n = u.causal ? i + 1 : seq_len;
    for (int64_t j = 0; j < n; ++j) {
      const double p = std::exp(scale * Dot(g.q.data() + i * D, g.k.data() + j * D, D) - c[static_cast<size_t>(j)]) /
                       z[static_cast<size_t>(j)];
      for (int64_t x = 0; x < D; ++x) out[static_cast<size_t>(r * D + x)] += p * g.v[static_cast<size_t>(j * D + x)];
    }
  });
}

// FlashAttention's out_pt: attention_ref(upcast=False, reorder_ops=True) in the input format: K /
// sqrt(D), the scores, the softmax and the output each rounded to it (each step computed in
// binary64 and rounded once; PyTorch computes each in float32 and rounds once, a difference far
// below the dtype's rounding).
void TorchSameDtype(const Group& g, const AttentionUnit& u, int64_t r, std::span<double> out) {
  const FormatSpec& f = *g.in;
  const int64_t D = u.d, i = g.qrows[static_cast<size_t>(r)];
  const int64_t n = u.causal ? i + 1 : u.s;
  const double sq = std::sqrt(static_cast<double>(D));
  std::vector<double> ks(static_cast<size_t>(D)), s(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t d = 0; d < D; ++d) ks[static_cast<size_t>(d)] = Round(f, g.k[static_cast<size_t>(j * D + d)] / sq);
    s[static_cast<size_t>(j)] = Round(f, Dot(g.q.data() + i * D, ks.data(), D));
  }
  const double m = *std::max_element(s.begin(), s.end());
  double l = 0;
  for (double& x : s) {
    x = std::exp(x - m);
    l += x;
  }
  for (double& x : s) x = Round(f, x / l);
  for (int64_t c = 0; c < D; ++c) {
    double acc = 0;
    for (int64_t j = 0; j < n; ++j) acc += s[static_cast<size_t>(j)] * g.v[static_cast<size_t>(j * D + c)];
    out[static_cast<size_t>(c)] = Round(f, acc);
  }
}

std::vector<double> Draw(const SweepSpec& spec, const AttentionUnit& u, uint64_t operand) {
  const uint64_t key = Fnv1a(Cat("attention/", u.dist));
  PinnedRng rng(DeriveSeed(spec.seed, {key, uint64_t(u.s), uint64_t(u.d), operand}));
  std::vector<double> x(static_cast<size_t>(u.s * u.d));
  const double scale = operand == 0 && u.dist == "peaked" ? kPeakedQ : 1;
  for (double& v : x) v = scale * rng.Normal();
  return x;
}

// With `mutants` false the power table's mutated outputs are not computed (the typed tolerance
// call needs none).
absl::Status MakeGroup(const AttentionUnit& u, const SweepSpec& spec, const FormatSpec& in, int threads,
                       Group& g, bool mutants = true) {
  g.in = &in;
  g.qrows = QueryRows(u);
  const int64_t R = u.rows, seq_len = u.s, D = u.d;
  std::vector<double>* ops[] = {&g.q, &g.k, &g.v};
  for (uint64_t o = 0; o < 3; ++o) {
    *ops[o] = Draw(spec, u, o);
    for (double& x : *ops[o]) x = Round(in, x);
  }
  for (int64_t i : g.qrows) g.qsub.insert(g.qsub.end(), g.q.begin() + i * D, g.q.begin() + (i + 1) * D);
  if (u.causal) {
    g.keep.assign(static_cast<size_t>(R * seq_len), 0);
    for (int64_t r = 0; r < R; ++r) {
      for (int64_t j = 0; j <= g.qrows[static_cast<size_t>(r)]; ++j) g.keep[static_cast<size_t>(r * seq_len + j)] = 1;
    }
  }
  g.exact.resize(static_cast<size_t>(R * D));
  g.pv.resize(g.exact.size());
  AttentionOutputs o;
  o.enclosure = g.exact;
  o.abs_enclosure = g.pv;  // P|V| in the same pass.
  if (absl::Status s = AttentionRows(g.Problem(u), 0, R, o, nullptr, threads); !s.ok()) return s;
  g.ess.resize(static_cast<size_t>(R));
  g.pt.resize(g.exact.size());
  std::vector<double> scratch(g.exact.size());
  ParallelForEach(R, threads, [&](int64_t r) {
    const size_t at = static_cast<size_t>(r * D);
    double p2 = 0;
    RowValues(g, u, g.qrows[static_cast<size_t>(r)], Variant{}, std::span<double>(scratch).subspan(at, D), &p2);
    g.ess[static_cast<size_t>(r)] = 1 / p2;
    TorchSameDtype(g, u, r, std::span<double>(g.pt).subspan(at, D));
  });
  const std::vector<std::string>& names = AttentionMutationNames();
  g.mutant.assign(names.size(), {});
  if (!mutants) return absl::OkStatus();
  for (size_t mi = 0; mi < names.size(); ++mi) {
    const std::string& name = names[mi];
    if (name == "causal_mask_missing" && !u.causal) continue;
    std::vector<double>& out = g.mutant[mi];
    if (name == "softmax_wrong_axis") {
      WrongAxis(g, u, threads, out);
      continue;
    }
    Variant var;
    var.scale_power = name == "scale_twice" ? 2 : name == "scale_missing" ? 0 : 1;
    var.all_keys = name == "causal_mask_missing";
    var.drop_block = name == "last_key_block_dropped";
    var.sum_bf16 = name == "row_sum_bfloat16";
    var.k_transposed = name == "k_transposed_read";
    out.resize(g.exact.size());
    ParallelForEach(R, threads, [&](int64_t r) {
      RowValues(g, u, g.qrows[static_cast<size_t>(r)], var, std::span<double>(out).subspan(static_cast<size_t>(r * D), D));
    });
  }
  return absl::OkStatus();
}

// The probabilistic estimate of model m's error on row r (sweep.h, [attention]): per column c the
// standard deviation sigma_c of the sum of independent rounding errors, each uniform in +-u (so of
// variance u^2 / 3), propagated to first order:
//   a score s_j errs by the input roundings the scale placement makes (Q * scale: u_in on each
//   product term; Q and K times sqrt(scale): two of them) and the compute-format dot (u_c on
//   scale sum_d |q_d k_jd|); the exponential by eps = exp_ulp 2^(1 - p_c) relative; both move
//   P_j by P_j (ds_j + de_j) and o_c by P_j (ds_j + de_j) (V_jc - o_c);
//   P's rounding to formats.p (u_P) moves o_c by P_j d_j V_jc when the row sum adds unrounded P,
//   by P_j d_j (V_jc - o_c) when it adds the rounded one;
//   the compute-format sums of n terms: about u_c sqrt(n) relative on sum_j P_j V_jc and on the
//   row sum; the normalization u_c (divide) or 2 u_c (reciprocal and multiply; exp_lse: eps + 2 u_c).
void ProbSigma(const Group& g, const AttentionUnit& u, const AttentionModel& m, int64_t r, std::span<double> sigma) {
  const int64_t seq_len = u.s, D = u.d, i = g.qrows[static_cast<size_t>(r)];
  const int64_t n = u.causal ? i + 1 : seq_len;
  const double scale = 1 / std::sqrt(static_cast<double>(D));
  const double u_in = std::ldexp(1.0, -(m.input->fraction_bits + 1));
  const double u_c = std::ldexp(1.0, -(m.compute->fraction_bits + 1));
  const double u_p = m.p_format == m.compute ? 0 : std::ldexp(1.0, -(m.p_format->fraction_bits + 1));
  const double eps = m.exp_ulp * std::ldexp(1.0, -m.compute->fraction_bits);
  const double rounded_operands = m.scale == composite::ScalePlacement::kFoldQ        ? 1
                                  : m.scale == composite::ScalePlacement::kFoldQKSqrt ? 2
                                                                                      : 0;
  const double* qi = g.q.data() + i * D;
  std::vector<double> w(static_cast<size_t>(n)), var_w(static_cast<size_t>(n));
  double mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    const double* kj = g.k.data() + j * D;
    double sq = 0, ab = 0;
    for (int64_t d = 0; d < D; ++d) {
      sq += (qi[d] * kj[d]) * (qi[d] * kj[d]);
      ab += std::fabs(qi[d] * kj[d]);
    }
    w[static_cast<size_t>(j)] = scale * Dot(qi, kj, D);
    mx = std::max(mx, w[static_cast<size_t>(j)]);
    var_w[static_cast<size_t>(j)] =
        (rounded_operands * u_in * u_in * scale * scale * sq + u_c * u_c * scale * scale * ab * ab + eps * eps) / 3;
  }
  double l = 0;
  for (double& x : w) {
    x = std::exp(x - mx);
    l += x;
  }
  const double nu = m.normalize == composite::Normalize::kDivide       ? u_c
                    : m.normalize == composite::Normalize::kReciprocal ? 2 * u_c
                                                                       : eps + 2 * u_c;
  for (int64_t c = 0; c < D; ++c) {
    double o = 0;
    for (int64_t j = 0; j < n; ++j) o += w[static_cast<size_t>(j)] / l * g.v[static_cast<size_t>(j * D + c)];
    double var = 0, pv2 = 0, p2 = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double pj = w[static_cast<size_t>(j)] / l, vj = g.v[static_cast<size_t>(j * D + c)];
      const double dv = vj - o, pvar = m.row_sum_rounded ? dv : vj;
      var += pj * pj * (dv * dv * var_w[static_cast<size_t>(j)] + u_p * u_p / 3 * pvar * pvar);
      pv2 += pj * pj * vj * vj;
      p2 += pj * pj;
    }
    var += u_c * u_c / 3 * static_cast<double>(n) * (pv2 + p2 * o * o) + nu * nu / 3 * o * o;
    sigma[static_cast<size_t>(c)] = std::sqrt(var);
  }
}

// ---- One model on a group's inputs. ----

struct AttentionRun {
  const AttentionModel* model = nullptr;
  const Group* group = nullptr;
  std::vector<double> y, bound;  // Emulated values and B per element (NaN: no bound).
  std::vector<double> sigma;     // The probabilistic estimate's standard deviation per element.
};

absl::StatusOr<AttentionRun> RunModel(const AttentionUnit& u, const AttentionModel& m, const Group& g, int threads) {
  AttentionRun run;
  run.model = &m;
  run.group = &g;
  const size_t n = g.exact.size();
  std::vector<uint64_t> bits(n);
  std::vector<double> lo(n), hi(n);
  if (absl::Status s = composite::EmulateAttentionRows(m, g.Problem(u), 0, u.rows, g.pv, g.exact, bits, lo,
                                                       hi, threads);
      !s.ok()) {
    return absl::Status(s.code(), Cat(m.name, ": ", s.message()));
  }
  run.y.resize(n);
  run.bound.resize(n);
  run.sigma.resize(n);
  ParallelForEach(u.rows, threads, [&](int64_t r) {
    ProbSigma(g, u, m, r, std::span<double>(run.sigma).subspan(static_cast<size_t>(r * u.d), static_cast<size_t>(u.d)));
  });
  for (size_t i = 0; i < n; ++i) {
    const ExactEnclosure& x = g.exact[i];
    run.y[i] = ToDouble(*m.output, bits[i]);
    const bool finite = std::isfinite(run.y[i]) && std::isfinite(x.lo) && std::isfinite(x.hi) && std::isfinite(lo[i]) &&
                        std::isfinite(hi[i]);
    run.bound[i] = finite ? std::max(hi[i] - x.lo, x.hi - lo[i]) * kUp : kNaN;
  }
  return run;
}

// One model's observations on a group and the rule's recommendations (sweep.h, [attention]).
struct Recommendation {
  std::vector<double> ulp, e, e_prob, ref, err_abs;  // Per finite element.
  double bound_ulp = 0, bound_abs = 0, prob = 0;
  int64_t unbounded = 0;
  double rtol = 0, atol = 0, prob_rtol = 0, prob_atol = 0, rec_ulp = 0;
};

Recommendation Recommend(const SweepSpec& spec, const Group& g, const FormatSpec& out, const AttentionRun& run) {
  Recommendation rc;
  for (size_t i = 0; i < g.exact.size(); ++i) {
    const ExactEnclosure& x = g.exact[i];
    if (!std::isfinite(x.nearest) || !std::isfinite(run.y[i])) {  // Not reached: finite inputs, no
      ++rc.unbounded;                                                // fully masked row.
      continue;
    }
    const double ulp_x = UlpAt(out, x.nearest);
    const double err = (std::fabs(run.y[i] - x.nearest) + (x.hi - x.lo)) * kUp;
    rc.ulp.push_back(err / ulp_x);
    rc.err_abs.push_back(std::fabs(run.y[i] - x.nearest));
    rc.ref.push_back(std::fabs(x.nearest));
    // Capped by the bound, which no error exceeds (lambda sigma can, when few keys dominate).
    const double estimate = spec.lambda * run.sigma[i] + ulp_x / 2;
    const double p_i = std::isnan(run.bound[i]) ? estimate : std::min(estimate, run.bound[i]);
    rc.prob = std::max(rc.prob, p_i);
    rc.e_prob.push_back(std::max(spec.factor * err, p_i));
    if (std::isnan(run.bound[i])) {  // The model gives no bound: covered by the observed error only.
      ++rc.unbounded;
      rc.e.push_back(spec.factor * err);
      continue;
    }
    rc.e.push_back(std::max(spec.factor * err, run.bound[i]));
    rc.bound_ulp = std::max(rc.bound_ulp, run.bound[i] / ulp_x);
    rc.bound_abs = std::max(rc.bound_abs, run.bound[i]);
  }
  std::tie(rc.rtol, rc.atol) = CoveringRtolAtol(rc.e, rc.ref);
  std::tie(rc.prob_rtol, rc.prob_atol) = CoveringRtolAtol(rc.e_prob, rc.ref);
  for (size_t i = 0; i < rc.e.size(); ++i) rc.rec_ulp = std::max(rc.rec_ulp, rc.e[i] / UlpAt(out, rc.ref[i]));
  return rc;
}

// The verdicts on one output (R x D values of the model's output format) per case.
struct Verdicts {
  std::vector<bool> affected, rec, prob, nki, allclose, fa;  // Per case: accepted (affected: differs).
};

// A recommendation's (rtol, atol), checked against the exact value.
struct Tol {
  double rtol = 0, atol = 0;
  bool Accepts(double a, double x) const { return std::fabs(a - x) <= atol + rtol * std::fabs(x); }
};

Verdicts Judge(const AttentionUnit& u, const Group& g, const FormatSpec& out, std::span<const double> a, Tol rec,
               Tol prob) {
  Verdicts v;
  const auto C = static_cast<size_t>(u.cases);
  v.affected.assign(C, false);
  v.rec.assign(C, true);
  v.prob.assign(C, true);
  v.nki.assign(C, true);
  v.allclose.assign(C, true);
  v.fa.assign(C, true);
  std::vector<double> brange(C, 0), diff(C, 0), diff_pt(C, 0);
  const auto D = static_cast<size_t>(u.d);
  for (size_t e = 0; e < a.size(); ++e) {
    const size_t c = (e / D) % C;
    const double x = g.exact[e].nearest, ref = Round(out, x);
    if (a[e] != ref) v.affected[c] = true;
    if (!rec.Accepts(a[e], x)) v.rec[c] = false;
    if (!prob.Accepts(a[e], x)) v.prob[c] = false;
    if (!(std::fabs(a[e] - ref) <= kNkiAtol + kNkiRtol * std::fabs(ref))) v.allclose[c] = false;
    brange[c] = std::max(brange[c], std::fabs(ref));
    // FlashAttention subtracts the two dtype tensors in the dtype: the difference is rounded.
    diff[c] = std::max(diff[c], std::fabs(Round(out, a[e] - ref)));
    diff_pt[c] = std::max(diff_pt[c], std::fabs(Round(out, Round(out, g.pt[e]) - ref)));
  }
  for (size_t e = 0; e < a.size(); ++e) {
    const size_t c = (e / D) % C;
    const double ref = Round(out, g.exact[e].nearest);
    if (!(std::fabs(a[e] - ref) <= kNkiAtol + kNkiRtol * brange[c])) v.nki[c] = false;
  }
  for (size_t c = 0; c < C; ++c) v.fa[c] = !std::isnan(diff[c]) && diff[c] <= kFaFactor * diff_pt[c] + kFaConst;
  return v;
}

double Share(const std::vector<bool>& x, const std::vector<bool>* among = nullptr) {
  int64_t n = 0, k = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (among != nullptr && !(*among)[i]) continue;
    ++n;
    k += x[i];
  }
  return n > 0 ? static_cast<double>(k) / static_cast<double>(n) : kNaN;
}

}  // namespace

const std::vector<std::string>& AttentionMutationNames() {
  static const std::vector<std::string> kNames = {"scale_twice",         "scale_missing",     "causal_mask_missing",
                                                  "last_key_block_dropped", "row_sum_bfloat16", "k_transposed_read",
                                                  "softmax_wrong_axis"};
  return kNames;
}

std::vector<AttentionUnit> MakeAttentionUnits(const AttentionSweepSpec& spec) {
  std::vector<AttentionUnit> units;
  for (const std::string& dist : spec.distributions) {
    for (int64_t s : spec.lengths) {
      for (int64_t d : spec.head_dims) {
        for (const std::string& mask : spec.masks) {
          AttentionUnit u;
          u.dist = dist;
          u.s = s;
          u.d = d;
          u.causal = mask == "causal";
          u.rows = std::min(spec.rows, s);
          u.cases = std::min(spec.cases, u.rows);
          units.push_back(std::move(u));
        }
      }
    }
  }
  return units;
}

absl::StatusOr<std::vector<AttentionModel>> LoadAttentionSweepModels(const SweepSpec& spec, const std::string& dir) {
  if (spec.attention.platforms.empty()) return std::vector<AttentionModel>{};
  absl::StatusOr<std::vector<AttentionModel>> all = composite::LoadAttentionModels(dir);
  if (!all.ok()) return all.status();
  absl::StatusOr<std::vector<AttentionModel>> picked =
      PickSweepModels(*all, spec.attention.platforms, spec.attention.input_formats, spec.source, "attention",
                      "attention model", dir);
  if (!picked.ok()) return picked.status();
  const auto named = [&](const std::string& n) -> const AttentionModel& {
    return *std::find_if(all->begin(), all->end(), [&](const AttentionModel& m) { return m.name == n; });
  };
  for (const auto& [a, b] : spec.attention.cross) {  // Both are platforms (ParseSweepSpec checked).
    const AttentionModel &ma = named(a), &mb = named(b);
    if (ma.input != mb.input) {
      return absl::InvalidArgumentError(Cat(spec.source, ": attention.cross: '", a, "' takes ", ma.input->name,
                                            " inputs, '", b, "' ", mb.input->name,
                                            ": a pair compares two models on the same inputs"));
    }
  }
  return picked;
}

absl::Status RunAttentionUnit(const AttentionUnit& u, int64_t unit_index, const SweepSpec& spec,
                              const std::vector<AttentionModel>& models, int threads,
                              const std::function<bool()>& cancelled, SweepTables& tables) {
  auto stop = [&] { return cancelled && cancelled(); };
  const absl::Status interrupted = absl::CancelledError("tolerance sweep interrupted");
  // One group per input format, in the order of the models' first appearance.
  std::vector<const FormatSpec*> formats;
  for (const AttentionModel& m : models) {
    if (std::find(formats.begin(), formats.end(), m.input) == formats.end()) formats.push_back(m.input);
  }
  std::map<const FormatSpec*, Group> groups;
  for (const FormatSpec* f : formats) {
    if (stop()) return interrupted;
    if (absl::Status s = MakeGroup(u, spec, *f, threads, groups[f]); !s.ok()) return s;
  }
  const std::vector<std::string>& mutations = AttentionMutationNames();
  std::map<std::string, AttentionRun> runs;
  int64_t item = 0, power_item = 0;
  for (const AttentionModel& m : models) {
    if (stop()) return interrupted;
    const Group& g = groups.at(m.input);
    absl::StatusOr<AttentionRun> run = RunModel(u, m, g, threads);
    if (!run.ok()) return run.status();
    const FormatSpec& out = *m.output;
    const Recommendation rc = Recommend(spec, g, out, *run);
    const double rtol = rc.rtol, atol = rc.atol, prob_rtol = rc.prob_rtol, prob_atol = rc.prob_atol;
    const Tol rec_tol{rtol, atol}, prob_tol{prob_rtol, prob_atol};
    const std::vector<double>& ulp = rc.ulp;
    const Summary su = Summarize(ulp), se = Summarize(g.ess);
    const Verdicts conforming = Judge(u, g, out, run->y, rec_tol, prob_tol);
    auto rejects = [](const std::vector<bool>& accepted) {
      int64_t k = 0;
      for (bool a : accepted) k += !a;
      return static_cast<double>(k) / static_cast<double>(accepted.size());
    };
    tables.attention.rows.push_back(RowBuilder(tables.attention)
                                        .Set("unit", unit_index)
                                        .Set("item", item++)
                                        .Set("platform", m.name)
                                        .Set("dtype", std::string(m.input->name))
                                        .Set("output_format", std::string(out.name))
                                        .Set("distribution", u.dist)
                                        .Set("s", u.s)
                                        .Set("d", u.d)
                                        .Set("causal", std::string(u.causal ? "yes" : "no"))
                                        .Set("rows", u.rows)
                                        .Set("cases", u.cases)
                                        .Set("ess_median", se.median)
                                        .Set("ulp_max", su.max)
                                        .Set("ulp_p99", su.p99)
                                        .Set("abs_max", Summarize(rc.err_abs).max)
                                        .Set("bound_ulp", rc.bound_ulp)
                                        .Set("bound_abs", rc.bound_abs)
                                        .Set("prob_abs", rc.prob)
                                        .Set("prob_rtol", prob_rtol)
                                        .Set("prob_atol", prob_atol)
                                        .Set("rec_ulp", rc.rec_ulp)
                                        .Set("rec_rtol", rtol)
                                        .Set("rec_atol", atol)
                                        .Set("rec_rejects", rejects(conforming.rec))
                                        .Set("prob_rejects", rejects(conforming.prob))
                                        .Set("nki_rejects", rejects(conforming.nki))
                                        .Set("allclose_rejects", rejects(conforming.allclose))
                                        .Set("fa_rejects", rejects(conforming.fa))
                                        .Set("unbounded", rc.unbounded)
                                        .Build());
    for (size_t mi = 0; mi < mutations.size(); ++mi) {
      const std::vector<double>& mv = g.mutant[mi];
      if (mv.empty()) continue;
      std::vector<double> a(mv.size());
      for (size_t i = 0; i < mv.size(); ++i) a[i] = Round(out, mv[i]);
      const Verdicts v = Judge(u, g, out, a, rec_tol, prob_tol);
      int64_t affected = 0;
      for (bool x : v.affected) affected += x;
      RowBuilder row(tables.attention_power);
      row.Set("unit", unit_index)
          .Set("item", power_item++)
          .Set("platform", m.name)
          .Set("distribution", u.dist)
          .Set("s", u.s)
          .Set("d", u.d)
          .Set("causal", std::string(u.causal ? "yes" : "no"))
          .Set("mutation", mutations[mi])
          .Set("affected", affected);
      for (const auto& [column, accepted] : {std::pair<const char*, const std::vector<bool>*>{"rec_accepts", &v.rec},
                                             {"prob_accepts", &v.prob},
                                             {"nki_accepts", &v.nki},
                                             {"allclose_accepts", &v.allclose},
                                             {"fa_accepts", &v.fa}}) {
        if (affected == 0) {
          row.Empty(column);
        } else {
          row.Set(column, Share(*accepted, &v.affected));
        }
      }
      tables.attention_power.rows.push_back(row.Build());
    }
    runs.emplace(m.name, *std::move(run));
  }
  int64_t cross_item = 0;
  for (const auto& [a, b] : spec.attention.cross) {
    auto ra = runs.find(a), rb = runs.find(b);
    if (ra == runs.end() || rb == runs.end() || ra->second.group != rb->second.group) continue;
    const Group& g = *ra->second.group;
    const FormatSpec& out = *ra->second.model->output;
    std::vector<double> e, e_prob, ref;
    double diff_abs = 0, diff_ulp = 0, allowed_ulp = 0;
    for (size_t i = 0; i < g.exact.size(); ++i) {
      const double ba = ra->second.bound[i], bb = rb->second.bound[i];
      if (std::isnan(ba) || std::isnan(bb)) continue;
      const double ulp = UlpAt(out, g.exact[i].nearest);
      const double diff = std::fabs(ra->second.y[i] - rb->second.y[i]);
      const double allowed = (ba + bb) * kUp;
      diff_abs = std::max(diff_abs, diff);
      diff_ulp = std::max(diff_ulp, diff / ulp);
      allowed_ulp = std::max(allowed_ulp, allowed / ulp);
      e.push_back(std::max(spec.factor * diff, allowed));
      // The two estimates' errors independent; each output rounded (half an ulp each); capped by
      // the bounds' sum.
      const double sa = ra->second.sigma[i], sb = rb->second.sigma[i];
      e_prob.push_back(
          std::max(spec.factor * diff, std::min(spec.lambda * std::sqrt(sa * sa + sb * sb) + ulp, allowed)));
      ref.push_back(std::fabs(ra->second.y[i]));
    }
    const auto [rtol, atol] = CoveringRtolAtol(e, ref);
    const auto [prob_rtol, prob_atol] = CoveringRtolAtol(e_prob, ref);
    tables.attention_cross.rows.push_back(RowBuilder(tables.attention_cross)
                                              .Set("unit", unit_index)
                                              .Set("item", cross_item++)
                                              .Set("platform_a", a)
                                              .Set("platform_b", b)
                                              .Set("distribution", u.dist)
                                              .Set("s", u.s)
                                              .Set("d", u.d)
                                              .Set("causal", std::string(u.causal ? "yes" : "no"))
                                              .Set("elements", static_cast<int64_t>(e.size()))
                                              .Set("diff_abs_max", diff_abs)
                                              .Set("diff_ulp_max", diff_ulp)
                                              .Set("allowed_ulp_max", allowed_ulp)
                                              .Set("rec_rtol", rtol)
                                              .Set("rec_atol", atol)
                                              .Set("prob_rtol", prob_rtol)
                                              .Set("prob_atol", prob_atol)
                                              .Build());
  }
  return absl::OkStatus();
}

}  // namespace fpconform::reports::sweep_internal

namespace fpconform::reports {

absl::StatusOr<AttentionToleranceRule> AttentionPlatformTolerance(const SweepSpec& spec,
                                                                  const composite::AttentionModel& platform,
                                                                  const AttentionToleranceQuery& query, int threads) {
  using sweep_internal::AttentionUnit;
  const auto bad = [](const std::string& what) { return absl::InvalidArgumentError(Cat("attention tolerance: ", what)); };
  if (query.s < 1 || query.s > kMaxSweepK) return bad(Cat("S = ", query.s, ": must be in 1..", kMaxSweepK));
  if (query.d < 1 || query.d > kMaxSweepK) return bad(Cat("D = ", query.d, ": must be in 1..", kMaxSweepK));
  if (query.s * query.d > (int64_t{1} << 26)) {
    return bad(Cat("S x D = ", query.s, " x ", query.d, ": above 2^26 elements per operand"));
  }
  const std::vector<std::string>& dists = ValidAttentionDistributions();
  if (std::find(dists.begin(), dists.end(), query.distribution) == dists.end()) {
    std::string valid;
    for (const std::string& d : dists) valid += Cat(valid.empty() ? "" : ", ", d);
    return bad(Cat("unknown distribution '", query.distribution, "' (valid: ", valid, ")"));
  }
  AttentionSweepSpec one;
  one.distributions = {query.distribution};
  one.lengths = {query.s};
  one.head_dims = {query.d};
  one.masks = {query.causal ? "causal" : "none"};
  one.rows = spec.attention.rows;
  one.cases = spec.attention.cases;
  const AttentionUnit u = sweep_internal::MakeAttentionUnits(one).at(0);
  sweep_internal::Group g;
  if (absl::Status s = sweep_internal::MakeGroup(u, spec, *platform.input, threads, g, /*mutants=*/false); !s.ok()) {
    return s;
  }
  absl::StatusOr<sweep_internal::AttentionRun> run = sweep_internal::RunModel(u, platform, g, threads);
  if (!run.ok()) return run.status();
  const sweep_internal::Recommendation rc = sweep_internal::Recommend(spec, g, *platform.output, *run);
  AttentionToleranceRule r;
  r.rtol = rc.rtol;
  r.atol = rc.atol;
  r.prob_rtol = rc.prob_rtol;
  r.prob_atol = rc.prob_atol;
  r.ulp = rc.rec_ulp;
  r.bound_abs = rc.bound_abs;
  r.ess_median = Summarize(g.ess).median;
  r.rows = u.rows;
  return r;
}

}  // namespace fpconform::reports
