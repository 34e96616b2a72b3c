#!/usr/bin/python3
"""Clean figures and exports that do what they say.

attnscope-cli (no display):
- `export --format svg|pdf` writes one figure per matrix, named as the CSV files are (batch and
  head from 1: b1_h1_weights). The SVG parses (xml.etree) and holds the map's numbers as <text>
  elements, laid out as the notebook prints the matrix: the causal example's weights
  [[1.0000, 0, …], [0.5517, 0.4483, 0, …], …] (notebook 004, In[30]) and its raw scores below the
  diagonal [0.2899], [0.4656, 0.1723], … (In[29]); −∞ in the 15 masked cells; the 0/1 mask (1 above
  the diagonal, as torch.triu(ones, diagonal=1)). No bitmap: cells are shapes. The PDF's text
  (pdftotext -layout) has the same rows.
- CSV files have a header row of key tokens and a first column of query tokens (T × T), or
  d0, d1, … across (T × w); tokens with commas and quotes survive Python's csv module.

attnscope (--app, under Xvfb):
- `--screenshot F.svg|F.pdf --panel weights --head 1` writes the vector figure, titled as the grid
  titles the map (the layout dump's title), with the notebook's numbers; so does the module's
  output (the notebook's [[0.3190, 0.4858], …]); a caption names stages by their titles, never by
  ids; the mask is a figure too (PNG cells coloured 0/1, SVG 0/1 labels).
- `--screenshot F.svg --panel model`, a .jpg, and a `screenshot` command of the window as .svg are
  refused with one clear line; nothing is written.
- A PNG of one map has no selection outline unless --selection (the selection's red is absent
  without it, present with it), and no stray line down its edges (the margin is background).
- The save dialog of one map (xdotool): starts in the home folder, not the folder the app was
  started from, then in the last folder used; lists files; the extension follows the chosen
  format; typing x.csv in the .npy choice writes CSV; a name without extension takes the chosen
  one's (SVG); an extension that is no format is one message and writes nothing.

Usage: test_figures.py --cli CLI --assets ASSETS [--app APP]   (Debian's /usr/bin/python3)
"""
import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
BOOK_TOKENS = ["Your", "journey", "starts", "with", "one", "step"]
# Notebook 004 In[30]: the causal weights (seed 789, CausalAttention, no dropout).
WEIGHTS = [[1.0000, 0.0, 0.0, 0.0, 0.0, 0.0],
           [0.5517, 0.4483, 0.0, 0.0, 0.0, 0.0],
           [0.3800, 0.3097, 0.3103, 0.0, 0.0, 0.0],
           [0.2758, 0.2460, 0.2462, 0.2319, 0.0, 0.0],
           [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0],
           [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]]
# Notebook 004 In[29]: the raw scores with −inf above the diagonal; below it, the scores themselves.
RAW_SCORES_BELOW = [[0.2899],
                    [0.4656, 0.1723],
                    [0.4594, 0.1703, 0.1731],
                    [0.2642, 0.1024, 0.1036, 0.0186],
                    [0.2183, 0.0874, 0.0882, 0.0177, 0.0786],
                    [0.3408, 0.1270, 0.1290, 0.0198, 0.1290, 0.0078]]
PRINTED = 1.01e-4  # four printed decimals: at most one unit in the last place apart
LIGHT_BG = (255, 255, 255)
DARK_BG = (23, 23, 28)
SELECTION = {"light": (230, 40, 40), "dark": (255, 90, 90)}
NUMBER = re.compile(r"^[−-]?(\d+\.?\d*|\.\d+)(e[+−-]?\d+)?$|^[−-]?∞$")


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def value(text):
    t = text.replace("−", "-")
    return float("-inf") if t == "-∞" else float("inf") if t == "∞" else float(t)


def run(cmd, env=None, cwd=None, timeout=180):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


# ---------------------------------------------------------------- reading figures

def svg_texts(path, centred=False):
    """Every <text> of the SVG as (content, x, y) — only those centred on their x (a cell's
    number, not the colorbar's ends) with `centred`: the document must parse."""
    root = ET.parse(path).getroot()
    expect(root.tag == SVG + "svg", f"{path}: the root is {root.tag}, not <svg>")
    expect(not list(root.iter(SVG + "image")), f"{path}: the cells are a bitmap (<image>), not shapes")
    out = []
    for t in root.iter(SVG + "text"):
        if not centred or t.get("text-anchor") == "middle":
            out.append(("".join(t.itertext()), float(t.get("x")), float(t.get("y"))))
    return out


def svg_matrix(path, rows, cols):
    """The numbers of the cells as drawn: centred texts that are numbers, grouped by baseline into
    rows of `cols`, top to bottom, left to right."""
    by_y = {}
    for text, x, y in svg_texts(path, centred=True):
        if NUMBER.match(text):
            by_y.setdefault(round(y, 1), []).append((x, text))
    grid = [[t for _, t in sorted(cells)] for y, cells in sorted(by_y.items()) if len(cells) == cols]
    expect(len(grid) == rows, f"{path}: {len(grid)} rows of {cols} numbers as <text>, expected {rows}: {by_y}")
    return grid


def pdf_rows(path, tokens):
    """pdftotext -layout: for each token, the numbers on its line (the row of that query)."""
    p = run(["pdftotext", "-layout", path, "-"])
    expect(p.returncode == 0, f"pdftotext {path}: {p.stderr.strip()}")
    rows = {}
    for line in p.stdout.splitlines():
        words = line.split()
        if len(words) > 1 and words[0] in tokens and all(NUMBER.match(w) for w in words[1:]):
            rows[words[0]] = words[1:]
    expect(set(rows) == set(tokens), f"{path}: rows for {sorted(rows)}, expected every token; text:\n{p.stdout}")
    return [rows[t] for t in tokens]


def expect_printed(grid, printed, what, lower_only=False):
    for i, row in enumerate(printed):
        for j, want in enumerate(row):
            got = value(grid[i][j])
            expect(abs(got - want) <= PRINTED, f"{what}: cell ({i},{j}) reads {grid[i][j]}, the notebook prints {want:.4f}")
        if not lower_only:
            expect(len(grid[i]) == len(row), f"{what}: row {i} has {len(grid[i])} cells")


def expect_mask(grid, what):
    for i, row in enumerate(grid):
        want = ["1" if j > i else "0" for j in range(len(row))]  # torch.triu(ones, diagonal=1)
        expect(row == want, f"{what}: row {i} reads {row}, expected {want}")


# ---------------------------------------------------------------- attnscope-cli

def cli_checks(cli, assets, work):
    causal = os.path.join(assets, "presets", "causal.json")
    p = run([cli, "trace", causal])
    expect(p.returncode == 0, p.stderr)
    trace = json.loads(p.stdout)
    stems, tables = set(), set()
    for b, batch in enumerate(trace["batches"]):
        for h, head in enumerate(batch["heads"]):
            stems |= {f"b{b + 1}_h{h + 1}_{stage}" for stage in head if stage != "statistics"}
            tables.add(f"b{b + 1}_h{h + 1}_statistics")  # tables (CSV, .npy), not figures
        stems |= {f"b{b + 1}_context", f"b{b + 1}_output"}
        if batch["heads"]:
            tables.add(f"b{b + 1}_statistics")
    stems |= {f"param_{name}" for name in trace["parameters"]}

    for fmt in ("svg", "pdf", "csv"):
        out = os.path.join(work, "cli-" + fmt)
        p = run([cli, "export", causal, "--format", fmt, "--out", out])
        expect(p.returncode == 0 and p.stderr == "", f"export --format {fmt}: exit {p.returncode}: {p.stderr}")
        files = sorted(os.listdir(out))
        expect(files == sorted(s + "." + fmt for s in stems | (tables if fmt == "csv" else set())),
               f"export --format {fmt}: files {files[:6]}…, expected the trace's maps numbered from 1")
        print(f"  export --format {fmt}: {len(files)} files, e.g. {files[0]}")

    svg = os.path.join(work, "cli-svg")
    expect_printed(svg_matrix(os.path.join(svg, "b1_h1_weights.svg"), 6, 6), WEIGHTS, "weights.svg")
    expect_printed(svg_matrix(os.path.join(svg, "b1_h1_scores.svg"), 6, 6), RAW_SCORES_BELOW, "scores.svg",
                   lower_only=True)
    masked = [t for t, _, _ in svg_texts(os.path.join(svg, "b1_h1_masked_scores.svg"))]
    expect(masked.count("−∞") == 15, f"masked_scores.svg: {masked.count('−∞')} cells read −∞, expected 15")
    expect_mask(svg_matrix(os.path.join(svg, "b1_h1_mask.svg"), 6, 6), "mask.svg")
    tokens = [t for t, _, _ in svg_texts(os.path.join(svg, "b1_h1_weights.svg"))]
    expect(all(tok in tokens for tok in BOOK_TOKENS), f"weights.svg: token labels missing from {tokens}")
    print("  SVG: the notebook's weights and raw scores, 15 × −∞, the 0/1 mask, token labels, as <text>")
    ticks = [t for t, _, _ in svg_texts(os.path.join(svg, "b1_h1_weights.svg"))]
    expect(all(t in ticks for t in ("0.2", "0.4", "0.6", "0.8")), f"weights.svg: no colorbar ticks among {ticks[-8:]}")
    # A parameter's figure says what it is: its shape in words and its axes (nn.Linear: out × in).
    param = [t for t, _, _ in svg_texts(os.path.join(svg, "param_W_query.weight.svg"))]
    expect(param[0] == "W_query.weight  2 × 3 (d_out × d_in)" and all(a in param for a in ("q0", "q1", "d0", "d1", "d2")),
           f"param_W_query.weight.svg: {param}")
    print(f"  SVG: colorbar ticks 0.2–0.8; a parameter titled {param[0]!r}, its axes q0 q1 × d0 d1 d2")

    pdf = os.path.join(work, "cli-pdf")
    expect_printed(pdf_rows(os.path.join(pdf, "b1_h1_weights.pdf"), BOOK_TOKENS), WEIGHTS, "weights.pdf")
    expect_mask(pdf_rows(os.path.join(pdf, "b1_h1_mask.pdf"), BOOK_TOKENS), "mask.pdf")
    print("  PDF (pdftotext): the notebook's weights row by row, the 0/1 mask")

    with open(os.path.join(work, "cli-csv", "b1_h1_weights.csv"), newline="") as f:
        rows = list(csv.reader(f))
    expect(rows[0] == ["query"] + BOOK_TOKENS, f"weights.csv header {rows[0]}")
    expect([r[0] for r in rows[1:]] == BOOK_TOKENS, f"weights.csv first column {[r[0] for r in rows[1:]]}")
    expect_printed([r[1:] for r in rows[1:]], WEIGHTS, "weights.csv")
    with open(os.path.join(work, "cli-csv", "b1_h1_context.csv"), newline="") as f:
        rows = list(csv.reader(f))
    expect(rows[0] == ["token", "d0", "d1"] and [r[0] for r in rows[1:]] == BOOK_TOKENS,
           f"context.csv: header {rows[0]}, first column {[r[0] for r in rows[1:]]}")
    print(f"  CSV: header {rows[0]} …, query tokens down the first column")

    odd = ["a,b", 'say "hi"', " x "]
    ws = {"format": "attnscope-workspace", "version": 1, "tokens": odd,
          "embeddings": {"random": "uniform", "seed": 1, "rows": 3, "cols": 2}, "model": {"variant": "simple"}}
    path = os.path.join(work, "odd.json")
    with open(path, "w") as f:
        json.dump(ws, f)
    out = os.path.join(work, "odd-csv")
    p = run([cli, "export", path, "--format", "csv", "--out", out])
    expect(p.returncode == 0, p.stderr)
    with open(os.path.join(out, "b1_h1_weights.csv"), newline="") as f:
        rows = list(csv.reader(f))
    expect(rows[0] == ["query"] + odd and [r[0] for r in rows[1:]] == odd, f"quoted tokens read back as {rows}")
    out = os.path.join(work, "odd-svg")
    p = run([cli, "export", path, "--format", "svg", "--out", out])
    expect(p.returncode == 0, p.stderr)
    texts = [t for t, _, _ in svg_texts(os.path.join(out, "b1_h1_weights.svg"))]
    expect('say "hi"' in texts and "a,b" in texts, f"odd tokens in the SVG: {texts}")
    print("  tokens with commas and quotes: CSV quoted, SVG escaped; both read back")

    p = run([cli, "export", causal, "--format", "tiff", "--out", os.path.join(work, "never")])
    lines = p.stderr.splitlines()
    expect(p.returncode == 2 and len(lines) == 1 and "svg" in lines[0] and "pdf" in lines[0] and "tiff" in lines[0],
           f"--format tiff: exit {p.returncode}, {p.stderr!r}")
    expect(not os.path.exists(os.path.join(work, "never")), "--format tiff created the folder")


# ---------------------------------------------------------------- attnscope

def app_checks(app_exe, cli, assets, work):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gui"))
    from PIL import Image  # noqa: E402
    from test_teaching import Display, start_ready, write_commands  # noqa: E402

    presets = os.path.join(assets, "presets")
    causal = os.path.join(presets, "causal.json")
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)

    with Display() as display:
        env = dict(os.environ, DISPLAY=display.name, HOME=home, XDG_STATE_HOME=os.path.join(work, "state"))

        def shot(out, *args, ws=causal, code=0):
            dump = out + ".layout.json"
            p = run([app_exe, "--open", ws, "--screenshot", out, "--dump-layout", dump, *args], env=env)
            expect(p.returncode == code, f"--screenshot {os.path.basename(out)} {' '.join(args)}: exit {p.returncode}, "
                                         f"expected {code}: {p.stderr.strip()}")
            if code == 0:
                expect(f"saved {out}" in p.stdout, f"no 'saved {out}' in {p.stdout!r}")
                with open(dump) as f:
                    return json.load(f)
            return p

        # Vector figures of one map, titled as the grid titles it.
        for fmt in ("svg", "pdf"):
            out = os.path.join(work, "weights." + fmt)
            d = shot(out, "--panel", "weights", "--head", "1", "--caption")
            title = next(m["title"] for m in d["heatmaps"] if m["stage"] == "weights" and m["head"] == 0)
            if fmt == "svg":
                expect_printed(svg_matrix(out, 6, 6), WEIGHTS, "--screenshot weights.svg")
                texts = [t for t, _, _ in svg_texts(out)]
                expect(any(t.startswith(title) for t in texts), f"weights.svg: no title starting {title!r} in {texts[:3]}")
            else:
                expect_printed(pdf_rows(out, BOOK_TOKENS), WEIGHTS, "--screenshot weights.pdf")
                text = run(["pdftotext", out, "-"]).stdout
                expect(title.split()[0] in text, f"weights.pdf: the title {title!r} is not in its text")
            print(f"  --screenshot weights.{fmt}: the notebook's weights, titled {title!r}")

        # The module's output, one click away in the grid, is a figure too: the notebook's
        # MultiHeadAttention output [[0.3190, 0.4858], [0.2943, 0.3897], …] (seed 123, first element).
        out = os.path.join(work, "output.svg")
        shot(out, "--panel", "output", ws=os.path.join(presets, "multihead.json"))
        expect_printed(svg_matrix(out, 6, 2)[:2], [[0.3190, 0.4858], [0.2943, 0.3897]], "--panel output as SVG")
        print("  --panel output: the notebook's [[0.3190, 0.4858], [0.2943, 0.3897], …] as <text>")

        # Captions name stages by title, never by id.
        out = os.path.join(work, "masked.svg")
        shot(out, "--panel", "masked_scores", "--caption")
        ids = set(json.loads(run([cli, "trace", causal]).stdout)["batches"][0]["heads"][0])
        texts = [t for t, _, _ in svg_texts(out)]
        expect(not [t for t in texts if any(i in t for i in ids if "_" in i)], f"masked.svg names a stage by id: {texts}")
        expect(texts.count("−∞") == 15, f"masked.svg: {texts.count('−∞')} −∞ cells")
        print(f"  --caption: {texts[-1]!r}")

        # The 0/1 mask: a vector figure and a PNG.
        out = os.path.join(work, "mask.svg")
        shot(out, "--panel", "mask")
        expect_mask(svg_matrix(out, 6, 6), "--screenshot mask.svg")
        out = os.path.join(work, "mask.png")
        d = shot(out, "--panel", "mask", "--theme", "light")
        img = Image.open(out).convert("RGB")
        reds = [px for px in img.getdata() if max(abs(px[k] - SELECTION["light"][k]) for k in range(3)) < 40]
        expect(not reds, f"mask.png: {len(reds)} pixels of the selection's red")
        viridis = []
        with open(os.path.join(assets, "colormaps", "viridis.csv")) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    viridis.append(tuple(int(x) for x in line.split(",")))
        lo, hi = viridis[0], viridis[255]
        count = lambda c: sum(1 for px in img.getdata() if max(abs(px[k] - c[k]) for k in range(3)) <= 2)  # noqa: E731
        expect(count(hi) > 0 and count(lo) > 0 and 0.4 < count(hi) / count(lo) < 1.1,
               f"mask.png: {count(hi)} pixels of 1's colour, {count(lo)} of 0's (15 and 21 cells expected)")
        print(f"  --panel mask: SVG 0/1 as triu(ones, 1); PNG {count(hi)} px of 1, {count(lo)} px of 0")

        # What cannot be a vector figure, and unknown extensions: one line, nothing written.
        for out, args, words in ((os.path.join(work, "model.svg"), ["--panel", "model"], ["model", "weights", "mask", "png"]),
                                 (os.path.join(work, "window.pdf"), [], ["window", "weights", "png"]),
                                 (os.path.join(work, "x.jpg"), ["--panel", "weights"], [".jpg", ".png", ".svg", ".pdf"])):
            p = shot(out, *args, code=2)
            lines = p.stderr.strip().splitlines()
            expect(len(lines) == 1 and lines[0].startswith("error: ") and all(w in lines[0] for w in words),
                   f"{os.path.basename(out)} {args}: {p.stderr!r}")
            expect(not os.path.exists(out), f"{out} was written")
            print(f"  {os.path.basename(out)} {' '.join(args)}: {lines[0]}")
        script = write_commands(work, "svg-window", [{"do": "screenshot", "path": os.path.join(work, "cmd.svg")}])
        p = run([app_exe, "--open", causal, "--commands", script, "--screenshot", os.path.join(work, "after.png")], env=env)
        expect(p.returncode == 2 and "error: command 0 (screenshot)" in p.stderr and "png" in p.stderr,
               f"a screenshot command of the window as .svg: exit {p.returncode}, {p.stderr!r}")

        # No selection outline unless asked for; no stray line at the edges of a map.
        multihead = os.path.join(presets, "multihead.json")
        for theme in ("light", "dark"):
            plain, marked = (os.path.join(work, f"sel-{theme}-{k}.png") for k in ("off", "on"))
            d = shot(plain, "--panel", "weights", "--head", "1", "--theme", theme, ws=multihead)
            shot(marked, "--panel", "weights", "--head", "1", "--theme", theme, "--selection", ws=multihead)
            expect(d["state"]["token"] == 1, "the selected token is not 'journey'")
            a, b = Image.open(plain).convert("RGB"), Image.open(marked).convert("RGB")
            expect(a.size == b.size, f"{theme}: sizes differ with --selection: {a.size}, {b.size}")
            red = SELECTION[theme]
            near = lambda px: max(abs(px[k] - red[k]) for k in range(3)) < 40  # noqa: E731
            with_sel = [(x, y) for y in range(b.size[1]) for x in range(b.size[0]) if near(b.getpixel((x, y)))]
            without = [(x, y) for (x, y) in with_sel if near(a.getpixel((x, y)))]
            expect(len(with_sel) > 2 * a.size[0] * 0.5, f"{theme}: --selection shows only {len(with_sel)} red pixels")
            ys = sorted({y for _, y in with_sel})
            expect(not without and not [px for px in a.getdata() if near(px)],
                   f"{theme}: {len(without)} pixels of the selected row's outline without --selection")
            print(f"  {theme}: --selection outlines rows y {ys[0]}–{ys[-1]} ({len(with_sel)} px); without it, none")

        # A lesson's step is about the selected token ("journey"): a screenshot taken while the lesson
        # is open keeps its outline (one taken of step 6 left it out); `"selection": false` does not.
        lesson = os.path.join(assets, "lessons", "chapter3.json")
        near = lambda px: max(abs(px[k] - SELECTION["dark"][k]) for k in range(3)) < 40  # noqa: E731
        for asked, outlined in ((None, True), (False, False)):
            out = os.path.join(work, f"lesson-selection-{asked}.png")
            shot_command = {"do": "screenshot", "path": out, "panel": "weights"}
            if asked is not None:
                shot_command["selection"] = asked
            script = write_commands(work, f"lesson-selection-{asked}",
                                    [{"do": "lesson_open", "path": lesson, "step": 6}, shot_command])
            p = run([app_exe, "--theme", "dark", "--commands", script, "--screenshot", os.path.join(work, "after.png")],
                    env=env)
            expect(p.returncode == 0 and os.path.exists(out), f"lesson screenshot: exit {p.returncode}, {p.stderr!r}")
            red = sum(1 for px in Image.open(out).convert("RGB").getdata() if near(px))
            expect((red > 100) == outlined, f"lesson step 6, selection {asked}: {red} pixels of the outline")
            print(f"  a lesson's screenshot, selection {asked}: {red} pixels of the selected row's outline")

        dropout = os.path.join(presets, "causal_dropout.json")
        for theme, bg in (("light", LIGHT_BG), ("dark", DARK_BG)):
            for stage in ("weights", "scores"):
                out = os.path.join(work, f"edge-{theme}-{stage}.png")
                shot(out, "--panel", stage, "--head", "1", "--theme", theme, "--scale", "2", ws=dropout)
                img = Image.open(out).convert("RGB")
                w, h = img.size
                edges = [(x, y) for x in (0, 1, w - 2, w - 1) for y in range(h)] + \
                        [(x, y) for y in (h - 2, h - 1) for x in range(w)]
                off = [(x, y, img.getpixel((x, y))) for x, y in edges
                       if max(abs(img.getpixel((x, y))[k] - bg[k]) for k in range(3)) > 3]
                expect(not off, f"{out}: {len(off)} edge pixels are not the background {bg}, e.g. {off[:3]}")
        print("  maps' edges: background on the left, right and bottom (no window border)")

    # The save dialog of one map, driven with xdotool.
    with Display() as display:
        repo = os.path.dirname(os.path.abspath(assets))
        state = os.path.join(work, "dialog-state")
        figs = os.path.join(work, "figs")
        os.makedirs(figs, exist_ok=True)
        here = os.getcwd()
        os.chdir(repo)  # started from the repository: the dialog must not open there
        try:
            def dialog(name, fmt):
                cmds = write_commands(work, name, [{"do": "dialog", "which": "export_map", "stage": "weights",
                                                    "head": 0, "format": fmt}])
                app = start_ready(app_exe, display.name, ["--open", causal, "--commands", cmds], state_dir=state)
                app.settled("the dialog", lambda d: "file_dialog" in d["state"] and "file_name" in d["widgets"])
                return app

            def typed(app, name):
                app.click("file_name")
                app.key("ctrl+a")
                app.type(name)
                app.key("Return")

            app = dialog("first", "npy")
            with app:
                user_home = app.env["HOME"]
                for f in ("notes.txt", "old.csv"):
                    open(os.path.join(user_home, f), "w").close()
                d = app.wait_for("the home folder's files", lambda d: "old.csv" in d["state"]["file_dialog"]["files"])
                fd = d["state"]["file_dialog"]
                print(f"  dialog: opens in {fd['folder']}, lists {fd['files']}, name {fd['name']!r}")
                expect(os.path.realpath(fd["folder"]) == os.path.realpath(user_home),
                       f"the dialog opened in {fd['folder']}, not the home folder (started from {repo})")
                expect("notes.txt" in fd["files"], f"files listed: {fd['files']}")
                expect(fd["name"] == "b1_h1_weights.npy" and fd["format"] == "npy", f"first name {fd['name']!r}")
                app.click("file_format_pdf")
                d = app.wait_for("PDF chosen", lambda d: d["state"]["file_dialog"]["format"] == "pdf")
                expect(d["state"]["file_dialog"]["name"] == "b1_h1_weights.pdf",
                       f"PDF chosen: the name is {d['state']['file_dialog']['name']!r}")
                app.click("file_format_npy")
                app.wait_for("npy again", lambda d: d["state"]["file_dialog"]["name"] == "b1_h1_weights.npy")
                app.click("file_folder")
                app.key("ctrl+a")
                app.type(figs)
                typed(app, "x.csv")  # in the .npy choice
                target = os.path.join(figs, "x.csv")
                app.wait_for("x.csv written", lambda d: os.path.exists(target))
                time.sleep(0.3)
            with open(target, "rb") as f:
                raw = f.read()
            expect(not raw.startswith(b"\x93NUMPY"), "x.csv holds NumPy bytes")
            rows = list(csv.reader(io.StringIO(raw.decode())))
            if rows and not NUMBER.match(rows[0][0]):  # a header row: the key tokens
                expect(rows[0] == ["query"] + BOOK_TOKENS, f"x.csv header {rows[0]}")
                rows = [r[1:] for r in rows[1:]]
            expect_printed(rows, WEIGHTS, "x.csv")
            print(f"  typed x.csv in the .npy choice: CSV written ({len(raw)} bytes)")

            app = dialog("second", "svg")
            with app:
                fd = app.layout()["state"]["file_dialog"]
                expect(os.path.realpath(fd["folder"]) == os.path.realpath(figs),
                       f"the second dialog opened in {fd['folder']}, not the last folder used {figs}")
                expect("x.csv" in fd["files"], f"files listed: {fd['files']}")
                typed(app, "fig")
                target = os.path.join(figs, "fig.svg")
                app.wait_for("fig.svg written", lambda d: os.path.exists(target))
                time.sleep(0.5)
            expect_printed(svg_matrix(target, 6, 6), WEIGHTS, "fig.svg from the dialog")
            print("  next dialog: opens in the last folder used; 'fig' in the SVG choice wrote fig.svg")

            app = dialog("third", "csv")
            with app:
                typed(app, "x.txt")
                d = app.wait_for("the message", lambda d: d["state"]["file_dialog"]["message"])
                msg = d["state"]["file_dialog"]["message"]
                expect(".txt" in msg and ".csv" in msg and ".pdf" in msg, f"the message: {msg!r}")
                time.sleep(0.5)
                expect(not os.path.exists(os.path.join(figs, "x.txt")), "x.txt was written")
                expect(app.layout()["state"].get("file_dialog"), "the dialog closed")
            print(f"  x.txt: {msg!r}; nothing written, the dialog stays")
        finally:
            os.chdir(here)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--assets", required=True)
    ap.add_argument("--app")
    a = ap.parse_args()
    for tool in ["pdftotext"] + (["Xvfb", "xdotool"] if a.app else []):
        if shutil.which(tool) is None:  # never skip silently
            sys.exit(f"error: {tool} not found (third_party/debian-packages.txt, [test])")
    work = tempfile.mkdtemp(prefix="attnscope-figures-")
    checks = [("attnscope-cli", lambda: cli_checks(a.cli, a.assets, work))]
    if a.app:
        checks = [("attnscope", lambda: app_checks(a.app, a.cli, a.assets, work))]
    failed = []
    for name, check in checks:
        print(f"[{name}]")
        try:
            check()
            print("  ok")
        except Exception as e:  # noqa: BLE001
            failed.append(name)
            print(f"  FAILED: {type(e).__name__}: {e}")
    if not failed:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"(files kept in {work})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
