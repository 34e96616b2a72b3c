#!/usr/bin/python3
"""Writes the seed corpora of fuzz_safetensors and fuzz_pth (tests/fuzz/corpus/fuzz_safetensors/,
corpus/fuzz_pth/): tiny files of tensors as torch.save, np.savez and Hugging Face's layout write
them, and damaged or hostile variants. Needs Debian's torch and numpy (/usr/bin/python3); the
safetensors files are written by hand after HF's spec (Debian has no python3-safetensors).
Usage: tests/fuzz/make_tensor_seeds.py [CORPUS_DIR]   (default: tests/fuzz/corpus)"""
import io
import json
import os
import struct
import sys
import zipfile

import numpy as np
import torch

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
ST, PTH = os.path.join(out, "fuzz_safetensors"), os.path.join(out, "fuzz_pth")
os.makedirs(ST, exist_ok=True)
os.makedirs(PTH, exist_ok=True)


def write(folder, name, blob):
    with open(os.path.join(folder, name), "wb") as f:
        f.write(blob)


def safetensors(tensors, metadata=None, pad_to=8):
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % pad_to)
    return struct.pack("<Q", len(text)) + text + data


f16 = np.array([6e-8, 65504, np.inf, np.nan, -0.0], dtype=np.float16)
bf16 = torch.tensor([1.0, -2.5, 3e38], dtype=torch.bfloat16).view(torch.int16).numpy().tobytes()
tensors = {
    "tok_emb.weight": ("F32", (2, 3), np.arange(6, dtype=np.float32).tobytes()),
    "h": ("F16", (5,), f16.tobytes()),
    "b": ("BF16", (3,), bf16),
    "d": ("F64", (1,), np.array([0.1]).tobytes()),
    "i": ("I64", (2,), np.array([1, 2]).tobytes()),
}
write(ST, "model.safetensors", safetensors(tensors, {"format": "pt"}))
write(ST, "misaligned.safetensors", safetensors(tensors, pad_to=1))
write(ST, "empty.safetensors", safetensors({}))
write(ST, "scalar.safetensors", safetensors({"s": ("F32", (), np.float32(2).tobytes()), "z": ("F32", (0, 3), b"")}))
good = safetensors({"a": ("F32", (2,), np.ones(2, dtype=np.float32).tobytes())})
write(ST, "truncated.safetensors", good[:-2])
text = b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'
write(ST, "overlap.safetensors", struct.pack("<Q", len(text)) + text + bytes(8))
write(ST, "huge-length.safetensors", struct.pack("<Q", 1 << 40) + b"{}")

torch.manual_seed(0)
sd = torch.nn.Linear(3, 2).state_dict()
sd["half"] = torch.tensor([1.5, -0.0, float("inf")], dtype=torch.float16)
sd["bf"] = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)
sd["t"] = torch.arange(6.0).reshape(2, 3).t()
base = torch.arange(8.0)
sd["shared.a"], sd["shared.b"] = base[1:4], base[4:]
sd["count"] = torch.tensor([3])
sd._metadata[""]["n_head"] = 2  # the heads a model saved by attnscope says (its root module's metadata)


def saved(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


write(PTH, "state_dict.pth", saved(sd))
opt = torch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=0.1, momentum=0.9)
opt.param_groups[0]["params"][0].grad = torch.ones(2)
opt.step()
write(PTH, "checkpoint.pth", saved({"model_state_dict": {"w": torch.ones(2)}, "optimizer_state_dict": opt.state_dict(),
                                    "epoch": 3}))
write(PTH, "module.pth", saved(torch.nn.Linear(1, 1)))


def torch_zip(pkl, storages=()):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in [("archive/data.pkl", pkl), ("archive/byteorder", b"little")] + [
                ("archive/data/" + key, raw) for key, raw in storages]:
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)  # the same bytes every run
    return buf.getvalue()


write(PTH, "os-system.pth", torch_zip(b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00true\x85R."))
write(PTH, "not-a-dict.pth", torch_zip(b"\x80\x02]q\x00(K\x01K\x02e."))
legacy = io.BytesIO()
torch.save({"w": torch.ones(1)}, legacy, _use_new_zipfile_serialization=False)
write(PTH, "legacy.pt", legacy.getvalue())
arrays = io.BytesIO()
np.savez_compressed(arrays, a=np.ones((2, 2), dtype=np.float32), h=np.ones(3, dtype=np.float16), i=np.arange(3))
write(PTH, "arrays.npz", arrays.getvalue())
