import torch


def f(x):
    big = (x + 1.0) * 1e20
    return torch.sin(big), torch.cos(x * 1e25), torch.sin(x * 3.4e38)
