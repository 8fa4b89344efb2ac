"""Bahdanau (additive, incl. normalize), Luong dot / general / concat (+ learned scale) and
Luong location attention vs straightforward PyTorch re-implementations: materialised scores,
masked softmax over the real source positions (fully masked rows give zeros), context = a·V.
Outputs (context and weights) and the gradients of every input and parameter are compared,
with the loss using both the context and the weights."""
import numpy as np
import pytest
import torch

import attn
from parity import assert_close, assert_grads, lengths_mask, masked_softmax_ref, randn, to_attn, to_torch

# (B, T or None for a single decoder step, S, D, E, A, lengths)
CASES = [
    (1, None, 1, 3, 3, 2, [1]),               # batch 1, S = 1
    (2, None, 5, 4, 4, 3, [5, 2]),             # ragged
    (3, 4, 6, 4, 4, 5, [6, 0, 1]),             # a fully masked row, a length-1 row
    (2, 1, 7, 8, 8, 6, [3, 7]),                # T = 1 block
    (4, 3, 9, 16, 16, 8, [9, 9, 9, 9]),        # no padding
]


def case_id(c):
    return f"B{c[0]}-T{c[1]}-S{c[2]}-len{'_'.join(map(str, c[6]))}"


def finish(ctx_t, w_t, ctx_a, w_a, seed_ctx, seed_w):
    """One backward through both outputs on each side."""
    loss_t = (ctx_t * torch.tensor(seed_ctx)).sum() + (w_t * torch.tensor(seed_w)).sum()
    loss_t.backward()
    attn.backward(attn.add(attn.sum(attn.mul(ctx_a, to_attn(seed_ctx))), attn.sum(attn.mul(w_a, to_attn(seed_w)))))


def squeeze(x, T):
    return x[:, 0] if T is None else x


@pytest.mark.parametrize("c", CASES, ids=case_id)
@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_additive(c, normalize, temperature):
    B, T, S, D, E, A, lengths = c
    qshape = (B, D) if T is None else (B, T, D)
    q, keys, values = randn(1, *qshape), randn(2, B, S, E), randn(3, B, S, E)
    w_q, w_k, bias, v, g = randn(4, A, D), randn(5, A, E), randn(6, A), randn(7, A), randn(8)
    seed_ctx, seed_w = randn(9, *qshape[:-1], E), randn(10, *qshape[:-1], S)
    lens = np.array(lengths, np.int32)

    names = ["query", "keys", "values", "w_q", "w_k", "bias", "v"] + (["g"] if normalize else [])
    arrays = dict(query=q, keys=keys, values=values, w_q=w_q, w_k=w_k, bias=bias, v=v, g=g)
    Aa = {n: to_attn(arrays[n], True) for n in names}
    pk = attn.additive_project_keys(Aa["keys"], Aa["w_k"])
    ra = attn.additive_attention(Aa["query"], pk, Aa["values"], Aa["w_q"], Aa["bias"], Aa["v"], attn.tensor(lens),
                                 normalize=normalize, g=Aa["g"] if normalize else None, temperature=temperature)
    ctx_a, w_a = ra

    Tt = {n: to_torch(arrays[n], True) for n in names}
    q3 = Tt["query"] if T is not None else Tt["query"][:, None]
    pk_t = Tt["keys"] @ Tt["w_k"].t()                                    # (B, S, A)
    h = torch.tanh((q3 @ Tt["w_q"].t())[:, :, None, :] + pk_t[:, None] + Tt["bias"])  # (B, T, S, A)
    v_eff = Tt["g"] * Tt["v"] / Tt["v"].norm() if normalize else Tt["v"]
    e = (h @ v_eff) / temperature                                        # (B, T, S)
    w_t = masked_softmax_ref(e, lengths_mask(lens, S)[:, None, :])
    ctx_t = w_t @ Tt["values"]
    ctx_t, w_t = squeeze(ctx_t, T), squeeze(w_t, T)
    finish(ctx_t, w_t, ctx_a, w_a, seed_ctx, seed_w)

    case = f"{case_id(c)} normalize={normalize} temperature={temperature}"
    assert_close("attention", case, "context", ctx_a, ctx_t)
    assert_close("attention", case, "weights", w_a, w_t)
    assert_grads("attention", case, [(n, Aa[n], Tt[n]) for n in names])


@pytest.mark.parametrize("c", CASES, ids=case_id)
@pytest.mark.parametrize("score", ["dot", "general", "concat"])
@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize("magnitude", [1.0, 30.0])
def test_luong(c, score, scaled, magnitude):
    B, T, S, D, E, A, lengths = c
    qshape = (B, D) if T is None else (B, T, D)
    arrays = dict(query=randn(1, *qshape, scale=magnitude), keys=randn(2, B, S, E), values=randn(3, B, S, E),
                  w=randn(4, *((D, E) if score == "general" else (A, D + E))), v=randn(5, A),
                  scale=np.asarray(randn(6) + 1.5, np.float32).reshape(()))
    seed_ctx, seed_w = randn(9, *qshape[:-1], E), randn(10, *qshape[:-1], S)
    lens = np.array(lengths, np.int32)
    names = ["query", "keys", "values"] + {"dot": [], "general": ["w"], "concat": ["w", "v"]}[score]
    names += ["scale"] if scaled else []
    Aa = {n: to_attn(arrays[n], True) for n in names}
    ctx_a, w_a = attn.luong_attention(Aa["query"], Aa["keys"], Aa["values"], attn.tensor(lens), score=score,
                                      w=Aa.get("w"), v=Aa.get("v"), scale=Aa.get("scale"), temperature=0.7)

    Tt = {n: to_torch(arrays[n], True) for n in names}
    q3 = Tt["query"] if T is not None else Tt["query"][:, None]
    K = Tt["keys"]
    if score == "dot":
        e = q3 @ K.transpose(1, 2)
    elif score == "general":
        e = (q3 @ Tt["w"]) @ K.transpose(1, 2)
    else:
        W = Tt["w"]
        h = torch.tanh((q3 @ W[:, :D].t())[:, :, None, :] + (K @ W[:, D:].t())[:, None])
        e = h @ Tt["v"]
    if scaled:
        e = e * Tt["scale"]
    e = e / 0.7
    w_t = masked_softmax_ref(e, lengths_mask(lens, S)[:, None, :])
    ctx_t = w_t @ Tt["values"]
    ctx_t, w_t = squeeze(ctx_t, T), squeeze(w_t, T)
    finish(ctx_t, w_t, ctx_a, w_a, seed_ctx, seed_w)

    case = f"{case_id(c)} score={score} scaled={scaled} magnitude={magnitude}"
    assert_close("attention", case, "context", ctx_a, ctx_t)
    assert_close("attention", case, "weights", w_a, w_t)
    # Saturated tanh for concat at magnitude 30: see TOLERANCES["attention_sharp"].
    assert_grads("attention_sharp" if (score == "concat" and magnitude > 1) else "attention", case, [(n, Aa[n], Tt[n]) for n in names])


@pytest.mark.parametrize("c", CASES, ids=case_id)
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("extra_rows", [0, 3])
def test_location(c, with_bias, extra_rows):
    B, T, S, D, E, A, lengths = c
    S_max = S + extra_rows
    qshape = (B, D) if T is None else (B, T, D)
    arrays = dict(query=randn(1, *qshape), values=randn(3, B, S, E), w_a=randn(4, S_max, D), b_a=randn(5, S_max))
    seed_ctx, seed_w = randn(9, *qshape[:-1], E), randn(10, *qshape[:-1], S)
    lens = np.array(lengths, np.int32)
    names = ["query", "values", "w_a"] + (["b_a"] if with_bias else [])
    Aa = {n: to_attn(arrays[n], True) for n in names}
    ctx_a, w_a = attn.location_attention(Aa["query"], Aa["values"], Aa["w_a"], Aa.get("b_a"), attn.tensor(lens),
                                         temperature=1.3)
    Tt = {n: to_torch(arrays[n], True) for n in names}
    q3 = Tt["query"] if T is not None else Tt["query"][:, None]
    e = q3 @ Tt["w_a"][:S].t() + (Tt["b_a"][:S] if with_bias else 0)
    w_t = masked_softmax_ref(e / 1.3, lengths_mask(lens, S)[:, None, :])
    ctx_t = w_t @ Tt["values"]
    ctx_t, w_t = squeeze(ctx_t, T), squeeze(w_t, T)
    finish(ctx_t, w_t, ctx_a, w_a, seed_ctx, seed_w)
    case = f"{case_id(c)} bias={with_bias} S_max={S_max}"
    assert_close("attention", case, "context", ctx_a, ctx_t)
    assert_close("attention", case, "weights", w_a, w_t)
    assert_grads("attention", case, [(n, Aa[n], Tt[n]) for n in names])


def test_need_weights_false_gives_none_and_same_context():
    q, k = to_attn(randn(1, 2, 4)), to_attn(randn(2, 2, 3, 4))
    lens = attn.tensor(np.array([3, 1], np.int32))
    r1 = attn.luong_attention(q, k, k, lens, need_weights=False)
    r2 = attn.luong_attention(q, k, k, lens)
    assert r1.weights is None and r2.weights is not None
    assert np.array_equal(r1.context.numpy(), r2.context.numpy())


def test_errors():
    with pytest.raises(attn.ValueError, match="luong_attention"):
        attn.luong_attention(attn.zeros([2, 4]), attn.zeros([2, 3, 4]), attn.zeros([2, 3, 4]),
                             attn.tensor(np.array([4, 1], np.int32)))
    with pytest.raises(attn.ShapeError, match="additive_attention"):
        attn.additive_attention(attn.zeros([2, 4]), attn.zeros([2, 3, 5]), attn.zeros([2, 3, 4]), attn.zeros([5, 3]),
                                attn.zeros([5]), attn.zeros([5]), attn.tensor(np.array([3, 1], np.int32)))
