#!/usr/bin/env python3
"""The benchmark behind `make bench` (not a test): times attnscope's MultiHeadAttention forward pass
and trace (serial and OpenMP paths, via `attnscope-cli bench --preset NAME`) against the same module
in Debian's torch (the seed class, torch.no_grad, same shapes/dropout/batch, one thread per core),
then writes one JSON file and prints a short table.

Usage: run_bench.py CLI_PATH OUT.json [--assets DIR] [--python /usr/bin/python3]
The torch side runs in a child process under Debian's interpreter (the PATH's python3 may lack
torch), after our runs, so the two never compete for the cores.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# preset -> timed runs per measurement (after one warm-up). gpt2-small takes ~1 s per run.
CONFIGS = [("multihead", 200), ("medium", 10), ("gpt2-small", 5)]


# ---------------------------------------------------------------- torch side (child process)

def loaded_blas_libraries():
    """Shared libraries of this process whose name says BLAS/LAPACK (the real ones, not links)."""
    libs = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            name = os.path.basename(path)
            if path.startswith("/") and any(k in name for k in ("blas", "lapack", "mkl")):
                libs.add(os.path.realpath(path))
    return sorted(libs)


def torch_worker(assets, configs):
    import torch
    sys.path.insert(0, os.path.join(REPO, "core", "formats", "pytorch"))
    import seed_classes

    threads = os.cpu_count() or 1
    torch.set_num_threads(threads)
    config_text = torch.__config__.show()
    out = {"torch_version": torch.__version__, "torch_threads": torch.get_num_threads(),
           "torch_blas_info": next((part.split("=", 1)[1] for part in config_text.replace(",", "\n")
                                    .split() if part.startswith("BLAS_INFO=")), "?"),
           "configs": {}}
    for preset, repeat in configs:
        with open(os.path.join(assets, "presets", preset + ".json")) as f:
            ws = json.load(f)
        m, emb = ws["model"], ws["embeddings"]
        if isinstance(emb, dict):
            torch.manual_seed(emb["seed"])
            draw = torch.randn if emb["random"] == "normal" else torch.rand
            x = draw(emb["rows"], emb["cols"])
        else:
            x = torch.tensor(emb, dtype=torch.float32)
        T, d_in = x.shape
        batch = torch.stack([x] * m.get("batch_size", 2))
        torch.manual_seed(m.get("seed", 123))
        module = seed_classes.MultiHeadAttention(
            d_in, m["d_out"], T, m.get("dropout", 0.0), m["num_heads"], m.get("qkv_bias", False))
        module.train(m.get("training", True))  # a fresh module trains, like ours
        times = []
        with torch.no_grad():
            module(batch)  # warm-up
            for _ in range(repeat):
                start = time.perf_counter()
                module(batch)
                times.append((time.perf_counter() - start) * 1e3)
        out["configs"][preset] = {"forward_ms": statistics.median(times), "runs": repeat}
    out["blas_libraries"] = loaded_blas_libraries()  # after the matmuls: what actually ran
    print(json.dumps(out))


# ---------------------------------------------------------------- our side and the report

def run_ours(cli, preset, repeat):
    p = subprocess.run([cli, "bench", "--preset", preset, "--repeat", str(repeat)],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"attnscope-cli bench --preset {preset} failed ({p.returncode}): {p.stderr.strip()}")
    return json.loads(p.stdout)


def load_average():
    """1-minute load average: other work on the machine makes the timings noisy."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def machine_info():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    except OSError:
        pass
    dpkg = subprocess.run(["dpkg-query", "-W", "-f=${Status} ${Version}", "libopenblas0-pthread"],
                          capture_output=True, text=True)
    installed = dpkg.returncode == 0 and "install ok installed" in dpkg.stdout
    return {"nproc": os.cpu_count(), "cpu": cpu, "platform": platform.platform(),
            "libopenblas0_pthread": dpkg.stdout.split()[-1] if installed else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cli")
    ap.add_argument("out")
    ap.add_argument("--assets", default=os.path.join(REPO, "assets"))
    ap.add_argument("--python", default=os.environ.get("ATTNSCOPE_PYTHON", "/usr/bin/python3"))
    args = ap.parse_args()
    started, load_before = time.monotonic(), load_average()

    ours = {preset: run_ours(os.path.abspath(args.cli), preset, repeat)
            for preset, repeat in CONFIGS}
    worker = subprocess.run([args.python, os.path.abspath(__file__), "--torch-worker", args.assets,
                             json.dumps(CONFIGS)], capture_output=True, text=True, timeout=600)
    if worker.returncode != 0:
        sys.exit(f"torch side failed under {args.python} (Debian's python3-torch is required):\n"
                 f"{worker.stderr.strip()}")
    torch_side = json.loads(worker.stdout)

    machine = machine_info()
    machine.update({k: torch_side[k] for k in
                    ("torch_version", "torch_threads", "torch_blas_info", "blas_libraries")})
    machine["load_average_1min"] = {"before": load_before, "after": load_average()}
    machine["openblas_in_use"] = any("openblas" in lib for lib in torch_side["blas_libraries"])
    report = {"machine": machine, "configs": []}
    for preset, repeat in CONFIGS:
        o, t = ours[preset], torch_side["configs"][preset]
        entry = {"preset": preset,
                 "shape": {k: o[k] for k in ("variant", "tokens", "d_in", "d_out", "num_heads",
                                             "batch_size")},
                 "repeat": repeat,
                 "ours_serial_forward_ms": o["serial"]["forward_ms"]["median"],
                 "ours_serial_trace_ms": o["serial"]["trace_ms"]["median"],
                 "torch_forward_ms": t["forward_ms"]}
        if "openmp" in o:
            entry.update({"ours_openmp_threads": o["openmp"]["threads"],
                          "ours_openmp_forward_ms": o["openmp"]["forward_ms"]["median"],
                          "ours_openmp_trace_ms": o["openmp"]["trace_ms"]["median"]})
            entry["ratio_ours_openmp_forward_over_torch_forward"] = (
                entry["ours_openmp_forward_ms"] / t["forward_ms"])
        report["configs"].append(entry)
    report["total_seconds"] = round(time.monotonic() - started, 1)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    print_table(report)
    print(f"written to {args.out}")


def print_table(report):
    m = report["machine"]
    print(f"machine: {m['nproc']} cores ({m['cpu']}); torch {m['torch_version']} with "
          f"{m['torch_threads']} threads; BLAS: "
          f"{'OpenBLAS' if m['openblas_in_use'] else 'reference/other'} "
          f"({', '.join(os.path.basename(l) for l in m['blas_libraries']) or 'none loaded'})")
    head = (f"{'preset':<11} {'T':>5} {'d_out':>5} {'H':>3} {'B':>2} | {'serial fwd':>10} "
            f"{'omp fwd':>10} {'serial trc':>10} {'omp trc':>10} | {'torch fwd':>10} | "
            f"{'omp/torch':>9}")
    print(head)
    print("-" * len(head))
    for c in report["configs"]:
        s = c["shape"]
        ms = lambda key: f"{c[key]:10.3f}" if key in c else f"{'-':>10}"  # noqa: E731
        ratio = c.get("ratio_ours_openmp_forward_over_torch_forward")
        print(f"{c['preset']:<11} {s['tokens']:>5} {s['d_out']:>5} {s['num_heads']:>3} "
              f"{s['batch_size']:>2} | {ms('ours_serial_forward_ms')} {ms('ours_openmp_forward_ms')} "
              f"{ms('ours_serial_trace_ms')} {ms('ours_openmp_trace_ms')} | "
              f"{ms('torch_forward_ms')} | {ratio if ratio is None else f'{ratio:9.2f}'}")
    load = m["load_average_1min"]
    print(f"(medians in ms; total {report['total_seconds']} s; load average {load['before']:.2f} "
          f"before, {load['after']:.2f} after: above ~0.5 other work skews the numbers)")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--torch-worker":
        torch_worker(sys.argv[2], json.loads(sys.argv[3]))
    else:
        main()
