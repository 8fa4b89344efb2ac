"""attn.load / attn.save: every checkpoint format `attn train` writes, loaded from Python,
used through its methods, saved and loaded again; and the errors. The CLI (build/attn, or
$ATTN_BIN) trains the tiny translation, classifier and LM runs on the shared data."""
import gc
import os
import subprocess

import numpy as np
import pytest

import attn

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("ATTN_DATA_DIR", os.path.join(HERE, "..", "..", "..", "shared", "data"))
ATTN_BIN = os.environ.get("ATTN_BIN", os.path.join(os.path.dirname(attn.__file__), "..", "..", "attn"))


def tiny_seq2seq():
    return attn.models.Seq2Seq('{"attention": "bahdanau", "hidden": 16, "emb": 8, "seed": 3}')


def same_state(a, b):
    assert list(a) == list(b)
    for name in a:
        np.testing.assert_array_equal(np.asarray(a[name]), np.asarray(b[name]), err_msg=name)


def test_seq2seq_save_load_translate_attend(tmp_path):
    model = tiny_seq2seq()
    path = tmp_path / "s2s.safetensors"
    attn.save(model, path, task="reverse", min_len=3, max_len=7)
    loaded = attn.load(path)
    assert loaded.format == "attn-seq2seq"
    assert loaded.metadata["task"] == "reverse" and loaded.metadata["max_len"] == 7
    assert isinstance(loaded.module, attn.models.Seq2Seq)
    same_state(model.state_dict(), loaded.state_dict())
    module = attn.load(path).module  # the attn.Model is a temporary: the module keeps it alive
    gc.collect()
    same_state(model.state_dict(), module.state_dict())
    src = [3, 4, 5, 6]
    model.eval()
    tokens, weights = model.greedy(attn.tensor(np.array([src], np.int32)), attn.tensor(np.array([4], np.int32)), 18)
    expected = tokens[0][:-1] if tokens[0][-1] == attn.data.EOS else tokens[0]
    assert loaded.translate(src) == expected
    assert loaded.translate([src, [7, 8]])[0] == expected
    att = loaded.attend(src)
    assert att["output"] == tokens[0]
    np.testing.assert_allclose(np.array(att["weights"]), np.array(weights[0]), rtol=0, atol=0)
    assert len(loaded.translate(src, beam=3, max_len=5)) <= 5
    again = tmp_path / "again.safetensors"
    attn.save(loaded, again)
    same_state(loaded.state_dict(), attn.load(again).state_dict())


def test_seq2seq_errors(tmp_path):
    path = tmp_path / "s2s.safetensors"
    attn.save(tiny_seq2seq(), path)
    loaded = attn.load(path)
    with pytest.raises(ValueError, match="classify: .* is an attn-seq2seq checkpoint; classify needs attn-classifier"):
        loaded.classify("text")
    with pytest.raises(ValueError, match="generate: .* generate needs attn-lm"):
        loaded.generate("x")
    with pytest.raises(ValueError, match="beam must be >= 1"):
        loaded.translate([3, 4], beam=0)
    with pytest.raises(ValueError, match="translate: token id 99 at position 1 of source 0 is not a content symbol"):
        loaded.translate([3, 99])
    with pytest.raises(ValueError, match="unknown task 'nope'"):
        attn.save(tiny_seq2seq(), tmp_path / "x.safetensors", task="nope")
    with pytest.raises(TypeError, match="attn.save: 'model' must be"):
        attn.save({"w": 1}, tmp_path / "x.safetensors")
    with pytest.raises(OSError, match="missing.safetensors"):
        attn.load(tmp_path / "missing.safetensors")
    plain = tmp_path / "plain.safetensors"
    attn.safetensors.save({"w": np.ones(3, np.float32)}, plain)
    with pytest.raises(OSError, match="not an attn checkpoint"):
        attn.load(plain)
    assert not (tmp_path / "x.safetensors").exists()


def train_run(tmp_path, name, *args, data):
    if not os.path.exists(os.path.join(DATA, data)):
        pytest.skip(f"no {data} under {DATA}")
    assert os.path.exists(ATTN_BIN), f"the attn binary is not at {ATTN_BIN} (set ATTN_BIN)"
    out = tmp_path / name
    subprocess.run([ATTN_BIN, "train", *args, "--data", os.path.join(DATA, data), "--threads", "2", "--out", str(out)],
                   check=True, capture_output=True)
    return out / "model.safetensors"


def test_classifier(tmp_path):
    path = train_run(tmp_path, "cls", "--task", "sst2", "--steps", "3", "--train-limit", "100", "--dev-limit", "20",
                     data="sst2")
    model = attn.load(path)
    result = model.classify("a fine film")
    assert result["name"] in ("negative", "positive") and len(result["probabilities"]) == 2
    assert result["probability"] == pytest.approx(max(result["probabilities"]))
    assert sum(result["probabilities"]) == pytest.approx(1.0, abs=1e-6)
    att = model.attend("a fine film")
    assert att["tokens"] == ["a", "fine", "film"] and sum(att["weights"]) == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ValueError, match="translate needs attn-seq2seq or attn-translation"):
        model.translate("x")
    with pytest.raises(ValueError, match="no tokens"):
        model.classify("   ")
    (tmp_path / "copy").mkdir()
    attn.save(model, tmp_path / "copy" / "m.safetensors")
    assert attn.load(tmp_path / "copy" / "m.safetensors").classify("a fine film") == result


def test_char_lm(tmp_path):
    path = train_run(tmp_path, "lm", "--task", "charlm", "--train-limit", "200", "--d-model", "16", "--heads", "2",
                     "--ffn", "32", "--dec-layers", "1", "--batch", "16", "--steps", "3", "--eval-every", "3",
                     "--eval-sentences", "20", data="tatoeba-fra-eng")
    model = attn.load(path)
    text = model.generate("Le ", max_chars=12, seed=5)
    assert text.startswith("Le ") and text == model.generate("Le ", max_chars=12, seed=5)
    cli = subprocess.run([ATTN_BIN, "sample", "--model", str(path), "--prompt", "Le ", "--max-chars", "12", "--seed", "5", "-n", "1"],
                         check=True, capture_output=True, text=True).stdout.rstrip("\n")
    assert text == cli
    with pytest.raises(ValueError, match="max_chars must be >= 1"):
        model.generate("Le ", max_chars=0)
    with pytest.raises(ValueError, match="attend needs"):
        model.attend("x")


def test_translation(tmp_path):
    path = train_run(tmp_path, "tr", "--task", "translate", "--train-limit", "100", "--vocab-size", "200",
                     "--max-tokens", "600", "--steps", "3", "--warmup", "1", "--eval-every", "3", "--eval-sentences",
                     "5", "--model", "transformer", "--d-model", "16", "--heads", "2", "--ffn", "32", data="multi30k")
    model = attn.load(path)
    lines = ["ein Hund läuft", "eine Katze"]
    out = model.translate(lines, beam=2, max_len=6)
    cli = subprocess.run([ATTN_BIN, "translate", "--model", str(path), "--beam", "2", "--max-len", "6"],
                         input="\n".join(lines) + "\n", check=True, capture_output=True, text=True).stdout
    assert out == cli.splitlines()
    assert model.translate(lines[0], beam=2, max_len=6) == out[0]
    att = model.attend("ein Hund")
    assert len(att["weights"]) == len(att["output"]) and all(len(w) == len(att["source"]) for w in att["weights"])
    # Saved elsewhere: the tokenizer comes along; a different spm.model there is refused.
    (tmp_path / "moved").mkdir()
    attn.save(model, tmp_path / "moved" / "m.safetensors")
    assert attn.load(tmp_path / "moved" / "m.safetensors").translate(lines, beam=2, max_len=6) == out
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "spm.model").write_bytes(b"not this one")
    with pytest.raises(OSError, match="is another tokenizer"):
        attn.save(model, tmp_path / "other" / "m.safetensors")
    assert not (tmp_path / "other" / "m.safetensors").exists()
