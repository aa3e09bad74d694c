# The PyTorch side of the model rows (see bench/model_rows.h): the MLP of
# issue 6 in several forms (eager functional `x @ w1`, eager F.linear with the
# weights as nn.Linear holds them, eager nn.Sequential, TorchScript frozen +
# optimize_for_inference, torch.utils.mkldnn, torch.compile of the functional
# and F.linear forms), issue 5's whole examples (mlp, transformer,
# conv_block), written here in Python to match examples/*.kiln line for line,
# and issue 14's GPT-2 attention (tests/models/gpt2_block.py's
# causal_self_attention, imported as written), in eager, TorchScript and
# torch.compile form. Which forms run is the caller's choice: peers.py (Debian's
# PyTorch 1.13) takes the eager, TorchScript and mkldnn ones, peers_pt2.py
# (PyTorch 2) the eager and torch.compile ones.
#
# Inputs: MODELS repeats model_rows.cpp's ModelInput list (seed, scale,
# offset per tensor), built with peers_common.hashed(); report.py checks the
# input sums of both sides agree. Each output is checked against the same
# computation in float64 (eager PyTorch on float64 copies; the MLP row on the
# four rows model_rows.cpp samples) with sample_err.
import importlib.util
import os

import numpy as np
import torch
import torch.nn.functional as F

from peers_common import (budget_timer, compiled_form, guarded, hashed, input_sum, sample_err,
                          time_budget, timed_call, torch_setup)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def mlp_inputs(big, smoke):
    n, d, h = (16, 64, 256) if smoke else (256, 1024, 4096) if big else (32, 256, 1024)
    s = 41 if big else 51
    return [("x", (n, d), s, 1.0, 0.0),
            ("w1", (d, h), s + 1, 1 / 32 if d >= 1024 else 1 / 16, 0.0),
            ("b1", (h,), s + 2, 0.5, 0.0),
            ("w2", (h, d), s + 3, 1 / 64 if h >= 4096 else 1 / 32, 0.0),
            ("b2", (d,), s + 4, 0.5, 0.0)]


def transformer_inputs(smoke):
    b, t, c = (2, 16, 64) if smoke else (8, 128, 256)
    return [("x", (b, t, c), 61, 1.0, 0.0),
            ("ln1_w", (c,), 62, 0.25, 1.0), ("ln1_b", (c,), 63, 0.25, 0.0),
            ("w_qkv", (3 * c, c), 64, 1 / 16, 0.0), ("b_qkv", (3 * c,), 65, 0.25, 0.0),
            ("w_o", (c, c), 66, 1 / 16, 0.0), ("b_o", (c,), 67, 0.25, 0.0),
            ("ln2_w", (c,), 68, 0.25, 1.0), ("ln2_b", (c,), 69, 0.25, 0.0),
            ("w_up", (4 * c, c), 70, 1 / 16, 0.0), ("b_up", (4 * c,), 71, 0.25, 0.0),
            ("w_down", (c, 4 * c), 72, 1 / 32, 0.0), ("b_down", (c,), 73, 0.25, 0.0)]


def conv_block_inputs(smoke):
    b, cin, cout, hw = (2, 3, 16, 32) if smoke else (8, 64, 64, 56)
    return [("x", (b, cin, hw, hw), 81, 1.0, 0.0), ("w", (cout, cin, 3, 3), 82, 1 / 16, 0.0),
            ("bn", (4, cout), 83, None, None)]


def gpt2_attention_inputs(smoke):
    """As model_rows.cpp's "gpt2_attention"; n_head is gpt2_heads(smoke)."""
    b, t, c = (2, 16, 64) if smoke else (4, 128, 768)
    ws = 1 / 8 if smoke else 1 / 32
    return [("x", (b, t, c), 91, 1.0, 0.0), ("c_attn_w", (3 * c, c), 92, ws, 0.0),
            ("c_attn_b", (3 * c,), 93, 0.125, 0.0), ("c_proj_w", (c, c), 94, ws, 0.0),
            ("c_proj_b", (c,), 95, 0.125, 0.0)]


def gpt2_heads(smoke):
    return 4 if smoke else 12


def gpt2_attention_fn(smoke):
    """tests/models/gpt2_block.py's causal_self_attention as written, n_head bound."""
    path = os.path.join(ROOT, "tests", "models", "gpt2_block.py")
    spec = importlib.util.spec_from_file_location("bench_gpt2_block", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    attn, heads = mod.causal_self_attention, gpt2_heads(smoke)

    def gpt2_attention(x, c_attn_w, c_attn_b, c_proj_w, c_proj_b):
        return attn(x, c_attn_w, c_attn_b, c_proj_w, c_proj_b, heads)

    return gpt2_attention


def make(spec):
    name, shape, seed, scale, offset = spec
    if name != "bn":
        return hashed(shape, seed, scale, offset)
    # weight, bias, running mean, running var (1 + 0.5 u, in [0.5, 1.5)).
    rows = [hashed((shape[1],), seed + r, sc, off)
            for r, (sc, off) in enumerate(((0.25, 1.0), (0.25, 0.0), (0.25, 0.0), (0.5, 1.0)))]
    return np.stack(rows)


def shapes_text(specs):
    return ", ".join(f"{s[0]} {'x'.join(map(str, s[1]))}" for s in specs)


# --- the examples, as in examples/*.kiln (TorchScript-compatible) ---------------------


def mlp(x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor,
        b2: torch.Tensor) -> torch.Tensor:
    h = F.gelu(x @ w1 + b1)
    return h @ w2 + b2


def attention(h: torch.Tensor, w_qkv: torch.Tensor, b_qkv: torch.Tensor, w_o: torch.Tensor,
              b_o: torch.Tensor, heads: int) -> torch.Tensor:
    b, t, c = h.shape
    d = c // heads
    q, k, v = F.linear(h, w_qkv, b_qkv).split(c, dim=-1)
    q = q.reshape(b, t, heads, d).transpose(1, 2)
    k = k.reshape(b, t, heads, d).transpose(1, 2)
    v = v.reshape(b, t, heads, d).transpose(1, 2)
    scores = (q @ k.transpose(-2, -1)) / (float(d) ** 0.5)
    # causal mask: position i may only attend to positions <= i
    # On h's device: torch.compile on cuda traces arange without the default
    # device set by peers_gpu.py, and a CPU mask then fails its fake tensors.
    pos = torch.arange(t, device=h.device)
    future = pos.unsqueeze(0) > pos.unsqueeze(1)
    scores = scores.masked_fill(future, float("-inf"))
    ctx = torch.softmax(scores, dim=-1) @ v
    ctx = ctx.transpose(1, 2).reshape(b, t, c)
    return F.linear(ctx, w_o, b_o)


def mlp_branch(h: torch.Tensor, w_up: torch.Tensor, b_up: torch.Tensor, w_down: torch.Tensor,
               b_down: torch.Tensor) -> torch.Tensor:
    return F.linear(F.gelu(F.linear(h, w_up, b_up)), w_down, b_down)


def transformer_layer(x: torch.Tensor, ln1_w: torch.Tensor, ln1_b: torch.Tensor,
                      w_qkv: torch.Tensor, b_qkv: torch.Tensor, w_o: torch.Tensor,
                      b_o: torch.Tensor, ln2_w: torch.Tensor, ln2_b: torch.Tensor,
                      w_up: torch.Tensor, b_up: torch.Tensor, w_down: torch.Tensor,
                      b_down: torch.Tensor, heads: int = 4) -> torch.Tensor:
    c = x.size(-1)
    x = x + attention(F.layer_norm(x, [c], ln1_w, ln1_b), w_qkv, b_qkv, w_o, b_o, heads)
    x = x + mlp_branch(F.layer_norm(x, [c], ln2_w, ln2_b), w_up, b_up, w_down, b_down)
    return x


def conv_bn_relu_pool(x: torch.Tensor, w: torch.Tensor, bn: torch.Tensor,
                      eps: float = 1e-5) -> torch.Tensor:
    y = F.conv2d(x, w, None, stride=1, padding=1)
    y = F.batch_norm(y, bn[2], bn[3], bn[0], bn[1], training=False, eps=eps)
    y = torch.relu(y)
    return F.max_pool2d(y, kernel_size=2, stride=2)


# For TorchScript: modules holding the weights as buffers, so freezing turns
# them into constants (what torch.jit.freeze is for), with forward(x) calling
# the function above.
class Weights(torch.nn.Module):
    def __init__(self, names, weights):
        super().__init__()
        for n, w in zip(names, weights):
            self.register_buffer(n, w)


class MlpModule(Weights):
    def __init__(self, weights):
        super().__init__(["w1", "b1", "w2", "b2"], weights)

    def forward(self, x):
        return mlp(x, self.w1, self.b1, self.w2, self.b2)


class TransformerModule(Weights):
    def __init__(self, weights):
        super().__init__(["ln1_w", "ln1_b", "w_qkv", "b_qkv", "w_o", "b_o", "ln2_w", "ln2_b",
                          "w_up", "b_up", "w_down", "b_down"], weights)

    def forward(self, x):
        return transformer_layer(x, self.ln1_w, self.ln1_b, self.w_qkv, self.b_qkv, self.w_o,
                                 self.b_o, self.ln2_w, self.ln2_b, self.w_up, self.b_up,
                                 self.w_down, self.b_down, 4)


class ConvBlockModule(Weights):
    def __init__(self, weights):
        super().__init__(["w", "bn"], weights)

    def forward(self, x):
        return conv_bn_relu_pool(x, self.w, self.bn)


EXAMPLES = {"mlp": (mlp, MlpModule), "transformer": (transformer_layer, TransformerModule),
            "conv_block": (conv_bn_relu_pool, ConvBlockModule)}


def frozen(module):
    """TorchScript as its docs recommend for inference: script, freeze, optimize."""
    return torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(module.eval())))


def run_variant(run, check, budget, warmup=2):
    y, first = timed_call(run)
    err = check(y)
    return {"time": time_budget(run, budget, first, warmup), "max_err": err, "ok": err <= 1.0}


def example_row(name, smoke, threads, budget, forms=("eager", "torchscript")):
    """forms: of "eager", "torchscript" (not for gpt2_attention: its file is
    no TorchScript module), "compile"."""
    torch_setup(threads)
    specs = {"mlp": mlp_inputs(False, smoke), "transformer": transformer_inputs(smoke),
             "conv_block": conv_block_inputs(smoke),
             "gpt2_attention": gpt2_attention_inputs(smoke)}[name]
    arrays = [make(s) for s in specs]
    ts = [torch.from_numpy(a) for a in arrays]
    fn, module = EXAMPLES[name] if name in EXAMPLES else (gpt2_attention_fn(smoke), None)
    out = {"shapes": shapes_text(specs), "input_sum": input_sum(arrays)}
    with torch.no_grad():
        want = fn(*[t.double() for t in ts]).numpy()
        check = lambda y: sample_err(y.numpy(), want)  # noqa: E731
        if "eager" in forms:
            out["eager"] = guarded(lambda: run_variant(lambda: fn(*ts), check, budget))

        def torchscript():
            mod, x = frozen(module(ts[1:])), ts[0]
            return run_variant(lambda: mod(x), check, budget, warmup=3)

        if "torchscript" in forms and module is not None:
            out["torchscript"] = guarded(torchscript)
        if "compile" in forms:
            out["compile"] = guarded(lambda: compiled_form(fn, ts, check, budget_timer(budget)))
    return out


# --- issue 6's MLP: four PyTorch forms -------------------------------------------------


MLP_FORMS_PT1 = ("eager_functional", "eager_module", "torchscript", "mkldnn")


def mlp_issue6(smoke, threads, budget, forms=MLP_FORMS_PT1):
    """forms: of "eager_functional" (x @ w1 with w1 [in, out], as mlp.kiln),
    "eager_linear" (F.linear with the weights [out, in], as nn.Linear holds
    them), "eager_module" (nn.Sequential), "torchscript", "mkldnn" (last: it
    converts the Sequential in place), "compile_functional", "compile_linear"."""
    torch_setup(threads)
    specs = mlp_inputs(True, smoke)
    x, w1, b1, w2, b2 = [make(s) for s in specs]
    n, d = x.shape
    h = w1.shape[1]
    rows = [0, n // 3, 2 * n // 3, n - 1]  # as check_mlp in model_rows.cpp
    x64 = x[rows].astype(np.float64)
    pre = x64 @ w1.astype(np.float64) + b1
    from math import erf, sqrt
    gelu = np.vectorize(lambda v: 0.5 * v * (1.0 + erf(v / sqrt(2.0))))
    want = gelu(pre) @ w2.astype(np.float64) + b2
    check = lambda y: sample_err(y[rows].numpy() if hasattr(y, "numpy") else y[rows], want)  # noqa
    tx, tw1, tb1, tw2, tb2 = [torch.from_numpy(a) for a in (x, w1, b1, w2, b2)]
    lw1, lw2 = tw1.t().contiguous(), tw2.t().contiguous()
    seq = torch.nn.Sequential(torch.nn.Linear(d, h), torch.nn.GELU(), torch.nn.Linear(h, d)).eval()
    with torch.no_grad():
        seq[0].weight.copy_(lw1)
        seq[0].bias.copy_(tb1)
        seq[2].weight.copy_(lw2)
        seq[2].bias.copy_(tb2)
    out = {"shapes": shapes_text(specs), "input_sum": input_sum([x, w1, b1, w2, b2]),
           "flops": 4.0 * n * d * h}

    def functional(x, w1, b1, w2, b2):
        return F.gelu(x @ w1 + b1) @ w2 + b2

    def linear(x, w1, b1, w2, b2):
        return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)

    def torchscript():
        mod = frozen(seq)
        return run_variant(lambda: mod(tx), check, budget, warmup=3)

    def mkldnn():
        from torch.utils import mkldnn as mkldnn_utils
        mod = mkldnn_utils.to_mkldnn(seq)
        # Dense tensors in and out, as the caller has them: the two
        # conversions (1 MiB each) are inside the timed call.
        return run_variant(lambda: mod(tx.to_mkldnn()).to_dense(), check, budget)

    args, largs = (tx, tw1, tb1, tw2, tb2), (tx, lw1, tb1, lw2, tb2)
    build = {
        "eager_functional": lambda: run_variant(lambda: functional(*args), check, budget),
        "eager_linear": lambda: run_variant(lambda: linear(*largs), check, budget),
        "eager_module": lambda: run_variant(lambda: seq(tx), check, budget),
        "torchscript": torchscript,
        "mkldnn": mkldnn,
        "compile_functional": lambda: compiled_form(functional, args, check, budget_timer(budget)),
        "compile_linear": lambda: compiled_form(linear, largs, check, budget_timer(budget)),
    }
    with torch.no_grad():
        for f in forms:
            out[f] = guarded(build[f])
    ok = [k for k in forms if "time" in out[k]]
    if ok:
        best = min(ok, key=lambda k: out[k]["time"]["min_s"])
        out["time"], out["variant"] = out[best]["time"], best
    out["ok"] = all(out[k].get("ok", True) for k in ok)
    return out


def model_rows(smoke, threads, budget, mlp_forms=MLP_FORMS_PT1,
               example_forms=("eager", "torchscript")):
    out = {"mlp": guarded(lambda: mlp_issue6(smoke, threads, budget, mlp_forms))}
    out["examples"] = {name: guarded(lambda: example_row(name, smoke, threads, budget,
                                                         example_forms))
                       for name in ("mlp", "transformer", "conv_block", "gpt2_attention")}
    return out


if __name__ == "__main__":  # a quick look: python3 bench/peers_models.py
    import json
    import os
    from peers_common import Budget
    print(json.dumps(model_rows(True, int(os.environ.get("THREADS", "2")), Budget(0.2, 2, 3)),
                     indent=1)[:6000])
