"""The channel into a running app, as a learner's notebook uses it (docs/DESIGN.md §3.8): under Xvfb,
`attnscope.show(m, x)` starts the app when none listens, the window shows the module as one undo
step, and `save` gives a workspace whose trace equals m(x) in Debian's torch (1e-5); a second
`attnscope FILE` hands the file to the running window and exits; the app refuses what it must —
garbage, a header over the limit, tensors over the memory budget, a command it does not know or
that fails (the message's later commands are not applied), a sender stalled in the middle of a
frame (the others are answered meanwhile), a model_open given up for another sender's before it
was read (at once, naming it; a message's own second model_open takes its place), and a peer of another user (the
socket opened to everyone for the test: the kernel's SO_PEERCRED still names the user) — each with
one line back, and goes on working after each.

Usage: test_channel.py APP CLI ASSETS
"""
import importlib.util
import json
import os
import socket
import struct
import subprocess
import sys
import time

import numpy as np
import torch

from gui_common import Fail, Xvfb, check, isolated_env, quit_channel_app, temp_folder

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
import attnscope  # noqa: E402
from attnscope import _channel  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
import gpt_models as gm  # noqa: E402

spec = importlib.util.spec_from_file_location("seed_classes", os.path.join(ROOT, "core", "formats", "pytorch",
                                                                           "seed_classes.py"))
sc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sc)


def raw(path, data, read_reply=True):
    """Sends bytes as they are; the reply's JSON, or None when the app closed without one."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(path)
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before the app read it all: the reply is still there to read
        if not read_reply:
            return None
        head = b""
        while len(head) < 4:
            part = s.recv(4 - len(head))
            if not part:
                return None
            head += part
        (n,) = struct.unpack("<I", head)
        body = b""
        while len(body) < n:
            body += s.recv(n - len(body))
        return json.loads(body)


def refused(reply, words, what):
    check(reply is not None and reply.get("ok") is False, f"{what}: not refused: {reply}")
    check(words in reply["error"] and "\n" not in reply["error"], f"{what}: the refusal '{reply['error']}' lacks {words!r}")
    print(f"refused ({what}): {reply['error']}")


def saved_trace_matches(cli, folder, module, x, what):
    path = os.path.join(folder, "saved.json")
    attnscope.command({"do": "save", "path": path})
    out = json.loads(subprocess.run([cli, "trace", path], capture_output=True, text=True, check=True).stdout)
    with torch.no_grad():
        want = module(x if x.dim() == 3 else x[None]).numpy()
    got = np.array([b["output"] for b in out["batches"]], dtype=np.float32)
    err = float(np.abs(got - want).max())
    check(err <= 1e-5, f"{what}: the saved workspace's trace is off m(x) by {err:.3g}")
    print(f"{what}: saved, its trace within {err:.2g} of m(x)")
    return json.load(open(path))


def main():
    app, cli, _assets = sys.argv[1:4]
    folder = temp_folder("attnscope-channel-")
    sock = os.path.join(folder, "channel")
    with Xvfb() as x11:
        env = isolated_env(x11.display)
        env.update(ATTNSCOPE_APP=app, ATTNSCOPE_CLI=cli, ATTNSCOPE_CHANNEL=sock)
        os.environ.update(env)
        try:
            # show() with no app running starts one, which shows the module.
            torch.manual_seed(123)
            m = sc.MultiHeadAttention(5, 6, 9, 0.0, num_heads=3, qkv_bias=True)
            x = torch.rand(9, 5)
            t0 = time.monotonic()
            reply = attnscope.show(m, x, tokens="The cat sat on the mat and it purred".split())
            print(f"show started the app and was applied in {time.monotonic() - t0:.2f} s: {reply}")
            check(_channel.listening(), "no app listens after show()")
            ws = saved_trace_matches(cli, folder, m, x, "MultiHeadAttention, qkv_bias")
            check(ws["tokens"][1] == "cat", "the tokens given to show()")
            # Another module: one undo step, so undo gives the first back.
            w = sc.MultiHeadAttentionWrapper(5, 2, 9, 0.0, num_heads=2).eval()
            attnscope.show(w, torch.stack((x, x)), wait=True)  # returns once its maps are on screen
            saved_trace_matches(cli, folder, w, torch.stack((x, x)), "MultiHeadAttentionWrapper, eval")
            attnscope.command({"do": "undo"})
            saved_trace_matches(cli, folder, m, x, "undo gives the first module back")

            # Refusals: one line back each; the app goes on.
            refused(raw(sock, b"\x07garbage that is no frame at all"), "message", "garbage")
            refused(raw(sock, struct.pack("<I", 1 << 31) + b"{}"), "over the limit", "a 2 GiB header")
            big = json.dumps({"commands": [{"do": "undo"}],
                              "tensors": [{"name": "x", "shape": [1 << 20, 1 << 10]}]}).encode()
            refused(raw(sock, struct.pack("<I", len(big)) + big), "memory budget", "4 GiB of tensors")
            refused(raw(sock, _channel.frame([{"do": "format_disk"}])), "unknown command", "an unknown command")
            try:
                attnscope.command([{"do": "select_head", "index": 99}, {"do": "set", "field": "d_out", "value": 4}])
                raise Fail("a failing command was not refused")
            except attnscope.ChannelError as e:
                check("no head 99" in str(e), f"the refusal names the failing command: {e}")
            ws = saved_trace_matches(cli, folder, m, x, "after the refusals, nothing changed")
            check(ws["model"]["d_out"] == 6, "the command after a refused one was applied")

            # A sender that stalls in the middle of a frame holds its own connection only: another
            # is answered at once (one connection at a time, it waited out the stalled one's 30 s).
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stalled:
                stalled.connect(sock)
                stalled.sendall(struct.pack("<I", 200) + b'{"commands": [')
                time.sleep(0.5)
                t0 = time.monotonic()
                attnscope.command({"do": "select_head", "index": 0})
                waited = time.monotonic() - t0
                print(f"with a sender stalled in its frame, another message was answered in {waited:.2f} s")
                check(waited < 10, f"a stalled sender held the channel: the next message waited {waited:.1f} s")

            # A model_open given up for another before it was read: its sender hears so at once (it
            # heard nothing and waited 600 s), and the other model opens. A message's own second
            # model_open takes the first's place: the message is applied.
            models = {}
            for name, layers in (("first", 2), ("second", 3)):
                model, cfg = gm.tiny_model(7, n_layers=layers)
                models[name] = os.path.join(folder, name)
                gm.write_hf_folder(models[name], model, cfg, gm.save_safetensors)
            t0 = time.monotonic()
            reply = raw(sock, _channel.frame([{"do": "model_open", "path": models["first"]},
                                              {"do": "model_open", "path": models["second"]}]))
            check(reply == {"ok": True, "commands": 2} and time.monotonic() - t0 < 20,
                  f"two model_open in one message: {reply} after {time.monotonic() - t0:.1f} s")
            attnscope.command({"do": "select_layer", "layer": 2})  # the second's third layer: it is open
            # From two senders at once: one is refused at once if the other came while its model was read.
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as first:
                first.settimeout(30)
                first.connect(sock)
                first.sendall(_channel.frame([{"do": "model_open", "path": models["first"]}]))
                reply = raw(sock, _channel.frame([{"do": "model_open", "path": models["second"]}]))
                head = first.recv(4, socket.MSG_WAITALL)
                body = first.recv(struct.unpack("<I", head)[0], socket.MSG_WAITALL)
                first_reply = json.loads(body)
            print(f"two senders' model_open: first {first_reply}, second {reply}")
            # Whichever the window took first is given up if the other came before it was read.
            replies = [first_reply, reply]
            check(any(r.get("ok") is True for r in replies), f"neither model_open was applied: {replies}")
            for r in replies:
                if r.get("ok") is not True:
                    refused(r, "not opened: another model_open", "a model_open given up for another")
            attnscope.command({"do": "model_close"})
            ws = saved_trace_matches(cli, folder, m, x, "the chapter's workspace after the model")

            # Another user: the socket opened to everyone, the kernel still names the peer.
            os.chmod(sock, 0o666)
            os.chmod(folder, 0o755)
            read, write = os.pipe()
            child = os.fork()
            if child == 0:
                os.close(read)
                try:
                    os.setgid(65534)
                    os.setuid(65534)  # nobody
                    reply = raw(sock, _channel.frame([{"do": "undo"}]))
                    os.write(write, json.dumps({"reply": reply}).encode())
                except BaseException as e:  # said in the parent, which fails with it
                    os.write(write, json.dumps({"child": f"{type(e).__name__}: {e}"}).encode())
                finally:
                    os._exit(0)
            os.close(write)
            os.waitpid(child, 0)
            answer = json.loads(os.read(read, 65536) or b'{"child": "it wrote nothing"}')
            os.close(read)
            check("child" not in answer, f"a peer of another user (uid 65534): {answer.get('child')}")
            refused(answer["reply"], "its own user only", "a peer of another user")
            saved_trace_matches(cli, folder, m, x, "another user's undo was not applied")

            # A second `attnscope FILE` hands the file to the running window and exits.
            second = os.path.join(folder, "second.json")
            with open(second, "w") as f:
                json.dump(attnscope.workspace(w, x, tokens=list("ABCDEFGHI")), f)
            p = subprocess.run([app, second], env=env, capture_output=True, text=True, timeout=60)
            check(p.returncode == 0 and "already running" in p.stdout,
                  f"a second attnscope FILE: exit {p.returncode}, {p.stdout!r} {p.stderr!r}")
            ws = saved_trace_matches(cli, folder, w, torch.stack([x]), "opened by a second attnscope FILE")
            check(ws["tokens"][0] == "A", "the second FILE's tokens")
            bad = os.path.join(folder, "bad.json")
            with open(bad, "w") as f:
                f.write("{")
            p = subprocess.run([app, bad], env=env, capture_output=True, text=True, timeout=60)
            check(p.returncode == 2 and "\n" == p.stderr[-1:] and p.stderr.count("\n") == 1,
                  f"a second attnscope with a bad FILE: one line and exit 2, got {p.returncode} {p.stderr!r}")
            attnscope.command({"do": "quit", "discard": True})
            deadline = time.monotonic() + 20
            while _channel.listening() and time.monotonic() < deadline:
                time.sleep(0.05)
            check(not os.path.exists(sock), "the socket is removed when the app quits")
        finally:
            quit_channel_app(attnscope)
    print("all checks passed")


if __name__ == "__main__":
    try:
        main()
    except Fail as e:
        sys.exit(f"FAIL: {e}")
