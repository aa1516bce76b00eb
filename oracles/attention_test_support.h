// What the attention oracle's test and benchmark share (attention_test.cc,
// attention_benchmark.cc): bfloat16 inputs made from doubles.
//
// Example:
//   for (int64_t i = 0; i < s * d; ++i) q.push_back(ToBf16(rng.Normal()));
#ifndef FPCONFORM_ORACLES_ATTENTION_TEST_SUPPORT_H_
#define FPCONFORM_ORACLES_ATTENTION_TEST_SUPPORT_H_

#include <cstdint>
#include <cstring>

namespace fpconform {

// x as a float32, truncated to its top 16 bits: an exact bfloat16 value (as a double).
inline double ToBf16(double x) {
  float f = static_cast<float>(x);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u &= 0xFFFF0000u;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace fpconform

#endif  // FPCONFORM_ORACLES_ATTENTION_TEST_SUPPORT_H_
