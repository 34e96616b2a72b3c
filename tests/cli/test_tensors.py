#!/usr/bin/python3
"""`attnscope-cli tensors` (docs/DESIGN.md §2.6): files of named tensors as torch, NumPy and Hugging
Face write them, read back exactly. torch.save files come from Debian's torch (a state_dict of a
small model with the book's GPTModel names, float16 and bfloat16 tensors, a transposed view, two
tensors sharing a storage, a checkpoint with an optimizer's state); .npz from np.savez and
np.savez_compressed; safetensors are written here by hand after Hugging Face's spec (Debian has no
python3-safetensors): u64 little-endian header length, JSON header padded with spaces, then the data.
Every value printed by `--values` must be torch's float32 value bit for bit. Bad files (truncated,
bad offsets, a pickled module, a pickle that calls os.system, the legacy format, a zip bomb, a file
over the limit) end with exit 2 and one line `error: FILE: why`, and nothing in them runs.

Usage: test_tensors.py CLI_PATH   (run with Debian's /usr/bin/python3: torch and numpy)
"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import unittest
import zipfile

import numpy as np
import torch
import torch.nn as nn

CLI = None


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.att = nn.Module()
        self.att.W_query = nn.Linear(d, d, bias=False)
        self.att.W_key = nn.Linear(d, d, bias=False)
        self.att.out_proj = nn.Linear(d, d)
        self.norm1 = nn.LayerNorm(d)


class GPTModel(nn.Module):
    """The book's GPTModel names at a tiny size."""

    def __init__(self, vocab=11, ctx=5, d=4):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d)
        self.pos_emb = nn.Embedding(ctx, d)
        self.trf_blocks = nn.Sequential(Block(d), Block(d))
        self.out_head = nn.Linear(d, vocab, bias=False)


def special16():
    """float16 values that test the conversion: subnormals, the largest, ±inf, NaN, -0."""
    return torch.tensor([6e-8, 1e-5, -3e-6, 65504.0, float("inf"), -float("inf"), float("nan"), -0.0, 1 / 3],
                        dtype=torch.float16)


def state_dict():
    torch.manual_seed(123)
    model = GPTModel()
    sd = model.state_dict()
    sd["trf_blocks.1.att.W_query.weight"] = sd["trf_blocks.1.att.W_query.weight"].half()
    sd["trf_blocks.1.att.out_proj.bias"] = sd["trf_blocks.1.att.out_proj.bias"].bfloat16()
    sd["special.f16"] = special16()
    sd["special.bf16"] = torch.tensor([1e-40, 3e38, float("inf"), float("nan"), -2.5], dtype=torch.bfloat16)
    sd["special.f64"] = torch.tensor([[0.1, 1e-300], [1e300, -7.25]], dtype=torch.float64)
    sd["transposed"] = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()  # a non-contiguous view
    base = torch.randn(4, 6)
    sd["shared.first"] = base[1:3, 2:5]  # two views of one storage, with offsets and strides
    sd["shared.second"] = base[3]
    sd["count"] = torch.tensor([3, 1, 4], dtype=torch.int64)
    return model, sd


def f32(t):
    return np.ascontiguousarray(t.detach().float().numpy()).reshape(-1)


def parsed(values):
    out = []
    for v in values:
        out.append({"nan": np.nan, "inf": np.inf, "-inf": -np.inf}[v] if isinstance(v, str) else v)
    return np.array(out, dtype=np.float64).astype(np.float32)


def safetensors_bytes(tensors, metadata=None, pad_to=8, order=None):
    """A safetensors file after HF's spec. tensors: name -> (dtype name, shape, raw bytes)."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name in order or tensors:
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % pad_to)  # HF pads the header with spaces so the data is aligned
    return struct.pack("<Q", len(text)) + text + data


def raw(t):
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.contiguous().numpy().tobytes()


ST_NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
            torch.int64: "I64"}


class TensorsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="attnscope-tensors-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def run_cli(self, *args):
        return subprocess.run([CLI, "tensors", *args], capture_output=True, text=True, timeout=120)

    def listing(self, path, *names):
        args = [path]
        for n in names:
            args += ["--values", n]
        run = self.run_cli(*args)
        self.assertEqual(run.returncode, 0, "tensors %s failed: %s" % (path, run.stderr))
        self.assertEqual(run.stderr, "")
        # JSON's -0 is Python's int 0: read it as the float it is.
        return json.loads(run.stdout, parse_int=lambda s: -0.0 if s == "-0" else int(s))

    def expect_error(self, path, pattern, *args):
        run = self.run_cli(path, *args)
        self.assertEqual(run.returncode, 2, "expected a refusal of %s, got %d: %s" % (path, run.returncode, run.stdout[:300]))
        self.assertEqual(run.stdout, "")
        lines = run.stderr.splitlines()
        self.assertEqual(len(lines), 1, run.stderr)
        self.assertRegex(lines[0], "^error: " + re.escape(path) + ": " + pattern)

    def expect_values(self, path, expected, fmt):
        """expected: name -> torch tensor; every one listed with its shape and read back bit for bit."""
        names = [n for n, t in expected.items() if t.dtype != torch.int64]
        out = self.listing(path, *names)
        self.assertEqual(out["format"], fmt)
        listed = {t["name"]: t for t in out["tensors"]}
        for name, t in expected.items():
            self.assertIn(name, listed)
            self.assertEqual(listed[name]["shape"], list(t.shape), name)
            if name in names:
                want = f32(t)
                got = parsed(out["values"][name])
                self.assertEqual(got.shape, want.shape, name)
                same = (want.view(np.uint32) == got.view(np.uint32)) | (np.isnan(want) & np.isnan(got))
                self.assertTrue(same.all(), "%s: %s != %s" % (name, got, want))
        return out

    # ---- torch.save ---------------------------------------------------------------------------
    def test_state_dict(self):
        _, sd = state_dict()
        path = self.path("model.pth")
        torch.save(sd, path)
        out = self.expect_values(path, sd, "pth")
        dtypes = {t["name"]: t["dtype"] for t in out["tensors"]}
        self.assertEqual([t["name"] for t in out["tensors"]], list(sd.keys()))  # the file's order
        self.assertEqual(dtypes["tok_emb.weight"], "F32")
        self.assertEqual(dtypes["trf_blocks.1.att.W_query.weight"], "F16")
        self.assertEqual(dtypes["trf_blocks.1.att.out_proj.bias"], "BF16")
        self.assertEqual(dtypes["special.f64"], "F64")
        self.assertEqual(dtypes["count"], "I64")
        self.expect_error(path, r"tensor count: dtype I64 is not a floating-point type", "--values", "count")
        self.expect_error(path, r"no tensor named 'nope' \(it holds: tok_emb.weight, ", "--values", "nope")

    def test_checkpoint_with_optimizer(self):
        model, _ = state_dict()
        opt = torch.optim.AdamW(model.parameters(), lr=4e-4, weight_decay=0.1)
        loss = model.out_head(model.tok_emb(torch.tensor([1, 2]))).sum()
        loss.backward()
        opt.step()
        path = self.path("checkpoint.pth")
        torch.save({"model_state_dict": model.state_dict(), "optimizer_state_dict": opt.state_dict(), "epoch": 3,
                    "note": "chapter 5"}, path)
        expected = {"model_state_dict." + k: v for k, v in model.state_dict().items()}
        for i, state in opt.state_dict()["state"].items():
            for k, v in state.items():
                if torch.is_tensor(v):
                    expected["optimizer_state_dict.state.%d.%s" % (i, k)] = v
        out = self.expect_values(path, expected, "pth")
        names = [t["name"] for t in out["tensors"]]
        self.assertEqual(sorted(names), sorted(expected))  # ints, floats, lists, strings skipped
        self.assertIn("optimizer_state_dict.state.0.exp_avg", names)

    def test_refusals_of_torch_files(self):
        marker = self.path("MARKER-pwned")
        module = self.path("module.pth")
        torch.save(nn.Linear(2, 2), module)
        self.expect_error(module, r"the file holds a pickled object of class torch\.nn\.modules\.linear\.Linear, not "
                                  r"a state_dict: save model\.state_dict\(\) instead \(a state_dict is read as data; "
                                  r"nothing in a file is ever executed\)$")
        # A pickle that calls os.system, in torch's layout: refused when GLOBAL names it, never run.
        command = ("touch " + marker).encode()
        evil = b"\x80\x02cos\nsystem\nX" + struct.pack("<I", len(command)) + command + b"\x85R."
        for name, pkl in [("evil.pth", evil),
                          ("evil4.pth", b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00\x8c\x05posix\x94\x8c\x06system"
                                        b"\x94\x93\x94" + b"X" + struct.pack("<I", len(command)) + command + b"\x85R.")]:
            path = self.path(name)
            with zipfile.ZipFile(path, "w") as z:
                z.writestr("archive/data.pkl", pkl)
                z.writestr("archive/byteorder", "little")
                z.writestr("archive/version", "3\n")
            self.expect_error(path, r"its pickle names (os|posix)\.system, which a state_dict never uses: refused, "
                                    r"nothing run")
        self.assertFalse(os.path.exists(marker), "the pickle's command ran")
        legacy = self.path("legacy.pt")
        torch.save({"w": torch.ones(2)}, legacy, _use_new_zipfile_serialization=False)
        self.expect_error(legacy, r"a torch file in the legacy format \(torch before 1\.6, or torch\.save with "
                                  r"_use_new_zipfile_serialization=False\).*save it again with torch\.save")
        # A second archive in the zip: torch.load refuses it; which one was read had hung on the order.
        one, two = self.path("one_pickle.pth"), self.path("two_pickles.pth")
        torch.save({"w": torch.ones(2)}, one)
        with zipfile.ZipFile(one) as src, zipfile.ZipFile(two, "w") as dst:
            for info in src.infolist():
                dst.writestr(info.filename, src.read(info))
            for info in src.infolist():
                dst.writestr("other/" + info.filename.split("/", 1)[1], src.read(info))
        self.expect_error(two, r"a torch file with 2 pickles \('.*/data\.pkl', 'other/data\.pkl'\): torch\.save "
                               r"writes one$")
        single = self.path("tensor.pt")
        torch.save(torch.ones(3), single)
        self.expect_error(single, r"the file holds one tensor, not a state_dict")

    def test_zip_bomb(self):
        # A storage declared as 16 bytes (4 floats, as the pickle says) whose deflated data inflates
        # to 64 MiB: refused while inflating, after 16 bytes.
        good = self.path("small.pth")
        torch.save({"w": torch.ones(4)}, good)
        bomb = self.path("bomb.pth")
        with zipfile.ZipFile(good) as src, zipfile.ZipFile(bomb, "w") as dst:
            for info in src.infolist():
                data = src.read(info)
                if info.filename.endswith("/data/0"):
                    data = b"\0" * (64 << 20)
                dst.writestr(info.filename, data, compress_type=zipfile.ZIP_DEFLATED)
        blob = bytearray(open(bomb, "rb").read())
        with zipfile.ZipFile(bomb) as z:
            info = [i for i in z.infolist() if i.filename.endswith("/data/0")][0]
        struct.pack_into("<I", blob, info.header_offset + 22, 16)  # the local header's size …
        central = blob.find(b"PK\x01\x02")
        while central >= 0:
            name_len = struct.unpack_from("<H", blob, central + 28)[0]
            if blob[central + 46:central + 46 + name_len] == info.filename.encode():
                struct.pack_into("<I", blob, central + 24, 16)  # … and the central directory's
                break
            central = blob.find(b"PK\x01\x02", central + 4)
        open(bomb, "wb").write(bytes(blob))
        self.assertEqual(self.listing(bomb)["tensors"], [{"name": "w", "dtype": "F32", "shape": [4]}])
        self.expect_error(bomb, r"a damaged zip file: entry '.*/data/0' inflates to more than its declared 16 bytes$",
                          "--values", "w")

    def test_sizes_a_file_cannot_hold_allocate_nothing(self):
        # The same entry's sizes raised to 4 GB as the pickle's shape says: deflate cannot expand 5
        # bytes so far, so the entry is refused before its buffer is allocated (it had allocated
        # the bytes, then said "does not inflate to its bytes": the message tells which happened).
        good = self.path("lie_src.pth")
        torch.save({"w": torch.ones(4)}, good)
        lie = self.path("lie.pth")
        declared = 1 << 30
        with zipfile.ZipFile(good) as src, zipfile.ZipFile(lie, "w") as dst:
            for info in src.infolist():
                data = src.read(info)
                if info.filename.endswith("data.pkl"):
                    count = b"J" + struct.pack("<i", declared // 4)  # the storage's elements, and the shape
                    data = data.replace(b"K\x04t", count + b"t").replace(b"K\x04\x85", count + b"\x85")
                dst.writestr(info.filename, data, compress_type=zipfile.ZIP_DEFLATED)
        blob = bytearray(open(lie, "rb").read())
        with zipfile.ZipFile(lie) as z:
            info = [i for i in z.infolist() if i.filename.endswith("/data/0")][0]
        struct.pack_into("<I", blob, info.header_offset + 22, declared)
        central = blob.find(b"PK\x01\x02")
        while central >= 0:
            name_len = struct.unpack_from("<H", blob, central + 28)[0]
            if blob[central + 46:central + 46 + name_len] == info.filename.encode():
                struct.pack_into("<I", blob, central + 24, declared)
                break
            central = blob.find(b"PK\x01\x02", central + 4)
        open(lie, "wb").write(bytes(blob))
        self.assertEqual(self.listing(lie)["tensors"], [{"name": "w", "dtype": "F32", "shape": [declared // 4]}])
        run = subprocess.run([CLI, "tensors", lie, "--values", "w", "--memory-budget", "8192"], capture_output=True,
                             text=True, timeout=120)
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertRegex(run.stderr, r"a damaged zip file: entry '.*/data/0' declares %d bytes from \d+ compressed, "
                                     r"more than deflate can hold\n$" % declared)

    def test_names_are_bounded_before_they_are_built(self):
        # A chain of dicts each holding the next under one long key, pickled once and fetched from
        # the memo at every level: the names had grown to gigabytes (or minutes of copying).
        key = "k" * 3000
        d = {"w": torch.ones(1)}
        for _ in range(8):
            d = {key: d}
        path = self.path("long_names.pth")
        torch.save(d, path)
        self.expect_error(path, r"a tensor name longer than 4096 bytes \(a state_dict's names are short\): 'k+…'$")

    # ---- .npz ---------------------------------------------------------------------------------
    def test_npz(self):
        _, sd = state_dict()
        arrays = {k: v for k, v in sd.items() if v.dtype != torch.bfloat16}  # NumPy has no bfloat16
        for compressed in (False, True):
            path = self.path("arrays%d.npz" % compressed)
            (np.savez_compressed if compressed else np.savez)(path, **{k: v.contiguous().numpy() for k, v in arrays.items()})
            out = self.expect_values(path, arrays, "npz")
            dtypes = {t["name"]: t["dtype"] for t in out["tensors"]}
            self.assertEqual(dtypes["trf_blocks.1.att.W_query.weight"], "F16")
            self.assertEqual(dtypes["count"], "I64")
        fortran = self.path("fortran.npz")
        a = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
        np.savez(fortran, a=a, big=np.arange(3, dtype=">f8"))
        out = self.listing(fortran, "a", "big")
        self.assertEqual(out["values"], {"a": [0, 1, 2, 3, 4, 5], "big": [0, 1, 2]})

    # ---- safetensors ------------------------------------------------------------------------
    def test_safetensors(self):
        _, sd = state_dict()
        tensors = {k: (ST_NAMES[v.dtype], tuple(v.shape), raw(v)) for k, v in sd.items()}
        meta = {"format": "pt", "source": "attnscope test"}
        for pad in (8, 1, 3):  # aligned, and F32 data at odd addresses (copied, not mapped)
            path = self.path("model%d.safetensors" % pad)
            open(path, "wb").write(safetensors_bytes(tensors, meta, pad_to=pad))
            out = self.expect_values(path, sd, "safetensors")
            self.assertEqual(out["metadata"], meta)

    def test_bad_safetensors(self):
        one = {"a": ("F32", (2, 2), np.arange(4, dtype=np.float32).tobytes()),
               "b": ("F16", (3,), np.ones(3, dtype=np.float16).tobytes())}
        good = safetensors_bytes(one)

        def write(name, blob):
            path = self.path(name)
            open(path, "wb").write(blob)
            return path

        self.expect_error(write("cut.safetensors", good[:-3]), r"tensor b: data_offsets \[16, 22\] run past the end "
                                                               r"of the data \(19 bytes\)")
        self.expect_error(write("cut-header.safetensors", good[:30]),
                          r"a truncated safetensors file: its header length \d+ runs past the end of the file")
        self.expect_error(write("huge-header.safetensors", struct.pack("<Q", 10 ** 9) + b"{}"),
                          r"its header length 1000000000 is more than safetensors' limit of 100000000 bytes$")
        # A NUL ends nlohmann's reading: what followed it went unread (safetensors' reader refuses it).
        text = json.dumps({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode() + b"\0junk"
        self.expect_error(write("nul-header.safetensors", struct.pack("<Q", len(text)) + text + bytes(4)),
                          r"its header holds a NUL byte at byte \d+ \(a safetensors header is JSON, padded with spaces\)$")

        def header(h, data):
            text = json.dumps(h).encode()
            return struct.pack("<Q", len(text)) + text + data

        data = bytes(22)
        self.expect_error(write("overlap.safetensors", header({
            "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
            "b": {"dtype": "F16", "shape": [3], "data_offsets": [10, 16]}}, data)),
            r"tensor b: F16 \[3\] needs 6 bytes, its data_offsets \[10, 16\] hold 6|tensor b: its data \[10, 16\] "
            r"overlaps tensor a's \[0, 16\]")
        self.expect_error(write("overlap2.safetensors", header({
            "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
            "b": {"dtype": "F16", "shape": [3], "data_offsets": [12, 18]}}, bytes(18))),
            r"tensor b: its data \[12, 18\] overlaps tensor a's \[0, 16\]$")
        self.expect_error(write("range.safetensors", header({
            "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
            "b": {"dtype": "F16", "shape": [3], "data_offsets": [16, 1 << 40]}}, data)),
            r"tensor b: data_offsets \[16, 1099511627776\] run past the end of the data \(22 bytes\)")
        self.expect_error(write("mismatch.safetensors", header({
            "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 16]},
            "b": {"dtype": "F16", "shape": [3], "data_offsets": [16, 22]}}, data)),
            r"tensor a: F32 \[2, 3\] needs 24 bytes, its data_offsets \[0, 16\] hold 16$")
        self.expect_error(write("gap.safetensors", header({
            "b": {"dtype": "F16", "shape": [3], "data_offsets": [16, 22]}}, data)),
            r"tensor b: its data starts at 16 but the data before it ends at 0")
        self.expect_error(write("json.safetensors", struct.pack("<Q", 9) + b'{"a": [1,' + data),
                          r"its header is not valid JSON \(at byte \d+ of the header\)$")
        self.expect_error(write("dtype.safetensors", header({
            "a": {"dtype": "F33", "shape": [4], "data_offsets": [0, 16]}}, bytes(16))), r"tensor a: dtype must be one of")
        self.expect_error(write("meta.safetensors", header({"__metadata__": {"n": 1}}, b"")),
                          r"__metadata__\.n: every value of __metadata__ must be a string$")

    # ---- any file ----------------------------------------------------------------------------
    def test_other_files(self):
        text = self.path("notes.txt")
        open(text, "w").write("hello")
        self.expect_error(text, r"not a file of tensors: expected safetensors .*, torch\.save's zip .* or NumPy's "
                                r"\.npz")
        npy = self.path("one.npy")
        np.save(npy, np.ones(3, dtype=np.float32))
        self.expect_error(npy, r"a \.npy file holds one unnamed array")
        other_zip = self.path("other.zip")
        with zipfile.ZipFile(other_zip, "w") as z:
            z.writestr("readme.txt", "hi")
        self.expect_error(other_zip, r"a zip that is neither torch\.save's \(no \*/data\.pkl\) nor NumPy's \.npz")
        big = self.path("big.safetensors")
        with open(big, "wb") as f:
            f.truncate((16 << 30) + 1)  # sparse: nothing is written
        self.expect_error(big, r"17179869185 bytes is larger than the limit of 17179869184 bytes$")
        self.expect_error(self.path("missing.pth"), r"cannot open the file \(does it exist\?\)$")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    CLI = sys.argv.pop(1)
    unittest.main(verbosity=2)
