#!/usr/bin/env python3
"""The layering check: a lower layer never includes a higher one (docs/architecture.md).

    check_layers.py ROOT         checks ROOT/include/attn and ROOT/src; exit 1 on a violation
    check_layers.py --self-test  checks that a planted violation is found and a clean tree passes

Each folder of include/attn/ and src/ is a layer with a rank; a file may include attn headers
of its own layer or of a lower rank only. Top-level headers (include/attn/*.h) and src/core are
the core, except attn.h, the umbrella header, which is above every layer.
"""
import os
import re
import sys
import tempfile

# Lowest first. Layers of one rank do not include each other.
RANKS = {
    "core": 0,
    "kernels": 1, "io": 1,
    "autodiff": 2, "viz": 2,
    "ops": 3, "distributed": 3,
    "nn": 4,
    "models": 5,
    "data": 6, "explain": 6,
    "decode": 7,
    "train": 8,
}
UMBRELLA = "attn.h"  # include/attn/attn.h includes every layer; nothing in the library includes it
INCLUDE = re.compile(r'^\s*#\s*include\s*"attn/([^"]+)"')


def layer_of_header(name):
    """'ops/softmax.h' -> 'ops'; 'tensor.h' -> 'core'."""
    parts = name.split("/")
    return parts[0] if len(parts) > 1 else ("umbrella" if parts[0] == UMBRELLA else "core")


def layer_of_file(root, path):
    rel = os.path.relpath(path, root).split(os.sep)
    if rel[0] == "include":  # include/attn/<layer>/x.h or include/attn/x.h
        return layer_of_header("/".join(rel[2:]))
    return rel[1]  # src/<layer>/x.cpp


def violations(root):
    found = []
    for top in ("include/attn", "src"):
        for folder, _, files in os.walk(os.path.join(root, top)):
            for file in sorted(files):
                path = os.path.join(folder, file)
                here = layer_of_file(root, path)
                if here == "umbrella":
                    continue
                if here not in RANKS:
                    found.append(f"{os.path.relpath(path, root)}: layer '{here}' has no rank in {__file__}")
                    continue
                with open(path, encoding="utf-8", errors="replace") as text:
                    for number, line in enumerate(text, 1):
                        match = INCLUDE.match(line)
                        if not match:
                            continue
                        there = layer_of_header(match.group(1))
                        if there == here:
                            continue
                        if there not in RANKS or RANKS[there] >= RANKS[here]:
                            found.append(f"{os.path.relpath(path, root)}:{number}: {here} (rank "
                                         f"{RANKS[here]}) includes attn/{match.group(1)} ({there}, rank "
                                         f"{RANKS.get(there, 'umbrella')})")
    return found


def self_test():
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as out:
                out.write(text)
        write("include/attn/tensor.h", "#pragma once\n")
        write("include/attn/ops/softmax.h", '#include "attn/tensor.h"\n#include "attn/autodiff/tape.h"\n')
        write("src/nn/layers.cpp", '#include "attn/ops/softmax.h"\n')
        assert violations(root) == [], violations(root)
        write("src/kernels/softmax.cpp", '#include "attn/ops/softmax.h"\n')  # kernels -> ops: up
        write("src/data/x.cpp", '#include "attn/explain/report.h"\n')         # same rank, other layer
        write("src/ops/y.cpp", '#include "attn/attn.h"\n')                    # the umbrella
        found = violations(root)
        assert len(found) == 3 and all(("kernels" in f or "data" in f or "ops" in f) for f in found), found
    print("check_layers self-test: a clean tree passes, 3 planted violations found")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(sys.argv) != 2:
        print("usage: check_layers.py ROOT | --self-test", file=sys.stderr)
        return 2
    found = violations(sys.argv[1])
    for line in found:
        print(line)
    print(f"check_layers: {len(found)} violation(s) of the layer order")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
