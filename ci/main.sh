#!/usr/bin/env bash
# The README's main-job command: installs what is missing, builds, and runs the main job: the
# standard tolerance table (`fpconform tolerance`, sweep file reports/standard_sweep.toml) into
# ./fpconform-report/ (report.md, report.csv, report.json, report.html, ...). report.md is
# printed at the end. Extra arguments go to `fpconform tolerance` (e.g. --quick, --threads 4).
#
# It builds only what it runs: the `fpconform` CLI target (its libraries), in build-main/ with
# the tests and benchmarks not configured, and installs only the main job's Debian packages
# (`ci/setup.sh main`: no clang, Google Benchmark or GoogleMock). build-main/ is apart from
# ci/test.sh's build/ so that neither command's CMake options (tests, benchmarks, the Python
# module's position-independent code) change what the other builds. That build is 288 s of CPU
# from an empty build-main/ on a 2-core AMD EPYC (153 s wall, idle, 39 compiles with the unity
# batches of cmake/FpconformHelpers.cmake; README, "The two commands").
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh main
BUILD_DIR=build-main TARGETS=fpconform bash ci/build.sh \
  -DFPCONFORM_BUILD_TESTS=OFF -DFPCONFORM_BENCHMARKS=OFF -DFPCONFORM_PYTHON=OFF >/dev/null
out=${FPCONFORM_REPORT_DIR:-fpconform-report}
./build-main/cli/fpconform tolerance --out "$out" "$@"
cat "$out/report.md"
echo "fpconform: the report is in $out/ (report.md, report.html, report.csv, report.json)" >&2
