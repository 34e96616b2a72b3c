"""A lesson step shows its maps, at the sizes a projector needs (docs/DESIGN.md §3.7 "Focus").

Every step of the chapter lesson, and of lessons written here (other maps, other presets, a
10-token sentence, several heads, the module's maps), shown headless at 1280×720 150 %, 1280×800
175 % and 1920×1080 200 % (`--lesson FILE --step N`), must show in the layout dump:
- every focus map (the step's `maps`) `wholly_in_view` — title, labels, cells and colourbar on
  screen without scrolling — and, up to 12 tokens, `values_shown` with 3 or 4 decimals
  (`label_format` decimals3 or decimals4, never the compact two);
- at 1280×720 200 %, the chapter's steps: the same, with 2 decimals allowed (two maps side by side
  need them there);
- maps side by side with the same rows have their cells' tops level;
- the lesson's text without scrolling where it fits: the step's body needs no scrolling
  (`body_overflow_px` 0) unless its words alone are taller than the column.
Also, stepping with Next and Back in one session (interactive, the lesson keys) leaves every focus
map of the step reached whole, whatever the grid was scrolled to before; and the `view` command's
`focus`, without a lesson, lays the grid out the same way.

Prints a table: step × size, what each focus map shows. Usage:
  test_lesson_focus.py --app APP --cli CLI --presets PRESETS_DIR [--lesson FILE] [--sizes 1280x800@175]
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
from test_teaching import STEP_TIMEOUT, App, Display, run_checks, write_commands  # noqa: E402

SIZES = [("1280x720", 150), ("1280x800", 175), ("1920x1080", 200)]
LABELLED_TOKENS = 12  # up to this many tokens the maps show their numbers (kAlwaysLabelledTokens)


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def sentence(words):
    return {"do": "sentence", "text": " ".join(words), "seed": 7}


def written_lessons():
    """Lessons a teacher might write: other maps and presets than the chapter's, ten tokens,
    several heads, the module's maps, a map too large for numbers. Ten rows of three decimals are as
    many as 1280×720 at 150 % and 1280×800 at 175 % have room for, where the numbers have no minus
    sign: a signed one ("−0.123") takes a sixth more, 675 px of a 10-row map where 657 are left
    (docs/DESIGN.md §3.7 "Focus")."""
    ten = "attention lets every token look back at the ones before".split()
    return {
        "ten-tokens": {"format": "attnscope-lesson", "version": 1, "title": "Ten tokens", "steps": [
            {"title": "The weights of a sentence", "text": "Ten words, one head: every row sums to 1.",
             "commands": [{"do": "preset", "name": "causal"}, sentence(ten),
                          {"do": "view", "field": "columns", "value": ["scores", "masked_scores", "weights", "context"]}],
             "maps": ["weights"]},
            {"title": "Dropout on ten tokens", "text": "Half of the weights go, the rest double.",
             "commands": [{"do": "preset", "name": "causal_dropout"}, sentence(ten),
                          {"do": "view", "field": "columns", "value": ["weights", "dropout_mask", "dropped_weights"]}],
             "maps": ["dropped_weights"]},
            {"title": "Only the masked scores", "text": "The mask hides the future.",
             "commands": [{"do": "preset", "name": "causal"},
                          {"do": "view", "field": "columns", "value": ["queries", "keys", "scores", "masked_scores", "weights"]}],
             "maps": ["masked_scores"]},
            {"title": "Keys and values", "text": "What each token offers, and what it carries.",
             "commands": [{"do": "preset", "name": "self_attention_v2"},
                          {"do": "view", "field": "columns", "value": ["queries", "keys", "values", "weights", "context"]}],
             "maps": ["keys", "values"]},
            {"title": "The context, concatenated and projected", "text": "out_proj mixes the heads.",
             "commands": [{"do": "preset", "name": "multihead"},
                          {"do": "view", "field": "columns", "value": ["weights", "context", "concat", "out_proj", "output"]}],
             "maps": ["context", "output"]},
        ]},
        "heads-and-presets": {"format": "attnscope-lesson", "version": 1, "title": "Heads and presets", "steps": [
            {"title": "Two heads' weights", "text": "Each head attends in its own way.",
             "commands": [{"do": "preset", "name": "multihead_wrapper"},
                          {"do": "view", "field": "columns", "value": ["scores", "weights", "context", "concat"]}],
             "maps": ["weights"]},
            {"title": "Dropout, then the weights", "text": "Half of the weights go, the rest double.",
             "commands": [{"do": "preset", "name": "causal_dropout"},
                          {"do": "view", "field": "columns", "value": ["weights", "dropout_mask", "dropped_weights", "context"]}],
             "maps": ["dropout_mask", "dropped_weights"]},
            {"title": "Queries of two heads, the output", "text": "Each head's slice, and what out_proj makes of them.",
             "commands": [{"do": "preset", "name": "multihead"},
                          {"do": "view", "field": "columns", "value": ["queries", "keys", "weights", "output"]}],
             "maps": ["queries", "output"]},
            {"title": "Medium: 256 tokens, head 3", "text": "Maps too large for numbers still show whole.",
             "commands": [{"do": "preset", "name": "medium"}, {"do": "view", "field": "columns", "value": ["scores", "weights"]},
                          {"do": "select_head", "index": 2}],
             "maps": ["weights"]},
        ]},
    }


def focus_entries(d, maps):
    """The dump's heatmaps that are the step's focus maps (per head and the module's)."""
    return [h for h in d["heatmaps"] if h.get("stage") in maps and "compare" not in h]


def check_step(d, where, fewest=3):
    """Problems of one step view, as text; [] when it shows its maps with at least `fewest` decimals."""
    problems = []
    maps = d["state"]["lesson_maps"]
    tokens = len(d["state"]["workspace"].get("tokens") or []) or None
    entries = focus_entries(d, maps)
    found = {h["stage"] for h in entries}
    for m in maps:
        if m not in found:
            problems.append(f"{where}: focus map {m} is not drawn")
    for h in entries:
        name = f"{h['id']}"
        if not h.get("wholly_in_view"):
            problems.append(f"{where}: {name} is not wholly in view")
        small = h["rows"] <= LABELLED_TOKENS and h["cols"] <= 64 and (tokens is None or tokens <= LABELLED_TOKENS)
        if small:
            if not h.get("values_shown"):
                problems.append(f"{where}: {name} shows no numbers (cell {h['cell']:.0f} px)")
            elif h.get("label_format") not in ("decimals3", "decimals4", "custom") + (
                    ("decimals2", "compact") if fewest <= 2 else ()):
                problems.append(f"{where}: {name} shows {h.get('label_format')}, fewer than {fewest} decimals")
    # Maps side by side with the same rows have them level: a map that reads by its neighbour's row
    # labels must not put its second row beside the neighbour's first.
    lines = {}
    for h in d["heatmaps"]:
        if "compare" not in h and h.get("in_view"):
            lines.setdefault((round(h["tile"]["y"]), h["window"]["rows"] or h["rows"]), []).append(h)
    for (_, rows), maps_on_line in lines.items():
        tops = [h["cells"]["y"] for h in maps_on_line]
        if max(tops) - min(tops) > 1:
            problems.append(f"{where}: the {rows} rows of " + ", ".join(h["id"] for h in maps_on_line) +
                            " are not level: their cells start at y " + ", ".join(f"{t:.0f}" for t in tops))
    # … and a map without row labels of its own (its cells at its tile's left edge) has its rows level
    # with the map left of it, whose labels it reads by — in another card too (a module's card beside
    # a head's, under headings of other heights).
    shown = [h for h in d["heatmaps"] if "compare" not in h and h.get("in_view")]
    for h in shown:
        if h["cells"]["x"] - h["tile"]["x"] > 16:
            continue
        left = [o for o in shown if o is not h and o["tile"]["x"] + o["tile"]["w"] <= h["tile"]["x"] + 1 and
                o["cells"]["y"] < h["cells"]["y"] + h["cells"]["h"] and h["cells"]["y"] < o["cells"]["y"] + o["cells"]["h"]]
        if left:
            o = max(left, key=lambda o: o["tile"]["x"])
            if abs(o["cells"]["y"] - h["cells"]["y"]) > 1:
                problems.append(f"{where}: {h['id']} reads by the row labels of {o['id']}, whose rows start at y "
                                f"{o['cells']['y']:.0f}, its own at {h['cells']['y']:.0f}")
    # A lesson shows the weights as the probabilities they are: on the fixed 0–1 range.
    for h in d["heatmaps"]:
        if h.get("stage") == "weights" and "compare" not in h and h["range"] != [0, 1]:
            problems.append(f"{where}: {h['id']} coloured over {h['range']}, not 0–1")
    lesson = d["state"]["lesson"]
    if lesson["text_fits"] and not lesson["text_in_view"]:
        problems.append(f"{where}: the lesson's text needs scrolling to be read")
    return problems


def run_step(exe, display, folder, lesson, step, size, text_size):
    name = f"{os.path.splitext(os.path.basename(lesson))[0]}-{step}-{size}-{text_size}"
    png, dump = os.path.join(folder, name + ".png"), os.path.join(folder, name + ".layout.json")
    home = os.path.join(folder, "home")
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ, DISPLAY=display, HOME=home, XDG_STATE_HOME=os.path.join(home, "state"))
    p = subprocess.run([exe, "--lesson", lesson, "--step", str(step), "--size", size, "--text-size", str(text_size),
                        "--screenshot", png, "--dump-layout", dump], env=env, capture_output=True, text=True,
                       timeout=STEP_TIMEOUT * 3)
    if p.returncode != 0:
        raise AssertionError(f"{name}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    with open(dump) as f:
        return json.load(f), png


def summary(d):
    parts = []
    for h in focus_entries(d, d["state"]["lesson_maps"]):
        mark = "whole" if h.get("wholly_in_view") else "CUT"
        parts.append(f"{h['id']} {mark} {h.get('label_format', '-') if h.get('values_shown') else 'no numbers'} "
                     f"{h['cell']:.0f}px {h.get('cell_font_px', 0):.0f}pt")
    return "; ".join(parts)


def every_step(exe, display, folder, lesson, sizes, fewest=3):
    with open(lesson) as f:
        steps = len(json.load(f)["steps"])
    problems, shown = [], 0
    for size, text_size in sizes:
        for step in range(1, steps + 1):
            d, _ = run_step(exe, display, folder, lesson, step, size, text_size)
            where = f"{os.path.basename(lesson)} step {step} at {size} {text_size} %"
            p = check_step(d, where, fewest)
            problems += p
            shown += not p
            print(f"  {'ok ' if not p else 'BAD'} {size} {text_size}% step {step:2}: {summary(d)}")
    print(f"  {shown} of {steps * len(sizes)} step views show every focus map")
    expect(not problems, "\n".join(problems))


def next_and_back(exe, display, folder, lesson):
    """Interactive: Next five times from step 1, scrolling the grid down before each, then Back
    twice; every step reached shows its focus maps whole."""
    env_args = ["--lesson", lesson, "--size", "1280x800", "--text-size", "175"]
    with App(exe, display, env_args) as app:
        app.settled("step 1", lambda d: d["state"]["lesson_step"] == 1)
        problems = []
        for key, want in [("Right", 2), ("Right", 3), ("Right", 4), ("Right", 5), ("Right", 6), ("Left", 5), ("Left", 4)]:
            app.move(640, 500)
            app.xdotool("click", "5", "click", "5", "click", "5")  # the wheel: scroll the grid away
            app.key(key)
            d = app.settled(f"step {want}", lambda d, want=want: d["state"]["lesson_step"] == want)
            time.sleep(0.3)
            d = app.layout()
            problems += check_step(d, f"after {key} to step {want}")
        expect(not problems, "\n".join(problems))
    print("  Next ×5, Back ×2 at 1280×800 175 %, the grid scrolled before each: every step's maps whole")


def view_focus(exe, display, folder):
    """The `view` command's `focus`, without a lesson, presenting (F10): the grid lays itself out for
    those maps the same way (the header stays: no lesson panel holds it)."""
    cmds = write_commands(folder, "focus", [{"do": "preset", "name": "causal"},
                                            {"do": "view", "field": "columns", "value": ["scores", "masked_scores", "weights", "context"]},
                                            {"do": "view", "field": "presentation", "value": True},
                                            {"do": "view", "field": "focus", "value": ["weights", "context"]}])
    dump, png = os.path.join(folder, "focus.layout.json"), os.path.join(folder, "focus.png")
    env = dict(os.environ, DISPLAY=display, HOME=os.path.join(folder, "home"))
    p = subprocess.run([exe, "--commands", cmds, "--size", "1280x800", "--text-size", "175", "--screenshot", png,
                        "--dump-layout", dump], env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT * 3)
    expect(p.returncode == 0, f"exit {p.returncode}: {p.stderr.strip()[-300:]}")
    with open(dump) as f:
        d = json.load(f)
    entries = focus_entries(d, ["weights", "context"])
    expect(len(entries) == 2 and all(h["wholly_in_view"] and h["values_shown"] and not h["dimmed"] for h in entries),
           f"view focus: {summary_of(entries)}")
    others = [h for h in d["heatmaps"] if h["stage"] in ("scores", "masked_scores")]
    expect(all(h["dimmed"] for h in others), "view focus: the other maps are not dimmed")
    # (presented, the header may fold into its menu: there where it would take over an eighth)
    expect("column_weights" in d["widgets"] or (d["state"]["header_folded"] and "maps_menu" in d["widgets"]),
           "view focus without a lesson: the header's map toggles are gone")
    print(f"  view focus [weights, context] at 1280×800 175 %, presenting, no lesson: {summary_of(entries)}")


def summary_of(entries):
    return "; ".join(f"{h['id']} {'whole' if h.get('wholly_in_view') else 'CUT'} {h.get('label_format', '-')}" for h in entries)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--app", required=True)
    p.add_argument("--cli", required=True)
    p.add_argument("--presets", required=True)
    p.add_argument("--lesson", action="append", help="only these lessons (default: the chapter's and the written ones)")
    p.add_argument("--sizes", help="e.g. 1280x800@175,1920x1080@200")
    args = p.parse_args()
    sizes = SIZES if not args.sizes else [(s.split("@")[0], int(s.split("@")[1])) for s in args.sizes.split(",")]
    folder = tempfile.mkdtemp(prefix="attnscope-lesson-focus-")
    chapter = os.path.join(os.path.dirname(os.path.abspath(args.presets)), "lessons", "chapter3.json")
    try:
        lessons = args.lesson or [chapter]
        if not args.lesson:
            for name, lesson in written_lessons().items():
                path = os.path.join(folder, name + ".json")
                with open(path, "w") as f:
                    json.dump(lesson, f)
                lessons.append(path)
        with Display() as display:
            checks = [(f"every step of {os.path.basename(l)}", lambda l=l: every_step(args.app, display.name, folder, l, sizes))
                      for l in lessons]
            if not args.lesson:
                # The smallest projector at the largest text: every map a step names in view whole,
                # two decimals where three leave one of them below the fold.
                checks.append(("every step of the chapter at 1280×720 200 %",
                               lambda: every_step(args.app, display.name, folder, chapter, [("1280x720", 200)], 2)))
                checks.append(("Next and Back", lambda: next_and_back(args.app, display.name, folder, chapter)))
                checks.append(("the view command's focus", lambda: view_focus(args.app, display.name, folder)))
            code = run_checks(checks)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
