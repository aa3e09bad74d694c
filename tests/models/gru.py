# A GRU over a sequence, written as torch.nn.GRU computes it (reset gate
# applied to the hidden projection including its bias), batch first.
from typing import List

import torch
import torch.nn.functional as F
from torch import Tensor


def gru_cell(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor, b_hh: Tensor) -> Tensor:
    gi = F.linear(x, w_ih, b_ih)
    gh = F.linear(h, w_hh, b_hh)
    i_r, i_z, i_n = gi.chunk(3, 1)
    h_r, h_z, h_n = gh.chunk(3, 1)
    r = torch.sigmoid(i_r + h_r)
    z = torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h


def gru(x: Tensor, h0: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor, b_hh: Tensor) -> Tensor:
    h = h0
    outs = []
    for t in range(x.size(1)):
        h = gru_cell(x[:, t], h, w_ih, w_hh, b_ih, b_hh)
        outs.append(h)
    return torch.stack(outs, dim=1)
