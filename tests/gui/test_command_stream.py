"""A seeded random stream of `attnscope --commands`: thousands of edits, valid and invalid, in one run.

Generates (deterministically for --seed) a stream of at least --count commands: presets (all of
assets/presets but the slow ones; `medium` at most twice, `gpt2-small` at most once), sentences of
1–40 words (real words, repeats, unicode such as "naïve" and "日本", punctuation), token edits with
valid and invalid indices, `set` of every model field with valid and invalid values, set_cell
(in and out of range, 1e30, 1e39), d_in, undo/redo bursts, selections in and out of range, opening
workspace files written to a temp folder (valid ones, and damaged ones that must be refused), new,
book_example, randomize, a few view settings. Runs them in one app with
`--keep-going --screenshot out.png --dump-layout dump.json` and checks:
  * exit 0, no crash (negative return code), no sanitizer report on stderr or in the files
    ASAN_OPTIONS' log_path names (tests/sanitizers/ctest-asan sends reports there);
  * every stderr line is an `error: command N (name): …` line naming that command, or known noise
    (NOISE below); anything else is printed and fails the test;
  * commands that can never apply (e.g. index −1, 1e39, dropout 1.5, a damaged file) were reported,
    and commands that always apply (presets, valid files, sentences, new, …) were not;
  * the final dump: every square map is T × T and the context map T × w for T = len(state.tokens),
    the tokens on screen (the stream ends showing the grid with every column); settled, and (no engine
    error) state.tokens == state.workspace.tokens.
Prints the seed, the number of commands and how many were refused.

Works against a sanitizer build too (a slower app: give it a longer --timeout; --gpt2 0 leaves out
the preset that computes longest, --size 1280x800 draws faster).
Usage: test_command_stream.py --app APP --cli CLI --presets PRESETS_DIR [--seed 1] [--count 2000]
           [--timeout 280] [--gpt2 0|1] [--medium 0-2] [--size WxH] [--keep]
"""
import argparse
import collections
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gui_common as g  # noqa: E402

SQUARE_STAGES = {"scores", "scaled_scores", "masked_scores", "weights", "dropout_mask", "dropped_weights"}
ALL_COLUMNS = g.DEFAULT_STAGES + ["context"]
SLOW_PRESETS = ("gpt2-small", "medium")  # a few seconds each: --gpt2 (≤ 1) and --medium (≤ 2) times

ERROR_LINE = re.compile(r"^error: command (\d+) \(([a-z_]+)\): .+$")
SANITIZER = ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer", "ERROR: UndefinedBehaviorSanitizer",
             "SUMMARY: AddressSanitizer", "SUMMARY: UndefinedBehaviorSanitizer")
# stderr lines that are not the app's: Mesa / GLX under Xvfb on some machines. Anything else fails.
NOISE = [
    re.compile(r"^MESA-LOADER: failed to open \S+"),
    re.compile(r"^MESA: warning: "),
    re.compile(r"^libEGL warning: "),
    re.compile(r"^glx: failed to create dri3 screen$"),
    re.compile(r"^failed to load driver: \S+$"),
]

WORDS = ("the cat sat on mat Your journey starts with one step attention is all you need a an of to and "
         "query key value softmax token dog ran fast slow red blue green tree house river over under "
         "quick brown fox jumps lazy").split()
UNICODE = ["naïve", "café", "日本", "日本語", "Ünïcödé", "Straße", "résumé", "🙂", "über", "Ωmega", "ñ", "€5",
           "e\u0301", "x\u200by", "עברית", "中文", "—", "«quote»", "'single'", "\"dq\"", "back\\slash", "{json}"]
PUNCT = [",", ".", "!", "?", ";", ":"]
FIELDS_VALID = {
    "variant": ["simple", "self_attention_v1", "self_attention_v2", "causal", "multihead_wrapper", "multihead"],
    "d_out": list(range(1, 17)),
    "num_heads": list(range(1, 9)),
    "dropout": [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0],
    "seed": [0, 1, 7, 123, 789, 2024, 4294967295],
    "training": [True, False],
    "qkv_bias": [True, False],
    "causal": [True, False],
    "scale": ["sqrt_dk", "none"],
    "batch_size": [1, 2, 3, 4],
    "normalization": ["softmax", "sum"],
}
# Values no state accepts (so the command must be reported).
FIELDS_INVALID = {
    "variant": ["bogus", "", 3, None, "Multihead"],
    "d_out": [-3, 5000, 2.5, "big", None, True],
    "num_heads": [0, -1, 65, 1.5, "two"],
    "dropout": [1.0001, -0.1, 1.5, "x", None],
    "seed": [-1, 4294967296, 1.5, "s"],
    "training": ["yes", 1, None],
    "qkv_bias": ["no", 0],
    "causal": [1, "true"],
    "scale": ["bogus", "sqrt", 1],
    "batch_size": [0, -1, 65, 2.5],
    "normalization": ["max", "", 0],
    "foo": [1],
    "": [1],
}
HUGE_INTS = [-2147483648, 2147483647, 2 ** 31, -(2 ** 31) - 1, 2 ** 40, -(2 ** 40), 2 ** 63 - 1]


def split_sentence(text):
    """attnscope's splitSentence(): words split at whitespace; , . ! ? ; : are tokens of their own."""
    tokens, word = [], ""
    for c in text:
        if c in " \t\n\r\v\f" or c in ",.!?;:":
            if word:
                tokens.append(word)
            word = ""
            if c in ",.!?;:":
                tokens.append(c)
        else:
            word += c
    if word:
        tokens.append(word)
    return tokens


def workspace_files(folder, presets):
    """Valid workspace files to open, and damaged ones the app must refuse."""
    with open(os.path.join(presets, "multihead.json")) as f:
        multihead = json.load(f)
    rng = random.Random(5)
    valid = {
        "multihead copy.json": multihead,
        "twelve causal d_in 5.json": {
            "format": "attnscope-workspace", "version": 1,
            "tokens": [f"w{i}" for i in range(11)] + ["日本"],
            "embeddings": [[round(rng.uniform(-1, 1), 4) for _ in range(5)] for _ in range(12)],
            "model": {"variant": "causal", "d_out": 3, "seed": 42, "dropout": 0.5, "training": True, "batch_size": 3}},
        "random 9x4 wrapper.json": {
            "format": "attnscope-workspace", "version": 1,
            "embeddings": {"random": "uniform", "seed": 3, "rows": 9, "cols": 4},
            "model": {"variant": "multihead_wrapper", "d_out": 2, "num_heads": 3, "seed": 5, "batch_size": 2}},
        "one token simple.json": {
            "format": "attnscope-workspace", "version": 1, "tokens": ["solo"], "embeddings": [[0.5, -0.25]],
            "model": {"variant": "simple"}},
    }
    bad_shape = json.loads(json.dumps(multihead))
    bad_shape["embeddings"] = bad_shape["embeddings"][:4]  # 6 tokens, 4 rows
    bad_heads = json.loads(json.dumps(multihead))
    bad_heads["model"]["d_out"] = 3  # 3 not divisible by 2 heads
    bad_value = json.loads(json.dumps(multihead))
    bad_value["embeddings"][2][1] = "0.5"
    bad_format = json.loads(json.dumps(multihead))
    bad_format["format"] = "not-attnscope"
    too_many = {"format": "attnscope-workspace", "version": 1,
                "embeddings": {"random": "normal", "seed": 1, "rows": 100000, "cols": 4},
                "model": {"variant": "simple"}}
    ragged = json.loads(json.dumps(multihead))
    ragged["embeddings"][3] = [0.1, 0.2]
    damaged = {
        "truncated.json": json.dumps(multihead)[:150],
        "empty.json": "",
        "rows differ.json": json.dumps(bad_shape),
        "heads indivisible.json": json.dumps(bad_heads),
        "string value.json": json.dumps(bad_value),
        "wrong format.json": json.dumps(bad_format),
        "too many rows.json": json.dumps(too_many),
        "ragged.json": json.dumps(ragged),
        "binary.json": "\x00\x01\x02PNG garbage",
    }
    paths = {"valid": {}, "damaged": []}
    for name, ws in valid.items():
        p = os.path.join(folder, name)
        with open(p, "w", encoding="utf-8") as f:
            json.dump(ws, f, ensure_ascii=False)
        T = len(ws["tokens"]) if "tokens" in ws else ws["embeddings"]["rows"]
        d_in = len(ws["embeddings"][0]) if isinstance(ws["embeddings"], list) else ws["embeddings"]["cols"]
        paths["valid"][p] = (T, d_in, ws["model"])
    for name, text in damaged.items():
        p = os.path.join(folder, name)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        paths["damaged"].append(p)
    paths["damaged"].append(os.path.join(folder, "does not exist.json"))
    return paths


class Stream:
    """The generator. Keeps a rough idea of the workspace (token count, d_in, heads, batch) so most
    indices are valid; undo/redo make it inexact, which is fine: those commands are not judged."""

    def __init__(self, seed, presets_dir, files, slow_counts):
        self.rng = random.Random(seed)
        self.slow_counts = slow_counts  # {"gpt2-small": n, "medium": m}
        self.files = files
        names = sorted(os.path.splitext(n)[0] for n in os.listdir(presets_dir) if n.endswith(".json"))
        self.presets = {}
        for n in names:
            with open(os.path.join(presets_dir, n + ".json")) as f:
                ws = json.load(f)
            e = ws["embeddings"]
            T = len(ws["tokens"]) if "tokens" in ws else e["rows"]
            d_in = len(e[0]) if isinstance(e, list) else e["cols"]
            self.presets[n] = (T, d_in, ws["model"])
        self.fast_presets = [n for n in names if n not in SLOW_PRESETS]
        self.commands, self.expect = [], []  # expect: "ok", "fail" or None (depends on the state)
        self.T, self.d_in, self.heads, self.batch = 6, 3, 2, 2

    # -- helpers
    def emit(self, command, expect=None):
        self.commands.append(command)
        self.expect.append(expect)

    def index(self, n, lo=0):
        """An index in [lo, n): usually valid (as far as we know n); else (expect "fail") one that
        no state accepts."""
        r = self.rng
        if r.random() < 0.8:
            return r.randint(lo, max(lo, n - 1)), None
        return r.choice([lo - 1, -7, 5000, *HUGE_INTS]), "fail"

    def near(self, n):
        """Just past the end (n, n + 1): invalid unless our idea of n is out of date."""
        return self.rng.choice([n, n + 1]), None

    def word(self):
        r = self.rng
        x = r.random()
        if x < 0.7:
            w = r.choice(WORDS)
        elif x < 0.9:
            w = r.choice(UNICODE)
        else:
            w = r.choice(WORDS) + r.choice(PUNCT)  # "cat," → "cat" and ","
        return w

    def sentence(self):
        r = self.rng
        n = r.randint(1, 40)
        words = []
        for _ in range(n):
            if words and r.random() < 0.2:
                words.append(r.choice(words))  # a repeat: the same vector
            else:
                words.append(self.word())
        sep = r.choice([" ", " ", " ", "  ", "\t", " \n"])
        text = sep.join(words)
        if r.random() < 0.2:
            text += r.choice(PUNCT)
        return text

    def adopt(self, T, d_in, model):
        self.T, self.d_in = T, d_in
        self.heads = model.get("num_heads", 1) if model["variant"] in ("multihead", "multihead_wrapper") else 1
        self.batch = model.get("batch_size", 1)

    # -- the commands
    def gen_preset(self):
        r = self.rng
        if r.random() < 0.05:
            self.emit({"do": "preset", "name": r.choice(["nope", "", "gpt2", "MULTIHEAD", "../presets/simple"])}, "fail")
            return
        name = r.choice(self.fast_presets)
        self.emit({"do": "preset", "name": name}, "ok")
        self.adopt(*self.presets[name])

    def gen_slow_preset(self, name):
        self.emit({"do": "preset", "name": name}, "ok")
        self.adopt(*self.presets[name])

    def gen_sentence(self):
        r = self.rng
        if r.random() < 0.04:
            self.emit({"do": "sentence", "text": r.choice(["", "   ", "\t\n"])}, "fail")
            return
        text = self.sentence()
        c = {"do": "sentence", "text": text}
        if r.random() < 0.3:
            c["seed"] = r.choice([0, 1, 123, 4294967295])
        self.emit(c, "ok")
        self.T = len(split_sentence(text))

    def gen_add(self):
        r = self.rng
        c, expect = {"do": "add_token"}, None
        if r.random() < 0.5:
            c["name"] = r.choice([self.word(), "", "t1", "日本", "a b"])
        x = r.random()
        if x < 0.5:
            c["at"], expect = self.index(self.T + 1)
        elif x < 0.6:
            c["at"], _ = self.near(self.T + 1)
        if r.random() < 0.2:
            c["seed"] = r.choice([0, 99, 4294967295, -5, 4294967296])
            if c["seed"] < 0 or c["seed"] > 4294967295:
                expect = "fail"
        self.emit(c, expect)
        if expect is None:
            self.T += 1

    def gen_remove(self):
        i, expect = self.index(self.T) if self.rng.random() < 0.9 else self.near(self.T)
        self.emit({"do": "remove_token", "index": i}, expect)
        if expect is None and self.T > 1 and 0 <= i < self.T:
            self.T -= 1

    def gen_rename(self):
        r = self.rng
        i, expect = self.index(self.T)
        name = r.choice([self.word(), self.word(), "", "x" * 200, "日本"])
        self.emit({"do": "rename_token", "index": i, "name": name}, "fail" if name == "" else expect)

    def gen_move(self):
        a, ea = self.index(self.T)
        b, eb = self.index(self.T)
        self.emit({"do": "move_token", "from": a, "to": b}, ea or eb)

    def gen_set(self):
        r = self.rng
        if r.random() < 0.75:
            field = r.choice(list(FIELDS_VALID))
            value = r.choice(FIELDS_VALID[field])
            self.emit({"do": "set", "field": field, "value": value})  # may not fit the state
            if field == "variant":
                self.heads = 2 if value.startswith("multihead") else 1
            elif field == "num_heads":
                self.heads = value
            elif field == "batch_size":
                self.batch = value
        else:
            field = r.choice(list(FIELDS_INVALID))
            self.emit({"do": "set", "field": field, "value": r.choice(FIELDS_INVALID[field])}, "fail")

    def gen_model(self):
        r = self.rng
        fields = {}
        for f in r.sample(sorted(FIELDS_VALID), r.randint(1, 4)):
            fields[f] = r.choice(FIELDS_VALID[f])
        self.emit({"do": "model", "fields": fields})

    def gen_set_cell(self):
        r = self.rng
        row, er = self.index(self.T)
        col, ec = self.index(self.d_in)
        x = r.random()
        if x < 0.8:
            value, ev = round(r.uniform(-3, 3), 3), None
        elif x < 0.9:
            value, ev = r.choice([1e39, -1e39, 1.7976931348623157e308]), "fail"  # beyond float32
        else:
            value, ev = r.choice([1e30, -1e30, 3e38, 1e-45, 0.0]), None  # float32; the engine may overflow
        self.emit({"do": "set_cell", "row": row, "col": col, "value": value}, er or ec or ev)

    def gen_d_in(self):
        r = self.rng
        if r.random() < 0.85:
            v = r.randint(1, 8)
            c = {"do": "d_in", "value": v}
            if r.random() < 0.3:
                c["seed"] = r.choice([0, 5, 123])
            self.emit(c)
            self.d_in = v
        else:
            self.emit({"do": "d_in", "value": r.choice([0, -1, 5000])}, "fail")

    def gen_undo_redo(self):
        r = self.rng
        for _ in range(r.randint(1, 10)):
            self.emit({"do": "undo" if r.random() < 0.65 else "redo"})

    def gen_select(self):
        r = self.rng
        kind = r.choice(["token", "token", "head", "head", "batch", "key"])
        if kind == "token":
            if r.random() < 0.3:
                self.emit({"do": "select_token", "step": r.choice([-3, -1, 1, 2, 100])}, "ok")
            else:
                i, e = self.index(self.T)
                self.emit({"do": "select_token", "index": i}, e)
        elif kind == "head":
            if r.random() < 0.3:
                self.emit({"do": "select_head", "step": r.choice([-9, -1, 1, 2, 17])}, "ok")
            else:
                i, e = self.index(self.heads, lo=-1)
                self.emit({"do": "select_head", "index": i}, e)
        elif kind == "batch":
            i, e = self.index(self.batch)
            self.emit({"do": "select_batch", "index": i}, e)
        else:
            i, e = self.index(self.T, lo=-1)
            self.emit({"do": "select_key", "index": i}, e)

    def gen_open(self):
        r = self.rng
        if r.random() < 0.5:
            path = r.choice(sorted(self.files["valid"]))
            self.emit({"do": "open", "path": path}, "ok")
            self.adopt(*self.files["valid"][path])
        else:
            self.emit({"do": "open", "path": r.choice(self.files["damaged"])}, "fail")

    def gen_doc(self):
        r = self.rng
        x = r.random()
        if x < 0.35:
            self.emit({"do": "new"}, "ok")
            self.T, self.d_in = 6, 3
        elif x < 0.7:
            self.emit({"do": "book_example"}, "ok")
            self.T, self.d_in = 6, 3
        else:
            c = {"do": "randomize"}
            if r.random() < 0.5:
                c["seed"] = r.choice([0, 1, 123, 4294967295])
            self.emit(c, "ok")

    def gen_view(self):
        r = self.rng
        x = r.random()
        if x < 0.4:
            cols = [c for c in ALL_COLUMNS if r.random() < 0.6] or ["weights"]
            self.emit({"do": "view", "field": "columns", "value": cols}, "ok")
        elif x < 0.55:
            self.emit({"do": "view", "field": "tab", "value": r.choice(["heatmaps", "pipeline"])}, "ok")
        elif x < 0.7:
            self.emit({"do": "view", "field": "shared_scale", "value": r.choice([True, False])}, "ok")
        elif x < 0.8:
            self.emit({"do": "view", "field": "colormap", "value": r.choice(["viridis", "cividis", "coolwarm"])}, "ok")
        elif x < 0.9:
            self.emit({"do": "view", "field": "theme", "value": r.choice(["dark", "light"])}, "ok")
        else:
            self.emit({"do": "view", "field": r.choice(["columns", "bogus"]), "value": ["nope"]}, "fail")

    def generate(self, count):
        r = self.rng
        kinds = [(self.gen_preset, 5), (self.gen_sentence, 9), (self.gen_add, 8), (self.gen_remove, 9),
                 (self.gen_rename, 4), (self.gen_move, 4), (self.gen_set, 16), (self.gen_model, 2),
                 (self.gen_set_cell, 9), (self.gen_d_in, 4), (self.gen_undo_redo, 5), (self.gen_select, 12),
                 (self.gen_open, 3), (self.gen_doc, 4), (self.gen_view, 3)]
        funcs, weights = zip(*kinds)
        # The slow presets, each at a fixed random place (gpt2-small in the first half, so the stream
        # also edits, undoes and leaves it).
        slow = []
        for name, times in self.slow_counts.items():
            for _ in range(times):
                slow.append((r.randrange(count // 10, count // 2 if name == "gpt2-small" else count * 9 // 10), name))
        slow.sort()
        # The context column shown from the start (a view command: the default workspace computes first).
        self.emit({"do": "view", "field": "columns", "value": ALL_COLUMNS}, "ok")
        tail = [{"do": "view", "field": "tab", "value": "heatmaps"}, {"do": "view", "field": "columns", "value": ALL_COLUMNS}]
        while len(self.commands) < count - len(tail):
            while slow and slow[0][0] <= len(self.commands):
                self.gen_slow_preset(slow.pop(0)[1])
            r.choices(funcs, weights)[0]()
        for c in tail:  # the final dump lists every map of the grid
            self.emit(c, "ok")
        return self.commands, self.expect


def sanitizer_log_files(pid):
    """Reports the app's sanitizers wrote to files (ASAN_OPTIONS=log_path=…, as tests/sanitizers/ctest-asan
    sets it): <log_path>.<pid> or, with log_exe_name, <log_path>.<exe>.<pid>."""
    found = []
    for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        for option in os.environ.get(var, "").split(":"):
            if option.startswith("log_path="):
                base = option[len("log_path="):]
                folder, stem = os.path.split(base)
                try:
                    names = os.listdir(folder or ".")
                except OSError:
                    continue
                for n in names:
                    if n.startswith(stem + ".") and n.endswith(f".{pid}"):
                        found.append(os.path.join(folder, n))
    return sorted(set(found))


def head_width(model, d_in):
    if model["variant"] == "simple":
        return d_in
    if model["variant"] == "multihead":
        return model["d_out"] // model["num_heads"]
    return model["d_out"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--app", required=True)
    ap.add_argument("--cli", required=True)  # unused; the same arguments as the other GUI tests
    ap.add_argument("--presets", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--timeout", type=float, default=280, help="seconds the app may take (a sanitizer build is slower)")
    ap.add_argument("--gpt2", type=int, default=1, help="times the gpt2-small preset is in the stream (0 or 1)")
    ap.add_argument("--medium", type=int, default=2, help="times the medium preset is in the stream (0 to 2)")
    ap.add_argument("--size", help="the app's --size WxH (default: the app's 1600x1000); smaller is faster")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (stream, dump, PNG)")
    args = ap.parse_args()

    start = time.time()
    tmp = tempfile.mkdtemp(prefix="attnscope-gui-stream-")
    files = workspace_files(tmp, args.presets)
    g.check(0 <= args.gpt2 <= 1 and 0 <= args.medium <= 2, "--gpt2 is 0 or 1, --medium 0 to 2")
    commands, expect = Stream(args.seed, args.presets, files,
                              {"gpt2-small": args.gpt2, "medium": args.medium}).generate(args.count)
    stream = os.path.join(tmp, f"stream-seed{args.seed}.json")
    with open(stream, "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(json.dumps(c, ensure_ascii=False) for c in commands) + "\n]\n")
    kinds = collections.Counter(c["do"] for c in commands)
    print(f"seed {args.seed}: {len(commands)} commands ({', '.join(f'{k} {n}' for k, n in kinds.most_common())})")
    print(f"stream: {stream}")

    png, dump = os.path.join(tmp, "out.png"), os.path.join(tmp, "dump.json")
    problems = []
    keep = args.keep
    with g.Xvfb() as x:
        env = g.isolated_env(x.display)
        cmd = [args.app, "--commands", stream, "--keep-going", "--screenshot", png, "--dump-layout", dump]
        if args.size:
            cmd += ["--size", args.size]
        t0 = time.time()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
        try:
            out, err = proc.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            print(f"FAIL: the app did not finish {len(commands)} commands within {args.timeout} s; stream kept in {tmp}")
            return 1
        finally:
            shutil.rmtree(env["HOME"], ignore_errors=True)
        p = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
        took = time.time() - t0
    print(f"app: exit {p.returncode} after {took:.1f} s ({1000 * took / len(commands):.1f} ms a command)")

    if p.returncode < 0:
        problems.append(f"the app crashed: signal {-p.returncode}")
    elif p.returncode != 0:
        problems.append(f"exit {p.returncode}, expected 0")
    lines = p.stderr.splitlines()
    for s in SANITIZER:
        if s in p.stderr:
            problems.append(f"a sanitizer report on stderr ({s!r})")
    for report in sanitizer_log_files(proc.pid):
        with open(report, errors="replace") as f:
            problems.append(f"a sanitizer report in {report}:\n" + f.read()[-4000:])
    refused = {}  # command index → (name, line)
    strange = []
    for line in lines:
        m = ERROR_LINE.match(line)
        if m:
            i, name = int(m.group(1)), m.group(2)
            if not (0 <= i < len(commands)) or commands[i]["do"] != name:
                strange.append(f"names the wrong command: {line}")
            elif i in refused:
                strange.append(f"reported twice: {line}")
            else:
                refused[i] = (name, line)
        elif line.strip() and not any(n.match(line) for n in NOISE):
            strange.append(line)
    if strange:
        problems.append(f"{len(strange)} unexpected stderr line(s):\n    " + "\n    ".join(strange[:40]))

    should_fail = [i for i, e in enumerate(expect) if e == "fail" and i not in refused]
    should_pass = [i for i, e in enumerate(expect) if e == "ok" and i in refused]
    if should_fail:
        problems.append(f"{len(should_fail)} command(s) that cannot apply were not reported, e.g.:\n    " +
                        "\n    ".join(f"{i}: {json.dumps(commands[i], ensure_ascii=False)}" for i in should_fail[:15]))
    if should_pass:
        problems.append(f"{len(should_pass)} command(s) that must apply were refused, e.g.:\n    " +
                        "\n    ".join(f"{refused[i][1]}  ← {json.dumps(commands[i], ensure_ascii=False)}" for i in should_pass[:15]))

    by_name = collections.Counter(name for name, _ in refused.values())
    print(f"refused: {len(refused)} of {len(commands)} ({', '.join(f'{k} {n}' for k, n in by_name.most_common())})")

    if p.returncode == 0:
        try:
            d = g.read_dump(dump)
            state = d["state"]
            ws = state["workspace"]
            tokens = state["tokens"]
            T = len(tokens)
            g.check(state.get("settled") is True, "the final dump is not settled")
            if state.get("engine_error"):
                print(f"note: the last edit is refused by the engine ({state['engine_error']}); "
                      f"the screen shows version {state['snapshot_version']} of {state['version']}")
            else:
                g.check(tokens == ws["tokens"], f"tokens on screen {tokens[:8]}… != workspace tokens {ws['tokens'][:8]}…")
                g.check(state["snapshot_version"] == state["version"], "the screen does not show the newest edit")
            g.check(d["heatmaps"], "no heatmap in the final dump")
            e = ws["embeddings"]
            d_in = len(e[0]) if isinstance(e, list) else e["cols"]
            w = head_width(ws["model"], d_in) if not state.get("engine_error") else None
            bad = []
            for m in d["heatmaps"]:
                if m["stage"] in SQUARE_STAGES and (m["rows"], m["cols"]) != (T, T):
                    bad.append(f"{m['id']}: {m['rows']}×{m['cols']}, expected {T}×{T}")
                elif m["stage"] == "context" and (m["rows"] != T or (w is not None and m["cols"] != w)):
                    bad.append(f"{m['id']}: {m['rows']}×{m['cols']}, expected {T}×{w}")
            g.check(not bad, "maps of the wrong shape:\n    " + "\n    ".join(bad))
            g.check(os.path.exists(png), "no screenshot written")
            print(f"final: T = {T}, variant {ws['model']['variant']}, {len(d['heatmaps'])} maps checked")
        except (g.Fail, OSError, ValueError, KeyError) as e:
            problems.append(f"final dump: {e}")

    print(f"total {time.time() - start:.1f} s")
    if problems:
        print(f"stderr ({len(lines)} lines), last 20:\n    " + "\n    ".join(lines[-20:]))
        print(f"FAIL (seed {args.seed}, stream kept in {tmp}):")
        for problem in problems:
            print("  - " + problem)
        return 1
    if not keep:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
