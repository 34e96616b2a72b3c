#!/usr/bin/python3
"""Seeds of fuzz_gpt_model (CONFIG \\x01\\x02 FILE): tiny GPTModels (vocabulary 11, 8 positions,
width 8, 2 heads, 1 block) in the book's layout (.pth, .safetensors) and Hugging Face's (.npz with a
config.json, .safetensors without). Run it again after changing it: /usr/bin/python3 make_gpt_seeds.py"""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
import gpt_models as gm  # noqa: E402

out = os.path.join(HERE, "corpus", "fuzz_gpt_model")
os.makedirs(out, exist_ok=True)
model, cfg = gm.tiny_model(1, vocab_size=11, context_length=8, emb_dim=8, n_heads=2, n_layers=1, qkv_bias=True)
with tempfile.TemporaryDirectory() as tmp:
    seeds = {
        "book.pth": (b"", gm.save_pth(os.path.join(tmp, "book"), gm.book_state_dict(model))),
        "book.safetensors": (b'{"n_head": 2}', gm.save_safetensors(os.path.join(tmp, "book"), gm.book_state_dict(model))),
        "hf.npz": (json.dumps(gm.hf_config(cfg)).encode(), gm.save_npz(os.path.join(tmp, "hf"), gm.hf_state_dict(model, cfg))),
        "hf.safetensors": (b"", gm.save_safetensors(os.path.join(tmp, "hf"), gm.hf_state_dict(model, cfg, prefix=""))),
    }
    for name, (config, path) in seeds.items():
        with open(path, "rb") as f, open(os.path.join(out, name), "wb") as g:
            g.write(config + b"\x01\x02" + f.read())
print("wrote", len(seeds), "seeds to", out)
