#!/usr/bin/env python3
"""The round trip from a notebook cell to the map on screen (docs/DESIGN.md §3.8), for `make bench`:
`attnscope.show(mha, x)` into an app that already runs (started by the first show, not timed), then
the `wait` command — nothing, applied once the newest result (every head) is in, so its reply comes
when the frame that draws the module's maps is being drawn. Timed per round: the show's reply
(applied) and the wait's (the maps on screen). Sizes: the chapter's multi-head example
(6 tokens, d = 3, 2 heads, its stacked batch of 2), a medium module (T = 256, d = 256, 8 heads) and
the chapter's GPT-2-sized MultiHeadAttention (T = 1024, d = 768, 12 heads, batch 2).

Run under a display (make bench runs it under xvfb-run). Prints one JSON object.
Usage: notebook_round_trip.py APP [ROUNDS]
"""
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402

import attnscope  # noqa: E402

spec = importlib.util.spec_from_file_location("seed_classes", os.path.join(ROOT, "core", "formats", "pytorch",
                                                                           "seed_classes.py"))
sc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sc)
SIZES = (("book example", 6, 3, 2, 2, 2), ("medium", 256, 256, 256, 8, 1), ("gpt2-small MHA", 1024, 768, 768, 12, 2))


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def summary(ms):
    return {"p50": round(statistics.median(ms), 1), "p95": round(percentile(ms, 0.95), 1), "max": round(max(ms), 1)}


def main():
    app = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    folder = tempfile.mkdtemp(prefix="attnscope-round-trip-")
    os.environ.update(ATTNSCOPE_APP=app, ATTNSCOPE_CHANNEL=os.path.join(folder, "channel"))
    out = {"rounds": rounds, "what": "attnscope.show into a running app: the reply once applied, and once the "
                                     "newest result is on screen (the wait command's reply)"}
    try:
        for name, T, d_in, d_out, heads, batch in SIZES:
            torch.manual_seed(123)
            m = sc.MultiHeadAttention(d_in, d_out, T, 0.0, num_heads=heads)
            x = torch.rand(T, d_in)
            x = torch.stack([x] * batch) if batch > 1 else x
            attnscope.show(m, x)  # starts the app the first time: not timed
            applied, shown = [], []
            for _ in range(rounds):
                x = x + 0.001  # a new input each round, as a cell run again
                t0 = time.perf_counter()
                attnscope.show(m, x)
                t1 = time.perf_counter()
                attnscope.command({"do": "wait"})
                t2 = time.perf_counter()
                applied.append((t1 - t0) * 1e3)
                shown.append((t2 - t0) * 1e3)
            out[name] = {"tokens": T, "d_in": d_in, "heads": heads, "batch": batch,
                         "applied_ms": summary(applied), "result_ms": summary(shown)}
    finally:
        try:
            attnscope.command({"do": "quit", "discard": True}, start=False)
        except Exception:
            pass
    print(json.dumps(out))


if __name__ == "__main__":
    main()
