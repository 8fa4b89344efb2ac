"""Fused scaled dot-product attention vs the materialised PyTorch reference
softmax(q kᵀ · scale / temperature + bias + masks) v, with key_lengths, key_padding_mask,
causal (bottom-right aligned), causal="upper_left" / is_causal=True (torch's, top-left),
a learned bias of each shape torch's attn_mask takes ((T, S), (B·H, T, S), (B, H, T, S): its
gradient too), fully masked rows (zeros), need_weights (and gradients through the weights)."""
import numpy as np
import pytest
import torch

import attn
from parity import assert_close, assert_grads, masked_softmax_ref, randn, rng, to_attn, to_torch

# (B, H, T, S, Dh, Dv)
SHAPES = [(1, 1, 1, 1, 4, 4), (2, 3, 5, 7, 8, 6), (2, 2, 6, 6, 16, 16), (1, 2, 9, 4, 8, 8),
          (1, 1, 70, 67, 32, 16)]
OPTIONS = ["plain", "key_lengths", "padding_mask", "causal", "causal+lengths", "causal_upper_left", "is_causal",
           "bias", "bias_bh", "bias_4d", "causal+bias_4d", "scale+temperature"]


def shape_id(s):
    return "x".join(map(str, s))


def build(option, B, H, T, S):
    """attn keyword arguments, the reference keep-mask (B, 1, T, S) and the additive bias as
    numpy: (T, S), (B·H, T, S) or (B, H, T, S), learned (its gradient is compared)."""
    kw, keep, bias = {}, torch.ones(B, 1, T, S, dtype=torch.bool), None
    if "lengths" in option:
        lens = np.array([S, 0, 1, max(S - 2, 0)][:B] + [S] * max(0, B - 4), np.int32)
        kw["key_lengths"] = attn.tensor(lens)
        keep &= (torch.arange(S)[None, :] < torch.tensor(lens).long()[:, None])[:, None, None, :]
    if option == "padding_mask":
        m = (rng(3).random((B, S)) > 0.3).astype(np.int32)
        m[0] = 0  # batch item 0 has no key at all
        kw["key_keep_mask"] = attn.tensor(m)
        keep &= torch.tensor(m != 0)[:, None, None, :]
    t, s = torch.arange(T)[:, None], torch.arange(S)[None, :]
    if option in ("causal", "causal+lengths", "causal+bias_4d"):
        kw["causal"] = True  # attn's: bottom-right aligned
        keep &= (s <= t + (S - T))[None, None]
    if option in ("causal_upper_left", "is_causal"):  # torch's is_causal
        kw["causal" if option == "causal_upper_left" else "is_causal"] = \
            "upper_left" if option == "causal_upper_left" else True
        keep &= (s <= t)[None, None]
    if "bias" in option:
        bias = randn(4, *{"bias": (T, S), "bias_bh": (B * H, T, S)}.get(option, (B, H, T, S)))
    if option == "scale+temperature":
        kw["scale"], kw["temperature"] = 0.3, 2.0
    return kw, keep, bias


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("need_weights", [False, True])
def test_sdpa(shape, option, need_weights):
    B, H, T, S, Dh, Dv = shape
    q, k, v = randn(1, B, H, T, Dh), randn(2, B, H, S, Dh), randn(3, B, H, S, Dv)
    seed_out, seed_w = randn(5, B, H, T, Dv), randn(6, B, H, T, S)
    kw, keep, bias = build(option, B, H, T, S)
    if bias is not None:
        kw["bias"] = ba = to_attn(bias, True)

    qa, ka, va = to_attn(q, True), to_attn(k, True), to_attn(v, True)
    out_a, w_a = attn.sdpa(qa, ka, va, need_weights=need_weights, **kw)
    loss_a = attn.sum(attn.mul(out_a, to_attn(seed_out)))
    if need_weights:
        assert w_a is not None
        loss_a = attn.add(loss_a, attn.sum(attn.mul(w_a, to_attn(seed_w))))
    else:
        assert w_a is None
    attn.backward(loss_a)

    qt, kt, vt = to_torch(q, True), to_torch(k, True), to_torch(v, True)
    scale = kw.get("scale", 1.0 / np.sqrt(Dh))
    scores = (qt @ kt.transpose(-1, -2)) * scale / kw.get("temperature", 1.0)
    if bias is not None:
        bt = to_torch(bias, True)
        scores = scores + (bt.reshape(B, H, T, S) if bias.ndim == 3 else bt)
    w_t = masked_softmax_ref(scores, keep)
    out_t = w_t @ vt
    loss_t = (out_t * torch.tensor(seed_out)).sum()
    if need_weights:
        loss_t = loss_t + (w_t * torch.tensor(seed_w)).sum()
    loss_t.backward()

    case = f"shape={shape_id(shape)} option={option} need_weights={need_weights}"
    assert_close("sdpa", case, "out", out_a, out_t)
    if need_weights:
        assert_close("sdpa", case, "weights", w_a, w_t)
    assert_grads("sdpa", case, [("q", qa, qt), ("k", ka, kt), ("v", va, vt)] +
                 ([("bias", ba, bt)] if bias is not None else []))
    dead = ~keep.expand(B, H, T, S).any(-1)
    if dead.any():
        assert np.all(out_a.numpy()[dead.numpy()] == 0), f"sdpa [{case}]: fully masked rows must output 0"


def test_sdpa_bias_only_gradient():
    """Only the bias learns (q, k, v constant): the gradient still flows into it."""
    B, H, T, S, D = 2, 2, 3, 4, 8
    q, k, v, bias = randn(1, B, H, T, D), randn(2, B, H, S, D), randn(3, B, H, S, D), randn(4, T, S)
    ba = to_attn(bias, True)
    out_a, _ = attn.sdpa(to_attn(q), to_attn(k), to_attn(v), bias=ba, key_lengths=attn.tensor(np.array([4, 2], np.int32)))
    attn.backward(attn.sum(out_a))
    bt = to_torch(bias, True)
    keep = (torch.arange(S)[None, :] < torch.tensor([4, 2])[:, None])[:, None, None, :]
    w = masked_softmax_ref(torch.tensor(q) @ torch.tensor(k).transpose(-1, -2) / np.sqrt(D) + bt, keep)
    (w @ torch.tensor(v)).sum().backward()
    assert_grads("sdpa", "bias only", [("bias", ba, bt)])


def test_sdpa_mask_errors():
    q = attn.zeros([2, 3, 4, 8])
    k = attn.zeros([2, 3, 5, 8])
    with pytest.raises(attn.ShapeError, match=r"sdpa: 'bias' expected float32 \(T=4, S=5\), \(B·H=6, T, S\) or "
                                              r"\(B=2, H=3, T, S\), got \(3, 4, 5\)"):
        attn.sdpa(q, k, k, bias=attn.zeros([3, 4, 5]))
    with pytest.raises(attn.ShapeError, match="'bias' expected float32"):
        attn.sdpa(q, k, k, bias=attn.tensor(np.zeros((4, 5), np.int32)))
    with pytest.raises(ValueError, match="causal .* or is_causal .*, not both"):
        attn.sdpa(q, k, k, causal=True, is_causal=True)
    with pytest.raises(ValueError, match="causal must be False, True, 'lower_right' or 'upper_left', got 'upper'"):
        attn.sdpa(q, k, k, causal="upper")
    with pytest.raises(ValueError, match="causal must be"):
        attn.sdpa(q, k, k, causal=1)


def test_sdpa_errors():
    q = attn.zeros([1, 1, 2, 4])
    with pytest.raises(attn.ValueError, match="sdpa"):
        attn.sdpa(q, q, q, temperature=0.0)
    with pytest.raises(attn.ShapeError, match="sdpa"):
        attn.sdpa(q, attn.zeros([1, 1, 2, 3]), q)
