#!/usr/bin/python3
"""Seeds of fuzz_model_folder (NAME CONFIG \\x01\\x02 MODEL \\x01\\x02 VOCAB \\x01\\x02 MERGES; NAME's
bits 0-2 pick the model's file, bit 3 OpenAI's tokenizer names): tiny GPTModels (Debian's torch,
tests/oracle/gpt_models.py) with the files a folder holds beside them. Every seed has all three
separators (MODEL may hold the separator's bytes); an empty part is a file not written.
Run it again after changing it: /usr/bin/python3 make_folder_seeds.py"""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
import gpt_models as gm  # noqa: E402

SEP = b"\x01\x02"
# fuzz_model_folder.cpp's kNames, by NAME & 7.
MODEL_SAFETENSORS, PYTORCH_MODEL_BIN, MODEL_PTH, MODEL_PT, MODEL_NPZ, WEIGHTS_SAFETENSORS, NPZ_BEHIND_OTHERS, \
    LINK_TO_BLOB = range(8)
OPENAI_NAMES = 8
TEXT = "Hello, world! It's 42 caf\u00e9s \u2615\n<|endoftext|> the end"  # the target's kText


def byte_level_tokenizer():
    """A small byte-level vocabulary (the 256 byte tokens, five merges' results, <|endoftext|>:
    262 ids) and its merges, in Hugging Face's spelling."""
    chars = gm.bytes_to_unicode()
    vocab = {chars[b]: b for b in range(256)}
    merges = [("\u0120", "t"), ("h", "e"), ("\u0120t", "he"), ("e", "n"), ("\u0120", "w")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    return json.dumps(vocab).encode(), ("#version: 0.2\n" + "".join("%s %s\n" % m for m in merges)).encode()


def save_safetensors(stem, tensors, metadata):
    """gpt_models.save_safetensors with __metadata__ of our own (n_head, tokens, vocabulary, as a model
    trained here is saved)."""
    path = gm.save_safetensors(stem, tensors)
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + data[8 + n:])
    return path


def read(path):
    with open(path, "rb") as f:
        return f.read()


out = os.path.join(HERE, "corpus", "fuzz_model_folder")
os.makedirs(out, exist_ok=True)
vocab, merges = byte_level_tokenizer()
encoder, bpe = vocab, merges  # OpenAI's encoder.json + vocab.bpe hold the same
# V = 262: the byte-level tokenizer's ids fit the embedding; width 4, 2 heads, 1 block, 4 positions.
model, cfg = gm.tiny_model(1, vocab_size=262, context_length=4, emb_dim=4, n_heads=2, n_layers=1, qkv_bias=True)
hf_config = json.dumps(gm.hf_config(cfg)).encode()
book_config = json.dumps(cfg).encode()  # the book's GPT_CONFIG saved as JSON
# A model trained here on TEXT's characters: their names in its metadata, id by id.
letters = sorted(set(TEXT))
chars_model, chars_cfg = gm.tiny_model(2, vocab_size=len(letters), context_length=4, emb_dim=4, n_heads=2,
                                       n_layers=1, qkv_bias=False)
# Another model's tokenizer: 16 rows, the 262-id files beside it (opens, on ids only).
small, small_cfg = gm.tiny_model(3, vocab_size=16, context_length=4, emb_dim=4, n_heads=2, n_layers=1)

with tempfile.TemporaryDirectory() as tmp:
    def at(name):
        return os.path.join(tmp, name)

    seeds = {
        # Hugging Face's folder: config.json, model.safetensors (no transformer.), vocab.json, merges.txt.
        "hf-folder": (MODEL_SAFETENSORS, hf_config,
                      read(gm.save_safetensors(at("hf"), gm.hf_state_dict(model, cfg, prefix=""))), vocab, merges),
        # Its pytorch_model.bin (torch.save, transformer.) with OpenAI's encoder.json + vocab.bpe.
        "hf-bin-openai": (PYTORCH_MODEL_BIN | OPENAI_NAMES, hf_config,
                          read(gm.save_pth(at("hfbin"), gm.hf_state_dict(model, cfg))), encoder, bpe),
        # The book's model.pth beside its GPT_CONFIG, no tokenizer.
        "book-pth": (MODEL_PTH, book_config, read(gm.save_pth(at("book"), gm.book_state_dict(model))), b"", b""),
        # The book's model saved from DataParallel (module.) as model.pt, the tokenizer beside it.
        "book-module-pt": (MODEL_PT, book_config,
                           read(gm.save_pth(at("module"), {"module." + k: v
                                                           for k, v in gm.book_state_dict(model).items()})), vocab,
                           merges),
        # A blank config.json: refused as empty, not read as missing.
        "blank-config": (MODEL_PTH, b" \n", read(gm.save_pth(at("blank"), gm.book_state_dict(model))), b"", b""),
        # No config.json: the heads from the file's metadata; a name the folder's lookup does not try.
        "no-config": (WEIGHTS_SAFETENSORS, b"",
                      read(save_safetensors(at("meta"), gm.book_state_dict(model), {"n_head": "2"})), vocab, merges),
        # No config.json and no heads anywhere: width 4 is no multiple of 64, refused.
        "no-config-no-heads": (MODEL_SAFETENSORS, b"",
                               read(gm.save_safetensors(at("noheads"), gm.book_state_dict(model))), b"", b""),
        # .npz behind a folder named model.safetensors and a link pytorch_model.bin to nothing.
        "npz-behind-others": (NPZ_BEHIND_OTHERS, hf_config,
                              read(gm.save_npz(at("npz"), gm.hf_state_dict(model, cfg))), vocab, merges),
        # Hugging Face's cache: pytorch_model.bin a link to a blob; a model trained on characters.
        "characters-blob": (LINK_TO_BLOB, b"",
                            read(save_safetensors(at("chars"), gm.book_state_dict(chars_model), {
                                "n_head": "2", "tokens": "characters", "vocabulary": json.dumps(letters)})), b"", b""),
        # Another model's tokenizer beside a 16-row model.
        "another-tokenizer": (MODEL_NPZ, json.dumps(gm.hf_config(small_cfg)).encode(),
                              read(gm.save_npz(at("small"), gm.hf_state_dict(small, small_cfg))), vocab, merges),
        # Only vocab.json: no tokenizer (a pair is needed).
        "vocab-alone": (MODEL_SAFETENSORS, hf_config,
                        read(gm.save_safetensors(at("alone"), gm.hf_state_dict(model, cfg))), vocab, b""),
    }
    for name, (which, config, model_bytes, v, m) in seeds.items():
        for part in (config, v, m):
            assert SEP not in part, name
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes([which]) + config + SEP + model_bytes + SEP + v + SEP + m)
print("wrote", len(seeds), "seeds to", out)
