#!/usr/bin/env python3
"""Records and compares the generated code of every example and every case of
the visible conformance corpus, so a refactor can show it changed no kernel.

  kernel_goldens.py record DIR [--kiln BIN] [--stages S,S]   dump each program into DIR
  kernel_goldens.py compare OLD NEW                           list what differs; exit 1 if any

For each program it runs `kiln dump FILE --stage=STAGE` for the stages
loops-scheduled and llvm (default) with the inputs the demo uses (examples)
or the corpus gives (cases), and writes DIR/<program>.<stage>.txt; a program
that does not compile records its error text instead, so that changes too.
DIR/MANIFEST names the commit, the kiln binary and the CPU, since the code
depends on the machine (vector width, cache sizes, cores): compare only
recordings made on the same machine.

The corpus is read from ../shared/conformance beside the clone (or
$KILN_SHARED_DIR/conformance); without it only the examples are recorded,
and the manifest says so.
"""
import argparse
import difflib
import json
import os
import platform
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# The demo's inputs (scripts/demo), one entry per (file, fn).
TRANSFORMER = ["x=randn:f32:2x16x64", "ln1_w=ones:f32:64", "ln1_b=zeros:f32:64",
               "w_qkv=randn:f32:192x64", "b_qkv=zeros:f32:192", "w_o=randn:f32:64x64",
               "b_o=zeros:f32:64", "ln2_w=ones:f32:64", "ln2_b=zeros:f32:64",
               "w_up=randn:f32:256x64", "b_up=zeros:f32:256", "w_down=randn:f32:64x256",
               "b_down=zeros:f32:64", "heads=4"]
EXAMPLES = [
    ("elementwise_chain", "elementwise_chain.kiln", None,
     ["x=randn:f32:1024", "y=randn:f32:1024"]),
    ("layer_norm", "layer_norm.kiln", None,
     ["x=randn:f32:8x256", "w=ones:f32:256", "b=zeros:f32:256"]),
    ("mlp", "mlp.kiln", None,
     ["x=randn:f32:32x256", "w1=randn:f32:256x1024", "b1=zeros:f32:1024",
      "w2=randn:f32:1024x256", "b2=zeros:f32:256"]),
    ("conv_block", "conv_block.kiln", None,
     ["x=randn:f32:2x3x32x32", "w=randn:f32:16x3x3x3", "bn=ones:f32:4x16"]),
    ("softmax", "softmax.kiln", None, ["x=randn:f32:64x1000"]),
    ("log_softmax", "softmax.kiln", "log_softmax", ["x=randn:f32:64x1000"]),
    ("transformer", "transformer.kiln", None, TRANSFORMER),
]


def shared_dir():
    env = os.environ.get("KILN_SHARED_DIR")
    return env if env else os.path.join(ROOT, "..", "shared")


def corpus_programs():
    path = os.path.join(shared_dir(), "conformance", "corpus.json")
    if not os.path.exists(path):
        return None
    base = os.path.dirname(path)
    with open(path) as f:
        corpus = json.load(f)
    out = []
    for case in corpus["cases"]:
        inputs = []
        for i in case["inputs"]:
            if i["kind"] == "tensor":
                inputs.append(f"{i['name']}={os.path.join(base, i['file'])}")
            elif i["kind"] == "bool":
                inputs.append(f"{i['name']}={'true' if i['value'] else 'false'}")
            else:
                inputs.append(f"{i['name']}={i['value']!r}")
        out.append((case["id"], os.path.join(base, case["file"]), case["entry"], inputs))
    return out


def git_commit():
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def record(args):
    os.makedirs(args.dir, exist_ok=True)
    programs = [(n, os.path.join(ROOT, "examples", f), fn, ins) for n, f, fn, ins in EXAMPLES]
    cases = corpus_programs()
    programs += cases or []
    stages = args.stages.split(",")
    env = dict(os.environ, KILN_CACHE="off")
    failed = 0
    for name, path, fn, inputs in programs:
        for stage in stages:
            cmd = [args.kiln, "dump", path, f"--stage={stage}"]
            if fn:
                cmd.append(f"--fn={fn}")
            for i in inputs:
                cmd += ["--input", i]
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
            text = r.stdout
            if r.returncode != 0:
                failed += 1
                text = f"exit {r.returncode}\n{r.stderr}"
            with open(os.path.join(args.dir, f"{name}.{stage}.txt"), "w") as f:
                f.write(text)
    with open(os.path.join(args.dir, "MANIFEST"), "w") as f:
        f.write(f"commit: {git_commit()}\n")
        f.write(f"kiln: {os.path.abspath(args.kiln)}\n")
        f.write(f"cpu: {cpu_model()} ({os.cpu_count()} cpus)\n")
        f.write(f"stages: {','.join(stages)}\n")
        f.write(f"programs: {len(programs)} ({len(EXAMPLES)} examples, "
                f"{len(cases) if cases is not None else 'no'} corpus cases"
                f"{'' if cases is not None else ': ../shared/conformance not found'})\n")
    print(f"recorded {len(programs)} programs x {len(stages)} stages into {args.dir}"
          f" ({failed} dumps exited non-zero, recorded as their errors)")
    return 0


def compare(args):
    def files(d):
        return sorted(f for f in os.listdir(d) if f.endswith(".txt"))
    old, new = set(files(args.old)), set(files(args.new))
    differ = []
    for name in sorted(old | new):
        if name not in old or name not in new:
            differ.append((name, "only in " + (args.old if name in old else args.new)))
            continue
        with open(os.path.join(args.old, name)) as f:
            a = f.read()
        with open(os.path.join(args.new, name)) as f:
            b = f.read()
        if a != b:
            diff = list(difflib.unified_diff(a.splitlines(), b.splitlines(), "old/" + name,
                                             "new/" + name, lineterm="", n=1))
            differ.append((name, f"{len(diff)} diff lines"))
            if args.verbose:
                print("\n".join(diff[:args.verbose]))
    for d in (args.old, args.new):
        m = os.path.join(d, "MANIFEST")
        if os.path.exists(m):
            with open(m) as f:
                print(f"{d}:\n  " + f.read().strip().replace("\n", "\n  "))
    print(f"{len(old | new)} files, {len(differ)} differ")
    for name, why in differ:
        print(f"  {name}: {why}")
    return 1 if differ else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("dir")
    r.add_argument("--kiln", default=os.path.join(ROOT, "build", "bin", "kiln"))
    r.add_argument("--stages", default="loops-scheduled,llvm")
    c = sub.add_parser("compare")
    c.add_argument("old")
    c.add_argument("new")
    c.add_argument("-v", "--verbose", type=int, default=0, metavar="N",
                   help="print the first N lines of each diff")
    args = p.parse_args()
    return record(args) if args.cmd == "record" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
