# Declarative helpers, in the manner of absl_cc_library:
#
#   fpconform_library(NAME formats SRCS a.cc HDRS a.h DEPS absl::status [ALONE a_avx2.cc])
#   fpconform_test(NAME formats_test SRCS formats_test.cc DEPS formats LABELS quick)
#   fpconform_test_run(NAME formats_slow_test COMMAND formats_test --slow LABELS exhaustive)
#   fpconform_benchmark(NAME formats_benchmark SRCS formats_benchmark.cc DEPS formats)
#
# Every target gets the project's warning flags and -ffp-contract=off. Tests, benchmarks and
# fuzzers take DEFINES (compile definitions, e.g. FPCONFORM_REPORTS_SOURCE_DIR="${dir}" for the
# data they read) and MODELS (the preset models' directory as FPCONFORM_MODELS_SOURCE_DIR).

# NO_COVERAGE TRUE: without libFuzzer's coverage instrumentation (a test: 13 % less compile CPU
# under clang's sanitizers, measured on fast_eval_test.cc); it still links with the flag, for the
# instrumented libraries. A value, not an option, so that _fpconform_executable can pass its own
# option's value on.
function(_fpconform_common target)
  cmake_parse_arguments(ARG "" "NO_COVERAGE" "" ${ARGN})
  set(coverage ${FPCONFORM_COVERAGE_FLAGS})
  if(ARG_NO_COVERAGE)
    set(coverage "")
  endif()
  target_compile_options(${target} PRIVATE ${FPCONFORM_CXX_FLAGS} ${FPCONFORM_SANITIZER_FLAGS}
                         ${coverage})
  if(FPCONFORM_SANITIZER_FLAGS OR FPCONFORM_COVERAGE_FLAGS)
    target_link_options(${target} PRIVATE ${FPCONFORM_SANITIZER_FLAGS} ${FPCONFORM_COVERAGE_FLAGS})
  endif()
endfunction()

# The program of a test, benchmark or fuzzer: SRCS linked with DEPS, the common flags, DEFINES;
# MODELS TRUE adds FPCONFORM_MODELS_SOURCE_DIR (accumulation/models).
function(_fpconform_executable name)
  cmake_parse_arguments(ARG "NO_COVERAGE" "MODELS" "SRCS;DEPS;DEFINES" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  _fpconform_common(${name} NO_COVERAGE "${ARG_NO_COVERAGE}")
  if(ARG_MODELS)
    list(PREPEND ARG_DEFINES
         FPCONFORM_MODELS_SOURCE_DIR="${PROJECT_SOURCE_DIR}/accumulation/models")
  endif()
  if(ARG_DEFINES)
    target_compile_definitions(${name} PRIVATE ${ARG_DEFINES})
  endif()
endfunction()

# Unity builds (FPCONFORM_UNITY_BUILD, on by default): the sources of a library, of the CLI and of
# the Python module compile in batches of up to 8 files per translation unit, so that what they
# share (absl::Status, CLI11, the STL, the project's headers) is parsed, and its inline functions
# compiled, once per batch instead of once per file. Measured in a fresh Release build on 2 cores
# (README, "The two commands"): the libraries, the CLI and the module took about 30 % less compile
# CPU (the Release build 1036 -> 866 s, the tests unchanged), the main job's build 468 -> 288 s. The
# tests stay one program per file, so a unity build changes what is compiled together, not what is
# tested. A file that switches the compile target (base/target_avx2_fma_push.h: the AVX2 and
# AVX-512 kernels) must be compiled alone, or the target would reach the files batched after it:
# list it under ALONE. The generated batch defines FPCONFORM_UNITY_BATCH before each file it
# includes, and target_avx2_fma_push.h stops the build with #error where it sees it, so a file
# missing from ALONE fails to compile instead of being batched silently.
function(fpconform_unity target)
  cmake_parse_arguments(ARG "" "" "ALONE" ${ARGN})
  if(NOT FPCONFORM_UNITY_BUILD)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8
                        UNITY_BUILD_CODE_BEFORE_INCLUDE "#define FPCONFORM_UNITY_BATCH 1")
  if(ARG_ALONE)
    set_source_files_properties(${ARG_ALONE} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
endfunction()

# ALONE: sources compiled on their own in a unity build (fpconform_unity above).
function(fpconform_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;HDRS;DEPS;ALONE" ${ARGN})
  add_library(fpconform_${ARG_NAME} STATIC ${ARG_SRCS} ${ARG_HDRS})
  fpconform_unity(fpconform_${ARG_NAME} ALONE ${ARG_ALONE})
  add_library(fpconform::${ARG_NAME} ALIAS fpconform_${ARG_NAME})
  # The source tree here; include/fpconform once installed (cmake/FpconformInstall.cmake).
  target_include_directories(fpconform_${ARG_NAME} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
  set_property(GLOBAL APPEND PROPERTY FPCONFORM_LIBRARIES fpconform_${ARG_NAME})
  target_link_libraries(fpconform_${ARG_NAME} PUBLIC ${ARG_DEPS})
  _fpconform_common(fpconform_${ARG_NAME})
  if(FPCONFORM_SANITIZER_FLAGS OR FPCONFORM_COVERAGE_FLAGS)
    target_link_options(fpconform_${ARG_NAME} INTERFACE ${FPCONFORM_SANITIZER_FLAGS}
                        ${FPCONFORM_COVERAGE_FLAGS})
  endif()
endfunction()

# A GoogleTest program and its ctest (ARGS: the command's arguments; TIMEOUT: 600 s unless
# given; ENVIRONMENT: NAME=value settings of the run).
# LABELS: quick (no MPFR, minutes), oracle (needs MPFR), exhaustive (long sweeps).
function(fpconform_test)
  cmake_parse_arguments(ARG "MODELS" "NAME;TIMEOUT" "SRCS;DEPS;LABELS;ARGS;DEFINES;ENVIRONMENT"
                        ${ARGN})
  _fpconform_executable(${ARG_NAME} NO_COVERAGE MODELS ${ARG_MODELS} SRCS ${ARG_SRCS}
                        DEPS ${ARG_DEPS} GTest::gtest GTest::gtest_main DEFINES ${ARG_DEFINES})
  # A test's own files at -O1 where the build type asks for more (Release: -O3): the code under
  # test is the libraries', built with the build type's flags; a test file is mostly GoogleTest's
  # macros, whose -O3 compile is slow (a fresh Release build took 646 s of CPU with this, 866 s
  # without; README, "The two commands").
  # The last -O on the command line wins, and these options follow the build type's.
  if(CMAKE_BUILD_TYPE MATCHES "^(Release|RelWithDebInfo)$")
    target_compile_options(${ARG_NAME} PRIVATE -O1)
  endif()
  if(NOT FPCONFORM_BUILD_TESTS)
    # Still defined (directories set properties on their tests), built only when asked for.
    set_target_properties(${ARG_NAME} PROPERTIES EXCLUDE_FROM_ALL ON)
  endif()
  if(NOT ARG_LABELS)
    message(FATAL_ERROR "fpconform_test(${ARG_NAME}) needs LABELS")
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  fpconform_test_run(NAME ${ARG_NAME} COMMAND ${ARG_NAME} ${ARG_ARGS} LABELS ${ARG_LABELS}
                     TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT ${ARG_ENVIRONMENT})
  # fpconform_tests_<label> builds every test program of that label (ci/test.sh's sanitizer tree
  # builds fpconform_tests_quick only); the runs of fpconform_test_run name their programs.
  foreach(label IN LISTS ARG_LABELS)
    if(NOT TARGET fpconform_tests_${label})
      add_custom_target(fpconform_tests_${label})
    endif()
    add_dependencies(fpconform_tests_${label} ${ARG_NAME})
  endforeach()
endfunction()

# Another ctest: COMMAND (a test's program with other arguments, or a script), LABELS, and
# TIMEOUT, ENVIRONMENT and SKIP_RETURN_CODE where given.
function(fpconform_test_run)
  cmake_parse_arguments(ARG "" "NAME;TIMEOUT;SKIP_RETURN_CODE" "COMMAND;LABELS;ENVIRONMENT"
                        ${ARGN})
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_COMMAND})
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS "${ARG_LABELS}")
  foreach(property TIMEOUT ENVIRONMENT SKIP_RETURN_CODE)
    if(DEFINED ARG_${property})
      set_tests_properties(${ARG_NAME} PROPERTIES ${property} "${ARG_${property}}")
    endif()
  endforeach()
endfunction()

function(fpconform_benchmark)
  cmake_parse_arguments(ARG "MODELS" "NAME" "SRCS;DEPS;DEFINES" ${ARGN})
  if(NOT FPCONFORM_BENCHMARKS)
    return()
  endif()
  _fpconform_executable(${ARG_NAME} MODELS ${ARG_MODELS} SRCS ${ARG_SRCS}
                        DEPS ${ARG_DEPS} benchmark::benchmark benchmark::benchmark_main
                        DEFINES ${ARG_DEFINES})
endfunction()

# libFuzzer harnesses (FPCONFORM_FUZZ=ON, clang only; ci/fuzz.sh builds and runs them):
#   fpconform_fuzzer(NAME npy_fuzzer SRCS npy_fuzzer.cc DEPS fpconform::tensor_file
#                    CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/testdata/fuzz/npy_fuzzer
#                    [DICT ${CMAKE_CURRENT_SOURCE_DIR}/testdata/fuzz/npy_fuzzer.dict])
# Each SRCS defines LLVMFuzzerTestOneInput. CORPUS: the checked-in seed corpus and regression
# inputs (regression-<what>: a minimized input that once crashed); it must exist. DICT: an
# optional libFuzzer dictionary. Every harness is built by the target `fuzzers`, gets a ctest
# `<NAME>_replay` (label fuzz) that runs every file of CORPUS once, and is listed in
# <build>/fuzzers.txt ("name<TAB>binary<TAB>corpus<TAB>dict" per line, written at generate time),
# which ci/fuzz.sh reads: a new harness needs no edit there.
# With FPCONFORM_FUZZ every fpconform target is compiled with -fsanitize=fuzzer-no-link, so the
# coverage libFuzzer steers by includes the libraries' parsers, not only the harness.
function(fpconform_fuzzer)
  cmake_parse_arguments(ARG "MODELS" "NAME;CORPUS;DICT" "SRCS;DEPS;DEFINES" ${ARGN})
  if(NOT FPCONFORM_FUZZ)
    return()
  endif()
  if(NOT ARG_CORPUS OR NOT IS_DIRECTORY "${ARG_CORPUS}")
    message(FATAL_ERROR "fpconform_fuzzer(${ARG_NAME}): CORPUS '${ARG_CORPUS}' is not a directory")
  endif()
  if(ARG_DICT AND NOT EXISTS "${ARG_DICT}")
    message(FATAL_ERROR "fpconform_fuzzer(${ARG_NAME}): DICT '${ARG_DICT}' does not exist")
  endif()
  _fpconform_executable(${ARG_NAME} MODELS ${ARG_MODELS} SRCS ${ARG_SRCS} DEPS ${ARG_DEPS}
                        DEFINES ${ARG_DEFINES})
  target_compile_options(${ARG_NAME} PRIVATE -fsanitize=fuzzer)
  target_link_options(${ARG_NAME} PRIVATE -fsanitize=fuzzer)
  if(NOT TARGET fuzzers)
    add_custom_target(fuzzers)
  endif()
  add_dependencies(fuzzers ${ARG_NAME})
  fpconform_test_run(NAME ${ARG_NAME}_replay COMMAND ${ARG_NAME} -runs=0 ${ARG_CORPUS}
                     LABELS fuzz TIMEOUT 300)
  set_property(GLOBAL APPEND PROPERTY FPCONFORM_FUZZERS
               "${ARG_NAME}\t$<TARGET_FILE:${ARG_NAME}>\t${ARG_CORPUS}\t${ARG_DICT}")
endfunction()

# Writes <build>/fuzzers.txt once every directory has registered its harnesses.
function(_fpconform_write_fuzzer_list)
  get_property(fuzzers GLOBAL PROPERTY FPCONFORM_FUZZERS)
  string(REPLACE ";" "\n" lines "${fuzzers}")
  if(lines)
    string(APPEND lines "\n")
  endif()
  file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/fuzzers.txt" CONTENT "${lines}")
endfunction()

if(FPCONFORM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "FPCONFORM_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++")
  endif()
  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _fpconform_write_fuzzer_list)
endif()
