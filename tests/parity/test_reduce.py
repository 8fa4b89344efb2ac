"""sum, mean, sum_last, mean_last vs torch (outputs and gradients)."""
import pytest
import torch

import attn
from parity import assert_close, assert_grads, randn, to_attn, to_torch

SHAPES = [(1,), (7,), (3, 5), (2, 1, 4), (2, 3, 33)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("magnitude", [1.0, 1e3])
@pytest.mark.parametrize("name", ["sum", "mean", "sum_last", "mean_last"])
def test_reduce(shape, magnitude, name):
    x = randn(1, *shape, scale=magnitude)
    # attn accumulates in double: the reference is torch in float64 (torch's float32 sums
    # of 1e3-magnitude values are the less accurate side).
    xa, xt = to_attn(x, True), to_torch(x.astype("float64"), True)
    ya = getattr(attn, name)(xa)
    yt = {"sum": lambda t: t.sum(), "mean": lambda t: t.mean(),
          "sum_last": lambda t: t.sum(-1), "mean_last": lambda t: t.mean(-1)}[name](xt)
    dy = randn(2, *yt.shape)
    attn.backward(ya, dy)
    yt.backward(torch.tensor(dy).double())
    case = f"shape={shape} magnitude={magnitude}"
    assert_close(name, case, "output", ya, yt)
    assert_grads(name, case, [("x", xa, xt)])


def test_sum_of_empty_is_zero_and_mean_of_empty_raises():
    import numpy as np
    assert attn.sum(attn.tensor(np.zeros((0, 3), np.float32))).item() == 0.0
    with pytest.raises(ValueError):
        attn.mean(attn.tensor(np.zeros((0,), np.float32)))
