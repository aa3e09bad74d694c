#!/usr/bin/env python3
"""Merges a second measuring pass into a bench JSON file (scripts/bench).

The model rows (MLP, examples, GPT-2 attention) are measured twice, Kiln and
PyTorch 2 alternating (kiln_bench, peers_pt2.py, kiln_bench, peers_pt2.py),
because this machine's speed drifts by up to ~25% over minutes with its
neighbours' load: a single pass per side compares two different moments.
Both passes' samples of a row are pooled, so each side keeps its best moment
and the median is over all of its samples.

  merge_passes.py FIRST.json SECOND.json GROUP [GROUP...]

rewrites FIRST.json in place: under each GROUP, every timing record
({"min_s", "median_s", "reps", "all_s"}) present in both files gets the
pooled samples; everything else (checks, compile times, inputs) stays as the
first pass measured it. A record that picked the fastest of several forms
("variant") is picked again from the pooled forms. A second pass whose check
failed ("ok": false) marks the row failed.
"""
import json
import statistics
import sys


def is_timing(d):
    return isinstance(d, dict) and "all_s" in d and "min_s" in d


def pool(a, b):
    samples = list(a["all_s"]) + list(b["all_s"])
    return {**a, "min_s": min(samples), "median_s": statistics.median(samples),
            "reps": len(samples), "all_s": samples, "passes": a.get("passes", 1) + 1}


def merge(a, b):
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return a
    out = dict(a)
    for key, value in a.items():
        if key not in b:
            continue
        if is_timing(value) and is_timing(b[key]):
            out[key] = pool(value, b[key])
        elif key == "ok" and b[key] is False:
            out[key] = False
        elif isinstance(value, dict):
            out[key] = merge(value, b[key])
    if "variant" in out and "time" in out:
        forms = [k for k, v in out.items()
                 if k != "time" and isinstance(v, dict) and is_timing(v.get("time"))]
        if forms:
            best = min(forms, key=lambda k: out[k]["time"]["min_s"])
            out["time"], out["variant"] = out[best]["time"], best
    return out


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    first_path, second_path, groups = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(first_path) as f:
        first = json.load(f)
    with open(second_path) as f:
        second = json.load(f)
    for g in groups:
        if g in first and g in second:
            first[g] = merge(first[g], second[g])
    if second.get("all_ok") is False:
        first["all_ok"] = False
    with open(first_path, "w") as f:
        json.dump(first, f)


if __name__ == "__main__":
    main()
