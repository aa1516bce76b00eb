"""audit_attention / exact_attention (issue 27) against `fpconform audit attention` (the same JSON
and summary), against a float64 NumPy reference, with GQA heads, causal and boolean masks; the
diagnoses of wrong kernels (scale applied twice, causal mask missing) and the errors."""

import numpy as np
import pytest

import fpconform
from conftest import save, sdpa64
from test_audit import same


@pytest.fixture
def gqa(rng):
    q = rng.standard_normal((1, 4, 20, 16)).astype(np.float32)
    k = rng.standard_normal((1, 2, 28, 16)).astype(np.float32)
    v = rng.standard_normal((1, 2, 28, 8)).astype(np.float32)
    return q, k, v


def test_exact_attention_is_the_rounded_reference(gqa):
    q, k, v = gqa
    ex = fpconform.exact_attention(q, k, v, causal=True)
    ref = sdpa64(q, k, v, causal=True)
    assert ex.shape == (1, 4, 20, 8) and ex.dtype == np.float32
    # float64 NumPy is within a few binary64 ulps: its float32 rounding differs only at ties.
    assert np.mean(ex == ref.astype(np.float32)) > 0.999
    assert np.max(np.abs(ex - ref)) <= np.max(np.abs(ref)) * 2.0**-23


def test_audit_attention_matches_cli(fpc, tmp_path, gqa):
    q, k, v = gqa
    out = sdpa64(q, k, v).astype(np.float32)
    r = fpconform.audit_attention(q, k, v, out, platform="correctly-rounded")
    assert r.verdict == "pass", str(r)
    js, p = fpc.audit_json("audit", "attention", "--q", save(tmp_path, "q", q), "--k", save(tmp_path, "k", k),
                           "--v", save(tmp_path, "v", v), "--out", save(tmp_path, "o", out),
                           "--platform", "correctly-rounded")
    same(r, js, p)


def test_masks_and_diagnoses(gqa, rng):
    q, k, v = gqa
    keep = rng.random((20, 28)) < 0.6
    keep[:, 0] = True
    out = sdpa64(q, k, v, keep=keep).astype(np.float32)
    assert fpconform.audit_attention(q, k, v, out, platform="correctly-rounded", mask=keep).verdict == "pass"
    additive = np.where(keep, 0.0, -np.inf).astype(np.float32)
    assert fpconform.audit_attention(q, k, v, out, platform="correctly-rounded", mask=additive).verdict == "pass"
    bad = sdpa64(q, k, v, scale=1 / 16).astype(np.float32)       # scale applied twice
    r = fpconform.audit_attention(q, k, v, bad, platform="correctly-rounded")
    assert r.verdict == "fail"
    assert {e["diagnosis"] for e in r.elements if e["class"] == "unexplained"} == {"the scale applied twice (scale^2)"}
    nocausal = sdpa64(q, k, v).astype(np.float32)
    r = fpconform.audit_attention(q, k, v, nocausal, platform="correctly-rounded", causal=True)
    diags = {e["diagnosis"] for e in r.elements if e["class"] == "unexplained"}
    assert diags == {"no causal mask (every key attended)"}


def test_models_explain_a_flash_like_kernel(rng):
    bf = lambda x: fpconform.cast(np.asarray(x, np.float32), "bfloat16")  # noqa: E731
    q, k, v = (bf(rng.standard_normal(s)) for s in ((2, 40, 32), (2, 40, 32), (2, 40, 32)))
    qf, kf, vf = (np.asarray(x, np.float32) for x in (q, k, v))
    s = (qf @ np.swapaxes(kf, -1, -2)) * np.float32(1 / np.sqrt(32))
    w = np.exp(s - s.max(-1, keepdims=True)).astype(np.float32)
    pb = np.asarray(bf(w), np.float32)
    o = bf((pb @ vf) * (np.float32(1) / w.sum(-1, keepdims=True, dtype=np.float32)))
    r = fpconform.audit_attention(q, k, v, o, platform="auto")
    assert r.verdict == "pass", str(r)
    assert r.best_platform != "correctly-rounded"
    wrong = bf(np.asarray(o, np.float32) * np.float32(1.5))
    assert fpconform.audit_attention(q, k, v, wrong, platform="flash-attention2-cuda-bf16").verdict == "fail"


def test_errors(gqa):
    q, k, v = gqa
    out = sdpa64(q, k, v).astype(np.float32)
    with pytest.raises(ValueError, match="D of Q"):
        fpconform.audit_attention(q, v, v, out, platform="correctly-rounded")
    with pytest.raises(ValueError, match="heads not divisible"):
        fpconform.audit_attention(k, q, q, k, platform="correctly-rounded")
    with pytest.raises(ValueError, match="scale"):
        fpconform.audit_attention(q, k, v, out, platform="correctly-rounded", scale=float("nan"))
    with pytest.raises(ValueError, match="broadcast"):
        fpconform.audit_attention(q, k, v, out, platform="correctly-rounded", mask=np.ones((20, 27), bool))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
def test_real_torch_math_sdpa_inside_its_model(dtype, causal, rng):
    """Opt-in (torch installed): torch's math SDPA on the CPU inside torch-math-sdpa-cpu-*; until
    this runs against a real torch, those presets stay unconfirmed."""
    torch = pytest.importorskip("torch", reason="torch is not installed (optional: FPCONFORM_WITH_TORCH=1 "
                                                "bash ci/venv.sh): real torch SDPA outputs untested here")
    from torch.nn.attention import SDPBackend, sdpa_kernel
    t = getattr(torch, dtype)
    q, k, v = (torch.from_numpy(rng.standard_normal((2, 3, 48, 32)).astype(np.float32)).to(t) for _ in range(3))
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    short = "f32" if dtype == "float32" else "bf16"
    r = fpconform.audit_attention(q, k, v, o, platform=f"torch-math-sdpa-cpu-{short}", causal=causal)
    assert r.counts["unexplained"] == 0, str(r)


def _diagnoses(r):
    return {e["diagnosis"] for e in r.elements if e["class"] == "unexplained"}


def test_diagnoses_of_blocks_transposes_sums_and_axes(rng):
    """Four wrong kernels, each built in float64 NumPy and rounded to float32, named by the audit's
    diagnosis of their unexplained elements (one head, S = D = 64 so that K read untransposed is a
    valid matrix, 200 keys for the key blocks)."""
    d = 64
    q = rng.standard_normal((1, 64, d)).astype(np.float32)
    k = rng.standard_normal((1, 64, d)).astype(np.float32)
    v = rng.standard_normal((1, 64, d)).astype(np.float32)
    qd, kd, vd = (np.asarray(x, np.float64)[0] for x in (q, k, v))

    def attend(s, axis=-1):
        e = np.exp(s - s.max(axis, keepdims=True))
        return ((e / e.sum(axis, keepdims=True)) @ vd)[None].astype(np.float32)

    s = qd @ kd.T / 8
    # K not transposed: Q K (K read as D x S).
    r = fpconform.audit_attention(q, k, v, attend(qd @ kd / 8), platform="correctly-rounded")
    assert r.verdict == "fail" and _diagnoses(r) == {"K not transposed (Q K instead of Q K^T)"}, str(r)
    # Softmax over the queries instead of the keys.
    r = fpconform.audit_attention(q, k, v, attend(s, axis=0), platform="correctly-rounded")
    assert r.verdict == "fail"
    assert _diagnoses(r) == {"softmax over the wrong axis (normalized over the queries, not the keys)"}, str(r)
    # The row sum accumulated in bfloat16, in key order.
    bf = lambda x: np.float64(fpconform.cast(np.asarray([x], np.float32), "bfloat16")[0])  # noqa: E731
    e = np.exp(s - s.max(-1, keepdims=True))
    rows = []
    for i in range(64):
        acc = 0.0
        for j in range(64):
            acc = bf(acc + bf(e[i, j]))
        rows.append(e[i] @ vd / acc)
    r = fpconform.audit_attention(q, k, v, np.asarray(rows)[None].astype(np.float32), platform="correctly-rounded")
    assert r.verdict == "fail" and "the row sum accumulated in bfloat16" in _diagnoses(r), str(r)
    # The first block of 64 of 200 keys counted twice.
    k2 = rng.standard_normal((1, 200, d)).astype(np.float32)
    v2 = rng.standard_normal((1, 200, d)).astype(np.float32)
    s2 = qd @ np.asarray(k2, np.float64)[0].T / 8
    e2 = np.exp(s2 - s2.max(-1, keepdims=True))
    e2[:, :64] *= 2
    doubled = ((e2 / e2.sum(-1, keepdims=True)) @ np.asarray(v2, np.float64)[0])[None].astype(np.float32)
    r = fpconform.audit_attention(q, k2, v2, doubled, platform="correctly-rounded")
    assert r.verdict == "fail" and _diagnoses(r) == {"a key block counted twice: keys [0, 64) (block of 64)"}, str(r)
