"""Teaching with the live app: edits made in the app reach the engine.

Runs `attnscope` on its own Xvfb display and reads what it shows from `--dump-layout`. Checks that
typing into an embedding cell changes the workspace and that the app's trace then equals
`attnscope-cli trace` of that workspace; that selecting a token (arrow keys, `select_token`) puts
that token's context vector in the inspector (for self_attention_v1 the notebook's context_vec_2 =
[0.3061, 0.8210]); that undo/redo restore the previous inputs and trace; that a sentence becomes
tokens with one vector per word; that d_in + adds a column the model still computes (its trace
equals the CLI's); and that the Pipeline tab renders.

Real keyboard and mouse (xdotool, one interactive app), where the input path is the point:
  - "select token 3 then 1 with the arrow keys": Down, Down, Up, Up move the selection, and the
    inspector follows (arrows belong to the view, not to ImGui's navigation);
  - "type 0.99 into cell (1,0)": Ctrl+click turns the drag field into a text field, typing and
    Return edit the cell;
  - "undo / redo": Ctrl+Z and Ctrl+Shift+Z, one press per typed value.
Everything else uses the mouse only to reach a state whose numbers are then checked, so it runs as
headless `attnscope --commands FILE --screenshot … --dump-layout …` (the same commands the buttons
push): d_in + (`d_in`), sentence → tokens (`sentence`), the Pipeline tab (`view tab`) and the
self_attention_v1 selection (`select_token`). Clicking a heatmap row is held in test_interaction.py.

Also holds the small helpers (Xvfb, the app, xdotool, the dump, headless --commands runs) that
test_files_and_slides.py imports.
"""
import argparse
import copy
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

STEP_TIMEOUT = 30.0  # seconds for any one thing the app should do


# ---------------------------------------------------------------- comparing numbers

def worst_difference(ours, reference, path="", worst=None):
    """Walks two nested lists of numbers; returns (worst relative excess, where, ours, reference).
    A value passes when |ours − reference| ≤ 1e-5·(1 + |reference|)."""
    if worst is None:
        worst = [0.0, "", None, None]
    if isinstance(reference, list):
        if not isinstance(ours, list) or len(ours) != len(reference):
            raise AssertionError(f"shape differs at {path or 'top'}: {short(ours)} vs {short(reference)}")
        for k, (a, b) in enumerate(zip(ours, reference)):
            worst_difference(a, b, f"{path}[{k}]", worst)
        return worst
    if reference is None or ours is None:  # −∞ is null in the CLI's JSON
        if ours is not reference:
            raise AssertionError(f"{path}: {ours} vs {reference}")
        return worst
    excess = abs(ours - reference) / (1 + abs(reference))
    if excess > worst[0]:
        worst[:] = [excess, path, ours, reference]
    return worst


def assert_close(ours, reference, what):
    worst = worst_difference(ours, reference)
    ok = worst[0] <= 1e-5
    print(f"  {what}: worst |diff|/(1+|ref|) = {worst[0]:.2e}" + (f" at {worst[1]}" if worst[1] else ""))
    if not ok:
        raise AssertionError(f"{what}: {worst[2]} vs {worst[3]} at {worst[1]} (over 1e-5·(1+|x|))")


def short(x, n=160):
    s = json.dumps(x)
    return s if len(s) <= n else s[:n] + "…"


def cli_trace(cli, path):
    out = subprocess.run([cli, "trace", path], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise AssertionError(f"attnscope-cli trace {path} failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)


def cli_trace_of(cli, workspace, folder, name="ws.json"):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        json.dump(workspace, f)
    return cli_trace(cli, path)


def assert_trace_matches_cli(state, cli_json, what):
    """state.trace (the app's, one batch element) against the CLI's trace of the same workspace."""
    t = state.get("trace")
    if t is None:
        raise AssertionError(f"{what}: the dump has no state.trace")
    batch = cli_json["batches"][t["batch"]]
    assert_close(t["output"], batch["output"], f"{what}: output")
    if len(t["heads"]) != len(batch["heads"]):
        raise AssertionError(f"{what}: {len(t['heads'])} heads in the app, {len(batch['heads'])} in the CLI")
    for h, (ours, ref) in enumerate(zip(t["heads"], batch["heads"])):
        assert_close(ours["weights"], ref["weights"], f"{what}: head {h} weights")
        assert_close(ours["context"], ref["context"], f"{what}: head {h} context")


# ---------------------------------------------------------------- Xvfb and the app

class Display:
    """An Xvfb server on a display number it picks itself (-displayfd): no clash with other tests.
    -noreset: without it the server resets when its last client leaves, so a key released just as
    the app quits (Return on a Save as that quits) found no display (gui_nothing_lost, once)."""

    def __enter__(self):
        read_fd, write_fd = os.pipe()
        self.proc = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1920x1080x24", "-nolisten", "tcp", "-noreset"],
            pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(write_fd)
        number = b""
        deadline = time.time() + STEP_TIMEOUT
        while not number.endswith(b"\n"):
            ready, _, _ = select.select([read_fd], [], [], max(0.0, deadline - time.time()))
            chunk = os.read(read_fd, 16) if ready else b""
            if not chunk:
                os.close(read_fd)
                self.__exit__()
                raise AssertionError("Xvfb did not start (no display number within 30 s)")
            number += chunk
        os.close(read_fd)
        self.name = ":" + number.decode().strip()
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return False


class App:
    """One interactive `attnscope` on `display`, with --dump-layout, a fresh HOME and state folder
    (unless `state_dir` is given, to see a previous run's autosave)."""

    def __init__(self, exe, display, args=(), state_dir=None):
        self.folder = tempfile.mkdtemp(prefix="attnscope-gui-")
        self.state_dir = state_dir or os.path.join(self.folder, "state")
        home = os.path.join(self.folder, "home")
        os.makedirs(self.state_dir, exist_ok=True)
        os.makedirs(home, exist_ok=True)
        self.dump = os.path.join(self.folder, "layout.json")
        self.env = dict(os.environ, DISPLAY=display, XDG_STATE_HOME=self.state_dir, HOME=home)
        self.log = open(os.path.join(self.folder, "app.log"), "w")
        self.proc = subprocess.Popen([exe, "--dump-layout", self.dump, *args], env=self.env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.window = None

    # -- lifetime
    def close(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        if exc[0] is not None:
            self.print_log()
        shutil.rmtree(self.folder, ignore_errors=True)
        return False

    def print_log(self):
        try:
            with open(os.path.join(self.folder, "app.log")) as f:
                text = f.read().strip()
            if text:
                print("  app output:\n    " + text.replace("\n", "\n    "))
        except OSError:
            pass

    # -- the dump
    def layout(self):
        try:
            with open(self.dump) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def wait_for(self, what, predicate, timeout=STEP_TIMEOUT):
        """Polls the dump until predicate(dump) is true; returns the dump."""
        deadline = time.time() + timeout
        last = None
        last_error = None
        while time.time() < deadline:
            if self.proc.poll() is not None:
                self.print_log()
                raise AssertionError(f"the app exited ({self.proc.returncode}) while waiting for {what}")
            d = self.layout()
            if d is not None:
                last = d
                try:
                    if predicate(d):
                        return d
                # A field not in the dump yet; a file the app writes (an autosave) not written yet.
                except (KeyError, IndexError, TypeError, OSError, ValueError) as e:
                    last_error = e
            time.sleep(0.05)
        state = (last or {}).get("state", {})
        summary = {k: state.get(k) for k in ("token", "computing", "engine_error", "trace_version", "dirty", "title", "toast", "file_dialog")}
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; last state {summary}"
                             + (f"; last error: {last_error!r}" if last_error else ""))

    def settled(self, what, predicate=lambda d: True, timeout=STEP_TIMEOUT):
        """Waits for predicate with a finished trace, and for the dump to hold still for 0.3 s
        (an edit and its new trace land in different frames)."""
        def ready(d):
            s = d["state"]
            return predicate(d) and not s["computing"] and "trace" in s

        d = self.wait_for(what, ready, timeout)
        while True:
            time.sleep(0.3)
            again = self.wait_for(what, ready, timeout)
            if again["state"] == d["state"]:
                return again
            d = again

    # -- input
    def xdotool(self, *args):
        subprocess.run(["xdotool", *map(str, args)], env=self.env, check=True, timeout=STEP_TIMEOUT,
                       stdout=subprocess.DEVNULL)

    def find_window(self):
        if self.window is None:
            out = subprocess.run(["xdotool", "search", "--sync", "--name", "^attnscope"], env=self.env,
                                 capture_output=True, text=True, timeout=STEP_TIMEOUT)
            ids = out.stdout.split()
            if not ids:
                raise AssertionError("no attnscope window found with xdotool")
            self.window = ids[0]
        return self.window

    def move(self, x, y):
        self.xdotool("mousemove", "--window", self.find_window(), int(round(x)), int(round(y)))
        time.sleep(0.1)

    def click_at(self, x, y):
        self.move(x, y)
        self.xdotool("click", 1)
        time.sleep(0.15)

    def click(self, widget):
        d = self.wait_for(f"widget {widget}", lambda d: widget in d["widgets"])
        r = d["widgets"][widget]
        self.click_at(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)

    def key(self, combo):
        """Holds the keys for a moment: ImGui 1.86 looks at key state once per frame."""
        self.xdotool("keydown", combo)
        time.sleep(0.1)
        self.xdotool("keyup", combo)
        time.sleep(0.1)

    def type(self, text):
        self.xdotool("type", "--delay", 60, text)
        time.sleep(0.1)

    def until(self, act, what, done, attempts=3, timeout=STEP_TIMEOUT / 3, again=lambda: None):
        """act(attempt), then waits for done(dump); up to `attempts` times, again() between them: on
        a busy machine a click can be lost between two frames, or land before a dialog settled."""
        for attempt in range(1, attempts + 1):
            act(attempt)
            try:
                return self.wait_for(what, done, timeout=timeout)
            except AssertionError:
                if attempt == attempts:
                    raise
                print(f"  ({what}: not yet after attempt {attempt}; again)")
                again()

    def type_file_name(self, text, attempts=3):
        """Types `text` as the open file dialog's name (select all, type), until the dump shows it:
        a dialog places itself over its first frames."""
        def act(attempt):
            time.sleep(0.3 * attempt)  # the dialog's places settle
            self.click("file_name")
            self.key("ctrl+a")
            self.type(text)
        return self.until(act, "the typed name", lambda d: d["state"]["file_dialog"]["name"] == text, attempts, 10)

    def ctrl_click(self, widget):
        """Ctrl+click on `widget`: a drag field opens for typing. Never by a double-click: ImGui 1.86
        reads the mouse once a frame, and under the sanitizers a frame can outlast both clicks, or
        ImGui's 0.3 s between them."""
        d = self.wait_for(f"widget {widget}", lambda d: widget in d["widgets"])
        r = d["widgets"][widget]
        self.move(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
        self.xdotool("keydown", "ctrl")
        time.sleep(0.1)
        self.xdotool("click", 1)
        time.sleep(0.15)
        self.xdotool("keyup", "ctrl")
        time.sleep(0.1)

    def type_into(self, widget, text, done, what, attempts=3):
        """Opens the drag field `widget` for typing (ctrl_click), selects all, types `text`, Return;
        until done(dump)."""
        def act(attempt):
            self.ctrl_click(widget)
            self.key("ctrl+a")
            self.type(text)
            self.key("Return")
        return self.until(act, what, done, attempts, STEP_TIMEOUT / attempts, again=lambda: self.key("Escape"))

    def type_into_cell(self, row, col, text, attempts=3):
        value = float(text)
        return self.type_into(f"cell_{row}_{col}", text,
                              lambda d: abs(d["state"]["workspace"]["embeddings"][row][col] - value) < 1e-6,
                              f"cell ({row},{col}) = {text}", attempts=attempts)


def start_ready(exe, display, args=(), state_dir=None):
    app = App(exe, display, args, state_dir)
    try:
        app.settled("the first trace", lambda d: "cell_0_0" in d["widgets"])
        app.find_window()
        # Keyboard focus: with no window manager it follows the pointer.
        d = app.layout()
        hm = d["panels"]["heatmaps"]
        app.move(hm["x"] + hm["w"] / 2, hm["y"] + 4)
        app.xdotool("windowfocus", app.find_window())
    except Exception:
        app.__exit__(*sys.exc_info())
        raise
    return app


def describe(commands):
    """'set_cell 1 0 0.99, d_in 4': a command list as one short line."""
    return ", ".join(" ".join([c["do"]] + [json.dumps(v, ensure_ascii=False) if isinstance(v, str) else str(v)
                                          for k, v in c.items() if k != "do"]) for c in commands) or "(none)"


def write_commands(folder, name, commands):
    path = os.path.join(folder, name + ".commands.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(commands, f, ensure_ascii=False, indent=1)
    return path


def run_commands(exe, display, folder, name, commands, *args):
    """A headless run: attnscope ARGS --commands NAME.commands.json --screenshot NAME.png
    --dump-layout NAME.layout.json (HOME and XDG_STATE_HOME inside FOLDER). It applies the commands one per
    frame, waits for the engine's result, saves the PNG and exits. Must exit 0, print 'saved …',
    say nothing about an error, and end with the newest edit's result on screen. Returns the dump."""
    path = write_commands(folder, name, commands)
    png, dump = os.path.join(folder, name + ".png"), os.path.join(folder, name + ".layout.json")
    for old in (png, dump):
        if os.path.exists(old):
            os.remove(old)
    home, state = os.path.join(folder, "home"), os.path.join(folder, "state")
    os.makedirs(home, exist_ok=True)
    os.makedirs(state, exist_ok=True)
    env = dict(os.environ, DISPLAY=display, XDG_STATE_HOME=state, HOME=home)
    cmd = [exe, *args, "--commands", path, "--screenshot", png, "--dump-layout", dump]
    t0 = time.time()
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT * 2)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"attnscope --commands {path}: no exit within {STEP_TIMEOUT * 2:.0f} s")
    print(f"  attnscope --commands [{describe(commands)}]: exit {out.returncode} in {time.time() - t0:.1f} s")
    if out.returncode != 0 or "error" in out.stderr.lower():
        raise AssertionError(f"{' '.join(cmd)} exited {out.returncode}: {out.stderr.strip()}")
    if f"saved {png} (" not in out.stdout:
        raise AssertionError(f"no 'saved {png} (W×H)' line in: {out.stdout.strip()!r}")
    with open(dump) as f:
        d = json.load(f)
    if d["state"].get("settled") is not True or d["state"]["computing"]:
        raise AssertionError(f"{name}: the final dump does not show the newest edit's result (commands: {path})")
    d["png"] = png
    return d


def preset_copy(presets, name, folder):
    path = os.path.join(folder, name + ".json")
    shutil.copy(os.path.join(presets, name + ".json"), path)
    return path


def embeddings(d):
    return d["state"]["workspace"]["embeddings"]


def arguments(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--app", required=True, help="the attnscope executable")
    p.add_argument("--cli", required=True, help="the attnscope-cli executable")
    p.add_argument("--presets", required=True, help="assets/presets")
    a = p.parse_args()
    missing = [tool for tool in ("Xvfb", "xdotool") if shutil.which(tool) is None]
    if missing:  # never skip silently
        sys.exit(f"error: {' and '.join(missing)} not found: install xvfb and xdotool to run the GUI tests")
    return a


def run_checks(checks):
    """Runs (name, function) pairs; prints each outcome; exit code 1 if any failed. ATTNSCOPE_CHECKS, if
    set, runs only the checks whose names contain one of its comma-separated words (a developer's rerun)."""
    only = [w for w in os.environ.get("ATTNSCOPE_CHECKS", "").split(",") if w]
    if only:
        checks = [(name, check) for name, check in checks if any(w in name for w in only)]
        if not checks:
            print(f"ATTNSCOPE_CHECKS={os.environ['ATTNSCOPE_CHECKS']!r} names none of the checks")
            return 1
    failed = []
    start = time.time()
    for name, check in checks:
        t0 = time.time()
        print(f"[{name}]")
        try:
            check()
            print(f"  ok ({time.time() - t0:.1f} s)")
        except Exception as e:  # noqa: BLE001 - report every check, then fail
            failed.append(name)
            print(f"  FAILED ({time.time() - t0:.1f} s): {type(e).__name__}: {e}")
    print(f"{len(checks) - len(failed)} of {len(checks)} checks passed in {time.time() - start:.1f} s")
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


# ---------------------------------------------------------------- the checks

def inspector_context(d):
    z = d["state"].get("inspector_context")
    if z is None:
        raise AssertionError("the dump's state has no inspector_context (app: recordState() replaces the "
                             "state object after drawInspector() wrote it)")
    return z


def inspector_matches(d, row, problems):
    """The inspector's context vector (z_{row+1}) against row `row` of the trace's head-0 context."""
    try:
        z = inspector_context(d)
        assert_close(z, d["state"]["trace"]["heads"][0]["context"][row],
                     f"inspector z{row + 1} vs trace head 0 context row {row}")
        # The row's sum as a number, as the notebooks print it ("Sum: 1.0"): softmax rows sum to 1.
        sums = d["state"].get("inspector_row_sums", {})
        if abs(sums.get("weights", 0.0) - 1.0) > 1e-5:
            raise AssertionError(f"the inspector's row sum of the weights is {sums.get('weights')}, not the notebook's 1.0")
        every = sums.get("every_row", [])
        if len(every) != len(d["state"]["trace"]["heads"][0]["weights"]) or any(abs(v - 1.0) > 1e-5 for v in every):
            raise AssertionError(f"the inspector's sums of every row are {every}, not the notebook's 1.0 each")
        return z
    except AssertionError as e:
        problems.append(str(e))
        return None


def check_selection(d_far, far, d_back, back, problems, expect_back=None):
    """d_far: token `far` selected (its inspector already checked into `problems`); d_back: back on
    token `back`. The inspector follows, and (for the notebook's example) shows context_vec_2 =
    expect_back."""
    ctx = d_back["state"]["trace"]["heads"][0]["context"]
    if ctx[back] == ctx[far]:
        raise AssertionError(f"context rows {back} and {far} are equal: the selection check proves nothing")
    z = inspector_matches(d_back, back, problems)
    if expect_back is not None:
        try:
            if z is not None:
                rounded = [round(v, 4) for v in z]
                print(f"  inspector z{back + 1} = {z} → {rounded}; notebook context_vec_2 = {expect_back}")
                if rounded != expect_back:
                    raise AssertionError(f"inspector context {rounded} is not the notebook's {expect_back}")
        except AssertionError as e:
            problems.append(str(e))
        rounded = [round(v, 4) for v in ctx[back]]  # the trace itself, whatever the inspector says
        print(f"  trace head 0 context row {back} = {rounded}")
        if rounded != expect_back:
            problems.append(f"trace context row {back} {rounded} is not the notebook's {expect_back}")
    if problems:
        raise AssertionError("; ".join(dict.fromkeys(problems)))


def check_select_token_keys(app):
    """The real keyboard: Down twice (token 1 → 3), then Up twice back to 1; the inspector's
    context vector follows, and equals the trace's head-0 context row."""
    d = app.settled("a shown weights map", lambda d: any(m["stage"] == "weights" for m in d["heatmaps"]))
    back = d["state"]["token"]
    far = back + 2
    if far >= len(d["state"]["workspace"]["tokens"]):
        raise AssertionError(f"token {back} is selected: two Down arrows cannot reach another row")
    app.key("Down")
    app.key("Down")
    d_far = app.settled(f"token {far} selected with two Down arrows", lambda d: d["state"]["token"] == far)
    print(f"  Down, Down: state.token = {far}")
    problems = []
    inspector_matches(d_far, far, problems)
    app.key("Up")
    app.key("Up")
    d_back = app.settled(f"token {back} selected with two Up arrows", lambda d: d["state"]["token"] == back)
    print(f"  Up, Up: state.token = {back}")
    check_selection(d_far, far, d_back, back, problems)


def check_select_token_commands(exe, display, folder, workspace, expect_row1):
    """select_token 3, then select_token step −1 twice (what Up, Up push) back to 1."""
    there = [{"do": "select_token", "index": 3}]
    d3 = run_commands(exe, display, folder, "select3", there, "--open", workspace)
    if d3["state"]["token"] != 3:
        raise AssertionError(f"select_token 3: state.token = {d3['state']['token']}")
    print("  select_token 3: state.token = 3")
    problems = []
    inspector_matches(d3, 3, problems)
    d1 = run_commands(exe, display, folder, "select1", there + [{"do": "select_token", "step": -1}] * 2,
                      "--open", workspace)
    if d1["state"]["token"] != 1:
        raise AssertionError(f"select_token 3, step −1, step −1: state.token = {d1['state']['token']}")
    print("  select_token 3, step −1, step −1: state.token = 1")
    check_selection(d3, 3, d1, 1, problems, expect_row1)


def press_until(app, combo, predicate, what, problems, most=8):
    """Presses `combo` until predicate(dump) holds (at most `most` times); one press should do.
    Notes in `problems` when it took more; raises when it never did. Returns the presses used."""
    for n in range(1, most + 1):
        version = app.layout()["state"]["trace_version"]
        app.key(combo)
        d = app.settled(f"{what} ({combo} #{n})",
                        lambda d: predicate(d) or d["state"]["trace_version"] > version, timeout=10)
        print(f"  {combo} #{n}: cell (1,0) = {embeddings(d)[1][0]}")
        if predicate(d):
            if n > 1:
                problems.append(f"{what} took {n} presses of {combo}, not 1 (typing '0.99' made one undo step per keystroke)")
            return n
    raise AssertionError(f"{what}: not reached after {most} presses of {combo}")


def input_width(path):
    with open(path) as f:
        e = json.load(f)["embeddings"]
    return e["cols"] if isinstance(e, dict) else len(e[0])


def main():
    args = arguments(__doc__)
    work = tempfile.mkdtemp(prefix="attnscope-teaching-")
    shared = {}
    try:
        with Display() as display:
            # ---- the real keyboard and mouse, in one interactive app
            app = start_ready(args.app, display.name, ["--open", preset_copy(args.presets, "multihead", work)])
            with app:
                def edit_cell():
                    d = app.settled("the preset's trace")
                    before_value = embeddings(d)[1][0]
                    shared["before"] = d["state"]
                    print(f"  cell (1,0) = {before_value}; typing 0.99")
                    app.type_into_cell(1, 0, "0.99")
                    d = app.settled("cell (1,0) = 0.99 and its trace",
                                    lambda d: abs(embeddings(d)[1][0] - 0.99) < 1e-6
                                    and d["state"]["trace_version"] > shared["before"]["trace_version"])
                    ws = d["state"]["workspace"]
                    others = copy.deepcopy(ws["embeddings"])
                    others[1][0] = before_value
                    if others != shared["before"]["workspace"]["embeddings"]:
                        raise AssertionError("other embedding cells changed too: " + short(ws["embeddings"]))
                    assert_trace_matches_cli(d["state"], cli_trace_of(args.cli, ws, work, "edited.json"),
                                             "after the edit")
                    if d["state"]["trace"]["output"] == shared["before"]["trace"]["output"]:
                        raise AssertionError("the output did not change after the edit")
                    shared["after"] = d["state"]

                def undo_redo():
                    if "after" not in shared:
                        raise AssertionError("needs the cell edit, which failed")
                    before, after = shared["before"], shared["after"]
                    problems = []
                    undos = press_until(app, "ctrl+z", lambda d: embeddings(d) == before["workspace"]["embeddings"],
                                        "undo: cell (1,0) back to 0.55", problems)
                    d = app.settled("the trace after undo")
                    assert_close(d["state"]["trace"]["output"], before["trace"]["output"], "undo: output vs before")
                    for h, head in enumerate(before["trace"]["heads"]):
                        assert_close(d["state"]["trace"]["heads"][h]["weights"], head["weights"],
                                     f"undo: head {h} weights vs before")
                    press_until(app, "ctrl+shift+z", lambda d: embeddings(d) == after["workspace"]["embeddings"],
                                "redo: cell (1,0) = 0.99 again", problems, undos)
                    d = app.settled("the trace after redo")
                    assert_close(d["state"]["trace"]["output"], after["trace"]["output"], "redo: output vs after")
                    if problems:
                        raise AssertionError("; ".join(problems))

                code = run_checks([("select token 3 then 1 with the arrow keys (multihead)",
                                    lambda: check_select_token_keys(app)),
                                   ("type 0.99 into cell (1,0)", edit_cell),
                                   ("undo / redo", undo_redo)])

            # ---- states reached with commands, headless
            multihead = preset_copy(args.presets, "multihead", work)
            run = lambda name, commands, *a: run_commands(args.app, display.name, work, name, commands,  # noqa: E731
                                                          "--open", multihead, *a)

            def d_in_plus():
                cols = input_width(multihead)
                d = run("d_in", [{"do": "d_in", "value": cols + 1}])  # what "d_in +" pushes
                if not all(len(r) == cols + 1 for r in embeddings(d)):
                    raise AssertionError(f"d_in {cols} → {cols + 1}: rows of {sorted({len(r) for r in embeddings(d)})}")
                print(f"  d_in {cols} → {len(embeddings(d)[0])}, engine_error = {d['state']['engine_error']!r}")
                if d["state"]["engine_error"]:
                    raise AssertionError("engine error after d_in +: " + d["state"]["engine_error"])
                assert_trace_matches_cli(d["state"], cli_trace_of(args.cli, d["state"]["workspace"], work, "wide.json"),
                                         f"d_in {cols + 1}")

            def sentence():
                words = "the cat sat on the mat"
                d = run("sentence", [{"do": "sentence", "text": words}])  # what "make tokens" pushes
                if d["state"]["workspace"]["tokens"] != words.split() or d["state"]["tokens"] != words.split():
                    raise AssertionError(f"tokens {d['state']['workspace']['tokens']} (on screen "
                                         f"{d['state']['tokens']}), expected {words.split()}")
                e = embeddings(d)
                print(f"  tokens {d['state']['workspace']['tokens']}; rows 0 and 4 ('the'): {e[0]} / {e[4]}")
                if e[0] != e[4]:
                    raise AssertionError("the two 'the' tokens have different embeddings")
                if e[0] == e[1]:
                    raise AssertionError("'the' and 'cat' have the same embedding")
                if d["state"]["engine_error"]:
                    raise AssertionError("engine error: " + d["state"]["engine_error"])
                assert_trace_matches_cli(d["state"], cli_trace_of(args.cli, d["state"]["workspace"], work, "words.json"),
                                         "the sentence")

            def pipeline_tab():
                to_pipeline = {"do": "view", "field": "tab", "value": "pipeline"}  # a click on the tab
                d = run("pipeline", [to_pipeline])
                steps = sorted(k for k in d["widgets"] if k.startswith("pipeline_") and
                               not k.startswith(("pipeline_turn_", "pipeline_area", "pipeline_key")))
                # Wrapped rows start with "↳", whole within what of the steps can be seen (drawn
                # left of the first node, the window cut it to a stray tick).
                area, turns = d["widgets"]["pipeline_area"], [k for k in d["widgets"] if k.startswith("pipeline_turn_")]
                for k in turns:
                    t = d["widgets"][k]
                    if t["x"] < area["x"] - 0.5 or t["x"] + t["w"] > area["x"] + area["w"] + 0.5:
                        raise AssertionError(f"{k} {t} is cut by the steps' window {area}")
                if not turns:
                    raise AssertionError("the pipeline's steps did not wrap at this size: no ↳ to check")
                # The thumbnails have no colorbars: a key above them says what their colours are, whole
                # in view (a signed step's blues and reds, a masked step's grey had gone unsaid).
                key, said = d["widgets"].get("pipeline_key"), d["state"].get("pipeline_key", "")
                for part in ("low → high", "negative → positive (pale: 0)", "−∞ masked", "each map on a range of its own"):
                    if part not in said:
                        raise AssertionError(f"the pipeline's colour key {said!r} does not say {part!r}")
                if not key or key["x"] < area["x"] - 0.5 or key["x"] + key["w"] > area["x"] + area["w"] + 0.5:
                    raise AssertionError(f"the colour key {key} is cut by the steps' window {area}")
                print(f"  pipeline colour key: {said!r}")
                print(f"  pipeline widgets: {', '.join(steps)}")
                if "pipeline" not in d["panels"]:
                    raise AssertionError(f"no pipeline panel; panels {sorted(d['panels'])}")
                if len(steps) < 4:
                    raise AssertionError("fewer than 4 pipeline steps drawn")
                # The Pipeline tab is on screen for a frame before the click back (the second
                # to_pipeline), as with a mouse. Two `view tab` commands in consecutive frames end on
                # the first tab: the tab bar selects a tab a frame after it is asked to, and the app
                # then takes that for a click (app/shell/app.cpp, the "views" tab bar).
                d = run("heatmaps", [to_pipeline, to_pipeline, {"do": "view", "field": "tab", "value": "heatmaps"}])
                if "heatmaps" not in d["panels"] or not d["heatmaps"]:
                    raise AssertionError(f"not back on the Heatmaps tab; panels {sorted(d['panels'])}")
                print(f"  back on the Heatmaps tab: {len(d['heatmaps'])} maps drawn")

            def select_token_v1():
                check_select_token_commands(args.app, display.name, work,
                                            preset_copy(args.presets, "self_attention_v1", work), [0.3061, 0.8210])

            code |= run_checks([("d_in +", d_in_plus),
                                ("sentence → tokens", sentence),
                                ("pipeline tab", pipeline_tab),
                                ("select token (self_attention_v1, context_vec_2)", select_token_v1)])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
