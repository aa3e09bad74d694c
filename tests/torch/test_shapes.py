"""Shape and creation ops of issue 13 (einsum, outer/addr/addmv/baddbmm/addbmm,
linspace/logspace, *_like/new_*, repeat/tile/repeat_interleave, roll, flip,
rot90, tensor_split, meshgrid, cartesian_prod, diag/diagonal/diag_embed/trace,
unfold, movedim, tril/triu/eye/chunk/unbind) against PyTorch."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kiln_torch import Suite, np, torch  # noqa: E402

s = Suite()


def one(expr, params="x: Tensor"):
    return f"def f({params}):\n    return {expr}\n"


def R(shape, dt=np.float32):
    if dt == np.bool_:
        return s.randint(shape, 0, 2, np.int64).astype(np.bool_)
    if np.issubdtype(dt, np.integer):
        return s.randint(shape, -50, 50, dt)
    return s.randn(shape, dt)


# --- einsum: equations of every kind -------------------------------------------------
EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 5, 4), (2, 3, 7, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(7,), (7,)]),
    ("i,i", [(7,), (7,)]),
    ("ii->i", [(5, 5)]),
    ("ii", [(5, 5)]),
    ("iij->j", [(3, 3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("ba", [(3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("...ij->...ji", [(2, 3, 4)]),
    ("i...->...", [(2, 3, 4)]),
    ("...,...->...", [(2, 3), (3,)]),
    ("b...,b...", [(2, 3), (2, 3)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("i,j,k->ijk", [(2,), (3,), (4,)]),
    ("bij,bkj->bik", [(1, 3, 4), (5, 6, 4)]),
    ("Ab,bC->AC", [(2, 3), (3, 4)]),
    ("aB,bA", [(2, 3), (3, 2)]),
    ("ij,jk->ik", [(0, 4), (4, 5)]),
    ("ij,jk->ik", [(3, 0), (0, 5)]),
    ("i j , j k -> i k", [(1, 1023), (1023, 1)]),
]
for eq, shapes in EINSUM:
    names = [f"x{i}" for i in range(len(shapes))]
    params = ", ".join(f"{n}: Tensor" for n in names)
    src = one(f"torch.einsum('{eq}', {', '.join(names)})", params)
    ins = {n: R(sh) for n, sh in zip(names, shapes)}
    s.case(f"einsum {eq} {shapes}", src, ins,
           lambda *xs, eq=eq: torch.einsum(eq, *xs), rtol=1e-4, atol=1e-5)
s.case("einsum list operands f64", one("torch.einsum('ij,j->i', [a, b])", "a: Tensor, b: Tensor"),
       {"a": R((3, 7), np.float64), "b": R((7,), np.float64)},
       lambda a, b: torch.einsum("ij,j->i", [a, b]))
s.case("einsum i64 batched", one("torch.einsum('bij,bjk->bki', a, b)", "a: Tensor, b: Tensor"),
       {"a": R((2, 3, 7), np.int64), "b": R((2, 7, 4), np.int64)},
       lambda a, b: torch.einsum("bij,bjk->bki", a, b))
s.case("einsum i32 trace", one("torch.einsum('ii', x)"), {"x": R((4, 4), np.int32)},
       lambda x: torch.einsum("ii", x))
s.case("einsum bad", one("torch.einsum('ij,jk->iz', x, x)"), {"x": R((3, 3))}, None,
       expect_error="output subscript z does not appear")

# --- contractions with beta/alpha ---------------------------------------------------------
s.case("outer", one("torch.outer(a, b)", "a: Tensor, b: Tensor"), {"a": R((7,)), "b": R((5,))},
       torch.outer)
s.case("ger i64", one("a.ger(b)", "a: Tensor, b: Tensor"),
       {"a": R((7,), np.int64), "b": R((1,), np.int64)}, torch.outer)
s.case("outer empty", one("torch.outer(a, b)", "a: Tensor, b: Tensor"),
       {"a": R((0,)), "b": R((3,))}, torch.outer)
s.case("addr", one("torch.addr(m, a, b, beta=0.5, alpha=2.0)", "m: Tensor, a: Tensor, b: Tensor"),
       {"m": R((7, 5)), "a": R((7,)), "b": R((5,))},
       lambda m, a, b: torch.addr(m, a, b, beta=0.5, alpha=2.0))
s.case("addmv", one("torch.addmv(v, m, w)", "v: Tensor, m: Tensor, w: Tensor"),
       {"v": R((7,)), "m": R((7, 5)), "w": R((5,))}, torch.addmv, rtol=1e-4)
s.case("addmv beta 0 ignores nan", one("m.addmv(v, w, beta=0)", "m: Tensor, v: Tensor, w: Tensor"),
       {"m": np.full((3,), np.nan, np.float32), "v": R((3, 4)), "w": R((4,))},
       lambda m, v, w: m.addmv(v, w, beta=0), rtol=1e-4)
s.case("baddbmm", one("torch.baddbmm(i, a, b, beta=0.5, alpha=-1.5)", "i: Tensor, a: Tensor, b: Tensor"),
       {"i": R((1, 5)), "a": R((2, 3, 4)), "b": R((2, 4, 5))},
       lambda i, a, b: torch.baddbmm(i, a, b, beta=0.5, alpha=-1.5), rtol=1e-4, atol=1e-5)
s.case("addbmm", one("torch.addbmm(i, a, b)", "i: Tensor, a: Tensor, b: Tensor"),
       {"i": R((3, 5)), "a": R((2, 3, 4)), "b": R((2, 4, 5))}, torch.addbmm, rtol=1e-4, atol=1e-5)

# --- creation -------------------------------------------------------------------------------------
for args in ["0.0, 1.0, 5", "-3, 7, 1", "1.5, 1.5, 0", "0, 10, 7", "2.0, -1.0, 1023"]:
    s.case(f"linspace({args})", "def f() -> Tensor:\n    return torch.linspace(%s)\n" % args, {},
           lambda a=args: eval(f"torch.linspace({a})"), rtol=1e-6, atol=1e-6)
s.case("linspace int64", "def f() -> Tensor:\n    return torch.linspace(0, 10, 4, dtype=torch.int64)\n",
       {}, lambda: torch.linspace(0, 10, 4, dtype=torch.int64))
s.case("logspace", "def f() -> Tensor:\n    return torch.logspace(-2, 2, 7, base=2.0)\n", {},
       lambda: torch.logspace(-2, 2, 7, base=2.0), rtol=1e-6)
s.case("logspace f64", "def f() -> Tensor:\n    return torch.logspace(0, 3, 4, dtype=torch.float64)\n",
       {}, lambda: torch.logspace(0, 3, 4, dtype=torch.float64))
s.case("zeros_like/ones_like/full_like i32",
       one("(torch.zeros_like(x), torch.ones_like(x, dtype=torch.float64), torch.full_like(x, 7))"),
       {"x": R((2, 7), np.int32)},
       lambda x: (torch.zeros_like(x), torch.ones_like(x, dtype=torch.float64), torch.full_like(x, 7)))
s.case("new_zeros/new_ones/new_full", one("(x.new_zeros(2, 3), x.new_ones((4,)), x.new_full((2,), 3.5), "
                                          "x.new_zeros([1], dtype=torch.int64), x.new_empty(0).shape[0])"),
       {"x": R((3,), np.float64)},
       lambda x: (x.new_zeros(2, 3), x.new_ones((4,)), x.new_full((2,), 3.5),
                  x.new_zeros([1], dtype=torch.int64), 0))
s.case("new_tensor", one("x.new_tensor([[1, 2], [3, 4]])"), {"x": R((3,), np.float64)},
       lambda x: x.new_tensor([[1, 2], [3, 4]]))

# --- repeats ---------------------------------------------------------------------------------------
for dt in [np.float32, np.int64, np.bool_]:
    s.case(f"repeat {dt.__name__}", one("x.repeat(2, 1, 3)"), {"x": R((7, 2), dt)},
           lambda x: x.repeat(2, 1, 3))
s.case("repeat tuple", one("x.repeat((1, 0))"), {"x": R((3, 4))}, lambda x: x.repeat((1, 0)))
s.case("tile short dims", one("torch.tile(x, (2,))"), {"x": R((3, 4))}, lambda x: torch.tile(x, (2,)))
s.case("tile long dims", one("x.tile((2, 1, 2))"), {"x": R((1023,))}, lambda x: x.tile((2, 1, 2)))
s.case("repeat_interleave int", one("x.repeat_interleave(3)"), {"x": R((2, 3), np.int32)},
       lambda x: x.repeat_interleave(3))
s.case("repeat_interleave dim -1", one("torch.repeat_interleave(x, 2, dim=-1)"), {"x": R((2, 7))},
       lambda x: torch.repeat_interleave(x, 2, dim=-1))
s.case("repeat_interleave constant tensor",
       one("torch.repeat_interleave(x, torch.tensor([1, 0, 3]), dim=0)"), {"x": R((3, 2))},
       lambda x: torch.repeat_interleave(x, torch.tensor([1, 0, 3]), dim=0))
s.case("repeat_interleave 0-d constant", one("x.repeat_interleave(torch.tensor(2), dim=1)"),
       {"x": R((2, 3), np.int64)}, lambda x: x.repeat_interleave(torch.tensor(2), dim=1))
s.case("repeat_interleave runtime tensor", one("x.repeat_interleave(r)", "x: Tensor, r: Tensor"),
       {"x": R((3,)), "r": np.array([1, 2, 3], np.int64)}, None,
       expect_error="depends on the tensor's values")

# --- reorderings -----------------------------------------------------------------------------------
for dt, shapes in [(np.float32, [(0,), (1,), (7,), (1023,), (3, 5)]), (np.int32, [(7,)]),
                   (np.bool_, [(3, 5)])]:
    for shape in shapes:
        s.case(f"flip {dt.__name__} {shape}", one("torch.flip(x, [-1])"), {"x": R(shape, dt)},
               lambda x: torch.flip(x, [-1]))
s.case("flip method varargs", one("x.flip(0, 2)"), {"x": R((2, 3, 4))}, lambda x: x.flip(0, 2))
s.case("flip fused", one("torch.flip(x, (0, 1)) * 2 + x"), {"x": R((7, 5))},
       lambda x: torch.flip(x, (0, 1)) * 2 + x)
s.case("fliplr/flipud", one("(torch.fliplr(x), x.flipud())"), {"x": R((3, 4, 2))},
       lambda x: (torch.fliplr(x), x.flipud()))
for k in [-1, 1, 2, 5]:
    s.case(f"rot90 k={k}", one(f"torch.rot90(x, {k}, [1, -1])"), {"x": R((2, 3, 5))},
           lambda x, k=k: torch.rot90(x, k, [1, -1]))
s.case("rot90 default", one("x.rot90()"), {"x": R((3, 5), np.int64)}, lambda x: x.rot90())
for shifts, dims in [("2", "0"), ("-1", "1"), ("(1, 9)", "(0, 1)"), ("3", "None"), ("0", "-1")]:
    s.case(f"roll {shifts} {dims}", one(f"torch.roll(x, {shifts}, {dims})"), {"x": R((4, 7))},
           lambda x, sh=shifts, d=dims: torch.roll(x, eval(sh), eval(d)))
s.case("roll method bool", one("x.roll(1)"), {"x": R((1023,), np.bool_)}, lambda x: x.roll(1))
s.case("roll empty", one("torch.roll(x, 2, 0)"), {"x": R((0, 3))}, lambda x: torch.roll(x, 2, 0))
s.case("movedim", one("(torch.movedim(x, 0, -1), x.moveaxis((0, 1), (2, 0)), x.swapaxes(0, 2), "
                      "x.swapdims(-1, 1))"), {"x": R((2, 3, 4))},
       lambda x: (torch.movedim(x, 0, -1), x.moveaxis((0, 1), (2, 0)), x.swapaxes(0, 2),
                  x.swapdims(-1, 1)))
s.case("view_as/reshape_as", one("(x.view_as(y), x.reshape_as(y))", "x: Tensor, y: Tensor"),
       {"x": R((2, 6)), "y": R((3, 4))}, lambda x, y: (x.view_as(y), x.reshape_as(y)))

# --- splitting and grids -----------------------------------------------------------------------------
s.case("tensor_split sections", one("torch.tensor_split(x, 3)"), {"x": R((7, 2))},
       lambda x: torch.tensor_split(x, 3))
s.case("tensor_split more sections than rows", one("x.tensor_split(4, dim=-1)"), {"x": R((2, 2))},
       lambda x: x.tensor_split(4, dim=-1))
s.case("tensor_split indices", one("torch.tensor_split(x, [1, 5, -1, 3], dim=1)"), {"x": R((2, 7))},
       lambda x: torch.tensor_split(x, [1, 5, -1, 3], dim=1))
s.case("chunk", one("torch.chunk(x, 3, -1)"), {"x": R((2, 7))}, lambda x: torch.chunk(x, 3, -1))
s.case("unbind", one("x.unbind(1)"), {"x": R((2, 7), np.int32)}, lambda x: x.unbind(1))
for ix in ["ij", "xy"]:
    s.case(f"meshgrid {ix}", one(f"torch.meshgrid(a, b, c, indexing='{ix}')", "a: Tensor, b: Tensor, c: Tensor"),
           {"a": R((3,)), "b": R((4,)), "c": R((2,))},
           lambda a, b, c, ix=ix: torch.meshgrid(a, b, c, indexing=ix))
s.case("meshgrid list default", one("torch.meshgrid([a, b])", "a: Tensor, b: Tensor"),
       {"a": R((3,)), "b": R((1,))}, lambda a, b: torch.meshgrid([a, b], indexing="ij"))
s.case("meshgrid mixed dtypes", one("torch.meshgrid(a, b)", "a: Tensor, b: Tensor"),
       {"a": R((3,)), "b": R((2,), np.int64)}, None, expect_error="same dtype")
s.case("cartesian_prod", one("torch.cartesian_prod(a, b)", "a: Tensor, b: Tensor"),
       {"a": R((3,), np.int64), "b": R((2,), np.int64)}, torch.cartesian_prod)

# --- diagonals, windows, triangles -----------------------------------------------------------------
for k in [0, 2, -1, -4]:
    s.case(f"diag 2-D k={k}", one(f"torch.diag(x, {k})"), {"x": R((4, 6))},
           lambda x, k=k: torch.diag(x, k))
    s.case(f"diag 1-D k={k}", one(f"x.diag(diagonal={k})"), {"x": R((4,), np.int32)},
           lambda x, k=k: x.diag(diagonal=k))
s.case("diagonal dims", one("torch.diagonal(x, offset=-1, dim1=2, dim2=0)"), {"x": R((4, 3, 5))},
       lambda x: torch.diagonal(x, offset=-1, dim1=2, dim2=0))
s.case("diagonal method bool", one("x.diagonal(1)"), {"x": R((7, 7), np.bool_)}, lambda x: x.diagonal(1))
s.case("diag_embed", one("(torch.diag_embed(x), x.diag_embed(1, 0, 2), torch.diag_embed(x, -2, -1, 0))"),
       {"x": R((2, 3))},
       lambda x: (torch.diag_embed(x), x.diag_embed(1, 0, 2), torch.diag_embed(x, -2, -1, 0)))
s.case("trace", one("(torch.trace(x), y.trace())", "x: Tensor, y: Tensor"),
       {"x": R((4, 6)), "y": R((3, 3), np.int32)}, lambda x, y: (torch.trace(x), y.trace()))
for dim, size, step in [(0, 2, 1), (1, 3, 2), (-1, 7, 1), (0, 0, 1), (1, 1, 5)]:
    s.case(f"unfold {dim} {size} {step}", one(f"x.unfold({dim}, {size}, {step})"), {"x": R((5, 7))},
           lambda x, a=(dim, size, step): x.unfold(*a))
s.case("unfold 1023", one("x.unfold(0, 4, 4).sum(-1)"), {"x": R((1023,))},
       lambda x: x.unfold(0, 4, 4).sum(-1), rtol=1e-5)
for k in [0, 1, -2]:
    s.case(f"tril/triu k={k} non-square", one(f"(torch.tril(x, {k}), x.triu(diagonal={k}))"),
           {"x": R((2, 4, 7), np.int64)}, lambda x, k=k: (torch.tril(x, k), x.triu(diagonal=k)))
s.case("eye", "def f() -> Tensor:\n    return torch.eye(3, 5, dtype=torch.int32)\n", {},
       lambda: torch.eye(3, 5, dtype=torch.int32))

# --- errors ----------------------------------------------------------------------------------------
s.case("flip repeated dim", one("torch.flip(x, [0, -2])"), {"x": R((2, 3))}, None,
       expect_error="appears multiple times")
s.case("unfold too big", one("x.unfold(1, 8, 1)"), {"x": R((5, 7))}, None,
       expect_error="maximum size for tensor at dimension 1 is 7 but size is 8")
s.run()
