# Headless screenshots (--screenshot, --dump-layout) of several presets, dark and light, at two
# window sizes. Checks that the PNG has the requested size, that the heatmap panel and every map
# lie inside the image and beside (not over) the model panel, that one map per head per visible
# stage is listed with T × T cells, that each map's colour range is the one its values imply
# (finite min/max, ±max|v| for the diverging map, [0, 1] for dropout masks), and that the cells'
# pixels are the colormap entries of attnscope-cli's values (−∞ cells in the theme grey).
# Usage: test_screenshot_layout.py APP CLI ASSETS_DIR
import json
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gui_common as g  # noqa: E402

# (preset, theme, --size or None for the default 1600x1000). At the default size every map must be
# in view, unless the grid scrolls to keep the numbers of a small example readable; a smaller window
# may scroll the grid (maps under 150 px would be unreadable), so there a partly hidden map is
# reported and only its visible cells are sampled.
RUNS = [
    ("multihead", "dark", None),
    ("multihead", "light", None),
    ("causal_dropout", "dark", None),
    ("self_attention_v1", "dark", None),
    ("multihead", "dark", "1280x800"),
]
MIN_CELL = 8  # smaller cells may be blended by the texture's minification filter


def inside(r, outer, slack=0.5):
    return (r["x"] >= outer["x"] - slack and r["y"] >= outer["y"] - slack and
            r["x"] + r["w"] <= outer["x"] + outer["w"] + slack and r["y"] + r["h"] <= outer["y"] + outer["h"] + slack)


def overlaps(a, b, slack=0.5):
    return (a["x"] < b["x"] + b["w"] - slack and b["x"] < a["x"] + a["w"] - slack and
            a["y"] < b["y"] + b["h"] - slack and b["y"] < a["y"] + a["h"] - slack)


def cell_rect(entry, i, j):
    c, k = entry["cells"], entry["cell"]
    return {"x": c["x"] + j * k, "y": c["y"] + i * k, "w": k, "h": k}


def expected_heads(model):
    return model.get("num_heads", 1) if model["variant"] in ("multihead", "multihead_wrapper") else 1


def check_run(app, cli, assets, display, tmp, preset, theme, size, totals):
    name = f"{preset}-{theme}-{size or 'default'}"
    png, dump_path = os.path.join(tmp, name + ".png"), os.path.join(tmp, name + ".layout.json")
    ws_path = os.path.join(assets, "presets", preset + ".json")
    with open(ws_path) as f:
        preset_ws = json.load(f)
    dump = g.render(app, ws_path, png, dump_path, display, size=size, theme=theme)
    img = g.load_png(png)
    want_w, want_h = (int(s) for s in (size or "1600x1000").split("x"))
    g.check(img.size == (want_w, want_h), f"{name}: PNG is {img.size}, expected {(want_w, want_h)}")
    image_rect = {"x": 0, "y": 0, "w": want_w, "h": want_h}

    state = dump["state"]
    g.check(state["theme"] == theme, f"{name}: state.theme {state['theme']!r}, expected {theme!r}")
    g.check(not state["computing"] and state["engine_error"] == "",
            f"{name}: screenshot taken while computing={state['computing']} error={state['engine_error']!r}")
    panels = dump["panels"]
    for p in ("model", "heatmaps", "status"):
        g.check(p in panels, f"{name}: panel {p!r} missing from the dump")
        g.check(inside(panels[p], image_rect), f"{name}: panel {p} {panels[p]} lies outside the image")
    g.check(not overlaps(panels["heatmaps"], panels["model"]),
            f"{name}: heatmap panel {panels['heatmaps']} overlaps the model panel {panels['model']}")

    # Which maps: one per head per visible stage, each T × T.
    ws = state["workspace"]
    view = ws.get("view", {})
    T = len(preset_ws["tokens"])
    heads = expected_heads(preset_ws["model"])
    g.check(view.get("columns") == g.DEFAULT_STAGES,
            f"{name}: view.columns {view.get('columns')}, expected the default {g.DEFAULT_STAGES}")
    trace = g.trace_workspace(cli, ws, tmp)
    g.check(len(trace["batches"][0]["heads"]) == heads,
            f"{name}: the CLI traces {len(trace['batches'][0]['heads'])} heads, the preset asks for {heads}")
    stages = g.applicable_stages(g.DEFAULT_STAGES, trace["workspace"]["model"])
    problems = []  # collected, so one run reports every kind of fault it shows
    listed = sorted((m["head"], m["stage"]) for m in dump["heatmaps"])
    want = sorted((h, s) for h in range(heads) for s in stages)
    # Up to 12 tokens every map shows its numbers, so cells are as wide as the labels need and the
    # grid may scroll even at the default size: then the maps in view must show their values.
    labelled = T <= 12
    in_view = [m for m in dump["heatmaps"] if m.get("in_view", True)]
    scrolls = labelled and len(in_view) < len(dump["heatmaps"]) and in_view and in_view[0] == dump["heatmaps"][0]
    if scrolls:
        print(f"{name}: NOTE the grid scrolls to keep every map's numbers: {len(in_view)} of {len(want)} maps in view")
        for m in dump["heatmaps"]:
            if not m.get("values_shown"):
                problems.append(f"{m['id']}: the grid scrolls for the numbers, yet this map shows none")
    if listed != want:
        problems.append(f"maps drawn (head, stage): missing {sorted(set(want) - set(listed))}, "
                        f"unexpected {sorted(set(listed) - set(want))} (a map scrolled out of view is not drawn)")

    checker = g.PixelChecker(assets, theme)
    skipped = 0
    for entry in dump["heatmaps"]:
        mid = f"{name}/{entry['id']}"
        g.check(entry["rows"] == T and entry["cols"] == T, f"{mid}: {entry['rows']}×{entry['cols']}, expected {T}×{T}")
        g.check(not overlaps(entry["cells"], panels["model"]), f"{mid}: cells overlap the model panel")
        visible = None  # all cells
        if not entry.get("in_view", True) and (scrolls or size is not None):
            skipped += 1
            continue
        if not inside(entry["cells"], panels["heatmaps"]) or not inside(entry["cells"], image_rect):
            message = (f"{entry['id']}: cells {entry['cells']} are partly out of view (heatmap panel "
                       f"{panels['heatmaps']}, image {want_w}×{want_h})")
            if size is None and not scrolls:
                problems.append(message)
                continue
            print(f"{name}: NOTE {message}; the grid scrolls")
            visible = [(i, j) for i in range(T) for j in range(T)
                       if inside(cell_rect(entry, i, j), panels["heatmaps"]) and inside(cell_rect(entry, i, j), image_rect)]
        m = g.stage_matrix(trace, entry["batch"], entry["head"], entry["stage"])
        cmap, lo, hi = g.expected_map(m, entry["stage"], view)
        g.check(entry["colormap"] == cmap, f"{mid}: colormap {entry['colormap']}, expected {cmap}")
        g.check(g.close_float(entry["range"][0], lo) and g.close_float(entry["range"][1], hi),
                f"{mid}: range {entry['range']}, the trace's values give [{lo}, {hi}]")
        if entry["cell"] < MIN_CELL:
            skipped += 1
            continue
        cells = None if T <= 8 else [(i, j) for i in range(0, T, max(1, T // 5)) for j in range(0, T, max(1, T // 5))]
        if visible is not None:
            cells = [c for c in (cells or visible) if c in visible]
        before = checker.checked
        checker.check_cells(img, entry, m, cmap, lo, hi, cells)
        totals["masked"] += int(np.isneginf(m).sum()) if checker.checked > before else 0
    if checker.failures:
        problems.append(f"{len(checker.failures)} cells differ:\n    " + "\n    ".join(checker.failures[:12]))
    g.check(checker.checked > 0, f"{name}: no map had cells ≥ {MIN_CELL} px, nothing was sampled")
    print(f"{name}: {len(dump['heatmaps'])} maps, {checker.checked} cells checked, {skipped} maps too small, "
          f"worst channel difference {checker.worst}")
    totals["cells"] += checker.checked
    totals["worst"] = max(totals["worst"], checker.worst)
    g.check(not problems, f"{name}:\n  " + "\n  ".join(problems))



def main():
    if len(sys.argv) != 4:
        print("usage: test_screenshot_layout.py APP CLI ASSETS_DIR", file=sys.stderr)
        return 2
    app, cli, assets = sys.argv[1:4]
    start = time.time()
    totals = {"cells": 0, "worst": 0, "masked": 0}
    failed = []
    with tempfile.TemporaryDirectory(prefix="attnscope-gui-shots-") as tmp, g.Xvfb() as x:
        for preset, theme, size in RUNS:
            try:
                check_run(app, cli, assets, x.display, tmp, preset, theme, size, totals)
            except g.Fail as e:
                failed.append(str(e))
                print("FAIL", e)
    if not failed and totals["masked"] == 0:
        failed.append("no −∞ cell was sampled: the masked grey was never checked")
    print(f"total: {totals['cells']} cells checked ({totals['masked']} masked), worst channel difference "
          f"{totals['worst']}, {time.time() - start:.1f} s")
    if failed:
        print(f"{len(failed)} run(s) failed")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
