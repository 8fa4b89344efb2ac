"""`attn export --to torch`: the written model.py (plain torch, no attn import) loads its
model.safetensors with strict names and computes attn's teacher-forced logits (at the
seq2seq parity tolerance) and attn's greedy outputs, for RNN encoder-decoders of every
exportable score and for Transformers (pre-/post-LN, sinusoidal / learned positions); and
the command's errors."""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import attn
from parity import assert_close

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("ATTN_DATA_DIR", os.path.join(HERE, "..", "..", "..", "shared", "data"))
ATTN_BIN = os.environ.get("ATTN_BIN", os.path.join(os.path.dirname(attn.__file__), "..", "..", "attn"))

RNN_CONFIGS = [
    '{"attention": "bahdanau", "hidden": 12, "emb": 6}',
    '{"attention": "bahdanau", "score": "additive_normalized", "encoder": "lstm", "hidden": 10, "emb": 6}',
    '{"attention": "luong", "hidden": 12, "emb": 6, "layers": 2, "bidirectional": true}',
    '{"attention": "luong", "score": "dot", "encoder": "lstm", "hidden": 8, "emb": 6, "input_feeding": false}',
    '{"attention": "luong", "score": "concat", "hidden": 8, "emb": 6}',
    '{"attention": "luong", "score": "location", "hidden": 8, "emb": 6, "max_src_len": 9}',
    '{"attention": "luong", "score": "scaled_dot", "hidden": 8, "emb": 6}',
    '{"attention": "luong", "score": "multihead", "heads": 2, "hidden": 8, "emb": 6, "bidirectional": true}',
    '{"attention": "none", "hidden": 8, "emb": 6}',
]


def export(model_path, out):
    result = subprocess.run([ATTN_BIN, "export", "--to", "torch", "--model", str(model_path), "--out", str(out)],
                            capture_output=True, text=True)
    return result


def import_exported(out):
    """model.py in a fresh interpreter module; asserts it does not import attn."""
    source = (out / "model.py").read_text()
    assert "import attn" not in source and "from attn" not in source
    spec = importlib.util.spec_from_file_location(f"exported_{abs(hash(str(out)))}", out / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load()


def batch(seed, B=3, S=7, T=5, vocab=32):
    rng = np.random.default_rng(seed)
    lengths = np.array([S] + list(rng.integers(1, S + 1, B - 1)), np.int32)
    src = rng.integers(3, vocab, (B, S)).astype(np.int32)
    src[np.arange(S)[None, :] >= lengths[:, None]] = 0
    tgt_in = np.concatenate([np.ones((B, 1), np.int32), rng.integers(3, vocab, (B, T - 1)).astype(np.int32)], 1)
    return src, lengths, tgt_in


def compare(loaded, net, case, vocab, seed):
    src, lengths, tgt_in = batch(seed, vocab=vocab)
    expected = loaded.logits(attn.tensor(src), attn.tensor(lengths), attn.tensor(tgt_in))
    with torch.no_grad():
        got = net.logits(torch.tensor(src).long(), torch.tensor(lengths).long(), torch.tensor(tgt_in).long())
    assert_close("seq2seq", case, "logits", got.numpy(), torch.tensor(expected))
    return src, lengths


def test_rnn_seq2seq_exports(tmp_path):
    assert os.path.exists(ATTN_BIN), f"the attn binary is not at {ATTN_BIN} (set ATTN_BIN)"
    for i, config in enumerate(RNN_CONFIGS):
        model = attn.models.Seq2Seq(config)
        path = tmp_path / f"m{i}.safetensors"
        attn.save(model, path)
        out = tmp_path / f"export{i}"
        result = export(path, out)
        assert result.returncode == 0, result.stderr
        net = import_exported(out)
        loaded = attn.load(path)
        src, lengths = compare(loaded, net, config, 32, i)
        expected = [loaded.translate(list(map(int, row[:n])), max_len=9) + [attn.data.EOS] for row, n in zip(src, lengths)]
        got = net.greedy(torch.tensor(src).long(), torch.tensor(lengths).long(), 9)
        assert [g[:len(e)] for g, e in zip(got, expected)] == [e[:len(g)] for g, e in zip(got, expected)], config


@pytest.mark.parametrize("options", [[], ["--norm", "post", "--positions", "learned", "--activation", "gelu"]])
def test_transformer_exports(tmp_path, options):
    if not os.path.exists(os.path.join(DATA, "multi30k")):
        pytest.skip(f"no multi30k under {DATA}")
    run = tmp_path / "run"
    subprocess.run([ATTN_BIN, "train", "--task", "translate", "--data", os.path.join(DATA, "multi30k"), "--train-limit",
                    "100", "--vocab-size", "200", "--max-tokens", "600", "--steps", "3", "--warmup", "1",
                    "--eval-every", "3", "--eval-sentences", "5", "--model", "transformer", "--d-model", "16",
                    "--heads", "2", "--ffn", "32", "--enc-layers", "2", "--dec-layers", "2", "--threads", "2",
                    *options, "--out", str(run)], check=True, capture_output=True)
    path = run / "model.safetensors"
    out = tmp_path / "export"
    result = export(path, out)
    assert result.returncode == 0, result.stderr
    net = import_exported(out)
    loaded = attn.load(path)
    case = "transformer " + " ".join(options)
    src, lengths = compare(loaded, net, case, 200, 5)
    got = net.greedy(torch.tensor(src).long(), torch.tensor(lengths).long(), 6)
    expected = [loaded.logits(attn.tensor(src[b:b + 1, :n]), attn.tensor(lengths[b:b + 1]),
                              attn.tensor(np.array([[1] + g[:-1]], np.int32))).argmax(-1)[0].tolist()
                for b, (n, g) in enumerate(zip(lengths, got))]
    assert got == expected, case


def test_export_errors(tmp_path):
    path = tmp_path / "m.safetensors"
    attn.save(attn.models.Seq2Seq('{"attention": "luong", "score": "local_p", "hidden": 8, "emb": 4}'), path)
    result = export(path, tmp_path / "x")
    assert result.returncode == 1 and "score 'local_p' has no plain-PyTorch version" in result.stderr
    assert not (tmp_path / "x").exists()
    attn.save(attn.models.Seq2Seq('{"hidden": 8, "emb": 4}'), path)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    result = export(path, tmp_path / "full")
    assert result.returncode == 1 and "exists and is not empty" in result.stderr
    assert os.listdir(tmp_path / "full") == ["keep.txt"]
    attn.safetensors.save({"w": np.ones(2, np.float32)}, tmp_path / "plain.safetensors")
    result = export(tmp_path / "plain.safetensors", tmp_path / "y")
    assert result.returncode == 1 and "not an attn checkpoint" in result.stderr
    result = subprocess.run([ATTN_BIN, "export", "--to", "onnx", "--model", str(path), "--out", str(tmp_path / "z")],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "onnx not in {torch,ctranslate2}" in result.stderr
