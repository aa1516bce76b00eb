"""np.matmul as a platform: the numpy-openblas-* and numpy-refblas-* presets against the real
libraries, bit for bit, on seeded random matrices of assorted shapes (SOURCES.md section 4c).

- The PyPI numpy of this interpreter (scipy-openblas): 1,000 float32 and 60 float64 matrices
  with the thread count it runs with, then 100 float32 ones in a child process run with
  OPENBLAS_NUM_THREADS=1 (float64 runs on the generic engine, ~50x slower: fewer cases). Skipped, saying so, when its OpenBLAS does not use the SkylakeX kernels.
- Debian's python3-numpy (/usr/bin/python3) with the reference BLAS: 300 float32 and 60 float64
  matrices in a child process. Skipped when that numpy or that BLAS is absent.

Each matrix's shape decides its preset through fpconform.blas.numpy_matmul_platform; shapes it
has no preset for are counted and must stay a minority. A wrong preset must be caught: the check
is run once with a mutated preset choice and must find mismatches.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import fpconform
from conftest import random_seed
from fpconform import blas

BLAS_PY = Path(blas.__file__).resolve()

# The child: loads inputs.npz, reports its numpy's BLAS (fpconform/blas.py loaded from its path,
# so the child needs numpy only) and saves every a @ b into outputs.npz.
CHILD = textwrap.dedent("""
    import importlib.util, json, sys
    import numpy as np
    spec = importlib.util.spec_from_file_location("fpconform_blas", sys.argv[1])
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    data = np.load(sys.argv[2])
    n = len([k for k in data.files if k.startswith("a")])
    out = {f"c{i}": data[f"a{i}"] @ data[f"b{i}"] for i in range(n)}
    np.savez(sys.argv[3], **out)
    print(json.dumps(mod.numpy_blas()))
""")


def random_matrix(rng, shape, dtype):
    """Values with random signs, a spread of exponents and full significands: every dot cancels
    and rounds, so a wrong order or a missing FMA shows."""
    spread = 8 if dtype == np.float32 else 30
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-spread, spread, shape))
    return x.astype(dtype)


def assorted_shapes(rng, count, level3_share=0.7):
    """(m, k, n): most with m*n*k > 1e6 (OpenBLAS's level-3 driver, K blocked at 448/384), K not
    a multiple of the blocking; the rest small (the direct and small-matrix kernels)."""
    shapes = []
    for i in range(count):
        m = int(rng.integers(2, 97)) if i % 4 == 0 else int(rng.integers(8, 97))
        n = int(rng.integers(2, 97)) if i % 4 == 0 else int(rng.integers(8, 97))
        if i < level3_share * count:
            kmin = 1_000_000 // (m * n) + 1
            k = int(rng.integers(kmin, kmin + 1500)) if i % 3 else int(rng.integers(kmin, 2 * kmin + 1000))
        else:
            k = int(rng.integers(1, 1200))
        shapes.append((m, k, n))
    return shapes


def check(pairs, outputs, info, dtype, choose=blas.numpy_matmul_platform):
    """Compare every output with the preset for its shape; returns (checked, skipped, mismatched
    descriptions)."""
    uint = np.uint32 if dtype == np.float32 else np.uint64
    checked, skipped, bad = 0, 0, []
    for (a, b), c in zip(pairs, outputs):
        platform, why = choose(a.shape[0], a.shape[1], b.shape[1], dtype, info=info)
        if platform is None:
            skipped += 1
            continue
        emu, _ = fpconform.emulate_matmul(a, b, platform)
        diff = int((emu.view(uint) != c.view(uint)).sum())
        checked += 1
        if diff:
            bad.append(f"{a.shape}@{b.shape} {platform}: {diff} of {c.size} elements differ ({why})")
    return checked, skipped, bad


def run_child(python, tmp_path, pairs, env=None):
    np.savez(tmp_path / "inputs.npz", **{f"a{i}": a for i, (a, _) in enumerate(pairs)},
             **{f"b{i}": b for i, (_, b) in enumerate(pairs)})
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    full_env = dict(os.environ)
    full_env.pop("PYTHONPATH", None)  # The child's own numpy, not this one's path.
    full_env.update(env or {})
    r = subprocess.run([python, str(script), str(BLAS_PY), str(tmp_path / "inputs.npz"),
                        str(tmp_path / "outputs.npz")], capture_output=True, text=True,
                       env=full_env, timeout=600)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout.strip().splitlines()[-1])
    out = np.load(tmp_path / "outputs.npz")
    return info, [out[f"c{i}"] for i in range(len(pairs))]


def skylakex_openblas():
    info = blas.numpy_blas()
    if info["name"] not in ("scipy-openblas", "openblas") or \
            (info["core"] or "").lower() not in ("skylakex", "cooperlake", "sapphirerapids"):
        pytest.skip(f"this numpy's BLAS is {info['name']} core {info['core']}: the "
                    "numpy-openblas-skylakex presets model OpenBLAS's SkylakeX kernels only")
    return info


def make_pairs(seed, shapes, dtype):
    rng = np.random.default_rng(seed)
    return [(random_matrix(rng, (m, k), dtype), random_matrix(rng, (k, n), dtype)) for m, k, n in shapes]


@pytest.mark.parametrize("dtype,count,seed", [(np.float32, 1000, 11), (np.float64, 60, 12)])
def test_pypi_numpy_openblas_bit_exact(dtype, count, seed):
    info = skylakex_openblas()
    seed = random_seed(seed)
    shapes = assorted_shapes(np.random.default_rng(seed), count)
    if dtype == np.float64:
        shapes = [(m, k, max(8, n // 8 * 8)) for m, k, n in shapes]  # n % 8 == 0 (see blas.py).
    pairs = make_pairs(seed + 100, shapes, dtype)
    outputs = [a @ b for a, b in pairs]
    checked, skipped, bad = check(pairs, outputs, info, dtype)
    print(f"{np.dtype(dtype)}: {checked} matrices bit-exact checks, {skipped} without a preset, "
          f"{len(bad)} mismatched; BLAS {info}")
    assert not bad, "\n".join(bad[:20])
    assert checked >= 0.8 * count, f"only {checked} of {count} shapes have a preset"


def test_pypi_numpy_openblas_one_thread(tmp_path):
    skylakex_openblas()
    seed = random_seed(21)
    rng = np.random.default_rng(seed)
    # m*n*k >= 28*512*512: past the direct kernel, so one thread means level3.c's K partition.
    shapes = []
    for _ in range(100):
        m, n = int(rng.integers(8, 97)), int(rng.integers(8, 97))
        kmin = 28 * 512 * 512 // (m * n) + 1
        shapes.append((m, int(rng.integers(kmin, kmin + 1500)), n))
    pairs = make_pairs(seed + 1, shapes, np.float32)
    info, outputs = run_child(sys.executable, tmp_path, pairs, {"OPENBLAS_NUM_THREADS": "1"})
    assert info["threads"] == 1, info
    checked, skipped, bad = check(pairs, outputs, info, np.float32)
    assert not bad, "\n".join(bad[:20])
    assert checked == len(shapes) and skipped == 0
    # The several-thread preset on the same outputs must be caught (its K halves differ).
    wrong = lambda m, k, n, dt, info: ("numpy-openblas-skylakex-f32", "mutated")
    _, _, bad = check(pairs, outputs, info, np.float32, choose=wrong)
    assert len(bad) > len(shapes) // 2, "the one-thread outputs do not tell the presets apart"


def test_wrong_preset_is_caught():
    info = skylakex_openblas()
    shapes = [(64, 1000, 64), (40, 2000, 33), (96, 700, 50)]
    pairs = make_pairs(random_seed(31), shapes, np.float32)
    outputs = [a @ b for a, b in pairs]
    for wrong in ("numpy-openblas-skylakex-f32-small", "cpu-f32-seq", "numpy-refblas-f32"):
        _, _, bad = check(pairs, outputs, info, np.float32, choose=lambda *a, **k: (wrong, "mutated"))
        assert len(bad) == len(shapes), wrong


DEBIAN_PYTHON = "/usr/bin/python3"


@pytest.mark.parametrize("dtype,count,seed", [(np.float32, 300, 41), (np.float64, 60, 42)])
def test_debian_numpy_reference_blas_bit_exact(tmp_path, dtype, count, seed):
    if not os.path.exists(DEBIAN_PYTHON) or subprocess.run(
            [DEBIAN_PYTHON, "-c", "import numpy"], capture_output=True).returncode != 0:
        pytest.skip("Debian's python3-numpy (/usr/bin/python3) is not installed")
    seed = random_seed(seed)
    rng = np.random.default_rng(seed)
    shapes = [(int(rng.integers(2, 40)), int(rng.integers(1, 1500)), int(rng.integers(2, 40)))
              for _ in range(count)]
    pairs = make_pairs(seed + 100, shapes, dtype)
    info, outputs = run_child(DEBIAN_PYTHON, tmp_path, pairs)
    if info["name"] != "reference":
        pytest.skip(f"Debian's numpy calls {info['name']} ({info['library']}), not the reference BLAS")
    checked, skipped, bad = check(pairs, outputs, info, dtype)
    print(f"Debian numpy {info['numpy']} {np.dtype(dtype)}: {checked} bit-exact checks; BLAS {info}")
    assert not bad, "\n".join(bad[:20])
    assert checked == count and skipped == 0
    _, _, bad = check(pairs, outputs, info, dtype,
                      choose=lambda m, k, n, dt, info: (f"numpy-openblas-skylakex-{'f32' if dt == np.float32 else 'f64'}-small", "mutated"))
    assert len(bad) > count // 2, "the reference BLAS outputs do not tell FMA from mul+add"


def test_platform_rules_name_existing_presets():
    names = {m["name"] for m in fpconform.models()} if isinstance(fpconform.models()[0], dict) \
        else set(fpconform.models())
    info = {"name": "scipy-openblas", "core": "SkylakeX", "threads": 2}
    seen = set()
    for m, k, n in [(256, 1000, 256), (30, 1000, 32), (16, 300, 16), (16, 300, 20)]:
        for dt in (np.float32, np.float64):
            for threads in (1, 2):
                p, why = blas.numpy_matmul_platform(m, k, n, dt, info=dict(info, threads=threads))
                assert why
                if p is not None:
                    assert p in names, p
                    seen.add(p)
    assert blas.numpy_matmul_platform(4, 10, 4, np.float16, info=info)[0] is None
    assert blas.numpy_matmul_platform(4, 10, 4, np.float32, info={"name": "reference"})[0] == "numpy-refblas-f32"
    assert len(seen) >= 5, seen


def test_reveal_names_the_openblas_preset(fpc, tmp_path):
    """fpconform reveal on PyPI numpy's np.matmul as a black box: at K = 1000 the two OpenBLAS
    drivers cut K differently (448 + 276 + 276 on several threads, 448 + 288 + 264 on one), and
    the probe matmul (1151 x 1000 x 1151) runs on this numpy's threads."""
    info = skylakex_openblas()
    probes = tmp_path / "probes"
    fpc.run("reveal", "--make-probes", "--op", "matmul", "--k", "1000", "--dtype", "float32",
            "--out", str(probes))
    a, b = np.load(probes / "A.npy"), np.load(probes / "B.npy")
    np.save(tmp_path / "out.npy", a @ b)
    text = fpc.run("reveal", "--from", str(probes), "--outputs", str(tmp_path / "out.npy")).stdout
    line = next(l for l in text.splitlines() if l.startswith("presets with this tree and behaviour"))
    expected = "numpy-openblas-skylakex-f32" if (info["threads"] or 1) > 1 else \
        "numpy-openblas-skylakex-f32-1thread"
    assert expected in line.split(), text
    other = "numpy-openblas-skylakex-f32-1thread" if expected.endswith("f32") else \
        "numpy-openblas-skylakex-f32"
    assert other not in line.split(), text
