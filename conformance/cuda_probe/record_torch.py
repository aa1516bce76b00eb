#!/usr/bin/env python3
"""Records torch/cuBLAS outputs on a GPU for `fpconform reveal --from` and the audit's fit.

Run by record_torch.sh (which writes the probe directories with `fpconform reveal --make-probes`
first); needs torch with CUDA, numpy and ml_dtypes. Never run by the tests.

  python3 record_torch.py OUT

OUT/reveal/<name>/ (probe directories): adds out_<call>.npy, the GPU's result on the probes, for
every call that applies to the directory's op and dtype (manifest.json):
  matmul bfloat16: torch.mm(A, B, out_dtype=torch.float32) (torch >= 2.8; skipped before) and
                   torch.matmul(A, B) (bfloat16 out);
  matmul float32:  torch.matmul with allow_tf32 = False and = True;
  sum float32:     torch.sum(X, dim=-1).
OUT/fit/<dtype>_<m>x<k>x<n>/: A.npy, B.npy (N(0, 1) values, numpy seed 2026 + shape) and the same
calls' outputs, for `fpconform audit matmul --platform auto --fit-out ...`.
OUT/kernels.txt: the CUDA kernels the profiler saw per call (cuBLAS picks them per shape).
OUT/environment.json: torch, CUDA, device, capability.
bfloat16 arrays are saved as ml_dtypes arrays (.npy descr '<V2': give --outputs-dtype bfloat16).
"""
import json
import os
import sys

import ml_dtypes
import numpy as np
import torch

FIT_SHAPES = [(64, 4096, 64), (256, 1024, 256), (128, 8192, 128)]


def to_torch(a):
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).cuda()
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def to_numpy(t):
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def calls(op, dtype):
    """(name, function) pairs for a probe directory's op and dtype."""
    out = []
    if op == "matmul" and dtype == "bfloat16":
        try:
            torch.mm(torch.zeros(2, 2, dtype=torch.bfloat16, device="cuda"),
                     torch.zeros(2, 2, dtype=torch.bfloat16, device="cuda"),
                     out_dtype=torch.float32)
            out.append(("torch_mm_out_dtype_float32",
                        lambda a, b: torch.mm(a, b, out_dtype=torch.float32)))
        except (TypeError, RuntimeError):
            pass
        out.append(("torch_matmul_bfloat16", lambda a, b: torch.matmul(a, b)))
    elif op == "matmul" and dtype == "float32":
        def no_tf32(a, b):
            torch.backends.cuda.matmul.allow_tf32 = False
            return torch.matmul(a, b)

        def tf32(a, b):
            torch.backends.cuda.matmul.allow_tf32 = True
            try:
                return torch.matmul(a, b)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = False
        out += [("torch_matmul_no_tf32", no_tf32), ("torch_matmul_tf32", tf32)]
    elif op == "sum" and dtype == "float32":
        out.append(("torch_sum_dim_-1", lambda x, _: torch.sum(x, dim=-1)))
    return out


def run(name, fn, args, kernels):
    """fn(*args) once with the profiler; the result and the kernels it launched."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        result = fn(*args)
        torch.cuda.synchronize()
    cuda = torch.autograd.DeviceType.CUDA
    seen = sorted({e.name for e in prof.events() if e.device_type == cuda})
    kernels.append(name)
    kernels.extend("    " + k[:200] for k in seen)
    return result


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: record_torch.py OUT")
    out = sys.argv[1]
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_tf32 = False
    kernels = []
    reveal = os.path.join(out, "reveal")
    for d in sorted(os.listdir(reveal)) if os.path.isdir(reveal) else []:
        path = os.path.join(reveal, d)
        with open(os.path.join(path, "manifest.json")) as f:
            manifest = json.load(f)
        op, dtype = manifest["op"], manifest["dtype"]
        np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float32
        if op == "matmul":
            args = [to_torch(np.load(os.path.join(path, n)).view(np_dtype))
                    for n in ("A.npy", "B.npy")]
        else:
            args = [to_torch(np.load(os.path.join(path, "X.npy")).view(np_dtype)), None]
        for name, fn in calls(op, dtype):
            result = run(f"{d}: {name}", fn, args, kernels)
            np.save(os.path.join(path, f"out_{name}.npy"), to_numpy(result))
    for dtype in ("bfloat16", "float32"):
        np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float32
        for m, k, n in FIT_SHAPES:
            d = os.path.join(out, "fit", f"{dtype}_{m}x{k}x{n}")
            os.makedirs(d, exist_ok=True)
            rng = np.random.default_rng([2026, m, k, n])
            a = rng.standard_normal((m, k)).astype(np_dtype)
            b = rng.standard_normal((k, n)).astype(np_dtype)
            np.save(os.path.join(d, "A.npy"), a)
            np.save(os.path.join(d, "B.npy"), b)
            args = [to_torch(a), to_torch(b)]
            for name, fn in calls("matmul", dtype):
                result = run(f"fit {dtype}_{m}x{k}x{n}: {name}", fn, args, kernels)
                np.save(os.path.join(d, f"out_{name}.npy"), to_numpy(result))
    with open(os.path.join(out, "kernels.txt"), "w") as f:
        f.write("\n".join(kernels) + "\n")
    env = {"torch": torch.__version__, "cuda": torch.version.cuda,
           "device": torch.cuda.get_device_name(),
           "capability": list(torch.cuda.get_device_capability())}
    with open(os.path.join(out, "environment.json"), "w") as f:
        json.dump(env, f, indent=1)
    print(json.dumps(env))


if __name__ == "__main__":
    main()
