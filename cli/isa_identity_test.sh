#!/usr/bin/env bash
# The same bytes on every machine: runs a small tolerance report under every instruction set this
# CPU has (FPCONFORM_ISA=portable|avx2|avx512, base/isa.h: the fast paths of fast_eval and
# exact_sum, and fast_convert, all follow it) and checks that its CSV and JSON files are byte for
# byte those of the portable run. Levels this CPU lacks are skipped, and the script says which.
# Also: an unknown FPCONFORM_ISA value, and a level this CPU lacks, exit 2 with a message.
# Usage: isa_identity_test.sh path/to/fpconform
#
# Adding a command (the hook): write a function `case_NAME DIR` that runs "$BIN" with its output
# files under DIR (and returns the command's exit status), and add NAME to CASES. Every file it
# writes whose name ends in .csv or .json is compared across levels.
set -u
BIN=${1:?usage: isa_identity_test.sh path/to/fpconform}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

# The quick tolerance report (every dtype and platform of the standard sweep: host fma and
# pairwise paths, fused tensor-core groups, PSUM, FP8, quantize rows; exact values by exact_sum),
# and the same at large K (more blocks, chunks and promotions per dot).
case_quick() {
  "$BIN" tolerance --quick --threads 2 --no-html --progress never --out "$1/report" 2>"$1.err"
}
case_large_k() {
  "$BIN" tolerance --quick --k 4096,16384 --samples 8 --threads 2 --no-html --progress never \
    --out "$1/report" 2>"$1.err"
}
CASES=(quick large_k)

# Audits (JSON and the report directory's CSV/JSON) of files written by Debian's NumPy: a bf16
# matmul against a host-float PSUM model and a fused tensor-core model, with the tolerance rule,
# one element sign-flipped (diagnoses), and np.sum against numpy-sum-f32. Exit 1 is the expected
# verdict of the mutated output.
if /usr/bin/python3 - "$TMP" <<'EOF'
import sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
def bf16(a):
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
a, b = bf16(rng.standard_normal((24, 640))), bf16(rng.standard_normal((640, 20)))
np.save(f"{d}/a.npy", a)
np.save(f"{d}/b.npy", b)
fa = (a.astype(np.uint32) << 16).view(np.float32)
fb = (b.astype(np.uint32) << 16).view(np.float32)
c = (fa.astype(np.float64) @ fb.astype(np.float64)).astype(np.float32)
c[3, 4] = -c[3, 4]
np.save(f"{d}/c.npy", c)
x = rng.standard_normal((6, 3000)).astype(np.float32)
np.save(f"{d}/x.npy", x)
np.save(f"{d}/y.npy", np.sum(x, axis=-1))
# Composite ops: gelu and softmax of rows, rounded once from float64 (one element mutated).
z = (rng.standard_normal((16, 200)) * 3).astype(np.float32)
np.save(f"{d}/z.npy", z)
zd = z.astype(np.float64)
e = np.exp(zd - zd.max(-1, keepdims=True))
s = (e / e.sum(-1, keepdims=True)).astype(np.float32)
s[2, 7] *= 2
np.save(f"{d}/s.npy", s)
np.save(f"{d}/t.npy", np.tanh(zd).astype(np.float32))
EOF
then
  case_audit() {
    "$BIN" audit matmul --a "$TMP/a.npy" --a-dtype bfloat16 --b "$TMP/b.npy" --b-dtype bfloat16 \
      --out "$TMP/c.npy" --platform trainium2-bf16,nvidia-h100-bf16 --tolerance-samples 16 \
      --threads 2 --progress never --json "$1/matmul.json" --report "$1/report" >/dev/null 2>"$1.err"
    [[ $? == 1 ]] || return 3
    "$BIN" audit sum --x "$TMP/x.npy" --out "$TMP/y.npy" --platform numpy-sum-f32 --threads 2 \
      --tolerance-samples 16 --progress never --json "$1/sum.json" >/dev/null 2>>"$1.err" || return 4
    # The composite audits' certified binary64 paths and enclosures hold no ISA-dependent code:
    # their JSON must not change either.
    "$BIN" audit softmax --x "$TMP/z.npy" --out "$TMP/s.npy" --platform torch-cuda-rows-f32,torch-cpu-rows-f32 \
      --threads 2 --progress never --json "$1/softmax.json" >/dev/null 2>>"$1.err"
    [[ $? == 1 ]] || return 5
    "$BIN" audit elementwise --fn tanh --x "$TMP/z.npy" --out "$TMP/t.npy" --platform auto --threads 2 \
      --progress never --json "$1/tanh.json" >/dev/null 2>>"$1.err"
  }
  CASES+=(audit)
else
  echo "SKIP: audit case: /usr/bin/python3 has no numpy"
fi

# ---- refusals ----
FPCONFORM_ISA=sse9 "$BIN" formats >/dev/null 2>"$TMP/err"; rc=$?
[[ $rc == 2 ]] || fail "FPCONFORM_ISA=sse9: exit status $rc, want 2"
grep -q "^fpconform: FPCONFORM_ISA=sse9: unknown instruction set (valid: portable avx2 avx512" \
  "$TMP/err" || fail "FPCONFORM_ISA=sse9 message: $(cat "$TMP/err")"
FPCONFORM_ISA= "$BIN" formats >/dev/null 2>&1 || fail "FPCONFORM_ISA= (empty) was refused"

# ---- which levels this CPU has: the command itself says (exit 2 for a level it lacks) ----
levels=()
for isa in portable avx2 avx512; do
  FPCONFORM_ISA=$isa "$BIN" formats >/dev/null 2>"$TMP/err"; rc=$?
  if [[ $rc == 0 ]]; then
    levels+=("$isa")
  elif [[ $rc == 2 ]] && grep -q "^fpconform: FPCONFORM_ISA=$isa: this CPU lacks it (available: portable" "$TMP/err"; then
    echo "SKIP: $isa: this CPU lacks it ($(cat "$TMP/err"))"
  else
    fail "FPCONFORM_ISA=$isa: exit status $rc: $(cat "$TMP/err")"
  fi
done
[[ ${levels[0]:-} == portable ]] || fail "portable is not available"
echo "levels compared: ${levels[*]}"

# ---- every case under every level, compared with the portable run ----
for name in "${CASES[@]}"; do
  for isa in "${levels[@]}"; do
    dir="$TMP/$isa/$name"
    mkdir -p "$dir"
    start=$SECONDS
    (export FPCONFORM_ISA=$isa; "case_$name" "$dir"); rc=$?
    echo "$name under $isa: exit $rc, $((SECONDS - start)) s"
    [[ $rc == 0 ]] || { fail "$name under $isa: exit status $rc: $(tail -3 "$dir.err")"; continue; }
    # The level is the one asked for (report.md names it; it is not in the CSV or JSON files).
    if [[ -f "$dir/report/report.md" && $name != audit ]]; then
      grep -q "written on instruction set \`$isa\`" "$dir/report/report.md" \
        || fail "$name under $isa: report.md does not name $isa"
    fi
    files=$(cd "$dir" && find . -type f \( -name '*.csv' -o -name '*.json' \) | sort)
    [[ -n "$files" ]] || fail "$name under $isa: no CSV or JSON files"
    [[ $isa == portable ]] && continue
    ref="$TMP/portable/$name"
    [[ "$files" == "$(cd "$ref" && find . -type f \( -name '*.csv' -o -name '*.json' \) | sort)" ]] \
      || fail "$name under $isa: not the same files as under portable"
    for f in $files; do
      cmp -s "$ref/$f" "$dir/$f" || fail "$name: $f under $isa differs from portable"
    done
  done
done

if (( FAILS > 0 )); then
  echo "$FAILS check(s) failed"
  exit 1
fi
echo "isa_identity_test: all checks passed"
