"""cross_entropy / cross_entropy_sum vs torch.nn.functional.cross_entropy (ignore_index,
label_smoothing); attn returns 0 with zero gradient when every target is ignored."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attn
from parity import assert_close, assert_grads, randn, rng, to_attn, to_torch


def make_targets(shape, V, ignore_index, ignored_fraction, seed=3):
    t = rng(seed).integers(0, V, size=shape).astype(np.int32)
    drop = rng(seed + 1).random(shape) < ignored_fraction
    t[drop] = ignore_index
    return t


@pytest.mark.parametrize("shape,V", [((1,), 1), ((1,), 5), ((6,), 4), ((2, 3), 7), ((3, 5), 33)])
@pytest.mark.parametrize("ignore_index", [-100, 0])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1, 1.0])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("magnitude", [1.0, 1e3])
def test_cross_entropy(shape, V, ignore_index, label_smoothing, reduction, magnitude):
    logits = randn(1, *shape, V, scale=magnitude)
    targets = make_targets(shape, V, ignore_index, 0.3)
    if (targets == ignore_index).all():
        targets.flat[0] = 0 if ignore_index != 0 else V - 1
        if (targets == ignore_index).all():
            pytest.skip("V=1 with ignore_index 0 cannot have a real target")
    la = to_attn(logits, True)
    fn = attn.cross_entropy if reduction == "mean" else attn.cross_entropy_sum
    ya = fn(la, attn.tensor(targets), ignore_index=ignore_index, label_smoothing=label_smoothing)
    attn.backward(ya)
    lt = to_torch(logits, True)
    yt = F.cross_entropy(lt.reshape(-1, V), torch.tensor(targets).long().reshape(-1), ignore_index=ignore_index,
                         label_smoothing=label_smoothing, reduction=reduction)
    yt.backward()
    case = f"shape={shape} V={V} ignore_index={ignore_index} eps={label_smoothing} {reduction} magnitude={magnitude}"
    # Losses of 1e3-magnitude logits are ~1e3: atol scales with them (see assert_close).
    assert_close("cross_entropy", case, "loss", ya, yt)
    assert_grads("cross_entropy", case, [("logits", la, lt)])
    assert attn.cross_entropy_count(attn.tensor(targets), ignore_index) == int((targets != ignore_index).sum())


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_all_targets_ignored_gives_zero(reduction):
    logits = randn(5, 4, 6)
    la = to_attn(logits, True)
    fn = attn.cross_entropy if reduction == "mean" else attn.cross_entropy_sum
    ya = fn(la, attn.tensor(np.full((4,), -100, np.int32)))
    attn.backward(ya)
    assert ya.item() == 0.0
    g = la.grad.numpy() if la.grad is not None else np.zeros((4, 6))
    assert np.all(g == 0)
    # torch: NaN for "mean", 0 for "sum" — the documented difference.
    yt = F.cross_entropy(torch.tensor(logits), torch.full((4,), -100).long(), reduction=reduction)
    assert (torch.isnan(yt) if reduction == "mean" else yt == 0)


def test_target_out_of_range():
    with pytest.raises(attn.ValueError, match="cross_entropy"):
        attn.cross_entropy(attn.zeros([2, 3]), attn.tensor(np.array([0, 3], np.int32)))
