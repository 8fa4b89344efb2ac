#!/usr/bin/env python3
"""Compares the model weights (the float32 tensors but the optimizer's) of two safetensors
files, e.g. two runs' last.safetensors: the relative difference ||a - b||_2 / ||a||_2 of
each tensor, tested against --max-rel, and the largest (max|a - b| / max|a| of each tensor is
printed too: it is larger where single elements sit where the loss is flat).

One slice is reported but not tested: the key projection's bias of attention (the middle
third of an in_proj_bias). Softmax is invariant to it (it adds the same q.b_k to every
score of a query), so its true gradient is zero and what backward computes is rounding
noise, which Adam normalises into steps of about lr: any change in summation order (one
process or two, another thread count) moves those values by their own size.
Exit 1 when the difference is above --max-rel (--exact: when any bit differs).
Usage: compare_weights.py A B [--max-rel 1e-5 | --exact]"""
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


def main():
    args = sys.argv[1:]
    exact = "--exact" in args
    max_rel = float(args[args.index("--max-rel") + 1]) if "--max-rel" in args else 1e-5
    a, b = load(args[0]), load(args[1])
    if sorted(a) != sorted(b):
        print(f"the files hold different tensors: {sorted(set(a) ^ set(b))[:5]}")
        return 1
    if not a:
        print("no float32 tensors to compare")
        return 1
    worst, worst_name, differing = 0.0, "", 0
    key_bias = elementwise = 0.0
    for name in a:
        x, y = a[name].astype(np.float64), b[name].astype(np.float64)
        if x.shape != y.shape:
            print(f"{name}: shape {x.shape} vs {y.shape}")
            return 1
        differing += int(a[name].tobytes() != b[name].tobytes())
        if name.endswith("in_proj_bias"):  # (3D): query, key, value biases
            d = x.shape[0] // 3
            key_bias = max(key_bias, float(np.abs(x[d:2 * d] - y[d:2 * d]).max()))
            x, y = np.concatenate([x[:d], x[2 * d:]]), np.concatenate([y[:d], y[2 * d:]])
        rel = float(np.linalg.norm(x - y)) / max(float(np.linalg.norm(x)), 1e-30)
        elementwise = max(elementwise, float(np.abs(x - y).max()) / max(float(np.abs(x).max()), 1e-30))
        if rel > worst:
            worst, worst_name = rel, name
    print(f"{len(a)} weight tensors, {differing} not bit-identical; max ||a-b||/||a|| {worst:.3g}"
          + (f" in {worst_name}" if worst_name else "") + f" (limit {max_rel:g}); max|a-b|/max|a| {elementwise:.3g}"
          + (f"; key biases (untested) differ by up to {key_bias:.3g}" if key_bias else ""))
    if exact:
        return 1 if differing else 0
    return 1 if worst > max_rel else 0


if __name__ == "__main__":
    sys.exit(main())
