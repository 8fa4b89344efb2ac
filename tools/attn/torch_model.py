"""A PyTorch version of an attn model, written by `attn export --to torch` (plain torch: no
attn import; the source is tools/attn/torch_model.py, which tests/parity/seq2seq_reference.py
also uses). Its weights are model.safetensors beside this file, under this module's
parameter names:

    import model                      # this file (or importlib on its path)
    net = model.load()                # the module, weights loaded, in eval mode
    logits = net.logits(src, src_lengths, tgt_in)      # (B, T, V); src (B, S) int, PAD = 0
    tokens = net.greedy(src, src_lengths, max_len=50)  # per row: ids up to and including EOS

Token ids: PAD 0, BOS 1, EOS 2. Source rows hold their tokens first, PAD after; lengths (B).
The RNN's dropout is left out (an inference copy); the Transformer's layers use torch's.
"""
import json
import math
import os
import struct

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

# The model's kind ("rnn" | "transformer") and configuration: `attn export` writes them here.
KIND, CONFIG = None, None
PAD, BOS, EOS = 0, 1, 2


def read_safetensors(path):
    """{name: tensor} of a safetensors file (F32 / I32 only; what attn writes)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    dtypes = {"F32": torch.float32, "I32": torch.int32}
    out = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        out[name] = torch.frombuffer(raw, dtype=dtypes[entry["dtype"]]).reshape(entry["shape"]) if raw else \
            torch.zeros(entry["shape"], dtype=dtypes[entry["dtype"]])
    return out


def padding_mask(lengths, S):
    """(B, S) bool, True at the padding (torch's key_padding_mask)."""
    return torch.arange(S)[None, :] >= lengths[:, None]


def greedy_rows(next_logits, B, steps):
    """Greedy decoding: next_logits(ids so far (B, t), BOS first) -> (B, V); per row the
    argmax ids up to and including EOS, at most `steps` (finished rows are still fed)."""
    ys = torch.full((B, 1), BOS, dtype=torch.long)
    rows = [[] for _ in range(B)]
    for _ in range(steps):
        prev = next_logits(ys).argmax(1)
        ys = torch.cat([ys, prev[:, None]], 1)
        for b, row in enumerate(rows):
            if not row or row[-1] != EOS:
                row.append(int(prev[b]))
        if all(row[-1] == EOS for row in rows):
            break
    return rows


# ---- RNN encoder-decoder --------------------------------------------------------------------

class Attention(nn.Module):
    """score(q, keys) -> softmax over the real positions -> context = sum_s a_s values_s.
    bahdanau additive: v^T tanh(W_q q + b + W_k k); additive_normalized: (g v / |v|) for v.
    luong dot: q^T k; scaled_dot: q^T k / sqrt(D); general: q^T W k; concat: v^T tanh(W [q; k]);
    location: (W_a q + b_a)[:S]; multihead: torch's multi-head attention, context (B, D)."""

    def __init__(self, kind, score, D, E, max_src_len, heads):
        super().__init__()
        self.kind, self.score, self.heads = kind, score, heads
        z = torch.zeros
        if kind == "bahdanau":
            self.w_q, self.w_k = nn.Parameter(z(D, D)), nn.Parameter(z(D, E))
            self.bias, self.v = nn.Parameter(z(D)), nn.Parameter(z(D))
            if score == "additive_normalized":
                self.g = nn.Parameter(z(()))
        elif score == "general":
            self.w = nn.Parameter(z(D, E))
        elif score == "concat":
            self.w, self.v = nn.Parameter(z(D, D + E)), nn.Parameter(z(D))
        elif score == "location":
            self.w_a, self.b_a = nn.Parameter(z(max_src_len, D)), nn.Parameter(z(max_src_len))
        elif score == "multihead":
            self.q_proj_weight, self.k_proj_weight = nn.Parameter(z(D, D)), nn.Parameter(z(D, E))
            self.v_proj_weight, self.in_proj_bias = nn.Parameter(z(D, E)), nn.Parameter(z(3 * D))
            self.out_proj = nn.Linear(D, D)

    def scores(self, q, keys):
        """q (B, D), keys (B, S, E) -> (B, S)."""
        if self.kind == "bahdanau":
            v = self.g * self.v / self.v.norm() if self.score == "additive_normalized" else self.v
            return torch.tanh((q @ self.w_q.T + self.bias)[:, None, :] + keys @ self.w_k.T) @ v
        if self.score == "dot":
            return torch.einsum("bd,bsd->bs", q, keys)
        if self.score == "scaled_dot":
            return torch.einsum("bd,bsd->bs", q, keys) / math.sqrt(q.shape[1])
        if self.score == "general":
            return torch.einsum("be,bse->bs", q @ self.w, keys)
        if self.score == "concat":
            D = q.shape[1]
            return torch.tanh((q @ self.w[:, :D].T)[:, None, :] + keys @ self.w[:, D:].T) @ self.v
        return (q @ self.w_a.T + self.b_a)[:, :keys.shape[1]]  # location

    def forward(self, q, values, lengths):
        """q (B, D), values (B, S, E), lengths (B) -> context, weights (B, S) (multihead: (B, H·S))."""
        ignore = padding_mask(lengths, values.shape[1])
        if self.score == "multihead":
            ctx, a = F.multi_head_attention_forward(
                q[None], values.transpose(0, 1), values.transpose(0, 1), q.shape[1], self.heads, None,
                self.in_proj_bias, None, None, False, 0.0, self.out_proj.weight, self.out_proj.bias,
                training=False, key_padding_mask=ignore, need_weights=True, use_separate_proj_weight=True,
                q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
                v_proj_weight=self.v_proj_weight, average_attn_weights=False)
            return ctx[0], a.reshape(a.shape[0], -1)
        a = torch.softmax(self.scores(q, values).masked_fill(ignore, float("-inf")), dim=1)
        return torch.einsum("bs,bse->be", a, values), a


class Encoder(nn.Module):
    """Embedding -> GRU / LSTM over the packed source; bidirectional: the decoder's initial
    state per layer is tanh(bridge([h_forward; h_backward]))."""

    def __init__(self, c):
        super().__init__()
        H, L = c["hidden"], c["layers"]
        self.lstm, self.bidirectional = c["encoder"] == "lstm", c["bidirectional"]
        self.embedding = nn.Embedding(c["vocab"], c["emb"], padding_idx=PAD)
        self.rnn = (nn.LSTM if self.lstm else nn.GRU)(c["emb"], H, num_layers=L, bidirectional=self.bidirectional)
        if self.bidirectional:
            self.bridge = nn.ModuleDict()
            for l in range(L):
                self.bridge[f"h_l{l}"] = nn.Linear(2 * H, H)
                if self.lstm:
                    self.bridge[f"c_l{l}"] = nn.Linear(2 * H, H)

    def forward(self, src, lengths):
        """src (B, S), lengths (B) -> states (B, S, E), [h per layer], [c per layer]."""
        packed = pack_padded_sequence(self.embedding(src.T), lengths.cpu(), enforce_sorted=False)
        out, state = self.rnn(packed)
        out, _ = pad_packed_sequence(out, total_length=src.shape[1])          # (S, B, E)
        h_n, c_n = state if self.lstm else (state, None)                      # (L·dirs, B, H)
        hs, cs = [], []
        for l in range(self.rnn.num_layers):
            if self.bidirectional:
                hs.append(torch.tanh(self.bridge[f"h_l{l}"](torch.cat([h_n[2 * l], h_n[2 * l + 1]], 1))))
                if self.lstm:
                    cs.append(torch.tanh(self.bridge[f"c_l{l}"](torch.cat([c_n[2 * l], c_n[2 * l + 1]], 1))))
            else:
                hs.append(h_n[l])
                if self.lstm:
                    cs.append(c_n[l])
        return out.transpose(0, 1), hs, cs


class Decoder(nn.Module):
    """One GRU / LSTM cell per layer, stepped over the target.
    none:     s_t = RNN(emb(y_{t-1}), s_{t-1});                        logits = W_o s_t
    bahdanau: c_t = attend(s_{t-1}); s_t = RNN([emb; c_t], s_{t-1});  logits = W_o [s_t; c_t; emb]
    luong:    s_t = RNN([emb; h~_{t-1}], s_{t-1}) (input feeding); c_t = attend(s_t);
              h~_t = tanh(W_c [c_t; s_t]);                               logits = W_o h~_t"""

    def __init__(self, c, E):
        super().__init__()
        H, L, emb = c["hidden"], c["layers"], c["emb"]
        self.kind, self.hidden = c["attention"], H
        self.lstm = c["encoder"] == "lstm"
        self.feeding = self.kind == "luong" and c["input_feeding"]
        self.embedding = nn.Embedding(c["vocab"], emb, padding_idx=PAD)
        first = emb + (E if self.kind == "bahdanau" else H if self.feeding else 0)
        cell = nn.LSTMCell if self.lstm else nn.GRUCell
        self.cells = nn.ModuleList([cell(first if l == 0 else H, H) for l in range(L)])
        if self.kind != "none":
            self.attention = Attention(self.kind, c["score"], H, E, c["max_src_len"], c["heads"])
        if self.kind == "luong":
            self.linear_out = nn.Linear((H if c["score"] == "multihead" else E) + H, H, bias=False)
        self.out = nn.Linear(H + E + emb if self.kind == "bahdanau" else H, c["vocab"])

    def step(self, emb_prev, state, values, lengths):
        """One step -> logits (B, V), attention weights or None; updates state."""
        x, ctx, weights = emb_prev, None, None
        if self.kind == "bahdanau":
            ctx, weights = self.attention(state["h"][-1], values, lengths)
            x = torch.cat([emb_prev, ctx], 1)
        elif self.feeding:
            x = torch.cat([emb_prev, state["feed"]], 1)
        for l, cell in enumerate(self.cells):
            if self.lstm:
                state["h"][l], state["c"][l] = cell(x, (state["h"][l], state["c"][l]))
            else:
                state["h"][l] = cell(x, state["h"][l])
            x = state["h"][l]
        if self.kind == "bahdanau":
            return self.out(torch.cat([x, ctx, emb_prev], 1)), weights
        if self.kind == "luong":
            ctx, weights = self.attention(x, values, lengths)
            feature = torch.tanh(self.linear_out(torch.cat([ctx, x], 1)))
            if self.feeding:
                state["feed"] = feature
            return self.out(feature), weights
        return self.out(x), None


class RnnSeq2Seq(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.encoder = Encoder(c)
        self.decoder = Decoder(c, c["hidden"] * (2 if c["bidirectional"] else 1))

    def start(self, src, src_lengths):
        values, hs, cs = self.encoder(src, src_lengths)
        feed = torch.zeros(src.shape[0], self.decoder.hidden) if self.decoder.feeding else None
        return values, {"h": hs, "c": cs, "feed": feed}

    def logits(self, src, src_lengths, tgt_in):
        """Teacher forcing: src (B, S), src_lengths (B), tgt_in (B, T) -> (B, T, V)."""
        values, state = self.start(src, src_lengths)
        emb = self.decoder.embedding(tgt_in)
        steps = [self.decoder.step(emb[:, t], state, values, src_lengths)[0] for t in range(tgt_in.shape[1])]
        return torch.stack(steps, 1)

    @torch.no_grad()
    def greedy(self, src, src_lengths, max_len):
        """Per row: the argmax ids up to and including EOS (at most max_len)."""
        values, state = self.start(src, src_lengths)

        def next_logits(prev):
            return self.decoder.step(self.decoder.embedding(prev[:, -1]), state, values, src_lengths)[0]
        return greedy_rows(next_logits, src.shape[0], max_len)


# ---- Transformer encoder-decoder ------------------------------------------------------------

class Positions(nn.Module):
    """Sinusoidal PE(p, 2i) = sin(p / 10000^(2i/D)), PE(p, 2i+1) = cos(...), or a learned table."""

    def __init__(self, kind, max_len, D):
        super().__init__()
        if kind == "learned":
            self.weight = nn.Parameter(torch.zeros(max_len, D))
            return
        p = torch.arange(max_len, dtype=torch.float64)[:, None]
        j = torch.arange(D)
        angle = p / torch.pow(10000.0, (j - j % 2).double() / D)
        table = torch.where(j % 2 == 0, torch.sin(angle), torch.cos(angle)).float()
        self.register_buffer("weight", table, persistent=False)

    def forward(self, x):  # x (B, T, D)
        return x + self.weight[:x.shape[1]]


class TransformerSeq2Seq(nn.Module):
    """sqrt(D) · embedding + positions -> torch's TransformerEncoder / TransformerDecoder
    (pre-LN adds the final LayerNorm "norm") -> generator, or the tied target embedding."""

    def __init__(self, c):
        super().__init__()
        D = c["d_model"]
        self.max_len, self.scale = c["max_len"], math.sqrt(D)
        self.shared = c["share_embeddings"]
        if self.shared:  # one table, registered once ("embedding.weight")
            self.embedding = nn.Embedding(c["tgt_vocab"], D)
        else:
            self.src_embedding, self.tgt_embedding = nn.Embedding(c["src_vocab"], D), nn.Embedding(c["tgt_vocab"], D)
        self.positions = Positions(c["positions"], c["max_len"], D)
        layer = dict(d_model=D, nhead=c["heads"], dim_feedforward=c["ffn"], dropout=c["dropout"],
                     activation=c["activation"], batch_first=True, norm_first=c["norm_first"])
        final = (lambda: nn.LayerNorm(D)) if c["norm_first"] else (lambda: None)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(**layer), c["encoder_layers"], norm=final(),
                                             enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(**layer), c["decoder_layers"], norm=final())
        self.dropout = nn.Dropout(c["dropout"])
        self.generator = None if c["tie_output"] else nn.Linear(D, c["tgt_vocab"])

    def embed(self, side, ids):
        embedding = self.embedding if self.shared else getattr(self, side + "_embedding")
        return self.dropout(self.positions(embedding(ids) * self.scale))

    def logits(self, src, src_lengths, tgt_in):
        """Teacher forcing: src (B, S), src_lengths (B), tgt_in (B, T) -> (B, T, V)."""
        ignore = padding_mask(src_lengths, src.shape[1])
        memory = self.encoder(self.embed("src", src), src_key_padding_mask=ignore)
        T = tgt_in.shape[1]
        causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        h = self.decoder(self.embed("tgt", tgt_in), memory, tgt_mask=causal,
                         memory_key_padding_mask=ignore)
        if self.generator is not None:
            return self.generator(h)
        return h @ (self.embedding if self.shared else self.tgt_embedding).weight.T

    @torch.no_grad()
    def greedy(self, src, src_lengths, max_len):
        """Per row: the argmax ids up to and including EOS (at most min(max_len, positions)).
        Each step recomputes the whole prefix (no key/value cache: short and plain)."""
        return greedy_rows(lambda ys: self.logits(src, src_lengths, ys)[:, -1], src.shape[0], min(max_len, self.max_len))


def build(kind=None, config=None):
    kind, config = kind or KIND, config or CONFIG
    return RnnSeq2Seq(config) if kind == "rnn" else TransformerSeq2Seq(config)


def load(path=os.path.join(os.path.dirname(os.path.abspath(__file__)), "model.safetensors")):
    """The model with the exported weights (strict names and shapes), in eval mode."""
    net = build()
    net.load_state_dict(read_safetensors(path))
    return net.eval()
