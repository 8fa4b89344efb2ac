"""attn explain on a seq2seq checkpoint against PyTorch: gradient x input and leave-one-out
over the source tokens, per target token of the hypothesis, recomputed with the GRU +
Bahdanau re-implementation of seq2seq_reference.py (the checkpoint's weights copied in).

Reference: g[t, s] = sum_d d log p(y_t | y_<t, x) / d e[s, d] * e[s, d], e the encoder
embedding's output (torch autograd, the full gradient); loo[t, s] = |log p(y_t) - log p(y_t |
x without x_s)|, teacher-forced on attn's hypothesis."""
import json
import os
import subprocess

import numpy as np
import torch

import attn
from parity import assert_close
from seq2seq_reference import BOS, Seq2SeqRef
from test_checkpoint import read_safetensors

ATTN_BIN = os.environ.get("ATTN_BIN", os.path.join(os.path.dirname(attn.__file__), "..", "..", "attn"))
SOURCE = [5, 9, 3, 17, 8]


def teacher_forced_log_probs(ref, source, hypothesis, keep_embeddings=None):
    """log p(y_t) for every t (T,), and with keep_embeddings (a list) the encoder embedding's
    output (S, 1, E), kept for its gradient."""
    def hook(_module, _inputs, output):
        output.retain_grad()
        keep_embeddings.append(output)
    handle = ref.encoder.embedding.register_forward_hook(hook) if keep_embeddings is not None else None
    tgt_in = [[BOS] + hypothesis[:-1]]
    logits = ref.logits([source], [len(source)], tgt_in)  # (T, 1, V)
    if handle is not None:
        handle.remove()
    lp = torch.log_softmax(logits, dim=-1)[:, 0, :]
    return lp[torch.arange(len(hypothesis)), torch.as_tensor(hypothesis)]


def test_gradient_times_input_and_loo(tmp_path):
    assert os.path.exists(ATTN_BIN), f"the attn binary is not at {ATTN_BIN} (set ATTN_BIN)"
    run = tmp_path / "copy"
    subprocess.run([ATTN_BIN, "train", "--task", "copy", "--min-len", "3", "--max-len", "7", "--emb", "16", "--hidden",
                    "24", "--batch", "16", "--steps", "40", "--eval-every", "40", "--threads", "1", "--out", str(run)],
                   check=True, capture_output=True)
    model = run / "model.safetensors"
    out = subprocess.run([ATTN_BIN, "explain", "--model", str(model), "--input", " ".join(map(str, SOURCE)), "--json",
                          "--threads", "1"], check=True, capture_output=True, text=True).stdout
    pair = json.loads(out)
    hypothesis = [t["id"] for t in pair["targets"]]
    tensors, metadata, _, _ = read_safetensors(str(model))
    ref = Seq2SeqRef(json.loads(metadata["attn"])["config"])
    ref.load_named(tensors)
    ref.eval()

    full = teacher_forced_log_probs(ref, SOURCE, hypothesis).detach()
    assert_close("seq2seq", "explain", "log p", np.array([t["log_prob"] for t in pair["targets"]]), full)
    gradient = []
    for t in range(len(hypothesis)):
        kept = []
        teacher_forced_log_probs(ref, SOURCE, hypothesis, kept)[t].backward()
        e = kept[0]  # (S, 1, E)
        gradient.append((e.grad * e).sum(-1)[:, 0].detach())
    assert_close("seq2seq", "explain", "gradient x input", np.array([t["gradient"] for t in pair["targets"]]),
                 torch.stack(gradient))
    with torch.no_grad():
        loo = torch.stack([(full - teacher_forced_log_probs(ref, SOURCE[:s] + SOURCE[s + 1:], hypothesis)).abs()
                           for s in range(len(SOURCE))], dim=1)  # (T, S)
    assert_close("seq2seq", "explain", "leave-one-out", np.array([t["loo"] for t in pair["targets"]]), loo)
