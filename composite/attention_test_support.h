// What the attention model's tests share (attention_model_test.cc, attention_matmul_test.cc): a
// double rounded into a format, the oracle's enclosures that EmulateAttentionRows takes, a model's
// rows emulated from them, the problem with the scale applied twice (the known-wrong result a
// bound must exclude), and the online softmax's rescaling step of the blocked host evaluations.
//
// Example:
//   absl::StatusOr<EmulatedRows> r = EmulateWithOracle(m, p);
//   ASSERT_TRUE(r.ok()) << r.status();
//   EXPECT_LE(r->lo[e], r->exact[e].nearest);
#ifndef FPCONFORM_COMPOSITE_ATTENTION_TEST_SUPPORT_H_
#define FPCONFORM_COMPOSITE_ATTENTION_TEST_SUPPORT_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "composite/attention_model.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "formats/ops.h"
#include "oracles/attention.h"
#include "oracles/certified_double.h"

namespace fpconform::composite {

// x rounded to nearest even into f, as a double.
inline double Round(const FormatSpec& f, double x) {
  double v;
  certified::DecodeToDouble(f, Convert(Float64(), f, std::bit_cast<uint64_t>(x), OpEnv{}).bits, false, &v);
  return v;
}

// The oracle's enclosures of every row of p: of P V into `exact`, of P |V| into `abs` (the two
// enclosure spans EmulateAttentionRows takes), each s_q x d_v.
inline absl::Status OracleEnclosures(const AttentionProblem& p, std::span<ExactEnclosure> exact,
                                     std::span<ExactEnclosure> abs) {
  AttentionOutputs o;
  o.enclosure = exact;
  if (absl::Status s = AttentionRows(p, 0, p.s_q, o, nullptr); !s.ok()) return s;
  std::vector<double> vabs;
  for (double x : p.v) vabs.push_back(std::fabs(x));
  AttentionProblem pa = p;
  pa.v = vabs;
  o.enclosure = abs;
  return AttentionRows(pa, 0, p.s_q, o, nullptr);
}

// The oracle's enclosures of every row of p (exact: P V, pv: P |V|) and m's rows of p from them
// (bits and bounds [lo, hi]), each s_q x d_v.
struct EmulatedRows {
  std::vector<ExactEnclosure> exact, pv;
  std::vector<uint64_t> bits;
  std::vector<double> lo, hi;
};

// OracleEnclosures, then EmulateAttentionRows of m on every row of p (with `threads` and `lse`).
inline absl::StatusOr<EmulatedRows> EmulateWithOracle(const AttentionModel& m, const AttentionProblem& p,
                                                     int threads = 1, const AttentionLseRows* lse = nullptr) {
  const size_t n = static_cast<size_t>(p.s_q * p.d_v);
  EmulatedRows r{.exact = std::vector<ExactEnclosure>(n), .pv = std::vector<ExactEnclosure>(n),
                 .bits = std::vector<uint64_t>(n), .lo = std::vector<double>(n), .hi = std::vector<double>(n)};
  if (absl::Status s = OracleEnclosures(p, r.exact, r.pv); !s.ok()) return s;
  if (absl::Status s = EmulateAttentionRows(m, p, 0, p.s_q, r.pv, r.exact, r.bits, r.lo, r.hi, threads, lse);
      !s.ok()) {
    return s;
  }
  return r;
}

// p with its scale 1/sqrt(d) applied twice.
inline AttentionProblem ScaledTwice(const AttentionProblem& p) {
  AttentionProblem p2 = p;
  const double sc = 1.0 / std::sqrt(static_cast<double>(p.d));
  p2.scale = sc * sc;
  return p2;
}

// The online softmax's step to a new key block with scores s (host float32, libm's expf): the
// running maximum mx becomes max(mx, s), and the running sum l and the accumulator acc are
// rescaled by exp(old mx - new mx).
inline void RescaleToBlockMax(const std::vector<float>& s, float& mx, float& l, std::vector<float>& acc) {
  float bm = mx;
  for (float x : s) bm = std::max(bm, x);
  const float alpha = std::exp(mx - bm);
  l *= alpha;
  for (float& a : acc) a *= alpha;
  mx = bm;
}

}  // namespace fpconform::composite

#endif  // FPCONFORM_COMPOSITE_ATTENTION_TEST_SUPPORT_H_
