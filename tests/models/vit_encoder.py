# A ViT: patch embedding by a strided conv, a class token, learned position
# embeddings and pre-LN encoder layers (timm's Block), then the class head.
from typing import List

import torch
import torch.nn.functional as F
from torch import Tensor


def attention(x: Tensor, qkv_w: Tensor, qkv_b: Tensor, proj_w: Tensor, proj_b: Tensor,
              num_heads: int) -> Tensor:
    B, N, C = x.shape
    qkv = F.linear(x, qkv_w, qkv_b).reshape(B, N, 3, num_heads, C // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv.unbind(0)
    scale = (C // num_heads) ** -0.5
    attn = (q @ k.transpose(-2, -1)) * scale
    attn = attn.softmax(dim=-1)
    x = (attn @ v).transpose(1, 2).reshape(B, N, C)
    return F.linear(x, proj_w, proj_b)


def vit(img: Tensor, patch_w: Tensor, patch_b: Tensor, cls_token: Tensor, pos_embed: Tensor,
        blocks: List[Tensor], norm_w: Tensor, norm_b: Tensor, head_w: Tensor, head_b: Tensor,
        patch: int, num_heads: int) -> Tensor:
    x = F.conv2d(img, patch_w, patch_b, stride=patch)
    x = x.flatten(2).transpose(1, 2)
    B, N, C = x.shape
    x = torch.cat((cls_token.expand(B, -1, -1), x), dim=1)
    x = x + pos_embed
    for i in range(len(blocks) // 12):
        p = blocks[12 * i: 12 * (i + 1)]
        x = x + attention(F.layer_norm(x, (C,), p[0], p[1]), p[2], p[3], p[4], p[5], num_heads)
        h = F.layer_norm(x, (C,), p[6], p[7])
        x = x + F.linear(F.gelu(F.linear(h, p[8], p[9])), p[10], p[11])
    x = F.layer_norm(x, (C,), norm_w, norm_b)
    return F.linear(x[:, 0], head_w, head_b)
