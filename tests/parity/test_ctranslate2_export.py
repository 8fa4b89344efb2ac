"""`attn export --to ctranslate2` against CTranslate2 4.8.5 itself (pinned in
scripts/test-venv-requirements.txt):
- a Transformer trained on Multi30k for a few seconds, exported: CTranslate2's float32
  greedy translation of test2016 equals attn's greedy output (`attn translate --beam 1
  --pieces`) token for token on at least 99 % of the sentences; the rest are listed with
  the cause (attn's own top-two logit gap at the first difference: a near tie is rounding);
- every architecture option maps: pre-/post-LN, sinusoidal/learned positions, relu/gelu,
  tied or separate output projection, shared or separate embeddings; CTranslate2's
  per-token log-probabilities of attn's translations equal attn's teacher-forced ones;
- the command's errors: an RNN refused with one line naming what CTranslate2 runs, a
  non-empty --out refused unless --overwrite, a python without ctranslate2 named with the
  script that installs it; a refused export writes nothing."""
import gzip
import json
import os
import subprocess
import sys
from collections import defaultdict

import numpy as np
import pytest

import attn
from peers import ATTN_BIN, require_data, require_peer

ctranslate2 = require_peer("ctranslate2", "4.8.5")

MIN_AGREEMENT = 0.99
NEAR_TIE = 1e-3  # logit gap below which float32 rounding may pick either token


def export(model, out, *options, python=sys.executable):
    return subprocess.run([ATTN_BIN, "export", "--to", "ctranslate2", "--model", str(model), "--out", str(out),
                           "--python", python, *options], capture_output=True, text=True)


def run_lines(args, lines):
    result = subprocess.run([ATTN_BIN, *args], input="".join(line + "\n" for line in lines), capture_output=True,
                            text=True, check=True)
    return [line.split() for line in result.stdout.split("\n")[:-1]]


def test2016_german():
    with gzip.open(require_data("multi30k/raw/test_2016_flickr.de.gz"), "rt", encoding="utf-8") as f:
        return f.read().splitlines()


def ctranslate2_greedy(model_dir, sources):
    """Greedy float32 translations, each with attn's default length limit (2 x source + 10
    pieces): one batch per source length."""
    translator = ctranslate2.Translator(str(model_dir), device="cpu", compute_type="float32", intra_threads=2)
    by_length = defaultdict(list)
    for i, source in enumerate(sources):
        by_length[len(source)].append(i)
    out = [None] * len(sources)
    for length, rows in by_length.items():
        results = translator.translate_batch([sources[i] for i in rows], beam_size=1,
                                             max_decoding_length=2 * length + 10)
        for i, r in zip(rows, results):
            out[i] = r.hypotheses[0]
    return out


def first_difference(a, b):
    return next((t for t, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def test_ctranslate2_greedy_equals_attn_on_test2016(tmp_path, multi30k_transformer):
    out = tmp_path / "ct2"
    result = export(multi30k_transformer, out)
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(out)) == ["config.json", "model.bin", "shared_vocabulary.json", "spm.model"]
    german = test2016_german()
    sources = run_lines(["tokenize", "encode", "--model", str(out / "spm.model")], german)
    ours = run_lines(["translate", "--model", str(multi30k_transformer), "--beam", "1", "--batch", "1", "--pieces",
                      "--threads", "2"], german)
    theirs = ctranslate2_greedy(out, sources)
    assert len(ours) == len(theirs) == len(german) == 1000
    # A model that says the same thing for every sentence would agree trivially.
    assert len({" ".join(o) for o in ours}) > 0.5 * len(ours), "the test model's translations barely vary"

    model = attn.load(multi30k_transformer)
    vocab = json.loads((out / "shared_vocabulary.json").read_text())
    ids = {piece: i for i, piece in enumerate(vocab)}
    differing = []
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a == b:
            continue
        t = first_difference(a, b)
        src = np.array([[ids[p] for p in sources[i]]], np.int32)
        prefix = np.array([[1] + [ids[p] for p in a[:t]]], np.int32)  # BOS, then the common prefix
        logits = model.logits(src, np.array([src.shape[1]], np.int32), prefix)[0, -1]
        top2 = np.sort(logits)[-2:]
        gap = float(top2[1] - top2[0])
        cause = "near tie (float32 rounding)" if gap < NEAR_TIE else "DIFFERENT"
        differing.append(f"sentence {i + 1}, step {t}: attn {a[t:t + 1]} CTranslate2 {b[t:t + 1]}, "
                         f"attn's top-two logit gap {gap:.2e}: {cause}")
    print(f"\n{len(german) - len(differing)}/{len(german)} identical; the rest:\n" + "\n".join(differing))
    assert len(differing) <= (1 - MIN_AGREEMENT) * len(german), "\n".join(differing)


# --- every architecture option: CTranslate2's scores of attn's translations ---

def variant(tmp_path, trained, name, config_changes, rng):
    """The trained checkpoint with its configuration changed (untied output, shared
    embeddings) and the weights that needs, saved beside its spm.model."""
    tensors = attn.safetensors.load(trained)
    metadata = attn.safetensors.load_metadata(trained)
    info = json.loads(metadata["attn"])
    info["config"].update(config_changes)
    D = info["config"]["d_model"]
    V = tensors["tgt_embedding.weight"].shape[0]
    if config_changes.get("tie_output") is False:
        tensors["generator.weight"] = (rng.standard_normal((V, D)) / np.sqrt(D)).astype(np.float32)
        tensors["generator.bias"] = rng.standard_normal(V).astype(np.float32)
    if config_changes.get("share_embeddings"):
        tensors["embedding.weight"] = tensors.pop("src_embedding.weight")
        del tensors["tgt_embedding.weight"]
    metadata["attn"] = json.dumps(info)
    path = trained.parent / f"{name}.safetensors"
    attn.safetensors.save(tensors, path, metadata=metadata)
    return path


def check_scores(model_path, out, sources, tolerance=1e-4):
    """CTranslate2's log-probability of each token of attn's greedy translation (EOS
    included) equals attn's teacher-forced log-softmax."""
    model = attn.load(model_path)
    vocab = json.loads((out / "shared_vocabulary.json").read_text())
    ids = {piece: i for i, piece in enumerate(vocab)}
    scorer = ctranslate2.Translator(str(out), device="cpu", compute_type="float32", intra_threads=2)
    worst = 0.0
    for source in sources:
        src = np.array([[ids[p] for p in source]], np.int32)
        lengths = np.array([src.shape[1]], np.int32)
        target = greedy_ids(model, src, lengths, 12)
        logits = model.logits(src, lengths, np.array([[1] + target[:-1]], np.int32))[0]  # (T, V)
        logits = logits - logits.max(-1, keepdims=True)
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        ours = log_probs[np.arange(len(target)), target]
        pieces = [vocab[i] for i in target if i != 2]
        theirs = np.array(scorer.score_batch([source], [pieces])[0].log_probs)
        assert theirs.shape == ours.shape, (source, pieces)
        worst = max(worst, float(np.abs(theirs - ours).max()))
    assert worst <= tolerance, f"{out.name}: log-probabilities differ by up to {worst:.2e}"


def greedy_ids(model, src, lengths, steps):
    """attn's greedy output ids by teacher-forced argmax, through EOS or `steps` tokens."""
    target = [1]
    for _ in range(steps):
        target.append(int(model.logits(src, lengths, np.array([target], np.int32))[0, -1].argmax()))
        if target[-1] == 2:
            break
    return target[1:]


@pytest.mark.parametrize("options, changes", [
    ([], {}),
    (["--norm", "post", "--positions", "learned", "--activation", "gelu"], {}),
    ([], {"tie_output": False}),
    (["--norm", "post"], {"share_embeddings": True, "tie_output": False}),
], ids=["pre-sinusoidal-relu-tied", "post-learned-gelu", "untied", "post-shared-untied"])
def test_every_option_maps(tmp_path, options, changes):
    data = os.path.dirname(os.path.dirname(require_data("multi30k/raw/train.de.gz")))
    run = tmp_path / "run"
    subprocess.run([ATTN_BIN, "train", "--task", "translate", "--model", "transformer", "--data", data,
                    "--train-limit", "100", "--vocab-size", "200", "--max-tokens", "600", "--steps", "3",
                    "--warmup", "1", "--eval-every", "3", "--eval-sentences", "5", "--d-model", "16", "--heads", "2",
                    "--ffn", "32", "--enc-layers", "2", "--dec-layers", "2", "--threads", "2", *options,
                    "--out", str(run)], check=True, capture_output=True)
    path = run / "model.safetensors"
    if changes:
        path = variant(tmp_path, path, "variant", changes, np.random.default_rng(7))
    out = tmp_path / "ct2"
    result = export(path, out)
    assert result.returncode == 0, result.stderr
    sources = run_lines(["tokenize", "encode", "--model", str(out / "spm.model")], test2016_german()[:8])
    check_scores(path, out, sources)


# --- errors ---

def test_rnn_is_refused_and_nothing_written(tmp_path):
    path = tmp_path / "rnn.safetensors"
    attn.save(attn.models.Seq2Seq('{"attention": "bahdanau", "hidden": 8, "emb": 4}'), path)
    result = export(path, tmp_path / "out")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: export --to ctranslate2: {path} is an RNN encoder-decoder (attn-seq2seq); CTranslate2 runs "
        "Transformer encoder-decoders only: export an attn-translation checkpoint of --model transformer "
        "(or use --to torch)")
    assert sorted(os.listdir(tmp_path)) == ["rnn.safetensors"]


def test_non_empty_out_needs_overwrite(tmp_path, multi30k_transformer):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = export(multi30k_transformer, out)
    assert result.returncode == 1 and "exists and is not empty (pass --overwrite to replace it)" in result.stderr
    assert os.listdir(out) == ["keep.txt"]
    result = export(multi30k_transformer, out, "--overwrite")
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(out)) == ["config.json", "model.bin", "shared_vocabulary.json", "spm.model"]
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no staging or moved-aside folder left
    (tmp_path / "empty").mkdir()
    assert export(multi30k_transformer, tmp_path / "empty").returncode == 0  # an empty --out is fine


def test_python_without_ctranslate2_is_named(tmp_path, multi30k_transformer):
    # A python that cannot see the venv's packages (-S: no site-packages).
    bare = tmp_path / "bare-python"
    bare.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    bare.chmod(0o755)
    result = export(multi30k_transformer, tmp_path / "out", python=str(bare))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot import ctranslate2" in lines[0] and "scripts/test-venv.sh" in lines[0], lines
    result = export(multi30k_transformer, tmp_path / "out", python=str(tmp_path / "no-such-python"))
    assert result.returncode == 1 and "cannot run Python" in result.stderr and "scripts/test-venv.sh" in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["bare-python"]
