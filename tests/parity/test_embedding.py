"""embedding (padding_idx) and attn.nn.Embedding vs torch.nn.functional.embedding / nn.Embedding."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attn
from parity import assert_close, assert_grads, randn, rng, to_attn, to_torch


@pytest.mark.parametrize("ids_shape", [(1,), (5,), (2, 3), (1, 1), (2, 3, 4)])
@pytest.mark.parametrize("vocab,dim", [(1, 1), (7, 4), (20, 9)])
@pytest.mark.parametrize("padding_idx", [-1, 0, "last"])
def test_embedding(ids_shape, vocab, dim, padding_idx):
    pad = vocab - 1 if padding_idx == "last" else padding_idx
    ids = rng(1).integers(0, vocab, size=ids_shape).astype(np.int32)
    w = randn(2, vocab, dim)
    dy = randn(3, *ids_shape, dim)
    wa = to_attn(w, True)
    ya = attn.embedding(attn.tensor(ids), wa, padding_idx=pad)
    attn.backward(ya, dy)
    wt = to_torch(w, True)
    yt = F.embedding(torch.tensor(ids).long(), wt, padding_idx=None if pad < 0 else pad)
    yt.backward(torch.tensor(dy))
    case = f"ids={ids_shape} V={vocab} D={dim} padding_idx={pad}"
    assert_close("embedding", case, "output", ya, yt)
    assert_grads("embedding", case, [("weight", wa, wt)])


def test_nn_embedding_module():
    torch.manual_seed(0)
    te = torch.nn.Embedding(10, 5, padding_idx=0)
    ae = attn.nn.Embedding(10, 5, padding_idx=0, seed=1)
    assert np.all(ae.weight.numpy()[0] == 0), "padding row initialised to zeros as torch does"
    ae.weight.numpy()[...] = te.weight.detach().numpy()
    ids = np.array([[0, 3, 3, 9], [1, 0, 2, 3]], np.int32)
    dy = randn(4, 2, 4, 5)
    ya = ae(attn.tensor(ids))
    attn.backward(ya, dy)
    yt = te(torch.tensor(ids).long())
    yt.backward(torch.tensor(dy))
    assert_close("embedding", "nn.Embedding", "output", ya, yt)
    assert_grads("embedding", "nn.Embedding", [("weight", ae.weight, te.weight)])


def test_embedding_id_out_of_range():
    with pytest.raises(attn.ValueError, match="embedding"):
        attn.embedding(attn.tensor(np.array([0, 5], np.int32)), attn.zeros([5, 2]))
