#!/usr/bin/env python3
"""Compares the model weights (the float32 tensors but the optimizer's) of two safetensors
files, e.g. two runs' last.safetensors, the first the reference b: every tensor a of the
second must be within max|a - b| / max|b| <= --max-rel of b's (the project's magnitude-scaled
tolerance, the one the parity tests use).

One slice is reported but not tested: the key projection's bias of attention (the middle
third of an in_proj_bias). Softmax is invariant to it (it adds the same q.b_k to every
score of a query), so its true gradient is zero and what backward computes is rounding
noise, which Adam normalises into steps of about lr: any change in summation order (one
process or two, another thread count) moves those values by their own size.
--except NAME:LIMIT tests tensor NAME against LIMIT instead, printed as such (for a tensor
whose excess has been traced: see docs/distributed.md, "Tests").
--one-element LIMIT lets one element per tensor, and only one, exceed --max-rel up to LIMIT
(printed): the traced signature of Adam's first step at a near-zero gradient, where
lr·g/(|g| + eps) follows the reduction-order rounding of g. A lost or doubled contribution
moves whole rows, so a second element over --max-rel still fails.
Exit 1 when the difference is above --max-rel (--exact: when any bit differs).
Usage: compare_weights.py A B [--max-rel 1e-5 | --exact] [--except NAME:LIMIT ...] [--one-element LIMIT]"""
import json
import struct
import sys

import numpy as np


def load(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32" or name.startswith("optimizer."):
            continue
        begin, end = entry["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype="<f4").reshape(entry["shape"])
    return out


def max_rel(a, b):
    """max|a - b| / max|b|: the project's magnitude-scaled difference of a tensor a from the reference b."""
    return float(np.abs(a - b).max()) / max(float(np.abs(b).max()), 1e-30)


def main():
    args = sys.argv[1:]
    exact = "--exact" in args
    limit = float(args[args.index("--max-rel") + 1]) if "--max-rel" in args else 1e-5
    excepted = dict((v.rsplit(":", 1)[0], float(v.rsplit(":", 1)[1])) for k, v in zip(args, args[1:]) if k == "--except")
    one_element = float(args[args.index("--one-element") + 1]) if "--one-element" in args else None
    b, a = load(args[0]), load(args[1])  # args[0] is the reference
    if sorted(a) != sorted(b):
        print(f"the files hold different tensors: {sorted(set(a) ^ set(b))[:5]}")
        return 1
    if not a:
        print("no float32 tensors to compare")
        return 1
    rel, differing, key_bias, second = {}, 0, {}, {}
    for name in a:
        x, y = a[name].astype(np.float64), b[name].astype(np.float64)
        if x.shape != y.shape:
            print(f"{name}: shape {x.shape} vs {y.shape}")
            return 1
        differing += int(a[name].tobytes() != b[name].tobytes())
        if name.endswith("in_proj_bias"):  # (3D): query, key, value biases
            d = x.shape[0] // 3
            key_bias[name] = (float(np.abs(x[d:2 * d] - y[d:2 * d]).max()), float(np.abs(y[d:2 * d]).max()))
            x, y = np.concatenate([x[:d], x[2 * d:]]), np.concatenate([y[:d], y[2 * d:]])
        rel[name] = max_rel(x, y)
        # the second-largest element's difference, on the same scale
        d = np.sort(np.abs(x - y).ravel())
        second[name] = float(d[-2]) / max(float(np.abs(y).max()), 1e-30) if d.size > 1 else 0.0
    single = sorted(n for n in rel if n not in excepted and one_element is not None and rel[n] > limit
                    and rel[n] <= one_element and second[n] <= limit)
    over = sorted((n for n in rel if rel[n] > excepted.get(n, limit) and n not in single), key=lambda n: -rel[n])
    worst = max((n for n in rel if n not in excepted), key=rel.get)
    line = (f"{len(a)} weight tensors, {differing} not bit-identical; max|a-b|/max|b| per tensor: largest {rel[worst]:.3g}"
            f" in {worst} (limit {limit:g})")
    if key_bias:
        d, m = max(key_bias.values())
        line += f"; key biases (untested) differ by up to {d:.3g} (their largest value {m:.3g})"
    print(line)
    for n in excepted:
        print(f"  {n} (tested against {excepted[n]:g} instead): {rel.get(n, float('nan')):.3g}")
    for n in single:
        print(f"  one element of {n} at {rel[n]:.3g} (allowed up to {one_element:g}; the next {second[n]:.3g})")
    for n in over:
        print(f"  over the limit: {n} {rel[n]:.3g}")
    if exact:
        return 1 if differing else 0
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
