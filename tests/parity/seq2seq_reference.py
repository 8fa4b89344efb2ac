"""A straightforward PyTorch re-implementation of attn.models.Seq2Seq
(include/attn/models/seq2seq.h, src/models/{encoder,decoder,seq2seq}.cpp), written from the
documented equations with stock torch modules, for whole-model parity tests.

  encoder   nn.Embedding(padding_idx=PAD) -> nn.GRU / nn.LSTM (layers, bidirectional) over a
            packed sequence (pack_padded_sequence, so padding never changes a result; outputs
            at padded positions are 0); bidirectional: decoder initial state per layer
            tanh(bridge_h_l{k}([h_fwd; h_bwd])) (and bridge_c for the LSTM cell).
  decoder   one nn.GRUCell / nn.LSTMCell per layer, D = H, stepped over the target:
    none      s_t = RNN(emb(y_{t-1}), s_{t-1});                         logits = W_o s_t
    bahdanau  c_t = attend(s_{t-1}^{top}); s_t = RNN([emb; c_t], s_{t-1}); logits = W_o [s_t; c_t; emb]
    luong     s_t = RNN([emb; h~_{t-1}], s_{t-1}) (input feeding; emb only without, h~_0 = 0);
              c_t = attend(s_t); h~_t = tanh(W_c [c_t; s_t]) (no bias);  logits = W_o h~_t
  scores    additive             v^T tanh(W_q q + b + W_k k)
            additive_normalized  (g v / |v|)^T tanh(W_q q + b + W_k k)
            dot / general / concat   q^T k / q^T W k / v^T tanh(W [q; k])
            location             (W_a q + b_a)[:S]
            scaled_dot           q^T k / sqrt(D)
            multihead            F.multi_head_attention_forward (separate q/k/v projections,
                                 in_proj_bias, out_proj), context size D, weights (B, H·S)
            then softmax over the real positions s < length, c = sum_s a_s values_s.
  loss      cross entropy, mean over the non-PAD target tokens.

Parameters carry the attn names: `attn_names()` maps each attn parameter name to the torch
tensor that plays its role, so weights are copied (and gradients compared) by name.
"""
import json
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

PAD, BOS, EOS = 0, 1, 2

DEFAULTS = dict(encoder="gru", layers=1, bidirectional=False, emb=64, hidden=256, dropout=0.0,
                attention="bahdanau", score="", heads=4, window=10, input_feeding=True, vocab=32, max_src_len=128,
                seed=1)


def full_config(config):
    c = dict(DEFAULTS)
    c.update(json.loads(config) if isinstance(config, str) else config)
    if not c["score"]:
        c["score"] = {"bahdanau": "additive", "luong": "general"}.get(c["attention"], "none")
    if c["score"] in ("local_m", "local_p", "hard"):
        raise ValueError(f"the reference does not implement score '{c['score']}'")
    if c["dropout"] != 0.0:
        raise ValueError("the reference has no dropout (it would need attn's random stream)")
    return c


class Attention(nn.Module):
    """The decoder's scoring module: parameters named as attn's decoder.attention.*"""

    def __init__(self, kind, score, D, E, max_src_len, heads=1):
        super().__init__()
        self.kind, self.score = kind, score
        A = D
        z = torch.zeros
        if kind == "bahdanau":
            self.w_q, self.w_k = nn.Parameter(z(A, D)), nn.Parameter(z(A, E))
            self.bias, self.v = nn.Parameter(z(A)), nn.Parameter(z(A))
            if score == "additive_normalized":
                self.g = nn.Parameter(z(()))
        elif score == "general":
            self.w = nn.Parameter(z(D, E))
        elif score == "concat":
            self.w, self.v = nn.Parameter(z(A, D + E)), nn.Parameter(z(A))
        elif score == "location":
            self.w_a, self.b_a = nn.Parameter(z(max_src_len, D)), nn.Parameter(z(max_src_len))
        elif score == "multihead":
            # torch.nn.MultiheadAttention(D, H, kdim=E, vdim=E)'s parameters, always with
            # separate projections (torch packs them into in_proj_weight when E == D).
            self.heads = heads
            self.q_proj_weight, self.k_proj_weight = nn.Parameter(z(D, D)), nn.Parameter(z(D, E))
            self.v_proj_weight, self.in_proj_bias = nn.Parameter(z(D, E)), nn.Parameter(z(3 * D))
            self.out_proj = nn.Linear(D, D)

    def scores(self, q, keys):
        """q (B, D), keys (B, S, E) -> e (B, S)."""
        S = keys.shape[1]
        if self.kind == "bahdanau":
            v = self.v
            if self.score == "additive_normalized":
                v = self.g * v / v.norm()
            u = q @ self.w_q.T + self.bias                                   # (B, A)
            return torch.tanh(u[:, None, :] + keys @ self.w_k.T) @ v         # (B, S)
        if self.score == "dot":
            return torch.einsum("bd,bsd->bs", q, keys)
        if self.score == "scaled_dot":
            return torch.einsum("bd,bsd->bs", q, keys) / math.sqrt(q.shape[1])
        if self.score == "general":
            return torch.einsum("be,bse->bs", q @ self.w, keys)
        if self.score == "concat":
            D = q.shape[1]
            wq, wk = self.w[:, :D], self.w[:, D:]
            return torch.tanh((q @ wq.T)[:, None, :] + keys @ wk.T) @ self.v
        if self.score == "location":
            return (q @ self.w_a.T + self.b_a)[:, :S]
        raise ValueError(self.score)

    def forward(self, q, values, lengths):
        """-> context (B, E), weights (B, S)."""
        S = values.shape[1]
        keep = torch.arange(S)[None, :] < lengths[:, None]
        if self.score == "multihead":
            D = q.shape[1]
            ctx, a = F.multi_head_attention_forward(
                q[None], values.transpose(0, 1), values.transpose(0, 1), D, self.heads, None, self.in_proj_bias,
                None, None, False, 0.0, self.out_proj.weight, self.out_proj.bias, training=False,
                key_padding_mask=~keep, need_weights=True, use_separate_proj_weight=True,
                q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
                v_proj_weight=self.v_proj_weight, average_attn_weights=False)
            return ctx[0], a.reshape(a.shape[0], -1)                         # (B, D), (B, H·S)
        e = self.scores(q, values)
        keep = torch.arange(S)[None, :] < lengths[:, None]
        a = torch.softmax(e.masked_fill(~keep, float("-inf")), dim=1)
        return torch.einsum("bs,bse->be", a, values), a


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, L = c["hidden"], c["layers"]
        self.lstm = c["encoder"] == "lstm"
        self.embedding = nn.Embedding(c["vocab"], c["emb"], padding_idx=PAD)
        rnn = nn.LSTM if self.lstm else nn.GRU
        self.rnn = rnn(c["emb"], H, num_layers=L, bidirectional=c["bidirectional"])
        self.bidirectional = c["bidirectional"]
        if self.bidirectional:
            self.bridge = nn.ModuleDict()
            for l in range(L):
                self.bridge[f"h_l{l}"] = nn.Linear(2 * H, H)
                if self.lstm:
                    self.bridge[f"c_l{l}"] = nn.Linear(2 * H, H)

    def forward(self, src, lengths):
        """src (B, S) long, lengths (B) long -> outputs (B, S, E), [h per layer], [c per layer]."""
        S = src.shape[1]
        x = self.embedding(src.T)                                            # (S, B, emb)
        packed = pack_padded_sequence(x, lengths, enforce_sorted=False)
        out, state = self.rnn(packed)
        out, _ = pad_packed_sequence(out, total_length=S)                    # (S, B, E), 0 at padding
        h_n, c_n = state if self.lstm else (state, None)                     # (L·dirs, B, H)
        L = self.rnn.num_layers
        hs, cs = [], []
        for l in range(L):
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
    def __init__(self, c, E):
        super().__init__()
        H, L, emb = c["hidden"], c["layers"], c["emb"]
        self.c = c
        self.kind = c["attention"]
        self.lstm = c["encoder"] == "lstm"
        self.feeding = self.kind == "luong" and c["input_feeding"]
        self.embedding = nn.Embedding(c["vocab"], emb, padding_idx=PAD)
        in0 = emb + (E if self.kind == "bahdanau" else H if self.feeding else 0)
        cell = nn.LSTMCell if self.lstm else nn.GRUCell
        self.cells = nn.ModuleList([cell(in0 if l == 0 else H, H) for l in range(L)])
        if self.kind != "none":
            self.attention = Attention(self.kind, c["score"], H, E, c["max_src_len"], c["heads"])
        if self.kind == "luong":
            context = H if c["score"] == "multihead" else E
            self.linear_out = nn.Linear(context + H, H, bias=False)
        features = H + E + emb if self.kind == "bahdanau" else H
        self.out = nn.Linear(features, c["vocab"])

    def init_state(self, hs, cs, B):
        return {"h": list(hs), "c": list(cs),
                "feed": torch.zeros(B, self.c["hidden"]) if self.feeding else None}

    def step(self, emb_prev, state, values, lengths):
        """One step: -> logits (B, V), attention weights (B, S) or None. Updates state."""
        x, ctx, weights = emb_prev, None, None
        if self.kind == "bahdanau":
            ctx, weights = self.attention(state["h"][-1], values, lengths)  # queries with s_{t-1}
            x = torch.cat([emb_prev, ctx], 1)
        elif self.feeding:
            x = torch.cat([emb_prev, state["feed"]], 1)
        for l, cell in enumerate(self.cells):
            if self.lstm:
                state["h"][l], state["c"][l] = cell(x, (state["h"][l], state["c"][l]))
            else:
                state["h"][l] = cell(x, state["h"][l])
            x = state["h"][l]
        top = x
        if self.kind == "bahdanau":
            return self.out(torch.cat([top, ctx, emb_prev], 1)), weights
        if self.kind == "luong":
            ctx, weights = self.attention(top, values, lengths)            # queries with s_t
            feature = torch.tanh(self.linear_out(torch.cat([ctx, top], 1)))
            if self.feeding:
                state["feed"] = feature
            return self.out(feature), weights
        return self.out(top), None


class Seq2SeqRef(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c = full_config(config)
        self.encoder = Encoder(self.c)
        E = self.c["hidden"] * (2 if self.c["bidirectional"] else 1)
        self.decoder = Decoder(self.c, E)

    # ---- names ----------------------------------------------------------------------------

    def attn_names(self):
        """{attn parameter name: torch Parameter}, covering every torch parameter once."""
        out = {}
        for name, p in self.named_parameters():
            if name.startswith("decoder.cells."):
                _, _, l, kind = name.split(".")                    # decoder.cells.{l}.weight_ih
                name = f"decoder.rnn.{kind}_l{l}"
            out[name] = p
        assert len(out) == len(list(self.parameters()))
        return out

    def load_named(self, named):
        """Copies {attn name: array} into the parameters; the name sets must match exactly."""
        params = self.attn_names()
        missing, extra = sorted(set(params) - set(named)), sorted(set(named) - set(params))
        assert not missing and not extra, f"parameter names differ: torch only {missing}, attn only {extra}"
        with torch.no_grad():
            for name, p in params.items():
                value = torch.as_tensor(np.array(named[name], dtype=np.float32))
                assert tuple(value.shape) == tuple(p.shape), f"{name}: attn {tuple(value.shape)} vs torch {tuple(p.shape)}"
                p.copy_(value)

    # ---- the model ------------------------------------------------------------------------

    @staticmethod
    def _long(x):
        return torch.as_tensor(np.asarray(x)).long()

    def logits(self, src, src_lengths, tgt_in):
        """-> logits (T, B, V), time-major, like attn."""
        src, lengths, tgt_in = self._long(src), self._long(src_lengths), self._long(tgt_in)
        values, hs, cs = self.encoder(src, lengths)
        B, T = tgt_in.shape
        emb = self.decoder.embedding(tgt_in.T)                              # (T, B, emb)
        state = self.decoder.init_state(hs, cs, B)
        steps = [self.decoder.step(emb[t], state, values, lengths)[0] for t in range(T)]
        return torch.stack(steps)

    def loss(self, src, src_lengths, tgt_in, tgt_out):
        logits = self.logits(src, src_lengths, tgt_in)
        T, B, V = logits.shape
        target = self._long(tgt_out).T.reshape(-1)
        return F.cross_entropy(logits.reshape(T * B, V), target, ignore_index=PAD)

    @torch.no_grad()
    def greedy(self, src, src_lengths, max_len):
        """-> (tokens per row up to and including EOS, weights per row per step, margins):
        attn's loop (finished rows keep being fed their argmax). margins: the smallest
        top-1 minus top-2 logit gap of any emitted token, to tell a real disagreement
        from a float tie."""
        src, lengths = self._long(src), self._long(src_lengths)
        values, hs, cs = self.encoder(src, lengths)
        B = src.shape[0]
        state = self.decoder.init_state(hs, cs, B)
        prev = torch.full((B,), BOS, dtype=torch.long)
        tokens, weights = [[] for _ in range(B)], [[] for _ in range(B)]
        finished, margin = [False] * B, float("inf")
        for _ in range(max_len):
            if all(finished):
                break
            logits, w = self.decoder.step(self.decoder.embedding(prev), state, values, lengths)
            prev = logits.argmax(1)
            top2 = logits.topk(2, dim=1).values
            for b in range(B):
                if finished[b]:
                    continue
                margin = min(margin, float(top2[b, 0] - top2[b, 1]))
                tokens[b].append(int(prev[b]))
                if w is not None:
                    weights[b].append(w[b].numpy().copy())
                if int(prev[b]) == EOS:
                    finished[b] = True
        return tokens, weights, margin
