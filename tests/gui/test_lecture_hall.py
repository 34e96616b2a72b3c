"""Ready for the lecture hall, the rest (issue 11): figures, files and messages a lecturer meets.

Headless runs (`attnscope --commands … --screenshot … --dump-layout …`, one Xvfb display):

- The file browser starts in the last folder used, also when that is the folder the app was started
  from, and in the home folder when nothing was used yet (settings default to home, never the
  working directory).

Usage: test_lecture_hall.py --app APP --cli CLI --presets PRESETS_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_teaching import (App, Display, STEP_TIMEOUT, arguments, describe, run_checks,  # noqa: E402
                           write_commands)


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def main():
    args = arguments(__doc__.split("\n")[0])
    work = tempfile.mkdtemp(prefix="attnscope-lecture-hall-")
    presets = args.presets
    assets = os.path.dirname(os.path.abspath(presets))

    def folders(name):
        """A fresh home and state folder for one run."""
        base = os.path.join(work, name)
        home, state = os.path.join(base, "home"), os.path.join(base, "state")
        os.makedirs(home, exist_ok=True)
        os.makedirs(os.path.join(state, "attnscope"), exist_ok=True)
        return home, state

    try:
        with Display() as display:
            def headless(name, commands, *extra, cwd=None, home=None, state=None, output=None, ok=True):
                """attnscope EXTRA --commands … --screenshot OUTPUT (NAME.png) --dump-layout …; returns
                (dump, the finished process)."""
                if home is None:
                    home, state = folders(name)
                path = write_commands(work, name, commands)
                out = output or os.path.join(work, name + ".png")
                dump = os.path.join(work, name + ".layout.json")
                for old in (out, dump):
                    if os.path.exists(old):
                        os.remove(old)
                env = dict(os.environ, DISPLAY=display.name, HOME=home, XDG_STATE_HOME=state)
                cmd = [args.app, *extra, "--commands", path, "--screenshot", out, "--dump-layout", dump]
                p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=STEP_TIMEOUT * 2)
                print(f"  attnscope {' '.join(extra)} --commands [{describe(commands)}]: exit {p.returncode}")
                if ok:
                    expect(p.returncode == 0 and "error" not in p.stderr.lower(),
                           f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
                return (read_json(dump) if os.path.exists(dump) else None), p

            def browser_starts_in_the_last_folder():
                # The last folder used is the one the app runs from: the browser opens there.
                home, state = folders("last-folder")
                here = os.path.join(work, "lectures")
                os.makedirs(here, exist_ok=True)
                with open(os.path.join(state, "attnscope", "settings.json"), "w") as f:
                    json.dump({"recent": [], "last_folder": here}, f)
                d, _ = headless("last-folder", [{"do": "dialog", "which": "open"}], cwd=here, home=home, state=state)
                folder = d["state"]["file_dialog"]["folder"]
                print(f"  last folder {here}, started from it: the browser opens in {folder}")
                expect(os.path.realpath(folder) == os.path.realpath(here),
                       f"the browser opened in {folder}, not the last folder used {here} (the working directory)")
                # Nothing used yet: the home folder, not the working directory.
                home, state = folders("no-settings")
                d, _ = headless("no-settings", [{"do": "dialog", "which": "save_as"}], cwd=here, home=home, state=state)
                folder = d["state"]["file_dialog"]["folder"]
                print(f"  no settings, started from {here}: the browser opens in {folder}")
                expect(os.path.realpath(folder) == os.path.realpath(home), f"the browser opened in {folder}, not {home}")

            code = run_checks([
                ("the file browser starts in the last folder used, else home", browser_starts_in_the_last_folder),
            ])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
