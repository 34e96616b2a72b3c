"""Lesson mode, step by step: every step of assets/lessons/chapter3.json renders
headless (`attnscope --lesson FILE --step N --screenshot`) at a projector's 1280×720 and at
1600×1000, and its layout dump shows

- lesson_step = N and lesson_maps = the step's maps; every heatmap the step names is drawn and not
  dimmed, every other one dimmed; for the book's six tokens the named maps are wholly in view with
  their numbers, and the lesson panel shows the code and the print-out whole (no scrolling needed);
- the named maps print the notebook's numbers: four decimals at 1280×720 and at 1600×1000 (the
  layout dump's label_format; the dropout mask has its own ×2.0 / 0 labels), each map as wide as
  its columns (test_lesson_fit.py holds every map of every step, and the print-out, at 1280×720);
- no title is cut: no map title ends in "…" and every card's heading (the module's too) lies whole
  within the maps' area;
- a step with more tokens than the book's shows its weights on a log or per-row colour scale (on a
  linear one GPT-2's 1024 × 1024 weights are one colour: no causal triangle to see);
- the lesson in its own column, the maps keeping most of the window;
- and the numbers the step quotes as the notebook's print-out are the notebook's (transcribed
  below from the seed notebooks, /work/shared/seeds at the time of writing) and are what the app
  computes for that step: the dump's own trace (weights, context, output of the batch element on
  screen) and `attnscope-cli trace` of the workspace the step set up (scores, masked scores,
  queries). Never the app against itself: expected values are the notebook's.

Usage: test_lesson_steps.py --app APP --cli CLI --presets PRESETS_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_teaching import Display, STEP_TIMEOUT, arguments, cli_trace_of, run_checks  # noqa: E402

INF = float("-inf")

# ---------------------------------------------------------------- the notebooks' print-outs
# 004 In[11]/001 In[11]: inputs @ inputs.T
SCORES_SIMPLE = [[0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310],
                 [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865],
                 [0.9422, 1.4754, 1.4570, 0.8296, 0.7154, 1.0605],
                 [0.4753, 0.8434, 0.8296, 0.4937, 0.3474, 0.6565],
                 [0.4576, 0.7070, 0.7154, 0.3474, 0.6654, 0.2935],
                 [0.6310, 1.0865, 1.0605, 0.6565, 0.2935, 0.9450]]
# 001 In[5]: atten_scores_2 / atten_scores_2.sum(); 003 In[4]: its context vector
SUM_WEIGHTS_2 = [0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656]
SUM_CONTEXT_2 = [0.4355, 0.6451, 0.5680]
# 001 In[6]: torch.softmax(atten_scores_2, dim=0); In[13]: attn_weights @ inputs
SOFTMAX_WEIGHTS_2 = [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]
CONTEXT_SIMPLE = [[0.4421, 0.5931, 0.5790], [0.4419, 0.6515, 0.5683], [0.4431, 0.6496, 0.5671],
                  [0.4304, 0.6298, 0.5510], [0.4671, 0.5910, 0.5266], [0.4177, 0.6503, 0.5645]]
# 004 In[11]–In[18], torch.manual_seed(123): query_2, attn_scores_2, attn_weights_2, sa_v1(inputs)
QUERY_2 = [0.4306, 1.4551]
V1_SCORES_2 = [1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440]
V1_WEIGHTS_2 = [0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820]
V1_OUTPUT = [[0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203], [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]]
# 004 In[25], In[20] (torch.manual_seed(789)): sa_v2's weights and sa_v2(inputs)
V2_WEIGHTS = [[0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510],
              [0.2041, 0.1659, 0.1662, 0.1496, 0.1665, 0.1477],
              [0.2036, 0.1659, 0.1662, 0.1498, 0.1664, 0.1480],
              [0.1869, 0.1667, 0.1668, 0.1571, 0.1661, 0.1564],
              [0.1830, 0.1669, 0.1670, 0.1588, 0.1658, 0.1585],
              [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]]
V2_OUTPUT = [[-0.0739, 0.0713], [-0.0748, 0.0703], [-0.0749, 0.0702], [-0.0760, 0.0685], [-0.0763, 0.0679],
             [-0.0754, 0.0693]]
# 004 In[29], In[30]: masked raw scores, then softmax(masked / √2)
MASKED = [[0.2899, INF, INF, INF, INF, INF],
          [0.4656, 0.1723, INF, INF, INF, INF],
          [0.4594, 0.1703, 0.1731, INF, INF, INF],
          [0.2642, 0.1024, 0.1036, 0.0186, INF, INF],
          [0.2183, 0.0874, 0.0882, 0.0177, 0.0786, INF],
          [0.3408, 0.1270, 0.1290, 0.0198, 0.1290, 0.0078]]
CAUSAL_WEIGHTS = [[1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
                  [0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000],
                  [0.3800, 0.3097, 0.3103, 0.0000, 0.0000, 0.0000],
                  [0.2758, 0.2460, 0.2462, 0.2319, 0.0000, 0.0000],
                  [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0000],
                  [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]]
# 004 In[32]: torch.manual_seed(123); dropout(attn_weights) with p = 0.5 — printed by an MKL build
# of torch, whose mask Debian's torch does not draw (docs/DESIGN.md §2.2). What holds whatever the
# mask: a kept weight is twice the causal weight, a dropped one 0.
DROPPED = [[2.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
           [0.0000, 0.8966, 0.0000, 0.0000, 0.0000, 0.0000],
           [0.0000, 0.0000, 0.6206, 0.0000, 0.0000, 0.0000],
           [0.5517, 0.4921, 0.0000, 0.0000, 0.0000, 0.0000],
           [0.4350, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
           [0.0000, 0.3327, 0.0000, 0.0000, 0.0000, 0.0000]]
# 004 In[36]: CausalAttention(3, 2, 6, 0.0)(batch) after [32]'s one MKL draw; In[38]: the wrapper, 19
# draws after manual_seed(123). First batch element (the second is the same).
CA_OUTPUT = [[-0.2834, -0.2539], [-0.3675, -0.1289], [-0.3957, -0.0917], [-0.3571, -0.0482], [-0.3523, -0.0932],
             [-0.3354, -0.0407]]
WRAPPER_OUTPUT = [[0.3678, -0.2396, 0.2942, 0.0256], [0.4388, -0.1884, 0.3751, 0.1230], [0.4649, -0.1622, 0.4020, 0.1552],
                  [0.4257, -0.1461, 0.3591, 0.1498], [0.4004, -0.0560, 0.3546, 0.1504], [0.3921, -0.0950, 0.3361, 0.1494]]
# 004 In[41] (torch.manual_seed(123); nn.Linear(3, 2, bias=False)(batch), the MultiHeadAttention's
# W_query), first batch element; In[42] the view's shape; In[43] the module's output; In[39] the
# wrapper's shape; In[47] GPT-2's.
MHA_QUERIES = [[-0.3536, 0.3965], [-0.3021, -0.0289], [-0.3015, -0.0232], [-0.1353, -0.0978], [-0.2052, 0.0870],
               [-0.1542, -0.1499]]
MHA_OUTPUT = [[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593], [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]]

HALF_ULP = 0.5e-4 + 1e-6  # the notebook prints four decimals


def flat(m):
    return [v for row in m for v in row] if m and isinstance(m[0], list) else list(m)


def printed(v):
    return "-inf" if v == INF else "%.4f" % v


def numbers_in(text):
    """The numbers of a print-out, as printed: '0.4483', '-0.0739', '-inf', '1.'."""
    return re.findall(r"-inf|-?\d+\.\d*", text)


def quoted(prints, values, what):
    """The notebook's `values` appear in the step's print-out, in order, as the notebook prints them."""
    want = [printed(v) for v in flat(values)]
    have = numbers_in(prints)
    for k in range(len(have) - len(want) + 1):
        if have[k:k + len(want)] == want:
            return
    raise AssertionError(f"{what}: the print-out does not quote the notebook's {want[:6]}… in order")


def matches(app, notebook, what, tolerance=HALF_ULP):
    a, n = flat(app), flat(notebook)
    if len(a) != len(n):
        raise AssertionError(f"{what}: {len(a)} numbers on screen, the notebook prints {len(n)}")
    for k, (x, y) in enumerate(zip(a, n)):
        x = INF if x is None else x
        if (x == INF) != (y == INF) or (y != INF and abs(x - y) > tolerance):
            raise AssertionError(f"{what}: number {k} is {x}, the notebook prints {printed(y)}")


def column(m, c):
    return [row[c] for row in m]


def shape_of(state):
    """(batch, tokens, d_out) of the module's output, as torch prints context_vecs.shape."""
    ws = state["workspace"]
    return [ws["model"]["batch_size"], len(state["tokens"]), len(state["trace"]["output"][0]) if "trace" in state else
            ws["model"]["d_out"]]


def check_numbers(title, state, prints, trace):
    """The step's print-out against the notebook and against the app. `trace`: the CLI's trace of the
    workspace on screen; state["trace"]: the app's own numbers for the batch element shown."""
    app = state.get("trace")
    b = state["batch"]
    heads = lambda key: [h[key] for h in trace["batches"][b]["heads"]]  # noqa: E731
    if title.startswith("Attention scores"):
        quoted(prints, SCORES_SIMPLE, title)
        matches(heads("scores")[0], SCORES_SIMPLE, "scores")
    elif title.startswith("Weights that sum to 1"):
        quoted(prints, SUM_WEIGHTS_2, title)
        quoted(prints, SUM_CONTEXT_2, title)
        matches(app["heads"][0]["weights"][1], SUM_WEIGHTS_2, "the weights of 'journey' (÷ row sum)")
        matches(app["output"][1], SUM_CONTEXT_2, "the context vector of 'journey' (÷ row sum)")
    elif title.startswith("Softmax"):
        quoted(prints, SOFTMAX_WEIGHTS_2, title)
        quoted(prints, CONTEXT_SIMPLE, title)
        matches(app["heads"][0]["weights"][1], SOFTMAX_WEIGHTS_2, "the weights of 'journey'")
        matches(app["output"], CONTEXT_SIMPLE, "the context vectors")
    elif title.startswith("Trainable weights"):
        quoted(prints, QUERY_2, title)
        quoted(prints, V1_SCORES_2, title)
        matches(heads("queries")[0][1], QUERY_2, "query_2")
        matches(heads("scores")[0][1], V1_SCORES_2, "attn_scores_2")
    elif title.startswith("Scaled dot-product"):
        quoted(prints, V1_WEIGHTS_2, title)
        quoted(prints, V1_OUTPUT, title)
        matches(app["heads"][0]["weights"][1], V1_WEIGHTS_2, "attn_weights_2")
        matches(app["output"], V1_OUTPUT, "sa_v1(inputs)")
    elif title.startswith("nn.Linear"):
        quoted(prints, V2_WEIGHTS, title)
        quoted(prints, V2_OUTPUT, title)
        matches(app["heads"][0]["weights"], V2_WEIGHTS, "sa_v2's weights")
        matches(app["output"], V2_OUTPUT, "sa_v2(inputs)")
    elif title.startswith("Causal attention"):
        quoted(prints, MASKED, title)
        quoted(prints, CAUSAL_WEIGHTS, title)
        matches(heads("masked_scores")[0], MASKED, "the masked scores")
        matches(app["heads"][0]["weights"], CAUSAL_WEIGHTS, "the causal weights")
    elif title.startswith("Dropout"):
        quoted(prints, DROPPED, title)
        weights = app["heads"][0]["weights"]
        matches(weights, CAUSAL_WEIGHTS, "the weights before dropout")
        # torch with MKL's stream, reseeded with 123 right before, as the notebook: its mask exactly.
        matches(heads("dropped_weights")[0], DROPPED, "the dropped weights (the notebook's [32])")
    elif title.startswith("The CausalAttention class"):
        quoted(prints, CA_OUTPUT, title)
        matches(app["output"], CA_OUTPUT, "ca(batch), the notebook's [36]")
    elif title.startswith("Several heads"):
        quoted(prints, WRAPPER_OUTPUT, title)
        matches(app["output"], WRAPPER_OUTPUT, "mha(batch), the notebook's [38]")
        if "torch.Size([2, 6, 4])" not in prints:
            raise AssertionError("the print-out does not quote torch.Size([2, 6, 4])")
        if shape_of(state) != [2, 6, 4]:
            raise AssertionError(f"the wrapper's output is {shape_of(state)}, the notebook's torch.Size([2, 6, 4])")
    elif title.startswith("MultiHeadAttention: one projection"):
        quoted(prints, MHA_QUERIES[0], title)
        quoted(prints, flat(MHA_QUERIES[1:]), title)
        q = heads("queries")
        matches([[q[0][i][0], q[1][i][0]] for i in range(6)], MHA_QUERIES, "the queries, head 1 | head 2")
        m = state["workspace"]["model"]
        view = [m["batch_size"], len(state["tokens"]), m["num_heads"], m["d_out"] // m["num_heads"]]
        if "torch.Size([2, 6, 2, 1])" not in prints or view != [2, 6, 2, 1]:
            raise AssertionError(f"queries.view(…).shape: the app's {view}, the notebook's torch.Size([2, 6, 2, 1])")
    elif title.startswith("Joining the heads"):
        quoted(prints, MHA_OUTPUT, title)
        matches(app["output"], MHA_OUTPUT, "the module's output")
        if shape_of(state) != [2, 6, 2] or "torch.Size([2, 6, 2])" not in prints:
            raise AssertionError(f"the output is {shape_of(state)}, the notebook's torch.Size([2, 6, 2])")
    elif title.startswith("GPT-2"):
        if shape_of(state) != [2, 1024, 768] or "torch.Size([2, 1024, 768])" not in prints:
            raise AssertionError(f"the output is {shape_of(state)}, the notebook's torch.Size([2, 1024, 768])")
    else:
        raise AssertionError(f"no notebook numbers known for the step {title!r}: add them to this test")


# The label formats a step's maps must have (docs/DESIGN.md §3.4): the notebook's four decimals,
# at the projector's 1280×720 too; "custom": the dropout mask's ×2.0 / 0.
DECIMALS = {"1280x720": {"decimals4", "custom"}, "1600x1000": {"decimals4", "custom"}}


def inside(r, box, what):
    if r["y"] < box["y"] - 1 or r["y"] + r["h"] > box["y"] + box["h"] + 1 or r["x"] < box["x"] - 1 or \
            r["x"] + r["w"] > box["x"] + box["w"] + 1:
        raise AssertionError(f"{what} {r} is not whole inside the lesson panel {box}: it needs scrolling")


def main():
    args = arguments(__doc__.split("\n")[0])
    lesson_path = os.path.join(os.path.dirname(os.path.abspath(args.presets)), "lessons", "chapter3.json")
    with open(lesson_path) as f:
        lesson = json.load(f)
    steps = lesson["steps"]
    work = tempfile.mkdtemp(prefix="attnscope-lesson-steps-")
    checked_numbers = set()

    def render(display, n, size):
        name = f"step{n}-{size}"
        png, dump = os.path.join(work, name + ".png"), os.path.join(work, name + ".layout.json")
        home = os.path.join(work, "home")
        os.makedirs(home, exist_ok=True)
        env = dict(os.environ, DISPLAY=display, HOME=home, XDG_STATE_HOME=os.path.join(work, "state"))
        cmd = [args.app, "--lesson", lesson_path, "--step", str(n), "--size", size, "--screenshot", png,
               "--dump-layout", dump]
        t0 = time.time()
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT * 8)
        if out.returncode != 0 or "error" in out.stderr.lower() or f"saved {png} (" not in out.stdout:
            raise AssertionError(f"{' '.join(cmd)} exited {out.returncode}: {out.stderr.strip()} {out.stdout.strip()}")
        with open(dump) as f:
            d = json.load(f)
        os.remove(png)
        return d, time.time() - t0

    def check_step(display, n, size):
        step = steps[n - 1]
        d, seconds = render(display, n, size)
        s = d["state"]
        maps = step.get("maps", [])
        problems = []
        if s["lesson_step"] != n:
            problems.append(f"lesson_step {s['lesson_step']}, expected {n}")
        if s["lesson_maps"] != maps:
            problems.append(f"lesson_maps {s['lesson_maps']}, expected {maps}")
        if s["lesson"]["steps"] != len(steps) or s["lesson"]["step_title"] != step["title"]:
            problems.append(f"the lesson in the dump: {s['lesson']}")
        if not s["settled"] or s["engine_error"]:
            problems.append(f"not settled or refused: {s['engine_error']!r}")
        # The panels: the lesson in its own column at the right, the maps keeping most of the window.
        w, h = s["window"]
        lp, main = d["panels"].get("lesson"), d["panels"]["main"]
        if lp is None:
            problems.append("no lesson panel")
        else:
            if abs(lp["x"] + lp["w"] - w) > 1 or main["x"] + main["w"] > lp["x"] + 1:
                problems.append(f"the lesson panel {lp} is not the right-hand column beside the maps {main}")
            if main["w"] < 0.6 * w:
                problems.append(f"the maps have {main['w']:.0f} of {w:.0f} px")
            for widget in ("lesson_back", "lesson_next", "lesson_close", "lesson_text", "lesson_code", "lesson_prints"):
                if widget not in d["widgets"]:
                    problems.append(f"no {widget} in the lesson panel")
                    continue
                try:
                    inside(d["widgets"][widget], lp, widget)
                except AssertionError as e:
                    problems.append(str(e))
        # Highlighted and dimmed maps.
        drawn = {}
        for m in d["heatmaps"]:
            drawn.setdefault(m["stage"], []).append(m)
            if m["dimmed"] != (m["stage"] not in maps):
                problems.append(f"{m['id']}: dimmed {m['dimmed']}, but the step's maps are {maps}")
        small = len(s["tokens"]) <= 12
        for stage in maps:
            if stage not in drawn:
                problems.append(f"the step names {stage}, which the grid does not draw (its columns: "
                                f"{s['workspace']['view'].get('columns')})")
            for m in drawn.get(stage, []):
                if small and not (m["wholly_in_view"] and m["values_shown"]):
                    problems.append(f"{m['id']}: wholly in view {m['wholly_in_view']}, values shown {m['values_shown']} "
                                    f"(cell {m['cell']:.1f} px)")
                if small and m["values_shown"] and m.get("label_format") not in DECIMALS[size]:
                    problems.append(f"{m['id']} ({m['title']}): labelled {m.get('label_format')} "
                                    f"(cell {m['cell']:.1f} px), expected one of {sorted(DECIMALS[size])}")
                if not small and stage == "weights" and m.get("scale") == "linear":
                    # A 1024-key row's weights are near 0 but a few: one colour on a linear scale,
                    # so the causal triangle the step speaks of was a flat square.
                    problems.append(f"{m['id']}: {len(s['tokens'])} tokens' weights on the linear colour scale")
                cells, box = m["cells"], main
                if small and (cells["x"] + cells["w"] > box["x"] + box["w"] + 1 or cells["y"] + cells["h"] > box["y"] + box["h"] + 1):
                    problems.append(f"{m['id']}: its cells {cells} run past the maps' area {box}")
        # Titles whole: shortened to their first part at most, never cut with "…"; headings wrap.
        for m in d["heatmaps"]:
            if "…" in m["title"]:
                problems.append(f"{m['id']}: its title {m['title']!r} is cut")
            # The notebook's first scores are inputs @ inputs.T: no Q or K yet (it read "Q·Kᵀ").
            if m["stage"] == "scores" and step["title"].startswith("Attention scores") and "X·Xᵀ" not in m["title"]:
                problems.append(f"{m['id']}: titled {m['title']!r}, the step computes inputs @ inputs.T (X·Xᵀ)")
        # A lesson step's module maps say what they are in their titles: their card has no heading
        # (a line for the maps, docs/DESIGN.md §3.7 "Focus"); outside a step it has one.
        headings = {k: r for k, r in d["widgets"].items() if k.startswith("card_heading_")}
        if any(m.get("module") for m in d["heatmaps"]) and ("card_heading_module" in headings) == bool(s["lesson_maps"]):
            problems.append("the module's card heading is " + ("there" if "card_heading_module" in headings else "missing"))
        for k, r in headings.items():
            if r["x"] + r["w"] > main["x"] + main["w"] + 1:
                problems.append(f"{k} {r} runs past the maps' area {main}: cut")
        # The numbers: the notebook's, quoted by the step and computed by the app (once per step).
        if n not in checked_numbers:
            trace = cli_trace_of(args.cli, s["workspace"], work, f"step{n}.json") if small else None
            try:
                check_numbers(step["title"], s, s["lesson"]["prints"], trace)
                checked_numbers.add(n)
            except AssertionError as e:
                problems.append(f"numbers: {e}")
        print(f"  step {n} at {size} ({seconds:.1f} s): maps {maps}; "
              f"{sum(1 for m in d['heatmaps'] if m['dimmed'])} of {len(d['heatmaps'])} maps dimmed")
        if problems:
            raise AssertionError(f"step {n} ({step['title']}) at {size}: " + "; ".join(problems))

    with Display() as display:
        checks = []
        for size in ("1280x720", "1600x1000"):
            for n in range(1, len(steps) + 1):
                checks.append((f"step {n} at {size}", lambda n=n, size=size: check_step(display.name, n, size)))
        code = run_checks(checks)
    shutil.rmtree(work, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
