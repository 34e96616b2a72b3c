#!/usr/bin/python3
"""The up-front memory estimate holds (docs/DESIGN.md §2.4): for a grid of variants and sizes, the
estimate attnscope-cli refuses by (its "needs about …" with --memory-budget 1) is within 1.5× of
the peak resident memory the same command then reaches (the process's own base, measured on a
tiny workspace in this run, added to the estimate). Runs `trace` with every map, with
--outputs-only and with --batch 0, to /dev/null, one process each (os.wait4 gives its peak).

Before the estimate counted the packed copy of the weights, a 4-head wrapper of 4096 was estimated
at 775 MiB and peaked at 2.37 GB; --outputs-only counted maps it never holds (GPT-2 size: 5×).

Usage: test_memory_estimate.py CLI
"""
import json
import os
import re
import subprocess
import sys
import tempfile

RATIO = 1.5
UNITS = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}

# (variant, T, d_in = d_out, heads, batch, dropout): large weights, large maps, both, and the book's.
GRID = [
    ("multihead_wrapper", 6, 4096, 4, 2, 0.0),   # the probe's: 768 MiB of weights
    ("multihead", 6, 4096, 8, 2, 0.0),
    ("self_attention_v1", 6, 4096, 1, 1, 0.0),
    ("causal", 6, 4096, 1, 2, 0.1),
    ("multihead", 512, 256, 8, 2, 0.1),
    ("causal", 1024, 64, 1, 1, 0.0),
    ("multihead", 1024, 768, 12, 2, 0.0),        # GPT-2 small's attention
    ("simple", 512, 64, 1, 1, 0.0),
]
RUNS = [[], ["--outputs-only"], ["--batch", "0"]]


def workspace(variant, T, d, heads, batch, dropout):
    m = {"variant": variant, "d_out": d, "batch_size": batch, "dropout": dropout}
    if variant in ("multihead", "multihead_wrapper"):
        m["num_heads"] = heads
    return {"format": "attnscope-workspace", "version": 1,
            "embeddings": {"random": "uniform", "seed": 1, "rows": T, "cols": d}, "model": m}


def estimate(cli, path, args):
    p = subprocess.run([cli, "trace", path, "--memory-budget", "1", *args], capture_output=True, text=True)
    m = re.search(r"needs about ([\d.]+) (\w+)", p.stderr)
    if p.returncode == 0:
        return 0.0  # under a MiB: nothing to refuse
    if not m:
        raise AssertionError("no estimate in %r" % p.stderr.strip())
    return float(m.group(1)) * UNITS[m.group(2)]


def peak(cli, path, args):
    pid = os.fork()
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.execv(cli, [cli, "trace", path, "--memory-budget", "100000", *args])
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        raise AssertionError("trace %s exited with status %d" % (" ".join(args), status))
    return usage.ru_maxrss * 1024.0


def main():
    cli = sys.argv[1]
    if os.environ.get("ATTNSCOPE_SANITIZE") or os.environ.get("ASAN_OPTIONS"):
        print("a sanitizer build's memory is its own: nothing to measure")
        return 0
    failures, rows = [], []
    with tempfile.TemporaryDirectory(prefix="attnscope-memory-") as tmp:
        def write(ws, name):
            path = os.path.join(tmp, name + ".json")
            with open(path, "w") as f:
                json.dump(ws, f)
            return path
        base = peak(cli, write(workspace("causal", 2, 2, 1, 1, 0.0), "tiny"), [])
        for case in GRID:
            path = write(workspace(*case), "case")
            for args in RUNS if case[1] > 6 else RUNS[:1]:  # 6 tokens: no maps to speak of
                est, top = estimate(cli, path, args), peak(cli, path, args)
                ratio = (est + base) / top
                rows.append("  %-18s T=%-5d d=%-5d H=%-2d B=%d p=%.1f %-16s estimate %7.1f MiB, peak %7.1f MiB: %.2f" % (
                    case + (" ".join(args) or "every map", est / 2**20, top / 2**20, ratio)))
                if not 1 / RATIO <= ratio <= RATIO:
                    failures.append(rows[-1].strip())
    print("process base %.1f MiB; (estimate + base) / peak:" % (base / 2**20))
    print("\n".join(rows))
    for f in failures:
        print("FAIL: not within %.1f×: %s" % (RATIO, f))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
