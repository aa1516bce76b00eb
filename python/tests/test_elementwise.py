"""audit_elementwise against `fpconform audit elementwise` (the same JSON and summary), its
mutation diagnoses, assert_conforms over elementwise ops, and (opt-in, when torch is installed)
the real torch CPU outputs inside the torch-cpu-* models' bounds."""

import math

import numpy as np
import pytest

import fpconform
from conftest import save
from fpconform.testing import assert_conforms
from test_audit import same


def gelu_steps_f32(x):
    """PyTorch's erf GELU formula, every step rounded to float32 (math.erf is within a few ulps
    of double: its float32 rounding is the correctly rounded erf but for rare ties)."""
    half, one, alpha = np.float32(0.5), np.float32(1), np.float32(0.70710678118654752440)
    e = np.array([np.float32(math.erf(float(v * alpha))) for v in x], dtype=np.float32)
    return (x * half) * (one + e)


def test_audit_elementwise_matches_cli(fpc, tmp_path, rng):
    x = (rng.standard_normal(500) * 3).astype(np.float32)
    out = gelu_steps_f32(x)
    r = fpconform.audit_elementwise(x, out, "gelu", platform="torch-cuda-f32")
    assert r.verdict == "pass", str(r)
    assert r.counts["unexplained"] == 0 and r.counts["identical"] >= 490
    js, p = fpc.audit_json("audit", "elementwise", "--fn", "gelu", "--x", save(tmp_path, "x", x), "--out",
                           save(tmp_path, "out", out), "--platform", "torch-cuda-f32")
    same(r, js, p)


def test_audit_elementwise_diagnoses(rng):
    x = (rng.standard_normal(64) * 2 + 0.5).astype(np.float32)
    good = gelu_steps_f32(x)
    tanh_form = (0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x.astype(np.float64) ** 3))))
    sigmoid = 1 / (1 + np.exp(-x.astype(np.float64)))
    # Each wrong value planted where it lies farthest from the right one, so that it is an error
    # on every draw (near some x, -gelu(x), the tanh form or sigmoid(x) lies within the platform's
    # bound of gelu(x): not an error there).
    def farthest(wrong, taken):
        apart = np.abs(np.asarray(wrong, np.float64) - good)
        apart[list(taken)] = -1
        return int(np.argmax(apart))
    f = farthest(-good, [])
    s = farthest(sigmoid.astype(np.float32), [f])
    t = farthest(tanh_form.astype(np.float32), [f, s])
    bad = good.copy()
    bad[f] = -bad[f]
    bad[t] = np.float32(tanh_form[t])
    bad[s] = np.float32(1 / (1 + math.exp(-float(x[s]))))  # sigmoid, not gelu
    r = fpconform.audit_elementwise(x, bad, "gelu", platform="torch-cpu-f32")
    assert r.verdict == "fail"
    diag = {e["index"]: e["diagnosis"] for e in r.elements if e["class"] == "unexplained"}
    assert diag[(f,)].startswith("sign flipped")
    assert diag[(t,)].startswith("the other GELU form")
    assert diag[(s,)].startswith("equals sigmoid(x)")
    assert set(diag) == {(f,), (t,), (s,)}


def test_audit_elementwise_bfloat16_and_errors(rng):
    x = fpconform.cast((rng.standard_normal(256) * 4).astype(np.float32), "bfloat16")
    xf = fpconform.cast(x, "float32").astype(np.float64)
    y = fpconform.cast((xf / (1 + np.exp(-xf))).astype(np.float32), "bfloat16")
    r = fpconform.audit_elementwise(x, y, "silu", platform="auto")
    assert r.verdict == "pass" and r.platforms[0]["name"].endswith("-bf16")
    with pytest.raises(ValueError, match="unknown function 'swish'|valid"):
        fpconform.audit_elementwise(x, y, "swish")
    with pytest.raises(ValueError, match="shape"):
        fpconform.audit_elementwise(x, y[:10], "silu")
    with pytest.raises(ValueError, match="takes float32 inputs"):
        fpconform.audit_elementwise(x, y, "silu", platform="torch-cuda-f32")


def test_assert_conforms_elementwise(rng):
    x = (rng.standard_normal(32)).astype(np.float32)
    assert_conforms(gelu_steps_f32(x), x, op="gelu", platform="torch-cuda-f32")
    assert_conforms(gelu_steps_f32(x), x, op="elementwise", fn="gelu", platform="torch-cuda-f32")
    with pytest.raises(AssertionError):
        assert_conforms(-gelu_steps_f32(x) - 1, x, op="gelu", platform="torch-cuda-f32")
    with pytest.raises(ValueError, match="needs fn"):
        assert_conforms(x, x, op="elementwise")


TORCH_FUNCTIONS = {
    "exp": "torch.exp", "exp2": "torch.exp2", "log": "torch.log", "tanh": "torch.tanh",
    "sigmoid": "torch.sigmoid", "silu": "torch.nn.functional.silu", "gelu": "torch.nn.functional.gelu",
    "gelu_tanh": "lambda t: torch.nn.functional.gelu(t, approximate='tanh')", "rsqrt": "torch.rsqrt",
    "reciprocal": "torch.reciprocal",
}


@pytest.mark.parametrize("fn", sorted(TORCH_FUNCTIONS))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_real_torch_cpu_inside_its_model(fn, dtype, rng):
    torch = pytest.importorskip("torch", reason="torch is not installed (optional: FPCONFORM_WITH_TORCH=1 "
                                                "bash ci/venv.sh): real torch CPU outputs untested here")
    f = eval(TORCH_FUNCTIONS[fn], {"torch": torch})
    x = torch.from_numpy((rng.standard_normal(20000) * 6).astype(np.float32))
    if fn in ("log", "rsqrt"):
        x = x.abs() + 1e-3
    x = x.to(getattr(torch, dtype))
    with torch.no_grad():
        y = f(x)
    short = "f32" if dtype == "float32" else "bf16"
    r = fpconform.audit_elementwise(x, y, fn, platform=f"torch-cpu-{short}")
    assert r.counts["unexplained"] == 0, str(r)
