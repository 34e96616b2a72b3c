"""A trained model's maps on a projector, as large as the tab allows (docs/DESIGN.md §3.4).

The model is a random GPTModel in Hugging Face's GPT-2 layout (tests/oracle/gpt_models.py, made
with Debian's torch) of 2 layers and 4 heads 64 wide, as GPT-2's are, so that a head's context and
Q of a short text are wider than the text is long; test_model_view's small byte-level vocabulary.

Checked, headless (--commands, read back through --dump-layout):
  - Heatmaps, six tokens, scores, weights and context, at 1280 × 720 / 200 %, 1280 × 800 / 175 % and
    1920 × 1080 / 100 %: every map whole in the tab, none longer than the 6 × 6 maps (the context's
    64 columns had set one cell for all: at 1280 × 720 and 200 % the weights 15 px beside a 164-px
    context), the weights at least 96 px; the same at 1280 × 720 / 200 % after the chapter's maps,
    rounded to fit, were drawn and the tab left (their note kept a line above the model's maps);
  - Compare, layer 1's head 3 pinned against layer 2's head 1, 45 tokens, at 1280 × 720 and 1280 ×
    800, 175 and 200 %: A, B and B − A on one line, their cells in the tab's view (B − A had stood
    under A, below the fold, and at 200 % A and B were cut too), whole with their colorbars at
    1280 × 800 and 175 %; the row's line as drawn wraps at spaces, its largest |B − A| whole;
  - a query selected out of sight (select_token, as ↑/↓) scrolled to, at 1280 × 720 / 200 %; zoomed
    elsewhere ("go to" 5–12), the zoom moves to query 31; a text shorter than the zoom's window then
    shows every token and dimension, unzoomed; a model opened over the scrolled chapter's grid shows
    its grid from the top.
Interactive (xdotool): Q's tooltip at a column past the six tokens (reading a token there crashed).
Usage: test_model_fit.py APP CLI ASSETS_DIR
"""
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
import gpt_models as gm  # noqa: E402
from test_model_view import write_tokenizer  # noqa: E402
from test_teaching import App, Display, run_checks, run_commands, write_commands  # noqa: E402

LAYERS, HEADS, WIDTH = 2, 4, 256  # heads 64 wide


def make_model(folder):
    os.makedirs(folder, exist_ok=True)
    vocab = write_tokenizer(folder)
    model, cfg = gm.tiny_model(7, vocab_size=vocab, context_length=64, emb_dim=WIDTH, n_heads=HEADS,
                               n_layers=LAYERS, tied=True)
    gm.write_hf_folder(folder, model, cfg, gm.save_safetensors)


def within(r, box, slack=0.5):
    return (r["x"] >= box["x"] - slack and r["y"] >= box["y"] - slack and r["x"] + r["w"] <= box["x"] + box["w"] + slack
            and r["y"] + r["h"] <= box["y"] + box["h"] + slack)


def checks(app, tmp):
    folder = os.path.join(tmp, "gpt")
    make_model(folder)
    with Display() as display:
        def heatmaps_fill_the_tab():
            commands = [{"do": "text", "ids": list(range(40, 46))}, {"do": "select_layer", "layer": 1, "head": 0},
                        {"do": "view", "field": "columns", "value": ["scores", "weights", "context"]},
                        {"do": "view", "field": "tab", "value": "heatmaps"}]
            # The last run comes to the same maps after the chapter's, rounded to fit, were drawn and
            # the tab left: as a loaded machine's first frames drew them before --model had opened.
            # Their rounding note had kept a line above the model's maps, which then fell off the tab.
            chapter_first = [{"do": "view", "field": "tab", "value": "heatmaps"},
                             {"do": "view", "field": "tab", "value": "pipeline"},
                             {"do": "model_open", "path": folder}] + commands
            for size, pct, first in (("1280x720", "200", False), ("1280x800", "175", False),
                                     ("1920x1080", "100", False), ("1280x720", "200", True)):
                d = run_commands(app, display.name, tmp, f"maps-{size}-{pct}-{first}",
                                 chapter_first if first else commands, *([] if first else ["--model", folder]),
                                 "--size", size, "--text-size", pct)
                maps = {e["stage"]: e for e in d["heatmaps"]}
                assert sorted(maps) == ["context", "scores", "weights"], sorted(maps)
                side = {k: max(e["cells"]["w"], e["cells"]["h"]) for k, e in maps.items()}
                for k, e in maps.items():
                    assert e["wholly_in_view"], f"{size} {pct} %: {k} not whole in the tab: {e['tile']}"
                    assert side[k] <= side["weights"] + 0.5, \
                        f"{size} {pct} %: the {k} map ({side[k]:.0f} px) is longer than the 6 × 6 weights " \
                        f"({side['weights']:.0f} px)"
                assert side["weights"] >= 96, f"{size} {pct} %: the weights are {side['weights']:.0f} px"
                panel = d["panels"]["heatmaps"]
                print(f"  {size} {pct} %{', after the chapter' if first else ''} "
                      f"({panel['w']:.0f} × {panel['h']:.0f} tab): scores and weights "
                      f"{side['weights']:.0f} px, the context {maps['context']['cells']['w']:.0f} × "
                      f"{maps['context']['cells']['h']:.0f}")

        def compare_in_view():
            commands = [{"do": "text", "ids": list(range(40, 85))}, {"do": "select_layer", "layer": 0, "head": 2},
                        {"do": "pin"}, {"do": "select_layer", "layer": 1, "head": 0},
                        {"do": "view", "field": "tab", "value": "compare"}]
            for size, pct in (("1280x800", "175"), ("1280x720", "175"), ("1280x800", "200"), ("1280x720", "200")):
                d = run_commands(app, display.name, tmp, f"compare-{size}-{pct}", commands, "--model", folder,
                                 "--size", size, "--text-size", pct)
                tab = d["panels"]["compare"]
                sides = {e["compare"]: e for e in d["heatmaps"] if e.get("compare")}
                assert sorted(sides) == ["A", "B", "diff"], sorted(sides)
                tops = {k: round(e["tile"]["y"]) for k, e in sides.items()}
                assert len(set(tops.values())) == 1, f"{size} {pct} %: A, B and B − A not on one line: {tops}"
                for k, e in sides.items():
                    assert within(e["cells"], tab), f"{size} {pct} %: {k}'s cells {e['cells']} out of the tab {tab}"
                    if (size, pct) == ("1280x800", "175"):
                        assert e["wholly_in_view"], f"{size} {pct} %: {k} is not whole: {e['tile']}, the tab {tab}"
                # The row's line wraps at spaces only: its number whole ("= 0." then "2620 at …" had
                # split it), and each break where the line had a space.
                lines = d["state"]["compare"]["lines"]
                assert len(lines) == 1, lines
                flat = lines[0].replace("\n", " ")
                number = re.search(r"largest \|B − A\| = (\S+) at ", flat)
                assert number and re.fullmatch(r"\d+\.\d{4}", number.group(1)), flat
                assert any(number.group(1) in line for line in lines[0].split("\n")), \
                    f"{size} {pct} %: {number.group(1)} split: {lines[0]!r}"
                print(f"  {size} {pct} %: A, B and B − A on one line, cells {sides['A']['cells']['w']:.0f} px, "
                      f"whole {all(e['wholly_in_view'] for e in sides.values())}; "
                      f"the line in {lines[0].count(chr(10)) + 1} lines")

        def a_dimension_past_the_tokens():
            path = write_commands(tmp, "hover", [
                {"do": "text", "ids": list(range(40, 46))}, {"do": "select_layer", "layer": 1, "head": 0},
                {"do": "view", "field": "columns", "value": ["queries", "weights"]},
                {"do": "view", "field": "tab", "value": "heatmaps"}])
            with App(app, display.name, ["--model", folder, "--commands", path, "--size", "1280x800"]) as gui:
                d = gui.settled("the queries map", lambda d: any(e["stage"] == "queries" for e in d["heatmaps"]))
                q = next(e for e in d["heatmaps"] if e["stage"] == "queries")
                col = 20  # a dimension, past the six tokens
                assert q["cols"] > col and q["rows"] == 6, (q["rows"], q["cols"])
                gui.find_window()

                def hover(attempt):  # where the map is now (a frame may have laid it out again)
                    m = next(e for e in gui.layout()["heatmaps"] if e["stage"] == "queries")
                    gui.move(m["cells"]["x"] + (col + 0.5) * m["cell"], m["cells"]["y"] + 0.5 * m["cell"])
                d = gui.until(hover, "Q's tooltip at column 20",
                              lambda d: d["state"].get("tooltip", {}).get("map") == q["id"]
                              and d["state"]["tooltip"]["col"] == col)
                text = d["state"]["tooltip"]["text"]
                assert text.startswith(f"q1[{col}] = "), text
                print(f"  Q's column {col} of 6 tokens: {text.splitlines()[0]!r}")

        def the_selected_query_in_view():
            # ↑/↓ (select_token) to a query whose row is out of sight: the grid scrolls to it (the
            # chapter's scores map at 1280 × 720 / 200 % showed only "Your"); zoomed elsewhere, the
            # zoom moves to it. A frame first, and the new text's result (wait), so that the selection
            # moves from a grid on screen: one first seen with the selection made is laid out from
            # its top, as a new text is (under load the text's result came after select_token).
            d = run_commands(app, display.name, tmp, "select-chapter",
                             [{"do": "view", "field": "tab", "value": "heatmaps"}, {"do": "select_token", "index": 3},
                              {"do": "select_token", "index": 5}], "--size", "1280x720", "--text-size", "200")
            tab = d["panels"]["heatmaps"]
            scores = next(e for e in d["heatmaps"] if e["stage"] == "scores")
            row = scores["cells"]["y"] + 5 * scores["cell"]
            assert tab["y"] <= row and row + scores["cell"] <= tab["y"] + tab["h"], \
                f"row 6 at y {row:.0f}–{row + scores['cell']:.0f}, the tab {tab['y']:.0f}–{tab['y'] + tab['h']:.0f}"
            d = run_commands(app, display.name, tmp, "select-zoomed",
                             [{"do": "text", "ids": list(range(40, 80))}, {"do": "view", "field": "tab", "value": "heatmaps"},
                              {"do": "view", "field": "columns", "value": ["w_query", "queries", "weights"]},
                              {"do": "go_to", "text": "5-12"}, {"do": "wait"}, {"do": "select_token", "index": 30}],
                             "--model", folder, "--size", "1280x720", "--text-size", "200")
            w = next(e for e in d["heatmaps"] if e["stage"] == "weights")["window"]
            assert w["row0"] <= 30 < w["row0"] + w["rows"], w
            # Its note says of which maps it shows the first dimensions only: here each map's (heads
            # of 64, inputs of 256, a window of 8; W_q and Q shown beside the weights, which alone
            # have no dimensions to say). A window wider than the heads says "of the maps wider than
            # N" (this model's context, 64, allows none).
            zoom = d["state"]["grid_zoom"]
            assert f"dimensions d0–d{w['rows'] - 1} of each map" in zoom, zoom
            print(f"  the chapter's row 6 scrolled into the tab (y {row:.0f}); zoomed to 5–12, query 31 moves the "
                  f"zoom to rows {w['row0'] + 1}–{w['row0'] + w['rows']}")
            # The chapter's grid scrolled (to row 6, above), then a model opened: its grid from its top,
            # the first heading in view (it kept the chapter's scroll, the heading out of sight).
            d = run_commands(app, display.name, tmp, "scrolled-then-model",
                             [{"do": "view", "field": "tab", "value": "heatmaps"}, {"do": "select_token", "index": 3},
                              {"do": "select_token", "index": 5}, {"do": "model_open", "path": folder},
                              {"do": "text", "ids": list(range(40, 48))}, {"do": "view", "field": "tab", "value": "heatmaps"},
                              {"do": "wait"}], "--size", "1280x720", "--text-size", "200")
            tab, first = d["panels"]["heatmaps"], min(e["tile"]["y"] for e in d["heatmaps"])
            assert tab["y"] <= first <= tab["y"] + 120, f"the model's first map at y {first:.0f}, the tab from {tab['y']:.0f}"
            print(f"  the chapter's grid scrolled, then a model: its first map at y {first:.0f}, the tab from {tab['y']:.0f}")
            # A shorter text than the zoom's window: no zoom (a 5-token Q map had kept the zoom's
            # dimensions, d0–d4 of its 16, under "zoom ×5").
            d = run_commands(app, display.name, tmp, "zoomed-then-short",
                             [{"do": "text", "ids": list(range(40, 80))}, {"do": "view", "field": "tab", "value": "heatmaps"},
                              {"do": "view", "field": "columns", "value": ["queries", "scores", "weights"]},
                              {"do": "go_to", "text": "5-12"}, {"do": "wait"}, {"do": "text", "ids": [40, 41, 42, 43, 44]}],
                             "--model", folder)
            q = next(e for e in d["heatmaps"] if e["stage"] == "queries")
            assert q["window"] == {"row0": 0, "rows": 5, "col0": 0, "cols": q["cols"]} and q["rows"] == 5, q["window"]
            assert "zoom" not in d["state"]["grid_notes"], d["state"]["grid_notes"]
            print(f"  zoomed to 5–12 of 40, then 5 tokens: Q shows all {q['cols']} dimensions, no zoom")

        return run_checks([("the Heatmaps tab: each map as large as the tab allows", heatmaps_fill_the_tab),
                           ("the selected query in view", the_selected_query_in_view),
                           ("Compare: A, B and B − A in view on a projector", compare_in_view),
                           ("Q's tooltip past the tokens", a_dimension_past_the_tokens)])


def main():
    app = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="attnscope-model-fit-")
    try:
        return checks(app, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
