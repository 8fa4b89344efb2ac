"""attn.models.TransformerSeq2Seq with the pointer-generator vs a PyTorch model written from the
formula (See et al. 2017, eq. 8-9, with OpenNMT-py's Transformer copy attention): torch.nn's
encoder and decoder stacks (pre-LN) with attn's parameters, the last decoder layer written out
to read its cross-attention averaged over heads (a_t) and its output (c_t), then

    p_gen = sigmoid(w . [c_t; s_t; x_t] + b)      s_t the decoder output, x_t the decoder input
    P(w)  = p_gen softmax(s_t E^T)(w) + (1 - p_gen) sum_{i: src_ext_i = w} a_t,i
    out   = log(max(P, attn.POINTER_FLOOR))

over a vocabulary extended with the source's unknown words. Outputs and the gradients of the
gate, the copy layer's cross-attention and the embeddings, for every teacher-forced step."""
import json
import math

import numpy as np
import torch

import attn
from parity import assert_close, randn, to_attn

OP = "transformer_pointer"
V, D, H, FFN, MAX_LEN = 12, 8, 2, 16, 16
UNK = 3


def sinusoid(n, d):
    pe = np.zeros((n, d))
    for p in range(n):
        for j in range(d):
            angle = p / 10000 ** ((j - j % 2) / d)
            pe[p, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return torch.tensor(pe, dtype=torch.float32)


def torch_stacks(params):
    """nn.TransformerEncoder / Decoder (pre-LN, final norm) holding attn's parameters."""
    def layer(cls):
        return cls(D, H, FFN, dropout=0.0, batch_first=True, norm_first=True)
    enc = torch.nn.TransformerEncoder(layer(torch.nn.TransformerEncoderLayer), 1, norm=torch.nn.LayerNorm(D),
                                      enable_nested_tensor=False)
    dec = torch.nn.TransformerDecoder(layer(torch.nn.TransformerDecoderLayer), 2, norm=torch.nn.LayerNorm(D))
    for prefix, module in (("encoder.", enc), ("decoder.", dec)):
        module.load_state_dict({k[len(prefix):]: torch.tensor(v) for k, v in params.items() if k.startswith(prefix)})
    return enc, dec


def reference(params, enc, dec, src, lengths, tgt_in, src_ext, vx, leaves):
    B, S = src.shape
    T = tgt_in.shape[1]
    pe = sinusoid(MAX_LEN, D)
    src_emb, tgt_emb, gate_w, gate_b = (leaves[k] for k in ("src_embedding.weight", "tgt_embedding.weight",
                                                            "pointer_gate.weight", "pointer_gate.bias"))
    ignore = torch.tensor(np.arange(S)[None, :] >= np.array(lengths)[:, None])  # True = padding
    memory = enc(src_emb[torch.tensor(src).long()] * math.sqrt(D) + pe[:S], src_key_padding_mask=ignore)
    x = tgt_emb[torch.tensor(tgt_in).long()] * math.sqrt(D) + pe[:T]  # x_t (B, T, D)
    causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    h = dec.layers[0](x, memory, tgt_mask=causal, memory_key_padding_mask=ignore)
    last = dec.layers[1]  # pre-LN, written out to read its cross-attention
    q = last.norm1(h)
    h = h + last.self_attn(q, q, q, attn_mask=causal, need_weights=False)[0]
    c, a = last.multihead_attn(last.norm2(h), memory, memory, key_padding_mask=ignore, need_weights=True,
                               average_attn_weights=True)  # c_t (B, T, D), a_t (B, T, S)
    h = h + c
    h = h + last.linear2(torch.relu(last.linear1(last.norm3(h))))
    s = dec.norm(h)  # s_t (B, T, D)
    p_gen = torch.sigmoid(torch.cat([c, s, x], dim=-1) @ gate_w.T + gate_b)  # (B, T, 1)
    vocab = torch.softmax(s @ tgt_emb.T, dim=-1)  # tied output: E^T
    mixed = torch.cat([p_gen * vocab, torch.zeros(B, T, vx - V)], dim=-1)
    index = torch.tensor(src_ext).long()[:, None, :].expand(B, T, S)
    mixed = mixed.scatter_add(2, index, (1 - p_gen) * a)
    return torch.log(torch.clamp(mixed, min=attn.POINTER_FLOOR))


def test_transformer_pointer_matches_torch():
    config = {"src_vocab": V, "tgt_vocab": V, "d_model": D, "heads": H, "ffn": FFN, "encoder_layers": 1,
              "decoder_layers": 2, "dropout": 0.0, "max_len": MAX_LEN, "seed": 5, "pointer": True}
    model = attn.models.TransformerSeq2Seq(json.dumps(config))
    # Every parameter moved off its initial value (zero biases, unit norms) so each term counts.
    params = {}
    for i, (name, p) in enumerate(model.state_dict().items()):
        params[name] = p.numpy() + randn(100 + i, *p.shape, scale=0.1)
    model.load_parameters(params)
    model.eval()
    # Row 0: two unknown words (UNK, read as V and V + 1), one twice; row 1 shorter, with padding.
    src = np.array([[UNK, 5, UNK, 7, UNK], [6, UNK, 4, 0, 0]], np.int32)
    src_ext = np.array([[V, 5, V + 1, 7, V], [6, V, 4, 0, 0]], np.int32)
    lengths = [5, 3]
    tgt_in = np.array([[1, 4, UNK, 8], [1, 6, 9, UNK]], np.int32)
    vx = V + 2
    ya = model.logits(to_attn(src), to_attn(np.array(lengths, np.int32)), to_attn(tgt_in), src_ext=to_attn(src_ext),
                      extended_vocab=vx)
    enc, dec = torch_stacks(params)
    leaves = {k: torch.tensor(params[k], requires_grad=True)
              for k in ("src_embedding.weight", "tgt_embedding.weight", "pointer_gate.weight", "pointer_gate.bias")}
    yt = reference(params, enc, dec, src, lengths, tgt_in, src_ext, vx, leaves)
    assert ya.shape == (2, 4, vx)
    assert_close(OP, "teacher-forced", "log P", ya, yt)
    # The mixture sums to 1 over the extended vocabulary (row 1's padding gets no copy mass).
    assert np.allclose(np.exp(ya.numpy()).sum(-1), 1.0, atol=1e-5)
    dy = randn(7, *yt.shape)
    attn.backward(ya, dy)
    yt.backward(torch.tensor(dy))
    a_params = model.state_dict()
    for name, leaf in leaves.items():
        assert_close(OP, "teacher-forced", f"grad {name}", a_params[name].grad, leaf.grad)
    copy_layer = dict(dec.layers[1].multihead_attn.named_parameters())
    for name in ("in_proj_weight", "in_proj_bias", "out_proj.weight"):
        assert_close(OP, "teacher-forced", f"grad copy layer {name}",
                     a_params["decoder.layers.1.multihead_attn." + name].grad, copy_layer[name].grad)
