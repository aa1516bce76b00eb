"""Shared fixtures of the fpconform pytest suite: the CLI whose results the package must match
bit for bit ($FPCONFORM_CLI, else <build>/cli/fpconform next to a build tree's python/), and a
helper that runs it."""

import json
import os
import subprocess
from pathlib import Path

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
        env = dict(os.environ, FPCONFORM_MODELS_DIR=fpconform.models_dir(), CI="true")
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


@pytest.fixture
def rng():
    return np.random.default_rng(20261201)


def save(tmp_path, name, arr):
    """np.save of arr (ml_dtypes arrays too) into tmp_path; returns the path."""
    path = tmp_path / f"{name}.npy"
    np.save(path, arr)
    return path
