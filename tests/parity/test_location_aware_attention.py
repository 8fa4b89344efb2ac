"""Location-aware attention (Chorowski et al. 2015, "Attention-Based Models for Speech
Recognition", eq. 5-9) against a PyTorch version written from the paper:

    f_t = F * a_{t-1}                                  (conv1d, K channels, odd width r, zero padding r // 2)
    e_{t,s} = w^T tanh(W s_{t-1} + V h_s + U f_{t,s} + b)
    a_t = softmax(beta e_t)             (sharpening, eq. 11; beta = 1: plain softmax)
        | sigma(beta e_t) / sum sigma   (smoothing, section 2.3)
    c_t = sum_s a_{t,s} h_s

over the real source positions (a fully masked row gives zeros). Three decoder steps are
chained, each fed the weights of the one before (a_0 uniform over the real positions, as
ESPnet's AttLoc), so the gradients also flow back through the alignments: outputs and the
gradients of every input and parameter are compared."""
import numpy as np
import pytest
import torch

import attn
from parity import assert_close, assert_grads, lengths_mask, masked_softmax_ref, randn, to_attn, to_torch

# (B, S, D, E, A, K, r, lengths)
CASES = [
    (1, 1, 3, 3, 2, 1, 1, [1]),                  # S = 1, width 1
    (2, 5, 4, 6, 3, 2, 3, [5, 2]),               # ragged
    (3, 7, 4, 4, 5, 3, 5, [7, 0, 1]),            # a fully masked row, a length-1 row
    (2, 6, 8, 8, 6, 10, 15, [6, 4]),             # width > 2 S: every window reaches past both ends
]
STEPS = 3


def case_id(c):
    return f"B{c[0]}-S{c[1]}-K{c[5]}-r{c[6]}-len{'_'.join(map(str, c[7]))}"


def uniform_start(lens, S):
    a0 = np.zeros((len(lens), S), np.float32)
    for b, L in enumerate(lens):
        a0[b, :L] = 1.0 / L if L else 0.0
    return a0


def reference_step(T, prev, q, keep, sharpening, smoothing):
    r = T["filters"].shape[1]
    f = torch.nn.functional.conv1d(prev[:, None, :], T["filters"][:, None, :], padding=r // 2)  # (B, K, S)
    f = f.transpose(1, 2)                                                                        # (B, S, K)
    h = torch.tanh((q @ T["w_q"].t())[:, None, :] + T["keys"] @ T["w_k"].t() + f @ T["w_loc"].t() + T["bias"])
    e = sharpening * (h @ T["v"])                                                                # (B, S)
    if smoothing:
        s = torch.sigmoid(e) * keep
        total = s.sum(-1, keepdim=True)
        a = s / torch.where(total > 0, total, torch.ones_like(total))
    else:
        a = masked_softmax_ref(e, keep)
    return torch.einsum("bs,bse->be", a, T["values"]), a


@pytest.mark.parametrize("c", CASES, ids=case_id)
@pytest.mark.parametrize("sharpening,smoothing", [(1.0, False), (2.0, False), (1.0, True), (0.5, True)])
def test_location_aware_steps(c, sharpening, smoothing):
    B, S, D, E, A, K, r, lengths = c
    lens = np.array(lengths, np.int32)
    arrays = dict(keys=randn(2, B, S, E), values=randn(3, B, S, E), w_q=randn(4, A, D), w_k=randn(5, A, E),
                  bias=randn(6, A), v=randn(7, A), filters=randn(8, K, r), w_loc=randn(9, A, K))
    for t in range(STEPS):
        arrays[f"q{t}"] = randn(10 + t, B, D)
    seeds = [(randn(20 + t, B, E), randn(30 + t, B, S)) for t in range(STEPS)]
    names = list(arrays)
    a0 = uniform_start(lengths, S)

    Aa = {n: to_attn(arrays[n], True) for n in names}
    pk = attn.additive_project_keys(Aa["keys"], Aa["w_k"])
    prev, outs_a = to_attn(a0), []
    for t in range(STEPS):
        ctx, w = attn.location_aware_attention(Aa[f"q{t}"], pk, Aa["values"], prev, Aa["w_q"], Aa["bias"], Aa["v"],
                                               Aa["filters"], Aa["w_loc"], attn.tensor(lens), sharpening=sharpening,
                                               smoothing=smoothing)
        outs_a.append((ctx, w))
        prev = w
    loss_a = None
    for (ctx, w), (sc, sw) in zip(outs_a, seeds):
        term = attn.add(attn.sum(attn.mul(ctx, to_attn(sc))), attn.sum(attn.mul(w, to_attn(sw))))
        loss_a = term if loss_a is None else attn.add(loss_a, term)
    attn.backward(loss_a)

    Tt = {n: to_torch(arrays[n], True) for n in names}
    keep = lengths_mask(lens, S)
    prev_t, loss_t, outs_t = torch.tensor(a0), 0, []
    for t in range(STEPS):
        ctx, w = reference_step(Tt, prev_t, Tt[f"q{t}"], keep, sharpening, smoothing)
        outs_t.append((ctx, w))
        loss_t = loss_t + (ctx * torch.tensor(seeds[t][0])).sum() + (w * torch.tensor(seeds[t][1])).sum()
        prev_t = w
    loss_t.backward()

    case = f"{case_id(c)} sharpening={sharpening} smoothing={smoothing}"
    for t in range(STEPS):
        assert_close("attention", case, f"context step {t}", outs_a[t][0], outs_t[t][0])
        assert_close("attention", case, f"weights step {t}", outs_a[t][1], outs_t[t][1])
    assert_grads("attention", case, [(n, Aa[n], Tt[n]) for n in names])


def test_features_are_torch_conv1d():
    prev, filters = randn(1, 3, 9), randn(2, 4, 7)
    f_a = attn.location_aware_features(to_attn(prev), to_attn(filters))
    f_t = torch.nn.functional.conv1d(to_torch(prev)[:, None], to_torch(filters)[:, None], padding=3).transpose(1, 2)
    assert_close("attention", "B3-S9-K4-r7", "features", f_a, f_t)
    with pytest.raises(ValueError, match="the filter width r=4 must be odd"):
        attn.location_aware_features(to_attn(prev), to_attn(randn(3, 4, 4)))
