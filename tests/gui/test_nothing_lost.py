"""Nothing lost silently: the app's own changes to what the user chose say so, and
unsaved work is asked about before it goes.

- num_heads and d_out: `set d_out 3` on the multihead preset moves num_heads 2 → 1 with a toast
  that says why; `set d_out 14` after it brings 2 back; so does `set d_out` 3, 4, …, 14 (the values
  a drag passes) and a real drag of the d_out slider (xdotool), which is one undo step.
- Seed policy: switching the step (`set variant`) gives that step's notebook seed and says it
  replaced the user's; a preset has its step's seed; other edits keep the seed.
- A typed seed commits when the field loses focus (a click elsewhere), without Enter, as one undo
  step (xdotool: click, type, click away, Ctrl+Z).
- Quit's "Save" saves and quits: a workspace with a file (click on "Save"); an untitled one
  (`unsaved save` from the script, then the Save as dialog filled in with xdotool, and a name with
  emoji pasted into it: kept, as it was not); a failed save
  and a cancelled Save as dialog do not quit and say why; Escape cancels the prompt and the dialog.
- New, a preset and Open (File menu, Ctrl+O's dialog: xdotool) ask first when there are unsaved
  changes: Cancel keeps the work, Discard replaces it, Save writes it and then opens. Commands of a
  script are not asked about (interactive and headless runs).

Usage: test_nothing_lost.py --app APP --cli CLI --presets PRESETS_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gui_common import Clipboard  # noqa: E402
from test_teaching import (Display, STEP_TIMEOUT, arguments, run_checks, run_commands,  # noqa: E402
                           start_ready, write_commands)

EDIT = {"do": "set_cell", "row": 1, "col": 0, "value": 0.77}


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def cell(state):
    return state["workspace"]["embeddings"][1][0]


def read_json(path):
    with open(path) as f:
        return json.load(f)


def wait_exit(app, what):
    try:
        return app.proc.wait(STEP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{what}: the app did not quit")


def still_running(app, what, seconds=1.0):
    time.sleep(seconds)
    expect(app.proc.poll() is None, f"{what}: the app quit (exit {app.proc.returncode})")


def main():
    args = arguments(__doc__.split("\n")[0])
    work = tempfile.mkdtemp(prefix="attnscope-nothing-lost-")
    presets = args.presets

    def copy_of(name, as_name):
        path = os.path.join(work, as_name)
        shutil.copy(os.path.join(presets, name + ".json"), path)
        return path

    try:
        with Display() as display:
            def headless(name, commands, *extra):
                return run_commands(args.app, display.name, work, name, commands, *extra)["state"]

            def interactive(name, commands, *extra):
                """An interactive app that has applied `commands` (a script leaves it open)."""
                app = start_ready(args.app, display.name, [*extra, "--commands", write_commands(work, name, commands)])
                return app

            def num_heads_follow_d_out():
                mh = {"do": "preset", "name": "multihead"}
                s = headless("d_out-3", [mh, {"do": "set", "field": "d_out", "value": 3}])
                print(f"  d_out 3: num_heads {s['num_heads']}, toast {s['toast']!r}")
                expect(s["d_out"] == 3 and s["num_heads"] == 1, f"d_out 3: num_heads {s['num_heads']}, expected 1")
                expect("num_heads 2 → 1" in s["toast"] and "not divisible by 2" in s["toast"],
                       f"d_out 3: the toast {s['toast']!r} does not say num_heads changed and why")
                s = headless("d_out-3-14", [mh, {"do": "set", "field": "d_out", "value": 3},
                                            {"do": "set", "field": "d_out", "value": 14}])
                print(f"  d_out 3 then 14: num_heads {s['num_heads']}, toast {s['toast']!r}")
                expect(s["d_out"] == 14 and s["num_heads"] == 2, f"d_out 3 then 14: num_heads {s['num_heads']}, expected 2")
                expect("back to 2" in s["toast"], f"d_out 14: the toast {s['toast']!r} does not say num_heads is back")
                s = headless("d_out-drag", [mh, *[{"do": "set", "field": "d_out", "value": v} for v in range(3, 15)]])
                print(f"  d_out 3, 4, …, 14: num_heads {s['num_heads']}")
                expect(s["num_heads"] == 2, f"d_out 3 … 14: num_heads {s['num_heads']}, expected 2")

            def drag_d_out_slider():
                app = start_ready(args.app, display.name, ["--open", os.path.join(presets, "multihead.json")])
                with app:
                    d = app.layout()
                    r = d["widgets"]["d_out"]
                    y = r["y"] + r["h"] / 2
                    x = r["x"] + r["w"] * 1.5 / 64  # about value 2 (1 … 64 across the slider)
                    app.move(x, y)
                    app.xdotool("mousedown", 1)
                    time.sleep(0.15)
                    seen = set()
                    target = 14
                    deadline = time.time() + 40  # a loaded machine draws slowly: time, not steps
                    while time.time() < deadline:  # right, 2 px a step, until the slider says 14
                        s = app.layout()["state"]
                        seen.add(s["d_out"])
                        if s["d_out"] == target:
                            time.sleep(0.4)  # the frames may lag the pointer: still 14 once they caught up?
                            s = app.layout()["state"]
                            seen.add(s["d_out"])
                            if s["d_out"] == target:
                                break
                        x += 2 if s["d_out"] < target else -1
                        app.xdotool("mousemove", "--window", app.find_window(), int(round(x)), int(round(y)))
                        time.sleep(0.05)
                    app.xdotool("mouseup", 1)
                    s = app.settled("the drag's result", lambda d: d["state"]["d_out"] == target)["state"]
                    odd = sorted(v for v in seen if v % 2)
                    print(f"  dragged d_out 2 → {s['d_out']} through {sorted(seen)}: num_heads {s['num_heads']}")
                    expect(odd, "the drag passed no odd d_out")
                    expect(s["num_heads"] == 2, f"after the drag: num_heads {s['num_heads']}, expected 2")
                    app.key("ctrl+z")  # the drag was one undo step
                    s = app.settled("undo", lambda d: d["state"]["d_out"] != target)["state"]
                    print(f"  Ctrl+Z: d_out {s['d_out']}, num_heads {s['num_heads']}")
                    expect(s["d_out"] == 2 and s["num_heads"] == 2 and not s["can_undo"],
                           f"one Ctrl+Z: d_out {s['d_out']}, num_heads {s['num_heads']}, can_undo {s['can_undo']}")

            def seed_policy():
                s = headless("seed-switch", [{"do": "preset", "name": "multihead"},
                                             {"do": "set", "field": "seed", "value": 7},
                                             {"do": "set", "field": "variant", "value": "self_attention_v2"}])
                print(f"  seed 7, then step 2b: seed {s['seed']}, toast {s['toast']!r}")
                expect(s["seed"] == 789, f"step 2b: seed {s['seed']}, expected the notebook's 789")
                expect("seed 789 (was 7)" in s["toast"], f"the toast {s['toast']!r} does not say the seed was replaced")
                s = headless("seed-kept", [{"do": "preset", "name": "causal"}, {"do": "set", "field": "seed", "value": 5},
                                           {"do": "set", "field": "d_out", "value": 4}, {"do": "sentence", "text": "a b"},
                                           {"do": "set", "field": "dropout", "value": 0.2}])
                expect(s["seed"] == 5, f"other edits: seed {s['seed']}, expected 5 (kept)")
                for name, seed in (("self_attention_v1", 123), ("self_attention_v2", 789), ("causal", 789),
                                   ("multihead_wrapper", 123), ("multihead", 123)):
                    s = headless("seed-preset-" + name, [{"do": "set", "field": "seed", "value": 5},
                                                         {"do": "preset", "name": name}])
                    expect(s["seed"] == seed, f"preset {name}: seed {s['seed']}, expected {seed}")
                print("  presets: the notebook's seed of their step; other edits keep the seed")

            def typed_seed_commits_on_click_away():
                app = start_ready(args.app, display.name, ["--open", os.path.join(presets, "multihead.json")])
                with app:
                    app.click("seed")
                    app.key("ctrl+a")
                    app.type("4242")
                    status = app.layout()["panels"]["status"]
                    app.click_at(status["x"] + status["w"] / 2, status["y"] + status["h"] / 2)  # away, no Enter
                    s = app.settled("the typed seed", lambda d: d["state"]["seed"] == 4242)["state"]
                    print(f"  typed 4242 and clicked away: seed {s['seed']}, dirty {s['dirty']}")
                    app.key("ctrl+z")
                    s = app.settled("undo", lambda d: d["state"]["seed"] != 4242)["state"]
                    print(f"  Ctrl+Z: seed {s['seed']}, can_undo {s['can_undo']}")
                    expect(s["seed"] == 123 and not s["can_undo"], f"one Ctrl+Z: seed {s['seed']}, can_undo {s['can_undo']}")

            def quit_save_saves_and_quits():
                # A file: "Save" writes it, then quits.
                path = copy_of("self_attention_v2", "quit-save.json")
                app = interactive("quit-save", [EDIT, {"do": "quit"}], "--open", path)
                with app:
                    app.settled("the prompt", lambda d: "quit_save" in d["widgets"] and d["state"]["prompt"] == "quit")
                    app.click("quit_save")
                    code = wait_exit(app, "\"Save\" in the quit prompt")
                print(f"  titled: Save → exit {code}, cell (1,0) on disk {read_json(path)['embeddings'][1][0]}")
                expect(code == 0, f"exit {code}")
                expect(abs(read_json(path)["embeddings"][1][0] - 0.77) < 1e-6, "the file does not hold the edit")

                # Untitled: the Save as dialog, then quit.
                target = os.path.join(work, "untitled-saved.json")
                app = interactive("quit-untitled", [EDIT, {"do": "quit"}, {"do": "unsaved", "choice": "save"}])
                with app:
                    app.settled("the Save as dialog", lambda d: "file_name" in d["widgets"] and d["state"]["after_save"] == "quit")
                    app.type_file_name(target)
                    app.key("Return")
                    code = wait_exit(app, "Save as after the quit prompt's Save")
                print(f"  untitled: Save, Save as {os.path.basename(target)} → exit {code}")
                expect(code == 0 and os.path.exists(target), f"exit {code}, {target} written: {os.path.exists(target)}")
                expect(abs(read_json(target)["embeddings"][1][0] - 0.77) < 1e-6, "the saved file does not hold the edit")

                # A folder and a name with emoji, pasted as the name: ImGui holds 16-bit characters,
                # and the field had made each U+FFFD ("notes �/pizza �.json": no such folder, the
                # save refused); the field keeps them (widgets/kept_text.h).
                folder = os.path.join(work, "notes \U0001F4DA")
                os.makedirs(folder, exist_ok=True)
                target = os.path.join(folder, "pizza \U0001F355.json")
                app = interactive("quit-untitled-emoji", [EDIT, {"do": "quit"}, {"do": "unsaved", "choice": "save"}])
                with app:
                    app.settled("the Save as dialog", lambda d: "file_name" in d["widgets"] and d["state"]["after_save"] == "quit")

                    def paste(attempt):
                        time.sleep(0.3 * attempt)  # the dialog's places settle
                        app.click("file_name")
                        app.key("ctrl+a")
                        app.key("ctrl+v")
                    with Clipboard(display.name, target):
                        app.until(paste, "the pasted name", lambda d: d["state"]["file_dialog"]["name"] == target, 3, 10)
                    app.key("Return")
                    code = wait_exit(app, "Save as a name with emoji after the quit prompt's Save")
                print(f"  untitled: Save as {os.path.relpath(target, work)!r} (pasted) → exit {code}")
                expect(code == 0 and os.path.exists(target), f"exit {code}, {target!r} written: {os.path.exists(target)}")
                expect(abs(read_json(target)["embeddings"][1][0] - 0.77) < 1e-6, "the saved file does not hold the edit")

                # Untitled, Save as cancelled (its Cancel, or Escape as in any dialog): no quit, and a
                # message. Escape in the quit prompt cancels it (it did nothing in either).
                for way in ("click", "Escape"):
                    app = interactive(f"quit-cancelled-{way}", [EDIT, {"do": "quit"}, {"do": "unsaved", "choice": "save"}])
                    with app:
                        app.settled("the Save as dialog", lambda d: "file_cancel" in d["widgets"] and d["state"]["after_save"] == "quit")
                        app.click("file_cancel") if way == "click" else app.key("Escape")
                        s = app.settled("the message", lambda d: "not quitting" in d["state"]["toast"])["state"]
                        still_running(app, f"Save as cancelled ({way})")
                        print(f"  untitled, Save as cancelled ({way}): still open, {s['toast']!r}")
                        expect(s["dirty"] and s["after_save"] == "" and "file_cancel" not in app.layout()["widgets"],
                               f"dirty {s['dirty']}, after_save {s['after_save']!r}, or the dialog stayed")
                app = interactive("quit-escape", [EDIT, {"do": "quit"}])
                with app:
                    app.settled("the prompt", lambda d: "quit_save" in d["widgets"] and d["state"]["prompt"] == "quit")
                    app.key("Escape")
                    s = app.settled("the prompt gone", lambda d: "quit_save" not in d["widgets"])["state"]
                    still_running(app, "Escape in the quit prompt")
                    print("  Escape in the quit prompt: cancelled, the work kept")
                    expect(s["dirty"] and s["prompt"] == "", f"dirty {s['dirty']}, prompt {s['prompt']!r}")

                # The save fails (its folder is gone): no quit, and why.
                folder = os.path.join(work, "gone")
                os.makedirs(folder, exist_ok=True)
                path = os.path.join(folder, "w.json")
                shutil.copy(os.path.join(presets, "multihead.json"), path)
                app = interactive("quit-fails", [EDIT, {"do": "quit"}], "--open", path)
                with app:
                    app.settled("the prompt", lambda d: "quit_save" in d["widgets"])
                    shutil.rmtree(folder)
                    app.click("quit_save")
                    s = app.settled("the message", lambda d: d["state"]["toast"].startswith("Not saved, so not quitting: "))["state"]
                    still_running(app, "a failed save")
                    print(f"  failed save: still open, {s['toast']!r}")
                    expect("cannot write" in s["toast"] and s["toast_error"], f"toast {s['toast']!r}")
                    expect(s["dirty"] and abs(cell(s) - 0.77) < 1e-6, "the edit is not on screen any more")

            def new_preset_open_ask_first():
                path = copy_of("self_attention_v2", "ask.json")
                other = copy_of("causal", "other.json")
                app = interactive("ask", [EDIT], "--open", path)
                with app:
                    def menu(item, submenu=None):
                        app.click("menu_file")
                        if submenu:
                            d = app.wait_for(submenu, lambda d: submenu in d["widgets"])
                            r = d["widgets"][submenu]
                            app.move(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
                        app.click(item)

                    # New: asked; Cancel keeps the work.
                    menu("menu_new")
                    s = app.settled("New's prompt", lambda d: d["state"]["prompt"] == "new" and "new_cancel" in d["widgets"])["state"]
                    expect(abs(cell(s) - 0.77) < 1e-6 and s["dirty"], "New replaced the work before the answer")
                    # Ctrl+Q over the question: refused and said; New's question stays (the quit's
                    # had replaced it).
                    app.key("ctrl+q")
                    d = app.settled("Ctrl+Q refused", lambda d: "quit: not now" in d["state"]["toast"])
                    s = d["state"]
                    expect(s["prompt"] == "new" and s["toast_error"], f"prompt {s['prompt']!r}, toast {s['toast']!r}")
                    # … in its box above the question's dimming, not in the dimmed status bar.
                    expect("toast" in d["panels"] and "toast" not in d["widgets"],
                           f"the refusal is not above the question: panels {sorted(d['panels'])}")
                    print(f"  Ctrl+Q over New's question: {s['toast']!r}")
                    app.click("new_cancel")
                    s = app.settled("Cancel", lambda d: d["state"]["prompt"] == "" and "new_cancel" not in d["widgets"])["state"]
                    print(f"  New → asked; Cancel: cell {cell(s)}, dirty {s['dirty']}")
                    expect(abs(cell(s) - 0.77) < 1e-6 and s["dirty"], "Cancel did not keep the work")

                    # Open (Ctrl+O's dialog): asked; Save writes the work, then opens.
                    app.key("ctrl+o")
                    app.type_file_name(other)
                    app.key("Return")
                    app.settled("Open's prompt", lambda d: d["state"]["prompt"] == "open" and "open_save" in d["widgets"])
                    app.click("open_save")
                    s = app.settled("Save, then open", lambda d: d["state"]["file"] == other)["state"]
                    print(f"  Open → asked; Save: {os.path.basename(path)} saved, {os.path.basename(s['file'])} open")
                    expect(s["variant"] == "causal" and not s["dirty"], f"variant {s['variant']}, dirty {s['dirty']}")
                    expect(abs(read_json(path)["embeddings"][1][0] - 0.77) < 1e-6, "ask.json does not hold the edit")
                    states = os.path.join(app.state_dir, "attnscope")
                    kept = [f for f in os.listdir(states) if "unsaved" in f] if os.path.isdir(states) else []
                    expect(not kept, f"a copy was kept aside as well: {kept}")

                    # A preset: asked; Discard loads it.
                    app.click("seed")  # an unsaved change to other.json
                    app.key("ctrl+a")
                    app.type("99")
                    app.key("Return")
                    app.settled("seed 99", lambda d: d["state"]["seed"] == 99 and d["state"]["dirty"])
                    menu("menu_preset_multihead", "menu_presets")
                    app.settled("the preset's prompt", lambda d: d["state"]["prompt"] == "preset" and "preset_discard" in d["widgets"])
                    app.click("preset_discard")
                    s = app.settled("Discard", lambda d: d["state"]["variant"] == "multihead")["state"]
                    print(f"  preset → asked; Discard: variant {s['variant']}, file {s['file']!r}")
                    expect(s["file"] == "" and s["seed"] == 123, f"file {s['file']!r}, seed {s['seed']}")
                    expect(read_json(other)["model"]["seed"] == 789, "Discard wrote other.json")

                # A script is not asked: interactive and headless runs go on.
                app = interactive("script-new", [EDIT, {"do": "preset", "name": "causal"}, {"do": "set", "field": "seed", "value": 3}],
                                  "--open", copy_of("multihead", "script.json"))
                with app:
                    s = app.settled("the script", lambda d: d["state"]["seed"] == 3)["state"]
                    print(f"  a script's preset with unsaved changes: prompt {s['prompt']!r}, variant {s['variant']}")
                    expect(s["prompt"] == "" and s["variant"] == "causal", f"prompt {s['prompt']!r}, variant {s['variant']}")
                s = headless("script-headless", [EDIT, {"do": "new"}, EDIT, {"do": "open", "path": other}])
                expect(s["prompt"] == "" and s["variant"] == "causal", f"headless: prompt {s['prompt']!r}")

            code = run_checks([("num_heads follows d_out and comes back", num_heads_follow_d_out),
                               ("a d_out slider drag keeps 2 heads", drag_d_out_slider),
                               ("seed policy", seed_policy),
                               ("a typed seed commits on click away", typed_seed_commits_on_click_away),
                               ("quit's Save saves and quits", quit_save_saves_and_quits),
                               ("New, a preset and Open ask first", new_preset_open_ask_first)])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
