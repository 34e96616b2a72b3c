"""Presenting: text size, full screen, hideable panels, a layout readable at 1280 × 720.

Headless runs (`attnscope --commands … --screenshot … --dump-layout …`, one Xvfb display):

- Text size 150 % at 1280 × 800 keeps the window usable: the fonts are rasterized 1.5× (the dump's
  state.font_px), every panel has a positive size inside the window, the main area keeps at least
  half the width, the menu bar's four menus lie on screen, and every map of the multi-head example
  shows its values (the grid scrolls for those out of view; at least the first is in view).
- At 1280 × 720 and 100 % every map of the book's multi-head example shows its values, and at
  150 % too (scrolling).
- The text size round-trips through a saved workspace (`view text_size` then `save`, then `--open`
  the file), a preset keeps it, and `--text-size` sets it.
- A bad text size (300, 99, 137.5, "huge", true) is refused with one line each naming
  view.text_size and the range, and changes nothing.
- Hiding panels with the `view` command: the inspector → the main area wider; model and inputs both
  → wider again; only one of them → the other takes the column's full height; the status bar →
  the main area taller; `presentation` → the main area spans the window. Each hidden panel is gone
  from the dump.
- A figure (the screenshot's caption strip) grows with the text size.
- `fullscreen` under Xvfb: the window fills the 1920 × 1080 screen, and `fullscreen on: false`
  gives back 1280 × 720.

Interactive (xdotool), where the key is the point: Ctrl++ (plus and equal), Ctrl+− and Ctrl+0 step
the text size; F11 toggles full screen and back to the old size; F10 toggles presentation.

Usage: test_presenting.py --app APP --cli CLI --presets PRESETS_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_teaching import (Display, STEP_TIMEOUT, arguments, run_checks, run_commands,  # noqa: E402
                           start_ready, write_commands)

BOOK_STAGES = ["scores", "masked_scores", "scaled_scores", "weights", "dropout_mask", "dropped_weights"]
MENUS = ("menu_file", "menu_edit", "menu_view", "menu_help")


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def inside(r, w, h):
    return r["x"] >= -0.5 and r["y"] >= -0.5 and r["x"] + r["w"] <= w + 0.5 and r["y"] + r["h"] <= h + 0.5


def check_usable(d, w, h, what):
    """Panels with a positive size inside the window, the menus on screen, the main area at least
    half the width."""
    panels = d["panels"]
    for name in ("menu_bar", "main", "heatmaps"):
        expect(name in panels, f"{what}: no panel {name!r} in the dump")
    for name, r in panels.items():
        if name == "toast":
            continue
        expect(r["w"] > 0 and r["h"] > 0, f"{what}: panel {name} has size {r['w']}×{r['h']}")
        expect(inside(r, w, h), f"{what}: panel {name} {r} is not inside the {w}×{h} window")
    bar = panels["menu_bar"]
    for m in MENUS:
        expect(m in d["widgets"], f"{what}: no {m} in the dump")
        r = d["widgets"][m]
        expect(r["w"] > 0 and inside(r, w, bar["y"] + bar["h"]), f"{what}: {m} {r} is not on the menu bar {bar}")
    expect(panels["main"]["w"] >= w * 0.5 - 1, f"{what}: the main area is {panels['main']['w']} px of {w}")


def check_values(d, heads, stages, what):
    """Every map of every head shows its values; the grid scrolls to those out of view."""
    maps = {(m["head"], m["stage"]): m for m in d["heatmaps"]}
    missing = [(h, s) for h in range(heads) for s in stages if (h, s) not in maps]
    expect(not missing, f"{what}: maps not in the grid: {missing}")
    blank = [f"{s} h{h} (cell {maps[(h, s)]['cell']:.1f} px)" for h in range(heads) for s in stages
             if not maps[(h, s)].get("values_shown")]
    expect(not blank, f"{what}: maps without their values: {blank}")
    expect(any(m.get("in_view") for m in maps.values()), f"{what}: no map in view")
    in_view = sum(1 for m in maps.values() if m.get("in_view"))
    print(f"  {what}: {len(maps)} maps with values ({in_view} in view{', the rest by scrolling' if in_view < len(maps) else ''}); "
          f"labels {sorted({m.get('label_format') for m in maps.values()})}")


def main():
    args = arguments(__doc__.split("\n")[0])
    work = tempfile.mkdtemp(prefix="attnscope-presenting-")
    multihead = os.path.join(args.presets, "multihead.json")

    try:
        with Display() as display:
            def headless(name, commands, *extra):
                return run_commands(args.app, display.name, work, name, commands, *extra)

            def text_150_at_1280x800():
                d = headless("t150-800", [{"do": "view", "field": "text_size", "value": 150}],
                             "--open", multihead, "--size", "1280x800")
                s = d["state"]
                expect(s["text_size"] == 150, f"state.text_size {s['text_size']}, expected 150")
                expect(abs(s["ui_scale"] - 1.5) < 1e-6, f"state.ui_scale {s['ui_scale']}, expected 1.5")
                base = headless("t100-800", [], "--open", multihead, "--size", "1280x800")["state"]["font_px"]
                for font in ("ui", "cells"):  # the whole UI and the maps' labels, 1.5× as large
                    expect(abs(s["font_px"][font] - 1.5 * base[font]) < 0.01,
                           f"{font} font {s['font_px'][font]} px at 150 %, {base[font]} px at 100 %")
                check_usable(d, 1280, 800, "150 % at 1280×800")
                check_values(d, 2, BOOK_STAGES[:4], "150 % at 1280×800")

            def book_at_1280x720():
                for percent in (100, 150):
                    d = headless(f"t{percent}-720", [], "--open", multihead, "--size", "1280x720",
                                 "--text-size", str(percent))
                    expect(d["state"]["text_size"] == percent, f"--text-size {percent}: state {d['state']['text_size']}")
                    check_usable(d, 1280, 720, f"{percent} % at 1280×720")
                    check_values(d, 2, BOOK_STAGES[:4], f"{percent} % at 1280×720")
                # with dropout: every map of both heads, six columns
                d = headless("dropout-720", [{"do": "set", "field": "dropout", "value": 0.5}],
                             "--open", multihead, "--size", "1280x720")
                check_values(d, 2, BOOK_STAGES, "dropout 0.5, 100 % at 1280×720")

            def round_trip():
                saved = os.path.join(work, "saved.json")
                headless("save", [{"do": "view", "field": "text_size", "value": 175}, {"do": "save", "path": saved}],
                         "--open", multihead)
                with open(saved) as f:
                    view = json.load(f)["view"]
                expect(view.get("text_size") == 175, f"the saved view has text_size {view.get('text_size')!r}")
                s = headless("reopen", [], "--open", saved)["state"]
                expect(s["text_size"] == 175 and abs(s["ui_scale"] - 1.75) < 1e-6,
                       f"reopened: text_size {s['text_size']}, ui_scale {s['ui_scale']}; expected 175, 1.75")
                s = headless("preset-keeps", [{"do": "view", "field": "text_size", "value": "larger"},
                                              {"do": "preset", "name": "causal"}], "--open", saved)["state"]
                expect(s["text_size"] == 200, f"larger from 175, then a preset: text_size {s['text_size']}, expected 200")

            def bad_values():
                bad = [300, 99, 137.5, "huge", True]
                commands = [{"do": "view", "field": "text_size", "value": v} for v in bad]
                path = write_commands(work, "bad", commands)
                png, dump = os.path.join(work, "bad.png"), os.path.join(work, "bad.layout.json")
                env = dict(os.environ, DISPLAY=display.name, HOME=work, XDG_STATE_HOME=os.path.join(work, "state"))
                out = subprocess.run([args.app, "--open", multihead, "--commands", path, "--keep-going",
                                      "--screenshot", png, "--dump-layout", dump],
                                     env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT * 2)
                expect(out.returncode == 0, f"--keep-going run exited {out.returncode}: {out.stderr.strip()}")
                lines = [l for l in out.stderr.splitlines() if l.startswith("error:")]
                expect(len(lines) == len(bad), f"{len(bad)} bad values, {len(lines)} error lines: {lines}")
                for k, line in enumerate(lines):
                    expect(line.startswith(f"error: command {k} (view): view.text_size: "), f"line {k}: {line}")
                    expect("100" in line and "250" in line, f"line {k} does not give the range: {line}")
                print("  e.g. " + lines[0])
                with open(dump) as f:
                    expect(json.load(f)["state"]["text_size"] == 100, "a refused text size changed the view")
                # the same without --keep-going: exit 2, one line
                out = subprocess.run([args.app, "--open", multihead, "--commands", write_commands(work, "bad1", commands[:1]),
                                      "--screenshot", png], env=env, capture_output=True, text=True,
                                     timeout=STEP_TIMEOUT * 2)
                expect(out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1,
                       f"one bad value: exit {out.returncode}, stderr {out.stderr.strip()!r}")

            def hiding_panels():
                def run(name, fields):
                    commands = [{"do": "view", "field": f, "value": v} for f, v in fields]
                    return headless(name, commands, "--open", multihead, "--size", "1280x800")

                base = run("all-shown", [])
                main0 = base["panels"]["main"]
                for p in ("model", "inputs", "inspector", "status"):
                    expect(p in base["panels"], f"panel {p} missing with nothing hidden")
                d = run("no-inspector", [("inspector", False)])
                expect("inspector" not in d["panels"], "the hidden inspector is still in the dump")
                expect(d["panels"]["main"]["w"] > main0["w"],
                       f"inspector hidden: main {d['panels']['main']['w']} px wide, was {main0['w']}")
                d = run("no-model", [("model_panel", False)])
                expect("model" not in d["panels"], "the hidden model panel is still in the dump")
                expect(d["panels"]["inputs"]["h"] > base["panels"]["inputs"]["h"] + 100,
                       f"model hidden: the inputs panel is {d['panels']['inputs']['h']} px tall, was "
                       f"{base['panels']['inputs']['h']}")
                d = run("no-inputs", [("inputs_panel", False)])
                expect("inputs" not in d["panels"], "the hidden inputs panel is still in the dump")
                expect(d["panels"]["model"]["h"] > base["panels"]["model"]["h"] + 100,
                       f"inputs hidden: the model panel is {d['panels']['model']['h']} px tall")
                d = run("no-left", [("model_panel", False), ("inputs_panel", False)])
                expect(d["panels"]["main"]["w"] > main0["w"] and d["panels"]["main"]["x"] < main0["x"],
                       f"model and inputs hidden: main {d['panels']['main']}, was {main0}")
                d = run("no-status", [("status_bar", False)])
                expect("status" not in d["panels"], "the hidden status bar is still in the dump")
                expect(d["panels"]["main"]["h"] > main0["h"], f"status bar hidden: main {d['panels']['main']['h']} px tall")
                d = run("presentation", [("presentation", True)])
                for p in ("model", "inputs", "inspector"):
                    expect(p not in d["panels"], f"presentation: panel {p} still shown")
                expect(d["panels"]["main"]["w"] == 1280 and "status" in d["panels"],
                       f"presentation: main {d['panels']['main']} (the whole width), status bar kept")
                expect(d["state"]["workspace"]["view"].get("inspector") is True,
                       "presentation changed the inspector's own setting")
                check_values(d, 2, BOOK_STAGES[:4], "presentation at 1280×800")
                print(f"  main area: {main0['w']:.0f} px wide with every panel, 1280 in presentation")

            def figures_grow():
                sizes = {}
                for percent in (100, 150):
                    png = os.path.join(work, f"fig{percent}.png")
                    env = dict(os.environ, DISPLAY=display.name, HOME=work, XDG_STATE_HOME=os.path.join(work, "state"))
                    out = subprocess.run([args.app, "--open", multihead, "--size", "1280x720", "--text-size", str(percent),
                                          "--caption", "--screenshot", png], env=env, capture_output=True, text=True,
                                         timeout=STEP_TIMEOUT * 2)
                    expect(out.returncode == 0, f"--caption at {percent} %: exit {out.returncode}: {out.stderr.strip()}")
                    sizes[percent] = out.stdout.strip().rsplit("(", 1)[-1]
                # the caption strip (its line of text and a margin) under the 720 px window, × the UI scale
                strips = {p: int(s.rstrip(")").split("×")[1]) - 720 for p, s in sizes.items()}
                expect(all(s.startswith("1280×") for s in sizes.values()) and 15 <= strips[100] <= 30 and
                       abs(strips[150] - 1.5 * strips[100]) <= 1.5, f"figure sizes {sizes}")
                # One map's figure: the whole map (title to colorbar) at 1.5× — not the part of it a
                # 1280 × 720 window at 150 % has room for beside the side panels.
                maps = {}
                for percent in (100, 150):
                    png = os.path.join(work, f"map{percent}.png")
                    out = subprocess.run([args.app, "--open", multihead, "--size", "1280x720", "--text-size", str(percent),
                                          "--panel", "weights", "--head", "2", "--screenshot", png], env=env,
                                         capture_output=True, text=True, timeout=STEP_TIMEOUT * 2)
                    expect(out.returncode == 0, f"--panel weights at {percent} %: exit {out.returncode}: {out.stderr.strip()}")
                    w, h = out.stdout.strip().rsplit("(", 1)[-1].rstrip(")").split("×")
                    maps[percent] = (int(w), int(h))
                for k in (0, 1):
                    ratio = maps[150][k] / maps[100][k]
                    expect(1.4 <= ratio <= 1.55, f"the weights figure is {maps[150]} at 150 %, {maps[100]} at 100 %")
                print(f"  captions: {sizes}; the weights map: {maps}")

            def fullscreen_commands():
                d = headless("fs-on", [{"do": "fullscreen"}], "--open", multihead, "--size", "1280x720")
                s = d["state"]
                expect(s["fullscreen"] and s["window"] == [1920, 1080], f"fullscreen: {s['fullscreen']}, window {s['window']}")
                check_usable(d, 1920, 1080, "full screen")
                d = headless("fs-off", [{"do": "fullscreen"}, {"do": "fullscreen", "on": False}],
                             "--open", multihead, "--size", "1280x720")
                s = d["state"]
                expect(not s["fullscreen"] and s["window"] == [1280, 720], f"back: {s['fullscreen']}, window {s['window']}")

            def keys():
                app = start_ready(args.app, display.name, ["--open", multihead, "--size", "1280x720"])
                with app:
                    steps = [("ctrl+plus", 125), ("ctrl+equal", 150), ("ctrl+minus", 125), ("ctrl+KP_Add", 150),
                             ("ctrl+0", 100), ("ctrl+minus", 100)]
                    for combo, want in steps:
                        app.key(combo)
                        app.wait_for(f"{combo} → text size {want}", lambda d: d["state"]["text_size"] == want)
                    app.key("F11")
                    app.wait_for("F11 → full screen", lambda d: d["state"]["fullscreen"] and d["state"]["window"] == [1920, 1080])
                    app.key("F11")
                    app.wait_for("F11 again → 1280×720", lambda d: not d["state"]["fullscreen"]
                                 and d["state"]["window"] == [1280, 720])
                    app.key("F10")
                    d = app.wait_for("F10 → presentation", lambda d: d["state"]["shown_panels"]["presentation"])
                    expect("model" not in d["panels"] and "inspector" not in d["panels"], "F10: side panels still shown")
                    print("  Ctrl++ / Ctrl+= / Ctrl+− / keypad + / Ctrl+0, F11 twice, F10: as expected")

            def help_window():
                # Help › Keys and mouse at a projector's text size: inside the window (it scrolls),
                # not running off the bottom of a 1280 × 720 screen.
                app = start_ready(args.app, display.name, ["--open", multihead, "--size", "1280x720", "--text-size", "150"])
                with app:
                    app.click("menu_help")
                    app.wait_for("the Help menu", lambda d: "menu_keys_help" in d["widgets"])
                    app.click("menu_keys_help")
                    # (it sizes itself to its text over its first frames)
                    d = app.wait_for("the Help window, sized", lambda d: d["panels"].get("help", {}).get("h", 0) >= 300)
                    r = d["panels"]["help"]
                    expect(r["x"] >= 0 and r["y"] >= 0 and r["x"] + r["w"] <= 1280 and r["y"] + r["h"] <= 720,
                           f"the Help window {r} runs out of the 1280×720 window")
                    print(f"  Help at 150 %: {r}")
                    # A click on a panel beside it leaves Help in front: the panels draw no background
                    # of their own, and one brought over Help showed Help's text through its own.
                    tiles = [p for name, p in d["panels"].items() if name in ("inspector", "main", "inputs")]
                    spot = next(((t["x"] + t["w"] - 6, t["y"] + t["h"] - 6) for t in tiles
                                 if not (r["x"] <= t["x"] + t["w"] - 6 <= r["x"] + r["w"]
                                         and r["y"] <= t["y"] + t["h"] - 6 <= r["y"] + r["h"])), None)
                    expect(spot is not None, f"no panel corner outside the Help window {r}")
                    if spot:
                        app.click_at(*spot)
                        time.sleep(0.5)  # the click's two frames, drawn at once
                        d = app.wait_for("a frame after the click", lambda d: "front_window" in d["state"])
                        expect(d["state"].get("front_window") == "Help",
                               f"a click at {spot} put {d['state'].get('front_window')!r} over the Help window")

            return run_checks([
                ("150 % at 1280×800 stays usable", text_150_at_1280x800),
                ("the book's multi-head example at 1280×720", book_at_1280x720),
                ("text size round-trips through a saved workspace", round_trip),
                ("a bad text size is one clear error", bad_values),
                ("hiding panels frees room for the main area", hiding_panels),
                ("figures grow with the text size", figures_grow),
                ("full screen under Xvfb, and back", fullscreen_commands),
                ("keys: Ctrl +/−/0, F11, F10", keys),
                ("Help › Keys and mouse fits the window", help_window),
            ])
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
