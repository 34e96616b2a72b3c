# Engine oracle: `attnscope-cli trace` on ~80 generated workspaces (every variant and option) against
# Debian's torch running the seed classes (torch_trace.py). Parameters and dropout masks must be
# exactly equal, every intermediate within |ours − torch| ≤ 1e-5·(1 + |torch|), masked weights exactly
# 0 on both sides; each head's statistics (entropy, effective tokens, largest weight and its
# key, row sums after dropout, the means) within the same tolerance of torch's, computed from torch's
# weights; a few cases also run with --threads 2 and must match the serial trace.
# Usage: test_trace_oracle.py PATH/TO/attnscope-cli
import json
import os
import random
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

from oracle_common import (Worst, cli_path_from_argv, compare_floats, compare_head, compare_statistics,
                           load_seed_classes, rel_diff, require_torch, trace_array)

torch = require_torch()
import numpy as np  # noqa: E402
import torch_trace  # noqa: E402

THREADS_TOL = 1e-6
VARIANTS = ["simple", "self_attention_v1", "self_attention_v2", "causal", "multihead_wrapper",
            "multihead"]
DROPOUT_VARIANTS = ("causal", "multihead_wrapper", "multihead")
SEEDS = [0, 1, 123, 789, 2**32 - 1]
DROPOUTS = [0.0, 0.1, 0.5, 0.9, 1.0]  # 1.0: torch returns zeros and draws nothing
FLOAT_FIELDS = ["queries", "keys", "values", "scores", "scaled_scores", "masked_scores", "weights",
                "dropped_weights", "context"]


def make_embeddings(rng, T, d_in, positive):
    form = rng.choice(["matrix", "uniform", "normal"] if not positive else ["matrix", "uniform"])
    if form != "matrix":
        return {"random": form, "seed": rng.choice(SEEDS + [rng.randrange(2**32)]),
                "rows": T, "cols": d_in}
    if positive or rng.random() < 0.5:  # the book's style: two decimals in [0, 1)
        return [[round(rng.uniform(0.0, 1.0), 2) for _ in range(d_in)] for _ in range(T)]
    return [[rng.gauss(0.0, 1.0) for _ in range(d_in)] for _ in range(T)]


def make_workspace(rng, i):
    """Case i: variants in turn; each variant sees T = 1, T = 64 and seeds 0 … 2³²−1 early on."""
    variant = VARIANTS[i % len(VARIANTS)]
    rnd = i // len(VARIANTS)
    T = {0: 1, 1: 64}.get(rnd, rng.choice([2, 3, 5, 6, 8, 13, 16, 31, 47, 64]))
    d_in = rng.choice([1, 2, 3, 4, 7, 16, 33, 48])
    seed = SEEDS[rnd] if rnd < len(SEEDS) else rng.randrange(2**32)
    m = {"variant": variant, "seed": seed, "batch_size": rng.randint(1, 3),
         "training": rng.random() < 0.7, "scale": rng.choice(["sqrt_dk", "none"])}
    positive = False
    if variant == "simple":
        m["normalization"] = rng.choice(["softmax", "sum"])
        m["causal"] = False
        positive = m["normalization"] == "sum"  # row sums of positive scores: a well-posed division
        if rng.random() < 0.5:
            m["d_out"] = d_in
    else:
        m["causal"] = rng.random() < 0.7 if variant in DROPOUT_VARIANTS else rng.random() < 0.3
        if variant == "multihead":
            m["num_heads"] = rng.randint(1, 4)
            m["d_out"] = m["num_heads"] * rng.randint(1, 8)
        else:
            m["d_out"] = rng.randint(1, 8)
        if variant == "multihead_wrapper":
            m["num_heads"] = rng.randint(1, 4)
        if variant != "self_attention_v1":
            m["qkv_bias"] = rng.random() < 0.5
        if variant in DROPOUT_VARIANTS:
            m["dropout"] = DROPOUTS[rnd % len(DROPOUTS)]
            if m["dropout"] > 0 and rnd < 4:
                m["training"] = True  # every p is seen in training mode
    ws = {"format": "attnscope-workspace", "version": 1,
          "embeddings": make_embeddings(rng, T, d_in, positive), "model": m}
    if isinstance(ws["embeddings"], list) and rng.random() < 0.5:
        ws["tokens"] = ["tok%d" % t for t in range(T)]
    return ws


def book_workspaces():
    """The notebook's own configurations on its sentence (seed 123/789, d_out 2, batch of 2)."""
    book = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
            [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]
    base = {"training": True, "scale": "sqrt_dk", "batch_size": 2}
    models = [
        {"variant": "simple", "normalization": "softmax", "causal": False, "scale": "none", "seed": 0},
        {"variant": "self_attention_v1", "d_out": 2, "causal": False, "seed": 123},
        {"variant": "self_attention_v2", "d_out": 2, "causal": False, "seed": 789, "qkv_bias": False},
        {"variant": "causal", "d_out": 2, "causal": True, "seed": 789, "dropout": 0.5, "qkv_bias": False},
        {"variant": "multihead_wrapper", "d_out": 2, "num_heads": 2, "causal": True, "seed": 123,
         "dropout": 0.0, "qkv_bias": False},
        {"variant": "multihead", "d_out": 2, "num_heads": 2, "causal": True, "seed": 123,
         "dropout": 0.0, "qkv_bias": False},
    ]
    return [{"format": "attnscope-workspace", "version": 1, "embeddings": book,
             "model": dict(base, **m)} for m in models]


def tie_workspaces():
    """Repeated tokens: keys with equal vectors get equal weights in every row, so the statistics'
    argmax meets exact ties (torch.argmax and ours: the first key)."""
    a, b = [0.43, 0.15, 0.89], [0.55, 0.87, 0.66]
    models = [
        {"variant": "self_attention_v2", "d_out": 2, "causal": False, "seed": 789, "batch_size": 1},
        {"variant": "multihead", "d_out": 4, "num_heads": 2, "causal": True, "seed": 123, "dropout": 0.5,
         "batch_size": 2},
    ]
    return [{"format": "attnscope-workspace", "version": 1, "embeddings": [a, b, a, b, a, a],
             "model": dict({"training": True, "scale": "sqrt_dk"}, **m)} for m in models]


def workspaces():
    rng = random.Random(20240917)
    cases = book_workspaces() + [make_workspace(rng, i) for i in range(78)] + tie_workspaces()
    for k, ws in enumerate(cases):  # the generator itself must fill every field the torch side reads
        m = ws["model"]
        # Both dropout streams: torch's own (Debian's torch draws it) and MKL's (torch_trace.mkl_keep);
        # absent is the app's default, MKL. Some cases as later notebook cells run them.
        m.setdefault("dropout_rng", ["default", "mkl", None][k % 3])
        if m["dropout_rng"] is None:
            del m["dropout_rng"]
        if k % 5 == 3:
            m["dropout_seed"] = [123, 0, 2**32 - 1][k % 3]
        if k % 7 == 2:
            m["draws_before"] = [1, 19, 1000][k % 3]
        if m.get("causal") and m["variant"] != "simple" and k % 4 == 0:
            m["causal_route"] = "tril"  # cells [26]-[28]: softmax over every key, x tril, / row sums
        if isinstance(ws["embeddings"], dict) and k % 4 == 1:
            ws["embeddings"]["draws_before"] = 24  # random inputs drawn after a module, as the notebook's [45]
        m.setdefault("qkv_bias", False)
        m.setdefault("dropout", 0.0)
        m.setdefault("normalization", "softmax")
    check_coverage(cases)
    return cases


def tokens(ws):
    e = ws["embeddings"]
    return e["rows"] if isinstance(e, dict) else len(e)


def check_coverage(cases):
    ms = [ws["model"] for ws in cases]
    seen = lambda key: {json.dumps(m.get(key)) for m in ms}  # noqa: E731
    need = {"variant": VARIANTS, "seed": [0, 2**32 - 1], "batch_size": [1, 2, 3],
            "training": [True, False], "dropout": DROPOUTS, "scale": ["sqrt_dk", "none"],
            "normalization": ["softmax", "sum"], "causal": [True, False], "qkv_bias": [True, False],
            "dropout_rng": ["default", "mkl", None], "causal_route": ["tril", None]}
    for key, values in need.items():
        missing = [v for v in values if json.dumps(v) not in seen(key)]
        assert not missing, "the generated workspaces miss %s = %s" % (key, missing)
    for v in VARIANTS:
        Ts = {tokens(ws) for ws in cases if ws["model"]["variant"] == v}
        assert 1 in Ts and 64 in Ts, "%s misses T = 1 or T = 64" % v
    forms = {(ws["embeddings"]["random"] if isinstance(ws["embeddings"], dict) else "matrix")
             for ws in cases}
    assert forms == {"matrix", "uniform", "normal"}, forms
    for p in DROPOUTS[1:]:
        assert any(m["dropout"] == p and m["training"] for m in ms), "no training case with p=%s" % p
        for stream in ["default", "mkl"]:
            assert any(m["dropout"] == p and m["training"] and m.get("dropout_rng", "mkl") == stream
                       for m in ms), "no training case with p=%s on the %s stream" % (p, stream)


def as_float32_bits(m):
    return trace_array(m).astype(np.float32).view(np.uint32)


def run_trace(cli, path, *extra):
    run = subprocess.run([cli, "trace", path, *extra], capture_output=True, text=True)
    if run.returncode != 0:
        raise AssertionError("attnscope-cli trace %s exited %d: %s" % (
            " ".join(extra), run.returncode, run.stderr.strip()))
    return json.loads(run.stdout)


def compare_case(worst, case, trace, ref):
    ours_params = trace["parameters"]
    if set(ours_params) != set(ref["params"]):
        worst.fail("%s: parameter names %s != torch's state_dict %s" % (
            case, sorted(ours_params), sorted(ref["params"])))
    for name, value in ref["params"].items():
        if name in ours_params:
            ref_bits = value.contiguous().view(torch.int32).numpy().astype(np.uint32)
            ours_bits = as_float32_bits(ours_params[name])
            if ours_bits.shape != ref_bits.shape or not np.array_equal(ours_bits, ref_bits):
                worst.fail("%s: parameter %s differs from torch bitwise" % (case, name))
    worst.record("parameters (bitwise)", 0.0, case, 0.0)

    if len(trace["batches"]) != len(ref["batches"]):
        worst.fail("%s: %d batches, torch %d" % (case, len(trace["batches"]), len(ref["batches"])))
        return
    for b, (ob, rb) in enumerate(zip(trace["batches"], ref["batches"])):
        if len(ob["heads"]) != len(rb["heads"]):
            worst.fail("%s: batch %d has %d heads, torch %d" % (case, b, len(ob["heads"]), len(rb["heads"])))
            continue
        for h, (oh, rh) in enumerate(zip(ob["heads"], rb["heads"])):
            where = "%s b%d h%d" % (case, b, h)
            tril = "tril" in rh  # the tril route's own stages, which the trace holds on that route only
            if tril != ("tril" in oh):
                worst.fail("%s: the trace %s the tril route's stages" % (where, "lacks" if tril else "has"))
            elif tril and not np.array_equal(np.array(oh["tril"], dtype=bool), rh["tril"].numpy()):
                worst.fail("%s: tril differs" % where)
            compare_head(worst, oh, rh, where, FLOAT_FIELDS + (["unmasked_weights", "tril_weights"] if tril else []))
            # Issue 12: the head statistics, computed by torch from torch's weights.
            compare_statistics(worst, oh.get("statistics"), oh["weights"],
                               torch_trace.statistics(rh["weights"], rh["dropped_weights"]), rh["weights"], where)
        compare_floats(worst, "batch context", ob["context"], rb["context"], "%s b%d" % (case, b))
        compare_floats(worst, "output", ob["output"], rb["output"], "%s b%d" % (case, b))


def compare_threads(worst, case, serial, parallel):
    """The OpenMP path: same masks and parameters, floats within THREADS_TOL of the serial path."""
    if serial["parameters"] != parallel["parameters"]:
        worst.fail("%s: --threads 2 parameters differ" % case)
    for ob, pb in zip(serial["batches"], parallel["batches"]):
        for oh, ph in zip(ob["heads"], pb["heads"]):
            for q in ("mask", "dropout_mask"):
                if oh[q] != ph[q]:
                    worst.fail("%s: --threads 2 %s differs from serial" % (case, q))
            for q in FLOAT_FIELDS:
                worst.record("threads " + q, rel_diff(np.nan_to_num(trace_array(ph[q]), neginf=-1e30),
                                                      np.nan_to_num(trace_array(oh[q]), neginf=-1e30)),
                             case, THREADS_TOL)
        for q in ("context", "output"):
            worst.record("threads " + q, rel_diff(trace_array(pb[q]), trace_array(ob[q])), case, THREADS_TOL)


def describe(i, ws):
    m = ws["model"]
    e = ws["embeddings"]
    emb = ("%s(seed %d)" % (e["random"], e["seed"])) if isinstance(e, dict) else "matrix"
    T, d_in = (e["rows"], e["cols"]) if isinstance(e, dict) else (len(e), len(e[0]))
    shown = ("normalization",) if m["variant"] == "simple" else ("d_out", "num_heads", "dropout")
    extra = "".join(" %s=%s" % (k, m[k]) for k in shown if k in m)
    return "case %d %s T=%d d_in=%d B=%d seed=%d%s causal=%s scale=%s train=%s bias=%s %s" % (
        i, m["variant"], T, d_in, m["batch_size"], m["seed"], extra, m["causal"], m["scale"],
        m["training"], m["qkv_bias"], emb)


def main():
    cli = cli_path_from_argv()
    sc = load_seed_classes()
    worst = Worst()
    cases = workspaces()
    thread_cases = set()
    dropout_checked = 0
    with tempfile.TemporaryDirectory(prefix="attnscope-oracle-") as tmp:
        for i, ws in enumerate(cases):
            name = describe(i, ws)
            path = os.path.join(tmp, "case%03d.json" % i)
            with open(path, "w") as f:
                json.dump(ws, f)
            try:
                trace = run_trace(cli, path)
                ref = torch_trace.reference(ws, sc)
                torch_trace.check_masked_softmax_input(ref)
            except AssertionError as e:
                worst.fail("%s: %s" % (name, e))
                continue
            compare_case(worst, name, trace, ref)
            m = ws["model"]
            if m["variant"] != "simple" and (m["dropout"] > 0 or i < 12) and torch_trace.torch_draws_dropout(m):
                plain = torch_trace.run_plain(sc, ws)  # the dropout capture changes nothing
                if not torch.equal(plain, ref["output"]):
                    worst.fail("%s: the hooked module's output differs from the plain module's" % name)
                dropout_checked += 1
            if i % 9 == 4 or (m["dropout"] > 0 and m["training"] and len(thread_cases) < 4):
                thread_cases.add(i)
                compare_threads(worst, name, trace, run_trace(cli, path, "--threads", "2"))
    print("trace oracle: %d workspaces (%s), %d compared with --threads 2, dropout capture checked "
          "against the plain module on %d" % (
              len(cases), ", ".join("%s %d" % (v, sum(ws["model"]["variant"] == v for ws in cases))
                                    for v in VARIANTS), len(thread_cases), dropout_checked))
    return worst.report("trace oracle")


if __name__ == "__main__":
    sys.exit(main())
