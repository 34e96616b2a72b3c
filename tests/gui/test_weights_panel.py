"""The Weights tab (docs/DESIGN.md §3.4) and pasted state_dicts (item 2).

Expected numbers come from Debian's torch (/usr/bin/python3): the seed classes built as the notebook
builds them (torch.manual_seed, the constructor), the edited value put into the state_dict and
loaded with load_state_dict(…, strict=False), the module run on the app's inputs; compared with the
app's `state.trace` (1e-5) and, for the parameters, bit for bit.

- set_parameter on the book's MultiHeadAttention (W_query.weight[0, 1] and out_proj.bias[0]): the
  workspace's "parameters" are torch's seeded tensors with those values, the output is torch's; the
  Weights tab lists the five tensors with the two marked as the user's, every cell a widget.
- reset_parameters: no parameters, torch's seeded output (the notebook's [[0.3190, 0.4858], …]);
  undo brings them back.
- save, then open in a new run: the parameters and the output come back.
- The wrapper: heads.1.W_value.weight edited, torch's output; with the head selector on head 2 the
  tab shows heads.1 only.
- A shape edit they do not fit (d_out 4) is refused with what to do; Simple attention's tab says why
  it has no weights.
- Paste parameters: torch's print(m.state_dict()) of a CausalAttention on the X clipboard (xclip),
  {"do": "paste_parameters"}: the printed values (mask left out) and torch's output with them.
- The mouse (xdotool, a running app): the Weights tab by a click, Ctrl+click into W_key.weight[1, 2]
  and 0.75 typed (torch's output with it), a click on "Back to the seeded initialization".

Usage: test_weights_panel.py --app APP --cli CLI --presets PRESETS_DIR
"""
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
from test_paste_embeddings import Clipboard  # noqa: E402
from test_teaching import (STEP_TIMEOUT, Display, arguments, preset_copy, run_checks, run_commands,  # noqa: E402
                           start_ready, write_commands)

import torch  # noqa: E402
from oracle_common import load_seed_classes  # noqa: E402
from torch_trace import construct  # noqa: E402

SC = load_seed_classes()
WEIGHTS_TAB = {"do": "view", "field": "tab", "value": "parameters"}


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def bits(a):
    return np.asarray(a, dtype=np.float32).view(np.uint32)


def torch_module(ws, edits=None, state=None):
    """The workspace's module as torch builds it, with `edits` {(name, row, col): value} made to its
    seeded state_dict, or `state` {name: tensor} loaded; returns (module, its state_dict)."""
    x = torch.tensor(ws["embeddings"], dtype=torch.float32)
    m = construct(SC, ws["model"], x.shape[0], x.shape[1])
    sd = {k: v.clone() for k, v in m.state_dict().items()}
    for (name, r, c), v in (edits or {}).items():
        if sd[name].dim() == 1:
            sd[name][c] = v
        else:
            sd[name][r, c] = v
    if state:
        sd.update(state)
    m.load_state_dict(sd, strict=False)
    return m, sd


def torch_output(ws, module, batch):
    x = torch.tensor(ws["embeddings"], dtype=torch.float32)
    with torch.no_grad():
        if ws["model"]["variant"] in ("self_attention_v1", "self_attention_v2"):
            return module(x).numpy()
        return module(torch.stack([x] * ws["model"]["batch_size"]))[batch].numpy()


def check_output(state, want, what):
    got = np.array(state["trace"]["output"], dtype=np.float64)
    worst = float(np.max(np.abs(got - want) / (1e-5 + np.abs(want))))
    print(f"  {what}: output row 1 {np.round(got[0], 4).tolist()}, torch {np.round(want[0], 4).tolist()}; "
          f"worst relative difference {worst:.1e}")
    expect(np.allclose(got, want, rtol=1e-5, atol=1e-6), f"{what}: the app's output is not torch's:\n{got}\nvs\n{want}")


def check_parameters(ws, sd, names, what):
    own = ws.get("parameters", {})
    expect(sorted(own) == sorted(names), f"{what}: the workspace's parameters are {sorted(own)}, expected {sorted(names)}")
    for n in names:
        expect(np.array_equal(bits(own[n]), bits(sd[n].numpy())), f"{what}: {n} is {own[n]}, torch's {sd[n].tolist()}")


def run_failing(exe, display, folder, name, commands, *args):
    """A headless run whose last command is refused: exit 2 and its one error line."""
    path = write_commands(folder, name, commands)
    env = dict(os.environ, DISPLAY=display, HOME=folder, XDG_STATE_HOME=os.path.join(folder, "state"))
    out = subprocess.run([exe, *args, "--commands", path, "--screenshot", os.path.join(folder, name + ".png")], env=env,
                         capture_output=True, text=True, timeout=STEP_TIMEOUT * 2)
    expect(out.returncode == 2, f"{name}: exit {out.returncode}, expected 2 (stderr {out.stderr.strip()!r})")
    return out.stderr.strip()


def main():
    args = arguments(__doc__.split("\n")[0])
    work = tempfile.mkdtemp(prefix="attnscope-weights-")
    edits = {("W_query.weight", 0, 1): 0.9, ("out_proj.bias", 0, 0): -0.25}
    set_commands = [{"do": "set_parameter", "name": n, "row": r, "col": c, "value": v} for (n, r, c), v in edits.items()]
    saved = os.path.join(work, "mine.json")
    try:
        with Display() as display:
            multihead = preset_copy(args.presets, "multihead", work)
            run = lambda name, commands, ws=multihead: run_commands(args.app, display.name, work, name, commands,  # noqa: E731
                                                                    "--open", ws)

            def set_parameters():
                d = run("set", [WEIGHTS_TAB, *set_commands, {"do": "save", "path": saved}])
                s = d["state"]
                module, sd = torch_module(s["workspace"], edits)
                check_parameters(s["workspace"], sd, ["W_query.weight", "out_proj.bias"], "set_parameter")
                check_output(s, torch_output(s["workspace"], module, s["trace"]["batch"]), "set_parameter")
                panel = s["weights_panel"]
                listed = [(t["name"], t["own"]) for t in panel["tensors"]]
                print(f"  Weights tab: {listed}")
                expect(listed == [("W_query.weight", True), ("W_key.weight", False), ("W_value.weight", False),
                                  ("out_proj.weight", False), ("out_proj.bias", True)], f"the tab lists {listed}")
                expect("parameters" in d["panels"], f"no 'parameters' panel: {sorted(d['panels'])}")
                cells = [w for w in d["widgets"] if w.startswith("param_W_query.weight_")]
                expect(len(cells) == 6 and "weights_reset" in d["widgets"], f"widgets {cells}")

            def reset_and_undo():
                d = run("reset", [*set_commands, {"do": "reset_parameters"}])
                s = d["state"]
                expect("parameters" not in s["workspace"], f"parameters left: {s['workspace'].get('parameters')}")
                module, _ = torch_module(s["workspace"])
                check_output(s, torch_output(s["workspace"], module, s["trace"]["batch"]), "reset_parameters")
                expect([round(v, 4) for v in s["trace"]["output"][0]] == [0.319, 0.4858],
                       f"not the notebook's first row: {s['trace']['output'][0]}")
                d = run("reset-undo", [*set_commands, {"do": "reset_parameters"}, {"do": "undo"}])
                module, sd = torch_module(d["state"]["workspace"], edits)
                check_parameters(d["state"]["workspace"], sd, ["W_query.weight", "out_proj.bias"], "undo of the reset")
                check_output(d["state"], torch_output(d["state"]["workspace"], module, d["state"]["trace"]["batch"]), "undo")

            def save_and_open():
                expect(os.path.exists(saved), "the first check's save is missing")
                with open(saved) as f:
                    on_disk = json.load(f)
                d = run("opened", [WEIGHTS_TAB], saved)
                s = d["state"]
                module, sd = torch_module(s["workspace"], edits)
                check_parameters(on_disk, sd, ["W_query.weight", "out_proj.bias"], "the saved file")
                check_parameters(s["workspace"], sd, ["W_query.weight", "out_proj.bias"], "opened again")
                check_output(s, torch_output(s["workspace"], module, s["trace"]["batch"]), "opened again")

            def wrapper():
                w_edits = {("heads.1.W_value.weight", 1, 2): 1.5}
                d = run("wrapper", [WEIGHTS_TAB, {"do": "set_parameter", "name": "heads.1.W_value.weight", "row": 1, "col": 2,
                                                  "value": 1.5}, {"do": "select_head", "index": 1}],
                        preset_copy(args.presets, "multihead_wrapper", work))
                s = d["state"]
                module, sd = torch_module(s["workspace"], w_edits)
                check_parameters(s["workspace"], sd, ["heads.1.W_value.weight"], "wrapper")
                check_output(s, torch_output(s["workspace"], module, s["trace"]["batch"]), "wrapper")
                names = [t["name"] for t in s["weights_panel"]["tensors"]]
                expect(names == ["heads.1.W_query.weight", "heads.1.W_key.weight", "heads.1.W_value.weight"],
                       f"head 2 chosen: the tab lists {names}")

            def refusals():
                e = run_failing(args.app, display.name, work, "d_out", [set_commands[0], {"do": "set", "field": "d_out", "value": 4}],
                                "--open", multihead)
                print(f"  {e}")
                expect(e.startswith("error: command 1 (set): parameters.W_query.weight: expected 4 × 3")
                       and "Back to the seeded initialization first" in e, e)
                e = run_failing(args.app, display.name, work, "simple-set",
                                [{"do": "set_parameter", "name": "W_query", "row": 0, "col": 0, "value": 1}], "--open",
                                preset_copy(args.presets, "simple", work))
                expect("has no trainable parameters" in e, e)
                d = run("simple", [WEIGHTS_TAB], preset_copy(args.presets, "simple", work))
                note = d["state"]["weights_panel"]["note"]
                expect(d["state"]["weights_panel"]["tensors"] == [] and "no trainable weights" in note, note)

            def paste_parameters():
                torch.manual_seed(3)
                causal = SC.CausalAttention(3, 2, 6, 0.0, qkv_bias=True)
                printed = str(causal.state_dict())
                expect("mask" in printed and "..." not in printed, printed[:80])
                ws_path = preset_copy(args.presets, "causal", work)
                with Clipboard(display.name, printed):
                    d = run("paste-parameters", [{"do": "set", "field": "qkv_bias", "value": True}, {"do": "paste_parameters"},
                                                 WEIGHTS_TAB], ws_path)
                s = d["state"]
                # What the print shows, 4 decimals, read as float32: the values pasted.
                shown = {k: torch.tensor(np.array(ast.literal_eval(str(v)[len("tensor("):-1]), dtype=np.float32))
                         for k, v in causal.state_dict().items() if k != "mask"}
                module, sd = torch_module(s["workspace"], state=shown)
                check_parameters(s["workspace"], sd, list(shown), "paste_parameters")
                check_output(s, torch_output(s["workspace"], module, s["trace"]["batch"]), "paste_parameters")
                print(f"  toast: {s['toast']!r}")
                expect("mask left out" in s["toast"], s["toast"])

            def numbers_on_a_projector():
                # 1280 × 800 at 175 %, presented: the state_dict's explanation behind a "(?)", so the
                # first weight's numbers are in view (its three lines had pushed them below the fold);
                # at 1920 × 1080 and 100 % it is read as it is.
                for size, pct, folded in (("1280x800", "175", True), ("1920x1080", "100", False)):
                    d = run_commands(args.app, display.name, work, f"projector-{size}", [
                        WEIGHTS_TAB, {"do": "view", "field": "presentation", "value": True}],
                        "--open", multihead, "--size", size, "--text-size", pct)
                    w = d["widgets"]
                    expect(("weights_layout_hint" in w) == folded and ("weights_layout_text" in w) != folded,
                           f"{size} {pct} %: {[k for k in w if k.startswith('weights_layout')]}")
                    cell = w["param_W_query.weight_1_2"]
                    panel = d["panels"]["parameters"]
                    expect(cell["y"] + cell["h"] <= panel["y"] + panel["h"] + 0.5,
                           f"{size} {pct} %: W_query's last number at {cell} is below the tab {panel}")
                    print(f"  {size} {pct} % presented: explanation {'behind (?)' if folded else 'shown'}, "
                          f"W_query's numbers in view (last at y {cell['y']:.0f})")
                # With the Model and Inspector beside it (a tab 630 px wide) the "(?)" went beside the
                # buttons, past the tab's edge, out of sight, and wrapped a letter a line below them:
                # now it ends the folded status's one line, inside the tab, and W_query's map shows.
                d = run_commands(args.app, display.name, work, "side-panels-1280x720", [WEIGHTS_TAB],
                                 "--open", multihead, "--size", "1280x720", "--text-size", "175")
                w, panel = d["widgets"], d["panels"]["parameters"]
                right, bottom = panel["x"] + panel["w"] + 0.5, panel["y"] + panel["h"] + 0.5
                hint, reset, paste = w.get("weights_layout_hint"), w["weights_reset"], w["weights_paste"]
                expect(hint is not None and "weights_layout_text" not in w, f"{[k for k in w if k.startswith('weights_')]}")
                if hint is not None:
                    expect(hint["x"] + hint["w"] <= right and hint["h"] < reset["h"] and
                           hint["y"] + hint["h"] <= reset["y"],
                           f"the (?) at {hint} is not one line above the buttons {reset} inside the tab {panel}")
                expect(paste["x"] + paste["w"] <= right, f"Paste parameters at {paste} is past the tab's edge {panel}")
                # W_query's map, every cell of it, above the tab's bottom (it had shown a row and a half).
                cells = next((m["cells"] for m in d["heatmaps"] if m.get("parameter") == "W_query.weight"), None)
                expect(cells is not None and cells["y"] + cells["h"] <= bottom,
                       f"W_query's map at {cells} is not all in the tab {panel}")
                expect(d["state"]["weights_panel"]["status"].startswith("The seeded initialization"),
                       d["state"]["weights_panel"]["status"])
                print(f"  1280x720 175 % beside the side panels: the (?) at x {hint['x']:.0f}–"
                      f"{hint['x'] + hint['w']:.0f} in a tab to {panel['x'] + panel['w']:.0f}, {hint['h']:.0f} px high")

            code = run_checks([("set_parameter: torch's state_dict with the edits, torch's output", set_parameters),
                               ("the numbers in view on a projector", numbers_on_a_projector),
                               ("reset_parameters and undo", reset_and_undo),
                               ("save and open keep the parameters", save_and_open),
                               ("the wrapper's heads.1", wrapper),
                               ("shape edits and simple attention refused clearly", refusals),
                               ("paste a printed state_dict from the clipboard", paste_parameters)])

            # The mouse: the button itself.
            app = start_ready(args.app, display.name, ["--open", multihead])
            with app:
                def click_reset():
                    d = app.settled("the preset")
                    ws = dict(d["state"]["workspace"])
                    app.click("tab_parameters")
                    app.wait_for("the Weights tab", lambda d: "weights_reset" in d["widgets"])
                    # An edit by typing into a cell: Ctrl+click, select all, type, Return.
                    typed = lambda d: (d["state"]["workspace"].get("parameters", {})  # noqa: E731
                                       .get("W_key.weight", [[0] * 3] * 2)[1][2] == 0.75)
                    app.type_into("param_W_key.weight_1_2", "0.75", typed, "W_key.weight[1, 2] = 0.75")
                    d = app.settled("W_key.weight[1, 2] = 0.75", typed)
                    module, sd = torch_module(ws, {("W_key.weight", 1, 2): 0.75})
                    check_output(d["state"], torch_output(ws, module, d["state"]["trace"]["batch"]), "typed into the table")
                    app.click("weights_reset")
                    d = app.settled("no parameters after the click", lambda d: "parameters" not in d["state"]["workspace"])
                    module, _ = torch_module(ws)
                    check_output(d["state"], torch_output(ws, module, d["state"]["trace"]["batch"]), "after the click")

                code |= run_checks([("type into a weight, click 'Back to the seeded initialization'", click_reset)])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
