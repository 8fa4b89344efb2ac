"""Parity with PyTorch for Luong local attention (local-m, local-p) and hard attention +
REINFORCE: outputs and every gradient against a straightforward PyTorch re-implementation
that materialises the (B, T, S) scores and masks them to the window."""
import numpy as np
import pytest
import torch

import attn
from parity import assert_close, randn, to_attn, to_torch


def torch_local(query, keys, values, lengths, mode, window, score, w=None, positions=None, w_p=None, v_p=None,
                temperature=1.0, keep=None, drop=None):
    """Luong et al. 2015 §3.2, as documented in include/attn/ops/local_attention.h. keep: a (B, S)
    bool key padding mask (True = keep; lengths are then its extent); drop: a dropout
    multiplier of the weights' shape (0 or 1 / (1 - p))."""
    block = query.dim() == 3
    q = query if block else query.unsqueeze(1)                    # (B, T, D)
    B, T, _ = q.shape
    S = keys.shape[1]
    L = torch.tensor(lengths, dtype=torch.long)[:, None]          # (B, 1)
    qw = q @ w if score == "general" else q                       # (B, T, E)
    e = torch.einsum("bte,bse->bts", qw, keys) / temperature      # (B, T, S)
    if mode == "monotonic":
        if positions is None:
            centre = torch.arange(T).expand(B, T)
        else:
            p = torch.tensor(positions, dtype=torch.long)
            centre = p.expand(B, T) if p.numel() in (1, T) and (block or p.numel() == 1) else p.reshape(B, T)
        pf = None
    else:
        h = torch.tanh(q @ w_p.T)                                 # (B, T, A)
        pf = L.float() * torch.sigmoid(h @ v_p)                   # (B, T), the real length L_b
        centre = torch.minimum(torch.floor(pf.detach()).long(), L - 1)
    s = torch.arange(S)
    lo = (centre - window).clamp(min=0)
    hi = torch.minimum(centre + window, L - 1)
    inside = (s >= lo[..., None]) & (s <= hi[..., None])          # (B, T, S)
    if keep is not None:
        inside = inside & keep[:, None, :]
    a = torch.softmax(torch.where(inside, e, torch.full_like(e, -1e9)), dim=-1) * inside.float()
    if pf is not None:
        sigma = window / 2.0
        a = a * torch.exp(-(s.float() - pf[..., None]) ** 2 / (2 * sigma * sigma))
    if drop is not None:
        a = a * (drop if block else drop[:, None])
    context = a @ values
    if not block:
        context, a = context.squeeze(1), a.squeeze(1)
    return context, a, pf


CASES = [
    # name, B, T (0 = one step), S, lengths, window
    ("block ragged with a zero row", 3, 5, 9, [9, 4, 0], 2),
    ("one step", 3, 0, 7, [7, 1, 5], 1),
    ("window >= S", 2, 3, 4, [4, 3], 6),
    ("length 1", 2, 3, 5, [1, 1], 1),
]


def run_both(mode, score, case, temperature, positions=None, seed=0):
    name, B, T, S, lengths, window = case
    D, E, A = (4, 4, 3) if score == "dot" else (3, 5, 3)
    qshape = (B, T, D) if T else (B, D)
    arrays = {"query": randn(seed + 1, *qshape), "keys": randn(seed + 2, B, S, E), "values": randn(seed + 3, B, S, E)}
    if score == "general":
        arrays["w"] = randn(seed + 4, D, E, scale=0.5)
    if mode == "predictive":
        arrays["w_p"] = randn(seed + 5, A, D)
        arrays["v_p"] = randn(seed + 6, A)
    seeds = {"context": randn(seed + 7, *(qshape[:-1] + (E,))), "weights": randn(seed + 8, *(qshape[:-1] + (S,)))}

    at = {k: to_attn(v, requires_grad=True) for k, v in arrays.items()}
    pos_a = None if positions is None else to_attn(np.array(positions, dtype=np.int32))
    context, weights = attn.local_attention(
        at["query"], at["keys"], at["values"], to_attn(np.array(lengths, dtype=np.int32)), mode=mode, window=window,
        score=score, w=at.get("w"), positions=pos_a, w_p=at.get("w_p"), v_p=at.get("v_p"), temperature=temperature)
    loss = attn.add(attn.sum(attn.mul(context, to_attn(seeds["context"]))),
                    attn.sum(attn.mul(weights, to_attn(seeds["weights"]))))
    attn.backward(loss)

    tt = {k: to_torch(v, requires_grad=True) for k, v in arrays.items()}
    c_t, w_t, p_t = torch_local(tt["query"], tt["keys"], tt["values"], lengths, mode, window, score, w=tt.get("w"),
                                positions=positions, w_p=tt.get("w_p"), v_p=tt.get("v_p"), temperature=temperature)
    if p_t is not None:  # stay clear of the window jumps at integer p_t (float rounding may differ)
        frac = (p_t - torch.round(p_t)).abs().detach()
        assert bool((frac[torch.tensor(lengths) > 0] > 1e-3).all()), f"{name}: p_t too close to an integer"
    ((c_t * torch.tensor(seeds["context"])).sum() + (w_t * torch.tensor(seeds["weights"])).sum()).backward()

    label = f"{mode} {score} {name} tau={temperature}"
    assert_close("local_attention", label, "context", context, c_t)
    assert_close("local_attention", label, "weights", weights, w_t)
    for k in arrays:
        assert_close("local_attention", label, f"grad {k}", at[k].grad, tt[k].grad)
    return weights.numpy(), w_t.detach().numpy()


@pytest.mark.parametrize("mode", ["monotonic", "predictive"])
@pytest.mark.parametrize("score", ["dot", "general"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("temperature", [1.0, 0.6])
def test_local_attention_matches_torch(mode, score, case, temperature):
    run_both(mode, score, case, temperature, seed=17)


@pytest.mark.parametrize("positions", [[0, 8, 3, 5, 1], [[8, 0, 2, 7, 4], [3, 3, 3, 0, 1], [0, 1, 2, 3, 4]]])
def test_local_m_given_positions(positions):
    weights, _ = run_both("monotonic", "general", ("positions", 3, 5, 9, [9, 4, 2], 1), 1.0, positions=positions,
                          seed=31)
    # Exactly 0 outside the window.
    p = np.broadcast_to(np.array(positions), (3, 5))
    for b, L in enumerate([9, 4, 2]):
        for t in range(5):
            lo, hi = max(0, p[b, t] - 1), min(L - 1, p[b, t] + 1)
            outside = [s for s in range(9) if s < lo or s > hi]
            assert (weights[b, t, outside] == 0).all()


def mask_extent(keep):
    """1 + the last kept position of each row (0 when none): the lengths a mask stands for."""
    B, S = keep.shape
    return [int(max([s + 1 for s in range(S) if keep[b, s]], default=0)) for b in range(B)]


# A non-suffix mask: holes inside windows, a row with one kept position, a fully masked row.
HOLEY = np.array([[1, 0, 1, 1, 0, 1, 1, 0, 1],
                  [0, 0, 1, 0, 0, 0, 0, 0, 0],
                  [0, 0, 0, 0, 0, 0, 0, 0, 0]], np.int32)


@pytest.mark.parametrize("mode", ["monotonic", "predictive"])
@pytest.mark.parametrize("score", ["dot", "general"])
@pytest.mark.parametrize("block", [True, False])
@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_local_attention_mask_and_dropout_match_torch(mode, score, block, dropout):
    B, T, S, window = 3, 5, 9, 2
    D, E, A = (4, 4, 3) if score == "dot" else (3, 5, 3)
    qshape = (B, T, D) if block else (B, D)
    arrays = {"query": randn(51, *qshape), "keys": randn(52, B, S, E), "values": randn(53, B, S, E)}
    if score == "general":
        arrays["w"] = randn(54, D, E, scale=0.5)
    if mode == "predictive":
        arrays["w_p"] = randn(55, A, D)
        arrays["v_p"] = randn(56, A)
    seeds = {"context": randn(57, *(qshape[:-1] + (E,))), "weights": randn(58, *(qshape[:-1] + (S,)))}
    at = {k: to_attn(v, requires_grad=True) for k, v in arrays.items()}
    context, weights = attn.local_attention(
        at["query"], at["keys"], at["values"], None, mode=mode, window=window, score=score, w=at.get("w"),
        w_p=at.get("w_p"), v_p=at.get("v_p"), key_keep_mask=to_attn(HOLEY), dropout=dropout, dropout_seed=11)
    attn.backward(attn.add(attn.sum(attn.mul(context, to_attn(seeds["context"]))),
                           attn.sum(attn.mul(weights, to_attn(seeds["weights"])))))
    drop = None
    if dropout > 0:
        w_np = weights.numpy()
        # attn's dropout mask, read off its output (entries that are 0 before dropout stay 0
        # either way); the reference applies it with the same 1 / (1 - p) scale.
        drop = torch.tensor((w_np != 0).astype(np.float32) / (1 - dropout))
        assert (w_np == 0).sum() > (HOLEY == 0).sum()  # something was dropped
    tt = {k: to_torch(v, requires_grad=True) for k, v in arrays.items()}
    keep = torch.tensor(HOLEY != 0)
    c_t, w_t, p_t = torch_local(tt["query"], tt["keys"], tt["values"], mask_extent(HOLEY), mode, window, score,
                                w=tt.get("w"), w_p=tt.get("w_p"), v_p=tt.get("v_p"), keep=keep, drop=drop)
    if p_t is not None:
        frac = (p_t - torch.round(p_t)).abs().detach()
        assert bool((frac[:2] > 1e-3).all()), "p_t too close to an integer"
    ((c_t * torch.tensor(seeds["context"])).sum() + (w_t * torch.tensor(seeds["weights"])).sum()).backward()
    label = f"mask {mode} {score} block={block} dropout={dropout}"
    assert_close("local_attention", label, "context", context, c_t)
    assert_close("local_attention", label, "weights", weights, w_t)
    for k in arrays:
        assert_close("local_attention", label, f"grad {k}", at[k].grad, tt[k].grad)
    # masked positions: exactly 0
    w_np = weights.numpy() if block else weights.numpy()[:, None]
    assert (w_np[np.broadcast_to(HOLEY[:, None, :] == 0, w_np.shape)] == 0).all()


def test_local_mask_equal_to_lengths_is_identical():
    q, k, v = to_attn(randn(61, 3, 4, 4)), to_attn(randn(62, 3, 9, 4)), to_attn(randn(63, 3, 9, 4))
    lengths = np.array([9, 4, 0], np.int32)
    mask = (np.arange(9)[None, :] < lengths[:, None]).astype(np.int32)
    for mode in ["monotonic", "predictive"]:
        extra = dict(w_p=to_attn(randn(64, 3, 4)), v_p=to_attn(randn(65, 3))) if mode == "predictive" else {}
        a = attn.local_attention(q, k, v, to_attn(lengths), mode=mode, window=2, score="dot", **extra)
        b = attn.local_attention(q, k, v, key_keep_mask=to_attn(mask), mode=mode, window=2, score="dot", **extra)
        assert np.array_equal(a.context.numpy(), b.context.numpy())
        assert np.array_equal(a.weights.numpy(), b.weights.numpy())


def test_local_attention_init_is_xavier():
    p = attn.local_attention_init("predictive", "general", 4, 6, 5, seed=3)
    assert sorted(p) == ["v_p", "w", "w_p"]
    assert p["w"].shape == (4, 6) and p["w_p"].shape == (5, 4) and p["v_p"].shape == (5,)
    for name, (rows, cols) in {"w": (4, 6), "w_p": (5, 4), "v_p": (1, 5)}.items():
        x = p[name].numpy()
        bound = np.sqrt(6.0 / (rows + cols))
        assert np.abs(x).max() <= bound and np.abs(x).max() > 0.5 * bound and p[name].requires_grad
    assert attn.local_attention_init("monotonic", "dot", 4, 4) == {}


def test_local_errors_reach_python():
    q, k = attn.zeros([2, 3, 4]), attn.zeros([2, 5, 4])
    lengths = to_attn(np.array([5, 2], dtype=np.int32))
    with pytest.raises(ValueError, match=r"window must be >= 0, got -1"):
        attn.local_attention(q, k, k, lengths, score="dot", window=-1)
    with pytest.raises(ValueError, match=r"'w_p' expected \(A, D=4\), got an undefined tensor"):
        attn.local_attention(q, k, k, lengths, mode="predictive", score="dot", window=2)


# ---- hard attention and REINFORCE ------------------------------------------------------------------


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(4, 6), (3, 2, 5)])
def test_hard_attention_sample_matches_torch(training, shape):
    B, S = shape[0], shape[-1]
    E = 3
    logits, values = randn(41, *shape, scale=1.5), randn(42, B, S, E)
    seed_c, seed_l = randn(43, *(shape[:-1] + (E,))), randn(44, *shape[:-1])
    la, va = to_attn(logits, True), to_attn(values, True)
    positions, context, log_prob = attn.hard_attention_sample(attn.softmax(la), va, training=training, seed=5)
    attn.backward(attn.add(attn.sum(attn.mul(context, to_attn(seed_c))), attn.sum(attn.mul(log_prob, to_attn(seed_l)))))
    k = torch.tensor(positions.numpy().astype(np.int64))
    if not training:
        assert (k.numpy() == logits.argmax(-1)).all()

    lt, vt = to_torch(logits, True), to_torch(values, True)
    pi = torch.softmax(lt, -1)
    vt_rows = vt if len(shape) == 2 else vt[:, None].expand(B, shape[1], S, E)
    ctx_t = torch.gather(vt_rows, -2, k[..., None, None].expand(*k.shape, 1, E)).squeeze(-2)
    lp_t = torch.log(torch.gather(pi, -1, k[..., None]).squeeze(-1))
    ((ctx_t * torch.tensor(seed_c)).sum() + (lp_t * torch.tensor(seed_l)).sum()).backward()
    case = f"shape={shape} training={training}"
    assert_close("hard_attention", case, "context", context, ctx_t)
    assert_close("hard_attention", case, "log_prob", log_prob, lp_t)
    assert_close("hard_attention", case, "grad logits", la.grad, lt.grad)
    assert_close("hard_attention", case, "grad values", va.grad, vt.grad)


@pytest.mark.parametrize("entropy_bonus", [0.0, 0.05])
def test_reinforce_loss_matches_torch(entropy_bonus):
    B, T, S = 3, 4, 5
    lp, rewards, logits = randn(51, B, T) - 2.0, randn(52, B, T), randn(53, B, T, S)
    baseline = attn.ReinforceBaseline(decay=0.8)
    baseline.update(0.5)
    baseline.update(attn.tensor(np.array([1.0, 0.0], np.float32)))
    assert abs(baseline.value - (0.8 * 0.5 + 0.2 * 0.5)) < 1e-6
    lpa, la = to_attn(lp, True), to_attn(logits, True)
    loss = attn.reinforce_loss(lpa, to_attn(rewards), baseline, entropy_bonus=entropy_bonus,
                               weights_for_entropy=attn.softmax(la))
    attn.backward(loss)

    lpt, lt = to_torch(lp, True), to_torch(logits, True)
    pi = torch.softmax(lt, -1)
    entropy = -(pi * torch.log(pi)).sum(-1)
    loss_t = -((torch.tensor(rewards) - baseline.value) * lpt).mean() - entropy_bonus * entropy.mean()
    loss_t.backward()
    case = f"entropy_bonus={entropy_bonus}"
    assert_close("reinforce_loss", case, "loss", loss, loss_t)
    assert_close("reinforce_loss", case, "grad log_probs", lpa.grad, lpt.grad)
    if entropy_bonus:
        assert_close("reinforce_loss", case, "grad logits", la.grad, lt.grad)
