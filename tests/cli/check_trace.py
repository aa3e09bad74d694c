#!/usr/bin/env python3
"""Checks a Chrome / Perfetto trace-event JSON file (the JSON object form).

  check_trace.py TRACE.json [--kernels N] [--chunks]

What a valid file is here: an object with a "traceEvents" list; every event
an object with "name" (string), "ph" (string) and integer "pid" and "tid".
Per phase:
  X (complete): "ts" and "dur" numbers (microseconds), dur >= 0; "args" an
    object when present. Per (pid, tid), in file order, ts never decreases,
    and X events nest: an event that starts inside another ends inside it
    (a partial overlap on one thread is an error).
  M (metadata): "args" an object; process_name / thread_name carry a string
    args.name; a thread_name is given once per (pid, tid).
  any other phase: an error (kiln writes only X and M).
Kiln's own: a kernel event (cat "kernel") has args category, algorithm
(strings), bytes and flops (numbers); every tid with X events has a
thread_name. --kernels N: exactly N kernel events. --chunks: at least one
chunk event (a parallel loop ran on the pool).
Exits 0 when valid, else prints every problem and exits 1.
"""
import json
import sys

EPS = 1e-6  # microseconds: the file's ts/dur have nanosecond digits


def check(doc, want_kernels=None, want_chunks=False):
    errors = []
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["the document is not an object with a traceEvents list"]
    last_ts = {}
    stacks = {}
    thread_names = set()
    tids_with_events = set()
    kernels = chunks = 0
    num = (int, float)
    for i, e in enumerate(doc["traceEvents"]):
        where = "event %d" % i
        if not isinstance(e, dict):
            errors.append(where + ": not an object")
            continue
        for key, types in (("name", str), ("ph", str), ("pid", int), ("tid", int)):
            if not isinstance(e.get(key), types) or isinstance(e.get(key), bool):
                errors.append("%s: %r missing or not %s" % (where, key, types.__name__))
        if "args" in e and not isinstance(e["args"], dict):
            errors.append(where + ": args is not an object")
        ph = e.get("ph")
        thread = (e.get("pid"), e.get("tid"))
        if ph == "M":
            if not isinstance(e.get("args"), dict):
                errors.append(where + ": metadata without args")
            elif e.get("name") in ("process_name", "thread_name"):
                if not isinstance(e["args"].get("name"), str):
                    errors.append(where + ": %s without a string args.name" % e.get("name"))
                if e.get("name") == "thread_name":
                    if thread in thread_names:
                        errors.append(where + ": thread %r named twice" % (thread,))
                    thread_names.add(thread)
            continue
        if ph != "X":
            errors.append("%s: phase %r (only X and M expected)" % (where, ph))
            continue
        ts, dur = e.get("ts"), e.get("dur")
        if not isinstance(ts, num) or isinstance(ts, bool):
            errors.append(where + ": ts missing or not a number")
            continue
        if not isinstance(dur, num) or isinstance(dur, bool):
            errors.append(where + ": dur missing or not a number")
            continue
        if dur < 0:
            errors.append(where + ": dur %r < 0" % dur)
        tids_with_events.add(thread)
        if thread in last_ts and ts < last_ts[thread] - EPS:
            errors.append("%s: ts %r before the previous event's %r on thread %r"
                          % (where, ts, last_ts[thread], thread))
        last_ts[thread] = max(ts, last_ts.get(thread, ts))
        stack = stacks.setdefault(thread, [])
        while stack and ts >= stack[-1][1] - EPS:
            stack.pop()  # that event ended before this one starts
        end = ts + max(dur, 0)
        if stack and end > stack[-1][1] + EPS:
            errors.append("%s (%s): [%r, %r] overlaps %s [.., %r] on thread %r without nesting"
                          % (where, e.get("name"), ts, end, stack[-1][0], stack[-1][1], thread))
        stack.append((e.get("name"), end))
        if e.get("cat") == "kernel":
            kernels += 1
            args = e.get("args", {})
            for key, types in (("category", str), ("algorithm", str), ("bytes", num),
                               ("flops", num)):
                if not isinstance(args.get(key), types):
                    errors.append("%s: kernel args.%s missing or wrong type" % (where, key))
        if e.get("cat") == "chunk":
            chunks += 1
    for thread in sorted(tids_with_events - thread_names, key=str):
        errors.append("thread %r has events but no thread_name" % (thread,))
    if want_kernels is not None and kernels != want_kernels:
        errors.append("%d kernel events, expected %d" % (kernels, want_kernels))
    if want_chunks and chunks == 0:
        errors.append("no chunk events")
    return errors


def main(argv):
    args = argv[1:]
    want_kernels, want_chunks = None, False
    if "--chunks" in args:
        args.remove("--chunks")
        want_chunks = True
    if "--kernels" in args:
        i = args.index("--kernels")
        want_kernels = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        with open(args[0], encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as err:
        print("%s: not JSON: %s" % (args[0], err))
        return 1
    errors = check(doc, want_kernels, want_chunks)
    for err in errors:
        print("%s: %s" % (args[0], err))
    if errors:
        return 1
    n = len(doc["traceEvents"])
    print("%s: valid trace, %d events" % (args[0], n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
