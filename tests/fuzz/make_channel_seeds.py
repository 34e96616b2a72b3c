#!/usr/bin/python3
"""Seeds of fuzz_channel: frames as `attnscope.show` and a second `attnscope FILE` send them (a u32
length, the JSON header, float32 tensors), and broken ones. Run it again after changing it:
/usr/bin/python3 make_channel_seeds.py"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(HERE, "corpus", "fuzz_channel")
os.makedirs(out, exist_ok=True)


def frame(header, payload=b""):
    text = json.dumps(header).encode()
    return struct.pack("<I", len(text)) + text + payload


def floats(*values):
    return struct.pack("<%df" % len(values), *values)


workspace = {"format": "attnscope-workspace", "version": 1, "tokens": ["a", "b"],
             "embeddings": {"tensor": "x"}, "model": {"variant": "multihead", "d_out": 2, "num_heads": 2},
             "parameters": {"out_proj.bias": {"tensor": "b"}}}
seeds = {
    "show": frame({"commands": [{"do": "workspace", "json": workspace}],
                   "tensors": [{"name": "x", "shape": [2, 3]}, {"name": "b", "shape": [2], "dtype": "float32"}]},
                  floats(0.43, 0.15, 0.89, 0.55, 0.87, 0.66) + floats(0.5, -0.25)),
    "open": frame({"commands": [{"do": "open", "path": "/tmp/notebook.json"}]}),
    "several": frame({"commands": [{"do": "select_head", "index": 1}, {"do": "view", "field": "tab",
                                                                       "value": "lines"}, {"do": "undo"}]}),
    "paste_tensor": frame({"commands": [{"do": "paste_embeddings", "text": "[[1, 2], [3, 4]]"}]}),
    "scalar_tensor": frame({"commands": [{"do": "set", "field": "dropout", "value": {"tensor": "p"}}],
                            "tensors": [{"name": "p", "shape": [1]}]}, floats(0.1)),
    "bad_length": struct.pack("<I", 1 << 30) + b"{}",
    "bad_short": frame({"commands": [{"do": "undo"}]})[:7],
    "bad_payload": frame({"commands": [{"do": "undo"}], "tensors": [{"name": "x", "shape": [3]}]}, floats(1.0)),
    "bad_nan": frame({"commands": [{"do": "paste_embeddings", "text": {"tensor": "x"}}],
                      "tensors": [{"name": "x", "shape": [1]}]}, struct.pack("<I", 0x7fc00000)),
}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {out}")
