#!/usr/bin/env bash
# The Python step of ci/test.sh: the fpconform package as built in BUILD_DIR (the module
# <build>/python/fpconform/_fpconform*.so next to copies of python/fpconform/*.py), its pytest
# suite python/tests/ (against <build>/cli/fpconform, bit for bit), the doctests of the package's
# API examples (--doctest-modules), and examples/pytest (with its own pytest.ini; its wrong
# kernel is an xfail(strict=True), and the message it gives is printed).
#   bash ci/python_test.sh [BUILD_DIR] [PYTHON]      # defaults: build, .venv/bin/python
# Then the full check of the wheel (FPCONFORM_WHEEL=0 skips it): `pip wheel .` from this tree into
# a temporary directory, installed into a temporary directory (with its pytest11 entry point),
# then the suite, the doctests and examples/pytest again against the installed package. The wheel
# builds its own libraries (without the tests) in a temporary build-wheel.* directory at the top
# of the tree, with warnings as errors: at the same depth as BUILD_DIR and with the same flags, so
# that where CCACHE_DIR is set (ci/test.sh sets a private one, filled by its Release build) ccache
# serves those compiles from the Release tree's (their compile commands are the same; a wheel
# build served from the cache took 4 s of CPU, one that filled it 208 s).
# Any pytest failure, and pytest's exit code 5 (no tests collected), fails this script.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
py=${2:-.venv/bin/python}
root=$PWD
[[ $py = /* ]] || py="$root/$py"  # Not realpath: the venv's python is a symlink to /usr/bin's.

if ! ls "$build"/python/fpconform/_fpconform*.so >/dev/null 2>&1; then
  echo "ci/python_test.sh: $build/python/fpconform/_fpconform*.so is missing: configure with" \
       "-DFPCONFORM_PYTHON=ON -DPython_EXECUTABLE=$py and build target _fpconform" >&2
  exit 1
fi

pytest_common=(-p no:cacheprovider -q -rs -o console_output_style=classic)

echo "== pytest python/tests and the package's doctests ($build/python)"
PYTHONPATH="$root/$build/python" FPCONFORM_CLI="$root/$build/cli/fpconform" FPCONFORM_REQUIRE_CLI=1 \
  "$py" -m pytest "${pytest_common[@]}" -p fpconform.pytest_plugin --doctest-modules \
  python/tests "$build/python/fpconform"

echo "== pytest examples/pytest"
(cd examples/pytest && PYTHONPATH="$root/$build/python" \
  "$py" -m pytest "${pytest_common[@]}" -p fpconform.pytest_plugin -rxP .)

if [ "${FPCONFORM_WHEEL:-1}" = 1 ]; then
  tmp=$(mktemp -d)
  wheel_build=$(mktemp -d "$root/build-wheel.XXXXXX")
  trap 'rm -rf "$tmp" "$wheel_build"' EXIT
  wheel_flags=(--config-settings=build-dir="$wheel_build"
               --config-settings=cmake.define.FPCONFORM_WERROR=ON)
  # BUILD_DIR's compiler by the same path (ccache hashes it; scikit-build-core would otherwise
  # take Python's, x86_64-linux-gnu-g++: the same compiler by another name, every compile a miss).
  cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
  [ -n "$cxx" ] && wheel_flags+=(--config-settings=cmake.define.CMAKE_CXX_COMPILER="$cxx")
  if [ -n "${CCACHE_DIR:-}" ] && command -v ccache >/dev/null 2>&1; then
    wheel_flags+=(--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  echo "== pip wheel . (into $tmp) and the suite against the installed wheel"
  start=$(date +%s)
  "$py" -m pip wheel "$root" -w "$tmp/wheels" --no-deps --no-build-isolation -q "${wheel_flags[@]}"
  echo "   wheel built in $(( $(date +%s) - start )) s: $(ls "$tmp"/wheels)"
  # Installed with pip into a directory of its own (no network: numpy, ml_dtypes and pytest come
  # from $py's venv), then used from outside the tree so that the installed package (and its
  # data/) is the one imported; the plugin is loaded by the wheel's pytest11 entry point.
  "$py" -m pip install -q --no-deps --target "$tmp/site" "$tmp"/wheels/fpconform-*.whl
  # The BLAS verification (test_blas_platforms.py: ~2 min of real-library runs) checks the models,
  # not the installation: it ran above; here only its quick rule checks.
  (cd "$tmp" && PYTHONPATH="$tmp/site" FPCONFORM_CLI="$root/$build/cli/fpconform" FPCONFORM_REQUIRE_CLI=1 \
    "$py" -m pytest "${pytest_common[@]}" -k "not bit_exact and not one_thread" "$root/python/tests")
  (cd "$tmp" && PYTHONPATH="$tmp/site" "$py" -m pytest "${pytest_common[@]}" --doctest-modules "$tmp/site/fpconform")
  (cd "$root/examples/pytest" && PYTHONPATH="$tmp/site" "$py" -m pytest "${pytest_common[@]}" -rx .)
fi
