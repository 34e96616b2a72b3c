"""Pictures for notebooks (docs/DESIGN.md §3.8): the app draws them, headless, as it draws its
window — no browser, no CDN, no network, so they show offline, in Jupyter and in VS Code alike."""
import json
import os
import shutil
import subprocess
import tempfile

from . import _programs


def render(ws, panel="heatmaps", focus=("weights",), size="1600x1000", timeout=120):
    """PNG bytes of workspace `ws` as the app shows it: `panel` of the window (--panel), the maps
    in `focus` laid out alone. Needs a display, or xvfb-run (Debian's xvfb) to make one."""
    with tempfile.TemporaryDirectory(prefix="attnscope-picture-") as folder:
        path = os.path.join(folder, "workspace.json")
        commands = os.path.join(folder, "commands.json")
        png = os.path.join(folder, "picture.png")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(ws, f)
        # The maps alone: the side panels, statistics and status bar hidden, only the maps asked for.
        view = {"model_panel": False, "inputs_panel": False, "inspector": False, "statistics": False,
                "status_bar": False}
        if focus:  # those maps only, laid out to fit the window (as a lesson step's)
            view["columns"] = list(focus)
            view["focus"] = list(focus)
        with open(commands, "w", encoding="utf-8") as f:
            json.dump([{"do": "view", "field": k, "value": v} for k, v in view.items()], f)
        cmd = [_programs.app(), "--open", path, "--commands", commands, "--screenshot", png, "--size", size]
        if panel:
            cmd += ["--panel", panel]
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            xvfb = shutil.which("xvfb-run")
            if xvfb is None:
                raise RuntimeError("a picture needs a display, or xvfb-run to make one (Debian: apt install xvfb)")
            cmd = [xvfb, "-a", "-s", "-screen 0 1920x1080x24"] + cmd
        env = dict(os.environ, ATTNSCOPE_CHANNEL=os.path.join(folder, "no-channel"))  # never hand over to a window
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        if p.returncode != 0 or not os.path.exists(png):
            raise RuntimeError("attnscope could not draw the picture: " + (p.stderr.strip() or f"exit {p.returncode}"))
        with open(png, "rb") as f:
            return f.read()
