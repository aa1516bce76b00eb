#!/usr/bin/env bash
# Installs what fpconform needs on Debian 12 (root, or sudo available), only if missing.
# Safe to run any number of times.
#   bash ci/setup.sh          # everything: the main job's packages and the tests' (ci/test.sh)
#   bash ci/setup.sh main     # only what the main job (ci/main.sh) builds and runs with
set -euo pipefail

# The main job: configure (GoogleTest's CMake package is found unconditionally by the top-level
# CMakeLists.txt, Boost by oracles/), build the fpconform CLI, render report.html (matplotlib,
# which brings numpy).
main_packages=(
  build-essential cmake ninja-build pkg-config
  libmpfr-dev libgmp-dev libboost-dev libabsl-dev libgtest-dev
  libcli11-dev nlohmann-json3-dev libtomlplusplus-dev
  python3-matplotlib
)
# The tests on top of that: GoogleMock and Google Benchmark, NumPy for the CLI tests' input
# files, python3-venv for ci/venv.sh, ccache (ci/test.sh's wheel build reuses its Release build's
# compiles), clang and libFuzzer's runtime for ci/fuzz.sh (the largest part of the download).
test_packages=(
  git libgmock-dev libbenchmark-dev python3-numpy python3-venv ccache
  clang libclang-rt-14-dev
)

case "${1:-all}" in
  all) packages=("${main_packages[@]}" "${test_packages[@]}") ;;
  main) packages=("${main_packages[@]}") ;;
  *)
    echo "ci/setup.sh: unknown package set '$1' (all, main)" >&2
    exit 2
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "fpconform setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi
