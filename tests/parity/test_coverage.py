"""add_outer and coverage_overlap (See et al. 2017's coverage) vs torch, outputs and gradients."""
import numpy as np
import pytest
import torch

import attn
from parity import assert_close, assert_grads, randn, to_attn, to_torch


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 5, 4), (2, 7, 33)])
@pytest.mark.parametrize("magnitude", [1.0, 1e3])
def test_add_outer(shape, magnitude):
    B, S, A = shape
    x, c, w = randn(1, B, S, A, scale=magnitude), randn(2, B, S), randn(3, A)
    xa, ca, wa = to_attn(x, True), to_attn(c, True), to_attn(w, True)
    xt, ct, wt = to_torch(x, True), to_torch(c, True), to_torch(w, True)
    ya = attn.add_outer(xa, ca, wa)
    yt = xt + ct[:, :, None] * wt  # See et al.'s w_c c_{t,i} on the projected keys
    dy = randn(4, B, S, A)
    attn.backward(ya, dy)
    yt.backward(torch.tensor(dy))
    case = f"shape={shape} magnitude={magnitude}"
    assert_close("add_outer", case, "output", ya, yt)
    assert_grads("add_outer", case, [("x", xa, xt), ("c", ca, ct), ("w", wa, wt)])


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (4, 40)])
def test_coverage_overlap(shape):
    rng = np.random.default_rng(5)
    a = rng.dirichlet(np.ones(shape[1]), size=shape[0]).astype(np.float32)  # attention rows
    c = (3 * rng.dirichlet(np.ones(shape[1]), size=shape[0])).astype(np.float32)  # sums of earlier rows
    c[0, 0] = a[0, 0]  # a tie: torch.minimum gives each side half the gradient
    aa, ca = to_attn(a, True), to_attn(c, True)
    at, ct = to_torch(a, True), to_torch(c, True)
    ya = attn.coverage_overlap(aa, ca)
    yt = torch.minimum(at, ct).sum(-1)
    dy = randn(6, shape[0])
    attn.backward(ya, dy)
    yt.backward(torch.tensor(dy))
    case = f"shape={shape}"
    assert_close("coverage_overlap", case, "output", ya, yt)
    assert_grads("coverage_overlap", case, [("a", aa, at), ("c", ca, ct)])


def test_errors():
    with pytest.raises(ValueError, match=r"add_outer: 'c' expected \(B=2, S=3\)"):
        attn.add_outer(attn.zeros([2, 3, 4]), attn.zeros([2, 4]), attn.zeros([4]))
    with pytest.raises(ValueError, match=r"coverage_overlap: 'c' expected \(B=2, S=3\)"):
        attn.coverage_overlap(attn.zeros([2, 3]), attn.zeros([3, 3]))
