"""A task's run in Debian's torch, for the tests that hold attnscope's training against it: the
script `attnscope-cli pytorch-train TASK` writes (the book's GPTModel, autograd, torch.optim), run
here step by step so that a test can look at the model between steps (docs/DESIGN.md §2.7)."""
import json
import os
import subprocess

import torch


def script_of(cli, folder, task):
    """The pytorch-train script of `task` (a dict), executed as a module: its functions by name."""
    path = os.path.join(folder, "task.json")
    with open(path, "w") as f:
        json.dump(task, f)
    source = subprocess.run([cli, "pytorch-train", path], capture_output=True, text=True, check=True).stdout
    script = {"__name__": "attnscope_torch_training"}
    exec(compile(source, "pytorch-train script", "exec"), script)
    return script


def train(script, steps, look=None, at=()):
    """The script's model after `steps` optimizer steps on its batches, and every step's loss;
    look(step, model) at step 0 and at each step of `at`."""
    model = script["make_model"]()
    optimizer = script["make_optimizer"](model)
    data = torch.Generator().manual_seed(script["TASK"]["seed"] + 1)
    losses = []
    if look is not None:
        look(0, model)
    for step in range(1, steps + 1):
        x, y = script["next_batch"](data)
        loss = script["loss_of"](model, x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if look is not None and step in at:
            look(step, model)
    return model, losses


def probe_weights(script, model):
    """Every layer's heads' attention weights on the task's probe (eval mode): [L] of H × T × T."""
    was_training = model.training
    model.eval()
    with torch.no_grad():
        model(torch.tensor([script["probe"]()]))
    model.train(was_training)
    return [block.att.last_weights[0].clone() for block in model.trf_blocks]
