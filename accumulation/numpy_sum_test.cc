// The numpy-sum-f32 model against the real NumPy (Debian's python3-numpy, run as
// /usr/bin/python3, not whatever python3 is on PATH): np.sum of float32 arrays of many lengths
// (1..300, some up to 8192, and above 8192 where NumPy sums 8192-element buffer chunks in order:
// chain.chunk), bit for bit. Skipped, with a message, when that NumPy is absent.
// Seeded: the same arrays on every run (FPCONFORM_SEED overrides the seed, which is printed).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "accumulation/evaluate.h"
#include "accumulation/model.h"
#include "base/testing/temp_dir.h"
#include "cases/pinned_random.h"
#include "cases/test_seed.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

// A finite float32 pattern: random sign and significand, exponent within +-`spread` of 2^0.
uint32_t RandomFloat32(PinnedRng& rng, int spread) {
  const uint64_t r = rng.Next();
  const uint32_t sign = static_cast<uint32_t>(r >> 63) << 31;
  const int exp = 127 + static_cast<int>((r >> 32) % static_cast<uint64_t>(2 * spread + 1)) -
                  spread;
  return sign | (static_cast<uint32_t>(exp) << 23) | static_cast<uint32_t>(r & 0x7FFFFF);
}

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

TEST(NumpySumTest, MatchesRealNumpyBitForBit) {
  if (std::system((std::string(kPython) + " -c 'import numpy' > /dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << kPython << " cannot import numpy (install python3-numpy): skipping the "
                 << "real-NumPy check of numpy-sum-f32";
  }
  absl::StatusOr<Model> model = LoadModelFile(FPCONFORM_MODELS_SOURCE_DIR "/numpy-sum-f32.toml");
  ASSERT_TRUE(model.ok()) << model.status();

  PinnedRng rng(TestSeed(20240601, "NumpySumTest.MatchesRealNumpyBitForBit"));

  std::vector<int> lengths;
  for (int n = 1; n <= 300; ++n) lengths.push_back(n);
  for (int n : {511, 512, 513, 1000, 1024, 1031, 2047, 2048, 4095, 4096, 4097, 5000, 8191, 8192,
                8193, 8200, 10000, 16384, 16385, 20000, 24577, 65537}) {
    lengths.push_back(n);
  }
  // Each length twice: a narrow exponent spread (many ties and carries), a wide one (swamping).
  std::vector<std::vector<uint64_t>> arrays;
  for (int spread : {2, 20}) {
    for (int n : lengths) {
      std::vector<uint64_t> x(static_cast<size_t>(n));
      for (auto& v : x) v = RandomFloat32(rng, spread);
      arrays.push_back(std::move(x));
    }
  }

  std::string in;
  PutU32(in, static_cast<uint32_t>(arrays.size()));
  for (const auto& x : arrays) {
    PutU32(in, static_cast<uint32_t>(x.size()));
    for (uint64_t v : x) PutU32(in, static_cast<uint32_t>(v));
  }
  const TempDir tmp("numpy_sum_test");
  const std::string in_path = tmp / "in.bin";
  const std::string out_path = tmp / "out.bin";
  std::ofstream(in_path, std::ios::binary)
      .write(in.data(), static_cast<std::streamsize>(in.size()));
  const std::string cmd = std::string(kPython) + " " FPCONFORM_NUMPY_SCRIPT " " + in_path + " " +
                          out_path;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream f(out_path, std::ios::binary);
  std::string got((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_EQ(got.size(), 4 * arrays.size());

  int mismatches = 0;
  for (size_t i = 0; i < arrays.size(); ++i) {
    uint32_t numpy_bits = 0;
    for (int b = 0; b < 4; ++b) {
      numpy_bits |= static_cast<uint32_t>(static_cast<unsigned char>(got[4 * i + b])) << (8 * b);
    }
    absl::StatusOr<EvalResult> r = EvaluateSum(*model, arrays[i], 0);
    ASSERT_TRUE(r.ok()) << r.status();
    if (r->bits != numpy_bits && ++mismatches <= 10) {
      ADD_FAILURE() << "array " << i << " (n = " << arrays[i].size() << "): model 0x" << std::hex
                    << r->bits << ", numpy 0x" << numpy_bits;
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << arrays.size() << " arrays";
}

}  // namespace
}  // namespace fpconform
