#!/usr/bin/env python3
"""OpenBLAS core types side by side on this CPU (issue 22, item 1): for each core, alternating
in every round (the order rotates), the 2048^3 cblas_sgemm and the seq2seq step shapes on one
thread (attn_micro, thread CPU time per call: steady on a loaded machine), the 2048^3 rate on
THREADS threads in wall time (attn doctor), and a whole `attn bench seq2seq` run (wall and
process CPU time of its timed training steps and greedy decodes). Prints medians and ranges.

  bench/coretype_sweep.py [--build build] [--rounds 3] [--cores "Zen Haswell SkylakeX Cooperlake"] [--micro-only]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

SEQ = ["bench", "seq2seq", "--attention", "bahdanau", "--batch", "64", "--emb", "64", "--hidden", "256",
       "--vocab", "32", "--len", "40", "--steps", "4", "--warmup", "1", "--greedy-reps", "1", "--json"]


def run_json(cmd, core, threads):
    env = dict(os.environ, OPENBLAS_CORETYPE=core, ATTN_NUM_THREADS=str(threads))
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cores", default="Zen Haswell SkylakeX Cooperlake")
    ap.add_argument("--jsonl", help="append every raw measurement here")
    ap.add_argument("--micro-only", action="store_true", help="only the one-thread attn_micro products")
    a = ap.parse_args()
    cores = a.cores.split()
    attn, micro = os.path.join(a.build, "attn"), os.path.join(a.build, "attn_micro")
    rows = {c: {} for c in cores}
    log = open(a.jsonl, "a") if a.jsonl else None

    def add(core, key, value):
        rows[core].setdefault(key, []).append(value)
        if log:
            log.write(json.dumps({"core": core, "metric": key, "value": value}) + "\n")
            log.flush()

    for r in range(a.rounds):
        order = cores[r % len(cores):] + cores[:r % len(cores)]
        for core in order:
            m = run_json([micro, "--threads=1", "--benchmark_filter=BM_CblasSgemm/n:2048|BM_CblasStep",
                          "--benchmark_min_time=0.3", "--benchmark_format=json"], core, 1)
            for b in m["benchmarks"]:
                name = b["name"].replace("/real_time", "")
                add(core, name + " us_cpu", b["cpu_time"] * {"ns": 1e-3, "us": 1, "ms": 1e3}[b["time_unit"]])
            if a.micro_only:
                continue
            d = run_json([attn, "doctor", "--json", "--seconds", "2"], core, a.threads)
            assert d["gemm"]["kernel"].lower() == core.lower(), d["gemm"]
            add(core, "sgemm 2048 wall GFLOP/s (%d threads)" % a.threads, d["sgemm"]["gflops_per_s"])
            add(core, "sgemm max rel error", d["sgemm"]["max_relative_error"])
            s = run_json([attn] + SEQ + ["--threads", str(a.threads)], core, a.threads)
            add(core, "seq2seq train tok/s wall", s["train_tokens_per_s"])
            add(core, "seq2seq train tok/CPU-s", s["train_tokens_per_cpu_s"])
            add(core, "seq2seq greedy tok/s wall", s["greedy_tokens_per_s"])
            add(core, "seq2seq greedy tok/CPU-s", s["greedy_tokens_per_cpu_s"])
            print("round %d %s done (load %s)" % (r + 1, core, open("/proc/loadavg").read().split()[0]),
                  file=sys.stderr, flush=True)

    keys = list(rows[cores[0]].keys())
    print("| metric | " + " | ".join(cores) + " |")
    print("|---|" + "---:|" * len(cores))
    for k in keys:
        cells = []
        for c in cores:
            v = rows[c].get(k, [])
            fmt = "%.2g" if "error" in k else "%.0f" if max(v) >= 100 else "%.1f"
            cells.append((fmt % statistics.median(v)) + " (" + (fmt % min(v)) + "–" + (fmt % max(v)) + ")")
        print("| " + k + " | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
