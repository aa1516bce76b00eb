"""exact_* and emulate_* of the composite ops: the exact values against a float64 second opinion
and against the audit (an exact output audits as identical to the correctly rounded platform),
the axis moved and restored, the emulations inside their own enclosures and identical to what the
audit emulates, and the errors."""

import ml_dtypes
import numpy as np
import pytest

import fpconform
from test_axis import layernorm64, softmax64


def ulps32(a, b):
    """|a - b| in units of float32 spacing at b (float64 arrays)."""
    return np.abs(a - b) / np.spacing(np.abs(b).astype(np.float32)).astype(np.float64)


def test_exact_elementwise_against_float64_and_the_audit(rng):
    x = (rng.standard_normal(2000) * 3).astype(np.float32)
    xd = x.astype(np.float64)
    refs = {"exp": np.exp(xd), "tanh": np.tanh(xd), "sigmoid": 1 / (1 + np.exp(-xd)),
            "silu": xd / (1 + np.exp(-xd))}
    for fn, ref in refs.items():
        y = fpconform.exact_elementwise(x, fn)
        assert y.dtype == np.float32 and y.shape == x.shape
        # float64's libm errs by well under a float32 ulp: the correctly rounded result is within
        # half an ulp of it plus that error, and equal to its rounding nearly everywhere.
        assert ulps32(y.astype(np.float64), ref).max() <= 0.5 + 1e-6, fn
        assert np.mean(y == ref.astype(np.float32)) > 0.99, fn
        r = fpconform.audit_elementwise(x, y, fn, platform="correctly-rounded-f32")
        assert r.verdict == "pass" and r.counts["identical"] == x.size, (fn, str(r))
    one_ulp_off = np.nextafter(fpconform.exact_elementwise(x, "exp"), np.float32(np.inf))
    r = fpconform.audit_elementwise(x, one_ulp_off, "exp", platform="correctly-rounded-f32")
    assert r.counts["identical"] == 0


def test_exact_elementwise_formats_and_rounding():
    x = np.array([0.5, 1.0, 2.0], dtype=ml_dtypes.bfloat16)
    y = fpconform.exact_elementwise(x, "exp")
    assert y.dtype == ml_dtypes.bfloat16
    assert y.astype(np.float64).tolist() == np.exp([0.5, 1.0, 2.0]).astype(ml_dtypes.bfloat16).astype(
        np.float64).tolist()
    y32 = fpconform.exact_elementwise(x, "exp", out_dtype=np.float32)
    assert y32.dtype == np.float32
    down = fpconform.exact_elementwise(np.float32([1.0]), "exp", rounding="rdn")
    up = fpconform.exact_elementwise(np.float32([1.0]), "exp", rounding="rup")
    assert np.nextafter(down, np.float32(np.inf)) == up and float(down[0]) < np.e < float(up[0])
    with pytest.raises(ValueError, match="rounding"):
        fpconform.exact_elementwise(np.float32([1.0]), "exp", rounding="sr8")
    with pytest.raises(ValueError, match="erfcx"):
        fpconform.exact_elementwise(np.float32([1.0]), "erfcx")


def test_exact_axis_ops_along_any_axis(rng):
    x = (rng.standard_normal((3, 7, 5)) * 4).astype(np.float32)
    for axis in (0, 1, 2, -1):
        y = fpconform.exact_softmax(x, axis=axis)
        assert y.shape == x.shape
        assert ulps32(y.astype(np.float64), softmax64(x, axis)).max() <= 0.5 + 1e-6
        moved = fpconform.exact_softmax(np.moveaxis(x, axis, -1))
        assert np.array_equal(np.moveaxis(y, axis, -1), moved)
    ls = fpconform.exact_log_softmax(x, axis=1)
    assert ulps32(ls.astype(np.float64), np.log(softmax64(x, 1))).max() <= 0.5 + 1e-6
    w = (1 + 0.1 * rng.standard_normal(5)).astype(np.float32)
    b = (0.1 * rng.standard_normal(5)).astype(np.float32)
    ln = fpconform.exact_layernorm(x, eps=1e-5, weight=w, bias=b)
    ref = layernorm64(x, w, b, 1e-5)
    assert np.abs(ln - ref).max() <= np.abs(ref).max() * 2**-23
    r = fpconform.audit_layernorm(x, ln, eps=1e-5, weight=w, bias=b, platform="correctly-rounded-rows-f32")
    assert r.counts["identical"] == x.size
    rms = fpconform.exact_rmsnorm(x, eps=1e-6, weight=w, axis=-1)
    xd = x.astype(np.float64)
    ref = xd / np.sqrt((xd * xd).mean(-1, keepdims=True) + 1e-6) * w
    assert ulps32(rms.astype(np.float64), ref).max() <= 0.5 + 1e-6
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        fpconform.exact_softmax(x, axis=3)
    with pytest.raises(ValueError, match="5 entries"):
        fpconform.exact_rmsnorm(x, eps=1e-6, weight=w[:4])
    with pytest.raises(ValueError, match="eps"):
        fpconform.exact_rmsnorm(x, eps=0.0)


def test_emulations_lie_in_their_enclosures_and_match_the_audit(rng):
    x = (rng.standard_normal((6, 33)) * 5).astype(np.float32)
    for platform in ("torch-cuda-f32", "torch-cpu-f32"):
        for fn in ("gelu", "silu", "exp", "tanh"):
            out, lo, hi = fpconform.emulate_elementwise(x, fn, platform)
            od = out.astype(np.float64)
            assert out.shape == x.shape and ((lo <= od) & (od <= hi)).all(), (platform, fn)
            r = fpconform.audit_elementwise(x, out, fn, platform=platform)
            assert r.counts["identical"] == x.size, (platform, fn, str(r))
    for platform in ("torch-cuda-rows-f32", "torch-cpu-rows-f32"):
        out, lo, hi = fpconform.emulate_softmax(x, platform, axis=0)
        od = out.astype(np.float64)
        assert ((lo <= od) & (od <= hi)).all()
        assert fpconform.audit_softmax(x, out, axis=0, platform=platform).counts["identical"] == x.size
    exact = fpconform.exact_softmax(x)
    out, lo, hi = fpconform.emulate_softmax(x, "correctly-rounded-rows-f32")
    assert np.array_equal(out, exact) and np.array_equal(lo, hi)
    xb = x.astype(ml_dtypes.bfloat16)
    w = (1 + 0.1 * rng.standard_normal(33)).astype(ml_dtypes.bfloat16)
    out, lo, hi = fpconform.emulate_rmsnorm(xb, "hf-llama-rmsnorm-cuda-bf16", eps=1e-6, weight=w)
    assert out.dtype == ml_dtypes.bfloat16
    r = fpconform.audit_rmsnorm(xb, out, eps=1e-6, weight=w, platform="hf-llama-rmsnorm-cuda-bf16")
    assert r.counts["identical"] == x.size


def test_emulate_errors():
    x = np.float32([[1.0, 2.0]])
    with pytest.raises(ValueError, match="no model 'nope'.*torch-cuda-rows-f32"):
        fpconform.emulate_softmax(x, "nope")
    with pytest.raises(ValueError, match="takes bfloat16 x, not float32"):
        fpconform.emulate_rmsnorm(x, "hf-llama-rmsnorm-cuda-bf16", eps=1e-6)
    with pytest.raises(ValueError, match="no model 'torch-cuda-rows-f32' with gelu"):
        fpconform.emulate_elementwise(x, "gelu", "torch-cuda-rows-f32")
