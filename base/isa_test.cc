// The instruction-set choice (isa.h): names, FPCONFORM_ISA parsing and refusal, levels this CPU
// lacks. The byte identity of reports across levels is cli/isa_identity_test.sh.
#include "base/isa.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fpconform {
namespace {

// Sets FPCONFORM_ISA for one scope and restores the variable and the active level after it.
class ScopedIsaEnv {
 public:
  explicit ScopedIsaEnv(const char* value) : saved_isa_(ActiveIsa()) {
    const char* old = std::getenv(kIsaEnvironmentVariable);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value == nullptr) unsetenv(kIsaEnvironmentVariable);
    else setenv(kIsaEnvironmentVariable, value, 1);
  }
  ~ScopedIsaEnv() {
    if (had_) setenv(kIsaEnvironmentVariable, old_.c_str(), 1);
    else unsetenv(kIsaEnvironmentVariable);
    EXPECT_TRUE(SetActiveIsa(saved_isa_).ok());
  }

 private:
  Isa saved_isa_;
  bool had_ = false;
  std::string old_;
};

TEST(IsaTest, NamesRoundTrip) {
  for (Isa i : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
    EXPECT_EQ(ParseIsa(IsaName(i)), i) << IsaName(i);
  }
  EXPECT_EQ(IsaName(Isa::kAvx512), "avx512");
  EXPECT_FALSE(ParseIsa("AVX2").has_value());
  EXPECT_FALSE(ParseIsa("avx-512").has_value());
  EXPECT_FALSE(ParseIsa("").has_value());
}

TEST(IsaTest, AvailableLevelsStartAtPortableAndEndAtTheDetectedOne) {
  const std::vector<Isa> a = AvailableIsas();
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a.front(), Isa::kPortable);
  EXPECT_EQ(a.back(), DetectedIsa());
  std::string names;
  for (Isa i : a) names += std::string(IsaName(i)) + " ";
  std::printf("this CPU: %s(F16C %s)\n", names.c_str(), CpuHasF16c() ? "yes" : "no");
}

TEST(IsaTest, EveryAvailableLevelCanBeSelectedFromTheEnvironment) {
  for (Isa i : AvailableIsas()) {
    ScopedIsaEnv env(std::string(IsaName(i)).c_str());
    ASSERT_TRUE(SetIsaFromEnvironment().ok()) << IsaName(i);
    EXPECT_EQ(ActiveIsa(), i);
  }
  {
    ScopedIsaEnv env(nullptr);
    ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
    ASSERT_TRUE(SetIsaFromEnvironment().ok());
    EXPECT_EQ(ActiveIsa(), DetectedIsa());  // Unset: the best level.
  }
  {
    ScopedIsaEnv env("");
    ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
    ASSERT_TRUE(SetIsaFromEnvironment().ok());
    EXPECT_EQ(ActiveIsa(), DetectedIsa());  // Empty: as unset.
  }
}

TEST(IsaTest, UnknownValueIsRefusedAndChangesNothing) {
  ScopedIsaEnv env("sse9");
  ASSERT_TRUE(SetActiveIsa(Isa::kPortable).ok());
  const absl::Status s = SetIsaFromEnvironment();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "FPCONFORM_ISA=sse9: unknown instruction set (valid: portable avx2 avx512; unset: the "
            "best this CPU has)");
  EXPECT_EQ(ActiveIsa(), Isa::kPortable);
}

TEST(IsaTest, LevelsThisCpuLacksAreRefused) {
  if (DetectedIsa() == Isa::kAvx512) {
    GTEST_SKIP() << "this CPU has every level (avx512); nothing to refuse";
  }
  const Isa above = static_cast<Isa>(static_cast<int>(DetectedIsa()) + 1);
  ScopedIsaEnv env(std::string(IsaName(above)).c_str());
  const Isa before = ActiveIsa();
  const absl::Status s = SetIsaFromEnvironment();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("this CPU lacks it (available: portable"), std::string::npos)
      << s.message();
  EXPECT_EQ(SetActiveIsa(above).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ActiveIsa(), before);
}

}  // namespace
}  // namespace fpconform
