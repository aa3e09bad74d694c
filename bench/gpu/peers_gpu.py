"""The peers of the GPU bench (bench/gpu/gpu_rows.h's rows), on the same CUDA device.

PyTorch eager for every row and torch.compile where asked (by default the
transformer and MLP rows, whose targets name it), cuBLAS for the f32 GEMM
(torch.mm with TF32 off, which calls cublasSgemm-class kernels) and
cuBLAS/cuBLASLt for the bf16 GEMM (torch.mm on bf16 operands). Each timed
sample is one call bracketed by CUDA events; inputs use the CPU bench's
formula (peers_common.hashed) and shapes (peers_models), so the models are
the same computations Kiln runs. Prints one JSON object (or writes --json).

    python3 bench/gpu/peers_gpu.py [--smoke] [--budget S] [--no-compile]
                                   [--compile-rows ROWS|all] [--json FILE]

Without torch, or without a CUDA device, every row says why it was not measured.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from peers_common import hashed  # noqa: E402

ROWS = ["copy", "chain", "softmax", "layer_norm", "sgemm", "bf16_gemm", "mlp_issue6",
        "transformer", "launch"]


def stats(samples):
    s = sorted(samples)
    n = len(s)
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    return {"min_s": s[0], "median_s": med, "reps": n}


def time_events(torch, fn, budget, min_reps=3, max_reps=100):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples, total = [], 0.0
    while len(samples) < max_reps and (len(samples) < min_reps or total < budget):
        start.record()
        fn()
        end.record()
        end.synchronize()
        dt = start.elapsed_time(end) * 1e-3
        samples.append(dt)
        total += dt
    return stats(samples)


def forms(torch, fn, args, budget, use_compile):
    """{"eager": stats, "compile": stats (+ compile_s)} for fn(*args)."""
    out = {"eager": guarded(lambda: time_events(torch, lambda: fn(*args), budget))}
    if use_compile:
        def compiled():
            t0 = time.monotonic()
            c = torch.compile(fn)
            c(*args)
            torch.cuda.synchronize()
            compile_s = time.monotonic() - t0
            r = time_events(torch, lambda: c(*args), budget)
            r["compile_s"] = compile_s
            return r
        out["compile"] = guarded(compiled)
    return out


def guarded(fn):
    try:
        return fn()
    except Exception as e:  # a peer that fails is reported, not fatal
        return {"error": f"{type(e).__name__}: {e}"}


def dev(torch, array, dtype=None):
    t = torch.from_numpy(array).to("cuda")
    return t.to(dtype) if dtype is not None else t


def row(torch, name, smoke, budget, use_compile):
    import torch.nn.functional as F
    if name == "copy":
        n = (1 << 16) if smoke else (1 << 26)
        x = torch.empty(n, device="cuda")
        y = torch.empty_like(x)
        return {"torch_copy": time_events(torch, lambda: y.copy_(x), budget), "bytes": 8.0 * n}
    if name == "chain":
        n = 4099 if smoke else (1 << 26)
        x = dev(torch, hashed((n,), 101))
        return forms(torch, lambda v: torch.sigmoid(v * 0.75 - 0.5) * torch.tanh(v) + 0.5 * v,
                     (x,), budget, use_compile)
    if name in ("softmax", "layer_norm"):
        n, d = (67, 1023) if smoke else (8192, 8192)
        if name == "softmax":
            x = dev(torch, hashed((n, d), 102, 4.0))
            return forms(torch, lambda v: torch.softmax(v, -1), (x,), budget, use_compile)
        x = dev(torch, hashed((n, d), 103, 2.0, 0.5))
        w, b = dev(torch, hashed((d,), 104, 0.25, 1.0)), dev(torch, hashed((d,), 105, 0.25))
        return forms(torch, lambda v, ww, bb: F.layer_norm(v, [d], ww, bb, 1e-5), (x, w, b),
                     budget, use_compile)
    if name in ("sgemm", "bf16_gemm"):
        m, k, n = (67, 129, 95) if smoke else (4096, 4096, 4096)
        dtype = torch.bfloat16 if name == "bf16_gemm" else torch.float32
        a, b = dev(torch, hashed((m, k), 106), dtype), dev(torch, hashed((k, n), 107), dtype)
        torch.backends.cuda.matmul.allow_tf32 = False
        out = {"library": guarded(lambda: time_events(torch, lambda: torch.mm(a, b), budget))}
        out["flops"] = 2.0 * m * n * k
        return out
    if name in ("mlp_issue6", "transformer"):
        import peers_models as pm
        specs = pm.mlp_inputs(True, smoke) if name == "mlp_issue6" else pm.transformer_inputs(smoke)
        args = [dev(torch, pm.make(s)) for s in specs]
        if name == "transformer":
            return forms(torch, lambda *a: pm.transformer_layer(*a, heads=4), tuple(args),
                         budget, use_compile)
        return forms(torch, pm.mlp, tuple(args), budget, use_compile)
    if name == "launch":
        x = torch.full((1,), 2.0, device="cuda")
        calls = 10 if smoke else 200

        def per_call():
            samples = []
            for _ in range(2 if smoke else 15):
                torch.cuda.synchronize()
                t0 = time.monotonic()
                for _ in range(calls):
                    x + 1.0
                torch.cuda.synchronize()
                samples.append((time.monotonic() - t0) / calls)
            return stats(samples)
        return {"eager": guarded(per_call)}
    raise ValueError(name)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--budget", type=float, default=1.0)
    p.add_argument("--no-compile", action="store_true")
    # torch.compile takes tens of seconds per function (Inductor, Triton):
    # by default only the rows whose targets name it.
    p.add_argument("--compile-rows", default="transformer,mlp_issue6",
                   help="rows with a torch.compile form (comma-separated, or 'all')")
    p.add_argument("--json")
    args = p.parse_args()
    out = {"tool": "peers_gpu", "rows": {}}
    why = None
    try:
        import torch
        if not torch.cuda.is_available():
            why = f"torch {torch.__version__}: no CUDA device"
    except ImportError as e:
        why = f"torch not importable: {e}"
    if why:
        out["not_measured"] = why
    else:
        torch.set_default_device("cuda")  # the examples' torch.arange masks
        out["device"] = torch.cuda.get_device_name(0)
        out["torch"] = torch.__version__
        budget = 0.01 if args.smoke else args.budget
        for name in ROWS:
            use_compile = not args.no_compile and (
                args.compile_rows == "all" or name in args.compile_rows.split(","))
            out["rows"][name] = guarded(lambda: row(torch, name, args.smoke, budget, use_compile))
            print(f"peers_gpu: {name} done", file=sys.stderr)
    text = json.dumps(out)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
