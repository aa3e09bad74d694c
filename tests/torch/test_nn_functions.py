"""The neural-net functions of issue 13 (losses, group/instance norm,
scaled_dot_product_attention, distances, small activations) against PyTorch."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kiln_torch import Suite, np, torch  # noqa: E402

F = torch.nn.functional
s = Suite()
F64 = np.float64


def src_of(params, expr):
    sig = ", ".join(f"{p}: Tensor" for p in params)
    return f"def f({sig}) -> Tensor:\n    F = torch.nn.functional\n    return {expr}\n"


# --- pointwise losses, every reduction -----------------------------------------------------
POINTWISE = {
    "F.mse_loss(x, y{})": F.mse_loss,
    "F.l1_loss(x, y{})": F.l1_loss,
    "F.smooth_l1_loss(x, y{})": F.smooth_l1_loss,
    "F.smooth_l1_loss(x, y, beta=0.5{})": lambda x, y, **k: F.smooth_l1_loss(x, y, beta=0.5, **k),
    "F.smooth_l1_loss(x, y, beta=0.0{})": lambda x, y, **k: F.smooth_l1_loss(x, y, beta=0.0, **k),
    "F.huber_loss(x, y{})": F.huber_loss,
    "F.huber_loss(x, y, delta=2.5{})": lambda x, y, **k: F.huber_loss(x, y, delta=2.5, **k),
}
REDS = ["mean", "sum", "none"]


def reductions(expr):
    """One def returning the loss under each reduction (one kiln run checks all three)."""
    return "(" + ", ".join(expr.format(f", reduction='{r}'") for r in REDS) + ")"


def each_reduction(ref):
    return lambda *a, **k: tuple(ref(*a, reduction=r, **k) for r in REDS)


for i, (expr, ref) in enumerate(POINTWISE.items()):
    shapes = [((1,), np.float32), ((7, 3), F64), ((1023,), np.float32), ((0, 4), np.float32)]
    for shape, dt in shapes[i % 2::2]:
        s.case(f"{expr} {shape} {dt.__name__}", src_of("xy", reductions(expr)),
               {"x": s.randn(shape, dt) * 3, "y": s.randn(shape, dt) * 3}, each_reduction(ref))
# NaN/Inf: every pointwise loss in one def (unreduced and mean).
exprs = [e.format(r) for e in POINTWISE for r in ["", ", reduction='none'"]]
s.case("pointwise losses special", src_of("xy", "(" + ", ".join(exprs) + ")"),
       {"x": s.special(), "y": s.special()[::-1].copy()},
       lambda x, y: tuple(ref(x, y, **k) for ref in POINTWISE.values()
                          for k in [{}, {"reduction": "none"}]))
for expr, ref in [("F.mse_loss(x, y{})", F.mse_loss), ("F.l1_loss(x, y{})", F.l1_loss)]:
    s.case(f"{expr} f16", src_of("xy", reductions(expr)),
           {"x": s.randn((7, 5), np.float16), "y": s.randn((7, 5), np.float16)},
           each_reduction(ref), rtol=2e-3, atol=2e-3)
s.case("softsign f16", src_of("x", "F.softsign(x)"), {"x": s.randn((1023,), np.float16) * 3},
       F.softsign, rtol=2e-3, atol=2e-3)
s.case("mse_loss broadcast target", src_of("xy", "F.mse_loss(x, y, reduction='none')"),
       {"x": s.randn((4, 7)), "y": s.randn((7,))}, lambda x, y: (x - y) ** 2)

# --- binary cross entropy -----------------------------------------------------------------
for shape, dt in [((1,), np.float32), ((7, 5), F64), ((1023,), np.float32)]:
    x, y = s.uniform(shape, 0.01, 0.99, dt), s.uniform(shape, 0, 1, dt)
    e = "F.binary_cross_entropy(x, y{})"
    s.case(f"{e} {shape}", src_of("xy", reductions(e)), {"x": x, "y": y},
           each_reduction(F.binary_cross_entropy))
    e = "F.binary_cross_entropy_with_logits(x, y{})"
    s.case(f"{e} {shape}", src_of("xy", reductions(e)), {"x": s.randn(shape, dt) * 5, "y": y},
           each_reduction(F.binary_cross_entropy_with_logits))
e = "F.binary_cross_entropy(x, y, w)"
s.case("bce clamps log at -100", src_of("xyw", e),
       {"x": np.array([0.0, 1.0, 0.0, 1.0, 0.5], np.float32),
        "y": np.array([0.0, 1.0, 1.0, 0.0, 0.3], np.float32), "w": s.uniform((5,), 0, 2)},
       F.binary_cross_entropy)
e = "F.binary_cross_entropy_with_logits(x, y, weight=w, pos_weight=p, reduction='none')"
s.case("bce logits weight pos_weight", src_of("xywp", e),
       {"x": s.randn((6, 7)) * 4, "y": s.uniform((6, 7), 0, 1), "w": s.uniform((1, 7), 0, 2),
        "p": s.uniform((7,), 0.5, 3)},
       lambda x, y, w, p: F.binary_cross_entropy_with_logits(x, y, weight=w, pos_weight=p,
                                                             reduction="none"))
s.case("bce logits extreme", src_of("xy", "F.binary_cross_entropy_with_logits(x, y, reduction='none')"),
       {"x": np.array([-1e4, 1e4, -80, 80, 0, np.nan, np.inf, -np.inf], np.float32),
        "y": np.array([0, 1, 1, 0, 0.5, 1, 0.5, 0.5], np.float32)},
       lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="none"))

# --- nll_loss and cross_entropy with class indices ---------------------------------------------
for n, c in [(1, 1), (7, 7), (3, 1023)]:
    x = s.randn((n, c)) * 2
    t = s.randint((n,), 0, c)
    e = "F.cross_entropy(x, t{})"
    s.case(f"{e} {n}x{c}", src_of("xt", reductions(e)), {"x": x, "t": t},
           each_reduction(F.cross_entropy))
    e = "F.nll_loss(F.log_softmax(x, 1), t{})"
    s.case(f"{e} {n}x{c}", src_of("xt", reductions(e)), {"x": x, "t": t},
           each_reduction(lambda x, t, **k: F.nll_loss(F.log_softmax(x, 1), t, **k)))
for ls in [0.0, 0.2]:
    x, t, w = s.randn((9, 7), F64), s.randint((9,), 0, 7), s.uniform((7,), 0.1, 2, F64)
    t[[1, 4]] = 3  # ignored below
    e = f"F.cross_entropy(x, t, weight=w, ignore_index=3, label_smoothing={ls}{{}})"
    s.case(f"{e} f64", src_of("xtw", reductions(e)), {"x": x, "t": t, "w": w},
           each_reduction(lambda x, t, w, ls=ls, **k: F.cross_entropy(
               x, t, weight=w, ignore_index=3, label_smoothing=ls, **k)))
    e = f"F.cross_entropy(x, t, ignore_index=3, label_smoothing={ls}{{}})"
    s.case(f"{e}", src_of("xt", reductions(e)), {"x": x.astype(np.float32), "t": t},
           each_reduction(lambda x, t, ls=ls, **k: F.cross_entropy(
               x, t, ignore_index=3, label_smoothing=ls, **k)))
e = "F.nll_loss(x, t, w, ignore_index=3{})"
s.case(f"{e}", src_of("xtw", reductions(e)), {"x": x, "t": t, "w": w},
       each_reduction(lambda x, t, w, **k: F.nll_loss(x, t, w, ignore_index=3, **k)))
# (N, C, d1, d2) inputs, a 1-D input with a 0-d target, all targets ignored (0/0 = nan).
x, t = s.randn((2, 5, 3, 4)), s.randint((2, 3, 4), 0, 5)
e = "F.cross_entropy(x, t, label_smoothing=0.1{})"
s.case(f"{e} NCHW", src_of("xt", reductions(e)), {"x": x, "t": t},
       each_reduction(lambda x, t, **k: F.cross_entropy(x, t, label_smoothing=0.1, **k)))
s.case("nll_loss NCHW weight", src_of("xtw", "F.nll_loss(x, t, weight=w)"),
       {"x": x, "t": t, "w": s.uniform((5,), 0.1, 1)}, lambda x, t, w: F.nll_loss(x, t, weight=w))
s.case("cross_entropy 1-D", src_of("xt", "F.cross_entropy(x, t)"),
       {"x": s.randn((7,)), "t": np.array(4, np.int64)}, F.cross_entropy)
s.case("nll_loss all ignored", src_of("xt", "F.nll_loss(x, t)"),
       {"x": s.randn((2, 3)), "t": np.array([-100, -100], np.int64)}, F.nll_loss)
# A class index outside [0, C) is a run-time error on every backend (PyTorch:
# "Target N is out of bounds"); ignore_index, even when out of range, is not.
for expr in ["F.cross_entropy(x, t{})", "F.nll_loss(x, t{})",
             "F.cross_entropy(x, t, label_smoothing=0.1{})", "F.nll_loss(x, t, weight=w{})"]:
    for bad in [5, -1, 1 << 40]:
        e = expr.format(", reduction='none'")
        s.case(f"{e} target {bad}", src_of("xtw", e),
               {"x": s.randn((3, 5)), "t": np.array([0, bad, 2], np.int64), "w": s.randn((5,))},
               None, expect_error="index out of range")
s.case("cross_entropy ignore_index out of range", src_of("xt", reductions("F.cross_entropy(x, t, ignore_index=7{})")),
       {"x": s.randn((4, 3)), "t": np.array([0, 7, 2, 7], np.int64)},
       each_reduction(lambda x, t, **k: F.cross_entropy(x, t, ignore_index=7, **k)))
s.case("nll_loss 1-D target out of range", src_of("xt", "F.nll_loss(x, t)"),
       {"x": s.randn((7,)), "t": np.array(7, np.int64)}, None, expect_error="index out of range")
s.case("cross_entropy -inf logit", src_of("xt", "F.cross_entropy(x, t, reduction='none')"),
       {"x": np.array([[-np.inf, 0, 1], [np.nan, 0, 1]], np.float32),
        "t": np.array([1, 2], np.int64)}, lambda x, t: F.cross_entropy(x, t, reduction="none"))
# Class probabilities.
x, p = s.randn((7, 5, 3)), s.uniform((7, 5, 3), 0, 1)
p = p / p.sum(1, keepdims=True)
e = "F.cross_entropy(x, p, weight=w, label_smoothing=0.3{})"
s.case(f"{e} probs", src_of("xpw", reductions(e)), {"x": x, "p": p, "w": s.uniform((5,), 0.1, 2)},
       each_reduction(lambda x, p, w, **k: F.cross_entropy(x, p, weight=w, label_smoothing=0.3, **k)))
e = "F.cross_entropy(x, p{})"
s.case(f"{e} probs", src_of("xp", reductions(e)), {"x": x[:, :, 0].copy(), "p": p[:, :, 0].copy()},
       each_reduction(F.cross_entropy))

# --- kl_div -----------------------------------------------------------------------------
for lt in [False, True]:
    x = np.log(s.uniform((7, 5), 0.01, 1, F64))
    y = s.uniform((7, 5), 0, 1, F64)
    if lt:
        y = np.log(y)
    e = f"F.kl_div(x, y, log_target={lt}{{}})"
    s.case(e, src_of("xy", reductions(e) [:-1] + ", " + e.format(", reduction='batchmean'") + ")"),
           {"x": x, "y": y},
           lambda x, y, lt=lt: tuple(F.kl_div(x, y, reduction=r, log_target=lt)
                                     for r in REDS + ["batchmean"]))
s.case("kl_div zero target", src_of("xy", "F.kl_div(x, y, reduction='none')"),
       {"x": np.array([-np.inf, 0, 1, np.nan], np.float32), "y": np.array([0, 1, 0.5, 0], np.float32)},
       lambda x, y: F.kl_div(x, y, reduction="none"))

# --- distances ----------------------------------------------------------------------------
for shapes, dim in [(((7, 5), (7, 5)), 1), (((4, 1, 6), (3, 6)), -1), (((1, 7), (1023, 7)), 1),
                    (((3, 5), (3, 5)), 0)]:
    a, b = s.randn(shapes[0]), s.randn(shapes[1])
    e = f"F.cosine_similarity(a, b, dim={dim})"
    s.case(f"{e} {shapes}", src_of("ab", e), {"a": a, "b": b},
           lambda a, b, dim=dim: F.cosine_similarity(a, b, dim=dim))
s.case("cosine_similarity small norms eps", src_of("ab", "torch.cosine_similarity(a, b, 1, 1e-4)"),
       {"a": np.array([[1e-5, 0], [3, 4], [0, 0]], F64), "b": np.array([[1e-5, 0], [3, 4], [1, 0]], F64)},
       lambda a, b: torch.cosine_similarity(a, b, 1, 1e-4))
for p in [2.0, 1.0, 3.0, math.inf, 0.0]:
    ps = p if p != math.inf else "math.inf"
    e = f"(F.pairwise_distance(a, b, p={ps}), F.pairwise_distance(a, b, {ps}, 1e-3, True))"
    s.case(e, "import math\n" + src_of("ab", e), {"a": s.randn((7, 5)), "b": s.randn((5,))},
           lambda a, b, p=p: (F.pairwise_distance(a, b, p=p),
                              F.pairwise_distance(a, b, p, 1e-3, True)))
s.case("pairwise_distance 1-D", src_of("ab", "torch.pairwise_distance(a, b)"),
       {"a": s.randn((1023,), F64), "b": s.randn((1023,), F64)}, torch.pairwise_distance)
for p in [2.0, 1.0, 3.0]:
    e = f"F.normalize(x, p={p}, dim=-1)"
    s.case(e, src_of("x", e), {"x": s.randn((7, 5))}, lambda x, p=p: F.normalize(x, p=p, dim=-1))
s.case("normalize zeros", src_of("x", "F.normalize(x)"), {"x": np.zeros((2, 3), np.float32)},
       F.normalize)

# --- group_norm and instance_norm ---------------------------------------------------------
for shape, groups, dt in [((1, 6, 5), 3, np.float32), ((7, 4, 3, 3), 2, F64), ((2, 7), 7, np.float32),
                          ((2, 8, 1023), 1, np.float32), ((0, 4, 3), 2, np.float32)]:
    x = s.randn(shape, dt) * 3 + 1
    c = shape[1]
    e = f"(F.group_norm(x, {groups}), F.group_norm(x, {groups}, w, b, eps=1e-3))"
    s.case(f"{e} {shape}", src_of("xwb", e), {"x": x, "w": s.randn((c,), dt), "b": s.randn((c,), dt)},
           lambda x, w, b, g=groups: (F.group_norm(x, g), F.group_norm(x, g, w, b, eps=1e-3)),
           rtol=1e-4, atol=1e-5)
s.case("torch.group_norm", src_of("x", "torch.group_norm(x, 2, None, None, 1e-3, True)"),
       {"x": s.randn((3, 4, 5))}, lambda x: torch.group_norm(x, 2, None, None, 1e-3, True),
       rtol=1e-4, atol=1e-5)
for shape, dt in [((1, 3, 5), np.float32), ((7, 2, 3, 4), F64), ((2, 3, 1023), np.float32)]:
    x, c = s.randn(shape, dt) * 2 - 1, shape[1]
    e = ("(F.instance_norm(x), F.instance_norm(x, weight=w, bias=b, eps=1e-3), "
         "F.instance_norm(x, m, v, w, b, use_input_stats=False))")
    s.case(f"{e} {shape}", src_of("xmvwb", e),
           {"x": x, "m": s.randn((c,), dt), "v": s.uniform((c,), 0.5, 2, dt), "w": s.randn((c,), dt),
            "b": s.randn((c,), dt)},
           lambda x, m, v, w, b: (F.instance_norm(x), F.instance_norm(x, weight=w, bias=b, eps=1e-3),
                                  F.instance_norm(x, m, v, w, b, use_input_stats=False)),
           rtol=1e-4, atol=1e-5)


# --- scaled_dot_product_attention (PyTorch 1.13 lacks it: its documented math) ----------------
def sdpa_ref(q, k, v, attn_mask=None, is_causal=False, scale=None):
    L, S = q.size(-2), k.size(-2)
    sf = 1 / math.sqrt(q.size(-1)) if scale is None else scale
    bias = torch.zeros(L, S, dtype=q.dtype)
    if is_causal:
        bias.masked_fill_(torch.ones(L, S, dtype=torch.bool).tril(0).logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            bias = bias.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            bias = bias + attn_mask
    return torch.softmax(q @ k.transpose(-2, -1) * sf + bias, dim=-1) @ v


for (b, h, L, S, E, Ev), dt in [((1, 1, 1, 1, 4, 4), np.float32), ((2, 3, 7, 5, 8, 6), F64),
                                 ((1, 2, 33, 33, 16, 16), np.float32)]:
    q, k, v = s.randn((b, h, L, E), dt), s.randn((b, h, S, E), dt), s.randn((b, h, S, Ev), dt)
    s.case(f"sdpa {q.shape}", src_of("qkv", "F.scaled_dot_product_attention(q, k, v)"),
           {"q": q, "k": k, "v": v}, sdpa_ref, rtol=1e-4, atol=1e-5)
    if L == S:
        e = "F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)"
        s.case(f"sdpa causal {q.shape}", src_of("qkv", e), {"q": q, "k": k, "v": v},
               lambda q, k, v: sdpa_ref(q, k, v, is_causal=True, scale=0.3), rtol=1e-4, atol=1e-5)
    # A padding mask broadcast over heads and queries (keeps one key per row).
    m = s.rng.random((b, 1, 1, S)) > 0.4
    m[..., 0] = True
    e = "F.scaled_dot_product_attention(q, k, v, attn_mask=m)"
    s.case(f"sdpa bool mask {q.shape}", src_of("qkvm", e), {"q": q, "k": k, "v": v, "m": m},
           lambda q, k, v, m: sdpa_ref(q, k, v, attn_mask=m), rtol=1e-4, atol=1e-5)
    e = "F.scaled_dot_product_attention(q, k, v, m, 0.0)"
    s.case(f"sdpa float mask {q.shape}", src_of("qkvm", e),
           {"q": q, "k": k, "v": v, "m": s.randn((L, S), dt)},
           lambda q, k, v, m: sdpa_ref(q, k, v, attn_mask=m), rtol=1e-4, atol=1e-5)
q, k, v = s.randn((2, 6, 5, 8)), s.randn((2, 2, 7, 8)), s.randn((2, 2, 7, 3))
s.case("sdpa enable_gqa", src_of("qkv", "F.scaled_dot_product_attention(q, k, v, enable_gqa=True)"),
       {"q": q, "k": k, "v": v},
       lambda q, k, v: sdpa_ref(q, k.repeat_interleave(3, -3), v.repeat_interleave(3, -3)),
       rtol=1e-4, atol=1e-5)
q = s.randn((3, 4, 8))
s.case("sdpa 3-D fully masked row is nan",
       src_of("qm", "F.scaled_dot_product_attention(q, q, q, attn_mask=m)"),
       {"q": q, "m": np.array([[True] * 4, [False] * 4, [True, False, True, False], [True] * 4])},
       lambda q, m: sdpa_ref(q, q, q, attn_mask=m), rtol=1e-4, atol=1e-5)

# --- small activations --------------------------------------------------------------------
SMALL = {
    "F.softmin(x, dim=-1)": lambda x: F.softmin(x, dim=-1),
    "F.softsign(x)": F.softsign,
    "F.tanhshrink(x)": F.tanhshrink,
    "F.hardshrink(x)": F.hardshrink,
    "x.hardshrink(1.5)": lambda x: x.hardshrink(1.5),
    "F.softshrink(x, 0.7)": lambda x: F.softshrink(x, 0.7),
    "F.gelu(x, approximate='tanh')": lambda x: F.gelu(x, approximate="tanh"),
}
SHAPES = [((0,), np.float32), ((1,), np.float32), ((7,), F64), ((1023,), np.float32)]
for i, (expr, ref) in enumerate(SMALL.items()):
    for shape, dt in SHAPES[i % 2::2]:
        s.case(f"{expr} {shape}", src_of("x", expr), {"x": s.randn(shape, dt) * 3}, ref)
s.case("small activations special", src_of("x", "(" + ", ".join(SMALL) + ")"), {"x": s.special()},
       lambda x: tuple(ref(x) for ref in SMALL.values()))
for shape, dim in [((4, 6), -1), ((2, 8, 3), 1)]:
    e = f"F.glu(x, {dim})"
    s.case(f"{e} {shape}", src_of("x", e), {"x": s.randn(shape)}, lambda x, d=dim: F.glu(x, d))
for shape, size in [((2, 7, 5), 3), ((1, 4, 3, 3), 2), ((2, 3, 2, 2, 2), 5), ((1, 6, 4), 1)]:
    e = f"F.local_response_norm(x, {size}, alpha=0.1, beta=0.6, k=2.0)"
    s.case(f"{e} {shape}", src_of("x", e), {"x": s.randn(shape) * 2},
           lambda x, size=size: F.local_response_norm(x, size, alpha=0.1, beta=0.6, k=2.0),
           rtol=1e-4, atol=1e-6)

# --- errors --------------------------------------------------------------------------------
ERRORS = [
    ("F.cross_entropy(x, t)", {"x": s.randn((3, 4)), "t": s.randint((3,), 0, 4, np.int32)},
     "int64 class indices"),
    ("F.nll_loss(x, t)", {"x": s.randn((3, 4)), "t": s.randint((4,), 0, 4)},
     "expected target of shape [3]"),
    ("F.mse_loss(x, t, reduction='avg')", {"x": s.randn((3,)), "t": s.randn((3,))},
     "reduction must be"),
    ("F.scaled_dot_product_attention(x, x, x, dropout_p=0.1)", {"x": s.randn((2, 3, 4)), "t": 0},
     "dropout_p"),
    ("F.group_norm(x, 3)", {"x": s.randn((2, 4, 5)), "t": 0}, "divisible by num_groups"),
    ("F.scaled_dot_product_attention(x, t, t, enable_gqa=True)",
     {"x": s.randn((3, 4, 2)), "t": s.randn((2, 4, 2))}, "multiple of the key heads"),
    ("F.binary_cross_entropy(x, t)", {"x": s.randn((3, 1)), "t": s.randn((3,))},
     "must be the same as input size"),
]
for expr, inputs, msg in ERRORS:
    params = list(inputs)
    sig = ", ".join(f"{p}: Tensor" if isinstance(inputs[p], np.ndarray) else f"{p}: int" for p in params)
    src = f"def f({sig}) -> Tensor:\n    F = torch.nn.functional\n    return {expr}\n"
    s.case(f"error {expr}", src, inputs, None, expect_error=msg, backends=("llvm",))
s.run()
