# Drives the interactive app with xdotool on a private Xvfb, reading its --dump-layout file to find
# controls and to watch its state, and its F12 screenshots to see what it drew:
#  - num_heads "−"/"+" on the multihead preset (2 → 1 → 2) and "+" on the wrapper (2 → 3): the state
#    and the heads drawn follow;
#  - "re-roll": the seed changes, the weights map's pixels change, and the new pixels are the colours
#    of attnscope-cli's trace of the new workspace (also carried in the PNG's text chunk);
#  - a click on row 3 of a weights map selects token 3, and the next screenshot outlines that row
#    (not the previous one) in the theme's selection colour.
# Every step asserts the change it asked for and fails after STEP_TIMEOUT seconds without it.
# Usage: test_interaction.py APP CLI ASSETS_DIR
import json
import os
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
            [app, "--open", preset_path, "--dump-layout", self.dump_path, "--screenshot-dir", self.shots],
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


def weights_maps(d):
    return [m for m in d["heatmaps"] if m["stage"] == "weights"]


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


def check_map_colours(png, d, cli, assets, tmp, label):
    """The weights maps in `png` against the CLI's trace of the workspace the dump reports."""
    trace = g.trace_workspace(cli, d["state"]["workspace"], tmp)
    view = d["state"]["workspace"].get("view", {})
    checker = g.PixelChecker(assets, d["state"]["theme"])
    img = g.load_png(png)
    for entry in weights_maps(d):
        m = g.stage_matrix(trace, entry["batch"], entry["head"], entry["stage"])
        cmap, lo, hi = g.expected_map(m, entry["stage"], view)
        checker.check_cells(img, entry, m, cmap, lo, hi)
    g.check(checker.checked > 0, f"{label}: no weights cells sampled")
    g.check(not checker.failures, f"{label}: pixels differ from the CLI's trace:\n  " + "\n  ".join(checker.failures[:10]))
    print(f"{label}: {checker.checked} weights cells match the CLI trace (worst channel difference {checker.worst})")
    return img


def step_reroll(app, cli, assets, tmp):
    png_a, d_a = app.screenshot()
    seed_a, version = d_a["state"]["seed"], d_a["state"]["trace_version"]
    img_a = check_map_colours(png_a, d_a, cli, assets, tmp, f"before re-roll (seed {seed_a})")
    app.click_widget("reroll")
    app.wait_settled(lambda d: d["state"]["seed"] != seed_a and d["state"]["trace_version"] > version,
                     "'re-roll' to change the seed and recompute")
    png_b, d_b = app.screenshot()
    seed_b = d_b["state"]["seed"]
    g.check(d_b["state"]["workspace"]["model"]["seed"] == seed_b, "state.seed and the workspace's seed disagree")
    img_b = check_map_colours(png_b, d_b, cli, assets, tmp, f"after re-roll (seed {seed_b})")
    entry_a = next(m for m in weights_maps(d_a) if m["head"] == 0)
    entry_b = next(m for m in weights_maps(d_b) if m["head"] == 0)
    changed = sum(g.channel_diff(p, q) > 2 for p, q in zip(weights_pixels(img_a, entry_a), weights_pixels(img_b, entry_b)))
    g.check(changed > 0, f"re-roll {seed_a} → {seed_b}: the head-1 weights map looks the same as before")
    embedded = img_b.info.get("attnscope-workspace")
    g.check(embedded is not None, "the F12 PNG carries no 'attnscope-workspace' text chunk")
    g.check(json.loads(embedded)["model"]["seed"] == seed_b, "the PNG's embedded workspace has the old seed")
    print(f"re-roll: seed {seed_a} → {seed_b}, {changed} of {len(weights_pixels(img_a, entry_a))} weights cells changed colour")
    return png_b, d_b


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
                app = App(app_path, os.path.join(assets, "presets", "multihead.json"), x.display, tmp, "multihead")
                app.find_window()
                step_heads(app, 2, "num_heads_minus", 1)
                step_heads(app, 1, "num_heads_plus", 2)
                png, d = step_reroll(app, cli, assets, tmp)
                step_select_row(app, png, d, 3)
                app.stop()
                app = App(app_path, os.path.join(assets, "presets", "multihead_wrapper.json"), x.display, tmp, "wrapper")
                app.find_window()
                step_heads(app, 2, "num_heads_plus", 3)
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
