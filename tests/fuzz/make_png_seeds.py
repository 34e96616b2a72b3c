#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_png (tests/fuzz/corpus/fuzz_png/): tiny PNGs with and without an
"attnscope-workspace" text chunk in each form readPngText reads (tEXt, zTXt, iTXt plain and
compressed), and damaged ones. Standard library only; the output is deterministic, so running it
again changes nothing. Usage: tests/fuzz/make_png_seeds.py [OUTPUT_DIR]"""
import json
import os
import struct
import sys
import zlib

KEY = b"attnscope-workspace"
SIGNATURE = b"\x89PNG\r\n\x1a\n"

WORKSPACE = json.dumps({
    "format": "attnscope-workspace", "version": 1,
    "tokens": ["Your", "journey", "starts"],
    "embeddings": [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64]],
    "model": {"variant": "multihead", "d_out": 2, "num_heads": 2, "batch_size": 1},
    "view": {"theme": "light"},
}, separators=(",", ":")).encode()


def chunk(kind, data, length=None):
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data) if length is None else length) + kind + data + struct.pack(">I", crc)


def ihdr(width=1, height=1):
    return chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))  # 8-bit RGB


def idat(width=1, height=1):
    raw = b"".join(b"\x00" + b"\x80\x40\x20" * width for _ in range(height))  # filter 0, one colour
    return chunk(b"IDAT", zlib.compress(raw, 9))


IEND = chunk(b"IEND", b"")


def text(key=KEY, value=WORKSPACE):
    return chunk(b"tEXt", key + b"\0" + value)


def ztxt(key=KEY, value=WORKSPACE, stream=None):
    return chunk(b"zTXt", key + b"\0\0" + (zlib.compress(value, 9) if stream is None else stream))


def itxt(key=KEY, value=WORKSPACE, compressed=False, language=b"en", translated=b""):
    body = zlib.compress(value, 9) if compressed else value
    return chunk(b"iTXt", key + b"\0" + bytes([1 if compressed else 0, 0]) + language + b"\0" + translated + b"\0" + body)


def png(*chunks):
    return SIGNATURE + ihdr() + b"".join(chunks)


SEEDS = {
    # What a screenshot carries (writePng: zTXt), and the other forms of the same text.
    "ztxt-workspace.png": png(ztxt(), idat(), IEND),
    "text-workspace.png": png(text(), idat(), IEND),
    "itxt-plain.png": png(itxt(), idat(), IEND),
    "itxt-compressed.png": png(itxt(compressed=True, language=b"", translated=b"Arbeitsbereich"), idat(), IEND),
    # The chunk after the pixels, after another key, and a key that is a prefix of ours.
    "after-idat.png": png(idat(), ztxt(), IEND),
    "other-keys-first.png": png(text(b"Software", b"attnscope"), text(b"attnscope", b"x"), ztxt(), idat(), IEND),
    # No workspace, or one that is not valid.
    "no-text.png": png(idat(), IEND),
    "workspace-bad-json.png": png(text(value=b'{"format":"attnscope-workspace","version":1,"embeddings":[[1,'), idat(), IEND),
    "workspace-bad-model.png": png(ztxt(value=WORKSPACE.replace(b'"d_out":2', b'"d_out":3')), idat(), IEND),
    # Damaged files.
    "ztxt-bad-deflate.png": png(ztxt(stream=b"\x78\x9c\xff\xff\x00\x01garbage"), idat(), IEND),
    "ztxt-truncated-deflate.png": png(ztxt(stream=zlib.compress(WORKSPACE, 9)[:40]), idat(), IEND),
    "ztxt-empty.png": png(chunk(b"zTXt", KEY + b"\0"), IEND),
    "itxt-short.png": png(chunk(b"iTXt", KEY + b"\0\x01"), IEND),
    "truncated.png": png(ztxt(), idat(), IEND)[:60],
    "huge-length.png": png(chunk(b"tEXt", KEY + b"\0{}", length=0x7FFFFFF0), IEND),
    "no-iend.png": png(idat()),
    "signature-only.png": SIGNATURE,
    # Not a PNG: loadWorkspace reads it as JSON.
    "not-png.json": WORKSPACE,
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_png")
    os.makedirs(out, exist_ok=True)
    for name, data in sorted(SEEDS.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"{len(SEEDS)} seeds, {sum(map(len, SEEDS.values()))} bytes in {out}")


if __name__ == "__main__":
    main()
