#!/usr/bin/python3
"""Projects data-parallel step time to N ranks with a ring all-reduce cost model
(docs/distributed.md): per step, t(N) = t_compute + 2(N-1)/N * bytes / bandwidth + 2(N-1) * latency,
weak scaling (each rank keeps the measured per-rank batch, so t_compute stays the measured
1-rank step time), no overlap of the all-reduce with backward (attn starts it after backward).
Efficiency = t_compute / t(N); the global throughput is N * efficiency times one rank's.

    /usr/bin/python3 bench/ring_projection.py --params 3.1e6 --step-ms 250 [--ranks 8 64 512]
"""
import argparse

NETWORKS = {  # name: (bandwidth bytes/s per link, per-message latency s)
    "10 GbE (TCP)": (1.25e9, 30e-6),
    "100 Gb/s InfiniBand": (12.5e9, 2e-6),
}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--params", type=float, required=True, help="parameters (float32 gradients)")
    p.add_argument("--step-ms", type=float, required=True, help="measured compute time per step, one rank")
    p.add_argument("--ranks", type=int, nargs="+", default=[8, 64, 512])
    p.add_argument("--name", default="model")
    a = p.parse_args()
    grad_bytes = 4 * a.params
    t_compute = a.step_ms / 1e3
    print(f"| {a.name} ({a.params / 1e6:.2f} M parameters, {grad_bytes / 2**20:.1f} MiB of gradients, "
          f"{a.step_ms:.0f} ms compute per step) | network | " + " | ".join(f"N={n}" for n in a.ranks) + " |")
    print("|---|---|" + "---|" * len(a.ranks))
    for net, (bandwidth, latency) in NETWORKS.items():
        cells = []
        for n in a.ranks:
            comm = 2 * (n - 1) / n * grad_bytes / bandwidth + 2 * (n - 1) * latency
            eff = t_compute / (t_compute + comm)
            cells.append(f"{1e3 * comm:.1f} ms all-reduce, {100 * eff:.0f} % efficiency, {n * eff:.0f}x")
        print(f"| | {net} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
