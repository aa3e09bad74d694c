import torch
from torch import Tensor


def patchify(x: Tensor, p: int) -> Tensor:
    b, c, h, w = x.shape
    y = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5)
    return y.reshape(b, (h // p) * (w // p), c * p * p)


def unpatchify(y: Tensor, c: int, p: int, hp: int) -> Tensor:
    b, n, d = y.shape
    x = y.reshape(b, hp, n // hp, c, p, p).permute(0, 3, 1, 4, 2, 5)
    return x.reshape(b, c, hp * p, (n // hp) * p)


def merge(x: Tensor) -> Tensor:
    return x.reshape(x.shape[0], -1, 1).transpose(0, 1) + 1.0
