# Large-T oracle: `attnscope-cli trace` at T = 128, 512 and 1024 through the fast path —
# one head of one element traced (`--batch B --heads H`, the reference loops), every other head and
# element from the fused kernel (tiles, online softmax, skipped causal tiles, keep bits) — against
# Debian's torch running the seed classes (torch_trace.py), in eval and in training with dropout.
# Parameters and the traced head's dropout mask must equal torch's bitwise; the traced head's
# intermediates and every element's output, context and per-head contexts must be within
# |ours − torch| ≤ 1e-5·(1 + |torch|), and so must its statistics against torch's computed
# from torch's weights. With dropout the elements must differ (their draws do);
# without, they must agree to the same tolerance. One case runs with --threads 2, one with
# --outputs-only. Usage: test_large_t_oracle.py PATH/TO/attnscope-cli
import json
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

from oracle_common import (TOL, Worst, cli_path_from_argv, compare_floats, compare_head, compare_statistics,
                           load_seed_classes, rel_diff, require_torch, trace_array)

torch = require_torch()
import numpy as np  # noqa: E402
import torch_trace  # noqa: E402

FLOAT_FIELDS = ["queries", "keys", "values", "scores", "scaled_scores", "masked_scores", "weights",
                "dropped_weights", "context"]
# For the test of the test: ATTNSCOPE_ORACLE_SABOTAGE=output adds 1e-4 to one
# of torch's outputs, =dropout runs torch with another p; either must make this test fail.
SABOTAGE = os.environ.get("ATTNSCOPE_ORACLE_SABOTAGE", "")


def workspace(T, d_in, d_out, heads, training, dropout, seed=123, variant="multihead",
              embeddings="uniform", **extra):
    model = dict({"variant": variant, "d_out": d_out, "num_heads": heads, "seed": seed,
                  "dropout": dropout, "training": training, "batch_size": 2, "qkv_bias": False,
                  "causal": True, "scale": "sqrt_dk", "normalization": "softmax"}, **extra)
    return {"format": "attnscope-workspace", "version": 1,
            "embeddings": {"random": embeddings, "seed": seed + T, "rows": T, "cols": d_in},
            "model": model}


# (name, workspace, runs): each run is the CLI's extra arguments; every run is compared with the
# same torch reference. `--batch b --heads h` traces head h of element b only.
TRACE_00 = ["--batch", "0", "--heads", "0"]
CASES = [
    ("T=128 eval", workspace(128, 96, 128, 4, False, 0.1), [TRACE_00]),
    ("T=128 train p=0.1", workspace(128, 96, 128, 4, True, 0.1), [TRACE_00]),
    ("T=512 eval", workspace(512, 256, 256, 4, False, 0.1), [TRACE_00]),
    ("T=512 train p=0.1", workspace(512, 256, 256, 4, True, 0.1), [TRACE_00]),
    ("T=512 train p=0.5", workspace(512, 256, 256, 4, True, 0.5),
     [TRACE_00, TRACE_00 + ["--threads", "2"]]),
    # GPT-2 small's shape (the gpt2-small preset: normal inputs, 768 wide, 12 heads, B = 2).
    ("T=1024 eval", workspace(1024, 768, 768, 12, False, 0.1, embeddings="normal"),
     [TRACE_00, ["--outputs-only"]]),
    ("T=1024 train p=0.1", workspace(1024, 768, 768, 12, True, 0.1, embeddings="normal"),
     [TRACE_00, ["--outputs-only"]]),
    # Beyond the brief, small and cheap: the fused kernel without the causal mask, with biases and
    # unscaled scores, and the wrapper's dropout order (head after head), tracing another (b, h).
    ("T=128 train p=0.1 non-causal bias scale=none",
     workspace(128, 64, 64, 2, True, 0.1, causal=False, qkv_bias=True, scale="none"),
     [["--batch", "1", "--heads", "1"]]),
    ("T=128 wrapper train p=0.1", workspace(128, 64, 32, 3, True, 0.1, variant="multihead_wrapper"),
     [["--batch", "1", "--heads", "2"]]),
]


def run_trace(cli, path, extra):
    run = subprocess.run([cli, "trace", path, *extra], capture_output=True)
    if run.returncode != 0:
        raise AssertionError("attnscope-cli trace %s exited %d: %s" % (
            " ".join(extra), run.returncode, run.stderr.decode().strip()))
    return json.loads(run.stdout)


def torch_reference(ws, sc):
    """torch.manual_seed, the seed class, train()/eval(), forward on the B-stacked input: the
    parameters and every intermediate (torch_trace.reference), checked against the plain module."""
    if SABOTAGE == "dropout" and ws["model"]["training"]:
        ws = json.loads(json.dumps(ws))
        ws["model"]["dropout"] = 0.2 if ws["model"]["dropout"] != 0.2 else 0.3
    ref = torch_trace.reference(ws, sc)
    torch_trace.check_masked_softmax_input(ref)
    if SABOTAGE == "output":
        ref["batches"][1]["output"] = ref["batches"][1]["output"].clone()
        ref["batches"][1]["output"][7, 3] += 1e-4 * (1 + abs(float(ref["batches"][1]["output"][7, 3])))
    return ref


def compare_run(worst, case, trace, ref, traced):
    """One CLI run against torch. traced: the (b, h) whose maps the run asked for."""
    for name, value in ref["params"].items():
        ours = trace["parameters"].get(name)
        ref_bits = value.contiguous().view(torch.int32).numpy().astype(np.uint32)
        ours_bits = None if ours is None else np.array(ours, dtype=np.float32).view(np.uint32)
        if ours_bits is None or ours_bits.shape != ref_bits.shape or not np.array_equal(ours_bits, ref_bits):
            worst.fail("%s: parameter %s differs from torch bitwise" % (case, name))
    if set(trace["parameters"]) != set(ref["params"]):
        worst.fail("%s: parameter names %s != torch's %s" % (case, sorted(trace["parameters"]),
                                                             sorted(ref["params"])))
    worst.record("parameters (bitwise)", 0.0, case, 0.0)

    if len(trace["batches"]) != len(ref["batches"]):
        worst.fail("%s: %d batches, torch %d" % (case, len(trace["batches"]), len(ref["batches"])))
        return
    maps_seen = 0
    for b, (ob, rb) in enumerate(zip(trace["batches"], ref["batches"])):
        kept = traced is not None and b == traced[0]
        if len(ob["heads"]) != (len(rb["heads"]) if kept else 0):
            worst.fail("%s: batch %d has %d heads in the JSON" % (case, b, len(ob["heads"])))
            continue
        for h, (oh, rh) in enumerate(zip(ob["heads"], rb["heads"])):
            where = "%s b%d h%d" % (case, b, h)
            if h != traced[1]:  # maps not asked for: the head's context only (DESIGN §2.5)
                if set(oh) != {"context"}:
                    worst.fail("%s: an untraced head has %s" % (where, sorted(oh)))
                else:
                    compare_floats(worst, "context (fused head)", oh["context"], rh["context"], where)
                continue
            maps_seen += 1
            compare_head(worst, oh, rh, where, FLOAT_FIELDS, "traced head ")
            compare_statistics(worst, oh.get("statistics"), oh["weights"],  # at GPT-2's T = 1024
                               torch_trace.statistics(rh["weights"], rh["dropped_weights"]), rh["weights"], where,
                               "traced head ")
            worst.record("dropout mask (bitwise)", 0.0, where, 0.0)
        origin = "traced element" if kept else "fused element"
        compare_floats(worst, "context (%s)" % origin, ob["context"], rb["context"], "%s b%d" % (case, b))
        compare_floats(worst, "output (%s)" % origin, ob["output"], rb["output"], "%s b%d" % (case, b))
    if maps_seen != (traced is not None):
        worst.fail("%s: %d heads with maps, expected %d" % (case, maps_seen, traced is not None))


def compare_elements(worst, case, trace, m):
    """Dropout active: the two elements draw differently, so their outputs differ; without it they
    compute the same thing and agree to the tolerance."""
    o0, o1 = (trace_array(trace["batches"][b]["output"]) for b in (0, 1))
    active = m["training"] and m["dropout"] > 0
    if active and np.array_equal(o0, o1):
        worst.fail("%s: with dropout, element 1's output equals element 0's" % case)
    if not active:
        worst.record("element 1 vs element 0 (no dropout)", rel_diff(o1, o0), case, TOL)
    return "differ" if active else ("bitwise equal" if np.array_equal(o0, o1) else "close")


def traced_of(extra):
    if "--outputs-only" in extra:
        return None
    return int(extra[extra.index("--batch") + 1]), int(extra[extra.index("--heads") + 1])


def check_option_errors(worst, cli, path):
    """Bad --heads / --outputs-only use: exit 2, one "error: …" line naming the option, no stdout."""
    for extra, phrase in ((["--heads", "x"], "--heads"), (["--heads", "0,"], "--heads"),
                          (["--heads", ""], "--heads"), (["--heads", "4"], "head 4"),
                          (["--outputs-only", "--batch", "0"], "--outputs-only"),
                          (["--outputs-only", "--heads", "0"], "--outputs-only")):
        run = subprocess.run([cli, "trace", path, *extra], capture_output=True, text=True)
        lines = run.stderr.splitlines()
        if run.returncode != 2 or run.stdout or len(lines) != 1 or not lines[0].startswith("error: ") \
                or phrase not in lines[0]:
            worst.fail("trace %s: exit %d, stderr %r, %d bytes on stdout (expected exit 2 and one "
                       "error line naming %s)" % (" ".join(extra), run.returncode, run.stderr[:200],
                                                  len(run.stdout), phrase))


def main():
    cli = cli_path_from_argv()
    sc = load_seed_classes()
    worst = Worst()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="attnscope-large-t-") as tmp:
        for i, (name, ws, runs) in enumerate(CASES):
            path = os.path.join(tmp, "case%d.json" % i)
            with open(path, "w") as f:
                json.dump(ws, f)
            if i == 0:  # 4 heads
                check_option_errors(worst, cli, path)
            t0 = time.monotonic()
            try:
                ref = torch_reference(ws, sc)
            except AssertionError as e:
                worst.fail("%s: torch side: %s" % (name, e))
                continue
            if i == 4 and torch_trace.torch_draws_dropout(ws["model"]):  # the capture hooks change nothing
                if not torch.equal(torch_trace.run_plain(sc, ws), ref["output"]):
                    worst.fail("%s: the hooked module's output differs from the plain module's" % name)
            t_torch = time.monotonic() - t0
            for extra in runs:
                case = "%s [%s]" % (name, " ".join(extra))
                t1 = time.monotonic()
                try:
                    trace = run_trace(cli, path, extra)
                except AssertionError as e:
                    worst.fail("%s: %s" % (case, e))
                    continue
                t_cli = time.monotonic() - t1
                compare_run(worst, case, trace, ref, traced_of(extra))
                elements = compare_elements(worst, case, trace, ws["model"])
                print("%-58s torch %5.1f s, cli+json %5.1f s, elements %s" % (case, t_torch, t_cli, elements))
                t_torch = 0.0
                del trace
            del ref
    print("large-T oracle: %d workspaces, %.0f s" % (len(CASES), time.monotonic() - start))
    return worst.report("large-T oracle")


if __name__ == "__main__":
    sys.exit(main())
