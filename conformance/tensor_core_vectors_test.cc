// Published tensor-core behaviour as tests: the vectors of Fasi, Higham, Mikaitis & Pranesh,
// "Numerical behavior of NVIDIA tensor cores", PeerJ CS 7:e330 (2021) (subnormals, exact
// products, fp32-like accumulation, RZ output, alignment bits, no normalization inside a group,
// carry-out, non-monotonicity), run through EvaluateDot (accumulation/evaluate.h) on every
// NVIDIA preset they can be written for, with the expected results re-derived by hand from each
// preset's G (products per fused group) and F (bits kept below the group's largest exponent),
// as listed in accumulation/models/SOURCES.md ("Fasi et al. vectors, re-derived per
// architecture"). Nothing below was produced by running the code under test.
//
// The group rule used in every derivation (MODEL_FORMAT.md, adder.kind = "fused"): the terms
// are the products and the running accumulator (c for the first group); emax = the largest
// alignment exponent of the non-zero terms (a product's is E(a) + E(b), c's is E(c); E of a
// subnormal is its format's Emin); every term is truncated toward zero to a multiple of the
// quantum q = 2^(emax - F); the truncated terms are summed exactly; the sum is rounded once
// toward zero (RZ) into float32 (into float32 with 13 fraction bits for the Ada/Hopper FP8
// presets). All vectors have at most 12 non-zero products, fewer than every G they are run with
// except where a row says otherwise, so each is one group.
//
// Presets and their (G, F): V100 fp16 (4, 23); T4 fp16, A100 fp16/bf16 (8, 24); A100 tf32
// (4, 24; float32 inputs truncated to tf32 by the model); H100 fp16/bf16, B200 bf16 (16, 25);
// H100 tf32 (8, 25); Ada fp8 (16, 13) and H100 fp8 (32, 13), 13-bit accumulator; B200 fp8
// (32, 25); H100 fp8 promote128: the same 32-term groups from +0, then outer = RNE_f32(outer +
// inner) with outer starting at c (so c is outside the group: different expected values); its
// rows hold for the DeepGEMM preset (promote128 with per-block scales) with every scale 1.
//
// Which rows apply to which inputs:
//  * The fp32 D of C3 ("fp16 output RNE") has no preset (no fp16-output model): not run.
//  * FP8 inputs cannot express 2^-24-scale terms against 1 (e4m3fn products are >= 2^-18), and
//    the Ada/Hopper FP8 accumulator holds only 13 fraction bits, so the FP8 rows are the same
//    tests moved to F = 13 (terms at 2^-13/2^-14 against 1) or, for B200's F = 25, scaled by a
//    power of two so that the tiny terms are fp8 products (each row says how).
//  * A2 (c = 2^-149) is not a value of the 13-bit Ada/Hopper accumulator: not run there.
//  * D5 (non-monotonicity) is a property of c inside the group: not run on promote128.
//  * H100/B200 (F = 25) need their own D5 vector (derived below); the T4/A100 one is monotone
//    there (row D5-F24-on-F25 shows it).
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "accumulation/evaluate.h"
#include "accumulation/model.h"
#include "accumulation/model_catalog.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

using V = std::vector<uint64_t>;

struct Row {
  const char* test;                  // Fasi et al. test name (and variant).
  std::vector<const char*> presets;  // Presets this row's derivation holds for.
  V a, b;
  uint64_t c;         // In the final accumulator's format (float32).
  uint64_t expected;  // float32 bits.
};

const char* const kFp16All[] = {"nvidia-v100-fp16", "nvidia-t4-fp16", "nvidia-a100-fp16",
                                "nvidia-h100-fp16"};
std::vector<const char*> Fp16All() { return {std::begin(kFp16All), std::end(kFp16All)}; }
std::vector<const char*> Bf16All() {
  return {"nvidia-a100-bf16", "nvidia-h100-bf16", "nvidia-b200-bf16"};
}
std::vector<const char*> Tf32All() { return {"nvidia-a100-tf32", "nvidia-h100-tf32"}; }
// FP8 presets by input format and accumulator kind.
std::vector<const char*> E4m3F13() { return {"nvidia-ada-fp8e4m3", "nvidia-h100-fp8e4m3"}; }
std::vector<const char*> E5m2F13() { return {"nvidia-ada-fp8e5m2", "nvidia-h100-fp8e5m2"}; }
std::vector<const char*> E4m3Promote() { return {"nvidia-h100-fp8e4m3-promote128"}; }
std::vector<const char*> E5m2Promote() { return {"nvidia-h100-fp8e5m2-promote128"}; }
std::vector<const char*> E4m3B200() { return {"nvidia-b200-fp8e4m3"}; }
std::vector<const char*> E5m2B200() { return {"nvidia-b200-fp8e5m2"}; }
// One vector in its float16, bfloat16 and tfloat32 (float32 container) encodings, for the rows
// whose derivation holds for Fp16All(), Bf16All() and Tf32All() alike.
struct Vector16 {
  V a_fp16, b_fp16, a_bf16, b_bf16, a_tf32, b_tf32;
};
// The FP8 presets of one accumulator kind, by input format.
struct Fp8Presets {
  std::vector<const char*> e4m3, e5m2;
};
Fp8Presets F13() { return {E4m3F13(), E5m2F13()}; }
Fp8Presets Promote() { return {E4m3Promote(), E5m2Promote()}; }
Fp8Presets B200() { return {E4m3B200(), E5m2B200()}; }
// One FP8 vector in its e4m3fn and its e5m2 encodings (of the same products, or of products
// with the same derivation where a row says so).
struct Fp8Vector {
  V a_e4m3, b_e4m3, a_e5m2, b_e5m2;
};

// Encodings used below (sign | exponent | fraction, worked out from the layouts):
//  float16 (bias 15): 1 = 0x3C00, 2 = 0x4000, 4 = 0x4400, 0.5 = 0x3800, 0.25 = 0x3400,
//    0.75 = 0x3A00, 1.5 = 0x3E00, 1.75 = 0x3F00, 1.875 = 0x3F80, 1-2^-11 = 0x3BFF,
//    subnormals m*2^-24 = m (2^-24 = 0x0001, 2^-23 = 0x0002, 3*2^-24 = 0x0003).
//  bfloat16 (bias 127): 1 = 0x3F80, 2 = 0x4000, 0.5 = 0x3F00, 0.25 = 0x3E80, 0.75 = 0x3F40,
//    1.5 = 0x3FC0, 1.75 = 0x3FE0, 1.875 = 0x3FF0, 1-2^-8 = 0x3F7F, 2^7 = 0x4300,
//    2^-24 = 0x3380, 2^-23 = 0x3400, 3*2^-24 = 0x3440, 2^-133 (min subnormal) = 0x0001.
//  float32: 1 = 0x3F800000, 1-2^-24 = 0x3F7FFFFF, 1+2^-23 = 0x3F800001,
//    1+2^-22+2^-23 = 0x3F800003, 1-2^-14 = 0x3F7FFC00, 1+2^-12+2^-13 = 0x3F800C00,
//    2^-24 = 0x33800000, 2^-23 = 0x34000000, 2^-14 = 0x38800000, 2^-13 = 0x39000000,
//    2^-136 = 0x00002000 (subnormal), 2^-126 = 0x00800000, 2^-149 = 0x00000001.
//  float8_e4m3fn (bias 7, Emin -6, subnormals m*2^-9): 1 = 0x38, 2 = 0x40, 4 = 0x48, 8 = 0x50,
//    2^8 = 0x78, 1.5 = 0x3C, 1.75 = 0x3E, 1.875 = 0x3F, 1-2^-4 = 0x37, 2^-4 = 0x18,
//    2^-5 = 0x10, 1.5*2^-6 = 0x0C, 2^-7 = 0x04, 2^-9 = 0x01, 3*2^-9 = 0x03; negative: | 0x80.
//  float8_e5m2 (bias 15, Emin -14, subnormals m*2^-16): 1 = 0x3C, 2 = 0x40, 4 = 0x44, 8 = 0x48,
//    2^8 = 0x5C, 2^15 = 0x78, 1.75 = 0x3F, 1-2^-3 = 0x3B, 2^-2 = 0x34, 2^-6 = 0x24,
//    1.5*2^-6 = 0x26, 2^-7 = 0x20, 2^-9 = 0x18, 2^-16 = 0x01, 3*2^-16 = 0x03.
// An e4m3fn encoding or the e5m2 one of the same value (the mma.sync rows below run on both).
uint64_t Bits(bool e4m3, uint64_t e4m3_bits, uint64_t e5m2_bits) {
  return e4m3 ? e4m3_bits : e5m2_bits;
}

std::vector<Row> Rows() {
  std::vector<Row> r;
  auto add = [&](const char* test, std::vector<const char*> presets, V a, V b, uint64_t c,
                 uint64_t expected) { r.push_back({test, std::move(presets), a, b, c, expected}); };
  // One derivation for the float16, bfloat16 and tfloat32 inputs: v's encodings on Fp16All(),
  // Bf16All() and Tf32All().
  auto add_16 = [&](const char* test, const Vector16& v, uint64_t c, uint64_t expected) {
    add(test, Fp16All(), v.a_fp16, v.b_fp16, c, expected);
    add(test, Bf16All(), v.a_bf16, v.b_bf16, c, expected);
    add(test, Tf32All(), v.a_tf32, v.b_tf32, c, expected);
  };
  // One derivation for both FP8 inputs: v's e4m3fn encodings on p's e4m3 presets, its e5m2 ones
  // on p's e5m2 presets.
  auto add_fp8 = [&](const char* test, const Fp8Presets& p, const Fp8Vector& v, uint64_t c,
                     uint64_t expected) {
    add(test, p.e4m3, v.a_e4m3, v.b_e4m3, c, expected);
    add(test, p.e5m2, v.a_e5m2, v.b_e5m2, c, expected);
  };
  // FP8 vectors of several rows below: one = 1 * 1; ones4 = 1 * 1 (x4), ones4_neg = 1 * -1 (x4);
  // tiny4 = four products 2^-14 (e4m3fn 2^-5 * 2^-9, e5m2 2^-7 * 2^-7).
  const Fp8Vector one = {{0x38}, {0x38}, {0x3C}, {0x3C}};
  const Fp8Vector ones4 = {V(4, 0x38), V(4, 0x38), V(4, 0x3C), V(4, 0x3C)};
  const Fp8Vector ones4_neg = {V(4, 0x38), V(4, 0xB8), V(4, 0x3C), V(4, 0xBC)};
  const Fp8Vector tiny4 = {V(4, 0x10), V(4, 0x01), V(4, 0x20), V(4, 0x20)};

  // ---- A: subnormal inputs are kept (no DAZ). One product, c = 0: the result is the exact
  // product (a multiple of every quantum 2^(emax - F), emax = E(a) + E(b)), representable.
  // fp16: 2^-24 * 4 = 2^-22 = 0x34800000.
  add("A1 subnormal input", Fp16All(), {0x0001}, {0x4400}, 0, 0x34800000);
  // bf16: 2^-133 * 2^7 = 2^-126 = 0x00800000.
  add("A1 subnormal input", Bf16All(), {0x0001}, {0x4300}, 0, 0x00800000);
  // tf32: float32 0x00002000 = 2^-136, a tf32 subnormal (RZ keeps it); * 2^10 = 2^-126.
  add("A1 subnormal input", Tf32All(), {0x00002000}, {0x44800000}, 0, 0x00800000);
  // e4m3fn: 2^-9 * 2^8 = 2^-1 = 0x3F000000; e5m2: 2^-16 * 2^15 = 2^-1. (Promote: outer = +0 +
  // inner = 2^-1.)
  for (const Fp8Presets& p : {F13(), Promote(), B200()}) {
    add_fp8("A1 subnormal input (fp8)", p, {{0x01}, {0x78}, {0x01}, {0x78}}, 0, 0x3F000000);
  }
  // A2: subnormal c = 2^-149 with zero products: the only non-zero term, emax = Emin = -126,
  // q = 2^(-126 - F) <= 2^-149 for F >= 23: kept. Promote: RNE(2^-149 + 0) = 2^-149.
  add("A2 subnormal c", Fp16All(), {0}, {0}, 0x00000001, 0x00000001);
  add("A2 subnormal c", Bf16All(), {0}, {0}, 0x00000001, 0x00000001);
  add("A2 subnormal c", Tf32All(), {0}, {0}, 0x00000001, 0x00000001);
  for (auto p : {E4m3Promote(), E5m2Promote(), E4m3B200(), E5m2B200()}) {
    add("A2 subnormal c", p, {0}, {0}, 0x00000001, 0x00000001);
  }

  // ---- B1: products are exact. a_i = b_i = x (4 products), c = 0, one group.
  // fp16 x = 1-2^-11: x^2 = 1 - 2^-10 + 2^-22, E = -1 + -1 = -2, so its lowest bit 2^-22 is 20
  // bits below emax (<= F); 4x^2 = 4 - 2^-8 + 2^-20 = 2^1 * (1 + (1 - 2^-9) + 2^-21):
  // fraction 0x7FC000 + 0x4 -> 0x407FC004 (a product rounded to fp32 first would give 4 - 2^-8).
  add("B1 exact products", Fp16All(), {0x3BFF, 0x3BFF, 0x3BFF, 0x3BFF},
      {0x3BFF, 0x3BFF, 0x3BFF, 0x3BFF}, 0, 0x407FC004);
  // bf16 x = 1-2^-8: 4x^2 = 4 - 2^-5 + 2^-14 = 2^1 * (1 + (1 - 2^-6) + 2^-15): 0x407E0100.
  add("B1 exact products", Bf16All(), {0x3F7F, 0x3F7F, 0x3F7F, 0x3F7F},
      {0x3F7F, 0x3F7F, 0x3F7F, 0x3F7F}, 0, 0x407E0100);
  // tf32: float32 1-2^-24 truncates (RZ) to tf32 1-2^-11, then as fp16: 0x407FC004 (RNE
  // conversion would give 1 and 4.0 = 0x40800000).
  add("B1 exact products, tf32 RZ input", Tf32All(),
      {0x3F7FFFFF, 0x3F7FFFFF, 0x3F7FFFFF, 0x3F7FFFFF},
      {0x3F7FFFFF, 0x3F7FFFFF, 0x3F7FFFFF, 0x3F7FFFFF}, 0, 0x407FC004);
  // e4m3fn x = 1-2^-4 = 0.9375: 4x^2 = 4 - 2^-1 + 2^-6 = 3.515625 = 2 * (1 + 0.75 + 2^-7),
  // fraction 0x610000; exact in 13 fraction bits too (lowest bit 2^-6, ulp 2^-12); q = 2^-15.
  for (auto p : {E4m3F13(), E4m3Promote(), E4m3B200()}) {
    add("B1 exact products (fp8)", p, {0x37, 0x37, 0x37, 0x37}, {0x37, 0x37, 0x37, 0x37}, 0,
        0x40610000);
  }
  // e5m2 x = 1-2^-3 = 0.875: 4x^2 = 3.0625 = 2 * (1 + 2^-1 + 2^-5): 0x40440000.
  for (auto p : {E5m2F13(), E5m2Promote(), E5m2B200()}) {
    add("B1 exact products (fp8)", p, {0x3B, 0x3B, 0x3B, 0x3B}, {0x3B, 0x3B, 0x3B, 0x3B}, 0,
        0x40440000);
  }

  // ---- B2: fp32-like accumulation: c = 1 sets emax = 0, q = 2^-F; products of 2^-(F+1) are
  // truncated to 0 and the result is 1 = 0x3F800000, while the exact value 1 + n*2^-(F+1) is
  // a float32 number (so a wider accumulator would show it).
  // V100 (F = 23): a_i = 1, b_i = 2^-24 (x4): exact 1 + 2^-22.
  add("B2 fp32 accumulation", {"nvidia-v100-fp16"}, {0x3C00, 0x3C00, 0x3C00, 0x3C00},
      {0x0001, 0x0001, 0x0001, 0x0001}, 0x3F800000, 0x3F800000);
  // F = 24: a_i = 0.5, b_i = 2^-24: products 2^-25 < q = 2^-24; exact 1 + 2^-23.
  add("B2 fp32 accumulation", {"nvidia-t4-fp16", "nvidia-a100-fp16"},
      {0x3800, 0x3800, 0x3800, 0x3800}, {0x0001, 0x0001, 0x0001, 0x0001}, 0x3F800000,
      0x3F800000);
  add("B2 fp32 accumulation", {"nvidia-a100-bf16"}, {0x3F00, 0x3F00, 0x3F00, 0x3F00},
      {0x3380, 0x3380, 0x3380, 0x3380}, 0x3F800000, 0x3F800000);
  add("B2 fp32 accumulation", {"nvidia-a100-tf32"},
      {0x3F000000, 0x3F000000, 0x3F000000, 0x3F000000},
      {0x33800000, 0x33800000, 0x33800000, 0x33800000}, 0x3F800000, 0x3F800000);
  // F = 25: eight products a_i = 0.25, b_i = 2^-24 -> 2^-26 < q = 2^-25; exact 1 + 8 * 2^-26 =
  // 1 + 2^-23 (four would give 1 + 2^-24, not a float32: RZ of the exact value is also 1).
  // Eight terms fit G = 16 and the H100 tf32 G = 8.
  add("B2 fp32 accumulation (8 terms)", {"nvidia-h100-fp16"}, V(8, 0x3400), V(8, 0x0001),
      0x3F800000, 0x3F800000);
  add("B2 fp32 accumulation (8 terms)", {"nvidia-h100-bf16", "nvidia-b200-bf16"},
      V(8, 0x3E80), V(8, 0x3380), 0x3F800000, 0x3F800000);
  add("B2 fp32 accumulation (8 terms)", {"nvidia-h100-tf32"}, V(8, 0x3E800000),
      V(8, 0x33800000), 0x3F800000, 0x3F800000);
  // F = 13 (13-bit accumulator): products 2^-14 < q = 2^-13 (e4m3fn 2^-5 * 2^-9; e5m2
  // 2^-7 * 2^-7); exact 1 + 4 * 2^-14 = 1 + 2^-12, representable with 13 fraction bits.
  add_fp8("B2 fp32 accumulation (fp8, F=13)", F13(), tiny4, 0x3F800000, 0x3F800000);
  // Promote128: the products form their own group from +0 (emax = E(a)+E(b) <= -11, nothing
  // truncated): inner = 2^-12, then outer = RNE(1 + 2^-12) = 0x3F800800.
  add_fp8("B2 promote keeps the small terms", Promote(), tiny4, 0x3F800000, 0x3F800800);
  // B200 fp8 (F = 25), scaled by 2^8: c = 256 (0x43800000), eight products 2^-9 * 2^-9 = 2^-18 <
  // q = 2^(8-25) = 2^-17 -> 256; exact 256 + 2^-15 = 0x43800001 is a float32.
  add_fp8("B2 fp32 accumulation (fp8, x2^8)", B200(),
          {V(8, 0x01), V(8, 0x01), V(8, 0x18), V(8, 0x18)}, 0x43800000, 0x43800000);

  // ---- C1/C2: the fp32 result rounds toward zero. a_i = 1, b = (2, 3*2^-24, 0, 0), c = 0:
  // exact 2 + 3*2^-24 = 2 + 0.75 ulp(2). emax = 1: F = 23 truncates the small product (q =
  // 2^-22); F = 24 keeps 2^-23 (2 + 2^-23, a tie: RZ and RNE both give 2); F = 25 keeps all
  // (RZ gives 2, RNE would give 2 + 2^-22). Result 2 = 0x40000000; negated b: -2 = 0xC0000000.
  add_16("C1 RZ positive",
         {V(4, 0x3C00), {0x4000, 0x0003, 0, 0}, V(4, 0x3F80), {0x4000, 0x3440, 0, 0},
          V(4, 0x3F800000), {0x40000000, 0x34400000, 0, 0}},
         0, 0x40000000);
  add_16("C2 RZ negative",
         {V(4, 0x3C00), {0xC000, 0x8003, 0, 0}, V(4, 0x3F80), {0xC000, 0xB440, 0, 0},
          V(4, 0x3F800000), {0xC0000000, 0xB4400000, 0, 0}},
         0, 0xC0000000);
  // F = 13: 1*2 + (1.5*2^-6)(2^-7) = 2 + 1.5*2^-13 = 2 + 0.75 ulp_13(2); q = 2^-12 drops the
  // small product: 2. Promote: inner = 2, outer = +0 + 2.
  for (const Fp8Presets& p : {F13(), Promote()}) {
    add_fp8("C1 RZ positive (fp8)", p, {{0x38, 0x0C}, {0x40, 0x04}, {0x3C, 0x26}, {0x40, 0x20}}, 0,
            0x40000000);
    add_fp8("C2 RZ negative (fp8)", p, {{0x38, 0x0C}, {0xC0, 0x84}, {0x3C, 0x26}, {0xC0, 0xA0}}, 0,
            0xC0000000);
  }
  // B200 fp8 (F = 25), scaled by 2^10: 2^8 * 2^3 + 1.5*2^-13 = 2048 + 0.75 ulp(2048);
  // emax = 11, q = 2^-14 keeps 3*2^-14 exactly; RZ -> 2048 = 0x45000000 (RNE: 0x45000001).
  add_fp8("C1 RZ positive (fp8, x2^10)", B200(),
          {{0x78, 0x0C}, {0x50, 0x04}, {0x5C, 0x26}, {0x48, 0x20}}, 0, 0x45000000);
  add_fp8("C2 RZ negative (fp8, x2^10)", B200(),
          {{0x78, 0x0C}, {0xD0, 0x84}, {0x5C, 0x26}, {0xC8, 0xA0}}, 0, 0xC5000000);

  // ---- D1: alignment bits. a0 = b0 = 1, c = -(1 - 2^-24); exact 2^-24. emax = 0, q = 2^-F:
  // F = 23 truncates c to -(1 - 2^-23): 2^-23 = 0x34000000; F >= 24 keeps it: 0x33800000.
  add("D1 alignment bits", {"nvidia-v100-fp16"}, {0x3C00}, {0x3C00}, 0xBF7FFFFF, 0x34000000);
  add("D1 alignment bits", {"nvidia-t4-fp16", "nvidia-a100-fp16", "nvidia-h100-fp16"},
      {0x3C00}, {0x3C00}, 0xBF7FFFFF, 0x33800000);
  add("D1 alignment bits", Bf16All(), {0x3F80}, {0x3F80}, 0xBF7FFFFF, 0x33800000);
  add("D1 alignment bits", Tf32All(), {0x3F800000}, {0x3F800000}, 0xBF7FFFFF, 0x33800000);
  add_fp8("D1 alignment bits", B200(), one, 0xBF7FFFFF, 0x33800000);
  // F = 13: c = -(1 - 2^-14) (a 13-bit value), q = 2^-13 truncates it to -(1 - 2^-13):
  // 2^-13 = 0x39000000 (exact 2^-14).
  add_fp8("D1 alignment bits (F=13)", F13(), one, 0xBF7FFC00, 0x39000000);
  // Promote: inner = 1; outer = RNE(-(1 - 2^-24) + 1) = 2^-24 exactly: 0x33800000.
  add_fp8("D1 promote: c outside the group", Promote(), one, 0xBF7FFFFF, 0x33800000);

  // ---- D2: no normalization inside the group (additions). a_i = 1, b_i = 2^-24 (x4),
  // c = 1 - 2^-24: emax = E(c) = -1, q = 2^(-1-F) <= 2^-24 keeps every term; the sum
  // 1 + 3*2^-24 is normalized once and RZ gives 1 + 2^-23 = 0x3F800001 (normalizing after c + p0
  // = 1 would lose the later 2^-24 terms).
  add_16("D2 no normalization (add)",
         {V(4, 0x3C00), V(4, 0x0001), V(4, 0x3F80), V(4, 0x3380), V(4, 0x3F800000),
          V(4, 0x33800000)},
         0x3F7FFFFF, 0x3F800001);
  // F = 13: products 2^-14, c = 1 - 2^-14, q = 2^-14: 1 + 3*2^-14 -> RZ_13 -> 1 + 2^-13 =
  // 0x3F800400.
  add_fp8("D2 no normalization (add, F=13)", F13(), tiny4, 0x3F7FFC00, 0x3F800400);
  // Promote: inner = 4 * 2^-14 = 2^-12 (exact); outer = RNE(1 - 2^-14 + 2^-12) = 1 + 3*2^-14,
  // a float32: 0x3F800600.
  add_fp8("D2 promote", Promote(), tiny4, 0x3F7FFC00, 0x3F800600);
  // B200 fp8, scaled by 2^6: c = 64(1 - 2^-24) = 0x427FFFFF (E = 5), products 2^-9 * 2^-9 =
  // 2^-18 (x4), q = 2^(5-25) = 2^-20 keeps all: 64 + 3*2^-18 -> RZ (ulp 2^-17) -> 64 + 2^-17 =
  // 0x42800001.
  add_fp8("D2 no normalization (add, fp8 x2^6)", B200(),
          {V(4, 0x01), V(4, 0x01), V(4, 0x18), V(4, 0x18)}, 0x427FFFFF, 0x42800001);

  // ---- D3: no normalization (subtraction). a = (1, 1), b = (1, -2^-24), c = -(1 - 2^-24);
  // exact 0. emax = 0: F = 23 truncates c to -(1 - 2^-23) and -2^-24 to 0: 2^-23 = 0x34000000;
  // F >= 24 keeps all: exact zero, +0.
  add("D3 no normalization (sub)", {"nvidia-v100-fp16"}, {0x3C00, 0x3C00}, {0x3C00, 0x8001},
      0xBF7FFFFF, 0x34000000);
  add("D3 no normalization (sub)", {"nvidia-t4-fp16", "nvidia-a100-fp16", "nvidia-h100-fp16"},
      {0x3C00, 0x3C00}, {0x3C00, 0x8001}, 0xBF7FFFFF, 0x00000000);
  add("D3 no normalization (sub)", Bf16All(), {0x3F80, 0x3F80}, {0x3F80, 0xB380}, 0xBF7FFFFF,
      0x00000000);
  add("D3 no normalization (sub)", Tf32All(), {0x3F800000, 0x3F800000},
      {0x3F800000, 0xB3800000}, 0xBF7FFFFF, 0x00000000);
  // F = 13: p1 = -2^-14, c = -(1 - 2^-14), q = 2^-13: 1 - (1 - 2^-13) - 0 = 2^-13 = 0x39000000.
  const Fp8Vector d3 = {{0x38, 0x10}, {0x38, 0x81}, {0x3C, 0x20}, {0x3C, 0xA0}};
  add_fp8("D3 no normalization (sub, F=13)", F13(), d3, 0xBF7FFC00, 0x39000000);
  // Promote: inner = group(1, -2^-14) from +0, q = 2^-13 drops -2^-14: 1; outer =
  // RNE(-(1 - 2^-14) + 1) = 2^-14 = 0x38800000 (exact value 0).
  add_fp8("D3 promote", Promote(), d3, 0xBF7FFC00, 0x38800000);
  // B200 fp8, scaled by 2^6: products 8*8 = 64 and 2^-9 * -2^-9 = -2^-18, c = -(64 - 2^-18) =
  // 0xC27FFFFF; emax = 6, q = 2^-19 keeps all: exact zero, +0.
  add_fp8("D3 no normalization (sub, fp8 x2^6)", B200(),
          {{0x50, 0x01}, {0x50, 0x81}, {0x48, 0x18}, {0x48, 0x98}}, 0xC27FFFFF, 0x00000000);

  // ---- D4a: carry-out. a_i = 1, b = (1, 1, 1, 2^-23), c = 1 + 2^-22 + 2^-23: emax = 0, q <=
  // 2^-23 keeps all; sum 4 + 2^-21 (two carry bits above 2^0), exact in float32: 0x40800001.
  add_16("D4 carry-out",
         {V(4, 0x3C00), {0x3C00, 0x3C00, 0x3C00, 0x0002}, V(4, 0x3F80),
          {0x3F80, 0x3F80, 0x3F80, 0x3400}, V(4, 0x3F800000),
          {0x3F800000, 0x3F800000, 0x3F800000, 0x34000000}},
         0x3F800003, 0x40800001);
  // F = 13: the small product is 2^-13 (e4m3fn 2^-4 * 2^-9, e5m2 2^-6 * 2^-7), c = 1 + 2^-12 +
  // 2^-13: 4 + 2^-11 = 4 (1 + 2^-13), exact with 13 fraction bits: 0x40800400.
  const Fp8Vector d4 = {{0x38, 0x38, 0x38, 0x18}, {0x38, 0x38, 0x38, 0x01},
                        {0x3C, 0x3C, 0x3C, 0x24}, {0x3C, 0x3C, 0x3C, 0x20}};
  add_fp8("D4 carry-out (F=13)", F13(), d4, 0x3F800C00, 0x40800400);
  // Promote: inner = 3 + 2^-13 -> RZ_13 (ulp 2^-12 in [2,4)) -> 3; outer = RNE(1 + 2^-12 +
  // 2^-13 + 3) = 4 + 2^-12 + 2^-13 = 4 (1 + 2^-14 + 2^-15), a float32: 0x40800300.
  add_fp8("D4 carry-out promote", Promote(), d4, 0x3F800C00, 0x40800300);
  // B200 fp8, scaled by 2^5: products 4*8 = 32 (x3) and 2^-9 * 2^-9 = 2^-18 = 32 * 2^-23,
  // c = 32 (1 + 2^-22 + 2^-23) = 0x42000003; emax = 5, q = 2^-20: 128 + 2^-16 = 0x43000001.
  add_fp8("D4 carry-out (fp8 x2^5)", B200(),
          {{0x48, 0x48, 0x48, 0x01}, {0x50, 0x50, 0x50, 0x01}, {0x44, 0x44, 0x44, 0x18},
           {0x48, 0x48, 0x48, 0x18}},
          0x42000003, 0x43000001);

  // ---- D4b: third carry bit. a_i = 1, b = (1, 1.5, 1.75, 1.875), c = 1.875: the five terms
  // (each < 2) sum to 8 exactly: 0x41000000. Promote: inner 6.125, outer 1.875 + 6.125 = 8.
  add_16("D4 third carry bit",
         {V(4, 0x3C00), {0x3C00, 0x3E00, 0x3F00, 0x3F80}, V(4, 0x3F80),
          {0x3F80, 0x3FC0, 0x3FE0, 0x3FF0}, V(4, 0x3F800000),
          {0x3F800000, 0x3FC00000, 0x3FE00000, 0x3FF00000}},
         0x3FF00000, 0x41000000);
  for (auto p : {E4m3F13(), E4m3Promote(), E4m3B200()}) {
    add("D4 third carry bit (e4m3fn)", p, V(4, 0x38), {0x38, 0x3C, 0x3E, 0x3F}, 0x3FF00000,
        0x41000000);
  }
  // e5m2 has no 1.875: b_i = 1.75 (x4), c = 1.75: 8.75 = 8 (1 + 2^-4 + 2^-5) = 0x410C0000,
  // exact with 13 fraction bits. Promote: inner 7, outer 8.75.
  for (auto p : {E5m2F13(), E5m2Promote(), E5m2B200()}) {
    add("D4 third carry bit (e5m2)", p, V(4, 0x3C), V(4, 0x3F), 0x3FE00000, 0x410C0000);
  }

  // ---- D4c: RZ in the final normalization. a_i = b_i = 1 (x4), c = 1 + 2^-22 + 2^-23:
  // 5 + 2^-22 + 2^-23, ulp in [4, 8) is 2^-21 -> RZ -> 5 = 0x40A00000; all negated: -5.
  add_16("D4 RZ normalization",
         {V(4, 0x3C00), V(4, 0x3C00), V(4, 0x3F80), V(4, 0x3F80), V(4, 0x3F800000),
          V(4, 0x3F800000)},
         0x3F800003, 0x40A00000);
  add_16("D4 RZ normalization",
         {V(4, 0x3C00), V(4, 0xBC00), V(4, 0x3F80), V(4, 0xBF80), V(4, 0x3F800000),
          V(4, 0xBF800000)},
         0xBF800003, 0xC0A00000);
  add_fp8("D4 RZ normalization", B200(), ones4, 0x3F800003, 0x40A00000);
  add_fp8("D4 RZ normalization", B200(), ones4_neg, 0xBF800003, 0xC0A00000);
  // F = 13: c = 1 + 2^-12 + 2^-13: 5 + 2^-12 + 2^-13, ulp_13 in [4, 8) is 2^-11 -> 5.
  add_fp8("D4 RZ normalization (F=13)", F13(), ones4, 0x3F800C00, 0x40A00000);
  add_fp8("D4 RZ normalization (F=13)", F13(), ones4_neg, 0xBF800C00, 0xC0A00000);
  // Promote: inner = 4, outer = RNE(4 + 1 + 2^-12 + 2^-13) = 4 (1.25 + 2^-14 + 2^-15), a
  // float32: 0x40A00300 (and negated 0xC0A00300): the promotion add does not truncate.
  add_fp8("D4 promote", Promote(), ones4, 0x3F800C00, 0x40A00300);
  add_fp8("D4 promote", Promote(), ones4_neg, 0xBF800C00, 0xC0A00300);

  // ---- D5: non-monotonicity: increasing c by one step lowers D.
  // V100 (F = 23): a_i = 1, b_i = 2^-24 (x4). c = 1 - 2^-24: D2's 1 + 2^-23. c = 1: emax = 0,
  // q = 2^-23 drops the products: 1.
  add("D5 non-monotonic, c = 1-2^-24", {"nvidia-v100-fp16"}, V(4, 0x3C00), V(4, 0x0001),
      0x3F7FFFFF, 0x3F800001);
  add("D5 non-monotonic, c = 1", {"nvidia-v100-fp16"}, V(4, 0x3C00), V(4, 0x0001), 0x3F800000,
      0x3F800000);
  // F = 24: a_i = 0.5, b = (2^-24, 2^-24, 2^-24, 3*2^-24): products 2^-25 (x3) and 3*2^-25.
  // c = 1 - 2^-24 (emax -1, q = 2^-25, all kept): 1 - 2*2^-25 + 6*2^-25 = 1 + 2^-23.
  // c = 1 (q = 2^-24): 2^-25 -> 0, 3*2^-25 -> 2^-24: 1 + 2^-24 -> RZ -> 1.
  const V d5a16 = V(4, 0x3800), d5b16 = {0x0001, 0x0001, 0x0001, 0x0003};
  const V d5abf = V(4, 0x3F00), d5bbf = {0x3380, 0x3380, 0x3380, 0x3440};
  const V d5atf = V(4, 0x3F000000), d5btf = {0x33800000, 0x33800000, 0x33800000, 0x34400000};
  add("D5 non-monotonic, c = 1-2^-24", {"nvidia-t4-fp16", "nvidia-a100-fp16"}, d5a16, d5b16,
      0x3F7FFFFF, 0x3F800001);
  add("D5 non-monotonic, c = 1", {"nvidia-t4-fp16", "nvidia-a100-fp16"}, d5a16, d5b16,
      0x3F800000, 0x3F800000);
  add("D5 non-monotonic, c = 1-2^-24", {"nvidia-a100-bf16"}, d5abf, d5bbf, 0x3F7FFFFF,
      0x3F800001);
  add("D5 non-monotonic, c = 1", {"nvidia-a100-bf16"}, d5abf, d5bbf, 0x3F800000, 0x3F800000);
  add("D5 non-monotonic, c = 1-2^-24", {"nvidia-a100-tf32"}, d5atf, d5btf, 0x3F7FFFFF,
      0x3F800001);
  add("D5 non-monotonic, c = 1", {"nvidia-a100-tf32"}, d5atf, d5btf, 0x3F800000, 0x3F800000);
  // The F = 24 vector on F = 25 (H100): c = 1 has q = 2^-25 and keeps all six 2^-25 units:
  // 1 + 6*2^-25 -> RZ (ulp 4*2^-25) -> 1 + 2^-23, the same as for c = 1 - 2^-24: monotone.
  add("D5-F24 vector on F=25: monotone", {"nvidia-h100-fp16"}, d5a16, d5b16, 0x3F800000,
      0x3F800001);
  // F = 25, derived here: terms at 2^-26. With c = 1 - 2^-24 = 1 - 4*2^-26 (emax -1, q = 2^-26)
  // every product is kept; with c = 1 (q = 2^-25) a product 3*2^-26 keeps only 2^-25 and 2^-26
  // is lost. Products: three of 3*2^-26 (0.75 * 2^-24) and three of 2^-26 (0.25 * 2^-24), six
  // terms (fit G = 8 and 16):
  //   c = 1 - 2^-24: 1 - 4*2^-26 + (9 + 3)*2^-26 = 1 + 8*2^-26 = 1 + 2^-23 -> 0x3F800001;
  //   c = 1:         1 + 3*2^-25 -> RZ (ulp 2^-23 = 4*2^-25) -> 1 -> 0x3F800000.
  const V d5a25f16 = {0x3A00, 0x3A00, 0x3A00, 0x3400, 0x3400, 0x3400};
  const V d5a25bf = {0x3F40, 0x3F40, 0x3F40, 0x3E80, 0x3E80, 0x3E80};
  const V d5a25tf = {0x3F400000, 0x3F400000, 0x3F400000, 0x3E800000, 0x3E800000, 0x3E800000};
  add("D5 non-monotonic (F=25), c = 1-2^-24", {"nvidia-h100-fp16"}, d5a25f16, V(6, 0x0001),
      0x3F7FFFFF, 0x3F800001);
  add("D5 non-monotonic (F=25), c = 1", {"nvidia-h100-fp16"}, d5a25f16, V(6, 0x0001),
      0x3F800000, 0x3F800000);
  add("D5 non-monotonic (F=25), c = 1-2^-24", {"nvidia-h100-bf16", "nvidia-b200-bf16"},
      d5a25bf, V(6, 0x3380), 0x3F7FFFFF, 0x3F800001);
  add("D5 non-monotonic (F=25), c = 1", {"nvidia-h100-bf16", "nvidia-b200-bf16"}, d5a25bf,
      V(6, 0x3380), 0x3F800000, 0x3F800000);
  add("D5 non-monotonic (F=25), c = 1-2^-24", {"nvidia-h100-tf32"}, d5a25tf,
      V(6, 0x33800000), 0x3F7FFFFF, 0x3F800001);
  add("D5 non-monotonic (F=25), c = 1", {"nvidia-h100-tf32"}, d5a25tf, V(6, 0x33800000),
      0x3F800000, 0x3F800000);
  // F = 13 with a 13-bit accumulator (the V100 vector moved down 10 bits): products 2^-14 (x4).
  // c = 1 - 2^-14 (q = 2^-14): 1 + 3*2^-14 -> RZ_13 -> 1 + 2^-13 = 0x3F800400.
  // c = 1 (q = 2^-13): products dropped: 1.
  add_fp8("D5 non-monotonic (F=13), c = 1-2^-14", F13(), tiny4, 0x3F7FFC00, 0x3F800400);
  add_fp8("D5 non-monotonic (F=13), c = 1", F13(), tiny4, 0x3F800000, 0x3F800000);
  // B200 fp8 (F = 25): the F = 25 vector scaled by 2^8: c = 256 (1 - 2^-24) = 0x437FFFFF or
  // 256 = 0x43800000; products 3*2^-18 (x3) and 2^-18 (x3) (e4m3fn 3*2^-9 * 2^-9, 2^-9 * 2^-9;
  // e5m2 3*2^-16 * 2^-2, 2^-16 * 2^-2): 256 + 2^-15 = 0x43800001 vs 256 = 0x43800000.
  const V d5a8 = {0x03, 0x03, 0x03, 0x01, 0x01, 0x01};
  const Fp8Vector d5b200 = {d5a8, V(6, 0x01), d5a8, V(6, 0x34)};
  add_fp8("D5 non-monotonic (fp8 x2^8), c = 256(1-2^-24)", B200(), d5b200, 0x437FFFFF, 0x43800001);
  add_fp8("D5 non-monotonic (fp8 x2^8), c = 256", B200(), d5b200, 0x43800000, 0x43800000);

  // ---- Presets written from the H200 recordings (accumulation/models/SOURCES.md, 1b).
  //
  // cuBLASLt e4m3 (with and without fast accumulation): the chain runs from +0 and c is added
  // after it by one float32 RNE add (epilogue.c = "after"). Every vector here has K <= 32, one
  // 32-term group, so promote128's outer = RNE(c + inner) is that same single add of the same
  // group sum: each promote128 row's derivation holds for both.
  // nvidia-h100-tf32-cutlass-s1688: the H100 tf32 datapath after an RNA conversion. Where every
  // input is a tf32 value (low 13 bits zero) any conversion rounding is exact, so each
  // nvidia-h100-tf32 row with such inputs holds for it; B1's 1 - 2^-24 is not (row below).
  for (Row& row : r) {
    std::vector<const char*> extra;
    bool tf32_exact = true;
    for (uint64_t x : row.a) tf32_exact &= (x & 0x1FFF) == 0;
    for (uint64_t x : row.b) tf32_exact &= (x & 0x1FFF) == 0;
    for (const char* p : row.presets) {
      if (std::string(p) == "nvidia-h100-fp8e4m3-promote128") {
        extra.push_back("nvidia-h100-fp8e4m3-cublaslt");
        extra.push_back("nvidia-h100-fp8e4m3-cublaslt-fastaccum");
        // The DeepGEMM preset is promote128 with per-block scales: with every scale 1 (run below
        // both without scales and through EvaluateBlockScaledDot) each promotion is
        // RNE(outer + 1 * inner), the same add.
        extra.push_back("nvidia-h100-fp8e4m3-deepgemm");
      }
      // The MXFP8 preset is the B200 e4m3 datapath with power-of-two block scales: with every
      // scale 1 the products are unchanged.
      if (std::string(p) == "nvidia-b200-fp8e4m3") extra.push_back("nvidia-b200-mxfp8e4m3");
      if (std::string(p) == "nvidia-h100-tf32" && tf32_exact) {
        extra.push_back("nvidia-h100-tf32-cutlass-s1688");
      }
    }
    row.presets.insert(row.presets.end(), extra.begin(), extra.end());
  }
  // B1 with RNA conversion: float32 1 - 2^-24 is 2^-24 below 1, less than half a tf32 ulp
  // (2^-12 below 1): it rounds to 1, and the four products sum to 4 = 0x40800000 (RZ: B1 above).
  add("B1 exact products, tf32 RNA input", {"nvidia-h100-tf32-cutlass-s1688"},
      V(4, 0x3F7FFFFF), V(4, 0x3F7FFFFF), 0, 0x40800000);

  // nvidia-h100-bf16-cublas: the H100 bf16 group (G = 16, F = 25, RZ) from +0, then
  // d = RNE_f32(group + c). With c = 0 the group's value is kept (never -0 here), so A1, B1, C1,
  // C2 are the H100 rows; with c != 0:
  const std::vector<const char*> cublas = {"nvidia-h100-bf16-cublas"};
  add("A1 subnormal input (c after)", cublas, {0x0001}, {0x4300}, 0, 0x00800000);
  add("B1 exact products (c after)", cublas, V(4, 0x3F7F), V(4, 0x3F7F), 0, 0x407E0100);
  add("C1 RZ positive (c after)", cublas, V(4, 0x3F80), {0x4000, 0x3440, 0, 0}, 0, 0x40000000);
  add("C2 RZ negative (c after)", cublas, V(4, 0x3F80), {0xC000, 0xB440, 0, 0}, 0, 0xC0000000);
  // A2: the zero products give +0; +0 + 2^-149 = 2^-149.
  add("A2 subnormal c (c after)", cublas, {0}, {0}, 0x00000001, 0x00000001);
  // B2: the eight 2^-26 sum to 2^-23 exactly in their own group; RNE(1 + 2^-23) = 0x3F800001
  // (in the chain, c = 1 truncated them: 1).
  add("B2 c after keeps the small terms", cublas, V(8, 0x3E80), V(8, 0x3380), 0x3F800000,
      0x3F800001);
  // D1: group 1; RNE(1 - (1 - 2^-24)) = 2^-24 exactly.
  add("D1 alignment bits (c after)", cublas, {0x3F80}, {0x3F80}, 0xBF7FFFFF, 0x33800000);
  // D2: group 4 * 2^-24 = 2^-22; RNE(1 - 2^-24 + 2^-22) = RNE(1 + 1.5 * 2^-23), a tie between
  // 1 + 2^-23 (odd) and 1 + 2^-22 (even): 0x3F800002.
  add("D2 c after", cublas, V(4, 0x3F80), V(4, 0x3380), 0x3F7FFFFF, 0x3F800002);
  // D3: group {1, -2^-24} (emax 0, q = 2^-25 keeps it) = 1 - 2^-24, a float32;
  // RNE(1 - 2^-24 - (1 - 2^-24)) = +0.
  add("D3 c after", cublas, {0x3F80, 0x3F80}, {0x3F80, 0xB380}, 0xBF7FFFFF, 0x00000000);
  // D4 carry: group 3 + 2^-23 (exact) -> RZ (ulp 2^-22 in [2, 4)) -> 3; RNE(3 + 1 + 2^-22 +
  // 2^-23) = RNE(4 + 0.75 * 2^-21) = 4 + 2^-21 = 0x40800001.
  add("D4 carry-out (c after)", cublas, V(4, 0x3F80), {0x3F80, 0x3F80, 0x3F80, 0x3400},
      0x3F800003, 0x40800001);
  // D4 third carry bit: group 6.125, + 1.875 = 8.
  add("D4 third carry bit (c after)", cublas, V(4, 0x3F80), {0x3F80, 0x3FC0, 0x3FE0, 0x3FF0},
      0x3FF00000, 0x41000000);
  // D4 RZ: group 4; RNE(5 + 2^-22 + 2^-23) = 5 + 2^-21 (0.75 ulp rounds up): 0x40A00001, and
  // negated 0xC0A00001 (in the chain RZ gave 5).
  add("D4 RNE in the epilogue", cublas, V(4, 0x3F80), V(4, 0x3F80), 0x3F800003, 0x40A00001);
  add("D4 RNE in the epilogue", cublas, V(4, 0x3F80), V(4, 0xBF80), 0xBF800003, 0xC0A00001);
  // D5 (F = 25 vector): the group sums 3 * 0.75 * 2^-24 + 3 * 0.25 * 2^-24 = 3 * 2^-24 exactly;
  // c = 1 - 2^-24: RNE(1 + 2^-23) = 0x3F800001; c = 1: RNE(1 + 1.5 * 2^-23), a tie to even,
  // 1 + 2^-22 = 0x3F800002: monotone once c is outside the group.
  add("D5 c after, c = 1-2^-24", cublas, d5a25bf, V(6, 0x3380), 0x3F7FFFFF, 0x3F800001);
  add("D5 c after, c = 1", cublas, d5a25bf, V(6, 0x3380), 0x3F800000, 0x3F800002);
  // nvidia-h100-bf16-cublas-s1688-splitk2/-splitk3: groups of G = 8 with the H100 bf16 group's
  // F = 25 and RZ, in split-K slices of ceil(K / slices) rounded up to 64 products, the slices'
  // sums added to +0 in order, then d = RNE_f32(total + c). For K <= 8 slice 0 holds every
  // product in one group from +0 (the other slices are empty: +0 partials, and +0 + x = x for
  // the group's value, which is never -0 here), the same terms, alignment and rounding as the
  // one G = 16 group of nvidia-h100-bf16-cublas: each of its rows with K <= 8 holds for both.
  for (Row& row : r) {
    bool cublas_row = false;
    for (const char* p : row.presets) cublas_row |= std::string(p) == "nvidia-h100-bf16-cublas";
    if (cublas_row && row.a.size() <= 8) {
      row.presets.push_back("nvidia-h100-bf16-cublas-s1688-splitk2");
      row.presets.push_back("nvidia-h100-bf16-cublas-s1688-splitk3");
    }
  }

  // nvidia-h100-fp8e{4m3,5m2}-mmasync: per k32 instruction (K padded with zero products) half A
  // = products 0 1 4 5 ..., half B = 2 3 6 7 ...; half A is a group from +0 (G = 16, F = 25,
  // RZ to float32), half B a group with half A's value as its accumulator, then d = RNE_f32(c +
  // half B). In the vectors below the products sit at indices 0..4: half A = {0, 1, 4},
  // half B = {2, 3}.
  const std::vector<const char*> mma_e4 = {"nvidia-h100-fp8e4m3-mmasync"};
  const std::vector<const char*> mma_e5 = {"nvidia-h100-fp8e5m2-mmasync"};
  for (const auto& p : {mma_e4, mma_e5}) {
    const bool e4 = p == mma_e4;
    // A1: 2^-9 * 2^8 (e5m2: 2^-16 * 2^15) = 2^-1 in half A, unchanged by half B and c = 0.
    add("A1 subnormal input (mma.sync fp8)", p, {0x01}, {0x78}, 0, 0x3F000000);
    // A2: +0 + 2^-149.
    add("A2 subnormal c (mma.sync fp8)", p, {0}, {0}, 0x00000001, 0x00000001);
    // B1: x^2 (x = 0.9375 / 0.875) twice per half, exact (F = 25 against emax <= 1):
    // 4x^2 = 3.515625 = 0x40610000 / 3.0625 = 0x40440000.
    add("B1 exact products (mma.sync fp8)", p, V(4, e4 ? 0x37 : 0x3B), V(4, e4 ? 0x37 : 0x3B), 0,
        e4 ? 0x40610000 : 0x40440000);
    // B2: four products 2^-14 (e4m3fn 2^-5 * 2^-9, e5m2 2^-7 * 2^-7): the halves sum 2^-12
    // exactly; RNE(1 + 2^-12) = 0x3F800800.
    add("B2 c after the instruction (mma.sync fp8)", p, V(4, e4 ? 0x10 : 0x20),
        V(4, e4 ? 0x01 : 0x20), 0x3F800000, 0x3F800800);
    // C1/C2: 2 + 1.5 * 2^-13 in half A: emax 1, q = 2^-24 keeps 3 * 2^-14, and the full float32
    // (ulp 2^-22 in [2, 4)) holds it: 0x40000300 / 0xC0000300 (the 13-bit wgmma path gives 2).
    add("C1 full float32 halves (mma.sync fp8)", p, {Bits(e4, 0x38, 0x3C), Bits(e4, 0x0C, 0x26)},
        {0x40, Bits(e4, 0x04, 0x20)}, 0, 0x40000300);
    add("C2 full float32 halves (mma.sync fp8)", p, {Bits(e4, 0x38, 0x3C), Bits(e4, 0x0C, 0x26)},
        {0xC0, Bits(e4, 0x84, 0xA0)}, 0, 0xC0000300);
    // D1: the halves give 1; RNE(1 - (1 - 2^-24)) = 2^-24 = 0x33800000 (recorded, e4m3 file).
    add("D1 alignment bits (mma.sync fp8)", p, {Bits(e4, 0x38, 0x3C)}, {Bits(e4, 0x38, 0x3C)},
        0xBF7FFFFF, 0x33800000);
    // D2: the halves give 2^-12; RNE(1 - 2^-14 + 2^-12) = 1 + 3 * 2^-14 = 0x3F800600.
    add("D2 c after the instruction (mma.sync fp8)", p, V(4, e4 ? 0x10 : 0x20),
        V(4, e4 ? 0x01 : 0x20), 0x3F7FFC00, 0x3F800600);
    // D3: half A = {1, -2^-14}: emax 0, q = 2^-25 keeps both: 1 - 2^-14, a float32; then
    // RNE(1 - 2^-14 - (1 - 2^-14)) = +0.
    add("D3 (mma.sync fp8)", p, {Bits(e4, 0x38, 0x3C), Bits(e4, 0x10, 0x20)},
        {Bits(e4, 0x38, 0x3C), Bits(e4, 0x81, 0xA0)}, 0xBF7FFC00, 0x00000000);
    // D4 carry: products 1, 1, 1, 2^-13: half A 2; half B {1, 2^-13, 2} (emax 1, q = 2^-24) =
    // 3 + 2^-13, a float32; RNE(3 + 2^-13 + 1 + 2^-12 + 2^-13) = 4 + 2^-11 = 0x40800400.
    add("D4 carry-out (mma.sync fp8)", p,
        {Bits(e4, 0x38, 0x3C), Bits(e4, 0x38, 0x3C), Bits(e4, 0x38, 0x3C), Bits(e4, 0x18, 0x24)},
        {Bits(e4, 0x38, 0x3C), Bits(e4, 0x38, 0x3C), Bits(e4, 0x38, 0x3C), Bits(e4, 0x01, 0x20)},
        0x3F800C00, 0x40800400);
    // D4 RZ normalization (the recorded vector): halves 2, then 4; RNE(4 + 1 + 2^-22 + 2^-23)
    // = 5 + 2^-21 = 0x40A00001 (negated 0xC0A00001), as the H200 gave (RZ would give 5).
    add("D4 RNE after the instruction (mma.sync fp8)", p, V(4, Bits(e4, 0x38, 0x3C)),
        V(4, Bits(e4, 0x38, 0x3C)), 0x3F800003, 0x40A00001);
    add("D4 RNE after the instruction (mma.sync fp8)", p, V(4, Bits(e4, 0x38, 0x3C)),
        V(4, Bits(e4, 0xB8, 0xBC)), 0xBF800003, 0xC0A00001);
    // Interleaved halves: +-M^2 (e4m3fn M = 2^8, e5m2 M = 2^15) at products 0 and 1 (both in
    // half A) cancel exactly to +0, and a tiny product t at index 2 (half B; e4m3fn 2^-9 * 2^-9
    // = 2^-18, e5m2 2^-16 * 2^-16 = 2^-32) survives: t = 0x36800000 / 0x2F800000. One group of
    // all three (wgmma, or consecutive halves) would truncate t against emax = log2 M^2.
    add("interleaved halves: t after a cancelled pair (mma.sync fp8)", p, {0x78, 0x78, 0x01},
        {0x78, 0xF8, 0x01}, 0, e4 ? 0x36800000 : 0x2F800000);
    // The pair at 2 and 3 (half B) and t at index 4 (half A): half A = t, then half B
    // {M^2, -M^2, t} truncates t (q = 2^(16-25) or 2^(30-25)): +0. Half A is summed first.
    add("interleaved halves: half A first (mma.sync fp8)", p, {0, 0, 0x78, 0x78, 0x01},
        {0, 0, 0x78, 0xF8, 0x01}, 0, 0x00000000);
  }
  return r;
}

std::string Hex(const V& v) {
  std::vector<std::string> s;
  for (uint64_t x : v) s.push_back(absl::StrCat("0x", absl::Hex(x)));
  return absl::StrJoin(s, ",");
}

TEST(TensorCoreVectors, FasiEtAlPerArchitecture) {
  ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  int run = 0;
  for (const Row& row : Rows()) {
    for (const char* preset : row.presets) {
      const absl::StatusOr<Model>& m = catalog.Find(preset);
      ASSERT_TRUE(m.ok()) << m.status();
      SCOPED_TRACE(absl::StrCat(row.test, " on ", preset, ": a=", Hex(row.a), " b=", Hex(row.b),
                                " c=0x", absl::Hex(row.c)));
      absl::StatusOr<EvalResult> r = EvaluateDot(*m, row.a, row.b, row.c);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->bits, row.expected)
          << std::hex << "got 0x" << r->bits << ", expected 0x" << row.expected;
      if (m->epilogue.scale == EpilogueScale::kBlock) {
        const size_t blocks = (row.a.size() + m->epilogue.scale_block - 1) / m->epilogue.scale_block;
        const std::vector<double> ones(blocks, 1.0);
        r = EvaluateBlockScaledDot(*m, row.a, row.b, BlockScales{ones, ones}, row.c);
        ASSERT_TRUE(r.ok()) << r.status();
        EXPECT_EQ(r->bits, row.expected)
            << std::hex << "block-scaled: got 0x" << r->bits << ", expected 0x" << row.expected;
      }
      ++run;
    }
  }
  std::printf("%d (vector, preset) rows run\n", run);
}

// Every NVIDIA tensor-core preset is exercised by the table (a new preset must get its rows).
TEST(TensorCoreVectors, EveryNvidiaPresetHasRows) {
  ModelCatalog catalog(FPCONFORM_MODELS_SOURCE_DIR);
  const std::vector<Row> rows = Rows();
  for (const std::string& name : catalog.Names()) {
    if (name.rfind("nvidia-", 0) != 0) continue;
    int count = 0;
    for (const Row& row : rows) {
      for (const char* p : row.presets) count += name == p;
    }
    EXPECT_GE(count, 10) << name << " has " << count << " rows";
  }
}

}  // namespace
}  // namespace fpconform
