#!/usr/bin/env bash
# Audits the scaled cuBLASLt FP8 GEMMs that probe.cu's lt-scaled part recorded (DIR/cases.txt:
# "<case> <preset>" lines, DIR/<case>/{a,b,c,d,scale_a,scale_b}.npy) against the presets they
# test, and says whether they confirm `epilogue.c = "after_scale"`
# (D = fl32(fl32(s_a s_b) acc + C) in one rounding, accumulation/models/SOURCES.md).
#   bash conformance/cuda_probe/check_scaled.sh DIR [FPCONFORM]
# FPCONFORM: the CLI (default build/cli/fpconform). Prints each case's classes; exit 0 when every
# element of every case is bit-identical to its preset (confirmed), 1 otherwise (the audits'
# listed elements and diagnoses say how the GPU differs), 2 on a usage or file error.
# A dry run's files (probe dry-run: D computed on the host, no GPU) are not bit-identical; there
# every element must be within bound ("unexplained 0"), which checks the files' layout.
set -u
dir=${1:?usage: check_scaled.sh DIR [FPCONFORM]}
cli=${2:-build/cli/fpconform}
if [ ! -f "$dir/cases.txt" ] || [ ! -x "$cli" ]; then
  echo "check_scaled.sh: needs $dir/cases.txt and the CLI $cli" >&2
  exit 2
fi
all_identical=1
cases=0
while read -r name preset; do
  case "$name" in ''|'#'*) continue ;; esac
  c="$dir/$name"
  out=$("$cli" audit matmul --a "$c/a.npy" --a-dtype float8_e4m3fn --b "$c/b.npy" \
          --b-dtype float8_e4m3fn --c "$c/c.npy" --out "$c/d.npy" --scale-a "$c/scale_a.npy" \
          --scale-b "$c/scale_b.npy" --platform "$preset" --no-tolerance --max-listed 5 2>&1)
  rc=$?
  classes=$(printf '%s\n' "$out" | grep -m1 '^Classes against' || true)
  if [ -z "$classes" ]; then
    printf '%s\n' "$out" >&2
    echo "check_scaled.sh: $name: the audit gave no classes (exit $rc)" >&2
    exit 2
  fi
  echo "$name: $classes"
  cases=$((cases + 1))
  case "$classes" in *' within_bound 0 within_tolerance 0 unexplained 0'*) ;; *) all_identical=0 ;; esac
  case "$classes" in *' unexplained 0'*) ;; *) printf '%s\n' "$out" | sed -n '/^Listed/,$p' ;; esac
done < "$dir/cases.txt"
if [ "$cases" = 0 ]; then
  echo "check_scaled.sh: $dir/cases.txt lists no case" >&2
  exit 2
fi
if [ "$all_identical" = 1 ]; then
  echo "confirmed: every element of the $cases case(s) is bit-identical to its preset"
  exit 0
fi
echo "not confirmed: some elements differ from the presets' after_scale epilogue (see above)"
exit 1
