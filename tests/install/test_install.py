# Issue 14: attnscope installs like any desktop program. The build is installed with DESTDIR into a
# temporary folder and the prefix moved elsewhere, then the installed programs run from / with
# ATTNSCOPE_ASSETS unset:
# - they read the installed share/attnscope, not the build or source tree: a preset that exists only
#   in the installed copy is listed by attnscope-cli and loaded by the app's `preset` command, and
#   the binaries do not hold the source tree's assets path; they load the same libraries as the
#   build's programs (OpenBLAS's OpenMP build, not the pthread one libopenblas.so.0 points to);
# - attnscope-cli traces share/attnscope/presets/multihead.json to the notebook's 0.3190;
# - the app, started as the desktop entry starts it (`attnscope FILE`), renders that workspace
#   under Xvfb to a PNG that carries it; a copy of it without share/attnscope says in one error
#   line where it looked and names ATTNSCOPE_ASSETS, exit 2;
# - desktop-file-validate and appstreamcli validate --no-net pass, one id names the desktop entry,
#   icon, metadata and MIME package; the icon's PNG sizes are what their folders say; the man pages
#   render with man -l; GLib's MIME sniffing names a workspace application/x-attnscope-workspace+json
#   and other JSON application/json; --version prints CMake's project version;
# - the Python package imports from the installed lib/python3…/dist-packages and traces with the
#   moved prefix's attnscope-cli.
# Usage: test_install.py --cmake CMAKE --build BUILD --source SOURCE --version V [--app]
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

APP_ID = "io.github.attnscope.Attnscope"
MIME_TYPE = "application/x-attnscope-workspace+json"
ICON_SIZES = [16, 24, 32, 48, 64, 128, 256, 512]
NOTEBOOK_FIRST_OUTPUT = 0.3190  # the notebook's print of MultiHeadAttention's context_vecs[0][0][0]


class Fail(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Fail(message)


def run(cmd, env, cwd="/", timeout=120, ok=True):
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Fail(f"{' '.join(cmd)}: did not finish within {timeout} s")
    if ok and p.returncode != 0:
        raise Fail(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


def clean_env():
    """Our environment without ATTNSCOPE_ASSETS: the programs must find their data themselves."""
    env = dict(os.environ)
    env.pop("ATTNSCOPE_ASSETS", None)
    return env


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    check(head[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG")
    return struct.unpack(">II", head[16:24])


def first_output(trace):
    return trace["batches"][0]["output"][0][0]


def check_tree(prefix, with_app):
    share = os.path.join(prefix, "share")
    want = ["bin/attnscope-cli", "share/attnscope/presets/multihead.json", "share/attnscope/lessons/chapter3.json",
            "share/attnscope/colormaps/viridis.csv", "share/man/man1/attnscope-cli.1.gz",
            "share/doc/attnscope/copyright", "share/doc/attnscope/changelog.gz", "share/lintian/overrides/attnscope"]
    if with_app:
        want += ["bin/attnscope", "share/man/man1/attnscope.1.gz", f"share/applications/{APP_ID}.desktop",
                 f"share/metainfo/{APP_ID}.metainfo.xml", f"share/mime/packages/{APP_ID}.xml",
                 f"share/icons/hicolor/scalable/apps/{APP_ID}.svg"]
        want += [f"share/icons/hicolor/{s}x{s}/apps/{APP_ID}.png" for s in ICON_SIZES]
    for rel in want:
        check(os.path.isfile(os.path.join(prefix, rel)), f"not installed: {rel}")
    for rel in ["bin/attnscope-cli"] + (["bin/attnscope"] if with_app else []):
        check(os.access(os.path.join(prefix, rel), os.X_OK), f"{rel} is not executable")
    # Debian policy (lintian): man pages and the changelog gzipped without a name or time stamp
    # (gzip -9n: reproducible), a machine-readable copyright file.
    for rel in ["share/man/man1/attnscope-cli.1.gz", "share/doc/attnscope/changelog.gz"] + \
            (["share/man/man1/attnscope.1.gz"] if with_app else []):
        with open(os.path.join(prefix, rel), "rb") as f:
            head = f.read(10)
        check(head[:2] == b"\x1f\x8b" and head[3] & 0x08 == 0 and head[4:8] == b"\0\0\0\0",
              f"{rel}: not gzipped with -n (name or time stamp in its header)")
    with open(os.path.join(prefix, "share/doc/attnscope/copyright")) as f:
        check(f.readline().startswith("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"),
              "the copyright file is not machine-readable (DEP-5)")
    check(not os.path.exists(os.path.join(share, "attnscope", "screenshots")),
          "share/attnscope/screenshots is installed (the README's images are not data)")
    if with_app:
        for s in ICON_SIZES:
            got = png_size(os.path.join(share, f"icons/hicolor/{s}x{s}/apps/{APP_ID}.png"))
            check(got == (s, s), f"the {s}x{s} icon is {got[0]}x{got[1]}")


def check_no_source_paths(prefix, source, with_app):
    """The old data path (the source tree's assets/, baked in at compile time) is gone."""
    baked = (os.path.realpath(source).rstrip("/") + "/assets").encode()
    for name in ["attnscope-cli"] + (["attnscope"] if with_app else []):
        with open(os.path.join(prefix, "bin", name), "rb") as f:
            check(baked not in f.read(), f"bin/{name} holds the source tree's path {baked.decode()}")


def resolved_libraries(program, env):
    """name => path of each library the loader picks for `program` (ldd)."""
    out = run(["ldd", program], env).stdout
    return dict(line.split(" => ")[0].strip().split()[0:1] + [line.split(" => ")[1].split(" (")[0]]
                for line in out.splitlines() if " => " in line)


def check_libraries(prefix, build, with_app, env):
    """The installed programs load the libraries the build tree's load: OpenBLAS's OpenMP build
    (linked from openblas-openmp/), not libopenblas.so.0's alternative, the pthread build."""
    for name in ["attnscope-cli"] + (["attnscope"] if with_app else []):
        built = resolved_libraries(os.path.join(build, name), env)
        installed = resolved_libraries(os.path.join(prefix, "bin", name), env)
        check(installed == built, f"bin/{name} loads other libraries than the build's: "
              f"{ {k: v for k, v in installed.items() if built.get(k) != v} } instead of "
              f"{ {k: v for k, v in built.items() if installed.get(k) != v} }")


def check_cli(prefix, version, env, tmp):
    cli = os.path.join(prefix, "bin", "attnscope-cli")
    out = run([cli, "--version"], env).stdout.strip()
    check(out == f"attnscope-cli {version}", f"attnscope-cli --version says {out!r}, not 'attnscope-cli {version}'")
    workspace = os.path.join(prefix, "share", "attnscope", "presets", "multihead.json")
    trace = json.loads(run([cli, "trace", workspace], env).stdout)
    got = first_output(trace)
    check(round(got, 4) == NOTEBOOK_FIRST_OUTPUT,
          f"installed attnscope-cli traces multihead.json to {got}, the notebook prints {NOTEBOOK_FIRST_OUTPUT}")
    # The presets it knows are the installed folder's: the error for an unknown one lists them.
    p = run([cli, "bench", "--preset", "no-such-preset"], env, ok=False)
    check(p.returncode == 2 and "installed_only" in p.stderr,
          f"attnscope-cli does not list the installed-only preset (not reading share/attnscope?): {p.stderr.strip()}")
    return got


def check_app(prefix, version, env, tmp, source):
    sys.path.insert(0, os.path.join(source, "tests", "gui"))
    import gui_common as g  # Xvfb on a free display, an isolated HOME

    app = os.path.join(prefix, "bin", "attnscope")
    cli = os.path.join(prefix, "bin", "attnscope-cli")
    out = run([app, "--version"], env).stdout.strip()
    check(out == f"attnscope {version}", f"attnscope --version says {out!r}, not 'attnscope {version}'")
    workspace = os.path.join(prefix, "share", "attnscope", "presets", "multihead.json")
    shot = os.path.join(tmp, "app.png")
    commands = os.path.join(tmp, "preset.json")
    with open(commands, "w") as f:
        json.dump([{"do": "preset", "name": "installed_only"}], f)
    shot_preset = os.path.join(tmp, "app-preset.png")
    with g.Xvfb() as x:
        app_env = g.isolated_env(x.display)
        app_env.pop("ATTNSCOPE_ASSETS", None)
        # As the desktop entry starts it: Exec=attnscope %f.
        run([app, workspace, "--size", "1280x800", "--screenshot", shot], app_env, timeout=180)
        run([app, "--commands", commands, "--size", "1280x800", "--screenshot", shot_preset], app_env, timeout=180)
    check(png_size(shot) == (1280, 800), f"the app's screenshot is {png_size(shot)}, not 1280x800")
    trace = json.loads(run([cli, "trace", shot], env).stdout)  # the PNG carries the workspace it shows
    check(round(first_output(trace), 4) == NOTEBOOK_FIRST_OUTPUT, "the app's screenshot is not of multihead.json")
    tokens = json.loads(run([cli, "trace", shot_preset], env).stdout)["workspace"]["tokens"]
    check(tokens[0] == "installed", f"the app's `preset installed_only` did not load the installed copy: {tokens}")
    # A copy of the program without its share/attnscope: one error line saying where it looked and
    # how to point at the data, exit 2 (it aborted on an uncaught error about a colormap).
    alone = os.path.join(tmp, "alone", "bin")
    os.makedirs(alone)
    shutil.copy2(app, alone)
    with g.Xvfb() as x:
        app_env = g.isolated_env(x.display)
        app_env.pop("ATTNSCOPE_ASSETS", None)
        p = subprocess.run([os.path.join(alone, "attnscope"), "--screenshot", os.path.join(tmp, "alone.png")],
                           env=app_env, capture_output=True, text=True, timeout=180)
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "ATTNSCOPE_ASSETS" in lines[0]
          and os.path.join(tmp, "alone", "share", "attnscope") in lines[0],
          f"a copy without its data: exit {p.returncode}, {p.stderr.strip()!r}")


def check_python(prefix, env, tmp):
    """The Python package is installed where Debian's python3 reads the prefix's packages, imports
    from there without the checkout, and finds the moved prefix's attnscope-cli by itself: a
    SelfAttention_v1 look-alike of NumPy matrices (no torch) traced to its own softmax(QKᵀ/√d)V."""
    found = [root for root, dirs, _ in os.walk(os.path.join(prefix, "lib")) if root.endswith("dist-packages")
             and "attnscope" in dirs]
    check(len(found) == 1 and os.path.basename(os.path.dirname(found[0])).startswith("python3"),
          f"the Python package is not in one lib/python3…/dist-packages: {found}")
    script = os.path.join(tmp, "use_package.py")
    with open(script, "w") as f:
        f.write("""
import numpy as np, attnscope
rng = np.random.default_rng(7)
class V1:  # SelfAttention_v1's attributes, NumPy matrices
    W_query, W_key, W_value = (rng.random((3, 2), dtype=np.float32) for _ in range(3))
x = rng.random((4, 3), dtype=np.float32)
q, k, v = x @ V1.W_query, x @ V1.W_key, x @ V1.W_value
s = q @ k.T / np.sqrt(2)
w = np.exp(s - s.max(1, keepdims=True)); w /= w.sum(1, keepdims=True)
t = attnscope.trace(V1(), x)
print(attnscope.__file__, float(np.abs(t.output[0] - w @ v).max()))
""")
    out = run(["/usr/bin/python3", script], dict(env, PYTHONPATH=found[0]), cwd=tmp).stdout.split()
    check(out[0].startswith(found[0]), f"attnscope imported from {out[0]}, not the installed {found[0]}")
    check(float(out[1]) < 1e-6, f"the installed package's trace is off NumPy's by {out[1]}")


def check_desktop_files(prefix, version, env, tmp):
    share = os.path.join(prefix, "share")
    desktop = os.path.join(share, "applications", f"{APP_ID}.desktop")
    metainfo = os.path.join(share, "metainfo", f"{APP_ID}.metainfo.xml")
    run(["desktop-file-validate", desktop], env)
    run(["appstreamcli", "validate", "--no-net", metainfo], env)
    entry = dict(line.split("=", 1) for line in open(desktop).read().splitlines() if "=" in line)
    check(entry.get("Icon") == APP_ID, f"the desktop entry's Icon is {entry.get('Icon')!r}, not {APP_ID}")
    check(entry.get("Exec", "").split()[0] == "attnscope", f"Exec={entry.get('Exec')}")
    check(MIME_TYPE in entry.get("MimeType", "").split(";"), f"MimeType={entry.get('MimeType')}")
    check({"Education", "Science"} <= set(entry.get("Categories", "").split(";")), f"Categories={entry.get('Categories')}")
    text = open(metainfo).read()
    check(f"<id>{APP_ID}</id>" in text and f'release version="{version}"' in text,
          f"the metadata's id or release is not {APP_ID} {version}")
    check(f'type="{MIME_TYPE}"' in open(os.path.join(share, "mime", "packages", f"{APP_ID}.xml")).read(),
          f"the MIME package does not define {MIME_TYPE}")

    # GLib sniffs a workspace (saved or shipped) as ours, other JSON as JSON.
    mime_home = os.path.join(tmp, "xdg")
    shutil.copytree(os.path.join(share, "mime"), os.path.join(mime_home, "mime"))
    run(["update-mime-database", os.path.join(mime_home, "mime")], env)
    csv = os.path.join(tmp, "e.csv")
    with open(csv, "w") as f:
        f.write("0.1,0.2\n")
    cli = os.path.join(prefix, "bin", "attnscope-cli")
    samples = {"shipped.json": open(os.path.join(share, "attnscope", "presets", "causal.json")).read(),
               "imported.json": run([cli, "import", "--embeddings", csv], env).stdout,  # as saved: keys sorted
               "other.json": '{"format": "something-else", "rows": [1, 2, 3]}\n'}
    for name, content in samples.items():
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(content)
        gio_env = dict(env, XDG_DATA_DIRS=mime_home + ":/usr/share", XDG_DATA_HOME=mime_home)
        got = run(["gio", "info", "-a", "standard::content-type", path], gio_env).stdout
        want = "application/json" if name == "other.json" else MIME_TYPE
        check(f"standard::content-type: {want}\n" in got, f"{name}: GLib says {got.strip()!r}, not {want}")


def check_man(prefix, with_app, env):
    pages = {"attnscope-cli": ["SYNOPSIS", "COMMANDS", "--threads", "--embeddings"]}
    if with_app:
        pages["attnscope"] = ["SYNOPSIS", "--screenshot", "--lesson", "share/attnscope"]
    for name, words in pages.items():
        page = os.path.join(prefix, "share", "man", "man1", f"{name}.1.gz")
        p = run(["man", "-P", "cat", "-l", page], dict(env, MANWIDTH="100", MAN_KEEP_FORMATTING=""))
        check(p.stdout.startswith(name.upper() + "(1)"), f"man -l {name}.1 begins {p.stdout[:60]!r}")
        check("warning" not in p.stderr, f"man -l {name}.1: {p.stderr.strip()}")  # e.g. a line troff cannot break
        for w in words:
            check(w in p.stdout, f"man -l {name}.1 has no {w!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cmake", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--app", action="store_true")
    args = ap.parse_args()
    build = os.path.realpath(args.build)
    env = clean_env()
    tmp = os.path.realpath(tempfile.mkdtemp(prefix="attnscope-install-"))
    try:
        check(not (tmp + "/").startswith(build + "/"), f"the temporary folder {tmp} is inside the build tree")
        # Installed with DESTDIR under /opt/attnscope, then the prefix moved: the programs must find
        # their data from where they are, not from where they were configured or installed.
        run([args.cmake, "--install", build, "--prefix", "/opt/attnscope"], dict(env, DESTDIR=tmp + "/stage"),
            timeout=300)
        prefix = os.path.join(tmp, "moved", "prefix")
        os.makedirs(os.path.dirname(prefix))
        os.rename(os.path.join(tmp, "stage", "opt", "attnscope"), prefix)
        check_tree(prefix, args.app)
        check_no_source_paths(prefix, args.source, args.app)
        check_libraries(prefix, build, args.app, env)
        # A preset only the installed copy has: found only if the installed share/attnscope is read.
        presets = os.path.join(prefix, "share", "attnscope", "presets")
        ws = json.load(open(os.path.join(presets, "multihead.json")))
        ws["tokens"] = ["installed", "only", "in", "the", "moved", "prefix"]
        with open(os.path.join(presets, "installed_only.json"), "w") as f:
            json.dump(ws, f)
        got = check_cli(prefix, args.version, env, tmp)
        check_man(prefix, args.app, env)
        check_python(prefix, env, tmp)
        if args.app:
            check_app(prefix, args.version, env, tmp, args.source)
            check_desktop_files(prefix, args.version, env, tmp)
        print(f"installed and moved to {prefix}: trace {got:.7f}, every check passed")
        return 0
    except Fail as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
