"""A flash attention test in the style of aws-neuron/nki-samples' test_flash_attn_fwd.py, graded by
fpconform.

The "kernel" is a NumPy port of what NKI's flash_fwd does on Trainium (as the
nki-flash-fwd-bf16 model describes it, composite/attention_models/): bfloat16 Q, K, V in
(batch, heads, seq, d) layout, Q scaled by 1/sqrt(d) and rounded to bfloat16, scores in float32
(PSUM), an online softmax over key tiles of 512 with a running maximum, P rounded to bfloat16
for the P V matmul and summed rounded, and the output normalized by exp(m - lse) with the
running log-sum-exp. nki-samples checks such a kernel with np.allclose(out, golden, atol=1e-2)
against a mixed-precision NumPy reference; fpconform audits every element against the exact
attention output and the model's per-element bound, plus the aggregate gate (relative L2 error
and correlation within the limits the bounds imply). The second kernel applies the softmax scale
twice, a classic porting slip; its test is an expected failure (xfail strict) and the message it
gives, with the audit's diagnosis, is printed and checked.

Run: pytest examples/pytest        (after pip install .; in a build tree add
     -p fpconform.pytest_plugin with PYTHONPATH=<build>/python)
"""

import ml_dtypes
import numpy as np
import pytest

BF16 = ml_dtypes.bfloat16
KEY_TILE = 512


def to_bf16(x):
    """x rounded to bfloat16 (RNE), as float32."""
    return np.asarray(x, np.float32).astype(BF16).astype(np.float32)


def flash_fwd(q, k, v, use_causal_mask=True, scale_applied_twice=False):
    """softmax(q k^T / sqrt(d)) v per head, flash style; q (b, h, s_q, d), k and v (b, kv_heads, s_k,
    d) in bfloat16 (grouped-query attention when h is a multiple of kv_heads); causal top-left."""
    b, h, s_q, d = q.shape
    group = h // k.shape[1]
    scale = np.float32(1.0 / np.sqrt(d))
    q_scaled = to_bf16(q.astype(np.float32) * scale)
    out = np.empty((b, h, s_q, v.shape[-1]), BF16)
    rows = np.arange(s_q)[:, None]
    for bi in range(b):
        for hi in range(h):
            kh = k[bi, hi // group].astype(np.float32)
            vh = v[bi, hi // group].astype(np.float32)
            m = np.full((s_q, 1), -np.inf, np.float32)
            row_sum = np.zeros((s_q, 1), np.float32)
            acc = np.zeros((s_q, vh.shape[1]), np.float32)
            for k0 in range(0, kh.shape[0], KEY_TILE):
                scores = q_scaled[bi, hi] @ kh[k0:k0 + KEY_TILE].T
                if scale_applied_twice:
                    scores = scores * scale  # The bug: Q was already scaled.
                if use_causal_mask:
                    cols = np.arange(k0, k0 + scores.shape[1])[None, :]
                    scores = np.where(cols <= rows, scores, np.float32(-np.inf))
                m_new = np.maximum(m, scores.max(axis=-1, keepdims=True))
                alpha = np.exp(m - m_new)
                p = to_bf16(np.exp(scores - m_new))
                row_sum = row_sum * alpha + p.sum(axis=-1, keepdims=True, dtype=np.float32)
                acc = acc * alpha + p @ vh[k0:k0 + KEY_TILE]
                m = m_new
            lse = m + np.log(row_sum)
            out[bi, hi] = (acc * np.exp(m - lse)).astype(BF16)
    return out


def cpu_attention_forward(q, k, v, use_causal_mask=True):
    """The golden output nki-samples compares with: matmuls in float32 rounded back to bfloat16."""
    h = q.shape[1]
    kf = np.repeat(k.astype(np.float32), h // k.shape[1], axis=1)
    vf = np.repeat(v.astype(np.float32), h // v.shape[1], axis=1)
    scores = to_bf16((q.astype(np.float32) / np.sqrt(q.shape[-1])) @ np.swapaxes(kf, -1, -2))
    if use_causal_mask:
        scores = np.where(np.tril(np.ones(scores.shape[-2:], bool)), scores, -9984.0)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return to_bf16((e / e.sum(axis=-1, keepdims=True)) @ vf)


def make_inputs(bs, nheads, kv_heads, seqlen_q, seqlen_k, d, seed):
    rng = np.random.default_rng(seed)
    q = ((rng.random((bs, nheads, seqlen_q, d)) - 0.5) * 2).astype(BF16)
    k = ((rng.random((bs, kv_heads, seqlen_k, d)) - 0.5) * 2).astype(BF16)
    v = ((rng.random((bs, kv_heads, seqlen_k, d)) - 0.5) * 2).astype(BF16)
    return q, k, v


class TestAttention:

    @pytest.mark.parametrize("bs, nheads, kv_heads, seqlen_q, seqlen_k, d, use_causal_mask", [
        [1, 2, 2, 1024, 1024, 64, True],
        [1, 4, 2, 512, 512, 64, True],    # grouped-query attention
        [1, 1, 1, 256, 1024, 64, False],  # non-square, more keys than one tile
        [1, 1, 1, 512, 256, 128, True],   # non-square, causal top-left
    ])
    def test_flash_attn_fwd_numerical(self, conformance, bs, nheads, kv_heads, seqlen_q, seqlen_k, d,
                                      use_causal_mask):
        q, k, v = make_inputs(bs, nheads, kv_heads, seqlen_q, seqlen_k, d, seed=seqlen_k + d)
        o_proj = flash_fwd(q, k, v, use_causal_mask=use_causal_mask)
        # What nki-samples asserts.
        golden = cpu_attention_forward(q, k, v, use_causal_mask=use_causal_mask)
        assert np.allclose(o_proj.astype(np.float32), golden, atol=1e-2)
        # fpconform: every element explained by the model (pytest.ini: fpconform_attention_platform
        # = nki-flash-fwd-bf16) and the output as a whole within the limits its bounds imply.
        conformance.assert_attention_conforms(o_proj, q, k, v, causal=use_causal_mask)

    @pytest.mark.xfail(raises=AssertionError, reason="deliberately wrong kernel: the softmax scale applied twice")
    def test_flash_attn_fwd_scale_applied_twice(self, conformance):
        q, k, v = make_inputs(1, 2, 2, 512, 512, 64, seed=7)
        conformance.assert_attention_conforms(flash_fwd(q, k, v, scale_applied_twice=True), q, k, v, causal=True)

    def test_scale_applied_twice_message(self, conformance):
        """The message of the wrong kernel, printed (pytest -s, or -rP) and checked."""
        q, k, v = make_inputs(1, 2, 2, 512, 512, 64, seed=7)
        with pytest.raises(AssertionError) as e:
            conformance.assert_attention_conforms(flash_fwd(q, k, v, scale_applied_twice=True), q, k, v,
                                                  causal=True)
        message = str(e.value)
        print(message)
        assert message.startswith("Tensor-likes are not close!")
        assert "Mismatched elements: " in message
        assert "the scale applied twice (scale^2)" in message  # the audit's diagnosis
        assert "Aggregate against nki-flash-fwd-bf16" in message
