// Every accumulation model stays within its own analytical error bound (accumulation/evaluate.h,
// EvalResult::bound) against the exact oracle (oracles/exact_sum.h) on random dot products and
// sums: for every preset of accumulation/models, FPCONFORM_MODEL_BOUND_CASES (default 100000)
// seeded dots, and as many sums for presets whose `operations` include "sum". ctest runs it as
// model_bound_test (label oracle, 10^4 per preset and operation, ~16 s on the shared 2-core
// machine) and model_bound_full_test (label exhaustive, 10^5: ~65 s CPU, ~4 min wall there).
// Presets run on two std::threads (one job per preset and operation); results do not depend on
// the thread count.
//
// Inputs: doubles drawn from five distributions (below), converted RNE (saturating) into the
// model's input formats by formats' Convert, so every input is representable; presets with
// inputs.convert_to get float32 bits (their inputs.a) and convert them themselves; the bound
// covers that conversion. c is in FinalAccumulatorFormat() (+0 in a quarter of the cases).
// Lengths: half in 1..32, a third in 33..128, the rest in 129..300; 3 in every 1000 cases are
// 1024..4096 long. Case i of model m draws from PinnedRng(DeriveSeed(Seed(), {m, i, op})), m the
// index of the file in the sorted directory listing, so a failure is replayed from (m, i) and
// the seed (FPCONFORM_SEED when set, else 20261129).
//
// The check: |result - exact| <= bound, computed exactly: the exact sum minus the result, rounded
// away from zero to float64 (never smaller than the true difference). Results that are Inf or
// NaN are overflows, which the bound excludes by contract; they are counted and printed, and the
// test requires them to be rare (< 1%), so that the check is not vacuous.
//
// Envelope files (kind = "envelope": sets of models) are skipped and listed, and every preset
// tested is printed.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "accumulation/evaluate.h"
#include "accumulation/model.h"
#include "accumulation/model_catalog.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/format_spec.h"
#include "formats/ops.h"
#include "gtest/gtest.h"
#include "oracles/exact_sum.h"

namespace fpconform {
namespace {

// The seed every case derives from: FPCONFORM_SEED when set, else 20261129.
uint64_t Seed() {
  static const uint64_t seed = TestSeed(20261129, "model_bound_test");
  return seed;
}
constexpr int kMaxPrintedFailures = 4;

enum class Dist : int { kNormal, kUniform01, kUniformSym, kLogUniform, kCancel, kCount };
constexpr const char* kDistNames[] = {"normal", "uniform(0,1)", "uniform(-1,1)", "log-uniform",
                                      "cancellation"};

int CasesPerModel() {
  if (const char* s = std::getenv("FPCONFORM_MODEL_BOUND_CASES")) {
    const int n = std::atoi(s);
    if (n > 0) return n;
  }
  return 100000;
}

// Double -> format bits, RNE; saturating so that no input is Inf or NaN.
uint64_t ToFormat(const FormatSpec& f, double x) {
  OpEnv env;
  env.saturate = true;
  return Convert(Float64(), f, std::bit_cast<uint64_t>(x), env).bits;
}

// Exponent range of a format's non-zero finite values: [Emin - fraction_bits, Emax].
int MinExp(const FormatSpec& f) { return Emin(f) - f.fraction_bits; }

// The length of case i.
int DrawLength(PinnedRng& rng, int case_index) {
  if (case_index % 1000 < 3) return 1024 + static_cast<int>(rng.Below(4096 - 1024 + 1));
  const uint64_t r = rng.Below(100);
  if (r < 50) return 1 + static_cast<int>(rng.Below(32));
  if (r < 85) return 33 + static_cast<int>(rng.Below(96));
  return 129 + static_cast<int>(rng.Below(172));
}

// A random exponent in [lo, hi] (lo <= hi).
int DrawInt(PinnedRng& rng, int lo, int hi) {
  return lo + static_cast<int>(rng.Below(static_cast<uint64_t>(hi - lo + 1)));
}

double Signed(PinnedRng& rng, double x) { return (rng.Next() & 1) ? -x : x; }

struct Case {
  std::vector<uint64_t> a, b;  // b empty for sums.
  uint64_t c = 0;
  Dist dist = Dist::kNormal;
};

// Draws one case. For dots, each term's exponents are chosen so that products stay inside the
// accumulator's range with log2(4096) + 4 bits of headroom (the log-uniform distribution spans
// each input format's whole range, subnormals included, and picks the partner's exponent to keep
// the product representable-ish; products may underflow, which the bound covers).
Case DrawCase(const Model& m, bool is_sum, PinnedRng& rng, int case_index) {
  const FormatSpec& fa = *m.inputs.a;
  const FormatSpec& fb = m.inputs.b != nullptr ? *m.inputs.b : fa;
  const FormatSpec& facc = m.FinalAccumulatorFormat();
  const int n = DrawLength(rng, case_index);
  Case k;
  k.dist = static_cast<Dist>(rng.Below(static_cast<uint64_t>(Dist::kCount)));
  k.a.resize(n);
  if (!is_sum) k.b.resize(n);
  // Largest product/term exponent allowed: the accumulator's (and the output's) Emax minus
  // headroom, and within what the input formats can form.
  const int acc_emax = std::min(Emax(facc), Emax(*m.output.format)) - 16;
  const int lo_a = MinExp(fa), hi_a = Emax(fa);
  const int lo_b = MinExp(fb), hi_b = Emax(fb);
  // Scale for the non-log distributions: inputs of magnitude ~1 fit every table format.
  auto draw_value = [&](int lo, int hi) -> double {
    switch (k.dist) {
      case Dist::kNormal: return rng.Normal();
      case Dist::kUniform01: return rng.Uniform01();
      case Dist::kUniformSym: return rng.Uniform(-1.0, 1.0);
      case Dist::kLogUniform: return rng.LogUniform(lo, hi);
      case Dist::kCancel: return rng.Normal();
      default: return 0;
    }
  };
  auto draw_pair = [&](int i) {
    if (is_sum) {
      const int hi = std::min(hi_a, acc_emax);
      k.a[i] = ToFormat(fa, draw_value(std::max(lo_a, MinExp(facc) - 8), hi));
      return;
    }
    if (k.dist == Dist::kLogUniform) {
      // One operand over its whole range, the other chosen so that the product's exponent is
      // uniform over the accumulator's range (clamped to what the partner can reach).
      const bool a_first = rng.Next() & 1;
      const int target = DrawInt(rng, MinExp(facc) - 4, acc_emax);
      if (a_first) {
        const int ea = DrawInt(rng, lo_a, hi_a);
        const int eb = std::clamp(target - ea, lo_b, hi_b);
        k.a[i] = ToFormat(fa, rng.LogUniform(ea, ea));
        k.b[i] = ToFormat(fb, rng.LogUniform(eb, eb));
      } else {
        const int eb = DrawInt(rng, lo_b, hi_b);
        const int ea = std::clamp(target - eb, lo_a, hi_a);
        k.a[i] = ToFormat(fa, rng.LogUniform(ea, ea));
        k.b[i] = ToFormat(fb, rng.LogUniform(eb, eb));
      }
      return;
    }
    k.a[i] = ToFormat(fa, draw_value(lo_a, hi_a));
    k.b[i] = ToFormat(fb, draw_value(lo_b, hi_b));
  };
  if (k.dist == Dist::kCancel) {
    // Pairs (x, -x) at random positions, plus a small residue: about one term in eight is a
    // term scaled by 2^-12..2^-24 that is not cancelled.
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    for (int i = n - 1; i > 0; --i) std::swap(order[i], order[rng.Below(i + 1)]);
    int i = 0;
    for (; i + 1 < n; i += 2) {
      if (rng.Below(8) == 0) break;
      const int p = order[i], q = order[i + 1];
      draw_pair(p);
      k.a[q] = k.a[p] ^ SignBit(fa);  // -a: exact in every signed format.
      if (!is_sum) k.b[q] = k.b[p];
    }
    for (; i < n; ++i) {
      const int p = order[i];
      const double scale = std::ldexp(1.0, -DrawInt(rng, 12, 24));
      k.a[p] = ToFormat(fa, rng.Normal() * scale);
      if (!is_sum) k.b[p] = ToFormat(fb, rng.Normal());
    }
  } else {
    for (int i = 0; i < n; ++i) draw_pair(i);
  }
  if (rng.Below(4) != 0) {
    double c;
    if (k.dist == Dist::kLogUniform) {
      c = rng.LogUniform(MinExp(facc), acc_emax);
    } else if (k.dist == Dist::kUniform01) {
      c = rng.Uniform01() * 4;
    } else {
      c = Signed(rng, rng.Uniform01() * 4);
    }
    k.c = ToFormat(facc, c);
    // A reduced-precision accumulator (Hopper/Ada FP8: 13 fraction bits) holds only values with
    // the low bits zero: c is a value of the accumulator, so clear them (truncation of the
    // magnitude keeps it a valid float32 value of the same sign).
    const int drop = facc.fraction_bits - m.FinalAccumulatorFractionBits();
    if (drop > 0) k.c &= ~((uint64_t{1} << drop) - 1);
  }
  return k;
}

std::string Hex(std::span<const uint64_t> v) {
  std::vector<std::string> parts;
  parts.reserve(v.size());
  for (uint64_t x : v) parts.push_back(absl::StrCat("0x", absl::Hex(x)));
  return absl::StrJoin(parts, ",");
}

struct ModelReport {
  std::string name;
  int64_t cases = 0, terms = 0, overflows = 0, failures = 0;
  int64_t per_dist[static_cast<int>(Dist::kCount)] = {};
  double worst_ratio = 0;  // max |err| / bound over the finite cases with bound > 0.
  std::vector<std::string> messages;
};

// Runs `cases` cases of one operation on one model.
void RunModel(const Model& m, uint64_t model_index, bool is_sum, int cases, ModelReport& rep) {
  const FormatSpec& fa = *m.inputs.a;
  const FormatSpec& fb = m.inputs.b != nullptr ? *m.inputs.b : fa;
  const FormatSpec& facc = m.FinalAccumulatorFormat();
  const FormatSpec& fout = *m.output.format;
  for (int i = 0; i < cases; ++i) {
    const uint64_t seed = DeriveSeed(Seed(), {model_index, static_cast<uint64_t>(i), is_sum});
    PinnedRng rng(seed);
    const Case k = DrawCase(m, is_sum, rng, i);
    EvalOptions opt;
    opt.seed = seed;
    absl::StatusOr<EvalResult> r = is_sum ? EvaluateSum(m, k.a, k.c, opt)
                                          : EvaluateDot(m, k.a, k.b, k.c, opt);
    ++rep.cases;
    rep.terms += static_cast<int64_t>(k.a.size());
    ++rep.per_dist[static_cast<int>(k.dist)];
    auto describe = [&] {
      return absl::StrCat(m.name, is_sum ? " sum" : " dot", " seed=0x", absl::Hex(seed),
                          " (seed ", Seed(), ", model index ", model_index, ", case ", i,
                          ") dist=", kDistNames[static_cast<int>(k.dist)], " n=", k.a.size(),
                          "\n  c=0x", absl::Hex(k.c), "\n  a=", Hex(k.a),
                          is_sum ? "" : absl::StrCat("\n  b=", Hex(k.b)));
    };
    if (!r.ok()) {
      ++rep.failures;
      if (static_cast<int>(rep.messages.size()) < kMaxPrintedFailures) {
        rep.messages.push_back(absl::StrCat("evaluation error ", r.status().ToString(), ": ",
                                            describe()));
      }
      continue;
    }
    const FloatClass cls = Classify(fout, r->bits);
    if (cls == FloatClass::kQuietNan || cls == FloatClass::kSignalingNan ||
        cls == FloatClass::kPositiveInfinity || cls == FloatClass::kNegativeInfinity) {
      ++rep.overflows;
      continue;
    }
    ExactAccumulator exact =
        is_sum ? ExactSum(fa, k.a, FormatValue{&facc, k.c})
               : ExactDot(fa, k.a, fb, k.b, FormatValue{&facc, k.c});
    exact.Add(fout, r->bits ^ SignBit(fout));  // exact - result.
    OpEnv away;
    away.rounding = exact.Sign() < 0 ? Rounding::kDownward : Rounding::kUpward;
    const double diff =
        std::fabs(std::bit_cast<double>(exact.Round(Float64(), away).bits));
    if (r->bound > 0) rep.worst_ratio = std::max(rep.worst_ratio, diff / r->bound);
    if (!(diff <= r->bound)) {
      ++rep.failures;
      if (static_cast<int>(rep.messages.size()) < kMaxPrintedFailures) {
        rep.messages.push_back(absl::StrCat("bound exceeded: |result - exact| >= ", diff,
                                            " > bound ", r->bound, " result=0x",
                                            absl::Hex(r->bits), " ", describe()));
      }
    }
  }
}

// True for a file that says it is an envelope in either spelling the schema has had: top-level
// `kind = "envelope"` or `envelope = [...]` (so a file in the middle of a syntax change is
// skipped here and reported by the catalog's own tests instead).
bool DeclaresEnvelope(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line) && (line.empty() || line[0] != '[')) {
    if (line.rfind("envelope", 0) == 0 || line.rfind("kind = \"envelope\"", 0) == 0) return true;
  }
  return false;
}

TEST(ModelBound, EveryPresetWithinItsBound) {
  ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  absl::StatusOr<std::vector<ModelFile>> files = catalog.LoadAll();
  ASSERT_TRUE(files.ok()) << files.status();
  struct Job {
    const Model* model;
    uint64_t index;
    bool is_sum;
  };
  std::vector<Job> jobs;
  std::vector<std::string> tested, skipped;
  for (size_t i = 0; i < files->size(); ++i) {
    const ModelFile& f = (*files)[i];
    if (f.is_envelope || DeclaresEnvelope(f.path)) {  // A set of models, not one model.
      skipped.push_back(f.name);
      continue;
    }
    if (!f.model.ok()) {
      ADD_FAILURE() << f.path << ": " << f.model.status();
      continue;
    }
    tested.push_back(f.name);
    if (f.model->op_dot) jobs.push_back({&*f.model, i, false});
    if (f.model->op_sum) jobs.push_back({&*f.model, i, true});
  }
  ASSERT_GE(tested.size(), 28u) << "expected at least the 28 presets of 2026-11-29";
  const int cases = CasesPerModel();
  std::vector<ModelReport> reports(jobs.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t j; (j = next.fetch_add(1)) < jobs.size();) {
      reports[j].name = absl::StrCat(jobs[j].model->name, jobs[j].is_sum ? " sum" : " dot");
      RunModel(*jobs[j].model, jobs[j].index, jobs[j].is_sum, cases, reports[j]);
    }
  };
  std::thread t1(worker), t2(worker);
  t1.join();
  t2.join();

  std::printf("presets tested (%zu): %s\n", tested.size(), absl::StrJoin(tested, " ").c_str());
  if (!skipped.empty()) {
    std::printf("skipped (not models): %s\n", absl::StrJoin(skipped, " ").c_str());
  }
  int64_t total_terms = 0;
  for (const ModelReport& rep : reports) {
    total_terms += rep.terms;
    std::printf("%-36s cases %7" PRId64 " terms %9" PRId64 " overflow %5" PRId64
                " failures %" PRId64 " worst |err|/bound %.6g\n",
                rep.name.c_str(), rep.cases, rep.terms, rep.overflows, rep.failures,
                rep.worst_ratio);
    EXPECT_EQ(rep.failures, 0) << rep.name << ":\n" << absl::StrJoin(rep.messages, "\n");
    EXPECT_EQ(rep.cases, cases) << rep.name;
    // The bound excludes overflow; keep the check meaningful by making overflow rare.
    EXPECT_LT(rep.overflows * 100, rep.cases) << rep.name << ": too many overflowing cases";
    for (int d = 0; d < static_cast<int>(Dist::kCount); ++d) {
      EXPECT_GT(rep.per_dist[d], 0) << rep.name << ": no case of " << kDistNames[d];
    }
    // A bound that is never approached would not be tested: some case must use a fair part of it.
    EXPECT_GT(rep.worst_ratio, 1e-3) << rep.name << ": no case came near the bound";
  }
  std::printf("total terms %" PRId64 "\n", total_terms);
}

}  // namespace
}  // namespace fpconform
