# The peers of the contraction rows (see bench/contraction_rows.h): square
# SGEMM through NumPy's matmul (OpenBLAS here) or torch.mm(out=) (PyTorch 2's
# MKL, from peers_pt2.py) and single conv2d layers through PyTorch (eager; with
# PyTorch 2 also torch.compile). Inputs are peers_common.hashed() with the seeds kiln_bench uses, and
# each output is checked like Kiln's (SampleCheck: 16 x 16 spread elements of
# C, every (total // 509)-th element of a conv output) against float64 NumPy.
import ctypes
import os

import numpy as np

from peers_common import (budget_timer, compiled_form, guarded, hashed, input_sum, sample_err,
                          time_budget, timed_call, torch_setup)

SGEMM_SEED_A, SGEMM_SEED_B = 11, 12  # kSgemmSeedA/B in contraction_rows.h

# As conv_shapes() in contraction_rows.cpp: key, cin, cout, hw, k, pad, groups, seeds.
CONV_SHAPES = [
    ("resnet_3x3_64", 64, 64, 56, 3, 1, 1, 21, 22),
    ("resnet_3x3_128", 128, 128, 28, 3, 1, 1, 23, 24),
    ("resnet_3x3_256", 256, 256, 14, 3, 1, 1, 25, 26),
    ("pointwise_1x1", 64, 256, 56, 1, 0, 1, 27, 28),
    ("depthwise_3x3", 32, 32, 112, 3, 1, 32, 29, 30),
]


def conv_shapes(smoke):
    out = []
    for key, cin, cout, hw, k, pad, groups, sx, sw in CONV_SHAPES:
        if smoke:
            depthwise = groups == cin
            cin, cout, hw = cin // 8, cout // 8, 8
            groups = cin if depthwise else groups
        out.append(dict(key=key, cin=cin, cout=cout, hw=hw, k=k, pad=pad, groups=groups,
                        seed_x=sx, seed_w=sw))
    return out


def spread(n, count=16):
    return sorted({min(n - 1, i * n // (count - 1)) for i in range(count)})


def openblas_info():
    """The BLAS NumPy loaded (after one matmul), and OpenBLAS's core and threads."""
    libs = sorted({ln.split()[-1] for ln in open("/proc/self/maps")
                   if "blas" in ln.split()[-1].rsplit("/", 1)[-1]})
    info = {"libraries": libs}
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_get_config.restype = ctypes.c_char_p
            info.update(core=lib.openblas_get_corename().decode(),
                        config=lib.openblas_get_config().decode(),
                        threads=lib.openblas_get_num_threads())
            break
        except (OSError, AttributeError):
            continue
    return info


def sgemm(n, budget, make_run):
    """C = A @ B through make_run(a, b, c) -> a call writing c."""
    a = hashed((n, n), SGEMM_SEED_A)
    b = hashed((n, n), SGEMM_SEED_B)
    c = np.empty((n, n), np.float32)
    run = make_run(a, b, c)
    _, first = timed_call(run)
    rows = spread(n)
    want = a[rows].astype(np.float64) @ b[:, rows].astype(np.float64)
    err = sample_err(c[np.ix_(rows, rows)], want)
    return {"time": time_budget(run, budget, first), "flops": 2.0 * n**3, "max_err": err,
            "ok": err <= 1.0, "input_sum": input_sum([a, b])}


def numpy_matmul(a, b, c):
    return lambda: np.matmul(a, b, out=c)


def torch_mm(a, b, c):
    import torch
    ta, tb, tc = (torch.from_numpy(m) for m in (a, b, c))  # c shares its memory
    return lambda: torch.mm(ta, tb, out=tc)


def sgemm_rows(sizes, budget, make_run=numpy_matmul):
    out = {"sizes": sizes}
    for n in sizes:
        out[str(n)] = guarded(lambda: sgemm(n, budget, make_run))
    if make_run is numpy_matmul:
        out["blas"] = guarded(openblas_info)
    out["numpy"] = np.__version__
    return out


def conv_reference(x, w, s, flat):
    """The conv at flat output positions, float64 NumPy (x [1, C, H, W], w [O, C/g, k, k])."""
    oh = s["hw"] + 2 * s["pad"] - s["k"] + 1
    cin_g, cout_g = s["cin"] // s["groups"], s["cout"] // s["groups"]
    xp = np.pad(x[0].astype(np.float64), ((0, 0), (s["pad"],) * 2, (s["pad"],) * 2))
    oc, oy, ox = flat // (oh * oh), flat // oh % oh, flat % oh
    g = oc // cout_g
    want = np.zeros(flat.size)
    for ic in range(cin_g):
        for ky in range(s["k"]):
            for kx in range(s["k"]):
                want += xp[g * cin_g + ic, oy + ky, ox + kx] * w[oc, ic, ky, kx].astype(np.float64)
    return want


def torch_conv(s, threads, budget, compile_too=False):
    torch = torch_setup(threads)
    F = torch.nn.functional
    x = hashed((1, s["cin"], s["hw"], s["hw"]), s["seed_x"])
    w = hashed((s["cout"], s["cin"] // s["groups"], s["k"], s["k"]), s["seed_w"])
    oh = s["hw"] + 2 * s["pad"] - s["k"] + 1
    total = s["cout"] * oh * oh
    flat = np.arange(0, total, max(1, total // 509))
    want = conv_reference(x, w, s, flat)
    r = {"input_sum": input_sum([x, w]), "flops": 2.0 * s["cout"] * (s["cin"] // s["groups"]) *
         s["k"] ** 2 * oh * oh, "ok": True, "max_err": 0.0}
    for layout, fmt in (("nchw", torch.contiguous_format), ("channels_last", torch.channels_last)):
        tx = torch.from_numpy(x).contiguous(memory_format=fmt)
        tw = torch.from_numpy(w).contiguous(memory_format=fmt)
        with torch.no_grad():
            run = lambda: F.conv2d(tx, tw, None, 1, s["pad"], 1, s["groups"])  # noqa: E731
            y, first = timed_call(run)
            err = sample_err(y.contiguous().numpy().ravel()[flat], want)
            with torch.autograd.profiler.profile() as prof:
                run()
            kernels = sorted({e.key for e in prof.key_averages()
                              if "conv" in e.key and e.key not in ("aten::conv2d",
                                                                   "aten::convolution",
                                                                   "aten::_convolution")})
            r[layout] = {"time": time_budget(run, budget, first), "max_err": err,
                         "ok": err <= 1.0, "aten_ops": kernels}
        r["ok"] = r["ok"] and err <= 1.0
        r["max_err"] = max(r["max_err"], err)
    best = min(("nchw", "channels_last"), key=lambda k: r[k]["time"]["min_s"])
    r["time"], r["variant"] = r[best]["time"], best
    if compile_too:  # torch.compile of the call, inputs in the faster eager layout
        fmt = torch.channels_last if best == "channels_last" else torch.contiguous_format
        tx = torch.from_numpy(x).contiguous(memory_format=fmt)
        tw = torch.from_numpy(w).contiguous(memory_format=fmt)
        with torch.no_grad():
            r["compile"] = guarded(lambda: compiled_form(
                lambda x, w: F.conv2d(x, w, None, 1, s["pad"], 1, s["groups"]), (tx, tw),
                lambda y: sample_err(y.contiguous().numpy().ravel()[flat], want),
                budget_timer(budget)))
        r["ok"] = r["ok"] and r["compile"].get("ok", True)
    return r


def conv_rows(smoke, threads, budget, compile_too=False):
    import torch
    out = {"mkldnn_available": bool(torch.backends.mkldnn.is_available()),
           "mkldnn_enabled": bool(torch.backends.mkldnn.enabled)}
    for s in conv_shapes(smoke):
        out[s["key"]] = guarded(lambda: torch_conv(s, threads, budget, compile_too))
    return out


if __name__ == "__main__":  # a quick look: python3 bench/peers_contraction.py
    from peers_common import Budget
    import json
    print(json.dumps(sgemm_rows([256], Budget(0.5, 2, 5)))[:400])
    print(json.dumps(conv_rows(True, int(os.environ.get("THREADS", "2")), Budget(0.5, 2, 5)))[:800])
