# Formatting helpers of bench/report.py, shared with the modules it grows.


def t(d, key="time"):
    """(min, median, N) seconds of a samples object, or None when absent or failed."""
    if not isinstance(d, dict) or "error" in d or key not in d:
        return None
    s = d[key]
    return (s["min_s"], s["median_s"], int(s["reps"]))


def ms(x):
    if x is None:
        return "n/a"
    a, b, n = x
    if a < 1e-3:
        return f"{a * 1e6:.1f} / {b * 1e6:.1f} us (N={n})"
    if a >= 1:
        return f"{a:.2f} / {b:.2f} s (N={n})"
    return f"{a * 1e3:.2f} / {b * 1e3:.2f} ms (N={n})"


def one(x, which=0):
    """One of (min, median, N) seconds (0: min, 1: median), alone."""
    if x is None:
        return "n/a"
    v = x[which]
    return f"{v * 1e6:.1f} us" if v < 1e-3 else f"{v * 1e3:.2f} ms"


def gbs(x, nbytes):
    if x is None:
        return "n/a"
    return f"{nbytes / x[0] / 1e9:.1f} / {nbytes / x[1] / 1e9:.1f} GB/s (N={x[2]})"


def pow2(n):
    n = int(n)
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


def kernels(row):
    n = int(row.get("kernels", 0))
    return f"{n} kernel" + ("" if n == 1 else "s")


def verdict(value, target, higher_is_better=True):
    if value is None:
        return "not measured"
    ok = value >= target if higher_is_better else value <= target
    return "yes" if ok else "**no**"
