"""dropout: torch's RNG differs, so the check is structural — attn's output is x·mask/(1−p)
for the mask implied by its zeros, the gradient uses that same mask, the mask is exactly
the documented one (element i kept iff uniform_at(seed, i) >= p, re-implemented here from
splitmix64), and the keep fraction is 1 − p."""
import numpy as np
import pytest
import torch

import attn
from parity import assert_close, randn, to_attn, to_torch

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def splitmix64(x):
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def uniform_at(seed, n):
    idx = np.arange(n, dtype=np.uint64)
    bits = splitmix64(np.uint64(seed) ^ splitmix64(idx)) >> np.uint64(40)
    return bits.astype(np.float32) * np.float32(1.0 / 16777216.0)


@pytest.mark.parametrize("shape", [(1,), (7, 13), (2, 3, 50)])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("seed", [0, 12345])
def test_dropout(shape, p, seed):
    x = randn(1, *shape) + 3.0  # no exact zeros in x, so zeros in y mean "dropped"
    dy = randn(2, *shape)
    xa = to_attn(x, True)
    ya = attn.dropout(xa, p, seed)
    attn.backward(ya, dy)
    y = ya.numpy()
    keep = y != 0
    case = f"shape={shape} p={p} seed={seed}"
    expected_keep = (uniform_at(seed, x.size) >= np.float32(p)).reshape(shape)
    assert np.array_equal(keep, expected_keep), f"dropout [{case}]: mask differs from uniform_at(seed, i) >= p"
    # The same expressions in torch: y = x·mask/(1−p), dx = dy·mask/(1−p).
    xt = to_torch(x, True)
    mask_t = torch.tensor(keep.astype(np.float32))
    yt = xt * mask_t / (1 - p)
    yt.backward(torch.tensor(dy))
    assert_close("dropout", case, "output", ya, yt)
    assert_close("dropout", case, "grad x", xa.grad, xt.grad)


def test_keep_fraction_and_determinism():
    p, n = 0.3, 200_000
    x = np.ones(n, np.float32)
    y1 = attn.dropout(attn.tensor(x), p, 7).numpy().copy()
    y2 = attn.dropout(attn.tensor(x), p, 7).numpy()
    assert np.array_equal(y1, y2), "same seed, same mask"
    y3 = attn.dropout(attn.tensor(x), p, 8).numpy()
    assert not np.array_equal(y1, y3), "another seed, another mask"
    frac = (y1 != 0).mean()
    sigma = np.sqrt(p * (1 - p) / n)
    assert abs(frac - (1 - p)) < 5 * sigma, f"keep fraction {frac} vs {1 - p} (5 sigma = {5 * sigma:.4f})"
    assert abs(y1.mean() - 1.0) < 0.01, "inverted dropout keeps the mean"


def test_identity_when_not_training_or_p_zero():
    x = randn(3, 4, 5)
    for kwargs in [dict(p=0.5, seed=1, training=False), dict(p=0.0, seed=1)]:
        xa = to_attn(x, True)
        ya = attn.dropout(xa, **kwargs)
        assert np.array_equal(ya.numpy(), x)
        dy = randn(4, 4, 5)
        attn.backward(ya, dy)
        assert np.array_equal(xa.grad.numpy(), dy)


@pytest.mark.parametrize("p", [-0.1, 1.0, float("nan")])
def test_bad_p(p):
    with pytest.raises(attn.ValueError, match="dropout"):
        attn.dropout(attn.zeros([3]), p, 0)


def test_nn_dropout_module_train_eval():
    d = attn.nn.Dropout(0.5, 3)
    x = attn.tensor(np.ones((100,), np.float32))
    assert (d(x).numpy() == 0).any()
    d.eval()
    assert not d.training
    assert np.array_equal(d(x).numpy(), np.ones(100, np.float32))
