"""attnscope from a notebook: a learner's attention module in attnscope's app and engine.

    import attnscope
    attnscope.show(mha, x)             # the running app shows it (one undo step), started if none runs
    t = attnscope.trace(mha, x)        # attnscope's own computation: t.output, t.heads[h]["weights"], …

The chapter's classes and look-alikes written differently are recognized by their attributes
(attnscope._modules); their parameters are taken exactly. Pure Python over NumPy; torch only where the
caller passes torch objects. The computation is attnscope-cli's (the same engine as the app), so `trace`
is what the app shows, number for number. docs/DESIGN.md §3.8 "From the notebook".
"""
import json
import os
import subprocess
import tempfile

import numpy as np

from . import _channel, _picture, _programs
from ._channel import ChannelError
from ._modules import ModuleError, workspace, workspace_arrays, write_workspace

__all__ = ["workspace", "trace", "show", "show_attention", "capture", "command", "Trace", "Shown", "ShownAttention",
           "ModuleError", "AttnscopeError", "ChannelError"]


class AttnscopeError(RuntimeError):
    """attnscope refused the request; the message is its one line saying why."""


def _array(rows):
    """A trace matrix (null for −∞, as the trace JSON writes masked scores) as float32."""
    return np.array([[-np.inf if v is None else v for v in row] for row in rows], dtype=np.float32) \
        if rows and isinstance(rows[0], list) else np.array(rows, dtype=np.float32)


class Trace:
    """attnscope's computation of a module on an input: `output` (B × T × d_out, every batch element),
    `context` (B × T × H·w), and for batch element 0 per head every stage (`heads[h]["weights"]`,
    `"scores"`, `"masked_scores"`, `"scaled_scores"`, `"queries"`, `"keys"`, `"values"`,
    `"dropout_mask"`, `"dropped_weights"`, `"context"`), `weights` (H × T × T), `parameters` (by
    state_dict name, torch's layouts) and the `workspace` it ran on."""

    def __init__(self, document, ws):
        self.workspace = ws
        self.tokens = list(ws["tokens"])
        batches = document["batches"]
        self.output = np.stack([_array(b["output"]) for b in batches])
        self.context = np.stack([_array(b["context"]) for b in batches])
        self.heads = []
        for head in batches[0]["heads"]:
            self.heads.append({k: _array(v) for k, v in head.items()
                               if k != "statistics" and isinstance(v, list)})
        self.weights = np.stack([h["weights"] for h in self.heads]) if self.heads else None
        self.parameters = {k: np.array(v, dtype=np.float32) for k, v in document.get("parameters", {}).items()}

    def _repr_png_(self):
        """Every head's weights as the app draws them (a notebook shows this inline)."""
        return _picture.render(self.workspace)

    def __repr__(self):
        return (f"<attnscope.Trace {self.workspace['model']['variant']}: {len(self.tokens)} tokens, "
                f"{len(self.heads)} heads, output {tuple(self.output.shape)}>")


def _run(args, what):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        message = p.stderr.strip().splitlines()
        raise AttnscopeError(message[-1].removeprefix("error: ") if message else f"{what} failed ({p.returncode})")
    return p.stdout


def trace(module, x, tokens=None, dropout_seed=None):
    """attnscope's own computation of `module` on `x` (T × d_in, or a B × T × d_in batch): a Trace.
    Training with dropout matches the module's own forward when torch.manual_seed(dropout_seed) is
    called right before it."""
    ws = workspace(module, x, tokens, dropout_seed)
    with tempfile.TemporaryDirectory(prefix="attnscope-") as folder:
        path = write_workspace(ws, os.path.join(folder, "workspace.json"))
        out = _run([_programs.cli(), "trace", path, "--batch", "0"], "attnscope-cli trace")
    return Trace(json.loads(out), ws)


# [SECTION] The running app ----------------------------------------------------------------------------

def _send(commands, tensors=None, start=True):
    """Sends commands to the running app, starting one (attnscope --listen) when none listens."""
    try:
        return _channel.send(commands, tensors)
    except ConnectionError:
        if not start:
            raise
    _channel.start_app()
    return _channel.send(commands, tensors)


def command(commands, start=True):
    """Sends one command ({"do": …, args}) or a list of them — the table of `attnscope --commands`
    (README) — to the running app; returns its reply or raises ChannelError with its refusal. The
    commands of one call are one message: checked whole, applied in order, stopped at a refusal."""
    listed = [commands] if isinstance(commands, dict) else list(commands)
    return _send(listed, start=start)


def show(module, x, tokens=None, dropout_seed=None, wait=False):
    """The running app shows `module` on `x` as one undo step (starting the app if none runs): its
    workspace (attnscope.workspace) with every number sent as float32 bits. Returns once the app has
    taken it; with wait=True once its maps are on screen (every head computed)."""
    ws = workspace_arrays(module, x, tokens, dropout_seed)
    tensors = _channel.Tensors()
    sent = dict(ws, embeddings=tensors.add("x", ws["embeddings"]),
                parameters={k: tensors.add(k, v) for k, v in ws["parameters"].items()})
    if "batch_sequences" in ws:
        sent["batch_sequences"] = [tensors.add(f"x{b + 1}", m) for b, m in enumerate(ws["batch_sequences"])]
    _send([{"do": "workspace", "json": sent}] + ([{"do": "wait"}] if wait else []), tensors)
    # The copies sent are what Shown keeps: a module trained on in place does not change them.
    return Shown(tensors.resolved(sent))


class Shown:
    """What `show` sent; in a notebook it draws as a picture of its heads' weights. Its `workspace`
    (numbers as lists) is made when first asked for: GPT-2-sized lists took 120 ms of every show."""

    def __init__(self, arrays):
        self._arrays = arrays  # the copies that were sent (Tensors.copy)
        self._workspace = None

    @property
    def workspace(self):
        if self._workspace is None:
            self._workspace = _modules.as_lists(self._arrays)
        return self._workspace

    def _repr_png_(self):
        return _picture.render(self.workspace)

    def __repr__(self):
        return f"<attnscope.Shown {self.workspace['model']['variant']}: {len(self.workspace['tokens'])} tokens>"


# [SECTION] Attention maps from any model -----------------------------------------------------------

def _maps(attn):
    """attn as float32 [L, H, T, T]: one [H, T, T] (or [1, H, T, T]) per layer, as a list (a Hugging
    Face model's output_attentions) or stacked; a 3-D tensor is one layer."""
    from ._modules import as_float32
    layers = list(attn) if isinstance(attn, (list, tuple)) else None
    if layers is None:
        a = as_float32(attn, "attention")
        if a.ndim == 3:
            a = a[None]
        elif a.ndim == 5 and a.shape[1] == 1:  # stacked [L, 1, H, T, T]
            a = a[:, 0]
        if a.ndim != 4:
            raise ModuleError(f"attention: expected [heads, T, T], [layers, heads, T, T] or a list of layers, "
                              f"got shape {list(a.shape)}")
        return a
    out = []
    for i, layer in enumerate(layers):
        a = as_float32(layer, f"attention[{i}]")
        if a.ndim == 4:
            if a.shape[0] != 1:
                raise ModuleError(f"attention[{i}]: a batch of {a.shape[0]}: give one element's maps (attn[0])")
            a = a[0]
        if a.ndim != 3:
            raise ModuleError(f"attention[{i}]: expected [heads, T, T], got shape {list(a.shape)}")
        out.append(a)
    if not out:
        raise ModuleError("attention: no layers")
    if len({a.shape for a in out}) != 1:
        raise ModuleError("attention: the layers differ in heads or tokens: " + str(sorted({a.shape for a in out})))
    return np.stack(out)


def show_attention(attn, tokens=None, title=None):
    """The running app's model view shows attention maps of any model as they are, without
    recomputing: every layer's heads as thumbnails with their scores (previous token, sink,
    duplicate, induction), a head's map with its tokens. `attn`: [heads, T, T], [layers, heads, T, T],
    or a list per layer (e.g. a Hugging Face model's output_attentions, batch element 0)."""
    maps = _maps(attn)
    L, H, T, T2 = maps.shape
    if T != T2:
        raise ModuleError(f"attention: maps of {T} × {T2}, expected T × T")
    tokens = [f"t{i + 1}" for i in range(T)] if tokens is None else [str(t) for t in tokens]
    if len(tokens) != T:
        raise ModuleError(f"tokens: {len(tokens)} names for maps over {T} tokens")
    tensors = _channel.Tensors()
    command = {"do": "attention", "maps": tensors.add("maps", maps), "tokens": tokens}
    if title:
        command["title"] = str(title)
    _send([command], tensors)
    return ShownAttention(L, H, T, title)


class ShownAttention:
    """What show_attention sent; in a notebook it draws as the app's model view of it."""

    def __init__(self, layers, heads, tokens, title):
        self.layers, self.heads, self.tokens, self.title = layers, heads, tokens, title

    def _repr_png_(self):
        with tempfile.TemporaryDirectory(prefix="attnscope-") as folder:
            path = os.path.join(folder, "layers.png")
            _send([{"do": "screenshot", "path": path, "panel": "layers"}], start=False)
            with open(path, "rb") as f:
                return f.read()

    def __repr__(self):
        return f"<attnscope.ShownAttention {self.layers} layers × {self.heads} heads, {self.tokens} tokens>"


def capture(model, x, tokens=None, title=None):
    """Runs `model` on `x` (torch.no_grad) and shows every layer's and head's attention weights, as
    its attention modules compute them: a hook on each chapter-like attention module's dropout (the
    weights right after the softmax, as the chapter's classes and the book's GPTModel compute them),
    in the order the forward calls them; batch element 0. Returns what the model returned."""
    import torch
    from torch import nn
    seen = []
    hooks = []
    for name, module in model.named_modules():
        if all(hasattr(module, a) for a in ("W_query", "W_key", "W_value")) and \
                isinstance(getattr(module, "dropout", None), nn.Module):
            hooks.append(module.dropout.register_forward_hook(
                lambda mod, inputs, out: seen.append(inputs[0].detach()[0].float().cpu())))
    if not hooks:
        raise ModuleError("the model has no attention module with W_query, W_key, W_value and a dropout: "
                          "attnscope.show_attention takes maps from any model")
    try:
        with torch.no_grad():
            out = model(x)
    finally:
        for h in hooks:
            h.remove()
    maps = [m if m.dim() == 3 else m[None] for m in seen]  # a single head's (T, T) as [1, T, T]
    show_attention(maps, tokens, title or type(model).__name__)
    return out
