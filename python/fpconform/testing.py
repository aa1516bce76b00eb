"""Assertions for kernel tests: assert_conforms audits a kernel's output against a platform model
and fails with the evidence (classes, worst elements, diagnoses) in a torch.testing-shaped
message.

>>> import numpy as np, fpconform.testing as ft
>>> a = np.float32([[1.0, 2.0]]); b = np.float32([[3.0], [4.0]])
>>> ft.assert_conforms(a @ b, a, b, platform="cpu-f32-seq", tolerance=False)  # passes silently
>>> try:
...     ft.assert_conforms(np.float32([[12.0]]), a, b, platform="cpu-f32-seq", tolerance=False)
... except AssertionError as e:
...     print(str(e).splitlines()[0])
Tensor-likes are not close!
"""

from __future__ import annotations

from typing import Any, Optional

import fpconform

__all__ = ["assert_conforms", "conformance_message", "defaults"]

#: Defaults the pytest plugin sets from its ini options (fpconform_platform, fpconform_strict).
defaults = {"platform": "auto", "strict": False}


def conformance_message(audit: Any, msg: Optional[str] = None) -> str:
    """The failure message of an audit: the torch.testing lines first ("Tensor-likes are not
    close!", "Mismatched elements: ...", "Greatest absolute difference: ..."), then the audit's
    headline, classes, listed elements with diagnoses, notes and soundness."""
    text = str(audit)
    headline, _, rest = text.partition("\n")
    rest = rest.lstrip("\n")
    if not rest.startswith("Tensor-likes are not close!"):
        rest = "Tensor-likes are not close!\n\n" + rest
    body, sep, tail = rest.partition("\nClasses")
    out = body + "\n" + headline + "\n" + (("Classes" + tail) if sep else "")
    if msg:
        out = msg + "\n\n" + out
    return out.rstrip("\n")


#: The ops along one axis (eps=, weight=, bias= for the norms go to their audit).
AXIS_OPS = ("softmax", "log_softmax", "rmsnorm", "layernorm")
#: The functions op="elementwise" (fn=...) audits, also accepted as op itself.
ELEMENTWISE_FUNCTIONS = ("exp", "exp2", "log", "tanh", "sigmoid", "silu", "gelu", "gelu_tanh", "rsqrt",
                         "reciprocal")


def assert_conforms(out: Any, a: Any, b: Any = None, platform: Any = None, op: str = "matmul", *,
                    c: Any = None, scale_a: Any = None, scale_b: Any = None, axis: int = -1,
                    to: Any = None, rounding: str = "rne", sat: bool = False, scale: float = 1.0,
                    strict: Optional[bool] = None, msg: Optional[str] = None, fn: Optional[str] = None,
                    **kwargs: Any):
    """Audits `out` and raises AssertionError unless every element is explained.

    op "matmul": out = [c +] a @ b; "sum": out = a summed along `axis` (b unused); "cast": out =
    cast(a / scale) into `to` (default out's dtype); "elementwise" (with fn=...) or the function's
    name itself ("gelu", "silu", ...; ELEMENTWISE_FUNCTIONS): out = fn(a); "softmax",
    "log_softmax", "rmsnorm", "layernorm" (AXIS_OPS): out = op(a) along `axis` (eps=, weight=,
    bias= for the norms). platform: a model, an envelope, a list or
    "auto" (default: the pytest ini option fpconform_platform, else auto). strict (default: ini
    fpconform_strict): elements only within the recommended tolerance fail too. Other keyword
    arguments go to fpconform.audit_matmul / audit_sum / audit_cast (max_listed defaults to 10
    here: the message lists every unexplained element up to that many, then the worst others). Returns None, as
    torch.testing.assert_close does.
    """
    kwargs.setdefault("max_listed", 10)  # A test failure lists the 10 worst elements.
    if platform is None:
        platform = defaults["platform"]
    if strict is None:
        strict = defaults["strict"]
    if op == "matmul":
        if b is None:
            raise ValueError("assert_conforms: op 'matmul' needs b")
        audit = fpconform.audit_matmul(a, b, out, platform=platform, c=c, scale_a=scale_a, scale_b=scale_b,
                                       strict=strict, **kwargs)
    elif op == "sum":
        audit = fpconform.audit_sum(a, out, axis=axis, platform=platform, strict=strict, **kwargs)
    elif op == "cast":
        audit = fpconform.audit_cast(a, out, to=to, rounding=rounding, sat=sat, scale=scale, **kwargs)
    elif op in AXIS_OPS:
        audit_fn = getattr(fpconform, f"audit_{op}")
        extra = {k: kwargs.pop(k) for k in ("eps", "weight", "bias") if k in kwargs}
        audit = audit_fn(a, out, axis=axis, platform=platform, strict=strict, **extra, **kwargs)
    elif op == "elementwise" or op in ELEMENTWISE_FUNCTIONS:
        function = fn if op == "elementwise" else op
        if function is None:
            raise ValueError("assert_conforms: op 'elementwise' needs fn (one of "
                             + " ".join(ELEMENTWISE_FUNCTIONS) + ")")
        audit = fpconform.audit_elementwise(a, out, function, platform=platform, strict=strict, **kwargs)
    else:
        raise ValueError(f"assert_conforms: op '{op}' is not matmul, sum, cast, elementwise, one of "
                         + " ".join(AXIS_OPS) + " or one of " + " ".join(ELEMENTWISE_FUNCTIONS))
    if audit.verdict != "pass":
        raise AssertionError(conformance_message(audit, msg))
