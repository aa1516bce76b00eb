"""fpconform: bit-exact number formats, hardware accumulation models, exact oracles and audits of
a kernel's outputs, from Python.

Every function here is a thin front end of fpconform's C++ libraries (the same code as the
``fpconform`` command): arrays are recognized by their dtype (numpy, ml_dtypes, torch), passed as
their bits (viewed as unsigned integers of their width, with the format's name beside them) and
the results come back as numpy arrays, as ml_dtypes arrays where ml_dtypes has the format.

>>> import numpy as np, ml_dtypes, fpconform
>>> q = fpconform.cast(np.array([1.0, 464.0, -480.0], np.float32), "float8_e4m3fn")
>>> print(q, q.dtype, [hex(v) for v in q.view(np.uint8)])
[1 448 nan] float8_e4m3fn ['0x38', '0x7e', '0xff']
>>> a = np.ones((2, 128), ml_dtypes.bfloat16); b = np.ones((128, 3), ml_dtypes.bfloat16)
>>> out, bound = fpconform.emulate_matmul(a, b, "trainium2-bf16")
>>> print(out.dtype, out[0].tolist())
float32 [128.0, 128.0, 128.0]
>>> r = fpconform.audit_matmul(a, b, out, platform="trainium2-bf16", tolerance=False)
>>> print(r.verdict)
pass

An audit's attributes are its JSON's keys (reports/AUDIT.md "The Python objects"):

>>> r.output_format, r.shape, r.summary["mismatched"], r.to_dict()["shape"]
('float32', (2, 3), 0, [2, 3])

Errors (bad dtype, shape, unknown platform, bad model file) are ValueError with the C++
library's message; nothing here crashes the interpreter.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence, Tuple, Union

import numpy as np

from . import _fpconform as _C

try:  # ml_dtypes is optional: without it bfloat16 / float8 results come back as unsigned bits.
    import ml_dtypes as _ml
except ImportError:  # pragma: no cover - the venv has it
    _ml = None

__version__ = _C.__version__
__all__ = [
    "Audit", "Compare", "CLASS_NAMES", "IDENTICAL", "WITHIN_BOUND", "WITHIN_TOLERANCE", "UNEXPLAINED",
    "formats", "cast", "ulp", "ulp_distance", "models", "model", "emulate_matmul", "emulate_sum",
    "exact_matmul", "exact_sum", "tolerance", "audit_matmul", "audit_sum", "audit_cast",
    "compare_matmul", "models_dir", "sweep_file", "audit_elementwise", "composite_models_dir",
    "audit_softmax", "audit_log_softmax", "audit_rmsnorm", "audit_layernorm", "dtype_name", "blas",
    "exact_elementwise", "exact_softmax", "exact_log_softmax", "exact_rmsnorm", "exact_layernorm",
    "emulate_elementwise", "emulate_softmax", "emulate_log_softmax", "emulate_rmsnorm", "emulate_layernorm",
    "compare_elementwise", "compare_softmax", "compare_log_softmax", "compare_rmsnorm", "compare_layernorm",
    "audit_attention", "exact_attention", "attention_models_dir", "compare_attention",
    "emulate_attention",
]

#: The result of an audit. Every top-level key of its JSON (``to_json()``, reports/AUDIT.md) is an
#: attribute of the same name, built by the same serializer; inside a section, dict keys are the
#: JSON's. ``to_dict()`` is ``json.loads(to_json())``; an example in this module's docstring.
Audit = _C.Audit
#: Two platforms' outputs on the same inputs; attributes as Audit's (``compare.at_fault``, ...).
Compare = _C.Compare
#: Class codes of Audit.classes, in order: identical, within_bound, within_tolerance, unexplained.
CLASS_NAMES: Tuple[str, ...] = tuple(_C.CLASS_NAMES)
IDENTICAL, WITHIN_BOUND, WITHIN_TOLERANCE, UNEXPLAINED = range(4)

_DATA = Path(__file__).resolve().parent / "data"


def _data_path(name: str) -> str:
    """The shipped data item `name` (its name in data/): its environment variable, else the
    package's data/<name> when the package has data/ (an installed wheel), else the source tree's
    copy (a build tree; base/data_dir.h)."""
    return _C.data_path(name, str(_DATA) if _DATA.is_dir() else "")


def models_dir() -> str:
    """The model presets directory: $FPCONFORM_MODELS_DIR, else the package's data/models (an
    installed wheel), else the source tree's accumulation/models (a build tree)."""
    return _data_path("models")


def composite_models_dir() -> str:
    """The elementwise implementation models: $FPCONFORM_COMPOSITE_MODELS_DIR, else the package's
    data/composite-models (an installed wheel), else the source tree's composite/models."""
    return _data_path("composite-models")


def sweep_file() -> str:
    """The sweep file whose seed and factor the tolerance rule uses: $FPCONFORM_SWEEP_FILE, else
    the standard sweep shipped with the package (or the source tree's reports/standard_sweep.toml)."""
    return _data_path("standard_sweep.toml")


# ---- dtypes and bits ----

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_NUMPY = {"float64", "float32", "float16", "int8", "uint8", "int32", "int16", "uint16", "uint32", "int64"}
_TORCH = {  # torch dtype name -> (format name, integer view dtype name)
    "float64": ("float64", None), "float32": ("float32", None), "float16": ("float16", None),
    "bfloat16": ("bfloat16", "int16"), "float8_e4m3fn": ("float8_e4m3fn", "uint8"),
    "float8_e5m2": ("float8_e5m2", "uint8"), "float8_e4m3fnuz": ("float8_e4m3fnuz", "uint8"),
    "float8_e5m2fnuz": ("float8_e5m2fnuz", "uint8"), "float8_e8m0fnu": ("float8_e8m0fnu", "uint8"),
    "int8": ("int8", None), "uint8": ("uint8", None), "int32": ("int32", None),
    "int16": ("int16", None), "int64": ("int64", None),
}


def dtype_name(dtype: Any) -> str:
    """The fpconform format name of a numpy / ml_dtypes / torch dtype or a name.

    >>> import numpy as np, ml_dtypes, fpconform
    >>> fpconform.dtype_name(np.float32), fpconform.dtype_name(ml_dtypes.float8_e4m3)
    ('float32', 'float8_e4m3')
    """
    if isinstance(dtype, str):
        return dtype
    if type(dtype).__module__.startswith("torch"):
        name = str(dtype).replace("torch.", "")
        if name not in _TORCH:
            raise ValueError(f"torch dtype {dtype} has no fpconform format")
        return _TORCH[name][0]
    try:
        return np.dtype(dtype).name
    except TypeError as e:
        raise ValueError(f"{dtype!r} is not a dtype") from e


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach")


def _numpy(x: Any, what: str) -> Tuple[np.ndarray, Optional[str]]:
    """x as a numpy array, and the format name when the array's dtype cannot carry it (torch)."""
    if _is_torch(x):
        name = str(x.dtype).replace("torch.", "")
        if name not in _TORCH:
            raise ValueError(f"{what}: torch dtype {x.dtype} has no fpconform format")
        fmt, view = _TORCH[name]
        t = x.detach().cpu().contiguous()
        if view is not None:  # torch's .numpy() refuses bfloat16 and the float8 types: their bits.
            import torch

            return t.view(getattr(torch, view)).numpy().view(_UINT[t.element_size()]), fmt
        return t.numpy(), None
    if isinstance(x, np.ndarray):
        return x, None
    if isinstance(x, (list, tuple, float, int, np.generic)):
        return np.asarray(x), None
    raise ValueError(f"{what}: expected a numpy array (or ml_dtypes / torch), got {type(x).__name__}")


def _bits(x: Any, what: str, dtype: Any = None) -> Tuple[str, np.ndarray]:
    """(format name, C-contiguous unsigned-integer view of x's bits): zero copy for contiguous
    arrays. `dtype` names the format of an array of raw bits (unsigned integers of its width)."""
    arr, fmt = _numpy(x, what)
    if fmt is None:
        fmt = arr.dtype.name
        if fmt not in _FORMAT_NAMES and fmt not in _NUMPY:
            raise ValueError(f"{what}: dtype {arr.dtype} is not a format fpconform knows "
                             f"(see fpconform.formats())")
    if dtype is not None:
        want = dtype_name(dtype)
        if want != fmt:
            width = _C.tensor_dtype_bytes(want)
            if width is None:
                raise ValueError(f"{what}: unknown dtype '{want}' (see fpconform.formats())")
            if arr.dtype.kind != "u" or arr.dtype.itemsize != width:
                raise ValueError(f"{what}: the array is {arr.dtype}, not {want}; pass {want}'s bits as "
                                 f"uint{8 * width} to reinterpret them")
            fmt = want
    if arr.dtype.byteorder == ">":  # Bits cross little-endian (every supported host).
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")
    return fmt, arr.view(_UINT[arr.dtype.itemsize])


def _from_bits(name: str, bits: np.ndarray) -> np.ndarray:
    """Bits of format `name` as an array of that dtype: ml_dtypes where it has the format, numpy's
    own types, float32 for tfloat32 (its container); else the unsigned bits as they are."""
    if name in _NUMPY:
        return bits.view(np.dtype(name))
    if name == "tfloat32":
        return bits.view(np.float32)
    if _ml is not None and hasattr(_ml, name):
        return bits.view(getattr(_ml, name))
    return bits


_FORMATS = _C.formats()
_FORMAT_NAMES = {f["name"] for f in _FORMATS}


def formats() -> list:
    """The format table, one dict per format in `fpconform formats` order (limits as bits).

    >>> import fpconform
    >>> f = {f["name"]: f for f in fpconform.formats()}["float8_e4m3fn"]
    >>> f["precision"], f["emax"], hex(f["max_finite_bits"]), f["has_inf"]
    (4, 8, '0x7e', False)
    """
    return [dict(f) for f in _FORMATS]


def cast(x: Any, to: Any, rounding: str = "rne", sat: bool = False, ftz: bool = False,
         random_bits: Any = None) -> np.ndarray:
    """Bit-exact conversion of a whole array into format `to` (one rounding, IEEE 754 / OCP rules).

    rounding: rne rna rtz rup rdn rto or sr<k> (stochastic: random_bits gives one uint64 per
    element, of which the low k bits are used: away from zero iff top k discarded bits + r >= 2^k).
    sat: overflow gives +-max finite (and +-Inf converts to it). ftz: tiny results flush to zero.
    float32 -> bfloat16 / float16 / float8_e4m3fn / float8_e5m2 under rne take the vectorized
    paths proven bit-identical to the general one. Returns an ml_dtypes array where one exists.

    >>> import numpy as np, fpconform
    >>> x = np.array([1.0, 1.00390625, 3e38, -1e-40], np.float32)
    >>> print(fpconform.cast(x, "bfloat16"))  # ties to even; -1e-40 is a bfloat16 subnormal
    [1 1 3.00406e+38 -9.18355e-41]
    >>> print(fpconform.cast(np.float32([480.0]), "float8_e4m3fn", sat=True))
    [448]
    >>> print(fpconform.cast(np.float32([1.0 + 2**-9]), "bfloat16", "sr8", random_bits=[255]))
    [1.00781]
    """
    name, b = _bits(x, "cast: x")
    to = dtype_name(to)
    rb = None
    if random_bits is not None:
        rb = np.ascontiguousarray(np.asarray(random_bits).astype(np.uint64, copy=False).reshape(-1))
    return _from_bits(to, _C.cast_bits(name, b, to, rounding, bool(sat), bool(ftz), rb))


def ulp(x: Any, dtype: Any = None) -> np.ndarray:
    """ulp(x) in format `dtype` (default: x's own), DESIGN.md's definition: 2^(max(floor(log2|x|),
    emin) - p + 1), the lower binade at an exact power of two; ulp(0) = the subnormal quantum.
    float64 results; NaN for NaN and Inf.

    >>> import numpy as np, fpconform
    >>> fpconform.ulp(np.array([1.0, 3.0, 0.0], np.float32))
    array([5.96046448e-08, 2.38418579e-07, 1.40129846e-45])
    >>> float(fpconform.ulp(np.float64(1.0), "bfloat16"))
    0.00390625
    """
    name, b = _bits(x, "ulp: x")
    out = _C.ulp(name, b, dtype_name(dtype) if dtype is not None else name)
    return out[()] if out.ndim == 0 else out


def ulp_distance(a: Any, b: Any) -> np.ndarray:
    """Signed number of representable steps from a to b (same dtype), elementwise; -0 and +0 are
    the same value; ValueError for NaN.

    >>> import numpy as np, fpconform
    >>> fpconform.ulp_distance(np.float32([1.0, -0.0]), np.float32([1.0000002, 1e-45])).tolist()
    [2, 1]
    """
    na, ba = _bits(a, "ulp_distance: a")
    nb, bb = _bits(b, "ulp_distance: b")
    if na != nb:
        raise ValueError(f"ulp_distance: a is {na} but b is {nb}: distances need one format")
    out = _C.ulp_distance(na, ba, bb)
    return out[()] if out.ndim == 0 else out


# ---- models ----

def models() -> list:
    """The platform model presets (and envelopes) by name, sorted.

    >>> import fpconform
    >>> "nvidia-h100-bf16" in fpconform.models(), "trainium2-bf16-envelope" in fpconform.models()
    (True, True)
    """
    return list(_C.model_names(models_dir()))


def model(name: str) -> dict:
    """One model's parameters (as written in its file) and their provenance, as a dict.

    >>> import fpconform
    >>> m = fpconform.model("nvidia-h100-bf16")
    >>> m["input_a"], m["output"], sorted(m)[:4]
    ('bfloat16', 'float32', ['accumulator', 'description', 'file', 'input_a'])
    """
    return dict(_C.model_info(models_dir(), name))


# ---- emulation and exact references ----

def _threads(threads: Optional[int]) -> int:
    return 0 if threads is None else int(threads)


def emulate_matmul(a: Any, b: Any, platform: str, c: Any = None, threads: Optional[int] = None, *,
                   scale_a: Any = None, scale_b: Any = None):
    """(out, bound): the platform model's output bits of C + A @ B (2-D) and each element's
    analytical error bound (|out - exact| <= bound). A and B must be in the platform's input
    formats; C in its accumulator format. FP8 scales (float32 values): for a platform with
    per-block scales (epilogue.scale = "block", e.g. nvidia-h100-fp8e4m3-deepgemm) scale_a is
    (m, ceil(K/B)) and scale_b (ceil(K/B), n), applied inside the accumulation; otherwise one
    value or one per row of A / column of B, applied by the platform's scale stage, and out is
    float32. A number is one value for the whole tensor.

    >>> import numpy as np, fpconform
    >>> a = np.float32([[1.0, 2**-24, 2**-24]]); b = np.float32([[1.0], [1.0], [1.0]])
    >>> out, bound = fpconform.emulate_matmul(a, b, "cpu-f32-seq")
    >>> out.tolist(), bool(bound[0, 0] > 0)
    ([[1.0]], True)
    """
    na, ba = _bits(a, "emulate_matmul: a")
    nb, bb = _bits(b, "emulate_matmul: b")
    nc = bc = None
    if c is not None:
        nc, bc = _bits(c, "emulate_matmul: c")
    nsa = bsa = nsb = bsb = None
    if scale_a is not None:
        nsa, bsa = _scale(scale_a, "emulate_matmul: scale_a")
    if scale_b is not None:
        nsb, bsb = _scale(scale_b, "emulate_matmul: scale_b")
    name, out, bound = _C.emulate_matmul(models_dir(), platform, na, ba, nb, bb, nc, bc, nsa, bsa, nsb, bsb,
                                         _threads(threads))
    return _from_bits(name, out), bound


def emulate_sum(x: Any, axis: int, platform: str):
    """(out, bound): the platform model's sum of x along `axis` and each element's bound.

    >>> import numpy as np, fpconform
    >>> out, bound = fpconform.emulate_sum(np.float32([[1.0, 2**-24, 2**-24]]), -1, "cpu-f32-seq")
    >>> out.tolist()
    [1.0]
    """
    nx, bx = _bits(x, "emulate_sum: x")
    name, out, bound = _C.emulate_sum(models_dir(), platform, nx, bx, int(axis))
    return _from_bits(name, out), bound


def exact_matmul(a: Any, b: Any, out_dtype: Any = "float32", rounding: str = "rne") -> np.ndarray:
    """The correctly rounded A @ B (2-D): each element's exact value rounded once into out_dtype.

    >>> import numpy as np, fpconform
    >>> a = np.float32([[1.0, 2**-24, 2**-24]]); b = np.float32([[1.0], [1.0], [1.0]])
    >>> fpconform.exact_matmul(a, b).tolist()
    [[1.0000001192092896]]
    """
    na, ba = _bits(a, "exact_matmul: a")
    nb, bb = _bits(b, "exact_matmul: b")
    to = dtype_name(out_dtype)
    return _from_bits(to, _C.exact_matmul(na, ba, nb, bb, to, rounding))


def exact_sum(x: Any, axis: int = -1, out_dtype: Any = "float32", rounding: str = "rne") -> np.ndarray:
    """The correctly rounded sum of x along `axis`.

    >>> import numpy as np, fpconform
    >>> fpconform.exact_sum(np.float32([1.0, 2**-24, 2**-24])).tolist()
    1.0000001192092896
    """
    nx, bx = _bits(x, "exact_sum: x")
    to = dtype_name(out_dtype)
    out = _from_bits(to, _C.exact_sum(nx, bx, int(axis), to, rounding))
    return out[()] if out.ndim == 0 else out


@functools.lru_cache(maxsize=256)
def _tolerance(op: str, dtype: str, k: int, platform: str, samples: int, mdir: str, sweep: str) -> tuple:
    return tuple(sorted(_C.tolerance(mdir, sweep, op, dtype, k, platform, samples, 0).items()))


@functools.lru_cache(maxsize=256)
def _attention_tolerance(platform: str, dtype: str, s: int, d: int, causal: bool, distribution: str,
                         mdir: str, sweep: str) -> tuple:
    return tuple(sorted(_C.attention_tolerance(mdir, sweep, platform, dtype, s, d, causal, distribution, 0).items()))


def tolerance(op: str, dtype: Any, k: int, platform: str, samples: int = 200, *, d: Optional[int] = None,
              causal: bool = False, distribution: str = "normal") -> dict:
    """The recommended tolerances for (op, dtype, K, platform) by the tolerance report's rule on
    N(0, 1) inputs (the numbers an audit prints): rtol/atol (torch.testing.assert_close
    convention), max ULP error, bound-normalized error. Computed on demand, cached per process.

    op "attention": K is the sequence length S (queries = keys) and ``d`` the head dimension
    (required); ``causal`` and ``distribution`` ("normal" or "peaked") pick the row, as in
    ``fpconform tolerance --ops attention``'s attention.csv. It returns the bound-covering
    rtol/atol (every conforming output passes), the probabilistic prob_rtol/prob_atol (about
    u |V| / sqrt(ESS)), ulp, bound_abs, the rows' median effective sample size ess_median and the
    query rows measured (the sweep file's [attention] rows; ``samples`` is not used).

    >>> import fpconform
    >>> t = fpconform.tolerance("matmul", "bfloat16", 128, "nvidia-h100-bf16")
    >>> sorted(t), t["rtol"] > 0
    (['atol', 'bound_normalized', 'dtype', 'k', 'op', 'platform', 'rtol', 'samples', 'ulp'], True)
    >>> a = fpconform.tolerance("attention", "bfloat16", 512, "flash-attention2-cuda-bf16", d=64)
    >>> a["rtol"] > 0, a["atol"] > 0, a["rows"]
    (True, True, 64)
    """
    if op == "attention":
        if d is None:
            raise ValueError("tolerance('attention', ...): give d=, the head dimension (K is the sequence length)")
        return dict(_attention_tolerance(platform, dtype_name(dtype), int(k), int(d), bool(causal), distribution,
                                         attention_models_dir(), sweep_file()))
    if d is not None or causal or distribution != "normal":
        raise ValueError(f"tolerance: d=, causal= and distribution= are for op 'attention', not '{op}'")
    return dict(_tolerance(op, dtype_name(dtype), int(k), platform, int(samples), models_dir(), sweep_file()))


# ---- audits ----

_listeners: list = []  # Callables (audit, kind) told of every audit run (the pytest plugin).


def _notify(result: Any, kind: str) -> None:
    for f in list(_listeners):
        f(result, kind)


def _platforms(platform: Union[str, Sequence[str], None]) -> list:
    if platform is None:
        return ["auto"]
    if isinstance(platform, str):
        return [p for p in platform.split(",") if p]
    return list(platform)


def _options(platform, strict, tolerance, tolerance_samples, max_listed, threads):
    o = _C.AuditOptions()
    o.platforms = _platforms(platform)
    o.models_dir = models_dir()
    o.composite_models_dir = composite_models_dir()
    o.sweep_file = sweep_file()
    o.strict = bool(strict)
    o.recommend = bool(tolerance)
    o.tolerance_samples = int(tolerance_samples)
    o.max_listed = int(max_listed)
    o.threads = _threads(threads)
    return o


def _tensor(x: Any, what: str, dtype: Any = None):
    return None if x is None else _bits(x, what, dtype)


def _scale(s: Any, what: str):
    if s is None:
        return None
    if isinstance(s, (int, float)):
        s = np.float64(s)
    return _bits(s, what)


def audit_matmul(a: Any, b: Any, out: Any, platform: Union[str, Sequence[str]] = "auto", c: Any = None,
                 scale_a: Any = None, scale_b: Any = None, *, transpose_a: bool = False,
                 transpose_b: bool = False, cast_inputs: Optional[str] = None, out_rounding: str = "rne",
                 strict: bool = False, tolerance: bool = True, tolerance_samples: int = 200,
                 max_listed: int = 100, threads: Optional[int] = None, a_dtype: Any = None,
                 b_dtype: Any = None, out_dtype: Any = None) -> Audit:
    """Audit a kernel's out = [C +] A @ B (batched as numpy.matmul; scales for FP8/INT8) against
    platform model(s): every element identical, within_bound, within_tolerance or unexplained
    (reports/AUDIT.md). platform: a model, an envelope, a list, or "auto". scale_a / scale_b: a
    number, one value per row of A / column of B, or, for a platform with per-block scales
    (nvidia-h100-fp8e4m3-deepgemm, nvidia-b200-mxfp8e4m3), (m, ceil(K/B)) and (ceil(K/B), n).

    >>> import numpy as np, fpconform
    >>> a = np.float32([[1.0, 2.0], [3.0, 4.0]]); b = np.float32([[1.0, 0.0], [0.0, 1.0]])
    >>> r = fpconform.audit_matmul(a, b, a @ b, platform="cpu-f32-seq", tolerance=False)
    >>> r.verdict, r.counts["identical"], r.classes.shape
    ('pass', 4, (2, 2))
    >>> bad = fpconform.audit_matmul(a, b, np.float32([[1, 2], [3, 5]]), platform="cpu-f32-seq", tolerance=False)
    >>> bad.verdict, bad.classes.tolist(), bad.elements[0]["index"]
    ('fail', [[0, 0], [0, 3]], (1, 1))
    """
    o = _options(platform, strict, tolerance, tolerance_samples, max_listed, threads)
    r = _C.audit_matmul(_tensor(a, "a", a_dtype), _tensor(b, "b", b_dtype), _tensor(out, "out", out_dtype),
                        _tensor(c, "c"), _scale(scale_a, "scale_a"), _scale(scale_b, "scale_b"),
                        bool(transpose_a), bool(transpose_b), cast_inputs, out_rounding, o)
    _notify(r, "matmul")
    return r


def audit_sum(x: Any, out: Any, axis: int = -1, platform: Union[str, Sequence[str]] = "auto", *,
              cast_inputs: Optional[str] = None, out_rounding: str = "rne", strict: bool = False,
              tolerance: bool = True, tolerance_samples: int = 200, max_listed: int = 100,
              threads: Optional[int] = None, x_dtype: Any = None, out_dtype: Any = None) -> Audit:
    """Audit out = the sum of x along `axis` (see audit_matmul).

    >>> import numpy as np, fpconform
    >>> x = np.float32([[1.0, 2**-24, 2**-24]])
    >>> fpconform.audit_sum(x, np.float32([1.0]), platform="cpu-f32-seq", tolerance=False).verdict
    'pass'
    """
    o = _options(platform, strict, tolerance, tolerance_samples, max_listed, threads)
    r = _C.audit_sum(_tensor(x, "x", x_dtype), int(axis), _tensor(out, "out", out_dtype), cast_inputs,
                     out_rounding, o)
    _notify(r, "sum")
    return r


def audit_elementwise(x: Any, out: Any, fn: str, platform: Union[str, Sequence[str]] = "auto", *,
                      out_rounding: str = "rne", strict: bool = False, max_listed: int = 100,
                      threads: Optional[int] = None, x_dtype: Any = None, out_dtype: Any = None) -> Audit:
    """Audit out = fn(x) elementwise (fn: exp exp2 log tanh sigmoid silu gelu gelu_tanh rsqrt
    reciprocal) against elementwise implementation models (composite/models/, e.g.
    "torch-cuda-f32"): identical to the model's every-step-correctly-rounded value, within the
    bound of every implementation that meets the model's declared accuracies, or unexplained with
    a diagnosis (the other GELU form, another function, a sign flip, ...).

    >>> import numpy as np, fpconform
    >>> x = np.float32([-2.0, 0.0, 1.0])
    >>> fpconform.audit_elementwise(x, np.float32([-0.04550027, 0.0, 0.8413447]), "gelu",
    ...                             platform="torch-cuda-f32").verdict
    'pass'
    >>> r = fpconform.audit_elementwise(x, np.float32([-0.04540231, 0.0, 0.8411920]), "gelu",
    ...                                 platform="torch-cuda-f32")
    >>> r.verdict, r.elements[0]["diagnosis"][:20]
    ('fail', 'the other GELU form:')
    """
    o = _options(platform, strict, False, 200, max_listed, threads)
    r = _C.audit_elementwise(_tensor(x, "x", x_dtype), _tensor(out, "out", out_dtype), str(fn), out_rounding, o)
    _notify(r, "elementwise")
    return r


def _audit_axis(op, x, out, axis, weight, bias, eps, platform, out_rounding, strict, max_listed, threads,
                x_dtype, out_dtype, weight_dtype, bias_dtype) -> Audit:
    o = _options(platform, strict, False, 200, max_listed, threads)
    r = _C.audit_axis(op, _tensor(x, "x", x_dtype), int(axis), _tensor(weight, "weight", weight_dtype),
                      _tensor(bias, "bias", bias_dtype), None if eps is None else float(eps),
                      _tensor(out, "out", out_dtype), out_rounding, o)
    _notify(r, op)
    return r


def audit_softmax(x: Any, out: Any, axis: int = -1, platform: Union[str, Sequence[str]] = "auto", *,
                  out_rounding: str = "rne", strict: bool = False, max_listed: int = 100,
                  threads: Optional[int] = None, x_dtype: Any = None, out_dtype: Any = None) -> Audit:
    """Audit out = softmax(x) along `axis` against axis models (composite/models/, e.g.
    "torch-cuda-rows-f32"): identical, within the bound of every conforming implementation (any
    reduction order, the declared exp accuracy), or unexplained with a diagnosis (the wrong axis,
    no max subtraction, log_softmax, ...).

    >>> import numpy as np, fpconform
    >>> x = np.float32([[1.0, 2.0, 3.0]])
    >>> e = np.exp(x.astype(np.float64)); y = (e / e.sum()).astype(np.float32)
    >>> fpconform.audit_softmax(x, y, platform="correctly-rounded-rows-f32").verdict
    'pass'
    """
    return _audit_axis("softmax", x, out, axis, None, None, None, platform, out_rounding, strict, max_listed,
                       threads, x_dtype, out_dtype, None, None)


def audit_log_softmax(x: Any, out: Any, axis: int = -1, platform: Union[str, Sequence[str]] = "auto", *,
                      out_rounding: str = "rne", strict: bool = False, max_listed: int = 100,
                      threads: Optional[int] = None, x_dtype: Any = None, out_dtype: Any = None) -> Audit:
    """Audit out = log_softmax(x) along `axis` (see audit_softmax)."""
    return _audit_axis("log_softmax", x, out, axis, None, None, None, platform, out_rounding, strict, max_listed,
                       threads, x_dtype, out_dtype, None, None)


def audit_rmsnorm(x: Any, out: Any, eps: float, weight: Any = None, axis: int = -1,
                  platform: Union[str, Sequence[str]] = "auto", *, out_rounding: str = "rne", strict: bool = False,
                  max_listed: int = 100, threads: Optional[int] = None, x_dtype: Any = None,
                  out_dtype: Any = None, weight_dtype: Any = None) -> Audit:
    """Audit out = x * weight / sqrt(mean(x^2) + eps) along `axis` (weight: 1-D, the axis's
    length, or None) against axis models (e.g. "hf-llama-rmsnorm-cuda-bf16"); diagnoses include
    eps outside the square root, a missing weight, a bfloat16 normalization before the weight,
    another eps.

    >>> import numpy as np, fpconform
    >>> x = np.float32([[3.0, 4.0, -1.0]])
    >>> xd = x.astype(np.float64); y = (xd / np.sqrt((xd * xd).mean() + 1e-6)).astype(np.float32)
    >>> fpconform.audit_rmsnorm(x, y, eps=1e-6, platform="correctly-rounded-rows-f32").verdict
    'pass'
    >>> r = fpconform.audit_rmsnorm(x, y, eps=1e-2, platform="correctly-rounded-rows-f32")
    >>> r.verdict, r.elements[0]["diagnosis"]
    ('fail', 'another eps: 1e-06 instead of 0.01')
    """
    return _audit_axis("rmsnorm", x, out, axis, weight, None, eps, platform, out_rounding, strict, max_listed,
                       threads, x_dtype, out_dtype, weight_dtype, None)


def audit_layernorm(x: Any, out: Any, eps: float, weight: Any = None, bias: Any = None, axis: int = -1,
                    platform: Union[str, Sequence[str]] = "auto", *, out_rounding: str = "rne",
                    strict: bool = False, max_listed: int = 100, threads: Optional[int] = None,
                    x_dtype: Any = None, out_dtype: Any = None, weight_dtype: Any = None,
                    bias_dtype: Any = None) -> Audit:
    """Audit out = (x - mean) / sqrt(var + eps) * weight + bias along `axis` (biased variance)
    against axis models; diagnoses include an unbiased variance, eps outside the square root, a
    missing weight or bias, rmsnorm instead."""
    return _audit_axis("layernorm", x, out, axis, weight, bias, eps, platform, out_rounding, strict, max_listed,
                       threads, x_dtype, out_dtype, weight_dtype, bias_dtype)


# ---- Exact values and model emulations of the composite ops (composite/models/) ----


def _axis_rows(x: Any, axis: int, what: str, dtype: Any):
    """(format, C-contiguous (rows, n) bits with `axis` last, function putting a (rows, n) result
    back into x's shape and axis order)."""
    fmt, bits = _bits(x, what, dtype)
    if bits.ndim == 0:
        raise ValueError(f"{what}: x is 0-d: there is no axis")
    a = int(axis) + bits.ndim if int(axis) < 0 else int(axis)
    if not 0 <= a < bits.ndim:
        raise ValueError(f"{what}: axis {axis} is out of range for rank {bits.ndim}")
    moved = np.moveaxis(bits, a, -1)
    shape = moved.shape

    def restore(out: np.ndarray) -> np.ndarray:
        return np.moveaxis(out.reshape(shape), -1, a)

    return fmt, np.ascontiguousarray(moved).reshape(-1, shape[-1]), restore


def exact_elementwise(x: Any, fn: str, out_dtype: Any = None, rounding: str = "rne", *,
                      threads: Optional[int] = None, x_dtype: Any = None) -> np.ndarray:
    """The correctly rounded fn(x) per element (fn: exp exp2 log tanh sigmoid silu gelu gelu_tanh
    rsqrt reciprocal), rounded once into out_dtype (default: x's dtype).

    >>> import numpy as np, fpconform
    >>> fpconform.exact_elementwise(np.float32([1.0, -2.0]), "gelu").tolist()
    [0.8413447737693787, -0.0455002635717392]
    """
    fmt, bits = _bits(x, "exact_elementwise: x", x_dtype)
    to = fmt if out_dtype is None else dtype_name(out_dtype)
    return _from_bits(to, _C.exact_elementwise(str(fn), fmt, bits, to, rounding, _threads(threads)))


def _exact_axis(op, x, axis, weight, bias, eps, out_dtype, rounding, threads, x_dtype):
    fmt, rows, restore = _axis_rows(x, axis, f"exact_{op}: x", x_dtype)
    to = fmt if out_dtype is None else dtype_name(out_dtype)
    out = _C.exact_axis(op, fmt, rows, _tensor(weight, f"exact_{op}: weight"), _tensor(bias, f"exact_{op}: bias"),
                        float(eps), to, rounding, _threads(threads))
    return restore(_from_bits(to, out))


def exact_softmax(x: Any, axis: int = -1, out_dtype: Any = None, rounding: str = "rne", *,
                  threads: Optional[int] = None, x_dtype: Any = None) -> np.ndarray:
    """The correctly rounded softmax(x) along `axis`: each element's exact value exp(x_i) / sum
    exp(x_j), rounded once into out_dtype (default: x's dtype).

    >>> import numpy as np, fpconform
    >>> fpconform.exact_softmax(np.float32([[0.0, 1.0]])).tolist()
    [[0.2689414322376251, 0.7310585975646973]]
    """
    return _exact_axis("softmax", x, axis, None, None, 1.0, out_dtype, rounding, threads, x_dtype)


def exact_log_softmax(x: Any, axis: int = -1, out_dtype: Any = None, rounding: str = "rne", *,
                      threads: Optional[int] = None, x_dtype: Any = None) -> np.ndarray:
    """The correctly rounded log_softmax(x) along `axis` (see exact_softmax).

    >>> import numpy as np, fpconform
    >>> fpconform.exact_log_softmax(np.float32([[0.0, 0.0]])).tolist()
    [[-0.6931471824645996, -0.6931471824645996]]
    """
    return _exact_axis("log_softmax", x, axis, None, None, 1.0, out_dtype, rounding, threads, x_dtype)


def exact_rmsnorm(x: Any, eps: float, weight: Any = None, axis: int = -1, out_dtype: Any = None,
                  rounding: str = "rne", *, threads: Optional[int] = None, x_dtype: Any = None) -> np.ndarray:
    """The correctly rounded x * weight / sqrt(mean(x^2) + eps) along `axis` (weight: 1-D of the
    axis's length, or None), from the inputs as given (eps exactly as the double passed).

    >>> import numpy as np, fpconform
    >>> fpconform.exact_rmsnorm(np.float32([[3.0, 4.0]]), eps=1e-6).tolist()
    [[0.8485280871391296, 1.1313707828521729]]
    """
    return _exact_axis("rmsnorm", x, axis, weight, None, eps, out_dtype, rounding, threads, x_dtype)


def exact_layernorm(x: Any, eps: float, weight: Any = None, bias: Any = None, axis: int = -1,
                    out_dtype: Any = None, rounding: str = "rne", *, threads: Optional[int] = None,
                    x_dtype: Any = None) -> np.ndarray:
    """The correctly rounded (x - mean) / sqrt(var + eps) * weight + bias along `axis` (biased
    variance).

    >>> import numpy as np, fpconform
    >>> fpconform.exact_layernorm(np.float32([[1.0, 3.0]]), eps=1e-5).tolist()
    [[-0.9999949932098389, 0.9999949932098389]]
    """
    return _exact_axis("layernorm", x, axis, weight, bias, eps, out_dtype, rounding, threads, x_dtype)


def emulate_elementwise(x: Any, fn: str, platform: str, *, x_dtype: Any = None):
    """(out, lo, hi): the elementwise model `platform`'s fn(x) (composite/models/: every step
    correctly rounded, the library's bits where the model is exact) and, per element, the interval
    [lo, hi] (float64) holding the output of every implementation of the model's formula within
    its declared accuracies.

    >>> import numpy as np, fpconform
    >>> out, lo, hi = fpconform.emulate_elementwise(np.float32([-6.0]), "gelu", "torch-cuda-f32")
    >>> bool(lo[0] <= float(out[0]) <= hi[0]), bool(hi[0] - lo[0] > 1e-12)
    (True, True)
    """
    fmt, bits = _bits(x, "emulate_elementwise: x", x_dtype)
    name, out, lo, hi = _C.emulate_elementwise(composite_models_dir(), platform, str(fn), fmt, bits)
    return _from_bits(name, out), lo, hi


def _emulate_axis(op, x, platform, axis, weight, bias, eps, x_dtype):
    fmt, rows, restore = _axis_rows(x, axis, f"emulate_{op}: x", x_dtype)
    name, out, lo, hi = _C.emulate_axis(composite_models_dir(), platform, op, fmt, rows,
                                        _tensor(weight, f"emulate_{op}: weight"),
                                        _tensor(bias, f"emulate_{op}: bias"), float(eps))
    return restore(_from_bits(name, out)), restore(lo), restore(hi)


def emulate_softmax(x: Any, platform: str, axis: int = -1, *, x_dtype: Any = None):
    """(out, lo, hi): the axis model `platform`'s softmax along `axis` (reductions in index order)
    and the enclosure of every conforming implementation (any reduction order, the model's
    accuracies) per element.

    >>> import numpy as np, fpconform
    >>> x = np.float32([[0.0, 1.0, 2.0]])
    >>> out, lo, hi = fpconform.emulate_softmax(x, "torch-cpu-rows-f32")
    >>> bool(((lo <= out) & (out <= hi)).all())
    True
    """
    return _emulate_axis("softmax", x, platform, axis, None, None, 0.0, x_dtype)


def emulate_log_softmax(x: Any, platform: str, axis: int = -1, *, x_dtype: Any = None):
    """(out, lo, hi): the axis model `platform`'s log_softmax (see emulate_softmax)."""
    return _emulate_axis("log_softmax", x, platform, axis, None, None, 0.0, x_dtype)


def emulate_rmsnorm(x: Any, platform: str, eps: float, weight: Any = None, axis: int = -1, *,
                    x_dtype: Any = None):
    """(out, lo, hi): the axis model `platform`'s rmsnorm (see emulate_softmax).

    >>> import numpy as np, ml_dtypes, fpconform
    >>> x = np.array([[3.0, 4.0, -1.0]], dtype=ml_dtypes.bfloat16)
    >>> w = np.array([1.0, 0.5, 2.0], dtype=ml_dtypes.bfloat16)
    >>> out, lo, hi = fpconform.emulate_rmsnorm(x, "hf-llama-rmsnorm-cuda-bf16", eps=1e-6, weight=w)
    >>> out.dtype.name, bool(((lo <= out.astype(float)) & (out.astype(float) <= hi)).all())
    ('bfloat16', True)
    """
    return _emulate_axis("rmsnorm", x, platform, axis, weight, None, eps, x_dtype)


def emulate_layernorm(x: Any, platform: str, eps: float, weight: Any = None, bias: Any = None, axis: int = -1,
                      *, x_dtype: Any = None):
    """(out, lo, hi): the axis model `platform`'s layernorm (see emulate_softmax)."""
    return _emulate_axis("layernorm", x, platform, axis, weight, bias, eps, x_dtype)


def audit_cast(x: Any, out: Any, to: Any = None, rounding: str = "rne", sat: bool = False, scale: float = 1.0, *,
               tolerance: bool = True, max_listed: int = 100, threads: Optional[int] = None,
               x_dtype: Any = None, out_dtype: Any = None) -> Audit:
    """Audit out = cast(x / scale) into `to` (default: out's dtype) under `rounding` (sr<k>: the
    rate of rounding away is checked statistically).

    >>> import numpy as np, fpconform
    >>> x = np.float32([1.0, 3.0, 500.0])
    >>> fpconform.audit_cast(x, fpconform.cast(x, "float8_e4m3fn", sat=True), sat=True).verdict
    'pass'
    """
    xb = _tensor(x, "x", x_dtype)
    ob = _tensor(out, "out", out_dtype)
    o = _options(None, False, tolerance, 200, max_listed, threads)
    r = _C.audit_cast(xb, ob, dtype_name(to) if to is not None else ob[0], rounding, bool(sat), float(scale), o)
    _notify(r, "cast")
    return r


def compare_matmul(a: Any, b: Any, out_ref: Any, platform_ref: str, out: Any, platform: str, *,
                   transpose_a: bool = False, transpose_b: bool = False, cast_inputs: Optional[str] = None,
                   out_rounding: str = "rne", strict: bool = False, tolerance: bool = True,
                   tolerance_samples: int = 200, max_listed: int = 100, threads: Optional[int] = None) -> Compare:
    """Two platforms' outputs of A @ B on the same inputs: each audited against its own platform,
    their difference checked against both bounds (`fpconform compare matmul`).

    >>> import numpy as np, fpconform
    >>> a = np.float32([[1.0, 2.0]]); b = np.float32([[3.0], [4.0]])
    >>> c = fpconform.compare_matmul(a, b, a @ b, "cpu-f32-seq", a @ b, "cuda-f32-fma", tolerance=False)
    >>> c.verdict, c.consistent
    ('pass', 1)
    """
    o = _options(platform, strict, tolerance, tolerance_samples, max_listed, threads)
    r = _C.compare_matmul(_tensor(a, "a"), _tensor(b, "b"), _tensor(out_ref, "out_ref"), platform_ref,
                          _tensor(out, "out"), platform, bool(transpose_a), bool(transpose_b), cast_inputs,
                          out_rounding, o)
    _notify(r, "compare")
    return r

def _compare_composite(op, x, out_ref, platform_ref, out, platform, axis=-1, weight=None, bias=None, eps=None,
                       fn="", out_rounding="rne", strict=False, max_listed=100, threads=None) -> Compare:
    o = _options(platform, strict, False, 200, max_listed, threads)
    r = _C.compare_composite(op, _tensor(x, "x"), int(axis), _tensor(weight, "weight"), _tensor(bias, "bias"),
                             None if eps is None else float(eps), str(fn), _tensor(out_ref, "out_ref"),
                             platform_ref, _tensor(out, "out"), platform, out_rounding, o)
    _notify(r, "compare")
    return r


def compare_elementwise(x: Any, out_ref: Any, platform_ref: str, out: Any, platform: str, fn: str, *,
                        out_rounding: str = "rne", strict: bool = False, max_listed: int = 100,
                        threads: Optional[int] = None) -> Compare:
    """Two platforms' outputs of fn(x) on the same x (e.g. the CUDA reference and an NKI port):
    each audited against its own composite model, their difference checked against the sum of
    both models' bounds; the side at fault is the one its own model does not explain
    (`fpconform compare elementwise`).

    >>> import numpy as np, fpconform
    >>> x = np.float32([-2.0, 0.5, 1.0])
    >>> y_gpu, _, _ = fpconform.emulate_elementwise(x, "gelu", "torch-cuda-f32")
    >>> y_cpu, _, _ = fpconform.emulate_elementwise(x, "gelu", "torch-cpu-f32")
    >>> c = fpconform.compare_elementwise(x, y_gpu, "torch-cuda-f32", y_cpu, "torch-cpu-f32", "gelu")
    >>> c.verdict, c.consistent
    ('pass', 3)
    """
    return _compare_composite("elementwise", x, out_ref, platform_ref, out, platform, fn=fn,
                              out_rounding=out_rounding, strict=strict, max_listed=max_listed, threads=threads)


def compare_softmax(x: Any, out_ref: Any, platform_ref: str, out: Any, platform: str, axis: int = -1, *,
                    out_rounding: str = "rne", strict: bool = False, max_listed: int = 100,
                    threads: Optional[int] = None) -> Compare:
    """Two platforms' softmax outputs of the same x (see compare_elementwise)."""
    return _compare_composite("softmax", x, out_ref, platform_ref, out, platform, axis=axis,
                              out_rounding=out_rounding, strict=strict, max_listed=max_listed, threads=threads)


def compare_log_softmax(x: Any, out_ref: Any, platform_ref: str, out: Any, platform: str, axis: int = -1, *,
                        out_rounding: str = "rne", strict: bool = False, max_listed: int = 100,
                        threads: Optional[int] = None) -> Compare:
    """Two platforms' log_softmax outputs of the same x (see compare_elementwise)."""
    return _compare_composite("log_softmax", x, out_ref, platform_ref, out, platform, axis=axis,
                              out_rounding=out_rounding, strict=strict, max_listed=max_listed, threads=threads)


def compare_rmsnorm(x: Any, out_ref: Any, platform_ref: str, out: Any, platform: str, eps: float,
                    weight: Any = None, axis: int = -1, *, out_rounding: str = "rne", strict: bool = False,
                    max_listed: int = 100, threads: Optional[int] = None) -> Compare:
    """Two platforms' rmsnorm outputs of the same x, weight and eps (see compare_elementwise).

    >>> import numpy as np, ml_dtypes, fpconform
    >>> x = np.array([[3.0, 4.0, -1.0, 0.5]], dtype=ml_dtypes.bfloat16)
    >>> w = np.ones(4, dtype=ml_dtypes.bfloat16)
    >>> y_gpu, _, _ = fpconform.emulate_rmsnorm(x, "hf-llama-rmsnorm-cuda-bf16", eps=1e-6, weight=w)
    >>> y_nki, _, _ = fpconform.emulate_rmsnorm(x, "nki-rmsnorm-tkg-bf16", eps=1e-6, weight=w)
    >>> fpconform.compare_rmsnorm(x, y_gpu, "hf-llama-rmsnorm-cuda-bf16", y_nki, "nki-rmsnorm-tkg-bf16",
    ...                           eps=1e-6, weight=w).verdict
    'pass'
    """
    return _compare_composite("rmsnorm", x, out_ref, platform_ref, out, platform, axis=axis, weight=weight,
                              eps=eps, out_rounding=out_rounding, strict=strict, max_listed=max_listed,
                              threads=threads)


def compare_layernorm(x: Any, out_ref: Any, platform_ref: str, out: Any, platform: str, eps: float,
                      weight: Any = None, bias: Any = None, axis: int = -1, *, out_rounding: str = "rne",
                      strict: bool = False, max_listed: int = 100, threads: Optional[int] = None) -> Compare:
    """Two platforms' layernorm outputs of the same x, weight, bias and eps (see
    compare_elementwise)."""
    return _compare_composite("layernorm", x, out_ref, platform_ref, out, platform, axis=axis, weight=weight,
                              bias=bias, eps=eps, out_rounding=out_rounding, strict=strict,
                              max_listed=max_listed, threads=threads)


from . import blas  # noqa: E402  (numpy BLAS detection: fpconform.blas)


# ---- attention (issue 27) ----

def attention_models_dir() -> str:
    """The attention implementation models: $FPCONFORM_ATTENTION_MODELS_DIR, else the package's
    data/attention-models (an installed wheel), else the source tree's composite/attention_models."""
    return _data_path("attention-models")


def audit_attention(q: Any, k: Any, v: Any, out: Any, platform: Union[str, Sequence[str]] = "auto", *,
                    mask: Any = None, causal: bool = False, scale: Optional[float] = None,
                    out_rounding: str = "rne", strict: bool = False, max_listed: int = 100,
                    threads: Optional[int] = None, q_dtype: Any = None, k_dtype: Any = None, v_dtype: Any = None,
                    out_dtype: Any = None, mask_dtype: Any = None, lse: Any = None,
                    lse_dtype: Any = None) -> Audit:
    """Audit out = softmax(scale q k^T + mask) v per head (`fpconform audit attention`): shapes
    (S, D), (H, S, D) or (B, H, S, D), k and v with H_kv heads (grouped-query attention when H is
    a multiple), `causal` top-left aligned, `mask` a float array added to the scores or a
    uint8/int8/bool array (True attends) broadcasting to (B, H, S_q, S_k), `scale` default
    1/sqrt(D) exactly. Platforms: "correctly-rounded" and the attention models
    (attention_models_dir(), e.g. "flash-attention2-cuda-bf16"); "auto" picks the best-explaining.
    `lse`: the kernel's log-sum-exp, q's shape without D, audited too (`Audit.lse`, a dict of its
    classes; an unexplained LSE element fails the verdict).

    >>> import numpy as np, fpconform
    >>> q = np.float32([[1.0, 0.0]]); k = np.float32([[1.0, 0.0], [0.0, 1.0]]); v = np.float32([[0.0], [1.0]])
    >>> o = fpconform.exact_attention(q, k, v, scale=1.0)
    >>> fpconform.audit_attention(q, k, v, o, platform="correctly-rounded", scale=1.0).verdict
    'pass'
    >>> a = fpconform.audit_attention(q, k, v, o, platform="correctly-rounded", scale=1.0,
    ...                               lse=np.float32([np.log(np.e + 1)]))
    >>> a.verdict, a.lse["counts"]["identical"]
    ('pass', 1)
    """
    o = _options(platform, strict, False, 200, max_listed, threads)
    if mask is not None and np.asarray(mask).dtype == np.bool_:
        mask = np.asarray(mask).astype(np.uint8)
    r = _C.audit_attention(_tensor(q, "q", q_dtype), _tensor(k, "k", k_dtype), _tensor(v, "v", v_dtype),
                           _tensor(out, "out", out_dtype), _tensor(mask, "mask", mask_dtype), bool(causal),
                           None if scale is None else float(scale), out_rounding, attention_models_dir(), o,
                           lse=_tensor(lse, "lse", lse_dtype))
    _notify(r, "attention")
    return r


def compare_attention(q: Any, k: Any, v: Any, out_ref: Any, platform_ref: str, out: Any, platform: str, *,
                      mask: Any = None, causal: bool = False, scale: Optional[float] = None,
                      out_rounding: str = "rne", strict: bool = False, max_listed: int = 100,
                      threads: Optional[int] = None, lse_ref: Any = None, lse: Any = None) -> Compare:
    """Two platforms' attention outputs of the same q, k, v, mask and scale (e.g. the CUDA
    FlashAttention reference and an NKI port): each audited against its own model, their
    difference checked against the sum of both bounds; the side at fault is the one its own model
    does not explain (`fpconform compare attention`). `lse_ref` and `lse` (float, q's shape
    without D; `--lse-ref`, `--lse`): each side's LSE audited too (`Compare.ref.lse`,
    `Compare.port.lse`), and with both the rows compared (`Compare.lse`, the JSON's "lse").

    >>> import numpy as np, fpconform
    >>> q = np.float32([[1.0, 0.0]]); k = np.float32([[1.0, 0.0], [0.0, 1.0]]); v = np.float32([[0.0], [1.0]])
    >>> o = fpconform.exact_attention(q, k, v, scale=1.0)
    >>> c = fpconform.compare_attention(q, k, v, o, "correctly-rounded", o, "correctly-rounded", scale=1.0)
    >>> c.verdict, c.consistent
    ('pass', 1)
    """
    o = _options(platform, strict, False, 200, max_listed, threads)
    if mask is not None and np.asarray(mask).dtype == np.bool_:
        mask = np.asarray(mask).astype(np.uint8)
    r = _C.compare_attention(_tensor(q, "q"), _tensor(k, "k"), _tensor(v, "v"), _tensor(mask, "mask"), bool(causal),
                             None if scale is None else float(scale), _tensor(out_ref, "out_ref"), platform_ref,
                             _tensor(out, "out"), platform, out_rounding, attention_models_dir(), o,
                             _tensor(lse_ref, "lse_ref"), _tensor(lse, "lse"))
    _notify(r, "compare")
    return r


def exact_attention(q: Any, k: Any, v: Any, *, mask: Any = None, causal: bool = False,
                    scale: Optional[float] = None, out_dtype: Any = "float32", threads: Optional[int] = None,
                    q_dtype: Any = None, k_dtype: Any = None, v_dtype: Any = None, mask_dtype: Any = None) -> np.ndarray:
    """The exact attention output, each element correctly rounded (RNE) once into `out_dtype`
    (oracles/attention.h; fully masked rows NaN); arguments as audit_attention.

    >>> import numpy as np, fpconform
    >>> q = np.float32([[1.0]]); k = np.float32([[0.0], [1.0]]); v = np.float32([[0.0], [1.0]])
    >>> float(fpconform.exact_attention(q, k, v, scale=1.0)[0, 0]) == float(np.float32(np.e / (1 + np.e)))
    True
    """
    if mask is not None and np.asarray(mask).dtype == np.bool_:
        mask = np.asarray(mask).astype(np.uint8)
    to = dtype_name(out_dtype)
    bits = _C.exact_attention(_tensor(q, "q", q_dtype), _tensor(k, "k", k_dtype), _tensor(v, "v", v_dtype),
                              _tensor(mask, "mask", mask_dtype), bool(causal), None if scale is None else float(scale),
                              to, _threads(threads))
    return _from_bits(to, bits)


def emulate_attention(q: Any, k: Any, v: Any, platform: str, *, mask: Any = None, causal: bool = False,
                      scale: Optional[float] = None, threads: Optional[int] = None, q_dtype: Any = None,
                      k_dtype: Any = None, v_dtype: Any = None, mask_dtype: Any = None):
    """(out, lo, hi): the attention model `platform`'s output (attention_models_dir(); one two-pass
    implementation in the model's formats, in its output dtype) and, per element, the interval
    [lo, hi] (float64; NaN where the model gives no bound) holding the output of every
    implementation the model admits (any order of both matmuls and of the row sum); a fully
    masked row is the model's convention. Arguments as audit_attention; auditing `out` against
    `platform` finds every element identical.

    >>> import numpy as np, ml_dtypes, fpconform
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = (rng.standard_normal((4, 8)).astype(ml_dtypes.bfloat16) for _ in range(3))
    >>> out, lo, hi = fpconform.emulate_attention(q, k, v, "flash-attention2-cuda-bf16", causal=True)
    >>> out.dtype.name, out.shape, bool(((lo <= out.astype(float)) & (out.astype(float) <= hi)).all())
    ('bfloat16', (4, 8), True)
    """
    if mask is not None and np.asarray(mask).dtype == np.bool_:
        mask = np.asarray(mask).astype(np.uint8)
    name, out, lo, hi = _C.emulate_attention(attention_models_dir(), platform, _bits(q, "q", q_dtype),
                                             _bits(k, "k", k_dtype), _bits(v, "v", v_dtype),
                                             _tensor(mask, "mask", mask_dtype), bool(causal),
                                             None if scale is None else float(scale), _threads(threads))
    return _from_bits(name, out), lo, hi
