"""attn.nn's PyTorch conventions: torch's constructor arguments and parameter names, state
dicts loading both ways (torch -> attn -> torch), MultiheadAttention's masks as torch takes
them (bool key_padding_mask True = ignore; bool or float attn_mask), the errors for a mask
of the wrong dtype or shape, subclassing attn.nn.Module, and attn.Tensor arithmetic."""
from collections import OrderedDict

import numpy as np
import pytest
import torch

import attn
from parity import assert_close, randn, to_attn, to_torch


def round_trip(a, t, make_input, call_a, call_t, op):
    """torch's weights into attn: same outputs; attn's (fresh, seed 5) into torch: same outputs."""
    assert [n for n, _ in a.named_parameters()] == list(t.state_dict().keys())
    a.load_state_dict(t.state_dict())
    x = make_input()
    assert_close(op, "torch -> attn", "output", call_a(a, x), call_t(t, x))
    torch.manual_seed(5)
    for p in t.parameters():
        torch.nn.init.normal_(p)  # differ from attn's before loading them back
    t.load_state_dict(a.state_dict())
    for name, p in t.state_dict().items():
        assert np.array_equal(p.numpy(), dict(a.named_parameters())[name].numpy()), name
    assert_close(op, "attn -> torch", "output", call_a(a, x), call_t(t, x))


def first(y):
    return y[0] if isinstance(y, tuple) else y


MODULES = {
    "linear": (lambda: attn.nn.Linear(6, 4, seed=1), lambda: torch.nn.Linear(6, 4),
               lambda: randn(1, 3, 6), "default"),
    "linear_nobias": (lambda: attn.nn.Linear(6, 4, bias=False), lambda: torch.nn.Linear(6, 4, bias=False),
                      lambda: randn(1, 3, 6), "default"),
    "embedding": (lambda: attn.nn.Embedding(10, 5, padding_idx=-1), lambda: torch.nn.Embedding(10, 5, padding_idx=-1),
                  lambda: np.array([[1, 9, 3]], np.int32), "embedding"),
    "layer_norm": (lambda: attn.nn.LayerNorm((6,), eps=1e-6), lambda: torch.nn.LayerNorm((6,), eps=1e-6),
                   lambda: randn(2, 3, 6), "default"),
    "gru_cell": (lambda: attn.nn.GRUCell(5, 4, seed=2), lambda: torch.nn.GRUCell(5, 4),
                 lambda: randn(3, 2, 5), "default"),
    "lstm_cell": (lambda: attn.nn.LSTMCell(5, 4, seed=2), lambda: torch.nn.LSTMCell(5, 4),
                  lambda: randn(3, 2, 5), "default"),
}


@pytest.mark.parametrize("kind", list(MODULES))
def test_state_dict_both_ways(kind):
    make_a, make_t, make_x, op = MODULES[kind]
    round_trip(make_a(), make_t(), make_x,
               lambda a, x: first(a(to_attn(x))),
               lambda t, x: first(t(torch.tensor(x, dtype=torch.long) if x.dtype == np.int32 else torch.tensor(x))),
               op)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("kv", ["same", "kdim"])
def test_multihead_attention_state_dict_and_masks(batch_first, kv):
    E, H, B, T, S = 8, 2, 3, 4, 5
    extra = dict(kdim=6, vdim=7) if kv == "kdim" else {}
    a = attn.nn.MultiheadAttention(E, H, batch_first=batch_first, seed=4, **extra)
    t = torch.nn.MultiheadAttention(E, H, batch_first=batch_first, **extra)
    layout = (lambda L: (B, L)) if batch_first else (lambda L: (L, B))
    q = randn(1, *layout(T), E)
    k = randn(2, *layout(S), extra.get("kdim", E))
    v = randn(3, *layout(S), extra.get("vdim", E))
    kpm = np.zeros((B, S), bool)
    kpm[0, 3:] = True          # padding
    kpm[2, 1] = True           # any pattern
    bool_mask = np.triu(np.ones((T, S), bool), k=2)  # True = not allowed; every row keeps a key
    float_mask = randn(4, T, S)
    per_head_mask = randn(5, B * H, T, S)  # torch's (B·H, T, S) float attn_mask
    per_head_bool = np.broadcast_to(bool_mask, (B * H, T, S)).copy()
    per_head_bool[1] = np.triu(np.ones((T, S), bool), k=1)
    cases = [dict(), dict(key_padding_mask=kpm), dict(attn_mask=bool_mask),
             dict(attn_mask=float_mask, key_padding_mask=kpm), dict(attn_mask=per_head_mask),
             dict(attn_mask=per_head_bool, key_padding_mask=kpm)]

    def compare(direction):
        for masks in cases:
            for average in (True, False):
                out_a, w_a = a(to_attn(q), to_attn(k), to_attn(v), average_attn_weights=average, **masks)
                out_t, w_t = t(torch.tensor(q), torch.tensor(k), torch.tensor(v), average_attn_weights=average,
                               **{n: torch.tensor(m) for n, m in masks.items()})
                case = f"{direction} {sorted(masks)} average={average}"
                assert_close("default", case, "output", out_a, out_t)
                assert_close("default", case, "weights", w_a, w_t)

    assert [n for n, _ in a.named_parameters()] == list(t.state_dict().keys())
    a.load_state_dict(t.state_dict())
    compare("torch -> attn")
    torch.nn.init.normal_(t.in_proj_bias)
    t.load_state_dict(a.state_dict())
    compare("attn -> torch")
    out, w = a(to_attn(q), to_attn(k), to_attn(v), need_weights=False)
    assert w is None and out.shape == tuple(t(torch.tensor(q), torch.tensor(k), torch.tensor(v))[0].shape)


def test_multihead_attention_gradients_match_torch():
    E, H, B, T = 8, 2, 2, 3
    a, t = attn.nn.MultiheadAttention(E, H, batch_first=True), torch.nn.MultiheadAttention(E, H, batch_first=True)
    a.load_state_dict(t.state_dict())
    x = randn(1, B, T, E)
    kpm = np.array([[False, False, True], [False, False, False]])
    xa, xt = to_attn(x, True), to_torch(x, True)
    bias = randn(3, B * H, T, T)  # a learned (B·H, T, S) float attn_mask
    ba, bt = to_attn(bias, True), to_torch(bias, True)
    out_a, _ = a(xa, xa, xa, key_padding_mask=kpm, attn_mask=ba)
    out_t, _ = t(xt, xt, xt, key_padding_mask=torch.tensor(kpm), attn_mask=bt)
    seed = randn(2, B, T, E)
    attn.backward(attn.sum(attn.mul(out_a, to_attn(seed))))
    (out_t * torch.tensor(seed)).sum().backward()
    assert_close("default", "mha grad", "grad x", xa.grad, xt.grad)
    assert_close("default", "mha grad", "grad attn_mask", ba.grad, bt.grad)
    for name, p in a.named_parameters():
        assert_close("default", "mha grad", f"grad {name}", p.grad, dict(t.named_parameters())[name].grad)


def test_masks_of_the_wrong_dtype_or_shape_are_errors():
    a = attn.nn.MultiheadAttention(8, 2, batch_first=True)
    x = to_attn(randn(1, 2, 3, 8))
    keep_style = np.ones((2, 3), np.int32)  # attn's old keep-mask: must not be read as PyTorch's
    with pytest.raises(TypeError, match="key_padding_mask must be boolean"):
        a(x, x, x, key_padding_mask=keep_style)
    with pytest.raises(TypeError, match="int32 attn.Tensor is ambiguous"):
        a(x, x, x, key_padding_mask=attn.tensor(keep_style))
    with pytest.raises(TypeError, match="key_padding_mask must be boolean"):
        a(x, x, x, key_padding_mask=torch.zeros(2, 3))
    with pytest.raises(attn.ShapeError, match=r"'key_padding_mask' expected \(B=2, S=3\), got \(3, 2\)"):
        a(x, x, x, key_padding_mask=np.zeros((3, 2), bool))
    with pytest.raises(attn.ShapeError, match=r"'attn_mask' expected \(T=3, S=3\) or \(B·H=4, T, S\), got \(5, 3, 3\)"):
        a(x, x, x, attn_mask=np.zeros((5, 3, 3), np.float32))
    with pytest.raises(TypeError, match="attn_mask must be boolean or float"):
        a(x, x, x, attn_mask=np.zeros((3, 3), np.int64))
    with pytest.raises(attn.ShapeError, match=r"'query' expected a 3-d attn.Tensor \(B, L, E\), got \(3, 8\)"):
        a(to_attn(randn(1, 3, 8)), x, x)
    with pytest.raises(TypeError):  # the old keyword is gone, not silently accepted
        attn.sdpa(to_attn(randn(1, 1, 1, 2, 4)), *(to_attn(randn(2, 1, 1, 3, 4)),) * 2,
                  key_padding_mask=attn.tensor(np.ones((1, 3), np.int32)))
    with pytest.raises(ValueError, match="add_bias_kv and add_zero_attn are not supported"):
        attn.nn.MultiheadAttention(8, 2, add_bias_kv=True)


def test_load_state_dict_checks_names_and_shapes():
    a = attn.nn.Linear(3, 2)
    with pytest.raises(KeyError, match=r"missing \['bias'\], unexpected \['b'\]"):
        a.load_state_dict({"weight": np.zeros((2, 3), np.float32), "b": np.zeros(2, np.float32)})
    with pytest.raises(attn.ShapeError, match=r"'weight' expected shape \(2, 3\), got \(3, 2\)"):
        a.load_state_dict({"weight": np.zeros((3, 2), np.float32), "bias": np.zeros(2, np.float32)})
    missing, unexpected = a.load_state_dict({"weight": np.ones((2, 3))}, strict=False)
    assert missing == ["bias"] and unexpected == [] and a.weight.numpy().sum() == 6


def test_subclassed_module_matches_torch():
    class Net(attn.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = attn.nn.Linear(4, 3)
            self.register_parameter("scale", attn.tensor(np.full((3,), 2.0, np.float32)))

        def forward(self, x):
            return attn.mul(self.proj(x), self.scale)

    class TorchNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 3)
            self.scale = torch.nn.Parameter(torch.ones(3))

        def forward(self, x):
            return self.proj(x) * self.scale

    a, t = Net(), TorchNet()
    assert list(a.state_dict()) == list(t.state_dict()) == ["scale", "proj.weight", "proj.bias"]
    a.load_state_dict(t.state_dict())
    x = randn(1, 4)  # one example: attn's mul does not broadcast (3) over (B, 3)
    assert_close("default", "subclass", "output", a(to_attn(x)), t(torch.tensor(x)))
    t.load_state_dict(Net().state_dict())
    assert np.array_equal(t.scale.detach().numpy(), np.full(3, 2.0, np.float32))
    assert a.num_parameters() == 4 * 3 + 3 + 3 and not a.eval().training and not a.proj.training
    with pytest.raises(TypeError, match="must be a float32 attn.Tensor"):
        a.register_parameter("ids", attn.tensor(np.ones(2, np.int32)))


def test_tensor_arithmetic_and_creation():
    x, y = randn(1, 2, 3), randn(2, 2, 3)
    xa, ya = to_attn(x, True), to_attn(y)
    xt, yt = to_torch(x, True), torch.tensor(y)
    ra = ((xa + ya) * 2.0 - ya * xa) / 4.0 + 1 - xa
    rt = ((xt + yt) * 2.0 - yt * xt) / 4.0 + 1 - xt
    ma, mt = xa @ ya.T, xt @ yt.T
    total_a, total_t = ra.sum() + ma.sum() + (-xa).sum(), rt.sum() + mt.sum() + (-xt).sum()
    assert_close("elementwise", "arith", "value", ra, rt)
    assert_close("default", "matmul", "value", ma, mt)
    attn.backward(total_a)
    total_t.backward()
    assert_close("default", "arith", "grad x", xa.grad, xt.grad)
    assert len(xa) == 2 and xa.T.shape == (3, 2) and (2 - xa).numpy()[0, 0] == np.float32(2) - x[0, 0]
    ia, it = to_attn(randn(3, 4, 3), True), to_torch(randn(3, 4, 3), True)
    picked_a = [ia[1], ia[-1], ia[1:4:2], ia[::-1], ia[5:]]
    picked_t = [it[1], it[-1], it[1:4:2], it.flip(0), it[5:]]
    for i, (pa, pt) in enumerate(zip(picked_a, picked_t)):
        assert_close("shape_ops", "index", f"pick {i}", pa, pt)
    attn.backward(sum((p.sum() for p in picked_a[1:]), picked_a[0].sum()))
    sum(p.sum() for p in picked_t).backward()
    assert_close("shape_ops", "index", "grad", ia.grad, it.grad)
    with pytest.raises(IndexError, match="index 4 is out of range for dimension 0 of size 4"):
        ia[4]
    with pytest.raises(TypeError, match="an int or a slice of the first dimension, got tuple"):
        ia[0, 1]
    assert bool(attn.ones(1)) and not bool(attn.zeros([])) and bool(attn.ones(()))
    with pytest.raises(ValueError, match=r"truth value of an attn.Tensor of shape \(2, 3\) is ambiguous"):
        bool(xa)
    assert attn.ones(2, 3).numpy().sum() == 6 and attn.ones((4,)).shape == (4,)
    assert np.array_equal(attn.randn(3, 4, seed=7).numpy(), attn.randn((3, 4), seed=7).numpy())
    with pytest.raises(TypeError, match="only division by a number"):
        xa / ya
    with pytest.raises(TypeError, match="expected an attn.Tensor or a number, got str"):
        xa + "1"
    with pytest.raises(attn.ShapeError, match=r"\.T: expected a 2-d tensor"):
        attn.ones(2, 3, 4).T


@pytest.mark.parametrize("kind", ["gru", "lstm"])
@pytest.mark.parametrize("layers,bidirectional,batch_first", [(1, False, False), (2, True, True), (2, False, False)])
def test_rnn_layers_match_torch(kind, layers, bidirectional, batch_first):
    I, H, B, T = 3, 4, 2, 5
    make_a, make_t = (attn.nn.GRU, torch.nn.GRU) if kind == "gru" else (attn.nn.LSTM, torch.nn.LSTM)
    a = make_a(I, H, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, seed=2)
    t = make_t(I, H, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first)
    assert [n for n, _ in a.named_parameters()] == list(t.state_dict().keys())
    t.load_state_dict(a.state_dict())  # attn's initial weights into torch
    x = randn(1, *((B, T) if batch_first else (T, B)), I)
    n = layers * (2 if bidirectional else 1)
    h0, c0 = randn(2, n, B, H), randn(3, n, B, H)
    xa, xt = to_attn(x, True), to_torch(x, True)
    hx_a = to_attn(h0) if kind == "gru" else (to_attn(h0), to_attn(c0))
    hx_t = torch.tensor(h0) if kind == "gru" else (torch.tensor(h0), torch.tensor(c0))
    out_a, final_a = a(xa, hx_a)
    out_t, final_t = t(xt, hx_t)
    case = f"{kind} layers={layers} bi={bidirectional} batch_first={batch_first}"
    assert_close("default", case, "output", out_a, out_t)
    for i, (fa, ft) in enumerate(zip(final_a if kind == "lstm" else [final_a], final_t if kind == "lstm" else [final_t])):
        assert_close("default", case, f"final state {i}", fa, ft)
    dy = randn(4, *out_t.shape)
    attn.backward(attn.sum(attn.mul(out_a, to_attn(dy))))
    (out_t * torch.tensor(dy)).sum().backward()
    assert_close("default", case, "grad x", xa.grad, xt.grad)
    for name, p in a.named_parameters():
        assert_close("default", case, f"grad {name}", p.grad, dict(t.named_parameters())[name].grad)
    torch.nn.init.normal_(t.weight_hh_l0)
    a.load_state_dict(t.state_dict())  # and back
    assert np.array_equal(a.weight_hh_l0.numpy(), t.weight_hh_l0.detach().numpy())
    out_none, _ = a(xa)  # hx None: zeros, as torch
    assert_close("default", case, "hx=None", out_none, t(xt)[0])
    with pytest.raises(attn.ShapeError, match=r"'hx' expected \(L·dirs="):
        a(xa, to_attn(randn(5, n + 1, B, H)) if kind == "gru" else (to_attn(randn(5, n + 1, B, H)),) * 2)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_layers_match_torch(batch_first, norm_first):
    D, H, FFN, B, S, T = 8, 2, 16, 3, 5, 4
    kw = dict(dim_feedforward=FFN, dropout=0.0, batch_first=batch_first, norm_first=norm_first)
    causal = torch.nn.Transformer.generate_square_subsequent_mask
    pad = np.arange(S)[None, :] >= np.array([5, 2, 4])[:, None]  # True = padding, at row ends
    layout = (lambda L: (B, L)) if batch_first else (lambda L: (L, B))
    src, tgt = randn(1, *layout(S), D), randn(2, *layout(T), D)
    for kind in ("encoder", "decoder"):
        make_a, make_t = ((attn.nn.TransformerEncoderLayer, torch.nn.TransformerEncoderLayer) if kind == "encoder"
                          else (attn.nn.TransformerDecoderLayer, torch.nn.TransformerDecoderLayer))
        a, t = make_a(D, H, **kw), make_t(D, H, **kw)
        assert [n for n, _ in a.named_parameters()] == list(t.state_dict().keys())
        for p in t.parameters():
            torch.nn.init.normal_(p, std=0.3)
        a.load_state_dict(t.state_dict())
        if kind == "encoder":
            calls = [(lambda m, x, mask: m(x, src_key_padding_mask=mask), torch.tensor(pad), pad),
                     (lambda m, x, mask: m(x, src_mask=mask), causal(S), causal(S).numpy())]
            x_a, x_t = to_attn(src), torch.tensor(src)
        else:
            calls = [(lambda m, x, mask: m(x, to_attn(src) if isinstance(m, attn.nn.Module) else torch.tensor(src),
                                           tgt_mask=causal(T), memory_key_padding_mask=mask), torch.tensor(pad), pad)]
            x_a, x_t = to_attn(tgt), torch.tensor(tgt)
        for i, (call, mask_t, mask_a) in enumerate(calls):
            assert_close("default", f"{kind} {i} bf={batch_first} nf={norm_first}", "output",
                         call(a, x_a, mask_a), call(t, x_t, mask_t))
        t2 = make_t(D, H, **kw)
        t2.load_state_dict(a.state_dict())
        assert all(torch.equal(p, q) for p, q in zip(t2.state_dict().values(), t.state_dict().values()))
    enc = attn.nn.TransformerEncoderLayer(D, H, batch_first=True)
    x = to_attn(randn(3, B, S, D))
    with pytest.raises(ValueError, match="padding at the end of each row only"):
        enc(x, src_key_padding_mask=np.array([[True, False, False, False, False]] * B))
    with pytest.raises(ValueError, match=r"take only the causal \(T=5, T\) mask"):
        enc(x, src_mask=np.zeros((S, S), np.float32))
    dec = attn.nn.TransformerDecoderLayer(D, H, batch_first=True)
    with pytest.raises(ValueError, match="decoder self-attention is causal"):
        dec(x, x)


def test_sequential_matches_torch_sequential():
    a = attn.nn.Sequential(attn.nn.Linear(6, 5, seed=1), attn.nn.Tanh(), attn.nn.Linear(5, 3, seed=2),
                           attn.nn.GELU())
    t = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3), torch.nn.GELU())
    round_trip(a, t, lambda: randn(4, 2, 6), lambda a, x: a(to_attn(x)), lambda t, x: t(torch.tensor(x)), "default")
    assert len(a) == 4 and isinstance(a[1], attn.nn.Tanh) and [type(m).__name__ for m in a][-1] == "GELU"
    named = attn.nn.Sequential(OrderedDict(proj=attn.nn.Linear(2, 2), act=attn.nn.ReLU()))
    assert list(named.state_dict()) == ["proj.weight", "proj.bias"]
    x = np.array([[-1.0, 2.0]], np.float32)
    np.testing.assert_array_equal(attn.nn.ReLU()(to_attn(x)).numpy(), [[0.0, 2.0]])
    np.testing.assert_allclose(attn.nn.Sigmoid()(to_attn(x)).numpy(), torch.sigmoid(torch.tensor(x)), rtol=1e-6)
    with pytest.raises(TypeError, match="item '1' must be an attn.nn module, got function"):
        attn.nn.Sequential(attn.nn.Linear(2, 2), lambda x: x)


def test_seq2seq_beam_search():
    model = attn.models.Seq2Seq('{"attention": "bahdanau", "hidden": 16, "emb": 8, "seed": 1}')
    batch = attn.data.TaskGenerator("copy", 4, 7, seed=1).next(3)
    greedy_tokens, _ = model.greedy(batch.src, batch.src_lengths, 12)
    tokens, attention, hypotheses = model.beam(batch.src, batch.src_lengths, width=1, max_len=12)
    assert tokens == greedy_tokens  # width 1 is greedy search
    tokens, attention, hypotheses = model.beam(batch.src, batch.src_lengths, width=4, length_penalty=0.6,
                                               max_len=12)
    assert len(tokens) == len(hypotheses) == 3 and len(attention) == 3
    for row, hyps in zip(tokens, hypotheses):
        assert 1 <= len(hyps) <= 4 and hyps[0][0] == row
        scores = [score for _, score in hyps]
        assert scores == sorted(scores, reverse=True)
    with pytest.raises(ValueError, match="width must be >= 1, got 0"):
        model.beam(batch.src, batch.src_lengths, width=0)
