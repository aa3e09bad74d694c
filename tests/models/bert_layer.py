# A BERT encoder layer as Hugging Face's BertLayer computes it in eval mode:
# an extended attention mask from the padding mask, post-LN residuals, GELU.
import math

import torch
import torch.nn.functional as F
from torch import Tensor


def transpose_for_scores(x: Tensor, num_heads: int) -> Tensor:
    new_shape = x.size()[:-1] + (num_heads, x.size(-1) // num_heads)
    x = x.view(new_shape)
    return x.permute(0, 2, 1, 3)


def bert_layer(hidden: Tensor, attention_mask: Tensor, wq: Tensor, bq: Tensor, wk: Tensor,
               bk: Tensor, wv: Tensor, bv: Tensor, wo: Tensor, bo: Tensor, ln1_w: Tensor,
               ln1_b: Tensor, wi: Tensor, bi: Tensor, wo2: Tensor, bo2: Tensor, ln2_w: Tensor,
               ln2_b: Tensor, num_heads: int) -> Tensor:
    extended = attention_mask[:, None, None, :].to(hidden.dtype)
    extended = (1.0 - extended) * torch.finfo(hidden.dtype).min
    q = transpose_for_scores(F.linear(hidden, wq, bq), num_heads)
    k = transpose_for_scores(F.linear(hidden, wk, bk), num_heads)
    v = transpose_for_scores(F.linear(hidden, wv, bv), num_heads)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
    scores = scores + extended
    probs = F.dropout(F.softmax(scores, dim=-1), p=0.1, training=False)
    ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
    ctx = ctx.view(ctx.size()[:-2] + (hidden.size(-1),))
    attn = F.layer_norm(F.linear(ctx, wo, bo) + hidden, (hidden.size(-1),), ln1_w, ln1_b, 1e-12)
    inter = F.gelu(F.linear(attn, wi, bi))
    out = F.linear(inter, wo2, bo2)
    return F.layer_norm(out + attn, (hidden.size(-1),), ln2_w, ln2_b, 1e-12)
