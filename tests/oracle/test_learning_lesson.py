"""The lesson "How attention learns" (assets/lessons/learning.json) says what it shows in numbers;
each is checked here against Debian's torch, never against attnscope: the run of the lesson's task
as the script of `attnscope-cli pytorch-train` trains it — the book's GPTModel, autograd,
torch.optim.AdamW — and the probe's weights and scores of that model.

Each claim is a phrase the lesson's text holds, with the number it quotes, and what torch gives
for it; a claim whose phrase is gone from the lesson fails too, so text and test move together.

Usage: test_learning_lesson.py CLI ASSETS
"""
import json
import math
import os
import sys
import tempfile

import torch_training

THRESHOLD = {"previous_token": 0.5, "induction": 0.3}  # lm/head_scores.cpp's labels


def main():
    cli, assets = sys.argv[1:3]
    with open(os.path.join(assets, "lessons", "learning.json")) as f:
        lesson = json.load(f)
    steps = lesson["steps"]
    tasks = {json.dumps(c["task"], sort_keys=True) for s in steps for c in s["commands"] if c["do"] == "learn"}
    assert len(tasks) == 1, f"the lesson's steps train one run, not {len(tasks)}"
    task = json.loads(tasks.pop())
    shown = sorted({c["step"] for s in steps for c in s["commands"] if c["do"] == "learn_to"})
    with tempfile.TemporaryDirectory() as tmp:
        script = torch_training.script_of(cli, tmp, task)
    ids = script["probe"]()
    at = {}

    def look(step, model):  # what the lesson's steps show of the model at this step
        weights = torch_training.probe_weights(script, model)
        scores = [[script["head_scores"](w[h], ids) for h in range(w.shape[0])] for w in weights]
        at[step] = {"weights": weights, "previous": [[s[0] for s in l] for l in scores],
                    "induction": [[s[1] for s in l] for l in scores]}

    _, losses = torch_training.train(script, max(shown), look, set(shown))

    def mean_loss(step):  # the Learn tab's bright line: the mean of the last 25 steps
        return sum(losses[step - 25:step]) / 25

    text = [s["text"] for s in steps]
    claims = [  # (step of the lesson, the phrase, torch's value, decimals)
        (1, "its first loss is 4.33", losses[0], 2),
        (1, "ln 64 = 4.16", math.log(64), 2),
        (3, "The loss creeps down to 3.83", mean_loss(600), 2),
        (4, "the loss falls from 3.83", mean_loss(600), 2),
        (4, "to 3.07", mean_loss(700), 2),
        (4, "rises from 0.13", at[600]["previous"][0][0], 2),
        (4, "to 0.38", at[700]["previous"][0][0], 2),
        (4, "head 2's from 0.16", at[600]["previous"][0][1], 2),
        (4, "to 0.31)", at[700]["previous"][0][1], 2),
        (4, "(from 0.06", at[600]["induction"][1][0], 2),
        (4, "to 0.63 and", at[700]["induction"][1][0], 2),
        (4, "and from 0.09", at[600]["induction"][1][1], 2),
        (4, "to 0.62)", at[700]["induction"][1][1], 2),
        (5, "token 21, “63”, gives 0.82", float(at[1000]["weights"][0][0, 20, 19]), 2),
        (5, "previous-token score is 0.64", at[1000]["previous"][0][0], 2),
        (6, "0.86 of its weight is on token 11", float(at[1000]["weights"][1][1, 25, 10]), 2),
    ]
    failed = []
    for step, phrase, value, decimals in claims:
        quoted = [float(w.strip("().,")) for w in phrase.split() if w.strip("().,").replace(".", "", 1).isdigit()]
        got = round(value, decimals)
        ok = phrase in text[step - 1] and any(abs(q - got) < 0.5 * 10 ** -decimals for q in quoted)
        print(f"step {step}: {phrase!r}: torch gives {value:.4f}{'' if ok else '  <-- differs'}")
        if not ok:
            failed.append(f"step {step}: {phrase!r} (torch: {value:.4f}; in the text: {phrase in text[step - 1]})")
    # What the steps say in words: the tokens they name, the heads that learned what.
    check_words = [
        (6, "the second “60”", ids[25] == 60 and ids[9] == 60 and ids.index(60) == 9),
        (6, "token 11, “43”", ids[10] == 43),
        (5, "token 21, “63”, gives 0.82 of its attention to token 20, “23”", ids[20] == 63 and ids[19] == 23),
        (5, "one key instead, token 23, “46”", ids[22] == 46),
        (5, "many rows look at one key instead, token 23",
         sum(1 for i in range(16, 32) if int(at[1000]["weights"][0][0, i].argmax()) == 22) >= 6),
        (4, "both heads of layer 2 become induction heads",
         all(s >= THRESHOLD["induction"] for s in at[700]["induction"][1])),
        (7, "layer 1's first head looks back one token", at[1000]["previous"][0][0] >= THRESHOLD["previous_token"]),
        (7, "both heads of layer 2 induct", all(s >= THRESHOLD["induction"] for s in at[1000]["induction"][1])),
        (3, "the heads' scores stay flat",
         all(abs(at[600][k][l][h] - at[0][k][l][h]) < 0.06 for k in ("previous", "induction") for l in range(2)
             for h in range(2))),
    ]
    for step, phrase, holds in check_words:
        ok = phrase in text[step - 1] and holds
        print(f"step {step}: {phrase!r}: {'holds' if ok else 'does not hold'}")
        if not ok:
            failed.append(f"step {step}: {phrase!r} (in the text: {phrase in text[step - 1]}, true of torch's run: {holds})")
    if failed:
        sys.exit("FAIL: the lesson says what torch's run does not:\n  " + "\n  ".join(failed))
    print(f"all {len(claims) + len(check_words)} claims of the lesson hold for torch's run of {task}")


if __name__ == "__main__":
    main()
