"""torch tensors are accepted when torch is installed (never required), bfloat16 and float8
included (torch's .numpy() refuses them: their bits are viewed as integers first)."""

import numpy as np
import pytest

import fpconform

torch = pytest.importorskip("torch", reason="torch is not installed (optional): torch inputs untested here")


def test_torch_inputs_bit_identical_to_numpy():
    x = torch.randn(4, 64, dtype=torch.float32)
    w = torch.randn(64, 3, dtype=torch.float32)
    for dt in [torch.bfloat16, torch.float16, torch.float32]:
        a, b = x.to(dt), w.to(dt)
        an = fpconform.cast(x.numpy(), str(dt).replace("torch.", ""))
        assert fpconform.cast(a, "float32").tobytes() == fpconform.cast(an, "float32").tobytes()
    a, b = x.to(torch.bfloat16), w.to(torch.bfloat16)
    out, _ = fpconform.emulate_matmul(a, b, "nvidia-h100-bf16")
    r = fpconform.audit_matmul(a, b, torch.from_numpy(np.asarray(out)), platform="nvidia-h100-bf16", tolerance=False)
    assert r.verdict == "pass"
    if hasattr(torch, "float8_e4m3fn"):
        q = x.to(torch.float8_e4m3fn)
        assert fpconform.cast(q, "float32").tolist() == q.to(torch.float32).numpy().tolist()
