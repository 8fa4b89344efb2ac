#!/usr/bin/python3
"""The PyTorch peer of `attn bench`: the same models, the same work, the same JSON keys.

    /usr/bin/python3 bench/torch_peer.py seq2seq --attention bahdanau --batch 64 --emb 64 \
        --hidden 256 --vocab 32 --len 40 --steps 20 --threads 2 --json
    /usr/bin/python3 bench/torch_peer.py attention --kind mha --batch 1 --heads 8 --len 4096 \
        --dim 256 --threads 2 --json

Written against Debian's python3-torch (1.13, CPU). Each model is written the way a PyTorch
user would write it (nn.GRU over whole sequences where the inputs are known ahead, GRUCell
loops where they are not, composed attention), computing exactly what attn's
models::Seq2Seq computes (see docs/performance.md, "Same model both sides").
"""
import argparse
import json
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, BOS, EOS, FIRST_SYMBOL, VOCAB = 0, 1, 2, 3, 32


def proc_status_mb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return -1.0


def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


# ---- seq2seq ---------------------------------------------------------------------------------


def forward_flops(attention, B, S, dec_steps, M, H, V):
    """Same count as seq2seq_forward_flops in tools/attn/cmd_bench.cpp."""
    E = A = H
    G = 3 * H
    encoder = 2 * S * B * M * G + 2 * S * B * H * G
    keys = 0.0
    per_step = 2 * B * H * G
    out_features = H
    if attention == "bahdanau":
        keys = 2 * B * S * E * A
        per_step += 2 * B * H * A + 2 * B * S * A + 2 * B * S * E + 2 * B * (M + E) * G
        out_features = H + E + M
    elif attention == "luong":
        per_step += 2 * B * (M + H) * G + 2 * B * H * E + 2 * B * S * E + 2 * B * S * E + 2 * B * (E + H) * H
    else:
        per_step += 2 * B * M * G
    return encoder + keys + dec_steps * per_step + 2 * dec_steps * B * out_features * V


class Seq2Seq(nn.Module):
    """attn's models::Seq2Seq (1 layer, unidirectional GRU encoder, E = D = A = H):
      none      s_t = GRU(emb(y_{t-1}), s_{t-1});                     logits = W_o s_t + b
      bahdanau  c_t = attend(s_{t-1}); s_t = GRU([emb; c_t], s_{t-1});  logits = W_o [s_t; c_t; emb] + b
                e_s = vᵀ tanh(W_q s_{t-1} + W_k h_s + bias)
      luong     s_t = GRU([emb; h̃_{t-1}], s_{t-1}) (input feeding, h̃_0 = 0); e_s = s_tᵀ W h_s;
                h̃_t = tanh(W_c [c_t; s_t]) (no bias);                logits = W_o h̃_t + b
    The decoder starts from the encoder's final state."""

    def __init__(self, attention, M, H, V):
        super().__init__()
        self.attention, self.H, self.V = attention, H, V
        E = A = H
        self.enc_emb = nn.Embedding(V, M, padding_idx=PAD)
        self.enc_rnn = nn.GRU(M, H)
        self.dec_emb = nn.Embedding(V, M, padding_idx=PAD)
        if attention == "none":
            self.dec_rnn = nn.GRU(M, H)  # the whole teacher-forced sequence in one call
            self.out = nn.Linear(H, V)
        elif attention == "bahdanau":
            self.dec_cell = nn.GRUCell(M + E, H)
            self.w_q = nn.Parameter(nn.init.xavier_uniform_(torch.empty(A, H)))
            self.w_k = nn.Parameter(nn.init.xavier_uniform_(torch.empty(A, E)))
            self.bias = nn.Parameter(torch.zeros(A))
            self.v = nn.Parameter(nn.init.xavier_uniform_(torch.empty(1, A)).view(A))
            self.out = nn.Linear(H + E + M, V)
        else:  # luong general with input feeding
            self.dec_cell = nn.GRUCell(M + H, H)
            self.w = nn.Parameter(nn.init.xavier_uniform_(torch.empty(H, E)))
            self.linear_out = nn.Linear(E + H, H, bias=False)
            self.out = nn.Linear(H, V)

    def encode(self, src, src_lengths):
        # src (S, B) time-major; every row has length S in this benchmark, so no packing is
        # needed (attn's packed encoder takes its all-rows-real path too).
        enc_out, h = self.enc_rnn(self.enc_emb(src))  # (S, B, E), (1, B, H)
        memory = enc_out.transpose(0, 1)  # (B, S, E)
        S = memory.shape[1]
        mask = torch.arange(S)[None, :] < src_lengths[:, None]  # (B, S) keep
        keys = memory @ self.w_k.t() if self.attention == "bahdanau" else None  # (B, S, A), once per batch
        return memory, keys, mask, h[0]

    def attend(self, query, memory, keys, mask):
        if self.attention == "bahdanau":
            u = query @ self.w_q.t() + self.bias  # (B, A)
            scores = torch.tanh(keys + u[:, None, :]) @ self.v  # (B, S)
        else:
            scores = torch.bmm(memory, (query @ self.w)[:, :, None])[:, :, 0]  # (B, S)
        weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
        return torch.bmm(weights[:, None, :], memory)[:, 0, :]  # (B, E)

    def step(self, emb, s, feed, memory, keys, mask):
        """One decoder step; returns (features for the output layer, s_t, feed)."""
        if self.attention == "none":
            s = self.dec_rnn(emb[None], s[None])[1][0]
            return s, s, feed
        if self.attention == "bahdanau":
            c = self.attend(s, memory, keys, mask)  # queried with s_{t-1}
            s = self.dec_cell(torch.cat([emb, c], dim=1), s)
            return torch.cat([s, c, emb], dim=1), s, feed
        s = self.dec_cell(torch.cat([emb, feed], dim=1), s)
        c = self.attend(s, memory, keys, mask)
        feed = torch.tanh(self.linear_out(torch.cat([c, s], dim=1)))
        return feed, s, feed

    def logits(self, src, src_lengths, tgt_in):
        """src (S, B), tgt_in (T, B) time-major -> logits (T, B, V)."""
        memory, keys, mask, s = self.encode(src, src_lengths)
        emb_all = self.dec_emb(tgt_in)  # (T, B, M)
        if self.attention == "none":
            return self.out(self.dec_rnn(emb_all, s[None])[0])
        feed = s.new_zeros(s.shape) if self.attention == "luong" else None
        features = []
        for t in range(emb_all.shape[0]):
            f, s, feed = self.step(emb_all[t], s, feed, memory, keys, mask)
            features.append(f)
        return self.out(torch.stack(features))  # one GEMM over T·B rows, as attn

    @torch.no_grad()
    def greedy(self, src, src_lengths, max_len):
        """Greedy decoding; stops early only when every row has produced EOS (as attn).
        Returns the number of steps run."""
        memory, keys, mask, s = self.encode(src, src_lengths)
        B = src.shape[1]
        prev = torch.full((B,), BOS, dtype=torch.long)
        finished = torch.zeros(B, dtype=torch.bool)
        feed = s.new_zeros(s.shape) if self.attention == "luong" else None
        steps = 0
        for _ in range(max_len):
            emb = self.dec_emb(prev)
            f, s, feed = self.step(emb, s, feed, memory, keys, mask)
            prev = self.out(f).argmax(dim=1)
            steps += 1
            finished |= prev == EOS
            if bool(finished.all()):
                break
        return steps


def copy_batch(gen, B, L):
    """A fixed-length copy batch, time-major: src (L, B), tgt_in (L+1, B), tgt_out (L+1, B)."""
    src = torch.randint(FIRST_SYMBOL, VOCAB, (L, B), generator=gen)
    tgt_in = torch.cat([torch.full((1, B), BOS, dtype=torch.long), src])
    tgt_out = torch.cat([src, torch.full((1, B), EOS, dtype=torch.long)])
    return src, torch.full((B,), L, dtype=torch.long), tgt_in, tgt_out


def bench_seq2seq(a):
    if a.attention not in ("none", "bahdanau", "luong"):
        sys.exit(f"torch_peer: unknown attention '{a.attention}' (valid: none, bahdanau, luong)")
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed)
    model = Seq2Seq(a.attention, a.emb, a.hidden, a.vocab)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    batches = [copy_batch(gen, a.batch, a.len) for _ in range(a.warmup + a.steps)]
    greedy_batch = copy_batch(gen, a.batch, a.len)
    V = a.vocab
    t_fwd = t_bwd = t_opt = train_seconds = 0.0
    loss_value = 0.0
    model.train()
    for i, (src, lengths, tgt_in, tgt_out) in enumerate(batches):
        t0 = time.perf_counter()
        logits = model.logits(src, lengths, tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, V), tgt_out.reshape(-1), ignore_index=PAD)
        loss_value = loss.item()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        t3 = time.perf_counter()
        if i >= a.warmup:
            t_fwd += t1 - t0
            t_bwd += t2 - t1
            t_opt += t3 - t2
            train_seconds += t3 - t0

    model.eval()
    src, lengths, _, _ = greedy_batch
    greedy_steps = 0
    greedy_seconds = 0.0
    for r in range(1 + a.greedy_reps):
        t0 = time.perf_counter()
        n = model.greedy(src, lengths, a.len + 1)
        s = time.perf_counter() - t0
        if r > 0 or a.greedy_reps == 0:
            greedy_seconds += s
            greedy_steps += n

    B, S, T = a.batch, a.len, a.len + 1
    train_flops = 3 * forward_flops(a.attention, B, S, T, a.emb, a.hidden, V)
    runs = a.greedy_reps if a.greedy_reps else 1
    mean_steps = greedy_steps / runs
    greedy_flops = forward_flops(a.attention, B, S, mean_steps, a.emb, a.hidden, V) * runs
    out = {
        "impl": "torch",
        "bench": "seq2seq",
        "attention": a.attention,
        "train_tokens_per_s": a.steps * B * T / train_seconds,
        "greedy_tokens_per_s": B * greedy_steps / greedy_seconds,
        "gflops_per_s": train_flops * a.steps / train_seconds / 1e9,
        "greedy_gflops_per_s": greedy_flops / greedy_seconds / 1e9,
        "train_flops_per_step": train_flops,
        "train_flops_per_token": train_flops / (B * T),
        "steps": a.steps,
        "warmup": a.warmup,
        "seconds": train_seconds,
        "step_ms": 1e3 * train_seconds / a.steps,
        "phase_ms_per_step": {"forward": 1e3 * t_fwd / a.steps, "backward": 1e3 * t_bwd / a.steps,
                              "clip_adam": 1e3 * t_opt / a.steps},
        "greedy_reps": a.greedy_reps,
        "greedy_seconds": greedy_seconds,
        "greedy_steps_per_rep": mean_steps,
        "final_loss": loss_value,
        "threads": torch.get_num_threads(),
        "parameters": sum(p.numel() for p in model.parameters()),
        "config": {"batch": a.batch, "emb": a.emb, "hidden": a.hidden, "vocab": V, "len": a.len,
                   "target_len": T, "encoder": "gru",
                   "score": {"bahdanau": "additive", "luong": "general", "none": "none"}[a.attention],
                   "seed": a.seed},
        "torch": torch.__version__,
    }
    if a.attention == "bahdanau":
        out["note"] = ("bahdanau output layer is W_o [s_t; c_t; emb(y_{t-1})] + b (attn's models::Seq2Seq), "
                       "not the issue's [s_t; c_t]; the PyTorch peer implements the same")
    return out


# ---- attention -------------------------------------------------------------------------------


def bench_attention(a):
    if a.kind not in ("sdpa", "additive", "mha"):
        sys.exit(f"torch_peer: unknown --kind '{a.kind}' (valid: sdpa, additive, mha)")
    torch.manual_seed(a.seed)
    B, H, T, D = a.batch, a.heads, a.len, a.dim
    Dh = D // H
    note = None
    if a.kind == "sdpa":
        q, k, v = (torch.randn(B, H, T, Dh, requires_grad=True) for _ in range(3))
        leaves = [q, k, v]
        scale = 1.0 / math.sqrt(Dh)

        def forward():  # torch 1.13 has no fused CPU sdpa: the composed form
            return torch.softmax((q @ k.transpose(-1, -2)) * scale, dim=-1) @ v

        seed_grad = torch.randn(B, H, T, Dh)
        flops = 4.0 * B * H * T * T * Dh
    elif a.kind == "mha":
        mha = nn.MultiheadAttention(D, H, batch_first=True)
        x = torch.randn(B, T, D, requires_grad=True)
        leaves = list(mha.parameters()) + [x]

        def forward():
            return mha(x, x, x, need_weights=False)[0]

        seed_grad = torch.randn(B, T, D)
        flops = 2.0 * B * T * D * 3 * D + 4.0 * B * T * T * D + 2.0 * B * T * D * D
    else:
        q = torch.randn(B, T, D, requires_grad=True)
        kv = torch.randn(B, T, D, requires_grad=True)
        w_q = (torch.randn(D, D) * 0.05).requires_grad_()
        w_k = (torch.randn(D, D) * 0.05).requires_grad_()
        bias = torch.zeros(D, requires_grad=True)
        vv = (torch.randn(D) * 0.05).requires_grad_()
        leaves = [q, kv, w_q, w_k, bias, vv]
        # The composed form materialises tanh(u_t + k_s) as (B, T_chunk, S, A). Queries go in
        # chunks of at most 2^26 elements (256 MiB) so the forward fits in memory; autograd
        # still keeps every chunk's tanh for backward (B·T·S·A floats in all).
        chunk = max(1, (1 << 26) // (B * T * D))

        def forward():
            pk = kv @ w_k.t()  # (B, S, A)
            outs = []
            for t0 in range(0, T, chunk):
                u = q[:, t0:t0 + chunk] @ w_q.t() + bias  # (B, t, A)
                e = torch.tanh(u[:, :, None, :] + pk[:, None, :, :]) @ vv  # (B, t, S)
                outs.append(torch.softmax(e, dim=-1) @ kv)  # (B, t, E)
            return torch.cat(outs, dim=1)

        seed_grad = torch.randn(B, T, D)
        flops = 2.0 * B * T * D * D * 2 + 2.0 * B * T * T * D + 2.0 * B * T * T * D
        note = f"heads unused; T queries over S = T keys, A = E = D = dim; composed, {chunk} queries per chunk"

    baseline = proc_status_mb("VmRSS")
    peak_reset = reset_peak_rss()
    fwd_ms, fb_ms = [], []
    skip_backward = None
    if a.kind == "additive":
        saved_gib = 4.0 * B * T * T * D * 2 / 2**30
        if saved_gib > a.max_saved_gib:
            skip_backward = f"autograd would keep ~{saved_gib:.0f} GiB of (B, T, S, A) tensors (> --max-saved-gib)"
    if a.kind == "mha":
        mha.eval()  # forward: inference mode, so 1.13's fused MHA fast path may run
    for r in range(a.warmup + a.reps):
        t0 = time.perf_counter()
        with torch.no_grad():
            forward()
        if r >= a.warmup:
            fwd_ms.append(1e3 * (time.perf_counter() - t0))
    if a.kind == "mha":
        mha.train()  # forward+backward: training mode (dropout is 0, so the same math)
    for r in range(0 if skip_backward else a.warmup + a.reps):
        t0 = time.perf_counter()
        out = forward()
        out.backward(seed_grad)
        for t in leaves:
            t.grad = None
        if r >= a.warmup:
            fb_ms.append(1e3 * (time.perf_counter() - t0))
    peak = proc_status_mb("VmHWM")
    res = {
        "impl": "torch",
        "bench": "attention",
        "kind": a.kind,
        "forward_ms": median(fwd_ms),
        "forward_backward_ms": median(fb_ms) if fb_ms else None,
        "baseline_rss_mb": baseline,
        "peak_rss_mb": peak,
        "growth_mb": peak - baseline,
        "peak_reset": peak_reset,
        "forward_ms_all": fwd_ms,
        "forward_backward_ms_all": fb_ms,
        "forward_gflops_per_s": flops / (median(fwd_ms) * 1e-3) / 1e9,
        "forward_backward_gflops_per_s": 3 * flops / (median(fb_ms) * 1e-3) / 1e9 if fb_ms else None,
        "reps": a.reps,
        "warmup": a.warmup,
        "threads": torch.get_num_threads(),
        "config": {"batch": B, "heads": H, "len": T, "dim": D, "seed": a.seed},
        "torch": torch.__version__,
    }
    if a.kind in ("sdpa", "mha"):
        res["config"]["head_dim"] = Dh
    if note:
        res["note"] = note
    if skip_backward:
        res["skipped"] = "forward_backward: " + skip_backward
    return res


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="bench", required=True)
    s = sub.add_parser("seq2seq")
    s.add_argument("--attention", default="bahdanau")
    s.add_argument("--batch", type=int, default=64)
    s.add_argument("--emb", type=int, default=64)
    s.add_argument("--hidden", type=int, default=256)
    s.add_argument("--vocab", type=int, default=VOCAB)
    s.add_argument("--len", type=int, default=40)
    s.add_argument("--steps", type=int, default=20)
    s.add_argument("--warmup", type=int, default=3)
    s.add_argument("--greedy-reps", type=int, default=3)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--threads", type=int, default=0)
    s.add_argument("--json", action="store_true")
    t = sub.add_parser("attention")
    t.add_argument("--kind", default="sdpa")
    t.add_argument("--batch", type=int, default=1)
    t.add_argument("--heads", type=int, default=8)
    t.add_argument("--len", type=int, default=4096)
    t.add_argument("--dim", type=int, default=256)
    t.add_argument("--reps", type=int, default=3)
    t.add_argument("--warmup", type=int, default=1)
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--threads", type=int, default=0)
    t.add_argument("--max-saved-gib", type=float, default=8.0, help="additive: skip backward above this")
    t.add_argument("--json", action="store_true")
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    res = bench_seq2seq(a) if a.bench == "seq2seq" else bench_attention(a)
    print(json.dumps(res) if a.json else json.dumps(res, indent=2), flush=True)


if __name__ == "__main__":
    main()
