"""The chapter lesson projected at 1280×720 ("ready for the lecture hall", docs/DESIGN.md §3.7): every step of
assets/lessons/chapter3.json rendered headless (`attnscope --lesson FILE --step N`) at 1280×720
and 1280×800, and its layout dump shows

- every map of the step — the ones it names and the dimmed ones — wholly in view (`wholly_in_view`:
  nothing of it behind a scroll) with its cells labelled in the notebook's four decimals
  (`label_format` decimals4); the dropout mask has its own ×2.0 / 0 labels ("custom"). One step
  cannot: GPT-2 small's 1024×1024 maps have cells under a pixel, and the notebook prints only
  their shape (EXEMPT below);
- what the notebook prints never clipped: the print-out's text inside its box (`lesson_prints_text`
  within `lesson_prints`), the box inside the lesson panel, every printed line whole (no wrapped
  rows) at a readable size (at least 85 % of the cells' font), and the whole step readable without
  scrolling (`body_overflow_px` 0);
- the lesson panel laid out the same frame after frame (rendered after 3 and after 4 frames): a
  layout that depends on the body's scrollbar flickers between two.

The expected label format is the notebook's (it prints four decimals), never the app's own choice.

Usage: test_lesson_fit.py --app APP --cli CLI --presets PRESETS_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_teaching import Display, STEP_TIMEOUT, arguments, run_checks  # noqa: E402

SIZES = ("1280x720", "1280x800")
# Steps (by title) whose maps cannot show the notebook's numbers, and why.
EXEMPT = {"GPT-2 small": "its 1024×1024 maps have cells of under a pixel; the notebook prints only the "
                         "output's shape, torch.Size([2, 1024, 768]), which the print-out quotes"}
SMALLEST_PRINTS = 0.85  # of the cells' font: the print-out may shrink this far to keep its lines whole
LESSON_WIDGETS = ("lesson_back", "lesson_next", "lesson_close", "lesson_text", "lesson_code", "lesson_prints",
                  "lesson_prints_text")


def within(r, box, slack=1.0):
    return (r["x"] >= box["x"] - slack and r["y"] >= box["y"] - slack and r["x"] + r["w"] <= box["x"] + box["w"] + slack
            and r["y"] + r["h"] <= box["y"] + box["h"] + slack)


def exemption(title):
    return next((why for prefix, why in EXEMPT.items() if title.startswith(prefix)), None)


def main():
    args = arguments(__doc__.split("\n")[0])
    lesson_path = os.path.join(os.path.dirname(os.path.abspath(args.presets)), "lessons", "chapter3.json")
    with open(lesson_path) as f:
        steps = json.load(f)["steps"]
    work = tempfile.mkdtemp(prefix="attnscope-lesson-fit-")

    def render(display, n, size, frames):
        name = f"step{n}-{size}-{frames}"
        png, dump = os.path.join(work, name + ".png"), os.path.join(work, name + ".layout.json")
        env = dict(os.environ, DISPLAY=display, HOME=os.path.join(work, "home"),
                   XDG_STATE_HOME=os.path.join(work, "state"))
        os.makedirs(env["HOME"], exist_ok=True)
        cmd = [args.app, "--lesson", lesson_path, "--step", str(n), "--size", size, "--frames", str(frames),
               "--screenshot", png, "--dump-layout", dump]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT * 8)
        if out.returncode != 0 or "error" in out.stderr.lower():
            raise AssertionError(f"{' '.join(cmd)} exited {out.returncode}: {out.stderr.strip()}")
        with open(dump) as f:
            d = json.load(f)
        os.remove(png)
        return d

    def check_maps(d, title, problems):
        why = exemption(title)
        for m in d["heatmaps"]:
            what = f"{m['id']} ({m['title']}, cell {m['cell']:.1f} px)"
            if "wholly_in_view" not in m:
                problems.append(f"{what}: the layout dump has no wholly_in_view")
            elif not m["wholly_in_view"]:
                problems.append(f"{what}: not wholly in view (in_view {m['in_view']}, tile {m['tile']})")
            if why:
                continue
            want = "custom" if m["stage"] == "dropout_mask" else "decimals4"
            if not m["values_shown"] or m.get("label_format") != want:
                problems.append(f"{what}: values shown {m['values_shown']}, labelled {m.get('label_format')}; "
                                f"the notebook prints four decimals ({want})")
        return why

    def check_prints(d, problems):
        lesson, widgets, panel = d["state"]["lesson"], d["widgets"], d["panels"].get("lesson")
        if panel is None:
            problems.append("no lesson panel")
            return
        for w in LESSON_WIDGETS:
            if w not in widgets:
                problems.append(f"no {w} in the layout dump")
            elif not within(widgets[w], panel):
                problems.append(f"{w} {widgets[w]} is not whole inside the lesson panel {panel}")
        if "lesson_prints_text" in widgets and "lesson_prints" in widgets and \
                not within(widgets["lesson_prints_text"], widgets["lesson_prints"], slack=0.5):
            problems.append(f"the print-out's text {widgets['lesson_prints_text']} runs past its box "
                            f"{widgets['lesson_prints']}: clipped")
        if lesson.get("prints_wrapped_rows", -1) != 0:
            problems.append(f"the print-out wraps {lesson.get('prints_wrapped_rows')} lines: not as the notebook prints them")
        cells_px = d["state"]["font_px"]["cells"]
        if lesson.get("prints_font_px", 0) < SMALLEST_PRINTS * cells_px - 0.01:
            problems.append(f"the print-out drawn at {lesson.get('prints_font_px')} px, under "
                            f"{SMALLEST_PRINTS:.0%} of the cells' {cells_px} px")
        if lesson.get("body_overflow_px", 1) != 0:
            problems.append(f"the step needs scrolling ({lesson.get('body_overflow_px')} px) to be read whole")

    def lesson_layout(d):
        keep = {k: v for k, v in d["widgets"].items() if k.startswith("lesson_")}
        return keep, d["state"]["lesson"].get("prints_font_px"), d["state"]["lesson"].get("body_overflow_px")

    def check_step(display, n, size):
        step = steps[n - 1]
        t0 = time.time()
        d = render(display, n, size, 3)
        problems = []
        if d["state"]["lesson_step"] != n or not d["state"]["settled"] or d["state"]["engine_error"]:
            problems.append(f"lesson_step {d['state']['lesson_step']}, settled {d['state']['settled']}, "
                            f"engine error {d['state']['engine_error']!r}")
        why = check_maps(d, step["title"], problems)
        check_prints(d, problems)
        if size == SIZES[0]:
            later = render(display, n, size, 4)
            if lesson_layout(later) != lesson_layout(d):
                a, b = lesson_layout(d), lesson_layout(later)
                moved = sorted(k for k in set(a[0]) | set(b[0]) if a[0].get(k) != b[0].get(k))
                problems.append(f"the lesson panel differs between frame 3 and frame 4 (it flickers): {moved}, "
                                f"print-out {a[1]} / {b[1]} px, overflow {a[2]} / {b[2]}")
        lesson = d["state"]["lesson"]
        formats = sorted({m.get("label_format") or "none" for m in d["heatmaps"]})
        print(f"  step {n} at {size} ({time.time() - t0:.1f} s): {len(d['heatmaps'])} maps, labels {formats}; "
              f"lesson {d['panels']['lesson']['w']:.0f} px, maps {d['panels']['main']['w']:.0f} px; "
              f"print-out at {lesson.get('prints_font_px', 0):.2f} px" + (f"; values not shown: {why}" if why else ""))
        if problems:
            raise AssertionError(f"step {n} ({step['title']}) at {size}: " + "; ".join(problems))

    with Display() as display:
        checks = [(f"step {n} at {size}", lambda n=n, size=size: check_step(display.name, n, size))
                  for size in SIZES for n in range(1, len(steps) + 1)]
        code = run_checks(checks)
    shutil.rmtree(work, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
