"""The book's GPTModel (chapter 4 of "Build a Large Language Model (From Scratch)") as the oracle of
attnscope's trained-model forward pass (docs/DESIGN.md §2.6), and tiny random models written in the
real file layouts: the book's own state_dict, and Hugging Face's GPT-2 layout made from it by the
inverse of chapter 5's load_weights_into_gpt mapping.

The classes are the book's (core/formats/pytorch/gpt_classes.py); MultiHeadAttention keeps its
last weights (`last_weights`) so that the test can read every head's weights.
"""
import importlib.util
import json
import os
import sys

import numpy as np
import torch


# [SECTION] The book's chapter 4 classes ------------------------------------------------------------

# The book's classes as core/formats/pytorch/gpt_classes.py holds them (the one copy: pytorch-train's
# scripts embed the same file), loaded by path.
_spec = importlib.util.spec_from_file_location(
    "gpt_classes", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "core", "formats", "pytorch",
                                "gpt_classes.py"))
_classes = importlib.util.module_from_spec(_spec)
sys.modules["gpt_classes"] = _classes  # torch.save of a whole model pickles its classes by module
_spec.loader.exec_module(_classes)
MultiHeadAttention, LayerNorm, GELU = _classes.MultiHeadAttention, _classes.LayerNorm, _classes.GELU
FeedForward, TransformerBlock, GPTModel = _classes.FeedForward, _classes.TransformerBlock, _classes.GPTModel


# [SECTION] Tiny random models ----------------------------------------------------------------------


def bytes_to_unicode():
    """GPT-2's byte → printable character map (openai/gpt-2 encoder.py's definition): byte b's
    character in vocab.json."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars, n = keep[:], 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + n)
            n += 1
    return dict(zip(keep, map(chr, chars)))


def tiny_model(seed, vocab_size=97, context_length=32, emb_dim=64, n_heads=2, n_layers=3, qkv_bias=True,
               tied=False):
    """A GPTModel with random weights everywhere (the LayerNorms' scale and shift too, so that a
    swapped pair shows), in eval mode. tied: out_head is tok_emb, as GPT-2's head is."""
    torch.manual_seed(seed)
    cfg = {"vocab_size": vocab_size, "context_length": context_length, "emb_dim": emb_dim, "n_heads": n_heads,
           "n_layers": n_layers, "drop_rate": 0.1, "qkv_bias": qkv_bias}
    model = GPTModel(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".scale"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif name.endswith(".shift") or name.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))
        if tied:
            model.out_head.weight.copy_(model.tok_emb.weight)
    model.eval()
    return model, cfg


def make_duplicate_head(model, layer=0, head=0, gain=2.0):
    """Makes head `head` of block `layer` a duplicate-token head: its queries and keys the same
    random projection of the block's input (biases 0), with the position embeddings shrunk so that
    the input is its token's, so each row's largest scores are on its own token's keys (itself and
    its earlier copies)."""
    att = model.trf_blocks[layer].att
    rows = slice(head * att.head_dim, (head + 1) * att.head_dim)
    d_in = att.W_query.weight.shape[1]
    with torch.no_grad():
        projection = gain * torch.randn(att.head_dim, d_in) / d_in ** 0.5
        for linear in (att.W_query, att.W_key):
            linear.weight[rows] = projection
            if linear.bias is not None:
                linear.bias[rows] = 0
        model.pos_emb.weight.mul_(0.01)
    return model


def torch_run(model, ids):
    """Every layer's heads' weights (L × H × T × T) and the logits (T × V) of ids, by torch."""
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0]
    weights = [blk.att.last_weights[0].numpy().copy() for blk in model.trf_blocks]
    return np.stack(weights), logits.numpy()


def book_state_dict(model):
    """The book's state_dict as float32 arrays, buffers (att.mask) included as torch saves them."""
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def hf_state_dict(model, cfg, prefix="transformer."):
    """The same weights in Hugging Face's GPT-2 layout: chapter 5's load_weights_into_gpt read
    backwards (Conv1D weights are in × out; c_attn's columns are Q, K, V in thirds)."""
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    out = {prefix + "wte.weight": sd["tok_emb.weight"], prefix + "wpe.weight": sd["pos_emb.weight"]}
    d = cfg["emb_dim"]
    for i in range(cfg["n_layers"]):
        b, h = "trf_blocks.%d." % i, prefix + "h.%d." % i
        q, k, v = (sd[b + "att.W_%s.weight" % n].T for n in ("query", "key", "value"))
        out[h + "attn.c_attn.weight"] = np.concatenate([q, k, v], axis=1)
        if cfg["qkv_bias"]:
            out[h + "attn.c_attn.bias"] = np.concatenate([sd[b + "att.W_%s.bias" % n] for n in ("query", "key", "value")])
        else:
            out[h + "attn.c_attn.bias"] = np.zeros(3 * d, dtype=np.float32)
        out[h + "attn.c_proj.weight"] = sd[b + "att.out_proj.weight"].T
        out[h + "attn.c_proj.bias"] = sd[b + "att.out_proj.bias"]
        out[h + "mlp.c_fc.weight"] = sd[b + "ff.layers.0.weight"].T
        out[h + "mlp.c_fc.bias"] = sd[b + "ff.layers.0.bias"]
        out[h + "mlp.c_proj.weight"] = sd[b + "ff.layers.2.weight"].T
        out[h + "mlp.c_proj.bias"] = sd[b + "ff.layers.2.bias"]
        out[h + "ln_1.weight"], out[h + "ln_1.bias"] = sd[b + "norm1.scale"], sd[b + "norm1.shift"]
        out[h + "ln_2.weight"], out[h + "ln_2.bias"] = sd[b + "norm2.scale"], sd[b + "norm2.shift"]
        # The buffers HF's GPT-2 files carry (older ones): the causal mask and its fill value.
        n = cfg["context_length"]
        out[h + "attn.bias"] = np.tril(np.ones((n, n), dtype=np.float32)).reshape(1, 1, n, n)
        out[h + "attn.masked_bias"] = np.array(-1e4, dtype=np.float32)
    out[prefix + "ln_f.weight"], out[prefix + "ln_f.bias"] = sd["final_norm.scale"], sd["final_norm.shift"]
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in out.items()}


def hf_config(cfg):
    return {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "activation_function": "gelu_new",
            "n_embd": cfg["emb_dim"], "n_head": cfg["n_heads"], "n_layer": cfg["n_layers"],
            "n_positions": cfg["context_length"], "n_ctx": cfg["context_length"], "vocab_size": cfg["vocab_size"],
            "layer_norm_epsilon": 1e-5}


def write_hf_folder(folder, model, cfg, save):
    """A Hugging Face GPT-2 folder: config.json and the weights written by save(path, dict)."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(hf_config(cfg), f)
    return save(os.path.join(folder, "model"), hf_state_dict(model, cfg))


def save_npz(stem, tensors):
    np.savez(stem + ".npz", **tensors)
    return stem + ".npz"


def save_pth(stem, tensors, checkpoint=False, keys=("model_state_dict", "optimizer_state_dict")):
    """torch.save of the state_dict (as the book's chapter 5 does: `torch.save(model.state_dict(),
    "model.pth")`), or with checkpoint=True of its training checkpoint, {"model_state_dict": …,
    "optimizer_state_dict": …} after one AdamW step (keys: other names for the two, as nanoGPT's
    "model" and "optimizer", which also keeps the step count beside them)."""
    sd = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in tensors.items()}
    if checkpoint:
        params = [torch.nn.Parameter(v.clone()) for v in sd.values() if v.dim() > 0]
        opt = torch.optim.AdamW(params, lr=1e-4)
        sum(p.sum() for p in params).backward()
        opt.step()
        obj = {keys[0]: sd, keys[1]: opt.state_dict(), "iter_num": 1}
    else:
        obj = sd
    torch.save(obj, stem + ".pth")
    return stem + ".pth"


def save_safetensors(stem, tensors, dtype="F32"):
    """A .safetensors file as Hugging Face's format defines it (an 8-byte little-endian header
    length, a JSON header of dtype, shape and data_offsets, then the data); Debian has no
    python3-safetensors, so it is written here by the format's definition. dtype "F16" or "BF16"
    stores the values rounded to that type."""
    header, chunks, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, value in tensors.items():
        t = torch.from_numpy(np.ascontiguousarray(value, dtype=np.float32))
        if dtype == "F16":
            data = t.half().numpy().tobytes()
        elif dtype == "BF16":
            data = t.bfloat16().view(torch.int16).numpy().tobytes()
        else:
            data = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(value.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # HF pads the header so that the data starts 8-aligned
    with open(stem + ".safetensors", "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for c in chunks:
            f.write(c)
    return stem + ".safetensors"


def rounded_model(model, dtype):
    """The model with every weight rounded to float16 or bfloat16 and back: what a file of that
    dtype holds, for the oracle to run."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(dtype).float())
    return model


# [SECTION] Head scores by their definitions ---------------------------------------------------------

def pattern_keys(ids):
    """Each row's keys of the duplicate score (its token's earlier copies after position 0, the
    sink's) and of the induction score (the keys right after an earlier copy, k + 1 ≤ i − 1)."""
    out = []
    for i in range(len(ids)):
        earlier = [k for k in range(i) if ids[k] == ids[i]]
        out.append(([k for k in earlier if k >= 1], [k + 1 for k in earlier if k + 1 <= i - 1]))
    return out


def expected_scores(w, ids):
    """Head scores (DESIGN §2.6) of torch's weights w (T × T), re-derived here by their definitions."""
    T = len(ids)
    out = {"previous_token": float(np.mean([w[i, i - 1] for i in range(1, T)])) if T > 1 else None,
           "first_token": float(np.mean(w[:, 0]))}
    dup, ind = [], []
    for i, (copies, after) in enumerate(pattern_keys(ids)):
        if copies:
            dup.append(sum(float(w[i, k]) for k in copies))
        if after:
            ind.append(sum(float(w[i, j]) for j in after))
    out["duplicate_token"] = float(np.mean(dup)) if dup else None
    out["induction"] = float(np.mean(ind)) if ind else None
    return out


# lm/head_scores.cpp's headLabelTable: each label's threshold, in the table's order.
LABEL_THRESHOLDS = [("previous_token", 0.5), ("first_token", 0.7), ("duplicate_token", 0.3), ("induction", 0.3)]


LABEL_MIN_TOKENS = 8  # labels need this many tokens: on fewer, an even spread scores near the thresholds


def pattern_rows(ids):
    """The rows the duplicate and induction means are over (expected_scores' rows that qualify)."""
    keys = pattern_keys(ids)
    return {"duplicate_token": sum(1 for c, a in keys if c), "induction": sum(1 for c, a in keys if a)}


LABEL_OVER_EVEN = 2  # a duplicate or induction label needs twice an even head's score


def even_scores(ids):
    """The duplicate and induction scores of a causal head whose every row is even over the keys
    it sees (row i: i + 1 of them): the mean, over the rows that qualify, of the row's share of
    such keys. Only the text decides them."""
    dup, ind = [], []
    for i, (copies, after) in enumerate(pattern_keys(ids)):
        if copies:
            dup.append(len(copies) / (i + 1))
        if after:
            ind.append(len(after) / (i + 1))
    return {"duplicate_token": float(np.mean(dup)) if dup else None,
            "induction": float(np.mean(ind)) if ind else None}


def expected_label(scores, ids):
    """headLabel: the score the most above its threshold (ratio ≥ 1; a later one wins a tie), else
    None; None below LABEL_MIN_TOKENS tokens, and no duplicate or induction label on fewer than
    LABEL_MIN_TOKENS rows that qualify or below LABEL_OVER_EVEN × an even head's score (even_scores);
    "unsure" when a ratio lies within 1e-4 of 1 or of the winner's, or a score within 1e-4 of its
    even bound (float rounding decides)."""
    if len(ids) < LABEL_MIN_TOKENS:
        return None
    rows = pattern_rows(ids)
    even = even_scores(ids)
    if any(even.get(key) is not None and scores[key] is not None
           and abs(scores[key] - LABEL_OVER_EVEN * even[key]) < 1e-4 for key, _ in LABEL_THRESHOLDS):
        return "unsure"
    ratios = [(key, scores[key] / t) for key, t in LABEL_THRESHOLDS
              if scores[key] is not None and rows.get(key, len(ids)) >= LABEL_MIN_TOKENS
              and (even.get(key) is None or scores[key] >= LABEL_OVER_EVEN * even[key])]
    best, best_ratio = None, 1.0
    for key, r in ratios:
        if r >= best_ratio:
            best, best_ratio = key, r
    if any(abs(r - 1.0) < 1e-4 or (best is not None and key != best and abs(r - best_ratio) < 1e-4)
           for key, r in ratios):
        return "unsure"
    return best
