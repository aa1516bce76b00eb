#!/usr/bin/env bash
# Records torch SDPA with each backend forced (record_sdpa.py) into $OUT/sdpa (default
# ./sdpa_record_out/sdpa), with nvidia-smi, the fpconform version and the script's output in
# $OUT/record_log.txt. A sibling of conformance/cuda_probe/record_torch.sh; never run by the tests.
# Needs python3 with torch (CUDA), numpy and ml_dtypes (PYTHON, default python3) and the fpconform
# package for the writer (PYTHONPATH, default <this tree>/build/python: built on any machine).
# DEVICE=cpu records the CPU backends instead (MATH and torch's CPU flash kernel; no GPU needed).
# The recording takes well under 2 minutes on one GPU; REPLAY=1 then replays it on this machine's
# CPU (minutes: the S = 4096 cases dominate) into $OUT/replay.txt.
#   OUT=/tmp/rec bash conformance/attention_probe/record_sdpa.sh
#   OUT=/tmp/rec-cpu DEVICE=cpu REPLAY=1 bash conformance/attention_probe/record_sdpa.sh
# Then send $OUT back as conformance/data/README.md ("Attention recordings") says.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-$PWD/sdpa_record_out}"
py="${PYTHON:-python3}"
device="${DEVICE:-cuda}"
export PYTHONPATH="${PYTHONPATH:-$here/../../build/python}"
if [ -e "$out/sdpa" ]; then
  echo "$out/sdpa exists: give a new OUT"; exit 2
fi
mkdir -p "$out"
log="$out/record_log.txt"
{
  echo "== nvidia-smi"; nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv 2>&1
  echo "== cpu"; grep -m1 "model name" /proc/cpuinfo; nproc
  echo "== python"; "$py" -c 'import torch, numpy, ml_dtypes, fpconform; print("torch", torch.__version__, "cuda", torch.version.cuda, "numpy", numpy.__version__, "ml_dtypes", ml_dtypes.__version__, "fpconform", fpconform.__file__)' 2>&1
  echo "== record_sdpa.py --device $device"
} > "$log"
# The torch profiler writes "USDT: ... profiler_start/stop" lines: kept out of the log.
timeout 300 "$py" "$here/record_sdpa.py" --device "$device" --out "$out/sdpa" 2>&1 | grep -v '^USDT:' >> "$log"
rc=${PIPESTATUS[0]}
cat "$log"
if [ "$rc" -eq 0 ] && [ "${REPLAY:-0}" = 1 ]; then
  "$py" -m fpconform.recordings "$out/sdpa" > "$out/replay.txt" 2>&1
  rc=$?
  cat "$out/replay.txt"
fi
ls -l "$out" "$out/sdpa" | head -40
exit "$rc"
