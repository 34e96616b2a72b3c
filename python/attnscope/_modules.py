"""A learner's attention module as an attnscope workspace (docs/DESIGN.md §3.8 "From the notebook").

The chapter's classes — SelfAttention_v1, SelfAttention_v2, CausalAttention, MultiHeadAttentionWrapper,
MultiHeadAttention — and look-alikes written differently are recognized by their attributes, never by
their class names: `W_query`/`W_key`/`W_value` (nn.Parameter d_in × d_out: v1; nn.Linear: the others),
a causal `mask` buffer or a `dropout`, `heads` (a list of causal heads: the wrapper), `out_proj` and
`num_heads` (MultiHeadAttention). The parameters are taken exactly (their float32 values), the input
as given. Nothing of the module is called: it is read.
"""
import os

import numpy as np

__all__ = ["workspace", "workspace_arrays", "module_model", "ModuleError"]


class ModuleError(ValueError):
    """The module is not one attnscope can show; the message names what is missing."""


# [SECTION] Tensors ----------------------------------------------------------------------------------

def _is_torch(x):
    return type(x).__module__.startswith("torch")


def as_float32(x, what):
    """x (a torch tensor, a NumPy array or nested lists) as a float32 NumPy array, its values
    unchanged when it already holds float32. Refused when it holds anything but finite numbers."""
    if _is_torch(x):
        x = x.detach().cpu()
        if x.is_complex():
            raise ModuleError(f"{what}: complex numbers, attnscope computes in float32")
        x = x.float().numpy()
    try:
        a = np.asarray(x, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise ModuleError(f"{what}: not an array of numbers ({e})") from None
    if not np.all(np.isfinite(a)):
        raise ModuleError(f"{what}: holds NaN or infinity")
    return a


def _rows(a):
    """A float32 array as nested lists of Python floats: each float32 is exactly a double, and the
    workspace reader rounds it back to the same float32."""
    return a.astype(np.float64).tolist()


# [SECTION] Recognizing the module ----------------------------------------------------------------

def _linear(layer, name):
    """(weight out × in, bias or None) of an nn.Linear-like layer."""
    weight = getattr(layer, "weight", None)
    if weight is None:
        raise ModuleError(f"{name}: neither a matrix nor a layer with a .weight")
    w = as_float32(weight, name + ".weight")
    if w.ndim != 2:
        raise ModuleError(f"{name}.weight: expected a matrix (d_out × d_in), got shape {list(w.shape)}")
    b = getattr(layer, "bias", None)
    return w, (None if b is None else as_float32(b, name + ".bias"))


def _dropout_p(module):
    d = getattr(module, "dropout", None)
    if d is None:
        return 0.0
    p = getattr(d, "p", d if isinstance(d, (int, float)) else None)
    if p is None:
        raise ModuleError("dropout: neither a probability nor an nn.Dropout with .p")
    return float(p)


def _has_mask(module):
    buffers = dict(module.named_buffers(recurse=False)) if hasattr(module, "named_buffers") else {}
    return "mask" in buffers or hasattr(module, "mask")


def _projections(module, name, params):
    """Adds W_query, W_key, W_value of `module` (a prefix `name`) to params; returns (d_in, d_out,
    qkv_bias, v1)."""
    for attr in ("W_query", "W_key", "W_value"):
        if not hasattr(module, attr):
            raise ModuleError(f"{name or 'the module'} has no {attr}: attnscope reads modules with W_query, "
                              f"W_key and W_value (the chapter's classes and look-alikes)")
    first = module.W_query
    if not hasattr(first, "weight"):  # SelfAttention_v1: the matrices themselves, d_in × d_out
        shapes = set()
        for attr in ("W_query", "W_key", "W_value"):
            w = as_float32(getattr(module, attr), name + attr)
            shapes.add(w.shape)
            params[name + attr] = w
        if len(shapes) != 1:
            raise ModuleError(f"{name}W_query, W_key, W_value: different shapes {sorted(shapes)}")
        d_in, d_out = next(iter(shapes))
        return d_in, d_out, False, True
    biases = set()
    shapes = set()
    for attr in ("W_query", "W_key", "W_value"):
        w, b = _linear(getattr(module, attr), name + attr)
        params[name + attr + ".weight"] = w
        if b is not None:
            params[name + attr + ".bias"] = b
        biases.add(b is not None)
        shapes.add(w.shape)
    if len(shapes) != 1:
        raise ModuleError(f"{name}W_query, W_key, W_value: different shapes {sorted(shapes)}")
    if len(biases) != 1:
        raise ModuleError(f"{name}W_query, W_key, W_value: some have a bias and some not")
    d_out, d_in = next(iter(shapes))
    return d_in, d_out, biases.pop(), False


def module_model(module):
    """(model, parameters, d_in): the workspace's "model" object and its parameters by state_dict
    name (float32 arrays) for a chapter-like module."""
    params = {}
    training = bool(getattr(module, "training", False))
    heads = getattr(module, "heads", None)
    if heads is not None and not hasattr(module, "W_query"):  # MultiHeadAttentionWrapper
        heads = list(heads)
        if not heads:
            raise ModuleError("heads: the wrapper has no heads")
        found = [_projections(h, f"heads.{i}.", params) for i, h in enumerate(heads)]
        if len({f[:3] for f in found}) != 1:
            raise ModuleError("heads: the heads differ in d_in, d_out or qkv_bias")
        d_in, d_out, bias, v1 = found[0]
        if v1:
            raise ModuleError("heads.0.W_query: a matrix; the wrapper's heads are CausalAttention (nn.Linear)")
        ps = {_dropout_p(h) for h in heads}
        if len(ps) != 1:
            raise ModuleError("heads: the heads' dropout differs")
        model = {"variant": "multihead_wrapper", "d_out": d_out, "num_heads": len(heads), "qkv_bias": bias,
                 "dropout": ps.pop(), "causal": all(_has_mask(h) for h in heads)}
    else:
        d_in, d_out, bias, v1 = _projections(module, "", params)
        if v1:
            model = {"variant": "self_attention_v1", "d_out": d_out}
        elif hasattr(module, "out_proj"):  # MultiHeadAttention
            num_heads = getattr(module, "num_heads", None)
            if not isinstance(num_heads, int) or num_heads < 1:
                raise ModuleError("num_heads: MultiHeadAttention's weights do not say how it splits d_out into "
                                  "heads, and the module has no integer num_heads")
            if d_out % num_heads:
                raise ModuleError(f"num_heads: {num_heads} does not divide d_out = {d_out}")
            w, b = _linear(module.out_proj, "out_proj")
            if w.shape != (d_out, d_out):
                raise ModuleError(f"out_proj.weight: expected {d_out} × {d_out}, got {w.shape[0]} × {w.shape[1]}")
            params["out_proj.weight"] = w
            if b is None:
                raise ModuleError("out_proj.bias: the chapter's out_proj has a bias (nn.Linear(d_out, d_out))")
            params["out_proj.bias"] = b
            model = {"variant": "multihead", "d_out": d_out, "num_heads": num_heads, "qkv_bias": bias,
                     "dropout": _dropout_p(module), "causal": _has_mask(module)}
        elif _has_mask(module) or hasattr(module, "dropout"):  # CausalAttention
            model = {"variant": "causal", "d_out": d_out, "qkv_bias": bias, "dropout": _dropout_p(module),
                     "causal": _has_mask(module)}
        else:
            model = {"variant": "self_attention_v2", "d_out": d_out, "qkv_bias": bias}
    # The seed classes' exploration options (core/formats/pytorch/seed_classes.py), where a module
    # has them: no mask, no division by √d_k, the notebook's tril route.
    options = heads[0] if model["variant"] == "multihead_wrapper" else module
    if isinstance(getattr(options, "causal", None), bool):
        model["causal"] = options.causal and (model["variant"] in ("self_attention_v1", "self_attention_v2")
                                              or model.get("causal", True))
    if isinstance(getattr(options, "scale", None), bool):
        model["scale"] = "sqrt_dk" if options.scale else "none"
    if getattr(options, "causal_route", None) in ("neg_inf", "tril"):
        model["causal_route"] = options.causal_route
    model["training"] = training
    if "dropout" in model:
        model["dropout_rng"] = dropout_stream()
    return model, params, d_in


def dropout_stream():
    """Which stream this process's torch draws dropout masks from (docs/DESIGN.md §2.2): MKL's on
    an Intel CPU when torch has MKL, else torch's own."""
    try:
        import torch
        mkl = torch.backends.mkl.is_available()
    except ImportError:
        return "default"
    intel = False
    try:
        with open("/proc/cpuinfo") as f:
            intel = any(line.startswith("vendor_id") and "GenuineIntel" in line for line in f)
    except OSError:
        pass
    return "mkl" if mkl and intel else "default"


# [SECTION] The workspace ---------------------------------------------------------------------------

def workspace(module, x, tokens=None, dropout_seed=None):
    """The workspace dict of `module` on input `x` (see workspace_arrays), its numbers as lists."""
    return as_lists(workspace_arrays(module, x, tokens, dropout_seed))


def as_lists(ws):
    """A workspace_arrays dict with its numbers as nested lists (the JSON a workspace file holds)."""
    ws = dict(ws)
    ws["embeddings"] = _rows(ws["embeddings"])
    if "batch_sequences" in ws:
        ws["batch_sequences"] = [_rows(m) for m in ws["batch_sequences"]]
    ws["parameters"] = {k: _rows(v) for k, v in ws["parameters"].items()}
    return ws


def workspace_arrays(module, x, tokens=None, dropout_seed=None):
    """The workspace dict of `module` on input `x` (T × d_in, or a B × T × d_in batch: the stacked
    copies of one input as the chapter makes it, or different sequences, elements 2 … B then in
    "batch_sequences"): its model, its parameters exactly, the input as given, the tokens (or t1 … tT).
    dropout_seed: torch.manual_seed(dropout_seed) right before the forward (training with dropout)."""
    model, params, d_in = module_model(module)
    a = as_float32(x, "x")
    if a.ndim == 2:
        batch = None
    elif a.ndim == 3:
        batch = a
        model["batch_size"] = a.shape[0]
        if a.shape[0] < 1:
            raise ModuleError("x: an empty batch")
    else:
        raise ModuleError(f"x: expected T × d_in or B × T × d_in, got shape {list(a.shape)}")
    T, width = a.shape[-2], a.shape[-1]
    if width != d_in:
        raise ModuleError(f"x: {width} columns, but the module's W_query reads d_in = {d_in}")
    if T < 1:
        raise ModuleError("x: no tokens")
    if tokens is None:
        tokens = [f"t{i + 1}" for i in range(T)]
    tokens = [str(t) for t in tokens]
    if len(tokens) != T:
        raise ModuleError(f"tokens: {len(tokens)} names for {T} rows of x")
    sequences = None
    if batch is None:
        model.setdefault("batch_size", 1)
        embeddings = a
    else:
        embeddings = batch[0]
        if not all(np.array_equal(batch[0], batch[b]) for b in range(1, batch.shape[0])):
            sequences = list(batch[1:])  # a batch of different sequences: elements 2 … B of their own
        # else the chapter's torch.stack((inputs, inputs)): one input, stacked
    if dropout_seed is not None:
        model["dropout_seed"] = int(dropout_seed)
    ws = {"format": "attnscope-workspace", "version": 1, "tokens": tokens, "model": model,
          "embeddings": embeddings, "parameters": params}
    if sequences is not None:
        ws["batch_sequences"] = sequences
    return ws


def write_workspace(ws, path):
    import json
    with open(path, "w", encoding="utf-8") as f:
        json.dump(ws, f)
    return os.path.abspath(path)
