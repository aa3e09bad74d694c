"""Checks Kiln against PyTorch on the same inputs.

A test file under tests/torch/ (named test_*.py; ctest runs each as
`torch/<name>`) builds a Suite and adds cases. Each case is one script def
run through `kiln run` on .npy inputs, once per backend (the LLVM backend and
the reference interpreter by default), and compared with a PyTorch function
called on the same values:

    import numpy as np, torch
    from kiln_torch import Suite
    s = Suite()
    src = "def f(x: Tensor) -> Tensor:\\n    return torch.nn.functional.mish(x)\\n"
    for shape in [(0,), (1,), (7,), (1023,), (3, 5)]:
        s.case(f"mish {shape}", src, {"x": s.randn(shape)},
               lambda x: torch.nn.functional.mish(x))
    s.run()

Inputs are NumPy arrays (passed as .npy files) or Python numbers, bools,
strings and lists (passed as `--input name=value`). The reference gets the
arrays as torch tensors and the other values as they are; it returns a
tensor or a tuple/list of tensors; it gets the inputs positionally, in order, (one per Kiln output). Outputs must match
in shape and dtype; floats within rtol/atol (NaNs in the same places),
integers and bools exactly. `expect_error="text"` checks instead that Kiln
fails with a located error containing the text (exit 1, never a crash).

Without PyTorch (or NumPy) the file prints why and exits 77, which ctest
reports as skipped. argv[1] is the kiln driver.
"""

import os
import subprocess
import sys
import tempfile
import traceback

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIPPED: PyTorch/NumPy not importable by {sys.executable}: {e}")
    sys.exit(77)

torch.manual_seed(0)


def _to_torch(v):
    if isinstance(v, np.ndarray):
        return torch.from_numpy(v.copy())
    if isinstance(v, list) and v and all(isinstance(i, np.ndarray) for i in v):
        return [torch.from_numpy(i.copy()) for i in v]
    return v


def _spec(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "none"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_spec(i) for i in v) + "]"
    return str(v)


class Suite:
    def __init__(self, kiln=None, backends=("llvm", "interp")):
        self.kiln = kiln or (sys.argv[1] if len(sys.argv) > 1 else os.environ.get("KILN", "kiln"))
        self.backends = backends
        self.cases = []
        self.rng = np.random.default_rng(0)
        self.tmp = tempfile.mkdtemp(prefix="kiln-torch-")

    # Input generators (NumPy, seeded).
    def randn(self, shape, dtype=np.float32):
        return self.rng.standard_normal(shape).astype(dtype)

    def uniform(self, shape, lo, hi, dtype=np.float32):
        return self.rng.uniform(lo, hi, shape).astype(dtype)

    def randint(self, shape, lo, hi, dtype=np.int64):
        return self.rng.integers(lo, hi, shape).astype(dtype)

    def special(self, dtype=np.float32):
        """NaN, ±Inf, ±0, tiny and huge values, for ops where they apply."""
        return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 1e30, -1e30, 1.0,
                         -1.0, 0.5], dtype=dtype)

    def case(self, name, src, inputs, ref, fn="f", rtol=1e-5, atol=1e-6, backends=None,
             expect_error=None, exact=False, pending=None):
        """pending="why": Kiln is expected to fail on this case for now (exit 1,
        e.g. an op it lacks); reported as pending, and a failure once it passes."""
        self.cases.append(dict(name=name, src=src, inputs=inputs, ref=ref, fn=fn, rtol=rtol,
                               atol=atol, backends=backends or self.backends,
                               expect_error=expect_error, exact=exact, pending=pending))

    def _run_one(self, i, c, backend):
        d = os.path.join(self.tmp, f"c{i}")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "case.kiln")
        with open(path, "w") as f:
            f.write(c["src"])
        cmd = [self.kiln, "run", path, "--fn", c["fn"], "--backend", backend]
        for k, v in c["inputs"].items():
            if isinstance(v, np.ndarray):
                p = os.path.join(d, f"in_{k}.npy")
                np.save(p, v)
                cmd += ["--input", f"{k}={p}"]
            elif isinstance(v, list) and v and all(isinstance(a, np.ndarray) for a in v):
                ps = []
                for j, a in enumerate(v):
                    p = os.path.join(d, f"in_{k}_{j}.npy")
                    np.save(p, a)
                    ps.append(p)
                cmd += ["--input", f"{k}=[{','.join(ps)}]"]
            else:
                cmd += ["--input", f"{k}={_spec(v)}"]
        if c["expect_error"] is not None:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            if r.returncode != 1 or c["expect_error"] not in r.stderr:
                return f"expected exit 1 with {c['expect_error']!r}, got {r.returncode}: {r.stderr.strip()[:600]}"
            return None
        with torch.no_grad():
            want = c["ref"](*[_to_torch(v) for v in c["inputs"].values()])
        if isinstance(want, torch.Tensor):
            want = [want]
        want = [w if isinstance(w, torch.Tensor) else torch.tensor(w) for w in want]
        outs = [os.path.join(d, f"out{j}_{backend}.npy") for j in range(len(want))]
        for o in outs:
            cmd += ["--output", o]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if c["pending"] and r.returncode == 1:
            return "pending"
        if r.returncode != 0:
            return f"kiln exited {r.returncode}: {r.stderr.strip()[:1500]}"
        for j, (o, w) in enumerate(zip(outs, want)):
            got = np.load(o)
            w = w.detach().cpu()
            wn = w.numpy() if w.dtype != torch.bfloat16 else w.float().numpy()
            if got.shape != wn.shape:
                return f"output {j}: shape {got.shape}, PyTorch {wn.shape}"
            if got.dtype != wn.dtype:
                return f"output {j}: dtype {got.dtype}, PyTorch {wn.dtype}"
            if wn.dtype.kind in "biu" or c["exact"]:
                bad = ~((got == wn) | (np.isnan(got) & np.isnan(wn)) if wn.dtype.kind == "f" else (got == wn))
            else:
                g64, w64 = got.astype(np.float64), wn.astype(np.float64)
                both_nan = np.isnan(g64) & np.isnan(w64)
                same_inf = np.isinf(w64) & (g64 == w64)
                with np.errstate(invalid="ignore"):
                    close = np.abs(g64 - w64) <= c["atol"] + c["rtol"] * np.abs(w64)
                bad = ~(both_nan | same_inf | close)
            if bad.any():
                idx = tuple(np.argwhere(bad)[0])
                return (f"output {j}: {int(bad.sum())} of {bad.size} differ; first at {idx}: "
                        f"kiln {got[idx]!r}, PyTorch {wn[idx]!r}")
        if c["pending"]:
            return "it compiles and matches now: take it off the pending list"
        return None

    def run(self):
        failed = pending = 0
        for i, c in enumerate(self.cases):
            for backend in c["backends"]:
                try:
                    err = self._run_one(i, c, backend)
                except Exception:  # a bug in the case itself is a failure too
                    err = traceback.format_exc()
                if err == "pending":
                    pending += 1
                    print(f"PENDING {c['name']} [{backend}]: {c['pending']}")
                elif err:
                    failed += 1
                    print(f"FAIL {c['name']} [{backend}]: {err}")
        n = sum(len(c["backends"]) for c in self.cases)
        print(f"{n - failed - pending} of {n} checks passed, {pending} pending "
              f"(PyTorch {torch.__version__})")
        sys.exit(1 if failed else 0)
