"""Pictures for notebooks (docs/DESIGN.md §3.8): a Trace shows inline in Jupyter as a PNG that the
app draws headless (no display: through xvfb-run), with no browser, CDN or network. The kernel's own
display formatter (IPython's, as Jupyter and VS Code use it) must find image/png; the picture must be
a PNG of every head's weights — the first row's 1.0 drawn in viridis' top colour, once per head.

Usage: test_notebook_picture.py   (PYTHONPATH holds python/, ATTNSCOPE_APP and ATTNSCOPE_CLI the programs)
"""
import importlib.util
import io
import os
import sys

import numpy as np
import torch
from IPython.core.interactiveshell import InteractiveShell
from PIL import Image

import attnscope

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "seed_classes", os.path.join(HERE, "..", "..", "core", "formats", "pytorch", "seed_classes.py"))
sc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sc)
VIRIDIS_TOP = np.array([253, 231, 37])  # assets/colormaps/viridis.csv's last row


def main():
    os.environ.pop("DISPLAY", None)  # as on a server: the app draws under xvfb-run
    torch.manual_seed(123)
    m = sc.MultiHeadAttention(5, 6, 9, 0.0, num_heads=3)
    t = attnscope.trace(m, torch.rand(9, 5), tokens="The cat sat on the mat and it purred".split())
    data, _ = InteractiveShell.instance().display_formatter.format(t)
    if "image/png" not in data:
        sys.exit(f"FAIL: the kernel found no image/png for a Trace, only {sorted(data)}")
    png = data["image/png"]
    raw = png if isinstance(png, bytes) else __import__("base64").b64decode(png)
    image = np.asarray(Image.open(io.BytesIO(raw)).convert("RGB")).astype(int)
    h, w, _ = image.shape
    if w < 600 or h < 300:
        sys.exit(f"FAIL: a {w} × {h} picture is too small for three heads' maps")
    # Each head's first row is [1, 0, …]: a block of viridis' top colour per head, side by side.
    top = (np.abs(image - VIRIDIS_TOP).sum(axis=2) < 30)
    rows = np.flatnonzero(top.any(axis=1))
    if rows.size == 0:
        sys.exit("FAIL: no pixel of viridis' top colour: no weight of 1.0 drawn")
    first_row = top[rows[0]:rows[0] + 10]  # the maps' first rows (the colour bars come far below)
    columns = np.flatnonzero(first_row.any(axis=0))
    blocks = 1 + int(np.sum(np.diff(columns) > 5)) if columns.size else 0
    if blocks != 3:
        sys.exit(f"FAIL: {blocks} blocks of viridis' top colour where each of the 3 heads has one")
    print(f"a Trace shows inline: a {w} × {h} PNG, one 1.0 cell per head ({top.sum()} pixels of viridis' top)")


if __name__ == "__main__":
    main()
