"""The spatial nn ops of issue 13 (pad, interpolate, pixel_shuffle, conv1d,
conv_transpose, 1-D and adaptive pools) against PyTorch.

Cases are grouped: one def returns a tuple of many expressions over the same
inputs, so the file stays fast (one kiln process per group and backend)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kiln_torch import Suite, np, torch  # noqa: E402

F = torch.nn.functional
s = Suite()


def group(name, inputs, items, **tol):
    """items: (expr, ref) pairs; ref takes the inputs positionally."""
    params = ", ".join(f"{a}: Tensor" for a in inputs)
    body = ",\n        ".join(e for e, _ in items)
    src = f"def f({params}):\n    F = torch.nn.functional\n    return (\n        {body},\n    )\n"
    refs = [r for _, r in items]
    s.case(name, src, inputs, lambda *a: tuple(r(*a) for r in refs), **tol)


def error(expr, msg, shape=(1, 2, 3, 4)):
    src = f"def f(x: Tensor) -> Tensor:\n    F = torch.nn.functional\n    return {expr}\n"
    s.case(f"error: {expr}", src, {"x": s.randn(shape)}, None, expect_error=msg,
           backends=("llvm",))


# --- F.interpolate --------------------------------------------------------------------------
TOL = {np.float32: dict(rtol=1e-5, atol=2e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}
for dt in [np.float32, np.float64]:
    tag = np.dtype(dt).name
    for mode, shapes in [("nearest", [(2, 3, 7), (1, 2, 5, 7), (1, 1, 2, 3, 5)]),
                         ("nearest-exact", [(2, 3, 7), (1, 2, 5, 7)]),
                         ("linear", [(2, 3, 7)]), ("bilinear", [(2, 3, 5, 7)]),
                         ("bicubic", [(1, 2, 5, 7)]), ("trilinear", [(1, 2, 3, 4, 5)]),
                         ("area", [(2, 3, 7), (1, 2, 7, 9)])]:
        corner_opts = [None] if mode in ("nearest", "nearest-exact", "area") else [False, True]
        if dt == np.float64:  # the index math is the same; f64 checks the weights' precision
            if mode.startswith("nearest"):
                continue
            shapes = shapes[:1]
        for shape in shapes:
            nd = len(shape) - 2
            items = []
            for ac in corner_opts:
                acs = "" if ac is None else f", align_corners={ac}"
                for size in [1, 7, 10, 2 * shape[-1]]:
                    size_arg = [size + i for i in range(nd)]
                    items.append((f"F.interpolate(x, size={size_arg}, mode='{mode}'{acs})",
                                  lambda x, sz=size_arg, m=mode, a=ac: F.interpolate(
                                      x, size=sz, mode=m, align_corners=a)))
                for sf in [0.5, 1.7, 3]:
                    for rec in [None, True]:
                        items.append((f"F.interpolate(x, scale_factor={sf}, mode='{mode}'{acs}, "
                                      f"recompute_scale_factor={rec})",
                                      lambda x, sf=sf, m=mode, a=ac, r=rec: F.interpolate(
                                          x, scale_factor=sf, mode=m, align_corners=a,
                                          recompute_scale_factor=r)))
            group(f"interpolate {mode} {shape} {tag}", {"x": s.randn(shape, dt)}, items, **TOL[dt])
group("interpolate large", {"x": s.randn((2, 3, 33, 1023))}, [
    ("F.interpolate(x, size=(17, 700), mode='bilinear')",
     lambda x: F.interpolate(x, size=(17, 700), mode="bilinear")),
    ("F.interpolate(x, size=(40, 1500), mode='bicubic', align_corners=True)",
     lambda x: F.interpolate(x, size=(40, 1500), mode="bicubic", align_corners=True)),
    ("F.interpolate(x, size=(40, 1500))", lambda x: F.interpolate(x, size=(40, 1500))),
    ("F.interpolate(x, scale_factor=0.37, mode='nearest-exact')",
     lambda x: F.interpolate(x, scale_factor=0.37, mode="nearest-exact")),
], rtol=1e-5, atol=1e-5)
group("interpolate spellings", {"x": s.randn((1, 2, 5, 8))}, [
    ("F.interpolate(x, scale_factor=(2, 0.5))", lambda x: F.interpolate(x, scale_factor=(2, 0.5))),
    ("F.interpolate(x, (3, 11), None, 'bilinear', True)",
     lambda x: F.interpolate(x, (3, 11), None, "bilinear", True)),
    ("F.upsample(x, scale_factor=2, mode='bilinear', align_corners=True)",
     lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)),
    ("F.upsample_nearest(x, size=9)", lambda x: F.interpolate(x, size=9)),
    ("F.upsample_bilinear(x, size=[5, 6])",
     lambda x: F.interpolate(x, size=(5, 6), mode="bilinear", align_corners=True)),
    ("F.interpolate(x, size=(5, 8), mode='bicubic')",
     lambda x: F.interpolate(x, size=(5, 8), mode="bicubic")),
])
group("interpolate batch 0", {"x": s.randn((0, 2, 3, 4))}, [
    ("F.interpolate(x, size=(4, 9), mode='bilinear')",
     lambda x: F.interpolate(x, size=(4, 9), mode="bilinear")),
    ("F.interpolate(x, scale_factor=2)", lambda x: F.interpolate(x, scale_factor=2)),
])
group("interpolate nearest NaN/Inf", {"x": s.special()[:8].reshape(1, 1, 2, 4)}, [
    ("F.interpolate(x, size=(4, 9))", lambda x: F.interpolate(x, size=(4, 9))),
    ("F.interpolate(x, size=(3, 3))", lambda x: F.interpolate(x, size=(3, 3))),
])
group("interpolate nearest u8", {"x": s.randint((1, 2, 3, 5), 0, 200, np.uint8)}, [
    ("F.interpolate(x, size=(4, 11))", lambda x: F.interpolate(x, size=(4, 11))),
    ("F.interpolate(x, scale_factor=0.5)", lambda x: F.interpolate(x, scale_factor=0.5)),
])

# --- F.pad ----------------------------------------------------------------------------------
PADS = {
    (7,): [("constant", p) for p in [(1, 2), (0, 0), (-2, 3), (-1, -1)]],
    (2, 7): [("reflect", p) for p in [(1, 2), (6, 6), (-2, 3)]],
    (2, 3, 7): [("constant", p) for p in [(1, 1, 2, 0), (0, 0, 0, 0, 1, 1), (-1, 2, 3, -1)]]
    + [("replicate", p) for p in [(3, 1), (0, 9), (-2, 4)]]
    + [("circular", p) for p in [(3, 1), (7, 7), (-2, 3), (4, -1)]]
    + [("reflect", p) for p in [(-2, 3), (0, 6)]],
    (3, 5, 7): [("replicate", (1, 2, 3, 4)), ("reflect", (6, 0, 0, 4))],
    (1, 2, 5, 7): [("reflect", (1, 2, 3, 4)), ("reflect", (0, 6, 4, 0)),
                   ("circular", (1, 2, 3, 4)), ("replicate", (0, 0, 5, 1))],
    (1, 2, 3, 4, 5): [("reflect", (1, 1, 2, 2, 1, 1)), ("circular", (1, 2, 1, 1, 2, 1)),
                      ("replicate", (2, 1, 0, 2, 1, 3)), ("constant", (1, 0, 0, 2, 1, 1))],
}
for dt in [np.float32, np.float64]:
    for shape, pads in PADS.items():
        if dt == np.float64 and shape not in [(2, 3, 7), (1, 2, 5, 7)]:
            continue
        group(f"pad {shape} {np.dtype(dt).name}", {"x": s.randn(shape, dt)},
              [(f"F.pad(x, {list(p)}, mode='{m}')", lambda x, p=p, m=m: F.pad(x, p, mode=m))
               for m, p in pads])
group("pad misc f32", {"x": s.randn((3, 4))}, [
    ("F.pad(x, (2, 1, 1, 0), value=-1.5)", lambda x: F.pad(x, (2, 1, 1, 0), value=-1.5)),
    ("F.pad(x, [1, 1], 'constant', float('inf'))",
     lambda x: F.pad(x, [1, 1], "constant", float("inf"))),
])
group("pad int", {"x": s.randint((2, 5), -9, 9)}, [
    ("F.pad(x, [1, 2], 'constant', 7)", lambda x: F.pad(x, [1, 2], "constant", 7)),
    ("F.pad(x, [2, 2], mode='reflect')",
     lambda x: F.pad(x.double(), [2, 2], mode="reflect").long()),
    ("F.pad(x[None], [1, 0, 2, 3], mode='replicate')",
     lambda x: F.pad(x[None].double(), [1, 0, 2, 3], mode="replicate").long()),
])
group("pad batch 0", {"x": s.randn((0, 2, 5))}, [
    ("F.pad(x, [1, 1], mode='replicate')", lambda x: F.pad(x, [1, 1], mode="replicate")),
    ("F.pad(x, [1, 2])", lambda x: F.pad(x, [1, 2])),
])
group("pad large and special", {"x": s.randn((2, 2, 1023)), "y": s.special().reshape(1, 1, -1)}, [
    ("F.pad(x, [3, 2, 1, 1], mode='reflect')",
     lambda x, y: F.pad(x, [3, 2, 1, 1], mode="reflect")),
    ("F.pad(y, [2, 3], mode='circular')", lambda x, y: F.pad(y, [2, 3], mode="circular")),
    ("F.pad(y, [2, 3], mode='reflect')", lambda x, y: F.pad(y, [2, 3], mode="reflect")),
])

# --- pixel_shuffle --------------------------------------------------------------------------
for shape, r in [((1, 8, 3, 5), 2), ((2, 9, 1, 7), 3), ((27, 2, 3), 3), ((2, 1, 4, 3, 3), 1),
                 ((0, 4, 2, 2), 2), ((2, 12, 6, 4), 2)]:
    items = [(f"F.pixel_shuffle(x, {r})", lambda x, r=r: F.pixel_shuffle(x, r))]
    items.append((f"F.pixel_unshuffle(F.pixel_shuffle(x, {r}), {r})", lambda x: x))
    # (PyTorch 1.13 returns an empty input unchanged from pixel_unshuffle.)
    if shape[-1] % r == 0 and shape[-2] % r == 0 and shape[0] > 0:
        items.append((f"torch.pixel_unshuffle(x, downscale_factor={r})",
                      lambda x, r=r: F.pixel_unshuffle(x, r)))
    group(f"pixel_shuffle {shape} {r}", {"x": s.randint(shape, -50, 50)}, items)

# --- conv1d / conv_transpose ----------------------------------------------------------------
CTOL = {np.float32: dict(rtol=1e-4, atol=1e-4), np.float64: {}}
for dt in [np.float32, np.float64]:
    for xs, ws, st, p, d, g in [((2, 4, 7), (6, 2, 3), 1, 0, 1, 2),
                                ((1, 3, 1023), (5, 3, 4), 3, 2, 2, 1),
                                ((3, 7), (2, 3, 1), 1, "'same'", 1, 1),
                                ((2, 2, 9), (4, 2, 4), 1, "'same'", 2, 1),
                                ((0, 2, 5), (3, 2, 2), 1, "'valid'", 1, 1)][:5 if dt == np.float32 else 2]:
        pp = p.strip("'") if isinstance(p, str) else p
        group(f"conv1d {xs} {ws} s{st} p{p} d{d} g{g} {np.dtype(dt).name}",
              {"x": s.randn(xs, dt), "w": s.randn(ws, dt), "b": s.randn((ws[0],), dt)}, [
                  (f"F.conv1d(x, w, b, stride={st}, padding={p}, dilation={d}, groups={g})",
                   lambda x, w, b, st=st, p=pp, d=d, g=g: F.conv1d(x, w, b, st, p, d, g)),
                  (f"torch.conv1d(x, w, None, {st}, {p}, {d}, {g})",
                   lambda x, w, b, st=st, p=pp, d=d, g=g: F.conv1d(x, w, None, st, p, d, g))],
              **CTOL[dt])

for dt in [np.float32, np.float64]:
    for n, xs, ws, st, p, op, g, d in [
            (1, (2, 4, 7), (4, 3, 3), 2, 1, 1, 1, 1),
            (1, (4, 5), (4, 1, 2), 3, 0, 2, 2, 1),
            (1, (1, 2, 1), (2, 2, 5), 1, 2, 0, 1, 1),
            (2, (2, 4, 5, 7), (4, 2, 3, 3), 1, 0, 0, 1, 1),
            (2, (1, 4, 5, 6), (4, 3, 3, 2), (2, 3), (1, 0), (1, 2), 2, 1),
            (2, (2, 3, 4), (2, 3, 2, 3), 2, 1, 0, 1, (2, 1)),
            (2, (1, 2, 3, 3), (2, 1, 3, 3), 3, 4, 1, 2, 2),
            (2, (0, 2, 3, 3), (2, 3, 2, 2), 2, 0, 0, 1, 1)][::1 if dt == np.float32 else 2]:
        fn = F.conv_transpose1d if n == 1 else F.conv_transpose2d
        group(f"conv_transpose{n}d {xs} {ws} s{st} p{p} op{op} g{g} d{d} {np.dtype(dt).name}",
              {"x": s.randn(xs, dt), "w": s.randn(ws, dt), "b": s.randn((ws[1] * g,), dt)}, [
                  (f"F.conv_transpose{n}d(x, w, b, stride={st}, padding={p}, "
                   f"output_padding={op}, groups={g}, dilation={d})",
                   lambda x, w, b, fn=fn, st=st, p=p, op=op, g=g, d=d:
                   fn(x, w, b, st, p, op, g, d)),
                  (f"torch.conv_transpose{n}d(x, w, None, {st}, {p}, {op}, {g}, {d})",
                   lambda x, w, b, fn=fn, st=st, p=p, op=op, g=g, d=d:
                   fn(x, w, None, st, p, op, g, d))],
              **CTOL[dt])

# --- pools ------------------------------------------------------------------------------
POOL1 = [
    ("F.max_pool1d(x, 3)", lambda x: F.max_pool1d(x, 3)),
    ("F.max_pool1d(x, 3, stride=2, padding=1, dilation=2, ceil_mode=True)",
     lambda x: F.max_pool1d(x, 3, 2, 1, 2, True)),
    ("F.avg_pool1d(x, 4, 2, 2, count_include_pad=False)",
     lambda x: F.avg_pool1d(x, 4, 2, 2, count_include_pad=False)),
    ("torch.avg_pool1d(x, 2)", lambda x: F.avg_pool1d(x, 2)),
    ("F.adaptive_avg_pool1d(x, 4)", lambda x: F.adaptive_avg_pool1d(x, 4)),
    ("F.adaptive_avg_pool1d(x, 1)", lambda x: F.adaptive_avg_pool1d(x, 1)),
    ("F.adaptive_avg_pool1d(x, 11)", lambda x: F.adaptive_avg_pool1d(x, 11)),
    ("F.adaptive_max_pool1d(x, 4)", lambda x: F.adaptive_max_pool1d(x, 4)),
    ("F.adaptive_max_pool1d(x, 7)", lambda x: F.adaptive_max_pool1d(x, 7)),
    ("F.adaptive_max_pool1d(x[0], 1)", lambda x: F.adaptive_max_pool1d(x[0], 1)),
]
POOL2 = []
for out in [(1, 1), (3, 4), (7, 9), (2, 3), (5, 1), (7, None), 4]:
    POOL2.append((f"F.adaptive_avg_pool2d(x, {out})",
                  lambda x, o=out: F.adaptive_avg_pool2d(x, o)))
    POOL2.append((f"F.adaptive_max_pool2d(x, {out})",
                  lambda x, o=out: F.adaptive_max_pool2d(x, o)))
for dt in [np.float32, np.float64]:
    group(f"pools 1d {np.dtype(dt).name}", {"x": s.randn((2, 3, 11), dt)}, POOL1)
    group(f"pools 2d {np.dtype(dt).name}", {"x": s.randn((2, 3, 7, 9), dt)}, POOL2)
group("pools misc", {"x": s.randint((2, 3, 5, 7), -50, 50), "y": s.special().reshape(1, 1, -1),
                     "z": s.randn((0, 2, 5, 7)), "w": s.randn((1, 2, 1023))}, [
    ("F.adaptive_max_pool2d(x, (2, 3))",
     lambda x, y, z, w: F.adaptive_max_pool2d(x.double(), (2, 3)).long()),
    ("F.adaptive_max_pool1d(y, 3)", lambda x, y, z, w: F.adaptive_max_pool1d(y, 3)),
    ("F.adaptive_avg_pool2d(z, (2, 3))", lambda x, y, z, w: F.adaptive_avg_pool2d(z, (2, 3))),
    ("F.max_pool1d(w, 5, 3)", lambda x, y, z, w: F.max_pool1d(w, 5, 3)),
    ("F.adaptive_avg_pool1d(w, 10)", lambda x, y, z, w: F.adaptive_avg_pool1d(w, 10)),
], rtol=1e-5, atol=1e-6)

# --- unfold / fold ---------------------------------------------------------------------------
for xs, k, d, p, st in [((2, 3, 5, 7), 2, 1, 0, 1), ((1, 2, 6, 5), (3, 2), (1, 2), (1, 0), (2, 1)),
                        ((3, 4, 4), 3, 1, 1, 2), ((1, 1, 3, 3), 3, 1, 0, 1), ((0, 2, 4, 4), 2, 1, 0, 2)]:
    for dt in [np.float32, np.float64][:2 if xs[0] == 1 else 1]:
        group(f"unfold/fold {xs} k{k} d{d} p{p} s{st} {np.dtype(dt).name}", {"x": s.randn(xs, dt)}, [
            (f"F.unfold(x, {k}, {d}, {p}, {st})",
             lambda x, k=k, d=d, p=p, st=st: F.unfold(x, k, d, p, st)),
            (f"F.fold(F.unfold(x, {k}, {d}, {p}, {st}), {list(xs[-2:])}, {k}, {d}, {p}, {st})",
             lambda x, k=k, d=d, p=p, st=st, o=xs[-2:]: F.fold(F.unfold(x, k, d, p, st), o, k, d, p, st))])

# --- errors ---------------------------------------------------------------------------------
for expr, msg in [
        ("F.interpolate(x, size=5, mode='cubic')", "unknown mode 'cubic'"),
        ("F.interpolate(x, size=5, mode='linear')", "linear mode needs a 3-D input"),
        ("F.interpolate(x, size=5, align_corners=True)", "align_corners option can only be set"),
        ("F.interpolate(x)", "either size or scale_factor should be defined"),
        ("F.interpolate(x, size=5, scale_factor=2)", "only one of size or scale_factor"),
        ("F.interpolate(x, size=[5, 6, 7])", "same number of spatial dimensions"),
        ("F.pad(x[0], [4, 0], mode='reflect')", "padding size should be less than"),
        ("F.pad(x, [1, 1], mode='wrap')", "unknown padding mode 'wrap'"),
        ("F.pad(x, [1, 2, 3])", "padding length must be divisible by 2"),
        ("F.pad(x[0, 0, 0], [1, 1], mode='reflect')", "needs a 2-D or 3-D input"),
        ("F.pixel_shuffle(x, 2)", "divisible by the square of upscale_factor"),
        ("F.conv1d(x, x)", "2-D (C, L) or 3-D (N, C, L) input"),
        ("F.adaptive_max_pool2d(x, (2, 3), return_indices=True)", "return_indices=True"),
        ("F.unfold(x, 5)", "the kernel does not fit"),
        ("F.fold(x[0], (3, 3), 2)", "fold expects an input of shape"),
]:
    error(expr, msg)
s.run()
