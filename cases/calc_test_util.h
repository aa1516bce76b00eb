// Test support for the calc protocol's tests (cases/calc_case_test.cc,
// oracles/calc_exact_ops_test.cc): one line through RunCalc, and a table of lines, each with the
// output line it must give.
#ifndef FPCONFORM_CASES_CALC_TEST_UTIL_H_
#define FPCONFORM_CASES_CALC_TEST_UTIL_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cases/calc_case.h"
#include "gtest/gtest.h"

namespace fpconform {

struct CalcRow {
  std::string_view line;
  std::string_view expected;  // Output line without '\n'.
};

// The output of one line (with the ops of `extra_ops` besides the built-ins), without its '\n';
// the messages are stored in *err when `err` is set.
inline std::string RunCalcLine(std::string_view line, std::span<const CalcOp> extra_ops = {},
                               std::string* err = nullptr) {
  std::string out, e;
  RunCalc(line, out, e, extra_ops);
  if (err != nullptr) *err = e;
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Each row's line gives the row's output, and no message unless that output is "error".
inline void CheckCalcRows(const std::vector<CalcRow>& rows,
                          std::span<const CalcOp> extra_ops = {}) {
  for (const CalcRow& row : rows) {
    SCOPED_TRACE(row.line);
    std::string err;
    EXPECT_EQ(RunCalcLine(row.line, extra_ops, &err), row.expected);
    if (row.expected != "error") {
      EXPECT_EQ(err, "");
    }
  }
}

}  // namespace fpconform

#endif  // FPCONFORM_CASES_CALC_TEST_UTIL_H_
