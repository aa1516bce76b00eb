// Opens every part of the AVX2 matmul tiles (fast_tiles_avx2.cc and fast_tiles_avx2_*.cc): the
// headers they use, then the AVX2+FMA target for every function defined after it, until
// fast_tiles_avx2_end.h pops it. Include it first in such a file, and nowhere else.
#ifndef FPCONFORM_ACCUMULATION_FAST_TILES_AVX2_BEGIN_H_
#define FPCONFORM_ACCUMULATION_FAST_TILES_AVX2_BEGIN_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "accumulation/bound_step.h"
#include "accumulation/chain_walk.h"
#include "accumulation/evaluate.h"
#include "accumulation/fast_decode.h"
#include "accumulation/fast_kernels.h"
#include "accumulation/fast_plan.h"
#include "accumulation/fast_scalar.h"
#include "base/isa.h"
#include "formats/ops.h"
#include "formats/round_pack.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "base/target_avx2_fma_push.h"  // Functions from here on: AVX2+FMA.

#endif  // FPCONFORM_ACCUMULATION_FAST_TILES_AVX2_BEGIN_H_
