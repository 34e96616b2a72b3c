# The torch side of the trace oracle: runs a workspace through the seed classes
# (core/formats/pytorch/seed_classes.py, imported by path — none of our C++ is involved) and captures every
# intermediate the attnscope trace holds, from the module itself: Linear outputs by forward hooks,
# the softmax's input and output by wrapping torch.softmax, and the dropout mask by replacing each
# nn.Dropout's forward with the same computation made visible:
#     noise = F.dropout(torch.ones_like(x), p, training); return x * noise   (kept iff noise != 0)
# which is exactly what torch 1.13's CPU dropout does (x * bernoulli(1−p)/(1−p)); run_plain() lets
# the test check that on the real module.
# Debian's torch has no MKL, so for a workspace with "dropout_rng": "mkl" the keep mask comes from
# mkl_keep() below: MKL's MCG31m1 stream and Bernoulli as Intel documents them (seeded by one
# 32-bit draw of torch's own generator, as torch's bernoulli_ does with MKL), written here in
# NumPy, not from our C++. Everything else is still torch's.
import numpy as np
import torch
import torch.nn.functional as F

MCG31_M, MCG31_A = 2147483647, 1132489760


def torch_draw32(n):
    """n 32-bit outputs of torch's generator (randint below 2³² − 1 takes one random() each; the one
    value it cannot give, 2³² − 1, and 0 seed MCG31 alike)."""
    return torch.randint(0, 2**32 - 1, (n,), dtype=torch.int64).tolist() if n > 0 else []


def torch_draws_dropout(m):
    """Whether this torch draws the model's dropout itself: always unless the workspace asks for MKL's
    stream (the default) with dropout acting; then only mkl_keep() gives its masks."""
    active = m["variant"] in ("causal", "multihead_wrapper", "multihead") and m.get("training", True) \
        and 0 < m.get("dropout", 0.0) < 1
    return not active or m.get("dropout_rng", "mkl") == "default"


def mkl_keep(n, p):
    """One bernoulli_(1 − p) call of torch with MKL over n elements: vslNewStream(VSL_BRNG_MCG31,
    seed) gives x₀ = seed mod m (1 if 0), xᵢ₊₁ = a·xᵢ mod m, uᵢ = xᵢ/m; viRngBernoulli's ICDF
    method returns 1 iff uᵢ < p_bernoulli, compared in single precision."""
    x0 = torch_draw32(1)[0] % MCG31_M or 1
    xs = np.array([x0], dtype=np.uint64)
    while len(xs) < n:  # doubling: the next len(xs) values are these times a^len(xs)
        step = pow(MCG31_A, len(xs), MCG31_M)
        xs = np.concatenate([xs, xs * np.uint64(step) % np.uint64(MCG31_M)])
    u = (xs[:n].astype(np.float64) / MCG31_M).astype(np.float32)
    return u < np.float32(1.0 - p)


# Per variant: the seed class and whether it takes (T, d_in) (v1, v2) or (B, T, d_in).
CLASSES = {
    "self_attention_v1": ("SelfAttention_v1", True),
    "self_attention_v2": ("SelfAttention_v2", True),
    "causal": ("CausalAttention", False),
    "multihead_wrapper": ("MultiHeadAttentionWrapper", False),
    "multihead": ("MultiHeadAttention", False),
}


def torch_inputs(ws):
    """The T × d_in embeddings as torch builds them: a literal matrix or rand/randn after manual_seed."""
    e = ws["embeddings"]
    if isinstance(e, dict):
        torch.manual_seed(e["seed"])
        torch_draw32(e.get("draws_before", 0))
        make = torch.randn if e["random"] == "normal" else torch.rand
        return make(e["rows"], e["cols"])
    return torch.tensor(e, dtype=torch.float32)


def construct(sc, m, T, d_in):
    """torch.manual_seed(seed), then the seed class built as the notebook does (plus our options)."""
    v = m["variant"]
    kw = {"causal": m["causal"], "scale": m["scale"] == "sqrt_dk", "causal_route": m.get("causal_route", "neg_inf")}
    torch.manual_seed(m["seed"])
    torch_draw32(m.get("draws_before", 0))  # what earlier notebook cells drew
    if v == "self_attention_v1":
        model = sc.SelfAttention_v1(d_in, m["d_out"], **kw)
    elif v == "self_attention_v2":
        model = sc.SelfAttention_v2(d_in, m["d_out"], qkv_bias=m["qkv_bias"], **kw)
    elif v == "causal":
        model = sc.CausalAttention(d_in, m["d_out"], T, m["dropout"], qkv_bias=m["qkv_bias"], **kw)
    elif v == "multihead_wrapper":
        model = sc.MultiHeadAttentionWrapper(d_in, m["d_out"], T, m["dropout"], m["num_heads"],
                                             qkv_bias=m["qkv_bias"], **kw)
    elif v == "multihead":
        model = sc.MultiHeadAttention(d_in, m["d_out"], T, m["dropout"], m["num_heads"],
                                      qkv_bias=m["qkv_bias"], **kw)
    else:
        raise ValueError(v)
    model.train(m["training"])
    return model


def load_parameters(model, ws):
    """The workspace's own "parameters" over the seeded initialization, as a learner loads a
    state_dict: load_state_dict(…, strict=False) after the constructor has made its draws (so the
    dropout draws that follow are the same). Values are exact float32 (JSON numbers)."""
    values = ws.get("parameters")
    if values:
        tensors = {k: torch.tensor(v, dtype=torch.float32) for k, v in values.items()}
        result = model.load_state_dict(tensors, strict=False)
        if result.unexpected_keys:
            raise AssertionError("torch does not know the parameters %s" % result.unexpected_keys)


def run_module(model, batch, per_element, m):
    if m.get("dropout_seed") is not None:
        torch.manual_seed(m["dropout_seed"])  # right before the forward, as cells [31] and [32]
    if per_element:
        return torch.stack([model(x) for x in batch])
    return model(batch)


def run_plain(sc, ws):
    """The unmodified module's output (for checking that the dropout capture changes nothing)."""
    m = ws["model"]
    x = torch_inputs(ws)
    batch = torch.stack([x] * m["batch_size"], dim=0)
    model = construct(sc, m, x.shape[0], x.shape[1])
    load_parameters(model, ws)
    with torch.no_grad():
        return run_module(model, batch, CLASSES[m["variant"]][1], m)


class Capture:
    """Records torch.softmax calls, Linear outputs, out_proj inputs, dropout calls and head outputs."""

    def __init__(self, model, stream="default"):
        self.stream = stream
        self.softmax, self.linear, self.dropout, self.module_out = [], {}, {}, {}
        self.out_proj_in = []
        self._hooks = []
        for name, mod in model.named_modules():
            if isinstance(mod, torch.nn.Linear):
                self.linear[name] = []
                self._hooks.append(mod.register_forward_hook(self._linear_hook(name)))
                if name == "out_proj":
                    self._hooks.append(mod.register_forward_pre_hook(
                        lambda _m, args: self.out_proj_in.append(args[0].clone())))
            elif isinstance(mod, torch.nn.Dropout):
                self.dropout[name] = []
                mod.forward = self._dropout_forward(name, mod)
            elif name.startswith("heads.") and name.count(".") == 1:
                self.module_out[name] = []
                self._hooks.append(mod.register_forward_hook(
                    lambda _m, _a, out, name=name: self.module_out[name].append(out.clone())))

    def _linear_hook(self, name):
        return lambda _m, _a, out: self.linear[name].append(out.clone())

    def _dropout_forward(self, name, mod):
        def forward(x):
            if self.stream == "mkl" and mod.training and 0 < mod.p < 1:
                keep = torch.from_numpy(mkl_keep(x.numel(), mod.p)).reshape(x.shape)
                noise = keep.to(x.dtype).div_(1 - mod.p)  # as torch's _dropout_impl scales it
            else:
                noise = F.dropout(torch.ones_like(x), mod.p, mod.training)
            out = x * noise
            self.dropout[name].append((x.clone(), noise != 0, out.clone()))
            return out
        return forward

    def __enter__(self):
        self._softmax = torch.softmax

        def recording_softmax(x, *args, **kwargs):
            y = self._softmax(x, *args, **kwargs)
            self.softmax.append((x.clone(), y.clone()))
            return y

        torch.softmax = recording_softmax
        return self

    def __exit__(self, *exc):
        torch.softmax = self._softmax
        for h in self._hooks:
            h.remove()
        return False


def head_record(q, k, v, hw, scale, causal, softmax_in, weights, keep, dropped, context, softmax_out=None):
    """One head of one batch element, in the trace's vocabulary. Scores are recomputed with torch
    from the captured Q and K (the class masks them in place); the rest is captured. With the tril
    route (softmax_out given: the softmax over every key) the scores are not masked, and the route's
    own stages are added: the softmax's output, tril and their product."""
    T = q.shape[0]
    scores = q @ k.T
    mask = torch.triu(torch.ones(T, T), diagonal=1).bool() if causal else torch.zeros(T, T).bool()
    # The class's order: attn_scores.masked_fill_(mask, -inf), then softmax(attn_scores / d_k**0.5):
    # the masked stage holds the raw scores, the softmax's input is the scaled stage.
    masked = scores.masked_fill(mask, -torch.inf) if softmax_out is None else scores
    scaled = masked / hw ** 0.5 if scale else masked  # the class divides by d_k ** 0.5 or 1.0
    # (The class's batched matmul may round differently from this 2-D one: close, not equal.)
    if not torch.allclose(scaled, softmax_in, rtol=1e-5, atol=1e-6):
        raise AssertionError("the softmax input is not the masked scores / sqrt(d_k)")
    record = {"queries": q, "keys": k, "values": v, "scores": scores, "mask": mask,
              "masked_scores": masked, "scaled_scores": softmax_in, "weights": weights,
              "dropout_mask": keep, "dropped_weights": dropped, "context": context}
    if softmax_out is not None:
        tril = torch.tril(torch.ones(T, T))
        record.update({"unmasked_weights": softmax_out, "tril": tril.bool(), "tril_weights": softmax_out * tril})
    return record


def simple_reference(ws, sc, x, B):
    """Section 3.3: the seed's simple_attention, its intermediates recomputed with the same ops."""
    m = ws["model"]
    scale = m["scale"] == "sqrt_dk"
    batches = []
    for _ in range(B):
        with Capture(torch.nn.Module()) as cap:
            out = sc.simple_attention(x, normalization=m["normalization"], scale=scale)
        scores = x @ x.T
        scaled = scores / x.shape[-1] ** 0.5 if scale else scores
        if m["normalization"] == "sum":
            weights = scaled / scaled.sum(dim=-1, keepdim=True)
            assert not cap.softmax
        else:
            (softmax_in, weights), = cap.softmax
            assert torch.equal(softmax_in, scaled)
        T = x.shape[0]
        head = {"queries": x, "keys": x, "values": x, "scores": scores, "scaled_scores": scaled,
                "mask": torch.zeros(T, T).bool(), "masked_scores": scores, "weights": weights,
                "dropout_mask": torch.ones(T, T).bool(), "dropped_weights": weights,
                "context": weights @ x}
        batches.append({"heads": [head], "context": out, "output": out})
    return {"params": {}, "batches": batches}


def reference(ws, sc):
    """Everything the attnscope trace of `ws` holds, computed by torch: params, batches[b].heads[h]…"""
    m = ws["model"]
    x = torch_inputs(ws)
    T, d_in = x.shape
    B = m["batch_size"]
    batch = torch.stack([x] * B, dim=0)
    with torch.no_grad():
        if m["variant"] == "simple":
            return simple_reference(ws, sc, x, B)
        model = construct(sc, m, T, d_in)
        load_parameters(model, ws)
        params = {k: v.clone() for k, v in model.state_dict().items()
                  if k.split(".")[-1] != "mask"}  # the causal mask buffer is no parameter
        with Capture(model, m.get("dropout_rng", "mkl")) as cap:
            out = run_module(model, batch, CLASSES[m["variant"]][1], m)
        return {"params": params, "batches": assemble(m, x, model, cap, out, sc), "output": out}


def assemble(m, x, model, cap, out, sc):
    v, B, T = m["variant"], m["batch_size"], x.shape[0]
    scale, causal = m["scale"] == "sqrt_dk", m["causal"]
    tril = causal and m.get("causal_route", "neg_inf") == "tril"

    def routed(sm):
        """The weights the class goes on with, and the softmax's output when the tril route keeps it
        apart: the class's own function on the captured softmax, so the very same bits."""
        return (sc.tril_route(sm), sm) if tril else (sm, None)
    all_kept = torch.ones(T, T).bool()
    batches = []
    for b in range(B):
        heads = []
        if v in ("self_attention_v1", "self_attention_v2"):
            if v == "self_attention_v1":
                q, k, val = x @ model.W_query, x @ model.W_key, x @ model.W_value
            else:
                q, k, val = (cap.linear[n][b] for n in ("W_query", "W_key", "W_value"))
            softmax_in, sm = cap.softmax[b]
            w, u = routed(sm)
            heads.append(head_record(q, k, val, m["d_out"], scale, causal, softmax_in, w,
                                     all_kept, w, out[b], u))
            context = out[b]
        elif v == "causal":
            q, k, val = (cap.linear[n][0][b] for n in ("W_query", "W_key", "W_value"))
            (softmax_in, sm), = cap.softmax
            w, u = routed(sm)
            (d_in_, keep, d_out_), = cap.dropout["dropout"]
            assert torch.equal(d_in_, w)
            heads.append(head_record(q, k, val, m["d_out"], scale, causal, softmax_in[b], w[b],
                                     keep[b], d_out_[b], out[b], None if u is None else u[b]))
            context = out[b]
        elif v == "multihead_wrapper":
            assert len(cap.softmax) == m["num_heads"]
            for h in range(m["num_heads"]):
                q, k, val = (cap.linear["heads.%d.%s" % (h, n)][0][b]
                             for n in ("W_query", "W_key", "W_value"))
                softmax_in, sm = cap.softmax[h]
                w, u = routed(sm)
                (d_in_, keep, d_out_), = cap.dropout["heads.%d.dropout" % h]
                assert torch.equal(d_in_, w)
                heads.append(head_record(q, k, val, m["d_out"], scale, causal, softmax_in[b], w[b],
                                         keep[b], d_out_[b], cap.module_out["heads.%d" % h][0][b],
                                         None if u is None else u[b]))
            context = out[b]
        elif v == "multihead":
            H = m["num_heads"]
            hd = m["d_out"] // H
            (softmax_in, sm), = cap.softmax
            w, u = routed(sm)
            (d_in_, keep, d_out_), = cap.dropout["dropout"]
            assert torch.equal(d_in_, w)
            context = cap.out_proj_in[0][b]
            for h in range(H):
                q, k, val = (cap.linear[n][0][b].view(T, H, hd)[:, h, :]
                             for n in ("W_query", "W_key", "W_value"))
                heads.append(head_record(q, k, val, hd, scale, causal, softmax_in[b, h], w[b, h],
                                         keep[b, h], d_out_[b, h], context[:, h * hd:(h + 1) * hd],
                                         None if u is None else u[b, h]))
        else:
            raise ValueError(v)
        batches.append({"heads": heads, "context": context, "output": out[b]})
    return batches


def check_masked_softmax_input(ref):
    """Torch-side sanity: the softmax input is −∞ exactly where the mask says, finite elsewhere."""
    for bt in ref["batches"]:
        for h in bt["heads"]:
            if "tril" in h:
                continue  # the tril route masks the weights, not the scores
            s, mask = h["scaled_scores"], h["mask"]
            if not (torch.all(torch.isneginf(s[mask])) and torch.all(torch.isfinite(s[~mask]))):
                raise AssertionError("torch's softmax input is not -inf exactly at the causal mask")


def statistics(weights, dropped):
    """Issue 12's head statistics computed by torch from torch's own weights and dropped weights
    (T × T each), in float64: per query row the entropy −Σ α ln α in nats (0·ln 0 = 0, cells ≤ 0 left
    out), exp(entropy), the largest weight and its key (torch.argmax: the first on ties) and the row
    sum after dropout; per head the mean entropy, the mean weight on the previous token (rows i ≥ 1)
    and on the first token. Nothing of ours is involved."""
    w = weights.double()
    positive = w > 0
    logs = torch.log(torch.where(positive, w, torch.ones_like(w)))
    entropy = -torch.where(positive, w * logs, torch.zeros_like(w)).sum(dim=-1)
    argmax = torch.argmax(w, dim=-1)
    T = w.shape[0]
    return {"entropy": entropy, "effective_tokens": torch.exp(entropy),
            "max_weight": w.gather(-1, argmax.unsqueeze(-1)).squeeze(-1), "argmax": argmax,
            "row_sum_after_dropout": dropped.double().sum(dim=-1),
            "mean_entropy": entropy.mean(),
            "mean_weight_previous_token": torch.diagonal(w, offset=-1).mean() if T > 1 else None,
            "mean_weight_first_token": w[:, 0].mean()}
