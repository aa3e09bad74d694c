"""The GPU bench's table: kiln_gpu_bench's JSON and peers_gpu.py's, side by side.

    python3 bench/gpu/report_gpu.py KILN.json PEERS.json [--out TABLE.md]

Every ratio is "Kiln is x times as fast" (peer time / Kiln time, min of N
samples on both sides); bandwidth rows are measured against the device
copy (bytes moved / time, as a fraction of the copy's rate). The Target
column holds issue 12's acceptance targets for an H200; "met" and "MISSED"
say how this run did, "-" that a side was not measured.
"""
import argparse
import json
import sys

# (row, what is compared, target, kind); kind says how `value` is computed.
TARGETS = [
    ("chain", "of device copy bandwidth", 0.85, "bw"),
    ("softmax", "of device copy bandwidth", 0.75, "bw"),
    ("layer_norm", "of device copy bandwidth", 0.75, "bw"),
    ("sgemm", "x cuBLAS (chosen algorithm)", 0.95, "library"),
    ("bf16_gemm", "x cuBLASLt (chosen algorithm)", 0.95, "library"),
    ("transformer", "x torch.compile", 1.0, "compile"),
    ("mlp_issue6", "x faster of eager / torch.compile", None, "best"),
    ("launch", "x eager's host time per call", None, "eager"),
]


def tmin(entry):
    """Seconds (min of N) of a timing entry, or None."""
    if not isinstance(entry, dict) or "error" in entry or "not_measured" in entry:
        return None
    if "time" in entry:
        entry = entry["time"]
    return entry.get("min_s")


def fmt_time(s):
    if s is None:
        return "-"
    return f"{s * 1e6:.1f} us" if s < 1e-3 else f"{s * 1e3:.3f} ms"


def evaluate(kiln, peers):
    """One dict per row: name, kiln_s, peer_s (what the ratio uses), value, target, status."""
    krows = kiln.get("rows", {})
    prows = peers.get("rows", {})
    copy_s = tmin(krows.get("copy"))
    copy_bytes = (krows.get("copy") or {}).get("bytes", 0)
    out = []
    for name, what, target, kind in TARGETS:
        k = krows.get(name, {})
        p = prows.get(name, {}) if isinstance(prows.get(name), dict) else {}
        ks = tmin(k)
        r = {"name": name, "what": what, "target": target, "kiln_s": ks, "peer_s": None,
             "value": None, "algorithm": k.get("algorithm", ""),
             "note": k.get("not_measured") or k.get("error") or ""}
        if kind == "bw":
            if ks and copy_s and copy_bytes:
                r["value"] = (k.get("bytes", 0) / ks) / (copy_bytes / copy_s)
            r["peer_s"] = min([t for t in (tmin(p.get("eager")), tmin(p.get("compile"))) if t],
                              default=None)
        else:
            peer = {"library": tmin(p.get("library")), "compile": tmin(p.get("compile")),
                    "eager": tmin(p.get("eager")),
                    "best": min([t for t in (tmin(p.get("eager")), tmin(p.get("compile"))) if t],
                                default=None)}[kind]
            r["peer_s"] = peer
            if ks and peer:
                r["value"] = peer / ks
        if r["value"] is None or target is None:
            r["status"] = "-" if r["value"] is None else ""
        else:
            r["status"] = "met" if r["value"] >= target else "MISSED"
        out.append(r)
    return out


def compile_rows(kiln):
    out = []
    for name, r in kiln.get("rows", {}).items():
        if not name.startswith("nvrtc_"):
            continue
        out.append({"name": name[len("nvrtc_"):], "kernels": r.get("kernels", 0),
                    "cold_s": r.get("nvrtc_cold_s") or None, "disk_s": r.get("disk_load_s") or None,
                    "note": r.get("not_measured") or r.get("error") or ""})
    return out


def render(kiln, peers):
    lines = [f"GPU bench: Kiln on {kiln.get('device', '?')}; peers: "
             f"{peers.get('not_measured') or 'torch ' + str(peers.get('torch')) + ' on ' + str(peers.get('device'))}",
             "", "| row | Kiln | algorithm | peer | Kiln vs | value | target | |",
             "|---|---|---|---|---|---|---|---|"]
    for r in evaluate(kiln, peers):
        value = "-" if r["value"] is None else (f"{r['value']:.0%}" if "bandwidth" in r["what"]
                                                else f"{r['value']:.2f}x")
        target = "" if r["target"] is None else (f">= {r['target']:.0%}" if "bandwidth" in r["what"]
                                                 else f">= {r['target']:.2f}x")
        lines.append(f"| {r['name']} | {fmt_time(r['kiln_s'])} | {r['algorithm'] or '-'} | "
                     f"{fmt_time(r['peer_s'])} | {r['what']} | {value} | {target} | "
                     f"{r['status']} {r['note'][:80]} |")
    lines += ["", "| NVRTC: function program | kernels | cold (target <= 60 ms) | "
              "from disk cache (target <= 1 ms) | |", "|---|---|---|---|---|"]
    for r in compile_rows(kiln):
        cold, disk = r["cold_s"], r["disk_s"]
        status = ""
        if cold is not None and r["name"] != "first":
            ok = cold <= 0.060 and (disk is None or disk <= 0.001)
            status = "met" if ok else "MISSED"
        lines.append(f"| {r['name']} | {r['kernels']} | {fmt_time(cold)} | {fmt_time(disk)} | "
                     f"{status} {r['note'][:80]} |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kiln")
    p.add_argument("peers")
    p.add_argument("--out")
    a = p.parse_args()
    with open(a.kiln) as f:
        kiln = json.load(f)
    try:
        with open(a.peers) as f:
            peers = json.load(f)
    except (OSError, ValueError) as e:
        peers = {"not_measured": f"no peers file ({e})", "rows": {}}
    text = render(kiln, peers)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
