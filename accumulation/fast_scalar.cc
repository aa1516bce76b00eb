// The dot path's entry into the scalar evaluator (fast_scalar.h).
#include "accumulation/fast_kernels.h"
#include "accumulation/fast_scalar.h"

namespace fpconform::fast_internal {

bool RunDot(const Plan& p, const DotView& d, uint64_t c_bits, EvalResult& out, uint64_t seed,
            bool bound) {
  return bound ? DotDecoded<true>(p, d, c_bits, out, seed)
               : DotDecoded<false>(p, d, c_bits, out, seed);
}

bool RunDot64(const Plan& p, const DotView64& d, uint64_t c_bits, EvalResult& out,
              uint64_t seed, bool bound) {
  return bound ? DotDecoded<true, double>(p, d, c_bits, out, seed)
               : DotDecoded<false, double>(p, d, c_bits, out, seed);
}

}  // namespace fpconform::fast_internal
