// The seed of a randomized test: FPCONFORM_SEED (decimal or 0x hex) when set, else the test's
// default; printed once per call on stderr so that a failure can be replayed with the same seed
// (MPFR's tests do the same with GMP_CHECK_RANDOMIZE). A value that is not a whole unsigned
// 64-bit number (a sign, leading blanks, trailing characters, overflow) stops the test program
// with a message instead of silently drawing from seed 0.
//
// Example:
//   const uint64_t seed = TestSeed(2026, "formula_test");
//   PinnedRng rng(DeriveSeed(seed, {case_index}));
#ifndef FPCONFORM_CASES_TEST_SEED_H_
#define FPCONFORM_CASES_TEST_SEED_H_

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace fpconform {

inline uint64_t TestSeed(uint64_t default_seed, const char* test) {
  uint64_t seed = default_seed;
  if (const char* e = std::getenv("FPCONFORM_SEED"); e != nullptr && *e != '\0') {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(e, &end, 0);
    if (*e < '0' || *e > '9' || errno != 0 || *end != '\0') {
      std::fprintf(stderr,
                   "%s: FPCONFORM_SEED=\"%s\" is not an unsigned 64-bit integer (decimal or 0x "
                   "hex)\n",
                   test, e);
      std::exit(2);
    }
    seed = v;
  }
  std::fprintf(stderr, "%s: seed %llu (FPCONFORM_SEED=%llu replays it)\n", test,
               static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  return seed;
}

}  // namespace fpconform

#endif  // FPCONFORM_CASES_TEST_SEED_H_
