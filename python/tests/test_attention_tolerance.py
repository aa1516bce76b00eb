"""fpconform.tolerance("attention", ...) (issue 27 §4): the typed call gives the numbers of the
attention table's row (`fpconform tolerance --ops attention`'s attention.csv) for the same sweep
file, platform, S, D, mask and distribution; the bound-covering recommendation accepts the
model's own emulated output; bad arguments are refused with what to give."""

import csv

import ml_dtypes
import numpy as np
import pytest

import fpconform
from conftest import random_seed

SWEEP = """seed = {seed}
samples = 8
ops = ["attention"]
ks = [64]
distributions = ["normal"]

[attention]
lengths = [96]
head_dims = [32]
masks = ["none", "causal"]
distributions = ["normal", "peaked"]
rows = 12
cases = 4
platforms = ["flash-attention2-cuda-bf16", "nki-flash-fwd-bf16", "torch-math-sdpa-cpu-f32"]
cross = []
"""

COLUMNS = {"rtol": "rec_rtol", "atol": "rec_atol", "prob_rtol": "prob_rtol", "prob_atol": "prob_atol",
           "ulp": "rec_ulp", "bound_abs": "bound_abs", "ess_median": "ess_median"}


def test_the_typed_call_is_the_tables_row(fpc, tmp_path, monkeypatch):
    sweep = tmp_path / "s.toml"
    # A sweep file's seed is a TOML integer, below 2^63: a larger FPCONFORM_SEED is taken mod 2^63.
    sweep.write_text(SWEEP.format(seed=random_seed(5) % 2**63))
    out = tmp_path / "report"
    fpc.run("tolerance", "--sweep", str(sweep), "--out", str(out), "--progress", "never")
    rows = list(csv.DictReader(open(out / "attention.csv")))
    assert len(rows) == 12  # 3 platforms x 2 masks x 2 distributions.
    monkeypatch.setenv("FPCONFORM_SWEEP_FILE", str(sweep))
    for row in rows:
        t = fpconform.tolerance("attention", row["dtype"], int(row["s"]), row["platform"], d=int(row["d"]),
                                causal=row["causal"] == "yes", distribution=row["distribution"])
        for key, column in COLUMNS.items():
            assert t[key] == float(row[column]), (row["platform"], row["causal"], row["distribution"], key)
        assert t["rows"] == int(row["rows"]) == 12
        assert (t["op"], t["k"], t["d"], t["platform"]) == ("attention", 96, 32, row["platform"])


def test_the_recommendation_accepts_the_models_own_output_on_like_inputs(rng):
    """The rule covers every conforming output of the table's own rows (sweep_test checks that);
    on other N(0, 1) inputs of the same shape it is a recommendation, not a bound: nearly every
    element of the model's emulated output passes it."""
    q, k, v = (rng.standard_normal((1, 4, 256, 64)).astype(ml_dtypes.bfloat16) for _ in range(3))
    platform = "flash-attention2-cuda-bf16"
    t = fpconform.tolerance("attention", "bfloat16", 256, platform, d=64, causal=True)
    assert min(t["rtol"], t["atol"], t["prob_rtol"], t["prob_atol"]) > 0
    assert 1 <= t["ess_median"] <= 256
    out, lo, hi = fpconform.emulate_attention(q, k, v, platform, causal=True)
    exact = fpconform.exact_attention(q, k, v, causal=True, out_dtype=np.float64)
    err = np.abs(out.astype(np.float64) - exact)
    assert np.mean(err <= t["atol"] + t["rtol"] * np.abs(exact)) >= 0.999
    # Every element within its bound, which the recommendation does not replace.
    assert ((lo <= exact) & (exact <= hi)).all()


def test_bad_arguments():
    with pytest.raises(ValueError, match="give d=, the head dimension"):
        fpconform.tolerance("attention", "bfloat16", 128, "flash-attention2-cuda-bf16")
    with pytest.raises(ValueError, match="takes bfloat16 inputs, not float16"):
        fpconform.tolerance("attention", "float16", 128, "flash-attention2-cuda-bf16", d=64)
    with pytest.raises(ValueError, match="unknown attention platform 'fa3'.*nki-flash-fwd-bf16"):
        fpconform.tolerance("attention", "bfloat16", 128, "fa3", d=64)
    with pytest.raises(ValueError, match="unknown distribution 'uniform'"):
        fpconform.tolerance("attention", "bfloat16", 128, "flash-attention2-cuda-bf16", d=64,
                            distribution="uniform")
    with pytest.raises(ValueError, match="S = 0: must be in 1"):
        fpconform.tolerance("attention", "bfloat16", 0, "flash-attention2-cuda-bf16", d=64)
    with pytest.raises(ValueError, match="for op 'attention', not 'matmul'"):
        fpconform.tolerance("matmul", "bfloat16", 128, "nvidia-h100-bf16", d=64)
