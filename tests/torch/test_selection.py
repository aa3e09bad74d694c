"""sort, argsort, msort, topk, kthvalue, median and nanmedian (issue 13) against PyTorch.

Kiln always sorts stably; where PyTorch leaves the order of ties open (an
unstable sort, topk, kthvalue, median) the reference for tied data is
PyTorch's stable sort, and random normal data (no ties) is compared with
the op itself."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kiln_torch import Suite, np, torch  # noqa: E402

s = Suite()


def stable(x, dim=-1, descending=False):
    return torch.sort(x, dim=dim, descending=descending, stable=True)


def src1(expr, ret="Tensor"):
    return f"def f(x: Tensor):\n    return {expr}\n"


def ties(shape, dtype=np.float32):
    return s.randint(shape, -3, 4).astype(dtype)


def with_nan(shape):
    x = ties(shape)
    flat = x.reshape(-1)
    flat[::3] = np.nan
    if flat.size > 4:
        flat[1] = np.inf
        flat[2] = -np.inf
    return x


# --- sort / argsort / msort --------------------------------------------------------------
src = src1("torch.sort(x)")
for n in [0, 1, 7, 1023]:
    s.case(f"sort f32 [{n}]", src, {"x": s.randn((n,))}, lambda x: stable(x))
    s.case(f"sort ties [3, {n}]", src, {"x": ties((3, n))}, lambda x: stable(x))
s.case("sort NaN/inf", src, {"x": with_nan((4, 9))}, lambda x: stable(x))
s.case("sort special", src, {"x": s.special()}, lambda x: stable(x))
s.case("sort 0-dim", src, {"x": np.array(2.5, np.float32)}, lambda x: stable(x))
src = src1("x.sort(0, True)")
s.case("Tensor.sort dim 0 descending ties", src, {"x": ties((33, 5))},
       lambda x: stable(x, 0, True))
s.case("sort descending NaN", src, {"x": with_nan((12, 3))}, lambda x: stable(x, 0, True))
src = src1("torch.sort(x, dim=-2, descending=True, stable=True)")
s.case("sort keywords f64", src, {"x": ties((2, 7, 3), np.float64)},
       lambda x: stable(x, -2, True))
for dt in [np.int32, np.int64, np.int8, np.uint8]:
    s.case(f"sort {np.dtype(dt).name}", src1("torch.sort(x)"),
           {"x": s.randint((5, 9), 0, 6, dt)}, lambda x: stable(x))
s.case("sort f16", src1("torch.sort(x, descending=True)"),
       {"x": ties((4, 7), np.float16)}, lambda x: stable(x, -1, True))
s.case("sort bool", src1("torch.sort(x)"), {"x": s.randint((3, 8), 0, 2).astype(bool)},
       lambda x: stable(x))
s.case("sort .values/.indices", src1("(x.sort().values, x.sort().indices)"),
       {"x": ties((2, 9))}, lambda x: tuple(stable(x)))
s.case("argsort", src1("torch.argsort(x, dim=0, descending=True)"), {"x": with_nan((7, 4))},
       lambda x: stable(x, 0, True).indices)
s.case("Tensor.argsort", src1("x.argsort()"), {"x": ties((3, 1023))},
       lambda x: stable(x).indices)
s.case("msort", src1("torch.msort(x)"), {"x": ties((7, 3))}, lambda x: stable(x, 0).values)
# Between other ops (sort is a kernel of its own; its producer and consumer are not).
s.case("sort of an expression", src1("torch.sort(x * 2.0 + 1.0, 1)[0] - 1.0"),
       {"x": s.randn((5, 7))}, lambda x: stable(x * 2 + 1, 1).values - 1)

# --- topk ----------------------------------------------------------------------------------
def topk_stable(x, k, dim=-1, largest=True):
    v, i = stable(x, dim, largest)
    return v.narrow(dim, 0, k), i.narrow(dim, 0, k)


for n, k in [(1, 1), (7, 3), (1023, 5), (1023, 40), (7, 0), (7, 7)]:
    s.case(f"topk [{n}] k={k}", src1(f"torch.topk(x, {k})"), {"x": s.randn((2, n))},
           lambda x, k=k: torch.topk(x, k))
    s.case(f"topk smallest ties [{n}] k={k}", src1(f"x.topk({k}, largest=False)"),
           {"x": ties((3, n))}, lambda x, k=k: topk_stable(x, k, largest=False))
s.case("topk NaN", src1("torch.topk(x, 4, dim=0)"), {"x": with_nan((9, 3))},
       lambda x: topk_stable(x, 4, 0))
s.case("topk NaN k=20", src1("torch.topk(x, 20, dim=0, largest=False)"), {"x": with_nan((30, 2))},
       lambda x: topk_stable(x, 20, 0, False))
s.case("topk i32 .values", src1("torch.topk(x, 2, -1, True, True).values"),
       {"x": s.randint((4, 7), -50, 50, np.int32)}, lambda x: topk_stable(x, 2)[0])
s.case("topk f64 empty rows", src1("torch.topk(x, 2)"), {"x": s.randn((0, 5)).astype(np.float64)},
       lambda x: torch.topk(x, 2))

# --- kthvalue -------------------------------------------------------------------------------
for n, k in [(1, 1), (7, 4), (1023, 1023)]:
    s.case(f"kthvalue [{n}] k={k}", src1(f"torch.kthvalue(x, {k})"), {"x": s.randn((3, n))},
           lambda x, k=k: torch.kthvalue(x, k))
s.case("kthvalue dim 0 keepdim", src1("x.kthvalue(2, 0, True)"), {"x": s.randn((5, 4))},
       lambda x: torch.kthvalue(x, 2, 0, True))
s.case("kthvalue ties NaN", src1("torch.kthvalue(x, 7, dim=-1)"), {"x": with_nan((3, 11))},
       lambda x: tuple(t.select(-1, 6) for t in stable(x)))
s.case("kthvalue i64", src1("torch.kthvalue(x, 3)[0]"), {"x": s.randint((4, 9), -5, 5)},
       lambda x: torch.kthvalue(x, 3)[0])

# --- median ---------------------------------------------------------------------------------
for n in [1, 7, 1023]:
    s.case(f"median all [{n}]", src1("torch.median(x)"), {"x": s.randn((n,))}, torch.median)
    s.case(f"median dim [{n}]", src1("x.median(-1)"), {"x": s.randn((3, n))},
           lambda x: torch.median(x, -1))
s.case("median all 2-d even", src1("x.median()"), {"x": ties((4, 6))}, torch.median)
s.case("median all int", src1("torch.median(x)"), {"x": s.randint((8,), -9, 9)}, torch.median)
s.case("median NaN", src1("torch.median(x)"), {"x": with_nan((5, 4))}, torch.median)
s.case("median dim NaN keepdim", src1("torch.median(x, dim=0, keepdim=True)"),
       {"x": s.randn((6, 5)) * np.array([1, np.nan, 1, 1, np.nan], np.float32)},
       lambda x: torch.median(x, 0, keepdim=True))
s.case("median 0-dim", src1("torch.median(x, 0)"), {"x": np.array(4.0, np.float32)},
       lambda x: torch.median(x, 0))
s.case("median dim empty rows", src1("torch.median(x, 1)"), {"x": s.randn((0, 3))},
       lambda x: torch.median(x, 1))

# --- located errors -------------------------------------------------------------------------
s.case("topk k too large", src1("torch.topk(x, 8)"), {"x": s.randn((2, 7))}, None,
       expect_error="k = 8 is out of range for dim -1 of size 7")
s.case("kthvalue k = 0", src1("torch.kthvalue(x, 0)"), {"x": s.randn((7,))}, None,
       expect_error="k = 0 is out of range")
# --- nanmedian: NaNs left out (PyTorch's index for an all-NaN row is open: values only) ------
for n in [1, 7, 1023]:
    s.case(f"nanmedian all [{n}]", src1("torch.nanmedian(x)"), {"x": with_nan((n,))},
           torch.nanmedian)
    s.case(f"nanmedian dim [{n}]", src1("x.nanmedian(-1)"), {"x": s.randn((3, n))},
           lambda x: torch.nanmedian(x, -1))
s.case("nanmedian dim NaN keepdim", src1("torch.nanmedian(x, dim=0, keepdim=True).values"),
       {"x": with_nan((7, 5))}, lambda x: torch.nanmedian(x, 0, keepdim=True).values)
x = s.randn((4, 7))
x[x > 0.3] = np.nan  # distinct numbers: the index is determined
x[:, 0] = 0.25  # no all-NaN row
s.case("nanmedian dim NaN indices", src1("torch.nanmedian(x, 1)"), {"x": x},
       lambda x: torch.nanmedian(x, 1))
s.case("nanmedian all-NaN rows", src1("torch.nanmedian(x, 1).values"),
       {"x": np.full((2, 3), np.nan, np.float32)}, lambda x: torch.nanmedian(x, 1).values)
for dt in [np.int32, np.int64, np.int8]:
    s.case(f"nanmedian {np.dtype(dt).name}", src1("torch.nanmedian(x, 0)[0]"),
           {"x": s.randint((7, 3), -9, 9, dt)}, lambda x: torch.nanmedian(x, 0)[0])
s.case("nanmedian f64", src1("x.nanmedian()"), {"x": with_nan((5, 5)).astype(np.float64)},
       torch.nanmedian)
s.case("nanmedian 0-dim", src1("torch.nanmedian(x, 0)"), {"x": np.array(np.nan, np.float32)},
       lambda x: torch.nanmedian(x, 0))
s.case("sort bad dim", src1("torch.sort(x, 2)"), {"x": s.randn((2, 7))}, None,
       expect_error="dim")
s.case("median empty dim", src1("torch.median(x, 1)"), {"x": s.randn((2, 0))}, None,
       expect_error="zero-size dim")
s.run()
