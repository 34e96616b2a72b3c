"""A lesson that trains a model (docs/DESIGN.md §3.7, §3.9), as a lecturer steps through it, headless
(--commands, the lesson's own commands), every number held against Debian's torch:

  - the shipped lesson "How attention learns" opened at its induction-head step: the run trained to
    its step, the layer, head and token the step names, the Heatmaps tab; the layer's weights on
    screen are the probe's weights of the same model trained as many steps by torch (the
    pytorch-train script), within 1e-5;
  - Back to an earlier step shows the run as it was then, without training it again: its maps, and
    its charts and status, which end at that step;
  - at 1280 × 720 and 200 %, "The phase change" shows its loss and score charts and their legend
    in the tab's view, the run's buttons after them;
  - a step without a run after one with it ends the run: the chapter's workspace is back;
  - a step of the timeline pinned as A: the Compare tab names A's and B's steps;
  - while a run plays, pin and a view command apply at once (nothing waits for a playing run).
The sanitizer build (several times slower) runs a small lesson of its own instead of the shipped one.

Usage: test_learning_lesson.py APP CLI ASSETS
"""
import json
import os
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
import torch_training  # noqa: E402
from test_teaching import Display, run_checks, run_commands  # noqa: E402

SANITIZE = bool(os.environ.get("ATTNSCOPE_SANITIZE"))


def torch_weights(cli, folder, task, steps):
    """The probe's weights [L][H, T, T] of the task's model after `steps` steps, trained by torch."""
    script = torch_training.script_of(cli, folder, task)
    model, _ = torch_training.train(script, steps)
    return [w.numpy() for w in torch_training.probe_weights(script, model)]


def small_lesson(folder):
    """A lesson of a short run, for the sanitizer build: the same kinds of steps as the shipped one."""
    task = {"task": "induction", "steps": 60, "batch": 8}
    run = lambda step: [{"do": "learn", "task": task, "keep": True}, {"do": "learn_to", "step": step}]  # noqa: E731
    steps = [
        {"title": "Untrained", "text": "t", "commands": run(0) + [{"do": "view", "field": "tab", "value": "layers"}]},
        {"title": "Trained a little", "text": "t", "commands": run(50) + [{"do": "view", "field": "tab", "value": "learn"}]},
        {"title": "A head", "text": "t", "maps": ["weights"],
         "commands": run(60) + [{"do": "select_layer", "layer": 1, "head": 1}, {"do": "select_token", "index": 25},
                                {"do": "view", "field": "tab", "value": "heatmaps"}]},
        {"title": "Back to the chapter", "text": "t", "commands": [{"do": "preset", "name": "multihead"}]},
    ]
    path = os.path.join(folder, "small.json")
    with open(path, "w") as f:
        json.dump({"format": "attnscope-lesson", "version": 1, "title": "Small", "steps": steps}, f)
    return path, task, {"head_step": 3, "shown": 60, "back_step": 2, "back_shown": 50}


def checks(tmp):
    app, cli, assets = sys.argv[1:4]
    if SANITIZE:
        lesson, task, at = small_lesson(tmp)
    else:
        lesson = os.path.join(assets, "lessons", "learning.json")
        with open(lesson) as f:
            first = json.load(f)["steps"][0]["commands"][0]
        task = first["task"]
        at = {"head_step": 6, "shown": 1000, "back_step": 3, "back_shown": 600}

    with Display() as display:
        def induction_head_step():
            d = run_commands(app, display.name, tmp, "head", [
                {"do": "lesson_open", "path": lesson, "step": at["head_step"]}])
            s = d["state"]
            assert s["lesson_step"] == at["head_step"], s["lesson_step"]
            assert s["learn"]["steps_done"] == at["shown"] and s["learn"]["step_shown"] == at["shown"], s["learn"]
            assert s["model"]["run"] and s["model"]["layer"] == 1 and s["head"] == 1 and s["token"] == 25, s["model"]
            assert s["lesson_maps"] == ["weights"], s["lesson_maps"]
            assert "tab_heatmaps" in d["widgets"], "no Heatmaps tab"
            want = torch_weights(cli, tmp, task, at["shown"])[1]
            worst = max(float(np.abs(np.array(h["weights"]) - want[k]).max()) for k, h in enumerate(s["trace"]["heads"]))
            assert worst <= 1e-5, f"layer 2's weights on screen are off torch's by {worst:.3g}"
            print(f"  step {at['head_step']}: the run at step {at['shown']}, layer 2 head 2, token 26; "
                  f"its weights within {worst:.2g} of torch's")

        def back_shows_the_past():
            d = run_commands(app, display.name, tmp, "back", [
                {"do": "lesson_open", "path": lesson, "step": at["back_step"] + 1},
                {"do": "lesson_back"}])
            s = d["state"]
            assert s["lesson_step"] == at["back_step"], s["lesson_step"]
            assert s["learn"]["step_shown"] == at["back_shown"], s["learn"]
            assert s["learn"]["steps_done"] > at["back_shown"] and not s["learn"]["playing"], s["learn"]
            assert s["model"]["name"].endswith(f"step {at['back_shown']}"), s["model"]["name"]
            # The charts as the run was too: they had shown the steps the lesson had yet to come to.
            assert s["learn"]["horizon"] == at["back_shown"], s["learn"]
            charted = s["learn_charted"]
            assert charted["loss"] == at["back_shown"] and charted["scores"] <= at["back_shown"], charted
            assert s["learn_status"].startswith(f"step {at['back_shown']} of ") and \
                f"trained to {s['learn']['steps_done']}" in s["learn_status"], s["learn_status"]
            print(f"  Back: the run shows step {at['back_shown']}, trained to {s['learn']['steps_done']}, not again; "
                  f"the charts end at step {charted['loss']} ({s['learn_status']!r})")

        def the_charts_of_a_step_on_a_projector():
            # At 1280 × 720 and 200 % a step on the Learn tab ("The phase change") shows the charts its
            # text speaks of: the run's buttons and timeline had pushed the score chart below the
            # fold, and "head" before each head had wrapped its legend past the tab's edge.
            step = 2 if SANITIZE else 4
            d = run_commands(app, display.name, tmp, "charts-720-200", [
                {"do": "lesson_open", "path": lesson, "step": step}], "--size", "1280x720", "--text-size", "200")
            run, w = d["panels"]["learn_run"], d["widgets"]
            score = "learn_" + d["state"].get("learn_score_shown", "induction")
            for name in ("learn_loss", score, "learn_legend"):
                r = w[name]
                assert run["y"] <= r["y"] and r["y"] + r["h"] <= run["y"] + run["h"] + 0.5, \
                    f"step {step}: {name} {r} out of the tab's view {run}"
            print(f"  step {step} at 1280 × 720 / 200 %: the loss, {score} and the legend in view, "
                  f"the buttons below them (Train at y {w['learn_play']['y']:.0f})")

        def a_chapter_step_ends_the_run():
            path, _, _ = small_lesson(tmp)
            d = run_commands(app, display.name, tmp, "end", [
                {"do": "lesson_open", "path": path, "step": 2}, {"do": "lesson_step", "step": 4}])
            s = d["state"]
            assert "learn" not in s and "model" not in s, (s.get("learn"), s.get("model"))
            assert s["variant"] == "multihead" and s["lesson_step"] == 4, (s["variant"], s["lesson_step"])
            print("  a step without a run ended the run: the chapter's multihead preset shows")

        def pin_a_step():
            small = {"task": "induction", "steps": 40, "batch": 8}
            d = run_commands(app, display.name, tmp, "pin", [
                {"do": "learn", "task": small}, {"do": "learn_to", "step": 25}, {"do": "pin"},
                {"do": "learn_to", "step": 40}, {"do": "view", "field": "tab", "value": "compare"}])
            s = d["state"]
            assert s["pinned"], "nothing pinned"
            c = s.get("compare", {})
            assert c.get("a_model") == "induction run, step 25" and c.get("b_model") == "induction run, step 40", c
            assert c.get("largest", 0) > 0, f"B − A of two steps is zero: {c}"
            print(f"  pinned step 25 as A; Compare shows {c['a_model']!r} beside {c['b_model']!r}, "
                  f"largest |B − A| {c['largest']:.3g}")

        def pin_while_it_plays():
            # A run that plays is waited for by nothing: pin, a view command and a screenshot go through.
            playing = {"task": "induction", "steps": 100000, "batch": 8}
            d = run_commands(app, display.name, tmp, "playing", [
                {"do": "learn", "task": playing, "play": True}, {"do": "pin"},
                {"do": "view", "field": "presentation", "value": True}])
            s = d["state"]
            assert s["pinned"] and s["shown_panels"]["presentation"], (s["pinned"], s["shown_panels"])
            assert s["learn"]["playing"] and s["learn"]["steps_done"] < 100000, s["learn"]
            print(f"  pinned and switched to presentation while the run plays (step {s['learn']['steps_done']})")

        return run_checks([("the induction head step", induction_head_step), ("Back", back_shows_the_past),
                           ("a step's charts on a projector", the_charts_of_a_step_on_a_projector),
                           ("a chapter step ends the run", a_chapter_step_ends_the_run),
                           ("a step pinned as A", pin_a_step), ("pinned while it plays", pin_while_it_plays)])


def main():
    tmp = tempfile.mkdtemp(prefix="attnscope-learning-lesson-")
    try:
        return checks(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
