# The PyTorch side of the bandwidth rows (the elementwise chain, row softmax,
# layer norm; see bench/kiln_rows.h), shared by peers.py (Debian's PyTorch
# 1.13, eager) and peers_pt2.py (PyTorch 2: eager and torch.compile). Inputs
# as peers.py has always drawn them (NumPy's and torch's generators with the
# seeds kiln_rows.cpp gives Kiln's randn: the same distribution, not the same
# numbers; these rows' speed does not depend on the values). Each output is
# checked in float64 on a sample (every 997th chain element, every 257th row).
import os

from peers_common import guarded, max_err, time_reps

# The chain: y = sigmoid(x * A + B) * tanh(x) + 0.5 * x, as in bench/kiln_rows.cpp.
A, B = 0.75, -0.5


def chain_reference(x):
    import numpy as np
    v = x.astype(np.float64)
    return 1.0 / (1.0 + np.exp(-(v * A + B))) * np.tanh(v) + 0.5 * v


def chain_input(n):
    import numpy as np
    return np.random.default_rng(2).standard_normal(n).astype(np.float32)


def torch_info(torch):
    """Version, threads and the CPU kernels PyTorch picked (its config and
    ATEN_CPU_CAPABILITY)."""
    info = {"version": torch.__version__, "threads": torch.get_num_threads(),
            "capability": os.environ.get("ATEN_CPU_CAPABILITY", "default")}
    info["config_capability"] = next(
        (ln.split(":", 1)[1].strip() for ln in torch.__config__.show().splitlines()
         if "CPU capability usage" in ln), "?")
    return info


def softmax_check(x, y):
    """Worst error (fraction of 1e-5 + 1e-4 |want|) of a row softmax on every
    257th row, scaled by the row length as kiln_rows.cpp checks it."""
    import numpy as np
    xs = x[::257].astype(np.float64)
    e = np.exp(xs - xs.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True) * x.shape[1]
    return max_err(np.asarray(y)[::257] * x.shape[1], want)


def layer_norm_check(x, w, b, y):
    import numpy as np
    xs = x[::257].astype(np.float64)
    mean = xs.mean(axis=1, keepdims=True)
    var = ((xs - mean) ** 2).mean(axis=1, keepdims=True)
    want = (xs - mean) / np.sqrt(var + 1e-5) * w.astype(np.float64) + b
    return max_err(np.asarray(y)[::257], want)


def checked(run, check, reps):
    """A form: one call checked (check(result) -> worst error), then timed."""
    err = check(run())
    return {"time": time_reps(run, 3, reps), "max_err": err, "ok": err <= 1.0}


def best_of(r, forms):
    """The fastest measured form of `forms` becomes the row's time and variant."""
    ok = [f for f in forms if isinstance(r.get(f), dict) and "time" in r[f]]
    if ok:
        best = min(ok, key=lambda f: r[f]["time"]["min_s"])
        r["time"], r["variant"] = r[best]["time"], best
    r["ok"] = all(r[f].get("ok", True) for f in ok)
    return r


def torch_rows(torch, chain_n, rows, cols, reps, norm_reps, compiled=None):
    """The three rows through `torch` (threads already set). compiled: None,
    or peers_common.compiled_form(fn, args, check, timer) for torch.compile forms."""
    F = torch.nn.functional
    info = torch_info(torch)
    timer = lambda n: (lambda run, first: time_reps(run, 3, n))  # noqa: E731

    def chain():
        xn = chain_input(chain_n)
        x = torch.from_numpy(xn)
        t, u, y = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)

        def run():
            torch.mul(x, A, out=t)
            t.add_(B)
            torch.sigmoid(t, out=t)
            torch.tanh(x, out=u)
            t.mul_(u)
            torch.add(t, x, alpha=0.5, out=y)
            return y

        check = lambda y: max_err(y.numpy()[::997], chain_reference(xn[::997]))  # noqa: E731
        r = {"time_out": guarded(lambda: checked(run, check, reps))}
        if compiled:
            r["time_compile"] = guarded(lambda: compiled(
                lambda x: torch.sigmoid(x * A + B) * torch.tanh(x) + 0.5 * x, (x,), check,
                timer(reps)))
        return best_of(r, ("time_out", "time_compile"))

    def softmax():
        x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(3))
        y = torch.empty_like(x)
        check = lambda out: softmax_check(x.numpy(), out.numpy())  # noqa: E731
        r = {"time_out": guarded(lambda: checked(lambda: torch.softmax(x, 1, out=y), check,
                                                 norm_reps)),
             "time_alloc": guarded(lambda: checked(lambda: torch.softmax(x, 1), check,
                                                   norm_reps))}
        if compiled:
            r["time_compile"] = guarded(lambda: compiled(lambda x: torch.softmax(x, 1), (x,),
                                                         check, timer(norm_reps)))
        return best_of(r, ("time_out", "time_alloc", "time_compile"))

    def layer_norm():
        x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(4))
        w = torch.randn(cols, generator=torch.Generator().manual_seed(5))
        b = torch.randn(cols, generator=torch.Generator().manual_seed(6))
        check = lambda out: layer_norm_check(x.numpy(), w.numpy(), b.numpy(),  # noqa: E731
                                             out.numpy())
        r = {"time_alloc": guarded(lambda: checked(lambda: F.layer_norm(x, (cols,), w, b, 1e-5),
                                                   check, norm_reps))}
        # F.layer_norm has no out= form. aten::native_layer_norm.out exists,
        # but is generated: it runs the allocating kernel and copies into the
        # given tensors (its profile shows aten::copy_), so it is timed as a
        # form of its own, not as a kernel writing in place.
        y, mean, rstd = torch.empty_like(x), torch.empty(rows, 1), torch.empty(rows, 1)
        op = getattr(getattr(torch.ops.aten, "native_layer_norm", None), "out", None)
        if op is not None:
            r["time_out_copy"] = guarded(lambda: checked(
                lambda: op(x, [cols], w, b, 1e-5, out0=y, out1=mean, out2=rstd)[0], check,
                norm_reps))
        if compiled:
            r["time_compile"] = guarded(lambda: compiled(
                lambda x, w, b: F.layer_norm(x, (cols,), w, b, 1e-5), (x, w, b), check,
                timer(norm_reps)))
        return best_of(r, ("time_alloc", "time_out_copy", "time_compile"))

    def alloc_touch():
        # What a fresh rows x cols output costs before any work: allocate and
        # first-touch (torch.empty + zero_). Allocating calls pay this; on a VM
        # page faults are dear, so the report shows it next to them.
        return {"time": time_reps(lambda: torch.empty(rows, cols).zero_(), 2, norm_reps)}

    info["chain"] = guarded(chain)
    info["alloc_touch"] = guarded(alloc_touch)
    info["softmax"] = guarded(softmax)
    info["layer_norm"] = guarded(layer_norm)
    return info
