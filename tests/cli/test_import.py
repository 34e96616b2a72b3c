#!/usr/bin/python3
"""`attnscope-cli import` (docs/DESIGN.md §2.5): embeddings as torch and NumPy print and
save them, read back exactly. Every file here is written by torch or NumPy in this test —
str(torch.tensor(…)) with and without suffixes, repr() and str() of arrays, json.dumps, np.savetxt,
np.save (float32, float64, big-endian, Fortran order, 1-D), np.savez and np.savez_compressed — and
the workspace printed by `import` must hold exactly the values written (float32 bits), or, for
prints that round, the values the printed decimals say. Bad inputs end with exit 2, one stderr line
`error: FILE:LINE:COLUMN: why` (`error: FILE: why` for binary files), and nothing on stdout.

Usage: test_import.py CLI_PATH   (run with Debian's /usr/bin/python3: torch and numpy)
"""
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

CLI = None
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SEED_CLASSES = os.path.join(REPO, "core", "formats", "pytorch", "seed_classes.py")
BOOK = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
        [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]
SHAPES = [(1, 1), (1, 5), (6, 3), (7, 16), (3, 40), (50, 8)]


def bits(a):
    return np.asarray(a, dtype=np.float32).view(np.uint32)


def printed_values(text, shape):
    """The numbers a print shows, read by Python's float() and rounded to float32: what an import of
    the print must hold."""
    body = text[text.index("[") if text.lstrip()[0] == "[" else text.index("(") + 1:]
    body = body[:body.rindex("]") + 1]
    tokens = re.findall(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?", body)
    return np.array([float(v) for v in tokens], dtype=np.float64).astype(np.float32).reshape(shape)


def four_decimals(rng, shape, scale=3.0):
    """float32 values with at most 4 decimals and |x| < 10: torch prints each exactly (4 decimals,
    or 5 significant digits in scientific notation)."""
    return np.round(rng.uniform(-scale, scale, size=shape), 4).astype(np.float32)


class ImportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="attnscope-import-")
        cls.n = 0
        torch.set_printoptions(profile="default")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def write(self, content, suffix=".txt"):
        type(self).n += 1
        path = os.path.join(self.tmp.name, "in%d%s" % (self.n, suffix))
        with open(path, "wb" if isinstance(content, bytes) else "w") as f:
            f.write(content)
        return path

    def run_cli(self, *args, stdin=None):
        return subprocess.run([CLI, "import", *args], capture_output=True, text=True, timeout=60, input=stdin)

    def imported(self, path, *args):
        run = self.run_cli("--embeddings", path, *args)
        self.assertEqual(run.returncode, 0, "import %s failed: %s" % (path, run.stderr))
        ws = json.loads(run.stdout)
        self.assertEqual(ws["format"], "attnscope-workspace")
        return ws, run.stderr

    def expect_values(self, path, want, *args, tokens=None):
        """`import` of path holds exactly `want` (float32 bits), one token per row."""
        ws, _ = self.imported(path, *args)
        want = np.asarray(want, dtype=np.float32)
        if want.ndim == 1:
            want = want.reshape(1, -1)
        got = np.array(ws["embeddings"], dtype=np.float32)
        self.assertEqual(got.shape, want.shape, path)
        self.assertTrue(np.array_equal(bits(got), bits(want)),
                        "%s: values differ at %s" % (path, np.argwhere(bits(got) != bits(want))[:5].tolist()))
        self.assertEqual(len(ws["tokens"]), want.shape[0])
        if tokens is not None:
            self.assertEqual(ws["tokens"], tokens)
        return ws

    def expect_error(self, path, pattern, *args, stdin=None):
        """Exit 2, nothing on stdout, exactly one stderr line matching `error: <pattern>`."""
        run = self.run_cli("--embeddings", path, *args, stdin=stdin)
        self.assertEqual(run.returncode, 2, "%s: exit %d, stderr %r" % (path, run.returncode, run.stderr))
        self.assertEqual(run.stdout, "")
        lines = run.stderr.splitlines()
        self.assertEqual(len(lines), 1, run.stderr)
        self.assertTrue(lines[0].startswith("error: "), lines[0])
        self.assertRegex(lines[0][len("error: "):], pattern)
        return lines[0]

    # ---- printed tensors and arrays ------------------------------------------------------------

    def test_torch_prints_of_several_shapes(self):
        rng = np.random.default_rng(13)
        for shape in SHAPES:
            x = four_decimals(rng, shape)
            t = torch.tensor(x)
            self.expect_values(self.write(str(t)), x)
            self.expect_values(self.write(str(t.double())), x)                       # dtype=torch.float64
            self.expect_values(self.write(str(t.clone().requires_grad_(True))), x)   # requires_grad=True
            self.expect_values(self.write(str(t.clone().requires_grad_(True) * 1)), x)  # grad_fn=<MulBackward0>
        # Wide ranges print in scientific notation.
        x = np.array([[1e-5, -2e3, 3.0], [0.0, 12345.0, -0.5]], dtype=np.float32)
        text = str(torch.tensor(x))
        self.assertIn("e+", text)
        self.expect_values(self.write(text), x)
        # 1-D: one token.
        self.expect_values(self.write(str(torch.tensor([0.5, -0.25, 0.125]))), [[0.5, -0.25, 0.125]])
        # The book's inputs as the notebook prints them, named by --tokens.
        self.expect_values(self.write(str(torch.tensor(BOOK))), np.array(BOOK, dtype=np.float32),
                           "--tokens", "Your journey starts with one step",
                           tokens=["Your", "journey", "starts", "with", "one", "step"])
        # print(nn.Parameter): "Parameter containing:" first.
        torch.manual_seed(123)
        w = torch.nn.Parameter(torch.rand(3, 2))
        rounded = np.round(w.detach().numpy().astype(np.float64), 4).astype(np.float32)
        self.expect_values(self.write(str(w)), rounded)

    def test_torch_prints_rounded_and_in_full(self):
        """Default prints round to 4 decimals: the import holds what the decimals say. With
        profile="full" a tensor over 1000 values prints whole; with precision=10 nearly exact."""
        torch.manual_seed(7)
        t = torch.randn(40, 40)
        try:
            torch.set_printoptions(profile="full")
            text = str(t)
        finally:
            torch.set_printoptions(profile="default")
        self.assertNotIn("...", text)
        self.expect_values(self.write(text), printed_values(text, (40, 40)))
        try:
            torch.set_printoptions(precision=10)
            text = str(t[:5])
        finally:
            torch.set_printoptions(profile="default")
        self.expect_values(self.write(text), t[:5].numpy())  # 11 significant digits: every float32 exact

    def test_numpy_repr_and_str(self):
        """By default NumPy prints at most 8 decimals: the import holds what they say. With
        floatmode="unique" every value prints in its shortest exact form: the import is exact."""
        rng = np.random.default_rng(5)
        for shape in SHAPES:
            for x in (rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape) * 100):
                for text in (repr(x), str(x)):  # str: print(x), no commas
                    self.expect_values(self.write(text), printed_values(text, shape))
                with np.printoptions(floatmode="unique"):
                    self.expect_values(self.write(repr(x)), x.astype(np.float32))
                    self.expect_values(self.write(str(x)), x.astype(np.float32))
        x = np.array([[1e-5, 2e3, 3.0]], dtype=np.float32)
        self.assertIn("e+", repr(x))
        self.expect_values(self.write(repr(x)), x)
        self.expect_values(self.write(repr(np.arange(6).reshape(2, 3))), np.arange(6).reshape(2, 3))

    def test_json_and_python_lists(self):
        rng = np.random.default_rng(9)
        for shape in SHAPES:
            x = rng.standard_normal(shape).astype(np.float32)
            self.expect_values(self.write(json.dumps(x.tolist()), ".json"), x)
            self.expect_values(self.write(json.dumps(x.tolist(), indent=2), ".json"), x)
            self.expect_values(self.write(repr(x.tolist())), x)  # a Python list

    def test_csv_tsv_and_savetxt(self):
        rng = np.random.default_rng(11)
        for shape in SHAPES:
            x = rng.standard_normal(shape).astype(np.float32)
            for kwargs in ({}, {"delimiter": ","}, {"delimiter": "\t"}, {"delimiter": ",", "header": "a,b"},
                           {"delimiter": ",", "fmt": "%.9g"}):
                buf = io.StringIO()
                np.savetxt(buf, x, **kwargs)
                self.expect_values(self.write(buf.getvalue(), ".csv"), x)
        # A header row of names and the tokens down the first column (the CSV attnscope exports).
        text = "token,d0,d1,d2\n" + "".join('"%s",%s\n' % (w, ",".join(repr(v) for v in row))
                                             for w, row in zip(["Your", "jour,ney", "starts", "with", "one", "step"], BOOK))
        self.expect_values(self.write(text, ".csv"), np.array(BOOK, dtype=np.float32),
                           tokens=["Your", "jour,ney", "starts", "with", "one", "step"])

    # ---- .npy and .npz ----------------------------------------------------------------------

    def test_npy(self):
        rng = np.random.default_rng(17)
        for shape in SHAPES:
            x = rng.standard_normal(shape)
            for arr in (x.astype("<f4"), x.astype(">f4"), x.astype("<f8"), x.astype(">f8"),
                        np.asfortranarray(x.astype(np.float32)), np.asfortranarray(x.astype(">f8"))):
                path = os.path.join(self.tmp.name, "a.npy")
                np.save(path, arr)
                self.expect_values(path, x.astype(np.float32))
        path = os.path.join(self.tmp.name, "v.npy")
        np.save(path, np.array([0.5, 0.25], dtype=np.float32))
        self.expect_values(path, [[0.5, 0.25]])

    def test_npz(self):
        rng = np.random.default_rng(19)
        x = rng.standard_normal((6, 3)).astype(np.float32)
        y = rng.standard_normal((4, 5))
        for save in (np.savez, np.savez_compressed):
            path = os.path.join(self.tmp.name, "one.npz")
            save(path, inputs=x, bias=np.ones(3, dtype=np.float32))
            self.expect_values(path, x)                    # the only 2-D array
            self.expect_values(path, [[1, 1, 1]], "--array", "bias")
            path = os.path.join(self.tmp.name, "two.npz")
            save(path, inputs=x, other=y)
            self.expect_values(path, x, "--array", "inputs")
            self.expect_values(path, y.astype(np.float32), "--array", "other")
            self.expect_error(path, re.escape(path) + r": 2 2-D arrays \(inputs, other\): name the one to use with --array NAME$")
            self.expect_error(path, re.escape(path) + r": no array named 'x' \(it holds: inputs, other\)$",
                              "--array", "x")
            save(path, x)  # unnamed: arr_0
            self.expect_values(path, x)

    # ---- tokens, model, stdin ---------------------------------------------------------------

    def test_tokens_model_and_stdin(self):
        path = self.write(str(torch.tensor(BOOK)))
        ws, notes = self.imported(path, "--tokens", "a b c")
        self.assertEqual(ws["tokens"], ["t1", "t2", "t3", "t4", "t5", "t6"])
        self.assertIn("3 names for 6 rows", notes)
        self.assertEqual(ws["model"]["variant"], "multihead")
        ws, _ = self.imported(path, "--variant", "causal", "--seed", "789")
        self.assertEqual((ws["model"]["variant"], ws["model"]["seed"]), ("causal", 789))
        ws, _ = self.imported(path, "--variant", "multihead_wrapper", "--num-heads", "3")
        self.assertEqual(ws["model"]["num_heads"], 3)
        ws, _ = self.imported(path, "--variant", "simple")
        self.assertEqual(ws["model"]["d_out"], 3)
        run = self.run_cli("--embeddings", "-", stdin=repr(np.array(BOOK, dtype=np.float32)))
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(json.loads(run.stdout)["embeddings"], json.loads(json.dumps(BOOK)))
        self.expect_error("-", r"^stdin:2:2: this row has 1 value but the first row has 2", stdin="[[1, 2],\n [3]]")
        self.expect_error(path, r"^--variant: unknown variant 'nope'", "--variant", "nope")
        self.expect_error(path, r"^model\.d_out: d_out must be divisible by num_heads", "--num-heads", "3")

    def test_imported_workspace_traces_as_torch(self):
        """The imported numbers are the module's input: the book's output of the notebook."""
        spec = importlib.util.spec_from_file_location("seed_classes", SEED_CLASSES)
        sc = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sc)
        x = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
        made = self.run_cli("--embeddings", self.write(repr(x)), "--seed", "42")
        self.assertEqual(made.returncode, 0, made.stderr)
        ws_path = self.write(made.stdout, ".json")
        run = subprocess.run([CLI, "trace", ws_path], capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        out = np.array([b["output"] for b in json.loads(run.stdout)["batches"]])
        torch.manual_seed(42)
        m = sc.MultiHeadAttention(4, 2, 5, 0.0, 2)
        with torch.no_grad():
            ref = m(torch.stack([torch.tensor(x)] * 2)).numpy()
        self.assertLessEqual(float(np.max(np.abs(out - ref) / (1 + np.abs(ref)))), 1e-5)

    # ---- parameters ---------------------------------------------------------------------------

    def load_seed_classes(self):
        spec = importlib.util.spec_from_file_location("seed_classes", SEED_CLASSES)
        sc = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sc)
        return sc

    def save_state(self, module, name="state.npz", compressed=False):
        path = os.path.join(self.tmp.name, name)
        (np.savez_compressed if compressed else np.savez)(path, **{k: v.numpy() for k, v in module.state_dict().items()})
        return path

    def test_parameters_name_the_module(self):
        """The state_dict's names and shapes say the class, d_out, heads and biases."""
        sc = self.load_seed_classes()
        x = self.write(repr(np.array(BOOK, dtype=np.float32)))
        torch.manual_seed(0)
        cases = [(sc.SelfAttention_v1(3, 2), "self_attention_v1", 2, 1, False, ""),
                 (sc.SelfAttention_v2(3, 4, qkv_bias=True), "self_attention_v2", 4, 1, True, "no causal mask"),
                 (sc.CausalAttention(3, 2, 6, 0.0), "causal", 2, 1, False, ""),
                 (sc.MultiHeadAttentionWrapper(3, 2, 6, 0.0, 3), "multihead_wrapper", 2, 3, False, ""),
                 (sc.MultiHeadAttention(3, 4, 6, 0.0, 2, qkv_bias=True), "multihead", 4, 2, True, "")]
        for i, (module, variant, d_out, heads, bias, note) in enumerate(cases):
            npz = self.save_state(module, compressed=i % 2 == 1)
            # MultiHeadAttention's heads are not in its weights: given (test_multihead_heads).
            ws, notes = self.imported(x, "--parameters", npz, *(["--num-heads", "2"] if variant == "multihead" else []))
            m = ws["model"]
            self.assertEqual((m["variant"], m["d_out"], m["num_heads"], m["qkv_bias"]), (variant, d_out, heads, bias))
            self.assertIn(note, notes)
            want = {k: v for k, v in module.state_dict().items() if k.split(".")[-1] != "mask"}
            self.assertEqual(set(ws["parameters"]), set(want))
            for k, v in want.items():
                self.assertTrue(np.array_equal(bits(ws["parameters"][k]), bits(v.numpy())), k)
        # JSON of name -> lists, and a workspace's own "parameters", read the same.
        module = cases[2][0]
        as_json = self.write(json.dumps({k: v.tolist() for k, v in module.state_dict().items()}), ".json")
        ws, _ = self.imported(x, "--parameters", as_json)
        self.assertEqual(ws["model"]["variant"], "causal")
        ws_path = self.write(json.dumps(ws), ".json")
        again, _ = self.imported(x, "--parameters", ws_path)
        self.assertEqual(again["parameters"], ws["parameters"])
        # --variant overrides the guess: the same weights as SelfAttention_v2's.
        ws, _ = self.imported(x, "--parameters", as_json, "--variant", "self_attention_v2")
        self.assertEqual(ws["model"]["variant"], "self_attention_v2")

    def test_printed_state_dict_as_parameters(self):
        """print(m.state_dict()) as --parameters: torch's own text, the variant read from its names (the
        mask buffer says causal), the values the printed decimals, and torch's output with them loaded."""
        sc = self.load_seed_classes()
        xs = np.array(BOOK, dtype=np.float32)
        x = self.write(repr(xs))
        torch.manual_seed(5)
        cases = [(sc.CausalAttention(3, 2, 6, 0.0, qkv_bias=True), "causal", []),
                 (sc.MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2), "multihead_wrapper", []),
                 (sc.MultiHeadAttention(3, 4, 6, 0.0, 2), "multihead", ["--num-heads", "2"]),
                 (sc.SelfAttention_v1(3, 2), "self_attention_v1", [])]
        torch.set_printoptions(profile="full")
        try:
            for module, variant, extra in cases:
                printed = str(module.state_dict())
                ws, _ = self.imported(x, "--parameters", self.write(printed), "--seed", "5", *extra)
                self.assertEqual(ws["model"]["variant"], variant)
                # The values are what the print shows (4 decimals), each read as float32.
                printed_sd = {k: printed_values("tensor(" + str(v)[len("tensor("):], tuple(v.shape))
                              for k, v in module.state_dict().items() if k.split(".")[-1] != "mask"}
                self.assertEqual(set(ws["parameters"]), set(printed_sd))
                for k, v in printed_sd.items():
                    self.assertTrue(np.array_equal(bits(ws["parameters"][k]), bits(v)), k)
                # torch, with those values loaded over the seeded module, gives the trace's output.
                run = subprocess.run([CLI, "trace", self.write(json.dumps(ws), ".json")], capture_output=True, text=True,
                                     timeout=60)
                self.assertEqual(run.returncode, 0, run.stderr)
                out = np.array(json.loads(run.stdout)["batches"][0]["output"])
                module.load_state_dict({k: torch.tensor(v) for k, v in printed_sd.items()}, strict=False)
                module.eval()
                with torch.no_grad():
                    ref = (module(torch.tensor(xs)) if variant == "self_attention_v1"
                           else module(torch.tensor(xs).unsqueeze(0))[0]).numpy()
                self.assertLessEqual(float(np.max(np.abs(out - ref) / (1 + np.abs(ref)))), 1e-5, variant)
        finally:
            torch.set_printoptions(profile="default")
        # A print torch cut short is refused at its place.
        torch.manual_seed(0)
        big = sc.SelfAttention_v2(3, 400)
        self.expect_error(x, r"in\d+\.txt:\d+:\d+: torch printed this tensor summarized", "--parameters",
                          self.write(str(big.state_dict())))

    def test_bad_parameters(self):
        sc = self.load_seed_classes()
        torch.manual_seed(0)
        x4 = os.path.join(self.tmp.name, "x4.npy")
        np.save(x4, np.ones((6, 4), dtype=np.float32))  # d_in 4: the module below has d_in 3
        npz = self.save_state(sc.MultiHeadAttention(3, 2, 6, 0.0, 2), "mha.npz")
        self.expect_error(x4, "^" + re.escape(npz + ": parameters.W_query.weight: expected 2 × 4 (d_out × d_in), got a "
                                                  "2 × 3 matrix (the embeddings have 6 rows of d_in = 4)") + "$",
                          "--parameters", npz, "--num-heads", "2")
        x = self.write(str(torch.tensor(BOOK)))
        odd = self.save_state(sc.MultiHeadAttention(3, 3, 6, 0.0, 3), "odd.npz")
        self.expect_error(x, r"^--num-heads: MultiHeadAttention's weights do not say how it splits d_out = 3 into heads: "
                             r"give --num-heads as your module was built \(1 or 3\)$", "--parameters", odd)
        ws, _ = self.imported(x, "--parameters", odd, "--num-heads", "3")
        self.assertEqual(ws["model"]["num_heads"], 3)
        self.expect_error(x, "^" + re.escape(npz) + r": parameters\.out_proj\.weight: not a parameter of CausalAttention",
                          "--parameters", npz, "--variant", "causal")
        one = os.path.join(self.tmp.name, "one.npy")
        np.save(one, np.ones((2, 3), dtype=np.float32))
        self.expect_error(x, "^" + re.escape(one) + r": a \.npy file holds one array; save the whole state_dict with np\.savez",
                          "--parameters", one)
        extra = os.path.join(self.tmp.name, "extra.npz")
        np.savez(extra, **{"W_query.weight": np.ones((2, 3), np.float32), "W_bogus": np.ones((2, 3), np.float32)})
        self.expect_error(x, "^" + re.escape(extra) + r": parameters\.W_bogus: not a parameter of SelfAttention_v2",
                          "--parameters", extra)
        ints = os.path.join(self.tmp.name, "ints.npz")
        np.savez(ints, **{"W_query.weight": np.ones((2, 3), np.int64)})
        self.expect_error(x, "^" + re.escape(ints) + r"\[W_query\.weight\]: dtype int64", "--parameters", ints)
        bad_json = self.write('{"W_query.weight": [[1, 2, 3],\n  [4, 5, 6]],\n  oops}', ".json")
        self.expect_error(x, "^" + re.escape(bad_json) + r":3:3: not a \.npz of a state_dict, nor valid JSON", "--parameters",
                          bad_json)
        ragged = self.write('{"W_query.weight": [[1, 2, 3], [4, 5]]}', ".json")
        self.expect_error(x, "^" + re.escape(ragged) + r": parameters\.W_query\.weight\[1\]: has 2 values but row 0 has 3",
                          "--parameters", ragged)

    def trace_output(self, ws):
        run = subprocess.run([CLI, "trace", self.write(json.dumps(ws), ".json")], capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        return np.array([b["output"] for b in json.loads(run.stdout)["batches"]])

    def test_multihead_heads(self):
        """MultiHeadAttention's split into heads is in no weight: a 3-head module's state_dict is refused
        without --num-heads (one line naming it; taking 2 put the output off by 0.027), and with it the
        trace is torch's output. The wrapper's heads.N names say its heads."""
        sc = self.load_seed_classes()
        xs = np.random.default_rng(23).uniform(0, 1, (5, 4)).astype(np.float32)
        x = self.write(repr(xs))
        torch.manual_seed(11)
        module = sc.MultiHeadAttention(4, 6, 5, 0.0, 3, qkv_bias=True)
        with torch.no_grad():  # trained: other values than any seed's
            for p in module.parameters():
                p.add_(torch.randn_like(p))
        try:
            torch.set_printoptions(precision=8)
            printed = self.write(str(module.state_dict()))
        finally:
            torch.set_printoptions(profile="default")
        self.expect_error(x, r"^--num-heads: MultiHeadAttention's weights do not say how it splits d_out = 6 into heads: "
                             r"give --num-heads as your module was built \(1, 2, 3 or 6\)$", "--parameters", printed)
        ws, notes = self.imported(x, "--parameters", printed, "--num-heads", "3", "--seed", "11")
        self.assertEqual((ws["model"]["d_out"], ws["model"]["num_heads"], ws["model"]["qkv_bias"]), (6, 3, True))
        self.assertNotIn("decimals", notes)  # precision=8: no rounding note
        out = self.trace_output(ws)
        with torch.no_grad():
            ref = module(torch.stack([torch.tensor(xs)] * ws["model"]["batch_size"])).numpy()
        self.assertLessEqual(float(np.max(np.abs(out - ref) / (1 + np.abs(ref)))), 1e-5)
        # The heads matter: the same weights split in 2 give another output, which the refusal prevents.
        torch.manual_seed(11)
        two = sc.MultiHeadAttention(4, 6, 5, 0.0, 2, qkv_bias=True)
        two.load_state_dict(module.state_dict())
        with torch.no_grad():
            self.assertGreater(float(np.max(np.abs(two(torch.tensor(xs).unsqueeze(0))[0].numpy() - ref[0]))), 1e-3)
        # The wrapper's heads.N. names say 3 heads, printed or saved.
        torch.manual_seed(12)
        wrapper = sc.MultiHeadAttentionWrapper(4, 2, 5, 0.0, 3)
        for path in (self.write(str(wrapper.state_dict())), self.save_state(wrapper, "wrapper.npz")):
            ws, _ = self.imported(x, "--parameters", path)
            self.assertEqual((ws["model"]["variant"], ws["model"]["num_heads"], ws["model"]["d_out"]), ("multihead_wrapper", 3, 2))

    def test_rounded_prints_are_noted(self):
        """torch prints 4 decimals by default, profile="full" too: the import says the values are
        rounded and how to print more (one stderr line each, the workspace still printed)."""
        sc = self.load_seed_classes()
        torch.manual_seed(3)
        t = torch.rand(6, 3)
        rounded = self.write(str(t))
        ws, notes = self.imported(rounded)
        lines = [l for l in notes.splitlines() if "decimals" in l]
        self.assertEqual(len(lines), 1, notes)
        self.assertTrue(lines[0].startswith("note: %s: torch printed these values with 4 decimals, so they are rounded" % rounded),
                        lines[0])
        self.assertIn("torch.set_printoptions(precision=8)", lines[0])
        self.assertIn('profile="full" alone keeps 4', lines[0])
        torch.manual_seed(4)
        module = sc.CausalAttention(3, 2, 6, 0.0)
        try:
            torch.set_printoptions(profile="full")
            sd = self.write(str(module.state_dict()))
            torch.set_printoptions(precision=8)
            exact = self.write(str(t))
        finally:
            torch.set_printoptions(profile="default")
        _, notes = self.imported(exact, "--parameters", sd)
        self.assertEqual([l for l in notes.splitlines() if "decimals" in l],
                         ["note: %s: torch printed these values with 4 decimals, so they are rounded (each by up to 5e-05). "
                          "For 8 decimals print them after torch.set_printoptions(precision=8) (profile=\"full\" alone keeps 4), "
                          "or save them with np.savez for the exact values" % sd])
        # 8 decimals are float32's rounding away from the values; 4 are up to 5e-05.
        ws, _ = self.imported(exact)
        self.assertLessEqual(float(np.max(np.abs(np.array(ws["embeddings"]) - t.numpy()))), 1e-7)
        ws, _ = self.imported(rounded)
        self.assertGreater(float(np.max(np.abs(np.array(ws["embeddings"]) - t.numpy()))), 1e-5)

    def test_training_mode(self):
        """No state_dict carries the mode: training, as torch builds a module, unless --eval; a workspace
        given as --parameters keeps its own (and its heads)."""
        x = self.write(repr(np.array(BOOK, dtype=np.float32)))
        ws, _ = self.imported(x)
        self.assertTrue(ws["model"]["training"])
        ws, _ = self.imported(x, "--eval")
        self.assertFalse(ws["model"]["training"])
        sc = self.load_seed_classes()
        torch.manual_seed(8)
        npz = self.save_state(sc.MultiHeadAttention(3, 6, 6, 0.5, 3), "mha3.npz")
        ws, _ = self.imported(x, "--parameters", npz, "--num-heads", "3", "--eval")
        ws["model"]["dropout"] = 0.5
        saved = self.write(json.dumps(ws), ".json")
        again, _ = self.imported(x, "--parameters", saved)
        self.assertEqual((again["model"]["training"], again["model"]["num_heads"], again["model"]["dropout"]), (False, 3, 0.5))
        self.assertEqual(again["parameters"], ws["parameters"])
        run = subprocess.run([CLI, "import", "--help"], capture_output=True, text=True, timeout=60)
        self.assertIn("training mode", run.stdout)
        self.assertIn("--eval", run.stdout)

    # ---- refusals -----------------------------------------------------------------------------

    def where(self, text, needle, nth=0):
        """LINE:COLUMN (from 1) of the nth occurrence of needle in text."""
        at = -1
        for _ in range(nth + 1):
            at = text.index(needle, at + 1)
        line = text.count("\n", 0, at) + 1
        col = at - (text.rfind("\n", 0, at) + 1) + 1
        return "%d:%d" % (line, col)

    def test_summarized_prints_are_refused_with_how_to_print_in_full(self):
        text = str(torch.zeros(40, 40))
        self.assertIn("...", text)
        path = self.write(text)
        line = self.expect_error(path, re.escape("%s:%s: torch printed this tensor summarized" % (path, self.where(text, "..."))))
        self.assertIn('torch.set_printoptions(profile="full")', line)
        self.assertIn("np.save", line)
        text = str(torch.zeros(2000))
        path = self.write(text)
        self.expect_error(path, re.escape("%s:%s: torch printed" % (path, self.where(text, "..."))))
        text = repr(np.zeros((40, 40), dtype=np.float32))
        path = self.write(text)
        line = self.expect_error(path, re.escape("%s:%s: NumPy printed this array summarized" % (path, self.where(text, "..."))))
        self.assertIn("np.set_printoptions(threshold=sys.maxsize)", line)
        self.assertIn("np.save", line)
        text = str(np.zeros((40, 40)))
        path = self.write(text)
        line = self.expect_error(path, re.escape("%s:%s: this print is summarized" % (path, self.where(text, "..."))))
        self.assertIn('torch.set_printoptions(profile="full")', line)

    def test_bad_text(self):
        ragged = "[[1.0, 2.0, 3.0],\n [4.0, 5.0]]"
        nan = str(torch.tensor([[1.0, 2.0], [float("nan"), 4.0]]))
        inf = repr(np.array([[1.0, np.inf]]))
        word = json.dumps([[1.0, 2.0], [3.0, "x"]])
        cube = str(torch.zeros(2, 2, 2))
        cases = [
            (ragged, "2:2", "this row has 2 values but the first row has 3"),
            (nan, self.where(nan, "nan"), "NaN: every value must be a finite number"),
            (inf, self.where(inf, "inf"), "'inf' is infinite"),
            (word, self.where(word, '"x"'), "a string, not a number"),
            ("[[1.0, abc]]", "1:8", "'abc' is not a number"),
            ("[[1.0, 1e39]]", "1:8", "'1e39' is beyond float32's range"),
            (cube, self.where(cube, "[", 2), r"nested 3 deep \(a 3-D tensor\)"),
            (str(torch.tensor(0.5)), "1:8", r"a single number \(a 0-D tensor\)"),
            (str(torch.tensor([])), "1:8", "empty: no values"),
            ("", "1:1", "empty: no numbers"),
            ("1,2,3\n4,5,6\n7,8\n", "3:1", "this row has 2 values but the first row has 3"),
            ("a,b\n1,2\n3,NaN\n", "3:3", "NaN"),
            ("0\n" * 4097, "4097:1", "more than 4096 rows: the limit is 4096 tokens"),
            (",".join(["0"] * 4097), "1:8193", "more than 4096 values in a row: the limit of d_in is 4096"),
        ]
        for text, where, why in cases:
            path = self.write(text)
            self.expect_error(path, "^" + re.escape(path + ":" + where + ": ") + why)

    def test_bad_files(self):
        for arr, why in [(np.arange(6).reshape(2, 3), r"dtype int64 \('<i8'\) is not supported: save float32 or float64"),
                         (np.ones((2, 3), dtype=np.float16), r"dtype float16 \('<f2'\) is not supported"),
                         (np.ones((2, 3), dtype=np.complex64), r"dtype complex64 \('<c8'\) is not supported"),
                         (np.ones((2, 3), dtype=bool), r"dtype bool \('\|b1'\) is not supported"),
                         (np.zeros((2, 2, 3), dtype=np.float32), r"a 3-D array \(2 × 2 × 3\): give one T × d_in matrix"),
                         (np.array([[1.0, np.nan]], dtype=np.float32), r"element \[0, 1\] is NaN"),
                         (np.array([[1.0, 1e300]]), r"element \[0, 1\] is beyond float32's range"),
                         (np.zeros((0, 3), dtype=np.float32), r"empty \(0 × 3\): no values")]:
            path = os.path.join(self.tmp.name, "bad.npy")
            np.save(path, arr)
            self.expect_error(path, "^" + re.escape(path) + ": " + why)
        path = os.path.join(self.tmp.name, "bad.npz")
        np.savez(path, a=np.arange(4).reshape(2, 2))
        self.expect_error(path, "^" + re.escape(path) + r"\[a\]: dtype int64")
        with open(path, "r+b") as f:  # damage the archive
            f.truncate(os.path.getsize(path) - 10)
        self.expect_error(path, "^" + re.escape(path) + ": a damaged zip")
        big = os.path.join(self.tmp.name, "big.txt")
        with open(big, "wb") as f:
            f.truncate((64 << 20) + 1)  # sparse: nothing is written
        self.expect_error(big, "^" + re.escape(big) + ": 67108865 bytes is larger than the limit of 67108864 bytes$")
        self.expect_error(os.path.join(self.tmp.name, "missing.txt"), r"cannot open the file \(does it exist\?\)$")
        self.expect_error(self.tmp.name, r"is a directory, not a file$")


if __name__ == "__main__":
    if len(sys.argv) < 2 or not os.path.isfile(sys.argv[1]):
        sys.exit("usage: test_import.py PATH/TO/attnscope-cli")
    CLI = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
