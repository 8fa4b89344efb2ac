#!/usr/bin/env python3
"""The layering check: a lower layer never includes a higher one (docs/architecture.md).

    check_layers.py ROOT         checks ROOT's library and its users; exit 1 on a violation
    check_layers.py --self-test  checks that planted violations are found and a clean tree passes

Each folder of include/attn/ and src/ is a layer with a rank; a file may include attn headers
of its own layer or of a lower rank only. Top-level headers (include/attn/*.h) and src/core are
the core, except attn.h, the umbrella header, which is above every layer.

The kernels' headers are private to the library: src/kernels/*.h, included as "kernels/x.h".
Outside src/ only the kernel test suites (KERNEL_USERS) and the benchmarks may include them;
tools/ (the CLI) and bench/support (linked into it), python/, fuzz/ and every other test reach
kernels through ops. A public header
(include/attn/) never includes one.
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
    "data": 6,
    "decode": 7,
    "explain": 8, "train": 8,
}
UMBRELLA = "attn.h"  # include/attn/attn.h includes every layer; nothing in the library includes it
INCLUDE = re.compile(r'^\s*#\s*include\s*"attn/([^"]+)"')
KERNEL_INCLUDE = re.compile(r'^\s*#\s*include\s*"(?:attn/)?kernels/([^"]+)"')
# Outside the library: the folders that may include a kernel header.
KERNEL_USERS = ("tests/ops", "tests/attention", "tests/unit", "tests/precision", "bench")
# Inside those, the folders that are linked into the CLI and so reach kernels through ops like it.
CLI_LIBRARIES = ("bench/support",)
USERS = ("tools", "python", "fuzz", "tests", "bench")
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc")


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
                        kernel = KERNEL_INCLUDE.match(line)
                        if kernel and (here != "kernels" and RANKS[here] <= RANKS["kernels"] or top == "include/attn"):
                            found.append(f"{os.path.relpath(path, root)}:{number}: {here} includes the private "
                                         f"kernels/{kernel.group(1)}")
                            continue
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
    found += private_kernel_includes(root)
    return found


def private_kernel_includes(root):
    """Files outside the library that include a kernel header without being a kernel user."""
    found = []
    for top in USERS:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if d not in ("node_modules", "corpus", "regressions")]
            rel_folder = os.path.relpath(folder, root)
            def under(folders):
                return any(rel_folder == u or rel_folder.startswith(u + os.sep) for u in folders)
            allowed = under(KERNEL_USERS) and not under(CLI_LIBRARIES)
            for file in sorted(files):
                if allowed or not file.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(folder, file)
                with open(path, encoding="utf-8", errors="replace") as text:
                    for number, line in enumerate(text, 1):
                        kernel = KERNEL_INCLUDE.match(line)
                        if kernel:
                            found.append(f"{os.path.relpath(path, root)}:{number}: includes the private "
                                         f"kernels/{kernel.group(1)}: use attn/ops/ (or add the folder to "
                                         f"KERNEL_USERS if it tests kernels)")
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
        write("src/train/x.cpp", '#include "attn/explain/report.h"\n')        # same rank, other layer
        write("src/ops/y.cpp", '#include "attn/attn.h"\n')                    # the umbrella
        found = violations(root)
        assert len(found) == 3 and all(("kernels" in f or "train" in f or "ops" in f) for f in found), found
    with tempfile.TemporaryDirectory() as root:
        write("src/kernels/softmax.h", "#pragma once\n")
        write("src/ops/softmax.cpp", '#include "kernels/softmax.h"\n')
        write("tests/ops/softmax_test.cpp", '#include "kernels/softmax.h"\n')
        write("bench/micro/softmax_bench.cpp", '#include "kernels/softmax.h"\n')
        assert violations(root) == [], violations(root)
        write("tools/attn/main.cpp", '#include "kernels/softmax.h"\n')          # the CLI
        write("python/src/module.cpp", '#include "attn/kernels/softmax.h"\n')  # the bindings, old spelling
        write("tests/cli/x_test.cpp", '#include "kernels/softmax.h"\n')        # not a kernel suite
        write("include/attn/ops/softmax.h", '#include "kernels/softmax.h"\n')  # a public header
        write("src/core/shape.cpp", '#include "kernels/softmax.h"\n')          # below kernels
        write("bench/support/flops.cpp", '#include "kernels/softmax.h"\n')     # linked into the CLI
        found = violations(root)
        assert len(found) == 6, found
    print("check_layers self-test: clean trees pass, 3 planted layer and 6 planted kernel-header violations found")


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
