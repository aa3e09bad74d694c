# PyTorch 2 as Kiln's peer (issue 14): the version users install from PyPI
# (MKL/oneDNN GEMMs, AVX-512 kernels, torch.compile with Inductor), eager and
# torch.compile, on the rows where they apply:
#   chain, softmax, layer norm   eager (out= where PyTorch has it) and compile
#                                (peers_bandwidth.py)
#   SGEMM 256..2048              torch.mm(a, b, out=c) (peers_contraction.py);
#                                no compile form: Inductor calls the same
#                                extern GEMM for a lone mm
#   conv2d layers                eager NCHW / channels_last and compile
#   MLP (issue 6)                eager x @ w1, F.linear, nn.Sequential; compile
#                                of the first two (peers_models.py)
#   examples, GPT-2 attention    eager and compile (peers_models.py)
# on the same inputs and with the same checks as peers.py's PyTorch 1.13 rows.
# Prints one JSON object (scripts/bench passes it to report.py --pt2).
#
#   python bench/peers_pt2.py [--quick | --smoke] [--threads N] [--json FILE]
#                             [--only GROUPS]   (bandwidth,sgemm,conv,models)
#
# Run by scripts/bench with scripts/bench-env's Python (PyTorch 2 from PyPI),
# OMP_NUM_THREADS=N and, where the CPU has AVX-512, ATEN_CPU_CAPABILITY=avx512.
# Every call runs under torch.no_grad() with torch.set_num_threads(N).
# torch.compile: default mode (Inductor, C++/OpenMP kernels for the CPU);
# Inductor's caches go to a fresh directory removed at exit, so each form's
# first call is a cold compile (its compile_s), as Kiln's compile times are.
# Inductor's own start-up (imports, its compile workers) is paid once by a
# tiny warm-up compile first and reported apart (compile_warmup_s).
import json
import os
import shutil
import sys
import tempfile
import time

CACHE = tempfile.mkdtemp(prefix="kiln-bench-inductor-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = CACHE  # before torch is imported

import peers_bandwidth  # noqa: E402
import peers_contraction  # noqa: E402
import peers_models  # noqa: E402
from peers_common import Budget, compiled_form, guarded, inductor_warm_up  # noqa: E402


def arg(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main():
    import torch
    args = sys.argv[1:]
    smoke, quick = "--smoke" in args, "--quick" in args
    threads = int(arg("--threads", "2"))
    only = arg("--only", "bandwidth,sgemm,conv,models").split(",")
    torch.set_num_threads(threads)
    reps, norm_reps = (2, 2) if smoke else (5, 3) if quick else (30, 15)
    chain_n = 1 << (16 if smoke else 24)
    rows, cols = (64, 256) if smoke else (4096, 4096)
    budget = Budget(0.0, 2, 2) if smoke else Budget(1.0, 2, 20) if quick else Budget(3.0, 2, 200)
    t_start = time.perf_counter()
    out = {"python": sys.version.split()[0], "threads": threads, "chain_n": chain_n,
           "rows": rows, "cols": cols, "torch": peers_bandwidth.torch_info(torch),
           "mkl": bool(torch.backends.mkl.is_available()),
           "mkldnn": bool(torch.backends.mkldnn.is_available())}
    with torch.no_grad():
        out["compile_warmup_s"] = guarded(inductor_warm_up)
        if "bandwidth" in only:
            print("peers_pt2.py: chain, softmax, layer norm...", file=sys.stderr)
            out["bandwidth"] = guarded(lambda: peers_bandwidth.torch_rows(
                torch, chain_n, rows, cols, reps, norm_reps, compiled_form))
        if "sgemm" in only:
            print("peers_pt2.py: sgemm (torch.mm)...", file=sys.stderr)
            out["sgemm"] = guarded(lambda: peers_contraction.sgemm_rows(
                [32, 64] if smoke else [256, 512, 1024, 2048], budget, peers_contraction.torch_mm))
        if "conv" in only:
            print("peers_pt2.py: conv2d...", file=sys.stderr)
            out["conv"] = guarded(lambda: peers_contraction.conv_rows(smoke, threads, budget,
                                                                      compile_too=True))
        if "models" in only:
            print("peers_pt2.py: models...", file=sys.stderr)
            models = guarded(lambda: peers_models.model_rows(
                smoke, threads, budget,
                mlp_forms=("eager_functional", "eager_linear", "eager_module",
                           "compile_functional", "compile_linear"),
                example_forms=("eager", "compile")))
            out["mlp"] = models.get("mlp", models)
            out["examples"] = models.get("examples", models)
    out["run_s"] = time.perf_counter() - t_start
    text = json.dumps(out) + "\n"
    if "--json" in args:
        with open(arg("--json", None), "w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        shutil.rmtree(CACHE, ignore_errors=True)
