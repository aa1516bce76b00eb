// Closes what fast_tiles_avx2_begin.h opened: pops the AVX2+FMA target (functions after it are
// compiled for the baseline again). No include guard: a file includes it once, where its AVX2
// code ends.
#include "base/target_pop.h"  // The AVX2+FMA target popped.
