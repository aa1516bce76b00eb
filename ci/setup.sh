#!/usr/bin/env bash
# Installs what fpconform needs on Debian 12 (root, or sudo available), only if missing.
# Safe to run any number of times.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libmpfr-dev libgmp-dev libboost-dev libabsl-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev
  python3-numpy python3-matplotlib python3-venv
  clang libclang-rt-14-dev  # ci/fuzz.sh: clang++ and libFuzzer's runtime (libclang_rt.fuzzer)
)

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
