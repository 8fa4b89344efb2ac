"""A straightforward PyTorch re-implementation of attn.models.Seq2Seq
(include/attn/models/seq2seq.h, src/models/{encoder,decoder,seq2seq}.cpp), written from the
documented equations with stock torch modules, for whole-model parity tests. The modules
(Encoder, Decoder, Attention: embedding, GRU/LSTM over the packed source, the bridge, the
decoder cells, every score) are those of tools/attn/torch_model.py, the file
`attn export --to torch` writes, so this suite checks the exported model too; this file adds
attn's names, numpy inputs, the loss and a greedy loop that reports its logit margins.

Parameters carry the attn names: `attn_names()` maps each attn parameter name to the torch
tensor that plays its role, so weights are copied (and gradients compared) by name.
"""
import importlib.util
import json
import os

import numpy as np
import torch
import torch.nn.functional as F

_spec = importlib.util.spec_from_file_location(
    "attn_torch_model", os.path.join(os.path.dirname(__file__), "..", "..", "tools", "attn", "torch_model.py"))
torch_model = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(torch_model)

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


class Seq2SeqRef(torch_model.RnnSeq2Seq):
    def __init__(self, config):
        self.c = full_config(config)
        super().__init__(self.c)

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
        return super().logits(self._long(src), self._long(src_lengths), self._long(tgt_in)).transpose(0, 1)

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
        values, state = self.start(src, lengths)
        B = src.shape[0]
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
