#!/usr/bin/env bash
# End-to-end tests of `fpconform audit` / `compare` on files written by the real NumPy
# (Debian's python3-numpy at /usr/bin/python3): np.sum outputs audited against numpy-sum-f32,
# the same bfloat16 data in every file encoding giving the same verdict, mutations, errors, exit
# codes, and the report directory rules. Everything is written under a fresh temporary directory.
#   audit_cli_test.sh path/to/fpconform
set -uo pipefail
fp=$1
py=/usr/bin/python3
if ! "$py" -c 'import numpy' 2>/dev/null; then
  echo "SKIP: $py has no numpy (install python3-numpy)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_rc() {  # expected-rc description command...
  local want=$1 what=$2; shift 2
  "$@" >"$tmp/stdout" 2>"$tmp/stderr"
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    fail "$what: exit $rc, expected $want"; sed 's/^/  | /' "$tmp/stdout" "$tmp/stderr" | head -20
  fi
}
json_get() { "$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }

# ---- Inputs, written by NumPy ----
"$py" - "$tmp" <<'EOF'
import json, struct, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(2026)
# np.sum along the last axis: numpy's own pairwise order.
x = rng.standard_normal((8, 5000)).astype(np.float32)
np.save(f"{d}/x.npy", x)
np.save(f"{d}/y.npy", np.sum(x, axis=-1))
np.save(f"{d}/y_fortran.npy", np.asfortranarray(np.sum(x.reshape(8, 1, 5000), axis=-1)))
y = np.sum(x, axis=-1)
y[3] = -y[3]
np.save(f"{d}/y_bad.npy", y)
# bfloat16 operands as their bits (RNE from float32), in several encodings.
def bf16_bits(a):
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
a = bf16_bits(rng.standard_normal((32, 256)))
b = bf16_bits(rng.standard_normal((256, 24)))
for name, t in (("a", a), ("b", b)):
    np.save(f"{d}/{name}_u16.npy", t)                 # '<u2': bits saved as a uint16 view
    np.save(f"{d}/{name}_v2.npy", t.view("V2"))       # '|V2': what np.save writes for bfloat16
    t.tofile(f"{d}/{name}.bin")                       # raw
    t.T.copy().tofile(f"{d}/{name}_t.bin")            # transposed, raw
# safetensors by hand (8-byte little-endian header length, JSON, data).
hdr = {"__metadata__": {"source": "audit_cli_test"},
       "a": {"dtype": "BF16", "shape": list(a.shape), "data_offsets": [0, a.nbytes]},
       "b": {"dtype": "BF16", "shape": list(b.shape), "data_offsets": [a.nbytes, a.nbytes + b.nbytes]}}
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
with open(f"{d}/ab.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + a.tobytes() + b.tobytes())
EOF
[ -f "$tmp/x.npy" ] || { echo "FAIL: the NumPy input generator did not run"; exit 1; }

# ---- np.sum against numpy-sum-f32: bit-identical ----
expect_rc 0 "np.sum audit" "$fp" audit sum --x "$tmp/x.npy" --axis -1 --out "$tmp/y.npy" \
  --platform numpy-sum-f32 --json "$tmp/sum.json" --progress never
[ "$(json_get "$tmp/sum.json" 'd["counts"]["identical"]')" = 8 ] || fail "np.sum: not 8 identical elements"
# The data lookup (base/data_dir.h): FPCONFORM_SWEEP_FILE names the tolerance rule's sweep file (a
# missing one leaves the platform without a recommendation, in a note); --sweep beats it.
expect_rc 0 "FPCONFORM_SWEEP_FILE names a missing file" env FPCONFORM_SWEEP_FILE="$tmp/no_sweep.toml" \
  "$fp" audit sum --x "$tmp/x.npy" --axis -1 --out "$tmp/y.npy" --platform numpy-sum-f32 --progress never
grep -q "no tolerance recommendation for numpy-sum-f32: $tmp/no_sweep.toml: cannot open" "$tmp/stdout" ||
  fail "FPCONFORM_SWEEP_FILE: the audit does not read the file it names"
expect_rc 0 "--sweep beats FPCONFORM_SWEEP_FILE" env FPCONFORM_SWEEP_FILE="$tmp/no_sweep.toml" \
  "$fp" audit sum --x "$tmp/x.npy" --axis -1 --out "$tmp/y.npy" --platform numpy-sum-f32 --progress never \
  --sweep "$(dirname "$0")/../reports/standard_sweep.toml"
! grep -q "no_sweep.toml\|no tolerance recommendation" "$tmp/stdout" || fail "--sweep does not beat FPCONFORM_SWEEP_FILE"
expect_rc 0 "np.sum audit, keepdims output in Fortran order" "$fp" audit sum --x "$tmp/x.npy" \
  --axis 1 --out "$tmp/y_fortran.npy" --platform numpy-sum-f32 --no-tolerance --progress never
expect_rc 1 "np.sum with one element negated" "$fp" audit sum --x "$tmp/x.npy" --axis -1 \
  --out "$tmp/y_bad.npy" --platform numpy-sum-f32 --json "$tmp/bad.json" --progress never
grep -q "Tensor-likes are not close!" "$tmp/stdout" || fail "no torch-shaped headline on failure"
grep -q "Mismatched elements: 1 / 8 (12.5%)" "$tmp/stdout" || fail "mismatch line"
[ "$(json_get "$tmp/bad.json" 'd["elements"][0]["index"]')" = "[3]" ] || fail "wrong index listed"
json_get "$tmp/bad.json" 'd["elements"][0]["diagnosis"]' | grep -q "sign flipped" || fail "diagnosis"

# ---- The same bfloat16 data in every encoding: the same verdict and counts ----
"$fp" audit matmul --a "$tmp/a_u16.npy" --a-dtype bfloat16 --b "$tmp/b_u16.npy" --b-dtype bfloat16 \
  --out "$tmp/a_u16.npy" --out-dtype bfloat16 --platform trainium2-bf16 >/dev/null 2>"$tmp/err"
grep -q "shape" "$tmp/err" || fail "a shape mismatch is not reported"
# Make an output: the exact product rounded by the model itself is not needed; use the reference
# run's emulated values via an audit of a zero output, then write them back with NumPy.
"$py" - "$tmp" <<'EOF'
import sys
import numpy as np
d = sys.argv[1]
np.save(f"{d}/zero.npy", np.zeros((32, 24), np.float32))
EOF
expect_rc 1 "zero output" "$fp" audit matmul --a "$tmp/a_u16.npy" --a-dtype bfloat16 \
  --b "$tmp/b_u16.npy" --b-dtype bfloat16 --out "$tmp/zero.npy" --platform trainium2-bf16 \
  --max-listed 1000 --json "$tmp/zero.json" --no-tolerance --progress never
"$py" - "$tmp" <<'EOF'
import json, sys
import numpy as np
d = sys.argv[1]
j = json.load(open(f"{d}/zero.json"))
out = np.zeros((32, 24), np.uint32)
for e in j["elements"]:
    out[tuple(e["index"])] = int(e["emulated_bits"], 16)
np.save(f"{d}/c.npy", out.view(np.float32))
out.view(np.float32).tofile(f"{d}/c.bin")
EOF
run_enc() {  # label, then the a/b options
  local label=$1; shift
  expect_rc 0 "encoding $label" "$fp" audit matmul "$@" --out "$tmp/c.npy" --platform trainium2-bf16 \
    --json "$tmp/enc_$label.json" --no-tolerance --progress never
  json_get "$tmp/enc_$label.json" '(d["verdict"], d["counts"], d["platforms"][0]["identical"])' >"$tmp/enc_$label.txt"
}
run_enc u16 --a "$tmp/a_u16.npy" --a-dtype bfloat16 --b "$tmp/b_u16.npy" --b-dtype bfloat16
run_enc v2 --a "$tmp/a_v2.npy" --a-dtype bfloat16 --b "$tmp/b_v2.npy" --b-dtype bfloat16
run_enc raw --a "$tmp/a.bin" --a-dtype bfloat16 --a-shape 32,256 --b "$tmp/b.bin" --b-dtype bfloat16 --b-shape 256,24
run_enc st --a "$tmp/ab.safetensors:a" --b "$tmp/ab.safetensors:b"
run_enc transposed --a "$tmp/a_t.bin" --a-dtype bfloat16 --a-shape 256,32 --transpose-a \
  --b "$tmp/b_t.bin" --b-dtype bfloat16 --b-shape 24,256 --transpose-b
for e in v2 raw st transposed; do
  cmp -s "$tmp/enc_u16.txt" "$tmp/enc_$e.txt" || fail "encoding $e gives $(cat "$tmp/enc_$e.txt"), u16 gives $(cat "$tmp/enc_u16.txt")"
done
grep -q "768" "$tmp/enc_u16.txt" || fail "the model's own output is not identical on all 768 elements: $(cat "$tmp/enc_u16.txt")"

# ---- Errors: exit 2 with a message that names the problem ----
expect_rc 2 "a V2 file without --a-dtype" "$fp" audit matmul --a "$tmp/a_v2.npy" --b "$tmp/b_u16.npy" \
  --b-dtype bfloat16 --out "$tmp/c.npy" --platform trainium2-bf16
grep -q "a_v2.npy" "$tmp/stderr" || fail "the V2 error does not name the file"
expect_rc 2 "unknown platform" "$fp" audit matmul --a "$tmp/ab.safetensors:a" --b "$tmp/ab.safetensors:b" \
  --out "$tmp/c.npy" --platform no-such-model
grep -q "no-such-model" "$tmp/stderr" || fail "unknown platform not named"
expect_rc 2 "float32 inputs for a bf16 platform" "$fp" audit sum --x "$tmp/x.npy" --out "$tmp/y.npy" \
  --platform trainium2-bf16
expect_rc 2 "missing file" "$fp" audit sum --x "$tmp/nope.npy" --out "$tmp/y.npy" --platform numpy-sum-f32

# ---- Report directory: created, replaced when it is a report, never anything else ----
expect_rc 0 "report" "$fp" audit sum --x "$tmp/x.npy" --out "$tmp/y.npy" --platform numpy-sum-f32 \
  --report "$tmp/rep" --no-tolerance --progress never
for f in report.md report.json report.html elements.csv; do [ -s "$tmp/rep/$f" ] || fail "report lacks $f"; done
expect_rc 0 "report replaced" "$fp" audit sum --x "$tmp/x.npy" --out "$tmp/y.npy" --platform numpy-sum-f32 \
  --report "$tmp/rep" --no-tolerance --progress never
# elements.csv holds every unexplained element, not only the --max-listed ones.
expect_rc 1 "report of a zero output" "$fp" audit matmul --a "$tmp/a_u16.npy" --a-dtype bfloat16 \
  --b "$tmp/b_u16.npy" --b-dtype bfloat16 --out "$tmp/zero.npy" --platform trainium2-bf16 \
  --report "$tmp/zrep" --no-tolerance --progress never
[ "$(wc -l <"$tmp/zrep/elements.csv")" = 769 ] || fail "elements.csv: $(wc -l <"$tmp/zrep/elements.csv") lines, expected 769"
grep -q "not written" "$tmp/zrep/elements.csv" || fail "elements.csv lacks the diagnosis"
echo "my notes" >"$tmp/notes.txt"
expect_rc 2 "report onto a user's file" "$fp" audit sum --x "$tmp/x.npy" --out "$tmp/y.npy" \
  --platform numpy-sum-f32 --report "$tmp/notes.txt" --no-tolerance --progress never
[ "$(cat "$tmp/notes.txt")" = "my notes" ] || fail "the user's file was changed"
expect_rc 0 "--json /dev/null" "$fp" audit sum --x "$tmp/x.npy" --out "$tmp/y.npy" --platform numpy-sum-f32 \
  --json /dev/null --no-tolerance --progress never
[ -c /dev/null ] || fail "/dev/null is no longer a character device"

# ---- compare: two platforms' outputs of the same inputs ----
expect_rc 0 "compare identical outputs" "$fp" compare matmul --a "$tmp/ab.safetensors:a" --b "$tmp/ab.safetensors:b" \
  --out-ref "$tmp/c.npy" --platform-ref trainium2-bf16 --out "$tmp/c.npy" --platform trainium2-bf16-sequential \
  --no-tolerance --progress never

# ---- composite ops: elementwise, softmax, norms (rows written by NumPy in float64, rounded once) ----
"$py" - "$tmp" <<'EOF'
import math, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
x = (rng.standard_normal((6, 50)) * 3).astype(np.float32)
np.save(f"{d}/cx.npy", x)
xd = x.astype(np.float64)
np.save(f"{d}/gelu.npy", np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))(xd).astype(np.float32))
e = np.exp(xd - xd.max(-1, keepdims=True))
np.save(f"{d}/softmax.npy", (e / e.sum(-1, keepdims=True)).astype(np.float32))
np.save(f"{d}/rms.npy", (xd / np.sqrt((xd * xd).mean(-1, keepdims=True) + 1e-6)).astype(np.float32))
np.save(f"{d}/w.npy", np.ones(50, np.float32))
np.save(f"{d}/w7.npy", np.ones(7, np.float32))
e0 = np.exp(xd - xd.max(0, keepdims=True))
np.save(f"{d}/softmax_axis0.npy", (e0 / e0.sum(0, keepdims=True)).astype(np.float32))
EOF
expect_rc 0 "gelu audit" "$fp" audit elementwise --fn gelu --x "$tmp/cx.npy" --out "$tmp/gelu.npy" \
  --platform torch-cuda-f32,correctly-rounded-f32 --progress never
expect_rc 1 "gelu output audited as silu" "$fp" audit elementwise --fn silu --x "$tmp/cx.npy" \
  --out "$tmp/gelu.npy" --platform torch-cuda-f32 --progress never --json "$tmp/silu.json"
json_get "$tmp/silu.json" 'd["elements"][0]["diagnosis"]' | grep -q "equals gelu(x)" || fail "silu vs gelu diagnosis"
expect_rc 2 "unknown function" "$fp" audit elementwise --fn swish --x "$tmp/cx.npy" --out "$tmp/gelu.npy" \
  --platform auto --progress never
grep -q "gelu_tanh" "$tmp/stderr" || fail "unknown function: the valid names are not listed"
expect_rc 0 "softmax audit" "$fp" audit softmax --x "$tmp/cx.npy" --out "$tmp/softmax.npy" --platform auto \
  --progress never
expect_rc 1 "softmax over the wrong axis" "$fp" audit softmax --x "$tmp/cx.npy" --out "$tmp/softmax.npy" \
  --axis 0 --platform torch-cuda-rows-f32 --progress never
expect_rc 0 "rmsnorm audit" "$fp" audit rmsnorm --x "$tmp/cx.npy" --weight "$tmp/w.npy" --eps 1e-6 \
  --out "$tmp/rms.npy" --platform auto --progress never
# FPCONFORM_COMPOSITE_MODELS_DIR names the composite models' directory; --models-dir beats it.
mkdir "$tmp/no_models"
expect_rc 2 "FPCONFORM_COMPOSITE_MODELS_DIR names an empty directory" \
  env FPCONFORM_COMPOSITE_MODELS_DIR="$tmp/no_models" "$fp" audit elementwise --fn gelu --x "$tmp/cx.npy" \
  --out "$tmp/gelu.npy" --platform torch-cuda-f32 --progress never
grep -q "no_models" "$tmp/stderr" || fail "FPCONFORM_COMPOSITE_MODELS_DIR: the message does not name the directory"
expect_rc 0 "--models-dir beats FPCONFORM_COMPOSITE_MODELS_DIR" \
  env FPCONFORM_COMPOSITE_MODELS_DIR="$tmp/no_models" "$fp" audit elementwise --fn gelu --x "$tmp/cx.npy" \
  --out "$tmp/gelu.npy" --platform torch-cuda-f32 --progress never --models-dir "$(dirname "$0")/../composite/models"
for bad in "--eps 0" "--eps -1e-6" "--eps nan" "--eps abc"; do
  expect_rc 2 "rmsnorm $bad" "$fp" audit rmsnorm --x "$tmp/cx.npy" $bad --out "$tmp/rms.npy" --platform auto \
    --progress never
  grep -q -- "--eps" "$tmp/stderr" || fail "rmsnorm $bad: the message does not name --eps"
done
expect_rc 2 "rmsnorm weight of the wrong length" "$fp" audit rmsnorm --x "$tmp/cx.npy" --weight "$tmp/w7.npy" \
  --eps 1e-6 --out "$tmp/rms.npy" --platform auto --progress never
grep -q "expected \[50\]" "$tmp/stderr" || fail "the weight's expected shape is not named"
expect_rc 2 "axis out of range" "$fp" audit softmax --x "$tmp/cx.npy" --out "$tmp/softmax.npy" --axis 2 \
  --platform auto --progress never
# compare for the composite ops: the side at fault is the one its own model does not explain.
expect_rc 0 "compare softmax" "$fp" compare softmax --x "$tmp/cx.npy" --out-ref "$tmp/softmax.npy" \
  --platform-ref torch-cuda-rows-f32 --out "$tmp/softmax.npy" --platform torch-cpu-rows-f32 --progress never
expect_rc 1 "compare softmax, the port over the wrong axis" "$fp" compare softmax --x "$tmp/cx.npy" \
  --out-ref "$tmp/softmax.npy" --platform-ref torch-cuda-rows-f32 --out "$tmp/softmax_axis0.npy" \
  --platform torch-cpu-rows-f32 --progress never --json "$tmp/cmp_softmax.json"
[ "$(json_get "$tmp/cmp_softmax.json" 'd["op"], d["at_fault"]["ref"], d["at_fault"]["port"] > 0')" = \
  "('softmax', 0, True)" ] || fail "compare softmax: op or fault side"
grep -q "fpconform compare softmax: FAIL" "$tmp/stdout" || fail "compare softmax: summary line"
expect_rc 0 "compare elementwise" "$fp" compare elementwise --fn gelu --x "$tmp/cx.npy" \
  --out-ref "$tmp/gelu.npy" --platform-ref correctly-rounded-f32 --out "$tmp/gelu.npy" \
  --platform torch-cpu-f32 --progress never
expect_rc 2 "compare rmsnorm without --eps" "$fp" compare rmsnorm --x "$tmp/cx.npy" --out-ref "$tmp/rms.npy" \
  --platform-ref auto --out "$tmp/rms.npy" --platform auto --progress never

# ---- attention (issue 27): GQA bfloat16 inputs, float32 outputs computed by NumPy in float64 ----
"$py" - "$tmp" <<'EOF'
import sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(27)
def bf16(shape):  # bfloat16 values (float32 truncated), saved as their uint16 bits
    bits = (rng.standard_normal(shape).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return bits, (bits.astype(np.uint32) << 16).view(np.float32)
(qb, q), (kb, k), (vb, v) = bf16((2, 4, 24, 16)), bf16((2, 2, 30, 16)), bf16((2, 2, 30, 8))
for n, a in (("q", qb), ("k", kb), ("v", vb)):
    np.save(f"{d}/att_{n}.npy", a)
def sdpa(causal=False, mask=None):
    qd = q.astype(np.float64)
    kd, vd = (np.repeat(x.astype(np.float64), 2, axis=1) for x in (k, v))
    s = qd @ np.swapaxes(kd, -1, -2) / 4
    if causal:
        s = np.where(np.tril(np.ones((24, 30), bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ vd
np.save(f"{d}/att_o.npy", sdpa().astype(np.float32))
# The LSE (float32, from binary64) and the same in base 2 (a wrong kernel's).
sl = q.astype(np.float64) @ np.swapaxes(np.repeat(k.astype(np.float64), 2, axis=1), -1, -2) / 4
lse = sl.max(-1) + np.log(np.exp(sl - sl.max(-1, keepdims=True)).sum(-1))
np.save(f"{d}/att_lse.npy", lse.astype(np.float32))
np.save(f"{d}/att_lse_copy.npy", lse.astype(np.float32))
np.save(f"{d}/att_lse2.npy", (lse / np.log(2)).astype(np.float32))
np.save(f"{d}/att_oc.npy", sdpa(causal=True).astype(np.float32))
keep = rng.random((24, 30)) < 0.7
keep[:, 0] = True
np.save(f"{d}/att_keep.npy", keep.astype(np.uint8))
np.save(f"{d}/att_om.npy", sdpa(mask=keep).astype(np.float32))
np.save(f"{d}/att_mask_bad.npy", keep[:, :29].astype(np.uint8))
# The aggregate gate: the query rows reversed (each element as small as a right one), all zeros.
np.save(f"{d}/att_rev.npy", sdpa()[:, :, ::-1, :].astype(np.float32))
np.save(f"{d}/att_zero.npy", np.zeros((2, 4, 24, 8), np.float32))
# Fully masked rows 5 and 17 (of every head): NumPy's 0/0 writes NaN there.
keep2 = keep.copy()
keep2[[5, 17], :] = False
np.save(f"{d}/att_keep2.npy", keep2.astype(np.uint8))
with np.errstate(invalid="ignore"):
    np.save(f"{d}/att_om2.npy", sdpa(mask=keep2).astype(np.float32))
EOF
att=(--q "$tmp/att_q.npy" --q-dtype bfloat16 --k "$tmp/att_k.npy" --k-dtype bfloat16 --v "$tmp/att_v.npy"
     --v-dtype bfloat16 --progress never)
expect_rc 0 "attention audit (GQA)" "$fp" audit attention "${att[@]}" --out "$tmp/att_o.npy" \
  --platform correctly-rounded --json "$tmp/att.json"
json_get "$tmp/att.json" 'd["verdict"]' | grep -q "pass" || fail "attention: the JSON verdict is not pass"
expect_rc 0 "attention audit, causal" "$fp" audit attention "${att[@]}" --out "$tmp/att_oc.npy" --causal \
  --platform correctly-rounded
expect_rc 0 "attention audit, boolean mask" "$fp" audit attention "${att[@]}" --out "$tmp/att_om.npy" \
  --mask "$tmp/att_keep.npy" --platform correctly-rounded
expect_rc 1 "attention: causal output audited as non-causal" "$fp" audit attention "${att[@]}" \
  --out "$tmp/att_oc.npy" --platform correctly-rounded --json "$tmp/att_bad.json"
json_get "$tmp/att_bad.json" 'd["elements"][0]["diagnosis"]' | grep -q "causal" || fail "attention: causal diagnosis"
expect_rc 1 "attention: output of scale 1/4 audited with scale 1/16" "$fp" audit attention "${att[@]}" \
  --out "$tmp/att_o.npy" --scale 0.0625 --platform correctly-rounded
# compare attention: the reference right, the port causal where it should not be: the port is at fault.
cp "$tmp/att_o.npy" "$tmp/att_o_copy.npy"
expect_rc 0 "compare attention" "$fp" compare attention "${att[@]}" --out-ref "$tmp/att_o.npy" \
  --platform-ref correctly-rounded --out "$tmp/att_o_copy.npy" --platform correctly-rounded
grep -q "bit-identical.*holds trivially" "$tmp/stdout" || fail "compare attention: identical bytes are not said"
expect_rc 2 "compare attention: the same file twice" "$fp" compare attention "${att[@]}" --out-ref "$tmp/att_o.npy" \
  --platform-ref correctly-rounded --out "$tmp/att_o.npy" --platform correctly-rounded
grep -q "compared with itself" "$tmp/stderr" || fail "compare attention: the same file twice is not refused"
expect_rc 1 "compare attention, a causal port" "$fp" compare attention "${att[@]}" --out-ref "$tmp/att_o.npy" \
  --platform-ref correctly-rounded --out "$tmp/att_oc.npy" --platform correctly-rounded --json "$tmp/cmp_att.json"
[ "$(json_get "$tmp/cmp_att.json" 'd["op"], d["at_fault"]["ref"], d["at_fault"]["port"] > 0')" = \
  "('attention', 0, True)" ] || fail "compare attention: op or fault side"
# compare attention with both LSEs: consistent; the port's LSE in base 2: the port is at fault; one
# file as both LSEs: refused.
expect_rc 0 "compare attention --lse" "$fp" compare attention "${att[@]}" --out-ref "$tmp/att_o.npy" \
  --platform-ref correctly-rounded --out "$tmp/att_o_copy.npy" --platform correctly-rounded \
  --lse-ref "$tmp/att_lse.npy" --lse "$tmp/att_lse_copy.npy"
grep -q "Inconsistent LSE rows: 0 / 192" "$tmp/stdout" || fail "compare attention --lse: the LSE rows are not said"
expect_rc 1 "compare attention, a base-2 LSE" "$fp" compare attention "${att[@]}" --out-ref "$tmp/att_o.npy" \
  --platform-ref correctly-rounded --out "$tmp/att_o_copy.npy" --platform correctly-rounded \
  --lse-ref "$tmp/att_lse.npy" --lse "$tmp/att_lse2.npy" --json "$tmp/cmp_lse.json"
[ "$(json_get "$tmp/cmp_lse.json" 'd["verdict"], d["inconsistent"], d["lse"]["at_fault"]["ref"], d["lse"]["at_fault"]["port"] > 0, d["port"]["lse"]["counts"]["unexplained"] > 0')" = \
  "('fail', 0, 0, True, True)" ] || fail "compare attention --lse: verdict or fault side"
expect_rc 2 "compare attention: one LSE file twice" "$fp" compare attention "${att[@]}" --out-ref "$tmp/att_o.npy" \
  --platform-ref correctly-rounded --out "$tmp/att_o_copy.npy" --platform correctly-rounded \
  --lse-ref "$tmp/att_lse.npy" --lse "$tmp/att_lse.npy"
grep -q "are the same file" "$tmp/stderr" || fail "compare attention: one LSE file twice is not refused"
expect_rc 2 "attention: D of Q and K differ" "$fp" audit attention --q "$tmp/att_q.npy" --k "$tmp/att_v.npy" \
  --v "$tmp/att_v.npy" --q-dtype bfloat16 --k-dtype bfloat16 --v-dtype bfloat16 --out "$tmp/att_o.npy" \
  --platform correctly-rounded --progress never
grep -q "D of Q" "$tmp/stderr" || fail "attention: the D mismatch is not named"
expect_rc 2 "attention: heads not divisible" "$fp" audit attention --q "$tmp/att_k.npy" --k "$tmp/att_q.npy" \
  --v "$tmp/att_q.npy" --q-dtype bfloat16 --k-dtype bfloat16 --v-dtype bfloat16 --out "$tmp/att_o.npy" \
  --platform correctly-rounded --progress never
grep -q "heads not divisible" "$tmp/stderr" || fail "attention: the heads error is not named"
expect_rc 2 "attention: non-finite scale" "$fp" audit attention "${att[@]}" --out "$tmp/att_o.npy" --scale inf \
  --platform correctly-rounded
expect_rc 2 "attention: mask of the wrong shape" "$fp" audit attention "${att[@]}" --out "$tmp/att_om.npy" \
  --mask "$tmp/att_mask_bad.npy" --platform correctly-rounded
grep -q "broadcast" "$tmp/stderr" || fail "attention: the mask's shape error does not say why"
# --lse (issue 27 §1, §4): the LSE (B, H, S_q) in float32 from float64 NumPy; its base-2 form is
# unexplained; FlashAttention-2's +inf on fully masked rows is its preset's convention, not the exact
# -inf; a wrong shape exits 2.
"$py" - "$tmp" <<'EOF'
import sys
import numpy as np
d = sys.argv[1]
q, k, v = ((np.load(f"{d}/att_{n}.npy").astype(np.uint32) << 16).view(np.float32) for n in "qkv")
def lse_and_o(keep):
    kd, vd = (np.repeat(x.astype(np.float64), 2, axis=1) for x in (k, v))
    s = np.where(keep, q.astype(np.float64) @ np.swapaxes(kd, -1, -2) / 4, -np.inf)
    m = s.max(-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - m)
        l = e.sum(-1, keepdims=True)
        return (m + np.log(l))[..., 0], (e / l) @ vd
keep = np.load(f"{d}/att_keep.npy").astype(bool)
lse, _ = lse_and_o(keep)
np.save(f"{d}/att_lse.npy", lse.astype(np.float32))
np.save(f"{d}/att_lse2.npy", (lse / np.log(2)).astype(np.float32))
np.save(f"{d}/att_lse_bad.npy", lse[:, :, :20].astype(np.float32))
keep[5] = False  # A fully masked row: FlashAttention-2 writes O = 0 and LSE = +inf there.
np.save(f"{d}/att_keep_fm.npy", keep.astype(np.uint8))
lse, o = lse_and_o(keep)
np.save(f"{d}/att_lse_fm.npy", np.where(np.isfinite(lse), lse, np.inf).astype(np.float32))
np.save(f"{d}/att_o_fm.npy", np.nan_to_num(o, nan=0.0).astype(np.float32))
EOF
expect_rc 0 "attention --lse" "$fp" audit attention "${att[@]}" --out "$tmp/att_om.npy" --mask "$tmp/att_keep.npy" \
  --lse "$tmp/att_lse.npy" --platform correctly-rounded --json "$tmp/att_lse.json"
[ "$(json_get "$tmp/att_lse.json" 'd["lse"]["counts"]["unexplained"], d["lse"]["shape"]')" = "(0, [2, 4, 24])" ] ||
  fail "attention --lse: the LSE's classes or shape"
grep -q "LSE classes against correctly-rounded" "$tmp/stdout" || fail "attention --lse: no LSE classes line"
expect_rc 1 "attention --lse, the LSE in base 2" "$fp" audit attention "${att[@]}" --out "$tmp/att_om.npy" \
  --mask "$tmp/att_keep.npy" --lse "$tmp/att_lse2.npy" --platform correctly-rounded --json "$tmp/att_lse2.json"
json_get "$tmp/att_lse2.json" 'd["lse"]["elements"][0]["diagnosis"]' | grep -q "base 2" ||
  fail "attention --lse: the base-2 diagnosis"
expect_rc 0 "attention --lse, FlashAttention-2's +inf on fully masked rows" "$fp" audit attention "${att[@]}" \
  --out "$tmp/att_o_fm.npy" --mask "$tmp/att_keep_fm.npy" --lse "$tmp/att_lse_fm.npy" \
  --platform flash-attention2-cuda-bf16 --json "$tmp/att_lse_fm.json"
[ "$(json_get "$tmp/att_lse_fm.json" 'd["lse"]["fully_masked_rows"], d["lse"]["counts"]["unexplained"]')" = \
  "(8, 0)" ] || fail "attention --lse: fully masked rows under flash-attention2-cuda-bf16"
expect_rc 1 "attention --lse, +inf against correctly-rounded" "$fp" audit attention "${att[@]}" \
  --out "$tmp/att_om.npy" --mask "$tmp/att_keep_fm.npy" --lse "$tmp/att_lse_fm.npy" --platform correctly-rounded \
  --json "$tmp/att_lse_fm2.json"
json_get "$tmp/att_lse_fm2.json" 'd["lse"]["elements"][0]["diagnosis"]' | grep -q "fully masked row" ||
  fail "attention --lse: the fully masked row's diagnosis"
expect_rc 2 "attention --lse of the wrong shape" "$fp" audit attention "${att[@]}" --out "$tmp/att_o.npy" \
  --lse "$tmp/att_lse_bad.npy" --platform correctly-rounded
grep -q "att_lse_bad.npy: the LSE has shape \[2, 4, 20\], expected \[2, 4, 24\]" "$tmp/stderr" ||
  fail "attention --lse: the shape error names the file and both shapes"
expect_rc 2 "attention: unknown platform" "$fp" audit attention "${att[@]}" --out "$tmp/att_o.npy" --platform cudnn
grep -q "flash-attention2-cuda-bf16" "$tmp/stderr" || fail "attention: the valid platforms are not listed"
expect_rc 2 "attention: NaN scale" "$fp" audit attention "${att[@]}" --out "$tmp/att_o.npy" --scale nan \
  --platform correctly-rounded
grep -q "finite" "$tmp/stderr" || fail "attention: the NaN scale's error does not say why"
# The aggregate gate (AUDIT.md "Aggregate gate"): right outputs pass it, wrong ones fail it with
# the figure that exceeds its limit.
json_get "$tmp/att.json" 'd["aggregate"]["pass"], d["aggregate"]["elements"]' | grep -qx "(True, 1536)" ||
  fail "attention: the aggregate gate of a right output"
expect_rc 1 "attention: query rows reversed" "$fp" audit attention "${att[@]}" --out "$tmp/att_rev.npy" \
  --platform correctly-rounded --json "$tmp/att_rev.json" --report "$tmp/att_rev_report"
grep -q "^Aggregate against correctly-rounded over 1536 finite elements: FAIL" "$tmp/att_rev_report/report.md" ||
  fail "attention: report.md has no aggregate line"
grep -q "^Aggregate against correctly-rounded over 1536 finite elements: FAIL" "$tmp/stdout" ||
  fail "attention: the aggregate line of a wrong output"
json_get "$tmp/att_rev.json" 'd["aggregate"]["pass"], "relative L2 error" in d["aggregate"]["why"]' |
  grep -qx "(False, True)" || fail "attention: the JSON aggregate of a wrong output"
expect_rc 1 "attention: an all-zero output" "$fp" audit attention "${att[@]}" --out "$tmp/att_zero.npy" \
  --platform correctly-rounded --json "$tmp/att_zero.json"
json_get "$tmp/att_zero.json" 'd["elements"][0]["diagnosis"], "constant" in d["aggregate"]["why"]' |
  grep -q "element not written?', True)" || fail "attention: the all-zero output's diagnosis or gate"
# Fully masked rows: how many, what the output holds there and each platform's convention.
expect_rc 0 "attention: fully masked rows (NaN, as the exact value)" "$fp" audit attention "${att[@]}" \
  --out "$tmp/att_om2.npy" --mask "$tmp/att_keep2.npy" --platform correctly-rounded
grep -q "16 of 192 query rows are fully masked.*NaN in 16 of them, zero in 0.*correctly-rounded nan" "$tmp/stdout" ||
  fail "attention: the fully masked rows are not counted"
grep -q "(128 non-finite left out)" "$tmp/stdout" || fail "attention: the gate does not say it left the NaN rows out"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "audit_cli_test: all checks passed"
