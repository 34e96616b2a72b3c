#!/usr/bin/python3
"""`attnscope-cli export`: a trace written as CSV, JSON or NumPy .npy must carry exactly the
numbers `attnscope-cli trace` prints. For presets and generated workspaces (T = 10, biases, several
heads, dropout, --batch, --threads) it checks with numpy that every .npy loads with numpy.load as
float32, C order, the right shape (biases 1-D) and a 64-byte aligned NPY 1.0 header; that every CSV
reads back (csv module) with a header row and a first column of labels where its rows are tokens
("query" + key tokens for T × T maps, "token" + d0, d1, … for T × w ones; parameters are
numbers only); that both equal the trace JSON's matrices bit for bit (null = −∞, masks 0/1); that
the file set is exactly the documented names, batch and head numbered from 1 as the app numbers
them (b1_h1_weights); that each head's statistics (b1_h1_statistics: T × 5, a CSV with the query
tokens and the argmax's token) and the heads' summaries (b1_statistics) carry the trace JSON's
"statistics" bit for bit; and that trace.json equals `trace` output byte for byte. Bad --format, --out
on a regular file and a missing workspace must exit 2 with one "error: …" line.

Usage: test_export.py CLI_PATH ASSETS_DIR   (run with Debian's /usr/bin/python3: numpy)
"""
import csv
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
except ImportError:
    sys.exit("test_export.py needs numpy: run it with Debian's /usr/bin/python3 (python3-numpy)")

CLI = ASSETS = None
HEAD_STAGES = ["queries", "keys", "values", "scores", "mask", "masked_scores", "scaled_scores",
               "weights", "dropout_mask", "dropped_weights", "context"]
BOOK_TOKENS = ["Your", "journey", "starts", "with", "one", "step"]

# Generated workspaces: T = 10 random embeddings, biases (1-D parameters), several heads, dropout.
GENERATED = {
    "generated_multihead_T10": {
        "format": "attnscope-workspace", "version": 1,
        "embeddings": {"random": "normal", "seed": 7, "rows": 10, "cols": 5},
        "model": {"variant": "multihead", "d_out": 6, "num_heads": 3, "seed": 11, "qkv_bias": True,
                  "dropout": 0.25, "training": True, "batch_size": 3},
        "view": {}},
    "generated_wrapper_T10": {
        "format": "attnscope-workspace", "version": 1,
        # Tokens a spreadsheet would run as formulas: written with a leading ' (spreadsheet_text).
        "tokens": ['=HYPERLINK("http://x","y")', "+1", "-a", "@SUM(A1)", "\tb", "plain", "a=b", "'q", "x", "y"],
        "embeddings": {"random": "uniform", "seed": 3, "rows": 10, "cols": 4},
        "model": {"variant": "multihead_wrapper", "d_out": 3, "num_heads": 2, "seed": 5,
                  "qkv_bias": True, "causal": False, "batch_size": 2},
        "view": {}},
}
PRESETS = ["multihead", "causal_dropout", "self_attention_v1", "simple"]


def run(args):
    return subprocess.run([CLI] + args, capture_output=True, text=True, timeout=120)


def to_f32(matrix):
    """Trace JSON (rows of numbers, null = −∞, or one flat vector) as float32."""
    def cell(v):
        return -np.inf if v is None else float(v)
    if matrix and isinstance(matrix[0], list):
        return np.array([[cell(v) for v in row] for row in matrix], dtype=np.float64).astype(np.float32)
    return np.array([cell(v) for v in matrix], dtype=np.float64).astype(np.float32)


def expected_matrices(trace):
    """File stem → float32 array, straight from the `trace` JSON document. File names count batch
    elements and heads from 1 (the JSON's `index` and head positions count from 0)."""
    out = {}
    for b, batch in enumerate(trace["batches"]):
        assert batch["index"] == b
        for h, head in enumerate(batch["heads"]):
            for stage in HEAD_STAGES:
                out[f"b{b + 1}_h{h + 1}_{stage}"] = to_f32(head[stage])
        # Issue 12: each head's statistics as a table (T × 5, the JSON's order) and the heads'
        # summaries (heads × 3, NaN for a previous-token mean that is null when T = 1).
        for h, head in enumerate(batch["heads"]):
            s = head["statistics"]
            out[f"b{b + 1}_h{h + 1}_statistics"] = np.array(
                [s[k] for k in STATISTICS_COLUMNS], dtype=np.float64).T.astype(np.float32)
        if batch["heads"]:
            out[f"b{b + 1}_statistics"] = np.array(
                [[np.nan if head["statistics"][k] is None else head["statistics"][k] for k in STATISTICS_SUMMARY]
                 for head in batch["heads"]], dtype=np.float64).astype(np.float32)
        out[f"b{b + 1}_context"] = to_f32(batch["context"])
        out[f"b{b + 1}_output"] = to_f32(batch["output"])
    for name, value in trace["parameters"].items():
        out[f"param_{name}"] = to_f32(value)
    return out


STATISTICS_COLUMNS = ["entropy", "effective_tokens", "max_weight", "argmax", "row_sum_after_dropout"]
STATISTICS_SUMMARY = ["mean_entropy", "mean_weight_previous_token", "mean_weight_first_token"]


def is_statistics(stem):
    return stem.endswith("_statistics")


SQUARE_STAGES = {"scores", "mask", "masked_scores", "scaled_scores", "weights", "dropout_mask", "dropped_weights"}


def spreadsheet_text(label):
    """A label as the CSV holds it: a leading ' before =, +, -, @, a tab or a carriage return, so that
    a spreadsheet shows the text rather than running it as a formula (OWASP, CSV injection)."""
    return "'" + label if label[:1] in ("=", "+", "-", "@", "\t", "\r") else label


def expected_labels(stem, want, tokens):
    """The header row and first column a CSV file must have (None: numbers only, a parameter)."""
    tokens = [spreadsheet_text(t) for t in tokens]
    if stem.startswith("param_"):
        return None
    if stem.split("_", 2)[-1] in SQUARE_STAGES:
        return ["query"] + tokens, tokens
    return ["token"] + [f"d{j}" for j in range(want.shape[1])], tokens


def same_bits(a, b):
    """Exactly the same float32 values (−0 ≠ +0, −∞ = −∞)."""
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def check_npy_header(test, path):
    """NPY 1.0 as documented: magic, version 1.0, uint16 length, '<f4' C-order dict, 64-byte data."""
    with open(path, "rb") as f:
        raw = f.read()
    test.assertEqual(raw[:8], b"\x93NUMPY\x01\x00", path)
    (length,) = struct.unpack("<H", raw[8:10])
    header = raw[10:10 + length].decode("latin1")
    test.assertEqual((10 + length) % 64, 0, f"{path}: data not 64-byte aligned")
    test.assertTrue(header.endswith("\n"), path)
    test.assertTrue(header.startswith("{'descr': '<f4', 'fortran_order': False, 'shape': ("), header)
    return raw[10 + length:]


class ExportTest(unittest.TestCase):
    worst = []  # (case, format, file) of the first mismatch found, printed on failure

    def trace(self, ws_path, extra=()):
        r = run(["trace", ws_path] + list(extra))
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def export(self, ws_path, fmt, out, extra=()):
        r = run(["export", ws_path, "--format", fmt, "--out", out] + list(extra))
        self.assertEqual(r.returncode, 0, f"{ws_path} {fmt}: {r.stderr}")
        self.assertEqual(r.stderr, "")
        m = re.fullmatch(r"wrote (\d+) files? to (.*)\n", r.stdout)
        self.assertIsNotNone(m, r.stdout)
        self.assertEqual(m.group(2), out)
        files = sorted(os.listdir(out))
        self.assertEqual(int(m.group(1)), len(files), f"count printed vs files in {out}")
        self.assertFalse([f for f in files if ".tmp" in f], "temporary files left behind")
        return files

    def check_workspace(self, case, ws_path, tmp, extra=()):
        text = self.trace(ws_path, extra)
        expected = expected_matrices(json.loads(text))
        tokens = json.loads(text)["workspace"]["tokens"]

        # JSON: trace.json is the `trace` document byte for byte.
        out = os.path.join(tmp, case + "_json")
        self.assertEqual(self.export(ws_path, "json", out, extra), ["trace.json"])
        with open(os.path.join(out, "trace.json")) as f:
            self.assertEqual(f.read(), text, f"{case}: trace.json differs from `trace` output")

        # NPY: numpy.load, float32, C order, shape, values.
        out = os.path.join(tmp, case + "_npy")
        files = self.export(ws_path, "npy", out, extra)
        self.assertEqual(files, sorted(stem + ".npy" for stem in expected), f"{case}: npy file set")
        for stem, want in expected.items():
            path = os.path.join(out, stem + ".npy")
            data = check_npy_header(self, path)
            self.assertEqual(len(data), 4 * want.size, f"{path}: data bytes")
            got = np.load(path, allow_pickle=False)
            self.assertEqual(got.dtype, np.dtype("<f4"), path)
            self.assertTrue(got.flags["C_CONTIGUOUS"], path)
            self.assertEqual(got.shape, want.shape, path)
            if not same_bits(got, want):
                diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
                self.fail(f"{path}: differs from trace, worst |diff| {np.nanmax(diff)}")

        # CSV: the csv module, one line per row (vectors on one line), "-inf" for −∞; a header row and
        # a first column of labels for maps over tokens.
        out = os.path.join(tmp, case + "_csv")
        files = self.export(ws_path, "csv", out, extra)
        self.assertEqual(files, sorted(stem + ".csv" for stem in expected), f"{case}: csv file set")
        for stem, want in expected.items():
            path = os.path.join(out, stem + ".csv")
            with open(path, newline="") as f:
                raw = f.read()
            if is_statistics(stem):
                self.check_statistics_csv(path, raw, stem, want, tokens)
                continue
            labels = expected_labels(stem, want, tokens)
            rows = 1 if want.ndim == 1 else want.shape[0]
            self.assertEqual(raw.count("\n"), rows + (labels is not None), f"{path}: lines")
            self.assertTrue(raw.endswith("\n") and "\r" not in raw, path)
            self.assertNotIn("nan", raw.lower(), path)
            table = list(csv.reader(raw.splitlines()))
            if labels is not None:
                header, first = labels
                self.assertEqual(table[0], header, f"{path}: header row")
                self.assertEqual([r[0] for r in table[1:]], first, f"{path}: first column")
                table = [r[1:] for r in table[1:]]
            cells = [c for r in table for c in r]
            got = np.array([[float(c) for c in r] for r in table], dtype=np.float64).astype(np.float32)
            got = got.reshape(want.shape)
            if not same_bits(got, want):
                self.fail(f"{path}: differs from trace\n{got}\nvs\n{want}")
            # Shortest float32 decimals: at most 9 significant digits per cell.
            for cell in cells:
                self.assertNotIn(" ", cell, path)
                if cell != "-inf":
                    digits = re.sub(r"[eE].*$", "", cell).replace("-", "").replace(".", "").lstrip("0")
                    self.assertLessEqual(len(digits), 9, f"{path}: '{cell}' is not shortest form")
        return expected

    def check_statistics_csv(self, path, raw, stem, want, tokens):
        """Issue 12: a head's table — a header, a row per query token (its name first), the numbers
        of the trace's statistics and argmax_key the argmax's token — or the heads' summaries, the
        previous-token mean empty where the JSON has null."""
        self.assertTrue(raw.endswith("\n") and "\r" not in raw, path)
        self.assertNotIn("nan", raw.lower(), path)
        table = list(csv.reader(raw.splitlines()))
        tokens = [spreadsheet_text(t) for t in tokens]
        if stem.startswith("b") and "_h" in stem:
            self.assertEqual(table[0], ["query", "entropy", "effective_tokens", "max_weight", "argmax", "argmax_key",
                                        "row_sum_after_dropout"], f"{path}: header row")
            self.assertEqual([r[0] for r in table[1:]], tokens, f"{path}: first column")
            self.assertEqual([r[5] for r in table[1:]], [tokens[int(r[4])] for r in table[1:]], f"{path}: argmax_key")
            got = np.array([[float(c) for c in r[1:5] + r[6:]] for r in table[1:]], dtype=np.float64).astype(np.float32)
        else:
            self.assertEqual(table[0], ["head"] + STATISTICS_SUMMARY, f"{path}: header row")
            self.assertEqual([r[0] for r in table[1:]], [f"head {h + 1}" for h in range(want.shape[0])], path)
            got = np.array([[np.nan if c == "" else float(c) for c in r[1:]] for r in table[1:]],
                           dtype=np.float64).astype(np.float32)
        if not same_bits(got, want):
            self.fail(f"{path}: differs from trace\n{got}\nvs\n{want}")

    def test_presets(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in PRESETS:
                with self.subTest(preset=name):
                    expected = self.check_workspace(name, os.path.join(ASSETS, "presets", name + ".json"), tmp)
                    self.assertTrue(any(k.startswith("b1_h1_") for k in expected))
                    self.assertIn("b1_h1_statistics", expected)
                    self.assertIn("b1_statistics", expected)
            # causal_dropout has −∞ and a non-trivial dropout mask: make sure both reached the files.
            m = np.load(os.path.join(tmp, "causal_dropout_npy", "b1_h1_masked_scores.npy"))
            self.assertTrue(np.isneginf(m[0, 1]) and np.isfinite(m[1, 0]))
            d = np.load(os.path.join(tmp, "causal_dropout_npy", "b1_h1_dropout_mask.npy"))
            self.assertTrue(set(np.unique(d)) == {0.0, 1.0}, d)

    def test_generated_T10(self):
        with tempfile.TemporaryDirectory() as tmp:
            for case, doc in GENERATED.items():
                ws_path = os.path.join(tmp, case + ".json")
                with open(ws_path, "w") as f:
                    json.dump(doc, f)
                with self.subTest(case=case):
                    expected = self.check_workspace(case, ws_path, tmp)
                    heads = doc["model"]["num_heads"]
                    self.assertIn(f"b1_h{heads}_weights", expected)
                    self.assertEqual(expected["b1_h1_weights"].shape, (10, 10))
                    self.assertTrue(any(v.ndim == 1 for k, v in expected.items() if k.startswith("param_")),
                                    "no bias vector exported")
                    bias = [k for k, v in expected.items() if v.ndim == 1][0]
                    self.assertEqual(np.load(os.path.join(tmp, case + "_npy", bias + ".npy")).ndim, 1)
            # Batch subset and the OpenMP path: still exactly what `trace` prints with the same options.
            # --batch takes the trace's 0-based index; its files are named from 1 (element 1 → b2_…).
            ws_path = os.path.join(tmp, "generated_multihead_T10.json")
            with self.subTest(case="batch_1_threads_2"):
                expected = self.check_workspace("subset", ws_path, tmp, ["--batch", "1", "--threads", "2"])
                self.assertFalse(any(k.startswith("b1_h") or k.startswith("b3_h") for k in expected))
                self.assertIn("b2_h3_context", expected)
                self.assertIn("b3_output", expected)

    def test_existing_folder_is_reused(self):
        with tempfile.TemporaryDirectory() as tmp:
            ws_path = os.path.join(ASSETS, "presets", "multihead.json")
            out = os.path.join(tmp, "a", "b")  # nested, created on demand
            first = self.export(ws_path, "npy", out)
            second = self.export(ws_path, "npy", out)
            self.assertEqual(first, second)

    def test_errors(self):
        with tempfile.TemporaryDirectory() as tmp:
            ws_path = os.path.join(ASSETS, "presets", "multihead.json")
            regular = os.path.join(tmp, "file.txt")
            with open(regular, "w") as f:
                f.write("keep me")
            cases = [
                ("bad_format", [ws_path, "--format", "xyz", "--out", os.path.join(tmp, "x")], ["xyz"]),
                ("out_is_file", [ws_path, "--format", "npy", "--out", regular], [regular]),
                ("missing_workspace", [os.path.join(tmp, "nope.json"), "--format", "csv",
                                       "--out", os.path.join(tmp, "y")], ["nope.json"]),
                ("no_format", [ws_path, "--out", os.path.join(tmp, "z")], ["--format"]),
                ("no_out", [ws_path, "--format", "csv"], ["--out"]),
                ("bad_batch", [ws_path, "--format", "csv", "--out", os.path.join(tmp, "w"),
                               "--batch", "a"], ["--batch"]),
            ]
            for name, args, phrases in cases:
                with self.subTest(case=name):
                    r = run(["export"] + args)
                    self.assertEqual(r.returncode, 2, f"{name}: {r.stdout}{r.stderr}")
                    self.assertEqual(r.stdout, "")
                    lines = r.stderr.splitlines()
                    self.assertEqual(len(lines), 1, r.stderr)
                    self.assertTrue(lines[0].startswith("error: "), lines[0])
                    for p in phrases:
                        self.assertIn(p, lines[0])
            with open(regular) as f:
                self.assertEqual(f.read(), "keep me")
            self.assertFalse(os.path.exists(os.path.join(tmp, "x")), "bad --format still created --out")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    CLI, ASSETS = sys.argv[1], sys.argv[2]
    del sys.argv[1:]
    unittest.main(verbosity=2)
