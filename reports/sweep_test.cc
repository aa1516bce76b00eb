// The tolerance sweep end to end on a tiny sweep: invariants of every row, thread-count and
// shard independence (byte-identical JSON and CSV), the power of the recommended tolerances
// against the bfloat16-accumulation bug, sweep-file errors, and the standard sweep file; the
// composite kernels' rows ([composite]): their invariants, power, cross pairs and errors; and
// attention's rows ([attention]): the same, the test criteria's verdicts, shards and threads.
#include "reports/sweep.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "accumulation/model_catalog.h"
#include "base/testing/golden_file.h"
#include "composite/attention_model.h"
#include "gtest/gtest.h"
#include "reports/sweep_test_support.h"

namespace fpconform::reports {
namespace {

constexpr char kTiny[] = R"(
seed = 5
samples = 12
min_samples = 6
max_terms_per_row = 20000
factor = 2.0
lambda = 6.0
ops = ["matmul", "sum", "quantize"]
ks = [64, 1024, 2048]
distributions = ["normal", "uniform_01"]
quantize_formats = ["float8_e4m3fn", "float8_e4m3", "int8"]
quantize_elements = 256

[[dtype]]
name = "bfloat16"
matmul = ["nvidia-h100-bf16", "trainium2-bf16", "trainium3-bf16-psumbf16"]

[[dtype]]
name = "float8_e4m3"
matmul = ["nvidia-h100-fp8e4m3", "trainium2-fp8e4m3"]

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
)";

SweepSpec TinySpec() {
  absl::StatusOr<SweepSpec> s = ParseSweepSpec(kTiny, "tiny.toml");
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

Report RunTiny(const SweepSpec& spec, int threads, int shard = 0, int shards = 1) {
  SweepOptions o;
  o.models_dir = FPCONFORM_MODELS_SOURCE_DIR;
  o.threads = threads;
  o.shard_index = shard;
  o.shard_count = shards;
  absl::StatusOr<Report> r = RunSweep(spec, o);
  EXPECT_TRUE(r.ok()) << r.status();
  AddSummaries(*r);
  EXPECT_TRUE(Validate(*r).ok());
  return *r;
}

double Num(const Table& t, const std::vector<Cell>& row, std::string_view c) {
  return std::get<double>(row[static_cast<size_t>(t.ColumnIndex(c))]);
}
std::string Str(const Table& t, const std::vector<Cell>& row, std::string_view c) {
  return std::get<std::string>(row[static_cast<size_t>(t.ColumnIndex(c))]);
}
int64_t Int(const Table& t, const std::vector<Cell>& row, std::string_view c) {
  return std::get<int64_t>(row[static_cast<size_t>(t.ColumnIndex(c))]);
}

class SweepTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { single_ = new Report(RunTiny(TinySpec(), 1)); }
  static void TearDownTestSuite() { delete single_; }
  static Report* single_;
};
Report* SweepTest::single_ = nullptr;

TEST_F(SweepTest, HasEveryRow) {
  const Table* tol = single_->Find("tolerance");
  ASSERT_NE(tol, nullptr);
  // matmul: bf16 3 + fp8 2 + f32 1 + int8 1 = 7 platforms; sum: 1; x 2 dists x 3 K.
  EXPECT_EQ(tol->rows.size(), (7u + 1u) * 2 * 3);
  EXPECT_EQ(single_->Find("power")->rows.size(), tol->rows.size() * 6);
  EXPECT_EQ(single_->Find("quantize")->rows.size(), 3u * 2);
  // bf16 pair: 2 dists x 3 K; quantize pair: 2 dists.
  EXPECT_EQ(single_->Find("cross_platform")->rows.size(), 6u + 2u);
}

TEST_F(SweepTest, RecommendationsCoverObservationsAndStayUnderTheBound) {
  const Table& t = *single_->Find("tolerance");
  for (const auto& row : t.rows) {
    SCOPED_TRACE(Str(t, row, "platform") + " " + Str(t, row, "distribution") + " K=" +
                 std::to_string(Int(t, row, "k")));
    EXPECT_GE(Num(t, row, "rec_ulp"), Num(t, row, "ulp_max"));
    EXPECT_GE(Num(t, row, "rec_bn"), Num(t, row, "bn_max"));
    EXPECT_LE(Num(t, row, "rec_ulp"), Num(t, row, "bound_ulp"));
    EXPECT_LE(Num(t, row, "rec_bn"), Num(t, row, "bound_bn"));
    EXPECT_LE(Num(t, row, "ulp_max"), Num(t, row, "bound_ulp"));
    EXPECT_LE(Num(t, row, "bn_max"), Num(t, row, "bound_bn"));
    EXPECT_GE(Num(t, row, "rec_rtol"), 0);
    EXPECT_GE(Num(t, row, "rec_atol"), 0);
    EXPECT_GE(Num(t, row, "ulp_max"), Num(t, row, "ulp_p99"));
    EXPECT_GE(Num(t, row, "ulp_p99"), Num(t, row, "ulp_median"));
    // The recommended assert_close tolerance never rejects the row's own correct outputs: the
    // power table's counterpart for "no mutation" is the torch column of the row itself, so
    // check it through a mutation that is a no-op at this size: none exists; instead the rule
    // guarantees it by construction (atol = max(e_i' - rtol |x_i|), e_i' >= e_i).
  }
}

// The typed call an audit uses gives every row's rule bit for bit (so the tolerance table and the
// audits cannot drift apart), on the parsed model alone, for any thread count.
TEST_F(SweepTest, PlatformToleranceIsTheRowsRule) {
  const SweepSpec spec = TinySpec();
  const ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  const Table& t = *single_->Find("tolerance");
  int checked = 0;
  for (const auto& row : t.rows) {
    const std::string platform = Str(t, row, "platform");
    if (platform == "int32-exact") continue;  // Not a catalog model (sweep_inputs.cc's).
    SCOPED_TRACE(Str(t, row, "op") + " " + platform + " " + Str(t, row, "distribution") +
                 " K=" + std::to_string(Int(t, row, "k")));
    const absl::StatusOr<Model>& model = catalog.Find(platform);
    ASSERT_TRUE(model.ok()) << model.status();
    const ModelOp op = Str(t, row, "op") == "sum" ? ModelOp::kSum : ModelOp::kMatmul;
    EXPECT_EQ(SweepDtypeOf(spec, *model, op), Str(t, row, "dtype"));
    const ToleranceQuery query{.op = op,
                               .dtype = Str(t, row, "dtype"),
                               .distribution = Str(t, row, "distribution"),
                               .k = Int(t, row, "k"),
                               .samples = static_cast<int>(Int(t, row, "samples"))};
    const absl::StatusOr<ToleranceRule> rule = PlatformTolerance(spec, *model, query, 1 + checked % 3);
    ASSERT_TRUE(rule.ok()) << rule.status();
    EXPECT_EQ(rule->ulp, Num(t, row, "rec_ulp"));
    EXPECT_EQ(rule->bn, Num(t, row, "rec_bn"));
    EXPECT_EQ(rule->rtol, Num(t, row, "rec_rtol"));
    EXPECT_EQ(rule->atol, Num(t, row, "rec_atol"));
    ++checked;
  }
  EXPECT_EQ(checked, 42);  // 48 rows less int8's 6.
}

TEST(PlatformToleranceTest, DtypeLabelAndErrors) {
  absl::StatusOr<SweepSpec> spec = ParseSweepSpec(kTiny, "tiny.toml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  const absl::StatusOr<Model>& h100 = catalog.Find("nvidia-h100-fp8e4m3");
  const absl::StatusOr<Model>& a100 = catalog.Find("nvidia-a100-bf16");
  const absl::StatusOr<Model>& numpy = catalog.Find("numpy-sum-f32");
  ASSERT_TRUE(h100.ok() && a100.ok() && numpy.ok());
  // The sweep file's label (not the input format's name), and the format's name for a platform
  // the file does not list.
  EXPECT_EQ(SweepDtypeOf(*spec, *h100, ModelOp::kMatmul), "float8_e4m3");
  EXPECT_EQ(std::string(h100->inputs.a->name), "float8_e4m3fn");
  EXPECT_EQ(SweepDtypeOf(*spec, *a100, ModelOp::kMatmul), "bfloat16");
  EXPECT_EQ(SweepDtypeOf(*spec, *numpy, ModelOp::kSum), "float32");
  EXPECT_EQ(SweepDtypeOf(*spec, *numpy, ModelOp::kMatmul), "float32");

  ToleranceQuery q{.op = ModelOp::kMatmul, .dtype = "bfloat16", .distribution = "normal", .k = 64, .samples = 8};
  EXPECT_TRUE(PlatformTolerance(*spec, *a100, q).ok());
  ToleranceQuery dot = q;
  dot.op = ModelOp::kDot;
  EXPECT_EQ(PlatformTolerance(*spec, *a100, dot).status().message(),
            "tolerance rule: the op must be matmul or sum");
  ASSERT_FALSE(a100->Supports(ModelOp::kSum));  // Its operations: dot, matmul.
  ToleranceQuery sum = q;
  sum.op = ModelOp::kSum;
  EXPECT_EQ(PlatformTolerance(*spec, *a100, sum).status().message(),
            "tolerance rule: model 'nvidia-a100-bf16' has no sum operation");
  ToleranceQuery dist = q;
  dist.distribution = "cauchy";
  EXPECT_NE(PlatformTolerance(*spec, *a100, dist).status().message().find(
                "unknown distribution 'cauchy' (one of normal, "),
            std::string::npos);
  ToleranceQuery k0 = q;
  k0.k = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(PlatformTolerance(*spec, *a100, k0).status()));
  ToleranceQuery s0 = q;
  s0.samples = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(PlatformTolerance(*spec, *a100, s0).status()));
  // The memory estimate (sweep.h "Memory"): 64 * 2 bytes per term per thread.
  ToleranceQuery huge = q;
  huge.k = int64_t{1} << 27;
  const absl::Status big = PlatformTolerance(*spec, *a100, huge, 2).status();
  EXPECT_TRUE(absl::IsResourceExhausted(big)) << big;
  EXPECT_NE(big.message().find("matmul bfloat16 normal K=134217728 needs about"), std::string::npos)
      << big;
}

TEST_F(SweepTest, Bf16AccumulationIsRejectedForLargeKWithFloat32Accumulation) {
  const Table& t = *single_->Find("tolerance");
  std::map<std::string, std::string> accumulator;
  for (const auto& row : t.rows) accumulator[Str(t, row, "platform")] = Str(t, row, "accumulator");
  const Table& p = *single_->Find("power");
  int checked = 0;
  for (const auto& row : p.rows) {
    if (Str(p, row, "mutation") != "bf16_accumulation" || Int(p, row, "k") < 1024) continue;
    // Only rows that accumulate in full float32 (not bf16 PSUM, not 13-bit FP8 tensor cores).
    if (accumulator.at(Str(p, row, "platform")) != "float32") continue;
    SCOPED_TRACE(Str(p, row, "platform") + " " + Str(p, row, "distribution"));
    EXPECT_EQ(Num(p, row, "rejected_assert_close"), 1.0);
    EXPECT_EQ(Num(p, row, "rejected_bn"), 1.0);
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

TEST_F(SweepTest, ThreadCountDoesNotChangeABit) {
  const Report three = RunTiny(TinySpec(), 3);
  EXPECT_EQ(ToJson(three), ToJson(*single_));
}

TEST_F(SweepTest, MergedShardsEqualTheSingleRun) {
  std::vector<Report> shards;
  std::vector<std::string> names;
  for (int s = 0; s < 3; ++s) {
    // Each shard goes through its JSON file form, as `fpconform merge` reads it.
    absl::StatusOr<Report> back = FromJson(ToJson(RunTiny(TinySpec(), 2, s, 3)), "shard.json");
    ASSERT_TRUE(back.ok()) << back.status();
    shards.push_back(*back);
    names.push_back("shard" + std::to_string(s + 1));
  }
  // Any order.
  std::swap(shards[0], shards[2]);
  absl::StatusOr<Report> merged = MergeReports(shards, names);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(ToJson(*merged), ToJson(*single_));
  const auto a = ReportFiles(*merged), b = ReportFiles(*single_);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second, b[i].second) << a[i].first;
  }
  // A missing or doubled shard is refused.
  std::vector<Report> two(shards.begin(), shards.begin() + 2);
  EXPECT_NE(MergeReports(two, {"x", "y"}).status().message().find("missing"), std::string::npos);
  std::vector<Report> dup = {shards[0], shards[0], shards[1]};
  EXPECT_FALSE(MergeReports(dup, {"x", "y", "z"}).ok());
  EXPECT_FALSE(MergeReports({*single_}, {"full"}).ok());  // Not a shard.
}

// A `--shard 1/1` report (provenance "shard 1/1") merges into the single run.
TEST_F(SweepTest, AOneShardSplitMergesIntoTheSingleRun) {
  Report one = *single_;
  one.provenance.push_back({"shard", "1/1"});
  absl::StatusOr<Report> back = FromJson(ToJson(one), "one/report.json");
  ASSERT_TRUE(back.ok()) << back.status();
  absl::StatusOr<Report> merged = MergeReports({*back}, {"one/report.json"});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(ToJson(*merged), ToJson(*single_));
}

TEST_F(SweepTest, RecordShardMarksEvenAOneShardSplit) {
  SweepSpec spec = TinySpec();
  spec.ops = {"sum"};
  spec.ks = {64};
  SweepOptions o;
  o.models_dir = FPCONFORM_MODELS_SOURCE_DIR;
  absl::StatusOr<Report> plain = RunSweep(spec, o);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->Provenance("shard"), "");
  o.record_shard = true;
  absl::StatusOr<Report> marked = RunSweep(spec, o);
  ASSERT_TRUE(marked.ok()) << marked.status();
  EXPECT_EQ(marked->Provenance("shard"), "1/1");
}

// The schema MergeReports checks against is exactly what RunSweep writes.
TEST_F(SweepTest, SchemaIsTheSweepsOwnTables) {
  const std::vector<Table> schema = SweepTableSchemas();
  ASSERT_EQ(schema.size(), 10u);
  for (size_t i = 0; i < schema.size(); ++i) {
    const Table& t = single_->tables[i];
    EXPECT_EQ(t.name, schema[i].name);
    ASSERT_EQ(t.columns.size(), schema[i].columns.size()) << t.name;
    for (size_t c = 0; c < t.columns.size(); ++c) {
      EXPECT_EQ(t.columns[c].name, schema[i].columns[c].name);
      EXPECT_EQ(t.columns[c].type, schema[i].columns[c].type);
    }
    EXPECT_TRUE(schema[i].rows.empty());
  }
}

// A shard whose tables do not fit the sweep's schema is refused, naming file, table and column
// (the summaries read cells by column name: a missing column read past the end of every row).
TEST_F(SweepTest, MergeRefusesShardsThatDoNotFitTheSchema) {
  Report one = *single_;
  one.provenance.push_back({"shard", "1/1"});
  auto merge_error = [](const Report& r) {
    return std::string(MergeReports({r}, {"s/report.json"}).status().message());
  };
  auto drop = [](Table& t, std::string_view column) {
    const int i = t.ColumnIndex(column);
    t.columns.erase(t.columns.begin() + i);
    for (auto& row : t.rows) row.erase(row.begin() + i);
  };
  {
    Report r = one;
    drop(*r.Find("tolerance"), "bn_max");
    EXPECT_EQ(merge_error(r), "s/report.json: table 'tolerance': column 'bn_max' missing");
  }
  {
    Report r = one;
    Table& t = *r.Find("power");
    const int k = t.ColumnIndex("k");
    t.columns[static_cast<size_t>(k)].type = ColumnType::kString;
    for (auto& row : t.rows) row[static_cast<size_t>(k)] = Cell{std::string("64")};
    ASSERT_TRUE(Validate(r).ok());
    EXPECT_EQ(merge_error(r),
              "s/report.json: table 'power': column 'k' is a string column, the sweep writes int");
  }
  {
    Report r = one;
    Table& t = *r.Find("quantize");
    std::swap(t.columns[2], t.columns[3]);
    for (auto& row : t.rows) std::swap(row[2], row[3]);
    EXPECT_EQ(merge_error(r), "s/report.json: table 'quantize': column 'format' is column 4, the "
                              "sweep writes it as column 3");
  }
  {
    Report r = one;
    Table& t = *r.Find("cross_platform");
    t.columns.push_back(IntColumn("extra", "x"));
    for (auto& row : t.rows) row.emplace_back();  // Empty (std::monostate).
    EXPECT_EQ(merge_error(r), "s/report.json: table 'cross_platform': column 'extra' is not a "
                              "column the sweep writes");
  }
  {
    Report r = one;
    r.tables.erase(r.tables.begin() + 2);  // power
    EXPECT_EQ(merge_error(r), "s/report.json: table 'power' missing");
  }
  {
    Report r = one;
    r.tables.push_back(r.tables[0]);
    r.tables.back().name = "bogus";
    EXPECT_EQ(merge_error(r), "s/report.json: table 'bogus' is not a table the tolerance sweep "
                              "writes");
  }
}

TEST_F(SweepTest, CancellationStopsTheSweep) {
  SweepOptions o;
  o.models_dir = FPCONFORM_MODELS_SOURCE_DIR;
  o.threads = 2;
  o.cancelled = [] { return true; };
  EXPECT_TRUE(absl::IsCancelled(RunSweep(TinySpec(), o).status()));
  // Cancelled after the first unit: stops there.
  int units = 0;
  std::atomic<bool> stop{false};
  o.cancelled = [&stop] { return stop.load(); };
  o.progress = [&](int64_t, int64_t, const std::string&) {
    ++units;
    stop = true;
  };
  EXPECT_TRUE(absl::IsCancelled(RunSweep(TinySpec(), o).status()));
  EXPECT_EQ(units, 1);
}

// The tiny sweep's CSV files, pinned: the inputs come from pinned streams and every result is
// exact arithmetic, so these bytes must be the same on every machine, compiler and thread count.
// A change here is a change of results: review it, then regenerate with
// FPCONFORM_UPDATE_GOLDEN=1 ./sweep_test --gtest_filter=*Golden*.
TEST_F(SweepTest, CsvFilesMatchTheGoldenCopies) {
  const std::string dir = std::string(FPCONFORM_REPORTS_SOURCE_DIR) + "/testdata/tiny_sweep";
  for (const auto& [name, content] : ReportFiles(*single_)) {
    if (name.size() < 4 || name.substr(name.size() - 4) != ".csv") continue;
    ExpectGoldenFile(dir + "/" + name, content);
  }
}

TEST_F(SweepTest, FrameworkDefaultsAreReported) {
  const Table& d = *single_->Find("defaults");
  ASSERT_FALSE(d.rows.empty());
  const Table& t = *single_->Find("tolerance");
  for (const auto& row : t.rows) {
    if (Str(t, row, "output_format") == "float32") {
      EXPECT_EQ(Num(t, row, "torch_rtol"), 1.3e-6);
      EXPECT_EQ(Num(t, row, "torch_atol"), 1e-5);
      EXPECT_EQ(Num(t, row, "jax_tol"), 1e-6);
    }
  }
  const std::string md = ToMarkdown(*single_);
  for (const char* h : {"## matmul: recommended tolerances", "## sum: recommended tolerances",
                        "## Cross-platform tolerances", "## Tolerance power",
                        "## Torch and JAX default tolerances", "## Elementwise quantization"}) {
    EXPECT_NE(md.find(h), std::string::npos) << h;
  }
}

TEST_F(SweepTest, Fp8FormatMismatchIsVisible) {
  // Trainium2 receives float8_e4m3 (max 240), H100 float8_e4m3fn (max 448).
  const Table& t = *single_->Find("tolerance");
  bool saw_trn = false, saw_h100 = false;
  for (const auto& row : t.rows) {
    if (Str(t, row, "platform") == "trainium2-fp8e4m3") {
      EXPECT_EQ(Str(t, row, "input_format"), "float8_e4m3");
      saw_trn = true;
    }
    if (Str(t, row, "platform") == "nvidia-h100-fp8e4m3") {
      EXPECT_EQ(Str(t, row, "input_format"), "float8_e4m3fn");
      saw_h100 = true;
    }
  }
  EXPECT_TRUE(saw_trn && saw_h100);
  const Table& q = *single_->Find("quantize");
  for (const auto& row : q.rows) EXPECT_LE(Num(q, row, "ulp_max"), 0.5) << Str(q, row, "format");
}

TEST(SweepSpecTest, ErrorsNameFileLineAndKey) {
  EXPECT_EQ(ParseError(Replace(kTiny, "ks = [64, 1024, 2048]", "ks = [64, 0]")),
            "s.toml:9: ks: must be integers in 1..16777216");
  const std::string unknown = ParseError("bogus = 1" + std::string(kTiny));
  EXPECT_NE(unknown.find("s.toml:1: bogus: unknown key"), std::string::npos) << unknown;
  EXPECT_NE(ParseError(Replace(kTiny, "\"sum\", \"quantize\"]", "\"summ\"]"))
                .find("unknown op 'summ' (valid: matmul, sum, quantize, composite, attention)"),
            std::string::npos);
  EXPECT_FALSE(ParseSweepSpec("seed = ", "s.toml").ok());
}

TEST(SweepSpecTest, FiltersRejectUnknownNamesWithTheValidList) {
  SweepFilter f;
  f.platforms = {"nvidia-h100-bf17"};
  absl::StatusOr<SweepSpec> s = ApplyFilter(TinySpec(), f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("unknown platform 'nvidia-h100-bf17' (valid: nvidia-h100-bf16"),
            std::string::npos)
      << s.status();
  f = {};
  f.distributions = {"gaussian"};
  EXPECT_FALSE(ApplyFilter(TinySpec(), f).ok());
  f = {};
  f.platforms = {"trainium2-bf16"};
  s = ApplyFilter(TinySpec(), f);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->dtypes.size(), 1u);
  EXPECT_EQ(s->dtypes[0].matmul, std::vector<std::string>{"trainium2-bf16"});
  for (const CrossSpec& c : s->cross) EXPECT_NE(c.dtype, "bfloat16");  // Needs nvidia-h100-bf16.
}

// A [[cross]] pair with op = "sum" joins the sum rows of its dtype (a GPU sum against a
// Trainium reduction envelope); op is checked when the file is read.
TEST(SweepSpecTest, SumPairsJoinTheSumRows) {
  const std::string spec = R"(
seed = 3
samples = 6
ops = ["matmul", "sum"]
ks = [64, 300]
distributions = ["normal"]

[[dtype]]
name = "float32"
matmul = ["cuda-f32-fma"]
sum = ["torch-cuda-sum-f32", "trainium2-reduce-f32-sequential"]

[[cross]]
name = "gpu sum vs trainium reduce"
dtype = "float32"
op = "sum"
a = "torch-cuda-sum-f32"
b = ["trainium2-reduce-f32-envelope"]
)";
  absl::StatusOr<SweepSpec> s = ParseSweepSpec(spec, "s.toml");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->cross.size(), 1u);
  EXPECT_EQ(s->cross[0].op, "sum");
  const Report r = RunTiny(*s, 2);
  const Table& t = *r.Find("cross_platform");
  ASSERT_EQ(t.rows.size(), 2u);  // One per K, sum units only.
  for (const auto& row : t.rows) {
    EXPECT_EQ(Str(t, row, "op"), "sum");
    EXPECT_EQ(Str(t, row, "platform_b"), "trainium2-reduce-f32-envelope");
  }
  EXPECT_EQ(ParseError(Replace(spec, "op = \"sum\"", "op = \"dot\"")),
            "s.toml:16: cross[0].op: must be \"matmul\" or \"sum\"");
  std::string no_rows = spec;
  const size_t line = no_rows.find("sum = [\"torch");
  no_rows.erase(line, no_rows.find('\n', line) - line);
  // Without any sum list the whole sweep has no sum rows: the reader says so before it reaches
  // the pair (the pair check itself: sweep_spec_test).
  const std::string no_rows_error = ParseError(no_rows);
  EXPECT_NE(no_rows_error.find("'sum' is listed, but no [[dtype]] has sum platforms"),
            std::string::npos)
      << no_rows_error;
}

TEST(SweepSpecTest, StandardSweepLoadsAndNamesExistingModels) {
  absl::StatusOr<SweepSpec> s =
      LoadSweepSpec(std::string(FPCONFORM_REPORTS_SOURCE_DIR) + "/standard_sweep.toml");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->ks, (std::vector<int64_t>{64, 128, 256, 1024, 4096, 16384, 65536}));
  EXPECT_EQ(s->distributions.size(), 5u);
  // Every model exists: run the sweep's model loading on a one-sample, K=1 version.
  SweepFilter f;
  f.ks = {1};
  f.samples = 1;
  f.distributions = {"normal"};
  f.ops = {"matmul", "sum"};
  absl::StatusOr<SweepSpec> tiny = ApplyFilter(*s, f);
  ASSERT_TRUE(tiny.ok());
  tiny->min_samples = 1;
  SweepOptions o;
  o.models_dir = FPCONFORM_MODELS_SOURCE_DIR;
  absl::StatusOr<Report> r = RunSweep(*tiny, o);
  ASSERT_TRUE(r.ok()) << r.status();
}

// The standard sweep's attention section names existing presets and pairs of one input format:
// its --quick form (S = 128, 16 rows) runs every preset and both cross pairs.
TEST(SweepSpecTest, StandardSweepAttentionRunsEveryPresetAndPair) {
  absl::StatusOr<SweepSpec> s =
      LoadSweepSpec(std::string(FPCONFORM_REPORTS_SOURCE_DIR) + "/standard_sweep.toml");
  ASSERT_TRUE(s.ok()) << s.status();
  SweepFilter f;
  f.ops = {"attention"};
  f.quick = true;
  absl::StatusOr<SweepSpec> quick = ApplyFilter(*s, f);
  ASSERT_TRUE(quick.ok()) << quick.status();
  EXPECT_EQ(quick->ops, std::vector<std::string>{"attention"});
  EXPECT_EQ(quick->attention.lengths, std::vector<int64_t>{128});
  SweepOptions o;
  o.models_dir = FPCONFORM_MODELS_SOURCE_DIR;
  o.attention_models_dir = FPCONFORM_ATTENTION_MODELS_DIR;
  o.threads = 2;
  absl::StatusOr<Report> r = RunSweep(*quick, o);
  ASSERT_TRUE(r.ok()) << r.status();
  const AttentionSweepSpec& a = s->attention;
  const size_t units = a.distributions.size() * a.head_dims.size() * a.masks.size();
  EXPECT_EQ(r->Find("attention")->rows.size(), units * a.platforms.size());
  EXPECT_EQ(r->Find("attention_cross")->rows.size(), units * a.cross.size());
}

// ---- [composite]: the composite kernels' rows. ----

constexpr char kComposite[] = R"(
seed = 11
samples = 8
ops = ["composite"]
ks = [64]
distributions = ["normal"]

[composite]
functions = ["gelu", "softmax", "rmsnorm", "layernorm"]
distributions = ["normal", "dc_offset"]
lengths = [64]
elements = 2048
platforms = ["correctly-rounded-f32", "torch-cuda-f32", "torch-cpu-f32", "correctly-rounded-rows-f32",
             "torch-cuda-rows-f32", "torch-cpu-rows-f32", "hf-llama-rmsnorm-cuda-bf16",
             "nki-rmsnorm-tkg-bf16", "nki-layernorm-tkg-bf16"]
cross = [["torch-cuda-f32", "torch-cpu-f32"], ["hf-llama-rmsnorm-cuda-bf16", "nki-rmsnorm-tkg-bf16"]]
)";

// Parses `text` as the sweep file `file` and runs shard `shard_index` of `shard_count` on
// `threads` threads, with the source tree's model directories (matmul/sum, composite, attention).
absl::StatusOr<Report> RunSweepText(const std::string& text, const char* file, int shard_index,
                                    int shard_count, int threads) {
  absl::StatusOr<SweepSpec> spec = ParseSweepSpec(text, file);
  if (!spec.ok()) return spec.status();
  SweepOptions o;
  o.models_dir = FPCONFORM_MODELS_SOURCE_DIR;
  o.composite_models_dir = FPCONFORM_COMPOSITE_MODELS_DIR;
  o.attention_models_dir = FPCONFORM_ATTENTION_MODELS_DIR;
  o.shard_index = shard_index;
  o.shard_count = shard_count;
  o.threads = threads;
  return RunSweep(*spec, o);
}

absl::StatusOr<Report> RunComposite(const std::string& text, int shard_index = 0, int shard_count = 1) {
  return RunSweepText(text, "c.toml", shard_index, shard_count, /*threads=*/1);
}

TEST(CompositeSweepTest, RowsCoverTheModelsBoundsAndCatchTheMutants) {
  absl::StatusOr<Report> r = RunComposite(kComposite);
  ASSERT_TRUE(r.ok()) << r.status();
  const Table& t = *r->Find("composite");
  std::map<std::string, int> rows_per_function;
  for (const auto& row : t.rows) {
    const std::string fn = Str(t, row, "function"), platform = Str(t, row, "platform");
    ++rows_per_function[fn];
    SCOPED_TRACE(fn + " " + platform + " " + Str(t, row, "distribution"));
    EXPECT_EQ(std::get<int64_t>(row[static_cast<size_t>(t.ColumnIndex("non_finite"))]), 0);
    // The recommendation covers the model's own error and every conforming implementation.
    EXPECT_GE(Num(t, row, "rec_ulp"), Num(t, row, "ulp_max"));
    EXPECT_GE(Num(t, row, "rec_ulp"), Num(t, row, "bound_ulp"));
    EXPECT_GT(Num(t, row, "rec_rtol") + Num(t, row, "rec_atol"), 0);
    if (platform.rfind("correctly-rounded", 0) == 0) {
      EXPECT_EQ(Str(t, row, "exact_model"), "yes");
      EXPECT_LE(Num(t, row, "ulp_max"), 0.5 + 1e-9);  // The oracle's own rounding, nothing more.
    }
  }
  // gelu: 3 elementwise models; softmax: 3 row models; rmsnorm: 5; layernorm: 4 (the torch
  // eager ones by Welford); 2 distributions.
  EXPECT_EQ(rows_per_function["gelu"], 6);
  EXPECT_EQ(rows_per_function["softmax"], 6);
  EXPECT_EQ(rows_per_function["rmsnorm"], 10);
  EXPECT_EQ(rows_per_function["layernorm"], 8);

  const Table& p = *r->Find("composite_power");
  std::map<std::string, double> least;  // function/mutation (float32 models) -> weakest power.
  for (const auto& row : p.rows) {
    const std::string key = Str(p, row, "function") + "/" + Str(p, row, "mutation");
    // float32 models on N(0, 1) (at 30 + N(0, 1) the two GELU forms agree: both are x).
    if (Str(p, row, "platform").find("bf16") != std::string::npos || Str(p, row, "distribution") != "normal") {
      continue;
    }
    least.try_emplace(key, 1.0);
    least[key] = std::min(least[key], Num(p, row, "rejected"));
  }
  // float32 tolerances are far tighter than these bugs (a 1/(2n) variance bias at n = 64, the
  // other GELU form's ~1e-4, a weight 1 + N(0, 0.01), a dropped softmax term).
  EXPECT_EQ(least["layernorm/unbiased_variance"], 1.0);
  EXPECT_GT(least["rmsnorm/missing_weight"], 0.9);
  EXPECT_GT(least["softmax/dropped_term"], 0.9);
  EXPECT_GT(least["gelu/other_gelu_form"], 0.5);
  EXPECT_GT(least["gelu/input_in_bfloat16"], 0.5);

  const Table& x = *r->Find("composite_cross");
  ASSERT_EQ(x.rows.size(), 4u);  // gelu's pair and rmsnorm's, in their units, x 2 distributions.
  for (const auto& row : x.rows) {
    EXPECT_LE(Num(x, row, "diff_ulp_max"), Num(x, row, "allowed_ulp_max"));
  }
}

TEST(CompositeSweepTest, ShardsMergeIntoTheSingleRun) {
  absl::StatusOr<Report> single = RunComposite(kComposite);
  ASSERT_TRUE(single.ok()) << single.status();
  std::vector<Report> shards;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<Report> s = RunComposite(kComposite, i, 3);
    ASSERT_TRUE(s.ok()) << s.status();
    shards.push_back(*std::move(s));
  }
  absl::StatusOr<Report> merged = MergeReports(shards, {"s0", "s1", "s2"});
  ASSERT_TRUE(merged.ok()) << merged.status();
  AddSummaries(*single);
  for (const char* name : {"composite", "composite_power", "composite_cross"}) {
    EXPECT_EQ(merged->Find(name)->rows, single->Find(name)->rows) << name;
  }
}

TEST(CompositeSweepTest, ErrorsNameTheSweepFileAndKey) {
  const auto error = [](const std::string& from, const std::string& to) {
    return ParseError(Replace(kComposite, from, to), "c.toml");
  };
  const std::string fn = error("\"gelu\", \"softmax\"", "\"gelux\"");
  EXPECT_NE(fn.find("c.toml:9: composite.functions: unknown function 'gelux'"), std::string::npos) << fn;
  EXPECT_NE(error("\"normal\", \"dc_offset\"", "\"uniform_01\"")
                .find("unknown distribution 'uniform_01' (valid: normal, wide, dc_offset)"),
            std::string::npos);
  EXPECT_NE(error("lengths = [64]", "").find("'softmax' runs along rows: lengths is required"),
            std::string::npos);
  EXPECT_NE(error("[\"torch-cuda-f32\", \"torch-cpu-f32\"]", "[\"torch-cuda-f32\", \"x\"]")
                .find("'x' is not in composite.platforms"),
            std::string::npos);
  const std::string no_table = std::string(kComposite).substr(0, std::string(kComposite).find("[composite]"));
  EXPECT_NE(ParseError(no_table, "c.toml").find("'composite' needs a [composite] table"),
            std::string::npos);
  absl::StatusOr<Report> r =
      RunComposite(Replace(kComposite, "\"nki-layernorm-tkg-bf16\"]", "\"nki-layernorm-tkg-bf17\"]"));
  EXPECT_NE(r.status().message().find("composite.platforms: unknown composite model 'nki-layernorm-tkg-bf17'"),
            std::string::npos) << r.status();
}

// ---- [attention]: attention's rows. ----

// S = 64 = D (so the transposed K read is Q K) and S = 160, both masks, both distributions, every
// preset (three input formats).
constexpr char kAttention[] = R"(
seed = 13
samples = 8
ops = ["attention"]
ks = [64]
distributions = ["normal"]

[attention]
lengths = [64, 160]
head_dims = [64]
masks = ["none", "causal"]
distributions = ["normal", "peaked"]
rows = 24
cases = 6
platforms = ["torch-math-sdpa-cpu-f32", "torch-math-sdpa-cpu-bf16", "flash-attention2-cuda-bf16",
             "flash-attention2-cuda-f16", "nki-flash-fwd-bf16"]
cross = [["flash-attention2-cuda-bf16", "nki-flash-fwd-bf16"], ["torch-math-sdpa-cpu-bf16", "flash-attention2-cuda-bf16"]]
)";

absl::StatusOr<Report> RunAttention(const std::string& text, int shard_index = 0, int shard_count = 1,
                                    int threads = 1) {
  return RunSweepText(text, "a.toml", shard_index, shard_count, threads);
}

class AttentionSweepTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<Report> r = RunAttention(kAttention);
    ASSERT_TRUE(r.ok()) << r.status();
    single_ = new Report(*std::move(r));
  }
  static void TearDownTestSuite() {
    delete single_;
    single_ = nullptr;
  }
  static Report* single_;
};
Report* AttentionSweepTest::single_ = nullptr;

TEST_F(AttentionSweepTest, RowsCoverTheModelsBoundsAndNoConformingOutputFails) {
  const Table& t = *single_->Find("attention");
  ASSERT_EQ(t.rows.size(), 8u * 5u);  // 2 distributions x 2 S x 2 masks, x 5 models.
  std::map<std::string, double> ess;  // platform/S/mask/distribution -> median ESS.
  for (const auto& row : t.rows) {
    const std::string key = Str(t, row, "platform") + "/" +
                            std::to_string(std::get<int64_t>(row[static_cast<size_t>(t.ColumnIndex("s"))])) + "/" +
                            Str(t, row, "causal");
    SCOPED_TRACE(key + " " + Str(t, row, "distribution"));
    // N(0, 1) scores are well inside every model's error analysis: a bound for each element.
    if (Str(t, row, "distribution") == "normal") {
      EXPECT_EQ(std::get<int64_t>(row[static_cast<size_t>(t.ColumnIndex("unbounded"))]), 0);
    }
    // The emulated output lies inside the model's enclosure: its error is within the bound.
    EXPECT_LE(Num(t, row, "abs_max"), Num(t, row, "bound_abs"));
    EXPECT_LE(Num(t, row, "ulp_max"), Num(t, row, "bound_ulp") + 1);  // + the oracle's enclosure width.
    // The recommendation covers the model's own error and every conforming implementation, so it
    // rejects none of the emulated outputs.
    EXPECT_GE(Num(t, row, "rec_ulp"), Num(t, row, "ulp_max"));
    EXPECT_GE(Num(t, row, "rec_ulp"), Num(t, row, "bound_ulp"));
    EXPECT_EQ(Num(t, row, "rec_rejects"), 0);
    EXPECT_EQ(Num(t, row, "prob_rejects"), 0);
    EXPECT_GT(Num(t, row, "prob_rtol") + Num(t, row, "prob_atol"), 0);
    // The estimate is capped by the bound: never above it where the model gives one.
    if (std::get<int64_t>(row[static_cast<size_t>(t.ColumnIndex("unbounded"))]) == 0) {
      EXPECT_LE(Num(t, row, "prob_abs"), Num(t, row, "bound_abs"));
    }
    EXPECT_GT(Num(t, row, "rec_rtol") + Num(t, row, "rec_atol"), 0);
    const double e = Num(t, row, "ess_median");
    EXPECT_GE(e, 1);
    EXPECT_LE(e, 160);
    ess[key + "/" + Str(t, row, "distribution")] = e;
  }
  // A peaked softmax has fewer effective terms than N(0, 1) scores, row for row.
  for (const auto& [key, e] : ess) {
    if (key.find("/peaked") == std::string::npos) continue;
    const std::string normal = key.substr(0, key.size() - 7) + "/normal";
    EXPECT_LT(e, ess.at(normal) / 4) << key;
  }
}

TEST_F(AttentionSweepTest, PowerAgainstTheMutantsAndTheProjectsRules) {
  const Table& t = *single_->Find("attention");
  for (const auto& row : t.rows) {
    // nki-library's max mode allows atol + rtol max|b| where np.allclose allows atol + rtol |b_i|:
    // it can only be the looser of the two.
    EXPECT_LE(Num(t, row, "nki_rejects"), Num(t, row, "allclose_rejects"));
    // Each project's own rule passes its own kernel (their test suites pass on the hardware): a
    // check of the emulated references (the same-dtype PyTorch one for FlashAttention's rule).
    const std::string platform = Str(t, row, "platform");
    if (Str(t, row, "distribution") != "normal") continue;
    if (platform == "flash-attention2-cuda-bf16" || platform == "flash-attention2-cuda-f16") {
      EXPECT_EQ(Num(t, row, "fa_rejects"), 0) << platform;
    }
    if (platform == "nki-flash-fwd-bf16") {
      EXPECT_EQ(Num(t, row, "nki_rejects"), 0);
    }
  }
  const Table& p = *single_->Find("attention_power");
  ASSERT_FALSE(p.rows.empty());
  std::map<std::string, double> most, prob;  // platform/mutation -> largest accepted share, N(0, 1) inputs.
  int causal_rows = 0;
  for (const auto& row : p.rows) {
    const std::string mutation = Str(p, row, "mutation");
    if (mutation == "causal_mask_missing") {
      ++causal_rows;
      EXPECT_EQ(Str(p, row, "causal"), "yes");
    }
    const int64_t affected = std::get<int64_t>(row[static_cast<size_t>(p.ColumnIndex("affected"))]);
    if (affected == 0) {
      EXPECT_TRUE(std::holds_alternative<std::monostate>(row[static_cast<size_t>(p.ColumnIndex("rec_accepts"))]));
      continue;
    }
    EXPECT_GE(Num(p, row, "nki_accepts"), Num(p, row, "allclose_accepts"));
    if (Str(p, row, "distribution") != "normal") continue;
    const std::string key = Str(p, row, "platform") + "/" + mutation;
    most.try_emplace(key, 0.0);
    most[key] = std::max(most[key], Num(p, row, "rec_accepts"));
    prob.try_emplace(key, 0.0);
    prob[key] = std::max(prob[key], Num(p, row, "prob_accepts"));
  }
  EXPECT_EQ(causal_rows, 4 * 5);  // Causal units x models.
  // Bugs that move every output by far more than any model's rounding: no case passes any
  // model's recommendation.
  for (const char* model : {"torch-math-sdpa-cpu-f32", "torch-math-sdpa-cpu-bf16", "flash-attention2-cuda-bf16",
                            "flash-attention2-cuda-f16", "nki-flash-fwd-bf16"}) {
    for (const char* m : {"scale_twice", "scale_missing", "causal_mask_missing", "k_transposed_read"}) {
      EXPECT_EQ(most[std::string(model) + "/" + m], 0.0) << model << " " << m;
    }
  }
  // The softmax over the wrong axis too, for the models with a tight bound (float32, and
  // FlashAttention-2's bfloat16 with its float32 softmax).
  EXPECT_EQ(most["torch-math-sdpa-cpu-f32/softmax_wrong_axis"], 0.0);
  EXPECT_EQ(most["flash-attention2-cuda-bf16/softmax_wrong_axis"], 0.0);
  // The probabilistic recommendation, sized by the typical error rather than the worst case,
  // catches the softmax over the wrong axis for every model.
  for (const char* model : {"torch-math-sdpa-cpu-f32", "torch-math-sdpa-cpu-bf16", "flash-attention2-cuda-bf16",
                            "flash-attention2-cuda-f16", "nki-flash-fwd-bf16"}) {
    for (const char* m : {"scale_twice", "scale_missing", "causal_mask_missing", "k_transposed_read",
                          "softmax_wrong_axis"}) {
      EXPECT_EQ(prob[std::string(model) + "/" + m], 0.0) << model << " " << m;
    }
  }
}

// The typed call (fpconform.tolerance("attention", ...)) gives every attention row's rule bit for
// bit, from the parsed model alone and for any thread count: the table and the call cannot drift.
TEST_F(AttentionSweepTest, AttentionPlatformToleranceIsTheRowsRule) {
  absl::StatusOr<SweepSpec> spec = ParseSweepSpec(kAttention, "a.toml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<std::vector<composite::AttentionModel>> models =
      composite::LoadAttentionModels(FPCONFORM_ATTENTION_MODELS_DIR);
  ASSERT_TRUE(models.ok()) << models.status();
  const Table& t = *single_->Find("attention");
  int checked = 0;
  for (const auto& row : t.rows) {
    const std::string platform = Str(t, row, "platform");
    const int64_t s = std::get<int64_t>(row[static_cast<size_t>(t.ColumnIndex("s"))]);
    const int64_t d = std::get<int64_t>(row[static_cast<size_t>(t.ColumnIndex("d"))]);
    SCOPED_TRACE(platform + " S=" + std::to_string(s) + " " + Str(t, row, "causal") + " " +
                 Str(t, row, "distribution"));
    const auto m = std::find_if(models->begin(), models->end(),
                                [&](const composite::AttentionModel& x) { return x.name == platform; });
    ASSERT_NE(m, models->end());
    const AttentionToleranceQuery q{s, d, Str(t, row, "causal") == "yes", Str(t, row, "distribution")};
    const absl::StatusOr<AttentionToleranceRule> r = AttentionPlatformTolerance(*spec, *m, q, 1 + checked % 3);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->rtol, Num(t, row, "rec_rtol"));
    EXPECT_EQ(r->atol, Num(t, row, "rec_atol"));
    EXPECT_EQ(r->prob_rtol, Num(t, row, "prob_rtol"));
    EXPECT_EQ(r->prob_atol, Num(t, row, "prob_atol"));
    EXPECT_EQ(r->ulp, Num(t, row, "rec_ulp"));
    EXPECT_EQ(r->bound_abs, Num(t, row, "bound_abs"));
    EXPECT_EQ(r->ess_median, Num(t, row, "ess_median"));
    EXPECT_EQ(r->rows, std::get<int64_t>(row[static_cast<size_t>(t.ColumnIndex("rows"))]));
    ++checked;
  }
  EXPECT_EQ(checked, 40);
  // Errors, before any work.
  const composite::AttentionModel& m0 = models->front();
  EXPECT_EQ(AttentionPlatformTolerance(*spec, m0, {0, 64}).status().message(),
            "attention tolerance: S = 0: must be in 1..16777216");
  EXPECT_EQ(AttentionPlatformTolerance(*spec, m0, {64, 64, false, "uniform"}).status().message(),
            "attention tolerance: unknown distribution 'uniform' (valid: normal, peaked)");
  EXPECT_TRUE(absl::IsInvalidArgument(AttentionPlatformTolerance(*spec, m0, {1 << 14, 1 << 13}).status()));
}

TEST_F(AttentionSweepTest, CrossPairsStayWithinTheSumOfTheBounds) {
  const Table& x = *single_->Find("attention_cross");
  ASSERT_EQ(x.rows.size(), 8u * 2u);
  for (const auto& row : x.rows) {
    EXPECT_LE(Num(x, row, "diff_ulp_max"), Num(x, row, "allowed_ulp_max"));
    EXPECT_GT(Num(x, row, "rec_rtol") + Num(x, row, "rec_atol"), 0);
    EXPECT_GT(Num(x, row, "prob_rtol") + Num(x, row, "prob_atol"), 0);
  }
}

TEST_F(AttentionSweepTest, ShardsAndThreadsGiveTheSingleRun) {
  std::vector<Report> shards;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<Report> s = RunAttention(kAttention, i, 3, 2);
    ASSERT_TRUE(s.ok()) << s.status();
    shards.push_back(*std::move(s));
  }
  absl::StatusOr<Report> merged = MergeReports(shards, {"s0", "s1", "s2"});
  ASSERT_TRUE(merged.ok()) << merged.status();
  Report single = *single_;
  AddSummaries(single);
  for (const char* name : {"attention", "attention_power", "attention_cross"}) {
    EXPECT_EQ(merged->Find(name)->rows, single.Find(name)->rows) << name;
  }
  const std::string md = ToMarkdown(*merged);
  EXPECT_NE(md.find("## Attention: observed errors and recommended tolerances"), std::string::npos);
  EXPECT_NE(md.find("| nki-flash-fwd-bf16 | softmax_wrong_axis | normal |"), std::string::npos);
}

TEST(AttentionSweepErrorsTest, ErrorsNameTheSweepFileAndKey) {
  const auto error = [](const std::string& from, const std::string& to) {
    return ParseError(Replace(kAttention, from, to), "a.toml");
  };
  const std::string mask = error("\"none\", \"causal\"", "\"none\", \"sliding\"");
  EXPECT_NE(mask.find("a.toml:11: attention.masks: unknown mask 'sliding' (valid: none, causal)"),
            std::string::npos) << mask;
  EXPECT_NE(error("lengths = [64, 160]", "lengths = [64, 64]").find("attention.lengths: 64 listed twice"),
            std::string::npos);
  EXPECT_NE(error("\"normal\", \"peaked\"", "\"wide\"").find("unknown distribution 'wide' (valid: normal, peaked)"),
            std::string::npos);
  EXPECT_NE(error("[\"flash-attention2-cuda-bf16\", \"nki-flash-fwd-bf16\"]", "[\"flash-attention2-cuda-bf16\", \"x\"]")
                .find("'x' is not in attention.platforms"),
            std::string::npos);
  const std::string no_table = std::string(kAttention).substr(0, std::string(kAttention).find("[attention]"));
  EXPECT_NE(ParseError(no_table, "a.toml").find("'attention' needs an [attention] table"),
            std::string::npos);
  absl::StatusOr<Report> r =
      RunAttention(Replace(kAttention, "[\"torch-math-sdpa-cpu-f32\"", "[\"torch-math-sdpa-cpu-f33\""));
  EXPECT_NE(r.status().message().find("attention.platforms: unknown attention model 'torch-math-sdpa-cpu-f33'"),
            std::string::npos) << r.status();
  r = RunAttention(Replace(kAttention, "[\"torch-math-sdpa-cpu-bf16\", \"flash-attention2-cuda-bf16\"]",
                           "[\"torch-math-sdpa-cpu-f32\", \"flash-attention2-cuda-bf16\"]"));
  EXPECT_NE(r.status().message().find("a.toml: attention.cross: 'torch-math-sdpa-cpu-f32' takes float32 inputs, "
                                      "'flash-attention2-cuda-bf16' bfloat16"),
            std::string::npos) << r.status();
}

}  // namespace
}  // namespace fpconform::reports
