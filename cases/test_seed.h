// The seed of a randomized test: FPCONFORM_SEED (decimal or 0x hex) when set, else the test's
// default; printed once per call on stderr so that a failure can be replayed with the same seed
// (MPFR's tests do the same with GMP_CHECK_RANDOMIZE).
//
// Example:
//   const uint64_t seed = TestSeed(2026, "formula_test");
//   PinnedRng rng(DeriveSeed(seed, {case_index}));
#ifndef FPCONFORM_CASES_TEST_SEED_H_
#define FPCONFORM_CASES_TEST_SEED_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace fpconform {

inline uint64_t TestSeed(uint64_t default_seed, const char* test) {
  uint64_t seed = default_seed;
  if (const char* e = std::getenv("FPCONFORM_SEED"); e != nullptr && *e != '\0') {
    seed = std::strtoull(e, nullptr, 0);
  }
  std::fprintf(stderr, "%s: seed %llu (FPCONFORM_SEED=%llu replays it)\n", test,
               static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  return seed;
}

}  // namespace fpconform

#endif  // FPCONFORM_CASES_TEST_SEED_H_
