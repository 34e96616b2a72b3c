"""What the app holds stays within its memory budget (docs/DESIGN.md §2.4 "What the app holds").

The probe found the app accepting workspaces far over the 1 GiB budget: T = 4096, d = 448, 7 heads
(batch 1) opened and peaked at 2.0 GB, 4.8 GB with Compare — the app holds the maps of the element
shown twice (on screen and computing), a pinned result and its B − A maps beside them, and the
estimate counted one copy. Checked, each as a user gets there:

- the probe's workspace: `--open` refuses it with one line naming num_heads and the budget, and so
  do the `open` command, the `workspace` command and a paste (the document unchanged);
- with `--memory-budget 256`: a workspace that fits (T = 1024, d = 256, 4 heads, dropout, batch 2)
  opens, takes two edits, is pinned, takes two more and shows Compare, and the process's peak
  memory less the app's own (the book's example through the same commands) stays within 256 MiB
  and the 25 % malloc keeps beside (resident memory is what the user sees);
- a pin that would not fit is refused with one line ("Not pinned: …"), nothing pinned, the tab
  unchanged; an edit while pinned that fits alone but not beside A is refused naming the pinned
  result, and unpinning lets it through;
- a swap whose A would not fit beside B pinned is refused ("Not swapped: …"), B and the pin kept;
- the engine checks what the document was checked with: a batch of 16 (the app traces one element)
  and a T = 4096 workspace under `--memory-budget 4096` compute, the engine refusing nothing;
- `--memory-budget` of the app refuses the gpt2-small preset under 64 MiB, as attnscope-cli does.

Usage: test_app_budget.py --app APP --cli CLI --presets PRESETS_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_teaching import STEP_TIMEOUT, Display, arguments, run_checks, write_commands  # noqa: E402


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def workspace(T, d, heads, batch=1, dropout=0.0):
    return {"format": "attnscope-workspace", "version": 1,
            "embeddings": {"random": "uniform", "seed": 1, "rows": T, "cols": d},
            "model": {"variant": "multihead", "d_out": d, "num_heads": heads, "batch_size": batch,
                      "dropout": dropout}}


def app_lines(stderr):
    """The app's own lines (Mesa and Xvfb say things under xvfb too)."""
    return [l for l in stderr.splitlines() if l.startswith("error:") or l.startswith("warning:")]


class Runner:
    def __init__(self, exe, display, folder):
        self.exe, self.display, self.folder = exe, display, folder

    def write(self, name, value):
        path = os.path.join(self.folder, name)
        with open(path, "w") as f:
            json.dump(value, f)
        return path

    def run(self, name, args, commands=None, keep_going=False):
        """attnscope ARGS [--commands …] headless; returns (exit code, stderr, the final dump or None,
        peak resident memory in bytes)."""
        dump = os.path.join(self.folder, name + ".layout.json")
        png = os.path.join(self.folder, name + ".png")
        cmd = [self.exe, *args, "--size", "1280x800", "--dump-layout", dump, "--screenshot", png]
        if commands is not None:
            cmd += ["--commands", write_commands(self.folder, name, commands)]
        if keep_going:
            cmd.append("--keep-going")
        home = os.path.join(self.folder, "home-" + name)
        os.makedirs(home, exist_ok=True)
        env = dict(os.environ, DISPLAY=self.display, HOME=home, XDG_STATE_HOME=os.path.join(home, "state"))
        t0 = time.time()
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out = {}
        readers = [threading.Thread(target=lambda k=k, s=s: out.__setitem__(k, s.read())) for k, s in
                   (("stdout", p.stdout), ("stderr", p.stderr))]
        for t in readers:
            t.start()
        deadline = time.time() + STEP_TIMEOUT * 3
        while True:  # wait4: this child's own peak resident memory (ru_maxrss, KiB)
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.time() > deadline:
                p.kill()
                raise AssertionError(f"{name}: no exit within {STEP_TIMEOUT * 3:.0f} s")
            time.sleep(0.02)
        p.returncode = os.waitstatus_to_exitcode(status)
        for t in readers:
            t.join()
        err, peak = out["stderr"], usage.ru_maxrss * 1024
        d = None
        if os.path.exists(dump):
            with open(dump) as f:
                d = json.load(f)
        print(f"  {name}: exit {p.returncode} in {time.time() - t0:.1f} s, peak {peak / 2**20:.0f} MiB")
        return p.returncode, err, d, peak


EDIT = [{"do": "set_cell", "row": 1, "col": 0, "value": 0.5}, {"do": "set_cell", "row": 2, "col": 0, "value": 0.5}]
EDIT_B = [{"do": "set_cell", "row": 3, "col": 0, "value": 0.7}, {"do": "set_cell", "row": 4, "col": 0, "value": 0.7}]
PIN_FLOW = EDIT + [{"do": "pin"}] + EDIT_B + [{"do": "view", "field": "tab", "value": "compare"}]


def probes_workspace_refused(r):
    probe = r.write("probe.json", workspace(4096, 448, 7))
    rc, err, _, _ = r.run("probe-open", ["--open", probe])
    lines = app_lines(err)
    expect(rc == 2 and len(lines) == 1, f"--open of T = 4096, 7 heads: exit {rc}, {lines!r}")
    expect("model.num_heads: this configuration needs about" in lines[0] and "over the memory budget of 1 GiB" in lines[0],
           f"the refusal does not name the field and the budget: {lines[0]!r}")
    print(f"  --open: {lines[0][:150]}…")
    with open(probe) as f:
        text = json.load(f)
    # The paste goes into the probe's model at 8 tokens: 4096 rows pasted make it the probe's size.
    small = r.write("probe-8-tokens.json", workspace(8, 448, 7))
    for what, start, command in (
            ("open", [], {"do": "open", "path": probe}),
            ("workspace", [], {"do": "workspace", "json": text}),
            ("paste_embeddings", ["--open", small],
             {"do": "paste_embeddings", "text": "\n".join(",".join(["0.5"] * 448) for _ in range(4096))})):
        rc, err, d, _ = r.run("probe-" + what, start, [command], keep_going=True)
        lines = app_lines(err)
        expect(rc == 0 and len(lines) == 1 and "memory budget" in lines[0],
               f"{what} of the probe's size: exit {rc}, {lines!r}")
        ws = d["state"]["workspace"]
        rows = 8 if start else 6
        e = ws["embeddings"]
        got = e["rows"] if isinstance(e, dict) else len(e)  # a random recipe stays one
        expect(got == rows and not d["state"]["dirty"], f"{what}: the document did not stay ({got} rows)")
        print(f"  {what}: refused, the document kept ({lines[0][:110]}…)")


def pinned_within_budget(r):
    # The app's own memory: the book's example through the same commands.
    rc, err, d, base = r.run("base", ["--memory-budget", "256"], PIN_FLOW)
    expect(rc == 0 and not app_lines(err), f"the book's example: exit {rc}, {app_lines(err)!r}")
    ws = r.write("fits.json", workspace(1024, 256, 4, batch=2, dropout=0.1))
    rc, err, d, peak = r.run("fits", ["--open", ws, "--memory-budget", "256"], PIN_FLOW)
    expect(rc == 0 and not app_lines(err), f"T = 1024, 4 heads under 256 MiB: exit {rc}, {app_lines(err)!r}")
    expect(d["state"]["pinned"] and "compare" in d["panels"], f"not pinned, or Compare not shown: {sorted(d['panels'])}")
    held = peak - base
    if os.environ.get("ATTNSCOPE_SANITIZE") == "1":  # the sanitizer's shadow and quarantine would decide
        print("  (sanitizer build: the peak is not measured)")
        return
    print(f"  open, 2 edits, pin, 2 edits, Compare: peak {peak / 2**20:.0f} MiB, the app's own {base / 2**20:.0f} MiB: "
          f"{held / 2**20:.0f} MiB held for the workspace, budget 256 MiB (estimated 235 MiB with the pin)")
    # Resident memory also keeps what malloc holds on to between traces (engine/memory.h: no trim
    # below 1 GiB): measured 261 MiB of the estimate's 235 here. The probe's failure was 2–5×.
    expect(held <= 1.25 * 256 * 2**20, f"the app held {held / 2**20:.0f} MiB for a workspace under a 256 MiB budget")


def pin_refused(r):
    ws = r.write("no-pin.json", workspace(1024, 256, 8, batch=2, dropout=0.1))
    rc, err, d, _ = r.run("no-pin", ["--open", ws, "--memory-budget", "256"], EDIT + [{"do": "pin"}], keep_going=True)
    lines = app_lines(err)
    expect(rc == 0 and len(lines) == 1 and "command 2 (pin): Not pinned: holding this result as A as well would pass "
           "the memory budget" in lines[0] and "the pinned result" in lines[0], f"pin over the budget: exit {rc}, {lines!r}")
    expect(not d["state"]["pinned"] and "compare" not in d["panels"], f"pinned anyway, or Compare shown: {sorted(d['panels'])}")
    print(f"  pin over the budget: {lines[0][len('error: '):][:140]}…")
    # Pinned at a size that fits beside itself; then more heads fit alone but not beside A.
    ws = r.write("grow.json", workspace(1024, 256, 4, batch=2, dropout=0.1))
    grow = {"do": "set", "field": "num_heads", "value": 8}
    rc, err, d, _ = r.run("grow", ["--open", ws, "--memory-budget", "256"],
                          [{"do": "pin"}, grow, {"do": "unpin"}, grow], keep_going=True)
    lines = app_lines(err)
    expect(rc == 0 and len(lines) == 1 and lines[0].startswith("error: command 1 (set): ") and "the pinned result" in lines[0],
           f"8 heads while pinned: exit {rc}, {lines!r}")
    expect(d["state"]["workspace"]["model"]["num_heads"] == 8 and not d["state"]["pinned"],
           "after unpinning, 8 heads were not accepted")
    print("  8 heads while a 4-head result is pinned: refused naming the pinned result; unpinned, accepted")


def swap_refused(r):
    # A pinned at 2 heads, B at 8 fits beside it; swapped, A's 2 heads beside B's 8 pinned would not.
    ws = r.write("swap.json", workspace(1024, 256, 2))
    rc, err, d, _ = r.run("swap", ["--open", ws, "--memory-budget", "256"],
                          [{"do": "pin"}, {"do": "set", "field": "num_heads", "value": 8}, {"do": "swap"}], keep_going=True)
    lines = app_lines(err)
    expect(rc == 0 and len(lines) == 1 and lines[0].startswith("error: command 2 (swap): Not swapped: ") and
           "the pinned result" in lines[0], f"swap over the budget: exit {rc}, {lines!r}")
    expect(d["state"]["pinned"] and d["state"]["workspace"]["model"]["num_heads"] == 8 and d["state"]["can_undo"],
           "a refused swap changed the document or the pin")
    print(f"  swap over the budget: {lines[0][len('error: '):][:120]}…; B and the pin as they were")


def engine_agrees(r):
    # The engine checks what the document was checked with: a batch of 16 (one element traced) and
    # a raised budget compute instead of the engine refusing what the document took.
    for name, ws, args in (("batch-16", workspace(1024, 512, 8, batch=16), []),
                           ("budget-4096", workspace(4096, 256, 4), ["--memory-budget", "4096"])):
        path = r.write(name + ".json", ws)
        rc, err, d, _ = r.run(name, ["--open", path, *args])
        expect(rc == 0 and not app_lines(err), f"{name}: exit {rc}, {app_lines(err)!r}")
        expect(not d["state"]["engine_error"], f"{name}: the engine refused what the document took: {d['state']['engine_error']!r}")
        print(f"  {name}: opened and computed")


def budget_option(r):
    presets = r.presets
    rc, err, _, _ = r.run("gpt2-64", ["--open", os.path.join(presets, "gpt2-small.json"), "--memory-budget", "64"])
    lines = app_lines(err)
    expect(rc == 2 and len(lines) == 1 and "over the memory budget of 64 MiB" in lines[0],
           f"gpt2-small under --memory-budget 64: exit {rc}, {lines!r}")
    rc, err, _, _ = r.run("gpt2-1024", ["--open", os.path.join(presets, "gpt2-small.json")])
    expect(rc == 0 and not app_lines(err), f"gpt2-small under the default budget: exit {rc}, {app_lines(err)!r}")
    print(f"  --memory-budget 64: gpt2-small refused ({lines[0][:100]}…); the default budget opens it")
    # CLI11's Range compares, and NaN compares false: "nan" was a budget of −9e18 bytes that
    # refused the book's example.
    for value in ("nan", "inf"):
        rc, err, _, _ = r.run("budget-" + value, ["--memory-budget", value])
        lines = app_lines(err)
        expect(rc == 2 and lines == [f"error: --memory-budget: expected a finite number, got '{value}' "
                                     "(see attnscope --help)"], f"--memory-budget {value}: exit {rc}, {lines!r}")
    print("  --memory-budget nan and inf: refused in one line")
    # --num-heads says a model's heads: alone it was accepted and did nothing.
    rc, err, _, _ = r.run("heads-alone", ["--num-heads", "2"])
    lines = app_lines(err)
    expect(rc == 2 and lines == ["error: --num-heads requires --model (see attnscope --help)"],
           f"--num-heads without --model: exit {rc}, {lines!r}")


def main():
    args = arguments(__doc__.split("\n")[0])
    folder = tempfile.mkdtemp(prefix="attnscope-app-budget-")
    try:
        with Display() as display:
            r = Runner(args.app, display.name, folder)
            r.presets = args.presets
            code = run_checks([
                ("the probe's workspace refused on every route", lambda: probes_workspace_refused(r)),
                ("pinned and compared within the budget", lambda: pinned_within_budget(r)),
                ("a pin or an edit beside it over the budget", lambda: pin_refused(r)),
                ("a swap over the budget", lambda: swap_refused(r)),
                ("the engine checks what the document was checked with", lambda: engine_agrees(r)),
                ("--memory-budget", lambda: budget_option(r)),
            ])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
