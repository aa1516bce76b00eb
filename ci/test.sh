#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs the default ctest
# (labels quick and oracle), the Python package's pytest suite (ci/python_test.sh: the module built
# in the same Release tree, then `pip wheel .`), then the quick tests again under AddressSanitizer
# and UndefinedBehaviorSanitizer, then the libFuzzer harnesses (ci/fuzz.sh: their checked-in
# corpora and regression cases, then FPCONFORM_FUZZ_SECONDS of fuzzing each, default 20; skipped
# with a message where clang/libFuzzer is missing). Set FPCONFORM_EXHAUSTIVE=1 to add the
# exhaustive label, FPCONFORM_WHEEL=0 to skip the `pip wheel .` check (about 2.5 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
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

jobs=${JOBS:-$(nproc)}
labels='quick|oracle'
[ "${FPCONFORM_EXHAUSTIVE:-0}" = 1 ] && labels='quick|oracle|exhaustive'

echo "== Release build, ctest -L '$labels'"
BUILD_DIR=build bash ci/build.sh "${venv_flag[@]}" "${python_flag[@]}"
ctest --test-dir build -L "$labels" --output-on-failure -j "$jobs"

if [ ${#python_flag[@]} -gt 0 ]; then
  echo "== Python package: pytest suite, doctests, examples/pytest, pip wheel ."
  bash ci/python_test.sh build "$venv_python"
else
  echo "== SKIPPED: the Python package's tests (no venv: ci/venv.sh needs PyPI)" >&2
fi

echo "== ASan+UBSan build, ctest -L quick"
BUILD_DIR=build-asan bash ci/build.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFPCONFORM_SANITIZE=ON \
  -DFPCONFORM_BENCHMARKS=OFF "${venv_flag[@]}"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -L quick --output-on-failure -j "$jobs"

echo "== libFuzzer harnesses (clang, ASan+UBSan), ${FPCONFORM_FUZZ_SECONDS:-20} s each"
bash ci/fuzz.sh
