"""Trains the book's GPTModel on an attnscope task, as attnscope trains it: the same model from the
same initialization (torch.manual_seed), on the same batches (a torch.Generator), with
loss.backward() and torch.optim; prints {"losses": [...], "head_scores": {...}} as
`attnscope-cli train` does. Nothing here comes from attnscope but the TASK below.

With dropout > 0 the masks are torch's own draws: those of a torch built without MKL (Debian's)
equal attnscope's; a torch with MKL (pip's, on x86-64) draws its own, so the losses part after
step 1.

A text task of GPT-2 tokens reads the tokenizer's files the TASK names and tokenizes the text here
(openai/gpt-2's encoder.py, written out below); it needs Python's `regex` module (python3-regex).
"""
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

TASK = json.loads(@TASK_JSON@)


# The book's classes (chapters 3 and 4). Two changes: MultiHeadAttention keeps its last weights for
# the head scores, and cfg["mlp"] = False builds a block without LayerNorm 2 and the feed-forward.

@GPT_CLASSES@


# The task's data ----------------------------------------------------------------------------------

IGNORED = -100  # F.cross_entropy's ignore_index


def byte_characters():
    """encoder.py's bytes_to_unicode: each byte as a visible character. The printable bytes of
    Latin-1 stand for themselves; the others, in byte order, are the characters from U+0100 on."""
    visible = set(range(ord("!"), ord("~") + 1)) | set(range(ord("¡"), ord("¬") + 1)) | set(range(ord("®"), ord("ÿ") + 1))
    out, extra = {}, 0
    for b in range(256):
        if b in visible:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return out


def read_gpt2_tokenizer(path):
    """The vocabulary (token string -> id) and the merges' ranks from the folder `path` names (or
    the folder of the file it names): vocab.json + merges.txt, else encoder.json + vocab.bpe."""
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    for vocab_name, merges_name in (("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe")):
        if os.path.exists(os.path.join(folder, vocab_name)) and os.path.exists(os.path.join(folder, merges_name)):
            break
    else:
        sys.exit(f"{folder}: no GPT-2 tokenizer (vocab.json + merges.txt, or encoder.json + vocab.bpe)")
    with open(os.path.join(folder, vocab_name), encoding="utf-8") as f:
        vocabulary = json.load(f)
    ranks = {}
    with open(os.path.join(folder, merges_name), encoding="utf-8", newline="") as f:
        for number, line in enumerate(f.read().split("\n"), start=1):
            line = line[:-1] if line.endswith("\r") else line
            if not line or (number == 1 and line.startswith("#version")):
                continue
            first, second = line.split(" ")
            ranks.setdefault((first, second), len(ranks))
    return vocabulary, ranks


def merge_word(word, ranks):
    """A word's BPE: while some pair of neighbouring parts is a merge, the pair of lowest rank is
    joined wherever it occurs, left to right."""
    parts = list(word)
    while len(parts) > 1:
        pair = min(zip(parts, parts[1:]), key=lambda p: ranks.get(p, float("inf")))
        if pair not in ranks:
            break
        joined, i = [], 0
        while i < len(parts):
            if i + 1 < len(parts) and (parts[i], parts[i + 1]) == pair:
                joined.append(parts[i] + parts[i + 1])
                i += 2
            else:
                joined.append(parts[i])
                i += 1
        parts = joined
    return parts


def gpt2_ids(text, vocabulary, ranks):
    """GPT-2's token ids of the text: encoder.py's words, each word's UTF-8 bytes as byte
    characters, merged. <|endoftext|> is one token and the text on each side is tokenized on its
    own, as Hugging Face's GPT2Tokenizer does."""
    import regex  # \p{L}, \p{N}: Python's re has neither; only tasks of GPT-2 tokens need it

    spell = byte_characters()
    words = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
    eot = "<|endoftext|>"
    pieces = text.split(eot) if eot in vocabulary else [text]
    ids = []
    for k, piece in enumerate(pieces):
        if k > 0:
            ids.append(vocabulary[eot])
        for word in words.findall(piece):
            ids += [vocabulary[token] for token in merge_word("".join(spell[b] for b in word.encode("utf-8")), ranks)]
    return ids


def text_tokens():
    """The text task's tokens: each token's key (a character, a GPT-2 id), in the text's order, and
    each key's label. The distinct keys, sorted, are the vocabulary."""
    if TASK["tokens"] == "gpt2":
        vocabulary, ranks = read_gpt2_tokenizer(TASK["tokenizer"])
        ids = gpt2_ids(TASK["text"], vocabulary, ranks)
        spelling = {i: token for token, i in vocabulary.items()}
        return ids, {i: spelling[i] for i in ids}
    return list(TASK["text"]), {c: c for c in TASK["text"]}


if TASK["task"] == "text":
    KEYS, LABELS = text_tokens()
    TOKENS = [LABELS[k] for k in sorted(set(KEYS))]  # the vocabulary's labels, by id
    TOKEN_IDS = {k: i for i, k in enumerate(sorted(set(KEYS)))}
    TEXT_IDS = [TOKEN_IDS[k] for k in KEYS]
    VOCAB = len(TOKENS)
else:
    TOKENS, TEXT_IDS, VOCAB = None, None, TASK["vocab"]


def randint(g, low, high):
    return int(torch.randint(low, high, (1,), generator=g).item())


def sequence(g):
    """seq_len + 1 tokens, and which of positions 1 … seq_len are scored as targets."""
    n = TASK["seq_len"] + 1
    scored = [True] * n
    kind = TASK["task"]
    if kind == "induction":  # a random prefix, then a chunk repeated to the end
        period = randint(g, TASK["min_period"], TASK["max_period"] + 1)
        prefix = randint(g, 0, n - 2 * period + 1)
        s = [randint(g, 0, VOCAB) for _ in range(n)]
        for i in range(prefix + period, n):
            s[i] = s[i - period]
    elif kind == "previous_token":
        s = [randint(g, 0, VOCAB) for _ in range(n - 1)] + [0]
    elif kind in ("sort", "reverse"):
        k = n // 2
        digits = [randint(g, 0, VOCAB) for _ in range(k)]
        s = digits + (sorted(digits) if kind == "sort" else digits[::-1])
        for i in range(1, k):
            scored[i] = False
    else:  # text: a window at a random place
        start = randint(g, 0, len(TEXT_IDS) - TASK["seq_len"])
        s = TEXT_IDS[start:start + n]
    return s, scored


def next_batch(g):
    xs, ys = [], []
    for _ in range(TASK["batch"]):
        s, scored = sequence(g)
        T = TASK["seq_len"]
        xs.append(s[:T])
        if TASK["task"] == "previous_token":
            ys.append([IGNORED] + s[:T - 1])
        else:
            ys.append([s[i + 1] if scored[i + 1] else IGNORED for i in range(T)])
    return torch.tensor(xs), torch.tensor(ys)


def probe():
    """The head scores' sequence: a random first half repeated (the text task: its first tokens)."""
    T = TASK["seq_len"]
    if TEXT_IDS:
        return TEXT_IDS[:T]
    g = torch.Generator().manual_seed(TASK["seed"] + 2)
    first = [randint(g, 0, VOCAB) for _ in range((T + 1) // 2)]
    return [first[i % len(first)] for i in range(T)]


def head_scores(w, ids):
    """A head's scores on its weights w (T x T): attention to the previous token, to the first
    token, and to the token after an earlier copy of the current one (induction; None when no
    row has such a key)."""
    T = len(ids)
    previous = sum(float(w[i, i - 1]) for i in range(1, T)) / (T - 1)
    first = sum(float(w[i, 0]) for i in range(T)) / T
    total, rows = 0.0, 0
    for i in range(T):
        keys = [k + 1 for k in range(i - 1) if ids[k] == ids[i]]
        if keys:
            total += sum(float(w[i, j]) for j in keys)
            rows += 1
    return previous, (total / rows if rows else None), first


# Training ------------------------------------------------------------------------------------------

def make_model():
    torch.manual_seed(TASK["seed"])
    return GPTModel({"vocab_size": VOCAB, "context_length": TASK["seq_len"], "emb_dim": TASK["d_model"],
                     "n_heads": TASK["heads"], "n_layers": TASK["layers"], "drop_rate": TASK["dropout"],
                     "qkv_bias": TASK["qkv_bias"], "mlp": TASK["mlp"]})


def make_optimizer(model):
    if TASK["optimizer"] == "adamw":
        return torch.optim.AdamW(model.parameters(), lr=TASK["lr"], weight_decay=TASK["weight_decay"], foreach=False)
    return torch.optim.SGD(model.parameters(), lr=TASK["lr"], momentum=TASK["momentum"],
                           weight_decay=TASK["weight_decay"], foreach=False)


def loss_of(model, x, y):
    logits = model(x)
    return F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=IGNORED)


def train():
    model = make_model()
    optimizer = make_optimizer(model)
    data = torch.Generator().manual_seed(TASK["seed"] + 1)
    ids = probe()
    losses = []
    record = {"steps": [], "previous_token": [], "induction": [], "first_token": []}

    def score(step):
        model.eval()
        with torch.no_grad():
            model(torch.tensor([ids]))
        model.train()
        per_head = [[head_scores(block.att.last_weights[0, h], ids) for h in range(TASK["heads"])]
                    for block in model.trf_blocks]
        record["steps"].append(step)
        for k, name in enumerate(("previous_token", "induction", "first_token")):
            record[name].append([[s[k] for s in layer] for layer in per_head])

    score(0)
    for step in range(1, TASK["steps"] + 1):
        x, y = next_batch(data)
        loss = loss_of(model, x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % TASK["score_every"] == 0 or step == TASK["steps"]:
            score(step)
    return {"losses": losses, "head_scores": record}


if __name__ == "__main__":
    json.dump(train(), sys.stdout)
    print()
