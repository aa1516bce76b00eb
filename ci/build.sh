#!/usr/bin/env bash
# Configures and builds fpconform into BUILD_DIR (default: build). Extra arguments go to cmake.
#   ci/build.sh                       # Release build in ./build
#   BUILD_DIR=build-asan ci/build.sh -DFPCONFORM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFPCONFORM_WERROR=ON "$@" >/dev/null
cmake --build "$build_dir" -j "$jobs"
