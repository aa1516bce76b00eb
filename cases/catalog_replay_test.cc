// Replays the golden catalogs (cases/catalogs/*_golden.txt): each line is a `fpconform calc`
// case, " => ", and the expected "<result> <flags>" computed by an independent MPFR computation
// (see the header of the catalog and cases/catalog_generator.cc). Every case goes through the
// calc engine with the dot/sum ops registered (oracles/calc_exact_ops.h) and must match bit
// for bit. No MPFR computation happens here.
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "cases/calc_case.h"
#include "gtest/gtest.h"
#include "oracles/calc_exact_ops.h"

namespace fpconform {
namespace {

TEST(CatalogReplayTest, DotSumGolden) {
  const std::string path = std::string(FPCONFORM_CATALOG_DIR) + "/dot_sum_golden.txt";
  std::ifstream file(path, std::ios::binary);
  ASSERT_TRUE(file.good()) << "cannot open " << path;
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string text = buffer.str();

  CalcRunner runner(ExactCalcOps());
  std::string out, err;
  int64_t cases = 0, mismatches = 0, dots = 0, sums = 0;
  size_t line_number = 0;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    ++line_number;
    if (line.empty() || line.front() == '#') continue;
    const size_t sep = line.find(" => ");
    ASSERT_NE(sep, std::string_view::npos) << path << ":" << line_number << ": no ' => '";
    const std::string_view input = line.substr(0, sep);
    const std::string_view expected = line.substr(sep + 4);
    out.clear();
    err.clear();
    runner.FeedLine(input, out, err);
    ASSERT_FALSE(out.empty()) << path << ":" << line_number;
    out.pop_back();  // '\n'.
    ++cases;
    (input.substr(0, 3) == "dot" ? dots : sums) += 1;
    if (out != expected) {
      ++mismatches;
      if (mismatches <= 20) {
        ADD_FAILURE() << path << ":" << line_number << ": got '" << out << "', want '" << expected
                      << "'" << (err.empty() ? "" : " (") << err << (err.empty() ? "" : ")")
                      << "\n  case: " << input.substr(0, 300) << (input.size() > 300 ? " ..." : "");
      }
    }
  }
  std::printf("dot_sum_golden.txt: %lld cases (%lld dot, %lld sum), %lld mismatches\n",
              static_cast<long long>(cases), static_cast<long long>(dots),
              static_cast<long long>(sums), static_cast<long long>(mismatches));
  EXPECT_EQ(mismatches, 0);
  EXPECT_GE(cases, 2000);
}

}  // namespace
}  // namespace fpconform
