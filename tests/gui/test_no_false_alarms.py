"""No false alarms, no surprise work (docs/DESIGN.md §3.5): what a lecturer tripped on.

- `--open FILE` opens FILE. The last session's unsaved changes to it, newer than the file (a
  killed session), are offered — "Restore the changes" or "Keep the file as saved" — never put in
  its place unasked (they were, with a note). Restore brings them back, unsaved; Keep shows the
  file as saved, and the changes stay in the state folder's kept file.
- A file of the app's presets folder (`make run` opens assets/presets/multihead.json) opens
  untitled, so Save asks for a name and never writes into the app's own presets; so does an
  autosave of one, restored.
- Switching presets, or stepping through a lesson with the keys, with nothing edited leaves no
  unsaved changes: Ctrl+Q quits at once, no prompt (a preset loaded as unsaved, so every switch
  and every quit after a lesson asked). An edit after a preset is unsaved; undone, it is not.

Usage: test_no_false_alarms.py --app APP --cli CLI --presets PRESETS_DIR
"""
import glob
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_common import book_workspace as book  # noqa: E402
from test_teaching import STEP_TIMEOUT, App, Display, arguments, run_checks, run_commands, write_commands  # noqa: E402


def expect(cond, message):
    if not cond:
        raise AssertionError(message)



def cell(ws):
    return ws["embeddings"][1][0]


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def recovery_offered(exe, display, folder):
    state = os.path.join(folder, "state-offer")
    ws = os.path.join(folder, "lecture.json")
    with open(ws, "w") as f:
        json.dump(book(), f)
    # A session edits the file, autosaves, and is killed before saving.
    cmds = write_commands(folder, "edit", [{"do": "set_cell", "row": 1, "col": 0, "value": 0.777}])
    app = App(exe, display, ["--open", ws, "--commands", cmds], state_dir=state)
    try:
        autosave = os.path.join(state, "attnscope", "autosave.json")

        def autosaved(d):
            with open(autosave) as f:
                return abs(cell(json.load(f)) - 0.777) < 1e-6
        app.wait_for("the edit autosaved", autosaved)
    finally:
        app.close(signal.SIGKILL)
        shutil.rmtree(app.folder, ignore_errors=True)
    time.sleep(1.1)  # the autosave is newer than the file by more than the clock's grain
    os.utime(ws, (time.time() - 60, time.time() - 60))
    before = digest(ws)
    for answer in ("recovery_keep", "recovery_restore"):
        if answer == "recovery_restore":  # the kept changes are offered again: put them back where they were
            kept = sorted(glob.glob(os.path.join(state, "attnscope", "autosave-kept-*.json")))
            shutil.copy(kept[-1], os.path.join(state, "attnscope", "autosave.json"))
            os.utime(ws, (time.time() - 60, time.time() - 60))
        with App(exe, display, ["--open", ws], state_dir=state) as app:
            d = app.wait_for("the offer", lambda d: d["state"].get("recovery_offer"))
            expect(abs(cell(d["state"]["workspace"]) - 0.55) < 1e-6 and not d["state"]["dirty"],
                   f"--open {ws}: the file was not what opened (cell {cell(d['state']['workspace'])}, dirty {d['state']['dirty']})")
            kept = d["state"]["recovery_offer"]
            expect(os.path.exists(kept), f"the offered changes are not kept: {kept}")
            time.sleep(0.5)  # the prompt sizes itself over its first frames: its buttons' places settle
            app.click(answer)
            if answer == "recovery_keep":
                d = app.wait_for("the prompt closed", lambda d: not d["state"]["recovery_offer"])
                time.sleep(0.3)
                d = app.layout()
                expect(abs(cell(d["state"]["workspace"]) - 0.55) < 1e-6 and not d["state"]["dirty"],
                       "Keep the file: the file is not shown as saved")
                expect(os.path.exists(kept), "Keep the file: the changes were not kept")
                print(f"  --open: the file opened as saved, the changes offered; Keep: the file, changes in {os.path.basename(kept)}")
            else:
                d = app.wait_for("the restored changes", lambda d: abs(cell(d["state"]["workspace"]) - 0.777) < 1e-6)
                expect(d["state"]["dirty"] and os.path.samefile(d["state"]["file"], ws),
                       f"Restore: not unsaved changes to {ws}: dirty {d['state']['dirty']}, file {d['state']['file']!r}")
                print("  Restore: the changes back, unsaved, the window's file the one asked for")
    expect(digest(ws) == before, "the file on disk changed")


def presets_open_untitled(exe, display, folder, presets):
    preset = os.path.join(presets, "causal.json")
    before = digest(preset)
    d = run_commands(exe, display, folder, "preset-file", [], "--open", preset)
    expect(d["state"]["file"] == "" and "untitled" in d["state"]["title"],
           f"--open of a preset's file: file {d['state']['file']!r}, title {d['state']['title']!r}")
    # A scripted save with no name is refused, as Ctrl+S would ask for one; the preset is untouched.
    cmds = write_commands(folder, "save-preset", [{"do": "set", "field": "seed", "value": 5}, {"do": "save"}])
    env = dict(os.environ, DISPLAY=display, HOME=os.path.join(folder, "home"), XDG_STATE_HOME=os.path.join(folder, "state"))
    p = subprocess.run([exe, "--open", preset, "--commands", cmds, "--keep-going", "--screenshot", os.path.join(folder, "x.png")],
                       env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT * 2)
    errors = [l for l in p.stderr.splitlines() if l.startswith("error:")]
    expect(len(errors) == 1 and "command 1 (save)" in errors[0], f"save of an opened preset file: {errors}")
    expect(digest(preset) == before, "the app wrote into its presets folder")
    print(f"  --open of a preset's file: untitled; save refused ({errors[0][:90]}…), the preset untouched")


def nothing_edited_nothing_asked(exe, display, folder, presets):
    # Presets switched by the user's commands: no unsaved changes; an edit is; undone, it is not.
    d = run_commands(exe, display, folder, "presets", [{"do": "preset", "name": "causal"}, {"do": "preset", "name": "multihead"}])
    expect(not d["state"]["dirty"], "two presets loaded: unsaved changes reported")
    d = run_commands(exe, display, folder, "preset-edit", [{"do": "preset", "name": "causal"},
                                                          {"do": "set", "field": "seed", "value": 9}])
    expect(d["state"]["dirty"], "an edit after a preset is not unsaved")
    d = run_commands(exe, display, folder, "preset-edit-undo", [{"do": "preset", "name": "causal"},
                                                               {"do": "set", "field": "seed", "value": 9}, {"do": "undo"}])
    expect(not d["state"]["dirty"], "the edit undone: unsaved changes reported")
    # A lesson stepped through with the keys, then Ctrl+Q: the app quits, nothing asked.
    lesson = os.path.join(os.path.dirname(os.path.abspath(presets)), "lessons", "chapter3.json")
    with App(exe, display, ["--lesson", lesson, "--size", "1280x800"]) as app:
        app.settled("step 1", lambda d: d["state"]["lesson_step"] == 1)
        for step in (2, 3, 4):
            app.key("Right")
            app.settled(f"step {step}", lambda d, step=step: d["state"]["lesson_step"] == step)
        d = app.layout()
        expect(not d["state"]["dirty"], f"after three steps: {d['state']['title']!r} has unsaved changes")
        app.key("ctrl+q")
        try:
            app.proc.wait(STEP_TIMEOUT)
        except subprocess.TimeoutExpired:
            d = app.layout()
            raise AssertionError(f"Ctrl+Q after stepping through a lesson did not quit: prompt {d['state'].get('prompt')!r}")
        expect(app.proc.returncode == 0, f"exit {app.proc.returncode}")
    print("  presets switched and a lesson stepped through: nothing unsaved, Ctrl+Q quits at once")


def main():
    args = arguments(__doc__.split("\n")[0])
    folder = tempfile.mkdtemp(prefix="attnscope-false-alarms-")
    try:
        with Display() as display:
            code = run_checks([
                ("--open offers the last session's newer changes", lambda: recovery_offered(args.app, display.name, folder)),
                ("a preset's file opens untitled", lambda: presets_open_untitled(args.app, display.name, folder, args.presets)),
                ("nothing edited, nothing asked", lambda: nothing_edited_nothing_asked(args.app, display.name, folder, args.presets)),
            ])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
