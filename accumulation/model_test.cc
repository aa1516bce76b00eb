#include "accumulation/model.h"

#include <filesystem>
#include <string>

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
    absl::StatusOr<Model> m = LoadModelFile(e.path().string());
    EXPECT_TRUE(m.ok()) << m.status();
    ++n;
  }
  RecordProperty("models", n);
}

}  // namespace
}  // namespace fpconform
