"""fpconform.blas.numpy_matmul_platform, now C++ (accumulation/blas_platform.h), against the
pure-Python rule it replaced (kept below only as a second opinion): the same preset and the same
reason on a sweep of shapes around every threshold, dtypes, BLAS descriptions and thread counts;
the sweep must reach every reason. The CLI's `fpconform models numpy-matmul --json` gives the
same answers where the CLI is built. The real-library checks are in test_blas_platforms.py."""

import itertools
import json

import numpy as np
import pytest

from conftest import random_seed
from fpconform import blas


def old_numpy_matmul_platform(m, k, n, dtype, info):
    """blas.py's numpy_matmul_platform as it was before the rule moved to C++ (d52cab6)."""
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        return None, f"dtype {dt}: np.matmul presets exist for float32 and float64"
    bits = "f32" if dt == np.dtype(np.float32) else "f64"
    if m < 2 or n < 2:
        return None, "a vector operand (m or n = 1): numpy calls gemv or dot, whose order is not modelled"
    mnk = m * n * k
    name = info.get("name")
    if name == "reference":
        return f"numpy-refblas-{bits}", "reference BLAS gemm: one loop over k per element"
    if name not in ("scipy-openblas", "openblas"):
        return None, f"BLAS {name!r}: no preset (known: OpenBLAS SkylakeX, reference BLAS)"
    core = info.get("core") or ""
    if core.lower() not in ("skylakex", "cooperlake", "sapphirerapids"):
        return None, f"OpenBLAS core {core!r}: presets exist for the SkylakeX kernels only"
    threads = info.get("threads") or 1
    if bits == "f64" and n % 8 != 0:
        return None, "float64 with n % 8 != 0: the dgemm kernel's edge columns use an order not modelled"
    if bits == "f32":
        if threads > 1:
            direct = mnk <= 2 * 350 * 512
        else:
            direct = mnk < 28 * 512 * 512 and (n % 4 == 0 or mnk < 8 * 512 * 512)
        if (direct or mnk <= 1_000_000) and n % 16 != 0 and n % 16 <= 8:
            return None, ("the direct/small sgemm kernels with n % 16 in 1..8: their last columns "
                          "use an order not modelled")
        if direct:
            return "numpy-openblas-skylakex-f32-small", "the direct sgemm kernel: one FMA chain over k"
    if mnk <= 1_000_000:
        return f"numpy-openblas-skylakex-{bits}-small", "the small-matrix kernel: one FMA chain over k"
    if _old_level3_parallel(m, n, mnk, threads, 16 if bits == "f32" else 8):
        return f"numpy-openblas-skylakex-{bits}", "the level-3 driver with several threads"
    return f"numpy-openblas-skylakex-{bits}-1thread", "the level-3 driver on one thread"


def _old_level3_parallel(m, n, mnk, threads, switch_ratio):
    nthreads = threads if mnk / threads >= 262144 else int(mnk / 262144)
    if nthreads <= 1:
        return False
    mp, np_ = n, m
    if mp < 2 * switch_ratio:
        tm = 1
    else:
        tm = nthreads
        while mp < tm * switch_ratio:
            tm //= 2
    if np_ < switch_ratio * tm:
        tn = 1
    else:
        tn = (np_ + switch_ratio * tm - 1) // (switch_ratio * tm)
        if tm * tn > nthreads:
            tn = nthreads // tm
    return tm * tn > 1


SKYLAKEX = {"name": "scipy-openblas", "core": "SkylakeX"}
INFOS = [dict(SKYLAKEX, threads=t) for t in (None, 1, 2, 3, 4, 8, 64)] + [
    {"name": "openblas", "core": "cooperlake", "threads": 2},
    {"name": "openblas", "core": "SAPPHIRERAPIDS", "threads": 1},
    {"name": "scipy-openblas", "core": "Haswell", "threads": 2},
    {"name": "scipy-openblas", "core": None, "threads": 2},
    {"name": "reference"},
    {"name": "unknown", "core": None, "threads": None},
    {"name": "it's MKL"},
    {},
]
# Around every threshold of the rule: vectors, n % 8, n % 16 in 0 / 1..8 / 9..15, the switch
# ratios 8 and 16 and their doubles, and larger sizes.
SIZES = [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 24, 25, 31, 32, 33, 40, 47, 48, 64, 70, 71, 100, 128,
         142, 256, 1000]
KS = [0, 1, 64, 300, 512, 1000, 4096, 20000]
DTYPES = [np.float32, np.float64, np.float16]


def test_cxx_rule_agrees_with_the_old_python_rule_on_a_sweep():
    reasons = set()
    count = 0
    for info, dtype, m, n, k in itertools.product(INFOS, DTYPES, SIZES, SIZES, KS):
        got = blas.numpy_matmul_platform(m, k, n, dtype, info=info)
        want = old_numpy_matmul_platform(m, k, n, dtype, info)
        assert got == want, (m, k, n, np.dtype(dtype).name, info)
        reasons.add(want[1])
        count += 1
    # Random shapes across the direct, small and level-3 ranges, and near the mnk thresholds.
    rng = np.random.default_rng(random_seed(26))
    for _ in range(20000):
        m, n = (int(x) for x in np.exp(rng.uniform(0, np.log(3000), 2)).astype(int))
        k = int(np.exp(rng.uniform(0, np.log(50000))))
        info = INFOS[int(rng.integers(0, 7))]
        dtype = DTYPES[int(rng.integers(0, 2))]
        got = blas.numpy_matmul_platform(m, k, n, dtype, info=info)
        assert got == old_numpy_matmul_platform(m, k, n, dtype, info), (m, k, n, dtype, info)
        reasons.add(got[1])
        count += 1
    # Every reason the rule has was reached (10 fixed texts; the dtype, BLAS and core ones vary).
    fixed = {r for r in reasons if not r.startswith(("dtype ", "BLAS ", "OpenBLAS core "))}
    assert len(fixed) == 8, sorted(fixed)
    assert {r.split(":")[0] for r in reasons if r.startswith(("dtype ", "BLAS ", "OpenBLAS core "))} >= {
        "dtype float16", "BLAS None", "BLAS 'unknown'", 'BLAS "it\'s MKL"', "OpenBLAS core 'Haswell'",
        "OpenBLAS core ''"}
    assert count > 100_000


def test_huge_shapes_and_numpy_integers():
    info = dict(SKYLAKEX, threads=2)
    big = 1 << 40  # m*n*k overflows 64 bits in C++; Python's integers do not.
    assert blas.numpy_matmul_platform(big, big, big, np.float32, info=info) == \
        old_numpy_matmul_platform(big, big, big, np.float32, info)
    shape = np.zeros((256, 1000)).shape
    assert blas.numpy_matmul_platform(np.int64(shape[0]), shape[1], 256, "float32", info=info)[0] == \
        "numpy-openblas-skylakex-f32"


def test_bad_input_raises():
    with pytest.raises(ValueError, match="must be >= 0"):
        blas.numpy_matmul_platform(4, -1, 4, np.float32, info={"name": "reference"})
    with pytest.raises(ValueError, match="threads"):
        blas.numpy_matmul_platform(4, 4, 4, np.float32, info=dict(SKYLAKEX, threads=-2))


def test_cli_prints_the_same_rule(fpc):
    for (m, k, n), dtype, info in itertools.product(
            [(256, 1000, 256), (16, 4096, 16), (17, 4096, 16), (64, 64, 24), (1, 10, 10), (128, 128, 142)],
            ["float32", "float64", "float16"], INFOS[1:5] + INFOS[7:10] + INFOS[11:12]):
        args = ["models", "numpy-matmul", "--m", m, "--k", k, "--n", n, "--dtype", dtype,
                "--blas", info["name"], "--json"]
        if info.get("core"):
            args += ["--core", info["core"]]
        if info.get("threads"):
            args += ["--threads", info["threads"]]
        p = fpc.run(*args)
        got = json.loads(p.stdout)
        preset, reason = blas.numpy_matmul_platform(m, k, n, dtype, info=info)
        assert (got["preset"], got["reason"]) == (preset, reason), args
        assert p.returncode == (0 if preset else 1), args
