"""Monotonic attention (Raffel et al. 2017, "Online and Linear-Time Attention by Enforcing
Monotonic Alignments") and MoChA (Chiu & Raffel 2018, "Monotonic Chunkwise Attention") against
PyTorch versions written from the papers:

    e_{i,j} = v^T tanh(W s_{i-1} + V h_j + b) + r           (the selection energy; MoChA's chunk
    u_{i,j} = v'^T tanh(W' s_{i-1} + V' h_j + b')            energy u has no r)
    p_{i,j} = sigmoid(e_{i,j})
    alpha_i = p_i * cumprod_excl(1 - p_i) * cumsum(alpha_{i-1} / cumprod_excl(1 - p_i))   (Raffel eq. 14)
    beta_i  = exp(u_i) * moving_sum(alpha_i / moving_sum(exp(u_i), w, 1), 1, w)           (Chiu & Raffel eq. 18)
    c_i = sum_j (alpha or beta)_{i,j} h_j

with alpha_0 = delta_0 and p = 0 past each row's length. Three decoder steps are chained, each
fed the alignment of the one before, so the gradients also flow back through the alignments:
outputs and the gradients of every input and parameter are compared. The paper's parallel form
divides by the cumprod, so the reference runs it at moderate energies; at extreme ones attn is
compared with the paper's recurrence (eq. 9-10) instead, where the plain form breaks down.
Inference: the hard attention reads from the last stop on and stops at the first p > 0.5."""
import numpy as np
import pytest
import torch

import attn
from parity import assert_close, assert_grads, lengths_mask, randn, to_attn, to_torch

# (B, S, D, E, A, lengths)
CASES = [
    (1, 1, 3, 3, 2, [1]),            # S = 1
    (2, 5, 4, 6, 3, [5, 2]),         # ragged
    (3, 7, 4, 4, 5, [7, 0, 1]),      # a fully masked row, a length-1 row
]
STEPS = 3


def case_id(c):
    return f"B{c[0]}-S{c[1]}-len{'_'.join(map(str, c[5]))}"


def energy(T, q, prefix, with_r):
    h = torch.tanh((q @ T[prefix + "w_q"].t())[:, None, :] + T["keys"] @ T[prefix + "w_k"].t() + T[prefix + "bias"])
    e = h @ T[prefix + "v"]
    return e + T["r"] if with_r else e


def cumprod_excl(x):
    return torch.cumprod(torch.cat([torch.ones_like(x[:, :1]), x[:, :-1]], dim=1), dim=1)


def raffel_parallel(e, prev, keep):
    p = torch.sigmoid(e) * keep
    cp = cumprod_excl(1 - p)
    return p * cp * torch.cumsum(prev / cp, dim=1)


def moving_sum(x, back, forward):
    """y_j = sum_{k=j-back+1}^{j+forward-1} x_k (Chiu & Raffel's moving_sum), zero padded."""
    padded = torch.nn.functional.pad(x[:, None, :], (back - 1, forward - 1))
    return torch.nn.functional.conv1d(padded, torch.ones(1, 1, back + forward - 1, dtype=x.dtype))[:, 0, :]


def chunk_beta(alpha, u, keep, w):
    exp_u = torch.exp(u) * keep
    denominators = moving_sum(exp_u, w, 1)
    safe = torch.where(denominators > 0, denominators, torch.ones_like(denominators))
    return exp_u * moving_sum(alpha / safe, 1, w)


def delta0(lens, S):
    a0 = np.zeros((len(lens), S), np.float32)
    for b, L in enumerate(lens):
        a0[b, 0] = 1.0 if L else 0.0
    return a0


@pytest.mark.parametrize("c", CASES, ids=case_id)
@pytest.mark.parametrize("chunk", [0, 1, 2, 3])
def test_expected_alignment_steps(c, chunk):
    B, S, D, E, A, lengths = c
    lens = np.array(lengths, np.int32)
    arrays = dict(keys=randn(2, B, S, E), values=randn(3, B, S, E), w_q=randn(4, A, D), w_k=randn(5, A, E),
                  bias=randn(6, A), v=randn(7, A), r=np.array([-0.5], np.float32))
    if chunk:
        arrays.update(chunk_w_q=randn(8, A, D), chunk_w_k=randn(9, A, E), chunk_bias=randn(10, A), chunk_v=randn(11, A))
    for t in range(STEPS):
        arrays[f"q{t}"] = randn(12 + t, B, D)
    seeds = [(randn(20 + t, B, E), randn(30 + t, B, S)) for t in range(STEPS)]
    names = list(arrays)
    a0 = delta0(lengths, S)
    L = attn.tensor(lens)

    Aa = {n: to_attn(arrays[n], True) for n in names}
    keys = attn.additive_project_keys(Aa["keys"], Aa["w_k"])
    chunk_keys = attn.additive_project_keys(Aa["keys"], Aa["chunk_w_k"]) if chunk else None
    prev, outs_a, loss_a = to_attn(a0), [], None
    for t in range(STEPS):
        q = Aa[f"q{t}"]
        alpha = attn.monotonic_alignment(attn.additive_energy(q, keys, Aa["w_q"], Aa["bias"], Aa["v"], Aa["r"], L),
                                         prev, L)
        w = alpha
        if chunk:
            u = attn.additive_energy(q, chunk_keys, Aa["chunk_w_q"], Aa["chunk_bias"], Aa["chunk_v"], None, L)
            w = attn.mocha_chunk_attention(alpha, u, L, chunk)
        ctx = attn.reshape(attn.bmm(attn.reshape(w, [B, 1, S]), Aa["values"]), [B, E])
        outs_a.append((ctx, w))
        term = attn.add(attn.sum(attn.mul(ctx, to_attn(seeds[t][0]))), attn.sum(attn.mul(w, to_attn(seeds[t][1]))))
        loss_a = term if loss_a is None else attn.add(loss_a, term)
        prev = alpha
    attn.backward(loss_a)

    Tt = {n: to_torch(arrays[n], True) for n in names}
    keep = lengths_mask(lens, S).float()
    Tt_keys = dict(Tt)
    prev_t, loss_t, outs_t = torch.tensor(a0), 0, []
    for t in range(STEPS):
        q = Tt[f"q{t}"]
        alpha = raffel_parallel(energy(Tt_keys, q, "", True), prev_t, keep)
        w = chunk_beta(alpha, energy(Tt_keys, q, "chunk_", False), keep, chunk) if chunk else alpha
        ctx = torch.einsum("bs,bse->be", w, Tt["values"])
        outs_t.append((ctx, w))
        loss_t = loss_t + (ctx * torch.tensor(seeds[t][0])).sum() + (w * torch.tensor(seeds[t][1])).sum()
        prev_t = alpha
    loss_t.backward()

    case = f"{case_id(c)} chunk={chunk}"
    for t in range(STEPS):
        assert_close("attention", case, f"context step {t}", outs_a[t][0], outs_t[t][0])
        assert_close("attention", case, f"weights step {t}", outs_a[t][1], outs_t[t][1])
    assert_grads("attention", case, [(n, Aa[n], Tt[n]) for n in names])


def recurrence(e, prev, lens):
    """Raffel eq. 9-10 in float64: q_j = (1 - p_{j-1}) q_{j-1} + alpha_{i-1,j}, alpha_j = p_j q_j."""
    out = np.zeros_like(e, dtype=np.float64)
    for b, L in enumerate(lens):
        q, p_before = 0.0, 0.0
        for j in range(L):
            q = (1 - p_before) * q + prev[b, j]
            p = 1 / (1 + np.exp(-np.float64(e[b, j])))
            out[b, j], p_before = p * q, p
    return out


@pytest.mark.parametrize("level", [30.0, 60.0])
def test_extreme_energies_follow_the_recurrence(level):
    """p ~ 1 everywhere: the plain parallel form's cumprod underflows (float32 at once), so it
    divides by zero; attn's log-space form still gives the recurrence's alignment."""
    lens = [9, 6]
    e = np.full((2, 9), level, np.float32)
    e[1, 2] = -level
    prev = np.zeros((2, 9), np.float32)
    prev[0, 6] = 1.0
    prev[1, 0], prev[1, 4] = 0.25, 0.75
    alpha = attn.monotonic_alignment(to_attn(e), to_attn(prev), attn.tensor(np.array(lens, np.int32)))
    plain = raffel_parallel(torch.tensor(e), torch.tensor(prev), lengths_mask(lens, 9).float())
    assert not torch.isfinite(plain).all()  # what the log-space form avoids
    assert_close("attention", f"level={level}", "alpha", alpha, torch.tensor(recurrence(e, prev, lens)))


def test_hard_monotonic_decoding_reads_left_to_right():
    """Four steps of hard attention, the stop carried from one to the next: the first j >= the
    last stop with sigmoid(e_j) > 0.5, else none (-1, all-zero weights); MoChA's weights are the
    softmax over the chunk of width w ending at the stop."""
    B, S, w = 4, 8, 3
    lens = np.array([8, 5, 1, 3], np.int32)
    start = np.zeros(B, np.int32)
    for t in range(4):
        e, u = randn(40 + t, B, S, scale=2.0), randn(50 + t, B, S)
        selected = attn.monotonic_select(to_attn(e), attn.tensor(lens), attn.tensor(start)).numpy()
        want = np.full(B, -1, np.int32)
        for b in range(B):
            hits = [j for j in range(start[b], lens[b]) if torch.sigmoid(torch.tensor(e[b, j])) > 0.5]
            want[b] = hits[0] if hits else -1
        np.testing.assert_array_equal(selected, want)
        weights = attn.monotonic_hard_weights(attn.tensor(selected), to_attn(u), w)
        ref = torch.zeros(B, S)
        for b in range(B):
            if want[b] >= 0:
                lo = max(0, want[b] - w + 1)
                ref[b, lo:want[b] + 1] = torch.softmax(torch.tensor(u[b, lo:want[b] + 1]), 0)
        assert_close("attention", f"step {t}", "chunk weights", weights, ref)
        start = np.where(want >= 0, want, lens)


@pytest.mark.parametrize("chunk", [0, 1, 2, 3])
def test_online_step_reads_only_to_the_stop(chunk):
    """monotonic_online_step, five chained decoder steps from random parameters, against the
    reference: every frame's energy e (and u) in torch, the first j >= the last stop with
    sigmoid(e_j) > 0.5 (none: -1, zero weights and context, the next step starts at the row's
    length), the one-hot of the stop (monotonic) or the softmax of u over the chunk ending there,
    and c = sum_j w_j h_j. The offsets r make some rows stop at once and others read on."""
    B, S, D, E, A = 5, 9, 4, 6, 7
    lens = np.array([9, 4, 1, 0, 6], np.int32)
    arrays = dict(keys=randn(60, B, S, E), values=randn(61, B, S, E), w_q=randn(62, A, D), w_k=randn(63, A, E),
                  bias=randn(64, A), v=randn(65, A), r=np.array([0.5], np.float32),
                  chunk_w_q=randn(66, A, D), chunk_w_k=randn(67, A, E), chunk_bias=randn(68, A), chunk_v=randn(69, A))
    Aa = {n: to_attn(a) for n, a in arrays.items()}
    Tt = {n: to_torch(a) for n, a in arrays.items()}
    keys = attn.additive_project_keys(Aa["keys"], Aa["w_k"])
    chunk_keys = attn.additive_project_keys(Aa["keys"], Aa["chunk_w_k"]) if chunk else None
    start = np.zeros(B, np.int32)
    stops = 0
    for t in range(5):
        q = randn(70 + t, B, D, scale=2.0)
        kw = dict(chunk_projected_keys=chunk_keys, chunk_w_q=Aa["chunk_w_q"], chunk_bias=Aa["chunk_bias"],
                  chunk_v=Aa["chunk_v"], chunk=chunk) if chunk else {}
        selected, context, weights = attn.monotonic_online_step(
            to_attn(q), Aa["values"], attn.tensor(lens), attn.tensor(start), keys, Aa["w_q"], Aa["bias"], Aa["v"],
            Aa["r"], need_weights=True, **kw)
        Tt["q"] = torch.tensor(q)
        e = energy(Tt, Tt["q"], "", True)
        u = energy(Tt, Tt["q"], "chunk_", False) if chunk else None
        want = np.full(B, -1, np.int32)
        ref = torch.zeros(B, S)
        for b in range(B):
            hits = [j for j in range(start[b], lens[b]) if torch.sigmoid(e[b, j]) > 0.5]
            if not hits:
                continue
            j = want[b] = hits[0]
            lo = max(0, j - chunk + 1) if chunk else j
            ref[b, lo:j + 1] = torch.softmax(u[b, lo:j + 1], 0) if chunk else 1.0
        np.testing.assert_array_equal(selected.numpy(), want)
        assert_close("monotonic_online_step", f"step {t}", "weights", weights, ref)
        assert_close("monotonic_online_step", f"step {t}", "context", context,
                     torch.einsum("bs,bse->be", ref, Tt["values"]))
        stops += int((want >= 0).sum())
        start = np.where(want >= 0, want, lens)
    assert 0 < stops < 5 * B  # some rows stop, some read on
