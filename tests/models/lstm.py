# An LSTM over a sequence as the fastrnns benchmarks write the cell
# (torch.mm with transposed weights, chunk into four gates), unrolled over
# the time steps; returns the stacked outputs and the final states.
from typing import List, Tuple

import torch
from torch import Tensor


def lstm_cell(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
              b_hh: Tensor) -> Tuple[Tensor, Tensor]:
    gates = torch.mm(x, w_ih.t()) + torch.mm(hx, w_hh.t()) + b_ih + b_hh
    ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
    ingate = torch.sigmoid(ingate)
    forgetgate = torch.sigmoid(forgetgate)
    cellgate = torch.tanh(cellgate)
    outgate = torch.sigmoid(outgate)
    cy = (forgetgate * cx) + (ingate * cellgate)
    hy = outgate * torch.tanh(cy)
    return hy, cy


def lstm(input: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
         b_hh: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    inputs = input.unbind(0)
    outputs: List[Tensor] = []
    for i in range(len(inputs)):
        hx, cx = lstm_cell(inputs[i], hx, cx, w_ih, w_hh, b_ih, b_hh)
        outputs += [hx]
    return torch.stack(outputs), hx, cx
