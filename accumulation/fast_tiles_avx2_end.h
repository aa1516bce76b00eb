// Closes what fast_tiles_avx2_begin.h opened: pops the AVX2+FMA target (functions after it are
// compiled for the baseline again). No include guard: a file includes it once, where its AVX2
// code ends.
#if defined(__x86_64__) && defined(__clang__)
#pragma clang attribute pop
#elif defined(__x86_64__)
#pragma GCC pop_options
#endif
