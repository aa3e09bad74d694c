"""Call overhead from Python: one tiny fused function (1024 f32 elements, two
inputs: a * b + a) called from Python through Kiln (@kiln.script, on torch
tensors and on NumPy arrays), torch.jit.script, torch.compile (PyTorch 2) and
eager PyTorch. The time per call is almost all overhead: the arithmetic is
~1 us of the machine's time.

    python3 bench/python_call.py [--json OUT] [--quick]

Run by scripts/bench in its PyTorch 2 environment with the kiln package from
the build tree on PYTHONPATH; report.py prints the table. Each form is checked
against eager PyTorch before it is timed. Times: the best and the median of 7
batches, each batch the mean over N calls.
"""
import argparse
import json
import statistics
import sys
import time


def f(a, b):
    return a * b + a


def measure(fn, args, n):
    for _ in range(max(50, n // 10)):
        fn(*args)
    means = []
    for _ in range(7):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn(*args)
        means.append((time.perf_counter_ns() - t0) / n / 1000.0)
    return {"best_us": min(means), "median_us": statistics.median(means), "calls": n}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    n = 2000 if a.quick else 20000
    import numpy as np
    import torch
    torch.set_num_threads(a.threads)
    import kiln
    out = {"torch": torch.__version__, "python": sys.version.split()[0], "kiln": kiln.__version__,
           "elements": 1024, "rows": {}}
    ta, tb = torch.randn(1024), torch.randn(1024)
    na, nb = ta.numpy(), tb.numpy()
    want = f(ta, tb)

    def row(name, fn, args, compile_fn=None):
        try:
            t0 = time.perf_counter()
            if compile_fn is not None:
                fn = compile_fn()
            got = fn(*args)
            first_s = time.perf_counter() - t0
            got = torch.as_tensor(np.asarray(got)) if not isinstance(got, torch.Tensor) else got
            ok = bool(torch.allclose(got, want, rtol=1e-6, atol=1e-6))
            r = measure(fn, args, n)
            r.update(ok=ok, first_call_s=first_s)
        except Exception as e:  # a peer that is missing or broken is reported, not fatal
            r = {"error": f"{type(e).__name__}: {e}"}
        out["rows"][name] = r

    row("kiln (torch tensors)", None, (ta, tb), lambda: kiln.script(f))
    row("kiln (NumPy arrays)", None, (na, nb), lambda: kiln.script(f))
    row("torch.jit.script", None, (ta, tb), lambda: torch.jit.script(f))
    if hasattr(torch, "compile"):
        row("torch.compile", None, (ta, tb), lambda: torch.compile(f))
    else:
        out["rows"]["torch.compile"] = {"error": f"PyTorch {torch.__version__} has no torch.compile"}
    row("torch eager", f, (ta, tb))
    text = json.dumps(out, indent=1)
    if a.json:
        with open(a.json, "w") as fh:
            fh.write(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
