# The table rows of the FMA peak, SGEMM, conv2d, MLP and example rows (see
# bench/README.md, "The rows"), for bench/report.py. Every throughput figure
# uses the best of N; "% of peak" divides by the FMA peak on all threads
# measured in the same run; ratios are peer time / Kiln time (above 1: Kiln
# is faster).
from report_common import kernels, ms, t, verdict

# Relative difference allowed between the two sides' sum |x| of the inputs
# (both sum the same f32 values in f64, in different orders).
INPUT_SUM_RTOL = 1e-7


def err_text(d):
    return d["error"] if isinstance(d, dict) and "error" in d else None


class Rows:
    """Collects table rows and the problems the notes under the table list."""

    def __init__(self, k, p, add):
        self.k, self.p, self.add = k, p, add
        self.wrong = []    # outputs off the reference, or inputs that differ
        self.failed = []   # Kiln rows that raised
        self.notes = []    # lines for under the table
        self.over_peak = 0.0  # the highest GFLOP/s above the measured peak
        self.fewer_multiplies = False  # a row's rate counts more FLOPs than it did
        fma = (k.get("fma") or {}).get("tn")
        x = t(fma)
        self.peak = fma["flops"] / x[0] if x else None  # flop/s

    def rate(self, d, flops=None, fewer_multiplies=False):
        """'t best / median (N); G GFLOP/s, P% of peak', or the reason it is missing.
        fewer_multiplies: an algorithm (Winograd) doing less arithmetic than the
        counted FLOPs; its rate is marked as such and does not judge the peak."""
        e = err_text(d)
        if e:
            return f"not measured: {e}"
        x = t(d)
        if x is None:
            return "n/a"
        f = flops if flops is not None else d.get("flops")
        if not f:
            return ms(x)
        g = f / x[0]
        if fewer_multiplies:
            self.fewer_multiplies = True
            return f"{ms(x)}; {g / 1e9:.1f} direct-equivalent GFLOP/s (fewer multiplies)"
        pct = f", {100 * g / self.peak:.0f}% of peak" if self.peak else ""
        if self.peak and g > self.peak:
            self.over_peak = max(self.over_peak, g)
        return f"{ms(x)}; {g / 1e9:.1f} GFLOP/s{pct}"

    def judge(self, name, d, kiln_side):
        """Records a wrong output (or a failed Kiln row) of one side."""
        if not isinstance(d, dict):
            return
        if "error" in d:
            if kiln_side:
                self.failed.append(f"{name}: {d['error']}")
            return
        if d.get("ok") is False:
            self.wrong.append(f"{name} (error {d.get('max_err', 0):.3g} x tolerance)")

    def same_inputs(self, name, a, b):
        if not all(isinstance(d, dict) and "input_sum" in d for d in (a, b)):
            return
        x, y = a["input_sum"], b["input_sum"]
        if abs(x - y) > INPUT_SUM_RTOL * max(abs(x), abs(y), 1e-30):
            self.wrong.append(f"{name}: the two sides' inputs differ (sum |x| {x:.9g} vs {y:.9g})")

    def ratio(self, kiln, peer):
        a, b = t(kiln), t(peer)
        return b[0] / a[0] if a and b else None


def merge_fma(k, passes):
    """Folds further FMA-peak passes (same kernel) into k["fma"]: their samples
    join, so min and median are over every pass."""
    f = k.get("fma")
    if not f:
        return
    for extra in passes:
        if not extra or extra.get("isa") != f["isa"] or extra.get("iters") != f["iters"]:
            continue
        for key in ("t1", "tn"):
            a, b = f[key], extra[key]
            if a.get("flops") != b.get("flops"):
                continue
            s = sorted(a["time"]["all_s"] + b["time"]["all_s"])
            n = len(s)
            med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
            a["time"] = {"min_s": s[0], "median_s": med, "reps": n,
                         "all_s": a["time"]["all_s"] + b["time"]["all_s"]}
            a["ok"] = a.get("ok", False) and b.get("ok", False)
        f["passes"] = f.get("passes", 1) + 1


def fma_rows(r):
    f = r.k.get("fma")
    if not f:
        return
    for key, label in (("t1", "1 thread"), ("tn", f"{f['tn']['threads']} threads")):
        d = f[key]
        x = t(d)
        g = f"{d['flops'] / x[0] / 1e9:.0f} GFLOP/s (best)" if x else "n/a"
        if key == "tn" and x and t(f["t1"]):
            one = f["t1"]["flops"] / t(f["t1"])[0]
            g += f", {d['flops'] / x[0] / one:.2f}x one thread"
        cell = (f"{d['flops'] / x[0] / 1e9:.1f} / {d['flops'] / x[1] / 1e9:.1f} GFLOP/s "
                f"(N={x[2]})") if x else "n/a"
        r.add(f"FMA peak {label}", f"FMA peak, f32, {label}: {f['isa']}, {f['chains']} "
              f"independent chains x {f['lanes']} lanes per thread, {f['iters']:.3g} steps each; "
              f"best over {f.get('passes', 1)} passes spread over the run",
              cell, "—", g, "reference" if key == "tn" else "(no target)", "")
        if not d.get("ok"):
            r.wrong.append(f"FMA peak {label}")
    x1, xn = t(f["t1"]), t(f["tn"])
    if x1 and xn and f["tn"]["threads"] > 1:
        scale = (f["tn"]["flops"] / xn[0]) / (f["t1"]["flops"] / x1[0])
        if scale < 0.9 * f["tn"]["threads"]:
            r.notes.append(
                f"The {f['tn']['threads']}-thread FMA peak came out at only {scale:.2f}x one "
                "thread: the other core was busy during its calls, so every \"% of peak\" "
                "above is higher than it would be on a quiet machine.")


def sgemm_rows(r):
    ks, ps = r.k.get("sgemm"), r.p.get("sgemm")
    if not ks:
        return
    blas = (ps or {}).get("blas") or {}
    openblas = (f"OpenBLAS {blas.get('config', '?').split()[1] if blas.get('config') else '?'} "
                f"(numpy.matmul, core {blas.get('core', '?')}, {blas.get('threads', '?')} threads)")
    onednn = (f"oneDNN {ks.get('dnnl_version')} dnnl_sgemm ({ks.get('dnnl_threads')} OpenMP "
              "threads)" if ks.get("dnnl_found") else "oneDNN dnnl_sgemm")
    for n in ks["sizes"].split(","):
        row = ks[n]
        kiln = row["kiln"]
        peers = [(openblas, (ps or {}).get(n) if isinstance(ps, dict) and "error" not in ps
                  else ps), (onednn, row.get("dnnl"))]
        r.judge(f"SGEMM {n} Kiln", kiln, True)
        for name, d in peers:
            r.judge(f"SGEMM {n} {name.split(' (')[0]}", d, False)
            r.same_inputs(f"SGEMM {n} Kiln / {name.split(' (')[0]}", kiln, d)
        measured = [pd for pd in peers if t(pd[1])]
        measured.sort(key=lambda pd: t(pd[1])[0])
        order = measured + [pd for pd in peers if pd not in measured]
        target = 0.9 if int(n) >= 1024 else None
        for i, (name, d) in enumerate(order):
            ratio = r.ratio(kiln, d)
            better = ", the better library this run" if i == 0 and len(measured) == 2 else ""
            tgt = target if i == 0 else None
            r.add(f"SGEMM {n} vs {name.split(' (')[0]}",
                  f"SGEMM {n}x{n}x{n} f32, row-major C = A @ B: Kiln ({kernels(kiln)}) vs "
                  f"{name}{better}", r.rate(kiln), r.rate(d),
                  "n/a" if ratio is None else f"{ratio:.2f}x",
                  f">= {tgt:g}x the better library" if tgt else "(no target)",
                  verdict(ratio, tgt) if tgt else "")


CONV_TARGETS = {"resnet_3x3_64": 0.8, "resnet_3x3_128": 0.8, "resnet_3x3_256": 0.8,
                "pointwise_1x1": 0.9, "depthwise_3x3": 1.2}


def conv_rows(r):
    kc, pc = r.k.get("conv"), r.p.get("conv") or {}
    if not kc:
        return
    for key, target in CONV_TARGETS.items():
        kiln = kc.get(key)
        if kiln is None:
            continue
        peer = pc.get(key) if "error" not in pc else pc
        r.judge(f"conv {key} Kiln", kiln, True)
        r.judge(f"conv {key} PyTorch", peer, False)
        r.same_inputs(f"conv {key}", kiln, peer)
        label = kiln.get("label", key)
        pad = kiln.get("pad", "?")
        peer_cell = r.rate(peer, (peer or {}).get("flops"))
        variant = ""
        if isinstance(peer, dict) and "variant" in peer:
            other = "nchw" if peer["variant"] == "channels_last" else "channels_last"
            name = {"nchw": "NCHW", "channels_last": "channels_last"}
            ops = ", ".join(peer[peer["variant"]].get("aten_ops", [])) or "?"
            variant = f" ({name[peer['variant']]}, faster than {name[other]} at " \
                      f"{ms(t(peer[other]))}; {ops})"
        ratio = r.ratio(kiln, peer)
        algo = kiln.get("algorithm", "")
        # Winograd does 2.25x fewer multiplies than the direct convolution whose
        # FLOPs both sides are counted by, so its rate may pass the FMA peak.
        fewer = "winograd" in algo
        r.add(f"conv {key}", f"conv2d {label}, batch 1, f32, padding {pad}, no bias: Kiln "
              f"({kernels(kiln)}{', ' + algo if algo else ''}) vs PyTorch{variant}",
              r.rate(kiln, fewer_multiplies=fewer), peer_cell,
              "n/a" if ratio is None else f"{ratio:.2f}x", f">= {target:g}x",
              verdict(ratio, target))


MLP_VARIANTS = {"eager_functional": "eager, `F.gelu(x @ w1 + b1) @ w2 + b2`",
                "eager_module": "eager `nn.Sequential(Linear, GELU, Linear)`",
                "torchscript": "TorchScript (scripted Sequential, frozen, optimize_for_inference)",
                "mkldnn": "`torch.utils.mkldnn.to_mkldnn(Sequential)` (mkldnn tensors; "
                          "to_mkldnn/to_dense of x and y timed)"}


def mlp_rows(r):
    kiln, peer = r.k.get("mlp"), r.p.get("mlp") or {}
    if not kiln:
        return
    r.judge("MLP Kiln", kiln, True)
    r.same_inputs("MLP", kiln, peer)
    shapes = kiln.get("shapes", "")
    best = peer.get("variant")
    order = ([best] if best else []) + [v for v in MLP_VARIANTS if v != best]
    for v in order:
        d = peer.get(v) if "error" not in peer else peer
        r.judge(f"MLP PyTorch {v}", d, False)
        ratio = r.ratio(kiln, d)
        e = err_text(d)
        first = v == best
        cell = (f"not supported: {e}" if v == "mkldnn" and e else r.rate(d, peer.get("flops")))
        r.add(f"MLP vs PyTorch {v}" if not first else "MLP vs fastest PyTorch",
              f"MLP (issue 6) {shapes}, f32: Kiln (`examples/mlp.kiln`, {kernels(kiln)}) vs "
              f"PyTorch {MLP_VARIANTS[v]}" + (", the fastest variant this run" if first else ""),
              r.rate(kiln), cell, "n/a" if ratio is None else f"{ratio:.2f}x",
              ">= 1.3x the fastest" if first else "(no target)",
              verdict(ratio, 1.3) if first else "")


EXAMPLE_FILES = {"mlp": "examples/mlp.kiln (its comment's sizes; --smoke: smaller)",
                 "transformer": "examples/transformer.kiln (heads 4)",
                 "conv_block": "examples/conv_block.kiln",
                 "gpt2_attention": "GPT-2 attention (tests/models/gpt2_block.py's "
                                   "causal_self_attention as written, 12 heads; --smoke: 4)"}


def example_rows(r):
    ke, pe = r.k.get("examples"), r.p.get("examples") or {}
    if not ke:
        return
    for name, label in EXAMPLE_FILES.items():
        kiln = ke.get(name)
        if kiln is None:
            continue
        peer = pe.get(name) if "error" not in pe else pe
        r.judge(f"example {name} Kiln", kiln, True)
        r.same_inputs(f"example {name}", kiln, peer)
        fusion = (f"{int(kiln['kernels_unfused'])} kernels unfused -> {kernels(kiln)} fused"
                  if "kernels_unfused" in kiln else "")
        # The tensors of rank 2 and up name the sizes; biases and norm weights follow.
        text = kiln.get("shapes") or (peer or {}).get("shapes", "") if isinstance(peer, dict) \
            else kiln.get("shapes", "")
        shapes = ", ".join(e for e in text.split(", ") if e and "x" in e.split()[-1])
        for v, vname in (("eager", "PyTorch eager"),
                         ("torchscript", "TorchScript (scripted, frozen, optimize_for_inference)")):
            if isinstance(peer, dict) and "error" not in peer and v not in peer:
                continue  # a form this model has not (TorchScript of gpt2_block.py)
            d = (peer or {}).get(v) if isinstance(peer, dict) and "error" not in peer else peer
            r.judge(f"example {name} {vname}", d, False)
            ratio = r.ratio(kiln, d)
            r.add(f"example {name} vs {v}", f"{label}, {shapes}, f32: Kiln"
                  f"{f' ({fusion})' if fusion else ''} vs {vname}", r.rate(kiln), r.rate(d),
                  "n/a" if ratio is None else f"{ratio:.2f}x", "(no target)", "")


def peak_notes(r):
    """Call after every row: a row faster than the peak proves the peak was
    measured in busy spells."""
    if r.fewer_multiplies:
        r.notes.append(
            "Rows marked \"direct-equivalent GFLOP/s\" ran Winograd F(2x2, 3x3), which does "
            "2.25x fewer multiplies than the direct convolution the rate counts, so it may pass "
            "the FMA peak; their time ratio against PyTorch is what counts.")
    if r.over_peak:
        r.notes.append(
            f"Some rows ran faster than the measured FMA peak (up to {r.over_peak / 1e9:.0f} vs "
            f"{r.peak / 1e9:.0f} GFLOP/s): every FMA-peak call met a busy spell of the "
            "neighbours, so the peak is understated and the \"% of peak\" figures are too high.")
