// Pops the target base/target_avx2_fma_push.h pushed: functions defined after it are compiled for
// the baseline again. No include guard: included once where the file's AVX2 code ends.
#if defined(__x86_64__) && defined(__clang__)
#pragma clang attribute pop
#elif defined(__x86_64__)
#pragma GCC pop_options
#endif
