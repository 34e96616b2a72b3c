"""The Lines view (docs/DESIGN.md §3.4): attention as lines between tokens.

- Weights: on the book's multi-head example (T = 6, 2 heads) the layout dump's `state.lines` lists
  one line per (query, key, head) whose weight in `attnscope-cli trace` of the workspace on screen is
  positive — no more, no fewer — with that weight, opacity = weight (opaque at 1) and width growing
  with it, so the opacity order is the weights' order.
- After dropout (causal with dropout): the lines are the positive dropped weights, opaque at 1/(1 − p).
- Heads: `lines_hidden_heads [1]` removes head 2's lines and keeps head 1's.
- Selection: `select_token 2` with `lines_isolate` keeps only query 2's lines, with their values
  written after the keys; the screenshot shows the strongest one (pixels along it differ from the
  canvas where no line goes).
- GPT-2 small (T = 1024): `lines_top_k 3` draws 3 keys per query (fewer for the first queries, which
  see fewer keys), the largest of each row; head toggles leave one head.
- Mouse (xdotool): the Lines tab by a click; a head's toggle hides its lines; hovering a query label
  isolates its lines, hovering a key label the lines into it; clicking a query selects it and keeps
  its lines alone.
- The settings are saved in the workspace's view and come back; `--panel lines` at 2× is the panel
  at twice its size; a bad value is refused with a message naming the field.
- Vector figures: `--panel lines` as SVG has one stroke per line the view draws, at its opacity, and
  the tokens as <text>; as PDF its text extracts; other panels as SVG are still refused.

Usage: test_lines_view.py --app APP --cli CLI --presets PRESETS_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_teaching import (Display, arguments, cli_trace_of, preset_copy, run_checks, run_commands,  # noqa: E402
                           start_ready)

LINES_TAB = {"do": "view", "field": "tab", "value": "lines"}


# Tableau 10 (Tableau's default categorical palette since 10.0), #4e79a7 … #bab0ac.
TABLEAU_10 = [[int(h[k:k + 2], 16) for k in (0, 2, 4)] for h in
              ("4e79a7", "f28e2b", "e15759", "76b7b2", "59a14f", "edc948", "b07aa1", "ff9da7", "9c755f", "bab0ac")]

def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def close(a, b, tol=2e-6):
    return abs(float(a) - float(b)) <= tol * (1 + abs(float(b)))


def expected_lines(trace, batch, stage, heads):
    """(i, j, h) → value for every positive value of the stage in the CLI's trace."""
    out = {}
    for h in heads:
        m = trace["batches"][batch]["heads"][h][stage]
        for i, row in enumerate(m):
            for j, v in enumerate(row):
                if v is not None and v > 0:
                    out[(i, j, h)] = v
    return out


def check_lines_match(lines, want, opaque_at, what):
    expect(not lines["truncated"] and lines["count"] == len(lines["lines"]), f"{what}: {lines['count']} lines, "
                                                                            f"{len(lines['lines'])} in the dump")
    got = {(i, j, h): (v, a, w) for i, j, h, v, a, w in lines["lines"]}
    expect(set(got) == set(want), f"{what}: lines {sorted(set(got) ^ set(want))[:10]} differ from the trace's positive values")
    for key, (v, a, w) in got.items():
        expect(close(v, want[key]), f"{what}: line {key} has {v}, the trace {want[key]}")
        expect(close(a, min(1.0, want[key] / opaque_at), 1e-5), f"{what}: line {key} opacity {a} for {want[key]} (opaque at {opaque_at})")
    ordered = sorted(got.values())
    for (v0, a0, w0), (v1, a1, w1) in zip(ordered, ordered[1:]):
        expect(a0 <= a1 + 1e-7 and w0 <= w1 + 1e-6, f"{what}: opacity/width not in the weights' order: {v0} → ({a0}, {w0}), "
                                                    f"{v1} → ({a1}, {w1})")
    return got


def main():
    args = arguments(__doc__.split("\n")[0])
    work = tempfile.mkdtemp(prefix="attnscope-lines-")
    multihead = os.path.join(args.presets, "multihead.json")
    causal_dropout = os.path.join(args.presets, "causal_dropout.json")

    try:
        with Display() as display:
            def headless(name, commands, *extra):
                return run_commands(args.app, display.name, work, name, commands, *extra)

            def trace_of(d, name):
                return cli_trace_of(args.cli, d["state"]["workspace"], work, name + ".json")

            def weights():
                d = headless("book", [LINES_TAB], "--open", multihead, "--size", "1280x800")
                expect("lines" in d["panels"], "no lines panel in the dump")
                lines = d["state"]["lines"]
                trace = trace_of(d, "book")
                H = len(trace["batches"][lines["batch"]]["heads"])
                expect(lines["stage"] == "weights" and lines["top_k"] is None and lines["heads_drawn"] == list(range(H)),
                       f"book: {lines['stage']}, top_k {lines['top_k']}, heads {lines['heads_drawn']}")
                want = expected_lines(trace, lines["batch"], "weights", range(H))
                got = check_lines_match(lines, want, 1.0, "book weights")
                cols = {tuple(c) for c in lines["head_colours"]}
                expect(len(cols) == H, f"book: head colours {lines['head_colours']} are not one per head")
                # Tableau's ten, as published (the Learn tab's charts take the same, layer by layer).
                expect([list(c) for c in lines["head_colours"]] == TABLEAU_10[:H],
                       f"book: head colours {lines['head_colours']}, not Tableau's first {H}")
                print(f"  book example: {len(got)} lines = the trace's positive weights of {H} heads, opacity = weight")

            def dropped():
                d = headless("dropout", [LINES_TAB, {"do": "view", "field": "lines_stage", "value": "dropped_weights"}],
                             "--open", causal_dropout, "--size", "1600x1000")
                lines = d["state"]["lines"]
                trace = trace_of(d, "dropout")
                p = d["state"]["workspace"]["model"]["dropout"]
                H = len(trace["batches"][lines["batch"]]["heads"])
                expect(lines["stage"] == "dropped_weights" and close(lines["opaque_at"], 1 / (1 - p), 1e-5),
                       f"dropout: {lines['stage']}, opaque at {lines['opaque_at']} (p = {p})")
                want = expected_lines(trace, lines["batch"], "dropped_weights", range(H))
                got = check_lines_match(lines, want, 1 / (1 - p), "dropped weights")
                positive = expected_lines(trace, lines["batch"], "weights", range(H))
                expect(len(got) < len(positive), f"dropout: {len(got)} lines after dropout, {len(positive)} before")
                print(f"  causal dropout p = {p}: {len(got)} lines after dropout of {len(positive)} weights")

            def heads_and_selection():
                d = headless("hidden", [LINES_TAB, {"do": "view", "field": "lines_hidden_heads", "value": [1]}],
                             "--open", multihead, "--size", "1280x800")
                lines = d["state"]["lines"]
                trace = trace_of(d, "hidden")
                expect(lines["heads_drawn"] == [0], f"head 2 hidden: heads drawn {lines['heads_drawn']}")
                check_lines_match(lines, expected_lines(trace, lines["batch"], "weights", [0]), 1.0, "head 2 hidden")
                expect(d["state"]["lines_head_lit"] == {"1": True, "2": False}, f"head 2 hidden: lit {d['state']['lines_head_lit']}")
                # One head chosen (Tab, a thumbnail): the others' toggles are not lit, as their lines are not drawn.
                d = headless("chosen", [LINES_TAB, {"do": "select_head", "index": 1}], "--open", multihead,
                             "--size", "1280x800")
                expect(d["state"]["lines"]["heads_drawn"] == [1] and d["state"]["lines_head_lit"] == {"1": False, "2": True},
                       f"head 2 chosen: drawn {d['state']['lines']['heads_drawn']}, lit {d['state']['lines_head_lit']}")
                path = preset_copy(args.presets, "causal_dropout", work)
                d = headless("isolated", [LINES_TAB, {"do": "select_token", "index": 2},
                                          {"do": "view", "field": "lines_isolate", "value": True}],
                             "--open", path, "--size", "1280x800")
                lines = d["state"]["lines"]
                trace = trace_of(d, "isolated")
                H = len(trace["batches"][lines["batch"]]["heads"])
                expect(lines["isolated"] == {"query": 2, "key": None, "by": "selection"}, f"isolated: {lines['isolated']}")
                want = {k: v for k, v in expected_lines(trace, lines["batch"], "weights", range(H)).items() if k[0] == 2}
                got = check_lines_match(lines, want, 1.0, "token 2 isolated")
                expect(lines["per_query"] == [len(got) if i == 2 else 0 for i in range(lines["tokens"])],
                       f"isolated: per query {lines['per_query']}")
                values = {(j, h): text for j, h, text in lines["values"]}
                expect(values == {(j, h): "%.3f" % v for (i, j, h), (v, a, w) in got.items()},
                       f"isolated: values written after the keys {values}, lines {got}")
                # Pixels: along the strongest line, its head's colour over the canvas; where no line goes, the canvas.
                g = lines["geometry"]
                img = Image.open(d["png"]).convert("RGB")
                (i, j, h), (v, a, w) = max(got.items(), key=lambda kv: kv[1][0])
                y_of = lambda r: g["first_row_y"] + r * g["pitch"]  # noqa: E731
                T = lines["tokens"]
                empty = (int(g["key_x"] - 6), int(y_of(T - 1)))  # no query reaches the last key but itself
                bg = img.getpixel(empty)
                differ = 0
                for f in (0.25, 0.5, 0.75):
                    x = g["query_x"] + f * (g["key_x"] - g["query_x"])
                    y = y_of(i) + f * (y_of(j) - y_of(i))
                    px = img.getpixel((int(round(x)), int(round(y))))
                    differ += max(abs(px[c] - bg[c]) for c in range(3)) > 20
                expect(differ >= 2, f"isolated: the strongest line ({i}→{j}, head {h + 1}, {v:.3f}) is not visible "
                                    f"against the canvas {bg}")
                print(f"  head 2 hidden: head 1's lines only; token 2 isolated: {len(got)} lines, the strongest "
                      f"{i}→{j} (head {h + 1}, {v:.3f}) visible in the screenshot")

            def gpt2():
                keep = 0
                d = headless("gpt2", [LINES_TAB, {"do": "view", "field": "lines_top_k", "value": 3},
                                      {"do": "view", "field": "lines_hidden_heads", "value": [h for h in range(12) if h != keep]}],
                             "--open", os.path.join(args.presets, "gpt2-small.json"), "--size", "1280x800")
                lines = d["state"]["lines"]
                T = lines["tokens"]
                expect(T == 1024 and lines["top_k"] == 3 and lines["heads_drawn"] == [keep],
                       f"GPT-2: T {T}, top_k {lines['top_k']}, heads {lines['heads_drawn']}")
                want = [min(3, i + 1) for i in range(T)]  # causal: query i sees i + 1 keys
                expect(lines["per_query"] == want, f"GPT-2: lines per query {lines['per_query'][:8]}…, expected {want[:8]}… ({ {k: v for k, v in lines.items() if k not in ('lines', 'per_query')} }, state token {d['state']['token']})")
                expect(not lines["truncated"] and len(lines["lines"]) == sum(want), f"GPT-2: {len(lines['lines'])} lines dumped")
                expect(all(j <= i for i, j, h, v, a, w in lines["lines"]), "GPT-2: a line to a masked (future) key")
                g = lines["geometry"]
                expect(g["last_visible"] < T - 1, f"GPT-2: all {T} tokens on screen at once ({g}): the lists should scroll")
                # A query selected out of sight is scrolled to (it stayed at tokens 1–9).
                for picked in (700, T - 1):
                    d = headless(f"gpt2-selected-{picked}", [LINES_TAB, {"do": "select_token", "index": picked}],
                                 "--open", os.path.join(args.presets, "gpt2-small.json"), "--size", "1280x800")
                    g = d["state"]["lines"]["geometry"]
                    expect(g["first_visible"] <= picked <= g["last_visible"],
                           f"GPT-2: query {picked} selected, tokens {g['first_visible']}–{g['last_visible']} on screen")
                d = headless("gpt2-all", [LINES_TAB], "--open", os.path.join(args.presets, "gpt2-small.json"), "--size", "1280x800")
                lines = d["state"]["lines"]
                expect(lines["top_k"] == 5 and lines["heads_drawn"] == list(range(12)) and lines["count"] == 12 * sum(min(5, i + 1) for i in range(T)),
                       f"GPT-2, defaults: top_k {lines['top_k']}, heads {lines['heads_drawn']}, {lines['count']} lines")
                print(f"  GPT-2 small: top 3 keys per query ({sum(want)} lines of head {keep + 1}), the lists scroll; "
                      f"all 12 heads at k = 5: {lines['count']} lines")

            def saved_and_figure():
                saved = os.path.join(work, "lines-view.json")
                settings = [{"do": "view", "field": "lines_stage", "value": "dropped_weights"},
                            {"do": "view", "field": "lines_top_k", "value": 7},
                            {"do": "view", "field": "lines_hidden_heads", "value": [0]},
                            {"do": "view", "field": "lines_isolate", "value": True}]
                d = headless("saved", [LINES_TAB, *settings, {"do": "save", "path": saved}], "--open", causal_dropout,
                             "--size", "1280x800")
                with open(saved) as f:
                    view = json.load(f)["view"]
                expect(view.get("tab") == "lines" and view.get("lines_stage") == "dropped_weights" and view.get("lines_top_k") == 7
                       and view.get("lines_hidden_heads") == [0] and view.get("lines_isolate") is True, f"saved view: {view}")
                d = headless("reopened", [], "--open", saved, "--size", "1280x800")
                expect(d["state"]["lines"]["stage"] == "dropped_weights" and d["state"]["lines"]["hidden_heads"] == [0],
                       f"reopened: {d['state']['lines']['stage']}, hidden {d['state']['lines']['hidden_heads']}")
                d = headless("figure", [LINES_TAB], "--open", multihead, "--size", "1280x800", "--panel", "lines", "--scale", "2")
                p = d["panels"]["lines"]
                size = Image.open(d["png"]).size
                expect(abs(size[0] - 2 * p["w"]) <= 4 and abs(size[1] - 2 * p["h"]) <= 4,
                       f"--panel lines --scale 2: {size}, the panel is {p['w']}×{p['h']}")
                cmd = os.path.join(work, "bad.commands.json")
                with open(cmd, "w") as f:
                    json.dump([{"do": "view", "field": "lines_top_k", "value": 0}], f)
                env = dict(os.environ, DISPLAY=display.name, HOME=work, XDG_STATE_HOME=work)
                out = subprocess.run([args.app, "--open", multihead, "--commands", cmd, "--screenshot",
                                      os.path.join(work, "bad.png")], env=env, capture_output=True, text=True, timeout=120)
                expect(out.returncode == 2 and "lines_top_k" in out.stdout + out.stderr,
                       f"lines_top_k 0: exit {out.returncode}, {out.stdout.strip()} {out.stderr.strip()}")
                print(f"  saved and reopened with the view's lines settings; --panel lines at 2×: {size}; "
                      f"lines_top_k 0 refused: {(out.stdout + out.stderr).strip()}")

            def mouse():
                path = preset_copy(args.presets, "multihead", work)
                with start_ready(args.app, display.name, ["--open", path, "--size", "1280x800"]) as app:
                    app.settled("the first result")
                    app.click("tab_lines")
                    d = app.wait_for("the Lines tab", lambda d: "lines" in d["state"] and d["state"]["workspace"]["view"]["tab"] == "lines")
                    n = d["state"]["lines"]["count"]
                    app.click("lines_head_h2")
                    d = app.wait_for("head 2 hidden by its toggle", lambda d: d["state"]["lines"]["heads_drawn"] == [0])
                    expect(all(h == 0 for i, j, h, *_ in d["state"]["lines"]["lines"]), "head 2 hidden: its lines are drawn")
                    g = d["state"]["lines"]["geometry"]
                    y = g["first_row_y"] + 4 * g["pitch"]
                    app.move(g["query_x"] - 20, y - 3)
                    app.move(g["query_x"] - 20, y)
                    d = app.wait_for("query 4 hovered", lambda d: d["state"]["lines"]["isolated"] == {"query": 4, "key": None, "by": "hover"})
                    expect(d["state"]["lines"]["lines"] and all(i == 4 for i, *_ in d["state"]["lines"]["lines"]),
                           f"query 4 hovered: lines {d['state']['lines']['lines']}")
                    app.move(g["key_x"] + 20, g["first_row_y"] + 1 * g["pitch"])
                    d = app.wait_for("key 1 hovered", lambda d: d["state"]["lines"]["isolated"] == {"query": None, "key": 1, "by": "hover"})
                    expect(all(j == 1 for i, j, *_ in d["state"]["lines"]["lines"]), "key 1 hovered: lines to other keys")
                    app.click_at(g["query_x"] - 20, y)
                    d = app.wait_for("query 4 selected and isolated", lambda d: d["state"]["token"] == 4
                                     and d["state"]["workspace"]["view"]["lines_isolate"] is True)
                    app.move(g["query_x"] + 200, g["first_row_y"] - 2 * g["pitch"])
                    d = app.wait_for("the selection isolating", lambda d: d["state"]["lines"]["isolated"]["by"] == "selection")
                    expect(d["state"]["lines"]["isolated"]["query"] == 4, f"selection: {d['state']['lines']['isolated']}")
                    # Save figure…: the dialog, a name without extension → an SVG of the lines.
                    app.click("lines_save_figure")
                    app.wait_for("the save dialog", lambda d: d["state"].get("file_dialog", {}).get("which") == "save_lines"
                                 and "file_name" in d["widgets"])
                    target = os.path.join(work, "from-dialog")
                    app.type_file_name(target)
                    app.key("Return")
                    app.wait_for("the figure written", lambda d: os.path.exists(target + ".svg") and "Saved" in d["state"]["toast"])
                    with open(target + ".svg") as f:
                        svg = f.read()
                    expect(svg.startswith("<?xml") and "<svg" in svg and "journey" in svg, "the dialog's figure is not the lines' SVG")
                    print("  Save figure… → dialog → from-dialog.svg: an SVG with the tokens as text")
                    print(f"  tab clicked ({n} lines); head 2's toggle hides its lines; hovering query 4 and key 1 "
                          f"isolate theirs; a click selects query 4 and keeps its {d['state']['lines']['count']} lines alone")

            def vector():
                env = dict(os.environ, DISPLAY=display.name, HOME=work, XDG_STATE_HOME=work)
                d = headless("svg-reference", [LINES_TAB], "--open", multihead, "--size", "1280x800")
                want = sorted(round(a, 4) for i, j, h, v, a, w in d["state"]["lines"]["lines"])
                svg, pdf = os.path.join(work, "lines.svg"), os.path.join(work, "lines.pdf")
                for path in (svg, pdf):
                    out = subprocess.run([args.app, "--open", multihead, "--screenshot", path, "--panel", "lines", "--caption"],
                                         env=env, capture_output=True, text=True, timeout=120)
                    expect(out.returncode == 0 and f"saved {path}" in out.stdout, f"--panel lines {path}: exit {out.returncode} "
                                                                                 f"{out.stdout.strip()} {out.stderr.strip()}")
                with open(svg) as f:
                    text = f.read()
                strokes = re.findall(r'<path style="[^"]*stroke-linecap:round;[^"]*stroke-opacity:([0-9.]+);', text)
                got = sorted(round(float(a), 4) for a in strokes)
                expect(len(got) == len(want) and all(abs(a - b) < 2e-4 for a, b in zip(got, want)),
                       f"SVG: {len(got)} lines with opacities {got[:6]}…, the view draws {len(want)}: {want[:6]}…")
                tokens = d["state"]["tokens"]
                expect(all(f">{t}</text>" in text for t in tokens), f"SVG: the tokens {tokens} are not all <text>")
                if shutil.which("pdftotext"):
                    words = subprocess.run(["pdftotext", pdf, "-"], capture_output=True, text=True).stdout
                    expect(all(t in words for t in tokens) and "head 2" in words, f"PDF text: {words!r}")
                out = subprocess.run([args.app, "--open", multihead, "--screenshot", os.path.join(work, "p.svg"), "--panel", "pipeline"],
                                     env=env, capture_output=True, text=True, timeout=120)
                expect(out.returncode == 2 and "panel lines" in out.stdout + out.stderr, f"pipeline as SVG: {out.stdout} {out.stderr}")
                print(f"  --panel lines as SVG: {len(got)} strokes at the view's opacities, the tokens as text; as PDF: "
                      f"its text readable; the pipeline as SVG refused")

            return run_checks([("vector figures", vector), ("mouse", mouse), ("weights", weights), ("after dropout", dropped), ("heads and selection", heads_and_selection),
                               ("GPT-2 small", gpt2), ("saved and figure", saved_and_figure)])
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
