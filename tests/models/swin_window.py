# Swin Transformer's window partition / reverse and the shifted-window roll,
# as the reference implementation writes them, around windowed attention.
import torch
import torch.nn.functional as F
from torch import Tensor


def window_partition(x: Tensor, window_size: int) -> Tensor:
    B, H, W, C = x.shape
    x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)


def window_reverse(windows: Tensor, window_size: int, H: int, W: int) -> Tensor:
    B = int(windows.shape[0] / (H * W / window_size / window_size))
    x = windows.view(B, H // window_size, W // window_size, window_size, window_size, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)


def swin_block(x: Tensor, qkv_w: Tensor, qkv_b: Tensor, proj_w: Tensor, proj_b: Tensor,
               window_size: int, shift: int, num_heads: int) -> Tensor:
    B, H, W, C = x.shape
    shifted = torch.roll(x, shifts=(-shift, -shift), dims=(1, 2))
    windows = window_partition(shifted, window_size).view(-1, window_size * window_size, C)
    Bw, N, _ = windows.shape
    qkv = F.linear(windows, qkv_w, qkv_b).reshape(Bw, N, 3, num_heads, C // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    attn = (q * (C // num_heads) ** -0.5) @ k.transpose(-2, -1)
    out = (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(Bw, N, C)
    out = F.linear(out, proj_w, proj_b).view(-1, window_size, window_size, C)
    out = window_reverse(out, window_size, H, W)
    return x + torch.roll(out, shifts=(shift, shift), dims=(1, 2))
