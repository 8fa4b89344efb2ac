#!/usr/bin/env python3
"""Where the second thread of a 2-thread attn run sat idle: the main thread's samples with no
sample of another thread nearby, by the attn functions on their call chain.

    OMP_WAIT_POLICY=PASSIVE perf record -F 1999 -g -o train.data build/attn bench seq2seq \\
        --attention bahdanau --steps 10 --warmup 2 --greedy-reps 0 --threads 2
    perf script -i train.data -F tid,time,ip,sym,dso | python3 bench/perf_idle.py [DEPTH] [ROWS]

With OMP_WAIT_POLICY=PASSIVE an idle worker sleeps and takes no samples, so a main-thread sample
at time t counts as "the other thread idle" when no other thread has a sample within
±WINDOW_S of t (1.5 sampling periods at 1999 Hz). The window is the span of the workers'
samples. Each idle sample is named by the innermost DEPTH (2) attn frames of its call chain;
oneDNN's JIT code has no frame pointers, so its samples show as "[unknown]" (single-threaded
GEMMs). The lines: the share of the main thread's samples with the other thread idle, then
the ROWS (30) largest groups and leaves.
"""
import bisect
import collections
import re
import sys

WINDOW_S = 0.00075


def read_samples(lines):
    samples, current = [], None
    for line in lines:
        head = re.match(r"\s*(\d+)\s+([\d.]+):", line)
        if head:
            current = (int(head.group(1)), float(head.group(2)), [])
            samples.append(current)
            continue
        frame = line.strip()
        if frame and current:
            current[2].append(re.sub(r"\s*\(.*", "", frame.split(" ", 1)[-1]).strip())
    return samples


def main():
    depth = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    samples = read_samples(sys.stdin)
    if not samples:
        sys.exit("perf_idle: no samples on stdin (perf script -F tid,time,ip,sym,dso)")
    main_tid = min(t for t, _, _ in samples)  # the process's first thread has the smallest id
    others = sorted(time for t, time, _ in samples if t != main_tid)
    if not others:
        sys.exit("perf_idle: only one thread took samples")

    def other_busy(time):
        i = bisect.bisect_left(others, time - WINDOW_S)
        return i < len(others) and others[i] <= time + WINDOW_S

    groups, leaves, together = collections.Counter(), collections.Counter(), 0
    for tid, time, frames in samples:
        if tid != main_tid or not others[0] <= time <= others[-1]:
            continue
        if other_busy(time):
            together += 1
            continue
        attn = [f for f in frames if "attn::" in f]
        groups[" < ".join(f[:70] for f in attn[:depth]) if attn else (frames[0][:60] if frames else "?")] += 1
        leaves[frames[0][:60] if frames else "?"] += 1
    idle = sum(groups.values())
    print(f"main-thread samples: {idle + together}; with the other thread idle: {idle} "
          f"({100 * idle / max(1, idle + together):.1f} %); other threads' samples: {len(others)}")
    for name, n in groups.most_common(rows):
        print(f"{100 * n / idle:5.1f} %  {n:5d}  {name}")
    print("-- innermost frames")
    for name, n in leaves.most_common(rows // 2):
        print(f"{100 * n / idle:5.1f} %  {n:5d}  {name}")


if __name__ == "__main__":
    main()
