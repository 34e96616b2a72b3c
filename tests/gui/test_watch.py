"""View › Reload on change (docs/DESIGN.md §3.8): `attnscope --watch FILE` takes FILE again whenever
another program rewrites it — a notebook's json.dump — as one undo step. Under Xvfb, what the app
shows is read back through the channel (export_trace: the trace of what is on screen, with its
workspace):
- a rewrite (atomic, or written in place) is shown within 5 s; undo gives back what was shown before;
- a file half written (not JSON yet) changes nothing that is shown, and is taken once it is whole;
- with watching off (the view field `watch`), a rewrite is left alone;
- with a model open (--watch --model), a rewrite of its weights opens it again, its text kept.

Usage: test_watch.py APP CLI ASSETS
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from gui_common import Fail, Xvfb, check, isolated_env, temp_folder

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
import attnscope  # noqa: E402
from attnscope import _channel  # noqa: E402


def workspace(tokens):
    return {"format": "attnscope-workspace", "version": 1, "tokens": tokens,
            "embeddings": [[0.1 * (i + 1), 0.2, 0.3] for i in range(len(tokens))],
            "model": {"variant": "multihead", "d_out": 2, "num_heads": 2, "seed": 123}}


def shown(folder):
    """The tokens and the trace on screen now (export_trace waits for the newest result)."""
    out = tempfile.mkdtemp(dir=folder)
    attnscope.command({"do": "export_trace", "path": out, "format": "json"}, start=False)
    trace = json.load(open(os.path.join(out, "trace.json")))
    return trace["workspace"]["tokens"]


def wait_for(folder, want, what, seconds=5):
    deadline = time.monotonic() + seconds
    got = None
    while time.monotonic() < deadline:
        got = shown(folder)
        if got == want:
            return
        time.sleep(0.1)
    raise Fail(f"{what}: shown {got}, not {want}")


def write_atomically(path, ws):
    with open(path + ".tmp", "w") as f:
        json.dump(ws, f)
    os.replace(path + ".tmp", path)


def main():
    app, cli, _assets = sys.argv[1:4]
    folder = temp_folder("attnscope-watch-")
    path = os.path.join(folder, "notebook.json")
    write_atomically(path, workspace(["one", "two"]))
    with Xvfb() as x11:
        env = isolated_env(x11.display)
        env.update(ATTNSCOPE_CHANNEL=os.path.join(folder, "channel"), ATTNSCOPE_APP=app, ATTNSCOPE_CLI=cli)
        os.environ.update(env)
        proc = subprocess.Popen([app, "--watch", path, "--listen"], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 20
            while not _channel.listening() and time.monotonic() < deadline:
                if proc.poll() is not None:
                    raise Fail(f"the app exited: {proc.stderr.read().decode()}")
                time.sleep(0.05)
            check(shown(folder) == ["one", "two"], "the file opened by --watch")

            write_atomically(path, workspace(["a", "rewritten", "file"]))
            wait_for(folder, ["a", "rewritten", "file"], "an atomic rewrite")
            with open(path, "w") as f:  # in place, as json.dump into an open file writes
                json.dump(workspace(["in", "place"]), f)
            wait_for(folder, ["in", "place"], "a rewrite in place")
            print("rewrites are shown: atomic and in place")

            with open(path, "w") as f:  # half written: not JSON yet
                f.write('{"format": "attnscope-workspace", "version": 1, "tok')
            time.sleep(1.0)
            check(shown(folder) == ["in", "place"], "a half-written file changed what is shown")
            with open(path, "w") as f:
                json.dump(workspace(["whole", "again", "now"]), f)
            wait_for(folder, ["whole", "again", "now"], "the file once whole")
            print("a half-written file is left alone, then taken once whole")

            attnscope.command({"do": "undo"}, start=False)
            wait_for(folder, ["in", "place"], "undo after a reload")
            attnscope.command({"do": "redo"}, start=False)
            print("each reload is one undo step")

            attnscope.command({"do": "view", "field": "watch", "value": False}, start=False)
            write_atomically(path, workspace(["not", "watched"]))
            time.sleep(1.0)
            check(shown(folder) == ["whole", "again", "now"], "watching off, a rewrite was still taken")
            attnscope.command({"do": "view", "field": "watch", "value": True}, start=False)
            wait_for(folder, ["not", "watched"], "watching on again")
            print("watching off leaves the file alone; on again takes it")
            attnscope.command({"do": "quit", "discard": True}, start=False)
            proc.wait(20)
        finally:
            if proc.poll() is None:
                proc.kill()
        watch_a_model(app, env, folder)
    print("all checks passed")


def layer_weights(folder):
    """The shown layer's W_query and the text's tokens, from export_trace of the model view."""
    out = tempfile.mkdtemp(dir=folder)
    attnscope.command({"do": "export_trace", "path": out, "format": "json"}, start=False)
    trace = json.load(open(os.path.join(out, "trace.json")))
    return trace["parameters"]["W_query.weight"], trace["workspace"]["tokens"]


def watch_a_model(app, env, folder):
    """--watch --model: a rewrite of the weights opens the model again; the text stays."""
    import gpt_models
    stem = os.path.join(folder, "book")
    model, _ = gpt_models.tiny_model(1, vocab_size=50, context_length=16, emb_dim=16, n_heads=2, n_layers=2)
    path = gpt_models.save_npz(stem, gpt_models.book_state_dict(model))
    env = dict(env, ATTNSCOPE_CHANNEL=os.path.join(folder, "channel-model"))
    os.environ.update(env)
    proc = subprocess.Popen([app, "--watch", "--model", path, "--num-heads", "2", "--listen"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while not _channel.listening() and time.monotonic() < deadline:
            if proc.poll() is not None:
                raise Fail(f"the app exited: {proc.stderr.read().decode()}")
            time.sleep(0.05)
        attnscope.command({"do": "text", "ids": [3, 1, 4, 1, 5, 9, 2, 6]}, start=False)
        before, tokens = layer_weights(folder)
        other, _ = gpt_models.tiny_model(2, vocab_size=50, context_length=16, emb_dim=16, n_heads=2, n_layers=2)
        os.replace(gpt_models.save_npz(stem + "-new", gpt_models.book_state_dict(other)), path)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            after, now_tokens = layer_weights(folder)
            if after != before:
                break
            time.sleep(0.2)
        check(after != before, "the model's file was rewritten, yet the layer's weights are the old ones")
        check(now_tokens == tokens, f"the text changed when the model was opened again: {tokens} → {now_tokens}")
        print("a model whose weights are rewritten is opened again, its text kept")
        attnscope.command({"do": "quit", "discard": True}, start=False)
        proc.wait(20)
    finally:
        if proc.poll() is None:
            proc.kill()


if __name__ == "__main__":
    try:
        main()
    except Fail as e:
        sys.exit(f"FAIL: {e}")
