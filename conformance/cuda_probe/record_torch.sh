#!/usr/bin/env bash
# Records torch/cuBLAS outputs for `fpconform reveal --from` (probe tensors of a few shapes, tiled
# so that a tree that depends on the output position shows) and for the audit's fit (ordinary
# N(0, 1) matmuls), under $OUT (default ./torch_record_out). A sibling of run_on_device.sh; never
# run by the tests. Needs: an fpconform binary (FPCONFORM, default build/cli/fpconform: built on
# any machine, it only writes the probe files) and python3 with torch (CUDA), numpy and ml_dtypes
# (PYTHON, default python3). Well under 3 minutes on one GPU (the probes are at most 2304 x 1024).
#   OUT=/tmp/rec FPCONFORM=build/cli/fpconform bash conformance/cuda_probe/record_torch.sh
# Then send $OUT back as conformance/data/README.md ("Sending a recording back") says.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-$PWD/torch_record_out}"
fpc="${FPCONFORM:-$here/../../build/cli/fpconform}"
py="${PYTHON:-python3}"
if [ -e "$out/reveal" ]; then
  echo "$out/reveal exists: give a new OUT"; exit 2
fi
mkdir -p "$out"
log="$out/record_log.txt"
{
  echo "== nvidia-smi"; nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv 2>&1
  echo "== fpconform"; "$fpc" --version 2>&1
} > "$log"
# name op k dtype tiles
while read -r name op k dtype tiles; do
  if ! "$fpc" reveal --make-probes --op "$op" --k "$k" --dtype "$dtype" --tiles "$tiles" \
      --out "$out/reveal/$name" >> "$log" 2>&1; then
    echo "make-probes $name failed; see $log"; cat "$log"; exit 1
  fi
done <<'SHAPES'
mm_bf16_k256_t2 matmul 256 bfloat16 2
mm_bf16_k512_t2 matmul 512 bfloat16 2
mm_bf16_k1024_t2 matmul 1024 bfloat16 2
mm_f32_k256_t2 matmul 256 float32 2
mm_f32_k1024_t2 matmul 1024 float32 2
sum_f32_k128 sum 128 float32 1
SHAPES
echo "== record_torch.py" >> "$log"
timeout 170 "$py" "$here/record_torch.py" "$out" >> "$log" 2>&1
rc=$?
cat "$log"
# Reveal what can be revealed here already (the same binary; no GPU needed for this step).
for d in "$out"/reveal/*/; do
  for o in "$d"out_*.npy; do
    [ -e "$o" ] || continue
    dt=""; case "$o" in *bfloat16*) dt="--outputs-dtype bfloat16";; esac
    echo "== reveal $o"
    # shellcheck disable=SC2086
    "$fpc" reveal --from "$d" --outputs "$o" $dt 2>&1 | grep -v '^tree:' | head -40
  done
done > "$out/reveal_summary.txt"
ls -lR "$out" | head -80
exit $rc
