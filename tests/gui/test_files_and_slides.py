"""Files and slides: screenshots for slides and the workspace on disk.

- PNG: --scale 2 is exactly twice --scale 1; --caption adds rows (twice as many at 2×); the PNG's
  "attnscope-workspace" text is the workspace, and `attnscope-cli trace` of the PNG and of that text
  equal the trace of the original file; `attnscope --open shot.png --screenshot again.png` works.
- Panels: --panel heatmaps|inspector|weights at --scale 2 are 2× the rectangles a 1× --dump-layout
  run shows (a heatmap's drawn content plus its 8·scale px margin), with light and dark theme backgrounds;
  --each-head gives one differing PNG per head.
- Autosave: an edit survives SIGKILL and comes back at the next start.
- Save: saving writes the file, clears `dirty` and the title's "•".
- Quit: with unsaved changes Ctrl+Q asks first, "Don't save" quits and leaves the file; with none it quits at once.
- Bad --panel / --each-head: exit 2 with "error:".
- Captions for slides: under a map's 2× PNG with no blank strip between (at most 20 px at 2× from the
  colorbar's labels to the caption, 24 px under it); in the notebook's words: "Causal attention,
  dropout 0.5", never the menu's "3 ·" label, and no dropout at p = 0.
A custom workspace (seed 7, an edited cell) is used so an app that ignored --open would fail.

Real keyboard and mouse (xdotool) only where the input path is the point: the quit prompt (Ctrl+Q
with unsaved changes opens it, a click on "Don't save" quits). Its unsaved edit, and every other
state, is reached with `--commands` (the commands the app's keys and buttons push): the edit before
the autosave's SIGKILL and before the prompt is a `set_cell` fed to an interactive app; saving is a
headless run of `set_cell` and `save` (what Ctrl+S pushes; typing into a cell and Ctrl+Z are held
in test_teaching.py); quitting with nothing unsaved is the `quit` command; the 1× layout for the
panel sizes comes from a headless --dump-layout run. The rest are command-line options.
"""
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from PIL import Image

from test_teaching import (App, Display, arguments, assert_close, cli_trace, embeddings, run_checks,
                           run_commands, start_ready, write_commands, STEP_TIMEOUT)

DARK_BG = (23, 23, 28)     # ImGui WindowBg (0.09, 0.09, 0.11)
LIGHT_BG = (255, 255, 255)
PIXEL_SLACK = 4            # crop sizes: the k× layout may round a few pixels differently


def headless(exe, display, folder, *args):
    """attnscope … --screenshot …; returns (exit code, stdout, stderr)."""
    env = dict(os.environ, DISPLAY=display, XDG_STATE_HOME=os.path.join(folder, "state"),
               HOME=os.path.join(folder, "home"))
    out = subprocess.run([exe, *args], env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT * 2)
    return out.returncode, out.stdout, out.stderr


def shoot(exe, display, folder, workspace, name, *args):
    """A screenshot that must succeed; returns the PIL image."""
    path = os.path.join(folder, name)
    code, out, err = headless(exe, display, folder, "--open", workspace, "--screenshot", path, *args)
    if code != 0:
        raise AssertionError(f"attnscope --screenshot {name} {' '.join(args)} exited {code}: {err.strip()}")
    if f"saved {path} (" not in out:
        raise AssertionError(f"no 'saved {path} (W×H)' line in: {out.strip()!r}")
    im = Image.open(path)
    im.load()
    said = re.search(re.escape(path) + r" \((\d+)×(\d+)\)", out)
    if said and (int(said.group(1)), int(said.group(2))) != im.size:
        raise AssertionError(f"printed {said.group(0)} but the file is {im.size}")
    return im


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def expect_size(im, size, what, slack=0):
    w, h = im.size
    print(f"  {what}: {w}×{h} (expected {size[0]:.0f}×{size[1]:.0f}{f' ± {slack}' if slack else ''})")
    if abs(w - size[0]) > slack or abs(h - size[1]) > slack:
        raise AssertionError(f"{what}: {w}×{h}, expected {size[0]:.0f}×{size[1]:.0f}")


def near(c, ref, tol=4):
    return all(abs(a - b) <= tol for a, b in zip(c[:3], ref))


def check_background(im, bg, what, corners):
    """The commonest colour of a pixel grid is the theme's background (and, for heatmap tiles,
    whose margin is empty, the four corners are too)."""
    rgb = im.convert("RGB")
    w, h = rgb.size
    samples = [rgb.getpixel((x, y)) for x in range(0, w, 7) for y in range(0, h, 7)]
    colour, count = collections.Counter(samples).most_common(1)[0]
    print(f"  {what}: commonest colour {colour} in {count}/{len(samples)} samples (theme {bg})")
    if not near(colour, bg):
        raise AssertionError(f"{what}: background {colour}, expected ≈ {bg}")
    if count < 0.25 * len(samples):
        raise AssertionError(f"{what}: the background covers only {count}/{len(samples)} samples")
    if corners:
        for x, y in [(2, 2), (w - 3, 2), (2, h - 3), (w - 3, h - 3)]:
            if not near(rgb.getpixel((x, y)), bg):
                raise AssertionError(f"{what}: corner ({x},{y}) is {rgb.getpixel((x, y))}, expected ≈ {bg}")


def custom_workspace(presets, folder):
    """The multihead preset with seed 7, cell (2,1) = 0.33 and one head shown."""
    with open(os.path.join(presets, "multihead.json")) as f:
        ws = json.load(f)
    ws["model"]["seed"] = 7
    ws["embeddings"][2][1] = 0.33
    ws["view"] = {"head": 0}
    path = os.path.join(folder, "custom.json")
    with open(path, "w") as f:
        json.dump(ws, f)
    return path, ws


def compare_traces(ours, ref, what):
    if ours["parameters"] != ref["parameters"]:
        raise AssertionError(f"{what}: parameters differ")
    if len(ours["batches"]) != len(ref["batches"]):
        raise AssertionError(f"{what}: {len(ours['batches'])} batches vs {len(ref['batches'])}")
    for b, (ob, rb) in enumerate(zip(ours["batches"], ref["batches"])):
        assert_close(ob["output"], rb["output"], f"{what}: batch {b} output")
        for h, (oh, rh) in enumerate(zip(ob["heads"], rb["heads"])):
            for key in ("weights", "context"):
                assert_close(oh[key], rh[key], f"{what}: batch {b} head {h} {key}")
            if oh["dropout_mask"] != rh["dropout_mask"]:
                raise AssertionError(f"{what}: batch {b} head {h} dropout masks differ")


def main():
    args = arguments(__doc__)
    work = tempfile.mkdtemp(prefix="attnscope-slides-")
    for sub in ("state", "home"):
        os.makedirs(os.path.join(work, sub))
    ws_path, ws = custom_workspace(args.presets, work)
    try:
        with Display() as display:
            shot = lambda name, *a: shoot(args.app, display.name, work, ws_path, name, *a)  # noqa: E731

            def png_sizes_and_workspace():
                s1 = shot("s1.png", "--size", "1600x1000")
                expect_size(s1, (1600, 1000), "--scale 1")
                s2 = shot("s2.png", "--size", "1600x1000", "--scale", "2")
                expect_size(s2, (3200, 2000), "--scale 2")
                c1 = shot("c1.png", "--size", "1600x1000", "--caption")
                c2 = shot("c2.png", "--size", "1600x1000", "--scale", "2", "--caption")
                rows1, rows2 = c1.size[1] - 1000, c2.size[1] - 2000
                print(f"  --caption adds {rows1} rows at 1×, {rows2} at 2×")
                if c1.size[0] != 1600 or c2.size[0] != 3200 or rows1 <= 0 or rows2 != 2 * rows1:
                    raise AssertionError(f"caption sizes {c1.size}, {c2.size}")
                strip = c1.convert("RGB").crop((0, 1000, 1600, c1.size[1]))
                if len(set(strip.getdata())) < 3:
                    raise AssertionError("the caption strip is blank")

                text = s1.text.get("attnscope-workspace")
                if text is None:
                    raise AssertionError(f"no attnscope-workspace text chunk; chunks: {list(s1.text)}")
                carried = json.loads(text)
                print(f"  the PNG carries seed {carried['model']['seed']}, cell (2,1) = {carried['embeddings'][2][1]}")
                assert_close(carried["embeddings"], ws["embeddings"], "PNG workspace embeddings vs the file")
                if carried["model"]["seed"] != 7 or carried["tokens"] != ws["tokens"]:
                    raise AssertionError("the PNG's workspace is not the one opened")
                ref = cli_trace(args.cli, ws_path)
                compare_traces(cli_trace(args.cli, os.path.join(work, "s1.png")), ref, "trace s1.png")
                text_path = os.path.join(work, "from_png.json")
                with open(text_path, "w") as f:
                    f.write(text)
                compare_traces(cli_trace(args.cli, text_path), ref, "trace of the PNG's text")

                again = shoot(args.app, display.name, work, os.path.join(work, "s1.png"), "again.png",
                              "--size", "1600x1000")
                expect_size(again, (1600, 1000), "--open s1.png --screenshot again.png")
                again_ws = json.loads(again.text["attnscope-workspace"])
                if again_ws["embeddings"] != carried["embeddings"] or again_ws["model"] != carried["model"]:
                    raise AssertionError("again.png carries a different workspace than s1.png")

            def panels_and_themes():
                dump = os.path.join(work, "layout-1x.json")
                code, out, err = headless(args.app, display.name, work, "--open", ws_path, "--screenshot",
                                          os.path.join(work, "layout-1x.png"), "--dump-layout", dump)
                if code != 0:
                    raise AssertionError(f"the 1× --dump-layout run exited {code}: {err.strip()}")
                with open(dump) as f:
                    d = json.load(f)
                panels = d["panels"]
                # a map's figure is what it drew (title to colorbar labels: "content"), not its tile's blank
                tiles = [m["content"] for m in d["heatmaps"] if m["stage"] == "weights" and m["head"] == 0]
                if not tiles or "heatmaps" not in panels or "inspector" not in panels:
                    raise AssertionError("the 1× dump lacks the heatmaps/inspector panels or head 1's weights")
                tile = tiles[0]
                margin = 8 * 2
                expected = {"heatmaps": (2 * panels["heatmaps"]["w"], 2 * panels["heatmaps"]["h"]),
                            "inspector": (2 * panels["inspector"]["w"], 2 * panels["inspector"]["h"]),
                            "weights": (2 * tile["w"] + 2 * margin, 2 * tile["h"] + 2 * margin)}
                for theme, bg in (("light", LIGHT_BG), ("dark", DARK_BG)):
                    for panel, size in expected.items():
                        im = shot(f"{panel}-{theme}.png", "--panel", panel, "--scale", "2", "--theme", theme)
                        expect_size(im, size, f"--panel {panel} --scale 2 --theme {theme}", PIXEL_SLACK)
                        check_background(im, bg, f"{panel} {theme}", corners=panel == "weights")

            def each_head():
                code, out, err = headless(args.app, display.name, work, "--open", ws_path, "--screenshot",
                                          os.path.join(work, "heads.png"), "--panel", "weights", "--each-head")
                print("  " + out.strip().replace("\n", "\n  "))
                if code != 0:
                    raise AssertionError(f"--each-head exited {code}: {err.strip()}")
                h1, h2 = (Image.open(os.path.join(work, f"heads-h{h}.png")).convert("RGB") for h in (1, 2))
                if h1.size == h2.size and h1.tobytes() == h2.tobytes():
                    raise AssertionError("heads-h1.png and heads-h2.png are identical")
                if os.path.exists(os.path.join(work, "heads-h3.png")):
                    raise AssertionError("a third head's PNG for a 2-head model")

            def autosave():
                state = os.path.join(work, "autosave-state")
                fresh = os.path.join(work, "fresh.png")  # the workspace before the edit, in its text chunk
                edit = write_commands(work, "autosave-edit", [{"do": "screenshot", "path": fresh},
                                                              {"do": "set_cell", "row": 1, "col": 0, "value": 0.99}])
                app = App(args.app, display.name, ["--commands", edit], state_dir=state)  # interactive: autosaves
                with app:
                    app.settled("cell (1,0) = 0.99", lambda d: abs(embeddings(d)[1][0] - 0.99) < 1e-6)
                    before = json.loads(Image.open(fresh).text["attnscope-workspace"])["embeddings"][1][0]
                    print(f"  fresh start: cell (1,0) = {before}")
                    if abs(before - 0.99) < 1e-6:
                        raise AssertionError("the fresh start already has 0.99")
                    # SIGKILL once the autosave holds the edit, or after 20 s. It writes at least 0.5 s
                    # (10× the last write's time) after the last write, on a niced thread: under the
                    # sanitizers beside other tests, the fresh start's write can push the edit's past 2 s.
                    autosave_file, t0, held = os.path.join(state, "attnscope", "autosave.json"), time.time(), False
                    while not held and time.time() - t0 < 20:
                        try:
                            with open(autosave_file) as f:
                                held = abs(json.load(f)["embeddings"][1][0] - 0.99) < 1e-6
                        except (OSError, ValueError, KeyError, IndexError, TypeError):
                            pass
                        if not held:
                            time.sleep(0.05)
                    print(f"  autosave.json {'holds' if held else 'does not hold'} the edit after "
                          f"{time.time() - t0:.1f} s; SIGKILL")
                    app.close(signal.SIGKILL)
                app = App(args.app, display.name, [], state_dir=state)
                with app:
                    d = app.settled("the first trace", lambda d: "cell_0_0" in d["widgets"])
                    print(f"  after SIGKILL and restart: cell (1,0) = {embeddings(d)[1][0]}")
                    if abs(embeddings(d)[1][0] - 0.99) > 1e-6:
                        raise AssertionError("the autosave did not bring back the edit")

            def save():
                path = os.path.join(work, "copy.json")
                shutil.copy(os.path.join(args.presets, "self_attention_v2.json"), path)
                run = lambda name, commands: run_commands(args.app, display.name, work, name, commands,  # noqa: E731
                                                          "--open", path)["state"]
                edit = {"do": "set_cell", "row": 1, "col": 0, "value": 0.99}
                s = run("save-opened", [])
                print(f"  opened: dirty {s['dirty']}, title {s['title']!r}")
                if s["dirty"] or "•" in s["title"] or "copy.json" not in s["title"]:
                    raise AssertionError(f"just opened: dirty {s['dirty']}, title {s['title']!r}")
                s = run("save-edited", [edit])
                print(f"  edited: dirty {s['dirty']}, title {s['title']!r}")
                if abs(s["workspace"]["embeddings"][1][0] - 0.99) > 1e-6:
                    raise AssertionError(f"the edit did not apply: cell (1,0) = {s['workspace']['embeddings'][1][0]}")
                if not s["dirty"] or not s["title"].endswith("•"):
                    raise AssertionError(f"after the edit: dirty {s['dirty']}, title {s['title']!r}")
                s = run("save-saved", [edit, {"do": "save"}])  # what Ctrl+S pushes
                print(f"  saved: dirty {s['dirty']}, title {s['title']!r}")
                if s["dirty"] or "•" in s["title"]:
                    raise AssertionError(f"after saving: dirty {s['dirty']}, title {s['title']!r}")
                with open(path) as f:
                    on_disk = json.load(f)
                print(f"  copy.json: cell (1,0) = {on_disk['embeddings'][1][0]}")
                assert_close(on_disk["embeddings"], s["workspace"]["embeddings"], "copy.json vs the app")
                if abs(on_disk["embeddings"][1][0] - 0.99) > 1e-6:
                    raise AssertionError("copy.json does not have the edit")

            def quit_prompt():
                # Unsaved changes: Ctrl+Q asks first; "Don't save" quits and leaves the file as it was.
                path = os.path.join(work, "quit.json")
                shutil.copy(os.path.join(args.presets, "self_attention_v2.json"), path)
                with open(path) as f:
                    before = f.read()
                edit = write_commands(work, "quit-edit", [{"do": "set_cell", "row": 1, "col": 0, "value": 0.77}])
                app = start_ready(args.app, display.name, ["--open", path, "--commands", edit])
                with app:
                    app.settled("an unsaved edit", lambda d: d["state"]["dirty"])
                    app.key("ctrl+q")
                    app.settled("the unsaved-changes prompt", lambda d: "quit_discard" in d["widgets"])
                    time.sleep(0.5)
                    if app.proc.poll() is not None:
                        raise AssertionError("the app quit without asking about unsaved changes")
                    w = app.layout()["widgets"]["quit_discard"]
                    app.click_at(w["x"] + w["w"] / 2, w["y"] + w["h"] / 2)
                    try:
                        code = app.proc.wait(STEP_TIMEOUT)
                    except subprocess.TimeoutExpired:
                        raise AssertionError("\"Don't save\" did not quit the app")
                    print(f"  prompt shown, \"Don't save\" quit with exit {code}")
                    with open(path) as f:
                        if f.read() != before:
                            raise AssertionError("\"Don't save\" changed the file")
                # No changes: quitting (the command Ctrl+Q pushes) ends the app at once, no prompt.
                app = App(args.app, display.name, ["--open", path, "--commands",
                                                   write_commands(work, "quit-now", [{"do": "quit"}])])
                with app:
                    try:
                        code = app.proc.wait(STEP_TIMEOUT)
                    except subprocess.TimeoutExpired:
                        raise AssertionError("quit with nothing unsaved did not quit")
                    if code != 0:
                        raise AssertionError(f"quit with nothing unsaved: exit {code}")
                    print(f"  nothing unsaved: quit at once (exit {code})")

            def bad_options():
                for bad in (["--panel", "nope"], ["--panel", "heatmaps", "--each-head"], ["--each-head"]):
                    code, out, err = headless(args.app, display.name, work, "--open", ws_path, "--screenshot",
                                              os.path.join(work, "bad.png"), *bad)
                    print(f"  {' '.join(bad)}: exit {code}, {err.strip()!r}")
                    if code != 2 or not err.startswith("error:") or len(err.strip().splitlines()) != 1:
                        raise AssertionError(f"{' '.join(bad)}: exit {code}, stderr {err!r}")
                    if os.path.exists(os.path.join(work, "bad.png")):
                        raise AssertionError("a PNG was written despite the bad option")

            def captions_for_slides():
                def blank_runs(im):
                    """(text?, rows) runs from the bottom: rows with ink against the corner's background."""
                    rgb = im.convert("RGB")
                    W, H = rgb.size
                    bg = rgb.getpixel((W - 2, H - 2))
                    ink = [any(sum(abs(a - b) for a, b in zip(rgb.getpixel((x, y)), bg)) > 60 for x in range(0, W, 2))
                           for y in range(H)]
                    runs = []
                    for y in range(H - 1, -1, -1):
                        if runs and runs[-1][0] == ink[y]:
                            runs[-1][1] += 1
                        else:
                            runs.append([ink[y], 1])
                    return runs
                presets = args.presets
                causal = os.path.join(presets, "causal.json")
                im = shoot(args.app, display.name, work, causal, "cap2.png", "--size", "1280x800", "--scale", "2",
                           "--caption", "--panel", "weights")
                runs = blank_runs(im)  # blank under, the caption, the gap, the colorbar's labels
                expect(not runs[0][0] and runs[1][0] and not runs[2][0], f"caption strip: {runs[:4]}")
                expect(runs[0][1] <= 24 and runs[2][1] <= 40,
                       f"the 2× caption: {runs[0][1]} blank rows under it, {runs[2][1]} between it and the map")
                words = {}
                for preset, want in (("causal", "Causal attention  ·"), ("causal_dropout", "Causal attention, dropout 0.5  ·"),
                                     ("multihead", "Multi-head attention, 2 heads  ·"),
                                     ("self_attention_v1", "Self-attention with trainable weights (SelfAttention_v1)  ·")):
                    svg = os.path.join(work, preset + ".svg")
                    code, out, err = headless(args.app, display.name, work, "--open", os.path.join(presets, preset + ".json"),
                                              "--screenshot", svg, "--caption", "--panel", "weights")
                    expect(code == 0, f"{preset}.svg: exit {code}: {err.strip()}")
                    texts = re.findall(r"<text[^>]*>([^<]*)</text>", open(svg, encoding="utf-8").read())
                    caption = next((t for t in texts if "seed" in t), "")
                    words[preset] = caption
                    expect(caption.startswith(want) and "+ dropout" not in caption and not re.match(r"\d[ab]? ·", caption),
                           f"{preset}: caption {caption!r}, expected it to start {want!r}")
                print(f"  2× caption: {runs[2][1]} px under the map, {runs[0][1]} under itself; {words['causal_dropout']!r}")

            code = run_checks([("captions for slides: close under the figure, in the notebook's words", captions_for_slides),
                               ("PNG sizes, caption, carried workspace", png_sizes_and_workspace),
                               ("panels at 2×, light and dark", panels_and_themes),
                               ("--each-head", each_head),
                               ("autosave survives SIGKILL", autosave),
                               ("save writes the file", save),
                               ("quit asks about unsaved changes", quit_prompt),
                               ("bad options", bad_options)])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
