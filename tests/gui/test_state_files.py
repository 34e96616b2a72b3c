"""The app's state files and file writes under failure (docs/DESIGN.md §3.5): regressions of the
reliability fix. Each check fails on the code before it and passes after it, unless marked as a
guard (it passed before too and must keep passing).

1. State files with fields of the wrong type (settings.json `last_folder: 5`, autosave `view.file: 5`,
   `view.dirty: "yes"`) start normally (guards: the build before the fix starts too). A document
   whose file name is not UTF-8 no longer aborts the app (the layout dump and the autosave threw).
2. A session started with --open FILE and killed: the next --open FILE restores the unsaved edits
   (state.dirty true, the edited tokens); the autosave of unsaved work of another document (or of
   an untitled one) is moved aside to autosave-kept-*.json, byte for byte, before anything
   overwrites it. Saved work is not kept aside (guard).
3. save_pytorch of a document opened from a file whose name holds a newline and Python code: the
   script does not run that code and still runs (exit 0).
4. A damaged autosave (not JSON, not a workspace) is moved aside with its bytes, and the app starts
   from the book example.
7. A screenshot that cannot be written (folder missing, parent is a file, target is a folder, a
   write error inside libpng via PATH.tmp → /dev/full, a read-only folder unless root): one
   `error: command N (screenshot): …` line, exit 2; with --keep-going the run goes on. Also under the
   sanitizer build when it exists (ASAN_OPTIONS=detect_leaks=0).
8. A FIFO given to --open or to the open command fails within 10 s with one `error:` line (hung).
10. save {path}: a 250-byte name (also save_pytorch and export_map), through a symlink (the link
   stays), keeping mode 0600, no temporary files left; failures (target is a folder, parent is a
   file, a write that fails half-way under RLIMIT_FSIZE, a read-only folder unless root) leave the
   old file intact with one `error:` line.

"Killed" sessions are interactive runs (no --screenshot) whose commands edit; once autosave.json
holds the edit the app gets SIGKILL. Every case has its own HOME and XDG folders.

Usage: test_state_files.py --app APP --cli CLI [--asan-app APP_ASAN] [--keep]
"""
import argparse
import glob
import json
import os
import resource
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gui_common as g  # noqa: E402

PYTHON = "/usr/bin/python3"
BOOK = ["Your", "journey", "starts", "with", "one", "step"]
RUN_TIMEOUT = 60
FIFO_TIMEOUT = 10
KILLED_EDIT = ["alpha", "beta", "gamma", "delta"]


def workspace(tokens, view=None):
    rows = [[round(0.1 + 0.07 * i + 0.03 * j, 2) for j in range(3)] for i in range(len(tokens))]
    return {"format": "attnscope-workspace", "version": 1, "tokens": tokens, "embeddings": rows,
            "model": {"variant": "multihead", "d_out": 2, "num_heads": 2, "seed": 123},
            "view": view or {}}


A_TOKENS = ["apple", "banana", "cherry"]
B_TOKENS = ["north", "south"]


def error_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def nonblank(stderr):
    return [line for line in stderr.splitlines() if line.strip()]


def sanitizer_report(stderr):
    return any(s in stderr for s in ("AddressSanitizer", "runtime error:", "LeakSanitizer", "terminate called"))


class Ctx:
    def __init__(self, app, cli, asan_app, display, tmp):
        self.app, self.cli, self.asan_app, self.display, self.tmp = app, cli, asan_app, display, tmp
        self.homes = []
        self.runs = 0
        self.root = os.geteuid() == 0

    # ---- files and environments
    def case_dir(self, name):
        path = os.path.join(self.tmp, name)
        os.makedirs(path, exist_ok=True)
        return path

    def env(self):
        e = g.isolated_env(self.display)
        self.homes.append(e["HOME"])
        return e

    @staticmethod
    def state(env, name=""):
        folder = os.path.join(env["XDG_STATE_HOME"], "attnscope")
        os.makedirs(folder, exist_ok=True)
        return os.path.join(folder, name) if name else folder

    @staticmethod
    def write_json(path, value):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(value, f, indent=1)
        return path

    def commands(self, folder, name, commands):
        return self.write_json(os.path.join(folder, name + ".commands.json"), commands)

    # ---- runs
    def run(self, folder, name, commands, env=None, extra=(), headless=True, keep_going=False,
            app=None, timeout=RUN_TIMEOUT, env_add=None, preexec_fn=None, dump=True):
        """One run of the app. Headless: --screenshot NAME.png. Interactive: the commands end the run
        themselves (a quit). Returns (process, final dump or None, png path)."""
        self.runs += 1
        env = dict(env or self.env(), **(env_add or {}))
        path = self.commands(folder, name, commands)
        png = os.path.join(folder, name + ".png")
        dump_path = os.path.join(folder, name + ".layout.json")
        for p in (png, dump_path):
            if os.path.exists(p):
                os.remove(p)
        cmd = [app or self.app, "--commands", path, *extra]
        if dump:
            cmd += ["--dump-layout", dump_path]
        if headless:
            cmd += ["--screenshot", png]
        if keep_going:
            cmd.append("--keep-going")
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                               preexec_fn=preexec_fn, errors="replace")
        except subprocess.TimeoutExpired:
            raise g.Fail(f"{name}: no exit within {timeout} s: {cmd}")
        if p.returncode < 0:
            raise g.Fail(f"{name}: the app died of signal {-p.returncode}\n  stderr: {p.stderr.strip()[-1500:]}")
        d = g.read_dump(dump_path) if dump and os.path.exists(dump_path) else None
        return p, d, png

    def interactive_state(self, folder, name, env, extra=()):
        """An interactive start (autosave restore or recovery included) until the first result is on
        screen, then quit. Returns (process, state of the last dump)."""
        shot = os.path.join(folder, name + ".shot.png")
        p, d, _ = self.run(folder, name, [{"do": "screenshot", "path": shot}, {"do": "quit", "discard": True}],
                           env=env, extra=extra, headless=False)
        g.check(p.returncode == 0, f"{name}: exit {p.returncode}, expected 0\n  stderr: {p.stderr.strip()[-1500:]}")
        g.check(not error_lines(p.stderr) and "terminate" not in p.stderr,
                f"{name}: stderr has errors: {p.stderr.strip()[-1500:]}")
        g.check(d is not None and "state" in d, f"{name}: no layout dump")
        return p, d["state"]

    def killed_session(self, folder, name, env, commands, until_tokens, extra=(), until_dirty=True):
        """An interactive session that edits and is killed (SIGKILL) once autosave.json holds
        `until_tokens` with that unsaved mark. Returns the autosave's bytes at that moment."""
        self.runs += 1
        path = self.commands(folder, name, commands)
        autosave = self.state(env, "autosave.json")
        log = open(os.path.join(folder, name + ".stderr"), "w")
        proc = subprocess.Popen([self.app, "--commands", path, *extra], env=env, stdout=subprocess.DEVNULL,
                                stderr=log)
        try:
            def saved():
                with open(autosave, "rb") as f:
                    data = f.read()
                j = json.loads(data)
                return data if j["tokens"] == until_tokens and j["view"].get("dirty") is until_dirty else None
            try:
                g.wait_for(saved, 20, f"{name}: autosave.json holding {until_tokens}")
            except g.Fail:
                raise g.Fail(f"{name}: autosave.json never held {until_tokens} "
                             f"(app {'running' if proc.poll() is None else 'exited %s' % proc.returncode})")
            g.check(proc.poll() is None, f"{name}: the app exited by itself ({proc.returncode})")
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait()
            log.close()
        with open(autosave, "rb") as f:
            return f.read()

    def close(self):
        for h in self.homes:
            shutil.rmtree(h, ignore_errors=True)


class Checks:
    """Runs the sub-cases of a case one after the other and fails once at the end with every
    failure, so a run on an old build shows how each of them fails."""

    def __init__(self):
        self.problems = []

    def __call__(self, label, fn, *args):
        try:
            fn(*args)
        except g.Fail as e:
            self.problems.append(f"[{label}] {e}")

    def done(self):
        g.check(not self.problems, "\n    ".join([f"{len(self.problems)} sub-case(s) failed:"] + self.problems))


def kept_files(env):
    return sorted(glob.glob(os.path.join(Ctx.state(env), "autosave-kept-*.json")))


def check_kept(name, env, expected_bytes):
    kept = kept_files(env)
    g.check(len(kept) == 1, f"{name}: {len(kept)} autosave-kept-*.json files in {Ctx.state(env)} "
                            f"({sorted(os.listdir(Ctx.state(env)))}), expected 1: the old autosave was not kept aside")
    with open(kept[0], "rb") as f:
        g.check(f.read() == expected_bytes, f"{name}: {kept[0]} does not hold the old autosave's bytes")


def check_clean_folder(name, folder, expected):
    names = sorted(os.listdir(folder))
    g.check(names == sorted(expected), f"{name}: {folder} holds {names}, expected {sorted(expected)} "
                                       f"(a temporary file left behind?)")


# ---- 1. state files with fields of the wrong type; file names that are not UTF-8 -------------------

def case_settings_wrong_types(ctx):
    folder = ctx.case_dir("settings_wrong_types")
    checks = Checks()
    for i, text in enumerate(['{"recent": [], "last_folder": 5}',
                              '{"recent": [5, null, ["x"]], "last_folder": {"a": 1}}',
                              '{"recent": "x", "last_folder": null}']):
        checks(f"settings.json {text}", settings_start, ctx, folder, i, text)
    checks.done()


def settings_start(ctx, folder, i, text):
    env = ctx.env()
    with open(ctx.state(env, "settings.json"), "w") as f:
        f.write(text)
    shot = os.path.join(folder, "shot.png")
    # The file browser starts in the settings' last folder: open it too.
    p, d, _ = ctx.run(folder, f"settings_{i}", [{"do": "dialog", "which": "open"},
                                                {"do": "screenshot", "path": shot},
                                                {"do": "quit", "discard": True}], env=env, headless=False)
    g.check(p.returncode == 0 and not error_lines(p.stderr) and "terminate" not in p.stderr,
            f"settings.json {text}: exit {p.returncode}\n  stderr: {p.stderr.strip()[-1500:]}")
    g.check(d["state"]["workspace"]["tokens"] == BOOK, f"settings.json {text}: not the book example")


def case_autosave_view_wrong_types(ctx):
    folder = ctx.case_dir("autosave_view_wrong_types")
    checks = Checks()
    for name, view in (("file_5", {"file": 5, "dirty": True}), ("dirty_yes", {"file": "", "dirty": "yes"}),
                       ("both", {"file": 5, "dirty": "yes"})):
        checks(name, autosave_view_start, ctx, folder, name, view)
    checks("with --open", autosave_view_with_open, ctx, folder)
    checks.done()


def autosave_view_start(ctx, folder, name, view):
    env = ctx.env()
    ctx.write_json(ctx.state(env, "autosave.json"), workspace(KILLED_EDIT, view))
    _, state = ctx.interactive_state(folder, name, env)
    g.check(state["workspace"]["tokens"] == KILLED_EDIT,
            f"autosave view {view}: tokens {state['workspace']['tokens']}, expected the autosave's {KILLED_EDIT}")
    g.check(state["dirty"] is True, f"autosave view {view}: dirty {state['dirty']}, expected true (unknown = unsaved)")


def autosave_view_with_open(ctx, folder):
    # The same with --open: the autosave's owner and saved mark are read before the file opens.
    env = ctx.env()
    b = ctx.write_json(os.path.join(folder, "b.json"), workspace(B_TOKENS))
    ctx.write_json(ctx.state(env, "autosave.json"), workspace(KILLED_EDIT, {"file": 5, "dirty": "yes"}))
    _, state = ctx.interactive_state(folder, "with_open", env, extra=("--open", b))
    g.check(state["workspace"]["tokens"] == B_TOKENS, f"autosave with view.file 5, --open b.json: tokens {state['workspace']['tokens']}")


def case_file_name_not_utf8(ctx):
    folder = ctx.case_dir("file_name_not_utf8")
    path = os.path.join(folder.encode(), b"caf\xe9 \xff.json")
    with open(path, "wb") as f:
        f.write(json.dumps(workspace(A_TOKENS)).encode())
    spath = os.fsdecode(path)
    checks = Checks()
    checks("headless", utf8_headless, ctx, folder, spath)
    checks("interactive", utf8_interactive, ctx, folder, spath)
    checks.done()


def utf8_headless(ctx, folder, spath):
    # Headless with a layout dump (it holds the file name) …
    p, d, png = ctx.run(folder, "headless", [], extra=("--open", spath))
    g.check(p.returncode == 0, f"--open a non-UTF-8 name, headless: exit {p.returncode}\n  stderr: {p.stderr.strip()[-800:]}")
    g.check(d and d["state"]["workspace"]["tokens"] == A_TOKENS, "--open a non-UTF-8 name: not its tokens")


def utf8_interactive(ctx, folder, spath):
    # … and interactive: the autosave holds the file name, the window title too.
    env = ctx.env()
    shot = os.path.join(folder, "shot.png")
    p, d, _ = ctx.run(folder, "interactive", [{"do": "sentence", "text": "x y"}, {"do": "screenshot", "path": shot},
                                              {"do": "quit", "discard": True}],
                      env=env, extra=("--open", spath), headless=False)
    g.check(p.returncode == 0, f"--open a non-UTF-8 name, interactive: exit {p.returncode}\n  stderr: {p.stderr.strip()[-800:]}")
    g.check(os.path.exists(ctx.state(env, "autosave.json")), "no autosave written for a non-UTF-8 file name")


# ---- 2. recovery of a killed --open session -------------------------------------------------------

def case_recover_same_file(ctx):
    folder = ctx.case_dir("recover_same_file")
    env = ctx.env()
    a = ctx.write_json(os.path.join(folder, "a.json"), workspace(A_TOKENS))
    past = time.time() - 60  # clearly older than the autosave, whatever the file system's time resolution
    os.utime(a, (past, past))
    with open(a, "rb") as f:
        a_bytes = f.read()
    ctx.killed_session(folder, "session1", env, [{"do": "sentence", "text": " ".join(KILLED_EDIT)}], KILLED_EDIT,
                       extra=("--open", a))
    # a.json opens as asked; the newer unsaved edit is kept aside and offered, never put in its
    # place unasked (gui_no_false_alarms clicks Restore and Keep).
    _, state = ctx.interactive_state(folder, "session2", env, extra=("--open", a))
    g.check(state["workspace"]["tokens"] == A_TOKENS and state["dirty"] is False,
            f"--open a.json after a killed session that edited a.json: tokens {state['workspace']['tokens']}, "
            f"dirty {state['dirty']}: expected a.json as saved")
    g.check(state["file"] == os.path.abspath(a), f"the document's file is {state['file']!r}")
    offer = state.get("recovery_offer", "")
    g.check(offer and os.path.exists(offer), f"the unsaved edit is not offered: {offer!r}")
    with open(offer) as f:
        g.check(json.load(f)["tokens"] == KILLED_EDIT, "the offered file does not hold the unsaved edit")
    with open(a, "rb") as f:
        g.check(f.read() == a_bytes, "a.json itself changed")


def case_same_file_newer_on_disk(ctx):
    # Guard: when FILE is newer than the autosave, FILE wins (as the fix documents).
    folder = ctx.case_dir("same_file_newer")
    env = ctx.env()
    a = ctx.write_json(os.path.join(folder, "a.json"), workspace(A_TOKENS))
    ctx.killed_session(folder, "session1", env, [{"do": "sentence", "text": " ".join(KILLED_EDIT)}], KILLED_EDIT,
                       extra=("--open", a))
    future = time.time() + 60
    os.utime(a, (future, future))
    _, state = ctx.interactive_state(folder, "session2", env, extra=("--open", a))
    g.check(state["workspace"]["tokens"] == A_TOKENS and state["dirty"] is False,
            f"--open a.json newer than the autosave: tokens {state['workspace']['tokens']} dirty {state['dirty']}")


def case_other_document_kept(ctx):
    folder = ctx.case_dir("other_document_kept")
    a = ctx.write_json(os.path.join(folder, "a.json"), workspace(A_TOKENS))
    b = ctx.write_json(os.path.join(folder, "b.json"), workspace(B_TOKENS))
    checks = Checks()
    for name, first in (("after_a", ("--open", a)), ("after_untitled", ())):
        checks(name, other_document, ctx, folder, name, first, b)
    checks.done()


def other_document(ctx, folder, name, first, b):
    env = ctx.env()
    old = ctx.killed_session(folder, name + "_session1", env, [{"do": "sentence", "text": " ".join(KILLED_EDIT)}],
                             KILLED_EDIT, extra=first)
    _, state = ctx.interactive_state(folder, name + "_session2", env, extra=("--open", b))
    g.check(state["workspace"]["tokens"] == B_TOKENS and state["dirty"] is False,
            f"{name}: --open b.json shows {state['workspace']['tokens']} dirty {state['dirty']}")
    # The second session has autosaved b.json by now: the first one's work must be elsewhere.
    check_kept(name, env, old)


def case_saved_work_not_kept(ctx):
    # Guard: an autosave of saved work is nothing to lose; no kept file appears.
    folder = ctx.case_dir("saved_work_not_kept")
    env = ctx.env()
    a = ctx.write_json(os.path.join(folder, "a.json"), workspace(A_TOKENS))
    b = ctx.write_json(os.path.join(folder, "b.json"), workspace(B_TOKENS))
    ctx.killed_session(folder, "session1", env, [{"do": "sentence", "text": " ".join(KILLED_EDIT)}, {"do": "save"}],
                       KILLED_EDIT, extra=("--open", a), until_dirty=False)
    _, state = ctx.interactive_state(folder, "session2", env, extra=("--open", b))
    g.check(state["workspace"]["tokens"] == B_TOKENS, f"saved work: --open b.json shows {state['workspace']['tokens']}")
    g.check(not kept_files(env), f"the autosave of saved work was kept aside: {kept_files(env)}")


# ---- 3. save_pytorch with a file name that holds code ------------------------------------------

def case_pytorch_file_name(ctx):
    folder = ctx.case_dir("pytorch_file_name")
    checks = Checks()
    for i, tail in enumerate((b".json", b"#.json")):
        checks(f"name ending {tail!r}", pytorch_name, ctx, folder, i, tail)
    checks.done()


def pytorch_name(ctx, folder, i, tail):
    marker = f"/tmp/PWNED-{secrets.token_hex(8)}"
    name = b'x\nimport os; open("' + marker.encode() + b'","w")\n' + tail
    path = os.path.join(folder.encode(), name)  # the "/"s of the code make folders
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(json.dumps(workspace(A_TOKENS)).encode())
    script = os.path.join(folder, f"script{i}.py")
    try:
        p, _, _ = ctx.run(folder, f"save_pytorch_{i}", [{"do": "save_pytorch", "path": script}],
                          extra=("--open", os.fsdecode(path)))
        g.check(p.returncode == 0, f"save_pytorch ({name!r}): exit {p.returncode}\n  stderr: {p.stderr.strip()[-800:]}")
        r = subprocess.run([PYTHON, script], capture_output=True, text=True, timeout=120, cwd=folder)
        g.check(not os.path.exists(marker), f"the file name {name!r} ran code through save_pytorch: {marker} exists")
        g.check(r.returncode == 0, f"the saved script ({name!r}) does not run: exit {r.returncode}\n"
                                   f"  {r.stderr.strip()[-600:]}")
    finally:
        if os.path.exists(marker):
            os.remove(marker)


# ---- 4. a damaged autosave --------------------------------------------------------------------

def case_damaged_autosave(ctx):
    folder = ctx.case_dir("damaged_autosave")
    b = ctx.write_json(os.path.join(folder, "b.json"), workspace(B_TOKENS))
    damaged = {
        "not_json": b'{"format": "attnscope-workspace", "version": 1, "tokens": ["lost", "wo',
        "not_a_workspace": json.dumps(dict(workspace(KILLED_EDIT, {"dirty": True}), version=99)).encode(),
    }
    checks = Checks()
    for name, data in damaged.items():
        for extra, expect in (((), BOOK), (("--open", b), B_TOKENS)):
            checks(name + (" --open b.json" if extra else ""), damaged_start, ctx, folder, name, data, extra, expect)
    checks.done()


def damaged_start(ctx, folder, name, data, extra, expect):
    env = ctx.env()
    with open(ctx.state(env, "autosave.json"), "wb") as f:
        f.write(data)
    label = name + ("_open" if extra else "")
    _, state = ctx.interactive_state(folder, label, env, extra=extra)
    g.check(state["workspace"]["tokens"] == expect, f"{label}: tokens {state['workspace']['tokens']}, expected {expect}")
    check_kept(label, env, data)


# ---- 7. screenshots that cannot be written ------------------------------------------------------

def bad_screenshot_paths(ctx, folder):
    """(label, path, prepare) — prepare() sets the trap up again before each run."""
    plain = os.path.join(folder, "plain-file")
    with open(plain, "w") as f:
        f.write("x\n")
    is_dir = os.path.join(folder, "a-folder.png")
    os.makedirs(os.path.join(is_dir, "inside"), exist_ok=True)
    full = os.path.join(folder, "full.png")

    cases = [("missing_folder", os.path.join(folder, "no", "such", "folder", "x.png"), None),
             ("parent_is_a_file", os.path.join(plain, "x.png"), None),
             ("target_is_a_folder", is_dir, None),
             # The PNG is encoded, then written like every file (§3.5): a write that fails half-way
             # (RLIMIT_FSIZE, for root too) must leave nothing behind and say so once.
             ("write_fails_half_way", full, small_files)]
    if not ctx.root:
        ro = os.path.join(folder, "read-only")
        os.makedirs(ro, exist_ok=True)
        os.chmod(ro, 0o555)
        cases.append(("read_only_folder", os.path.join(ro, "x.png"), None))
    else:
        print("  read-only folder case skipped: running as root, permissions do not apply "
              "(the other cases make the write fail for root too)")
    return cases


def case_screenshot_failures(ctx):
    folder = ctx.case_dir("screenshot_failures")
    cases = bad_screenshot_paths(ctx, folder)
    checks = Checks()
    for label, path, prepare in cases:
        checks(label, screenshot_stop, ctx, folder, label, path, prepare)
    checks("folder intact", check_clean_folder, "screenshot failures", os.path.join(folder, "a-folder.png"), ["inside"])
    apps = [("release", ctx.app, {})]
    if ctx.asan_app:
        apps.append(("asan", ctx.asan_app, {"ASAN_OPTIONS": "detect_leaks=0"}))
    for which, app, env_add in apps:
        checks(which + " --keep-going", screenshot_keep_going, ctx, folder, cases, which, app, env_add)
    checks.done()
    g.check(stat.S_ISCHR(os.stat("/dev/full").st_mode) if os.path.exists("/dev/full") else True, "/dev/full changed")


def screenshot_stop(ctx, folder, label, path, prepare):
    p, d, png = ctx.run(folder, label, [{"do": "screenshot", "path": path}], preexec_fn=prepare,
                        dump=prepare is None)
    lines = nonblank(p.stderr)
    g.check(p.returncode == 2, f"screenshot {label}: exit {p.returncode}, expected 2\n  stderr: {p.stderr.strip()[-800:]}")
    g.check(len(lines) == 1 and lines[0].startswith("error: command 0 (screenshot): "),
            f"screenshot {label}: expected one 'error: command 0 (screenshot): …' line, got {lines}")
    g.check(not os.path.exists(png), f"screenshot {label}: the final screenshot was written although the run failed")


def screenshot_keep_going(ctx, folder, cases, which, app, env_add):
    cases = [c for c in cases if c[2] is None]  # a file size limit would stop every write of the run
    commands = [{"do": "screenshot", "path": path} for _, path, _ in cases] + [{"do": "sentence", "text": "go on"}]
    p, d, png = ctx.run(folder, "keep_going_" + which, commands, keep_going=True, app=app, env_add=env_add,
                        timeout=180)
    lines = nonblank(p.stderr)
    want = [f"error: command {i} (screenshot): " for i in range(len(cases))]
    g.check(p.returncode == 0, f"{which} --keep-going: exit {p.returncode}\n  stderr: {p.stderr.strip()[-1500:]}")
    g.check(not sanitizer_report(p.stderr), f"{which} --keep-going: sanitizer report:\n{p.stderr[-3000:]}")
    g.check(len(lines) == len(cases) and all(line.startswith(w) for line, w in zip(lines, want)),
            f"{which} --keep-going: stderr {lines}, expected one line per bad screenshot: {want}")
    g.check(d is not None and d["state"]["workspace"]["tokens"] == ["go", "on"] and os.path.exists(png),
            f"{which} --keep-going: the run did not go on after the failed screenshots")
    if which == "asan":
        print(f"  sanitizer build: {len(cases)} failed screenshots, no report")


# ---- 8. FIFOs ---------------------------------------------------------------------------------

def case_fifo(ctx):
    folder = ctx.case_dir("fifo")
    fifo = os.path.join(folder, "f")
    os.mkfifo(fifo)
    checks = Checks()
    for label, commands, extra, prefix in (("--open", [], ("--open", fifo), "error: "),
                                           ("open command", [{"do": "open", "path": fifo}], (), "error: command 0 (open): ")):
        checks(label, fifo_run, ctx, folder, fifo, label, commands, extra, prefix)
    checks.done()


def fifo_run(ctx, folder, fifo, label, commands, extra, prefix):
    try:
        p, d, png = ctx.run(folder, "fifo_" + label.strip("-").replace(" ", "_"), commands, extra=extra,
                            timeout=FIFO_TIMEOUT, dump=False)
    except g.Fail as e:
        raise g.Fail(f"{label} of a FIFO hung: {e}")
    lines = nonblank(p.stderr)
    g.check(p.returncode == 2 and len(lines) == 1 and lines[0].startswith(prefix) and fifo in lines[0],
            f"{label} of a FIFO: exit {p.returncode}, stderr {lines}; expected exit 2 and one '{prefix}…{fifo}…' line")


# ---- 10. atomic saves ---------------------------------------------------------------------------

def saved_tokens(path):
    with open(path) as f:
        return json.load(f)["tokens"]


def case_save_side_effects(ctx):
    folder = ctx.case_dir("save_side_effects")
    old_umask = os.umask(0o022)
    try:
        long_dir = os.path.join(folder, "long")
        os.makedirs(long_dir)
        long_ws = os.path.join(long_dir, "w" * 245 + ".json")
        long_py = os.path.join(long_dir, "p" * 247 + ".py")
        long_csv = os.path.join(long_dir, "m" * 246 + ".csv")
        assert len(os.path.basename(long_ws)) == len(os.path.basename(long_py)) == len(os.path.basename(long_csv)) == 250
        links, elsewhere = os.path.join(folder, "links"), os.path.join(folder, "elsewhere")
        os.makedirs(links)
        os.makedirs(elsewhere)
        real = ctx.write_json(os.path.join(elsewhere, "real.json"), workspace(A_TOKENS))
        link = os.path.join(links, "link.json")
        os.symlink("../elsewhere/real.json", link)
        private_dir = os.path.join(folder, "private")
        os.makedirs(private_dir)
        private = ctx.write_json(os.path.join(private_dir, "mine.json"), workspace(A_TOKENS))
        os.chmod(private, 0o600)
        commands = [{"do": "sentence", "text": " ".join(KILLED_EDIT)},
                    {"do": "save", "path": long_ws},
                    {"do": "save_pytorch", "path": long_py},
                    {"do": "export_map", "stage": "weights", "head": 0, "path": long_csv, "format": "csv"},
                    {"do": "save", "path": link},
                    {"do": "save", "path": private}]
        p, d, png = ctx.run(folder, "saves", commands, keep_going=True)
        problems = [f"stderr: {line}" for line in error_lines(p.stderr)]
        for path in (long_ws, long_py, long_csv):
            if not os.path.exists(path):
                problems.append(f"a 250-byte name was not written: {os.path.basename(path)[:12]}…")
        if os.path.exists(long_ws) and saved_tokens(long_ws) != KILLED_EDIT:
            problems.append("the 250-byte workspace does not hold the edit")
        if not os.path.islink(link):
            problems.append("save through a symbolic link replaced the link by a file")
        elif os.readlink(link) != "../elsewhere/real.json":
            problems.append(f"the link now points to {os.readlink(link)}")
        if saved_tokens(real) != KILLED_EDIT:
            problems.append("the link's target did not get the saved workspace")
        mode = stat.S_IMODE(os.stat(private).st_mode)
        if mode != 0o600:
            problems.append(f"a 0600 file is {mode:o} after the save")
        if saved_tokens(private) != KILLED_EDIT:
            problems.append("the 0600 file does not hold the edit")
        check_clean_folder("saves", long_dir, [os.path.basename(x) for x in (long_ws, long_py, long_csv)
                                               if os.path.exists(x)])
        check_clean_folder("saves", links, ["link.json"])
        check_clean_folder("saves", elsewhere, ["real.json"])
        check_clean_folder("saves", private_dir, ["mine.json"])
        g.check(p.returncode == 0 and not problems, f"save side effects (exit {p.returncode}):\n    " + "\n    ".join(problems))
    finally:
        os.umask(old_umask)


def failing_save(ctx, folder, label, path, intact, preexec_fn=None):
    """A save that must fail: exit 2, one `error: command 1 (save): …` line, and `intact()` holds."""
    edit = {"do": "sentence", "text": " ".join(KILLED_EDIT)}
    p, d, png = ctx.run(folder, label, [edit, {"do": "save", "path": path}], preexec_fn=preexec_fn,
                        dump=preexec_fn is None)
    lines = nonblank(p.stderr)
    g.check(p.returncode == 2, f"save {label}: exit {p.returncode}, expected 2\n  stderr: {p.stderr.strip()[-800:]}")
    g.check(len(lines) == 1 and lines[0].startswith("error: command 1 (save): "),
            f"save {label}: expected one 'error: command 1 (save): …' line, got {lines}")
    intact()


def small_files():
    """RLIMIT_FSIZE: every write past 300 bytes fails with EFBIG, for root as well (SIGXFSZ ignored)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))


def old_file(folder, sub):
    """A folder `sub` holding old.json; returns (its path, a check that it and the folder are as they were)."""
    d = os.path.join(folder, sub)
    os.makedirs(d)
    path = Ctx.write_json(os.path.join(d, "old.json"), workspace(A_TOKENS))
    with open(path, "rb") as f:
        before = f.read()

    def intact():
        with open(path, "rb") as f:
            g.check(f.read() == before, f"{sub}: the old file changed although the save failed")
        check_clean_folder(sub, d, ["old.json"])
    return path, intact


def case_save_failures(ctx):
    folder = ctx.case_dir("save_failures")
    checks = Checks()
    # The target is a folder (with a file in it): the folder stays as it was.
    target_dir = os.path.join(folder, "is-a-folder.json")
    os.makedirs(target_dir)
    with open(os.path.join(target_dir, "keep.txt"), "w") as f:
        f.write("keep\n")

    def folder_intact():
        check_clean_folder("target_is_a_folder", target_dir, ["keep.txt"])
        with open(os.path.join(target_dir, "keep.txt")) as f:
            g.check(f.read() == "keep\n", "save onto a folder: its content changed")
    checks("target is a folder", failing_save, ctx, folder, "target_is_a_folder", target_dir, folder_intact)
    # The parent is a file.
    plain = os.path.join(folder, "plain-file")
    with open(plain, "w") as f:
        f.write("x\n")

    def plain_intact():
        with open(plain) as f:
            g.check(f.read() == "x\n", "parent_is_a_file: the file changed")
    checks("parent is a file", failing_save, ctx, folder, "parent_is_a_file", os.path.join(plain, "w.json"), plain_intact)
    # A write that fails half-way: the old file stays whole, no temporary file is left.
    path, intact = old_file(folder, "half")
    checks("write fails half-way", failing_save, ctx, folder, "write_fails_half_way", path, intact, small_files)
    if ctx.root:
        print("  read-only folder save skipped: running as root, permissions do not apply "
              "(the cases above fail for root too)")
    else:
        path, intact = old_file(folder, "read-only")
        os.chmod(os.path.dirname(path), 0o555)
        checks("read-only folder", failing_save, ctx, folder, "read_only_folder", path, intact)
    checks.done()


CASES = [
    ("1 settings.json with wrong types (guard)", case_settings_wrong_types),
    ("1 autosave view with wrong types (guard)", case_autosave_view_wrong_types),
    ("1 file name not UTF-8", case_file_name_not_utf8),
    ("2 recover a killed --open session", case_recover_same_file),
    ("2 the file newer than the autosave (guard)", case_same_file_newer_on_disk),
    ("2 another document's autosave is kept", case_other_document_kept),
    ("2 saved work is not kept (guard)", case_saved_work_not_kept),
    ("3 save_pytorch with code in the file name", case_pytorch_file_name),
    ("4 a damaged autosave is kept", case_damaged_autosave),
    ("7 screenshots that cannot be written", case_screenshot_failures),
    ("8 FIFOs", case_fifo),
    ("10 save: long names, symlinks, permissions", case_save_side_effects),
    ("10 save failures", case_save_failures),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--app", required=True)
    ap.add_argument("--cli", required=True)  # the same arguments as the other GUI tests
    ap.add_argument("--asan-app", default="", help="the sanitizer build's attnscope, checked if it exists")
    ap.add_argument("--only", default="", help="run the cases whose title contains this text")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    asan = args.asan_app if args.asan_app and os.access(args.asan_app, os.X_OK) else ""
    if args.asan_app and not asan:
        print(f"  no sanitizer build at {args.asan_app}: its screenshot checks are skipped")
    start = time.time()
    tmp = tempfile.mkdtemp(prefix="attnscope-gui-state-")
    failed = []
    ctx = None
    try:
        with g.Xvfb() as x:
            ctx = Ctx(os.path.abspath(args.app), os.path.abspath(args.cli), asan, x.display, tmp)
            try:
                for title, case in CASES:
                    if args.only and args.only not in title:
                        continue
                    t0 = time.time()
                    try:
                        case(ctx)
                        print(f"ok    {title} ({time.time() - t0:.1f} s)")
                    except g.Fail as e:
                        failed.append(f"{title}: {e}")
                        print(f"FAIL  {title} ({time.time() - t0:.1f} s): {e}")
            finally:
                ctx.close()
    finally:
        for root, dirs, _ in os.walk(tmp):
            for d in dirs:
                try:
                    os.chmod(os.path.join(root, d), 0o755)
                except OSError:
                    pass
        if failed or args.keep:
            print(f"files kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{ctx.runs if ctx else 0} runs in {time.time() - start:.1f} s")
    if failed:
        print(f"FAILED: {len(failed)} check(s)")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
