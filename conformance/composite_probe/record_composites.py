#!/usr/bin/env python3
"""Records real torch outputs of the composite kernels for fpconform to replay.

On a machine with torch (a GPU for the CUDA presets, eager and torch.compile), writes a recording
directory (fpconform.recordings: inputs and outputs as raw-bit .npy files, manifest.json naming
each case's expected composite models) that `python -m fpconform.recordings DIR` and
python/tests/test_composite_recordings.py replay. Inputs are drawn on the CPU from a seeded
generator, so a recording is reproducible; nothing here needs fpconform's C++ module except the
writer's bit view (the package must be importable: PYTHONPATH=<build>/python or pip install .).

  python3 conformance/composite_probe/record_composites.py --out rec-h200          # CUDA, eager
  python3 conformance/composite_probe/record_composites.py --out rec-h200 --compile  # + torch.compile
  python3 conformance/composite_probe/record_composites.py --out rec-cpu --device cpu

Then copy the directory to conformance/data/composite/<device>-<torch version>/ (README there)
and run `ctest -R python` or `python -m fpconform.recordings conformance/data/composite/*`.
A run takes well under a minute on one GPU (the compiled cases' compilation dominates).
"""

import argparse
import sys
import time


def cases(torch, device):
    """(name, dtype, op, fn, callable or None (an ATen norm), input spec, kwargs, expected
    platforms of the eager and of the compiled output) of every case."""
    F = torch.nn.functional
    cuda = device == "cuda"

    def rows(dtype_suffix, n):
        if cuda:
            eager = f"torch-cuda-rows-{dtype_suffix}"
            compiled = [f"inductor-cuda-persistent-rows-{dtype_suffix}" if n <= 1024 else
                        f"inductor-cuda-rows-{dtype_suffix}"]
        else:
            eager, compiled = f"torch-cpu-rows-{dtype_suffix}", []
        return [eager], compiled

    def elementwise(dtype_suffix):
        if cuda:
            return [f"torch-cuda-{dtype_suffix}"], [f"inductor-cuda-{dtype_suffix}"]
        return [f"torch-cpu-{dtype_suffix}"], []

    def hf_llama_rmsnorm(x, w, eps):  # transformers' LlamaRMSNorm.forward (two roundings).
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
        return w * h.to(x.dtype)

    out = []
    for dt, suffix in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        for fn, f in (("gelu", F.gelu), ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh")),
                      ("silu", F.silu), ("sigmoid", torch.sigmoid), ("tanh", torch.tanh), ("exp", torch.exp)):
            eager, compiled = elementwise(suffix)
            out.append((f"{fn}-{suffix}", dt, "elementwise", fn, f, {"scale": 3.0, "shape": (64, 1024)}, {},
                        eager, compiled))
        for n in (1024, 8192):
            eager, compiled = rows(suffix, n)
            out.append((f"softmax-{suffix}-{n}", dt, "softmax", None, lambda t: torch.softmax(t, -1),
                        {"scale": 4.0, "shape": (16, n)}, {}, eager, compiled))
            out.append((f"log_softmax-{suffix}-{n}", dt, "log_softmax", None, lambda t: torch.log_softmax(t, -1),
                        {"scale": 4.0, "shape": (16, n)}, {}, eager, compiled))
            out.append((f"layernorm-{suffix}-{n}", dt, "layernorm", None, None,
                        {"scale": 1.0, "offset": 3.0, "shape": (16, n), "weight": True, "bias": True},
                        {"eps": 1e-5}, eager, compiled))
            out.append((f"rmsnorm-{suffix}-{n}", dt, "rmsnorm", None, None,
                        {"scale": 1.0, "shape": (16, n), "weight": True}, {"eps": 1e-6}, eager, compiled))
        if dt == torch.bfloat16 and cuda:
            out.append(("hf-llama-rmsnorm-bf16-4096", dt, "rmsnorm", "hf_llama", hf_llama_rmsnorm,
                        {"scale": 1.0, "shape": (16, 4096), "weight": True}, {"eps": 1e-6},
                        ["hf-llama-rmsnorm-cuda-bf16"], ["inductor-cuda-rows-bf16"]))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--out", required=True, help="a new (or empty) directory for the recording")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--compile", action="store_true", help="also record torch.compile's outputs (CUDA)")
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args(argv)

    import torch

    from fpconform import recordings

    if args.device == "cuda" and not torch.cuda.is_available():
        print("record_composites: no CUDA device (use --device cpu for the CPU presets)", file=sys.stderr)
        return 2
    F = torch.nn.functional
    name = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    w = recordings.Writer(args.out, device=name, library=f"torch {torch.__version__}", seed=args.seed,
                          cuda=str(torch.version.cuda), compile=bool(args.compile))
    gen = torch.Generator().manual_seed(args.seed)
    t0 = time.time()
    for (cname, dt, op, fn, f, spec, kw, eager_p, compiled_p) in cases(torch, args.device):
        x = (torch.randn(spec["shape"], generator=gen) * spec["scale"] + spec.get("offset", 0.0)).to(dt)
        n = spec["shape"][-1]
        weight = (1 + 0.1 * torch.randn(n, generator=gen)).to(dt) if spec.get("weight") else None
        bias = (0.1 * torch.randn(n, generator=gen)).to(dt) if spec.get("bias") else None
        eps = kw.get("eps")
        wd = weight.to(args.device) if weight is not None else None
        bd = bias.to(args.device) if bias is not None else None
        if f is None:  # The ATen ops with their parameters (on the device).
            if op == "layernorm":
                def f(t, w_=wd, b_=bd, e_=eps, n_=n):
                    return F.layer_norm(t, (n_,), w_, b_, e_)
            else:
                def f(t, w_=wd, e_=eps, n_=n):
                    return F.rms_norm(t, (n_,), w_, e_)
        elif fn == "hf_llama":
            f = (lambda g, w_, e_: (lambda t: g(t, w_, e_)))(f, wd, eps)
        xd = x.to(args.device)
        variants = [("eager", f, eager_p)]
        if args.compile and compiled_p:
            variants.append(("compile", torch.compile(f), compiled_p))
        for variant, g, platforms in variants:
            with torch.no_grad():
                y = g(xd).cpu()
            w.add(f"{cname}-{variant}", op, x, y, platforms, fn=None if fn == "hf_llama" else fn, eps=eps,
                  weight=weight, bias=bias, variant=variant)
            print(f"recorded {cname}-{variant} ({time.time() - t0:.1f}s)", flush=True)
    w.close()
    print(f"wrote {args.out}/manifest.json: replay with python -m fpconform.recordings {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
