# GEMM epilogues for tests/cli/gemm_rolled_epilogue.test: transcendental ones
# (erf-GELU, tanh-GELU, sigmoid) and a plain residual add.
import torch
import torch.nn.functional as F

def lin_gelu(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    return F.gelu(F.linear(x, w, b))

def lin_gelu_tanh(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    return F.gelu(F.linear(x, w, b), approximate='tanh')

def mm_sigmoid(x: Tensor, w: Tensor) -> Tensor:
    return torch.sigmoid(x @ w) * 2.0

def lin_add(x: Tensor, w: Tensor, b: Tensor, r: Tensor) -> Tensor:
    return F.linear(x, w, b) + r
