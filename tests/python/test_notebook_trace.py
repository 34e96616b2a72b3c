"""The Python package against torch (docs/DESIGN.md §3.8 "From the notebook"): for the chapter's classes
(core/formats/pytorch/seed_classes.py, imported by path) and look-alikes written differently, the
workspace `attnscope.workspace(m, x)` makes and `attnscope.trace(m, x)` computes equal what the
module itself computes — on one input, on the chapter's stacked batch and on a batch of different
sequences: the output m(x) within 1e-5, and the attention weights — seen by a hook on
the module's dropout, or on torch.softmax where a module has none — within 1e-6. Then the refusals:
a module it cannot map is refused naming what is missing, nothing is computed.

Usage: test_notebook_trace.py   (PYTHONPATH holds the repository's python/, ATTNSCOPE_CLI the CLI)
"""
import importlib.util
import os
import sys

import numpy as np
import torch
import torch.nn as nn

import attnscope

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "seed_classes", os.path.join(HERE, "..", "..", "core", "formats", "pytorch", "seed_classes.py"))
sc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sc)

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL", what)


# [SECTION] Look-alikes: the same maths, written otherwise --------------------------------------------

class FusedMHA(nn.Module):
    """MultiHeadAttention written otherwise: attributes in another order, its own names for the rest
    (n_heads beside num_heads), the mask as a plain attribute, the heads split by reshape."""

    def __init__(self, d_in, d_out, T, num_heads, qkv_bias):
        super().__init__()
        self.out_proj = nn.Linear(d_out, d_out)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.num_heads = num_heads
        self.dropout = nn.Dropout(0.0)
        self.mask = torch.ones(T, T).triu(1).bool()

    def forward(self, x):
        B, T, _ = x.shape
        H = self.num_heads
        split = lambda t: t.reshape(B, T, H, -1).permute(0, 2, 1, 3)
        q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        s = (q @ k.transpose(-1, -2)).masked_fill(self.mask[:T, :T], float("-inf"))
        w = self.dropout(torch.softmax(s / k.shape[-1] ** 0.5, dim=-1))
        return self.out_proj((w @ v).permute(0, 2, 1, 3).reshape(B, T, -1))


class MatrixAttention(nn.Module):
    """SelfAttention_v1 written otherwise: value first, the matrices made from a list."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_value, self.W_key, self.W_query = (nn.Parameter(torch.randn(d_in, d_out)) for _ in range(3))

    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        return torch.softmax(q @ k.T / k.shape[-1] ** 0.5, dim=-1) @ v


# [SECTION] Running both sides ------------------------------------------------------------------------

class Weights:
    """Every attention weight tensor the module computes: the input of each nn.Dropout (the chapter's
    classes drop the weights right after the softmax), else each torch.softmax's output."""

    def __init__(self, module):
        self.seen = []
        self.hooks = [m.register_forward_hook(lambda mod, inp, out: self.seen.append(inp[0].detach().clone()))
                      for m in module.modules() if isinstance(m, nn.Dropout)]
        self.softmax = None
        if not self.hooks:
            self.softmax = torch.softmax

            def spy(*args, **kwargs):
                out = self.softmax(*args, **kwargs)
                self.seen.append(out.detach().clone())
                return out
            torch.softmax = spy

    def close(self):
        for h in self.hooks:
            h.remove()
        if self.softmax is not None:
            torch.softmax = self.softmax


def run(name, module, x, batched):
    """m(x) and its weights (heads × T × T of batch element 0) against attnscope.trace."""
    spy = Weights(module)
    with torch.no_grad():
        y = module(x)
    spy.close()
    w = torch.cat([t[0] if t.dim() == 4 else (t[0:1] if t.dim() == 3 else t[None]) for t in spy.seen]) \
        if batched else torch.stack([t for t in spy.seen])
    t = attnscope.trace(module, x)
    got = t.output if batched else t.output[0]
    out_err = float(np.abs(got - y.numpy()).max())
    w_err = float(np.abs(t.weights - w.numpy()).max())
    check(out_err <= 1e-5, f"{name}: output off by {out_err:.3g}")
    check(w_err <= 1e-6, f"{name}: weights off by {w_err:.3g}")
    print(f"{name}: output within {out_err:.2g}, weights within {w_err:.2g}")
    return t


def main():
    torch.manual_seed(789)
    x2 = torch.rand(9, 5)
    same = torch.stack((x2, x2))

    m = sc.SelfAttention_v1(5, 4)
    run("SelfAttention_v1", m, x2, batched=False)
    m = sc.SelfAttention_v2(5, 4, qkv_bias=True)
    run("SelfAttention_v2, qkv_bias", m, x2, batched=False)
    run("MatrixAttention (v1 look-alike)", MatrixAttention(5, 3), x2, batched=False)
    for training in (False, True):  # eval, and training with p = 0
        mode = "training p = 0" if training else "eval"
        m = sc.CausalAttention(5, 4, 9, 0.0, qkv_bias=training).train(training)
        run(f"CausalAttention, {mode}", m, same, batched=True)
        m = sc.MultiHeadAttentionWrapper(5, 2, 9, 0.0, num_heads=3).train(training)
        run(f"MultiHeadAttentionWrapper, 3 heads, {mode}", m, same, batched=True)
        m = sc.MultiHeadAttention(5, 6, 9, 0.0, num_heads=3, qkv_bias=True).train(training)
        run(f"MultiHeadAttention, 3 heads, qkv_bias, {mode}", m, same, batched=True)
        run(f"FusedMHA (look-alike), {mode}", FusedMHA(5, 6, 9, 2, qkv_bias=True).train(training), same,
            batched=True)
    m = sc.MultiHeadAttention(5, 6, 9, 0.0, num_heads=3, causal=False, scale=False)
    run("MultiHeadAttention without mask or scale (the seed classes' options)", m, same, batched=True)
    # A batch of different sequences: each element its own input, every output checked.
    different = torch.rand(3, 9, 5)
    for training in (False, True):
        mode = "training p = 0" if training else "eval"
        m = sc.MultiHeadAttention(5, 6, 9, 0.0, num_heads=2, qkv_bias=True).train(training)
        t = run(f"MultiHeadAttention, a batch of 3 different sequences, {mode}", m, different, batched=True)
        check(len(t.workspace["batch_sequences"]) == 2 and t.workspace["model"]["batch_size"] == 3,
              "the batch's own sequences in the workspace")
        m = sc.CausalAttention(5, 4, 9, 0.0).train(training)
        run(f"CausalAttention, a batch of 3 different sequences, {mode}", m, different, batched=True)
        m = sc.MultiHeadAttentionWrapper(5, 2, 9, 0.0, num_heads=2).train(training)
        run(f"MultiHeadAttentionWrapper, a batch of 3 different sequences, {mode}", m, different, batched=True)

    # The workspace: the parameters exactly (float32 bits), the tokens given or t1 … tT.
    m = sc.MultiHeadAttention(5, 6, 9, 0.0, num_heads=3, qkv_bias=True)
    ws = attnscope.workspace(m, x2, tokens=list("abcdefghi"))
    check(ws["model"]["variant"] == "multihead" and ws["model"]["num_heads"] == 3, "the workspace's model")
    exact = all(np.array_equal(np.array(ws["parameters"][k], dtype=np.float32), v.numpy())
                for k, v in m.state_dict().items() if k != "mask")
    check(exact, "the workspace's parameters are the module's float32 values")
    check(ws["tokens"] == list("abcdefghi"), "the tokens given")
    check(attnscope.workspace(m, x2)["tokens"][-1] == "t9", "t1 … tT by default")

    # Refusals: one message naming what is missing, nothing computed.
    def refused(what, call, words):
        try:
            call()
        except (attnscope.ModuleError, attnscope.AttnscopeError) as e:
            ok = all(w in str(e) for w in words)
            check(ok, f"{what}: the message '{e}' lacks {words}")
            print(f"refused ({what}): {e}")
            return
        check(False, f"{what}: not refused")

    refused("no W_query", lambda: attnscope.trace(nn.Linear(5, 3), x2), ["W_query"])
    no_heads = sc.MultiHeadAttention(5, 6, 9, 0.0, num_heads=3)
    del no_heads.num_heads
    refused("MultiHeadAttention without num_heads", lambda: attnscope.trace(no_heads, same), ["num_heads"])
    refused("x of the wrong width", lambda: attnscope.trace(sc.SelfAttention_v2(4, 2), x2), ["d_in = 4", "5 columns"])
    refused("NaN in x", lambda: attnscope.trace(sc.SelfAttention_v2(5, 2), x2 * float("nan")), ["NaN"])
    refused("tokens of another count", lambda: attnscope.workspace(sc.SelfAttention_v2(5, 2), x2, tokens=["a"]),
            ["tokens", "9 rows"])
    refused("a 4-D input", lambda: attnscope.trace(sc.SelfAttention_v2(5, 2), x2[None, None]), ["B × T × d_in"])

    if failures:
        sys.exit(f"{len(failures)} checks failed")
    print("all checks passed")


if __name__ == "__main__":
    main()
