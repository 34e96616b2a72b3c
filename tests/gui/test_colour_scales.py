"""Colour scales (docs/DESIGN.md §3.4 "Colour scales"), cell by cell in pixels.

Every expected colour is computed here from `attnscope-cli trace` and assets/colormaps, never from
the app:
- log: a weights map (≥ 0, the causal mask's zeros among them) coloured by
  round((log10 v − log10 p) / (log10 hi − log10 p) · 255) with p its smallest positive value, exact
  zeros grey as masked cells (off the scale, not p's colour);
  its colorbar starts at p and has a tick per power of ten inside; signed maps stay linear.
- per row: every row over its own finite min … max (signed maps: ±max |row|, coolwarm).
- linear ticks: 0.2, 0.4, 0.6, 0.8 on a 0 … 1 weights map; 0 among the ticks of a signed one.
- lock: locked on seed 123, then seed 5: every map keeps seed 123's range, and its cells are coloured
  over it (values outside it at the ends).
- after an edit, exactly the cells whose values changed (against the traces before and after) are
  outlined; a selection outlines nothing.
- GPT-2 small on the log scale: its weights no longer one colour (the reason for log).
- one value, one colour: beside the concat, every head's context cell has the colour of the same
  value in the concat (the wrapper's two heads, whose own ranges differ).

Usage: test_colour_scales.py --app APP --cli CLI --presets PRESETS_DIR
"""
import math
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gui_common as g  # noqa: E402
from test_teaching import Display, arguments, cli_trace_of, run_checks, run_commands  # noqa: E402


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def lround_index(t):
    x = min(255.0, max(0.0, t * 255.0))
    return 0 if x < 0.5 else int(math.floor(x + 0.5))


def log_index(v, p, hi):
    lo = math.log10(float(p))
    x = math.log10(max(float(v), float(p)))
    return lround_index((x - lo) / (math.log10(float(hi)) - lo))


class Cells:
    """Pixel checks of one screenshot against expected table indices."""

    def __init__(self, assets, png, clip=None):
        self.clip = clip  # the heatmaps panel: cells scrolled (partly) out of it are not checked
        self.assets = assets
        self.rgb = g.load_png(png).convert("RGB")
        self.tables = {}
        self.checked = 0
        self.failures = []

    def check(self, entry, values, index_of, cmap):
        table = self.tables.setdefault(cmap, g.load_colormap(self.assets, cmap))
        rows, cols = values.shape
        for i in range(rows):
            for j in range(cols):
                v = values[i, j]
                x, y = g.cell_sample_point(entry["cells"], entry["cell"], i, j)
                c = self.clip
                if c and not (c["x"] <= x < c["x"] + c["w"] and c["y"] <= y < c["y"] + c["h"]):
                    continue
                want = g.MASKED_GREY["dark"] if np.isneginf(v) else index_of(i, j, v)
                want = want if isinstance(want, tuple) else table[want]  # a colour of its own, or a table index
                got = self.rgb.getpixel((x, y))
                self.checked += 1
                if g.channel_diff(got, want) > 2:
                    self.failures.append(f"{entry['id']} ({i},{j}) v={v!r}: got {got[:3]}, want {want}")

    def done(self, what):
        expect(not self.failures, f"{what}: {len(self.failures)} of {self.checked} cells wrong: {self.failures[:4]}")
        return self.checked


def main():
    args = arguments(__doc__.split("\n")[0])
    assets = os.path.dirname(os.path.abspath(args.presets))
    work = tempfile.mkdtemp(prefix="attnscope-scales-")
    multihead = os.path.join(args.presets, "multihead.json")
    gpt2 = os.path.join(args.presets, "gpt2-small.json")

    try:
        with Display() as display:
            def headless(name, commands, *extra):
                return run_commands(args.app, display.name, work, name, commands, *extra)

            def maps(d, stage, in_view=True):
                return [e for e in d["heatmaps"] if e.get("stage") == stage and "compare" not in e
                        and (e.get("in_view") or not in_view)]

            def trace_of(d, name):
                return cli_trace_of(args.cli, d["state"]["workspace"], work, name + ".json")

            def log_scale():
                d = headless("log", [{"do": "view", "field": "colour_scale", "value": "log"}],
                             "--open", multihead, "--size", "1600x1000")
                trace = trace_of(d, "log")
                cells = Cells(assets, d["png"], d["panels"].get("heatmaps"))
                for e in maps(d, "weights"):
                    w = g.stage_matrix(trace, e["batch"], e["head"], "weights")
                    p, hi = w[w > 0].min(), w.max()
                    expect(e["scale"] == "log" and g.close_float(e["positive"], p) and g.close_float(e["range"][1], hi),
                           f"{e['id']}: scale {e['scale']}, positive {e['positive']} (numpy {p}), range {e['range']}")
                    expect(e["colorbar"]["lo"] == "%.3g" % p, f"{e['id']}: colorbar starts at {e['colorbar']['lo']}, not p = {p}")
                    decades = [10.0 ** k for k in range(math.floor(math.log10(p)) + 1, 1) if 10.0 ** k < hi]
                    got = [t["value"] for t in e["colorbar"]["ticks"]]
                    expect(np.allclose(got, decades), f"{e['id']}: log ticks {got}, want {decades}")
                    # exact zeros (the causal mask's) grey as masked, off the scale: its bottom is p's colour
                    cells.check(e, w, lambda i, j, v: g.MASKED_GREY["dark"] if v == 0 else log_index(v, p, hi), "viridis")
                signed = [e for e in maps(d, "scores", in_view=False) if e["range"][0] < 0]
                expect(signed, "no signed scores map to check")
                for e in signed:  # stays linear
                    expect(e["scale"] == "linear", f"{e['id']}: a signed map on scale {e['scale']}")
                print(f"  log: {cells.done('log')} weights cells coloured by log10 over [p, max]")

            def fixed_weights():
                # Weights on the fixed range of a probability (View › Weights on a fixed 0–1 scale,
                # a lesson's default): every cell coloured at round(v · 255) of the table, whatever
                # the map's own spread; after dropout 0 to 1/(1 − p); other maps keep their range.
                v1 = os.path.join(args.presets, "self_attention_v1.json")  # no mask: weights 0.09–0.24
                d = headless("fixed", [{"do": "view", "field": "weights_range", "value": "fixed"}],
                             "--open", v1, "--size", "1600x1000")
                trace = trace_of(d, "fixed")
                cells = Cells(assets, d["png"], d["panels"].get("heatmaps"))
                for e in maps(d, "weights"):
                    w = g.stage_matrix(trace, e["batch"], e["head"], "weights")
                    expect(e["range"] == [0, 1] and w.min() > 0.05 and w.max() < 0.5,
                           f"{e['id']}: range {e['range']} (its weights {w.min():.3f}–{w.max():.3f})")
                    cells.check(e, w, lambda i, j, v: lround_index(v), "viridis")
                scores = maps(d, "scores", in_view=False)
                expect(scores and all(e["range"] != [0, 1] for e in scores), "the scores took the weights' fixed range")
                n = cells.done("fixed weights")
                d = headless("fixed-dropout", [{"do": "view", "field": "weights_range", "value": "fixed"},
                                                {"do": "view", "field": "columns", "value": ["weights", "dropped_weights"]}],
                             "--open", os.path.join(args.presets, "causal_dropout.json"), "--size", "1600x1000")
                dropped = maps(d, "dropped_weights")
                expect(dropped and all(e["range"] == [0, 2] for e in dropped), f"dropped weights: {[e['range'] for e in dropped]}")
                plain = headless("data", [], "--open", v1, "--size", "1600x1000")
                expect(all(e["range"] != [0, 1] for e in maps(plain, "weights")), "the default is not the map's own range")
                print(f"  fixed 0–1: {n} weights cells at v·255; dropped weights 0–2 at p = 0.5; by default the maps' own range")

            def per_row():
                d = headless("row", [{"do": "view", "field": "colour_scale", "value": "row"}],
                             "--open", multihead, "--size", "1600x1000")
                trace = trace_of(d, "row")
                cells = Cells(assets, d["png"], d["panels"].get("heatmaps"))
                for stage in ("weights", "scores", "masked_scores"):
                    for e in maps(d, stage):
                        m = g.stage_matrix(trace, e["batch"], e["head"], stage)
                        signed = e["colormap"] == "coolwarm"  # a signed map: each row centred on 0

                        def index_of(i, j, v, m=m, signed=signed):
                            row = m[i][np.isfinite(m[i])]
                            lo, hi = float(row.min()), float(row.max())
                            if signed:
                                mx = max(abs(lo), abs(hi))
                                lo, hi = -mx, mx
                            return g.colormap_index(v, lo, hi)
                        expect(e["scale"] == "row" and e["colorbar"]["ticks"] == [], f"{e['id']}: {e['scale']}, ticks {e['colorbar']['ticks']}")
                        cells.check(e, m, index_of, e["colormap"])
                print(f"  per row: {cells.done('per row')} cells of weights, scores and masked scores")

            def ticks():
                d = headless("ticks", [], "--open", multihead, "--size", "1600x1000")
                w = maps(d, "weights")[0]
                got = [round(t["value"], 6) for t in w["colorbar"]["ticks"]]
                lo, hi = w["range"]
                want = [round(0.2 * k, 6) for k in range(1, 5) if lo < 0.2 * k < hi]
                expect(got == want, f"weights ticks {got}, want {want} (range {w['range']})")
                s = [e for e in maps(d, "scores", in_view=False) if e["range"][0] < 0][0]
                expect(0.0 in [t["value"] for t in s["colorbar"]["ticks"]], f"signed scores without a 0 tick: {s['colorbar']}")
                print(f"  linear ticks: weights {got}; scores {[t['value'] for t in s['colorbar']['ticks']]}")

            def lock():
                before = headless("unlocked", [], "--open", multihead, "--size", "1600x1000")
                # After the first result is on screen: a lock set before there is one takes the first
                # result's ranges (seed 5's, where a loaded machine's engine was late).
                d = headless("lock", [{"do": "wait"}, {"do": "view", "field": "lock_range", "value": True},
                                      {"do": "set", "field": "seed", "value": 5}],
                             "--open", multihead, "--size", "1600x1000")
                old = {e["id"]: e["range"] for e in before["heatmaps"]}
                trace = trace_of(d, "lock")
                cells = Cells(assets, d["png"], d["panels"].get("heatmaps"))
                for e in maps(d, "weights") + maps(d, "scores"):
                    expect(e["range"] == old[e["id"]], f"{e['id']}: range {e['range']} after the seed, locked at {old[e['id']]}")
                    m = g.stage_matrix(trace, e["batch"], e["head"], e["stage"])
                    lo, hi = e["range"]
                    cells.check(e, m, lambda i, j, v, lo=lo, hi=hi: g.colormap_index(v, lo, hi), e["colormap"])
                unlocked = headless("relock", [{"do": "view", "field": "lock_range", "value": True},
                                               {"do": "set", "field": "seed", "value": 5},
                                               {"do": "view", "field": "lock_range", "value": False}],
                                    "--open", multihead, "--size", "1600x1000")
                changed = [e["id"] for e in maps(unlocked, "scores") if e["range"] != old[e["id"]]]
                expect(changed, "unlocked: the scores still have seed 123's ranges")
                print(f"  lock: {cells.done('lock')} cells of seed 5 coloured over seed 123's ranges; unlock follows the result")

            def gpt2_log():
                # On the linear scale its weights are one flat colour (a row spreads over ~358 keys):
                # the notes say which scale shows them, and say nothing of the kind on the log scale
                # or for the book's six tokens.
                flat = "weights look flat: View › Colour scale › Logarithmic"
                d = headless("gpt2-linear", [], "--open", gpt2, "--size", "1280x800")
                expect(d["state"]["grid_notes"].startswith(flat), f"gpt2 linear: notes {d['state']['grid_notes'][:120]!r}")
                book = headless("book-linear", [], "--open", multihead, "--size", "1280x800")
                expect(flat not in book["state"]["grid_notes"], f"book: notes {book['state']['grid_notes']!r}")
                d = headless("gpt2", [{"do": "view", "field": "colour_scale", "value": "log"}],
                             "--open", gpt2, "--size", "1280x800")
                expect(flat not in d["state"]["grid_notes"], f"gpt2 log: notes {d['state']['grid_notes'][:120]!r}")
                e = maps(d, "weights")[0]
                rgb = g.load_png(d["png"]).convert("RGB")
                c = e["cells"]
                colours = {rgb.getpixel((int(c["x"] + c["w"] * fx), int(c["y"] + c["h"] * fy)))
                           for fx in (0.05, 0.3, 0.6, 0.95) for fy in (0.5, 0.75, 0.95) if fx <= fy}
                expect(e["scale"] == "log" and len(colours) >= 4, f"gpt2 log weights: scale {e['scale']}, colours {colours}")
                # Its decades are named beside the legend of the zeros ("exactly 0: below a log
                # scale"), where their labels clear it: every label was dropped beside any legend.
                named = [t["label"] for t in e["colorbar"]["ticks"] if t["label"]]
                expect(e["legend"] and len(named) >= 1, f"gpt2 log weights: legend {e.get('legend')!r}, decades named "
                                                        f"{named} of {e['colorbar']['ticks']}")
                print(f"  GPT-2 small, log: {len(colours)} distinct colours among 9 samples of head 1's weights; "
                      f"decades named {named} beside the legend; on the linear scale the notes name the log scale")

            def outlines():
                before = headless("before-edit", [], "--open", multihead, "--size", "1600x1000")
                # The screenshot waits for the first result and draws it: the edit then changes what is on screen.
                d = headless("edit", [{"do": "screenshot", "path": os.path.join(work, "first.png")},
                                      {"do": "set_cell", "row": 1, "col": 0, "value": 0.9}],
                             "--open", multihead, "--size", "1600x1000")
                t0, t1 = trace_of(before, "before-edit"), trace_of(d, "edit")
                checked = 0
                for e in d["heatmaps"]:
                    if "compare" in e or e.get("module") or not e["in_view"] or e["head"] < 0:
                        continue
                    a = g.stage_matrix(t0, e["batch"], e["head"], e["stage"])
                    b = g.stage_matrix(t1, e["batch"], e["head"], e["stage"])
                    changed = int(np.sum(~((a == b) | (np.isneginf(a) & np.isneginf(b)))))
                    expect(e["outlined"] == changed, f"{e['id']}: {e['outlined']} cells outlined, {changed} changed")
                    checked += changed
                expect(checked > 0, "x[1][0] changed no cell on screen")
                # The outlines are the window's, for a moment: the screenshot (a figure) has none.
                rgb = g.load_png(d["png"]).convert("RGB")
                in_png = 0
                for e in d["heatmaps"]:
                    if "compare" in e or e.get("module") or not e["wholly_in_view"] or e["head"] < 0 or not e["outlined"]:
                        continue
                    a = g.stage_matrix(t0, e["batch"], e["head"], e["stage"])
                    b = g.stage_matrix(t1, e["batch"], e["head"], e["stage"])
                    for i, j in zip(*np.nonzero(~((a == b) | (np.isneginf(a) & np.isneginf(b))))):
                        x0, y0, cell = e["cells"]["x"] + j * e["cell"], e["cells"]["y"] + i * e["cell"], e["cell"]
                        edge = rgb.getpixel((int(x0 + 2), int(y0 + cell / 2)))
                        inside = rgb.getpixel((int(x0 + cell * 0.12), int(y0 + cell * 0.2)))
                        in_png += g.channel_diff(edge, inside) > 24
                expect(in_png == 0, f"{in_png} changed cells outlined in the screenshot")
                untouched = headless("no-edit", [{"do": "select_token", "index": 3}], "--open", multihead, "--size", "1600x1000")
                expect(all(e.get("outlined", 0) == 0 for e in untouched["heatmaps"]), "cells outlined without an edit")
                print(f"  x[1][0] = 0.9: the {checked} cells it changed are outlined, nothing else; no edit, no outline")

            def context_beside_concat():
                wrapper = os.path.join(args.presets, "multihead_wrapper.json")
                # Head 2's values made larger: its context spans ~3× head 1's.
                larger = [{"do": "set_parameter", "name": "heads.1.W_value.weight", "row": 0, "col": c, "value": 2.0}
                          for c in range(3)]
                d = headless("concat", larger + [{"do": "view", "field": "columns", "value": ["context", "concat"]}],
                             "--open", wrapper, "--size", "1920x1080")
                trace = trace_of(d, "concat")
                concat = [e for e in d["heatmaps"] if e["id"].endswith("concat") and e.get("in_view")]
                heads = maps(d, "context")
                expect(len(concat) == 1 and len(heads) == 2, f"maps: {[e['id'] for e in d['heatmaps']]}")
                lo, hi = concat[0]["range"]
                own = [g.stage_matrix(trace, e["batch"], e["head"], "context") for e in heads]
                expect(float(np.abs(own[1]).max()) > 2 * float(np.abs(own[0]).max()),
                       "the heads' own ranges are alike: nothing to check")
                cells = Cells(assets, d["png"], d["panels"].get("heatmaps"))
                for e, c in zip(heads, own):
                    expect(e["range"] == [lo, hi], f"{e['id']}: range {e['range']}, the concat's {[lo, hi]}")
                    cells.check(e, c, lambda i, j, v: lround_index((v - lo) / (hi - lo)), "coolwarm")
                cells.check(concat[0], np.concatenate(own, axis=1), lambda i, j, v: lround_index((v - lo) / (hi - lo)), "coolwarm")
                print(f"  beside the concat: {cells.done('one value, one colour')} cells of both heads and the concat on ±{hi:.4f}")

            code = run_checks([("one value, one colour: context beside concat", context_beside_concat),("changed cells outlined after an edit", outlines),("log scale", log_scale), ("per-row scale", per_row), ("linear ticks", ticks),
                               ("lock", lock), ("GPT-2 small on a log scale", gpt2_log),
                               ("weights on a fixed 0–1 scale", fixed_weights)])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
