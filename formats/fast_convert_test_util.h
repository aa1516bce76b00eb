// Test support for the fast conversions' tests (fast_convert_test.cc,
// fast_convert_exhaustive_test.cc).
#ifndef FPCONFORM_FORMATS_FAST_CONVERT_TEST_UTIL_H_
#define FPCONFORM_FORMATS_FAST_CONVERT_TEST_UTIL_H_

#include <string>
#include <vector>

#include "formats/fast_convert.h"

namespace fpconform {

// The code paths of fast_convert.h this CPU can run, by the names SetFastConvertIsaForTesting
// takes; leaves run-time dispatch selected.
inline std::vector<std::string> FastConvertIsas() {
  std::vector<std::string> isas;
  for (const char* isa : {"portable", "avx2", "avx512"}) {
    if (SetFastConvertIsaForTesting(isa)) isas.push_back(isa);
  }
  SetFastConvertIsaForTesting("");
  return isas;
}

}  // namespace fpconform

#endif  // FPCONFORM_FORMATS_FAST_CONVERT_TEST_UTIL_H_
