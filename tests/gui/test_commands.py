"""`attnscope --commands`: the reproductions of the crash when the number of tokens went down.

The app used to crash whenever the token count shrank: the views mixed the live workspace's labels
with an older trace's row count. Each scenario below is a --commands run with --screenshot and
--dump-layout on a private Xvfb display. It must exit 0 with no "error" on stderr, and in the final
dump: the result on screen is of the newest edit (settled, no engine error, state.tokens equal to
state.workspace.tokens), the tokens are the ones the scenario expects, every square map of the grid
(scores … dropped_weights) is T × T and the context map T × w (w: the head's width), with
T = len(state.tokens). Every scenario shows the context column too (a view command first and last:
a preset or a file brings its own view).

Also: removing the last token is refused (with --keep-going: reported, run goes on, exit 0;
without: exit 2 and the exact `error: command N (remove_token): …` line); a bad command file
(unknown "do", missing argument, wrong type, not JSON, not an array) gives exit 2 and one `error:`
line; an edit the model refuses ends the run with exit 2 naming its command.

Usage: test_commands.py --app APP --cli CLI --presets PRESETS_DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gui_common as g  # noqa: E402

SQUARE_STAGES = {"scores", "scaled_scores", "masked_scores", "weights", "dropout_mask", "dropped_weights"}
ALL_COLUMNS = g.DEFAULT_STAGES + ["context"]
SHOW_ALL = {"do": "view", "field": "columns", "value": ALL_COLUMNS}
BOOK = ["Your", "journey", "starts", "with", "one", "step"]
TEN = "the quick brown fox jumps over the lazy dog today"
TEN_TOKENS = TEN.split()
RUN_TIMEOUT = 120  # seconds for one run; gpt2-small computes for a few seconds


def head_width(model, d_in):
    """attnscope's headWidth(): d_in for 'simple', d_out / num_heads for 'multihead', else d_out."""
    if model["variant"] == "simple":
        return d_in
    if model["variant"] == "multihead":
        return model["d_out"] // model["num_heads"]
    return model["d_out"]


def head_count(model):
    return model.get("num_heads", 1) if model["variant"] in ("multihead", "multihead_wrapper") else 1


def input_width(ws):
    e = ws["embeddings"]
    if isinstance(e, dict):  # {"random": …, "rows": T, "cols": d_in}
        return e["cols"]
    return len(e[0]) if e else 0


class Runner:
    def __init__(self, app, display, tmp):
        self.app = app
        self.tmp = tmp
        self.env = g.isolated_env(display)
        self.count = 0

    def close(self):
        shutil.rmtree(self.env["HOME"], ignore_errors=True)

    def write(self, name, commands):
        """Writes a command file: a list is dumped as JSON, a str is written as it is."""
        path = os.path.join(self.tmp, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(commands if isinstance(commands, str) else json.dumps(commands, ensure_ascii=False, indent=1))
        return path

    def run(self, name, commands, keep_going=False, extra=()):
        """One --commands run with --screenshot and --dump-layout. Returns (process, dump or None, png)."""
        self.count += 1
        path = self.write(name, commands)
        png, dump = os.path.join(self.tmp, name + ".png"), os.path.join(self.tmp, name + ".layout.json")
        for p in (png, dump):
            if os.path.exists(p):
                os.remove(p)
        cmd = [self.app, "--commands", path, "--screenshot", png, "--dump-layout", dump, *extra]
        if keep_going:
            cmd.append("--keep-going")
        start = time.time()
        try:
            p = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise g.Fail(f"{name}: no exit within {RUN_TIMEOUT} s (commands: {path})")
        took = time.time() - start
        if p.returncode < 0:
            raise g.Fail(f"{name}: the app died of signal {-p.returncode} (commands: {path})\n"
                         f"  stderr: {p.stderr.strip()[-2000:]}")
        d = None
        if os.path.exists(dump):
            d = g.read_dump(dump)
        print(f"  {name}: exit {p.returncode} in {took:.1f} s")
        return p, d, png, path


def error_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def check_clean(name, p, path):
    g.check(p.returncode == 0, f"{name}: exit {p.returncode}, expected 0 (commands: {path})\n"
                               f"  stderr: {p.stderr.strip()}")
    g.check("error" not in p.stderr.lower(), f"{name}: stderr mentions an error (commands: {path}):\n  {p.stderr.strip()}")


def check_final(name, dump, png, expect_tokens, path, expect_heads=None, expect_width=None):
    """The final dump: the newest edit on screen, its tokens, and every map T × T (context T × w)."""
    g.check(dump is not None, f"{name}: no layout dump written (commands: {path})")
    g.check(os.path.exists(png), f"{name}: no screenshot written (commands: {path})")
    state = dump["state"]
    ws = state["workspace"]
    g.check(state.get("settled") is True, f"{name}: final dump not settled (commands: {path})")
    g.check(state.get("engine_error") == "", f"{name}: engine error {state.get('engine_error')!r} (commands: {path})")
    g.check(state.get("snapshot_version") == state.get("version"),
            f"{name}: snapshot_version {state.get('snapshot_version')} != version {state.get('version')} "
            f"(commands: {path})")
    tokens = state.get("tokens")
    g.check(tokens == ws["tokens"], f"{name}: tokens on screen {tokens} != workspace tokens {ws['tokens']} "
                                    f"(commands: {path})")
    g.check(tokens == expect_tokens, f"{name}: tokens {tokens}, expected {expect_tokens} (commands: {path})")
    T = len(tokens)
    model = ws["model"]
    H = head_count(model)
    w = head_width(model, input_width(ws))
    if expect_heads is not None:
        g.check(H == expect_heads, f"{name}: {H} heads in the workspace, expected {expect_heads} (commands: {path})")
    if expect_width is not None:
        g.check(w == expect_width, f"{name}: head width {w}, expected {expect_width} (commands: {path})")
    maps = dump["heatmaps"]
    g.check(maps, f"{name}: no heatmap in the dump (commands: {path})")
    stages = {m["stage"] for m in maps}
    g.check("context" in stages and "weights" in stages,
            f"{name}: maps of stages {sorted(stages)}; expected weights and context among them (commands: {path})")
    bad = []
    for m in maps:
        if not 0 <= m["head"] < H:
            bad.append(f"{m['id']}: head {m['head']} of {H}")
        if m["stage"] in SQUARE_STAGES:
            if (m["rows"], m["cols"]) != (T, T):
                bad.append(f"{m['id']}: {m['rows']}×{m['cols']}, expected {T}×{T}")
        elif m["stage"] == "context":
            if (m["rows"], m["cols"]) != (T, w):
                bad.append(f"{m['id']}: {m['rows']}×{m['cols']}, expected {T}×{w}")
        else:
            bad.append(f"{m['id']}: unexpected stage {m['stage']!r}")
    g.check(not bad, f"{name}: maps of the wrong shape (commands: {path}):\n    " + "\n    ".join(bad))
    g.check(g.load_png(png).size == (1600, 1000), f"{name}: the screenshot is not 1600×1000")
    return state


def shown(commands):
    """The scenario with the context column shown from the start and again at the end."""
    return [SHOW_ALL, *commands, SHOW_ALL]


def scenarios(presets, tmp):
    """(name, commands, expected tokens, expected heads or None, expected head width or None)."""
    def preset_tokens(name):
        with open(os.path.join(presets, name + ".json")) as f:
            return json.load(f)["tokens"]

    six = os.path.join(tmp, "six tokens.json")  # a 6-token workspace file to open
    shutil.copy(os.path.join(presets, "multihead.json"), six)
    removes = [{"do": "remove_token", "index": i} for i in (5, 0, 1, 2, 0)]  # last, first, middle …
    variants = ["simple", "self_attention_v1", "self_attention_v2", "causal", "multihead_wrapper", "multihead", "simple"]
    return [
        ("book_then_short_sentence", [{"do": "book_example"}, {"do": "sentence", "text": "the cat sat"}],
         ["the", "cat", "sat"], None, None),
        ("ten_words_then_undo", [{"do": "sentence", "text": TEN}, {"do": "undo"}], BOOK, None, None),
        ("ten_tokens_then_new", [{"do": "sentence", "text": TEN}, {"do": "new"}], BOOK, None, None),
        ("ten_tokens_then_preset_multihead", [{"do": "sentence", "text": TEN}, {"do": "preset", "name": "multihead"}],
         preset_tokens("multihead"), 2, 1),
        ("ten_tokens_book_example_undo", [{"do": "sentence", "text": TEN}, {"do": "book_example"}, {"do": "undo"}],
         TEN_TOKENS, None, None),
        ("gpt2_then_open_six", [{"do": "preset", "name": "gpt2-small"}, {"do": "open", "path": six}],
         preset_tokens("multihead"), 2, 1),
        ("remove_down_to_one", [{"do": "book_example"}, *removes], ["with"], None, None),
        ("d_in_3_to_1_multihead", [{"do": "preset", "name": "multihead"}, {"do": "d_in", "value": 2},
                                   {"do": "d_in", "value": 1}], preset_tokens("multihead"), 2, 1),
        ("d_in_3_to_1_simple", [{"do": "preset", "name": "simple"}, {"do": "d_in", "value": 2},
                                {"do": "d_in", "value": 1}], preset_tokens("simple"), 1, 1),
        ("heads_and_d_out_down", [{"do": "preset", "name": "multihead"},
                                  {"do": "model", "fields": {"variant": "multihead", "num_heads": 4, "d_out": 8}},
                                  {"do": "set", "field": "num_heads", "value": 2},
                                  {"do": "set", "field": "d_out", "value": 2}], preset_tokens("multihead"), 2, 1),
        ("all_six_variants", [{"do": "preset", "name": "multihead"},
                              {"do": "model", "fields": {"num_heads": 2, "d_out": 4}},
                              *[{"do": "set", "field": "variant", "value": v} for v in variants]],
         preset_tokens("multihead"), 1, 3),
        ("selections_past_the_end", [{"do": "preset", "name": "multihead"},
                                     {"do": "model", "fields": {"num_heads": 4, "d_out": 8, "dropout": 0.5, "batch_size": 3}},
                                     {"do": "select_token", "index": 5}, {"do": "select_key", "index": 5},
                                     {"do": "select_head", "index": 3}, {"do": "select_batch", "index": 2},
                                     {"do": "view", "field": "tab", "value": "pipeline"},
                                     {"do": "sentence", "text": "a b"}, {"do": "set", "field": "num_heads", "value": 1},
                                     {"do": "set", "field": "batch_size", "value": 1},
                                     {"do": "screenshot", "path": os.path.join(tmp, "mid.png")},
                                     {"do": "view", "field": "tab", "value": "heatmaps"},
                                     {"do": "select_token", "index": 1}, {"do": "select_key", "index": 1},
                                     {"do": "remove_token", "index": 1}],
         ["a"], 1, 8),
        ("gpt2_then_simple", [{"do": "preset", "name": "gpt2-small"}, {"do": "preset", "name": "simple"}],
         preset_tokens("simple"), 1, 3),
    ]


def check_remove_last(runner, presets):
    """One remove more than possible: refused. --keep-going reports it and goes on (exit 0, the maps of
    the one token left); without it the run stops with exit 2 and the exact error line."""
    commands = shown([{"do": "book_example"}, *[{"do": "remove_token", "index": 0}] * 5,
                      {"do": "remove_token", "index": 0}])
    n = len(commands) - 2  # the extra remove, before the closing view command
    want = f"error: command {n} (remove_token): tokens: cannot remove the last token (attention needs at least one)"

    p, dump, png, path = runner.run("remove_last_keep_going", commands, keep_going=True)
    g.check(p.returncode == 0, f"remove_last_keep_going: exit {p.returncode}, expected 0 (commands: {path})\n"
                               f"  stderr: {p.stderr.strip()}")
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    g.check(lines == [want], f"remove_last_keep_going: stderr {lines}, expected [{want!r}] (commands: {path})")
    check_final("remove_last_keep_going", dump, png, ["step"], path)

    p, dump, png, path = runner.run("remove_last_stop", commands)
    g.check(p.returncode == 2, f"remove_last_stop: exit {p.returncode}, expected 2 (commands: {path})")
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    g.check(lines == [want], f"remove_last_stop: stderr {lines}, expected [{want!r}] (commands: {path})")
    g.check(not os.path.exists(png), "remove_last_stop: a screenshot was written although the run failed")


def check_bad_files(runner, presets):
    """A command file that cannot be read: exit 2, one `error:` line naming what is wrong, no window."""
    cases = [
        ("bad_unknown_do", [{"do": "undo"}, {"do": "frobnicate", "x": 1}], ["command 1 (frobnicate)", "unknown command 'frobnicate'"]),
        ("bad_missing_argument", [{"do": "book_example"}, {"do": "remove_token"}], ["command 1 (remove_token)", "index: required"]),
        ("bad_wrong_type", [{"do": "remove_token", "index": "two"}], ["command 0 (remove_token)", "index: expected an integer"]),
        ("bad_no_do", [{"undo": True}], ["command 0", "\"do\": required"]),
        ("bad_not_json", '[{"do": "undo"}, {"do": ', ["not valid JSON"]),
        ("bad_not_array", '{"do": "undo"}', ["expected a JSON array of commands"]),
    ]
    for name, commands, words in cases:
        p, dump, png, path = runner.run(name, commands)
        g.check(p.returncode == 2, f"{name}: exit {p.returncode}, expected 2 (commands: {path})")
        errors = error_lines(p.stderr)
        g.check(len(errors) == 1, f"{name}: {len(errors)} `error:` lines, expected 1 (commands: {path}):\n  "
                                  f"{p.stderr.strip()}")
        for word in words:
            g.check(word in errors[0], f"{name}: {errors[0]!r} does not say {word!r} (commands: {path})")
        g.check(not os.path.exists(png), f"{name}: a screenshot was written from a bad command file")

    # An edit the model refuses: multihead d_out 2 cannot have 3 heads. Without --keep-going: exit 2.
    name = "refused_num_heads_3"
    p, dump, png, path = runner.run(name, [{"do": "set", "field": "num_heads", "value": 3}],
                                    extra=("--open", os.path.join(presets, "multihead.json")))
    g.check(p.returncode == 2, f"{name}: exit {p.returncode}, expected 2 (commands: {path})")
    errors = error_lines(p.stderr)
    g.check(len(errors) == 1 and errors[0].startswith("error: command 0 (set): ") and "divisible" in errors[0],
            f"{name}: expected one 'error: command 0 (set): … divisible …' line, got (commands: {path}):\n  "
            f"{p.stderr.strip()}")
    g.check(not os.path.exists(png), f"{name}: a screenshot was written although the run failed")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--app", required=True)
    ap.add_argument("--cli", required=True)  # unused; the same arguments as the other GUI tests
    ap.add_argument("--presets", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (command files, dumps)")
    args = ap.parse_args()
    start = time.time()
    tmp = tempfile.mkdtemp(prefix="attnscope-gui-commands-")
    failed = []
    runner = None
    try:
        with g.Xvfb() as x:
            runner = Runner(args.app, x.display, tmp)
            try:
                for name, commands, tokens, heads, width in scenarios(args.presets, tmp):
                    try:
                        p, dump, png, path = runner.run(name, shown(commands))
                        check_clean(name, p, path)
                        check_final(name, dump, png, tokens, path, heads, width)
                        for c in commands:  # screenshots the scenario takes on the way
                            if c["do"] == "screenshot":
                                g.check(os.path.exists(c["path"]), f"{name}: {c['path']} was not written")
                    except g.Fail as e:
                        failed.append(str(e))
                        print("FAIL", e)
                for check in (check_remove_last, check_bad_files):
                    try:
                        check(runner, args.presets)
                    except g.Fail as e:
                        failed.append(str(e))
                        print("FAIL", e)
            finally:
                runner.close()
    finally:
        if failed or args.keep:
            print(f"command files and dumps kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{runner.count if runner else 0} runs in {time.time() - start:.1f} s")
    if failed:
        print(f"FAILED: {len(failed)} check(s)")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
