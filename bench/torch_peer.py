#!/usr/bin/python3
"""The PyTorch peer of `attn bench`: the same models, the same work, the same JSON keys.

    /usr/bin/python3 bench/torch_peer.py seq2seq --attention bahdanau --batch 64 --emb 64 \
        --hidden 256 --vocab 32 --len 40 --steps 20 --threads 2 --json
    /usr/bin/python3 bench/torch_peer.py attention --kind mha --batch 1 --heads 8 --len 4096 \
        --dim 256 --threads 2 --json
    /usr/bin/python3 bench/torch_peer.py transformer --threads 2 --json
    /usr/bin/python3 bench/torch_peer.py ddp-seq2seq --world 2 --threads 1 --json   (docs/distributed.md)
    /usr/bin/python3 bench/torch_peer.py ddp-transformer --world 2 --threads 1 --json   (the same)

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
    """Same count as seq2seq_forward_flops in bench/support/flops.cpp."""
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
    if a.compile:  # torch 2: the decoder step (the loop body, run T times) and the encoder
        model.step = torch.compile(model.step)
        model.encode = torch.compile(model.encode)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    batches = [copy_batch(gen, a.batch, a.len) for _ in range(a.warmup + a.steps)]
    greedy_batch = copy_batch(gen, a.batch, a.len)
    V = a.vocab
    t_fwd = t_bwd = t_opt = train_seconds = train_cpu = 0.0
    loss_value = 0.0
    model.train()
    started = time.perf_counter()
    for i, (src, lengths, tgt_in, tgt_out) in enumerate(batches):
        c0 = time.process_time()  # every thread's CPU time, as attn's train_cpu_seconds
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
        if i + 1 == a.warmup:
            warmup_seconds = time.perf_counter() - started  # torch.compile's compile time included
        if i >= a.warmup:
            t_fwd += t1 - t0
            t_bwd += t2 - t1
            t_opt += t3 - t2
            train_seconds += t3 - t0
            train_cpu += time.process_time() - c0

    model.eval()
    src, lengths, _, _ = greedy_batch
    greedy_steps = 0
    greedy_seconds = greedy_cpu = 0.0
    for r in range(1 + a.greedy_reps):
        c0 = time.process_time()
        t0 = time.perf_counter()
        n = model.greedy(src, lengths, a.len + 1)
        s = time.perf_counter() - t0
        c = time.process_time() - c0
        if r > 0 or a.greedy_reps == 0:
            greedy_seconds += s
            greedy_cpu += c
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
        "train_cpu_seconds": train_cpu,
        "train_tokens_per_cpu_s": a.steps * B * T / train_cpu,
        "greedy_cpu_seconds": greedy_cpu,
        "greedy_tokens_per_cpu_s": B * greedy_steps / greedy_cpu,
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
        "compile": a.compile,
        "warmup_seconds": warmup_seconds if a.warmup else 0.0,
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


# ---- data-parallel (DDP) ----------------------------------------------------------------------
def ddp_worker(rank, a, result_queue):
    """One process of a DistributedDataParallel run (gloo): its a.batch / a.world rows of
    every global batch of a.batch (the global batch is the same for every world size)."""
    import torch.distributed as dist
    Seq2Seq.forward = Seq2Seq.logits  # DDP calls the module's forward (spawned processes import afresh)
    ddp_init(rank, a)
    gen = torch.Generator().manual_seed(a.seed)
    model = Seq2Seq(a.attention, a.emb, a.hidden, a.vocab)
    trained = nn.parallel.DistributedDataParallel(model) if a.world > 1 else model
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    lo, hi = a.batch * rank // a.world, a.batch * (rank + 1) // a.world
    seconds = 0.0
    for i in range(a.warmup + a.steps):
        src, lengths, tgt_in, tgt_out = copy_batch(gen, a.batch, a.len)
        t0 = time.perf_counter()
        src, lengths, tgt_in, tgt_out = src[:, lo:hi], lengths[lo:hi], tgt_in[:, lo:hi], tgt_out[:, lo:hi]  # time-major
        logits = trained(src, lengths, tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, a.vocab), tgt_out.reshape(-1), ignore_index=PAD)
        loss.backward()  # DDP: bucketed all-reduce of the mean gradients, overlapping backward
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i >= a.warmup:
            seconds += time.perf_counter() - t0
    if rank == 0:
        T = a.len + 1
        result_queue.put({"impl": "torch", "bench": "ddp-seq2seq", "world": a.world, "backend": "gloo",
                          "threads_per_process": a.threads or 1, "steps": a.steps, "step_ms": 1e3 * seconds / a.steps,
                          "global_target_tokens_per_s": a.steps * a.batch * T / seconds,
                          "config": {"batch": a.batch, "emb": a.emb, "hidden": a.hidden, "len": a.len,
                                     "attention": a.attention}, "torch": torch.__version__})
    if a.world > 1:
        dist.destroy_process_group()


def ddp_init(rank, a):
    """A DDP process's start: a.threads threads, the gloo group of a.world processes on this
    machine (none for one), the seed."""
    import os
    import torch.distributed as dist
    torch.set_num_threads(a.threads or 1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(a.port))
    if a.world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=a.world)
    torch.manual_seed(a.seed)


def run_ddp(worker, a):
    """worker(rank, a, queue) in a.world processes (in this one for 1); rank 0's result."""
    import torch.multiprocessing as mp
    queue = mp.get_context("spawn").Queue()
    if a.world == 1:
        worker(0, a, queue)
    else:
        mp.spawn(worker, args=(a, queue), nprocs=a.world, join=True)
    return queue.get()


def bench_ddp_seq2seq(a):
    return run_ddp(ddp_worker, a)


# ---- attention -------------------------------------------------------------------------------


def bench_attention(a):
    if a.kind not in ("sdpa", "additive", "mha"):
        sys.exit(f"torch_peer: unknown --kind '{a.kind}' (valid: sdpa, additive, mha)")
    torch.manual_seed(a.seed)
    B, H, T, D = a.batch, a.heads, a.len, a.dim
    Dh = D // H
    note = None
    if a.mask != "none" and a.kind != "sdpa":
        sys.exit("torch_peer: --mask is for --kind sdpa")
    if a.kind == "sdpa":
        q, k, v = (torch.randn(B, H, T, Dh, requires_grad=True) for _ in range(3))
        leaves = [q, k, v]
        scale = 1.0 / math.sqrt(Dh)
        # padding: every row's last quarter of keys is padding (attn bench attention --mask padding)
        keep = (torch.arange(T) < T - T // 4).view(1, 1, 1, T).expand(B, 1, 1, T) if a.mask == "padding" else None
        if hasattr(F, "scaled_dot_product_attention"):  # torch 2: the fused CPU kernel
            note = "F.scaled_dot_product_attention"

            def forward():
                return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, is_causal=a.mask == "causal")
        else:  # torch 1.13 has no fused CPU sdpa: the composed form
            note = "composed softmax(q kᵀ) v"
            bias = None
            if a.mask == "causal":
                bias = torch.full((T, T), float("-inf")).triu(1)
            elif keep is not None:
                bias = torch.zeros(B, 1, 1, T).masked_fill(~keep, float("-inf"))

            def forward():
                scores = (q @ k.transpose(-1, -2)) * scale
                return torch.softmax(scores if bias is None else scores + bias, dim=-1) @ v

        seed_grad = torch.randn(B, H, T, Dh)
        flops = 4.0 * B * H * sdpa_visible_pairs(a.mask, T) * Dh
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
    if a.kind == "sdpa":
        res["config"]["mask"] = a.mask
    if note:
        res["note"] = note
    if skip_backward:
        res["skipped"] = "forward_backward: " + skip_backward
    return res


# ---- transformer -----------------------------------------------------------------------------

MASK64 = (1 << 64) - 1


def splitmix64(x):
    """attn::splitmix64 (include/attn/random.h)."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def multi30k_like_pairs(n, vocab, seed):
    """The same pairs as multi30k_like_pairs in bench/support/synthetic_pairs.cpp: draw i is
    splitmix64(seed ^ splitmix64(i)); source length 5 + four draws in [0, 5], target length
    source + a draw in [-3, 2], tokens uniform over the ids after EOS."""
    index = 0

    def below(m):
        nonlocal index
        v = splitmix64(seed ^ splitmix64(index)) % m
        index += 1
        return v

    pairs = []
    for _ in range(n):
        src_len = 5 + below(6) + below(6) + below(6) + below(6)
        tgt_len = src_len - 3 + below(6)
        src = [EOS + 1 + below(vocab - 3) for _ in range(src_len)]
        tgt = [EOS + 1 + below(vocab - 3) for _ in range(tgt_len)]
        pairs.append((src, tgt))
    return pairs


def budget_batches(pairs, max_tokens):
    """budget_batches of bench/support/synthetic_pairs.cpp: sorted by (source, target length), cut so that
    rows * (longest source + longest target + 1) <= max_tokens."""
    order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i][0]), len(pairs[i][1])))
    batches, s, t = [[]], 0, 0
    for i in order:
        ns, nt = max(s, len(pairs[i][0])), max(t, len(pairs[i][1]))
        if batches[-1] and (len(batches[-1]) + 1) * (ns + nt + 1) > max_tokens:
            batches.append([])
            ns, nt = len(pairs[i][0]), len(pairs[i][1])
        batches[-1].append(i)
        s, t = ns, nt
    return batches


def pair_batch(pairs, indices):
    """data::make_pair_batch, batch-first: src (B, S), src_lengths, tgt_in = BOS + tgt,
    tgt_out = tgt + EOS (B, T), tgt_lengths = |tgt| + 1."""
    B = len(indices)
    S = max(len(pairs[i][0]) for i in indices)
    T = max(len(pairs[i][1]) for i in indices) + 1
    src = torch.zeros(B, S, dtype=torch.long)
    tgt_in = torch.zeros(B, T, dtype=torch.long)
    tgt_out = torch.zeros(B, T, dtype=torch.long)
    for r, i in enumerate(indices):
        s, t = pairs[i]
        src[r, :len(s)] = torch.tensor(s)
        tgt_in[r, :len(t) + 1] = torch.tensor([BOS] + t)
        tgt_out[r, :len(t) + 1] = torch.tensor(t + [EOS])
    src_lengths = torch.tensor([len(pairs[i][0]) for i in indices])
    tgt_lengths = torch.tensor([len(pairs[i][1]) + 1 for i in indices])
    return src, src_lengths, tgt_in, tgt_out, tgt_lengths


def sdpa_visible_pairs(mask, T):
    """Same count as sdpa_visible_pairs in bench/support/flops.cpp."""
    if mask == "causal":
        return T * (T + 1) / 2
    if mask == "padding":
        return T * (T - T // 4)
    return T * T


def transformer_forward_flops(B, S, T, D, F_, V, L):
    """Same count as transformer_forward_flops in bench/support/flops.cpp."""
    def self_block(n):
        return 2 * B * n * D * 3 * D + 4 * B * n * n * D + 2 * B * n * D * D

    def ffn_block(n):
        return 4 * B * n * D * F_

    cross = 2 * B * T * D * D + 2 * B * S * D * 2 * D + 4 * B * T * S * D + 2 * B * T * D * D
    return L * (self_block(S) + ffn_block(S)) + L * (self_block(T) + cross + ffn_block(T)) + 2 * B * T * D * V


class TransformerSeq2Seq(nn.Module):
    """attn's models::TransformerSeq2Seq with the recipe's settings: nn.Transformer
    (norm_first=True, so final encoder and decoder norms), one embedding shared by source,
    target and output (tied, no output bias), √D scaling, sinusoidal positions, dropout."""

    def __init__(self, V, D, H, F_, L, dropout, max_len=256):
        super().__init__()
        self.D, self.H = D, H
        self.embedding = nn.Embedding(V, D, padding_idx=PAD)
        nn.init.normal_(self.embedding.weight, 0.0, D ** -0.5)
        with torch.no_grad():
            self.embedding.weight[PAD].zero_()
        self.transformer = nn.Transformer(D, H, L, L, F_, dropout, batch_first=True, norm_first=True)
        pos = torch.arange(max_len, dtype=torch.float32)[:, None]
        div = torch.exp(torch.arange(0, D, 2, dtype=torch.float32) * (-math.log(10000.0) / D))
        pe = torch.zeros(max_len, D)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)
        self.dropout = nn.Dropout(dropout)

    def embed(self, ids, offset=0):
        return self.dropout(self.embedding(ids) * math.sqrt(self.D) + self.pe[offset:offset + ids.shape[1]])

    def logits(self, src, src_lengths, tgt_in):
        src_pad = torch.arange(src.shape[1])[None, :] >= src_lengths[:, None]  # (B, S) True = padding
        causal = self.transformer.generate_square_subsequent_mask(tgt_in.shape[1])
        h = self.transformer(self.embed(src), self.embed(tgt_in), tgt_mask=causal,
                             src_key_padding_mask=src_pad, memory_key_padding_mask=src_pad)
        return F.linear(h, self.embedding.weight)  # (B, T, V)

    # Incremental decoding, as fairseq and OpenNMT-py do it (nn.TransformerDecoder itself has
    # no key/value cache): each layer's self-attention keys and values grow by one position per
    # step, the memory's keys and values are projected once.
    def start(self, src, src_lengths):
        src_pad = torch.arange(src.shape[1])[None, :] >= src_lengths[:, None]
        memory = self.transformer.encoder(self.embed(src), src_key_padding_mask=src_pad)
        D = self.D
        cache = []
        for layer in self.transformer.decoder.layers:
            w, b = layer.multihead_attn.in_proj_weight, layer.multihead_attn.in_proj_bias
            k, v = F.linear(memory, w[D:], b[D:]).chunk(2, dim=-1)
            cache.append({"mk": self.heads(k), "mv": self.heads(v), "k": None, "v": None})
        mem_bias = torch.zeros(src_pad.shape).masked_fill(src_pad, float("-inf"))[:, None, None, :]
        return cache, mem_bias

    def heads(self, x):  # (N, t, D) -> (N, H, t, Dh)
        N, t, _ = x.shape
        return x.view(N, t, self.H, self.D // self.H).transpose(1, 2)

    def attend(self, q, k, v, bias, out_proj):
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.D // self.H)
        if bias is not None:
            scores = scores + bias
        o = torch.softmax(scores, dim=-1) @ v  # (N, H, 1, Dh)
        return out_proj(o.transpose(1, 2).reshape(o.shape[0], 1, self.D))

    def step(self, ids, t, cache, mem_bias):
        """ids (N, 1) at position t -> log-probs (N, V)."""
        D = self.D
        x = self.embed(ids, t)
        for layer, c in zip(self.transformer.decoder.layers, cache):
            sa = layer.self_attn
            q, k, v = F.linear(layer.norm1(x), sa.in_proj_weight, sa.in_proj_bias).chunk(3, dim=-1)
            k, v = self.heads(k), self.heads(v)
            c["k"] = k if c["k"] is None else torch.cat([c["k"], k], dim=2)
            c["v"] = v if c["v"] is None else torch.cat([c["v"], v], dim=2)
            x = x + self.attend(self.heads(q), c["k"], c["v"], None, sa.out_proj)
            ca = layer.multihead_attn
            q = F.linear(layer.norm2(x), ca.in_proj_weight[:D], ca.in_proj_bias[:D])
            x = x + self.attend(self.heads(q), c["mk"], c["mv"], mem_bias, ca.out_proj)
            x = x + layer.linear2(layer.activation(layer.linear1(layer.norm3(x))))
        h = self.transformer.decoder.norm(x)
        return torch.log_softmax(F.linear(h[:, 0], self.embedding.weight), dim=-1)

    @torch.no_grad()
    def beam(self, src, src_lengths, K, alpha, max_len):
        """attn's batched beam search (src/models/beam_search.h), vectorised over rows: per
        row the best 2K of the K·V continuations; EOS candidates ranked before the K-th other
        one finish with score / lp(len), lp = ((5 + len) / 6)^alpha; a row stops when its
        best finished score >= what an alive hypothesis could still reach. Returns the best
        hypothesis of each row (EOS included when it finished)."""
        B = src.shape[0]
        rows = torch.arange(B).repeat_interleave(K)
        cache, mem_bias = self.start(src, src_lengths)
        for c in cache:
            c["mk"], c["mv"] = c["mk"][rows], c["mv"][rows]
        mem_bias = mem_bias[rows]
        lp = (lambda n: 1.0) if alpha == 0 else (lambda n: ((5.0 + n) / 6.0) ** alpha)
        score = torch.full((B, K), float("-inf"))
        score[:, 0] = 0
        hyps = torch.full((B * K, 0), BOS, dtype=torch.long)
        prev = torch.full((B * K, 1), BOS, dtype=torch.long)
        done = torch.zeros(B, dtype=torch.bool)
        best_score = torch.full((B,), float("-inf"))
        best = [None] * B
        for t in range(max_len):
            logp = self.step(prev, t, cache, mem_bias)  # (BK, V)
            V = logp.shape[1]
            cand = (score.view(B * K, 1) + logp).view(B, K * V)
            top, idx = cand.topk(2 * K, dim=1)  # (B, 2K), score desc
            beam, token = idx // V, idx % V
            is_eos = token == EOS
            others_before = torch.cumsum(~is_eos, dim=1) - (~is_eos).long()
            live = torch.isfinite(top) & ~done[:, None]
            finish = is_eos & (others_before < K) & live
            norm = torch.where(finish, top / lp(t + 1), torch.full_like(top, float("-inf")))
            step_best, at = norm.max(dim=1)
            better = step_best > best_score
            for b in torch.nonzero(better).flatten().tolist():
                parent = b * K + int(beam[b, at[b]])
                best[b] = hyps[parent].tolist() + [EOS]
            best_score = torch.where(better, step_best, best_score)
            # The first K non-EOS candidates of each row, in rank order, are the new beams.
            order = torch.argsort(is_eos.long() * 4 * K + torch.arange(2 * K), dim=1)[:, :K]
            new_score = top.gather(1, order)
            new_beam = beam.gather(1, order)
            new_token = token.gather(1, order)
            new_score = torch.where(done[:, None], torch.full_like(new_score, float("-inf")), new_score)
            best_alive = new_score.max(dim=1).values
            reachable = best_alive if alpha == 0 else torch.maximum(best_alive / lp(max_len), best_alive / lp(t + 2))
            done = done | ~torch.isfinite(best_alive) | (best_score >= reachable)
            score = torch.where(done[:, None], torch.full_like(new_score, float("-inf")), new_score)
            if bool(done.all()):
                break
            reorder = (torch.arange(B)[:, None] * K + new_beam).flatten()
            hyps = torch.cat([hyps[reorder], new_token.view(B * K, 1)], dim=1)
            prev = new_token.view(B * K, 1)
            for c in cache:
                c["k"], c["v"] = c["k"][reorder], c["v"][reorder]
        for b in range(B):
            if best[b] is None:  # no EOS within max_len: the best alive hypothesis
                best[b] = hyps[b * K + int(score[b].argmax())].tolist() if torch.isfinite(score[b]).any() else []
        return best


def bench_transformer(a):
    torch.manual_seed(a.seed)
    model = TransformerSeq2Seq(a.vocab, a.d_model, a.heads, a.ffn, a.layers, 0.1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n_batches = a.warmup + a.steps
    pairs = multi30k_like_pairs(4000, a.vocab, a.seed)
    all_batches = budget_batches(pairs, a.max_tokens)
    batches = [pair_batch(pairs, all_batches[i * len(all_batches) // n_batches]) for i in range(n_batches)]
    # Beam decoding first, on the untrained model, for exactly longest target + 1 steps: EOS's
    # tied embedding row is zeroed so no hypothesis finishes early (as attn bench transformer).
    # --beam-sentences 0: training only.
    with torch.no_grad():
        model.embedding.weight[EOS].zero_()
    model.eval()
    max_len = 0
    beam_seconds = beam_tokens = 0.0
    if a.beam_sentences:
        src, src_lengths, tgt_in, _, _ = pair_batch(pairs, list(range(a.beam_sentences)))
        max_len = tgt_in.shape[1]
    for r in range(1 + a.beam_reps if a.beam_sentences else 0):
        t0 = time.perf_counter()
        out = model.beam(src, src_lengths, a.beam, a.length_penalty, max_len)
        s = time.perf_counter() - t0
        if r == 0:
            continue
        beam_seconds += s
        beam_tokens += sum(len(x) for x in out)

    train_seconds = train_flops = target_tokens = padded = sentences = 0.0
    loss_value = 0.0
    model.train()
    # torch 2 options: bf16 autocast (CPU), torch.compile of the teacher-forced forward (shapes
    # change from batch to batch: dynamic shapes after the first recompile).
    logits_of = torch.compile(model.logits) if a.compile else model.logits
    started = time.perf_counter()
    warmup_seconds = 0.0
    for i, (src, src_lengths, tgt_in, tgt_out, tgt_lengths) in enumerate(batches):
        if i == a.warmup:
            warmup_seconds = time.perf_counter() - started
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            logits = logits_of(src, src_lengths, tgt_in)
        loss = F.cross_entropy(logits.float().reshape(-1, a.vocab), tgt_out.reshape(-1), ignore_index=PAD,
                               label_smoothing=a.label_smoothing)
        loss_value = loss.item()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i < a.warmup:
            continue
        train_seconds += time.perf_counter() - t0
        B, S, T = src.shape[0], src.shape[1], tgt_in.shape[1]
        train_flops += 3 * transformer_forward_flops(B, S, T, a.d_model, a.ffn, a.vocab, a.layers)
        target_tokens += int(tgt_lengths.sum())
        padded += B * (S + T)
        sentences += B

    return {
        "impl": "torch",
        "bench": "transformer",
        "train_tokens_per_s": target_tokens / train_seconds,
        "train_padded_tokens_per_s": padded / train_seconds,
        "train_sentences_per_s": sentences / train_seconds,
        "gflops_per_s": train_flops / train_seconds / 1e9,
        "beam_sentences_per_s": a.beam_sentences * a.beam_reps / beam_seconds if beam_seconds else None,
        "beam_tokens_per_s": beam_tokens / beam_seconds if beam_seconds else None,
        "beam_tokens_per_sentence": beam_tokens / (a.beam_sentences * a.beam_reps) if beam_seconds else None,
        "precision": a.precision,
        "compile": a.compile,
        "warmup_seconds": warmup_seconds,
        "train_flops": train_flops,
        "target_tokens": target_tokens,
        "steps": a.steps,
        "warmup": a.warmup,
        "seconds": train_seconds,
        "step_ms": 1e3 * train_seconds / a.steps,
        "beam_seconds": beam_seconds,
        "final_loss": loss_value,
        "threads": torch.get_num_threads(),
        "parameters": sum(p.numel() for p in model.parameters()),
        "config": {"d_model": a.d_model, "heads": a.heads, "ffn": a.ffn, "layers": a.layers, "vocab": a.vocab,
                   "max_tokens": a.max_tokens, "label_smoothing": a.label_smoothing, "beam": a.beam,
                   "length_penalty": a.length_penalty, "beam_sentences": a.beam_sentences,
                   "beam_max_len": max_len, "norm_first": True, "tied_embeddings": True, "dropout": 0.1,
                   "seed": a.seed},
        "torch": torch.__version__,
    }



# ---- data-parallel (DDP) Transformer -----------------------------------------------------------
def read_id_pairs(src_path, tgt_path, max_len):
    """Sentence pairs as `attn tokenize encode --ids` prints them (one sentence a line, piece
    ids separated by spaces), cut to max_len pieces a side as attn's encode_parallel cuts them;
    pairs with an empty side are left out."""
    pairs = []
    with open(src_path) as fs, open(tgt_path) as ft:
        for ls, lt in zip(fs, ft):
            src, tgt = [int(x) for x in ls.split()][:max_len], [int(x) for x in lt.split()][:max_len]
            if src and tgt:
                pairs.append((src, tgt))
    return pairs


def capped_budget_batches(pairs, max_tokens, max_sentences):
    """budget_batches with attn's --max-sentences cap as well (data::token_batches's rule:
    rows x (longest source + longest target + 1) <= max_tokens, at most max_sentences rows)."""
    out = []
    for batch in budget_batches(pairs, max_tokens):
        out += [batch[i:i + max_sentences] for i in range(0, len(batch), max_sentences)]
    return out


def ddp_transformer_worker(rank, a, result_queue):
    """One process of a DistributedDataParallel Transformer run (gloo): the rows
    [r*B/N, (r+1)*B/N) of every global token-budget batch (attn's shard rule), each rank's
    loss the sum over its target tokens divided by the global batch's target tokens, times N
    (DDP averages the gradients over the N ranks), so the summed gradient is the global
    batch's mean-token gradient, as attn's token-weighted all-reduce computes it."""
    import torch.distributed as dist
    TransformerSeq2Seq.forward = TransformerSeq2Seq.logits  # what DDP calls (spawned processes import afresh)
    ddp_init(rank, a)
    if a.src_ids:
        pairs = read_id_pairs(a.src_ids, a.tgt_ids, a.max_len)
    else:
        pairs = multi30k_like_pairs(4000, a.vocab, a.seed)
    all_batches = capped_budget_batches(pairs, a.max_tokens, a.max_sentences)
    n_batches = a.warmup + a.steps
    # An even spread over the length-sorted batches, the same on every rank.
    batches = [all_batches[i * len(all_batches) // n_batches] for i in range(n_batches)]
    model = TransformerSeq2Seq(a.vocab, a.d_model, a.heads, a.ffn, a.layers, a.dropout)
    trained = nn.parallel.DistributedDataParallel(model) if a.world > 1 else model
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    seconds = target_tokens = 0.0
    loss_value = 0.0
    for i, batch in enumerate(batches):
        t0 = time.perf_counter()
        rows = len(batch)
        mine = batch[rows * rank // a.world:rows * (rank + 1) // a.world]
        global_tokens = sum(len(pairs[j][1]) + 1 for j in batch)  # targets + EOS
        src, src_lengths, tgt_in, tgt_out, _ = pair_batch(pairs, mine)
        logits = trained(src, src_lengths, tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, a.vocab), tgt_out.reshape(-1), ignore_index=PAD,
                               label_smoothing=a.label_smoothing, reduction="sum") * (a.world / global_tokens)
        loss.backward()  # DDP: bucketed all-reduce (mean over ranks), overlapping backward
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i >= a.warmup:
            seconds += time.perf_counter() - t0
            target_tokens += global_tokens
            loss_value = loss.item() / a.world
    if rank == 0:
        result_queue.put({"impl": "torch", "bench": "ddp-transformer", "world": a.world, "backend": "gloo",
                          "threads_per_process": a.threads or 1, "steps": a.steps, "warmup": a.warmup,
                          "step_ms": 1e3 * seconds / a.steps,
                          "global_target_tokens_per_s": target_tokens / seconds,
                          "target_tokens_per_step": target_tokens / a.steps,
                          "final_rank0_loss_share": loss_value,
                          "parameters": sum(p.numel() for p in model.parameters()),
                          "config": {"d_model": a.d_model, "heads": a.heads, "ffn": a.ffn, "layers": a.layers,
                                     "vocab": a.vocab, "max_tokens": a.max_tokens, "max_sentences": a.max_sentences,
                                     "label_smoothing": a.label_smoothing, "dropout": a.dropout,
                                     "data": "ids files" if a.src_ids else "multi30k-like synthetic pairs",
                                     "pairs": len(pairs), "seed": a.seed},
                          "torch": torch.__version__})
    if a.world > 1:
        dist.destroy_process_group()


def bench_ddp_transformer(a):
    if bool(a.src_ids) != bool(a.tgt_ids):
        sys.exit("torch_peer: ddp-transformer needs both --src-ids and --tgt-ids, or neither")
    return run_ddp(ddp_transformer_worker, a)


def seq2seq_shape_arguments(parser):
    """The copy-task seq2seq's shape and run length: `seq2seq` and `ddp-seq2seq` share them."""
    parser.add_argument("--attention", default="bahdanau")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--emb", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=VOCAB)
    parser.add_argument("--len", type=int, default=40)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)


def transformer_shape_arguments(parser):
    """The Multi30k-shaped Transformer and its run length: `transformer` and `ddp-transformer` share them."""
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--ffn", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=3, help="encoder and decoder layers each")
    parser.add_argument("--vocab", type=int, default=6000, help="ddp-transformer --src-ids: the tokenizer's pieces")
    parser.add_argument("--max-tokens", type=int, default=2500)
    parser.add_argument("--label-smoothing", type=float, default=0.1)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)


def ddp_arguments(parser, port):
    """What the DDP benches add to their shapes: the world, seed, threads, port and --json."""
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="per process")
    parser.add_argument("--port", type=int, default=port)
    parser.add_argument("--json", action="store_true")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="bench", required=True)
    s = sub.add_parser("seq2seq")
    seq2seq_shape_arguments(s)
    s.add_argument("--greedy-reps", type=int, default=3)
    s.add_argument("--compile", action="store_true", help="torch 2: torch.compile the encoder and decoder step")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--threads", type=int, default=0)
    s.add_argument("--json", action="store_true")
    t = sub.add_parser("attention")
    t.add_argument("--kind", default="sdpa")
    t.add_argument("--mask", default="none", choices=["none", "causal", "padding"],
                   help="sdpa: causal, or the last quarter of the keys padding")
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
    m = sub.add_parser("transformer")
    transformer_shape_arguments(m)
    m.add_argument("--beam", type=int, default=5)
    m.add_argument("--length-penalty", type=float, default=1.0)
    m.add_argument("--beam-sentences", type=int, default=64, help="0: training only")
    m.add_argument("--precision", default="fp32", choices=["fp32", "bf16"], help="bf16: torch 2's CPU autocast")
    m.add_argument("--compile", action="store_true", help="torch 2: torch.compile the training forward")
    m.add_argument("--beam-reps", type=int, default=1)
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--threads", type=int, default=0)
    m.add_argument("--json", action="store_true")
    d = sub.add_parser("ddp-seq2seq", help="seq2seq on the copy task under DistributedDataParallel (gloo)")
    seq2seq_shape_arguments(d)
    ddp_arguments(d, 29517)
    x = sub.add_parser("ddp-transformer",
                       help="the Multi30k-shaped Transformer under DistributedDataParallel (gloo)")
    transformer_shape_arguments(x)
    x.add_argument("--max-sentences", type=int, default=128)
    x.add_argument("--max-len", type=int, default=100)
    x.add_argument("--dropout", type=float, default=0.1)
    x.add_argument("--src-ids", help="source sentences as piece ids, one a line (attn tokenize encode --ids)")
    x.add_argument("--tgt-ids", help="their target sentences, likewise")
    ddp_arguments(x, 29518)
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    res = {"seq2seq": bench_seq2seq, "attention": bench_attention, "transformer": bench_transformer,
           "ddp-seq2seq": bench_ddp_seq2seq, "ddp-transformer": bench_ddp_transformer}[a.bench](a)
    print(json.dumps(res) if a.json else json.dumps(res, indent=2), flush=True)


if __name__ == "__main__":
    main()
