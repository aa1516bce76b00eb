// Exhaustive proof that the fast conversions (fast_convert.h) equal the general path
// Convert(Float32(), to, x, OpEnv{saturate}) for ALL 2^32 float32 patterns, on every code path
// this CPU can run (portable, AVX2, AVX-512; F16C for float16): bfloat16, float16, and
// float8_e4m3fn / float8_e5m2 with and without saturation. Two threads, each taking
// interleaved chunks; about 4.3e9 general-path calls per conversion.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "formats/fast_convert.h"
#include "formats/fast_convert_test_util.h"
#include "formats/ops.h"
#include "formats/text.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

constexpr uint64_t kChunk = 1 << 16;
constexpr uint64_t kChunks = (uint64_t{1} << 32) / kChunk;
constexpr int kThreads = 2;

// fast(in, out) converts a chunk; OutT is the destination container.
template <typename OutT>
void Exhaustive(const FormatSpec& to, bool saturate,
                const std::function<void(std::span<const uint32_t>, std::span<OutT>)>& fast) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> isas = FastConvertIsas();
  OpEnv env;
  env.saturate = saturate;
  std::atomic<uint64_t> mismatches{0};
  std::mutex mu;
  std::vector<std::string> reports;
  auto work = [&](int thread) {
    std::vector<uint32_t> in(kChunk);
    std::vector<OutT> expected(kChunk), out(kChunk);
    for (uint64_t c = thread; c < kChunks; c += kThreads) {
      for (uint64_t i = 0; i < kChunk; ++i) in[i] = static_cast<uint32_t>(c * kChunk + i);
      for (uint64_t i = 0; i < kChunk; ++i) {
        expected[i] = static_cast<OutT>(Convert(Float32(), to, in[i], env).bits);
      }
      for (const std::string& isa : isas) {
        SetFastConvertIsaForTesting(isa);
        fast(in, out);
        for (uint64_t i = 0; i < kChunk; ++i) {
          if (out[i] == expected[i]) continue;
          if (mismatches.fetch_add(1) < 10) {
            std::lock_guard<std::mutex> lock(mu);
            reports.push_back(isa + ": float32 " + Describe(Float32(), in[i]) + " -> fast " +
                              Describe(to, out[i]) + ", general " + Describe(to, expected[i]));
          }
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (std::thread& t : threads) t.join();
  for (const std::string& r : reports) ADD_FAILURE() << r;
  EXPECT_EQ(mismatches.load(), 0u) << to.name << (saturate ? " sat" : "");
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("float32 -> %s%s: all 2^32 inputs, paths:", std::string(to.name).c_str(),
              saturate ? " (sat)" : "");
  for (const std::string& isa : isas) std::printf(" %s", isa.c_str());
  std::printf(", %.1f s\n", s);
}

TEST(FastConvertExhaustiveTest, BFloat16) {
  Exhaustive<uint16_t>(BFloat16(), false, [](auto in, auto out) { ConvertF32ToBF16(in, out); });
}

TEST(FastConvertExhaustiveTest, Float16) {
  Exhaustive<uint16_t>(Float16(), false, [](auto in, auto out) { ConvertF32ToF16(in, out); });
}

TEST(FastConvertExhaustiveTest, Float8E4M3FN) {
  for (bool sat : {false, true}) {
    Exhaustive<uint8_t>(Float8E4M3FN(), sat, [sat](auto in, auto out) {
      (void)ConvertF32ToFp8(Float8E4M3FN(), sat, in, out);
    });
  }
}

TEST(FastConvertExhaustiveTest, Float8E5M2) {
  for (bool sat : {false, true}) {
    Exhaustive<uint8_t>(Float8E5M2(), sat, [sat](auto in, auto out) {
      (void)ConvertF32ToFp8(Float8E5M2(), sat, in, out);
    });
  }
}

}  // namespace
}  // namespace fpconform
