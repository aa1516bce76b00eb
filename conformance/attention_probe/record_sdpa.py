#!/usr/bin/env python3
"""Records torch's scaled_dot_product_attention with each SDPA backend forced, for fpconform to replay.

On a machine with torch (CUDA for the GPU backends; the CPU has MATH and torch's CPU flash kernel),
writes an attention recording (fpconform.recordings.AttentionWriter: q, k, v, the output and, where
the backend exposes it, the LSE as raw-bit .npy files; manifest.json naming each case's expected
attention model) that `python -m fpconform.recordings DIR` replays. For every dtype, shape and
backend (MATH, FLASH_ATTENTION, EFFICIENT_ATTENTION, CUDNN_ATTENTION, each forced with
torch.nn.attention.sdpa_kernel) it records:

  - the output of F.scaled_dot_product_attention (is_causal, enable_gqa, a boolean attn_mask
    where the case has one, an explicit scale where it has one), computed twice: `deterministic`
    says whether both runs gave the same bits;
  - `backend_used`: the ATen SDPA op the torch profiler saw (`ops`, and on CUDA the `kernels`);
  - `lse` from the backend's own ATen op where it returns one (_scaled_dot_product_flash_attention
    [_for_cpu], _scaled_dot_product_efficient_attention, _scaled_dot_product_cudnn_attention) on
    cases without a mask and without GQA, with `lse_same_output` (that op's output has the same
    bits as SDPA's); MATH exposes none;
  - a backend that refuses a case: `status: "unsupported"` with torch's reason;
  - `expected`: the attention model (composite/attention_models) that must explain the output:
    flash-attention2-cuda-bf16/-f16 for FLASH_ATTENTION on CUDA, torch-mem-efficient-cuda-bf16
    for EFFICIENT_ATTENTION and cudnn-sdpa-envelope-bf16 (an envelope) for CUDNN_ATTENTION in
    bfloat16, torch-math-sdpa-cpu-f32/-bf16 for MATH and torch-flash-sdpa-cpu-f32/-bf16 for the
    CPU flash kernel; null, with `expected_note` saying why, where fpconform has no model of the
    kernel (MATH on CUDA, the other dtypes of EFFICIENT_ATTENTION and CUDNN_ATTENTION).

Inputs are N(0, 1) drawn on the CPU from a seeded torch.Generator, so a recording is reproducible
(the same seed gives the same inputs on every machine). Only the writer of fpconform is needed
(PYTHONPATH=<build>/python or pip install .), and torch, numpy, ml_dtypes.

  python3 conformance/attention_probe/record_sdpa.py --out rec-sdpa-h200              # CUDA, bf16 + f16
  python3 conformance/attention_probe/record_sdpa.py --out rec-sdpa-cpu --device cpu  # f32 + bf16
  python3 -m fpconform.recordings rec-sdpa-h200    # replay: exit 1 if an expected model fails

Shapes: --shapes full (the CUDA default) has S = 128, 1024, 4096, D = 64 and 128, causal or not,
GQA (8 query heads on 2 key/value heads, enable_gqa=True), a boolean mask, an explicit scale on an
odd length (S = 200); --shapes small (the CPU default) has S <= 256 only (about 4 MB for float32
and bfloat16 with MATH and the CPU flash kernel). On one H200 the full run takes well under 2 minutes; its replay on a CPU is
dominated by the two S = 4096 cases (several minutes each with auto; `--no-auto` for the expected
models only). Copy the directory to conformance/data/attention/<device>-torch<version>/ (the
README there) and commit it: ctest `attention_recordings_replay` replays it.
"""

import argparse
import json
import platform
import sys
import time
import warnings

# (name, query heads, key/value heads, S, D, causal, boolean mask, scale); B = 1.
SHAPES = {
    "small": [
        ("s128-d64", 2, 2, 128, 64, False, False, None),
        ("s128-d64-causal", 2, 2, 128, 64, True, False, None),
        ("s256-d128", 1, 1, 256, 128, False, False, None),
        ("s128-d64-gqa4x2", 4, 2, 128, 64, False, False, None),
        ("s128-d64-mask", 2, 2, 128, 64, False, True, None),
        ("s200-d64-scale0.3", 1, 1, 200, 64, False, False, 0.3),
    ],
    "full": [
        ("s128-d64", 2, 2, 128, 64, False, False, None),
        ("s128-d64-causal", 2, 2, 128, 64, True, False, None),
        ("s128-d128", 2, 2, 128, 128, False, False, None),
        ("s128-d128-causal", 2, 2, 128, 128, True, False, None),
        ("s1024-d64", 2, 2, 1024, 64, False, False, None),
        ("s1024-d128", 2, 2, 1024, 128, False, False, None),
        ("s1024-d128-causal", 2, 2, 1024, 128, True, False, None),
        ("s4096-d128", 1, 1, 4096, 128, False, False, None),
        ("s4096-d128-causal", 1, 1, 4096, 128, True, False, None),
        ("s1024-d128-gqa8x2", 8, 2, 1024, 128, False, False, None),
        ("s1024-d64-mask", 2, 2, 1024, 64, False, True, None),
        ("s200-d64-scale0.3", 2, 2, 200, 64, False, False, 0.3),
    ],
}
BACKENDS = ("MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION")
SHORT = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}
# The ATen op each backend dispatches to (aten/src/ATen/native/transformers/attention.cpp,
# sdp_utils): what the profiler shows names the backend that ran.
OPS = {
    "aten::_scaled_dot_product_attention_math": "MATH",
    "aten::_scaled_dot_product_attention_math_for_mps": "MATH",
    "aten::_scaled_dot_product_flash_attention": "FLASH_ATTENTION",
    "aten::_scaled_dot_product_flash_attention_for_cpu": "FLASH_ATTENTION",
    "aten::_scaled_dot_product_efficient_attention": "EFFICIENT_ATTENTION",
    "aten::_scaled_dot_product_cudnn_attention": "CUDNN_ATTENTION",
}


def expected_model(device, backend, dtype):
    """(the attention model a case must conform to or None, the note saying why there is none)."""
    short = SHORT[dtype]
    if device == "cpu":
        if backend == "MATH" and short in ("f32", "bf16"):
            return f"torch-math-sdpa-cpu-{short}", ""
        if backend == "MATH":
            return None, f"no torch-math-sdpa-cpu model for {dtype}"
        if backend == "FLASH_ATTENTION" and short in ("f32", "bf16"):
            return f"torch-flash-sdpa-cpu-{short}", ""
        if backend == "FLASH_ATTENTION":
            return None, f"no torch-flash-sdpa-cpu model for {dtype}"
        return None, f"{backend} has no CPU kernel"
    if backend == "FLASH_ATTENTION":
        if short in ("bf16", "f16"):
            return f"flash-attention2-cuda-{short}", ""
        return None, "FlashAttention-2 takes float16 / bfloat16 only"
    if backend == "EFFICIENT_ATTENTION" and short == "bf16":
        return "torch-mem-efficient-cuda-bf16", ""
    if backend == "CUDNN_ATTENTION" and short == "bf16":
        return "cudnn-sdpa-envelope-bf16", ""
    return None, {"MATH": "no model of torch's math SDPA on CUDA (the torch-math-sdpa-cpu models are the CPU's)",
                  "EFFICIENT_ATTENTION": f"no model of the memory-efficient (CUTLASS fmha) kernel for {dtype}",
                  "CUDNN_ATTENTION": f"no cuDNN envelope for {dtype}"}[backend]


def environment(torch, device):
    info = {"torch": torch.__version__, "cuda": str(torch.version.cuda), "python": platform.python_version(),
            "machine": platform.machine(), "processor": platform.processor(),
            "torch_threads": torch.get_num_threads()}
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    try:
        info["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    except AttributeError:
        pass
    import numpy
    import ml_dtypes
    info["numpy"], info["ml_dtypes"] = numpy.__version__, ml_dtypes.__version__
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        info["gpu"] = torch.cuda.get_device_name()
        info["compute_capability"] = f"{p.major}.{p.minor}"
        info["cudnn"] = str(torch.backends.cudnn.version())
        m = torch.backends.cuda.matmul
        info["allow_tf32"] = bool(m.allow_tf32)
        info["allow_bf16_reduced_precision_reduction"] = bool(m.allow_bf16_reduced_precision_reduction)
        info["allow_fp16_reduced_precision_reduction"] = bool(m.allow_fp16_reduced_precision_reduction)
    # Whether the math backend may reduce in float16 / bfloat16 instead of upcasting (torch >= 2.5;
    # off by default): it decides the math backend's structure for those dtypes.
    getter = getattr(torch.backends.cuda, "fp16_bf16_reduction_math_sdp_allowed", None)
    if callable(getter):
        info["fp16_bf16_reduction_math_sdp_allowed"] = bool(getter())
    return info


def run_sdpa(torch, backend, q, k, v, kw, device):
    """(output, ATen SDPA ops seen, CUDA kernels seen, warnings torch gave) with one backend forced;
    raises RuntimeError when the backend refuses."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    F = torch.nn.functional
    acts = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        try:
            with torch.no_grad(), sdpa_kernel(getattr(SDPBackend, backend)), \
                    torch.profiler.profile(activities=acts) as prof:
                o = F.scaled_dot_product_attention(q, k, v, **kw)
                if device == "cuda":
                    torch.cuda.synchronize()
        except RuntimeError as e:  # torch says why a backend refused in its warnings.
            why = [str(w.message).splitlines()[0][:300] for w in ws]
            raise RuntimeError("; ".join([str(e).splitlines()[0][:200]] + why)) from e
    ops = sorted({e.name for e in prof.events() if e.name in OPS})
    kernels = []
    if device == "cuda":
        kernels = sorted({e.name for e in prof.events()
                          if str(getattr(e, "device_type", "")).endswith("CUDA") and e.name not in OPS})[:20]
    return o, ops, kernels, [str(w.message).splitlines()[0][:300] for w in ws]


def bits_equal(torch, a, b):
    """Whether two tensors hold the same bits (NaNs included)."""
    a, b = a.detach().cpu().contiguous(), b.detach().cpu().contiguous()
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a.view(torch.uint8), b.view(torch.uint8)))


def lse_of(torch, backend, q, k, v, causal, scale, device):
    """(output, LSE) from the backend's own ATen op, or (None, reason)."""
    A = torch.ops.aten
    with torch.no_grad():
        try:
            if backend == "FLASH_ATTENTION" and device == "cpu":
                o, lse = A._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, scale=scale)
            elif backend == "FLASH_ATTENTION":
                r = A._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False, scale=scale)
                o, lse = r[0], r[1]
            elif backend == "EFFICIENT_ATTENTION":
                r = A._scaled_dot_product_efficient_attention(q, k, v, None, True, 0.0, causal, scale=scale)
                o, lse = r[0], r[1]
            elif backend == "CUDNN_ATTENTION":
                r = A._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, causal, False, scale=scale)
                o, lse = r[0], r[1]
            else:
                return None, "the math backend exposes no LSE"
        except (RuntimeError, TypeError, AttributeError) as e:
            return None, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    if device == "cuda":
        torch.cuda.synchronize()
    return o, lse


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--out", help="a new (or empty) directory for the recording (required unless --list)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--shapes", choices=sorted(SHAPES), default=None,
                    help="case list (default: full on cuda, small on cpu)")
    ap.add_argument("--dtypes", default=None,
                    help="comma-separated torch dtypes (default: bfloat16,float16 on cuda; float32,bfloat16 on cpu)")
    ap.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated SDPBackend names")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--list", action="store_true", help="print the cases and their expected models; record nothing")
    args = ap.parse_args(argv)
    shapes = SHAPES[args.shapes or ("full" if args.device == "cuda" else "small")]
    dtypes = (args.dtypes or ("bfloat16,float16" if args.device == "cuda" else "float32,bfloat16")).split(",")
    backends = args.backends.split(",")
    for b in backends:
        if b not in BACKENDS:
            ap.error(f"--backends: '{b}' is not one of {', '.join(BACKENDS)}")
    for dt in dtypes:
        if dt not in SHORT:
            ap.error(f"--dtypes: '{dt}' is not one of {', '.join(SHORT)}")
    if not args.list and not args.out:
        ap.error("--out DIR is required (or --list)")
    if args.list:
        for dt in dtypes:
            for b in backends:
                model, note = expected_model(args.device, b, dt)
                for s in shapes:
                    print(f"{SHORT[dt]}-{b.lower()}-{s[0]}  expected {model or 'none (' + note + ')'}")
        return 0

    import torch

    from fpconform import recordings

    if args.device == "cuda" and not torch.cuda.is_available():
        print("record_sdpa: no CUDA device (use --device cpu for the CPU backends)", file=sys.stderr)
        return 2
    env = environment(torch, args.device)
    name = env.get("gpu", "cpu")
    w = recordings.AttentionWriter(args.out, device=name, library=f"torch {torch.__version__}", seed=args.seed,
                                   shapes=args.shapes or ("full" if args.device == "cuda" else "small"),
                                   environment=env)
    t0 = time.time()
    counts = {"recorded": 0, "unsupported": 0}
    for dt in dtypes:
        tdt = getattr(torch, dt)
        gen = torch.Generator().manual_seed(args.seed)  # The same inputs for every dtype and backend.
        for (sname, hq, hkv, S, D, causal, with_mask, scale) in shapes:
            q = torch.randn((1, hq, S, D), generator=gen).to(tdt)
            k = torch.randn((1, hkv, S, D), generator=gen).to(tdt)
            v = torch.randn((1, hkv, S, D), generator=gen).to(tdt)
            mask = None
            if with_mask:  # True attends; the diagonal always, so that no row is fully masked.
                mask = (torch.rand((S, S), generator=gen) < 0.7) | torch.eye(S, dtype=torch.bool)
            qd, kd, vd = (t.to(args.device) for t in (q, k, v))
            kw = {"is_causal": causal}
            if hq != hkv:
                kw["enable_gqa"] = True
            if mask is not None:
                kw["attn_mask"] = mask.to(args.device)
            if scale is not None:
                kw["scale"] = scale
            for b in backends:
                cname = f"{SHORT[dt]}-{b.lower()}-{sname}"
                model, note = expected_model(args.device, b, dt)
                info = {"dtype": dt, "shape_name": sname}
                try:
                    o, ops, kernels, warns = run_sdpa(torch, b, qd, kd, vd, kw, args.device)
                    o2, _, _, _ = run_sdpa(torch, b, qd, kd, vd, kw, args.device)
                except RuntimeError as e:
                    reason = str(e)[:1000]
                    w.unsupported(cname, backend=b, reason=reason, expected=model, **info)
                    counts["unsupported"] += 1
                    print(f"unsupported {cname}: {reason}", flush=True)
                    continue
                used = sorted({OPS[x] for x in ops})
                lse, lse_note, lse_same = None, "", None
                if mask is None and hq == hkv:
                    lo, lse = lse_of(torch, b, qd, kd, vd, causal, scale, args.device)
                    if lo is None:
                        lse_note, lse = lse, None
                    else:
                        lse_same = bits_equal(torch, lo, o)
                        lse = lse.cpu()
                else:
                    lse_note = "not taken on masked or GQA cases (the backends' own ops take neither the same way)"
                same = bits_equal(torch, o, o2)
                w.add(cname, q, k, v, o.cpu(), expected=model, expected_note=note, backend=b,
                      backend_used=used[0] if len(used) == 1 else ("unknown" if not used else "+".join(used)),
                      causal=causal, scale=scale, mask=None if mask is None else mask.numpy(), lse=lse, enable_gqa=hq != hkv,
                      ops=ops, kernels=kernels, warnings=warns[:5], deterministic=same,
                      lse_same_output=lse_same, lse_note=lse_note, **info)
                counts["recorded"] += 1
                print(f"recorded {cname} (backend used: {', '.join(used) or 'unknown'}; "
                      f"{time.time() - t0:.1f}s)", flush=True)
    w.manifest["elapsed_s"] = round(time.time() - t0, 1)
    w.close()
    print(f"wrote {args.out}/manifest.json ({counts['recorded']} recorded, {counts['unsupported']} unsupported): "
          f"replay with python -m fpconform.recordings {args.out}")
    print(json.dumps(env))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
