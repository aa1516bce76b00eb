#!/usr/bin/env bash
# ctest cmake_consumer_test: installs the already-built tree into a temporary prefix, then
# configures, builds and runs examples/cmake_consumer against it as a user's project would
# (find_package(fpconform) with CMAKE_PREFIX_PATH). Nothing of fpconform is rebuilt: cmake
# --install copies what the main build made. Everything is written under one mktemp directory,
# removed at the end.
#   cmake_consumer_test.sh BUILD_DIR SOURCE_DIR CMAKE CTEST GENERATOR
set -euo pipefail
build=$1 src=$2 cmake=$3 ctest=$4 generator=$5
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fpconform-consumer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "cmake_consumer_test: $*" >&2; exit 1; }

echo "== cmake --install $build --prefix $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "install failed"; }
for f in bin/fpconform lib/cmake/fpconform/fpconformConfig.cmake \
         lib/cmake/fpconform/fpconformConfigVersion.cmake lib/cmake/fpconform/fpconformAudit.cmake \
         lib/libfpconform_audit.a include/fpconform/reports/audit.h \
         include/fpconform/reports/gtest_audit.h include/fpconform/cases/tensor_file.h \
         share/fpconform/models/trainium2-bf16.toml share/fpconform/models/SOURCES.md \
         share/fpconform/standard_sweep.toml share/fpconform/plot_report.py; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
# The export carries no build-tree or source-tree path (the prefix is relocatable).
if grep -lF -e "$src" -e "$(cd "$build" && pwd)" "$prefix"/lib/cmake/fpconform/*.cmake; then
  fail "the installed CMake files above name the source or build tree"
fi
# The installed CLI reads the installed presets, not the source tree's: hide one preset.
mv "$prefix/share/fpconform/models/cpu-f64-seq.toml" "$tmp/"
if "$prefix/bin/fpconform" models | grep -q '^cpu-f64-seq '; then
  fail "the installed fpconform lists a preset removed from share/fpconform/models"
fi
mv "$tmp/cpu-f64-seq.toml" "$prefix/share/fpconform/models/"

echo "== configure and build examples/cmake_consumer against $prefix"
"$cmake" -S "$src/examples/cmake_consumer" -B "$tmp/consumer" -G "$generator" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/configure.log" \
  || { cat "$tmp/configure.log"; fail "configure failed"; }
"$cmake" --build "$tmp/consumer" -j "${JOBS:-2}"

echo "== ctest in the consumer"
"$ctest" --test-dir "$tmp/consumer" --output-on-failure
# Every consumer test ran (none skipped: GoogleTest is part of the set-up), and the audits left
# their reports in the consumer's build tree.
"$ctest" --test-dir "$tmp/consumer" -N | grep -q 'Total Tests: 3' || fail "expected 3 consumer tests"
for t in matmul_conforms matmul_wrong_is_caught; do
  [ -f "$tmp/consumer/fpconform-audit/$t/report.md" ] || fail "no report for $t"
  [ -f "$tmp/consumer/fpconform-audit/$t.json" ] || fail "no JSON for $t"
done
grep -q '"verdict": *"fail"' "$tmp/consumer/fpconform-audit/matmul_wrong_is_caught.json" \
  || fail "the wrong output's audit JSON does not say fail"

# EXPECT_FAIL does not accept an error (exit status 2) as the expected fail.
if "$cmake" -P "$prefix/lib/cmake/fpconform/fpconformAuditExpect.cmake" -- \
     "$prefix/bin/fpconform" audit matmul --a "$tmp/missing.npy" --b "$tmp/missing.npy" \
     --out "$tmp/missing.npy" --platform trainium2-bf16 >"$tmp/expect.log" 2>&1; then
  cat "$tmp/expect.log"; fail "EXPECT_FAIL passed on an error"
fi
grep -q 'exit status 2' "$tmp/expect.log" || { cat "$tmp/expect.log"; fail "EXPECT_FAIL message"; }
echo "cmake_consumer_test: ok"
