"""Attention maps as they are (docs/DESIGN.md §3.8): under Xvfb, from a learner's notebook.

- attnscope.capture(model, ids) runs the book's GPTModel in Debian's torch and the app shows every
  layer's and head's weights exactly as torch computed them (Export trace's attention.json, float32
  sent as bits: no difference at all), with each head's scores within 1e-5 of their definitions
  applied to torch's weights, and its label as those give it;
- show_attention takes a Hugging Face-style tuple of [1, H, T, T] maps: a head that attends to the
  previous token is labelled so, a uniform causal head's attention sink is the mean of 1/(i + 1);
- what maps as they came cannot do is refused in one line and changes nothing: a text, an edit of
  the chapter's workspace, a next token, a pin, a CSV export, maps with a negative weight, maps
  that are not square;
- the notebook's inline picture is the layers panel (PNG with a weight of 1.0 drawn);
- File › Close model gives the chapter's workspace back as it was.

Usage: test_given_attention.py APP CLI ASSETS
"""
import io
import json
import os
import sys

import numpy as np
import torch
from PIL import Image

from gui_common import Fail, Xvfb, channel_refused, check, isolated_env, quit_channel_app, temp_folder, workspace_as_before

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import attnscope  # noqa: E402
import gpt_models as gm  # noqa: E402

VIRIDIS_TOP = np.array([253, 231, 37])  # assets/colormaps/viridis.csv's last row


def exported_layer(folder, layer):
    """The app's attention.json of one layer (select_layer, then Export trace as json)."""
    out = os.path.join(folder, f"export-{layer}")
    attnscope.command([{"do": "select_layer", "layer": layer, "head": 0},
                       {"do": "export_trace", "path": out, "format": "json"}])
    with open(os.path.join(out, "attention.json")) as f:  # export_trace waits for the layer's result
        return json.load(f)


def refused(commands, words, what):
    channel_refused(attnscope, commands, words, what)


def check_captured(folder, ids):
    model, _cfg = gm.tiny_model(5, vocab_size=40, context_length=24, emb_dim=32, n_heads=4, n_layers=2)
    tokens = [f"w{i}" for i in ids]  # the same id, the same name: the app's scores see the same tokens
    out = attnscope.capture(model, torch.tensor([ids]), tokens=tokens, title="tiny GPTModel")
    want_w, want_logits = gm.torch_run(model, ids)
    check(np.array_equal(out[0].numpy(), want_logits), "capture returns what the model returned")
    worst_score = 0.0
    labels = set()
    for layer in range(want_w.shape[0]):
        got = exported_layer(folder, layer)
        check(got["tokens"] == tokens and got["title"] == "tiny GPTModel" and got["layer"] == layer,
              f"layer {layer}: the export's tokens, title and layer")
        check(len(got["heads"]) == want_w.shape[1], f"layer {layer}: {len(got['heads'])} heads")
        for head in got["heads"]:
            h = head["head"]
            w = np.array(head["weights"], dtype=np.float32)
            check(np.array_equal(w, want_w[layer, h]),
                  f"layer {layer} head {h}: the weights shown differ from torch's by "
                  f"{np.abs(w - want_w[layer, h]).max():.3g}")
            want = gm.expected_scores(want_w[layer, h], ids)
            for key, value in want.items():
                worst_score = max(worst_score, abs(head["scores"][key] - value))
                check(abs(head["scores"][key] - value) <= 1e-5,
                      f"layer {layer} head {h}: {key} {head['scores'][key]} where torch's weights give {value}")
            label = gm.expected_label(want, ids)
            check(label == "unsure" or head["label"] == label,
                  f"layer {layer} head {h}: label {head['label']} where its scores give {label}")
            labels.add(head["label"])
    print(f"capture: {want_w.shape[0]} layers × {want_w.shape[1]} heads over T = {len(ids)} as torch computed them, "
          f"scores within {worst_score:.2g}, labels {sorted(map(str, labels))}")


def check_given_maps(folder):
    T, H = 8, 2  # labels need 8 tokens (lm/head_scores.h kLabelMinTokens)
    previous = torch.zeros(T, T)
    previous[0, 0] = 1.0
    for i in range(1, T):
        previous[i, i - 1] = 1.0
    uniform = torch.tril(torch.ones(T, T))
    uniform /= uniform.sum(dim=1, keepdim=True)
    layer0 = torch.stack((previous, uniform))[None]  # [1, H, T, T]: batch element 0 of output_attentions
    layer1 = torch.stack((uniform, previous))[None]
    shown = attnscope.show_attention((layer0, layer1))
    check(repr(shown) == f"<attnscope.ShownAttention 2 layers × {H} heads, {T} tokens>", repr(shown))
    got = exported_layer(folder, 0)
    check(got["tokens"] == [f"t{i + 1}" for i in range(T)], f"unnamed tokens: {got['tokens']}")
    head0, head1 = got["heads"]
    check(head0["label"] == "previous_token" and abs(head0["scores"]["previous_token"] - 1.0) < 1e-6,
          f"a previous-token head: {head0['label']} {head0['scores']}")
    sink = float(np.mean([1.0 / (i + 1) for i in range(T)]))
    check(abs(head1["scores"]["first_token"] - sink) < 1e-6 and head1["scores"]["duplicate_token"] is None,
          f"a uniform causal head: {head1['scores']} (sink {sink})")
    check(exported_layer(folder, 1)["heads"][1]["label"] == "previous_token", "layer 1's head 1 is the previous one")
    print(f"show_attention: a tuple of [1, {H}, {T}, {T}] maps, a previous-token head labelled so, "
          f"the uniform head's sink {head1['scores']['first_token']:.4f}")

    # The notebook's inline picture: the layers panel, weights of 1.0 in viridis' top colour.
    image = np.asarray(Image.open(io.BytesIO(shown._repr_png_())).convert("RGB")).astype(int)
    top = int((np.abs(image - VIRIDIS_TOP).sum(axis=2) < 30).sum())
    check(image.shape[1] >= 600 and top > 50, f"the inline picture: {image.shape}, {top} pixels of weight 1.0")
    print(f"the inline picture: {image.shape[1]} × {image.shape[0]}, {top} pixels of weight 1.0")

    # What maps as they came cannot do: one line each, nothing changes.
    refused({"do": "text", "value": "Hello"}, "as they are", "a text")
    refused({"do": "set", "field": "d_out", "value": 4}, "read only", "an edit of the chapter's workspace")
    refused({"do": "append_token"}, "no next tokens", "a next token")
    refused({"do": "pin"}, "nothing to compare", "a pin")
    refused({"do": "export_trace", "path": os.path.join(folder, "csv"), "format": "csv"}, "json", "a CSV export")
    refused({"do": "attention", "maps": [[[1.0, 0.0], [0.5, -0.5]]]}, "negative", "a negative weight")
    refused({"do": "attention", "maps": [[[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]]}, "[heads, T, T]", "maps not square")
    try:
        attnscope.show_attention(layer0, tokens=["a", "b"])
        raise Fail("two names for seven tokens were taken")
    except attnscope.ModuleError as e:
        print(f"refused (too few names, in the notebook): {e}")
    check(exported_layer(folder, 1)["heads"][1]["weights"] == previous.tolist(), "a refusal changed the maps shown")


def main():
    app, cli, _assets = sys.argv[1:4]
    folder = temp_folder("attnscope-given-")
    with Xvfb() as x11:
        env = isolated_env(x11.display)
        env.update(ATTNSCOPE_APP=app, ATTNSCOPE_CLI=cli, ATTNSCOPE_CHANNEL=os.path.join(folder, "channel"))
        os.environ.update(env)
        try:
            before = os.path.join(folder, "before.json")
            attnscope.command({"do": "save", "path": before})  # starts the app: the chapter's example
            first = [7, 3, 11, 3, 29, 5, 17, 2, 31]
            check_captured(folder, first + first)  # repeated: duplicate and induction scores are defined
            # Two tokens six times: an even head's duplicate score is a row's earlier copies over the
            # i + 1 keys a causal map's row sees (over all T, as any model's maps, it was lower, and
            # the same heads were labelled where the model's own pass gave them no label).
            check_captured(folder, [7, 3] * 6)
            check_given_maps(folder)
            attnscope.command({"do": "model_close"})
            workspace_as_before(attnscope, folder, before, "File › Close model")
        finally:
            quit_channel_app(attnscope)
    print("all checks passed")


if __name__ == "__main__":
    try:
        main()
    except Fail as e:
        sys.exit(f"FAIL: {e}")
