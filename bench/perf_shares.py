#!/usr/bin/env python3
"""Where the samples of a `perf record` of attn went, by kind of work: the table the run logs
in bench/results/ quote ("share of samples").

    OMP_WAIT_POLICY=PASSIVE perf record -F 1999 -o perf.data build/attn bench seq2seq ...
    perf script -i perf.data -F tid,ip,sym,dso | python3 bench/perf_shares.py

(perf record -g gives the call chains that sort the kernel's samples; without them every
kernel sample is "kernel: other").

Each sample counts for the kind of its innermost frame (the leaf): oneDNN's JIT code and
OpenBLAS are the GEMMs; attn's attention, RNN-cell and other kernels by symbol; the allocator;
copies (memmove, memset); a sample in the kernel by its call chain: page faults, or scheduling
(waking and switching threads at parallel regions). The shares
are of all samples of all threads; the last lines give each thread's count (a thread that
sleeps while the other works takes no samples).
"""
import collections
import re
import sys

# (kind, pattern on the leaf frame "symbol (dso)"), first match wins. oneDNN's JIT code has no
# symbols: perf script names it "[unknown] (/tmp/perf-PID.map)" (perf report: "[JIT] tid N").
KINDS = [
    ("GEMM: oneDNN (JIT code and library)", r"/tmp/perf-\d+\.map|\[JIT\]|libdnnl"),
    ("GEMM: OpenBLAS", r"libopenblas"),
    ("attention: additive scores (forward and backward)", r"additive_(scores|backward|row)"),
    ("attention: context (weights x values)", r"attention_context|row_product"),
    ("attention: softmax / exp", r"softmax|exp_shifted|normaliz"),
    ("RNN cells (GRU / LSTM elementwise)", r"gru_|lstm_"),
    ("OpenMP runtime (libgomp)", r"libgomp"),
    ("allocation (malloc / free)", r"malloc|_int_free|cfree|unlink_chunk|free@|operator new|operator delete"),
    ("copies (memmove / memset / memcpy)", r"memmove|memset|memcpy"),
    ("attn: other kernels and ops", r"attn::"),
]
# A sample in the kernel counts by what its call chain entered the kernel for.
KERNEL_KINDS = [
    ("kernel: page faults and memory mapping", r"exc_page_fault|mmap|munmap|brk|madvise"),
    ("kernel: scheduling (thread wake-up, sleep, switches)", r"futex|schedule|finish_task_switch|sched_yield|wake"),
    ("kernel: other", r""),
]


def kind_of(frames):
    leaf = frames[0]
    if "kernel.kallsyms" in leaf:
        chain = " ".join(frames)
        return next(kind for kind, pattern in KERNEL_KINDS if re.search(pattern, chain))
    return next((kind for kind, pattern in KINDS if re.search(pattern, leaf)), "other")


def main():
    counts = collections.Counter()
    threads = collections.Counter()
    total = 0
    for block in sys.stdin.read().split("\n\n"):
        lines = [line.strip() for line in block.strip().split("\n") if line.strip()]
        if len(lines) < 2:
            continue
        counts[kind_of(lines[1:])] += 1
        threads[lines[0].split()[0]] += 1
        total += 1
    if total == 0:
        sys.exit("perf_shares: no samples on stdin (perf script -F tid,ip,sym,dso)")
    print("| kind of work | share of samples |")
    print("|---|---:|")
    for kind, n in counts.most_common():
        print(f"| {kind} | {100.0 * n / total:.1f} % |")
    print(f"| all ({total} samples; per thread: {', '.join(str(n) for _, n in threads.most_common())}) | 100 % |")


if __name__ == "__main__":
    main()
