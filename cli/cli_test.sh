#!/usr/bin/env bash
# End-to-end test of the fpconform binary: calc from stdin and --input, exit codes, the formats
# table and --values, models, reveal, tolerance and merge (--out safety, interrupts, shard
# schema checks). Usage: cli_test.sh path/to/fpconform
set -u
BIN=${1:?usage: cli_test.sh path/to/fpconform}
[[ "$BIN" == /* ]] || BIN="$PWD/$BIN"  # Some checks run in another directory.
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILS=0

fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
expect_eq() {  # name, got, want
  if [[ "$2" != "$3" ]]; then
    fail "$1"; echo "  got:  $(printf '%q' "$2")"; echo "  want: $(printf '%q' "$3")"
  fi
}
expect_rc() {  # name, got, want
  [[ "$2" == "$3" ]] || fail "$1: exit status $2, want $3"
}

# ---- calc from stdin ----
# 448 * 2 overflows float8_e4m3fn (no Inf): NaN 0x7f; sat: 448 = 0x7e. 128.0 -> int8 out of range.
out=$(printf 'mul float8_e4m3fn rne 0x7e 0x40\nmul float8_e4m3fn:sat rne 0x7e 0x40\ncvt float32 int8 rne 0x43000000\n' \
      | "$BIN" calc 2>"$TMP/err"); rc=$?
expect_eq "calc stdin output" "$out" $'0x7f ox\n0x7e ox\n0x80 v'
expect_rc "calc stdin" "$rc" 0
expect_eq "calc stdin stderr" "$(cat "$TMP/err")" ""

# ---- the worked example of CALC.md ----
DOC="$(dirname "$0")/CALC.md"
example_in=$(sed -n "/^\$ fpconform calc <<'EOF'\$/,/^EOF\$/p" "$DOC" | sed '1d;$d')
example_out=$(sed -n '/^EOF$/,/^```$/p' "$DOC" | sed '1d;$d')
[[ -n "$example_in" && -n "$example_out" ]] || fail "CALC.md example not found"
out=$(printf '%s\n' "$example_in" | "$BIN" calc); rc=$?
expect_eq "CALC.md example" "$out" "$example_out"
expect_rc "CALC.md example" "$rc" 0

# ---- calc --input, with comments, CRLF and no trailing newline ----
printf '# header\r\nadd float32 rne 0x3f800000 0x33800000  # 1 + 2^-24, tie -> 1\r\n\nadd float32 rup 0x3f800000 0x33800000' \
  > "$TMP/cases.txt"
out=$("$BIN" calc --input "$TMP/cases.txt"); rc=$?
expect_eq "calc --input output" "$out" $'0x3f800000 x\n0x3f800001 x'
expect_rc "calc --input" "$rc" 0
out=$("$BIN" calc -i "$TMP/cases.txt"); rc=$?
expect_eq "calc -i output" "$out" $'0x3f800000 x\n0x3f800001 x'
out=$("$BIN" calc --input - < "$TMP/cases.txt"); rc=$?
expect_eq "calc --input - output" "$out" $'0x3f800000 x\n0x3f800001 x'

# ---- bad lines: 'error' in place, message names the line, exit 1 after the last line ----
printf 'add float32 rne 0x3f800000 0x3f800000\n# c\nadd float8_e4m3x rne 0x0 0x0\nadd float32 rne 0x3f800000 0x3f800000\n' \
  > "$TMP/bad.txt"
out=$("$BIN" calc --input "$TMP/bad.txt" 2>"$TMP/err"); rc=$?
expect_eq "calc bad output" "$out" $'0x40000000 -\nerror\n0x40000000 -'
expect_rc "calc bad lines" "$rc" 1
grep -q "^line 3: unknown format 'float8_e4m3x' (valid: float64 float32" "$TMP/err" \
  || fail "calc bad stderr: $(cat "$TMP/err")"

# ---- dot and sum (exact, rounded once) ----
out=$(printf 'dot float32 float32 rne 2 0x3f800000 0x33800000 0x3f800000 0x3f800000\nsum float8_e4m3fn float8_e4m3fn:sat rup 2 0x7e 0x58\nsum float32 float32 rne 0\ndot float32 float32 rne 2 0x3f800000\n' \
      | "$BIN" calc 2>"$TMP/err"); rc=$?
expect_eq "calc dot/sum output" "$out" $'0x3f800000 x\n0x7e ox\n0x00000000 -\nerror'
expect_rc "calc dot/sum" "$rc" 1
grep -q "^line 4: 'dot' takes 4 operands (2 x n, n = 2), got 1$" "$TMP/err" \
  || fail "calc dot count message: $(cat "$TMP/err")"
# A 1.5 MB line (n = 70000 float32 pairs 1 * 1 = 70000 = 0x4788b800) crosses the 1 MiB reads.
awk 'BEGIN { printf "dot float32 float32 rne 70000"; for (i = 0; i < 140000; ++i) printf " 0x3f800000"; printf "\nsum float32 float32 rne 1 0x40000000\n" }' \
  > "$TMP/long.txt"
out=$("$BIN" calc --input "$TMP/long.txt"); rc=$?
expect_eq "calc long dot" "$out" $'0x4788b800 -\n0x40000000 -'
expect_rc "calc long dot" "$rc" 0

# ---- mdot / msum under accumulation models ----
# H100 bf16: 1 - 2^-25 in one fused group, normalized RZ -> 1 - 2^-24; the exact dot rounds to 1.
out=$(printf 'mdot nvidia-h100-bf16 2 0x3f80 0xb300 0x3f80 0x3f80 0x0\ndot bfloat16 float32 rne 2 0x3f80 0xb300 0x3f80 0x3f80\nmdot cpu-f32-seq 1 0x40000000 0x40400000 0x3f800000\nmsum cpu-f32-seq 3 0x3f800000 0x33800000 0x33800000\nmdot nvidia-h100-tf32 1 0x3f801fff 0x3f800000 0x0\nmdot no-such 0 0x0\n' \
      | "$BIN" calc 2>"$TMP/err"); rc=$?
expect_eq "calc mdot/msum output" "$out" $'0x3f7fffff -\n0x3f800000 x\n0x40e00000 -\n0x3f800000 -\n0x3f800000 -\nerror'
expect_rc "calc mdot/msum" "$rc" 1
grep -q "^line 6: unknown model 'no-such' in " "$TMP/err" || fail "mdot unknown model: $(cat "$TMP/err")"
# --models-dir and FPCONFORM_MODELS_DIR pick the directory.
mkdir "$TMP/models"
out=$(echo 'msum cpu-f32-seq 1 0x3f800000' | "$BIN" calc --models-dir "$TMP/models" 2>/dev/null)
expect_eq "calc --models-dir (empty dir)" "$out" "error"
cp "$(dirname "$0")/../accumulation/models/cpu-f32-seq.toml" "$TMP/models/"
out=$(echo 'msum cpu-f32-seq 1 0x3f800000' | FPCONFORM_MODELS_DIR="$TMP/models" "$BIN" calc)
expect_eq "calc FPCONFORM_MODELS_DIR" "$out" "0x3f800000 -"

# ---- models ----
"$BIN" models > "$TMP/models.txt" 2>"$TMP/err"; expect_rc "models" "$?" 0
expect_eq "models stderr" "$(cat "$TMP/err")" ""
for name in nvidia-h100-bf16 nvidia-a100-tf32 trainium2-bf16 numpy-sum-f32 cpu-f32-seq; do
  grep -Eq "^$name +[^ ]" "$TMP/models.txt" || fail "models: no line for $name"
done
expect_eq "models line count" "$(wc -l < "$TMP/models.txt" | tr -d ' ')" \
  "$(ls "$(dirname "$0")"/../accumulation/models/*.toml | wc -l | tr -d ' ')"
"$BIN" models show nvidia-h100-bf16 > "$TMP/show.txt" 2>&1; expect_rc "models show" "$?" 0
grep -q '^name: nvidia-h100-bf16$' "$TMP/show.txt" || fail "models show: no name line"
grep -q '^  adder.group = 16$' "$TMP/show.txt" || fail "models show: no adder.group line"
grep -q '^    source: .*MMA-Sim' "$TMP/show.txt" || fail "models show: no source lines"
"$BIN" models show nvidia-t4-fp16 | grep -q 'UNCONFIRMED' || fail "models show: unconfirmed not marked"
"$BIN" models show no-such > /dev/null 2>"$TMP/err"; expect_rc "models show unknown" "$?" 2
grep -q "unknown model 'no-such'" "$TMP/err" || fail "models show unknown message: $(cat "$TMP/err")"
# A bad file: the good ones are still listed, the bad one reported as file:line: field, exit 2.
sed 's/^group = .*/group = 0/' "$(dirname "$0")/../accumulation/models/nvidia-h100-bf16.toml" \
  > "$TMP/models/nvidia-h100-bf16.toml"
out=$("$BIN" models --models-dir "$TMP/models" 2>"$TMP/err"); rc=$?
expect_rc "models with a bad file" "$rc" 2
[[ "$out" =~ ^cpu-f32-seq\  ]] || fail "models with a bad file: good one not listed: $out"
grep -Eq "nvidia-h100-bf16.toml:[0-9]+: adder.group: " "$TMP/err" || fail "models bad file message: $(cat "$TMP/err")"
"$BIN" models show nvidia-h100-bf16 --models-dir "$TMP/models" > /dev/null 2>&1
expect_rc "models show bad file" "$?" 2
"$BIN" models --help > /dev/null 2>&1; expect_rc "models --help" "$?" 0

# ---- models numpy-matmul: the preset for numpy's a @ b (exit 0), none (1), bad input (2) ----
NM=("$BIN" models numpy-matmul)
out=$("${NM[@]}" --m 256 --k 1000 --n 256 --dtype float32 --blas scipy-openblas --core SkylakeX \
      --threads 2 2>"$TMP/err"); rc=$?
expect_eq "numpy-matmul level-3" "$out" \
  $'preset: numpy-openblas-skylakex-f32\nreason: the level-3 driver with several threads'
expect_rc "numpy-matmul level-3" "$rc" 0
expect_eq "numpy-matmul stderr" "$(cat "$TMP/err")" ""
out=$("${NM[@]}" --m 256 --k 1000 --n 256 --dtype float32 --blas scipy-openblas --core SkylakeX)
expect_eq "numpy-matmul one thread (default)" "$out" \
  $'preset: numpy-openblas-skylakex-f32-1thread\nreason: the level-3 driver on one thread'
out=$("${NM[@]}" --m 16 --k 4096 --n 16 --dtype float32 --blas openblas --core cooperlake --threads 2)
expect_eq "numpy-matmul level3_thread.c does not split" "$(head -1 <<< "$out")" \
  "preset: numpy-openblas-skylakex-f32-1thread"
out=$("${NM[@]}" --m 64 --k 64 --n 64 --dtype float64 --blas reference)
expect_eq "numpy-matmul reference" "$(head -1 <<< "$out")" "preset: numpy-refblas-f64"
out=$("${NM[@]}" --m 1 --k 1000 --n 256 --dtype float32 --blas reference); rc=$?
expect_eq "numpy-matmul vector" "$out" $'preset: none\nreason: a vector operand (m or n = 1): numpy calls gemv or dot, whose order is not modelled'
expect_rc "numpy-matmul vector" "$rc" 1
out=$("${NM[@]}" --m 64 --k 64 --n 24 --dtype bfloat16 --blas reference); rc=$?
expect_eq "numpy-matmul bfloat16" "$(tail -1 <<< "$out")" \
  "reason: dtype bfloat16: np.matmul presets exist for float32 and float64"
expect_rc "numpy-matmul bfloat16" "$rc" 1
out=$("${NM[@]}" --m 64 --k 64 --n 24 --dtype float32 --blas scipy-openblas --core Haswell --json); rc=$?
expect_rc "numpy-matmul --json none" "$rc" 1
want='{
  "m": 64,
  "k": 64,
  "n": 24,
  "dtype": "float32",
  "blas": {
    "name": "scipy-openblas",
    "core": "Haswell",
    "threads": 1
  },
  "preset": null,
  "reason": "OpenBLAS core '"'"'Haswell'"'"': presets exist for the SkylakeX kernels only"
}'
expect_eq "numpy-matmul --json" "$out" "$want"
# Bad input: exit 2, a message naming the problem, nothing on standard output.
for args in "--m -1 --k 4 --n 4 --dtype float32 --blas reference|must be >= 0" \
            "--m 4 --k 4 --n 4 --dtype floot32 --blas reference|--dtype 'floot32': not a format" \
            "--m 4 --k 4 --n 4 --dtype float32 --blas openblas --threads 0|threads 0: must be >= 1" \
            "--m x --k 4 --n 4 --dtype float32 --blas reference|--m" \
            "--m 4 --k 4 --n 4 --dtype float32|--blas is required"; do
  out=$("${NM[@]}" ${args%%|*} 2>"$TMP/err"); rc=$?
  expect_rc "numpy-matmul bad input ${args%%|*}" "$rc" 2
  expect_eq "numpy-matmul bad input ${args%%|*}: stdout" "$out" ""
  grep -qF -- "${args#*|}" "$TMP/err" || fail "numpy-matmul bad input ${args%%|*}: message: $(cat "$TMP/err")"
done
"${NM[@]}" --help | grep -q "1 none does" || fail "numpy-matmul --help: no exit statuses"

# ---- nonexistent input: exit 2, clear message ----
out=$("$BIN" calc --input "$TMP/does-not-exist.txt" 2>"$TMP/err"); rc=$?
expect_rc "calc missing file" "$rc" 2
grep -q "cannot open '.*does-not-exist.txt'" "$TMP/err" || fail "missing file message: $(cat "$TMP/err")"
expect_eq "calc missing file output" "$out" ""

# ---- binary garbage: no crash, one line per non-blank non-comment line ----
head -c 200000 /dev/urandom > "$TMP/garbage.bin" 2>/dev/null || fail "no /dev/urandom"
"$BIN" calc --input "$TMP/garbage.bin" > "$TMP/garbage.out" 2>/dev/null; rc=$?
[[ "$rc" == 0 || "$rc" == 1 ]] || fail "garbage: exit status $rc"

# ---- usage errors and help ----
"$BIN" > /dev/null 2>&1; expect_rc "no subcommand" "$?" 2
"$BIN" calc --bogus > /dev/null 2>&1; expect_rc "unknown option" "$?" 2
"$BIN" --help > "$TMP/help" 2>&1; expect_rc "--help" "$?" 0
grep -q "Examples:" "$TMP/help" || fail "--help has no examples"
"$BIN" calc --help > "$TMP/help" 2>&1; expect_rc "calc --help" "$?" 0
grep -q "sr<k>" "$TMP/help" || fail "calc --help does not describe sr<k>"
"$BIN" formats --help > /dev/null 2>&1; expect_rc "formats --help" "$?" 0
out=$("$BIN" --version); expect_rc "--version" "$?" 0
[[ "$out" =~ ^fpconform\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "--version printed '$out'"

# ---- formats ----
"$BIN" formats > "$TMP/formats" 2>&1; expect_rc "formats" "$?" 0
grep -Eq '^float8_e4m3fn +max_finite +0x7e +0b0\.1111\.110 +0x1\.cp\+8 +448$' "$TMP/formats" \
  || fail "formats: no 'float8_e4m3fn max_finite 0x7e ... 448' row"
grep -Eq '^float8_e5m2 +max_finite +0x7b +0b0\.11110\.11 +0x1\.cp\+15 +57344$' "$TMP/formats" \
  || fail "formats: no float8_e5m2 max 57344 row"
grep -Eq '^float8_e4m3fn +float +8 +4 +3 +7 ' "$TMP/formats" || fail "formats: e4m3fn parameters"
"$BIN" formats > "$TMP/formats2" 2>&1
cmp -s "$TMP/formats" "$TMP/formats2" || fail "formats output is not deterministic"

"$BIN" formats --values float8_e4m3fn > "$TMP/values" 2>&1; expect_rc "formats --values" "$?" 0
expect_eq "--values float8_e4m3fn line count" "$(wc -l < "$TMP/values" | tr -d ' ')" 256
grep -Eq '^0x7e +0b0\.1111\.110 +0x1\.cp\+8 +448 +positiveNormal$' "$TMP/values" \
  || fail "--values: no 448 line"
grep -Eq '^0x01 +0b0\.0000\.001 +0x1p-9 +0\.001953125 +positiveSubnormal$' "$TMP/values" \
  || fail "--values: no min subnormal line"
"$BIN" formats --values float32 > /dev/null 2>"$TMP/err"; expect_rc "--values float32" "$?" 2
grep -q "8-bit formats: float8_e4m3fn" "$TMP/err" || fail "--values float32 message: $(cat "$TMP/err")"
"$BIN" formats --values nope > /dev/null 2>"$TMP/err"; expect_rc "--values nope" "$?" 2
grep -q "unknown format 'nope' (valid: float64" "$TMP/err" || fail "--values nope message: $(cat "$TMP/err")"

# ---- reveal: a model's summation tree (MODEL_FORMAT.md chain rules), text and dot ----
out=$("$BIN" reveal cpu-f32-seq --n 3); rc=$?
expect_eq "reveal cpu-f32-seq text" "$out" '(((c + x0) + x1) + x2)'
expect_rc "reveal cpu-f32-seq" "$rc" 0
# H100 bf16: fused groups of 16 products; the second group holds x16, x17 and the accumulator.
out=$("$BIN" reveal nvidia-h100-bf16 --n 18)
expect_eq "reveal h100 text" "$out" \
  'fused[x16 x17 fused[x0 x1 x2 x3 x4 x5 x6 x7 x8 x9 x10 x11 x12 x13 x14 x15 c]]'
out=$("$BIN" reveal cpu-f32-seq --n 1 --format dot); rc=$?
expect_eq "reveal dot" "$out" $'digraph "cpu-f32-seq" {\n  node [fontname="monospace"];\n  n1 [label="c", shape=box];\n  n0 [label="x0", shape=box];\n  n2 [label="+", shape=ellipse];\n  n2 -> n1;\n  n2 -> n0;\n}'
expect_rc "reveal dot" "$rc" 0
out=$("$BIN" reveal nvidia-h100-bf16 --n 40 --probe); rc=$?
expect_rc "reveal --probe" "$rc" 0
grep -q '^match: yes$' <<<"$out" || fail "reveal --probe: no match line: $out"
grep -q '^fused group size: 16 ' <<<"$out" || fail "reveal --probe: group size: $out"
"$BIN" reveal no-such --n 3 > /dev/null 2>"$TMP/err"; expect_rc "reveal unknown model" "$?" 2
grep -q "unknown model 'no-such' in .*(valid: .*cpu-f32-seq" "$TMP/err" \
  || fail "reveal unknown model message: $(cat "$TMP/err")"
"$BIN" reveal cpu-f32-seq --n 3 --format svg > /dev/null 2>&1; expect_rc "reveal --format svg" "$?" 2
"$BIN" reveal --help > /dev/null 2>&1; expect_rc "reveal --help" "$?" 0
"$BIN" reveal cpu-f32-seq > /dev/null 2>&1; expect_rc "reveal without --n" "$?" 2

# ---- reveal from a device's outputs: probes, NumPy as the device, errors ----
"$BIN" reveal --make-probes --op sum --k 16 --dtype float32 --out "$TMP/probes" > /dev/null
expect_rc "reveal --make-probes" "$?" 0
[ -s "$TMP/probes/X.npy" ] && [ -s "$TMP/probes/manifest.json" ] || fail "make-probes: files missing"
"$BIN" reveal --make-probes --op sum --k 16 --dtype float32 --out "$TMP/probes" > /dev/null 2>"$TMP/err"
expect_rc "reveal --make-probes existing --out" "$?" 2
grep -q "exists" "$TMP/err" || fail "make-probes existing --out message: $(cat "$TMP/err")"
"$BIN" reveal --make-probes --dtype float16 --out "$TMP/p16" > /dev/null 2>&1
expect_rc "reveal --make-probes float16" "$?" 2
"$BIN" reveal --from "$TMP/probes" --outputs "$TMP/probes/X.npy" > /dev/null 2>"$TMP/err"
expect_rc "reveal --from wrong shape" "$?" 2
grep -q "shape \[247, 16\], expected \[247\]" "$TMP/err" || fail "wrong shape message: $(cat "$TMP/err")"
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  /usr/bin/python3 -c "import numpy as np; np.save('$TMP/out.npy', np.load('$TMP/probes/X.npy').sum(axis=-1))"
  out=$("$BIN" reveal --from "$TMP/probes" --outputs "$TMP/out.npy"); rc=$?
  expect_rc "reveal --from numpy" "$rc" 0
  grep -q '^presets with this tree and behaviour: numpy-sum-f32$' <<<"$out" \
    || fail "reveal --from numpy: $out"
  out=$("$BIN" reveal --from "$TMP/probes" --outputs "$TMP/out.npy" --format toml)
  grep -q 'equals the revealed tree: yes' <<<"$out" || fail "reveal --format toml: $out"
fi

# ---- tolerance / merge: a tiny sweep, shards merged back byte for byte, atomic output ----
tiny=(--quick --dtypes bfloat16,float8_e4m3fn --platforms nvidia-h100-bf16,trainium2-bf16 --k 64
      --samples 6 --no-html --progress never)
"$BIN" tolerance "${tiny[@]}" --threads 1 --out "$TMP/full" 2>"$TMP/err"
expect_rc "tolerance" "$?" 0
for f in report.md report.csv report.json cross_platform.csv power.csv quantize.csv rubric.csv \
         defaults.csv; do
  [ -s "$TMP/full/$f" ] || fail "tolerance: $f missing or empty"
done
grep -q '^## matmul: recommended tolerances' "$TMP/full/report.md" || fail "report.md: no matmul table"
"$BIN" tolerance "${tiny[@]}" --threads 2 --shard 1/2 --out "$TMP/s1" 2>/dev/null
expect_rc "tolerance --shard 1/2" "$?" 0
"$BIN" tolerance "${tiny[@]}" --threads 2 --shard 2/2 --out "$TMP/s2" 2>/dev/null
"$BIN" merge "$TMP/s2" "$TMP/s1" --out "$TMP/merged" --no-html 2>/dev/null
expect_rc "merge" "$?" 0
for f in report.csv report.json power.csv cross_platform.csv rubric.csv; do
  cmp -s "$TMP/full/$f" "$TMP/merged/$f" || fail "merge: $f differs from the single run"
done
"$BIN" merge "$TMP/s1" --out "$TMP/bad" --no-html 2>"$TMP/err"; expect_rc "merge missing shard" "$?" 2
grep -q "shard 2/2 missing" "$TMP/err" || fail "merge missing shard message: $(cat "$TMP/err")"
[ -e "$TMP/bad" ] && fail "merge: a failed merge left $TMP/bad"
"$BIN" tolerance --platforms nope --out "$TMP/x" 2>"$TMP/err"; expect_rc "tolerance unknown platform" "$?" 2
grep -q "unknown platform 'nope' (valid: " "$TMP/err" || fail "unknown platform message: $(cat "$TMP/err")"
"$BIN" tolerance --shard 3/2 --out "$TMP/x" 2>/dev/null; expect_rc "tolerance --shard 3/2" "$?" 2

# ---- --shard auto: the shard from a Slurm job array or a Kubernetes Indexed Job ----
# Each case runs with the job-array variables of the test's own environment removed first.
clean=(env -u SLURM_ARRAY_TASK_ID -u SLURM_ARRAY_TASK_MIN -u SLURM_ARRAY_TASK_MAX
       -u SLURM_ARRAY_TASK_STEP -u SLURM_ARRAY_TASK_COUNT -u JOB_COMPLETION_INDEX
       -u FPCONFORM_SHARD_COUNT)
# sbatch --array=1-2, task 1 = shard 1/2: the same report as --shard 1/2.
"${clean[@]}" SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=2 \
  SLURM_ARRAY_TASK_COUNT=2 SLURM_ARRAY_TASK_STEP=1 \
  "$BIN" tolerance "${tiny[@]}" --threads 2 --shard auto --out "$TMP/auto1" 2>"$TMP/err"
expect_rc "tolerance --shard auto (Slurm)" "$?" 0
grep -q "shard 1/2 from SLURM_ARRAY_TASK_ID=1 (MIN 1, STEP 1, COUNT 2)" "$TMP/err" \
  || fail "--shard auto (Slurm) log line: $(cat "$TMP/err")"
cmp -s "$TMP/s1/report.json" "$TMP/auto1/report.json" || fail "--shard auto (Slurm) differs from 1/2"
# An Indexed Job with completions: 2, pod index 1 = shard 2/2.
"${clean[@]}" JOB_COMPLETION_INDEX=1 FPCONFORM_SHARD_COUNT=2 \
  "$BIN" tolerance "${tiny[@]}" --threads 2 --shard auto --out "$TMP/auto2" 2>"$TMP/err"
expect_rc "tolerance --shard auto (Kubernetes)" "$?" 0
cmp -s "$TMP/s2/report.json" "$TMP/auto2/report.json" || fail "--shard auto (Kubernetes) differs from 2/2"
"$BIN" merge "$TMP/auto2" "$TMP/auto1" --out "$TMP/auto" --no-html 2>/dev/null
expect_rc "merge of --shard auto reports" "$?" 0
cmp -s "$TMP/full/report.csv" "$TMP/auto/report.csv" || fail "merged --shard auto differs from the single run"
shard_auto_error() {  # name, message fragment, env assignments...
  local name=$1 want=$2; shift 2
  "${clean[@]}" "$@" "$BIN" tolerance --shard auto --out "$TMP/never" 2>"$TMP/err"
  expect_rc "--shard auto: $name" "$?" 2
  grep -qF -- "$want" "$TMP/err" || fail "--shard auto: $name message: $(cat "$TMP/err")"
  [ -e "$TMP/never" ] && fail "--shard auto: $name made $TMP/never"
}
shard_auto_error "no engine" "--shard: auto: no job-array index in the environment: expected SLURM_ARRAY_TASK_ID"
shard_auto_error "no count" "FPCONFORM_SHARD_COUNT is not" JOB_COMPLETION_INDEX=0
shard_auto_error "index >= count" "JOB_COMPLETION_INDEX 2 is not below FPCONFORM_SHARD_COUNT 2" \
  JOB_COMPLETION_INDEX=2 FPCONFORM_SHARD_COUNT=2
shard_auto_error "bad count" "FPCONFORM_SHARD_COUNT='2x' is not a shard count" \
  JOB_COMPLETION_INDEX=0 FPCONFORM_SHARD_COUNT=2x
shard_auto_error "both engines" "both SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX" \
  JOB_COMPLETION_INDEX=0 FPCONFORM_SHARD_COUNT=2 SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_MIN=0 \
  SLURM_ARRAY_TASK_COUNT=1
shard_auto_error "Slurm without MIN" "SLURM_ARRAY_TASK_MIN or SLURM_ARRAY_TASK_COUNT is not" \
  SLURM_ARRAY_TASK_ID=3
shard_auto_error "Slurm list" "the Slurm array is not one range (MIN 1, MAX 9, STEP 1, COUNT 3)" \
  SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=9 SLURM_ARRAY_TASK_COUNT=3
shard_auto_error "Slurm bad id" "SLURM_ARRAY_TASK_ID='-1' is not an array index" \
  SLURM_ARRAY_TASK_ID=-1 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_COUNT=2
# --array=1-7:2 (1, 3, 5, 7): task 5 is shard 3/4.
"${clean[@]}" SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=7 \
  SLURM_ARRAY_TASK_STEP=2 SLURM_ARRAY_TASK_COUNT=4 \
  "$BIN" tolerance --platforms nope --shard auto --out "$TMP/never" 2>"$TMP/err"
grep -q "shard 3/4 from SLURM_ARRAY_TASK_ID=5" "$TMP/err" || fail "--shard auto step 2: $(cat "$TMP/err")"

# ---- --out: only a new path, an empty directory or an fpconform report directory is replaced ----
grep -q '"kind": "tolerance"' "$TMP/full/fpconform-manifest.json" || fail "tolerance: no manifest"
grep -q '"report.csv"' "$TMP/full/fpconform-manifest.json" || fail "manifest does not list report.csv"
cp "$TMP/full/report.json" "$TMP/full.json"
"$BIN" tolerance "${tiny[@]}" --threads 1 --out "$TMP/full" 2>"$TMP/err"
expect_rc "tolerance over its own report" "$?" 0
cmp -s "$TMP/full/report.json" "$TMP/full.json" || fail "rewritten report differs"
mkdir "$TMP/empty"
"$BIN" tolerance "${tiny[@]}" --out "$TMP/empty" 2>/dev/null; expect_rc "tolerance into an empty dir" "$?" 0
[ -s "$TMP/empty/report.json" ] || fail "tolerance into an empty dir: no report.json"
# Each refusal comes before the sweep (the standard sweep would take minutes: timeout, 124) and
# leaves the path as it was.
echo "my notes" > "$TMP/notes.txt"
mkdir -p "$TMP/project/src"; echo "int main() {}" > "$TMP/project/src/main.cc"
ln -s "$TMP/project" "$TMP/link"
ln -s "$TMP/nowhere" "$TMP/dangling"
mkfifo "$TMP/fifo"
echo "mine" > "$TMP/full/NOTES.md"
refuse() {  # name, path, message regex
  timeout 60 "$BIN" tolerance --progress never --out "$2" 2>"$TMP/err"
  expect_rc "tolerance --out $1" "$?" 2
  grep -Eq -- "^fpconform tolerance: --out: .*$3" "$TMP/err" || fail "--out $1 message: $(cat "$TMP/err")"
}
refuse "a regular file" "$TMP/notes.txt" "notes.txt: exists and is a regular file, not an fpconform report directory; refusing to replace it"
refuse "an unrelated directory" "$TMP/project" "project: exists and is not an fpconform report directory \\(it has no fpconform-manifest.json\\)"
refuse "a symlink" "$TMP/link" "link: exists and is a symbolic link, not an fpconform"
refuse "a dangling symlink" "$TMP/dangling" "dangling: exists and is a symbolic link \\(dangling\\)"
refuse "a FIFO" "$TMP/fifo" "fifo: exists and is a FIFO"
refuse "a report with user files" "$TMP/full" "full: holds files that are not part of the report: NOTES.md"
refuse "under a file" "$TMP/notes.txt/sub" "sub: cannot be used: Not a directory"
mkdir "$TMP/cwd"
(cd "$TMP/cwd" && timeout 60 "$BIN" tolerance --progress never --out '' 2>"$TMP/err")
expect_rc "tolerance --out ''" "$?" 2
grep -q "^fpconform tolerance: --out: the output directory path is empty$" "$TMP/err" \
  || fail "--out '' message: $(cat "$TMP/err")"
expect_eq "--out '' left nothing" "$(ls -A "$TMP/cwd")" ""
timeout 60 "$BIN" merge "$TMP/s1" "$TMP/s2" --out "$TMP/notes.txt" 2>"$TMP/err"
expect_rc "merge --out a regular file" "$?" 2
grep -q "^fpconform merge: --out: .*notes.txt: exists and is a regular file" "$TMP/err" \
  || fail "merge --out file message: $(cat "$TMP/err")"
expect_eq "notes.txt kept" "$(cat "$TMP/notes.txt")" "my notes"
expect_eq "project kept" "$(cat "$TMP/project/src/main.cc")" "int main() {}"
[[ -L "$TMP/link" && "$(readlink "$TMP/link")" == "$TMP/project" ]] || fail "symlink changed"
[[ -L "$TMP/dangling" && ! -e "$TMP/nowhere" ]] || fail "dangling symlink changed"
[ -p "$TMP/fifo" ] || fail "FIFO replaced"
expect_eq "user file in a report kept" "$(cat "$TMP/full/NOTES.md")" "mine"
cmp -s "$TMP/full/report.json" "$TMP/full.json" || fail "refused report changed"
rm "$TMP/full/NOTES.md"
expect_eq "no staging directories after refusals" \
  "$(cd "$TMP" && ls -d ./*.partial-* ./*.old-* 2>/dev/null)" ""

# ---- --shard 1/1 can be merged; merge checks each shard's tables against the sweep's ----
"$BIN" tolerance "${tiny[@]}" --threads 1 --shard 1/1 --out "$TMP/one" 2>/dev/null
expect_rc "tolerance --shard 1/1" "$?" 0
"$BIN" merge "$TMP/one" --out "$TMP/one-merged" --no-html 2>"$TMP/err"
expect_rc "merge of a 1/1 shard" "$?" 0
for f in report.csv report.json power.csv cross_platform.csv rubric.csv; do
  cmp -s "$TMP/full/$f" "$TMP/one-merged/$f" || fail "merge 1/1: $f differs from the single run"
done
# k's type changed from int to float (the cells, JSON integers, still read as floats).
mkdir "$TMP/typed"
sed '0,/{"name": "k", "type": "int"/s//{"name": "k", "type": "float"/' "$TMP/one/report.json" \
  > "$TMP/typed/report.json"
"$BIN" merge "$TMP/typed" --out "$TMP/m-typed" --no-html 2>"$TMP/err"
expect_rc "merge: a column of another type" "$?" 2
grep -q "typed/report.json: table 'tolerance': column 'k' is a float column, the sweep writes int$" \
  "$TMP/err" || fail "merge type message: $(cat "$TMP/err")"
[ -e "$TMP/m-typed" ] && fail "merge with a bad shard wrote $TMP/m-typed"
if command -v python3 > /dev/null; then
  # bn_max (read by the summaries) removed from the columns and from every row.
  mkdir "$TMP/cut"
  python3 - "$TMP/one/report.json" "$TMP/cut/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = next(t for t in r["tables"] if t["name"] == "tolerance")
i = [c["name"] for c in t["columns"]].index("bn_max")
del t["columns"][i]
for row in t["rows"]:
  del row[i]
json.dump(r, open(sys.argv[2], "w"))
PY
  "$BIN" merge "$TMP/cut" --out "$TMP/m-cut" --no-html 2>"$TMP/err"
  expect_rc "merge: a column missing" "$?" 2
  grep -q "cut/report.json: table 'tolerance': column 'bn_max' missing$" "$TMP/err" \
    || fail "merge missing column message: $(cat "$TMP/err")"
  [ -e "$TMP/m-cut" ] && fail "merge with a bad shard wrote $TMP/m-cut"
else
  echo "note: python3 not found: the merge missing-column check was not run"
fi

# ---- interrupts: exit 128 + signal, the old report intact, no staging directory, child gone ----
tiny_html=(--quick --dtypes float32 --k 64 --samples 2 --progress never --threads 1)
printf '#!/bin/sh\necho $$ > "%s"\nexec sleep 60\n' "$TMP/slowpy.pid" > "$TMP/slowpy"
chmod +x "$TMP/slowpy"
interrupt_render() {  # signal, wanted exit status
  rm -f "$TMP/slowpy.pid"
  set -m  # Job control: the background run does not start with SIGINT ignored.
  FPCONFORM_PYTHON="$TMP/slowpy" "$BIN" tolerance "${tiny_html[@]}" --out "$TMP/full" 2>"$TMP/err" &
  local pid=$! i
  set +m
  for ((i = 0; i < 400; ++i)); do [ -s "$TMP/slowpy.pid" ] && break; sleep 0.05; done
  [ -s "$TMP/slowpy.pid" ] || fail "SIG$1: the renderer never started"
  kill "-$1" "$pid"
  wait "$pid"; expect_rc "SIG$1 while rendering report.html" "$?" "$2"
  grep -q "interrupted (SIG$1); .*full was left as it was" "$TMP/err" \
    || fail "SIG$1 message: $(cat "$TMP/err")"
  cmp -s "$TMP/full/report.json" "$TMP/full.json" || fail "SIG$1: the old report changed"
  [ -e "$TMP/full/report.html" ] && fail "SIG$1: the new report.html was installed"
  kill -0 "$(cat "$TMP/slowpy.pid")" 2>/dev/null && fail "SIG$1: the renderer is still running"
  expect_eq "SIG$1: no staging directory" "$(cd "$TMP" && ls -d ./*.partial-* ./*.old-* 2>/dev/null)" ""
}
interrupt_render INT 130
interrupt_render TERM 143
interrupt_sweep() {  # signal, wanted exit status: the standard sweep (minutes) stops at once
  set -m
  "$BIN" tolerance --progress never --out "$TMP/never" 2>"$TMP/err" &
  local pid=$! i
  set +m
  sleep 1
  kill "-$1" "$pid"
  for ((i = 0; i < 300; ++i)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$pid" 2>/dev/null; then
    fail "SIG$1 did not stop the sweep within 15 s"; kill -KILL "$pid"
  fi
  wait "$pid"; expect_rc "SIG$1 during the sweep" "$?" "$2"
  [ -e "$TMP/never" ] && fail "SIG$1 during the sweep: $TMP/never was made"
  expect_eq "SIG$1 during the sweep: no staging" "$(cd "$TMP" && ls -d ./*.partial-* 2>/dev/null)" ""
}
interrupt_sweep INT 130
interrupt_sweep TERM 143

# merge reads report.json only from regular files: a FIFO shard is refused at once, not read
# (it used to block forever).
mkdir -p "$TMP/fifo_shard" && mkfifo "$TMP/fifo_shard/report.json"
timeout 10 "$BIN" merge "$TMP/fifo_shard" --out "$TMP/fifo_merged" >/dev/null 2>"$TMP/fifo.err"
expect_rc "merge of a FIFO report.json" "$?" 2
grep -q "not a regular file" "$TMP/fifo.err" || fail "merge of a FIFO: $(cat "$TMP/fifo.err")"

# ---- hardening: numbers parsed strictly (never wrapped or saturated), ranges in the message ----
for args in "--shard 4294967297/4294967298" "--shard 1/4294967297" "--shard 1/2/3" "--shard +1/2" \
            "--shard 1/0" "--shard 0/2"; do
  # shellcheck disable=SC2086
  "$BIN" tolerance $args --out "$TMP/x" --no-html --progress never 2>"$TMP/err"
  expect_rc "tolerance $args" "$?" 2
  grep -q -- "--shard: expected i/n with 1 <= i <= n <= 1000000" "$TMP/err" \
    || fail "tolerance $args message: $(cat "$TMP/err")"
done
"$BIN" tolerance --seed 18446744073709551616 --out "$TMP/x" 2>"$TMP/err"
expect_rc "tolerance --seed 2^64" "$?" 2
grep -q -- "--seed: '18446744073709551616' is not an integer in 0..18446744073709551615" "$TMP/err" \
  || fail "tolerance --seed 2^64 message: $(cat "$TMP/err")"
for args in "--seed=-1" "--samples=1e3" "--samples= 5" "--threads=0x10" "--threads=2 " \
            "--samples=1000001"; do
  "$BIN" tolerance "$args" --out "$TMP/x" 2>"$TMP/err"; expect_rc "tolerance $args" "$?" 2
  grep -q "is not an integer in " "$TMP/err" || fail "tolerance $args message: $(cat "$TMP/err")"
done
for k in " 64" "64 " "+64" "0x40" "16777217"; do
  "$BIN" tolerance --k "$k" --out "$TMP/x" 2>"$TMP/err"; expect_rc "tolerance --k '$k'" "$?" 2
  grep -q -- "--k: '$k' is not an integer in 1..16777216" "$TMP/err" \
    || fail "tolerance --k '$k' message: $(cat "$TMP/err")"
done
"$BIN" tolerance --k 64,64 --out "$TMP/x" 2>"$TMP/err"; expect_rc "tolerance --k 64,64" "$?" 2
grep -q "K 64 given twice" "$TMP/err" || fail "tolerance --k 64,64 message: $(cat "$TMP/err")"
"$BIN" reveal cpu-f32-seq --n 3 --seed=-1 > /dev/null 2>"$TMP/err"; expect_rc "reveal --seed -1" "$?" 2
grep -q -- "--seed: '-1' is not an integer in 0..18446744073709551615" "$TMP/err" \
  || fail "reveal --seed -1 message: $(cat "$TMP/err")"
"$BIN" reveal cpu-f32-seq --n ' 3' > /dev/null 2>&1; expect_rc "reveal --n ' 3'" "$?" 2
out=$("$BIN" reveal cpu-f32-seq --n 2 --seed 18446744073709551615); expect_rc "reveal --seed max" "$?" 0
expect_eq "reveal --seed max" "$out" "((c + x0) + x1)"
[ -e "$TMP/x" ] && fail "a refused tolerance run wrote $TMP/x"

# ---- hardening: memory is estimated before any work; the budget and the reason are named ----
"$BIN" tolerance --k 16777216 --threads 16 --out "$TMP/x" --no-html --progress never 2>"$TMP/err"
expect_rc "tolerance --k 16777216 --threads 16" "$?" 2
grep -q "needs about [0-9]* MiB of memory (2048 MiB per worker thread at K = 16777216, 16 threads), more than the 8192 MiB a sweep may use" "$TMP/err" \
  || fail "tolerance memory message: $(cat "$TMP/err")"

# ---- hardening: sweep files ----
printf '%s\n' 'seed = 1' 'samples = 4' 'ops = ["sum"]' 'ks = [16]' 'distributions = ["normal"]' '' \
  '[[dtype]]' 'name = "int8"' 'integer = true' 'sum = ["cpu-f32-seq"]' > "$TMP/int_sum.toml"
"$BIN" tolerance --sweep "$TMP/int_sum.toml" --out "$TMP/x" --progress never 2>"$TMP/err"
expect_rc "tolerance: integer dtype with sum platforms" "$?" 2
grep -q "int_sum.toml:10: dtype\[0\].sum: an integer dtype (integer = true) takes no platform list" "$TMP/err" \
  || fail "integer dtype sum message: $(cat "$TMP/err")"
sed 's/^sum = .*/matmul = ["nvidia-h100-bf16", "numpy-sum-f32"]/; s/^integer = true$//; s/^name = "int8"/name = "bfloat16"/; s/^ops = .*/ops = ["matmul"]/' \
  "$TMP/int_sum.toml" > "$TMP/sum_only.toml"
"$BIN" tolerance --sweep "$TMP/sum_only.toml" --out "$TMP/x" --progress never 2>"$TMP/err"
expect_rc "tolerance: sum-only model under matmul" "$?" 2
grep -q "sum_only.toml:10: dtype\[0\].matmul: 'numpy-sum-f32': does not define matmul" "$TMP/err" \
  || fail "sum-only model message: $(cat "$TMP/err")"
sed 's/"numpy-sum-f32"/"no-such-model"/' "$TMP/sum_only.toml" > "$TMP/unknown.toml"
"$BIN" tolerance --sweep "$TMP/unknown.toml" --out "$TMP/x" --progress never 2>"$TMP/err"
expect_rc "tolerance: unknown platform in a sweep file" "$?" 2
grep -q "unknown.toml:10: dtype\[0\].matmul: 'no-such-model': unknown model 'no-such-model' in " "$TMP/err" \
  || fail "unknown platform message: $(cat "$TMP/err")"
mkdir "$TMP/sweepdir.toml"
timeout 20 "$BIN" tolerance --sweep "$TMP/sweepdir.toml" --out "$TMP/x" 2>"$TMP/err"
expect_rc "tolerance --sweep DIR" "$?" 2
grep -q "sweepdir.toml: not a regular file (a directory)" "$TMP/err" || fail "sweep dir message: $(cat "$TMP/err")"
mkfifo "$TMP/sweep.fifo"
timeout 20 "$BIN" tolerance --sweep "$TMP/sweep.fifo" --out "$TMP/x" 2>"$TMP/err"
expect_rc "tolerance --sweep FIFO (no hang)" "$?" 2
[ -e "$TMP/x" ] && fail "a refused tolerance run wrote $TMP/x"

# ---- hardening: model directories with a directory, a FIFO, /dev/zero; escaped descriptions ----
mkdir "$TMP/m2"
cp "$(dirname "$0")/../accumulation/models/cpu-f32-seq.toml" "$TMP/m2/"
mkdir "$TMP/m2/adir.toml"
mkfifo "$TMP/m2/fifo.toml"
ln -s /dev/zero "$TMP/m2/zero.toml"
timeout 20 "$BIN" models --models-dir "$TMP/m2" > "$TMP/out" 2>"$TMP/err"
expect_rc "models with non-regular entries" "$?" 2
expect_eq "models with non-regular entries: listing" "$(cut -d' ' -f1 "$TMP/out")" "cpu-f32-seq"
for f in adir fifo zero; do
  grep -q "m2/$f.toml: not a regular file" "$TMP/err" || fail "models: no error for $f.toml: $(cat "$TMP/err")"
done
grep -q "3 of 4 model files in " "$TMP/err" || fail "models bad count: $(cat "$TMP/err")"
for f in adir fifo zero; do
  timeout 20 "$BIN" models show "$f" --models-dir "$TMP/m2" > /dev/null 2>"$TMP/err"
  expect_rc "models show $f" "$?" 2
  grep -q "not a regular file" "$TMP/err" || fail "models show $f message: $(cat "$TMP/err")"
done
printf '%s\n' 'seed = 1' 'samples = 4' 'ops = ["matmul"]' 'ks = [16]' 'distributions = ["normal"]' \
  '' '[[dtype]]' 'name = "float32"' 'matmul = ["cpu-f32-seq", "zero"]' > "$TMP/zero_sweep.toml"
timeout 20 "$BIN" tolerance --sweep "$TMP/zero_sweep.toml" --models-dir "$TMP/m2" --out "$TMP/x" \
  --progress never 2>"$TMP/err"
expect_rc "tolerance with a /dev/zero model" "$?" 2
grep -q "zero_sweep.toml:9: dtype\[0\].matmul: 'zero': .*zero.toml: not a regular file" "$TMP/err" \
  || fail "tolerance /dev/zero model message: $(cat "$TMP/err")"
rm -f "$TMP/m2/fifo.toml" "$TMP/m2/zero.toml"
rmdir "$TMP/m2/adir.toml"
sed 's/^description = .*/description = "red \\u001b[31mX\\u0007 \\u00e9"/' \
  "$(dirname "$0")/../accumulation/models/cpu-f32-seq.toml" > "$TMP/m2/cpu-f32-seq.toml"
"$BIN" models --models-dir "$TMP/m2" > "$TMP/out" 2>&1; expect_rc "models: escaped description" "$?" 0
expect_eq "models: escaped description" "$(cat "$TMP/out")" 'cpu-f32-seq  red \x1b[31mX\x07 é'
"$BIN" models show cpu-f32-seq --models-dir "$TMP/m2" > "$TMP/out" 2>&1
grep -q '^description: red \\x1b\[31mX\\x07 é$' "$TMP/out" \
  || fail "models show: description not escaped: $(cat -v "$TMP/out")"

# ---- hardening: calc echoes user text escaped; VT/FF/CR inside a line are errors ----
printf 'mdot a\x1b[2J\xff\x00b 0 0x0\nadd\vfloat32 rne 0x3f800000 0x3f800000\n' \
  | "$BIN" calc > "$TMP/out" 2>"$TMP/err"
expect_rc "calc escaped model name" "$?" 1
expect_eq "calc escaped output" "$(cat "$TMP/out")" $'error\nerror'
grep -q "^line 1: bad model name 'a\\\\x1b\[2J\\\\xff\\\\x00b'" "$TMP/err" \
  || fail "calc model name not escaped: $(cat -v "$TMP/err")"
grep -q "^line 2: control character '\\\\x0b' (VT) at column 4" "$TMP/err" \
  || fail "calc VT message: $(cat -v "$TMP/err")"
LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f\xff]' "$TMP/err" \
  && fail "calc stderr has raw control bytes: $(cat -v "$TMP/err")"

if (( FAILS > 0 )); then
  echo "$FAILS check(s) failed"
  exit 1
fi
echo "cli_test: all checks passed"
