"""The model zoo (tests/models/*.py) against PyTorch.

Each model file is ordinary PyTorch code: this test imports it with Python
and calls the function on torch tensors (the reference), and runs the same
file unmodified through `kiln run --fn NAME` on the same inputs (LLVM backend
and interpreter). The inputs (tests/models/zoo_inputs.py, shared with bench/zoo.py) are what
a user would pass: activations, weights at their usual initialization
scale, integer labels and masks.

A model listed in PENDING is expected to fail to compile, with the reason
given; it is reported, and it fails the test once it passes (so the list
cannot go stale).
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kiln_torch import Suite, torch  # noqa: E402

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")
sys.path.insert(0, MODELS)
import zoo_inputs  # noqa: E402  (tests/models/zoo_inputs.py: every model's inputs)
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


for name, fn, inputs, rtol, atol in zoo_inputs.cases(rng):
    path, mod = zoo_inputs.load(name)
    with open(path) as f:
        src = f.read()
    s.case(name, src, inputs, getattr(mod, fn), fn=fn, rtol=rtol, atol=atol, pending=PENDING.get(name))
s.run()
