"""Recordings of real composite-kernel outputs (activations, softmax, norms) and of real attention
(SDPA) outputs, and their replay.

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

Attention recordings (issue 27) are written by ``conformance/attention_probe/record_sdpa.py`` (torch
SDPA with each backend forced) with ``AttentionWriter``; their manifest says
``"fpconform_attention_recording": 1`` and holds per case the q, k, v (and mask, LSE) files, the
backend asked for and the one the profiler saw, and ``expected``: the attention model
(composite/attention_models) that must explain the output, or null with ``expected_note`` saying
why there is none::

    {"fpconform_attention_recording": 1, "device": "NVIDIA H200", "library": "torch 2.11.0+cu130",
     "environment": {...}, "cases": [
      {"name": "bf16-flash_attention-s1024-d128-causal", "status": "recorded",
       "backend": "FLASH_ATTENTION", "backend_used": "FLASH_ATTENTION", "causal": true,
       "scale": null, "enable_gqa": false, "expected": "flash-attention2-cuda-bf16",
       "expected_note": "", "q": "....q.npy", "q_dtype": "bfloat16", "k": ..., "v": ...,
       "out": "....out.npy", "out_dtype": "bfloat16", "mask": null, "mask_dtype": null,
       "lse": "....lse.npy", "lse_dtype": "float32", "shape": {"q": [1, 2, 1024, 128], ...}, ...},
      {"name": "bf16-efficient_attention-s1024-d64-gqa", "status": "unsupported",
       "backend": "EFFICIENT_ATTENTION", "reason": "No available kernel. ..."}, ...]}

``replay_attention(dir)`` audits every recorded case against its expected model and against
``auto``; a case passes when its expected model explains every element (audit verdict
pass, no unexplained element). A case without an expected model is only reported; a case whose
backend refused (``status: "unsupported"``) is listed with the reason. The LSE is recorded but
not audited (no LSE audit exists yet). Checked-in ones live in ``conformance/data/attention/``
(ctest ``attention_recordings_replay``, ``python/tests/test_attention_recordings.py``).

>>> import tempfile, numpy as np, fpconform
>>> from fpconform import recordings
>>> scratch = tempfile.TemporaryDirectory(); d = scratch.name
>>> x = np.float32([[0.0, 1.0, 2.0]])
>>> y, _, _ = fpconform.emulate_softmax(x, "torch-cpu-rows-f32")
>>> w = recordings.Writer(d, device="cpu", library="numpy emulation")
>>> w.add("softmax-demo", "softmax", x, y, platforms=["torch-cpu-rows-f32"])
>>> w.close()
>>> [(r.name, r.passed, r.platform) for r in recordings.replay(d)]
[('softmax-demo', True, 'torch-cpu-rows-f32')]
>>> q = np.float32([[1.0, 0.0], [0.0, 1.0]]); kv = np.float32([[1.0, 0.0], [0.5, 0.5]])
>>> scratch2 = tempfile.TemporaryDirectory()
>>> a = recordings.AttentionWriter(scratch2.name, device="cpu", library="fpconform oracle")
>>> a.add("exact-2x2", q, kv, kv, fpconform.exact_attention(q, kv, kv), expected="torch-math-sdpa-cpu-f32",
...       backend="oracle")
>>> a.close()
>>> [(r.name, r.status, r.passed) for r in recordings.replay(a.dir)]
[('exact-2x2', 'pass', True)]
>>> scratch.cleanup(); scratch2.cleanup()
"""

from __future__ import annotations

import json
import os
import sys
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


class _RecordingWriter:
    """What both writers share: the directory (new, or empty: a recording never overwrites files),
    the manifest (`header`'s keys, then "cases"), the case names taken, and ``close``."""

    def __init__(self, directory: str, header: dict) -> None:
        self.dir = Path(directory)
        if self.dir.exists() and any(self.dir.iterdir()):
            raise ValueError(f"{directory}: exists and is not empty (a recording never overwrites files)")
        self.dir.mkdir(parents=True, exist_ok=True)
        self.manifest = {**header, "cases": []}
        self._names: set = set()

    def close(self) -> None:
        """Writes manifest.json (through a temporary file, replaced in one step)."""
        tmp = self.dir / "manifest.json.tmp"
        tmp.write_text(json.dumps(self.manifest, indent=1) + "\n")
        os.replace(tmp, self.dir / "manifest.json")


class Writer(_RecordingWriter):
    """Writes a recording directory: ``add`` each case, then ``close`` (writes manifest.json).

    The directory must not exist or be empty: a recording never overwrites files.
    """

    def __init__(self, directory: str, device: str, library: str, **info: Any) -> None:
        super().__init__(directory, {"fpconform_composite_recording": FORMAT_VERSION, "device": device,
                                     "library": library, **info})

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


@dataclass
class Replayed:
    name: str
    passed: bool
    platform: str      # The platform the verdict is against (the best-explaining one).
    audit: Any         # The fpconform.Audit.


def load(directory: str) -> dict:
    """manifest.json of a recording, checked: ValueError naming the file and the field."""
    path, m = _manifest(directory)
    if m.get("fpconform_composite_recording") != FORMAT_VERSION:
        raise ValueError(f"{path}: fpconform_composite_recording: expected {FORMAT_VERSION}")
    for i, c in enumerate(m.get("cases", [])):
        for key in ("name", "op", "dtype", "out_dtype", "x", "out", "platforms"):
            if key not in c:
                raise ValueError(f"{path}: cases[{i}].{key}: missing")
        if c["op"] not in _OPS:
            raise ValueError(f"{path}: cases[{i}].op: '{c['op']}' is not one of {', '.join(_OPS)}")
    return m


def replay(directory: str, threads: Optional[int] = None) -> list:
    """Audits every case of a recording against its platforms (all of them at once: the verdict
    is against the best-explaining one). An attention recording is replayed by
    ``replay_attention`` (its results are ``ReplayedAttention``)."""
    from . import audit_elementwise, _audit_axis

    if is_attention(str(directory)):
        return replay_attention(str(directory), threads)
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


ATTENTION_FORMAT_VERSION = 1
#: Values of a case's ``status`` in an attention recording's manifest.
ATTENTION_STATUSES = ("recorded", "unsupported")


class AttentionWriter(_RecordingWriter):
    """Writes an attention recording directory (``add`` / ``unsupported`` per case, then ``close``).

    The directory must not exist or be empty. Arrays are saved as raw bits (numpy, ml_dtypes or
    torch; bfloat16 as uint16 with its format named in the manifest); a boolean mask as uint8
    0/1 with ``mask_dtype: "bool"`` (True attends), a float mask (added to the scores) as its bits.
    Arrays with the same bits as one already written are not written again: the case names the
    earlier file.
    """

    def __init__(self, directory: str, device: str, library: str, **info: Any) -> None:
        super().__init__(directory, {"fpconform_attention_recording": ATTENTION_FORMAT_VERSION,
                                     "device": device, "library": library, **info})
        self._files: dict = {}

    def _name(self, name: str) -> None:
        if name in self._names or not name or "/" in name:
            raise ValueError(f"case name '{name}' is empty, repeated or holds a '/'")
        self._names.add(name)

    def _save(self, name: str, what: str, a: Any) -> tuple:
        """Saves a's bits as name.what.npy, or names the file already holding the same bits
        (cases that share inputs, e.g. one per backend, share their files)."""
        import hashlib

        fmt, bits = _bits_of(a)
        bits = np.ascontiguousarray(bits)
        self._shape = list(bits.shape)
        key = (fmt, tuple(bits.shape), hashlib.sha256(bits.tobytes()).hexdigest())
        if key in self._files:
            return fmt, self._files[key]
        path = f"{name}.{what}.npy"
        np.save(self.dir / path, bits)
        self._files[key] = path
        return fmt, path

    def add(self, name: str, q: Any, k: Any, v: Any, out: Any, *, expected: Optional[str],
            expected_note: str = "", backend: str, backend_used: Optional[str] = None, causal: bool = False,
            scale: Optional[float] = None, mask: Any = None, lse: Any = None, enable_gqa: bool = False,
            **extra: Any) -> None:
        """One recorded case: out = SDPA(q, k, v) as the library computed it. ``expected`` is the
        attention model that must explain it, or None (then ``expected_note`` says why)."""
        if expected is None and not expected_note:
            raise ValueError(f"{name}: a case without an expected model says why (expected_note)")
        self._name(name)
        case = {"name": name, "status": "recorded", "backend": backend,
                "backend_used": backend if backend_used is None else backend_used,
                "causal": bool(causal), "scale": None if scale is None else float(scale),
                "enable_gqa": bool(enable_gqa), "expected": expected, "expected_note": expected_note}
        from . import _numpy

        case["shape"] = {}
        for what, a in (("q", q), ("k", k), ("v", v), ("out", out)):
            case[f"{what}_dtype"], case[what] = self._save(name, what, a)
            case["shape"][what] = self._shape
        case["mask"] = case["mask_dtype"] = None
        if mask is not None:
            m, _ = _numpy(mask, "mask")
            if m.dtype == np.bool_:
                _, case["mask"] = self._save(name, "mask", m.astype(np.uint8))
                case["mask_dtype"] = "bool"
            else:
                case["mask_dtype"], case["mask"] = self._save(name, "mask", mask)
        case["lse"] = case["lse_dtype"] = None
        if lse is not None:
            case["lse_dtype"], case["lse"] = self._save(name, "lse", lse)
        case.update(extra)
        self.manifest["cases"].append(case)

    def unsupported(self, name: str, *, backend: str, reason: str, **extra: Any) -> None:
        """A case the backend refused: no files, the reason in the manifest."""
        self._name(name)
        self.manifest["cases"].append({"name": name, "status": "unsupported", "backend": backend,
                                       "reason": reason, **extra})


@dataclass
class ReplayedAttention:
    name: str
    status: str        # pass, fail (the expected model leaves elements unexplained), reported (no
                       # expected model: counts only), unsupported (the backend refused).
    passed: bool       # False only for status fail.
    expected: Optional[str]
    audit: Any         # The audit against the expected model (None without one).
    auto: Any          # The audit against auto (None for unsupported cases or with auto=False).
    note: str = ""     # expected_note, or the backend's refusal.


def _manifest(directory: str) -> tuple:
    path = Path(directory) / "manifest.json"
    try:
        m = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: {e}") from e
    if not isinstance(m, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return path, m


def load_attention(directory: str) -> dict:
    """manifest.json of an attention recording, checked: ValueError naming the file and field."""
    path, m = _manifest(directory)
    if m.get("fpconform_attention_recording") != ATTENTION_FORMAT_VERSION:
        raise ValueError(f"{path}: fpconform_attention_recording: expected {ATTENTION_FORMAT_VERSION}")
    for i, c in enumerate(m.get("cases", [])):
        st = c.get("status")
        if st not in ATTENTION_STATUSES:
            raise ValueError(f"{path}: cases[{i}].status: '{st}' is not one of {', '.join(ATTENTION_STATUSES)}")
        keys = ("name", "backend", "reason") if st == "unsupported" else (
            "name", "backend", "q", "k", "v", "out", "q_dtype", "k_dtype", "v_dtype", "out_dtype", "causal",
            "expected")
        for key in keys:
            if key not in c:
                raise ValueError(f"{path}: cases[{i}].{key}: missing")
        if st == "recorded" and c["expected"] is None and not c.get("expected_note"):
            raise ValueError(f"{path}: cases[{i}].expected_note: missing (a case without an expected "
                             f"model says why)")
    return m


def replay_attention(directory: str, threads: Optional[int] = None, auto: bool = True) -> List[ReplayedAttention]:
    """Audits every recorded case of an attention recording against its expected model and
    (``auto``) against every model, the best-explaining one named."""
    from . import audit_attention

    m = load_attention(directory)
    d = Path(directory)
    out: List[ReplayedAttention] = []
    for c in m["cases"]:
        if c["status"] == "unsupported":
            out.append(ReplayedAttention(c["name"], "unsupported", True, None, None, None, c["reason"]))
            continue
        mask, mask_dtype = None, None
        if c.get("mask") is not None:
            mask = np.load(d / c["mask"])
            if c.get("mask_dtype") == "bool":
                mask = mask.astype(bool)
            else:
                mask_dtype = c.get("mask_dtype")
        kw = dict(mask=mask, causal=bool(c["causal"]), scale=c.get("scale"), threads=threads,
                  q_dtype=c["q_dtype"], k_dtype=c["k_dtype"], v_dtype=c["v_dtype"], out_dtype=c["out_dtype"],
                  mask_dtype=mask_dtype)
        q, k, v, o = (np.load(d / c[w]) for w in ("q", "k", "v", "out"))
        r_exp = audit_attention(q, k, v, o, platform=c["expected"], **kw) if c["expected"] else None
        r_auto = audit_attention(q, k, v, o, platform="auto", **kw) if auto else None
        if r_exp is None:
            status = "reported"
        else:
            status = "pass" if r_exp.verdict == "pass" and r_exp.counts["unexplained"] == 0 else "fail"
        out.append(ReplayedAttention(c["name"], status, status != "fail", c["expected"], r_exp, r_auto,
                                     c.get("expected_note", "")))
    return out


def _counts(a: Any) -> str:
    c = a.counts
    return (f"identical {c['identical']} within_bound {c['within_bound']} "
            f"within_tolerance {c['within_tolerance']} unexplained {c['unexplained']}")


def is_attention(directory: str) -> bool:
    """Whether directory/manifest.json is an attention recording (else a composite one)."""
    return "fpconform_attention_recording" in _manifest(directory)[1]


#: Exit status of ``--all-under`` when it finds no recording (ctest's SKIP_RETURN_CODE).
NOTHING_TO_REPLAY = 77


_EPILOG = """examples:
  python -m fpconform.recordings rec-h200                      # one recording (composite or attention)
  python -m fpconform.recordings --all-under conformance/data/attention
  python -m fpconform.recordings --no-auto rec-sdpa-h200       # attention: the expected models only

Attention cases print one line each: PASS / FAIL (the expected model explains every element, or
not), INFO (no expected model: counts only, never a failure), SKIP (the backend refused the case),
with the class counts against the expected model and against auto (its best-explaining model)."""


def main(argv: Optional[Sequence[str]] = None) -> int:
    """python -m fpconform.recordings DIR [DIR ...]: replays recordings (composite or attention);
    exit 1 if a case fails, 2 on a bad manifest. --all-under ROOT replays every
    ROOT/*/manifest.json (exit 77 when there is none)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m fpconform.recordings", description=main.__doc__,
                                 epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="*", help="recording directories (each with manifest.json)")
    ap.add_argument("--all-under", metavar="ROOT", help="every recording directory below ROOT")
    ap.add_argument("--no-auto", action="store_true",
                    help="attention: audit against the expected models only (auto audits every model: slower)")
    ap.add_argument("--threads", type=int, default=None, help="audit threads (default: all cores)")
    args = ap.parse_args(argv)
    dirs = list(args.dirs)
    if args.all_under:
        dirs += sorted(str(m.parent) for m in Path(args.all_under).glob("*/manifest.json"))
        if not dirs:
            print(f"no recordings under {args.all_under}: nothing to replay (record one with "
                  f"conformance/composite_probe/record_composites.py or "
                  f"conformance/attention_probe/record_sdpa.py)")
            return NOTHING_TO_REPLAY
    if not dirs:
        ap.error("name a recording directory or --all-under ROOT")
    failed = 0
    for directory in dirs:
        try:
            attention = is_attention(directory)
            results = (replay_attention(directory, args.threads, not args.no_auto) if attention
                       else replay(directory, args.threads))
        except ValueError as e:
            print(f"python -m fpconform.recordings: {e}", file=sys.stderr)
            return 2
        for r in results:
            failed += not r.passed
            if not attention:
                print(f"{'PASS' if r.passed else 'FAIL'}  {directory}/{r.name}  against {r.platform}")
                continue
            word = {"pass": "PASS", "fail": "FAIL", "reported": "INFO", "unsupported": "SKIP"}[r.status]
            line = f"{word}  {directory}/{r.name}"
            if r.status == "unsupported":
                print(f"{line}  unsupported: {r.note}")
                continue
            line += (f"  expected {r.expected}: {_counts(r.audit)}" if r.audit is not None
                     else f"  expected none ({r.note})")
            if r.auto is not None:
                line += f"; auto: {r.auto.best_platform}: {_counts(r.auto)}"
            print(line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
