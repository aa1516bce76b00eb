"""torch and JAX on the CPU as reference platforms (opt-in: `FPCONFORM_WITH_TORCH=1`,
`FPCONFORM_WITH_JAX=1` make ci/venv.sh install them; each test here skips, saying so, without).

What is claimed, and checked here against the real library (SOURCES.md section 4d):
- torch.sum of a contiguous float32 vector on one thread is `torch-cpu-sum-f32` (the cascade sum
  with W = 8) bit for bit, also on AVX-512 machines; `torch-cpu-sum-f32-avx512` (W = 16) is not
  what the PyPI wheel does, and the test says so by requiring it to mismatch.
- torch.matmul, jnp.matmul and jnp.sum have no preset (their order depends on the shape); for
  them `fpconform reveal` must work end to end on the library as a black box: probes in, the
  library's outputs back, a summation tree out.
"""

import numpy as np
import pytest

import fpconform


def _torch():
    return pytest.importorskip("torch", reason="torch is not installed (opt-in: FPCONFORM_WITH_TORCH=1 bash ci/venv.sh)")


def _jax():
    pytest.importorskip("jax", reason="jax is not installed (opt-in: FPCONFORM_WITH_JAX=1 bash ci/venv.sh)")
    import jax.numpy as jnp
    return jnp


def _vector(rng, n):
    return (rng.standard_normal(n) * np.exp2(rng.integers(-10, 10, n))).astype(np.float32)


def test_torch_sum_is_the_cascade_preset():
    torch = _torch()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # Above 32768 elements more threads split the range (not modelled).
    try:
        rng = np.random.default_rng(8)
        lengths = list(range(0, 300)) + [511, 512, 513, 1000, 1024, 4095, 4096, 4097, 10000, 32768,
                                         32769, 65537, 100000]
        bad, bad_avx512 = [], 0
        for n in lengths:
            x = _vector(rng, n)
            want = torch.sum(torch.from_numpy(x)).numpy().reshape(1)
            got, _ = fpconform.emulate_sum(x[None, :], 1, "torch-cpu-sum-f32")
            if got.view(np.uint32)[0] != want.view(np.uint32)[0]:
                bad.append(n)
            other, _ = fpconform.emulate_sum(x[None, :], 1, "torch-cpu-sum-f32-avx512")
            bad_avx512 += int(other.view(np.uint32)[0] != want.view(np.uint32)[0])
    finally:
        torch.set_num_threads(threads)
    print(f"torch {torch.__version__} cpu capability {torch.backends.cpu.get_cpu_capability()}: "
          f"torch-cpu-sum-f32 bit-exact on {len(lengths) - len(bad)}/{len(lengths)}; "
          f"-avx512 mismatched {bad_avx512}")
    assert not bad, f"torch.sum differs from torch-cpu-sum-f32 at n = {bad[:20]}"
    assert bad_avx512 > len(lengths) // 2


def _reveal(fpc, tmp_path, op, dtype, run):
    """Probes for (op, K = 256, dtype) through `run`, then reveal --from; returns its text."""
    import ml_dtypes
    tmp_path.mkdir(parents=True, exist_ok=True)
    probes = tmp_path / "probes"
    fpc.run("reveal", "--make-probes", "--op", op, "--k", "256", "--dtype", dtype, "--out", str(probes))
    def load(name):
        x = np.load(probes / name)
        return x.view(ml_dtypes.bfloat16) if x.dtype.kind == "V" else x
    out = run(load("A.npy"), load("B.npy")) if op == "matmul" else run(load("X.npy"))
    np.save(tmp_path / "out.npy", np.asarray(out, dtype=np.float32))
    p = fpc.run("reveal", "--from", str(probes), "--outputs", str(tmp_path / "out.npy"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[1].startswith("tree: ("), p.stdout
    return p.stdout


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_reveal_torch_black_box(fpc, tmp_path, dtype):
    torch = _torch()
    tdt = torch.float32 if dtype == "float32" else torch.bfloat16
    def t(x):
        return torch.from_numpy(np.asarray(x, np.float32)).to(tdt)
    text = _reveal(fpc, tmp_path, "sum", dtype,
                   lambda x: torch.sum(t(x), dim=-1, dtype=torch.float32).numpy())
    if dtype == "float32":
        line = next(l for l in text.splitlines() if l.startswith("presets with this tree and behaviour"))
        assert "torch-cpu-sum-f32" in line.split(), text
    _reveal(fpc, tmp_path / "mm", "matmul", dtype,
            lambda a, b: torch.matmul(t(a).float(), t(b).float()).numpy())


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_reveal_jax_black_box(fpc, tmp_path, dtype):
    jnp = _jax()
    def j(x):
        return jnp.asarray(x)
    _reveal(fpc, tmp_path, "sum", dtype, lambda x: np.asarray(jnp.sum(j(x), axis=-1, dtype=jnp.float32)))
    _reveal(fpc, tmp_path / "mm", "matmul", dtype,
            lambda a, b: np.asarray(jnp.matmul(j(a), j(b), preferred_element_type=jnp.float32)))
