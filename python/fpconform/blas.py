"""Which BLAS a numpy uses, and which fpconform preset models its ``np.matmul``.

An NKI or CUDA port is usually judged against ``a @ b`` in numpy, and that reference has an order
of its own, chosen by the BLAS numpy was linked with and, inside OpenBLAS, by the CPU, the thread
count and the shape. ``numpy_blas()`` says which library the running numpy calls;
``numpy_matmul_platform(m, k, n, dtype)`` names the preset that reproduces ``a @ b`` bit for bit
for that shape, or says why none does. The rules and their evidence are in
accumulation/models/SOURCES.md (section 4c); python/tests/test_blas_platforms.py checks them on
the real libraries.

>>> import numpy as np
>>> from fpconform import blas
>>> info = blas.numpy_blas()
>>> info["name"] in ("scipy-openblas", "openblas", "reference", "unknown")
True
>>> platform, why = blas.numpy_matmul_platform(256, 1000, 256, np.float32,
...     info={"name": "scipy-openblas", "core": "SkylakeX", "threads": 2})
>>> platform
'numpy-openblas-skylakex-f32'
>>> blas.numpy_matmul_platform(1, 1000, 256, np.float32, info={"name": "reference"})[0] is None
True
"""

from __future__ import annotations

import ctypes
import os
from typing import Any, Dict, Optional, Tuple

import numpy as np

__all__ = ["numpy_blas", "numpy_matmul_platform"]


def _loaded_libraries() -> list:
    """Paths of the shared libraries mapped into this process (Linux /proc/self/maps)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            paths = {line.split()[-1] for line in f if "/" in line and ".so" in line}
    except OSError:
        return []
    return sorted(paths)


def _call_str(lib: ctypes.CDLL, names: Tuple[str, ...]) -> Optional[str]:
    for name in names:
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = ctypes.c_char_p
            value = fn()
            return value.decode() if value else None
    return None


def _call_int(lib: ctypes.CDLL, names: Tuple[str, ...]) -> Optional[int]:
    for name in names:
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = ctypes.c_int
            return int(fn())
    return None


def numpy_blas() -> Dict[str, Any]:
    """The BLAS behind the imported numpy's matmul, as a dict:

    - ``name``: ``"scipy-openblas"`` (PyPI wheels' bundled OpenBLAS), ``"openblas"`` (a system
      libopenblas, e.g. Debian's python3-numpy with libopenblas0 selected), ``"reference"``
      (Debian's libblas3, the netlib reference BLAS) or ``"unknown"``;
    - ``library``: the shared library's path; ``core``: OpenBLAS's run-time kernel choice
      (``openblas_get_corename``, e.g. ``"SkylakeX"``, ``"Haswell"``); ``threads``: OpenBLAS's
      thread count; ``config``: ``openblas_get_config``.

    Found from the libraries mapped into this process after numpy's import (numpy loads its BLAS
    with its core module), so it names what this numpy really calls, not how it was built.
    """
    libs = _loaded_libraries()
    info: Dict[str, Any] = {"name": "unknown", "library": None, "core": None, "threads": None,
                            "config": None, "numpy": np.__version__}
    for path in libs:
        base = os.path.basename(path)
        if "openblas" in base:
            info["name"] = "scipy-openblas" if "scipy_openblas" in base else "openblas"
            info["library"] = path
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                break
            for suffix in ("64_", ""):
                prefix = "scipy_" if info["name"] == "scipy-openblas" else ""
                core = _call_str(lib, (f"{prefix}openblas_get_corename{suffix}",))
                if core is not None:
                    info["core"] = core
                    info["config"] = _call_str(lib, (f"{prefix}openblas_get_config{suffix}",))
                    info["threads"] = _call_int(lib, (f"{prefix}openblas_get_num_threads{suffix}",))
                    break
            return info
    for path in libs:
        # Debian's alternatives: /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 is the reference BLAS.
        if os.path.basename(path).startswith("libblas.so") and "/blas/" in os.path.realpath(path):
            info["name"] = "reference"
            info["library"] = os.path.realpath(path)
            return info
    return info


def numpy_matmul_platform(m: int, k: int, n: int, dtype: Any,
                          info: Optional[Dict[str, Any]] = None) -> Tuple[Optional[str], str]:
    """(preset, reason): the fpconform platform that reproduces ``a @ b`` of C-contiguous
    ``(m, k) @ (k, n)`` arrays of ``dtype`` (float32 or float64) bit for bit with the BLAS
    ``info`` (default: ``numpy_blas()``), or ``(None, why not)``.

    Rules (measured and verified in python/tests/test_blas_platforms.py; SOURCES.md 4c):

    - reference BLAS: ``numpy-refblas-f32``/``-f64`` for every shape with m, n >= 2 (numpy
      handles vectors, m or n = 1, through gemv/dot, not modelled);
    - OpenBLAS with the SkylakeX kernels (also chosen on AVX-512 AMD Zen 4): for float32,
      m*n*k > 1e6 takes the level-3 driver, ``numpy-openblas-skylakex-f32`` when it runs on
      several threads, ``-f32-1thread`` when on one (OPENBLAS_NUM_THREADS=1, or a shape
      level3_thread.c does not split: n < 32 and m <= 16 for float32 on 2 threads); smaller products take the direct/small kernels, modelled by
      ``-f32-small`` when n % 16 is 0 or above 8 (the direct and small kernels' last n % 16 <= 8
      columns use another order, not modelled);
      for float64, n % 8 == 0 (the last n % 8 columns of the 16x2 kernel use another order),
      m*n*k > 1e6 ``numpy-openblas-skylakex-f64`` (``-1thread``), else ``-f64-small``.
    - anything else (other OpenBLAS cores, MKL, Accelerate): no preset yet; measure it with
      ``fpconform reveal --make-probes`` and the checks in test_blas_platforms.py.
    """
    info = numpy_blas() if info is None else info
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
    # interface/gemm.c, in its order: the direct sgemm kernel, the small-matrix kernels, the
    # level-3 driver (level3_thread.c with several threads, level3.c with one).
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
    if _level3_parallel(m, n, mnk, threads, 16 if bits == "f32" else 8):
        return f"numpy-openblas-skylakex-{bits}", "the level-3 driver with several threads"
    return f"numpy-openblas-skylakex-{bits}-1thread", "the level-3 driver on one thread"


def _level3_parallel(m: int, n: int, mnk: int, threads: int, switch_ratio: int) -> bool:
    """Whether OpenBLAS runs a row-major (m, k) @ (k, n) gemm through level3_thread.c's parallel
    driver (K halved as "halve_up") or its serial fallback GEMM_LOCAL (level3.c, "halve_down"):
    interface/gemm.c gives it min(threads, MNK / 262144) threads, and level3_thread.c's CNAME
    splits the column-major m' = n by switch_ratio (SWITCH_RATIO: 16 float32, 8 float64 for
    SkylakeX, param.h) and n' = m by switch_ratio * nthreads_m; one part runs serially."""
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
