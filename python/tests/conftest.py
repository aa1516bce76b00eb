"""Shared fixtures of the fpconform pytest suite: the CLI whose results the package must match
bit for bit ($FPCONFORM_CLI, else <build>/cli/fpconform next to a build tree's python/), and a
helper that runs it; random_seed (the seed of a randomized test: $FPCONFORM_SEED or the test's
default), rng, and the bfloat16 inputs several files share (bf16, bf16_matmul, heads); save (an
array into a .npy file) and sdpa64 (a float64 NumPy attention reference)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import fpconform

pytest_plugins = ["pytester"]


def _find_cli():
    env = os.environ.get("FPCONFORM_CLI")
    if env:
        return Path(env)
    guess = Path(fpconform.__file__).resolve().parents[2] / "cli" / "fpconform"
    return guess if guess.is_file() else None


@pytest.fixture(scope="session")
def cli():
    path = _find_cli()
    if path is None or not path.is_file():
        if os.environ.get("FPCONFORM_REQUIRE_CLI") == "1":
            pytest.fail("FPCONFORM_REQUIRE_CLI=1 but the fpconform CLI was not found (set FPCONFORM_CLI)")
        pytest.skip("the fpconform CLI is not built here (set FPCONFORM_CLI to compare with it)")
    return str(path)


class Cli:
    def __init__(self, path):
        self.path = path

    def run(self, *args, input=None, check=True):
        # The CLI reads the data the package reads (README "Where the data comes from").
        env = dict(os.environ, FPCONFORM_MODELS_DIR=fpconform.models_dir(),
                   FPCONFORM_COMPOSITE_MODELS_DIR=fpconform.composite_models_dir(),
                   FPCONFORM_ATTENTION_MODELS_DIR=fpconform.attention_models_dir(),
                   FPCONFORM_SWEEP_FILE=fpconform.sweep_file(), CI="true")
        p = subprocess.run([self.path, *map(str, args)], input=input, capture_output=True, text=True, env=env)
        if check and p.returncode not in (0, 1):
            raise AssertionError(f"fpconform {' '.join(map(str, args))}: exit {p.returncode}\n{p.stderr}")
        return p

    def calc(self, lines):
        """Runs `fpconform calc` on the lines; returns the result bits (ints), one per line."""
        p = self.run("calc", input="\n".join(lines) + "\n")
        out = p.stdout.splitlines()
        assert len(out) == len(lines), p.stderr
        assert "error" not in out, p.stderr
        return [int(line.split()[0], 16) for line in out]

    def audit_json(self, *args):
        p = self.run(*args, "--json", "-", "--progress", "never")
        # The summary is printed first, then the JSON document.
        start = p.stdout.index('{\n') if '{\n' in p.stdout else p.stdout.index("{")
        return json.loads(p.stdout[start:]), p


@pytest.fixture(scope="session")
def fpc(cli):
    return Cli(cli)


def _env_seed():
    """$FPCONFORM_SEED as an integer (decimal, or hex with 0x), or None where it is unset or empty."""
    text = os.environ.get("FPCONFORM_SEED", "")
    if not text:
        return None
    try:
        seed = int(text, 0)
    except ValueError:
        seed = -1
    if not 0 <= seed < 2**64:
        raise pytest.UsageError(f"FPCONFORM_SEED={text!r}: expected an integer in [0, 2^64), decimal or 0x hex")
    return seed


def pytest_configure(config):
    _env_seed()  # An unparsable FPCONFORM_SEED stops the run before the first test.


def pytest_report_header(config):
    seed = _env_seed()
    return f"FPCONFORM_SEED={seed}" if seed is not None else "FPCONFORM_SEED unset: each test's default seed"


def random_seed(default):
    """The seed of a randomized test's inputs: $FPCONFORM_SEED when set and not empty, else default
    (the C++ tests' TestSeed, cases/test_seed.h). Printed as TestSeed prints it: pytest shows the
    line with a failed test's captured output."""
    seed = _env_seed()
    seed = default if seed is None else seed
    test = os.environ.get("PYTEST_CURRENT_TEST", "pytest").rsplit(" (", 1)[0]
    print(f"{test}: seed {seed} (FPCONFORM_SEED={seed} replays it)", file=sys.stderr)
    return seed


RNG_SEED = 20261201  # The rng fixture's default seed.


@pytest.fixture
def rng_seed():
    return random_seed(RNG_SEED)


@pytest.fixture
def rng(rng_seed):
    return np.random.default_rng(rng_seed)


def bf16(x):
    """x (array-like) cast to bfloat16 by fpconform (round to nearest even)."""
    return fpconform.cast(np.asarray(x, np.float32), "bfloat16")


def bf16_matmul(rng, k):
    """a (8 x k) and b (k x 6) of bfloat16 normal values from rng, and trainium2-bf16's a @ b."""
    a = bf16(rng.standard_normal((8, k)))
    b = bf16(rng.standard_normal((k, 6)))
    out, _ = fpconform.emulate_matmul(a, b, "trainium2-bf16")
    return a, b, out


@pytest.fixture
def heads(rng):
    """q, k, v: 2 heads x 48 x 32 bfloat16 normal values."""
    q = rng.standard_normal((2, 48, 32)).astype(ml_dtypes.bfloat16)
    k = rng.standard_normal((2, 48, 32)).astype(ml_dtypes.bfloat16)
    v = rng.standard_normal((2, 48, 32)).astype(ml_dtypes.bfloat16)
    return q, k, v


def save(tmp_path, name, arr):
    """np.save of arr (ml_dtypes arrays too) into tmp_path; returns the path."""
    path = tmp_path / f"{name}.npy"
    np.save(path, arr)
    return path


def sdpa64(q, k, v, causal=False, keep=None, scale=None):
    """float64 NumPy SDPA (..., S, D), GQA (3 or more axes) by repeating k and v's heads."""
    qd, kd, vd = (np.asarray(x, np.float64) for x in (q, k, v))
    if qd.ndim >= 3 and kd.shape[-3] != qd.shape[-3]:
        g = qd.shape[-3] // kd.shape[-3]
        kd, vd = np.repeat(kd, g, axis=-3), np.repeat(vd, g, axis=-3)
    s = (1 / np.sqrt(qd.shape[-1]) if scale is None else scale) * qd @ np.swapaxes(kd, -1, -2)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if keep is not None:
        s = np.where(keep, s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ vd
