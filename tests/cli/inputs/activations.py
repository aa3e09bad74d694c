import torch
import torch.nn.functional as F


def act(x, y):
    a = F.leaky_relu(x, 0.2) + F.elu(x) + F.selu(x) + F.celu(x, alpha=2.0)
    b = F.softplus(x, beta=2.0, threshold=5.0) + F.hardswish(x) + F.hardsigmoid(x)
    c = F.mish(x) + F.logsigmoid(x) + torch.logit(torch.sigmoid(x), eps=1e-6)
    d = torch.addcmul(x, x, y, value=0.5) + x.addcdiv(y, y + 3.0) + torch.lerp(x, y, 0.3)
    e = torch.fmod(x, 1.5) + torch.xlogy(x, y + 3.0) + torch.clamp(x, min=y - 1.0, max=y + 1.0)
    return a + b + c + d + e


def classify(x):
    # From arange 0..5: [nan, nan, -inf, -1, inf, 2.0986].
    x = torch.log(x - 2.0) + 1.0 / (x - 4.0)
    return x.isnan(), torch.isinf(x), torch.isfinite(x), torch.nan_to_num(x, nan=7.0)


def int_fmod(a, b):
    return torch.fmod(a - 3, b)


def int_act(x):
    return F.leaky_relu(x)
