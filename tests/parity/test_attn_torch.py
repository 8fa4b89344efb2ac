"""attn.torch: attn's fused kernels as torch.autograd.Functions / torch.nn.Modules, against
PyTorch's own composed implementation (outputs and every gradient at the float32 parity
tolerances of parity.py), torch.autograd.gradcheck in float32, several calls in flight
before one backward (a decoder loop), and the errors for inputs attn cannot take."""
import numpy as np
import pytest
import torch

import attn
import attn.torch as at
from parity import assert_close, randn, to_torch


def grads_of(tensors):
    return [t.grad.clone() for t in tensors]


def run_both(fn_attn, fn_torch, inputs, seeds_seed=50):
    """Runs both on fresh leaf copies of inputs; returns ((outs_a, grads_a), (outs_t, grads_t))."""
    results = []
    for fn in (fn_attn, fn_torch):
        leaves = [to_torch(x, True) if x.dtype == np.float32 else torch.tensor(x) for x in inputs]
        outs = fn(*leaves)
        outs = outs if isinstance(outs, tuple) else (outs,)
        total = sum((o * torch.tensor(randn(seeds_seed + i, *o.shape))).sum() for i, o in enumerate(outs))
        total.backward()
        results.append((outs, [leaf.grad for leaf in leaves if leaf.requires_grad]))
    return results


def compare(op, case, results):
    (outs_a, grads_a), (outs_t, grads_t) = results
    for i, (a, t) in enumerate(zip(outs_a, outs_t)):
        assert_close(op, case, f"output {i}", a.detach().numpy(), t)
    for i, (a, t) in enumerate(zip(grads_a, grads_t)):
        assert_close(op, case, f"grad {i}", a.numpy(), t)


def additive_reference(query, pk, values, w_q, bias, v, lengths):
    one_step = query.dim() == 2
    q = query[:, None, :] if one_step else query                               # (B, T, D)
    scores = torch.tanh(pk[:, None, :, :] + (q @ w_q.t() + bias)[:, :, None, :]) @ v  # (B, T, S)
    keep = torch.arange(pk.shape[1])[None, :] < lengths[:, None]
    weights = torch.softmax(scores.masked_fill(~keep[:, None, :], float("-inf")), -1)
    context = weights @ values
    return (context[:, 0], weights[:, 0]) if one_step else (context, weights)


@pytest.mark.parametrize("T", [None, 3])
def test_additive_attention_matches_torch(T):
    B, S, D, E, A = 2, 5, 4, 6, 3
    query = randn(1, B, D) if T is None else randn(1, B, T, D)
    inputs = [query, randn(2, B, S, A), randn(3, B, S, E), randn(4, A, D), randn(5, A), randn(6, A),
              np.array([5, 3], np.int64)]
    compare("default", f"additive T={T}", run_both(at.additive_attention, additive_reference, inputs))


def sdpa_reference(q, k, v, lengths, causal):
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5  # (B, H, T, S)
    T, S = scores.shape[-2:]
    keep = (torch.arange(S)[None, :] < lengths[:, None])[:, None, None, :]
    if causal:  # top-left aligned for T == S
        keep = keep & (torch.arange(S)[None, :] <= torch.arange(T)[:, None])
    weights = torch.softmax(scores.masked_fill(~keep, float("-inf")), -1)
    return weights @ v, weights


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_matches_torch(causal):
    B, H, T, Dh = 2, 2, 4, 3
    inputs = [randn(1, B, H, T, Dh), randn(2, B, H, T, Dh), randn(3, B, H, T, 5), np.array([4, 3], np.int32)]
    compare("default", f"sdpa causal={causal}", run_both(
        lambda q, k, v, n: at.sdpa(q, k, v, key_lengths=n, causal=causal),
        lambda q, k, v, n: sdpa_reference(q, k, v, n.long(), causal), inputs))


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_cells_match_torch_cells(kind):
    I, H, B = 4, 5, 3
    cell_a = (at.GRUCell if kind == "gru" else at.LSTMCell)(I, H)
    cell_t = (torch.nn.GRUCell if kind == "gru" else torch.nn.LSTMCell)(I, H)
    cell_t.load_state_dict(cell_a.state_dict())  # attn.torch's cells carry torch's names
    x, h, c = randn(1, B, I), randn(2, B, H), randn(3, B, H)
    if kind == "gru":
        results = run_both(lambda x, h: cell_a(x, h), lambda x, h: cell_t(x, h), [x, h])
    else:
        results = run_both(lambda x, h, c: cell_a(x, (h, c)), lambda x, h, c: cell_t(x, (h, c)), [x, h, c])
    compare(f"{kind}_cell", kind, results)
    for (name, pa), (_, pt) in zip(cell_a.named_parameters(), cell_t.named_parameters()):
        assert_close(f"{kind}_cell", kind, f"grad {name}", pa.grad.numpy(), pt.grad)
    h_default = cell_a(torch.tensor(x))  # hx None = zeros, as torch
    assert_close(f"{kind}_cell", kind, "hx=None", (h_default[0] if kind == "lstm" else h_default).detach().numpy(),
                 (cell_t(torch.tensor(x))[0] if kind == "lstm" else cell_t(torch.tensor(x))))


@pytest.mark.filterwarnings("ignore:Input #")  # float32 inputs: attn has no float64 mode
def test_gradcheck_float32():
    """Finite differences in float32 (attn has no float64 mode): eps 1e-2, tolerances for
    float32 central differences of O(1) functions."""
    torch.manual_seed(0)
    B, S, D, E, A = 2, 3, 3, 2, 3
    args = [torch.randn(B, D), torch.randn(B, S, A), torch.randn(B, S, E), torch.randn(A, D), torch.randn(A),
            torch.randn(A)]
    for t in args:
        t.requires_grad_(True)
    lengths = torch.tensor([3, 2])
    assert torch.autograd.gradcheck(lambda *a: at.additive_attention(*a, lengths), args, eps=1e-2, atol=2e-3,
                                    rtol=2e-2)
    cell = [torch.randn(B, 3), torch.randn(B, 2), torch.randn(6, 3), torch.randn(6, 2), torch.randn(6),
            torch.randn(6)]
    for t in cell:
        t.requires_grad_(True)
    assert torch.autograd.gradcheck(at.gru_cell, cell, eps=1e-2, atol=2e-3, rtol=2e-2)
    q, k, v = (torch.randn(1, 2, 3, 2, requires_grad=True) for _ in range(3))
    assert torch.autograd.gradcheck(lambda q, k, v: at.sdpa(q, k, v, causal=True), (q, k, v), eps=1e-2,
                                    atol=2e-3, rtol=2e-2)
    bias = torch.randn(1, 2, 3, 3, requires_grad=True)  # a learned (B, H, T, S) bias, top-left causal
    assert torch.autograd.gradcheck(lambda q, k, v, b: at.sdpa(q, k, v, bias=b, is_causal=True), (q, k, v, bias),
                                    eps=1e-2, atol=2e-3, rtol=2e-2)


@pytest.mark.parametrize("bias_shape", [(5, 7), (6, 5, 7), (2, 3, 5, 7)])
def test_sdpa_learned_bias_and_is_causal_match_torch(bias_shape):
    """A learned bias (ALiBi-like) of each attn_mask shape, with torch's is_causal (top-left,
    T != S): outputs and every gradient, bias included, against torch's composed ops."""
    B, H, T, S, D = 2, 3, 5, 7, 4
    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(B, H, n, D, generator=gen, requires_grad=True) for n in (T, S, S))
    bias = torch.randn(*bias_shape, generator=gen, requires_grad=True)
    out, weights = at.sdpa(q, k, v, bias=bias, is_causal=True)
    seed_out, seed_w = torch.randn(out.shape, generator=gen), torch.randn(weights.shape, generator=gen)
    ((out * seed_out).sum() + (weights * seed_w).sum()).backward()
    grads = [t.grad.clone() for t in (q, k, v, bias)]
    for t in (q, k, v, bias):
        t.grad = None
    scores = q @ k.transpose(-1, -2) / D ** 0.5 + (bias.reshape(B, H, T, S) if bias.dim() == 3 else bias)
    scores = scores.masked_fill(torch.ones(T, S, dtype=torch.bool).triu(1), float("-inf"))  # torch's is_causal
    w_t = torch.softmax(scores, -1)
    out_t = w_t @ v
    ((out_t * seed_out).sum() + (w_t * seed_w).sum()).backward()
    case = f"bias {bias_shape}"
    assert_close("sdpa", case, "out", out.detach(), out_t.detach())
    assert_close("sdpa", case, "weights", weights.detach(), w_t.detach())
    for name, g, t in zip(("q", "k", "v", "bias"), grads, (q, k, v, bias)):
        assert_close("sdpa", case, "d" + name, g, t.grad)


def test_decoder_loop_with_calls_in_flight():
    """T steps of GRU + Bahdanau (attn.torch) before one backward, vs the same in torch."""
    torch.manual_seed(1)
    B, S, H, T = 2, 4, 5, 3
    attention, cell = at.AdditiveAttention(H, H, H, seed=3), at.GRUCell(H, H)
    ref_cell = torch.nn.GRUCell(H, H)
    ref_cell.load_state_dict(cell.state_dict())
    memory, lengths = torch.randn(B, S, H), torch.tensor([4, 2])

    def run(attend, step, params):
        s = torch.zeros(B, H)
        pk = torch.nn.functional.linear(memory, attention.w_k)
        total = 0
        for _ in range(T):
            context, _ = attend(s, pk)
            s = step(context, s)
            total = total + (s ** 2).sum()
        total.backward()
        grads = [p.grad.clone() for p in params]
        for p in params:
            p.grad = None
        return total, grads

    params = list(attention.parameters()) + list(cell.parameters())
    total_a, grads_a = run(lambda s, pk: attention(s, memory, lengths=lengths, projected_keys=pk), cell, params)
    ref_params = list(attention.parameters()) + list(ref_cell.parameters())
    total_t, grads_t = run(lambda s, pk: additive_reference(s, pk, memory, attention.w_q, attention.bias,
                                                            attention.v, lengths), ref_cell, ref_params)
    assert_close("default", "decoder loop", "loss", total_a.detach().numpy(), total_t.detach())
    for i, (a, t) in enumerate(zip(grads_a, grads_t)):
        assert_close("default", "decoder loop", f"grad {i}", a.numpy(), t)


def test_inputs_attn_cannot_take_are_errors():
    q, k, v = (torch.randn(1, 1, 2, 3) for _ in range(3))
    with pytest.raises(TypeError, match=r"'q' must be float32 .*got torch.float64; convert with .float\(\)"):
        at.sdpa(q.double(), k, v)
    with pytest.raises(ValueError, match=r"'k' is on meta; attn's kernels run on the CPU \(pass k.cpu\(\)\)"):
        at.sdpa(q, torch.empty(1, 1, 2, 3, device="meta"), v)  # what a CUDA tensor gets, on a CPU-only torch
    with pytest.raises(TypeError, match="'v' must be a torch.Tensor, got ndarray"):
        at.sdpa(q, k, v.numpy())
    with pytest.raises(attn.ShapeError, match=r"'bias' expected float32 \(T=2, S=2\), \(B·H=1, T, S\)"):
        at.sdpa(q, k, v, bias=torch.zeros(3, 2, requires_grad=True))
    with pytest.raises(attn.ShapeError, match="sdpa"):
        at.sdpa(q, torch.randn(1, 1, 2, 4), v)
    with pytest.raises(ValueError, match="does not fit in int32"):
        at.sdpa(q, k, v, key_lengths=torch.tensor([2 ** 40]))
    # Non-contiguous input: made contiguous (a copy), same result as the contiguous one.
    kt = torch.randn(1, 1, 3, 2).transpose(-1, -2)
    assert not kt.is_contiguous()
    assert torch.equal(at.sdpa(q, kt, v)[0], at.sdpa(q, kt.contiguous(), v)[0])


def luong_reference(score, q, keys, lengths, w=None, v=None):
    """Luong scores (dot: qᵀk; general: qᵀ W k; concat: vᵀ tanh(W [q; k])), masked softmax, context."""
    if score == "dot":
        e = torch.einsum("bd,bsd->bs", q, keys)
    elif score == "general":
        e = torch.einsum("be,bse->bs", q @ w, keys)
    else:
        D = q.shape[1]
        e = torch.tanh((q @ w[:, :D].T)[:, None, :] + keys @ w[:, D:].T) @ v
    ignore = torch.arange(keys.shape[1])[None, :] >= lengths[:, None]
    a = torch.softmax(e.masked_fill(ignore, float("-inf")), 1)
    return torch.einsum("bs,bse->be", a, keys), a


@pytest.mark.parametrize("score", ["dot", "general", "concat"])
def test_luong_and_location_modules_match_torch(score):
    B, S, D = 3, 6, 5
    gen = torch.Generator().manual_seed(7)
    lengths = torch.tensor([6, 2, 4])
    attention = at.LuongAttention(score, D, D, attn_dim=4, seed=2)
    assert sorted(n for n, _ in attention.named_parameters()) == {"dot": [], "general": ["w"], "concat": ["v", "w"]}[score]
    q, keys = torch.randn(B, D, generator=gen, requires_grad=True), torch.randn(B, S, D, generator=gen, requires_grad=True)
    ctx, w = attention(q, keys, lengths=lengths)
    seed_c, seed_w = torch.randn(ctx.shape, generator=gen), torch.randn(w.shape, generator=gen)
    ((ctx * seed_c).sum() + (w * seed_w).sum()).backward()
    got = [q.grad.clone(), keys.grad.clone()] + [p.grad.clone() for _, p in attention.named_parameters()]
    q.grad = keys.grad = None
    for p in attention.parameters():
        p.grad = None
    ctx_t, w_t = luong_reference(score, q, keys, lengths, getattr(attention, "w", None), getattr(attention, "v", None))
    ((ctx_t * seed_c).sum() + (w_t * seed_w).sum()).backward()
    expected = [q.grad, keys.grad] + [p.grad for _, p in attention.named_parameters()]
    case = f"luong {score}"
    assert_close("attention", case, "context", ctx.detach(), ctx_t.detach())
    assert_close("attention", case, "weights", w.detach(), w_t.detach())
    for name, g, e in zip(["query", "keys"] + [n for n, _ in attention.named_parameters()], got, expected):
        assert_close("attention", case, "d" + name, g, e)

    location = at.LocationAttention(D, 8, seed=3)
    with torch.no_grad():
        location.b_a.normal_(generator=gen)
    ctx, w = location(q, keys, lengths=lengths)
    ignore = torch.arange(S)[None, :] >= lengths[:, None]
    w_t = torch.softmax((q @ location.w_a.T + location.b_a)[:, :S].masked_fill(ignore, float("-inf")), 1)
    assert_close("attention", "location", "weights", w.detach(), w_t.detach())
    assert_close("attention", "location", "context", ctx.detach(), torch.einsum("bs,bse->be", w_t, keys).detach())
    (ctx.sum() + w[:, 0].sum()).backward()
    grad_w_a = location.w_a.grad.clone()
    location.w_a.grad = None
    (torch.einsum("bs,bse->be", w_t, keys).sum() + w_t[:, 0].sum()).backward()
    assert_close("attention", "location", "dw_a", grad_w_a, location.w_a.grad)


@pytest.mark.parametrize("mode", ["monotonic", "predictive"])
def test_local_attention_module_matches_attn_and_gradchecks(mode):
    """local-m / local-p (their torch parity is test_local_attention.py): the module gives attn's
    op's outputs, and torch.autograd.gradcheck passes through it."""
    B, S, D = 2, 7, 4
    gen = torch.Generator().manual_seed(8)
    attention = at.LocalAttention(mode, "general", D, D, attn_dim=3, window=2, seed=4)
    q, keys = torch.randn(B, D, generator=gen), torch.randn(B, S, D, generator=gen)
    lengths = torch.tensor([7, 5])
    positions = torch.tensor([3, 1], dtype=torch.int32) if mode == "monotonic" else None
    ctx, w = attention(q, keys, lengths=lengths, positions=positions)
    native = _native_local(mode, attention, q, keys, lengths, positions)
    np.testing.assert_array_equal(ctx.detach().numpy(), native[0].numpy())
    np.testing.assert_array_equal(w.detach().numpy(), native[1].numpy())
    params = [p for _, p in attention.named_parameters()]
    q.requires_grad_(True)
    keys.requires_grad_(True)

    def fn(q, keys, *p):
        named = dict(zip([n for n, _ in attention.named_parameters()], p))
        return at.local_attention(q, keys, keys, lengths, mode, 2, "general", named.get("w"), positions,
                                  named.get("w_p"), named.get("v_p"))
    assert torch.autograd.gradcheck(fn, (q, keys, *params), eps=1e-2, atol=3e-3, rtol=3e-2)


def _native_local(mode, attention, q, keys, lengths, positions):
    ta = lambda t: None if t is None else attn.tensor(t.detach().numpy())  # noqa: E731
    return tuple(attn.local_attention(ta(q), ta(keys), ta(keys), ta(lengths), mode=mode, window=2, score="general",
                                      w=ta(getattr(attention, "w", None)), positions=ta(positions),
                                      w_p=ta(getattr(attention, "w_p", None)), v_p=ta(getattr(attention, "v_p", None)),
                                      need_weights=True))


def test_luong_wrapper_errors():
    q, keys = torch.randn(2, 4), torch.randn(2, 3, 4)
    with pytest.raises(ValueError, match="score"):
        at.luong_attention(q, keys, keys, score="nope")
    with pytest.raises(attn.ShapeError, match="luong_attention"):
        at.luong_attention(q, torch.randn(2, 3, 5), torch.randn(2, 3, 5))
    with pytest.raises(TypeError, match="'keys' must be float32"):
        at.luong_attention(q, keys.double(), keys)
    with pytest.raises(ValueError, match="'query' is on meta"):
        at.location_attention(torch.empty(2, 4, device="meta"), keys, torch.randn(5, 4), torch.randn(5))


def test_float32_inputs_are_shared_not_copied():
    """Zero-copy: each contiguous float32 input reaches attn's op at torch's own address, in
    forward and in backward's recomputation, even when it is not 64-byte aligned (x[1:]); the
    outputs and gradients equal those of copies of the inputs."""
    gen = torch.Generator().manual_seed(11)
    B, H, T, Dh = 2, 2, 5, 3
    n = B * H * T * Dh
    flat = [torch.randn(n + 1, generator=gen) for _ in range(3)]
    q, k, v = (f[1:].view(B, H, T, Dh).detach().requires_grad_(True) for f in flat)  # 4-byte aligned only
    assert any(t.data_ptr() % 64 for t in (q, k, v))
    seen = []

    def call(qa, ka, va):
        seen.append([attn.data_ptr(x) for x in (qa, ka, va)])
        return tuple(attn.sdpa(qa, ka, va, causal=True, need_weights=True))

    out, weights = at.apply(call, "test", [("q", q), ("k", k), ("v", v)], (True,) * 3)
    seed = torch.randn(out.shape, generator=gen)
    ((out * seed).sum() + weights.sum()).backward()
    assert seen == [[t.data_ptr() for t in (q, k, v)]] * 2, "forward and backward must see torch's memory"
    copies = [t.detach().clone().requires_grad_(True) for t in (q, k, v)]
    out_c, weights_c = at.sdpa(*copies, causal=True)
    ((out_c * seed).sum() + weights_c.sum()).backward()
    assert_close("sdpa", "shared", "out", out.detach(), out_c.detach())
    assert_close("sdpa", "shared", "weights", weights.detach(), weights_c.detach())
    for name, t, c in zip("qkv", (q, k, v), copies):
        assert_close("sdpa", "shared", "d" + name, t.grad, c.grad)
    # A non-contiguous input is made contiguous (one copy): its address is not torch's.
    kt = torch.randn(B, H, Dh, T, generator=gen).transpose(-1, -2)
    assert at.to_attn(kt, "k", "test") is not None and attn.data_ptr(at.to_attn(kt, "k", "test")) != kt.data_ptr()
    assert attn.data_ptr(at.to_attn(q, "q", "test")) == q.data_ptr()


def test_borrow_keeps_the_owner_alive_and_refuses_what_it_cannot_share():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = attn.borrow(a)
    assert attn.data_ptr(t) == a.ctypes.data
    a[1, 2] = 60.0
    assert t.numpy()[1, 2] == 60.0, "borrow shares memory"
    row = t.select(1)
    del a, t
    np.testing.assert_array_equal(row.numpy(), [3, 4, 60])  # the array lives on in the tensor
    x = torch.randn(4, 3)
    shared = attn.borrow(x.numpy())
    del x
    assert shared.numpy().shape == (4, 3)  # the torch storage too
    with pytest.raises(ValueError, match="cannot share an array of dtype float64"):
        attn.borrow(np.zeros(3))
    with pytest.raises(ValueError, match="not C-contiguous"):
        attn.borrow(np.zeros((3, 4), np.float32).T)
    frozen = np.zeros(3, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        attn.borrow(frozen)
    assert attn.borrow(np.zeros(3, np.int32)).dtype == "int32"


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("kv", ["same", "kdim"])
def test_multihead_attention_module_matches_torch(batch_first, kv):
    """attn.torch.MultiheadAttention: torch's state dict loads both ways; outputs, weights and
    every gradient (the learned float attn_mask's too) match torch.nn.MultiheadAttention with
    a bool key_padding_mask (True = ignore) and a float or bool attn_mask."""
    B, T, S, E, H = 2, 4, 5, 6, 2
    kdim = 3 if kv == "kdim" else None
    gen = torch.Generator().manual_seed(12)
    mine = at.MultiheadAttention(E, H, kdim=kdim, vdim=kdim, batch_first=batch_first)
    ref = torch.nn.MultiheadAttention(E, H, kdim=kdim, vdim=kdim, batch_first=batch_first)
    ref.load_state_dict(mine.state_dict())
    mine.load_state_dict(ref.state_dict())
    shape = (lambda L, D: (B, L, D)) if batch_first else (lambda L, D: (L, B, D))
    query = torch.randn(shape(T, E), generator=gen)
    key, value = torch.randn(shape(S, kdim or E), generator=gen), torch.randn(shape(S, kdim or E), generator=gen)
    padding = torch.tensor([[False] * S, [False, False, False, True, True]])
    for attn_mask in (torch.randn(T, S, generator=gen).requires_grad_(True), torch.rand(B * H, T, S, generator=gen) > 0.8):
        seed = torch.randn(shape(T, E), generator=gen)
        results = []
        for module in (mine, ref):
            out, weights = module(query, key, value, key_padding_mask=padding, attn_mask=attn_mask)
            ((out * seed).sum() + weights.sum()).backward()
            grads = [p.grad.clone() for p in module.parameters()]
            if attn_mask.requires_grad:
                grads.append(attn_mask.grad.clone())
                attn_mask.grad = None
            module.zero_grad()
            results.append((out.detach(), weights.detach(), grads))
        case = f"mha batch_first={batch_first} {kv} mask {attn_mask.dtype}"
        (out_a, w_a, g_a), (out_t, w_t, g_t) = results
        assert_close("multihead_attention", case, "out", out_a, out_t)
        assert_close("multihead_attention", case, "weights", w_a, w_t)
        for i, (a, t) in enumerate(zip(g_a, g_t)):
            assert_close("multihead_attention", case, f"grad {i}", a, t)
    with pytest.raises(TypeError, match="'key_padding_mask' must be bool"):
        mine(query, key, value, key_padding_mask=padding.int())
    with pytest.raises(ValueError, match=r"'attn_mask' must be \(T, S\) = \(4, 5\)"):
        mine(query, key, value, attn_mask=torch.zeros(5, 4))
    with pytest.raises(ValueError, match="dropout"):
        at.MultiheadAttention(E, H, dropout=0.1)
