#!/usr/bin/env python3
"""The table of a bench/precision.sh run: per benchmark, fp32 and bf16 (medians over the
rounds), the bf16/fp32 speed ratio (median and range of the per-round ratios), and each
rate as a share of the same run's GEMM peak at its precision (attn bench gemm, 2048^3).

    bench/precision_table.py RUN.jsonl
"""
import json
import statistics
import sys

runs = [json.loads(line) for line in open(sys.argv[1])]


def metrics(j):
    """(name, value, higher is faster, GFLOP/s or None) of one run."""
    if j["bench"] == "gemm":
        return [(f"gemm {r['shape']} ({r['m']}x{r['n']}x{r['k']})", r["gflops_per_s"], True, r["gflops_per_s"])
                for r in j["shapes"]]
    if j["bench"] == "transformer":
        return [("transformer training target tokens/s", j["train_tokens_per_s"], True, j["gflops_per_s"]),
                ("transformer beam-5 sentences/s", j["beam_sentences_per_s"], True, None)]
    if j["bench"] == "seq2seq":
        return [("seq2seq bahdanau training tokens/s", j["train_tokens_per_s"], True, j["gflops_per_s"]),
                ("seq2seq bahdanau greedy tokens/s", j["greedy_tokens_per_s"], True, j["greedy_gflops_per_s"])]
    c = j["config"]
    name = f"{j['kind']} T={c['len']} H={c['heads']} D={c['dim']}" + (" causal" if j["kind"] == "sdpa" else "")
    return [(name + " forward ms", j["forward_ms"], False, j.get("forward_gflops_per_s")),
            (name + " forward+backward ms", j["forward_backward_ms"], False, j.get("forward_backward_gflops_per_s"))]


table = {}  # name -> precision -> round -> (value, higher, gflops)
for j in runs:
    for name, value, higher, gflops in metrics(j):
        table.setdefault(name, {}).setdefault(j["precision"], {})[j["round"]] = (value, higher, gflops)

peak = {p: max(statistics.median(v[0] for v in by[p].values()) for name, by in table.items() if name.startswith("gemm "))
        for p in ("fp32", "bf16")}
print(f"GEMM peak (the best median of attn bench gemm's shapes): fp32 {peak['fp32']:.1f}, "
      f"bf16 {peak['bf16']:.1f} GFLOP/s\n")
print("| benchmark | fp32 | bf16 | bf16 speed over fp32, median (range) | fp32 share of fp32 peak | bf16 share of bf16 peak |")
print("|---|---:|---:|---:|---:|---:|")
for name, by in table.items():
    rounds = sorted(set(by["fp32"]) & set(by["bf16"]))
    ratios = []
    for r in rounds:
        (f, higher, _), (b, _, _) = by["fp32"][r], by["bf16"][r]
        ratios.append(b / f if higher else f / b)
    med = {p: statistics.median(v[0] for v in by[p].values()) for p in ("fp32", "bf16")}
    share = {}
    for p in ("fp32", "bf16"):
        g = [v[2] for v in by[p].values() if v[2] is not None]
        share[p] = f"{100 * statistics.median(g) / peak[p]:.0f} %" if g else ""
    print(f"| {name} | {med['fp32']:.4g} | {med['bf16']:.4g} | {statistics.median(ratios):.2f}× "
          f"({min(ratios):.2f}–{max(ratios):.2f}) | {share['fp32']} | {share['bf16']} |")
