"""The activations and pointwise ops of issue 13 against PyTorch."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kiln_torch import Suite, np, torch  # noqa: E402

F = torch.nn.functional
s = Suite()

UNARY = {
    "F.leaky_relu(x, 0.2)": lambda x: F.leaky_relu(x, 0.2),
    "F.elu(x, 0.7)": lambda x: F.elu(x, 0.7),
    "F.selu(x)": F.selu,
    "F.celu(x, 1.5)": lambda x: F.celu(x, 1.5),
    "F.softplus(x, 2.0, 10.0)": lambda x: F.softplus(x, 2.0, 10.0),
    "F.hardswish(x)": F.hardswish,
    "F.hardsigmoid(x)": F.hardsigmoid,
    "F.mish(x)": F.mish,
    "F.logsigmoid(x)": F.logsigmoid,
    "torch.nan_to_num(x)": torch.nan_to_num,
    "torch.isnan(x)": torch.isnan,
    "torch.isinf(x)": torch.isinf,
    "torch.isfinite(x)": torch.isfinite,
}
for expr, ref in UNARY.items():
    src = f"def f(x: Tensor) -> Tensor:\n    F = torch.nn.functional\n    return {expr}\n"
    for shape in [(0,), (1,), (7,), (1023,), (3, 5)]:
        s.case(f"{expr} {shape}", src, {"x": s.randn(shape) * 4}, ref, rtol=1e-5, atol=1e-6)
    s.case(f"{expr} special", src, {"x": s.special()}, ref, rtol=1e-5, atol=1e-6)

src = "def f(a: Tensor, b: Tensor) -> Tensor:\n    return torch.fmod(a, b)\n"
s.case("fmod broadcast f32", src, {"a": s.randn((4, 7)) * 10, "b": s.uniform((7,), 0.5, 3)},
       torch.fmod)
s.case("fmod i32", src, {"a": s.randint((7,), -20, 20, np.int32),
                         "b": s.randint((7,), 1, 6, np.int32)}, torch.fmod)
s.case("fmod i32 by zero", src, {"a": s.randint((3,), -20, 20, np.int32),
                                 "b": np.array([1, 0, 2], np.int32)}, None,
       expect_error="division by zero")
src = "def f(a: Tensor, b: Tensor, c: Tensor) -> Tensor:\n    return torch.addcmul(a, b, c, value=0.5)\n"
s.case("addcmul", src, {"a": s.randn((2, 7)), "b": s.randn((7,)), "c": s.randn((2, 1))},
       lambda a, b, c: torch.addcmul(a, b, c, value=0.5))
src = "def f(a: Tensor, b: Tensor, w: Tensor) -> Tensor:\n    return torch.lerp(a, b, w)\n"
s.case("lerp tensor weight", src, {"a": s.randn((5, 3)), "b": s.randn((5, 3)),
                                   "w": s.uniform((3,), 0, 1)}, torch.lerp)
s.run()
