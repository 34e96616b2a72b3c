# Shared helpers of the oracle tests: import Debian's torch (fail loudly without it), load the seed
# classes by path, the float tolerance of docs/DESIGN.md §2.2, and worst-difference bookkeeping.
import importlib.util
import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SEED_CLASSES = os.path.join(REPO, "core", "formats", "pytorch", "seed_classes.py")
PRESETS = os.path.join(REPO, "assets", "presets")


def require_torch():
    """Debian's torch, or exit 1 with a clear message (an oracle test never skips silently)."""
    try:
        import torch  # noqa: F401
    except ImportError as e:
        sys.exit("FAIL: the oracle tests need Debian's python3-torch (run with /usr/bin/python3): %s" % e)
    torch.set_num_threads(1)
    return torch


def load_seed_classes():
    spec = importlib.util.spec_from_file_location("seed_classes", SEED_CLASSES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cli_path_from_argv(what="attnscope-cli"):
    if len(sys.argv) != 2 or not os.path.isfile(sys.argv[1]):
        sys.exit("usage: %s PATH/TO/%s" % (os.path.basename(sys.argv[0]), what))
    return os.path.abspath(sys.argv[1])


def rel_diff(ours, ref):
    """max |ours − ref| / (1 + |ref|) over all elements (numpy arrays of equal shape)."""
    import numpy as np
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if ours.shape != ref.shape:
        raise AssertionError("shape %s != torch shape %s" % (ours.shape, ref.shape))
    if ours.size == 0:
        return 0.0
    return float(np.max(np.abs(ours - ref) / (1.0 + np.abs(ref))))


class Worst:
    """Worst relative difference per quantity, and failures with their case names."""

    def __init__(self):
        self.worst = {}
        self.failures = []

    def record(self, quantity, diff, case, tol):
        if diff > self.worst.get(quantity, (-1.0, ""))[0]:
            self.worst[quantity] = (diff, case)
        if not diff <= tol:  # NaN fails too
            self.failures.append("%s: %s differs by %.3g (tolerance %.3g)" % (case, quantity, diff, tol))

    def fail(self, message):
        self.failures.append(message)

    def report(self, title):
        print("%s — worst |ours - torch| / (1 + |torch|) per quantity:" % title)
        for q in sorted(self.worst):
            diff, case = self.worst[q]
            print("  %-22s %.3g  (%s)" % (q, diff, case))
        if self.failures:
            print("%d FAILURES:" % len(self.failures))
            for f in self.failures[:50]:
                print("  " + f)
            return 1
        print("all passed")
        return 0
