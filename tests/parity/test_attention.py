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
    (2, 9, 5, 8, 8, 6, [5, 3]),                # T > 8: the BLAS path of the context/score kernels
    (2, 11, 6, 8, 8, 6, [6, 4]),               # T > 8 again: a near-one-hot scaled dot whose scale gradient cancels in float32
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

    def reference(dtype):
        Tt = {n: to_torch(arrays[n], True, dtype) for n in names}
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
        loss = (squeeze(ctx_t, T) * torch.tensor(seed_ctx, dtype=dtype)).sum() + \
            (squeeze(w_t, T) * torch.tensor(seed_w, dtype=dtype)).sum()
        loss.backward()
        return Tt, squeeze(ctx_t, T), squeeze(w_t, T)

    Tt, ctx_t, w_t = reference(torch.float32)
    attn.backward(attn.add(attn.sum(attn.mul(ctx_a, to_attn(seed_ctx))), attn.sum(attn.mul(w_a, to_attn(seed_w)))))

    case = f"{case_id(c)} score={score} scaled={scaled} magnitude={magnitude}"
    assert_close("attention", case, "context", ctx_a, ctx_t)
    assert_close("attention", case, "weights", w_a, w_t)
    assert_grads("attention", case, [(n, Aa[n], Tt[n]) for n in names if n != "scale"])
    if scaled:
        # dscale = Σ dz·e / τ over every weight. In float32 the softmax backward dz of a
        # near-one-hot row is the small difference of large terms, and PyTorch's float32
        # scale gradient is off by up to 2.6e-5 here (against 1e-5 allowed). attn sums it
        # centred, in double, so it is held to the float64 reference instead.
        T64, _, _ = reference(torch.float64)
        assert_close("attention", case, "grad scale (float64 reference)", Aa["scale"].grad, T64["scale"].grad)


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


# ---- key padding mask, dropout on the weights, Xavier init (the ops' common options) ----------------

# A non-suffix keep-mask (nonzero = keep, as attn.sdpa): holes, a row with one kept position
# that is not the last, a fully masked row.
HOLEY = np.array([[1, 0, 1, 1, 0, 1, 1],
                  [0, 0, 0, 1, 0, 0, 0],
                  [0, 0, 0, 0, 0, 0, 0]], np.int32)
KINDS = ["additive", "additive_normalized", "dot", "general", "concat", "scaled_general", "location"]


def run_kind(kind, arrays, names, lengths=None, mask=None, **opts):
    """The attn call of one kind with `arrays` (attn tensors) and the common options."""
    A_ = arrays
    common = dict(key_keep_mask=None if mask is None else to_attn(mask), **opts)
    lens = None if lengths is None else attn.tensor(np.array(lengths, np.int32))
    if kind.startswith("additive"):
        pk = attn.additive_project_keys(A_["keys"], A_["w_k"])
        return attn.additive_attention(A_["query"], pk, A_["values"], A_["w_q"], A_["bias"], A_["v"], lens,
                                       normalize=kind == "additive_normalized", g=A_.get("g"), **common)
    if kind == "location":
        return attn.location_attention(A_["query"], A_["values"], A_["w_a"], A_["b_a"], lens, **common)
    score = {"dot": "dot", "general": "general", "concat": "concat", "scaled_general": "general"}[kind]
    return attn.luong_attention(A_["query"], A_["keys"], A_["values"], lens, score=score, w=A_.get("w"),
                                v=A_.get("v"), scale=A_.get("scale"), **common)


def torch_kind(kind, T_, D, S):
    """Raw scores (B, T, S) of one kind, PyTorch."""
    q3 = T_["query"] if T_["query"].dim() == 3 else T_["query"][:, None]
    if kind.startswith("additive"):
        h = torch.tanh((q3 @ T_["w_q"].t())[:, :, None, :] + (T_["keys"] @ T_["w_k"].t())[:, None] + T_["bias"])
        v_eff = T_["g"] * T_["v"] / T_["v"].norm() if kind == "additive_normalized" else T_["v"]
        return h @ v_eff
    if kind == "location":
        return q3 @ T_["w_a"][:S].t() + T_["b_a"][:S]
    K = T_["keys"]
    if kind == "dot":
        return q3 @ K.transpose(1, 2)
    if kind in ("general", "scaled_general"):
        e = (q3 @ T_["w"]) @ K.transpose(1, 2)
        return e * T_["scale"] if kind == "scaled_general" else e
    W = T_["w"]
    h = torch.tanh((q3 @ W[:, :D].t())[:, :, None, :] + (K @ W[:, D:].t())[:, None])
    return h @ T_["v"]


def kind_arrays(kind, B, T, S, D, E, A):
    qshape = (B, D) if T is None else (B, T, D)
    arrays = dict(query=randn(71, *qshape), keys=randn(72, B, S, E), values=randn(73, B, S, E))
    extra = {
        "additive": dict(w_q=randn(74, A, D), w_k=randn(75, A, E), bias=randn(76, A), v=randn(77, A)),
        "dot": {},
        "general": dict(w=randn(78, D, E, scale=0.5)),
        "concat": dict(w=randn(79, A, D + E), v=randn(80, A)),
        "location": dict(w_a=randn(81, S + 2, D), b_a=randn(82, S + 2)),
    }
    base = {"additive_normalized": "additive", "scaled_general": "general"}.get(kind, kind)
    arrays.update(extra[base])
    if kind == "additive_normalized":
        arrays["g"] = np.asarray(0.7, np.float32).reshape(())
    if kind == "scaled_general":
        arrays["scale"] = np.asarray(1.4, np.float32).reshape(())
    if kind == "location":
        del arrays["keys"]
    return arrays, qshape


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("T", [None, 3])
@pytest.mark.parametrize("dropout", [0.0, 0.35])
def test_mask_and_dropout_match_torch(kind, T, dropout):
    B, S, D, E, A = 3, 7, 4, 4, 5
    arrays, qshape = kind_arrays(kind, B, T, S, D, E, A)
    names = list(arrays)
    Aa = {n: to_attn(arrays[n], True) for n in names}
    ctx_a, w_a = run_kind(kind, Aa, names, mask=HOLEY, temperature=0.8, dropout=dropout, dropout_seed=21)
    seed_ctx, seed_w = randn(90, *qshape[:-1], E), randn(91, *qshape[:-1], S)

    Tt = {n: to_torch(arrays[n], True) for n in names}
    keep = torch.tensor(HOLEY != 0)
    w_t = masked_softmax_ref(torch_kind(kind, Tt, D, S) / 0.8, keep[:, None, :])
    w_t = squeeze(w_t, T)
    if dropout > 0:
        # attn's dropout mask, read off its returned (post-dropout) weights.
        w_np = w_a.numpy()
        assert (w_np == 0).sum() > (np.broadcast_to(HOLEY[:, None] if T else HOLEY, w_np.shape) == 0).sum()
        w_t = w_t * torch.tensor((w_np != 0).astype(np.float32) / (1 - dropout))
    ctx_t = (w_t if T else w_t[:, None]) @ Tt["values"]
    ctx_t = squeeze(ctx_t, T)
    finish(ctx_t, w_t, ctx_a, w_a, seed_ctx, seed_w)
    case = f"{kind} T={T} dropout={dropout}"
    assert_close("attention", case, "context", ctx_a, ctx_t)
    assert_close("attention", case, "weights", w_a, w_t)
    assert_grads("attention", case, [(n, Aa[n], Tt[n]) for n in names])
    w_np = w_a.numpy() if T else w_a.numpy()[:, None]
    assert (w_np[np.broadcast_to(HOLEY[:, None, :] == 0, w_np.shape)] == 0).all()


@pytest.mark.parametrize("kind", KINDS)
def test_mask_equal_to_lengths_is_identical(kind):
    B, S = 3, 7
    arrays, _ = kind_arrays(kind, B, 2, S, 4, 4, 5)
    Aa = {n: to_attn(arrays[n]) for n in arrays}
    lengths = np.array([7, 3, 0], np.int32)
    mask = (np.arange(S)[None, :] < lengths[:, None]).astype(np.int32)
    a = run_kind(kind, Aa, list(arrays), lengths=lengths)
    b = run_kind(kind, Aa, list(arrays), mask=mask)
    assert np.array_equal(a.context.numpy(), b.context.numpy())
    assert np.array_equal(a.weights.numpy(), b.weights.numpy())


def test_dropout_in_eval_and_p0_is_identity():
    arrays, _ = kind_arrays("general", 3, 2, 7, 4, 4, 5)
    Aa = {n: to_attn(arrays[n]) for n in arrays}
    ref = run_kind("general", Aa, list(arrays), lengths=[7, 3, 1])
    for opts in [dict(dropout=0.5, training=False), dict(dropout=0.0, dropout_seed=4)]:
        r = run_kind("general", Aa, list(arrays), lengths=[7, 3, 1], **opts)
        assert np.array_equal(r.weights.numpy(), ref.weights.numpy())
        assert np.array_equal(r.context.numpy(), ref.context.numpy())


def test_mask_errors_reach_python():
    q, k = attn.zeros([2, 4]), attn.zeros([2, 3, 4])
    lens = attn.tensor(np.array([3, 1], np.int32))
    with pytest.raises(attn.ValueError, match="'lengths' and 'key_padding_mask' are exclusive"):
        attn.luong_attention(q, k, k, lens, key_keep_mask=attn.tensor(np.ones((2, 3), np.int32)))
    with pytest.raises(attn.ValueError, match="'key_padding_mask' must be int32"):
        attn.luong_attention(q, k, k, key_keep_mask=attn.tensor(np.ones((2, 3), np.float32)))
    with pytest.raises(attn.ShapeError, match=r"'key_padding_mask' expected \(B=2, S=3\), got \(2, 4\)"):
        attn.luong_attention(q, k, k, key_keep_mask=attn.tensor(np.ones((2, 4), np.int32)))
    with pytest.raises(attn.ValueError, match=r"dropout must be in \[0, 1\), got 1"):
        attn.luong_attention(q, k, k, lens, dropout=1.0)
    with pytest.raises(attn.ShapeError, match="use score 'general' to learn a projection"):
        attn.luong_attention(attn.zeros([2, 5]), k, k, lens)


def test_init_helpers_are_xavier():
    p = attn.additive_attention_init(4, 6, 5, seed=1, normalize=True)
    assert sorted(p) == ["bias", "g", "v", "w_k", "w_q"]
    for name, (rows, cols) in {"w_q": (5, 4), "w_k": (5, 6), "v": (1, 5)}.items():
        x = p[name].numpy()
        bound = np.sqrt(6.0 / (rows + cols))
        assert np.abs(x).max() <= bound and np.abs(x).max() > 0.5 * bound and p[name].requires_grad
    assert not p["bias"].numpy().any()
    assert sorted(attn.luong_attention_init("concat", 4, 6, 5)) == ["v", "w"]
    assert attn.luong_attention_init("general", 4, 6)["w"].shape == (4, 6)
    assert attn.luong_attention_init("dot", 4, 4) == {}
    loc = attn.location_attention_init(4, 9)
    assert loc["w_a"].shape == (9, 4) and not loc["b_a"].numpy().any()
