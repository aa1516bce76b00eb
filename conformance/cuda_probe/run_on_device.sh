#!/usr/bin/env bash
# Builds conformance/cuda_probe/probe*.cu with nvcc (no CMake) and records tensor-core and cuBLAS
# outputs as replay files (conformance/data/README.md) under $OUT (default ./cuda_probe_out).
# Meant for one call of the device tool on a GPU machine:
#   bash conformance/cuda_probe/run_on_device.sh
# Each part (mma, wgmma, cublas) runs in its own process with a time limit, so a crash or hang in
# one (e.g. a wgmma layout fault) cannot lose the others. Total well under 5 minutes.
# Without nvcc on the GPU machine, build here and carry the binary: PROBE_BIN=<path> skips the
# build (the binary links cudart statically; it needs libcublas/libcublasLt and a driver at least
# as new as the toolkit it was built with).
# Afterwards copy $OUT/*.txt (never $OUT/failed/) into conformance/data/ and run replay_test.
# The part lt-scaled writes $OUT/lt_scaled/ (tensor files: replay files have no scales): run
# `bash conformance/cuda_probe/check_scaled.sh $OUT/lt_scaled` here and check the directory in
# as conformance/data/<device>-lt_scaled/ with what it said.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-$PWD/cuda_probe_out}"
mkdir -p "$out"
nvcc_bin="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
log="$out/probe_log.txt"
{
  echo "== nvidia-smi"; nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv 2>&1
  echo "== nvcc"; "$nvcc_bin" --version 2>&1 | tail -2
} > "$log"
bin="${PROBE_BIN:-}"
if [ -n "$bin" ]; then
  echo "== using prebuilt $bin" >> "$log"
else
bin="$(mktemp -d)/cuda_probe"
if ! timeout 240 "$nvcc_bin" -std=c++17 -O2 -I "$here/../.." \
    -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90a,code=sm_90a \
    -gencode arch=compute_80,code=compute_80 \
    -o "$bin" "$here/probe.cu" "$here/probe_common.cu" "$here/probe_instructions.cu" \
    "$here/probe_cublas.cu" -lcublasLt -lcublas >> "$log" 2>&1; then
  echo "build failed; see $log"; cat "$log"; exit 1
fi
fi
rc=0
for part in mma wgmma cublas lt-scaled; do
  echo "== part $part" >> "$log"
  timeout 60 "$bin" "$out" "${SEED:-2026}" "$part" >> "$log" 2>&1 || rc=1
done
cat "$log"
ls -l "$out"
exit $rc
