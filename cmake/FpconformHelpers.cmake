# Declarative helpers, in the manner of absl_cc_library:
#
#   fpconform_library(NAME formats SRCS a.cc HDRS a.h DEPS absl::status)
#   fpconform_test(NAME formats_test SRCS formats_test.cc DEPS formats LABELS quick)
#   fpconform_benchmark(NAME formats_benchmark SRCS formats_benchmark.cc DEPS formats)
#
# Every target gets the project's warning flags and -ffp-contract=off.

function(_fpconform_common target)
  target_compile_options(${target} PRIVATE ${FPCONFORM_CXX_FLAGS} ${FPCONFORM_SANITIZER_FLAGS})
  if(FPCONFORM_SANITIZE)
    target_link_options(${target} PRIVATE ${FPCONFORM_SANITIZER_FLAGS})
  endif()
endfunction()

function(fpconform_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;HDRS;DEPS" ${ARGN})
  add_library(fpconform_${ARG_NAME} STATIC ${ARG_SRCS} ${ARG_HDRS})
  add_library(fpconform::${ARG_NAME} ALIAS fpconform_${ARG_NAME})
  target_include_directories(fpconform_${ARG_NAME} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(fpconform_${ARG_NAME} PUBLIC ${ARG_DEPS})
  _fpconform_common(fpconform_${ARG_NAME})
  if(FPCONFORM_SANITIZE)
    target_link_options(fpconform_${ARG_NAME} INTERFACE ${FPCONFORM_SANITIZER_FLAGS})
  endif()
endfunction()

# LABELS: quick (no MPFR, minutes), oracle (needs MPFR), exhaustive (long sweeps).
function(fpconform_test)
  cmake_parse_arguments(ARG "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS;ARGS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  if(NOT FPCONFORM_BUILD_TESTS)
    # Still defined (directories set properties on their tests), built only when asked for.
    set_target_properties(${ARG_NAME} PROPERTIES EXCLUDE_FROM_ALL ON)
  endif()
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  _fpconform_common(${ARG_NAME})
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_NAME} ${ARG_ARGS})
  if(NOT ARG_LABELS)
    message(FATAL_ERROR "fpconform_test(${ARG_NAME}) needs LABELS")
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
endfunction()

function(fpconform_benchmark)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  if(NOT FPCONFORM_BENCHMARKS)
    return()
  endif()
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} benchmark::benchmark benchmark::benchmark_main)
  _fpconform_common(${ARG_NAME})
endfunction()

# libFuzzer harnesses (FPCONFORM_FUZZ=ON, clang only): each one defines LLVMFuzzerTestOneInput.
#   fpconform_fuzzer(NAME npy_fuzzer SRCS npy_fuzzer.cc DEPS fpconform::tensor_file
#                    CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/testdata/fuzz/npy)
# CORPUS: the checked-in seed corpus (and regression inputs) the fuzz run starts from.
function(fpconform_fuzzer)
  cmake_parse_arguments(ARG "" "NAME;CORPUS" "SRCS;DEPS" ${ARGN})
  if(NOT FPCONFORM_FUZZ)
    return()
  endif()
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS})
  _fpconform_common(${ARG_NAME})
  target_compile_options(${ARG_NAME} PRIVATE -fsanitize=fuzzer)
  target_link_options(${ARG_NAME} PRIVATE -fsanitize=fuzzer)
  set_property(GLOBAL APPEND PROPERTY FPCONFORM_FUZZERS "${ARG_NAME}=${ARG_CORPUS}")
endfunction()
