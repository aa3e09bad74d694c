"""Scans (cumsum, cumprod, logcumsumexp, cummax, cummin) and the reductions of
issue 13 (logsumexp, var_mean/std_mean, norms, all/any, count_nonzero, aminmax,
sum/mean/prod with dtype= and dim tuples) against PyTorch."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kiln_torch import Suite, np, torch  # noqa: E402

s = Suite()


def fn1(expr, sig="x: Tensor", ret="Tensor"):
    return f"def f({sig}) -> {ret}:\n    return {expr}\n"


PAIR = "Tuple[Tensor, Tensor]"
QUAD = "Tuple[Tensor, Tensor, Tensor, Tensor]"
SHAPES = [(0,), (1,), (7,), (1023,), (3, 5), (2, 0, 3), (4, 1, 6)]
SPECIAL = np.array([[1.0, np.nan, 2.0, -1.0], [np.inf, 1.0, -np.inf, 3.0],
                    [-np.inf, -np.inf, -np.inf, -np.inf], [np.inf, np.inf, 0.0, -0.0]], np.float32)

# --- scans -------------------------------------------------------------------------------
for shape in SHAPES:
    # Each dim once, in one def (one kiln run per backend).
    ds = range(len(shape))
    ret = "Tuple[" + ", ".join(["Tensor"] * len(shape)) + "]" if len(shape) > 1 else "Tensor"
    expr = ", ".join(f"torch.cumsum(x, {d - len(shape)})" for d in ds)
    s.case(f"cumsum {shape}", fn1(expr, ret=ret), {"x": s.randn(shape)},
           lambda x, ds=ds: tuple(torch.cumsum(x, d) for d in ds), rtol=1e-4, atol=1e-4)
s.case("cumsum 0-d", fn1("x.cumsum(0)"), {"x": np.array(2.5, np.float32)},
       lambda x: x.cumsum(0))
s.case("cumsum 0-d dim=-1", fn1("x.cumsum(-1)"), {"x": np.array(2.5, np.float32)},
       lambda x: x.cumsum(-1))
s.case("cumsum f64 dim=0", fn1("x.cumsum(dim=0)"), {"x": s.randn((9, 4), np.float64)},
       lambda x: x.cumsum(dim=0), rtol=1e-12, atol=1e-12)
s.case("cumsum f16", fn1("torch.cumsum(x, 1)"), {"x": s.randn((3, 33), np.float16)},
       lambda x: torch.cumsum(x.float(), 1).half(), rtol=1e-3, atol=1e-2)
for dt in [np.int32, np.uint8]:
    s.case(f"cumsum {dt.__name__} -> int64", fn1("torch.cumsum(x, 0)"),
           {"x": s.randint((7, 3), 0, 100, dt)}, lambda x: torch.cumsum(x, 0))
s.case("cumsum bool -> int64", fn1("x.cumsum(1)"), {"x": s.randn((4, 9)) > 0},
       lambda x: x.cumsum(1))
s.case("cumsum dtype=float64", fn1("torch.cumsum(x, 1, dtype=torch.float64)"),
       {"x": s.randint((3, 8), -50, 50, np.int32)}, lambda x: torch.cumsum(x, 1, dtype=torch.float64))
s.case("cumsum dtype=int32 from f32", fn1("torch.cumsum(x, 0, dtype=torch.int32)"),
       {"x": s.randn((6,)) * 10}, lambda x: torch.cumsum(x, 0, dtype=torch.int32))
s.case("cumsum special", fn1("torch.cumsum(x, 1)"), {"x": SPECIAL}, lambda x: torch.cumsum(x, 1))
s.case("cumsum of a fused product", fn1("torch.cumsum(x * 2 + 1, 0).relu()"),
       {"x": s.randn((31, 5))}, lambda x: torch.cumsum(x * 2 + 1, 0).relu(), rtol=1e-4, atol=1e-4)
s.case("cumsum transposed input", fn1("x.t().cumsum(1)"), {"x": s.randn((5, 8))},
       lambda x: x.t().cumsum(1), rtol=1e-5, atol=1e-5)

for shape in [(0,), (7,), (4, 1, 6)]:
    x = s.uniform(shape, 0.5, 1.5)
    s.case(f"cumprod {shape}", fn1("torch.cumprod(x, -1)"), {"x": x},
           lambda x: torch.cumprod(x, -1), rtol=1e-5, atol=1e-6)
s.case("cumprod int wraps", fn1("x.cumprod(0)"), {"x": s.randint((40,), -30, 30)},
       lambda x: x.cumprod(0))
s.case("cumprod i32 -> int64", fn1("x.cumprod(1)"), {"x": s.randint((3, 6), -4, 4, np.int32)},
       lambda x: x.cumprod(1))
s.case("cumprod bool", fn1("x.cumprod(0)"), {"x": s.randn((6, 2)) > -1},
       lambda x: x.cumprod(0))
s.case("cumprod special", fn1("torch.cumprod(x, 1)"), {"x": SPECIAL}, lambda x: torch.cumprod(x, 1))
s.case("cumprod dtype=float64", fn1("torch.cumprod(x, 0, dtype=torch.float64)"),
       {"x": s.uniform((5, 3), 0.5, 2.0)}, lambda x: torch.cumprod(x, 0, dtype=torch.float64),
       rtol=1e-12, atol=1e-12)

for shape in [(0,), (1,), (1023,), (4, 1, 6)]:
    s.case(f"logcumsumexp {shape}", fn1("torch.logcumsumexp(x, 0)"), {"x": s.randn(shape) * 5},
           lambda x: torch.logcumsumexp(x, 0), rtol=1e-5, atol=1e-5)
s.case("logcumsumexp special", fn1("x.logcumsumexp(1)"), {"x": SPECIAL},
       lambda x: x.logcumsumexp(1))
s.case("logcumsumexp -inf first", fn1("x.logcumsumexp(0)"),
       {"x": np.array([-np.inf, -np.inf, 1.0, -np.inf, np.inf, 2.0], np.float32)},
       lambda x: x.logcumsumexp(0))
s.case("logcumsumexp f64", fn1("torch.logcumsumexp(x, -1)"), {"x": s.randn((3, 9), np.float64) * 30},
       lambda x: torch.logcumsumexp(x, -1), rtol=1e-12, atol=1e-12)

CUMX = ("def f(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:\n"
        "    a, i = torch.cummax(x, {d})\n    b, j = x.cummin(dim={d})\n    return a, i, b, j\n")


def cumx(d):
    return lambda x: tuple(torch.cummax(x, d)) + tuple(x.cummin(dim=d))


for shape in [(0,), (1,), (1023,), (4, 1, 6)]:
    s.case(f"cummax/cummin {shape}", CUMX.format(d=0), {"x": s.randn(shape)}, cumx(0))
s.case("cummax/cummin ties and NaN", CUMX.format(d=1),
       {"x": np.array([[1, 3, 3, np.nan, 2, np.nan, 5], [2, 2, 1, 1, 0, 0, 7]], np.float32)}, cumx(1))
s.case("cummax/cummin special", CUMX.format(d=1), {"x": SPECIAL}, cumx(1))
s.case("cummax/cummin int", CUMX.format(d=-1), {"x": s.randint((4, 9), 0, 4, np.int32)}, cumx(-1))
s.case("cummax/cummin bool", CUMX.format(d=0), {"x": s.randn((5, 3)) > 0}, cumx(0))

# --- logsumexp -------------------------------------------------------------------------------
s.case("logsumexp special rows", fn1("torch.logsumexp(x, 1)"), {"x": SPECIAL},
       lambda x: torch.logsumexp(x, 1))
s.case("logsumexp tuple dims keepdim", fn1("torch.logsumexp(x, (0, 2), keepdim=True)"),
       {"x": s.randn((3, 4, 5)) * 10}, lambda x: torch.logsumexp(x, (0, 2), keepdim=True))
s.case("logsumexp negative dim", fn1("x.logsumexp(-1)"), {"x": s.randn((2, 1023)) * 30},
       lambda x: x.logsumexp(-1), rtol=1e-5, atol=1e-5)
s.case("logsumexp int input", fn1("torch.logsumexp(x, 0)"), {"x": s.randint((5, 2), -3, 3)},
       lambda x: torch.logsumexp(x, 0))

# --- var_mean / std_mean -------------------------------------------------------------------------
VM = ("def f(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:\n"
      "    v, m = torch.var_mean(x{a})\n    s, n = torch.std_mean(x{a})\n    return v, m, s, n\n")
for args, shape, dt in [("", (4, 7), np.float32), (", 1, keepdim=True", (4, 7), np.float32),
                        (", (0, 2), unbiased=False", (3, 4, 5), np.float32),
                        (", dim=-1, correction=0", (2, 1023), np.float64),
                        (", False", (6,), np.float32), (", 0", (1, 3), np.float32)]:
    s.case(f"var_mean/std_mean{args}", VM.format(a=args), {"x": s.randn(shape, dt)},
           eval(f"lambda x: torch.var_mean(x{args}) + torch.std_mean(x{args})"))
s.case("var_mean int input", VM.format(a=""), {"x": s.randint((6,), 0, 9)}, None,
       expect_error="floating")

# --- norms ------------------------------------------------------------------------------------
INF = "float('inf')"
for p, pt in [("2", 2), ("1", 1), ("0", 0), ("3.5", 3.5), ("-1.5", -1.5), (INF, float("inf")),
              ("-" + INF, -float("inf"))]:
    x = s.randn((5, 7))
    x[0, 0] = 0
    s.case(f"vector_norm ord={p}",
           fn1(f"torch.linalg.vector_norm(x, {p}), torch.linalg.vector_norm(x, ord={p}, dim=1, "
               f"keepdim=True), torch.norm(x, p={p}, dim=(0, 1))", ret="Tuple[Tensor, Tensor, Tensor]"),
           {"x": x}, lambda x, pt=pt: (torch.linalg.vector_norm(x, pt),
                                       torch.linalg.vector_norm(x, ord=pt, dim=1, keepdim=True),
                                       torch.norm(x, p=pt, dim=(0, 1))), rtol=1e-5, atol=1e-5)
for shape in [(0,), (1,), (1023,), (2, 0, 3)]:
    s.case(f"norm default {shape}", fn1("torch.norm(x)"), {"x": s.randn(shape)},
           lambda x: torch.norm(x), rtol=1e-5, atol=1e-5)
s.case("Tensor.norm dim keepdim", fn1("x.norm(dim=-1, keepdim=True)"), {"x": s.randn((3, 4, 5))},
       lambda x: x.norm(dim=-1, keepdim=True), rtol=1e-5, atol=1e-6)
s.case("Tensor.norm p=1 dim", fn1("x.norm(1, 0)"), {"x": s.randn((3, 4))},
       lambda x: x.norm(1, 0), rtol=1e-5, atol=1e-6)
s.case("norm fro dim pair", fn1("torch.norm(x, 'fro', dim=(1, 2))"), {"x": s.randn((2, 3, 4))},
       lambda x: torch.norm(x, 'fro', dim=(1, 2)), rtol=1e-5, atol=1e-6)
s.case("norm f64", fn1("torch.norm(x)"), {"x": s.randn((9, 9), np.float64)},
       lambda x: torch.norm(x), rtol=1e-12, atol=1e-12)
s.case("norm f16", fn1("torch.linalg.vector_norm(x)"), {"x": s.randn((40,), np.float16)},
       lambda x: torch.linalg.vector_norm(x.float()).half(), rtol=2e-3, atol=1e-3)
s.case("norm special", fn1("torch.linalg.vector_norm(x, dim=1)"), {"x": SPECIAL},
       lambda x: torch.linalg.vector_norm(x, dim=1))
s.case("norm special ord=1", fn1("torch.linalg.vector_norm(x, 1, dim=1)"), {"x": SPECIAL},
       lambda x: torch.linalg.vector_norm(x, 1, dim=1))
s.case("norm zeros p=0.5", fn1("torch.norm(x, 0.5)"), {"x": np.zeros((4,), np.float32)},
       lambda x: torch.norm(x, 0.5))
s.case("vector_norm dtype=float64", fn1("torch.linalg.vector_norm(x, dtype=torch.float64)"),
       {"x": s.randn((6,))}, lambda x: torch.linalg.vector_norm(x, dtype=torch.float64),
       rtol=1e-6, atol=1e-6)
s.case("norm int input", fn1("torch.norm(x)"), {"x": s.randint((4,), 0, 5)}, None,
       expect_error="needs a floating input, got i64")
s.case("vector_norm int input", fn1("torch.linalg.vector_norm(x)"), {"x": s.randint((4,), 0, 5)},
       None, expect_error="needs a floating input")
s.case("vector_norm inf of empty", fn1(f"torch.linalg.vector_norm(x, {INF})"),
       {"x": np.zeros((0,), np.float32)}, None, expect_error="zero-size")
for ordv, ordt in [("'fro'", "fro"), ("1", 1), ("-1", -1), (INF, float("inf")),
                   ("-" + INF, -float("inf"))]:
    s.case(f"matrix_norm / linalg.norm ord={ordv}",
           fn1(f"torch.linalg.matrix_norm(x, {ordv}), torch.linalg.norm(y, {ordv})",
               sig="x: Tensor, y: Tensor", ret=PAIR),
           {"x": s.randn((2, 3, 4)), "y": s.randn((5, 3))},
           lambda x, y, o=ordt: (torch.linalg.matrix_norm(x, o), torch.linalg.norm(y, o)),
           rtol=1e-5, atol=1e-6)
s.case("matrix_norm dim keepdim", fn1("torch.linalg.matrix_norm(x, 1, dim=(2, 0), keepdim=True)"),
       {"x": s.randn((3, 4, 5))}, lambda x: torch.linalg.matrix_norm(x, 1, dim=(2, 0), keepdim=True),
       rtol=1e-5, atol=1e-6)
s.case("linalg.norm default", fn1("torch.linalg.norm(x)"), {"x": s.randn((3, 4, 5))},
       lambda x: torch.linalg.norm(x), rtol=1e-5, atol=1e-6)
s.case("linalg.norm dim int", fn1("torch.linalg.norm(x, dim=-1)"), {"x": s.randn((3, 4))},
       lambda x: torch.linalg.norm(x, dim=-1), rtol=1e-5, atol=1e-6)
s.case("linalg.norm vector ord=3", fn1("torch.linalg.norm(x, 3)"), {"x": s.randn((7,))},
       lambda x: torch.linalg.norm(x, 3), rtol=1e-5, atol=1e-6)
s.case("linalg.norm 3-D with ord", fn1("torch.linalg.norm(x, 1)"), {"x": s.randn((2, 2, 2))}, None,
       expect_error="must be 1-D or 2-D")
s.case("matrix_norm ord=2", fn1("torch.linalg.matrix_norm(x, 2)"), {"x": s.randn((2, 2))}, None,
       expect_error="needs an SVD")

# --- all / any / count_nonzero / aminmax -------------------------------------------------------------
for dt in [np.float32, np.int32, np.bool_]:
    x = (s.randint((4, 5), 0, 3) > 0).astype(dt) if dt != np.float32 else s.randn((4, 5))
    s.case(f"all/any {dt.__name__}",
           fn1("torch.all(x), torch.any(x), x.all(1, keepdim=True), x.any(1, keepdim=True)", ret=QUAD),
           {"x": x}, lambda x: (torch.all(x), torch.any(x), x.all(1, keepdim=True),
                                x.any(1, keepdim=True)))
for name in ["all", "any"]:
    s.case(f"{name} uint8 -> uint8", fn1(f"torch.{name}(x, dim=0)"),
           {"x": s.randint((3, 4), 0, 2, np.uint8)}, lambda x, name=name: getattr(torch, name)(x, dim=0))
    s.case(f"{name} empty", fn1(f"x.{name}(-1)"), {"x": np.zeros((3, 0), np.float32)},
           lambda x, name=name: getattr(x, name)(-1))
    s.case(f"{name} NaN", fn1(f"x.{name}()"), {"x": np.array([np.nan, 1.0], np.float32)},
           lambda x, name=name: getattr(x, name)())
for dims, pt in [("", None), (", 1", 1), (", (0, 2)", (0, 2)), (", dim=-1", -1)]:
    x = s.randint((3, 4, 5), -1, 2).astype(np.float32)
    x[0, 0, 0] = np.nan
    s.case(f"count_nonzero{dims}", fn1(f"torch.count_nonzero(x{dims})"), {"x": x},
           lambda x, pt=pt: torch.count_nonzero(x, pt))
s.case("count_nonzero bool method", fn1("x.count_nonzero(0)"), {"x": s.randn((6, 2)) > 0},
       lambda x: x.count_nonzero(0))
s.case("aminmax all", fn1("torch.aminmax(x)", ret=PAIR), {"x": s.randn((4, 9))},
       lambda x: tuple(torch.aminmax(x)))
s.case("aminmax dim keepdim int", fn1("x.aminmax(dim=1, keepdim=True)", ret=PAIR),
       {"x": s.randint((4, 9), -9, 9, np.int32)}, lambda x: tuple(x.aminmax(dim=1, keepdim=True)))

# --- sum / mean / prod / amax / amin ------------------------------------------------------------
s.case("sum dim tuple keepdim", fn1("x.sum((0, -1), keepdim=True)"), {"x": s.randn((3, 4, 5))},
       lambda x: x.sum((0, -1), keepdim=True))
s.case("sum dtype=float64 from int", fn1("torch.sum(x, 1, dtype=torch.float64)"),
       {"x": s.randint((3, 4), -9, 9, np.int32)}, lambda x: torch.sum(x, 1, dtype=torch.float64))
s.case("sum dtype=float16", fn1("torch.sum(x, dtype=torch.float16)"),
       {"x": s.randint((7,), -9, 9)}, lambda x: torch.sum(x, dtype=torch.float16))
s.case("sum uint8 -> int64", fn1("x.sum(0)"), {"x": s.randint((300,), 0, 255, np.uint8)},
       lambda x: x.sum(0))
s.case("mean dtype=float64 from int", fn1("x.mean(dtype=torch.float64)"),
       {"x": s.randint((7,), 0, 9)}, lambda x: x.mean(dtype=torch.float64))
s.case("mean dims", fn1("torch.mean(x, [1, 2])"), {"x": s.randn((2, 3, 1023))},
       lambda x: torch.mean(x, [1, 2]))
s.case("prod dim dtype", fn1("torch.prod(x, 1, dtype=torch.float64)"),
       {"x": s.uniform((3, 7), 0.5, 1.5)}, lambda x: torch.prod(x, 1, dtype=torch.float64))
s.case("prod bool -> int64", fn1("x.prod()"), {"x": s.randn((5,)) > -9}, lambda x: x.prod())
s.case("amax dims special", fn1("torch.amax(x, (0, 1))"), {"x": SPECIAL}, lambda x: torch.amax(x, (0, 1)))
s.case("amin dim keepdim", fn1("x.amin(-1, keepdim=True)"), {"x": SPECIAL},
       lambda x: x.amin(-1, keepdim=True))
s.run()
