"""audit_matmul / audit_sum / audit_cast / compare_matmul and tolerance against `fpconform audit`
and `fpconform compare` on the same inputs (files written with np.save): the same summary text,
the same JSON document (all but the provenance, which names the files), bit for bit."""

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import fpconform
from conftest import bf16, bf16_matmul, random_seed, save


def cli_dtype_args(name, arr):
    """--X-dtype for arrays whose .npy descr does not name the format (ml_dtypes)."""
    if arr.dtype.name in ("float32", "float64", "float16", "int8", "uint8", "int32"):
        return []
    return [f"--{name}-dtype", arr.dtype.name]


def tensor_args(tmp_path, **tensors):
    args = []
    for name, arr in tensors.items():
        if arr is None:
            continue
        opt = name.replace("_", "-")
        args += [f"--{opt}", save(tmp_path, name, arr)] + cli_dtype_args(opt, arr)
    return args


def same(audit, cli_json, cli_proc):
    mine = json.loads(audit.to_json())
    for d in (mine, cli_json):
        d.pop("provenance", None)
        for side in ("ref", "port"):
            if side in d:
                d[side].pop("provenance", None)
    assert mine == cli_json
    text = cli_proc.stdout[: cli_proc.stdout.index("{\n")]
    assert str(audit) == text


@pytest.fixture
def bf16_case(rng):
    return bf16_matmul(rng, 128)


def test_audit_matmul_identical_and_broken(fpc, tmp_path, bf16_case):
    a, b, out = bf16_case
    r = fpconform.audit_matmul(a, b, out, platform="trainium2-bf16", tolerance=False)
    assert r.verdict == "pass" and r.counts["identical"] == out.size
    assert r.classes.shape == out.shape and (r.classes == fpconform.IDENTICAL).all()
    bad = out.copy()
    bad[2, 3] = -bad[2, 3]
    bad[5, 0] = np.float32(np.nan)
    r = fpconform.audit_matmul(a, b, bad, platform="trainium2-bf16", tolerance=False, max_listed=1000)
    assert r.verdict == "fail" and r.counts["unexplained"] == 2
    assert r.classes[2, 3] == fpconform.UNEXPLAINED and r.classes[5, 0] == fpconform.UNEXPLAINED
    assert [e["index"] for e in r.elements[:2]] == [(2, 3), (5, 0)]
    assert "sign" in r.elements[0]["diagnosis"]
    js, p = fpc.audit_json("audit", "matmul", *tensor_args(tmp_path, a=a, b=b, out=bad), "--platform",
                           "trainium2-bf16", "--no-tolerance", "--max-listed", "1000")
    assert p.returncode == 1
    same(r, js, p)
    # The listed elements' emulated bits are emulate_matmul's.
    for e in js["elements"]:
        assert int(e["emulated_bits"], 16) == int(out.view(np.uint32)[tuple(e["index"])])


def test_audit_matmul_with_tolerance_and_tolerance_function(fpc, tmp_path, rng):
    a = rng.standard_normal((4, 64)).astype(np.float32)
    b = rng.standard_normal((64, 5)).astype(np.float32)
    out = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)  # a different order
    r = fpconform.audit_matmul(a, b, out, platform="cpu-f32-seq", tolerance_samples=64)
    js, p = fpc.audit_json("audit", "matmul", *tensor_args(tmp_path, a=a, b=b, out=out), "--platform",
                           "cpu-f32-seq", "--tolerance-samples", "64")
    same(r, js, p)
    t = fpconform.tolerance("matmul", "float32", 64, "cpu-f32-seq", samples=64)
    pl = js["platforms"][0]
    assert (t["rtol"], t["atol"], t["ulp"], t["bound_normalized"]) == \
        (pl["rec_rtol"], pl["rec_atol"], pl["rec_ulp"], pl["rec_bn"])
    assert fpconform.tolerance("matmul", "float32", 64, "cpu-f32-seq", samples=64) == t  # cached


@pytest.mark.parametrize("strict", [False, True])
def test_audit_matmul_batched_with_c_threads(fpc, tmp_path, rng, strict):
    a = rng.standard_normal((2, 3, 40)).astype(np.float32)
    b = rng.standard_normal((40, 4)).astype(np.float32)
    c = rng.standard_normal((2, 3, 4)).astype(np.float32)
    out = (c + a @ b).astype(np.float32)
    args = ["--platform", "cpu-f32-seq,cuda-f32-fma", "--no-tolerance", "--threads", "1"] + (["--strict"] if strict else [])
    r = fpconform.audit_matmul(a, b, out, platform=["cpu-f32-seq", "cuda-f32-fma"], c=c, tolerance=False,
                               strict=strict, threads=3)
    js, p = fpc.audit_json("audit", "matmul", *tensor_args(tmp_path, a=a, b=b, out=out, c=c), *args)
    same(r, js, p)
    assert r.classes.shape == (2, 3, 4) and len(r.platforms) == 2


def test_audit_matmul_fp8_scales(fpc, tmp_path, rng):
    x = rng.standard_normal((4, 32)).astype(np.float32)
    w = rng.standard_normal((32, 3)).astype(np.float32)
    a = fpconform.cast(x * 8, "float8_e4m3fn", sat=True)
    b = fpconform.cast(w * 16, "float8_e4m3fn", sat=True)
    acc, _ = fpconform.emulate_matmul(a, b, "nvidia-h100-fp8e4m3")
    out = (acc * np.float32(1 / 128)).astype(np.float32)
    r = fpconform.audit_matmul(a, b, out, platform="nvidia-h100-fp8e4m3", scale_a=0.125, scale_b=0.0625,
                               tolerance=False)
    js, p = fpc.audit_json("audit", "matmul", *tensor_args(tmp_path, a=a, b=b, out=out), "--scale-a", "0.125",
                           "--scale-b", "0.0625", "--platform", "nvidia-h100-fp8e4m3", "--no-tolerance")
    same(r, js, p)


def test_audit_matmul_block_scales(fpc, tmp_path, rng):
    """Per-block scales (nvidia-h100-fp8e4m3-deepgemm: one per row of A and 128 K, one per 128 K
    and column of B): with power-of-two scales equal in every block the output is the unscaled
    promote128 output times s_a s_b exactly; the binding and the CLI give the same document."""
    x = rng.standard_normal((4, 300)).astype(np.float32)
    w = rng.standard_normal((300, 3)).astype(np.float32)
    a = fpconform.cast(x * 8, "float8_e4m3fn", sat=True)
    b = fpconform.cast(w * 16, "float8_e4m3fn", sat=True)
    acc, _ = fpconform.emulate_matmul(a, b, "nvidia-h100-fp8e4m3-promote128")
    same_unscaled, _ = fpconform.emulate_matmul(a, b, "nvidia-h100-fp8e4m3-deepgemm")
    np.testing.assert_array_equal(acc.view(np.uint32), same_unscaled.view(np.uint32))
    sa = np.full((4, 3), 0.125, np.float32)
    sb = np.full((3, 3), 0.0625, np.float32)
    out = (acc * np.float32(1 / 128)).astype(np.float32)
    r = fpconform.audit_matmul(a, b, out, platform="nvidia-h100-fp8e4m3-deepgemm", scale_a=sa, scale_b=sb,
                               tolerance=False)
    assert r.verdict == "pass" and r.counts["identical"] == 12, r.verdict
    js, p = fpc.audit_json("audit", "matmul", *tensor_args(tmp_path, a=a, b=b, out=out, scale_a=sa, scale_b=sb),
                           "--platform", "nvidia-h100-fp8e4m3-deepgemm", "--no-tolerance")
    same(r, js, p)
    # The scales forgotten: every element unexplained, and said so.
    r = fpconform.audit_matmul(a, b, acc, platform="nvidia-h100-fp8e4m3-deepgemm", scale_a=sa, scale_b=sb,
                               tolerance=False)
    assert r.verdict == "fail" and r.counts["unexplained"] == 12
    for e in r.elements:
        assert "block scales not applied" in e["diagnosis"], e
    with pytest.raises(ValueError, match=r"expected \[3, 3\], one per K block and column of B"):
        fpconform.audit_matmul(a, b, out, platform="nvidia-h100-fp8e4m3-deepgemm", scale_a=sa, scale_b=sb.T[:2],
                               tolerance=False)


def test_emulate_matmul_with_scales(rng):
    """emulate_matmul's scales: per K block inside the chain (DeepGEMM preset: with power-of-two
    scales equal in every block, the unscaled promote128 output times s_a s_b exactly; with
    random ones, an output the audit finds identical), per row and column after the chain, and
    cuBLASLt's C added after the scales."""
    m, k, n = 5, 300, 4
    a = fpconform.cast(rng.standard_normal((m, k)).astype(np.float32) * 8, "float8_e4m3fn", sat=True)
    b = fpconform.cast(rng.standard_normal((k, n)).astype(np.float32) * 8, "float8_e4m3fn", sat=True)
    acc, _ = fpconform.emulate_matmul(a, b, "nvidia-h100-fp8e4m3-promote128")
    out, bound = fpconform.emulate_matmul(a, b, "nvidia-h100-fp8e4m3-deepgemm", scale_a=0.125,
                                          scale_b=np.full((3, n), 0.5, np.float32))
    np.testing.assert_array_equal(out, acc * np.float32(0.0625))
    assert out.dtype == np.float32 and np.all(bound > 0)
    sa = rng.uniform(0.01, 0.1, (m, 3)).astype(np.float32)
    sb = rng.uniform(0.5, 2, (3, n)).astype(np.float32)
    out, _ = fpconform.emulate_matmul(a, b, "nvidia-h100-fp8e4m3-deepgemm", scale_a=sa, scale_b=sb)
    r = fpconform.audit_matmul(a, b, out, platform="nvidia-h100-fp8e4m3-deepgemm", scale_a=sa, scale_b=sb,
                               tolerance=False)
    assert r.counts["identical"] == m * n, r.counts
    with pytest.raises(ValueError, match=r"scale_a must have shape \(5, 3\) or one value"):
        fpconform.emulate_matmul(a, b, "nvidia-h100-fp8e4m3-deepgemm", scale_a=sa.T)
    # Per row and column: the platform's float32 scale stage.
    plain, _ = fpconform.emulate_matmul(a, b, "nvidia-h100-fp8e4m3")
    out, _ = fpconform.emulate_matmul(a, b, "nvidia-h100-fp8e4m3", scale_a=0.125, scale_b=np.full(n, 0.25, np.float32))
    np.testing.assert_array_equal(out, plain * np.float32(1 / 32))
    # cuBLASLt: out = fl32(S acc + C), C unscaled; the audit agrees.
    c = rng.standard_normal((m, n)).astype(np.float32)
    sb_col = np.linspace(0.3, 0.9, n).astype(np.float32)
    out, _ = fpconform.emulate_matmul(a, b, "nvidia-h100-fp8e4m3-cublaslt", c=c, scale_a=np.float32(0.03),
                                      scale_b=sb_col)
    r = fpconform.audit_matmul(a, b, out, platform="nvidia-h100-fp8e4m3-cublaslt", c=c, scale_a=np.float32(0.03),
                               scale_b=sb_col, tolerance=False)
    assert r.counts["identical"] == m * n, r.counts


def test_audit_sum(fpc, tmp_path, rng):
    x = rng.standard_normal((6, 300)).astype(np.float32)
    out = np.sum(x, axis=-1)
    r = fpconform.audit_sum(x, out, axis=-1, platform="numpy-sum-f32", tolerance=False)
    assert r.verdict == "pass"
    js, p = fpc.audit_json("audit", "sum", *tensor_args(tmp_path, x=x, out=out), "--axis", "-1", "--platform",
                           "numpy-sum-f32", "--no-tolerance")
    same(r, js, p)
    out0 = np.sum(x, axis=0)
    r = fpconform.audit_sum(x, out0, axis=0, platform="auto", tolerance=False)
    js, p = fpc.audit_json("audit", "sum", *tensor_args(tmp_path, x=x, out=out0), "--axis", "0", "--platform",
                           "auto", "--no-tolerance")
    same(r, js, p)


@pytest.mark.parametrize("to,rounding,sat", [("float8_e4m3fn", "rne", True), ("float8_e5m2", "rtz", False),
                                             ("bfloat16", "sr8", False)])
def test_audit_cast(fpc, tmp_path, rng, to, rounding, sat):
    x = (rng.standard_normal(500) * 100).astype(np.float32)
    rb = rng.integers(0, 256, x.size, dtype=np.uint64) if rounding.startswith("sr") else None
    q = fpconform.cast(x / np.float32(0.5), to, rounding, sat=sat, random_bits=rb)
    r = fpconform.audit_cast(x, q, rounding=rounding, sat=sat, scale=0.5, tolerance=False)
    assert r.verdict == "pass"
    js, p = fpc.audit_json("audit", "cast", *tensor_args(tmp_path, x=x, out=q), "--to", to + (":sat" if sat else ""),
                           "--rounding", rounding, "--scale", "0.5", "--no-tolerance")
    same(r, js, p)


def test_compare_matmul(fpc, tmp_path, bf16_case):
    a, b, out_trn = bf16_case
    out_gpu, _ = fpconform.emulate_matmul(a, b, "nvidia-h100-bf16")
    bad = out_trn.copy()
    bad[1, 1] *= 2
    c = fpconform.compare_matmul(a, b, out_gpu, "nvidia-h100-bf16", bad, "trainium2-bf16-envelope", tolerance=False)
    assert c.verdict == "fail" and c.inconsistent >= 1 and c.faults["port"] >= 1
    js, p = fpc.audit_json("compare", "matmul", *tensor_args(tmp_path, a=a, b=b, out_ref=out_gpu, out=bad),
                           "--platform-ref", "nvidia-h100-bf16", "--platform", "trainium2-bf16-envelope",
                           "--no-tolerance")
    same(c, js, p)


def test_audit_best_platform_auto(bf16_case):
    a, b, out = bf16_case
    r = fpconform.audit_matmul(a, b, out, platform="auto", tolerance=False)
    # Most identical elements, ties in catalog order (trainium1-bf16 computes these bits too).
    assert r.best_platform in ("trainium1-bf16", "trainium2-bf16")
    assert {p["name"]: p["counts"]["identical"] for p in r.platforms}["trainium2-bf16"] == out.size


def test_audit_errors(bf16_case, rng):
    a, b, out = bf16_case
    with pytest.raises(ValueError, match="no-such-platform"):
        fpconform.audit_matmul(a, b, out, platform="no-such-platform", tolerance=False)
    with pytest.raises(ValueError, match="bfloat16"):
        fpconform.audit_matmul(a.astype(np.float32), b.astype(np.float32), out, platform="trainium2-bf16",
                               tolerance=False)
    with pytest.raises(ValueError, match="shape|dimension"):
        fpconform.audit_matmul(a, b[:-1], out, platform="trainium2-bf16", tolerance=False)
    with pytest.raises(ValueError, match="shape"):
        fpconform.audit_matmul(a, b, out[:-1], platform="trainium2-bf16", tolerance=False)
    with pytest.raises(ValueError, match="not a format"):
        fpconform.audit_matmul(a, b, out.astype(np.complex64), platform="trainium2-bf16", tolerance=False)
    with pytest.raises(ValueError, match="expected a numpy array"):
        fpconform.audit_matmul(a, b, object(), platform="trainium2-bf16", tolerance=False)
    with pytest.raises(ValueError, match="rounding"):
        fpconform.audit_matmul(a, b, out, platform="trainium2-bf16", out_rounding="bogus", tolerance=False)
    with pytest.raises(ValueError, match="sum"):
        fpconform.audit_sum(a, out, platform="nvidia-h100-bf16", tolerance=False)
    # Bits with a format name are accepted; bits of the wrong width are refused.
    r = fpconform.audit_matmul(a.view(np.uint16), b, out, a_dtype="bfloat16", platform="trainium2-bf16",
                               tolerance=False)
    assert r.verdict == "pass"
    with pytest.raises(ValueError, match="uint8"):
        fpconform.audit_matmul(a.view(np.uint16), b, out, a_dtype="float8_e4m3fn", platform="trainium2-bf16")


def test_audit_every_input_dtype_round_trips(rng):
    """Each float format's arrays reach the audit as their own format (no silent conversion)."""
    for name in ["float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                 "float8_e5m2fnuz", "float8_e4m3", "float8_e8m0fnu"]:
        x = fpconform.cast(np.abs(rng.standard_normal(16)).astype(np.float32) + 1, name, sat=True)
        out = fpconform.exact_sum(x[None, :], -1, "float32")
        r = fpconform.audit_cast(x, x, tolerance=False)
        assert r.verdict == "pass" and r.out_format == name
        assert np.asarray(out).dtype == np.float32


def test_ctrl_c_stops_an_audit(rng):
    """A pending SIGINT (here _thread.interrupt_main) stops a long audit with KeyboardInterrupt,
    long before the audit would end (about 6 s on one thread here)."""
    import _thread
    import signal
    import threading
    import time

    a = bf16(rng.standard_normal((4096, 2048)))
    b = bf16(rng.standard_normal((2048, 256)))
    out = np.zeros((4096, 256), np.float32)
    # A process started in the background by a non-interactive shell ignores SIGINT, and
    # interrupt_main then does nothing: install Python's own handler for the test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.2, _thread.interrupt_main)
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            fpconform.audit_matmul(a, b, out, platform="trainium2-bf16", tolerance=False, threads=1)
            time.sleep(30)  # Not reached when the audit is interrupted.
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - start < 3


def test_auto_fits_a_split_k_order_no_preset_has(tmp_path, monkeypatch):
    """A bf16 output of a 5-slice split-K kernel (no preset has 5 slices): auto's fit finds the
    slices and reports it in Audit.fit with the JSON's keys and the model file's text."""
    src = Path(fpconform.models_dir())
    hidden = tmp_path / "models"
    hidden.mkdir()
    text = (src / "nvidia-h100-bf16-cublas-s1688-splitk3.toml").read_text()
    text = text.replace('name = "nvidia-h100-bf16-cublas-s1688-splitk3"', 'name = "hidden-splitk5"')
    text = text.replace("slices = 3", "slices = 5")
    (hidden / "hidden-splitk5.toml").write_text(text)
    rng = np.random.default_rng(random_seed(29))
    a = rng.standard_normal((16, 1024)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((1024, 8)).astype(ml_dtypes.bfloat16)
    monkeypatch.setenv("FPCONFORM_MODELS_DIR", str(hidden))
    out, _ = fpconform.emulate_matmul(a, b, "hidden-splitk5")
    monkeypatch.delenv("FPCONFORM_MODELS_DIR")
    r = fpconform.audit_matmul(a, b, out, platform="auto", tolerance=False)
    assert r.verdict == "pass", str(r)
    fit = r.fit
    assert fit is not None and fit["ran"], fit
    assert fit["reproduced"] == fit["checked"] == out.size, fit
    assert json.loads(r.to_json())["fit"] == fit
    # The fitted model file reproduces the output (5 slices of 64-multiples at K = 1024 are 4 of
    # 256: the fit may name either).
    fitted = tmp_path / "fitted"
    fitted.mkdir()
    (fitted / f"{fit['model_name']}.toml").write_text(fit["model"])
    monkeypatch.setenv("FPCONFORM_MODELS_DIR", str(fitted))
    again, _ = fpconform.emulate_matmul(a, b, fit["model_name"])
    assert np.array_equal(again.view(np.uint32), out.view(np.uint32))
