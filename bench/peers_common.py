# Helpers shared by bench/peers*.py: timing (as kiln_bench's bench_util.h),
# the input formula (as bench_data.h), the result checks, error guarding.
# NumPy is imported where it is used, so that a missing NumPy fails only the
# rows that need it (guarded), as with every other peer.
import time


def stats(samples):
    s = sorted(samples)
    n = len(s)
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    return {"min_s": s[0], "median_s": med, "reps": n, "all_s": samples}


def time_reps(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t0) * 1e-9)
    return stats(out)


class Budget:
    """As bench_util.h's Budget: stop after `seconds` of samples, min..max reps."""

    def __init__(self, seconds, min_reps, max_reps):
        self.seconds, self.min_reps, self.max_reps = seconds, min_reps, max_reps


SELF_WARMING_CALL_S = 1.0  # as kSelfWarmingCallS in bench_util.h


def timed_call(fn):
    """(result, seconds) of one call."""
    t0 = time.perf_counter_ns()
    out = fn()
    return out, (time.perf_counter_ns() - t0) * 1e-9


def time_budget(fn, budget, first_call_s, warmup=2):
    """As time_budget in bench_util.h: `first_call_s` is the row's first,
    checked call; one that took SELF_WARMING_CALL_S or more is the first
    sample, otherwise `warmup` untimed calls come first (TorchScript's
    profiling executor wants a few before it optimizes)."""
    out = []
    if first_call_s >= SELF_WARMING_CALL_S:
        out.append(first_call_s)
    else:
        for _ in range(warmup):
            fn()
    while len(out) < budget.max_reps and (len(out) < budget.min_reps or sum(out) < budget.seconds):
        t0 = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t0) * 1e-9)
    return stats(out)


def compiled_form(fn, args, check, timer):
    """torch.compile(fn) as a peer form: the first call compiles (compile_s:
    peers_pt2.py gives Inductor a fresh cache directory, so it is a cold
    compile, as Kiln's compile_s is), the second is checked (check(result) ->
    worst error), then timer(run, first_call_s) times the calls."""
    import torch
    # Dynamo's caches are keyed by code object: a lambda compiled again for
    # another shape (the conv rows) would be recompiled with dynamic shapes.
    # Each form starts afresh, as a user's first torch.compile does.
    torch._dynamo.reset()
    cf = torch.compile(fn)
    _, compile_s = timed_call(lambda: cf(*args))
    run = lambda: cf(*args)  # noqa: E731
    y, first = timed_call(run)
    err = check(y)
    return {"time": timer(run, first), "compile_s": compile_s, "max_err": err, "ok": err <= 1.0}


def inductor_warm_up():
    """Inductor's start-up (imports, compile workers), paid once before the
    timed compiles: a tiny function compiled and called. Returns its seconds."""
    import torch
    cf = torch.compile(lambda a: a * 2 + 1)
    _, s = timed_call(lambda: cf(torch.ones(8)))
    return s


def budget_timer(budget, warmup=2):
    """A timer for compiled_form: time_budget under `budget`."""
    return lambda run, first: time_budget(run, budget, first, warmup)


def guarded(fn):
    try:
        return fn()
    except Exception as e:  # a missing or broken peer is reported, not fatal
        return {"error": f"{type(e).__name__}: {e}"}


def max_err(got, want):
    """Worst error as a fraction of the tolerance 1e-5 + 1e-4 |want| (as kiln_rows.cpp)."""
    import numpy as np
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    return float(np.max(np.abs(got - want) / (1e-5 + 1e-4 * np.abs(want))))


def sample_err(got, want):
    """As SampleCheck in bench_util.h: worst |got - want| / (1e-4 (|want| + rms(want)))."""
    import numpy as np
    got = np.asarray(got, dtype=np.float64).ravel()
    want = np.asarray(want, dtype=np.float64).ravel()
    if want.size == 0:
        return 1e30
    rms = float(np.sqrt(np.mean(want * want)))
    e = np.abs(got - want) / (1e-4 * (np.abs(want) + rms) + 1e-30)
    return 1e30 if np.isnan(e).any() else float(np.max(e))


def hashed(shape, seed, scale=1.0, offset=0.0):
    """bench_data.h's hashed(): f32 array, element i = f32(offset + scale * u(seed, i))."""
    import numpy as np
    m32 = np.uint64(0xFFFFFFFF)
    n = int(np.prod(shape)) if len(shape) else 1
    i = np.arange(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = (i * np.uint64(0x9E3779B1) + np.uint64((seed * 0x85EBCA77) % 2**64)) & m32
        h ^= h >> np.uint64(16)
        h = (h * np.uint64(0x7FEB352D)) & m32
        h ^= h >> np.uint64(15)
        h = (h * np.uint64(0x846CA68B)) & m32
        h ^= h >> np.uint64(16)
    u = ((h >> np.uint64(8)).astype(np.int64) - (1 << 23)).astype(np.float64) * 2.0**-23
    return (offset + scale * u).astype(np.float32).reshape(shape)


def input_sum(arrays):
    """sum |x| over all inputs in f64: kiln_bench prints the same for its inputs,
    and report.py checks both sides computed on the same data."""
    import numpy as np
    return float(sum(np.sum(np.abs(np.asarray(a, dtype=np.float64))) for a in arrays))


def torch_setup(threads):
    import torch
    torch.set_num_threads(threads)
    return torch
