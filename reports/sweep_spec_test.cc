// Sweep files (sweep_spec.cc): strict reading, every error "file:line: field: problem", and the
// checks against the model catalog that run before a sweep does. Quick: nothing here runs a
// sweep.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "accumulation/model_catalog.h"
#include "base/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "reports/sweep.h"
#include "reports/sweep_test_support.h"

namespace fpconform::reports {
namespace {

// Line numbers below count from the first line of this text (line 1: seed).
constexpr const char* kSpec = R"toml(seed = 7
samples = 12
min_samples = 6
factor = 2.0
ops = ["matmul", "sum", "quantize"]
ks = [64, 1024]
distributions = ["normal", "uniform_01"]
quantize_formats = ["float8_e4m3fn", "float8_e4m3", "int8"]

[[dtype]]
name = "bfloat16"
matmul = ["nvidia-h100-bf16", "trainium2-bf16"]

[[dtype]]
name = "float32"
matmul = ["cuda-f32-fma"]
sum = ["numpy-sum-f32"]

[[dtype]]
name = "int8"
integer = true

[[cross]]
name = "pair"
dtype = "bfloat16"
a = "nvidia-h100-bf16"
b = ["trainium2-bf16"]

[[cross]]
name = "fp8 formats"
dtype = "quantize"
a = "float8_e4m3fn"
b = ["float8_e4m3"]
)toml";

// A replacement applied to kSpec, and the whole error it must give.
struct Row {
  const char* from;
  const char* to;
  const char* error;
};

void ExpectErrors(std::span<const Row> rows) {
  for (const Row& r : rows) {
    SCOPED_TRACE(r.to);
    EXPECT_EQ(ParseError(Replace(kSpec, r.from, r.to)), r.error);
  }
}

TEST(SweepSpecTest, TheBaseSpecParses) {
  absl::StatusOr<SweepSpec> s = ParseSweepSpec(kSpec, "s.toml");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->Where("dtype/float32/sum/numpy-sum-f32"), "s.toml:17: dtype[1].sum");
  EXPECT_EQ(s->Where("cross/pair/b/trainium2-bf16"), "s.toml:27: cross[0].b");
  EXPECT_EQ(s->Where("no/such/key"), "s.toml");
}

// An integer dtype computes int8 x int8 -> int32 exactly: a platform list is an error (a sum
// list used to abort the sweep in the exact accumulator: "AddDot: a.size() 16 != b.size() 0").
TEST(SweepSpecTest, IntegerDtypeTakesNoPlatformList) {
  const Row rows[] = {
      {"integer = true", "integer = true\nsum = [\"cpu-f32-seq\"]",
       "s.toml:22: dtype[2].sum: an integer dtype (integer = true) takes no platform list: "
       "its matmul is int8 x int8 -> int32, exact, and it has no sum"},
      {"integer = true", "integer = true\nmatmul = [\"x\"]",
       "s.toml:22: dtype[2].matmul: an integer dtype (integer = true) takes no platform "
       "list: its matmul is int8 x int8 -> int32, exact"},
      {"dtype = \"bfloat16\"", "dtype = \"int8\"",
       "s.toml:25: cross[0].dtype: 'int8' is an integer dtype (exact, no platforms): there "
       "is nothing to compare"},
  };
  ExpectErrors(rows);
}

// Types are as strict as in model files: no true or 7.0 for an integer, no true for a number.
TEST(SweepSpecTest, TypesAreStrict) {
  const Row rows[] = {
      {"seed = 7", "seed = true",
       "s.toml:1: seed: must be an integer in 0..9223372036854775807, got a boolean"},
      {"samples = 12", "samples = 7.0",
       "s.toml:2: samples: must be an integer in 1..1000000, got a float"},
      {"min_samples = 6", "min_samples = \"6\"",
       "s.toml:3: min_samples: must be an integer in 1..1000000, got a string"},
      {"factor = 2.0", "factor = true",
       "s.toml:4: factor: must be a number in 1..1000, got a "
       "boolean"},
      {"ks = [64, 1024]", "ks = [64, 1024.0]", "s.toml:6: ks: must be integers in 1..16777216"},
      {"ks = [64, 1024]", "ks = [true]", "s.toml:6: ks: must be integers in 1..16777216"},
      {"integer = true", "integer = 7",
       "s.toml:21: dtype[2].integer: must be true or false, got an integer"},
      {"integer = true", "integer = \"yes\"",
       "s.toml:21: dtype[2].integer: must be true or false, got a string"},
      {"name = \"int8\"", "name = 8",
       "s.toml:20: dtype[2].name: must be a string, got an "
       "integer"},
      {"a = \"nvidia-h100-bf16\"", "a = [\"nvidia-h100-bf16\"]",
       "s.toml:26: cross[0].a: must be a string, got an array"},
      {"ops = [\"matmul\", \"sum\", \"quantize\"]", "ops = [\"matmul\", 1]",
       "s.toml:5: ops: must be an array of strings, got an integer"},
  };
  ExpectErrors(rows);
  // An integer is a number.
  EXPECT_EQ(ParseError(Replace(kSpec, "factor = 2.0", "factor = 3")), "(parsed)");
}

// A repeated entry would make repeated rows (or be silently ignored): every list is a set.
TEST(SweepSpecTest, DuplicateEntriesAreErrors) {
  const Row rows[] = {
      {"ops = [\"matmul\", \"sum\", \"quantize\"]", "ops = [\"matmul\", \"sum\", \"matmul\"]",
       "s.toml:5: ops: 'matmul' listed twice"},
      {"ks = [64, 1024]", "ks = [64, 1024, 64]", "s.toml:6: ks: 64 listed twice"},
      {"distributions = [\"normal\", \"uniform_01\"]", "distributions = [\"normal\", \"normal\"]",
       "s.toml:7: distributions: 'normal' listed twice"},
      {"quantize_formats = [\"float8_e4m3fn\", \"float8_e4m3\", \"int8\"]",
       "quantize_formats = [\"int8\", \"int8\"]",
       "s.toml:8: quantize_formats: 'int8' listed twice"},
      {"matmul = [\"nvidia-h100-bf16\", \"trainium2-bf16\"]",
       "matmul = [\"nvidia-h100-bf16\",\n  \"nvidia-h100-bf16\"]",
       "s.toml:13: dtype[0].matmul: 'nvidia-h100-bf16' listed twice"},
      {"sum = [\"numpy-sum-f32\"]", "sum = [\"numpy-sum-f32\", \"numpy-sum-f32\"]",
       "s.toml:17: dtype[1].sum: 'numpy-sum-f32' listed twice"},
      {"b = [\"trainium2-bf16\"]", "b = [\"trainium2-bf16\", \"trainium2-bf16\"]",
       "s.toml:27: cross[0].b: 'trainium2-bf16' listed twice"},
      {"b = [\"trainium2-bf16\"]", "b = [\"nvidia-h100-bf16\"]",
       "s.toml:27: cross[0].b: 'nvidia-h100-bf16' is also a: a pair compares two different "
       "platforms"},
      {"name = \"fp8 formats\"", "name = \"pair\"", "s.toml:30: cross[1].name: duplicate 'pair'"},
      {"name = \"int8\"", "name = \"float32\"", "s.toml:20: dtype[2].name: duplicate 'float32'"},
  };
  ExpectErrors(rows);
}

TEST(SweepSpecTest, QuantizePairsCompareTwoListedFormats) {
  const Row rows[] = {
      {"b = [\"float8_e4m3\"]", "b = [\"float8_e4m3\", \"bogus\"]",
       "s.toml:33: cross[1].b: a quantize pair compares one format with one other: b must "
       "have exactly 1 entry, got 2"},
      {"b = [\"float8_e4m3\"]", "b = [\"float8_e5m2\"]",
       "s.toml:33: cross[1].b: 'float8_e5m2' is not in quantize_formats (valid: "
       "float8_e4m3fn, float8_e4m3, int8)"},
      {"a = \"float8_e4m3fn\"", "a = \"x\"",
       "s.toml:32: cross[1].a: 'x' is not in quantize_formats (valid: float8_e4m3fn, "
       "float8_e4m3, int8)"},
  };
  ExpectErrors(rows);
}

TEST(SweepSpecTest, CrossPairOfADtypeWithoutMatmulPlatformsIsAnError) {
  EXPECT_EQ(ParseError(Replace(kSpec, "[[cross]]\nname = \"pair\"\ndtype = \"bfloat16\"",
                               "[[cross]]\nname = \"pair\"\ndtype = \"f32sum\"")),
            "s.toml:25: cross[0].dtype: 'f32sum' is not a [[dtype]] name (nor 'quantize')");
  const std::string sum_only =
      Replace(kSpec, "[[dtype]]\nname = \"int8\"",
              "[[dtype]]\nname = \"s\"\nsum = [\"numpy-sum-f32\"]\n\n[[dtype]]\nname = \"int8\"");
  EXPECT_EQ(ParseError(Replace(sum_only, "dtype = \"bfloat16\"", "dtype = \"s\"")),
            "s.toml:29: cross[0].dtype: dtype 's' has no matmul platforms, so this pair would "
            "never run (cross pairs compare matmul outputs)");
}

// A file whose tables could add no rows is refused rather than giving an empty report.
TEST(SweepSpecTest, NothingToRunIsAnError) {
  EXPECT_EQ(ParseError(Replace(kSpec, "ops = [\"matmul\", \"sum\", \"quantize\"]", "ops = []")),
            "s.toml:5: ops: must name at least one op");
  EXPECT_EQ(ParseError(Replace(kSpec, "distributions = [\"normal\", \"uniform_01\"]",
                               "distributions = []")),
            "s.toml:7: distributions: must name at least one distribution");
  EXPECT_EQ(ParseError(Replace(kSpec, "ks = [64, 1024]", "ks = []")),
            "s.toml:6: ks: must be a non-empty array of integers K >= 1");
  EXPECT_EQ(ParseError(Replace(kSpec, "ks = [64, 1024]", "ks = 64")),
            "s.toml:6: ks: must be a non-empty array of integers K >= 1");
  EXPECT_EQ(ParseError(Replace(kSpec, "name = \"int8\"\ninteger = true", "name = \"int8\"")),
            "s.toml:19: dtype[2]: dtype 'int8' has no matmul or sum platforms (and is not "
            "integer = true): it would add no rows");
  EXPECT_EQ(ParseError(Replace(kSpec, "sum = [\"numpy-sum-f32\"]\n", "")),
            "s.toml:5: ops: 'sum' is listed, but no [[dtype]] has sum platforms");
  std::string no_q =
      Replace(kSpec, "quantize_formats = [\"float8_e4m3fn\", \"float8_e4m3\", \"int8\"]\n", "");
  no_q = no_q.substr(0, no_q.find("[[cross]]\nname = \"fp8 formats\""));
  EXPECT_EQ(ParseError(no_q), "s.toml:5: ops: 'quantize' needs quantize_formats");
}

TEST(SweepSpecTest, MessagesEscapeUserText) {
  EXPECT_EQ(ParseError(Replace(kSpec, "\"uniform_01\"", "\"\\u001b[2J\"")),
            "s.toml:7: distributions: unknown distribution '\\x1b[2J' (valid: normal, "
            "uniform_pm1, uniform_01, loguniform, normal_sqrtk)");
  EXPECT_EQ(ParseError("\"\\u0007\" = 1\n" + std::string(kSpec)).substr(0, 24),
            "s.toml:1: \\x07: unknown ");
}

// ---- Checks against the model catalog (CheckSweepModels; RunSweep calls it first). ----

std::string ModelError(const std::string& text) {
  absl::StatusOr<SweepSpec> s = ParseSweepSpec(text, "s.toml");
  if (!s.ok()) return "parse: " + std::string(s.status().message());
  ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  absl::Status st = CheckSweepModels(*s, catalog);
  return st.ok() ? "(ok)" : std::string(st.message());
}

TEST(SweepSpecTest, ModelsAreCheckedAgainstTheirListAndDtype) {
  EXPECT_EQ(ModelError(kSpec), "(ok)");
  // A sum-only model under matmul, a matmul-only model under sum.
  EXPECT_EQ(ModelError(Replace(kSpec, "matmul = [\"cuda-f32-fma\"]",
                               "matmul = [\"cuda-f32-fma\", \"numpy-sum-f32\"]")),
            "s.toml:16: dtype[1].matmul: 'numpy-sum-f32': does not define matmul (its "
            "operations), so it cannot be a matmul platform");
  EXPECT_EQ(ModelError(Replace(kSpec, "sum = [\"numpy-sum-f32\"]",
                               "sum = [\"numpy-sum-f32\",\n  \"cuda-f32-splitk4\"]")),
            "s.toml:18: dtype[1].sum: 'cuda-f32-splitk4': does not define sum (its "
            "operations), so it cannot be a sum platform");
  // Unknown and envelope platforms name the sweep file, line and field.
  const std::string unknown = ModelError(
      Replace(kSpec, "\"trainium2-bf16\"]\n\n[[dtype]]", "\"trainium9-bf16\"]\n\n[[dtype]]"));
  EXPECT_EQ(unknown.rfind("s.toml:12: dtype[0].matmul: 'trainium9-bf16': unknown model "
                          "'trainium9-bf16' in ",
                          0),
            0u)
      << unknown;
  EXPECT_EQ(ModelError(Replace(kSpec, "\"trainium2-bf16\"]\n\n[[dtype]]",
                               "\"trainium2-bf16-envelope\"]\n\n[[dtype]]")),
            "s.toml:12: dtype[0].matmul: 'trainium2-bf16-envelope': is an envelope; list its "
            "member models here (envelopes may be the b side of a [[cross]] pair)");
  // Cross pairs: models of another dtype, sum-only models, unknown names.
  EXPECT_EQ(ModelError(Replace(kSpec, "b = [\"trainium2-bf16\"]", "b = [\"cpu-f32-seq\"]")),
            "s.toml:27: cross[0].b: 'cpu-f32-seq': takes float32 inputs, but the matmul "
            "platforms of dtype 'bfloat16' take bfloat16 (a model of another dtype?)");
  EXPECT_EQ(ModelError(Replace(kSpec, "a = \"nvidia-h100-bf16\"", "a = \"nvidia-h100-tf32\"")),
            "s.toml:26: cross[0].a: 'nvidia-h100-tf32': takes float32 converted to tfloat32 "
            "inputs, but the matmul platforms of dtype 'bfloat16' take bfloat16 (a model of "
            "another dtype?)");
  EXPECT_EQ(ModelError(Replace(kSpec, "a = \"nvidia-h100-bf16\"", "a = \"numpy-sum-f32\"")),
            "s.toml:26: cross[0].a: 'numpy-sum-f32': does not define matmul (its operations): "
            "cross pairs compare matmul outputs");
  const std::string cross_unknown =
      ModelError(Replace(kSpec, "b = [\"trainium2-bf16\"]", "b = [\"nope\"]"));
  EXPECT_EQ(cross_unknown.rfind("s.toml:27: cross[0].b: 'nope': unknown model 'nope' in ", 0), 0u)
      << cross_unknown;
  EXPECT_EQ(
      ModelError(Replace(kSpec, "a = \"nvidia-h100-bf16\"", "a = \"trainium2-bf16-envelope\"")),
      "s.toml:26: cross[0].a: 'trainium2-bf16-envelope': is an envelope; a is one "
      "reference platform (an envelope goes on the b side)");
  // An envelope of the right dtype is fine on the b side.
  EXPECT_EQ(
      ModelError(Replace(kSpec, "b = [\"trainium2-bf16\"]", "b = [\"trainium2-bf16-envelope\"]")),
      "(ok)");
}

TEST(SweepSpecTest, StandardSweepPassesTheModelChecks) {
  absl::StatusOr<SweepSpec> s =
      LoadSweepSpec(std::string(FPCONFORM_REPORTS_SOURCE_DIR) + "/standard_sweep.toml");
  ASSERT_TRUE(s.ok()) << s.status();
  ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  EXPECT_TRUE(CheckSweepModels(*s, catalog).ok()) << CheckSweepModels(*s, catalog);
}

// ---- Memory: estimated before any unit runs (sweep.h, "Memory"). ----

TEST(SweepSpecTest, MemoryAboveTheBudgetIsRefusedBeforeAnyWork) {
  absl::StatusOr<SweepSpec> spec = ParseSweepSpec(kSpec, "s.toml");
  ASSERT_TRUE(spec.ok());
  SweepFilter f;
  f.ks = {kMaxSweepK};
  f.ops = {"matmul"};
  f.dtypes = {"bfloat16"};
  absl::StatusOr<SweepSpec> big = ApplyFilter(*spec, f);
  ASSERT_TRUE(big.ok()) << big.status();
  SweepOptions o;
  o.models_dir = FPCONFORM_MODELS_SOURCE_DIR;
  o.threads = 16;
  int used = -1;
  o.threads_used = &used;
  absl::StatusOr<Report> r = RunSweep(*big, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  // 2 GiB per thread at K = 2^24 (one input-format pair: 64 * 2 bytes per term), 12 threads
  // (samples = 12 caps them), plus the observations.
  EXPECT_EQ(
      std::string(r.status().message())
          .rfind("matmul bfloat16 normal K=16777216 needs about 24577 MiB of memory (2048 MiB per "
                 "worker thread at K = 16777216, 12 threads), more than the 8192 MiB a sweep may "
                 "use",
                 0),
      0u)
      << r.status();
  EXPECT_EQ(used, -1);  // Nothing ran.
  // A quantize unit too large for one thread: refused even when threads may be lowered.
  f = {};
  f.ops = {"quantize"};
  f.samples = 1000000;
  absl::StatusOr<SweepSpec> q = ApplyFilter(*spec, f);
  ASSERT_TRUE(q.ok()) << q.status();
  o.fit_threads = true;
  r = RunSweep(*q, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("quantize normal needs about "), std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find("(1000000 samples x 4096 elements x 3 formats), more than "
                                      "the 8192 MiB a sweep may use"),
            std::string::npos)
      << r.status();
}

// ---- Command-line filters. ----

TEST(SweepSpecTest, FiltersRejectRepeatsAndKeepFullSeeds) {
  absl::StatusOr<SweepSpec> spec = ParseSweepSpec(kSpec, "s.toml");
  ASSERT_TRUE(spec.ok());
  SweepFilter f;
  f.ks = {64, 128, 64};
  EXPECT_EQ(ApplyFilter(*spec, f).status().message(), "K 64 given twice");
  f = {};
  f.ks = {int64_t{1} << 25};
  EXPECT_EQ(ApplyFilter(*spec, f).status().message(),
            "K 33554432 is not an integer in 1..16777216");
  f = {};
  f.distributions = {"normal", "normal"};
  EXPECT_EQ(ApplyFilter(*spec, f).status().message(), "distribution 'normal' given twice");
  f = {};
  f.platforms = {
      "a\x1b"
      "b"};
  EXPECT_EQ(std::string(ApplyFilter(*spec, f).status().message()).substr(0, 27),
            "unknown platform 'a\\x1bb' (");
  f = {};
  absl::StatusOr<SweepSpec> same = ApplyFilter(*spec, f);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->seed, 7u);
  f.seed = UINT64_MAX;  // The whole uint64 range: never saturated or wrapped.
  absl::StatusOr<SweepSpec> seeded = ApplyFilter(*spec, f);
  ASSERT_TRUE(seeded.ok());
  EXPECT_EQ(seeded->seed, UINT64_MAX);
  f.seed = 0;
  EXPECT_EQ(ApplyFilter(*spec, f)->seed, 0u);
}

// ---- Sweep files that are not regular files, or too large. ----

TEST(SweepSpecTest, LoadRefusesNonRegularAndHugeFiles) {
  const TempDir tmp("sweep_spec_test");
  const std::string d = tmp.path();
  ASSERT_EQ(mkfifo((d + "/fifo.toml").c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/zero", d + "/zero.toml");
  std::ofstream(d + "/huge.toml") << "";
  std::filesystem::resize_file(d + "/huge.toml", uint64_t{1} << 30);
  for (const std::string name : {"", "/fifo.toml", "/zero.toml"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<SweepSpec> s = LoadSweepSpec(d + name);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find(d + name + ": not a regular file ("), std::string::npos)
        << s.status();
  }
  absl::StatusOr<SweepSpec> huge = LoadSweepSpec(d + "/huge.toml");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("1073741824 bytes, more than the 16777216-byte limit "
                                         "for a sweep file"),
            std::string::npos)
      << huge.status();
}

}  // namespace
}  // namespace fpconform::reports
