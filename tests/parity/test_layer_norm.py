"""layer_norm and attn.nn.LayerNorm vs torch.nn.functional.layer_norm / nn.LayerNorm."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attn
from parity import assert_close, assert_grads, randn, to_attn, to_torch


@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (4, 8), (2, 3, 16), (3, 130)])
@pytest.mark.parametrize("affine", ["both", "gamma", "beta", "none"])
@pytest.mark.parametrize("magnitude,offset", [(1.0, 0.0), (1e3, 0.0), (1.0, 100.0)])
@pytest.mark.parametrize("eps", [1e-5, 1e-2])
def test_layer_norm(shape, affine, magnitude, offset, eps):
    D = shape[-1]
    x = randn(1, *shape, scale=magnitude) + np.float32(offset)
    g, b, dy = randn(2, D) + 1.0, randn(3, D), randn(4, *shape)
    use_g, use_b = affine in ("both", "gamma"), affine in ("both", "beta")
    xa, ga, ba = to_attn(x, True), to_attn(g, True), to_attn(b, True)
    ya = attn.layer_norm(xa, ga if use_g else None, ba if use_b else None, eps=eps)
    attn.backward(ya, dy)
    # The reference runs in float64: torch's float32 CPU kernel computes x·rstd − mean·rstd,
    # which cancels badly for D = 1 (exactly 0 in attn and in exact arithmetic) and for rows
    # with a large offset, so float32 torch would be the less accurate side.
    xt, gt, bt = (to_torch(a.astype(np.float64), True) for a in (x, g, b))
    yt = F.layer_norm(xt, (D,), gt if use_g else None, bt if use_b else None, eps=eps)
    yt.backward(torch.tensor(dy).double())
    case = f"shape={shape} affine={affine} magnitude={magnitude} offset={offset} eps={eps}"
    assert_close("layer_norm", case, "output", ya, yt)
    pairs = [("x", xa, xt)] + ([("gamma", ga, gt)] if use_g else []) + ([("beta", ba, bt)] if use_b else [])
    assert_grads("layer_norm", case, pairs)


def test_nn_layer_norm_module():
    tl = torch.nn.LayerNorm(6)
    with torch.no_grad():
        tl.weight.copy_(torch.tensor(randn(5, 6)))
        tl.bias.copy_(torch.tensor(randn(6, 6)))
    al = attn.nn.LayerNorm(6)
    assert [n for n, _ in al.named_parameters()] == ["weight", "bias"]
    al.weight.numpy()[...] = tl.weight.detach().numpy()
    al.bias.numpy()[...] = tl.bias.detach().numpy()
    x, dy = randn(7, 2, 3, 6), randn(8, 2, 3, 6)
    xa, xt = to_attn(x, True), to_torch(x, True)
    ya, yt = al(xa), tl(xt)
    attn.backward(ya, dy)
    yt.backward(torch.tensor(dy))
    assert_close("layer_norm", "nn.LayerNorm", "output", ya, yt)
    assert_grads("layer_norm", "nn.LayerNorm", [("x", xa, xt), ("weight", al.weight, tl.weight),
                                                ("bias", al.bias, tl.bias)])


def test_bad_eps():
    with pytest.raises(attn.ValueError, match="layer_norm"):
        attn.layer_norm(attn.zeros([2, 3]), eps=-1.0)
