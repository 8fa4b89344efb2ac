"""`attn export --to ctranslate2` against CTranslate2 4.8.5 itself (pinned in
scripts/test-venv-requirements.txt):
- a Transformer trained on Multi30k for a few seconds, exported: CTranslate2's float32
  greedy translation of test2016 equals attn's greedy output (`attn translate --beam 1
  --pieces`) token for token on at least 99 % of the sentences; the rest are listed with
  the cause (attn's own top-two logit gap at the first difference: a near tie is rounding);
- every architecture option maps: pre-/post-LN, sinusoidal/learned positions, relu/gelu,
  tied or separate output projection, shared or separate embeddings (the trained model and
  a variant of it with every other option): CTranslate2's per-token log-probabilities of
  attn's greedy translations equal attn's teacher-forced ones;
- beam 5: CTranslate2's float32 beam search (length penalty 1) equals `attn translate --beam 5
  --beam-rules ctranslate2` token for token on at least 99 % of test2016; the rest are listed
  with the cause (the two hypotheses' attn scores under CTranslate2's rules: a near tie is
  rounding); the Python translate(beam_rules=) gives the CLI's text; bad values are refused;
- the command's errors: an RNN refused with one line naming what ctranslate2 takes (the task registry's), a
  non-empty --out refused unless --overwrite, a python without ctranslate2 named with the
  script that installs it; a refused export writes nothing."""
import gzip
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import attn
from peers import ATTN_BIN, require_data, require_peer

ctranslate2 = require_peer("ctranslate2", "4.8.5")

MIN_AGREEMENT = 0.99
NEAR_TIE = 1e-3  # logit gap below which float32 rounding may pick either token
MAX_LEN = 60  # output pieces at most, in both engines (test2016's sources have up to ~40)
LOG_PROB_TOLERANCE = 2e-5  # float32 summed in other orders: 1.4e-6 measured; tanh-GELU for GELU gives 5e-4


def export(model, out, *options, python=sys.executable):
    return subprocess.run([ATTN_BIN, "export", "--to", "ctranslate2", "--model", str(model), "--out", str(out),
                           "--python", python, *options], capture_output=True, text=True)


def run_lines(args, lines):
    result = subprocess.run([ATTN_BIN, *args], input="".join(line + "\n" for line in lines), capture_output=True,
                            text=True, check=True)
    return [line.split() for line in result.stdout.split("\n")[:-1]]


def german_test2016():
    with gzip.open(require_data("multi30k/raw/test_2016_flickr.de.gz"), "rt", encoding="utf-8") as f:
        return f.read().splitlines()


def ctranslate2_greedy(model_dir, sources):
    """CTranslate2's greedy float32 translations, at most MAX_LEN pieces (as attn's)."""
    # One thread: the parity step shares 2 cores with another test program.
    translator = ctranslate2.Translator(str(model_dir), device="cpu", compute_type="float32", intra_threads=1)
    results = translator.translate_batch(sources, beam_size=1, max_decoding_length=MAX_LEN, max_batch_size=64)
    return [r.hypotheses[0] for r in results]


def attn_logits(model, src, tgt_in):
    """attn's teacher-forced logits (T, V) of one source (S) and target input (T) ids."""
    src = np.asarray([src], np.int32)
    return model.logits(attn.tensor(src), attn.tensor(np.array([src.shape[1]], np.int32)),
                        attn.tensor(np.asarray([tgt_in], np.int32)))[0]


def describe_difference(model, ids, source, ours, theirs):
    """Where two translations (pieces) part, and why: attn's top-two logit gap there (after
    BOS and the common prefix); a gap under NEAR_TIE is float32 rounding."""
    t = next((t for t, (x, y) in enumerate(zip(ours, theirs)) if x != y), min(len(ours), len(theirs)))
    logits = attn_logits(model, [ids[p] for p in source], [1] + [ids[p] for p in ours[:t]])[-1]
    top2 = np.sort(logits)[-2:]
    gap = float(top2[1] - top2[0])
    cause = "near tie (float32 rounding)" if gap < NEAR_TIE else "DIFFERENT"
    return f"step {t}: attn {ours[t:t + 1]}, CTranslate2 {theirs[t:t + 1]}, attn's top-two logit gap {gap:.2e}: {cause}"


def listed_differences(model_path, out, sources, ours, theirs, describe):
    """"sentence N: why" for each sentence whose translations (pieces) differ; describe(model,
    ids, source, ours, theirs) says why."""
    model = attn.load(model_path)
    vocab = json.loads((out / "shared_vocabulary.json").read_text())
    ids = {piece: i for i, piece in enumerate(vocab)}
    return [f"sentence {i + 1}: " + describe(model, ids, sources[i], a, b)
            for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]


def test_ctranslate2_greedy_equals_attn_on_test2016(tmp_path, multi30k_transformer):
    out = tmp_path / "ct2"
    out.mkdir()  # an empty --out is fine
    result = export(multi30k_transformer, out)
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(out)) == ["config.json", "model.bin", "shared_vocabulary.json", "spm.model"]
    assert sorted(os.listdir(tmp_path)) == ["ct2"]  # no staging folder left
    german = german_test2016()
    sources = run_lines(["tokenize", "encode", "--model", str(out / "spm.model")], german)
    ours = run_lines(["translate", "--model", str(multi30k_transformer), "--beam", "1", "--max-len", str(MAX_LEN),
                      "--pieces", "--threads", "2"], german)
    theirs = ctranslate2_greedy(out, sources)
    assert len(ours) == len(theirs) == len(german) == 1000
    # A model that says the same thing for every sentence would agree trivially.
    assert len({" ".join(o) for o in ours}) > 0.3 * len(ours), "the test model's translations barely vary"

    differing = listed_differences(multi30k_transformer, out, sources, ours, theirs, describe_difference)
    print(f"\n{len(german) - len(differing)}/{len(german)} identical" + "".join("\n" + d for d in differing))
    assert len(differing) <= (1 - MIN_AGREEMENT) * len(german), "\n".join(differing)
    # The trainer's architecture (pre-LN, sinusoidal, relu, shared embeddings, tied output):
    # CTranslate2's scores equal attn's.
    worst = worst_log_prob_difference(multi30k_transformer, out, sources[:10])
    print(f"log-probabilities of attn's translations: CTranslate2's differ by up to {worst:.2e}")
    assert worst <= LOG_PROB_TOLERANCE, f"log-probabilities differ by up to {worst:.2e}"


# --- beam 5: CTranslate2's search in attn (--beam-rules ctranslate2) ---

BEAM = 5
NEAR_TIE_SCORE = 1e-4  # normalised log-prob gap below which float32 rounding may pick either hypothesis


def ctranslate2_beam(model_dir, sources):
    """CTranslate2's beam-5 float32 translations (length penalty 1, its default), MAX_LEN pieces at most."""
    translator = ctranslate2.Translator(str(model_dir), device="cpu", compute_type="float32", intra_threads=1)
    results = translator.translate_batch(sources, beam_size=BEAM, length_penalty=1.0, max_decoding_length=MAX_LEN,
                                         max_batch_size=64)
    return [r.hypotheses[0] for r in results]


def ctranslate2_rules_score(model, ids, source, pieces):
    """A hypothesis's score under CTranslate2's rules, from attn's teacher-forced log-softmax:
    Σ log p (the first step renormalised without EOS) / its length with EOS (none at MAX_LEN)."""
    target = [ids[p] for p in pieces] + ([2] if len(pieces) < MAX_LEN else [])
    logits = attn_logits(model, [ids[p] for p in source], [1] + target[:-1]).astype(np.float64)  # (T, V)
    logits = logits - logits.max(-1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    raw = log_probs[np.arange(len(target)), target].sum() - np.log1p(-np.exp(log_probs[0, 2]))
    return raw / len(target)


def describe_beam_difference(model, ids, source, ours, theirs):
    """Where two beam translations part, and why: their scores under CTranslate2's rules by
    attn's model; a gap under NEAR_TIE_SCORE is float32 rounding between near-equal hypotheses."""
    t = next((t for t, (x, y) in enumerate(zip(ours, theirs)) if x != y), min(len(ours), len(theirs)))
    a, b = ctranslate2_rules_score(model, ids, source, ours), ctranslate2_rules_score(model, ids, source, theirs)
    cause = "near tie (float32 rounding)" if abs(a - b) < NEAR_TIE_SCORE else "DIFFERENT"
    return f"piece {t}: attn {ours[t:t + 1]} scores {a:.6f}, CTranslate2 {theirs[t:t + 1]} {b:.6f}: {cause}"


def test_ctranslate2_beam5_equals_attn_with_ctranslate2_rules_on_test2016(tmp_path, multi30k_transformer):
    out = tmp_path / "ct2"
    result = export(multi30k_transformer, out)
    assert result.returncode == 0, result.stderr
    german = german_test2016()
    sources = run_lines(["tokenize", "encode", "--model", str(out / "spm.model")], german)
    beam = ["translate", "--model", str(multi30k_transformer), "--beam", str(BEAM), "--max-len", str(MAX_LEN),
            "--pieces", "--threads", "2"]
    ours = run_lines(beam + ["--beam-rules", "ctranslate2"], german)
    attn_rules = run_lines(beam, german)
    theirs = ctranslate2_beam(out, sources)
    assert len(ours) == len(theirs) == len(attn_rules) == len(german) == 1000
    assert len({" ".join(o) for o in ours}) > 0.3 * len(ours), "the test model's translations barely vary"

    differing = listed_differences(multi30k_transformer, out, sources, ours, theirs, describe_beam_difference)
    # attn's own rules (GNMT's normalisation and bound) for scale: how far they are from CTranslate2's.
    apart = sum(a != b for a, b in zip(attn_rules, theirs))
    print(f"\nbeam {BEAM}: {len(german) - len(differing)}/{len(german)} identical with --beam-rules ctranslate2 "
          f"({len(german) - apart}/{len(german)} with attn's rules)" + "".join("\n" + d for d in differing))
    assert len(differing) <= (1 - MIN_AGREEMENT) * len(german), "\n".join(differing)

    # The Python translate takes the same rules and gives the CLI's text.
    text = run_lines(["translate", "--model", str(multi30k_transformer), "--beam", str(BEAM), "--max-len",
                      str(MAX_LEN), "--beam-rules", "ctranslate2", "--threads", "2"], german[:20])
    python = attn.load(multi30k_transformer).translate(german[:20], beam=BEAM, max_len=MAX_LEN, beam_rules="ctranslate2")
    assert [line.split() for line in python] == text


def test_beam_rules_bad_values_are_refused(multi30k_transformer):
    def refused(*options):
        result = subprocess.run([ATTN_BIN, "translate", "--model", str(multi30k_transformer), *options],
                                input="ein Hund\n", capture_output=True, text=True)
        assert result.returncode == 2 and result.stdout == "", (options, result)
        return result.stderr.strip()

    assert refused("--beam-rules", "ct2") == (
        "attn: usage error: --beam-rules: ct2 not in {attn,ctranslate2} (see attn translate --help)")
    assert refused("--beam-rules", "ctranslate2", "--beam-stop", "top") == (
        "attn: usage error: --beam-stop top applies to --beam-rules attn (ctranslate2 has its own stopping rule)")
    assert refused("--beam-rules", "ctranslate2", "--coverage-penalty", "0.2") == (
        "attn: usage error: --coverage-penalty applies to --beam-rules attn (CTranslate2's coverage penalty is "
        "another)")
    with pytest.raises(ValueError, match=r"unknown beam rules 'ct2' \(valid: attn, ctranslate2\)"):
        attn.load(multi30k_transformer).translate("ein Hund", beam=BEAM, beam_rules="ct2")


# --- every architecture option: CTranslate2's scores of attn's translations ---

def variant(trained, tmp_path, changes, rng):
    """The trained checkpoint (shared embeddings, tied output, pre-LN, sinusoidal, relu: the
    translation trainer's defaults) with its configuration changed and its weights made to
    fit, saved beside a copy of its spm.model: post-LN drops the final norms; learned
    positions get a table; an untied output gets a generator; separate embeddings start
    from the shared one, the target's perturbed."""
    tensors = attn.safetensors.load(trained)
    metadata = attn.safetensors.load_metadata(trained)
    info = json.loads(metadata["attn"])
    assert info["config"]["share_embeddings"] and info["config"].get("tie_output", True)
    config = info["config"]
    config.update(changes)
    D, V, max_len = config["d_model"], config["tgt_vocab"], config.get("max_len", 256)
    if not config["norm_first"]:
        for name in [n for n in tensors if n.startswith(("encoder.norm.", "decoder.norm."))]:
            del tensors[name]
    if config["positions"] == "learned":
        tensors["positions.weight"] = (0.02 * rng.standard_normal((max_len, D))).astype(np.float32)
    if not config.get("tie_output", True):
        tensors["generator.weight"] = (rng.standard_normal((V, D)) / np.sqrt(D)).astype(np.float32)
        tensors["generator.bias"] = rng.standard_normal(V).astype(np.float32)
    if not config["share_embeddings"]:
        shared = tensors.pop("embedding.weight")
        tensors["src_embedding.weight"] = shared
        tensors["tgt_embedding.weight"] = (shared + 0.1 * rng.standard_normal(shared.shape)).astype(np.float32)
    metadata["attn"] = json.dumps(info)
    folder = tmp_path / "variant"
    folder.mkdir()
    shutil.copy(trained.parent / "spm.model", folder / "spm.model")
    attn.safetensors.save(tensors, folder / "model.safetensors", metadata=metadata)
    return folder / "model.safetensors"


def greedy_ids(model, src, steps):
    """attn's greedy output ids by teacher-forced argmax, through EOS or `steps` tokens."""
    target = [1]
    for _ in range(steps):
        target.append(int(attn_logits(model, src, target)[-1].argmax()))
        if target[-1] == 2:
            break
    return target[1:]


def worst_log_prob_difference(model_path, out, sources, steps=15):
    """CTranslate2's log-probability of each token of attn's greedy translation (EOS
    included) against attn's teacher-forced log-softmax: the largest difference."""
    model = attn.load(model_path)
    vocab = json.loads((out / "shared_vocabulary.json").read_text())
    ids = {piece: i for i, piece in enumerate(vocab)}
    scorer = ctranslate2.Translator(str(out), device="cpu", compute_type="float32", intra_threads=1)
    worst = 0.0
    for source in sources:
        src = [ids[p] for p in source]
        target = greedy_ids(model, src, steps)
        logits = attn_logits(model, src, [1] + target[:-1])  # (T, V)
        logits = logits - logits.max(-1, keepdims=True)
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        ours = log_probs[np.arange(len(target)), target]
        pieces = [vocab[i] for i in target if i != 2]
        theirs = np.array(scorer.score_batch([source], [pieces])[0].log_probs)
        if target[-1] != 2:  # CTranslate2 scores EOS after the last piece too
            theirs = theirs[:-1]
        assert theirs.shape == ours.shape, (source, pieces, theirs)
        worst = max(worst, float(np.abs(theirs - ours).max()))
    return worst


def test_every_other_option_maps(tmp_path, multi30k_transformer):
    """The options the trainer's defaults leave out, in one model: post-LN, learned
    positions, gelu, an untied output projection with a bias, separate embeddings."""
    changes = {"norm_first": False, "positions": "learned", "activation": "gelu", "tie_output": False,
               "share_embeddings": False}
    path = variant(multi30k_transformer, tmp_path, changes, np.random.default_rng(7))
    out = tmp_path / "ct2"
    result = export(path, out)
    assert result.returncode == 0, result.stderr
    sources = run_lines(["tokenize", "encode", "--model", str(out / "spm.model")], german_test2016()[:10])
    worst = worst_log_prob_difference(path, out, sources)
    print(f"\n{changes}: log-probabilities differ by up to {worst:.2e}")
    assert worst <= LOG_PROB_TOLERANCE, f"{changes}: log-probabilities differ by up to {worst:.2e}"


# --- errors ---

def test_rnn_is_refused_and_nothing_written(tmp_path):
    path = tmp_path / "rnn.safetensors"
    attn.save(attn.models.Seq2Seq('{"attention": "bahdanau", "hidden": 8, "emb": 4}'), path)
    result = export(path, tmp_path / "out")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"attn: error: export --to ctranslate2: {path} is an attn-seq2seq checkpoint; ctranslate2 takes --task "
        "translate | summarize --model transformer (attn-seq2seq checkpoints go --to torch)")
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
