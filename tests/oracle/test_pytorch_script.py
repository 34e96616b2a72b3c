# `attnscope-cli pytorch`: the printed script, run by Debian's torch, must give the output our trace
# gives (|ours − torch| ≤ 1e-5·(1 + |torch|)) — for every preset except gpt2-small and for generated
# workspaces with the options (bias, causal off, scale none, eval, dropout, batch 3, random
# embeddings, sum normalization, whole-number embeddings, p in 13 digits written exactly). Without --json the script must print a tensor (checked on a few).
# Usage: test_pytorch_script.py PATH/TO/attnscope-cli
import glob
import json
import re
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

from oracle_common import PRESETS, Worst, cli_path_from_argv, rel_diff, require_torch

require_torch()  # the scripts run with this interpreter; fail loudly if it has no torch
import numpy as np  # noqa: E402
from torch_trace import torch_draws_dropout  # noqa: E402

TOL = 1e-5
SKIPPED_PRESETS = {"gpt2-small"}  # 2×1024×768 with 12 heads: the trace alone is ~1 GB of JSON
PRINT_CHECKED = {"preset multihead", "preset simple", "wrapper_dropout_bias", "simple_sum"}
BOOK = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
        [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]


def generated():
    def ws(model, embeddings=BOOK):
        return {"format": "attnscope-workspace", "version": 1, "embeddings": embeddings, "model": model}
    return {
        "v2_bias": ws({"variant": "self_attention_v2", "d_out": 4, "qkv_bias": True, "seed": 1}),
        "v1_causal_scale_none": ws({"variant": "self_attention_v1", "d_out": 3, "causal": True,
                                    "scale": "none", "seed": 0}),
        "causal_off_dropout": ws({"variant": "causal", "causal": False, "dropout": 0.1, "seed": 4294967295,
                                  "batch_size": 3}),
        "causal_eval_dropout": ws({"variant": "causal", "dropout": 0.5, "training": False, "batch_size": 3}),
        "wrapper_dropout_bias": ws({"variant": "multihead_wrapper", "num_heads": 3, "d_out": 2, "dropout": 0.9,
                                    "qkv_bias": True, "batch_size": 3, "seed": 7},
                                   {"random": "uniform", "seed": 5, "rows": 17, "cols": 5}),
        "multihead_normal": ws({"variant": "multihead", "num_heads": 4, "d_out": 8, "dropout": 0.1,
                                "scale": "none", "causal": False, "batch_size": 3, "seed": 2},
                               {"random": "normal", "seed": 4294967295, "rows": 33, "cols": 16}),
        "multihead_eval": ws({"variant": "multihead", "num_heads": 2, "d_out": 6, "dropout": 0.5,
                              "training": False, "qkv_bias": True, "seed": 0},
                             {"random": "normal", "seed": 0, "rows": 64, "cols": 8}),
        "simple_sum": ws({"variant": "simple", "normalization": "sum", "batch_size": 3}),
        "simple_sum_uniform_scaled": ws({"variant": "simple", "normalization": "sum", "scale": "sqrt_dk"},
                                        {"random": "uniform", "seed": 123, "rows": 9, "cols": 4}),
        "simple_softmax_normal": ws({"variant": "simple", "scale": "sqrt_dk", "batch_size": 2},
                                    {"random": "normal", "seed": 1, "rows": 16, "cols": 3}),
        # The notebook's cells [32] (torch's own stream here), [36] and [38]: the generator as the
        # cells leave it.
        "notebook_32_default": ws({"variant": "causal", "seed": 789, "dropout": 0.5, "dropout_seed": 123,
                                   "dropout_rng": "default"}),
        "notebook_36": ws({"variant": "causal", "seed": 123, "draws_before": 1}),
        "notebook_38": ws({"variant": "multihead_wrapper", "num_heads": 2, "seed": 123, "draws_before": 19}),
        "single_token": ws({"variant": "multihead", "num_heads": 1, "d_out": 1, "dropout": 0.5},
                           [[0.5, -0.25]]),
        # Whole numbers (one-hot inputs): torch.tensor made them int64, and the script stopped
        # ("expected scalar type Long but found Float"); the batch's own sequences too.
        "whole_numbers": ws({"variant": "causal", "d_out": 2, "batch_size": 2},
                            [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0]]),
        "whole_numbers_simple": dict(ws({"variant": "simple", "batch_size": 2}, [[1, 2], [3, 4]]),
                                     batch_sequences=[[[0, 1], [2, 0]]]),
        # p in more digits than six: the script's constructor wrote 0.123457 (checked in the text).
        "dropout_digits": ws({"variant": "multihead", "num_heads": 2, "d_out": 4, "dropout": 0.1234567890123,
                              "dropout_rng": "default", "seed": 3},
                             {"random": "normal", "seed": 9, "rows": 40, "cols": 4}),
    }


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise AssertionError("%s exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-2000:]))
    return p.stdout


def check(worst, cli, name, path, tmp, also_plain):
    with open(path) as f:
        ws = json.load(f)
    if not torch_draws_dropout(ws["model"]):
        # MKL's masks: Debian's torch has no MKL, so the script must say its output differs; the
        # numbers are then compared on torch's own stream.
        script = os.path.join(tmp, name + "-mkl.py")
        with open(script, "w") as f:
            f.write(run([cli, "pytorch", path]))
        p = subprocess.run([sys.executable, script, "--json"], capture_output=True, text=True, cwd=tmp)
        if p.returncode != 0 or "draws dropout without MKL's stream" not in p.stderr:
            worst.fail("%s: the script run without MKL did not say its masks differ: %r" % (name, p.stderr[-300:]))
        ws["model"]["dropout_rng"] = "default"
        path = os.path.join(tmp, name + "-default.json")
        with open(path, "w") as f:
            json.dump(ws, f)
    script = os.path.join(tmp, name + ".py")
    text = run([cli, "pytorch", path])
    with open(script, "w") as f:
        f.write(text)
    p = ws["model"].get("dropout")
    if p is not None and ws["model"].get("variant") not in ("simple", "self_attention_v1", "self_attention_v2"):
        written = re.findall(r"dropout=([-+0-9.e]+)", text)
        if not written or any(float(w) != p for w in written):
            worst.fail("%s: the script's dropout=%s, not the workspace's %r" % (name, written, p))
    torch_out = np.array(json.loads(run([sys.executable, script, "--json"], cwd=tmp)), dtype=np.float64)
    if also_plain:  # each run imports torch (~1.5 s), so the plain print is checked on a few
        printed = run([sys.executable, script], cwd=tmp)
        if not printed.lstrip().startswith("tensor("):
            worst.fail("%s: without --json the script printed %r, not a tensor" % (name, printed[:80]))
    # Intermediates of batch element 0 only (the medium preset's full trace is large); outputs of
    # every element are always in the trace.
    trace = json.loads(run([cli, "trace", path, "--batch", "0"]))
    ours = np.array([b["output"] for b in trace["batches"]], dtype=np.float64)
    if ours.shape != torch_out.shape:
        worst.fail("%s: trace output shape %s, script's %s" % (name, ours.shape, torch_out.shape))
        return
    worst.record("output", rel_diff(ours, torch_out), name, TOL)


def main():
    cli = cli_path_from_argv()
    worst = Worst()
    with tempfile.TemporaryDirectory(prefix="attnscope-script-") as tmp:
        jobs = []
        for path in sorted(glob.glob(os.path.join(PRESETS, "*.json"))):
            preset = os.path.splitext(os.path.basename(path))[0]
            if preset not in SKIPPED_PRESETS:
                jobs.append(("preset " + preset, path))
        for name, ws in generated().items():
            path = os.path.join(tmp, name + ".json")
            with open(path, "w") as f:
                json.dump(ws, f)
            jobs.append((name, path))

        def job(name, path):
            try:
                check(worst, cli, name.replace(" ", "_"), path, tmp, name in PRINT_CHECKED)
            except AssertionError as e:
                worst.fail("%s: %s" % (name, e))

        names = [name for name, _ in jobs]
        with ThreadPoolExecutor(max_workers=2) as pool:  # the time is torch's import, per script
            list(pool.map(lambda j: job(*j), jobs))
    print("pytorch scripts: %d workspaces (%s); skipped presets: %s" % (
        len(names), ", ".join(names), ", ".join(sorted(SKIPPED_PRESETS))))
    return worst.report("pytorch script")


if __name__ == "__main__":
    sys.exit(main())
