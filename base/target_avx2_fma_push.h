// Compiles every function defined after it for AVX2+FMA (x86-64; elsewhere nothing), until
// base/target_pop.h pops the target. For the hand-vectorized paths chosen at run time
// (base/isa.h: call them only where HostHas(Isa::kAvx2) or above). No include guard: a file
// includes it where its AVX2 code begins, after every header it needs (a header included after
// it would be compiled for AVX2 too), and includes base/target_pop.h where that code ends.
// Example:
//   #include "base/target_avx2_fma_push.h"
//   void SumAvx2(const float* x, int n, float* out) { ... }   // built with -mavx2 -mfma
//   #include "base/target_pop.h"
// A unity batch (cmake/FpconformHelpers.cmake, fpconform_unity) would carry the target into the
// files compiled after this one: such a file is compiled alone (ALONE there).
#ifdef FPCONFORM_UNITY_BATCH
#error "this file switches the compile target: list it under ALONE (fpconform_unity)"
#endif
#if defined(__x86_64__) && defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#elif defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
