"""The elementwise math of issue 13 against PyTorch: trig/hyperbolic and their
inverses, log2/log10/exp2, erfc/erfinv, lgamma/digamma, trunc/frac/sgn/signbit,
deg2rad/rad2deg/sinc, atan2/copysign/hypot/logaddexp/float_power, prelu and
the torch.special aliases. Several ops share one def (one output each) so the
file stays quick."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kiln_torch import Suite, np, torch  # noqa: E402

F = torch.nn.functional
s = Suite()

# (kiln expression, PyTorch function, rtol for f32)
UNARY = [
    ("torch.tan(x)", torch.tan, 1e-5),
    ("torch.asin(x)", torch.asin, 1e-5),
    ("torch.arccos(x)", torch.arccos, 1e-5),
    ("x.atan()", torch.atan, 1e-5),
    ("torch.sinh(x)", torch.sinh, 1e-5),
    ("x.cosh()", torch.cosh, 1e-5),
    ("torch.asinh(x)", torch.asinh, 1e-5),
    ("torch.acosh(x)", torch.acosh, 1e-5),
    ("torch.arctanh(x)", torch.arctanh, 1e-5),
    ("torch.log2(x)", torch.log2, 1e-5),
    ("x.log10()", torch.log10, 1e-5),
    ("torch.exp2(x)", torch.exp2, 1e-5),
    ("torch.erfc(x)", torch.erfc, 1e-5),
    ("torch.erfinv(x)", torch.erfinv, 1e-5),
    ("torch.lgamma(x)", torch.lgamma, 1e-5),
    ("x.digamma()", torch.digamma, 1e-4),
    ("torch.trunc(x)", torch.trunc, 0),
    ("x.fix()", torch.fix, 0),
    ("torch.frac(x)", torch.frac, 1e-6),
    ("torch.sgn(x)", torch.sgn, 0),
    ("torch.signbit(x)", torch.signbit, 0),
    ("torch.deg2rad(x)", torch.deg2rad, 1e-6),
    ("x.rad2deg()", torch.rad2deg, 1e-6),
    ("torch.sinc(x)", torch.sinc, 1e-5),
]
FLOAT_ONLY = {"torch.frac(x)"}  # PyTorch has no integer kernel


def unary_src(exprs):
    body = ", ".join(exprs)
    return f"def f(x: Tensor):\n    return {body}\n"


def values(n, dtype=np.float32):
    """n values mixing NaN/Inf/+-0, (-1, 1), moderate and wide magnitudes."""
    pool = np.concatenate([
        s.special(np.float64), [-2.0, -3.0, 1e-5, -0.49, 2.5, 90.0, 1e5, -1e5, 1.5, 1e10],
        s.rng.uniform(-1, 1, 300), s.rng.standard_normal(300) * 6,
        10.0 ** s.rng.uniform(-8, 8, 200) * np.sign(s.rng.standard_normal(200))])
    with np.errstate(over="ignore"):  # 1e10 and beyond are inf in f16, on purpose
        return pool[np.arange(n) % len(pool)].astype(dtype)


def unary_ref(fns, to=None):
    def ref(x):
        xs = x.float() if to is not None else x
        outs = []
        for fn in fns:
            r = fn(xs)
            outs.append(r.to(to) if to is not None and r.is_floating_point() else r)
        return tuple(outs)
    return ref


exprs = [e for e, _, _ in UNARY]
fns = [f for _, f, _ in UNARY]
src = unary_src(exprs)
for dt, n in [(np.float32, 0), (np.float32, 1), (np.float32, 7), (np.float32, 1023),
              (np.float64, 7), (np.float64, 1023)]:
    f32 = dt == np.float32
    # digamma of f32: PyTorch evaluates in float (Kiln in double, rounded once),
    # so allow float's cancellation near its roots and poles.
    s.case(f"unary {np.dtype(dt).name} n={n}", src, {"x": values(n, dt)}, unary_ref(fns),
           rtol=1e-4 if f32 else 1e-12, atol=1e-5 if f32 else 1e-12)
# f16: PyTorch's CPU kernels lack most of these; compare with PyTorch in f32 rounded to f16.
s.case("unary f16", src, {"x": values(257, np.float16)}, unary_ref(fns, torch.float16),
       rtol=2e-3, atol=2e-3)
# Integers and bool compute in f32 (trunc, sgn and signbit keep or give their own dtype).
int_exprs = [e for e, _, _ in UNARY if e not in FLOAT_ONLY]
int_fns = [f for e, f, _ in UNARY if e not in FLOAT_ONLY]
for dt in [np.int64, np.int32]:
    s.case(f"unary {np.dtype(dt).name}", unary_src(int_exprs),
           {"x": s.randint((33,), -5, 6, dt)}, unary_ref(int_fns), rtol=1e-4, atol=1e-5)
    if dt == np.int32:
        s.cases[-1]["backends"] = ("llvm",)
s.case("unary bool", unary_src(["torch.tan(x)", "torch.lgamma(x)", "torch.signbit(x)"]),
       {"x": np.array([True, False, True])},
       unary_ref([torch.tan, torch.lgamma, torch.signbit]))
s.case("frac of int", unary_src(["torch.frac(x)"]), {"x": s.randint((3,), 0, 5)}, None,
       expect_error="frac takes floating tensors only")
s.case("trunc of bool", unary_src(["torch.trunc(x)"]), {"x": np.array([True])}, None,
       expect_error="trunc does not support bool")

# --- binary ----------------------------------------------------------------------------------
BINARY = [
    ("torch.atan2(a, b)", torch.atan2),
    ("a.arctan2(b)", torch.arctan2),
    ("torch.copysign(a, b)", torch.copysign),
    ("torch.hypot(a, b)", torch.hypot),
    ("torch.logaddexp(a, b)", torch.logaddexp),
    ("a.logaddexp2(b)", torch.logaddexp2),
    ("torch.float_power(a, b)", torch.float_power),
]


def binary_src(exprs):
    return f"def f(a: Tensor, b: Tensor):\n    return {', '.join(exprs)}\n"


def binary_ref(fns):
    return lambda a, b: tuple(fn(a, b) for fn in fns)


bexprs = [e for e, _ in BINARY]
bfns = [f for _, f in BINARY]
sp = s.special(np.float64)
grid_a, grid_b = sp.reshape(-1, 1), sp.reshape(1, -1)  # every pair of special values
for dt in [np.float32, np.float64]:
    tol = 1e-5 if dt == np.float32 else 1e-12
    s.case(f"binary specials {np.dtype(dt).name}", binary_src(bexprs),
           {"a": grid_a.astype(dt), "b": grid_b.astype(dt)}, binary_ref(bfns), rtol=tol, atol=tol)
    shapes = ([((0,), (0,)), ((1,), (7,)), ((1023,), (1023,)), ((4, 1), (7,))] if tol > 1e-6
              else [((4, 1), (7,))])
    for shape_a, shape_b in shapes:
        a = (s.randn(shape_a) * 5).astype(dt)
        b = (s.randn(shape_b) * 5).astype(dt)
        s.case(f"binary {np.dtype(dt).name} {shape_a} {shape_b}", binary_src(bexprs),
               {"a": a, "b": b}, binary_ref(bfns), rtol=tol, atol=tol)
s.case("binary f16 with f32", binary_src(bexprs[:5]),
       {"a": values(64, np.float16), "b": values(64, np.float32)[::-1].copy()},
       binary_ref(bfns[:5]), rtol=1e-5, atol=1e-5)
s.case("binary ints", binary_src(["torch.atan2(a, b)", "torch.copysign(a, b)",
                                  "torch.float_power(a, b)"]),
       {"a": s.randint((5, 1), -4, 5), "b": s.randint((6,), 0, 4, np.int32)},
       binary_ref([torch.atan2, torch.copysign, torch.float_power]))
s.case("scalar second operands",
       "def f(a: Tensor):\n    return torch.copysign(a, -0.0), a.copysign(1), "
       "torch.float_power(a, 2), torch.atan2(a, torch.ones_like(a))\n",
       {"a": values(40)},
       lambda a: (torch.copysign(a, -0.0), a.copysign(1), torch.float_power(a, 2),
                  torch.atan2(a, torch.ones_like(a))))
for op in ["hypot", "logaddexp"]:
    s.case(f"{op} of ints", binary_src([f"torch.{op}(a, b)"]),
           {"a": s.randint((3,), 0, 5), "b": s.randint((3,), 0, 5)}, None,
           expect_error="takes floating")

# --- prelu -----------------------------------------------------------------------------------
src = "def f(x: Tensor, w: Tensor) -> Tensor:\n    return F.prelu(x, w)\n"
src = src.replace("    return", "    F = torch.nn.functional\n    return")
s.case("prelu per channel", src, {"x": s.randn((2, 3, 4, 5)), "w": s.randn((3,))}, F.prelu)
s.case("prelu one weight", src, {"x": s.randn((7,)), "w": np.array([0.25], np.float32)},
       F.prelu)
s.case("prelu f64 2-D", src, {"x": s.randn((5, 3), np.float64), "w": s.randn((3,), np.float64)},
       F.prelu)
s.case("torch.prelu special", "def f(x: Tensor, w: Tensor) -> Tensor:\n    return torch.prelu(x, w)\n",
       {"x": s.special().reshape(1, 12), "w": np.array([0.5] * 12, np.float32)}, torch.prelu)
s.case("prelu wrong weight", src, {"x": s.randn((2, 3, 4)), "w": s.randn((4,))}, None,
       expect_error="weight has 4 elements but the input has 3 channels")

# --- torch.special ---------------------------------------------------------------------------
SPECIAL = ["expit", "exp2", "expm1", "log1p", "erf", "erfc", "erfinv", "gammaln", "digamma",
           "psi", "sinc", "round"]
src = unary_src([f"torch.special.{n}(x)" for n in SPECIAL] + [
    "torch.special.logit(x)", "torch.special.xlogy(x, x)",
    "torch.special.softmax(x, 0)", "torch.special.log_softmax(x, dim=0)",
    "torch.special.logsumexp(x, 0)"])
x = s.uniform((33,), -0.99, 0.99)
s.case("torch.special", src, {"x": x},
       lambda x: tuple([getattr(torch.special, n)(x) for n in SPECIAL] + [
           torch.special.logit(x), torch.special.xlogy(x, x), torch.special.softmax(x, 0),
           torch.special.log_softmax(x, dim=0), torch.special.logsumexp(x, 0)]),
       rtol=1e-4, atol=1e-5)
s.case("torch.special unsupported", unary_src(["torch.special.zeta(x, x)"]), {"x": x}, None,
       expect_error="'torch.special.zeta' is a PyTorch function that Kiln does not support yet")
s.run()
