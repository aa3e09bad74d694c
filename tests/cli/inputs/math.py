import torch
import torch.nn.functional as F


def special_values(x):
    # From arange 0..5 as [-0, 0, -inf, inf, nan, 1]: signed zeros, infinities
    # and NaN through the new intrinsics (not into copysign: the sign of a
    # computed NaN is unspecified).
    v = torch.where(x == 0, -0.0 * x, x - 1.0)
    v = torch.where(x == 2, -1.0 / (x - 2.0), v)
    v = torch.where(x == 3, 1.0 / (x - 3.0), v)
    v = torch.where(x == 4, torch.log(x - 5.0), v)
    v = torch.where(x == 5, x / 5.0, v)
    return (torch.atan2(v, -torch.ones_like(v)), torch.copysign(torch.ones_like(v), torch.nan_to_num(v, nan=-2.0)),
            torch.lgamma(v), torch.digamma(v), torch.erfinv(v), torch.special.gammaln(v))


def smooth(x):
    y = x / 7.0
    return (torch.tan(y) + torch.asin(y) + torch.acos(y) + torch.atan(y) + torch.sinh(y)
            + torch.cosh(y) + torch.asinh(y) + torch.acosh(y + 1.0) + torch.atanh(y)
            + torch.log2(y + 1.0) + torch.log10(y + 1.0) + torch.exp2(y) + torch.erfc(y)
            + torch.hypot(y, x) + torch.logaddexp(y, x) + torch.trunc(x / 2.0))


def int_hypot(a):
    return torch.hypot(a, a)


def int_frac(a):
    return torch.frac(a)


def bad_prelu(x, w):
    return F.prelu(x, w)


def missing_special(x):
    return torch.special.zeta(x, x)
