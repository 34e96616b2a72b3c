# The user's own parameters (docs/DESIGN.md §2.4) against Debian's torch: workspaces of
# every variant with random "parameters" (all of a module's, or some of them; biases; dropout in
# training) traced by `attnscope-cli trace` and by the seed class as a learner would run it:
#     torch.manual_seed(seed); m = Class(…); m.load_state_dict(parameters, strict=False); m(batch)
# Parameters must be torch's state_dict after the load bit for bit (the given ones exactly the
# values written), dropout masks torch's bit for bit and the same as without the parameters,
# every intermediate within 1e-5·(1 + |torch|). The script `attnscope-cli pytorch` prints for each
# workspace, run by torch, holds the trace's parameters bit for bit and prints its output within
# 1e-5. Also `import --parameters` of np.savez(state_dict) for every variant: the workspace holds the
# state_dict exactly (its mask buffers left out).
# Usage: test_parameters_oracle.py PATH/TO/attnscope-cli
import contextlib
import io
import json
import os
import random
import runpy
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

from oracle_common import TOL, Worst, cli_path_from_argv, load_seed_classes, rel_diff, require_torch, trace_array

torch = require_torch()
import numpy as np  # noqa: E402
import torch_trace  # noqa: E402
from test_trace_oracle import compare_case, run_trace  # noqa: E402

VARIANTS = ["self_attention_v1", "self_attention_v2", "causal", "multihead_wrapper", "multihead"]
DROPOUT_VARIANTS = ("causal", "multihead_wrapper", "multihead")
CASES_PER_VARIANT = 6


def state_dict_shapes(sc, m, T, d_in):
    """Names and shapes of the seed class's parameters, from torch itself (buffers left out)."""
    model = torch_trace.construct(sc, m, T, d_in)
    return {k: tuple(v.shape) for k, v in model.state_dict().items() if k.split(".")[-1] != "mask"}


def make_case(rng, sc, variant, i):
    T = rng.choice([1, 2, 5, 6, 9, 16])
    d_in = rng.choice([1, 3, 4, 8])
    m = {"variant": variant, "seed": rng.choice([0, 123, 789, 2**32 - 1, rng.randrange(2**32)]),
         "batch_size": rng.randint(1, 3), "training": True, "scale": rng.choice(["sqrt_dk", "none"]),
         "normalization": "softmax", "qkv_bias": False, "dropout": 0.0}
    m["causal"] = variant in DROPOUT_VARIANTS if rng.random() < 0.8 else variant not in DROPOUT_VARIANTS
    if variant == "multihead":
        m["num_heads"] = rng.randint(1, 3)
        m["d_out"] = m["num_heads"] * rng.randint(1, 3)
    else:
        m["d_out"] = rng.randint(1, 4)
        m["num_heads"] = rng.randint(1, 3) if variant == "multihead_wrapper" else 1
    if variant != "self_attention_v1":
        m["qkv_bias"] = i % 2 == 1
    if variant in DROPOUT_VARIANTS:
        m["dropout"] = [0.5, 0.0, 0.3, 0.9][i % 4]
        m["training"] = i % 4 != 1 or rng.random() < 0.5
        m["dropout_rng"] = "default" if i % 2 == 0 else "mkl"  # the script's output: torch's own
    shapes = state_dict_shapes(sc, m, T, d_in)
    # All of the module's parameters, or a random part of them (at least one).
    names = sorted(shapes)
    if i % 3 == 2:
        names = rng.sample(names, rng.randint(1, len(names)))
    scale = [0.5, 1.0, 3.0][i % 3]
    values = {}
    for name in names:
        a = np.array([rng.uniform(-scale, scale) for _ in range(int(np.prod(shapes[name])))], dtype=np.float32)
        a = a.reshape(shapes[name])
        values[name] = a.tolist()  # exact float32 values as Python floats
    embeddings = [[round(rng.uniform(-1.0, 1.0), 3) for _ in range(d_in)] for _ in range(T)]
    return {"format": "attnscope-workspace", "version": 1, "embeddings": embeddings, "model": m,
            "parameters": values}


def f32_bits(values):
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def describe(ws):
    m = ws["model"]
    return "%s T=%d d_in=%d d_out=%d H=%d B=%d seed=%d p=%s train=%s bias=%s causal=%s, %d of its parameters given" % (
        m["variant"], len(ws["embeddings"]), len(ws["embeddings"][0]), m["d_out"], m["num_heads"], m["batch_size"],
        m["seed"], m["dropout"], m["training"], m["qkv_bias"], m["causal"], len(ws["parameters"]))


def check_trace(worst, cli, sc, name, ws, path, tmp):
    trace = run_trace(cli, path)
    ref = torch_trace.reference(ws, sc)
    compare_case(worst, name, trace, ref)  # parameters and masks bitwise, the rest within 1e-5
    for key, value in ws["parameters"].items():  # the given values, exactly as written
        ours = trace["parameters"].get(key)
        if ours is None or not np.array_equal(f32_bits(trace_array(ours)), f32_bits(value)):
            worst.fail("%s: parameter %s is not the value written" % (name, key))
    if ws["model"]["variant"] != "simple" and torch_trace.torch_draws_dropout(ws["model"]):
        plain = torch_trace.run_plain(sc, ws)  # the hooked module computes what the plain one does
        if not torch.equal(plain, ref["output"]):
            worst.fail("%s: the hooked module's output differs from the plain module's" % name)
    # The dropout masks are those of the same workspace without parameters.
    seeded = dict(ws)
    del seeded["parameters"]
    seeded_path = os.path.join(tmp, "seeded.json")
    with open(seeded_path, "w") as f:
        json.dump(seeded, f)
    without = run_trace(cli, seeded_path)
    for b, (ob, sb) in enumerate(zip(trace["batches"], without["batches"])):
        for h, (oh, sh) in enumerate(zip(ob["heads"], sb["heads"])):
            if oh["dropout_mask"] != sh["dropout_mask"]:
                worst.fail("%s b%d h%d: the parameters changed the dropout mask" % (name, b, h))
    worst.record("masks as without parameters", 0.0, name, 0.0)
    return trace


def check_script(worst, cli, name, path, trace, tmp):
    """`attnscope-cli pytorch`'s script, run here by torch (runpy, one interpreter for all): its
    module's state_dict is the trace's parameters bit for bit, its output the trace's within 1e-5."""
    run = subprocess.run([cli, "pytorch", path], capture_output=True, text=True)
    if run.returncode != 0:
        worst.fail("%s: pytorch exited %d: %s" % (name, run.returncode, run.stderr.strip()))
        return
    script = os.path.join(tmp, "script.py")
    with open(script, "w") as f:
        f.write(run.stdout)
    if "float.fromhex" not in run.stdout or "load_state_dict(parameters" not in run.stdout:
        worst.fail("%s: the script does not load its parameters exactly" % name)
    printed = io.StringIO()
    argv = sys.argv
    try:
        sys.argv = [script, "--json"]
        with contextlib.redirect_stdout(printed):
            g = runpy.run_path(script, run_name="__main__")
    finally:
        sys.argv = argv
    state = g["model"].state_dict()
    for key, value in trace["parameters"].items():
        if key not in state or not np.array_equal(state[key].contiguous().view(torch.int32).numpy().view(np.uint32),
                                                  f32_bits(trace_array(value))):
            worst.fail("%s: the script's %s is not the trace's bit for bit" % (name, key))
    ours = np.array([b["output"] for b in trace["batches"]], dtype=np.float64)
    theirs = np.array(json.loads(printed.getvalue()), dtype=np.float64)
    if ours.shape != theirs.shape:
        worst.fail("%s: the script's output has shape %s, the trace's %s" % (name, theirs.shape, ours.shape))
        return
    if torch_trace.torch_draws_dropout(trace["workspace"]["model"]):  # MKL's masks: not this torch's
        worst.record("script output", rel_diff(ours, theirs), name, TOL)


def check_import(worst, cli, sc, variant, tmp):
    """np.savez of a module's state_dict (mask buffers included) → import --parameters: the
    workspace holds the parameters exactly, and traces as the module does."""
    rng = random.Random(hash(variant) & 0xFFFF)
    T, d_in = 5, 4
    m = {"variant": variant, "seed": 7, "d_out": 4 if variant == "multihead" else 3,
         "num_heads": {"multihead": 2, "multihead_wrapper": 3}.get(variant, 1), "batch_size": 2,
         "training": True, "scale": "sqrt_dk", "normalization": "softmax", "dropout": 0.0,
         "qkv_bias": variant in ("self_attention_v2", "multihead"), "causal": variant in DROPOUT_VARIANTS}
    torch.manual_seed(2024)
    module = torch_trace.construct(sc, m, T, d_in)  # a "trained" module: other values than seed 7's
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn_like(p))
    state = {k: v.numpy() for k, v in module.state_dict().items()}
    npz = os.path.join(tmp, "state_%s.npz" % variant)
    (np.savez_compressed if rng.random() < 0.5 else np.savez)(npz, **state)
    x = np.random.default_rng(1).uniform(0, 1, (T, d_in)).astype(np.float32)
    x_path = os.path.join(tmp, "x.npy")
    np.save(x_path, x)
    args = [cli, "import", "--embeddings", x_path, "--parameters", npz, "--seed", "7"]
    if variant == "multihead":
        args += ["--num-heads", "2"]
    run = subprocess.run(args, capture_output=True, text=True)
    name = "import --parameters (%s)" % variant
    if run.returncode != 0:
        worst.fail("%s exited %d: %s" % (name, run.returncode, run.stderr.strip()))
        return
    ws = json.loads(run.stdout)
    if ws["model"]["variant"] != variant:
        worst.fail("%s: read as %s" % (name, ws["model"]["variant"]))
        return
    want = {k: v for k, v in state.items() if k.split(".")[-1] != "mask"}
    if set(ws["parameters"]) != set(want):
        worst.fail("%s: parameters %s, state_dict %s" % (name, sorted(ws["parameters"]), sorted(want)))
        return
    for k, v in want.items():
        if not np.array_equal(f32_bits(trace_array(ws["parameters"][k])), v.view(np.uint32)):
            worst.fail("%s: %s differs from the state_dict" % (name, k))
    path = os.path.join(tmp, "imported_%s.json" % variant)
    with open(path, "w") as f:
        f.write(run.stdout)
    trace = run_trace(cli, path)
    ws_for_torch = json.loads(run.stdout)
    ref = torch_trace.reference(ws_for_torch, sc)
    compare_case(worst, name, trace, ref)


def main():
    cli = cli_path_from_argv()
    sc = load_seed_classes()
    worst = Worst()
    rng = random.Random(20251113)
    counts = {}
    dropout_cases = partial_cases = 0
    with tempfile.TemporaryDirectory(prefix="attnscope-parameters-") as tmp:
        for i in range(CASES_PER_VARIANT):
            for variant in VARIANTS:
                ws = make_case(rng, sc, variant, i)
                name = "case %d %s" % (i, describe(ws))
                path = os.path.join(tmp, "case.json")
                with open(path, "w") as f:
                    json.dump(ws, f)
                try:
                    trace = check_trace(worst, cli, sc, name, ws, path, tmp)
                    check_script(worst, cli, name, path, trace, tmp)
                except AssertionError as e:
                    worst.fail("%s: %s" % (name, e))
                counts[variant] = counts.get(variant, 0) + 1
                m = ws["model"]
                dropout_cases += m["dropout"] > 0 and m["training"]
                partial_cases += i % 3 == 2
        for variant in VARIANTS:
            try:
                check_import(worst, cli, sc, variant, tmp)
            except AssertionError as e:
                worst.fail("import %s: %s" % (variant, e))
    print("parameters oracle: %s, each traced and as its pytorch script (%d with dropout acting, %d with some of "
          "the parameters given); import --parameters of every variant" % (
              ", ".join("%s %d" % (v, n) for v, n in counts.items()), dropout_cases, partial_cases))
    if dropout_cases < 6:
        worst.fail("only %d cases with dropout acting" % dropout_cases)
    return worst.report("parameters oracle")


if __name__ == "__main__":
    sys.exit(main())
