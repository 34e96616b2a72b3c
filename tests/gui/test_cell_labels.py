# Every map of the book's examples shows its numbers at a projector's 1280 × 800: the
# multi-head example with and without dropout, causal attention with dropout and the wrapper. The
# grid scrolls rather than hide numbers; the layout dump lists every map of the grid (`in_view`
# says which are scrolled away) with `values_shown` and the `label_format` chosen. Each example is
# rendered whole and, to see each map in view as well, two columns of one head at a time. At 1280 ×
# 800 maps of 6 tokens have room for at least two decimals: a map that falls back to the compact
# form, or shows nothing, fails. Row-sum normalization's weights are titled as such.
# The book's presets as they open (their default maps, all heads, the module's card) show the
# notebook's four decimals on every map at 1280 × 800 and at 1600 × 1000: each map as wide as its
# columns (a 6 × 2 context narrow, a 6 × 6 map wider), cells as wide as "−0.4519" needs, the grid
# scrolling down rather than dropping decimals.
# Usage: test_cell_labels.py APP CLI ASSETS_DIR
import copy
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gui_common as g  # noqa: E402

EXAMPLES = [  # (preset, model changes)
    ("multihead", {}),
    ("multihead", {"dropout": 0.5, "training": True}),
    ("causal_dropout", {}),
    ("multihead_wrapper", {"dropout": 0.5, "training": True}),
]
READABLE = {"decimals4", "decimals3", "decimals2", "custom"}  # custom: the dropout mask's ×2.0 / 0
# The book's examples (T ≤ 12), as the notebook prints them: four decimals.
BOOK_PRESETS = ["simple", "simple_sum", "self_attention_v1", "self_attention_v2", "causal", "causal_dropout",
                "multihead", "multihead_wrapper"]
NOTEBOOK = {"decimals4", "custom"}


ALL_MAPS = ["w_query", "w_key", "w_value", "queries", "keys", "values", "scores", "masked_scores", "scaled_scores",
            "weights", "dropout_mask", "dropped_weights", "context", "concat", "out_proj", "output"]


def check_plot_names(name, dump, failures):
    """The Inputs panel's plot of the embeddings, where there is room for it: every token of a book
    example named, no name over another, all inside the plot (journey and starts nearly coincide)."""
    plot = dump.get("state", {}).get("inputs_plot")
    if plot is None:
        return
    boxes = {n["token"]: n["rect"] for n in plot["names"]}
    tokens = len(dump["state"].get("tokens", [])) or None
    if tokens is not None and len(boxes) != tokens:
        failures.append(f"{name}: the plot names {sorted(boxes)} of {tokens} tokens")
    p = plot["rect"]
    for i, a in boxes.items():
        if a["x"] < p["x"] or a["y"] < p["y"] or a["x"] + a["w"] > p["x"] + p["w"] or a["y"] + a["h"] > p["y"] + p["h"]:
            failures.append(f"{name}: the plot's name of token {i} is outside it")
        for j, b in boxes.items():
            if i < j and a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and \
                    a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]:
                failures.append(f"{name}: the plot's names of tokens {i} and {j} overlap")


def check_notebook_decimals(app, assets, tmp, size, failures):
    """Every map of each book preset, opened as it is — and the multi-head ones with every map on,
    W_query 3 × 1 to the output 6 × 2 — shows four decimals at `size`."""
    workspaces = [(p, os.path.join(assets, "presets", p + ".json")) for p in BOOK_PRESETS]
    for preset in ("multihead", "multihead_wrapper"):
        with open(os.path.join(assets, "presets", preset + ".json")) as f:
            ws = json.load(f)
        ws.setdefault("view", {})["columns"] = ALL_MAPS
        path = os.path.join(tmp, f"{preset}-all-maps.json")
        with open(path, "w") as f:
            json.dump(ws, f)
        workspaces.append((preset + "-all-maps", path))
    with g.Xvfb(size + "x24") as xvfb:
        for preset, workspace in workspaces:
            name = f"{preset}-{size}"
            dump = g.render(app, workspace, os.path.join(tmp, name + ".png"), os.path.join(tmp, name + ".layout.json"),
                            xvfb.display, size=size)
            if not dump["heatmaps"]:
                failures.append(f"{name}: no maps")
            check_plot_names(name, dump, failures)
            if size == "1600x1000":  # the default window: the book's rows keep their × in view
                x, panel = dump["widgets"].get("remove_token_0"), dump["panels"].get("inputs")
                if x and panel and x["x"] + x["w"] > panel["x"] + panel["w"] - 8:
                    failures.append(f"{name}: the first row's × (remove) ends at x = {x['x'] + x['w']:.0f}, "
                                    f"past the Inputs panel's content ({panel['x'] + panel['w'] - 8:.0f})")
            for m in dump["heatmaps"]:
                if not m.get("values_shown") or m.get("label_format") not in NOTEBOOK:
                    failures.append(f"{name}: {m['id']} ({m['title']}) labelled "
                                    f"{m.get('label_format') if m.get('values_shown') else 'nothing'} "
                                    f"(cell {m['cell']:.1f} px), the notebook prints four decimals")


def main():
    app, cli, assets = sys.argv[1:4]
    failures = []
    runs = 0
    with tempfile.TemporaryDirectory() as tmp, g.Xvfb("1280x800x24") as xvfb:
        display = xvfb.display
        for preset, changes in EXAMPLES:
            with open(os.path.join(assets, "presets", preset + ".json")) as f:
                base = json.load(f)
            base["model"].update(changes)
            heads = base["model"].get("num_heads", 1) if base["model"]["variant"] != "causal" else 1
            stages = g.applicable_stages(g.DEFAULT_STAGES, base["model"])
            views = [(-1, stages)] + [(h, stages[k:k + 2]) for h in range(heads) for k in range(0, len(stages), 2)]
            for h, columns in views:
                ws = copy.deepcopy(base)
                ws.setdefault("view", {}).update({"head": h, "columns": columns})
                name = f"{preset}{'-p' + str(changes['dropout']) if changes else ''}-h{h}-{'+'.join(columns)}"
                path = os.path.join(tmp, name + ".json")
                with open(path, "w") as f:
                    json.dump(ws, f)
                dump = g.render(app, path, os.path.join(tmp, name + ".png"), os.path.join(tmp, name + ".layout.json"),
                                display, size="1280x800")
                runs += 1
                drawn = {(m["head"], m["stage"]): m for m in dump["heatmaps"]}
                for head, stage in [(x, c) for x in (range(heads) if h < 0 else [h]) for c in columns]:
                    m = drawn.get((head, stage))
                    if m is None:
                        failures.append(f"{name}: the map {stage} of head {head} is not in the grid")
                    elif h >= 0 and not m.get("in_view"):
                        failures.append(f"{name}: the map {stage} of head {head} is not in view")
                    elif not m.get("values_shown"):
                        failures.append(f"{name}: {stage} of head {head} shows no values (cell {m['cell']:.1f} px)")
                    elif m.get("label_format") not in READABLE:
                        failures.append(f"{name}: {stage} of head {head} labelled {m.get('label_format')!r}, "
                                        f"expected one of {sorted(READABLE)}")
        # Titles true to the step: row-sum normalization is not called softmax.
        dump = g.render(app, os.path.join(assets, "presets", "simple_sum.json"), os.path.join(tmp, "sum.png"),
                        os.path.join(tmp, "sum.layout.json"), display, size="1280x800")
        runs += 1
        titles = [m.get("title", "") for m in dump["heatmaps"] if m["stage"] == "weights"]
        if not titles or any("row sum" not in t or "softmax" in t for t in titles):
            failures.append(f"simple_sum: weights titled {titles}, expected '÷ row sum' and no 'softmax'")
        for size in ("1280x800", "1600x1000"):
            check_notebook_decimals(app, assets, tmp, size, failures)
            runs += len(BOOK_PRESETS) + 2
    print(f"{runs} renders at 1280x800 and 1600x1000")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except g.Fail as e:
        print("FAIL:", e)
        sys.exit(1)
