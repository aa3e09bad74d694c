"""Run-time Python numbers (issue 13): t.item(), int(t), float(t), bool(t)
against PyTorch. A number returned from a def is a 0-d tensor of the dtype
Python holds it in (int -> int64, float -> float64, bool -> bool); used next to
a tensor it promotes like a Python scalar."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kiln_torch import Suite, np, torch  # noqa: E402

s = Suite()


def py(*values):
    """Python numbers as the 0-d tensors Kiln returns for them."""
    out = []
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, bool):
            out.append(torch.tensor(v))
        elif isinstance(v, int):
            out.append(torch.tensor(v, dtype=torch.int64))
        else:
            out.append(torch.tensor(v, dtype=torch.float64))
    return out


def src(body, params="x: Tensor, t: Tensor"):
    return f"def f({params}):\n" + "".join(f"    {line}\n" for line in body.split("|"))


# A number next to a tensor: the tensor's dtype wins within its category.
for xd in [np.float32, np.float64, np.float16, np.int32, np.uint8, np.bool_]:
    for td in [np.float64, np.int32, np.bool_]:
        x = (s.randn((7,)) * 4).astype(xd) if xd != np.bool_ else s.randn((7,)) > 0
        t = np.array(s.randn(()) * 3).astype(td) if td != np.bool_ else np.array(True)
        name = f"{np.dtype(xd).name} with {np.dtype(td).name}"
        s.case(f"x * t.item() {name}", src("return x * t.item()"), {"x": x, "t": t},
               lambda x, t: x * t.item(), rtol=1e-3, atol=1e-3)
        s.case(f"x + int(t) {name}", src("return x + int(t)"), {"x": x, "t": t},
               lambda x, t: x + int(t), rtol=1e-3, atol=1e-3)
        if td == np.float64:
            s.case(f"x + float(t) {name}", src("return x + float(t)"), {"x": x, "t": t},
                   lambda x, t: x + float(t), rtol=1e-3, atol=1e-3)

# Shapes: 0, 1, 7, 1023 elements next to a number from a one-element tensor.
for shape in [(0,), (1,), (7,), (1023,), (3, 5)]:
    s.case(f"clamp(max=float(m)) {shape}",
           src("return torch.clamp(x, max=float(t.max()))"),
           {"x": s.randn(shape) * 3, "t": s.randn((1, 1))},
           lambda x, t: torch.clamp(x, max=float(t.max())))
    s.case(f"x / t.sum().item() {shape}", src("return x / t.sum().item()"),
           {"x": s.randn(shape), "t": s.uniform((4,), 1, 2)},
           lambda x, t: x / t.sum().item())

# Python arithmetic between numbers: int / int is a float, // and % floor.
for vals in [(7, 2), (-7, 2), (7, -3), (0, 5)]:
    a, b = vals
    t = np.array(a, np.int32)
    s.case(f"int arithmetic {vals}",
           src(f"n = t.item()|return n + {b}, n - {b}, n * {b}, n / {b}, n // {b}, n % {b}, "
               f"n == {b}, n < {b}, -n", "t: Tensor"),
           {"t": t},
           lambda t, b=b: py(*[(lambda n: [n + b, n - b, n * b, n / b, n // b, n % b,
                                           n == b, n < b, -n])(t.item())][0]))
for v in [2.5, -2.5, 0.0, float("inf"), float("nan")]:
    t = np.array(v, np.float32)
    s.case(f"float arithmetic {v}",
           src("n = t.item()|m = int(t.isfinite())|return n * 2, n + 1, float(t) / 4, m, "
               "bool(t), not n > 0", "t: Tensor"),
           {"t": t},
           lambda t: py(t.item() * 2, t.item() + 1, float(t) / 4, int(t.isfinite()), bool(t),
                        not t.item() > 0))
for v in [2.7, -2.7, 0.5]:
    s.case(f"int(float tensor) truncates {v}", src("return int(t), int(t.item())", "t: Tensor"),
           {"t": np.array([v], np.float64)}, lambda t: py(int(t), int(t.item())))

# A number mixed with both: (x * n).sum() stays one graph.
s.case("item of a reduction scales", src("s = x.abs().max().item()|return x / s, s",
                                          "x: Tensor"),
       {"x": s.randn((5, 3))}, lambda x: py(x / x.abs().max().item(), x.abs().max().item()))

# Compile-time uses are located errors.
s.case("shape from data", src("return torch.zeros(int(t))"), {"x": s.randn((2,)),
                                                              "t": np.array(3, np.int64)},
       None, expect_error="is known only at run time")
s.case("if on data", src("if t.item() > 0:|    return x|return -x"),
       {"x": s.randn((2,)), "t": np.array(3.0, np.float32)}, None,
       expect_error="use torch.where")
s.case("item of many", src("return x.item()", "x: Tensor"), {"x": s.randn((3,))}, None,
       expect_error="only one-element tensors can be converted to Python scalars")
s.run()
