"""attn's kernels inside PyTorch models (attn.torch), against pure PyTorch, in one run.

  seq2seq    bench/torch_peer.py's GRU + Bahdanau seq2seq, trained twice on the same batches
             from the same initial weights: as it is, and with only its attention replaced by
             attn.torch.additive_attention (the fused kernel; everything else stays torch).
             Steps alternate between the two models; the whole training step (forward,
             backward, clip, Adam) is timed, and the median step and the speed-up reported.
  share      the attention alone (the step's len + 1 attend calls, forward + backward), both
             ways: its share f of the pure-PyTorch step, attn's speed-up s on it, and the
             Amdahl bound 1 / ((1 - f) + f / s) on the whole step's speed-up.
  sdpa       softmax(q kᵀ/√Dh) v returning the weights, forward + backward: PyTorch composed
             (torch 1.13 has no fused CPU SDPA) vs attn.torch.sdpa, at each --sdpa-lens T.

  PYTHONPATH=build/python /usr/bin/python3 bench/torch_attn_kernels.py --threads 2
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peer  # noqa: E402

import attn  # noqa: E402
import attn.torch as at  # noqa: E402


class FusedAttentionSeq2Seq(torch_peer.Seq2Seq):
    """torch_peer's model with attend() on attn's fused additive attention (same parameters).
    encode() hands the decoder the source lengths (B) instead of the keep mask (B, S), and the
    memory (B, S, E) made contiguous, as a PyTorch user of attn.torch would: both are prepared
    once per batch (attn.torch shares contiguous float32 / int32 tensors, but would copy the
    transposed encoder output and convert int64 lengths at every one of the T steps)."""

    def encode(self, src, src_lengths):
        memory, keys, _, h = super().encode(src, src_lengths)
        return memory.contiguous(), keys, src_lengths.to(torch.int32), h

    def attend(self, query, memory, keys, lengths):
        return at.additive_attention(query, keys, memory, self.w_q, self.bias, self.v, lengths)[0]


def train_step(model, opt, batch, V):
    src, lengths, tgt_in, tgt_out = batch
    t0 = time.perf_counter()
    logits = model.logits(src, lengths, tgt_in)
    loss = F.cross_entropy(logits.reshape(-1, V), tgt_out.reshape(-1), ignore_index=torch_peer.PAD)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return time.perf_counter() - t0, loss.item()


def bench_seq2seq(a):
    models = {}
    for name, cls in (("torch", torch_peer.Seq2Seq), ("attn.torch", FusedAttentionSeq2Seq)):
        torch.manual_seed(a.seed)
        model = cls("bahdanau", a.emb, a.hidden, a.vocab)
        models[name] = (model, torch.optim.Adam(model.parameters(), lr=1e-3))
    gen = torch.Generator().manual_seed(a.seed)
    batches = [torch_peer.copy_batch(gen, a.batch, a.len) for _ in range(a.warmup + a.steps)]
    times = {name: [] for name in models}
    losses = {name: [] for name in models}
    for i, batch in enumerate(batches):
        for name, (model, opt) in models.items():
            seconds, loss = train_step(model, opt, batch, a.vocab)
            losses[name].append(loss)
            if i >= a.warmup:
                times[name].append(seconds)
    median_ms = {name: 1e3 * statistics.median(t) for name, t in times.items()}
    return {"bench": "seq2seq", "median_step_ms": median_ms,
            "speedup_whole_step": median_ms["torch"] / median_ms["attn.torch"],
            "first_loss": {n: l[0] for n, l in losses.items()}, "last_loss": {n: l[-1] for n, l in losses.items()},
            "steps": a.steps, "warmup": a.warmup,
            "config": {"batch": a.batch, "emb": a.emb, "hidden": a.hidden, "len": a.len, "vocab": a.vocab}}


def bench_attention_share(a, step_ms):
    """The attention alone, as the training step runs it: len + 1 decoder steps' attend()
    calls (forward, then one backward of Σ context · seed), torch composed vs attn.torch, on
    the model's parameters and (B, S, H) memory. f = its share of the pure-PyTorch step
    (step_ms from bench_seq2seq in the same run), s = the attn kernel's speed-up on it, and
    Amdahl's bound on the whole step's speed-up: 1 / ((1 - f) + f / s)."""
    torch.manual_seed(a.seed)
    B, S, H, T = a.batch, a.len, a.hidden, a.len + 1
    models = {"torch": torch_peer.Seq2Seq("bahdanau", a.emb, H, a.vocab)}
    models["attn.torch"] = FusedAttentionSeq2Seq("bahdanau", a.emb, H, a.vocab)
    models["attn.torch"].load_state_dict(models["torch"].state_dict())
    memory = torch.randn(B, S, H, requires_grad=True)
    queries = [torch.randn(B, H, requires_grad=True) for _ in range(T)]
    seeds = [torch.randn(B, H) for _ in range(T)]
    lengths = torch.full((B,), S, dtype=torch.long)
    masks = {"torch": torch.arange(S)[None, :] < lengths[:, None], "attn.torch": lengths.to(torch.int32)}
    # memory is contiguous here for both: the encoder output's transpose is left out of both sides
    times = {name: [] for name in models}
    for r in range(a.warmup + a.reps * 3):
        for name, model in models.items():
            t0 = time.perf_counter()
            keys = memory @ model.w_k.t()
            total = sum((model.attend(q, memory, keys, masks[name]) * g).sum() for q, g in zip(queries, seeds))
            total.backward()
            seconds = time.perf_counter() - t0
            if r >= a.warmup:
                times[name].append(seconds)
            model.zero_grad(set_to_none=True)
            memory.grad = None
            for q in queries:
                q.grad = None
    ms = {name: 1e3 * statistics.median(t) for name, t in times.items()}
    f = ms["torch"] / step_ms["torch"]
    s = ms["torch"] / ms["attn.torch"]
    return {"bench": "attention_share", "calls": T, "median_attention_fwd_bwd_ms": ms,
            "share_f_of_torch_step": f, "kernel_speedup_s": s, "amdahl_bound": 1.0 / ((1.0 - f) + f / s),
            "goal_needs_s": (f / (1.0 / 1.5 - (1.0 - f))) if f > 1.0 - 1.0 / 1.5 else None}


def bench_sdpa(a, T):
    torch.manual_seed(a.seed)
    B, H, Dh = 1, a.heads, a.head_dim
    q, k, v = (torch.randn(B, H, T, Dh, requires_grad=True) for _ in range(3))
    dout, dw = torch.randn(B, H, T, Dh), torch.randn(B, H, T, T)

    def composed():
        w = torch.softmax(q @ k.transpose(-1, -2) / Dh ** 0.5, -1)
        return w @ v, w

    def fused():
        return at.sdpa(q, k, v)

    result = {}
    for name, fn in (("torch composed", composed), ("attn.torch", fused)):
        times = []
        for r in range(a.warmup + a.reps):
            t0 = time.perf_counter()
            out, w = fn()
            ((out * dout).sum() + (w * dw).sum()).backward()
            times.append(time.perf_counter() - t0)
            q.grad = k.grad = v.grad = None
        result[name] = 1e3 * statistics.median(times[a.warmup:])
    return {"bench": "sdpa_with_weights", "T": T, "B": B, "H": H, "Dh": Dh, "median_fwd_bwd_ms": result,
            "speedup": result["torch composed"] / result["attn.torch"]}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--emb", type=int, default=64)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--vocab", type=int, default=torch_peer.VOCAB)
    p.add_argument("--len", type=int, default=40)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--sdpa-lens", default="512,2048")
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=32)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    attn.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    seq2seq = bench_seq2seq(a)
    results = [seq2seq, bench_attention_share(a, seq2seq["median_step_ms"])]
    results += [bench_sdpa(a, int(T)) for T in a.sdpa_lens.split(",") if T]
    for r in results:
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
