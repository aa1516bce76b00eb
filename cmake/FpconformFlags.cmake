# Compiler flags shared by every fpconform target.
#
# -ffp-contract=off: the bit-exact layer must never see a compiler-fused a*b+c.
# -fno-fast-math is the default; fast-math is forbidden anywhere in the tree.
set(FPCONFORM_CXX_FLAGS
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
  -Woverloaded-virtual -Wimplicit-fallthrough
  -ffp-contract=off -fno-math-errno)
if(FPCONFORM_WERROR)
  list(APPEND FPCONFORM_CXX_FLAGS -Werror)
endif()

set(FPCONFORM_SANITIZER_FLAGS "")
if(FPCONFORM_SANITIZE)
  set(FPCONFORM_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all
      -fno-omit-frame-pointer)
endif()
# Fuzz builds (clang): coverage instrumentation for libFuzzer in every target a harness links
# (the libraries, the CLI, the harnesses), not in the tests, which no harness runs; the harnesses
# add -fsanitize=fuzzer (cmake/FpconformHelpers.cmake, fpconform_fuzzer).
set(FPCONFORM_COVERAGE_FLAGS "")
if(FPCONFORM_FUZZ)
  set(FPCONFORM_COVERAGE_FLAGS -fsanitize=fuzzer-no-link)
endif()
