"""Indexing with index tensors (issue 13) against PyTorch: gather, take, take_along_dim,
index_select, embedding, one_hot, scatter / scatter_add / scatter_reduce,
index_add / index_copy / index_fill / index_reduce / index_put, masked_scatter,
and advanced subscripts
(x[idx], x[:, idx], x[i0, i1], x[idx] = v, x[:, idx] += v)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kiln_torch import Suite, np, torch  # noqa: E402

F = torch.nn.functional
s = Suite()


def fn(body, params="x: Tensor, i: Tensor"):
    return f"def f({params}) -> Tensor:\n    F = torch.nn.functional\n" + body


def perm_rows(n, cols, k):
    """k distinct indices in [0, n) per column: unique targets for scatter."""
    return np.stack([s.rng.permutation(n)[:k] for _ in range(cols)], axis=1).astype(np.int64)


# --- gather / take_along_dim ---------------------------------------------------------------
src = fn("    return torch.gather(x, 0, i)\n")
for n in [0, 1, 7, 1023]:
    s.case(f"gather 1-D n={n}", src, {"x": s.randn((max(n, 1),)), "i": s.randint((n,), 0, max(n, 1))},
           lambda x, i: torch.gather(x, 0, i))
for dt in [np.float64, np.int32, np.bool_, np.float16]:
    x = s.randn((4, 6)).astype(dt) if dt != np.bool_ else s.randn((4, 6)) > 0
    s.case(f"x.gather(-1, i) {np.dtype(dt).name}", fn("    return x.gather(-1, i)\n"),
           {"x": x, "i": s.randint((4, 3), 0, 6)}, lambda x, i: x.gather(-1, i))
s.case("gather dim=1 index smaller than x", fn("    return torch.gather(x, dim=1, index=i)\n"),
       {"x": s.randn((5, 7, 2)), "i": s.randint((3, 4, 2), 0, 7)},
       lambda x, i: torch.gather(x, 1, i))
s.case("gather index out of range", src, {"x": s.randn((5,)), "i": np.array([0, 5], np.int64)},
       None, expect_error="index out of range")
s.case("gather negative index raises", src, {"x": s.randn((5,)), "i": np.array([-1], np.int64)},
       None, expect_error="index out of range")
s.case("take_along_dim", fn("    return torch.take_along_dim(x, i, dim=1)\n"),
       {"x": s.randn((3, 8)), "i": np.argsort(s.randn((3, 8)), axis=1)},
       lambda x, i: torch.take_along_dim(x, i, dim=1))
s.case("take_along_dim broadcast", fn("    return torch.take_along_dim(x, i, 1)\n"),
       {"x": s.randn((3, 8)), "i": s.randint((1, 2), 0, 8)},
       lambda x, i: torch.take_along_dim(x, i, 1))
s.case("take_along_dim flat", fn("    return x.take_along_dim(i)\n"),
       {"x": s.randn((3, 4)), "i": s.randint((5,), 0, 12)}, lambda x, i: x.take_along_dim(i))

s.case("take negative wraps", fn("    return torch.take(x, i)\n"),
       {"x": s.randn((3, 4)), "i": s.randint((2, 5), -12, 12)}, torch.take)
s.case("take out of range", fn("    return x.take(i)\n"),
       {"x": s.randn((3, 4)), "i": np.array([12], np.int64)}, None, expect_error="index out of range")

# --- index_select / embedding / one_hot ------------------------------------------------------
s.case("index_select dim 1 int32 index", fn("    return torch.index_select(x, 1, i)\n"),
       {"x": s.randn((3, 7, 2)), "i": s.randint((9,), 0, 7, np.int32)},
       lambda x, i: torch.index_select(x, 1, i))
s.case("index_select int data dim -1", fn("    return x.index_select(-1, i)\n"),
       {"x": s.randint((4, 5), -9, 9), "i": s.randint((2,), 0, 5)},
       lambda x, i: x.index_select(-1, i))
s.case("embedding", fn("    return F.embedding(i, x, padding_idx=0)\n"),
       {"x": s.randn((11, 4)), "i": s.randint((2, 7), 0, 11)},
       lambda x, i: F.embedding(i, x, padding_idx=0))
s.case("embedding out of range", fn("    return F.embedding(i, x)\n"),
       {"x": s.randn((11, 4)), "i": np.array([3, 11], np.int64)}, None,
       expect_error="index out of range")
s.case("embedding max_norm", fn("    return F.embedding(i, x, max_norm=1.0)\n"),
       {"x": s.randn((11, 4)), "i": np.array([3], np.int64)}, None,
       expect_error="max_norm is not supported")
s.case("one_hot", fn("    return F.one_hot(i, 5)\n", "i: Tensor"),
       {"i": s.randint((3, 4), 0, 5)}, lambda i: F.one_hot(i, 5))
s.case("one_hot num_classes=-1", fn("    return F.one_hot(i)\n", "i: Tensor"),
       {"i": s.randint((3,), 0, 5)}, None, expect_error="static shapes")
s.case("one_hot out of range", fn("    return F.one_hot(i, num_classes=3)\n", "i: Tensor"),
       {"i": np.array([0, 3], np.int64)}, None, expect_error="index out of range")

# --- scatter family ---------------------------------------------------------------------------
P3 = "x: Tensor, i: Tensor, v: Tensor"
s.case("scatter src dim 0 unique", fn("    return torch.scatter(x, 0, i, v)\n", P3),
       {"x": s.randn((6, 3)), "i": perm_rows(6, 3, 4), "v": s.randn((5, 3))},
       lambda x, i, v: torch.scatter(x, 0, i, v))
s.case("scatter value int data", fn("    return x.scatter(1, i, 7)\n"),
       {"x": s.randint((4, 5), -9, 9), "i": perm_rows(5, 4, 2).T.copy()},
       lambda x, i: x.scatter(1, i, 7))
for n in [0, 1, 7, 1023]:
    s.case(f"scatter_add duplicates n={n}", fn("    return x.scatter_add(0, i, v)\n", P3),
           {"x": s.randn((5,)), "i": s.randint((n,), 0, 5), "v": s.randn((n,))},
           lambda x, i, v: x.scatter_add(0, i, v), rtol=1e-5, atol=1e-5)
s.case("scatter_add_ in place i32", fn("    x.scatter_add_(1, i, v)\n    return x\n", P3),
       {"x": s.randint((3, 4), -5, 5, np.int32), "i": s.randint((3, 6), 0, 4),
        "v": s.randint((3, 6), -5, 5, np.int32)},
       lambda x, i, v: x.scatter_add_(1, i, v))
for red in ["sum", "prod", "mean", "amax", "amin"]:
    for self_ in [True, False]:
        expr = f"torch.scatter_reduce(x, 0, i, v, '{red}', include_self={self_})"
        dup = red in ("sum", "mean")
        i = s.randint((6, 2), 0, 4) if dup else perm_rows(4, 2, 3)
        s.case(f"scatter_reduce {red} include_self={self_}", fn(f"    return {expr}\n", P3),
               {"x": s.randn((4, 2)), "i": i, "v": s.randn((6, 2))},
               lambda x, i, v, red=red, self_=self_:
                   torch.scatter_reduce(x, 0, i, v, red, include_self=self_),
               rtol=1e-5, atol=1e-5)
s.case("scatter_reduce mean int floors", fn("    return x.scatter_reduce(0, i, v, 'mean')\n", P3),
       {"x": s.randint((4,), -9, 9), "i": s.randint((9,), 0, 4), "v": s.randint((9,), -9, 9)},
       lambda x, i, v: x.scatter_reduce(0, i, v, "mean"))
s.case("scatter_reduce amax NaN", fn("    return x.scatter_reduce(0, i, v, 'amax')\n", P3),
       {"x": np.array([1, 2, 3], np.float32), "i": np.array([0, 2], np.int64),
        "v": np.array([np.nan, -np.inf], np.float32)},
       lambda x, i, v: x.scatter_reduce(0, i, v, "amax"))
s.case("scatter out of range", fn("    return x.scatter(0, i, v)\n", P3),
       {"x": s.randn((3,)), "i": np.array([3], np.int64), "v": s.randn((1,))}, None,
       expect_error="index out of range")
s.case("index_add alpha", fn("    return x.index_add(1, i, v, alpha=2)\n", P3),
       {"x": s.randn((3, 5)), "i": np.array([4, 0, 4], np.int64), "v": s.randn((3, 3))},
       lambda x, i, v: x.index_add(1, i, v, alpha=2))
s.case("index_copy", fn("    return x.index_copy(0, i, v)\n", P3),
       {"x": s.randn((5, 2)), "i": np.array([4, 1], np.int64), "v": s.randn((2, 2))},
       lambda x, i, v: x.index_copy(0, i, v))
s.case("index_fill_", fn("    x.index_fill_(1, i, -1.5)\n    return x\n"),
       {"x": s.randn((2, 5)), "i": np.array([0, 3], np.int64)},
       lambda x, i: x.index_fill_(1, i, -1.5))

# --- index_reduce and masked_scatter ---------------------------------------------------------
for red in ["prod", "mean", "amax", "amin"]:
    for self_ in [True, False]:
        for dt, shape, dim, k in [(np.float32, (5, 3), 0, 7), (np.float64, (2, 7), 1, 1),
                                  (np.int32, (4, 1), 0, 9), (np.int64, (7,), 0, 0)]:
            x = s.randint(shape, -4, 5, dt) if dt in (np.int32, np.int64) else s.randn(shape, dt)
            vshape = list(shape)
            vshape[dim] = k
            v = s.randint(vshape, -4, 5, dt) if dt in (np.int32, np.int64) else s.randn(vshape, dt)
            expr = f"x.index_reduce({dim}, i, v, '{red}', include_self={self_})"
            s.case(f"index_reduce {red} include_self={self_} {np.dtype(dt).name} {shape}",
                   fn(f"    return {expr}\n", P3),
                   {"x": x, "i": s.randint((k,), 0, shape[dim]), "v": v},
                   lambda x, i, v, red=red, self_=self_, dim=dim:
                       x.index_reduce(dim, i, v, red, include_self=self_),
                   rtol=1e-5, atol=1e-5)
s.case("index_reduce_ in place amax NaN", fn("    x.index_reduce_(0, i, v, 'amax')\n    return x\n", P3),
       {"x": np.array([1, 2, 3], np.float32), "i": np.array([0, 2, 0], np.int64),
        "v": np.array([np.nan, -np.inf, 5], np.float32)},
       lambda x, i, v: x.index_reduce_(0, i, v, "amax"))
s.case("index_reduce bad reduce", fn("    return x.index_reduce(0, i, v, 'sum')\n", P3),
       {"x": s.randn((3,)), "i": np.array([0], np.int64), "v": s.randn((1,))}, None,
       expect_error="reduce must be 'prod', 'mean', 'amax' or 'amin'")
s.case("index_reduce out of range", fn("    return x.index_reduce(0, i, v, 'amin')\n", P3),
       {"x": s.randn((3,)), "i": np.array([3], np.int64), "v": s.randn((1,))}, None,
       expect_error="index out of range")
PM = "x: Tensor, m: Tensor, v: Tensor"
for shape, mshape, dt in [((3, 5), (3, 5), np.float32), ((3, 5), (1, 5), np.float64),
                          ((7,), (7,), np.int32), ((1,), (1,), np.bool_), ((0, 4), (0, 4), np.float32),
                          ((), (), np.float32), ((2, 3, 4), (3, 1), np.float16)]:
    m = np.array(s.randint(mshape, 0, 2), dtype=bool)  # np.array: a 0-d shape stays an array
    nm = int(np.broadcast_to(m, shape).sum())
    for extra in [0, 3]:
        src = s.randn((nm + extra,)).astype(dt) if dt != np.bool_ else s.randn((nm + extra,)) > 0
        if extra:
            src = src.reshape(1, -1)  # any shape: read flat
        s.case(f"masked_scatter {shape} mask {mshape} {np.dtype(dt).name} +{extra}",
               fn("    return x.masked_scatter(m, v)\n", PM),
               {"x": np.array(s.randn(shape) * 4, dtype=dt), "m": m, "v": src},
               lambda x, m, v: x.masked_scatter(m, v))
s.case("masked_scatter_ in place", fn("    x.masked_scatter_(m, v)\n    return x * 2.0\n", PM),
       {"x": s.randn((4, 3)), "m": np.array([[True, False, True]] * 4), "v": s.randn((3, 4))},
       lambda x, m, v: x.masked_scatter_(m, v) * 2)
s.case("masked_scatter source too small", fn("    return x.masked_scatter(m, v)\n", PM),
       {"x": s.randn((4,)), "m": np.array([True, False, True, True]), "v": s.randn((2,))}, None,
       expect_error="index out of range")
s.case("masked_scatter source dtype", fn("    return x.masked_scatter(m, v)\n", PM),
       {"x": s.randn((4,)), "m": np.array([True, False, True, True]),
        "v": np.arange(4, dtype=np.int64)}, None, expect_error="same dtype as input")

# --- index_put and advanced subscripts ---------------------------------------------------------
P4 = "x: Tensor, i: Tensor, j: Tensor, v: Tensor"
s.case("index_put accumulate duplicates", fn(
    "    return x.index_put((i, j), v, accumulate=True)\n", P4),
    {"x": s.randn((4, 5)), "i": s.randint((9,), -4, 4), "j": s.randint((9,), 0, 5),
     "v": s.randn((9,))},
    lambda x, i, j, v: x.index_put((i, j), v, accumulate=True), rtol=1e-5, atol=1e-5)
s.case("index_put_ bool data", fn("    x.index_put_((i,), v)\n    return x\n", "x: Tensor, i: Tensor, v: Tensor"),
       {"x": s.randn((6, 2)) > 0, "i": np.array([5, -6], np.int64), "v": np.array([True, False])},
       lambda x, i, v: x.index_put_((i,), v))
for n in [0, 1, 7, 1023]:
    s.case(f"x[i] rows n={n}", fn("    return x[i]\n"),
           {"x": s.randn((9, 3)), "i": s.randint((n,), -9, 9)}, lambda x, i: x[i])
s.case("x[:, i] 2-D index int32", fn("    return x[:, i]\n"),
       {"x": s.randn((3, 8, 2)), "i": s.randint((2, 3), -8, 8, np.int32)}, lambda x, i: x[:, i.long()])
s.case("x[i, j] broadcast", fn("    return x[i, j]\n", "x: Tensor, i: Tensor, j: Tensor"),
       {"x": s.randn((4, 5, 3)), "i": s.randint((2, 1), -4, 4), "j": s.randint((3,), 0, 5)},
       lambda x, i, j: x[i, j])
s.case("x[:, i, j] adjacent stays in place", fn("    return x[:, i, j]\n", "x: Tensor, i: Tensor, j: Tensor"),
       {"x": s.randn((2, 4, 5, 3)), "i": s.randint((6,), 0, 4), "j": s.randint((6,), 0, 5)},
       lambda x, i, j: x[:, i, j])
s.case("x[i, :, j] separated goes first", fn("    return x[i, :, j]\n", "x: Tensor, i: Tensor, j: Tensor"),
       {"x": s.randn((4, 2, 5)), "i": s.randint((3,), 0, 4), "j": s.randint((3,), 0, 5)},
       lambda x, i, j: x[i, :, j])
s.case("x[None, 1:, i] with slices, int data", fn("    return x[None, 1:, i]\n"),
       {"x": s.randint((4, 5), -9, 9), "i": s.randint((2,), 0, 5)}, lambda x, i: x[None, 1:, i])
s.case("x[..., i] ellipsis", fn("    return x[..., i]\n"),
       {"x": s.randn((2, 3, 4)), "i": s.randint((5,), 0, 4)}, lambda x, i: x[..., i])
s.case("x[0, i] int then tensor", fn("    return x[0, i]\n"),
       {"x": s.randn((2, 6)), "i": s.randint((3,), 0, 6)}, lambda x, i: x[0, i])
s.case("x[i, j] component out of range", fn("    return x[i, j]\n", "x: Tensor, i: Tensor, j: Tensor"),
       {"x": s.randn((4, 5)), "i": np.array([0], np.int64), "j": np.array([5], np.int64)},
       None, expect_error="index out of range")
s.case("x[i] negative out of range", fn("    return x[i]\n"),
       {"x": s.randn((4,)), "i": np.array([-5], np.int64)}, None, expect_error="index out of range")
s.case("x[i] = v", fn("    x[i] = v\n    return x\n", "x: Tensor, i: Tensor, v: Tensor"),
       {"x": s.randn((6, 3)), "i": np.array([4, -1, 0], np.int64), "v": s.randn((3,))},
       lambda x, i, v: x.index_put_((i,), v))
s.case("x[:, i] += v", fn("    x[:, i] += v\n    return x\n", "x: Tensor, i: Tensor, v: Tensor"),
       {"x": s.randn((2, 6)), "i": np.array([5, 0], np.int64), "v": s.randn((2, 2))},
       lambda x, i, v: x.__setitem__((slice(None), i), x[:, i] + v) or x)
s.case("x[i, :, j] = 0 int32", fn("    x[i, :, j] = 0\n    return x\n", "x: Tensor, i: Tensor, j: Tensor"),
       {"x": s.randint((3, 2, 4), -9, 9, np.int32), "i": np.array([2, 0], np.int64),
        "j": np.array([1, 3], np.int64)},
       lambda x, i, j: x.__setitem__((i, slice(None), j), 0) or x)
s.case("x[mask] is data-dependent", fn("    return x[x > 0]\n", "x: Tensor"),
       {"x": s.randn((4,))}, None, expect_error="torch.where")
s.run()
