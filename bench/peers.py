#!/usr/bin/python3
# Kiln's peers for bench/: Halide (Debian's python3-halide, JIT), PyTorch and
# NumPy, measured on the same problems as kiln_bench. Prints one JSON object;
# scripts/bench merges it with kiln_bench's into the table. This file holds the
# bandwidth and compile rows' peers (PyTorch's through peers_bandwidth.py);
# peers_contraction.py has SGEMM (NumPy) and conv2d (PyTorch), peers_models.py
# the MLP and the examples (PyTorch), and peers_common.py what they share.
# PyTorch 2 (eager and torch.compile) is peers_pt2.py, run by another Python.
#
#   /usr/bin/python3 bench/peers.py [--quick | --smoke] [--threads N] [--json FILE]
#   /usr/bin/python3 bench/peers.py --halide-first-compile   (internal)
#
# Run with Debian's /usr/bin/python3 (that is where python3-numpy, -torch and
# -halide live). Each peer that fails to import or run reports {"error": ...}
# instead of stopping the others. Timing: each call timed on its own with
# time.perf_counter_ns, after warm-up calls; min and median of N are reported.
# Outputs are preallocated where the library allows it (Halide realize into a
# Buffer, torch/numpy out=), so no timed call pays for fresh pages.
import json
import os
import subprocess
import sys
import time

import peers_bandwidth
from peers_bandwidth import A, B, chain_input, chain_reference
from peers_common import Budget, guarded, max_err, stats, time_reps

T_START_NS = time.monotonic_ns()  # first thing: the fresh-process Halide row starts here

THREADS = 2
for i, a in enumerate(sys.argv):
    if a == "--threads" and i + 1 < len(sys.argv):
        THREADS = int(sys.argv[i + 1])
# Halide's runtime reads HL_NUM_THREADS when its thread pool starts.
os.environ.setdefault("HL_NUM_THREADS", str(THREADS))

# --- Halide ---------------------------------------------------------------------


def halide_chain_pipeline(tanh_from_exp=True):
    """The chain as a Halide Func with a vectorize(8) + parallel schedule.

    Halide 14's hl.tanh on f32 calls the scalar libm tanhf lane by lane, which
    makes it ~20x slower than the rest of the chain; a Halide user after speed
    writes tanh from hl.exp (a vectorised polynomial), as here by default. Both
    pipelines are measured; the faster one is the peer Kiln is compared with.
    """
    import halide as hl
    x, xo, xi = hl.Var("x"), hl.Var("xo"), hl.Var("xi")
    inp = hl.ImageParam(hl.Float(32), 1, "inp")
    f = hl.Func("chain")
    v = inp[x]
    z = v * hl.f32(A) + hl.f32(B)
    if tanh_from_exp:
        # tanh|v| = (1 - e) / (1 + e) with e = exp(-2|v|) <= 1 (never overflows),
        # then the sign of v.
        e = hl.exp(hl.f32(-2.0) * hl.abs(v))
        th_abs = (hl.f32(1.0) - e) / (hl.f32(1.0) + e)
        th = hl.select(v < hl.f32(0.0), -th_abs, th_abs)
    else:
        th = hl.tanh(v)
    f[x] = hl.f32(1.0) / (hl.f32(1.0) + hl.exp(-z)) * th + hl.f32(0.5) * v
    # 16 Ki-element tasks: enough of them to balance two threads, each long
    # enough that task overhead is noise; 8 f32 lanes fill one AVX2 register.
    f.split(x, xo, xi, 16384, hl.TailStrategy.GuardWithIf).parallel(xo).vectorize(xi, 8)
    return f, inp


def halide_chain(n, reps, tanh_from_exp):
    import halide as hl
    import numpy as np
    f, inp = halide_chain_pipeline(tanh_from_exp)
    t0 = time.perf_counter_ns()
    f.compile_jit()
    compile_s = (time.perf_counter_ns() - t0) * 1e-9
    x = chain_input(n)
    inp.set(hl.Buffer(x))
    out = hl.Buffer(hl.Float(32), [n])
    f.realize(out)
    got = np.array(out, copy=True)
    err = max_err(got[::997], chain_reference(x[::997]))
    r = {"time": time_reps(lambda: f.realize(out), 3, reps), "max_err": err, "ok": err <= 1.0,
         "compile_s": compile_s, "target": str(hl.get_jit_target_from_environment()),
         "schedule": "split(x, 16384).parallel(xo).vectorize(xi, 8)",
         "tanh": "from hl.exp" if tanh_from_exp else "hl.tanh",
         "threads": os.environ.get("HL_NUM_THREADS")}
    return r


def halide_first_compile_child():
    """One fresh-process compile_jit of the chain; prints monotonic stamps."""
    import halide  # noqa: F401  (import time is part of from-spawn only)
    t_imported = time.monotonic_ns()
    f, _ = halide_chain_pipeline()
    f.compile_jit()
    t_done = time.monotonic_ns()
    print(json.dumps({"t_start_ns": T_START_NS, "t_imported_ns": t_imported, "t_done_ns": t_done}))


def halide_first_compile(reps):
    in_process, from_spawn = [], []
    for _ in range(reps):
        t_spawn = time.monotonic_ns()
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--halide-first-compile"],
                             check=True, capture_output=True, text=True).stdout
        d = json.loads(out.strip().splitlines()[-1])
        in_process.append((d["t_done_ns"] - d["t_imported_ns"]) * 1e-9)
        from_spawn.append((d["t_done_ns"] - t_spawn) * 1e-9)
    return {"in_process": stats(in_process), "from_spawn": stats(from_spawn)}


# --- PyTorch eager (peers_bandwidth.py) ------------------------------------------


def torch_rows(chain_n, rows, cols, reps, norm_reps):
    import torch
    torch.set_num_threads(THREADS)
    return peers_bandwidth.torch_rows(torch, chain_n, rows, cols, reps, norm_reps)


# --- NumPy ------------------------------------------------------------------------


def numpy_chain(n, reps):
    import numpy as np
    x = chain_input(n)
    t, u, y = np.empty_like(x), np.empty_like(x), np.empty_like(x)

    def run():
        np.multiply(x, np.float32(-A), out=t)  # t = -(x*A + B), so exp(t) is the sigmoid's
        np.subtract(t, np.float32(B), out=t)
        np.exp(t, out=t)
        np.add(t, np.float32(1), out=t)
        np.reciprocal(t, out=t)
        np.tanh(x, out=u)
        np.multiply(t, u, out=t)
        np.multiply(x, np.float32(0.5), out=u)
        np.add(t, u, out=y)

    run()
    err = max_err(y[::997], chain_reference(x[::997]))
    return {"version": np.__version__, "time": time_reps(run, 3, reps), "max_err": err,
            "ok": err <= 1.0, "threads": 1}


def contraction_peers():
    import peers_contraction  # imports NumPy and PyTorch: inside guarded()
    return peers_contraction


def model_peers():
    import peers_models  # imports PyTorch: inside guarded()
    return peers_models


def debian_versions():
    """The Debian package versions of the peers (torch.__version__ says 1.13.0a0 there)."""
    names = ["python3-halide", "python3-torch", "python3-numpy", "libopenblas0-pthread",
             "libdnnl2"]
    try:
        text = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\\n"] + names,
                              capture_output=True, text=True).stdout
        return dict(line.split(" ", 1) for line in text.splitlines() if " " in line)
    except OSError:
        return {}


def main():
    args = sys.argv[1:]
    if args == ["--halide-first-compile"]:
        halide_first_compile_child()
        return 0
    quick, smoke = "--quick" in args, "--smoke" in args
    reps, norm_reps, spawn_reps = (30, 15, 10)
    if quick:
        reps, norm_reps, spawn_reps = (5, 3, 3)
    if smoke:
        reps, norm_reps, spawn_reps = (2, 2, 1)
    chain_n = 1 << (16 if smoke else 24)
    rows, cols = (64, 256) if smoke else (4096, 4096)
    out = {"python": sys.version.split()[0], "threads": THREADS, "chain_n": chain_n,
           "rows": rows, "cols": cols, "packages": debian_versions()}
    print("peers.py: halide...", file=sys.stderr)
    out["halide"] = guarded(lambda: halide_chain(chain_n, reps, tanh_from_exp=True))
    out["halide_libm_tanh"] = guarded(lambda: halide_chain(chain_n, reps, tanh_from_exp=False))
    out["halide_first_compile"] = guarded(lambda: halide_first_compile(spawn_reps))
    print("peers.py: torch...", file=sys.stderr)
    out["torch"] = guarded(lambda: torch_rows(chain_n, rows, cols, reps, norm_reps))
    print("peers.py: numpy...", file=sys.stderr)
    out["numpy"] = guarded(lambda: numpy_chain(chain_n, reps))
    budget = Budget(0.0, 2, 2) if smoke else Budget(1.0, 2, 20) if quick else Budget(3.0, 2, 200)
    print("peers.py: numpy sgemm...", file=sys.stderr)
    out["sgemm"] = guarded(lambda: contraction_peers().sgemm_rows(
        [32, 64] if smoke else [256, 512, 1024, 2048], budget))
    print("peers.py: torch conv2d...", file=sys.stderr)
    out["conv"] = guarded(lambda: contraction_peers().conv_rows(smoke, THREADS, budget))
    print("peers.py: torch models...", file=sys.stderr)
    models = guarded(lambda: model_peers().model_rows(smoke, THREADS, budget))
    out["mlp"] = models.get("mlp", models)
    out["examples"] = models.get("examples", models)
    text = json.dumps(out) + "\n"
    if "--json" in args:
        with open(args[args.index("--json") + 1], "w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
