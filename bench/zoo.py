"""The model zoo as bench rows: every tests/models/*.py function through Kiln
(`kiln.load(file, fn)`, LLVM backend, the file as written) next to the same
file run by PyTorch eager and, with --compile, by torch.compile, on the same
inputs (tests/models/zoo_inputs.py; the transformers at --width/--batch/--seq,
the other models at the test's sizes), the same thread count, torch.no_grad().

    python3 bench/zoo.py [--json OUT] [--quick] [--compile] [--threads 2]

Run by scripts/bench in its PyTorch 2 environment with the kiln package from
the build tree on PYTHONPATH; report.py prints the table (--zoo). Each Kiln
result is checked against PyTorch eager first (the test's tolerances, relaxed
tenfold for the larger sizes' summation order); a mismatch is reported as
WRONG and not timed. Times: best and median of 5 batches, each the mean over
enough calls to take ~0.2 s (--quick: ~0.05 s).
"""
import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MODELS = os.path.join(ROOT, "tests", "models")


def measure(fn, args, batch_s):
    t0 = time.perf_counter()
    fn(*args)  # warm (and, for torch.compile, compile)
    first = time.perf_counter() - t0
    n = max(1, int(batch_s / max(first, 1e-6)))
    for _ in range(min(n, 3)):
        fn(*args)
    t0 = time.perf_counter()
    for _ in range(n):
        fn(*args)
    n = max(1, int(n * batch_s / max(time.perf_counter() - t0, 1e-6)))
    means = []
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn(*args)
        means.append((time.perf_counter_ns() - t0) / n / 1e3)
    return {"best_us": min(means), "median_us": statistics.median(means), "calls": n}


def first_tensor(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--compile", action="store_true", help="also torch.compile (slow to compile)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--only", nargs="*", help="model files to run (default: all)")
    a = ap.parse_args()
    cache = None
    if a.compile:  # cold compiles, as peers_pt2.py's: a fresh Inductor cache, removed at exit
        import shutil
        import tempfile
        cache = tempfile.mkdtemp(prefix="kiln-zoo-inductor-")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
    try:
        return run(a)
    finally:
        if cache:
            shutil.rmtree(cache, ignore_errors=True)


def run(a):
    import numpy as np
    import torch
    import kiln
    torch.set_num_threads(a.threads)
    sys.path.insert(0, MODELS)
    import zoo_inputs

    batch_s = 0.05 if a.quick else 0.2
    if a.compile:  # Inductor's start-up once, not inside the first model's compile time
        from peers_common import inductor_warm_up
        out_warm = inductor_warm_up()
    rows = []
    out = {"torch": torch.__version__, "kiln": kiln.__version__, "threads": a.threads,
           "width": a.width, "batch": a.batch, "seq": a.seq, "rows": rows}
    if a.compile:
        out["compile_warmup_s"] = out_warm
    cases = zoo_inputs.cases(np.random.default_rng(0), C=a.width, B=a.batch, T=a.seq)
    for name, fn, inputs, rtol, atol in cases:
        if a.only and name not in a.only:
            continue
        path, mod = zoo_inputs.load(name)
        row = {"model": name, "fn": fn,
               "inputs": {k: list(v.shape) for k, v in inputs.items() if isinstance(v, np.ndarray)}}
        rows.append(row)
        targs = [torch.from_numpy(v) if isinstance(v, np.ndarray)
                 else [torch.from_numpy(t) for t in v] if isinstance(v, list) and v and isinstance(v[0], np.ndarray)
                 else v for v in inputs.values()]
        ref = getattr(mod, fn)
        try:
            t0 = time.perf_counter()
            kf = kiln.load(path, fn)
            got = kf(*targs)
            row["kiln_first_call_s"] = time.perf_counter() - t0
        except Exception as e:  # a model Kiln cannot run is a row saying why
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            print(f"zoo: {name}: {row['error']}", file=sys.stderr)
            continue
        with torch.no_grad():
            want = first_tensor(ref(*targs))
            g = first_tensor(got)
            g = g if isinstance(g, torch.Tensor) else torch.as_tensor(np.asarray(g))
            if want.dtype.is_floating_point:
                ok = torch.allclose(g.to(want.dtype), want, rtol=10 * rtol, atol=10 * atol, equal_nan=True)
            else:
                ok = torch.equal(g.to(want.dtype), want)
            if not ok:
                row["wrong"] = f"max |diff| {float((g.to(torch.float64) - want.to(torch.float64)).abs().max()):.3g}"
                print(f"zoo: {name}: WRONG ({row['wrong']})", file=sys.stderr)
                continue
            row["kiln"] = measure(kf, targs, batch_s)
            row["eager"] = measure(ref, targs, batch_s)
            if a.compile:
                try:
                    cf = torch.compile(ref)
                    t0 = time.perf_counter()
                    cf(*targs)
                    row["compile_first_call_s"] = time.perf_counter() - t0
                    row["compile"] = measure(cf, targs, batch_s)
                except Exception as e:
                    row["compile_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        print(f"zoo: {name}: kiln {row['kiln']['best_us']:.1f} us, eager {row['eager']['best_us']:.1f} us"
              + (f", compile {row['compile']['best_us']:.1f} us" if "compile" in row else ""), file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 1 if any("wrong" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
