"""Compare mode (docs/DESIGN.md §3.4): a pinned result A beside the current B.

- Numbers: the multi-head example pinned, then another seed (and, separately, dropout 0.5 → 0):
  every map of the Compare tab that the layout dump carries with its numbers equals
  `attnscope-cli trace` of A's workspace (the "A" maps) and of B's ("B"), and the "diff" maps equal
  B − A in float32, with the largest |Δ| and its cell as numpy finds them. A and B share a colour
  range and their numbers' format (decimals); the diff is coolwarm, centred on 0.
- The line of differences names exactly what changed ("seed 123 → 5").
- Swap: A's settings become the document's (one undo step), B is pinned; undo goes back.
- Fewer tokens after more: pinned at 6 tokens, a 3-token sentence shows A and B with no cell-by-cell
  difference for the T × T maps, never a crash; unpin returns to the Heatmaps tab.
- The chapter's text with a token inserted ("+ token") or removed: the header says where, and B − A
  compares the tokens both have (against two traces); with a shared token's embedding edited too,
  position by position as before.
- GPT-2 small: pinned, another seed: the maps on screen have a nonzero difference.
- On a projector (1280 × 720, 150 %, beside the panels and presented): A, B and B − A side by side,
  whole in the tab; presented in 1600 × 1000, with their numbers. At 200 % the rows are named once,
  left of A (B and B − A share them), the cells in view; where there is room B − A shows numbers too.

Usage: test_compare.py --app APP --cli CLI --presets PRESETS_DIR
"""
import copy
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_teaching import Display, arguments, cli_trace_of, run_checks, run_commands  # noqa: E402


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def matrix(rows):
    return np.array([[-np.inf if v is None or v == "-inf" else v for v in r] for r in rows], dtype=np.float32)


def trace_map(trace, entry):
    """The map a compare entry shows, from a CLI trace."""
    batch = trace["batches"][entry["batch"]]
    if entry["module"]:
        return matrix(batch[{"concat": "context", "output": "output"}[entry["stage"]]])
    return matrix(batch["heads"][entry["head"]][entry["stage"]])


def compare_maps(d):
    return [h for h in d["heatmaps"] if "compare" in h]


def check_numbers(d, trace_a, trace_b, what):
    """Every compare map with numbers against the two traces; returns how many were checked."""
    checked = 0
    ranges, formats = {}, {}
    for e in compare_maps(d):
        key = (e["head"], e["stage"], e["module"])
        if e["stage"] == "out_proj":
            continue  # a parameter (the traces' "parameters"), not compared here
        a, b = trace_map(trace_a, e), trace_map(trace_b, e)
        if e["compare"] in ("A", "B"):
            ranges.setdefault(key, []).append(tuple(e["range"]))
            formats.setdefault(key, []).append(e.get("label_format"))
        if "values" not in e:
            continue
        got = matrix(e["values"])
        if e["compare"] == "diff":
            np.seterr(invalid="ignore")  # −∞ − −∞ in the masked cells, replaced below
            finite = np.isfinite(a) & np.isfinite(b)
            want = np.where(finite, b - a, -np.inf).astype(np.float32)
            expect(np.array_equal(got, want), f"{what}: {e['id']} is not B − A:\n{got}\nwant\n{want}")
            absd = np.where(finite, np.abs(b - a), -1)
            i, j = np.unravel_index(np.argmax(absd), absd.shape)
            expect(abs(e["max_abs_delta"] - float(absd[i, j])) <= 1e-7 and e["argmax"] == [int(i), int(j)],
                   f"{what}: {e['id']}: largest |Δ| {e['max_abs_delta']} at {e['argmax']}, numpy {absd[i, j]} at {[i, j]}")
            expect(e["colormap"] == "coolwarm" and abs(e["range"][0] + e["range"][1]) < 1e-9,
                   f"{what}: {e['id']}: colormap {e['colormap']}, range {e['range']} (coolwarm centred on 0)")
            expect(e["changed"] == int(np.sum(~((a == b) | (np.isneginf(a) & np.isneginf(b))))),
                   f"{what}: {e['id']}: {e['changed']} cells changed")
        else:
            want = a if e["compare"] == "A" else b
            expect(got.shape == want.shape and np.allclose(got, want, rtol=1e-6, atol=1e-7, equal_nan=False)
                   and np.array_equal(np.isneginf(got), np.isneginf(want)),
                   f"{what}: {e['id']} differs from the trace of {e['compare']}:\n{got}\nwant\n{want}")
        checked += 1
    for key, rs in ranges.items():
        expect(len(rs) == 2 and rs[0] == rs[1], f"{what}: map {key}: A and B coloured over different ranges {rs}")
    for key, fs in formats.items():  # B's minus signs once cost it a decimal that A kept
        expect(len(fs) == 2 and fs[0] == fs[1], f"{what}: map {key}: A's and B's numbers in different formats {fs}")
    return checked


def main():
    args = arguments(__doc__.split("\n")[0])
    work = tempfile.mkdtemp(prefix="attnscope-compare-")
    multihead = os.path.join(args.presets, "multihead.json")
    gpt2 = os.path.join(args.presets, "gpt2-small.json")

    try:
        with Display() as display:
            def headless(name, commands, *extra):
                return run_commands(args.app, display.name, work, name, commands, *extra)

            def traces(d, change_back, name):
                """Traces of B (the workspace on screen) and A (B with `change_back` applied to its model)."""
                ws_b = d["state"]["workspace"]
                ws_a = copy.deepcopy(ws_b)
                ws_a["model"].update(change_back)
                return (cli_trace_of(args.cli, ws_a, work, name + "-a.json"),
                        cli_trace_of(args.cli, ws_b, work, name + "-b.json"))

            def seed():
                d = headless("seed", [{"do": "pin"}, {"do": "set", "field": "seed", "value": 5}],
                             "--open", multihead, "--size", "1600x1000")
                c = d["state"]["compare"]
                expect(c["pinned"] and d["state"]["pinned"], f"not pinned: {c}")
                expect(c["differences"] == ["seed 123 → 5"], f"differences: {c['differences']}")
                expect("compare" in d["panels"], "no compare panel in the dump")
                trace_a, trace_b = traces(d, {"seed": 123}, "seed")
                n = check_numbers(d, trace_a, trace_b, "seed")
                sides = {e["compare"] for e in compare_maps(d) if e["in_view"]}
                expect(n >= 9 and sides == {"A", "B", "diff"}, f"seed: {n} maps checked, sides in view {sides}")
                # The largest change is said by position and token ("at query 3 'starts', key 1
                # 'Your'"): a text with repeated tokens is not told apart by them alone.
                top = max((e for e in compare_maps(d) if e["compare"] == "diff"), key=lambda e: e["max_abs_delta"])
                tokens = d["state"]["workspace"]["tokens"]
                i, j = top["argmax"]
                where = c["largest_where"]
                square = ("scores", "masked_scores", "scaled_scores", "unmasked_weights", "tril_weights", "weights",
                          "dropped_weights")
                expect(top["stage"] in square, f"seed: the largest change is in {top['stage']}, not a query × key map")
                want = f"at query {i + 1} '{tokens[i]}', key {j + 1} '{tokens[j]}'"
                expect(where.endswith(want), f"seed: the largest change said {where!r}, want …{want!r}")
                print(f"  the largest change: {where!r} ({top['stage']}, cell {top['argmax']})")
                print(f"  seed 123 → 5: {n} maps equal the CLI traces of A and B and B − A in float32")

            def dropout_and_swap():
                d = headless("dropout", [{"do": "set", "field": "dropout", "value": 0.5}, {"do": "pin"},
                                         {"do": "set", "field": "dropout", "value": 0.0}],
                             "--open", multihead, "--size", "1280x800")
                c = d["state"]["compare"]
                expect(c["differences"] == ["dropout 0.50 → 0.00"], f"differences: {c['differences']}")
                trace_a, trace_b = traces(d, {"dropout": 0.5}, "dropout")
                n = check_numbers(d, trace_a, trace_b, "dropout")
                expect(set(c["unchanged"]) == {"scores", "masked_scores", "scaled_scores", "weights"},
                       f"dropout: rows listed as unchanged {c['unchanged']}")
                # The rows that changed first, the unchanged ones' lines after them (four of them
                # above the masks had filled the view at 1280 × 720 and 200 %).
                same = [line.endswith("(B = A, bit for bit)") for line in c["lines"]]
                expect(same == sorted(same) and not same[0], f"dropout: lines in the order {c['lines']}")
                dropped = [e for e in compare_maps(d) if e["stage"] == "dropped_weights" and e["compare"] == "diff"]
                expect(dropped and dropped[0]["max_abs_delta"] > 0.1, f"dropout: dropped weights' diff {dropped[:1]}")
                print(f"  dropout 0.5 → 0: {n} maps checked; the weights after dropout differ by up to "
                      f"{dropped[0]['max_abs_delta']:.4f}")
                d = headless("swap", [{"do": "set", "field": "dropout", "value": 0.5}, {"do": "pin"},
                                      {"do": "set", "field": "dropout", "value": 0.0}, {"do": "swap"}],
                             "--open", multihead, "--size", "1280x800")
                c = d["state"]["compare"]
                expect(d["state"]["workspace"]["model"]["dropout"] == 0.5, "swap: the document did not take A's dropout")
                expect(c["differences"] == ["dropout 0.00 → 0.50"], f"swap: differences {c['differences']}")
                trace_a, trace_b = traces(d, {"dropout": 0.0}, "swap")
                check_numbers(d, trace_a, trace_b, "swap")
                d = headless("swap-undo", [{"do": "set", "field": "dropout", "value": 0.5}, {"do": "pin"},
                                           {"do": "set", "field": "dropout", "value": 0.0}, {"do": "swap"}, {"do": "undo"}],
                             "--open", multihead, "--size", "1280x800")
                expect(d["state"]["workspace"]["model"]["dropout"] == 0.0, "undo after swap: dropout not back to 0")
                print("  swap: the document takes A's settings, B is pinned; undo goes back")

            def fewer_tokens():
                d = headless("fewer", [{"do": "pin"}, {"do": "sentence", "text": "the cat sat"}],
                             "--open", multihead, "--size", "1280x800")
                c = d["state"]["compare"]
                expect("tokens 6 → 3" in c["differences"], f"fewer: differences {c['differences']}")
                maps = compare_maps(d)
                square_diffs = [e["id"] for e in maps if e["compare"] == "diff" and not e["module"]
                                and e["stage"] in ("scores", "weights", "masked_scores")]
                expect(not square_diffs, f"fewer: a cell-by-cell difference of 6×6 and 3×3 maps: {square_diffs}")
                a = [e for e in maps if e["compare"] == "A" and e["stage"] == "scores"]
                b = [e for e in maps if e["compare"] == "B" and e["stage"] == "scores"]
                expect(a and b and a[0]["rows"] == 6 and b[0]["rows"] == 3, f"fewer: A {a[:1]}, B {b[:1]}")
                # A long A beside a short B: each as large as its own shape lets it, B not drawn at
                # A's small cells (a 5-token B beside a 94-token A was a thumbnail).
                long_text = " ".join(["the cat sat on the mat and the dog lay by the door"] * 3)
                d = headless("long_short", [{"do": "sentence", "text": long_text}, {"do": "pin"},
                                            {"do": "sentence", "text": "the cat sat"}],
                             "--open", multihead, "--size", "1280x800")
                pairs = [(e, f) for e in compare_maps(d) if e["compare"] == "A" and e["stage"] == "weights"
                         for f in compare_maps(d) if f["compare"] == "B" and f["id"] == e["id"].replace("_A_", "_B_")]
                expect(pairs, f"long_short: no A and B weights maps: {[e['id'] for e in compare_maps(d)]}")
                for a_map, b_map in pairs:
                    expect(a_map["rows"] == 39 and b_map["rows"] == 3, f"long_short: A {a_map['rows']}, B {b_map['rows']}")
                    expect(b_map["cell"] > 4 * a_map["cell"] and b_map["values_shown"],
                           f"long_short: B's cells {b_map['cell']:.1f} px beside A's {a_map['cell']:.1f}, "
                           f"numbers {b_map['values_shown']}")
                    expect(b_map["cells"]["x"] + b_map["cells"]["w"] <= b_map["tile"]["x"] + b_map["tile"]["w"] + 1 and
                           b_map["cells"]["y"] + b_map["cells"]["h"] <= a_map["cells"]["y"] + a_map["cells"]["h"] + 1,
                           f"long_short: B's cells {b_map['cells']} leave its tile {b_map['tile']} or pass A's")
                # On a projector A's 39-token maps have a narrow colorbar: its ends' numbers are said once,
                # as a range, and no two labels run into each other (they had read "0.0140.392").
                d = headless("long_short_720", [{"do": "sentence", "text": long_text}, {"do": "pin"},
                                                {"do": "sentence", "text": "the cat sat"},
                                                {"do": "view", "field": "tab", "value": "compare"}],
                             "--open", multihead, "--size", "1280x720", "--text-size", "200")
                bars = [e["colorbar"] for e in compare_maps(d) if e["colorbar"] and not e["colorbar"]["beside"]]
                expect(bars, "long_short 720: no colorbars below the maps")
                for bar in bars:
                    expect(not bar["lo"] or not bar["hi"] or bar["lo_to"] + 4 <= bar["hi_from"],
                           f"long_short 720: the colorbar's ends run into each other: {bar}")
                a_maps = [e for e in compare_maps(d) if e["compare"] == "A" and e["stage"] == "scores"]
                for e in a_maps:  # said within its tile
                    bar, tile = e["colorbar"], e["tile"]
                    expect(tile["x"] - 0.5 <= bar["once_from"] and bar["once_to"] <= tile["x"] + tile["w"] + 0.5,
                           f"long_short 720: the range said once ({bar}) leaves its tile {tile}")
                a_bars = [e["colorbar"] for e in a_maps]
                expect(a_bars and all(b["once"] and not b["lo"] and not b["hi"] for b in a_bars) and
                       any(" – " in b["once"] for b in a_bars),
                       f"long_short 720: A's narrow colorbar does not say its range once: {a_bars}")
                d = headless("unpin", [{"do": "pin"}, {"do": "sentence", "text": "the cat sat"}, {"do": "unpin"}],
                             "--open", multihead, "--size", "1280x800")
                expect(not d["state"]["pinned"] and not compare_maps(d), "unpin: still pinned or compare maps drawn")
                expect(d["state"]["workspace"]["tokens"] == ["the", "cat", "sat"], "unpin changed the document")
                print("  6 tokens pinned, 3 now: A 6×6 beside B 3×3, no difference map; a 39-token A beside a 3-token B: "
                      f"B's cells {b_map['cell']:.0f} px, A's {a_map['cell']:.1f}; at 200 % A's range said once "
                      f"({a_bars[0]['once']}); unpin → Heatmaps")

            def gpt2_small():
                d = headless("gpt2", [{"do": "pin"}, {"do": "set", "field": "seed", "value": 7}],
                             "--open", gpt2, "--size", "1280x800")
                diffs = [e for e in compare_maps(d) if e["compare"] == "diff" and e["in_view"]]
                expect(diffs and all(e["max_abs_delta"] > 0 for e in diffs),
                       f"gpt2: difference maps on screen {[(e['id'], e.get('max_abs_delta')) for e in diffs]}")
                print(f"  GPT-2 small, seed 7: {len(diffs)} difference maps on screen, largest |Δ| "
                      f"{max(e['max_abs_delta'] for e in diffs):.4f}")

            def on_a_projector():
                # 1280 × 720 at 150 %, beside the side panels and presented: A, B and B − A side by side
                # and whole in the tab (A had stood alone, B and B − A below the fold; then A and B with
                # B − A below it). Presented in a 1600 × 1000 window, they show their numbers, A's and
                # B's too (a value too small for two decimals, "−7e−4", had left them bare).
                presented = [{"do": "view", "field": "presentation", "value": True}]
                for name, size, extra, numbers in (("panels", "1280x720", [], False),
                                                   ("presented", "1280x720", presented, False),
                                                   ("presented-1600", "1600x1000", presented, True)):
                    d = headless("projector-" + name, [{"do": "pin"}, {"do": "set", "field": "seed", "value": 7},
                                                       {"do": "view", "field": "tab", "value": "compare"}, *extra],
                                 "--open", multihead, "--size", size, "--text-size", "150")
                    first = [e for e in compare_maps(d) if e["stage"] == "scores" and e["head"] == 0]
                    side = {e["compare"]: e for e in first}
                    expect(sorted(side) == ["A", "B", "diff"], f"{name}: the first row's maps {sorted(side)}")
                    expect(len({round(e["tile"]["y"]) for e in first}) == 1 and all(e["wholly_in_view"] for e in first),
                           f"{name}: A, B and B − A at {[(k, e['tile']) for k, e in side.items()]}: not side by side "
                           f"whole in the tab")
                    if numbers:
                        expect(all(e.get("values_shown") for e in first),
                               f"{name}: numbers shown {[(k, e.get('values_shown')) for k, e in side.items()]}")
                    print(f"  {size} 150 %, {name}: A, B and B − A side by side, cells {side['A']['cell']:.0f} px, "
                          f"numbers {bool(side['A'].get('values_shown'))}")

            def names_once_numbers_on_all():
                # A and B of the same tokens name their rows once, left of the line's first map, as
                # plots sharing an axis: at 1280 × 720 and 200 % three bands of "starts" had taken
                # 255 of the tab's 585 px, the book's 6 × 6 maps drawn at 14-px cells (84 px).
                d = headless("names-once", [{"do": "pin"}, {"do": "set", "field": "seed", "value": 7},
                                            {"do": "view", "field": "tab", "value": "compare"}],
                             "--open", multihead, "--size", "1280x720", "--text-size", "200")
                first = {e["compare"]: e for e in compare_maps(d) if e["stage"] == "scores" and e["head"] == 0}
                expect(sorted(first) == ["A", "B", "diff"] and len({round(e["tile"]["y"]) for e in first.values()}) == 1,
                       f"names once: the first row {[(k, e['tile']) for k, e in first.items()]}")
                named = {k: [n["index"] for n in e["axis_names"]["rows"]] for k, e in first.items()}
                expect(named["A"] and not named["B"] and not named["diff"], f"names once: rows named {named}")
                bottom = d["panels"]["compare"]["y"] + d["panels"]["compare"]["h"]
                for k, e in first.items():
                    cells = e["cells"]
                    expect(cells["w"] >= 96 - 0.5 and cells["y"] + cells["h"] <= bottom,
                           f"names once: {k}'s cells {cells}, the tab's bottom {bottom}")
                once = first["A"]["cell"]
                # Where A's and B's weights show their numbers and there is room, B − A shows its own:
                # signed, and a seed's has values too small for two decimals ("−4e−4"). It had been
                # laid out for A's and B's ".00" only, and drew none.
                d = headless("numbers-on-all", [{"do": "view", "field": "columns", "value": ["weights"]},
                                                {"do": "pin"}, {"do": "set", "field": "seed", "value": 7},
                                                {"do": "view", "field": "tab", "value": "compare"}],
                             "--open", multihead, "--size", "1600x1000")
                first = {e["compare"]: e for e in compare_maps(d) if e["stage"] == "weights" and e["head"] == 0}
                expect(sorted(first) == ["A", "B", "diff"] and all(e["values_shown"] for e in first.values()),
                       f"numbers on all: {[(k, e['values_shown'], round(e['cell'], 1)) for k, e in first.items()]}")
                # A's 39 tokens thinned: each row's name starts with its position, as the Heatmaps tab's
                # ("cat", "and", "lay" had named rows 2, 7, 10 without saying which they were).
                long_text = " ".join(["the cat sat on the mat and the dog lay by the door"] * 3)
                d = headless("numbered-rows", [{"do": "sentence", "text": long_text}, {"do": "pin"},
                                               {"do": "set", "field": "seed", "value": 7},
                                               {"do": "view", "field": "tab", "value": "compare"}],
                             "--open", multihead, "--size", "1920x1080", "--text-size", "150")
                named = [e["axis_names"] for e in compare_maps(d) if e["compare"] == "A" and e["rows"] == 39]
                expect(named and all(n["row_step"] > 1 and n["rows"] and
                                     all(r["text"].startswith(f"{r['index'] + 1} ") for r in n["rows"]) for n in named),
                       f"numbered rows: {named[:1]}")
                print(f"  1280 × 720, 200 %: rows named once, cells {once:.0f} px; 1600 × 1000: numbers "
                      f"on A, B and B − A at {first['diff']['cell']:.0f}-px cells")

            def chapter_text():
                # The chapter's texts differing in their text alone (a token inserted with "+ token",
                # one removed) compare by the tokens both have, as a model's texts do: the header says
                # the place, and B − A is drawn, each cell against A's of the same tokens (it had read
                # "tokens 6 → 7 · token 6 'step' → 'small' · …", and no B − A was drawn).
                for name, command, a_of_b, said in (
                        ("inserted", {"do": "add_token", "name": "small", "at": 5, "seed": 3},
                         [0, 1, 2, 3, 4, -1, 5], "token 6 (small) inserted"),
                        ("removed", {"do": "remove_token", "index": 0}, [1, 2, 3, 4, 5], "token 1 (Your) removed")):
                    d = headless("chapter-" + name, [{"do": "pin"}, command,
                                                     {"do": "view", "field": "tab", "value": "compare"}],
                                 "--open", multihead, "--size", "1920x1080")
                    c = d["state"]["compare"]
                    expect(c["differences"] == [f"its text: {said} (B − A has B's tokens)"],
                           f"chapter {name}: differences {c['differences']}")
                    ws_b = d["state"]["workspace"]
                    ws_a = json.load(open(multihead))
                    trace_a = cli_trace_of(args.cli, ws_a, work, f"chapter-{name}-a.json")
                    trace_b = cli_trace_of(args.cli, ws_b, work, f"chapter-{name}-b.json")
                    diffs = [e for e in compare_maps(d) if e["compare"] == "diff" and e["stage"] == "weights"]
                    expect(diffs and all(e["aligned"] for e in diffs), f"chapter {name}: no aligned B − A of the weights")
                    for e in diffs:
                        a, b = trace_map(trace_a, e), trace_map(trace_b, e)
                        want = np.full(b.shape, -np.inf, dtype=np.float32)
                        for i, ai in enumerate(a_of_b):
                            for j, aj in enumerate(a_of_b):
                                if ai >= 0 and aj >= 0:
                                    want[i, j] = b[i, j] - a[ai, aj]
                        got = matrix(e["values"])
                        expect(np.array_equal(got, want), f"chapter {name}: head {e['head']}'s B − A\n{got}\nwant\n{want}")
                # Its legend whole where a part alone is wider than the tile: "dark grey: B's own
                # tokens" breaks at a space (it was cut to "dark grey: B's own to…" at 1280 × 800, 150 %).
                d = headless("chapter-legend", [{"do": "view", "field": "columns", "value": ["weights"]}, {"do": "pin"},
                                                {"do": "add_token", "name": "small", "at": 5, "seed": 3},
                                                {"do": "view", "field": "tab", "value": "compare"}],
                             "--open", multihead, "--size", "1280x800", "--text-size", "150")
                legends = [e["legend"] for e in compare_maps(d) if e["compare"] == "diff" and e["head"] == 0]
                expect(legends and legends[0] and not legends[0]["cut"] and "B's own tokens" in legends[0]["text"],
                       f"chapter legend: {legends}")
                # … and within its tile, on the lines the row left room for: broken from the cells' edge it
                # had taken one line more, "tokens" hanging below the tile into the next row's line.
                d2 = headless("chapter-legend-room", [{"do": "view", "field": "columns", "value": ["masked_scores"]},
                                                      {"do": "pin"}, {"do": "add_token", "name": "small", "at": 5,
                                                                      "seed": 3},
                                                      {"do": "view", "field": "tab", "value": "compare"}],
                              "--open", multihead, "--size", "1280x800")
                for e in compare_maps(d) + compare_maps(d2):
                    if e["compare"] == "diff" and e["legend"]:
                        legend, tile = e["legend"], e["tile"]
                        expect(legend["y"] + legend["h"] <= tile["y"] + tile["h"] + 0.5,
                               f"chapter legend: {e['id']}'s legend {legend} below its tile {tile}")
                # With dropout: the masks of a text of another length are drawn anew, and said so.
                d = headless("chapter-dropout", [{"do": "set", "field": "dropout", "value": 0.5}, {"do": "pin"},
                                                 {"do": "add_token", "name": "small", "at": 5, "seed": 3}],
                             "--open", multihead, "--size", "1600x1000")
                expect(d["state"]["compare"]["differences"] ==
                       ["its text: token 6 (small) inserted (B − A has B's tokens; dropout's masks drawn anew for 7 "
                        "tokens)"], f"chapter dropout: {d['state']['compare']['differences']}")
                # An embedding of a token both have edited too: position by position, as before.
                d = headless("chapter-edited", [{"do": "pin"}, {"do": "add_token", "name": "small", "at": 5, "seed": 3},
                                                {"do": "set_cell", "row": 0, "col": 0, "value": 0.5}],
                             "--open", multihead, "--size", "1920x1080")
                c = d["state"]["compare"]
                expect("tokens 6 → 7" in c["differences"] and not any(
                    e["compare"] == "diff" and e["stage"] == "weights" for e in compare_maps(d)),
                       f"chapter edited: {c['differences']}")
                print("  the chapter's token inserted / removed: B − A by the tokens both have, against two traces")

            def causal_switched_on():
                # Cells the mask switched on are counted in words: their B − A has no |Δ| to show
                # (the line read "largest |B − A| = 0.0000 …, 15 of 36 cells changed", as if nothing had).
                d = headless("causal", [{"do": "set", "field": "causal", "value": False}, {"do": "pin"},
                                        {"do": "set", "field": "causal", "value": True}],
                             "--size", "1920x1080")
                tokens = len(d["state"]["workspace"]["tokens"])
                above = tokens * (tokens - 1) // 2
                masked = [line.replace("\n", " ") for line in d["state"]["compare"]["lines"] if "in B only" in line]
                expect(masked, f"causal: no line says cells were masked: {d['state']['compare']['lines']}")
                for line in masked:
                    expect(line.endswith(f"{above} of {tokens * tokens} cells changed: {above} masked (−∞) in B only")
                           and "largest" not in line, f"causal: {line!r}")
                print(f"  causal switched on: {masked[0]!r}")

            code = run_checks([("seed: A, B and B − A against two traces", seed),
                               ("the causal mask switched on, in words", causal_switched_on),
                               ("A, B and B − A side by side on a projector", on_a_projector),
                               ("rows named once, numbers on all three", names_once_numbers_on_all),
                               ("the chapter's texts compared by their tokens", chapter_text),
                               ("dropout, swap and undo", dropout_and_swap),
                               ("fewer tokens after pinning, unpin", fewer_tokens),
                               ("GPT-2 small", gpt2_small)])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
