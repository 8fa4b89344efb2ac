"""attn._attn.nn Transformer blocks (attn's native ones; attn.nn's torch-convention layers are in
test_torch_conventions.py) vs torch.nn.TransformerEncoderLayer / TransformerDecoderLayer
(batch_first=True, dropout 0) with one state_dict copied from torch into attn: outputs and
the gradients of the inputs (x, memory) and of every parameter. norm_first True/False, relu
and gelu; padding as key_lengths / memory_lengths (attn) = key_padding_mask (torch, True =
ignore); the decoder's self-attention causal (torch: tgt_mask). Stacks: nn.TransformerEncoder
/ nn.TransformerDecoder with a final LayerNorm (pre-LN), and CausalTransformer = encoder
layers under a causal mask. Finally the KV-cache decoding of TransformerDecoder against
torch's full pass on every prefix."""
import numpy as np
import pytest
import torch

import attn
from parity import assert_close, randn, to_attn, to_torch

OP = "transformer"
D, H, FFN = 16, 4, 24


def copy_torch_into_attn(t_module, a_module, seed):
    """Random non-trivial values for every torch parameter (biases, norm weights included),
    then the same values into attn. Names and order must match."""
    t_params = dict(t_module.named_parameters())
    a_names = list(a_module.state_dict().keys())
    assert a_names == list(t_params.keys())
    values = {}
    with torch.no_grad():
        for i, (name, p) in enumerate(t_params.items()):
            if p.dim() == 1:  # biases and norm parameters start at 0 / 1 in both
                is_norm_weight = name.split(".")[-2].startswith("norm") and name.endswith("weight")
                p.copy_(torch.tensor((1.0 if is_norm_weight else 0.0) + randn(seed + i, *p.shape, scale=0.2)))
            else:  # torch's stacks deep-copy one layer: make the layers differ
                p.add_(torch.tensor(randn(seed + i, *p.shape, scale=0.05)))
            values[name] = p.detach().numpy().copy()
    a_module.load_parameters(values)


def lengths_mask(lengths, S):
    return torch.tensor(np.arange(S)[None, :] >= np.array(lengths)[:, None])  # True = ignore


def causal_mask(T):
    return torch.triu(torch.full((T, T), float("-inf")), diagonal=1)


def compare_grads(case, a_module, t_module, pairs):
    for name, a_t, t_t in pairs:
        assert_close(OP, case, f"d{name}", a_t.grad, t_t.grad)
    a_params = a_module.state_dict()
    for name, p in t_module.named_parameters():
        assert_close(OP, case, f"d{name}", a_params[name].grad, p.grad)


def backward_both(out_a, out_t, seed):
    w = randn(seed, *out_t.shape)
    (out_t * torch.tensor(w)).sum().backward()
    attn.backward(attn.sum(attn.mul(out_a, to_attn(w))))


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("causal", [False, True])
def test_encoder_layer(norm_first, activation, causal):
    torch.manual_seed(0)
    t = torch.nn.TransformerEncoderLayer(D, H, dim_feedforward=FFN, dropout=0.0, activation=activation,
                                         batch_first=True, norm_first=norm_first)
    a = attn._attn.nn.TransformerEncoderLayer(D, H, ffn=FFN, dropout=0.0, norm_first=norm_first, activation=activation)
    copy_torch_into_attn(t, a, 10)
    B, S = 3, 5
    lengths = [5, 2, 4]
    x = randn(1, B, S, D)
    xa, xt = to_attn(x, True), to_torch(x, True)
    out_a = a.forward(xa, to_attn(np.array(lengths, dtype=np.int32)), causal=causal)
    out_t = t(xt, src_mask=causal_mask(S) if causal else None, src_key_padding_mask=lengths_mask(lengths, S))
    case = f"encoder norm_first={norm_first} {activation} causal={causal}"
    assert_close(OP, case, "out", out_a, out_t)
    backward_both(out_a, out_t, 2)
    compare_grads(case, a, t, [("x", xa, xt)])


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_decoder_layer(norm_first, activation):
    torch.manual_seed(0)
    t = torch.nn.TransformerDecoderLayer(D, H, dim_feedforward=FFN, dropout=0.0, activation=activation,
                                         batch_first=True, norm_first=norm_first)
    a = attn._attn.nn.TransformerDecoderLayer(D, H, ffn=FFN, dropout=0.0, norm_first=norm_first, activation=activation)
    copy_torch_into_attn(t, a, 20)
    B, T, S = 2, 4, 6
    mem_lengths = [6, 3]
    x, mem = randn(3, B, T, D), randn(4, B, S, D)
    xa, xt = to_attn(x, True), to_torch(x, True)
    ma, mt = to_attn(mem, True), to_torch(mem, True)
    out_a = a.forward(xa, ma, to_attn(np.array(mem_lengths, dtype=np.int32)))
    out_t = t(xt, mt, tgt_mask=causal_mask(T), memory_key_padding_mask=lengths_mask(mem_lengths, S))
    case = f"decoder norm_first={norm_first} {activation}"
    assert_close(OP, case, "out", out_a, out_t)
    backward_both(out_a, out_t, 5)
    compare_grads(case, a, t, [("x", xa, xt), ("memory", ma, mt)])


def torch_stacks(norm_first, layers):
    enc_layer = torch.nn.TransformerEncoderLayer(D, H, dim_feedforward=FFN, dropout=0.0, batch_first=True,
                                                 norm_first=norm_first)
    dec_layer = torch.nn.TransformerDecoderLayer(D, H, dim_feedforward=FFN, dropout=0.0, batch_first=True,
                                                 norm_first=norm_first)
    enc_norm = torch.nn.LayerNorm(D) if norm_first else None
    dec_norm = torch.nn.LayerNorm(D) if norm_first else None
    return (torch.nn.TransformerEncoder(enc_layer, layers, norm=enc_norm),
            torch.nn.TransformerDecoder(dec_layer, layers, norm=dec_norm))


@pytest.mark.parametrize("norm_first", [False, True])
def test_stacks(norm_first):
    torch.manual_seed(1)
    t_enc, t_dec = torch_stacks(norm_first, 2)
    a_enc = attn.nn.TransformerEncoder(2, D, H, ffn=FFN, dropout=0.0, norm_first=norm_first)
    a_dec = attn.nn.TransformerDecoder(2, D, H, ffn=FFN, dropout=0.0, norm_first=norm_first)
    copy_torch_into_attn(t_enc, a_enc, 30)
    copy_torch_into_attn(t_dec, a_dec, 60)
    B, S, T = 2, 5, 4
    lengths = [5, 3]
    src, tgt = randn(7, B, S, D), randn(8, B, T, D)
    sa, st = to_attn(src, True), to_torch(src, True)
    ta, tt = to_attn(tgt, True), to_torch(tgt, True)
    len_a = to_attn(np.array(lengths, dtype=np.int32))
    mem_a = a_enc.forward(sa, len_a)
    mem_t = t_enc(st, src_key_padding_mask=lengths_mask(lengths, S))
    case = f"stacks norm_first={norm_first}"
    assert_close(OP, case, "memory", mem_a, mem_t)
    out_a = a_dec.forward(ta, mem_a, len_a)
    out_t = t_dec(tt, mem_t, tgt_mask=causal_mask(T), memory_key_padding_mask=lengths_mask(lengths, S))
    assert_close(OP, case, "out", out_a, out_t)
    backward_both(out_a, out_t, 9)
    compare_grads(case, a_dec, t_dec, [("src", sa, st), ("tgt", ta, tt)])
    compare_grads(case, a_enc, t_enc, [])


@pytest.mark.parametrize("norm_first", [False, True])
def test_causal_transformer(norm_first):
    torch.manual_seed(2)
    t_enc, _ = torch_stacks(norm_first, 2)
    a = attn.nn.CausalTransformer(2, D, H, ffn=FFN, dropout=0.0, norm_first=norm_first)
    copy_torch_into_attn(t_enc, a, 90)
    B, T = 2, 5
    lengths = [5, 3]
    x = randn(11, B, T, D)
    xa, xt = to_attn(x, True), to_torch(x, True)
    out_a = a.forward(xa, to_attn(np.array(lengths, dtype=np.int32)))
    out_t = t_enc(xt, mask=causal_mask(T), src_key_padding_mask=lengths_mask(lengths, T))
    case = f"causal norm_first={norm_first}"
    assert_close(OP, case, "out", out_a, out_t)
    backward_both(out_a, out_t, 12)
    compare_grads(case, a, t_enc, [("x", xa, xt)])

    # The KV cache, step by step, against torch's full pass on each prefix.
    cache = a.start(B)
    for step in range(T):
        y = a.step(to_attn(x[:, step:step + 1]), cache)
        with torch.no_grad():
            full = t_enc(torch.tensor(x[:, :step + 1]), mask=causal_mask(step + 1))
        assert_close(OP, case + f" step {step}", "step", y, full[:, step:step + 1])
    assert cache.steps == T and cache.layers[0].self_k.shape == (B, H, T, D // H)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_cache_matches_torch(norm_first):
    torch.manual_seed(3)
    _, t_dec = torch_stacks(norm_first, 2)
    a_dec = attn.nn.TransformerDecoder(2, D, H, ffn=FFN, dropout=0.0, norm_first=norm_first)
    copy_torch_into_attn(t_dec, a_dec, 120)
    B, S, T = 2, 6, 5
    lengths = [6, 2]
    mem, tgt = randn(13, B, S, D), randn(14, B, T, D)
    cache = a_dec.start(to_attn(np.array(lengths, dtype=np.int32)))
    for step in range(T):
        y = a_dec.step(to_attn(tgt[:, step:step + 1]), to_attn(mem), cache)
        with torch.no_grad():
            full = t_dec(torch.tensor(tgt[:, :step + 1]), torch.tensor(mem), tgt_mask=causal_mask(step + 1),
                         memory_key_padding_mask=lengths_mask(lengths, S))
        assert_close(OP, f"decoder cache norm_first={norm_first} step {step}", "step", y, full[:, step:step + 1])
