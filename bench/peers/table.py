"""The tables of bench/peers/compare.sh from its results.jsonl (one JSON line per run, tagged
label, impl, config, round). Run it again on a saved file to reprint them:

    python bench/peers/table.py build/peers-<time>/results.jsonl

The first table has one row per benchmark and metric: attn (its fastest configuration where
it ran more than one, named in brackets), the fastest peer configuration
(by its median over the rounds), and attn's speed over that peer's (rates: attn / peer; times:
peer / attn), the median of the per-round ratios with their range. > 1: attn is faster.
The beam table puts every row against CTranslate2 float32 in the same rounds, and each attn
row against CTranslate2 at its own precision (fp32: float32, int8: int8, bf16: bfloat16): the
target's same-precision peer. Its target lines take, per precision, attn's row with CTranslate2's
search (--beam-rules ctranslate2), the one whose output equals CTranslate2's.
"""
import json
import statistics
import sys
from collections import defaultdict

# label prefix -> [(metric, higher is better, shown as)]
METRICS = {
    "seq2seq": [("train_tokens_per_s", True, "training tokens/s"), ("greedy_tokens_per_s", True, "greedy tokens/s")],
    "transformer training": [("train_tokens_per_s", True, "training target tokens/s")],
    "beam-5 test2016": [("sentences_per_s", True, "sentences/s"), ("tokens_per_s", True, "target tokens/s"),
                        ("peak_rss_mb", False, "peak RSS MB"), ("bleu", True, "sacreBLEU")],
    "sdpa": [("forward_ms", False, "forward ms"), ("forward_backward_ms", False, "forward+backward ms"),
             ("growth_mb", False, "memory growth MB")],
}
# compare.sh's BEFORE= binary: its configurations start with this, and only the table of
# attn configurations shows them (the first table is today's attn).
BEFORE = "before "
SPEED = {"train_tokens_per_s", "greedy_tokens_per_s", "sentences_per_s", "forward_ms", "forward_backward_ms"}


# attn's precision in a beam configuration -> CTranslate2's compute type of the same precision
SAME_PRECISION = {"fp32": "float32", "int8": "int8", "bf16": "bfloat16"}


def precision_of(config):
    """The precision named in an attn beam configuration ("translate int8, ctranslate2 rules")."""
    return next((p for p in SAME_PRECISION if p in config.replace(",", " ").split()), None)


def metrics_of(label):
    return next(m for prefix, m in METRICS.items() if label.startswith(prefix))


def fmt(v):
    if v is None:
        return "—"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def round_ratios(a, p, higher):
    """attn's speed over the peer's per round both ran (a, p: round -> value): the median and
    the range, " (lo–hi)", or "" for one round; (None, "") when no round has both."""
    ratios = [(a[r] / p[r]) if higher else (p[r] / a[r]) for r in a if r in p and a[r] and p[r]]
    if not ratios:
        return None, ""
    return statistics.median(ratios), f" ({min(ratios):.2f}–{max(ratios):.2f})" if len(ratios) > 1 else ""


def main(path):
    rows = [json.loads(line) for line in open(path)]
    by = defaultdict(list)  # (label, impl, config) -> rows
    for r in rows:
        by[(r["label"], r["impl"], r["config"])].append(r)
    labels = list(dict.fromkeys(r["label"] for r in rows if r["label"] != "limits"))

    def per_round(key, metric):
        return {r["round"]: r[metric] for r in by[key] if r.get(metric) is not None and "na" not in r}

    def na_of(key):
        return next((r["na"] for r in by[key] if "na" in r), None)

    print("| benchmark | metric | attn | fastest peer (configuration) | peer | attn vs peer, median (range) | |")
    print("|---|---|---:|---|---:|---:|---|")
    for label in labels:
        configs = [k for k in by if k[0] == label]
        mine = [k for k in configs if k[1] == "attn" and not k[2].startswith(BEFORE)]
        peers = [k for k in configs if k[1] != "attn"]
        for metric, higher, shown in metrics_of(label):
            if metric not in SPEED:
                continue
            # attn's fastest configuration (fp32, or bf16 where the peer uses bf16 too)
            mine_medians = {k: statistics.median(per_round(k, metric).values()) for k in mine if per_round(k, metric)}
            if not mine_medians:
                why = na_of(mine[0]) if mine else "no attn run"
                print(f"| {label} | {shown} | {why or '—'} | | | | |")
                continue
            fastest = (max if higher else min)(mine_medians, key=mine_medians.get)
            a = per_round(fastest, metric)
            attn_config = f" ({fastest[2]})" if len(mine) > 1 else ""
            medians = {k: statistics.median(per_round(k, metric).values()) for k in peers if per_round(k, metric)}
            if not medians:
                print(f"| {label} | {shown} | {fmt(statistics.median(a.values()))}{attn_config} | "
                      f"{'; '.join(f'{k[1]} {k[2]}: {na_of(k)}' for k in peers)} | | | |")
                continue
            best = (max if higher else min)(medians, key=medians.get)
            p = per_round(best, metric)
            m, rng = round_ratios(a, p, higher)
            verdict = "attn faster" if m >= 1.005 else "**attn slower**" if m < 0.995 else "level"
            print(f"| {label} | {shown} | {fmt(statistics.median(a.values()))}{attn_config} | {best[1]}: {best[2]} | "
                  f"{fmt(medians[best])} | {m:.2f}×{rng} | {verdict} |")

    # Where attn ran more than one configuration of a benchmark (BEFORE=, or fp32 and bf16):
    # each one against the same fastest peer, round by round.
    several = [label for label in labels if sum(1 for k in by if k[0] == label and k[1] == "attn") > 1]
    if several:
        print()
        print("| benchmark | metric | attn configuration | attn | vs the fastest peer, median (range) |")
        print("|---|---|---|---:|---:|")
    for label in several:
        peers = [k for k in by if k[0] == label and k[1] != "attn"]
        for metric, higher, shown in metrics_of(label):
            if metric not in SPEED:
                continue
            medians = {k: statistics.median(per_round(k, metric).values()) for k in peers if per_round(k, metric)}
            for key in [k for k in by if k[0] == label and k[1] == "attn"]:
                a = per_round(key, metric)
                if not a:
                    continue
                cell = ""
                if medians:
                    best = (max if higher else min)(medians, key=medians.get)
                    p = per_round(best, metric)
                    m, rng = round_ratios(a, p, higher)
                    if m is not None:
                        cell = f"{m:.2f}×{rng} ({best[2]})"
                print(f"| {label} | {shown} | {key[2]} | {fmt(statistics.median(a.values()))} | {cell} |")

    beam = [k for k in by if k[0].startswith("beam-5")]
    if beam:
        print()
        print("| beam-5 test2016 | sentences/s | target tokens/s | peak RSS MB | sacreBLEU | "
              "sentences/s vs CTranslate2 float32, median (range) | vs CTranslate2, same precision |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        label = beam[0][0]
        sentences = {k: per_round(k, "sentences_per_s") for k in beam}

        def versus(key, compute_type):
            m, rng = round_ratios(sentences[key], per_round((label, "ctranslate2", compute_type), "sentences_per_s"), True)
            return f"{m:.2f}×{rng}" if m is not None else "—"

        for key in beam:
            if na_of(key):
                print(f"| {key[1]}: {key[2]} | {na_of(key)} | | | | | |")
                continue
            same = SAME_PRECISION.get(precision_of(key[2])) if key[1] == "attn" else None
            cells = []
            for metric in ("sentences_per_s", "tokens_per_s", "peak_rss_mb", "bleu"):
                v = list(per_round(key, metric).values())
                rng = f" ({fmt(min(v))}–{fmt(max(v))})" if len(v) > 1 and metric != "bleu" else ""
                cells.append(f"{fmt(statistics.median(v))}{rng}" if v else "—")
            print(f"| {key[1]}: {key[2]} | " + " | ".join(cells) +
                  f" | {versus(key, 'float32')} | {versus(key, same) + ' (' + same + ')' if same else ''} |")
        # the targets: per precision, today's attn with CTranslate2's search against CTranslate2
        targets = [(k, SAME_PRECISION[precision_of(k[2])]) for k in beam
                   if k[1] == "attn" and not k[2].startswith(BEFORE) and "ctranslate2 rules" in k[2]
                   and precision_of(k[2]) and sentences[k]]
        if targets:
            print()
        for key, compute_type in targets:
            print(f"- target, beam-5 at {precision_of(key[2])} (≥ 1.0× CTranslate2 {compute_type}, same search): "
                  f"{key[2]} {versus(key, compute_type)}")

    print()
    print("Every configuration (medians over the rounds, range in brackets):")
    print()
    print("| benchmark | engine | configuration | " + " | ".join(["metric", "median (range)"]) + " |")
    print("|---|---|---|---|---:|")
    for label in labels:
        if label.startswith("beam-5"):
            continue  # the table above
        for key in [k for k in by if k[0] == label]:
            if na_of(key):
                print(f"| {label} | {key[1]} | {key[2]} | | {na_of(key)} |")
                continue
            for metric, _, shown in metrics_of(label):
                v = list(per_round(key, metric).values())
                if v:
                    rng = f" ({fmt(min(v))}–{fmt(max(v))})" if len(v) > 1 else ""
                    print(f"| {label} | {key[1]} | {key[2]} | {shown} | {fmt(statistics.median(v))}{rng} |")
            extra = by[key][0]
            if extra.get("warmup_seconds"):
                what = "untimed warm-up steps, s (compile included)" if "compile" in key[2] else "untimed warm-up steps, s"
                print(f"| {label} | {key[1]} | {key[2]} | {what} | "
                      f"{fmt(statistics.median(r['warmup_seconds'] for r in by[key]))} |")
            if extra.get("note") and key[1] == "attn":
                print(f"| {label} | {key[1]} | {key[2]} | note | {extra['note']} |")

    limits = [r for r in rows if r["label"] == "limits" and "na" not in r]
    if limits:
        print()
        print("| limit (this run) | GFLOP/s (GOP/s for int8): every measurement | implementation |")
        print("|---|---:|---|")
        sgemm = [r["f32_gflops"] for r in limits if r["impl"] == "attn"]
        if sgemm:
            print(f"| fp32 sgemm, attn_micro (OpenBLAS / kernels::gemm, best of 1024² and 2048²) | "
                  f"{', '.join(fmt(v) for v in sgemm)} | |")
        dnnl = [r for r in limits if r["impl"] == "onednn"]
        for kind in ("f32", "bf16", "int8"):
            vals = [r[f"{kind}_gflops"] for r in dnnl if r.get(f"{kind}_gflops") is not None]
            impl = dnnl[0][f"{kind}_impl"] if dnnl else ""
            print(f"| {kind} matmul 2048², oneDNN {dnnl[0]['onednn'] if dnnl else ''} | "
                  f"{', '.join(fmt(v) for v in vals) if vals else impl} | {impl if vals else ''} |")


if __name__ == "__main__":
    main(sys.argv[1])
