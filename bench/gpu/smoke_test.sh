#!/usr/bin/env bash
# bench/gpu_smoke (ctest): kiln_gpu_bench --smoke, peers_gpu.py --smoke and
# report_gpu.py run and agree on their formats; the report's arithmetic is
# checked on a fixture. On a machine without a GPU the device rows must say
# why they were not measured, and the NVRTC rows (which need no GPU) must
# have figures whenever NVRTC can be loaded.
#   smoke_test.sh KILN_GPU_BENCH PYTHON WORKDIR
set -euo pipefail
bench=$1 python=$2 dir=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
"$bench" --smoke --json "$dir/kiln.json"
"$python" "$here/peers_gpu.py" --smoke --no-compile --json "$dir/peers.json"
"$python" "$here/report_gpu.py" "$dir/kiln.json" "$dir/peers.json" --out "$dir/table.md" >/dev/null
"$python" - "$dir" "$here" <<'PY'
import json, os, sys
d, here = sys.argv[1], sys.argv[2]
sys.path.insert(0, here)
import report_gpu
kiln = json.load(open(os.path.join(d, "kiln.json")))
rows = kiln["rows"]
device_rows = ["copy", "chain", "softmax", "layer_norm", "sgemm", "bf16_gemm", "mlp_issue6",
               "transformer", "launch"]
for name in device_rows:
    r = rows[name]
    assert "error" not in r, (name, r)
    if "not_measured" in r:
        assert "unavailable" in r["not_measured"], r
    else:
        assert r["time"]["min_s"] > 0 and r["max_err"] <= 1, (name, r)
for name in ["first", "chain", "softmax", "layer_norm", "mlp_issue6", "transformer", "conv_block"]:
    r = rows.get("nvrtc_" + name)
    if name == "first" and r is None:
        continue  # NVRTC unavailable: no first-call row
    assert r is not None and "error" not in r, (name, r)
    if "not_measured" not in r:
        assert r["nvrtc_cold_s"] > 0 and r["kernels"] >= 1, (name, r)
        if name != "first":
            assert 0 < r["disk_load_s"] < r["nvrtc_cold_s"], (name, r)
table = open(os.path.join(d, "table.md")).read()
assert "| row | Kiln |" in table and "| NVRTC: function program |" in table, table

# The report's arithmetic on a fixture: copy moves 2 GB in 1 ms (2 TB/s).
fx_kiln = {"device": "fixture", "rows": {
    "copy": {"time": {"min_s": 1e-3}, "bytes": 2e9},
    "chain": {"time": {"min_s": 1e-3}, "bytes": 1.8e9},      # 90% of copy: met (85%)
    "softmax": {"time": {"min_s": 2e-3}, "bytes": 2e9},      # 50%: missed (75%)
    "sgemm": {"time": {"min_s": 2e-3}, "algorithm": "gemm.simt"},
    "transformer": {"time": {"min_s": 1e-3}},
    "nvrtc_chain": {"kernels": 1, "nvrtc_cold_s": 0.05, "disk_load_s": 0.0005}}}
fx_peers = {"torch": "x", "device": "fixture", "rows": {
    "sgemm": {"library": {"min_s": 1e-3}},                   # Kiln 0.5x cuBLAS: missed
    "transformer": {"eager": {"min_s": 3e-3}, "compile": {"min_s": 1.5e-3}}}}  # 1.5x: met
ev = {r["name"]: r for r in report_gpu.evaluate(fx_kiln, fx_peers)}
assert abs(ev["chain"]["value"] - 0.9) < 1e-9 and ev["chain"]["status"] == "met", ev["chain"]
assert abs(ev["softmax"]["value"] - 0.5) < 1e-9 and ev["softmax"]["status"] == "MISSED"
assert abs(ev["sgemm"]["value"] - 0.5) < 1e-9 and ev["sgemm"]["status"] == "MISSED"
assert abs(ev["transformer"]["value"] - 1.5) < 1e-9 and ev["transformer"]["status"] == "met"
assert ev["layer_norm"]["status"] == "-" and ev["bf16_gemm"]["value"] is None
text = report_gpu.render(fx_kiln, fx_peers)
assert "| chain | 1.000 ms | - | - | of device copy bandwidth | 90% | >= 85% | met" in text, text
assert "| chain | 1 | 50.000 ms | 500.0 us | met" in text, text
print("gpu bench smoke: ok")
PY
