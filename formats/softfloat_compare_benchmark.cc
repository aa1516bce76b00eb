// fpconform's Add, Sub, Mul and Fma against Berkeley SoftFloat-3e's f32_add, f32_sub, f32_mul,
// f32_mulAdd (and f16_*) in one process, on the same pinned random normal operands, RNE. Built
// only when CMake is given a SoftFloat build outside the repository (never vendored, never in
// ctest):
//
//   make -C <softfloat>/build/Linux-x86_64-GCC SPECIALIZE_TYPE=8086-SSE
//   cmake -B build -DFPCONFORM_SOFTFLOAT_DIR=<softfloat>
//   ninja -C build softfloat_compare_benchmark
//   ./build/formats/softfloat_compare_benchmark --benchmark_min_time=0.5
//
// Before timing, each benchmark checks that both give the same bits and flags on every operand
// (SkipWithError otherwise). SoftFloat-3e has no bfloat16 arithmetic: the bfloat16 rows time
// fpconform alone (compare them with the float16 rows). Time per operation: the reported time
// divided by the operand count, the third argument (items/s is operations per second).
//
// Two operand counts: 4096 operands stay in L1/L2, and the same sequence repeats in every
// iteration, so a modern branch predictor learns much of it (SoftFloat's branches on sign and
// exponent order then cost little); 65536 are too many to learn, and the branches on random
// signs and orders mispredict as they would on real data.
#include <cstdint>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "cases/pinned_random.h"
#include "formats/ops.h"

extern "C" {
#include "softfloat.h"
}

namespace fpconform {
namespace {

enum Op { kAdd, kSub, kMul, kFma };
enum Fmt { kF32, kBF16, kF16 };

const FormatSpec& Format(int fmt) {
  return fmt == kF32 ? Float32() : fmt == kBF16 ? BFloat16() : Float16();
}

// Normal operands with random sign and fraction and exponents in [2^-s, 2^s), s = 24 for float32
// and bfloat16 and 7 for float16, so that products and sums stay normal (the both-normal entry).
std::vector<uint32_t> RandomNormal(int fmt, uint64_t seed, size_t n) {
  const FormatSpec& f = Format(fmt);
  const uint32_t span = fmt == kF16 ? 7 : 24;
  std::vector<uint32_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = SplitMix64At(seed, i);
    const uint32_t e = static_cast<uint32_t>(f.bias) - span + static_cast<uint32_t>((r >> 32) % (2 * span));
    const uint32_t frac = static_cast<uint32_t>(r) & ((1u << f.fraction_bits) - 1);
    v[i] = static_cast<uint32_t>(r >> 63) << (f.width - 1) | e << f.fraction_bits | frac;
  }
  return v;
}

struct Operands {
  std::vector<uint32_t> a, b, c;
};
Operands MakeOperands(int fmt, size_t n) {
  return {RandomNormal(fmt, 11, n), RandomNormal(fmt, 12, n), RandomNormal(fmt, 13, n)};
}

uint32_t FpconformOp(int op, const FormatSpec& f, uint32_t a, uint32_t b, uint32_t c,
                     const OpEnv& env, Flags* flags) {
  const OpResult r = op == kAdd   ? Add(f, a, b, env)
                     : op == kSub ? Sub(f, a, b, env)
                     : op == kMul ? Mul(f, a, b, env)
                                  : Fma(f, a, b, c, env);
  *flags = r.flags;
  return static_cast<uint32_t>(r.bits);
}

// SoftFloat's flags in fpconform's bits.
Flags FromSoftFloat(uint_fast8_t sf) {
  Flags f = 0;
  if (sf & softfloat_flag_inexact) f |= kInexact;
  if (sf & softfloat_flag_underflow) f |= kUnderflow;
  if (sf & softfloat_flag_overflow) f |= kOverflow;
  if (sf & softfloat_flag_infinite) f |= kDivideByZero;
  if (sf & softfloat_flag_invalid) f |= kInvalid;
  return f;
}

uint32_t SoftFloatOp(int op, int fmt, uint32_t a, uint32_t b, uint32_t c) {
  if (fmt == kF32) {
    const float32_t x{a}, y{b}, z{c};
    return op == kAdd   ? f32_add(x, y).v
           : op == kSub ? f32_sub(x, y).v
           : op == kMul ? f32_mul(x, y).v
                        : f32_mulAdd(x, y, z).v;
  }
  const float16_t x{static_cast<uint16_t>(a)}, y{static_cast<uint16_t>(b)},
      z{static_cast<uint16_t>(c)};
  return op == kAdd   ? f16_add(x, y).v
         : op == kSub ? f16_sub(x, y).v
         : op == kMul ? f16_mul(x, y).v
                      : f16_mulAdd(x, y, z).v;
}

// Both on every operand: the same bits and flags.
bool SameResults(int op, int fmt, const Operands& in) {
  const OpEnv env;
  for (size_t i = 0; i < in.a.size(); ++i) {
    Flags flags;
    const uint32_t ours = FpconformOp(op, Format(fmt), in.a[i], in.b[i], in.c[i], env, &flags);
    softfloat_exceptionFlags = 0;
    const uint32_t theirs = SoftFloatOp(op, fmt, in.a[i], in.b[i], in.c[i]);
    if (ours != theirs || flags != FromSoftFloat(softfloat_exceptionFlags)) return false;
  }
  return true;
}

const char* const kOpNames[] = {"add", "sub", "mul", "fma"};
const char* const kFmtNames[] = {"float32", "bfloat16", "float16"};

// Args: op (0 add, 1 sub, 2 mul, 3 fma), format (0 float32, 1 bfloat16, 2 float16), operand
// count.
// The loops below are alike on purpose: one call per operation, result and flags stored.
void BM_Fpconform(benchmark::State& state) {
  const int op = static_cast<int>(state.range(0)), fmt = static_cast<int>(state.range(1));
  const size_t n = static_cast<size_t>(state.range(2));
  const Operands in = MakeOperands(fmt, n);
  if (fmt != kBF16 && !SameResults(op, fmt, in)) {
    state.SkipWithError("fpconform and SoftFloat differ");
    return;
  }
  std::vector<uint32_t> out(n);
  const OpEnv env;
  const FormatSpec& f = Format(fmt);
  for (auto _ : state) {
    for (size_t i = 0; i < n; ++i) {
      Flags flags;
      out[i] = FpconformOp(op, f, in.a[i], in.b[i], in.c[i], env, &flags) ^ flags;
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
  state.SetLabel(std::string(kFmtNames[fmt]) + " " + kOpNames[op] + " n=" + std::to_string(n));
}
BENCHMARK(BM_Fpconform)
    ->ArgsProduct({{kAdd, kSub, kMul, kFma}, {kF32, kBF16, kF16}, {4096, 65536}});

void BM_SoftFloat(benchmark::State& state) {
  const int op = static_cast<int>(state.range(0)), fmt = static_cast<int>(state.range(1));
  const size_t n = static_cast<size_t>(state.range(2));
  const Operands in = MakeOperands(fmt, n);
  std::vector<uint32_t> out(n);
  softfloat_roundingMode = softfloat_round_near_even;
  softfloat_detectTininess = softfloat_tininess_afterRounding;
  for (auto _ : state) {
    for (size_t i = 0; i < n; ++i) {
      softfloat_exceptionFlags = 0;
      out[i] = SoftFloatOp(op, fmt, in.a[i], in.b[i], in.c[i]) ^ softfloat_exceptionFlags;
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
  state.SetLabel(std::string(kFmtNames[fmt]) + " " + kOpNames[op] + " n=" + std::to_string(n));
}
BENCHMARK(BM_SoftFloat)->ArgsProduct({{kAdd, kSub, kMul, kFma}, {kF32, kF16}, {4096, 65536}});

}  // namespace
}  // namespace fpconform
