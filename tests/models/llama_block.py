# A LLaMA decoder layer as the reference implementation writes it: RMSNorm,
# rotary embeddings (rotate_half form, as in Hugging Face), grouped-query
# attention through F.scaled_dot_product_attention, and a SwiGLU MLP.
from typing import Tuple

import torch
import torch.nn.functional as F
from torch import Tensor


def rms_norm(x: Tensor, weight: Tensor, eps: float = 1e-6) -> Tensor:
    variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
    x = x * torch.rsqrt(variance + eps)
    return weight * x


def rotate_half(x: Tensor) -> Tensor:
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor) -> Tuple[Tensor, Tensor]:
    cos = cos.unsqueeze(0).unsqueeze(0)
    sin = sin.unsqueeze(0).unsqueeze(0)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def rope_cache(seq_len: int, dim: int, base: float = 10000.0) -> Tuple[Tensor, Tensor]:
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
    t = torch.arange(seq_len).float()
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def llama_block(x: Tensor, attn_norm_w: Tensor, wq: Tensor, wk: Tensor, wv: Tensor, wo: Tensor,
                mlp_norm_w: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor,
                n_heads: int, n_kv_heads: int) -> Tensor:
    bsz, seqlen, dim = x.shape
    head_dim = dim // n_heads
    h = rms_norm(x, attn_norm_w)
    q = F.linear(h, wq).view(bsz, seqlen, n_heads, head_dim).transpose(1, 2)
    k = F.linear(h, wk).view(bsz, seqlen, n_kv_heads, head_dim).transpose(1, 2)
    v = F.linear(h, wv).view(bsz, seqlen, n_kv_heads, head_dim).transpose(1, 2)
    cos, sin = rope_cache(seqlen, head_dim)
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    n_rep = n_heads // n_kv_heads
    k = torch.repeat_interleave(k, n_rep, dim=1)
    v = torch.repeat_interleave(v, n_rep, dim=1)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    out = out.transpose(1, 2).contiguous().view(bsz, seqlen, dim)
    x = x + F.linear(out, wo)
    h = rms_norm(x, mlp_norm_w)
    return x + F.linear(F.silu(F.linear(h, w_gate)) * F.linear(h, w_up), w_down)
