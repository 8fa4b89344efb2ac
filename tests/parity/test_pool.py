"""masked_max_time, masked_mean_time vs torch (outputs and gradients)."""
import numpy as np
import pytest
import torch

import attn
from parity import assert_close, assert_grads, lengths_mask, randn, to_attn, to_torch

CASES = [
    # (B, S, E), lengths
    ((1, 1, 3), [1]),
    ((3, 5, 4), [5, 1, 3]),
    ((4, 6, 33), [6, 6, 6, 6]),
    ((3, 4, 2), [0, 4, 2]),  # a fully masked row
]


def torch_max(x, lengths):
    B, S, E = x.shape
    keep = lengths_mask(lengths, S)[:, :, None].expand(B, S, E)
    dead = ~keep.any(1)  # (B, E)
    y = x.masked_fill(~keep, float("-inf")).max(1).values
    return torch.where(dead, torch.zeros_like(y), y)


def torch_mean(x, lengths):
    B, S, E = x.shape
    keep = lengths_mask(lengths, S)[:, :, None].to(x.dtype)
    n = torch.as_tensor(np.asarray(lengths), dtype=x.dtype).clamp(min=1)[:, None]
    return (x * keep).sum(1) / n


@pytest.mark.parametrize("shape,lengths", CASES)
@pytest.mark.parametrize("magnitude", [1.0, 1e3])
@pytest.mark.parametrize("name", ["masked_max_time", "masked_mean_time"])
def test_pool(shape, lengths, magnitude, name):
    x = randn(3, *shape, scale=magnitude)
    la = attn.tensor(np.array(lengths, np.int32))
    xa, xt = to_attn(x, True), to_torch(x, True)
    ya = getattr(attn, name)(xa, la)
    yt = (torch_max if name == "masked_max_time" else torch_mean)(xt, lengths)
    dy = randn(4, *yt.shape)
    attn.backward(ya, dy)
    yt.backward(torch.tensor(dy))
    case = f"shape={shape} lengths={lengths} magnitude={magnitude}"
    assert_close(name, case, "output", ya, yt)
    assert_grads(name, case, [("x", xa, xt)])


def test_max_indices_match_torch_first_argmax():
    x = np.array([[[1.0, 2.0], [3.0, 2.0], [3.0, 0.0]]], np.float32)  # ties at s = 1, 2 and s = 0, 1
    values, argmax = attn.masked_max_time_with_indices(attn.tensor(x), attn.tensor(np.array([3], np.int32)))
    t = torch.tensor(x).max(1)
    assert np.array_equal(values.numpy(), t.values.numpy())
    assert np.array_equal(argmax.numpy(), t.indices.numpy().astype(np.int32))


def test_errors():
    x = attn.zeros([2, 3, 4])
    with pytest.raises(ValueError, match="out of range"):
        attn.masked_max_time(x, attn.tensor(np.array([1, 4], np.int32)))
    with pytest.raises(Exception, match="expected \\(B=2\\)"):
        attn.masked_mean_time(x, attn.tensor(np.array([1], np.int32)))
