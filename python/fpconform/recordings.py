"""Recordings of real composite-kernel outputs (activations, softmax, norms) and their replay.

A recording is a directory written by ``conformance/composite_probe/record_composites.py`` on a
machine with the real library (torch on a GPU, eager and ``torch.compile``; or torch on a CPU):
the inputs and outputs of each case as ``.npy`` files of raw bits, and ``manifest.json``::

    {"fpconform_composite_recording": 1,
     "device": "NVIDIA H200", "library": "torch 2.11.0+cu130", ...,
     "cases": [{"name": "softmax-f32-eager-8x1024", "op": "softmax", "fn": null,
                "axis": -1, "eps": null, "dtype": "float32", "out_dtype": "float32",
                "x": "softmax-f32-eager-8x1024.x.npy", "weight": null, "bias": null,
                "out": "softmax-f32-eager-8x1024.out.npy",
                "platforms": ["torch-cuda-rows-f32"], "variant": "eager"}, ...]}

``op`` is ``elementwise`` (with ``fn``), ``softmax``, ``log_softmax``, ``rmsnorm`` or
``layernorm``; ``platforms`` are the composite models (composite/models) the case's output must
conform to. ``replay(dir)`` audits every case against them; a case passes when its audit passes
against one of them (the best-explaining one is named).

Checked-in recordings live in ``conformance/data/composite/<name>/`` (conformance/data/README.md);
``python/tests/test_composite_recordings.py`` replays each of them.

>>> import tempfile, numpy as np, fpconform
>>> from fpconform import recordings
>>> d = tempfile.mkdtemp()
>>> x = np.float32([[0.0, 1.0, 2.0]])
>>> y, _, _ = fpconform.emulate_softmax(x, "torch-cpu-rows-f32")
>>> w = recordings.Writer(d, device="cpu", library="numpy emulation")
>>> w.add("softmax-demo", "softmax", x, y, platforms=["torch-cpu-rows-f32"])
>>> w.close()
>>> [(r.name, r.passed, r.platform) for r in recordings.replay(d)]
[('softmax-demo', True, 'torch-cpu-rows-f32')]
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Optional, Sequence

import numpy as np

FORMAT_VERSION = 1
_OPS = ("elementwise", "softmax", "log_softmax", "rmsnorm", "layernorm")


def _bits_of(a: Any) -> tuple:
    """(dtype name, unsigned-integer bits) of a numpy / ml_dtypes / torch array."""
    from . import _bits  # The package's own view of arrays as bits.

    return _bits(a, "recording")


class Writer:
    """Writes a recording directory: ``add`` each case, then ``close`` (writes manifest.json).

    The directory must not exist or be empty: a recording never overwrites files.
    """

    def __init__(self, directory: str, device: str, library: str, **info: Any) -> None:
        self.dir = Path(directory)
        if self.dir.exists() and any(self.dir.iterdir()):
            raise ValueError(f"{directory}: exists and is not empty (a recording never overwrites files)")
        self.dir.mkdir(parents=True, exist_ok=True)
        self.manifest = {"fpconform_composite_recording": FORMAT_VERSION, "device": device,
                         "library": library, **info, "cases": []}
        self._names: set = set()

    def _save(self, name: str, what: str, a: Any) -> tuple:
        fmt, bits = _bits_of(a)
        path = f"{name}.{what}.npy"
        np.save(self.dir / path, np.ascontiguousarray(bits))
        return fmt, path

    def add(self, name: str, op: str, x: Any, out: Any, platforms: Sequence[str], *, fn: Optional[str] = None,
            axis: int = -1, eps: Optional[float] = None, weight: Any = None, bias: Any = None,
            variant: str = "eager") -> None:
        if op not in _OPS:
            raise ValueError(f"op '{op}' is not one of {', '.join(_OPS)}")
        if (op == "elementwise") != (fn is not None):
            raise ValueError("fn is given exactly for op 'elementwise'")
        if name in self._names or not name or "/" in name:
            raise ValueError(f"case name '{name}' is empty, repeated or holds a '/'")
        self._names.add(name)
        dtype, xp = self._save(name, "x", x)
        out_dtype, op_ = self._save(name, "out", out)
        case = {"name": name, "op": op, "fn": fn, "axis": int(axis), "eps": None if eps is None else float(eps),
                "dtype": dtype, "out_dtype": out_dtype, "x": xp, "weight": None, "weight_dtype": None,
                "bias": None, "bias_dtype": None, "out": op_, "platforms": list(platforms), "variant": variant}
        if weight is not None:
            case["weight_dtype"], case["weight"] = self._save(name, "weight", weight)
        if bias is not None:
            case["bias_dtype"], case["bias"] = self._save(name, "bias", bias)
        self.manifest["cases"].append(case)

    def close(self) -> None:
        tmp = self.dir / "manifest.json.tmp"
        tmp.write_text(json.dumps(self.manifest, indent=1) + "\n")
        os.replace(tmp, self.dir / "manifest.json")


@dataclass
class Replayed:
    name: str
    passed: bool
    platform: str      # The platform the verdict is against (the best-explaining one).
    audit: Any         # The fpconform.Audit.


def load(directory: str) -> dict:
    """manifest.json of a recording, checked: ValueError naming the file and the field."""
    path = Path(directory) / "manifest.json"
    try:
        m = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: {e}") from e
    if m.get("fpconform_composite_recording") != FORMAT_VERSION:
        raise ValueError(f"{path}: fpconform_composite_recording: expected {FORMAT_VERSION}")
    for i, c in enumerate(m.get("cases", [])):
        for key in ("name", "op", "dtype", "out_dtype", "x", "out", "platforms"):
            if key not in c:
                raise ValueError(f"{path}: cases[{i}].{key}: missing")
        if c["op"] not in _OPS:
            raise ValueError(f"{path}: cases[{i}].op: '{c['op']}' is not one of {', '.join(_OPS)}")
    return m


def replay(directory: str, threads: Optional[int] = None) -> List[Replayed]:
    """Audits every case of a recording against its platforms (all of them at once: the verdict
    is against the best-explaining one)."""
    from . import audit_elementwise, _audit_axis

    m = load(directory)
    d = Path(directory)
    out: List[Replayed] = []
    for c in m["cases"]:
        def arr(key):
            return None if c.get(key) is None else np.load(d / c[key])
        x, y = arr("x"), arr("out")
        if c["op"] == "elementwise":
            r = audit_elementwise(x, y, c["fn"], platform=c["platforms"], threads=threads,
                                  x_dtype=c["dtype"], out_dtype=c["out_dtype"])
        else:
            r = _audit_axis(c["op"], x, y, c.get("axis", -1), arr("weight"), arr("bias"), c.get("eps"),
                            c["platforms"], "rne", False, 20, threads, c["dtype"], c["out_dtype"],
                            c.get("weight_dtype"), c.get("bias_dtype"))
        best = r.best_platform or c["platforms"][0]
        passed = any(p["name"] == best and p["counts"]["unexplained"] == 0 for p in r.platforms)
        out.append(Replayed(c["name"], passed, best, r))
    return out


#: Exit status of ``--all-under`` when it finds no recording (ctest's SKIP_RETURN_CODE).
NOTHING_TO_REPLAY = 77


def main(argv: Optional[Sequence[str]] = None) -> int:
    """python -m fpconform.recordings DIR [DIR ...]: replays recordings; exit 1 if a case fails.
    --all-under ROOT replays every ROOT/*/manifest.json (exit 77 when there is none)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m fpconform.recordings", description=main.__doc__)
    ap.add_argument("dirs", nargs="*", help="recording directories (each with manifest.json)")
    ap.add_argument("--all-under", metavar="ROOT", help="every recording directory below ROOT")
    args = ap.parse_args(argv)
    dirs = list(args.dirs)
    if args.all_under:
        dirs += sorted(str(m.parent) for m in Path(args.all_under).glob("*/manifest.json"))
        if not dirs:
            print(f"no recordings under {args.all_under}: nothing to replay (record one on a GPU with "
                  f"conformance/composite_probe/record_composites.py)")
            return NOTHING_TO_REPLAY
    if not dirs:
        ap.error("name a recording directory or --all-under ROOT")
    failed = 0
    for directory in dirs:
        for r in replay(directory):
            failed += not r.passed
            print(f"{'PASS' if r.passed else 'FAIL'}  {directory}/{r.name}  against {r.platform}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
