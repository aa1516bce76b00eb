#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs
#   1. the default ctest (labels quick and oracle) on the Release tree build/;
#   2. the Python package's pytest suite (ci/python_test.sh: the module built in that Release tree,
#      then `pip wheel .` and the suite against the installed wheel), beside step 3's build;
#   3. the quick tests again under AddressSanitizer and UndefinedBehaviorSanitizer, in the clang
#      tree that also holds the libFuzzer harnesses (build-fuzz/, built by ci/fuzz.sh --build:
#      the quick tests, the CLI and the harnesses); where clang cannot link libFuzzer, in
#      build-asan/ with the default compiler instead;
#   4. the libFuzzer harnesses (ci/fuzz.sh, in that same tree: their checked-in corpora and
#      regression cases, then FPCONFORM_FUZZ_SECONDS of fuzzing each, here 10, two at a time on
#      2 cores; skipped, saying so, where clang cannot link libFuzzer).
# FPCONFORM_EXHAUSTIVE=1 adds the exhaustive label to step 1; FPCONFORM_WHEEL=0 skips the wheel.
#
# Each build makes only what its steps run: the Release tree everything (tests, benchmarks, the
# CLI, the module); the wheel's build reuses the Release tree's objects through a compiler cache
# private to this run (ccache in a temporary directory, removed at the end: nothing is kept between
# runs, nothing read from the machine's caches); the clang tree the quick tests, the CLI and the
# harnesses, once for steps 3 and 4: one sanitizer build instead of two saves about 480 s of CPU
# (measured in a fresh clone on a 2-core AMD EPYC: 988 s of CPU for the one tree, against about
# 1110 s for the GCC sanitizer tree and 360 s for the separate fuzz tree); the quick tests run
# slower under clang's sanitizers than under GCC's (with or without the coverage
# instrumentation), fast_eval_test most: see its DotCases.
# The README ("The two commands") has the measured figures; each step prints its wall-clock and
# CPU time.
set -euo pipefail
cd "$(dirname "$0")/.."
run_tmp=$(mktemp -d)  # This run's scratch: the times file, the compiler cache.
trap 'rm -rf "$run_tmp"' EXIT

# Each step's wall-clock time and CPU time (user + sys of the commands it ran, from bash's
# `times`, which must run in this shell: not in a $(...) subshell).
cpu_now() {
  times >"$run_tmp/times"  # Line 2: the children's user and sys, as "1m2.500s 0m3.250s".
  cpu=$(sed -n 2p "$run_tmp/times" |
        awk '{ n = 0; for (i = 1; i <= 2; i++) { split($i, t, "m"); n += t[1] * 60 + t[2] }
               printf "%.0f", n }')
}
cpu_now
step_start=$(date +%s)
step_cpu=$cpu
step_done() {
  cpu_now
  echo "== $1: $(($(date +%s) - step_start)) s wall, $((cpu - step_cpu)) s CPU (user + sys)"
  step_start=$(date +%s)
  step_cpu=$cpu
}

bash ci/setup.sh
step_done "set-up (apt)"
# The Python virtual environment (numpy, ml_dtypes, safetensors, pytest from PyPI) for the live
# tensor-file test; without it (no PyPI) that test prints why and skips.
if venv_python=$(bash ci/venv.sh | tail -n 1); then
  venv_flag=(-DFPCONFORM_VENV_PYTHON="$venv_python")
  # The Python package's module, built in the Release tree (venv.sh installed nanobind).
  python_flag=(-DFPCONFORM_PYTHON=ON -DPython_EXECUTABLE="$venv_python")
else
  echo "== ci/venv.sh failed: tests that need the venv will skip, and the Python step with them" >&2
  venv_flag=()
  python_flag=()
fi
step_done "venv (PyPI)"

jobs=${JOBS:-$(nproc)}
labels='quick|oracle'
[ "${FPCONFORM_EXHAUSTIVE:-0}" = 1 ] && labels='quick|oracle|exhaustive'

# The compiler cache of this run (see above): filled by the Release build, read by the wheel's
# (ci/python_test.sh), whose build directory lies at the same depth under CCACHE_BASEDIR.
if command -v ccache >/dev/null 2>&1; then
  CCACHE_DIR=$run_tmp/ccache
  export CCACHE_DIR CCACHE_BASEDIR=$PWD CCACHE_MAXSIZE=5G
  cache_flag=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
else
  echo "== ccache not found (bash ci/setup.sh installs it): the wheel compiles everything again" >&2
  cache_flag=()
fi

# ctest -j starts the longest tests first where it knows their times (Testing/Temporary/
# CTestCostData.txt, which it rewrites after each run); a fresh tree starts from
# ci/ctest-costs.txt (seconds per test, measured once: only their order matters), so that no long
# test starts last while the other core idles. A test missing there starts after those listed.
seed_costs() {
  local f="$1/Testing/Temporary/CTestCostData.txt"
  [ -f "$f" ] || { mkdir -p "${f%/*}" && cp ci/ctest-costs.txt "$f"; }
}

echo "== Release build, ctest -L '$labels'"
BUILD_DIR=build bash ci/build.sh "${venv_flag[@]}" "${python_flag[@]}" "${cache_flag[@]}"
step_done "Release build"
seed_costs build
ctest --test-dir build -L "$labels" --output-on-failure -j "$jobs"
step_done "ctest -L '$labels'"

# The Python step is mostly one process (pytest), so it runs beside the sanitizer build, which
# uses the other core; its output is kept in a file and printed when both are done, and its
# failure fails the run. (Its CPU time is counted in the step after which it is waited for.)
python_pid=
if [ ${#python_flag[@]} -gt 0 ]; then
  echo "== Python package: pytest suite, doctests, examples/pytest, pip wheel . (beside the next" \
       "step; its output follows that step's)"
  (
    start=$(date +%s)
    rc=0
    bash ci/python_test.sh build "$venv_python" >"$run_tmp/python.log" 2>&1 || rc=$?
    echo "$rc $(($(date +%s) - start))" >"$run_tmp/python.status"
  ) &
  python_pid=$!
  trap 'kill "$python_pid" 2>/dev/null; rm -rf "$run_tmp"' EXIT
else
  echo "== SKIPPED: the Python package's tests (no venv: ci/venv.sh needs PyPI)" >&2
fi

# clang with libFuzzer: one tree for the sanitizer run and the fuzzers. Without it, the default
# compiler's sanitizer tree, at -O1 -g1 (line tables: symbolized sanitizer reports) instead of
# RelWithDebInfo's -O2 -g: half the compile CPU (measured per file: fast_eval.cc 5.3 -> 2.8 s,
# sweep.cc 25.6 -> 12.4 s, audit_command.cc 30.5 -> 15.7 s); the AddressSanitizer documentation
# asks for -O1 or higher. ci/fuzz.sh --build uses OSS-Fuzz's -O1 and line tables likewise.
if bash ci/fuzz.sh --check >/dev/null 2>&1; then
  sanitize_dir=build-fuzz
  echo "== ASan+UBSan build with libFuzzer's coverage (clang, $sanitize_dir/): the quick tests," \
       "the CLI (cli_test) and the fuzz harnesses; ctest -L quick"
  BUILD_DIR=$sanitize_dir TARGETS='fpconform_tests_quick fpconform' bash ci/fuzz.sh --build \
    "${venv_flag[@]}"
else
  sanitize_dir=build-asan
  echo "== ASan+UBSan build ($sanitize_dir/, the default compiler: clang cannot link libFuzzer" \
       "here, bash ci/fuzz.sh --check says why): the quick tests and the CLI; ctest -L quick"
  BUILD_DIR=$sanitize_dir TARGETS='fpconform_tests_quick fpconform' bash ci/build.sh \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFPCONFORM_SANITIZE=ON -DFPCONFORM_BENCHMARKS=OFF \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
    "${venv_flag[@]}"
fi
step_done "ASan+UBSan build"
if [ -n "$python_pid" ]; then
  wait "$python_pid" || true
  trap 'rm -rf "$run_tmp"' EXIT
  cat "$run_tmp/python.log"
  read -r python_rc python_wall <"$run_tmp/python.status"
  echo "== Python package: $python_wall s wall (beside the ASan+UBSan build)"
  if [ "$python_rc" != 0 ]; then
    echo "== FAILED: the Python package's tests (exit $python_rc; output above)" >&2
    exit 1
  fi
  step_done "waiting for the Python package"
fi
seed_costs "$sanitize_dir"
# Not plot_report_test: it runs Debian's python3 on report.html's renderer and no program of this
# tree, so the sanitizers have nothing to check there (about 30 s; step 1 ran it).
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$sanitize_dir" -L quick -E '^plot_report_test$' --output-on-failure -j "$jobs"
step_done "ASan+UBSan ctest -L quick"

# 10 s each here (ci/fuzz.sh alone: 20): the corpora and regression inputs are replayed in full
# either way, and fuzzing for long is a separate run (bash ci/fuzz.sh 600).
fuzz_seconds=${FPCONFORM_FUZZ_SECONDS:-10}
echo "== libFuzzer harnesses (clang, ASan+UBSan, build-fuzz/ built above), $fuzz_seconds s each"
bash ci/fuzz.sh "$fuzz_seconds"
step_done "fuzz build and fuzzing"
