#include "oracles/axis_ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <mpfr.h>

#include "base/run_workers.h"
#include "oracles/certified_double.h"
#include "oracles/exact_elements.h"
#include "oracles/mpfr_oracle.h"
#include "oracles/mpfr_plumbing.h"
#include "oracles/named_values.h"

namespace fpconform {
namespace {

using oracle_internal::DecideElem;
using oracle_internal::EKind;
using oracle_internal::ElemExact;
using oracle_internal::ExactSum;
using oracle_internal::kTruncBits;
using oracle_internal::RoundElem;

constexpr mpfr_prec_t kZivStart = 192;
constexpr mpfr_prec_t kZivCap = mpfr_prec_t{1} << 20;

constexpr std::array<NamedValue<AxisOp>, 4> kOpNames = {{{AxisOp::kSoftmax, "softmax"},
                                                         {AxisOp::kLogSoftmax, "log_softmax"},
                                                         {AxisOp::kRmsNorm, "rmsnorm"},
                                                         {AxisOp::kLayerNorm, "layernorm"}}};

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "axis_ops: %s\n", what);
  std::abort();
}

// ---- The MPFR method. ----

struct Decoded {
  MpfrDecoded d;
  MpfrValue v{64};
};

// Decodes the row and the per-column parameters; returns false (all NaN) for a row whose x has
// a NaN, or an Inf other than softmax/log_softmax's -Inf.
struct RowData {
  std::vector<Decoded> x, w, b;
};

absl::Status CheckArgs(AxisOp op, const FormatSpec& in, int64_t n, const AxisParams& p,
                       const FormatSpec* out) {
  if (!IsFloat(in)) return absl::InvalidArgumentError("axis op: input format is not a float");
  if (out != nullptr && (!IsFloat(*out) || Precision(*out) > 53)) {
    return absl::InvalidArgumentError("axis op: output must be a float format of <= 53 bits");
  }
  if (n < 1) return absl::InvalidArgumentError("axis op: rows need n >= 1 entries");
  const bool norm = op == AxisOp::kRmsNorm || op == AxisOp::kLayerNorm;
  if (norm && !(p.eps > 0 && std::isfinite(p.eps))) {
    return absl::InvalidArgumentError("axis op: eps must be finite and > 0, got " +
                                      std::to_string(p.eps));
  }
  if (!p.weight.empty()) {
    if (!norm) return absl::InvalidArgumentError("axis op: only norms take a weight");
    if (static_cast<int64_t>(p.weight.size()) != n || p.weight_format == nullptr ||
        !IsFloat(*p.weight_format)) {
      return absl::InvalidArgumentError("axis op: weight needs n entries and a float format");
    }
  }
  if (!p.bias.empty()) {
    if (op != AxisOp::kLayerNorm) {
      return absl::InvalidArgumentError("axis op: only layernorm takes a bias");
    }
    if (static_cast<int64_t>(p.bias.size()) != n || p.bias_format == nullptr ||
        !IsFloat(*p.bias_format)) {
      return absl::InvalidArgumentError("axis op: bias needs n entries and a float format");
    }
  }
  return absl::OkStatus();
}

// x_i w_i exactly (w = 1 without weight) into r (precision 128).
void WeightedX(const RowData& rd, size_t i, mpfr_ptr r) {
  mpfr_set_prec(r, 128);
  if (rd.w.empty()) {
    mpfr_set(r, rd.x[i].v, MPFR_RNDN);
  } else {
    mpfr_mul(r, rd.x[i].v, rd.w[i].v, MPFR_RNDN);
  }
}

// [lo, hi] encloses x * r for an exact non-zero x and r in [r_lo, r_hi], 0 < r_lo: lo rounded
// down, hi up.
void EncloseScaled(mpfr_ptr lo, mpfr_ptr hi, mpfr_srcptr x, mpfr_srcptr r_lo, mpfr_srcptr r_hi) {
  if (mpfr_sgn(x) > 0) {
    mpfr_mul(lo, x, r_lo, MPFR_RNDD);
    mpfr_mul(hi, x, r_hi, MPFR_RNDU);
  } else {
    mpfr_mul(lo, x, r_hi, MPFR_RNDD);
    mpfr_mul(hi, x, r_lo, MPFR_RNDU);
  }
}

// The MPFR method: exact truncations of every element of the row.
void RowExact(AxisOp op, const FormatSpec& in, std::span<const uint64_t> xb,
              const AxisParams& p, bool daz, std::vector<ElemExact>& res) {
  const size_t n = xb.size();
  RowData rd;
  rd.x = std::vector<Decoded>(n);
  for (size_t i = 0; i < n; ++i) rd.x[i].d = MpfrDecodeBits(in, xb[i], daz, rd.x[i].v);
  if (!p.weight.empty()) {
    rd.w = std::vector<Decoded>(n);
    for (size_t i = 0; i < n; ++i) {
      rd.w[i].d = MpfrDecodeBits(*p.weight_format, p.weight[i], daz, rd.w[i].v);
    }
  }
  if (!p.bias.empty()) {
    rd.b = std::vector<Decoded>(n);
    for (size_t i = 0; i < n; ++i) {
      rd.b[i].d = MpfrDecodeBits(*p.bias_format, p.bias[i], daz, rd.b[i].v);
    }
  }
  const bool softmaxes = op == AxisOp::kSoftmax || op == AxisOp::kLogSoftmax;
  bool nan_row = false;
  size_t finite = 0;
  for (size_t i = 0; i < n; ++i) {
    const MpfrKind k = rd.x[i].d.kind;
    if (k == MpfrKind::kNaN) nan_row = true;
    if (k == MpfrKind::kInf && !(softmaxes && rd.x[i].d.sign)) nan_row = true;
    if (k == MpfrKind::kFinite || k == MpfrKind::kZero) ++finite;
  }
  if (finite == 0) nan_row = true;
  for (size_t i = 0; i < n; ++i) {
    res[i].kind = nan_row ? EKind::kNaN : EKind::kUndecided;
    auto bad = [&](const std::vector<Decoded>& v) {
      return !v.empty() && (v[i].d.kind == MpfrKind::kNaN || v[i].d.kind == MpfrKind::kInf);
    };
    if (bad(rd.w) || bad(rd.b)) res[i].kind = EKind::kNaN;
  }
  if (nan_row) return;
  auto is_finite = [&](size_t i) {
    return rd.x[i].d.kind == MpfrKind::kFinite || rd.x[i].d.kind == MpfrKind::kZero;
  };

  if (softmaxes) {
    size_t imax = n;
    for (size_t i = 0; i < n; ++i) {
      if (!is_finite(i)) {
        res[i].kind = op == AxisOp::kSoftmax ? EKind::kZero : EKind::kNegInf;
        res[i].neg = op == AxisOp::kLogSoftmax;
        continue;
      }
      if (imax == n || mpfr_cmp(rd.x[i].v, rd.x[imax].v) > 0) imax = i;
    }
    if (finite == 1 && op == AxisOp::kLogSoftmax) {
      res[imax].kind = EKind::kZero;
      res[imax].neg = false;
      return;
    }
    if (finite == 1) {
      mpfr_set_ui(res[imax].t, 1, MPFR_RNDN);
      res[imax].kind = EKind::kFinite;
      res[imax].neg = false;
      res[imax].sticky = false;
      return;
    }
    std::vector<MpfrValue> dlo(n), dhi(n), elo(n), ehi(n);
    MpfrValue srl(kZivStart), srh(kZivStart), sl(kZivStart), sh(kZivStart), a(kZivStart),
        b(kZivStart), c(kZivStart), d(kZivStart);
    for (mpfr_prec_t w = kZivStart; w <= kZivCap; w *= 2) {
      for (MpfrValue* v : {&srl, &srh, &sl, &sh, &a, &b, &c, &d}) mpfr_set_prec(*v, w);
      std::vector<mpfr_ptr> los, his;
      for (size_t j = 0; j < n; ++j) {
        if (!is_finite(j)) continue;
        for (MpfrValue* v : {&dlo[j], &dhi[j], &elo[j], &ehi[j]}) mpfr_set_prec(*v, w);
        mpfr_sub(dlo[j], rd.x[j].v, rd.x[imax].v, MPFR_RNDD);
        mpfr_sub(dhi[j], rd.x[j].v, rd.x[imax].v, MPFR_RNDU);
        mpfr_exp(elo[j], dlo[j], MPFR_RNDD);
        mpfr_exp(ehi[j], dhi[j], MPFR_RNDU);
        if (j != imax) {
          los.push_back(elo[j]);
          his.push_back(ehi[j]);
        }
      }
      mpfr_sum(srl, los.data(), static_cast<unsigned long>(los.size()), MPFR_RNDD);
      mpfr_sum(srh, his.data(), static_cast<unsigned long>(his.size()), MPFR_RNDU);
      mpfr_add_ui(sl, srl, 1, MPFR_RNDD);
      mpfr_add_ui(sh, srh, 1, MPFR_RNDU);
      bool all = true;
      for (size_t i = 0; i < n; ++i) {
        if (res[i].kind != EKind::kUndecided) continue;
        bool ok;
        if (op == AxisOp::kSoftmax) {
          if (i == imax) {
            // 1 - c, c = S' / (1 + S') in [srl / sh, srh / sl].
            mpfr_div(c, srl, sh, MPFR_RNDD);
            mpfr_div(d, srh, sl, MPFR_RNDU);
            if (!mpfr_zero_p(d) && mpfr_get_exp(d) <= -static_cast<mpfr_exp_t>(kTruncBits) - 1) {
              mpfr_set_ui(res[i].t, 1, MPFR_RNDN);
              mpfr_nextbelow(res[i].t);
              res[i].kind = EKind::kFinite;
              res[i].sticky = true;
              ok = true;
            } else {
              mpfr_ui_sub(a, 1, d, MPFR_RNDD);
              mpfr_ui_sub(b, 1, c, MPFR_RNDU);
              ok = DecideElem(a, b, false, false, res[i]);
            }
          } else {
            mpfr_div(a, elo[i], sh, MPFR_RNDD);
            mpfr_div(b, ehi[i], sl, MPFR_RNDU);
            ok = DecideElem(a, b, false, false, res[i]);
          }
        } else {
          if (i == imax) {
            mpfr_log1p(a, srh, MPFR_RNDU);
            mpfr_log1p(b, srl, MPFR_RNDD);
            mpfr_neg(a, a, MPFR_RNDN);
            mpfr_neg(b, b, MPFR_RNDN);
            ok = DecideElem(a, b, true, true, res[i]);
          } else {
            mpfr_log(c, sh, MPFR_RNDU);
            mpfr_log(d, sl, MPFR_RNDD);
            mpfr_sub(a, dlo[i], c, MPFR_RNDD);
            mpfr_sub(b, dhi[i], d, MPFR_RNDU);
            ok = DecideElem(a, b, true, true, res[i]);
          }
        }
        if (!ok) all = false;
      }
      if (all) return;
    }
    Die("softmax Ziv loop reached 2^20 bits");
  }

  // Norms: exact sums.
  const double nd = static_cast<double>(n);
  MpfrValue eps(64), ne(192), s2(64), s1(64), bq(64);
  mpfr_set_d(eps, p.eps, MPFR_RNDN);
  std::vector<MpfrValue> sq(n);
  std::vector<mpfr_srcptr> terms;
  for (size_t j = 0; j < n; ++j) {
    mpfr_set_prec(sq[j], 128);
    mpfr_sqr(sq[j], rd.x[j].v, MPFR_RNDN);  // Exact.
    terms.push_back(sq[j]);
  }
  ExactSum(terms, s2);
  MpfrValue nn(64);
  mpfr_set_ui(nn, static_cast<unsigned long>(n), MPFR_RNDN);
  MpfrValue xw(128), w1(kZivStart), w2(kZivStart), a(kZivStart), b(kZivStart);
  if (op == AxisOp::kRmsNorm) {
    mpfr_mul(ne, eps, nn, MPFR_RNDN);  // Exact: 53 + 64 bits.
    std::array<mpfr_srcptr, 2> t2 = {s2, ne};
    ExactSum(t2, bq);  // B = S2 + n eps; y = x w / sqrt(B / n).
    for (mpfr_prec_t w = kZivStart; w <= kZivCap; w *= 2) {
      for (MpfrValue* v : {&w1, &w2, &a, &b}) mpfr_set_prec(*v, w);
      mpfr_div(w1, bq, nn, MPFR_RNDD);
      mpfr_div(w2, bq, nn, MPFR_RNDU);
      mpfr_rec_sqrt(w1, w1, MPFR_RNDU);  // r.hi
      mpfr_rec_sqrt(w2, w2, MPFR_RNDD);  // r.lo
      bool all = true;
      for (size_t i = 0; i < n; ++i) {
        if (res[i].kind != EKind::kUndecided) continue;
        WeightedX(rd, i, xw);
        if (mpfr_zero_p(xw)) {
          res[i].kind = EKind::kZero;
          res[i].neg = rd.x[i].d.sign != (!rd.w.empty() && rd.w[i].d.sign);
          continue;
        }
        EncloseScaled(a, b, xw, w2, w1);  // w2 = r.lo, w1 = r.hi.
        if (!DecideElem(a, b, mpfr_sgn(xw) < 0, mpfr_sgn(xw) < 0, res[i])) all = false;
      }
      if (all) return;
    }
    Die("rmsnorm Ziv loop reached 2^20 bits");
  }

  // layernorm: y = (n x_i - S1) w_i / sqrt(n S2 - S1^2 + n^2 eps) + b_i.
  terms.clear();
  for (size_t j = 0; j < n; ++j) terms.push_back(rd.x[j].v);
  ExactSum(terms, s1);
  MpfrValue ns2(mpfr_get_prec(s2) + 64), s1sq(2 * mpfr_get_prec(s1)), nne(256);
  mpfr_mul(ns2, s2, nn, MPFR_RNDN);
  mpfr_sqr(s1sq, s1, MPFR_RNDN);
  mpfr_neg(s1sq, s1sq, MPFR_RNDN);
  mpfr_mul(nne, eps, nn, MPFR_RNDN);
  mpfr_mul(nne, nne, nn, MPFR_RNDN);
  std::array<mpfr_srcptr, 3> t3 = {ns2, s1sq, nne};
  ExactSum(t3, bq);
  if (mpfr_sgn(bq) <= 0) Die("layernorm: n S2 - S1^2 + n^2 eps <= 0");
  MpfrValue nx(128), neg_s1(mpfr_get_prec(s1)), ai(64), ti(64);
  mpfr_neg(neg_s1, s1, MPFR_RNDN);
  (void)nd;
  for (mpfr_prec_t w = kZivStart; w <= kZivCap; w *= 2) {
    for (MpfrValue* v : {&w1, &w2, &a, &b}) mpfr_set_prec(*v, w);
    mpfr_rec_sqrt(w1, bq, MPFR_RNDU);  // r.hi
    mpfr_rec_sqrt(w2, bq, MPFR_RNDD);  // r.lo
    bool all = true;
    for (size_t i = 0; i < n; ++i) {
      if (res[i].kind != EKind::kUndecided) continue;
      mpfr_mul(nx, rd.x[i].v, nn, MPFR_RNDN);  // Exact.
      std::array<mpfr_srcptr, 2> ta = {nx, neg_s1};
      ExactSum(ta, ai);
      mpfr_set_prec(ti, mpfr_get_prec(ai) + 64);
      if (rd.w.empty()) {
        mpfr_set(ti, ai, MPFR_RNDN);
      } else {
        mpfr_mul(ti, ai, rd.w[i].v, MPFR_RNDN);  // Exact.
      }
      const bool has_b = !rd.b.empty();
      if (mpfr_zero_p(ti)) {
        // (+0 * w) + b in round-to-nearest IEEE arithmetic.
        const bool zsign = !rd.w.empty() && rd.w[i].d.sign;
        if (has_b && rd.b[i].d.kind == MpfrKind::kFinite) {
          const int tern = mpfr_set(res[i].t, rd.b[i].v, MPFR_RNDZ);
          res[i].kind = EKind::kFinite;
          res[i].neg = rd.b[i].d.sign;
          res[i].sticky = tern != 0;
        } else {
          res[i].kind = EKind::kZero;
          res[i].neg = zsign && (!has_b || rd.b[i].d.sign);
        }
        continue;
      }
      EncloseScaled(a, b, ti, w2, w1);  // w2 = r.lo, w1 = r.hi.
      if (has_b && rd.b[i].d.kind == MpfrKind::kFinite) {
        mpfr_add(a, a, rd.b[i].v, MPFR_RNDD);
        mpfr_add(b, b, rd.b[i].v, MPFR_RNDU);
      }
      if (!DecideElem(a, b, mpfr_sgn(a) < 0, mpfr_sgn(a) < 0, res[i])) all = false;
    }
    if (all) return;
  }
  Die("layernorm Ziv loop reached 2^20 bits");
}

// ---- The binary64 method. ----

namespace cd = certified;

bool FastSupported(const FormatSpec& in, const AxisParams& p, const FormatSpec& out,
                   const OpEnv& env) {
  if (!ElementaryFastSupported(in, out, env)) return false;
  if (p.weight_format != nullptr && Precision(*p.weight_format) > 53) return false;
  if (p.bias_format != nullptr && Precision(*p.bias_format) > 53) return false;
  return true;
}

// Decides the row's elements into out_bits (decided[i] = 1), returns the count undecided.
// Returns -1 if the row needs the MPFR method as a whole (specials).
int64_t FastRow(AxisOp op, const FormatSpec& in, std::span<const uint64_t> xb,
                const AxisParams& p, const FormatSpec& out, const OpEnv& env,
                std::span<uint64_t> ob, std::vector<uint8_t>& decided, std::vector<double>& x,
                std::vector<cd::Ev>& tmp) {
  using cd::Add;
  using cd::Div;
  using cd::Ev;
  using cd::Exact;
  using cd::Mul;
  using cd::Sub;
  const size_t n = xb.size();
  const bool daz = env.denormals_are_zero;
  x.resize(n);
  decided.assign(n, 0);
  const bool softmaxes = op == AxisOp::kSoftmax || op == AxisOp::kLogSoftmax;
  size_t masked = 0;  // softmax/log_softmax: -Inf entries (masks), outputs +0 / -Inf exactly.
  for (size_t i = 0; i < n; ++i) {
    const int kind = cd::DecodeToDouble(in, xb[i], daz, &x[i]);
    if (kind == 2 && softmaxes && x[i] < 0) {
      ++masked;
      continue;
    }
    if (kind > 1) return -1;
  }
  if (masked == n) return -1;
  const uint64_t sign_bit = uint64_t{1} << (out.exponent_bits + out.fraction_bits) << out.pad_bits;
  auto zero_bits = [&](bool neg) {  // out has a zero and a sign (FastSupported).
    return neg && out.nan_encoding != NanEncoding::kNegativeZero ? sign_bit : uint64_t{0};
  };
  auto wt = [&](size_t i, double* v) {
    if (p.weight.empty()) {
      *v = 1.0;
      return true;
    }
    return cd::DecodeToDouble(*p.weight_format, p.weight[i], daz, v) <= 1;
  };
  auto bs = [&](size_t i, double* v) {
    if (p.bias.empty()) {
      *v = 0.0;
      return true;
    }
    return cd::DecodeToDouble(*p.bias_format, p.bias[i], daz, v) <= 1;
  };
  int64_t undecided = 0;
  auto put = [&](size_t i, bool ok, const OpResult& r) {
    if (ok) {
      ob[i] = r.bits;
      decided[i] = 1;
    } else {
      ++undecided;
    }
  };
  tmp.resize(n);
  const double nd = static_cast<double>(n);
  if (softmaxes) {
    size_t imax = n;
    for (size_t i = 0; i < n; ++i) {
      if (std::isinf(x[i])) continue;
      if (imax == n || x[i] > x[imax]) imax = i;
    }
    const double m = x[imax];
    if (n - masked == 1) return -1;
    for (size_t j = 0; j < n; ++j) {
      if (std::isinf(x[j])) {
        tmp[j] = Exact(0);  // e^-Inf = 0.
        continue;
      }
      if (j == imax) {
        tmp[j] = Exact(0);  // Excluded from S' below; e^0 = 1 added exactly.
        continue;
      }
      const Ev d = Sub(Exact(x[j]), Exact(m));
      tmp[j] = d.y < -700.0 ? Ev{0, 0x1p-1000} : cd::ExpEv(d);
    }
    const Ev srest = cd::SumEv(tmp);
    const Ev s = Add(Exact(1.0), srest);
    if (!cd::Ok(srest)) return -1;
    const Ev log_s = op == AxisOp::kLogSoftmax ? cd::LogEv(s) : Ev{};
    for (size_t i = 0; i < n; ++i) {
      if (std::isinf(x[i])) {
        const uint64_t inf_bits = ((uint64_t{1} << out.exponent_bits) - 1)
                                  << out.fraction_bits << out.pad_bits;
        if (op == AxisOp::kLogSoftmax && out.nonfinite != NonFinite::kIeee) return -1;
        ob[i] = op == AxisOp::kSoftmax ? zero_bits(false) : (sign_bit | inf_bits);
        decided[i] = 1;
        continue;
      }
      OpResult r;
      bool ok = false;
      if (op == AxisOp::kSoftmax) {
        if (i == imax) {
          if (srest.y + srest.e < 0x1p-54) {  // 1 - y < S' < 2^-54.
            ok = cd::Decide(out, env, false, std::nextafter(1.0, 0.0), 1.0, &r);
          } else {
            ok = cd::DecideInterval(out, env, cd::Enclose(Div(Exact(1.0), s)), &r);
          }
        } else if (x[i] - m < -700.0) {  // y < e^-700 < 2^-1009.
          ok = cd::Decide(out, env, false, 0.0, 0x1p-960, &r);
        } else {
          ok = cd::DecideInterval(out, env, cd::Enclose(Div(tmp[i], s)), &r);
        }
      } else {
        if (i == imax) {
          const Ev l = cd::Log1pEv(srest);
          ok = cd::DecideInterval(out, env, cd::Enclose(Ev{-l.y, l.e}), &r);
        } else {
          ok = cd::DecideInterval(
              out, env, cd::Enclose(Sub(Sub(Exact(x[i]), Exact(m)), log_s)), &r);
        }
      }
      put(i, ok, r);
    }
    return undecided;
  }
  if (op == AxisOp::kRmsNorm) {
    for (size_t j = 0; j < n; ++j) tmp[j] = Mul(Exact(x[j]), Exact(x[j]));
    const Ev s2 = cd::SumEv(tmp);
    const Ev q = Add(Div(s2, Exact(nd)), Exact(p.eps));
    const Ev rs = Div(Exact(1.0), cd::Sqrt(q));
    for (size_t i = 0; i < n; ++i) {
      double w;
      if (!wt(i, &w)) return -1;
      if (x[i] == 0 || w == 0) {  // Exact zero: the zero of sign(x) xor sign(w).
        ob[i] = zero_bits(std::signbit(x[i]) != std::signbit(w));
        decided[i] = 1;
        continue;
      }
      OpResult r;
      put(i, cd::DecideInterval(out, env, cd::Enclose(Mul(Mul(Exact(x[i]), Exact(w)), rs)), &r),
          r);
    }
    return undecided;
  }
  // layernorm.
  for (size_t j = 0; j < n; ++j) tmp[j] = Exact(x[j]);
  const Ev s1 = cd::SumEv(tmp);
  const Ev mu = Div(s1, Exact(nd));
  for (size_t j = 0; j < n; ++j) {
    const Ev d = Sub(Exact(x[j]), Exact(mu.y));
    tmp[j] = Mul(d, d);
  }
  const Ev v = Div(cd::SumEv(tmp), Exact(nd));
  const Ev var{v.y, v.e + mu.e * mu.e};  // var = V - (mu - mu^)^2, |mu - mu^| <= mu.e.
  const Ev den = cd::Sqrt(Add(var, Exact(p.eps)));
  for (size_t i = 0; i < n; ++i) {
    double w, b;
    if (!wt(i, &w) || !bs(i, &b)) return -1;
    OpResult r;
    const Ev y = Add(Mul(Div(Sub(Exact(x[i]), mu), den), Exact(w)), Exact(b));
    put(i, cd::DecideInterval(out, env, cd::Enclose(y), &r), r);
  }
  return undecided;
}

absl::Status RowMpfr(AxisOp op, const FormatSpec& in, std::span<const uint64_t> x,
                     const AxisParams& params, const FormatSpec& out, const OpEnv& env,
                     std::span<uint64_t> out_bits, std::span<Flags> out_flags) {
  std::vector<ElemExact> res(x.size());
  RowExact(op, in, x, params, env.denormals_are_zero, res);
  for (size_t i = 0; i < x.size(); ++i) {
    const OpResult r = RoundElem(res[i], out, env);
    out_bits[i] = r.bits;
    if (!out_flags.empty()) out_flags[i] = r.flags;
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view AxisOpName(AxisOp op) { return NameIn(kOpNames, op); }

absl::StatusOr<AxisOp> ParseAxisOp(std::string_view name) {
  return ParseNameIn(kOpNames, name, "axis op");
}

absl::Status AxisRoundRowMpfr(AxisOp op, const FormatSpec& in, std::span<const uint64_t> x,
                              const AxisParams& params, const FormatSpec& out, const OpEnv& env,
                              std::span<uint64_t> out_bits, std::span<Flags> out_flags) {
  absl::Status st = CheckArgs(op, in, static_cast<int64_t>(x.size()), params, &out);
  if (!st.ok()) return st;
  if (out_bits.size() != x.size() || (!out_flags.empty() && out_flags.size() != x.size())) {
    return absl::InvalidArgumentError("axis op: output spans of the wrong size");
  }
  return RowMpfr(op, in, x, params, out, env, out_bits, out_flags);
}

absl::Status AxisEncloseRow(AxisOp op, const FormatSpec& in, std::span<const uint64_t> x,
                            const AxisParams& params, const OpEnv& env,
                            std::span<ExactEnclosure> out) {
  absl::Status st = CheckArgs(op, in, static_cast<int64_t>(x.size()), params, nullptr);
  if (!st.ok()) return st;
  if (out.size() != x.size()) return absl::InvalidArgumentError("axis op: wrong output size");
  std::vector<ElemExact> res(x.size());
  RowExact(op, in, x, params, env.denormals_are_zero, res);
  for (size_t i = 0; i < x.size(); ++i) out[i] = oracle_internal::EncloseElem(res[i]);
  return absl::OkStatus();
}

absl::Status AxisRound(AxisOp op, const FormatSpec& in, std::span<const uint64_t> x,
                       int64_t rows, int64_t n, const AxisParams& params, const FormatSpec& out,
                       const OpEnv& env, std::span<uint64_t> out_bits, AxisStats* stats,
                       int threads) {
  absl::Status st = CheckArgs(op, in, n, params, &out);
  if (!st.ok()) return st;
  if (rows < 0 || static_cast<int64_t>(x.size()) != rows * n ||
      out_bits.size() != x.size()) {
    return absl::InvalidArgumentError("axis op: x and out need rows * n entries");
  }
  const bool fast = FastSupported(in, params, out, env);
  const int t = static_cast<int>(RangeWorkers(rows, threads));  // No idle worker and its scratch.
  std::vector<AxisStats> sts(static_cast<size_t>(t));
  auto work = [&](int k) {
    AxisStats& s = sts[static_cast<size_t>(k)];
    std::vector<uint8_t> decided;
    std::vector<double> xd;
    std::vector<cd::Ev> tmp;
    std::vector<uint64_t> mp(static_cast<size_t>(n));
    const size_t nn = static_cast<size_t>(n);
    for (int64_t r = k; r < rows; r += t) {
      const size_t at = static_cast<size_t>(r) * nn;
      const std::span<const uint64_t> row = x.subspan(at, nn);
      const std::span<uint64_t> orow = out_bits.subspan(at, nn);
      int64_t und = fast ? FastRow(op, in, row, params, out, env, orow, decided, xd, tmp) : -1;
      if (und == 0) {
        s.fast += n;
        continue;
      }
      ++s.mpfr_rows;
      (void)RowMpfr(op, in, row, params, out, env, mp, {});
      for (size_t i = 0; i < nn; ++i) {
        if (und > 0 && decided[i]) {
          ++s.fast;
          continue;
        }
        orow[i] = mp[i];
        if (und > 0) {
          ++s.fallback;
        } else {
          ++s.special;
        }
      }
    }
  };
  RunWorkers(t, work);
  if (stats != nullptr) {
    for (const AxisStats& s : sts) *stats += s;
  }
  return absl::OkStatus();
}

}  // namespace fpconform
