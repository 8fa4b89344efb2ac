"""attn._attn.nn.MultiheadAttention (attn's native module: batch-first, int32 key_keep_mask) vs
torch.nn.MultiheadAttention(batch_first=True) with
identical weights: outputs, attention weights (per head and averaged), and the gradients
of query, key, value and every parameter. Masks: key_padding_mask (torch True = ignore,
attn key_keep_mask nonzero = keep), float attn_mask (T, S) = attn_bias. attn.nn.MultiheadAttention,
which takes PyTorch's arguments and masks, is tested in test_torch_conventions.py."""
import numpy as np
import pytest
import torch

import attn
from parity import assert_close, randn, to_attn, to_torch

OP = "multihead_attention"


def make_pair(embed_dim, heads, kdim=0, vdim=0, bias=True, seed=0):
    # attn's native module (batch-first, int32 key_keep_mask); test_torch_conventions.py tests attn.nn's.
    a = attn._attn.nn.MultiheadAttention(embed_dim, heads, kdim=kdim, vdim=vdim, bias=bias, seed=seed)
    t = torch.nn.MultiheadAttention(embed_dim, heads, bias=bias, batch_first=True,
                                    kdim=kdim or None, vdim=vdim or None)
    a_params = a.named_parameters()
    t_params = dict(t.named_parameters())
    assert list(a_params.keys()) == list(t_params.keys())
    # Non-zero biases so the bias paths are compared; weights from attn's initialisation.
    values = {}
    for i, (name, p) in enumerate(a_params.items()):
        values[name] = p.numpy().copy() if p.numpy().ndim == 2 else randn(100 + i, *p.shape, scale=0.3)
    a.load_parameters(values)
    with torch.no_grad():
        for name, v in values.items():
            t_params[name].copy_(torch.tensor(v))
    return a, t


def run_case(a, t, q, k, v, *, lengths=None, kpm_ignore=None, attn_mask=None, need_weights=False, average=False,
             same=""):
    """same: "" distinct inputs, "self" q is k is v, "kv" k is v."""
    B, T, S = q.shape[0], q.shape[1], k.shape[1]
    qa = to_attn(q, True)
    ka = qa if same == "self" else to_attn(k, True)
    va = qa if same == "self" else (ka if same == "kv" else to_attn(v, True))
    qt = to_torch(q, True)
    kt = qt if same == "self" else to_torch(k, True)
    vt = qt if same == "self" else (kt if same == "kv" else to_torch(v, True))

    kwargs = {}
    if lengths is not None:
        kwargs["key_lengths"] = to_attn(np.array(lengths, dtype=np.int32))
        kpm_ignore = np.arange(S)[None, :] >= np.array(lengths)[:, None]
    elif kpm_ignore is not None:
        kwargs["key_keep_mask"] = to_attn((~kpm_ignore).astype(np.int32))
    if attn_mask is not None:
        kwargs["attn_bias"] = to_attn(attn_mask)
    out_a, w_a = a(qa, ka, va, need_weights=need_weights, average_weights=average, **kwargs)
    out_t, w_t = t(qt, kt, vt, key_padding_mask=None if kpm_ignore is None else torch.tensor(kpm_ignore),
                   attn_mask=None if attn_mask is None else torch.tensor(attn_mask),
                   need_weights=need_weights, average_attn_weights=average)

    seed_out = randn(7, *out_t.shape)
    loss_t = (out_t * torch.tensor(seed_out)).sum()
    if need_weights:
        seed_w = randn(8, *w_t.shape)
        loss_t = loss_t + (w_t * torch.tensor(seed_w)).sum()
    loss_t.backward()
    total = attn.sum(attn.mul(out_a, to_attn(seed_out)))
    if need_weights:
        total = attn.add(total, attn.sum(attn.mul(w_a, to_attn(seed_w))))
    attn.backward(total)

    case = f"same={same or 'none'} lengths={lengths} kpm={kpm_ignore is not None} mask={attn_mask is not None} " \
           f"weights={need_weights} average={average}"
    assert_close(OP, case, "out", out_a, out_t)
    if need_weights:
        assert_close(OP, case, "weights", w_a, w_t)
    else:
        assert w_a is None
    inputs = [("query", qa, qt)]
    if same != "self":
        inputs.append(("key", ka, kt))
        if same != "kv":
            inputs.append(("value", va, vt))
    for name, xa, xt in inputs:
        assert_close(OP, case, f"grad {name}", xa.grad, xt.grad)
    t_params = dict(t.named_parameters())
    for name, p in a.named_parameters().items():
        assert_close(OP, case, f"grad {name}", p.grad, t_params[name].grad)
    a.zero_grad()
    t.zero_grad()


@pytest.mark.parametrize("need_weights,average", [(False, False), (True, False), (True, True)])
def test_self_attention(need_weights, average):
    a, t = make_pair(16, 4, seed=1)
    x = randn(1, 2, 5, 16)
    run_case(a, t, x, x, x, same="self", need_weights=need_weights, average=average)


@pytest.mark.parametrize("same", ["", "kv"])
@pytest.mark.parametrize("need_weights,average", [(False, False), (True, False), (True, True)])
def test_cross_attention_with_masks(same, need_weights, average):
    a, t = make_pair(12, 3, seed=2)
    B, T, S = 3, 4, 6
    q, k, v = randn(2, B, T, 12), randn(3, B, S, 12), randn(4, B, S, 12)
    run_case(a, t, q, k, v, same=same, need_weights=need_weights, average=average)
    run_case(a, t, q, k, v, same=same, lengths=[6, 2, 4], need_weights=need_weights, average=average)
    kpm = np.array([[0, 1, 0, 0, 1, 0], [1, 1, 0, 1, 1, 1], [0, 0, 0, 0, 0, 1]], dtype=bool)
    mask = randn(5, T, S)
    run_case(a, t, q, k, v, same=same, kpm_ignore=kpm, attn_mask=mask, need_weights=need_weights, average=average)


@pytest.mark.parametrize("need_weights,average", [(False, False), (True, False), (True, True)])
def test_separate_kdim_vdim(need_weights, average):
    a, t = make_pair(8, 2, kdim=6, vdim=4, seed=3)
    assert list(a.named_parameters().keys()) == ["q_proj_weight", "k_proj_weight", "v_proj_weight",
                                                 "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    q, k, v = randn(6, 2, 3, 8), randn(7, 2, 5, 6), randn(8, 2, 5, 4)
    mask = np.triu(np.full((3, 5), -1e4, dtype=np.float32), k=3)  # a float causal-like mask
    run_case(a, t, q, k, v, lengths=[5, 3], attn_mask=mask, need_weights=need_weights, average=average)


def test_no_bias():
    a, t = make_pair(8, 2, bias=False, seed=4)
    assert list(a.named_parameters().keys()) == ["in_proj_weight", "out_proj.weight"]
    q, k = randn(9, 2, 3, 8), randn(10, 2, 4, 8)
    run_case(a, t, q, k, k, same="kv", need_weights=True)


def test_torch_weights_load_into_attn():
    """A state_dict from a torch module (its own initialisation) copies in unchanged."""
    torch.manual_seed(0)
    t = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    a = attn._attn.nn.MultiheadAttention(8, 2)
    a.load_parameters({k: v.detach().numpy() for k, v in t.state_dict().items()})
    x = randn(11, 2, 3, 8)
    run_case(a, t, x, x, x, same="self", need_weights=True)


def test_errors():
    with pytest.raises(ValueError, match="embed_dim=10 is not divisible by num_heads=3"):
        attn._attn.nn.MultiheadAttention(10, 3)
    a = attn._attn.nn.MultiheadAttention(16, 4)
    k = to_attn(randn(1, 2, 7, 16))
    with pytest.raises(attn.ShapeError, match=r"multihead_attention: 'query' expected \(B, T, D=16\), got \(2, 5, 8\)"):
        a(to_attn(randn(1, 2, 5, 8)), k, k)
    with pytest.raises(ValueError, match=r"selected head 4 is out of range \[0, H=4\)"):
        a(to_attn(randn(1, 2, 5, 16)), k, k, need_weights=True, heads=[4])
    with pytest.raises(ValueError, match="unknown parameter 'in_proj'"):
        a.load_parameters({"in_proj": np.zeros((48, 16), np.float32)})
    with pytest.raises(ValueError, match=r"'out_proj.bias' expected \(16\)"):
        a.load_parameters({"out_proj.bias": np.zeros((8,), np.float32)})
