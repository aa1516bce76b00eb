#include "accumulation/model.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "accumulation/model_catalog.h"
#include "base/testing/temp_dir.h"
#include "base/user_file.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

// The two examples of MODEL_FORMAT.md, verbatim.
constexpr const char* kH100 = R"toml(
name = "nvidia-h100-bf16"
description = "H100 wgmma bf16 x bf16 -> fp32: fused groups of 16 products, 25 fraction bits, RZ"

[inputs]
a = "bfloat16"
b = "bfloat16"

[product]
policy = "exact"

[adder]
kind = "fused"
group = 16
fraction_bits = 25
alignment = "truncate"
alignment_exponent = "nominal"
normalization_rounding = "rtz"

[accumulator]
format = "float32"
rounding = "rne"

[chain]
kind = "sequential"

[output]
format = "float32"
rounding = "rne"

[provenance]
"inputs.a" = "PTX ISA 8.x, wgmma.mma_async .bf16 operand types"
"inputs.b" = "PTX ISA 8.x, wgmma.mma_async .bf16 operand types"
"product.policy" = "Fasi, Higham, Mikaitis & Pranesh, PeerJ CS 7:e330 (2021), Sec. 3: products exact"
"adder.kind" = "MMA-Sim, Xie et al., arXiv:2511.10909, Hopper fp16/bf16 model"
"adder.group" = "MMA-Sim, arXiv:2511.10909: 16-term fused groups on sm_90"
"adder.fraction_bits" = "MMA-Sim, arXiv:2511.10909: 25 bits kept after alignment on sm_90"
"adder.alignment" = "Fasi et al. 2021, Sec. 4: alignment truncates"
"adder.alignment_exponent" = "MMA-Sim, arXiv:2511.10909"
"adder.normalization_rounding" = "Fasi et al. 2021: fp32 output rounds toward zero"
"accumulator.format" = "PTX ISA 8.x, wgmma .f32 accumulator"
"accumulator.rounding" = "unknown"
"chain.kind" = "one wgmma chained along K in program order"
"output.format" = "PTX ISA 8.x, wgmma .f32 D"
"output.rounding" = "same format: conversion is exact"
unconfirmed = ["accumulator.rounding", "adder.alignment_exponent"]
)toml";

constexpr const char* kCpu = R"toml(
name = "cpu-f32-seq"
description = "Plain C loop in float32: s = s + a[i]*b[i], product rounded, then added (no FMA)"

[inputs]
a = "float32"

[product]
policy = "round"
format = "float32"
rounding = "rne"

[adder]
kind = "ieee"
rounding = "rne"

[accumulator]
format = "float32"

[chain]
kind = "sequential"

[provenance]
"inputs.a" = "definition of the model"
"product.policy" = "C11 5.1.2.3 / -ffp-contract=off: the product is rounded to float"
"product.format" = "C11 6.3.1.8 usual arithmetic conversions: float * float is float"
"product.rounding" = "IEEE 754-2019 4.3.3 default rounding"
"adder.kind" = "C11 6.5.6: s + p evaluated in float (FLT_EVAL_METHOD 0, x86-64 SSE)"
"adder.rounding" = "IEEE 754-2019 4.3.3 default rounding"
"accumulator.format" = "float s"
"chain.kind" = "for (i = 0; i < n; ++i) loop order"
)toml";

TEST(ModelTest, ParsesH100Example) {
  absl::StatusOr<Model> m = ParseModel(kH100, "models/nvidia-h100-bf16.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->name, "nvidia-h100-bf16");
  EXPECT_EQ(m->inputs.a, &BFloat16());
  EXPECT_EQ(m->inputs.b, &BFloat16());
  EXPECT_EQ(m->adder.kind, AdderKind::kFused);
  EXPECT_EQ(m->adder.group, 16);
  EXPECT_EQ(m->adder.fraction_bits, 25);
  EXPECT_EQ(m->adder.env.rounding, Rounding::kTowardZero);
  EXPECT_EQ(m->accumulator.format, &Float32());
  EXPECT_EQ(m->accumulator.fraction_bits, 23);
  EXPECT_EQ(m->output.format, &Float32());
  EXPECT_EQ(m->unconfirmed.size(), 2u);
  EXPECT_EQ(m->provenance.at("adder.group"),
            "MMA-Sim, arXiv:2511.10909: 16-term fused groups on sm_90");
}

TEST(ModelTest, ParsesCpuExampleWithDefaults) {
  absl::StatusOr<Model> m = ParseModel(kCpu, "cpu-f32-seq.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->inputs.b, &Float32());
  EXPECT_EQ(m->product.policy, ProductPolicy::kRound);
  EXPECT_EQ(m->adder.kind, AdderKind::kIeee);
  EXPECT_EQ(m->output.format, &Float32());
  EXPECT_EQ(m->output.env.rounding, Rounding::kNearestEven);
  EXPECT_TRUE(m->unconfirmed.empty());
}

// Each row: a replacement applied to a valid file, and the expected message start.
struct BadCase {
  const char* comment;
  const char* from;
  const char* to;
  const char* expected;
};

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// Applies each row's replacement to `text`, parses the result with `parse` (ParseModel or
// ParseEnvelope) as "dir/<file>", and checks that the message starts with "dir/" + the row's.
template <typename Parse>
void ExpectBadCases(Parse parse, const char* text, const std::string& file,
                    std::span<const BadCase> cases) {
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.comment);
    const auto parsed = parse(Replace(text, c.from, c.to), "dir/" + file);
    ASSERT_FALSE(parsed.ok());
    const std::string msg(parsed.status().message());
    EXPECT_EQ(msg.rfind(std::string("dir/") + c.expected, 0), 0u) << msg;
  }
}

TEST(ModelTest, BadFilesNameFileLineAndField) {
  const BadCase cases[] = {
      {"syntax error", "group = 16", "group = = 16", "h.toml:14: TOML syntax"},
      {"unknown key", "group = 16", "group = 16\ngroups = 4", "h.toml:15: adder.groups: unknown key"},
      {"unknown table", "[chain]", "[chian]", "h.toml:"},
      {"group out of range", "group = 16", "group = 0",
       "h.toml:14: adder.group: must be an integer in 1..256, got 0"},
      {"F out of range", "fraction_bits = 25", "fraction_bits = 200",
       "h.toml:15: adder.fraction_bits: must be an integer in 1..100, got 200"},
      {"wrong type", "group = 16", "group = \"16\"", "h.toml:14: adder.group: must be an integer"},
      {"bad format", "a = \"bfloat16\"", "a = \"bf16\"",
       "h.toml:6: inputs.a: not a float format of the table: \"bf16\""},
      {"integer format", "a = \"bfloat16\"", "a = \"int8\"", "h.toml:6: inputs.a: not a float"},
      {"bad kind", "kind = \"fused\"", "kind = \"fusd\"",
       "h.toml:13: adder.kind: must be one of ieee fma fused"},
      {"bad rounding", "normalization_rounding = \"rtz\"", "normalization_rounding = \"rup\"",
       "h.toml:18: adder.normalization_rounding: must be one of rtz rne"},
      {"missing required", "group = 16\n", "", "h.toml:12: adder.group: required key missing"},
      {"key of another kind", "kind = \"sequential\"", "kind = \"sequential\"\nblock = 4",
       "h.toml:26: chain.block: does not apply"},
      {"reduced bits too many", "format = \"float32\"\nrounding", "format = \"float32\"\n"
       "fraction_bits = 30\nrounding", "h.toml:22: accumulator.fraction_bits: must be an integer in 1..23"},
      {"provenance for absent key", "unconfirmed", "\"chain.block\" = \"x\"\nunconfirmed",
       "h.toml:46: provenance.chain.block: names a parameter the file does not set"},
      {"missing provenance", "\"adder.group\" = \"MMA-Sim, arXiv:2511.10909: 16-term fused groups "
       "on sm_90\"\n", "", "h.toml:14: adder.group: has no source"},
      {"unconfirmed names absent", "\"accumulator.rounding\", \"adder", "\"chain.ways\", \"adder",
       "h.toml:46: provenance.unconfirmed: entries must name parameters"},
      {"name vs file", "name = \"nvidia-h100-bf16\"", "name = \"h\"x", "h.toml:2: TOML syntax"},
      {"name vs stem", "name = \"nvidia-h100-bf16\"", "name = \"other\"",
       "h.toml:2: name: must equal the file's stem"},
      {"block not multiple of G", "kind = \"sequential\"", "kind = \"blocked\"\nblock = 20",
       "h.toml:26: chain.block: must be a multiple of adder.group (16)"},
      {"slice multiple not multiple of G", "kind = \"sequential\"",
       "kind = \"split_k\"\nslices = 2\nslice_multiple = 24",
       "h.toml:27: chain.slice_multiple: must be a multiple of adder.group (16)"},
      {"bad split order", "kind = \"sequential\"", "kind = \"split_k\"\nslices = 2\norder = \"up\"",
       "h.toml:27: chain.order: must be one of fixed reverse random"},
      {"missing table", "[accumulator]\nformat = \"float32\"\nrounding = \"rne\"\n", "",
       "h.toml: accumulator: required table missing"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.comment);
    std::string text = Replace(kH100, c.from, c.to);
    // The stem check needs the file name "h.toml" to match "nvidia-h100-bf16" except in the
    // stem row; use a matching directory name for the others.
    const bool stem_row = std::string(c.comment) == "name vs stem";
    absl::StatusOr<Model> m =
        ParseModel(text, stem_row ? "h.toml" : "dir/nvidia-h100-bf16.toml");
    ASSERT_FALSE(m.ok());
    std::string msg(m.status().message());
    std::string expected = c.expected;
    if (!stem_row) expected = Replace(expected, "h.toml", "dir/nvidia-h100-bf16.toml");
    EXPECT_EQ(msg.rfind(expected, 0), 0u) << msg;
  }
}

// adder.overflow and [epilogue] (MODEL_FORMAT.md), on the H100 example: overflow goes after
// normalization_rounding (line 19), the epilogue table before [output] (line 27 when there is
// no overflow line).
std::string WithOverflowAndEpilogue(const std::string& overflow, const std::string& epilogue) {
  std::string text = Replace(kH100, "normalization_rounding = \"rtz\"\n",
                             "normalization_rounding = \"rtz\"\n" + overflow);
  text = Replace(text, "[output]", epilogue + "[output]");
  std::string prov;
  if (!overflow.empty()) prov += "\"adder.overflow\" = \"x\"\n";
  if (epilogue.find("c =") != std::string::npos) prov += "\"epilogue.c\" = \"x\"\n";
  if (epilogue.find("rounding =") != std::string::npos) prov += "\"epilogue.rounding\" = \"x\"\n";
  if (epilogue.find("scale =") != std::string::npos) prov += "\"epilogue.scale\" = \"x\"\n";
  if (epilogue.find("scale_order =") != std::string::npos) prov += "\"epilogue.scale_order\" = \"x\"\n";
  return Replace(text, "unconfirmed", prov + "unconfirmed");
}

TEST(ModelTest, ParsesOverflowAndEpilogue) {
  absl::StatusOr<Model> m = ParseModel(kH100, "dir/nvidia-h100-bf16.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->adder.overflow, FusedOverflow::kIeee);  // Defaults.
  EXPECT_EQ(m->epilogue.c, EpilogueC::kChain);
  m = ParseModel(WithOverflowAndEpilogue("overflow = \"inf\"\n",
                                         "[epilogue]\nc = \"after\"\nrounding = \"rtz\"\n"),
                 "dir/nvidia-h100-bf16.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->adder.overflow, FusedOverflow::kInf);
  EXPECT_EQ(m->epilogue.c, EpilogueC::kAfter);
  EXPECT_EQ(m->epilogue.env.rounding, Rounding::kTowardZero);
  m = ParseModel(WithOverflowAndEpilogue("overflow = \"ieee\"\n", "[epilogue]\nc = \"chain\"\n"),
                 "dir/nvidia-h100-bf16.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->adder.overflow, FusedOverflow::kIeee);
  EXPECT_EQ(m->epilogue.c, EpilogueC::kChain);
  m = ParseModel(WithOverflowAndEpilogue("", "[epilogue]\nc = \"after\"\n"),
                 "dir/nvidia-h100-bf16.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->epilogue.env.rounding, Rounding::kNearestEven);  // Default rne.
}

// epilogue.scale and scale_order (MODEL_FORMAT.md; accumulation/epilogue.h): the defaults are
// what every model did before the keys (row/column scales, product order).
TEST(ModelTest, ParsesTheScaleStage) {
  absl::StatusOr<Model> m = ParseModel(kH100, "dir/nvidia-h100-bf16.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->epilogue.scale, EpilogueScale::kRowCol);
  EXPECT_EQ(m->epilogue.scale_order, ScaleOrder::kProduct);
  m = ParseModel(WithOverflowAndEpilogue("", "[epilogue]\nc = \"after\"\nscale = \"tensor\"\n"
                                             "scale_order = \"sequential\"\n"),
                 "dir/nvidia-h100-bf16.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->epilogue.scale, EpilogueScale::kTensor);
  EXPECT_EQ(m->epilogue.scale_order, ScaleOrder::kSequential);
  m = ParseModel(WithOverflowAndEpilogue("", "[epilogue]\nc = \"chain\"\nscale = \"none\"\n"),
                 "dir/nvidia-h100-bf16.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->epilogue.scale, EpilogueScale::kNone);
  m = ParseModel(WithOverflowAndEpilogue("", "[epilogue]\nc = \"chain\"\nscale = \"row_col\"\n"
                                             "scale_order = \"product\"\n"),
                 "dir/nvidia-h100-bf16.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->epilogue.scale, EpilogueScale::kRowCol);
  EXPECT_EQ(m->epilogue.scale_order, ScaleOrder::kProduct);
}

TEST(ModelTest, OverflowAndEpilogueErrorsNameFileLineAndField) {
  struct {
    const char* comment;
    std::string text;
    const char* expected;
  } const cases[] = {
      {"overflow value", WithOverflowAndEpilogue("overflow = \"saturate\"\n", ""),
       "h.toml:19: adder.overflow: must be one of ieee inf"},
      {"overflow on an ieee adder",
       Replace(Replace(kCpu, "rounding = \"rne\"\n\n[accumulator]",
                       "rounding = \"rne\"\noverflow = \"inf\"\n\n[accumulator]"),
               "\"adder.rounding\"", "\"adder.overflow\" = \"x\"\n\"adder.rounding\""),
       "cpu-f32-seq.toml:16: adder.overflow: applies only to adder.kind = \"fused\""},
      {"epilogue c value", WithOverflowAndEpilogue("", "[epilogue]\nc = \"later\"\n"),
       "h.toml:28: epilogue.c: must be one of chain after"},
      {"epilogue c missing", WithOverflowAndEpilogue("", "[epilogue]\n"),
       "h.toml:27: epilogue.c: required key missing"},
      {"epilogue rounding with c in the chain",
       WithOverflowAndEpilogue("", "[epilogue]\nc = \"chain\"\nrounding = \"rne\"\n"),
       "h.toml:29: epilogue.rounding: applies only with epilogue.c = \"after\" or \"after_scale\""},
      {"epilogue stochastic rounding",
       WithOverflowAndEpilogue("", "[epilogue]\nc = \"after\"\nrounding = \"sr8\"\n"),
       "h.toml:29: epilogue.rounding: must be one of rne rna rtz rup rdn"},
      {"epilogue scale value",
       WithOverflowAndEpilogue("", "[epilogue]\nc = \"chain\"\nscale = \"tile\"\n"),
       "h.toml:29: epilogue.scale: must be one of none tensor row_col block, got \"tile\""},
      {"epilogue after_scale with the sequential order",
       WithOverflowAndEpilogue("", "[epilogue]\nc = \"after_scale\"\nscale_order = \"sequential\"\n"),
       "h.toml:28: epilogue.c: \"after_scale\" adds c in one rounding with the combined scale"},
      {"epilogue block scale without its block",
       WithOverflowAndEpilogue("", "[epilogue]\nc = \"chain\"\nscale = \"block\"\n"),
       "h.toml:27: epilogue.scale_block: required key missing"},
      {"epilogue scale_order value",
       WithOverflowAndEpilogue("", "[epilogue]\nc = \"chain\"\nscale_order = \"ba\"\n"),
       "h.toml:29: epilogue.scale_order: must be one of product sequential, got \"ba\""},
      {"epilogue scale_order without scales",
       WithOverflowAndEpilogue("", "[epilogue]\nc = \"chain\"\nscale = \"none\"\n"
                                   "scale_order = \"product\"\n"),
       "h.toml:30: epilogue.scale_order: applies only with epilogue.scale = \"tensor\" or \"row_col\""},
      {"epilogue scale without provenance",
       Replace(WithOverflowAndEpilogue("", "[epilogue]\nc = \"chain\"\nscale = \"tensor\"\n"),
               "\"epilogue.scale\" = \"x\"\n", ""),
       "h.toml:29: epilogue.scale: has no source"},
      {"epilogue unknown key", WithOverflowAndEpilogue("", "[epilogue]\nc = \"after\"\nalpha = 2\n"),
       "h.toml:29: epilogue.alpha: unknown key"},
      {"epilogue without provenance",
       Replace(WithOverflowAndEpilogue("", "[epilogue]\nc = \"after\"\n"),
               "\"epilogue.c\" = \"x\"\n", ""),
       "h.toml:28: epilogue.c: has no source"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.comment);
    const bool cpu = std::string_view(c.expected).starts_with("cpu-f32-seq.toml");
    absl::StatusOr<Model> m =
        ParseModel(c.text, cpu ? "dir/cpu-f32-seq.toml" : "dir/nvidia-h100-bf16.toml");
    ASSERT_FALSE(m.ok());
    const std::string msg(m.status().message());
    const std::string expected =
        "dir/" + (cpu ? std::string(c.expected) : Replace(c.expected, "h.toml", "nvidia-h100-bf16.toml"));
    EXPECT_EQ(msg.rfind(expected, 0), 0u) << msg;
  }
}

// adder.kind = "integer" (MODEL_FORMAT.md): int8 / uint8 inputs, exact products and sums in
// int32, one output conversion.
constexpr char kInt8[] = R"toml(name = "int8-int32"
description = "int8 GEMM"
[inputs]
a = "int8"
b = "uint8"
[adder]
kind = "integer"
[accumulator]
format = "int32"
[chain]
kind = "sequential"
[output]
format = "float32"
[provenance]
"inputs.a" = "x"
"inputs.b" = "x"
"adder.kind" = "x"
"accumulator.format" = "x"
"chain.kind" = "x"
"output.format" = "x"
)toml";

TEST(ModelTest, ParsesIntegerAdder) {
  absl::StatusOr<Model> m = ParseModel(kInt8, "dir/int8-int32.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->inputs.a, &Int8());
  EXPECT_EQ(m->inputs.b, &UInt8());
  EXPECT_EQ(m->adder.kind, AdderKind::kInteger);
  EXPECT_EQ(m->accumulator.format, &Int32());
  EXPECT_EQ(m->output.format, &Float32());
  // Without [output]: the int32 itself.
  m = ParseModel(Replace(Replace(kInt8, "[output]\nformat = \"float32\"\n", ""),
                         "\"output.format\" = \"x\"\n", ""),
                 "dir/int8-int32.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(&m->OutputFormat(), &Int32());
}

TEST(ModelTest, IntegerAdderErrorsNameFileLineAndField) {
  struct {
    const char* comment;
    std::string text;
    const char* expected;
  } const cases[] = {
      {"float inputs", Replace(kInt8, "a = \"int8\"\nb = \"uint8\"", "a = \"float32\"\nb = \"float32\""),
       "i.toml:7: adder.kind: \"integer\" needs integer inputs (inputs.a and inputs.b: int8 or uint8)"},
      {"int32 inputs", Replace(kInt8, "a = \"int8\"", "a = \"int32\""),
       "i.toml:4: inputs.a: not a float format of the table: \"int32\" (nor an integer format of "
       "adder.kind = \"integer\")"},
      {"integer b with a float adder",
       Replace(Replace(kInt8, "a = \"int8\"", "a = \"float32\""), "kind = \"integer\"", "kind = \"fma\""),
       "i.toml:5: inputs.b: not a float format of the table: \"uint8\" (integer inputs need "
       "adder.kind = \"integer\")"},
      {"adder key", Replace(kInt8, "kind = \"integer\"\n", "kind = \"integer\"\nrounding = \"rne\"\n"),
       "i.toml:8: adder.rounding: does not apply to adder.kind = \"integer\" (every sum is exact)"},
      {"float accumulator", Replace(kInt8, "format = \"int32\"", "format = \"float32\""),
       "i.toml:9: accumulator.format: adder.kind = \"integer\" needs \"int32\""},
      {"int32 accumulator of a float adder",
       Replace(Replace(Replace(kInt8, "a = \"int8\"\nb = \"uint8\"", "a = \"float32\""),
                       "kind = \"integer\"", "kind = \"fma\""),
               "\"inputs.b\" = \"x\"\n", ""),
       "i.toml:8: accumulator.format: not a float format of the table: \"int32\""},
      {"accumulator fraction bits",
       Replace(kInt8, "format = \"int32\"\n", "format = \"int32\"\nfraction_bits = 13\n"),
       "i.toml:10: accumulator.fraction_bits: does not apply to an int32 accumulator"},
      {"chain kind", Replace(kInt8, "kind = \"sequential\"", "kind = \"pairwise\""),
       "i.toml:11: chain.kind: adder.kind = \"integer\" needs chain.kind = \"sequential\" (an exact sum "
       "has no order)"},
      {"converted inputs", Replace(Replace(kInt8, "b = \"uint8\"\n", "b = \"uint8\"\nconvert_to = \"float32\"\n"),
                                   "\"inputs.b\" = \"x\"\n", "\"inputs.b\" = \"x\"\n\"inputs.convert_to\" = \"x\"\n"),
       "i.toml:8: adder.kind: \"integer\" takes no inputs.convert_to"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.comment);
    absl::StatusOr<Model> m = ParseModel(c.text, "dir/int8-int32.toml");
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().message(), "dir/int8-int32" + std::string(c.expected).substr(1));
  }
}

TEST(ModelTest, GarbageNeverCrashes) {
  const char* inputs[] = {"", "\x01\x02", "[[inputs]]\na=1", "inputs = 3", "a.b.c = [1,2",
                          "[provenance]\nunconfirmed = 3", "name = 1"};
  for (const char* s : inputs) EXPECT_FALSE(ParseModel(s, "x.toml").ok());
}

TEST(ModelTest, MissingFileIsNotFound) {
  absl::StatusOr<Model> m = LoadModelFile("/nonexistent/dir/model.toml");
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
}

// Every model file in the source tree parses.
TEST(ModelTest, EveryPresetParses) {
  std::filesystem::path dir(FPCONFORM_MODELS_SOURCE_DIR);
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no models directory yet";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".toml") continue;
    std::ifstream in(e.path(), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (IsEnvelopeText(text)) {
      // An envelope: it parses and every member is a preset that parses.
      absl::StatusOr<Envelope> env = LoadEnvelopeFile(e.path().string());
      ASSERT_TRUE(env.ok()) << env.status();
      for (const std::string& member : env->members) {
        absl::StatusOr<Model> mm = LoadModelFile((dir / (member + ".toml")).string());
        EXPECT_TRUE(mm.ok()) << e.path() << ": member " << member << ": " << mm.status();
      }
      continue;
    }
    absl::StatusOr<Model> m = LoadModelFile(e.path().string());
    EXPECT_TRUE(m.ok()) << m.status();
    ++n;
  }
  RecordProperty("models", n);
}


// ---- Keys added for kahan, ftz, simd, cascade, pairwise chunk, and envelopes. ----

// Line numbers below count from the first line of this text (line 1: name).
constexpr const char* kSimd = R"toml(name = "s"
description = "simd test"
[inputs]
a = "bfloat16"
daz = true
[adder]
kind = "fma"
ftz = true
[accumulator]
format = "float32"
[chain]
kind = "simd"
lanes = 16
unit = 2
unit_order = "reverse"
reduce = "halving"
[provenance]
"inputs.a" = "x"
"inputs.daz" = "x"
"adder.kind" = "x"
"adder.ftz" = "x"
"accumulator.format" = "x"
"chain.kind" = "x"
"chain.lanes" = "x"
"chain.unit" = "x"
"chain.unit_order" = "x"
"chain.reduce" = "x"
)toml";

TEST(ModelTest, ParsesNewKeys) {
  absl::StatusOr<Model> m = ParseModel(kSimd, "dir/s.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->adder.env.flush_to_zero);
  EXPECT_EQ(m->chain.kind, ChainKind::kSimd);
  EXPECT_EQ(m->chain.lanes, 16);
  EXPECT_EQ(m->chain.unit, 2);
  EXPECT_EQ(m->chain.unit_order, UnitOrder::kReverse);
  EXPECT_EQ(m->chain.reduce, CombineOrder::kHalving);
  std::string cascade = Replace(kSimd, "kind = \"simd\"", "kind = \"cascade\"");
  for (const char* k : {"unit = 2\n", "unit_order = \"reverse\"\n", "reduce = \"halving\"\n",
                        "\"chain.unit\" = \"x\"\n", "\"chain.unit_order\" = \"x\"\n",
                        "\"chain.reduce\" = \"x\"\n"}) {
    cascade = Replace(cascade, k, "");
  }
  m = ParseModel(cascade, "dir/s.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->chain.kind, ChainKind::kCascade);
  EXPECT_EQ(m->chain.lanes, 16);
}

TEST(ModelTest, NewKeysErrorsNameFileLineAndField) {
  const BadCase cases[] = {
      {"ftz type", "ftz = true", "ftz = 1", "s.toml:8: adder.ftz: must be true or false"},
      {"daz on kahan", "kind = \"fma\"\nftz = true", "kind = \"kahan\"\ndaz = true",
       "s.toml:8: adder.daz: applies only to adder.kind = \"ieee\" or \"fma\""},
      {"ftz on fused", "kind = \"fma\"\nftz = true",
       "kind = \"fused\"\nftz = true\ngroup = 2\nfraction_bits = 24",
       "s.toml:8: adder.ftz: does not apply to a fused adder"},
      {"kahan needs sequential", "kind = \"fma\"", "kind = \"kahan\"",
       "s.toml:12: chain.kind: adder.kind = \"kahan\" needs chain.kind = \"sequential\""},
      {"bad adder kind", "kind = \"fma\"", "kind = \"kahn\"",
       "s.toml:7: adder.kind: must be one of ieee fma fused kahan"},
      {"lanes not a power of two", "lanes = 16", "lanes = 12",
       "s.toml:13: chain.lanes: must be a power of two, got 12"},
      {"lanes missing", "lanes = 16\n", "", "s.toml:11: chain.lanes: required key missing"},
      {"unit range", "unit = 2", "unit = 0", "s.toml:14: chain.unit: must be an integer in 1..64"},
      {"unit_order value", "unit_order = \"reverse\"", "unit_order = \"odd_first\"",
       "s.toml:15: chain.unit_order: must be one of forward reverse"},
      {"reduce value", "reduce = \"halving\"", "reduce = \"tree\"",
       "s.toml:16: chain.reduce: must be one of halving sequential pairwise"},
      {"simd key on pairwise", "kind = \"simd\"", "kind = \"pairwise\"",
       "s.toml:13: chain.lanes: does not apply to this chain.kind"},
      {"chunk range", "kind = \"simd\"\nlanes = 16\nunit = 2\nunit_order = \"reverse\"\n"
       "reduce = \"halving\"", "kind = \"pairwise\"\nchunk = 0",
       "s.toml:13: chain.chunk: must be an integer in 1..1073741824, got 0"},
      {"simd key on tree", "kind = \"simd\"", "kind = \"tree\"\nshape = \"(0 1)\"",
       "s.toml:14: chain.lanes: does not apply to this chain.kind"},
      {"envelope read as model", "name = \"s\"", "envelope = [\"a\", \"b\"]\nname = \"s\"",
       "s.toml:1: envelope: this file is an envelope, not a model"},
  };
  ExpectBadCases(ParseModel, kSimd, "s.toml", cases);
}

// ---- chain.kind = "blocked" with chain.tail (the OpenBLAS K partition). ----

// Line numbers below count from the first line of this text (line 1: name).
constexpr const char* kBlockedTail = R"toml(name = "b"
description = "blocked tail test"
[inputs]
a = "float32"
[product]
policy = "exact"
[adder]
kind = "fma"
[accumulator]
format = "float32"
[chain]
kind = "blocked"
block = 448
tail = "halve_down"
tail_multiple = 16
[provenance]
"inputs.a" = "x"
"product.policy" = "x"
"adder.kind" = "x"
"accumulator.format" = "x"
"chain.kind" = "x"
"chain.block" = "x"
"chain.tail" = "x"
"chain.tail_multiple" = "x"
)toml";

// The blocks BlockedBlockEnd cuts a length-k chain into.
std::vector<int> Blocks(const Model::Chain& ch, int k) {
  std::vector<int> sizes;
  for (int i = 0; i < k;) {
    const int end = BlockedBlockEnd(ch, i, k);
    if (end <= i || end > k) {
      ADD_FAILURE() << "block end " << end << " after " << i << " of " << k;
      break;
    }
    sizes.push_back(end - i);
    i = end;
  }
  return sizes;
}

TEST(ModelTest, BlockedTailCutsAsOpenBlas) {
  absl::StatusOr<Model> m = ParseModel(kBlockedTail, "dir/b.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->chain.tail, BlockTail::kHalveDown);
  EXPECT_EQ(m->chain.tail_multiple, 16);
  Model::Chain ch = m->chain;
  // MODEL_FORMAT.md's example, K = 1000: level3.c (one thread) and level3_thread.c.
  EXPECT_EQ(Blocks(ch, 1000), (std::vector<int>{448, 288, 264}));
  // K = 1024 as the probe of np.matmul showed (fpconform reveal --from, SOURCES.md §4c).
  EXPECT_EQ(Blocks(ch, 1024), (std::vector<int>{448, 288, 288}));
  EXPECT_EQ(Blocks(ch, 896), (std::vector<int>{448, 448}));
  EXPECT_EQ(Blocks(ch, 449), (std::vector<int>{224, 225}));  // floor(449/2) = 224 = 14 * 16.
  EXPECT_EQ(Blocks(ch, 460), (std::vector<int>{240, 220}));  // floor(460/2) = 230 -> 240.
  EXPECT_EQ(Blocks(ch, 448), (std::vector<int>{448}));
  EXPECT_EQ(Blocks(ch, 1), (std::vector<int>{1}));
  ch.tail = BlockTail::kHalveUp;
  ch.tail_multiple = 1;
  EXPECT_EQ(Blocks(ch, 1000), (std::vector<int>{448, 276, 276}));
  EXPECT_EQ(Blocks(ch, 449), (std::vector<int>{225, 224}));
  EXPECT_EQ(Blocks(ch, 2000), (std::vector<int>{448, 448, 448, 328, 328}));
  ch.tail = BlockTail::kFixed;
  EXPECT_EQ(Blocks(ch, 1000), (std::vector<int>{448, 448, 104}));
  // A multiple larger than the rest is capped at the rest: never an empty last block.
  ch.block = 4;
  ch.tail = BlockTail::kHalveDown;
  ch.tail_multiple = 16;
  EXPECT_EQ(Blocks(ch, 7), (std::vector<int>{7}));
  // Every K up to 3000: the blocks cover [0, K) in order (Blocks checks progress) and only the
  // last two may differ from `block`.
  for (BlockTail t : {BlockTail::kFixed, BlockTail::kHalveDown, BlockTail::kHalveUp}) {
    ch = m->chain;
    ch.tail = t;
    for (int k = 1; k <= 3000; ++k) {
      const std::vector<int> b = Blocks(ch, k);
      int sum = 0;
      for (size_t i = 0; i < b.size(); ++i) {
        sum += b[i];
        if (i + 2 < b.size()) {
          EXPECT_EQ(b[i], 448) << "k " << k;
        }
      }
      EXPECT_EQ(sum, k);
    }
  }
}

TEST(ModelTest, BlockedTailErrorsNameFileLineAndField) {
  const BadCase cases[] = {
      {"tail value", "tail = \"halve_down\"", "tail = \"halves\"",
       "b.toml:14: chain.tail: must be one of fixed halve_down halve_up"},
      {"tail_multiple without a halving tail", "tail = \"halve_down\"", "tail = \"fixed\"",
       "b.toml:15: chain.tail_multiple: applies only with chain.tail = \"halve_down\" or "
       "\"halve_up\""},
      {"tail_multiple range", "tail_multiple = 16", "tail_multiple = 0",
       "b.toml:15: chain.tail_multiple: must be an integer in 1..1073741824, got 0"},
      {"tail on sequential", "kind = \"blocked\"\nblock = 448", "kind = \"sequential\"",
       "b.toml:13: chain.tail: does not apply to this chain.kind"},
  };
  ExpectBadCases(ParseModel, kBlockedTail, "b.toml", cases);
}

// ---- chain.kind = "tree" (MODEL_FORMAT.md): chain.shape. ----

// Line numbers below count from the first line of this text (line 1: name).
constexpr const char* kTree = R"toml(name = "t"
description = "tree test"
[inputs]
a = "float32"
[adder]
kind = "ieee"
[accumulator]
format = "float32"
[chain]
kind = "tree"
shape = "((0 1) (2 3))"
[provenance]
"inputs.a" = "x"
"adder.kind" = "x"
"accumulator.format" = "x"
"chain.kind" = "x"
"chain.shape" = "x"
)toml";

// chain.permutation, on the blocked test text (line 16: permutation).
TEST(ModelTest, ParsesPermutation) {
  const std::string with = Replace(
      Replace(kBlockedTail, "tail_multiple = 16\n", "tail_multiple = 16\npermutation = \" 2 0\t3 1 \"\n"),
      "\"chain.tail_multiple\" = \"x\"\n", "\"chain.tail_multiple\" = \"x\"\n\"chain.permutation\" = \"x\"\n");
  absl::StatusOr<Model> m = ParseModel(with, "dir/b.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->chain.permutation, (std::vector<int>{2, 0, 3, 1}));
  m = ParseModel(kBlockedTail, "dir/b.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->chain.permutation.empty());
  // Any chain kind takes it (here sequential, with a one-entry identity).
  m = ParseModel(Replace(Replace(with, "kind = \"blocked\"\nblock = 448\ntail = \"halve_down\"\n"
                                       "tail_multiple = 16\n", "kind = \"sequential\"\n"),
                         "\"chain.block\" = \"x\"\n\"chain.tail\" = \"x\"\n\"chain.tail_multiple\" = \"x\"\n", ""),
                 "dir/b.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->chain.kind, ChainKind::kSequential);

  struct {
    const char* text;
    const char* expected;
  } const bad[] = {
      {"\"\"", "dir/b.toml:16: chain.permutation: empty permutation"},
      {"\"0 1 1\"", "dir/b.toml:16: chain.permutation: duplicate index 1"},
      {"\"0 3 1\"", "dir/b.toml:16: chain.permutation: index 3 out of range 0..2 (3 entries)"},
      {"\"0,1\"", "dir/b.toml:16: chain.permutation: unexpected character ',' at column 2"},
      {"\"0 -1\"", "dir/b.toml:16: chain.permutation: unexpected character '-' at column 3"},
      {"[0, 1]", "dir/b.toml:16: chain.permutation: must be a string"},
  };
  for (const auto& c : bad) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<Model> b = ParseModel(Replace(with, "\" 2 0\t3 1 \"", c.text), "dir/b.toml");
    ASSERT_FALSE(b.ok());
    const std::string msg(b.status().message());
    EXPECT_EQ(msg.rfind(c.expected, 0), 0u) << msg;
  }
  // Missing provenance.
  absl::StatusOr<Model> b = ParseModel(Replace(with, "\"chain.permutation\" = \"x\"\n", ""),
                                       "dir/b.toml");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("dir/b.toml:16: chain.permutation: has no source"),
            std::string_view::npos)
      << b.status();
}

TEST(ModelTest, ParsesTreeShape) {
  absl::StatusOr<Model> m = ParseModel(kTree, "dir/t.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->chain.kind, ChainKind::kTree);
  EXPECT_EQ(m->chain.tree_units, 4);
  // Pre-order: list(0) -> {list(1) -> {leaf 0, leaf 1}, list(4) -> {leaf 2, leaf 3}}.
  const auto& t = m->chain.tree;
  ASSERT_EQ(t.size(), 7u);
  EXPECT_EQ(m->chain.tree_root, 0);
  EXPECT_EQ(t[0].unit, -1);
  EXPECT_EQ(t[0].children, (std::vector<int>{1, 4}));
  EXPECT_EQ(t[1].children, (std::vector<int>{2, 3}));
  EXPECT_EQ(t[2].unit, 0);
  EXPECT_EQ(t[3].unit, 1);
  EXPECT_EQ(t[4].children, (std::vector<int>{5, 6}));
  EXPECT_EQ(t[5].unit, 2);
  EXPECT_EQ(t[6].unit, 3);
  // `fpconform models show` lists the parameters generically: chain.shape is among them.
  bool listed = false;
  for (const auto& [k, v] : m->parameters) {
    listed |= k == "chain.shape" && v == "\"((0 1) (2 3))\"";
  }
  EXPECT_TRUE(listed);

  // A flat list, whitespace of every kind, a single leaf, and a permuted deep tree.
  m = ParseModel(Replace(kTree, "((0 1) (2 3))", " ( 2\\t0 1\\n3 ) "), "dir/t.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->chain.tree_units, 4);
  ASSERT_EQ(m->chain.tree.size(), 5u);
  EXPECT_EQ(m->chain.tree[0].children, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(m->chain.tree[1].unit, 2);
  EXPECT_EQ(m->chain.tree[4].unit, 3);
  m = ParseModel(Replace(kTree, "((0 1) (2 3))", "0"), "dir/t.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->chain.tree_units, 1);
  ASSERT_EQ(m->chain.tree.size(), 1u);
  EXPECT_EQ(m->chain.tree[0].unit, 0);
  m = ParseModel(Replace(kTree, "((0 1) (2 3))", "(((3 1) 0) 2)"), "dir/t.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->chain.tree_units, 4);

  // 4096 leaves is the limit; one more is an error (below).
  std::string big = "(";
  for (int i = 0; i < 4096; ++i) big += std::to_string(4095 - i) + " ";
  big += ")";
  m = ParseModel(Replace(kTree, "((0 1) (2 3))", big), "dir/t.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->chain.tree_units, 4096);
  EXPECT_EQ(m->chain.tree[1].unit, 4095);
  // A fused adder takes any shape (a unit is a group).
  m = ParseModel(Replace(Replace(kTree, "kind = \"ieee\"", "kind = \"fused\"\ngroup = 4\n"
                                 "fraction_bits = 23"),
                         "\"adder.kind\" = \"x\"", "\"adder.kind\" = \"x\"\n\"adder.group\" = "
                         "\"x\"\n\"adder.fraction_bits\" = \"x\""),
                 "dir/t.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->chain.tree_units, 4);
}

TEST(ModelTest, TreeShapeErrorsNameFileLineAndField) {
  std::string too_many = "(";
  for (int i = 0; i <= 4096; ++i) too_many += std::to_string(i) + " ";
  too_many += ")";
  const struct {
    const char* comment;
    std::string shape_line;  // Replaces line 11.
    std::string expected;    // The whole message.
  } cases[] = {
      {"missing shape", "", "dir/t.toml:9: chain.shape: required key missing"},
      {"shape type", "shape = 3", "dir/t.toml:11: chain.shape: must be a string"},
      {"empty", "shape = \"  \"", "dir/t.toml:11: chain.shape: empty shape"},
      {"unmatched close", "shape = \"(0 1))\"",
       "dir/t.toml:11: chain.shape: unbalanced parentheses: unmatched ')' at column 6"},
      {"missing close", "shape = \"((0 1) (2 3)\"",
       "dir/t.toml:11: chain.shape: unbalanced parentheses: missing ')' for the '(' at column 1"},
      {"missing inner close", "shape = \"((0 1 (2 3)\"",
       "dir/t.toml:11: chain.shape: unbalanced parentheses: missing ')' for the '(' at column 2"},
      {"empty list", "shape = \"((0 1) () 2)\"",
       "dir/t.toml:11: chain.shape: empty list at column 8"},
      {"one child", "shape = \"((0) 1)\"",
       "dir/t.toml:11: chain.shape: a list needs at least 2 children (column 2)"},
      {"two trees", "shape = \"(0 1) (2 3)\"",
       "dir/t.toml:11: chain.shape: text after the tree at column 7"},
      {"bad character", "shape = \"(0, 1)\"",
       "dir/t.toml:11: chain.shape: unexpected character ',' at column 3"},
      {"negative", "shape = \"(0 -1)\"",
       "dir/t.toml:11: chain.shape: unexpected character '-' at column 4"},
      {"out of range", "shape = \"((0 1) (4 3))\"",
       "dir/t.toml:11: chain.shape: index 4 out of range 0..3 (4 leaves; index 2 is missing)"},
      {"huge index", "shape = \"(0 99999999999999999999)\"",
       "dir/t.toml:11: chain.shape: index 99999999999999999999 out of range 0..1 (2 leaves; "
       "index 1 is missing)"},
      {"duplicate", "shape = \"((0 1) (1 3))\"", "dir/t.toml:11: chain.shape: duplicate index 1"},
      {"too many leaves", "shape = \"" + too_many + "\"",
       "dir/t.toml:11: chain.shape: more than 4096 leaves"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.comment);
    std::string text = Replace(kTree, "shape = \"((0 1) (2 3))\"", c.shape_line);
    if (c.shape_line.empty()) text = Replace(text, "\"chain.shape\" = \"x\"\n", "");
    absl::StatusOr<Model> m = ParseModel(text, "dir/t.toml");
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(std::string(m.status().message()), c.expected);
  }
  // Kahan's correction does not fit a tree.
  absl::StatusOr<Model> m = ParseModel(Replace(kTree, "kind = \"ieee\"", "kind = \"kahan\""),
                                       "dir/t.toml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(std::string(m.status().message()),
            "dir/t.toml:10: chain.kind: adder.kind = \"kahan\" needs chain.kind = \"sequential\"");
}

constexpr const char* kEnvelope = R"toml(name = "e"
description = "two orders"

envelope = ["m-a", "m-b"]
[provenance]
envelope = "order undocumented"
unconfirmed = ["envelope"]
)toml";

TEST(ModelTest, ParsesEnvelope) {
  EXPECT_TRUE(IsEnvelopeText(kEnvelope));
  EXPECT_FALSE(IsEnvelopeText(kSimd));
  EXPECT_FALSE(IsEnvelopeText("envelope = "));
  absl::StatusOr<Envelope> e = ParseEnvelope(kEnvelope, "dir/e.toml");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->name, "e");
  EXPECT_EQ(e->members, (std::vector<std::string>{"m-a", "m-b"}));
  EXPECT_EQ(e->members_source, "order undocumented");
  EXPECT_TRUE(e->members_unconfirmed);
  const BadCase cases[] = {
      {"one member", "\"m-a\", \"m-b\"", "\"m-a\"", "e.toml:4: envelope: needs at least 2 models"},
      {"duplicate", "\"m-b\"]", "\"m-a\"]", "e.toml:4: envelope: \"m-a\" listed twice"},
      {"itself", "\"m-b\"]", "\"e\"]", "e.toml:4: envelope: an envelope cannot contain itself"},
      {"bad name", "\"m-b\"]", "\"../x\"]", "e.toml:4: envelope: entries must be model names"},
      {"not an array", "[\"m-a\", \"m-b\"]", "\"m-a\"", "e.toml:4: envelope: must be an array"},
      {"no source", "envelope = \"order undocumented\"\n", "",
       "e.toml:5: provenance.envelope: required key missing"},
      {"unknown key", "\nenvelope = [", "extra = 1\nenvelope = [", "e.toml:3: extra: unknown key"},
      {"stem", "name = \"e\"", "name = \"f\"", "e.toml:1: name: must equal the file's stem"},
      {"unconfirmed other", "[\"envelope\"]", "[\"chain.kind\"]",
       "e.toml:7: provenance.unconfirmed: the only entry"},
  };
  ExpectBadCases(ParseEnvelope, kEnvelope, "e.toml", cases);
}

// Envelopes through the catalog: Expand, FindEnvelope, and the errors for bad members.
TEST(ModelTest, CatalogEnvelopes) {
  ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  EXPECT_TRUE(catalog.IsEnvelope("trainium2-bf16-envelope"));
  EXPECT_FALSE(catalog.IsEnvelope("trainium2-bf16"));
  absl::StatusOr<std::vector<const Model*>> all = catalog.Expand("trainium2-bf16-envelope");
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0]->name, "trainium2-bf16-sequential");
  EXPECT_EQ((*all)[1]->name, "trainium2-bf16-pairwise");
  absl::StatusOr<std::vector<const Model*>> one = catalog.Expand("cpu-f32-seq");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->size(), 1u);
  EXPECT_EQ(catalog.FindEnvelope("cpu-f32-seq").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog.Expand("no-such").status().code(), absl::StatusCode::kNotFound);

  const TempDir tmp("model_test_envelopes");
  const std::filesystem::path dir = tmp.path();
  std::ofstream(dir / "e.toml") << "name = \"e\"\ndescription = \"d\"\n"
                                   "envelope = [\"cpu-f32-seq\", \"missing\"]\n"
                                   "[provenance]\nenvelope = \"x\"\n";
  std::filesystem::copy_file(std::filesystem::path(FPCONFORM_MODELS_SOURCE_DIR) / "cpu-f32-seq.toml",
                             dir / "cpu-f32-seq.toml",
                             std::filesystem::copy_options::overwrite_existing);
  ModelCatalog local(dir.string());
  const absl::StatusOr<Envelope>& bad = local.FindEnvelope("e");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("envelope: 'missing': unknown model"),
            std::string::npos)
      << bad.status();
  absl::StatusOr<std::vector<ModelFile>> files = local.LoadAll();
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 2u);
  EXPECT_TRUE((*files)[1].is_envelope);
  EXPECT_FALSE((*files)[1].envelope.ok());
}

// The presets the issue names exist and say what SOURCES.md says.
TEST(ModelTest, NewPresets) {
  const std::string dir = FPCONFORM_MODELS_SOURCE_DIR;
  absl::StatusOr<Model> kahan = LoadModelFile(dir + "/kahan-f32.toml");
  ASSERT_TRUE(kahan.ok()) << kahan.status();
  EXPECT_EQ(kahan->adder.kind, AdderKind::kKahan);
  absl::StatusOr<Model> bf16 = LoadModelFile(dir + "/x86-avx512bf16.toml");
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_TRUE(bf16->inputs.daz);
  EXPECT_TRUE(bf16->adder.env.flush_to_zero);
  EXPECT_EQ(bf16->chain.lanes, 16);
  EXPECT_EQ(bf16->chain.unit_order, UnitOrder::kReverse);
  absl::StatusOr<Model> torch = LoadModelFile(dir + "/torch-cpu-sum-f32.toml");
  ASSERT_TRUE(torch.ok()) << torch.status();
  EXPECT_EQ(torch->chain.kind, ChainKind::kCascade);
  absl::StatusOr<Model> numpy = LoadModelFile(dir + "/numpy-sum-f32.toml");
  ASSERT_TRUE(numpy.ok()) << numpy.status();
  EXPECT_EQ(numpy->chain.chunk, 8192);
  absl::StatusOr<Model> tp = LoadModelFile(dir + "/trainium2-bf16-pairwise.toml");
  ASSERT_TRUE(tp.ok()) << tp.status();
  EXPECT_EQ(tp->chain.chunk, 128);
  absl::StatusOr<Envelope> env = LoadEnvelopeFile(dir + "/trainium2-bf16-envelope.toml");
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_GE(env->members.size(), 2u);
  // The Hopper presets of the H200 recordings (SOURCES.md section 1b).
  absl::StatusOr<Model> mma = LoadModelFile(dir + "/nvidia-h100-fp8e4m3-mmasync.toml");
  ASSERT_TRUE(mma.ok()) << mma.status();
  EXPECT_EQ(mma->chain.kind, ChainKind::kBlocked);
  EXPECT_EQ(mma->chain.block, 32);
  EXPECT_EQ(mma->chain.permutation.size(), 32u);
  EXPECT_EQ(mma->adder.group, 16);
  EXPECT_EQ(mma->accumulator.fraction_bits, 23);
  for (const char* name : {"nvidia-h100-bf16-cublas", "nvidia-h100-fp8e4m3-cublaslt",
                           "nvidia-h100-fp8e4m3-cublaslt-fastaccum"}) {
    absl::StatusOr<Model> lib = LoadModelFile(dir + "/" + name + ".toml");
    ASSERT_TRUE(lib.ok()) << lib.status();
    // cuBLAS adds C after the chain; cuBLASLt's FP8 GEMM also after its A and B scales.
    EXPECT_EQ(lib->epilogue.c, std::string_view(name).find("fp8") != std::string_view::npos
                                   ? EpilogueC::kAfterScale
                                   : EpilogueC::kAfter)
        << name;
    EXPECT_TRUE(lib->AddsCAfterChain()) << name;
    EXPECT_EQ(lib->adder.overflow, FusedOverflow::kInf) << name;
  }
  absl::StatusOr<Model> s1688 = LoadModelFile(dir + "/nvidia-h100-tf32-cutlass-s1688.toml");
  ASSERT_TRUE(s1688.ok()) << s1688.status();
  EXPECT_EQ(s1688->inputs.convert_env.rounding, Rounding::kNearestAway);
}


// ---- Files that are not regular files, or too large: errors, never a hang, throw or OOM. ----

std::string CopyPreset(const std::string& dir, const std::string& name) {
  const std::string to = dir + "/" + name + ".toml";
  std::filesystem::copy_file(std::string(FPCONFORM_MODELS_SOURCE_DIR) + "/" + name + ".toml", to);
  return to;
}

TEST(ModelTest, NonRegularAndHugeModelFilesAreErrors) {
  TempDir tmp("model_test");
  const std::string d = tmp.path();
  CopyPreset(d, "cpu-f32-seq");
  std::filesystem::create_directory(d + "/dir.toml");
  ASSERT_EQ(mkfifo((d + "/fifo.toml").c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/zero", d + "/zero.toml");
  {
    // 1 GiB, sparse: refused by its size before a byte is read.
    std::ofstream(d + "/huge.toml") << "";
    std::filesystem::resize_file(d + "/huge.toml", uint64_t{1} << 30);
  }

  for (const char* name : {"dir", "fifo", "zero"}) {
    SCOPED_TRACE(name);
    const std::string path = d + "/" + name + ".toml";
    absl::StatusOr<Model> m = LoadModelFile(path);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find(path + ": not a regular file ("), std::string::npos)
        << m.status();
    EXPECT_FALSE(LoadEnvelopeFile(path).ok());
  }
  absl::StatusOr<Model> huge = LoadModelFile(d + "/huge.toml");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("1073741824 bytes, more than the 16777216-byte limit "
                                         "for a model file"),
            std::string::npos)
      << huge.status();

  ModelCatalog catalog(d);
  // Names: regular files only (symlinks followed), sorted.
  EXPECT_EQ(catalog.Names(), (std::vector<std::string>{"cpu-f32-seq", "huge"}));
  for (const char* name : {"dir", "fifo", "zero", "huge"}) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(catalog.IsEnvelope(name));
    const absl::StatusOr<Model>& m = catalog.Find(name);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << m.status();
    EXPECT_NE(m.status().message().find(d + "/" + name + ".toml: "), std::string::npos)
        << m.status();
    EXPECT_FALSE(catalog.FindEnvelope(name).ok());
    EXPECT_FALSE(catalog.Expand(name).ok());
  }
  EXPECT_TRUE(catalog.Find("cpu-f32-seq").ok());

  // LoadAll: every *.toml entry, the bad ones with their error, the good one parsed.
  absl::StatusOr<std::vector<ModelFile>> all = catalog.LoadAll();
  ASSERT_TRUE(all.ok()) << all.status();
  std::vector<std::string> names;
  for (const ModelFile& f : *all) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"cpu-f32-seq", "dir", "fifo", "huge", "zero"}));
  for (const ModelFile& f : *all) {
    SCOPED_TRACE(f.name);
    EXPECT_FALSE(f.is_envelope);
    EXPECT_EQ(f.model.ok(), f.name == "cpu-f32-seq") << f.model.status();
    if (f.name != "cpu-f32-seq" && f.name != "huge") {
      EXPECT_NE(f.model.status().message().find("not a regular file"), std::string::npos)
          << f.model.status();
    }
  }
}

// Names and values echoed in messages are escaped: no control bytes reach a terminal.
TEST(ModelTest, MessagesEscapeControlBytes) {
  ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  const absl::StatusOr<Model>& m = catalog.Find(std::string("a\x1b[2J\xff\0b", 8));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "bad model name 'a\\x1b[2J\\xff\\x00b' (want letters, digits, '.', '_', '-')");
  absl::StatusOr<Model> bad = ParseModel(
      Replace(kSimd, "kind = \"fma\"", "kind = \"f\\u001b[31m\""), "s.toml");
  ASSERT_FALSE(bad.ok());
  const std::string msg(bad.status().message());
  EXPECT_EQ(msg.find('\x1b'), std::string::npos) << msg;
  EXPECT_NE(msg.find("got \"f\\x1b[31m\""), std::string::npos) << msg;
  absl::StatusOr<Model> key = ParseModel("\"\\u0007bell\" = 1\n", "k.toml");
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.status().message(), "k.toml:1: \\x07bell: unknown key");
}

}  // namespace
}  // namespace fpconform
