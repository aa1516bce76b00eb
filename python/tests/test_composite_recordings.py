"""Recordings of real composite-kernel outputs (fpconform.recordings): every recording checked in
under conformance/data/composite/ replays (each case explained by one of its platforms); the
writer and replay round trip on emulated outputs and catch a wrong one; manifest errors; and,
opt-in where torch is installed, conformance/composite_probe/record_composites.py on the CPU
replayed against the torch-cpu presets."""

import json
import py_compile
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import fpconform
from fpconform import recordings

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = sorted((ROOT / "conformance" / "data" / "composite").glob("*/manifest.json"))
SCRIPT = ROOT / "conformance" / "composite_probe" / "record_composites.py"


@pytest.mark.parametrize("manifest", RECORDINGS, ids=[m.parent.name for m in RECORDINGS])
def test_checked_in_recordings_replay(manifest):
    failed = [f"{r.name} against {r.platform}: {r.audit}" for r in recordings.replay(str(manifest.parent))
              if not r.passed]
    assert not failed, "\n".join(failed)


def test_checked_in_recordings_exist_or_say_how_to_make_one():
    if not RECORDINGS:
        pytest.skip("no composite recordings are checked in: record one on a GPU with "
                    "conformance/composite_probe/record_composites.py (conformance/data/README.md)")


def test_round_trip_names_the_platform_and_catches_a_wrong_output(tmp_path, rng):
    x = (rng.standard_normal((4, 256)) * 3).astype(np.float32)
    xb = x.astype(ml_dtypes.bfloat16)
    w = (1 + 0.1 * rng.standard_normal(256)).astype(ml_dtypes.bfloat16)
    gelu, _, _ = fpconform.emulate_elementwise(x, "gelu", "torch-cuda-f32")
    gelu_tanh, _, _ = fpconform.emulate_elementwise(x, "gelu_tanh", "torch-cuda-f32")
    rms, _, _ = fpconform.emulate_rmsnorm(xb, "hf-llama-rmsnorm-cuda-bf16", eps=1e-6, weight=w)
    sm, _, _ = fpconform.emulate_softmax(x, "torch-cpu-rows-f32")
    good = recordings.Writer(tmp_path / "good", device="emulated", library="fpconform")
    good.add("gelu", "elementwise", x, gelu, ["torch-cpu-f32", "torch-cuda-f32"], fn="gelu")
    good.add("rms", "rmsnorm", xb, rms, ["hf-llama-rmsnorm-cuda-bf16", "torch-cuda-rows-bf16"], eps=1e-6,
             weight=w)
    good.add("softmax", "softmax", x, sm, ["torch-cpu-rows-f32"])
    good.close()
    replayed = {r.name: r for r in recordings.replay(str(tmp_path / "good"))}
    assert all(r.passed for r in replayed.values()), {n: str(r.audit) for n, r in replayed.items()}
    # The exact models are named: the emulated bits are theirs.
    assert replayed["rms"].platform == "hf-llama-rmsnorm-cuda-bf16"
    assert replayed["gelu"].audit.counts["identical"] + replayed["gelu"].audit.counts["within_bound"] == x.size

    bad = recordings.Writer(tmp_path / "bad", device="emulated", library="fpconform")
    bad.add("gelu-is-tanh", "elementwise", x, gelu_tanh, ["torch-cuda-f32"], fn="gelu")
    bad.close()
    (r,) = recordings.replay(str(tmp_path / "bad"))
    assert not r.passed and r.audit.counts["unexplained"] > 0
    assert recordings.main([str(tmp_path / "good")]) == 0
    assert recordings.main([str(tmp_path / "bad")]) == 1


def test_writer_and_manifest_errors(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="not empty"):
        recordings.Writer(tmp_path / "full", device="d", library="l")
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    w = recordings.Writer(tmp_path / "r", device="d", library="l")
    with pytest.raises(ValueError, match="fn is given exactly"):
        w.add("a", "elementwise", np.float32([1.0]), np.float32([1.0]), ["torch-cuda-f32"])
    with pytest.raises(ValueError, match="op 'gemm'"):
        w.add("a", "gemm", np.float32([1.0]), np.float32([1.0]), ["torch-cuda-f32"])
    w.add("a", "elementwise", np.float32([1.0]), np.float32([2.7182817]), ["torch-cuda-f32"], fn="exp")
    with pytest.raises(ValueError, match="repeated"):
        w.add("a", "elementwise", np.float32([1.0]), np.float32([2.7182817]), ["torch-cuda-f32"], fn="exp")
    w.close()
    m = json.loads((tmp_path / "r" / "manifest.json").read_text())
    del m["cases"][0]["out"]
    (tmp_path / "r" / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ValueError, match=r"manifest.json: cases\[0\].out: missing"):
        recordings.replay(str(tmp_path / "r"))


def test_recording_script_compiles_and_refuses_a_used_directory(tmp_path):
    py_compile.compile(str(SCRIPT), cfile=str(tmp_path / "s.pyc"), doraise=True)
    r = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--compile" in r.stdout


def test_recording_script_on_the_cpu_replays_against_the_torch_cpu_presets(tmp_path):
    pytest.importorskip("torch", reason="torch is not installed (opt-in: pip install torch)")
    r = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--out", str(tmp_path / "cpu")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    failed = [f"{x.name}: {x.audit}" for x in recordings.replay(str(tmp_path / "cpu")) if not x.passed]
    assert not failed, "\n".join(failed)


def test_all_under_replays_each_recording_or_says_there_is_none(tmp_path, rng):
    assert recordings.main(["--all-under", str(tmp_path)]) == recordings.NOTHING_TO_REPLAY
    x = (rng.standard_normal((2, 64))).astype(np.float32)
    y, _, _ = fpconform.emulate_softmax(x, "torch-cuda-rows-f32")
    w = recordings.Writer(tmp_path / "one", device="emulated", library="fpconform")
    w.add("softmax", "softmax", x, y, ["torch-cuda-rows-f32"])
    w.close()
    assert recordings.main(["--all-under", str(tmp_path)]) == 0
