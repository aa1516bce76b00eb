// Shared machinery of the formats-vs-MPFR conformance suites (fp8_exhaustive_test,
// fp16_test, fp32_test; oracles/mpfr_oracle_test runs its hand-computed rows through Case,
// RunOracle and RunFormats): one call runs an operation through formats/ops.h and through the MPFR
// oracle and compares bits and flags (NaN by class), a counter-based generator gives every
// random case from (seed, case index), and ParallelCheck spreads a case range over threads.
//
// Reproducibility: case i of a suite depends only on (seed, i) (CaseRng below, SplitMix64
// finalizer), never on the thread split. FPCONFORM_SEED overrides the default seed; every
// suite prints the seed it used, and every failure prints the seed and the case index.
#ifndef FPCONFORM_CONFORMANCE_ORACLE_CHECK_H_
#define FPCONFORM_CONFORMANCE_ORACLE_CHECK_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <mutex>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "base/run_workers.h"
#include "cases/boundary_operands.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "formats/ops.h"
#include "formats/text.h"
#include "oracles/mpfr_oracle.h"

namespace fpconform::conformance {

using ::fpconform::BoundaryOperands;
using ::fpconform::CaseRng;
using ::fpconform::FieldsToBits;
using ::fpconform::Near;
using ::fpconform::RandomBits;
using ::fpconform::RandomOperand;

enum class Op { kAdd, kSub, kMul, kDiv, kFma, kSqrt, kConvert };

inline const char* OpName(Op op) {
  switch (op) {
    case Op::kAdd: return "add";
    case Op::kSub: return "sub";
    case Op::kMul: return "mul";
    case Op::kDiv: return "div";
    case Op::kFma: return "fma";
    case Op::kSqrt: return "sqrt";
    case Op::kConvert: return "convert";
  }
  return "?";
}

// The name of a test parameterized by format: the format's name (INSTANTIATE_TEST_SUITE_P).
inline std::string FormatParamName(const testing::TestParamInfo<const FormatSpec*>& p) {
  return std::string(p.param->name);
}

inline constexpr uint64_t kDefaultSeed = 0x5EED'F9C0'2026'0001ull;

// The suite's seed: FPCONFORM_SEED (decimal or 0x-hex) or kDefaultSeed, printed once
// (cases/test_seed.h).
inline uint64_t SuiteSeed(const char* suite) { return TestSeed(kDefaultSeed, suite); }

inline std::string EnvName(const OpEnv& env) {
  std::string s = RoundingName(env);
  if (env.rounding == Rounding::kStochastic) {
    s += "(r=0x";
    std::ostringstream r;
    r << std::hex << env.sr_random;
    s += r.str() + ")";
  }
  if (env.saturate) s += "+sat";
  if (env.flush_to_zero) s += "+ftz";
  if (env.denormals_are_zero) s += "+daz";
  if (env.tininess == Tininess::kBeforeRounding) s += "+before";
  s += "+nan:";
  s += NanProfileName(env.nan);
  return s;
}

struct Case {
  Op op = Op::kAdd;
  const FormatSpec* f = nullptr;     // Operation format; destination of a conversion.
  const FormatSpec* from = nullptr;  // Conversion source.
  uint64_t a = 0, b = 0, c = 0;
  OpEnv env;
};

// Runs k's operation with one implementation's functions: formats/ops.h's (RunFormats) or the MPFR
// oracle's (RunOracle), which take the same arguments.
template <auto add, auto sub, auto mul, auto div, auto fma, auto sqrt, auto convert>
OpResult RunCase(const Case& k) {
  const FormatSpec& f = *k.f;
  switch (k.op) {
    case Op::kAdd: return add(f, k.a, k.b, k.env);
    case Op::kSub: return sub(f, k.a, k.b, k.env);
    case Op::kMul: return mul(f, k.a, k.b, k.env);
    case Op::kDiv: return div(f, k.a, k.b, k.env);
    case Op::kFma: return fma(f, k.a, k.b, k.c, k.env);
    case Op::kSqrt: return sqrt(f, k.a, k.env);
    case Op::kConvert: return convert(*k.from, f, k.a, k.env);
  }
  return {};
}

inline OpResult RunFormats(const Case& k) { return RunCase<Add, Sub, Mul, Div, Fma, Sqrt, Convert>(k); }

inline OpResult RunOracle(const Case& k) {
  return RunCase<MpfrAdd, MpfrSub, MpfrMul, MpfrDiv, MpfrFma, MpfrSqrt, MpfrConvert>(k);
}

// Bits equal and flags equal; a NaN expected result only needs a NaN (IsNanBits) with the
// same flags.
inline bool Agrees(const Case& k, const OpResult& want, const OpResult& got) {
  if (want.flags != got.flags) return false;
  if (IsFloat(*k.f) && MpfrIsNanBits(*k.f, want.bits)) return IsNanBits(*k.f, got.bits);
  return want.bits == got.bits;
}

inline std::string Explain(const Case& k, const OpResult& want, const OpResult& got,
                           uint64_t seed, uint64_t index) {
  std::ostringstream o;
  const FormatSpec& src = k.op == Op::kConvert ? *k.from : *k.f;
  o << k.f->name << " " << OpName(k.op);
  if (k.op == Op::kConvert) o << " from " << k.from->name;
  o << " " << EnvName(k.env) << "\n  a = " << Describe(src, k.a);
  if (k.op != Op::kSqrt && k.op != Op::kConvert) o << "\n  b = " << Describe(src, k.b);
  if (k.op == Op::kFma) o << "\n  c = " << Describe(src, k.c);
  o << "\n  expected (MPFR)  " << Describe(*k.f, want.bits) << " flags "
    << FlagsToString(want.flags) << "\n  got (formats)    " << Describe(*k.f, got.bits)
    << " flags " << FlagsToString(got.flags) << "\n  seed 0x" << std::hex << seed << std::dec
    << " case " << index;
  return o.str();
}

// What the oracle's expected results were, per thread: counts of each flag v z o u x, of NaN
// results and of exact (flag-free) results. Shows that a sweep reaches the hard cases.
struct Tally {
  int64_t counts[7] = {};
};
inline Tally& ThreadTally() {
  thread_local Tally tally;
  return tally;
}

// Collects the first failures of a parallel sweep; reported on the main thread.
class FailureLog {
 public:
  // Moves the calling thread's tally into this log.
  void FlushTally() {
    Tally& t = ThreadTally();
    for (int i = 0; i < 7; ++i) {
      tally_[i] += t.counts[i];
      t.counts[i] = 0;
    }
  }
  std::string TallyString() {
    FlushTally();
    std::ostringstream o;
    const char* names[7] = {"v", "z", "o", "u", "x", "nan", "exact"};
    for (int i = 0; i < 7; ++i) o << (i ? " " : "") << names[i] << "=" << tally_[i].load();
    return o.str();
  }
  void Add(std::string message) {
    ++count_;
    std::lock_guard<std::mutex> lock(mu_);
    if (messages_.size() < kKept) messages_.push_back(std::move(message));
  }
  int64_t count() const { return count_.load(); }
  // Reports each kept failure as a GoogleTest failure with a SCOPED_TRACE.
  void Report(const char* what) {
    for (const std::string& m : messages_) {
      SCOPED_TRACE(m);
      ADD_FAILURE() << what << ": formats/ disagrees with the MPFR oracle";
    }
    if (count_ > 0) {
      ADD_FAILURE() << what << ": " << count_ << " disagreements in total (first "
                    << messages_.size() << " shown)";
    }
  }

 private:
  static constexpr size_t kKept = 20;
  std::atomic<int64_t> tally_[7] = {};
  std::atomic<int64_t> count_{0};
  std::mutex mu_;
  std::vector<std::string> messages_;
};

// Checks one case; returns true if formats/ agrees with the oracle.
inline bool CheckCase(const Case& k, uint64_t seed, uint64_t index, FailureLog& log) {
  const OpResult want = RunOracle(k);
  const OpResult got = RunFormats(k);
  Tally& t = ThreadTally();
  for (int i = 0; i < 5; ++i) t.counts[i] += (want.flags >> i) & 1;
  const bool nan = IsFloat(*k.f) && MpfrIsNanBits(*k.f, want.bits);
  t.counts[5] += nan;
  t.counts[6] += want.flags == 0 && !nan;
  if (Agrees(k, want, got)) return true;
  log.Add(Explain(k, want, got, seed, index));
  return false;
}

inline int ThreadCount() { return 2; }  // The CI machine has 2 cores.

// Runs body(index, log) for index in [0, n) on ThreadCount() workers (RunRanges: the calling
// thread is worker 0), contiguous chunks. body returns the number of cases it checked; the total
// is returned. Each worker's tally goes into `log`; the calling thread's tally from before the
// call is set aside meanwhile and put back, so that it still goes to the log it was counted for.
inline int64_t ParallelCheck(uint64_t n,
                             const std::function<int64_t(uint64_t, FailureLog&)>& body,
                             FailureLog& log) {
  const int threads = ThreadCount();
  std::atomic<int64_t> total{0};
  const Tally before = std::exchange(ThreadTally(), Tally{});
  RunRanges(static_cast<int64_t>(n), threads, [&](int64_t lo, int64_t hi) {
    int64_t local = 0;
    for (int64_t i = lo; i < hi; ++i) local += body(static_cast<uint64_t>(i), log);
    total += local;
    log.FlushTally();
  });
  ThreadTally() = before;
  return total.load();
}

inline void PrintCount(const std::string& what, int64_t cases, FailureLog& log) {
  std::cout << what << ": " << cases << " cases checked (expected results: "
            << log.TallyString() << ")\n";
}

// One sweep with a log of its own: body over [0, n) (ParallelCheck), its failures reported under
// `what` (FailureLog::Report), then its count printed under `label` (PrintCount).
inline void CheckAll(const char* what, const std::string& label, uint64_t n,
                     const std::function<int64_t(uint64_t, FailureLog&)>& body) {
  FailureLog log;
  const int64_t count = ParallelCheck(n, body, log);
  log.Report(what);
  PrintCount(label, count, log);
}

// FPCONFORM_SCALE (default 1) multiplies the random case counts; the `exhaustive` ctest
// entries run the same suites scaled up.
inline uint64_t Scaled(uint64_t n) {
  uint64_t scale = 1;
  if (const char* s = std::getenv("FPCONFORM_SCALE")) scale = std::strtoull(s, nullptr, 0);
  return n * (scale == 0 ? 1 : scale);
}

// The float formats of the table.
inline std::vector<const FormatSpec*> FloatFormats() {
  std::vector<const FormatSpec*> out;
  for (const FormatSpec& f : AllFormats()) {
    if (IsFloat(f)) out.push_back(&f);
  }
  return out;
}

inline std::vector<const FormatSpec*> IntegerFormats() {
  std::vector<const FormatSpec*> out;
  for (const FormatSpec& f : AllFormats()) {
    if (!IsFloat(f)) out.push_back(&f);
  }
  return out;
}

// The six deterministic rounding modes.
inline constexpr Rounding kDeterministicModes[] = {
    Rounding::kNearestEven, Rounding::kNearestAway, Rounding::kTowardZero,
    Rounding::kUpward,      Rounding::kDownward,    Rounding::kToOdd};

// The default environment but for rounding r.
inline OpEnv ModeEnv(Rounding r) {
  OpEnv env;
  env.rounding = r;
  return env;
}

// One fixed choice of the flags that a mode sweep crosses with the rounding modes; the rest of
// the environment is ModeEnv's.
struct EnvVariant {
  bool saturate = false;
  bool flush_to_zero = false;
  bool denormals_are_zero = false;
  Tininess tininess = Tininess::kAfterRounding;
};

// Checks case k (operands set; k.env is overwritten) in ModeEnv(r) with the flags of v, for each
// r of `modes` and, within each r, each v of `variants` in turn: CheckCase(k, seed, index, log)
// each. Returns the number of cases, modes.size() * variants.size().
inline int64_t CheckModeVariants(Case& k, std::span<const Rounding> modes,
                                 std::span<const EnvVariant> variants, uint64_t seed,
                                 uint64_t index, FailureLog& log) {
  for (Rounding r : modes) {
    for (const EnvVariant& v : variants) {
      k.env = ModeEnv(r);
      k.env.saturate = v.saturate;
      k.env.flush_to_zero = v.flush_to_zero;
      k.env.denormals_are_zero = v.denormals_are_zero;
      k.env.tininess = v.tininess;
      CheckCase(k, seed, index, log);
    }
  }
  return static_cast<int64_t>(modes.size() * variants.size());
}

// A random environment: every rounding mode (sr<k> with random k and r), sat, ftz, daz,
// tininess and NaN profile.
inline OpEnv RandomEnv(CaseRng& rng) {
  OpEnv env;
  const uint64_t m = rng.Below(7);
  env.rounding = static_cast<Rounding>(m);
  if (env.rounding == Rounding::kStochastic) {
    env.sr_bits = 1 + static_cast<int>(rng.Below(32));
    env.sr_random = rng.Next();
  }
  env.saturate = rng.OneIn(4);
  env.flush_to_zero = rng.OneIn(6);
  env.denormals_are_zero = rng.OneIn(6);
  env.tininess = rng.OneIn(3) ? Tininess::kBeforeRounding : Tininess::kAfterRounding;
  env.nan = static_cast<NanProfile>(rng.Below(4));
  return env;
}

// RandomEnv(rng) in stochastic rounding: then 1 to 32 random bits and r drawn from rng.
inline OpEnv RandomStochasticEnv(CaseRng& rng) {
  OpEnv env = RandomEnv(rng);
  env.rounding = Rounding::kStochastic;
  env.sr_bits = 1 + static_cast<int>(rng.Below(32));
  env.sr_random = rng.Next();
  return env;
}

// Stream tag of (format, op, phase) so that sweeps of different ops draw different cases.
inline uint64_t SweepTag(const FormatSpec& f, Op op, uint64_t phase) {
  uint64_t h = phase * 0x100 + static_cast<uint64_t>(op);
  for (char ch : f.name) h = SplitMix64At(h ^ static_cast<unsigned char>(ch), 0);
  return h;
}

// Boundary phase: the TestFloat-style operands of BoundaryOperands crossed with each other
// (pairs in the six deterministic modes plus one random environment; sqrt operands in every
// mode and variant; fma triples fully crossed when there are at most `max_triples`, else a
// sample, one random environment each). Returns the number of cases checked.
inline int64_t BoundarySweep(const FormatSpec& f, Op op, uint64_t seed, FailureLog& log,
                             uint64_t max_triples = 4'000'000) {
  const std::vector<uint64_t> b = BoundaryOperands(f, seed);
  const uint64_t n = b.size();
  const uint64_t tag = SweepTag(f, op, 1);
  if (op == Op::kSqrt) {
    return ParallelCheck(
        n,
        [&](uint64_t i, FailureLog& l) {
          Case k;
          k.f = &f;
          k.op = op;
          k.a = b[i];
          constexpr EnvVariant kVariants[] = {
              {},
              {.saturate = true},
              {.flush_to_zero = true},
              {.denormals_are_zero = true},
              {.flush_to_zero = true, .tininess = Tininess::kBeforeRounding}};
          int64_t count = CheckModeVariants(k, kDeterministicModes, kVariants, seed, i, l);
          CaseRng rng(seed ^ tag, i);
          for (int j = 0; j < 16; ++j) {
            k.env = RandomEnv(rng);
            CheckCase(k, seed, i, l);
            ++count;
          }
          return count;
        },
        log);
  }
  if (op != Op::kFma) {
    return ParallelCheck(
        n * n,
        [&](uint64_t i, FailureLog& l) {
          Case k;
          k.f = &f;
          k.op = op;
          k.a = b[i / n];
          k.b = b[i % n];
          int64_t count = 0;
          for (Rounding r : kDeterministicModes) {
            k.env = ModeEnv(r);
            CheckCase(k, seed, i, l);
            ++count;
          }
          CaseRng rng(seed ^ tag, i);
          k.env = RandomEnv(rng);
          CheckCase(k, seed, i, l);
          return count + 1;
        },
        log);
  }
  const bool full = n * n * n <= max_triples;
  const uint64_t total = full ? n * n * n : max_triples;
  return ParallelCheck(
      total,
      [&](uint64_t i, FailureLog& l) {
        CaseRng rng(seed ^ tag, i);
        Case k;
        k.f = &f;
        k.op = op;
        if (full) {
          k.a = b[i / (n * n)];
          k.b = b[(i / n) % n];
          k.c = b[i % n];
        } else {
          k.a = b[rng.Below(n)];
          k.b = b[rng.Below(n)];
          k.c = b[rng.Below(n)];
        }
        k.env = RandomEnv(rng);
        CheckCase(k, seed, i, l);
        return int64_t{1};
      },
      log);
}

// Random phase: n cases, case i a pure function of (seed, format, op, i): a RandomEnv and
// RandomOperands, with relations that reach the hard cases: add/sub operands near each other
// (cancellation), fma addends near -a*b, div dividends near b*q (near-exact quotients).
inline int64_t RandomSweep(const FormatSpec& f, Op op, uint64_t n, uint64_t seed,
                           FailureLog& log) {
  const std::vector<uint64_t> b = BoundaryOperands(f, seed);
  const uint64_t tag = SweepTag(f, op, 2);
  return ParallelCheck(
      n,
      [&](uint64_t i, FailureLog& l) {
        CaseRng rng(seed ^ tag, i);
        Case k;
        k.f = &f;
        k.op = op;
        k.env = RandomEnv(rng);
        k.a = RandomOperand(f, rng, b);
        k.b = RandomOperand(f, rng, b);
        k.c = RandomOperand(f, rng, b);
        switch (op) {
          case Op::kAdd:
          case Op::kSub:
            if (rng.OneIn(3)) k.b = Near(f, k.a, rng, op == Op::kAdd);
            break;
          case Op::kFma:
            if (rng.OneIn(3)) {
              OpEnv rne;
              k.c = Near(f, MpfrMul(f, k.a, k.b, rne).bits, rng, true);
            }
            break;
          case Op::kDiv:
            if (rng.OneIn(6)) {
              OpEnv rne;
              k.a = Near(f, MpfrMul(f, k.b, k.c, rne).bits, rng, rng.OneIn(2));
            }
            break;
          case Op::kSqrt:
            if (!rng.OneIn(4)) k.a &= ~(SignBit(f) << f.pad_bits);  // Mostly non-negative.
            break;
          default:
            break;
        }
        CheckCase(k, seed, i, l);
        return int64_t{1};
      },
      log);
}

// Both phases on (f, op), each with its own log, reported in turn: BoundarySweep (at most
// max_triples fma triples), then RandomSweep of Scaled(random_cases) cases; then both counts.
inline void CheckBoundaryAndRandom(const FormatSpec& f, Op op, uint64_t seed, uint64_t random_cases,
                                   uint64_t max_triples) {
  FailureLog boundary_log;
  const int64_t nb = BoundarySweep(f, op, seed, boundary_log, max_triples);
  boundary_log.Report("boundary phase");
  FailureLog random_log;
  const int64_t nr = RandomSweep(f, op, Scaled(random_cases), seed, random_log);
  random_log.Report("random phase");
  PrintCount(std::string(f.name) + " " + OpName(op) + " boundary", nb, boundary_log);
  PrintCount(std::string(f.name) + " " + OpName(op) + " random", nr, random_log);
}

// Converts every encoding of `from` (2^EncodingBits values) to every other float format and
// to the integer formats, in the six deterministic modes plus one stochastic rounding, with
// sat/ftz/daz/tininess drawn per (value, target) from the seed.
inline int64_t ConvertAllValues(const FormatSpec& from, uint64_t seed, FailureLog& log) {
  std::vector<const FormatSpec*> targets = FloatFormats();
  for (const FormatSpec* t : IntegerFormats()) targets.push_back(t);
  const uint64_t values = uint64_t{1} << EncodingBits(from);
  const uint64_t tag = SweepTag(from, Op::kConvert, 3);
  return ParallelCheck(
      values,
      [&](uint64_t v, FailureLog& l) {
        int64_t count = 0;
        Case k;
        k.op = Op::kConvert;
        k.from = &from;
        k.a = v << from.pad_bits;
        for (size_t t = 0; t < targets.size(); ++t) {
          if (targets[t] == &from) continue;
          k.f = targets[t];
          CaseRng rng(seed ^ tag, v * 64 + t);
          for (Rounding r : kDeterministicModes) {
            k.env = ModeEnv(r);
            k.env.saturate = rng.OneIn(2);
            k.env.flush_to_zero = rng.OneIn(4);
            k.env.denormals_are_zero = rng.OneIn(4);
            if (rng.OneIn(2)) k.env.tininess = Tininess::kBeforeRounding;
            CheckCase(k, seed, v, l);
            ++count;
          }
          k.env = RandomStochasticEnv(rng);
          CheckCase(k, seed, v, l);
          ++count;
        }
        return count;
      },
      log);
}

}  // namespace fpconform::conformance

#endif  // FPCONFORM_CONFORMANCE_ORACLE_CHECK_H_
