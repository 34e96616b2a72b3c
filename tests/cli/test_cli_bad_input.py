#!/usr/bin/python3
"""attnscope-cli on bad input (docs/DESIGN.md §2.4, §2.5): every malformed workspace or argument list must end
with exit code 2, exactly one stderr line "error: …" that names the field at fault, nothing on
stdout, no signal, within a few seconds. Also checks that `trace` of every small preset prints the
documented JSON shape, with parameter names and shapes taken from Debian's torch (the seed classes).

Usage: test_cli_bad_input.py CLI_PATH ASSETS_DIR   (run with Debian's /usr/bin/python3: torch)
"""
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

CLI = ASSETS = None
TIME_LIMIT_S = 5.0  # "finishes within a few seconds"

BOOK_TOKENS = ["Your", "journey", "starts", "with", "one", "step"]
BOOK_EMBEDDINGS = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
                   [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]
BASE = {"format": "attnscope-workspace", "version": 1, "tokens": BOOK_TOKENS,
        "embeddings": BOOK_EMBEDDINGS,
        "model": {"variant": "multihead", "d_out": 2, "num_heads": 2, "seed": 123},
        "view": {}}
MODEL_FIELDS = {"variant", "d_out", "num_heads", "dropout", "seed", "qkv_bias", "causal", "scale",
                "training", "batch_size", "normalization", "dropout_rng", "dropout_seed", "draws_before",
                "causal_route"}
HEAD_KEYS = {"queries", "keys", "values", "scores", "scaled_scores", "mask", "masked_scores",
             "weights", "dropout_mask", "dropped_weights", "context"}
# Issue 12: besides its maps, a head has "statistics": arrays over the query rows and the means.
STATISTICS_ROWS = {"entropy", "effective_tokens", "max_weight", "argmax", "row_sum_after_dropout"}
STATISTICS_MEANS = {"mean_entropy", "mean_weight_previous_token", "mean_weight_first_token"}


def ws(model=None, drop=(), top=None, **fields):
    """The book workspace with model fields replaced/added and top-level keys replaced/removed."""
    d = copy.deepcopy(BASE)
    if model is not None:
        d["model"].update(model)
    for key, value in dict(top or {}, **fields).items():
        d[key] = value
    for key in drop:
        d.pop(key, None)
    return d


def rows_ws(embeddings, model=None):
    """A workspace with these embeddings and no tokens (tokens are optional)."""
    return ws(model, drop=("tokens",), embeddings=embeddings)


def random_ws(spec, model=None):
    return ws(model, drop=("tokens",), embeddings=spec)


def nested(depth, open_="[", close="]", inner=""):
    return open_ * depth + inner + close * depth


# Each case: (name, workspace, extra args, phrases the message must contain (case-insensitive)).
# workspace: dict -> json.dumps; str -> written verbatim; ("path", p) -> passed as is; None -> no
# file. Args may contain "{ws}" for the workspace path; default args: ["trace", "{ws}"].
TRACE = ["trace", "{ws}"]
GPT2_TASK = {"task": "text", "tokens": "gpt2", "text": "the cat sat on the mat, the dog sat on the log"}

CASES = [
    # --- the document itself
    ("malformed_json", '{"format": "attnscope-workspace", "version": 1,', TRACE, ["not valid JSON"]),
    ("trailing_garbage", json.dumps(BASE) + " }", TRACE, ["not valid JSON"]),
    ("nan_literal", json.dumps(BASE).replace("0.43", "NaN"), TRACE, ["not valid JSON"]),
    ("empty_file", "", TRACE, ["not valid JSON"]),
    ("top_level_array", "[1, 2, 3]", TRACE, ["workspace", "object"]),
    ("top_level_string", '"attnscope-workspace"', TRACE, ["workspace", "object"]),
    ("missing_file", ("path", "/nonexistent/dir/no_such_workspace.json"), TRACE,
     ["no_such_workspace.json"]),
    ("directory_as_file", ("path", "{tmp}"), TRACE, ["{tmp}", "director"]),
    ("deeply_nested_array_100000", nested(100000), TRACE, ["workspace", "nested deeper"]),
    ("deeply_nested_object_100000", nested(100000, '{"a":', "}", "1"), TRACE, ["nested deeper"]),
    ("number_overflows_double_1e400", json.dumps(BASE).replace("0.43", "1e400"), TRACE,
     ["1e400"]),
    ("format_missing", ws(drop=("format",)), TRACE, ["format"]),
    ("format_wrong", ws(format="attnscope-trace"), TRACE, ["format"]),
    ("version_2", ws(version=2), TRACE, ["version"]),
    ("version_string", ws(version="1"), TRACE, ["version"]),
    ("version_missing", ws(drop=("version",)), TRACE, ["version"]),
    ("unknown_top_level_field", ws(modle={}), TRACE, ["modle", "unknown field"]),
    ("view_not_object", ws(view=[1]), TRACE, ["view"]),
    # --- model
    ("model_missing", ws(drop=("model",)), TRACE, ["model"]),
    ("model_not_object", ws(top={"model": ["multihead"]}), TRACE, ["model"]),
    ("variant_missing", ws(top={"model": {"d_out": 2}}), TRACE, ["model.variant"]),
    ("variant_unknown", ws({"variant": "transformer"}), TRACE, ["model.variant", "transformer"]),
    ("unknown_model_field", ws({"heads": 2}), TRACE, ["model.heads", "unknown field"]),
    ("type_variant", ws({"variant": 4}), TRACE, ["model.variant"]),
    ("type_d_out", ws({"d_out": "2"}), TRACE, ["model.d_out"]),
    ("type_num_heads", ws({"num_heads": 2.5}), TRACE, ["model.num_heads"]),
    ("type_dropout", ws({"dropout": "0.1"}), TRACE, ["model.dropout"]),
    ("type_seed", ws({"seed": "123"}), TRACE, ["model.seed"]),
    ("type_seed_float", ws({"seed": 1.5}), TRACE, ["model.seed"]),
    ("type_qkv_bias", ws({"qkv_bias": 0}), TRACE, ["model.qkv_bias"]),
    ("type_causal", ws({"causal": "yes"}), TRACE, ["model.causal"]),
    ("type_scale", ws({"scale": 1}), TRACE, ["model.scale"]),
    ("value_scale", ws({"scale": "sqrt"}), TRACE, ["model.scale"]),
    ("type_training", ws({"training": None}), TRACE, ["model.training"]),
    ("type_batch_size", ws({"batch_size": [2]}), TRACE, ["model.batch_size"]),
    ("type_normalization", ws({"normalization": True}), TRACE, ["model.normalization"]),
    ("value_normalization", ws({"variant": "simple", "d_out": 3, "num_heads": 1,
                                "normalization": "max"}), TRACE, ["model.normalization"]),
    ("d_out_not_divisible", ws({"d_out": 3, "num_heads": 2}), TRACE, ["model.d_out", "divisible"]),
    ("d_out_zero", ws({"d_out": 0}), TRACE, ["model.d_out"]),
    ("d_out_over_cap", ws({"d_out": 4098, "num_heads": 2}), TRACE, ["model.d_out"]),
    ("num_heads_zero", ws({"num_heads": 0}), TRACE, ["model.num_heads"]),
    ("num_heads_over_64", ws({"d_out": 130, "num_heads": 65}), TRACE, ["model.num_heads"]),
    ("dropout_over_1", ws({"dropout": 1.5}), TRACE, ["model.dropout"]),  # 1.0 drops every weight, as torch
    ("dropout_negative", ws({"dropout": -0.1}), TRACE, ["model.dropout"]),
    ("dropout_1e999", json.dumps(ws({"dropout": "@P@"})).replace('"@P@"', "1e999"), TRACE,
     ["1e999"]),
    ("causal_on_simple", ws({"variant": "simple", "d_out": 3, "num_heads": 1, "causal": True}),
     TRACE, ["model.causal"]),
    ("qkv_bias_on_v1", ws({"variant": "self_attention_v1", "num_heads": 1, "qkv_bias": True}),
     TRACE, ["model.qkv_bias"]),
    ("sum_on_causal", ws({"variant": "causal", "num_heads": 1, "normalization": "sum"}), TRACE,
     ["model.normalization"]),
    ("seed_negative", ws({"seed": -1}), TRACE, ["model.seed"]),
    ("seed_2_pow_32", ws({"seed": 2**32}), TRACE, ["model.seed"]),
    ("batch_size_zero", ws({"batch_size": 0}), TRACE, ["model.batch_size"]),
    ("batch_size_over_cap", ws({"batch_size": 100000}), TRACE, ["model.batch_size"]),
    ("attention_cells_over_limit",
     random_ws({"random": "uniform", "seed": 1, "rows": 4096, "cols": 2},
               {"num_heads": 2, "batch_size": 64}), TRACE, ["batch_size"]),
    # --- embeddings and tokens
    ("embeddings_missing", ws(drop=("embeddings", "tokens")), TRACE, ["embeddings"]),
    ("embeddings_not_array", ws(drop=("tokens",), embeddings="0.43 0.15"), TRACE, ["embeddings"]),
    ("embeddings_empty", rows_ws([]), TRACE, ["embeddings"]),
    ("embeddings_row_not_array", rows_ws([0.43, 0.15, 0.89]), TRACE, ["embeddings[0]"]),
    ("embeddings_ragged", rows_ws([[1, 2, 3], [4, 5, 6], [7, 8], [1, 2, 3]]), TRACE,
     ["embeddings[2]"]),
    ("embeddings_empty_row", rows_ws([[1, 2], []]), TRACE, ["embeddings[1]"]),
    ("embeddings_string_cell", rows_ws([[1, 2], [3, "4"]]), TRACE, ["embeddings[1][1]"]),
    ("embeddings_null_cell", rows_ws([[1, None], [3, 4]]), TRACE, ["embeddings[0][1]"]),
    ("embeddings_bool_cell", rows_ws([[1, 2], [True, 4]]), TRACE, ["embeddings[1][0]"]),
    ("embeddings_float32_overflow_1e39", rows_ws([[1, 2], [3, 1e39]]), TRACE,
     ["embeddings[1][1]"]),
    ("embeddings_rows_over_cap", rows_ws([[0.5]] * 4097), TRACE, ["embeddings", "4096"]),
    ("embeddings_cols_over_cap", rows_ws([[0.5] * 4097]), TRACE, ["embeddings", "d_in"]),
    ("tokens_count_mismatch", ws(tokens=BOOK_TOKENS[:5]), TRACE, ["tokens"]),
    ("tokens_non_string", ws(tokens=BOOK_TOKENS[:3] + [5] + BOOK_TOKENS[4:]), TRACE,
     ["tokens[3]"]),
    ("tokens_not_array", ws(tokens="Your journey starts with one step"), TRACE, ["tokens"]),
    ("random_rows_5000", random_ws({"random": "uniform", "seed": 1, "rows": 5000, "cols": 3}),
     TRACE, ["embeddings.rows"]),
    ("random_cols_5000", random_ws({"random": "normal", "seed": 1, "rows": 4, "cols": 5000}),
     TRACE, ["embeddings.cols"]),
    ("random_bad_kind", random_ws({"random": "gaussian", "seed": 1, "rows": 4, "cols": 3}),
     TRACE, ["embeddings.random"]),
    ("random_kind_missing", random_ws({"seed": 1, "rows": 4, "cols": 3}), TRACE,
     ["embeddings.random"]),
    ("random_rows_missing", random_ws({"random": "uniform", "seed": 1, "cols": 3}), TRACE,
     ["embeddings.rows"]),
    ("random_seed_negative", random_ws({"random": "uniform", "seed": -5, "rows": 4, "cols": 3}),
     TRACE, ["embeddings.seed"]),
    ("random_unknown_field",
     random_ws({"random": "normal", "seed": 1, "rows": 4, "cols": 3, "mean": 0}), TRACE,
     ["embeddings.mean", "unknown field"]),
    # --- the user's own parameters: each refusal names the tensor
    ("parameters_not_an_object", ws(parameters=[[1.0]]), TRACE, ["parameters", "expected an object"]),
    ("parameters_wrong_shape", ws(parameters={"W_query.weight": [[1.0, 2.0], [3.0, 4.0]]}), TRACE,
     ["parameters.W_query.weight", "expected 2 × 3 (d_out × d_in)", "2 × 2"]),
    ("parameters_transposed", ws(parameters={"W_key.weight": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]}), TRACE,
     ["parameters.W_key.weight", "transposed"]),
    ("parameters_bias_without_qkv_bias", ws(parameters={"W_value.bias": [1.0, 2.0]}), TRACE,
     ["parameters.W_value.bias", "qkv_bias is false"]),
    ("parameters_mask_buffer", ws(parameters={"mask": [[0.0]]}), TRACE, ["parameters.mask", "buffer"]),
    ("parameters_unknown_name", ws(parameters={"W_q.weight": [[1.0, 2.0, 3.0]]}), TRACE,
     ["parameters.W_q.weight", "not a parameter of MultiHeadAttention"]),
    ("parameters_ragged", ws(parameters={"out_proj.weight": [[1.0, 2.0], [3.0]]}), TRACE,
     ["parameters.out_proj.weight[1]"]),
    ("parameters_not_finite", ws(parameters={"out_proj.bias": [1.0, 1e39]}), TRACE,
     ["parameters.out_proj.bias[1]", "finite"]),
    ("parameters_simple", ws({"variant": "simple", "d_out": 3, "num_heads": 1},
                             parameters={"W_query": [[1.0]]}), ["pytorch", "{ws}"],
     ["parameters", "no parameters"]),
    # --- valid input whose computation overflows float32: a clear error, never NaN output
    ("computation_overflow_1e30", rows_ws([[1e30, 1.0, 0.5], [0.5, 1.0, 2.0]]), TRACE,
     ["overflow", "embedding"]),
    ("sum_normalization_zero_row", rows_ws([[1.0, 0.0], [-1.0, 0.0]],
                                           {"variant": "simple", "d_out": 2, "num_heads": 1,
                                            "normalization": "sum"}), TRACE, ["sum"]),
    # --- the other subcommands read workspaces the same way
    ("pytorch_not_divisible", ws({"d_out": 3, "num_heads": 2}), ["pytorch", "{ws}"],
     ["model.d_out", "divisible"]),
    ("bench_unknown_field", ws({"heads": 2}), ["bench", "{ws}", "--repeat", "1"],
     ["model.heads", "unknown field"]),
    # --- training TASKs (DESIGN.md §2.7): the text task of GPT-2 tokens; a relative tokenizer path is
    # the TASK file's neighbour ({tmp} here), whatever the working folder
    ("train_gpt2_without_tokenizer", GPT2_TASK, ["train", "{ws}"], ["task.tokenizer", "GPT-2 tokens need"]),
    ("train_gpt2_tokenizer_missing", dict(GPT2_TASK, tokenizer="nosuch"), ["train", "{ws}"],
     ["task.tokenizer: {tmp}/nosuch: no such folder or file"]),
    ("train_gpt2_tokenizer_without_files", dict(GPT2_TASK, tokenizer="."), ["train", "{ws}"],
     ["task.tokenizer: {tmp}/.: holds no GPT-2 tokenizer"]),
    ("train_gpt2_tokenizer_line_break", dict(GPT2_TASK, tokenizer="a\nb"), ["train", "{ws}"],
     ["task.tokenizer: {tmp}/a?b: no such folder or file"]),
    ("pytorch_train_gpt2_tokenizer_missing", dict(GPT2_TASK, tokenizer="nosuch/vocab.json"),
     ["pytorch-train", "{ws}"], ["task.tokenizer: {tmp}/nosuch/vocab.json"]),
    ("train_tokens_unknown", dict(GPT2_TASK, tokens="words"), ["train", "{ws}"], ["task.tokens", '"gpt2"']),
    ("train_tokenizer_for_characters", dict(GPT2_TASK, tokens="characters", tokenizer="x"), ["train", "{ws}"],
     ["task.tokenizer", "characters need no tokenizer"]),
    ("train_tokenizer_for_induction", {"task": "induction", "tokenizer": "x"}, ["train", "{ws}"],
     ["task.tokenizer", "induction task does not use it"]),
    ("train_vocabulary_of_induction", {"task": "induction"}, ["train", "{ws}", "--vocabulary"],
     ["--vocabulary", "only the text task"]),
    # --save is checked before the run (which takes seconds): nothing printed, no run lost after it
    ("train_save_empty", {"task": "induction"}, ["train", "{ws}", "--save", ""], ["--save: give the file to write"]),
    ("train_save_into_no_folder", {"task": "induction"}, ["train", "{ws}", "--save", "{tmp}/nosuch/model.pth"],
     ["{tmp}/nosuch/model.pth: cannot write (no such file or directory); nothing was written"]),
    # --- argument errors
    ("no_subcommand", None, [], ["subcommand"]),
    ("unknown_subcommand", None, ["frobnicate", "x.json"], ["frobnicate"]),
    ("trace_missing_workspace_argument", None, ["trace"], ["workspace"]),
    ("unknown_option", BASE, ["trace", "{ws}", "--frob"], ["--frob"]),
    ("threads_negative", BASE, ["trace", "{ws}", "--threads", "-1"], ["--threads"]),
    ("threads_not_a_number", BASE, ["trace", "{ws}", "--threads", "abc"], ["--threads"]),
    # CLI11's Range compares, and NaN compares false: "nan" passed, a budget of −9e18 bytes.
    ("memory_budget_nan", BASE, ["trace", "{ws}", "--memory-budget", "nan"], ["--memory-budget", "finite", "nan"]),
    ("memory_budget_inf", BASE, ["trace", "{ws}", "--memory-budget", "inf"], ["--memory-budget", "finite", "inf"]),
    ("memory_budget_below_1", BASE, ["trace", "{ws}", "--memory-budget", "0.5"], ["--memory-budget", "0.5"]),
    ("batch_out_of_range", BASE, ["trace", "{ws}", "--batch", "7"], ["7", "batch_size"]),
    ("batch_negative", BASE, ["trace", "{ws}", "--batch", "-1"], ["-1", "batch_size"]),
    ("batch_not_a_number", BASE, ["trace", "{ws}", "--batch", "x"], ["--batch"]),
    ("bench_without_workspace_or_preset", None, ["bench"], ["--preset"]),
    ("bench_unknown_preset", None, ["bench", "--preset", "nosuch"], ["nosuch"]),
    ("bench_workspace_and_preset", BASE, ["bench", "{ws}", "--preset", "multihead"], ["--preset"]),
    ("bench_repeat_zero", None, ["bench", "--preset", "multihead", "--repeat", "0"], ["--repeat"]),
]


def run_cli(args, timeout=30):
    env = dict(os.environ, ATTNSCOPE_ASSETS=ASSETS)
    start = time.monotonic()
    p = subprocess.run([CLI] + args, capture_output=True, timeout=timeout, env=env)
    return p, time.monotonic() - start


class BadInput(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="attnscope_cli_")

    def tearDown(self):
        self.tmp.cleanup()

    def materialize(self, name, workspace):
        if workspace is None:
            return None
        if isinstance(workspace, tuple):
            return workspace[1].replace("{tmp}", self.tmp.name)
        path = os.path.join(self.tmp.name, name + ".json")
        with open(path, "w") as f:
            f.write(workspace if isinstance(workspace, str) else json.dumps(workspace))
        return path

    def test_bad_inputs(self):
        self.assertGreaterEqual(len(CASES), 30)
        for name, workspace, args, phrases in CASES:
            with self.subTest(case=name):
                path = self.materialize(name, workspace)
                argv = [a.replace("{ws}", path or "").replace("{tmp}", self.tmp.name) for a in args]
                try:
                    p, seconds = run_cli(argv)
                except subprocess.TimeoutExpired:
                    self.fail(f"{name}: hung (no exit within 30 s)")
                out = p.stdout.decode("utf-8", "replace")
                err = p.stderr.decode("utf-8", "replace")
                detail = f"{name}: argv={argv[:4]} rc={p.returncode} stderr={err[:300]!r}"
                self.assertFalse(p.returncode < 0, f"killed by signal {-p.returncode}: {detail}")
                self.assertEqual(p.returncode, 2, detail)
                lines = err.splitlines()
                self.assertEqual(len(lines), 1, f"expected exactly one stderr line: {detail}")
                self.assertTrue(err.endswith("\n") and lines[0].startswith("error: "), detail)
                self.assertEqual(out, "", f"stdout not empty ({out[:80]!r}): {detail}")
                self.assertNotIn("nan", err.lower().split(), detail)
                for phrase in phrases:
                    phrase = phrase.replace("{tmp}", self.tmp.name)
                    self.assertIn(phrase.lower(), lines[0].lower(),
                                  f"message does not name {phrase!r}: {detail}")
                self.assertLess(seconds, TIME_LIMIT_S, f"took {seconds:.1f} s: {detail}")

    def test_train_saves_its_model_whatever_stdout_does(self):
        # The figures and the model each survive the other's failure: a stdout that cannot be
        # written (a full disk) still leaves the model saved, and the error names stdout.
        task = self.materialize("train_full_stdout", {"task": "induction", "steps": 2})
        saved = os.path.join(self.tmp.name, "model.pth")
        with open("/dev/full", "w") as full:
            p = subprocess.run([CLI, "train", task, "--save", saved], stdout=full, stderr=subprocess.PIPE, timeout=60)
        err = p.stderr.decode("utf-8", "replace")
        self.assertEqual(p.returncode, 2, err)
        self.assertIn("stdout: cannot write the output", err)
        self.assertTrue(os.path.getsize(saved) > 0, "the model was not saved")

    def test_deeply_nested_view_does_not_crash(self):
        # A valid document whose free-form "view" is 100000 levels deep: accepted (exit 0, valid
        # JSON out) or refused (exit 2, one error line naming "view") — never a crash.
        for inner in (nested(100000), nested(100000, '{"a":', "}", "1")):
            doc = json.dumps(ws(view={"deep": "@DEEP@"})).replace('"@DEEP@"', inner)
            path = self.materialize("deep_view", doc)
            p, seconds = run_cli(["trace", path])
            err = p.stderr.decode("utf-8", "replace")
            self.assertIn(p.returncode, (0, 2), f"deep view: rc={p.returncode} stderr={err[:200]!r}")
            if p.returncode == 2:
                self.assertEqual(len(err.splitlines()), 1, err[:300])
                self.assertTrue(err.startswith("error: ") and "view" in err, err[:300])
                self.assertEqual(p.stdout, b"")
            self.assertLess(seconds, TIME_LIMIT_S)


def torch_parameter_shapes(variant, d_in, model):
    """named_parameters() of the seed class built as the workspace says: names and shapes."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(ASSETS)), "core", "formats", "pytorch"))
    import seed_classes as sc
    m, T = model, 6
    if variant == "simple":
        return {}
    if variant == "self_attention_v1":
        module = sc.SelfAttention_v1(d_in, m["d_out"])
    elif variant == "self_attention_v2":
        module = sc.SelfAttention_v2(d_in, m["d_out"], m["qkv_bias"])
    elif variant == "causal":
        module = sc.CausalAttention(d_in, m["d_out"], T, m["dropout"], m["qkv_bias"])
    elif variant == "multihead_wrapper":
        module = sc.MultiHeadAttentionWrapper(d_in, m["d_out"], T, m["dropout"], m["num_heads"],
                                              m["qkv_bias"])
    else:
        module = sc.MultiHeadAttention(d_in, m["d_out"], T, m["dropout"], m["num_heads"],
                                       m["qkv_bias"])
    return {name: list(p.shape) for name, p in module.named_parameters()}


def shape(value):
    if value and isinstance(value[0], list):
        return [len(value), len(value[0])]
    return [len(value)]


class ValidTraces(unittest.TestCase):
    def test_presets(self):
        try:
            import torch  # noqa: F401  (fail loudly, never skip)
        except ImportError as e:
            self.fail(f"Debian's torch is required (run with /usr/bin/python3): {e}")
        presets = sorted(f[:-5] for f in os.listdir(os.path.join(ASSETS, "presets"))
                         if f.endswith(".json") and f != "gpt2-small.json")
        self.assertGreaterEqual(len(presets), 6, presets)
        for preset in presets:
            with self.subTest(preset=preset):
                self.check_preset(preset)

    def check_preset(self, preset):
        path = os.path.join(ASSETS, "presets", preset + ".json")
        with open(path) as f:
            given = json.load(f)
        p, _ = run_cli(["trace", path], timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode()[:300])
        self.assertEqual(p.stderr, b"")
        t = json.loads(p.stdout)
        self.assertEqual(t["format"], "attnscope-trace")
        self.assertEqual(t["version"], 2)  # the notebook's stage order (masked, then scaled)
        self.assertTrue({"format", "version", "workspace", "parameters", "batches"} <= set(t),
                        sorted(t))
        # The normalized workspace echoes every model field and what the preset gave.
        w = t["workspace"]
        self.assertEqual(w["format"], "attnscope-workspace")
        self.assertEqual(w["version"], 1)
        self.assertEqual(set(w["model"]), MODEL_FIELDS)
        for key, value in given["model"].items():
            self.assertEqual(w["model"][key], value, f"model.{key}")
        self.assertEqual(w["embeddings"], given["embeddings"])
        m = w["model"]
        emb = given["embeddings"]
        T = emb["rows"] if isinstance(emb, dict) else len(emb)
        d_in = emb["cols"] if isinstance(emb, dict) else len(emb[0])
        self.assertEqual(len(w["tokens"]), T)
        # Parameters: the names and shapes of the seed class's named_parameters() in torch.
        expected = torch_parameter_shapes(m["variant"], d_in, m)
        got = {name: shape(v) for name, v in t["parameters"].items()}
        self.assertEqual(got, expected, f"{preset}: parameter names/shapes differ from torch")
        # Batches, heads, masks.
        self.assertEqual(len(t["batches"]), m["batch_size"])
        heads = m["num_heads"] if m["variant"] in ("multihead", "multihead_wrapper") else 1
        for b, batch in enumerate(t["batches"]):
            self.assertTrue({"heads", "context", "output"} <= set(batch), sorted(batch))
            self.assertEqual(len(batch["heads"]), heads)
            for h, head in enumerate(batch["heads"]):
                where = f"{preset} batch {b} head {h}"
                # The tril route's own stages on that route only (cells [26]-[28]).
                tril = {"unmasked_weights", "tril", "tril_weights"} if m["causal_route"] == "tril" else set()
                self.assertEqual(set(head), HEAD_KEYS | {"statistics"} | tril, where)
                self.check_head(head, T, m["causal"], where, bool(tril))
                self.check_statistics(head["statistics"], T, where)

    def check_statistics(self, stats, T, where):
        self.assertEqual(set(stats), STATISTICS_ROWS | STATISTICS_MEANS, f"{where}: statistics")
        for key in STATISTICS_ROWS:
            self.assertEqual(len(stats[key]), T, f"{where}: statistics {key}")
            self.assertTrue(all(isinstance(v, (int, float)) for v in stats[key]), f"{where}: statistics {key}")
        self.assertTrue(all(type(v) is int and 0 <= v < T for v in stats["argmax"]), f"{where}: argmax")
        for key in STATISTICS_MEANS:  # the previous-token mean is null with one token only
            self.assertTrue(isinstance(stats[key], (int, float)) or (stats[key] is None and T == 1 and "previous" in key),
                            f"{where}: statistics {key} = {stats[key]!r}")

    def check_head(self, head, T, causal, where, tril=False):
        for key in HEAD_KEYS - {"queries", "keys", "values", "context"}:
            self.assertEqual(shape(head[key]), [T, T], f"{where}: {key}")
        for key in ("mask", "dropout_mask"):
            cells = {v for row in head[key] for v in row}
            self.assertTrue(cells <= {0, 1} and all(type(v) is int for v in cells),
                            f"{where}: {key} has {cells}")
        for i in range(T):
            for j in range(T):
                masked = head["mask"][i][j] == 1
                self.assertEqual(masked, causal and j > i, f"{where}: mask[{i}][{j}]")
                for key in ("masked_scores", "scaled_scores"):  # masked, then scaled: −∞ stays
                    # (the tril route masks the weights, not the scores: no −∞ there)
                    self.assertEqual(head[key][i][j] is None, masked and not tril, f"{where}: {key}[{i}][{j}] null iff masked")
                if tril:
                    self.assertEqual(head["tril"][i][j], 0 if masked else 1, f"{where}: tril[{i}][{j}]")
                    self.assertEqual(head["tril_weights"][i][j] == 0, masked, f"{where}: tril_weights[{i}][{j}]")
                if masked:
                    self.assertEqual(head["weights"][i][j], 0, f"{where}: weights[{i}][{j}]")
                if head["dropout_mask"][i][j] == 0:
                    self.assertEqual(head["dropped_weights"][i][j], 0, f"{where}: dropped")
        for key in HEAD_KEYS - {"masked_scores", "scaled_scores"}:
            for row in head[key]:
                self.assertTrue(all(isinstance(v, (int, float)) for v in row),
                                f"{where}: {key} has a null or non-number")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: test_cli_bad_input.py CLI_PATH ASSETS_DIR")
    CLI, ASSETS = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
