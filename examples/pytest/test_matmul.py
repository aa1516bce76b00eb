"""A kernel test in the style of aws-neuron/nki-samples' matmul tests, graded by fpconform.

The "kernel" is a numpy emulation of what a Trainium matmul does: bfloat16 inputs, the K
dimension walked in tiles of 128 (the PE array's contraction size), each tile's products summed
in float32 and accumulated into a float32 PSUM buffer. Its output is not bit-identical to any
single summation order fpconform models, but every element must be within the platform's
analytical bound (or the tolerance the tolerance report recommends): assert_conforms says so,
or fails with the evidence. The second kernel drops one K tile, a classic tiling bug; its test
is expected to fail and shows the message a kernel engineer would get.

Run: pytest examples/pytest        (after pip install .; in a build tree add
     -p fpconform.pytest_plugin with PYTHONPATH=<build>/python)
"""

import ml_dtypes
import numpy as np
import pytest

from fpconform.testing import assert_conforms

TILE_K = 128


def matmul_kernel(a, b, drop_tile=None):
    """C = A @ B with bf16 A (M x K), B (K x N): fp32 PSUM accumulation over K tiles of 128."""
    m, k = a.shape
    psum = np.zeros((m, b.shape[1]), dtype=np.float32)
    for t, k0 in enumerate(range(0, k, TILE_K)):
        if t == drop_tile:
            continue  # The bug: this tile's contribution never reaches PSUM.
        a_tile = a[:, k0:k0 + TILE_K].astype(np.float32)
        b_tile = b[k0:k0 + TILE_K, :].astype(np.float32)
        psum += np.matmul(a_tile, b_tile)  # float32 products and sums within the tile
    return psum


def make_inputs(m, k, n, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((k, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
    return a, b


@pytest.mark.parametrize("m,k,n", [(64, 128, 96), (64, 1024, 96)])
def test_matmul_bf16(m, k, n):
    a, b = make_inputs(m, k, n, seed=k)
    out = matmul_kernel(a, b)
    # The numpy float32 reference nki-samples would compare against with allclose.
    ref = a.astype(np.float32) @ b.astype(np.float32)
    assert np.allclose(out, ref, rtol=1e-2, atol=1e-2)
    # fpconform: every element explained by the platform (pytest.ini: trainium2-bf16-envelope).
    assert_conforms(out, a, b)


@pytest.mark.xfail(raises=AssertionError, reason="deliberately wrong kernel: one K tile dropped")
def test_matmul_bf16_dropped_k_tile():
    a, b = make_inputs(64, 1024, 96, seed=7)
    assert_conforms(matmul_kernel(a, b, drop_tile=3), a, b)


def test_dropped_k_tile_message():
    """The message of the wrong kernel, printed (pytest -s, or -rP) and checked."""
    a, b = make_inputs(64, 1024, 96, seed=7)
    with pytest.raises(AssertionError) as e:
        assert_conforms(matmul_kernel(a, b, drop_tile=3), a, b)
    message = str(e.value)
    print(message)
    assert message.startswith("Tensor-likes are not close!")
    assert "Mismatched elements: " in message
    assert "K tile" in message  # the audit's diagnosis: one K tile missing
