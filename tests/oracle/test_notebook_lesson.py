"""The chapter lesson tells the truth (docs/DESIGN.md §3.7): its code boxes show the notebook's own
cells, and the numbers its text and prints quote are the notebook's or on screen.

1. Every step's code comes from assets/lessons/notebook.py, and those lines are the notebook's cells
   as written: no step shows attnscope's variants of the classes (their `causal`, `scale` or
   `normalization` options), and every line shown belongs to a cell ("# In [N]:").
2. notebook.py, run top to bottom with Debian's torch, prints every tensor the lesson's print boxes
   quote (grad_fn suffixes aside), and each print box's tensors come from the cells its label names
   — except the cells whose numbers follow torch with MKL's dropout stream, which Debian's torch
   lacks: [31] and [32] (the masks) and [36] and [38] (built after MKL's one draw). Those are the
   step's own trace instead (attnscope-cli trace of its preset, which draws MKL's stream):
   [31] the dropout mask × 2, [32] the dropped weights, [36] and [38] the output, batch element 0.
3. Every 4-decimal number of a step's text is on screen: in a map of the step's columns (computed by
   attnscope-cli trace from the step's preset) or in its print box.

Usage: test_notebook_lesson.py PATH/TO/attnscope-cli
"""
import contextlib
import io
import json
import os
import re
import subprocess
import sys

from oracle_common import REPO, cli_path_from_argv, require_torch

LESSONS = os.path.join(REPO, "assets", "lessons")
NOTEBOOK = os.path.join(LESSONS, "notebook.py")
ATTNSCOPE_OPTIONS = re.compile(r"\bself\.causal\b|\bself\.scale\b|\bcausal=|\bscale=|\bnormalization=")
CELL = re.compile(r"^# In \[(\d+|None)\]:$")

failures = []


def expect(ok, message):
    if not ok:
        failures.append(message)


def normalized(text):
    """A print as a string of its numbers and brackets: no grad_fn, no line breaks or runs of spaces."""
    text = re.sub(r",\s*grad_fn=<\w+>", "", text)
    return re.sub(r"\s+", " ", text).strip()


def run_cells(lines):
    """Runs notebook.py cell by cell; returns {cell label: what it printed}."""
    require_torch()
    cells, label, body = [], None, []
    for line in lines:
        m = CELL.match(line)
        if m:
            if label is not None:
                cells.append((label, body))
            label, body = m.group(1), []
        elif label is not None:
            body.append(line)
    cells.append((label, body))
    scope, printed = {"__name__": "notebook"}, {}
    for label, body in cells:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile("\n".join(body), "notebook.py [%s]" % label, "exec"), scope)  # our own asset
        printed[label] = out.getvalue()
    return printed


def tensors_in(print_lines):
    """The print box's tensors grouped by the cell its "# In [N]:" label names (None: unlabelled)."""
    groups, label, current = [], "", []
    for line in print_lines + ["# end"]:
        if line.startswith("#"):
            if current:
                groups.append((label, "\n".join(current)))
            m = re.match(r"# In \[(\d+)\]", line)
            label, current = (m.group(1) if m else line), []
        elif line.strip():
            current.append(line)
    return groups


# Cells printed by torch with MKL's dropout stream, and what of the step's trace each print is.
MKL_PRINTS = {
    "31": lambda b: [[2.0 * k for k in row] for row in b["heads"][0]["dropout_mask"]],
    "32": lambda b: b["heads"][0]["dropped_weights"],
    "36": lambda b: b["output"],
    "38": lambda b: b["context"],
}


def step_trace(cli, step):
    preset = next(c["name"] for c in step["commands"] if c["do"] == "preset")
    return json.loads(subprocess.check_output([cli, "trace", os.path.join(REPO, "assets", "presets", preset + ".json")]))


def numbers_of(text):
    return [float(x) for x in re.findall(r"-?\d+\.\d*", text)]


def on_screen_numbers(cli, step, d):
    """The 4-decimal numbers of the maps the step shows: every stage of its view's columns, every head."""
    columns = next((c["value"] for c in step["commands"] if c["do"] == "view" and c["field"] == "columns"), [])
    trace = step_trace(cli, step)
    numbers = set()

    def collect(v):
        if isinstance(v, list):
            for x in v:
                collect(x)
        elif isinstance(v, (int, float)):
            numbers.add("%.4f" % v)

    batch = trace["batches"][0]
    for stage in columns:
        for head in batch["heads"]:
            collect(head.get(stage, []))
        collect(batch.get(stage, []))
    if "concat" in columns:
        collect(batch["context"])
    return numbers


def main():
    cli = cli_path_from_argv()
    lesson = json.load(open(os.path.join(LESSONS, "chapter3.json"), encoding="utf-8"))
    lines = open(NOTEBOOK, encoding="utf-8").read().split("\n")
    cell_of_line = []
    current = None
    for line in lines:
        m = CELL.match(line)
        current = m.group(1) if m else current
        cell_of_line.append(current)

    # 1. The notebook's code as written.
    expect(not any(ATTNSCOPE_OPTIONS.search(l) for l in lines), "notebook.py has attnscope's own options")
    for n, step in enumerate(lesson["steps"], 1):
        code = step["code"]
        expect(code["file"] == "notebook.py", "step %d shows %s, not the notebook's cells" % (n, code["file"]))
        first, last = code["lines"]
        expect(all(cell_of_line[i - 1] is not None for i in range(first, last + 1)),
               "step %d shows lines outside the notebook's cells" % n)
        expect(all(first <= h <= last and lines[h - 1].strip() for h in code["highlight"]),
               "step %d highlights a blank line or one it does not show" % n)

    # 2. The prints, from the notebook's cells.
    printed = run_cells(lines)
    everything = normalized("\n".join(printed.values()))
    checked = 0
    for n, step in enumerate(lesson["steps"], 1):
        for label, tensor in tensors_in(step["prints"]):
            if label in MKL_PRINTS:  # the step's own trace, on MKL's stream
                want = numbers_of(normalized(tensor))
                shown = [v for row in MKL_PRINTS[label](step_trace(cli, step)["batches"][0]) for v in row]
                expect(len(want) == len(shown) and all(abs(a - b) <= 0.00005 + 1e-6 for a, b in zip(want, shown)),
                       "step %d: its trace does not give the notebook's [%s]: %s" % (n, label, shown[:8]))
                checked += 1
                continue
            if "…" in tensor or "not printed there" in label:
                continue  # elided prints
            want = normalized(tensor)
            where = normalized(printed[label]) if label in printed else everything
            expect(want in where, "step %d: notebook.py%s does not print %s" %
                   (n, " cell [%s]" % label if label in printed else "", want[:70]))
            checked += 1

    # 3. The text's numbers are on screen.
    quoted = 0
    for n, step in enumerate(lesson["steps"], 1):
        numbers = re.findall(r"(?<![\d.])\d+\.\d{4}(?!\d)", step["text"])
        if not numbers:
            continue
        shown = on_screen_numbers(cli, step, lesson) | set(re.findall(r"-?\d+\.\d{4}", "\n".join(step["prints"])))
        for number in numbers:
            quoted += 1
            expect(number in shown, "step %d's text quotes %s, which no map of the step or its print box shows" % (n, number))

    for f in failures:
        print("FAIL:", f)
    print("%d steps; %d printed tensors reproduced from the notebook's cells; %d quoted numbers on screen" %
          (len(lesson["steps"]), checked, quoted - sum("quotes" in f for f in failures)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
