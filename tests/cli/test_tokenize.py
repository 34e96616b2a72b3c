#!/usr/bin/python3
"""attnscope-cli tokenize (docs/DESIGN.md §2.6) on a small vocabulary written here (the 256 byte
tokens, a few merges, <|endoftext|>): the JSON it prints, a folder or a file inside one, both file
layouts, --text - (stdin), --prepend-eot; and bad input — a missing folder, a folder without the
files, a bad vocabulary or merges line, --prepend-eot without <|endoftext|>, a missing --text — each
exit 2 with one stderr line "error: …" naming the file (and line), nothing on stdout.
GPT-2's own files are the oracle's (tests/oracle/test_tokenizer_oracle.py).

Usage: test_tokenize.py CLI_PATH
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

CLI = None


def byte_chars():
    """bytes_to_unicode(), written out as encoder.py builds it."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTES = byte_chars()
MERGES = [("Ġ", "w"), ("Ġw", "o"), ("h", "i")]


def write_tokenizer(folder, layout="hf", eot=True, vocab_text=None, merges_text=None):
    vocab = {BYTES[b]: b for b in range(256)}
    for a, b in MERGES:
        vocab[a + b] = len(vocab)
    if eot:
        vocab["<|endoftext|>"] = len(vocab)
    names = ("vocab.json", "merges.txt") if layout == "hf" else ("encoder.json", "vocab.bpe")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, names[0]), "w", encoding="utf-8") as f:
        f.write(vocab_text if vocab_text is not None else json.dumps(vocab))
    with open(os.path.join(folder, names[1]), "w", encoding="utf-8") as f:
        f.write(merges_text if merges_text is not None else "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in MERGES))
    return vocab


def run(*args, stdin=None):
    return subprocess.run([CLI, "tokenize", *args], input=stdin, capture_output=True, timeout=30)


class Tokenize(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def ok(self, *args, stdin=None):
        p = run(*args, stdin=stdin)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(p.stderr, b"")
        return json.loads(p.stdout)

    def refused(self, args, message, stdin=None):
        p = run(*args, stdin=stdin)
        self.assertEqual(p.returncode, 2, p.stderr.decode())
        self.assertEqual(p.stdout, b"")
        lines = p.stderr.decode().splitlines()
        self.assertEqual(len(lines), 1, lines)
        self.assertTrue(lines[0].startswith("error: "), lines[0])
        self.assertIn(message, lines[0])

    def test_prints_ids_and_tokens(self):
        folder = os.path.join(self.dir, "m")
        vocab = write_tokenizer(folder)
        hi, wo = vocab["hi"], vocab["Ġwo"]
        want = {"ids": [hi, wo, vocab["r"], vocab["l"], vocab["d"], vocab["Ċ"]],
                "tokens": ["hi", "Ġwo", "r", "l", "d", "Ċ"]}
        self.assertEqual(self.ok(folder, "--text", "hi world\n"), want)
        # A file in the folder (a model's weights) stands for the folder, whether it exists or not.
        self.assertEqual(self.ok(os.path.join(folder, "model.safetensors"), "--text", "hi world\n"), want)
        # stdin's final line end (echo's) is tokenized as it is, and a note says so and how not to.
        p = run(folder, "--text", "-", stdin=b"hi world\n")
        self.assertEqual((p.returncode, json.loads(p.stdout)), (0, want))
        said = p.stderr.decode()
        self.assertIn("ends with a line end", said)
        self.assertIn("echo -n", said)
        self.assertEqual(run(folder, "--text", "-", stdin=b"hi world").stderr.decode(), "")
        eot = vocab["<|endoftext|>"]
        self.assertEqual(self.ok(folder, "--text", "hi", "--prepend-eot")["ids"], [eot, hi])
        self.assertEqual(self.ok(folder, "--text", "hi<|endoftext|>hi")["ids"], [hi, eot, hi])
        self.assertEqual(self.ok(folder, "--text", ""), {"ids": [], "tokens": []})
        # Bytes that are not UTF-8 (from stdin): each its byte token.
        self.assertEqual(self.ok(folder, "--text", "-", stdin=b"hi\xff")["tokens"], ["hi", BYTES[0xFF]])

    def test_openai_layout(self):
        folder = os.path.join(self.dir, "openai")
        vocab = write_tokenizer(folder, layout="openai")
        self.assertEqual(self.ok(folder, "--text", " wo")["ids"], [vocab["Ġwo"]])

    def test_bad_input(self):
        missing = os.path.join(self.dir, "nothing", "here")
        self.refused([missing, "--text", "x"], f"{missing}: no such file or folder")
        # A mistyped name in a tokenizer's folder is not taken for the folder (a model's file is).
        self.refused([os.path.join(self.dir, "m", "vocab.jsn"), "--text", "x"], "vocab.jsn: no such file or folder")
        missing_model = os.path.join(self.dir, "nothing", "model.safetensors")
        self.refused([missing_model, "--text", "x"], f"{os.path.dirname(missing_model)}: is not a folder")
        empty = os.path.join(self.dir, "empty")
        os.mkdir(empty)
        self.refused([empty, "--text", "x"], f"{empty}: holds no GPT-2 tokenizer (looked for vocab.json + merges.txt")
        bad = os.path.join(self.dir, "bad")
        write_tokenizer(bad, vocab_text='{"a": "1"}')
        self.refused([bad, "--text", "x"], f"{bad}/vocab.json: the id of token \"a\" is a string, not an integer")
        merges = os.path.join(self.dir, "merges")
        write_tokenizer(merges, merges_text="#version: 0.2\nh i\nq zz\n")
        self.refused([merges, "--text", "x"], f"{merges}/merges.txt:3: \"zz\" is not in the vocabulary")
        no_eot = os.path.join(self.dir, "no_eot")
        write_tokenizer(no_eot, eot=False)
        self.refused([no_eot, "--text", "x", "--prepend-eot"], "--prepend-eot: the vocabulary has no <|endoftext|>")
        self.refused([no_eot], "--text is required")


if __name__ == "__main__":
    CLI = sys.argv.pop(1)
    unittest.main(verbosity=1)
