# Shared helpers of the GUI tests: a private Xvfb display, running attnscope, reading its layout
# dump and PNGs, tracing a workspace with attnscope-cli, and the colour a heatmap cell must have.
# Expected colours come from assets/colormaps/*.csv and the CLI's numbers, never from the app.
import json
import math
import os
import select
import shutil
import signal
import subprocess
import atexit
import tempfile
import time

import numpy as np
from PIL import Image

# The maps a head shows by default (docs/DESIGN.md §3; the context column starts hidden).
DEFAULT_STAGES = ["scores", "masked_scores", "scaled_scores", "weights", "dropout_mask", "dropped_weights"]
DROPOUT_VARIANTS = {"causal", "multihead_wrapper", "multihead"}  # steps 3 and later (docs/DESIGN.md §2)


def book_workspace(seed=123):
    """The notebook's six tokens and embeddings in the multi-head example, as a workspace file holds them."""
    return {"format": "attnscope-workspace", "version": 1,
            "tokens": ["Your", "journey", "starts", "with", "one", "step"],
            "embeddings": [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
                           [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]],
            "model": {"variant": "multihead", "d_out": 2, "num_heads": 2, "seed": seed}}


def applicable_stages(columns, model):
    """The columns a step has maps for: no scaled map without scaling, no mask map when not causal,
    no dropout maps unless dropout is active (a variant with dropout, training, p > 0)."""
    dropout = model["variant"] in DROPOUT_VARIANTS and model.get("training", False) and model.get("dropout", 0) > 0
    skip = set()
    if model.get("scale") == "none":
        skip.add("scaled_scores")
    tril = model.get("causal", False) and model.get("causal_route") == "tril"
    if not model.get("causal", False) or tril:
        skip.add("masked_scores")
    if not tril:
        skip |= {"unmasked_weights", "tril", "tril_weights"}
    if not dropout:
        skip |= {"dropout_mask", "dropped_weights"}
    return [c for c in columns if c not in skip]


MASKED_GREY = {"dark": (72, 72, 78), "light": (150, 150, 156)}
SELECTION = {"dark": (255, 90, 90), "light": (230, 40, 40)}


class Fail(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Fail(message)


def temp_folder(prefix):
    """A new folder under the system's temp folder, removed with all it holds when the test's process
    exits (a run of the suite made about 90 and left them behind); ATTNSCOPE_KEEP_TEMP=1 keeps them
    to look into a failure."""
    folder = tempfile.mkdtemp(prefix=prefix)
    if not os.environ.get("ATTNSCOPE_KEEP_TEMP"):
        atexit.register(shutil.rmtree, folder, True)
    return folder


def isolated_env(display=None):
    """The app's environment: our display (or none), and a throw-away HOME so no user settings leak in."""
    env = dict(os.environ)
    env.pop("WAYLAND_DISPLAY", None)
    env.pop("DISPLAY", None)
    home = temp_folder("attnscope-gui-home-")
    env["HOME"] = home
    env["XDG_CONFIG_HOME"] = os.path.join(home, ".config")
    env["XDG_DATA_HOME"] = os.path.join(home, ".local", "share")
    env["XDG_STATE_HOME"] = os.path.join(home, ".local", "state")
    # The channel (DESIGN §3.8) of this test's apps alone: no other test's app, nor a user's, answers.
    env["XDG_RUNTIME_DIR"] = os.path.join(home, "run")
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
    if display:
        env["DISPLAY"] = display
    return env


class Xvfb:
    """An Xvfb on a free display number (Xvfb picks it: -displayfd). Use as a context manager."""

    def __init__(self, screen="1920x1080x24"):
        self.screen = screen
        self.proc = None
        self.display = None

    def __enter__(self):
        if not shutil.which("Xvfb"):
            raise Fail("Xvfb is not installed (Debian package xvfb)")
        r, w = os.pipe()
        self.proc = subprocess.Popen(
            ["Xvfb", "-displayfd", str(w), "-screen", "0", self.screen, "-nolisten", "tcp", "-noreset"],
            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(w)
        text = b""
        deadline = time.time() + 20
        while not text.endswith(b"\n") and time.time() < deadline:
            ready, _, _ = select.select([r], [], [], 0.5)
            if ready:
                chunk = os.read(r, 64)
                if not chunk:
                    break
                text += chunk
        os.close(r)
        if not text.strip():
            self.__exit__(None, None, None)
            raise Fail("Xvfb did not report a display number within 20 s")
        self.display = ":" + text.decode().strip()
        return self

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return False


def render(app, workspace, png, dump, display, size=None, theme=None, timeout=60):
    """Headless run: --screenshot PNG --dump-layout DUMP. Returns the parsed dump."""
    cmd = [app, "--open", workspace, "--screenshot", png, "--dump-layout", dump]
    if size:
        cmd += ["--size", size]
    if theme:
        cmd += ["--theme", theme]
    p = subprocess.run(cmd, env=isolated_env(display), capture_output=True, text=True, timeout=timeout)
    check(p.returncode == 0, f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
    check("saved" in p.stdout, f"no 'saved …' line on stdout: {p.stdout!r}")
    return read_dump(dump)


def read_dump(path):
    with open(path) as f:
        return json.load(f)


def load_png(path):
    img = Image.open(path)
    img.load()
    return img


def load_colormap(assets, name):
    rows = []
    with open(os.path.join(assets, "colormaps", name + ".csv")) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            rows.append(tuple(int(x) for x in line.split(",")))
    check(len(rows) == 256, f"colormap {name}: {len(rows)} entries, expected 256")
    return rows


def trace_workspace(cli, workspace_json, tmpdir):
    """Runs attnscope-cli trace on a workspace given as JSON (a dict). Returns the trace."""
    path = os.path.join(tmpdir, "traced-%d.json" % time.monotonic_ns())
    with open(path, "w") as f:
        json.dump(workspace_json, f)
    p = subprocess.run([cli, "trace", path], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"attnscope-cli trace failed ({p.returncode}): {p.stderr.strip()}")
    return json.loads(p.stdout)


def stage_matrix(trace, batch, head, stage):
    """float32 matrix of a stage; −∞ (JSON null) for masked cells; dropout_mask as 0/1."""
    m = trace["batches"][batch]["heads"][head][stage]
    return np.array([[-np.inf if v is None else v for v in row] for row in m], dtype=np.float32)


def expected_map(m, stage, view):
    """(colormap, lo, hi) a map of stage `stage` must use, computed from the values alone."""
    if stage == "dropout_mask":
        return view.get("colormap", "viridis"), np.float32(0), np.float32(1)
    finite = m[np.isfinite(m)]
    lo, hi = (np.float32(finite.min()), np.float32(finite.max())) if finite.size else (np.float32(0), np.float32(0))
    if view.get("diverging_for_signed", True) and lo < 0:
        mx = np.float32(max(abs(lo), abs(hi)))
        return "coolwarm", -mx, mx
    return view.get("colormap", "viridis"), lo, hi


def colormap_index(v, lo, hi):
    lo, hi, v = float(lo), float(hi), float(v)
    if not hi > lo:
        return 128
    t = (v - lo) / (hi - lo)
    x = t * 255.0
    r = math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)  # lround: halves away from 0
    return min(255, max(0, int(r)))


def close_float(a, b):
    return abs(float(a) - float(b)) <= 1e-6 * (1 + abs(float(b)))


def cell_sample_point(cells, cell, i, j, frac=0.22):
    """A pixel inside cell (i, j), away from its centre text and border grid lines."""
    x = cells["x"] + (j + frac) * cell
    y = cells["y"] + (i + frac) * cell
    return int(math.floor(x)), int(math.floor(y))


def channel_diff(a, b):
    return max(abs(int(a[k]) - int(b[k])) for k in range(3))


def wait_for(predicate, timeout, what, poll=0.05):
    """Polls predicate() until it returns a truthy value; raises Fail naming `what` on timeout."""
    deadline = time.time() + timeout
    last_error = None
    while time.time() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except (OSError, ValueError, KeyError) as e:  # the dump is being replaced, or not there yet
            last_error = e
        time.sleep(poll)
    raise Fail(f"timed out after {timeout} s waiting for {what}" + (f" (last error: {last_error})" if last_error else ""))


def stop(proc):
    if proc and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def quit_channel_app(attnscope):
    """Quits the app the channel's tests started (attnscope.show…), when it still listens: their
    `finally`, so that a failed check leaves no window behind."""
    if attnscope._channel.listening():
        try:
            attnscope.command({"do": "quit", "discard": True}, start=False)
        except Exception:  # it was quitting anyway
            pass


def channel_refused(attnscope, commands, words, what):
    """Sends commands the app must refuse: its one-line refusal names `words`."""
    try:
        attnscope.command(commands)
    except attnscope.ChannelError as e:
        check(words in str(e) and "\n" not in str(e), f"{what}: the refusal '{e}' lacks {words!r}")
        print(f"refused ({what}): {e}")
        return
    raise Fail(f"{what}: not refused")


def workspace_as_before(attnscope, folder, before, what):
    """Saves the app's workspace beside `before` (saved earlier) and checks they are the same."""
    after = os.path.join(folder, "after.json")
    attnscope.command({"do": "save", "path": after})
    with open(before) as a, open(after) as b:
        check(json.load(a) == json.load(b), f"{what} did not give the chapter's workspace back")
    print(f"{what}: the chapter's workspace as it was")


class PixelChecker:
    """Compares a screenshot's heatmap cells with the colours the CLI's values imply."""

    def __init__(self, assets, theme):
        self.assets = assets
        self.theme = theme
        self.tables = {}
        self.checked = 0
        self.worst = 0
        self.failures = []

    def table(self, name):
        if name not in self.tables:
            self.tables[name] = load_colormap(self.assets, name)
        return self.tables[name]

    def expected_colour(self, v, cmap, lo, hi):
        if np.isneginf(v):
            return MASKED_GREY[self.theme]
        return self.table(cmap)[colormap_index(v, lo, hi)]

    def check_cells(self, img, entry, m, cmap, lo, hi, cells=None, tolerance=2):
        """Samples `cells` [(i, j)] (default: all) of a dumped map; records mismatches."""
        rgb = img.convert("RGB")
        rows, cols = m.shape
        win = entry.get("window") or {"row0": 0, "rows": rows, "col0": 0, "cols": cols}
        if cells is None:
            cells = [(i, j) for i in range(rows) for j in range(cols)]
        for i, j in cells:
            vi, vj = i - win["row0"], j - win["col0"]  # position within the shown window
            if not (0 <= vi < win["rows"] and 0 <= vj < win["cols"]):
                continue
            x, y = cell_sample_point(entry["cells"], entry["cell"], vi, vj)
            got = rgb.getpixel((x, y))
            want = self.expected_colour(m[i, j], cmap, lo, hi)
            d = channel_diff(got, want)
            self.checked += 1
            self.worst = max(self.worst, d)
            if d > tolerance:
                self.failures.append(
                    f"{entry['id']} cell ({i},{j}) v={m[i, j]!r} at pixel ({x},{y}): got {got[:3]}, "
                    f"expected {want} ({cmap} over [{lo}, {hi}])")


class Clipboard:
    """xclip owning the display's CLIPBOARD selection with `text`, in the foreground (-quiet) so
    that it can be stopped; it answers every request until then."""

    def __init__(self, display, text):
        if shutil.which("xclip") is None:
            raise AssertionError("xclip not found: install the Debian package xclip (debian-packages.txt [test])")
        env = dict(os.environ, DISPLAY=display)
        self.proc = subprocess.Popen(["xclip", "-quiet", "-selection", "clipboard", "-i"], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.proc.stdin.write(text.encode())
        self.proc.stdin.close()
        # Owned once xclip -o reads it back.
        for _ in range(100):
            out = subprocess.run(["xclip", "-o", "-selection", "clipboard"], env=env, capture_output=True, timeout=10)
            if out.returncode == 0 and out.stdout.decode() == text:
                return
        raise AssertionError("xclip did not take the clipboard")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        return False
