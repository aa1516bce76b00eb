"""Attention recordings (fpconform.recordings, issue 27 section 5): every recording checked in under
conformance/data/attention/ replays (each case with an expected model explained by it); a
synthetic recording (inputs from numpy, outputs from fpconform's exact oracle and a float64 NumPy
reference rounded once: no torch needed) replays, and one whose output applies the scale twice
fails; manifest errors; conformance/attention_probe/record_sdpa.py's expected models exist; and,
opt-in where torch is installed, the script on the CPU replayed."""

import importlib.util
import json
import py_compile
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import fpconform
from conftest import sdpa64
from fpconform import recordings

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = sorted((ROOT / "conformance" / "data" / "attention").glob("*/manifest.json"))
SCRIPT = ROOT / "conformance" / "attention_probe" / "record_sdpa.py"


@pytest.mark.parametrize("manifest", RECORDINGS, ids=[m.parent.name for m in RECORDINGS])
def test_checked_in_recordings_replay(manifest):
    # Against the expected models only: ctest attention_recordings_replay runs auto as well.
    got = recordings.replay_attention(str(manifest.parent), auto=False)
    failed = [f"{r.name} against {r.expected}: {r.audit}" for r in got if not r.passed]
    assert not failed, "\n".join(failed)
    assert any(r.status == "pass" for r in got), "a checked-in recording confirms at least one model"


def test_checked_in_recordings_exist_or_say_how_to_make_one():
    if not RECORDINGS:
        pytest.skip("no attention recordings are checked in: record one with "
                    "conformance/attention_probe/record_sdpa.py (conformance/data/README.md)")


@pytest.fixture
def synthetic(tmp_path, rng):
    """A recording in the shape record_sdpa.py writes, without torch: float32 and bfloat16 cases
    whose outputs are the exact attention rounded once, GQA with a boolean mask and an explicit
    scale, a case without an expected model, a refused backend."""
    bf = ml_dtypes.bfloat16
    q = rng.standard_normal((1, 4, 24, 16)).astype(np.float32)
    k = rng.standard_normal((1, 2, 24, 16)).astype(np.float32)
    v = rng.standard_normal((1, 2, 24, 16)).astype(np.float32)
    keep = rng.random((24, 24)) < 0.7
    np.fill_diagonal(keep, True)
    w = recordings.AttentionWriter(tmp_path / "good", device="synthetic", library="fpconform oracle + numpy")
    w.add("f32-exact", q, k, v, fpconform.exact_attention(q, k, v), expected="torch-math-sdpa-cpu-f32",
          backend="MATH")
    w.add("f32-numpy-causal", q, k, v, sdpa64(q, k, v, causal=True).astype(np.float32), causal=True,
          expected="torch-math-sdpa-cpu-f32", backend="MATH")
    qb, kb, vb = (x.astype(bf) for x in (q, k, v))
    w.add("bf16-gqa-mask-scale", qb, kb, vb,
          fpconform.exact_attention(qb, kb, vb, mask=keep, scale=0.3, out_dtype="bfloat16"),
          mask=keep, scale=0.3, enable_gqa=True, expected="torch-math-sdpa-cpu-bf16", backend="MATH")
    w.add("bf16-no-model", qb, kb, vb, sdpa64(qb, kb, vb).astype(bf), expected=None,
          expected_note="no model of this kernel", backend="FLASH_ATTENTION")
    w.unsupported("bf16-efficient", backend="EFFICIENT_ATTENTION", reason="No available kernel")
    w.close()
    return tmp_path / "good", (q, k, v)


def test_synthetic_recording_replays(synthetic, capsys):
    d, (q, k, v) = synthetic
    m = json.loads((d / "manifest.json").read_text())
    # Inputs shared between cases are written once (bfloat16 q, k, v of two cases).
    assert m["cases"][3]["q"] == m["cases"][2]["q"] and m["cases"][3]["q_dtype"] == "bfloat16"
    assert m["cases"][2]["mask_dtype"] == "bool" and m["cases"][2]["shape"]["q"] == [1, 4, 24, 16]
    got = {r.name: r for r in recordings.replay_attention(str(d))}
    assert {n: r.status for n, r in got.items()} == {
        "f32-exact": "pass", "f32-numpy-causal": "pass", "bf16-gqa-mask-scale": "pass",
        "bf16-no-model": "reported", "bf16-efficient": "unsupported"}
    n = q.size
    for name in ("f32-exact", "f32-numpy-causal", "bf16-gqa-mask-scale"):
        c = got[name].audit.counts
        assert c["unexplained"] == 0 and c["identical"] + c["within_bound"] == n, (name, c)
        assert got[name].auto.counts["unexplained"] == 0
    # The oracle's own output is correctly rounded: auto can say so.
    assert got["f32-exact"].auto.platforms[0]["counts"]["unexplained"] == 0
    assert got["bf16-no-model"].audit is None and got["bf16-no-model"].auto is not None
    assert recordings.main([str(d)]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "INFO" in out and "SKIP" in out and "unsupported: No available kernel" in out
    assert "expected torch-math-sdpa-cpu-bf16: identical" in out and "; auto: " in out
    assert recordings.main(["--no-auto", str(d)]) == 0
    assert "; auto: " not in capsys.readouterr().out


def test_a_wrong_output_fails_its_expected_model(tmp_path, rng, capsys):
    q, k, v = (rng.standard_normal((2, 32, 16)).astype(np.float32) for _ in range(3))
    twice = sdpa64(q, k, v, scale=1 / 16).astype(np.float32)  # scale applied twice: (1/sqrt(16))^2
    w = recordings.AttentionWriter(tmp_path / "bad", device="synthetic", library="numpy")
    w.add("f32-scale-twice", q, k, v, twice, expected="torch-math-sdpa-cpu-f32", backend="MATH")
    w.add("f32-right", q, k, v, sdpa64(q, k, v).astype(np.float32), expected="torch-math-sdpa-cpu-f32",
          backend="MATH")
    w.close()
    got = {r.name: r for r in recordings.replay_attention(str(tmp_path / "bad"), auto=False)}
    assert got["f32-scale-twice"].status == "fail" and not got["f32-scale-twice"].passed
    assert got["f32-scale-twice"].audit.counts["unexplained"] > 0
    assert got["f32-right"].status == "pass"
    assert recordings.main(["--no-auto", str(tmp_path / "bad")]) == 1
    out = capsys.readouterr().out
    assert "FAIL  " in out and "f32-scale-twice" in out
    # --all-under replays every recording below a root and fails when one case does.
    assert recordings.main(["--no-auto", "--all-under", str(tmp_path)]) == 1


def test_all_under_says_when_there_is_nothing(tmp_path, capsys):
    assert recordings.main(["--all-under", str(tmp_path)]) == recordings.NOTHING_TO_REPLAY
    assert "record_sdpa.py" in capsys.readouterr().out


def test_writer_and_manifest_errors(tmp_path, capsys):
    x = np.float32([[1.0, 0.0]])
    w = recordings.AttentionWriter(tmp_path / "r", device="d", library="l")
    with pytest.raises(ValueError, match="says why"):
        w.add("a", x, x, x, x, expected=None, backend="MATH")
    w.add("a", x, x, x, fpconform.exact_attention(x, x, x), expected="torch-math-sdpa-cpu-f32", backend="MATH")
    with pytest.raises(ValueError, match="repeated"):
        w.unsupported("a", backend="MATH", reason="r")
    w.close()
    with pytest.raises(ValueError, match="not empty"):
        recordings.AttentionWriter(tmp_path / "r", device="d", library="l")
    path = tmp_path / "r" / "manifest.json"
    good = json.loads(path.read_text())
    for change, message in ((lambda m: m["cases"][0].pop("out"), r"cases\[0\].out: missing"),
                            (lambda m: m["cases"][0].update(status="maybe"), r"cases\[0\].status: 'maybe'"),
                            (lambda m: m["cases"][0].update(expected=None), r"cases\[0\].expected_note"),
                            (lambda m: m.update(fpconform_attention_recording=2), "expected 1")):
        m = json.loads(json.dumps(good))
        change(m)
        path.write_text(json.dumps(m))
        with pytest.raises(ValueError, match=message):
            recordings.replay_attention(str(tmp_path / "r"))
        assert recordings.main([str(tmp_path / "r")]) == 2
        assert "manifest.json" in capsys.readouterr().err
    # A platform the models do not have is the audit's error, named.
    m = json.loads(json.dumps(good))
    m["cases"][0]["expected"] = "no-such-attention-model"
    path.write_text(json.dumps(m))
    with pytest.raises(ValueError, match="no-such-attention-model"):
        recordings.replay_attention(str(tmp_path / "r"))


def _script():
    spec = importlib.util.spec_from_file_location("record_sdpa", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_recording_script_names_models_that_exist(tmp_path):
    py_compile.compile(str(SCRIPT), cfile=str(tmp_path / "s.pyc"), doraise=True)
    mod = _script()
    models = {p.stem for p in Path(fpconform.attention_models_dir()).glob("*.toml")}
    named = set()
    for device in ("cpu", "cuda"):
        for backend in mod.BACKENDS:
            for dtype in mod.SHORT:
                model, note = mod.expected_model(device, backend, dtype)
                assert (model is None) == bool(note), (device, backend, dtype)
                if model is not None:
                    named.add(model)
    assert named <= models, named - models
    assert named == {"torch-math-sdpa-cpu-f32", "torch-math-sdpa-cpu-bf16", "torch-flash-sdpa-cpu-f32",
                     "torch-flash-sdpa-cpu-bf16", "flash-attention2-cuda-bf16", "flash-attention2-cuda-f16",
                     "torch-mem-efficient-cuda-bf16", "cudnn-sdpa-envelope-bf16"}
    # --list needs no torch: the cases and their expected models.
    r = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "unused"), "--list"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "bf16-flash_attention-s4096-d128-causal  expected flash-attention2-cuda-bf16" in r.stdout
    assert "f16-cudnn_attention-s128-d64  expected none (no cuDNN envelope for float16" in r.stdout
    assert "bf16-cudnn_attention-s128-d64  expected cudnn-sdpa-envelope-bf16" in r.stdout
    assert not (tmp_path / "unused").exists()
    r = subprocess.run([sys.executable, str(SCRIPT), "--list", "--device", "cpu"], capture_output=True, text=True)
    assert "f32-math-s128-d64  expected torch-math-sdpa-cpu-f32" in r.stdout and "s4096" not in r.stdout
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert r.returncode == 2 and "--out DIR is required" in r.stderr
    r = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--device" in r.stdout and "record_sdpa.py --out" in r.stdout
    r = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "x"), "--backends", "FLASH"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "'FLASH' is not one of" in r.stderr


def test_recording_script_on_the_cpu_replays(tmp_path):
    torch = pytest.importorskip("torch", reason="torch is not installed (opt-in: pip install torch)")
    if not torch.cuda.is_available():  # The CUDA default says so and writes nothing.
        r = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "gpu")], capture_output=True,
                           text=True)
        assert r.returncode == 2 and "no CUDA device" in r.stderr and not (tmp_path / "gpu").exists()
    r = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--out", str(tmp_path / "cpu"),
                        "--dtypes", "float32"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = recordings.replay_attention(str(tmp_path / "cpu"), auto=False)
    failed = [f"{x.name}: {x.audit}" for x in got if not x.passed]
    assert not failed, "\n".join(failed)
    m = recordings.load_attention(str(tmp_path / "cpu"))
    used = {c["backend"]: c.get("backend_used") for c in m["cases"] if c["status"] == "recorded"}
    assert used == {"MATH": "MATH", "FLASH_ATTENTION": "FLASH_ATTENTION"}
    assert {x.status for x in got} == {"pass", "unsupported"}  # every recorded CPU case has its model
