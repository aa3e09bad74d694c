# An MLP-Mixer layer: token mixing across patches (transposed), then channel
# mixing, each pre-LN with a residual.
import torch
import torch.nn.functional as F
from torch import Tensor


def mlp(x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor) -> Tensor:
    return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)


def mixer_layer(x: Tensor, ln1_w: Tensor, ln1_b: Tensor, t_w1: Tensor, t_b1: Tensor, t_w2: Tensor,
                t_b2: Tensor, ln2_w: Tensor, ln2_b: Tensor, c_w1: Tensor, c_b1: Tensor,
                c_w2: Tensor, c_b2: Tensor) -> Tensor:
    C = x.shape[-1]
    y = F.layer_norm(x, (C,), ln1_w, ln1_b).transpose(1, 2)
    x = x + mlp(y, t_w1, t_b1, t_w2, t_b2).transpose(1, 2)
    y = F.layer_norm(x, (C,), ln2_w, ln2_b)
    return x + mlp(y, c_w1, c_b1, c_w2, c_b2)
