import torch
import torch.nn.functional as F


def losses(x, t, y):
    ce = F.cross_entropy(x, t, label_smoothing=0.1)
    nll = F.nll_loss(F.log_softmax(x, 1), t, reduction='sum')
    bce = F.binary_cross_entropy_with_logits(x, y)
    return ce, nll, bce, F.smooth_l1_loss(x, y), F.kl_div(x, y, reduction='batchmean')


def attn(q, m):
    return F.scaled_dot_product_attention(q, q, q, attn_mask=m)


def ce(x, t):
    return F.cross_entropy(x, t)


def nll(x, t):
    return F.nll_loss(x, t)


def ce_ignore2(x, t):
    return F.cross_entropy(x, t, ignore_index=2, reduction="none")


def ce_weight(x, t, w):
    return F.cross_entropy(x, t, weight=w)


def ce_probs_ignore(x, p):
    return F.cross_entropy(x, p, ignore_index=0)


def ce_smoothing(x, t):
    return F.cross_entropy(x, t, label_smoothing=1.5)


def mse(x, y):
    return F.mse_loss(x, y, reduction='avg')


def mse_legacy(x, y):
    return F.mse_loss(x, y, size_average=True)


def mse_int(x, y):
    return F.mse_loss(x, y)


def bce(x, y):
    return F.binary_cross_entropy(x, y)


def sdpa_dropout(q):
    return F.scaled_dot_product_attention(q, q, q, dropout_p=0.1)


def sdpa_causal_mask(q, m):
    return F.scaled_dot_product_attention(q, q, q, m, is_causal=True)


def sdpa_int_mask(q, m):
    return F.scaled_dot_product_attention(q, q, q, m)


def gn(x):
    return F.group_norm(x, 3)


def inorm_running(x, m, v):
    return F.instance_norm(x, m, v)


def inorm_eval(x):
    return F.instance_norm(x, use_input_stats=False)


def inorm_one(x):
    return F.instance_norm(x)


def glu_odd(x):
    return F.glu(x, 1)
