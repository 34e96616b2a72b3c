"""A trained model in the app: File › Open model (here --model), its text, the Layers tab, every
view showing the layer picked, the next tokens and "append the top token".

The model is a tiny random GPTModel in Hugging Face's GPT-2 layout (config.json,
model.safetensors), made with Debian's torch by tests/oracle/gpt_models.py (the book's chapter 4
classes), with a small byte-level BPE vocabulary (vocab.json, merges.txt) written here. Torch is
the oracle, never the app: the layer's weights the app shows (the layout dump's trace, and the
files Export trace writes) are torch's weights of that layer, and the next tokens the app lists at
a temperature are torch.topk of softmax(logits / temperature) at that position.

Checked, headless (--commands, the buttons' own commands):
  - text → select_layer 1 head 0 → temperature 0.7 → export_trace npy: the trace on screen and
    the exported files are layer 1's (≤ 1e-5), the next tokens torch's (ids, probabilities ≤ 1e-5);
  - ten tokens at 1280 × 720, 150 %, presentation: the selected head's weights whole in the tab,
    its card heading "Layer 3  ·  head 2 of 2 …"; eight tokens at 1280 × 800 / 125 %: the layout
    holds still (no "layout error" from the capture) and its notes say what the map shows; Compare
    of two texts says which tokens differ, both tokens; two
    tokens after twenty, every head: each map's
    legend within its tile; the head statistics without the row sums' chart (no dropout in a
    model's pass); a figure's title names the layer, its caption the model and the layer, no seed;
  - the next tokens' button and first three rows in the Text panel's view, the selected token's chip
    whole in its list, at 1280 × 800 / 175 %,
    1280 × 720 / 150 and 100 %, 1920 × 1080 / 200 and 100 %, and a model without a tokenizer at
    1280 × 800 / 175 %; the model panel compact where the text is large; with 2 heads a layer at
    1920 × 1080 the scores table beside the grid, the grid most of the tab's height;
  - the temperature's frame, in the PNG, filled from its left edge to its middle at 1 of 0–2, no
    handle over its number;
  - the compact model panel a window padding taller than its row at 1280 × 720 / 200 %, 1920 × 1080
    / 175 and 200 %;
  - a vocabulary of 50257 without a tokenizer at 1280 × 720 / 150–200 %, 1280 × 800 / 200 %, 1920 × 1080
    / 150 and 200 %: the no-tokenizer note wrapped in the model panel with the layer's row; each of
    the first next tokens' chips as wide as a listed token of as many digits (whole), the heading
    naming the selected token, the button's label whole; a tokenizer's "Ġworld" in the heading at 175
    and 200 %;
  - append_token (no id) appends torch's most likely token; repeat_text doubles the ids; with a
    middle token selected the button names the token it appends (the last one's top);
  - after append_token, or a token changed in the middle, the pass takes the rows before it from
    the last one (reused_rows), and the layer's weights, next tokens and labels are torch's and
    the CLI's for the new text;
  - an edit of the chapter's workspace while the model is open is refused with one message, and
    model_close brings that workspace back, unchanged and editable;
  - --model on a path that is no model: one "error:" line, exit 2;
  - a folder without a tokenizer opens with a note and reads ids; `--bench-interaction --model
    --bench-tokens T` on it times its opening and T-token text edits (the JSON's keys and sane
    values, no thresholds), and refuses more tokens than the model reads in one line, exit 2.
Interactive (xdotool): a click on a thumbnail of the Layers grid selects that layer and head; text
typed and not applied, then a kill: the next start shows it in the field, held, and Enter applies it; File ›
Open model… on a file it cannot open without its heads comes back with why and the file chosen, and
the heads given there open it; at 1280 × 720 / 200 % the dialog and its refusal are whole in the
window.
Usage: test_model_view.py APP CLI ASSETS_DIR
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
import gpt_models as gm  # noqa: E402
import torch  # noqa: E402
from test_paste_embeddings import Clipboard  # noqa: E402
from test_teaching import Display, App, run_checks, run_commands, write_commands  # noqa: E402

LAYERS, HEADS = 3, 2
MERGES = [("h", "e"), ("l", "l"), ("he", "ll"), ("Ġ", "w"), ("o", "r"), ("Ġw", "or"), ("l", "d"), ("Ġwor", "ld"), ("#", "#"),
          # "The cat sat on the mat." as GPT-2 splits it
          ("T", "he"), ("Ġ", "c"), ("Ġc", "a"), ("Ġca", "t"), ("Ġ", "s"), ("Ġs", "a"), ("Ġsa", "t"), ("Ġ", "o"),
          ("Ġo", "n"), ("Ġ", "t"), ("Ġt", "he"), ("Ġ", "m"), ("Ġm", "a"), ("Ġma", "t")]
VOCAB = 256 + len(MERGES) + 1  # the bytes, MERGES, <|endoftext|> (last)


def write_tokenizer(folder):
    vocab = {}
    for ch in gm.bytes_to_unicode().values():
        vocab[ch] = len(vocab)
    for a, b in MERGES:
        vocab[a + b] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in MERGES))
    return len(vocab)


def make_model(folder, context_length=64):
    os.makedirs(folder, exist_ok=True)
    vocab = write_tokenizer(folder)
    model, cfg = gm.tiny_model(31, vocab_size=vocab, context_length=context_length, emb_dim=32, n_heads=HEADS,
                               n_layers=LAYERS, tied=True)
    with torch.no_grad():  # logits of a few units, not tens: the next tokens spread, so their probabilities test
        model.final_norm.scale.mul_(0.1)
    gm.write_hf_folder(folder, model, cfg, gm.save_safetensors)
    return model


def worst(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise AssertionError(f"shapes differ: {a.shape} vs {b.shape}")
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def torch_next(model, ids, temperature, k=10):
    _, logits = gm.torch_run(model, ids)
    p = torch.softmax(torch.tensor(logits[-1], dtype=torch.float64) / temperature, -1)
    top = torch.topk(p, k)
    return top.indices.tolist(), top.values.tolist(), int(np.argmax(logits[-1]))


def autosaved_draft(state):
    """The text typed and not applied that the autosave in the state folder `state` keeps (None)."""
    try:
        with open(os.path.join(state, "attnscope", "autosave.json")) as f:
            return json.load(f)["view"].get("trained_model", {}).get("draft")
    except (OSError, ValueError, KeyError):
        return None


def into_field(a, text=None, where="ctrl+a"):
    """An `App.until` action: a click on the model's text (the field where it is drawn), all of it
    selected (`where`: or the key that goes where to type), `text` typed (None: the clipboard
    pasted), then Enter."""
    def act(attempt):
        a.click("model_text")
        time.sleep(0.2 * attempt)  # the field takes the keyboard in the frame after the click
        a.key(where)
        if text is None:
            a.key("ctrl+v")
        else:
            a.type(text)
        a.key("Return")
    return act


def main():
    tmp = tempfile.mkdtemp(prefix="attnscope-model-view-")
    try:
        return checks(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def checks(tmp):
    app, cli, assets = sys.argv[1:4]
    folder = os.path.join(tmp, "gpt")
    model = make_model(folder)

    with Display() as display:
        def layer_and_next_tokens():
            out = os.path.join(tmp, "export")
            d = run_commands(app, display.name, tmp, "layer", [
                {"do": "select_layer", "layer": 1, "head": 0},  # then a new text: the forward keeps layer 1
                {"do": "text", "value": "hello world hello world"},
                {"do": "view", "field": "temperature", "value": 0.7},
                {"do": "export_trace", "path": out, "format": "npy"},
            ], "--model", folder)
            m = d["state"]["model"]
            ids = m["ids"]
            assert m["layer"] == 1 and m["shown_layer"] == 1 and d["state"]["head"] == 0, m
            assert m["tokens"][:2] == ["hell", "o"] or "Ġworld" in m["tokens"], m["tokens"]
            weights, _ = gm.torch_run(model, ids)
            for h in range(HEADS):
                ours = d["state"]["trace"]["heads"][h]["weights"]
                e = worst(ours, weights[1][h])
                assert e <= 1e-5, f"head {h}: the app's weights differ from torch's layer 1 by {e:.3g}"
            files = sorted(f for f in os.listdir(out) if "weights" in f and "dropped" not in f)
            assert len(files) == HEADS, files
            for h, f in enumerate(files):
                e = worst(np.load(os.path.join(out, f)), weights[1][h])
                assert e <= 1e-5, f"{f}: exported weights differ from torch's layer 1 head {h} by {e:.3g}"
            want_ids, want_p, _ = torch_next(model, ids, 0.7)
            got = m["next_tokens"]
            assert [t["id"] for t in got] == want_ids, (got, want_ids)
            e = max(abs(t["probability"] - p) / p for t, p in zip(got, want_p))
            assert e <= 1e-5 and want_p[-1] > 1e-3, f"next-token probabilities differ from torch's by {e:.3g} (relative)"
            assert len(m["labels"]) == LAYERS * HEADS, m["labels"]
            print(f"  {len(ids)} tokens; layer 1's weights and {len(files)} exported files as torch's; "
                  f"next tokens' p {want_p[0]:.4f} … {want_p[-1]:.4f} as torch's")
            # The Heatmaps tab shows the weights alone, coloured up to the largest below row 1 (row
            # 1 is always 1), as the thumbnails are; the chapter's columns come back on close.
            d = run_commands(app, display.name, tmp, "heatmaps", [
                {"do": "text", "value": "hello world hello world"},
                {"do": "select_layer", "layer": 1, "head": 0},
                {"do": "view", "field": "tab", "value": "heatmaps"},
            ], "--model", folder)
            maps = [e for e in d["heatmaps"] if not e.get("compare")]
            assert sorted({e["stage"] for e in maps}) == ["weights"], sorted({e["stage"] for e in maps})
            top = float(weights[1][0][1:].max())
            assert abs(maps[0]["range"][1] - top) <= 1e-5 and top < 0.999, (maps[0]["range"], top)
            assert "row 1" in (maps[0]["legend"] or {}).get("text", ""), maps[0]["legend"]
            # No tick's mark into the words on the labels' line: the legend's (a mark crossed its
            # "row 1" at 1920 × 1080 and 100 %) and the ends'.
            legend, bar = maps[0]["legend"], maps[0]["colorbar"]
            words = [(bar["x0"], bar["lo_to"]), (bar["hi_from"], bar["x0"] + bar["width"])]
            if legend["y"] < bar["y0"] + 14:
                words.append((legend["x"], legend["x"] + legend["w"]))
            crossed = [t for t in bar["ticks"] if t["mark"] and any(a <= t["x"] <= b for a, b in words)]
            assert not crossed, (crossed, words)
            # Zoomed past row 1, no cell on screen is off the scale: the legend no longer says one is
            # (it does, unzoomed, on the same text).
            for zoom in ([], [{"do": "go_to", "index": 20, "to": 27}]):
                dz = run_commands(app, display.name, tmp, "zoomed", [
                    {"do": "text", "value": "the cat sat on the mat. " * 6},
                    {"do": "select_layer", "layer": 1, "head": 0}, {"do": "view", "field": "tab", "value": "heatmaps"},
                ] + zoom, "--model", folder)
                zoomed = [e for e in dz["heatmaps"] if not e.get("compare")]
                said = (zoomed[0]["legend"] or {}).get("text") or ""
                assert ("row 1" in said) == (not zoom), (zoom, zoomed[0]["legend"])
                # The weights alone have no dimensions: the zoom's note names none.
                assert not zoom or "dimensions" not in dz["state"]["grid_zoom"], dz["state"]["grid_zoom"]
            # Every token's name whole: the band is as wide as the widest, which a float's last bit
            # had cut ("Ġm…" for "Ġmat" with room for it).
            for text in ("hello world hello world", "The cat sat on the mat."):
                shown = run_commands(app, display.name, tmp, "names", [
                    {"do": "text", "value": text}, {"do": "view", "field": "tab", "value": "heatmaps"}],
                    "--model", folder)["heatmaps"][0]["axis_names"]
                names = [r["text"] for r in shown["rows"]] + [c["text"] for c in shown["cols"]]
                assert names and not any(n.endswith("…") for n in names), names
            d = run_commands(app, display.name, tmp, "closed", [
                {"do": "text", "value": "hello world"}, {"do": "model_close"},
                {"do": "view", "field": "tab", "value": "heatmaps"}], "--model", folder)
            assert {e["stage"] for e in d["heatmaps"]} >= {"scores", "weights"}, {e["stage"] for e in d["heatmaps"]}
            assert d["state"]["card_headings"]["0"].startswith("Head 1 of 2  ·  "), d["state"]["card_headings"]  # no layer
            print(f"  the Heatmaps tab: the weights alone, colours up to {top:.4f} (below row 1); after "
                  f"model_close the chapter's maps again")

        def a_layers_maps_fit_and_say_which():
            def presented(name, text, size, text_size):
                """Layer 3, head 2's Heatmaps presented (F10) at SIZE and TEXT_SIZE %: the dump, its maps."""
                d = run_commands(app, display.name, tmp, name, [
                    text, {"do": "select_layer", "layer": 2, "head": 1},
                    {"do": "view", "field": "tab", "value": "heatmaps"},
                    {"do": "view", "field": "presentation", "value": True},
                ], "--model", folder, "--size", size, "--text-size", text_size)
                return d, [e for e in d["heatmaps"] if not e.get("compare")]

            # Ten tokens on a projector (1280 × 720, 150 %, presentation): the head's weights whole
            # in the tab — kept at four decimals, they scrolled with five rows on screen and the
            # selected last query below — and its card names the layer and head.
            d, maps = presented("fit", {"do": "text", "ids": list(range(40, 50))}, "1280x720", "150")
            assert [(e["stage"], e["rows"]) for e in maps] == [("weights", 10)], [(e["stage"], e["rows"]) for e in maps]
            assert maps[0]["wholly_in_view"], f"the weights are not whole in the tab: {maps[0]['cells']}, cell {maps[0]['cell']}"
            # Fourteen tokens at 200 % in a window maximised on a 720-px projector: the map fitted
            # 175 px, under the 96 px the text's size makes 192, and was grown to the width instead
            # (1138 px, three rows on screen); one map shrinks on to 96 screen pixels. Its legend
            # runs on into the empty tab (it was cut to "top: the largest belo…").
            _, m200 = presented("fit200", {"do": "text", "value": "hello world hello world hello world hello"},
                                "1280x680", "200")
            assert [(e["stage"], e["rows"]) for e in m200] == [("weights", 14)], [(e["stage"], e["rows"]) for e in m200]
            assert m200[0]["wholly_in_view"], f"200 %: the weights are not whole: {m200[0]['cells']}, cell {m200[0]['cell']}"
            assert m200[0]["legend"] and not m200[0]["legend"]["cut"], f"200 %: the legend is cut: {m200[0]['legend']}"
            fit200 = m200[0]["cells"]["w"]
            # Two heads of 43 tokens presented at 1280 × 720 and 200 %: "go to token" on the header's
            # row, not a row of its own (which took 58 px from maps of 204).
            d43 = run_commands(app, display.name, tmp, "goto-header", [
                {"do": "text", "ids": list(range(40, 83))}, {"do": "view", "field": "tab", "value": "heatmaps"},
                {"do": "view", "field": "presentation", "value": True}], "--model", folder, "--size", "1280x720",
                "--text-size", "200")
            go_to, cards = d43["widgets"]["go_to"], [e for e in d43["heatmaps"] if not e.get("compare")]
            names_43 = d43["state"]["model"]["tokens"]
            assert d43["state"]["go_to_in_header"] and go_to["y"] < cards[0]["tile"]["y"] - 50, (go_to, cards[0]["tile"])
            assert len(cards) == 2 and all(e["cells"]["w"] >= 250 and e["wholly_in_view"] for e in cards), \
                [(e["cells"], e["wholly_in_view"]) for e in cards]
            # Too many tokens to name each: every few, and each row's name starts with its number,
            # counted from 1 as the Inspector counts ("11 S"; "I N S X ] b g l" down the side read as
            # a word and named no position). The keys' one-character names keep their short band
            # (numbered, it took 27 px from these maps).
            for e in cards:
                names, step = e["axis_names"], e["axis_names"]["row_step"]
                rows = [(n["index"], n["text"]) for n in names["rows"]]
                marks = [step - 1, 2 * step - 1, 3 * step - 1]  # "5 …", "10 …", "15 …": a ruler's marks
                assert step in (2, 5, 10) and [i for i, _ in rows[:3]] == marks, (step, rows)
                assert all(t == f"{i + 1} {names_43[i]}" for i, t in rows), rows
                assert [n["text"] for n in names["cols"][:3]] == [names_43[i] for i in marks], names["cols"]
            print(f"  43 tokens, two heads at 1280 × 720 / 200 %: go to token on the header's row, "
                  f"maps of {cards[0]['cells']['w']:.0f} px")
            # At 1280 × 800 the header folds too, presented (inline, its three rows left maps of 240).
            d43 = run_commands(app, display.name, tmp, "fold-800", [
                {"do": "text", "ids": list(range(40, 83))}, {"do": "view", "field": "tab", "value": "heatmaps"},
                {"do": "view", "field": "presentation", "value": True}], "--model", folder, "--size", "1280x800",
                "--text-size", "200")
            cards = [e for e in d43["heatmaps"] if not e.get("compare")]
            assert d43["state"]["header_folded"] and all(e["cells"]["w"] >= 300 for e in cards), \
                (d43["state"]["header_folded"], [e["cells"] for e in cards])
            # The same at 1280 × 720 and 200 % beside the side panels, not presented: the map, its
            # colorbar's labels and its legend are whole in the tab (below the cells, the labels had
            # fallen below the fold of a 138-px map; the colorbar then stood beside them). The head
            # statistics take no room here (no whole row of theirs fits): the map is larger, and
            # its colorbar fits below it.
            d6 = run_commands(app, display.name, tmp, "beside", [
                {"do": "text", "value": "hello world hello world hello world hello"},
                {"do": "select_layer", "layer": 2, "head": 1}, {"do": "view", "field": "tab", "value": "heatmaps"},
            ], "--model", folder, "--size", "1280x720", "--text-size", "200")
            m6 = [e for e in d6["heatmaps"] if not e.get("compare")]
            assert [(e["stage"], e["rows"]) for e in m6] == [("weights", 14)], [(e["stage"], e["rows"]) for e in m6]
            e6, panel = m6[0], d6["panels"]["heatmaps"]
            assert e6["wholly_in_view"], f"beside the panels: the weights are not whole: {e6['tile']}, panel {panel}"
            assert e6["content"]["y"] + e6["content"]["h"] <= panel["y"] + panel["h"] + 0.5, (e6["content"], panel)
            bar = e6["colorbar"]
            assert d6["state"]["statistics_no_room"], "the head statistics took room without a whole row"
            if bar["beside"]:
                assert bar["x0"] > e6["cells"]["x"] + e6["cells"]["w"], bar
            else:
                assert bar["y0"] > e6["cells"]["y"] + e6["cells"]["h"], bar
            assert bar["hi"] and bar["lo"], bar
            legend = e6["legend"]
            assert legend and not legend["cut"], legend
            assert legend["y"] + legend["h"] <= panel["y"] + panel["h"] + 0.5, (legend, panel)
            beside = e6["cells"]["w"]
            # … and no smaller than the 138 px it scrolled at: its title shares the card's line.
            assert beside >= 200, f"beside the panels the weights are {beside:.0f} px"
            # The Pipeline's enlarged softmax whole below the steps, the selected last query in it
            # (at 1920 × 1080 it was as tall as the view: six of ten rows on screen). The tab asked
            # for the frame after the model opened is the one shown (ImGui showed Layers, asked a
            # frame before, which read as a click on it and undid the script's Pipeline).
            dp = run_commands(app, display.name, tmp, "pipeline", [
                {"do": "text", "ids": list(range(40, 50))},
                {"do": "view", "field": "tab", "value": "pipeline"},
            ], "--model", folder, "--size", "1920x1080")
            tab = dp["state"]["workspace"]["view"]["tab"]
            assert tab == "pipeline", f"asked for the Pipeline the frame after the model opened, shown: {tab}"
            big = [e for e in dp["heatmaps"] if e["id"].startswith("pipe_big_")]
            assert len(big) == 1 and big[0]["wholly_in_view"], f"the Pipeline's enlarged map: {[(e['tile'], e['cell']) for e in big]}"
            # Its wide maps (10 × 32: the inputs, the concatenated heads, the output) show their first
            # 20 columns, so half as tall as wide, and say which (they were strips of square cells: a
            # trained GPT-2's 14 × 768 inputs 2 px tall); the square ones all of theirs.
            columns = dp["state"].get("pipeline_columns", {})
            assert columns == {"inputs": [20, 32], "concat": [20, 32], "output": [20, 32]}, columns
            # At 200 % the operation whole, without its shape where both do not fit ("−∞ above
            # diago…" at every size).
            dp = run_commands(app, display.name, tmp, "pipeline200", [
                {"do": "text", "ids": list(range(40, 50))}, {"do": "view", "field": "tab", "value": "pipeline"},
            ], "--model", folder, "--size", "1280x720", "--text-size", "200")
            # The Lines tab there, a model of 12 heads (their buttons two rows): 11 tokens' rows all in
            # view, each labelled (labels line to line: at a label's height and its margin the 11th was
            # below the fold).
            twelve = os.path.join(tmp, "twelve-heads")
            os.makedirs(twelve, exist_ok=True)
            vocab = write_tokenizer(twelve)
            m12, cfg12 = gm.tiny_model(41, vocab_size=vocab, context_length=64, emb_dim=48, n_heads=12, n_layers=1,
                                       tied=True)
            gm.write_hf_folder(twelve, m12, cfg12, gm.save_safetensors)
            dl = run_commands(app, display.name, tmp, "lines200", [
                {"do": "text", "ids": list(range(40, 51))}, {"do": "view", "field": "tab", "value": "lines"},
            ], "--model", twelve, "--size", "1280x720", "--text-size", "200")
            g = dl["state"]["lines"]["geometry"]
            top, bottom = g["first_row_y"] - 0.5 * g["pitch"], g["first_row_y"] + 10.5 * g["pitch"]  # the rows'
            assert top - g["clip"]["y"] >= 20 and bottom <= g["clip"]["y"] + g["clip"]["h"] and g["labels_every"] == 1, \
                (top, bottom, g)  # the heading above them in view too (scrolled to the last, it was not)
            # 2 layers of 4 heads, the tab alone (presentation) at 1280 × 720 and 150 %: the text and
            # the next tokens beside the grid (the Text panel is hidden), the scores table under it
            # with rows to read (beside the grid, with nothing of the text, it listed all 8).
            four = os.path.join(tmp, "four-heads")
            if not os.path.exists(four):
                os.makedirs(four)
                m4, cfg4 = gm.tiny_model(43, vocab_size=write_tokenizer(four), context_length=64, emb_dim=64,
                                         n_heads=4, n_layers=2, tied=True)
                gm.write_hf_folder(four, m4, cfg4, gm.save_safetensors)
            dt = run_commands(app, display.name, tmp, "layers-4-heads", [
                {"do": "text", "ids": list(range(40, 74))}, {"do": "view", "field": "tab", "value": "layers"},
                {"do": "view", "field": "presentation", "value": True}], "--model", four, "--size", "1280x720",
                "--text-size", "150")
            table, font = dt["widgets"]["layers_scores"], dt["state"]["font_px"]["ui"]
            assert dt["state"]["layers_text_beside"] and not dt["state"]["layers_table_beside"], dt["state"]
            assert table["h"] >= 5 * (font + 4), (table, font)
            print(f"  2 layers × 4 heads, presentation at 1280 × 720 / 150 %: the text beside the grid, the table "
                  f"under it {table['h']:.0f} px tall")
            # 40 tokens at 1280 × 720 and 150 %: every row in view, named every few rows with their
            # numbers, rather than scrolled at a label's height (a repeated text's induction lines,
            # query i to key i − 19, had all left the view at the top). A query isolated: it and its
            # strongest key are named whatever the step, beside its value.
            dl = run_commands(app, display.name, tmp, "lines40", [
                {"do": "text", "ids": list(range(40, 60)) * 2}, {"do": "view", "field": "tab", "value": "lines"},
                {"do": "select_token", "index": 30}, {"do": "view", "field": "lines_isolate", "value": True},
            ], "--model", folder, "--size", "1280x720", "--text-size", "150")
            lines = dl["state"]["lines"]
            g = lines["geometry"]
            assert g["first_visible"] == 0 and g["last_visible"] == 39 and g["labels_every"] > 1, g
            strongest = max((ln for ln in lines["lines"] if ln[0] == 30), key=lambda ln: ln[3])
            assert 30 in g["named"] and strongest[1] in g["named"], (strongest, g["named"])
            assert any(j == strongest[1] for j, h, text in lines["values"]), (strongest, lines["values"])
            # 20 tokens at 1280 × 800 and 150 %: rows shorter than the UI's font but not the small
            # one's, every row named in the small font (in the UI's, every other one was).
            g20 = run_commands(app, display.name, tmp, "lines20", [
                {"do": "text", "ids": list(range(40, 50)) * 2}, {"do": "view", "field": "tab", "value": "lines"},
            ], "--model", folder, "--size", "1280x800", "--text-size", "150")["state"]["lines"]["geometry"]
            assert g20["first_visible"] == 0 and g20["last_visible"] == 19 and g20["labels_every"] == 1 and \
                g20["pitch"] < dl["state"]["font_px"]["ui"], g20
            print(f"  Lines, 40 tokens at 1280 × 720 / 150 %: all in view ({g['pitch']:.1f}-px rows, named every "
                  f"{g['labels_every']}); query 31 isolated, its strongest key {strongest[1] + 1} named")
            details = dp["state"]["pipeline_details"]
            # Each node's words end within it (they ran 4 px on: "softmax  10×1" under the scrollbar).
            overrun = {k: v for k, v in dp["state"]["pipeline_detail_overrun"].items() if v > 0.5}
            assert not overrun and details["weights"] in ("softmax  10×10", "softmax"), (overrun, details)
            assert details["masked"] in ("−∞ above diagonal", "−∞ for j > i  10×10", "−∞ for j > i") and \
                details["scores"] == "Q Kᵀ  10×10", details
            # Fewer tokens after more, every head: two-token maps are narrower than their legend,
            # which stays out of the next card's maps (it ran over them).
            d2 = run_commands(app, display.name, tmp, "two", [
                {"do": "text", "ids": list(range(40, 60))}, {"do": "select_token", "index": 17},
                {"do": "text", "ids": [40, 41]}, {"do": "view", "field": "tab", "value": "heatmaps"},
            ], "--model", folder, "--size", "1280x800", "--text-size", "175")
            legends = [(e["id"], e["legend"], e["tile"]) for e in d2["heatmaps"] if e.get("legend")]
            assert len(legends) == HEADS, legends
            tiles = [e["tile"] for e in d2["heatmaps"]]
            for i, legend, tile in legends:  # within its tile, or in the room right of it that no map takes
                assert legend["x"] >= tile["x"] - 0.5, f"{i}: legend {legend} left of its tile {tile}"
                for other in tiles:
                    if other != tile and other["y"] < legend["y"] + legend["h"] and legend["y"] < other["y"] + other["h"]:
                        assert legend["x"] + legend["w"] <= other["x"] + 0.5 or legend["x"] >= other["x"] + other["w"], \
                            f"{i}: legend {legend} over the map at {other}"
            assert d2["state"]["token"] == 1, d2["state"]["token"]
            # Eight tokens at 1280 × 800 and 125 %: the map held still (its rounding note took a line,
            # its numbers then no longer fitted, which took the note away, … every frame: the
            # capture says "layout error", run_commands fails on it), and the dump says what it shows.
            d4 = run_commands(app, display.name, tmp, "holds-still", [
                {"do": "text", "ids": list(range(40, 48))}, {"do": "select_layer", "layer": 1, "head": 1},
                {"do": "view", "field": "tab", "value": "heatmaps"},
            ], "--model", folder, "--size", "1280x800", "--text-size", "125")
            notes = d4["state"]["grid_notes"]
            shown = [e.get("label_format") for e in d4["heatmaps"] if e["values_shown"]]
            rounded = any(f in ("decimals3", "decimals2", "compact") for f in shown)
            assert notes.startswith("numbers rounded") == rounded, (notes, shown)
            print(f"  eight tokens at 1280 × 800, 125 %: held still, numbers shown {shown}, the notes {notes!r}")
            # Compare before a pin says what a model's user can change (it named the chapter's seed,
            # dropout and num_heads, none of which a model has).
            d4 = run_commands(app, display.name, tmp, "compare-empty", [
                {"do": "view", "field": "tab", "value": "compare"}], "--model", folder, "--size", "1280x720")
            assert d4["state"]["compare"] == {"pinned": False, "empty_text": "model"}, d4["state"]["compare"]
            # Compare: A pinned, B's text with two tokens changed — said with both tokens, counted
            # from 1 (the header named only the model and layer of each, the same for both).
            d5 = run_commands(app, display.name, tmp, "compare-texts", [
                {"do": "text", "ids": [40, 41, 42, 43, 44]}, {"do": "pin"},
                {"do": "text", "ids": [40, 50, 42, 43, 51]}, {"do": "view", "field": "tab", "value": "compare"},
            ], "--model", folder, "--size", "1920x1080")
            said = d5["state"]["compare"]["text_difference"]
            label = list(gm.bytes_to_unicode().values())  # id → token, as write_tokenizer numbers them
            assert said == f"tokens 2 ({label[41]} → {label[50]}), 5 ({label[44]} → {label[51]})", said
            print(f"  compare two texts: {said!r}")
            # Tokens inserted in one place are said so, not as every later position changed.
            d5 = run_commands(app, display.name, tmp, "compare-inserted", [
                {"do": "text", "ids": [40, 41, 42, 43, 44]}, {"do": "pin"},
                {"do": "text", "ids": [40, 60, 61, 41, 42, 43, 44]}, {"do": "view", "field": "tab", "value": "compare"},
            ], "--model", folder, "--size", "1920x1080")
            said = d5["state"]["compare"]["text_difference"]
            assert said == f"tokens 2–3 ({label[60]} {label[61]}) inserted", said
            print(f"  compare a text with tokens inserted: {said!r}")
            # Edits in two places — a token inserted, one replaced after it — each said once, at B's
            # positions (position by position it read as every later token changed).
            d5 = run_commands(app, display.name, tmp, "compare-two-places", [
                {"do": "text", "ids": [40, 41, 42, 43, 44]}, {"do": "pin"},
                {"do": "text", "ids": [40, 60, 41, 42, 52, 44]}, {"do": "view", "field": "tab", "value": "compare"},
            ], "--model", folder, "--size", "1920x1080")
            said = d5["state"]["compare"]["text_difference"]
            assert said == f"token 2 ({label[60]}) inserted, token 5 ({label[43]} → {label[52]})", said
            print(f"  compare a text edited in two places: {said!r}")
            # A token inserted: B − A (B's shape) compares the cells of the tokens both texts have —
            # torch's weights of B against torch's of A at the same tokens — its grey cells B's own
            # token's; under the causal mask the rows before it are A's bit for bit (it had said "no
            # cell-by-cell difference").
            ids_a, ids_b = [40, 41, 42, 43, 44, 45], [40, 41, 60, 42, 43, 44, 45]
            a_of_b = [0, 1, -1, 2, 3, 4, 5]
            d8 = run_commands(app, display.name, tmp, "compare-aligned", [
                {"do": "text", "ids": ids_a}, {"do": "select_layer", "layer": 2, "head": 0}, {"do": "pin"},
                {"do": "text", "ids": ids_b}, {"do": "view", "field": "tab", "value": "compare"},
            ], "--model", folder, "--size", "1920x1080")
            diff = next(e for e in d8["heatmaps"] if e.get("compare") == "diff" and e["stage"] == "weights"
                        and e["head"] == 0)
            assert diff["aligned"] and diff["rows"] == 7, {k: diff.get(k) for k in ("aligned", "rows")}
            wa, wb = gm.torch_run(model, ids_a)[0][2][0], gm.torch_run(model, ids_b)[0][2][0]
            got = diff["values"]
            err = 0.0
            for i in range(7):
                for j in range(7):
                    if a_of_b[i] < 0 or a_of_b[j] < 0:
                        assert got[i][j] == "-inf", (i, j, got[i][j])
                    else:
                        err = max(err, abs(got[i][j] - (wb[i, j] - wa[a_of_b[i], a_of_b[j]])))
            assert err <= 2e-5, err
            assert all(got[i][j] == 0 for i in (0, 1) for j in range(i + 1)), got[:2]
            line = next(x for x in d8["state"]["compare"]["lines"] if x.startswith("head 1's weights"))
            assert line.replace("\n", " ").endswith(f"{diff['changed']} of the 21 unmasked cells A and B share changed"), line
            # The weights' masked cells are 0 in both, a light grey 0: dark grey is B's own token alone.
            assert diff["legend"]["text"].endswith("· dark grey: B's own tokens") and not diff["legend"]["cut"], diff["legend"]
            print(f"  a token inserted: B − A at the tokens both have within {err:.1e} of torch's; {line!r}")
            # … where the masked scores' cells masked in both are dark grey too (−∞ − −∞), and said.
            d8 = run_commands(app, display.name, tmp, "compare-aligned-masked", [
                {"do": "view", "field": "columns", "value": ["masked_scores", "weights"]},
                {"do": "text", "ids": ids_a}, {"do": "select_layer", "layer": 2, "head": 0}, {"do": "pin"},
                {"do": "text", "ids": ids_b}, {"do": "view", "field": "tab", "value": "compare"},
            ], "--model", folder, "--size", "1920x1080")
            masked = next(e for e in d8["heatmaps"] if e.get("compare") == "diff" and e["stage"] == "masked_scores")
            assert masked["values"][0][1] == "-inf", masked["values"][0]
            assert masked["legend"]["text"].endswith("· dark grey: masked, or B's own tokens"), masked["legend"]
            # The top token appended to a pinned text: said so, and every cell A and B share the same
            # bits (causal: no earlier row reads it) — the maps shown, not collapsed to a line.
            d8 = run_commands(app, display.name, tmp, "compare-appended", [
                {"do": "text", "ids": ids_a}, {"do": "select_layer", "layer": 2, "head": 0}, {"do": "pin"},
                {"do": "append_token"}, {"do": "view", "field": "tab", "value": "compare"},
            ], "--model", folder, "--size", "1920x1080")
            c = d8["state"]["compare"]
            assert c["text_difference"].startswith("token 7 (") and c["text_difference"].endswith(") appended"), c
            line = next(x for x in c["lines"] if x.startswith("head 1's weights")).replace("\n", " ")
            assert line.endswith("the cells A and B share are unchanged, bit for bit"), line
            diff = next(e for e in d8["heatmaps"] if e.get("compare") == "diff" and e["stage"] == "weights"
                        and e["head"] == 0)
            assert diff["changed"] == 0 and diff["rows"] == 7 and all(v == "-inf" for v in diff["values"][6]), diff
            print(f"  the top token appended: {c['text_difference']!r}; {line!r}")
            # The layer picked after A's text, shown while B's computed: the rows before the edited
            # token are A's bit for bit (a pass that traced its layer had fed the layers after it
            # other last bits: Compare counted that noise as change, 62 of 121 cells where the mask
            # allows 56), and the line counts the unmasked cells.
            d7 = run_commands(app, display.name, tmp, "compare-rows-before", [
                {"do": "text", "ids": [40, 41, 42, 43, 44]}, {"do": "select_layer", "layer": 2, "head": 0},
                {"do": "pin"}, {"do": "text", "ids": [40, 41, 42, 60, 44]},
                {"do": "view", "field": "tab", "value": "compare"},
            ], "--model", folder, "--size", "1920x1080")
            sides = {e["compare"]: e for e in d7["heatmaps"]
                     if e.get("compare") and e["stage"] == "weights" and e["head"] == 0}
            wa, wb = np.array(sides["A"]["values"], dtype=np.float32), np.array(sides["B"]["values"], dtype=np.float32)
            assert (wa[:3] == wb[:3]).all() and not (wa[3:] == wb[3:]).all(), (wa, wb)
            line = next(x for x in d7["state"]["compare"]["lines"] if x.startswith("head 1's weights"))
            assert line.replace("\n", " ").endswith(f"{int((wa != wb).sum())} of the 15 unmasked cells changed"), line
            print(f"  rows before the edit as A's, bit for bit: {line!r}")
            # A head chosen when A was pinned, another chosen now: A's head against B's (it showed
            # B's head of both layers, the pinned head gone without a word), each side torch's.
            ids = [40, 41, 42, 43, 44, 45]
            d6 = run_commands(app, display.name, tmp, "compare-heads", [
                {"do": "text", "ids": ids}, {"do": "select_layer", "layer": 2, "head": 0}, {"do": "pin"},
                {"do": "select_layer", "layer": 0, "head": 1}, {"do": "view", "field": "tab", "value": "compare"},
            ], "--model", folder, "--size", "1920x1080")
            assert d6["state"]["compare"]["heads"] == [0, 1], d6["state"]["compare"].get("heads")
            sides = {e["compare"]: e for e in d6["heatmaps"] if e.get("compare") and e["stage"] == "weights"}
            assert sides["A"]["head"] == 0 and sides["B"]["head"] == 1, {k: v["head"] for k, v in sides.items()}
            want, _ = gm.torch_run(model, ids)
            ea, eb = worst(sides["A"]["values"], want[2][0]), worst(sides["B"]["values"], want[0][1])
            assert ea <= 1e-5 and eb <= 1e-5, (ea, eb)
            print("  compare layer 3 head 1 (pinned) against layer 1 head 2: each side torch's weights")
            # Then every head: each head's row is A's head against B's same head — the same text and
            # layer, so unchanged bit for bit (the differences were cached by B's head alone: head 2's
            # row showed the pinned head 1's against head 2's).
            d6 = run_commands(app, display.name, tmp, "compare-heads-then-all", [
                {"do": "text", "ids": ids}, {"do": "select_layer", "layer": 2, "head": 0}, {"do": "pin"},
                {"do": "select_layer", "layer": 2, "head": 1}, {"do": "view", "field": "tab", "value": "compare"},
                {"do": "wait"}, {"do": "view", "field": "head", "value": -1},
            ], "--model", folder, "--size", "1920x1080")
            c6 = d6["state"]["compare"]
            assert c6["heads"] == [-1, -1] and c6["largest"] == -1, {k: c6.get(k) for k in ("heads", "largest", "lines")}
            assert not any(e.get("compare") == "diff" for e in d6["heatmaps"]), "a difference drawn where none is"
            # Maps too large for numbers, on a projector: no tile runs past the tab's edge (a third
            # one, under the least tile width, had B − A cut in half).
            d7 = run_commands(app, display.name, tmp, "compare-wide", [
                {"do": "text", "ids": list(range(40, 70))}, {"do": "select_layer", "layer": 2, "head": 0},
                {"do": "pin"}, {"do": "select_layer", "layer": 0, "head": 1},
                {"do": "view", "field": "tab", "value": "compare"}], "--model", folder, "--size", "1280x800",
                "--text-size", "175")
            tab = d7["panels"]["compare"]
            for e in d7["heatmaps"]:
                if e.get("compare"):
                    assert e["tile"]["x"] + e["tile"]["w"] <= tab["x"] + tab["w"] + 0.5, (e["compare"], e["tile"], tab)
            # B − A's legend whole, in its tile: two lines where the tile is narrow (it was cut to
            # "blue: B < …").
            diff = next(e for e in d7["heatmaps"] if e.get("compare") == "diff")
            legend, tile = diff["legend"], diff["tile"]
            assert legend and not legend["cut"], legend
            assert legend["y"] + legend["h"] <= tile["y"] + tile["h"] + 0.5, (legend, tile)
            assert tile["x"] - 0.5 <= legend["x"] and legend["x"] + legend["w"] <= tile["x"] + tile["w"] + 0.5, (legend, tile)
            # Presented at 1280 × 720 and 200 %, the row short of height: each colorbar stands beside
            # its map, the cells taking the height a bar below them took (122-px maps with 180 px of
            # each tile's width empty), B − A's legend below its cells, whole; its 0 labelled.
            d9 = run_commands(app, display.name, tmp, "compare-presented", [
                {"do": "text", "ids": list(range(40, 76))}, {"do": "select_layer", "layer": 2, "head": 0},
                {"do": "pin"}, {"do": "text", "ids": list(range(40, 50)) + [39] + list(range(51, 76))},
                {"do": "view", "field": "tab", "value": "compare"}, {"do": "view", "field": "presentation", "value": True},
            ], "--model", folder, "--size", "1280x720", "--text-size", "200")
            maps9 = {e["compare"]: e for e in d9["heatmaps"] if e.get("compare") and e["stage"] == "weights"}
            assert sorted(maps9) == ["A", "B", "diff"], sorted(maps9)
            for side, e in maps9.items():
                cells, bar = e["cells"], e["colorbar"]
                assert e["wholly_in_view"] and bar["beside"] and bar["x0"] >= cells["x"] + cells["w"], (side, e["tile"], bar)
                assert bar["hi"] and bar["lo"] and not bar["once"], (side, bar)
                assert cells["w"] >= 150 and bar["x0"] + bar["width"] <= e["tile"]["x"] + e["tile"]["w"], (side, cells, bar)
            assert len({round(e["cells"]["y"]) for e in maps9.values()}) == 1, "the three maps' cells not level"
            diff = maps9["diff"]
            legend = diff["legend"]
            assert legend and not legend["cut"] and legend["y"] >= diff["cells"]["y"] + diff["cells"]["h"], (legend, diff["cells"])
            assert any(t["value"] == 0 and t["label"] == "0" for t in diff["colorbar"]["ticks"]), diff["colorbar"]["ticks"]
            print(f"  presented at 1280 × 720 / 200 %: A, B and B − A {maps9['A']['cells']['w']:.0f}-px maps, "
                  "their colorbars beside them")
            # Upright key names whole where the maps are as large with them and the row stays in
            # view ("<|endoftext|>" was cut to 48 px over room to spare below the maps).
            eot = VOCAB - 1
            d8 = run_commands(app, display.name, tmp, "compare-names", [
                {"do": "text", "ids": [eot] + list(range(40, 50))}, {"do": "select_layer", "layer": 1, "head": 0},
                {"do": "pin"},
                {"do": "text", "ids": [eot] + list(range(40, 45)) + [60] + list(range(46, 50))},
                {"do": "view", "field": "tab", "value": "compare"}], "--model", folder, "--size", "1280x800",
                "--text-size", "125")
            for e in d8["heatmaps"]:
                if e.get("compare") in ("A", "B"):
                    first = e["axis_names"]["cols"][0]
                    assert first == {"index": 0, "text": "<|endoftext|>"}, (e["compare"], first)
                    assert e["wholly_in_view"], (e["compare"], e["tile"])
            # A, B and B − A side by side, their cells in view, where a narrower band of row names
            # allows it (47 tokens at 175 %: A and B had stood at 96 px, B − A below the fold).
            ids = [eot] + list(range(40, 86))
            d9 = run_commands(app, display.name, tmp, "compare-together", [
                {"do": "text", "ids": ids}, {"do": "select_layer", "layer": 1, "head": 0}, {"do": "pin"},
                {"do": "text", "ids": ids[:29] + [90] + ids[30:]},
                {"do": "view", "field": "tab", "value": "compare"}], "--model", folder, "--size", "1280x800",
                "--text-size", "175")
            row = {e["compare"]: e for e in d9["heatmaps"] if e.get("compare") and e["stage"] == "weights"}
            assert len({round(e["tile"]["y"]) for e in row.values()}) == 1, {k: e["tile"] for k, e in row.items()}
            for k, e in row.items():
                cells = e["cells"]
                assert e["in_view"] and cells["w"] >= 96 - 0.5, (k, cells)
                # The token that differs is named on both axes, whatever the thinning.
                named = {axis: [n["index"] for n in e["axis_names"][axis]] for axis in ("rows", "cols")}
                assert 29 in named["rows"] and 29 in named["cols"], (k, named)
                assert cells["y"] + cells["h"] <= d9["panels"]["compare"]["y"] + d9["panels"]["compare"]["h"], (k, cells)
            # Texts of different lengths: each map names its own side's tokens of the places said —
            # B's inserted 10th and replaced 31st, A's replaced 30th (by position they read as every
            # token from the 10th on).
            d9 = run_commands(app, display.name, tmp, "compare-named-places", [
                {"do": "text", "ids": ids}, {"do": "select_layer", "layer": 1, "head": 0}, {"do": "pin"},
                {"do": "text", "ids": ids[:9] + [91] + ids[9:29] + [90] + ids[30:]},
                {"do": "view", "field": "tab", "value": "compare"}], "--model", folder, "--size", "1920x1080")
            said = d9["state"]["compare"]["text_difference"]
            assert said == f"token 10 ({label[91]}) inserted, token 31 ({label[ids[29]]} → {label[90]})", said
            row = {e["compare"]: e for e in d9["heatmaps"] if e.get("compare") and e["stage"] == "weights"}
            assert set(row) == {"A", "B", "diff"} and row["diff"]["aligned"], set(row)
            for k, places in (("A", [29]), ("B", [9, 30]), ("diff", [9, 30])):
                named = [n["index"] for n in row[k]["axis_names"]["rows"]]
                assert row[k]["axis_names"]["row_step"] > 1 and all(p in named for p in places), (k, named)
            # Three tokens changed three apart where a name takes five rows (numbered, on a ruler's
            # steps): the first and the last named, the middle one crowded out (the last had given
            # way to it, and the name after the first was the 19th).
            chain = list(ids)
            for p in (10, 13, 16):
                chain[p] = 200 + p
            d9 = run_commands(app, display.name, tmp, "compare-crowded-places", [
                {"do": "text", "ids": ids}, {"do": "select_layer", "layer": 1, "head": 0}, {"do": "pin"},
                {"do": "text", "ids": chain}, {"do": "view", "field": "tab", "value": "compare"}],
                "--model", folder, "--size", "1920x1080")
            for e in d9["heatmaps"]:
                if e.get("compare") and e["stage"] == "weights":
                    names = e["axis_names"]
                    assert names["row_step"] == 5, ("the chain is three apart for a step of 5", names["row_step"])
                    named = [n["index"] for n in names["rows"]]
                    assert 10 in named and 16 in named and 13 not in named, (e["compare"], named)
                    assert all(n["text"].startswith(f"{n['index'] + 1} ") for n in names["rows"]), names["rows"]
            # At 1280 × 800 and 175 % (the head statistics under the tab) A, B and B − A side by side,
            # their cells in view: the fit had put A and B two a line at larger cells, B − A below the fold.
            d9 = run_commands(app, display.name, tmp, "compare-aligned-projector", [
                {"do": "text", "ids": ids}, {"do": "select_layer", "layer": 1, "head": 0}, {"do": "pin"},
                {"do": "text", "ids": ids[:9] + [91] + ids[9:29] + [90] + ids[30:]},
                {"do": "view", "field": "tab", "value": "compare"}], "--model", folder, "--size", "1280x800",
                "--text-size", "175")
            row = {e["compare"]: e for e in d9["heatmaps"] if e.get("compare") and e["stage"] == "weights"}
            assert set(row) == {"A", "B", "diff"}, set(row)
            assert len({round(e["cells"]["y"]) for e in row.values()}) == 1, {k: e["cells"] for k, e in row.items()}
            assert all(e["in_view"] and e["cells"]["w"] >= 80 - 0.5 for e in row.values()), \
                {k: (e["in_view"], e["cells"]) for k, e in row.items()}
            # Texts with no token in common: no cell-by-cell difference, but A and B coloured on one
            # scale: their own ranges (0–0.57 beside 0–0.61) had read as the same yellow for other
            # weights.
            d9 = run_commands(app, display.name, tmp, "compare-nothing-shared", [
                {"do": "text", "ids": ids}, {"do": "select_layer", "layer": 1, "head": 0}, {"do": "pin"},
                {"do": "text", "ids": list(range(100, 112))},
                {"do": "view", "field": "tab", "value": "compare"}], "--model", folder, "--size", "1280x800",
                "--text-size", "175")
            row = {e["compare"]: e for e in d9["heatmaps"] if e.get("compare") and e["stage"] == "weights"}
            assert set(row) == {"A", "B"}, set(row)
            assert row["A"]["range"] == row["B"]["range"], (row["A"]["range"], row["B"]["range"])
            line = [l for l in d9["state"]["compare"]["lines"] if "weights" in l]
            assert line and line[0].replace("\n", " ").endswith("one colour scale for both"), d9["state"]["compare"]["lines"]
            print(f"  compare texts of different lengths: {said!r}, the places named in A, B and B − A; texts with "
                  "nothing in common on one colour scale")
            # The head statistics without the row sums' chart: a model's pass has no dropout, so its
            # every row read 1; the entropy's chart has the room.
            d3 = run_commands(app, display.name, tmp, "statistics", [
                {"do": "text", "ids": list(range(40, 50))}, {"do": "view", "field": "tab", "value": "heatmaps"},
            ], "--model", folder, "--size", "1280x800")
            hs = d3["state"]["head_statistics"]
            assert hs["charts"] and not hs["row_sums_chart"], {k: hs.get(k) for k in ("charts", "row_sums_chart")}
            assert all("entropy_chart" in e and "row_sums_chart" not in e for e in hs["heads"]), hs["heads"][0].keys()
            assert not any(k.startswith("statistics_row_sums_") for k in d3["widgets"]), "a row sums chart drawn"
            # One map of one head: its title leads the card's heading, one line for both, as a saved
            # figure's title (two lines took 44 px of a 124-px map at 1280 × 720 and 200 %).
            heading = d["state"]["card_headings"]["1"]
            assert heading.startswith(f"weights (softmax)  10×10  ·  layer 3  ·  head 2 of {HEADS}"), heading
            assert maps[0]["title"] == "", maps[0]["title"]
            print(f"  10 × 10 weights whole at {maps[0]['cell']:.0f} px cells; 14 × 14 at 200 %, {fit200:.0f} px, the "
                  f"legend whole; beside the panels {beside:.0f} px, its colorbar beside; the card: {heading!r}")
            # A figure's caption names the model and the layer, and no seed: the weights are the
            # model's own (it said "Multi-head attention, 2 heads · … · seed 123", the workspace's).
            svg = os.path.join(tmp, "caption.svg")
            commands = write_commands(tmp, "caption", [{"do": "text", "ids": list(range(40, 50))},
                                                       {"do": "select_layer", "layer": 2, "head": 1}])
            p = subprocess.run([app, "--model", folder, "--commands", commands, "--panel", "weights", "--head", "2",
                                "--caption", "--screenshot", svg], capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, DISPLAY=display.name, HOME=tmp, XDG_STATE_HOME=tmp))
            assert p.returncode == 0, p.stderr
            with open(svg) as f:
                texts = re.findall(r"<text[^>]*>([^<]*)</text>", f.read())
            caption = [t for t in texts if "T 10" in t]
            want = f"gpt  ·  layer 3 of {LAYERS}  ·  head 2 of {HEADS}  ·  weights (softmax)  ·  T 10"
            assert caption == [want], caption
            # Its title too, as the card's heading: a figure saved without the caption named no layer.
            title = [t for t in texts if t.startswith("weights (softmax)")]
            assert title == [f"weights (softmax)  10×10  ·  layer 3  ·  head 2 of {HEADS}"], title
            caption = caption[0]
            # Without --head the figure is of the head selected (select_layer's head 1: "head 2"), as
            # the screenshot command's without `head`: both had drawn head 1 whatever was selected.
            for how in ("--panel", "command"):
                chosen = os.path.join(tmp, f"chosen-{how[2:] if how.startswith('--') else how}.svg")
                if how == "--panel":
                    args, cmds = ["--panel", "weights", "--screenshot", chosen], commands
                else:
                    out = os.path.join(tmp, "window.png")
                    cmds = write_commands(tmp, "chosen", [{"do": "text", "ids": list(range(40, 50))},
                                                          {"do": "select_layer", "layer": 2, "head": 1},
                                                          {"do": "screenshot", "path": chosen, "panel": "weights"}])
                    args = ["--screenshot", out]
                p = subprocess.run([app, "--model", folder, "--commands", cmds, "--caption", *args], capture_output=True,
                                   text=True, timeout=120,
                                   env=dict(os.environ, DISPLAY=display.name, HOME=tmp, XDG_STATE_HOME=tmp))
                assert p.returncode == 0, p.stderr
                with open(chosen) as f:
                    title = [t for t in re.findall(r"<text[^>]*>([^<]*)</text>", f.read())
                             if t.startswith("weights (softmax)")]
                assert title == [f"weights (softmax)  10×10  ·  layer 3  ·  head 2 of {HEADS}"], (how, title)
            # The Lines figure's title names the layer too (it said only "attention as lines: weights").
            lines_svg = os.path.join(tmp, "lines.svg")
            p = subprocess.run([app, "--model", folder, "--commands", commands, "--panel", "lines",
                                "--screenshot", lines_svg], capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, DISPLAY=display.name, HOME=tmp, XDG_STATE_HOME=tmp))
            assert p.returncode == 0, p.stderr
            with open(lines_svg) as f:
                lines_title = [t for t in re.findall(r"<text[^>]*>([^<]*)</text>", f.read())
                               if t.startswith("attention as lines")]
            assert lines_title == ["attention as lines: weights · layer 3"], lines_title
            # A PNG of that one map has its title line, white text above the dim key labels (on
            # screen one head's one map has it in the card's heading, which the crop leaves out).
            png = os.path.join(tmp, "one-map.png")
            p = subprocess.run([app, "--model", folder, "--commands", commands, "--panel", "weights", "--head", "2",
                                "--screenshot", png], capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, DISPLAY=display.name, HOME=tmp, XDG_STATE_HOME=tmp))
            assert p.returncode == 0, p.stderr
            top = np.asarray(Image.open(png).convert("RGB"))[:24].astype(int)
            white = int(((top.min(axis=2) > 200) & (top.max(axis=2) - top.min(axis=2) < 24)).sum())
            assert white >= 20, f"the PNG of one map has no title: {white} white pixels in its top 24 rows"
            # The title names the layer and the head, as the SVG's does: "weights (softmax)  10×10"
            # alone ended 174 px in, with "  ·  layer 3  ·  head 2 of 2" 333 px.
            ends = int(np.where(((top.min(axis=2) > 200) & (top.max(axis=2) - top.min(axis=2) < 24)).any(axis=0))[0].max())
            assert ends >= 280, f"the PNG's title ends {ends} px in: no layer and head after the map's name"
            print(f"  the figure's caption: {caption!r}; a PNG of the map titled ({white} white pixels on top)")

        def the_next_tokens_in_view_on_a_projector():
            # The left column at a projector's text: the next tokens' button and first three rows
            # in the Text panel's view (at 1280 × 800 and 175 % they were below its fold: the model
            # panel took 40 % with its shape and explanation, the field 3.6 lines). The model panel
            # is compact there — its shape and explanation tooltips — and whole where there is room.
            bare = os.path.join(tmp, "bare-left")  # no tokenizer: its note, four lines at 175 %
            os.makedirs(bare, exist_ok=True)
            for name in ("config.json", "model.safetensors"):
                shutil.copy(os.path.join(folder, name), bare)
            # At 1280 × 720 and 200 % the button and two rows (none were in view: the model panel's
            # name and layer took two rows, the tokens' count one, <|endoftext|> two, the heading two).
            for model, size, pct, compact in ((folder, "1280x800", 175, True), (folder, "1280x720", 150, True),
                                              (folder, "1280x720", 175, True), (folder, "1280x720", 200, True),
                                              (folder, "1280x720", 100, False), (folder, "1920x1080", 200, True),
                                              (folder, "1920x1080", 100, False), (bare, "1280x800", 175, True)):
                d = run_commands(app, display.name, tmp, f"left-{size}-{pct}", [
                    {"do": "text", "ids": list(range(40, 50))}, {"do": "select_token", "index": 5},
                ], "--model", model, "--size", size, "--text-size", str(pct))
                panel, w = d["panels"]["inputs"], d["widgets"]
                bottom = panel["y"] + panel["h"]
                shown = [k for k in ("model_append", "model_next_0", "model_next_1", "model_next_2")
                         if k in w and w[k]["y"] + w[k]["h"] <= bottom + 0.5]
                least = 3 if (size, pct) == ("1280x720", 200) else 4
                assert shown == ["model_append", "model_next_0", "model_next_1", "model_next_2"][:max(least, len(shown))], \
                    f"{size} {pct} %: in the Text panel's view only {shown} (bottom {bottom})"
                # The count in the panel's title; the layer and the way out in one row when compact.
                assert d["state"]["model_text_title"] == "Text  ·  10 tokens", d["state"]["model_text_title"]
                if compact:
                    close, layer = w["model_close"], w["model_layer"]
                    assert abs(close["y"] - layer["y"]) < 1 and close["x"] >= layer["x"] + layer["w"], (close, layer)
                assert d["state"]["model_panel_compact"] == compact, (size, pct, d["state"]["model_panel_compact"])
                text = w["model_text"]
                assert text["h"] >= 2 * d["state"]["font_px"]["ui"], f"{size} {pct} %: the text field {text}"
                # The selected token's chip whole in the list, scrolled by whole rows (a list of one
                # row showed the bottom half of its row).
                chip, chips = w["model_token_5"], w["model_tokens"]
                assert chips["y"] - 0.5 <= chip["y"] and chip["y"] + chip["h"] <= chips["y"] + chips["h"] + 0.5, \
                    f"{size} {pct} %: the selected token's chip {chip} not whole in its list {chips}"
                if (size, pct) == ("1920x1080", 100):  # 2 heads a layer: the scores table beside the grid
                    grid = d["panels"]["layers_grid"]
                    assert d["state"]["layers_table_beside"], "the scores table under a grid of 2 heads a layer"
                    assert grid["h"] > 0.6 * (d["panels"]["inputs"]["y"] + d["panels"]["inputs"]["h"]), grid
            # At 250 % on 1280 × 720 the <|endoftext|> checkbox's label keeps to one line ("EOT first";
            # it had broken as "<|endoftex" over "t|>"), and the Layers tab's button to its tab.
            d = run_commands(app, display.name, tmp, "left-1280x720-250", [
                {"do": "text", "ids": list(range(40, 50))}], "--model", folder, "--size", "1280x720", "--text-size", "250")
            eot, ui = d["widgets"]["model_eot"], d["state"]["font_px"]["ui"]
            assert eot["h"] < 2 * ui, f"the checkbox's label in two lines at 250 %: {eot}, font {ui} px"
            swap, tab = d["widgets"].get("layers_swap"), d["panels"]["main"]
            assert swap is None or swap["x"] + swap["w"] <= tab["x"] + tab["w"], (swap, tab)
            print("  the next tokens' button and three rows in view at 6 sizes (two rows at 1280 × 720 and 200 %), and "
                  "without a tokenizer at 1280 × 800 and 175 %; the model panel compact at 150 % and more; at 250 % "
                  "the checkbox's label one line")

        def the_next_tokens_presented():
            # Presented (F10: the Text panel hidden), the Layers tab shows the tokens and the next
            # tokens beside the grid, in the room the grid as tall as the tab leaves: the audience
            # had the heads and no word of what the model read or predicted, half the tab empty.
            for size, pct, hide in (("1280x720", 250, "presentation"), ("1280x720", 150, "presentation"),
                                    ("1920x1080", 200, "presentation"), ("1920x1080", 100, "inputs_panel")):
                d = run_commands(app, display.name, tmp, f"presented-{size}-{pct}", [
                    {"do": "text", "value": "hello world hello world"},
                    {"do": "view", "field": hide, "value": hide == "presentation"},
                ], "--model", folder, "--size", size, "--text-size", str(pct))
                st, w, p = d["state"], d["widgets"], d["panels"]
                assert st.get("layers_text_beside") is True, f"{size} {pct} %: no text beside the grid"
                assert "inputs" not in p, sorted(p)
                beside, grid, tab = p["layers_beside"], p["layers_grid"], p["main"]
                assert grid["x"] + grid["w"] <= beside["x"] + 0.5, (grid, beside)
                assert beside["x"] + beside["w"] <= tab["x"] + tab["w"] + 0.5, (beside, tab)
                assert beside["y"] + beside["h"] <= tab["y"] + tab["h"] + 0.5, (beside, tab)
                for k in ("model_tokens", "model_append", "model_next_0", "model_next_1", "model_next_2"):
                    r = w[k]
                    assert beside["x"] - 0.5 <= r["x"] and r["x"] + r["w"] <= beside["x"] + beside["w"] + 0.5 and \
                        beside["y"] - 0.5 <= r["y"] and r["y"] + r["h"] <= beside["y"] + beside["h"] + 0.5, \
                        f"{size} {pct} %: {k} {r} not whole in the column beside the grid {beside}"
                last = st["model"]["tokens"][-1]
                assert f"“{last}”" in st["model_next_heading"], (st["model_next_heading"], last)
                # The text's field above the tokens where the column keeps them and three next
                # tokens (not at 250 % on 1280 × 720: F10 shows the Text panel's).
                lines = st["layers_beside_field_lines"]
                assert (lines == 0) == (pct == 250), f"{size} {pct} %: the field beside the grid has {lines} lines"
                if lines:
                    r = w["model_text"]
                    assert beside["x"] - 0.5 <= r["x"] and r["x"] + r["w"] <= beside["x"] + beside["w"] + 0.5 and \
                        beside["y"] - 0.5 <= r["y"] and r["y"] + r["h"] <= w["model_tokens"]["y"] + 0.5, \
                        f"{size} {pct} %: the field {r} not above the tokens in the column {beside}"
                    assert st["model_field"] == "hello world hello world", st["model_field"]
            # A grid its width bounds (2 layers of 6 heads) gives the column its least width, the
            # thumbnails keeping three quarters of their side or 64 px (there had been no column, and
            # 290 px blank under the grid).
            wide = os.path.join(tmp, "wide-grid")
            if not os.path.exists(wide):
                wide_model, cfg = gm.tiny_model(43, vocab_size=64, context_length=32, emb_dim=48, n_heads=6, n_layers=2,
                                                 tied=True)
                gm.write_hf_folder(wide, wide_model, cfg, gm.save_safetensors)
            for size, pct in (("1920x1080", 175), ("1920x1080", 200), ("1280x720", 250)):
                d = run_commands(app, display.name, tmp, f"wide-{size}-{pct}", [
                    {"do": "text", "ids": list(range(1, 11))}, {"do": "view", "field": "presentation", "value": True},
                ], "--model", wide, "--size", size, "--text-size", str(pct))
                p, w = d["panels"], d["widgets"]
                assert d["state"].get("layers_text_beside") is True, f"{size} {pct} %: no text beside a wide grid"
                beside, grid = p["layers_beside"], p["layers_grid"]
                assert grid["x"] + grid["w"] <= beside["x"] + 0.5, (grid, beside)
                r = w["model_next_0"]
                assert r["y"] + r["h"] <= beside["y"] + beside["h"] + 0.5, (r, beside)
                cell = w["layer_0_head_0"]["w"]
                if size == "1920x1080":  # (at 1280 × 720 and 250 %: three quarters of their side, 80 px)
                    assert cell >= 64 * pct / 100 - 1, f"{size} {pct} %: thumbnails of {cell:.0f} px beside the column"
                # The scores table under the grid with its header and three rows, or behind the
                # button (at 1280 × 720 and 250 % the room under the grid had held none, blank).
                font = d["state"]["font_px"]["ui"]
                assert "layers_swap" in w or w["layers_scores"]["h"] >= 4 * font, \
                    (size, pct, w.get("layers_scores"), font)
            d = run_commands(app, display.name, tmp, "not-presented", [{"do": "text", "value": "hello world"}],
                             "--model", folder, "--size", "1280x720", "--text-size", "250")
            assert d["state"].get("layers_text_beside") is False and "layers_beside" not in d["panels"], \
                "the text beside the grid while the Text panel shows it"
            print("  presented at 1280 × 720 (250, 150 %) and 1920 × 1080 (200 %), and with the Text panel hidden: "
                  "the tokens, Append and three next tokens whole beside the grid")

        big = os.path.join(tmp, "vocab50257")  # GPT-2's vocabulary size, no tokenizer: tokens "#41851"
        big_ids = [10000 + 3637 * k % 89999 for k in range(12)]  # five digits each, as most of GPT-2's ids

        def big_model_at(size, pct):
            if not os.path.exists(big):
                big_model, cfg = gm.tiny_model(37, vocab_size=50257, context_length=64, emb_dim=32, n_heads=2,
                                               n_layers=1, tied=True)
                gm.write_hf_folder(big, big_model, cfg, gm.save_safetensors)
            return run_commands(app, display.name, tmp, f"big-{size}-{pct}", [{"do": "text", "ids": big_ids}],
                                "--model", big, "--size", size, "--text-size", str(pct))

        projector = (("1280x720", 200), ("1280x720", 175), ("1280x800", 200), ("1280x720", 150),
                     ("1920x1080", 200), ("1920x1080", 150))

        def the_next_tokens_whole_on_a_projector():
            # The next tokens are what the Text panel is for: at 175–200 % on 1280 × 720 they were
            # cut ("Ġund…", "#…": a bar of 30 % of the row and "100.0 %" came first), the heading to
            # "Next token after “…", no longer naming the token, the button to "Append the top t…".
            for size, pct in projector:
                d = big_model_at(size, pct)
                w, st = d["widgets"], d["state"]
                m = st["model"]
                # Each next token's chip as wide as a listed token of as many digits ("#ddddd": DejaVu's
                # digits are one width): the whole token, never "#4…".
                whole_w = w["model_token_0"]["w"]
                compared = 0
                for i, t in enumerate(m["next_tokens"][:3]):
                    if len(str(t["id"])) == 5:
                        compared += 1
                        assert w[f"model_next_{i}"]["w"] >= whole_w - 0.5, \
                            f"{size} {pct} %: the next token #{t['id']} cut: {w[f'model_next_{i}']['w']:.0f} px " \
                            f"wide, a whole five-digit token {whole_w:.0f}"
                assert compared, m["next_tokens"][:3]
                assert st["model_next_shown"][:3] == ["#" + str(t["id"]) for t in m["next_tokens"][:3]], \
                    st["model_next_shown"]
                # The heading names the token (wrapped where it must be), the button reads whole.
                assert f"“#{big_ids[-1]}”" in st["model_next_heading"], (size, pct, st["model_next_heading"])
                assert st["model_append_shown"] == st["model_append_label"], \
                    (size, pct, st["model_append_shown"], st["model_append_label"])
            # A tokenizer's token in the heading ("Next token after “Ġw…" at 200 %).
            for size, pct in (("1280x720", 175), ("1280x720", 200)):
                d = run_commands(app, display.name, tmp, f"heading-{size}-{pct}", [
                    {"do": "text", "value": "hello world"}, {"do": "select_token", "index": 2}],
                    "--model", folder, "--size", size, "--text-size", str(pct))
                assert d["state"]["model"]["tokens"][2] == "Ġworld", d["state"]["model"]["tokens"]
                assert "“Ġworld”" in d["state"]["model_next_heading"], (size, pct, d["state"]["model_next_heading"])
            print(f"  a vocabulary of 50257 without a tokenizer at {len(projector)} sizes: the next tokens, the "
                  f"heading and the button whole; “Ġworld” named at 175 and 200 %")

        def a_models_notes_wrapped():
            # The no-tokenizer note, compact, was cut to one line ("• no tokenizer: give token ids, not
            # te…") even at 1920 × 1080: which files are missing was the part cut. Wrapped, whole, in
            # the model panel with its layer's row.
            for size, pct in projector:
                d = big_model_at(size, pct)
                w, st = d["widgets"], d["state"]
                panel, notes = d["panels"]["model"], w.get("model_notes")
                assert notes and st["model_notes"][0]["text"].startswith("no tokenizer:"), \
                    f"{size} {pct} %: no note drawn whole ({st.get('model_notes')})"
                assert st["model_notes"][0]["lines"] >= 2, (size, pct, st["model_notes"])
                for name in ("model_notes", "model_layer", "model_close"):
                    assert w[name]["y"] + w[name]["h"] <= panel["y"] + panel["h"] + 0.5, (size, pct, name, w[name], panel)
            print(f"  the no-tokenizer note wrapped at {len(projector)} sizes, whole in the model panel with its row")

        def the_model_panel_as_tall_as_its_row():
            # Compact, the model panel is its one row (and notes): at 1920 × 1080 and 175–200 % a floor
            # of 18 % of the column left 68–83 px blank under it while the next tokens scrolled.
            for size, pct in (("1280x720", 200), ("1920x1080", 175), ("1920x1080", 200)):
                d = run_commands(app, display.name, tmp, f"row-{size}-{pct}", [{"do": "text", "value": "hello world"}],
                                 "--model", folder, "--size", size, "--text-size", str(pct))
                w, st, panel = d["widgets"], d["state"], d["panels"]["model"]
                assert st["model_panel_compact"], (size, pct)
                end = max(w["model_layer"]["y"] + w["model_layer"]["h"], w["model_close"]["y"] + w["model_close"]["h"])
                blank = panel["y"] + panel["h"] - end
                assert blank <= 8 * pct / 100 + 1, f"{size} {pct} %: {blank:.0f} px blank under the model panel's row"
            print("  the compact model panel ends a window padding under its row at 1280 × 720 / 200 %, 1920 × 1080 "
                  "/ 175 and 200 %")

        def the_temperatures_number_uncovered():
            # The temperature's handle sat on its number ("1.|00") at every size. At 1 (of 0–2) its
            # frame is filled from its left edge to its middle, under the number: along a pixel row
            # below the digits, one run of another colour from the edge, no handle in the middle.
            d = run_commands(app, display.name, tmp, "temperature-200", [{"do": "text", "value": "hello world"}],
                             "--model", folder, "--size", "1280x720", "--text-size", "200")
            assert d["state"]["model"]["temperature"] == 1, d["state"]["model"]["temperature"]
            t = d["widgets"]["model_temperature"]
            png = np.asarray(Image.open(d["png"]).convert("RGB")).astype(int)
            y = int(t["y"] + t["h"] - 4)
            x0, x1 = int(round(t["x"])), int(round(t["x"] + t["w"]))
            edge = 8  # past the frame's rounded corners (3 px at 100 %)
            row = png[y, x0 + edge:x1 - edge]
            bg = row[3 * len(row) // 4]  # the frame's own colour, right of any fill at 1 of 0–2
            marked = np.where(np.abs(row - bg).max(axis=1) > 12)[0]
            assert marked.size, f"the temperature's frame {t} shows nothing of its value"
            first, last = int(marked[0]) + edge, int(marked[-1]) + edge
            assert first == edge and marked.size == last - first + 1, \
                f"a handle over the number: columns {first}–{last} of a {x1 - x0}-px frame marked, not from its edge"
            assert abs(last - (x1 - x0) / 2) <= 4, f"the fill ends at {last} of {x1 - x0} px at 1 of 0–2"
            print(f"  the temperature's frame filled from its edge to {last} of {x1 - x0} px at 1, no handle")

        def append_and_repeat():
            d = run_commands(app, display.name, tmp, "grow", [
                {"do": "text", "ids": [5, 70, 200, 9]},
                {"do": "append_token"},
                {"do": "repeat_text"},
                {"do": "text", "prepend_eot": True},  # the same ids after <|endoftext|>, not re-tokenized
            ], "--model", folder)
            _, _, top = torch_next(model, [5, 70, 200, 9], 1.0)
            want = [VOCAB - 1] + [5, 70, 200, 9, top] * 2
            assert d["state"]["model"]["ids"] == want, (d["state"]["model"]["ids"], want)
            print(f"  appended torch's top token {top}, the text twice, then <|endoftext|> before it: {want}")
            assert d["state"]["layers_repeat_label"] == "Repeat the text", d["state"]["layers_repeat_label"]
            # Twice the text past the context (64): the button off says why on its face.
            full = run_commands(app, display.name, tmp, "no-repeat", [{"do": "text", "ids": list(range(40, 80))}],
                                "--model", folder)
            assert full["state"]["layers_repeat_label"] == "Repeat: twice would not fit", full["state"]["layers_repeat_label"]
            # The whole context (64 tokens): Append says why it takes no click on its face too, and
            # append_token names the context (it had named a 65-token text nobody typed).
            at_context = run_commands(app, display.name, tmp, "no-append", [{"do": "text", "ids": list(range(64))}],
                                      "--model", folder)["state"]
            assert not at_context["model_append_enabled"], at_context["model_append_enabled"]
            assert at_context["model_append_label"] == "Append: the context is full", at_context["model_append_label"]
            path = write_commands(tmp, "append-full", [{"do": "text", "ids": list(range(64))}, {"do": "wait"},
                                                       {"do": "append_token"}])
            env = dict(os.environ, DISPLAY=display.name, HOME=tmp, XDG_STATE_HOME=tmp)
            png = os.path.join(tmp, "append-full.png")
            r = subprocess.run([app, "--model", folder, "--commands", path, "--keep-going", "--screenshot", png],
                               env=env, capture_output=True, text=True, timeout=60)
            said = [x for x in r.stderr.splitlines() if x.startswith("error:")]
            assert len(said) == 1 and "as long as the model's context (64 tokens)" in said[0] and "65" not in said[0], \
                r.stderr
            # With a token in the middle selected, the list is the one after it; the button, which
            # appends the last one's top, says which token that is.
            label = run_commands(app, display.name, tmp, "middle", [
                {"do": "text", "ids": [5, 70, 200, 9]}, {"do": "select_token", "index": 1},
            ], "--model", folder)["state"]["model_append_label"]
            d = run_commands(app, display.name, tmp, "middle-append", [
                {"do": "text", "ids": [5, 70, 200, 9]}, {"do": "select_token", "index": 1}, {"do": "append_token"},
            ], "--model", folder)
            m = d["state"]["model"]
            assert m["ids"] == [5, 70, 200, 9, top], m["ids"]
            assert label == f"Append “{m['tokens'][-1]}” at the end", label
            assert d["state"]["model_append_label"] == "Append the top token", d["state"]["model_append_label"]
            # On a projector the label keeps "at the end" (cut, it read "Append “23” at t…").
            narrow = run_commands(app, display.name, tmp, "middle-200", [
                {"do": "text", "ids": [5, 70, 200, 9]}, {"do": "select_token", "index": 1},
            ], "--model", folder, "--size", "1280x720", "--text-size", "200")["state"]["model_append_shown"]
            assert narrow.endswith("at the end"), narrow
            print(f"  token 2 selected: the button said {label!r} ({narrow!r} at 200 %) and appended {top}")

        def a_wide_models_maps_keep_their_size():
            # A model 256 wide on 8 tokens, its weights beside its output (8 × 256): an axis of
            # dimensions shows its first max(4T, 64) (the notes line says so), so the weights keep
            # cells a class can see — every map has one cell size, and all 256 columns made the
            # 8 × 8 weights a speck beside them.
            wide_folder = os.path.join(tmp, "gpt256")
            os.makedirs(wide_folder, exist_ok=True)
            vocab = write_tokenizer(wide_folder)
            wide_model, cfg = gm.tiny_model(33, vocab_size=vocab, context_length=32, emb_dim=256, n_heads=2,
                                            n_layers=1, tied=True)
            gm.write_hf_folder(wide_folder, wide_model, cfg, gm.save_safetensors)
            d = run_commands(app, display.name, tmp, "wide", [
                {"do": "text", "ids": [5, 70, 200, 9, 33, 8, 41, 12]},
                {"do": "view", "field": "tab", "value": "heatmaps"},
                {"do": "view", "field": "columns", "value": ["weights", "output"]},
            ], "--model", wide_folder, "--size", "1280x800", "--text-size", "175")
            maps = {e["stage"]: e for e in d["heatmaps"] if not e.get("compare")}
            assert set(maps) >= {"weights", "output"}, sorted(maps)
            w, out = maps["weights"], maps["output"]
            assert out["window"]["cols"] == 64 and out["window"]["rows"] == 8, out["window"]
            side = w["cells"]["w"]
            assert side >= 56, f"the 8 × 8 weights are {side:.0f} px across beside a 256-wide output"
            assert "dimensions d0–d63 of 256 shown" in d["state"]["grid_notes"], d["state"]["grid_notes"]
            d = run_commands(app, display.name, tmp, "wide-weights", [
                {"do": "text", "ids": [5, 70, 200, 9, 33, 8, 41, 12]},
                {"do": "view", "field": "tab", "value": "heatmaps"}], "--model", wide_folder)
            assert "dimensions" not in d["state"]["grid_notes"], ("the weights alone", d["state"]["grid_notes"])
            print(f"  256 wide, 8 tokens: the output shows d0–d63, the weights {side:.0f} px across; the notes say so")
            # Q beside the weights: Q's cells, shrunk to fit its columns, are too small for every row's
            # name where the weights' are not; its thinned rows say their numbers all the same.
            d = run_commands(app, display.name, tmp, "wide-queries", [
                {"do": "text", "ids": list(range(40, 60))}, {"do": "view", "field": "tab", "value": "heatmaps"},
                {"do": "view", "field": "columns", "value": ["queries", "weights"]}], "--model", wide_folder,
                "--size", "1920x1080", "--text-size", "100")
            maps = {e["stage"]: e for e in d["heatmaps"] if not e.get("compare") and e["head"] == 0}
            q, w = maps["queries"]["axis_names"], maps["weights"]["axis_names"]
            assert w["row_step"] == 1 and q["row_step"] > 1, (w["row_step"], q["row_step"])
            assert all(n["text"].startswith(f"{n['index'] + 1} ") for n in q["rows"]), q["rows"]
            print(f"  Q beside the weights: Q's rows every {q['row_step']}, numbered; the weights' every one")

        def the_selected_tokens_chip_in_view():
            # The chip of the selected token (the last, the one the next tokens are about) is in the
            # list's view: a scrollbar appearing re-wrapped the chips a row further down after the
            # list was scrolled to it; past 400 tokens only the first 400 were listed.
            long_folder = os.path.join(tmp, "gpt512")
            if not os.path.exists(long_folder):
                make_model(long_folder, context_length=512)
            for name, folder_, ids, size, pct in (("chips-40", folder, list(range(40, 80)), "1280x720", "150"),
                                                  ("chips-40-200", folder, list(range(40, 80)), "1280x720", "200"),
                                                  ("chips-450", long_folder, [(5 * i) % 250 for i in range(450)],
                                                   "1280x800", "150")):
                d = run_commands(app, display.name, tmp, name, [{"do": "text", "ids": ids}], "--model", folder_,
                                 "--size", size, "--text-size", pct)
                box, chip = d["widgets"]["model_tokens"], d["widgets"].get("model_token_selected")
                assert chip and box["y"] <= chip["y"] and chip["y"] + chip["h"] <= box["y"] + box["h"] + 0.5, \
                    (name, box, chip)
                # The list scrolls (more chips than rows): its scrollbar's grab is drawn, a grey in the
                # list's right 14 px (the chips are blue and wrap left of it). One row tall, at 200 %,
                # ImGui had faded it out: 2 of 10 chips showed, nothing said there were more.
                png = np.asarray(Image.open(d["png"]).convert("RGB")).astype(int)
                y0, y1 = int(box["y"]) + 1, int(box["y"] + box["h"]) - 1
                x1 = int(box["x"] + box["w"])
                strip = png[y0:y1, x1 - 14:x1]
                grey = (strip.max(axis=2) - strip.min(axis=2) <= 4) & (strip.min(axis=2) >= 60)
                assert grey.sum() >= 20, (name, box, int(grey.sum()))
            print("  the selected (last) token's chip in view, the list's scrollbar drawn: 40 tokens at 150 and "
                  "200 %, 450 tokens")

        def a_failed_pass_says_why():
            # A model whose values overflow float32 on this text: every view of it says why, none
            # shows the chapter's last result under the model's name (the Layers tab said "no result
            # yet", the next tokens "computing…" for ever, the Inspector the book's six tokens).
            bad_folder = os.path.join(tmp, "overflow")
            os.makedirs(bad_folder, exist_ok=True)
            vocab = write_tokenizer(bad_folder)
            bad, cfg = gm.tiny_model(35, vocab_size=vocab, context_length=32, emb_dim=32, n_heads=2, n_layers=1,
                                     tied=True)
            with torch.no_grad():
                bad.trf_blocks[0].att.W_query.weight.fill_(1e30)
                bad.trf_blocks[0].att.W_key.weight.fill_(1e30)
            gm.write_hf_folder(bad_folder, bad, cfg, gm.save_safetensors)
            for tab in ("layers", "heatmaps"):
                png, dump = os.path.join(tmp, f"overflow-{tab}.png"), os.path.join(tmp, f"overflow-{tab}.json")
                cmds = write_commands(tmp, f"overflow-{tab}", [{"do": "view", "field": "tab", "value": tab}])
                env = dict(os.environ, DISPLAY=display.name, HOME=tmp, XDG_STATE_HOME=os.path.join(tmp, "state"))
                p = subprocess.run([app, "--model", bad_folder, "--commands", cmds, "--screenshot", png,
                                    "--dump-layout", dump, "--keep-going"], env=env, capture_output=True, text=True,
                                   timeout=120)
                with open(dump) as f:
                    d = json.load(f)
                why = d["state"]["engine_error"]
                assert "overflow float32" in why, (tab, why, p.stderr[-300:])
                assert "engine_error_said" in d["widgets"] or tab == "heatmaps", (tab, sorted(d["widgets"])[:20])
                assert d["state"].get("tokens") in (None, []) and not d["heatmaps"], \
                    (tab, d["state"].get("tokens"), [e["id"] for e in d["heatmaps"]][:4])
            print(f"  a model that overflows: {why[:70]}… said in the Layers tab and the next tokens; no stale maps")

        def an_edit_reuses_the_rows_before_it():
            # A text edited after its first tokens: the pass takes the rows before the edit from the
            # last one (lm/model_pass.h) and still shows torch's numbers for the new text.
            # Past 64 tokens (a thumbnail's cell a block of rows) every row's attention is computed
            # again, the rest of the rows before the edit not (whole_attention), on a model that
            # reads 160 tokens.
            short = [5, 70, 200, 9, 33, 8, 5, 70, 200, 9, 33, 8]
            long_folder = os.path.join(tmp, "gpt160")
            long_model = make_model(long_folder, context_length=160)
            long = [(7 * i * i + 3 * i) % 250 for i in range(90)]
            AGAIN = " (every row's attention again)"
            cases = [(first, folder_, model_, whole, edit, want_reused)
                     for first, folder_, model_, whole in ((short, folder, model, False),
                                                           (long, long_folder, long_model, True))
                     for edit, want_reused in (({"do": "append_token"}, len(first)),
                                               ({"do": "text", "ids": first[:6] + [41] + first[7:]}, 6))]
            for first, folder_, model_, whole, edit, want_reused in cases:
                d = run_commands(app, display.name, tmp, "reuse", [
                    {"do": "select_layer", "layer": 1, "head": 1},  # the pass keeps layer 1 from here on
                    {"do": "text", "ids": first},
                    {"do": "wait"},  # its pass done (else the next text's cancels it, as typing does)
                    edit,
                ], "--model", folder_)
                m = d["state"]["model"]
                ids = m["ids"]
                assert m["reused_rows"] == want_reused, (edit, m["reused_rows"], want_reused)
                assert m["whole_attention"] == whole, (edit, len(ids), m["whole_attention"])
                weights, _ = gm.torch_run(model_, ids)
                for h in range(HEADS):
                    e = worst(d["state"]["trace"]["heads"][h]["weights"], weights[1][h])
                    assert e <= 1e-5, f"after {edit}: head {h}'s weights differ from torch's by {e:.3g}"
                want_ids, want_p, _ = torch_next(model_, ids, 1.0)
                got = m["next_tokens"]
                assert [t["id"] for t in got] == want_ids, (edit, got, want_ids)
                e = max(abs(t["probability"] - p) / p for t, p in zip(got, want_p))
                assert e <= 1e-5, f"after {edit}: next-token probabilities differ from torch's by {e:.3g}"
                # The labels of every head: those of the CLI's pass of the whole text.
                cli_out = subprocess.run([cli, "model-trace", folder_, "--ids", ",".join(map(str, ids))],
                                         capture_output=True, text=True, timeout=120)
                assert cli_out.returncode == 0, cli_out.stderr
                labels = [h["label"] for layer in json.loads(cli_out.stdout)["layers"] for h in layer["heads"]]
                assert m["labels"] == labels, (edit, m["labels"], labels)
                print(f"  {edit['do']}: {want_reused} of {len(ids)} rows taken from the last pass"
                      f"{AGAIN if whole else ''}; layer 1's "
                      f"weights, the next tokens and the labels as torch's and the CLI's")

        def hashes_drawn():
            # "##" starts an ImGui id: a token button must still show it (its label in the dump).
            d = run_commands(app, display.name, tmp, "hashes", [{"do": "text", "value": "## ## x"}],
                             "--model", folder, "--size", "1280x800")
            assert "##" in d["state"]["model"]["tokens"], d["state"]["model"]["tokens"]
            tokens = d["state"]["model"]["tokens"]
            w, x = d["widgets"].get("model_token_0"), d["widgets"].get(f"model_token_{tokens.index('x')}")
            assert tokens[0] == "##" and w and x and w["w"] > x["w"], f"'##' {w} is no wider than 'x' {x}"
            print(f"  tokens {tokens}: the button of '##' {w['w']:.0f} px wide, of 'x' {x['w']:.0f} px")
            # GPT-2's "Ġ" and "Ċ" are said on screen under the text where the line has room (a
            # learner read "Ġthe" as a misspelling; a lecturer's top next tokens were "Ċ", explained
            # nowhere): those its tokens spell (the next tokens' may add others, by the model's seed).
            said = {}
            for name, text in (("spaced", "the cat sat on the mat"), ("unspaced", "thecat"),
                               ("lines", "one\ntwo\nthree")):
                d = run_commands(app, display.name, tmp, "space-" + name, [{"do": "text", "value": text}],
                                 "--model", folder, "--size", "1920x1080")
                said[name] = [m[0] for m in d["state"].get("model_marks_said", [])]
            assert "Ġ" in said["spaced"] and "Ċ" in said["lines"], \
                f"the marks said: {said}"
            print(f"  the marks said under the text: {said}")

        def chapter_work_set_aside():
            path = os.path.join(tmp, "aside.commands.json")
            with open(path, "w") as f:
                json.dump([{"do": "set", "field": "d_out", "value": 4}, {"do": "model_close"},
                           {"do": "set", "field": "d_out", "value": 4}], f)
            dump = os.path.join(tmp, "aside.layout.json")
            env = dict(os.environ, DISPLAY=display.name, HOME=tmp, XDG_STATE_HOME=tmp)
            r = subprocess.run([app, "--model", folder, "--commands", path, "--keep-going", "--screenshot",
                                os.path.join(tmp, "aside.png"), "--dump-layout", dump],
                               env=env, capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stderr
            refusals = [line for line in r.stderr.splitlines() if line.startswith("error:")]
            assert len(refusals) == 1 and "read only" in refusals[0], r.stderr
            with open(dump) as f:
                state = json.load(f)["state"]
            assert "model" not in state, "model_close left a model open"
            assert state["d_out"] == 4, state["d_out"]
            assert state["tokens"][:2] == ["Your", "journey"], state["tokens"]
            print(f"  refused while open: {refusals[0]}")
            # --model, then a script whose first command is a preset: the model opened, then closed.
            d = run_commands(app, display.name, tmp, "preset_after", [{"do": "preset", "name": "gpt2-small"},
                                                                       {"do": "preset", "name": "multihead"}],
                             "--model", folder)
            assert "model" not in d["state"] and len(d["state"]["tokens"]) == 6, d["state"]["tokens"]

        def bad_model_path():
            bad = os.path.join(tmp, "not-a-model.pth")
            with open(bad, "wb") as f:
                f.write(b"PK\x03\x04 this is no zip")
            env = dict(os.environ, DISPLAY=display.name, HOME=tmp, XDG_STATE_HOME=tmp)
            r = subprocess.run([app, "--model", bad, "--screenshot", os.path.join(tmp, "bad.png")],
                               env=env, capture_output=True, text=True, timeout=60)
            lines = [x for x in r.stderr.splitlines() if x.strip()]
            assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: --model:"), \
                (r.returncode, r.stderr)
            assert not os.path.exists(os.path.join(tmp, "bad.png")), "a screenshot of no model"
            print(f"  {lines[0]}")
            # Started interactively (a launcher: no terminal), the window opens all the same and says
            # why in its toast; a bad workspace FILE likewise (both had exited without a window).
            bad_ws = os.path.join(tmp, "bad-workspace.json")
            with open(bad_ws, "w") as f:
                f.write("{not json")
            for args, said in ((["--model", bad], "not-a-model.pth"), (["--open", bad_ws], "not valid JSON")):
                dump = os.path.join(tmp, "interactive-bad.json")
                if os.path.exists(dump):
                    os.remove(dump)
                proc = subprocess.Popen([app, *args, "--new-window", "--dump-layout", dump], env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                toast, deadline = "", time.time() + 30
                while time.time() < deadline and proc.poll() is None and said not in toast:
                    time.sleep(0.2)
                    try:
                        with open(dump) as f:
                            toast = json.load(f)["state"].get("toast", "")
                    except (OSError, ValueError):
                        pass
                running = proc.poll() is None
                proc.terminate()
                _, err = proc.communicate(timeout=10)
                assert running and said in toast, (args, running, toast, err)
                print(f"  interactive {args[0]} of a bad file: the window stays, its toast {toast[:60]!r}…")
            # A --memory-budget given bounds a model too: an embedding of 1 200 000 zero rows,
            # deflated to a small file, needs some 73 MiB, refused at 64 before anything is read.
            wide = os.path.join(tmp, "wide_vocab.npz")
            sd = {"tok_emb.weight": np.zeros((1200000, 8), np.float32), "pos_emb.weight": np.zeros((4, 8), np.float32),
                  "trf_blocks.0.norm1.scale": np.ones(8, np.float32)}
            np.savez_compressed(wide, **sd)
            r = subprocess.run([app, "--model", wide, "--num-heads", "2", "--memory-budget", "64", "--screenshot",
                                os.path.join(tmp, "wide.png")], env=env, capture_output=True, text=True, timeout=60)
            lines = [x for x in r.stderr.splitlines() if x.strip()]
            assert r.returncode == 2 and len(lines) == 1 and "more than the limit of 64 MiB" in lines[0], \
                (r.returncode, r.stderr)
            print(f"  {lines[0]}")

        def a_trained_texts_model_takes_text():
            # A model `train` saved from a text task takes a typed text in the app, cut into its
            # characters (ids: Python's sorted(set(text))); one it never saw is refused, the text kept.
            text = "the cat sat on the mat. the rat ate the cat."
            task = os.path.join(tmp, "chars.json")
            with open(task, "w") as f:
                json.dump({"task": "text", "text": text, "layers": 1, "heads": 2, "d_model": 32, "seq_len": 16,
                           "steps": 2, "batch": 2}, f)
            pth = os.path.join(tmp, "chars.pth")
            subprocess.run([cli, "train", task, "--save", pth], check=True, capture_output=True)
            typed = "the rat sat"
            d = run_commands(app, display.name, tmp, "chars", [{"do": "text", "value": typed}], "--model", pth)
            m = d["state"]["model"]
            vocabulary = sorted(set(text))
            shown = ["␣" if c == " " else c for c in typed]  # a space drawn as its picture, not an empty chip
            assert m["tokens"] == shown and m["ids"] == [vocabulary.index(c) for c in typed], m
            path = write_commands(tmp, "chars-refused", [{"do": "text", "value": typed},
                                                         {"do": "text", "value": "the dog"}])
            env = dict(os.environ, DISPLAY=display.name, HOME=tmp, XDG_STATE_HOME=tmp)
            png = os.path.join(tmp, "chars-refused.png")
            r = subprocess.run([app, "--model", pth, "--commands", path, "--keep-going", "--screenshot", png,
                                "--dump-layout", png + ".json"], env=env, capture_output=True, text=True, timeout=60)
            lines = [x for x in r.stderr.splitlines() if x.strip()]
            assert len(lines) == 1 and "“d” is not one of the" in lines[0], r.stderr
            with open(png + ".json") as f:
                kept = json.load(f)["state"]["model"]
            assert kept["tokens"] == shown, kept["tokens"]
            print(f"  {typed!r} is ids {m['ids']}; {lines[0]}")

        def a_workspace_keeps_its_model():
            # Saved, screenshotted and autosaved with a model open, a workspace opens the model again at
            # its text, layer and head; a model gone since is one message, the chapter's workspace kept.
            copy = os.path.join(tmp, "kept-model")
            shutil.copytree(folder, copy)
            ws, png = os.path.join(tmp, "kept.json"), os.path.join(tmp, "kept-shot.png")
            text = "hello world hello"
            run_commands(app, display.name, tmp, "keep", [
                {"do": "model_open", "path": copy}, {"do": "text", "value": text},
                {"do": "select_layer", "layer": 1, "head": 1}, {"do": "save", "path": ws},
                {"do": "screenshot", "path": png}])
            with open(ws) as f:
                saved = json.load(f)["view"]["trained_model"]
            assert saved["path"] == copy and saved["layer"] == 1 and saved["head"] == 1, saved
            want = None
            for name, path in (("workspace", ws), ("screenshot", png)):
                d = run_commands(app, display.name, tmp, "reopen-" + name, [{"do": "open", "path": path}])
                m = d["state"]["model"]
                assert m and m["layer"] == 1 and d["state"]["head"] == 1 and m["ids"] == saved["ids"], (name, m)
                want = m["tokens"]
            # Killed while the model is open: the next start (no file) restores it from the autosave.
            state = os.path.join(tmp, "killed-state")
            path = write_commands(tmp, "killed", [{"do": "model_open", "path": copy}, {"do": "text", "value": text},
                                                  {"do": "select_layer", "layer": 1, "head": 0}])
            autosave = os.path.join(state, "attnscope", "autosave.json")
            with App(app, display.name, ["--commands", path], state_dir=state) as gui:
                def autosaved():
                    try:
                        with open(autosave) as f:
                            return json.load(f)["view"].get("trained_model", {}).get("head") == 0
                    except (OSError, ValueError, KeyError):
                        return False
                deadline = time.time() + 30
                while not autosaved():
                    assert time.time() < deadline, "the autosave never held the model at head 1 (0)"
                    time.sleep(0.2)
                gui.close(signal.SIGKILL)
            with App(app, display.name, [], state_dir=state) as gui:
                d = gui.settled("the model restored", lambda d: d["state"].get("model") is not None
                                and d["state"]["model"]["layer"] == 1)
                m = d["state"]["model"]
                assert m["tokens"] == want and d["state"]["head"] == 0, (m, d["state"]["head"])
                assert d["state"]["dirty"], d["state"]["title"]  # unsaved when killed, unsaved still
                gui.close(signal.SIGKILL)
            # Killed again, started with the model on the command line (`attnscope --model M`): the
            # model opens at the autosave's text (it opened at its first, the autosave overwritten).
            with App(app, display.name, ["--model", copy], state_dir=state) as gui:
                d = gui.settled("the model at the autosave's text", lambda d: d["state"].get("model") is not None
                                and d["state"]["model"]["layer"] == 1)
                assert d["state"]["model"]["tokens"] == want, d["state"]["model"]
            # The model moved away: one message, the chapter's workspace open.
            shutil.rmtree(copy)
            path = write_commands(tmp, "gone", [{"do": "open", "path": ws}])
            png3 = os.path.join(tmp, "gone.png")
            env = dict(os.environ, DISPLAY=display.name, HOME=tmp, XDG_STATE_HOME=tmp)
            r = subprocess.run([app, "--commands", path, "--screenshot", png3, "--dump-layout", png3 + ".json"],
                               env=env, capture_output=True, text=True, timeout=120)
            with open(png3 + ".json") as f:
                d = json.load(f)
            toast = d["state"].get("toast", "")
            assert d["state"].get("model") is None and copy in toast and "rest of the workspace is open" in toast, \
                (d["state"].get("model"), toast)
            print(f"  saved, screenshotted, killed (then started bare, and with --model): each reopens {len(want)} tokens at layer 2, its head; "
                  f"gone: {toast!r}")

        def bench_without_tokenizer():
            bare = os.path.join(tmp, "bare")  # config.json and the weights only
            os.makedirs(bare, exist_ok=True)
            for name in ("config.json", "model.safetensors"):
                shutil.copy(os.path.join(folder, name), bare)
            d = run_commands(app, display.name, tmp, "bare", [{"do": "text", "ids": [3, 1, 4, 1, 5]}], "--model", bare)
            assert d["state"]["model"]["ids"] == [3, 1, 4, 1, 5], d["state"]["model"]
            assert d["state"]["model"]["tokens"][0] == "#3", d["state"]["model"]["tokens"]
            assert "no tokenizer" in d["state"]["toast"], d["state"]["toast"]
            assert d["state"]["model_field"] == "3 1 4 1 5", d["state"]["model_field"]  # not an empty field
            env = dict(os.environ, DISPLAY=display.name, HOME=tmp, XDG_STATE_HOME=tmp)
            out = os.path.join(tmp, "bench.json")
            r = subprocess.run([app, "--bench-interaction", out, "--model", bare, "--bench-tokens", "40",
                                "--bench-edits", "4"], env=env, capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, (r.returncode, r.stderr)
            assert r.stdout.startswith(f"model {bare}, 40 tokens: 4 edits, edit→frame p50 "), r.stdout
            with open(out) as f:
                c = json.load(f)["configs"][0]
            assert (c["model"], c["tokens"], c["layers"], c["heads"], c["edits"]) == (bare, 40, LAYERS, HEADS, 4), c
            e = c["edit_to_frame_ms"]
            assert 0 < e["p50"] <= e["p95"] <= e["max"], e
            kinds = {k: v["edits"] for k, v in c["by_kind"].items()}
            assert kinds == {"new_text": 2, "token_changed": 1, "last_token_changed": 1}, kinds
            assert c["frames_to_result"]["p50"] >= 1, c
            o = c["open"]
            assert o["from"] == "process start" and o["ms"] + 0.01 >= o["before_first_frame_ms"] + o["first_frame_ms"] > 0, o
            assert 0 < c["rss_mb"] <= c["peak_rss_mb"], c
            r = subprocess.run([app, "--bench-interaction", out, "--model", bare, "--bench-tokens", "65"],
                               env=env, capture_output=True, text=True, timeout=120)
            lines = [x for x in r.stderr.splitlines() if x.strip()]
            assert r.returncode == 2 and lines == ["error: --bench-tokens: 65 tokens, more than the model reads (64)"], \
                (r.returncode, r.stderr)
            print(f"  {d['state']['toast'][:60]}…; bench: open {o['ms']:.0f} ms from the start, edit → frame p50 "
                  f"{e['p50']:.1f} ms; {lines[0]}")

        def click_a_thumbnail():
            with App(app, display.name, ["--model", folder, "--size", "1280x800"]) as a:
                d = a.settled("the Layers tab", lambda d: "layer_2_head_1" in d["widgets"])
                a.find_window()
                w = d["widgets"]["layer_2_head_1"]
                a.click_at(w["x"] + w["w"] / 2, w["y"] + w["h"] / 2)
                d = a.settled("layer 3 head 2 selected",
                              lambda d: d["state"].get("model", {}).get("shown_layer") == 2 and d["state"]["head"] == 1)
                print(f"  clicked layer_2_head_1 at {w}: the views show layer {d['state']['model']['shown_layer']}, "
                      f"head {d['state']['head']}")
                # An earlier token's next tokens take no click, and a hovered one says why (a lecturer
                # clicked one after token 3: nothing happened, nothing said).
                chip = d["widgets"]["model_token_1"]
                a.click_at(chip["x"] + chip["w"] / 2, chip["y"] + chip["h"] / 2)
                d = a.settled("token 2 selected", lambda d: d["state"]["token"] == 1 and "model_next_0" in d["widgets"])
                tokens = d["state"]["model"]["tokens"]
                row = d["widgets"]["model_next_0"]
                a.move(row["x"] + row["w"] / 2, row["y"] + row["h"] / 2)
                d = a.settled("the row's tooltip", lambda d: "model_next_tooltip" in d["state"])
                said = d["state"]["model_next_tooltip"]
                assert "After token 2, not the text's end: select the last token" in said, said
                a.click_at(row["x"] + row["w"] / 2, row["y"] + row["h"] / 2)
                time.sleep(0.5)
                d = a.settled("after the click")
                assert d["state"]["model"]["tokens"] == tokens, "a next token of token 2 was appended"
                print(f"  token 2's next token: no click, its tooltip says why ({said.strip()[:50]}…)")

        def a_refused_model_keeps_its_dialog():
            # File › Open model… on the book's GPTModel without its heads (width 48): the model is read
            # after the dialog closed, so the refusal brought the user back to browsing. Now the
            # dialog comes back, the file still chosen, saying why (no toast besides); the heads
            # given there, Open opens it.
            book = os.path.join(tmp, "headless-book")
            os.makedirs(book, exist_ok=True)
            m48, _ = gm.tiny_model(3, vocab_size=VOCAB, emb_dim=48, n_heads=2)
            gm.save_safetensors(os.path.join(book, "book"), gm.book_state_dict(m48))
            chosen = os.path.join(book, "book.safetensors")
            cmds = write_commands(tmp, "open-model-dialog", [{"do": "dialog", "which": "open_model"}])
            # At 1280 × 720 and 200 % its list of 520 px had put the name, the heads, Open and Cancel
            # below the window's edge: the list gives way, the hint too while a refusal is shown.
            def whole(d, when):
                for name in ("file_folder", "file_name", "file_model_heads", "file_ok", "file_cancel"):
                    r = d["widgets"][name]
                    assert 0 <= r["y"] and r["y"] + r["h"] <= 720 + 0.5, f"{when}: {name} {r} outside 1280 × 720"
            with App(app, display.name, ["--commands", cmds, "--size", "1280x720", "--text-size", "200"]) as a:
                a.find_window()
                d = a.wait_for("the Open model dialog", lambda d: d["state"].get("file_dialog", {}).get("which") == "open_model"
                               and "file_name" in d["widgets"])
                time.sleep(0.5)  # fitted over its first frames
                whole(a.layout(), "the dialog")
                a.type_file_name(chosen)
                a.click("file_ok")
                d = a.wait_for("the dialog back with why", lambda d: "not a multiple of 64" in
                               (d["state"].get("file_dialog") or {}).get("message", "") and "file_ok" in d["widgets"])
                fd = d["state"]["file_dialog"]
                assert fd["which"] == "open_model" and fd["name"] == chosen, fd
                assert "multiple of 64" not in d["state"].get("toast", ""), d["state"].get("toast")
                assert d["state"].get("model") is None
                time.sleep(0.5)
                d = a.layout()
                whole(d, "the refusal")
                print(f"  refused: the dialog back on {fd['name']!r}, whole at 1280 × 720 / 200 %: {fd['message']!r}")
                r = d["widgets"]["file_model_heads"]  # the field, then −, +, and its label
                a.click_at(r["x"] + 20, r["y"] + r["h"] / 2)
                a.key("ctrl+a")
                a.type("2")
                a.wait_for("2 heads typed", lambda d: d["state"]["file_dialog"]["model_heads"] == 2)
                a.click("file_ok")
                d = a.settled("the model open", lambda d: d["state"].get("model") is not None)
                assert len(d["state"]["model"]["labels"]) == 3 * 2, d["state"]["model"]["labels"]
                assert not d["state"].get("file_dialog"), d["state"].get("file_dialog")
                print(f"  2 heads given in the dialog: opened, {len(d['state']['model']['labels'])} heads' labels")

        def the_module_card_names_the_layer():
            # The module's card over a trained model's concatenated heads names its layer, not the
            # chapter's step (it read "The module: 4b · Multi-head attention").
            d = run_commands(app, display.name, tmp, "module-card", [
                {"do": "text", "ids": list(range(40, 46))}, {"do": "select_layer", "layer": 1, "head": 0},
                {"do": "view", "field": "tab", "value": "heatmaps"},
                {"do": "view", "field": "columns", "value": ["weights", "concat", "out_proj", "output"]},
            ], "--model", folder, "--size", "1920x1080")
            heading = d["state"].get("card_heading_module")
            assert heading == f"Layer 2  ·  the module: its {HEADS} heads concatenated, out_proj", heading
            print(f"  the module's card: {heading!r}")

        def the_scores_table_with_many_heads():
            # 12 heads a layer: the thumbnails are as small in the whole tab as above the table (the
            # width bounds them), so the table is shown under them, not behind a button (at 1280 ×
            # 800 and 150 % two such layers took 117 of 725 px and the table was hidden).
            twelve = os.path.join(tmp, "twelve")
            os.makedirs(twelve, exist_ok=True)
            write_tokenizer(twelve)
            m12, c12 = gm.tiny_model(32, vocab_size=VOCAB, context_length=64, emb_dim=48, n_heads=12, n_layers=2,
                                     tied=True)
            gm.write_hf_folder(twelve, m12, c12, gm.save_safetensors)
            # Every column in view, no sideways scrolling, up to 1280 × 720 and 200 % (at 175 % it
            # scrolled the entropy out of view: each sortable header kept room for a sort arrow).
            for size, pct in (("1280x800", 150), ("1280x720", 175), ("1280x720", 200)):
                d = run_commands(app, display.name, tmp, f"twelve-{size}-{pct}", [{"do": "text", "ids": list(range(40, 70))}],
                                 "--model", twelve, "--size", size, "--text-size", str(pct))
                w = d["widgets"]
                assert "layers_scores" in w and "layers_swap" not in w, \
                    f"{size} {pct} %: the scores table {'shown' if 'layers_scores' in w else 'behind a button'}"
                grid, table = d["panels"]["layers_grid"], w["layers_scores"]
                assert table["y"] >= grid["y"] + grid["h"] - 0.5, (grid, table)
                scroll = d["state"]["layers_scores_scroll_x"]
                print(f"  {size} {pct} %: 2 × 12 thumbnails {grid['h']:.0f} px tall, the scores table under them "
                      f"{table['h']:.0f} px, {scroll:.0f} px to scroll sideways")
                assert scroll == 0, f"{size} {pct} %: the scores table scrolls {scroll:.0f} px sideways"
            # Sorting by a score moves no header where every column can keep the sort arrow's room
            # (1280 × 800 and 150 %): only the sorted one kept it, and a click on "induct" moved the
            # headers between it and the head's.
            with App(app, display.name, ["--model", twelve, "--size", "1280x800", "--text-size", "150",
                                         "--commands", write_commands(tmp, "twelve-sort", [
                                             {"do": "text", "ids": list(range(40, 70))}])]) as a:
                d = a.settled("the scores table", lambda d: "layers_header_5" in d["widgets"])
                a.find_window()
                before = {k: v for k, v in d["widgets"].items() if k.startswith("layers_header_")}
                induct = before["layers_header_5"]
                a.click_at(induct["x"] + induct["w"] / 2, induct["y"] + induct["h"] / 2)
                d = a.settled("sorted by induct", lambda d: d["state"].get("layers_sorted_column") == 5)
                after = {k: v for k, v in d["widgets"].items() if k.startswith("layers_header_")}
                moved = {k: (before[k]["x"], after[k]["x"]) for k in before
                         if k not in after or abs(after[k]["x"] - before[k]["x"]) > 0.5}
                assert len(before) == 7 and not moved, f"sorting by induct moved headers: {moved}"
                print(f"  sorted by induct at 1280x800 150 %: the {len(before)} headers stayed where they were")
            # A head chosen (a thumbnail's click) has its row of the head statistics brought into view:
            # a quarter of the column showed head 1 and half of head 2.
            d = run_commands(app, display.name, tmp, "twelve-statistics", [
                {"do": "text", "ids": list(range(40, 70))}, {"do": "select_layer", "layer": 1, "head": 8},
                {"do": "view", "field": "tab", "value": "heatmaps"}], "--model", twelve, "--size", "1280x800",
                "--text-size", "175")
            panel, row = d["panels"]["statistics"], d["widgets"]["statistics_head_h9"]
            assert panel["y"] < row["y"] and row["y"] + row["h"] <= panel["y"] + panel["h"], (panel, row)
            # … and its row of the Layers tab's scores table (a click on 2.4 had left 1.1–2.2 in view).
            d = run_commands(app, display.name, tmp, "twelve-table", [
                {"do": "text", "ids": list(range(40, 70))}, {"do": "select_layer", "layer": 1, "head": 8}],
                "--model", twelve, "--size", "1280x800", "--text-size", "150")
            table, row = d["widgets"]["layers_scores"], d["widgets"].get("layers_scores_chosen")
            assert row and table["y"] < row["y"] and row["y"] + row["h"] <= table["y"] + table["h"], (table, row)
            print(f"  head 9 chosen: its statistics row in view ({row['y']:.0f}–{row['y'] + row['h']:.0f} px of "
                  f"{panel['y']:.0f}–{panel['y'] + panel['h']:.0f})")

        def one_token_one_colour():
            # One token of the chapter: each map is one value. Its colorbar is that one colour and says
            # the value once (it was a gradient between "1" and "1", the cell in its middle colour).
            d = run_commands(app, display.name, tmp, "one-token", [
                *[{"do": "remove_token", "index": 1}] * 5, {"do": "view", "field": "tab", "value": "heatmaps"}],
                "--size", "1280x720", "--text-size", "150")
            weights = [h for h in d["heatmaps"] if h["id"].endswith("weights")]
            bars = [(h["colorbar"]["lo"], h["colorbar"]["once"], h["colorbar"]["hi"]) for h in weights]
            assert bars == [("", "1", "")] * 2, bars
            # The masked map's legend under its value, not over it (they read "−0.203masked").
            masked = [h for h in d["heatmaps"] if h["id"] == "b0h0masked_scores"][0]
            said_to = masked["colorbar"]["y0"] + 10 + d["state"]["font_px"]["cells"]  # the value's line ends
            assert masked["legend"]["y"] >= said_to, (masked["legend"], masked["colorbar"])
            png = np.asarray(Image.open(os.path.join(tmp, "one-token.png")).convert("RGB")).astype(int)
            bar = masked["colorbar"]  # in view (the weights are below the grid's fold)
            row = png[int(bar["y0"] + 4), int(bar["x0"] + 2):int(bar["x0"] + bar["width"] - 2)]
            spread = int((row.max(axis=0) - row.min(axis=0)).max())
            assert spread <= 2, f"the one-value map's colorbar is not one colour: channels spread by {spread}"
            # viridis' entry 128 (matplotlib's table): the colour of a one-value map's cells
            assert abs(row[0] - [33, 145, 140]).max() <= 12, f"the bar is not viridis' middle: {row[0].tolist()}"
            # A trained model's weights are coloured from 0, the masked zeros' value, as its thumbnails
            # are: one token's weight 1 is the top colour; with two tokens row 2 alone (0.45–0.55)
            # had made 0.0000 and 0.45 one colour.
            for ids in ([40], [40, 41]):
                d = run_commands(app, display.name, tmp, f"model-{len(ids)}-tokens", [
                    {"do": "text", "ids": ids}, {"do": "view", "field": "tab", "value": "heatmaps"}],
                    "--model", folder, "--size", "1280x720", "--text-size", "150")
                lows = [h["range"][0] for h in d["heatmaps"]]
                assert lows == [0.0] * HEADS, (ids, lows)
            print(f"  the chapter's one-token maps: colorbars one colour {row[0].tolist()} (spread {spread}), saying "
                  f"{bars[0][1]!r} once; a model's weights from 0 at 1 and 2 tokens")

        def given_maps_count_their_tokens():
            # Maps as they came: the Text panel's title counts their tokens and says nothing of a
            # model's context (they have none; it read "12 tokens, the model's whole context").
            maps = [[[[1, 0, 0], [0.5, 0.5, 0], [0.2, 0.3, 0.5]]]]
            d = run_commands(app, display.name, tmp, "given-title", [{"do": "attention", "maps": maps}],
                             "--size", "1280x800")
            assert d["state"]["model_text_title"] == "Text  ·  3 tokens", d["state"]["model_text_title"]
            print(f"  given maps: {d['state']['model_text_title']!r}")
            # A model's full context says so whole, in the longest form that fits ("…, the mod…" at
            # 150 % hid why Append and Repeat are off).
            for size, pct, want in (("1280x720", "100", "Text  ·  64 tokens, the whole context"),
                                    ("1280x720", "150", "Text  ·  64 tokens (full)")):
                d = run_commands(app, display.name, tmp, "full-title", [{"do": "text", "ids": list(range(64))}],
                                 "--model", folder, "--size", size, "--text-size", pct)
                assert d["state"]["model_text_title"] == want, (size, pct, d["state"]["model_text_title"])
            print("  a full context: 'Text  ·  64 tokens (full)' at 150 %, never cut")

        def heads_labelled_on_a_projector():
            # 12 × 12 heads over 13 tokens, each a previous-token head, a sink or even: at 1280 × 800
            # and 175 % (41-px thumbnails, too small for "induct") each labelled head shows its
            # letter, the line above the grid their key (it had shown no label at all); at 1920 ×
            # 1080 and 150 % the tags themselves.
            T = 13
            previous = [[1.0 if j == max(i - 1, 0) else 0.0 for j in range(T)] for i in range(T)]
            sink = [[1.0 if j == 0 else 0.0 for j in range(T)] for i in range(T)]
            even = [[1.0 / (i + 1) if j <= i else 0.0 for j in range(T)] for i in range(T)]
            kinds = [[(layer + head) % 3 for head in range(12)] for layer in range(12)]
            maps = [[(previous, sink, even)[k] for k in row] for row in kinds]
            labelled = sum(k < 2 for row in kinds for k in row)
            for size, pct, form in (("1280x800", "175", "letter"), ("1920x1080", "150", "tag"), ("1280x720", "200", "letter")):
                d = run_commands(app, display.name, tmp, f"labels-{pct}", [
                    {"do": "attention", "maps": maps, "tokens": [f"w{i % 6}" for i in range(T)]}],
                    "--size", size, "--text-size", pct)
                got, key = d["state"]["layers_labels"], d["state"]["layers_key"]
                assert got["form"] == form and got["shown"] == labelled, (size, pct, got)
                assert (key == "P prev · S sink · D dup · I induct") == (form == "letter"), (size, pct, key)
                # The maps' panel's Close whole in it (at 1280 × 720 and 200 % it stood half below).
                close, panel = d["widgets"]["model_close"], d["panels"]["model"]
                assert close["y"] + close["h"] <= panel["y"] + panel["h"], (size, pct, close, panel)
            print(f"  {labelled} of 144 heads labelled: letters at 1280 × 800 and 175 % and 1280 × 720 and 200 %, the "
                  "key above; tags at 1920 × 1080 and 150 %; Close whole in the maps' panel")

        def learn_tab_on_a_projector():
            # At 1280 × 720 and 200 %: a run's timeline (Follow, Pin, the step slider) is in view, above
            # the charts (under them it was below the fold), and the one score chart there is room
            # for is induction's. Without a run, the form is captured still (the tab bar's scroll to
            # Learn outlasted a capture's frames: "did not hold still") and Start is in a child that
            # scrolls.
            task = {"task": "induction", "layers": 2, "heads": 2, "steps": 40}
            d = run_commands(app, display.name, tmp, "learn-720-200", [
                {"do": "learn", "task": task}, {"do": "learn_to", "step": 20},
                {"do": "view", "field": "tab", "value": "learn"}], "--size", "1280x720", "--text-size", "200")
            main, timeline = d["panels"]["main"], d["widgets"]["learn_timeline"]
            assert timeline["y"] + timeline["h"] <= main["y"] + main["h"], f"the timeline {timeline} below {main}"
            assert d["state"].get("learn_score_shown") == "induction", d["state"].get("learn_score_shown")
            # The run's Heatmaps show each head's weights alone, as an opened model's do (they opened
            # on its scores and masked scores, the weights below the fold).
            d = run_commands(app, display.name, tmp, "learn-heatmaps", [
                {"do": "learn", "task": task}, {"do": "learn_to", "step": 20},
                {"do": "view", "field": "tab", "value": "heatmaps"}], "--size", "1280x800", "--text-size", "175")
            ids = sorted({h["id"] for h in d["heatmaps"]})
            assert ids and all(i.endswith("weights") and "dropped" not in i for i in ids), ids
            d = run_commands(app, display.name, tmp, "learn-form-720-200", [
                {"do": "view", "field": "tab", "value": "learn"}], "--size", "1280x720", "--text-size", "200")
            assert "learn_start" in d["widgets"], sorted(d["widgets"])[:20]
            print(f"  1280 × 720, 200 %: the timeline at y {timeline['y']:.0f} of {main['y'] + main['h']:.0f}, "
                  f"induction charted; the form held still")

        def the_pipeline_scrolls():
            # At 1280 × 800 and 150 % the Pipeline's last steps are below the main area's fold: the
            # wheel brings them up (it drew into the main window, which neither scrolled nor had a
            # scrollbar).
            commands = write_commands(tmp, "pipeline-scroll", [
                {"do": "text", "ids": list(range(40, 60))}, {"do": "view", "field": "tab", "value": "pipeline"}])
            with App(app, display.name, ["--model", folder, "--size", "1280x800", "--text-size", "150",
                                         "--commands", commands]) as a:
                d = a.settled("the Pipeline", lambda d: "pipeline_output" in d["widgets"])
                a.find_window()
                main, out = d["panels"]["main"], d["widgets"]["pipeline_output"]
                assert out["y"] + out["h"] > main["y"] + main["h"], f"out_proj in view already: {out} in {main}"
                x, y = main["x"] + main["w"] / 2, main["y"] + main["h"] / 2
                a.move(x, y)
                d = a.until(lambda _: a.xdotool("click", "--repeat", "8", "5"), "out_proj scrolled into view",
                            lambda d: d["widgets"]["pipeline_output"]["y"] + d["widgets"]["pipeline_output"]["h"]
                            <= main["y"] + main["h"])
                print(f"  out_proj at y {out['y']:.0f} below the fold ({main['y'] + main['h']:.0f}); the wheel brought "
                      f"it to {d['widgets']['pipeline_output']['y']:.0f}")

        def a_nul_in_the_text():
            # A NUL in the text (from a command) is shown in the field as ␀, and an edit of the field
            # gives it back as NUL: the field had shown "hel" and an edit sent "hel…", the rest gone.
            # A ␀ of the text's own stays one.
            for text, shown in (("hel\x00lo", "hel\u2400lo"), ("a\u2400b", "a\u2400b")):
                commands = os.path.join(tmp, "nul.json")
                with open(commands, "w") as f:
                    json.dump([{"do": "text", "value": text}], f)
                with App(app, display.name, ["--model", folder, "--size", "1280x800", "--commands", commands]) as a:
                    d = a.settled("the text", lambda d: d["state"].get("model", {}).get("text") == text)
                    assert d["state"]["model_field"] == shown, repr(d["state"]["model_field"])
                    a.find_window()
                    d = a.until(into_field(a, "x", "ctrl+End"), "the edited text read by the model",
                                lambda d: d["state"].get("model", {}).get("text") == text + "x",
                                again=lambda: a.key("Escape"))
                    print(f"  {text!r} shown as {shown!r}; typing x at its end gives the model "
                          f"{d['state']['model']['text']!r}")

        def emoji_kept():
            # ImGui holds 16-bit characters: an emoji in the text, typed or pasted became U+FFFD at the
            # first edit, and two NULs ended "… 🍕 … 🐶 says hello", which the model read. The field
            # edits them as stand-ins and gives them back (widgets/kept_text.h).
            start = "I love pizza \U0001F355 and my dog \U0001F436 says"
            commands = os.path.join(tmp, "emoji.json")
            with open(commands, "w") as f:
                json.dump([{"do": "text", "value": start}], f)
            with App(app, display.name, ["--model", folder, "--size", "1280x720", "--text-size", "150",
                                         "--commands", commands]) as a:
                a.settled("the text", lambda d: d["state"].get("model", {}).get("text") == start)
                a.find_window()
                a.until(into_field(a, " hello", "ctrl+End"), "a word typed after two emoji",
                        lambda d: d["state"].get("model", {}).get("text", start) != start, again=lambda: a.key("Escape"))
                # The emoji on its own: under load xdotool's remapped key for it can reach the window
                # as nothing at all (no character event), the text then unchanged, and typed again.
                typed = start + " hello\U0001F431"
                d = a.until(into_field(a, "\U0001F431", "ctrl+End"), "an emoji typed after two in the text",
                            lambda d: d["state"]["model"]["text"] != start + " hello", again=lambda: a.key("Escape"))
                assert d["state"]["model"]["text"] == typed, repr(d["state"]["model"]["text"])
                pasted = typed + " \U0001F408 cat"
                with Clipboard(display.name, " \U0001F408 cat"):
                    d = a.until(into_field(a, None, "ctrl+End"), "an emoji pasted", lambda d: d["state"]["model"]["text"] != typed,
                                again=lambda: a.key("Escape"))
                assert d["state"]["model"]["text"] == pasted, repr(d["state"]["model"]["text"])
                print(f"  typed and pasted beside two emoji: the model reads {d['state']['model']['text']!r}")

        def type_a_text():
            # The text is shown wrapped (a projector's view); a click makes it the field to type in.
            with App(app, display.name, ["--model", folder, "--size", "1280x720", "--text-size", "175"]) as a:
                a.settled("the text shown", lambda d: "model_text" in d["widgets"] and "model" in d["state"])
                a.find_window()
                typed = "hello world hello world hello world hello world hello world hello world"

                d = a.until(into_field(a, typed), "the typed text read by the model",
                            lambda d: d["state"].get("model", {}).get("text") == typed, again=lambda: a.key("Escape"))
                assert len(d["state"]["model"]["ids"]) >= 12, d["state"]["model"]
                d = a.settled("the text shown wrapped again", lambda d: "model_text_content" in d["widgets"])
                field, shown = d["widgets"]["model_text"], d["widgets"]["model_text_content"]
                assert shown["w"] <= field["w"] and shown["h"] >= 2 * 20, \
                    f"the text is not wrapped in its field: {shown} in {field}"
                print(f"  typed {len(typed)} characters: {len(d['state']['model']['ids'])} tokens; shown wrapped "
                      f"in {shown['h']:.0f} px of the field's {field['h']:.0f}")
                # "start with <|endoftext|>" wraps in the panel (it ran past its edge at 175 %), and a
                # click on its words sets it, as one on its box does.
                eot = d["widgets"]["model_eot"]
                assert eot["x"] + eot["w"] <= field["x"] + field["w"] + 1, f"the checkbox runs past the panel: {eot}"
                d = a.until(lambda attempt: a.click_at(eot["x"] + eot["w"] - 4, eot["y"] + eot["h"] / 2),
                            "<|endoftext|> first, by a click on the label",
                            lambda d: d["state"]["model"].get("prepend_eot") is True)
                assert d["state"]["model"]["ids"][0] == VOCAB - 1, d["state"]["model"]["ids"][:3]
                print(f"  a click on the checkbox's label at {eot}: the text starts with <|endoftext|>")
                # A text longer than the model reads, pasted: refused with its message, it stays in
                # the field, which says (after the toast has gone) that the views show the text before
                # it; "Back to the text shown" gives the field that text again.
                shown_text, ids = d["state"]["model"]["text"], d["state"]["model"]["ids"]
                long_text = "hello world " * 40

                paste = into_field(a)
                with Clipboard(display.name, long_text):
                    d = a.until(paste, "the long text refused",
                                lambda d: d["state"].get("model_text_refused") and "model_text_restore" in d["widgets"],
                                again=lambda: a.key("Escape"))
                assert d["state"]["model_field"] == long_text and d["state"]["model"]["ids"] == ids, \
                    (d["state"]["model_field"][:40], d["state"]["model"]["ids"][:5])
                panel, restore = d["panels"]["inputs"], d["widgets"]["model_text_restore"]
                assert restore["y"] + restore["h"] <= panel["y"] + panel["h"] + 0.5, \
                    f"the refusal's button below the fold: {restore} in {panel}"
                # The next tokens keep their button and first rows in view beside the refusal: three,
                # two where the heading wraps to name its token ("Ġworld" at 175 %).
                rows = 2 if d["state"]["model_next_heading_wraps"] else 3
                for name in ("model_append", *(f"model_next_{i}" for i in range(rows))):
                    w = d["widgets"][name]
                    assert w["y"] + w["h"] <= panel["y"] + panel["h"] + 0.5, \
                        f"{name} below the fold while a text is refused: {w} in {panel}"
                why = d["state"]["model_text_refusal"]
                assert re.fullmatch(r"text: \d+ tokens, more than the model reads \(64\)", why), why
                # Appending would replace the refused text with the session's: no appending meanwhile,
                # and a click on the button leaves the field and the text as they are.
                assert d["state"]["model_append_enabled"] is False, "Append is offered over a refused text"
                a.click("model_append")
                time.sleep(0.5)
                d = a.layout()
                assert d["state"]["model_field"] == long_text and d["state"]["model"]["ids"] == ids, \
                    ("a click on Append over a refused text", d["state"]["model_field"][:40], d["state"]["model"]["ids"][-3:])
                d = a.until(lambda _: a.click("model_text_restore"), "the text shown back in the field",
                            lambda d: d["state"]["model_field"] == shown_text and not d["state"]["model_text_refused"])
                assert d["state"]["model_append_enabled"] is True, "Append still off with the text shown back"
                print(f"  {len(long_text)} characters pasted: refused, kept in the field and said so; "
                      f"'Back to the text shown' restored {shown_text[:20]!r}…")
                # Pasted again: "Keep the first 63 tokens" (the model reads 64, <|endoftext|> first)
                # in view beside the refusal; a click gives the model the text up to there.
                with Clipboard(display.name, long_text):
                    d = a.until(paste, "the long text refused again",
                                lambda d: d["state"].get("model_text_refused") and "model_text_keep_head" in d["widgets"],
                                again=lambda: a.key("Escape"))
                keep = d["widgets"]["model_text_keep_head"]
                assert keep["y"] + keep["h"] <= panel["y"] + panel["h"] + 0.5 and keep["x"] + keep["w"] <= \
                    panel["x"] + panel["w"] + 0.5, f"Keep below the fold or past the panel: {keep} in {panel}"
                d = a.until(lambda _: a.click("model_text_keep_head"), "the text's first tokens read",
                            lambda d: len(d["state"]["model"]["ids"]) == 64 and not d["state"]["model_text_refused"])
                m = d["state"]["model"]
                assert m["ids"][0] == VOCAB - 1 and long_text.startswith(m["text"]) and len(m["text"]) > 100, m
                assert d["state"]["model_field"] == m["text"], (d["state"]["model_field"][:40], m["text"][:40])
                print(f"  pasted again, 'Keep the first 63 tokens': the model reads {m['text'][:24]!r}… "
                      f"({len(m['text'])} characters, 64 tokens with <|endoftext|>)")

        def typing_while_presenting():
            # Presented (F10), the column beside the grid has the text's field: a lecturer had to
            # leave the presentation to type a new sentence. A click, typing and Enter give the model
            # the text; a refused one is held there with its note and "Back", as in the Text panel.
            commands = os.path.join(tmp, "presenting.json")
            with open(commands, "w") as f:
                json.dump([{"do": "text", "value": "hello world"},
                           {"do": "view", "field": "presentation", "value": True}], f)
            state = os.path.join(tmp, "presenting-state")
            with App(app, display.name, ["--model", folder, "--size", "1280x720", "--text-size", "150",
                                         "--commands", commands], state_dir=state) as a:
                d = a.settled("the field beside the grid",
                              lambda d: d["state"].get("layers_text_beside") and "model_text" in d["widgets"] and
                              d["state"].get("model", {}).get("text") == "hello world")
                a.find_window()
                typed = "world hello world hello"

                d = a.until(into_field(a, typed), "the text typed beside the grid read by the model",
                            lambda d: d["state"].get("model", {}).get("text") == typed, again=lambda: a.key("Escape"))
                assert d["state"]["layers_text_beside"] is True and "inputs" not in d["panels"], \
                    "typing left the presentation"
                d = a.settled("the next tokens after the typed text",
                              lambda d: f"“{d['state']['model']['tokens'][-1]}”" in d["state"].get("model_next_heading", ""))
                # The mouse left where it clicked shows no tooltip: the field's hint had covered the
                # first row of tokens the audience was reading.
                assert "tooltip" not in d["panels"], f"a tooltip over the column after typing: {d['panels']['tooltip']}"
                print(f"  typed beside the grid: the model reads {typed!r} "
                      f"({len(d['state']['model']['ids'])} tokens), still presented, no tooltip over it")
                # Nor after Append (its tooltip had covered the next tokens); moved, the mouse has it.
                n = len(d["state"]["model"]["ids"])
                a.until(lambda _: a.click("model_append"), "a token appended beside the grid",
                        lambda d: len(d["state"]["model"]["ids"]) == n + 1)
                d = a.settled("the next tokens after the appended token", lambda d: "model_next_0" in d["widgets"])
                assert "tooltip" not in d["panels"], f"a tooltip after Append: {d['panels']['tooltip']}"
                r = d["widgets"]["model_append"]
                a.move(r["x"] + r["w"] / 2 + 8, r["y"] + r["h"] / 2)
                a.wait_for("Append's tooltip once the mouse moves", lambda d: "tooltip" in d["panels"])
                typed = d["state"]["model"]["text"]

                paste = into_field(a)
                long_text = "hello world " * 40
                with Clipboard(display.name, long_text):
                    d = a.until(paste, "the long text refused beside the grid",
                                lambda d: d["state"].get("model_text_refused") and "model_text_restore" in d["widgets"],
                                again=lambda: a.key("Escape"))
                beside = d["panels"]["layers_beside"]
                for k in ("model_text", "model_text_restore", "model_append", "model_next_0"):
                    r = d["widgets"][k]
                    assert r["y"] + r["h"] <= beside["y"] + beside["h"] + 0.5 and \
                        r["x"] + r["w"] <= beside["x"] + beside["w"] + 0.5, f"{k} {r} not in the column {beside}"
                assert d["state"]["model"]["text"] == typed and d["state"]["model_append_enabled"] is False, \
                    (d["state"]["model"]["text"], d["state"]["model_append_enabled"])
                d = a.until(lambda _: a.click("model_text_restore"), "the text shown back in the column's field",
                            lambda d: d["state"]["model_field"] == typed and not d["state"]["model_text_refused"])
                assert d["state"]["model_append_enabled"] is True, "Append still off with the text shown back"
                # Typed there and not applied, the text is the user's work: the autosave keeps it (it
                # had kept only what the Text panel held), and none once given up.
                deadline = time.time() + 30
                while autosaved_draft(state) is not None:
                    assert time.time() < deadline, f"the autosave keeps a text given up: {autosaved_draft(state)!r}"
                    time.sleep(0.2)

                def type_only(attempt):
                    a.click("model_text")
                    time.sleep(0.2 * attempt)
                    a.key("ctrl+a")
                    a.type("hello hello")
                a.until(type_only, "a text typed beside the grid, not applied",
                        lambda d: d["state"].get("model_field") == "hello hello" or
                        autosaved_draft(state) == "hello hello")
                deadline = time.time() + 30
                while autosaved_draft(state) != "hello hello":
                    assert time.time() < deadline, f"the autosave lacks the text typed: {autosaved_draft(state)!r}"
                    time.sleep(0.2)
                print(f"  {len(long_text)} characters pasted beside the grid: refused and held there, said so; "
                      "Back gave the field the model's text; a text typed there and not applied autosaved")

        def typed_text_survives_a_kill():
            # Text typed into the field and not applied (no Enter) is the user's work: the autosave
            # keeps it, and after a kill the next start shows it in the field, held and said so,
            # the model at its applied text; Enter then applies it as it is.
            state = os.path.join(tmp, "draft-state")
            typed = "hello hello world"

            def draft():
                return autosaved_draft(state)
            with App(app, display.name, ["--model", folder, "--size", "1280x800"], state_dir=state) as a:
                d = a.settled("the text shown", lambda d: "model_text" in d["widgets"] and "model" in d["state"])
                applied = d["state"]["model"]["ids"]
                a.find_window()

                def act(attempt):
                    a.click("model_text")
                    time.sleep(0.2 * attempt)
                    a.key("ctrl+a")
                    a.type(typed)
                a.until(act, "the text typed", lambda d: d["state"].get("model_field") == typed or draft() == typed)
                deadline = time.time() + 30
                while draft() != typed:
                    assert time.time() < deadline, f"the autosave never held the typed text: {draft()!r}"
                    time.sleep(0.2)
                a.close(signal.SIGKILL)
            with App(app, display.name, ["--size", "1280x800"], state_dir=state) as a:
                d = a.settled("the typed text back in the field",
                              lambda d: d["state"].get("model") is not None and d["state"].get("model_text_restored"))
                assert d["state"]["model_field"] == typed and d["state"]["model"]["ids"] == applied, \
                    (d["state"]["model_field"], d["state"]["model"]["ids"])
                assert "typed and not applied" in d["state"]["toast"], d["state"]["toast"]
                assert d["state"]["model_append_enabled"] is False, "Append is offered over a text not applied"
                a.find_window()
                # Another layer keeps what the field holds (it had put the model's text in its place).
                slider = d["widgets"]["model_layer"]
                d = a.until(lambda _: a.click_at(slider["x"] + slider["w"] - 6, slider["y"] + slider["h"] / 2),
                            "another layer", lambda d: d["state"]["model"]["layer"] > 0)
                d = a.settled("the layer shown", lambda d: d["state"]["model"]["layer"] > 0)
                assert d["state"]["model_field"] == typed and d["state"]["model_text_restored"], \
                    ("another layer took the field's text", d["state"]["model_field"])

                def enter(attempt):
                    a.click("model_text")
                    time.sleep(0.2 * attempt)
                    a.key("Return")
                d = a.until(enter, "the restored text applied by Enter, unedited",
                            lambda d: d["state"].get("model", {}).get("text") == typed, again=lambda: a.key("Escape"))
                assert not d["state"]["model_text_restored"], "still held once applied"
                deadline = time.time() + 30
                while draft() is not None:
                    assert time.time() < deadline, f"the autosave still holds a draft once applied: {draft()!r}"
                    time.sleep(0.2)
                print(f"  {typed!r} typed without Enter, killed: back in the field, held ({d['state']['toast'][:60]!r}…), "
                      f"Enter applied it ({len(d['state']['model']['ids'])} tokens)")

        return run_checks([("the layer and the next tokens are torch's", layer_and_next_tokens),
                           ("a click on the wrapped text, then typing", type_a_text),
                           ("typing while presenting", typing_while_presenting),
                           ("text typed and not applied survives a kill", typed_text_survives_a_kill),
                           ("a NUL in the text is shown and kept", a_nul_in_the_text),
                           ("an emoji typed, pasted or in the text is kept", emoji_kept),
                           ("a token label with ## is drawn; Ġ said", hashes_drawn),
                           ("a layer's maps fit a projector and say which", a_layers_maps_fit_and_say_which),
                           ("the next tokens in view on a projector", the_next_tokens_in_view_on_a_projector),
                           ("the next tokens presented", the_next_tokens_presented),
                           ("the next tokens whole on a projector", the_next_tokens_whole_on_a_projector),
                           ("a model's notes wrapped", a_models_notes_wrapped),
                           ("the model panel as tall as its row", the_model_panel_as_tall_as_its_row),
                           ("the temperature's number uncovered", the_temperatures_number_uncovered),
                           ("append the top token, repeat the text", append_and_repeat),
                           ("a wide model's maps keep their size", a_wide_models_maps_keep_their_size),
                           ("the selected token's chip in view", the_selected_tokens_chip_in_view),
                           ("a failed pass says why", a_failed_pass_says_why),
                           ("an edit reuses the rows before it", an_edit_reuses_the_rows_before_it),
                           ("the chapter's work is set aside, not edited", chapter_work_set_aside),
                           ("--model on a file that is no model", bad_model_path),
                           ("no tokenizer; --bench-interaction --model", bench_without_tokenizer),
                           ("a trained text's model takes text", a_trained_texts_model_takes_text),
                           ("a workspace keeps its model", a_workspace_keeps_its_model),
                           ("a click on a thumbnail", click_a_thumbnail),
                           ("a refused model keeps its dialog", a_refused_model_keeps_its_dialog),
                           ("the pipeline scrolls", the_pipeline_scrolls),
                           ("the module's card names the layer", the_module_card_names_the_layer),
                           ("the scores table with 12 heads a layer", the_scores_table_with_many_heads),
                           ("one token, one colour", one_token_one_colour),
                           ("given maps count their tokens", given_maps_count_their_tokens),
                           ("heads labelled on a projector", heads_labelled_on_a_projector),
                           ("the Learn tab on a projector", learn_tab_on_a_projector)])


if __name__ == "__main__":
    sys.exit(main())
