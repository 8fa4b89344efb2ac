#!/usr/bin/env python3
# The SDPA rows of a compare.sh run with BEFORE= (results.jsonl), per side (before, after =
# attn, torch): median (range over rounds) forward and forward+backward ms, the backward as
# their difference, each as a share of the sgemm peak given (GFLOP/s, the same run's), and the
# per-round ratios. FLOPs count the visible (query, key) pairs only: T(T+1)/2 causal, T · 3T/4
# with compare.sh's padding; a forward is 2 products, a backward 5 (P recomputed, dP, dV, dQ,
# dK), each 2 · H · Dh FLOPs per pair (H 8, Dh 64: compare.sh's --heads 8 --dim 512).
#   python3 bench/peers/sdpa_table.py OUT/results.jsonl PEAK
import json, sys, statistics as st, collections
rows = [json.loads(l) for l in open(sys.argv[1]) if '"attention"' in l]
peak = float(sys.argv[2])
H, Dh = 8, 64
def product_gflop(T, mask):  # one product over the visible (query, key) pairs, all heads
    vis = T * (T + 1) / 2 if mask == "causal" else T * (T - T // 4)
    return 2 * H * Dh * vis / 1e9
by = collections.defaultdict(dict)
for r in rows:
    side = "torch" if r["impl"] == "torch" else ("before" if r["config"].startswith("before") else "after")
    by[r["label"]][(side, r["round"])] = r
print("| benchmark | side | forward ms | forward+backward ms | backward ms (fb − fwd) | fwd / bwd / fb share of sgemm peak | memory growth MB |")
print("|---|---|---:|---:|---:|---:|---:|")
for label, d in by.items():
    T = int(label.split("T=")[1].split()[0]); mask = label.split()[-1]; p = product_gflop(T, mask)
    for side in ("before", "after", "torch"):
        rs = [v for (s, _), v in sorted(d.items()) if s == side]
        if not rs: continue
        med = lambda k: st.median(r[k] for r in rs)
        rng = lambda k: f"{min(r[k] for r in rs):.3g}–{max(r[k] for r in rs):.3g}" if len(rs) > 1 else "1 round"
        f, fb = med("forward_ms"), med("forward_backward_ms")
        sh = lambda gf, ms: f"{100 * gf / (ms * 1e-3) / peak:.0f} %"
        print(f"| {label} | {side} | {f:.3g} ({rng('forward_ms')}) | {fb:.3g} ({rng('forward_backward_ms')}) | {fb - f:.3g} | {sh(2 * p, f)} / {sh(5 * p, fb - f)} / {sh(7 * p, fb)} | {med('growth_mb'):.3g} |")
print()
print("| benchmark | metric | after vs torch, median (range) | after vs before | before vs torch |")
print("|---|---|---:|---:|---:|")
for label, d in by.items():
    rounds = sorted({r for (_, r) in d})
    for k, name in (("forward_ms", "forward"), ("forward_backward_ms", "forward+backward")):
        def ratio(a, b):
            v = [d[(b, r)][k] / d[(a, r)][k] for r in rounds if (a, r) in d and (b, r) in d]
            return f"{st.median(v):.2f}× ({min(v):.2f}–{max(v):.2f})" if len(v) > 1 else (f"{v[0]:.2f}×" if v else "n/a")
        print(f"| {label} | {name} | {ratio('after', 'torch')} | {ratio('after', 'before')} | {ratio('before', 'torch')} |")
