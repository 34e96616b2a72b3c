"""Saving never loses the user's work: failed saves, a dying process, symlinks, long names, permissions.

Every save goes through writeFileAtomically (core/formats/workspace_file.cpp): a temporary file
`.attnscope-…` beside the target (created with O_EXCL: op `create`), fchmod to the target's mode, write, fsync, close,
rename over the target (through symlinks), fsync of the folder. This test checks, with
fault_save_driver (saveWorkspace) and the app:

1. injected failures (the fail_writes LD_PRELOAD shim): ENOSPC, EACCES and EIO on create, fchmod,
   write, fsync, close and rename, a short write followed by ENOSPC, a failure on a later save: the
   driver fails with exactly one `error: PATH: … (strerror); the previous file is unchanged` line, the
   previous file is byte-identical with its mode, and no `.attnscope-*` file is left. Failures after
   the rename (the folder's open or fsync) and EINTR must not fail the save; the new file is whole.
2. the app (under Xvfb, with a throw-away HOME): `attnscope --open WS --commands [set seed, save,
   quit]` under the shim exits 2 with `error: command 1 (save): Not saved: …`, does not crash, WS
   unchanged, no temp file. After a failed save the document stays unsaved (quit asks), the autosave
   holds the edit and the next session recovers it. Interactive sessions whose autosave writes all
   fail (ENOSPC, or create failing) carry on, save to their file, and quit normally.
3. SIGKILL at random points (seeded delays of 1–200 ms after the driver has loaded its input) of a
   driver saving an ~8 MB workspace (1024 × 768 embeddings; --big-rows) in a loop, alternating
   between contents A and B over a file holding B: after every kill the file parses and is exactly A
   or B. One kill in five hits whole saves (serialization included), the others the file operations
   alone (--verbatim). Kills that left a temporary file landed mid-write; such files must be named
   `.attnscope-*` (they are counted, then removed).
4. a symlink (relative, absolute, a chain, a dangling one) is followed: its target is replaced and
   the link kept; 250- and 255-byte names; a 0600 file stays 0600, 0644 stays 0644, 0640, 0444 and
   0755 stay; a new file gets 0666 & ~umask (umasks 022, 077, 027, 002).

Prints one summary line per part and the totals: inputs tried, faults injected, kills survived.
Usage: test_save_faults.py --driver DRIVER --shim LIBFAIL_WRITES.so --cli ATTNSCOPE_CLI --presets DIR
           [--app ATTNSCOPE] [--workdir DIR] [--seed 1] [--kills 90] [--big-rows 1024] [--keep]
"""
import argparse
import errno
import json
import os
import random
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

TEMP_PREFIX = ".attnscope-"
ERRNOS = ("ENOSPC", "EACCES", "EIO")
# The message each failing call gives (writeFileAtomically).
OP_MESSAGE = {
    "create": "cannot write",
    "fchmod": "cannot set permissions",
    "write": "write failed",
    "fsync": "write failed",
    "close": "write failed",
    "rename": "cannot replace the file",
}
# stderr lines under Xvfb that are not the app's (as in tests/gui/test_command_stream.py).
NOISE = [
    re.compile(r"^MESA-LOADER: failed to open \S+"),
    re.compile(r"^MESA: warning: "),
    re.compile(r"^libEGL warning: "),
    re.compile(r"^glx: failed to create dri3 screen$"),
    re.compile(r"^failed to load driver: \S+$"),
]


class Fail(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Fail(message)


def strerror(name):
    return os.strerror(getattr(errno, name))


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data, mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def temps(folder):
    return sorted(n for n in os.listdir(folder) if n.startswith(TEMP_PREFIX))


def injected(log):
    """The faults the shim injected (its log's "fail …" lines)."""
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [line.strip() for line in f if line.startswith("fail ")]


def error_lines(text):
    return [l for l in text.splitlines() if l.strip() and not any(p.match(l) for p in NOISE)]


class Runner:
    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.faults = 0        # faults the shim injected, over every run
        self.intact = 0        # files checked intact after a run with injected faults
        self.inputs = []       # what was tried, for the report
        self.counter = 0
        self.saved = {}        # expected() results

    def folder(self, name):
        self.counter += 1
        path = os.path.join(self.work, "%03d-%s" % (self.counter, name))
        os.makedirs(path)
        return path

    def shim_env(self, fault, folder, log, env=None):
        env = dict(env if env is not None else os.environ)
        env["LD_PRELOAD"] = self.args.shim + (" " + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
        env["ATTNSCOPE_FAULT"] = fault
        env["ATTNSCOPE_FAULT_DIR"] = folder
        env["ATTNSCOPE_FAULT_LOG"] = log
        # A sanitizer build: its runtime is not first in the list once the shim is preloaded.
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0").lstrip(":")
        return env

    def driver(self, src, out, *extra, env=None, umask=None, timeout=60):
        cmd = [self.args.driver, src, out] + [str(x) for x in extra]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)

    def expected(self, src, *extra):
        """The bytes the driver writes for these arguments, from a run without faults."""
        key = (src,) + tuple(str(x) for x in extra)
        if key not in self.saved:
            d = self.folder("expected")
            out = os.path.join(d, "out.json")
            p = self.driver(src, out, *extra)
            check(p.returncode == 0, f"driver without faults failed ({p.returncode}): {p.stderr.strip()}")
            self.saved[key] = read(out)
        return self.saved[key]


# ---- 1. injected failures, driver ------------------------------------------------------------

def driver_faults(r, sources):
    """Returns (cases, intact)."""
    cases = intact = 0
    small, book, big = sources["multihead"], sources["book"], sources["big"]
    plan = []  # (source, fault, expect_ok, extra args, previous-file mode, description)
    for i, op in enumerate(("create", "fchmod", "write", "fsync", "close", "rename")):
        for j, err in enumerate(ERRNOS):
            src = small if (i + j) % 2 == 0 else book
            plan.append((src, f"{op}:{err}:1", False, (), 0o600 if j == 1 else 0o644, f"{op} {err}"))
    plan.append((small, "write:SHORT:1,write:ENOSPC:2", False, (), 0o644, "short write, then ENOSPC"))
    # The 2nd of 3 saves fails: the file keeps the 1st save (seed 11), not the original, not a mix.
    plan.append((small, "write:ENOSPC:2", False, ("--times", 3, "--seed", 11, "--alternate", 12), 0o644,
                 "2nd save of 3 fails"))
    plan.append((small, "rename:EIO:3", False, ("--times", 5, "--seed", 11, "--alternate", 12), 0o640,
                 "3rd save of 5 fails at rename"))
    for fault in ("write:SHORT:1,write:ENOSPC:2", "fsync:EIO:1", "rename:ENOSPC:1", "create:ENOSPC:1"):
        plan.append((big, fault, False, (), 0o644, f"large workspace, {fault}"))
    # Not errors for the save: EINTR is retried; after the rename the new file is in place.
    plan.append((small, "write:EINTR:1", True, (), 0o644, "write EINTR (retried)"))
    plan.append((small, "write:SHORT:1", True, (), 0o644, "one short write (continued)"))
    for err in ERRNOS:
        plan.append((small, f"open:{err}:1", True, (), 0o644, f"the folder's open {err} (after the rename)"))
        plan.append((small, f"fsync:{err}:2", True, (), 0o644, f"the folder's fsync {err} (after the rename)"))

    for src, fault, expect_ok, extra, mode, what in plan:
        cases += 1
        d = r.folder("fault")
        target = os.path.join(d, "work.json")
        previous = read(src)  # the original file as it was (not normalized: any rewrite shows)
        write(target, previous, mode)
        log = os.path.join(r.work, "fault-%03d.log" % r.counter)
        p = r.driver(src, target, *extra, env=r.shim_env(fault, d, log))
        got = injected(log)
        r.faults += len(got)
        try:
            check(got, f"{what}: the shim injected nothing (ATTNSCOPE_FAULT={fault})")
            check(p.returncode >= 0, f"{what}: the driver crashed (signal {-p.returncode})")
            check(sorted(os.listdir(d)) == ["work.json"],
                  f"{what}: the folder holds {sorted(os.listdir(d))}, expected only work.json")
            check(mode_of(target) == mode, f"{what}: mode {oct(mode_of(target))}, was {oct(mode)}")
            lines = p.stderr.splitlines()
            if expect_ok:
                check(p.returncode == 0 and not lines, f"{what}: the save failed ({p.returncode}): {p.stderr.strip()}")
                check(read(target) == r.expected(src, *extra), f"{what}: the saved file is not the new workspace")
            else:
                check(p.returncode == 1, f"{what}: exit {p.returncode}, expected 1; stderr {p.stderr!r}")
                check(len(lines) == 1 and not p.stdout, f"{what}: expected one line, got {p.stderr!r} {p.stdout!r}")
                op, err = got[-1].split()[1:3]
                reason = strerror("EIO") if err == "SHORT" else strerror(err)
                want = f"error: {target}: {OP_MESSAGE[op]} ({reason}); the previous file is unchanged"
                check(lines[0] == want, f"{what}: message {lines[0]!r}, expected {want!r}")
                if "--times" in extra:  # the saves before the failing one happened
                    nth = int(fault.split(":")[2])
                    seeds = [extra[3] if k % 2 == 0 else extra[5] for k in range(nth - 1)]
                    check(read(target) == r.expected(src, "--seed", seeds[-1]),
                          f"{what}: the file is not the last successful save (seed {seeds[-1]})")
                else:
                    check(read(target) == previous, f"{what}: the previous file changed")
            intact += 1
            r.intact += 1
        except Fail as e:
            raise Fail(f"{e} (folder {d}, log {log})")
    return cases, intact


# ---- 2. the app -----------------------------------------------------------------------------

def app_faults(r, sources):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gui"))
    import gui_common as g  # noqa: E402  (Xvfb, the isolated environment)

    runs = reported = intact = autosave_faults = 0
    script = [{"do": "set", "field": "seed", "value": 7}, {"do": "save"}, {"do": "quit", "discard": True}]
    with g.Xvfb() as x:
        def run_app(ws, commands, fault=None, fault_dir=None, tag="app"):
            d = r.folder(tag + "-cmds")
            cf = os.path.join(d, "commands.json")
            with open(cf, "w") as f:
                json.dump(commands, f)
            env = g.isolated_env(x.display)
            log = os.path.join(r.work, "app-%03d.log" % r.counter)
            if fault:
                env = r.shim_env(fault, fault_dir(env) if callable(fault_dir) else fault_dir, log, env)
            p = subprocess.run([r.args.app, "--open", ws, "--commands", cf], env=env, capture_output=True,
                               text=True, timeout=90)
            return p, injected(log), env

        # The control: without faults the same commands save (so a failure below is the fault's).
        d = r.folder("app")
        ws = os.path.join(d, "ws.json")
        write(ws, read(sources["multihead"]))
        p, _, _ = run_app(ws, script)
        runs += 1
        check(p.returncode == 0 and not error_lines(p.stderr), f"app without faults: exit {p.returncode}: {p.stderr.strip()}")
        check(json.loads(read(ws))["model"]["seed"] == 7, "app without faults: the file was not saved with seed 7")
        check(temps(d) == [], f"app without faults: temp files left: {temps(d)}")

        cases = [("write", "ENOSPC"), ("write", "EACCES"), ("write", "EIO"), ("create", "ENOSPC"),
                 ("create", "EACCES"), ("fchmod", "EACCES"), ("fsync", "EIO"), ("fsync", "ENOSPC"),
                 ("close", "EIO"), ("rename", "EACCES"), ("rename", "EIO")]
        for op, err in cases:
            d = r.folder("app")
            ws = os.path.join(d, "ws.json")
            previous = read(sources["multihead"])
            write(ws, previous)
            p, got, _ = run_app(ws, script, f"{op}:{err}:1", d)
            runs += 1
            r.faults += len(got)
            what = f"app, {op} {err}"
            check(got, f"{what}: the shim injected nothing")
            check(p.returncode >= 0, f"{what}: the app crashed (signal {-p.returncode}); stderr {p.stderr.strip()}")
            lines = error_lines(p.stderr)
            want = (f"error: command 1 (save): Not saved: {ws}: {OP_MESSAGE[op]} ({strerror(err)}); "
                    "the previous file is unchanged")
            check(p.returncode == 2 and lines == [want], f"{what}: exit {p.returncode}, stderr {lines}, expected 2 and {want!r}")
            reported += 1
            check(read(ws) == previous, f"{what}: the file changed")
            check(sorted(os.listdir(d)) == ["ws.json"], f"{what}: the folder holds {sorted(os.listdir(d))}")
            intact += 1
            r.intact += 1

        # A failed save keeps the work: the document stays unsaved (quit asks instead of quitting),
        # the autosave holds the edit, and the next session recovers it and can save it.
        d = r.folder("app-recover")
        ws = os.path.join(d, "ws.json")
        previous = read(sources["multihead"])
        write(ws, previous)
        keep = [{"do": "set", "field": "seed", "value": 7}, {"do": "save"}] + \
               [{"do": "select_token", "step": 1 if k % 2 else -1} for k in range(20)] + [{"do": "quit"}]
        cf = os.path.join(d, "..", os.path.basename(d) + "-commands.json")
        with open(cf, "w") as f:
            json.dump(keep, f)
        env = g.isolated_env(x.display)
        log = os.path.join(r.work, "app-recover.log")
        p = subprocess.Popen([r.args.app, "--open", ws, "--commands", cf, "--keep-going"],
                             env=r.shim_env("write:ENOSPC:1+", d, log, env), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        autosave = os.path.join(env["XDG_STATE_HOME"], "attnscope", "autosave.json")
        try:
            def holds_edit():
                j = json.loads(read(autosave))
                return j["model"]["seed"] == 7 and j["view"].get("dirty") is True and j["view"].get("file") == ws
            g.wait_for(holds_edit, 30, "the autosave to hold the unsaved edit after the failed save")
            time.sleep(1.5)  # the commands, quit included, are done by now
            check(p.poll() is None, f"the app quit (exit {p.returncode}) with unsaved work after a failed save")
        finally:
            g.stop(p)
        err = p.stderr.read()
        p.stdout.close()
        p.stderr.close()
        runs += 1
        r.faults += len(injected(log))
        lines = error_lines(err)
        check(len(lines) == 1 and lines[0].startswith(f"error: command 1 (save): Not saved: {ws}: write failed ("),
              f"failed save, kept work: stderr {lines}")
        reported += 1
        check(read(ws) == previous and temps(d) == [], "failed save, kept work: the file changed or a temp file was left")
        # The next session (no faults) is offered the edit from the autosave, restores and saves it.
        with open(cf, "w") as f:
            json.dump([{"do": "recovery", "choice": "restore"}, {"do": "save"}, {"do": "quit", "discard": True}], f)
        p = subprocess.run([r.args.app, "--open", ws, "--commands", cf], env=env, capture_output=True, text=True, timeout=90)
        runs += 1
        check(p.returncode == 0 and not error_lines(p.stderr), f"the recovering session: exit {p.returncode}: {p.stderr.strip()}")
        check(json.loads(read(ws))["model"]["seed"] == 7, "the next session did not recover the unsaved edit (seed 7)")
        intact += 1
        r.intact += 1

        # Interactive sessions (autosave on) whose autosave writes all fail: edits for ~3 s (the
        # autosave writes at most every 0.5 s), a save to the file (elsewhere: it works), quit.
        steps = [{"do": "select_token", "step": 1 if k % 2 else -1} for k in range(14)]
        edits = [{"do": "set", "field": "seed", "value": 7}, {"do": "sentence", "text": "the cat sat on the mat"},
                 {"do": "add_token", "name": "again"}, {"do": "set", "field": "dropout", "value": 0.2},
                 {"do": "rename_token", "index": 0, "name": "The"}, {"do": "undo"}]
        session = []
        for e in edits:
            session += [e] + steps
        session += [{"do": "save"}, {"do": "set", "field": "seed", "value": 9}] + steps + [{"do": "quit", "discard": True}]
        for fault in ("write:ENOSPC:1+", "create:ENOSPC:1+"):
            d = r.folder("autosave")
            ws = os.path.join(d, "ws.json")
            write(ws, read(sources["multihead"]))
            state = lambda env: os.path.join(env["XDG_STATE_HOME"], "attnscope")  # noqa: E731
            p, got, env = run_app(ws, session, fault, state, "autosave")
            runs += 1
            r.faults += len(got)
            what = f"interactive session, autosave {fault}"
            check(p.returncode == 0 and not error_lines(p.stderr),
                  f"{what}: exit {p.returncode} (negative: a signal), stderr {p.stderr.strip()}")
            # At most one autosave per 0.5 s: how many fail depends on the frame rate; one is enough.
            check(len(got) >= 1, f"{what}: no autosave write failed (the shim injected nothing)")
            autosave_faults += len(got)
            st = state(env)
            check(not os.path.exists(st) or temps(st) == [], f"{what}: temp files left in {st}: {temps(st)}")
            saved = json.loads(read(ws))
            check(saved["tokens"] == ["the", "cat", "sat", "on", "the", "mat", "again"] and saved["model"]["seed"] == 7
                  and saved["model"]["dropout"] == 0.2, f"{what}: the save in the session wrote {saved['tokens']}")
            c = subprocess.run([r.args.cli, "trace", ws], capture_output=True, text=True, timeout=60)
            check(c.returncode == 0, f"{what}: attnscope-cli trace of the saved file failed: {c.stderr.strip()}")
            check(temps(d) == [], f"{what}: temp files beside the workspace: {temps(d)}")
            intact += 1
            r.intact += 1
    return runs, reported, intact, autosave_faults


# ---- 3. kills -------------------------------------------------------------------------------

def read_ready(p, timeout):
    ready, _, _ = select.select([p.stdout], [], [], timeout)
    return p.stdout.readline() if ready else ""


def kills(r, sources, count, seed):
    """SIGKILL of a driver saving a large workspace in a loop, A, B, A, … over a file holding B.
    Every fifth kill hits the whole saveWorkspace (its serialization takes most of the time, so the kill
    mostly lands there); the others hit a driver that writes the saved bytes of A and B in turn with
    writeFileAtomically (--verbatim), so the kill lands in the file operations: create … rename, fsync."""
    rng = random.Random(seed)
    big = sources["big"]
    a = r.expected(big, "--seed", 1)
    b = r.expected(big, "--seed", 2)  # A and B: the two contents, each saved once without faults
    check(a != b and len(a) > r.args.big_rows * 768 * 8, f"contents A and B: {len(a)} and {len(b)} bytes, "
                                                          f"expected two texts of ~{r.args.big_rows * 8} kB")
    json.loads(a)
    json.loads(b)
    texts = r.folder("kill-texts")
    a_path, b_path = os.path.join(texts, "a.json"), os.path.join(texts, "b.json")
    write(a_path, a)
    write(b_path, b)
    d = r.folder("kills")
    target = os.path.join(d, "big.json")
    stats = {"done": 0, "mid": 0, "left": 0, "intact": 0, "old": 0, "new": 0, "full": 0, "full_mid": 0}
    delays = []
    for k in range(count):
        write(target, b)  # the saves write A, B, A, … over B
        full = k % 5 == 0
        how = ["--seed", "1", "--alternate", "2"] if full else ["--verbatim", b_path]
        p = subprocess.Popen([r.args.driver, big if full else a_path, target, "--times", "0", "--ready"] + how,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = read_ready(p, 30)
            check(line.strip() == "ready", f"kill {k}: the driver did not get ready ({line!r})")
            delay = rng.uniform(0.001, 0.2)
            delays.append(delay)
            time.sleep(delay)
            p.send_signal(signal.SIGKILL)
            p.wait(30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            err = p.stderr.read()
            p.stdout.close()
            p.stderr.close()
        check(p.returncode == -signal.SIGKILL, f"kill {k}: the driver ended with {p.returncode} before the kill: {err.strip()}")
        stats["done"] += 1
        stats["full"] += full
        names = sorted(os.listdir(d))
        leftovers = [n for n in names if n != "big.json"]
        check(all(n.startswith(TEMP_PREFIX) for n in leftovers), f"kill {k}: stray files {leftovers}")
        if leftovers:  # the kill came between create and rename
            stats["mid"] += 1
            stats["full_mid"] += full
            stats["left"] += len(leftovers)
        data = read(target)
        check(data in (a, b), f"kill {k} after {delay * 1000:.0f} ms: the file is neither A nor B "
                              f"({len(data)} bytes; A {len(a)}, B {len(b)})")
        json.loads(data)  # parses (it is A or B, but say so)
        stats["old"] += data == b  # B: the file as it was, or after an even number of saves
        stats["new"] += data == a
        stats["intact"] += 1
        for n in leftovers:  # counted; the next kill starts from a clean folder
            os.unlink(os.path.join(d, n))
    stats["delays"] = (min(delays), max(delays)) if delays else (0, 0)
    return stats


# ---- 4. symlinks, names, permissions --------------------------------------------------------

def edge_cases(r, sources):
    src = sources["multihead"]
    new = r.expected(src)
    previous = read(src)
    checks = 0

    def save(target, **kw):
        p = r.driver(src, target, **kw)
        check(p.returncode == 0, f"saving {target} failed ({p.returncode}): {p.stderr.strip()}")

    # Symlinks: relative, absolute, a chain across folders, a dangling one.
    d = r.folder("symlinks")
    real = os.path.join(d, "real")
    os.makedirs(real)
    file = os.path.join(real, "ws.json")
    for name, link_to in (("rel.json", "real/ws.json"), ("abs.json", file)):
        write(file, previous, 0o640)
        link = os.path.join(d, name)
        os.symlink(link_to, link)
        save(link)
        check(os.path.islink(link) and os.readlink(link) == link_to, f"symlink {name}: the link was replaced")
        check(read(file) == new, f"symlink {name}: its target was not saved")
        check(mode_of(file) == 0o640, f"symlink {name}: target mode {oct(mode_of(file))}, was 0640")
        checks += 1
    other = os.path.join(d, "other")
    os.makedirs(other)
    write(file, previous)
    os.symlink("../real/ws.json", os.path.join(other, "hop.json"))
    os.symlink("other/hop.json", os.path.join(d, "chain.json"))
    save(os.path.join(d, "chain.json"))
    check(os.readlink(os.path.join(d, "chain.json")) == "other/hop.json" and
          os.readlink(os.path.join(other, "hop.json")) == "../real/ws.json", "symlink chain: a link was replaced")
    check(read(file) == new, "symlink chain: the target was not saved")
    checks += 1
    os.symlink("real/fresh.json", os.path.join(d, "dangling.json"))
    save(os.path.join(d, "dangling.json"))
    check(os.path.islink(os.path.join(d, "dangling.json")) and read(os.path.join(real, "fresh.json")) == new,
          "dangling symlink: the link was replaced or its target not created")
    checks += 1
    for folder in (d, real, other):
        check(temps(folder) == [], f"symlinks: temp files left in {folder}: {temps(folder)}")
    # A failing save through a link: the link and its target stay.
    write(file, previous)
    log = os.path.join(r.work, "symlink-fault.log")
    p = r.driver(src, os.path.join(d, "rel.json"), env=r.shim_env("write:ENOSPC:1", real, log))
    r.faults += len(injected(log))
    check(injected(log) and p.returncode == 1 and len(p.stderr.splitlines()) == 1,
          f"symlink under ENOSPC: exit {p.returncode}, {p.stderr!r}")
    check(os.readlink(os.path.join(d, "rel.json")) == "real/ws.json" and read(file) == previous and temps(real) == [],
          "symlink under ENOSPC: the link or its target changed, or a temp file was left")
    checks += 1
    r.intact += 1

    # Long names: 250 and 255 bytes (NAME_MAX), new and replaced.
    d = r.folder("names")
    for n in (250, 255):
        target = os.path.join(d, "w" * (n - 5) + ".json")
        check(len(os.path.basename(target).encode()) == n, "name length")
        save(target)
        check(read(target) == new, f"{n}-byte name: new file not saved")
        write(target, previous)
        save(target)
        check(read(target) == new, f"{n}-byte name: replaced file not saved")
        checks += 2
    check(temps(d) == [], f"long names: temp files left: {temps(d)}")

    # Permissions: kept for an existing file; 0666 & ~umask for a new one.
    d = r.folder("modes")
    for mode in (0o600, 0o644, 0o640, 0o444, 0o755):
        target = os.path.join(d, "m%o.json" % mode)
        write(target, previous, mode)
        save(target, umask=0o022)
        check(read(target) == new and mode_of(target) == mode, f"a {oct(mode)} file became {oct(mode_of(target))}")
        checks += 1
    for umask in (0o022, 0o077, 0o027, 0o002):
        target = os.path.join(d, "new-umask%03o.json" % umask)
        save(target, umask=umask)
        want = 0o666 & ~umask
        check(read(target) == new and mode_of(target) == want,
              f"a new file under umask {umask:03o}: mode {oct(mode_of(target))}, expected {oct(want)}")
        checks += 1
    check(temps(d) == [], f"modes: temp files left: {temps(d)}")
    return checks


# ---- main -----------------------------------------------------------------------------------

def make_sources(r, presets):
    d = r.folder("sources")
    sources = {"multihead": os.path.join(presets, "multihead.json")}
    book = os.path.join(d, "book.json")  # the book's example, minimal fields, random embeddings
    with open(book, "w") as f:
        json.dump({"format": "attnscope-workspace", "version": 1,
                   "embeddings": {"random": "uniform", "seed": 123, "rows": 6, "cols": 3},
                   "model": {"variant": "causal", "d_out": 2, "dropout": 0.5, "training": True}}, f)
    sources["book"] = book
    rng = random.Random(20240601)
    big = os.path.join(d, "big-src.json")  # 1024 × 768 numbers by default: about 8 MB saved
    T, D = r.args.big_rows, 768
    with open(big, "w") as f:
        json.dump({"format": "attnscope-workspace", "version": 1, "tokens": ["t%d" % i for i in range(T)],
                   "embeddings": [[round(rng.uniform(-1, 1), 6) for _ in range(D)] for _ in range(T)],
                   "model": {"variant": "multihead", "d_out": 768, "num_heads": 12, "seed": 1}}, f)
    sources["big"] = big
    r.inputs = ["assets/presets/multihead.json (as shipped, not normalized)",
                "a 6×3 generated causal workspace (minimal fields)",
                "a %d×768 workspace (%.1f MB saved)" % (T, len(r.expected(big, "--seed", 1)) / 1e6)]
    return sources


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--driver", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--presets", required=True)
    ap.add_argument("--app")
    ap.add_argument("--workdir", default=None, help="where the test's folder goes (default: the temp folder)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kills", type=int, default=90)
    ap.add_argument("--big-rows", type=int, default=1024,
                    help="tokens of the large workspace (× 768; a sanitizer build parses it slowly: give fewer)")
    ap.add_argument("--keep", action="store_true", help="keep the test's folder")
    args = ap.parse_args()
    args.shim = os.path.abspath(args.shim)
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="save-faults-", dir=args.workdir)
    r = Runner(args, work)
    started = time.time()
    ok = False
    try:
        sources = make_sources(r, args.presets)
        t = time.time()
        cases, intact = driver_faults(r, sources)
        print(f"driver: {cases} fault cases, faults injected: {r.faults}, files intact: {intact} "
              f"(one message line each, no temp file, mode kept) [{time.time() - t:.1f} s]", flush=True)
        app_summary = "app: not built"
        if args.app:
            t = time.time()
            before = r.faults
            runs, reported, app_intact, autosave_faults = app_faults(r, sources)
            app_summary = (f"app: {runs} runs, faults injected: {r.faults - before}, save failures reported: {reported}, "
                           f"crashes: 0, files intact: {app_intact}; a failed save's edit kept in the autosave and "
                           f"recovered by the next session; interactive autosave failures survived: "
                           f"{autosave_faults} [{time.time() - t:.1f} s]")
            print(app_summary, flush=True)
        t = time.time()
        k = kills(r, sources, args.kills, args.seed)
        lo, hi = k["delays"]
        print(f"kills: {k['done']} ({k['mid']} mid-write), files intact: {k['intact']} (A {k['new']}, B {k['old']}); "
              f"{k['full']} in whole saves ({k['full_mid']} mid-write), {k['done'] - k['full']} in writes of "
              f"serialized text ({k['mid'] - k['full_mid']} mid-write); temp files left by kills: {k['left']}, "
              f"all named {TEMP_PREFIX}*; delays {lo * 1000:.0f}–{hi * 1000:.0f} ms after loading, seed {args.seed} "
              f"[{time.time() - t:.1f} s]", flush=True)
        t = time.time()
        edge = edge_cases(r, sources)
        print(f"symlinks, long names, permissions: {edge} checks passed [{time.time() - t:.1f} s]", flush=True)
        print("inputs tried: " + "; ".join(r.inputs))
        print(f"total: faults injected: {r.faults}, files intact: {r.intact}; "
              f"kills: {k['done']} ({k['mid']} mid-write), files intact: {k['intact']}; nothing lost "
              f"[{time.time() - started:.1f} s]")
        ok = True
    except Fail as e:
        print(f"FAIL: {e}", file=sys.stderr)
    except subprocess.TimeoutExpired as e:
        print(f"FAIL: timed out: {' '.join(map(str, e.cmd))}", file=sys.stderr)
    except OSError as e:
        print(f"FAIL: {e}", file=sys.stderr)
    finally:
        if ok and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"(files kept in {work})", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
