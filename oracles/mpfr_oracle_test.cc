// Hand-computed cases for the MPFR oracle, and a cross-check of its rounding routine against
// MPFR's own IEEE recipe (emin/emax + mpfr_check_range + mpfr_subnormalize).
#include "oracles/mpfr_oracle.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "conformance/oracle_check.h"
#include "formats/format_spec.h"
#include "formats/op_env.h"
#include "formats/ops.h"

namespace fpconform {
namespace {

// The operations, their names and their dispatch to the oracle or to formats/ops.h are the
// conformance suites' (conformance/oracle_check.h).
using conformance::Op;
using conformance::OpName;

// "rne", "sr2:3" (k = 2, r = 3), with "+sat", "+ftz", "+daz", "+before" appended.
OpEnv ParseEnv(std::string_view text) {
  OpEnv env;
  size_t plus = text.find('+');
  std::string_view mode = text.substr(0, plus);
  size_t colon = mode.find(':');
  if (colon != std::string_view::npos) {
    env.sr_random = std::stoull(std::string(mode.substr(colon + 1)));
    mode = mode.substr(0, colon);
  }
  EXPECT_TRUE(ParseRounding(mode, env)) << mode;
  while (plus != std::string_view::npos) {
    text = text.substr(plus + 1);
    plus = text.find('+');
    std::string_view opt = text.substr(0, plus);
    if (opt == "sat") env.saturate = true;
    else if (opt == "ftz") env.flush_to_zero = true;
    else if (opt == "daz") env.denormals_are_zero = true;
    else if (opt == "before") env.tininess = Tininess::kBeforeRounding;
    else ADD_FAILURE() << "bad env option " << opt;
  }
  return env;
}

constexpr Flags V = kInvalid, Z = kDivideByZero, O = kOverflow, U = kUnderflow, X = kInexact;

struct Row {
  const char* why;                // The class of the case.
  const FormatSpec& (*format)();  // Operation format; destination of a conversion.
  Op op;
  uint64_t a, b, c;
  const char* env;
  uint64_t bits;  // Expected; a NaN compares by class.
  Flags flags;
  const FormatSpec& (*from)() = nullptr;  // Source of a conversion.
};

// Worked numbers (all exact):
//   float8_e4m3fn: 0x7E = 1.110b * 2^8 = 448 (max), 0x40 = 2, 0x60 = 32, 0x58 = 16, 0x7F = NaN.
//   float8_e5m2: 0x7B = 1.11b * 2^15 = 57344 (max), 0x7C = +Inf.
//   float8_e4m3fnuz: 0x01 = 2^-10 (min subnormal), 0x81 = -2^-10, 0x80 = NaN.
//   float8_e8m0fnu: E = 2^(E-127): 0x00 = 2^-127, 0x7E = 0.5, 0x7F = 1, 0x80 = 2, 0xFE = 2^127.
//   float16: 0x3C00 = 1, 0x1000 = 2^-11 (half an ulp of 1), 0x0E00 = 3*2^-13 (3/8 ulp of 1),
//     0x0C04 = 2^-12 + 2^-20 (1/4 ulp + 2^-10 ulp of 1).
//   float64 0x380FFFFFF0000000 = 2^-126 - 2^-151: half an ulp (at p = 24) below float32's min
//     normal, so it rounds to 2^-126 with unbounded exponent (not tiny after rounding).
const Row kRows[] = {
    // --- OCP OFP8 E4M3 range: round with unbounded exponent, then apply the range (ops.h). ---
    {"464 is the tie between 448 and 480: RNE picks even 1.110", Float8E4M3FN, Op::kConvert,
     0x43E80000, 0, 0, "rne", 0x7E, X, Float32},
    {"465 rounds to 480 > 448: overflow, no Inf -> NaN", Float8E4M3FN, Op::kConvert, 0x43E88000,
     0, 0, "rne", 0x7F, O | X, Float32},
    {"465 under sat: max finite", Float8E4M3FN, Op::kConvert, 0x43E88000, 0, 0, "rne+sat", 0x7E,
     O | X, Float32},
    {"464 under rna rounds away to 480: overflow", Float8E4M3FN, Op::kConvert, 0x43E80000, 0, 0,
     "rna", 0x7F, O | X, Float32},
    {"470 truncates to 448: no overflow", Float8E4M3FN, Op::kConvert, 0x43EB0000, 0, 0, "rtz",
     0x7E, X, Float32},
    {"500 truncates to 480 > 448: rtz overflow delivers max finite", Float8E4M3FN, Op::kConvert,
     0x43FA0000, 0, 0, "rtz", 0x7E, O | X, Float32},
    {"rup on positive overflow: Inf, i.e. NaN in e4m3fn", Float8E4M3FN, Op::kConvert, 0x43FA0000,
     0, 0, "rup", 0x7F, O | X, Float32},
    {"rdn on positive overflow: max finite", Float8E4M3FN, Op::kConvert, 0x43FA0000, 0, 0, "rdn",
     0x7E, O | X, Float32},
    {"448 * 2 = 896 overflows (ops.h example)", Float8E4M3FN, Op::kMul, 0x7E, 0x40, 0, "rne",
     0x7F, O | X},
    {"448 * 2 under sat", Float8E4M3FN, Op::kMul, 0x7E, 0x40, 0, "rne+sat", 0x7E, O | X},
    {"448 + 32 = 480 exactly: still above 448, overflow", Float8E4M3FN, Op::kAdd, 0x7E, 0x60, 0,
     "rne", 0x7F, O | X},
    {"448 + 32 = 480 under rtz: max finite", Float8E4M3FN, Op::kAdd, 0x7E, 0x60, 0, "rtz", 0x7E,
     O | X},
    {"448 + 16 = 464 sr1 r=0 rounds toward zero: 448", Float8E4M3FN, Op::kAdd, 0x7E, 0x58, 0,
     "sr1:0", 0x7E, X},
    {"448 + 16 = 464 sr1 r=1 rounds away: 480 overflows like rne: NaN", Float8E4M3FN, Op::kAdd,
     0x7E, 0x58, 0, "sr1:1", 0x7F, O | X},
    {"448 + 16 sr1 r=1 under sat", Float8E4M3FN, Op::kAdd, 0x7E, 0x58, 0, "sr1:1+sat", 0x7E,
     O | X},
    {"450 to odd is 1.111b*2^8 = 480 > 448: overflow like rtz, max finite", Float8E4M3FN,
     Op::kConvert, 0x43E10000, 0, 0, "rto", 0x7E, O | X, Float32},
    {"1 / 0 with no Inf: NaN, z", Float8E4M3FN, Op::kDiv, 0x38, 0x00, 0, "rne", 0x7F, Z},
    {"1 / -0 under sat: -max finite, z", Float8E4M3FN, Op::kDiv, 0x38, 0x80, 0, "rne+sat", 0xFE,
     Z},
    {"NaN is S.1111.111 either sign", Float8E4M3FN, Op::kAdd, 0xFF, 0x38, 0, "rne", 0x7F, 0},
    // --- OCP OFP8 r1.0 Table 3: conversion of Inf, NaN and large values. ---
    {"+Inf to E4M3 (no Inf): NaN, v (no usefully definable result)", Float8E4M3FN, Op::kConvert,
     0x7F800000, 0, 0, "rne", 0x7F, V,
     Float32},
    {"+Inf to E4M3 sat: max", Float8E4M3FN, Op::kConvert, 0x7F800000, 0, 0, "rne+sat", 0x7E, 0,
     Float32},
    {"-Inf to E5M2: -Inf", Float8E5M2, Op::kConvert, 0xFF800000, 0, 0, "rne", 0xFC, 0, Float32},
    {"-Inf to E5M2 sat: -max", Float8E5M2, Op::kConvert, 0xFF800000, 0, 0, "rne+sat", 0xFB, 0,
     Float32},
    {"qNaN to E5M2 sat stays NaN", Float8E5M2, Op::kConvert, 0x7FC00000, 0, 0, "rne+sat", 0x7E, 0,
     Float32},
    {"1e6 to E4M3: overflow NaN", Float8E4M3FN, Op::kConvert, 0x49742400, 0, 0, "rne", 0x7F, O | X,
     Float32},
    {"1e6 to E4M3 sat: max", Float8E4M3FN, Op::kConvert, 0x49742400, 0, 0, "rne+sat", 0x7E, O | X,
     Float32},
    {"61440 ties 57344 and 65536: RNE to even 2^16, overflow to Inf", Float8E5M2, Op::kConvert,
     0x47700000, 0, 0, "rne", 0x7C, O | X, Float32},
    {"61440 to E5M2 sat", Float8E5M2, Op::kConvert, 0x47700000, 0, 0, "rne+sat", 0x7B, O | X,
     Float32},
    {"61440 to E5M2 rtz truncates to 57344: no overflow", Float8E5M2, Op::kConvert, 0x47700000, 0,
     0, "rtz", 0x7B, X, Float32},
    {"65536 to E5M2 rtz: overflow, max finite", Float8E5M2, Op::kConvert, 0x47800000, 0, 0, "rtz",
     0x7B, O | X, Float32},
    // --- fnuz: no -0. ---
    {"-2^-20 underflows to -0, delivered +0", Float8E4M3FNUZ, Op::kMul, 0x81, 0x01, 0, "rne", 0x00,
     U | X},
    {"x - x under rdn is -0, delivered +0", Float8E4M3FNUZ, Op::kSub, 0x38, 0x38, 0, "rdn", 0x00,
     0},
    {"0x80 is the NaN", Float8E4M3FNUZ, Op::kAdd, 0x80, 0x00, 0, "rne", 0x80, 0},
    // --- float8_e8m0fnu: unsigned powers of two, no zero. ---
    {"2^-127 * 0.5 = 2^-128 below range: 2^-127, u x", Float8E8M0FNU, Op::kMul, 0x00, 0x7E, 0,
     "rne", 0x00, U | X},
    {"1 - 1 = 0: NaN, v", Float8E8M0FNU, Op::kSub, 0x7F, 0x7F, 0, "rne", 0xFF, V},
    {"1 - 2 < 0: NaN, v", Float8E8M0FNU, Op::kSub, 0x7F, 0x80, 0, "rne", 0xFF, V},
    {"1 + 1 = 2 exact", Float8E8M0FNU, Op::kAdd, 0x7F, 0x7F, 0, "rne", 0x80, 0},
    {"1 + 2 = 3 ties 2 and 4 at p = 1: RNE goes up (significand 1 is odd)", Float8E8M0FNU,
     Op::kAdd, 0x7F, 0x80, 0, "rne", 0x81, X},
    {"1 + 2 = 3 rtz: 2", Float8E8M0FNU, Op::kAdd, 0x7F, 0x80, 0, "rtz", 0x80, X},
    {"2^127 * 2 overflows: NaN", Float8E8M0FNU, Op::kMul, 0xFE, 0x80, 0, "rne", 0xFF, O | X},
    {"2^127 * 2 sat: 2^127", Float8E8M0FNU, Op::kMul, 0xFE, 0x80, 0, "rne+sat", 0xFE, O | X},
    {"-1.0 to e8m0: NaN, v", Float8E8M0FNU, Op::kConvert, 0xBF800000, 0, 0, "rne", 0xFF, V,
     Float32},
    {"0.75 to e8m0 ties 0.5 and 1: up", Float8E8M0FNU, Op::kConvert, 0x3F400000, 0, 0, "rne", 0x7F,
     X, Float32},
    // --- TestFloat's underflow corner and tininess. ---
    {"2^-126 * (1 - 2^-24): exact unbounded result is tiny, rounds to 2^-126: u x", Float32,
     Op::kMul, 0x00800000, 0x3F7FFFFF, 0, "rne", 0x00800000, U | X},
    {"same, tininess before rounding", Float32, Op::kMul, 0x00800000, 0x3F7FFFFF, 0, "rne+before",
     0x00800000, U | X},
    {"same, rtz: max subnormal", Float32, Op::kMul, 0x00800000, 0x3F7FFFFF, 0, "rtz", 0x007FFFFF,
     U | X},
    {"same, ftz: tiny -> +0", Float32, Op::kMul, 0x00800000, 0x3F7FFFFF, 0, "rne+ftz", 0x00000000,
     U | X},
    {"2^-126 - 2^-151 rounds (unbounded) to 2^-126: not tiny after rounding, x only", Float32,
     Op::kConvert, 0x380FFFFFF0000000, 0, 0, "rne", 0x00800000, X, Float64},
    {"2^-126 - 2^-151, tininess before rounding: u x", Float32, Op::kConvert, 0x380FFFFFF0000000,
     0, 0, "rne+before", 0x00800000, U | X, Float64},
    {"2^-126 - 2^-151 with ftz, tininess after: not tiny, not flushed", Float32, Op::kConvert,
     0x380FFFFFF0000000, 0, 0, "rne+ftz", 0x00800000, X, Float64},
    {"2^-126 - 2^-151 with ftz, tininess before: tiny, flushed", Float32, Op::kConvert,
     0x380FFFFFF0000000, 0, 0, "rne+ftz+before", 0x00000000, U | X, Float64},
    {"sr2 r=1: tiny by the p-bit sr decision (0.10b -> down), delivered up at the subnormal "
     "quantum (0.11b): 2^-126 with u x", Float32, Op::kConvert, 0x380FFFFFF0000000, 0, 0,
     "sr2:1", 0x00800000, U | X, Float64},
    {"0.75 * 2^-127 to e8m0 rounds (p = 1) to 2^-127: not tiny after rounding, x only",
     Float8E8M0FNU, Op::kConvert, 0x00300000, 0, 0, "rne", 0x00, X, Float32},
    {"0.75 * 2^-127 to e8m0, tininess before rounding: u x", Float8E8M0FNU, Op::kConvert,
     0x00300000, 0, 0, "rne+before", 0x00, U | X, Float32},
    {"exact subnormal result raises nothing", Float32, Op::kMul, 0x00000002, 0x3F000000, 0, "rne",
     0x00000001, 0},
    {"exact subnormal result under ftz: flushed, u x", Float32, Op::kMul, 0x00000002, 0x3F000000,
     0, "rne+ftz", 0x00000000, U | X},
    {"min subnormal / 2 ties to even 0: +0, u x", Float32, Op::kMul, 0x00000001, 0x3F000000, 0,
     "rne", 0x00000000, U | X},
    {"-min subnormal / 2 under rdn: -min subnormal", Float32, Op::kMul, 0x80000001, 0x3F000000, 0,
     "rdn", 0x80000001, U | X},
    {"daz: subnormal reads as zero, exact", Float32, Op::kMul, 0x00000001, 0x71800000, 0,
     "rne+daz", 0x00000000, 0},
    {"daz: -subnormal / 1 is -0", Float32, Op::kDiv, 0x80000001, 0x3F800000, 0, "rne+daz",
     0x80000000, 0},
    // --- Rounding directions and stochastic rounding (float16, 1 + fractions of an ulp). ---
    {"1 + half ulp RNE: tie to even 1", Float16, Op::kAdd, 0x3C00, 0x1000, 0, "rne", 0x3C00, X},
    {"1 + half ulp RNA: away", Float16, Op::kAdd, 0x3C00, 0x1000, 0, "rna", 0x3C01, X},
    {"1 + half ulp RUP", Float16, Op::kAdd, 0x3C00, 0x1000, 0, "rup", 0x3C01, X},
    {"1 + half ulp RDN", Float16, Op::kAdd, 0x3C00, 0x1000, 0, "rdn", 0x3C00, X},
    {"1 + half ulp RTO: last bit set", Float16, Op::kAdd, 0x3C00, 0x1000, 0, "rto", 0x3C01, X},
    {"-1 - half ulp RUP: toward +inf is toward zero", Float16, Op::kSub, 0xBC00, 0x1000, 0, "rup",
     0xBC00, X},
    {"sr1: top bit 1 + r 0 < 2: down", Float16, Op::kAdd, 0x3C00, 0x1000, 0, "sr1:0", 0x3C00, X},
    {"sr1: top bit 1 + r 1 >= 2: up", Float16, Op::kAdd, 0x3C00, 0x1000, 0, "sr1:1", 0x3C01, X},
    {"sr4: top 1000b + 7 < 16: down", Float16, Op::kAdd, 0x3C00, 0x1000, 0, "sr4:7", 0x3C00, X},
    {"sr4: top 1000b + 8 >= 16: up", Float16, Op::kAdd, 0x3C00, 0x1000, 0, "sr4:8", 0x3C01, X},
    {"sr4: only the low 4 bits of sr_random count (0x17 -> 7)", Float16, Op::kAdd, 0x3C00, 0x1000,
     0, "sr4:23", 0x3C00, X},
    {"sr2: 3/8 ulp has top bits 01b; + 2 < 4: down", Float16, Op::kAdd, 0x3C00, 0x0E00, 0, "sr2:2",
     0x3C00, X},
    {"sr2: 3/8 ulp; + 3 >= 4: up", Float16, Op::kAdd, 0x3C00, 0x0E00, 0, "sr2:3", 0x3C01, X},
    {"sr2: bits below the top 2 are ignored (1/4 + 2^-10 ulp; + 2 < 4)", Float16, Op::kAdd,
     0x3C00, 0x0C04, 0, "sr2:2", 0x3C00, X},
    {"sr on an exact result: no rounding", Float16, Op::kAdd, 0x3C00, 0x3C00, 0, "sr8:255", 0x4000,
     0},
    // --- Invalid and exact special cases (IEEE 754-2019 §7.2, §6.3). ---
    {"Inf - Inf", Float32, Op::kAdd, 0x7F800000, 0xFF800000, 0, "rne", 0x7FC00000, V},
    {"0 * Inf", Float32, Op::kMul, 0x00000000, 0xFF800000, 0, "rne", 0x7FC00000, V},
    {"0 / 0", Float32, Op::kDiv, 0x80000000, 0x00000000, 0, "rne", 0x7FC00000, V},
    {"-1 / 0 = -Inf, z", Float32, Op::kDiv, 0xBF800000, 0x00000000, 0, "rne", 0xFF800000, Z},
    {"sqrt(-1)", Float32, Op::kSqrt, 0xBF800000, 0, 0, "rne", 0x7FC00000, V},
    {"sqrt(-0) = -0", Float32, Op::kSqrt, 0x80000000, 0, 0, "rne", 0x80000000, 0},
    {"sqrt(2) RNE = 0x3FB504F3", Float32, Op::kSqrt, 0x40000000, 0, 0, "rne", 0x3FB504F3, X},
    {"sqrt(2) RUP = 0x3FB504F4", Float32, Op::kSqrt, 0x40000000, 0, 0, "rup", 0x3FB504F4, X},
    {"1/3 RNE = 0x3EAAAAAB", Float32, Op::kDiv, 0x3F800000, 0x40400000, 0, "rne", 0x3EAAAAAB, X},
    {"1/3 RTZ = 0x3EAAAAAA", Float32, Op::kDiv, 0x3F800000, 0x40400000, 0, "rtz", 0x3EAAAAAA, X},
    {"sNaN operand raises v", Float32, Op::kAdd, 0x7F800001, 0x3F800000, 0, "rne", 0x7FC00000, V},
    {"qNaN operand raises nothing", Float32, Op::kAdd, 0x7FC00000, 0x3F800000, 0, "rne",
     0x7FC00000, 0},
    {"fma 0 * Inf + qNaN raises v", Float32, Op::kFma, 0x00000000, 0x7F800000, 0x7FC00000, "rne",
     0x7FC00000, V},
    {"fma Inf * 1 - Inf", Float32, Op::kFma, 0x7F800000, 0x3F800000, 0xFF800000, "rne",
     0x7FC00000, V},
    {"fma 1 * 1 - 1 = +0", Float32, Op::kFma, 0x3F800000, 0x3F800000, 0xBF800000, "rne",
     0x00000000, 0},
    {"fma 1 * 1 - 1 = -0 under rdn", Float32, Op::kFma, 0x3F800000, 0x3F800000, 0xBF800000, "rdn",
     0x80000000, 0},
    {"fma -0 * 1 + -0 = -0", Float32, Op::kFma, 0x80000000, 0x3F800000, 0x80000000, "rne",
     0x80000000, 0},
    {"fma (1 + 2^-23)^2 - 1 = 2^-22 * (1 + 2^-24): a tie, to even 2^-22", Float32, Op::kFma,
     0x3F800001, 0x3F800001, 0xBF800000, "rne", 0x34800000, X},
    {"fma (1 + 2^-23)^2 - 1 under rup: 2^-22 + 2^-45", Float32, Op::kFma, 0x3F800001, 0x3F800001,
     0xBF800000, "rup", 0x34800001, X},
    {"-0 + -0 = -0", Float32, Op::kAdd, 0x80000000, 0x80000000, 0, "rne", 0x80000000, 0},
    {"1 - 1 = +0", Float32, Op::kSub, 0x3F800000, 0x3F800000, 0, "rne", 0x00000000, 0},
    {"max + max overflows to Inf", Float32, Op::kAdd, 0x7F7FFFFF, 0x7F7FFFFF, 0, "rne", 0x7F800000,
     O | X},
    {"-max - max under rup: -max", Float32, Op::kAdd, 0xFF7FFFFF, 0xFF7FFFFF, 0, "rup", 0xFF7FFFFF,
     O | X},
    {"max + max under sat", Float32, Op::kAdd, 0x7F7FFFFF, 0x7F7FFFFF, 0, "rne+sat", 0x7F7FFFFF,
     O | X},
    {"tfloat32: 1 + 2^-11 ties to even", TFloat32, Op::kAdd, 0x3F800000, 0x3A000000, 0, "rne",
     0x3F800000, X},
    {"tfloat32: 1 + 2^-11 rna", TFloat32, Op::kAdd, 0x3F800000, 0x3A000000, 0, "rna", 0x3F802000,
     X},
    {"bfloat16: 1 + 2^-8 ties to even", BFloat16, Op::kAdd, 0x3F80, 0x3B80, 0, "rne", 0x3F80, X},
    // --- Float <-> integer. ---
    {"2.5 to int8 RNE: 2", Int8, Op::kConvert, 0x40200000, 0, 0, "rne", 0x02, X, Float32},
    {"2.5 to int8 RNA: 3", Int8, Op::kConvert, 0x40200000, 0, 0, "rna", 0x03, X, Float32},
    {"-2.5 to int8 RTO: -3 (odd)", Int8, Op::kConvert, 0xC0200000, 0, 0, "rto", 0xFD, X, Float32},
    {"127.5 to int8 RNE: 128 out of range -> 0x80, v", Int8, Op::kConvert, 0x42FF0000, 0, 0, "rne",
     0x80, V, Float32},
    {"127.5 to int8 sat: 127, v", Int8, Op::kConvert, 0x42FF0000, 0, 0, "rne+sat", 0x7F, V,
     Float32},
    {"-0.5 to uint8 RNE: 0, x", UInt8, Op::kConvert, 0xBF000000, 0, 0, "rne", 0x00, X, Float32},
    {"-1 to uint8: 0xFF, v", UInt8, Op::kConvert, 0xBF800000, 0, 0, "rne", 0xFF, V, Float32},
    {"-1 to uint8 sat: 0, v", UInt8, Op::kConvert, 0xBF800000, 0, 0, "rne+sat", 0x00, V, Float32},
    {"NaN to int32: 0x80000000, v", Int32, Op::kConvert, 0x7FC00000, 0, 0, "rne", 0x80000000, V,
     Float32},
    {"NaN to int32 sat: 0, v", Int32, Op::kConvert, 0x7FC00000, 0, 0, "rne+sat", 0, V, Float32},
    {"-Inf to int32 sat: INT32_MIN, v", Int32, Op::kConvert, 0xFF800000, 0, 0, "rne+sat",
     0x80000000, V, Float32},
    {"2^24 + 1 to float32 RNE: 2^24", Float32, Op::kConvert, 16777217, 0, 0, "rne", 0x4B800000, X,
     Int32},
    {"2^24 + 1 to float32 RUP", Float32, Op::kConvert, 16777217, 0, 0, "rup", 0x4B800001, X,
     Int32},
    {"int8 -128 to e4m3fn: exact", Float8E4M3FN, Op::kConvert, 0x80, 0, 0, "rne", 0xF0, 0, Int8},
    {"int8 -5 to uint8 wraps: 0xFB, v", UInt8, Op::kConvert, 0xFB, 0, 0, "rne", 0xFB, V, Int8},
    {"int8 -5 to uint8 sat: 0, v", UInt8, Op::kConvert, 0xFB, 0, 0, "rne+sat", 0x00, V, Int8},
    {"int32 0 to e8m0: no zero, NaN v", Float8E8M0FNU, Op::kConvert, 0, 0, 0, "rne", 0xFF, V,
     Int32},
};

// The row as a case of the conformance suites, to run through the MPFR oracle (RunOracle) or
// formats/ops.h (RunFormats); the hand-computed value is the reference for both.
conformance::Case RowCase(const Row& r, const OpEnv& env) {
  conformance::Case k;
  k.op = r.op;
  k.f = &r.format();
  k.from = r.from != nullptr ? &r.from() : nullptr;
  k.a = r.a;
  k.b = r.b;
  k.c = r.c;
  k.env = env;
  return k;
}

TEST(MpfrOracleTest, MpfrIsThreadSafe) { EXPECT_TRUE(mpfr_buildopt_tls_p()); }

TEST(MpfrOracleTest, HandComputedRows) {
  for (const Row& r : kRows) {
    const FormatSpec& f = r.format();
    SCOPED_TRACE(testing::Message() << r.why << " [" << f.name << " " << OpName(r.op) << " "
                                    << r.env << std::hex << " a=0x" << r.a << " b=0x" << r.b
                                    << " c=0x" << r.c << "]");
    const conformance::Case k = RowCase(r, ParseEnv(r.env));
    for (int formats = 0; formats < 2; ++formats) {
      SCOPED_TRACE(formats ? "formats/ops.h" : "MPFR oracle");
      const OpResult got = formats ? conformance::RunFormats(k) : conformance::RunOracle(k);
      if (IsFloat(f) && MpfrIsNanBits(f, r.bits)) {
        EXPECT_TRUE(MpfrIsNanBits(f, got.bits)) << std::hex << "got 0x" << got.bits;
      } else {
        EXPECT_EQ(got.bits, r.bits) << std::hex << "got 0x" << got.bits << " want 0x" << r.bits;
      }
      EXPECT_EQ(FlagsToString(got.flags), FlagsToString(r.flags));
    }
  }
}

// NaN results per NanProfile (op_env.h table), bit for bit.
TEST(MpfrOracleTest, NanProfiles) {
  struct NanRow {
    const char* why;
    NanProfile profile;
    Op op;
    uint64_t a, b;
    uint64_t bits;
    Flags flags;
  };
  const NanRow rows[] = {
      {"ieee: Inf - Inf is +qNaN", NanProfile::kIeee, Op::kAdd, 0x7F800000, 0xFF800000,
       0x7FC00000, V},
      {"x86: Inf - Inf is the indefinite -qNaN", NanProfile::kX86, Op::kAdd, 0x7F800000,
       0xFF800000, 0xFFC00000, V},
      {"cuda: all ones", NanProfile::kCuda, Op::kAdd, 0x7F800000, 0xFF800000, 0x7FFFFFFF, V},
      {"canonical: +qNaN", NanProfile::kCanonical, Op::kMul, 0xFFC01234, 0x3F800000, 0x7FC00000,
       0},
      {"ieee: sNaN payload kept, quieted, sign kept", NanProfile::kIeee, Op::kMul, 0x3F800000,
       0xFF801234, 0xFFC01234, V},
      {"ieee: first NaN operand wins", NanProfile::kIeee, Op::kAdd, 0x7FC00001, 0xFFC00002,
       0x7FC00001, 0},
      {"x86: propagation like ieee", NanProfile::kX86, Op::kAdd, 0x3F800000, 0xFFC00002,
       0xFFC00002, 0},
  };
  for (const NanRow& r : rows) {
    SCOPED_TRACE(r.why);
    OpEnv env;
    env.nan = r.profile;
    const OpResult got = r.op == Op::kAdd ? MpfrAdd(Float32(), r.a, r.b, env)
                                          : MpfrMul(Float32(), r.a, r.b, env);
    EXPECT_EQ(got.bits, r.bits) << std::hex << got.bits;
    EXPECT_EQ(got.flags, r.flags);
  }
  OpEnv env;
  // Conversions: top payload bits that fit; e4m3fn and fnuz NaNs carry no payload.
  EXPECT_EQ(MpfrConvert(Float32(), BFloat16(), 0x7FC12345, env).bits, 0x7FC1u);
  EXPECT_EQ(MpfrConvert(BFloat16(), Float32(), 0xFFC1, env).bits, 0xFFC10000u);
  EXPECT_EQ(MpfrConvert(Float32(), Float8E4M3FN(), 0xFFC00000, env).bits, 0xFFu);
  EXPECT_EQ(MpfrConvert(Float8E4M3FN(), Float32(), 0x7F, env).bits, 0x7FC00000u);
  EXPECT_EQ(MpfrConvert(Float8E4M3FNUZ(), Float32(), 0x80, env).bits, 0xFFC00000u);
  EXPECT_EQ(MpfrConvert(Float32(), Float8E4M3FNUZ(), 0x7FC00000, env).bits, 0x80u);
  EXPECT_EQ(MpfrConvert(Float32(), TFloat32(), 0x7F800001, env).bits, 0x7FC00000u)
      << "payload 1 does not fit tfloat32's 10 fraction bits; quiet bit only";
}

// The decoder: every 8-bit pattern decodes to the value the OCP / ml_dtypes tables give.
TEST(MpfrOracleTest, DecodesFp8Limits) {
  mpfr_t v;
  mpfr_init2(v, 64);
  struct Limit {
    const FormatSpec& (*format)();
    uint64_t bits;
    double value;
  };
  const Limit limits[] = {
      {Float8E4M3FN, 0x7E, 448.0},       {Float8E4M3FN, 0x01, 0x1p-9},
      {Float8E4M3FN, 0x08, 0x1p-6},      {Float8E5M2, 0x7B, 57344.0},
      {Float8E5M2, 0x01, 0x1p-16},       {Float8E4M3FNUZ, 0x7F, 240.0},
      {Float8E4M3FNUZ, 0x01, 0x1p-10},   {Float8E5M2FNUZ, 0x7F, 57344.0},
      {Float8E5M2FNUZ, 0x01, 0x1p-17},   {Float8E4M3, 0x77, 240.0},
      {Float8E8M0FNU, 0x00, 0x1p-127},   {Float8E8M0FNU, 0xFE, 0x1p127},
      {TFloat32, 0x3F802000, 1.0 + 0x1p-10},
  };
  for (const Limit& l : limits) {
    const MpfrDecoded d = MpfrDecodeBits(l.format(), l.bits, false, v);
    EXPECT_EQ(d.kind, MpfrKind::kFinite) << l.format().name;
    EXPECT_EQ(mpfr_get_d(v, MPFR_RNDN), l.value) << l.format().name << std::hex << " 0x" << l.bits;
  }
  EXPECT_TRUE(MpfrIsNanBits(Float8E4M3FN(), 0xFF));
  EXPECT_FALSE(MpfrIsNanBits(Float8E4M3FN(), 0x7E));
  EXPECT_TRUE(MpfrIsNanBits(Float8E4M3FNUZ(), 0x80));
  EXPECT_TRUE(MpfrIsNanBits(Float8E8M0FNU(), 0xFF));
  EXPECT_EQ(MpfrDecodeBits(Float8E4M3(), 0xF8, false, v).kind, MpfrKind::kInf);
  EXPECT_TRUE(MpfrDecodeBits(Float8E5M2(), 0x7D, false, v).signaling);
  EXPECT_FALSE(MpfrDecodeBits(Float8E5M2(), 0x7E, false, v).signaling);
  mpfr_clear(v);
}

// oracles/mpfr_plumbing.h: its header example, and the shared decoder against formats'
// (independent) Convert to float64 for every pattern of every 8- and 16-bit float format.
TEST(MpfrPlumbing, HeaderExample) {
  MpfrValue x;
  const MpfrDecoded d = MpfrDecodeBits(BFloat16(), 0xC040, false, x);
  EXPECT_EQ(d.kind, MpfrKind::kFinite);
  EXPECT_TRUE(d.sign);
  EXPECT_EQ(mpfr_get_d(x, MPFR_RNDN), -3.0);
  const mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
  {
    MpfrExponentRange range(Float16());
    EXPECT_EQ(mpfr_get_emin(), -23);
    EXPECT_EQ(mpfr_get_emax(), 16);
    mpfr_set_d(x, 65536.0, MPFR_RNDN);
    mpfr_check_range(x, 0, MPFR_RNDN);
    EXPECT_TRUE(mpfr_inf_p(x));
  }
  EXPECT_EQ(mpfr_get_emin(), emin);
  EXPECT_EQ(mpfr_get_emax(), emax);
}

TEST(MpfrPlumbing, DecoderMatchesConvertToFloat64) {
  MpfrValue x;
  for (const FormatSpec& f : AllFormats()) {
    if (f.kind != FormatKind::kFloat || f.width > 16) continue;
    for (uint64_t bits = 0; bits < (uint64_t{1} << f.width); ++bits) {
      const MpfrDecoded d = MpfrDecodeBits(f, bits, false, x);
      uint64_t wide = Convert(f, Float64(), bits, OpEnv{}).bits;
      double w;
      std::memcpy(&w, &wide, sizeof w);
      SCOPED_TRACE(std::string(f.name) + " bits " + std::to_string(bits));
      EXPECT_EQ(d.kind == MpfrKind::kNaN, std::isnan(w));
      EXPECT_EQ(d.kind == MpfrKind::kInf, std::isinf(w));
      if (d.kind == MpfrKind::kFinite || d.kind == MpfrKind::kZero) {
        EXPECT_EQ(mpfr_get_d(x, MPFR_RNDN), w);
        EXPECT_EQ(mpfr_signbit(x) != 0, std::signbit(w));
      }
    }
  }
}

// MpfrRoundToFormat (quantum rounding) against MPFR's recipe (emin/emax, check_range,
// subnormalize) on random values around every binade of each IEEE-encoded format, with and
// without a sticky bit, in the four modes MPFR has. The draw of (e, trial, precision) is keyed by
// their hash xor SplitMix64Mix(seed), the seed FPCONFORM_SEED when set, else 0 (SplitMix64Mix(0)
// is 0: the default draws the hash alone, as before).
TEST(MpfrOracleTest, QuantumRoundingMatchesMpfrRecipe) {
  const uint64_t mask =
      SplitMix64Mix(TestSeed(0, "MpfrOracleTest.QuantumRoundingMatchesMpfrRecipe"));
  const FormatSpec* formats[] = {&Float32(), &TFloat32(), &BFloat16(), &Float16(),
                                 &Float8E5M2(), &Float8E4M3(), &Float64()};
  const struct {
    Rounding rounding;
    mpfr_rnd_t rnd;
  } modes[] = {{Rounding::kNearestEven, MPFR_RNDN},
               {Rounding::kTowardZero, MPFR_RNDZ},
               {Rounding::kUpward, MPFR_RNDU},
               {Rounding::kDownward, MPFR_RNDD}};
  mpfr_t x;
  mpfr_init2(x, 64);
  int64_t checked = 0;
  for (const FormatSpec* f : formats) {
    const mpfr_prec_t prec = Precision(*f) + 40 < 64 ? Precision(*f) + 40 : 64;
    mpfr_set_prec(x, prec);
    const int lo = MinSubnormalExponent(*f) - 3;
    const int hi = Emax(*f) + 2;
    for (int e = lo; e <= hi; ++e) {
      for (int trial = 0; trial < 24; ++trial) {
        const uint64_t h = SplitMix64At((static_cast<uint64_t>(e + 5000) << 8) ^ trial ^
                                            (static_cast<uint64_t>(Precision(*f)) << 40) ^ mask,
                                        0);
        // Significand patterns: random, near a tie (only guard bits), near all-ones.
        uint64_t sig = h | (uint64_t{1} << 63);
        if (trial % 4 == 1) sig = (uint64_t{1} << 63) | (uint64_t{1} << (63 - Precision(*f)));
        if (trial % 4 == 2) sig = ~uint64_t{0} << (64 - prec);
        if (trial % 4 == 3) sig = ((uint64_t{1} << 63) | (h >> 40)) & (~uint64_t{0} << (64 - prec));
        mpfr_set_ui_2exp(x, sig, e - 63, MPFR_RNDZ);
        const bool sticky = ((h >> 7) & 3) == 0;
        const bool sign = ((h >> 9) & 1) != 0;
        for (const auto& m : modes) {
          OpEnv env;
          env.rounding = m.rounding;
          const OpResult mine = MpfrRoundToFormat(*f, sign, x, sticky, env);
          const OpResult recipe = MpfrRecipeRound(*f, sign, x, sticky, m.rnd);
          ++checked;
          ASSERT_EQ(mine.bits, recipe.bits)
              << f->name << " e=" << e << " trial=" << trial << " sticky=" << sticky
              << " sign=" << sign << " mode=" << static_cast<int>(m.rounding);
          ASSERT_EQ(mine.flags & (kOverflow | kInexact), recipe.flags)
              << f->name << " e=" << e << " trial=" << trial;
        }
      }
    }
  }
  mpfr_clear(x);
  std::printf("QuantumRoundingMatchesMpfrRecipe: %lld roundings checked\n",
              static_cast<long long>(checked));
}

}  // namespace
}  // namespace fpconform
