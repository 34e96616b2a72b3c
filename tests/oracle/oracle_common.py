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


TOL = 1e-5  # docs/DESIGN.md §2.2: |ours − torch| ≤ TOL·(1 + |torch|)


def trace_array(m):
    """A trace matrix (rows of numbers, null = −∞) or vector as float64."""
    import numpy as np
    if m and isinstance(m[0], list):
        return np.array([[-np.inf if v is None else v for v in row] for row in m], dtype=np.float64)
    return np.array([-np.inf if v is None else v for v in m], dtype=np.float64)


def compare_floats(worst, quantity, ours, ref, case, masked=None):
    """Within TOL; −∞ only (and exactly) where torch has −∞; with `masked`, exact 0 on both sides."""
    import numpy as np
    ours_a, ref_a = trace_array(ours), ref.detach().numpy().astype(np.float64)
    if ours_a.shape != ref_a.shape:
        worst.fail("%s: %s has shape %s, torch %s" % (case, quantity, ours_a.shape, ref_a.shape))
        return
    ours_inf, ref_inf = np.isneginf(ours_a), np.isneginf(ref_a)
    if not np.array_equal(ours_inf, ref_inf):
        worst.fail("%s: %s is -inf at other places than torch's" % (case, quantity))
        return
    finite = ~ref_inf
    worst.record(quantity, rel_diff(ours_a[finite], ref_a[finite]), case, TOL)
    if masked is not None and masked.any():
        if np.any(ours_a[masked] != 0) or np.any(ref_a[masked] != 0):
            worst.fail("%s: %s not exactly 0 at masked positions (ours %s, torch %s)" % (
                case, quantity, np.unique(ours_a[masked]), np.unique(ref_a[masked])))


def compare_head(worst, ours, ref, where, fields, prefix=""):
    """One traced head against torch's: the causal and dropout masks bit for bit, then every float
    field within TOL (weights exactly 0 where masked)."""
    import numpy as np
    mask = ref["mask"].numpy()
    if not np.array_equal(np.array(ours["mask"], dtype=bool), mask):
        worst.fail("%s: causal mask differs" % where)
    keep = ref["dropout_mask"].numpy()
    ours_keep = np.array(ours["dropout_mask"], dtype=bool)
    if ours_keep.shape != keep.shape or not np.array_equal(ours_keep, keep):
        worst.fail("%s: dropout mask differs from torch's (%s of %d)" % (
            where, np.sum(ours_keep != keep) if ours_keep.shape == keep.shape else "shape", keep.size))
    for q in fields:
        masked = mask if q in ("weights", "dropped_weights") else None
        compare_floats(worst, prefix + q, ours[q], ref[q], where, masked)



STATISTICS_ROWS = ["entropy", "effective_tokens", "max_weight", "row_sum_after_dropout"]
STATISTICS_MEANS = ["mean_entropy", "mean_weight_previous_token", "mean_weight_first_token"]


def compare_statistics(worst, ours, ours_weights, ref, weights, where, prefix=""):
    """A head's "statistics" against torch's (torch_trace.statistics, from torch's weights):
    every number within TOL·(1 + |torch|); each argmax equal to torch's (torch.argmax: the first of
    equal maxima), or — where our float weights order a near-tie the other way — the first key of our
    own row's maximum whose torch weight is within TOL of torch's maximum; the previous-token mean
    null exactly when T = 1."""
    import numpy as np
    if ours is None:
        worst.fail("%s: no statistics in the trace" % where)
        return
    for q in STATISTICS_ROWS:
        compare_floats(worst, prefix + "statistics " + q, ours[q], ref[q], where)
    T = len(ours["argmax"])
    ref_argmax = ref["argmax"].numpy()
    w, ow = weights.double().numpy(), trace_array(ours_weights)
    for i, (a, b) in enumerate(zip(ours["argmax"], ref_argmax)):
        if a == b:
            continue
        first_of_ours = 0 <= a < T and a == int(np.argmax(ow[i]))  # numpy: the first maximum too
        if not (first_of_ours and abs(w[i, a] - w[i, b]) <= TOL * (1 + abs(w[i, b]))):
            worst.fail("%s: statistics argmax of row %d is key %d, torch's %d (torch's weights %r vs %r)" % (
                where, i, a, b, w[i, a] if 0 <= a < T else None, w[i, b]))
    worst.record(prefix + "statistics argmax (key)", 0.0, where, 0.0)
    for q in STATISTICS_MEANS:
        if ref[q] is None:
            if ours.get(q, 0) is not None:
                worst.fail("%s: statistics %s is %r, expected null (T = 1)" % (where, q, ours.get(q)))
            continue
        if ours.get(q) is None:
            worst.fail("%s: statistics %s is missing or null" % (where, q))
            continue
        worst.record(prefix + "statistics " + q, rel_diff(np.array([ours[q]]), np.array([float(ref[q])])), where, TOL)
