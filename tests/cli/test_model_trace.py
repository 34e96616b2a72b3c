#!/usr/bin/python3
"""attnscope-cli model-trace's options on a tiny random model in the book's layout, written here with
NumPy (docs/DESIGN.md §2.5, §2.6): --top-k and --temperature — the "next_tokens" the JSON then
holds, the next_tokens file of --format csv|npy, 0 as greedy — and their refusals: a temperature
that is negative (−0 too), NaN or infinite, --top-k below 0 or above the vocabulary, --temperature without --top-k,
each exit 2 with one stderr line "error: …", nothing on stdout and no folder written. Each head's
"label" is there, a score's id or null. The numbers against torch are the oracle's
(tests/oracle/test_gpt_oracle.py).

Usage: test_model_trace.py CLI_PATH
"""
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

CLI = None
VOCAB, CONTEXT, WIDTH, HEADS = 11, 8, 8, 2
LABELS = {None, "previous_token", "first_token", "duplicate_token", "induction"}


def book_model(path, vocab=VOCAB):
    """One block of the book's GPTModel with random weights, as np.savez of its state_dict."""
    rng = np.random.default_rng(7)

    def r(*shape, scale=0.3):
        return (scale * rng.standard_normal(shape)).astype(np.float32)

    sd = {"tok_emb.weight": r(vocab, WIDTH, scale=1.0), "pos_emb.weight": r(CONTEXT, WIDTH, scale=1.0),
          "final_norm.scale": 1 + r(WIDTH, scale=0.1), "final_norm.shift": r(WIDTH, scale=0.1),
          "out_head.weight": r(vocab, WIDTH, scale=1.0)}
    b = "trf_blocks.0."
    for name in ("W_query", "W_key", "W_value"):
        sd[b + "att." + name + ".weight"] = r(WIDTH, WIDTH)
    sd[b + "att.out_proj.weight"], sd[b + "att.out_proj.bias"] = r(WIDTH, WIDTH), r(WIDTH)
    sd[b + "ff.layers.0.weight"], sd[b + "ff.layers.0.bias"] = r(4 * WIDTH, WIDTH), r(4 * WIDTH)
    sd[b + "ff.layers.2.weight"], sd[b + "ff.layers.2.bias"] = r(WIDTH, 4 * WIDTH), r(WIDTH)
    for norm in ("norm1", "norm2"):
        sd[b + norm + ".scale"], sd[b + norm + ".shift"] = 1 + r(WIDTH, scale=0.1), r(WIDTH, scale=0.1)
    np.savez(path, **sd)
    return path


def byte_vocabulary():
    """GPT-2's 256 byte tokens (bytes_to_unicode's spellings), ids 0 … 255."""
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    chars, extra = {}, 0
    for b in range(256):
        chars[b] = chr(b) if b in printable else chr(256 + extra)
        extra += b not in printable
    return {chars[b]: b for b in range(256)}


class ModelTraceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="attnscope-model-trace-")
        cls.model = book_model(os.path.join(cls.tmp.name, "book.npz"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_cli(self, *args):
        return subprocess.run([CLI, "model-trace", self.model, "--ids", "1,4,2,4,1", "--num-heads", str(HEADS), *args],
                              capture_output=True, text=True, timeout=120)

    def trace(self, *args):
        run = self.run_cli(*args)
        self.assertEqual(run.returncode, 0, "model-trace %s failed: %s" % (" ".join(args), run.stderr))
        return json.loads(run.stdout)

    def expect_error(self, pattern, *args):
        run = self.run_cli(*args)
        self.assertEqual(run.returncode, 2, "expected a refusal of %s, got %d" % (" ".join(args), run.returncode))
        self.assertEqual(run.stdout, "")
        lines = run.stderr.splitlines()
        self.assertEqual(len(lines), 1, run.stderr)
        self.assertRegex(lines[0], "^error: " + pattern)

    def test_a_tokenizer_file_that_is_no_file_is_named(self):
        # vocab.json a folder, merges.txt a FIFO: the note names them ("no tokenizer beside the
        # model" alone sent the user looking for files that are there).
        folder = os.path.join(self.tmp.name, "odd_tokenizer")
        os.makedirs(os.path.join(folder, "vocab.json"), exist_ok=True)
        if not os.path.exists(os.path.join(folder, "merges.txt")):
            os.mkfifo(os.path.join(folder, "merges.txt"))
        model = os.path.join(folder, "book.npz")
        if not os.path.exists(model):
            os.link(self.model, model)
        run = subprocess.run([CLI, "model-trace", model, "--ids", "1,2", "--num-heads", str(HEADS)],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        notes = " ".join(json.loads(run.stdout)["notes"])
        self.assertIn("vocab.json is a folder", notes)
        self.assertIn("merges.txt is a pipe (FIFO)", notes)
        # --text's refusal names them too.
        run = subprocess.run([CLI, "model-trace", model, "--text", "hi", "--num-heads", str(HEADS)],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 2)
        self.assertIn("vocab.json is a folder, merges.txt is a pipe (FIFO)): give --ids instead of --text", run.stderr)
        # A config.json that is a FIFO is refused, not passed over (its heads would have been guessed).
        if not os.path.exists(os.path.join(folder, "config.json")):
            os.mkfifo(os.path.join(folder, "config.json"))
        run = subprocess.run([CLI, "model-trace", model, "--ids", "1,2"], capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 2)
        self.assertRegex(run.stderr, r"^error: .*odd_tokenizer/config.json: is not a regular file")

    def test_another_models_tokenizer_leaves_ids(self):
        # A byte-level tokenizer of 256 ids beside a model of VOCAB rows: another model's. The model
        # opens on ids with a note saying so; --text is refused with it (it blocked --ids too, and
        # named the folder ".").
        folder = os.path.join(self.tmp.name, "other_tokenizer")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(byte_vocabulary(), f)
        with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n")
        model = os.path.join(folder, "book.npz")
        if not os.path.exists(model):
            os.link(self.model, model)
        run = subprocess.run([CLI, "model-trace", "book.npz", "--ids", "1,2", "--num-heads", str(HEADS)],
                             capture_output=True, text=True, timeout=60, cwd=folder)
        self.assertEqual(run.returncode, 0, run.stderr)
        notes = " ".join(json.loads(run.stdout)["notes"])
        self.assertIn("the tokenizer beside it (%s) has ids up to 255 but the model's embedding has %d rows"
                      % (folder, VOCAB), notes)
        run = subprocess.run([CLI, "model-trace", "book.npz", "--text", "hi", "--num-heads", str(HEADS)],
                             capture_output=True, text=True, timeout=60, cwd=folder)
        self.assertEqual(run.returncode, 2)
        self.assertIn("another model's; put this model's own vocab.json + merges.txt beside it (give --ids instead of "
                      "--text)", run.stderr)
        # tokenize of the model's file refuses alike: it had printed ids the model cannot read.
        run = subprocess.run([CLI, "tokenize", "book.npz", "--text", "hi"], capture_output=True, text=True,
                             timeout=60, cwd=folder)
        self.assertEqual((run.returncode, run.stdout), (2, ""), run.stdout)
        self.assertIn("book.npz: the tokenizer beside it (%s) has ids up to 255 but the model's embedding has %d rows"
                      % (folder, VOCAB), run.stderr)
        # Its folder names the tokenizer alone: its ids, as ever.
        run = subprocess.run([CLI, "tokenize", ".", "--text", "hi"], capture_output=True, text=True, timeout=60,
                             cwd=folder)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(json.loads(run.stdout)["ids"], [ord("h"), ord("i")])

    def test_merges_that_make_too_few_tokens_are_said(self):
        # An empty (or cut) merges.txt beside a vocabulary of merged tokens: the text splits into
        # bytes, not the tokens the model learned. It opens (a byte-level vocabulary may have no
        # merges), with a note naming the file; it had said nothing.
        folder = os.path.join(self.tmp.name, "no_merges")
        os.makedirs(folder, exist_ok=True)
        vocab = byte_vocabulary()
        vocab.update({"he": 256, "<|endoftext|>": 257})
        with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f)
        model = book_model(os.path.join(folder, "book.npz"), vocab=258)
        merges = os.path.join(folder, "merges.txt")
        for lines, ids, note in (("#version: 0.2\n", [ord("h"), ord("e")], True),
                                 ("#version: 0.2\nh e\n", [256], False)):
            with open(merges, "w", encoding="utf-8") as f:
                f.write(lines)
            run = subprocess.run([CLI, "model-trace", model, "--text", "he", "--num-heads", str(HEADS)],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(run.returncode, 0, run.stderr)
            out = json.loads(run.stdout)
            said = [n for n in out["notes"] if "no merge makes" in n]
            self.assertEqual(out["ids"], ids)
            want = [merges + ": no merge makes 1 of the vocabulary's 1 tokens of two or more bytes (the file has 0 "
                    "merges): text splits into other tokens than the model learned. Is the file whole?"]
            self.assertEqual(said, want if note else [])
            run = subprocess.run([CLI, "tokenize", model, "--text", "he"], capture_output=True, text=True, timeout=60)
            self.assertEqual((run.returncode, json.loads(run.stdout)["ids"]), (0, ids), run.stderr)
            self.assertEqual(run.stderr, "note: " + want[0] + "\n" if note else "")

    def test_a_budget_given_bounds_the_model(self):
        # An embedding and a head of 1 200 000 zero rows, deflated by np.savez_compressed to a file of
        # some hundred KB: the model needs some 73 MiB, which --memory-budget 64 refuses before
        # anything is read (a model had not been held to the budget: a 4.6-MB file had read 4 GB).
        sd = dict(np.load(self.model))
        sd["tok_emb.weight"] = np.zeros((1200000, WIDTH), dtype=np.float32)
        sd["out_head.weight"] = np.zeros((1200000, WIDTH), dtype=np.float32)
        path = os.path.join(self.tmp.name, "wide_vocab.npz")
        np.savez_compressed(path, **sd)
        self.assertLess(os.path.getsize(path), 1 << 20)
        run = subprocess.run([CLI, "model-trace", path, "--ids", "1,2", "--num-heads", str(HEADS), "--memory-budget",
                              "64"], capture_output=True, text=True, timeout=60)
        self.assertEqual((run.returncode, run.stdout[:200]), (2, ""), run.stderr)
        self.assertRegex(run.stderr, r"^error: .*wide_vocab.npz: the model \(1 blocks of width 8, MLP 32, vocabulary "
                                     r"1200000\) needs about 7\d MiB, more than the limit of 64 MiB\n$")

    def test_an_overflow_names_the_model(self):
        # Scores beyond float32's range: refused in one line that names the file (it had named none).
        sd = dict(np.load(self.model))
        for name in ("trf_blocks.0.att.W_query.weight", "trf_blocks.0.att.W_key.weight"):
            sd[name] = np.where(sd[name] > 0, 1e19, -1e19).astype(np.float32)
        path = os.path.join(self.tmp.name, "overflow.npz")
        np.savez(path, **sd)
        run = subprocess.run([CLI, "model-trace", path, "--ids", "1,2", "--num-heads", str(HEADS)], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual((run.returncode, run.stdout), (2, ""), run.stderr)
        self.assertRegex(run.stderr, r"^error: .*overflow.npz: .*overflow")
        self.assertEqual(len(run.stderr.splitlines()), 1, run.stderr)

    @unittest.skipUnless(os.geteuid() == 0 and os.path.exists("/usr/sbin/runuser"), "needs root to run as nobody")
    def test_a_file_it_may_not_read_is_said_so(self):
        # Run as nobody: the model, in this test's folder (mode 700), cannot be reached. It had read
        # as a missing file ("does it exist?").
        run = subprocess.run(["/usr/sbin/runuser", "-u", "nobody", "--", CLI, "model-trace", self.model, "--ids", "1",
                              "--num-heads", str(HEADS)], capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("book.npz: cannot open the file: permission denied", run.stderr)

    def test_a_vocabulary_with_far_ids_is_refused(self):
        # 256 byte tokens and one id 16 777 215: tables by id had taken 1 GB for a 2-KB file.
        folder = os.path.join(self.tmp.name, "far_ids")
        os.makedirs(folder, exist_ok=True)
        vocab = byte_vocabulary()
        vocab["zz"] = 16777215
        with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f)
        with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n")
        run = subprocess.run([CLI, "tokenize", folder, "--text", "hi"], capture_output=True, text=True, timeout=60)
        self.assertEqual((run.returncode, run.stdout), (2, ""), run.stderr)
        self.assertIn("vocab.json: ids up to 16777215 for 257 tokens: a vocabulary's ids run from 0 without large gaps",
                      run.stderr)

    def test_another_architectures_config_is_refused(self):
        folder = os.path.join(self.tmp.name, "llama_config")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump({"model_type": "llama", "n_head": HEADS}, f)
        model = os.path.join(folder, "book.npz")
        if not os.path.exists(model):
            os.link(self.model, model)
        run = subprocess.run([CLI, "model-trace", model, "--ids", "1,2"], capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 2, run.stdout[:200])
        self.assertRegex(run.stderr, r"config.json: model_type is 'llama', not 'gpt2'")
        # Nested too deep: named by the file, then the member ("n_head: nested …" had not said which file).
        with open(os.path.join(folder, "config.json"), "w") as f:
            f.write('{"n_layer": 1, "n_head": ' + "[" * 100 + "]" * 100 + "}")
        run = subprocess.run([CLI, "model-trace", model, "--ids", "1,2"], capture_output=True, text=True, timeout=60)
        self.assertEqual((run.returncode, run.stderr),
                         (2, "error: %s: n_head: nested deeper than 64 levels\n" % os.path.join(folder, "config.json")))

    def test_the_heads_a_safetensors_says(self):
        # A .safetensors that says its heads (__metadata__ n_head, as attnscope saves a model it
        # trained) opens with them; a damaged value is one clear error naming the field, and
        # --num-heads, which comes first, is not stopped by it.
        with np.load(self.model) as arrays:
            tensors = {name: arrays[name] for name in arrays.files}

        def write(name, n_head, **more):
            header, offset, blobs = {"__metadata__": {"format": "pt", "n_head": n_head, **more}}, 0, []
            for key, value in tensors.items():
                blob = np.ascontiguousarray(value, dtype="<f4").tobytes()
                header[key] = {"dtype": "F32", "shape": list(value.shape), "data_offsets": [offset, offset + len(blob)]}
                offset += len(blob)
                blobs.append(blob)
            text = json.dumps(header).encode()
            text += b" " * ((8 - len(text) % 8) % 8)
            path = os.path.join(self.tmp.name, name)
            with open(path, "wb") as f:
                f.write(len(text).to_bytes(8, "little") + text + b"".join(blobs))
            return path

        good = write("heads.safetensors", str(HEADS))
        run = subprocess.run([CLI, "model-trace", good, "--ids", "1,2"], capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(json.loads(run.stdout)["heads_per_layer"], HEADS)
        bad = write("bad_heads.safetensors", "two")
        run = subprocess.run([CLI, "model-trace", bad, "--ids", "1,2"], capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 2)
        self.assertEqual(run.stdout, "")
        self.assertRegex(run.stderr, r"^error: .*bad_heads.safetensors: __metadata__.n_head must be a whole number "
                                     r"from 1 to 1000000, got 'two' \(give the heads: --num-heads N, or the heads of File › Open model…\)\n$")
        run = subprocess.run([CLI, "model-trace", bad, "--ids", "1,2", "--num-heads", str(HEADS)],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        # Its tokens' names ("vocabulary", as a text trained here keeps them) name the tokens; a list
        # of another length is one error naming the field.
        names = ["t%d" % i for i in range(VOCAB)]
        named = write("named.safetensors", str(HEADS), vocabulary=json.dumps(names))
        run = subprocess.run([CLI, "model-trace", named, "--ids", "1,2"], capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(json.loads(run.stdout)["tokens"], ["t1", "t2"])
        short = write("short_names.safetensors", str(HEADS), vocabulary=json.dumps(names[:3]))
        run = subprocess.run([CLI, "model-trace", short, "--ids", "1,2"], capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 2)
        self.assertRegex(run.stderr, r"^error: .*short_names.safetensors: its metadata's vocabulary must be a JSON "
                                     r"list of the %d tokens' names, id by id\n$" % VOCAB)

    def test_the_heads_a_pth_says(self):
        # A .pth whose state_dict's _metadata gives the root module an n_head (as attnscope saves a
        # model it trained; load_state_dict ignores the key), written by Debian's torch.save, opens
        # with them: width 8 is no multiple of 64, so without them it is refused. A damaged value is
        # one clear error naming the field; --num-heads, which comes first, is not stopped by it.
        import collections
        import torch
        with np.load(self.model) as arrays:
            tensors = collections.OrderedDict((name, torch.from_numpy(arrays[name])) for name in arrays.files)

        def write(name, n_head):
            sd = collections.OrderedDict(tensors)
            if n_head is not None:
                sd._metadata = collections.OrderedDict([("", {"version": 1, "n_head": n_head})])
            path = os.path.join(self.tmp.name, name)
            torch.save(sd, path)
            return path

        def trace(path, *args):
            return subprocess.run([CLI, "model-trace", path, "--ids", "1,2", *args], capture_output=True, text=True,
                                  timeout=60)

        run = trace(write("heads.pth", HEADS))
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(json.loads(run.stdout)["heads_per_layer"], HEADS)
        # --num-heads wins, and says what it overrode, as it does over config.json's n_head.
        run = trace(write("heads.pth", HEADS), "--num-heads", "1")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(json.loads(run.stdout)["heads_per_layer"], 1)
        self.assertIn("the file's metadata says n_head = %d; using 1 head as asked" % HEADS,
                      json.loads(run.stdout)["notes"])
        run = trace(write("no_heads.pth", None))
        self.assertEqual(run.returncode, 2)
        self.assertRegex(run.stderr, r"no_heads.pth: the number of heads is not in the file and the width 8 is not a "
                                     r"multiple of 64")
        for value, shown in ((0, "0"), ("two", "two")):
            bad = write("bad_heads.pth", value)
            run = trace(bad)
            self.assertEqual(run.returncode, 2)
            self.assertEqual(run.stdout, "")
            self.assertRegex(run.stderr, r"^error: .*bad_heads.pth: the state_dict's _metadata\[''\].n_head must be a "
                                         r"whole number from 1 to 1000000, got '%s' \(give the heads: --num-heads N, or the heads of File › Open model…\)\n$"
                                         % shown)
            run = trace(bad, "--num-heads", str(HEADS))
            self.assertEqual(run.returncode, 0, run.stderr)

    # ---- next tokens ------------------------------------------------------------------------
    def test_next_tokens(self):
        out = self.trace("--top-k", "3", "--temperature", "0.5")
        logits = np.array(out["logits"], dtype=np.float64)
        nt = out["next_tokens"]
        self.assertEqual([list(t) for t in nt], [["id", "token", "probability", "logit"]] * 3)
        self.assertEqual([t["id"] for t in nt], [int(i) for i in np.argsort(-logits, kind="stable")[:3]])
        p = np.exp((logits - logits.max()) / 0.5)
        p /= p.sum()
        for t in nt:
            self.assertEqual(t["token"], str(t["id"]))  # no tokenizer: the id
            self.assertEqual(t["logit"], out["logits"][t["id"]])
            self.assertAlmostEqual(t["probability"], p[t["id"]], delta=1e-6 * p[t["id"]] + 1e-9)
        # A temperature of 1 (the default) is the model's own softmax; K = V lists every token.
        every = self.trace("--top-k", str(VOCAB))["next_tokens"]
        self.assertEqual(sorted(t["id"] for t in every), list(range(VOCAB)))
        self.assertAlmostEqual(sum(t["probability"] for t in every), 1.0, delta=1e-6)
        self.assertEqual([t["probability"] for t in every], sorted((t["probability"] for t in every), reverse=True))
        q = np.exp(logits - logits.max())
        q /= q.sum()
        self.assertAlmostEqual(every[0]["probability"], q.max(), delta=1e-6)
        self.assertGreater(nt[0]["probability"], every[0]["probability"])  # 0.5 is sharper
        # 0 is greedy, as the app's slider offers it: the most likely token 1, the others 0.
        greedy = self.trace("--top-k", "3", "--temperature", "0")["next_tokens"]
        self.assertEqual([t["id"] for t in greedy], [t["id"] for t in nt])
        self.assertEqual([t["probability"] for t in greedy], [1.0, 0.0, 0.0])
        # Without --top-k, or with 0, there are none.
        self.assertNotIn("next_tokens", self.trace())
        self.assertNotIn("next_tokens", self.trace("--top-k", "0", "--temperature", "2"))

    def test_next_tokens_files(self):
        want = self.trace("--top-k", "4", "--temperature", "0.7")["next_tokens"]
        for fmt in ("csv", "npy"):
            folder = os.path.join(self.tmp.name, "files-" + fmt)
            run = self.run_cli("--top-k", "4", "--temperature", "0.7", "--format", fmt, "--out", folder)
            self.assertEqual(run.returncode, 0, run.stderr)
            if fmt == "csv":
                with open(os.path.join(folder, "next_tokens.csv")) as f:
                    rows = list(csv.reader(f))
                self.assertEqual(rows[0], ["token", "id", "probability", "logit"])
                got = [(int(r[1]), float(r[2]), float(r[3])) for r in rows[1:]]
                self.assertEqual([r[0] for r in rows[1:]], [t["token"] for t in want])
            else:
                a = np.load(os.path.join(folder, "next_tokens.npy"))
                self.assertEqual((a.shape, a.dtype), ((4, 3), np.float32))
                got = [(int(r[0]), float(r[1]), float(r[2])) for r in a]
            self.assertEqual([g[0] for g in got], [t["id"] for t in want])
            for g, t in zip(got, want):
                self.assertEqual(np.float32(g[1]), np.float32(t["probability"]))
                self.assertEqual(np.float32(g[2]), np.float32(t["logit"]))
            # Without --top-k, no such file.
            plain = os.path.join(self.tmp.name, "plain-" + fmt)
            self.assertEqual(self.run_cli("--format", fmt, "--out", plain).returncode, 0)
            self.assertNotIn("next_tokens." + fmt, os.listdir(plain))

    def test_files_say_the_notes_and_an_earlier_traces_files(self):
        # --format csv|npy says what the JSON's "notes" say (here a tensor the model does not use),
        # and names the files of an earlier trace in the folder, which it leaves as they were.
        with np.load(self.model) as arrays:
            tensors = {name: arrays[name] for name in arrays.files}
        extra = os.path.join(self.tmp.name, "extra.npz")
        np.savez(extra, **tensors, **{"probe.weight": np.ones(3, np.float32)})
        folder = os.path.join(self.tmp.name, "notes")
        os.makedirs(folder)
        with open(os.path.join(folder, "mine.txt"), "w") as f:
            f.write("the user's own")

        def trace(*args):
            run = subprocess.run([CLI, "model-trace", extra, "--ids", "1,4,2", "--num-heads", str(HEADS), "--format",
                                  "csv", "--out", folder, *args], capture_output=True, text=True, timeout=60)
            self.assertEqual(run.returncode, 0, run.stderr)
            return run.stdout.splitlines()

        lines = trace("--top-k", "2")
        self.assertRegex(lines[0], r"^wrote \d+ files to ")
        as_json = subprocess.run([CLI, "model-trace", extra, "--ids", "1,4,2", "--num-heads", str(HEADS)],
                                 capture_output=True, text=True, timeout=60)
        notes = json.loads(as_json.stdout)["notes"]
        self.assertIn("1 tensor of the file not used: probe.weight", notes)
        self.assertEqual([l for l in lines if l.startswith("note: ")], ["note: " + n for n in notes])
        with open(os.path.join(folder, "scores.csv")) as f:
            self.assertEqual(next(csv.reader(f))[:3], ["name", "layer", "head"])
        lines = trace()
        self.assertEqual(lines[-1], "note: %s also holds 1 file of an earlier trace, left as they were: "
                                    "next_tokens.csv" % folder)
        self.assertIn("next_tokens.csv", os.listdir(folder))
        with open(os.path.join(folder, "mine.txt")) as f:
            self.assertEqual(f.read(), "the user's own")

    def test_refusals(self):
        temperature = r"--temperature: expected 0 \(greedy\) or a finite number above 0 \(.*\), got "
        self.expect_error(temperature + "-1$", "--top-k", "5", "--temperature", "-1")
        self.expect_error(temperature + "-0$", "--top-k", "5", "--temperature", "-0")
        self.expect_error(temperature + "nan$", "--top-k", "5", "--temperature", "nan")
        self.expect_error(temperature + "inf$", "--top-k", "5", "--temperature", "inf")
        self.expect_error(r"--top-k: expected how many next tokens to list, 0 \(none\) up to the vocabulary's size, "
                          r"got -1$", "--top-k", "-1")
        self.expect_error(r"--top-k: %d is more than the model's vocabulary of %d tokens \(at most %d\)$"
                          % (VOCAB + 1, VOCAB, VOCAB), "--top-k", str(VOCAB + 1))
        self.expect_error(r"--top-k: 1000000 is more than the model's vocabulary", "--top-k", "1000000")
        self.expect_error(r"--temperature requires --top-k", "--temperature", "0.5")
        self.expect_error(r".*--top-k", "--top-k", "two")
        self.expect_error(r"--layers: give the layers, e\.g\. 0,5", "--layers", "")
        # More tokens than the context is said first: no memory budget would mend it.
        run = subprocess.run([CLI, "model-trace", self.model, "--ids", ",".join(["1"] * 1000), "--num-heads",
                              str(HEADS), "--memory-budget", "1"], capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 2)
        self.assertRegex(run.stderr, r"^error: --ids: 1000 tokens, more than the model's context of %d\n$" % CONTEXT)
        # Refused before anything is written: no folder.
        folder = os.path.join(self.tmp.name, "refused")
        for args in (["--top-k", str(VOCAB + 1)], ["--top-k", "2", "--temperature", "nan"]):
            self.assertEqual(self.run_cli(*args, "--format", "csv", "--out", folder).returncode, 2)
            self.assertFalse(os.path.exists(folder))

    # ---- head labels ------------------------------------------------------------------------
    def test_labels(self):
        out = self.trace()
        for layer in out["layers"]:
            for head in layer["heads"]:
                self.assertIn(head["label"], LABELS)
                if head["label"] is not None:
                    self.assertIsNotNone(head["scores"][head["label"]])
        # One token: every weight is on the first (first-token score 1), yet no head is called a
        # sink: a head has no choice there. Labels need 8 tokens (lm/head_scores.h).
        for ids, labelled in (("3", False), ("3,1,4,1,5,9,2", False), ("3,1,4,1,5,9,2,6", True)):
            run = subprocess.run([CLI, "model-trace", self.model, "--ids", ids, "--num-heads", str(HEADS)],
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(run.returncode, 0, run.stderr)
            layers = json.loads(run.stdout)["layers"]
            heads = [h for layer in layers for h in layer["heads"]]
            if ids == "3":
                self.assertTrue(all(math.isclose(h["scores"]["first_token"], 1.0) for h in heads))
            if not labelled:
                self.assertEqual([h["label"] for h in heads], [None] * len(heads), ids)

    # ---- bench --model ----------------------------------------------------------------------
    def test_bench_times_the_edits(self):
        # A new text's pass and, on the same text one token different, the pass that takes the rows
        # before that token from the last one (view_last_token, view_middle_token).
        run = subprocess.run([CLI, "bench", "--model", self.model, "--num-heads", str(HEADS), "--tokens", "8",
                              "--repeat", "2"], capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        out = json.loads(run.stdout)
        self.assertEqual(out["tokens"], CONTEXT)
        for mode in ("view", "maps", "fused"):
            self.assertGreater(out[mode]["forward_ms"]["median"], 0, mode)
        self.assertEqual(out["view_last_token"]["reused_rows"], CONTEXT - 1)
        self.assertEqual(out["view_middle_token"]["reused_rows"], CONTEXT // 2)
        self.assertGreater(out["view_last_token"]["forward_ms"]["median"], 0)
        # The head alone: the whole tied head (vocabulary × d floats) read for the last position.
        self.assertEqual(out["head"]["bytes_read"], out["model"]["vocab_size"] * out["model"]["d_model"] * 4)
        self.assertGreater(out["head"]["gb_per_s"], 0)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    CLI = sys.argv.pop(1)
    unittest.main(verbosity=2)
