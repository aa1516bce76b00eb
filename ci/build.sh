#!/usr/bin/env bash
# Configures and builds fpconform into BUILD_DIR (default: build). Extra arguments go to cmake;
# TARGETS (space-separated) builds only those targets instead of the default (all).
#   ci/build.sh                       # Release build in ./build
#   BUILD_DIR=build-asan ci/build.sh -DFPCONFORM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
#   BUILD_DIR=build-main TARGETS=fpconform ci/build.sh -DFPCONFORM_BUILD_TESTS=OFF
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
read -r -a targets <<<"${TARGETS:-}"
target_flags=()
[ ${#targets[@]} -gt 0 ] && target_flags=(--target "${targets[@]}")
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFPCONFORM_WERROR=ON "$@" >/dev/null
cmake --build "$build_dir" -j "$jobs" "${target_flags[@]}"
