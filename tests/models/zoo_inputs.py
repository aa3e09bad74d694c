"""The model zoo's inputs: what a user passes to each tests/models/*.py
function (activations, weights at their usual initialization scale, integer
labels and masks), shared by tests/torch/test_models.py (small sizes, against
PyTorch) and bench/zoo.py (the bench rows, larger transformer sizes).

cases(rng, C=32, B=2, T=8) returns [(file, fn, inputs, rtol, atol)]; C is the
transformers' width, B and T their batch and sequence length. load(name)
imports tests/models/<name>.py and returns (path, module).
"""
import importlib.util
import math
import os

import numpy as np

MODELS = os.path.dirname(os.path.abspath(__file__))


def load(name):
    path = os.path.join(MODELS, name + ".py")
    spec = importlib.util.spec_from_file_location("zoo_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return path, mod


def cases(rng, C=32, B=2, T=8):
    out = []

    def add(name, fn, inputs, rtol=1e-4, atol=1e-5):
        out.append((name, fn, inputs, rtol, atol))

    def lin(out_f, in_f):
        return (rng.standard_normal((out_f, in_f)) / math.sqrt(in_f)).astype(np.float32)


    def vec(n, scale=0.1, shift=0.0):
        return (shift + scale * rng.standard_normal(n)).astype(np.float32)


    def conv(out_c, in_c, k, groups=1):
        fan_in = in_c // groups * k * k
        return (rng.standard_normal((out_c, in_c // groups, k, k)) / math.sqrt(fan_in)).astype(np.float32)


    def bn(c):
        """BatchNorm weight, bias, running mean, running var."""
        return [vec(c, 0.1, 1.0), vec(c), vec(c), rng.uniform(0.5, 1.5, c).astype(np.float32)]


    def randn(*shape, scale=1.0):
        return (scale * rng.standard_normal(shape)).astype(np.float32)


    # --- transformers
    add("gpt2_block", "gpt2_block", dict(
        x=randn(B, T, C), ln1_w=vec(C, 0.1, 1.0), ln1_b=vec(C), c_attn_w=lin(3 * C, C),
        c_attn_b=vec(3 * C), c_proj_w=lin(C, C), c_proj_b=vec(C), ln2_w=vec(C, 0.1, 1.0), ln2_b=vec(C),
        fc_w=lin(4 * C, C), fc_b=vec(4 * C), proj_w=lin(C, 4 * C), proj_b=vec(C), n_head=4))
    add("llama_block", "llama_block", dict(
        x=randn(B, T, C), attn_norm_w=vec(C, 0.1, 1.0), wq=lin(C, C), wk=lin(C // 2, C),
        wv=lin(C // 2, C), wo=lin(C, C), mlp_norm_w=vec(C, 0.1, 1.0), w_gate=lin(2 * C, C),
        w_up=lin(2 * C, C), w_down=lin(C, 2 * C), n_heads=4, n_kv_heads=2))
    mask = np.ones((B, T - 1), np.int64)
    mask[0, 5:] = 0
    mask[1, 2:] = 0
    add("bert_layer", "bert_layer", dict(
        hidden=randn(B, T - 1, C), attention_mask=mask, wq=lin(C, C), bq=vec(C), wk=lin(C, C), bk=vec(C),
        wv=lin(C, C), bv=vec(C), wo=lin(C, C), bo=vec(C), ln1_w=vec(C, 0.1, 1.0), ln1_b=vec(C),
        wi=lin(2 * C, C), bi=vec(2 * C), wo2=lin(C, 2 * C), bo2=vec(C), ln2_w=vec(C, 0.1, 1.0), ln2_b=vec(C),
        num_heads=4))
    blocks = []
    for _ in range(2):
        blocks += [vec(C, 0.1, 1.0), vec(C), lin(3 * C, C), vec(3 * C), lin(C, C), vec(C),
                   vec(C, 0.1, 1.0), vec(C), lin(2 * C, C), vec(2 * C), lin(C, 2 * C), vec(C)]
    add("vit_encoder", "vit", dict(
        img=randn(B, 3, 16, 16), patch_w=conv(C, 3, 4), patch_b=vec(C), cls_token=randn(1, 1, C, scale=0.02),
        pos_embed=randn(1, 17, C, scale=0.02), blocks=blocks, norm_w=vec(C, 0.1, 1.0), norm_b=vec(C),
        head_w=lin(10, C), head_b=vec(10), patch=4, num_heads=4))
    add("swin_window", "swin_block", dict(
        x=randn(1, 8, 8, 16), qkv_w=lin(48, 16), qkv_b=vec(48), proj_w=lin(16, 16), proj_b=vec(16),
        window_size=4, shift=2, num_heads=2))
    add("mlp_mixer", "mixer_layer", dict(
        x=randn(2, 9, 16), ln1_w=vec(16, 0.1, 1.0), ln1_b=vec(16), t_w1=lin(12, 9), t_b1=vec(12),
        t_w2=lin(9, 12), t_b2=vec(9), ln2_w=vec(16, 0.1, 1.0), ln2_b=vec(16), c_w1=lin(32, 16),
        c_b1=vec(32), c_w2=lin(16, 32), c_b2=vec(16)))

    # --- vision
    params = [conv(8, 3, 7)] + bn(8)
    cin = 8
    for width in [8, 16, 32, 64]:
        for block in range(2):
            down = width != 8 and block == 0
            params += [conv(width, cin, 3)] + bn(width) + [conv(width, width, 3)] + bn(width)
            if down:
                params += [conv(width, cin, 1)] + bn(width)
            cin = width
    params += [lin(10, 64), vec(10)]
    add("resnet18", "resnet18", dict(x=randn(1, 3, 32, 32), params=params), rtol=1e-3, atol=1e-4)
    params = [conv(8, 3, 3)] + bn(8)
    cin = 8
    for cout, hidden in [(8, 16), (12, 16), (12, 24)]:
        params += [conv(hidden, cin, 1)] + bn(hidden) + [conv(hidden, hidden, 3, groups=hidden)] + bn(hidden)
        params += [conv(cout, hidden, 1)] + bn(cout)
        cin = cout
    params += [conv(32, cin, 1)] + bn(32) + [lin(10, 32), vec(10)]
    add("mobilenet_v2", "mobilenet_v2", dict(x=randn(2, 3, 16, 16), params=params, strides=[1, 2, 1]),
          rtol=1e-3, atol=1e-4)
    params = []
    for cin, cout in [(3, 8), (8, 16), (16, 32), (48, 16), (24, 8)]:
        params += [conv(cout, cin, 3)] + bn(cout) + [conv(cout, cout, 3)] + bn(cout)
    params += [conv(2, 8, 1), vec(2)]
    add("unet", "unet", dict(x=randn(1, 3, 17, 17), p=params), rtol=1e-3, atol=1e-4)
    add("conv_block", "conv_block", dict(
        x=randn(2, 3, 9, 9), w=conv(8, 3, 3), b=vec(8), bn_w=vec(8, 0.1, 1.0), bn_b=vec(8), bn_mean=vec(8),
        bn_var=rng.uniform(0.5, 1.5, 8).astype(np.float32), fc_w=lin(10, 8), fc_b=vec(10)))
    add("convnext_block", "convnext_block", dict(
        x=randn(1, 16, 7, 7), dw_w=conv(16, 16, 7, groups=16), dw_b=vec(16), ln_w=vec(16, 0.1, 1.0),
        ln_b=vec(16), pw1_w=lin(64, 16), pw1_b=vec(64), pw2_w=lin(16, 64), pw2_b=vec(16),
        gamma=vec(16, 0.1, 0.5)))
    add("audio_frontend", "audio_encoder_stem", dict(
        mel=randn(1, 8, 20), conv1_w=(randn(16, 8, 3) / math.sqrt(24)).astype(np.float32), conv1_b=vec(16),
        conv2_w=(randn(16, 16, 3) / math.sqrt(48)).astype(np.float32), conv2_b=vec(16)))

    # --- recurrent
    add("lstm", "lstm", dict(
        input=randn(5, 3, 8), hx=randn(3, 16), cx=randn(3, 16), w_ih=lin(64, 8), w_hh=lin(64, 16),
        b_ih=vec(64), b_hh=vec(64)))
    add("gru", "gru", dict(
        x=randn(3, 5, 8), h0=randn(3, 16), w_ih=lin(48, 8), w_hh=lin(48, 16), b_ih=vec(48), b_hh=vec(48)))

    # --- heads and losses
    def boxes(n):
        xy = rng.uniform(0, 10, (n, 2))
        wh = rng.uniform(1, 5, (n, 2))
        return np.concatenate([xy, xy + wh], axis=1).astype(np.float32)


    add("box_iou", "match", dict(gt=boxes(4), anchors=boxes(20), high=0.5, low=0.3))
    labels = rng.integers(0, 50, (2, 7)).astype(np.int64)
    labels[1, 4:] = -100
    add("lm_loss", "lm_loss", dict(hidden=randn(2, 7, C), ln_w=vec(C, 0.1, 1.0), ln_b=vec(C),
                                     wte=randn(50, C, scale=0.02), labels=labels))
    add("moe_router", "moe_router", dict(x=randn(2, 5, 16), w_gate=lin(8, 16), top_k=2))
    add("top_p", "top_k_top_p", dict(logits=randn(3, 50, scale=3.0), top_k=10, top_p=0.9, temperature=0.7))
    add("focal_loss", "sigmoid_focal_loss", dict(
        inputs=randn(4, 7, scale=2.0), targets=rng.integers(0, 2, (4, 7)).astype(np.float32)))
    add("clip_loss", "clip_loss", dict(image_features=randn(5, 16), text_features=randn(5, 16),
                                         logit_scale=np.array(math.log(1 / 0.07), np.float32)))
    return out
