"""A trained model's maps on a projector, as large as the tab allows (docs/DESIGN.md §3.4).

The model is a random GPTModel in Hugging Face's GPT-2 layout (tests/oracle/gpt_models.py, made
with Debian's torch) of 2 layers and 4 heads 64 wide, as GPT-2's are, so that a head's context and
Q of a short text are wider than the text is long; test_model_view's small byte-level vocabulary.

Interactive (xdotool): Q's tooltip at a column past the six tokens (reading a token there crashed).
Usage: test_model_fit.py APP CLI ASSETS_DIR
"""
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
import gpt_models as gm  # noqa: E402
from test_model_view import write_tokenizer  # noqa: E402
from test_teaching import App, Display, run_checks, write_commands  # noqa: E402

LAYERS, HEADS, WIDTH = 2, 4, 256  # heads 64 wide


def make_model(folder):
    os.makedirs(folder, exist_ok=True)
    vocab = write_tokenizer(folder)
    model, cfg = gm.tiny_model(7, vocab_size=vocab, context_length=64, emb_dim=WIDTH, n_heads=HEADS,
                               n_layers=LAYERS, tied=True)
    gm.write_hf_folder(folder, model, cfg, gm.save_safetensors)


def checks(app, tmp):
    folder = os.path.join(tmp, "gpt")
    make_model(folder)
    with Display() as display:
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
                gui.move(q["cells"]["x"] + (col + 0.5) * q["cell"], q["cells"]["y"] + 0.5 * q["cell"])
                d = gui.wait_for("Q's tooltip at column 20",
                                 lambda d: d["state"].get("tooltip", {}).get("map") == q["id"]
                                 and d["state"]["tooltip"]["col"] == col)
                text = d["state"]["tooltip"]["text"]
                assert text.startswith(f"q1[{col}] = "), text
                print(f"  Q's column {col} of 6 tokens: {text.splitlines()[0]!r}")

        return run_checks([("Q's tooltip past the tokens", a_dimension_past_the_tokens)])


def main():
    app = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="attnscope-model-fit-")
    try:
        return checks(app, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
