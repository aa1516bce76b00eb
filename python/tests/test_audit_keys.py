"""The Python Audit and Compare objects and the --json document have the same keys and values
(issue 26 §1; reports/AUDIT.md "The Python objects"). For an audit of every op family (matmul
with the tolerance rule and with the fit, sum, cast with the stochastic-rounding test,
elementwise, the axis ops, the composite ops' compare, attention with its LSE and aggregate gate,
and compare of matmul and attention, with both LSEs too), every key of to_json(), at the top level and inside every
section, must be the attribute (top level) or dict key (inside) of the same name with the same
value. The keys are read from the document itself, so a key the JSON gains is checked without
editing this test.

"The same value" is the documented Python form: a number that the file writes as "nan", "inf"
or "-inf" is that float; an element's bits (keys ending in _bits), which the file writes as hex
in the output format, are the integer; a list is a tuple under the keys index, shape,
max_abs_index and max_rel_index. Audit.fit and Audit.lse are the file's objects exactly.
Every other difference fails. The older names are checked as aliases of the JSON's keys."""

import json
import math

import numpy as np
import pytest

import fpconform
from conftest import bf16, bf16_matmul, save

TUPLE_KEYS = {"index", "shape", "max_abs_index", "max_rel_index"}
NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
# The extra keys of a platform dict (older names, AUDIT.md), as (alias, JSON key or None).
PLATFORM_ALIASES = {"rtol": "rec_rtol", "atol": "rec_atol", "ulp": "rec_ulp", "bound_normalized": "rec_bn",
                    "counts": None, "model_hash": None}
CLASS_KEYS = ("identical", "within_bound", "within_tolerance", "unexplained")


def same_value(py, js, key, path, exact=False):
    """Asserts that the Python value `py` is the JSON value `js` of `key` in the Python form (or
    exactly, `exact`), recursively; `path` names the place in the message."""
    if isinstance(js, dict):
        assert isinstance(py, dict), f"{path}: a dict in the JSON, {type(py).__name__} in Python"
        extra = set(py) - set(js)
        if key == "platforms" and not exact:
            assert extra <= set(PLATFORM_ALIASES), f"{path}: keys not in the JSON: {sorted(extra)}"
            for alias, of in PLATFORM_ALIASES.items():
                if of is not None:
                    same_value(py[alias], js[of], of, f"{path}[{alias!r}]")
            assert py["counts"] == {c: js[c] for c in CLASS_KEYS}, path
        else:
            assert not extra, f"{path}: keys not in the JSON: {sorted(extra)}"
        assert list(js) == [k for k in py if k in js], f"{path}: another key order"
        for k, v in js.items():
            assert k in py, f"{path}: the JSON's key {k!r} is missing"
            same_value(py[k], v, k, f"{path}[{k!r}]", exact)
        return
    if isinstance(js, list):
        want = tuple if key in TUPLE_KEYS and not exact else list
        assert type(py) is want, f"{path}: {want.__name__} expected, got {type(py).__name__}"
        assert len(py) == len(js), path
        for i, (p, j) in enumerate(zip(py, js)):
            # A list of dicts passes its key on (platforms' entries, elements, ...).
            same_value(p, j, key if isinstance(j, dict) else None, f"{path}[{i}]", exact)
        return
    if isinstance(js, str) and not exact:
        if key is not None and key.endswith("_bits"):
            assert type(py) is int and py == int(js, 16), f"{path}: {py!r} is not the bits {js}"
            return
        if js in NON_FINITE and isinstance(py, float):
            want = NON_FINITE[js]
            assert (math.isnan(py) and math.isnan(want)) or py == want, f"{path}: {py!r} vs {js!r}"
            return
    assert type(py) is type(js), f"{path}: {type(py).__name__} vs the JSON's {type(js).__name__} ({py!r}, {js!r})"
    assert py == js, f"{path}: {py!r} vs the JSON's {js!r}"


def check_audit(a, path="audit"):
    """Every key of a's document is a's attribute of that name with the same value; the aliases
    are the JSON's values; to_dict() is json.loads(to_json())."""
    doc = a.to_dict()
    assert doc == json.loads(a.to_json())
    assert doc["fpconform_audit"] == 1
    for key, value in doc.items():
        assert hasattr(a, key), f"{path}: the JSON's key {key!r} is not an attribute"
        if key == "soundness":  # Older value: the sentences; the object is to_dict()["soundness"].
            same_value(a.soundness, value["sentences"], "sentences", f"{path}.soundness")
        elif key in ("fit", "lse"):  # The file's object, exactly.
            same_value(getattr(a, key), value, key, f"{path}.{key}", exact=True)
        else:
            same_value(getattr(a, key), value, key, f"{path}.{key}")
    for key in ("sr_test", "aggregate", "fit", "lse"):  # Absent sections are None.
        if key not in doc:
            assert getattr(a, key) is None, f"{path}.{key}"
    # The older names are the JSON's values.
    same_value(a.out_format, doc["output_format"], "output_format", f"{path}.out_format")
    same_value(a.out_shape, doc["shape"], "shape", f"{path}.out_shape")
    for key in ("mismatched", "max_abs_diff", "max_abs_allowed", "max_rel_diff", "max_rel_allowed"):
        same_value(getattr(a, key), doc["summary"][key], key, f"{path}.{key}")
    assert a.passed == (doc["verdict"] == "pass")
    return doc


def check_compare(c):
    doc = c.to_dict()
    assert doc == json.loads(c.to_json())
    assert doc["fpconform_compare"] == 1
    for key, value in doc.items():
        assert hasattr(c, key), f"compare: the JSON's key {key!r} is not an attribute"
        if key in ("ref", "port"):  # Audit objects: their documents are these.
            assert check_audit(getattr(c, key), f"compare.{key}") == value
        elif key == "listed":  # Older value: (index, at_fault) tuples.
            assert c.listed == [(tuple(e["index"]), e["at_fault"]) for e in value]
        else:
            same_value(getattr(c, key), value, key, f"compare.{key}")
    same_value(c.faults, doc["at_fault"], "at_fault", "compare.faults")
    assert c.passed == (doc["verdict"] == "pass")
    return doc


@pytest.fixture
def mm(rng):
    a, b, out = bf16_matmul(rng, 96)
    bad = out.copy()
    bad[2, 3] = -bad[2, 3]
    bad[5, 0] = np.float32(np.nan)
    bad[7, 5] = np.float32(np.inf)
    return a, b, out, bad


def test_matmul_keys(mm, rng):
    a, b, out, bad = mm
    check_audit(fpconform.audit_matmul(a, b, out, platform="trainium2-bf16", tolerance=False))
    doc = check_audit(fpconform.audit_matmul(a, b, bad, platform=["trainium2-bf16", "trainium1-bf16"],
                                             tolerance_samples=16, max_listed=20))
    # Not vacuous: the values the Python form writes differently are there.
    assert len(doc["platforms"]) == 2 and doc["platforms"][0]["rec_rtol"] > 0
    assert any(e["actual"] == "nan" for e in doc["elements"])
    assert any(e["error_over_bound"] in ("inf", "nan") for e in doc["elements"])
    af = rng.standard_normal((4, 48)).astype(np.float32)
    bf = rng.standard_normal((48, 5)).astype(np.float32)
    out64 = (af.astype(np.float64) @ bf.astype(np.float64)).astype(np.float32)
    doc = check_audit(fpconform.audit_matmul(af, bf, out64, platform="cpu-f32-seq", tolerance_samples=16))
    assert doc["soundness"]["accepted_fractions"] and doc["soundness"]["sentences"] is not None


def test_matmul_fit_keys(mm):
    a, b, _, bad = mm
    doc = check_audit(fpconform.audit_matmul(a, b, bad, platform="auto", tolerance=False, threads=2))
    assert "fit" in doc


def test_sum_keys(rng):
    x = rng.standard_normal((6, 300)).astype(np.float32)
    out = np.sum(x, axis=-1, dtype=np.float32)
    out[1] *= 2
    doc = check_audit(fpconform.audit_sum(x, out, axis=-1, platform="numpy-sum-f32", tolerance_samples=16))
    assert doc["summary"]["max_abs_index"] and doc["k"] == 300


def test_cast_keys(rng):
    x = (rng.standard_normal(500) * 4).astype(np.float32)
    check_audit(fpconform.audit_cast(x, fpconform.cast(x, "float8_e4m3fn", sat=True), sat=True))
    doc = check_audit(fpconform.audit_cast(x, fpconform.cast(x, "bfloat16", rounding="rtz"), rounding="sr8"))
    assert "sr_test" in doc and doc["verdict"] == "fail"


def test_elementwise_and_axis_keys(rng):
    x = bf16(rng.standard_normal((4, 64)))
    y = np.asarray(fpconform.exact_elementwise(x, "gelu")).copy()
    y[0, 1] = -y[0, 1]
    check_audit(fpconform.audit_elementwise(x, y, "gelu"))
    check_audit(fpconform.audit_softmax(x, fpconform.exact_softmax(x, axis=-1)))
    w = bf16(1 + 0.1 * rng.standard_normal(64))
    check_audit(fpconform.audit_rmsnorm(x, fpconform.exact_rmsnorm(x, 1e-6, weight=w), eps=1e-6, weight=w))
    xf = (rng.standard_normal((8, 64)) + 30).astype(np.float32)
    bias = (0.1 * rng.standard_normal(64)).astype(np.float32)
    wf = (1 + 0.1 * rng.standard_normal(64)).astype(np.float32)
    yl = fpconform.exact_layernorm(xf, 1e-5, weight=wf, bias=bias)
    check_audit(fpconform.audit_layernorm(xf, yl, eps=1e-5, weight=wf, bias=bias))


def test_composite_compare_keys(rng):
    x = bf16(rng.standard_normal((4, 64)))
    ref = np.asarray(fpconform.exact_elementwise(x, "silu"))
    port = ref.copy()
    port[1, 2] = -port[1, 2]
    check_compare(fpconform.compare_elementwise(x, ref, "correctly-rounded-bf16", port, "correctly-rounded-bf16",
                                                "silu"))
    w = bf16(1 + 0.1 * rng.standard_normal(64))
    y = fpconform.exact_rmsnorm(x, 1e-6, weight=w)
    plat = fpconform.audit_rmsnorm(x, y, eps=1e-6, weight=w).platforms[0]["name"]
    check_compare(fpconform.compare_rmsnorm(x, y, plat, y, plat, eps=1e-6, weight=w))


def test_matmul_compare_keys(mm):
    a, b, out, bad = mm
    doc = check_compare(fpconform.compare_matmul(a, b, out, "trainium2-bf16", bad, "trainium1-bf16",
                                                 tolerance=False))
    assert doc["listed"] and doc["inconsistent"] > 0


def test_attention_keys(fpc, tmp_path, heads):
    q, k, v = heads
    o = np.asarray(fpconform.exact_attention(q, k, v, out_dtype="bfloat16"))
    qf, kf = q.astype(np.float32), k.astype(np.float32)
    s = np.einsum("...id,...jd->...ij", qf, kf)
    m = s.max(-1)
    sc = np.float32(1 / np.sqrt(32))
    lse = (m * sc + np.log(np.exp((s - m[..., None]) * sc).sum(-1, dtype=np.float32))).astype(np.float32)
    lse[0, 3] += np.float32(1e-2)
    bad = o.copy()
    bad[1, 5, 7] = -bad[1, 5, 7]
    doc = check_audit(fpconform.audit_attention(q, k, v, bad, "flash-attention2-cuda-bf16", lse=lse, threads=2))
    assert "aggregate" in doc and "lse" in doc and doc["lse"]["counts"]["unexplained"] >= 1
    check_audit(fpconform.audit_attention(q, k, v, o, "auto", threads=2))
    doc = check_compare(fpconform.compare_attention(q, k, v, o, "correctly-rounded", bad,
                                                    "flash-attention2-cuda-bf16", threads=2))
    assert "lse" not in doc
    # Both LSEs: the compare's "lse" object (Compare.lse), the same document as the CLI's.
    good = lse.copy()
    good[0, 3] -= np.float32(1e-2)
    fa2 = "flash-attention2-cuda-bf16"
    c = fpconform.compare_attention(q, k, v, o, fa2, bad, fa2, lse_ref=good, lse=lse, threads=2)
    doc = check_compare(c)
    assert doc["lse"]["inconsistent"] >= 1 and doc["lse"]["listed"] and "lse" in doc["port"]
    bits = {n: save(tmp_path, n, np.asarray(t).view(np.uint16)) for n, t in (("q", q), ("k", k), ("v", v),
                                                                            ("o", o), ("bad", bad))}
    js, p = fpc.audit_json("compare", "attention", "--q", bits["q"], "--q-dtype", "bfloat16", "--k", bits["k"],
                           "--k-dtype", "bfloat16", "--v", bits["v"], "--v-dtype", "bfloat16", "--out-ref",
                           bits["o"], "--out-ref-dtype", "bfloat16", "--lse-ref", save(tmp_path, "lse_ref", good),
                           "--platform-ref", fa2, "--out", bits["bad"], "--out-dtype", "bfloat16", "--lse",
                           save(tmp_path, "lse", lse), "--platform", fa2)
    assert p.returncode == 1, p.stderr
    # The same document but for the file names (provenance, the LSE notes).
    for side in ("ref", "port"):
        d, j = doc.pop(side), js.pop(side)
        assert d["lse"] == j["lse"] and d["elements"] == j["elements"] and d["counts"] == j["counts"]
    assert doc == js
