import torch
import torch.nn.functional as F


def finfo_int(x: torch.Tensor) -> torch.Tensor:
    return x + torch.finfo(torch.int32).max


def iinfo_float(x: torch.Tensor) -> torch.Tensor:
    return x + torch.iinfo(x.dtype).max


def finfo_field(x: torch.Tensor) -> torch.Tensor:
    return x + torch.finfo(x.dtype).smallest


def dropout_training(x: torch.Tensor) -> torch.Tensor:
    return F.dropout(x, 0.1)


def jit_fork(x: torch.Tensor) -> torch.Tensor:
    return torch.jit.fork(x)
