"""models, model, emulate_matmul / emulate_sum, exact_matmul / exact_sum against the CLI
(`fpconform models`, `models show`, `calc` mdot / msum / dot / sum), bit for bit."""

import ml_dtypes
import numpy as np
import pytest

import fpconform

UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def bits(x):
    x = np.asarray(x)
    return x.view(UINT[x.itemsize]).astype(np.uint64)


def h(v):
    return hex(int(v))


def inputs(rng, fmt, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    return x if fmt == "float32" else fpconform.cast(x, fmt, sat=True)


def test_models_against_cli(fpc):
    out = fpc.run("models").stdout.splitlines()
    assert fpconform.models() == [ln.split()[0] for ln in out]


@pytest.mark.parametrize("name", ["nvidia-h100-bf16", "trainium2-bf16", "cpu-f32-seq", "trainium2-bf16-envelope"])
def test_model_against_cli_show(fpc, name):
    show = fpc.run("models", "show", name).stdout
    m = fpconform.model(name)
    assert f"name: {m['name']}\n" in show and f"description: {m['description']}\n" in show
    if "envelope" in m:
        assert f"envelope: {' '.join(m['envelope'])}\n" in show
        return
    assert f"operations: {' '.join(m['operations'])}\n" in show
    for key, value in m["parameters"].items():
        assert f"  {key} = {value}" in show
        if key in m["provenance"]:
            assert f"    source: {m['provenance'][key]}\n" in show


def test_model_errors():
    with pytest.raises(ValueError, match="unknown model 'no-such-gpu'.*valid"):
        fpconform.model("no-such-gpu")
    with pytest.raises(ValueError, match="not a model name"):
        fpconform.model("../etc/passwd")


MATMUL_PLATFORMS = ["cpu-f32-seq", "cuda-f32-fma", "nvidia-h100-bf16", "nvidia-a100-tf32", "trainium2-bf16",
                    "trainium2-bf16-pairwise", "nvidia-h100-fp8e4m3", "nvidia-h100-fp8e4m3-promote128",
                    "trainium2-fp8e4m3", "cuda-f32-splitk4"]


@pytest.mark.parametrize("platform", MATMUL_PLATFORMS)
def test_emulate_matmul_against_calc_mdot(fpc, rng, platform):
    m = fpconform.model(platform)
    m_, k, n = 3, 96, 4
    a = inputs(rng, m["input_a"], (m_, k))
    b = inputs(rng, m["input_b"], (k, n))
    c = rng.standard_normal((m_, n)).astype(np.float32) if m["accumulator"] == "float32" else None
    out, bound = fpconform.emulate_matmul(a, b, platform, c=c)
    assert out.shape == (m_, n) and bound.shape == (m_, n) and (bound >= 0).all()
    lines = []
    for i in range(m_):
        for j in range(n):
            cc = h(bits(c)[i, j]) if c is not None else "0x0"
            lines.append(f"mdot {platform} {k} " + " ".join(map(h, bits(a)[i])) + " " +
                         " ".join(map(h, bits(b)[:, j])) + " " + cc)
    assert bits(out).reshape(-1).tolist() == fpc.calc(lines)
    assert out.dtype == (np.float32 if m["output"] == "float32" else np.dtype(getattr(ml_dtypes, m["output"])))


@pytest.mark.parametrize("platform", ["numpy-sum-f32", "torch-cuda-sum-f32", "cpu-f32-seq", "kahan-f32"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_emulate_sum_against_calc_msum(fpc, rng, platform, axis):
    x = rng.standard_normal((5, 37)).astype(np.float32) * np.float32(1000)
    out, bound = fpconform.emulate_sum(x, axis, platform)
    xs = np.moveaxis(x, axis, -1)
    lines = [f"msum {platform} {xs.shape[-1]} " + " ".join(map(h, bits(row))) for row in xs.reshape(-1, xs.shape[-1])]
    assert out.shape == xs.shape[:-1] and bound.shape == out.shape
    assert bits(out).reshape(-1).tolist() == fpc.calc(lines)


@pytest.mark.parametrize("fa,fb,out_dtype", [("float32", "float32", "float32"), ("bfloat16", "bfloat16", "float32"),
                                             ("float8_e4m3fn", "float8_e4m3fn", "bfloat16"),
                                             ("float16", "float16", "float16")])
@pytest.mark.parametrize("rounding", ["rne", "rtz", "rup"])
def test_exact_matmul_against_calc_dot(fpc, rng, fa, fb, out_dtype, rounding):
    a, b = inputs(rng, fa, (3, 50)), inputs(rng, fb, (50, 2))
    got = fpconform.exact_matmul(a, b, out_dtype, rounding)
    assert fa == fb  # calc's dot takes one input format
    lines = [f"dot {fa} {out_dtype} {rounding} 50 " + " ".join(map(h, bits(a)[i])) + " " +
             " ".join(map(h, bits(b)[:, j])) for i in range(3) for j in range(2)]
    assert bits(got).reshape(-1).tolist() == fpc.calc(lines)


def test_exact_sum_against_calc_sum(fpc, rng):
    x = (rng.standard_normal((4, 3, 20)) * 1e3).astype(np.float32)
    for axis in (0, 1, 2):
        got = fpconform.exact_sum(x, axis, "bfloat16", "rna")
        xs = np.moveaxis(x, axis, -1)
        lines = [f"sum float32 bfloat16 rna {xs.shape[-1]} " + " ".join(map(h, bits(r)))
                 for r in xs.reshape(-1, xs.shape[-1])]
        assert got.shape == xs.shape[:-1]
        assert bits(got).reshape(-1).tolist() == fpc.calc(lines)


def test_exact_is_correctly_rounded_and_mixed_formats():
    a = np.float32([[1.0, 2**-24, 2**-24]])
    b = np.float32([[1.0], [1.0], [1.0]])
    assert fpconform.exact_matmul(a, b).tolist() == [[1.0 + 2**-23]]
    # Mixed formats: bfloat16 a, float8_e4m3fn b.
    a16 = fpconform.cast(np.float32([[1.5, -2.0]]), "bfloat16")
    b8 = fpconform.cast(np.float32([[2.0], [0.5]]), "float8_e4m3fn")
    assert fpconform.exact_matmul(a16, b8, "float32").tolist() == [[2.0]]


def test_emulate_errors(rng):
    a = rng.standard_normal((2, 8)).astype(np.float32)
    with pytest.raises(ValueError, match="takes bfloat16"):
        fpconform.emulate_matmul(a, a.T.copy(), "nvidia-h100-bf16")
    with pytest.raises(ValueError, match="inner dimensions"):
        fpconform.emulate_matmul(a, a, "cpu-f32-seq")
    with pytest.raises(ValueError, match="unknown model 'nope'"):
        fpconform.emulate_matmul(a, a.T.copy(), "nope")
    with pytest.raises(ValueError, match="envelope"):
        fpconform.emulate_matmul(fpconform.cast(a, "bfloat16"), fpconform.cast(a.T.copy(), "bfloat16"),
                                 "trainium2-bf16-envelope")
    with pytest.raises(ValueError, match="2-D"):
        fpconform.emulate_matmul(a[0], a.T.copy(), "cpu-f32-seq")
    with pytest.raises(ValueError, match="out of range"):
        fpconform.emulate_sum(a, 2, "numpy-sum-f32")
    with pytest.raises(ValueError, match="not a format"):
        fpconform.exact_sum(np.array(["x"]))
    with pytest.raises(ValueError, match="integer format"):
        fpconform.exact_sum(np.int8([1, 2]))
    with pytest.raises(ValueError, match="rounding 'rnx'"):
        fpconform.exact_sum(a, rounding="rnx")


def test_bad_model_file_message(tmp_path, monkeypatch):
    (tmp_path / "broken.toml").write_text('name = "broken"\ndescription = "x"\n[inputs]\na = "float8_e4m3x"\n')
    monkeypatch.setenv("FPCONFORM_MODELS_DIR", str(tmp_path))
    with pytest.raises(ValueError, match=r"broken\.toml.*float8_e4m3x"):
        fpconform.model("broken")
    with pytest.raises(ValueError, match=r"broken\.toml"):
        fpconform.emulate_sum(np.float32([[1.0]]), -1, "broken")
    assert fpconform.models() == ["broken"] or "broken" in fpconform.models()


def test_byte_order_and_layout_do_not_change_bits(rng):
    a = rng.standard_normal((3, 40)).astype(np.float32)
    b = rng.standard_normal((40, 2)).astype(np.float32)
    want, _ = fpconform.emulate_matmul(a, b, "cpu-f32-seq")
    big, _ = fpconform.emulate_matmul(a.astype(">f4"), np.asfortranarray(b), "cpu-f32-seq")
    assert bits(big).tolist() == bits(want).tolist()
