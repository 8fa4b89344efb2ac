"""linear / matmul / bmm and attn.nn.Linear vs torch (F.linear, torch.mm, torch.bmm, nn.Linear)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attn
from parity import assert_close, assert_grads, randn, to_attn, to_torch


@pytest.mark.parametrize("lead", [(1,), (4,), (2, 3), (1, 1, 1)])
@pytest.mark.parametrize("inp,out", [(1, 1), (5, 3), (7, 16)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(lead, inp, out, bias):
    x, w, b = randn(1, *lead, inp), randn(2, out, inp), randn(3, out)
    dy = randn(4, *lead, out)
    xa, wa, ba = to_attn(x, True), to_attn(w, True), to_attn(b, True)
    ya = attn.linear(xa, wa, ba if bias else None)
    attn.backward(ya, dy)
    xt, wt, bt = to_torch(x, True), to_torch(w, True), to_torch(b, True)
    yt = F.linear(xt, wt, bt if bias else None)
    yt.backward(torch.tensor(dy))
    case = f"lead={lead} in={inp} out={out} bias={bias}"
    assert_close("linear", case, "output", ya, yt)
    pairs = [("x", xa, xt), ("weight", wa, wt)] + ([("bias", ba, bt)] if bias else [])
    assert_grads("linear", case, pairs)
    if not bias:
        assert ba.grad is None


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 4, 5), (8, 1, 2), (2, 9, 1)])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul(m, k, n, ta, tb):
    a = randn(5, *((k, m) if ta else (m, k)))
    b = randn(6, *((n, k) if tb else (k, n)))
    dy = randn(7, m, n)
    aa, ba = to_attn(a, True), to_attn(b, True)
    ya = attn.matmul(aa, ba, transpose_a=ta, transpose_b=tb)
    attn.backward(ya, dy)
    at, bt = to_torch(a, True), to_torch(b, True)
    yt = (at.t() if ta else at) @ (bt.t() if tb else bt)
    yt.backward(torch.tensor(dy))
    case = f"m={m} k={k} n={n} ta={ta} tb={tb}"
    assert_close("matmul", case, "output", ya, yt)
    assert_grads("matmul", case, [("a", aa, at), ("b", ba, bt)])


@pytest.mark.parametrize("bsz,m,k,n", [(1, 1, 1, 1), (3, 2, 4, 5), (2, 7, 3, 1)])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_bmm(bsz, m, k, n, ta, tb):
    a = randn(8, *((bsz, k, m) if ta else (bsz, m, k)))
    b = randn(9, *((bsz, n, k) if tb else (bsz, k, n)))
    dy = randn(10, bsz, m, n)
    aa, ba = to_attn(a, True), to_attn(b, True)
    ya = attn.bmm(aa, ba, transpose_a=ta, transpose_b=tb)
    attn.backward(ya, dy)
    at, bt = to_torch(a, True), to_torch(b, True)
    yt = torch.bmm(at.transpose(1, 2) if ta else at, bt.transpose(1, 2) if tb else bt)
    yt.backward(torch.tensor(dy))
    case = f"B={bsz} m={m} k={k} n={n} ta={ta} tb={tb}"
    assert_close("bmm", case, "output", ya, yt)
    assert_grads("bmm", case, [("a", aa, at), ("b", ba, bt)])


@pytest.mark.parametrize("bias", [True, False])
def test_nn_linear_module(bias):
    torch.manual_seed(0)
    tl = torch.nn.Linear(6, 4, bias=bias)
    al = attn.nn.Linear(6, 4, bias=bias, seed=3)
    names = [n for n, _ in al.named_parameters()]
    assert names == [n for n, _ in tl.named_parameters()]
    for (_, pa), (_, pt) in zip(al.named_parameters(), tl.named_parameters()):
        pa.numpy()[...] = pt.detach().numpy()  # zero-copy view: writes the parameter
    x, dy = randn(11, 3, 6), randn(12, 3, 4)
    xa, xt = to_attn(x, True), to_torch(x, True)
    ya, yt = al(xa), tl(xt)
    attn.backward(ya, dy)
    yt.backward(torch.tensor(dy))
    case = f"nn.Linear bias={bias}"
    assert_close("linear", case, "output", ya, yt)
    assert_grads("linear", case, [("x", xa, xt)] + [(n, pa, pt) for (n, pa), (_, pt) in
                                                    zip(al.named_parameters(), tl.named_parameters())])


def test_linear_shape_error():
    with pytest.raises(attn.ShapeError, match="linear"):
        attn.linear(attn.zeros([2, 3]), attn.zeros([4, 5]))
