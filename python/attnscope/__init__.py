"""attnscope from a notebook: a learner's attention module in attnscope's app and engine.

    import attnscope
    attnscope.show(mha, x)             # the running app shows it (one undo step), started if none runs
    t = attnscope.trace(mha, x)        # attnscope's own computation: t.output, t.heads[h]["weights"], …

The chapter's classes and look-alikes written differently are recognized by their attributes
(attnscope._modules); their parameters are taken exactly. Pure Python over NumPy; torch only where the
caller passes torch objects. The computation is attnscope-cli's (the same engine as the app), so `trace`
is what the app shows, number for number. docs/DESIGN.md §3.8 "From the notebook".
"""
import json
import os
import subprocess
import tempfile

import numpy as np

from . import _channel, _picture, _programs
from ._channel import ChannelError
from ._modules import ModuleError, workspace, workspace_arrays, write_workspace

__all__ = ["workspace", "trace", "show", "command", "Trace", "Shown", "ModuleError", "AttnscopeError", "ChannelError"]


class AttnscopeError(RuntimeError):
    """attnscope refused the request; the message is its one line saying why."""


def _array(rows):
    """A trace matrix (null for −∞, as the trace JSON writes masked scores) as float32."""
    return np.array([[-np.inf if v is None else v for v in row] for row in rows], dtype=np.float32) \
        if rows and isinstance(rows[0], list) else np.array(rows, dtype=np.float32)


class Trace:
    """attnscope's computation of a module on an input: `output` (B × T × d_out, every batch element),
    `context` (B × T × H·w), and for batch element 0 per head every stage (`heads[h]["weights"]`,
    `"scores"`, `"masked_scores"`, `"scaled_scores"`, `"queries"`, `"keys"`, `"values"`,
    `"dropout_mask"`, `"dropped_weights"`, `"context"`), `weights` (H × T × T), `parameters` (by
    state_dict name, torch's layouts) and the `workspace` it ran on."""

    def __init__(self, document, ws):
        self.workspace = ws
        self.tokens = list(ws["tokens"])
        batches = document["batches"]
        self.output = np.stack([_array(b["output"]) for b in batches])
        self.context = np.stack([_array(b["context"]) for b in batches])
        self.heads = []
        for head in batches[0]["heads"]:
            self.heads.append({k: _array(v) for k, v in head.items()
                               if k != "statistics" and isinstance(v, list)})
        self.weights = np.stack([h["weights"] for h in self.heads]) if self.heads else None
        self.parameters = {k: np.array(v, dtype=np.float32) for k, v in document.get("parameters", {}).items()}

    def _repr_png_(self):
        """Every head's weights as the app draws them (a notebook shows this inline)."""
        return _picture.render(self.workspace)

    def __repr__(self):
        return (f"<attnscope.Trace {self.workspace['model']['variant']}: {len(self.tokens)} tokens, "
                f"{len(self.heads)} heads, output {tuple(self.output.shape)}>")


def _run(args, what):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        message = p.stderr.strip().splitlines()
        raise AttnscopeError(message[-1].removeprefix("error: ") if message else f"{what} failed ({p.returncode})")
    return p.stdout


def trace(module, x, tokens=None, dropout_seed=None):
    """attnscope's own computation of `module` on `x` (T × d_in, or a B × T × d_in batch): a Trace.
    Training with dropout matches the module's own forward when torch.manual_seed(dropout_seed) is
    called right before it."""
    ws = workspace(module, x, tokens, dropout_seed)
    with tempfile.TemporaryDirectory(prefix="attnscope-") as folder:
        path = write_workspace(ws, os.path.join(folder, "workspace.json"))
        out = _run([_programs.cli(), "trace", path, "--batch", "0"], "attnscope-cli trace")
    return Trace(json.loads(out), ws)


# [SECTION] The running app ----------------------------------------------------------------------------

def _send(commands, tensors=None, start=True):
    """Sends commands to the running app, starting one (attnscope --listen) when none listens."""
    try:
        return _channel.send(commands, tensors)
    except ConnectionError:
        if not start:
            raise
    _channel.start_app()
    return _channel.send(commands, tensors)


def command(commands, start=True):
    """Sends one command ({"do": …, args}) or a list of them — the table of `attnscope --commands`
    (README) — to the running app; returns its reply or raises ChannelError with its refusal. The
    commands of one call are one message: checked whole, applied in order, stopped at a refusal."""
    listed = [commands] if isinstance(commands, dict) else list(commands)
    return _send(listed, start=start)


def show(module, x, tokens=None, dropout_seed=None):
    """The running app shows `module` on `x` as one undo step (starting the app if none runs): its
    workspace (attnscope.workspace) with every number sent as float32 bits."""
    ws = workspace_arrays(module, x, tokens, dropout_seed)
    tensors = _channel.Tensors()
    sent = dict(ws, embeddings=tensors.add("x", ws["embeddings"]),
                parameters={k: tensors.add(k, v) for k, v in ws["parameters"].items()})
    if "batch_sequences" in ws:
        sent["batch_sequences"] = [tensors.add(f"x{b + 1}", m) for b, m in enumerate(ws["batch_sequences"])]
    _send([{"do": "workspace", "json": sent}], tensors)
    return Shown(workspace(module, x, tokens, dropout_seed))


class Shown:
    """What `show` sent; in a notebook it draws as a picture of its heads' weights."""

    def __init__(self, ws):
        self.workspace = ws

    def _repr_png_(self):
        return _picture.render(self.workspace)

    def __repr__(self):
        return f"<attnscope.Shown {self.workspace['model']['variant']}: {len(self.workspace['tokens'])} tokens>"
