"""audit_softmax / audit_log_softmax / audit_rmsnorm / audit_layernorm against `fpconform audit
<op>` (the same JSON and summary), their diagnoses and errors, assert_conforms over them, and
(opt-in, when torch is installed) the real torch CPU outputs inside the torch-cpu-rows-* models."""

import numpy as np
import pytest

import fpconform
from conftest import save
from fpconform.testing import assert_conforms
from test_audit import same


def softmax64(x, axis=-1):
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def layernorm64(x, w, b, eps, ddof=0):
    xd = x.astype(np.float64)
    mu = xd.mean(-1, keepdims=True)
    var = ((xd - mu) ** 2).sum(-1, keepdims=True) / (x.shape[-1] - ddof)
    return (xd - mu) / np.sqrt(var + eps) * w + b


def test_audit_softmax_matches_cli_and_diagnoses(fpc, tmp_path, rng):
    x = (rng.standard_normal((12, 40)) * 4).astype(np.float32)
    y = softmax64(x).astype(np.float32)
    r = fpconform.audit_softmax(x, y, platform="torch-cuda-rows-f32")
    assert r.verdict == "pass", str(r)
    js, p = fpc.audit_json("audit", "softmax", "--x", save(tmp_path, "x", x), "--out", save(tmp_path, "y", y),
                           "--platform", "torch-cuda-rows-f32")
    same(r, js, p)
    bad = y.copy()
    bad[2] = softmax64(x, axis=0)[2].astype(np.float32)   # the wrong axis for one row
    bad[5, 3] = 0
    r = fpconform.audit_softmax(x, bad, platform="torch-cuda-rows-f32")
    diags = {e["index"]: e["diagnosis"] for e in r.elements if e["class"] == "unexplained"}
    assert diags[(5, 3)].startswith("zero where")
    assert any(i[0] == 2 and d.startswith("softmax along axis 0") for i, d in diags.items())
    log_y = np.log(softmax64(x)).astype(np.float32)
    r = fpconform.audit_softmax(x, log_y, platform="correctly-rounded-rows-f32")
    assert r.elements[0]["diagnosis"].startswith("log_softmax, not softmax")
    assert fpconform.audit_log_softmax(x, log_y, platform="correctly-rounded-rows-f32").verdict == "pass"


def test_audit_layernorm_diagnoses_and_errors(rng):
    x = (rng.standard_normal((8, 64)) + 30).astype(np.float32)
    w = (1 + 0.1 * rng.standard_normal(64)).astype(np.float32)
    b = (0.1 * rng.standard_normal(64)).astype(np.float32)
    y = layernorm64(x, w, b, 1e-5).astype(np.float32)
    assert fpconform.audit_layernorm(x, y, eps=1e-5, weight=w, bias=b, platform="auto").verdict == "pass"
    y1 = layernorm64(x, w, b, 1e-5, ddof=1).astype(np.float32)
    r = fpconform.audit_layernorm(x, y1, eps=1e-5, weight=w, bias=b, platform="correctly-rounded-rows-f32")
    assert r.verdict == "fail" and r.elements[0]["diagnosis"].startswith("unbiased variance")
    with pytest.raises(ValueError, match="eps"):
        fpconform.audit_layernorm(x, y, eps=0.0, weight=w, bias=b)
    with pytest.raises(ValueError, match="needs --eps"):
        fpconform.audit_layernorm(x, y, eps=None, weight=w, bias=b)
    with pytest.raises(ValueError, match=r"expected \[64\]"):
        fpconform.audit_layernorm(x, y, eps=1e-5, weight=w[:10], bias=b)
    with pytest.raises(ValueError, match="out of range"):
        fpconform.audit_layernorm(x, y, eps=1e-5, axis=2)
    with pytest.raises(ValueError, match="softmax takes no --weight"):  # the binding passes a weight
        fpconform._audit_axis("softmax", x, y, -1, w, None, None, "auto", "rne", False, 10, None, None, None,
                              None, None)


def test_assert_conforms_rmsnorm_bfloat16(rng):
    x = fpconform.cast((rng.standard_normal((4, 128)) * 2).astype(np.float32), "bfloat16")
    w = fpconform.cast((1 + 0.1 * rng.standard_normal(128)).astype(np.float32), "bfloat16")
    xf = fpconform.cast(x, "float32").astype(np.float64)
    wf = fpconform.cast(w, "float32").astype(np.float64)
    normed = fpconform.cast((xf / np.sqrt((xf * xf).mean(-1, keepdims=True) + 1e-6)).astype(np.float32), "bfloat16")
    y = fpconform.cast((fpconform.cast(normed, "float32").astype(np.float64) * wf).astype(np.float32), "bfloat16")
    assert_conforms(y, x, op="rmsnorm", eps=1e-6, weight=w, platform="hf-llama-rmsnorm-cuda-bf16")
    with pytest.raises(AssertionError):
        assert_conforms(y, x, op="rmsnorm", eps=1e-6, platform="hf-llama-rmsnorm-cuda-bf16")  # weight missing


TORCH_OPS = {
    "softmax": lambda torch, t: torch.softmax(t, -1),
    "log_softmax": lambda torch, t: torch.log_softmax(t, -1),
}


@pytest.mark.parametrize("op", sorted(TORCH_OPS))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_real_torch_cpu_rows_inside_their_model(op, dtype, rng):
    torch = pytest.importorskip("torch", reason="torch is not installed (optional: FPCONFORM_WITH_TORCH=1 "
                                                "bash ci/venv.sh): real torch CPU outputs untested here")
    x = torch.from_numpy((rng.standard_normal((64, 333)) * 5).astype(np.float32)).to(getattr(torch, dtype))
    with torch.no_grad():
        y = TORCH_OPS[op](torch, x)
    short = "f32" if dtype == "float32" else "bf16"
    r = getattr(fpconform, f"audit_{op}")(x, y, platform=f"torch-cpu-rows-{short}")
    assert r.counts["unexplained"] == 0, str(r)
