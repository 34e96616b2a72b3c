# Without a display (DISPLAY and WAYLAND_DISPLAY unset) attnscope must not crash or hang: it exits 2
# and tells the user to run it under xvfb-run — interactively and with --screenshot alike. Bad
# input (a missing or malformed --open file, a bad --size) exits 2 with one "error: …" message.
# Usage: test_no_display.py APP CLI ASSETS_DIR
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gui_common as g  # noqa: E402


def run(cmd, env):
    try:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        raise g.Fail(f"{' '.join(cmd)} did not exit within 30 s")


def main():
    if len(sys.argv) != 4:
        print("usage: test_no_display.py APP CLI ASSETS_DIR", file=sys.stderr)
        return 2
    app, _cli, assets = sys.argv[1:4]
    preset = os.path.join(assets, "presets", "multihead.json")
    env = g.isolated_env(display=None)  # neither DISPLAY nor WAYLAND_DISPLAY
    failures = []
    with tempfile.TemporaryDirectory(prefix="attnscope-gui-nodisplay-") as tmp:
        png = os.path.join(tmp, "out.png")
        malformed = os.path.join(tmp, "malformed.json")
        with open(malformed, "w") as f:
            f.write('{"format": "attnscope-workspace", "tokens": [')
        cases = [  # (what, command, text stderr must contain)
            ("no display, interactive", [app], "xvfb-run"),
            ("no display, interactive with --open", [app, "--open", preset], "xvfb-run"),
            ("no display, --screenshot", [app, "--open", preset, "--screenshot", png], "xvfb-run"),
            ("missing --open file", [app, "--open", os.path.join(tmp, "nope.json"), "--screenshot", png], "error:"),
            ("malformed --open file", [app, "--open", malformed], "error:"),
            ("bad --size", [app, "--open", preset, "--screenshot", png, "--size", "12x"], "error:"),
        ]
        for what, cmd, needle in cases:
            try:
                p = run(cmd, env)
                err = p.stderr.strip()
                g.check(p.returncode == 2, f"{what}: exit code {p.returncode}, expected 2 (stderr: {err!r})")
                g.check(needle in err, f"{what}: stderr lacks {needle!r}: {err!r}")
                g.check(not os.path.exists(png), f"{what}: a PNG was written anyway")
                print(f"ok  {what}: exit 2, {err.splitlines()[0][:100]!r}")
            except g.Fail as e:
                failures.append(str(e))
                print(f"FAIL {e}")
    if failures:
        print(f"{len(failures)} of {len(cases)} cases failed")
        return 1
    print(f"OK: {len(cases)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
