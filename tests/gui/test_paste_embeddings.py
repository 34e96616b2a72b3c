"""Edit › Paste embeddings (docs/DESIGN.md §3.2): a tensor copied out of a
notebook, pasted into the app through the X clipboard.

The tensors are printed by torch itself (`str(torch.tensor(…))` in this process, Debian's torch at
/usr/bin/python3) and put on the display's CLIPBOARD selection with xclip; the expected outputs are
torch's too: the seed classes run on the workspace the app shows (tests/oracle/torch_trace.py,
none of our C++ involved), compared to the app's `state.trace` within 1e-5.

- Ctrl+Shift+V (xdotool, an interactive app on the book's multi-head example): a printed 6 × 3
  tensor replaces the embeddings bit for bit (as float32), the six token names stay, the app's
  output equals torch's; Ctrl+Z brings the old table back in one step.
- A print cut short by torch (`str(torch.rand(1001, 3))`, with `...`) on the clipboard: one error
  toast naming clipboard:LINE:COLUMN and how to print in full; the table, its version and the
  undo history are unchanged.
- Commands: {"do": "paste_embeddings", "text": …} with four rows of d_in 2 names the tokens t1 … t4
  and computes torch's output; {"do": "paste_embeddings"} without text reads the real clipboard.

Usage: test_paste_embeddings.py --app APP --cli CLI --presets PRESETS_DIR
"""
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
from gui_common import Clipboard  # noqa: E402
from test_teaching import Display, arguments, preset_copy, run_checks, run_commands, start_ready  # noqa: E402

import torch  # noqa: E402
from oracle_common import load_seed_classes  # noqa: E402
from torch_trace import run_plain  # noqa: E402

SEED_CLASSES = load_seed_classes()


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def torch_output(workspace, batch):
    """torch's output of element `batch` for the workspace (the seed classes, parameters loaded)."""
    out = run_plain(SEED_CLASSES, workspace)
    return out[batch].numpy()


def check_against_torch(state, what):
    ws = state["workspace"]
    want = torch_output(ws, state["trace"]["batch"])
    got = np.array(state["trace"]["output"], dtype=np.float64)
    expect(got.shape == want.shape, f"{what}: output {got.shape}, torch {want.shape}")
    worst = float(np.max(np.abs(got - want) / (1e-5 + np.abs(want))))
    print(f"  {what}: output {np.round(got[0], 4).tolist()} …, torch {np.round(want[0], 4).tolist()} …; "
          f"worst relative difference {worst:.2e}")
    expect(np.allclose(got, want, rtol=1e-5, atol=1e-6), f"{what}: the app's output differs from torch's: {got} vs {want}")


def same_float32(rows, t):
    """The workspace's numbers (shortest float32 decimals in JSON) are the tensor's, bit for bit."""
    got = np.array(rows, dtype=np.float32)
    want = t.numpy().astype(np.float32)
    return got.shape == want.shape and np.array_equal(got.view(np.uint32), want.view(np.uint32))


def main():
    args = arguments(__doc__.split("\n")[0])
    work = tempfile.mkdtemp(prefix="attnscope-paste-")
    # Four decimals, as torch prints them: the print holds every digit (a paste of a print is the print).
    six = torch.tensor(np.round(np.random.default_rng(7).uniform(-1, 1, (6, 3)), 4), dtype=torch.float32)
    four = torch.tensor([[0.25, -1.5], [3.0, 0.125], [-0.75, 0.5], [1.0, 2.0]])
    cut = torch.rand(1001, 3)                # torch prints it with "..."
    try:
        with Display() as display:
            multihead = preset_copy(args.presets, "multihead", work)
            app = start_ready(args.app, display.name, ["--open", multihead])
            with app:
                def paste_with_keys():
                    d = app.settled("the preset's trace")
                    tokens, steps = d["state"]["workspace"]["tokens"], d["state"]["can_undo"]
                    before = d["state"]["workspace"]["embeddings"]
                    with Clipboard(display.name, str(six)):
                        app.key("ctrl+shift+v")
                        d = app.settled("the pasted embeddings",
                                        lambda d: same_float32(d["state"]["workspace"]["embeddings"], six))
                    s = d["state"]
                    print(f"  pasted {str(six)[:40]!r}…: toast {s['toast']!r}")
                    expect(s["workspace"]["tokens"] == tokens, f"the six names changed: {s['workspace']['tokens']}")
                    expect(not s["toast_error"] and "Pasted 6 × 3" in s["toast"], f"toast {s['toast']!r}")
                    check_against_torch(s, "after Ctrl+Shift+V")
                    app.key("ctrl+z")
                    d = app.settled("undo", lambda d: d["state"]["workspace"]["embeddings"] == before)
                    expect(d["state"]["can_undo"] == steps, "one undo did not bring the history back")

                def bad_paste():
                    d = app.settled("the table")
                    before = d["state"]["workspace"]
                    version = d["state"]["version"]
                    with Clipboard(display.name, str(cut)):
                        app.key("ctrl+shift+v")
                        d = app.wait_for("an error toast", lambda d: d["state"]["toast_error"])
                    toast = d["state"]["toast"]
                    print(f"  toast: {toast!r}")
                    expect(toast.startswith("Nothing pasted: clipboard:4:9: "), f"the toast does not name the place: {toast!r}")
                    expect('set_printoptions(profile="full")' in toast, f"the toast does not say how to print in full: {toast!r}")
                    expect(d["state"]["workspace"] == before and d["state"]["version"] == version,
                           "the refused paste changed the workspace")

                code = run_checks([("Ctrl+Shift+V pastes a printed tensor, Ctrl+Z undoes it", paste_with_keys),
                                   ("a summarized print is refused at its place", bad_paste)])

            def paste_command():
                d = run_commands(args.app, display.name, work, "paste-text",
                                 [{"do": "paste_embeddings", "text": str(four)}], "--open", multihead)
                s = d["state"]
                expect(s["workspace"]["tokens"] == ["t1", "t2", "t3", "t4"], f"tokens {s['workspace']['tokens']}")
                expect(same_float32(s["workspace"]["embeddings"], four), f"embeddings {s['workspace']['embeddings']}")
                check_against_torch(s, "paste_embeddings with text")

            def paste_command_reads_clipboard():
                with Clipboard(display.name, str(four)):
                    d = run_commands(args.app, display.name, work, "paste-clipboard", [{"do": "paste_embeddings"}],
                                     "--open", multihead)
                expect(same_float32(d["state"]["workspace"]["embeddings"], four),
                       f"embeddings {d['state']['workspace']['embeddings']}")
                check_against_torch(d["state"], "paste_embeddings from the clipboard")

            code |= run_checks([("paste_embeddings with text: t1 … t4, torch's output", paste_command),
                                ("paste_embeddings without text reads the clipboard", paste_command_reads_clipboard)])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
