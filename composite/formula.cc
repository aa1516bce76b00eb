// Formulas of composite kernels (formula.h): parser, the correctly rounded evaluation and the
// enclosure of every conforming implementation.
#include "composite/formula.h"

#include <mpfr.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <utility>

#include "base/str_cat.h"
#include "formats/ops.h"
#include "formats/ulp.h"
#include "oracles/certified_double.h"
#include "oracles/mpfr_oracle.h"
#include "oracles/mpfr_plumbing.h"

namespace fpconform::composite {

const char* FnName(Fn f) {
  static constexpr std::array<const char*, kFns> kNames = {"exp",  "exp2", "log",   "tanh",
                                                          "erf",  "sqrt", "rsqrt", "div"};
  return kNames[static_cast<size_t>(f)];
}

namespace {

struct Cast {
  const char* name;
  const FormatSpec& (*format)();
};
constexpr std::array<Cast, 3> kCasts = {{{"bfloat16", &BFloat16}, {"float16", &Float16},
                                         {"float32", &Float32}}};

// v rounded into f and back (binary64), under rounding r.
double RoundTo(const FormatSpec& f, double v, Rounding r = Rounding::kNearestEven) {
  if (std::isnan(v)) return v;
  OpEnv env;
  env.rounding = r;
  return ToDouble(f, DoubleToBits(f, v, env));
}

double Down(double v) { return std::nextafter(v, -INFINITY); }
double Up(double v) { return std::nextafter(v, INFINITY); }

// ---- Parser ----

class Parser {
 public:
  Parser(std::string_view text, const FormatSpec& compute) : s_(text), f_(compute) {}

  absl::StatusOr<Formula> Parse() {
    out_.text = std::string(s_);
    out_.compute = &f_;
    const int root = Expr();
    Skip();
    if (error_.empty() && pos_ < s_.size()) Fail("unexpected text after the formula");
    if (!error_.empty()) return absl::InvalidArgumentError(error_);
    if (root != static_cast<int>(out_.nodes.size()) - 1) {
      return absl::InternalError("formula: the result is not the last node");
    }
    for (FormulaNode& n : out_.nodes) {
      if (n.kind != FormulaNode::Kind::kAdd && n.kind != FormulaNode::Kind::kSub) continue;
      for (int o : {n.a, n.b}) {
        if (out_.nodes[static_cast<size_t>(o)].kind == FormulaNode::Kind::kMul) {
          out_.nodes[static_cast<size_t>(o)].feeds_add = true;
        }
      }
    }
    return std::move(out_);
  }

 private:
  void Fail(std::string_view what) {
    if (error_.empty()) error_ = Cat("column ", pos_ + 1, ": ", what);
  }
  void Skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool Eat(char c) {
    Skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  int Add(FormulaNode n) {
    using K = FormulaNode::Kind;
    const auto row_of = [&](int k) { return k >= 0 && out_.nodes[static_cast<size_t>(k)].row; };
    if (error_.empty() && n.kind != K::kX && n.kind != K::kW && n.kind != K::kB) {
      if (n.kind == K::kSum || n.kind == K::kMax || n.kind == K::kMean || n.kind == K::kWelfordMean ||
          n.kind == K::kWelfordM2 || n.kind == K::kOnlineSumExp) {
        if (!row_of(n.a)) Fail("a reduction of a value that is the same for the whole row");
        n.row = false;
      } else {
        n.row = row_of(n.a) || row_of(n.b) || row_of(n.c);
      }
    }
    out_.nodes.push_back(n);
    return static_cast<int>(out_.nodes.size()) - 1;
  }
  int Binary(FormulaNode::Kind k, int a, int b) {
    FormulaNode n;
    n.kind = k;
    n.a = a;
    n.b = b;
    return Add(n);
  }
  int Expr() {
    int a = Term();
    while (error_.empty()) {
      if (Eat('+')) {
        a = Binary(FormulaNode::Kind::kAdd, a, Term());
      } else if (Eat('-')) {
        a = Binary(FormulaNode::Kind::kSub, a, Term());
      } else {
        break;
      }
    }
    return a;
  }
  int Term() {
    int a = Unary();
    while (error_.empty()) {
      if (Eat('*')) {
        a = Binary(FormulaNode::Kind::kMul, a, Unary());
      } else if (Eat('/')) {
        out_.uses[static_cast<size_t>(Fn::kDiv)] = true;
        a = Binary(FormulaNode::Kind::kDiv, a, Unary());
      } else {
        break;
      }
    }
    return a;
  }
  int Unary() {
    if (Eat('-')) {
      FormulaNode n;
      n.kind = FormulaNode::Kind::kNeg;
      n.a = Unary();
      return Add(n);
    }
    return Primary();
  }
  int Primary() {
    Skip();
    if (!error_.empty()) return 0;
    if (pos_ >= s_.size()) {
      Fail("expected a value, got the end of the formula");
      return 0;
    }
    const char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      const int v = Expr();
      if (!Eat(')')) Fail("expected ')'");
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return Constant();
    if (std::isalpha(static_cast<unsigned char>(c))) return Call();
    Fail(Cat("unexpected '", std::string(1, c), "'"));
    return 0;
  }
  int Constant() {
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.')) ++pos_;
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    }
    const std::string text(s_.substr(start, pos_ - start));
    MpfrValue v(256);
    char* end = nullptr;
    const int ternary = mpfr_strtofr(v, text.c_str(), &end, 10, MPFR_RNDZ);
    FormulaNode n;
    n.kind = FormulaNode::Kind::kConst;
    if (end == nullptr || *end != '\0' || text == "." || !mpfr_number_p(v)) {
      pos_ = start;
      Fail(Cat("'", text, "' is not a decimal number"));
    } else if (mpfr_zero_p(v)) {
      n.bits = 0;
    } else {
      n.bits = MpfrRoundToFormat(f_, false, v, ternary != 0, OpEnv{}).bits;
    }
    return Add(n);
  }
  int Call() {
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    const std::string name(s_.substr(start, pos_ - start));
    for (const auto& [var, kind] : {std::pair{"x", FormulaNode::Kind::kX}, {"w", FormulaNode::Kind::kW},
                                    {"b", FormulaNode::Kind::kB}, {"eps", FormulaNode::Kind::kEps},
                                    {"n", FormulaNode::Kind::kN}}) {
      if (name == var) {
        FormulaNode v;
        v.kind = kind;
        v.row = kind == FormulaNode::Kind::kX || kind == FormulaNode::Kind::kW ||
                kind == FormulaNode::Kind::kB;
        if (kind != FormulaNode::Kind::kX) out_.row_terms = true;
        return Add(v);
      }
    }
    FormulaNode n;
    int arity = 1;
    bool known = false;
    for (int i = 0; i < kCallableFns; ++i) {
      if (name == FnName(static_cast<Fn>(i))) {
        n.kind = FormulaNode::Kind::kFn;
        n.fn = static_cast<Fn>(i);
        out_.uses[static_cast<size_t>(i)] = true;
        known = true;
      }
    }
    for (const Cast& c : kCasts) {
      if (name == c.name) {
        n.kind = FormulaNode::Kind::kCast;
        n.to = &c.format();
        known = true;
        if (n.to->d.precision > f_.d.precision) {
          pos_ = start;
          Fail(Cat("cast to ", name, ", wider than the compute format ", f_.name));
          return 0;
        }
      }
    }
    if (name == "fma") {
      n.kind = FormulaNode::Kind::kFma;
      arity = 3;
      known = true;
    }
    for (const auto& [red, kind] :
         {std::pair{"sum", FormulaNode::Kind::kSum}, {"max", FormulaNode::Kind::kMax},
          {"mean", FormulaNode::Kind::kMean}, {"welford_mean", FormulaNode::Kind::kWelfordMean},
          {"welford_m2", FormulaNode::Kind::kWelfordM2}, {"online_sumexp", FormulaNode::Kind::kOnlineSumExp}}) {
      if (name == red) {
        n.kind = kind;
        known = true;
        out_.row_terms = true;
        // mean and the Welford steps divide; the online sum calls exp.
        if (kind != FormulaNode::Kind::kSum && kind != FormulaNode::Kind::kMax) {
          out_.uses[static_cast<size_t>(kind == FormulaNode::Kind::kOnlineSumExp ? Fn::kExp : Fn::kDiv)] = true;
        }
      }
    }
    if (!known) {
      pos_ = start;
      Fail(Cat("unknown name '", name, "' (valid: x w b eps n, exp exp2 log tanh erf sqrt rsqrt, ",
               "fma, sum max mean welford_mean welford_m2 online_sumexp, bfloat16 float16 float32)"));
      return 0;
    }
    if (!Eat('(')) {
      Fail(Cat("expected '(' after ", name));
      return 0;
    }
    std::array<int, 3> args{};
    for (int i = 0; i < arity && error_.empty(); ++i) {
      if (i > 0 && !Eat(',')) {
        Fail(Cat(name, " takes ", arity, " arguments"));
        return 0;
      }
      args[static_cast<size_t>(i)] = Expr();
    }
    if (!error_.empty()) return 0;
    if (!Eat(')')) {
      Fail(Cat("expected ')' after the ", arity, " argument", arity > 1 ? "s" : "", " of ", name));
      return 0;
    }
    n.a = args[0];
    if (arity == 3) {
      n.b = args[1];
      n.c = args[2];
    }
    return Add(n);
  }

  std::string_view s_;
  const FormatSpec& f_;
  size_t pos_ = 0;
  std::string error_;
  Formula out_;
};

// ---- Elementary functions by MPFR ----

using MpfrFn = int (*)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);
MpfrFn FnOf(Fn f) {
  switch (f) {
    case Fn::kExp: return &mpfr_exp;
    case Fn::kExp2: return &mpfr_exp2;
    case Fn::kLog: return &mpfr_log;
    case Fn::kTanh: return &mpfr_tanh;
    case Fn::kErf: return &mpfr_erf;
    case Fn::kSqrt: return &mpfr_sqrt;
    case Fn::kRsqrt: return &mpfr_rec_sqrt;
    case Fn::kDiv: break;  // Not a function of one argument: never called.
  }
  return &mpfr_exp;
}

// A certified binary64 enclosure (lo, hi) of f(v) (oracles/certified_double.h), or false where
// its evaluation refuses the argument (the callers then ask MPFR).
bool FastFn(Fn f, double v, certified::Interval* out) {
  using certified::Ev;
  if (!std::isfinite(v)) return false;
  Ev r{0, certified::kInf};
  switch (f) {
    case Fn::kExp: r = certified::ExpEv(certified::Exact(v)); break;
    case Fn::kExp2: r = certified::Exp2Of(v); break;
    case Fn::kLog:
      if (v > 0) r = certified::LogEv(certified::Exact(v));
      break;
    case Fn::kTanh:
      if (v != 0) r = certified::TanhOf(v);
      break;
    case Fn::kErf: r = certified::ErfEv(certified::Exact(v)); break;
    case Fn::kSqrt:
      if (v > 0) r = certified::Sqrt(certified::Exact(v));
      break;
    case Fn::kRsqrt:
      if (v > 0) r = certified::Div(certified::Exact(1), certified::Sqrt(certified::Exact(v)));
      break;
    case Fn::kDiv: break;
  }
  if (!certified::Ok(r)) return false;
  *out = certified::Enclose(r);
  return std::isfinite(out->lo) && std::isfinite(out->hi) && out->lo <= out->hi;
}

// f(v) correctly rounded into F (RNE); v a value of F as a double. The certified binary64
// evaluation decides it where no rounding boundary of F lies in its enclosure; MPFR otherwise.
uint64_t RoundFn(const FormatSpec& F, Fn f, double v) {
  if (std::isnan(v)) return DoubleToBits(F, v);
  if (f == Fn::kRsqrt && v == 0) return DoubleToBits(F, std::signbit(v) ? -INFINITY : INFINITY);
  certified::Interval iv;
  OpResult decided;
  if (FastFn(f, v, &iv) && certified::DecideInterval(F, OpEnv{}, iv, &decided)) return decided.bits;
  MpfrValue a(64), r(123);
  mpfr_set_d(a, v, MPFR_RNDN);  // Exact: v has at most 53 bits.
  const int ternary = FnOf(f)(r, a, MPFR_RNDZ);
  uint64_t bits;
  if (mpfr_nan_p(r)) {
    bits = DoubleToBits(F, NAN);
  } else if (mpfr_inf_p(r) || mpfr_zero_p(r)) {
    // Zero: underflow below every format's range (or an exact zero, e.g. log(1) = +0).
    bits = DoubleToBits(F, mpfr_get_d(r, MPFR_RNDN));
  } else {
    const bool negative = mpfr_sgn(r) < 0;
    mpfr_abs(r, r, MPFR_RNDN);
    bits = MpfrRoundToFormat(F, negative, r, ternary != 0, OpEnv{}).bits;
  }
  return bits;
}

// f(v) rounded toward rnd in binary64 (or below/above it: a bound): the certified binary64
// enclosure where it applies, MPFR's directed rounding otherwise.
double FnDirected(Fn f, double v, mpfr_rnd_t rnd) {
  if (f == Fn::kRsqrt && v == 0) return std::signbit(v) ? -INFINITY : INFINITY;
  certified::Interval iv;
  if (FastFn(f, v, &iv)) return rnd == MPFR_RNDD ? iv.lo : iv.hi;
  MpfrValue a(64), r(53);
  mpfr_set_d(a, v, MPFR_RNDN);
  FnOf(f)(r, a, rnd);
  return mpfr_get_d(r, rnd);
}

// ulp of F at magnitude m (>= 0): 2^(max(floor(log2 m), emin) - p + 1) (F a float format).
double UlpAt(const FormatSpec& F, double m) { return 2 * HalfUlpAt(F, m); }

Enclosure Nan() { return {NAN, NAN}; }

// [min, max] of the binary64 values, moved one ulp outward.
Enclosure Hull(std::initializer_list<double> v) {
  double lo = INFINITY, hi = -INFINITY;
  for (double d : v) {
    if (std::isnan(d)) return Nan();
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  return {Down(lo), Up(hi)};
}

// Where an operation may give NaN for some operands of the intervals (Inf - Inf, 0 * Inf,
// Inf / Inf; a divisor holding 0 is refused by the caller) there is no enclosure: only the
// end points' results would be seen, never the NaN.
bool HasZero(const Enclosure& e) { return e.lo <= 0 && e.hi >= 0; }
bool HasInf(const Enclosure& e) { return std::isinf(e.lo) || std::isinf(e.hi); }
bool ProductMayBeNan(const Enclosure& a, const Enclosure& b) {
  return (HasInf(a) && HasZero(b)) || (HasInf(b) && HasZero(a));
}
bool SumMayBeNan(const Enclosure& a, const Enclosure& b) {
  return (a.hi == INFINITY && b.lo == -INFINITY) || (a.lo == -INFINITY && b.hi == INFINITY);
}
Enclosure Negate(const Enclosure& e) { return {-e.hi, -e.lo}; }

Enclosure RoundEnclosure(const FormatSpec& F, Enclosure e) {
  if (std::isnan(e.lo) || std::isnan(e.hi)) return Nan();
  return {RoundTo(F, e.lo), RoundTo(F, e.hi)};
}

// The values of F within `acc` (k ulps plus abs, not correctly rounded) of some point of the
// exact range [flo, hi] (binary64 bounds): k ulps of F at the magnitude rounded up to F
// (formula.h, "Approximate division"); beyond F's range the operation overflows to +-Inf.
Enclosure WidenByAccuracy(const FormatSpec& F, const FnAccuracy& acc, double flo, double fhi) {
  // Where the range reaches beyond F's finite values, the largest ulp of F bounds every ulp.
  const double m = std::max(std::fabs(flo), std::fabs(fhi));
  const double ru = std::isfinite(m) ? RoundTo(F, m, Rounding::kUpward) : INFINITY;
  const double u = UlpAt(F, std::isfinite(ru) ? ru : ToDouble(F, MaxFiniteBits(F)));
  const double lo = Down(Down(flo - Up(acc.ulps * u)) - acc.abs);
  const double hi = Up(Up(fhi + Up(acc.ulps * u)) + acc.abs);
  const double up_hi = RoundTo(F, hi, Rounding::kUpward), down_lo = RoundTo(F, lo, Rounding::kDownward);
  return {std::isinf(down_lo) && down_lo < 0 ? -INFINITY : RoundTo(F, lo, Rounding::kUpward),
          std::isinf(up_hi) && up_hi > 0 ? INFINITY : RoundTo(F, hi, Rounding::kDownward)};
}

// The interval a widened by a relative perturbation r of each of its points (binary64, outward).
Enclosure PerturbArgument(Enclosure a, double r) {
  if (r <= 0) return a;
  return {Down(a.lo - Up(std::fabs(a.lo) * r)), Up(a.hi + Up(std::fabs(a.hi) * r))};
}

Enclosure FnEnclosure(const FormatSpec& F, Fn f, const FnAccuracy& acc, Enclosure a) {
  if (std::isnan(a.lo) || std::isnan(a.hi)) return Nan();
  a = PerturbArgument(a, acc.arg_rel);
  double flo, fhi;
  switch (f) {
    case Fn::kLog:
    case Fn::kSqrt:
      if (a.lo < 0) return Nan();  // NaN possible (log(0) = -Inf is an end point).
      flo = FnDirected(f, a.lo, MPFR_RNDD);
      fhi = FnDirected(f, a.hi, MPFR_RNDU);
      break;
    case Fn::kRsqrt:
      if (a.lo <= 0) return Nan();
      flo = FnDirected(f, a.hi, MPFR_RNDD);
      fhi = FnDirected(f, a.lo, MPFR_RNDU);
      break;
    default:
      flo = FnDirected(f, a.lo, MPFR_RNDD);
      fhi = FnDirected(f, a.hi, MPFR_RNDU);
  }
  if (std::isnan(flo) || std::isnan(fhi)) return Nan();
  if (acc.correctly_rounded) return {RoundTo(F, flo), RoundTo(F, fhi)};
  return WidenByAccuracy(F, acc, flo, fhi);
}

// The quotient of two intervals as a division within `acc` gives it (no enclosure where the
// divisor holds 0, or both are infinite).
Enclosure DivEnclosure(const FormatSpec& F, const FnAccuracy& acc, const Enclosure& a, const Enclosure& b) {
  if (std::isnan(a.lo) || std::isnan(b.lo) || HasZero(b) || (HasInf(a) && HasInf(b))) return Nan();
  const Enclosure q = Hull({a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi});
  if (std::isnan(q.lo)) return Nan();
  if (acc.correctly_rounded) return RoundEnclosure(F, q);
  return WidenByAccuracy(F, acc, q.lo, q.hi);
}

}  // namespace

absl::StatusOr<Formula> ParseFormula(std::string_view text, const FormatSpec& compute) {
  if (compute.kind != FormatKind::kFloat || compute.d.precision > 53) {
    return absl::InvalidArgumentError(Cat("compute format ", compute.name,
                                          ": must be a float format of at most 53 bits"));
  }
  return Parser(text, compute).Parse();
}

namespace {

// Node values over one row: n entries for a row node, one for a scalar node.
template <typename T>
struct RowValues {
  std::vector<std::vector<T>> v;
  const T& At(int node, size_t i) const {
    const std::vector<T>& x = v[static_cast<size_t>(node)];
    return x.size() == 1 ? x[0] : x[i];
  }
};

size_t Width(const FormulaNode& node, size_t n) { return node.row ? n : 1; }

uint64_t One(const FormatSpec& F) { return DoubleToBits(F, 1.0); }

}  // namespace

void FormulaRowValue(const Formula& f, const RowInputs& in, std::span<uint64_t> out) {
  const FormatSpec& F = *f.compute;
  const OpEnv env;
  const size_t n = in.x.size();
  RowValues<uint64_t> r;
  r.v.resize(f.nodes.size());
  for (size_t k = 0; k < f.nodes.size(); ++k) {
    const FormulaNode& node = f.nodes[k];
    std::vector<uint64_t>& v = r.v[k];
    using K = FormulaNode::Kind;
    switch (node.kind) {
      case K::kX: v.assign(in.x.begin(), in.x.end()); continue;
      case K::kW:
        if (in.w.empty()) v.assign(n, One(F)); else v.assign(in.w.begin(), in.w.end());
        continue;
      case K::kB:
        if (in.b.empty()) v.assign(n, 0); else v.assign(in.b.begin(), in.b.end());
        continue;
      case K::kEps: v = {in.eps}; continue;
      case K::kN: v = {DoubleToBits(F, static_cast<double>(n))}; continue;
      case K::kConst: v = {node.bits}; continue;
      case K::kSum:
      case K::kMean: {
        uint64_t acc = r.At(node.a, 0);
        for (size_t i = 1; i < n; ++i) acc = Add(F, acc, r.At(node.a, i), env).bits;
        if (node.kind == K::kMean) acc = Div(F, acc, DoubleToBits(F, static_cast<double>(n)), env).bits;
        v = {acc};
        continue;
      }
      case K::kMax: {
        uint64_t m = r.At(node.a, 0);
        for (size_t i = 1; i < n; ++i) m = Maximum(F, m, r.At(node.a, i), env).bits;
        v = {m};
        continue;
      }
      case K::kWelfordMean:
      case K::kWelfordM2: {
        // Sequential Welford updates in index order (formula.h, "Welford moments": form M1 with a
        // division by the count, Q2).
        uint64_t m = r.At(node.a, 0), m2 = 0;
        for (size_t i = 1; i < n; ++i) {
          const uint64_t x = r.At(node.a, i);
          const uint64_t delta = Sub(F, x, m, env).bits;
          m = Add(F, m, Div(F, delta, DoubleToBits(F, static_cast<double>(i + 1)), env).bits, env).bits;
          m2 = Add(F, m2, Mul(F, delta, Sub(F, x, m, env).bits, env).bits, env).bits;
        }
        v = {node.kind == K::kWelfordMean ? m : m2};
        continue;
      }
      case K::kOnlineSumExp: {
        // One lane in index order: s = s exp(m - m') + exp(x - m'), m' = max(m, x).
        uint64_t m = r.At(node.a, 0), sum = One(F);
        for (size_t i = 1; i < n; ++i) {
          const uint64_t x = r.At(node.a, i);
          const uint64_t next = Maximum(F, m, x, env).bits;
          const uint64_t scale = RoundFn(F, Fn::kExp, ToDouble(F, Sub(F, m, next, env).bits));
          const uint64_t term = RoundFn(F, Fn::kExp, ToDouble(F, Sub(F, x, next, env).bits));
          sum = Add(F, Mul(F, sum, scale, env).bits, term, env).bits;
          m = next;
        }
        v = {sum};
        continue;
      }
      default: break;
    }
    v.resize(Width(node, n));
    for (size_t i = 0; i < v.size(); ++i) {
      const auto at = [&](int o) { return r.At(o, i); };
      switch (node.kind) {
        case K::kAdd: v[i] = Add(F, at(node.a), at(node.b), env).bits; break;
        case K::kSub: v[i] = Sub(F, at(node.a), at(node.b), env).bits; break;
        case K::kMul: v[i] = Mul(F, at(node.a), at(node.b), env).bits; break;
        case K::kDiv: v[i] = Div(F, at(node.a), at(node.b), env).bits; break;
        case K::kNeg: v[i] = at(node.a) ^ SignBit(F); break;
        case K::kFma: v[i] = Fma(F, at(node.a), at(node.b), at(node.c), env).bits; break;
        case K::kFn: v[i] = RoundFn(F, node.fn, ToDouble(F, at(node.a))); break;
        case K::kCast:
          v[i] = Convert(*node.to, F, Convert(F, *node.to, at(node.a), env).bits, env).bits;
          break;
        default: break;
      }
    }
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = r.At(static_cast<int>(f.nodes.size()) - 1, i);
}

uint64_t FormulaValue(const Formula& f, uint64_t x_bits) {
  uint64_t y = 0;
  RowInputs in;
  in.x = std::span<const uint64_t>(&x_bits, 1);
  FormulaRowValue(f, in, std::span<uint64_t>(&y, 1));
  return y;
}

namespace {

// The sum of a row of intervals in F in any order, each addition rounded to nearest in F:
// the exact sum lies in [sum lo, sum hi] and a floating-point sum of n terms in any order errs
// by at most gamma_(n-1) sum |t_i| (Higham, Accuracy and Stability, 2nd ed., §4.2, (4.4)),
// gamma_k = k u / (1 - k u), u = 2^-p of F. The binary64 sums move one ulp outward per step.
Enclosure SumEnclosure(const FormatSpec& F, const std::vector<Enclosure>& t) {
  double lo = 0, hi = 0, mag = 0;
  bool pos_inf = false, neg_inf = false;  // Inf - Inf: a NaN is possible.
  for (const Enclosure& e : t) {
    if (std::isnan(e.lo) || std::isnan(e.hi)) return Nan();
    pos_inf = pos_inf || e.hi == INFINITY;
    neg_inf = neg_inf || e.lo == -INFINITY;
    if (pos_inf && neg_inf) return Nan();
    lo = Down(lo + e.lo);
    hi = Up(hi + e.hi);
    mag = Up(mag + std::max(std::fabs(e.lo), std::fabs(e.hi)));
  }
  const double k = static_cast<double>(t.size() - 1);
  const double u = std::ldexp(1.0, -F.d.precision);
  if (!(k * u < 0.5)) return Nan();
  const double gamma = Up(Up(k * u) / Down(1 - k * u));
  const double err = Up(gamma * mag);
  if (std::isnan(err) || std::isnan(lo - err)) return Nan();
  const double l = Down(lo - err), h = Up(hi + err);
  const double up_h = RoundTo(F, h, Rounding::kUpward), down_l = RoundTo(F, l, Rounding::kDownward);
  return {std::isinf(down_l) && down_l < 0 ? -INFINITY : RoundTo(F, l, Rounding::kUpward),
          std::isinf(up_h) && up_h > 0 ? INFINITY : RoundTo(F, h, Rounding::kDownward)};
}

// [l, h] (binary64) as the values of F inside it, +-Inf where it passes F's finite range.
Enclosure ToFormatValues(const FormatSpec& F, double l, double h) {
  if (std::isnan(l) || std::isnan(h)) return Nan();
  const double up_h = RoundTo(F, h, Rounding::kUpward), down_l = RoundTo(F, l, Rounding::kDownward);
  return {std::isinf(down_l) && down_l < 0 ? -INFINITY : RoundTo(F, l, Rounding::kUpward),
          std::isinf(up_h) && up_h > 0 ? INFINITY : RoundTo(F, h, Rounding::kDownward)};
}

// gamma_k = k u / (1 - k u), rounded up (k u < 1/2 checked by the callers).
double Gamma(double k, double u) { return Up(Up(k * u) / Down(1 - Up(k * u))); }

// Upper bound of the square of an interval's points.
double SquareUp(double lo, double hi) { return Up(std::max(lo * lo, hi * hi)); }

// The mean (which = false) or M2 (which = true) of a row of intervals as any Welford computation
// in F gives it (formula.h, "Welford moments": the theorem and its constants).
Enclosure WelfordEnclosure(const FormatSpec& F, const FnAccuracy& div, const std::vector<Enclosure>& t, bool m2) {
  const size_t count = t.size();
  const double n = static_cast<double>(count);
  double sum_lo = 0, sum_hi = 0, sum_c_lo = 0, sum_c_hi = 0, r2 = 0, big = 0, vmin = INFINITY, vmax = -INFINITY;
  std::vector<double> c(count);
  for (size_t i = 0; i < count; ++i) {
    const Enclosure& e = t[i];
    if (!std::isfinite(e.lo) || !std::isfinite(e.hi)) return Nan();
    sum_lo = Down(sum_lo + e.lo);
    sum_hi = Up(sum_hi + e.hi);
    c[i] = e.lo == e.hi ? e.lo : e.lo + (e.hi - e.lo) / 2;  // A centre; the radius covers both ends.
    const double radius = std::max(Up(c[i] - e.lo), Up(e.hi - c[i]));
    r2 = Up(r2 + Up(radius * radius));
    sum_c_lo = Down(sum_c_lo + c[i]);
    sum_c_hi = Up(sum_c_hi + c[i]);
    big = std::max({big, std::fabs(e.lo), std::fabs(e.hi)});
    vmin = std::min(vmin, e.lo);
    vmax = std::max(vmax, e.hi);
  }
  const double mu_lo = Down(sum_lo / n), mu_hi = Up(sum_hi / n);
  // The exact M2 of the centres: Q = sum (c_i - mt)^2 = M2(c) + n (mu_c - mt)^2 for any mt.
  const double mt = sum_c_lo / n;
  double q_lo = 0, q_hi = 0;
  for (double ci : c) {
    const double d_lo = Down(ci - mt), d_hi = Up(ci - mt);
    const double sq_lo = d_lo >= 0 ? Down(d_lo * d_lo) : (d_hi <= 0 ? Down(d_hi * d_hi) : 0.0);
    q_lo = Down(q_lo + sq_lo);
    q_hi = Up(q_hi + SquareUp(d_lo, d_hi));
  }
  const double off = std::max(Up(std::fabs(Down(sum_c_lo / n) - mt)), Up(std::fabs(Up(sum_c_hi / n) - mt)));
  const double m2c_lo = std::max(0.0, Down(q_lo - Up(n * Up(off * off)))), m2c_hi = q_hi;
  const double rho = Up(std::sqrt(r2));
  const double cross = Up(2 * Up(Up(std::sqrt(m2c_hi)) * rho));
  const double m2_lo = std::max(0.0, Down(m2c_lo - cross));
  const double m2_hi = Up(Up(m2c_hi + cross) + Up(rho * rho));
  // The theorem's constants.
  const double u = std::ldexp(1.0, -F.d.precision);
  const double eta = std::ldexp(1.0, F.d.emin - F.d.precision);
  const double d_ulps = div.correctly_rounded ? 0.5 : div.ulps;
  const double units = div.correctly_rounded ? 1.0 : Up(2 * d_ulps * Up(1 + 2 * u));
  const double eta1 = Up(Up(std::max(1.0, 2 * d_ulps) * eta) + (div.correctly_rounded ? 0.0 : div.abs));
  if (!(Up((units + 8) * u) < 0.25) || !(Up(2 * (n - 1) * u) <= 0.5)) return Nan();
  const double k1 = std::max(1.0, Up(Gamma(units + 3, u) / u));
  const double k2 = Up(Up(Up(1 + u) * Gamma(units + 2, u)) / u);
  const double s = Up(u * Up(k1 + 2 * k2));
  const double half = Up(s * Up((n + 1) / 2));
  if (!(half <= 0.5)) return Nan();
  const double range = Up(vmax - vmin);
  const double l0 = Up(Up(u * Up(Up(k1 * big) + Up(k2 * range))) + Up(3 * eta1));
  const double l = Up(l0 / Down(1 - half));
  const double e_all = Up(l * Up((n + 1) / 2));
  // No enclosure where a product of the steps could overflow.
  const double reach = Up(Up(big + range) + Up(2 * e_all));
  if (!(Up(2 * Up(n * Up(reach * reach))) < ToDouble(F, MaxFiniteBits(F)))) return Nan();
  if (!m2) {
    const double g = Up(Up(l * Up((n - 1) * (n + 2))) / Down(2 * n));
    return ToFormatValues(F, Down(mu_lo - g), Up(mu_hi + g));
  }
  const double nn = Up(Up((n + 6) * n) * (n - 1));  // (n + 6) n (n - 1), exact for n < 2^17.
  const double t2 = Up(Up(l * Up(std::sqrt(Up(Up(nn * m2_hi) / 2)))) + Up(Up(Up(l * l) * nn) / 8));
  const double z = Up(Up(Up(1 + Gamma(4, u)) * l) *
                      Up(Up(std::sqrt(Up(2 * Up((n - 1) * m2_hi)))) + Up(Up(l * Up((n - 1) * (n + 4))) / 4)));
  const double w = Up(eta1 * Up((n - 1) * (n + 6)));
  double total = Up(Gamma(2, u) * Up((n - 1) * m2_hi));
  total = Up(total + t2);
  total = Up(total + Up(Gamma(units + 8, u) * Up(m2_hi + t2)));
  total = Up(Up(total + z) + w);
  const double d = Up(total / Down(1 - Up(2 * (n - 1) * u)));
  return ToFormatValues(F, Down(m2_lo - d), Up(m2_hi + d));
}

// sum_i exp(v_i - max v) as any online-softmax computation in F gives it (formula.h, "Online
// softmax"), for finite point terms (no enclosure otherwise).
Enclosure OnlineSumExpEnclosure(const FormatSpec& F, const FnAccuracy& exp, const std::vector<Enclosure>& t) {
  const size_t count = t.size();
  const double n = static_cast<double>(count);
  std::vector<double> v(count);
  for (size_t i = 0; i < count; ++i) {
    if (!std::isfinite(t[i].lo) || t[i].lo != t[i].hi) return Nan();
    v[i] = t[i].lo;
  }
  std::vector<double> distinct = v;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const double top = distinct.back();
  const double u = std::ldexp(1.0, -F.d.precision);
  const double eta = std::ldexp(1.0, F.d.emin - F.d.precision);
  const double k = exp.correctly_rounded ? 0.5 : exp.ulps;
  const double dl = Up(Up(2 * k * u) * Up(1 + 2 * u));
  const double al = Up(Up(2 * k * eta) + (exp.correctly_rounded ? 0.0 : exp.abs));
  const double q = Up(Up(u + exp.arg_rel) + Up(u * exp.arg_rel));
  const double ch = Up(Up(dl + u) + Up(dl * u));
  const double cm = Up(dl + u);
  if (!(cm < 0.25) || !(Up((n - 1) * u) < 0.5)) return Nan();
  const double cl = Up(cm / Down(1 - cm));
  double s_lo = 0, s_hi = 0;
  for (double vi : v) {
    // K: the distinct row values above v_i.
    const double above = static_cast<double>(
        distinct.end() - std::upper_bound(distinct.begin(), distinct.end(), vi));
    // t_i exp(+-(K_i c + (M - v_i) q)) as one exponential of the summed exponents.
    const double gap = Up(top - vi);
    const double grow = Up(Up(above * ch) + Up(gap * q)), shrink = Up(Up(above * cl) + Up(gap * q));
    s_hi = Up(s_hi + FnDirected(Fn::kExp, Up(std::min(0.0, Up(vi - top)) + grow), MPFR_RNDU));
    s_lo = Down(s_lo + FnDirected(Fn::kExp, Down(Down(vi - top) - shrink), MPFR_RNDD));
  }
  const double gamma = Gamma(n - 1, u);
  const double a = Up(Up(2 * Up(n * n)) * al);
  return ToFormatValues(F, Down(Down(s_lo * Down(1 - gamma)) - a), Up(Up(s_hi * Up(1 + gamma)) + a));
}

}  // namespace

void FormulaRowEnclosure(const Formula& f, const AccuracyTable& accuracy, bool contract,
                         const RowInputs& in, std::span<Enclosure> out) {
  const FormatSpec& F = *f.compute;
  const size_t n = in.x.size();
  RowValues<Enclosure> r, raw;  // raw: unrounded products, for contraction.
  r.v.resize(f.nodes.size());
  raw.v.resize(f.nodes.size());
  const auto point = [&](uint64_t bits) {
    const double d = ToDouble(F, bits);
    return Enclosure{d, d};
  };
  // An operand of + - or a reduction: with contraction a product may enter unrounded.
  const auto addend = [&](int k, size_t i) {
    const Enclosure e = r.At(k, i);
    if (!contract || f.nodes[static_cast<size_t>(k)].kind != FormulaNode::Kind::kMul) return e;
    const Enclosure p = raw.At(k, i);
    if (std::isnan(p.lo) || std::isnan(e.lo)) return Nan();
    return Enclosure{std::min(p.lo, e.lo), std::max(p.hi, e.hi)};
  };
  for (size_t k = 0; k < f.nodes.size(); ++k) {
    const FormulaNode& node = f.nodes[k];
    std::vector<Enclosure>& v = r.v[k];
    using K = FormulaNode::Kind;
    switch (node.kind) {
      case K::kX:
        v.resize(n);
        for (size_t i = 0; i < n; ++i) v[i] = point(in.x[i]);
        continue;
      case K::kW:
        v.resize(in.w.empty() ? 1 : n);
        for (size_t i = 0; i < v.size(); ++i) v[i] = in.w.empty() ? Enclosure{1, 1} : point(in.w[i]);
        continue;
      case K::kB:
        v.resize(in.b.empty() ? 1 : n);
        for (size_t i = 0; i < v.size(); ++i) v[i] = in.b.empty() ? Enclosure{0, 0} : point(in.b[i]);
        continue;
      case K::kEps: v = {point(in.eps)}; continue;
      case K::kN: v = {point(DoubleToBits(F, static_cast<double>(n)))}; continue;
      case K::kConst: v = {point(node.bits)}; continue;
      case K::kSum:
      case K::kMean: {
        std::vector<Enclosure> t(n);
        for (size_t i = 0; i < n; ++i) t[i] = addend(node.a, i);
        Enclosure s = SumEnclosure(F, t);
        if (node.kind == K::kMean && !std::isnan(s.lo)) {
          const double m = static_cast<double>(n);
          s = DivEnclosure(F, accuracy[static_cast<size_t>(Fn::kDiv)], s, Enclosure{m, m});
        }
        v = {s};
        continue;
      }
      case K::kWelfordMean:
      case K::kWelfordM2:
      case K::kOnlineSumExp: {
        std::vector<Enclosure> t(n);
        for (size_t i = 0; i < n; ++i) t[i] = r.At(node.a, i);
        v = {node.kind == K::kOnlineSumExp
                 ? OnlineSumExpEnclosure(F, accuracy[static_cast<size_t>(Fn::kExp)], t)
                 : WelfordEnclosure(F, accuracy[static_cast<size_t>(Fn::kDiv)], t, node.kind == K::kWelfordM2)};
        continue;
      }
      case K::kMax: {
        Enclosure m{-INFINITY, -INFINITY};
        for (size_t i = 0; i < n; ++i) {
          const Enclosure e = r.At(node.a, i);
          if (std::isnan(e.lo) || std::isnan(e.hi)) {
            m = Nan();
            break;
          }
          m = {std::max(m.lo, e.lo), std::max(m.hi, e.hi)};
        }
        v = {m};
        continue;
      }
      default: break;
    }
    const size_t width = Width(node, n);
    v.resize(width);
    if (node.kind == K::kMul) raw.v[k].resize(width);
    for (size_t i = 0; i < width; ++i) {
      const auto at = [&](int o) { return r.At(o, i); };
      Enclosure e;
      switch (node.kind) {
        case K::kAdd:
        case K::kSub: {
          const Enclosure a = addend(node.a, i), b = node.kind == K::kAdd ? addend(node.b, i) : Negate(addend(node.b, i));
          e = SumMayBeNan(a, b) ? Nan() : RoundEnclosure(F, Hull({a.lo + b.lo, a.hi + b.hi}));
          break;
        }
        case K::kMul: {
          const Enclosure a = at(node.a), b = at(node.b);
          raw.v[k][i] = ProductMayBeNan(a, b) ? Nan() : Hull({a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi});
          e = RoundEnclosure(F, raw.v[k][i]);
          break;
        }
        case K::kDiv: e = DivEnclosure(F, accuracy[static_cast<size_t>(Fn::kDiv)], at(node.a), at(node.b)); break;
        case K::kNeg: e = {-at(node.a).hi, -at(node.a).lo}; break;
        case K::kFma: {
          const Enclosure a = at(node.a), b = at(node.b), c = at(node.c);
          const Enclosure p =
              ProductMayBeNan(a, b) ? Nan() : Hull({a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi});
          e = std::isnan(p.lo) || SumMayBeNan(p, c) ? Nan() : RoundEnclosure(F, Hull({p.lo + c.lo, p.hi + c.hi}));
          break;
        }
        case K::kFn: e = FnEnclosure(F, node.fn, accuracy[static_cast<size_t>(node.fn)], at(node.a)); break;
        case K::kCast: e = RoundEnclosure(*node.to, at(node.a)); break;
        default: break;
      }
      // inf - inf and 0 * inf make NaN end points; an interval's end points also stay ordered.
      if (std::isnan(e.lo) || std::isnan(e.hi) || e.lo > e.hi) e = Nan();
      v[i] = e;
    }
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = r.At(static_cast<int>(f.nodes.size()) - 1, i);
}

Enclosure FormulaEnclosure(const Formula& f, const AccuracyTable& accuracy, bool contract,
                           uint64_t x_bits) {
  Enclosure e;
  RowInputs in;
  in.x = std::span<const uint64_t>(&x_bits, 1);
  FormulaRowEnclosure(f, accuracy, contract, in, std::span<Enclosure>(&e, 1));
  return e;
}

}  // namespace fpconform::composite
