"""The Learn tab (docs/DESIGN.md §3.9) as a learner drives it, under Xvfb through the channel:

- `learn` the induction task, `learn_step` N (the next command waits for those steps): every
  layer's heads' maps the views show (Export trace of each layer) equal the probe's attention
  weights of the same model trained N steps by Debian's torch — the script `attnscope-cli
  pytorch-train` writes, its model, optimizer and batches stepped here — within 1e-5, and so do
  the scores the Layers tab measures on them;
- `learn_show` 0 scrubs back: the maps of the untrained model; −1 follows the newest again;
- the Learn tab is drawn: its loss curve's colour on screen;
- refusals (a bad task names its field, a step with no run, an edit of the chapter's workspace
  while the run shows) change nothing; File › Close model ends the run and gives the workspace back.

Usage: test_learn.py APP CLI ASSETS
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
from PIL import Image

from gui_common import Fail, Xvfb, channel_refused, check, isolated_env, quit_channel_app, temp_folder, workspace_as_before

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
import attnscope  # noqa: E402
import torch_training  # noqa: E402

# Fewer steps in the sanitizer build (tests/sanitizers/ctest-asan), several times slower.
STEPS = 40 if os.environ.get("ATTNSCOPE_SANITIZE") else 200
TASK = {"task": "induction", "steps": 1500, "batch": 16}
LOSS_COLOUR = np.array([120, 180, 255])  # the loss curve's mean (panels/learn_view.cpp)


TASK_LR = 1e-3  # the induction task's default


def torch_model(cli, folder, steps):
    return torch_maps(cli, folder, steps)[2]


def torch_maps(cli, folder, steps):
    """The probe's weights [L, H, T, T] after `steps` steps of the task, by torch; the script; the model."""
    script = torch_training.script_of(cli, folder, TASK)
    model, _ = torch_training.train(script, steps)
    return np.stack([w.numpy() for w in torch_training.probe_weights(script, model)]), script, model


def shown_maps(folder, layers):
    out = []
    for layer in range(layers):
        where = os.path.join(folder, f"export-{layer}")
        attnscope.command([{"do": "select_layer", "layer": layer, "head": 0},
                           {"do": "export_trace", "path": where, "format": "json"}])
        with open(os.path.join(where, "attention.json")) as f:
            out.append(json.load(f))
    return out


def check_maps(folder, want, script, what):
    got = shown_maps(folder, want.shape[0])
    worst = 0.0
    for layer, exported in enumerate(got):
        for head in exported["heads"]:
            w = np.array(head["weights"], dtype=np.float32)
            err = float(np.abs(w - want[layer, head["head"]]).max())
            worst = max(worst, err)
            check(err <= 1e-5, f"{what}: layer {layer} head {head['head']} is off torch's by {err:.3g}")
            ids = script["probe"]()
            previous, induction, first = script["head_scores"](torch.tensor(want[layer, head["head"]]), ids)
            check(abs(head["scores"]["previous_token"] - previous) <= 1e-4 and
                  abs(head["scores"]["induction"] - induction) <= 1e-4 and
                  abs(head["scores"]["first_token"] - first) <= 1e-4,
                  f"{what}: layer {layer} head {head['head']} scores {head['scores']} vs torch's "
                  f"{previous, induction, first}")
    print(f"{what}: {got[0]['title']!r}, every head's maps within {worst:.2g} of torch's")
    return got


def refused(commands, words, what):
    channel_refused(attnscope, commands, words, what)


def main():
    app, cli, _assets = sys.argv[1:4]
    folder = temp_folder("attnscope-learn-")
    with Xvfb() as x11:
        env = isolated_env(x11.display)
        env.update(ATTNSCOPE_APP=app, ATTNSCOPE_CLI=cli, ATTNSCOPE_CHANNEL=os.path.join(folder, "channel"))
        os.environ.update(env)
        try:
            before = os.path.join(folder, "before.json")
            attnscope.command({"do": "save", "path": before})  # starts the app: the chapter's example
            refused({"do": "learn_step"}, "no model is training", "a step with no run")
            refused({"do": "learn", "task": {"task": "chess"}}, "task.task: unknown task", "an unknown task")
            refused({"do": "learn", "task": {"task": "induction", "layers": 0}}, "task.layers", "no layers")

            attnscope.command([{"do": "learn", "task": TASK}, {"do": "learn_step", "steps": STEPS}])
            want, script, _ = torch_maps(cli, folder, STEPS)
            got = check_maps(folder, want, script, f"after {STEPS} steps")
            check(got[0]["title"] == f"induction run, step {STEPS}", f"the title: {got[0]['title']}")

            attnscope.command({"do": "learn_show", "step": 0})
            check_maps(folder, torch_maps(cli, folder, 0)[0], script, "scrubbed back to step 0")
            attnscope.command({"do": "learn_show", "step": -1})
            check(shown_maps(folder, 1)[0]["title"].endswith(f"step {STEPS}"), "following the newest again")

            refused({"do": "set", "field": "d_out", "value": 4}, "read only", "an edit while the run shows")
            # Saved as it is: the state_dict of the model torch trained as many steps.
            saved = os.path.join(folder, "trained.npz")
            attnscope.command({"do": "learn_save", "path": saved})
            trained = torch_model(cli, folder, STEPS)
            with np.load(saved) as arrays:
                worst = max(float(np.abs(arrays[name] - p.numpy()).max()) for name, p in trained.state_dict().items())
            check(worst <= 1e-3 * TASK_LR * STEPS, f"the saved model is off torch's by {worst:.3g}")
            refused({"do": "learn_save", "path": os.path.join(folder, "trained.bin")}, ".npz, .safetensors, .pth or .pt",
                    "a .bin")
            # As .safetensors or .pth it says its heads (metadata n_head): opened again, the model has
            # the run's heads, not width / 64 (a 2-head run reopened as 1 head a layer).
            for kind in ("safetensors", "pth"):
                saved_as = os.path.join(folder, "trained." + kind)
                attnscope.command({"do": "learn_save", "path": saved_as})
                traced = subprocess.run([cli, "model-trace", saved_as, "--ids", "1,2,3"], capture_output=True,
                                        text=True, timeout=60)
                check(traced.returncode == 0, f"model-trace of the saved .{kind}: {traced.stderr.strip()}")
                heads, want_heads = json.loads(traced.stdout)["heads_per_layer"], trained.trf_blocks[0].att.num_heads
                check(heads == want_heads, f"the saved .{kind} reopens with {heads} heads, the run had {want_heads}")
            print(f"learn_save: the state_dict torch's {STEPS} steps reach, within {worst:.2g}")
            shot = os.path.join(folder, "learn.png")
            attnscope.command([{"do": "view", "field": "tab", "value": "learn"},
                               {"do": "screenshot", "path": shot}])
            image = np.asarray(Image.open(shot).convert("RGB")).astype(int)
            curve = int((np.abs(image - LOSS_COLOUR).sum(axis=2) < 40).sum())
            check(curve > 20, f"the Learn tab's loss curve: {curve} pixels of its colour")
            print(f"the Learn tab is drawn: {curve} pixels of the loss curve")

            attnscope.command({"do": "model_close"})
            refused({"do": "learn_step"}, "no model is training", "a step once the run ended")
            workspace_as_before(attnscope, folder, before, "File › Close model, ending the run,")
        finally:
            quit_channel_app(attnscope)
    print("all checks passed")


if __name__ == "__main__":
    try:
        main()
    except Fail as e:
        sys.exit(f"FAIL: {e}")
