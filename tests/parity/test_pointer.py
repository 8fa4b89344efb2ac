"""pointer_log_probs vs a PyTorch pointer-generator written from See et al. (2017), eq. 9: the
vocabulary distribution padded with zeros for the batch's OOVs, the attention scatter_add-ed
onto the source ids, then log with the floor (torch.clamp), outputs and every gradient."""
import numpy as np
import pytest
import torch

import attn
from parity import assert_close, assert_grads, randn, rng, to_attn, to_torch


def reference(logits, p_gen, attention, src_ids, extended_vocab):
    vocab_dist = torch.softmax(logits, dim=-1)
    N, V = vocab_dist.shape
    extended = torch.cat([p_gen[:, None] * vocab_dist, torch.zeros(N, extended_vocab - V)], dim=1)
    final = extended.scatter_add(1, src_ids.long(), (1 - p_gen)[:, None] * attention)
    return torch.log(torch.clamp(final, min=attn.POINTER_FLOOR))


@pytest.mark.parametrize("N,V,S,oov", [(1, 1, 1, 0), (1, 5, 1, 1), (4, 9, 6, 3), (7, 40, 13, 5)])
@pytest.mark.parametrize("gen", ["random", "zero", "one"])
def test_pointer_log_probs(N, V, S, oov, gen):
    Vx = V + oov
    logits = randn(1, N, V, scale=2.0)
    p_gen = {"random": rng(2).uniform(0.05, 0.95, N), "zero": np.zeros(N), "one": np.ones(N)}[gen].astype(np.float32)
    scores = randn(3, N, S)
    attention = (np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)).astype(np.float32)
    src_ids = rng(4).integers(0, Vx, size=(N, S)).astype(np.int32)
    la, pa, aa = to_attn(logits, True), to_attn(p_gen, True), to_attn(attention, True)
    lt, pt, at = to_torch(logits, True), to_torch(p_gen, True), to_torch(attention, True)
    ya = attn.pointer_log_probs(la, pa, aa, attn.tensor(src_ids), Vx)
    yt = reference(lt, pt, at, torch.tensor(src_ids), Vx)
    dy = randn(5, N, Vx)
    attn.backward(ya, dy)
    yt.backward(torch.tensor(dy))
    case = f"N={N} V={V} S={S} oov={oov} p_gen={gen}"
    assert_close("pointer", case, "output", ya, yt)
    assert_grads("pointer", case, [("logits", la, lt), ("p_gen", pa, pt), ("attention", aa, at)])
    assert np.all(np.isfinite(ya.numpy())), case


def test_errors():
    with pytest.raises(ValueError, match=r"pointer_log_probs: 'src_ids' value 5 at index 0 is outside"):
        attn.pointer_log_probs(attn.zeros([1, 4]), attn.zeros([1]), attn.zeros([1, 1]),
                               attn.tensor(np.array([[5]], np.int32)), 5)
    with pytest.raises(ValueError, match=r"pointer_log_probs: 'p_gen' value -0.5"):
        attn.pointer_log_probs(attn.zeros([1, 4]), attn.tensor(np.array([-0.5], np.float32)), attn.zeros([1, 1]),
                               attn.tensor(np.array([[1]], np.int32)), 4)
