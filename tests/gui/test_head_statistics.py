"""The head statistics panel (docs/DESIGN.md §3.4) under the main area.

- Numbers: the multi-head example with dropout 0.5 at 1280×800, causal dropout at 1600×1000 and a
  one-token input: the layout dump's per-head statistics equal a numpy re-derivation from the
  weights and dropped weights of `attnscope-cli trace` of the workspace on screen (entropy with
  0·ln 0 = 0, row sums after dropout, the means), and the text drawn is the CLI trace's statistics
  (oracle-tested against torch) formatted as the panel says them; no text is cut at 100 % text and
  at 150 % in 1600×1000; the panel lies under the main area, as wide, inside the window.
- Pixels: every bar of both charts in the screenshot is drawn to its value's height, in blue, or
  orange for a row that sums to more than 1.
- Hiding: `view statistics false` removes the panel and gives its height to the main area; the
  field is saved in the workspace's view; presentation hides it; back with `statistics true`.
- GPT-2 small (T = 1024, 12 heads): every head's statistics arrive, the panel keeps to a quarter
  of the column and its rows scroll.
- Maps that will not come: a result in two parts whose rest a refused edit drops (48 heads of 1000
  tokens, then a score beyond float32): the first part's heads keep their statistics, every other
  head's cell says "not computed", each heatmap card, the Inspector and the Pipeline of such a head
  say "Head N's maps were not computed: <the engine's message>", none "computing".
- Interactive (xdotool): a weights cell's tooltip ends with its row's entropy and largest weight,
  a dropped-weights cell's with the row sum after dropout; a bar's tooltip names its row; clicking a
  bar selects that token, clicking a head's name shows that head alone.

Usage: test_head_statistics.py --app APP --cli CLI --presets PRESETS_DIR
"""
import json
import math
import os
import shutil
import sys
import tempfile

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_teaching import (Display, arguments, cli_trace_of, preset_copy, run_checks, run_commands,  # noqa: E402
                           start_ready)

BAR = (86, 156, 214)
ABOVE_ONE = (232, 150, 62)
BOOK = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
        [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def fixed(v, decimals):
    """formatFixed: printf's %.Nf with a true minus and no negative zero."""
    text = "%.*f" % (decimals, v)
    if text.startswith("-"):
        text = "−" + text[1:] if float(text) != 0 else text[1:]
    return text


def numpy_statistics(weights, dropped):
    """The definitions, in float64 from the trace's matrices: not the code under test."""
    w, d = np.array(weights, dtype=np.float64), np.array(dropped, dtype=np.float64)
    positive = w > 0
    entropy = -np.where(positive, w * np.log(np.where(positive, w, 1.0)), 0.0).sum(axis=1)
    T = w.shape[0]
    return {"entropy": entropy, "row_sum_after_dropout": d.sum(axis=1), "mean_entropy": entropy.mean(),
            "mean_weight_previous_token": np.diagonal(w, offset=-1).mean() if T > 1 else None,
            "mean_weight_first_token": w[:, 0].mean()}


def rows(first, T):
    """" (rows 2–6)", or " (row 2)" when that is one row."""
    return f" (row {T})" if first == T else f" (rows {first}–{T})"


def expected_cells(h, s, T=None, rows_said=True):
    """What the panel writes for head h from the trace's statistics (T tokens: its rows; rows_said:
    whether the mean weights say over which rows, as where the panel has room)."""
    T = T or len(s["entropy"])
    said = rows if rows_said else (lambda _first, _T: "")
    tokens = float(np.float32(math.exp(s["mean_entropy"])))
    previous = s["mean_weight_previous_token"]
    return [f"head {h + 1}", fixed(s["mean_entropy"], 3) + " nats",
            "≈ " + fixed(tokens, 0 if tokens >= 100 else 1 if tokens >= 10 else 2) + " tokens",
            "previous " + ("—" if previous is None else fixed(previous, 3) + said(2, T)),
            "first " + fixed(s["mean_weight_first_token"], 3) + said(1, T)]


def close(a, b, tol=2e-6):
    return abs(float(a) - float(b)) <= tol * (1 + abs(float(b)))


def inside(r, w, h):
    return r["x"] >= -0.5 and r["y"] >= -0.5 and r["x"] + r["w"] <= w + 0.5 and r["y"] + r["h"] <= h + 0.5


def check_panel_place(d, w, h, what):
    p, m = d["panels"].get("statistics"), d["panels"]["main"]
    expect(p is not None, f"{what}: no statistics panel in the dump")
    expect(inside(p, w, h) and p["h"] > 0, f"{what}: the panel {p} is not inside the {w}×{h} window")
    expect(abs(p["x"] - m["x"]) < 0.5 and abs(p["w"] - m["w"]) < 0.5 and abs(p["y"] - (m["y"] + m["h"])) < 0.5,
           f"{what}: the panel {p} is not right under the main area {m}")
    expect(d["state"]["shown_panels"]["statistics"] is True, f"{what}: shown_panels.statistics is not true")


def check_numbers(d, trace, what, rows_said=True):
    """The dump's statistics against numpy's from the CLI's maps, its text against the CLI's numbers."""
    hs = d["state"]["head_statistics"]
    batch = trace["batches"][hs["batch"]]
    expect(len(hs["heads"]) == len(batch["heads"]), f"{what}: {len(hs['heads'])} heads in the panel, "
                                                    f"{len(batch['heads'])} in the trace")
    expect(hs["clipped"] == [], f"{what}: text cut in the panel: {hs['clipped']}")
    for h, (entry, head) in enumerate(zip(hs["heads"], batch["heads"])):
        expect(not entry["computing"] and not entry["not_computed"],
               f"{what}: head {h + 1} still computing, or not computed")
        ref = numpy_statistics(head["weights"], head["dropped_weights"])
        for q in ("entropy", "row_sum_after_dropout"):
            bad = [(i, a, b) for i, (a, b) in enumerate(zip(entry[q], ref[q])) if not close(a, b)]
            expect(len(entry[q]) == len(ref[q]) and not bad, f"{what}: head {h + 1} {q} {entry[q]} vs numpy {list(ref[q])}")
        for q in ("mean_entropy", "mean_weight_previous_token", "mean_weight_first_token"):
            if ref[q] is None:
                expect(entry[q] is None, f"{what}: head {h + 1} {q} is {entry[q]}, expected none (T = 1)")
            else:
                expect(close(entry[q], ref[q]), f"{what}: head {h + 1} {q} {entry[q]} vs numpy {ref[q]}")
        want = expected_cells(h, head["statistics"], rows_said=rows_said)
        expect(entry["cells"] == want, f"{what}: head {h + 1} shows {entry['cells']}, expected {want}")
    return hs


def colour_near(px, want, tol=24):
    return max(abs(int(px[k]) - want[k]) for k in range(3)) <= tol


def check_bars(png, hs, what):
    """Each row's bar reaches its value's height in the screenshot: bar colour just below the top,
    something else just above it (away from the line at 1)."""
    img = Image.open(png).convert("RGB")
    checked = 0
    for entry in hs["heads"]:
        for chart, values in (("entropy_chart", entry["entropy"]), ("row_sums_chart", entry["row_sum_after_dropout"])):
            c = entry[chart]
            p, hi = c["plot"], c["range"][1]
            T = len(values)
            bottom = p["y"] + p["h"]
            line_y = bottom - min(max(c.get("line", 0) / hi, 0), 1) * (p["h"] - 1) if "line" in c else None
            for i, v in enumerate(values):
                x = int(p["x"] + (i + 0.5) * p["w"] / T)
                top = bottom - min(max(v / hi, 0.0), 1.0) * (p["h"] - 1)
                bar = ABOVE_ONE if chart == "row_sums_chart" and v > 1 + 1e-4 else BAR
                below, above = int(top + 3), int(top - 3)
                if bottom - top >= 6 and (line_y is None or abs(below - line_y) > 2):
                    px = img.getpixel((x, below))
                    expect(colour_near(px, bar), f"{what}: {chart} row {i} ({v:.4f}): {px} at y {below}, "
                                                 f"expected the bar's {bar}")
                    checked += 1
                if above > p["y"] + 1 and (line_y is None or abs(above - line_y) > 2):
                    px = img.getpixel((x, above))
                    expect(not colour_near(px, BAR) and not colour_near(px, ABOVE_ONE),
                           f"{what}: {chart} row {i} ({v:.4f}): bar colour {px} above its top at y {above}")
                    checked += 1
    return checked


def main():
    args = arguments(__doc__.split("\n")[0])
    work = tempfile.mkdtemp(prefix="attnscope-statistics-")
    multihead = os.path.join(args.presets, "multihead.json")
    causal_dropout = os.path.join(args.presets, "causal_dropout.json")

    try:
        with Display() as display:
            def headless(name, commands, *extra):
                return run_commands(args.app, display.name, work, name, commands, *extra)

            def trace_of(d, name):
                return cli_trace_of(args.cli, d["state"]["workspace"], work, name + ".json")

            def numbers_and_pixels():
                # Each case with what must fit: the charts, and the rows each mean is over.
                cases = [
                    ("multihead-p05-1280", [{"do": "set", "field": "dropout", "value": 0.5}],
                     ("--open", multihead, "--size", "1280x800"), (1280, 800), (True, True)),
                    ("causal-dropout-1600", [], ("--open", causal_dropout, "--size", "1600x1000"), (1600, 1000),
                     (True, True)),
                    ("causal-dropout-1600-150", [{"do": "view", "field": "text_size", "value": 150}],
                     ("--open", causal_dropout, "--size", "1600x1000"), (1600, 1000), (True, True)),
                    ("wrapper-batch2-1280", [{"do": "set", "field": "dropout", "value": 0.3}, {"do": "select_batch", "index": 1}],
                     ("--open", os.path.join(args.presets, "multihead_wrapper.json"), "--size", "1280x800"), (1280, 800),
                     (True, True)),
                    # Projectors': charts too narrow to read are left out, then the means' rows, so
                    # that no text is cut.
                    ("multihead-1280x720-150", [{"do": "view", "field": "text_size", "value": 150}],
                     ("--open", multihead, "--size", "1280x720"), (1280, 720), (False, True)),
                    ("multihead-1280x800-175", [{"do": "view", "field": "text_size", "value": 175}],
                     ("--open", multihead, "--size", "1280x800"), (1280, 800), (False, False)),
                    ("multihead-1920x1080-200", [{"do": "view", "field": "text_size", "value": 200}],
                     ("--open", multihead, "--size", "1920x1080"), (1920, 1080), (True, False)),
                ]
                for name, commands, extra, (w, h), (charts, rows_said) in cases:
                    d = headless(name, commands, *extra)
                    check_panel_place(d, w, h, name)
                    hs = d["state"]["head_statistics"]
                    expect((hs["charts"], hs["rows_said"]) == (charts, rows_said),
                           f"{name}: charts {hs['charts']}, rows said {hs['rows_said']}; expected {charts}, {rows_said}")
                    hs = check_numbers(d, trace_of(d, name), name, rows_said=rows_said)
                    above = sum(v > 1 + 1e-4 for e in hs["heads"] for v in e["row_sum_after_dropout"])
                    for e in hs["heads"]:
                        expect(("entropy_chart" in e) == charts, f"{name}: head {e['head'] + 1}'s chart in the dump "
                                                                  f"does not say charts {charts}")
                    # (At 200 % the panel scrolls: head 2's charts are below its edge.)
                    bars = check_bars(d["png"], hs, name) if charts and "-200" not in name else 0
                    print(f"  {name}: {len(hs['heads'])} heads as numpy has them, text {hs['heads'][0]['cells'][1:]}, "
                          f"{above} rows summing to more than 1 after dropout, {bars} bar pixels checked")
                    if "p05" in name:
                        expect(above > 0, f"{name}: no row sums to more than 1 with p = 0.5")

            def no_room():
                # Where a quarter of the column holds no whole row of it (200 % text on a window
                # 720 or 800 px tall), the panel takes no room: half a row said nothing and hid the
                # maps (Compare showed none). The main area reaches the status bar; the setting stays.
                for size in ("1280x720", "1280x800"):
                    name = f"multihead-{size}-200"
                    d = headless(name, [{"do": "view", "field": "text_size", "value": 200}],
                                 "--open", multihead, "--size", size)
                    expect(d["panels"].get("statistics") is None, f"{name}: a statistics panel without a whole row")
                    expect(d["state"]["statistics_no_room"] is True, f"{name}: statistics_no_room is not true")
                    expect(d["state"]["shown_panels"]["statistics"] is True, f"{name}: the setting changed")
                    # … and said: the panel had gone without a word.
                    expect(d["state"]["status_says_no_room"] is True, f"{name}: the status bar does not say so")
                    m, bar = d["panels"]["main"], d["panels"]["status"]
                    expect(abs(m["y"] + m["h"] - bar["y"]) < 0.5, f"{name}: the main area {m} stops above the status bar {bar}")
                    print(f"  {name}: no panel, the main area {m['h']:.0f} px tall")

            def one_token():
                ws = {"format": "attnscope-workspace", "version": 1, "tokens": ["Your"], "embeddings": BOOK[:1],
                      "model": {"variant": "multihead", "dropout": 0.0}}
                path = os.path.join(work, "one-token.json")
                with open(path, "w") as f:
                    json.dump(ws, f)
                d = headless("one-token", [], "--open", path, "--size", "1280x800")
                hs = check_numbers(d, trace_of(d, "one-token"), "T = 1")
                for e in hs["heads"]:
                    expect(e["entropy"] == [0.0] and e["row_sum_after_dropout"] == [1.0], f"T = 1: {e}")
                    expect(e["cells"][3] == "previous —", f"T = 1: the previous-token mean shows {e['cells'][3]!r}")
                print(f"  T = 1: {hs['heads'][0]['cells']}")

            def hiding():
                base = headless("shown", [], "--open", multihead, "--size", "1280x800")
                main0, panel = base["panels"]["main"], base["panels"]["statistics"]
                saved = os.path.join(work, "hidden.json")
                d = headless("hidden", [{"do": "view", "field": "statistics", "value": False},
                                        {"do": "save", "path": saved}], "--open", multihead, "--size", "1280x800")
                expect("statistics" not in d["panels"], "view statistics false: the panel is still drawn")
                expect("head_statistics" not in d["state"], "view statistics false: the panel still dumps its numbers")
                expect(d["state"]["shown_panels"]["statistics"] is False, "shown_panels.statistics is not false")
                hidden_h = d["panels"]["main"]["h"]
                expect(abs(hidden_h - (main0["h"] + panel["h"])) < 0.5,
                       f"hidden: the main area is {d['panels']['main']['h']} px tall, expected {main0['h']} + {panel['h']}")
                with open(saved) as f:
                    expect(json.load(f)["view"].get("statistics") is False, "the saved view does not say statistics false")
                d = headless("reopened", [], "--open", saved, "--size", "1280x800")
                expect("statistics" not in d["panels"], "reopened: the hidden panel came back")
                d = headless("back", [{"do": "view", "field": "statistics", "value": True}], "--open", saved,
                             "--size", "1280x800")
                check_panel_place(d, 1280, 800, "shown again")
                d = headless("presentation", [{"do": "view", "field": "presentation", "value": True}],
                             "--open", multihead, "--size", "1280x800")
                expect("statistics" not in d["panels"] and d["state"]["workspace"]["view"]["statistics"] is True,
                       "presentation: the panel is drawn, or its own setting changed")
                print(f"  hidden: the main area {main0['h']:.0f} → {hidden_h:.0f} px tall; saved, "
                      f"reopened hidden; presentation hides it too")

            def gpt2_small():
                d = headless("gpt2", [], "--open", os.path.join(args.presets, "gpt2-small.json"), "--size", "1280x800")
                hs = d["state"]["head_statistics"]
                expect(len(hs["heads"]) == 12 and not any(e["computing"] or e["not_computed"] for e in hs["heads"]),
                       f"GPT-2: {len(hs['heads'])} heads, computing {[e['computing'] for e in hs['heads']]}, "
                       f"not computed {[e['not_computed'] for e in hs['heads']]}")
                for e in hs["heads"]:
                    expect(0 < e["mean_entropy"] <= math.log(1024) + 1e-6, f"GPT-2 head {e['head'] + 1}: {e['mean_entropy']}")
                    expect(e["cells"] == expected_cells(e["head"], e, 1024), f"GPT-2 head {e['head'] + 1}: {e['cells']}")
                    expect("entropy" not in e, "GPT-2: the dump lists 1024 values per head")
                p, m = d["panels"]["statistics"], d["panels"]["main"]
                expect(p["h"] <= (p["h"] + m["h"]) / 4 + 1, f"GPT-2: the panel is {p['h']} px of {p['h'] + m['h']}")
                last = hs["heads"][-1]["row_sums_chart"]["plot"]
                expect(last["y"] > p["y"] + p["h"], "GPT-2: all 12 heads fit: the rows should scroll")
                expect(hs["clipped"] == [], f"GPT-2: text cut: {hs['clipped']}")
                print(f"  GPT-2 small: 12 heads, mean entropy {hs['heads'][0]['mean_entropy']:.3f} nats "
                      f"(ln 1024 = {math.log(1024):.3f}), panel {p['h']:.0f} px, rows scroll")
                # The last head chosen as the app opens: its row is brought whole into view, below the
                # header, once every head's statistics are in (its row had been placed while they
                # computed, shorter, and stayed below the panel's edge).
                first = d["widgets"]["statistics_head_h1"]  # the first row's name, unscrolled: under the header
                d = headless("gpt2-head12", [{"do": "select_head", "index": 11}],
                             "--open", os.path.join(args.presets, "gpt2-small.json"), "--size", "1280x800")
                p, name = d["panels"]["statistics"], d["widgets"]["statistics_head_h12"]
                expect(first["y"] - 0.5 <= name["y"] and name["y"] + name["h"] <= p["y"] + p["h"] + 0.5,
                       f"GPT-2, head 12 chosen: its name at y {name['y']:.0f}–{name['y'] + name['h']:.0f} is not "
                       f"between the header ({first['y']:.0f}) and the panel's bottom ({p['y'] + p['h']:.0f})")
                print(f"  GPT-2, head 12 chosen: its row in view at y {name['y']:.0f} "
                      f"(panel {p['y']:.0f}–{p['y'] + p['h']:.0f})")

            def tooltips_and_clicks():
                path = preset_copy(args.presets, "causal_dropout", work)
                with open(path) as f:  # the two maps hovered, both in view (the grid scrolls the others)
                    ws = json.load(f)
                ws.setdefault("view", {})["columns"] = ["weights", "dropped_weights"]
                with open(path, "w") as f:
                    json.dump(ws, f)
                trace = None
                with start_ready(args.app, display.name, ["--open", path]) as app:
                    d = app.settled("the statistics", lambda d: "head_statistics" in d["state"])
                    trace = cli_trace_of(args.cli, d["state"]["workspace"], work, "tooltips.json")
                    tokens = d["state"]["tokens"]
                    s = trace["batches"][d["state"]["batch"]]["heads"][0]["statistics"]
                    maps = {m["stage"]: m for m in d["heatmaps"] if m["head"] == 0 and m.get("in_view", True)}
                    row = 3
                    for stage in ("weights", "dropped_weights"):
                        m = maps[stage]
                        app.move(m["cells"]["x"] + 0.5 * m["cell"], m["cells"]["y"] + (row + 0.5) * m["cell"])
                        d = app.wait_for(f"the tooltip of {stage} ({row}, 0)",
                                         lambda d: d["state"].get("tooltip", {}).get("row") == row
                                         and d["state"]["tooltip"].get("map") == f"b{d['state']['batch']}h0{stage}")
                        text = d["state"]["tooltip"]["text"]
                        want = [f"row '{tokens[row]}': entropy {fixed(s['entropy'][row], 3)} nats",
                                f"largest weight {fixed(s['max_weight'][row], 4)} on '{tokens[s['argmax'][row]]}'"]
                        if stage == "dropped_weights":
                            want.append(f"row sum after dropout {fixed(s['row_sum_after_dropout'][row], 4)}")
                        missing = [w for w in want if w not in text]
                        expect(not missing, f"{stage} tooltip {text!r} lacks {missing}")
                    print(f"  weights tooltip ends: {text.splitlines()[-3:]}")
                    plot = d["state"]["head_statistics"]["heads"][0]["row_sums_chart"]["plot"]
                    T = len(tokens)
                    for i in (4, 0):
                        app.move(plot["x"] + (i + 0.5) * plot["w"] / T, plot["y"] + plot["h"] - 2)
                        app.wait_for(f"the row sums bar {i}'s tooltip",
                                     lambda d: d["state"].get("tooltip", {}).get("chart") == "statistics_row_sums_h1"
                                     and d["state"]["tooltip"]["row"] == i)
                        app.click_at(plot["x"] + (i + 0.5) * plot["w"] / T, plot["y"] + plot["h"] - 2)
                        app.wait_for(f"token {i} selected by its bar", lambda d: d["state"]["token"] == i)
                    app.click("statistics_head_h1")
                    app.wait_for("head 1 shown alone", lambda d: d["state"]["head"] == 0)
                    app.click("statistics_head_h1")
                    app.wait_for("all heads again", lambda d: d["state"]["head"] == -1)
                    print("  bars: tooltips name their rows, clicks select tokens 4 and 0; head 1's name: alone and back")

            def score_factors():
                # A score's tooltip writes its products with one minus sign each and its negative
                # factors in parentheses: "−0.1353 · (−0.5888)", never "−0.1353·−0.5888" or a hyphen.
                path = preset_copy(args.presets, "multihead", work)
                with open(path) as f:
                    ws = json.load(f)
                ws.setdefault("view", {})["columns"] = ["scores"]
                with open(path, "w") as f:
                    json.dump(ws, f)
                with start_ready(args.app, display.name, ["--open", path]) as app:
                    d = app.settled("the maps", lambda d: any(m.get("stage") == "scores" for m in d["heatmaps"]))
                    trace = cli_trace_of(args.cli, d["state"]["workspace"], work, "factors.json")
                    h = trace["batches"][d["state"]["batch"]]["heads"][0]
                    q, k = np.array(h["queries"]), np.array(h["keys"])
                    m = next(m for m in d["heatmaps"] if m.get("stage") == "scores" and m["head"] == 0)
                    row = next(i for i in range(q.shape[0]) if q[i, 0] < 0)
                    col = next(j for j in range(k.shape[0]) if k[j, 0] < 0)
                    app.move(m["cells"]["x"] + (col + 0.5) * m["cell"], m["cells"]["y"] + (row + 0.5) * m["cell"])
                    d = app.wait_for(f"the tooltip of scores ({row}, {col})",
                                     lambda d: d["state"].get("tooltip", {}).get("row") == row
                                     and d["state"]["tooltip"].get("col") == col)
                    text = d["state"]["tooltip"]["text"]
                    want = f"{fixed(q[row, 0], 4)} · ({fixed(k[col, 0], 4)})"
                    expect(want in text and "-" not in text, f"the score's tooltip {text!r} lacks {want!r}")
                    print(f"  score ({row}, {col}): {text.splitlines()[1]}")

            def maps_that_will_not_come():
                # A result in two parts (48 heads of 1000 tokens, two elements): the heads on screen
                # first, the rest after. An edit the engine refuses (a score beyond float32) comes
                # before the rest: the rest is dropped, and the first part stays on screen. Every
                # view of a head without maps says why, none says "computing" for ever.
                words = " ".join(f"w{i}" for i in range(1000))
                setup = [{"do": "sentence", "text": words}, {"do": "d_in", "value": 96},
                         {"do": "set", "field": "d_out", "value": 96}, {"do": "set", "field": "num_heads", "value": 48},
                         {"do": "wait"}]
                for attempt in range(3):  # the rest may come before the refused edit: again, with another seed
                    edits = [{"do": "set", "field": "seed", "value": 7 + attempt},
                             {"do": "set_cell", "row": 0, "col": 0, "value": 3e38}]
                    d = headless(f"not-computed-{attempt}", setup + edits, "--size", "1280x800")
                    heads = d["state"]["head_statistics"]["heads"]
                    if any(e["not_computed"] for e in heads):
                        break
                    print(f"  attempt {attempt + 1}: the rest came before the refused edit")
                error = d["state"]["engine_error"]
                expect("overflow float32" in error, f"the edit was not refused: {error!r}")
                computed = [e["cells"][0] for e in heads if not e["not_computed"]]
                expect(not any(e["computing"] for e in heads), "a head's statistics say 'computing' with nothing computing")
                expect(1 <= len(computed) <= 8 and len(heads) - len(computed) >= 40,
                       f"the first part's heads {computed} (of {len(heads)}) have statistics, the others 'not computed'")
                said = d["state"]["maps_missing"]
                want = {e["cells"][0].split()[-1] for e in heads if e["not_computed"]}
                expect({str(m["head"]) for m in said} == want, f"the grid's cards of heads {sorted(want)} say why")
                for m in said:
                    expect(m["said"] == f"Head {m['head']}'s maps were not computed: {error}", f"a card says {m['said']!r}")
                # The Inspector and the Pipeline of a head without maps (head 3) say so too.
                for attempt in range(3):
                    edits = [{"do": "set", "field": "seed", "value": 17 + attempt},
                             {"do": "set_cell", "row": 0, "col": 0, "value": 3e38}]
                    d = headless(f"not-computed-pipeline-{attempt}", setup + edits + [
                        {"do": "select_head", "index": 2}, {"do": "view", "field": "tab", "value": "pipeline"}],
                                 "--size", "1280x800")
                    if d["state"]["head_statistics"]["heads"][2]["not_computed"]:
                        break
                    print(f"  attempt {attempt + 1}: the rest came before the refused edit")
                said = d["state"]["maps_missing"]
                expect(d["state"]["head_statistics"]["heads"][2]["not_computed"], "head 3's maps came in every attempt")
                expect(len(said) == 2 and all(m["said"] == f"Head 3's maps were not computed: {error}" for m in said),
                       f"the Inspector and the Pipeline of head 3 say {said}")
                print(f"  {len(heads) - len(computed)} heads not computed, said by each view: {error[:40]}…")

            return run_checks([("a score's negative factors in parentheses", score_factors),
                               ("numbers and pixels", numbers_and_pixels), ("no room", no_room),
                               ("one token", one_token), ("hiding", hiding),
                               ("GPT-2 small", gpt2_small), ("tooltips and clicks", tooltips_and_clicks),
                               ("maps that will not come", maps_that_will_not_come)])
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
