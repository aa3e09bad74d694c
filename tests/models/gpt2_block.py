# A GPT-2 block as nanoGPT writes it (CausalSelfAttention + MLP), with the
# module's parameters passed as arguments.
import math

import torch
import torch.nn.functional as F
from torch import Tensor


def new_gelu(x: Tensor) -> Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def causal_self_attention(x: Tensor, c_attn_w: Tensor, c_attn_b: Tensor, c_proj_w: Tensor,
                          c_proj_b: Tensor, n_head: int) -> Tensor:
    B, T, C = x.size()
    q, k, v = F.linear(x, c_attn_w, c_attn_b).split(C, dim=2)
    k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
    q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
    v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    bias = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
    att = att.masked_fill(bias[:, :, :T, :T] == 0, float('-inf'))
    att = F.softmax(att, dim=-1)
    y = att @ v
    y = y.transpose(1, 2).contiguous().view(B, T, C)
    return F.linear(y, c_proj_w, c_proj_b)


def gpt2_block(x: Tensor, ln1_w: Tensor, ln1_b: Tensor, c_attn_w: Tensor, c_attn_b: Tensor,
               c_proj_w: Tensor, c_proj_b: Tensor, ln2_w: Tensor, ln2_b: Tensor,
               fc_w: Tensor, fc_b: Tensor, proj_w: Tensor, proj_b: Tensor, n_head: int) -> Tensor:
    C = x.size(-1)
    x = x + causal_self_attention(F.layer_norm(x, (C,), ln1_w, ln1_b, 1e-5), c_attn_w, c_attn_b,
                                  c_proj_w, c_proj_b, n_head)
    h = F.layer_norm(x, (C,), ln2_w, ln2_b, 1e-5)
    x = x + F.linear(new_gelu(F.linear(h, fc_w, fc_b)), proj_w, proj_b)
    return x
