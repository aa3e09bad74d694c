"""The model zoo (tests/models/*.py) against PyTorch.

Each model file is ordinary PyTorch code: this test imports it with Python
and calls the function on torch tensors (the reference), and runs the same
file unmodified through `kiln run --fn NAME` on the same inputs (LLVM backend
and interpreter). The inputs below are what a user would pass: activations,
weights at their usual initialization scale, integer labels and masks.

A model listed in PENDING is expected to fail to compile, with the reason
given; it is reported, and it fails the test once it passes (so the list
cannot go stale).
"""
import importlib.util
import math
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kiln_torch import Suite, np, torch  # noqa: E402

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")
s = Suite()
rng = s.rng

PENDING = {}  # every model of the zoo compiles and matches PyTorch

# PyTorch before 2.0 has no F.scaled_dot_product_attention: the reference is
# the math its documentation gives.
if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
    def _sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
        L, S = query.size(-2), key.size(-2)
        scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
        attn_bias = torch.zeros(L, S, dtype=query.dtype)
        if is_causal:
            temp_mask = torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)
            attn_bias.masked_fill_(temp_mask.logical_not(), float("-inf"))
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                attn_bias = attn_bias.masked_fill(attn_mask.logical_not(), float("-inf"))
            else:
                attn_bias = attn_bias + attn_mask
        attn_weight = query @ key.transpose(-2, -1) * scale_factor
        attn_weight = torch.softmax(attn_weight + attn_bias, dim=-1)
        return attn_weight @ value

    torch.nn.functional.scaled_dot_product_attention = _sdpa


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


def load(name):
    path = os.path.join(MODELS, name + ".py")
    spec = importlib.util.spec_from_file_location("zoo_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return path, mod


def model(name, fn, inputs, rtol=1e-4, atol=1e-5):
    path, mod = load(name)
    with open(path) as f:
        src = f.read()
    ref = getattr(mod, fn)
    s.case(name, src, inputs, ref, fn=fn, rtol=rtol, atol=atol, pending=PENDING.get(name))


def randn(*shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype(np.float32)


# --- transformers
C = 32
model("gpt2_block", "gpt2_block", dict(
    x=randn(2, 8, C), ln1_w=vec(C, 0.1, 1.0), ln1_b=vec(C), c_attn_w=lin(3 * C, C),
    c_attn_b=vec(3 * C), c_proj_w=lin(C, C), c_proj_b=vec(C), ln2_w=vec(C, 0.1, 1.0), ln2_b=vec(C),
    fc_w=lin(4 * C, C), fc_b=vec(4 * C), proj_w=lin(C, 4 * C), proj_b=vec(C), n_head=4))
model("llama_block", "llama_block", dict(
    x=randn(2, 8, C), attn_norm_w=vec(C, 0.1, 1.0), wq=lin(C, C), wk=lin(C // 2, C),
    wv=lin(C // 2, C), wo=lin(C, C), mlp_norm_w=vec(C, 0.1, 1.0), w_gate=lin(64, C),
    w_up=lin(64, C), w_down=lin(C, 64), n_heads=4, n_kv_heads=2))
mask = np.ones((2, 7), np.int64)
mask[0, 5:] = 0
mask[1, 2:] = 0
model("bert_layer", "bert_layer", dict(
    hidden=randn(2, 7, C), attention_mask=mask, wq=lin(C, C), bq=vec(C), wk=lin(C, C), bk=vec(C),
    wv=lin(C, C), bv=vec(C), wo=lin(C, C), bo=vec(C), ln1_w=vec(C, 0.1, 1.0), ln1_b=vec(C),
    wi=lin(64, C), bi=vec(64), wo2=lin(C, 64), bo2=vec(C), ln2_w=vec(C, 0.1, 1.0), ln2_b=vec(C),
    num_heads=4))
blocks = []
for _ in range(2):
    blocks += [vec(C, 0.1, 1.0), vec(C), lin(3 * C, C), vec(3 * C), lin(C, C), vec(C),
               vec(C, 0.1, 1.0), vec(C), lin(64, C), vec(64), lin(C, 64), vec(C)]
model("vit_encoder", "vit", dict(
    img=randn(2, 3, 16, 16), patch_w=conv(C, 3, 4), patch_b=vec(C), cls_token=randn(1, 1, C, scale=0.02),
    pos_embed=randn(1, 17, C, scale=0.02), blocks=blocks, norm_w=vec(C, 0.1, 1.0), norm_b=vec(C),
    head_w=lin(10, C), head_b=vec(10), patch=4, num_heads=4))
model("swin_window", "swin_block", dict(
    x=randn(1, 8, 8, 16), qkv_w=lin(48, 16), qkv_b=vec(48), proj_w=lin(16, 16), proj_b=vec(16),
    window_size=4, shift=2, num_heads=2))
model("mlp_mixer", "mixer_layer", dict(
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
model("resnet18", "resnet18", dict(x=randn(1, 3, 32, 32), params=params), rtol=1e-3, atol=1e-4)
params = [conv(8, 3, 3)] + bn(8)
cin = 8
for cout, hidden in [(8, 16), (12, 16), (12, 24)]:
    params += [conv(hidden, cin, 1)] + bn(hidden) + [conv(hidden, hidden, 3, groups=hidden)] + bn(hidden)
    params += [conv(cout, hidden, 1)] + bn(cout)
    cin = cout
params += [conv(32, cin, 1)] + bn(32) + [lin(10, 32), vec(10)]
model("mobilenet_v2", "mobilenet_v2", dict(x=randn(2, 3, 16, 16), params=params, strides=[1, 2, 1]),
      rtol=1e-3, atol=1e-4)
params = []
for cin, cout in [(3, 8), (8, 16), (16, 32), (48, 16), (24, 8)]:
    params += [conv(cout, cin, 3)] + bn(cout) + [conv(cout, cout, 3)] + bn(cout)
params += [conv(2, 8, 1), vec(2)]
model("unet", "unet", dict(x=randn(1, 3, 17, 17), p=params), rtol=1e-3, atol=1e-4)
model("conv_block", "conv_block", dict(
    x=randn(2, 3, 9, 9), w=conv(8, 3, 3), b=vec(8), bn_w=vec(8, 0.1, 1.0), bn_b=vec(8), bn_mean=vec(8),
    bn_var=rng.uniform(0.5, 1.5, 8).astype(np.float32), fc_w=lin(10, 8), fc_b=vec(10)))
model("convnext_block", "convnext_block", dict(
    x=randn(1, 16, 7, 7), dw_w=conv(16, 16, 7, groups=16), dw_b=vec(16), ln_w=vec(16, 0.1, 1.0),
    ln_b=vec(16), pw1_w=lin(64, 16), pw1_b=vec(64), pw2_w=lin(16, 64), pw2_b=vec(16),
    gamma=vec(16, 0.1, 0.5)))
model("audio_frontend", "audio_encoder_stem", dict(
    mel=randn(1, 8, 20), conv1_w=(randn(16, 8, 3) / math.sqrt(24)).astype(np.float32), conv1_b=vec(16),
    conv2_w=(randn(16, 16, 3) / math.sqrt(48)).astype(np.float32), conv2_b=vec(16)))

# --- recurrent
model("lstm", "lstm", dict(
    input=randn(5, 3, 8), hx=randn(3, 16), cx=randn(3, 16), w_ih=lin(64, 8), w_hh=lin(64, 16),
    b_ih=vec(64), b_hh=vec(64)))
model("gru", "gru", dict(
    x=randn(3, 5, 8), h0=randn(3, 16), w_ih=lin(48, 8), w_hh=lin(48, 16), b_ih=vec(48), b_hh=vec(48)))

# --- heads and losses
def boxes(n):
    xy = rng.uniform(0, 10, (n, 2))
    wh = rng.uniform(1, 5, (n, 2))
    return np.concatenate([xy, xy + wh], axis=1).astype(np.float32)


model("box_iou", "match", dict(gt=boxes(4), anchors=boxes(20), high=0.5, low=0.3))
labels = rng.integers(0, 50, (2, 7)).astype(np.int64)
labels[1, 4:] = -100
model("lm_loss", "lm_loss", dict(hidden=randn(2, 7, C), ln_w=vec(C, 0.1, 1.0), ln_b=vec(C),
                                 wte=randn(50, C, scale=0.02), labels=labels))
model("moe_router", "moe_router", dict(x=randn(2, 5, 16), w_gate=lin(8, 16), top_k=2))
model("top_p", "top_k_top_p", dict(logits=randn(3, 50, scale=3.0), top_k=10, top_p=0.9, temperature=0.7))
model("focal_loss", "sigmoid_focal_loss", dict(
    inputs=randn(4, 7, scale=2.0), targets=rng.integers(0, 2, (4, 7)).astype(np.float32)))
model("clip_loss", "clip_loss", dict(image_features=randn(5, 16), text_features=randn(5, 16),
                                     logit_scale=np.array(math.log(1 / 0.07), np.float32)))
s.run()
