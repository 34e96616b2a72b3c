# Drives the interactive app with xdotool on a private Xvfb, reading its --dump-layout file to find
# controls and to watch its state, and its F12 screenshots to see what it drew:
#  - num_heads "−"/"+" on the multihead preset (2 → 1 → 2): the state and the heads drawn follow;
#  - F12: the PNG's weights maps are the colours of attnscope-cli's trace of the workspace the app
#    reports, and the PNG carries that workspace in its text chunk;
#  - a click on row 3 of a weights map selects token 3, and the next screenshot outlines that row
#    (not the previous one) in the theme's selection colour;
#  - the sentence field shows the tokens, keeps words typed into it through "+ token", and shows
#    the tokens again after "make tokens" and "book example".
# Every step asserts the change it asked for and fails after STEP_TIMEOUT seconds without it.
# Those three use the real mouse and keyboard because the input path is what they test (a button,
# a heatmap row click, the F12 key). Two checks only need the state a click leads to, so they run
# headless with `--commands` (the command the button pushes) and check the PNG and the dump:
#  - "re-roll" (`set seed`, a random seed ≠ the current one, as the button picks): the seed changes,
#    the weights map's pixels change, and the new pixels are the colours of attnscope-cli's trace of
#    the new workspace (also carried in the PNG's text chunk); the PNG before is a `screenshot`
#    command in the same run;
#  - num_heads "+" on the wrapper (`set num_heads 3`): 2 → 3, and the heads drawn follow.
# And the real mouse once more: the "masks: MKL" button beside dropout switches the stream both ways,
# the dropped weights drawn as the CLI traces each, the two masks different.
# Usage: test_interaction.py APP CLI ASSETS_DIR
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gui_common as g  # noqa: E402

STEP_TIMEOUT = 30


class App:
    """One interactive attnscope process on `display`, with its layout dump and screenshot folder."""

    def __init__(self, app, preset_path, display, tmp, tag):
        self.display = display
        self.dump_path = os.path.join(tmp, tag + ".layout.json")
        self.shots = os.path.join(tmp, tag + "-shots")
        self.log = open(os.path.join(tmp, tag + ".log"), "w+")
        self.env = g.isolated_env(display)
        self.proc = subprocess.Popen(
            [app, "--open", preset_path, "--dump-layout", self.dump_path, "--screenshot-dir", self.shots, "--selection"],
            env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        self.wid = None

    def alive_or_fail(self):
        if self.proc.poll() is not None:
            self.log.seek(0)
            raise g.Fail(f"the app exited with code {self.proc.returncode}: {self.log.read().strip()}")

    def dump(self):
        self.alive_or_fail()
        return g.read_dump(self.dump_path)

    def wait(self, predicate, what):
        def probe():
            d = self.dump()
            return d if predicate(d) else None
        return g.wait_for(probe, STEP_TIMEOUT, what)

    def wait_settled(self, predicate, what):
        """Waits for predicate on a dump whose engine is idle, error-free and has drawn its maps."""
        return self.wait(lambda d: not d["state"]["computing"] and d["state"]["engine_error"] == ""
                         and d["heatmaps"] and predicate(d), what)

    def xdo(self, *args):
        self.alive_or_fail()
        p = subprocess.run(["xdotool", *args], env=self.env, capture_output=True, text=True, timeout=10)
        if p.returncode != 0:
            raise g.Fail(f"xdotool {' '.join(args)} failed: {p.stderr.strip()}")
        return p.stdout

    def find_window(self):
        def search():
            p = subprocess.run(["xdotool", "search", "--name", "attnscope"], env=self.env,
                               capture_output=True, text=True, timeout=10)
            ids = p.stdout.split()
            return ids[0] if ids else None
        self.wid = g.wait_for(search, STEP_TIMEOUT, "a window named 'attnscope'")
        self.wait_settled(lambda d: True, "the first trace to be drawn")

    def move(self, x, y):
        self.xdo("mousemove", "--window", self.wid, str(int(round(x))), str(int(round(y))))
        time.sleep(0.1)

    def click(self, x, y):
        self.move(x, y)
        self.xdo("mousedown", "1")
        time.sleep(0.08)
        self.xdo("mouseup", "1")
        time.sleep(0.05)

    def key(self, combo):
        """Holds the keys for a moment: ImGui 1.86 looks at the keys' state once a frame."""
        self.xdo("keydown", combo)
        time.sleep(0.1)
        self.xdo("keyup", combo)
        time.sleep(0.1)

    def click_widget(self, name):
        d = self.dump()
        g.check(name in d["widgets"], f"widget {name!r} is not in the layout dump ({sorted(d['widgets'])})")
        r = d["widgets"][name]
        self.click(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)

    def screenshot(self):
        """F12; returns (png path, the dump of the frame after it)."""
        before = self.dump()["state"]["last_screenshot"]
        self.xdo("windowfocus", self.wid)
        self.xdo("key", "F12")
        d = self.wait(lambda d: d["state"]["last_screenshot"] not in ("", before)
                      and os.path.exists(d["state"]["last_screenshot"]), "F12 to save a new screenshot")
        return d["state"]["last_screenshot"], d

    def stop(self):
        g.stop(self.proc)
        self.log.close()


def heads_drawn(d):
    return sorted({m["head"] for m in d["heatmaps"]})


def weights_maps(d, stage="weights"):
    """The weights maps wholly in view (the dump also lists maps scrolled away, in_view false, and
    the grid scrolls rather than drop the notebook's decimals, so a map may show only its top)."""
    area = d["panels"]["heatmaps"]

    def whole(c):
        return c["y"] >= area["y"] - 1 and c["y"] + c["h"] <= area["y"] + area["h"] + 1 and \
            c["x"] >= area["x"] - 1 and c["x"] + c["w"] <= area["x"] + area["w"] + 1
    return [m for m in d["heatmaps"] if m["stage"] == stage and m.get("in_view", True) and whole(m["cells"])]


def step_heads(app, want_before, button, want_after):
    d = app.wait_settled(lambda d: d["state"]["num_heads"] == want_before, f"num_heads == {want_before}")
    g.check(heads_drawn(d) == list(range(want_before)), f"before '{button}': heads drawn {heads_drawn(d)}")
    version = d["state"]["trace_version"]
    app.click_widget(button)
    d = app.wait_settled(lambda d: d["state"]["num_heads"] == want_after and d["state"]["trace_version"] > version
                         and heads_drawn(d) == list(range(want_after)),
                         f"'{button}' to change num_heads {want_before} → {want_after} and draw {want_after} heads")
    print(f"{button}: num_heads {want_before} → {d['state']['num_heads']}, heads drawn {heads_drawn(d)}")


def weights_pixels(img, entry):
    rgb = img.convert("RGB")
    return [rgb.getpixel(g.cell_sample_point(entry["cells"], entry["cell"], i, j))
            for i in range(entry["rows"]) for j in range(entry["cols"])]


def check_map_colours(png, d, cli, assets, tmp, label, stage="weights"):
    """The `stage` maps in `png` against the CLI's trace of the workspace the dump reports."""
    trace = g.trace_workspace(cli, d["state"]["workspace"], tmp)
    view = d["state"]["workspace"].get("view", {})
    checker = g.PixelChecker(assets, d["state"]["theme"])
    img = g.load_png(png)
    for entry in weights_maps(d, stage):
        m = g.stage_matrix(trace, entry["batch"], entry["head"], entry["stage"])
        cmap, lo, hi = g.expected_map(m, entry["stage"], view)
        checker.check_cells(img, entry, m, cmap, lo, hi)
    g.check(checker.checked > 0, f"{label}: no {stage} cells sampled")
    g.check(not checker.failures, f"{label}: pixels differ from the CLI's trace:\n  " + "\n  ".join(checker.failures[:10]))
    print(f"{label}: {checker.checked} {stage} cells match the CLI trace (worst channel difference {checker.worst})")
    return img


def run_commands(app_path, display, tmp, name, commands, *args):
    """A headless run: attnscope ARGS --commands NAME.json --screenshot NAME.png --dump-layout
    NAME.layout.json. Must exit 0 with nothing about an error on stderr, the newest edit's result on
    screen. Returns (png, dump)."""
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(commands, f)
    png, dump = os.path.join(tmp, name + ".png"), os.path.join(tmp, name + ".layout.json")
    cmd = [app_path, *args, "--commands", path, "--screenshot", png, "--dump-layout", dump]
    env = g.isolated_env(display)
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT * 2)
    except subprocess.TimeoutExpired:
        raise g.Fail(f"{name}: no exit within {STEP_TIMEOUT * 2} s (commands: {path})")
    finally:
        shutil.rmtree(env["HOME"], ignore_errors=True)
    g.check(p.returncode == 0 and "error" not in p.stderr.lower(),
            f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
    g.check("saved" in p.stdout, f"no 'saved …' line on stdout: {p.stdout!r}")
    d = g.read_dump(dump)
    g.check(d["state"].get("settled") is True and not d["state"]["computing"] and d["state"]["engine_error"] == ""
            and d["heatmaps"], f"{name}: the final dump does not show the newest edit's result (commands: {path})")
    return png, d


def visibly_different_seed(preset_path, seed_a, cli, tmp):
    """A random seed whose head-1 weights differ from seed_a's by at least 0.05 somewhere, by the CLI's
    trace: some seeds give weights within 0.01 of each other (e.g. 123 and 5205 on the multihead
    preset), which no colour map can tell apart."""
    with open(preset_path) as f:
        ws = json.load(f)
    def weights(seed):
        ws["model"]["seed"] = seed
        return g.stage_matrix(g.trace_workspace(cli, ws, tmp), 0, 0, "weights")
    before = weights(seed_a)
    for _ in range(50):
        seed_b = random.randrange(100000)
        if seed_b != seed_a and float(abs(weights(seed_b) - before).max()) >= 0.05:
            return seed_b
    raise g.Fail(f"no seed in 50 tries changes the head-1 weights of {preset_path} by 0.05")


def step_reroll(app_path, preset_path, display, cli, assets, tmp):
    """What 're-roll' pushes, `set seed` to a new random seed, headless: a `screenshot` command
    before it, --screenshot after it."""
    with open(preset_path) as f:
        seed_a = json.load(f)["model"]["seed"]
    seed_b = visibly_different_seed(preset_path, seed_a, cli, tmp)
    png_a = os.path.join(tmp, "before-reroll.png")
    png_b, d_b = run_commands(app_path, display, tmp, "reroll",
                              [{"do": "screenshot", "path": png_a}, {"do": "set", "field": "seed", "value": seed_b}],
                              "--open", preset_path)
    # The PNG before: the layout of the dump after (a seed changes no shape); its own workspace.
    img_a = g.load_png(png_a)
    ws_a = json.loads(img_a.info["attnscope-workspace"])
    g.check(ws_a["model"]["seed"] == seed_a, f"the PNG before re-roll carries seed {ws_a['model']['seed']}, not {seed_a}")
    d_a = {"heatmaps": d_b["heatmaps"], "panels": d_b["panels"], "state": dict(d_b["state"], workspace=ws_a)}
    img_a = check_map_colours(png_a, d_a, cli, assets, tmp, f"before re-roll (seed {seed_a})")
    g.check(d_b["state"]["seed"] == seed_b, f"state.seed is {d_b['state']['seed']} after re-roll, expected {seed_b}")
    g.check(d_b["state"]["workspace"]["model"]["seed"] == seed_b, "state.seed and the workspace's seed disagree")
    img_b = check_map_colours(png_b, d_b, cli, assets, tmp, f"after re-roll (seed {seed_b})")
    g.check(img_a.size == img_b.size, f"the PNGs before and after re-roll differ in size: {img_a.size}, {img_b.size}")
    entry = next(m for m in weights_maps(d_b) if m["head"] == 0)
    changed = sum(g.channel_diff(p, q) > 2 for p, q in zip(weights_pixels(img_a, entry), weights_pixels(img_b, entry)))
    g.check(changed > 0, f"re-roll {seed_a} → {seed_b}: the head-1 weights map looks the same as before")
    embedded = img_b.info.get("attnscope-workspace")
    g.check(embedded is not None, "the PNG after re-roll carries no 'attnscope-workspace' text chunk")
    g.check(json.loads(embedded)["model"]["seed"] == seed_b, "the PNG's embedded workspace has the old seed")
    print(f"re-roll: seed {seed_a} → {seed_b}, {changed} of {len(weights_pixels(img_a, entry))} weights cells changed colour")


def step_heads_commands(app_path, preset_path, display, tmp, want_before, want_after):
    """What num_heads "+"/"−" pushes, `set num_heads`, headless; the preset alone for the state before."""
    _, d = run_commands(app_path, display, tmp, "heads-before", [], "--open", preset_path)
    g.check(d["state"]["num_heads"] == want_before and heads_drawn(d) == list(range(want_before)),
            f"before: num_heads {d['state']['num_heads']}, heads drawn {heads_drawn(d)}, expected {want_before}")
    _, d = run_commands(app_path, display, tmp, "heads-after", [{"do": "set", "field": "num_heads", "value": want_after}],
                        "--open", preset_path)
    g.check(d["state"]["num_heads"] == want_after and heads_drawn(d) == list(range(want_after)),
            f"set num_heads {want_after}: num_heads {d['state']['num_heads']}, heads drawn {heads_drawn(d)}")
    print(f"set num_heads {want_after} ({os.path.basename(preset_path)}): num_heads {want_before} → "
          f"{d['state']['num_heads']}, heads drawn {heads_drawn(d)}")


def step_dropout_stream(app_path, assets, cli, display, tmp):
    """The "masks: MKL" button beside dropout: one click gives the masks of torch without MKL (the
    field, the button's text, the drawn dropped weights, which differ) and another brings MKL's back."""
    with open(os.path.join(assets, "presets", "causal_dropout.json")) as f:
        ws = json.load(f)
    ws.setdefault("view", {})["columns"] = ["dropped_weights"]
    path = os.path.join(tmp, "causal_dropout.json")
    with open(path, "w") as f:
        json.dump(ws, f)
    app = App(app_path, path, display, tmp, "dropout-stream")
    try:
        app.find_window()
        shots = {}
        for want in ("mkl", "default", "mkl"):
            d = app.wait_settled(lambda d: d["state"]["workspace"]["model"]["dropout_rng"] == want,
                                 f"the dropout stream to be {want}")
            png, d = app.screenshot()
            check_map_colours(png, d, cli, assets, tmp, f"masks of '{want}'", "dropped_weights")
            trace = g.trace_workspace(cli, d["state"]["workspace"], tmp)
            shots.setdefault(want, g.stage_matrix(trace, 0, 0, "dropout_mask"))
            if want != "mkl" or "default" not in shots:
                app.click_widget("dropout_rng")
        g.check(not (shots["mkl"] == shots["default"]).all(), "the two streams drew the same mask")
        print("masks button: MKL → no MKL → MKL, the dropped weights drawn as the CLI traces each")
    finally:
        app.stop()


def step_f12(app, cli, assets, tmp):
    """F12: the PNG's weights maps are the CLI's colours for the workspace the app reports, and the
    PNG carries that workspace."""
    png, d = app.screenshot()
    img = check_map_colours(png, d, cli, assets, tmp, f"F12 (seed {d['state']['seed']})")
    embedded = img.info.get("attnscope-workspace")
    g.check(embedded is not None, "the F12 PNG carries no 'attnscope-workspace' text chunk")
    carried = json.loads(embedded)
    g.check(carried["model"] == d["state"]["workspace"]["model"] and carried["embeddings"] == d["state"]["workspace"]["embeddings"],
            "the F12 PNG's embedded workspace is not the app's")
    print(f"F12: {os.path.basename(png)} carries the app's workspace (seed {carried['model']['seed']})")
    return png, d


def outlined(img, entry, row, colour, tol=12):
    """Whether row `row` of the map has the selection colour just outside its left and right edges."""
    rgb = img.convert("RGB")
    c = entry["cells"]
    y = int(c["y"] + (row + 0.5) * entry["cell"])

    def near(x0, x1):
        return any(g.channel_diff(rgb.getpixel((x, y)), colour) <= tol for x in range(x0, x1))
    left, right = int(c["x"]), int(c["x"] + c["w"])
    return near(left - 3, left + 2) and near(right - 2, right + 3)


def step_select_row(app, png_before, d_before, row):
    theme = d_before["state"]["theme"]
    colour = g.SELECTION[theme]
    old = d_before["state"]["token"]
    g.check(old != row, f"token {row} is already selected; pick another row")
    img = g.load_png(png_before)
    for e in weights_maps(d_before):  # the detector sees the current selection and not the other row
        g.check(outlined(img, e, old, colour), f"{e['id']}: no {colour} outline around the selected row {old}")
        g.check(not outlined(img, e, row, colour), f"{e['id']}: row {row} outlined before it was clicked")
    target = next(m for m in weights_maps(d_before) if m["head"] == 0)
    c = target["cells"]
    app.click(c["x"] + c["w"] / 2, c["y"] + (row + 0.5) * target["cell"])
    app.wait_settled(lambda d: d["state"]["token"] == row, f"a click on row {row} to select token {row}")
    status = app.dump()["panels"]["status"]
    app.move(status["x"] + 20, status["y"] + status["h"] / 2)  # no hover outline or tooltip in the shot
    png, d = app.screenshot()
    g.check(d["state"]["token"] == row, f"state.token is {d['state']['token']} after the click, expected {row}")
    img = g.load_png(png)
    for e in weights_maps(d):
        g.check(outlined(img, e, row, colour), f"{e['id']}: row {row} is not outlined in {colour} after the click")
        g.check(not outlined(img, e, old, colour), f"{e['id']}: the old row {old} is still outlined")
    print(f"row click: token {old} → {row}, outline {colour} moved in {len(weights_maps(d))} weights maps")


def step_sentence_field(app):
    """The sentence field shows the tokens and follows them, but keeps words being typed: typed
    words survive an edit that changes the tokens ("+ token"), "make tokens" makes them the tokens,
    and the book example brings its sentence back."""
    d = app.wait_settled(lambda d: True, "the app to settle")
    tokens = d["state"]["tokens"]
    g.check(d["state"]["sentence"] == " ".join(tokens),
            f"the sentence field shows {d['state']['sentence']!r}, not the tokens {tokens}")
    app.click_widget("sentence")
    time.sleep(0.3)  # a frame for the field to take the keyboard
    app.key("ctrl+a")
    app.xdo("type", "--delay", "60", "hello there")
    time.sleep(0.2)
    status = app.dump()["panels"]["status"]
    app.click(status["x"] + 20, status["y"] + status["h"] / 2)  # leaves the field without making tokens
    app.click_widget("add_token")
    d = app.wait_settled(lambda d: len(d["state"]["tokens"]) == len(tokens) + 1, "'+ token' to add a token")
    g.check(d["state"]["sentence"] == "hello there",
            f"after '+ token' the field shows {d['state']['sentence']!r}: the typed words were lost")
    app.click_widget("make_tokens")
    d = app.wait_settled(lambda d: d["state"]["tokens"] == ["hello", "there"], "'make tokens' to make 'hello there' the tokens")
    g.check(d["state"]["sentence"] == "hello there", f"after 'make tokens' the field shows {d['state']['sentence']!r}")
    app.click_widget("book_example")
    book = "Your journey starts with one step"
    d = app.wait_settled(lambda d: d["state"]["tokens"] == book.split(), "'book example' to bring the book's tokens")
    g.check(d["state"]["sentence"] == book, f"after 'book example' the field shows {d['state']['sentence']!r}")
    print(f"sentence field: {' '.join(tokens)!r}; typed words kept through '+ token'; 'make tokens'; the book's sentence back")


def step_sentence_commands(app_path, display, tmp):
    """Headless: the field follows a renamed token, and shows nothing for more tokens than a
    sentence holds (GPT-2's 1024 used to sit under the book's sentence)."""
    _, d = run_commands(app_path, display, tmp, "sentence-rename",
                        [{"do": "book_example"}, {"do": "rename_token", "index": 0, "name": "My"}])
    g.check(d["state"]["sentence"] == "My journey starts with one step",
            f"after renaming token 1 the field shows {d['state']['sentence']!r}")
    words = " ".join(f"w{i}" for i in range(40))
    _, d = run_commands(app_path, display, tmp, "sentence-long", [{"do": "sentence", "text": words}])
    g.check(len(d["state"]["tokens"]) == 40 and d["state"]["sentence"] == "",
            f"40 tokens: the field shows {d['state']['sentence'][:60]!r}…, expected it empty")
    print("sentence field: follows a renamed token; empty for 40 tokens")
    # The font draws the letters of European words (they were '?' beyond Latin-1 and Greek), and
    # the panel says when a token has characters it cannot draw (CJK: DejaVu Sans has none).
    _, d = run_commands(app_path, display, tmp, "sentence-letters", [{"do": "sentence", "text": "Łódź Straße češtině Привет"}])
    g.check(d["state"]["missing_glyphs"] == 0, f"Łódź Straße češtině Привет: {d['state']['missing_glyphs']} characters without a glyph")
    _, d = run_commands(app_path, display, tmp, "sentence-cjk", [{"do": "sentence", "text": "你好 world"}])
    g.check(d["state"]["missing_glyphs"] == 0, f"你好 world: {d['state']['missing_glyphs']} characters without a glyph, expected 0 (CJK from Droid Sans Fallback)")
    print("sentence field: Latin Extended-A and Cyrillic drawn; 你好 drawn from the CJK fallback font")


def main():
    if len(sys.argv) != 4:
        print("usage: test_interaction.py APP CLI ASSETS_DIR", file=sys.stderr)
        return 2
    app_path, cli, assets = sys.argv[1:4]
    for tool in ("xdotool", "Xvfb"):
        if not shutil.which(tool):
            print(f"FAIL: {tool} is not installed (third_party/debian-packages.txt)")
            return 1
    start = time.time()
    app = None
    try:
        with tempfile.TemporaryDirectory(prefix="attnscope-gui-ui-") as tmp, g.Xvfb() as x:
            try:
                # The real mouse and keyboard: a button, F12, a heatmap row click.
                # The weights maps only: the grid scrolls rather than drop the notebook's four
                # decimals, so with more maps head 1's weights need not be wholly in view to be
                # clicked; and cells as wide as the labels need follow a signed map's minus signs,
                # which a re-roll may add or take away (the weights have none). The dropout mask
                # (none at p = 0) keeps the note line "no dropout in this step" when the re-roll drops
                # the preset's note, so the maps stay where they were.
                with open(os.path.join(assets, "presets", "multihead.json")) as f:
                    ws = json.load(f)
                ws.setdefault("view", {})["columns"] = ["weights", "dropout_mask"]
                with open(os.path.join(tmp, "multihead.json"), "w") as f:
                    json.dump(ws, f)
                app = App(app_path, os.path.join(tmp, "multihead.json"), x.display, tmp, "multihead")
                app.find_window()
                step_heads(app, 2, "num_heads_minus", 1)
                step_heads(app, 1, "num_heads_plus", 2)
                png, d = step_f12(app, cli, assets, tmp)
                step_select_row(app, png, d, 3)
                step_sentence_field(app)
                app.stop()
                app = None
                # States a click leads to, reached with commands, headless.
                step_reroll(app_path, os.path.join(tmp, "multihead.json"), x.display, cli, assets, tmp)
                step_heads_commands(app_path, os.path.join(assets, "presets", "multihead_wrapper.json"), x.display, tmp, 2, 3)
                step_sentence_commands(app_path, x.display, tmp)
                step_dropout_stream(app_path, assets, cli, x.display, tmp)
            finally:
                if app:
                    app.stop()
    except g.Fail as e:
        print(f"FAIL: {e}")
        print(f"({time.time() - start:.1f} s)")
        return 1
    print(f"OK ({time.time() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
