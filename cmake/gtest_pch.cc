// The program that carries the tests' precompiled gtest.h (cmake/FpconformHelpers.cmake,
// _fpconform_gtest_pch): CMake precompiles the header for this target, and every fpconform_test
// target reuses it. It defines no test.
#include "gtest/gtest.h"
