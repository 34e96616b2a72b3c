"""Training speed, ours beside torch's on the same model (docs/DESIGN.md §2.7), and how long the
default induction task takes to form its circuit. Run by run_bench.py; prints JSON.

- Paired rounds: the default induction task (2 layers × 2 heads, d = 64, T = 32, batch 32, attention
  only), `steps` steps each: `attnscope-cli train --time` (its own wall time of the steps), then the
  script `attnscope-cli pytorch-train` writes, its train() timed in this process by Debian's torch
  (its own thread count, recorded, and two threads; the faster of the two counts).
- The default task whole (1500 steps, scores every 25): the wall time at the first record where a
  second-layer head's induction score passes 0.5.

Usage: training_bench.py ATTNSCOPE_CLI [ROUNDS] [STEPS]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    cli = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    import torch
    default_threads = torch.get_num_threads()
    with tempfile.TemporaryDirectory(prefix="attnscope-train-bench.") as tmp:
        task = os.path.join(tmp, "task.json")
        with open(task, "w") as f:
            json.dump({"task": "induction", "steps": steps, "score_every": 1000000}, f)
        source = subprocess.run([cli, "pytorch-train", task], capture_output=True, text=True, check=True).stdout
        script = {"__name__": "attnscope_training_bench"}
        exec(compile(source, "pytorch-train script", "exec"), script)
        ours, theirs, theirs_two = [], [], []
        for _ in range(rounds):
            out = json.loads(subprocess.run([cli, "train", task, "--time"], capture_output=True, text=True,
                                            check=True).stdout)
            ours.append(out["seconds"] / steps * 1000)
            for threads, into in ((default_threads, theirs), (2, theirs_two)):
                torch.set_num_threads(threads)
                t0 = time.perf_counter()
                script["train"]()
                into.append((time.perf_counter() - t0) / steps * 1000)
        # The whole default task: when the induction circuit forms.
        with open(task, "w") as f:
            json.dump({"task": "induction"}, f)
        run = json.loads(subprocess.run([cli, "train", task, "--time"], capture_output=True, text=True,
                                        check=True).stdout)
    hs = run["head_scores"]
    formed = next((i for i, layers in enumerate(hs["induction"])
                   if any(v is not None and v > 0.5 for v in layers[-1])), None)
    # torch at its faster thread count of each round (on a loaded machine two threads can lose)
    ratios = [min(t, t2) / o for t, t2, o in zip(theirs, theirs_two, ours)]
    print(json.dumps({
        "task": "induction (defaults: 2 layers x 2 heads, d = 64, T = 32, batch 32, AdamW, attention only)",
        "steps_per_round": steps, "rounds": rounds,
        "ours_ms_per_step": ours, "torch_ms_per_step": theirs, "torch_threads": default_threads,
        "torch_two_threads_ms_per_step": theirs_two,
        "torch_over_ours_median": statistics.median(ratios),
        "ours_steps_per_s": 1000 / statistics.median(ours),
        "induction_formed": None if formed is None else {
            "step": hs["steps"][formed], "seconds": run["elapsed"][formed],
            "scores": hs["induction"][formed][-1]},
        "default_task_seconds": run["seconds"],
    }))


if __name__ == "__main__":
    main()
