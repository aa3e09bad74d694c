#!/usr/bin/python3
# Merges kiln_bench's and peers.py's JSON into one Markdown table, prints it,
# and (with --readme) rewrites the marked results section of bench/README.md.
#
#   bench/report.py --kiln kiln.json --peers peers.json [--fma fma.json]
#                   [--readme bench/README.md] [--title T]
#
# Every ratio and percentage uses the minimum of N (best of N, as STREAM
# reports); medians are shown next to minima. A target is "met" only when both
# sides were measured in this run; a row that could not be measured says so.
import argparse
import datetime
import json
import os
import platform
import re
import subprocess

import report_pt2
import report_rows
from report_common import gbs, kernels, ms, one, pow2, t, verdict

BEGIN = "<!-- bench:results:begin (written by scripts/bench; edits here are overwritten) -->"
END = "<!-- bench:results:end -->"


def machine():
    model, flags = "?", ""
    with open("/proc/cpuinfo") as fh:
        for ln in fh:
            if ln.startswith("model name") and model == "?":
                model = ln.split(":", 1)[1].strip()
            elif ln.startswith("flags") and not flags:
                flags = ln.split(":", 1)[1]
    lscpu = {}
    try:
        for ln in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            k, _, v = ln.partition(":")
            lscpu[k.strip()] = v.strip()
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    isa = "avx512f" if " avx512f" in flags else "avx2" if " avx2" in flags else "sse"
    desc = (f"{model} (family {lscpu.get('CPU family', '?')}, model {lscpu.get('Model', '?')}), "
            f"{os.cpu_count()} cores, L3 {lscpu.get('L3 cache', '?')}, {mem_gib:.0f} GiB RAM, "
            f"widest vector ISA {isa}, {lscpu.get('Hypervisor vendor', 'bare metal')} "
            f"{'guest' if 'Hypervisor vendor' in lscpu else ''}".rstrip())
    return desc, platform.release()


def git_rev(root):
    try:
        rev = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return rev + (" + uncommitted changes" if dirty else "")
    except OSError:
        return "?"


def build_table(k, p):
    """Rows of (short name, row, kiln, peer, result, target, met), and the
    report_rows.Rows that judged the contraction and model rows."""
    rows = []

    def add(short, *cells):
        rows.append((short,) + cells)

    new_rows = report_rows.Rows(k, p, add)

    triad = t(k.get("triad"))
    triad_bw = k["triad"]["bytes"] / triad[0] if triad else None
    add("triad", f"STREAM triad `a[i] = b[i] + s*c[i]`, f32, 3 x {pow2(k['triad']['n'])} elements "
        f"(3 x 4 B/element), {k['threads']} threads", gbs(triad, k["triad"]["bytes"]), "—",
        f"{triad_bw / 1e9:.1f} GB/s (best)" if triad_bw else "n/a", "reference", "")
    report_rows.fma_rows(new_rows)

    def pct_triad(row):
        x = t(row)
        return None if x is None or not triad_bw else 100 * row["bytes"] / x[0] / triad_bw

    s = k["stream"]
    pct = pct_triad(s)
    add("y = x*a + b % of triad",
        f"`y = x*a + b`, {pow2(s['n'])} f32 (8 B/element), Kiln ({kernels(s)})",
        gbs(t(s), s["bytes"]), "—", "n/a" if pct is None else f"{pct:.0f}% of triad",
        ">= 85% of triad", verdict(pct, 85))

    c = k["chain"]
    kc = t(c)
    chain_label = f"`sigmoid(x*a + b) * tanh(x) + 0.5*x`, {pow2(c['n'])} f32"
    for short, name, peer, target in (
            ("chain vs Halide", "Halide (JIT, vectorize(8) + parallel, tanh from hl.exp)",
             p.get("halide"), 1.0),
            ("chain vs Halide hl.tanh", "Halide, same with `hl.tanh` (scalar libm tanhf)",
             p.get("halide_libm_tanh"), None),
            ("chain vs PyTorch", "PyTorch eager (out=, 2 threads)",
             (p.get("torch") or {}).get("chain"), 5.0),
            ("chain vs NumPy", "NumPy (out=, 1 thread)", p.get("numpy"), None)):
        pt = t(peer)
        ratio = pt[0] / kc[0] if pt and kc else None
        err = f" ({peer['error']})" if isinstance(peer, dict) and "error" in peer else ""
        add(short, f"{chain_label}: Kiln ({kernels(c)}) vs {name}", ms(kc), ms(pt) + err,
            "n/a" if ratio is None else f"{ratio:.2f}x",
            f">= {target:g}x" if target else "(no target)",
            verdict(ratio, target) if target else "")

    torch = p.get("torch") or {}
    for key, label in (("softmax", "row softmax"),
                       ("layer_norm", "layer norm (with weight, bias)")):
        r = k[key]
        kt = t(r)
        peer = torch.get(key)
        pt = t(peer)
        ratio = pt[0] / kt[0] if pt and kt else None
        pct = pct_triad(r)
        variant = ""
        if isinstance(peer, dict) and "variant" in peer:
            variant = {"time_out": ", out=", "time_alloc": ", allocating",
                       "time_out_copy": ", `native_layer_norm.out`: allocates, then copies"}.get(
                           peer["variant"], "")
        err = f" ({peer['error']})" if isinstance(peer, dict) and "error" in peer else ""
        short = label.split(" (")[0]
        add(f"{short} vs PyTorch", f"{label}, {r['rows']}x{r['cols']} f32: Kiln ({kernels(r)}) "
            f"vs PyTorch eager (2 threads{variant})", ms(kt), ms(pt) + err,
            "n/a" if ratio is None else f"{ratio:.2f}x", ">= 1.6x", verdict(ratio, 1.6))
        add(f"{short} % of triad", f"{label}: Kiln bandwidth (1 read + 1 write = 8 B/element)",
            gbs(kt, r["bytes"]), "—", "n/a" if pct is None else f"{pct:.0f}% of triad",
            ">= 60% of triad", verdict(pct, 60))

    for group in (report_rows.sgemm_rows, report_rows.conv_rows, report_rows.mlp_rows,
                  report_rows.example_rows, report_rows.peak_notes):
        group(new_rows)

    fc = k.get("first_compile", {})
    hfc = p.get("halide_first_compile", {})
    kin = t(fc, "in_process")
    add("compile (1) fresh process", "compile (1): chain, first compile in a fresh process, first "
        "Kiln call -> compiled (LLVM start-up included); peer: Halide's first `compile_jit` after "
        "`import halide`", ms(kin), ms(t(hfc, "in_process")), one(kin, 1) + " (median)",
        "<= 100 ms", verdict(kin and kin[1] * 1e3, 100, False))
    kfs = t(fc, "from_spawn")
    add("compile (1') from spawn", "compile (1'): same, from spawn (exec, loading, static init; "
        "Halide: python start-up and `import halide`)", ms(kfs), ms(t(hfc, "from_spawn")),
        one(kfs, 1) + " (median)", "(no target)", "")
    comp = k.get("compile", {})
    for key, label, target_ms, tgt in (
            ("cold", "compile (2): cold, in-memory cache cleared, disk cache off", 20, "<= 20 ms"),
            ("disk", "compile (3): load from the disk cache (in-memory cleared)", 2, "<= 2 ms"),
            ("memory", "compile (4): in-memory cache hit", 0.05, "<= 50 us")):
        x = t(comp, key)
        note = ""
        if x is None and key == "disk":
            note = f" ({comp.get('disk_note', 'not measured')})"
        add(label.split(":")[0] + " " + key, label, ms(x) + note, "—",
            one(x, 1) + (" (median)" if x else ""), tgt,
            verdict(x and x[1] * 1e3, target_ms, False))
    return rows, new_rows


def load_line(load_start):
    """How busy the machine was: a shared machine's neighbours show up here first."""
    end = " / ".join(f"{v:.1f}" for v in os.getloadavg())
    start = " / ".join(f"{float(v):.1f}" for v in load_start.split()) if load_start else "?"
    return (f"Load average (1 / 5 / 15 min): {start} when the run began, {end} when it ended; "
            f"the bench itself adds up to {os.cpu_count()}, anything beyond that is other work "
            "sharing the cores, and the times are that much noisier.")


def python_call_lines(pc):
    """The Python call-overhead table (bench/python_call.py's JSON)."""
    rows = pc.get("rows") or {}
    lines = ["", f"Python call overhead (`bench/python_call.py`: `a * b + a` on 1024 f32 elements, "
             f"two inputs; PyTorch {pc.get('torch', '?')}, Python {pc.get('python', '?')}; "
             "best / median of 7 batches, microseconds per call):", "",
             "| form | us per call (best / median) | first call | vs Kiln |", "|---|---|---|---|"]
    kiln = (rows.get("kiln (torch tensors)") or {}).get("best_us")
    for name, r in rows.items():
        if "error" in r:
            lines.append(f"| {name} | not measured: {r['error']} | | |")
            continue
        ratio = f"{r['best_us'] / kiln:.2f}x" if kiln and not name.startswith("kiln") else ""
        bad = "" if r.get("ok", True) else " **WRONG**"
        lines.append(f"| {name} | {r['best_us']:.2f} / {r['median_us']:.2f}{bad} | "
                     f"{r['first_call_s'] * 1e3:.1f} ms | {ratio} |")
    if kiln:
        peers = [r["best_us"] for n, r in rows.items()
                 if n in ("torch.jit.script", "torch.compile") and "best_us" in r]
        met = kiln <= 5.0 and len(peers) == 2 and all(kiln < p for p in peers)
        lines += ["", f"Target (issue 16): Kiln on torch tensors <= 5 us per call and faster than "
                  f"torch.jit.script and torch.compile: {'met' if met else 'not met'} "
                  f"({kiln:.2f} us)."]
    return lines


def zoo_lines(z):
    """The model zoo table (bench/zoo.py's JSON): each tests/models file through Kiln and PyTorch."""
    rows = z.get("rows") or []
    has_compile = any("compile" in r or "compile_error" in r for r in rows)
    lines = ["", f"Model zoo (`bench/zoo.py`: each `tests/models/*.py` function as written, through "
             f"`kiln.load` and through PyTorch {z.get('torch', '?')} eager"
             + (" and `torch.compile`" if has_compile else "") +
             f", {z.get('threads', '?')} threads, same inputs; transformers at width "
             f"{z.get('width', '?')}, batch {z.get('batch', '?')}, sequence {z.get('seq', '?')}, "
             "the rest at the test's sizes; best / median of 5 batches, microseconds per call; "
             "speedup = PyTorch / Kiln):", ""]
    head = "| model | inputs (first) | Kiln | eager | speedup vs eager |"
    sep = "|---|---|---|---|---|"
    if has_compile:
        head += " torch.compile | speedup vs compile | first call: Kiln / torch.compile |"
        sep += "---|---|---|"
    lines += [head, sep]
    speedups = []
    for r in rows:
        first = next(iter((r.get("inputs") or {}).items()), None)
        shape = f"{first[0]} {'x'.join(map(str, first[1]))}" if first else ""
        if "error" in r or "wrong" in r:
            why = f"**FAILED**: {r['error']}" if "error" in r else f"**WRONG**: {r['wrong']}"
            lines.append(f"| {r['model']} | {shape} | {why} | | |" + (" | | |" if has_compile else ""))
            continue
        kb, eb = r["kiln"]["best_us"], r["eager"]["best_us"]
        speedups.append(eb / kb)
        cells = [r["model"], shape, f"{kb:.1f} / {r['kiln']['median_us']:.1f}",
                 f"{eb:.1f} / {r['eager']['median_us']:.1f}", f"{eb / kb:.2f}x"]
        if has_compile:
            if "compile" in r:
                cb = r["compile"]["best_us"]
                cells += [f"{cb:.1f} / {r['compile']['median_us']:.1f}", f"{cb / kb:.2f}x",
                          f"{r.get('kiln_first_call_s', 0):.2f} s / "
                          f"{r.get('compile_first_call_s', 0):.1f} s"]
            else:
                cells += [f"not measured: {r.get('compile_error', '?')}", "", ""]
        lines.append("| " + " | ".join(cells) + " |")
    if speedups:
        geo = 1.0
        for v in speedups:
            geo *= v
        geo **= 1.0 / len(speedups)
        lines += ["", f"Geometric mean speedup vs eager over {len(speedups)} models: {geo:.2f}x "
                  f"(slower than eager: {sum(v < 1 for v in speedups)})."]
    return lines


def render(k, p, root, title, load_start=None, python_call=None, zoo=None, pt2=None):
    desc, kernel = machine()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    torch = p.get("torch") or {}
    blas = (p.get("sgemm") or {}).get("blas") or {}
    conv = p.get("conv") or {}
    lines = [
        f"{title}, {now}, Kiln {git_rev(root)}.",
        "",
        f"Machine: {desc}; Linux {kernel}.",
        "",
        load_line(load_start),
        "",
        f"Threads: Kiln pool {k.get('kiln_pool_threads')}, triad {k.get('threads')}, "
        f"PyTorch {torch.get('threads', '?')} (capability {torch.get('config_capability', '?')}"
        f", ATEN_CPU_CAPABILITY {torch.get('capability', 'default')}), Halide "
        f"HL_NUM_THREADS={(p.get('halide') or {}).get('threads', '?')}, NumPy 1 "
        f"(its matmul: OpenBLAS {blas.get('threads', '?')}), oneDNN OpenMP "
        f"{(k.get('sgemm') or {}).get('dnnl_threads', '?')}; PyTorch mkldnn "
        f"{'available' if conv.get('mkldnn_available') else 'not available'}.",
        "",
        "Peers (Debian packages): " + ", ".join(f"{name} {ver}" for name, ver in
                                                (p.get("packages") or {}).items()) +
        f"; Halide JIT target {(p.get('halide') or {}).get('target', '?')}.",
        "",
        "Cells show best / median of N (best: the shortest time). Throughput ratios and "
        "percentages use the best (as STREAM does); compile latencies are judged by their median. "
        "Speedups are peer time / Kiln time (above 1: Kiln is faster).",
        "",
        "| row | Kiln or machine (best / median) | peer (best / median) | result | target | met |",
        "|---|---|---|---|---|---|",
    ]
    table, new_rows = build_table(k, p)
    for r in table:
        lines.append("| " + " | ".join(r[1:]) + " |")
    judged = [r for r in table if r[6]]
    missed = [r[0] for r in judged if r[6] != "yes"]
    lines.append("")
    lines.append(f"Targets met: {len(judged) - len(missed)} of {len(judged)}." +
                 (" Missed or not measured: " + "; ".join(missed) + "." if missed else ""))
    wrong = [name for name in ("triad", "stream", "chain", "softmax", "layer_norm")
             if not k.get(name, {}).get("ok", False)]
    for name in ("halide", "halide_libm_tanh", "numpy"):
        if isinstance(p.get(name), dict) and p[name].get("ok") is False:
            wrong.append(name)
    if isinstance(torch.get("chain"), dict) and torch["chain"].get("ok") is False:
        wrong.append("torch chain")
    alloc = t(torch.get("alloc_touch"))
    allocating = [name for name, key in (("softmax", "softmax"), ("layer norm", "layer_norm"))
                  if (torch.get(key) or {}).get("variant") in ("time_alloc", "time_out_copy")]
    if alloc and allocating:
        verb = "allocate their outputs" if len(allocating) > 1 else "allocates its output"
        lines.append(f"PyTorch {' and '.join(allocating)} {verb} on every call "
                     f"(no faster `out=` form; `native_layer_norm.out` allocates and copies): "
                     f"allocating and first-touching a fresh "
                     f"{k['softmax']['rows']}x{k['softmax']['cols']} f32 tensor "
                     f"(`torch.empty(...).zero_()`) alone takes {ms(alloc)} on this machine, "
                     "and that cost is inside the PyTorch times above.")
    wrong += new_rows.wrong
    lines += new_rows.notes
    failed = list(new_rows.failed)
    pt2_lines = []
    if pt2:
        pt2_lines, pt2_wrong, pt2_failed = report_pt2.section(k, p, pt2)
        wrong += pt2_wrong
        failed += pt2_failed
    if failed:
        lines.append("**FAILED** (Kiln raised; not measured): " + "; ".join(failed) + ".")
    verdict_text = (f"**WRONG: {', '.join(wrong)}**." if wrong else
                    "all within 1e-5 + 1e-4 |reference| (bandwidth rows) and 1e-4 (|reference| "
                    "+ rms of the checked reference) (contraction and model rows); both sides of "
                    "each contraction and model row computed on the same inputs.")
    lines.append("Results checked against a double-precision reference (PyTorch 2's too): " +
                 verdict_text)
    lines += pt2_lines
    if python_call:
        lines += python_call_lines(python_call)
    if zoo:
        lines += zoo_lines(zoo)
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--peers", required=True)
    ap.add_argument("--fma", help="kiln_bench --only fma JSON to merge into the FMA peak")
    ap.add_argument("--load-start", help="/proc/loadavg's first three fields when the run began")
    ap.add_argument("--readme")
    ap.add_argument("--title", default="Full run (`scripts/bench`)")
    ap.add_argument("--python-call", help="bench/python_call.py's JSON (the Python call table)")
    ap.add_argument("--zoo", help="bench/zoo.py's JSON (the model zoo table)")
    ap.add_argument("--pt2", help="bench/peers_pt2.py's JSON (the PyTorch 2 table)")
    a = ap.parse_args()
    with open(a.kiln) as fh:
        k = json.load(fh)
    with open(a.peers) as fh:
        p = json.load(fh)
    extra = []
    if a.fma and os.path.exists(a.fma) and os.path.getsize(a.fma):
        with open(a.fma) as fh:
            f = json.load(fh)
        extra = [f.get("fma"), f.get("fma_end")]
    report_rows.merge_fma(k, [k.get("fma_end")] + extra)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    pc = None
    if a.python_call and os.path.exists(a.python_call) and os.path.getsize(a.python_call):
        with open(a.python_call) as fh:
            pc = json.load(fh)
    zoo = None
    if a.zoo and os.path.exists(a.zoo) and os.path.getsize(a.zoo):
        with open(a.zoo) as fh:
            zoo = json.load(fh)
    pt2 = None
    if a.pt2 and os.path.exists(a.pt2) and os.path.getsize(a.pt2):
        with open(a.pt2) as fh:
            pt2 = json.load(fh)
    text = render(k, p, root, a.title, a.load_start, pc, zoo, pt2)
    print(text)
    if a.readme:
        with open(a.readme) as fh:
            readme = fh.read()
        if BEGIN not in readme or END not in readme:
            raise SystemExit(f"report.py: {a.readme} lacks the markers {BEGIN!r} ... {END!r}")
        pattern = re.escape(BEGIN) + ".*?" + re.escape(END)
        readme = re.sub(pattern, lambda _: BEGIN + "\n" + text + END, readme, flags=re.S)
        with open(a.readme, "w") as fh:
            fh.write(readme)
        print(f"report.py: wrote the table into {a.readme}")


if __name__ == "__main__":
    main()
