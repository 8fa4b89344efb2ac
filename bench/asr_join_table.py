#!/usr/bin/env python3
"""docs/results.md's spoken-sentence tables from `attn eval --json` at --join 1, 2, 4, 8.

usage: bench/asr_join_table.py PLOT_SPEC.json LABEL=PREFIX [LABEL=PREFIX ...]

Each PREFIX.J.json (J = 1, 2, 4, 8) is the output of
`attn eval --model M --data D --split test --join J --json`. Prints two Markdown tables (CER by
join; CER / WER with the listener frames read per output step against the listener frames per
step) and writes PLOT_SPEC.json for bench/line_plot.cpp (attn_line_plot): CER (%) by join, one
line per model.
"""
import json
import sys

JOINS = (1, 2, 4, 8)


def main(argv):
    if len(argv) < 3 or any("=" not in a for a in argv[2:]):
        sys.exit(__doc__.strip().splitlines()[2])
    models = []
    for arg in argv[2:]:
        label, prefix = arg.split("=", 1)
        models.append((label, {j: json.load(open(f"{prefix}.{j}.json")) for j in JOINS}))
    print("| attention | " + " | ".join(f"{j} joined" if j > 1 else "1 utterance" for j in JOINS) + " |")
    print("|---|" + "---:|" * len(JOINS))
    for label, runs in models:
        print(f"| {label} | " + " | ".join("%.1f %%" % (100 * runs[j]["cer"]) for j in JOINS) + " |")
    print()
    print("| attention | join | CER | WER | output steps | frames read per step | listener frames per step |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, runs in models:
        for j in JOINS:
            d = runs[j]
            print(f"| {label} | {j} | %.1f %% | %.1f %% | %d | %.1f | %.1f |" % (
                100 * d["cer"], 100 * d["wer"], d["output_steps"], d["frames_read_per_step"], d["frames_per_step"]))
    spec = {"title": "Test CER by utterances joined (one seed each, 900 steps)",
            "x_label": "test utterances joined", "y_label": "CER (%)", "y_min": 0, "y_max": 100,
            "series": [{"name": label, "x": list(JOINS), "y": [100 * runs[j]["cer"] for j in JOINS]}
                       for label, runs in models]}
    with open(argv[1], "w") as f:
        json.dump(spec, f, indent=1)


if __name__ == "__main__":
    main(sys.argv)
