# The Heatmaps tab shows the whole story: each head's columns of W_query, W_key
# and W_value, its Q, K and V, and the module's maps — the heads' contexts concatenated, out_proj's
# weight and the output — each one click away (a toggle in the grid's header).
#
# Checked against the CLI's trace (whose parameters the oracle tests hold to torch bit for bit),
# never against the app itself: every drawn cell's colour is the colour of the value the trace
# gives, for W as x @ W uses it (torch's Linear weight transposed, the head's rows of multihead's
# one projection), and the output map's values are the notebook's printed [[0.3190, 0.4858], …].
# A click on the "output" toggle shows the output map; another click hides it again.
# Usage: test_model_maps.py APP CLI ASSETS_DIR
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gui_common as g  # noqa: E402
from test_teaching import start_ready  # noqa: E402

COLUMNS = ["w_query", "w_key", "w_value", "queries", "keys", "values", "weights", "concat", "out_proj", "output"]
PRINTED_OUTPUT = [[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593],  # 004 In[43], seed 123
                  [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]]


def expected_matrix(trace, entry, hw):
    """The values a dumped map must show, from the CLI's trace."""
    b, stage = entry["batch"], entry["stage"]
    params = trace["parameters"]
    if entry.get("module"):
        if stage == "concat":
            return np.array(trace["batches"][b]["context"], dtype=np.float32)
        if stage == "output":
            return np.array(trace["batches"][b]["output"], dtype=np.float32)
        return np.array(params["out_proj.weight"], dtype=np.float32).T  # x @ W form
    h = entry["head"]
    name = {"w_query": "W_query.weight", "w_key": "W_key.weight", "w_value": "W_value.weight"}.get(stage)
    if name:  # multihead: head h uses rows h·hw … of the one projection's weight (out × in)
        return np.array(params[name], dtype=np.float32)[h * hw:(h + 1) * hw, :].T
    return g.stage_matrix(trace, b, h, stage)


def inside(point, rect):
    x, y = point
    return rect["x"] <= x < rect["x"] + rect["w"] and rect["y"] <= y < rect["y"] + rect["h"]


def check_render(app, cli, assets, display, tmp, problems):
    with open(os.path.join(assets, "presets", "multihead.json")) as f:
        ws = json.load(f)
    ws.setdefault("view", {})["columns"] = COLUMNS
    path = os.path.join(tmp, "all.json")
    with open(path, "w") as f:
        json.dump(ws, f)
    png, layout = os.path.join(tmp, "all.png"), os.path.join(tmp, "all.layout.json")
    dump = g.render(app, path, png, layout, display, size="1600x1000")
    trace = g.trace_workspace(cli, ws, tmp)
    m = ws["model"]
    heads, T, d_in = m["num_heads"], len(ws["tokens"]), len(ws["embeddings"][0])
    hw = m["d_out"] // heads
    shapes = {"w_query": (d_in, hw), "w_key": (d_in, hw), "w_value": (d_in, hw), "queries": (T, hw),
              "keys": (T, hw), "values": (T, hw), "weights": (T, T), "concat": (T, m["d_out"]),
              "out_proj": (m["d_out"], m["d_out"]), "output": (T, m["d_out"])}
    drawn = {(e["head"], e["stage"]): e for e in dump["heatmaps"]}
    want = [(h, s) for h in range(heads) for s in COLUMNS[:7]] + [(-1, s) for s in COLUMNS[7:]]
    missing = [w for w in want if w not in drawn]
    if missing:
        problems.append(f"maps not drawn (head, stage): {missing}")
    img = g.load_png(png)
    panel = dump["panels"]["heatmaps"]
    checker = g.PixelChecker(assets, "dark")
    for key in want:
        e = drawn.get(key)
        if e is None:
            continue
        if (e["rows"], e["cols"]) != shapes[key[1]]:
            problems.append(f"{e['id']}: {e['rows']}×{e['cols']}, expected {shapes[key[1]]}")
            continue
        if not e.get("values_shown"):
            problems.append(f"{e['id']}: no values shown at T = {T}")
        if not e.get("in_view", True):
            continue
        values = expected_matrix(trace, e, hw)
        cmap, lo, hi = g.expected_map(values, e["stage"], ws["view"])
        if e["colormap"] != cmap:
            problems.append(f"{e['id']}: colormap {e['colormap']}, expected {cmap}")
        # The cells on screen (the grid scrolls: the lower ones are drawn outside the panel).
        cells = [(i, j) for i in range(values.shape[0]) for j in range(values.shape[1])
                 if inside(g.cell_sample_point(e["cells"], e["cell"], i, j), panel)]
        checker.check_cells(img, e, values, cmap, lo, hi, cells)
    if checker.failures:
        problems.append(f"{len(checker.failures)} cells differ:\n    " + "\n    ".join(checker.failures[:12]))
    if checker.checked == 0:
        problems.append("no cell was checked")
    out = np.array(trace["batches"][0]["output"], dtype=np.float32)
    if not np.allclose(out, np.array(PRINTED_OUTPUT, dtype=np.float32), atol=5e-5):
        problems.append(f"the output map's values {out.tolist()} are not the notebook's {PRINTED_OUTPUT}")
    print(f"all maps: {len(dump['heatmaps'])} drawn, {checker.checked} cells checked, worst channel "
          f"difference {checker.worst}")


def check_toggle(app, assets, display, problems):
    """One click on the "output" toggle shows the output map; a second hides it."""
    with start_ready(app, display, ["--open", os.path.join(assets, "presets", "multihead.json"),
                                    "--size", "1600x1000"]) as proc:
        d = proc.layout()
        if any(e["stage"] == "output" for e in d["heatmaps"]):
            problems.append("the output map is shown before the toggle was clicked")
        proc.click("column_output")
        d = proc.settled("the output map after one click",
                         lambda d: any(e["stage"] == "output" for e in d["heatmaps"]))
        e = next(e for e in d["heatmaps"] if e["stage"] == "output")
        if not e.get("values_shown"):
            problems.append("the output map shows no values")
        proc.click("column_output")
        proc.settled("the output map hidden after a second click",
                     lambda d: not any(e["stage"] == "output" for e in d["heatmaps"]))
    print("output toggle: shown after one click, hidden after another")


def main():
    app, cli, assets = sys.argv[1:4]
    problems = []
    with tempfile.TemporaryDirectory() as tmp, g.Xvfb("1920x1080x24") as xvfb:
        check_render(app, cli, assets, xvfb.display, tmp, problems)
        check_toggle(app, assets, xvfb.display, problems)
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (g.Fail, AssertionError) as e:
        print("FAIL:", e)
        sys.exit(1)
