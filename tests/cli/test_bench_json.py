#!/usr/bin/env python3
"""`attnscope-cli bench`'s JSON, the input of `make bench` (tests/bench/run_bench.py): the keys it
reads, and figures that agree with each other. Timings themselves are never judged here.

Usage: test_bench_json.py CLI_PATH
"""
import json
import subprocess
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def bench(cli, *args):
    p = subprocess.run([cli, "bench", "--preset", "medium", *args], capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        fail(f"bench {' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def check_summary(s, runs, where):
    for k in ("min", "median", "mean", "max", "runs"):
        if k not in s:
            fail(f"{where}: no '{k}' in {s}")
    if s["runs"] != runs or not (0 < s["min"] <= s["median"] <= s["max"]):
        fail(f"{where}: {s} is not a summary of {runs} positive runs")


def check_paired(j, runs):
    p = j["paired_limit"]
    for k in ("forward_ms", "gemm_gflops", "limit_ms", "forward_over_limit"):
        check_summary(p[k], runs, f"paired_limit.{k}")
    # Each run's limit is the forward's GFLOP at that run's concurrent GEMM speed.
    gflop = j["flop"]["gflop"]
    lo, hi = gflop / p["gemm_gflops"]["max"] * 1e3, gflop / p["gemm_gflops"]["min"] * 1e3
    if not (lo * 0.999 <= p["limit_ms"]["median"] <= hi * 1.001):
        fail(f"limit median {p['limit_ms']['median']} ms outside [{lo}, {hi}] from the GEMM speeds")
    r_lo = p["forward_ms"]["min"] / p["limit_ms"]["max"]
    r_hi = p["forward_ms"]["max"] / p["limit_ms"]["min"]
    if not (r_lo * 0.999 <= p["forward_over_limit"]["median"] <= r_hi * 1.001):
        fail(f"ratio median {p['forward_over_limit']['median']} outside [{r_lo}, {r_hi}]")


def main():
    cli = sys.argv[1]
    full = bench(cli, "--repeat", "3")
    for k in ("serial", "reference", "gemm", "flop", "limit_ms", "forward_over_limit", "paired_limit"):
        if k not in full:
            fail(f"bench: no '{k}' key")
    timed = full.get("openmp", full["serial"])
    for k in ("forward_ms", "trace_ms"):
        check_summary(timed[k], 3, k)
    check_paired(full, 3)
    print(f"bench: keys present; paired limit {full['paired_limit']['limit_ms']['median']:.3f} ms, "
          f"ours ÷ limit {full['paired_limit']['forward_over_limit']['median']:.2f}")

    quick = bench(cli, "--forward-only", "--repeat", "4")
    if any(k in quick for k in ("reference", "gemm", "trace_ms")):
        fail(f"--forward-only timed more than the forward: keys {sorted(quick)}")
    check_summary(quick.get("openmp", quick.get("serial"))["forward_ms"], 4, "forward-only forward_ms")
    check_paired(quick, 4)
    print("bench --forward-only: the forward and its paired limit only")


if __name__ == "__main__":
    main()
