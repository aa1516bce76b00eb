"""torch tensors are accepted when torch is installed (never required), bfloat16 and float8
included (torch's .numpy() refuses them: their bits are viewed as integers first); and torch's CPU
SDPA (math backend and CPU flash kernel) stays inside the torch-math-sdpa-cpu attention models."""

import numpy as np
import pytest

import fpconform
from conftest import random_seed

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


# ---- torch's CPU SDPA against the torch CPU attention models (issue 27, section 5) ----
# Opt-in as the rest of this file: skipped without torch. The math backend against
# torch-math-sdpa-cpu-f32 / -bf16 and torch's CPU flash kernel (the one
# scaled_dot_product_attention picks on the CPU by default) against torch-flash-sdpa-cpu-f32 /
# -bf16, float32 and bfloat16: every element identical or within the model's bound, and the
# bfloat16 math output (upcast to float32, rounded once) identical on at least 99% of elements. The counts are printed (pytest -s). Measured with torch 2.15.0+cu132 on an AVX512 x86 CPU:
# conformance/data/README.md ("Attention recordings").

SDPA_SHAPES = {  # (query heads, key/value heads, S, D, causal, scale)
    "s128-d64": (2, 2, 128, 64, False, None),
    "s128-d64-causal": (2, 2, 128, 64, True, None),
    "s96-d32-gqa4x2": (4, 2, 96, 32, False, None),
    "s200-d64-scale0.3-causal": (1, 1, 200, 64, True, 0.3),
}


@pytest.mark.parametrize("shape", sorted(SDPA_SHAPES))
@pytest.mark.parametrize("backend", ["MATH", "FLASH_ATTENTION"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_torch_cpu_sdpa_inside_the_torch_cpu_attention_models(dtype, backend, shape):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    hq, hkv, s, d, causal, scale = SDPA_SHAPES[shape]
    g = torch.Generator().manual_seed(random_seed(2026))
    t = getattr(torch, dtype)
    q = torch.randn((1, hq, s, d), generator=g).to(t)
    k, v = (torch.randn((1, hkv, s, d), generator=g).to(t) for _ in range(2))
    with torch.no_grad(), sdpa_kernel(getattr(SDPBackend, backend)):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                                             enable_gqa=hq != hkv)
    kind = "torch-math-sdpa-cpu-" if backend == "MATH" else "torch-flash-sdpa-cpu-"
    model = kind + ("f32" if dtype == "float32" else "bf16")
    r = fpconform.audit_attention(q, k, v, o, platform=model, causal=causal, scale=scale)
    c = r.counts
    print(f"\n{dtype} {backend} {shape}: against {model}: {c}")
    assert c["identical"] + c["within_bound"] == o.numel() and r.verdict == "pass", str(r)
    if dtype == "bfloat16" and backend == "MATH":
        assert c["identical"] >= 0.99 * o.numel(), c
