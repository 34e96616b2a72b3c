# Generator parity: our TorchGenerator (through tests/oracle/generator_probe) against Debian's torch,
# bit for bit — torch.rand, nn.Linear's init, nn.Dropout's masks and scale — and torch.randn to 1e-5.
# Parameters and dropout masks must be bitwise equal (docs/DESIGN.md §2.2), so this is where they are pinned.
# Usage: test_generator.py PATH/TO/generator_probe
import json
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

from oracle_common import cli_path_from_argv, require_torch

torch = require_torch()
import numpy as np  # noqa: E402

SEEDS = [0, 1, 123, 789, 2**32 - 1]
RAND_SHAPES = [(1,), (1, 1), (3, 2), (6, 3), (4, 4), (17, 5), (2, 3, 4), (100, 7), (64, 768)]
LINEAR_SIZES = [(1, 1), (1, 5), (3, 2), (2, 3), (3, 768), (768, 3), (768, 768), (7, 13)]  # (fan_in, fan_out)
DROPOUT_P = [0.1, 0.5, 0.9]
DROPOUT_SHAPES = [(1,), (6, 6), (17,), (2, 6, 6), (2, 3, 5, 5), (3, 64, 64)]
RANDN_SIZES = [(1,), (5,), (15,), (16,), (4, 4), (17,), (6, 3), (100,), (2, 3, 7), (33, 16), (1024, 768)]

# docs/DESIGN.md §2.2: Debian's torch (no MKL), seed 123, nn.Dropout(0.5) on torch.ones(6, 6).
DEBIAN_DROPOUT_EXAMPLE = [[2, 2, 0, 2, 2, 0], [0, 0, 0, 2, 0, 2], [2, 2, 2, 2, 0, 2],
                        [0, 2, 2, 0, 0, 2], [0, 2, 0, 2, 0, 2], [0, 2, 2, 2, 2, 0]]


def rows_cols(shape):
    cols = shape[-1]
    return int(np.prod(shape)) // cols, cols


def as_bits(t):
    return t.detach().contiguous().view(torch.int32).numpy().astype(np.uint32).ravel()


def torch_case(case):
    kind, seed = case["kind"], case["seed"]
    torch.manual_seed(seed)
    if kind == "rand":
        return torch.rand(*case["shape"])
    if kind == "randn":
        return torch.randn(*case["shape"])
    if kind == "linear":
        layer = torch.nn.Linear(case["fan_in"], case["fan_out"], bias=True)
        return layer.weight.detach(), layer.bias.detach()
    if kind == "dropout":
        drop = torch.nn.Dropout(case["p"])
        drop.train()
        return drop(torch.ones(*case["shape"]))
    raise ValueError(kind)


def build_cases():
    cases = []
    for seed in SEEDS:
        for shape in RAND_SHAPES:
            cases.append({"kind": "rand", "seed": seed, "shape": shape})
        for fan_in, fan_out in LINEAR_SIZES:
            cases.append({"kind": "linear", "seed": seed, "fan_in": fan_in, "fan_out": fan_out})
        for p in DROPOUT_P:
            for shape in DROPOUT_SHAPES:
                cases.append({"kind": "dropout", "seed": seed, "p": p, "shape": shape})
        for shape in RANDN_SIZES:
            cases.append({"kind": "randn", "seed": seed, "shape": shape})
    return cases


def probe_request(case):
    request = {k: v for k, v in case.items() if k != "shape"}
    if case["kind"] in ("rand", "randn"):
        request["rows"], request["cols"] = rows_cols(case["shape"])
    if case["kind"] == "dropout":
        request["n"] = int(np.prod(case["shape"]))
    return request


def main():
    probe = cli_path_from_argv("generator_probe")
    cases = build_cases()
    run = subprocess.run([probe], input=json.dumps([probe_request(c) for c in cases]),
                         capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("FAIL: generator_probe exited %d: %s" % (run.returncode, run.stderr.strip()))
    results = json.loads(run.stdout)
    assert len(results) == len(cases)

    failures = []
    counts = {"rand": 0, "linear": 0, "dropout": 0, "randn": 0}
    elements = dict.fromkeys(counts, 0)
    randn_worst, randn_bitwise, randn_cases = 0.0, 0, 0
    for case, ours in zip(cases, results):
        name = json.dumps(case)
        kind = case["kind"]
        counts[kind] += 1
        ref = torch_case(case)
        if kind == "rand":
            elements[kind] += ref.numel()
            if not np.array_equal(np.array(ours, dtype=np.uint32), as_bits(ref)):
                failures.append("%s: torch.rand differs bitwise" % name)
        elif kind == "linear":
            weight, bias = ref
            elements[kind] += weight.numel() + bias.numel()
            if not np.array_equal(np.array(ours["weight"], dtype=np.uint32), as_bits(weight)):
                failures.append("%s: nn.Linear weight differs bitwise" % name)
            if not np.array_equal(np.array(ours["bias"], dtype=np.uint32), as_bits(bias)):
                failures.append("%s: nn.Linear bias differs bitwise" % name)
        elif kind == "dropout":
            elements[kind] += ref.numel()
            torch_keep = (ref != 0).numpy().astype(np.uint8).ravel()
            if not np.array_equal(np.array(ours["keep"], dtype=np.uint8), torch_keep):
                failures.append("%s: dropout keep mask differs (%d of %d elements)" % (
                    name, int(np.sum(np.array(ours["keep"]) != torch_keep)), torch_keep.size))
            kept_bits = set(as_bits(ref)[torch_keep == 1].tolist())
            spec_scale = int(np.array([np.float32(1.0) / np.float32(1.0 - case["p"])],
                                      dtype=np.float32).view(np.uint32)[0])
            if kept_bits and kept_bits != {spec_scale}:
                failures.append("%s: torch's kept values %s are not 1.0f/float(1-p) = %d" % (
                    name, sorted(kept_bits), spec_scale))
            if ours["scale"] != spec_scale or (kept_bits and {ours["scale"]} != kept_bits):
                failures.append("%s: our dropout scale bits %d != torch's kept value %s" % (
                    name, ours["scale"], sorted(kept_bits)))
        elif kind == "randn":
            elements[kind] += ref.numel()
            randn_cases += 1
            ours_f = np.array(ours, dtype=np.uint32).view(np.float32).astype(np.float64)
            ref_f = ref.numpy().ravel().astype(np.float64)
            diff = float(np.max(np.abs(ours_f - ref_f) / (1.0 + np.abs(ref_f))))
            randn_worst = max(randn_worst, diff)
            if np.array_equal(np.array(ours, dtype=np.uint32), as_bits(ref)):
                randn_bitwise += 1
            if not diff <= 1e-5:
                failures.append("%s: torch.randn differs by %.3g" % (name, diff))

    # The Debian example of docs/DESIGN.md §2.2, as a literal: torch first, then ours.
    torch.manual_seed(123)
    example = torch.nn.Dropout(0.5)(torch.ones(6, 6))
    if example.tolist() != DEBIAN_DROPOUT_EXAMPLE:
        failures.append("torch itself does not give the docs/DESIGN.md §2.2 dropout example: %s" % example.tolist())
    spec_case = next(r for c, r in zip(cases, results)
                     if c == {"kind": "dropout", "seed": 123, "p": 0.5, "shape": (6, 6)})
    spec_keep = [1 if v else 0 for row in DEBIAN_DROPOUT_EXAMPLE for v in row]
    if spec_case["keep"] != spec_keep:
        failures.append("our seed 123 p=0.5 6x6 dropout mask is not the docs/DESIGN.md §2.2 example")

    print("generator parity: %d cases, %d elements" % (len(cases), sum(elements.values())))
    for kind in counts:
        print("  %-8s %3d cases, %8d elements%s" % (
            kind, counts[kind], elements[kind], "" if kind == "randn" else ", bitwise"))
    print("  randn worst |ours - torch| / (1 + |torch|) = %.3g; bitwise equal in %d of %d cases"
          % (randn_worst, randn_bitwise, randn_cases))
    print("  docs/DESIGN.md §2.2 dropout example (seed 123, p=0.5, 6x6): checked against torch and ours")
    if failures:
        print("%d FAILURES:" % len(failures))
        for f in failures[:50]:
            print("  " + f)
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
