"""concat, split, stack_rows, transpose_last2, transpose_01, where_rows, gather_rows vs
torch.cat / split / stack / transpose / where / index_select: outputs and gradients (exact)."""
import numpy as np
import pytest
import torch

import attn
from parity import assert_close, assert_grads, randn, rng, to_attn, to_torch


@pytest.mark.parametrize("lead", [(), (1,), (3,), (2, 4)])
@pytest.mark.parametrize("sizes", [[1], [2, 3], [1, 4, 1], [0, 3]])
def test_concat_split(lead, sizes):
    parts = [randn(10 + i, *lead, n) for i, n in enumerate(sizes)]
    dy = randn(20, *lead, sum(sizes))
    pa = [to_attn(p, True) for p in parts]
    ya = attn.concat(pa)
    attn.backward(ya, dy)
    pt = [to_torch(p, True) for p in parts]
    yt = torch.cat(pt, -1)
    yt.backward(torch.tensor(dy))
    case = f"lead={lead} sizes={sizes}"
    assert_close("shape_ops", case, "concat output", ya, yt)
    assert_grads("shape_ops", case, [(f"part {i}", a, t) for i, (a, t) in enumerate(zip(pa, pt))])

    x = randn(21, *lead, sum(sizes))
    xa, xt = to_attn(x, True), to_torch(x, True)
    outs_a = attn.split(xa, sizes)
    outs_t = torch.split(xt, sizes, -1)
    assert len(outs_a) == len(sizes)
    # Only some outputs receive a gradient: the first and the last.
    used = sorted({0, len(sizes) - 1})
    for i, (oa, ot) in enumerate(zip(outs_a, outs_t)):
        assert_close("shape_ops", case, f"split output {i}", oa, ot)
    # One backward (the tape is cleared after each): loss = Σ_i Σ out_i ⊙ g_i.
    loss_a, loss_t = None, 0
    for i in used:
        g = randn(30 + i, *outs_t[i].shape)
        term = attn.sum(attn.mul(outs_a[i], to_attn(g)))
        loss_a = term if loss_a is None else attn.add(loss_a, term)
        loss_t = loss_t + (outs_t[i] * torch.tensor(g)).sum()
    attn.backward(loss_a)
    loss_t.backward()
    assert_grads("shape_ops", case, [("x (split)", xa, xt)])


@pytest.mark.parametrize("count", [1, 3])
@pytest.mark.parametrize("shape", [(), (1,), (2, 3)])
def test_stack_rows(count, shape):
    parts = [randn(40 + i, *shape) for i in range(count)]
    dy = randn(50, count, *shape)
    pa = [to_attn(p, True) for p in parts]
    pt = [to_torch(p, True) for p in parts]
    ya, yt = attn.stack_rows(pa), torch.stack(pt, 0)
    attn.backward(ya, dy)
    yt.backward(torch.tensor(dy))
    case = f"count={count} shape={shape}"
    assert_close("shape_ops", case, "output", ya, yt)
    assert_grads("shape_ops", case, [(f"part {i}", a, t) for i, (a, t) in enumerate(zip(pa, pt))])


@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (2, 1, 5), (2, 3, 4, 5)])
def test_transposes(shape):
    x = randn(60, *shape)
    xa, xt = to_attn(x, True), to_torch(x, True)
    ya, yt = attn.transpose_last2(xa), xt.transpose(-1, -2)
    dy = randn(61, *yt.shape)
    attn.backward(ya, dy)
    yt.backward(torch.tensor(dy))
    assert_close("shape_ops", f"shape={shape}", "transpose_last2 output", ya, yt)
    assert_grads("shape_ops", f"shape={shape}", [("x", xa, xt)])

    xa, xt = to_attn(x, True), to_torch(x, True)
    ya, yt = attn.transpose_01(xa), xt.transpose(0, 1)
    dy = randn(62, *yt.shape)
    attn.backward(ya, dy)
    yt.backward(torch.tensor(dy))
    assert_close("shape_ops", f"shape={shape}", "transpose_01 output", ya, yt)
    assert_grads("shape_ops", f"shape={shape}", [("x (transpose_01)", xa, xt)])


@pytest.mark.parametrize("keep", [[1], [0], [1, 0, 1], [0, 0, 0], [1, 1]])
@pytest.mark.parametrize("with_b", [True, False])
def test_where_rows(keep, with_b):
    keep = np.array(keep, np.int32)
    B = len(keep)
    a, b, dy = randn(70, B, 3), randn(71, B, 3), randn(72, B, 3)
    aa, ba = to_attn(a, True), to_attn(b, True)
    ya = attn.where_rows(attn.tensor(keep), aa, ba if with_b else None)
    attn.backward(ya, dy)
    at, bt = to_torch(a, True), to_torch(b, True)
    yt = torch.where(torch.tensor(keep != 0)[:, None], at, bt if with_b else torch.zeros(B, 3))
    yt.backward(torch.tensor(dy))
    case = f"keep={keep.tolist()} with_b={with_b}"
    assert_close("shape_ops", case, "output", ya, yt)
    assert_grads("shape_ops", case, [("a", aa, at)] + ([("b", ba, bt)] if with_b else []))


@pytest.mark.parametrize("n,index", [(1, [0]), (4, [3, 0, 3, 1, 1]), (3, [2])])
def test_gather_rows(n, index):
    x = randn(80, n, 2, 3)
    idx = np.array(index, np.int32)
    dy = randn(81, len(index), 2, 3)
    xa, xt = to_attn(x, True), to_torch(x, True)
    ya = attn.gather_rows(xa, attn.tensor(idx))
    attn.backward(ya, dy)
    yt = xt.index_select(0, torch.tensor(idx).long())
    yt.backward(torch.tensor(dy))
    case = f"n={n} index={index}"
    assert_close("shape_ops", case, "output", ya, yt)
    # Repeated indices accumulate: sums of two floats in either order are equal, so exact.
    assert_grads("shape_ops", case, [("x", xa, xt)])


def test_split_sizes_must_sum():
    with pytest.raises(attn.ShapeError, match=r"split: 'x' expected \(2, N=4\)"):
        attn.split(attn.zeros([2, 5]), [2, 2])


@pytest.mark.parametrize("shapes", [((2, 3, 4), (6, 4)), ((1, 5, 2), (5, 2)), ((4,), (2, 1, 2)), ((1, 1), ())])
def test_reshape(shapes):
    before, after = shapes
    x, dy = randn(40, *before), randn(41, *after)
    xa, xt = to_attn(x, True), to_torch(x, True)
    ya, yt = attn.reshape(xa, list(after)), xt.reshape(after)
    attn.backward(ya, dy)
    yt.backward(torch.tensor(dy))
    assert_close("shape_ops", f"{before}->{after}", "reshape output", ya, yt)
    assert_grads("shape_ops", f"{before}->{after}", [("x", xa, xt)])
    with pytest.raises(attn.ShapeError, match=r"reshape: 'shape' \(7\) holds 7 elements"):
        attn.reshape(xa, [7])


@pytest.mark.parametrize("shape", [(1, 1, 3), (4, 2, 3), (5, 3, 2), (7, 1, 4)])
def test_pair_frames(shape):
    """The pyramidal listener's time reduction against torch's pad + reshape (ESPnet's pBLSTM
    joins frame pairs the same way, there dropping an odd last frame instead of padding it)."""
    x = randn(70, *shape)
    xa, xt = to_attn(x, True), to_torch(x, True)
    S, B, E = shape
    ya = attn.pair_frames(xa)
    padded = torch.nn.functional.pad(xt, (0, 0, 0, 0, 0, S % 2))  # (S', B, E), S' even
    yt = padded.transpose(0, 1).reshape(B, -1, 2 * E).transpose(0, 1)  # (S'/2, B, 2E)
    dy = randn(71, *yt.shape)
    attn.backward(ya, dy)
    yt.backward(torch.tensor(dy))
    assert_close("shape_ops", f"shape={shape}", "pair_frames output", ya, yt)
    assert_grads("shape_ops", f"shape={shape}", [("x (pair_frames)", xa, xt)])
