// Formulas of composite kernels (formula.h): parser, the correctly rounded evaluation and the
// enclosure of every conforming implementation.
#include "composite/formula.h"

#include <mpfr.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <utility>

#include "formats/ops.h"
#include "formats/str_cat.h"
#include "oracles/mpfr_oracle.h"

namespace fpconform::composite {

const char* FnName(Fn f) {
  static constexpr std::array<const char*, kFns> kNames = {"exp",  "exp2", "log",  "tanh",
                                                          "erf",  "sqrt", "rsqrt"};
  return kNames[static_cast<size_t>(f)];
}

namespace {

struct Cast {
  const char* name;
  const FormatSpec& (*format)();
};
constexpr std::array<Cast, 3> kCasts = {{{"bfloat16", &BFloat16}, {"float16", &Float16},
                                         {"float32", &Float32}}};

double BitsToDouble(const FormatSpec& f, uint64_t bits) {
  const uint64_t d = Convert(f, Float64(), bits, OpEnv{}).bits;
  double v;
  std::memcpy(&v, &d, sizeof v);
  return v;
}

uint64_t DoubleToBits(const FormatSpec& f, double v, Rounding r = Rounding::kNearestEven) {
  uint64_t d;
  std::memcpy(&d, &v, sizeof d);
  OpEnv env;
  env.rounding = r;
  return Convert(Float64(), f, d, env).bits;
}

// v rounded into f and back (binary64), under rounding r.
double RoundTo(const FormatSpec& f, double v, Rounding r = Rounding::kNearestEven) {
  if (std::isnan(v)) return v;
  return BitsToDouble(f, DoubleToBits(f, v, r));
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
    mpfr_t v;
    mpfr_init2(v, 256);
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
    mpfr_clear(v);
    return Add(n);
  }
  int Call() {
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    const std::string name(s_.substr(start, pos_ - start));
    if (name == "x") {
      FormulaNode n;
      n.kind = FormulaNode::Kind::kX;
      return Add(n);
    }
    FormulaNode n;
    int arity = 1;
    bool known = false;
    for (int i = 0; i < kFns; ++i) {
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
    if (!known) {
      pos_ = start;
      Fail(Cat("unknown name '", name, "' (valid: x, exp exp2 log tanh erf sqrt rsqrt, fma, ",
               "bfloat16 float16 float32)"));
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
  }
  return &mpfr_exp;
}

// f(v) correctly rounded into F (RNE); v a value of F as a double.
uint64_t RoundFn(const FormatSpec& F, Fn f, double v) {
  if (std::isnan(v)) return DoubleToBits(F, v);
  if (f == Fn::kRsqrt && v == 0) return DoubleToBits(F, std::signbit(v) ? -INFINITY : INFINITY);
  mpfr_t a, r;
  mpfr_init2(a, 64);
  mpfr_init2(r, 123);
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
  mpfr_clear(a);
  mpfr_clear(r);
  return bits;
}

// f(v) rounded by MPFR toward rnd in binary64.
double FnDirected(Fn f, double v, mpfr_rnd_t rnd) {
  if (f == Fn::kRsqrt && v == 0) return std::signbit(v) ? -INFINITY : INFINITY;
  mpfr_t a, r;
  mpfr_init2(a, 64);
  mpfr_init2(r, 53);
  mpfr_set_d(a, v, MPFR_RNDN);
  FnOf(f)(r, a, rnd);
  const double d = mpfr_get_d(r, rnd);
  mpfr_clear(a);
  mpfr_clear(r);
  return d;
}

// ulp of F at magnitude m (>= 0): 2^(max(floor(log2 m), emin) - p + 1).
double UlpAt(const FormatSpec& F, double m) {
  int e = F.d.emin;
  if (m > 0 && std::isfinite(m)) {
    int ex;
    std::frexp(m, &ex);
    e = std::max(ex - 1, F.d.emin);
  }
  return std::ldexp(1.0, e - F.d.precision + 1);
}

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

Enclosure RoundEnclosure(const FormatSpec& F, Enclosure e) {
  if (std::isnan(e.lo) || std::isnan(e.hi)) return Nan();
  return {RoundTo(F, e.lo), RoundTo(F, e.hi)};
}

Enclosure FnEnclosure(const FormatSpec& F, Fn f, const FnAccuracy& acc, Enclosure a) {
  if (std::isnan(a.lo) || std::isnan(a.hi)) return Nan();
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
  const double u = UlpAt(F, std::max(std::fabs(flo), std::fabs(fhi)));
  const double lo = Down(Down(flo - acc.ulps * u) - acc.abs);
  const double hi = Up(Up(fhi + acc.ulps * u) + acc.abs);
  // The values of F in [lo, hi]; beyond F's range the function overflows to +-Inf.
  const double up_hi = RoundTo(F, hi, Rounding::kUpward), down_lo = RoundTo(F, lo, Rounding::kDownward);
  return {std::isinf(down_lo) && down_lo < 0 ? -INFINITY : RoundTo(F, lo, Rounding::kUpward),
          std::isinf(up_hi) && up_hi > 0 ? INFINITY : RoundTo(F, hi, Rounding::kDownward)};
}

}  // namespace

absl::StatusOr<Formula> ParseFormula(std::string_view text, const FormatSpec& compute) {
  if (compute.kind != FormatKind::kFloat || compute.d.precision > 53) {
    return absl::InvalidArgumentError(Cat("compute format ", compute.name,
                                          ": must be a float format of at most 53 bits"));
  }
  return Parser(text, compute).Parse();
}

uint64_t FormulaValue(const Formula& f, uint64_t x_bits) {
  const FormatSpec& F = *f.compute;
  const OpEnv env;
  std::vector<uint64_t> v(f.nodes.size());
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const FormulaNode& n = f.nodes[i];
    const auto at = [&](int k) { return v[static_cast<size_t>(k)]; };
    using K = FormulaNode::Kind;
    switch (n.kind) {
      case K::kX: v[i] = x_bits; break;
      case K::kConst: v[i] = n.bits; break;
      case K::kAdd: v[i] = Add(F, at(n.a), at(n.b), env).bits; break;
      case K::kSub: v[i] = Sub(F, at(n.a), at(n.b), env).bits; break;
      case K::kMul: v[i] = Mul(F, at(n.a), at(n.b), env).bits; break;
      case K::kDiv: v[i] = Div(F, at(n.a), at(n.b), env).bits; break;
      case K::kNeg: v[i] = at(n.a) ^ SignBit(F); break;
      case K::kFma: v[i] = Fma(F, at(n.a), at(n.b), at(n.c), env).bits; break;
      case K::kFn: v[i] = RoundFn(F, n.fn, BitsToDouble(F, at(n.a))); break;
      case K::kCast:
        v[i] = Convert(*n.to, F, Convert(F, *n.to, at(n.a), env).bits, env).bits;
        break;
    }
  }
  return v.back();
}

Enclosure FormulaEnclosure(const Formula& f, const AccuracyTable& accuracy, bool contract,
                           uint64_t x_bits) {
  const FormatSpec& F = *f.compute;
  std::vector<Enclosure> v(f.nodes.size());
  // Unrounded products, for contraction.
  std::vector<Enclosure> raw(f.nodes.size());
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const FormulaNode& n = f.nodes[i];
    const auto at = [&](int k) { return v[static_cast<size_t>(k)]; };
    // An operand of + or -: with contraction a product may enter unrounded.
    const auto addend = [&](int k) {
      const Enclosure r = v[static_cast<size_t>(k)];
      if (!contract || f.nodes[static_cast<size_t>(k)].kind != FormulaNode::Kind::kMul) return r;
      const Enclosure p = raw[static_cast<size_t>(k)];
      if (std::isnan(p.lo) || std::isnan(r.lo)) return Nan();
      return Enclosure{std::min(p.lo, r.lo), std::max(p.hi, r.hi)};
    };
    using K = FormulaNode::Kind;
    switch (n.kind) {
      case K::kX: {
        const double x = BitsToDouble(F, x_bits);
        v[i] = {x, x};
        break;
      }
      case K::kConst: {
        const double c = BitsToDouble(F, n.bits);
        v[i] = {c, c};
        break;
      }
      case K::kAdd:
      case K::kSub: {
        const Enclosure a = addend(n.a), b = addend(n.b);
        v[i] = n.kind == K::kAdd ? RoundEnclosure(F, Hull({a.lo + b.lo, a.hi + b.hi}))
                                 : RoundEnclosure(F, Hull({a.lo - b.hi, a.hi - b.lo}));
        break;
      }
      case K::kMul: {
        const Enclosure a = at(n.a), b = at(n.b);
        raw[i] = Hull({a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi});
        v[i] = RoundEnclosure(F, raw[i]);
        break;
      }
      case K::kDiv: {
        const Enclosure a = at(n.a), b = at(n.b);
        if (std::isnan(b.lo) || (b.lo <= 0 && b.hi >= 0)) {
          v[i] = Nan();
        } else {
          v[i] = RoundEnclosure(F, Hull({a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi}));
        }
        break;
      }
      case K::kNeg: v[i] = {-at(n.a).hi, -at(n.a).lo}; break;
      case K::kFma: {
        const Enclosure a = at(n.a), b = at(n.b), c = at(n.c);
        const Enclosure p = Hull({a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi});
        v[i] = RoundEnclosure(F, Hull({p.lo + c.lo, p.hi + c.hi}));
        break;
      }
      case K::kFn:
        v[i] = FnEnclosure(F, n.fn, accuracy[static_cast<size_t>(n.fn)], at(n.a));
        break;
      case K::kCast: v[i] = RoundEnclosure(*n.to, at(n.a)); break;
    }
    // inf - inf and 0 * inf make NaN end points; an interval's end points also stay ordered.
    if (std::isnan(v[i].lo) || std::isnan(v[i].hi) || v[i].lo > v[i].hi) v[i] = Nan();
  }
  return v.back();
}

}  // namespace fpconform::composite
