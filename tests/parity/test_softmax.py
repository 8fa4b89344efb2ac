"""softmax / log_softmax with keep-masks vs torch's masked_fill(-inf) reference, fully masked
rows giving zeros (attn) instead of NaN (torch); magnitude 1e3 for stability."""
import numpy as np
import pytest
import torch

import attn
from parity import assert_close, assert_grads, randn, rng, to_attn, to_torch

SHAPES = [(1,), (1, 1), (4, 7), (2, 3, 5), (3, 64)]


def make_mask(kind, shape):
    if kind is None:
        return None
    m = (rng(7).random(shape) > 0.4).astype(np.int32)
    if kind == "dead_row":  # the first row is fully masked, one row keeps a single entry
        m.reshape(-1, shape[-1])[0] = 0
        if m.reshape(-1, shape[-1]).shape[0] > 1:
            m.reshape(-1, shape[-1])[1] = 0
            m.reshape(-1, shape[-1])[1, -1] = 1
    return m


def reference(name, xt, mask):
    if mask is None:
        return torch.softmax(xt, -1) if name == "softmax" else torch.log_softmax(xt, -1)
    keep = torch.tensor(mask != 0)
    dead = ~keep.any(-1, keepdim=True)
    keep2 = keep | dead  # fully masked rows: compute on anything, then zero
    z = xt.masked_fill(~keep2, float("-inf"))
    y = torch.softmax(z, -1) if name == "softmax" else torch.log_softmax(z, -1)
    return torch.where(keep & ~dead, y, torch.zeros(()))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mask_kind", [None, "random", "dead_row"])
@pytest.mark.parametrize("magnitude", [1.0, 1e3])
def test_softmax(name, shape, mask_kind, magnitude):
    x = randn(1, *shape, scale=magnitude)
    dy = randn(2, *shape)
    mask = make_mask(mask_kind, shape)
    xa = to_attn(x, True)
    ya = getattr(attn, name)(xa, None if mask is None else attn.tensor(mask))
    attn.backward(ya, dy)
    xt = to_torch(x, True)
    yt = reference(name, xt, mask)
    yt.backward(torch.tensor(dy))
    case = f"shape={shape} mask={mask_kind} magnitude={magnitude}"
    out = ya.numpy()
    assert not np.isnan(out).any(), f"{name} [{case}]: NaN in output"
    # log_softmax of 1e3-magnitude inputs gives values ~1e3: atol scales with them (see assert_close).
    assert_close(name, case, "output", ya, yt)
    assert_grads(name, case, [("x", xa, xt)])
    if mask is not None:
        assert np.all(out[mask == 0] == 0), f"{name} [{case}]: masked positions must be exactly 0"
        g = xa.grad.numpy()
        assert np.all(g[mask == 0] == 0), f"{name} [{case}]: masked positions must get no gradient"


def test_mask_shape_must_match():
    with pytest.raises(attn.ShapeError, match="softmax"):
        attn.softmax(attn.zeros([2, 3]), attn.tensor(np.ones((2, 1), np.int32)))
