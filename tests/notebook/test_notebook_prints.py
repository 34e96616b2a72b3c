#!/usr/bin/python3
"""notebook_prints: every print of the five seed notebooks, checked against `attnscope-cli trace`.

prints.json beside this file is the table: one row per print of the seeds (the notebooks' plain-text
exports are not in this repository, so each row carries the printed text, copied verbatim), with the
workspace that brings it on screen (a full workspace, or {"preset": NAME, "model": {overrides},
"parameters": {...}} over assets/presets/NAME.json), which part of the trace shows it ("show") and
how a user sees it in the app ("how"). Rows the app cannot produce yet say so ("reachable": false)
and what is missing (with "workspace_once_possible" where a workspace would show it once attnscope
has that). The test parses each printed tensor (tensor(...), nested brackets, -inf,
grad_fn=..., Parameter containing:, torch.Size([...]), scientific notation, torch's "..."
summaries, and plain numbers such as "Sum: 1.0") and compares it with the trace at the printed
precision: |attnscope - printed| <= 0.00005 + 1e-6, -inf only against -inf (null in the trace). It
fails, naming seed, cell and the worst element, when a reachable row differs, when a printed text does
not parse, or when a seed has more or fewer rows than "counts" says (a print left out of the table).

Usage: test_notebook_prints.py CLI_PATH PRESETS_DIR [SEEDS_DIR]
       test_notebook_prints.py --table           (the table as Markdown, for the docs)
With SEEDS_DIR (the folder of the seed exports) each printed text must also occur, in order, in its seed.
Python 3 standard library only: no torch, no numpy.
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "prints.json")
TOLERANCE = 0.00005 + 1e-6  # half a unit of the printed 4th decimal, plus float slack
SEED_COUNT = 5
HEAD_STAGES = ("queries", "keys", "values", "scores", "mask", "masked_scores", "scaled_scores", "unmasked_weights",
               "tril", "tril_weights", "weights", "dropout_mask", "dropped_weights", "context")
BATCH_STAGES = {"concat": "context", "output": "output"}
NUMBER = r"[-+]?(?:inf|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
TOKEN = re.compile(r"\s*(\.\.\.|\[|\]|,|" + NUMBER + ")")


class TableError(Exception):
    """A row of prints.json that cannot be used: malformed, or asking for what the trace lacks."""


# ---- the printed text ------------------------------------------------------------------------


def parse_printed(text):
    """The numbers of one print: a nested list (Ellipsis where torch summarized), a float, or a
    torch.Size as a list of ints."""
    size = re.search(r"torch\.Size\(\[([^\]]*)\]\)", text)
    if size:
        return [int(v) for v in size.group(1).split(",") if v.strip()]
    start = text.find("tensor(")
    if start >= 0:
        value, rest = parse_literal(text[start + len("tensor("):])
        if not re.match(r"\s*[,)]", rest):
            raise TableError("unexpected text after the tensor's values: %r" % rest[:40])
        return value
    numbers = re.findall(NUMBER, text.rsplit(":", 1)[-1])
    if len(numbers) != 1:
        raise TableError("no tensor, torch.Size or single number in %r" % text[:60])
    return float(numbers[0])


def parse_literal(text):
    """(value, rest): a number or a bracketed list of them, as torch prints it."""
    m = TOKEN.match(text)
    if not m:
        raise TableError("expected a number or '[' at %r" % text[:40])
    token, rest = m.group(1), text[m.end():]
    if token == "[":
        items = []
        while True:
            m = TOKEN.match(rest)
            if not m:
                raise TableError("unterminated list at %r" % rest[:40])
            if m.group(1) == "]":
                return items, rest[m.end():]
            if m.group(1) == ",":
                rest = rest[m.end():]
                continue
            if m.group(1) == "...":
                items.append(Ellipsis)
                rest = rest[m.end():]
                continue
            item, rest = parse_literal(rest)
            items.append(item)
    if token in ("]", ",", "..."):
        raise TableError("unexpected %r at %r" % (token, text[:40]))
    return float(token), rest


# ---- the trace -------------------------------------------------------------------------------


def workspace_of(spec, presets_dir):
    """A full workspace from a row's "workspace": itself, or a preset with overrides."""
    if "preset" not in spec:
        return spec
    path = os.path.join(presets_dir, spec["preset"] + ".json")
    with open(path, encoding="utf-8") as f:
        ws = json.load(f)
    unknown = set(spec) - {"preset", "model", "parameters"}
    if unknown:
        raise TableError("unknown workspace fields " + ", ".join(sorted(unknown)))
    ws["model"].update(spec.get("model", {}))
    if "parameters" in spec:
        ws["parameters"] = spec["parameters"]
    return ws


class Tracer:
    """Runs `attnscope-cli trace` once per distinct workspace and options."""

    def __init__(self, cli, presets_dir, folder):
        self.cli, self.presets_dir, self.folder = cli, presets_dir, folder
        self.cache = {}

    def trace(self, spec, cli_args):
        ws = workspace_of(spec, self.presets_dir)
        key = json.dumps([ws, cli_args], sort_keys=True)
        if key not in self.cache:
            path = os.path.join(self.folder, "ws%d.json" % len(self.cache))
            with open(path, "w", encoding="utf-8") as f:
                json.dump(ws, f)
            run = subprocess.run([self.cli, "trace"] + list(cli_args) + [path], capture_output=True, text=True,
                                 timeout=240)
            if run.returncode != 0:
                raise TableError("attnscope-cli trace exited %d: %s" % (run.returncode, run.stderr.strip()[:300]))
            self.cache[key] = json.loads(run.stdout)
        return self.cache[key]


def pick(items, which, what):
    """One item (an index), or all of them as a list ("all")."""
    if which == "all":
        return items
    if not isinstance(which, int) or not 0 <= which < len(items):
        raise TableError("no %s %r (there are %d)" % (what, which, len(items)))
    return items[which]


def shape_of(x):
    return [len(x)] + shape_of(x[0]) if isinstance(x, list) and x else ([0] if isinstance(x, list) else [])


def permuted(x, axes):
    """x (nested lists of a regular shape) with its axes reordered, as torch's permute."""
    shape = shape_of(x)
    if sorted(axes) != list(range(len(shape))):
        raise TableError("permute %r does not fit a shape of %d axes" % (axes, len(shape)))

    def build(prefix):
        if len(prefix) == len(axes):
            index = [0] * len(axes)
            for position, axis in enumerate(axes):
                index[axis] = prefix[position]
            v = x
            for i in index:
                v = v[i]
            return v
        return [build(prefix + [i]) for i in range(shape[axes[len(prefix)]])]
    return build([])


def mapped(x, f):
    return [mapped(v, f) for v in x] if isinstance(x, list) else f(x)


def extract(trace, show):
    """The numbers a row's "show" names in a trace (null = -inf), or their shape."""
    known = {"stage", "statistic", "parameter", "batch", "head", "row", "col", "transpose", "scale", "permute",
             "shape", "dim"}
    if set(show) - known:
        raise TableError("unknown show fields " + ", ".join(sorted(set(show) - known)))
    batch = show.get("batch", 0)
    batches = trace["batches"]
    if "parameter" in show:
        params = trace["parameters"]
        if show["parameter"] not in params:
            raise TableError("no parameter %r (the trace has %s)" % (show["parameter"], ", ".join(params)))
        value = params[show["parameter"]]
    elif "statistic" in show or show.get("stage") in HEAD_STAGES:
        def of_head(head):
            if "statistic" in show:
                stats = head["statistics"]
                if show["statistic"] not in stats:
                    raise TableError("no statistic %r" % show["statistic"])
                return stats[show["statistic"]]
            return head[show["stage"]]

        def of_batch(b):
            heads = b["heads"]
            which = show.get("head", 0)
            if not heads:
                raise TableError("batch element %d kept no intermediates" % b["index"])
            if which == "concat":
                maps = [of_head(h) for h in heads]
                return [sum((m[r] for m in maps), []) for r in range(len(maps[0]))]
            chosen = pick(heads, which, "head")
            return [of_head(h) for h in chosen] if which == "all" else of_head(chosen)
        chosen = pick(batches, batch, "batch element")
        value = [of_batch(b) for b in chosen] if batch == "all" else of_batch(chosen)
    elif show.get("stage") in BATCH_STAGES:
        field = BATCH_STAGES[show["stage"]]
        chosen = pick(batches, batch, "batch element")
        value = [b[field] for b in chosen] if batch == "all" else chosen[field]
    elif show.get("stage") == "input":
        embeddings = trace["workspace"]["embeddings"]
        count = len(batches) if batch == "all" else 1
        if isinstance(embeddings, dict):  # {"random": …}: its numbers are not in the trace, its shape is
            if not show.get("shape"):
                raise TableError("random embeddings: only their shape is in the trace")
            shape = ([count] if batch == "all" else []) + [embeddings["rows"], embeddings["cols"]]
            return shape[show["dim"]] if "dim" in show else shape
        pick(batches, batch, "batch element")
        value = [embeddings] * count if batch == "all" else embeddings
    else:
        raise TableError("show needs a stage (%s), a statistic or a parameter"
                         % ", ".join(HEAD_STAGES + tuple(BATCH_STAGES) + ("input",)))
    if "row" in show:
        if batch == "all" or show.get("head") in ("all", "concat"):
            raise TableError("row selects within one batch element and one head")
        value = pick(value, show["row"], "row")
        if "col" in show:
            value = pick(value, show["col"], "column")
    if show.get("transpose"):
        value = [list(r) for r in zip(*value)]
    if "permute" in show:
        value = permuted(value, show["permute"])
    if show.get("shape"):
        shape = shape_of(value)
        return shape[show["dim"]] if "dim" in show else shape
    value = mapped(value, lambda v: -math.inf if v is None else v)
    if "scale" in show:
        value = mapped(value, lambda v: v * show["scale"])
    return value


# ---- comparing -------------------------------------------------------------------------------


def compare(ours, printed, where=()):
    """(worst |difference|, where, ours, printed) over the printed elements; inf where they cannot match."""
    if isinstance(printed, list):
        if not isinstance(ours, list):
            return (math.inf, where, ours, "a list")
        if Ellipsis in printed:
            k = printed.index(Ellipsis)
            head, tail = printed[:k], printed[k + 1:]
            if Ellipsis in tail or len(ours) < len(head) + len(tail):
                return (math.inf, where, "%d items" % len(ours), "%d shown around ..." % (len(head) + len(tail)))
            pairs = list(zip(range(k), head)) + [(len(ours) - len(tail) + i, v) for i, v in enumerate(tail)]
        else:
            if len(ours) != len(printed):
                return (math.inf, where, "%d items" % len(ours), "%d items" % len(printed))
            pairs = list(enumerate(printed))
        worst = (0.0, where, ours, printed)
        for i, v in pairs:
            result = compare(ours[i], v, where + (i,))
            if result[0] > worst[0] or i == pairs[0][0]:
                worst = result
        return worst
    if isinstance(ours, list) or ours is None:
        return (math.inf, where, ours, printed)
    if math.isinf(printed) or math.isinf(ours):
        return (0.0 if ours == printed else math.inf, where, ours, printed)
    return (abs(ours - printed), where, ours, printed)


# ---- the table -------------------------------------------------------------------------------


def load_table():
    with open(TABLE, encoding="utf-8") as f:
        table = json.load(f)
    problems = []
    counts, rows = table["counts"], table["prints"]
    if len(counts) != SEED_COUNT:
        problems.append("counts names %d seeds, not %d" % (len(counts), SEED_COUNT))
    for seed, count in sorted(counts.items()):
        ns = [r.get("n") for r in rows if r.get("seed") == seed]
        if ns != list(range(1, count + 1)):
            problems.append("%s: %d prints in counts, the table has %d (n = %s): a print is missing or doubled"
                            % (seed, count, len(ns), ns))
    for r in rows:
        label = "%s [%s] print %s" % (r.get("seed"), r.get("cell"), r.get("n"))
        if r.get("seed") not in counts:
            problems.append(label + ": its seed is not in counts")
        for field in ("cell", "printed", "how"):
            if not isinstance(r.get(field), str) or not r[field]:
                problems.append(label + ": no " + field)
        if r.get("reachable", True):
            if "workspace" not in r or "show" not in r:
                problems.append(label + ": a reachable print needs workspace and show")
        elif not r.get("missing"):
            problems.append(label + ": an unreachable print must say what is missing")
        try:
            parse_printed(r.get("printed", ""))
        except TableError as e:
            problems.append("%s: printed text does not parse: %s" % (label, e))
    return table, problems


def check_against_seeds(rows, seeds_dir):
    """Each printed text occurs in its seed export, after the previous print of that seed."""
    problems, position = [], {}
    for r in rows:
        path = os.path.join(seeds_dir, r["seed"])
        with open(path, encoding="utf-8") as f:
            text = f.read()
        at = text.find(r["printed"], position.get(r["seed"], 0))
        if at < 0:
            problems.append("%s [%s] print %d: printed text not found in the seed (in order)"
                            % (r["seed"], r["cell"], r["n"]))
        else:
            position[r["seed"]] = at + len(r["printed"])
    return problems


def markdown(rows):
    out = ["| seed | cell | print | how the app shows it | test |", "|---|---|---|---|---|"]
    for r in rows:
        first = r["printed"].strip().split("\n")[0]
        first = first if len(first) <= 60 else first[:57] + "…"
        test = "notebook_prints" if r.get("reachable", True) else "not reachable: " + r["missing"]
        cells = [r["seed"][:3], "[%s]" % r["cell"], "`%s`" % first, r["how"], test]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out)


DESIGN = os.path.join(HERE, "..", "..", "docs", "DESIGN.md")
DOC_START = "<!-- notebook prints table: tests/notebook/test_notebook_prints.py --table -->\n"
DOC_END = "<!-- end of the notebook prints table -->"


def check_design_table(rows):
    """docs/DESIGN.md holds the table this file prints with --table, so the two never drift apart."""
    with open(DESIGN, encoding="utf-8") as f:
        text = f.read()
    start, end = text.find(DOC_START), text.find(DOC_END)
    if start < 0 or end < start:
        return ["docs/DESIGN.md has no notebook prints table between its markers"]
    if text[start + len(DOC_START):end].strip() != markdown(rows).strip():
        return ["docs/DESIGN.md's notebook prints table is not prints.json's: paste the output of "
                "test_notebook_prints.py --table between its markers"]
    return []


def main(argv):
    if argv[1:] == ["--table"]:
        print(markdown(load_table()[0]["prints"]))
        return 0
    if len(argv) not in (3, 4):
        sys.exit(__doc__)
    cli, presets_dir = argv[1], argv[2]
    table, problems = load_table()
    rows = table["prints"]
    if len(argv) == 4:
        problems += check_against_seeds(rows, argv[3])
    problems += check_design_table(rows)
    checked, unreachable = 0, []
    with tempfile.TemporaryDirectory(prefix="attnscope-prints-") as folder:
        tracer = Tracer(cli, presets_dir, folder)
        for r in rows:
            label = "%s [%s] print %d" % (r["seed"], r["cell"], r["n"])
            if not r.get("reachable", True):
                unreachable.append(r)
                continue
            try:
                printed = parse_printed(r["printed"])
                ours = extract(tracer.trace(r["workspace"], r.get("cli_args", [])), r["show"])
            except (TableError, KeyError, IndexError, TypeError, OSError, subprocess.SubprocessError,
                    ValueError) as e:
                problems.append("%s: %s" % (label, e))
                continue
            diff, where, a, b = compare(ours, printed)
            checked += 1
            if not diff <= TOLERANCE:
                problems.append("%s: differs at %s: attnscope %s, printed %s (|difference| %.6g > %.6g)"
                                % (label, list(where), a, b, diff, TOLERANCE))
    for p in problems:
        print("FAIL " + p)
    print("%d prints of %d seed notebooks: %d checked against attnscope-cli trace, %d not reachable yet (listed)"
          % (len(rows), len(table["counts"]), checked, len(unreachable)))
    for r in unreachable:
        print("  %s [%s] print %d: %s" % (r["seed"], r["cell"], r["n"], r["missing"]))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
