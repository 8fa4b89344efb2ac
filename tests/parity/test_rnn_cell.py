"""gru_cell(_projected) / lstm_cell(_projected) vs nn.GRUCell / nn.LSTMCell with the same
parameters (PyTorch's layout, copied bit for bit), nn.GRU / nn.LSTM (one layer) unrolled over
a few steps vs repeated attn cells, and attn.nn.GRUCell / LSTMCell modules."""
import numpy as np
import pytest
import torch

import attn
from parity import assert_close, assert_grads, randn, to_attn, to_torch

SIZES = [(1, 1, 1), (1, 3, 4), (3, 5, 2), (4, 8, 16)]  # (B, I, H)


def params(kind, I, H, seed=10):
    g = 3 if kind == "gru" else 4
    return {"w_ih": randn(seed, g * H, I, scale=0.5), "w_hh": randn(seed + 1, g * H, H, scale=0.5),
            "b_ih": randn(seed + 2, g * H, scale=0.5), "b_hh": randn(seed + 3, g * H, scale=0.5)}


def torch_cell(kind, I, H, p, bias):
    cell = (torch.nn.GRUCell if kind == "gru" else torch.nn.LSTMCell)(I, H, bias=bias)
    with torch.no_grad():
        cell.weight_ih.copy_(torch.tensor(p["w_ih"]))
        cell.weight_hh.copy_(torch.tensor(p["w_hh"]))
        if bias:
            cell.bias_ih.copy_(torch.tensor(p["b_ih"]))
            cell.bias_hh.copy_(torch.tensor(p["b_hh"]))
    return cell


@pytest.mark.parametrize("B,I,H", SIZES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("magnitude", [1.0, 10.0])
def test_gru_cell(B, I, H, bias, magnitude):
    p = params("gru", I, H)
    x, h, dy = randn(1, B, I, scale=magnitude), randn(2, B, H), randn(3, B, H)
    A = {k: to_attn(v, True) for k, v in p.items()}
    xa, ha = to_attn(x, True), to_attn(h, True)
    ya = attn.gru_cell(xa, ha, A["w_ih"], A["w_hh"], A["b_ih"] if bias else None, A["b_hh"] if bias else None)
    attn.backward(ya, dy)
    cell = torch_cell("gru", I, H, p, bias)
    xt, ht = to_torch(x, True), to_torch(h, True)
    yt = cell(xt, ht)
    yt.backward(torch.tensor(dy))
    case = f"B={B} I={I} H={H} bias={bias} magnitude={magnitude}"
    assert_close("gru_cell", case, "h'", ya, yt)
    pairs = [("x", xa, xt), ("h", ha, ht), ("w_ih", A["w_ih"], cell.weight_ih), ("w_hh", A["w_hh"], cell.weight_hh)]
    if bias:
        pairs += [("b_ih", A["b_ih"], cell.bias_ih), ("b_hh", A["b_hh"], cell.bias_hh)]
    assert_grads("gru_cell", case, pairs)


@pytest.mark.parametrize("B,I,H", SIZES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("grad_of", ["both", "h", "c"])
def test_lstm_cell(B, I, H, bias, grad_of):
    p = params("lstm", I, H)
    x, h, c = randn(1, B, I), randn(2, B, H), randn(3, B, H)
    dh, dc = randn(4, B, H), randn(5, B, H)
    A = {k: to_attn(v, True) for k, v in p.items()}
    xa, ha, ca = to_attn(x, True), to_attn(h, True), to_attn(c, True)
    h2a, c2a = attn.lstm_cell(xa, ha, ca, A["w_ih"], A["w_hh"], A["b_ih"] if bias else None,
                              A["b_hh"] if bias else None)
    cell = torch_cell("lstm", I, H, p, bias)
    xt, ht, ct = to_torch(x, True), to_torch(h, True), to_torch(c, True)
    h2t, c2t = cell(xt, (ht, ct))
    terms_a, loss_t = [], 0
    if grad_of in ("both", "h"):
        terms_a.append(attn.sum(attn.mul(h2a, to_attn(dh))))
        loss_t = loss_t + (h2t * torch.tensor(dh)).sum()
    if grad_of in ("both", "c"):
        terms_a.append(attn.sum(attn.mul(c2a, to_attn(dc))))
        loss_t = loss_t + (c2t * torch.tensor(dc)).sum()
    attn.backward(terms_a[0] if len(terms_a) == 1 else attn.add(*terms_a))
    loss_t.backward()
    case = f"B={B} I={I} H={H} bias={bias} grad_of={grad_of}"
    assert_close("lstm_cell", case, "h'", h2a, h2t)
    assert_close("lstm_cell", case, "c'", c2a, c2t)
    pairs = [("x", xa, xt), ("h", ha, ht), ("c", ca, ct), ("w_ih", A["w_ih"], cell.weight_ih),
             ("w_hh", A["w_hh"], cell.weight_hh)]
    if bias:
        pairs += [("b_ih", A["b_ih"], cell.bias_ih), ("b_hh", A["b_hh"], cell.bias_hh)]
    assert_grads("lstm_cell", case, pairs)


@pytest.mark.parametrize("kind", ["gru", "lstm"])
@pytest.mark.parametrize("B,I,H", SIZES[1:])
@pytest.mark.parametrize("bias", [True, False])
def test_projected_cells(kind, B, I, H, bias):
    """*_projected(gates_x = x W_ihᵀ + b_ih, ...) vs the torch cell; gradients reach gates_x."""
    p = params(kind, I, H)
    g = 3 if kind == "gru" else 4
    gx, h, c, dy = randn(1, B, g * H), randn(2, B, H), randn(3, B, H), randn(4, B, H)
    gxa, ha, ca = to_attn(gx, True), to_attn(h, True), to_attn(c, True)
    wa, ba = to_attn(p["w_hh"], True), to_attn(p["b_hh"], True)
    gxt, ht, ct = to_torch(gx, True), to_torch(h, True), to_torch(c, True)
    wt, bt = to_torch(p["w_hh"], True), to_torch(p["b_hh"], True)
    gh = ht @ wt.t() + (bt if bias else 0)
    if kind == "gru":
        ya = attn.gru_cell_projected(gxa, ha, wa, ba if bias else None)
        xr, xz, xn = gxt.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        yt = (1 - z) * n + z * ht
    else:
        ya, _ = attn.lstm_cell_projected(gxa, ha, ca, wa, ba if bias else None)
        i, f, gg, o = (gxt + gh).chunk(4, 1)
        c2 = torch.sigmoid(f) * ct + torch.sigmoid(i) * torch.tanh(gg)
        yt = torch.sigmoid(o) * torch.tanh(c2)
    attn.backward(ya, dy)
    yt.backward(torch.tensor(dy))
    case = f"{kind} B={B} I={I} H={H} bias={bias}"
    op = f"{kind}_cell"
    assert_close(op, case, "h'", ya, yt)
    pairs = [("gates_x", gxa, gxt), ("h", ha, ht), ("w_hh", wa, wt)] + ([("b_hh", ba, bt)] if bias else [])
    if kind == "lstm":
        pairs.append(("c", ca, ct))
    assert_grads(op, case, pairs)


@pytest.mark.parametrize("kind", ["gru", "lstm"])
@pytest.mark.parametrize("B,I,H,T", [(1, 1, 1, 1), (2, 3, 4, 5), (3, 6, 8, 3)])
def test_unrolled_vs_torch_rnn(kind, B, I, H, T):
    """nn.GRU / nn.LSTM (1 layer, batch_first) vs the attn cell applied T times; the loss
    uses every output step, so gradients flow through the whole recurrence."""
    p = params(kind, I, H)
    xs, h0, c0, dys = randn(1, B, T, I), randn(2, B, H), randn(3, B, H), randn(4, B, T, H)
    rnn = (torch.nn.GRU if kind == "gru" else torch.nn.LSTM)(I, H, num_layers=1, batch_first=True)
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(torch.tensor(p["w_ih"]))
        rnn.weight_hh_l0.copy_(torch.tensor(p["w_hh"]))
        rnn.bias_ih_l0.copy_(torch.tensor(p["b_ih"]))
        rnn.bias_hh_l0.copy_(torch.tensor(p["b_hh"]))
    xt, h0t, c0t = to_torch(xs, True), to_torch(h0, True), to_torch(c0, True)
    out_t, _ = rnn(xt, h0t[None]) if kind == "gru" else rnn(xt, (h0t[None], c0t[None]))
    (out_t * torch.tensor(dys)).sum().backward()

    A = {k: to_attn(v, True) for k, v in p.items()}
    xa, h0a, c0a = to_attn(xs, True), to_attn(h0, True), to_attn(c0, True)
    x_tm = attn.transpose_01(xa)  # (T, B, I)
    h, c, outs = h0a, c0a, []
    for t in range(T):
        if kind == "gru":
            h = attn.gru_cell(x_tm.select(t), h, A["w_ih"], A["w_hh"], A["b_ih"], A["b_hh"])
        else:
            h, c = attn.lstm_cell(x_tm.select(t), h, c, A["w_ih"], A["w_hh"], A["b_ih"], A["b_hh"])
        outs.append(h)
    out_a = attn.transpose_01(attn.stack_rows(outs))  # (B, T, H)
    attn.backward(attn.sum(attn.mul(out_a, to_attn(dys))))
    case = f"{kind} B={B} I={I} H={H} T={T}"
    op = f"{kind}_cell"
    assert_close(op, case, "outputs", out_a, out_t)
    pairs = [("x", xa, xt), ("h0", h0a, h0t), ("w_ih", A["w_ih"], rnn.weight_ih_l0),
             ("w_hh", A["w_hh"], rnn.weight_hh_l0), ("b_ih", A["b_ih"], rnn.bias_ih_l0),
             ("b_hh", A["b_hh"], rnn.bias_hh_l0)]
    if kind == "lstm":
        pairs.append(("c0", c0a, c0t))
    assert_grads(op, case, pairs)


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_nn_cell_modules(kind):
    I, H, B = 5, 6, 3
    tc = (torch.nn.GRUCell if kind == "gru" else torch.nn.LSTMCell)(I, H)
    ac = (attn.nn.GRUCell if kind == "gru" else attn.nn.LSTMCell)(I, H, seed=2)
    names_a = [n for n, _ in ac.named_parameters()]
    assert names_a == [n for n, _ in tc.named_parameters()]
    for (_, pa), (_, pt) in zip(ac.named_parameters(), tc.named_parameters()):
        assert pa.shape == tuple(pt.shape)
        pa.numpy()[...] = pt.detach().numpy()
    x, h, c, dy = randn(1, B, I), randn(2, B, H), randn(3, B, H), randn(4, B, H)
    xa, xt = to_attn(x, True), to_torch(x, True)
    if kind == "gru":
        ya, yt = ac(xa, to_attn(h)), tc(xt, torch.tensor(h))
    else:
        ya, yt = ac(xa, (to_attn(h), to_attn(c)))[0], tc(xt, (torch.tensor(h), torch.tensor(c)))[0]
    attn.backward(ya, dy)
    yt.backward(torch.tensor(dy))
    case = f"nn.{kind}"
    assert_close(f"{kind}_cell", case, "h'", ya, yt)
    assert_grads(f"{kind}_cell", case, [("x", xa, xt)] + [(n, pa, pt) for (n, pa), (_, pt) in
                                                          zip(ac.named_parameters(), tc.named_parameters())])


def test_gru_shape_error_names_gates():
    with pytest.raises(attn.ShapeError, match=r"gru_cell: 'w_hh' expected \(3H=12, H=4\)"):
        attn.gru_cell(attn.zeros([2, 3]), attn.zeros([2, 4]), attn.zeros([12, 3]), attn.zeros([12, 3]))
