"""The attention audit's aggregate gate (issue 27 §4, reports/audit.h AuditResult::Aggregate) and
fpconform.emulate_attention: a wrong kernel whose every element passes a loose tolerance
(mlir-air#1450: atol 0.15, rtol 0.04, correlation 0.13 with the float32 result) fails the gate,
while conforming outputs, the model's emulation and outputs at the very edge of every element's
enclosure, pass it; the gate's figures against NumPy's, the CLI's and another thread count's."""

import ml_dtypes
import numpy as np
import pytest

import fpconform
from conftest import RNG_SEED, save

BF16 = ml_dtypes.bfloat16
FA2 = "flash-attention2-cuda-bf16"


def small_outputs(rng, h=1, s=1024, d=64):
    """bfloat16 Q, K, V whose attention outputs are small (a flat softmax over 1024 keys averages
    V = N(0, 1/4)); below 0.075 in magnitude for the default seed's draw, so that any output of
    the same size passes atol = 0.15."""
    q = (0.5 * rng.standard_normal((h, s, d))).astype(BF16)
    k = rng.standard_normal((h, s, d)).astype(BF16)
    v = (0.5 * rng.standard_normal((h, s, d))).astype(BF16)
    return q, k, v


def loose_criterion(out, ref):
    """mlir-air#1450's test: |out - ref| <= 0.15 + 0.04 |ref| everywhere."""
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    return bool(np.all(np.abs(out - ref) <= 0.15 + 0.04 * np.abs(ref)))


def test_gate_fails_a_wrong_kernel_that_a_loose_tolerance_passes():
    # Pinned to the default seed, not FPCONFORM_SEED: the scenario (a wrong kernel that the loose
    # tolerance passes) needs every |exact| below 0.075, which this draw has and others need not
    # (seeds 4, 6, 11 and 19 reach 0.075 to 0.087); reports/AUDIT.md quotes this draw's figures.
    rng = np.random.default_rng(RNG_SEED)
    q, k, v = small_outputs(rng)
    # float32 (binary64 would need MPFR for most elements: ~30 s here); NumPy's figures below on
    # it agree with the audit's (on the exact values) to ~1e-7.
    exact = fpconform.exact_attention(q, k, v).astype(np.float64)
    assert np.abs(exact).max() < 0.075
    good, _, _ = fpconform.emulate_attention(q, k, v, FA2)
    r = fpconform.audit_attention(q, k, v, good, platform=FA2)
    assert r.verdict == "pass" and r.aggregate["pass"], str(r)
    assert r.aggregate["rel_l2"] <= r.aggregate["rel_l2_limit"]
    assert r.aggregate["correlation"] >= r.aggregate["correlation_limit"] > 0.99
    # The kernel's head dimension scrambled (V's columns in the wrong order): every element
    # inside the loose tolerance, the output uncorrelated with the true one.
    wrong = np.asarray(good)[..., rng.permutation(64)]
    assert loose_criterion(wrong, exact)
    corr = np.corrcoef(np.asarray(wrong, np.float64).ravel(), exact.ravel())[0, 1]
    assert abs(corr) < 0.2
    r = fpconform.audit_attention(q, k, v, wrong, platform=FA2)
    g = r.aggregate
    assert r.verdict == "fail" and not g["pass"], str(r)
    assert "relative L2 error" in g["why"] and "correlation" in g["why"]
    # The audit's figures are NumPy's on the same data.
    w = np.asarray(wrong, np.float64).ravel()
    assert g["correlation"] == pytest.approx(corr, abs=1e-6)
    assert g["rel_l2"] == pytest.approx(np.linalg.norm(w - exact.ravel()) / np.linalg.norm(exact), rel=1e-6)
    assert g["sigma"] == pytest.approx(np.linalg.norm(exact - exact.mean()), rel=1e-6)
    assert g["elements"] == exact.size and g["excluded"] == 0
    assert "Aggregate against flash-attention2-cuda-bf16 over 65536 finite elements: FAIL" in str(r)
    # The figures reports/AUDIT.md quotes ("Aggregate gate").
    assert (round(g["rel_l2"], 3), round(g["rel_l2_limit"], 5), round(g["correlation"], 4)) == \
        (1.296, 0.09802, 0.1530)


@pytest.mark.parametrize("platform", ["flash-attention2-cuda-bf16", "nki-flash-fwd-bf16", "torch-math-sdpa-cpu-bf16"])
@pytest.mark.parametrize("case", ["plain", "causal_gqa", "mask"])
def test_emulation_inside_its_enclosure_and_identical_to_its_audit(platform, case, rng):
    q = rng.standard_normal((1, 4, 24, 32)).astype(BF16)
    kv_heads = 2 if case == "causal_gqa" else 4
    k = rng.standard_normal((1, kv_heads, 40, 32)).astype(BF16)
    v = rng.standard_normal((1, kv_heads, 40, 16)).astype(BF16)
    kw = {"causal": case == "causal_gqa"}
    if case == "mask":
        keep = rng.random((24, 40)) < 0.5
        keep[3] = False  # A fully masked row: the model's convention, a point.
        kw["mask"] = keep
    out, lo, hi = fpconform.emulate_attention(q, k, v, platform, **kw)
    assert out.shape == (1, 4, 24, 16) and out.dtype == np.dtype(BF16)
    o = np.asarray(out, np.float64)
    finite = np.isfinite(lo)
    assert finite.sum() >= o.size - (4 * 16 if case == "mask" else 0)
    assert np.all((lo[finite] <= o[finite]) & (o[finite] <= hi[finite]))
    r = fpconform.audit_attention(q, k, v, out, platform=platform, **kw)
    assert r.counts["identical"] == o.size and r.verdict == "pass", str(r)
    assert r.aggregate["pass"] and r.aggregate["rel_l2"] <= r.aggregate["rel_l2_limit"]


def test_outputs_at_the_edges_of_their_enclosures_pass_the_gate(rng):
    """The limits are sums of the per-element bounds: an output with every element at the far
    end of its enclosure (each one within_bound) still passes; one ulp farther out everywhere
    fails."""
    q, k, v = (rng.standard_normal((2, 64, 32)).astype(BF16) for _ in range(3))
    _, lo, hi = fpconform.emulate_attention(q, k, v, FA2)
    exact = fpconform.exact_attention(q, k, v, out_dtype="float64")
    edge = np.where(np.abs(hi - exact) >= np.abs(lo - exact), hi, lo)
    r = fpconform.audit_attention(q, k, v, edge.astype(BF16), platform=FA2)
    assert r.counts["unexplained"] == 0 and r.aggregate["pass"], str(r)
    assert r.aggregate["rel_l2"] <= r.aggregate["rel_l2_limit"]
    beyond = np.where(edge >= exact, np.nextafter(edge.astype(BF16), BF16(np.inf)),
                      np.nextafter(edge.astype(BF16), BF16(-np.inf))).astype(BF16)
    r = fpconform.audit_attention(q, k, v, beyond, platform=FA2)
    assert r.verdict == "fail"


def test_gate_does_not_depend_on_threads_and_matches_the_cli(fpc, tmp_path, rng):
    q, k, v = small_outputs(rng, h=2, s=200, d=32)
    good, _, _ = fpconform.emulate_attention(q, k, v, FA2)
    wrong = np.asarray(good)[:, ::-1, :]  # Query rows reversed.
    one = fpconform.audit_attention(q, k, v, wrong, platform=FA2, threads=1).aggregate
    two = fpconform.audit_attention(q, k, v, wrong, platform=FA2, threads=3).aggregate
    assert one == two
    args = ["audit", "attention", "--q", save(tmp_path, "q", q), "--q-dtype", "bfloat16",
            "--k", save(tmp_path, "k", k), "--k-dtype", "bfloat16", "--v", save(tmp_path, "v", v),
            "--v-dtype", "bfloat16", "--out", save(tmp_path, "o", wrong), "--out-dtype", "bfloat16",
            "--platform", FA2]
    js, p = fpc.audit_json(*args)
    assert p.returncode == 1 and js["verdict"] == "fail"
    assert js["aggregate"]["pass"] is False and js["aggregate"]["why"] == one["why"]
    for key in ("rel_l2", "rel_l2_limit", "correlation", "correlation_limit", "emulated_rel_l2", "sigma"):
        assert float(js["aggregate"][key]) == one[key], key


def test_emulate_attention_errors(rng):
    q, k, v = (rng.standard_normal((8, 16)).astype(BF16) for _ in range(3))
    with pytest.raises(ValueError, match="no attention model 'nope'"):
        fpconform.emulate_attention(q, k, v, "nope")
    with pytest.raises(ValueError, match="takes bfloat16"):
        fpconform.emulate_attention(q.astype(np.float32), k.astype(np.float32), v.astype(np.float32), FA2)
    with pytest.raises(ValueError, match="D of Q"):
        fpconform.emulate_attention(q, k[:, :8], v, FA2)


@pytest.mark.parametrize("mask", [None, "bool", "additive"])
def test_dropped_key_block_diagnosed_under_every_mask_kind(mask, rng):
    """The diagnoses evaluate the element's row alone, its mask row and causal mask folded in."""
    q = rng.standard_normal((2, 40, 16)).astype(np.float32)
    k = rng.standard_normal((2, 192, 16)).astype(np.float32)
    v = rng.standard_normal((2, 192, 8)).astype(np.float32)
    dropped = np.ones((40, 192), bool)
    dropped[:, 128:] = False  # The last block of 64 keys.
    wrong = fpconform.exact_attention(q, k, v, mask=dropped)
    kw = {}
    if mask == "bool":
        kw["mask"] = np.ones((40, 192), bool)
    elif mask == "additive":
        kw["mask"] = np.zeros((40, 192), np.float32)
    r = fpconform.audit_attention(q, k, v, wrong, platform="correctly-rounded", max_listed=5, **kw)
    assert r.verdict == "fail"
    assert {e["diagnosis"] for e in r.elements} == {"a key block dropped: keys [128, 192) (block of 64)"}
