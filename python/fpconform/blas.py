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

    The rule is fpconform's C++ library's (accumulation/blas_platform.h), the one
    ``fpconform models numpy-matmul`` prints. Raises ValueError for a negative m, k or n or a
    negative thread count.
    """
    # Imported here, not at the top: numpy_blas() alone runs in child interpreters that load this
    # file by its path with numpy only (test_blas_platforms.py).
    from . import _fpconform as _C  # pylint: disable=import-outside-toplevel

    info = numpy_blas() if info is None else info
    # The rule is C++ (accumulation/blas_platform.h), shared with `fpconform models numpy-matmul`;
    # an unknown core or thread count is "" / 1, as it has always been here.
    return _C.numpy_matmul_platform(m, k, n, str(np.dtype(dtype)), info.get("name"),
                                    info.get("core") or "", info.get("threads") or 1)
