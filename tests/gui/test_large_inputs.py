"""Large inputs (docs/DESIGN.md §3.4): go to a token, zoom that keeps every map.

On GPT-2 small (T = 1024), through the `go_to` command the header's field sends:
- a name ("t500") selects that token and zooms every map to the 8 tokens around it — never fewer
  (kMinZoomCells), so the T × 64 maps keep rows to show;
- a range typed as numbers from 1 ("400-431") shows exactly queries and keys 399 … 430;
- a range by 0-based index and `to`; the last token; a name in another case;
- a name that is no token refuses with one message naming it, and changes nothing;
- the book's six tokens: a range covering them all is no zoom at all;
- upright key labels keep every character, the rightmost map's last one ("t1024") too: ImGui used
  to drop the glyphs that ran past the window's edge before the text was turned upright;
- a token named with 50 000 characters is drawn at once, its labels cut.

Usage: test_large_inputs.py --app APP --cli CLI --presets PRESETS_DIR
"""
import os
import re

import numpy as np
from PIL import Image
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_teaching import Display, arguments, run_checks, run_commands, write_commands  # noqa: E402


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def main():
    args = arguments(__doc__.split("\n")[0])
    work = tempfile.mkdtemp(prefix="attnscope-large-")
    gpt2 = os.path.join(args.presets, "gpt2-small.json")
    multihead = os.path.join(args.presets, "multihead.json")

    try:
        with Display() as display:
            def headless(name, commands, preset=gpt2):
                return run_commands(args.app, display.name, work, name, commands, "--open", preset, "--size", "1280x800")

            def windows(d):
                return {e["id"]: e["window"] for e in d["heatmaps"] if e.get("stage") in ("scores", "weights", "context")}

            def name():
                d = headless("t500", [{"do": "go_to", "text": "t500"}])
                expect(d["state"]["token"] == 499, f"t500: token {d['state']['token']} selected, want 499")
                for id_, w in windows(d).items():
                    expect(w["rows"] == 8 and w["row0"] <= 499 < w["row0"] + w["rows"], f"t500: {id_} shows rows {w}")
                sq = [w for i, w in windows(d).items() if "context" not in i]
                expect(all(w["cols"] == 8 and w["col0"] <= 499 < w["col0"] + 8 for w in sq), f"t500: keys {sq[:2]}")
                d = headless("T500", [{"do": "go_to", "text": "T500"}])
                expect(d["state"]["token"] == 499, "T500 (another case) did not find t500")
                print("  t500: token 499 selected, every map shows 8 rows around it (never fewer)")

            def ranges():
                d = headless("range", [{"do": "go_to", "text": "400-431"}])
                for id_, w in windows(d).items():
                    expect(w["row0"] == 399 and w["rows"] == 32, f"400-431: {id_} shows rows {w}")
                d = headless("index", [{"do": "go_to", "index": 100, "to": 115}])
                for id_, w in windows(d).items():
                    expect(w["row0"] == 100 and w["rows"] == 16, f"index 100 to 115: {id_} shows rows {w}")
                d = headless("last", [{"do": "go_to", "index": 1023}])
                for id_, w in windows(d).items():
                    expect(w["row0"] + w["rows"] == 1024 and w["rows"] == 8, f"last token: {id_} shows rows {w}")
                print("  400-431 → rows 399…430; index 100 to 115 → 100…115; the last token → 1016…1023")

            def module_maps_zoom_too():
                # A range with the module's output shown (T × 256 on medium, T × 768 on GPT-2 small):
                # every map zooms — the output's rows follow the range, its dimensions show the first
                # as many — and the cells stay large (the unzoomed output made them 0.66 px on medium,
                # the weights a 21-px strip).
                medium = os.path.join(args.presets, "medium.json")
                for preset in (medium, gpt2):
                    d = headless("module-zoom", [{"do": "view", "field": "columns", "value": ["scores", "weights", "context", "output"]},
                                                 {"do": "go_to", "text": "100-131"}], preset=preset)
                    maps = [e for e in d["heatmaps"] if e.get("stage") in ("scores", "weights", "context", "output")]
                    out = [e for e in maps if e.get("module")]
                    expect(out and all(e["window"]["rows"] == 32 and e["window"]["row0"] == 99 and e["window"]["cols"] == 32 for e in out),
                           f"{os.path.basename(preset)}: the output's window {[e['window'] for e in out]}")
                    small_maps = [e["id"] for e in maps if e["cell"] * 32 < 96]
                    expect(not small_maps, f"{os.path.basename(preset)}: maps under 96 px: {small_maps} (cell {maps[0]['cell']:.2f})")
                    print(f"  {os.path.basename(preset)}, 100-131 with the output: every map 32 rows, cells {maps[0]['cell']:.1f} px")

            def refused():
                path = write_commands(work, "bad", [{"do": "go_to", "text": "zebra"}])
                out = subprocess.run([args.app, "--open", gpt2, "--commands", path, "--screenshot", os.path.join(work, "bad.png")],
                                     env=dict(os.environ, DISPLAY=display.name, HOME=work, XDG_STATE_HOME=work),
                                     capture_output=True, text=True, timeout=120)
                expect(out.returncode == 2 and "no token 'zebra'" in out.stderr,
                       f"go_to zebra: exit {out.returncode}, stderr {out.stderr.strip()!r}")
                print(f"  zebra: {out.stderr.strip()}")

            def small():
                d = headless("book", [{"do": "go_to", "text": "Your-step"}], preset=multihead)
                expect(all(w["rows"] == 6 and w["row0"] == 0 for w in windows(d).values()), f"book: {windows(d)}")
                expect(d["state"]["token"] == 0, "book: Your not selected")
                print("  the book's 6 tokens: 'Your-step' is the whole map, no zoom")

            def last_key_labels():
                # The lesson's GPT-2 step at 1280 × 800 labels every 33rd key, t1024 the last, over
                # maps whose right edge is the window's: the rightmost label must reach as high as
                # the same label over the map on its left.
                lesson = os.path.join(os.path.dirname(os.path.abspath(args.presets)), "lessons", "chapter3.json")
                d = run_commands(args.app, display.name, work, "labels", [], "--lesson", lesson, "--step", "13",
                                 "--size", "1280x800")
                png = np.asarray(Image.open(os.path.join(work, "labels.png")).convert("RGB")).astype(int)
                maps = [e for e in d["heatmaps"] if e.get("wholly_in_view") and e["cols"] == 1024]
                maps.sort(key=lambda e: e["cells"]["x"])
                expect(len(maps) >= 2, f"want two 1024 × 1024 maps side by side, have {len(maps)}")

                def last_label(e):
                    """(x, top y) of the rightmost label over the map's columns."""
                    c = e["cells"]
                    y0, y1 = int(c["y"]) - 40, int(c["y"]) - 2  # the label band, under the title
                    band = png[y0:y1, int(c["x"]):int(c["x"] + c["w"]) + 8]
                    background = png[int(c["y"]) - 2, int(c["x"]) - 30]  # left of the grid, by the labels
                    ink = np.abs(band - background).sum(axis=2) > 60
                    cols = np.nonzero(ink.any(axis=0))[0]
                    expect(cols.size > 0, f"{e['id']}: no key labels")
                    right = cols[-1]
                    label = ink[:, max(right - 14, 0):right + 1]  # the last label: a text line turned upright
                    return int(c["x"]) + int(right), y0 + int(np.nonzero(label.any(axis=1))[0][0])

                (_, first), (_, last) = last_label(maps[0]), last_label(maps[-1])
                expect(abs(first - last) <= 1,
                       f"the last key's label over {maps[-1]['id']} starts at y {last}, over {maps[0]['id']} at "
                       f"y {first}: characters of the rightmost map's label are missing")
                print(f"  the last key's label reaches y {first} over {maps[0]['id']} and y {last} over {maps[-1]['id']}")

            def zoomed_vector_figures():
                # A zoomed map saved as SVG or PDF is zoomed as on screen (as its PNG is): the
                # tokens 400–431 of GPT-2 small's weights, not all 1024.
                for fmt in ("svg", "pdf"):
                    path = os.path.join(work, "zoomed." + fmt)
                    headless("zoomed-" + fmt, [{"do": "go_to", "text": "400-431"},
                                               {"do": "screenshot", "path": path, "panel": "weights", "head": 0}])
                    expect(os.path.exists(path), f"no {path}")
                    if fmt == "svg":
                        texts = re.findall(r"<text[^>]*>([^<]*)</text>", open(path, encoding="utf-8").read())
                    else:
                        texts = subprocess.run(["pdftotext", path, "-"], capture_output=True, text=True).stdout.split()
                    labels = {t.strip() for t in texts if re.fullmatch(r"t\d+", t.strip())}
                    want = {f"t{i}" for i in range(400, 432)}
                    expect(want <= labels and not labels - want, f"zoomed.{fmt}: token labels {sorted(labels)[:5]}… ({len(labels)})")
                    expect(any("400–431" in t for t in texts) or "400–431" in " ".join(texts), f"zoomed.{fmt}: its title does not say 400–431")
                    print(f"  zoomed.{fmt}: the 32 tokens t400–t431 on both axes, titled so")

            def long_token_name():
                # A token named with 50 000 characters (a paste gone wrong): its labels are cut with
                # "…" by a binary search. Dropping a character at a time measured the name 50 000
                # times a frame: the window froze for minutes (run_commands' limit is 60 s).
                name = "A" * 50000
                d = headless("long-name", [{"do": "rename_token", "index": 0, "name": name},
                                           {"do": "view", "field": "tab", "value": "heatmaps"}], multihead)
                expect(d["state"]["tokens"][0] == name, "the long name was not kept")
                print("  a token of 50 000 characters: drawn, its labels cut")

            code = run_checks([("a token named with 50 000 characters", long_token_name),
                               ("a zoomed map's SVG and PDF are zoomed", zoomed_vector_figures), ("a token by name", name), ("ranges", ranges), ("an unknown token", refused),
                               ("the book's example", small), ("the module's maps zoom too", module_maps_zoom_too), ("the last key's label", last_key_labels)])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
