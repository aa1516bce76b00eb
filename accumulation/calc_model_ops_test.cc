#include "accumulation/calc_model_ops.h"

#include <string>

#include "cases/calc_case.h"
#include "cases/calc_test_util.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

class CalcModelOpsTest : public ::testing::Test {
 protected:
  // Runs `input` with the model ops; returns stdout, leaves stderr in err_.
  std::string Run(const std::string& input) {
    std::string out;
    err_.clear();
    RunCalc(input, out, err_, ops_.ops());
    return out;
  }
  ModelCalcOps ops_{FPCONFORM_MODELS_SOURCE_DIR};
  std::string err_;
};

TEST_F(CalcModelOpsTest, CpuSequentialDot) {
  CheckCalcRows(
      {
          // ((0 + 1*1) + 2^-24*1): 1 + 2^-24 is a tie, to even: 1. Flags are never reported.
          {"mdot cpu-f32-seq 2 0x3f800000 0x33800000 0x3f800000 0x3f800000 0x0", "0x3f800000 -"},
          // c = 1, then fma(2, 3, 1) = 7.
          {"mdot cpu-f32-seq 1 0x40000000 0x40400000 0x3f800000", "0x40e00000 -"},
          // n = 0: c itself.
          {"mdot cpu-f32-seq 0 0x40490fdb", "0x40490fdb -"},
      },
      ops_.ops());
}

TEST_F(CalcModelOpsTest, H100Bf16FusedGroupTruncatesAndRoundsTowardZero) {
  // bf16 1.0 = 0x3f80, -2^-25 = 0xb300, -2^-26 = 0xb280. One group of 16 (padded with zeros),
  // aligned to emax = 0 with F = 25 fraction bits, i.e. a quantum of 2^-25.
  CheckCalcRows(
      {
          // 1 - 2^-25: exact on the grid; normalized with RZ to float32 (spacing 2^-24 below 1):
          // 1 - 2^-24 = 0x3f7fffff. Round-to-nearest would give the even 1.0 (a tie).
          {"mdot nvidia-h100-bf16 2 0x3f80 0xb300 0x3f80 0x3f80 0x0", "0x3f7fffff -"},
          // 1 - 2^-26: the small term is truncated toward zero to 0 before the sum: 1.0
          // exactly, where a correctly rounded RZ dot would give 0x3f7fffff.
          {"mdot nvidia-h100-bf16 2 0x3f80 0xb280 0x3f80 0x3f80 0x0", "0x3f800000 -"},
      },
      ops_.ops());
}

TEST_F(CalcModelOpsTest, Tf32ModelTakesFloat32PatternsAndTruncates) {
  // 0x3f801fff = 1 + (2^13 - 1) 2^-23: RZ to tfloat32 (10 fraction bits) is 1.0.
  CheckCalcRows({{"mdot nvidia-h100-tf32 1 0x3f801fff 0x3f800000 0x0", "0x3f800000 -"}},
                ops_.ops());
}

TEST_F(CalcModelOpsTest, SequentialSum) {
  CheckCalcRows(
      {
          // ((0 + 1) + 2^-24) + 2^-24: each step a tie to even, 1.0; the exact sum would round
          // up.
          {"msum cpu-f32-seq 3 0x3f800000 0x33800000 0x33800000", "0x3f800000 -"},
          {"msum numpy-sum-f32 2 0x3f800000 0x40000000", "0x40400000 -"},
      },
      ops_.ops());
}

TEST_F(CalcModelOpsTest, Errors) {
  EXPECT_EQ(Run("mdot no-such-model 1 0x0 0x0 0x0\n"), "error\n");
  EXPECT_NE(err_.find("line 1: unknown model 'no-such-model' in "), std::string::npos) << err_;
  EXPECT_NE(err_.find("nvidia-h100-bf16"), std::string::npos) << err_;  // The valid names.
  EXPECT_EQ(Run("mdot ../models/cpu-f32-seq 0 0x0\n"), "error\n");
  EXPECT_NE(err_.find("bad model name"), std::string::npos) << err_;
  EXPECT_EQ(Run("mdot numpy-sum-f32 0 0x0\n"), "error\n");
  EXPECT_NE(err_.find("does not define dot"), std::string::npos) << err_;
  EXPECT_EQ(Run("msum nvidia-h100-bf16 0\n"), "error\n");
  EXPECT_NE(err_.find("does not define sum"), std::string::npos) << err_;
  // The count names the trailing c.
  EXPECT_EQ(Run("mdot cpu-f32-seq 1 0x3f800000 0x3f800000\n"), "error\n");
  EXPECT_EQ(err_, "line 1: 'mdot' takes 3 operands (2 x n, n = 1, then 1), got 2\n");
  // Operands are checked against each group's format: b of a bf16 model is 16 bits wide.
  EXPECT_EQ(Run("mdot nvidia-h100-bf16 1 0x3f80 0x3f800000 0x0\n"), "error\n");
  EXPECT_NE(err_.find("operand 2 '0x3f800000' is wider than bfloat16"), std::string::npos)
      << err_;
  // c is in the accumulator's format (float32): 32 bits are fine, 33 are not.
  EXPECT_EQ(Run("mdot nvidia-h100-bf16 1 0x3f80 0x3f80 0x1ffffffff\n"), "error\n");
  EXPECT_EQ(Run("mdot\n"), "error\n");
  EXPECT_EQ(err_, "line 1: 'mdot' needs a model name\n");
  EXPECT_EQ(Run("msum cpu-f32-seq\n"), "error\n");
  EXPECT_EQ(err_, "line 1: 'msum' needs the count n (decimal) after the model\n");
}

// A model name echoed in a message never carries raw control bytes (ESC, 0xff, NUL).
TEST_F(CalcModelOpsTest, UnknownModelNamesAreEscaped) {
  EXPECT_EQ(Run(std::string("mdot a\x1b[2J\xff\0b 0 0x0\n", 19)), "error\n");
  EXPECT_EQ(err_, "line 1: bad model name 'a\\x1b[2J\\xff\\x00b' (want letters, digits, '.', "
                  "'_', '-')\n");
  EXPECT_EQ(Run("msum " + std::string(100, 'x') + "\x01 0\n"), "error\n");
  EXPECT_NE(err_.find("'" + std::string(64, 'x') + "... (101 bytes)'"), std::string::npos) << err_;
}

TEST_F(CalcModelOpsTest, BuiltinOpsUnchangedAlongside) {
  EXPECT_EQ(Run("add float32 rne 0x3f800000 0x33800000\n"
                "mdot cpu-f32-seq 1 0x40000000 0x40400000 0x0\n"),
            "0x3f800000 x\n0x40c00000 -\n");
}

// The rows carry the object as their CalcOpContext; a model is found once and keeps its handle,
// the catalog's model; a bad name is the catalog's message.
TEST_F(CalcModelOpsTest, FindModelHandsOutTheCatalogsModels) {
  for (const CalcOp& op : ops_.ops()) EXPECT_EQ(op.context, &ops_);
  std::string problem;
  const CalcModelHandle* h = ops_.FindModel("cpu-f32-seq", problem);
  ASSERT_NE(h, nullptr) << problem;
  EXPECT_EQ(&h->model, &*ops_.catalog().Find("cpu-f32-seq"));
  EXPECT_EQ(ops_.FindModel("cpu-f32-seq", problem), h);
  EXPECT_EQ(problem, "");
  EXPECT_EQ(ops_.FindModel("no-such-model", problem), nullptr);
  EXPECT_EQ(problem, std::string(ops_.catalog().Find("no-such-model").status().message()));
}

}  // namespace
}  // namespace fpconform
