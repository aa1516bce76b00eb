"""conformance/cuda_probe/check_scaled.sh, the checker of the scaled cuBLASLt FP8 recordings
(probe.cu's lt-scaled part), on files laid out as the probe writes them (A row-major, B, C, D
column-major, '<V1' float8): an output made by the presets' after_scale epilogue (one FFMA) is
"confirmed", one made with a multiply and an add (two roundings) is not, and a directory without
cases.txt is a usage error. The probe itself needs nvcc and a GPU; its dry run is checked by
hand (conformance/cuda_probe/run_on_device.sh)."""

import os
import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import fpconform

SCRIPT = Path(__file__).resolve().parents[2] / "conformance" / "cuda_probe" / "check_scaled.sh"
PRESET = "nvidia-h100-fp8e4m3-cublaslt"


def _write_case(root, name, a, b, c, d, sa, sb):
    case = root / name
    case.mkdir()
    np.save(case / "a.npy", a)
    for key, x in (("b", b), ("c", c), ("d", d)):
        np.save(case / f"{key}.npy", np.asfortranarray(x))
    np.save(case / "scale_a.npy", sa)
    np.save(case / "scale_b.npy", sb)
    with open(root / "cases.txt", "a") as f:
        f.write(f"{name} {PRESET}\n")


def _check(cli, root):
    env = dict(os.environ, FPCONFORM_MODELS_DIR=fpconform.models_dir())
    return subprocess.run(["bash", str(SCRIPT), str(root), cli], capture_output=True, text=True, env=env)


@pytest.mark.skipif(not SCRIPT.is_file(), reason="needs the source tree's conformance/cuda_probe")
def test_check_scaled_tells_one_rounding_from_two(cli, tmp_path, rng):
    m, k, n = 16, 256, 16
    e4m3 = ml_dtypes.float8_e4m3fn
    a = (rng.standard_normal((m, k)) * 4).astype(e4m3)
    b = (rng.standard_normal((k, n)) * 4).astype(e4m3)
    c = rng.standard_normal((m, n)).astype(np.float32) * 100
    sa = rng.uniform(1, 4, 1).astype(np.float32)
    sb = rng.uniform(1, 4, n).astype(np.float32)
    one, _ = fpconform.emulate_matmul(a, b, PRESET, c=c, scale_a=sa, scale_b=sb)
    acc, _ = fpconform.emulate_matmul(a, b, PRESET)  # The chain from +0.
    s = sa * sb  # float32: fl32(s_a s_b) per column.
    two = (s[None, :] * acc).astype(np.float32) + c
    assert np.any(one != two), "the inputs must tell one rounding from two"

    confirmed = tmp_path / "one"
    confirmed.mkdir()
    _write_case(confirmed, "rowcol-k256", a, b, c, one, sa, sb)
    p = _check(cli, confirmed)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"identical {m * n} within_bound 0" in p.stdout and "confirmed: every element" in p.stdout

    refuted = tmp_path / "two"
    refuted.mkdir()
    _write_case(refuted, "rowcol-k256", a, b, c, one, sa, sb)
    _write_case(refuted, "rowcol-k256-two-roundings", a, b, c, two, sa, sb)
    p = _check(cli, refuted)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "not confirmed" in p.stdout

    p = _check(cli, tmp_path / "missing")
    assert p.returncode == 2 and "needs" in p.stderr
