#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan + UBSan) into build-fuzz/ and runs each of them:
# first every checked-in corpus input once (seeds and regression-* cases: a failure there is a
# regression), then fuzzing for a bounded time from that corpus. New inputs go to a temporary
# directory, never into the checked-in corpus. Harnesses register themselves with
# fpconform_fuzzer(...) in CMake (listed in build-fuzz/fuzzers.txt): nothing to add here.
# --build configures and builds the tree only, with TARGETS besides the harnesses (ci/test.sh
# builds the quick tests and the CLI there too, and runs their sanitizer run in this tree).
#
#   bash ci/fuzz.sh            # FPCONFORM_FUZZ_SECONDS per harness (default 20)
#   bash ci/fuzz.sh 600        # ten minutes per harness
#   bash ci/fuzz.sh 0          # only replay the checked-in corpora (regression cases included)
#   FPCONFORM_FUZZERS='calc_case_fuzzer model_fuzzer' bash ci/fuzz.sh 60   # a subset
#   bash ci/fuzz.sh --check    # exit 0 when clang can link a libFuzzer program, else 1 (says why)
#   TARGETS='fpconform_tests_quick fpconform' bash ci/fuzz.sh --build [CMAKE_ARG...]
#                              # configure and build the tree only: the harnesses and TARGETS
#
# Harnesses run JOBS at a time (default: the number of cores), each a single process with its own
# SECONDS of fuzzing, so the time per harness does not depend on JOBS; the reports are printed in
# the order of fuzzers.txt once all have run.
#
# Exit status: 0 when every harness ran clean, or when clang / libFuzzer is missing (it says so
# and skips); 1 on a crash, sanitizer report, timeout or out-of-memory: the reproducer's path is
# printed (kept under build-fuzz/fuzz-artifacts/).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=run
case "${1:-}" in
  --check) mode=check; shift ;;
  --build) mode=build ;;
esac
if [ "$mode" = build ]; then
  shift
  cmake_args=("$@")
  seconds=0
else
  cmake_args=()
  seconds=${1:-${FPCONFORM_FUZZ_SECONDS:-20}}
fi
build_dir=${BUILD_DIR:-build-fuzz}
case "$build_dir" in /*) ;; *) build_dir="$PWD/$build_dir" ;; esac
jobs=${JOBS:-$(nproc)}
cxx=${FPCONFORM_FUZZ_CXX:-clang++}
case "$seconds" in
  '' | *[!0-9]*)
    echo "fuzz: seconds per harness must be a whole number, got '$seconds'" >&2
    exit 2
    ;;
esac

# clang with libFuzzer's runtime (Debian: packages clang and libclang-rt-14-dev)? --check's
# answer is the exit status; otherwise a missing one skips, saying so.
[ "$mode" = check ] && missing_status=1 || missing_status=0
probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "fuzz: SKIPPED: $cxx not found (install clang and libclang-rt-14-dev: bash ci/setup.sh)"
  exit "$missing_status"
fi
printf '%s\n' 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) {' \
  '  return 0;' '}' >"$probe_dir/probe.cc"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe_dir/probe.cc" -o "$probe_dir/probe" \
     >"$probe_dir/probe.log" 2>&1; then
  echo "fuzz: SKIPPED: $cxx cannot link a libFuzzer program (libclang-rt-14-dev missing?):"
  sed 's/^/  /' "$probe_dir/probe.log" | head -5
  exit "$missing_status"
fi
[ "$mode" = check ] && exit 0

# The tree: every library with ASan + UBSan and libFuzzer's coverage (FPCONFORM_FUZZ), at
# OSS-Fuzz's optimization and debug level (its build environment's CFLAGS are "-O1
# -fno-omit-frame-pointer -gline-tables-only ..."): line tables are all a sanitizer report needs,
# and -O1 compiles faster than RelWithDebInfo's -O2 -g (README, "The two commands": figures).
read -r -a targets <<<"${TARGETS:-}"
[ "$mode" = build ] || targets=()
echo "== fuzz build ($build_dir, $cxx, ASan+UBSan): fuzzers ${targets[*]}"
start=$(date +%s)
fuzz_flags="-O1 -fno-omit-frame-pointer -gline-tables-only -DNDEBUG"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$fuzz_flags" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$fuzz_flags" \
  -DCMAKE_CXX_COMPILER="$cxx" -DFPCONFORM_FUZZ=ON -DFPCONFORM_SANITIZE=ON \
  -DFPCONFORM_WERROR=ON -DFPCONFORM_BENCHMARKS=OFF "${cmake_args[@]}" >/dev/null
cmake --build "$build_dir" -j "$jobs" --target fuzzers "${targets[@]}"
echo "fuzz: built in $(($(date +%s) - start)) s"
[ "$mode" = build ] && exit 0

list="$build_dir/fuzzers.txt"
[ -f "$list" ] || { echo "fuzz: $list missing (cmake did not write it)" >&2; exit 1; }
artifacts="$build_dir/fuzz-artifacts"
work=$(mktemp -d)
trap 'rm -rf "$probe_dir" "$work"' EXIT

# Sanitizers: abort on the first report, with symbols; leaks are reported as failures.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# The lines of a libFuzzer log that say what went wrong and where: the first report's message,
# its fpconform frames and summary (libFuzzer's own repeat of the stack is left out).
show_errors() {
  awk '/ERROR: libFuzzer: deadly signal/ { print; exit }
       /ERROR|SUMMARY|runtime error|^[a-z_]+_fuzzer: |#[0-9]+ 0x[0-9a-f]+ in fpconform/ { print }' "$1" |
    head -12 | cut -c1-220 | sed 's/^/  /'
}

# One harness: replay, then fuzz. Its report goes to stdout (the caller sends it to a file), its
# verdict is the exit status.
run_harness() {
  local name=$1 binary=$2 corpus=$3 dict=$4
  local log="$work/$name.log"
  mkdir -p "$artifacts/$name" "$work/$name"
  local common=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=1
                "-artifact_prefix=$artifacts/$name/")
  [ -n "$dict" ] && common+=("-dict=$dict")

  # 1. Replay: every checked-in input once (a regression-* case that fails is a regression).
  local files=("$corpus"/*)
  if [ ! -e "${files[0]}" ]; then
    echo "fuzz: $name: corpus $corpus is empty"
    return 1
  fi
  if ! "$binary" "${common[@]}" "${files[@]}" >"$log" 2>&1; then
    echo "fuzz: $name: FAILED replaying the checked-in corpus $corpus:"
    show_errors "$log"
    local input
    input=$(sed -n 's/^Running: //p' "$log" | tail -1)
    echo "  input:  $input"
    echo "  replay: $binary $input"
    cp "$log" "$artifacts/$name/replay.log"
    echo "  log:    $artifacts/$name/replay.log"
    return 1
  fi

  if [ "$seconds" -eq 0 ]; then
    echo "fuzz: $name: ${#files[@]} checked-in inputs replayed clean (no fuzzing: 0 s)"
    return 0
  fi

  # 2. Fuzz for $seconds, single process (no -fork/-jobs), new inputs into $work/$name only.
  touch "$work/$name.start"
  local rc=0
  "$binary" "${common[@]}" -max_total_time="$seconds" "$work/$name" "$corpus" >"$log" 2>&1 || rc=$?
  final_stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  local runs execs added crashes
  runs=$(final_stat number_of_executed_units)
  execs=$(final_stat average_exec_per_sec)
  added=$(find "$work/$name" -type f | wc -l)
  crashes=$(find "$artifacts/$name" -type f -newer "$work/$name.start" | wc -l)
  printf 'fuzz: %-22s %8s runs %6s exec/s  corpus %4s seeds + %4s new  crashes %s\n' \
    "$name" "${runs:-?}" "${execs:-?}" "${#files[@]}" "$added" "$crashes"
  if [ "$rc" -ne 0 ]; then
    echo "fuzz: $name: FAILED (exit $rc):"
    show_errors "$log"
    local repro
    repro=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    if [ -n "$repro" ]; then
      echo "  reproducer: $repro"
      echo "  replay:     $binary $repro"
      echo "  minimize:   $binary -minimize_crash=1 -runs=100000 -exact_artifact_path=$artifacts/$name/minimized $repro"
      echo "  then check the minimized input in as $corpus/regression-<short-name>"
    fi
    cp "$log" "$artifacts/$name/last.log"
    echo "  full log:   $artifacts/$name/last.log"
    return 1
  fi
}

# The harnesses, JOBS at a time; each one's report and status in $work/<name>.report / .status.
names=()
running=0
while IFS=$'\t' read -r name binary corpus dict; do
  [ -n "$name" ] || continue
  if [ -n "${FPCONFORM_FUZZERS:-}" ] && [[ " $FPCONFORM_FUZZERS " != *" $name "* ]]; then
    continue
  fi
  names+=("$name")
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  (
    rc=0
    run_harness "$name" "$binary" "$corpus" "$dict" >"$work/$name.report" 2>&1 || rc=$?
    echo "$rc" >"$work/$name.status"
  ) &
  running=$((running + 1))
done <"$list"
wait

if [ ${#names[@]} -eq 0 ]; then
  echo "fuzz: no harness registered (or none matched FPCONFORM_FUZZERS)" >&2
  exit 1
fi
failed=0
for name in "${names[@]}"; do
  cat "$work/$name.report"
  if [ "$(cat "$work/$name.status" 2>/dev/null)" != 0 ]; then
    failed=1
  fi
done
[ "$failed" -eq 0 ] && echo "fuzz: ${#names[@]} harnesses clean ($seconds s each, $jobs at a time)"
exit "$failed"
