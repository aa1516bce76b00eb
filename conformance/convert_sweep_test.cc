// float32 -> {bfloat16, float16, every FP8 format} under RNE, with and without sat, checked
// against an independently written reference: a monotone sweep.
//
// The reference shares no code with formats/RoundPack. It lists the target's finite
// non-negative values in increasing order (decoded here from the FormatSpec fields by their
// textbook formula, as doubles, which hold every such value exactly), then walks the positive
// float32 patterns in increasing order with a pointer into that list: the result changes exactly
// at the midpoints between neighbours, where a tie goes to the neighbour whose encoding is even
// (IEEE 754-2019 §4.3.1). Past the largest finite value the next value of the unbounded-exponent
// grid decides overflow. Flags come from the same walk: x when the value is not in the list, o
// on overflow, u when the value is below the midpoint under 2^emin of the unbounded grid (tiny
// after rounding) and inexact. Negative inputs mirror positive ones.
//
// The binary takes the stride of the walk as its first argument: ctest runs it with a prime
// stride under the quick label and with stride 1 (all 2^32 patterns) under exhaustive.
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "formats/ops.h"
#include "formats/text.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

uint32_t g_stride = 1;

struct Target {
  const FormatSpec* f;
  std::vector<double> values;  // Finite non-negative values, increasing; values[0] == 0.
  std::vector<uint64_t> codes; // Their encodings (container bits).
  double next_beyond_max;      // The unbounded grid's successor of the max finite value.
  bool next_is_even;           // Its significand parity (1.111 -> 10.00 is even; fn 1.110 -> 1.111 odd).
  double tiny_threshold;       // 2^emin - 2^(emin-p-1): below it the value is tiny after rounding.
};

double Pow2(int e) { return std::ldexp(1.0, e); }

Target BuildTarget(const FormatSpec& f) {
  Target t{&f, {}, {}, 0, false, 0};
  const int m = f.fraction_bits;
  const int emask = (1 << f.exponent_bits) - 1;
  for (uint64_t code = 0; code < (uint64_t{1} << (f.width - 1)); ++code) {
    const int e = static_cast<int>(code >> m) & emask;
    const uint64_t frac = code & ((uint64_t{1} << m) - 1);
    bool finite = true;
    if (f.nonfinite == NonFinite::kIeee) finite = e != emask;
    else if (f.nan_encoding == NanEncoding::kAllOnes) finite = !(e == emask && frac == (uint64_t{1} << m) - 1);
    if (!finite) continue;
    double v = e == 0 ? static_cast<double>(frac) * Pow2(1 - f.bias - m)
                      : static_cast<double>((uint64_t{1} << m) + frac) * Pow2(e - f.bias - m);
    t.values.push_back(v);
    t.codes.push_back(code);
  }
  // Encodings are monotone in value for non-negative codes; check it rather than assume it.
  for (size_t i = 1; i < t.values.size(); ++i) {
    if (!(t.values[i] > t.values[i - 1])) std::abort();
  }
  const uint64_t max_code = t.codes.back();
  const double max = t.values.back();
  const int max_exp = static_cast<int>(std::floor(std::log2(max)));
  t.next_beyond_max = max + Pow2(max_exp - m);
  t.next_is_even = (max_code & 1) != 0;  // Successor of an odd significand is even.
  const int emin = 1 - f.bias;
  t.tiny_threshold = Pow2(emin) - Pow2(emin - (m + 1) - 1);
  return t;
}

double F32Value(uint32_t bits) {
  const int e = static_cast<int>(bits >> 23) & 0xFF;
  const uint32_t frac = bits & 0x7FFFFF;
  return e == 0 ? static_cast<double>(frac) * Pow2(-149)
                : static_cast<double>(0x800000 | frac) * Pow2(e - 150);
}

struct Expected {
  uint64_t bits;
  Flags flags;
  bool nan;
};

class Sweeper {
 public:
  Sweeper(const Target& t, bool sat) : t_(t), sat_(sat) {}

  // Positions the walk for the first value >= x.
  void Seek(double x) {
    j_ = 0;
    while (j_ + 1 < t_.values.size() && t_.values[j_ + 1] <= x) ++j_;
  }

  // x >= 0 finite, non-decreasing across calls.
  Expected Positive(double x) {
    while (j_ + 1 < t_.values.size() && t_.values[j_ + 1] <= x) ++j_;
    const double lo = t_.values[j_];
    const uint64_t lo_code = t_.codes[j_];
    if (x == lo) return {lo_code << t_.f->pad_bits, 0, false};
    Flags flags = kInexact;
    if (x < t_.tiny_threshold) flags |= kUnderflow;
    const bool at_top = j_ + 1 == t_.values.size();
    const double hi = at_top ? t_.next_beyond_max : t_.values[j_ + 1];
    const bool hi_even = at_top ? t_.next_is_even : (t_.codes[j_ + 1] & 1) == 0;
    const double mid = lo + (hi - lo) / 2;  // Exact: both are short binary fractions.
    const bool up = x > mid || (x == mid && hi_even);
    if (!up) return {lo_code << t_.f->pad_bits, flags, false};
    if (!at_top) return {t_.codes[j_ + 1] << t_.f->pad_bits, flags, false};
    flags |= kOverflow;
    if (sat_) return {t_.codes.back() << t_.f->pad_bits, flags, false};
    if (t_.f->nonfinite == NonFinite::kIeee) {
      const uint64_t inf = static_cast<uint64_t>((1 << t_.f->exponent_bits) - 1) << t_.f->fraction_bits;
      return {inf << t_.f->pad_bits, flags, false};
    }
    return {0, flags, true};
  }

 private:
  const Target& t_;
  bool sat_;
  size_t j_ = 0;
};

uint64_t Negate(const FormatSpec& f, uint64_t bits) {
  const uint64_t sign = uint64_t{1} << (f.width - 1);
  if (bits == 0 && f.nan_encoding == NanEncoding::kNegativeZero) return 0;  // No -0.
  return bits | sign;
}

struct Failure {
  std::string text;
};

// Checks float32 patterns [begin, end) (positive, finite), both signs, stepping by stride.
uint64_t SweepRange(const Target& t, bool sat, uint32_t begin, uint32_t end, uint32_t stride,
                    std::vector<std::string>& failures) {
  Sweeper sweeper(t, sat);
  sweeper.Seek(F32Value(begin));
  OpEnv env;
  env.saturate = sat;
  uint64_t checked = 0;
  for (uint64_t b = begin; b < end; b += stride) {
    const uint32_t bits = static_cast<uint32_t>(b);
    Expected e = sweeper.Positive(F32Value(bits));
    for (int neg = 0; neg < 2; ++neg) {
      const uint32_t in = neg ? bits | 0x80000000u : bits;
      OpResult got = Convert(Float32(), *t.f, in, env);
      uint64_t want = neg && !e.nan ? Negate(*t.f, e.bits) : e.bits;
      bool ok = got.flags == e.flags &&
                (e.nan ? IsNanBits(*t.f, got.bits) : got.bits == want);
      ++checked;
      if (!ok && failures.size() < 10) {
        failures.push_back(std::string(t.f->name) + (sat ? ":sat" : "") + " input " +
                           Describe(Float32(), in) + " expected " +
                           (e.nan ? std::string("NaN") : Describe(*t.f, want)) + " " +
                           FlagsToString(e.flags) + " got " + Describe(*t.f, got.bits) + " " +
                           FlagsToString(got.flags));
      }
    }
  }
  return checked;
}

class ConvertSweepTest : public ::testing::TestWithParam<std::string_view> {};

TEST_P(ConvertSweepTest, Float32ToFormatRne) {
  const FormatSpec* f = FindFormat(GetParam());
  ASSERT_NE(f, nullptr);
  const Target target = BuildTarget(*f);
  uint64_t total = 0;
  for (bool sat : {false, true}) {
    // Two threads over the positive finite patterns [0, 0x7F800000).
    const uint32_t split = 0x3F800000u - (0x3F800000u % g_stride);
    std::vector<std::string> fail_a, fail_b;
    uint64_t n_a = 0, n_b = 0;
    std::thread worker([&] { n_b = SweepRange(target, sat, split, 0x7F800000u, g_stride, fail_b); });
    n_a = SweepRange(target, sat, 0, split, g_stride, fail_a);
    worker.join();
    total += n_a + n_b;
    for (const auto& s : fail_a) ADD_FAILURE() << s;
    for (const auto& s : fail_b) ADD_FAILURE() << s;
    // Inf, and a sample of NaNs (every NaN payload class: quiet, signaling, both signs).
    OpEnv env;
    env.saturate = sat;
    for (uint32_t sign : {0u, 0x80000000u}) {
      OpResult inf = Convert(Float32(), *f, 0x7F800000u | sign, env);
      if (sat) {
        EXPECT_EQ(inf.bits, sign ? Negate(*f, target.codes.back()) : target.codes.back());
      } else if (f->nonfinite == NonFinite::kIeee) {
        EXPECT_EQ(inf.bits & ~(uint64_t{1} << (f->width - 1)),
                  uint64_t{(1u << f->exponent_bits) - 1} << f->fraction_bits);
      } else {
        EXPECT_TRUE(IsNanBits(*f, inf.bits));
      }
      for (uint32_t nan : {0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu, 0x7FA00000u}) {
        OpResult r = Convert(Float32(), *f, nan | sign, env);
        EXPECT_TRUE(IsNanBits(*f, r.bits)) << HexBits(Float32(), nan | sign);
        EXPECT_EQ(r.flags, (nan & 0x00400000u) ? 0 : kInvalid) << HexBits(Float32(), nan | sign);
      }
      total += 5;
    }
  }
  std::cout << "[ cases    ] " << f->name << ": " << total << " conversions checked (stride "
            << g_stride << ")\n";
}

INSTANTIATE_TEST_SUITE_P(AllNarrowFormats, ConvertSweepTest,
                         ::testing::Values("bfloat16", "float16", "float8_e4m3fn", "float8_e5m2",
                                           "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3"),
                         [](const auto& param_info) { return std::string(param_info.param); });

}  // namespace
}  // namespace fpconform

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc > 1) fpconform::g_stride = static_cast<uint32_t>(std::strtoul(argv[1], nullptr, 10));
  if (fpconform::g_stride == 0) fpconform::g_stride = 1;
  return RUN_ALL_TESTS();
}
