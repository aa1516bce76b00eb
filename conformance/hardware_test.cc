// The hardware's second opinion: where this x86-64 CPU has the instruction, its results and
// status flags must equal formats/' on the same inputs. Each check is skipped (GTEST_SKIP with
// the reason) where the instruction is absent, and the whole file builds on any x86-64 (the
// instruction-specific functions carry target attributes) and skips everything elsewhere.
//
//  * SSE float32 add/sub/mul/div/sqrt and FMA3 vfmadd, under each MXCSR rounding mode, vs
//    Add/Sub/Mul/Div/Sqrt/Fma with OpEnv{rounding, nan = kX86}: bits and the five flags. FMA NaN
//    results compare by class (which NaN operand vfmadd picks depends on the instruction form).
//  * MXCSR.FZ (bit 15) and MXCSR.DAZ (bit 6) vs OpEnv{flush_to_zero, denormals_are_zero}.
//  * F16C VCVTPS2PH (immediate rounding 0..3) vs Convert(Float32(), Float16()) on a prime stride
//    plus every exponent boundary's neighbourhood; VCVTPH2PS on all 65,536 float16 patterns.
//  * AVX512-BF16 VCVTNEPS2BF16 vs Convert(Float32(), BFloat16()): equal under OpEnv{} on every
//    input with a non-zero exponent field (normals, Inf, NaN); and equal on ALL sampled inputs,
//    subnormals included, to Convert under OpEnv{denormals_are_zero, flush_to_zero}, the profile
//    that models the instruction's flushing (Intel SDM: VCVTNEPS2BF16 treats denormal inputs as
//    zero and flushes denormal results, ignores MXCSR, raises no flags).
//
// Cases derive from (seed, index) with a SplitMix64 counter generator; FPCONFORM_SEED overrides
// the seed, and a failure prints seed, index and operands. This file is compiled with
// -frounding-math; MXCSR is set and read directly (ldmxcsr/stmxcsr; the flags are its bits 0..5)
// and restored after every test. Each native operation is pinned between its MXCSR write and read
// (SetCsr, Pin, GetCsr below): clang treats SSE arithmetic as free of side effects and moved the
// FMA and VCVTPS2PH past the read, GCC happened not to.
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "formats/ops.h"
#include "formats/text.h"
#include "gtest/gtest.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace fpconform {
namespace {

#if defined(__x86_64__)

// FPCONFORM_SEED when set, else 0x20240611; read and printed once per process.
uint64_t Seed() {
  static const uint64_t seed = TestSeed(0x2024'0611ull, "hardware_test");
  return seed;
}

// ---- MXCSR ----

constexpr uint32_t kMxcsrDaz = 1u << 6;
constexpr uint32_t kMxcsrFz = 1u << 15;

// Volatile asm statements keep their order. SetCsr ... Pin(operands) ... op ... Pin(result) ...
// GetCsr: the operation consumes the pinned operands and produces the pinned result, so it runs
// after the write and before the read, whatever the compiler's model of the floating-point state.
inline void SetCsr(uint32_t csr) { asm volatile("ldmxcsr %0" : : "m"(csr)); }
inline uint32_t GetCsr() {
  uint32_t csr;
  asm volatile("stmxcsr %0" : "=m"(csr));
  return csr;
}
template <typename V>
inline void Pin(V& v) {
  asm volatile("" : "+x"(v));
}

class MxcsrGuard {
 public:
  MxcsrGuard() : saved_(GetCsr()) {}
  ~MxcsrGuard() { SetCsr(saved_); }
  MxcsrGuard(const MxcsrGuard&) = delete;
  MxcsrGuard& operator=(const MxcsrGuard&) = delete;

 private:
  uint32_t saved_;
};

// MXCSR.RC (bits 13-14): 0 nearest, 1 down, 2 up, 3 toward zero (Intel SDM Vol.1 §10.2.3.2).
struct Mode {
  const char* name;
  uint32_t rc;
  Rounding rounding;
};
constexpr Mode kModes[] = {{"rne", 0, Rounding::kNearestEven},
                           {"rdn", 1, Rounding::kDownward},
                           {"rup", 2, Rounding::kUpward},
                           {"rtz", 3, Rounding::kTowardZero}};

// All exceptions masked, the given rounding control and FZ/DAZ, flags clear.
uint32_t MakeCsr(uint32_t rc, bool fz, bool daz) {
  return 0x1F80u | rc << 13 | (fz ? kMxcsrFz : 0) | (daz ? kMxcsrDaz : 0);
}

Flags FlagsFromMxcsr(uint32_t csr) {
  Flags f = 0;
  if (csr & 0x01) f |= kInvalid;
  if (csr & 0x04) f |= kDivideByZero;
  if (csr & 0x08) f |= kOverflow;
  if (csr & 0x10) f |= kUnderflow;
  if (csr & 0x20) f |= kInexact;
  return f;  // DE (0x02) has no IEEE counterpart.
}

// ---- Native operations: one instruction each, operands through volatile memory. ----

enum class Op { kAdd, kSub, kMul, kDiv, kSqrt, kFma };
const char* OpName(Op op) {
  static const char* const kNames[] = {"add", "sub", "mul", "div", "sqrt", "fma"};
  return kNames[static_cast<int>(op)];
}

// Runs `op` once under `csr`; returns the result bits and the flags it raised.
__attribute__((noinline)) OpResult NativeSse(Op op, uint32_t a, uint32_t b, uint32_t csr) {
  volatile float va = std::bit_cast<float>(a), vb = std::bit_cast<float>(b);
  const __m128 x = _mm_set_ss(va), y = _mm_set_ss(vb);
  SetCsr(csr);
  // The instructions themselves are written out: with two NaN operands SSE returns the first
  // source's (x's) quieted, and clang, for which a NaN's payload is unspecified, commuted
  // _mm_add_ss(x, y) and _mm_mul_ss(x, y) into addss/mulss with y first. Being volatile asm,
  // they also stay between SetCsr and GetCsr without Pin.
  __m128 r = x;
  switch (op) {
    case Op::kAdd: asm volatile("addss %1, %0" : "+x"(r) : "x"(y)); break;
    case Op::kSub: asm volatile("subss %1, %0" : "+x"(r) : "x"(y)); break;
    case Op::kMul: asm volatile("mulss %1, %0" : "+x"(r) : "x"(y)); break;
    case Op::kDiv: asm volatile("divss %1, %0" : "+x"(r) : "x"(y)); break;
    default: asm volatile("sqrtss %1, %0" : "+x"(r) : "x"(x)); break;
  }
  const uint32_t after = GetCsr();
  volatile float out = _mm_cvtss_f32(r);
  return {std::bit_cast<uint32_t>(out), FlagsFromMxcsr(after)};
}

__attribute__((target("fma"), noinline)) OpResult NativeFma(uint32_t a, uint32_t b, uint32_t c,
                                                            uint32_t csr) {
  volatile float va = std::bit_cast<float>(a), vb = std::bit_cast<float>(b),
                 vc = std::bit_cast<float>(c);
  __m128 x = _mm_set_ss(va), y = _mm_set_ss(vb), z = _mm_set_ss(vc);
  SetCsr(csr);
  Pin(x);
  Pin(y);
  Pin(z);
  __m128 r = _mm_fmadd_ss(x, y, z);
  Pin(r);
  const uint32_t after = GetCsr();
  volatile float out = _mm_cvtss_f32(r);
  return {std::bit_cast<uint32_t>(out), FlagsFromMxcsr(after)};
}

bool HasFma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("fma");
}
bool HasF16c() {
  __builtin_cpu_init();
  // F16C from CPUID.1:ECX bit 29 (Clang's __builtin_cpu_supports has no "f16c"); "avx" also
  // covers the OS's saving of the YMM state.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  return __builtin_cpu_supports("avx") && (ecx & bit_F16C) != 0;
}
bool HasAvx512Bf16() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bf16");
}

// ---- Boundary-heavy float32 operands ----

uint32_t Make(uint32_t sign, uint32_t e, uint32_t frac) {
  return sign << 31 | (e & 0xFF) << 23 | (frac & 0x7FFFFF);
}

// One operand drawn from a mix of classes, from 64 random bits.
uint32_t Operand(uint64_t r) {
  const uint32_t sign = static_cast<uint32_t>(r >> 63);
  const uint32_t frac = static_cast<uint32_t>(r) & 0x7FFFFF;
  const uint32_t sel = static_cast<uint32_t>(r >> 40) % 16;
  const uint32_t e8 = static_cast<uint32_t>(r >> 48) & 0xFF;
  switch (sel) {
    case 0: return static_cast<uint32_t>(r >> 16);              // Any pattern.
    case 1: case 2: return Make(sign, 0, frac >> (e8 % 23));    // Subnormal (or zero).
    case 3: return Make(sign, 1 + e8 % 3, frac);                // Just above min normal.
    case 4: return Make(sign, 252 + e8 % 3, frac);              // Near overflow.
    case 5: return Make(sign, 127 + e8 % 24, frac & ~((1u << (e8 % 23)) - 1));  // Few bits.
    case 6: {                                                   // Special values.
      const uint32_t specials[] = {0x00000000, 0x7F800000, 0x7FC00000, 0x7F800001, 0x7FA00000,
                                   0x00000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x3F800000,
                                   0x7FFFFFFF, 0x7FBFFFFF, 0x33800000, 0x34000000, 0x00400000,
                                   0x0B800000};
      return specials[e8 % 16] | sign << 31;
    }
    default: return Make(sign, 64 + e8 % 128, frac);             // Moderate normals.
  }
}

// Operands for `op` at case index i: independent draws, plus related pairs that reach
// cancellation (add/sub), tiny or huge products and quotients (mul/div/fma).
void Operands(Op op, uint64_t seed, uint64_t i, uint32_t& a, uint32_t& b, uint32_t& c) {
  const uint64_t r0 = SplitMix64At(seed, 4 * i), r1 = SplitMix64At(seed, 4 * i + 1);
  const uint64_t r2 = SplitMix64At(seed, 4 * i + 2), r3 = SplitMix64At(seed, 4 * i + 3);
  a = Operand(r0);
  b = Operand(r1);
  c = Operand(r2);
  const uint32_t kind = static_cast<uint32_t>(r3 % 4);
  const int32_t delta = static_cast<int32_t>((r3 >> 8) % 9) - 4;
  const uint32_t ea = (a >> 23) & 0xFF;
  if (kind == 1) {
    // Near cancellation: b = +-a nudged by a few ulps.
    b = (a ^ (op == Op::kSub ? 0u : 0x80000000u)) + static_cast<uint32_t>(delta);
  } else if (kind == 2 && (op == Op::kMul || op == Op::kDiv || op == Op::kFma)) {
    // Result exponent near the underflow or overflow boundary.
    const int32_t target = (r3 >> 16) & 1 ? -126 - static_cast<int32_t>((r3 >> 20) % 26) : 127;
    int32_t eb = op == Op::kDiv ? static_cast<int32_t>(ea) - target
                                : target - (static_cast<int32_t>(ea) - 127) + 127;
    eb += delta;
    if (eb >= 1 && eb <= 254 && ea >= 1 && ea <= 254) {
      b = (b & 0x807FFFFF) | static_cast<uint32_t>(eb) << 23;
    }
  }
  if (op == Op::kFma && (r3 >> 24) % 2 == 0) {
    // c near -(a*b): the product rounded in float32, negated, nudged.
    volatile float p = std::bit_cast<float>(a) * std::bit_cast<float>(b);
    c = (std::bit_cast<uint32_t>(p) ^ 0x80000000u) + static_cast<uint32_t>(delta);
  }
}

OpResult Soft(Op op, uint32_t a, uint32_t b, uint32_t c, const OpEnv& env) {
  const FormatSpec& f = Float32();
  switch (op) {
    case Op::kAdd: return Add(f, a, b, env);
    case Op::kSub: return Sub(f, a, b, env);
    case Op::kMul: return Mul(f, a, b, env);
    case Op::kDiv: return Div(f, a, b, env);
    case Op::kSqrt: return Sqrt(f, a, env);
    case Op::kFma: return Fma(f, a, b, c, env);
  }
  return {};
}

std::string Operands(Op op, uint32_t a, uint32_t b, uint32_t c) {
  std::string s = Describe(Float32(), a);
  if (op != Op::kSqrt) s += ", " + Describe(Float32(), b);
  if (op == Op::kFma) s += ", " + Describe(Float32(), c);
  return s;
}

constexpr uint64_t kCasesPerOpAndMode = 1'000'000;

// Native vs formats/ for one operation under every rounding mode, with FZ/DAZ as given.
void CompareOp(Op op, bool fz, bool daz, uint64_t cases) {
  MxcsrGuard guard;
  const uint64_t seed = Seed() ^ (static_cast<uint64_t>(op) << 56) ^ (fz ? 1ull << 50 : 0) ^
                        (daz ? 1ull << 51 : 0);
  for (const Mode& mode : kModes) {
    OpEnv env;
    env.rounding = mode.rounding;
    env.nan = NanProfile::kX86;
    env.flush_to_zero = fz;
    env.denormals_are_zero = daz;
    const uint32_t csr = MakeCsr(mode.rc, fz, daz);
    int failures = 0;
    for (uint64_t i = 0; i < cases && failures < 10; ++i) {
      uint32_t a, b, c;
      Operands(op, seed, i, a, b, c);
      const OpResult hw = op == Op::kFma ? NativeFma(a, b, c, csr) : NativeSse(op, a, b, csr);
      SetCsr(MakeCsr(0, false, false));
      const OpResult soft = Soft(op, a, b, c, env);
      bool same = hw == soft;
      if (op == Op::kFma && IsNanBits(Float32(), hw.bits) && IsNanBits(Float32(), soft.bits)) {
        // NaN by class: which NaN operand x86 returns depends on the instruction form. The
        // flags must agree, 0 * Inf + qNaN included (NanProfile::kX86 raises no v there).
        same = hw.flags == soft.flags;
      }
      if (!same) {
        ++failures;
        ADD_FAILURE() << OpName(op) << " " << mode.name << (fz ? " ftz" : "")
                      << (daz ? " daz" : "") << " seed 0x" << std::hex << seed << std::dec
                      << " case " << i << ": " << Operands(op, a, b, c) << "\n  hardware "
                      << Describe(Float32(), hw.bits) << " " << FlagsToString(hw.flags)
                      << "\n  formats  " << Describe(Float32(), soft.bits) << " "
                      << FlagsToString(soft.flags);
      }
    }
  }
}

class HardwareOpTest : public ::testing::TestWithParam<Op> {};

TEST_P(HardwareOpTest, MatchesFormatsUnderEachRoundingMode) {
  if (GetParam() == Op::kFma && !HasFma()) GTEST_SKIP() << "no FMA3 on this CPU";
  CompareOp(GetParam(), false, false, kCasesPerOpAndMode);
}

TEST_P(HardwareOpTest, FlushToZeroMatchesOpEnv) {
  if (GetParam() == Op::kFma && !HasFma()) GTEST_SKIP() << "no FMA3 on this CPU";
  CompareOp(GetParam(), true, false, kCasesPerOpAndMode / 4);
}

TEST_P(HardwareOpTest, DenormalsAreZeroMatchesOpEnv) {
  if (GetParam() == Op::kFma && !HasFma()) GTEST_SKIP() << "no FMA3 on this CPU";
  CompareOp(GetParam(), false, true, kCasesPerOpAndMode / 4);
}

TEST_P(HardwareOpTest, FlushToZeroAndDenormalsAreZeroMatchOpEnv) {
  if (GetParam() == Op::kFma && !HasFma()) GTEST_SKIP() << "no FMA3 on this CPU";
  CompareOp(GetParam(), true, true, kCasesPerOpAndMode / 4);
}

INSTANTIATE_TEST_SUITE_P(Sse, HardwareOpTest,
                         ::testing::Values(Op::kAdd, Op::kSub, Op::kMul, Op::kDiv, Op::kSqrt,
                                           Op::kFma),
                         [](const auto& param_info) { return std::string(OpName(param_info.param)); });

// ---- F16C ----

// Float32 inputs for conversions: a prime stride over all patterns, plus +-1024 neighbours of
// every exponent boundary and ties at every bit position, above random mantissa bits. Those bits
// come from Seed(): the default seed XORs nothing into the stream, so it draws the inputs the
// constant stream drew before FPCONFORM_SEED reached this function.
std::vector<uint32_t> ConversionInputs(uint64_t stride) {
  const uint64_t mask = Seed() ^ 0x2024'0611ull;
  std::vector<uint32_t> v;
  for (uint64_t x = 0; x <= 0xFFFFFFFFull; x += stride) v.push_back(static_cast<uint32_t>(x));
  for (uint32_t sign = 0; sign < 2; ++sign) {
    for (uint32_t e = 0; e < 256; ++e) {
      const uint32_t boundary = sign << 31 | e << 23;
      for (int32_t d = -1024; d <= 1024; ++d) v.push_back(boundary + static_cast<uint32_t>(d));
      for (uint32_t j = 1; j <= 23; ++j) {
        const uint32_t above = static_cast<uint32_t>(SplitMix64At(e ^ mask, j)) & 0x7FFFFF &
                               ~((1u << j) - 1u);
        for (int32_t d = -1; d <= 1; ++d) {
          v.push_back((boundary | above | (1u << (j - 1))) + static_cast<uint32_t>(d));
        }
      }
    }
  }
  return v;
}

template <int kImm>
__attribute__((target("avx,f16c"), noinline)) OpResult NativeCvtps2ph(uint32_t a,
                                                                      uint32_t csr) {
  volatile float va = std::bit_cast<float>(a);
  __m128 x = _mm_set_ss(va);
  SetCsr(csr);
  Pin(x);
  __m128i r = _mm_cvtps_ph(x, kImm);
  Pin(r);
  const uint32_t after = GetCsr();
  return {static_cast<uint16_t>(_mm_extract_epi16(r, 0)), FlagsFromMxcsr(after)};
}

__attribute__((target("avx,f16c"), noinline)) OpResult NativeCvtph2ps(uint16_t h, uint32_t csr) {
  __m128i x = _mm_cvtsi32_si128(h);
  SetCsr(csr);
  Pin(x);
  __m128 r = _mm_cvtph_ps(x);
  Pin(r);
  const uint32_t after = GetCsr();
  return {std::bit_cast<uint32_t>(_mm_cvtss_f32(r)), FlagsFromMxcsr(after)};
}

TEST(HardwareF16cTest, Cvtps2phMatchesConvertInEachRounding) {
  if (!HasF16c()) GTEST_SKIP() << "no F16C on this CPU";
  MxcsrGuard guard;
  const std::vector<uint32_t> inputs = ConversionInputs(4093);
  // Immediate bits 1:0 select the rounding (0 rne, 1 rdn, 2 rup, 3 rtz), bit 2 clear.
  using Fn = OpResult (*)(uint32_t, uint32_t);
  const Fn fns[] = {NativeCvtps2ph<0>, NativeCvtps2ph<1>, NativeCvtps2ph<2>, NativeCvtps2ph<3>};
  for (int m = 0; m < 4; ++m) {
    OpEnv env;
    env.rounding = kModes[m].rounding;
    env.nan = NanProfile::kX86;
    int failures = 0;
    for (size_t i = 0; i < inputs.size() && failures < 10; ++i) {
      const OpResult hw = fns[m](inputs[i], MakeCsr(0, false, false));
      const OpResult soft = Convert(Float32(), Float16(), inputs[i], env);
      if (hw != soft) {
        ++failures;
        ADD_FAILURE() << "vcvtps2ph imm " << m << " (" << kModes[m].name << ") "
                      << Describe(Float32(), inputs[i]) << "\n  hardware "
                      << Describe(Float16(), hw.bits) << " " << FlagsToString(hw.flags)
                      << "\n  formats  " << Describe(Float16(), soft.bits) << " "
                      << FlagsToString(soft.flags);
      }
    }
  }
}

TEST(HardwareF16cTest, Cvtph2psMatchesConvertOnAllFloat16) {
  if (!HasF16c()) GTEST_SKIP() << "no F16C on this CPU";
  MxcsrGuard guard;
  OpEnv env;
  env.nan = NanProfile::kX86;
  int failures = 0;
  for (uint32_t h = 0; h < 65536 && failures < 10; ++h) {
    const OpResult hw = NativeCvtph2ps(static_cast<uint16_t>(h), MakeCsr(0, false, false));
    const OpResult soft = Convert(Float16(), Float32(), h, env);
    if (hw != soft) {
      ++failures;
      ADD_FAILURE() << "vcvtph2ps " << Describe(Float16(), h) << "\n  hardware "
                    << Describe(Float32(), hw.bits) << " " << FlagsToString(hw.flags)
                    << "\n  formats  " << Describe(Float32(), soft.bits) << " "
                    << FlagsToString(soft.flags);
    }
  }
}

// ---- AVX512-BF16 ----

// VCVTNEPS2BF16 on 16 inputs at a time (it reads and writes no MXCSR state).
__attribute__((target("avx512f,avx512vl,avx512bf16"))) void NativeCvtneps2bf16(
    const uint32_t* in, uint16_t* out) {
  const __m512 x = _mm512_castsi512_ps(_mm512_loadu_si512(in));
  const __m256bh r = _mm512_cvtneps_pbh(x);
  std::memcpy(out, &r, 32);
}

std::vector<uint16_t> RunBf16(const std::vector<uint32_t>& in) {
  std::vector<uint32_t> padded(in);
  padded.resize((in.size() + 15) / 16 * 16, 0);
  std::vector<uint16_t> out(padded.size());
  for (size_t i = 0; i < padded.size(); i += 16) NativeCvtneps2bf16(&padded[i], &out[i]);
  out.resize(in.size());
  return out;
}

std::vector<uint32_t> Bf16Inputs() {
  std::vector<uint32_t> v = ConversionInputs(4093);
  // Every 7th float32 subnormal pattern of both signs (the inputs the instruction flushes).
  for (uint32_t sign = 0; sign < 2; ++sign) {
    for (uint32_t f = 1; f < 0x800000; f += 7) v.push_back(sign << 31 | f);
  }
  return v;
}

TEST(HardwareBf16Test, Cvtneps2bf16MatchesConvertOnNonSubnormalInputs) {
  if (!HasAvx512Bf16()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  const std::vector<uint32_t> in = Bf16Inputs();
  const std::vector<uint16_t> hw = RunBf16(in);
  int failures = 0, compared = 0;
  for (size_t i = 0; i < in.size() && failures < 10; ++i) {
    if (((in[i] >> 23) & 0xFF) == 0 && (in[i] & 0x7FFFFF) != 0) continue;  // Subnormal input.
    ++compared;
    const uint64_t soft = Convert(Float32(), BFloat16(), in[i], OpEnv{}).bits;
    const bool both_nan = IsNanBits(BFloat16(), hw[i]) && IsNanBits(BFloat16(), soft);
    if (both_nan ? false : hw[i] != soft) {
      ++failures;
      ADD_FAILURE() << "vcvtneps2bf16 " << Describe(Float32(), in[i]) << ": hardware "
                    << Describe(BFloat16(), hw[i]) << ", formats " << Describe(BFloat16(), soft);
    }
  }
  EXPECT_GT(compared, 1'000'000);
}

// The documented flushing, modelled as an OpEnv profile: on every input, subnormals included,
// VCVTNEPS2BF16 == Convert under OpEnv{denormals_are_zero, flush_to_zero} (NaN by class).
TEST(HardwareBf16Test, Cvtneps2bf16IsConvertWithDazAndFtz) {
  if (!HasAvx512Bf16()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  const std::vector<uint32_t> in = Bf16Inputs();
  const std::vector<uint16_t> hw = RunBf16(in);
  OpEnv env;
  env.denormals_are_zero = true;
  env.flush_to_zero = true;
  int failures = 0, nan_bits_differ = 0;
  for (size_t i = 0; i < in.size() && failures < 10; ++i) {
    const uint64_t soft = Convert(Float32(), BFloat16(), in[i], env).bits;
    const bool both_nan = IsNanBits(BFloat16(), hw[i]) && IsNanBits(BFloat16(), soft);
    if (both_nan) {
      nan_bits_differ += hw[i] != soft;
      continue;
    }
    if (hw[i] != soft) {
      ++failures;
      ADD_FAILURE() << "vcvtneps2bf16 " << Describe(Float32(), in[i]) << ": hardware "
                    << Describe(BFloat16(), hw[i]) << ", formats (daz+ftz) "
                    << Describe(BFloat16(), soft);
    }
  }
  // Recorded, not required: NaN payloads are compared by class.
  RecordProperty("nan_bits_differ", nan_bits_differ);
  std::printf("vcvtneps2bf16: NaN results whose bits differ from Convert: %d\n", nan_bits_differ);
}

#else  // !defined(__x86_64__)

TEST(HardwareTest, X86Only) { GTEST_SKIP() << "the hardware checks need an x86-64 CPU"; }

#endif

}  // namespace
}  // namespace fpconform
