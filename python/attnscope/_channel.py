"""The channel into a running attnscope (docs/DESIGN.md §3.8 "The channel"): a Unix socket of this
user's, frames of a u32 length, a JSON header {"commands": […], "tensors": [{"name", "shape"}]} and
the tensors' float32 bytes; one reply per message, {"ok": true} or {"ok": false, "error": "…"}.
Starting the app when none listens is here too."""
import json
import os
import socket
import struct
import subprocess
import tempfile
import time

import numpy as np

from . import _programs


class ChannelError(RuntimeError):
    """The app refused the message; the text is its one line saying why."""


def channel_path():
    """Where the app listens: $ATTNSCOPE_CHANNEL, else $XDG_RUNTIME_DIR/attnscope/channel, else
    /tmp/attnscope-UID/channel (the app's own rule, app/state/channel_server.h)."""
    given = os.environ.get("ATTNSCOPE_CHANNEL")
    if given:
        return given
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = os.path.join(runtime, "attnscope") if runtime else f"/tmp/attnscope-{os.getuid()}"
    return os.path.join(folder, "channel")


class Tensors:
    """The float32 tensors of one message, referred to from its commands as {"tensor": name}. Each is
    copied once as it is added (a module trained on after the call must not change what is sent),
    and sent from that copy."""

    def __init__(self):
        self.listed, self.parts = [], []

    def add(self, name, array):
        a = np.array(array, dtype="<f4", order="C", copy=True)
        self.listed.append({"name": name, "shape": list(a.shape)})
        self.parts.append(a)
        return {"tensor": name}

    def resolved(self, value):
        """`value` with each {"tensor": name} in it replaced by that tensor's copy."""
        if isinstance(value, dict):
            if set(value) == {"tensor"}:
                return self.parts[[t["name"] for t in self.listed].index(value["tensor"])]
            return {k: self.resolved(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolved(v) for v in value]
        return value


def _header(commands, tensors=None):
    header = {"commands": commands}
    if tensors is not None and tensors.listed:
        header["tensors"] = tensors.listed
    text = json.dumps(header).encode("utf-8")
    return struct.pack("<I", len(text)) + text


def frame(commands, tensors=None):
    """One message as bytes."""
    return _header(commands, tensors) + b"".join(p.tobytes() for p in (tensors.parts if tensors else []))


def _read(sock, n):
    data = b""
    while len(data) < n:
        part = sock.recv(n - len(data))
        if not part:
            raise ChannelError("the app closed the channel before it replied")
        data += part
    return data


def _connect(path, timeout):
    """A socket connected to the app. Many senders at once may find its queue of connections full
    (the kernel says EAGAIN at once): tried again for up to 30 s."""
    deadline = time.monotonic() + min(timeout, 30)
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(path)
            return s
        except (FileNotFoundError, ConnectionRefusedError) as e:
            s.close()
            raise ConnectionError(f"no attnscope listens at {path}") from e
        except BlockingIOError as e:
            s.close()
            if time.monotonic() > deadline:
                raise ChannelError("attnscope took no connection for 30 s: too many senders at once") from e
            time.sleep(0.05)
        except BaseException:
            s.close()
            raise


def send(commands, tensors=None, path=None, timeout=600):
    """Sends one message and returns the app's reply; raises ChannelError with its refusal, and
    ConnectionError when no app listens."""
    path = path or channel_path()
    with _connect(path, timeout) as s:
        try:
            s.sendall(_header(commands, tensors))
            for part in tensors.parts if tensors else []:  # from the copies: GPT-2's 15 MB not copied again
                s.sendall(memoryview(part).cast("B"))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the app refused the message before it had read all of it: its reply says why
        (n,) = struct.unpack("<I", _read(s, 4))
        reply = json.loads(_read(s, n))
    if not reply.get("ok"):
        raise ChannelError(reply.get("error", "refused"))
    return reply


def listening(path=None):
    path = path or channel_path()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(path)
            return True
        except OSError:
            return False


def start_app(timeout=20):
    """Starts `attnscope --listen` in a session of its own and waits until it listens. Raises
    RuntimeError when it cannot (no display, it exited: its own words)."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        raise RuntimeError("no display to show it on: attnscope.trace(…) computes without one, and "
                           "_repr_png_ draws a picture")
    log = tempfile.TemporaryFile()  # its words if it fails to start; a pipe nobody reads could block it
    proc = subprocess.Popen([_programs.app(), "--listen"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=log, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if listening():
            return proc
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError("attnscope did not start: " + log.read().decode(errors="replace").strip())
        time.sleep(0.05)
    raise RuntimeError(f"attnscope did not listen at {channel_path()} within {timeout} s")
