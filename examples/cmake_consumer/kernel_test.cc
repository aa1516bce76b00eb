// A C++ kernel test with the fpconform GoogleTest helper: the dumped output conforms to
// trainium2-bf16, the wrong one does not (and says why).
#include <cstdio>
#include <string>

#include "cases/tensor_file.h"
#include "gtest/gtest.h"
#include "reports/gtest_audit.h"

namespace {

std::string g_dir;

fpconform::Tensor Read(const std::string& name, const std::string& dtype = "") {
  absl::StatusOr<fpconform::Tensor> t = fpconform::ReadTensor(g_dir + "/" + name, {.dtype = dtype});
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : fpconform::Tensor{};
}

TEST(KernelTest, MatmulConformsToTrainium2) {
  const fpconform::Tensor a = Read("a.npy", "bfloat16"), b = Read("b.npy", "bfloat16");
  EXPECT_CONFORMS(Read("out.npy"), a, b, "trainium2-bf16");
}

TEST(KernelTest, WrongMatmulIsCaught) {
  const fpconform::Tensor a = Read("a.npy", "bfloat16"), b = Read("b.npy", "bfloat16");
  const testing::AssertionResult r =
      fpconform::gtest::ConformsToPlatform(Read("out_wrong.npy"), a, b, "trainium2-bf16");
  EXPECT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("K tile"), std::string::npos) << r.message();
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: kernel_test TENSOR_DIR\n");
    return 2;
  }
  g_dir = argv[1];
  return RUN_ALL_TESTS();
}
