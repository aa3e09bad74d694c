"""x ** e against PyTorch for the scalar exponents ATen strength-reduces (issue
14 item 4): 2 -> x*x, 3 -> x*x*x, 0.5 -> sqrt, -0.5 -> 1/sqrt, -1 -> 1/x,
-2 -> 1/(x*x). f32 and f64 match bit for bit, special values included (sqrt's
-0.0 and nan for -inf, not pow's +0.0 and +inf; the second output, 1 / x**e,
turns a zero's sign into an infinity's). f16 and bf16 compute in f32 and round
once, so PyTorch 1.13 (bf16 rounds each product, f16 calls pow) can differ by
an ulp and at -0.0 / -inf: they are checked on finite values with a tolerance."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kiln_torch import Suite, np, torch  # noqa: E402

s = Suite(backends=("llvm", "interp", "loop-eval"))

EXPONENTS = ["2", "3", "0.5", "-0.5", "-1", "-2", "2.5", "1"]
for e in EXPONENTS:
    src = f"def f(x: Tensor):\n    y = x ** {e}\n    return y, 1.0 / y\n"
    ref = (lambda k: lambda x: (x ** k, 1.0 / x ** k))(float(e) if "." in e else int(e))
    exact = e != "2.5"
    for dt in (np.float32, np.float64):
        s.case(f"x ** {e} special {np.dtype(dt).name}", src, {"x": s.special(dt)}, ref,
               exact=exact)
        for shape in [(0,), (1,), (7,), (1023,), (3, 5)]:
            s.case(f"x ** {e} {shape} {np.dtype(dt).name}", src, {"x": s.randn(shape, dt) * 3},
                   ref, exact=exact)
    src1 = f"def f(x: Tensor) -> Tensor:\n    return x.pow({e})\n"
    ref1 = (lambda k: lambda x: x.pow(k))(float(e) if "." in e else int(e))
    s.case(f"x.pow({e}) f16", src1, {"x": s.randn((1023,), np.float16)}, ref1, rtol=1e-3,
           atol=1e-3)
    s.case(f"x.pow({e}) bf16", "def f(x: Tensor) -> Tensor:\n"
           f"    return x.to(torch.bfloat16).pow({e}).to(torch.float32)\n",
           {"x": s.randn((1023,))}, (lambda k: lambda x: x.bfloat16().pow(k).float())(float(e)),
           rtol=1e-2, atol=1e-2)

# Integers keep integer semantics; a float exponent promotes.
src = "def f(x: Tensor):\n    return x ** 3, x ** 2\n"
s.case("i32 ** 3, ** 2", src, {"x": s.randint((7,), -50, 50, np.int32)},
       lambda x: (x ** 3, x ** 2))
src = "def f(x: Tensor):\n    return x ** 0.5, x ** -1.0\n"
s.case("i64 ** 0.5, ** -1.0", src, {"x": s.randint((7,), 0, 50)},
       lambda x: (x ** 0.5, x ** -1.0), exact=True)
# A run-time exponent selects the same forms.
src = "def f(x: Tensor, e: float) -> Tensor:\n    return 1.0 / x ** e\n"
for e in [3.0, 0.5, -0.5, 2.5]:
    s.case(f"x ** e, e = {e}", src, {"x": s.special(), "e": e},
           (lambda k: lambda x, _: 1.0 / x ** k)(e), exact=e != 2.5)
s.run()
