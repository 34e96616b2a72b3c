"""Lesson mode, driven: Next, Back, a step by number and closing, as commands
(`lesson_next`, `lesson_back`, `lesson_step`, `lesson_close`, `lesson_open`), as keys (Space, →,
PageDown; ←, PageUp, Shift+Space — xdotool, one interactive app) and through File › Open lesson;
and damaged lessons.

- Commands: Next, Next, Back from step 1 is step 2, with step 2's workspace and maps; Back on the
  first step and Next on the last stay (and say so); lesson_step out of range is one error line
  and the lesson stays where it was; closing brings back the view from before the lesson (side
  panels, columns, nothing dimmed, no lesson panel).
- A damaged lesson — bad JSON, an unknown command, an unknown map, code lines past the file's end,
  a command that cannot apply (found by rehearsing every step before anything runs) — and
  `--step` out of range: `attnscope --lesson FILE` exits 2 with one line naming the file, the step
  and the field, before a window opens; `lesson_open` of it in a script (--keep-going) is one error
  line, the run goes on, and the work before it (model, embeddings, selection) is exactly as it was.
- Interactive: with unsaved work, File › Open lesson › Chapter 3 asks first (Discard goes on); the
  lesson keys step through it while ← and → do not move the selected token; File › Open lesson ›
  A lesson file… is the file browser, in assets/lessons, listing chapter3.json, and → does not
  turn the page behind it; typing a path with a space into its name field does not turn the page;
  a damaged lesson opened there is an error in the status bar, the app keeps running, the open
  lesson and the work stay; closing the lesson gives ← and → back to the token selection.

Usage: test_lesson_navigation.py --app APP --cli CLI --presets PRESETS_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_teaching import (App, Display, STEP_TIMEOUT, arguments, run_checks, run_commands,  # noqa: E402
                           write_commands)

def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def main():
    args = arguments(__doc__.split("\n")[0])
    lesson = os.path.join(os.path.dirname(os.path.abspath(args.presets)), "lessons", "chapter3.json")
    with open(lesson) as f:
        steps = json.load(f)["steps"]
    count = len(steps)
    work = tempfile.mkdtemp(prefix="attnscope-lesson-nav-")

    def damaged(name, change):
        """A copy of the chapter lesson with one thing broken, in the work folder (with the notebook's code)."""
        shutil.copy(os.path.join(os.path.dirname(lesson), "notebook.py"), work)
        with open(lesson) as f:
            doc = json.load(f)
        text = change(doc)
        path = os.path.join(work, name)
        with open(path, "w") as f:
            f.write(text if isinstance(text, str) else json.dumps(doc))
        return path

    def unknown_command(doc):
        doc["steps"][2]["commands"].append({"do": "sett", "field": "d_out", "value": 4})

    def unknown_map(doc):
        doc["steps"][2]["maps"] = ["scores", "wieghts"]

    def past_the_end(doc):
        doc["steps"][3]["code"]["lines"] = [140, 900]

    def cannot_apply(doc):
        doc["steps"][4]["commands"].append({"do": "select_token", "index": 9})

    def bad_json(doc):
        return json.dumps(doc)[:-40]

    DAMAGED = [  # (file, what its one line must say)
        (damaged("bad json.json", bad_json), "lesson: not valid JSON"),
        (damaged("unknown command.json", unknown_command), "step 3: command 4 (sett): unknown command 'sett'"),
        (damaged("unknown map.json", unknown_map), "step 3: maps: unknown map 'wieghts'"),
        (damaged("past the end.json", past_the_end), "step 4: code.lines: line 900 is past the end of notebook.py"),
        (damaged("cannot apply.json", cannot_apply), "step 5: command 4 (select_token): index: no token 9"),
    ]
    USER_WORK = [{"do": "preset", "name": "causal"}, {"do": "set", "field": "d_out", "value": 4},
                 {"do": "set_cell", "row": 1, "col": 0, "value": 0.77}, {"do": "select_token", "index": 3}]

    def env_for(display, name):
        home = os.path.join(work, name + "-home")
        os.makedirs(home, exist_ok=True)
        return dict(os.environ, DISPLAY=display, HOME=home, XDG_STATE_HOME=os.path.join(home, "state"))

    def run(display, name, commands, *extra):
        """attnscope EXTRA --commands … --keep-going --screenshot --dump-layout: (process, dump or None)."""
        path = write_commands(work, name, commands)
        png, dump = os.path.join(work, name + ".png"), os.path.join(work, name + ".layout.json")
        cmd = [args.app, *extra, "--commands", path, "--keep-going", "--screenshot", png, "--dump-layout", dump]
        p = subprocess.run(cmd, env=env_for(display, name), capture_output=True, text=True, timeout=STEP_TIMEOUT * 4)
        d = None
        if os.path.exists(dump):
            with open(dump) as f:
                d = json.load(f)
        return p, d

    with Display() as display:
        def headless(name, commands, *extra):
            return run_commands(args.app, display.name, work, name, commands, *extra)["state"]

        def next_and_back():
            s = headless("next-next-back", [{"do": "lesson_next"}, {"do": "lesson_next"}, {"do": "lesson_back"}],
                         "--lesson", lesson)
            print(f"  --lesson, Next, Next, Back: step {s['lesson_step']}, maps {s['lesson_maps']}")
            expect(s["lesson_step"] == 2, f"lesson_step {s['lesson_step']}, expected 2")
            expect(s["lesson_maps"] == steps[1]["maps"], f"lesson_maps {s['lesson_maps']}, expected {steps[1]['maps']}")
            expect(s["workspace"]["model"]["normalization"] == "sum", "step 2's workspace (simple_sum) is not on screen")
            s = headless("open-4-back", [{"do": "lesson_open", "path": lesson, "step": 4}, {"do": "lesson_back"}])
            expect(s["lesson_step"] == 3 and s["variant"] == "simple", f"step 4, Back: step {s['lesson_step']}, {s['variant']}")
            s = headless("step-7", [{"do": "lesson_open", "path": lesson}, {"do": "lesson_step", "step": 7}])
            expect(s["lesson_step"] == 7 and s["variant"] == "causal", f"lesson_step 7: step {s['lesson_step']}, {s['variant']}")
            s = headless("first-back", [{"do": "lesson_back"}], "--lesson", lesson)
            print(f"  Back on the first step: step {s['lesson_step']}, toast {s['toast']!r}")
            expect(s["lesson_step"] == 1 and "first step" in s["toast"], "Back on the first step")
            s = headless("last-next", [{"do": "lesson_next"}], "--lesson", lesson, "--step", str(count))
            print(f"  Next on the last step: step {s['lesson_step']}, toast {s['toast']!r}")
            expect(s["lesson_step"] == count and "last step" in s["toast"], "Next on the last step")

        def close_restores_the_view():
            s0 = headless("no-lesson", [{"do": "select_token", "index": 2}])
            d = run_commands(args.app, display.name, work, "close",
                             [{"do": "lesson_open", "path": lesson}, {"do": "lesson_step", "step": 7},
                              {"do": "lesson_close"}])
            s = d["state"]
            print(f"  open, step 7, close: step {s['lesson_step']}, panels {s['shown_panels']}, "
                  f"columns {s['workspace']['view']['columns']}")
            expect(s["lesson_step"] == 0 and s["lesson_maps"] == [] and s["lesson"] is None, "the lesson is still open")
            expect("lesson" not in d["panels"], "the lesson panel is still drawn")
            expect(not any(m["dimmed"] for m in d["heatmaps"]), "maps stay dimmed after closing the lesson")
            expect(s["shown_panels"] == dict(s0["shown_panels"], lesson=False),
                   f"panels {s['shown_panels']}, before the lesson {s0['shown_panels']}")
            expect(s["workspace"]["view"]["columns"] == s0["workspace"]["view"]["columns"],
                   f"the columns {s['workspace']['view']['columns']}, before the lesson {s0['workspace']['view']['columns']}")
            expect(s["variant"] == "causal" and s["token"] == 1, "closing changed the workspace or the selection")

        def step_out_of_range():
            p, d = run(display.name, "step-99", [{"do": "lesson_step", "step": 99}], "--lesson", lesson, "--step", "2")
            lines = p.stderr.strip().splitlines()
            print(f"  lesson_step 99: exit {p.returncode}, stderr {lines}")
            expect(p.returncode == 0, f"--keep-going: exit {p.returncode}")
            expect(lines == [f"error: command 0 (lesson_step): step: the lesson has {count} steps (1–{count}), got 99"],
                   f"stderr {lines}")
            expect(d["state"]["lesson_step"] == 2, f"the lesson moved to {d['state']['lesson_step']}")
            p = subprocess.run([args.app, "--lesson", lesson, "--step", "99", "--screenshot", os.path.join(work, "no.png")],
                               env=env_for(display.name, "cli-99"), capture_output=True, text=True, timeout=STEP_TIMEOUT)
            lines = p.stderr.strip().splitlines()
            print(f"  --step 99: exit {p.returncode}, stderr {lines}")
            expect(p.returncode == 2 and len(lines) == 1 and f"--step: the lesson has {count} steps" in lines[0], "--step 99")
            expect(not os.path.exists(os.path.join(work, "no.png")), "--step 99 still wrote a screenshot")

        def damaged_lessons():
            _, ref = run(display.name, "user-work", USER_WORK)
            before = ref["state"]
            for path, message in DAMAGED:
                name = os.path.basename(path)
                png = os.path.join(work, "never.png")
                p = subprocess.run([args.app, "--lesson", path, "--screenshot", png], env=env_for(display.name, "cli"),
                                   capture_output=True, text=True, timeout=STEP_TIMEOUT)
                lines = p.stderr.strip().splitlines()
                print(f"  --lesson '{name}': exit {p.returncode}: {lines}")
                expect(p.returncode == 2, f"--lesson {name}: exit {p.returncode}, expected 2")
                expect(len(lines) == 1 and lines[0].startswith(f"error: {path}: {message}"),
                       f"--lesson {name}: stderr {lines}, expected one line 'error: {path}: {message}…'")
                expect(not os.path.exists(png), f"--lesson {name}: a screenshot was written")
                p, d = run(display.name, "open-" + name.replace(" ", "-"), USER_WORK + [{"do": "lesson_open", "path": path}])
                lines = p.stderr.strip().splitlines()
                expect(p.returncode == 0, f"lesson_open {name}: exit {p.returncode} with --keep-going")
                expect(len(lines) == 1 and lines[0].startswith(f"error: command 4 (lesson_open): {path}: {message}"),
                       f"lesson_open {name}: stderr {lines}, expected one line 'error: command 4 (lesson_open): "
                       f"{path}: {message}…'")
                s = d["state"]
                expect(s["lesson_step"] == 0 and "lesson" not in d["panels"], f"lesson_open {name}: a lesson opened")
                for key in ("workspace", "token", "d_out", "variant", "dirty", "shown_panels"):
                    expect(s[key] == before[key], f"lesson_open {name}: {key} changed: {s[key]} (was {before[key]})")
                expect(not any(m["dimmed"] for m in d["heatmaps"]), f"lesson_open {name}: maps dimmed")

        def keys_and_menu():
            edit = write_commands(work, "edit", [{"do": "set_cell", "row": 1, "col": 0, "value": 0.77}])
            app = App(args.app, display.name, ["--commands", edit])
            with app:
                app.settled("the edit", lambda d: d["state"]["dirty"] and "cell_0_0" in d["widgets"])
                app.xdotool("windowfocus", app.find_window())

                def menu(item, hover=None):
                    app.click("menu_file")
                    if hover:
                        d = app.wait_for(hover, lambda d: hover in d["widgets"])
                        r = d["widgets"][hover]
                        app.move(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
                    app.click(item)

                # File › Open lesson › Chapter 3, over unsaved work: asked first; Discard goes on.
                menu("menu_lesson_chapter3", "menu_lessons")
                app.settled("the unsaved-changes prompt",
                            lambda d: d["state"]["prompt"] == "lesson_open" and "lesson_open_discard" in d["widgets"])
                app.click("lesson_open_discard")
                d = app.settled("the lesson's first step", lambda d: d["state"]["lesson_step"] == 1)
                expect(d["state"]["token"] == 1 and "lesson" in d["panels"], "step 1 is not on screen")
                print(f"  File › Open lesson over unsaved work: asked, then step 1 ({d['state']['variant']})")
                hm = d["panels"]["main"]
                app.move(hm["x"] + hm["w"] / 2, hm["y"] + hm["h"] - 10)  # the pointer in the window: the keyboard too
                for key, want in (("Right", 2), ("Next", 3), ("space", 4), ("Left", 3), ("Prior", 2), ("shift+space", 1),
                                  ("Next", 2), ("Next", 3)):
                    app.key(key)
                    d = app.settled(f"{key} → step {want}", lambda d, want=want: d["state"]["lesson_step"] == want)
                    expect(d["state"]["token"] == 1, f"{key} moved the selected token to {d['state']['token']}")
                print("  Right, PageDown, Space, Left, PageUp, Shift+Space, PageDown, PageDown: steps 2 3 4 3 2 1 2 3, "
                      "the token stays")
                work_before = d["state"]["workspace"]
                # File › Open lesson › A lesson file…: the file browser, in the shipped lessons' folder,
                # listing the .json lessons. The lesson keys do not turn pages behind it.
                menu("menu_lesson_file", "menu_lessons")
                d = app.wait_for("the lesson browser", lambda d: d["state"].get("file_dialog", {}).get("which") == "open_lesson"
                                 and "file_name" in d["widgets"])
                fd = d["state"]["file_dialog"]
                print(f"  File › Open lesson › A lesson file…: opens in {fd['folder']}, lists {fd['files']}")
                expect(os.path.realpath(fd["folder"]) == os.path.realpath(os.path.dirname(lesson)),
                       f"the lesson browser opened in {fd['folder']}, not {os.path.dirname(lesson)}")
                expect("chapter3.json" in fd["files"], f"the lesson browser lists {fd['files']}")
                app.key("Right")
                time.sleep(0.3)
                expect(app.layout()["state"]["lesson_step"] == 3, "→ turned the page behind the lesson browser")
                # A damaged lesson typed into it (its name has a space: typing it must not turn the
                # page): an error in the status bar, the lesson and the work stay.
                path = DAMAGED[2][0]
                app.click("file_name")
                app.type(path)
                time.sleep(0.3)
                d = app.layout()
                expect(d["state"]["lesson_step"] == 3, f"typing a path turned the page to {d['state']['lesson_step']}")
                app.key("Return")
                d = app.wait_for("the error", lambda d: d["state"]["toast_error"])
                print(f"  File › Open lesson › '{os.path.basename(path)}': {d['state']['toast']!r}")
                expect("unknown map 'wieghts'" in d["state"]["toast"], f"the toast {d['state']['toast']!r}")
                expect(app.proc.poll() is None, "the app quit")
                expect(d["state"]["lesson_step"] == 3 and d["state"]["workspace"] == work_before,
                       "the damaged lesson changed the open lesson or the work")
                with open(os.path.join(app.state_dir, "attnscope", "settings.json")) as f:
                    remembered = json.load(f).get("lesson_folder")
                expect(remembered == os.path.dirname(path), f"the lesson browser remembers {remembered!r}, not "
                       f"{os.path.dirname(path)!r}")
                app.key("Escape")
                # Close: ← and → select tokens again.
                app.click("lesson_close")
                d = app.settled("the lesson closed", lambda d: d["state"]["lesson_step"] == 0)
                expect("lesson" not in d["panels"] and not d["state"]["shown_panels"]["presentation"], "closed")
                hm = d["panels"]["main"]
                app.move(hm["x"] + hm["w"] / 2, hm["y"] + hm["h"] - 10)
                token = d["state"]["token"]
                app.key("Right")
                d = app.settled("→ selects the next token", lambda d: d["state"]["token"] == token + 1)
                expect(d["state"]["lesson_step"] == 0, "→ opened the lesson again")
                print(f"  closed: → moves the token {token} → {token + 1}")

        code = run_checks([
            ("Next and Back as commands", next_and_back),
            ("closing brings back the view", close_restores_the_view),
            ("a step out of range", step_out_of_range),
            ("damaged lessons: one message, the work untouched", damaged_lessons),
            ("keys, File › Open lesson, the prompt, a damaged lesson in the app", keys_and_menu),
        ])
    shutil.rmtree(work, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
